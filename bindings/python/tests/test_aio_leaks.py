"""baton.aio leaves nothing behind: after close no reader, writer or timer
of a client is on the loop, no fd is open, no thread was ever made, and no
AsyncClient lives on."""
import asyncio
import gc
import os
import threading

import pytest

import baton
import baton.aio
from baton._aio_loop import LoopAdapter, _flushes
from aio_util import connect, run


def _fds():
    return set(os.listdir("/proc/self/fd"))


def _ours(handle):
    cb = getattr(handle, "_callback", None)
    return isinstance(getattr(cb, "__self__", None), LoopAdapter)


def test_close_leaves_nothing(cluster):
    threads = threading.active_count()

    async def main():
        loop = asyncio.get_running_loop()
        selector_fds = set(loop._selector.get_map().keys())
        fds = _fds()
        clients = [await connect(cluster) for _ in range(3)]
        assert len(_fds()) >= len(fds) + 3
        assert len(loop._selector.get_map()) >= len(selector_fds) + 3
        holds = [await c.lock("aio-leak-%d" % i) for i, c in enumerate(clients)]
        waiter = asyncio.ensure_future(clients[1].lock("aio-leak-0"))  # waits
        w = clients[2].watch("aio-leak-", prefix=True)
        await asyncio.wait_for(w.__anext__(), 15)
        await holds[1].unlock()
        adapters = [c._adapter for c in clients]
        for c in reversed(clients):  # the waiter's client before the holder's
            await c.close()
            await c.close()  # idempotent
        # what was pending ended: the waiter with ECANCELED, the watch stops
        with pytest.raises(baton.ECANCELED):
            await waiter
        async for _ in w:
            pass
        with pytest.raises(baton.ECLOSED):
            await holds[0].unlock()
        with pytest.raises(baton.ECLOSED):
            await clients[0].lock("x")
        assert not any(a.watching() for a in adapters)
        assert all(a.cleaned for a in adapters)
        left = set(loop._selector.get_map().keys()) - selector_fds
        assert not left, "fds still watched by the loop: %r" % left
        timers = [h for h in loop._scheduled if _ours(h) and not h.cancelled()]
        assert not timers, "timers left: %r" % timers
        ready = [h for h in loop._ready if _ours(h) and not h.cancelled()]
        assert not ready, "callbacks left: %r" % ready
        assert not _flushes.get(loop), "output to flush left: %r" % _flushes.get(loop)
        left = _fds() ^ fds
        assert not left, "fds opened or closed: %r" % left
        assert threading.active_count() == threads
        del clients, adapters, holds, waiter, w

    run(main())
    gc.collect()
    assert not [o for o in gc.get_objects() if isinstance(o, baton.aio.AsyncClient)]
    assert threading.active_count() == threads


def test_failed_connect_leaves_nothing():
    threads = threading.active_count()

    async def main():
        fds = _fds()
        with pytest.raises(baton.EUNAVAIL):
            # a port nobody listens on (the discard port)
            await baton.aio.connect("127.0.0.1:9", connect_timeout=0.5)
        left = _fds() ^ fds
        assert not left, "fds opened or closed: %r" % left
        assert not [h for h in asyncio.get_running_loop()._scheduled
                    if _ours(h) and not h.cancelled()]

    run(main())
    gc.collect()
    assert not [o for o in gc.get_objects() if isinstance(o, baton.aio.AsyncClient)]
    assert threading.active_count() == threads


def test_cancelled_connect_leaves_nothing():
    async def main():
        fds = _fds()
        t = asyncio.ensure_future(baton.aio.connect("127.0.0.1:9", connect_timeout=30))
        await asyncio.sleep(0.2)
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t
        left = _fds() ^ fds
        assert not left, "fds opened or closed: %r" % left

    run(main())
    gc.collect()
    assert not [o for o in gc.get_objects() if isinstance(o, baton.aio.AsyncClient)]


def test_a_client_is_its_loops(cluster):
    """A client used from another loop refuses (RuntimeError), and stays
    usable from its own."""
    holder = {}

    async def first():
        holder["c"] = await connect(cluster)
        holder["h"] = await holder["c"].lock("aio-loop")

    async def other():
        with pytest.raises(RuntimeError):
            await holder["c"].lock("aio-loop-2")
        with pytest.raises(RuntimeError):
            await holder["h"].unlock()

    async def back(c, h):
        await h.unlock()
        await c.close()

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(first())
        asyncio.run(other())
        loop.run_until_complete(back(holder.pop("c"), holder.pop("h")))
    finally:
        loop.close()
