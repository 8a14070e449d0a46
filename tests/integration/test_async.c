/*
 * test_async.c -- the async client API (include/baton/baton_async.h) on a libuv
 * loop, against three real batond processes on 127.0.0.1
 * (tests/lib/cluster.h starts and always stops them).
 *
 * Each test drives a private loop, counts every callback and checks the
 * exact numbers, and ends with every handle closed and uv_loop_close() == 0.
 * Callbacks assert directly: a failed assertion ends the test process, and
 * the harness cleans the cluster up.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "baton/adapters/libuv.h"
#include "baton/baton_async.h"
#include "proto/msg.h"
#include "tests/lib/aclient.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/jsonget.h"
#include "tests/lib/runner.h"
#include "tests/lib/tloop.h"

static struct cluster C;

static void start3(void)
{
    ASSERT_EQ(cluster_start(&C, 3), 0);
    ASSERT_GE(cluster_wait_leader(&C, 15000), 0);
}

/* ---- one call each (tests/lib/tloop.h, tests/lib/aclient.h) ------------------ */

/* A context on t's loop with its session open (the open callback is
 * checked here: once, status 0, the context's session id). */
static baton_async_t *a_open(struct tloop *t, const char *client_name)
{
    baton_opts o = {.endpoints = cluster_endpoints(&C), .client_name = client_name,
                    .connect_timeout_ms = 10000};
    struct rec r = {0};
    baton_async_t *ac = a_new(t, &o);

    ASSERT_EQ(baton_async_open(ac, rec_open, &r), 0);
    run_until(t, &r.calls, 1, 10000);
    if (r.status != 0)
        FAIL("open %s: %s (%s)", client_name, baton_err_name(r.status), baton_async_errmsg(ac));
    ASSERT_NE(r.value, 0);
    ASSERT_UEQ(r.value, baton_async_session_id(ac));
    run_for(t, 20);
    ASSERT_EQ(r.calls, 1);
    return ac;
}

/* Lock `name` (waiting as long as it takes) and return the fence. */
static uint64_t a_lock(struct tloop *t, baton_async_t *ac, const char *name)
{
    struct rec r = {0};

    ASSERT_EQ(baton_async_lock(ac, name, BATON_WAIT_FOREVER, rec_lock, &r), 0);
    run_until(t, &r.calls, 1, 10000);
    if (r.status != 0)
        FAIL("lock %s: %s (%s)", name, baton_err_name(r.status), baton_async_errmsg(ac));
    ASSERT_STREQ(r.name, name);
    ASSERT_NE(r.value, 0);
    return r.value;
}

/* Close ac's session (its callback must run once, with 0) and free it. */
static void a_close(struct tloop *t, baton_async_t *ac)
{
    struct rec r = {0};

    ASSERT_EQ(baton_async_close_session(ac, rec_done, &r), 0);
    run_until(t, &r.calls, 1, 10000);
    ASSERT_EQ(r.status, 0);
    baton_async_free(ac);
    ASSERT_EQ(r.calls, 1);
}

/*
 * Keep the loop running (so that the contexts send what they queued and
 * keep their sessions alive) and ask batonctl, between turns, how many
 * waiters lock `name` has, until it has n; fail after ms milliseconds.
 * batonctl runs synchronously, which stalls the loop for a moment: harmless
 * next to a 10 s lease.
 */
static void wait_waiters(struct tloop *t, const char *name, int64_t n, unsigned ms)
{
    int64_t end = now_ms() + ms;
    int64_t got = -1;

    while (now_ms() < end) {
        run_for(t, 20);
        got = cluster_lock_i64(&C, name, "total_waiters");
        if (got == n) return;
    }
    FAIL("lock %s has %lld waiters, not %lld, after %u ms", name, (long long)got, (long long)n, ms);
}

/* ---- (a) one of each call, every callback counted ------------------------------ */

TEST(basic_callbacks_counted_exactly)
{
    baton_opts o = {.client_name = "basic", .connect_timeout_ms = 10000};
    struct rec open = {0}, lock = {0}, busy = {0}, unlock = {0}, again = {0}, close = {0};
    struct rec late = {0};
    struct ctl_result r;
    struct tloop t;
    baton_async_t *ac;
    uint64_t session;

    start3();
    tloop_init(&t);
    o.endpoints = cluster_endpoints(&C);
    ac = a_new(&t, &o);
    ASSERT_EQ(baton_async_session_id(ac), 0);

    /* Open: a public call never runs a callback before it returns. */
    ASSERT_EQ(baton_async_open(ac, rec_open, &open), 0);
    ASSERT_EQ(open.calls, 0);
    ASSERT_EQ(baton_async_pending(ac), 1);
    run_until(&t, &open.calls, 1, 10000);
    ASSERT_EQ(open.status, 0);
    session = baton_async_session_id(ac);
    ASSERT_NE(session, 0);
    ASSERT_UEQ(open.value, session);
    ASSERT_EQ(baton_async_pending(ac), 0);

    /* Lock: granted at once, and the cluster agrees who holds it. */
    ASSERT_EQ(baton_async_lock(ac, "basic", BATON_WAIT_FOREVER, rec_lock, &lock), 0);
    ASSERT_EQ(lock.calls, 0);
    ASSERT_EQ(baton_async_pending(ac), 1);
    run_until(&t, &lock.calls, 1, 10000);
    ASSERT_EQ(lock.status, 0);
    ASSERT_STREQ(lock.name, "basic");
    ASSERT_NE(lock.value, 0);
    ASSERT_EQ(cluster_lock_info(&C, "basic", &r), 0);
    ASSERT_UEQ(json_i64(r.out, "holder_session", 0), session);
    ASSERT_UEQ(json_i64(r.out, "fence", 0), lock.value);
    ctl_result_free(&r);

    /* A second call of the same session for the lock it holds would wait
     * behind itself: BATON_EDEADLK at once, and nothing stays queued. */
    ASSERT_EQ(baton_async_lock(ac, "basic", BATON_WAIT_FOREVER, rec_lock, &busy), 0);
    run_until(&t, &busy.calls, 1, 10000);
    ASSERT_EQ(busy.status, BATON_EDEADLK);
    ASSERT_UEQ(busy.value, 0);
    ASSERT_STREQ(busy.name, "basic");
    ASSERT_EQ(cluster_lock_info(&C, "basic", &r), 0);
    ASSERT_EQ(json_i64(r.out, "total_waiters", -1), 0);
    ctl_result_free(&r);

    /* Unlock, then unlock the same grant again: the cluster no longer
     * counts the session as its holder. */
    ASSERT_EQ(baton_async_unlock(ac, "basic", lock.value, rec_done, &unlock), 0);
    ASSERT_EQ(unlock.calls, 0);
    run_until(&t, &unlock.calls, 1, 10000);
    ASSERT_EQ(unlock.status, 0);
    ASSERT_EQ(baton_async_unlock(ac, "basic", lock.value, rec_done, &again), 0);
    run_until(&t, &again.calls, 1, 10000);
    ASSERT_EQ(again.status, BATON_ENOTHELD);
    ASSERT_EQ(cluster_lock_info(&C, "basic", &r), 0);
    ASSERT_EQ(json_i64(r.out, "holder_session", -1), 0);
    ctl_result_free(&r);

    /* Close the session; from then on new calls are refused and their
     * callbacks never run. */
    ASSERT_EQ(baton_async_close_session(ac, rec_done, &close), 0);
    ASSERT_EQ(baton_async_lock(ac, "basic", BATON_WAIT_FOREVER, rec_lock, &late), BATON_ECLOSED);
    ASSERT_EQ(baton_async_unlock(ac, "basic", lock.value, rec_done, &late), BATON_ECLOSED);
    ASSERT_EQ(close.calls, 0);
    run_until(&t, &close.calls, 1, 10000);
    ASSERT_EQ(close.status, 0);
    ASSERT_EQ(baton_async_pending(ac), 0);
    ASSERT_EQ(baton_async_close_session(ac, rec_done, &late), BATON_ECLOSED);

    /* Nothing more runs, neither from the loop nor from the free. */
    run_for(&t, 100);
    baton_async_free(ac);
    ASSERT_EQ(open.calls, 1);
    ASSERT_EQ(lock.calls, 1);
    ASSERT_EQ(busy.calls, 1);
    ASSERT_EQ(unlock.calls, 1);
    ASSERT_EQ(again.calls, 1);
    ASSERT_EQ(close.calls, 1);
    ASSERT_EQ(late.calls, 0);
    tloop_done(&t);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* ---- (b) a hundred sessions waiting on one lock, granted FIFO ---------------- */

#define CROWD 100

/* One of the CROWD lock calls. */
struct waiter {
    int idx;   /* its place in the order of the calls */
    int calls; /* its callback's runs */
};

static struct {
    struct waiter w[CROWD];
    int grants;             /* grant callbacks so far */
    int order[CROWD];       /* order[k]: idx of the k-th grant */
    uint64_t fence[CROWD];  /* fence[k]: the k-th grant's fence */
    int unlocks;            /* unlock callbacks */
    int unlock_errors;      /* ... with a non-zero status */
} crowd;

static void crowd_unlocked(baton_async_t *ac, int status, void *data)
{
    (void)data;
    crowd.unlocks++;
    if (status != 0) {
        fprintf(stderr, "# unlock: %s (%s)\n", baton_err_name(status), baton_async_errmsg(ac));
        crowd.unlock_errors++;
    }
}

/* A waiter's turn came: record it and release at once, which grants the
 * lock to the next waiter. */
static void crowd_granted(baton_async_t *ac, int status, const char *name, uint64_t fence,
                          void *data)
{
    struct waiter *w = data;

    w->calls++;
    if (status != 0)
        FAIL("waiter %d: %s (%s)", w->idx, baton_err_name(status), baton_async_errmsg(ac));
    ASSERT_STREQ(name, "crowd");
    ASSERT_LT(crowd.grants, CROWD);
    crowd.order[crowd.grants] = w->idx;
    crowd.fence[crowd.grants] = fence;
    crowd.grants++;
    ASSERT_EQ(baton_async_unlock(ac, name, fence, crowd_unlocked, NULL), 0);
}

TEST(hundred_sessions_waiting_on_one_lock_granted_in_call_order)
{
    struct rec unlock = {0};
    struct ctl_result r;
    struct tloop t;
    baton_async_t *holder, *ac[CROWD];
    uint64_t f0;
    int64_t t0;

    start3();
    tloop_init(&t);
    holder = a_open(&t, "crowd-holder");
    f0 = a_lock(&t, holder, "crowd");

    /* CROWD sessions (a session may wait for a lock once: a second call
     * of the same session would be BATON_EDEADLK), each call queued before
     * the next is made, so that call order is queue order. */
    for (int i = 0; i < CROWD; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "crowd-%d", i);
        ac[i] = a_open(&t, nm);
        crowd.w[i].idx = i;
        ASSERT_EQ(baton_async_lock(ac[i], "crowd", BATON_WAIT_FOREVER, crowd_granted,
                                   &crowd.w[i]),
                  0);
        wait_waiters(&t, "crowd", i + 1, 10000);
    }
    ASSERT_EQ(crowd.grants, 0);
    for (int i = 0; i < CROWD; i++) ASSERT_EQ(baton_async_pending(ac[i]), 1);

    /* Release the first holder: the waiters now pass the lock on, one at a
     * time, each releasing as soon as it is granted. */
    t0 = now_ms();
    ASSERT_EQ(baton_async_unlock(holder, "crowd", f0, rec_done, &unlock), 0);
    run_until(&t, &crowd.unlocks, CROWD, 15000);
    fprintf(stderr, "# %d grants and releases in %" PRId64 " ms\n", CROWD, now_ms() - t0);
    ASSERT_EQ(unlock.calls, 1);
    ASSERT_EQ(unlock.status, 0);

    /* Exactly CROWD grants, one per call, in the order of the calls, with
     * strictly increasing fences above the first holder's. */
    run_for(&t, 100);
    ASSERT_EQ(crowd.grants, CROWD);
    ASSERT_EQ(crowd.unlocks, CROWD);
    ASSERT_EQ(crowd.unlock_errors, 0);
    for (int i = 0; i < CROWD; i++) ASSERT_EQ(crowd.w[i].calls, 1);
    for (int k = 0; k < CROWD; k++) {
        if (crowd.order[k] != k) FAIL("grant %d went to call %d", k, crowd.order[k]);
        ASSERT_ULT(k == 0 ? f0 : crowd.fence[k - 1], crowd.fence[k]);
    }
    for (int i = 0; i < CROWD; i++) ASSERT_EQ(baton_async_pending(ac[i]), 0);
    ASSERT_EQ(baton_async_pending(holder), 0);
    ASSERT_EQ(cluster_lock_info(&C, "crowd", &r), 0);
    ASSERT_EQ(json_i64(r.out, "total_waiters", -1), 0);
    ASSERT_EQ(json_i64(r.out, "holder_session", -1), 0);
    ctl_result_free(&r);

    for (int i = 0; i < CROWD; i++) a_close(&t, ac[i]);
    a_close(&t, holder);
    ASSERT_EQ(crowd.grants, CROWD);
    tloop_done(&t);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* ---- (c) refused calls never call back; freeing from a callback ---------------- */

/* Callbacks of calls that returned an error: none of them may ever run. */
static int never_calls;

static void never_open(baton_async_t *ac, int status, uint64_t session, void *data)
{
    (void)ac, (void)session, (void)data;
    fprintf(stderr, "# open callback of a refused call ran (%s)\n", baton_err_name(status));
    never_calls++;
}

static void never_lock(baton_async_t *ac, int status, const char *name, uint64_t fence, void *data)
{
    (void)ac, (void)fence, (void)data;
    fprintf(stderr, "# lock callback of a refused call ran (%s, %s)\n", name,
            baton_err_name(status));
    never_calls++;
}

static void never_done(baton_async_t *ac, int status, void *data)
{
    (void)ac, (void)data;
    fprintf(stderr, "# done callback of a refused call ran (%s)\n", baton_err_name(status));
    never_calls++;
}

static int lost_calls;

static void count_lost(baton_async_t *ac, const char *lock, uint64_t fence, int why, void *data)
{
    (void)ac, (void)data;
    fprintf(stderr, "# lost %s (fence %" PRIu64 "): %s\n", lock, fence, baton_err_name(why));
    lost_calls++;
}

#define VICTIMS 5

/* The victim context: VICTIMS lock calls queued behind another holder,
 * and one lock call (the trigger) whose callback frees the context. */
static struct {
    struct rec waiter[VICTIMS];
    struct rec trigger;
    struct rec late;       /* a lock call made after the free, in the trigger */
    int late_rv;           /* what that call returned */
    int refused_in_cancel; /* calls refused from inside the ECANCELED callbacks */
} victim;

/* A queued waiter of the freed context: it must end with BATON_ECANCELED,
 * after the trigger's callback has returned. New calls are refused now. */
static void victim_waiter(baton_async_t *ac, int status, const char *name, uint64_t fence,
                          void *data)
{
    struct rec *r = data;

    rec_lock(ac, status, name, fence, data);
    ASSERT_EQ(r->calls, 1);
    ASSERT_EQ(victim.trigger.calls, 1);
    ASSERT_EQ(status, BATON_ECANCELED);
    ASSERT_UEQ(fence, 0);
    ASSERT(strncmp(name, "queue", 5) == 0);
    ASSERT(baton_async_errmsg(ac)[0] != '\0');
    if (baton_async_lock(ac, "queue", BATON_WAIT_FOREVER, never_lock, NULL) == BATON_ECLOSED)
        victim.refused_in_cancel++;
    if (baton_async_unlock(ac, "trigger", victim.trigger.value, never_done, NULL) == BATON_ECLOSED)
        victim.refused_in_cancel++;
    baton_async_free(ac); /* a second free is ignored */
}

/* The trigger lock was granted: free the context from inside its own
 * callback. The free is deferred, so nothing else may run before this
 * callback returns. */
static void victim_trigger(baton_async_t *ac, int status, const char *name, uint64_t fence,
                           void *data)
{
    rec_lock(ac, status, name, fence, data);
    ASSERT_EQ(status, 0);
    ASSERT_EQ(baton_async_pending(ac), VICTIMS);
    baton_async_free(ac);
    for (int i = 0; i < VICTIMS; i++) ASSERT_EQ(victim.waiter[i].calls, 0);
    /* A call made after the free, still inside the callback: either it is
     * refused (and never calls back) or it is cancelled with the rest. */
    victim.late_rv = baton_async_lock(ac, "queue", BATON_WAIT_FOREVER, rec_lock, &victim.late);
    for (int i = 0; i < VICTIMS; i++) ASSERT_EQ(victim.waiter[i].calls, 0);
    ASSERT_EQ(victim.late.calls, 0);
}

TEST(refused_calls_never_call_back_and_free_inside_callback_is_deferred)
{
    char long_name[258];
    baton_opts o = {.client_name = "refused", .connect_timeout_ms = 10000};
    struct rec hold_unlock = {0}, other = {0};
    struct tloop t;
    baton_async_t *ac, *holder, *other_ac;
    uint64_t held[VICTIMS];
    char qname[VICTIMS][32];

    start3();
    tloop_init(&t);
    o.endpoints = cluster_endpoints(&C);

    /* A context without an adapter cannot be opened; one that was never
     * opened has no session for lock calls. */
    ASSERT_EQ(baton_async_new(&o, &ac), 0);
    ASSERT_EQ(baton_async_open(ac, never_open, NULL), BATON_EINVAL);
    ASSERT_EQ(baton_async_lock(ac, "x", BATON_WAIT_FOREVER, never_lock, NULL), BATON_ESESSION);
    ASSERT_EQ(baton_async_unlock(ac, "x", 1, never_done, NULL), BATON_ESESSION);
    ASSERT_EQ(baton_async_close_session(ac, never_done, NULL), BATON_ESESSION);
    ASSERT_EQ(baton_uv_attach(ac, &t.loop), 0);
    ASSERT_EQ(baton_async_lock(ac, "x", BATON_WAIT_FOREVER, never_lock, NULL), BATON_ESESSION);
    baton_async_free(ac);

    /* Bad arguments on an open context. long_name is first one byte longer
     * than a lock name may be (256 bytes). */
    memset(long_name, 'n', 257);
    long_name[257] = '\0';
    ac = a_open(&t, "refused");
    ASSERT_EQ(baton_async_open(ac, never_open, NULL), BATON_EBUSY);
    ASSERT_EQ(baton_uv_attach(ac, &t.loop), BATON_EBUSY);
    ASSERT_EQ(baton_async_lock(ac, "", BATON_WAIT_FOREVER, never_lock, NULL), BATON_EINVAL);
    ASSERT_EQ(baton_async_lock(ac, NULL, BATON_WAIT_FOREVER, never_lock, NULL), BATON_EINVAL);
    ASSERT_EQ(baton_async_lock(ac, long_name, BATON_WAIT_FOREVER, never_lock, NULL), BATON_EINVAL);
    ASSERT_EQ(baton_async_lock(ac, "x", -2, never_lock, NULL), BATON_EINVAL);
    ASSERT_EQ(baton_async_unlock(ac, "", 1, never_done, NULL), BATON_EINVAL);
    ASSERT_EQ(baton_async_unlock(ac, long_name, 1, never_done, NULL), BATON_EINVAL);
    ASSERT_EQ(baton_async_cancel(ac, "", NULL), BATON_EINVAL);
    ASSERT_EQ(baton_async_cancel(ac, "nobody-waits", NULL), BATON_ENOTFOUND);
    /* The longest legal name (256 bytes) is fine. */
    long_name[256] = '\0';
    ASSERT_EQ(baton_async_lock(ac, long_name, 0, rec_lock, &other), 0);
    run_until(&t, &other.calls, 1, 10000);
    ASSERT_EQ(other.status, 0);
    ASSERT_EQ(baton_async_pending(ac), 0);
    a_close(&t, ac);
    run_for(&t, 100);
    ASSERT_EQ(never_calls, 0);

    /* The victim: VICTIMS waiters queue behind `holder` on "queue0"..
     * (one each: a session waits for a lock once); then the trigger's
     * callback frees the context. */
    holder = a_open(&t, "holder");
    for (int i = 0; i < VICTIMS; i++) {
        snprintf(qname[i], sizeof qname[i], "queue%d", i);
        held[i] = a_lock(&t, holder, qname[i]);
    }
    ac = a_open(&t, "victim");
    baton_async_on_lost(ac, count_lost, NULL);
    for (int i = 0; i < VICTIMS; i++) {
        struct rec *w = &victim.waiter[i];
        ASSERT_EQ(baton_async_lock(ac, qname[i], BATON_WAIT_FOREVER, victim_waiter, w), 0);
    }
    for (int i = 0; i < VICTIMS; i++) wait_waiters(&t, qname[i], 1, 10000);
    ASSERT_EQ(baton_async_lock(ac, "trigger", BATON_WAIT_FOREVER, victim_trigger, &victim.trigger),
              0);
    run_until(&t, &victim.trigger.calls, 1, 10000);

    /* The free ran when the trigger's callback returned: every waiter got
     * BATON_ECANCELED exactly once, calls from their callbacks were
     * refused, and no lock was reported lost (the trigger lock was held). */
    ASSERT_EQ(victim.trigger.calls, 1);
    for (int i = 0; i < VICTIMS; i++) {
        ASSERT_EQ(victim.waiter[i].calls, 1);
        ASSERT_EQ(victim.waiter[i].status, BATON_ECANCELED);
    }
    ASSERT_EQ(victim.refused_in_cancel, 2 * VICTIMS);
    if (victim.late_rv == 0) {
        ASSERT_EQ(victim.late.calls, 1);
        ASSERT_EQ(victim.late.status, BATON_ECANCELED);
    } else {
        ASSERT_EQ(victim.late.calls, 0);
    }
    fprintf(stderr, "# a lock call after a deferred free returned %s\n",
            victim.late_rv ? baton_err_name(victim.late_rv) : "0");

    /* A free outside any callback runs the pending callbacks before it
     * returns. The victim's session still lives in the cluster (its waits
     * stay queued until its lease runs out), so `other` is waiter 2. */
    other_ac = a_open(&t, "other");
    memset(&other, 0, sizeof other);
    ASSERT_EQ(baton_async_lock(other_ac, qname[0], BATON_WAIT_FOREVER, rec_lock, &other), 0);
    wait_waiters(&t, qname[0], 2, 10000);
    ASSERT_EQ(other.calls, 0);
    baton_async_free(other_ac);
    ASSERT_EQ(other.calls, 1);
    ASSERT_EQ(other.status, BATON_ECANCELED);

    for (int i = 0; i < VICTIMS; i++) {
        memset(&hold_unlock, 0, sizeof hold_unlock);
        ASSERT_EQ(baton_async_unlock(holder, qname[i], held[i], rec_done, &hold_unlock), 0);
        run_until(&t, &hold_unlock.calls, 1, 10000);
        ASSERT_EQ(hold_unlock.status, 0);
    }
    a_close(&t, holder);

    run_for(&t, 100);
    ASSERT_EQ(victim.trigger.calls, 1);
    for (int i = 0; i < VICTIMS; i++) ASSERT_EQ(victim.waiter[i].calls, 1);
    ASSERT_EQ(other.calls, 1);
    ASSERT_EQ(hold_unlock.calls, 1);
    ASSERT_EQ(never_calls, 0);
    ASSERT_EQ(lost_calls, 0);
    tloop_done(&t);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* ---- (d) one session far ahead of its answers ---------------------------------- */

/* More try-locks at once than the cluster keeps results of one session
 * (BATON_MAX_UNACKED), with BATON_MAX_KEEP waits standing meanwhile. */
#define PIPELINED (2 * BATON_MAX_UNACKED + 800)

static struct {
    int granted;  /* lock callbacks with status 0 */
    int unlocked; /* unlock callbacks with status 0 */
    int errors;   /* callbacks with any other status */
    int settled;  /* calls done with: unlocked, or failed */
} piped;

static void pipe_unlocked(baton_async_t *ac, int status, void *data)
{
    (void)data;
    piped.settled++;
    if (status == 0) {
        piped.unlocked++;
    } else if (piped.errors++ < 5) {
        fprintf(stderr, "# unlock: %s (%s)\n", baton_err_name(status), baton_async_errmsg(ac));
    }
}

/* Granted: unlock at once, from the callback. */
static void pipe_granted(baton_async_t *ac, int status, const char *name, uint64_t fence,
                         void *data)
{
    (void)data;
    if (status != 0) {
        piped.settled++;
        if (piped.errors++ < 5)
            fprintf(stderr, "# lock %s: %s (%s)\n", name, baton_err_name(status),
                    baton_async_errmsg(ac));
        return;
    }
    piped.granted++;
    ASSERT_EQ(baton_async_unlock(ac, name, fence, pipe_unlocked, NULL), 0);
}

/*
 * One session makes PIPELINED try-locks of different locks at once, each
 * unlocked as soon as it is granted, while BATON_MAX_KEEP of its lock
 * calls wait for locks another session holds. The cluster refuses a
 * session's request that runs BATON_MAX_UNACKED or more ahead of what it
 * acknowledged (docs/operations.md, "Limits"): libbaton holds its
 * ACQUIREs back so that it never does, and every call succeeds.
 */
TEST(pipelined_calls_never_reach_the_cached_results_bound)
{
    uint64_t fences[BATON_MAX_KEEP];
    struct rec done[BATON_MAX_KEEP];
    struct tloop t;
    baton_async_t *ac, *holder;
    char name[32];
    int64_t t0;

    start3();
    tloop_init(&t);
    holder = a_open(&t, "pipe-holder");
    {
        /* Generous lease and op timeout: thousands of requests on one
         * connection take the nodes, which share the machine's cores with
         * the test, a while. */
        baton_opts o = {.endpoints = cluster_endpoints(&C), .client_name = "pipe",
                        .connect_timeout_ms = 10000, .op_timeout_ms = 60000,
                        .session_ttl_ms = 60000};
        struct rec r = {0};

        ac = a_new(&t, &o);
        ASSERT_EQ(baton_async_open(ac, rec_open, &r), 0);
        run_until(&t, &r.calls, 1, 10000);
        ASSERT_EQ(r.status, 0);
    }
    for (int i = 0; i < BATON_MAX_KEEP; i++) {
        snprintf(name, sizeof name, "pipe-held/%d", i);
        fences[i] = a_lock(&t, holder, name);
        ASSERT_EQ(baton_async_lock(ac, name, BATON_WAIT_FOREVER, pipe_granted, NULL), 0);
    }
    wait_waiters(&t, "pipe-held/63", 1, 10000);
    t0 = now_ms();
    for (int i = 0; i < PIPELINED; i++) {
        snprintf(name, sizeof name, "pipe/%d", i);
        ASSERT_EQ(baton_async_lock(ac, name, BATON_WAIT_TRY, pipe_granted, NULL), 0);
    }
    run_until(&t, &piped.settled, PIPELINED, 90000);
    fprintf(stderr, "# %d try-locks and unlocks pipelined in %" PRId64 " ms\n", PIPELINED,
            now_ms() - t0);
    ASSERT_EQ(piped.errors, 0);
    ASSERT_EQ(piped.granted, PIPELINED);
    ASSERT_EQ(baton_async_pending(ac), BATON_MAX_KEEP);

    /* The waits stood throughout; now they are granted. */
    memset(done, 0, sizeof done);
    for (int i = 0; i < BATON_MAX_KEEP; i++) {
        snprintf(name, sizeof name, "pipe-held/%d", i);
        ASSERT_EQ(baton_async_unlock(holder, name, fences[i], rec_done, &done[i]), 0);
    }
    run_until(&t, &piped.settled, PIPELINED + BATON_MAX_KEEP, 30000);
    ASSERT_EQ(piped.errors, 0);
    for (int i = 0; i < BATON_MAX_KEEP; i++) ASSERT_EQ(done[i].status, 0);
    a_close(&t, ac);
    a_close(&t, holder);
    tloop_done(&t);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* ---- (e) a grant read after the lease ran out ------------------------------------ */

/*
 * A waiter's loop stops (a process stopped, a stalled thread) while the
 * lock is granted to it; its session expires in the cluster and the lock
 * moves on. When the loop runs again, a loop that sees the socket readable
 * before its timer hands the grant pushed long ago to the library first.
 * The library must end the session (its lease ran out by its own clock)
 * before it believes anything it reads: the wait ends BATON_ESESSION,
 * never as a grant of a lock that another holds by now.
 */
TEST(grant_read_after_the_lease_ran_out_is_not_a_hold)
{
    struct tloop t, th;
    baton_opts o = {0};
    struct rec wait = {0}, done = {0};
    baton_async_t *ac, *holder;
    uint64_t fence;

    start3();
    tloop_init(&t);
    tloop_init(&th);
    holder = a_open(&th, "holder");
    fence = a_lock(&th, holder, "stale");
    o.endpoints = cluster_endpoints(&C);
    o.client_name = "stopped";
    o.connect_timeout_ms = 10000;
    o.session_ttl_ms = 2000;
    ac = a_open_with(&t, &o);
    ASSERT_EQ(baton_async_lock(ac, "stale", BATON_WAIT_FOREVER, rec_lock, &wait), 0);
    wait_waiters(&t, "stale", 1, 5000);

    /* t stops. The holder lets go: the grant is pushed to ac, unread. */
    ASSERT_EQ(baton_async_unlock(holder, "stale", fence, rec_done, &done), 0);
    run_until(&th, &done.calls, 1, 5000);
    ASSERT_EQ(done.status, 0);
    run_for(&th, 4000); /* past ac's 2 s lease: expired in the cluster */
    fence = a_lock(&th, holder, "stale");

    /* t runs again, its socket first. */
    baton_async_handle_read(ac);
    run_for(&t, 300);
    ASSERT_EQ(wait.calls, 1);
    if (wait.status == 0)
        FAIL("the stopped waiter was told it holds \"stale\" (fence %llu) while the holder "
             "does", (unsigned long long)wait.value);
    ASSERT_EQ(wait.status, BATON_ESESSION);
    baton_async_free(ac);
    memset(&done, 0, sizeof done);
    ASSERT_EQ(baton_async_unlock(holder, "stale", fence, rec_done, &done), 0);
    run_until(&th, &done.calls, 1, 5000);
    ASSERT_EQ(done.status, 0);
    a_close(&th, holder);
    tloop_done(&t);
    tloop_done(&th);
    ASSERT_EQ(cluster_stop(&C), 0);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(120);
    RUN(basic_callbacks_counted_exactly);
    RUN(hundred_sessions_waiting_on_one_lock_granted_in_call_order);
    RUN(refused_calls_never_call_back_and_free_inside_callback_is_deferred);
    RUN(pipelined_calls_never_reach_the_cached_results_bound);
    RUN(grant_read_after_the_lease_ran_out_is_not_a_hold);
    return runner_done();
}
