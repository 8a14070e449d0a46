#!/usr/bin/env python3
"""W1 on baton.aio: --clients tasks on ONE asyncio loop, each its own
AsyncClient (its own session and connection, as lockbench's async driver
does), each looping { lock "w1-<client>"; unlock } on its own name for
--seconds. Prints ONE JSON line, as lockbench does:

  {"system":"python-asyncio","workload":"W1","clients":64,"seconds":S,
   "ops":N,"ops_per_s":X,"acq_p50_us":..,"acq_p99_us":..,"rel_p50_us":..,
   "rel_p99_us":..,"errors":0}

ops counts the completed lock+unlock cycles; latencies are measured on the
loop (time.perf_counter) around each await, so they include the loop's
scheduling of the 64 tasks. errors counts calls that raised.

    python3 w1_asyncio.py --endpoints 127.0.0.1:7001,... --clients 64 --seconds 10

--profile FILE runs it under cProfile and writes the stats there.
"""
import argparse
import asyncio
import json
import os
import sys
import time

try:
    import baton
except ImportError:  # not installed: the source tree's package
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import baton
import baton.aio  # noqa: E402


def percentile(sorted_us, p):
    if not sorted_us:
        return 0.0
    i = min(len(sorted_us) - 1, max(0, int(round(p / 100.0 * len(sorted_us) + 0.5)) - 1))
    return round(sorted_us[i], 1)


async def client_loop(client, i, stop, acq, rel, counts):
    name = "w1-%d" % i
    clock = time.perf_counter
    loop = asyncio.get_running_loop()
    while loop.time() < stop:
        t0 = clock()
        try:
            hold = await client.lock(name)
        except baton.BatonError:
            counts["errors"] += 1
            continue
        t1 = clock()
        try:
            await hold.unlock()
        except baton.BatonError:
            counts["errors"] += 1
            continue
        t2 = clock()
        acq.append((t1 - t0) * 1e6)
        rel.append((t2 - t1) * 1e6)
        counts["ops"] += 1


async def main(args):
    clients = await asyncio.gather(*[
        baton.aio.connect(args.endpoints, client_name="w1-py-%d" % i, connect_timeout=30,
                          op_timeout=10) for i in range(args.clients)])
    acq, rel = [], []
    counts = {"ops": 0, "errors": 0}
    loop = asyncio.get_running_loop()
    start = loop.time()
    stop = start + args.seconds
    try:
        await asyncio.gather(*[client_loop(c, i, stop, acq, rel, counts)
                               for i, c in enumerate(clients)])
        elapsed = loop.time() - start
    finally:
        await asyncio.gather(*[c.close() for c in clients])
    acq.sort()
    rel.sort()
    return {"system": "python-asyncio", "workload": "W1", "clients": args.clients,
            "seconds": args.seconds, "ops": counts["ops"],
            "ops_per_s": round(counts["ops"] / elapsed, 1),
            "acq_p50_us": percentile(acq, 50), "acq_p99_us": percentile(acq, 99),
            "rel_p50_us": percentile(rel, 50), "rel_p99_us": percentile(rel, 99),
            "errors": counts["errors"]}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--endpoints", required=True)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--profile", metavar="FILE")
    a = ap.parse_args()
    if a.profile:
        import cProfile
        prof = cProfile.Profile()
        result = prof.runcall(asyncio.run, main(a))
        prof.dump_stats(a.profile)
    else:
        result = asyncio.run(main(a))
    print(json.dumps(result, separators=(",", ":")))
    sys.exit(1 if result["errors"] else 0)
