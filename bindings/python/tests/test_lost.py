"""Lost locks (an operator's forced release) and a failover under a holder."""
import time

import pytest

import baton


@pytest.fixture(scope="module")
def client(cluster):
    with baton.Client(cluster.endpoints, client_name="pytest-lost") as c:
        yield c


def test_forced_release_sets_lost_and_the_next_call_raises_elost(cluster, client):
    h = client.lock("doomed")
    assert h.lost_reason is None
    h.check()
    st, out = cluster.ctl("release", "--force", "doomed")
    assert st == 0, out
    assert h.lost.wait(30), "no lost notice"
    assert h.lost_reason is baton.ELOST and not h.held
    with pytest.raises(baton.ELOST):
        h.check()
    with pytest.raises(baton.ELOST):
        h.proclaim("still mine?")
    with pytest.raises(baton.ELOST):
        h.unlock()
    h.unlock()  # the handle is gone: nothing more to say


def test_leaving_the_with_block_of_a_lost_lock_raises_elost(cluster, client):
    with pytest.raises(baton.ELOST):
        with client.lock("doomed2") as h:
            assert cluster.ctl("release", "--force", "doomed2")[0] == 0
            assert h.lost.wait(30)
    # An exception already on its way out wins over the loss.
    with pytest.raises(KeyError):
        with client.lock("doomed3") as h:
            assert cluster.ctl("release", "--force", "doomed3")[0] == 0
            assert h.lost.wait(30)
            raise KeyError("mine")


def test_the_lost_notice_comes_while_other_threads_wait_in_the_library(cluster, client):
    """The lost callback runs on the I/O thread while this thread waits in
    a lock call: neither may block the other."""
    with baton.Client(cluster.endpoints) as other:
        blocker = other.lock("blocked")
        h = client.lock("doomed4")
        import threading
        err = {}

        def wait():
            try:
                client.lock("blocked", timeout=20).unlock()
            except baton.BatonError as e:
                err["e"] = e

        t = threading.Thread(target=wait)
        t.start()
        cluster.wait_lock("blocked", "total_waiters", 1)
        assert cluster.ctl("release", "--force", "doomed4")[0] == 0
        assert h.lost.wait(30)
        blocker.unlock()
        t.join(30)
        assert not t.is_alive() and not err
        with pytest.raises(baton.ELOST):
            h.unlock()


def test_a_hold_survives_the_leaders_death(cluster, client):
    h = client.lock("survivor", value="me")
    old = cluster.leader()
    assert cluster.kill(old, 9) == 128 + 9
    try:
        new = cluster.leader()
        assert new != old
        deadline = time.monotonic() + 30
        while True:  # the client finds the new leader on its own
            try:
                st = client.lock_state("survivor")
                break
            except baton.EUNAVAIL:
                assert time.monotonic() < deadline
        assert st.held and st.holders[0].fence == h.fence
        assert st.holders[0].session == client.session_id
        assert not h.lost.is_set()
        h.unlock()
        assert not client.lock_state("survivor").held
        with client.lock("survivor", timeout=10) as h2:
            assert h2.fence > h.fence
    finally:
        cluster.restart(old)


def test_session_expiry_loses_holds_with_esession_then_a_fresh_session(cluster):
    with baton.Client(cluster.endpoints, client_name="expiring") as c:
        h = c.lock("exp-a", lock_delay=0)
        h2 = c.lock("exp-b", lock_delay=30)
        old = c.session_id
        st, out = cluster.ctl("expire", str(old))
        assert st == 0, out
        assert h.lost.wait(30) and h2.lost.wait(30)
        assert h.lost_reason is baton.ESESSION and h2.lost_reason is baton.ESESSION
        with pytest.raises(baton.ESESSION):
            h.check()
        with pytest.raises(baton.ELOST):
            h.unlock()
        # lock_delay: 0 frees the name at once, 30 s keeps it from everyone.
        assert not c.lock_state("exp-a").delayed
        assert c.lock_state("exp-b").delayed
        with c.lock("exp-a", timeout=10) as h3:  # the next call opens a fresh session
            assert c.session_id != old
            assert c.lock_state("exp-a").holders[0].session == c.session_id
            assert h3.fence > h.fence
        with pytest.raises(baton.ELOST):
            h2.unlock()


def test_threads_keep_going_while_their_locks_are_taken_away(cluster):
    """Lost notices arrive while threads of the same Client wait in, and
    leave, the library: nothing deadlocks and every loss is told."""
    import threading
    stop = threading.Event()  # set once enough locks were taken away
    stats = {"ok": 0, "lost": 0}
    mu = threading.Lock()
    errors = []

    with baton.Client(cluster.endpoints) as c:
        def work(i):
            try:
                while not stop.is_set():
                    h = c.lock("stress-%d" % (i % 2), timeout=30)
                    time.sleep(0.01)
                    try:
                        h.unlock()
                        k = "ok"
                    except baton.ELOST:
                        assert h.lost.wait(10) and h.lost_reason is baton.ELOST
                        k = "lost"
                    with mu:
                        stats[k] += 1
            except BaseException as e:  # noqa: B902 -- reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        while stats["lost"] < 3 and not errors and time.monotonic() < deadline:
            cluster.ctl("release", "--force", "stress-0", "--now")
        stop.set()
        for t in threads:
            t.join(120)
        assert not any(t.is_alive() for t in threads)
        assert not errors, errors
        assert stats["lost"] >= 3 and stats["ok"] > 0, stats
