/*
 * test_client_session.c -- libbaton's sessions (async API, fake servers of
 * tests/unit/fake_server.h): keepalives and their interval, a lease that
 * runs out, LOST and SESSION_EXPIRED pushes and the lost callback, a
 * session the cluster forgot, the keepalive after a reconnect, a node that
 * stops answering keepalives, freeing from inside the lost callback, and
 * forced releases told by the keepalive's answer when no LOST push comes.
 */
#include <stdint.h>
#include <string.h>

#include "baton/baton_async.h"
#include "baton/baton_defs.h"
#include "client/async_int.h"
#include "tests/lib/clock.h"
#include "tests/lib/runner.h"
#include "tests/unit/client_fixture.h"
#include "tests/unit/fake_server.h"

/* An idle session sends a keepalive about every ttl/3, from req_ids that
 * cannot be taken for seqs, and keeps its locks. */
TEST(async_keepalive_interval)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct lostrec lr = {0};
    struct rec r;
    int n;

    tloop_init(&t);
    ac = a_open_ttl(&t, f->addr, 0, 600, 0);
    baton_async_on_lost(ac, rec_lost, &lr);
    r = a_lock(&t, ac, "k", BATON_WAIT_FOREVER);
    ASSERT_EQ(r.status, 0);
    run_for(&t, 2000);
    /* 2000 ms / 200 ms = 10; allow for timer slack either way. */
    n = (int)FK_GET(f, n_keepalive);
    ASSERT_GE(n, 7);
    ASSERT_LE(n, 12);
    ASSERT_UEQ((uint64_t)FK_GET(f, last_ka_req_id) >> 63, 1);
    ASSERT_EQ(lr.calls, 0);
    ASSERT_EQ(FK_GET(f, n_open), 1);
    ASSERT_EQ(a_unlock(&t, ac, "k", r.value), 0);
    ASSERT_EQ(baton_async_pending(ac), 0);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

/* The client's lease ends a margin before the leader's: 0.2% of the ttl for
 * the clocks' rates plus 5 ms, and never more than half the ttl. A leader
 * whose clock runs 0.2% slower still expires the session after the client
 * has given its locks up. */
TEST(lease_margin)
{
    ASSERT_UEQ(baton__lease_margin(10000), 25);
    ASSERT_UEQ(baton__lease_margin(600), 6);
    ASSERT_UEQ(baton__lease_margin(300000), 605);
    ASSERT_UEQ(baton__lease_margin(8), 4);
    for (uint64_t ttl = 1000; ttl <= 300000; ttl += 997) {
        uint64_t m = baton__lease_margin(ttl);
        /* the leader's ttl, measured on a clock 0.2% slower, ends after ours */
        ASSERT((ttl - m) * 1002 / 1000 <= ttl);
    }
}

/* The fake stops answering keepalives: once ttl has passed since the send
 * of the last acknowledged one, every held lock is declared lost (once),
 * unlocking them says BATON_ELOST without I/O, and the next call gets a
 * fresh session. */
TEST(async_lease_runs_out)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct lostrec lr = {0};
    struct rec ra, rb, rc, rs = {0}, ru = {0};
    uint64_t s1;
    int64_t last_ok;
    int i;

    tloop_init(&t);
    ac = a_open_ttl(&t, f->addr, 0, 600, 0);
    baton_async_on_lost(ac, rec_lost, &lr);
    baton_async_on_session(ac, rec_open, &rs);
    s1 = baton_async_session_id(ac);
    ra = a_lock(&t, ac, "a", BATON_WAIT_FOREVER);
    rb = a_lock(&t, ac, "b", BATON_WAIT_FOREVER);
    ASSERT_EQ(ra.status, 0);
    ASSERT_EQ(rb.status, 0);
    run_for(&t, 450); /* two keepalives or so are acknowledged */
    ASSERT_GE(FK_GET(f, n_keepalive_ok), 1);
    FK_SET(f, ka_silent, true);
    run_until(&t, &lr.calls, 2, 3000);
    last_ok = FK_GET(f, last_ok_at);
    ASSERT(lost_find(&lr, "a", &i));
    ASSERT_UEQ(lr.e[i].fence, ra.value);
    ASSERT(lost_find(&lr, "b", &i));
    ASSERT_UEQ(lr.e[i].fence, rb.value);
    for (i = 0; i < 2; i++) {
        ASSERT_EQ(lr.e[i].why, BATON_ESESSION);
        ASSERT(strstr(lr.e[i].err, "lease ran out") != NULL);
        /* Not after the lease ends: it was sent before the fake answered
         * it (a little slack for the loop's wake-up)... */
        ASSERT_LE(lr.e[i].at, last_ok + 600 + 100);
        /* ...and not long before either. */
        ASSERT_GE(lr.e[i].at + 100, last_ok + 600);
    }
    ASSERT_EQ(baton_async_session_id(ac), 0);
    /* The lock is gone: unlocking says so at once, and runs no callback. */
    ASSERT_EQ(baton_async_unlock(ac, "a", ra.value, rec_done, &ru), BATON_ELOST);
    ASSERT(strstr(baton_async_errmsg(ac), "lost") != NULL);
    /* The next call opens a fresh session. */
    FK_SET(f, ka_silent, false);
    rc = a_lock(&t, ac, "c", BATON_WAIT_TRY);
    ASSERT_EQ(rc.status, 0);
    ASSERT_EQ(rs.calls, 1);
    ASSERT_EQ(rs.status, 0);
    ASSERT(rs.value != 0 && rs.value != s1);
    ASSERT_UEQ(rs.value, baton_async_session_id(ac));
    ASSERT_EQ(FK_GET(f, n_open), 2);
    ASSERT_EQ(baton_async_unlock(ac, "b", rb.value, rec_done, &ru), BATON_ELOST);
    run_for(&t, 100);
    ASSERT_EQ(lr.calls, 2);
    ASSERT_EQ(ru.calls, 0);
    ASSERT_EQ(a_unlock(&t, ac, "c", rc.value), 0);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

/* A LOST push for one lock: only that one is lost (BATON_ELOST), the next
 * waiter gets it, the other lock stays held. Unlocking a lost lock from
 * inside the lost callback works and returns BATON_ELOST. */
TEST(async_lost_push_one_lock)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *a, *b;
    struct lostrec lr = {.unlock_inside = true};
    struct rec rx, ry, rw = {0};

    tloop_init(&t);
    a = a_open(&t, f->addr, 0, 0);
    b = a_open(&t, f->addr, 0, 0);
    baton_async_on_lost(a, rec_lost, &lr);
    rx = a_lock(&t, a, "x", BATON_WAIT_FOREVER);
    ry = a_lock(&t, a, "y", BATON_WAIT_FOREVER);
    ASSERT_EQ(baton_async_lock(b, "x", BATON_WAIT_FOREVER, rec_lock, &rw), 0);
    run_for(&t, 50);
    ASSERT_EQ(rw.calls, 0);
    fk_force(f, "x");
    run_until(&t, &lr.calls, 1, 3000);
    run_until(&t, &rw.calls, 1, 3000);
    ASSERT_STREQ(lr.e[0].name, "x");
    ASSERT_UEQ(lr.e[0].fence, rx.value);
    ASSERT_EQ(lr.e[0].why, BATON_ELOST);
    ASSERT(strstr(lr.e[0].err, "forced") != NULL);
    ASSERT_EQ(lr.e[0].unlock_rv, BATON_ELOST);
    ASSERT_EQ(rw.status, 0);
    ASSERT_ULT(rx.value, rw.value);
    run_for(&t, 100);
    ASSERT_EQ(lr.calls, 1);
    /* The session lives on, and so does y. */
    ASSERT_EQ(a_unlock(&t, a, "y", ry.value), 0);
    ASSERT_EQ(a_unlock(&t, b, "x", rw.value), 0);
    ASSERT_EQ(FK_GET(f, n_open), 2);
    a_close(&t, a);
    a_close(&t, b);
    tloop_done(&t);
    fake_stop(f);
}

/* SESSION_EXPIRED (after the LOST pushes): every held lock is lost once,
 * the pending wait fails with BATON_ESESSION after the lost callbacks, and
 * the next call opens a fresh session. */
TEST(async_session_expired)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *a, *b;
    struct lostrec lr = {0};
    struct rec rp, rq, rb, rw = {0}, rn, rs = {0};
    uint64_t s1;
    int i;

    tloop_init(&t);
    a = a_open(&t, f->addr, 0, 0);
    b = a_open(&t, f->addr, 0, 0);
    baton_async_on_lost(a, rec_lost, &lr);
    baton_async_on_session(a, rec_open, &rs);
    s1 = baton_async_session_id(a);
    rp = a_lock(&t, a, "p", BATON_WAIT_FOREVER);
    rq = a_lock(&t, a, "q", BATON_WAIT_FOREVER);
    rb = a_lock(&t, b, "w", BATON_WAIT_FOREVER);
    ASSERT_EQ(baton_async_lock(a, "w", BATON_WAIT_FOREVER, rec_lock, &rw), 0);
    run_for(&t, 50);
    FK_SET(f, do_expire, s1);
    run_until(&t, &lr.calls, 2, 3000);
    run_until(&t, &rw.calls, 1, 3000);
    ASSERT(lost_find(&lr, "p", &i));
    ASSERT_UEQ(lr.e[i].fence, rp.value);
    ASSERT(lost_find(&lr, "q", &i));
    ASSERT_UEQ(lr.e[i].fence, rq.value);
    for (i = 0; i < 2; i++) {
        ASSERT_EQ(lr.e[i].why, BATON_ESESSION);
        ASSERT(lr.e[i].order < rw.order);
    }
    ASSERT_EQ(rw.status, BATON_ESESSION);
    ASSERT_EQ(baton_async_session_id(a), 0);
    ASSERT_EQ(rs.calls, 0); /* no fresh session until a call needs one */
    rn = a_lock(&t, a, "n", BATON_WAIT_TRY);
    ASSERT_EQ(rn.status, 0);
    ASSERT_EQ(rs.calls, 1);
    ASSERT_EQ(rs.status, 0);
    ASSERT(rs.value != s1);
    ASSERT_UEQ(baton_async_session_id(a), rs.value);
    ASSERT_EQ(FK_GET(f, n_open), 3);
    ASSERT_EQ(baton_async_unlock(a, "p", rp.value, NULL, NULL), BATON_ELOST);
    ASSERT_EQ(baton_async_unlock(a, "q", rq.value, NULL, NULL), BATON_ELOST);
    run_for(&t, 100);
    ASSERT_EQ(lr.calls, 2);
    ASSERT_EQ(rw.calls, 1);
    ASSERT_EQ(a_unlock(&t, a, "n", rn.value), 0);
    ASSERT_EQ(a_unlock(&t, b, "w", rb.value), 0);
    a_close(&t, a);
    a_close(&t, b);
    tloop_done(&t);
    fake_stop(f);
}

/* The cluster forgot the session without a push: the next keepalive is
 * answered BATON_ESESSION, which ends the session long before its lease
 * would have run out here. */
TEST(async_keepalive_esession)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct lostrec lr = {0};
    struct rec r, r2;
    int64_t t0;

    tloop_init(&t);
    ac = a_open_ttl(&t, f->addr, 0, 3000, 0);
    baton_async_on_lost(ac, rec_lost, &lr);
    r = a_lock(&t, ac, "k", BATON_WAIT_FOREVER);
    ASSERT_EQ(r.status, 0);
    t0 = now_ms();
    FK_SET(f, do_forget, baton_async_session_id(ac));
    run_until(&t, &lr.calls, 1, 3000);
    ASSERT_LT(now_ms() - t0, 2000); /* the next keepalive, at most ttl/3 later */
    ASSERT_EQ(lr.e[0].why, BATON_ESESSION);
    ASSERT(strstr(lr.e[0].err, "keepalive") != NULL);
    r2 = a_lock(&t, ac, "k", BATON_WAIT_TRY); /* the forgotten session's hold is gone too */
    ASSERT_EQ(r2.status, 0);
    ASSERT_EQ(FK_GET(f, n_open), 2);
    ASSERT_EQ(a_unlock(&t, ac, "k", r2.value), 0);
    ASSERT_EQ(baton_async_unlock(ac, "k", r.value, NULL, NULL), BATON_ELOST);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

/* After a reconnect the client says KEEPALIVE at once (not ttl/3 later),
 * so that the node knows where the session is, and keeps its lock. */
TEST(async_reconnect_sends_keepalive)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct lostrec lr = {0};
    struct rec r;
    int64_t t0;

    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, 0); /* ttl 10 s: keepalives every 3.3 s */
    baton_async_on_lost(ac, rec_lost, &lr);
    r = a_lock(&t, ac, "k", BATON_WAIT_FOREVER);
    ASSERT_EQ(FK_GET(f, n_keepalive), 0);
    FK_SET(f, do_drop_all, true);
    t0 = now_ms();
    while (FK_GET(f, n_keepalive) == 0) {
        if (now_ms() - t0 > 1000) FAIL("no keepalive after the reconnect");
        run_for(&t, 10);
    }
    ASSERT_EQ(FK_GET(f, n_conns), 2);
    ASSERT_EQ(FK_GET(f, last_ka_conn), 2); /* on the new connection */
    ASSERT_EQ(a_unlock(&t, ac, "k", r.value), 0);
    ASSERT_EQ(lr.calls, 0);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

/* A node that stops answering keepalives (stopped, or a leader cut off
 * from the majority) is left after ttl/6 of silence, before the lease runs
 * out; the session carries on over the new connection. */
TEST(async_silent_node_is_left)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct lostrec lr = {0};
    struct rec r, r2;
    int64_t t0;

    tloop_init(&t);
    ac = a_open_ttl(&t, f->addr, 0, 3000, 0); /* keepalives every 1 s, left after 0.5 s */
    baton_async_on_lost(ac, rec_lost, &lr);
    r = a_lock(&t, ac, "k", BATON_WAIT_FOREVER);
    ASSERT_EQ(r.status, 0);
    run_for(&t, 100);
    FK_SET(f, ka_silent, true);
    t0 = now_ms();
    while (FK_GET(f, n_conns) < 2) {
        if (now_ms() - t0 > 2500) FAIL("still on the silent connection after 2500 ms");
        run_for(&t, 10);
    }
    ASSERT(strstr(baton_async_errmsg(ac), "unanswered") != NULL);
    FK_SET(f, ka_silent, false);
    r2 = a_lock(&t, ac, "k2", BATON_WAIT_TRY);
    ASSERT_EQ(r2.status, 0);
    run_for(&t, 1300); /* a keepalive on the new connection is answered */
    ASSERT_EQ(lr.calls, 0);
    ASSERT_EQ(FK_GET(f, n_open), 1);
    ASSERT_GE(FK_GET(f, last_ka_conn), 2);
    ASSERT_EQ(a_unlock(&t, ac, "k", r.value), 0);
    ASSERT_EQ(a_unlock(&t, ac, "k2", r2.value), 0);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

/* Freeing the context from inside a lost callback is deferred: the other
 * lost callback and the failed wait, queued with it (the lease ran out, so
 * all three were settled in one go), still run once each with their own
 * status. */
TEST(async_free_in_lost_callback)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *a, *b;
    struct lostrec lr = {0};
    struct rec rp, rq, rb, rw = {0};

    tloop_init(&t);
    a = a_open_ttl(&t, f->addr, 0, 600, 0);
    b = a_open(&t, f->addr, 0, 0);
    baton_async_on_lost(a, rec_lost, &lr);
    rp = a_lock(&t, a, "p", BATON_WAIT_FOREVER);
    rq = a_lock(&t, a, "q", BATON_WAIT_FOREVER);
    rb = a_lock(&t, b, "w", BATON_WAIT_FOREVER);
    ASSERT_EQ(rp.status | rq.status | rb.status, 0);
    ASSERT_EQ(baton_async_lock(a, "w", BATON_WAIT_FOREVER, rec_lock, &rw), 0);
    run_for(&t, 50);
    lr.free_me = a;
    /* A stuck node: it answers nothing (the client's reconnects re-send
     * the waiting ACQUIRE, which would otherwise renew the lease). */
    FK_SET(f, silent_acquire, true);
    FK_SET(f, ka_silent, true);
    run_until(&t, &rw.calls, 1, 3000);
    ASSERT_EQ(lr.calls, 2);
    ASSERT_EQ(rw.status, BATON_ESESSION);
    run_for(&t, 50);
    ASSERT_EQ(lr.calls, 2);
    ASSERT_EQ(rw.calls, 1);
    ASSERT_EQ(a_unlock(&t, b, "w", rb.value), 0);
    a_close(&t, b);
    tloop_done(&t);
    fake_stop(f);
}

/*
 * A forced release whose LOST push never leaves the cluster (the holder's
 * connection was gone, the leader changed): the next keepalive's answer
 * says the session has a lost hold, the client fetches it (LOST_HOLDS),
 * runs the lost callback (BATON_ELOST) within a keepalive interval, and
 * acknowledges the record with a RELEASE of its fence. The other lock and
 * the session live on.
 */
TEST(async_forced_release_told_by_keepalive_without_push)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct lostrec lr = {0};
    struct rec rx, ry, ru = {0};
    int64_t forced_at;

    tloop_init(&t);
    ac = a_open_ttl(&t, f->addr, 0, 900, 0); /* a keepalive every 300 ms */
    baton_async_on_lost(ac, rec_lost, &lr);
    rx = a_lock(&t, ac, "x", BATON_WAIT_FOREVER);
    ry = a_lock(&t, ac, "y", BATON_WAIT_FOREVER);
    ASSERT_EQ(rx.status, 0);
    FK_SET(f, force_silent, true);
    fk_force(f, "x");
    forced_at = now_ms();
    run_until(&t, &lr.calls, 1, 3000);
    ASSERT_STREQ(lr.e[0].name, "x");
    ASSERT_UEQ(lr.e[0].fence, rx.value);
    ASSERT_EQ(lr.e[0].why, BATON_ELOST);
    ASSERT(strstr(lr.e[0].err, "forced") != NULL);
    /* Within one keepalive interval (300 ms) and a round trip or two. */
    ASSERT_LE(lr.e[0].at, forced_at + 300 + 100);
    ASSERT_GE(FK_GET(f, n_lost_holds), 1);
    /* The record is acknowledged, once. */
    RUN_UNTIL_FK(&t, f, n_lost_acks, 1, 3000);
    ASSERT_EQ(FK_GET(f, n_lost), 0);
    run_for(&t, 700);
    ASSERT_EQ(lr.calls, 1);
    ASSERT_EQ(FK_GET(f, n_lost_acks), 1);
    ASSERT_EQ(baton_async_unlock(ac, "x", rx.value, rec_done, &ru), BATON_ELOST);
    ASSERT_EQ(a_unlock(&t, ac, "y", ry.value), 0);
    ASSERT_EQ(FK_GET(f, n_open), 1);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

/* The forced release happens while the client is cut off: the keepalive
 * that a reconnect sends first brings the news. */
TEST(async_forced_release_told_after_reconnect)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct lostrec lr = {0};
    struct rec rx;
    int ka;

    tloop_init(&t);
    ac = a_open_ttl(&t, f->addr, 0, 3000, 0); /* keepalives every second */
    baton_async_on_lost(ac, rec_lost, &lr);
    rx = a_lock(&t, ac, "x", BATON_WAIT_FOREVER);
    ASSERT_EQ(rx.status, 0);
    run_for(&t, 50);
    ka = (int)FK_GET(f, n_keepalive);
    /* Force (without a push) and drop the connection in one step. */
    pthread_mutex_lock(&f->mu);
    f->force_silent = true;
    snprintf(f->do_force, sizeof f->do_force, "x");
    f->do_drop_all = true;
    pthread_mutex_unlock(&f->mu);
    run_until(&t, &lr.calls, 1, 3000);
    ASSERT_EQ(lr.e[0].why, BATON_ELOST);
    /* The reconnect's keepalive told it, not a periodic one a second on. */
    ASSERT_EQ(FK_GET(f, n_keepalive), ka + 1);
    ASSERT_GE(FK_GET(f, n_conns), 2);
    RUN_UNTIL_FK(&t, f, n_lost_acks, 1, 3000);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

/* The pushed LOST of a forced release is acknowledged too (no record is
 * left behind), and an unlock already in flight when the lock was forced
 * away is itself the acknowledgement: it answers BATON_ELOST, and the lost
 * callback does not run for it. */
TEST(async_forced_release_acknowledged)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct lostrec lr = {0};
    struct rec rx, ry, ru = {0};

    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, 0);
    baton_async_on_lost(ac, rec_lost, &lr);
    rx = a_lock(&t, ac, "x", BATON_WAIT_FOREVER);
    ry = a_lock(&t, ac, "y", BATON_WAIT_FOREVER);
    fk_force(f, "x"); /* with its push */
    run_until(&t, &lr.calls, 1, 3000);
    RUN_UNTIL_FK(&t, f, n_lost_acks, 1, 3000);
    ASSERT_EQ(FK_GET(f, n_lost), 0);
    ASSERT_EQ(FK_GET(f, n_lost_holds), 0); /* nothing left to fetch */
    /* y: forced away silently while its unlock is on the way. */
    FK_SET(f, force_silent, true);
    fk_force(f, "y");
    RUN_UNTIL_FK(&t, f, n_lost, 1, 3000);
    ASSERT_EQ(baton_async_unlock(ac, "y", ry.value, rec_done, &ru), 0);
    run_until(&t, &ru.calls, 1, 3000);
    ASSERT_EQ(ru.status, BATON_ELOST);
    ASSERT(strstr(ru.err, "taken the lock away") != NULL);
    ASSERT_EQ(FK_GET(f, n_lost), 0);
    ASSERT_EQ(FK_GET(f, n_lost_acks), 2);
    ASSERT_EQ(lr.calls, 1);
    (void)rx;
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(30);
    RUN(async_keepalive_interval);
    RUN(lease_margin);
    RUN(async_lease_runs_out);
    RUN(async_lost_push_one_lock);
    RUN(async_session_expired);
    RUN(async_keepalive_esession);
    RUN(async_reconnect_sends_keepalive);
    RUN(async_silent_node_is_left);
    RUN(async_free_in_lost_callback);
    RUN(async_forced_release_told_by_keepalive_without_push);
    RUN(async_forced_release_told_after_reconnect);
    RUN(async_forced_release_acknowledged);
    return runner_done();
}
