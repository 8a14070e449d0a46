/*
 * workload.h -- a checked lock workload for the integration tests that
 * change a running cluster under load (tests/integration/test_membership.c,
 * test_restart.c, deploy_installed.c): worker threads, each with its own
 * libbaton session, lock and unlock a few shared locks until told to stop,
 * and count what must not happen.
 *
 *     struct workload w = {.n_workers = 4, .n_locks = 2, .prefix = "r"};
 *     cluster_client_opts(&c, &w.opts);
 *     w.opts.client_name = "restart-worker";
 *     workload_start(&w);                      // every worker connected
 *     workload_wait_cycles(&w, 50, "before the restarts");
 *     ... stop and restart nodes ...
 *     workload_stop(&w);                       // every worker joined
 *     ASSERT_EQ(atomic_load(&w.errors), 0);
 *     ASSERT_EQ(atomic_load(&w.violations), 0);
 *     ASSERT_EQ(atomic_load(&w.lost), 0);
 *
 * One cycle of worker i: lock PREFIX<k> (k = i % n_locks) with baton_lock
 * (baton_lock_timeout when lock_wait_ms > 0), check that no other worker
 * holds it and that its fence is above the last one any worker saw for it,
 * hold it hold_ms, unlock. A failed lock or unlock is said on stderr and
 * counted in `errors` (after a failed lock the worker sleeps 20 ms); a
 * second holder or a fence not above the last one counts in `violations`;
 * the lost callback (baton_on_lost) counts in `lost`. Only a cycle whose
 * unlock succeeded counts in `cycles`.
 *
 * Ownership and threads: the caller owns the struct workload (on its stack
 * or static) and everything opts points to; both must stay where they are
 * from workload_start until workload_stop has returned. Every function here
 * is called from the test's own thread (one thread); the workers are
 * threads of their own, each running its baton_t, and the lost callback
 * runs on that baton_t's I/O thread. The counters are atomics: read them
 * with atomic_load at any time; after workload_stop nothing changes them.
 * Every function FAILs the running test (tests/lib/runner.h) when it
 * cannot do what it says, and so does a worker whose baton_connect fails.
 * Binaries that use it link libbaton.
 */
#ifndef BATON_TESTS_WORKLOAD_H
#define BATON_TESTS_WORKLOAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "baton/baton.h"

#define WORKLOAD_MAX_WORKERS 16
#define WORKLOAD_MAX_LOCKS 8

struct workload;

/* One worker thread (internal but for the session ids). */
struct workload_worker {
    struct workload *w;
    int index;                    /* 0..n_workers-1 */
    pthread_t thread;
    uint64_t session_before;      /* baton_session_id once connected (set before
                                     workload_start returns) */
    uint64_t session_after;       /* baton_session_id when it stopped (set before
                                     workload_stop returns) */
};

struct workload {
    /* ---- parameters, set by the caller before workload_start ---- */
    baton_opts opts;              /* how each worker connects: endpoints, client_name,
                                     timeouts, TLS, token (baton_connect copies them) */
    int n_workers;                /* 1..WORKLOAD_MAX_WORKERS */
    int n_locks;                  /* 1..WORKLOAD_MAX_LOCKS */
    const char *prefix;           /* lock names are PREFIX0, PREFIX1, ... (< 48 bytes) */
    int hold_ms;                  /* how long each grant is held; 0: unlock at once */
    int64_t lock_wait_ms;         /* > 0: baton_lock_timeout with this bound; 0: baton_lock */

    /* ---- counters, written by the workers (see above) ---- */
    atomic_int errors;
    atomic_int violations;
    atomic_int lost;
    atomic_long cycles;

    /* ---- internal ---- */
    atomic_int stop, pause, paused, ready;
    atomic_int holder[WORKLOAD_MAX_LOCKS];
    atomic_ullong last_fence[WORKLOAD_MAX_LOCKS];
    struct workload_worker workers[WORKLOAD_MAX_WORKERS];
};

/* Zero the counters, start the workers and wait until every one has
 * connected (its session_before set). */
void workload_start(struct workload *w);

/* Wait until the workers have done n more cycles, at most 30 s; else FAIL
 * with "WHEN: the workers did X cycles, not Y". */
void workload_wait_cycles(struct workload *w, long n, const char *when);

/* Hold the workers between two cycles (each finishes the one it is in)
 * and wait until all of them are held, at most 30 s; else FAIL ("the
 * workers did not pause"). No cycle is in progress when it returns. */
void workload_pause(struct workload *w);

/* Let the held workers go on. */
void workload_resume(struct workload *w);

/* Tell the workers to stop, and join them (each finishes its cycle, sets
 * its session_after and closes its session). */
void workload_stop(struct workload *w);

#endif /* BATON_TESTS_WORKLOAD_H */
