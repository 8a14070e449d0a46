"""Watch (Client.watch, Client.observe): the events of a lock, a prefix or
an election, as an iterator of Event."""
import threading
import time
from typing import Iterator, Optional

from ._ffi import ffi, lib
from .errors import BatonError, make_error
from .state import Event, event_from_c

# The longest single baton_watch_next wait: a Watch (or its Client) that is
# being closed waits at most this for a next() in progress to leave the
# library before freeing the watch.
_SLICE_MS = 200


class Watch:
    """A watch: iterate it for Events (`for ev in watch:` waits for ever,
    and ends when the watch is closed); next(timeout) waits at most
    timeout seconds. A context manager: close() on exit. Any thread may
    call next(), several at once (each event goes to one of them).

    Iteration and next() raise the reason a watch ended once the events
    before it are taken: baton.EPERM (the principal may no longer read
    it), baton.ENOMEM, baton.ELIMIT (a new leader refused to resume it)."""

    def __init__(self, handle, key: str) -> None:
        self._w = handle
        self.key = key
        self._mu = threading.Condition(threading.Lock())
        self._inside = 0      # next() calls inside baton_watch_next
        self._closed = False

    def __repr__(self) -> str:
        return "<baton.Watch %r%s>" % (self.key, " closed" if self._closed else "")

    @property
    def closed(self) -> bool:
        """True once close() has begun (by the caller, or by its Client's
        close)."""
        return self._closed

    def next(self, timeout: Optional[float] = None) -> Event:
        """The next event, waiting at most timeout seconds (None: for ever).

        Raises baton.ETIMEDOUT (also a TimeoutError: none in time),
        baton.ECLOSED (the watch or its Client was closed), and the
        reasons the watch ended (see the class)."""
        deadline = None if timeout is None else time.monotonic() + max(timeout, 0.0)
        ev = ffi.new("baton_event **")
        while True:
            if deadline is None:
                ms = _SLICE_MS
            else:
                ms = min(_SLICE_MS, max(0, int((deadline - time.monotonic()) * 1000)))
            with self._mu:
                if self._closed:
                    raise make_error(lib.BATON_ECLOSED, "the watch of %r is closed" % (self.key,))
                self._inside += 1
            try:
                rv = lib.baton_watch_next(self._w, ms, ev)
            finally:
                with self._mu:
                    self._inside -= 1
                    self._mu.notify_all()
            if rv == 0:
                return _event_from_c(ev[0])
            if rv != lib.BATON_ETIMEDOUT or (deadline is not None and time.monotonic() >= deadline):
                raise make_error(rv, "watch of %r: %s" % (self.key, BatonError.strerror(rv)))

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        try:
            return self.next()
        except BatonError as e:
            if e.code == lib.BATON_ECLOSED:
                raise StopIteration from None
            raise

    def close(self) -> None:
        """End the watch and drop the events not taken; a thread blocked in
        next() raises baton.ECLOSED (iteration ends). Idempotent; never
        raises."""
        with self._mu:
            if self._closed:
                return
            self._closed = True
            while self._inside:  # each leaves within _SLICE_MS
                self._mu.wait()
            w, self._w = self._w, None
        lib.baton_watch_close(w)

    def __enter__(self) -> "Watch":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def _event_from_c(e) -> Event:
    try:
        return event_from_c(e)
    finally:
        lib.baton_event_free(e)
