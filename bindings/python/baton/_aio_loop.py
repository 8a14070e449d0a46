"""The asyncio adapter of a baton_async_t: the eight event-loop hooks of
include/baton/baton_async.h (baton_async_hooks) mapped onto the running
asyncio loop, with no thread of its own.

The core calls a hook synchronously and a hook may not call back into the
core, so every hook here only records what the core asked for and tells
the loop (add_reader, add_writer, call_later, call_soon); the core is
called later, from the loop, in on_read / on_write / on_timeout / flush.

Output. While connecting, writability is what tells the core that the
connect finished, so add_write then watches the socket at once. Once the
socket is watched for reading, add_write means "output is queued": the
adapter writes it from a call_soon at the end of the loop's current turn,
in one send for everything queued meanwhile, and watches for writability
only if the socket is full (the libuv adapter, include/baton/adapters/libuv.h,
does the same with an idle handle). That saves a selector round and two
epoll_ctl calls per request.
"""
import asyncio

from ._ffi import ffi, lib


def _report(where, exc):
    """An exception in a hook or a callback cannot go to the C caller: hand it
    to the loop's exception handler, as asyncio does for its callbacks."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    loop.call_exception_handler({"message": "baton: exception in %s" % where,
                                 "exception": exc})


def _hook(sig, where):
    def wrap(fn):
        def guarded(*args):
            try:
                fn(*args)
            except BaseException as e:  # noqa: BLE001 -- must not unwind into C
                _report(where, e)
        return ffi.callback(sig, guarded)
    return wrap


@_hook("void(void *, int)", "add_read")
def _add_read(data, fd):
    ffi.from_handle(data).add_read(fd)


@_hook("void(void *, int)", "del_read")
def _del_read(data, fd):
    ffi.from_handle(data).del_read(fd)


@_hook("void(void *, int)", "add_write")
def _add_write(data, fd):
    ffi.from_handle(data).add_write(fd)


@_hook("void(void *, int)", "del_write")
def _del_write(data, fd):
    ffi.from_handle(data).del_write(fd)


@_hook("void(void *, int)", "close_fd")
def _close_fd(data, fd):
    ffi.from_handle(data).close_fd(fd)


@_hook("void(void *, uint64_t)", "timer_start")
def _timer_start(data, ms):
    ffi.from_handle(data).timer_start(ms)


@_hook("void(void *)", "timer_stop")
def _timer_stop(data):
    ffi.from_handle(data).timer_stop()


@_hook("void(void *)", "cleanup")
def _cleanup(data):
    ffi.from_handle(data).cleanup()


# The adapters of each loop that have output to write at the end of the
# loop's current turn: one call_soon per turn for all of them, however many
# clients queued output in it.
_flushes: dict = {}


def _flush_all(loop):
    for adapter in _flushes.pop(loop, ()):
        adapter.flush()


class LoopAdapter:
    """Runs one baton_async_t on one asyncio loop. attach() installs the hooks;
    after the core's cleanup hook nothing of it stays on the loop."""

    __slots__ = ("loop", "ac", "handle", "rfd", "wfd", "want_write", "flush_queued",
                 "timer", "cleaned", "__weakref__")

    def __init__(self, loop: asyncio.AbstractEventLoop, ac):
        self.loop = loop
        self.ac = ac
        self.handle = ffi.new_handle(self)  # the hooks' data: lives as long as self
        self.rfd = -1          # the socket watched for reading, or -1
        self.wfd = -1          # the socket watched for writing, or -1
        self.want_write = False
        self.flush_queued = False  # in _flushes[loop]
        self.timer = None
        self.cleaned = False

    def attach(self) -> int:
        h = ffi.new("baton_async_hooks *")
        h.data = self.handle
        h.add_read = _add_read
        h.del_read = _del_read
        h.add_write = _add_write
        h.del_write = _del_write
        h.close_fd = _close_fd
        h.timer_start = _timer_start
        h.timer_stop = _timer_stop
        h.cleanup = _cleanup
        return lib.baton_async_attach(self.ac, h)  # the struct is copied

    # ---- the hooks (called by the core; they never call it) ----

    def add_read(self, fd):
        if self.rfd != fd:
            self.loop.add_reader(fd, self.on_read)
            self.rfd = fd

    def del_read(self, fd):
        if self.rfd == fd:
            self.loop.remove_reader(fd)
            self.rfd = -1

    def add_write(self, fd):
        self.want_write = True
        if self.rfd == fd:
            if not self.flush_queued and self.wfd != fd:
                self.flush_queued = True
                queued = _flushes.get(self.loop)
                if queued is None:
                    queued = _flushes[self.loop] = []
                    self.loop.call_soon(_flush_all, self.loop)
                queued.append(self)
        else:
            self._watch_write(fd)

    def del_write(self, fd):
        self.want_write = False
        if self.wfd == fd:
            self.loop.remove_writer(fd)
            self.wfd = -1

    def close_fd(self, fd):
        if self.rfd == fd:
            self.loop.remove_reader(fd)
            self.rfd = -1
        if self.wfd == fd:
            self.loop.remove_writer(fd)
            self.wfd = -1
        self.want_write = False

    def timer_start(self, ms):
        if self.timer is not None:
            self.timer.cancel()
        if ms == 0:
            self.timer = self.loop.call_soon(self.on_timeout)
        else:
            self.timer = self.loop.call_later(ms / 1000.0, self.on_timeout)

    def timer_stop(self):
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def cleanup(self):
        if self.rfd >= 0:
            self.loop.remove_reader(self.rfd)
        if self.wfd >= 0:
            self.loop.remove_writer(self.wfd)
        self.rfd = self.wfd = -1
        self.timer_stop()
        if self.flush_queued:
            queued = _flushes.get(self.loop, [])
            if self in queued:
                queued.remove(self)
            if not queued:
                _flushes.pop(self.loop, None)  # _flush_all then finds nothing
            self.flush_queued = False
        self.ac = None
        self.cleaned = True

    def _watch_write(self, fd):
        if self.wfd != fd:
            if self.wfd >= 0:
                self.loop.remove_writer(self.wfd)
            self.loop.add_writer(fd, self.on_write)
            self.wfd = fd

    # ---- the loop's callbacks (they call the core) ----

    def on_read(self):
        if self.ac is not None:
            lib.baton_async_handle_read(self.ac)

    def on_write(self):
        if self.ac is not None:
            lib.baton_async_handle_write(self.ac)

    def on_timeout(self):
        self.timer = None
        if self.ac is not None:
            lib.baton_async_handle_timeout(self.ac)

    def flush(self):
        """The end of the loop turn in which output was queued: write it; watch
        for writability only if some is left (the socket is full)."""
        self.flush_queued = False
        if self.ac is not None and self.want_write and self.rfd >= 0:
            fd = self.rfd
            lib.baton_async_handle_write(self.ac)
            if self.ac is not None and self.want_write and self.rfd == fd:
                self._watch_write(fd)

    def watching(self) -> bool:
        """Whether anything of this adapter is still on the loop (for tests)."""
        return (self.rfd >= 0 or self.wfd >= 0 or self.timer is not None
                or self.flush_queued)
