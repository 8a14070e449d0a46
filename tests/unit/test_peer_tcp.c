/*
 * test_peer_tcp.c -- the plaintext raft transport (raft/peer_tcp.h) against
 * libraft's own raft_uv_tcp: each one dials the other and the accepting
 * side reports the dialling node's id and address, so the handshake is the
 * same on the wire. The baton side uses a host name ("localhost") for
 * its own address and the one it listens on; a name that does not resolve
 * fails the connect and nothing else.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <raft.h>
#include <raft/uv.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "raft/peer_base.h"
#include "raft/peer_tcp.h"
#include "tests/lib/runner.h"
#include "tests/lib/tloop.h"

struct side {
    struct raft_uv_transport t;
    raft_id accepted_id;
    char accepted_addr[128];
    int accepted, connected, failed, closed;
};

/* A free TCP port on 127.0.0.1. */
static int free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    ASSERT(fd >= 0);
    ASSERT_EQ(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ASSERT_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void free_stream(uv_handle_t *h)
{
    raft_free(h);
}

static void on_accept(struct raft_uv_transport *t, raft_id id, const char *address,
                      struct uv_stream_s *stream)
{
    struct side *s = (struct side *)t;

    s->accepted_id = id;
    snprintf(s->accepted_addr, sizeof s->accepted_addr, "%s", address);
    s->accepted++;
    uv_close((uv_handle_t *)stream, free_stream);
}

static void on_connect(struct raft_uv_connect *req, struct uv_stream_s *stream, int status)
{
    struct side *s = req->data;

    if (status == 0) {
        s->connected++;
        uv_close((uv_handle_t *)stream, free_stream);
    } else {
        s->failed++;
    }
}

static void on_close(struct raft_uv_transport *t)
{
    ((struct side *)t)->closed++;
}

TEST(same_handshake_as_libraft)
{
    struct tloop L;
    struct side lib = {0}, ours = {0};
    struct raft_uv_connect r1 = {0}, r2 = {0}, r3 = {0};
    char lib_addr[64], our_addr[64], our_dial[64];
    int p1 = free_port(), p2 = free_port();

    tloop_init(&L);
    snprintf(lib_addr, sizeof lib_addr, "127.0.0.1:%d", p1);
    snprintf(our_addr, sizeof our_addr, "localhost:%d", p2);
    snprintf(our_dial, sizeof our_dial, "127.0.0.1:%d", p2);
    ASSERT_EQ(raft_uv_tcp_init(&lib.t, &L.loop), 0);
    ASSERT_EQ(peer_tcp_init(&ours.t, &L.loop), 0);
    ASSERT_EQ(lib.t.init(&lib.t, 1, lib_addr), 0);
    ASSERT_EQ(ours.t.init(&ours.t, 2, our_addr), 0);
    ASSERT_EQ(lib.t.listen(&lib.t, on_accept), 0);
    ASSERT_EQ(ours.t.listen(&ours.t, on_accept), 0);

    /* baton dials libraft: libraft hears node 2 at "localhost:P2". */
    r1.data = &ours;
    ASSERT_EQ(ours.t.connect(&ours.t, &r1, 1, lib_addr, on_connect), 0);
    run_until(&L, &lib.accepted, 1, 5000);
    run_until(&L, &ours.connected, 1, 5000);
    ASSERT_EQ(lib.accepted_id, 2);
    ASSERT_STREQ(lib.accepted_addr, our_addr);

    /* libraft dials baton (on an address of the name it listens on). */
    r2.data = &lib;
    ASSERT_EQ(lib.t.connect(&lib.t, &r2, 2, our_dial, on_connect), 0);
    run_until(&L, &ours.accepted, 1, 5000);
    run_until(&L, &lib.connected, 1, 5000);
    ASSERT_EQ(ours.accepted_id, 1);
    ASSERT_STREQ(ours.accepted_addr, lib_addr);

    /* A name that does not resolve: that connect fails, asynchronously. */
    r3.data = &ours;
    ASSERT_EQ(ours.t.connect(&ours.t, &r3, 3, "no-such-host.invalid:1", on_connect), 0);
    run_until(&L, &ours.failed, 1, 10000);

    lib.t.close(&lib.t, on_close);
    ours.t.close(&ours.t, on_close);
    run_until(&L, &lib.closed, 1, 5000);
    run_until(&L, &ours.closed, 1, 5000);
    raft_uv_tcp_close(&lib.t);
    peer_base_free(&ours.t);
    tloop_done(&L);
}

/* Closing with a connect in flight ends it with RAFT_CANCELED. */
TEST(close_cancels_connects)
{
    struct tloop L;
    struct side ours = {0};
    struct raft_uv_connect r = {0};
    char addr[64];

    tloop_init(&L);
    snprintf(addr, sizeof addr, "127.0.0.1:%d", free_port());
    ASSERT_EQ(peer_tcp_init(&ours.t, &L.loop), 0);
    ASSERT_EQ(ours.t.init(&ours.t, 2, addr), 0);
    r.data = &ours;
    ASSERT_EQ(ours.t.connect(&ours.t, &r, 1, "localhost:1", on_connect), 0);
    ours.t.close(&ours.t, on_close);
    run_until(&L, &ours.closed, 1, 5000);
    ASSERT_EQ(ours.failed, 1);
    ASSERT_EQ(ours.connected, 0);
    peer_base_free(&ours.t);
    tloop_done(&L);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(same_handshake_as_libraft);
    RUN(close_cancels_connects);
    return runner_done();
}
