"""baton.aio: a forced release is noticed (hold.lost, ELOST), and a hold
survives a failover of the cluster's leader."""
import asyncio

import pytest

import baton
from aio_util import connect, run


def _ctl(cluster, *args):
    return asyncio.get_running_loop().run_in_executor(None, lambda: cluster.ctl(*args))


def test_forced_release_sets_lost(cluster):
    async def main():
        async with connect(cluster) as c:
            h = await c.lock("aio-lost")
            other = await c.lock("aio-kept")
            h.check()
            st, out = await _ctl(cluster, "release", "--force", "aio-lost", "--fence",
                                 str(h.fence), "--now", "-o", "json")
            assert st == 0, out
            why = await asyncio.wait_for(h.wait_lost(), 15)
            assert why == baton.ELOST.code and h.lost.is_set()
            with pytest.raises(baton.ELOST):
                h.check()
            with pytest.raises(baton.ELOST):
                await h.proclaim(b"x")
            with pytest.raises(baton.ELOST):
                await h.unlock()
            with pytest.raises(baton.ELOST):
                await h.unlock()   # stays lost
            # the other hold is untouched; the name can be had again
            assert not other.lost.is_set()
            other.check()
            h2 = await c.lock("aio-lost", timeout=10)
            assert h2.fence > h.fence
            await h2.unlock()
            await other.unlock()
    run(main())


def test_lost_inside_async_with(cluster):
    """Leaving `async with` after the lock was lost raises ELOST (when the
    body raised nothing itself)."""
    async def main():
        async with connect(cluster) as c:
            with pytest.raises(baton.ELOST):
                async with c.lock("aio-lost2") as h:
                    await _ctl(cluster, "release", "--force", "aio-lost2", "--now", "-o", "json")
                    await asyncio.wait_for(h.lost.wait(), 15)
    run(main())


def test_failover_under_a_holder(cluster):
    async def main():
        async with connect(cluster, session_ttl=10, op_timeout=20) as c:
            h = await c.lock("aio-fo")
            loop = asyncio.get_running_loop()
            old = await loop.run_in_executor(None, cluster.leader)
            assert await loop.run_in_executor(None, cluster.kill, old, 9) == 128 + 9
            try:
                new = await loop.run_in_executor(None, cluster.leader)
                assert new != old
                st = await c.lock_state("aio-fo")  # through the new leader
                assert st.held and st.holders[0].fence == h.fence
                assert st.holders[0].session == c.session_id
                assert not h.lost.is_set()
                await h.proclaim(b"after failover")
                await h.unlock()
                assert not h.lost.is_set()
                assert not (await c.lock_state("aio-fo")).held
                h2 = await c.trylock("aio-fo")
                assert h2.fence > h.fence
                await h2.unlock()
            finally:
                await loop.run_in_executor(None, cluster.restart, old)
    run(main())


def test_session_expiry_loses_holds_and_a_fresh_session_follows(cluster):
    async def main():
        async with connect(cluster) as c:
            h = await c.lock("aio-exp")
            old = c.session_id
            st, out = await _ctl(cluster, "expire", str(old), "-o", "json")
            assert st == 0, out
            why = await asyncio.wait_for(h.wait_lost(), 15)
            assert why == baton.ESESSION.code
            with pytest.raises(baton.ELOST):
                await h.unlock()
            # the next call opens a fresh session
            h2 = await c.lock("aio-exp", timeout=10)
            assert c.session_id not in (0, old) and c.session_changes == 1
            await h2.unlock()
    run(main())


def test_reentrant_handles_all_lost(cluster):
    async def main():
        async with connect(cluster) as c:
            h1 = await c.lock("aio-lost-re")
            h2 = await c.lock("aio-lost-re", reentrant=True)
            st, out = await _ctl(cluster, "release", "--force", "aio-lost-re", "--now",
                                 "-o", "json")
            assert st == 0, out
            await asyncio.wait_for(h1.lost.wait(), 15)
            assert h2.lost.is_set() and h2.lost_why == baton.ELOST.code
            for h in (h2, h1):
                with pytest.raises(baton.ELOST):
                    await h.unlock()
            assert c.pending() == 0 and not c._holds
            h3 = await c.trylock("aio-lost-re")
            await h3.unlock()
    run(main())
