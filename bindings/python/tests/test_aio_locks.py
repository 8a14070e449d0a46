"""baton.aio against a real cluster: locks, owners per task, timeouts and
cancellation (nothing left held or queued)."""
import asyncio

import pytest

import baton
from aio_util import connect, run


def test_lock_unlock_fences(cluster):
    async def main():
        async with connect(cluster, client_name="aio-fences") as c:
            assert c.session_id > 0
            async with c.lock("aio-f") as h1:
                assert h1.name == "aio-f" and h1.fence > 0 and not h1.lost.is_set()
                st = await c.lock_state("aio-f")
                assert st.held and st.holders[0].fence == h1.fence
                assert st.holders[0].session == c.session_id
                assert st.holders[0].client_name == "aio-fences"
            h2 = await c.lock("aio-f", timeout=5)
            assert h2.fence > h1.fence
            await h2.unlock()
            await h2.unlock()  # idempotent
            assert not (await c.lock_state("aio-f")).held
    run(main())


def test_trylock_wouldblock(cluster):
    async def main():
        async with connect(cluster) as a, connect(cluster) as b:
            h = await a.trylock("aio-try")
            with pytest.raises(baton.EWOULDBLOCK):
                await b.trylock("aio-try")
            with pytest.raises(baton.EWOULDBLOCK):
                await b.lock("aio-try", timeout=0)
            await h.unlock()
            h = await b.trylock("aio-try")
            await h.unlock()
            assert cluster.lock_number("aio-try", "total_waiters") == 0
    run(main())


def test_two_tasks_of_one_client_in_turn(cluster):
    """Two tasks of ONE client wait for one name (a third task holds it):
    each is its own owner, queued in FIFO order, granted in turn with
    growing fences."""
    async def main():
        async with connect(cluster) as c:
            loop = asyncio.get_running_loop()
            order = []
            first = await c.lock("aio-turn")

            async def waiter(tag):
                async with c.lock("aio-turn", timeout=30) as h:
                    order.append((tag, h.fence))
                    st = await c.lock_state("aio-turn")
                    assert st.total_holders == 1 and st.holders[0].fence == h.fence

            t1 = asyncio.ensure_future(waiter("t1"))
            await loop.run_in_executor(None, cluster.wait_lock, "aio-turn", "total_waiters", 1)
            t2 = asyncio.ensure_future(waiter("t2"))
            await loop.run_in_executor(None, cluster.wait_lock, "aio-turn", "total_waiters", 2)
            st = await c.lock_state("aio-turn")
            assert [w.session for w in st.waiters] == [c.session_id] * 2
            assert not order
            await first.unlock()
            await asyncio.wait_for(asyncio.gather(t1, t2), 30)
            assert [o[0] for o in order] == ["t1", "t2"]
            assert first.fence < order[0][1] < order[1][1]
    run(main())


def test_reentrant_and_deadlock_within_a_task(cluster):
    async def main():
        async with connect(cluster) as c:
            h = await c.lock("aio-re")
            with pytest.raises(baton.EDEADLK):
                await c.lock("aio-re", timeout=1)
            h2 = await c.lock("aio-re", reentrant=True)
            assert h2.fence == h.fence
            assert (await c.lock_state("aio-re")).holders[0].count == 2
            await h2.unlock()
            assert (await c.lock_state("aio-re")).held
            await h.unlock()
            assert not (await c.lock_state("aio-re")).held
    run(main())


def test_lock_many_and_shared(cluster):
    async def main():
        async with connect(cluster) as a, connect(cluster) as b, connect(cluster) as c:
            async with a.lock_many(["aio-m1", "aio-m2"], timeout=5) as h:
                assert h.names == ("aio-m1", "aio-m2")
                with pytest.raises(baton.EWOULDBLOCK):
                    await b.trylock("aio-m2")
            assert not (await a.lock_state("aio-m2")).held
            s1 = await a.lock("aio-sh", shared=True)
            s2 = await b.lock("aio-sh", shared=True, timeout=5)
            assert (await a.lock_state("aio-sh")).total_holders == 2
            with pytest.raises(baton.EWOULDBLOCK):
                await c.trylock("aio-sh")  # exclusive
            await s1.unlock()
            await s2.unlock()
    run(main())


def test_timeout_withdraws_the_wait(cluster):
    async def main():
        async with connect(cluster) as a, connect(cluster) as b:
            h = await a.lock("aio-to")
            with pytest.raises(baton.ETIMEDOUT):
                await b.lock("aio-to", timeout=0.3)
            assert cluster.lock_number("aio-to", "total_waiters") == 0
            await h.unlock()
            h = await b.trylock("aio-to")  # b holds nothing stale in the way
            await h.unlock()
    run(main())


def test_task_cancellation_leaves_nothing(cluster):
    """A waiting acquire cancelled (Task.cancel, asyncio.wait_for) is
    withdrawn from the queue and holds nothing."""
    async def main():
        async with connect(cluster) as a, connect(cluster) as b:
            h = await a.lock("aio-cx")
            t = asyncio.ensure_future(b.lock("aio-cx"))
            await asyncio.get_running_loop().run_in_executor(
                None, cluster.wait_lock, "aio-cx", "total_waiters", 1)
            t.cancel()
            with pytest.raises(asyncio.CancelledError):
                await t
            await asyncio.get_running_loop().run_in_executor(
                None, cluster.wait_lock, "aio-cx", "total_waiters", 0)
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(b.lock("aio-cx"), 0.5)
            await asyncio.get_running_loop().run_in_executor(
                None, cluster.wait_lock, "aio-cx", "total_waiters", 0)
            await h.unlock()
            assert b.pending() == 0
            assert not b._holds
            st = await a.lock_state("aio-cx")
            assert not st.held and st.total_waiters == 0
            h = await a.trylock("aio-cx")
            await h.unlock()
    run(main())


def test_cancel_racing_the_grant_holds_nothing(cluster):
    """The waiter is cancelled while its grant may be on its way: whichever
    wins (the cancel, the grant in the core, the grant already given to the
    task), the task sees CancelledError or the hold, and the lock ends up
    free with nobody queued."""
    async def main():
        async with connect(cluster) as a, connect(cluster) as b:
            outcomes = {"cancelled": 0, "granted": 0}
            loop = asyncio.get_running_loop()
            for i in range(24):
                name = "aio-race-%d" % i
                h = await a.lock(name)
                t = asyncio.ensure_future(b.lock(name))
                await loop.run_in_executor(None, cluster.wait_lock, name, "total_waiters", 1)
                u = asyncio.ensure_future(h.unlock())
                await asyncio.sleep(0.0004 * (i % 8))
                t.cancel()
                try:
                    got = await t
                except asyncio.CancelledError:
                    outcomes["cancelled"] += 1
                else:
                    outcomes["granted"] += 1
                    await got.unlock()
                await u
                await loop.run_in_executor(None, cluster.wait_lock, name, "total_holders", 0)
                assert cluster.lock_number(name, "total_waiters") == 0
            assert not b._holds and b.pending() == 0
            print("# race outcomes: %s, grants released after the cancel: %d"
                  % (outcomes, b._raced))
    run(main())


def test_proclaim_and_value(cluster):
    async def main():
        async with connect(cluster) as c:
            async with c.lock("aio-val", value="first") as h:
                assert (await c.lock_state("aio-val")).holders[0].value == b"first"
                await h.proclaim(b"second")
                assert (await c.lock_state("aio-val")).holders[0].value == b"second"
            with pytest.raises(baton.ENOTHELD):
                await h.proclaim(b"late")
    run(main())
