"""What a reader sees of a lock, as plain Python values: LockState (with
its Holder and Waiter entries) and the Event of a watch, copied out of
libbaton's baton_lock_state and baton_event (include/baton/baton.h) before
the C ones are freed, so they live as long as the caller likes and hold no
library memory. Shared by the blocking Client and baton.aio.
"""
import enum
from dataclasses import dataclass, field
from typing import List, Optional

from ._ffi import ffi, lib


class Mode(str, enum.Enum):
    """A hold's or a waiter's mode. A str: Mode.SHARED == "shared"."""
    EXCLUSIVE = "exclusive"
    SHARED = "shared"


class EventKind(str, enum.Enum):
    """The kind of a watch event (enum baton_event_kind). A str:
    EventKind.CHANGE == "change"."""
    CHANGE = "change"  # the state right after the change at revision
    STATE = "state"    # the state at the start (or restart) of the watch
    GAP = "gap"        # the state now; it changed meanwhile in ways not seen
    SYNCED = "synced"  # no state: complete from revision on


_MODES = {lib.BATON_MODE_EXCLUSIVE: Mode.EXCLUSIVE, lib.BATON_MODE_SHARED: Mode.SHARED}
_KINDS = {lib.BATON_EVENT_CHANGE: EventKind.CHANGE, lib.BATON_EVENT_STATE: EventKind.STATE,
          lib.BATON_EVENT_GAP: EventKind.GAP, lib.BATON_EVENT_SYNCED: EventKind.SYNCED}


@dataclass(frozen=True)
class Holder:
    """One hold of a lock: its session, that session's client_name ("" once
    the session is gone), the fence, the raft index of the grant
    (granted_revision, comparable with LockState.revision), its Mode, how
    many reentrant handles it has (count) and its value (b"" for none)."""
    session: int
    client_name: str
    fence: int
    granted_revision: int
    mode: Mode
    count: int
    value: bytes


@dataclass(frozen=True)
class Waiter:
    """One waiter, in queue order: session, client_name, Mode, what it asked
    to wait (wait_ms; -1 for as long as it takes) and its request's value."""
    session: int
    client_name: str
    mode: Mode
    wait_ms: int
    value: bytes


@dataclass(frozen=True)
class LockState:
    """A lock's state as of raft index `revision`: who holds it (fence
    order: holders[0] is an exclusive lock's holder, an election's leader)
    and who waits (queue order). A lock nobody holds or waits for has held
    False, limit 0 and no entries. The lists may be shorter than
    total_holders/total_waiters when the values are large. `delayed`: free
    but in its lock-delay."""
    name: str
    revision: int
    held: bool
    mode: Mode
    limit: int
    delayed: bool
    holders: List[Holder] = field(default_factory=list)
    waiters: List[Waiter] = field(default_factory=list)
    total_holders: int = 0
    total_waiters: int = 0


@dataclass(frozen=True)
class Event:
    """One watch event: its EventKind, its revision (the raft index,
    strictly increasing along a watch), the lock's state right after it
    (None for SYNCED), and, for SYNCED, whether the watch restarted
    (restarted True: forget what you knew; the STATE events just before
    are the current state)."""
    kind: EventKind
    revision: int
    state: Optional[LockState]
    restarted: bool = False


def _text(p) -> str:
    return ffi.string(p).decode("utf-8", "replace") if p != ffi.NULL else ""


def _bytes(p, n) -> bytes:
    return bytes(ffi.buffer(p, n)) if n and p != ffi.NULL else b""


def _mode(m):
    return _MODES.get(m, m)


def holder_from_c(h) -> Holder:
    """A copy of a `const baton_holder *`."""
    return Holder(session=int(h.session), client_name=_text(h.client_name), fence=int(h.fence),
                  granted_revision=int(h.granted_revision), mode=_mode(h.mode),
                  count=int(h.count), value=_bytes(h.value, h.value_len))


def waiter_from_c(w) -> Waiter:
    """A copy of a `const baton_waiter *`."""
    return Waiter(session=int(w.session), client_name=_text(w.client_name), mode=_mode(w.mode),
                  wait_ms=int(w.wait_ms), value=_bytes(w.value, w.value_len))


def state_from_c(st) -> Optional[LockState]:
    """A copy of a `const baton_lock_state *` (None for NULL)."""
    if st == ffi.NULL:
        return None
    return LockState(
        name=_text(st.name), revision=int(st.revision), held=bool(st.held), mode=_mode(st.mode),
        limit=int(st.limit), delayed=bool(st.delayed),
        holders=[holder_from_c(st.holders[i]) for i in range(st.n_holders)],
        waiters=[waiter_from_c(st.waiters[i]) for i in range(st.n_waiters)],
        total_holders=int(st.total_holders), total_waiters=int(st.total_waiters))


def event_from_c(ev) -> Event:
    """A copy of a `const baton_event *`."""
    return Event(kind=_KINDS[ev.kind], revision=int(ev.revision), state=state_from_c(ev.state),
                 restarted=bool(ev.restarted))


__all__ = ["Mode", "EventKind", "Holder", "Waiter", "LockState", "Event"]
