/*
 * test_dedup.c -- requests that take effect once, against three real
 * batond processes on 127.0.0.1 (tests/lib/cluster.h): bounded
 * deduplication (proto/msg.h; docs/design.md, "Deduplication").
 *
 *  - An OPEN_SESSION whose SESSION reply is lost (the client's connection
 *    dies before it arrives) and that is sent again with the same nonce
 *    gets the session it opened: one session, not two. So does a re-send
 *    to the next leader. Once the session has ended, the nonce opens a
 *    new one, and nothing of the old one comes back.
 *  - A keep list the store would refuse is refused by the leader.
 *  - A lock call that waits while its session goes through hundreds of
 *    lock/unlock cycles is kept in the leader's cache of results (the
 *    client's keep list, through batond into the log), so that after the
 *    leader is killed the re-sent call still learns that it waits, and
 *    ends in a grant.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "baton/baton_async.h"
#include "baton/baton_defs.h"
#include "proto/msg.h"
#include "tests/lib/aclient.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/runner.h"
#include "tests/lib/tloop.h"
#include "tests/lib/tls_sock.h"

static struct cluster C;
static int L; /* the leader's index */

static void start3(void)
{
    ASSERT_EQ(cluster_start(&C, 3), 0);
    L = cluster_wait_leader(&C, 15000);
    ASSERT_GE(L, 0);
}

/* A connection to the leader, through HELLO. */
static void conn_leader(struct tls_sock *s)
{
    struct tls_sock_cfg cfg;

    cluster_sock_cfg(&C, &cfg);
    if (tls_sock_connect(s, C.nodes[L].client_port, &cfg, 5000) != 0) FAIL("%s", s->err);
    if (tls_sock_hello(s, NULL, NULL) != 0) FAIL("HELLO: %s", s->err);
}

/* Send m and return its answer in *r (msg_free it). A new leader answers
 * NO_LEADER until its barrier commits: asked again, for up to 5 s. */
static void ask(struct tls_sock *s, const struct msg *m, struct msg *r)
{
    for (int tries = 0;; tries++) {
        if (tls_sock_request(s, m, r, 10000) != 0)
            FAIL("%s: %s", msg_type_name(m->type), s->err);
        if (r->type != MSG_NO_LEADER || tries == 50) return;
        msg_free(r);
        usleep(100 * 1000);
    }
}

static struct msg open_msg(uint64_t req_id, uint64_t nonce)
{
    struct msg m = {.type = MSG_OPEN_SESSION, .req_id = req_id};

    m.u.open_session.ttl_ms = 60000;
    m.u.open_session.client_name.p = "dedup";
    m.u.open_session.client_name.n = 5;
    m.u.open_session.nonce = nonce;
    return m;
}

/* OPEN_SESSION with nonce on a new connection to the leader: the session. */
static uint64_t open_nonce(uint64_t nonce)
{
    struct msg m = open_msg(2, nonce), r;
    struct tls_sock s;
    uint64_t id;

    conn_leader(&s);
    ask(&s, &m, &r);
    if (r.type != MSG_SESSION)
        FAIL("OPEN_SESSION answered %s (%s)", msg_type_name(r.type),
             baton_err_name(tls_sock_status(&r)));
    ASSERT_UEQ(r.u.session.ttl_ms, 60000);
    id = r.u.session.session;
    msg_free(&r);
    tls_sock_close(&s);
    return id;
}

/* How many sessions the leader lists. */
static uint32_t n_sessions(void)
{
    struct msg m = {.type = MSG_LIST_SESSIONS, .req_id = 9}, r;
    struct tls_sock s;
    uint32_t n;

    conn_leader(&s);
    ask(&s, &m, &r);
    ASSERT_EQ(r.type, MSG_SESSIONS_R);
    n = r.u.sessions_r.n;
    ASSERT_EQ(r.u.sessions_r.more, 0);
    msg_free(&r);
    tls_sock_close(&s);
    return n;
}

/* A request of session `session` on a new connection to the leader: the
 * status of its answer. */
static int op_status(struct msg *m)
{
    struct tls_sock s;
    struct msg r;
    int st;

    conn_leader(&s);
    ask(&s, m, &r);
    st = tls_sock_status(&r);
    msg_free(&r);
    tls_sock_close(&s);
    return st;
}

TEST(open_session_resent_after_a_lost_reply)
{
    struct msg m = open_msg(1, 0xfeedface);
    struct tls_sock s;
    uint64_t s1, s2, s3;
    int64_t end;

    start3();
    /* The OPEN_SESSION goes out and the connection dies before SESSION
     * comes back: the client cannot know whether it took effect. */
    conn_leader(&s);
    ASSERT_EQ(tls_sock_send_msg(&s, &m), 0);
    tls_sock_close(&s);
    end = now_ms() + 5000;
    while (n_sessions() == 0 && now_ms() < end) usleep(20 * 1000);
    ASSERT_EQ(n_sessions(), 1);
    /* The re-send, same nonce: that session, and still one. */
    s1 = open_nonce(0xfeedface);
    ASSERT_EQ(n_sessions(), 1);
    ASSERT_UEQ(open_nonce(0xfeedface), s1);
    /* Another nonce is another session. */
    s2 = open_nonce(0xbeef);
    ASSERT(s2 != s1);
    ASSERT_EQ(n_sessions(), 2);
    /* The next leader knows the nonce too (it is replicated state). */
    ASSERT_EQ(cluster_kill(&C, L, SIGKILL), 128 + SIGKILL);
    L = cluster_wait_leader(&C, 15000);
    ASSERT_GE(L, 0);
    ASSERT_UEQ(open_nonce(0xfeedface), s1);
    ASSERT_EQ(n_sessions(), 2);
    /* Closed, the session takes its nonce with it: the same nonce opens a
     * new session, and the old one stays closed. */
    memset(&m, 0, sizeof m);
    m.type = MSG_CLOSE_SESSION;
    m.req_id = 3;
    m.u.op.session = s1;
    m.u.op.seq = 1;
    ASSERT_EQ(op_status(&m), 0);
    s3 = open_nonce(0xfeedface);
    ASSERT(s3 != s1 && s3 != s2);
    m.type = MSG_ACQUIRE;
    m.u.op.seq = 2;
    m.u.op.lock.p = "x";
    m.u.op.lock.n = 1;
    ASSERT_EQ(op_status(&m), BATON_ESESSION);
    ASSERT_EQ(n_sessions(), 2);
    /* A keep list the store would refuse: not below ack_below, not
     * increasing. */
    {
        struct msg_seq keep[2] = {{5}, {4}};
        m.u.op.session = s3;
        m.u.op.seq = 10;
        m.u.op.ack_below = 5;
        m.u.op.n_keep = 1;
        m.u.op.keep = keep;
        ASSERT_EQ(op_status(&m), BATON_EINVAL);
        m.u.op.ack_below = 9;
        m.u.op.n_keep = 2;
        ASSERT_EQ(op_status(&m), BATON_EINVAL);
        keep[0].seq = 3;
        ASSERT_EQ(op_status(&m), 0); /* 3, 4 < 9: fine */
    }
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* ---- a long wait through a failover ------------------------------------- */

static baton_async_t *a_open(struct tloop *t, const char *client_name)
{
    baton_opts o = {.endpoints = cluster_endpoints(&C), .client_name = client_name,
                    .connect_timeout_ms = 10000, .op_timeout_ms = 20000};

    return a_open_with(t, &o);
}

static uint64_t a_lock(struct tloop *t, baton_async_t *ac, const char *name, int64_t wait_ms)
{
    struct rec r = {0};

    ASSERT_EQ(baton_async_lock(ac, name, wait_ms, rec_lock, &r), 0);
    run_until(t, &r.calls, 1, 20000);
    if (r.status != 0)
        FAIL("lock %s: %s (%s)", name, baton_err_name(r.status), baton_async_errmsg(ac));
    return r.value;
}

static void a_unlock(struct tloop *t, baton_async_t *ac, const char *name, uint64_t fence)
{
    struct rec r = {0};

    ASSERT_EQ(baton_async_unlock(ac, name, fence, rec_done, &r), 0);
    run_until(t, &r.calls, 1, 20000);
    if (r.status != 0)
        FAIL("unlock %s: %s (%s)", name, baton_err_name(r.status), baton_async_errmsg(ac));
}

static void a_close(struct tloop *t, baton_async_t *ac)
{
    struct rec r = {0};

    ASSERT_EQ(baton_async_close_session(ac, rec_done, &r), 0);
    run_until(t, &r.calls, 1, 20000);
    ASSERT_EQ(r.status, 0);
    baton_async_free(ac);
}

TEST(long_wait_survives_pruning_and_failover)
{
    enum { CYCLES = 300 };
    struct tloop t;
    baton_async_t *a, *b;
    struct rec rw = {0};
    uint64_t fa;
    int64_t end;

    start3();
    tloop_init(&t);
    a = a_open(&t, "holder");
    b = a_open(&t, "waiter");
    fa = a_lock(&t, a, "w", BATON_WAIT_FOREVER);
    ASSERT_EQ(baton_async_lock(b, "w", BATON_WAIT_FOREVER, rec_lock, &rw), 0);
    end = now_ms() + 10000;
    while (cluster_lock_i64(&C, "w", "total_waiters") != 1 && now_ms() < end) run_for(&t, 20);
    ASSERT_EQ(cluster_lock_i64(&C, "w", "total_waiters"), 1);
    /* Hundreds of requests acknowledged past the waiting call. */
    for (int i = 0; i < CYCLES; i++) a_unlock(&t, b, "c", a_lock(&t, b, "c", BATON_WAIT_TRY));
    ASSERT_EQ(rw.calls, 0);
    /* The leader dies: b re-sends the waiting call to the next one, which
     * answers from its kept result that it still waits. */
    ASSERT_EQ(cluster_kill(&C, L, SIGKILL), 128 + SIGKILL);
    L = cluster_wait_leader(&C, 15000);
    ASSERT_GE(L, 0);
    a_unlock(&t, b, "c", a_lock(&t, b, "c", BATON_WAIT_TRY)); /* b is through */
    run_for(&t, 200);
    ASSERT_EQ(rw.calls, 0);
    a_unlock(&t, a, "w", fa);
    run_until(&t, &rw.calls, 1, 20000);
    if (rw.status != 0) FAIL("the waiting call ended with %s", baton_err_name(rw.status));
    ASSERT(rw.value > fa);
    a_unlock(&t, b, "w", rw.value);
    a_close(&t, a);
    a_close(&t, b);
    tloop_done(&t);
    ASSERT_EQ(cluster_stop(&C), 0);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(180);
    RUN(open_session_resent_after_a_lost_reply);
    RUN(long_wait_survives_pruning_and_failover);
    return runner_done();
}
