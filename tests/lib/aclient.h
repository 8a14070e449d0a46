/*
 * aclient.h -- the async client API (include/baton/baton_async.h) in the tests
 * that count every callback and check the exact numbers:
 * tests/unit/test_client_*.c (through tests/unit/client_fixture.h) and
 * tests/integration/test_async.c. Callbacks that record what they saw, and
 * a new context on a tests/lib/tloop.h loop.
 *
 *     baton_async_t *ac = a_new(&t, &opts);
 *     struct rec r = {0};
 *     ASSERT_EQ(baton_async_open(ac, rec_open, &r), 0);
 *     run_until(&t, &r.calls, 1, 5000);
 *     ASSERT_EQ(r.status, 0);
 *
 * Every helper and callback that can fail FAILs the running test
 * (tests/lib/runner.h). Binaries that use it link libbaton and libuv.
 */
#ifndef BATON_TESTS_ACLIENT_H
#define BATON_TESTS_ACLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "baton/baton_async.h"
#include "tests/lib/tloop.h"

/* A new context with options o (baton_async_new), attached to t's loop
 * (baton_uv_attach), not opened yet. */
baton_async_t *a_new(struct tloop *t, const baton_opts *o);

/* The same for a harness cluster (tests/lib/cluster.h): o's client name
 * and timeouts, with c's endpoints, TLS files and token
 * (cluster_client_opts). o may be NULL for the defaults. */
struct cluster;
baton_async_t *a_new_cluster(struct tloop *t, const struct cluster *c, const baton_opts *o);

/* a_new, then its session opened (baton_async_open, waited for on t, at
 * most 10 s): FAILs the test if it cannot be, naming o->client_name. */
baton_async_t *a_open_with(struct tloop *t, const baton_opts *o);

/* ---- recording callbacks ------------------------------------------------ */

/* What one call's callback saw, and how many times it ran. */
struct rec {
    int calls;
    int status;
    uint64_t value; /* the session id (open) or the fence (lock) */
    int order;      /* global callback order (cb_seq), for ordering checks */
    char name[64];  /* the lock name (lock) */
    char err[256];  /* baton_async_errmsg when status < 0, else "" */
    baton_async_t *free_me; /* free this context from inside the callback */
};

/* The order of the last callback recorded (struct rec's `order`). */
extern int cb_seq;

/* Callbacks that record into the struct rec their data points to. */
void rec_open(baton_async_t *ac, int status, uint64_t session, void *data);
void rec_lock(baton_async_t *ac, int status, const char *name, uint64_t fence, void *data);
void rec_done(baton_async_t *ac, int status, void *data);

/* What the lost callback saw, lock by lock. */
#define LOST_MAX 8
struct lostrec {
    int calls;
    struct {
        char name[32];
        uint64_t fence;
        int why;
        int64_t at;    /* now_ms() */
        int order;     /* in cb_seq */
        char err[256];
        int unlock_rv; /* of baton_async_unlock called inside, if unlock_inside */
    } e[LOST_MAX];
    bool unlock_inside; /* unlock each lost lock from inside the callback */
    baton_async_t *free_me; /* free this context from inside the callback */
};

/* The lost callback (baton_async_on_lost) that records into a lostrec. */
void rec_lost(baton_async_t *ac, const char *lock, uint64_t fence, int why, void *data);

/* Find the lost record of lock `name`: true, with its index in *idx. */
bool lost_find(const struct lostrec *l, const char *name, int *idx);

#endif /* BATON_TESTS_ACLIENT_H */
