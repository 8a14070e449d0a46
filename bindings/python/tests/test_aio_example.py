"""examples/asyncio_leader.py: two copies as processes; the leader is
killed and the other takes over; a forced release makes the leader stop its
work and campaign again."""
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "examples", "asyncio_leader.py")


class Copy:
    def __init__(self, cluster, ident, tmp):
        self.id = ident
        self.path = os.path.join(tmp, ident + ".out")
        self.out = open(self.path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, EXAMPLE, "--endpoints", cluster.endpoints, "--name", "svc",
             "--id", ident, "--ttl", "3", "--tick", "0.1"],
            stdout=self.out, stderr=subprocess.STDOUT)

    def lines(self):
        with open(self.path) as f:
            return f.read().splitlines()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.out.close()


def wait_for(pred, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = pred()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def leading(copy):
    return [l for l in copy.lines() if l.startswith("leading ")]


def test_takeover(cluster, tmp_path):
    a = Copy(cluster, "A", str(tmp_path))
    b = Copy(cluster, "B", str(tmp_path))
    try:
        first = wait_for(lambda: [c for c in (a, b) if leading(c)], 30, "a leader")
        assert len(first) == 1, "both lead: %s / %s" % (a.lines(), b.lines())
        leader = first[0]
        other = b if leader is a else a
        wait_for(lambda: [l for l in leader.lines() if l.startswith("work ")], 10, "work")
        time.sleep(0.5)
        assert not leading(other), other.lines()
        assert not [l for l in other.lines() if l.startswith("work ")]
        term = int(leading(leader)[0].split()[3])
        # a forced release: the leader stops its work, campaigns again (queued
        # behind the other, which leads now)
        st, out = cluster.ctl("release", "--force", "svc", "--now", "-o", "json")
        assert st == 0, out
        wait_for(lambda: [l for l in leader.lines() if l.startswith("lost ")], 20, "lost")
        got = wait_for(lambda: leading(other), 20, "the other to lead")
        term2 = int(got[0].split()[3])
        assert term2 > term
        n = len(leader.lines())
        time.sleep(0.5)
        assert not [l for l in leader.lines()[n:] if l.startswith("work ")]
        # kill the leader now: the first one takes over after the lease
        other.proc.send_signal(signal.SIGKILL)
        other.proc.wait()
        got = wait_for(lambda: leading(leader)[1:], 30, "the first to lead again")
        assert int(got[0].split()[3]) > term2
        wait_for(lambda: leader.lines()[-1].startswith("work "), 10, "work again")
        # SIGTERM: it resigns and exits 0
        leader.proc.send_signal(signal.SIGTERM)
        assert leader.proc.wait(timeout=20) == 0
        assert "resigned " + leader.id in leader.lines()
    finally:
        a.stop()
        b.stop()
