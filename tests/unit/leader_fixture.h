/*
 * leader_fixture.h -- batond's server in the test process, over a fake
 * node of one (tests/unit/fake_node.h) instead of raft and a fake clock
 * (tests/unit/fake_clock.h): the leader's logic -- dispatch, access,
 * batching, pushes, deadlines, keepalives, watches -- driven through its
 * real client port by libbaton, with the real store underneath, and
 * nothing else running.
 *
 *     struct lf f;
 *     lf_start(&f, NULL);                 // extra batond flags, or NULL
 *     ... baton_connect with .endpoints = f.endpoint ...
 *     lf_advance(&f, 199);                // the server's clock, 199 ms on
 *     lf_stop(&f);
 *
 * The server runs its loop on a thread of its own, which reads the fake
 * clock: its time stands still unless the test moves it with lf_advance
 * (libuv's uv_now and timers, and every clock_gettime(CLOCK_MONOTONIC) of
 * server/). The clients keep real time. lf_on_loop runs a function on the
 * loop thread and waits for it. Every helper FAILs the running test
 * (tests/lib/runner.h) on error.
 */
#ifndef BATON_TESTS_UNIT_LEADER_FIXTURE_H
#define BATON_TESTS_UNIT_LEADER_FIXTURE_H

#include <pthread.h>
#include <stdbool.h>
#include <uv.h>

#include "server/server_int.h"
#include "tests/unit/fake_node.h"

struct lf {
    char dir[256];              /* the data directory (removed by lf_stop) */
    char endpoint[64];          /* 127.0.0.1:PORT of the client port */
    store *st;
    struct srv_config cfg;
    struct server srv;
    uv_loop_t loop;
    uv_async_t call;            /* runs fn on the loop thread */
    uv_check_t settle_check;    /* lf_settle's end-of-turn look */
    uv_idle_t settle_idle;      /* keeps the poll from blocking while settling */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    void (*fn)(struct lf *f, void *arg);
    void *arg;
    bool done;
    bool started;               /* the loop thread has set the server up */
    bool settling;              /* lf_settle waits for a quiet loop */
    int quiet;                  /* quiet turns in a row while settling */
};

/* Start a server on a free port with batond's flags plus extra (a
 * NULL-terminated list, or NULL). */
void lf_start(struct lf *f, const char *const *extra);
/* Run fn(f, arg) on the server's loop thread; return once it has run. */
void lf_on_loop(struct lf *f, void (*fn)(struct lf *f, void *arg), void *arg);
/* Run the server's loop turn after turn, none blocking in its poll, until
 * it has nothing left to do at once: no timer due, no idle, pending or
 * closing handle, and a whole turn (the server's check handler, which
 * proposes batches and sends replies and pushes, included) ran since
 * anything was. The clock stands still meanwhile. */
void lf_settle(struct lf *f);
/* Move the server's clock forward by ms, then lf_settle: every timer due
 * by then has run, and what it started (a proposal, its commit, the
 * pushes) is done. */
void lf_advance(struct lf *f, uint64_t ms);
/* The fake node's counters, read on the loop thread. */
void lf_node_stats(struct lf *f, struct fake_node_stats *out);
/* What the store holds of one lock, read on the loop thread. */
struct lf_lock_state {
    bool held;
    bool delayed;               /* free, in its lock-delay */
    uint64_t holder;            /* the first holder's session, 0 if none */
    uint64_t fence;
    uint32_t waiters;
};
void lf_lock_state(struct lf *f, const char *name, struct lf_lock_state *out);
/* Is the session in the store (not expired or closed)? */
bool lf_session_exists(struct lf *f, uint64_t session);
/* Make the node lead, or stop leading, and wait for the server to see it. */
void lf_set_leading(struct lf *f, bool leading);
/* Stop the server, free everything, remove the data directory. */
void lf_stop(struct lf *f);

/* A raw client (tests/lib/tls_sock.h) on f's port, through HELLO with
 * token (NULL: none); FAILs the test if it cannot connect. */
struct tls_sock;
void lf_raw_connect(const struct lf *f, struct tls_sock *s, const char *token);
/* OPEN_SESSION on s with ttl_ms, named client: the session id. */
uint64_t lf_raw_open(struct tls_sock *s, uint32_t ttl_ms, const char *client);

#endif /* BATON_TESTS_UNIT_LEADER_FIXTURE_H */
