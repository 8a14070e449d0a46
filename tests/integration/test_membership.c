/*
 * test_membership.c -- replacing a node of a running cluster, with real
 * batond processes on 127.0.0.1 (tests/lib/cluster.h starts and always
 * stops them), while clients lock and unlock.
 *
 * The replacement is the procedure of docs/operations.md, "Replacing a node": start node 4 with --join
 * (its --cluster names only itself), `batonctl member add 4 ...`, wait
 * until it has caught up, `batonctl member remove 1`, stop node 1. Worker
 * threads, each with its own libbaton session whose endpoints are the
 * three original nodes, lock and unlock two locks the whole time; no error
 * may reach them, no lock may have two holders, fences must increase, and
 * at the end the state digests of nodes 2, 3 and 4 must be equal. It runs
 * twice: with node 1 a follower, and with node 1 the leader (which then
 * hands leadership away before it is removed).
 *
 * Then the refusals: a member add while another change is in flight, an
 * id or an address already in use, and the resumption of an add whose new
 * node was not running.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <limits.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "baton/baton.h"
#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "proto/msg.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/files.h"
#include "tests/lib/jsonget.h"
#include "tests/lib/proc.h"
#include "tests/lib/runner.h"
#include "tests/lib/workload.h"

static struct cluster C;

static baton_t *connect_to(const char *endpoints, const char *name)
{
    baton_opts o = {.endpoints = endpoints, .client_name = name};

    return client_connect(&o);
}

/* Occurrences of needle in s. */
static int count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

/* Run batonctl (with the original endpoints) and expect exit status want. */
static void ctl_expect(int want, struct ctl_result *r, const char *const *args)
{
    int st = cluster_ctlv(&C, 60000, r, args);
    if (st != want)
        FAIL("batonctl %s %s exited %d, not %d\n# stdout: %s# stderr: %s", args[0],
             args[1] ? args[1] : "", st, want, r->out, r->err);
}

/* ---- state ------------------------------------------------------------------ */

/*
 * Wait (at most 20 s) until nodes idx[0..n) all report the same applied
 * index and the same state digest, and return that index. Nothing may be
 * committing meanwhile (the workers paused or stopped).
 */
static uint64_t wait_same_state(const int *idx, int n)
{
    struct cluster_status st[CLUSTER_MAX_NODES];
    int64_t deadline = now_ms() + 20000;

    for (;;) {
        int same = 1;
        for (int i = 0; i < n && same; i++) {
            same = cluster_node_status(&C, idx[i], &st[i], 1000) == 0;
            if (same && i > 0)
                same = st[i].applied_index == st[0].applied_index &&
                       st[i].state_digest == st[0].state_digest;
        }
        if (same) {
            ASSERT_GT(st[0].applied_index, 0);
            ASSERT(st[0].state_digest != 0);
            return st[0].applied_index;
        }
        if (now_ms() > deadline) break;
        sleep_ms(100);
    }
    for (int i = 0; i < n; i++)
        fprintf(stderr, "# node %u: applied %llu digest %016llx\n", C.nodes[idx[i]].id,
                (unsigned long long)st[i].applied_index, (unsigned long long)st[i].state_digest);
    FAIL("the nodes never reached the same state");
}

/* Make node `want` (an index) the leader, or, with want < 0, any node but
 * `not`. Returns the leader's index. */
static int arrange_leader(int want, int not)
{
    for (int attempt = 0; attempt < 5; attempt++) {
        int leader = cluster_wait_leader(&C, 15000);
        char target[16];
        struct ctl_result r;

        ASSERT_GE(leader, 0);
        if ((want >= 0 && leader == want) || (want < 0 && leader != not)) return leader;
        snprintf(target, sizeof target, "%u", C.nodes[want >= 0 ? want : (not + 1) % C.n].id);
        cluster_ctl(&C, &r, "transfer-leader", target, NULL);
        ctl_result_free(&r);
        sleep_ms(200);
    }
    FAIL("could not arrange the leader");
}

/* How many snapshot-* files (not their .meta companions) node i's raft
 * directory holds. */
static int count_snapshots(int i)
{
    char dir[PATH_MAX + 8];
    struct dirent *e;
    DIR *d;
    int n = 0;

    snprintf(dir, sizeof dir, "%s/raft", C.nodes[i].dir);
    d = opendir(dir);
    if (d == NULL) return 0;
    while ((e = readdir(d)) != NULL)
        n += strncmp(e->d_name, "snapshot-", 9) == 0 && strstr(e->d_name, ".meta") == NULL;
    closedir(d);
    return n;
}

/* ---- the replacement ------------------------------------------------------- */

/* Snapshots every 128 entries, keeping 32: a node that joins after a few
 * hundred entries cannot be sent the log from its start and must install a
 * snapshot first (its configuration and members table included). */
static const char *const small_snapshots[] = {"--snapshot-threshold", "128",
                                              "--snapshot-trailing", "32", NULL};

static void replace_node_1(bool node1_leads, bool via_snapshot)
{
    const struct cluster_opts opts = {.extra_args = via_snapshot ? small_snapshots : NULL};
    const int all4[] = {0, 1, 2, 3}, rest[] = {1, 2, 3};
    /* Four workers on two locks. Their endpoints are the three nodes the
     * cluster started with, node 1 included: its removal must not strand
     * them. */
    struct workload w = {.opts = {.client_name = "member-worker", .connect_timeout_ms = 15000},
                         .n_workers = 4,
                         .n_locks = 2,
                         .prefix = "m"};
    struct ctl_result r;
    char spec[64], ep4[32];
    int leader, n4;
    baton_t *b;
    baton_lock_t *l;

    ASSERT_EQ(cluster_start_opts(&C, 3, &opts), 0);
    ASSERT_GE(cluster_wait_leader(&C, 15000), 0);
    w.opts.endpoints = cluster_endpoints(&C);
    workload_start(&w);
    workload_wait_cycles(&w, via_snapshot ? 200 : 50, "before the add");
    if (via_snapshot) {
        /* 400 entries and more: every node has snapshotted and dropped the
         * start of its log. */
        leader = cluster_wait_leader(&C, 15000);
        ASSERT_GE(leader, 0);
        ASSERT_GT(count_snapshots(leader), 0);
    }

    /* 1. Node 4 starts with --join and is added while the load goes on. */
    n4 = cluster_add_node(&C);
    ASSERT_EQ(n4, 3);
    snprintf(ep4, sizeof ep4, "%s", cluster_endpoint(&C, n4));
    cluster_member_addrs(&C, n4, spec, sizeof spec);
    ctl_expect(0, &r, (const char *[]){"-o", "json", "member", "add", "4", spec, NULL});
    ASSERT_EQ(count(r.out, "\"role\":\"voter\""), 4);
    ASSERT(strstr(r.out, ep4) != NULL);
    ctl_result_free(&r);

    /* 2. It catches up under load: it applies what the leader had
     * committed after the add, and, with the workers held for a moment,
     * all four stand at the same applied index with the same digest. */
    ASSERT_EQ(cluster_wait_caught_up(&C, n4, 20000), 0);
    workload_wait_cycles(&w, 50, "after the add");
    workload_pause(&w);
    wait_same_state(all4, 4);
    workload_resume(&w);

    /* Node 4 knows every member's client address from the replicated
     * state (its own --cluster names only itself): it redirects a client
     * that knows only it, and `member list` through it shows them all. */
    b = connect_to(ep4, "via-node-4");
    ASSERT_EQ(baton_lock(b, "via-4", &l), 0);
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(b);
    {
        struct ctl_result r4;
        ASSERT_EQ(cluster_ctl(NULL, &r4, "-e", ep4, "-o", "json", "member", "list", NULL), 0);
        ASSERT_EQ(count(r4.out, "\"client_addr\":\"127.0.0.1:"), 4);
        ctl_result_free(&r4);
    }

    /* 3. Node 1 leads, or does not, as this run wants. */
    leader = arrange_leader(node1_leads ? 0 : -1, 0);
    ASSERT_EQ(leader == 0, node1_leads);
    workload_wait_cycles(&w, 20, "after arranging the leader");

    /* 4. Remove node 1 (a leader hands leadership away first). */
    ctl_expect(0, &r, (const char *[]){"-o", "json", "member", "remove", "1", NULL});
    ASSERT_EQ(count(r.out, "\"role\":\"voter\""), 3);
    ASSERT(strstr(r.out, "\"id\":1,") == NULL);
    ASSERT(strstr(r.out, cluster_endpoint(&C, 0)) == NULL);
    ctl_result_free(&r);
    leader = cluster_wait_leader(&C, 15000);
    ASSERT_GE(leader, 1);

    /* A new client whose list names the removed (still running) node
     * first gets through to the leader. */
    b = connect_to(cluster_endpoints(&C), "after-remove");
    ASSERT_EQ(baton_lock(b, "after-remove", &l), 0);
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(b);
    workload_wait_cycles(&w, 50, "after the removal");

    /* 5. Stop node 1; the workers, whose lists still name it, carry on. */
    ASSERT_EQ(cluster_kill(&C, 0, SIGTERM), 0);
    workload_wait_cycles(&w, 100, "after node 1 stopped");

    /* Node 4, in none of the workers' lists, becomes the leader: they
     * follow the redirects to its address and carry on. */
    ASSERT_EQ(arrange_leader(n4, -1), n4);
    workload_wait_cycles(&w, 100, "with node 4 leading");

    workload_stop(&w);
    fprintf(stderr, "# %ld cycles\n", atomic_load(&w.cycles));
    ASSERT_EQ(atomic_load(&w.errors), 0);
    ASSERT_EQ(atomic_load(&w.violations), 0);
    ASSERT_EQ(atomic_load(&w.lost), 0);

    /* 6. Nodes 2, 3 and 4 hold the same state, and batonctl status lists
     * exactly them, without a divergence warning. */
    wait_same_state(rest, 3);
    ASSERT_EQ(cluster_ctl(NULL, &r, "-e", ep4, "-o", "json", "status", NULL), 0);
    ASSERT_EQ(count(r.out, "\"reachable\":true"), 3);
    ASSERT(strstr(r.out, "\"id\":1,") == NULL);
    ASSERT(strstr(r.err, "WARNING") == NULL);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* Node 1 is a follower; node 4 catches up through a snapshot. */
TEST(replace_follower_node_under_load)
{
    replace_node_1(false, true);
}

/* Node 1 is the leader; node 4 catches up from the log. */
TEST(replace_leader_node_under_load)
{
    replace_node_1(true, false);
}

/* ---- refusals and resumption ---------------------------------------------- */

/* Wait until `member list` shows node id as a spare (at most 15 s). */
static void wait_spare(uint32_t id)
{
    char want[48];
    int64_t deadline = now_ms() + 15000;

    snprintf(want, sizeof want, "\"id\":%u,\"role\":\"spare\"", id);
    for (;;) {
        struct ctl_result r;
        int found = cluster_ctl(&C, &r, "-o", "json", "member", "list", NULL) == 0 &&
                    strstr(r.out, want) != NULL;
        ctl_result_free(&r);
        if (found) return;
        if (now_ms() > deadline) FAIL("node %u never became a spare", id);
        sleep_ms(50);
    }
}

TEST(member_add_busy_duplicate_and_resume)
{
    struct ctl_result r;
    char spec4[64], spec5[64], bad[96];
    int n4, n5;
    pid_t bg;

    ASSERT_EQ(cluster_start(&C, 3), 0);
    ASSERT_GE(cluster_wait_leader(&C, 15000), 0);
    n4 = cluster_add_node(&C);
    n5 = cluster_add_node(&C);
    ASSERT_EQ(n4, 3);
    ASSERT_EQ(n5, 4);
    cluster_member_addrs(&C, n4, spec4, sizeof spec4);
    cluster_member_addrs(&C, n5, spec5, sizeof spec5);
    /* Node 5 is not running: its add cannot complete. */
    ASSERT_EQ(cluster_kill(&C, n5, SIGTERM), 0);

    /* While raft tries to catch node 5 up (about 5 s before it gives up),
     * every other change is refused as busy. */
    bg = cluster_ctl_spawn(&C, (const char *[]){"member", "add", "5", spec5, NULL}, NULL);
    ASSERT_GT(bg, 0);
    wait_spare(5);
    ctl_expect(70, &r, (const char *[]){"member", "add", "4", spec4, NULL});
    ASSERT(strstr(r.err, "in flight") != NULL);
    ctl_result_free(&r);
    ctl_expect(70, &r, (const char *[]){"member", "remove", "2", NULL});
    ASSERT(strstr(r.err, "in flight") != NULL);
    ctl_result_free(&r);
    /* The add of node 5 fails: it did not catch up. It stays a spare. */
    ASSERT_EQ(proc_wait(bg, 30000), 70);
    ctl_expect(0, &r, (const char *[]){"-o", "json", "member", "list", NULL});
    ASSERT(strstr(r.out, "\"id\":5,\"role\":\"spare\"") != NULL);
    ASSERT_EQ(count(r.out, "\"role\":\"voter\""), 3);
    ctl_result_free(&r);

    /* With node 5 running, the same add resumes: node 5 becomes a voter. */
    ASSERT_EQ(cluster_restart(&C, n5), 0);
    ctl_expect(0, &r, (const char *[]){"-o", "json", "member", "add", "5", spec5, NULL});
    ASSERT(strstr(r.out, "\"id\":5,\"role\":\"voter\"") != NULL);
    ctl_result_free(&r);
    ctl_expect(0, &r, (const char *[]){"-o", "json", "member", "add", "4", spec4, NULL});
    ASSERT_EQ(count(r.out, "\"role\":\"voter\""), 5);
    ctl_result_free(&r);

    /* An id already present, at the same or another address; an address
     * another member uses. The configuration does not change. */
    ctl_expect(70, &r, (const char *[]){"member", "add", "5", spec5, NULL});
    ASSERT(strstr(r.err, "already a voting member") != NULL);
    ctl_result_free(&r);
    ctl_expect(70, &r, (const char *[]){"member", "add", "2", "127.0.0.1:1/127.0.0.1:2", NULL});
    ASSERT(strstr(r.err, "already") != NULL);
    ctl_result_free(&r);
    snprintf(bad, sizeof bad, "127.0.0.1:%d/127.0.0.1:3", C.nodes[1].raft_port);
    ctl_expect(70, &r, (const char *[]){"member", "add", "6", bad, NULL});
    ASSERT(strstr(r.err, "already used") != NULL);
    ctl_result_free(&r);
    snprintf(bad, sizeof bad, "127.0.0.1:4/%s", cluster_endpoint(&C, 2));
    ctl_expect(70, &r, (const char *[]){"member", "add", "6", bad, NULL});
    ASSERT(strstr(r.err, "already used") != NULL);
    ctl_result_free(&r);
    ctl_expect(0, &r, (const char *[]){"-o", "json", "member", "list", NULL});
    ASSERT_EQ(count(r.out, "\"role\":\"voter\""), 5);
    ASSERT(strstr(r.out, "\"id\":6,") == NULL);
    ctl_result_free(&r);

    /* The five-node cluster serves locks. */
    ctl_expect(0, &r, (const char *[]){"lock", "five", "--", "true", NULL});
    ctl_result_free(&r);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* ---- MEMBER_ADD requests batonctl would never send ------------------------ */

/* Bytes read from the raw connection and not yet decoded. */
static struct buf raw_in;

/* A raw protocol connection to a node's client port. */
static int raw_connect(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timeval tv = {5, 0};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    ASSERT_GE(fd, 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    a.sin_port = htons((uint16_t)port);
    ASSERT_EQ(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

/* Send m; read frames until the reply to m->req_id, decoded into *rep
 * (its strings point into *frame, which the caller frees). */
static void raw_call(int fd, const struct msg *m, struct msg *rep, uint8_t **frame)
{
    struct buf *in = &raw_in;
    struct buf out = {0};

    ASSERT_EQ(proto_encode(&out, m), 0);
    ASSERT_EQ(send(fd, out.data, out.len, MSG_NOSIGNAL), (ssize_t)out.len);
    buf_free(&out);
    for (;;) {
        size_t flen;
        int k = proto_frame_check(in->data, in->len, &flen);
        ASSERT_GE(k, 0);
        if (k == 1) {
            *frame = malloc(flen);
            ASSERT(*frame != NULL);
            memcpy(*frame, in->data, flen);
            buf_consume(in, flen);
            ASSERT_EQ(proto_decode(*frame, flen, rep), 0);
            if (rep->req_id == m->req_id) return;
            msg_free(rep);
            free(*frame);
            continue;
        }
        ASSERT_EQ(buf_reserve(in, 4096), 0);
        ssize_t r = recv(fd, in->data + in->len, in->cap - in->len, 0);
        if (r <= 0) FAIL("the node closed the connection or did not answer");
        in->len += (size_t)r;
    }
}

/* MEMBER_ADD(id, raft, client) to the leader's connection fd must get
 * ERROR(BATON_EINVAL) (retrying while a fresh leader says NO_LEADER). */
static void expect_einval(int fd, uint32_t id, struct pstr raft, struct pstr client)
{
    static uint64_t req_id = 100;
    struct msg m = {.type = MSG_MEMBER_ADD}, rep;
    uint8_t *frame;

    m.u.member_add.id = id;
    m.u.member_add.raft_addr = raft;
    m.u.member_add.client_addr = client;
    for (int attempt = 0; attempt < 100; attempt++) {
        m.req_id = ++req_id;
        raw_call(fd, &m, &rep, &frame);
        if (rep.type != MSG_NO_LEADER) break;
        msg_free(&rep);
        free(frame);
        sleep_ms(50);
    }
    if (rep.type != MSG_ERROR || rep.u.error.code != BATON_EINVAL)
        FAIL("MEMBER_ADD %u '%.*s' '%.*s': %s %d", id, (int)raft.n, raft.p, (int)client.n,
             client.p, msg_type_name(rep.type), rep.type == MSG_ERROR ? rep.u.error.code : 0);
    ASSERT_GT(rep.u.error.message.n, 0);
    msg_free(&rep);
    free(frame);
}

static struct pstr P(const char *s)
{
    struct pstr p = {s, (uint16_t)strlen(s)};
    return p;
}

/* The leader checks what it is given itself: every bad request gets
 * ERROR(EINVAL) on a connection that stays usable, and the configuration
 * never changes. */
TEST(member_add_refuses_bad_requests)
{
    struct msg hello = {.type = MSG_HELLO, .req_id = 1}, rep;
    struct ctl_result r;
    uint8_t *frame;
    char other[32];
    int leader, fd;

    ASSERT_EQ(cluster_start(&C, 3), 0);
    leader = cluster_wait_leader(&C, 15000);
    ASSERT_GE(leader, 0);
    fd = raw_connect(C.nodes[leader].client_port);
    hello.u.hello.version = BATON_PROTO_VERSION;
    hello.u.hello.client_name = P("raw");
    raw_call(fd, &hello, &rep, &frame);
    ASSERT_EQ(rep.type, MSG_HELLO_OK);
    msg_free(&rep);
    free(frame);

    expect_einval(fd, 0, P("127.0.0.1:1"), P("127.0.0.1:2"));
    expect_einval(fd, 0x80000000u, P("127.0.0.1:1"), P("127.0.0.1:2"));
    expect_einval(fd, 4, P(""), P("127.0.0.1:2"));
    expect_einval(fd, 4, P("127.0.0.1:1"), P(""));
    expect_einval(fd, 4, P("bad_host:1"), P("127.0.0.1:2"));
    expect_einval(fd, 4, P("127.0.0.1:1"), P("127.0.0.1:2x"));
    expect_einval(fd, 4, P("127.0.0.1:1"), P("127.0.0.1:1"));
    expect_einval(fd, 4, (struct pstr){"127.0.0.1:1\0", 12}, P("127.0.0.1:2"));
    expect_einval(fd, 4, P("1.2.3.4:5 "), P("127.0.0.1:2"));
    expect_einval(fd, 4, P("1.2.3.4:99999"), P("127.0.0.1:2"));
    /* An id, or an address, already in the configuration. */
    expect_einval(fd, 2, P("127.0.0.1:1"), P("127.0.0.1:2"));
    snprintf(other, sizeof other, "127.0.0.1:%d", C.nodes[2].raft_port);
    expect_einval(fd, 4, P(other), P("127.0.0.1:2"));
    expect_einval(fd, 4, P("127.0.0.1:1"), P(cluster_endpoint(&C, 1)));
    close(fd);
    buf_free(&raw_in);

    ctl_expect(0, &r, (const char *[]){"-o", "json", "member", "list", NULL});
    ASSERT_EQ(count(r.out, "\"role\":\"voter\""), 3);
    ASSERT_EQ(count(r.out, "\"id\":"), 3);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/*
 * A node whose raft directory was lost must not start afresh: raft_bootstrap
 * on an empty directory writes term 1 and the configuration, and the node
 * would vote again in terms it had voted in. A follower is stopped and its
 * raft directory deleted: started again it refuses, exits non-zero and says
 * how to rejoin, while the other two keep serving; with the data
 * directory's mark deleted too, its store (which has applied entries)
 * still gives it away. Then the procedure its message gives brings it back:
 * member remove, delete the data directory, start with --join, member add.
 */
TEST(lost_raft_dir_refuses_to_start_and_rejoins)
{
    char path[PATH_MAX + 32], spec[64], log[16384];
    struct ctl_result r;
    baton_t *b;
    baton_lock_t *l;
    int leader, f, others[2], k = 0;

    ASSERT_EQ(cluster_start(&C, 3), 0);
    leader = cluster_wait_leader(&C, 15000);
    ASSERT_GE(leader, 0);
    f = (leader + 1) % 3;
    for (int i = 0; i < 3; i++)
        if (i != f) others[k++] = i;
    b = connect_to(cluster_endpoints(&C), "lost-dir");
    ASSERT_EQ(baton_lock_timeout(b, "before", 5000, &l), 0);
    wait_same_state((const int[]){0, 1, 2}, 3);
    snprintf(path, sizeof path, "%s/member", C.nodes[f].dir);
    ASSERT_EQ(access(path, F_OK), 0);

    ASSERT_EQ(cluster_kill(&C, f, SIGTERM), 0);
    snprintf(path, sizeof path, "%s/raft", C.nodes[f].dir);
    rm_rf(path);
    ASSERT_EQ(cluster_run_to_exit(&C, f, 15000), 1);
    ASSERT_GT(read_tail(C.nodes[f].log, log, sizeof log), 0);
    ASSERT(strstr(log, "holds no state, yet this node was a cluster member (its data "
                       "directory is marked so)") != NULL);
    ASSERT(strstr(log, "could make this node vote twice in a term") != NULL);
    ASSERT(strstr(log, "batonctl member remove") != NULL);
    ASSERT(strstr(log, "--join") != NULL);
    ASSERT(strstr(log, "batonctl member add") != NULL);

    /* Without the mark, the store's applied entries tell the same. */
    snprintf(path, sizeof path, "%s/member", C.nodes[f].dir);
    ASSERT_EQ(unlink(path), 0);
    ASSERT_EQ(cluster_run_to_exit(&C, f, 15000), 1);
    ASSERT_GT(read_tail(C.nodes[f].log, log, sizeof log), 0);
    ASSERT(strstr(log, "(its store applied entries)") != NULL);

    /* The other two serve meanwhile. */
    ASSERT_EQ(baton_unlock(l), 0);
    ASSERT_EQ(baton_lock_timeout(b, "during", 5000, &l), 0);

    /* The way back, as the message says. */
    snprintf(spec, sizeof spec, "%u", C.nodes[f].id);
    ctl_expect(0, &r, (const char *[]){"member", "remove", spec, NULL});
    ctl_result_free(&r);
    rm_rf(C.nodes[f].dir);
    C.nodes[f].joined = 1;
    ASSERT_EQ(cluster_restart(&C, f), 0);
    cluster_member_addrs(&C, f, path, sizeof path);
    ctl_expect(0, &r, (const char *[]){"member", "add", spec, path, NULL});
    ctl_result_free(&r);
    ASSERT_EQ(baton_unlock(l), 0);
    wait_same_state((const int[]){others[0], others[1], f}, 3);
    baton_close(b);
    ASSERT_EQ(cluster_stop(&C), 0);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(180);
    RUN(replace_follower_node_under_load);
    RUN(replace_leader_node_under_load);
    RUN(member_add_busy_duplicate_and_resume);
    RUN(member_add_refuses_bad_requests);
    RUN(lost_raft_dir_refuses_to_start_and_rejoins);
    return runner_done();
}
