/*
 * test_owners.c -- owners (include/baton/baton.h and baton_async.h,
 * "Owners"; docs/design.md, "Owners") against three real batond
 * processes: threads that share one baton_t wait for one name in FIFO
 * order, each with its own grant and fence; a thread asking again for its
 * own name gets BATON_EDEADLK at once, or a second handle when reentrant
 * while another thread waits; async owners queue behind each other while
 * owner 0 keeps the old one-waiter-per-context rule; multi-locks stay
 * session-level; and a session that ends with two threads' holds and a
 * third thread's wait on one name loses both holds, ends the wait, and
 * hands the lock past that wait to the next session's waiter.
 *
 * No timing is asserted: "still waits" is read from the cluster's state
 * (lock-info) and from the waiting thread's flag after the events that
 * must not grant it have been applied.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "baton/baton.h"
#include "baton/baton_async.h"
#include "storage/cmd_table.h"
#include "tests/lib/aclient.h"
#include "tests/lib/cluster.h"
#include "tests/lib/runner.h"
#include "tests/lib/tloop.h"

static struct cluster C;

/* Three nodes at this binary's feature level (owners need level 3). */
static void start3(void)
{
    ASSERT_EQ(cluster_start(&C, 3), 0);
    ASSERT_GE(cluster_wait_leader(&C, 15000), 0);
    ASSERT_EQ(cluster_wait_gauge(&C, "baton_cluster_feature_level", CMD_LEVEL, 20000), 0);
}

static baton_t *b_connect(const char *name, unsigned ttl_ms)
{
    baton_opts o = {.endpoints = cluster_endpoints(&C), .client_name = name,
                    .connect_timeout_ms = 10000, .session_ttl_ms = ttl_ms};
    baton_t *b = NULL;

    if (baton_connect(&o, &b) != 0) FAIL("connect %s: %s", name, baton_connect_errmsg());
    return b;
}

static void wait_lock(const char *name, const char *key, int64_t want)
{
    ASSERT_EQ(cluster_wait_lock_i64(&C, name, key, want, 15000), 0);
}

/* A thread that takes one lock of a shared baton_t and reports it. */
struct taker {
    baton_t *b;
    const char *name;
    baton_lock_args args;
    pthread_t th;
    atomic_int done;      /* the lock call returned */
    int rv;
    baton_lock_t *l;
    uint64_t fence;
    int order;            /* among the takers that got theirs */
    atomic_int release;   /* set: unlock and end */
    int unlock_rv;
};

static atomic_int grant_order;

static void *taker_main(void *arg)
{
    struct taker *k = arg;

    k->rv = baton_lock_with(k->b, k->name, &k->args, &k->l);
    if (k->rv == 0) {
        k->fence = baton_lock_fence(k->l);
        k->order = atomic_fetch_add(&grant_order, 1) + 1;
    }
    atomic_store(&k->done, 1);
    if (k->rv != 0) return NULL;
    while (!atomic_load(&k->release)) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    k->unlock_rv = baton_unlock(k->l);
    return NULL;
}

static void taker_start(struct taker *k, baton_t *b, const char *name, uint8_t mode)
{
    memset(k, 0, sizeof *k);
    k->b = b;
    k->name = name;
    k->args.wait_ms = BATON_WAIT_FOREVER;
    k->args.mode = mode;
    k->args.lock_delay_ms = BATON_LOCK_DELAY_NONE;
    ASSERT_EQ(pthread_create(&k->th, NULL, taker_main, k), 0);
}

static void taker_wait_done(struct taker *k)
{
    for (int i = 0; i < 3000 && !atomic_load(&k->done); i++) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (!atomic_load(&k->done)) FAIL("the lock call of '%s' did not return", k->name);
}

static void taker_end(struct taker *k)
{
    atomic_store(&k->release, 1);
    ASSERT_EQ(pthread_join(k->th, NULL), 0);
}

TEST(threads_of_one_baton_wait_in_fifo_order)
{
    baton_lock_args re = {.wait_ms = BATON_WAIT_FOREVER, .reentrant = 1};
    struct taker t2, t3;
    baton_lock_t *l1, *l1b, *lx = NULL;
    uint64_t f1;
    baton_t *b;

    start3();
    b = b_connect("threads", 0);
    ASSERT_EQ(baton_lock(b, "t", &l1), 0);
    f1 = baton_lock_fence(l1);
    /* The same thread would wait behind itself: at once, nothing queued. */
    ASSERT_EQ(baton_lock(b, "t", &lx), BATON_EDEADLK);
    ASSERT(lx == NULL);
    ASSERT(strstr(baton_errmsg(b), "'t'") != NULL);
    ASSERT_EQ(baton_trylock(b, "t", &lx), BATON_EDEADLK);
    /* Two other threads queue, in the order they asked. */
    taker_start(&t2, b, "t", BATON_MODE_EXCLUSIVE);
    wait_lock("t", "total_waiters", 1);
    taker_start(&t3, b, "t", BATON_MODE_EXCLUSIVE);
    wait_lock("t", "total_waiters", 2);
    /* Reentrant in the holding thread while they wait: a second handle. */
    ASSERT_EQ(baton_lock_with(b, "t", &re, &l1b), 0);
    ASSERT_UEQ(baton_lock_fence(l1b), f1);
    ASSERT_EQ(baton_unlock(l1), 0);
    ASSERT_EQ(cluster_lock_i64(&C, "t", "fence"), (int64_t)f1); /* still ours */
    ASSERT_EQ(cluster_lock_i64(&C, "t", "total_waiters"), 2);
    ASSERT_EQ(atomic_load(&t2.done), 0);
    ASSERT_EQ(baton_unlock(l1b), 0);
    /* Only now is the second thread granted, with a greater fence. */
    taker_wait_done(&t2);
    ASSERT_EQ(t2.rv, 0);
    ASSERT_ULT(f1, t2.fence);
    wait_lock("t", "total_waiters", 1);
    ASSERT_EQ(atomic_load(&t3.done), 0);
    taker_end(&t2);
    ASSERT_EQ(t2.unlock_rv, 0);
    taker_wait_done(&t3);
    ASSERT_EQ(t3.rv, 0);
    ASSERT_ULT(t2.fence, t3.fence);
    ASSERT_EQ(t2.order + 1, t3.order);
    taker_end(&t3);
    ASSERT_EQ(t3.unlock_rv, 0);
    /* Nothing is left: the main thread takes it again as ever. */
    ASSERT_EQ(baton_trylock(b, "t", &l1), 0);
    ASSERT_ULT(t3.fence, baton_lock_fence(l1));
    ASSERT_EQ(baton_unlock(l1), 0);
    baton_close(b);
    ASSERT_EQ(cluster_stop(&C), 0);
}

static baton_async_t *a_open(struct tloop *t, const char *client_name)
{
    baton_opts o = {.endpoints = cluster_endpoints(&C), .client_name = client_name,
                    .connect_timeout_ms = 10000, .session_ttl_ms = 15000};

    return a_open_with(t, &o);
}

/* A lock call of owner (reentrant or not) into r, not waited for. */
static void a_ask(baton_async_t *ac, const char *name, uint64_t owner, uint8_t reentrant,
                  struct rec *r)
{
    baton_lock_args a = {.wait_ms = BATON_WAIT_FOREVER, .owner = owner, .reentrant = reentrant};

    memset(r, 0, sizeof *r);
    ASSERT_EQ(baton_async_lock_with(ac, name, &a, rec_lock, r), 0);
}

static void a_ended(struct tloop *t, struct rec *r, int status)
{
    run_until(t, &r->calls, 1, 15000);
    if (r->status != status)
        FAIL("lock: %s, not %s (%s)", baton_err_name(r->status), baton_err_name(status), r->err);
}

static void a_unlock(struct tloop *t, baton_async_t *ac, const char *name, uint64_t fence)
{
    struct rec r = {0};

    ASSERT_EQ(baton_async_unlock(ac, name, fence, rec_done, &r), 0);
    run_until(t, &r.calls, 1, 15000);
    ASSERT_EQ(r.status, 0);
}

/* Run t's loop until lock-info's key of name is want (FAIL after 15 s). */
static void a_wait_lock(struct tloop *t, const char *name, const char *key, int64_t want)
{
    for (int i = 0; i < 150; i++) {
        run_for(t, 100);
        if (cluster_lock_i64(&C, name, key) == want) return;
    }
    FAIL("lock-info %s: %s never became %lld", name, key, (long long)want);
}

TEST(async_owners_queue_and_owner_zero_keeps_edeadlk)
{
    const char *mn[] = {"m1", "m2"}, *mx[] = {"m3", "m1"};
    baton_lock_args many = {.wait_ms = BATON_WAIT_FOREVER, .owner = 3};
    struct rec r1, r2, r, rz, rm, r4, rx;
    struct tloop t;
    baton_async_t *ac;

    start3();
    tloop_init(&t);
    ac = a_open(&t, "owners");
    a_ask(ac, "a", 1, 0, &r1);
    a_ended(&t, &r1, 0);
    a_ask(ac, "a", 2, 0, &r2);
    a_wait_lock(&t, "a", "total_waiters", 1);
    /* Owner 1 again, and owner 0 (the context): EDEADLK at once. */
    a_ask(ac, "a", 1, 0, &r);
    a_ended(&t, &r, BATON_EDEADLK);
    a_ask(ac, "a", 0, 0, &r);
    a_ended(&t, &r, BATON_EDEADLK);
    a_ask(ac, "a", 2, 1, &r); /* owner 2 only waits: nothing to re-enter */
    a_ended(&t, &r, BATON_EDEADLK);
    /* Owner 1 re-enters its hold past the waiter. */
    a_ask(ac, "a", 1, 1, &r);
    a_ended(&t, &r, 0);
    ASSERT_UEQ(r.value, r1.value);
    a_unlock(&t, ac, "a", r1.value);
    ASSERT_EQ(cluster_lock_i64(&C, "a", "total_waiters"), 1);
    ASSERT_EQ(r2.calls, 0);
    a_unlock(&t, ac, "a", r1.value);
    a_ended(&t, &r2, 0);
    ASSERT_ULT(r1.value, r2.value);
    a_unlock(&t, ac, "a", r2.value);

    /* Owner 0 is every owner: whatever holds a name of the context's,
     * another call for it is refused, as before owners existed. */
    a_ask(ac, "z", 0, 0, &rz);
    a_ended(&t, &rz, 0);
    a_ask(ac, "z", 0, 0, &r);
    a_ended(&t, &r, BATON_EDEADLK);
    a_ask(ac, "z", 5, 0, &r);
    a_ended(&t, &r, BATON_EDEADLK);
    ASSERT_EQ(cluster_lock_i64(&C, "z", "total_waiters"), 0);
    a_unlock(&t, ac, "z", rz.value);

    /* Multi-locks stay session-level: another owner's single name queues
     * behind one, but a multi-lock on a name the session has is refused. */
    memset(&rm, 0, sizeof rm);
    ASSERT_EQ(baton_async_lock_many(ac, mn, 2, &many, rec_lock, &rm), 0);
    a_ended(&t, &rm, 0);
    a_ask(ac, "m2", 4, 0, &r4);
    a_wait_lock(&t, "m2", "total_waiters", 1);
    many.owner = 6;
    memset(&rx, 0, sizeof rx);
    ASSERT_EQ(baton_async_lock_many(ac, mx, 2, &many, rec_lock, &rx), 0);
    a_ended(&t, &rx, BATON_EDEADLK);
    a_unlock(&t, ac, "m1", rm.value);
    a_ended(&t, &r4, 0);
    ASSERT_ULT(rm.value, r4.value);
    a_unlock(&t, ac, "m2", r4.value);
    {
        struct rec rc = {0};
        ASSERT_EQ(baton_async_close_session(ac, rec_done, &rc), 0);
        run_until(&t, &rc.calls, 1, 15000);
        baton_async_free(ac);
    }
    tloop_done(&t);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* The lost callback's count and fences. */
static atomic_int n_lost;
static _Atomic uint64_t lost_fence[4];

static void on_lost(baton_t *b, const char *lock, uint64_t fence, int why, void *data)
{
    int i = atomic_fetch_add(&n_lost, 1);

    (void)b;
    (void)data;
    if (strcmp(lock, "e") != 0 || why != BATON_ESESSION) return;
    if (i < 4) atomic_store(&lost_fence[i], fence);
}

TEST(expiry_ends_every_thread_hold_and_wait_on_one_name)
{
    struct taker t2, t4, t3;
    baton_lock_args sh = {.wait_ms = BATON_WAIT_FOREVER, .mode = BATON_MODE_SHARED,
                          .lock_delay_ms = BATON_LOCK_DELAY_NONE};
    baton_lock_t *l1, *lx;
    struct ctl_result cr;
    char sid[32];
    baton_t *b, *b2;
    uint64_t s1;

    start3();
    b = b_connect("dies", 3000);
    b2 = b_connect("next", 0);
    baton_on_lost(b, on_lost, NULL);
    /* Two threads of b hold "e" shared; a third waits for it exclusively;
     * then another session's thread. */
    ASSERT_EQ(baton_lock_with(b, "e", &sh, &l1), 0);
    taker_start(&t2, b, "e", BATON_MODE_SHARED);
    taker_wait_done(&t2);
    ASSERT_EQ(t2.rv, 0);
    ASSERT_EQ(cluster_lock_i64(&C, "e", "total_holders"), 2);
    taker_start(&t4, b, "e", BATON_MODE_EXCLUSIVE);
    wait_lock("e", "total_waiters", 1);
    taker_start(&t3, b2, "e", BATON_MODE_EXCLUSIVE);
    wait_lock("e", "total_waiters", 2);
    s1 = baton_session_id(b);
    snprintf(sid, sizeof sid, "%llu", (unsigned long long)s1);
    ASSERT_EQ(cluster_ctl(&C, &cr, "expire", sid, NULL), 0);
    ctl_result_free(&cr);
    /* Both holds are lost, the wait ends, and the lock goes past it to
     * the other session. */
    taker_wait_done(&t4);
    ASSERT_EQ(t4.rv, BATON_ESESSION);
    taker_wait_done(&t3);
    ASSERT_EQ(t3.rv, 0);
    ASSERT_ULT(t2.fence, t3.fence);
    for (int i = 0; i < 3000 && atomic_load(&n_lost) < 2; i++) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    ASSERT_EQ(atomic_load(&n_lost), 2);
    ASSERT((atomic_load(&lost_fence[0]) == baton_lock_fence(l1) &&
            atomic_load(&lost_fence[1]) == t2.fence) ||
           (atomic_load(&lost_fence[1]) == baton_lock_fence(l1) &&
            atomic_load(&lost_fence[0]) == t2.fence));
    ASSERT_EQ(baton_unlock(l1), BATON_ELOST);
    taker_end(&t2);
    ASSERT_EQ(t2.unlock_rv, BATON_ELOST);
    taker_end(&t4);
    /* The next session of b starts clean: nothing of the old one is left
     * to make the main thread wait behind itself. */
    taker_end(&t3);
    ASSERT_EQ(t3.unlock_rv, 0);
    ASSERT_EQ(baton_trylock(b, "e", &lx), 0);
    ASSERT(baton_session_id(b) != s1);
    ASSERT_EQ(baton_unlock(lx), 0);
    baton_close(b);
    baton_close(b2);
    ASSERT_EQ(cluster_stop(&C), 0);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(120);
    RUN(threads_of_one_baton_wait_in_fifo_order);
    RUN(async_owners_queue_and_owner_zero_keeps_edeadlk);
    RUN(expiry_ends_every_thread_hold_and_wait_on_one_name);
    return runner_done();
}
