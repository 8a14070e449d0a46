"""The example and the benchmark run against a cluster and say what they did."""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.abspath(os.path.join(HERE, ".."))


def test_worker_pool_does_every_job_once(cluster):
    p = subprocess.run([sys.executable, os.path.join(PKG, "examples", "worker_pool.py"),
                        "--endpoints", cluster.endpoints, "--workers", "3", "--jobs", "9"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[-1] == "done: 9 jobs, 0 lost", p.stdout
    did = [re.fullmatch(r"worker (\d) did job (\d+) under jobs/(\d+) fence (\d+)", l)
           for l in lines[:-1]]
    assert all(did) and len(did) == 9, p.stdout
    assert sorted(int(m.group(2)) for m in did) == list(range(9))
    assert all(m.group(2) == m.group(3) for m in did)
    assert len({m.group(4) for m in did}) == 9  # every grant its own fence


def test_bench_w1_prints_one_json_line(cluster):
    p = subprocess.run([sys.executable, os.path.join(PKG, "bench", "w1.py"),
                        "--endpoints", cluster.endpoints, "--clients", "2", "--seconds", "1"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == 1, p.stdout
    r = json.loads(lines[0])
    assert list(r) == ["system", "workload", "clients", "seconds", "ops", "ops_per_s",
                       "acq_p50_us", "acq_p99_us", "rel_p50_us", "rel_p99_us", "errors"]
    assert (r["system"], r["workload"], r["clients"], r["seconds"], r["errors"]) == \
        ("python-blocking", "W1", 2, 1.0, 0)
    assert r["ops"] > 0 and 0 < r["acq_p50_us"] <= r["acq_p99_us"]
    assert 0 < r["rel_p50_us"] <= r["rel_p99_us"]
