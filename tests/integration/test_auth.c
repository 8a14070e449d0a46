/*
 * test_auth.c -- principals, roles, prefixes and session ownership against
 * real batond processes with --auth-file (server/auth.h), over raw
 * sockets (tests/lib/tls_sock.h):
 *
 *  - a missing or unknown token is refused at HELLO with BATON_EAUTH;
 *  - prefixes bound the locks a client acquires and reads;
 *  - a session opened by one principal cannot be used by another, for
 *    every request that names a session, and the ack_below attack does
 *    not reach the victim; the same holds after the leader fails over;
 *  - max-sessions and max-lock-delay (a re-sent OPEN_SESSION, by its
 *    nonce, gets its session even at the cap; a nonce is its principal's);
 *  - SIGHUP re-reads the file: a removed principal's connection is closed,
 *    a new one gets in, and STATUS shows the new digest;
 *  - a flood of LIST_SESSIONS from a client with no sessions, among
 *    thousands of others' sessions, costs the leader neither its term nor
 *    a normal client's progress for as long as a second.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baton/baton.h"
#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "proto/msg.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/runner.h"
#include "tests/lib/tls_sock.h"

enum { ADMIN, ALICE, BOB, CAROL, DAVE, N_WHO };
static const char *const who_name[N_WHO] = {"harness", "alice", "bob", "carol", "dave"};
static char tokens[N_WHO][72];
static char lines[4096];

static struct cluster C;
static int L;

/* alice: client within jobs/; bob: read; carol: client, every name, at
 * most 2 sessions, lock-delay at most 100 ms; dave: not in the file yet. */
static void make_principals(void)
{
    static const char *const role[N_WHO] = {"admin", "client", "read", "client", "client"};
    static const char *const opts[N_WHO] = {"", "prefixes=jobs/,batch/", "",
                                            "max-sessions=2 max-lock-delay=100", ""};
    char line[512];

    lines[0] = '\0';
    for (int i = ALICE; i < N_WHO; i++) {
        if (cluster_token(who_name[i], role[i], opts[i], tokens[i], line, sizeof line) != 0)
            FAIL("cluster_token");
        if (i != DAVE) strcat(lines, line);
    }
}

static void start(int secure)
{
    struct cluster_opts o = {.secure = secure, .auth_lines = lines};

    make_principals();
    if (cluster_start_opts(&C, 3, &o) != 0) FAIL("cannot start the cluster");
    snprintf(tokens[ADMIN], sizeof tokens[ADMIN], "%s", C.admin_token);
    L = cluster_wait_leader(&C, 15000);
    if (L < 0) FAIL("no leader");
}

/* A connection of principal w to the leader, through HELLO. */
static void conn_as(struct tls_sock *s, int w)
{
    struct tls_sock_cfg cfg;
    int rv;

    cluster_sock_cfg(&C, &cfg);
    for (int tries = 0;; tries++) {
        if (tls_sock_connect(s, C.nodes[L].client_port, &cfg, 5000) != 0) FAIL("%s", s->err);
        rv = tls_sock_hello(s, tokens[w], NULL);
        if (rv == 0) return;
        tls_sock_close(s);
        if (tries == 20) FAIL("HELLO as %s: %d %s", who_name[w], rv, s->err);
        usleep(100 * 1000);
    }
}

/* Send m on s: the status of its answer (ERROR code, RESULT status, 0).
 * A new leader answers NO_LEADER until its first barrier commits: asked
 * again (for up to 5 s). */
static int ask(struct tls_sock *s, struct msg *m)
{
    for (int tries = 0;; tries++) {
        struct msg r;
        int st;

        if (tls_sock_request(s, m, &r, 10000) != 0)
            FAIL("%s: %s", msg_type_name(m->type), s->err);
        st = tls_sock_status(&r);
        if (r.type == MSG_REDIRECT || r.type == MSG_NO_LEADER) st = BATON_ENOTLEADER;
        msg_free(&r);
        if (st != BATON_ENOTLEADER || tries == 50) return st;
        usleep(100 * 1000);
    }
}

static struct pstr P(const char *s)
{
    struct pstr p = {s, (uint16_t)strlen(s)};
    return p;
}

static uint64_t open_session(struct tls_sock *s, uint64_t req)
{
    struct msg m = {.type = MSG_OPEN_SESSION, .req_id = req}, r;
    uint64_t id;

    m.u.open_session.ttl_ms = 60000;
    if (tls_sock_request(s, &m, &r, 10000) != 0) FAIL("OPEN_SESSION: %s", s->err);
    if (r.type != MSG_SESSION) FAIL("OPEN_SESSION answered %s (%d)", msg_type_name(r.type),
                                    tls_sock_status(&r));
    id = r.u.session.session;
    msg_free(&r);
    return id;
}

static int lock_op(struct tls_sock *s, int type, uint64_t session, uint64_t seq, const char *lock,
                   uint64_t fence, uint64_t ack_below)
{
    struct msg m = {.type = (uint16_t)type, .req_id = seq};

    m.u.op.session = session;
    m.u.op.seq = seq;
    m.u.op.ack_below = ack_below;
    m.u.op.wait_ms = 0;
    m.u.op.fence = fence;
    m.u.op.waiter = fence;
    m.u.op.lock = P(lock);
    return ask(s, &m);
}

static void body_missing_or_unknown_token_refused(void);
TEST(missing_or_unknown_token_refused)
{
    start(CLUSTER_CLIENT_TLS | CLUSTER_AUTH);
    body_missing_or_unknown_token_refused();
    ASSERT_EQ(cluster_stop(&C), 0);
}

static void body_missing_or_unknown_token_refused(void)
{
    struct tls_sock_cfg cfg;
    struct tls_sock s;

    cluster_sock_cfg(&C, &cfg);
    if (tls_sock_connect(&s, C.nodes[0].client_port, &cfg, 5000) != 0) FAIL("%s", s.err);
    ASSERT_EQ(tls_sock_hello(&s, NULL, NULL), BATON_EAUTH);
    if (strstr(s.err, "token") == NULL) FAIL("message: %s", s.err);
    tls_sock_close(&s);
    if (tls_sock_connect(&s, C.nodes[0].client_port, &cfg, 5000) != 0) FAIL("%s", s.err);
    ASSERT_EQ(tls_sock_hello(&s, tokens[DAVE], NULL), BATON_EAUTH); /* not in the file */
    if (strstr(s.err, "unknown token") == NULL) FAIL("message: %s", s.err);
    tls_sock_close(&s);
}

static void body_prefixes_bound_a_client(void);
TEST(prefixes_bound_a_client)
{
    start(CLUSTER_CLIENT_TLS | CLUSTER_AUTH);
    body_prefixes_bound_a_client();
    ASSERT_EQ(cluster_stop(&C), 0);
}

static void body_prefixes_bound_a_client(void)
{
    struct tls_sock s;
    struct msg m;
    uint64_t sess, seq = 10;

    conn_as(&s, ALICE);
    sess = open_session(&s, 1);
    ASSERT_EQ(lock_op(&s, MSG_ACQUIRE, sess, ++seq, "jobs/a", 0, 0), 0);
    ASSERT_EQ(lock_op(&s, MSG_ACQUIRE, sess, ++seq, "batch/b", 0, 0), 0);
    ASSERT_EQ(lock_op(&s, MSG_ACQUIRE, sess, ++seq, "other/c", 0, 0), BATON_EPERM);
    ASSERT_EQ(lock_op(&s, MSG_ACQUIRE, sess, ++seq, "jobs", 0, 0), BATON_EPERM);
    { /* a multi-lock: every name is checked, not only the first */
        struct msg_lock_name more[2] = {{P("batch/m")}, {P("other/m")}};
        memset(&m, 0, sizeof m);
        m.type = MSG_ACQUIRE_MANY;
        m.req_id = m.u.op.seq = ++seq;
        m.u.op.session = sess;
        m.u.op.lock = P("jobs/m");
        m.u.op.n_more = 2;
        m.u.op.more = more;
        ASSERT_EQ(ask(&s, &m), BATON_EPERM);
        m.req_id = m.u.op.seq = ++seq;
        m.u.op.n_more = 1;
        ASSERT_EQ(ask(&s, &m), 0);
    }
    memset(&m, 0, sizeof m);
    m.type = MSG_LOCK_INFO;
    m.req_id = ++seq;
    m.u.lock_info.lock = P("other/c");
    ASSERT_EQ(ask(&s, &m), BATON_EPERM);
    m.type = MSG_WATCH;
    m.req_id = ++seq;
    m.u.watch.lock = P("other/c");
    ASSERT_EQ(ask(&s, &m), BATON_EPERM);
    memset(&m, 0, sizeof m);
    m.type = MSG_LIST_LOCKS;
    m.req_id = ++seq;
    m.u.list_locks.limit = 10; /* prefix "": every lock */
    ASSERT_EQ(ask(&s, &m), BATON_EPERM);
    m.req_id = ++seq;
    m.u.list_locks.prefix = P("batch/");
    ASSERT_EQ(ask(&s, &m), 0);
    ASSERT_EQ(lock_op(&s, MSG_CLOSE_SESSION, sess, ++seq, "", 0, 0), 0);
    tls_sock_close(&s);
}

/* Every request that names alice's session, sent by carol: EPERM. */
static void carol_cannot_touch(uint64_t sess, uint64_t fence)
{
    struct tls_sock s;
    struct msg m = {.type = MSG_KEEPALIVE, .req_id = 7};
    uint64_t seq = 1000;

    conn_as(&s, CAROL);
    ASSERT_EQ(lock_op(&s, MSG_RELEASE, sess, ++seq, "jobs/held", fence, 0), BATON_EPERM);
    ASSERT_EQ(lock_op(&s, MSG_CANCEL, sess, ++seq, "jobs/held", 1, 0), BATON_EPERM);
    ASSERT_EQ(lock_op(&s, MSG_ACQUIRE, sess, ++seq, "jobs/other", 0, UINT64_MAX), BATON_EPERM);
    ASSERT_EQ(lock_op(&s, MSG_CLOSE_SESSION, sess, ++seq, "", 0, UINT64_MAX), BATON_EPERM);
    m.u.keepalive.session = sess;
    ASSERT_EQ(ask(&s, &m), BATON_EPERM);
    memset(&m, 0, sizeof m);
    m.type = MSG_LOST_HOLDS;
    m.req_id = 8;
    m.u.lost_holds.session = sess;
    ASSERT_EQ(ask(&s, &m), BATON_EPERM);
    tls_sock_close(&s);
}

/* The fence of the holder of `name`, by the admin's LOCK_INFO. */
static uint64_t holder_fence(const char *name)
{
    struct tls_sock s;
    struct msg m = {.type = MSG_LOCK_INFO, .req_id = 3}, r;
    uint64_t fence;

    conn_as(&s, ADMIN);
    m.u.lock_info.lock = P(name);
    if (tls_sock_request(&s, &m, &r, 10000) != 0 || r.type != MSG_LOCK_INFO_R)
        FAIL("LOCK_INFO %s", name);
    fence = r.u.lock_info_r.held ? r.u.lock_info_r.fence : 0;
    msg_free(&r);
    tls_sock_close(&s);
    return fence;
}

static void body_sessions_belong_to_their_principal(void);
TEST(sessions_belong_to_their_principal)
{
    start(CLUSTER_CLIENT_TLS | CLUSTER_AUTH);
    body_sessions_belong_to_their_principal();
    ASSERT_EQ(cluster_stop(&C), 0);
}

static void body_sessions_belong_to_their_principal(void)
{
    struct tls_sock s;
    uint64_t sess, seq = 10, fence;

    conn_as(&s, ALICE);
    sess = open_session(&s, 1);
    ASSERT_EQ(lock_op(&s, MSG_ACQUIRE, sess, ++seq, "jobs/held", 0, 0), 0);
    fence = holder_fence("jobs/held");
    ASSERT_GT(fence, 0);
    carol_cannot_touch(sess, fence);
    /* alice is untouched: her lock is held, her next seq is not stale. */
    ASSERT_EQ(holder_fence("jobs/held"), fence);
    ASSERT_EQ(lock_op(&s, MSG_ACQUIRE, sess, ++seq, "jobs/second", 0, 0), 0);
    tls_sock_close(&s);

    /* The leader fails over: the new one knows the owner too. */
    ASSERT_GE(cluster_kill(&C, L, SIGKILL), 0);
    L = cluster_wait_leader(&C, 15000);
    ASSERT_GE(L, 0);
    carol_cannot_touch(sess, fence);
    conn_as(&s, ALICE);
    ASSERT_EQ(lock_op(&s, MSG_RELEASE, sess, ++seq, "jobs/held", fence, 0), 0);
    ASSERT_EQ(lock_op(&s, MSG_CLOSE_SESSION, sess, ++seq, "", 0, 0), 0);
    tls_sock_close(&s);
}

/* The sessions LIST_SESSIONS shows w: how many, and how many are owned by
 * `owner`. */
static uint32_t list_sessions(int w, const char *owner, uint32_t *owned)
{
    struct tls_sock s;
    struct msg m = {.type = MSG_LIST_SESSIONS, .req_id = 9}, r;
    uint32_t n;

    conn_as(&s, w);
    m.u.list_sessions.limit = 1; /* pages of one: the filter must walk past others */
    *owned = 0;
    n = 0;
    for (;;) {
        if (tls_sock_request(&s, &m, &r, 5000) != 0 || r.type != MSG_SESSIONS_R)
            FAIL("LIST_SESSIONS as %s", who_name[w]);
        for (uint32_t i = 0; i < r.u.sessions_r.n; i++) {
            const struct msg_session_summary *it = &r.u.sessions_r.items[i];
            n++;
            if (it->owner.n == strlen(owner) && memcmp(it->owner.p, owner, it->owner.n) == 0)
                (*owned)++;
            m.u.list_sessions.after = it->id;
        }
        if (!r.u.sessions_r.more) {
            msg_free(&r);
            break;
        }
        msg_free(&r);
        m.req_id++;
    }
    tls_sock_close(&s);
    return n;
}

static void body_client_lists_only_its_sessions(void);
TEST(client_lists_only_its_sessions)
{
    start(CLUSTER_CLIENT_TLS | CLUSTER_AUTH);
    body_client_lists_only_its_sessions();
    ASSERT_EQ(cluster_stop(&C), 0);
}

static void body_client_lists_only_its_sessions(void)
{
    struct tls_sock a, c;
    uint32_t owned;

    conn_as(&c, CAROL);
    open_session(&c, 1);
    conn_as(&a, ALICE);
    open_session(&a, 1);
    open_session(&c, 2);
    ASSERT_EQ(list_sessions(ALICE, "alice", &owned), 1);
    ASSERT_EQ(owned, 1);
    ASSERT_EQ(list_sessions(CAROL, "carol", &owned), 2);
    ASSERT_EQ(owned, 2);
    ASSERT_EQ(list_sessions(BOB, "alice", &owned), 3); /* read: every session */
    ASSERT_EQ(owned, 1);
    ASSERT_EQ(list_sessions(ADMIN, "carol", &owned), 3);
    ASSERT_EQ(owned, 2);
    tls_sock_close(&a);
    tls_sock_close(&c);
}

static void body_max_sessions_per_principal(void);
TEST(max_sessions_per_principal)
{
    start(CLUSTER_CLIENT_TLS | CLUSTER_AUTH);
    body_max_sessions_per_principal();
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* OPEN_SESSION with a nonce on s: its SESSION's session id, or the
 * status of another answer as a negative number. */
static int64_t open_nonce(struct tls_sock *s, uint64_t req, uint64_t nonce)
{
    struct msg m = {.type = MSG_OPEN_SESSION, .req_id = req}, r;
    int64_t id;

    m.u.open_session.ttl_ms = 60000;
    m.u.open_session.nonce = nonce;
    if (tls_sock_request(s, &m, &r, 10000) != 0) FAIL("OPEN_SESSION: %s", s->err);
    id = r.type == MSG_SESSION ? (int64_t)r.u.session.session : tls_sock_status(&r);
    msg_free(&r);
    return id;
}

static void body_max_sessions_per_principal(void)
{
    struct tls_sock s, a2;
    struct msg m = {.type = MSG_OPEN_SESSION, .req_id = 3};
    uint64_t a, b;
    int64_t n;

    conn_as(&s, CAROL);
    a = open_session(&s, 1);
    n = open_nonce(&s, 2, 0xca401);
    ASSERT_GT(n, 0);
    b = (uint64_t)n;
    m.u.open_session.ttl_ms = 5000;
    ASSERT_EQ(ask(&s, &m), BATON_ELIMIT);
    /* At the cap, a re-sent OPEN_SESSION (its reply lost, say) still gets
     * the session its nonce opened: it opens nothing. A new nonce does
     * not get past the cap. */
    ASSERT_EQ(open_nonce(&s, 5, 0xca401), (int64_t)b);
    ASSERT_EQ(open_nonce(&s, 6, 0xca402), BATON_ELIMIT);
    /* A nonce is its principal's: alice's same nonce is a session of
     * hers, not carol's. */
    conn_as(&a2, ALICE);
    n = open_nonce(&a2, 7, 0xca401);
    ASSERT_GT(n, 0);
    ASSERT(n != (int64_t)b && n != (int64_t)a);
    tls_sock_close(&a2);
    ASSERT_EQ(lock_op(&s, MSG_CLOSE_SESSION, a, 10, "", 0, 0), 0);
    ASSERT_NE(open_session(&s, 4), 0); /* room again */
    tls_sock_close(&s);
}

/*
 * batond's --max-sessions-per-principal (50 here) caps a principal whose
 * line has no max-sessions=: alice opens sessions until the 51st is
 * refused with ELIMIT, and an admin still opens one.
 */
#define DEFAULT_CAP 50
static const char *const CAP_ARGS[] = {"--max-sessions-per-principal", "50", NULL};
TEST(default_session_cap)
{
    struct cluster_opts o = {.secure = CLUSTER_CLIENT_TLS | CLUSTER_AUTH, .auth_lines = lines,
                             .extra_args = CAP_ARGS};
    struct msg m = {.type = MSG_OPEN_SESSION};
    struct tls_sock s, admin;
    int opened = 0, st = 0;

    make_principals();
    if (cluster_start_opts(&C, 3, &o) != 0) FAIL("cannot start the cluster");
    snprintf(tokens[ADMIN], sizeof tokens[ADMIN], "%s", C.admin_token);
    L = cluster_wait_leader(&C, 15000);
    if (L < 0) FAIL("no leader");
    conn_as(&s, ALICE);
    m.u.open_session.ttl_ms = 60000;
    while (opened <= DEFAULT_CAP) {
        m.req_id = 10 + (uint64_t)opened;
        st = ask(&s, &m);
        if (st != 0) break;
        opened++;
    }
    fprintf(stderr, "# alice opened %d sessions, then %s\n", opened, baton_err_name(st));
    ASSERT_EQ(opened, DEFAULT_CAP);
    ASSERT_EQ(st, BATON_ELIMIT);
    conn_as(&admin, ADMIN);
    ASSERT_NE(open_session(&admin, 1), 0);
    tls_sock_close(&admin);
    tls_sock_close(&s);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* carol's acquires get at most 100 ms of lock-delay, whatever they ask. */
static void body_max_lock_delay_per_principal(void);
TEST(max_lock_delay_per_principal)
{
    start(CLUSTER_CLIENT_TLS | CLUSTER_AUTH);
    body_max_lock_delay_per_principal();
    ASSERT_EQ(cluster_stop(&C), 0);
}

static void body_max_lock_delay_per_principal(void)
{
    struct tls_sock s, admin;
    struct msg m;
    uint64_t sess;
    int64_t deadline;

    conn_as(&s, CAROL);
    sess = open_session(&s, 1);
    memset(&m, 0, sizeof m);
    m.type = MSG_ACQUIRE;
    m.req_id = 20;
    m.u.op.session = sess;
    m.u.op.seq = 20;
    m.u.op.lock = P("delay/carol");
    m.u.op.lock_delay_ms = 60000;
    ASSERT_EQ(ask(&s, &m), 0);
    conn_as(&admin, ADMIN);
    memset(&m, 0, sizeof m);
    m.type = MSG_EXPIRE_SESSION;
    m.req_id = 5;
    m.u.expire_session.session = sess;
    ASSERT_EQ(ask(&admin, &m), 0);
    /* The lock is delayed for 100 ms, not 60 s. */
    deadline = now_ms() + 5000;
    for (;;) {
        struct msg r;
        memset(&m, 0, sizeof m);
        m.type = MSG_LOCK_INFO;
        m.req_id = 6;
        m.u.lock_info.lock = P("delay/carol");
        if (tls_sock_request(&admin, &m, &r, 5000) != 0) FAIL("%s", admin.err);
        if (r.type != MSG_LOCK_INFO_R || (!r.u.lock_info_r.delayed && !r.u.lock_info_r.held)) {
            msg_free(&r);
            break; /* ENOTFOUND or free: the delay is over */
        }
        msg_free(&r);
        if (now_ms() > deadline) FAIL("still delayed after 5 s: max-lock-delay not applied");
        usleep(50 * 1000);
    }
    tls_sock_close(&s);
    tls_sock_close(&admin);
}

/* STATUS's auth_digest on node i. */
static uint64_t auth_digest(int i)
{
    struct tls_sock_cfg cfg;
    struct tls_sock s;
    struct msg m = {.type = MSG_STATUS, .req_id = 2}, r;
    uint64_t d;

    cluster_sock_cfg(&C, &cfg);
    if (tls_sock_connect(&s, C.nodes[i].client_port, &cfg, 5000) != 0) FAIL("%s", s.err);
    ASSERT_EQ(tls_sock_hello(&s, tokens[ADMIN], NULL), 0);
    if (tls_sock_request(&s, &m, &r, 5000) != 0 || r.type != MSG_STATUS_R) FAIL("STATUS");
    d = r.u.status_r.auth_digest;
    msg_free(&r);
    tls_sock_close(&s);
    return d;
}

static void body_sighup_rereads_the_auth_file(void);
TEST(sighup_rereads_the_auth_file)
{
    start(CLUSTER_CLIENT_TLS | CLUSTER_AUTH);
    body_sighup_rereads_the_auth_file();
    ASSERT_EQ(cluster_stop(&C), 0);
}

static void body_sighup_rereads_the_auth_file(void)
{
    struct tls_sock carol, s;
    struct tls_sock_cfg cfg;
    struct msg m;
    char line[512], fresh[4096];
    uint64_t before = auth_digest(L);

    ASSERT_NE(before, 0);
    conn_as(&carol, CAROL);
    /* The new file: carol gone, dave in. */
    fresh[0] = '\0';
    for (int i = ALICE; i < N_WHO; i++) {
        char *start = strstr(lines, who_name[i]);
        if (i == CAROL || i == DAVE || start == NULL) continue;
        snprintf(line, sizeof line, "%.*s", (int)(strchr(start, '\n') - start + 1), start);
        strcat(fresh, line);
    }
    ASSERT_EQ(cluster_token_line("dave", "client", "", tokens[DAVE], line, sizeof line), 0);
    strcat(fresh, line);
    ASSERT_EQ(cluster_auth_write(&C, fresh), 0);
    for (int i = 0; i < C.n; i++) ASSERT_EQ(cluster_kill(&C, i, SIGHUP), 0);
    /* carol's connection is told and closed. */
    if (tls_sock_recv_msg(&carol, &m, 5000) != 0) FAIL("carol: %s", carol.err);
    ASSERT_EQ(m.type, MSG_ERROR);
    ASSERT_EQ(m.u.error.code, BATON_EAUTH);
    msg_free(&m);
    tls_sock_close(&carol);
    conn_as(&s, DAVE);
    tls_sock_close(&s);
    cluster_sock_cfg(&C, &cfg);
    if (tls_sock_connect(&s, C.nodes[L].client_port, &cfg, 5000) != 0) FAIL("%s", s.err);
    ASSERT_EQ(tls_sock_hello(&s, tokens[CAROL], NULL), BATON_EAUTH);
    tls_sock_close(&s);
    for (int i = 0; i < C.n; i++) {
        uint64_t d = auth_digest(i);
        ASSERT(d != before && d != 0);
        ASSERT_UEQ(d, auth_digest(0));
    }
}

/* ---- a LIST_SESSIONS flood -------------------------------------------- */

#define FLOOD_SESSIONS 8000
#define FLOOD_LISTS 20000

/* Send n pipelined copies of a request built by fill(m, i) in one write,
 * then read n answers, counting those of type `want` with status 0. */
static uint32_t pipeline(struct tls_sock *s, uint32_t n, void (*fill)(struct msg *, uint32_t),
                         int want, int timeout_ms)
{
    struct buf b = {0};
    int64_t deadline = now_ms() + timeout_ms;
    uint32_t ok = 0;

    for (uint32_t i = 0; i < n; i++) {
        struct msg m;

        memset(&m, 0, sizeof m);
        fill(&m, i);
        ASSERT_EQ(proto_encode(&b, &m), 0);
    }
    if (tls_sock_send(s, b.data, b.len) != 0) FAIL("pipelined send: %s", s->err);
    buf_free(&b);
    for (uint32_t i = 0; i < n; i++) {
        struct msg r;
        int left = (int)(deadline - now_ms());

        if (left <= 0 || tls_sock_recv_msg(s, &r, left) != 0)
            FAIL("%u of %u answers within %d ms (%s)", i, n, timeout_ms, s->err);
        if (r.type == want && tls_sock_status(&r) == 0) ok++;
        msg_free(&r);
    }
    return ok;
}

static void fill_open(struct msg *m, uint32_t i)
{
    m->type = MSG_OPEN_SESSION;
    m->req_id = 1000 + i;
    m->u.open_session.ttl_ms = 120000;
}

static void fill_list(struct msg *m, uint32_t i)
{
    m->type = MSG_LIST_SESSIONS;
    m->req_id = 100000 + i;
    m->u.list_sessions.limit = 1000;
}

struct bystander {
    baton_t *b;
    volatile int stop;
    int64_t max_gap_ms;
    uint32_t cycles;
    int err;
};

/* A normal client locking and unlocking without pause: the longest time
 * between two of its completed cycles. */
static void *bystander_run(void *arg)
{
    struct bystander *by = arg;
    int64_t last = now_ms();

    while (!by->stop && by->err == 0) {
        baton_lock_t *l;
        int64_t now;

        by->err = baton_lock(by->b, "bystander", &l);
        if (by->err == 0) by->err = baton_unlock(l);
        now = now_ms();
        if (now - last > by->max_gap_ms) by->max_gap_ms = now - last;
        last = now;
        by->cycles++;
    }
    return NULL;
}

static void body_list_flood_keeps_the_leader(void);
TEST(list_flood_keeps_the_leader)
{
    start(CLUSTER_CLIENT_TLS | CLUSTER_AUTH);
    body_list_flood_keeps_the_leader();
    ASSERT_EQ(cluster_stop(&C), 0);
}

static void body_list_flood_keeps_the_leader(void)
{
    struct cluster_status before, after;
    struct bystander by = {0};
    struct tls_sock admin, alice;
    baton_opts o = {0};
    pthread_t t;
    uint32_t listed;

    conn_as(&admin, ADMIN);
    ASSERT_EQ(pipeline(&admin, FLOOD_SESSIONS, fill_open, MSG_SESSION, 120000), FLOOD_SESSIONS);
    ASSERT_EQ(cluster_node_status(&C, L, &before, 5000), 0);
    cluster_client_opts(&C, &o);
    by.b = client_connect(&o);
    ASSERT_EQ(pthread_create(&t, NULL, bystander_run, &by), 0);
    /* alice has no session: each of her lists is empty, and costs the
     * leader her own sessions' worth, not a walk of the 8,000 others. */
    conn_as(&alice, ALICE);
    listed = pipeline(&alice, FLOOD_LISTS, fill_list, MSG_SESSIONS_R, 120000);
    by.stop = 1;
    pthread_join(t, NULL);
    ASSERT_EQ(cluster_node_status(&C, L, &after, 5000), 0);
    fprintf(stderr, "# %u LIST_SESSIONS answered; bystander: %u cycles, longest gap %lld ms\n",
            listed, by.cycles, (long long)by.max_gap_ms);
    ASSERT_EQ(listed, FLOOD_LISTS);
    ASSERT_EQ(by.err, 0);
    ASSERT_EQ(after.role, ROLE_LEADER);
    ASSERT_EQ(after.term, before.term);
    ASSERT_LT(by.max_gap_ms, 1000);
    baton_close(by.b);
    tls_sock_close(&alice);
    tls_sock_close(&admin);
}

int main(int argc, char **argv)
{
    int rv;

    runner_init(argc, argv);
    runner_set_timeout(120);
    RUN(missing_or_unknown_token_refused);
    RUN(prefixes_bound_a_client);
    RUN(client_lists_only_its_sessions);
    RUN(max_sessions_per_principal);
    RUN(default_session_cap);
    RUN(max_lock_delay_per_principal);
    RUN(sessions_belong_to_their_principal);
    RUN(sighup_rereads_the_auth_file);
    RUN(list_flood_keeps_the_leader);
    rv = runner_done();
    return rv;
}
