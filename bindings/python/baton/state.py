"""What a reader sees of a lock, as plain Python values: LockState (with its
Holder and Waiter entries) and the Event of a watch, copied out of the C
structs baton_lock_state and baton_event (include/baton/baton.h), whose
memory libbaton owns only for the duration of a call or a callback.

The values are copies: they stay valid for as long as Python keeps them.
"""
from dataclasses import dataclass, field
import enum
from typing import List, Optional

from ._ffi import ffi, lib

MODE_EXCLUSIVE = lib.BATON_MODE_EXCLUSIVE
MODE_SHARED = lib.BATON_MODE_SHARED


class EventKind(enum.IntEnum):
    """The kind of a watch event (enum baton_event_kind)."""
    CHANGE = lib.BATON_EVENT_CHANGE  # the state right after the change at revision
    STATE = lib.BATON_EVENT_STATE    # the state at the start (or restart) of the watch
    GAP = lib.BATON_EVENT_GAP        # the state now; it changed meanwhile in ways not seen
    SYNCED = lib.BATON_EVENT_SYNCED  # no state: complete from revision on


@dataclass(frozen=True)
class Holder:
    """One hold of a lock: its session, that session's client name ("" once
    the session is gone), fence, the raft index of the grant, its mode
    (MODE_EXCLUSIVE or MODE_SHARED), how many reentrant handles it has, and
    its value (b"" for none)."""
    session: int
    client_name: str
    fence: int
    granted_revision: int
    mode: int
    count: int
    value: bytes


@dataclass(frozen=True)
class Waiter:
    """One waiter, in queue order: its session, client name, mode, how long
    it asked to wait (ms; -1 for as long as it takes) and its value."""
    session: int
    client_name: str
    mode: int
    wait_ms: int
    value: bytes


@dataclass(frozen=True)
class LockState:
    """A lock's state as of raft index `revision`: holders in fence order
    (holders[0] is an exclusive lock's holder, an election's leader) and
    waiters in queue order. The lists may be shorter than the totals when
    the values are large."""
    name: str
    revision: int
    held: bool
    mode: int
    limit: int
    delayed: bool
    total_holders: int
    total_waiters: int
    holders: List[Holder] = field(default_factory=list)
    waiters: List[Waiter] = field(default_factory=list)


@dataclass(frozen=True)
class Event:
    """One event of a watch: its kind, its revision, the lock's state right
    after it (None for SYNCED), and, for SYNCED, whether the watch restarted
    (forget what you knew: the STATE events before it are the current
    state)."""
    kind: EventKind
    revision: int
    state: Optional[LockState]
    restarted: bool = False


def _bytes(ptr, n):
    return ffi.buffer(ptr, n)[:] if n and ptr != ffi.NULL else b""


def _text(ptr):
    return ffi.string(ptr).decode("utf-8", "replace") if ptr != ffi.NULL else ""


def lock_state_from_c(st) -> LockState:
    """A copy of a `const baton_lock_state *`."""
    holders = [Holder(h.session, _text(h.client_name), h.fence, h.granted_revision, h.mode,
                      h.count, _bytes(h.value, h.value_len))
               for h in (st.holders[i] for i in range(st.n_holders))]
    waiters = [Waiter(w.session, _text(w.client_name), w.mode, w.wait_ms,
                      _bytes(w.value, w.value_len))
               for w in (st.waiters[i] for i in range(st.n_waiters))]
    return LockState(_text(st.name), st.revision, bool(st.held), st.mode, st.limit,
                     bool(st.delayed), st.total_holders, st.total_waiters, holders, waiters)


def event_from_c(ev) -> Event:
    """A copy of a `const baton_event *`."""
    state = lock_state_from_c(ev.state) if ev.state != ffi.NULL else None
    return Event(EventKind(ev.kind), ev.revision, state, bool(ev.restarted))


__all__ = ["EventKind", "Holder", "Waiter", "LockState", "Event", "MODE_EXCLUSIVE",
           "MODE_SHARED"]
