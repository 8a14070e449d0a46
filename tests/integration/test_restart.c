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
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "client/baton.h"
#include "client/baton_defs.h"
#include "proto/msg.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/files.h"
#include "tests/lib/runner.h"

static struct cluster C;

/* ---- workers: lock and unlock until told to stop ------------------------ */

#define N_WORKERS 4
#define N_LOCKS 2

static atomic_int w_stop, w_ready;
static atomic_int w_errors, w_violations, w_lost;
static atomic_int w_holder[N_LOCKS];
static atomic_ullong w_last_fence[N_LOCKS];
static atomic_long w_cycles;
static uint64_t w_session_before[N_WORKERS], w_session_after[N_WORKERS];

static void on_lost(baton_t *b, const char *lock, uint64_t fence, int why, void *data)
{
    (void)b;
    (void)data;
    fprintf(stderr, "# lost %s (fence %llu): %s\n", lock, (unsigned long long)fence,
            baton_err_name(why));
    atomic_fetch_add(&w_lost, 1);
}

/* One cycle: lock, check that nobody else holds it and that its fence is
 * above the last one seen for it, unlock. */
static void cycle(baton_t *b, int k, const char *name)
{
    baton_lock_t *l;
    uint64_t f;
    int rv = baton_lock(b, name, &l);

    if (rv != 0) {
        fprintf(stderr, "# baton_lock(%s): %s (%s)\n", name, baton_err_name(rv), baton_errmsg(b));
        atomic_fetch_add(&w_errors, 1);
        sleep_ms(20);
        return;
    }
    if (atomic_exchange(&w_holder[k], 1) != 0) atomic_fetch_add(&w_violations, 1);
    f = baton_lock_fence(l);
    if (f <= atomic_load(&w_last_fence[k])) {
        fprintf(stderr, "# %s: fence %llu after %llu\n", name, (unsigned long long)f,
                (unsigned long long)atomic_load(&w_last_fence[k]));
        atomic_fetch_add(&w_violations, 1);
    }
    atomic_store(&w_last_fence[k], f);
    sleep_ms(2); /* a light load: a few hundred cycles a second in all */
    atomic_store(&w_holder[k], 0);
    rv = baton_unlock(l);
    if (rv != 0) {
        fprintf(stderr, "# baton_unlock(%s): %s (%s)\n", name, baton_err_name(rv),
                baton_errmsg(b));
        atomic_fetch_add(&w_errors, 1);
        return;
    }
    atomic_fetch_add(&w_cycles, 1);
}

static void *worker(void *arg)
{
    int i = (int)(intptr_t)arg, k = i % N_LOCKS;
    baton_opts o = {.client_name = "restart-worker", .connect_timeout_ms = 15000};
    baton_t *b = NULL;
    char name[16];
    int rv;

    cluster_client_opts(&C, &o);
    rv = baton_connect(&o, &b);
    if (rv != 0) FAIL("baton_connect: %s: %s", baton_err_name(rv), baton_connect_errmsg());
    w_session_before[i] = baton_session_id(b);
    atomic_fetch_add(&w_ready, 1);
    snprintf(name, sizeof name, "r%d", k);
    baton_on_lost(b, on_lost, NULL);
    while (!atomic_load(&w_stop)) cycle(b, k, name);
    w_session_after[i] = baton_session_id(b);
    baton_close(b);
    return NULL;
}

/* Wait until the workers have done n more cycles (at most 30 s). */
static void wait_cycles(long n, const char *when)
{
    long target = atomic_load(&w_cycles) + n;
    int64_t deadline = now_ms() + 30000;

    while (atomic_load(&w_cycles) < target) {
        if (now_ms() > deadline)
            FAIL("%s: the workers did %ld cycles, not %ld", when, atomic_load(&w_cycles), target);
        sleep_ms(10);
    }
}

/* ---- the cluster's state ------------------------------------------------ */

/* The leader's index and status (at most 15 s). */
static int leader_status(struct cluster_status *st)
{
    int leader = cluster_wait_leader(&C, 15000);

    ASSERT_GE(leader, 0);
    ASSERT_EQ(cluster_node_status(&C, leader, st, 2000), 0);
    return leader;
}

/* Wait (at most 20 s) until node i has applied what the leader had
 * applied when this was called: it is back and caught up. */
static void wait_caught_up(int i)
{
    struct cluster_status lst, st = {0};
    int64_t deadline = now_ms() + 20000;

    leader_status(&lst);
    while (cluster_node_status(&C, i, &st, 1000) != 0 || st.applied_index < lst.applied_index) {
        if (now_ms() > deadline)
            FAIL("node %u applied %llu, never %llu", C.nodes[i].id,
                 (unsigned long long)st.applied_index, (unsigned long long)lst.applied_index);
        sleep_ms(20);
    }
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
    wait_cycles(20, "after the stop");
    ASSERT_EQ(cluster_restart(&C, i), 0);
    wait_caught_up(i);
    wait_cycles(20, "after the restart");
}

TEST(rolling_restart_under_load)
{
    pthread_t t[N_WORKERS];
    struct cluster_status st;
    int first;

    ASSERT_EQ(cluster_start(&C, 3), 0);
    first = leader_status(&st);
    for (int i = 0; i < N_WORKERS; i++) pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    while (atomic_load(&w_ready) < N_WORKERS) sleep_ms(10);
    wait_cycles(50, "before the restarts");
    /* The followers first, then the leader, then the rest: every node
     * twice, the leader's stop among them whoever leads. */
    for (int round = 0; round < 2; round++)
        for (int k = 1; k <= 3; k++) restart_node((first + k) % 3);
    wait_cycles(50, "at the end");
    atomic_store(&w_stop, 1);
    for (int i = 0; i < N_WORKERS; i++) pthread_join(t[i], NULL);
    fprintf(stderr, "# %ld cycles\n", atomic_load(&w_cycles));
    ASSERT_EQ(atomic_load(&w_errors), 0);
    ASSERT_EQ(atomic_load(&w_violations), 0);
    ASSERT_EQ(atomic_load(&w_lost), 0);
    for (int i = 0; i < N_WORKERS; i++) {
        ASSERT_GT(w_session_before[i], 0);
        ASSERT_UEQ(w_session_after[i], w_session_before[i]);
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

TEST(sd_notify_ready_status_stopping)
{
    char dir[80], env[160], all[8192] = ""; /* dir/notify fits sun_path */
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct cluster_status st;
    const char *envv[2] = {env, NULL};
    struct cluster_opts o = {0};
    int fd, leader;

    ASSERT_EQ(tmpdir_make(dir, sizeof dir, "baton-notify"), 0);
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s/notify", dir);
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    snprintf(env, sizeof env, "NOTIFY_SOCKET=%s", sa.sun_path);
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
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    const char *envv[2] = {env, NULL};
    struct cluster_opts o = {0};
    struct ctl_result r;
    int fd, j;

    ASSERT_EQ(tmpdir_make(dir, sizeof dir, "baton-notify"), 0);
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s/notify", dir);
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    snprintf(env, sizeof env, "NOTIFY_SOCKET=%s", sa.sun_path);
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
