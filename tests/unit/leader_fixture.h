/*
 * leader_fixture.h -- batond's server in the test process, over a fake
 * node of one (tests/unit/fake_node.h) instead of raft: the leader's
 * logic -- dispatch, access, batching, pushes, deadlines, keepalives,
 * watches -- driven through its real client port by libbaton, with the
 * real store underneath, and nothing else running.
 *
 *     struct lf f;
 *     lf_start(&f, NULL);                 // extra batond flags, or NULL
 *     ... baton_connect with .endpoints = f.endpoint ...
 *     lf_stop(&f);
 *
 * The server runs its loop on a thread of its own; lf_on_loop runs a
 * function there and waits for it. Every helper FAILs the running test
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
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    void (*fn)(struct lf *f, void *arg);
    void *arg;
    bool done;
};

/* Start a server on a free port with batond's flags plus extra (a
 * NULL-terminated list, or NULL). */
void lf_start(struct lf *f, const char *const *extra);
/* Run fn(f, arg) on the server's loop thread; return once it has run. */
void lf_on_loop(struct lf *f, void (*fn)(struct lf *f, void *arg), void *arg);
/* The fake node's counters, read on the loop thread. */
void lf_node_stats(struct lf *f, struct fake_node_stats *out);
/* Make the node lead, or stop leading, and wait for the server to see it. */
void lf_set_leading(struct lf *f, bool leading);
/* Stop the server, free everything, remove the data directory. */
void lf_stop(struct lf *f);

#endif /* BATON_TESTS_UNIT_LEADER_FIXTURE_H */
