/*
 * test_client_conn.c -- libbaton's async core and the node at the other end
 * of its connection (fake servers, tests/unit/fake_server.h): REDIRECT to
 * the leader, NO_LEADER and its back-off, endpoints that do not answer, an
 * operation timeout, no node at all, a connection lost before or after the
 * cluster applied a request (re-sent with the same seq), and a node of
 * another protocol version.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "baton/baton_async.h"
#include "baton/baton_defs.h"
#include "proto/msg.h"
#include "tests/lib/clock.h"
#include "tests/lib/runner.h"
#include "tests/unit/client_fixture.h"
#include "tests/unit/fake_server.h"

TEST(async_redirect)
{
    struct fake *fa = fake_start(), *fb = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct rec r;

    fk_redirect(fa, fb->addr);
    tloop_init(&t);
    ac = a_open(&t, fa->addr, 0, 0);
    r = a_lock(&t, ac, "r", BATON_WAIT_FOREVER);
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(a_unlock(&t, ac, "r", r.value), 0);
    a_close(&t, ac);
    tloop_done(&t);
    ASSERT_EQ(FK_GET(fa, n_redirect), 1);
    ASSERT_EQ(FK_GET(fa, n_open), 0);
    ASSERT_EQ(FK_GET(fb, n_open), 1);
    ASSERT_EQ(FK_GET(fb, n_acquire), 1);
    fake_stop(fa);
    fake_stop(fb);
}

/* Requests pending when the redirect arrives are re-sent to the leader
 * with the same ids. */
TEST(async_redirect_resends_pipelined)
{
    struct fake *fa = fake_start(), *fb = fake_start();
    struct tloop t;
    baton_opts o = {.endpoints = fa->addr};
    struct rec ro = {0}, rl[5] = {{0}};
    baton_async_t *ac;
    char name[16];

    fk_redirect(fa, fb->addr);
    tloop_init(&t);
    ac = a_new(&t, &o);
    ASSERT_EQ(baton_async_open(ac, rec_open, &ro), 0);
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "p%d", i);
        ASSERT_EQ(baton_async_lock(ac, name, BATON_WAIT_TRY, rec_lock, &rl[i]), 0);
    }
    run_until(&t, &ro.calls, 1, 3000);
    ASSERT_EQ(ro.status, 0);
    for (int i = 0; i < 5; i++) {
        run_until(&t, &rl[i].calls, 1, 3000);
        ASSERT_EQ(rl[i].status, 0);
        ASSERT(rl[i].order > ro.order);
    }
    a_close(&t, ac);
    tloop_done(&t);
    ASSERT_EQ(FK_GET(fb, n_acquire), 5);
    fake_stop(fa);
    fake_stop(fb);
}

TEST(async_no_leader_retry)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct rec r;
    int64_t t0 = now_ms();

    FK_SET(f, no_leader, 3);
    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, 0);
    /* Three NO_LEADER answers, each followed by a back-off: 10..20, 20..40
     * and 40..80 ms (async_conn.c, backoff). */
    ASSERT_GE(now_ms() - t0, 70);
    ASSERT_EQ(FK_GET(f, n_no_leader), 3);
    ASSERT_EQ(FK_GET(f, n_conns), 4);
    r = a_lock(&t, ac, "n", BATON_WAIT_TRY);
    ASSERT_EQ(r.status, 0);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

TEST(async_endpoint_rotation)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    char dead[32], eps[80];

    dead_addr(dead, sizeof dead);
    snprintf(eps, sizeof eps, "%s, %s", dead, f->addr);
    tloop_init(&t);
    ac = a_open(&t, eps, 0, 0);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

TEST(async_op_timeout)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct rec r;
    int64_t t0, dt;

    FK_SET(f, silent_acquire, true);
    tloop_init(&t);
    ac = a_open(&t, f->addr, 300, 0);
    t0 = now_ms();
    r = a_lock(&t, ac, "s", BATON_WAIT_FOREVER);
    dt = now_ms() - t0;
    ASSERT_EQ(r.status, BATON_ETIMEDOUT);
    ASSERT_GE(dt, 290);
    ASSERT_LT(dt, 2000);
    /* The abandoned call is withdrawn. */
    run_for(&t, 50);
    ASSERT_EQ(FK_GET(f, n_cancel), 1);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

/* A node that owes an answer and says nothing for BATON__SILENT_MS (500 ms)
 * is left, and the request re-sent elsewhere -- here the same fake, which
 * answers HELLO and keepalives but never the ACQUIRE: the reconnections do
 * not restart the op timeout, which still ends the call. */
TEST(async_silent_node_left)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct rec r;
    int64_t t0, dt;
    int conns;

    tloop_init(&t);
    ac = a_open(&t, f->addr, 1600, 0);
    conns = FK_GET(f, n_conns);
    FK_SET(f, silent_acquire, true);
    t0 = now_ms();
    r = a_lock(&t, ac, "s", BATON_WAIT_FOREVER);
    dt = now_ms() - t0;
    ASSERT(r.status == BATON_ETIMEDOUT || r.status == BATON_EUNAVAIL);
    ASSERT_GE(dt, 1590);
    ASSERT_LT(dt, 3000);
    /* About one reconnection per 500 ms of silence. */
    ASSERT_GE(FK_GET(f, n_conns) - conns, 2);
    ASSERT_LE(FK_GET(f, n_conns) - conns, 4);
    ASSERT_GE(FK_GET(f, n_acquire), 2);
    FK_SET(f, silent_acquire, false);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

TEST(async_unavailable)
{
    struct tloop t;
    baton_opts o = {.connect_timeout_ms = 300, .op_timeout_ms = 200};
    struct rec ro = {0}, rl = {0};
    baton_async_t *ac;
    char dead[32];

    dead_addr(dead, sizeof dead);
    o.endpoints = dead;
    tloop_init(&t);
    ac = a_new(&t, &o);
    ASSERT_EQ(baton_async_open(ac, rec_open, &ro), 0);
    ASSERT_EQ(baton_async_lock(ac, "u", BATON_WAIT_FOREVER, rec_lock, &rl), 0);
    run_until(&t, &rl.calls, 1, 3000);
    run_until(&t, &ro.calls, 1, 3000);
    ASSERT_EQ(rl.status, BATON_EUNAVAIL); /* its op_timeout (200) came first */
    ASSERT(rl.order < ro.order);
    ASSERT_EQ(ro.status, BATON_EUNAVAIL);
    ASSERT(strstr(ro.err, "refused") != NULL);
    ASSERT_EQ(baton_async_lock(ac, "u", 0, rec_lock, &rl), BATON_ESESSION);
    run_for(&t, 30);
    ASSERT_EQ(rl.calls, 1);
    ASSERT_EQ(ro.calls, 1);
    baton_async_free(ac);
    tloop_done(&t);
}

/* The connection drops right after the QUEUED reply: the client reconnects,
 * re-sends the ACQUIRE with the same seq (the fake's dedup table answers
 * QUEUED again), and the grant is pushed to the new connection. */
TEST(async_reconnect_resends_same_seq)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *a, *b;
    struct rec ra, rb = {0};

    tloop_init(&t);
    a = a_open(&t, f->addr, 0, 0);
    b = a_open(&t, f->addr, 0, 0);
    ra = a_lock(&t, a, "x", BATON_WAIT_FOREVER);
    FK_SET(f, drop_after_queued, 1);
    ASSERT_EQ(baton_async_lock(b, "x", BATON_WAIT_FOREVER, rec_lock, &rb), 0);
    run_for(&t, 300);
    ASSERT_EQ(rb.calls, 0);
    ASSERT_EQ(FK_GET(f, n_acquire), 3);   /* a's, b's, b's again */
    ASSERT_EQ(FK_GET(f, n_dedup_hits), 1);
    ASSERT_EQ(FK_GET(f, n_conns), 3);
    ASSERT_EQ(a_unlock(&t, a, "x", ra.value), 0);
    run_until(&t, &rb.calls, 1, 3000);
    ASSERT_EQ(rb.status, 0);
    ASSERT_ULT(ra.value, rb.value);
    a_close(&t, a);
    a_close(&t, b);
    tloop_done(&t);
    fake_stop(f);
}

/* The cluster applied the ACQUIRE but the connection died before the
 * reply: the re-sent ACQUIRE (same seq) gets the cached grant, once. */
TEST(async_resend_unanswered_gets_cached_result)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct rec r;

    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, 0);
    FK_SET(f, drop_unanswered, 1);
    r = a_lock(&t, ac, "d", BATON_WAIT_TRY);
    ASSERT_EQ(r.status, 0); /* not EWOULDBLOCK: the first apply is ours */
    ASSERT_EQ(FK_GET(f, n_acquire), 2);
    ASSERT_EQ(FK_GET(f, n_dedup_hits), 1);
    ASSERT_EQ(FK_GET(f, n_conns), 2);
    ASSERT_EQ(a_unlock(&t, ac, "d", r.value), 0);
    run_for(&t, 20);
    ASSERT_EQ(r.calls, 1);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

/* batond answers NO_LEADER, never a final error, for a command whose
 * entry raft had accepted but whose outcome the node cannot know (its log
 * write of the entry failed: the followers may still commit it). The fake
 * applies the ACQUIRE, then the RELEASE, and answers each NO_LEADER: the
 * client re-sends each with the same seq, and the dedup table gives the
 * real outcome -- the grant (a new seq would be refused EWOULDBLOCK: the
 * session holds the lock), and the release (a new seq would be refused
 * ENOTHELD: the lock is free already). */
TEST(async_outcome_unknown_resent_same_seq)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac, *other;
    struct rec r, o;

    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, 0);
    FK_SET(f, unknown_outcome, 1);
    r = a_lock(&t, ac, "u", BATON_WAIT_TRY);
    ASSERT_EQ(r.status, 0);
    ASSERT_UEQ(r.value, 1); /* the fence of the one grant */
    ASSERT_EQ(FK_GET(f, n_acquire), 2);
    ASSERT_EQ(FK_GET(f, n_no_leader), 1);
    ASSERT_EQ(FK_GET(f, n_dedup_hits), 1);
    FK_SET(f, unknown_outcome, 1);
    ASSERT_EQ(a_unlock(&t, ac, "u", r.value), 0);
    ASSERT_EQ(FK_GET(f, n_release), 2);
    ASSERT_EQ(FK_GET(f, n_no_leader), 2);
    ASSERT_EQ(FK_GET(f, n_dedup_hits), 2);
    /* The lock is free for anyone: both outcomes were the cluster's. */
    other = a_open(&t, f->addr, 0, 0);
    o = a_lock(&t, other, "u", BATON_WAIT_TRY);
    ASSERT_EQ(o.status, 0);
    ASSERT_UEQ(o.value, 2);
    a_close(&t, other);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

TEST(async_version_mismatch)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;

    FK_SET(f, hello_version, BATON_PROTO_VERSION + 1);
    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, BATON_EVERSION);
    baton_async_free(ac);
    tloop_done(&t);
    fake_stop(f);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(30);
    RUN(async_redirect);
    RUN(async_redirect_resends_pipelined);
    RUN(async_no_leader_retry);
    RUN(async_endpoint_rotation);
    RUN(async_op_timeout);
    RUN(async_silent_node_left);
    RUN(async_unavailable);
    RUN(async_reconnect_resends_same_seq);
    RUN(async_resend_unanswered_gets_cached_result);
    RUN(async_outcome_unknown_resent_same_seq);
    RUN(async_version_mismatch);
    return runner_done();
}
