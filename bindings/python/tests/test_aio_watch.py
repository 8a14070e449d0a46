"""baton.aio: watches and elections as async iterators."""
import asyncio

import pytest

import baton
from baton.state import EventKind
from aio_util import connect, run


async def _next(it, timeout=15):
    return await asyncio.wait_for(it.__anext__(), timeout)


def test_watch_one_name(cluster):
    async def main():
        async with connect(cluster) as c:
            async with c.watch("aio-w") as w:
                ev = await _next(w)
                assert ev.kind == EventKind.STATE and not ev.state.held
                ev = await _next(w)
                assert ev.kind == EventKind.SYNCED and ev.state is None
                h = await c.lock("aio-w", value=b"me")
                ev = await _next(w)
                assert ev.kind == EventKind.CHANGE and ev.state.held
                assert ev.state.holders[0].fence == h.fence
                assert ev.state.holders[0].value == b"me"
                rev = ev.revision
                await h.unlock()
                ev = await _next(w)
                assert ev.kind == EventKind.CHANGE and not ev.state.held
                assert ev.revision > rev
            # closed: the iterator ends
            with pytest.raises(StopAsyncIteration):
                await _next(w)
            assert c.pending() == 0 and not c._calls
    run(main())


def test_watch_prefix_in_async_for(cluster):
    async def main():
        async with connect(cluster) as c:
            seen = []
            h1 = await c.lock("aio-p/a")

            async def reader(w):
                async for ev in w:
                    if ev.kind == EventKind.SYNCED:
                        seen.append("synced")
                        asyncio.ensure_future(lock_b())
                        continue
                    seen.append((ev.kind, ev.state.name, ev.state.held))
                    if ev.state.name == "aio-p/b" and ev.state.held:
                        return

            holds = []

            async def lock_b():
                holds.append(await c.lock("aio-p/b"))

            w = c.watch("aio-p/", prefix=True)
            await asyncio.wait_for(reader(w), 20)
            await w.close()
            await w.close()  # idempotent
            assert seen[0] == (EventKind.STATE, "aio-p/a", True)
            assert seen[1] == "synced"
            assert seen[-1] == (EventKind.CHANGE, "aio-p/b", True)
            await h1.unlock()
            await holds[0].unlock()
    run(main())


def test_watch_bad_key(cluster):
    async def main():
        async with connect(cluster) as c:
            with pytest.raises(baton.EINVAL):
                c.watch("x" * 300)
    run(main())


def test_elections(cluster):
    async def main():
        async with connect(cluster) as c, connect(cluster) as d:
            assert await c.leader("aio-elect") is None
            obs = d.observe("aio-elect")
            ev = await _next(obs)
            assert ev.kind == EventKind.STATE and not ev.state.held
            assert (await _next(obs)).kind == EventKind.SYNCED
            async with await c.campaign("aio-elect", b"node-a") as lead:
                ev = await _next(obs)
                assert ev.kind == EventKind.CHANGE
                assert ev.state.holders[0].value == b"node-a"
                who = await d.leader("aio-elect")
                assert who.fence == lead.fence and who.value == b"node-a"
                assert who.session == c.session_id
                # a second candidate (another task of d) waits its turn
                second = asyncio.ensure_future(d.campaign("aio-elect", "node-b", timeout=30))
                await asyncio.sleep(0.2)
                assert not second.done()
                await lead.proclaim(b"node-a2")
                ev = await _next(obs)
                assert ev.state.holders[0].value == b"node-a2"
            lead2 = await asyncio.wait_for(second, 20)
            assert lead2.fence > lead.fence
            ev = await _next(obs)
            while not ev.state.held:   # "nobody leads" may come between
                ev = await _next(obs)
            assert ev.state.holders[0].value == b"node-b"
            with pytest.raises(baton.EWOULDBLOCK):
                await c.campaign("aio-elect", b"node-c", timeout=0)
            await lead2.unlock()
            await obs.close()
            assert await d.leader("aio-elect") is None
    run(main())
