#!/usr/bin/env python3
"""W1 of lockbench for the Python binding's blocking API: N threads, each
with its own Client, each locking and unlocking its own name in a loop
(no contention: the cost of one uncontended acquire and release).

    python3 w1.py --endpoints E [--clients N] [--seconds S]

Prints ONE line of JSON with lockbench's keys:
{"system":"python-blocking","workload":"W1","clients":N,"seconds":S,
 "ops":..,"ops_per_s":..,"acq_p50_us":..,"acq_p99_us":..,
 "rel_p50_us":..,"rel_p99_us":..,"errors":0}
An op is one lock + unlock; latencies are each call's, in microseconds.
"""
import argparse
import json
import os
import sys
import threading
import time

import baton


def percentile(sorted_us, p):
    if not sorted_us:
        return 0.0
    i = min(len(sorted_us) - 1, max(0, int(round(p / 100.0 * len(sorted_us) + 0.5)) - 1))
    return round(sorted_us[i], 1)


def run(endpoints, i, stop, ready, result):
    acq, rel, errors = [], [], 0
    name = "w1-py-%d-%d" % (os.getpid(), i)
    clock = time.perf_counter_ns
    try:
        c = baton.Client(endpoints, client_name="w1-py-%d" % i)
    except baton.BatonError:
        result.append(([], [], 1))
        ready.wait()
        return
    with c:
        ready.wait()
        while not stop.is_set():
            try:
                t0 = clock()
                h = c.lock(name)
                t1 = clock()
                h.unlock()
                t2 = clock()
            except baton.BatonError:
                errors += 1
                continue
            acq.append((t1 - t0) / 1000.0)
            rel.append((t2 - t1) / 1000.0)
    result.append((acq, rel, errors))


def main(argv=None):
    ap = argparse.ArgumentParser(description="lockbench W1 for the Python binding (blocking)")
    ap.add_argument("--endpoints", required=True)
    ap.add_argument("--clients", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=10)
    args = ap.parse_args(argv)

    stop, ready = threading.Event(), threading.Barrier(args.clients + 1)
    result = []
    threads = [threading.Thread(target=run, args=(args.endpoints, i, stop, ready, result))
               for i in range(args.clients)]
    for t in threads:
        t.start()
    ready.wait()  # every client connected
    t0 = time.monotonic()
    time.sleep(args.seconds)
    stop.set()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0
    acq = sorted(x for r in result for x in r[0])
    rel = sorted(x for r in result for x in r[1])
    errors = sum(r[2] for r in result)
    print(json.dumps({
        "system": "python-blocking", "workload": "W1", "clients": args.clients,
        "seconds": args.seconds, "ops": len(acq),
        "ops_per_s": round(len(acq) / elapsed, 1),
        "acq_p50_us": percentile(acq, 50), "acq_p99_us": percentile(acq, 99),
        "rel_p50_us": percentile(rel, 50), "rel_p99_us": percentile(rel, 99),
        "errors": errors}, separators=(",", ":")))
    return 0 if errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
