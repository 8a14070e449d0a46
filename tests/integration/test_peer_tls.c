/*
 * test_peer_tls.c -- mutual TLS between real batond processes on the raft
 * port (cluster_opts.secure = CLUSTER_PEER_TLS; docs/security.md,
 * "Between nodes"), one line per test:
 *
 *   peer_tls_cluster_serves      a 3-node cluster elects a leader, locks work,
 *                                and it survives the leader's kill -9 and
 *                                restart
 *   peer_tls_member_add          a 4th node started with --join is added
 *                                (batonctl member add) and catches up
 *   peer_tls_other_ca_refused    a raft connection whose certificate another
 *                                CA signed is refused
 *   peer_tls_non_member_refused  a certificate of the cluster's CA for a node
 *                                id that is not a member (baton-node-9), one
 *                                whose CN does not match its HELLO, and a
 *                                real 4th batond with a --cluster list of
 *                                its own are refused; a member's own
 *                                certificate is admitted (the control)
 *   peer_tls_plaintext_refused   libraft's plaintext handshake on a TLS raft
 *                                port is refused
 *   peer_tls_handshake_bounds    an idle connection is closed after
 *                                --handshake-timeout, and one connection
 *                                over the cap of pending handshakes closes
 *                                the oldest
 *   peer_tls_bad_cert_no_start   batond refuses to start with another node's
 *                                certificate, a mismatched key or a missing
 *                                file, and says why
 *
 * Every refusal is checked three ways: the connection never gets the ACK,
 * the refusing node logs the reason, and the cluster keeps its leader and
 * its term over several election timeouts (default 400 ms).
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "baton/baton.h"
#include "proto/buf.h"
#include "raft/peer_hello.h"
#include "storage/cmd_table.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/files.h"
#include "tests/lib/proc.h"
#include "tests/lib/runner.h"
#include "tests/lib/tls_sock.h"

static struct cluster C;

/* ---- helpers ---------------------------------------------------------- */

static int start3(const char *const *extra)
{
    struct cluster_opts o = {.secure = CLUSTER_PEER_TLS, .extra_args = extra};
    int leader;

    ASSERT_EQ(cluster_start_opts(&C, 3, &o), 0);
    leader = cluster_wait_leader(&C, 15000);
    ASSERT_GE(leader, 0);
    return leader;
}

/* Take and release lock `name` through the cluster's client ports. */
static void lock_once(const char *name)
{
    baton_opts o = {.endpoints = cluster_endpoints(&C), .client_name = "test_peer_tls"};
    baton_t *b;
    baton_lock_t *l;

    ASSERT_EQ(baton_connect(&o, &b), 0);
    ASSERT_EQ(baton_lock(b, name, &l), 0);
    ASSERT_GT(baton_lock_fence(l), 0);
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(b);
}

/* The leader's index and term, asked of the leader itself. */
static int leader_term(uint64_t *term)
{
    struct cluster_status st;
    int leader = cluster_wait_leader(&C, 10000);

    ASSERT_GE(leader, 0);
    ASSERT_EQ(cluster_node_status(&C, leader, &st, 2000), 0);
    *term = st.term;
    return leader;
}

/* Over 2 s (five election timeouts), the leader and its term stay. */
static void assert_undisturbed(int leader, uint64_t term)
{
    uint64_t now_term;

    sleep_ms(2000);
    ASSERT_EQ(leader_term(&now_term), leader);
    ASSERT_UEQ(now_term, term);
}

/* Make DIR/NAME.pem and .key with CN cn, signed by DIR/CA.pem. */
static void make_cert(const char *dir, const char *name, const char *ca, const char *cn)
{
    char cmd[PATH_MAX + 256];

    snprintf(cmd, sizeof cmd, "server/certs.sh cert '%s' %s %s %s IP:127.0.0.1", dir, name, ca,
             cn);
    ASSERT_EQ(system(cmd), 0);
}

/* The HELLO of node id at addr with levels word `levels` (raft/peer_hello.h
 * has the layout). */
static void hello(struct buf *b, uint64_t id, const char *addr, uint64_t levels)
{
    ASSERT_EQ(buf_put_u32(b, PEER_HELLO_VERSION), 0);
    ASSERT_EQ(buf_put_u64(b, id), 0);
    ASSERT_EQ(buf_put_u64(b, 0), 0); /* no cluster id yet, as a --join node */
    ASSERT_EQ(buf_put_u64(b, levels), 0);
    ASSERT_EQ(buf_put_u8(b, 0), 0); /* flags: a raft connection, no question */
    ASSERT_EQ(buf_put_u16(b, (uint16_t)strlen(addr)), 0);
    ASSERT_EQ(buf_put(b, addr, strlen(addr)), 0);
}

/* Connect to node i's raft port with certificate `name` (in C's
 * certificate directory, or `dir` if given) and send the HELLO of node id
 * with levels word `levels`. Returns the answer's first byte (PEER_HELLO_ACK,
 * _OTHER, _REFUSED), 0 if the connection ended first, -1 if the TLS
 * handshake itself failed. */
static int raft_hello_levels(int i, const char *dir, const char *name, uint64_t id,
                             uint64_t levels)
{
    char cert[PATH_MAX + 64], key[PATH_MAX + 64], addr[32];
    struct tls_sock_cfg cfg = {.ca_file = cluster_cert(&C, "ca", 0)};
    struct tls_sock s;
    struct buf b = {0};
    int answer;

    snprintf(cert, sizeof cert, "%s/%s.pem", dir ? dir : C.certs, name);
    snprintf(key, sizeof key, "%s/%s.key", dir ? dir : C.certs, name);
    cfg.cert_file = cert;
    cfg.key_file = key;
    if (tls_sock_connect(&s, C.nodes[i].raft_port, &cfg, 3000) != 0) return -1;
    snprintf(addr, sizeof addr, "127.0.0.1:%d", 1);
    hello(&b, id, addr, levels);
    if (tls_sock_send(&s, b.data, b.len) != 0) {
        buf_free(&b);
        tls_sock_close(&s);
        return 0;
    }
    buf_free(&b);
    answer = tls_sock_recv_raw(&s, 1, 6000) >= 1 ? s.in.data[0] : 0;
    tls_sock_close(&s);
    return answer;
}

/* The same with this build's level: 1 for the ACK, 0 if refused in any
 * way, -1 if the TLS handshake failed. */
static int raft_hello(int i, const char *dir, const char *name, uint64_t id)
{
    int a = raft_hello_levels(i, dir, name, id, CMD_LEVEL);

    return a < 0 ? -1 : a == PEER_HELLO_ACK;
}

/* A blocking TCP connection to 127.0.0.1:port. */
static int tcp_connect(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    ASSERT_GE(fd, 0);
    ASSERT_EQ(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

/* Has the other end closed fd within timeout_ms? 1 yes (end of stream or a
 * reset; whatever it sent first is read and dropped), 0 no. */
static int closed_within(int fd, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    char junk[4096];

    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int left = (int)(deadline - now_ms());

        if (left <= 0 || poll(&p, 1, left) <= 0) return 0;
        ssize_t n = recv(fd, junk, sizeof junk, 0);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return 1;
    }
}

static int free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port;

    ASSERT_EQ(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ASSERT_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    port = ntohs(a.sin_port);
    close(fd);
    return port;
}

/* ---- tests -------------------------------------------------------------- */

TEST(peer_tls_cluster_serves)
{
    struct cluster_status st, lst;
    int leader = start3(NULL), next;

    lock_once("peer-tls-a");
    ASSERT_EQ(cluster_kill(&C, leader, SIGKILL), 128 + SIGKILL);
    next = cluster_wait_leader(&C, 15000);
    ASSERT_GE(next, 0);
    ASSERT_NE(next, leader);
    lock_once("peer-tls-b");
    /* The old leader comes back and catches up over TLS. */
    ASSERT_EQ(cluster_restart(&C, leader), 0);
    ASSERT_EQ(cluster_node_status(&C, next, &lst, 2000), 0);
    for (int64_t deadline = now_ms() + 10000;; sleep_ms(50)) {
        ASSERT_EQ(cluster_node_status(&C, leader, &st, 2000), 0);
        if (st.applied_index >= lst.commit_index) break;
        ASSERT(now_ms() < deadline);
    }
    ASSERT_UEQ(st.term, lst.term);
    lock_once("peer-tls-c");
    ASSERT_EQ(cluster_stop(&C), 0);
}

TEST(peer_tls_member_add)
{
    struct ctl_result r;
    struct cluster_status st, lst;
    char spec[64];
    int n4;

    start3(NULL);
    lock_once("before-add");
    n4 = cluster_add_node(&C);
    ASSERT_EQ(n4, 3);
    cluster_member_addrs(&C, n4, spec, sizeof spec);
    ASSERT_EQ(cluster_ctl(&C, &r, "-o", "json", "member", "add", "4", spec, NULL), 0);
    ASSERT(strstr(r.out, "\"id\":4,\"role\":\"voter\"") != NULL);
    ctl_result_free(&r);
    lock_once("after-add");
    ASSERT_EQ(cluster_node_status(&C, cluster_wait_leader(&C, 10000), &lst, 2000), 0);
    for (int64_t deadline = now_ms() + 10000;; sleep_ms(50)) {
        ASSERT_EQ(cluster_node_status(&C, n4, &st, 2000), 0);
        if (st.applied_index >= lst.commit_index) break;
        ASSERT(now_ms() < deadline);
    }
    ASSERT_EQ(cluster_stop(&C), 0);
}

TEST(peer_tls_other_ca_refused)
{
    char evil[PATH_MAX + 16];
    uint64_t term;
    int leader = start3(NULL), target;

    leader = leader_term(&term);
    target = (leader + 1) % 3;
    snprintf(evil, sizeof evil, "%s/evil", C.root);
    {
        char cmd[PATH_MAX + 64];
        snprintf(cmd, sizeof cmd, "server/certs.sh ca '%s' evilca", evil);
        ASSERT_EQ(system(cmd), 0);
    }
    /* A certificate that names a member, from a CA the cluster does not
     * trust: the TLS handshake fails on the node's side. */
    make_cert(evil, "node2", "evilca", "baton-node-2");
    for (int k = 0; k < 5; k++) ASSERT_LE(raft_hello(target, evil, "node2", 2), 0);
    ASSERT(cluster_log_says(&C, target, "refused: peer certificate refused", 3000));
    assert_undisturbed(leader, term);
    ASSERT_EQ(cluster_stop(&C), 0);
}

TEST(peer_tls_non_member_refused)
{
    char rogue_dir[PATH_MAX + 16], members[1200], raft[32], client[32], logp[PATH_MAX + 16];
    uint64_t term;
    int leader = start3(NULL), target, rport, cport;
    pid_t rogue;

    leader = leader_term(&term);
    target = (leader + 1) % 3;
    /* The control: another member's own certificate and id are admitted. */
    {
        char name[16];
        int other = (target + 1) % 3;
        snprintf(name, sizeof name, "node%d", other + 1);
        ASSERT_EQ(raft_hello(target, NULL, name, (uint64_t)other + 1), 1);
    }
    /* A member of a feature level below the cluster's (raised to this
     * build's once every voter said it runs it) is answered REFUSED. */
    ASSERT_EQ(cluster_wait_gauge(&C, "baton_cluster_feature_level", CMD_LEVEL, 15000), 0);
    sleep_ms(1500); /* the transport learns the applied level within a second */
    {
        char name[16];
        int other = (target + 1) % 3;
        snprintf(name, sizeof name, "node%d", other + 1);
        ASSERT_EQ(raft_hello_levels(target, NULL, name, (uint64_t)other + 1, 1),
                  PEER_HELLO_REFUSED);
        ASSERT(cluster_log_says(&C, target, "runs a binary of feature level 1, below the cluster's level", 3000));
        ASSERT_EQ(raft_hello(target, NULL, name, (uint64_t)other + 1), 1);
    }
    /* The cluster's CA, but node 9 is no member. */
    make_cert(C.certs, "node9", "ca", "baton-node-9");
    ASSERT_EQ(raft_hello(target, NULL, "node9", 9), 0);
    ASSERT(cluster_log_says(&C, target, "raft connection from node 9 (", 3000));
    ASSERT(cluster_log_says(&C, target, "in neither the committed nor the latest raft configuration", 3000));
    /* A member's certificate with another member's id, and node 9's
     * certificate claiming a member's id. */
    ASSERT_EQ(raft_hello(target, NULL, "node3", 2), 0);
    ASSERT_EQ(raft_hello(target, NULL, "node9", 3), 0);
    ASSERT(cluster_log_says(&C, target, "its certificate names 'baton-node-9' but its HELLO says node 3", 3000));

    /* A real 4th batond with a valid certificate and a --cluster list of its
     * own (itself and the three): it bootstraps a configuration nobody
     * else has and campaigns; the three refuse it. */
    rport = free_port();
    cport = free_port();
    snprintf(raft, sizeof raft, "127.0.0.1:%d", rport);
    snprintf(client, sizeof client, "127.0.0.1:%d", cport);
    snprintf(members, sizeof members, "%s,4=%s/%s", C.members, raft, client);
    snprintf(rogue_dir, sizeof rogue_dir, "%s/rogue", C.root);
    snprintf(logp, sizeof logp, "%s/rogue.log", C.root);
    {
        char path[PATH_MAX + 16], cert[PATH_MAX + 64], key[PATH_MAX + 64], ca[PATH_MAX + 64];
        const char *argv[] = {path, "--id", "4", "--data", rogue_dir, "--cluster", members,
                              "--peer-cert", cert, "--peer-key", key, "--peer-ca", ca, NULL};

        snprintf(path, sizeof path, "%s/batond", C.build);
        snprintf(cert, sizeof cert, "%s", cluster_cert(&C, "node4", 0));
        snprintf(key, sizeof key, "%s", cluster_cert(&C, "node4", 1));
        snprintf(ca, sizeof ca, "%s", cluster_cert(&C, "ca", 0));
        rogue = proc_spawn_files(argv, NULL, logp);
        ASSERT_GT(rogue, 0);
    }
    for (int i = 0; i < 3; i++)
        ASSERT(cluster_log_says(&C, i, "raft connection from node 4 (", 5000));
    assert_undisturbed(leader, term);
    ASSERT_EQ(proc_stop(rogue, SIGTERM, 10000), 0);
    lock_once("after-the-rogue");
    ASSERT_EQ(cluster_stop(&C), 0);
}

TEST(peer_tls_plaintext_refused)
{
    uint64_t term;
    int leader = start3(NULL), target, fd;
    struct buf b = {0};

    leader = leader_term(&term);
    target = (leader + 2) % 3;
    /* libraft's own handshake: protocol 1, node id 2, address length,
     * address padded to 8 bytes. */
    buf_put_u64(&b, 1);
    buf_put_u64(&b, 2);
    buf_put_u64(&b, 16);
    buf_put(&b, "127.0.0.1:1\0\0\0\0\0", 16);
    for (int k = 0; k < 5; k++) {
        fd = tcp_connect(C.nodes[target].raft_port);
        ASSERT_EQ(send(fd, b.data, b.len, MSG_NOSIGNAL), (ssize_t)b.len);
        ASSERT(closed_within(fd, 3000));
        close(fd);
    }
    buf_free(&b);
    ASSERT(cluster_log_says(&C, target, "not TLS: the peer speaks plaintext", 3000));
    assert_undisturbed(leader, term);
    ASSERT_EQ(cluster_stop(&C), 0);
}

#define PENDING_CAP 64 /* node_peer_tls.max_pending's default */

TEST(peer_tls_handshake_bounds)
{
    static const char *const extra[] = {"--handshake-timeout", "1500", NULL};
    int fds[PENDING_CAP + 1], port, t0;

    start3(extra);
    port = C.nodes[0].raft_port;
    /* One idle connection: closed once the handshake timeout passes. */
    fds[0] = tcp_connect(port);
    t0 = (int)now_ms();
    ASSERT(closed_within(fds[0], 5000));
    ASSERT_GE((int)now_ms() - t0, 1000);
    close(fds[0]);
    ASSERT(cluster_log_says(&C, 0, "the handshake did not finish in time", 3000));
    /* PENDING_CAP idle connections, then one more: the oldest goes at once,
     * well before its timeout; the newest stays. */
    for (int k = 0; k <= PENDING_CAP; k++) {
        fds[k] = tcp_connect(port);
        if (k == 0) sleep_ms(100); /* surely accepted first */
    }
    ASSERT(closed_within(fds[0], 1000));
    ASSERT(!closed_within(fds[PENDING_CAP], 100));
    for (int k = 0; k <= PENDING_CAP; k++) close(fds[k]);
    ASSERT(cluster_log_says(&C, 0, "raft handshakes were pending at once", 3000));
    lock_once("after-the-flood");
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* batond with these peer flags must exit 1 at start and log `why`. */
static void refuses(const char *dir, const char *cert, const char *key, const char *why)
{
    char path[PATH_MAX + 16], data[PATH_MAX + 16], logp[PATH_MAX + 16], c[PATH_MAX + 16],
        k[PATH_MAX + 16], ca[PATH_MAX + 16], tail[8192];
    const char *build = getenv("BATON_BUILD");
    const char *argv[] = {path, "--id", "1", "--data", data, "--cluster",
                          "1=127.0.0.1:1/127.0.0.1:2", "--peer-cert", c, "--peer-key", k,
                          "--peer-ca", ca, NULL};
    pid_t pid;

    snprintf(path, sizeof path, "%s/batond", build && *build ? build : "build/default");
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(logp, sizeof logp, "%s/batond.log", dir);
    snprintf(c, sizeof c, "%s/%s", dir, cert);
    snprintf(k, sizeof k, "%s/%s", dir, key);
    snprintf(ca, sizeof ca, "%s/ca.pem", dir);
    unlink(logp);
    pid = proc_spawn_files(argv, NULL, logp);
    ASSERT_GT(pid, 0);
    ASSERT_EQ(proc_wait(pid, 10000), 1);
    ASSERT_GE(read_tail(logp, tail, sizeof tail), 0);
    if (strstr(tail, why) == NULL) FAIL("batond said: %s\nnot: %s", tail, why);
}

TEST(peer_tls_bad_cert_no_start)
{
    char dir[PATH_MAX], cmd[PATH_MAX + 64];

    ASSERT_EQ(tmpdir_make(dir, sizeof dir, "baton-peer-tls"), 0);
    snprintf(cmd, sizeof cmd, "server/certs.sh cluster '%s' 2", dir);
    ASSERT_EQ(system(cmd), 0);
    refuses(dir, "node2.pem", "node2.key",
            "names CN 'baton-node-2'; node 1 needs one whose subject CN is 'baton-node-1'");
    refuses(dir, "node1.pem", "node2.key", "key values mismatch");
    refuses(dir, "nope.pem", "node1.key", "cannot read the certificate");
    refuses(dir, "client.pem", "client.key", "node 1 needs one whose subject CN is");
    rm_rf(dir);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(120);
    signal(SIGPIPE, SIG_IGN);
    RUN(peer_tls_cluster_serves);
    RUN(peer_tls_member_add);
    RUN(peer_tls_other_ca_refused);
    RUN(peer_tls_non_member_refused);
    RUN(peer_tls_plaintext_refused);
    RUN(peer_tls_handshake_bounds);
    RUN(peer_tls_bad_cert_no_start);
    return runner_done();
}
