"""Values, lock_state, watches and elections."""
import threading

import pytest

import baton


@pytest.fixture(scope="module")
def client(cluster):
    with baton.Client(cluster.endpoints, client_name="pytest-values") as c:
        yield c


def test_values_show_in_lock_state_and_proclaim_replaces_them(client):
    free = client.lock_state("val")
    assert free == baton.LockState(name="val", revision=free.revision, held=False,
                                   mode="exclusive", limit=0, delayed=False)
    with client.lock("val", value="addr=10.0.0.1") as h:
        st = client.lock_state("val")
        assert st.held and st.total_holders == 1 and st.revision > 0
        holder = st.holders[0]
        assert holder == baton.Holder(session=client.session_id, client_name="pytest-values",
                                      fence=h.fence, granted_revision=holder.granted_revision,
                                      mode="exclusive", count=1, value=b"addr=10.0.0.1")
        h.proclaim(b"\x00bin")
        assert client.lock_state("val").holders[0].value == b"\x00bin"
        h.proclaim(None)
        assert client.lock_state("val").holders[0].value == b""
    with pytest.raises(TypeError):
        client.lock("val", value=42)


def test_waiters_show_in_queue_order(cluster, client):
    with baton.Client(cluster.endpoints, client_name="w1") as a, \
            baton.Client(cluster.endpoints, client_name="w2") as b:
        h = client.lock("queue")
        ts = []
        for c, n in ((a, 1), (b, 2)):
            t = threading.Thread(target=lambda c=c: c.lock("queue", timeout=30, value=c.client_name).unlock())
            t.start()
            ts.append(t)
            cluster.wait_lock("queue", "total_waiters", n)
        st = client.lock_state("queue")
        assert [w.client_name for w in st.waiters] == ["w1", "w2"]
        assert [w.value for w in st.waiters] == [b"w1", b"w2"]
        assert st.total_waiters == 2 and st.waiters[0].wait_ms == 30000
        h.unlock()
        for t in ts:
            t.join(30)


def test_watch_starts_with_the_state_then_sees_every_change(cluster, client):
    with client.watch("watched") as w:
        ev = w.next(timeout=10)
        assert ev.kind == "state" and not ev.state.held
        ev = w.next(timeout=10)
        assert ev.kind == "synced" and ev.state is None and not ev.restarted
        last = ev.revision
        with pytest.raises(baton.ETIMEDOUT):
            w.next(timeout=0.2)
        with baton.Client(cluster.endpoints) as other:
            h = other.lock("watched", value="v")
            ev = w.next(timeout=10)
            assert ev.kind == "change" and ev.state.held and ev.state.holders[0].value == b"v"
            assert ev.revision > last
            h.unlock()
            ev2 = w.next(timeout=10)
            assert ev2.kind == "change" and not ev2.state.held and ev2.revision > ev.revision


def test_prefix_watch_and_iteration_end_on_close(cluster, client):
    w = client.watch("pfx/", prefix=True)
    assert w.next(timeout=10).kind == "synced"  # nothing held under pfx/
    client.lock("pfx/a").unlock()
    seen = []

    def consume():
        for ev in w:  # ends when the watch is closed
            seen.append((ev.kind, ev.state.name if ev.state else None))

    t = threading.Thread(target=consume)
    t.start()
    client.lock("pfx/b").unlock()
    client.lock("other").unlock()
    import time
    deadline = time.monotonic() + 10
    while len(seen) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    w.close()
    t.join(10)
    assert not t.is_alive()
    assert seen == [("change", "pfx/a")] * 2 + [("change", "pfx/b")] * 2
    with pytest.raises(baton.ECLOSED):
        w.next(timeout=0)


def test_campaign_is_fifo_and_resign_hands_over(cluster, client):
    with baton.Client(cluster.endpoints, client_name="c2") as c2, \
            baton.Client(cluster.endpoints, client_name="c3") as c3, \
            client.observe("el") as obs:
        assert client.leader("el") is None
        assert obs.next(timeout=10).kind == "state"
        assert obs.next(timeout=10).kind == "synced"
        l1 = client.campaign("el", "one")
        assert isinstance(l1, baton.Leadership) and l1.term == l1.fence
        got = {}

        def run(c, v):
            got[v] = c.campaign("el", v, timeout=30)

        t2 = threading.Thread(target=run, args=(c2, "two"))
        t2.start()
        cluster.wait_lock("el", "total_waiters", 1)
        t3 = threading.Thread(target=run, args=(c3, "three"))
        t3.start()
        cluster.wait_lock("el", "total_waiters", 2)
        with baton.Client(cluster.endpoints) as c4, pytest.raises(baton.EWOULDBLOCK):
            c4.campaign("el", "four", timeout=0)
        lead = client.leader("el")
        assert (lead.session, lead.value, lead.fence) == (client.session_id, b"one", l1.fence)
        l1.proclaim("one'")
        l1.resign()
        t2.join(30)
        assert c2.leader("el").value == b"two" and got["two"].term > l1.term
        got["two"].resign()
        t3.join(30)
        assert c3.leader("el").value == b"three"
        got["three"].resign()
        values = []
        while True:
            ev = obs.next(timeout=10)
            values.append(ev.state.holders[0].value if ev.state.holders else None)
            if values[-1] is None:
                break
        assert values == [b"one", b"one'", b"two", b"three", None]
