"""Processes, each with its own Client, take turns under one lock."""
import os
import subprocess
import sys

CHILD = r"""
import os, sys, time, baton
endpoints, path, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
overlaps = 0
with baton.Client(endpoints, client_name="child-%d" % os.getpid()) as c:
    for _ in range(rounds):
        with c.lock("counter", timeout=60) as h:
            try:  # nobody else may be inside: the marker must not exist
                fd = os.open(path + ".inside", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                os.close(fd)
            except FileExistsError:
                overlaps += 1
            time.sleep(0.002)  # stay inside a while: an overlap would be seen
            with open(path) as f:
                n = int(f.read())
            with open(path, "w") as f:
                f.write(str(n + 1))
            os.unlink(path + ".inside")
            h.check()
print("overlaps", overlaps)
"""


def test_processes_count_under_the_lock_without_overlap(cluster, tmp_path):
    path = str(tmp_path / "count")
    with open(path, "w") as f:
        f.write("0")
    n, rounds = 4, 25
    kids = [subprocess.Popen([sys.executable, "-c", CHILD, cluster.endpoints, path, str(rounds)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(n)]
    outs = [k.communicate(timeout=300) for k in kids]
    for k, (out, err) in zip(kids, outs):
        assert k.returncode == 0, err
        assert out.split() == ["overlaps", "0"], (out, err)
    with open(path) as f:
        assert int(f.read()) == n * rounds
    assert not os.path.exists(path + ".inside")
