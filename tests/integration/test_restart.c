/*
 * test_restart.c -- planned restarts (docs/operations.md, "Planned
 * restarts") with real batond processes on 127.0.0.1 (tests/lib/cluster.h
 * starts and always stops them).
 *
 *  - A rolling restart under load: worker threads, each with its own
 *    libbaton session, lock and unlock two shared locks while every node in
 *    turn gets SIGTERM and is started again, each caught up before the
 *    next. No call may fail, no lock may be lost or held twice, fences
 *    must increase, every session must be the one it was before, and the
 *    leader's SIGTERM must hand leadership over: its log says to whom and
 *    that it was handed over, and that node leads next, in the very next
 *    term.
 *  - A second SIGTERM during a hand-off that cannot finish (the followers
 *    are stopped with SIGSTOP) stops the node at once, with status 0.
 *  - sd_notify: a node started with NOTIFY_SOCKET pointing at a datagram
 *    socket of the test sends READY=1 once it knows a leader and has
 *    caught up, STATUS= lines, and STOPPING=1 on SIGTERM; a --join node
 *    sends READY=1 only once `batonctl member add` has added it.
 *
 * No timing is asserted: how long the moves take is measured by the
 * benchmark (tests/bench/run-bench.sh, W3R).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "baton/baton.h"
#include "baton/baton_defs.h"
#include "proto/msg.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/files.h"
#include "tests/lib/runner.h"
#include "tests/lib/workload.h"

static struct cluster C;

/* The load of the rolling restart: four workers on two locks, each grant
 * held 2 ms -- a light load, a few hundred cycles a second in all. */
static struct workload W = {.n_workers = 4, .n_locks = 2, .prefix = "r", .hold_ms = 2};

/* ---- the cluster's state ------------------------------------------------ */

/* The leader's index and status (at most 15 s). */
static int leader_status(struct cluster_status *st)
{
    int leader = cluster_wait_leader(&C, 15000);

    ASSERT_GE(leader, 0);
    ASSERT_EQ(cluster_node_status(&C, leader, st, 2000), 0);
    return leader;
}

/* Does node i's log contain s? (its last 64 KiB) */
static bool log_has(int i, const char *s)
{
    static char buf[65536];

    read_tail(C.nodes[i].log, buf, sizeof buf);
    return strstr(buf, s) != NULL;
}

/* SIGTERM node i (exit status 0), then start it again and wait until it
 * has caught up. If it led, check that it handed leadership over: its log
 * names the node, which leads now, in the next term. */
static void restart_node(int i)
{
    struct cluster_status before, after;
    int leader = leader_status(&before);
    char line[64];

    fprintf(stderr, "# SIGTERM to node %u (%s)\n", C.nodes[i].id,
            leader == i ? "the leader" : "a follower");
    ASSERT_EQ(cluster_kill(&C, i, SIGTERM), 0);
    if (leader == i) {
        int now = leader_status(&after);
        snprintf(line, sizeof line, "handing leadership to node %u (", C.nodes[now].id);
        if (!log_has(i, line) || !log_has(i, "leadership handed ")) {
            cluster_dump_logs(&C, 20);
            FAIL("node %u's log lacks \"%s\" or its hand-off's end", C.nodes[i].id, line);
        }
        ASSERT_UEQ(after.term, before.term + 1);
    }
    workload_wait_cycles(&W, 20, "after the stop");
    ASSERT_EQ(cluster_restart(&C, i), 0);
    ASSERT_EQ(cluster_wait_caught_up(&C, i, 20000), 0);
    workload_wait_cycles(&W, 20, "after the restart");
}

TEST(rolling_restart_under_load)
{
    struct cluster_status st;
    int first;

    ASSERT_EQ(cluster_start(&C, 3), 0);
    first = leader_status(&st);
    cluster_client_opts(&C, &W.opts);
    W.opts.client_name = "restart-worker";
    W.opts.connect_timeout_ms = 15000;
    workload_start(&W);
    workload_wait_cycles(&W, 50, "before the restarts");
    /* The followers first, then the leader, then the rest: every node
     * twice, the leader's stop among them whoever leads. */
    for (int round = 0; round < 2; round++)
        for (int k = 1; k <= 3; k++) restart_node((first + k) % 3);
    workload_wait_cycles(&W, 50, "at the end");
    workload_stop(&W);
    fprintf(stderr, "# %ld cycles\n", atomic_load(&W.cycles));
    ASSERT_EQ(atomic_load(&W.errors), 0);
    ASSERT_EQ(atomic_load(&W.violations), 0);
    ASSERT_EQ(atomic_load(&W.lost), 0);
    for (int i = 0; i < W.n_workers; i++) {
        ASSERT_GT(W.workers[i].session_before, 0);
        ASSERT_UEQ(W.workers[i].session_after, W.workers[i].session_before);
    }
    ASSERT_EQ(cluster_digests_agree(&C, 20000), 0);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* The followers never answer (SIGSTOP), so the hand-off cannot finish; a
 * second SIGTERM stops the leader at once, cleanly. */
TEST(second_sigterm_stops_during_handoff)
{
    /* A long election timeout keeps raft's own transfer timeout (one
     * election timeout) from ending the hand-off before the second
     * signal; the hand-off's own bound is longer still. */
    static const char *const args[] = {"--election-timeout", "3000", "--heartbeat", "100",
                                       "--shutdown-transfer-timeout", "60000", NULL};
    struct cluster_opts o = {.extra_args = args};
    int leader;

    ASSERT_EQ(cluster_start_opts(&C, 3, &o), 0);
    leader = cluster_wait_leader(&C, 20000);
    ASSERT_GE(leader, 0);
    /* A lock taken and given back: the leader serves (its first barrier
     * applied), so it is one that hands over. STATUS says "leader" a
     * moment before that, and with the followers stopped the barrier
     * would never commit. */
    {
        baton_opts co = {.client_name = "ready-check"};
        baton_t *b;
        baton_lock_t *l;

        cluster_client_opts(&C, &co);
        b = client_connect(&co);
        ASSERT_EQ(baton_lock(b, "ready", &l), 0);
        ASSERT_EQ(baton_unlock(l), 0);
        baton_close(b);
    }
    ASSERT_EQ(cluster_wait_leader(&C, 20000), leader);
    for (int i = 0; i < 3; i++)
        if (i != leader) ASSERT_EQ(cluster_kill(&C, i, SIGSTOP), 0);
    ASSERT_EQ(kill(C.nodes[leader].pid, SIGTERM), 0);
    for (int64_t deadline = now_ms() + 10000; !log_has(leader, "before stopping");) {
        if (now_ms() > deadline) FAIL("the leader did not start a hand-off");
        sleep_ms(10);
    }
    ASSERT_EQ(cluster_kill(&C, leader, SIGTERM), 0);
    if (!log_has(leader, "during the leadership hand-off: stopping now")) {
        cluster_dump_logs(&C, 20);
        FAIL("the second SIGTERM did not stop the hand-off");
    }
    for (int i = 0; i < 3; i++)
        if (i != leader) ASSERT_EQ(cluster_kill(&C, i, SIGCONT), 0);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* ---- sd_notify ---------------------------------------------------------- */

/* Read datagrams from fd until one contains want (at most timeout_ms);
 * everything read is appended to all (cap bytes). true if found. */
static bool recv_until(int fd, const char *want, char *all, size_t cap, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;

    while (now_ms() < deadline) {
        char msg[512];
        ssize_t n = recv(fd, msg, sizeof msg - 1, MSG_DONTWAIT);

        if (n < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK) FAIL("recv: %s", strerror(errno));
            sleep_ms(10);
            continue;
        }
        msg[n] = '\0';
        fprintf(stderr, "# notify: %s\n", msg);
        if (strlen(all) + (size_t)n + 2 < cap) {
            strcat(all, msg);
            strcat(all, "\n");
        }
        if (strstr(msg, want) != NULL) return true;
    }
    return false;
}

/* A unix datagram socket in a fresh directory (dir, cap bytes; dir/notify
 * must fit sun_path), bound for a node's sd_notify, and its NOTIFY_SOCKET
 * variable in env (envcap bytes). Returns the socket; the caller closes
 * it and removes dir. */
static int notify_listen(char *dir, size_t cap, char *env, size_t envcap)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd;

    ASSERT_EQ(tmpdir_make(dir, cap, "baton-notify"), 0);
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s/notify", dir);
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    snprintf(env, envcap, "NOTIFY_SOCKET=%s", sa.sun_path);
    return fd;
}

TEST(sd_notify_ready_status_stopping)
{
    char dir[80], env[160], all[8192] = ""; /* dir/notify fits sun_path */
    struct cluster_status st;
    const char *envv[2] = {env, NULL};
    struct cluster_opts o = {0};
    int fd, leader;

    fd = notify_listen(dir, sizeof dir, env, sizeof env);
    o.node_env[0] = envv;

    ASSERT_EQ(cluster_start_opts(&C, 3, &o), 0);
    if (!recv_until(fd, "READY=1", all, sizeof all, 20000)) {
        cluster_dump_logs(&C, 20);
        FAIL("no READY=1 from node 1; it sent:\n%s", all);
    }
    /* Once READY=1 has come, node 1 knows the leader and has caught up. */
    leader = cluster_wait_leader(&C, 15000);
    ASSERT_GE(leader, 0);
    ASSERT_EQ(cluster_node_status(&C, 0, &st, 2000), 0);
    ASSERT_NE(st.leader_id, 0);
    ASSERT_GT(st.applied_index, 0);
    ASSERT(strstr(all, "STATUS=") != NULL);
    /* Its role in a STATUS= line: leader, or follower of the leader. */
    const char *role = leader == 0 ? "STATUS=leader, term" : "STATUS=follower of node";
    if (strstr(all, role) == NULL && !recv_until(fd, role, all, sizeof all, 5000))
        FAIL("no STATUS line with node 1's role; it sent:\n%s", all);
    ASSERT_EQ(cluster_kill(&C, 0, SIGTERM), 0);
    if (!recv_until(fd, "STOPPING=1", all, sizeof all, 5000))
        FAIL("no STOPPING=1 from node 1; it sent:\n%s", all);
    ASSERT_EQ(cluster_stop(&C), 0);
    close(fd);
    rm_rf(dir);
}

/* A --join node says READY=1 only once it has been added (and caught up). */
TEST(sd_notify_join_node_ready_once_added)
{
    char dir[80], env[160], all[8192] = "", spec[16], addrs[64];
    const char *envv[2] = {env, NULL};
    struct cluster_opts o = {0};
    struct ctl_result r;
    int fd, j;

    fd = notify_listen(dir, sizeof dir, env, sizeof env);
    o.node_env[3] = envv; /* the fourth node, added below */

    ASSERT_EQ(cluster_start_opts(&C, 3, &o), 0);
    ASSERT_GE(cluster_wait_leader(&C, 15000), 0);
    j = cluster_add_node(&C);
    ASSERT_EQ(j, 3);
    /* Running, but no member yet: not ready. */
    if (recv_until(fd, "READY=1", all, sizeof all, 1000))
        FAIL("READY=1 from a --join node that was not added; it sent:\n%s", all);
    snprintf(spec, sizeof spec, "%u", C.nodes[j].id);
    cluster_member_addrs(&C, j, addrs, sizeof addrs);
    ASSERT_EQ(cluster_ctl(&C, &r, "member", "add", spec, addrs, NULL), 0);
    ctl_result_free(&r);
    if (!recv_until(fd, "READY=1", all, sizeof all, 20000)) {
        cluster_dump_logs(&C, 20);
        FAIL("no READY=1 from the added node; it sent:\n%s", all);
    }
    ASSERT_EQ(cluster_stop(&C), 0);
    close(fd);
    rm_rf(dir);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(240);
    RUN(rolling_restart_under_load);
    RUN(second_sigterm_stops_during_handoff);
    RUN(sd_notify_ready_status_stopping);
    RUN(sd_notify_join_node_ready_once_added);
    return runner_done();
}
