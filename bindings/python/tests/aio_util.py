"""Helpers of the asyncio tests (test_aio_*.py): run a coroutine on a fresh
loop, connect a client to a test cluster, wait for a condition."""
import asyncio
import time

import baton.aio


def run(coro, timeout=120):
    """Run coro on a fresh event loop (pytest-asyncio is not used), failing
    the test if it takes longer than timeout seconds."""
    return asyncio.run(asyncio.wait_for(coro, timeout))


def connect(cluster, **kw):
    kw.setdefault("op_timeout", 10)
    kw.setdefault("connect_timeout", 15)
    if cluster.ca:
        kw.setdefault("tls_ca", cluster.ca)
        kw.setdefault("token", cluster.token)
    return baton.aio.connect(cluster.endpoints, **kw)


async def eventually(pred, timeout=20, what="condition"):
    """Await until pred() (a plain function) is true."""
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise AssertionError("timed out waiting for " + what)
        await asyncio.sleep(0.02)
