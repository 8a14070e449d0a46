"""baton for asyncio: one AsyncClient is one session with a baton cluster,
driven by the running asyncio event loop -- no thread of its own -- on
libbaton's asynchronous API (include/baton/baton_async.h).

    import asyncio, baton.aio

    async def main():
        async with baton.aio.connect("127.0.0.1:7001,127.0.0.1:7002") as client:
            async with client.lock("jobs/42", timeout=5) as hold:
                print("holding", hold.name, "fence", hold.fence)
                ...                     # hold.lost is set if the lock is lost

    asyncio.run(main())

Owners. Every asyncio Task is its own owner of lock calls: two tasks of one
client that lock the same name queue behind each other in FIFO order, like
two clients, each granted with its own fence; a task that locks a name it
holds or waits for gets baton.EDEADLK unless the call is reentrant, which
adds a handle to that task's own hold.

Cancellation. Cancelling a task that waits in lock() (asyncio.wait_for's
timeout included) withdraws the wait from the lock's queue through the
library's cancel; should the grant win that race, the lock is released at
once. Either way the task sees CancelledError and nothing stays held or
queued. A bounded wait of its own (timeout=) is enforced by the cluster and
raises baton.ETIMEDOUT.

Loops and threads. A client belongs to the loop that connected it: use it
from that loop's thread only. Every libbaton callback runs on that thread,
inside the adapter's reader, writer and timer callbacks (baton/_aio_loop.py).
Host names in the endpoints are resolved by the core with getaddrinfo(3),
which blocks the loop while it runs (see the README's asyncio section); IP
literals never reach a resolver.

Times are in seconds (float), as asyncio's are.
"""
import asyncio
import warnings
import weakref
from typing import AsyncIterator, Dict, List, Optional, Sequence, Union

from ._aio_loop import LoopAdapter, _report
from ._ffi import cstr, ffi, lib
from . import errors
from .errors import BatonError, make_error
from .state import Event, Holder, LockState, event_from_c, state_from_c

Bytes = Union[bytes, bytearray, memoryview, str]

_ECANCELED = lib.BATON_ECANCELED
_ENOTFOUND = lib.BATON_ENOTFOUND

# The owner of each task's lock calls (baton_lock_args.owner); a task's owner
# is dropped with the task.
_owners: "weakref.WeakKeyDictionary[asyncio.Task, int]" = weakref.WeakKeyDictionary()


def _task_owner(task: Optional[asyncio.Task]) -> int:
    if task is None:
        return 0
    owner = _owners.get(task)
    if owner is None:
        owner = _owners[task] = lib.baton_owner_new()
    return owner


def _ms(seconds: Optional[float], none: int) -> int:
    if seconds is None:
        return none
    if seconds < 0:
        raise ValueError("a time must be >= 0 (None: the default)")
    return int(round(seconds * 1000))


def _as_bytes(value: Optional[Bytes]) -> bytes:
    if value is None:
        return b""
    if isinstance(value, str):
        return value.encode()
    return bytes(value)


def _errmsg(ac) -> Optional[str]:
    msg = ffi.string(lib.baton_async_errmsg(ac)).decode("utf-8", "replace")
    return msg or None


class _Call:
    """One call the core has not answered yet: its future and the handle the
    core carries as the callback's data (kept alive, with the call's
    buffers, in AsyncClient._calls until the callback ran)."""

    __slots__ = ("client", "fut", "handle", "name", "abandoned", "keep", "__weakref__")

    def __init__(self, client: "AsyncClient", name=None, keep=None):
        self.client = client
        self.fut = client._loop.create_future()
        self.handle = ffi.new_handle(self)
        self.name = name          # char[] of a lock call (for cancel and release)
        self.abandoned = False    # its awaiting task went away (lock calls)
        self.keep = keep          # buffers to keep alive until the callback

    def fail(self, status: int, msg: Optional[str]):
        if not self.fut.done():
            self.fut.set_exception(make_error(status, msg))


def _callback(sig):
    def wrap(fn):
        def guarded(ac, *args):
            try:
                fn(ac, *args)
            except BaseException as e:  # noqa: BLE001 -- must not unwind into C
                _report(fn.__name__, e)
        return ffi.callback(sig, guarded)
    return wrap


def _finish(data) -> _Call:
    call = ffi.from_handle(data)
    call.client._calls.pop(call.handle, None)
    return call


@_callback("void(baton_async_t *, int, uint64_t, void *)")
def _open_cb(ac, status, session, data):
    call = _finish(data)
    if status < 0:
        call.fail(status, _errmsg(ac))
    elif not call.fut.done():
        call.fut.set_result(session)


@_callback("void(baton_async_t *, int, const char *, uint64_t, void *)")
def _lock_cb(ac, status, name, fence, data):
    call = _finish(data)
    call.client._lock_done(call, status, fence, _errmsg(ac) if status < 0 else None)


@_callback("void(baton_async_t *, int, void *)")
def _done_cb(ac, status, data):
    call = _finish(data)
    if status < 0:
        call.fail(status, _errmsg(ac))
    elif not call.fut.done():
        call.fut.set_result(None)


@_callback("void(baton_async_t *, int, const baton_lock_state *, void *)")
def _state_cb(ac, status, st, data):
    call = _finish(data)
    if status < 0:
        call.fail(status, _errmsg(ac))
    elif not call.fut.done():
        call.fut.set_result(state_from_c(st))


@_callback("void(baton_async_t *, const char *, uint64_t, int, void *)")
def _lost_cb(ac, lock, fence, why, data):
    client = ffi.from_handle(data)
    client._lost(ffi.string(lock).decode(), fence, why, _errmsg(ac))


@_callback("void(baton_async_t *, int, uint64_t, void *)")
def _session_cb(ac, status, session, data):
    client = ffi.from_handle(data)
    client._new_session(status, session)


@_callback("void(baton_async_t *, int, const baton_event *, void *)")
def _watch_cb(ac, status, ev, data):
    watch = ffi.from_handle(data)
    if ev != ffi.NULL:
        watch._event(event_from_c(ev))
    else:
        watch.client._calls.pop(watch.handle, None)
        watch._ended(status, _errmsg(ac) if status < 0 and status != _ECANCELED else None)


class Hold:
    """A held lock (or leadership): name, fence and, once it is lost, why.

    `lost` is an asyncio.Event set when the library declares the lock lost
    (the session expired, its lease ran out here, or an operator forced its
    release): stop using what it protects. Use it as an async context
    manager (`async with client.lock(...) as hold:`) or unlock it yourself.
    """

    def __init__(self, client: "AsyncClient", name: str, fence: int, names: Sequence[str]):
        self.client = client
        self.name = name
        self.names = tuple(names)   # every name of a multi-lock (names[0] is name)
        self.fence = fence
        self.lost = asyncio.Event()
        self.lost_why: Optional[int] = None   # BATON_ELOST or BATON_ESESSION
        self.lost_message: Optional[str] = None
        self._unlocked = False

    def __repr__(self):
        return "<baton.aio.Hold %r fence=%d%s>" % (self.name, self.fence,
                                                    " lost" if self.lost_why else "")

    def check(self) -> None:
        """Raise baton.ELOST if the lock was declared lost (whatever the cause:
        lost_why says it), else return."""
        if self.lost_why is not None:
            raise make_error(lib.BATON_ELOST, self._lost_text())

    async def wait_lost(self) -> int:
        """Wait until the lock is declared lost; returns why (BATON_ELOST or
        BATON_ESESSION). Raises nothing of its own (CancelledError if
        cancelled)."""
        await self.lost.wait()
        return self.lost_why

    async def unlock(self) -> None:
        """Release the lock (the next waiter gets it at once). Idempotent: a
        second call does nothing, unless the lock was lost.
        Raises baton.ELOST (the lock was declared lost, before or during the
        release: the cluster no longer holds it for this session, and the work
        done under it may have overlapped with another holder's),
        baton.ENOTHELD (the cluster does not count this session as its holder:
        treat it as ELOST), baton.ETIMEDOUT / baton.EUNAVAIL (no answer in
        op_timeout; the library keeps trying until the session ends),
        baton.EPERM, baton.ECLOSED (the client was closed: its session's
        close released the lock)."""
        if self._unlocked:
            self.check()
            return
        self._unlocked = True
        client = self.client
        if client._ac is None:
            client._forget(self)
            raise make_error(lib.BATON_ECLOSED, "the client was closed")
        try:
            client._context()
        except RuntimeError:
            self._unlocked = False
            raise
        call = _Call(client)
        rv = lib.baton_async_unlock(client._ac, self.name.encode(), self.fence, _done_cb,
                                    call.handle)
        if rv < 0:
            client._forget(self)
            if rv == lib.BATON_ELOST:
                self._mark_lost(self.lost_why or lib.BATON_ELOST, _errmsg(client._ac))
                raise make_error(rv, self._lost_text())
            raise make_error(rv, _errmsg(client._ac))
        client._calls[call.handle] = call
        try:
            await call.fut  # cancelling this wait does not stop the release
        except BatonError as e:
            if e.code == lib.BATON_ELOST:
                self._mark_lost(lib.BATON_ELOST, str(e))
            elif e.code == lib.BATON_ENOTHELD and self.lost_why is not None:
                # another handle of a lost reentrant hold: the core freed its
                # record with that handle's unlock and asked the cluster
                # about this one, which no longer counts it
                raise make_error(lib.BATON_ELOST, self._lost_text()) from None
            raise
        finally:
            if call.fut.done():
                client._forget(self)

    async def proclaim(self, value: Optional[Bytes]) -> None:
        """Replace the hold's value (None or b"" removes it); every reader and
        watcher sees it from the commit on. Raises baton.ELOST (the hold was
        lost), baton.ENOTHELD, baton.ETOOBIG, baton.EVERSION, baton.EPERM,
        baton.ESESSION (the session ended: the hold is lost),
        baton.ETIMEDOUT / baton.EUNAVAIL (it may or may not have been
        applied), baton.EINVAL (a multi-lock), baton.ECLOSED."""
        client = self.client
        self.check()
        if self._unlocked:
            raise make_error(lib.BATON_ENOTHELD, "the hold was unlocked")
        client._context()
        data = _as_bytes(value)
        call = _Call(client)
        rv = lib.baton_async_proclaim(client._ac, self.name.encode(), self.fence, data,
                                      len(data), _done_cb, call.handle)
        if rv < 0:
            raise make_error(rv, _errmsg(client._ac))
        client._calls[call.handle] = call
        await call.fut

    async def __aenter__(self) -> "Hold":
        return self

    async def __aexit__(self, et, ev, tb) -> None:
        """Unlock; an ELOST, ENOTHELD or ECLOSED of the unlock is raised only
        if the body raised nothing itself (the body's exception wins)."""
        try:
            await self.unlock()
        except (errors.ELOST, errors.ENOTHELD, errors.ECLOSED):
            if et is None:
                raise

    def _mark_lost(self, why: int, msg: Optional[str]):
        if self.lost_why is None:
            self.lost_why = why
            self.lost_message = msg
            self.lost.set()

    def _lost_text(self) -> str:
        cause = ("an operator forced its release" if self.lost_why == lib.BATON_ELOST
                 else "the session ended")
        return "lock %r (fence %d) was lost: %s%s" % (
            self.name, self.fence, cause, ": " + self.lost_message if self.lost_message else "")


class _Acquire:
    """What client.lock() returns: await it for the Hold, or use it as an
    async context manager (the hold is unlocked on exit)."""

    __slots__ = ("_coro_fn", "_hold")

    def __init__(self, coro_fn):
        self._coro_fn = coro_fn
        self._hold: Optional[Hold] = None

    def __await__(self):
        return self._coro_fn().__await__()

    async def __aenter__(self) -> Hold:
        self._hold = await self._coro_fn()
        return self._hold

    async def __aexit__(self, et, ev, tb) -> None:
        await self._hold.__aexit__(et, ev, tb)


class Watch:
    """A watch of one lock, a prefix of names, or an election's leader:
    an async iterator of baton.state.Event, and an async context manager
    that ends the watch on exit. The events wait here until taken (no
    bound: a reader that does not keep up holds them in memory).

    Iterating raises what ended the watch (baton.EPERM: the principal may
    no longer read it; baton.ELIMIT, baton.EPROTO, baton.EUNAVAIL,
    baton.ETIMEDOUT before the first event; baton.ENOMEM) once the events
    before it are taken; it simply stops when the watch or its client was
    closed."""

    def __init__(self, client: "AsyncClient", start, key: str):
        self.client = client
        self.key = key
        self.handle = ffi.new_handle(self)
        self._events: List[Event] = []
        self._head = 0
        self._waiter: Optional[asyncio.Future] = None
        self._end: Optional[BaseException] = None
        self._finished = asyncio.Event()
        self._out = ffi.new("baton_async_watch_t **")
        client._context()
        rv = start(self.handle, self._out)
        if rv < 0:
            raise make_error(rv, _errmsg(client._ac))
        client._calls[self.handle] = self

    def __aiter__(self) -> AsyncIterator[Event]:
        return self

    async def __anext__(self) -> Event:
        while self._head >= len(self._events):
            if self._finished.is_set():
                if self._end is None:
                    raise StopAsyncIteration
                raise self._end
            self._waiter = self.client._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        ev = self._events[self._head]
        self._head += 1
        if self._head > 256 and self._head * 2 > len(self._events):
            del self._events[:self._head]
            self._head = 0
        return ev

    async def close(self) -> None:
        """End the watch (idempotent) and wait until the library has let go of
        it. Raises nothing."""
        if not self._finished.is_set() and self._out[0] != ffi.NULL and self.client._ac is not None:
            w, self._out[0] = self._out[0], ffi.NULL
            rv = lib.baton_async_unwatch(self.client._ac, w)
            if rv < 0 and rv != _ENOTFOUND:
                return
        await self._finished.wait()

    async def __aenter__(self) -> "Watch":
        return self

    async def __aexit__(self, et, ev, tb) -> None:
        await self.close()

    def _event(self, ev: Event):
        self._events.append(ev)
        self._wake()

    def _ended(self, status: int, msg: Optional[str]):
        self._out[0] = ffi.NULL
        if status != _ECANCELED:
            self._end = make_error(status, msg)
        self._finished.set()
        self._wake()

    def _wake(self):
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


class AsyncClient:
    """One session with a baton cluster on the running asyncio loop. Make it
    with `await baton.aio.connect(...)` (or `async with`); end it with
    `await client.close()`. Besides what each call lists, every call (and
    every call of its Holds and Watches) raises RuntimeError when made
    outside the loop that connected the client."""

    def __init__(self, loop: asyncio.AbstractEventLoop, ac):
        self._loop = loop
        self._ac = ac
        self.handle = ffi.new_handle(self)
        self._adapter = LoopAdapter(loop, ac)
        self._calls: Dict[object, object] = {}
        self._holds: Dict[tuple, List[Hold]] = {}
        self._closing: Optional[asyncio.Future] = None
        self.session_changes = 0
        self._raced = 0  # grants that won the race against a cancel (for tests)

    def _context(self):
        """The C context, checked to be usable from here: raises ECLOSED after
        close, RuntimeError from another loop (the client is its loop's).
        The check asks for the current task of the client's loop first
        (asyncio.get_running_loop costs a getpid system call per call)."""
        if self._ac is None:
            raise make_error(lib.BATON_ECLOSED, "the client was closed")
        if (asyncio.current_task(self._loop) is None
                and asyncio.get_running_loop() is not self._loop):
            raise RuntimeError("baton.aio: a client is used from the loop that connected it only")
        return self._ac

    # ---- properties ----

    @property
    def session_id(self) -> int:
        """The session's id: 0 after the session ended until a fresh one is
        open (the next call opens it), and after close."""
        return lib.baton_async_session_id(self._ac) if self._ac is not None else 0

    @property
    def closed(self) -> bool:
        return self._ac is None

    def pending(self) -> int:
        """The calls whose callback has not run yet (baton_async_pending)."""
        return lib.baton_async_pending(self._ac) if self._ac is not None else 0

    # ---- locks ----

    def lock(self, name: str, timeout: Optional[float] = None, *, shared: bool = False,
             limit: int = 0, reentrant: bool = False, value: Optional[Bytes] = None,
             lock_delay: Optional[float] = None) -> _Acquire:
        """Acquire lock `name` for the current task, waiting at most `timeout`
        seconds (None: as long as it takes; 0: try once). Await it for the
        Hold, or `async with` it. shared: a shared hold (any number, or one
        exclusive); limit: N > 1 makes the name a semaphore of N permits;
        reentrant: a task that holds the name gets another handle at once;
        value: the hold's value, shown to readers; lock_delay: seconds to
        keep the lock from others should the session expire while holding
        it (None: the server's --lock-delay; -1: none).
        Raises baton.ETIMEDOUT (not granted within timeout; withdrawn),
        baton.EWOULDBLOCK (timeout 0: held or queued), baton.EDEADLK (this
        task holds or waits for the name, not reentrant), baton.EINVAL (a
        bad name or argument, or a limit other than the name's current one),
        baton.ESESSION (the session ended while waiting), baton.EUNAVAIL,
        baton.ELIMIT, baton.ENOSPC, baton.EPERM, baton.ETOOBIG (value),
        baton.EVERSION, baton.ECANCELED / baton.ECLOSED (the client was
        closed), CancelledError (the task was cancelled: nothing is left
        held or queued)."""
        return _Acquire(lambda: self._lock((name,), timeout, shared, limit, reentrant, value,
                                           lock_delay, "lock"))

    async def trylock(self, name: str, *, shared: bool = False, limit: int = 0,
                      reentrant: bool = False, value: Optional[Bytes] = None,
                      lock_delay: Optional[float] = None) -> Hold:
        """lock(name, timeout=0): the Hold, or baton.EWOULDBLOCK at once if
        the lock is held or anyone waits for it (nothing stays queued).
        Raises as lock()."""
        return await self._lock((name,), 0, shared, limit, reentrant, value, lock_delay, "lock")

    def lock_many(self, names: Sequence[str], timeout: Optional[float] = None, *,
                  shared: bool = False, limit: int = 0,
                  lock_delay: Optional[float] = None) -> _Acquire:
        """Acquire every name of `names` atomically (all with one fence, or
        none); the Hold is known by names[0] and one unlock releases all.
        Raises as lock(), and baton.EDEADLK when this session holds or waits
        for any of the names, baton.EINVAL for a repeated name or more than
        BATON_MAX_MANY."""
        names = tuple(names)
        return _Acquire(lambda: self._lock(names, timeout, shared, limit, False, None,
                                           lock_delay, "many"))

    async def campaign(self, election: str, value: Optional[Bytes] = None,
                       timeout: Optional[float] = None) -> Hold:
        """Campaign in `election` with `value` (who this candidate is) and wait
        (at most timeout seconds; None: as long as it takes) until it leads;
        returns its leadership as a Hold (its fence is the term; unlock is
        resign; hold.lost is set if leadership is lost). Use it with `async
        with` to resign on exit. Raises as lock()."""
        return await self._lock((election,), timeout, False, 0, False, value, None,
                                "campaign")

    async def _lock(self, names, timeout, shared, limit, reentrant, value, lock_delay, kind):
        ac = self._context()
        a = ffi.new("baton_lock_args *")
        # a positive timeout never rounds down to 0, which would be a try
        a.wait_ms = -1 if timeout is None else 0 if timeout == 0 else max(1, _ms(timeout, -1))
        a.lock_delay_ms = (0 if lock_delay is None else
                           -1 if lock_delay < 0 else max(1, _ms(lock_delay, 0)))
        a.mode = lib.BATON_MODE_SHARED if shared else lib.BATON_MODE_EXCLUSIVE
        a.limit = limit
        a.reentrant = 1 if reentrant else 0
        a.owner = _task_owner(asyncio.current_task(self._loop))
        data = _as_bytes(value)
        cname = names[0].encode() if isinstance(names[0], str) else bytes(names[0])
        call = _Call(self, name=cname, keep=names)
        if kind == "campaign":
            rv = lib.baton_async_campaign(ac, cname, data, len(data), a, _lock_cb, call.handle)
        elif kind == "many":
            cnames = [cstr(n) for n in names]
            arr = ffi.new("const char *[]", cnames)
            rv = lib.baton_async_lock_many(ac, arr, len(names), a, _lock_cb, call.handle)
        else:
            if data:
                a.value = ffi.from_buffer(data)
                a.value_len = len(data)
            rv = lib.baton_async_lock_with(ac, cname, a, _lock_cb, call.handle)
        if rv < 0:
            raise make_error(rv, _errmsg(ac))
        self._calls[call.handle] = call
        try:
            return await call.fut
        except asyncio.CancelledError:
            self._abandon(call)
            raise

    def _abandon(self, call: _Call):
        """The task that waited for `call` was cancelled: withdraw the wait
        (its callback then releases a grant that won the race), or release
        the hold it was already given."""
        fut = call.fut
        if fut.cancelled() or not fut.done():
            call.abandoned = True
            if self._ac is not None and call.handle in self._calls:
                lib.baton_async_cancel(self._ac, call.name, call.handle)
        elif fut.exception() is None:
            self._release_quietly(fut.result())

    def _lock_done(self, call: _Call, status: int, fence: int, msg: Optional[str]):
        """A lock call's callback (on the loop thread, inside the core)."""
        if status == 0:
            names = [n if isinstance(n, str) else n.decode() for n in call.keep]
            hold = Hold(self, names[0], fence, names)
            self._holds.setdefault((hold.name, fence), []).append(hold)
            if call.abandoned or call.fut.done():
                self._raced += 1
                self._release_quietly(hold)
            else:
                call.fut.set_result(hold)
        else:
            call.fail(status, msg)

    def _release_quietly(self, hold: Hold):
        """Release a hold nobody will use (its task was cancelled), without
        waiting; the core may be called here, from a callback."""
        hold._unlocked = True
        self._forget(hold)
        if self._ac is not None:
            lib.baton_async_unlock(self._ac, hold.name.encode(), hold.fence, ffi.NULL, ffi.NULL)

    def _forget(self, hold: Hold):
        holds = self._holds.get((hold.name, hold.fence))
        if holds is not None:
            try:
                holds.remove(hold)
            except ValueError:
                pass
            if not holds:
                del self._holds[(hold.name, hold.fence)]

    def _lost(self, name: str, fence: int, why: int, msg: Optional[str]):
        for hold in self._holds.get((name, fence), ()):
            hold._mark_lost(why, msg)

    def _new_session(self, status: int, session: int):
        """The session callback: a fresh session replaced one that ended."""
        if status == 0:
            self.session_changes += 1

    def __del__(self):
        if self._ac is not None:
            # Freeing here could run the core's callbacks and hooks on a loop
            # that is closed or on another thread's stack: only warn, as an
            # unclosed asyncio transport does.
            warnings.warn("baton.aio.AsyncClient was not closed (await client.close())",
                          ResourceWarning, source=self)

    # ---- reading, watching, elections ----

    async def lock_state(self, name: str) -> LockState:
        """Read lock `name`'s state, linearizably (needs no session).
        Raises baton.EINVAL (bad name), baton.EPERM, baton.ELIMIT,
        baton.EUNAVAIL (no leader answered within op_timeout),
        baton.ECANCELED / baton.ECLOSED (the client was closed)."""
        return await self._read(lib.baton_async_lock_state, name)

    async def leader(self, election: str) -> Optional[Holder]:
        """The current leader of `election` (its Holder: session, fence = the
        term, value), or None while nobody leads. Raises as lock_state()."""
        try:
            st = await self._read(lib.baton_async_leader, election)
        except errors.ENOTFOUND:
            return None
        return st.holders[0] if st.holders else None

    async def _read(self, fn, name: str) -> LockState:
        ac = self._context()
        call = _Call(self)
        rv = fn(ac, name.encode(), _state_cb, call.handle)
        if rv < 0:
            raise make_error(rv, _errmsg(self._ac))
        self._calls[call.handle] = call
        return await call.fut

    def watch(self, key: str, prefix: bool = False, after: int = 0) -> Watch:
        """Watch lock `key` (or every lock whose name starts with it, prefix
        True; "" is every lock) from revision `after` (0: the current state
        first): an async iterator of Events, and an async context manager
        that ends the watch. Starts at once. Raises baton.EINVAL (bad key),
        baton.ENOMEM, baton.ECLOSED; iterating raises what ended it (Watch)."""
        flags = lib.BATON_WATCH_PREFIX if prefix else 0
        ckey = key.encode()
        return Watch(self, lambda h, out: lib.baton_async_watch(
            self._ac, ckey, flags, after, _watch_cb, h, out), key)

    def observe(self, election: str) -> Watch:
        """Watch `election`'s leader: an event per change of the leader or of
        its value (holders[0] of the event's state, no holder while nobody
        leads), besides STATE, GAP and SYNCED. Raises as watch()."""
        cname = election.encode()
        return Watch(self, lambda h, out: lib.baton_async_observe(
            self._ac, cname, _watch_cb, h, out), election)

    # ---- the end ----

    async def close(self) -> None:
        """End the session (the cluster releases its locks and drops its waits)
        and free the client: every call still pending ends (baton.ECANCELED),
        every watch stops, and nothing of the client stays on the loop.
        Idempotent. Raises nothing: if the cluster does not answer the close
        within op_timeout, the session lives on there until its lease ends."""
        if self._closing is not None:
            await asyncio.shield(self._closing)
            return
        self._closing = self._loop.create_future()
        try:
            if self._opened:
                call = _Call(self)
                rv = lib.baton_async_close_session(self._ac, _done_cb, call.handle)
                if rv == 0:
                    self._calls[call.handle] = call
                    try:
                        await asyncio.shield(call.fut)
                    except Exception:  # noqa: BLE001 -- the close's answer only
                        pass
        finally:
            ac, self._ac = self._ac, None
            lib.baton_async_free(ac)  # runs what is still pending, with ECANCELED
            self._calls.clear()
            self._holds.clear()
            self._closing.set_result(None)

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, et, ev, tb) -> None:
        await self.close()

    _opened = False


class _Connect:
    """What connect() returns: await it for the AsyncClient, or use it as an
    async context manager (the client is closed on exit)."""

    def __init__(self, kwargs):
        self._kwargs = kwargs
        self._client: Optional[AsyncClient] = None

    def __await__(self):
        return _connect(**self._kwargs).__await__()

    async def __aenter__(self) -> AsyncClient:
        self._client = await _connect(**self._kwargs)
        return self._client

    async def __aexit__(self, et, ev, tb) -> None:
        await self._client.close()


def connect(endpoints: str, *, client_name: Optional[str] = None,
            connect_timeout: Optional[float] = None, op_timeout: Optional[float] = None,
            session_ttl: Optional[float] = None, tls_ca: Optional[str] = None,
            tls_cert: Optional[str] = None, tls_key: Optional[str] = None,
            token: Optional[str] = None) -> _Connect:
    """Open a session with the cluster at `endpoints` (comma-separated
    "host:port"; one reachable node is enough) on the running loop:
    `client = await connect(...)`, or `async with connect(...) as client`.
    connect_timeout (s; None: 5) bounds the open, op_timeout (s; None: 10)
    each request, session_ttl (s; None: 10) is the lease asked for. tls_ca
    turns TLS on (the nodes verified against that CA file); tls_cert and
    tls_key are a client certificate; token is the bearer token sent in
    HELLO.
    Raises baton.EINVAL (malformed endpoints, an unreadable TLS file, a
    certificate without its key, a name or token too long), baton.EUNAVAIL
    (no leader answered within connect_timeout), baton.EVERSION,
    baton.ELIMIT, baton.ENOSPC, baton.ETLS, baton.EAUTH, baton.EPERM (the
    principal may not open sessions), baton.ENOMEM; RuntimeError outside a
    running loop."""
    return _Connect(dict(endpoints=endpoints, client_name=client_name,
                         connect_timeout=connect_timeout, op_timeout=op_timeout,
                         session_ttl=session_ttl, tls_ca=tls_ca, tls_cert=tls_cert,
                         tls_key=tls_key, token=token))


async def _connect(endpoints, client_name, connect_timeout, op_timeout, session_ttl,
                   tls_ca, tls_cert, tls_key, token) -> AsyncClient:
    loop = asyncio.get_running_loop()
    o = ffi.new("baton_opts *")
    keep = []

    def s(v):
        if v is None:
            return ffi.NULL
        c = cstr(v)
        keep.append(c)
        return c

    o.endpoints = s(endpoints)
    o.client_name = s(client_name)
    o.connect_timeout_ms = _ms(connect_timeout, 0)
    o.op_timeout_ms = _ms(op_timeout, 0)
    o.session_ttl_ms = _ms(session_ttl, 0)
    o.tls_ca_file = s(tls_ca)
    o.tls_cert_file = s(tls_cert)
    o.tls_key_file = s(tls_key)
    o.token = s(token)
    out = ffi.new("baton_async_t **")
    rv = lib.baton_async_new(o, out)  # copies the strings, reads the files
    if rv < 0:
        raise make_error(rv, ffi.string(lib.baton_async_new_errmsg()).decode() or None)
    client = AsyncClient(loop, out[0])
    ok = False
    try:
        rv = client._adapter.attach()
        if rv < 0:
            raise make_error(rv, _errmsg(client._ac))
        lib.baton_async_on_lost(client._ac, _lost_cb, client.handle)
        lib.baton_async_on_session(client._ac, _session_cb, client.handle)
        call = _Call(client)
        rv = lib.baton_async_open(client._ac, _open_cb, call.handle)
        if rv < 0:
            raise make_error(rv, _errmsg(client._ac))
        client._calls[call.handle] = call
        client._opened = True
        await call.fut
        ok = True
        return client
    finally:
        if not ok:
            # A failed open leaves only the free; a cancelled one frees too.
            client._opened = False
            ac, client._ac = client._ac, None
            lib.baton_async_free(ac)
            client._calls.clear()
