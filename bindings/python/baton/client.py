"""Client: one session with a baton cluster, on libbaton's blocking API
(include/baton/baton.h).

Threads. A Client may be shared by any number of threads; every method is
thread-safe and blocking calls release the GIL while they wait (cffi does),
so threads of one Client wait for locks concurrently. Each lock call's
owner is the calling thread (libbaton's blocking API, "Owners"): threads
of one Client waiting for one name are granted in FIFO order like any
other clients, each with its own Hold and fence; a thread asking for a
name it already holds or waits for gets baton.EDEADLK unless reentrant.

Lost locks. The session is kept alive by libbaton's I/O thread. A hold is
declared lost when the session's lease runs out, the cluster says the
session expired, or an operator forces its release; the Hold's `lost`
Event is then set and its lost_reason says why (hold.py explains how the
notice is routed). Stop relying on the lock when that happens.
"""
import math
import threading
import weakref
from typing import Iterable, Optional, Sequence, Union

from ._ffi import ffi, lib
from .cancel import Cancel, new_handle
from .errors import BatonError, make_error
from .hold import Hold, Leadership, Value, _Router, name_bytes, value_bytes
from .state import Holder, LockState, holder_from_c, state_from_c
from .watch import Watch

Name = Union[str, bytes]


def _ms_opt(seconds: Optional[float], what: str) -> int:
    """An option in seconds as libbaton's ms (0: the library's default)."""
    if seconds is None:
        return 0
    if seconds <= 0:
        raise ValueError("%s must be > 0 seconds (or None for the default)" % what)
    return max(1, int(math.ceil(seconds * 1000)))


def _wait_ms(timeout: Optional[float]) -> int:
    """A lock timeout in seconds as wait_ms: None for ever, 0 a try."""
    if timeout is None:
        return lib.BATON_WAIT_FOREVER
    if timeout < 0:
        raise ValueError("timeout must be >= 0 seconds, or None to wait for ever")
    if timeout == 0:
        return lib.BATON_WAIT_TRY
    return max(1, int(math.ceil(timeout * 1000)))


def _lock_delay_ms(lock_delay: Optional[float]) -> int:
    if lock_delay is None:
        return lib.BATON_LOCK_DELAY_DEFAULT
    if lock_delay < 0:
        raise ValueError("lock_delay must be >= 0 seconds, or None for the server's")
    if lock_delay == 0:
        return lib.BATON_LOCK_DELAY_NONE
    return max(1, int(math.ceil(lock_delay * 1000)))


class _Conn:
    """A Client's baton_t and what closing it needs, apart from the Client
    object itself, so that weakref.finalize can close a Client that is
    collected, or left open at interpreter exit, as close() would.

    Calls into the library with b are counted (enter/leave): close()
    fires `abort` (every lock wait made through the Client holds a handle
    of it), closes the watches, waits for the calls to leave the library,
    and only then calls baton_close, which frees b -- so no call can ever
    start on a freed b. Watch.next waits in slices, lock_state and the
    like at most op_timeout."""

    def __init__(self, b, router: _Router) -> None:
        self.b = b
        self.router = router
        self.mu = threading.Condition(threading.Lock())
        self.calls = 0           # calls inside the library with b
        self.closing = False     # new calls raise ECLOSED
        self.closed = False      # baton_close ran
        self.close_mu = threading.Lock()  # one close at a time, to its end
        self.abort = Cancel()

    def enter(self) -> None:
        with self.mu:
            if self.closing:
                raise make_error(lib.BATON_ECLOSED, "the Client is closed")
            self.calls += 1

    def leave(self) -> None:
        with self.mu:
            self.calls -= 1
            if not self.calls:
                self.mu.notify_all()

    def close(self) -> None:
        if self.router.io_thread == threading.get_ident():
            # Collected on the I/O thread (inside the lost callback), where
            # baton_close does nothing: close from a thread of our own.
            threading.Thread(target=self.close, name="baton-close").start()
            return
        with self.close_mu:
            if self.closed:
                return
            with self.mu:
                self.closing = True
            self.abort.cancel()
            for w in list(self.router.watches):
                w.close()
            with self.mu:
                while self.calls:
                    self.mu.wait()
            lib.baton_close(self.b)  # ends the session, joins the I/O thread
            self.closed = True
        for h in self.router.all_holds():  # their handles, freed (ECLOSED)
            h._free_after_close()
            self.router.unregister(h)


class Client:
    """One session with a baton cluster (baton_connect).

        with baton.Client("127.0.0.1:7001,127.0.0.1:7002") as c:
            with c.lock("jobs/42", timeout=5) as hold:
                work(fence=hold.fence)

    endpoints: "host:port,host:port,..." of any nodes (one reachable is
    enough). Timeouts are in seconds (floats); None keeps the library's
    default: connect_timeout 5 s (how long connecting tries), op_timeout
    10 s (the longest wait for any reply, not counting time queued for a
    lock), session_ttl 10 s (the session's lease). tls_ca (a PEM file)
    turns TLS on; tls_cert/tls_key a client certificate; token a bearer
    token naming the principal. read_only: a reader, which opens no
    session (lock_state, leader, watch and observe work; lock calls raise
    baton.ESESSION).

    Raises (with the library's message): baton.EINVAL (bad endpoints, an
    unreadable TLS file, a token over 256 bytes), baton.EUNAVAIL (no
    leader reachable within connect_timeout), baton.ETLS, baton.EAUTH
    (unknown token or certificate), baton.EPERM (the principal may not
    open sessions), baton.EVERSION, baton.ENOSPC, baton.ELIMIT,
    baton.ENOMEM; ValueError for a timeout <= 0.

    close() (or leaving the with block) ends the session: held locks are
    released, waits end with baton.ECLOSED. A Client never closed is
    closed when collected, and at interpreter exit.
    """

    def __init__(self, endpoints: str, *, client_name: Optional[str] = None,
                 connect_timeout: Optional[float] = None, op_timeout: Optional[float] = None,
                 session_ttl: Optional[float] = None, tls_ca: Optional[str] = None,
                 tls_cert: Optional[str] = None, tls_key: Optional[str] = None,
                 token: Optional[str] = None, read_only: bool = False) -> None:
        router = _Router()  # its callback made before there is a baton_t to leak
        keep = []

        def s(v):
            if v is None:
                return ffi.NULL
            c = ffi.new("char[]", v.encode() if isinstance(v, str) else bytes(v))
            keep.append(c)
            return c

        o = ffi.new("baton_opts *")
        o.endpoints = s(endpoints)
        o.client_name = s(client_name)
        o.connect_timeout_ms = _ms_opt(connect_timeout, "connect_timeout")
        o.op_timeout_ms = _ms_opt(op_timeout, "op_timeout")
        o.session_ttl_ms = _ms_opt(session_ttl, "session_ttl")
        o.tls_ca_file = s(tls_ca)
        o.tls_cert_file = s(tls_cert)
        o.tls_key_file = s(tls_key)
        o.token = s(token)
        o.read_only = 1 if read_only else 0
        out = ffi.new("baton_t **")
        rv = lib.baton_connect(o, out)  # the GIL is released while it connects
        if rv < 0:
            raise make_error(rv, ffi.string(lib.baton_connect_errmsg()).decode("utf-8", "replace"))
        self._b = out[0]
        self.endpoints = endpoints
        self.client_name = client_name
        self.read_only = bool(read_only)
        self._router = router
        lib.baton_on_lost(self._b, self._router.callback, ffi.NULL)
        self._conn = _Conn(self._b, self._router)
        self._finalize = weakref.finalize(self, self._conn.close)

    def __repr__(self) -> str:
        return "<baton.Client %s%s>" % (self.endpoints, " closed" if self._conn.closing else "")

    # ---- lifetime ---------------------------------------------------------

    def close(self) -> None:
        """End the session: every hold is released (and its Hold's handle
        freed: unlock() then raises baton.ECLOSED), lock calls waiting in
        other threads raise baton.ECLOSED, watches are closed; libbaton's
        I/O thread is joined. Waits for calls in progress to leave the
        library (lock_state and the like: at most op_timeout).
        Idempotent; never raises; do not call it from a lost notice."""
        self._conn.close()
        self._finalize.detach()

    @property
    def closed(self) -> bool:
        """True once close() has begun (then every call raises
        baton.ECLOSED)."""
        return self._conn.closing

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _error(self, rv: int, what: str) -> BatonError:
        """The exception of rv, with baton_errmsg (call inside _enter)."""
        msg = ffi.string(lib.baton_errmsg(self._b)).decode("utf-8", "replace")
        return make_error(rv, msg or "%s: %s" % (what, BatonError.strerror(rv)))

    @property
    def session_id(self) -> int:
        """The session id (as batonctl shows it); it changes when a fresh
        session replaces one that ended. Raises baton.ECLOSED."""
        self._conn.enter()
        try:
            return int(lib.baton_session_id(self._b))
        finally:
            self._conn.leave()

    # ---- locks ------------------------------------------------------------

    def lock(self, name: Name, timeout: Optional[float] = None, *, shared: bool = False,
             limit: int = 0, reentrant: bool = False, value: Value = None,
             lock_delay: Optional[float] = None, cancel: Optional[Cancel] = None) -> Hold:
        """Acquire lock `name` (1..256 bytes; str is UTF-8) and return its
        Hold (a context manager that unlocks).

        timeout: seconds to wait at most; None waits for ever, 0 only tries
        (trylock). shared: a shared hold (any number of shared holders, or
        one exclusive). limit: N >= 2 makes the name a semaphore of N
        permits. reentrant: a thread that holds the name takes it again at
        once (a second Hold, same fence; released when the last is
        unlocked). value: the hold's value (bytes or str), shown to every
        reader. lock_delay: if the session expires while holding, keep the
        lock from everyone this many seconds (0: none; None: the server's
        --lock-delay). cancel: a Cancel that ends the wait from another
        thread (see Cancel for the grant-wins race).

        Raises baton.EWOULDBLOCK (timeout 0: held or queued; nothing left
        queued), baton.ETIMEDOUT (also TimeoutError: not granted in time;
        the wait was withdrawn), baton.ECANCELED (cancel fired; withdrawn),
        baton.EDEADLK (this thread holds or waits for the name, not
        reentrant), baton.EINVAL (bad name, a limit other than the
        name's), baton.ESESSION (the session ended while waiting; the next
        call opens a fresh one; also for a read_only Client),
        baton.EUNAVAIL, baton.ELIMIT, baton.ENOSPC, baton.EPERM,
        baton.ETOOBIG (value too long), baton.EVERSION, baton.ECLOSED
        (the Client was closed), ValueError (a negative timeout),
        TypeError (a name or value of another type)."""
        return self._lock_call([name], timeout, shared, limit, reentrant, value_bytes(value),
                               lock_delay, cancel, Hold)

    def trylock(self, name: Name, *, shared: bool = False, limit: int = 0,
                reentrant: bool = False, value: Value = None,
                lock_delay: Optional[float] = None) -> Hold:
        """lock(name, timeout=0): acquire only if free and nobody is queued.
        Raises baton.EWOULDBLOCK if not, and as lock()."""
        return self.lock(name, 0, shared=shared, limit=limit, reentrant=reentrant,
                         value=value, lock_delay=lock_delay)

    def lock_many(self, names: Iterable[Name], timeout: Optional[float] = None, *,
                  shared: bool = False, limit: int = 0, lock_delay: Optional[float] = None,
                  cancel: Optional[Cancel] = None) -> Hold:
        """Acquire every name at once, atomically (one fence; all or none;
        never deadlocks with other multi-locks over the same names in any
        order). One Hold for all: unlock() releases every name; losing any
        name loses all (reported by the first). 1..64 distinct names;
        options as lock() (no value, no reentrant).

        Raises as lock(); baton.EINVAL also for no names, too many, or a
        repeated one; baton.EDEADLK when this session (any thread) holds or
        waits for any of the names."""
        names = list(names)
        return self._lock_call(names, timeout, shared, limit, False, None, lock_delay, cancel,
                               Hold)

    def campaign(self, election: Name, value: Value, timeout: Optional[float] = None, *,
                 cancel: Optional[Cancel] = None) -> Leadership:
        """Wait (timeout seconds at most; None for ever, 0 not at all) until
        this candidate leads election `election` (candidates queue FIFO),
        then return the Leadership, whose value (bytes or str) says who
        leads; proclaim() changes it, resign() hands over.

        Raises as lock() (EWOULDBLOCK, ETIMEDOUT, ECANCELED...)."""
        return self._lock_call([election], timeout, False, 0, False, value_bytes(value), None,
                               cancel, Leadership)

    def _lock_call(self, names: Sequence[Name], timeout, shared, limit, reentrant,
                   value: Optional[bytes], lock_delay, cancel: Optional[Cancel], cls):
        cnames = [ffi.new("char[]", name_bytes(n)) for n in names]
        arr = ffi.new("const char *[]", cnames)
        a = ffi.new("baton_lock_args *")
        a.wait_ms = _wait_ms(timeout)
        a.lock_delay_ms = _lock_delay_ms(lock_delay)
        a.mode = lib.BATON_MODE_SHARED if shared else lib.BATON_MODE_EXCLUSIVE
        if limit < 0:
            raise ValueError("limit must be >= 0")
        a.limit = limit
        a.reentrant = 1 if reentrant else 0
        vbuf = None
        if value is not None:
            vbuf = ffi.from_buffer(value)
            a.value = vbuf
            a.value_len = len(value)
        h = new_handle()
        out = ffi.new("baton_lock_t **")
        self._conn.enter()
        try:
            self._conn.abort._attach(h)
            if cancel is not None:
                cancel._attach(h)
            rv = lib.baton_lock_call(self._b, arr, len(cnames), a, h, out)
            if rv < 0:
                if rv == lib.BATON_ECANCELED and self._conn.closing and not (cancel and cancel.cancelled):
                    rv = lib.BATON_ECLOSED
                raise self._error(rv, "lock %r" % (names[0] if len(names) == 1 else list(names),))
            hold = cls(self._router, out[0], names, value)
            self._router.register(hold)
            return hold
        finally:
            if cancel is not None:
                cancel._detach(h)
            self._conn.abort._detach(h)
            self._conn.leave()
            del vbuf

    # ---- reading, watching, elections --------------------------------------

    def lock_state(self, name: Name) -> LockState:
        """Lock `name`'s state, read linearizably (it holds every change
        whose call returned before this one began). Needs no session.

        Raises baton.EINVAL (bad name), baton.EUNAVAIL (no leader answered
        within op_timeout), baton.EPERM, baton.ELIMIT, baton.ENOMEM,
        baton.ECLOSED."""
        out = ffi.new("baton_lock_state **")
        cname = ffi.new("char[]", name_bytes(name))
        self._conn.enter()
        try:
            rv = lib.baton_lock_state_get(self._b, cname, out)
            if rv < 0:
                raise self._error(rv, "lock_state %r" % (name,))
        finally:
            self._conn.leave()
        try:
            return state_from_c(out[0])
        finally:
            lib.baton_lock_state_free(out[0])

    def leader(self, election: Name) -> Optional[Holder]:
        """The current leader of `election` (its Holder: session,
        client_name, fence = term, value), or None if nobody leads. Read
        linearizably. Raises as lock_state()."""
        out = ffi.new("baton_lock_state **")
        cname = ffi.new("char[]", name_bytes(election))
        self._conn.enter()
        try:
            rv = lib.baton_leader(self._b, cname, out)
            if rv == lib.BATON_ENOTFOUND:
                return None
            if rv < 0:
                raise self._error(rv, "leader %r" % (election,))
        finally:
            self._conn.leave()
        try:
            st = out[0]
            return holder_from_c(st.holders[0]) if st.n_holders > 0 else None
        finally:
            lib.baton_lock_state_free(out[0])

    def watch(self, key: Name, prefix: bool = False, after: int = 0) -> Watch:
        """Watch lock `key` (or, prefix=True, every lock whose name starts
        with it; "" is every lock): a Watch yielding one Event per change,
        in commit order. It starts with the current state ("state" events,
        then "synced"), or from revision `after` if the caller knows it.
        Needs no session and outlives one.

        Raises baton.EINVAL, baton.EUNAVAIL, baton.EPERM, baton.ELIMIT
        (too many watches on the leader), baton.EPROTO, baton.ENOMEM,
        baton.ECLOSED."""
        return self._watch("watch %r" % (key,), key,
                           lambda c, out: lib.baton_watch(self._b, c,
                                                          lib.BATON_WATCH_PREFIX if prefix else 0,
                                                          after, out))

    def observe(self, election: Name) -> Watch:
        """Watch `election`'s leadership: one "change" event per change of
        leader or of the leader's value (its state's holders[0] is the new
        leader; no holders while nobody leads), besides the "state", "gap"
        and "synced" events of any watch. Raises as watch()."""
        return self._watch("observe %r" % (election,), election,
                           lambda c, out: lib.baton_observe(self._b, c, out))

    def _watch(self, what: str, key: Name, start) -> Watch:
        out = ffi.new("baton_watch_t **")
        c = ffi.new("char[]", name_bytes(key))
        self._conn.enter()
        try:
            rv = start(c, out)
            if rv < 0:
                raise self._error(rv, what)
            w = Watch(out[0], key)
            self._router.watches.add(w)
            return w
        finally:
            self._conn.leave()
