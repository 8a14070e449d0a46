/*
 * loops.h -- the libuv harness of lockbench's callback drivers of W1/W2/W3:
 * drv_async.c (baton, through libbaton's async API) and drv_redis.c (the
 * usual Redis lock recipe, through hiredis's async API).
 *
 * The harness spreads the clients over --loops libuv loops, one thread each
 * (client i on loop i mod loops), lets each driver connect its clients,
 * starts the clock once every client is connected (or failed), tells every
 * client when the run starts and ends, waits for every client to be done,
 * and hands the results to report.c. The drivers share the bookkeeping of
 * a grant and of a release too (loop_granted, loop_released), so that both
 * count the same things the same way.
 *
 * Everything a client does runs on its loop's thread; a driver's hooks and
 * the loop_* calls below are called only there.
 */
#ifndef BATON_BENCH_LOOPS_H
#define BATON_BENCH_LOOPS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "tests/bench/bench.h"

struct run_loop;

/* A driver: its clients are client_size bytes each, zeroed before init. */
struct loop_driver {
    const char *name; /* in the driver's CPU line on stderr */
    size_t client_size;
    /* Set client c up on loop L with result slot r; no I/O yet (runs on the
     * main thread, before the loops start). */
    void (*init)(void *c, struct run_loop *L, struct cres *r);
    /* Start connecting; the client calls loop_settled(L) exactly once, when
     * it is connected or has failed. */
    void (*start)(void *c);
    /* The run started. go and end are called for every client, whatever
     * its state: a client that failed or is done ignores them. */
    void (*go)(void *c);
    /* The run is over: a client waiting may stop now; one in the middle of
     * a hold or a release finishes it first. Every client ends with
     * loop_client_done(L). */
    void (*end)(void *c);
};

struct run_bench {
    const struct cfg *cfg;
    const struct loop_driver *drv;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int loops_ready;
    int64_t t_start, t_end;
    atomic_int holder; /* W2: client id + 1 of the holder, 0 if none */
    atomic_uint_fast64_t grant_seq;
    struct modes modes; /* W6-W8 (baton only) */
};

struct run_loop {
    struct run_bench *B;
    uv_loop_t loop;
    uv_async_t go;  /* the main thread starts the run */
    uv_timer_t end; /* the end of the run */
    pthread_t th;
    char *cl;       /* n clients of B->drv->client_size bytes */
    int n;
    int n_settled;  /* clients connected or failed */
    int n_done;     /* clients done */
    bool running;   /* go arrived */
    bool ending;    /* the end timer fired */
    bool finished;  /* go and end closed */
    int64_t t_start, t_end;
};

/* Run W1/W2/W3 with driver drv: returns report_clients()'s result. */
int run_loops(const struct cfg *cfg, const struct loop_driver *drv);

/* A client is connected, or failed to connect (see loop_driver.start). */
void loop_settled(struct run_loop *L);
/* A client is done: it holds no handle of L's loop any more. */
void loop_client_done(struct run_loop *L);

/* Milliseconds left in the run (rounded up); 0 once it is over. */
int64_t loop_ms_left(const struct run_loop *L);

/* A grant of the call made at t0 arrived at t1: the acquire latency, the
 * fence check (when the system has fences), and in W2 the holder flag, the
 * grant's place in the sequence and its count. */
void loop_granted(struct run_loop *L, struct cres *r, int64_t t0, int64_t t1, uint64_t fence);
/* W2: the client is about to release; clear the holder flag. */
void loop_releasing(struct run_loop *L, const struct cres *r);
/* The release called at t1 completed at t2: its latency and, in W1/W3, the
 * completed cycle. */
void loop_released(struct run_loop *L, struct cres *r, int64_t t1, int64_t t2, uint64_t fence);

#endif /* BATON_BENCH_LOOPS_H */
