/*
 * test_hostile.c -- hostile and broken clients against three real batond
 * processes, over raw sockets: garbage bytes, a frame claiming 4 GiB, a
 * 1 MB lock name, unknown message types, a wrong protocol version, half a
 * frame and then silence, 10,000 connections at once, one session
 * queueing 100,000 waits, one session sending 600,000 RELEASEs it never
 * acknowledges, a dozen clients that stop reading their replies,
 * hundreds of connections each sending most of a 1 MiB frame (before
 * HELLO, and after it), and 20,000 sessions whose leases run out at one
 * moment.
 *
 * For every case the test checks that
 *  - the offending connection gets a clear answer: an ERROR frame with a
 *    specific code, then (for framing errors) the end of the connection;
 *  - every batond process is still alive and answers STATUS;
 *  - a normal client on another connection still locks and unlocks;
 *  - the leader's resident memory (VmRSS) grew by less than a generous
 *    bound: a resource bound, not a timing assertion.
 *
 * The cluster runs with --max-conns 1000 and --frame-timeout 1500 so that
 * those limits are reached quickly; docs/operations.md, "Limits", lists the defaults.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "baton/baton.h"
#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "proto/msg.h"
#include "tests/lib/clock.h"
#include "storage/cmd_table.h"
#include "tests/lib/cluster.h"
#include "tests/lib/proc.h"
#include "tests/lib/runner.h"

#define MAX_CONNS 1000
#define FRAME_TIMEOUT_MS 1500
#define FLOOD 10000
#define WAITS 100000
#define OWNED_LIMIT 10000 /* STORE_MAX_OWNED_PER_SESSION (storage/store.h) */
#define RELEASES 600000
#define CACHED_LIMIT BATON_MAX_UNACKED /* STORE_MAX_CACHED_PER_SESSION (storage/store.h) */

/* Growth of the leader's VmRSS that a case may cause. Sanitizer builds
 * keep freed memory in quarantine, so they get more room. */
#if defined(__SANITIZE_ADDRESS__)
#define RSS_BOUND_KB (320 * 1024)
#else
#define RSS_BOUND_KB (64 * 1024)
#endif

static struct cluster C;
static int L; /* the leader's index */

static const char *const EXTRA[] = {"--max-conns", "1000", "--frame-timeout", "1500", NULL};
/* release_flood_never_acknowledged: 600,000 requests take the nodes (which
 * share the machine's cores with the test) some seconds of steady work, in
 * which a 300 ms election timeout can run out; the case checks what the
 * store keeps, so it gives the leader room to stay leader. */
static const char *const EXTRA_FLOOD[] = {"--max-conns", "1000", "--frame-timeout", "1500",
                                          "--election-timeout", "2000", NULL};
/* unread_replies_bounded: the unread replies of all connections together
 * are kept under UNREAD_MB. */
#define UNREAD_MB 16
static const char *const EXTRA_UNREAD[] = {"--max-conns", "1000", "--frame-timeout", "1500",
                                           "--max-unread-mb", "16", NULL};

/* ---- helpers ---------------------------------------------------------- */

static void start3_with(const char *const *extra)
{
    struct cluster_opts o = {.extra_args = extra};

    ASSERT_EQ(cluster_start_opts(&C, 3, &o), 0);
    L = cluster_wait_leader(&C, 15000);
    ASSERT_GE(L, 0);
}

static void start3(void)
{
    struct cluster_opts o = {.extra_args = EXTRA};

    ASSERT_EQ(cluster_start_opts(&C, 3, &o), 0);
    L = cluster_wait_leader(&C, 15000);
    ASSERT_GE(L, 0);
}

static int client_port(int i)
{
    const char *ep = cluster_endpoint(&C, i);
    return atoi(strrchr(ep, ':') + 1);
}

/* A blocking TCP connection to node i with 10 s send/receive timeouts. */
static int raw_connect(int i)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)client_port(i)),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timeval tv = {10, 0};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

    ASSERT_GE(fd, 0);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) FAIL("connect: %s", strerror(errno));
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Send everything; a peer that already closed is not an error here (the
 * server may hang up half-way through a frame it refuses). */
static void send_bytes(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;

    while (n > 0) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        b += w;
        n -= (size_t)w;
    }
}

static void send_msg(int fd, const struct msg *m)
{
    struct buf b = {0};

    ASSERT_EQ(proto_encode(&b, m), 0);
    send_bytes(fd, b.data, b.len);
    buf_free(&b);
}

/* Read exactly n bytes. 1, 0 at the end of the stream (or a reset), or
 * -1 on timeout. */
static int recv_exact(int fd, uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t r = recv(fd, p, n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return -1;
        if (r <= 0) return 0;
        p += r;
        n -= (size_t)r;
    }
    return 1;
}

/* Read one frame into *frame (malloc'd) and decode it into *m. 1, 0 at the
 * end of the stream; a timeout or an undecodable frame fails the test. */
static int recv_msg(int fd, struct msg *m, uint8_t **frame)
{
    uint8_t hdr[4];
    uint32_t len;
    int rv = recv_exact(fd, hdr, 4);

    *frame = NULL;
    if (rv < 0) FAIL("no frame from the server within 10 s");
    if (rv == 0) return 0;
    len = le_get_u32(hdr);
    if (len < PROTO_FRAME_MIN || len > BATON_MAX_FRAME) FAIL("server sent a frame of %u bytes", len);
    *frame = malloc(4 + (size_t)len);
    ASSERT(*frame != NULL);
    memcpy(*frame, hdr, 4);
    if (recv_exact(fd, *frame + 4, len) != 1) FAIL("server sent half a frame");
    if (proto_decode(*frame, 4 + (size_t)len, m) != 0) FAIL("server sent an undecodable frame");
    return 1;
}

/* The next frame must be ERROR(code). */
static void expect_error(int fd, int code)
{
    struct msg m;
    uint8_t *frame;

    if (recv_msg(fd, &m, &frame) != 1) FAIL("connection closed without an ERROR(%s)", baton_err_name(code));
    if (m.type != MSG_ERROR) FAIL("expected ERROR(%s), got %s", baton_err_name(code), msg_type_name(m.type));
    if (m.u.error.code != code)
        FAIL("expected %s, got %s: %.*s", baton_err_name(code), baton_err_name(m.u.error.code),
             (int)m.u.error.message.n, m.u.error.message.p);
    fprintf(stderr, "# ERROR(%s): %.*s\n", baton_err_name(code), (int)m.u.error.message.n,
            m.u.error.message.p);
    msg_free(&m);
    free(frame);
}

/* The server must close the connection: nothing more arrives. */
static void expect_closed(int fd)
{
    struct msg m;
    uint8_t *frame;

    if (recv_msg(fd, &m, &frame) != 0) FAIL("expected the server to close; got %s", msg_type_name(m.type));
}

/* The next frame must be ERROR(code), and then the connection ends. */
static void expect_error_and_close(int fd, int code)
{
    expect_error(fd, code);
    expect_closed(fd);
    close(fd);
}

static void hello(int fd)
{
    struct msg m = {.type = MSG_HELLO, .req_id = 1}, r;
    uint8_t *frame;

    m.u.hello.version = BATON_PROTO_VERSION;
    send_msg(fd, &m);
    ASSERT_EQ(recv_msg(fd, &r, &frame), 1);
    ASSERT_EQ(r.type, MSG_HELLO_OK);
    free(frame);
}

/* A request the server must answer with a frame of type `type`. */
static void expect_reply(int fd, const struct msg *m, int type)
{
    struct msg r;
    uint8_t *frame;

    send_msg(fd, m);
    ASSERT_EQ(recv_msg(fd, &r, &frame), 1);
    if (r.type != type) FAIL("expected %s, got %s", msg_type_name(type), msg_type_name(r.type));
    msg_free(&r);
    free(frame);
}

static long vmrss_kb(pid_t pid)
{
    long kb = proc_rss_kb(pid);

    if (kb < 0) FAIL("cannot read the VmRSS of pid %d: the process is gone", (int)pid);
    return kb;
}

/* Every node is alive and answers STATUS on a new connection (but for the
 * leader when it is known to be full: it then refuses new connections). */
static void alive_but(int full)
{
    for (int i = 0; i < C.n; i++) {
        struct cluster_status st;
        ASSERT(C.nodes[i].pid > 0);
        if (kill(C.nodes[i].pid, 0) != 0) FAIL("node %d (pid %d) is gone", i + 1, (int)C.nodes[i].pid);
        if (i == full) continue;
        if (cluster_node_status(&C, i, &st, 10000) != 0) FAIL("node %d does not answer STATUS", i + 1);
    }
}

static void all_alive(void)
{
    alive_but(-1);
}

static baton_t *normal_client(void)
{
    baton_opts o = {.endpoints = cluster_endpoints(&C), .client_name = "bystander",
                    .connect_timeout_ms = 15000, .op_timeout_ms = 30000};
    baton_t *b = NULL;
    int rv = baton_connect(&o, &b);

    if (rv != 0) FAIL("baton_connect: %s: %s", baton_err_name(rv), baton_connect_errmsg());
    return b;
}

/* The normal client takes and releases a lock. */
static void normal_lock_unlock(baton_t *b, const char *name)
{
    baton_lock_t *l = NULL;
    int rv = baton_lock_timeout(b, name, 20000, &l);

    if (rv != 0) FAIL("bystander lock %s: %s (%s)", name, baton_err_name(rv), baton_errmsg(b));
    ASSERT_EQ(baton_unlock(l), 0);
}

/* What every case checks at its end. */
static void check_unaffected(baton_t *b, long rss_before)
{
    long rss = vmrss_kb(C.nodes[L].pid);

    all_alive();
    normal_lock_unlock(b, "bystander/after");
    fprintf(stderr, "# leader VmRSS %ld kB -> %ld kB\n", rss_before, rss);
    ASSERT_LT(rss - rss_before, RSS_BOUND_KB);
}

static void finish(baton_t *b)
{
    baton_close(b);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* A frame header: u32 len, u16 type, u64 req_id. */
static void put_header(uint8_t *p, uint32_t len, uint16_t type, uint64_t req_id)
{
    le_put_u32(p, len);
    le_put_u16(p + 4, type);
    le_put_u64(p + 6, req_id);
}

/* ---- the cases ------------------------------------------------------- */

/* Bytes that are no protocol at all: an HTTP request (its first four bytes
 * read as a length of about 542 MB), and random bytes behind a plausible
 * length (a body no message type fits). */
TEST(garbage_bytes)
{
    static const char http[] = "GET / HTTP/1.1\r\nHost: example\r\n\r\n";
    uint8_t junk[200];
    baton_t *b;
    long rss;
    int fd;

    start3();
    b = normal_client();
    rss = vmrss_kb(C.nodes[L].pid);

    fd = raw_connect(L);
    send_bytes(fd, http, sizeof http - 1);
    expect_error_and_close(fd, BATON_ETOOBIG);

    srand(7);
    for (int round = 0; round < 20; round++) {
        for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)rand();
        put_header(junk, sizeof junk - 4, (uint16_t)rand(), 1);
        fd = raw_connect(L);
        if (round % 2) hello(fd);
        send_bytes(fd, junk, sizeof junk);
        expect_error_and_close(fd, BATON_EMALFORMED);
    }
    /* Shorter than the smallest frame. */
    fd = raw_connect(L);
    put_header(junk, 3, MSG_STATUS, 1);
    send_bytes(fd, junk, 7);
    expect_error_and_close(fd, BATON_EMALFORMED);

    check_unaffected(b, rss);
    finish(b);
}

/* A header that claims 4 GiB - 1 bytes: refused from the header alone,
 * nothing is allocated for it. */
TEST(frame_claims_4gib)
{
    uint8_t hdr[PROTO_HDR_LEN + 16] = {0};
    baton_t *b;
    long rss;
    int fd;

    start3();
    b = normal_client();
    rss = vmrss_kb(C.nodes[L].pid);
    for (int with_hello = 0; with_hello < 2; with_hello++) {
        fd = raw_connect(L);
        if (with_hello) hello(fd);
        put_header(hdr, UINT32_MAX, MSG_ACQUIRE, 2);
        send_bytes(fd, hdr, sizeof hdr);
        expect_error_and_close(fd, BATON_ETOOBIG);
    }
    check_unaffected(b, rss);
    finish(b);
}

/* ACQUIREs whose lock name is far beyond BATON_MAX_NAME: 1 MiB (the frame
 * is then over BATON_MAX_FRAME), 1,000,000 bytes (the frame fits, the
 * string's u16 length cannot describe it), 65535 and 257 bytes. */
TEST(lock_name_1mb)
{
    static const size_t names[] = {1u << 20, 1000000, 65535, BATON_MAX_NAME + 1};
    static const int codes[] = {BATON_ETOOBIG, BATON_EMALFORMED, BATON_EMALFORMED, BATON_EMALFORMED};
    baton_t *b;
    long rss;

    start3();
    b = normal_client();
    rss = vmrss_kb(C.nodes[L].pid);
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        size_t n = names[k], body = 8 + 8 + 8 + 4 + 8 + 2 + n + 4;
        uint8_t *f = calloc(1, PROTO_HDR_LEN + body);
        uint8_t *p = f + PROTO_HDR_LEN;
        int fd;

        ASSERT(f != NULL);
        put_header(f, (uint32_t)(PROTO_HDR_LEN - 4 + body), MSG_ACQUIRE, 3);
        le_put_u64(p, 1);          /* session */
        le_put_u64(p + 8, 1);      /* seq */
        le_put_u64(p + 16, 1);     /* ack_below */
        le_put_u32(p + 24, 0);     /* keep: none */
        le_put_u64(p + 28, 0);     /* wait_ms: try */
        le_put_u16(p + 36, (uint16_t)(n > 65535 ? 65535 : n));
        memset(p + 38, 'n', n);
        fd = raw_connect(L);
        hello(fd);
        send_bytes(fd, f, PROTO_HDR_LEN + body);
        expect_error_and_close(fd, codes[k]);
        free(f);
    }
    check_unaffected(b, rss);
    finish(b);
}

/* Message types the server does not know (a framing error: the connection
 * is closed), and types it knows but never takes from a client (a refused
 * request: the connection stays usable). */
TEST(unknown_message_types)
{
    static const uint16_t unknown[] = {0, MSG_TYPE_MAX_, 999, UINT16_MAX};
    static const uint16_t server_only[] = {MSG_HELLO_OK, MSG_RESULT, MSG_SESSION, MSG_STATUS_R,
                                           MSG_ERROR, MSG_REDIRECT};
    uint8_t f[PROTO_HDR_LEN + 64];
    struct msg st = {.type = MSG_STATUS, .req_id = 50};
    baton_t *b;
    long rss;
    int fd;

    start3();
    b = normal_client();
    rss = vmrss_kb(C.nodes[L].pid);
    for (size_t k = 0; k < sizeof unknown / sizeof unknown[0]; k++) {
        fd = raw_connect(L);
        hello(fd);
        memset(f, 0, sizeof f);
        put_header(f, sizeof f - 4, unknown[k], 4);
        send_bytes(fd, f, sizeof f);
        expect_error_and_close(fd, BATON_EMALFORMED);
    }
    fd = raw_connect(L);
    hello(fd);
    for (size_t k = 0; k < sizeof server_only / sizeof server_only[0]; k++) {
        struct msg m;
        memset(&m, 0, sizeof m);
        m.type = server_only[k];
        m.req_id = 10 + k;
        send_msg(fd, &m);
        expect_error(fd, BATON_EPROTO);
    }
    expect_reply(fd, &st, MSG_STATUS_R); /* still served */
    close(fd);
    check_unaffected(b, rss);
    finish(b);
}

/* HELLO with a protocol version the server does not speak, and a request
 * before any HELLO; each version it speaks is answered in that version. */
TEST(wrong_protocol_version)
{
    static const uint32_t versions[] = {0, BATON_PROTO_VERSION_MIN - 1, BATON_PROTO_VERSION + 1,
                                        UINT32_MAX};
    struct msg m;
    baton_t *b;
    long rss;
    int fd;

    start3();
    b = normal_client();
    rss = vmrss_kb(C.nodes[L].pid);
    for (size_t k = 0; k < sizeof versions / sizeof versions[0]; k++) {
        memset(&m, 0, sizeof m);
        m.type = MSG_HELLO;
        m.req_id = 1;
        m.u.hello.version = versions[k];
        fd = raw_connect(L);
        send_msg(fd, &m);
        expect_error_and_close(fd, BATON_EVERSION);
    }
    for (uint32_t v = BATON_PROTO_VERSION_MIN; v <= BATON_PROTO_VERSION; v++) {
        struct msg r;
        uint8_t *frame;
        memset(&m, 0, sizeof m);
        m.type = MSG_HELLO;
        m.req_id = 1;
        m.u.hello.version = v;
        fd = raw_connect(L);
        send_msg(fd, &m);
        ASSERT_EQ(recv_msg(fd, &r, &frame), 1);
        ASSERT_EQ(r.type, MSG_HELLO_OK);
        ASSERT_UEQ(r.u.hello_ok.version, v);
        free(frame);
        close(fd);
    }
    memset(&m, 0, sizeof m);
    m.type = MSG_STATUS;
    m.req_id = 2;
    fd = raw_connect(L);
    send_msg(fd, &m);
    expect_error_and_close(fd, BATON_EPROTO);
    check_unaffected(b, rss);
    finish(b);
}

/* Connections that send part of a frame and then nothing: the server keeps
 * serving others meanwhile, and closes each stalled connection with
 * ERROR(ETIMEDOUT) once its partial frame is older than --frame-timeout. */
TEST(half_frame_then_stall)
{
    enum { N = 20, PART = 64 * 1024 };
    int fds[N];
    uint8_t *part = calloc(1, PART);
    int64_t t0;
    baton_t *b;
    long rss;

    ASSERT(part != NULL);
    start3();
    b = normal_client();
    rss = vmrss_kb(C.nodes[L].pid);
    put_header(part, 512 * 1024, MSG_ACQUIRE, 5); /* claims 512 KiB, sends 64 */
    for (int i = 0; i < N; i++) {
        fds[i] = raw_connect(L);
        hello(fds[i]);
        send_bytes(fds[i], part, i == 0 ? 7 : PART); /* one stops inside the header */
    }
    t0 = now_ms();
    /* While they stall, everybody else is served. */
    normal_lock_unlock(b, "bystander/during");
    all_alive();
    for (int i = 0; i < N; i++) {
        expect_error(fds[i], BATON_ETIMEDOUT);
        expect_closed(fds[i]);
        close(fds[i]);
    }
    /* Not before the timeout (a resource rule, checked loosely). */
    ASSERT_GE(now_ms() - t0, FRAME_TIMEOUT_MS / 2);
    free(part);
    check_unaffected(b, rss);
    finish(b);
}

/* 10,000 connections opened at once, each sending HELLO: the leader serves
 * up to --max-conns and answers every other one ERROR(ELIMIT) and closes
 * it. A client connected before keeps working throughout, and new clients
 * are served again once the flood has gone. */
TEST(ten_thousand_connections)
{
    struct rlimit rl;
    struct pollfd *pf;
    int served = 0, refused = 0, reset = 0, dropped = 0, open_left, total = FLOOD, still_open = 0, moved;
    uint64_t term_before;
    int64_t deadline;
    baton_t *b;
    long rss;
    uint8_t hello_frame[64];
    size_t hello_len;

    /* The test needs FLOOD descriptors of its own. */
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur < FLOOD + 256) {
        rl.rlim_cur = rl.rlim_max < FLOOD + 256 ? rl.rlim_max : FLOOD + 256;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < FLOOD + 256) {
        fprintf(stderr, "# open-files limit %llu: using %llu connections\n",
                (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_cur - 256);
        total = (int)rl.rlim_cur - 256;
    }
    ASSERT_GT(total, MAX_CONNS + 100);
    {
        struct msg m = {.type = MSG_HELLO, .req_id = 1};
        struct buf hb = {0};
        m.u.hello.version = BATON_PROTO_VERSION;
        ASSERT_EQ(proto_encode(&hb, &m), 0);
        hello_len = hb.len;
        memcpy(hello_frame, hb.data, hb.len);
        buf_free(&hb);
    }
    start3();
    b = normal_client();
    normal_lock_unlock(b, "bystander/before");
    rss = vmrss_kb(C.nodes[L].pid);
    {
        struct cluster_status st;
        ASSERT_EQ(cluster_node_status(&C, (L + 1) % C.n, &st, 10000), 0);
        term_before = st.term;
    }

    pf = calloc((size_t)total, sizeof *pf);
    ASSERT(pf != NULL);
    for (int i = 0; i < total; i++) {
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)client_port(L)),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) FAIL("socket %d: %s", i, strerror(errno));
        if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 && errno != EINPROGRESS)
            FAIL("connect %d: %s", i, strerror(errno));
        pf[i].fd = fd;
        pf[i].events = POLLOUT;
    }
    /* Every connection: connected -> send HELLO -> read one frame. */
    open_left = total;
    deadline = now_ms() + 120000;
    while (open_left > 0 && now_ms() < deadline) {
        int n = poll(pf, (nfds_t)total, 1000);
        if (n < 0 && errno != EINTR) FAIL("poll: %s", strerror(errno));
        for (int i = 0; i < total && n > 0; i++) {
            uint8_t buf[256];
            ssize_t r;

            if (pf[i].fd < 0 || pf[i].revents == 0) continue;
            if (pf[i].events == POLLOUT) {
                int err = 0;
                socklen_t el = sizeof err;
                getsockopt(pf[i].fd, SOL_SOCKET, SO_ERROR, &err, &el);
                if (err == ECONNRESET) { /* refused, and the reset beat the ERROR (below) */
                    reset++;
                    close(pf[i].fd);
                    pf[i].fd = -1;
                    open_left--;
                    continue;
                }
                if (err != 0) FAIL("connection %d failed: %s", i, strerror(err));
                send_bytes(pf[i].fd, hello_frame, hello_len);
                pf[i].events = POLLIN;
                continue;
            }
            r = recv(pf[i].fd, buf, sizeof buf, 0);
            if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (r >= PROTO_HDR_LEN && le_get_u16(buf + 4) == MSG_HELLO_OK) {
                served++;
                pf[i].events = 0; /* stays open, idle */
                pf[i].fd = ~pf[i].fd;
            } else if (r >= PROTO_HDR_LEN + 4 && le_get_u16(buf + 4) == MSG_ERROR &&
                       (int32_t)le_get_u32(buf + PROTO_HDR_LEN) == BATON_ELIMIT) {
                refused++;
                close(pf[i].fd);
                pf[i].fd = -1;
            } else if (r < 0 && errno == ECONNRESET) {
                /* A connection refused at --max-conns is answered ERROR(ELIMIT)
                 * and closed; when its HELLO arrived after the node had read
                 * all there was, the close is a reset, which may reach this
                 * side before the ERROR is read. */
                reset++;
                close(pf[i].fd);
                pf[i].fd = -1;
            } else if (r == 0) {
                dropped++; /* closed unanswered: only a node that stops leading does that */
                close(pf[i].fd);
                pf[i].fd = -1;
            } else {
                FAIL("connection %d: %zd bytes, not HELLO_OK or ERROR(ELIMIT)", i, r);
            }
            open_left--;
        }
    }
    fprintf(stderr, "# %d connections: %d served, %d refused with ELIMIT, %d reset, %d closed "
            "unanswered, %d unanswered\n", total, served, refused, reset, dropped, open_left);
    ASSERT_EQ(open_left, 0);
    ASSERT_EQ(served + refused + reset + dropped, total);
    /* How many served connections the node still holds open. A node that
     * loses leadership closes its connections, and then serves new ones
     * again, so that is what --max-conns bounds. */
    sleep_ms(300);
    for (int i = 0; i < total; i++) {
        uint8_t byte;
        ssize_t r;
        if (pf[i].fd >= -1) continue;
        r = recv(~pf[i].fd, &byte, 1, MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) still_open++;
    }
    {
        struct cluster_status st;
        ASSERT_EQ(cluster_node_status(&C, (L + 1) % C.n, &st, 10000), 0);
        moved = st.term != term_before;
    }
    fprintf(stderr, "# %d served connections still open%s\n", still_open,
            moved ? "; leadership moved during the flood (the load delayed heartbeats)" : "");
    ASSERT_LE(still_open, MAX_CONNS);
    if (dropped > 0) ASSERT(moved); /* no connection is closed unanswered otherwise */
    if (!moved) ASSERT_GE(still_open, MAX_CONNS - 50); /* the bystander and probes hold a few */

    /* With the server full, the bystander's connection still works. The
     * flooded node may still be full (it keeps its connections when it
     * stops leading), so it may refuse a probe's. */
    normal_lock_unlock(b, "bystander/during");
    alive_but(L);
    ASSERT_LT(vmrss_kb(C.nodes[L].pid) - rss, RSS_BOUND_KB);

    for (int i = 0; i < total; i++)
        if (pf[i].fd < -1) close(~pf[i].fd);
        else if (pf[i].fd >= 0) close(pf[i].fd);
    free(pf);

    /* Once they are gone, new clients are served again. */
    {
        baton_t *b2 = NULL;
        baton_opts o = {.endpoints = cluster_endpoints(&C), .client_name = "late",
                        .connect_timeout_ms = 15000};
        int rv = -1;
        for (int tries = 0; tries < 50 && rv != 0; tries++) {
            rv = baton_connect(&o, &b2);
            if (rv != 0) sleep_ms(100);
        }
        if (rv != 0) FAIL("a new client after the flood: %s", baton_err_name(rv));
        normal_lock_unlock(b2, "late");
        baton_close(b2);
    }
    check_unaffected(b, rss);
    finish(b);
}

/* ---- one session's pipelined floods ------------------------------------- */

/* Open a session on the raw connection fd (after HELLO); its id. */
static uint64_t raw_session(int fd)
{
    struct msg m, r;
    uint8_t *frame;
    uint64_t session;

    memset(&m, 0, sizeof m);
    m.type = MSG_OPEN_SESSION;
    m.req_id = 2;
    m.u.open_session.ttl_ms = 120000;
    send_msg(fd, &m);
    ASSERT_EQ(recv_msg(fd, &r, &frame), 1);
    ASSERT_EQ(r.type, MSG_SESSION);
    session = r.u.session.session;
    free(frame);
    return session;
}

/* Close the session with seq (acknowledging everything below it); it
 * must be answered OK. fd is blocking again afterwards. */
static void raw_close_session(int fd, uint64_t session, uint64_t seq)
{
    struct msg m, r;
    uint8_t *frame;

    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    memset(&m, 0, sizeof m);
    m.type = MSG_CLOSE_SESSION;
    m.req_id = 7;
    m.u.op.session = session;
    m.u.op.seq = seq;
    m.u.op.ack_below = seq;
    send_msg(fd, &m);
    ASSERT_EQ(recv_msg(fd, &r, &frame), 1);
    ASSERT_EQ(r.type, MSG_RESULT);
    ASSERT_EQ(r.u.result.status, 0);
    free(frame);
}

/* What the answers of a flood were. */
struct tally {
    int answered;
    int held;     /* RESULT OK, QUEUED or GRANTED */
    int not_held; /* RESULT(BATON_ENOTHELD) */
    int limited;  /* RESULT(BATON_ELIMIT) */
    int other;
};

/* Fill m with request seq of the flood; name is room for a lock name. */
typedef void flood_make_fn(struct msg *m, uint64_t seq, char name[32]);

/*
 * Send requests seq 1..n of session on fd (which becomes non-blocking),
 * made by make with req_id 100 + seq, pipelined: up to 256 KiB ahead of
 * what the socket took, reading the answers meanwhile, until all n are
 * answered (or 240 s pass). Counts the answers in *t.
 */
static void pipeline(int fd, uint64_t session, uint64_t n, flood_make_fn *make, struct tally *t)
{
    struct buf in = {0}, out = {0};
    size_t sent_off = 0;
    uint64_t next_seq = 1;
    int64_t deadline = now_ms() + 240000;
    char name[32];
    struct msg m, r;

    memset(t, 0, sizeof *t);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    while ((uint64_t)t->answered < n && now_ms() < deadline) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        size_t off = 0, flen;

        while (out.len - sent_off < 256 * 1024 && next_seq <= n) {
            memset(&m, 0, sizeof m);
            m.req_id = 100 + next_seq;
            m.u.op.session = session;
            m.u.op.seq = next_seq++;
            make(&m, m.u.op.seq, name);
            m.u.op.lock.n = (uint16_t)strlen(m.u.op.lock.p);
            ASSERT_EQ(proto_encode(&out, &m), 0);
        }
        if (sent_off < out.len) p.events |= POLLOUT;
        if (poll(&p, 1, 1000) < 0 && errno != EINTR) FAIL("poll: %s", strerror(errno));
        if (p.revents & POLLOUT) {
            ssize_t w = send(fd, out.data + sent_off, out.len - sent_off, MSG_NOSIGNAL);
            if (w > 0) sent_off += (size_t)w;
            if (sent_off == out.len) {
                buf_reset(&out);
                sent_off = 0;
            }
        }
        if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t got;
            ASSERT_EQ(buf_reserve(&in, 64 * 1024), 0);
            got = recv(fd, in.data + in.len, in.cap - in.len, 0);
            if (got == 0) FAIL("the server closed the connection after %d answers", t->answered);
            if (got > 0) in.len += (size_t)got;
        }
        while (proto_frame_check(in.data + off, in.len - off, &flen) == 1) {
            ASSERT_EQ(proto_decode(in.data + off, flen, &r), 0);
            if (r.type == MSG_RESULT && r.u.result.status == 0 &&
                (r.u.result.kind == RESULT_QUEUED || r.u.result.kind == RESULT_GRANTED ||
                 r.u.result.kind == RESULT_OK))
                t->held++;
            else if (r.type == MSG_RESULT && r.u.result.status == BATON_ENOTHELD)
                t->not_held++;
            else if (r.type == MSG_RESULT && r.u.result.status == BATON_ELIMIT)
                t->limited++;
            else
                t->other++;
            if (r.type == MSG_RESULT && r.req_id != 100 + (uint64_t)t->answered + 1 &&
                t->other < 5)
                fprintf(stderr, "# answer %d has req_id %llu\n", t->answered,
                        (unsigned long long)r.req_id);
            t->answered++;
            msg_free(&r);
            off += flen;
        }
        buf_consume(&in, off);
    }
    buf_free(&in);
    buf_free(&out);
}

/* ACQUIRE seq waits for "contended" (seq 1) or takes "h/<seq>", and
 * acknowledges everything below it (this test reads every answer). */
static void make_acquire(struct msg *m, uint64_t seq, char name[32])
{
    m->type = MSG_ACQUIRE;
    m->u.op.ack_below = seq;
    m->u.op.wait_ms = BATON_WAIT_FOREVER;
    if (seq == 1) {
        m->u.op.lock.p = "contended";
    } else {
        snprintf(name, 32, "h/%llu", (unsigned long long)seq);
        m->u.op.lock.p = name;
    }
}

/* One session asks for 100,000 locks: it waits for one that another
 * session holds, and takes 99,999 others (a session may hold or wait for
 * a name once: asking again would be BATON_EDEADLK). The store lets one
 * session own at most OWNED_LIMIT holds and waits: the first OWNED_LIMIT
 * are queued or granted, every later one is answered RESULT(BATON_ELIMIT).
 * Closing the session drops all of its waits and holds. */
TEST(one_session_100k_waits)
{
    baton_t *b, *holder;
    baton_lock_t *held = NULL, *l = NULL;
    uint64_t session;
    struct tally t;
    struct cluster_status st_before, st_after;
    int fd;
    long rss;

    start3();
    b = normal_client();
    holder = normal_client();
    ASSERT_EQ(baton_lock(holder, "contended", &held), 0);
    rss = vmrss_kb(C.nodes[L].pid);
    ASSERT_EQ(cluster_node_status(&C, L, &st_before, 5000), 0);

    fd = raw_connect(L);
    hello(fd);
    session = raw_session(fd);
    pipeline(fd, session, WAITS, make_acquire, &t);
    fprintf(stderr, "# %d ACQUIREs: %d queued or granted, %d refused with ELIMIT, %d other\n",
            t.answered, t.held, t.limited, t.not_held + t.other);
    /* The leader handles a bounded slice of the flood per loop turn
     * (server/listen.c), so its heartbeats go out and it keeps its term. */
    ASSERT_EQ(cluster_node_status(&C, L, &st_after, 5000), 0);
    ASSERT_EQ(st_after.role, ROLE_LEADER);
    ASSERT_EQ(st_after.term, st_before.term);
    ASSERT_EQ(t.answered, WAITS);
    ASSERT_EQ(t.not_held + t.other, 0);
    ASSERT_EQ(t.held, OWNED_LIMIT);
    ASSERT_EQ(t.limited, WAITS - OWNED_LIMIT);

    /* Others are served while the 10,000 holds and waits stand. */
    ASSERT_EQ(baton_trylock(b, "contended", &l), BATON_EWOULDBLOCK);
    normal_lock_unlock(b, "bystander/during");
    all_alive();
    ASSERT_LT(vmrss_kb(C.nodes[L].pid) - rss, RSS_BOUND_KB);

    /* Closing the session drops its waits: the holder's release leaves the
     * lock free for anyone. */
    raw_close_session(fd, session, WAITS + 1);
    close(fd);
    ASSERT_EQ(baton_unlock(held), 0);
    ASSERT_EQ(baton_trylock(b, "contended", &l), 0);
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(holder);
    check_unaffected(b, rss);
    finish(b);
}

/* RELEASE seq of "flood", a lock nobody holds, acknowledging nothing. */
static void make_release_not_held(struct msg *m, uint64_t seq, char name[32])
{
    (void)seq;
    (void)name;
    m->type = MSG_RELEASE;
    m->u.op.ack_below = 1;
    m->u.op.fence = 1;
    m->u.op.lock.p = "flood";
}

/* The size of node i's lock store file. */
static long long store_file_size(int i)
{
    char path[PATH_MAX + 16];
    struct stat st;

    snprintf(path, sizeof path, "%s/fsm/data.mdb", C.nodes[i].dir);
    if (stat(path, &st) != 0) FAIL("stat %s: %s", path, strerror(errno));
    return (long long)st.st_size;
}

/* One session sends 600,000 RELEASEs of a lock it does not hold and never
 * acknowledges one (ack_below 1). Each result would stay cached until the
 * session acknowledged it, on every node: without a bound, data.mdb grew
 * from 8 to 32 MiB on all three, and a store that can grow no more stops
 * the cluster. The store keeps at most CACHED_LIMIT results of a session
 * above its ack floor: the first CACHED_LIMIT are answered ENOTHELD, every
 * later one RESULT(BATON_ELIMIT), and no node's data.mdb grows. */
TEST(release_flood_never_acknowledged)
{
    long long before[3], after;
    baton_t *b;
    uint64_t session;
    struct tally t;
    int fd;
    long rss;

    start3_with(EXTRA_FLOOD);
    b = normal_client();
    /* The bound holds from the feature level that brought it in. */
    ASSERT_EQ(cluster_wait_gauge(&C, "baton_cluster_feature_level", CMD_LEVEL, 15000), 0);
    rss = vmrss_kb(C.nodes[L].pid);
    for (int i = 0; i < C.n; i++) before[i] = store_file_size(i);

    fd = raw_connect(L);
    hello(fd);
    session = raw_session(fd);
    pipeline(fd, session, RELEASES, make_release_not_held, &t);
    fprintf(stderr, "# %d RELEASEs: %d ENOTHELD, %d refused with ELIMIT, %d other\n", t.answered,
            t.not_held, t.limited, t.held + t.other);
    ASSERT_EQ(t.answered, RELEASES);
    normal_lock_unlock(b, "bystander/during");
    ASSERT_EQ(cluster_digests_agree(&C, 30000), 0); /* every node applied it all */
    for (int i = 0; i < C.n; i++) {
        after = store_file_size(i);
        fprintf(stderr, "# node %d: data.mdb %.1f MiB -> %.1f MiB\n", i + 1,
                (double)before[i] / 1048576, (double)after / 1048576);
        ASSERT_LT(after - before[i], 4 << 20);
    }
    ASSERT_EQ(t.held + t.other, 0);
    ASSERT_EQ(t.not_held, CACHED_LIMIT);
    ASSERT_EQ(t.limited, RELEASES - CACHED_LIMIT);
    raw_close_session(fd, session, RELEASES + 1);
    close(fd);
    /* Memory is not this case's bound: raft keeps the entries of the
     * 600,000 requests in memory until its next snapshot. */
    fprintf(stderr, "# leader VmRSS %ld kB -> %ld kB\n", rss, vmrss_kb(C.nodes[L].pid));
    all_alive();
    normal_lock_unlock(b, "bystander/after");
    finish(b);
}

/* LIST_LOCKS of every lock (up to BATON_MAX_LIST), request req_id. */
static void put_list_locks(struct buf *b, uint64_t req_id)
{
    struct msg m;

    memset(&m, 0, sizeof m);
    m.type = MSG_LIST_LOCKS;
    m.req_id = req_id;
    m.u.list_locks.limit = BATON_MAX_LIST;
    ASSERT_EQ(proto_encode(b, &m), 0);
}

/* The largest total the leader's log reports in its lines "<key>N MiB
 * <what>, over ..." ("unread replies: N MiB in all connections, over
 * --max-unread-mb ...", say), and how many there are. */
static int total_lines(const char *key, const char *what, double *max_mib)
{
    static char text[4 << 20];
    const char *p = text;
    FILE *f = fopen(C.nodes[L].log, "r");
    size_t n, what_len = strlen(what);
    int lines = 0;

    ASSERT(f != NULL);
    n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    *max_mib = 0;
    while ((p = strstr(p, key)) != NULL) {
        char *end;
        double v = strtod(p + strlen(key), &end);

        p = end;
        if (strncmp(end, " MiB ", 5) != 0 || strncmp(end + 5, what, what_len) != 0) continue;
        lines++;
        if (v > *max_mib) *max_mib = v;
    }
    return lines;
}

/*
 * Clients that stop reading: HOSTILE connections each ask for 200 lists of
 * 1,000 locks with long names (about 300 KB a reply, 58 MB a connection,
 * under the 64 MiB a connection may leave unread) and never read, with a
 * small receive buffer. Without a bound on all connections together the
 * leader would hold some 700 MB. With --max-unread-mb 16 it closes the
 * connections that hold the most whenever the total passes 16 MiB, saying
 * so in its log with the total it saw, which the test reads back; the
 * leader's VmRSS grows by less than RSS_BOUND_KB; a client that reads its
 * lists at the same time gets every one of them; and the bystander locks
 * and unlocks.
 */
#define HOSTILE 12
#define LISTS 200
TEST(unread_replies_bounded)
{
    int fds[HOSTILE], good, lines, got = 0;
    struct buf req = {0};
    baton_t *b;
    baton_lock_t *held[BATON_MAX_LIST];
    char name[BATON_MAX_NAME];
    double max_mib;
    long rss;

    start3_with(EXTRA_UNREAD);
    b = normal_client();
    memset(name, 'l', 250);
    name[250] = '\0';
    for (int i = 0; i < BATON_MAX_LIST; i++) {
        memcpy(name, "held/", 5);
        snprintf(name + 5, 16, "%04d", i);
        name[9] = '-';
        ASSERT_EQ(baton_lock(b, name, &held[i]), 0);
    }
    rss = vmrss_kb(C.nodes[L].pid);

    for (int i = 0; i < LISTS; i++) put_list_locks(&req, 100 + (uint64_t)i);
    for (int h = 0; h < HOSTILE; h++) {
        int small = 4096;
        fds[h] = raw_connect(L);
        setsockopt(fds[h], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
        hello(fds[h]);
        send_bytes(fds[h], req.data, req.len);
    }
    /* A client that reads: one list at a time, while the others pile up. */
    good = raw_connect(L);
    hello(good);
    for (int i = 0; i < 20; i++) {
        struct msg m = {.type = MSG_LIST_LOCKS, .req_id = 7}, r;
        uint8_t *frame;
        m.u.list_locks.limit = BATON_MAX_LIST;
        send_msg(good, &m);
        ASSERT_EQ(recv_msg(good, &r, &frame), 1);
        ASSERT_EQ(r.type, MSG_LIST_LOCKS_R);
        got += (int)r.u.list_locks_r.n;
        msg_free(&r);
        free(frame);
    }
    ASSERT_EQ(got, 20 * BATON_MAX_LIST);
    sleep_ms(500);

    lines = total_lines("unread replies: ", "in all connections, over", &max_mib);
    fprintf(stderr, "# %d lines about unread replies; the largest total reported: %.1f MiB\n",
            lines, max_mib);
    ASSERT_GT(lines, 0);
    /* Over the bound by at most one reply when it is noticed. */
    ASSERT(max_mib <= UNREAD_MB + 1.0);
    ASSERT_LT(vmrss_kb(C.nodes[L].pid) - rss, RSS_BOUND_KB);
    for (int h = 0; h < HOSTILE; h++) close(fds[h]);
    close(good);
    buf_free(&req);
    for (int i = 0; i < BATON_MAX_LIST; i++) ASSERT_EQ(baton_unlock(held[i]), 0);
    check_unaffected(b, rss);
    finish(b);
}

/* ---- large frames held on many connections ------------------------- */

#define BIG_CONNS 800
/* Growth of the leader's VmRSS allowed while they are held, and left
 * once they are gone. */
#if defined(__SANITIZE_ADDRESS__)
#define BIG_HELD_KB (512 * 1024) /* freed buffers stay in ASan's quarantine */
#else
#define BIG_HELD_KB (100 * 1024)
#endif
#if defined(__SANITIZE_ADDRESS__)
#define BIG_LEFT_KB (512 * 1024) /* ASan's quarantine keeps freed buffers mapped */
#else
#define BIG_LEFT_KB (8 * 1024)
#endif
/* big frames: the frame timeout must not be what ends them */
static const char *const EXTRA_BIG[] = {"--max-conns", "1000", "--frame-timeout", "60000",
                                        "--max-input-mb", "32", NULL};

/* The test needs n descriptors of its own. */
static void want_fds(int n)
{
    struct rlimit rl;

    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur < (rlim_t)n + 256) {
        rl.rlim_cur = rl.rlim_max < (rlim_t)n + 256 ? rl.rlim_max : (rlim_t)n + 256;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < (rlim_t)n + 256) FAIL("open-files limit %llu", (unsigned long long)rl.rlim_cur);
}

/* Did the server answer fd ERROR(code) or close it (within 10 s)? 1 for
 * the ERROR, 0 for a plain end of the stream (a reset can overtake the
 * ERROR when the server closes with the client's bytes unread); a timeout
 * fails the test. */
static int error_or_closed(int fd, int code)
{
    uint8_t hdr[4], body[BATON_MAX_ERRMSG + 64];
    struct msg m;
    uint32_t len;
    int rv = recv_exact(fd, hdr, 4), got = 0;

    if (rv < 0) FAIL("the server neither answered nor closed within 10 s");
    if (rv == 0) return 0;
    len = le_get_u32(hdr);
    if (len < PROTO_FRAME_MIN || len > sizeof body - 4) FAIL("a frame of %u bytes", len);
    memcpy(body, hdr, 4);
    if (recv_exact(fd, body + 4, len) != 1) return 0;
    if (proto_decode(body, 4 + (size_t)len, &m) != 0) FAIL("an undecodable frame");
    if (m.type != MSG_ERROR || m.u.error.code != code)
        FAIL("expected ERROR(%s), got %s %s", baton_err_name(code), msg_type_name(m.type),
             m.type == MSG_ERROR ? baton_err_name(m.u.error.code) : "");
    got = 1;
    msg_free(&m);
    return got;
}

/* The bystander locks and unlocks; the longest it took so far. */
static void timed_lock(baton_t *b, int64_t *worst)
{
    int64_t t0 = now_ms();

    normal_lock_unlock(b, "bystander/during");
    if (now_ms() - t0 > *worst) *worst = now_ms() - t0;
}

/* After the connections closed, the leader's VmRSS comes back to within
 * BIG_LEFT_KB of where it was (polled for up to 5 s). */
static void rss_comes_back(long before)
{
    long rss = 0;

    for (int i = 0; i < 50; i++) {
        rss = vmrss_kb(C.nodes[L].pid);
        if (rss - before < BIG_LEFT_KB) break;
        sleep_ms(100);
    }
    fprintf(stderr, "# leader VmRSS after they closed: %ld kB (before: %ld kB)\n", rss, before);
    ASSERT_LT(rss - before, BIG_LEFT_KB);
}

/*
 * BIG_CONNS connections that never say HELLO each send a header claiming
 * a 1 MiB frame and then most of its body. Before HELLO a frame is at most
 * 4 KiB: each is answered ERROR(BATON_ETOOBIG) and closed from its header,
 * the leader's VmRSS grows by less than BIG_HELD_KB meanwhile (held, they
 * would take some 800 MB) and comes back once they are gone, and the
 * bystander keeps locking.
 */
TEST(unauth_big_frames_refused)
{
    size_t body = BATON_MAX_FRAME - 4096;
    uint8_t *f = calloc(1, PROTO_HDR_LEN + body);
    int *fds = calloc(BIG_CONNS, sizeof *fds), errors = 0;
    int64_t worst = 0;
    long rss, peak = 0;
    baton_t *b;

    ASSERT(f != NULL && fds != NULL);
    want_fds(BIG_CONNS);
    start3_with(EXTRA_BIG);
    b = normal_client();
    normal_lock_unlock(b, "bystander/before");
    rss = vmrss_kb(C.nodes[L].pid);
    put_header(f, BATON_MAX_FRAME, MSG_ACQUIRE, 9);
    for (int i = 0; i < BIG_CONNS; i++) {
        long now;

        fds[i] = raw_connect(L);
        send_bytes(fds[i], f, PROTO_HDR_LEN + body);
        if (i % 100 == 99) {
            now = vmrss_kb(C.nodes[L].pid);
            if (now > peak) peak = now;
            timed_lock(b, &worst);
        }
    }
    fprintf(stderr, "# peak VmRSS %ld kB (before: %ld kB); the bystander's slowest lock: "
            "%lld ms\n", peak, rss, (long long)worst);
    ASSERT_LT(peak - rss, BIG_HELD_KB);
    for (int i = 0; i < BIG_CONNS; i++) errors += error_or_closed(fds[i], BATON_ETOOBIG);
    fprintf(stderr, "# %d of %d answered ERROR(ETOOBIG), the rest closed\n", errors, BIG_CONNS);
    ASSERT_GT(errors, 0);
    for (int i = 0; i < BIG_CONNS; i++) close(fds[i]);
    rss_comes_back(rss);
    free(f);
    free(fds);
    check_unaffected(b, rss);
    finish(b);
}

/*
 * AUTH_CONNS connections through HELLO each send nearly a whole 1 MiB
 * frame and stall (a frame this large is allowed after HELLO). With
 * --max-input-mb 32 the leader closes the connections holding the most
 * whenever all of them together hold more than 32 MiB, answering
 * ERROR(BATON_ELIMIT) and saying so in its log with the total it saw; its
 * VmRSS stays within BIG_HELD_KB (held, they would take some 300 MB) and
 * comes back once they are gone; the bystander keeps locking.
 */
#define AUTH_CONNS 300
#define INPUT_MB 32
TEST(auth_big_frames_bounded)
{
    size_t body = BATON_MAX_FRAME - 4096;
    uint8_t *f = calloc(1, PROTO_HDR_LEN + body);
    int *fds = calloc(AUTH_CONNS, sizeof *fds), errors = 0, lines;
    int64_t worst = 0;
    long rss, peak = 0;
    double max_mib;
    baton_t *b;

    ASSERT(f != NULL && fds != NULL);
    want_fds(AUTH_CONNS);
    start3_with(EXTRA_BIG);
    b = normal_client();
    normal_lock_unlock(b, "bystander/before");
    rss = vmrss_kb(C.nodes[L].pid);
    put_header(f, BATON_MAX_FRAME, MSG_ACQUIRE, 9);
    for (int i = 0; i < AUTH_CONNS; i++) {
        fds[i] = raw_connect(L);
        hello(fds[i]);
        send_bytes(fds[i], f, PROTO_HDR_LEN + body);
        if (i % 30 == 29) {
            long now = vmrss_kb(C.nodes[L].pid);
            if (now > peak) peak = now;
            timed_lock(b, &worst);
        }
    }
    sleep_ms(300);
    if (vmrss_kb(C.nodes[L].pid) > peak) peak = vmrss_kb(C.nodes[L].pid);
    lines = total_lines("request input: ", "held by all connections, over", &max_mib);
    fprintf(stderr, "# %d lines about request input, the largest total reported %.1f MiB; "
            "peak VmRSS %ld kB (before: %ld kB); the bystander's slowest lock: %lld ms\n",
            lines, max_mib, peak, rss, (long long)worst);
    ASSERT_GT(lines, 0);
    /* over the bound by at most one connection's frame when it is noticed */
    ASSERT(max_mib <= INPUT_MB + 1.1);
    ASSERT_LT(peak - rss, BIG_HELD_KB);
    for (int i = 0; i < AUTH_CONNS; i++) {
        struct pollfd pf = {.fd = fds[i], .events = POLLIN};
        /* the connections still held are not answered: they wait for their frame */
        if (poll(&pf, 1, 0) == 1) errors += error_or_closed(fds[i], BATON_ELIMIT);
        close(fds[i]);
    }
    fprintf(stderr, "# %d connections answered ERROR(ELIMIT)\n", errors);
    ASSERT_GT(errors, 0);
    rss_comes_back(rss);
    free(f);
    free(fds);
    check_unaffected(b, rss);
    finish(b);
}

/* ---- many sessions expiring at one moment ---------------------------- */

#define MASS 20000
#define MASS_TTL_MS 8000

/* How many times key occurs in node i's log. */
static int log_count(int i, const char *key)
{
    static char text[16 << 20];
    const char *p = text;
    FILE *f = fopen(C.nodes[i].log, "r");
    size_t n;
    int count = 0;

    ASSERT(f != NULL);
    n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    while ((p = strstr(p, key)) != NULL) {
        count++;
        p += strlen(key);
    }
    return count;
}

static uint64_t leader_term(void)
{
    struct cluster_status st;

    ASSERT_EQ(cluster_node_status(&C, L, &st, 10000), 0);
    return st.term;
}

/*
 * MASS sessions with a ttl of MASS_TTL_MS are opened (pipelined on one
 * connection, never renewed), then leadership moves to another node, which
 * gives every session a fresh lease at the same moment: all of them run
 * out together. The new leader ends them all, keeps its term while doing
 * so, and the bystander's lock and unlock never takes a second.
 */
TEST(mass_expiry_spread)
{
    struct buf req = {0};
    struct msg m;
    baton_t *b;
    int64_t worst = 0, t0;
    uint64_t term;
    int fd, target;

    start3();
    b = normal_client();
    fd = raw_connect(L);
    hello(fd);
    for (int i = 0; i < MASS; i++) {
        memset(&m, 0, sizeof m);
        m.type = MSG_OPEN_SESSION;
        m.req_id = 100 + (uint64_t)i;
        m.u.open_session.ttl_ms = MASS_TTL_MS;
        m.u.open_session.nonce = 1 + (uint64_t)i;
        ASSERT_EQ(proto_encode(&req, &m), 0);
    }
    send_bytes(fd, req.data, req.len);
    for (int i = 0; i < MASS; i++) {
        struct msg r;
        uint8_t *frame;

        ASSERT_EQ(recv_msg(fd, &r, &frame), 1);
        if (r.type != MSG_SESSION) FAIL("OPEN_SESSION %d answered %s", i, msg_type_name(r.type));
        msg_free(&r);
        free(frame);
    }
    buf_free(&req);
    /* another node leads: every session's lease starts again there, at once */
    target = (L + 1) % C.n;
    memset(&m, 0, sizeof m);
    m.type = MSG_TRANSFER;
    m.req_id = 7;
    m.u.transfer.id = (uint32_t)target + 1;
    expect_reply(fd, &m, MSG_TRANSFER_R);
    close(fd);
    L = cluster_wait_leader(&C, 15000);
    ASSERT_EQ(L, target);
    normal_lock_unlock(b, "bystander/moved");
    term = leader_term();
    t0 = now_ms();
    while (now_ms() - t0 < MASS_TTL_MS + 8000 && log_count(L, "lease expired") < MASS)
        timed_lock(b, &worst);
    for (int i = 0; i < 20; i++) timed_lock(b, &worst);
    fprintf(stderr, "# %d sessions ended on the new leader in %lld ms; its term %llu -> %llu; "
            "the bystander's slowest lock: %lld ms\n", log_count(L, "lease expired"),
            (long long)(now_ms() - t0), (unsigned long long)term,
            (unsigned long long)leader_term(), (long long)worst);
    ASSERT_GE(log_count(L, "lease expired"), MASS);
    ASSERT_UEQ(leader_term(), term);
    ASSERT_LT(worst, 1000);
    all_alive();
    finish(b);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(300);
    signal(SIGPIPE, SIG_IGN);
    RUN(garbage_bytes);
    RUN(frame_claims_4gib);
    RUN(lock_name_1mb);
    RUN(unknown_message_types);
    RUN(wrong_protocol_version);
    RUN(half_frame_then_stall);
    RUN(ten_thousand_connections);
    RUN(one_session_100k_waits);
    RUN(release_flood_never_acknowledged);
    RUN(unread_replies_bounded);
    RUN(unauth_big_frames_refused);
    RUN(auth_big_frames_bounded);
    RUN(mass_expiry_spread);
    return runner_done();
}
