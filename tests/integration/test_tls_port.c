/*
 * test_tls_port.c -- the client port's TLS and its bounds, against real
 * batond processes, over raw sockets (tests/lib/tls_sock.h):
 *
 *  - a TLS node serves TLS, and answers a plaintext client with a
 *    plaintext ERROR(BATON_ETLS) it can read; a plaintext node answers a
 *    TLS ClientHello the same way;
 *  - --tls-client-ca: no client certificate, or one of another CA, is
 *    refused; the CA's own is accepted and its CN names the principal
 *    when the auth file has a `cert` line for it;
 *  - --handshake-timeout: a silent socket, and a TLS connection that never
 *    sends HELLO, are closed;
 *  - 2,000 connections that never authenticate, against
 *    --max-unauth-conns 500, while an authenticated client keeps locking
 *    on its connection and a new one still gets in.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "baton/baton_defs.h"
#include "proto/msg.h"
#include "tests/lib/certs.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/runner.h"
#include "tests/lib/tls_sock.h"

static int leader_of(struct cluster *c)
{
    int l = cluster_wait_leader(c, 15000);
    if (l < 0) FAIL("no leader");
    return l;
}

static void start(struct cluster *c, int secure, const char *const *extra, const char *lines)
{
    struct cluster_opts o = {.secure = secure, .extra_args = extra, .auth_lines = lines};
    if (cluster_start_opts(c, 3, &o) != 0) FAIL("cannot start the cluster");
}

/* Read a plaintext ERROR frame from a raw socket: its code, and its
 * message into msg. */
static int plain_error(int port, const void *first, size_t n, char *msg, size_t cap)
{
    struct tls_sock s;
    struct msg m;
    int code = 0;

    if (tls_sock_connect(&s, port, NULL, 3000) != 0) FAIL("connect: %s", s.err);
    if (tls_sock_send(&s, first, n) != 0) FAIL("send: %s", s.err);
    if (tls_sock_recv_msg(&s, &m, 3000) != 0) FAIL("no ERROR frame: %s", s.err);
    if (m.type == MSG_ERROR) {
        code = m.u.error.code;
        snprintf(msg, cap, "%.*s", (int)m.u.error.message.n, m.u.error.message.p);
    }
    msg_free(&m);
    tls_sock_close(&s);
    return code;
}

TEST(tls_node_serves_tls_and_refuses_plaintext_clearly)
{
    static const uint8_t plain_hello[] = {0x12, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0,
                                          2, 0, 0, 0, 0, 0, 0, 0};
    struct cluster c;
    struct tls_sock_cfg cfg;
    struct tls_sock s;
    char msg[300];
    int role = -1;

    start(&c, CLUSTER_CLIENT_TLS, NULL, NULL);
    leader_of(&c);
    cluster_sock_cfg(&c, &cfg);
    cfg.cert_file = cfg.key_file = NULL; /* no client certificate asked for */
    if (tls_sock_connect(&s, c.nodes[0].client_port, &cfg, 5000) != 0) FAIL("%s", s.err);
    ASSERT_EQ(tls_sock_hello(&s, NULL, &role), 0);
    ASSERT_EQ(role, MSG_ROLE_ADMIN); /* no auth file: the anonymous admin */
    tls_sock_close(&s);
    ASSERT_EQ(plain_error(c.nodes[1].client_port, plain_hello, sizeof plain_hello, msg,
                          sizeof msg),
              BATON_ETLS);
    if (strstr(msg, "only TLS") == NULL) FAIL("message: %s", msg);
    ASSERT_EQ(cluster_stop(&c), 0);
}

TEST(plaintext_node_refuses_tls_client_clearly)
{
    struct cluster c;
    struct tls_sock_cfg cfg = {0};
    struct tls_sock s;
    char msg[300];
    /* The start of a TLS 1.2/1.3 ClientHello record. */
    static const uint8_t client_hello[] = {0x16, 0x03, 0x01, 0x00, 0x40, 0x01, 0x00, 0x00, 0x3c};

    start(&c, 0, NULL, NULL);
    leader_of(&c);
    ASSERT_EQ(plain_error(c.nodes[0].client_port, client_hello, sizeof client_hello, msg,
                          sizeof msg),
              BATON_ETLS);
    if (strstr(msg, "does not serve TLS") == NULL) FAIL("message: %s", msg);
    /* A real TLS client fails its handshake (and the node lives on). */
    cfg.ca_file = "/etc/ssl/certs/ca-certificates.crt";
    if (access(cfg.ca_file, R_OK) == 0) {
        ASSERT_NE(tls_sock_connect(&s, c.nodes[0].client_port, &cfg, 3000), 0);
    }
    ASSERT_GE(leader_of(&c), 0);
    ASSERT_EQ(cluster_stop(&c), 0);
}

/* Connect with the given client certificate (NULL: none) and say HELLO:
 * 0, an error code, or -1 when the connection failed. */
static int hello_with_cert(struct cluster *c, int node, const char *cert, const char *key)
{
    struct tls_sock_cfg cfg;
    struct tls_sock s;
    int rv;

    cluster_sock_cfg(c, &cfg);
    cfg.cert_file = cert;
    cfg.key_file = key;
    if (tls_sock_connect(&s, c->nodes[node].client_port, &cfg, 5000) != 0) return -1;
    rv = tls_sock_hello(&s, NULL, NULL);
    tls_sock_close(&s);
    return rv;
}

TEST(client_certificates_required)
{
    struct cluster c;

    start(&c, CLUSTER_CLIENT_TLS | CLUSTER_CLIENT_CA, NULL, NULL);
    leader_of(&c);
    certs_run("ca %s other", c.certs);
    certs_run("cert %s stranger other baton-client -", c.certs);
    ASSERT_EQ(hello_with_cert(&c, 0, NULL, NULL), -1);
    ASSERT_EQ(hello_with_cert(&c, 0, cluster_cert(&c, "stranger", 0),
                              cluster_cert(&c, "stranger", 1)),
              -1);
    ASSERT_EQ(hello_with_cert(&c, 0, cluster_cert(&c, "client", 0), cluster_cert(&c, "client", 1)),
              0);
    ASSERT_EQ(cluster_stop(&c), 0);
}

TEST(certificate_names_the_principal)
{
    static const char lines[] = "baton-client read cert\n";
    struct cluster c;
    struct tls_sock_cfg cfg;
    struct tls_sock s;
    int role = -1;

    start(&c, CLUSTER_CLIENT_TLS | CLUSTER_CLIENT_CA | CLUSTER_AUTH, NULL, lines);
    leader_of(&c);
    cluster_sock_cfg(&c, &cfg);
    if (tls_sock_connect(&s, c.nodes[0].client_port, &cfg, 5000) != 0) FAIL("%s", s.err);
    ASSERT_EQ(tls_sock_hello(&s, NULL, &role), 0); /* no token: the certificate's principal */
    ASSERT_EQ(role, MSG_ROLE_READ);
    tls_sock_close(&s);
    if (tls_sock_connect(&s, c.nodes[0].client_port, &cfg, 5000) != 0) FAIL("%s", s.err);
    ASSERT_EQ(tls_sock_hello(&s, c.admin_token, &role), 0); /* a token wins */
    ASSERT_EQ(role, MSG_ROLE_ADMIN);
    tls_sock_close(&s);
    ASSERT_EQ(cluster_stop(&c), 0);
}

/* Wait until the peer closes s's socket: true if it did within ms. */
static bool closed_within(int fd, int ms)
{
    int64_t deadline = now_ms() + ms;
    char b[512];

    while (now_ms() < deadline) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) > 0) {
            ssize_t r = recv(fd, b, sizeof b, 0);
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) return true;
        }
    }
    return false;
}

TEST(stalled_handshakes_are_closed)
{
    static const char *const extra[] = {"--handshake-timeout", "600", NULL};
    struct cluster c;
    struct tls_sock_cfg cfg;
    struct tls_sock silent, no_hello;
    struct msg m;

    start(&c, CLUSTER_CLIENT_TLS, extra, NULL);
    leader_of(&c);
    /* A socket that sends nothing. */
    if (tls_sock_connect(&silent, c.nodes[0].client_port, NULL, 3000) != 0) FAIL("%s", silent.err);
    /* A TLS connection that never says HELLO: told why, then closed. */
    cluster_sock_cfg(&c, &cfg);
    if (tls_sock_connect(&no_hello, c.nodes[0].client_port, &cfg, 3000) != 0)
        FAIL("%s", no_hello.err);
    ASSERT(closed_within(silent.fd, 5000));
    ASSERT_EQ(tls_sock_recv_msg(&no_hello, &m, 5000), 0);
    ASSERT_EQ(m.type, MSG_ERROR);
    ASSERT_EQ(m.u.error.code, BATON_ETIMEDOUT);
    msg_free(&m);
    tls_sock_close(&silent);
    tls_sock_close(&no_hello);
    ASSERT_EQ(cluster_stop(&c), 0);
}

/* One request on an authenticated raw connection: its status. */
static int op(struct tls_sock *s, int type, uint64_t session, uint64_t seq, const char *lock,
              uint64_t fence)
{
    struct msg m = {.type = (uint16_t)type, .req_id = seq}, r;
    int st;

    m.u.op.session = session;
    m.u.op.seq = seq;
    m.u.op.wait_ms = -1;
    m.u.op.fence = fence;
    m.u.op.lock.p = lock;
    m.u.op.lock.n = (uint16_t)strlen(lock);
    if (tls_sock_request(s, &m, &r, 10000) != 0) FAIL("%s: %s", msg_type_name(type), s->err);
    st = tls_sock_status(&r);
    if (st == 0 && r.type == MSG_RESULT && r.u.result.kind == RESULT_GRANTED)
        st = (int)r.u.result.value; /* the fence, for the caller */
    msg_free(&r);
    return st;
}

static uint64_t open_session(struct tls_sock *s, uint64_t req)
{
    struct msg m = {.type = MSG_OPEN_SESSION, .req_id = req}, r;
    uint64_t id;

    m.u.open_session.ttl_ms = 30000;
    if (tls_sock_request(s, &m, &r, 10000) != 0 || r.type != MSG_SESSION)
        FAIL("OPEN_SESSION: %s (type %s)", s->err, msg_type_name(r.type));
    id = r.u.session.session;
    msg_free(&r);
    return id;
}

TEST(unauthenticated_flood_does_not_lock_out_clients)
{
    static const char *const extra[] = {"--max-unauth-conns", "500", "--max-conns", "4000", NULL};
    enum { FLOOD = 2000 };
    static int fds[FLOOD];
    struct cluster c;
    struct tls_sock_cfg cfg;
    struct tls_sock s, fresh;
    struct rlimit rl;
    uint64_t session, seq = 10;
    int l, opened = 0;

    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < FLOOD + 200) FAIL("open-files limit %llu is too low", (unsigned long long)rl.rlim_cur);
    start(&c, CLUSTER_CLIENT_TLS | CLUSTER_AUTH, extra, NULL);
    l = leader_of(&c);
    cluster_sock_cfg(&c, &cfg);
    if (tls_sock_connect(&s, c.nodes[l].client_port, &cfg, 5000) != 0) FAIL("%s", s.err);
    ASSERT_EQ(tls_sock_hello(&s, c.admin_token, NULL), 0);
    session = open_session(&s, 2);
    for (int i = 0; i < FLOOD; i++) {
        struct tls_sock raw;
        if (tls_sock_connect(&raw, c.nodes[l].client_port, NULL, 3000) != 0) {
            fds[i] = -1;
            continue;
        }
        fds[i] = raw.fd; /* kept open, silent; closed below */
        raw.fd = -1;
        tls_sock_close(&raw);
        opened++;
        if (i % 100 == 99) { /* the authenticated client keeps locking meanwhile */
            int fence = op(&s, MSG_ACQUIRE, session, ++seq, "flood/lock", 0);
            ASSERT_GT(fence, 0);
            ASSERT_EQ(op(&s, MSG_RELEASE, session, ++seq, "flood/lock", (uint64_t)fence), 0);
        }
    }
    ASSERT_GE(opened, FLOOD / 2);
    /* The node kept at most --max-unauth-conns of them: it closed the rest,
     * oldest first (it answers each ERROR(BATON_ELIMIT) before the end). */
    {
        int still_open = 0;
        usleep(1000 * 1000); /* the last closes travel */
        for (int i = 0; i < FLOOD; i++) {
            char b[256];
            if (fds[i] < 0) continue;
            for (;;) {
                struct pollfd p = {.fd = fds[i], .events = POLLIN};
                int k = poll(&p, 1, 0);
                ssize_t r;
                if (k <= 0) {
                    still_open++;
                    break;
                }
                r = recv(fds[i], b, sizeof b, MSG_DONTWAIT);
                if (r <= 0) break; /* closed by the node */
            }
        }
        ASSERT_LE(still_open, 500 + 5);
    }
    /* A new client still gets in: the oldest unauthenticated sockets make room. */
    if (tls_sock_connect(&fresh, c.nodes[l].client_port, &cfg, 5000) != 0) FAIL("%s", fresh.err);
    ASSERT_EQ(tls_sock_hello(&fresh, c.admin_token, NULL), 0);
    tls_sock_close(&fresh);
    for (int i = 0; i < FLOOD; i++)
        if (fds[i] >= 0) close(fds[i]);
    ASSERT_EQ(op(&s, MSG_CLOSE_SESSION, session, ++seq, "", 0), 0);
    tls_sock_close(&s);
    ASSERT_EQ(cluster_stop(&c), 0);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(120);
    RUN(tls_node_serves_tls_and_refuses_plaintext_clearly);
    RUN(plaintext_node_refuses_tls_client_clearly);
    RUN(client_certificates_required);
    RUN(certificate_names_the_principal);
    RUN(stalled_handshakes_are_closed);
    RUN(unauthenticated_flood_does_not_lock_out_clients);
    return runner_done();
}
