"""Hold (a held lock), Leadership (a held election), and the routing of
libbaton's lost notices to them.

Lost notices. libbaton runs a Client's lost callback (baton_on_lost) on
its internal I/O thread. The callback (_Router.on_lost) finds the Holds
of that (name, fence) in a dict under the router's lock and marks them
lost: it sets attributes and a threading.Event, nothing else -- it never
calls libbaton, and no Python lock it takes is ever held by a thread
while that thread is inside a libbaton call that may wait for the I/O
thread (which could be running the callback, waiting for that lock:
a deadlock). Hold._op, held across baton_unlock/baton_proclaim, is never
taken by the callback.
"""
import threading
import weakref
from typing import Dict, List, Optional, Sequence, Tuple, Type, Union

from ._ffi import ffi, lib
from .errors import BatonError, error_class, make_error

Value = Union[bytes, str, None]


def value_bytes(value: Value) -> Optional[bytes]:
    """A value as bytes (str: UTF-8); None stays None. Raises TypeError."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError("a value is bytes or str, not %s" % type(value).__name__)


def name_bytes(name: Union[str, bytes]) -> bytes:
    """A lock name as bytes (str: UTF-8). Raises TypeError."""
    if isinstance(name, bytes):
        return name
    if isinstance(name, str):
        return name.encode("utf-8")
    raise TypeError("a lock name is str or bytes, not %s" % type(name).__name__)


class _Router:
    """The Holds of one Client, keyed by (name bytes, fence), and its one
    lost callback (kept alive here as long as the Client's baton_t)."""

    def __init__(self) -> None:
        self.mu = threading.Lock()
        self.holds: Dict[Tuple[bytes, int], List["Hold"]] = {}
        # Notices that came before their Hold was registered (a grant lost
        # before baton_lock_call returned): fences are never reused.
        self.early: Dict[Tuple[bytes, int], int] = {}
        self.io_thread: Optional[int] = None  # the I/O thread's ident, once seen
        self.watches: "weakref.WeakSet" = weakref.WeakSet()  # the Client's open Watches
        self.callback = ffi.callback("baton_lost_cb *", self.on_lost)

    def on_lost(self, b, lock, fence, why, data) -> None:
        # Runs on libbaton's I/O thread: set state only, never call libbaton.
        try:
            self.io_thread = threading.get_ident()
            key = (ffi.string(lock), int(fence))
            with self.mu:
                holds = list(self.holds.get(key, ()))
                if not holds:
                    self.early[key] = why
                    if len(self.early) > 1024:  # a notice for a hold already unlocked
                        del self.early[next(iter(self.early))]
            for h in holds:
                h._mark_lost(why)
        except BaseException:  # never let an exception into C
            pass

    def register(self, hold: "Hold") -> None:
        with self.mu:
            self.holds.setdefault(hold._key, []).append(hold)
            why = self.early.pop(hold._key, None)
        if why is not None:
            hold._mark_lost(why)

    def unregister(self, hold: "Hold") -> None:
        with self.mu:
            lst = self.holds.get(hold._key)
            if lst is not None:
                lst[:] = [h for h in lst if h is not hold]
                if not lst:
                    del self.holds[hold._key]

    def all_holds(self) -> List["Hold"]:
        with self.mu:
            return [h for lst in self.holds.values() for h in lst]


class Hold:
    """A held lock (of Client.lock, trylock, lock_many, campaign).

    Attributes: name (the name asked for; a multi-lock's first name),
    names (every name), fence (the fencing token: pass it to the resource
    you protect), value (the value asked for, bytes or None), lost (a
    threading.Event set once the lock is declared lost), lost_reason (the
    exception class then: baton.ELOST for a forced release, baton.ESESSION
    when the session ended; None while held).

    A context manager: `with client.lock("x") as hold:` unlocks on exit;
    if the lock was lost meanwhile, exit raises baton.ELOST (unless an
    exception is already on its way out, which then wins).

    A Hold that is dropped without unlock() stays held until the Client
    closes (as in C: the Client keeps every hold it granted).
    """

    def __init__(self, router: _Router, handle, names: Sequence[Union[str, bytes]],
                 value: Optional[bytes]) -> None:
        self._router = router
        self._l = handle                  # baton_lock_t *, None once unlocked
        self._op = threading.Lock()      # serializes unlock/proclaim on _l
        self._freed_by_close = False     # the Client's close freed _l
        self.names: Tuple[Union[str, bytes], ...] = tuple(names)
        self.name: Union[str, bytes] = self.names[0]
        self.fence: int = int(lib.baton_lock_fence(handle))
        self.value: Optional[bytes] = value
        self.lost = threading.Event()
        self.lost_reason: Optional[Type[BatonError]] = None
        self._key = (ffi.string(lib.baton_lock_name(handle)), self.fence)

    def __repr__(self) -> str:
        state = "lost" if self.lost.is_set() else ("held" if self._l is not None else "unlocked")
        return "<baton.%s %r fence=%d %s>" % (type(self).__name__, self.name, self.fence, state)

    def _mark_lost(self, why: int) -> None:
        # Called by the lost callback on the I/O thread: state only.
        if self.lost_reason is None:
            self.lost_reason = error_class(why)
        self.lost.set()

    @property
    def held(self) -> bool:
        """True while not unlocked and not known to be lost."""
        return self._l is not None and not self.lost.is_set()

    def check(self) -> None:
        """Raise lost_reason (baton.ELOST or baton.ESESSION) if the lock was
        declared lost; return None otherwise (also after unlock())."""
        if self.lost.is_set():
            raise make_error(self.lost_reason.code if self.lost_reason else lib.BATON_ELOST,
                             "lock %r (fence %d) was lost" % (self.name, self.fence))

    def unlock(self) -> None:
        """Release the lock (all its names, for a multi-lock); the next
        waiter is granted it at once. Idempotent: after the first call it
        does nothing.

        Raises baton.ELOST (or baton.ENOTHELD) if the lock had been lost,
        or was taken away while this release was on its way (then `lost`
        is set here, for libbaton may not send a notice for it): the
        cluster holds it for this session no longer, and the work done
        under it may have overlapped with another holder's; baton.EUNAVAIL (no answer within op_timeout:
        the release is retried in the background until the session ends),
        baton.EPERM, baton.ECLOSED (the Client was closed first: its close
        released the lock). Whatever it raises, the hold is released here
        and its handle freed, and the next call does nothing."""
        with self._op:
            l, self._l = self._l, None
            if l is None:
                if self._freed_by_close:  # say so once, as baton_unlock would have
                    self._freed_by_close = False
                    raise make_error(lib.BATON_ECLOSED, "unlock %r: the Client was closed "
                                     "(which released the lock)" % (self.name,))
                return
            rv = lib.baton_unlock(l)  # frees l, always
        self._router.unregister(self)
        if rv in (lib.BATON_ELOST, lib.BATON_ENOTHELD):
            # Lost while the release was on its way: the lost notice may
            # come after this returns (or not at all), so say it here.
            self._mark_lost(lib.BATON_ELOST)
        if rv < 0:
            raise make_error(rv, "unlock %r (fence %d): %s"
                             % (self.name, self.fence, BatonError.strerror(rv)))

    def proclaim(self, value: Value) -> None:
        """Replace the hold's value (bytes or str; None removes it): every
        reader and watcher sees it from its commit on. Applied at most once.

        Raises baton.ELOST / baton.ENOTHELD (the lock is no longer this
        session's: `lost` is set; still unlock() it), baton.EINVAL (a multi-lock, or
        unlocked already), baton.ETOOBIG, baton.EUNAVAIL (it may or may
        not have been applied), baton.EVERSION, baton.EPERM,
        baton.ECLOSED (the Client was closed), TypeError (value not
        bytes/str)."""
        v = value_bytes(value)
        with self._op:
            if self._l is None:
                code = lib.BATON_ECLOSED if self._freed_by_close else lib.BATON_EINVAL
                raise make_error(code, "proclaim on %r: not held (unlocked, or its Client "
                                 "closed)" % (self.name,))
            rv = lib.baton_proclaim(self._l, v if v is not None else ffi.NULL, len(v or b""))
        if rv in (lib.BATON_ELOST, lib.BATON_ENOTHELD):
            self._mark_lost(lib.BATON_ELOST)
        if rv < 0:
            raise make_error(rv, "proclaim on %r (fence %d): %s"
                             % (self.name, self.fence, BatonError.strerror(rv)))
        self.value = v

    def _free_after_close(self) -> None:
        """Free the handle once the Client has closed (baton_unlock then
        only frees it and returns ECLOSED)."""
        with self._op:
            l, self._l = self._l, None
            if l is not None:
                lib.baton_unlock(l)
                self._freed_by_close = True

    def __enter__(self) -> "Hold":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.unlock()
        except BatonError:
            if exc_type is None:
                raise


class Leadership(Hold):
    """A won election (Client.campaign): an exclusive Hold of the election's
    name whose value says who leads. term is its fence (larger than every
    earlier leader's). resign() is unlock(): the next candidate leads at
    once. Loss of leadership is told exactly as a lost lock is (lost,
    lost_reason, check(), baton.ELOST from resign())."""

    @property
    def term(self) -> int:
        """The leader's term: its fence. Never raises."""
        return self.fence

    def resign(self) -> None:
        """Give up leadership (unlock()); raises as unlock()."""
        self.unlock()
