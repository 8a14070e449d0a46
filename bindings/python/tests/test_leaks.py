"""Closing Clients leaves nothing behind: no thread (Python's or
libbaton's I/O thread), no file descriptor; closing ends waits."""
import gc
import os
import threading
import time

import pytest

import baton


def counts():
    return (threading.active_count(), len(os.listdir("/proc/self/task")),
            len(os.listdir("/proc/self/fd")))


def settle(want, seconds=10):
    deadline = time.monotonic() + seconds
    while counts() != want and time.monotonic() < deadline:
        time.sleep(0.05)
    return counts()


def test_closing_clients_joins_their_threads_and_closes_their_fds(cluster):
    # The first context of a process makes libuv's process-wide signal
    # pipe (two fds kept to the end, by design): the baseline is after it.
    baton.Client(cluster.endpoints).close()
    base = counts()
    clients = [baton.Client(cluster.endpoints) for _ in range(5)]
    assert counts()[1] >= base[1] + 5  # an I/O thread each
    holds = [c.lock("leak-%d" % i) for i, c in enumerate(clients)]
    w = clients[0].watch("leak-0")
    holds[1].unlock()
    for c in clients:
        c.close()
        c.close()  # idempotent
    with pytest.raises(baton.ECLOSED):
        holds[0].unlock()  # the handle is freed by close
    assert w.closed
    assert settle(base) == base


def test_a_dropped_client_is_closed_when_collected(cluster):
    base = counts()
    c = baton.Client(cluster.endpoints)
    c.lock("dropped")
    del c
    gc.collect()
    assert settle(base) == base
    with baton.Client(cluster.endpoints) as other:
        other.lock("dropped", timeout=10).unlock()  # released by the close


def test_close_ends_a_wait_in_another_thread_with_eclosed(cluster):
    base = counts()
    with baton.Client(cluster.endpoints) as holder:
        h = holder.lock("closing")
        c = baton.Client(cluster.endpoints)
        err = {}

        def wait():
            try:
                c.lock("closing")
            except baton.BatonError as e:
                err["e"] = e

        t = threading.Thread(target=wait)
        t.start()
        cluster.wait_lock("closing", "total_waiters", 1)
        c.close()
        t.join(30)
        assert isinstance(err.get("e"), baton.ECLOSED), err
        with pytest.raises(baton.ECLOSED):
            c.lock("closing")
        h.unlock()
    assert settle(base) == base


EXITING = r"""
import sys, threading, baton
c = baton.Client(sys.argv[1])
c.lock("at-exit")
other = baton.Client(sys.argv[1])
def wait():  # a daemon thread still waiting in the library at exit
    try:
        other.lock("at-exit")
    except baton.BatonError as e:
        pass
threading.Thread(target=wait, daemon=True).start()
import time
time.sleep(0.5)
print("exiting")
"""


def test_clients_left_open_are_closed_at_exit(cluster):
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-c", EXITING, cluster.endpoints],
                       capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout) == (0, "exiting\n"), p.stderr
    assert p.stderr == ""
    # The session ended with the process: the lock is free, nobody waits.
    assert cluster.lock_number("at-exit", "total_holders") == 0
    assert cluster.lock_number("at-exit", "total_waiters") == 0
