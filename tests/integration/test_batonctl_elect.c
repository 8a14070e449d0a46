/*
 * test_batonctl_elect.c -- batonctl's commands of values, watches and
 * elections against a real three-node cluster: lock --value and lock-info
 * showing values and client names (text and binary), watch --prefix
 * following two locks, elect running CMD while it leads and a second
 * candidate taking over, elect --observe printing each leader in order,
 * elect stopping CMD when an operator expires its session, and their
 * usage errors.
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "storage/cmd_table.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/files.h"
#include "tests/lib/jsonget.h"
#include "tests/lib/proc.h"
#include "tests/lib/runner.h"

static void start3(struct cluster *c)
{
    ASSERT_EQ(cluster_start(c, 3), 0);
    ASSERT_GE(cluster_wait_leader(c, 15000), 0);
    /* Values need every voter at feature level 3, which the leader
     * raises to once each has said its level. */
    ASSERT_EQ(cluster_wait_gauge(c, "baton_cluster_feature_level", CMD_LEVEL, 15000), 0);
}

/* Poll lock-info until its JSON contains `want` (or 10 s pass); the last
 * output in out (cap bytes). */
static void wait_info(struct cluster *c, const char *name, const char *want, char *out,
                      size_t cap)
{
    for (int i = 0; i < 200; i++) {
        struct ctl_result r;
        int found;
        cluster_ctl(c, &r, "lock-info", name, "-o", "json", NULL);
        found = r.status == 0 && strstr(r.out, want) != NULL;
        if (out != NULL) snprintf(out, cap, "%s", r.out);
        ctl_result_free(&r);
        if (found) return;
        sleep_ms(50);
    }
    FAIL("lock-info %s never showed %s", name, want);
}

static void touch(const char *path)
{
    FILE *f = fopen(path, "w");
    ASSERT(f != NULL);
    fclose(f);
}

/* The next line of a spawned batonctl, within 15 s. */
static void next_line(int fd, char *buf, size_t cap)
{
    if (proc_read_line(fd, buf, cap, 15000) != 0) FAIL("no line (have '%s')", buf);
}

TEST(usage_errors)
{
    struct ctl_result r;
    const char *bad[][8] = {
        {"elect", NULL},
        {"elect", "e", NULL},
        {"elect", "e", "v", NULL},
        {"elect", "e", "v", "--count", "2", "--", "true", NULL},
        {"elect", "--observe", "e", "extra", NULL},
        {"elect", "--observe", "e", "--grace", "5", NULL},
        {"elect", "--observe", NULL},
        {"watch", "--prefix", "a", "b", NULL},
        {"watch", NULL},
        {"lock", "a", "b", "--value", "v", "--", "true", NULL},
        {NULL},
    };
    const char *help[] = {"elect", "--help", NULL};
    const char *help2[] = {"watch", "--help", NULL};

    for (int i = 0; bad[i][0] != NULL; i++) {
        ASSERT_EQ(cluster_ctlv(NULL, 10000, &r, bad[i]), 64);
        ASSERT(strstr(r.err, "--help") != NULL);
        ctl_result_free(&r);
    }
    ASSERT_EQ(cluster_ctlv(NULL, 10000, &r, help), 0);
    ASSERT(strstr(r.out, "BATON_ELECTION") != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctlv(NULL, 10000, &r, help2), 0);
    ASSERT(strstr(r.out, "restarted") != NULL);
    ctl_result_free(&r);
}

/* lock --value: lock-info shows the holder's and a waiter's value and
 * client name, as a string or, for bytes that are not UTF-8, as base64 in
 * JSON and \xNN in the table; the old JSON fields are still there. */
TEST(lock_info_values)
{
    struct cluster c;
    struct ctl_result r;
    const char *hold[] = {"lock", "val", "--value", "host-a:80", "--", "sleep", "30", NULL};
    const char *wait[] = {"lock", "val", "--value", "w\xff\x01", "--", "true", NULL};
    char out[8192];
    pid_t holder, waiter;

    start3(&c);
    holder = cluster_ctl_spawn(&c, hold, NULL);
    ASSERT_GT(holder, 0);
    wait_info(&c, "val", "\"held\":true", out, sizeof out);
    ASSERT(strstr(out, "\"client_name\":\"batonctl lock\",\"value\":\"host-a:80\"") != NULL);
    ASSERT_GT(json_i64(out, "revision", 0), 0);
    ASSERT_GT(json_i64(out, "holder_waiter", 0), 0);
    ASSERT_GT(json_i64(out, "granted_index", 0), 0);

    waiter = cluster_ctl_spawn(&c, wait, NULL);
    ASSERT_GT(waiter, 0);
    wait_info(&c, "val", "\"total_waiters\":1", out, sizeof out);
    /* "w\xff\x01" is not UTF-8: base64 of its three bytes. */
    ASSERT(strstr(out, "\"waiters\":[{\"session\":") != NULL);
    ASSERT(strstr(out, "\"value_base64\":\"d/8B\"") != NULL);
    ASSERT_EQ(cluster_ctl(&c, &r, "lock-info", "val", NULL), 0);
    ASSERT(strstr(r.out, "value:          host-a:80\n") != NULL);
    ASSERT(strstr(r.out, ", client batonctl lock\n") != NULL);
    ASSERT(strstr(r.out, "w\\xff\\x01") != NULL);
    ASSERT(strstr(r.out, "revision:") != NULL);
    ctl_result_free(&r);

    kill(holder, SIGTERM);
    ASSERT_EQ(proc_wait(holder, 10000), 128 + SIGTERM);
    ASSERT_EQ(proc_wait(waiter, 10000), 0);
    wait_info(&c, "val", "\"held\":false", out, sizeof out);
    ASSERT(strstr(out, "\"client_name\":null,\"value\":null") != NULL);
    ASSERT_EQ(cluster_stop(&c), 0);
}

/* watch --prefix: one synced event (nothing held yet), then each change
 * of the two locks under the prefix, in order, with increasing revisions;
 * a lock outside the prefix is not shown; --count 4 ends it. */
TEST(watch_prefix_two_locks)
{
    struct cluster c;
    struct ctl_result r;
    const char *watch[] = {"watch", "--prefix", "wp/", "-o", "json", "--count", "4", NULL};
    const char *names[4] = {"wp/a", "wp/a", "wp/b", "wp/b"};
    char line[8192];
    int64_t rev = 0;
    pid_t watcher;
    int fd = -1;

    start3(&c);
    watcher = cluster_ctl_spawn(&c, watch, &fd);
    ASSERT_GT(watcher, 0);
    next_line(fd, line, sizeof line);
    ASSERT(strstr(line, "\"kind\":\"synced\"") != NULL);
    ASSERT_EQ(json_i64(line, "seq", 0), 1);
    /* a reader: the watch holds no session */
    ASSERT_EQ(cluster_ctl(&c, &r, "sessions", NULL), 0);
    if (strstr(r.out, "batonctl watch") != NULL) FAIL("the watch holds a session: %s", r.out);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "lock", "other", "--", "true", NULL), 0);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "lock", "wp/a", "--value", "va", "--", "true", NULL), 0);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "lock", "wp/b", "--value", "vb", "--", "true", NULL), 0);
    ctl_result_free(&r);
    for (int i = 0; i < 4; i++) {
        char want[64];
        next_line(fd, line, sizeof line);
        snprintf(want, sizeof want, "{\"name\":\"%s\",", names[i]);
        ASSERT(strncmp(line, want, strlen(want)) == 0);
        ASSERT(strstr(line, "\"kind\":\"change\"") != NULL);
        ASSERT_EQ(json_i64(line, "seq", 0), i + 2);
        ASSERT(strstr(line, i % 2 == 0 ? "\"held\":true" : "\"held\":false") != NULL);
        if (i % 2 == 0)
            ASSERT(strstr(line, i == 0 ? "\"value\":\"va\"" : "\"value\":\"vb\"") != NULL);
        ASSERT_GT(json_i64(line, "revision", 0), rev);
        rev = json_i64(line, "revision", 0);
    }
    ASSERT_EQ(proc_wait(watcher, 10000), 0);
    close(fd);
    ASSERT_EQ(cluster_stop(&c), 0);
}

/* A CMD that runs until file `path` exists (the test's go-ahead). */
static void until_file(char *cmd, size_t cap, const char *path)
{
    snprintf(cmd, cap, "echo \"$BATON_ELECTION $BATON_FENCE\"; "
                       "while [ ! -e %s ]; do sleep 0.05; done", path);
}

/*
 * elect: the first candidate runs CMD while it leads (its value and client
 * shown by lock-info); a second one waits, with its value in the queue, and
 * leads once the first's CMD exited (it resigned), with a larger fence in
 * BATON_FENCE; a third that will not wait (--timeout 0) exits 75. An
 * observer started while the first leads prints both leaders in order, in
 * JSON; another prints the second as a table line.
 */
TEST(elect_takes_turns)
{
    struct cluster c;
    struct ctl_result r;
    char dir[PATH_MAX], stop_a[PATH_MAX + 8], stop_b[PATH_MAX + 8], cmd_a[2 * PATH_MAX],
        cmd_b[2 * PATH_MAX];
    const char *first[] = {"elect", "el", "va", "--", "sh", "-c", cmd_a, NULL};
    const char *second[] = {"elect", "el", "vb", "--", "sh", "-c", cmd_b, NULL};
    const char *observe[] = {"elect", "--observe", "el", "-o", "json", "--count", "2", NULL};
    char out[8192], line[8192], rest[256], want[256];
    unsigned long long fence = 0, rev = 0, sess = 0, f2 = 0;
    int64_t fa, sa;
    pid_t a, b, ob;
    int fd_b = -1, fd_ob = -1;

    ASSERT_EQ(tmpdir_make(dir, sizeof dir, "elect"), 0);
    snprintf(stop_a, sizeof stop_a, "%s/a", dir);
    snprintf(stop_b, sizeof stop_b, "%s/b", dir);
    until_file(cmd_a, sizeof cmd_a, stop_a);
    until_file(cmd_b, sizeof cmd_b, stop_b);
    start3(&c);
    a = cluster_ctl_spawn(&c, first, NULL);
    ASSERT_GT(a, 0);
    wait_info(&c, "el", "\"held\":true", out, sizeof out);
    ASSERT(strstr(out, "\"client_name\":\"batonctl elect\",\"value\":\"va\"") != NULL);
    fa = json_i64(out, "fence", 0);
    sa = json_i64(out, "holder_session", 0);
    ob = cluster_ctl_spawn(&c, observe, &fd_ob);
    ASSERT_GT(ob, 0);
    next_line(fd_ob, line, sizeof line);
    ASSERT_EQ(json_i64(line, "fence", 0), fa);
    ASSERT_EQ(json_i64(line, "leader_session", 0), sa);
    ASSERT(strstr(line, "\"election\":\"el\"") != NULL);
    ASSERT(strstr(line, "\"value\":\"va\"") != NULL);

    /* Not waiting its turn (--timeout 0) while someone leads: exit 75. */
    ASSERT_EQ(cluster_ctl(&c, &r, "elect", "el", "vc", "--timeout", "0", "--", "true", NULL), 75);
    ASSERT(strstr(r.err, "leadership of el is held by another client") != NULL);
    ctl_result_free(&r);

    b = cluster_ctl_spawn(&c, second, &fd_b);
    ASSERT_GT(b, 0);
    wait_info(&c, "el", "\"total_waiters\":1", out, sizeof out);
    ASSERT(strstr(out, "\"value\":\"vb\"") != NULL);
    ASSERT_EQ(json_i64(out, "fence", 0), fa);

    /* The first's CMD ends: it resigns, the second leads. */
    touch(stop_a);
    ASSERT_EQ(proc_wait(a, 15000), 0);
    next_line(fd_b, line, sizeof line);
    ASSERT_EQ(sscanf(line, "el %llu", &fence), 1);
    ASSERT_GT((int64_t)fence, fa);
    next_line(fd_ob, line, sizeof line);
    ASSERT_UEQ((uint64_t)json_i64(line, "fence", 0), (uint64_t)fence);
    ASSERT(strstr(line, "\"value\":\"vb\"") != NULL);
    ASSERT_EQ(proc_wait(ob, 10000), 0);
    close(fd_ob);

    /* The table line: REVISION LEADER-SESSION CLIENT FENCE VALUE. */
    ASSERT_EQ(cluster_ctl(&c, &r, "elect", "--observe", "el", "--count", "1", NULL), 0);
    ASSERT_EQ(sscanf(r.out, "%llu %llu %255s %llu", &rev, &sess, rest, &f2), 4);
    ASSERT_STREQ(rest, "batonctl\\x20elect");
    ASSERT_UEQ((uint64_t)f2, (uint64_t)fence);
    snprintf(want, sizeof want, " %llu vb\n", fence);
    ASSERT(strstr(r.out, want) != NULL);
    ctl_result_free(&r);

    touch(stop_b);
    ASSERT_EQ(proc_wait(b, 15000), 0);
    close(fd_b);
    rm_rf(dir);
    wait_info(&c, "el", "\"held\":false", out, sizeof out);
    ASSERT_EQ(cluster_ctl(&c, &r, "elect", "--observe", "el", "--count", "1", NULL), 0);
    ASSERT(strstr(r.out, " no leader\n") != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_stop(&c), 0);
}

/* An operator ends the leader's session: elect stops CMD and exits 76. */
TEST(elect_stops_cmd_on_expire)
{
    struct cluster c;
    struct ctl_result r;
    const char *lead[] = {"elect", "ex", "v", "--grace", "1000", "--", "sh", "-c",
                          "echo \"$BATON_SESSION\"; exec sleep 30", NULL};
    char line[256];
    int64_t t0;
    pid_t leader;
    int fd = -1;

    start3(&c);
    leader = cluster_ctl_spawn(&c, lead, &fd);
    ASSERT_GT(leader, 0);
    next_line(fd, line, sizeof line);
    t0 = now_ms();
    ASSERT_EQ(cluster_ctl(&c, &r, "expire", line, NULL), 0);
    ctl_result_free(&r);
    ASSERT_EQ(proc_wait(leader, 15000), 76);
    /* Well before sleep's 30 s: CMD was stopped. */
    ASSERT_LT(now_ms() - t0, 20000);
    close(fd);
    ASSERT_EQ(cluster_stop(&c), 0);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(usage_errors);
    RUN(lock_info_values);
    RUN(watch_prefix_two_locks);
    RUN(elect_takes_turns);
    RUN(elect_stops_cmd_on_expire);
    return runner_done();
}
