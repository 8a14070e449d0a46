/*
 * test_client_acks.c -- what libbaton tells the cluster it no longer needs
 * (the acknowledgement every session request carries: ack_below and the
 * keep list, proto/msg.h), and OPEN_SESSION's nonce, against the fake
 * servers of tests/unit/fake_server.h, which prune their cache and answer
 * a re-sent OPEN_SESSION as batond does.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "baton/baton_async.h"
#include "baton/baton_defs.h"
#include "tests/lib/runner.h"
#include "tests/unit/client_fixture.h"
#include "tests/unit/fake_server.h"

/*
 * One lock call of session b waits (for as long as a holds the lock)
 * while b goes through a thousand lock/unlock cycles. b's requests keep
 * the waiting call's result and acknowledge every other, so the fake's
 * cache of b stays at a handful of results, where acknowledging only
 * below the oldest unfinished call (protocol 2) left one per request. The
 * kept result still answers the waiting call after a reconnect, and the
 * wait ends in a grant; then nothing is kept any more.
 */
TEST(long_wait_lets_the_cluster_prune)
{
    enum { CYCLES = 1000 };
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *a, *b;
    struct rec ra, rw = {0}, r;
    uint64_t sb, waiter;

    tloop_init(&t);
    a = a_open(&t, f->addr, 0, 0);
    b = a_open(&t, f->addr, 0, 0);
    sb = baton_async_session_id(b);
    ra = a_lock(&t, a, "w", BATON_WAIT_FOREVER);
    ASSERT_EQ(ra.status, 0);
    ASSERT_EQ(baton_async_lock(b, "w", BATON_WAIT_FOREVER, rec_lock, &rw), 0);
    run_for(&t, 100);
    waiter = FK_GET(f, last_acquire_seq);
    ASSERT_EQ(rw.calls, 0);
    for (int i = 0; i < CYCLES; i++) {
        r = a_lock(&t, b, "c", BATON_WAIT_TRY);
        ASSERT_EQ(r.status, 0);
        ASSERT_EQ(a_unlock(&t, b, "c", r.value), 0);
        if (i % 100 == 0) ASSERT_LE(fk_cached(f, sb), 3);
    }
    /* The last request acknowledged everything but the waiting call. */
    ASSERT_GT(FK_GET(f, last_ack_below), waiter);
    ASSERT_EQ(FK_GET(f, last_n_keep), 1);
    ASSERT_UEQ(FK_GET(f, last_keep0), waiter);
    ASSERT_LE(fk_cached(f, sb), 3); /* the wait's, the last unlock's */
    /* A reconnect: the waiting call is re-sent, below the floor, and its
     * kept result says it still waits. */
    FK_SET(f, do_drop_all, true);
    run_for(&t, 300);
    ASSERT_EQ(FK_GET(f, n_stale), 0);
    ASSERT_GE(FK_GET(f, n_dedup_hits), 1);
    ASSERT_EQ(rw.calls, 0);
    ASSERT_EQ(a_unlock(&t, a, "w", ra.value), 0);
    run_until(&t, &rw.calls, 1, 3000);
    ASSERT_EQ(rw.status, 0);
    /* The grant was seen: the next request keeps nothing, and the cache is
     * that request's result alone. */
    r = a_lock(&t, b, "c", BATON_WAIT_TRY);
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(FK_GET(f, last_n_keep), 0);
    ASSERT_EQ(fk_cached(f, sb), 1);
    ASSERT_EQ(FK_GET(f, n_stale), 0);
    a_close(&t, a);
    a_close(&t, b);
    tloop_done(&t);
    fake_stop(f);
}

/*
 * More queued lock calls than a keep list holds (BATON_MAX_KEEP): the
 * oldest BATON_MAX_KEEP are kept and ack_below stops at the next one, so
 * the cluster forgets nothing the client may still ask for; as calls end,
 * the window moves on.
 */
TEST(keep_list_holds_the_oldest_waits)
{
    enum { WAITS = BATON_MAX_KEEP + 6 };
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *a, *b;
    static struct rec held[WAITS], waits[WAITS];
    uint64_t seq[WAITS];
    char name[16];
    struct rec r;

    tloop_init(&t);
    a = a_open(&t, f->addr, 0, 0);
    b = a_open(&t, f->addr, 0, 0);
    for (int i = 0; i < WAITS; i++) {
        snprintf(name, sizeof name, "k%d", i);
        held[i] = a_lock(&t, a, name, BATON_WAIT_TRY);
        ASSERT_EQ(held[i].status, 0);
    }
    for (int i = 0; i < WAITS; i++) {
        snprintf(name, sizeof name, "k%d", i);
        ASSERT_EQ(baton_async_lock(b, name, BATON_WAIT_FOREVER, rec_lock, &waits[i]), 0);
        run_for(&t, 5);
        seq[i] = FK_GET(f, last_acquire_seq);
    }
    run_for(&t, 100);
    r = a_lock(&t, b, "z", BATON_WAIT_TRY);
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(FK_GET(f, last_n_keep), BATON_MAX_KEEP);
    ASSERT_UEQ(FK_GET(f, last_keep0), seq[0]);
    ASSERT_UEQ(FK_GET(f, last_ack_below), seq[BATON_MAX_KEEP]);
    /* The first wait ends: the window moves one on. */
    ASSERT_EQ(a_unlock(&t, a, "k0", held[0].value), 0);
    run_until(&t, &waits[0].calls, 1, 3000);
    ASSERT_EQ(waits[0].status, 0);
    ASSERT_EQ(a_unlock(&t, b, "z", r.value), 0);
    r = a_lock(&t, b, "z", BATON_WAIT_TRY);
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(FK_GET(f, last_n_keep), BATON_MAX_KEEP);
    ASSERT_UEQ(FK_GET(f, last_keep0), seq[1]);
    ASSERT_UEQ(FK_GET(f, last_ack_below), seq[BATON_MAX_KEEP + 1]);
    ASSERT_EQ(FK_GET(f, n_stale), 0);
    a_close(&t, a);
    a_close(&t, b);
    tloop_done(&t);
    fake_stop(f);
}

/*
 * The node opens the session but the connection dies before its SESSION
 * reply leaves. The client sends the OPEN_SESSION again, with the same
 * nonce, and gets the session that was opened: one session, not two (an
 * orphan that would live out its ttl). A fresh session, once that one is
 * gone, has a nonce of its own.
 */
TEST(lost_session_reply_leaves_one_session)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct rec r, rs = {0};
    uint64_t nonce, s1;

    tloop_init(&t);
    FK_SET(f, drop_session_reply, 1);
    ac = a_open(&t, f->addr, 0, 0);
    s1 = baton_async_session_id(ac);
    ASSERT_UEQ(s1, 1);
    ASSERT_EQ(FK_GET(f, n_open), 2);
    ASSERT_EQ(FK_GET(f, n_open_resent), 1);
    ASSERT_EQ(FK_GET(f, nsessions), 1);
    ASSERT_EQ(FK_GET(f, n_conns), 2);
    nonce = FK_GET(f, last_nonce);
    ASSERT(nonce != 0);
    r = a_lock(&t, ac, "x", BATON_WAIT_TRY);
    ASSERT_EQ(r.status, 0);
    /* The session ends in the cluster; the next call opens a fresh one,
     * with another nonce. */
    baton_async_on_session(ac, rec_open, &rs);
    FK_SET(f, do_expire, s1);
    run_for(&t, 200);
    r = a_lock(&t, ac, "y", BATON_WAIT_TRY);
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(rs.calls, 1);
    ASSERT(rs.value != s1);
    ASSERT(FK_GET(f, last_nonce) != (int64_t)nonce && FK_GET(f, last_nonce) != 0);
    ASSERT_EQ(FK_GET(f, n_open_resent), 1);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(long_wait_lets_the_cluster_prune);
    RUN(keep_list_holds_the_oldest_waits);
    RUN(lost_session_reply_leaves_one_session);
    return runner_done();
}
