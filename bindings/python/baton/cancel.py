"""Cancel: ends blocking lock calls from another thread (baton_cancel_t)."""
import threading
from typing import List

from ._ffi import ffi, lib
from .errors import check


def new_handle():
    """A fresh baton_cancel_t, freed by cffi once nothing refers to it
    (so a thread that still holds a reference may always fire it).
    Raises baton.ENOMEM."""
    out = ffi.new("baton_cancel_t **")
    check(lib.baton_cancel_new(out))
    return ffi.gc(out[0], lib.baton_cancel_free)


class Cancel:
    """A cancel handle for blocking lock calls (Client.lock, lock_many,
    campaign: their `cancel=` argument).

    cancel(), from any thread, ends every call waiting with this handle:
    each raises baton.ECANCELED, its wait withdrawn from the lock's queue
    as a timed-out one is. Every later call made with it raises
    baton.ECANCELED at once, without contacting the cluster. One Cancel
    may serve any number of calls, of any Client, at once.

    The grant wins a race: a call whose lock was granted just as cancel()
    ran returns its Hold as usual -- the caller then holds the lock and
    must unlock it. So after cancel(), a call returns either a Hold or
    raises ECANCELED, never both, and no wait is left behind.

    Each call it serves gets its own libbaton handle (baton_cancel_t),
    which cancel() fires; that lets a Client that is closing end its own
    waits too (they raise baton.ECLOSED), whatever Cancel they were given.
    """

    def __init__(self) -> None:
        self._mu = threading.Lock()
        self._fired = False
        self._handles: List[object] = []

    @property
    def cancelled(self) -> bool:
        """True once cancel() was called."""
        return self._fired

    def cancel(self) -> None:
        """Fire: end the calls waiting with this Cancel, and make later ones
        raise baton.ECANCELED at once. Idempotent; any thread (not a signal
        handler). Never raises."""
        with self._mu:
            self._fired = True
            handles = list(self._handles)
        for h in handles:  # baton_cancel never waits: no lock needed, none held
            lib.baton_cancel(h)

    def _attach(self, h) -> None:
        """Serve one call's handle h: fire it now if already fired."""
        with self._mu:
            fired = self._fired
            if not fired:
                self._handles.append(h)
        if fired:
            lib.baton_cancel(h)

    def _detach(self, h) -> None:
        with self._mu:
            try:
                self._handles.remove(h)
            except ValueError:
                pass
