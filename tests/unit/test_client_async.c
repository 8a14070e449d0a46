/*
 * test_client_async.c -- libbaton's async core (include/baton/baton_async.h) on
 * the libuv adapter, against the fake servers of tests/unit/fake_server.h:
 * open and close, lock, trylock and unlock, waits that end by a push, the
 * queued callback, the client's own safety cancel of a bounded wait,
 * cancel, free from inside a callback or with calls pending, argument
 * errors, calls after close, and many calls in flight at once.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "baton/adapters/libuv.h"
#include "baton/baton_async.h"
#include "baton/baton_defs.h"
#include "tests/lib/clock.h"
#include "tests/lib/runner.h"
#include "tests/unit/client_fixture.h"
#include "tests/unit/fake_server.h"

TEST(async_open_close)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;

    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, 0);
    ASSERT(baton_async_session_id(ac) > 0);
    a_close(&t, ac);
    tloop_done(&t);
    ASSERT_EQ(FK_GET(f, n_open), 1);
    ASSERT_EQ(FK_GET(f, n_close), 1);
    fake_stop(f);
}

TEST(async_lock_trylock_unlock)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct rec r1, r2, r3;

    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, 0);
    r1 = a_lock_as(&t, ac, "a", BATON_WAIT_FOREVER, 1, 0);
    ASSERT_EQ(r1.status, 0);
    ASSERT(r1.value > 0);
    /* A call of another owner of the context is a separate waiter. */
    r2 = a_lock_as(&t, ac, "a", BATON_WAIT_TRY, 2, 0);
    ASSERT_EQ(r2.status, BATON_EWOULDBLOCK);
    ASSERT(strstr(r2.err, "'a'") != NULL);
    /* The same owner, or owner 0 (the context), would wait behind itself. */
    ASSERT_EQ(FK_GET(f, n_acquire), 2);
    r2 = a_lock_as(&t, ac, "a", BATON_WAIT_TRY, 1, 0);
    ASSERT_EQ(r2.status, BATON_EDEADLK);
    ASSERT(strstr(r2.err, "'a'") != NULL);
    r2 = a_lock(&t, ac, "a", BATON_WAIT_TRY);
    ASSERT_EQ(r2.status, BATON_EDEADLK);
    ASSERT_EQ(FK_GET(f, n_acquire), 2); /* refused here, without a request */
    ASSERT_EQ(a_unlock(&t, ac, "a", r1.value), 0);
    ASSERT_EQ(a_unlock(&t, ac, "a", r1.value), BATON_ENOTHELD);
    r3 = a_lock(&t, ac, "a", BATON_WAIT_TRY);
    ASSERT_EQ(r3.status, 0);
    ASSERT_ULT(r1.value, r3.value);
    ASSERT_EQ(a_unlock(&t, ac, "a", r3.value), 0);
    a_close(&t, ac);
    tloop_done(&t);
    /* ack_below never passes an unanswered request and moves forward. */
    ASSERT(FK_GET(f, last_ack_below) <= FK_GET(f, last_acquire_seq));
    ASSERT(FK_GET(f, last_ack_below) > 1);
    fake_stop(f);
}

TEST(async_queued_waiter_granted_by_push)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *a, *b;
    struct rec ra, rb = {0}, rc = {0};

    tloop_init(&t);
    a = a_open(&t, f->addr, 0, 0);
    b = a_open(&t, f->addr, 0, 0);
    ra = a_lock(&t, a, "x", BATON_WAIT_FOREVER);
    ASSERT_EQ(ra.status, 0);
    ASSERT_EQ(a_lock_start(b, "x", BATON_WAIT_FOREVER, 1, 0, &rb), 0);
    ASSERT_EQ(a_lock_start(b, "x", 100, 2, 0, &rc), 0);
    /* The bounded wait runs out in the cluster: WAIT_FAILED push. */
    run_until(&t, &rc.calls, 1, 3000);
    ASSERT_EQ(rc.status, BATON_ETIMEDOUT);
    ASSERT_EQ(rb.calls, 0);
    ASSERT_EQ(a_unlock(&t, a, "x", ra.value), 0);
    run_until(&t, &rb.calls, 1, 3000);
    ASSERT_EQ(rb.status, 0);
    ASSERT_ULT(ra.value, rb.value);
    run_for(&t, 50);
    ASSERT_EQ(rb.calls, 1);
    ASSERT_EQ(rc.calls, 1);
    ASSERT_EQ(FK_GET(f, n_cancel), 0);
    a_close(&t, a);
    a_close(&t, b);
    tloop_done(&t);
    fake_stop(f);
}

/* What the queued callback saw. */
struct queuedrec {
    int calls;
    struct {
        char name[32];
        uint32_t position;
        void *call_data;
        int order; /* in cb_seq */
    } e[4];
};

static void rec_queued(baton_async_t *ac, const char *lock, uint32_t position, void *call_data,
                       void *data)
{
    struct queuedrec *q = data;
    int i = q->calls++;

    (void)ac;
    ASSERT(i < 4);
    snprintf(q->e[i].name, sizeof q->e[i].name, "%s", lock);
    q->e[i].position = position;
    q->e[i].call_data = call_data;
    q->e[i].order = ++cb_seq;
}

/* The queued callback reports each QUEUED answer with its position and the
 * lock call's data, before that call's own callback; a granted-at-once
 * call and a try get none. */
TEST(async_queued_callback)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *a, *b;
    struct rec ra, rt, r1 = {0}, r2 = {0};
    struct queuedrec qa = {0}, qb = {0};

    tloop_init(&t);
    a = a_open(&t, f->addr, 0, 0);
    b = a_open(&t, f->addr, 0, 0);
    baton_async_on_queued(a, rec_queued, &qa);
    baton_async_on_queued(b, rec_queued, &qb);
    ra = a_lock(&t, a, "q", BATON_WAIT_FOREVER);
    ASSERT_EQ(ra.status, 0);
    rt = a_lock(&t, b, "q", BATON_WAIT_TRY);
    ASSERT_EQ(rt.status, BATON_EWOULDBLOCK);
    ASSERT_EQ(a_lock_start(b, "q", BATON_WAIT_FOREVER, 1, 0, &r1), 0);
    ASSERT_EQ(a_lock_start(b, "q", BATON_WAIT_FOREVER, 2, 0, &r2), 0);
    run_until(&t, &qb.calls, 2, 3000);
    ASSERT_EQ(qb.calls, 2);
    ASSERT_STREQ(qb.e[0].name, "q");
    ASSERT_EQ(qb.e[0].position, 1);
    ASSERT(qb.e[0].call_data == &r1);
    ASSERT_EQ(qb.e[1].position, 2);
    ASSERT(qb.e[1].call_data == &r2);
    ASSERT_EQ(r1.calls, 0);
    ASSERT_EQ(a_unlock(&t, a, "q", ra.value), 0);
    run_until(&t, &r1.calls, 1, 3000);
    ASSERT_EQ(r1.status, 0);
    ASSERT_LT(qb.e[0].order, r1.order);
    ASSERT_EQ(a_unlock(&t, b, "q", r1.value), 0);
    run_until(&t, &r2.calls, 1, 3000);
    ASSERT_EQ(r2.status, 0);
    ASSERT_EQ(a_unlock(&t, b, "q", r2.value), 0);
    /* Removed: no more notices. */
    baton_async_on_queued(b, NULL, NULL);
    ra = a_lock(&t, a, "q", BATON_WAIT_FOREVER);
    ASSERT_EQ(baton_async_lock(b, "q", BATON_WAIT_FOREVER, rec_lock, &r1), 0);
    run_for(&t, 100);
    ASSERT_EQ(a_unlock(&t, a, "q", ra.value), 0);
    run_until(&t, &r1.calls, 2, 3000);
    ASSERT_EQ(r1.status, 0);
    ASSERT_EQ(a_unlock(&t, b, "q", r1.value), 0);
    ASSERT_EQ(qb.calls, 2);
    ASSERT_EQ(qa.calls, 0);
    a_close(&t, a);
    a_close(&t, b);
    tloop_done(&t);
    fake_stop(f);
}

/* The cluster never reports the bounded wait's end: the client's safety
 * timer CANCELs it at wait_ms + op_timeout_ms. */
TEST(async_safety_cancel)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *a, *b;
    struct rec ra, rb = {0}, rb2;
    int64_t t0;

    FK_SET(f, no_wait_timeouts, true);
    tloop_init(&t);
    a = a_open(&t, f->addr, 0, 0);
    b = a_open(&t, f->addr, 200, 0);
    ra = a_lock(&t, a, "x", BATON_WAIT_FOREVER);
    t0 = now_ms();
    ASSERT_EQ(baton_async_lock(b, "x", 100, rec_lock, &rb), 0);
    run_until(&t, &rb.calls, 1, 3000);
    ASSERT_EQ(rb.status, BATON_ETIMEDOUT);
    ASSERT_GE(now_ms() - t0, 290);
    ASSERT_EQ(FK_GET(f, n_cancel), 1);
    /* The wait really is gone: after the release the lock is free. */
    ASSERT_EQ(a_unlock(&t, a, "x", ra.value), 0);
    rb2 = a_lock(&t, b, "x", BATON_WAIT_TRY);
    ASSERT_EQ(rb2.status, 0);
    a_close(&t, a);
    a_close(&t, b);
    tloop_done(&t);
    fake_stop(f);
}

/* Freeing from inside a callback is deferred; the other pending call gets
 * BATON_ECANCELED exactly once, after the freeing callback. */
TEST(async_free_in_callback)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *a, *b;
    struct rec ra, rq = {0}, ry = {0};

    tloop_init(&t);
    a = a_open(&t, f->addr, 0, 0);
    b = a_open(&t, f->addr, 0, 0);
    ra = a_lock(&t, a, "x", BATON_WAIT_FOREVER);
    ASSERT_EQ(baton_async_lock(b, "x", BATON_WAIT_FOREVER, rec_lock, &rq), 0);
    run_for(&t, 50);
    ry.free_me = b;
    ASSERT_EQ(baton_async_lock(b, "y", BATON_WAIT_FOREVER, rec_lock, &ry), 0);
    run_until(&t, &ry.calls, 1, 3000);
    ASSERT_EQ(ry.status, 0);
    ASSERT_EQ(rq.calls, 1);
    ASSERT_EQ(rq.status, BATON_ECANCELED);
    ASSERT(rq.order > ry.order);
    run_for(&t, 50);
    ASSERT_EQ(ry.calls, 1);
    ASSERT_EQ(rq.calls, 1);
    ASSERT_EQ(a_unlock(&t, a, "x", ra.value), 0);
    a_close(&t, a);
    tloop_done(&t);
    fake_stop(f);
}

/* baton_async_free with calls pending: each callback runs once, inside the
 * free, with BATON_ECANCELED; the open callback too if it had not run. */
TEST(async_free_pending)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_opts o = {.endpoints = f->addr};
    baton_async_t *ac;
    struct rec ro = {0}, rl = {0}, ru = {0};

    tloop_init(&t);
    ac = a_new(&t, &o);
    ASSERT_EQ(baton_async_open(ac, rec_open, &ro), 0);
    ASSERT_EQ(baton_async_lock(ac, "f", BATON_WAIT_FOREVER, rec_lock, &rl), 0);
    ASSERT_EQ(baton_async_unlock(ac, "f", 1, rec_done, &ru), 0);
    baton_async_free(ac);
    ASSERT_EQ(ro.calls, 1);
    ASSERT_EQ(rl.calls, 1);
    ASSERT_EQ(ru.calls, 1);
    ASSERT_EQ(ro.status, BATON_ECANCELED);
    ASSERT_EQ(rl.status, BATON_ECANCELED);
    ASSERT_EQ(ru.status, BATON_ECANCELED);
    baton_async_free(NULL);
    tloop_done(&t);
    fake_stop(f);
}

TEST(async_cancel)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *a, *b;
    struct rec ra, rb = {0}, rb2;
    int other;

    tloop_init(&t);
    a = a_open(&t, f->addr, 0, 0);
    b = a_open(&t, f->addr, 0, 0);
    ra = a_lock(&t, a, "x", BATON_WAIT_FOREVER);
    ASSERT_EQ(baton_async_lock(b, "x", BATON_WAIT_FOREVER, rec_lock, &rb), 0);
    run_for(&t, 50);
    ASSERT_EQ(baton_async_cancel(b, "x", &other), BATON_ENOTFOUND);
    ASSERT_EQ(baton_async_cancel(b, "x", &rb), 0);
    ASSERT_EQ(rb.calls, 0); /* never from inside the call */
    run_until(&t, &rb.calls, 1, 3000);
    ASSERT_EQ(rb.status, BATON_ECANCELED);
    ASSERT_EQ(FK_GET(f, n_cancel), 1);
    ASSERT_EQ(a_unlock(&t, a, "x", ra.value), 0);
    rb2 = a_lock(&t, b, "x", BATON_WAIT_TRY);
    ASSERT_EQ(rb2.status, 0);
    run_for(&t, 30);
    ASSERT_EQ(rb.calls, 1);
    a_close(&t, a);
    a_close(&t, b);
    tloop_done(&t);
    fake_stop(f);
}

/* A cancel of a call that was never sent completes it without any I/O,
 * but still from the loop. */
TEST(async_cancel_unsent)
{
    struct tloop t;
    baton_opts o = {.connect_timeout_ms = 2000};
    struct rec ro = {0}, rl = {0};
    baton_async_t *ac;
    char dead[32];

    dead_addr(dead, sizeof dead);
    o.endpoints = dead;
    tloop_init(&t);
    ac = a_new(&t, &o);
    ASSERT_EQ(baton_async_open(ac, rec_open, &ro), 0);
    ASSERT_EQ(baton_async_lock(ac, "c", BATON_WAIT_FOREVER, rec_lock, &rl), 0);
    ASSERT_EQ(baton_async_cancel(ac, "c", &rl), 0);
    ASSERT_EQ(rl.calls, 0);
    run_until(&t, &rl.calls, 1, 1000);
    ASSERT_EQ(rl.status, BATON_ECANCELED);
    ASSERT_EQ(ro.calls, 0);
    baton_async_free(ac);
    ASSERT_EQ(ro.calls, 1);
    ASSERT_EQ(ro.status, BATON_ECANCELED);
    tloop_done(&t);
}

TEST(async_argument_errors)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_opts bad = {.endpoints = "nonsense"}, none = {.endpoints = " , "}, o = {.endpoints = f->addr};
    baton_async_t *ac;
    struct rec r = {0};
    char big[BATON_MAX_NAME + 2];

    memset(big, 'n', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ASSERT_EQ(baton_async_new(&bad, &ac), BATON_EINVAL);
    ASSERT(ac == NULL);
    ASSERT_EQ(baton_async_new(&none, &ac), BATON_EINVAL);
    ASSERT_EQ(baton_async_new(NULL, &ac), BATON_EINVAL);
    tloop_init(&t);
    ASSERT_EQ(baton_async_new(&o, &ac), 0);
    ASSERT_EQ(baton_async_open(ac, rec_open, &r), BATON_EINVAL); /* no adapter */
    ASSERT_EQ(baton_uv_attach(ac, &t.loop), 0);
    ASSERT_EQ(baton_uv_attach(ac, &t.loop), BATON_EBUSY);
    ASSERT_EQ(baton_async_lock(ac, "x", 0, rec_lock, &r), BATON_ESESSION); /* not opened */
    ASSERT_EQ(baton_async_open(ac, rec_open, &r), 0);
    ASSERT_EQ(baton_async_open(ac, rec_open, &r), BATON_EBUSY);
    ASSERT_EQ(baton_async_lock(ac, "", 0, rec_lock, &r), BATON_EINVAL);
    ASSERT_EQ(baton_async_lock(ac, NULL, 0, rec_lock, &r), BATON_EINVAL);
    ASSERT_EQ(baton_async_lock(ac, big, 0, rec_lock, &r), BATON_EINVAL);
    ASSERT_EQ(baton_async_lock(ac, "x", -2, rec_lock, &r), BATON_EINVAL);
    ASSERT_EQ(baton_async_unlock(ac, "", 1, rec_done, &r), BATON_EINVAL);
    run_until(&t, &r.calls, 1, 3000);
    ASSERT_EQ(r.status, 0);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

TEST(async_calls_after_close)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct rec rc = {0}, rl = {0}, rq = {0}, ra;

    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, 0);
    ra = a_lock_as(&t, ac, "held", BATON_WAIT_FOREVER, 1, 0);
    ASSERT_EQ(ra.status, 0);
    ASSERT_EQ(a_lock_start(ac, "held", BATON_WAIT_FOREVER, 2, 0, &rq), 0);
    ASSERT_EQ(baton_async_close_session(ac, rec_done, &rc), 0);
    ASSERT_EQ(baton_async_lock(ac, "x", 0, rec_lock, &rl), BATON_ECLOSED);
    ASSERT_EQ(baton_async_close_session(ac, rec_done, &rl), BATON_ECLOSED);
    run_until(&t, &rc.calls, 1, 3000);
    ASSERT_EQ(rc.status, 0);
    /* The queued call ended first, with ECANCELED. */
    ASSERT_EQ(rq.calls, 1);
    ASSERT_EQ(rq.status, BATON_ECANCELED);
    ASSERT(rq.order < rc.order);
    ASSERT_EQ(rl.calls, 0);
    baton_async_free(ac);
    tloop_done(&t);
    fake_stop(f);
}

/* close_session right after open: the session is opened, then closed. */
TEST(async_close_while_opening)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_opts o = {.endpoints = f->addr};
    baton_async_t *ac;
    struct rec ro = {0}, rl = {0}, rc = {0};

    tloop_init(&t);
    ac = a_new(&t, &o);
    ASSERT_EQ(baton_async_open(ac, rec_open, &ro), 0);
    ASSERT_EQ(baton_async_lock(ac, "w", BATON_WAIT_FOREVER, rec_lock, &rl), 0);
    ASSERT_EQ(baton_async_close_session(ac, rec_done, &rc), 0);
    run_until(&t, &rc.calls, 1, 3000);
    ASSERT_EQ(ro.calls, 1);
    ASSERT_EQ(ro.status, 0);
    ASSERT_EQ(rl.calls, 1);
    ASSERT_EQ(rl.status, 0); /* sent before the close, so granted first */
    ASSERT_EQ(rc.status, 0);
    ASSERT(ro.order < rl.order && rl.order < rc.order);
    baton_async_free(ac);
    tloop_done(&t);
    ASSERT_EQ(FK_GET(f, n_open), 1);
    ASSERT_EQ(FK_GET(f, n_close), 1);
    fake_stop(f);
}

/* Many calls in flight at once, each answered exactly once. */
TEST(async_many_pipelined)
{
    enum { N = 200 };
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    static struct rec rl[N], ru[N];
    int total = 0;
    char name[16];

    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, 0);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "m%d", i);
        ASSERT_EQ(baton_async_lock(ac, name, BATON_WAIT_FOREVER, rec_lock, &rl[i]), 0);
    }
    ASSERT_EQ(baton_async_pending(ac), N);
    for (int i = 0; i < N; i++) run_until(&t, &rl[i].calls, 1, 5000);
    for (int i = 0; i < N; i++) {
        ASSERT_EQ(rl[i].status, 0);
        snprintf(name, sizeof name, "m%d", i);
        ASSERT_EQ(baton_async_unlock(ac, name, rl[i].value, rec_done, &ru[i]), 0);
    }
    for (int i = 0; i < N; i++) run_until(&t, &ru[i].calls, 1, 5000);
    run_for(&t, 20);
    for (int i = 0; i < N; i++) {
        ASSERT_EQ(ru[i].status, 0);
        total += rl[i].calls + ru[i].calls;
    }
    ASSERT_EQ(total, 2 * N);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

/* The last ACQUIRE the fake got was an ACQUIRE2 (n2 in all so far) with
 * these flags, reentrant and fence. */
static void assert_acq(struct fake *f, int n2, uint8_t flags, uint8_t reentrant, uint64_t fence)
{
    ASSERT_EQ(FK_GET(f, n_acquire2), n2);
    ASSERT_EQ(FK_GET(f, last_acq_flags), flags);
    ASSERT_EQ(FK_GET(f, last_acq_reentrant), reentrant);
    ASSERT_UEQ(FK_GET(f, last_acq_fence), fence);
}

/* What the owners of one context make of each lock call (client/owners.c):
 * a plain ACQUIRE while nobody of the context has the name, ACQUIRE2 with
 * BATON_ACQ_OWNERS beside another owner's hold or wait (and with the fence
 * of the hold a reentrant call re-enters), BATON_EDEADLK at once for an
 * owner's own name; a hold that was lost counts for nothing. */
TEST(async_owners_on_the_wire)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct lostrec lr = {0};
    struct rec r1, rv, r2 = {0}, r, r3 = {0};
    int n;

    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, 0);
    baton_async_on_lost(ac, rec_lost, &lr);
    r1 = a_lock_as(&t, ac, "w", BATON_WAIT_FOREVER, 1, 0);
    ASSERT_EQ(r1.status, 0);
    assert_acq(f, 0, 0, 0, 0); /* nobody had it: as ever */
    rv = a_lock_as(&t, ac, "v", BATON_WAIT_FOREVER, 1, 0);
    ASSERT_EQ(rv.status, 0);
    /* Another owner queues behind owner 1. */
    ASSERT_EQ(a_lock_start(ac, "w", BATON_WAIT_FOREVER, 2, 0, &r2), 0);
    RUN_UNTIL_FK(&t, f, n_acquire, 3, 3000);
    assert_acq(f, 1, BATON_ACQ_OWNERS, 0, 0);
    /* Owner 1 re-enters its hold of "w", named by its fence, past the
     * waiter; of "v", which only it has, as ever. */
    r = a_lock_as(&t, ac, "w", BATON_WAIT_FOREVER, 1, 1);
    ASSERT_EQ(r.status, 0);
    ASSERT_UEQ(r.value, r1.value);
    assert_acq(f, 2, BATON_ACQ_OWNERS, 1, r1.value);
    r = a_lock_as(&t, ac, "v", BATON_WAIT_FOREVER, 1, 1);
    ASSERT_EQ(r.status, 0);
    ASSERT_UEQ(r.value, rv.value);
    assert_acq(f, 2, 0, 1, 0);
    /* Owner 2 only waits: not even reentrant. Owner 0 is every owner. */
    n = FK_GET(f, n_acquire);
    ASSERT_EQ(a_lock_as(&t, ac, "w", BATON_WAIT_TRY, 2, 0).status, BATON_EDEADLK);
    r = a_lock_as(&t, ac, "w", BATON_WAIT_TRY, 2, 1);
    ASSERT_EQ(r.status, BATON_EDEADLK);
    ASSERT(strstr(r.err, "reentrant") != NULL);
    ASSERT_EQ(a_lock_as(&t, ac, "w", BATON_WAIT_TRY, 0, 0).status, BATON_EDEADLK);
    ASSERT_EQ(a_lock_as(&t, ac, "v", BATON_WAIT_TRY, 0, 0).status, BATON_EDEADLK);
    ASSERT_EQ(FK_GET(f, n_acquire), n); /* none of these was sent */
    /* A third owner's reentrant call has nothing of its own to re-enter. */
    ASSERT_EQ(a_lock_start(ac, "w", BATON_WAIT_FOREVER, 3, 1, &r3), 0);
    RUN_UNTIL_FK(&t, f, n_acquire, n + 1, 3000);
    assert_acq(f, 3, BATON_ACQ_OWNERS, 0, 0);
    /* Owner 0's reentrant call re-enters the context's hold (owner 1's). */
    r = a_lock_as(&t, ac, "w", BATON_WAIT_FOREVER, 0, 1);
    ASSERT_EQ(r.status, 0);
    ASSERT_UEQ(r.value, r1.value);
    assert_acq(f, 4, BATON_ACQ_OWNERS, 1, r1.value);
    /* Three handles of owner 1's hold: the last unlock hands it on. */
    ASSERT_EQ(a_unlock(&t, ac, "w", r1.value), 0);
    ASSERT_EQ(a_unlock(&t, ac, "w", r1.value), 0);
    ASSERT_EQ(r2.calls, 0);
    ASSERT_EQ(a_unlock(&t, ac, "w", r1.value), 0);
    run_until(&t, &r2.calls, 1, 3000);
    ASSERT_EQ(r2.status, 0);
    ASSERT_EQ(a_unlock(&t, ac, "w", r2.value), 0);
    run_until(&t, &r3.calls, 1, 3000);
    ASSERT_EQ(a_unlock(&t, ac, "w", r3.value), 0);
    /* A lost hold is the session's no longer: a plain ACQUIRE again. */
    ASSERT_EQ(a_unlock(&t, ac, "v", rv.value), 0);
    fk_force(f, "v");
    run_until(&t, &lr.calls, 1, 3000);
    n = FK_GET(f, n_acquire2);
    r = a_lock_as(&t, ac, "v", BATON_WAIT_FOREVER, 1, 0);
    ASSERT_EQ(r.status, 0);
    assert_acq(f, n, 0, 0, 0);
    ASSERT_EQ(a_unlock(&t, ac, "v", r.value), 0);
    ASSERT_EQ(baton_async_unlock(ac, "v", rv.value, NULL, NULL), BATON_ELOST);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(30);
    RUN(async_open_close);
    RUN(async_lock_trylock_unlock);
    RUN(async_queued_waiter_granted_by_push);
    RUN(async_queued_callback);
    RUN(async_safety_cancel);
    RUN(async_free_in_callback);
    RUN(async_free_pending);
    RUN(async_cancel);
    RUN(async_cancel_unsent);
    RUN(async_argument_errors);
    RUN(async_calls_after_close);
    RUN(async_close_while_opening);
    RUN(async_many_pipelined);
    RUN(async_owners_on_the_wire);
    return runner_done();
}
