/*
 * test_peer_tcp.c -- the plaintext raft transport (raft/peer_tcp.h): two
 * of its nodes of one cluster connect both ways and the accepting side
 * reports the dialling node's id and address; a node of another cluster
 * is refused at the handshake, and both sides log it; a node without a
 * cluster id (a --join node) takes the first one presented; libraft's own
 * raft_uv_tcp (handshake protocol 1, no cluster id, as the baton binary
 * before the cluster id) is taken as an older peer both ways.
 * A node the admitted set (raft/peer_admit.h) leaves out is refused at the
 * handshake, and dropping a node from it ends its live connections.
 * One side uses a host name ("localhost") for its own address and the one
 * it listens on; a name that does not resolve fails the connect and
 * nothing else.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <raft.h>
#include <raft/uv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "raft/peer_admit.h"
#include "raft/peer_base.h"
#include "raft/peer_tcp.h"
#include "tests/lib/runner.h"
#include "tests/lib/tloop.h"

/* Is addr dialled with an older handshake than the newest (3)? */
#define OLD_IS(pb, addr) (peer_base_dial_version((pb), (addr), 3) < 3)

struct side {
    struct raft_uv_transport t;
    raft_id accepted_id;
    char accepted_addr[128];
    int accepted, connected, failed, closed;
    int logged;
    char last_log[600];
    int ended;                      /* kept streams that saw their end */
    uint64_t adopted;
};

static void side_log(void *arg, const char *msg)
{
    struct side *s = arg;

    s->logged++;
    snprintf(s->last_log, sizeof s->last_log, "%s", msg);
}

static void side_adopted(void *arg, uint64_t id)
{
    ((struct side *)arg)->adopted = id;
}

/* s's cluster id (0: none), with the log and adoption hooks. */
static void side_cluster(struct side *s, uint64_t id)
{
    struct peer_base *pb = peer_base_of(&s->t);

    pb->cluster_id = id;
    pb->log = side_log;
    pb->log_arg = s;
    pb->adopted = side_adopted;
    pb->adopted_arg = s;
}

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

TEST(handshake_checks_the_cluster)
{
    struct tloop L;
    struct side a = {0}, b = {0}, other = {0}, joiner = {0};
    struct raft_uv_connect r1 = {0}, r2 = {0}, r3 = {0}, r4 = {0}, r5 = {0};
    char a_addr[64], b_addr[64], b_dial[64], o_addr[64], j_addr[64];
    int pa = free_port(), pb = free_port(), po = free_port(), pj = free_port();

    tloop_init(&L);
    snprintf(a_addr, sizeof a_addr, "127.0.0.1:%d", pa);
    snprintf(b_addr, sizeof b_addr, "localhost:%d", pb);
    snprintf(b_dial, sizeof b_dial, "127.0.0.1:%d", pb);
    snprintf(o_addr, sizeof o_addr, "127.0.0.1:%d", po);
    snprintf(j_addr, sizeof j_addr, "127.0.0.1:%d", pj);
    ASSERT_EQ(peer_tcp_init(&a.t, &L.loop), 0);
    ASSERT_EQ(peer_tcp_init(&b.t, &L.loop), 0);
    ASSERT_EQ(peer_tcp_init(&other.t, &L.loop), 0);
    ASSERT_EQ(peer_tcp_init(&joiner.t, &L.loop), 0);
    side_cluster(&a, 0xabcull);
    side_cluster(&b, 0xabcull);
    side_cluster(&other, 0xdefull);
    side_cluster(&joiner, 0);
    ASSERT_EQ(a.t.init(&a.t, 1, a_addr), 0);
    ASSERT_EQ(b.t.init(&b.t, 2, b_addr), 0);
    ASSERT_EQ(other.t.init(&other.t, 3, o_addr), 0);
    ASSERT_EQ(joiner.t.init(&joiner.t, 4, j_addr), 0);
    ASSERT_EQ(a.t.listen(&a.t, on_accept), 0);
    ASSERT_EQ(b.t.listen(&b.t, on_accept), 0);
    ASSERT_EQ(joiner.t.listen(&joiner.t, on_accept), 0);

    /* b dials a: a hears node 2 at "localhost:PB". */
    r1.data = &b;
    ASSERT_EQ(b.t.connect(&b.t, &r1, 1, a_addr, on_connect), 0);
    run_until(&L, &a.accepted, 1, 5000);
    run_until(&L, &b.connected, 1, 5000);
    ASSERT_EQ(a.accepted_id, 2);
    ASSERT_STREQ(a.accepted_addr, b_addr);

    /* a dials b (on an address of the name it listens on). */
    r2.data = &a;
    ASSERT_EQ(a.t.connect(&a.t, &r2, 2, b_dial, on_connect), 0);
    run_until(&L, &b.accepted, 1, 5000);
    run_until(&L, &a.connected, 1, 5000);
    ASSERT_EQ(b.accepted_id, 1);
    ASSERT_STREQ(b.accepted_addr, a_addr);
    ASSERT_EQ(a.logged + b.logged, 0);

    /* A node of another cluster dials b: refused, and both sides say so. */
    r3.data = &other;
    ASSERT_EQ(other.t.connect(&other.t, &r3, 2, b_dial, on_connect), 0);
    run_until(&L, &other.failed, 1, 5000);
    run_until(&L, &b.logged, 1, 5000);
    ASSERT_EQ(b.accepted, 1);
    ASSERT_EQ(other.connected, 0);
    ASSERT(strstr(b.last_log, "belongs to cluster 0000000000000def, this node to cluster "
                              "0000000000000abc") != NULL);
    ASSERT(strstr(other.last_log, "belongs to cluster 0000000000000abc, this node to cluster "
                                  "0000000000000def") != NULL);
    ASSERT(!OLD_IS(peer_base_of(&other.t), b_dial)); /* it answered: not older */

    /* A node without an id takes the first one presented, then keeps it. */
    r4.data = &a;
    ASSERT_EQ(a.t.connect(&a.t, &r4, 4, j_addr, on_connect), 0);
    run_until(&L, &joiner.accepted, 1, 5000);
    run_until(&L, &a.connected, 2, 5000);
    ASSERT_UEQ(joiner.adopted, 0xabcull);
    ASSERT_UEQ(peer_base_of(&joiner.t)->cluster_id, 0xabcull);

    /* A name that does not resolve: that connect fails, asynchronously. */
    r5.data = &b;
    ASSERT_EQ(b.t.connect(&b.t, &r5, 3, "no-such-host.invalid:1", on_connect), 0);
    run_until(&L, &b.failed, 1, 10000);

    a.t.close(&a.t, on_close);
    b.t.close(&b.t, on_close);
    other.t.close(&other.t, on_close);
    joiner.t.close(&joiner.t, on_close);
    run_until(&L, &a.closed, 1, 5000);
    run_until(&L, &b.closed, 1, 5000);
    run_until(&L, &other.closed, 1, 5000);
    run_until(&L, &joiner.closed, 1, 5000);
    peer_base_free(&a.t);
    peer_base_free(&b.t);
    peer_base_free(&other.t);
    peer_base_free(&joiner.t);
    tloop_done(&L);
}

/* The first-start question (raft/peer_base.h): the answering side's rule
 * says node 2 has started, node 3 not. */
static bool started_2(void *arg, uint64_t id)
{
    (void)arg;
    return id == 2;
}

/*
 * An asking transport's dial carries the question: a node of the same
 * cluster answers "known" for an id its rule knows and "not known" for
 * another, counts as an answer either way, and never hands the connection
 * to raft on either side (no accept, no connect). A node of another
 * cluster refuses as for any connection: no answer. A node whose rule is
 * unset answers "not known".
 */
TEST(first_start_question)
{
    struct tloop L;
    struct side a = {0}, asker2 = {0}, asker3 = {0}, stranger = {0}, plain = {0};
    struct raft_uv_connect r1 = {0}, r2 = {0}, r3 = {0}, r4 = {0};
    char a_addr[64], p_addr[64];
    int pa = free_port(), pp = free_port();

    tloop_init(&L);
    snprintf(a_addr, sizeof a_addr, "127.0.0.1:%d", pa);
    snprintf(p_addr, sizeof p_addr, "127.0.0.1:%d", pp);
    ASSERT_EQ(peer_tcp_init(&a.t, &L.loop), 0);
    ASSERT_EQ(peer_tcp_init(&plain.t, &L.loop), 0);
    ASSERT_EQ(peer_tcp_init(&asker2.t, &L.loop), 0);
    ASSERT_EQ(peer_tcp_init(&asker3.t, &L.loop), 0);
    ASSERT_EQ(peer_tcp_init(&stranger.t, &L.loop), 0);
    side_cluster(&a, 0xabcull);
    side_cluster(&plain, 0xabcull);
    side_cluster(&asker2, 0xabcull);
    side_cluster(&asker3, 0xabcull);
    side_cluster(&stranger, 0xdefull);
    peer_base_of(&a.t)->started = started_2;
    peer_base_of(&asker2.t)->asking = true;
    peer_base_of(&asker3.t)->asking = true;
    peer_base_of(&stranger.t)->asking = true;
    ASSERT_EQ(a.t.init(&a.t, 1, a_addr), 0);
    ASSERT_EQ(plain.t.init(&plain.t, 5, p_addr), 0);
    ASSERT_EQ(asker2.t.init(&asker2.t, 2, "127.0.0.1:9"), 0);
    ASSERT_EQ(asker3.t.init(&asker3.t, 3, "127.0.0.1:9"), 0);
    ASSERT_EQ(stranger.t.init(&stranger.t, 2, "127.0.0.1:9"), 0);
    ASSERT_EQ(a.t.listen(&a.t, on_accept), 0);
    ASSERT_EQ(plain.t.listen(&plain.t, on_accept), 0);

    r1.data = &asker2;
    ASSERT_EQ(asker2.t.connect(&asker2.t, &r1, 1, a_addr, on_connect), 0);
    run_until(&L, &asker2.failed, 1, 5000);
    ASSERT_UEQ(peer_base_of(&asker2.t)->known_by, 1);
    ASSERT_STREQ(peer_base_of(&asker2.t)->known_addr, a_addr);
    ASSERT_EQ(peer_base_of(&asker2.t)->answers, 1);
    ASSERT(strstr(a.last_log, "node 2 (127.0.0.1:9) starting on an empty data directory asked "
                              "whether it has started in this cluster before: yes") != NULL);

    r2.data = &asker3;
    ASSERT_EQ(asker3.t.connect(&asker3.t, &r2, 1, a_addr, on_connect), 0);
    run_until(&L, &asker3.failed, 1, 5000);
    ASSERT_UEQ(peer_base_of(&asker3.t)->known_by, 0);
    ASSERT_EQ(peer_base_of(&asker3.t)->answers, 1);

    r3.data = &asker3;
    ASSERT_EQ(asker3.t.connect(&asker3.t, &r3, 5, p_addr, on_connect), 0);
    run_until(&L, &asker3.failed, 2, 5000);
    ASSERT_UEQ(peer_base_of(&asker3.t)->known_by, 0);
    ASSERT_EQ(peer_base_of(&asker3.t)->answers, 2);

    r4.data = &stranger;
    ASSERT_EQ(stranger.t.connect(&stranger.t, &r4, 1, a_addr, on_connect), 0);
    run_until(&L, &stranger.failed, 1, 5000);
    ASSERT_UEQ(peer_base_of(&stranger.t)->known_by, 0);
    ASSERT_EQ(peer_base_of(&stranger.t)->answers, 0);

    ASSERT_EQ(a.accepted + plain.accepted, 0);
    ASSERT_EQ(asker2.connected + asker3.connected + stranger.connected, 0);

    a.t.close(&a.t, on_close);
    plain.t.close(&plain.t, on_close);
    asker2.t.close(&asker2.t, on_close);
    asker3.t.close(&asker3.t, on_close);
    stranger.t.close(&stranger.t, on_close);
    run_until(&L, &a.closed, 1, 5000);
    run_until(&L, &plain.closed, 1, 5000);
    run_until(&L, &asker2.closed, 1, 5000);
    run_until(&L, &asker3.closed, 1, 5000);
    run_until(&L, &stranger.closed, 1, 5000);
    peer_base_free(&a.t);
    peer_base_free(&plain.t);
    peer_base_free(&asker2.t);
    peer_base_free(&asker3.t);
    peer_base_free(&stranger.t);
    tloop_done(&L);
}

/* Dial addr (127.0.0.1:port) with a protocol 1 handshake by hand, as node
 * `id` at "127.0.0.1:9": the socket. */
static int dial_protocol_1(const char *addr, uint64_t id)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    uint8_t hs[24 + 16] = {0};
    uint64_t v[3] = {1, id, 16};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    ASSERT(fd >= 0);
    a.sin_port = htons((uint16_t)atoi(strrchr(addr, ':') + 1));
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 8; i++) hs[8 * k + i] = (uint8_t)(v[k] >> (8 * i));
    memcpy(hs + 24, "127.0.0.1:9", 11);
    ASSERT_EQ(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    ASSERT_EQ(write(fd, hs, sizeof hs), (ssize_t)sizeof hs);
    return fd;
}

/* Feature levels: each handshake tells the peer's level both ways; a node
 * whose cluster level is 2 refuses a peer of level 1, dialling or dialled,
 * answers the refusal (never taken for an older binary), and both sides
 * log why; a peer of level 2 is taken. */
TEST(handshake_refuses_a_level_below_the_clusters)
{
    struct tloop L;
    struct side hi = {0}, lo = {0}, up = {0};
    struct raft_uv_connect r1 = {0}, r2 = {0}, r3 = {0};
    char hi_addr[64], lo_addr[64], up_addr[64];

    tloop_init(&L);
    snprintf(hi_addr, sizeof hi_addr, "127.0.0.1:%d", free_port());
    snprintf(lo_addr, sizeof lo_addr, "127.0.0.1:%d", free_port());
    snprintf(up_addr, sizeof up_addr, "127.0.0.1:%d", free_port());
    ASSERT_EQ(peer_tcp_init(&hi.t, &L.loop), 0);
    ASSERT_EQ(peer_tcp_init(&lo.t, &L.loop), 0);
    ASSERT_EQ(peer_tcp_init(&up.t, &L.loop), 0);
    side_cluster(&hi, 0xabcull);
    side_cluster(&lo, 0xabcull);
    side_cluster(&up, 0xabcull);
    peer_base_of(&hi.t)->level = 2;
    peer_base_of(&hi.t)->cluster_level = 2;
    peer_base_of(&lo.t)->level = 1;
    peer_base_of(&lo.t)->cluster_level = 1;
    peer_base_of(&up.t)->level = 2;
    peer_base_of(&up.t)->cluster_level = 1;
    ASSERT_EQ(hi.t.init(&hi.t, 1, hi_addr), 0);
    ASSERT_EQ(lo.t.init(&lo.t, 2, lo_addr), 0);
    ASSERT_EQ(up.t.init(&up.t, 3, up_addr), 0);
    ASSERT_EQ(hi.t.listen(&hi.t, on_accept), 0);
    ASSERT_EQ(lo.t.listen(&lo.t, on_accept), 0);
    ASSERT_EQ(up.t.listen(&up.t, on_accept), 0);

    /* The lower node dials: refused with an answer, both sides say why. */
    r1.data = &lo;
    ASSERT_EQ(lo.t.connect(&lo.t, &r1, 1, hi_addr, on_connect), 0);
    run_until(&L, &lo.failed, 1, 5000);
    run_until(&L, &hi.logged, 1, 5000);
    ASSERT_EQ(hi.accepted, 0);
    ASSERT(strstr(hi.last_log, "runs a binary of feature level 1, below the cluster's level 2") !=
           NULL);
    ASSERT(strstr(lo.last_log, "it refused this node") != NULL);
    ASSERT(strstr(lo.last_log, "its cluster level is 2") != NULL);
    ASSERT_EQ(peer_base_dial_version(peer_base_of(&lo.t), hi_addr, 3), 3); /* answered */
    ASSERT_EQ(peer_base_level_of(peer_base_of(&hi.t), 2), 1);
    ASSERT_EQ(peer_base_level_of(peer_base_of(&lo.t), 1), 2);

    /* The higher node dials the lower: refused on the reply's level. */
    peer_base_of(&hi.t)->log_at = 0;
    r2.data = &hi;
    ASSERT_EQ(hi.t.connect(&hi.t, &r2, 2, lo_addr, on_connect), 0);
    run_until(&L, &hi.failed, 1, 5000);
    ASSERT_EQ(hi.connected, 0);
    ASSERT(strstr(hi.last_log, "raft connection to") != NULL);
    ASSERT(strstr(hi.last_log, "feature level 1") != NULL);

    /* A node of level 2 (its cluster still at 1) is taken either way. */
    r3.data = &up;
    ASSERT_EQ(up.t.connect(&up.t, &r3, 1, hi_addr, on_connect), 0);
    run_until(&L, &up.connected, 1, 5000);
    run_until(&L, &hi.accepted, 1, 5000);
    ASSERT_EQ(peer_base_level_of(peer_base_of(&hi.t), 3), 2);
    ASSERT_EQ(peer_base_level_of(peer_base_of(&up.t), 1), 2);
    ASSERT_EQ(peer_base_level_of(peer_base_of(&up.t), 2), 0); /* never heard */

    hi.t.close(&hi.t, on_close);
    lo.t.close(&lo.t, on_close);
    up.t.close(&up.t, on_close);
    run_until(&L, &hi.closed, 1, 5000);
    run_until(&L, &lo.closed, 1, 5000);
    run_until(&L, &up.closed, 1, 5000);
    peer_base_free(&hi.t);
    peer_base_free(&lo.t);
    peer_base_free(&up.t);
    tloop_done(&L);
}

/* libraft's own transport speaks protocol 1, without a cluster id, as the
 * baton binary before the cluster id did, and closes a connection that
 * opens with protocol 2 after reading 24 bytes of it. Its dialling our
 * side is accepted, unchecked, without a byte of answer (protocol 1 has
 * none), and logged once, but our side still dials it with protocol 2:
 * refused without an answer PEER_BASE_OLD_STRIKES times in a row, it is
 * taken for an older binary and dialled with protocol 1, which it accepts.
 * Forgotten, it is dialled with protocol 2 again. */
TEST(libraft_handshake_is_an_older_peers)
{
    struct tloop L;
    struct side lib = {0}, ours = {0};
    struct raft_uv_connect r1 = {0}, r2 = {0}, r3 = {0}, r4[2 * PEER_BASE_OLD_STRIKES] = {0};
    char lib_addr[64], our_addr[64], byte;
    struct pollfd pfd;
    int fd;

    tloop_init(&L);
    snprintf(lib_addr, sizeof lib_addr, "127.0.0.1:%d", free_port());
    snprintf(our_addr, sizeof our_addr, "127.0.0.1:%d", free_port());
    ASSERT_EQ(raft_uv_tcp_init(&lib.t, &L.loop), 0);
    ASSERT_EQ(peer_tcp_init(&ours.t, &L.loop), 0);
    side_cluster(&ours, 0xabcull);
    ASSERT_EQ(lib.t.init(&lib.t, 1, lib_addr), 0);
    ASSERT_EQ(ours.t.init(&ours.t, 2, our_addr), 0);
    ASSERT_EQ(lib.t.listen(&lib.t, on_accept), 0);
    ASSERT_EQ(ours.t.listen(&ours.t, on_accept), 0);

    /* libraft dials our side. */
    r1.data = &lib;
    ASSERT_EQ(lib.t.connect(&lib.t, &r1, 2, our_addr, on_connect), 0);
    run_until(&L, &ours.accepted, 1, 8000);
    run_until(&L, &lib.connected, 1, 5000);
    ASSERT_EQ(ours.accepted_id, 1);
    ASSERT_STREQ(ours.accepted_addr, lib_addr);
    ASSERT_EQ(ours.logged, 1);
    ASSERT(strstr(ours.last_log, "connected with the handshake of an older binary") != NULL);
    ASSERT(strstr(ours.last_log, lib_addr) != NULL);
    ASSERT(!OLD_IS(peer_base_of(&ours.t), lib_addr)); /* not our own evidence */

    /* A protocol 1 dialler gets no byte back: only the end of the stream
     * the test's accept callback closes. */
    fd = dial_protocol_1(our_addr, 3);
    run_until(&L, &ours.accepted, 2, 8000);
    ASSERT_EQ(ours.accepted_id, 3);
    pfd = (struct pollfd){.fd = fd, .events = POLLIN};
    ASSERT_EQ(poll(&pfd, 1, 5000), 1);
    ASSERT_EQ(read(fd, &byte, 1), 0);
    close(fd);

    /* Our side dials libraft: protocols 3 and 2, closed unanswered, a few
     * times each. */
    peer_base_of(&ours.t)->log_at = 0; /* the log's rate limit: a line may go now */
    for (int k = 0; k < 2 * PEER_BASE_OLD_STRIKES; k++) {
        /* protocol 3, then (three strikes on) protocol 2: each closed */
        ASSERT_EQ(peer_base_dial_version(peer_base_of(&ours.t), lib_addr, 3),
                  3 - k / PEER_BASE_OLD_STRIKES);
        r4[k].data = &ours;
        ASSERT_EQ(ours.t.connect(&ours.t, &r4[k], 1, lib_addr, on_connect), 0);
        run_until(&L, &ours.failed, k + 1, 8000);
    }
    ASSERT_EQ(peer_base_dial_version(peer_base_of(&ours.t), lib_addr, 3), 1);
    ASSERT_EQ(lib.accepted, 0);
    ASSERT_EQ(ours.logged, 2);
    ASSERT(strstr(ours.last_log, "runs an older binary (it closed 3 handshakes") != NULL);
    /* Then protocol 1, which it takes. */
    r2.data = &ours;
    ASSERT_EQ(ours.t.connect(&ours.t, &r2, 1, lib_addr, on_connect), 0);
    run_until(&L, &lib.accepted, 1, 8000);
    run_until(&L, &ours.connected, 1, 5000);
    ASSERT_EQ(lib.accepted_id, 2);
    ASSERT_STREQ(lib.accepted_addr, our_addr);
    ASSERT_EQ(ours.failed, 2 * PEER_BASE_OLD_STRIKES);
    /* Forgotten: protocol 3 first again. */
    peer_base_old_forget(peer_base_of(&ours.t), lib_addr);
    ASSERT(!OLD_IS(peer_base_of(&ours.t), lib_addr));
    r3.data = &ours;
    ASSERT_EQ(ours.t.connect(&ours.t, &r3, 1, lib_addr, on_connect), 0);
    run_until(&L, &ours.failed, 2 * PEER_BASE_OLD_STRIKES + 1, 8000);
    ASSERT_EQ(lib.accepted, 1);
    ASSERT(!OLD_IS(peer_base_of(&ours.t), lib_addr));

    lib.t.close(&lib.t, on_close);
    ours.t.close(&ours.t, on_close);
    run_until(&L, &lib.closed, 1, 5000);
    run_until(&L, &ours.closed, 1, 5000);
    raft_uv_tcp_close(&lib.t);
    peer_base_free(&ours.t);
    tloop_done(&L);
}

/* ---- streams kept open, as raft keeps them ---- */

static char keep_buf[4096];

static void keep_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    (void)h, (void)hint;
    *b = uv_buf_init(keep_buf, sizeof keep_buf);
}

static void keep_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
    struct side *s = st->data;

    (void)b;
    if (n >= 0) return;
    s->ended++;
    uv_close((uv_handle_t *)st, free_stream);
}

static void keep(struct side *s, struct uv_stream_s *stream)
{
    stream->data = s;
    ASSERT_EQ(uv_read_start(stream, keep_alloc, keep_read), 0);
}

static void on_accept_keep(struct raft_uv_transport *t, raft_id id, const char *address,
                           struct uv_stream_s *stream)
{
    struct side *s = (struct side *)t;

    s->accepted_id = id;
    snprintf(s->accepted_addr, sizeof s->accepted_addr, "%s", address);
    s->accepted++;
    keep(s, stream);
}

static void on_connect_keep(struct raft_uv_connect *req, struct uv_stream_s *stream, int status)
{
    struct side *s = req->data;

    if (status != 0) {
        s->failed++;
        return;
    }
    s->connected++;
    keep(s, stream);
}

static void set_admit(struct side *s, const uint64_t *ids, unsigned n)
{
    struct peer_admit a;
    struct peer_admit_in in = {.latest = ids, .n_latest = n};

    peer_admit_compute(&a, &in);
    peer_base_set_admit(peer_base_of(&s->t), &a);
}

/* Admission (raft/peer_admit.h): a node not admitted is closed at the
 * handshake, logged once however often it dials; when the admitted set
 * drops a node, its live connections both ways end at once, and both
 * sides see the end. */
TEST(admission_and_prune)
{
    static const uint64_t one_two[] = {1, 2}, two_three[] = {2, 3};
    struct tloop L;
    struct side a = {0}, b = {0}, x = {0};
    struct raft_uv_connect r1 = {0}, r2 = {0}, r3 = {0}, r4 = {0}, r5 = {0};
    char a_addr[64], b_addr[64], x_addr[64];

    tloop_init(&L);
    snprintf(a_addr, sizeof a_addr, "127.0.0.1:%d", free_port());
    snprintf(b_addr, sizeof b_addr, "127.0.0.1:%d", free_port());
    snprintf(x_addr, sizeof x_addr, "127.0.0.1:%d", free_port());
    ASSERT_EQ(peer_tcp_init(&a.t, &L.loop), 0);
    ASSERT_EQ(peer_tcp_init(&b.t, &L.loop), 0);
    ASSERT_EQ(peer_tcp_init(&x.t, &L.loop), 0);
    side_cluster(&a, 0xabcull);
    side_cluster(&b, 0xabcull);
    side_cluster(&x, 0xabcull);
    ASSERT_EQ(a.t.init(&a.t, 1, a_addr), 0);
    ASSERT_EQ(b.t.init(&b.t, 2, b_addr), 0);
    ASSERT_EQ(x.t.init(&x.t, 3, x_addr), 0);
    ASSERT_EQ(a.t.listen(&a.t, on_accept_keep), 0);
    ASSERT_EQ(b.t.listen(&b.t, on_accept_keep), 0);
    set_admit(&b, one_two, 2);

    /* Node 1 and node 2 connect both ways. */
    r1.data = &a;
    ASSERT_EQ(a.t.connect(&a.t, &r1, 2, b_addr, on_connect_keep), 0);
    r2.data = &b;
    ASSERT_EQ(b.t.connect(&b.t, &r2, 1, a_addr, on_connect_keep), 0);
    run_until(&L, &b.accepted, 1, 5000);
    run_until(&L, &a.accepted, 1, 5000);
    run_until(&L, &a.connected, 1, 5000);
    run_until(&L, &b.connected, 1, 5000);

    /* Node 3 is not admitted: closed unanswered, one log line for two
     * attempts. */
    r3.data = &x;
    ASSERT_EQ(x.t.connect(&x.t, &r3, 2, b_addr, on_connect_keep), 0);
    run_until(&L, &x.failed, 1, 5000);
    r4.data = &x;
    ASSERT_EQ(x.t.connect(&x.t, &r4, 2, b_addr, on_connect_keep), 0);
    run_until(&L, &x.failed, 2, 5000);
    ASSERT_EQ(b.accepted, 1);
    ASSERT_EQ(b.logged, 1);
    ASSERT(strstr(b.last_log, "raft connection from node 3") != NULL);
    ASSERT(strstr(b.last_log, "neither the committed nor the latest raft configuration") != NULL);
    ASSERT_EQ(a.ended + b.ended, 0);

    /* Node 1 leaves node 2's configuration: both of their connections end,
     * on both sides, and node 1 is refused from then on. */
    set_admit(&b, two_three, 2);
    run_until(&L, &a.ended, 2, 5000);
    run_until(&L, &b.ended, 2, 5000);
    ASSERT(strstr(b.last_log, "closing a raft connection with node 1") != NULL);
    r5.data = &a;
    ASSERT_EQ(a.t.connect(&a.t, &r5, 2, b_addr, on_connect_keep), 0);
    run_until(&L, &a.failed, 1, 5000);
    ASSERT_EQ(b.accepted, 1);
    ASSERT(strstr(b.last_log, "raft connection from node 1") != NULL);

    a.t.close(&a.t, on_close);
    b.t.close(&b.t, on_close);
    x.t.close(&x.t, on_close);
    run_until(&L, &a.closed, 1, 5000);
    run_until(&L, &b.closed, 1, 5000);
    run_until(&L, &x.closed, 1, 5000);
    peer_base_free(&a.t);
    peer_base_free(&b.t);
    peer_base_free(&x.t);
    tloop_done(&L);
}

/* A flood of refused ids (any id may be claimed in plaintext) costs at
 * most PEER_BASE_REFUSED_SLOTS log lines a minute. */
TEST(refusal_log_is_bounded)
{
    static const uint64_t one_two[] = {1, 2};
    enum { FLOOD = PEER_BASE_REFUSED_SLOTS + 8 };
    struct tloop L;
    struct side b = {0};
    char b_addr[64], c;
    int fds[FLOOD];

    tloop_init(&L);
    snprintf(b_addr, sizeof b_addr, "127.0.0.1:%d", free_port());
    ASSERT_EQ(peer_tcp_init(&b.t, &L.loop), 0);
    side_cluster(&b, 0);
    ASSERT_EQ(b.t.init(&b.t, 2, b_addr), 0);
    ASSERT_EQ(b.t.listen(&b.t, on_accept), 0);
    set_admit(&b, one_two, 2);
    for (int i = 0; i < FLOOD; i++) fds[i] = dial_protocol_1(b_addr, 100 + (uint64_t)i);
    run_for(&L, 500);
    for (int i = 0; i < FLOOD; i++) {
        ASSERT_EQ(read(fds[i], &c, 1), 0); /* closed, unanswered */
        close(fds[i]);
    }
    ASSERT_EQ(b.accepted, 0);
    ASSERT_EQ(b.logged, PEER_BASE_REFUSED_SLOTS);
    b.t.close(&b.t, on_close);
    run_until(&L, &b.closed, 1, 5000);
    peer_base_free(&b.t);
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
    RUN(handshake_checks_the_cluster);
    RUN(handshake_refuses_a_level_below_the_clusters);
    RUN(libraft_handshake_is_an_older_peers);
    RUN(close_cancels_connects);
    RUN(admission_and_prune);
    RUN(refusal_log_is_bounded);
    RUN(first_start_question);
    return runner_done();
}
