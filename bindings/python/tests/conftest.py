"""Fixtures and the report format of the binding's tests.

The tests run against real three-node clusters started by the project's C
harness through tests/bindings/cluster_fixture (built by `make
build-tests`; $BATON_BUILD names the build directory), which picks free
127.0.0.1 ports, uses a fresh temp dir, and stops every node by pid --
also when this process dies, since the fixture stops the cluster when its
stdin closes.

Reporting: one line per test, "ok N - name (MS ms)" or "not ok N - name",
and "N passed, N failed" at the end, as every test of the project prints
(tests/run-tests.sh adds them up). Run with `-p no:terminal`.
"""
import json
import os
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))


def build_dir():
    return os.environ.get("BATON_BUILD") or os.path.join(REPO, "build", "default")


class Cluster:
    """A running cluster: endpoints, and (when secure) ca, cert, key, token
    (role client) and read_token (role read). Commands go to the fixture
    program (tests/bindings/cluster_fixture.c says what each does)."""

    def __init__(self, secure=False):
        args = [os.path.join(build_dir(), "tests", "bindings", "cluster_fixture")]
        if secure:
            args.append("--secure")
        self.proc = subprocess.Popen(args, cwd=REPO, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True,
                                     env=dict(os.environ, BATON_BUILD=build_dir()))
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            raise RuntimeError("cluster_fixture did not start a cluster")
        info = json.loads(line)
        self.endpoints = info["endpoints"]
        self.dir = info["dir"]
        self.ca = info["ca"] or None
        self.cert = info["cert"] or None
        self.key = info["key"] or None
        self.token = info["token"] or None
        self.read_token = info["read_token"] or None

    def cmd(self, line):
        """Send one command; its answer's RESULT (raises on "err")."""
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().rstrip("\n")
        if not answer.startswith("ok"):
            raise RuntimeError("cluster_fixture %r: %s" % (line, answer or "no answer"))
        return answer[3:]

    def leader(self):
        return int(self.cmd("leader"))

    def kill(self, i, sig=9):
        return int(self.cmd("kill %d %d" % (i, sig)))

    def restart(self, i):
        self.cmd("restart %d" % i)

    def ctl(self, *args):
        """batonctl ARGS (no spaces inside one): (exit status, stdout)."""
        st, _, out = self.cmd("ctl " + " ".join(args)).partition(" ")
        return int(st), json.loads(out)

    def lock_number(self, name, key):
        return int(self.cmd("lock %s %s" % (name, key)))

    def wait_lock(self, name, key, want):
        self.cmd("wait %s %s %d" % (name, key, want))

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.cmd("stop")
            except (RuntimeError, BrokenPipeError):
                pass
            self.proc.stdin.close()
            self.proc.wait(timeout=60)


@pytest.fixture(scope="session")
def cluster():
    c = Cluster()
    yield c
    c.stop()


@pytest.fixture(scope="session")
def secure_cluster():
    c = Cluster(secure=True)
    yield c
    c.stop()


# ---- the report --------------------------------------------------------------------

class _Report:
    def __init__(self):
        self.n = 0
        self.passed = 0
        self.failed = 0
        self.start = {}


_report = _Report()


def _out(line):
    sys.__stdout__.write(line + "\n")
    sys.__stdout__.flush()


def pytest_configure(config):
    # -p no:terminal drops the "verbose" option, which pytest's assertion
    # messages read: without it a failed `assert a == b` reports a
    # ValueError instead of the comparison.
    if not hasattr(config.option, "verbose"):
        config.option.verbose = 0


def pytest_runtest_logstart(nodeid, location):
    _report.start[nodeid] = time.monotonic()


def pytest_runtest_logreport(report):
    failed = report.failed
    if report.when == "call" or (report.when != "call" and failed):
        _report.n += 1
        name = report.nodeid.split("::", 1)[-1]
        ms = int((time.monotonic() - _report.start.get(report.nodeid, time.monotonic())) * 1000)
        if failed:
            _report.failed += 1
            for line in str(report.longrepr).splitlines()[-40:]:
                _out("# " + line)
            _out("not ok %d - %s%s" % (_report.n, name,
                                       "" if report.when == "call" else " (%s)" % report.when))
        elif report.skipped:
            _out("ok %d - %s # skipped" % (_report.n, name))
            _report.passed += 1
        else:
            _report.passed += 1
            _out("ok %d - %s (%d ms)" % (_report.n, name, ms))


def pytest_collectreport(report):
    if report.failed:
        _report.n += 1
        _report.failed += 1
        for line in str(report.longrepr).splitlines()[-40:]:
            _out("# " + line)
        _out("not ok %d - collecting %s" % (_report.n, report.nodeid))


def pytest_sessionfinish(session, exitstatus):
    if _report.n == 0:
        _report.failed += 1
        _out("not ok 1 - no test ran")
    _out("%d passed, %d failed" % (_report.passed, _report.failed))
