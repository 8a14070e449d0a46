"""Helpers of the asyncio tests (test_aio_*.py): run a coroutine on a fresh
loop, connect a client to a test cluster."""
import asyncio

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

