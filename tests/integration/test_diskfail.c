/*
 * test_diskfail.c -- a node whose data disk fails is a dead node, never a
 * silent or crashing one (raft/io_guard.h; docs/operations.md, "A failing
 * disk"), on three real batond processes.
 *
 * Every node runs with the fault harness's disk shim preloaded
 * ($(B)/tests/fault/shim_disk.so, tests/fault/shim_disk.c) and a control
 * file of its own: "fail ERRNO" makes every write and sync of the node's
 * data fail -- its raft log's AIO writes are done, but their completions
 * report the error -- and "ok" heals it.
 *
 * follower_disk_fails: a follower's disk fails with EIO while a client
 * takes and releases locks. Checks that every lock call succeeds (the
 * other two commit), that the follower exits with status 74 within
 * seconds, saying "I/O error on the raft log" and naming its raft
 * directory, and that once the disk works again a restart catches up to
 * the same state digest. Before, libraft 0.15 kept the entries whose write
 * failed in memory and never counted them stored: the follower stood
 * still for good, silently, and never exited.
 *
 * leader_disk_fails: the same on the leader, with ENOSPC, while the client
 * holds a lock taken before. Checks that the lock calls succeed across the
 * change of leader, that the old leader exits 74 with the message, that
 * another node leads, that the held lock is still the client's with its
 * fence (nothing lost), and that after healing and a restart the three
 * digests agree. Before, the leader went on leading and later died of a
 * SIGSEGV inside libraft.
 *
 * leader_snapshot_write_fails: the leader's snapshot files find no room
 * (tests/shim/failwrite.c fails every write of DATA/raft/tmp-snapshot-*
 * with ENOSPC while DATA/fail-snapshot-write exists: a full disk whose
 * preallocated log segments still take entries) and an operator runs
 * `batonctl snapshot`. Checks the same as leader_disk_fails, the log
 * naming the snapshot. Before, libraft 0.15 dropped the failed snapshot
 * and the leader went on leading, silently.
 *
 * election_on_failing_disk: with no client writes, a follower's disk
 * fails and the leader is killed; the election makes the follower store a
 * new term (or its vote) in raft's metadata, which fails. Checks that it
 * exits 74 saying so, that the restarted leader and the third node elect a
 * leader and serve, and that after healing the three digests agree.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baton/baton.h"
#include "baton/baton_defs.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/files.h"
#include "tests/lib/runner.h"

#define EXIT_FAULT 74 /* BATON_EXIT_FAULT (server/server_int.h) */
#define EXIT_WITHIN_MS 15000
#define SHIM_DISK "tests/fault/shim_disk.so"
#define SHIM_FAILWRITE "tests/shim/failwrite.so"

static struct cluster C;
static char ctl_dir[PATH_MAX - 64]; /* the nodes' disk control files */
static char env_buf[3][3][PATH_MAX + 64];
static const char *env[3][4];

static baton_t *client(const char *name)
{
    baton_opts o = {.endpoints = cluster_endpoints(&C), .client_name = name,
                    .connect_timeout_ms = 20000, .op_timeout_ms = 20000,
                    .session_ttl_ms = 60000};
    baton_t *b = NULL;
    int rv = baton_connect(&o, &b);

    if (rv != 0) FAIL("baton_connect: %s: %s", baton_err_name(rv), baton_connect_errmsg());
    return b;
}

/* Write node i's control file: a new file renamed over the old one, so
 * the shim never reads half a line. */
static void disk_set(int i, const char *line)
{
    char path[PATH_MAX], tmp[PATH_MAX + 8];
    FILE *f;

    snprintf(path, sizeof path, "%s/disk-%d.ctl", ctl_dir, i + 1);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    f = fopen(tmp, "w");
    if (f == NULL) FAIL("%s: %s", tmp, strerror(errno));
    fprintf(f, "%s\n", line);
    if (fclose(f) != 0 || rename(tmp, path) != 0) FAIL("%s: %s", path, strerror(errno));
}

/* Start three nodes, each with shim `shim` (under the build directory)
 * preloaded and a healthy disk. */
static void start(const char *shim)
{
    const char *build = getenv("BATON_BUILD");
    const char *prev = getenv("ASAN_OPTIONS");
    char rel[PATH_MAX], so[PATH_MAX];
    struct cluster_opts o = {0};

    snprintf(rel, sizeof rel, "%s/%s", build && *build ? build : "build/default", shim);
    if (realpath(rel, so) == NULL) FAIL("%s: %s (make build-tests builds it)", rel, strerror(errno));
    if (tmpdir_make(ctl_dir, sizeof ctl_dir, "baton-diskfail") != 0) FAIL("no temp dir");
    for (int i = 0; i < 3; i++) {
        disk_set(i, "ok");
        snprintf(env_buf[i][0], sizeof env_buf[i][0], "LD_PRELOAD=%s", so);
        /* An ASan batond wants its runtime first among the libraries. */
        snprintf(env_buf[i][1], sizeof env_buf[i][1], "ASAN_OPTIONS=%s%sverify_asan_link_order=0",
                 prev ? prev : "", prev && *prev ? ":" : "");
        snprintf(env_buf[i][2], sizeof env_buf[i][2], "BATON_FAULT_DISK_CTL=%s/disk-%d.ctl",
                 ctl_dir, i + 1);
        for (int k = 0; k < 3; k++) env[i][k] = env_buf[i][k];
        env[i][3] = NULL;
        o.node_env[i] = env[i];
    }
    ASSERT_EQ(cluster_start_opts(&C, 3, &o), 0);
}

static void finish(void)
{
    ASSERT_EQ(cluster_stop(&C), 0);
    rm_rf(ctl_dir);
}

/* One lock and unlock of `name`: both must succeed. */
static void cycle(baton_t *b, const char *name)
{
    baton_lock_t *l = NULL;
    int rv = baton_lock_timeout(b, name, 20000, &l);

    if (rv != 0) FAIL("lock %s: %s (%s)", name, baton_err_name(rv), baton_errmsg(b));
    rv = baton_unlock(l);
    if (rv != 0) FAIL("unlock %s: %s (%s)", name, baton_err_name(rv), baton_errmsg(b));
}

/* Take and release locks until node i exits (at most EXIT_WITHIN_MS after
 * its disk failed), then check how it went: status 74, and a log line
 * that names the failed write (`what`) and the raft directory. */
static void until_exit(baton_t *b, int i, const char *what)
{
    char raft_dir[PATH_MAX + 8];
    int64_t t0 = now_ms();
    int code = -1, cycles = 0;

    while (code < 0 && now_ms() - t0 < EXIT_WITHIN_MS) {
        cycle(b, "w");
        cycles++;
        code = cluster_wait_exit(&C, i, 50);
    }
    if (code < 0)
        FAIL("node %d still runs %d ms after its disk failed (%d lock cycles since): a node that "
             "cannot write its raft log stood still silently",
             i + 1, EXIT_WITHIN_MS, cycles);
    fprintf(stderr, "# node %d exited with status %d after %lld ms (%d lock cycles)\n", i + 1,
            code, (long long)(now_ms() - t0), cycles);
    if (code != EXIT_FAULT) FAIL("node %d: exit status %d, not %d", i + 1, code, EXIT_FAULT);
    ASSERT(cluster_log_says(&C, i, "I/O error on the raft log", 0));
    if (!cluster_log_says(&C, i, what, 0)) FAIL("node %d's log does not say '%s'", i + 1, what);
    snprintf(raft_dir, sizeof raft_dir, "%s/raft", C.nodes[i].dir);
    if (!cluster_log_says(&C, i, raft_dir, 0))
        FAIL("node %d's log does not name %s", i + 1, raft_dir);
}

TEST(follower_disk_fails)
{
    baton_t *b;
    int leader, f;

    start(SHIM_DISK);
    leader = cluster_wait_leader(&C, 15000);
    ASSERT_GE(leader, 0);
    f = (leader + 1) % 3;
    b = client("diskfail-follower");
    cycle(b, "warm");

    disk_set(f, "fail 5"); /* EIO */
    until_exit(b, f, "to the raft log in");
    /* The other two go on. */
    for (int k = 0; k < 20; k++) cycle(b, "after");
    ASSERT_GE(cluster_wait_leader(&C, 15000), 0);

    /* The disk works again: a restart catches up. */
    disk_set(f, "ok");
    ASSERT_EQ(cluster_restart(&C, f), 0);
    cycle(b, "healed");
    ASSERT_EQ(cluster_digests_agree(&C, 30000), 0);
    baton_close(b);
    finish();
}

TEST(leader_disk_fails)
{
    baton_t *b;
    baton_lock_t *keep = NULL;
    int leader, next;
    uint64_t fence;

    start(SHIM_DISK);
    leader = cluster_wait_leader(&C, 15000);
    ASSERT_GE(leader, 0);
    b = client("diskfail-leader");
    ASSERT_EQ(baton_lock(b, "keep", &keep), 0);
    fence = baton_lock_fence(keep);
    cycle(b, "warm");

    disk_set(leader, "fail 28"); /* ENOSPC */
    until_exit(b, leader, "No space left on device");
    next = cluster_wait_leader(&C, 15000);
    ASSERT_GE(next, 0);
    ASSERT_NE(next, leader);
    for (int k = 0; k < 20; k++) cycle(b, "after");
    /* Nothing lost: the lock taken before is still the client's. */
    ASSERT_UEQ((uint64_t)cluster_lock_i64(&C, "keep", "holder_session"), baton_session_id(b));
    ASSERT_UEQ((uint64_t)cluster_lock_i64(&C, "keep", "fence"), fence);

    disk_set(leader, "ok");
    ASSERT_EQ(cluster_restart(&C, leader), 0);
    ASSERT_EQ(baton_unlock(keep), 0);
    ASSERT_EQ(cluster_digests_agree(&C, 30000), 0);
    baton_close(b);
    finish();
}

TEST(leader_snapshot_write_fails)
{
    char trigger[PATH_MAX + 32];
    struct ctl_result r;
    baton_t *b;
    baton_lock_t *keep = NULL;
    int leader, next, fd;
    uint64_t fence;

    start(SHIM_FAILWRITE);
    leader = cluster_wait_leader(&C, 15000);
    ASSERT_GE(leader, 0);
    b = client("diskfail-snapshot");
    ASSERT_EQ(baton_lock(b, "keep", &keep), 0);
    fence = baton_lock_fence(keep);
    cycle(b, "warm");

    /* The leader's disk has no room for a new snapshot file (its log's
     * preallocated segments still take entries); an operator asks for a
     * snapshot. */
    snprintf(trigger, sizeof trigger, "%s/fail-snapshot-write", C.nodes[leader].dir);
    fd = open(trigger, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    close(fd);
    cluster_ctl(&C, &r, "snapshot", NULL);
    fprintf(stderr, "# batonctl snapshot: %s%s", r.out, r.err);
    ctl_result_free(&r);
    until_exit(b, leader, "writing a snapshot");
    next = cluster_wait_leader(&C, 15000);
    ASSERT_GE(next, 0);
    ASSERT_NE(next, leader);
    for (int k = 0; k < 20; k++) cycle(b, "after");
    ASSERT_UEQ((uint64_t)cluster_lock_i64(&C, "keep", "holder_session"), baton_session_id(b));
    ASSERT_UEQ((uint64_t)cluster_lock_i64(&C, "keep", "fence"), fence);

    ASSERT_EQ(unlink(trigger), 0);
    ASSERT_EQ(cluster_restart(&C, leader), 0);
    ASSERT_EQ(baton_unlock(keep), 0);
    ASSERT_EQ(cluster_digests_agree(&C, 30000), 0);
    baton_close(b);
    finish();
}

TEST(election_on_failing_disk)
{
    baton_t *b;
    int leader, f, code = -1, next;
    int64_t t0;

    start(SHIM_DISK);
    leader = cluster_wait_leader(&C, 15000);
    ASSERT_GE(leader, 0);
    f = (leader + 1) % 3;
    b = client("diskfail-election");
    cycle(b, "warm");
    baton_close(b);

    /* No client writes: follower f's disk fails, then the leader dies.
     * The election that follows makes f store a new term (and maybe its
     * vote): that write fails, and f exits. */
    disk_set(f, "fail 5");
    sleep_ms(100); /* the shim looks at its file every 20 ms */
    cluster_kill(&C, leader, SIGKILL);
    t0 = now_ms();
    while (code < 0 && now_ms() - t0 < EXIT_WITHIN_MS) code = cluster_wait_exit(&C, f, 100);
    if (code < 0) FAIL("node %d still runs %d ms after the election began", f + 1, EXIT_WITHIN_MS);
    if (code != EXIT_FAULT) FAIL("node %d: exit status %d, not %d", f + 1, code, EXIT_FAULT);
    ASSERT(cluster_log_says(&C, f, "I/O error on the raft log", 0));
    ASSERT(cluster_log_says(&C, f, "in the raft metadata", 0));

    /* The dead leader back: it and the third node elect a leader. */
    ASSERT_EQ(cluster_restart(&C, leader), 0);
    next = cluster_wait_leader(&C, 20000);
    ASSERT_GE(next, 0);
    ASSERT_NE(next, f);
    b = client("diskfail-election");
    cycle(b, "after");
    disk_set(f, "ok");
    ASSERT_EQ(cluster_restart(&C, f), 0);
    cycle(b, "healed");
    ASSERT_EQ(cluster_digests_agree(&C, 30000), 0);
    baton_close(b);
    finish();
}

/* Load for busy_leader_disk_fails: BUSY_THREADS sessions that each
 * cycle a lock of their own until told to stop, ignoring failures (the
 * leader goes away under them). */
#define BUSY_THREADS 16
#define BUSY_ROUNDS 4
static atomic_int busy_stop;

static void *busy_main(void *arg)
{
    baton_t *b = arg;
    char name[32];

    snprintf(name, sizeof name, "busy-%p", arg);
    while (!atomic_load(&busy_stop)) {
        baton_lock_t *l = NULL;
        if (baton_lock_timeout(b, name, 2000, &l) == 0) baton_unlock(l);
    }
    return NULL;
}

/*
 * A leader with many appends in flight loses its disk: libraft 0.15 then
 * reports the failure to the first append, truncates its in-memory log
 * from there, and -- told of the later appends' failures as they come --
 * truncated again from past its log's end and crashed (SIGSEGV) while the
 * node was exiting. raft/io_guard.c tells raft of those as done (their
 * entries are gone from its log). Each round the busy leader must exit 74,
 * never die of a signal.
 */
TEST(busy_leader_disk_fails)
{
    baton_t *bs[BUSY_THREADS];
    pthread_t th[BUSY_THREADS];
    int leader, code = -1;
    int64_t t0;

    start(SHIM_DISK);
    for (int i = 0; i < BUSY_THREADS; i++) bs[i] = client("diskfail-busy");
    atomic_store(&busy_stop, 0);
    for (int i = 0; i < BUSY_THREADS; i++)
        ASSERT_EQ(pthread_create(&th[i], NULL, busy_main, bs[i]), 0);
    for (int round = 0; round < BUSY_ROUNDS; round++) {
        leader = cluster_wait_leader(&C, 15000);
        ASSERT_GE(leader, 0);
        sleep_ms(300); /* the load reaches the new leader */
        disk_set(leader, round % 2 ? "fail 28" : "fail 5");
        t0 = now_ms();
        code = -1;
        while (code < 0 && now_ms() - t0 < EXIT_WITHIN_MS) code = cluster_wait_exit(&C, leader, 100);
        fprintf(stderr, "# round %d: leader node %d exited with status %d\n", round, leader + 1,
                code);
        if (code != EXIT_FAULT) {
            atomic_store(&busy_stop, 1);
            FAIL("round %d: busy leader node %d: exit status %d, not %d", round, leader + 1, code,
                 EXIT_FAULT);
        }
        disk_set(leader, "ok");
        ASSERT_EQ(cluster_restart(&C, leader), 0);
    }
    atomic_store(&busy_stop, 1);
    for (int i = 0; i < BUSY_THREADS; i++) ASSERT_EQ(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < BUSY_THREADS; i++) baton_close(bs[i]);
    ASSERT_EQ(cluster_digests_agree(&C, 30000), 0);
    finish();
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(300);
    signal(SIGPIPE, SIG_IGN);
    RUN(follower_disk_fails);
    RUN(leader_disk_fails);
    RUN(leader_snapshot_write_fails);
    RUN(election_on_failing_disk);
    RUN(busy_leader_disk_fails);
    return runner_done();
}
