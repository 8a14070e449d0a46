/*
 * test_keepalive.c -- a leader acknowledges a keepalive only once it has
 * confirmed, through a majority, that it is still the leader of its term
 * (server/keepalive.c). Raw protocol against three real batond processes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/buf.h"
#include "proto/msg.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/runner.h"

static struct cluster C;

/* A raw protocol connection with its input buffer. */
struct raw {
    int fd;
    uint8_t in[65536];
    size_t len;
};

static int raw_connect(struct raw *r, const char *endpoint)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    char host[64];
    const char *colon = strrchr(endpoint, ':');

    if (colon == NULL || (size_t)(colon - endpoint) >= sizeof host) return -1;
    memcpy(host, endpoint, (size_t)(colon - endpoint));
    host[colon - endpoint] = '\0';
    sa.sin_port = htons((uint16_t)atoi(colon + 1));
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) return -1;
    r->len = 0;
    r->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (r->fd < 0) return -1;
    if (connect(r->fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(r->fd);
        r->fd = -1;
        return -1;
    }
    return 0;
}

static int raw_send(struct raw *r, const struct msg *m)
{
    struct buf b;
    int rv;

    buf_init(&b);
    rv = proto_encode(&b, m);
    if (rv == 0 && write(r->fd, b.data, b.len) != (ssize_t)b.len) rv = -1;
    buf_free(&b);
    return rv;
}

/* Wait up to timeout_ms for the next frame. 1: *m decoded (msg_free it);
 * 0: nothing arrived in time; -1: the connection failed. */
static int raw_recv(struct raw *r, struct msg *m, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;

    for (;;) {
        size_t flen;
        int rv = proto_frame_check(r->in, r->len, &flen);
        struct pollfd p = {.fd = r->fd, .events = POLLIN};
        int64_t left = deadline - now_ms();
        ssize_t n;

        if (rv < 0) return -1;
        if (rv == 1) {
            rv = proto_decode(r->in, flen, m);
            /* The caller reads m now; keep the frame's bytes until the next call. */
            if (rv != 0) return -1;
            memmove(r->in, r->in + flen, r->len - flen);
            r->len -= flen;
            return 1;
        }
        if (left <= 0) return 0;
        if (poll(&p, 1, (int)left) <= 0) continue;
        n = read(r->fd, r->in + r->len, sizeof r->in - r->len);
        if (n <= 0) return -1;
        r->len += (size_t)n;
    }
}

/* HELLO then OPEN_SESSION on the leader; returns the session id. */
static uint64_t open_session(struct raw *r, const char *endpoint, uint32_t ttl_ms)
{
    struct msg m = {.type = MSG_HELLO, .req_id = 1};
    struct msg in;

    ASSERT_EQ(raw_connect(r, endpoint), 0);
    m.u.hello.version = BATON_PROTO_VERSION;
    m.u.hello.client_name.p = "keepalive-test";
    m.u.hello.client_name.n = 14;
    ASSERT_EQ(raw_send(r, &m), 0);
    ASSERT_EQ(raw_recv(r, &in, 5000), 1);
    ASSERT_EQ(in.type, MSG_HELLO_OK);
    msg_free(&in);
    memset(&m, 0, sizeof m);
    m.type = MSG_OPEN_SESSION;
    m.req_id = 2;
    m.u.open_session.ttl_ms = ttl_ms;
    /* A node raft has just made leader answers NO_LEADER until its barrier
     * has applied: ask again, as libbaton does, for up to 5 s. */
    for (int64_t until = now_ms() + 5000;;) {
        ASSERT_EQ(raw_send(r, &m), 0);
        ASSERT_EQ(raw_recv(r, &in, 5000), 1);
        if (in.type != MSG_NO_LEADER || now_ms() >= until) break;
        msg_free(&in);
        sleep_ms(50);
    }
    ASSERT_EQ(in.type, MSG_SESSION);
    {
        uint64_t id = in.u.session.session;
        msg_free(&in);
        return id;
    }
}

static void send_keepalive(struct raw *r, uint64_t req_id, uint64_t session)
{
    struct msg m = {.type = MSG_KEEPALIVE, .req_id = req_id};

    m.u.keepalive.session = session;
    ASSERT_EQ(raw_send(r, &m), 0);
}

/*
 * With both followers stopped, the leader cannot know yet that it lost its
 * majority (it finds out after an election timeout), and a leader that
 * answered keepalives from memory would acknowledge them. It must not: the
 * reply may only be "not the leader" (or nothing) while the followers are
 * stopped. Once they run again, a keepalive is acknowledged (so the test
 * cannot pass with keepalives that are never answered).
 */
TEST(cut_off_leader_never_acknowledges_a_keepalive)
{
    struct raw r = {.fd = -1};
    struct msg in;
    uint64_t session;
    int leader, got;
    int64_t until;
    bool acked = false;

    ASSERT_EQ(cluster_start(&C, 3), 0);
    leader = cluster_wait_leader(&C, 15000);
    ASSERT_GE(leader, 0);
    session = open_session(&r, cluster_endpoint(&C, leader), 30000);

    /* Control: a keepalive to a healthy leader is acknowledged. */
    send_keepalive(&r, 3, session);
    ASSERT_EQ(raw_recv(&r, &in, 5000), 1);
    ASSERT_EQ(in.type, MSG_RESULT);
    ASSERT_EQ(in.u.result.status, 0);
    msg_free(&in);

    for (int i = 0; i < C.n; i++)
        if (i != leader) ASSERT_EQ(cluster_kill(&C, i, SIGSTOP), 0);
    send_keepalive(&r, 4, session);
    until = now_ms() + 2000; /* several election timeouts */
    while (now_ms() < until) {
        got = raw_recv(&r, &in, (int)(until - now_ms()));
        if (got != 1) break;
        if (in.type == MSG_RESULT && in.req_id == 4 && in.u.result.status == 0) acked = true;
        printf("# while cut off: %s (req %llu)\n", msg_type_name(in.type),
               (unsigned long long)in.req_id);
        msg_free(&in);
    }
    for (int i = 0; i < C.n; i++)
        if (i != leader) cluster_kill(&C, i, SIGCONT);
    if (acked) FAIL("a leader cut off from both followers acknowledged a keepalive");

    /* After the followers resume, the leader -- whichever node it is by
     * then; the resumed nodes may hold an election -- acknowledges
     * keepalives again. */
    close(r.fd);
    r.fd = -1;
    until = now_ms() + 20000;
    acked = false;
    while (!acked && now_ms() < until) {
        struct msg h = {.type = MSG_HELLO, .req_id = 10};

        leader = cluster_wait_leader(&C, 15000);
        ASSERT_GE(leader, 0);
        ASSERT_EQ(raw_connect(&r, cluster_endpoint(&C, leader)), 0);
        h.u.hello.version = BATON_PROTO_VERSION;
        h.u.hello.client_name.p = "keepalive-test";
        h.u.hello.client_name.n = 14;
        ASSERT_EQ(raw_send(&r, &h), 0);
        if (raw_recv(&r, &in, 5000) == 1) {
            msg_free(&in);
            send_keepalive(&r, 11, session);
            if (raw_recv(&r, &in, 2000) == 1) {
                acked = in.type == MSG_RESULT && in.u.result.status == 0;
                msg_free(&in);
            }
        }
        close(r.fd);
        r.fd = -1;
    }
    if (!acked) FAIL("no keepalive acknowledged after the followers resumed");
    ASSERT_EQ(cluster_stop(&C), 0);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(120);
    RUN(cut_off_leader_never_acknowledges_a_keepalive);
    return runner_done();
}
