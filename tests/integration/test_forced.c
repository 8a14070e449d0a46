/*
 * test_forced.c -- an operator's forced release and admin expiry against
 * three real batond processes: the holder is always told, even when every
 * push was lost, and a forced release waits out the holder's lease unless
 * asked to grant at once.
 *
 * The clients are async contexts (include/baton/baton_async.h), each on a loop of
 * its own (tests/lib/tloop.h): a context whose loop the test does not run
 * is frozen -- it reads nothing and sends nothing -- like a process paused
 * for a moment, while the others go on. Freezing the holder across a
 * leadership transfer leaves it with no connection to the new leader, so
 * the new leader has nowhere to push LOST or SESSION_EXPIRED: only what the
 * holder asks for when it runs again can tell it.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "baton/baton_async.h"
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

/* A context on t's loop with its session (lease ttl_ms) open and the lost
 * callback recording into lr. */
static baton_async_t *open_on(struct tloop *t, const char *name, unsigned ttl_ms,
                              struct lostrec *lr)
{
    baton_opts o = {.client_name = name, .connect_timeout_ms = 10000, .session_ttl_ms = ttl_ms};
    struct rec r = {0};
    baton_async_t *ac = a_new_cluster(t, &C, &o);

    ASSERT_EQ(baton_async_open(ac, rec_open, &r), 0);
    run_until(t, &r.calls, 1, 10000);
    if (r.status != 0) FAIL("open %s: %s", name, baton_async_errmsg(ac));
    if (lr != NULL) baton_async_on_lost(ac, rec_lost, lr);
    return ac;
}

static uint64_t lock_on(struct tloop *t, baton_async_t *ac, const char *name)
{
    struct rec r = {0};

    ASSERT_EQ(baton_async_lock(ac, name, BATON_WAIT_FOREVER, rec_lock, &r), 0);
    run_until(t, &r.calls, 1, 10000);
    if (r.status != 0) FAIL("lock %s: %s", name, baton_async_errmsg(ac));
    return r.value;
}

static void close_on(struct tloop *t, baton_async_t *ac)
{
    struct rec r = {0};

    ASSERT_EQ(baton_async_close_session(ac, rec_done, &r), 0);
    run_until(t, &r.calls, 1, 10000);
    baton_async_free(ac);
}

/* Hand leadership to another node (the old leader closes every client
 * connection) and wait for the new one. */
static void change_leader(void)
{
    struct ctl_result r;
    int old = cluster_wait_leader(&C, 15000), now;

    ASSERT_GE(old, 0);
    ASSERT_EQ(cluster_ctl(&C, &r, "transfer-leader", NULL), 0);
    ctl_result_free(&r);
    for (int i = 0; i < 100; i++) {
        now = cluster_wait_leader(&C, 15000);
        if (now >= 0 && now != old) return;
        sleep_ms(50);
    }
    FAIL("leadership did not move from node %d", old + 1);
}

/*
 * The holder is frozen while leadership moves and the lock is forced away
 * (--now) at the new leader, which has no connection of the holder's to
 * push LOST to. Running again, the holder reconnects, and the keepalive it
 * sends first is answered with its lost hold: the lost callback runs
 * (BATON_ELOST) within a keepalive interval, while its session and its
 * other lock live on. Without lost-hold records it would believe it still
 * held the lock for as long as its session lived.
 */
TEST(forced_release_after_leader_change_is_told)
{
    struct tloop ta;
    struct lostrec lr = {0};
    struct ctl_result r;
    baton_async_t *a;
    uint64_t fx, fy, session;
    char fence[32];
    int64_t resumed;

    start3();
    tloop_init(&ta);
    a = open_on(&ta, "holder", 6000, &lr);
    session = baton_async_session_id(a);
    fx = lock_on(&ta, a, "fx");
    fy = lock_on(&ta, a, "fy");
    /* Frozen from here: nothing of a's runs. */
    change_leader();
    snprintf(fence, sizeof fence, "%llu", (unsigned long long)fx);
    ASSERT_EQ(cluster_ctl(&C, &r, "release", "--force", "fx", "--fence", fence, "--now", NULL),
              0);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_lock_i64(&C, "fx", "holder_session"), 0);
    /* Running again. */
    resumed = now_ms();
    run_until(&ta, &lr.calls, 1, 6000);
    fprintf(stderr, "# told %lld ms after it ran again\n", (long long)(now_ms() - resumed));
    ASSERT_STREQ(lr.e[0].name, "fx");
    ASSERT_UEQ(lr.e[0].fence, fx);
    ASSERT_EQ(lr.e[0].why, BATON_ELOST);
    ASSERT_UEQ(baton_async_session_id(a), session);
    run_for(&ta, 300);
    ASSERT_EQ(lr.calls, 1);
    ASSERT_EQ(baton_async_unlock(a, "fx", fx, rec_done, NULL), BATON_ELOST);
    ASSERT_EQ(cluster_lock_i64(&C, "fy", "holder_session"), (int64_t)session);
    {
        struct rec u = {0};
        ASSERT_EQ(baton_async_unlock(a, "fy", fy, rec_done, &u), 0);
        run_until(&ta, &u.calls, 1, 10000);
        ASSERT_EQ(u.status, 0);
    }
    close_on(&ta, a);
    tloop_done(&ta);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/*
 * The same for an admin expiry: frozen across a leadership transfer, the
 * holder cannot get SESSION_EXPIRED; running again, its keepalive is
 * answered BATON_ESESSION, and every lock it held is declared lost.
 */
TEST(admin_expiry_after_leader_change_is_told)
{
    struct tloop ta;
    struct lostrec lr = {0};
    struct ctl_result r;
    baton_async_t *a;
    char session[32];

    start3();
    tloop_init(&ta);
    a = open_on(&ta, "holder", 6000, &lr);
    snprintf(session, sizeof session, "%llu", (unsigned long long)baton_async_session_id(a));
    lock_on(&ta, a, "ex1");
    lock_on(&ta, a, "ex2");
    change_leader();
    ASSERT_EQ(cluster_ctl(&C, &r, "expire", session, NULL), 0);
    ctl_result_free(&r);
    run_until(&ta, &lr.calls, 2, 6000);
    for (int i = 0; i < 2; i++) ASSERT_EQ(lr.e[i].why, BATON_ESESSION);
    ASSERT_EQ(baton_async_session_id(a), 0);
    close_on(&ta, a);
    tloop_done(&ta);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* Run both loops, a turn each, until *flag >= want (FAILs after ms). */
static void run_both_until(struct tloop *a, struct tloop *b, const int *flag, int want,
                           unsigned ms)
{
    int64_t end = now_ms() + ms;

    while (*flag < want) {
        if (now_ms() > end) FAIL("still %d of %d after %u ms", *flag, want, ms);
        run_for(a, 5);
        run_for(b, 5);
    }
}

/*
 * By default a forced release grants the next waiter only once the
 * holder's lease has run out (its ttl, 3 s here, with no lock-delay): the
 * holder, told at once, has stopped long before; --now grants at once.
 */
TEST(forced_release_waits_out_the_lease_unless_now)
{
    struct tloop ta, tb;
    struct lostrec lr = {0};
    struct ctl_result r;
    struct rec w = {0};
    baton_async_t *a, *b;
    int64_t forced_at, waited;

    start3();
    tloop_init(&ta);
    tloop_init(&tb);
    a = open_on(&ta, "holder", 3000, &lr);
    b = open_on(&tb, "waiter", 10000, NULL);
    lock_on(&ta, a, "lw");
    ASSERT_EQ(baton_async_lock(b, "lw", BATON_WAIT_FOREVER, rec_lock, &w), 0);
    run_for(&tb, 50);
    ASSERT_EQ(cluster_wait_lock_i64(&C, "lw", "total_waiters", 1, 10000), 0);
    ASSERT_EQ(cluster_ctl(&C, &r, "release", "--force", "lw", "-o", "json", NULL), 0);
    forced_at = now_ms();
    ASSERT_EQ(json_i64(r.out, "delay_ms", -1), 3000);
    ctl_result_free(&r);
    run_both_until(&ta, &tb, &w.calls, 1, 10000);
    waited = now_ms() - forced_at;
    fprintf(stderr, "# the waiter was granted %lld ms after the forced release\n",
            (long long)waited);
    ASSERT_EQ(w.status, 0);
    ASSERT_EQ(lr.calls, 1);
    ASSERT_LT(lr.e[0].at, forced_at + 1000); /* told by the push */
    ASSERT_GE(waited, 2900);

    /* --now: the holder (b now) loses it, a -- waiting again -- has it at once. */
    {
        struct rec w2 = {0};
        ASSERT_EQ(baton_async_lock(a, "lw", BATON_WAIT_FOREVER, rec_lock, &w2), 0);
        run_for(&ta, 50);
        ASSERT_EQ(cluster_wait_lock_i64(&C, "lw", "total_waiters", 1, 10000), 0);
        ASSERT_EQ(cluster_ctl(&C, &r, "release", "--force", "lw", "--now", NULL), 0);
        forced_at = now_ms();
        ctl_result_free(&r);
        run_both_until(&ta, &tb, &w2.calls, 1, 10000);
        ASSERT_EQ(w2.status, 0);
        ASSERT_LT(now_ms() - forced_at, 2000);
    }
    close_on(&ta, a);
    close_on(&tb, b);
    tloop_done(&ta);
    tloop_done(&tb);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/*
 * A reentrant hold has two handles of one grant. A forced release loses
 * the grant: its lost callback runs once, both handles' unlocks answer
 * BATON_ELOST at once without asking the cluster, and the owner may lock
 * the name again (nothing of its hold is left claimed).
 */
TEST(forced_release_of_a_reentrant_hold_loses_every_handle_once)
{
    baton_lock_args re = {.wait_ms = BATON_WAIT_FOREVER, .reentrant = 1};
    struct tloop t;
    struct lostrec lr = {0};
    struct ctl_result r;
    struct rec second = {0}, again = {0};
    baton_async_t *a;
    uint64_t fence;

    start3();
    tloop_init(&t);
    a = open_on(&t, "reentrant", 10000, &lr);
    fence = lock_on(&t, a, "rf");
    ASSERT_EQ(baton_async_lock_with(a, "rf", &re, rec_lock, &second), 0);
    run_until(&t, &second.calls, 1, 10000);
    ASSERT_EQ(second.status, 0);
    ASSERT_UEQ(second.value, fence);
    ASSERT_EQ(cluster_ctl(&C, &r, "release", "--force", "rf", "--now", NULL), 0);
    ctl_result_free(&r);
    run_until(&t, &lr.calls, 1, 10000);
    run_for(&t, 300); /* a second lost callback, if one were coming */
    ASSERT_EQ(lr.calls, 1);
    ASSERT_EQ(baton_async_unlock(a, "rf", fence, NULL, NULL), BATON_ELOST);
    ASSERT_EQ(baton_async_unlock(a, "rf", fence, NULL, NULL), BATON_ELOST);
    ASSERT_EQ(baton_async_lock(a, "rf", BATON_WAIT_TRY, rec_lock, &again), 0);
    run_until(&t, &again.calls, 1, 10000);
    ASSERT_EQ(again.status, 0);
    ASSERT_ULT(fence, again.value);
    close_on(&t, a);
    tloop_done(&t);
    ASSERT_EQ(cluster_stop(&C), 0);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(120);
    RUN(forced_release_after_leader_change_is_told);
    RUN(admin_expiry_after_leader_change_is_told);
    RUN(forced_release_waits_out_the_lease_unless_now);
    RUN(forced_release_of_a_reentrant_hold_loses_every_handle_once);
    return runner_done();
}
