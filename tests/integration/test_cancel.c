/*
 * test_cancel.c -- baton_lock_call (include/baton/baton.h, "Cancelling a
 * wait; owners other than the calling thread") against three real batond
 * processes: a cancel handle ends every wait made with it, of several
 * baton_ts and a multi-lock among them, and withdraws each from its queue;
 * a fired handle refuses later calls at once; an owner from
 * baton_owner_new is one owner whichever thread calls, and another than
 * the calling thread's own.
 *
 * No timing is asserted: "waits" is read from the cluster's state.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "baton/baton.h"
#include "storage/cmd_table.h"
#include "tests/lib/cluster.h"
#include "tests/lib/runner.h"

static struct cluster C;

static void start3(void)
{
    ASSERT_EQ(cluster_start(&C, 3), 0);
    ASSERT_GE(cluster_wait_leader(&C, 15000), 0);
    ASSERT_EQ(cluster_wait_gauge(&C, "baton_cluster_feature_level", CMD_LEVEL, 20000), 0);
}

static baton_t *b_connect(const char *name)
{
    return client_connect(&(baton_opts){.endpoints = cluster_endpoints(&C), .client_name = name});
}

/* One baton_lock_call on a thread of its own. */
struct waiter {
    baton_t *b;
    const char *names[2];
    size_t n;
    baton_lock_args args;
    baton_cancel_t *cancel;
    pthread_t th;
    atomic_int done;
    int rv;
    baton_lock_t *l;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;

    w->rv = baton_lock_call(w->b, w->names, w->n, &w->args, w->cancel, &w->l);
    atomic_store(&w->done, 1);
    return NULL;
}

static void waiter_start(struct waiter *w, baton_t *b, const char *n0, const char *n1,
                         uint64_t owner, baton_cancel_t *c)
{
    memset(w, 0, sizeof *w);
    w->b = b;
    w->names[0] = n0;
    w->names[1] = n1;
    w->n = n1 ? 2 : 1;
    w->args.wait_ms = BATON_WAIT_FOREVER;
    w->args.owner = owner;
    w->cancel = c;
    ASSERT_EQ(pthread_create(&w->th, NULL, waiter_main, w), 0);
}

static void waiter_join(struct waiter *w)
{
    ASSERT_EQ(pthread_join(w->th, NULL), 0);
}

static void wait_waiters(const char *name, int64_t want)
{
    ASSERT_EQ(cluster_wait_lock_i64(&C, name, "total_waiters", want, 15000), 0);
}

TEST(cancel_ends_every_wait_made_with_it_and_withdraws_it)
{
    const char *both[2] = {"ca", "cb"};
    baton_t *b1, *b2, *b3;
    baton_lock_t *ha, *hb, *l = NULL;
    baton_cancel_t *c;
    struct waiter w1, w2, w3;

    start3();
    b1 = b_connect("holder");
    b2 = b_connect("waiters");
    b3 = b_connect("many"); /* a multi-lock is refused beside its session's holds */
    ASSERT_EQ(baton_lock(b1, "ca", &ha), 0);
    ASSERT_EQ(baton_lock(b1, "cb", &hb), 0);
    ASSERT_EQ(baton_cancel_new(&c), 0);
    /* Three waits on one handle: two baton_ts, one a multi-lock. */
    waiter_start(&w1, b2, "ca", NULL, baton_owner_new(), c);
    wait_waiters("ca", 1);
    waiter_start(&w2, b2, "cb", NULL, baton_owner_new(), c);
    wait_waiters("cb", 1);
    ASSERT_EQ(baton_unlock(hb), 0); /* w2 gets cb: its wait is over */
    waiter_join(&w2);
    ASSERT_EQ(w2.rv, 0);
    waiter_start(&w3, b3, "ca", "cb", 0, c);
    wait_waiters("ca", 2);
    ASSERT_EQ(atomic_load(&w1.done), 0);
    baton_cancel(c);
    baton_cancel(c); /* idempotent */
    waiter_join(&w1);
    waiter_join(&w3);
    ASSERT_EQ(w1.rv, BATON_ECANCELED);
    ASSERT(w1.l == NULL);
    ASSERT_EQ(w3.rv, BATON_ECANCELED);
    /* Withdrawn from both queues: nobody waits any more. */
    wait_waiters("ca", 0);
    wait_waiters("cb", 0);
    /* A fired handle refuses at once, free lock or not. */
    ASSERT_EQ(baton_lock_call(b2, both, 1, NULL, c, &l), BATON_ECANCELED);
    ASSERT(l == NULL);
    ASSERT(strstr(baton_errmsg(b2), "cancel") != NULL);
    /* The granted one was not touched by the cancel. */
    ASSERT_EQ(baton_unlock(w2.l), 0);
    ASSERT_EQ(baton_unlock(ha), 0);
    /* Without a handle, or with a fresh one, calls go on as ever. */
    baton_cancel_free(c);
    ASSERT_EQ(baton_cancel_new(&c), 0);
    ASSERT_EQ(baton_lock_call(b2, both, 2, NULL, c, &l), 0);
    ASSERT_EQ(baton_unlock(l), 0);
    ASSERT_EQ(baton_lock_call(b2, both, 2, NULL, NULL, &l), 0);
    ASSERT_EQ(baton_unlock(l), 0);
    baton_cancel_free(c);
    baton_close(b1);
    baton_close(b2);
    baton_close(b3);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* A thread that takes "o" for an owner and hands the hold back. */
static void *take_for_owner(void *arg)
{
    struct waiter *w = arg;

    w->rv = baton_lock_call(w->b, w->names, 1, &w->args, NULL, &w->l);
    return NULL;
}

TEST(an_owner_from_baton_owner_new_is_one_owner_on_any_thread)
{
    const char *o_name[1] = {"o"};
    baton_lock_args own, re;
    baton_lock_t *l2 = NULL, *lt = NULL;
    struct waiter w;
    uint64_t o1, o2;
    baton_t *b;

    start3();
    b = b_connect("owners");
    o1 = baton_owner_new();
    o2 = baton_owner_new();
    ASSERT(o1 != 0 && o2 != 0 && o1 != o2);
    /* Another thread takes "o" for owner o1 and returns. */
    memset(&w, 0, sizeof w);
    w.b = b;
    w.names[0] = "o";
    w.args = (baton_lock_args){.wait_ms = BATON_WAIT_TRY, .owner = o1};
    ASSERT_EQ(pthread_create(&w.th, NULL, take_for_owner, &w), 0);
    ASSERT_EQ(pthread_join(w.th, NULL), 0);
    ASSERT_EQ(w.rv, 0);
    /* On this thread, o1 is the same owner: it would wait behind itself,
     * and a reentrant call re-enters its hold. */
    own = (baton_lock_args){.wait_ms = BATON_WAIT_FOREVER, .owner = o1};
    ASSERT_EQ(baton_lock_call(b, o_name, 1, &own, NULL, &l2), BATON_EDEADLK);
    re = own;
    re.reentrant = 1;
    ASSERT_EQ(baton_lock_call(b, o_name, 1, &re, NULL, &l2), 0);
    ASSERT_UEQ(baton_lock_fence(l2), baton_lock_fence(w.l));
    /* This thread's own owner, and o2, are others: they would queue. */
    ASSERT_EQ(baton_trylock(b, "o", &lt), BATON_EWOULDBLOCK);
    own.owner = o2;
    own.wait_ms = BATON_WAIT_TRY;
    ASSERT_EQ(baton_lock_call(b, o_name, 1, &own, NULL, &lt), BATON_EWOULDBLOCK);
    ASSERT_EQ(baton_unlock(w.l), 0);
    ASSERT_EQ(baton_unlock(l2), 0);
    ASSERT_EQ(baton_lock_call(b, o_name, 1, &own, NULL, &lt), 0);
    ASSERT_EQ(baton_unlock(lt), 0);
    baton_close(b);
    ASSERT_EQ(cluster_stop(&C), 0);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(120);
    RUN(cancel_ends_every_wait_made_with_it_and_withdraws_it);
    RUN(an_owner_from_baton_owner_new_is_one_owner_on_any_thread);
    return runner_done();
}
