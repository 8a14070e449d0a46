#!/usr/bin/env python3
"""A worker pool: threads sharing one baton Client, each job done under a
lock of its own name, so that two workers -- of this pool or of any other
process running this program -- never do the same job at once.

    python3 worker_pool.py --endpoints 127.0.0.1:7001,127.0.0.1:7002 \
        [--workers 4] [--jobs 12] [--prefix jobs/]

Each worker takes jobs from a shared queue, locks PREFIX + job (waiting at
most 30 s), does the work (here: sleeps a moment, and checks the lock is
still held before it "commits", passing the fence along as a real job
would to the resource it writes), and prints one line per job:

    worker 2 did job 7 under jobs/7 fence 1043

A lost lock (the session expired, an operator forced a release) stops the
job: "worker N lost job J (ELOST)". It ends with "done: N jobs, M lost".
"""
import argparse
import queue
import sys
import threading
import time

import baton


def worker(client, n, jobs, prefix, out):
    while True:
        try:
            job = jobs.get_nowait()
        except queue.Empty:
            return
        name = "%s%d" % (prefix, job)
        try:
            with client.lock(name, timeout=30, value="worker %d" % n) as hold:
                time.sleep(0.02)          # the work
                hold.check()             # still ours? (raises baton.ELOST if not)
                out("worker %d did job %d under %s fence %d" % (n, job, name, hold.fence), "done")
        except (baton.ELOST, baton.ESESSION) as e:
            out("worker %d lost job %d (%s)" % (n, job, type(e).__name__), "lost")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--endpoints", required=True)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=12)
    ap.add_argument("--prefix", default="jobs/")
    args = ap.parse_args(argv)

    jobs = queue.Queue()
    for j in range(args.jobs):
        jobs.put(j)
    mu = threading.Lock()
    counts = {"done": 0, "lost": 0}

    def out(line, count):
        with mu:
            counts[count] += 1
            print(line, flush=True)

    try:
        with baton.Client(args.endpoints, client_name="worker_pool") as client:
            threads = [threading.Thread(target=worker,
                                        args=(client, n, jobs, args.prefix, out))
                       for n in range(args.workers)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    except baton.BatonError as e:
        print("worker_pool: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return 1
    print("done: %d jobs, %d lost" % (counts["done"], counts["lost"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
