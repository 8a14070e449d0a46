"""Locks against a real cluster: fences, try, timeout, threads of one
Client, Cancel, shared, semaphores, multi-locks, reentrancy."""
import threading
import time

import pytest

import baton


@pytest.fixture(scope="module")
def client(cluster):
    with baton.Client(cluster.endpoints, client_name="pytest-locks") as c:
        yield c


def test_lock_unlock_fences_increase(client):
    fences = []
    for _ in range(3):
        with client.lock("fence") as h:
            assert h.name == "fence" and h.held and not h.lost.is_set()
            fences.append(h.fence)
        assert not h.held
        h.unlock()  # idempotent
    assert fences == sorted(fences) and len(set(fences)) == 3 and fences[0] > 0


def test_trylock_of_a_held_lock_raises_ewouldblock(cluster, client):
    with baton.Client(cluster.endpoints) as other:
        with client.lock("busy"):
            with pytest.raises(baton.EWOULDBLOCK):
                other.trylock("busy")
            assert cluster.lock_number("busy", "total_waiters") == 0
        h = other.trylock("busy")
        h.unlock()


def test_timeout_raises_etimedout_and_leaves_nothing_queued(cluster, client):
    with baton.Client(cluster.endpoints) as other:
        with client.lock("slow"):
            t0 = time.monotonic()
            with pytest.raises(baton.ETIMEDOUT) as e:
                other.lock("slow", timeout=0.5)
            assert isinstance(e.value, TimeoutError)
            assert time.monotonic() - t0 >= 0.45
            assert cluster.lock_number("slow", "total_waiters") == 0
            assert cluster.lock_number("slow", "total_holders") == 1


def test_two_threads_of_one_client_are_granted_in_turn(cluster, client):
    first = client.lock("turns")
    order, holds = [], []

    def waiter(tag):
        h = client.lock("turns", timeout=30)
        order.append(tag)
        holds.append(h)
        time.sleep(0.1)
        h.unlock()

    a = threading.Thread(target=waiter, args=("a",))
    a.start()
    cluster.wait_lock("turns", "total_waiters", 1)
    b = threading.Thread(target=waiter, args=("b",))
    b.start()
    cluster.wait_lock("turns", "total_waiters", 2)
    first.unlock()
    a.join(30)
    b.join(30)
    assert order == ["a", "b"]
    assert first.fence < holds[0].fence < holds[1].fence


def test_a_thread_cannot_wait_behind_itself(client):
    with client.lock("self"):
        with pytest.raises(baton.EDEADLK):
            client.lock("self", timeout=1)


def test_cancel_from_another_thread_ends_the_wait(cluster, client):
    with baton.Client(cluster.endpoints) as other:
        with client.lock("cancel-me"):
            cancel = baton.Cancel()
            result = {}

            def wait():
                try:
                    result["hold"] = other.lock("cancel-me", cancel=cancel)
                except baton.BatonError as e:
                    result["err"] = e

            t = threading.Thread(target=wait)
            t.start()
            cluster.wait_lock("cancel-me", "total_waiters", 1)
            cancel.cancel()
            t.join(30)
            assert not t.is_alive()
            assert isinstance(result.get("err"), baton.ECANCELED), result
            cluster.wait_lock("cancel-me", "total_waiters", 0)
            # A fired Cancel ends later calls at once.
            with pytest.raises(baton.ECANCELED):
                other.lock("cancel-me", timeout=5, cancel=cancel)
            assert cancel.cancelled


def test_shared_holders_coexist_and_exclude_an_exclusive_one(cluster, client):
    with baton.Client(cluster.endpoints) as other:
        a = client.lock("rw", shared=True)
        b = other.lock("rw", shared=True, timeout=5)
        assert cluster.lock_number("rw", "total_holders") == 2
        with baton.Client(cluster.endpoints) as third:
            with pytest.raises(baton.EWOULDBLOCK):
                third.trylock("rw")
            third.trylock("rw", shared=True).unlock()
        st = client.lock_state("rw")
        assert st.held and st.mode == "shared" and len(st.holders) == 2
        a.unlock()
        b.unlock()


def test_semaphore_admits_limit_holders(cluster, client):
    with baton.Client(cluster.endpoints) as o1, baton.Client(cluster.endpoints) as o2:
        h1 = client.lock("sem", limit=2)
        h2 = o1.lock("sem", limit=2, timeout=5)
        with pytest.raises(baton.EWOULDBLOCK):
            o2.trylock("sem", limit=2)
        with pytest.raises(baton.EINVAL):
            o2.trylock("sem", limit=3)
        assert client.lock_state("sem").limit == 2
        h1.unlock()
        h3 = o2.lock("sem", limit=2, timeout=5)
        h2.unlock()
        h3.unlock()


def test_multi_lock_takes_all_names_with_one_fence(cluster, client):
    with baton.Client(cluster.endpoints) as other:
        h = client.lock_many(["m1", "m2", "m3"])
        assert h.names == ("m1", "m2", "m3") and h.name == "m1"
        for n in ("m1", "m2", "m3"):
            with pytest.raises(baton.EWOULDBLOCK):
                other.trylock(n)
        with pytest.raises(baton.EWOULDBLOCK):
            other.lock_many(["m3", "x9"], timeout=0)
        h.unlock()
        assert cluster.lock_number("m2", "total_holders") == 0
        with other.lock_many(["m3", "m1"], timeout=5) as h2:
            assert h2.fence > h.fence


def test_reentrant_takes_a_second_handle_with_the_same_fence(cluster, client):
    h1 = client.lock("re")
    h2 = client.lock("re", reentrant=True)
    assert h1.fence == h2.fence
    h1.unlock()
    assert cluster.lock_number("re", "total_holders") == 1
    h2.unlock()
    cluster.wait_lock("re", "total_holders", 0)


def test_cancel_racing_a_grant_gives_a_hold_or_ecanceled_never_both(cluster, client):
    """The grant wins a race with cancel(): each wait ends with a Hold (the
    caller's to unlock) or with ECANCELED, and nothing is left queued."""
    outcomes = set()
    with baton.Client(cluster.endpoints) as other:
        for i in range(12):
            h = client.lock("race")
            cancel = baton.Cancel()
            result = {}

            def wait():
                try:
                    result["hold"] = other.lock("race", timeout=30, cancel=cancel)
                except baton.BatonError as e:
                    result["err"] = e

            t = threading.Thread(target=wait)
            t.start()
            cluster.wait_lock("race", "total_waiters", 1)
            if i % 2:
                h.unlock()
                cancel.cancel()
            else:
                cancel.cancel()
                h.unlock()
            t.join(30)
            assert not t.is_alive() and len(result) == 1, result
            if "hold" in result:
                outcomes.add("hold")
                result["hold"].unlock()
            else:
                assert isinstance(result["err"], baton.ECANCELED), result
                outcomes.add("canceled")
            cluster.wait_lock("race", "total_waiters", 0)
            cluster.wait_lock("race", "total_holders", 0)
    assert "canceled" in outcomes  # cancel before the unlock always cancels
