"""What readers see of a lock: LockState, Holder, Waiter -- plain Python
copies of libbaton's baton_lock_state, made before the C one is freed, so
they live as long as the caller likes and hold no library memory."""
from dataclasses import dataclass, field
from typing import List, Optional

from ._ffi import ffi, lib

MODES = {lib.BATON_MODE_EXCLUSIVE: "exclusive", lib.BATON_MODE_SHARED: "shared"}


def _str(p) -> str:
    return ffi.string(p).decode("utf-8", "replace") if p != ffi.NULL else ""


def _bytes(p, n) -> bytes:
    return bytes(ffi.buffer(p, n)) if n and p != ffi.NULL else b""


def _mode(m) -> str:
    return MODES.get(m, str(m))


@dataclass(frozen=True)
class Holder:
    """One hold of a lock: its session, that session's client_name ("" once
    the session is gone), the fence, the raft index of the grant
    (granted_revision, comparable with LockState.revision), mode
    ("exclusive" or "shared"), how many reentrant handles it has (count)
    and its value (bytes; b"" for none)."""
    session: int
    client_name: str
    fence: int
    granted_revision: int
    mode: str
    count: int
    value: bytes


@dataclass(frozen=True)
class Waiter:
    """One waiter, in queue order: session, client_name, mode, what it asked
    to wait (wait_ms; -1 for ever) and its request's value (bytes)."""
    session: int
    client_name: str
    mode: str
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
    mode: str
    limit: int
    delayed: bool
    holders: List[Holder] = field(default_factory=list)
    waiters: List[Waiter] = field(default_factory=list)
    total_holders: int = 0
    total_waiters: int = 0


def holder_from_c(h) -> Holder:
    return Holder(session=int(h.session), client_name=_str(h.client_name), fence=int(h.fence),
                  granted_revision=int(h.granted_revision), mode=_mode(h.mode),
                  count=int(h.count), value=_bytes(h.value, h.value_len))


def waiter_from_c(w) -> Waiter:
    return Waiter(session=int(w.session), client_name=_str(w.client_name), mode=_mode(w.mode),
                  wait_ms=int(w.wait_ms), value=_bytes(w.value, w.value_len))


def state_from_c(st) -> Optional[LockState]:
    """A copy of a `const baton_lock_state *` (None for NULL)."""
    if st == ffi.NULL:
        return None
    return LockState(
        name=_str(st.name), revision=int(st.revision), held=bool(st.held), mode=_mode(st.mode),
        limit=int(st.limit), delayed=bool(st.delayed),
        holders=[holder_from_c(st.holders[i]) for i in range(st.n_holders)],
        waiters=[waiter_from_c(st.waiters[i]) for i in range(st.n_waiters)],
        total_holders=int(st.total_holders), total_waiters=int(st.total_waiters))
