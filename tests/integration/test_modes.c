/*
 * test_modes.c -- lock modes against three real batond processes, through
 * libbaton (async and blocking) and batonctl: shared holders together and
 * an exclusive request waiting for all of them, a semaphore of 3 among 5
 * clients, reentrant handles, BATON_EDEADLK, batonctl lock --shared and
 * lock-info's output, and a leader killed while shared holders and
 * waiters exist, after which the grants are still right.
 *
 * No timing is asserted: "still waits" is read from the cluster's state
 * (lock-info) after the events that must not grant it have been applied.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "baton/baton.h"
#include "baton/baton_async.h"
#include "tests/lib/aclient.h"
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

static baton_async_t *a_open(struct tloop *t, const char *client_name)
{
    baton_opts o = {.endpoints = cluster_endpoints(&C), .client_name = client_name,
                    .connect_timeout_ms = 10000, .session_ttl_ms = 15000};

    return a_open_with(t, &o);
}

/* Ask for name in mode with limit; r records the callback. */
static void a_ask(baton_async_t *ac, const char *name, uint8_t mode, uint32_t limit,
                  struct rec *r)
{
    baton_lock_args a = {.wait_ms = BATON_WAIT_FOREVER, .mode = mode, .limit = limit};

    memset(r, 0, sizeof *r);
    ASSERT_EQ(baton_async_lock_with(ac, name, &a, rec_lock, r), 0);
}

static void a_granted(struct tloop *t, baton_async_t *ac, struct rec *r)
{
    run_until(t, &r->calls, 1, 15000);
    if (r->status != 0) FAIL("lock: %s (%s)", baton_err_name(r->status), baton_async_errmsg(ac));
}

static void a_unlock(struct tloop *t, baton_async_t *ac, const char *name, uint64_t fence)
{
    struct rec r = {0};

    ASSERT_EQ(baton_async_unlock(ac, name, fence, rec_done, &r), 0);
    run_until(t, &r.calls, 1, 15000);
    ASSERT_EQ(r.status, 0);
}

static void a_close(struct tloop *t, baton_async_t *ac)
{
    struct rec r = {0};

    ASSERT_EQ(baton_async_close_session(ac, rec_done, &r), 0);
    run_until(t, &r.calls, 1, 15000);
    baton_async_free(ac);
}

static int64_t info_i64(const char *name, const char *key)
{
    return cluster_lock_i64(&C, name, key);
}

/* Run t's loop (so that its contexts send and read) until lock-info's
 * `key` of name is want; FAIL after 15 s. */
static void wait_info(struct tloop *t, const char *name, const char *key, int64_t want)
{
    for (int i = 0; i < 150; i++) {
        run_for(t, 100);
        if (info_i64(name, key) == want) return;
    }
    FAIL("lock-info %s: %s never became %lld", name, key, (long long)want);
}

TEST(four_shared_holders_then_an_exclusive_waits_for_all)
{
    struct tloop t;
    baton_async_t *ac[5];
    struct rec r[5];
    char nm[16];

    start3();
    tloop_init(&t);
    for (int i = 0; i < 5; i++) {
        snprintf(nm, sizeof nm, "rw%d", i);
        ac[i] = a_open(&t, nm);
    }
    for (int i = 0; i < 4; i++) a_ask(ac[i], "rw", BATON_MODE_SHARED, 0, &r[i]);
    for (int i = 0; i < 4; i++) a_granted(&t, ac[i], &r[i]);
    for (int i = 0; i < 4; i++) /* every grant its own fence */
        for (int k = i + 1; k < 4; k++) ASSERT(r[i].value != r[k].value);
    ASSERT_EQ(info_i64("rw", "total_holders"), 4);
    a_ask(ac[4], "rw", BATON_MODE_EXCLUSIVE, 0, &r[4]);
    wait_info(&t, "rw", "total_waiters", 1);
    for (int i = 0; i < 3; i++) {
        a_unlock(&t, ac[i], "rw", r[i].value);
        ASSERT_EQ(info_i64("rw", "total_holders"), 3 - i);
        ASSERT_EQ(info_i64("rw", "total_waiters"), 1);
        ASSERT_EQ(r[4].calls, 0);
    }
    a_unlock(&t, ac[3], "rw", r[3].value);
    a_granted(&t, ac[4], &r[4]);
    for (int i = 0; i < 4; i++) ASSERT_ULT(r[i].value, r[4].value);
    ASSERT_EQ(info_i64("rw", "total_holders"), 1);
    a_unlock(&t, ac[4], "rw", r[4].value);
    for (int i = 0; i < 5; i++) a_close(&t, ac[i]);
    tloop_done(&t);
    ASSERT_EQ(cluster_stop(&C), 0);
}

TEST(semaphore_of_three_among_five_clients)
{
    struct tloop t;
    baton_async_t *ac[6];
    struct rec r[6];
    char nm[16];

    start3();
    tloop_init(&t);
    for (int i = 0; i < 6; i++) {
        snprintf(nm, sizeof nm, "sem%d", i);
        ac[i] = a_open(&t, nm);
    }
    for (int i = 0; i < 3; i++) {
        a_ask(ac[i], "sem", BATON_MODE_EXCLUSIVE, 3, &r[i]);
        a_granted(&t, ac[i], &r[i]);
    }
    a_ask(ac[3], "sem", BATON_MODE_EXCLUSIVE, 3, &r[3]);
    wait_info(&t, "sem", "total_waiters", 1);
    a_ask(ac[4], "sem", BATON_MODE_EXCLUSIVE, 3, &r[4]);
    wait_info(&t, "sem", "total_waiters", 2);
    ASSERT_EQ(info_i64("sem", "limit"), 3);
    ASSERT_EQ(info_i64("sem", "total_holders"), 3);
    /* Another limit is refused, and the message gives the current one. */
    a_ask(ac[5], "sem", BATON_MODE_EXCLUSIVE, 4, &r[5]);
    run_until(&t, &r[5].calls, 1, 10000);
    ASSERT_EQ(r[5].status, BATON_EINVAL);
    ASSERT(strstr(r[5].err, "semaphore of 3") != NULL);
    /* One permit back: the first waiter, and only it. */
    a_unlock(&t, ac[1], "sem", r[1].value);
    a_granted(&t, ac[3], &r[3]);
    ASSERT_EQ(info_i64("sem", "total_holders"), 3);
    ASSERT_EQ(info_i64("sem", "total_waiters"), 1);
    ASSERT_EQ(r[4].calls, 0);
    a_unlock(&t, ac[0], "sem", r[0].value);
    a_granted(&t, ac[4], &r[4]);
    for (int i = 0; i < 6; i++) a_close(&t, ac[i]);
    tloop_done(&t);
    ASSERT_EQ(cluster_stop(&C), 0);
}

TEST(reentrant_handles_and_edeadlk)
{
    baton_opts o = {.client_name = "reent", .connect_timeout_ms = 10000};
    baton_lock_args re = {.wait_ms = BATON_WAIT_FOREVER, .reentrant = 1};
    baton_lock_t *l1, *l2, *l3;
    baton_t *b;
    struct ctl_result r;

    start3();
    o.endpoints = cluster_endpoints(&C);
    ASSERT_EQ(baton_connect(&o, &b), 0);
    ASSERT_EQ(baton_lock(b, "re", &l1), 0);
    /* Without reentrant: at once, not a wait behind itself. */
    ASSERT_EQ(baton_lock(b, "re", &l3), BATON_EDEADLK);
    ASSERT(l3 == NULL);
    ASSERT_EQ(baton_lock_with(b, "re", &re, &l2), 0);
    ASSERT_UEQ(baton_lock_fence(l2), baton_lock_fence(l1));
    ASSERT_EQ(cluster_lock_info(&C, "re", &r), 0);
    ASSERT(strstr(r.out, "\"handles\":2") != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(baton_unlock(l1), 0);
    ASSERT_EQ(info_i64("re", "total_holders"), 1); /* the last handle holds it */
    ASSERT_EQ(baton_unlock(l2), 0);
    ASSERT_EQ(info_i64("re", "total_holders"), 0);
    baton_close(b);
    ASSERT_EQ(cluster_stop(&C), 0);
}

TEST(batonctl_shared_lock_and_lock_info)
{
    baton_opts o = {.client_name = "ctl", .connect_timeout_ms = 10000};
    baton_lock_args sh = {.wait_ms = BATON_WAIT_FOREVER, .mode = BATON_MODE_SHARED};
    baton_lock_t *l1, *l2;
    baton_t *b1, *b2;
    struct ctl_result r;

    start3();
    o.endpoints = cluster_endpoints(&C);
    ASSERT_EQ(baton_connect(&o, &b1), 0);
    ASSERT_EQ(baton_connect(&o, &b2), 0);
    ASSERT_EQ(baton_lock_with(b1, "docs", &sh, &l1), 0);
    ASSERT_EQ(baton_lock_with(b2, "docs", &sh, &l2), 0);
    /* batonctl joins the shared holders at once (a try). */
    ASSERT_EQ(cluster_ctl(&C, &r, "lock", "docs", "--shared", "--timeout", "0", "--", "true",
                          NULL),
              0);
    ctl_result_free(&r);
    /* An exclusive try is busy (75); --shared with --limit is a usage error. */
    ASSERT_EQ(cluster_ctl(&C, &r, "lock", "docs", "--timeout", "0", "--", "true", NULL), 75);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&C, &r, "lock", "docs", "--shared", "--limit", "3", "--", "true",
                          NULL),
              64);
    ctl_result_free(&r);
    /* A semaphore limit on a plain lock: refused, with its limit. */
    ASSERT_EQ(cluster_ctl(&C, &r, "lock", "docs", "--limit", "3", "--", "true", NULL), 70);
    ASSERT(strstr(r.err, "limit 1") != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&C, &r, "lock-info", "docs", NULL), 0);
    ASSERT(strstr(r.out, "mode:           shared") != NULL);
    ASSERT(strstr(r.out, "holders:        2") != NULL);
    ASSERT(strstr(r.out, "HANDLES") != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&C, &r, "lock-info", "docs", "-o", "json", NULL), 0);
    ASSERT(strstr(r.out, "\"mode\":\"shared\"") != NULL);
    ASSERT(strstr(r.out, "\"limit\":1") != NULL);
    ASSERT(strstr(r.out, "\"total_holders\":2") != NULL);
    {
        char fence[64];
        snprintf(fence, sizeof fence, "\"fence\":%llu",
                 (unsigned long long)baton_lock_fence(l2));
        ASSERT(strstr(r.out, fence) != NULL); /* the second holder is listed */
    }
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&C, &r, "locks", "-o", "json", NULL), 0);
    ASSERT(strstr(r.out, "\"holders\":2") != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&C, &r, "locks", NULL), 0);
    ASSERT(strstr(r.out, "shared") != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(baton_unlock(l1), 0);
    ASSERT_EQ(baton_unlock(l2), 0);
    baton_close(b1);
    baton_close(b2);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* The leader dies while two shared holders, an exclusive waiter and a
 * shared waiter behind it exist: the new leader has the same holders and
 * queue, and grants in the same order. */
TEST(failover_keeps_shared_holders_and_waiters)
{
    struct tloop t;
    baton_async_t *ac[4];
    struct rec r[4];
    char nm[16];
    int leader;

    start3();
    tloop_init(&t);
    for (int i = 0; i < 4; i++) {
        snprintf(nm, sizeof nm, "fo%d", i);
        ac[i] = a_open(&t, nm);
    }
    a_ask(ac[0], "fo", BATON_MODE_SHARED, 0, &r[0]);
    a_ask(ac[1], "fo", BATON_MODE_SHARED, 0, &r[1]);
    a_granted(&t, ac[0], &r[0]);
    a_granted(&t, ac[1], &r[1]);
    a_ask(ac[2], "fo", BATON_MODE_EXCLUSIVE, 0, &r[2]);
    wait_info(&t, "fo", "total_waiters", 1);
    a_ask(ac[3], "fo", BATON_MODE_SHARED, 0, &r[3]);
    wait_info(&t, "fo", "total_waiters", 2);

    leader = cluster_wait_leader(&C, 15000);
    ASSERT_GE(leader, 0);
    ASSERT_EQ(cluster_kill(&C, leader, SIGKILL), 128 + SIGKILL);
    ASSERT_GE(cluster_wait_leader(&C, 15000), 0);
    /* Let the clients find the new leader. */
    run_for(&t, 1500);
    ASSERT_EQ(info_i64("fo", "total_holders"), 2);
    ASSERT_EQ(info_i64("fo", "total_waiters"), 2);
    ASSERT_EQ(r[2].calls, 0);
    ASSERT_EQ(r[3].calls, 0);
    a_unlock(&t, ac[0], "fo", r[0].value);
    ASSERT_EQ(info_i64("fo", "total_waiters"), 2); /* one shared holder left */
    a_unlock(&t, ac[1], "fo", r[1].value);
    a_granted(&t, ac[2], &r[2]);
    ASSERT_ULT(r[1].value, r[2].value);
    ASSERT_EQ(info_i64("fo", "total_waiters"), 1); /* the shared one waits for the writer */
    ASSERT_EQ(r[3].calls, 0);
    a_unlock(&t, ac[2], "fo", r[2].value);
    a_granted(&t, ac[3], &r[3]);
    ASSERT_ULT(r[2].value, r[3].value);
    a_unlock(&t, ac[3], "fo", r[3].value);
    for (int i = 0; i < 4; i++) a_close(&t, ac[i]);
    tloop_done(&t);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* lock-info's `key` of a holder-less lock is 0; of a held one the first
 * holder's fence. */
static int64_t fence_of(const char *name)
{
    return info_i64(name, "fence");
}

TEST(multi_lock_through_both_apis)
{
    static const char *const abc[] = {"ma", "mb", "mc"}, *const ca[] = {"mc", "ma"};
    static const char *const a_zz[] = {"ma", "mzz"}, *const x_b[] = {"mx", "mb"};
    static const char *const a_y[] = {"ma", "my"};
    baton_opts o = {.client_name = "multi", .connect_timeout_ms = 10000};
    baton_lock_args try_ = {.wait_ms = BATON_WAIT_TRY}, brief = {.wait_ms = 300};
    struct tloop t;
    baton_async_t *ac[2];
    struct rec r[2];
    baton_lock_t *l, *l2;
    baton_t *b;

    start3();
    o.endpoints = cluster_endpoints(&C);
    ASSERT_EQ(baton_connect(&o, &b), 0);
    ASSERT_EQ(baton_lock_many(b, abc, 3, NULL, &l), 0);
    ASSERT_STREQ(baton_lock_name(l), "ma");
    for (int i = 0; i < 3; i++) ASSERT_EQ(fence_of(abc[i]), (int64_t)baton_lock_fence(l));
    /* EDEADLK for a name it holds, even not the first; a try holds nothing
     * unless it can hold all; a timeout leaves no queue behind. */
    ASSERT_EQ(baton_lock_many(b, x_b, 2, NULL, &l2), BATON_EDEADLK);
    tloop_init(&t);
    ac[0] = a_open(&t, "multi0");
    ac[1] = a_open(&t, "multi1");
    {
        baton_t *b2;
        ASSERT_EQ(baton_connect(&o, &b2), 0);
        ASSERT_EQ(baton_lock_many(b2, a_zz, 2, &try_, &l2), BATON_EWOULDBLOCK);
        ASSERT_EQ(info_i64("mzz", "total_holders"), 0);
        ASSERT_EQ(baton_lock_many(b2, a_y, 2, &brief, &l2), BATON_ETIMEDOUT);
        ASSERT_EQ(info_i64("my", "total_waiters"), 0);
        ASSERT_EQ(info_i64("ma", "total_waiters"), 0);
        baton_close(b2);
    }
    /* The async twin, crossing the order; a single request on mb. */
    memset(&r[0], 0, sizeof r[0]);
    ASSERT_EQ(baton_async_lock_many(ac[0], ca, 2, NULL, rec_lock, &r[0]), 0);
    wait_info(&t, "ma", "total_waiters", 1);
    wait_info(&t, "mc", "total_waiters", 1);
    a_ask(ac[1], "mb", BATON_MODE_EXCLUSIVE, 0, &r[1]);
    wait_info(&t, "mb", "total_waiters", 1);
    ASSERT_EQ(baton_unlock(l), 0); /* one unlock: every name */
    a_granted(&t, ac[0], &r[0]);
    a_granted(&t, ac[1], &r[1]);
    ASSERT_STREQ(r[0].name, "mc");
    ASSERT_EQ(fence_of("ma"), (int64_t)r[0].value);
    ASSERT_EQ(fence_of("mc"), (int64_t)r[0].value);
    ASSERT_ULT(r[0].value, r[1].value); /* granted in that order, in one entry */
    /* A forced release of one name takes the whole multi-lock, told once. */
    {
        struct lostrec lr = {0};
        struct ctl_result cr;
        baton_async_on_lost(ac[0], rec_lost, &lr);
        ASSERT_EQ(cluster_ctl(&C, &cr, "release", "--force", "ma", "--now", NULL), 0);
        ctl_result_free(&cr);
        run_until(&t, &lr.calls, 1, 15000);
        run_for(&t, 300);
        ASSERT_EQ(lr.calls, 1);
        ASSERT_STREQ(lr.e[0].name, "mc");
        ASSERT_EQ(info_i64("mc", "total_holders"), 0);
        ASSERT_EQ(baton_async_unlock(ac[0], "mc", r[0].value, NULL, NULL), BATON_ELOST);
    }
    a_unlock(&t, ac[1], "mb", r[1].value);
    for (int i = 0; i < 2; i++) a_close(&t, ac[i]);
    tloop_done(&t);
    baton_close(b);
    ASSERT_EQ(cluster_stop(&C), 0);
}

TEST(batonctl_multi_lock)
{
    baton_opts o = {.client_name = "ctlmulti", .connect_timeout_ms = 10000};
    baton_lock_t *l;
    baton_t *b;
    struct ctl_result r;

    start3();
    o.endpoints = cluster_endpoints(&C);
    ASSERT_EQ(baton_connect(&o, &b), 0);
    ASSERT_EQ(cluster_ctl(&C, &r, "lock", "k1", "k2", "k3", "--", "sh", "-c",
                          "echo \"$BATON_LOCK $BATON_FENCE\"", NULL),
              0);
    ASSERT(strncmp(r.out, "k1 ", 3) == 0);
    ctl_result_free(&r);
    /* Busy on one name: a try takes none of them. */
    ASSERT_EQ(baton_lock(b, "k2", &l), 0);
    ASSERT_EQ(cluster_ctl(&C, &r, "lock", "k1", "k2", "--timeout", "0", "--", "true", NULL), 75);
    ctl_result_free(&r);
    ASSERT_EQ(info_i64("k1", "total_holders"), 0);
    /* A name twice is a usage error. */
    ASSERT_EQ(cluster_ctl(&C, &r, "lock", "k1", "k1", "--", "true", NULL), 64);
    ctl_result_free(&r);
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(b);
    ASSERT_EQ(cluster_stop(&C), 0);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(four_shared_holders_then_an_exclusive_waits_for_all);
    RUN(semaphore_of_three_among_five_clients);
    RUN(reentrant_handles_and_edeadlk);
    RUN(batonctl_shared_lock_and_lock_info);
    RUN(failover_keeps_shared_holders_and_waiters);
    RUN(multi_lock_through_both_apis);
    RUN(batonctl_multi_lock);
    return runner_done();
}
