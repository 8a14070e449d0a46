/*
 * test_batonctl.c -- batonctl against a real three-node cluster: status,
 * locks, lock-info, lock (environment, exit codes, busy/timeout, signals),
 * the operator's commands (release --force, expire, transfer-leader,
 * sessions, member list / remove), usage errors and JSON output.
 */
#include <dirent.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

#include "proto/msg.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/files.h"
#include "tests/lib/jsonget.h"
#include "tests/lib/proc.h"
#include "tests/lib/runner.h"

/* Count occurrences of needle in hay. */
static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

static void start3(struct cluster *c)
{
    ASSERT_EQ(cluster_start(c, 3), 0);
    ASSERT_GE(cluster_wait_leader(c, 15000), 0);
}

/* Poll lock-info until its JSON contains `want` (or 10 s pass). */
static void wait_info(struct cluster *c, const char *name, const char *want)
{
    for (int i = 0; i < 200; i++) {
        struct ctl_result r;
        int found;
        cluster_ctl(c, &r, "lock-info", name, "-o", "json", NULL);
        found = r.status == 0 && strstr(r.out, want) != NULL;
        ctl_result_free(&r);
        if (found) return;
        sleep_ms(50);
    }
    FAIL("lock-info %s never showed %s", name, want);
}

TEST(status_all_up)
{
    struct cluster c;
    struct ctl_result r;

    start3(&c);
    ASSERT_EQ(cluster_ctl(&c, &r, "status", "-o", "json", NULL), 0);
    ASSERT_EQ(count(r.out, "\"reachable\":true"), 3);
    ASSERT_EQ(count(r.out, "\"role\":\"leader\""), 1);
    ASSERT(strncmp(r.out, "{\"leader_id\":", 13) == 0);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "status", NULL), 0);
    ASSERT(strstr(r.out, "REACHABLE") != NULL);
    ASSERT_EQ(count(r.out, "yes"), 3);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_stop(&c), 0);
}

TEST(status_with_nodes_down)
{
    struct cluster c;
    struct ctl_result r;
    int leader, other;

    start3(&c);
    leader = cluster_wait_leader(&c, 5000);
    other = (leader + 1) % 3;
    ASSERT_EQ(cluster_kill(&c, other, SIGKILL), 128 + SIGKILL);
    ASSERT_EQ(cluster_ctl(&c, &r, "status", "-o", "json", NULL), 0);
    ASSERT_EQ(count(r.out, "\"reachable\":true"), 2);
    ASSERT_EQ(count(r.out, "\"reachable\":false"), 1);
    ctl_result_free(&r);

    /* Two of three down: no leader, exit 69, still one row per node. */
    ASSERT_EQ(cluster_kill(&c, leader, SIGKILL), 128 + SIGKILL);
    ASSERT_EQ(cluster_ctl(&c, &r, "--timeout", "500", "status", NULL), 69);
    ASSERT(strstr(r.out, "REACHABLE") != NULL);
    ASSERT_EQ(count(r.out, " no\n"), 2);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_stop(&c), 0);
}

TEST(nothing_reachable)
{
    struct ctl_result r;
    const char *args[] = {"-e", "127.0.0.1:1", "--timeout", "300", "status", "-o", "json", NULL};
    const char *args2[] = {"-e", "127.0.0.1:1", "--timeout", "300", "locks", NULL};

    ASSERT_EQ(cluster_ctlv(NULL, 10000, &r, args), 69);
    ASSERT(strstr(r.out, "\"reachable\":false") != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctlv(NULL, 10000, &r, args2), 69);
    ctl_result_free(&r);
}

TEST(usage_errors)
{
    struct ctl_result r;
    const char *bad[][5] = {
        {"--bogus", "status", NULL},
        {"frobnicate", NULL},
        {"status", "extra", NULL},
        {"-o", "yaml", "status", NULL},
        {"lock-info", NULL},
        {"lock", "x", NULL},
        {"lock", "x", "--timeout", NULL},
        {"release", "x", NULL},
        {"release", "--force", NULL},
        {"expire", NULL},
        {"expire", "abc", NULL},
        {"expire", "0", NULL},
        {"transfer-leader", "x", NULL},
        {"sessions", "--limit", "0", NULL},
        {"check", "extra", NULL},
        {"-e", "nocolon", "locks", NULL},
        {"--cert", "c.pem", "lock-info", "x"},
        {"-e", "nocolon", "expire", "7"},
        {"--cert", "c.pem", "transfer-leader", NULL},
        {NULL},
    };
    const char *help[] = {"--help", NULL};
    const char *help2[] = {"lock", "--help", NULL};
    const char *help3[] = {"check", "--help", NULL};

    for (int i = 0; bad[i][0] != NULL; i++) {
        ASSERT_EQ(cluster_ctlv(NULL, 10000, &r, bad[i]), 64);
        ASSERT(strstr(r.err, "--help") != NULL);
        ctl_result_free(&r);
    }
    ASSERT_EQ(cluster_ctlv(NULL, 10000, &r, help), 0);
    ASSERT(strstr(r.out, "Exit status") != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctlv(NULL, 10000, &r, help2), 0);
    ASSERT(strstr(r.out, "BATON_FENCE") != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctlv(NULL, 10000, &r, help3), 0);
    ASSERT(strstr(r.out, "DIVERGED") != NULL);
    ctl_result_free(&r);
}

TEST(lock_runs_command)
{
    struct cluster c;
    struct ctl_result r;
    unsigned long long f1 = 0, f2 = 0;

    start3(&c);
    ASSERT_EQ(cluster_ctl(&c, &r, "lock", "job", "--",
                          "sh", "-c", "echo \"$BATON_LOCK $BATON_FENCE\"; exit 3", NULL), 3);
    ASSERT_EQ(sscanf(r.out, "job %llu", &f1), 1);
    ctl_result_free(&r);
    /* Without "--", and the fence grows. */
    ASSERT_EQ(cluster_ctl(&c, &r, "lock", "job", "sh", "-c", "echo $BATON_FENCE", NULL), 0);
    ASSERT_EQ(sscanf(r.out, "%llu", &f2), 1);
    ASSERT(f2 > f1);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "lock", "job", "--", "sh", "-c", "kill -TERM $$", NULL),
              128 + SIGTERM);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "lock", "job", "--", "/nonexistent/cmd", NULL), 127);
    ctl_result_free(&r);
    /* The lock is free again after all that. */
    ASSERT_EQ(cluster_ctl(&c, &r, "lock-info", "job", "-o", "json", NULL), 0);
    ASSERT(strstr(r.out, "\"held\":false") != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_stop(&c), 0);
}

TEST(lock_busy_and_queue)
{
    struct cluster c;
    struct ctl_result r;
    const char *hold[] = {"lock", "busy", "--", "sleep", "3", NULL};
    const char *wait[] = {"lock", "busy", "--", "true", NULL};
    pid_t holder, waiter;

    start3(&c);
    holder = cluster_ctl_spawn(&c, hold, NULL);
    ASSERT_GT(holder, 0);
    wait_info(&c, "busy", "\"held\":true");

    ASSERT_EQ(cluster_ctl(&c, &r, "lock", "busy", "--timeout", "0", "--", "true", NULL), 75);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "lock", "busy", "--timeout", "200", "--", "true", NULL), 75);
    ctl_result_free(&r);

    waiter = cluster_ctl_spawn(&c, wait, NULL);
    ASSERT_GT(waiter, 0);
    wait_info(&c, "busy", "\"total_waiters\":1");
    ASSERT_EQ(cluster_ctl(&c, &r, "locks", "bu", "-o", "json", NULL), 0);
    ASSERT(strstr(r.out, "\"name\":\"busy\",\"held\":true") != NULL);
    ASSERT(strstr(r.out, "\"waiters\":1") != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "lock-info", "busy", NULL), 0);
    ASSERT(strstr(r.out, "forever") != NULL);
    ctl_result_free(&r);

    ASSERT_EQ(proc_wait(holder, 10000), 0);
    ASSERT_EQ(proc_wait(waiter, 10000), 0);
    wait_info(&c, "busy", "\"held\":false");
    ASSERT_EQ(cluster_stop(&c), 0);
}

TEST(lock_signals)
{
    struct cluster c;
    const char *trap[] = {"lock", "sig", "--", "sh", "-c",
                          "trap 'exit 7' TERM; sleep 10 & wait", NULL};
    const char *wait[] = {"lock", "sig", "--", "true", NULL};
    pid_t holder, waiter;

    start3(&c);
    /* SIGTERM to batonctl reaches CMD; batonctl exits with CMD's status. */
    holder = cluster_ctl_spawn(&c, trap, NULL);
    wait_info(&c, "sig", "\"held\":true");
    /* SIGINT ends a wait for the lock: exit 130, and the waiter leaves the queue. */
    waiter = cluster_ctl_spawn(&c, wait, NULL);
    wait_info(&c, "sig", "\"total_waiters\":1");
    kill(waiter, SIGINT);
    ASSERT_EQ(proc_wait(waiter, 10000), 130);
    wait_info(&c, "sig", "\"total_waiters\":0");

    kill(holder, SIGTERM);
    ASSERT_EQ(proc_wait(holder, 10000), 7);
    wait_info(&c, "sig", "\"held\":false");
    ASSERT_EQ(cluster_stop(&c), 0);
}

TEST(json_escaping_of_names)
{
    struct cluster c;
    struct ctl_result r;
    const char *hold[] = {"lock", "q\"uo\\te\tname\xff", "--", "sleep", "2", NULL};
    pid_t holder;

    start3(&c);
    holder = cluster_ctl_spawn(&c, hold, NULL);
    for (int i = 0; i < 200; i++) {
        cluster_ctl(&c, &r, "locks", "q", "-o", "json", NULL);
        if (strstr(r.out, "\"held\":true") != NULL) break;
        ctl_result_free(&r);
        sleep_ms(50);
    }
    ASSERT(strstr(r.out, "\"name\":\"q\\\"uo\\\\te\\tname\\ufffd\"") != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "locks", NULL), 0);
    ASSERT(strstr(r.out, "q\"uo\\te\\x09name\\xff") != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(proc_wait(holder, 10000), 0);
    ASSERT_EQ(cluster_stop(&c), 0);
}

TEST(lock_survives_leader_kill)
{
    struct cluster c;
    struct ctl_result r;
    int leader;

    start3(&c);
    leader = cluster_wait_leader(&c, 5000);
    ASSERT_EQ(cluster_kill(&c, leader, SIGKILL), 128 + SIGKILL);
    ASSERT_EQ(cluster_ctl(&c, &r, "lock", "after", "--", "true", NULL), 0);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "locks", NULL), 0);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_restart(&c, leader), 0);
    ASSERT_GE(cluster_wait_leader(&c, 10000), 0);
    ASSERT_EQ(cluster_stop(&c), 0);
}

/* Read one line (without its newline) from fd into buf within timeout_ms;
 * FAIL on timeout or end of file. Reads a byte at a time, so nothing past
 * the line is consumed. */
static void read_line(int fd, char *buf, size_t cap, int timeout_ms)
{
    size_t n = 0;

    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        char ch;
        ASSERT_LT(n + 1, cap);
        if (poll(&p, 1, timeout_ms) <= 0) FAIL("no line within %d ms (have '%.*s')", timeout_ms,
                                               (int)n, buf);
        if (read(fd, &ch, 1) != 1) FAIL("watch output ended (have '%.*s')", (int)n, buf);
        if (ch == '\n') break;
        buf[n++] = ch;
    }
    buf[n] = 0;
}

/* A watch prints the state at once and a synced event, then one line per
 * change, in order: held, queued, handed on; with --count 3 it then exits
 * 0. Without --count it runs until SIGTERM, and exits 0. */
TEST(watch_follows_changes)
{
    struct cluster c;
    const char *watch[] = {"watch", "wl", "-o", "json", "--count", "3", NULL};
    const char *watch_all[] = {"watch", "wl", "-o", "json", NULL};
    char dir[PATH_MAX], stop[PATH_MAX + 8], cmd[2 * PATH_MAX + 64];
    /* The holder holds until the test says so: the waiter is seen queued
     * however slow the machine. */
    const char *hold[] = {"lock", "wl", "--", "sh", "-c", cmd, NULL};
    const char *wait[] = {"lock", "wl", "--", "true", NULL};
    char line[5][4096];
    pid_t watcher, holder, waiter;
    FILE *f;
    int fd = -1;

    ASSERT_EQ(tmpdir_make(dir, sizeof dir, "watch"), 0);
    snprintf(stop, sizeof stop, "%s/stop", dir);
    snprintf(cmd, sizeof cmd, "while [ ! -e %s ]; do sleep 0.05; done", stop);
    start3(&c);
    watcher = cluster_ctl_spawn(&c, watch, &fd);
    ASSERT_GT(watcher, 0);
    read_line(fd, line[0], sizeof line[0], 10000);
    ASSERT(strstr(line[0], "\"name\":\"wl\",\"revision\":") != NULL);
    ASSERT(strstr(line[0], "\"held\":false") != NULL);
    ASSERT(strstr(line[0], "\"kind\":\"state\"") != NULL);
    ASSERT_EQ(json_i64(line[0], "seq", 0), 1);
    read_line(fd, line[1], sizeof line[1], 10000);
    ASSERT(strstr(line[1], "\"kind\":\"synced\"") != NULL);
    ASSERT(strstr(line[1], "\"restarted\":false") != NULL);
    ASSERT_EQ(json_i64(line[1], "seq", 0), 2);

    holder = cluster_ctl_spawn(&c, hold, NULL);
    ASSERT_GT(holder, 0);
    read_line(fd, line[2], sizeof line[2], 10000);
    ASSERT(strstr(line[2], "\"held\":true") != NULL);
    ASSERT(strstr(line[2], "\"kind\":\"change\"") != NULL);
    ASSERT_EQ(json_i64(line[2], "total_waiters", -1), 0);
    ASSERT_EQ(json_i64(line[2], "seq", 0), 3);
    ASSERT_GT(json_i64(line[2], "revision", 0), json_i64(line[1], "revision", 0));

    waiter = cluster_ctl_spawn(&c, wait, NULL);
    ASSERT_GT(waiter, 0);
    read_line(fd, line[3], sizeof line[3], 10000);
    ASSERT(strstr(line[3], "\"held\":true") != NULL);
    ASSERT_EQ(json_i64(line[3], "total_waiters", -1), 1);
    ASSERT_EQ(json_i64(line[3], "holder_session", 0), json_i64(line[2], "holder_session", 0));
    ASSERT_EQ(json_i64(line[3], "seq", 0), 4);

    /* The holder's release hands the lock to the waiter: one change. */
    f = fopen(stop, "w");
    ASSERT(f != NULL);
    fclose(f);
    read_line(fd, line[4], sizeof line[4], 10000);
    ASSERT(strstr(line[4], "\"held\":true") != NULL);
    ASSERT_EQ(json_i64(line[4], "total_waiters", -1), 0);
    ASSERT_NE(json_i64(line[4], "holder_session", 0), json_i64(line[2], "holder_session", 0));
    ASSERT_GT(json_i64(line[4], "fence", 0), json_i64(line[2], "fence", 0));
    ASSERT_EQ(json_i64(line[4], "seq", 0), 5);

    ASSERT_EQ(proc_wait(watcher, 10000), 0);
    ASSERT_EQ(proc_wait(holder, 10000), 0);
    ASSERT_EQ(proc_wait(waiter, 10000), 0);
    close(fd);

    watcher = cluster_ctl_spawn(&c, watch_all, &fd);
    ASSERT_GT(watcher, 0);
    read_line(fd, line[0], sizeof line[0], 10000);
    ASSERT_EQ(json_i64(line[0], "seq", 0), 1);
    kill(watcher, SIGTERM);
    ASSERT_EQ(proc_wait(watcher, 10000), 0);
    close(fd);
    rm_rf(dir);
    ASSERT_EQ(cluster_stop(&c), 0);
}

/* A watch resumes at the new leader after the leader dies: a synced event
 * (restarted or not: with restarted, the lock's state comes again before
 * it), numbered on from the events before, then the changes made there. */
TEST(watch_survives_leader_kill)
{
    struct cluster c;
    struct ctl_result r;
    const char *watch[] = {"watch", "wk", "-o", "json", NULL};
    char line[4096];
    pid_t watcher;
    int fd = -1, leader;
    int64_t seq;

    start3(&c);
    leader = cluster_wait_leader(&c, 5000);
    watcher = cluster_ctl_spawn(&c, watch, &fd);
    ASSERT_GT(watcher, 0);
    read_line(fd, line, sizeof line, 10000);
    ASSERT_EQ(json_i64(line, "seq", 0), 1);
    read_line(fd, line, sizeof line, 10000);
    ASSERT(strstr(line, "\"kind\":\"synced\"") != NULL);
    ASSERT_EQ(cluster_kill(&c, leader, SIGKILL), 128 + SIGKILL);
    /* The resumption: any state events, then synced. */
    for (seq = 3;; seq++) {
        read_line(fd, line, sizeof line, 20000);
        ASSERT_EQ(json_i64(line, "seq", 0), seq);
        if (strstr(line, "\"kind\":\"synced\"") != NULL) break;
        ASSERT(strstr(line, "\"kind\":\"state\"") != NULL);
        ASSERT(strstr(line, "\"held\":false") != NULL);
    }
    ASSERT_EQ(cluster_ctl(&c, &r, "lock", "wk", "--", "true", NULL), 0);
    ctl_result_free(&r);
    read_line(fd, line, sizeof line, 10000);
    ASSERT(strstr(line, "\"held\":true") != NULL);
    ASSERT(strstr(line, "\"kind\":\"change\"") != NULL);
    ASSERT_EQ(json_i64(line, "seq", 0), seq + 1);
    read_line(fd, line, sizeof line, 10000);
    ASSERT(strstr(line, "\"held\":false") != NULL);
    ASSERT_EQ(json_i64(line, "seq", 0), seq + 2);
    kill(watcher, SIGTERM);
    ASSERT_EQ(proc_wait(watcher, 10000), 0);
    close(fd);
    ASSERT_EQ(cluster_restart(&c, leader), 0);
    ASSERT_EQ(cluster_stop(&c), 0);
}

/* How many snapshot-* files (not their .meta companions) dir holds. */
static int count_snapshots(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    if (d == NULL) return 0;
    while ((e = readdir(d)) != NULL)
        n += strncmp(e->d_name, "snapshot-", 9) == 0 && strstr(e->d_name, ".meta") == NULL;
    closedir(d);
    return n;
}

/* After some lock traffic, `batonctl snapshot` makes the leader write a
 * snapshot, far below the configured threshold. */
TEST(snapshot_now)
{
    struct cluster c;
    struct ctl_result r;
    char raft_dir[PATH_MAX + 8];
    struct cluster_status st;
    long long index = 0;
    int leader, found = 0;

    start3(&c);
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(cluster_ctl(&c, &r, "lock", "snap", "--", "true", NULL), 0);
        ctl_result_free(&r);
    }
    leader = cluster_wait_leader(&c, 5000);
    ASSERT_GE(leader, 0);
    snprintf(raft_dir, sizeof raft_dir, "%s/raft/", c.nodes[leader].dir);
    ASSERT_EQ(count_snapshots(raft_dir), 0);

    ASSERT_EQ(cluster_ctl(&c, &r, "snapshot", "-o", "json", NULL), 0);
    index = json_i64(r.out, "index", 0);
    ctl_result_free(&r);
    ASSERT_GT(index, 0);
    /* The snapshot's index is one the leader has applied. */
    ASSERT_EQ(cluster_node_status(&c, leader, &st, 5000), 0);
    ASSERT_EQ(st.role, ROLE_LEADER);
    ASSERT_GE((long long)st.applied_index, index);

    /* The files are written in the background. */
    for (int i = 0; i < 100 && !(found = count_snapshots(raft_dir) > 0); i++) sleep_ms(50);
    ASSERT(found);

    ASSERT_EQ(cluster_ctl(&c, &r, "snapshot", "extra", NULL), 64);
    ctl_result_free(&r);
    /* Another one later works too and is at a higher index. */
    ASSERT_EQ(cluster_ctl(&c, &r, "snapshot", "-o", "json", NULL), 0);
    ASSERT_GT(json_i64(r.out, "index", 0), index);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_stop(&c), 0);
}

/* The session holding lock `name`, from lock-info (0 if none). */
static uint64_t holder_of(struct cluster *c, const char *name)
{
    struct ctl_result r;
    uint64_t s;

    ASSERT_EQ(cluster_ctl(c, &r, "lock-info", name, "-o", "json", NULL), 0);
    s = (uint64_t)json_i64(r.out, "holder_session", 0);
    ctl_result_free(&r);
    return s;
}

/*
 * release --force: a lock not held, or not with the fence given, is left
 * alone (exit 70, saying the fence there is); with --now the waiter gets
 * the lock at once, and the same request re-sent (the same --fence) does
 * not take it from the waiter; without --now the lock goes to no one for
 * the holder's lease (its ttl plus lock-delay), and a re-send meanwhile
 * finds it not held. Every holder forced away is told (its batonctl lock
 * exits 76).
 */
TEST(force_release)
{
    struct cluster c;
    struct ctl_result r;
    const char *hold[] = {"lock", "fr", "--", "sleep", "20", NULL};
    const char *wait[] = {"lock", "fr", "--ttl", "3000", "--", "sleep", "20", NULL};
    char want[256], fence_arg[32], wrong_arg[32];
    unsigned long long s1, f1, s2, f2;
    pid_t holder, waiter;

    start3(&c);
    /* Not held: exit 70 with a message. */
    ASSERT_EQ(cluster_ctl(&c, &r, "release", "--force", "fr", NULL), 70);
    ASSERT(strstr(r.err, "not held") != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "release", "--force", "fr", "--fence", "0", NULL), 64);
    ctl_result_free(&r);

    holder = cluster_ctl_spawn(&c, hold, NULL);
    ASSERT_GT(holder, 0);
    wait_info(&c, "fr", "\"held\":true");
    waiter = cluster_ctl_spawn(&c, wait, NULL);
    ASSERT_GT(waiter, 0);
    wait_info(&c, "fr", "\"total_waiters\":1");
    s1 = holder_of(&c, "fr");
    f1 = (unsigned long long)cluster_lock_i64(&c, "fr", "fence");
    snprintf(fence_arg, sizeof fence_arg, "%llu", f1);
    snprintf(wrong_arg, sizeof wrong_arg, "%llu", f1 + 1000);

    /* Another fence: nothing happens, and it says which fence is there. */
    ASSERT_EQ(cluster_ctl(&c, &r, "release", "--force", "fr", "--fence", wrong_arg, "--now",
                          NULL), 70);
    snprintf(want, sizeof want, "is held with fence %llu, not %llu", f1, f1 + 1000);
    ASSERT(strstr(r.err, want) != NULL);
    ctl_result_free(&r);
    ASSERT_UEQ(holder_of(&c, "fr"), s1);

    /* The holder loses it (its batonctl stops CMD and exits 76), the
     * waiter gets it at once (--now) with a higher fence. */
    ASSERT_EQ(cluster_ctl(&c, &r, "release", "--force", "fr", "--fence", fence_arg, "--now",
                          NULL), 0);
    ASSERT_EQ(sscanf(r.out, "released fr: session %llu lost it (fence %llu); granted to session "
                            "%llu (fence %llu)",
                     &s1, &f1, &s2, &f2),
              4);
    ASSERT(s2 != s1);
    ASSERT(f2 > f1);
    ctl_result_free(&r);
    ASSERT_EQ(proc_wait(holder, 10000), 76);
    ASSERT_UEQ(holder_of(&c, "fr"), s2);
    /* The same request again, as a re-send: the new holder keeps it. */
    ASSERT_EQ(cluster_ctl(&c, &r, "release", "--force", "fr", "--fence", fence_arg, "--now",
                          NULL), 70);
    snprintf(want, sizeof want, "is held with fence %llu, not %llu", f2, f1);
    ASSERT(strstr(r.err, want) != NULL);
    ctl_result_free(&r);
    ASSERT_UEQ(holder_of(&c, "fr"), s2);

    /* By default, in JSON: nobody gets the lock for the holder's lease
     * (its session's ttl, 3000 ms, no lock-delay), and a re-send finds it
     * not held. */
    ASSERT_EQ(cluster_ctl(&c, &r, "release", "--force", "fr", "-o", "json", NULL), 0);
    snprintf(want, sizeof want, "{\"name\":\"fr\",\"lost_session\":%llu,\"lost_fence\":%llu,"
             "\"granted\":false,\"new_session\":0,\"new_fence\":0,\"delay_ms\":3000}\n", s2, f2);
    ASSERT_STREQ(r.out, want);
    ctl_result_free(&r);
    ASSERT_EQ(proc_wait(waiter, 10000), 76);
    wait_info(&c, "fr", "\"delayed\":true");
    /* lock-info does not blame an expiry alone for this lock-delay. */
    ASSERT_EQ(cluster_ctl(&c, &r, "lock-info", "fr", NULL), 0);
    ASSERT(strstr(r.out, "release was forced") != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "release", "--force", "fr", NULL), 70);
    ASSERT(strstr(r.err, "not held") != NULL);
    ctl_result_free(&r);
    wait_info(&c, "fr", "\"delayed\":false");
    ASSERT_EQ(cluster_stop(&c), 0);
}

TEST(sessions_and_expire)
{
    struct cluster c;
    struct ctl_result r;
    const char *hold[] = {"lock", "ex", "--", "sleep", "20", NULL};
    char id[32];
    uint64_t s1;
    pid_t holder;

    start3(&c);
    ASSERT_EQ(cluster_ctl(&c, &r, "sessions", NULL), 0);
    ASSERT(strstr(r.out, "(no sessions)") != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "expire", "999", NULL), 70);
    ASSERT(strstr(r.err, "no session 999") != NULL);
    ctl_result_free(&r);

    holder = cluster_ctl_spawn(&c, hold, NULL);
    ASSERT_GT(holder, 0);
    wait_info(&c, "ex", "\"held\":true");
    s1 = holder_of(&c, "ex");
    ASSERT_EQ(cluster_ctl(&c, &r, "sessions", "-o", "json", NULL), 0);
    ASSERT_UEQ((uint64_t)json_i64(r.out, "id", 0), s1);
    ASSERT_EQ(json_i64(r.out, "holds", -1), 1);
    ASSERT_EQ(json_i64(r.out, "waits", -1), 0);
    ASSERT(json_i64(r.out, "ttl_ms", 0) > 0);
    ASSERT(json_i64(r.out, "created_index", 0) > 0);
    ASSERT(strstr(r.out, "\"more\":false}") != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "sessions", NULL), 0);
    ASSERT(strstr(r.out, "SESSION") != NULL && strstr(r.out, "HOLDS") != NULL);
    ctl_result_free(&r);
    snprintf(id, sizeof id, "%llu", (unsigned long long)s1);
    ASSERT_EQ(cluster_ctl(&c, &r, "sessions", "--after", id, "-o", "json", NULL), 0);
    ASSERT(strstr(r.out, "{\"sessions\":[],\"more\":false}") != NULL);
    ctl_result_free(&r);

    /* Expiring the session takes its lock away: its batonctl exits 76. */
    ASSERT_EQ(cluster_ctl(&c, &r, "expire", id, NULL), 0);
    ASSERT(strstr(r.out, "expired session") != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(proc_wait(holder, 10000), 76);
    ASSERT_EQ(cluster_ctl(&c, &r, "expire", id, "-o", "json", NULL), 70);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "sessions", "-o", "json", NULL), 0);
    ASSERT_EQ(json_i64(r.out, "id", 0), 0);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_stop(&c), 0);
}

TEST(transfer_leader)
{
    struct cluster c;
    struct ctl_result r;
    char target[16];
    int leader, next;

    start3(&c);
    leader = cluster_wait_leader(&c, 5000);
    next = (leader + 1) % 3;
    snprintf(target, sizeof target, "%d", next + 1);
    ASSERT_EQ(cluster_ctl(&c, &r, "transfer-leader", target, NULL), 0);
    ASSERT(strstr(r.out, "leader is now node") != NULL);
    ctl_result_free(&r);
    /* Right after a transfer a follower may hold entries of the old term
     * until the new term's first entry commits; status must not take its
     * store's digest for a divergence (raft/fsm.h, fsm_state_index). */
    ASSERT_EQ(cluster_ctl(&c, &r, "status", "-o", "json", NULL), 0);
    ASSERT_EQ(json_i64(r.out, "leader_id", 0), next + 1);
    ctl_result_free(&r);
    /* Clients keep working, and asking for the leader itself is a no-op. */
    ASSERT_EQ(cluster_ctl(&c, &r, "lock", "after-transfer", "--", "true", NULL), 0);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "transfer-leader", target, "-o", "json", NULL), 0);
    ASSERT_EQ(json_i64(r.out, "leader_id", 0), next + 1);
    ctl_result_free(&r);
    /* A node that is not a member is refused by the cluster (70, not a
     * usage error); raft's own choice works. */
    ASSERT_EQ(cluster_ctl(&c, &r, "transfer-leader", "9", NULL), 70);
    ASSERT(strstr(r.err, "not another voting member") != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "transfer-leader", "-o", "json", NULL), 0);
    ASSERT(json_i64(r.out, "leader_id", 0) != next + 1);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "lock", "after-transfer", "--", "true", NULL), 0);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_stop(&c), 0);
}

/* `member list` shows raft's current configuration, and `member remove`
 * changes it: the cluster keeps serving with the two nodes left, and the
 * removed node's batond still shuts down cleanly. */
TEST(member_list_and_remove)
{
    struct cluster c;
    struct ctl_result r;
    char gone[16];
    int leader, victim;

    start3(&c);
    leader = cluster_wait_leader(&c, 5000);
    ASSERT_GE(leader, 0);
    ASSERT_EQ(cluster_ctl(&c, &r, "member", "list", "-o", "json", NULL), 0);
    ASSERT_EQ(count(r.out, "\"role\":\"voter\""), 3);
    ASSERT_EQ(count(r.out, "\"client_addr\":\"127.0.0.1:"), 3);
    ASSERT(strstr(r.out, cluster_endpoint(&c, 2)) != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "member", "list", NULL), 0);
    ASSERT(strstr(r.out, "ROLE") != NULL);
    ASSERT_EQ(count(r.out, "voter"), 3);
    ctl_result_free(&r);

    /* Usage errors (64) and a non-member (the cluster refuses: 70) are
     * refused. (Removing the leader itself works: test_membership.c.) */
    ASSERT_EQ(cluster_ctl(&c, &r, "member", NULL), 64);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "member", "frob", NULL), 64);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "member", "remove", NULL), 64);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "member", "remove", "x", NULL), 64);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "member", "list", "extra", NULL), 64);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "member", "remove", "9", NULL), 70);
    ASSERT(strstr(r.err, "not a member") != NULL);
    ctl_result_free(&r);

    /* Remove a follower: the reply is the new configuration. */
    victim = (leader + 1) % 3;
    snprintf(gone, sizeof gone, "%d", victim + 1);
    ASSERT_EQ(cluster_ctl(&c, &r, "member", "remove", gone, "-o", "json", NULL), 0);
    ASSERT_EQ(count(r.out, "\"role\":\"voter\""), 2);
    ASSERT(strstr(r.out, cluster_endpoint(&c, victim)) == NULL);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "member", "list", "-o", "json", NULL), 0);
    ASSERT_EQ(count(r.out, "\"id\":"), 2);
    ctl_result_free(&r);
    /* Removing it again: it is no longer a member. */
    ASSERT_EQ(cluster_ctl(&c, &r, "member", "remove", gone, NULL), 70);
    ctl_result_free(&r);

    /* Lock traffic still works with the two voters left. */
    ASSERT_EQ(cluster_ctl(&c, &r, "lock", "after-remove", "--", "true", NULL), 0);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "lock", "after-remove", "--", "true", NULL), 0);
    ctl_result_free(&r);

    /* The removed node's batond stops cleanly, and the rest keep serving. */
    ASSERT_EQ(cluster_kill(&c, victim, SIGTERM), 0);
    ASSERT_EQ(cluster_ctl(&c, &r, "lock", "after-stop", "--", "true", NULL), 0);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_stop(&c), 0);
}

/* `member add`'s usage errors: batonctl refuses them (exit 64) before it
 * sends anything, so the configuration never changes. */
TEST(member_add_usage_errors)
{
    static const char *const bad[][4] = {
        {"add", NULL},                                       /* no ID */
        {"add", "4", NULL},                                  /* no addresses */
        {"add", "x", "127.0.0.1:1/127.0.0.1:2", NULL},       /* ID not a number */
        {"add", "0", "127.0.0.1:1/127.0.0.1:2", NULL},       /* ID 0 */
        {"add", "2147483648", "127.0.0.1:1/127.0.0.1:2", NULL}, /* ID above 2^31-1 */
        {"add", "4", "127.0.0.1:1", NULL},                   /* no slash */
        {"add", "4", "127.0.0.1:1/", NULL},                  /* no client address */
        {"add", "4", "/127.0.0.1:2", NULL},                  /* no raft address */
        {"add", "4", "bad_host:1/127.0.0.1:2", NULL},        /* not a host name */
        {"add", "4", "127.0.0.1:0/127.0.0.1:2", NULL},       /* port 0 */
        {"add", "4", "127.0.0.1:70000/127.0.0.1:2", NULL},   /* port too big */
        {"add", "4", "256.0.0.1:1/127.0.0.1:2", NULL},       /* octet too big */
        {"add", "4", "127.0.0.1:1/127.0.0.1:1", NULL},       /* the same address twice */
        {"add", "4", "127.0.0.1:1/127.0.0.1:2", "extra"},    /* one argument too many */
    };
    struct cluster c;
    struct ctl_result r;

    start3(&c);
    ASSERT_GE(cluster_wait_leader(&c, 5000), 0);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *args[8] = {"member"};
        int n = 1;
        for (int k = 0; k < 4 && bad[i][k] != NULL; k++) args[n++] = bad[i][k];
        args[n] = NULL;
        if (cluster_ctlv(&c, 30000, &r, args) != 64)
            FAIL("member %s %s %s: exit %d, not 64 (%s)", args[1], n > 2 ? args[2] : "",
                 n > 3 ? args[3] : "", r.status, r.err);
        ASSERT(strstr(r.err, "Run 'batonctl member --help'") != NULL);
        ASSERT_STREQ(r.out, "");
        ctl_result_free(&r);
    }
    /* --help documents add, and exits 0. */
    ASSERT_EQ(cluster_ctl(&c, &r, "member", "--help", NULL), 0);
    ASSERT(strstr(r.out, "member add ID RAFTADDR/CLIENTADDR") != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "--help", NULL), 0);
    ASSERT(strstr(r.out, "member add ID RAFTADDR/CLIENTADDR") != NULL);
    ctl_result_free(&r);
    /* Nothing changed. */
    ASSERT_EQ(cluster_ctl(&c, &r, "member", "list", "-o", "json", NULL), 0);
    ASSERT_EQ(count(r.out, "\"role\":\"voter\""), 3);
    ASSERT_EQ(count(r.out, "\"id\":"), 3);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_stop(&c), 0);
}

/* A lock the cluster refuses (here: a semaphore of 2 asked for as an
 * ordinary lock) exits 70, as the docs say, and the message names the
 * command the user ran, not libbaton's call for several locks. */
TEST(lock_refused)
{
    struct cluster c;
    struct ctl_result r;
    const char *hold[] = {"lock", "sem", "--limit", "2", "--", "sleep", "20", NULL};
    pid_t holder;

    start3(&c);
    holder = cluster_ctl_spawn(&c, hold, NULL);
    ASSERT_GT(holder, 0);
    wait_info(&c, "sem", "\"held\":true");
    ASSERT_EQ(cluster_ctl(&c, &r, "lock", "sem", "--timeout", "0", "--", "true", NULL), 70);
    ASSERT(strstr(r.err, "batonctl: lock sem: ") == r.err);
    ASSERT(strstr(r.err, "semaphore of 2") != NULL);
    ASSERT(strstr(r.err, "baton_lock") == NULL);
    ctl_result_free(&r);
    kill(holder, SIGTERM);
    ASSERT_EQ(proc_wait(holder, 10000), 128 + SIGTERM);
    ASSERT_EQ(cluster_stop(&c), 0);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(120);
    RUN(status_all_up);
    RUN(status_with_nodes_down);
    RUN(nothing_reachable);
    RUN(usage_errors);
    RUN(lock_runs_command);
    RUN(lock_busy_and_queue);
    RUN(lock_signals);
    RUN(json_escaping_of_names);
    RUN(lock_survives_leader_kill);
    RUN(lock_refused);
    RUN(force_release);
    RUN(sessions_and_expire);
    RUN(transfer_leader);
    RUN(watch_follows_changes);
    RUN(watch_survives_leader_kill);
    RUN(snapshot_now);
    RUN(member_list_and_remove);
    RUN(member_add_usage_errors);
    return runner_done();
}
