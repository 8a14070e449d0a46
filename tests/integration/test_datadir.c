/*
 * test_datadir.c -- one batond per data directory, and raft start
 * failures that say why, with real batond processes (tests/lib/cluster.h
 * starts and always stops them; the second batonds here are run by hand
 * and stopped by pid).
 *
 *  - second_batond_refused: a three-node cluster started the way the
 *    service starts a node (`batond --config FILE`), a client holding a
 *    lock. On the leader's data directory, each of these must exit 1
 *    within 15 s, saying that the directory is in use by the leader's pid
 *    (and its lock file), having opened nothing in it (no "lock store
 *    open" line), and leaving the lock file with the leader's pid:
 *      1. `batond --config nodeN.conf --cluster ...` with the leader's
 *         raft and client ports replaced by free ones (without the lock it
 *         would run on, writing the leader's raft log);
 *      2. `batond --config nodeN.conf` as it is, same ports too;
 *      3. `batond --restore FILE` of a fresh backup into that directory.
 *    The cluster goes on serving: the held lock stays held, a new lock
 *    commits. A restore into a missing directory and into an empty one
 *    works (the lock file is then all the directory held). Then the
 *    leader is stopped (SIGTERM), one other node killed (SIGKILL, which
 *    leaves its lock file behind) and the last stopped; the old leader,
 *    started again alone, holds in its raft log every entry it had
 *    applied before (its last index is at least its applied index of
 *    then: a log rewritten under it would have ended far below); the
 *    killed node starts over its stale lock file, which then holds its
 *    new pid; all caught up, the three agree on the state digest, the
 *    held lock has its fence still and its holder unlocks it.
 *  - raft_start_failures_say_why: batond on a fresh directory must exit
 *    with a message that says why raft cannot start: its raft port taken
 *    by another process (exit 1, "address already in use"), an address
 *    that is not this host's (192.0.2.1, TEST-NET-1: exit 1, "not an
 *    address of this host"), a name that does not resolve
 *    (nosuchhost.invalid, RFC 6761: exit 1, "cannot resolve"), and two
 *    members with one raft address (exit 2, a bad --cluster).
 */
#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "baton/baton.h"
#include "baton/baton_defs.h"
#include "tests/lib/cluster.h"
#include "tests/lib/files.h"
#include "tests/lib/proc.h"
#include "tests/lib/runner.h"

#define TTL_MS 120000   /* the holder's session outlives every restart here */
#define EXIT_MS 15000   /* a refused batond exits well within this */

static struct cluster C;

/* ---- running batond by hand ---------------------------------------------- */

/* Run batond with args (NULL-terminated, after the program's name), its
 * stderr into logp (emptied first), and wait until it exits: its exit
 * status. One still running after EXIT_MS is stopped and fails the test. */
static int run_batond(const char *build, const char *const *args, const char *logp)
{
    char path[PATH_MAX + 16];
    const char *argv[32];
    int argc = 0, rv;
    pid_t pid;

    snprintf(path, sizeof path, "%s/batond", build);
    argv[argc++] = path;
    while (*args != NULL && argc < 31) argv[argc++] = *args++;
    argv[argc] = NULL;
    unlink(logp);
    pid = proc_spawn_files(argv, NULL, logp);
    ASSERT_GT(pid, 0);
    rv = proc_wait(pid, EXIT_MS);
    if (rv < 0) {
        proc_stop(pid, SIGKILL, 5000);
        FAIL("batond (log %s) was still running after %d ms", logp, EXIT_MS);
    }
    return rv;
}

/* The file at path must contain s. */
static void file_says(const char *path, const char *s)
{
    static char buf[65536];

    ASSERT(read_tail(path, buf, sizeof buf) >= 0);
    if (strstr(buf, s) == NULL) FAIL("%s lacks \"%s\"; it holds:\n%s", path, s, buf);
}

static void file_lacks(const char *path, const char *s)
{
    static char buf[65536];

    ASSERT(read_tail(path, buf, sizeof buf) >= 0);
    if (strstr(buf, s) != NULL) FAIL("%s holds \"%s\":\n%s", path, s, buf);
}

/* ---- the data directory -------------------------------------------------- */

/* What a batond refused on node i's directory says (datadir_lock.c cuts a
 * directory name at 64 bytes). */
static void in_use_message(int i, char *buf, size_t cap)
{
    const char *dir = C.nodes[i].dir;

    snprintf(buf, cap,
             "data directory %.64s is in use by batond pid %d (lock file %.64s/batond.lock); "
             "one batond per data directory",
             dir, (int)C.nodes[i].pid, dir);
}

/* Node i's lock file must hold its current pid. */
static void lock_file_holds_pid(int i)
{
    char path[PATH_MAX + 32], want[32];

    snprintf(path, sizeof path, "%s/batond.lock", C.nodes[i].dir);
    snprintf(want, sizeof want, "%d\n", (int)C.nodes[i].pid);
    file_says(path, want);
}

/* Run batond by hand on node i's configuration and data directory: with
 * the cluster list `cluster` instead of the file's, or as it is (NULL). It
 * must be refused as in use, before it opened anything. */
static void second_batond_refused_on(int i, const char *cluster, const char *logp)
{
    char conf[PATH_MAX + 16], msg[512];
    const char *args[] = {"--config", conf, cluster ? "--cluster" : NULL, cluster, NULL};

    snprintf(conf, sizeof conf, "%s/node%d.conf", C.root, i + 1);
    ASSERT_EQ(run_batond(C.build, args, logp), 1);
    in_use_message(i, msg, sizeof msg);
    file_says(logp, msg);
    file_lacks(logp, "lock store open");
    lock_file_holds_pid(i);
}

/* The --cluster list of c with node i's raft and client ports replaced by
 * free ones. */
static void other_ports_list(int i, char *buf, size_t cap)
{
    int ports[2];
    size_t off = 0;

    ASSERT_EQ(cluster_free_ports(ports, 2), 0);
    for (int k = 0; k < C.n; k++) {
        const struct cluster_node *nd = &C.nodes[k];

        off += (size_t)snprintf(buf + off, cap - off, "%s%u=127.0.0.1:%d/127.0.0.1:%d",
                                k ? "," : "", nd->id, k == i ? ports[0] : nd->raft_port,
                                k == i ? ports[1] : nd->client_port);
        ASSERT(off < cap);
    }
}

/* The cluster serves: `name` is held (another session's trylock is
 * refused) and a new lock commits. */
static void cluster_serves(const char *held, const char *fresh)
{
    baton_opts o = {.client_name = "probe"};
    baton_lock_t *l;
    baton_t *b;

    cluster_client_opts(&C, &o);
    b = client_connect(&o);
    ASSERT_EQ(baton_trylock(b, held, &l), BATON_EWOULDBLOCK);
    ASSERT_EQ(baton_lock(b, fresh, &l), 0);
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(b);
}

/* A restore of `file` into `dir` (missing or empty) works and leaves the
 * lock file next to raft/ and fsm/. */
static void restore_works(const char *file, const char *dir)
{
    char path[PATH_MAX + 32];
    struct stat sb;

    ASSERT_EQ(cluster_restore(&C, 0, file, dir), 0);
    for (const char *const *f = (const char *const[]){"batond.lock", "raft", "fsm", NULL}; *f;
         f++) {
        snprintf(path, sizeof path, "%s/%s", dir, *f);
        if (stat(path, &sb) != 0) FAIL("no %s after the restore", path);
    }
}

TEST(second_batond_refused)
{
    static const struct cluster_opts opts = {.config_file = 1};
    char list[1024], logp[PATH_MAX + 32], snap[PATH_MAX + 32], dir[PATH_MAX + 32],
        msg[512];
    struct cluster_status before, alone;
    baton_opts o = {.client_name = "holder", .session_ttl_ms = TTL_MS};
    struct ctl_result r;
    baton_lock_t *held;
    baton_t *holder;
    uint64_t fence;
    int leader, j, k;

    ASSERT_EQ(cluster_start_opts(&C, 3, &opts), 0);
    leader = cluster_wait_leader(&C, 15000);
    ASSERT_GE(leader, 0);
    cluster_client_opts(&C, &o);
    holder = client_connect(&o);
    ASSERT_EQ(baton_lock(holder, "held", &held), 0);
    fence = baton_lock_fence(held);
    cluster_serves("held", "before");
    lock_file_holds_pid(leader);

    /* 1. Other ports: without the lock it would run on. */
    other_ports_list(leader, list, sizeof list);
    snprintf(logp, sizeof logp, "%s/second-other-ports.log", C.root);
    second_batond_refused_on(leader, list, logp);
    cluster_serves("held", "after-other-ports");

    /* 2. The same ports too. */
    snprintf(logp, sizeof logp, "%s/second-same-ports.log", C.root);
    second_batond_refused_on(leader, NULL, logp);
    cluster_serves("held", "after-same-ports");

    /* 3. A restore into the running leader's directory. */
    snprintf(snap, sizeof snap, "%s/backup.snap", C.root);
    ASSERT_EQ(cluster_ctl(&C, &r, "snapshot", "save", snap, NULL), 0);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_restore(&C, leader, snap, C.nodes[leader].dir), 1);
    in_use_message(leader, msg, sizeof msg);
    file_says(C.nodes[leader].log, "--restore: ");
    file_says(C.nodes[leader].log, msg);
    lock_file_holds_pid(leader);
    cluster_serves("held", "after-restore");
    /* ... while a missing or an empty directory is restored into. */
    snprintf(dir, sizeof dir, "%s/restored-missing", C.root);
    restore_works(snap, dir);
    snprintf(dir, sizeof dir, "%s/restored-empty", C.root);
    ASSERT_EQ(mkdir(dir, 0700), 0);
    restore_works(snap, dir);

    /* The leader is unharmed: stopped, then started alone, its raft log
     * holds every entry it had applied. */
    ASSERT_EQ(cluster_node_status(&C, leader, &before, 5000), 0);
    ASSERT_EQ(cluster_kill(&C, leader, SIGTERM), 0);
    j = (leader + 1) % 3;
    k = (leader + 2) % 3;
    ASSERT_EQ(cluster_kill(&C, j, SIGKILL), 128 + SIGKILL);
    ASSERT_EQ(cluster_kill(&C, k, SIGTERM), 0);
    ASSERT_EQ(cluster_restart(&C, leader), 0);
    ASSERT_EQ(cluster_node_status(&C, leader, &alone, 5000), 0);
    if (alone.last_index < before.applied_index)
        FAIL("started alone, node %d's raft log ends at %llu, below the %llu it had applied",
             leader + 1, (unsigned long long)alone.last_index,
             (unsigned long long)before.applied_index);
    lock_file_holds_pid(leader);

    /* The killed node's stale lock file is no obstacle. */
    ASSERT_EQ(cluster_restart(&C, j), 0);
    lock_file_holds_pid(j);
    ASSERT_EQ(cluster_restart(&C, k), 0);
    ASSERT_GE(cluster_wait_leader(&C, 15000), 0);
    ASSERT_EQ(cluster_wait_caught_up(&C, leader, 30000), 0);
    ASSERT_EQ(cluster_digests_agree(&C, 30000), 0);
    ASSERT_EQ(cluster_lock_i64(&C, "held", "fence"), (int64_t)fence);
    ASSERT_EQ(baton_unlock(held), 0);
    baton_close(holder);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* ---- raft start failures ---------------------------------------------- */

/* batond on a fresh directory in dir with --cluster `cluster` (node 1)
 * must exit `code` and say `why`. */
static void start_fails(const char *dir, const char *name, const char *cluster, int code,
                        const char *why)
{
    char data[PATH_MAX + 32], logp[PATH_MAX + 32];
    const char *build = getenv("BATON_BUILD");
    const char *args[] = {"--id", "1", "--data", data, "--cluster", cluster, NULL};

    snprintf(data, sizeof data, "%s/%s", dir, name);
    snprintf(logp, sizeof logp, "%s/%s.log", dir, name);
    ASSERT_EQ(run_batond(build && *build ? build : "build/default", args, logp), code);
    file_says(logp, why);
}

TEST(raft_start_failures_say_why)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    char dir[PATH_MAX], list[256], why[128];
    int taken, ports[3];

    snprintf(dir, sizeof dir, "%s/raft-start", suite_dir());
    ASSERT_EQ(mkdir(dir, 0700), 0);
    ASSERT_EQ(cluster_free_ports(ports, 3), 0);

    /* A raft port another process listens on (this one). */
    taken = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(taken, 0);
    ASSERT_EQ(bind(taken, (struct sockaddr *)&a, sizeof a), 0);
    ASSERT_EQ(listen(taken, 1), 0);
    ASSERT_EQ(getsockname(taken, (struct sockaddr *)&a, &len), 0);
    snprintf(list, sizeof list, "1=127.0.0.1:%d/127.0.0.1:%d", ntohs(a.sin_port), ports[0]);
    snprintf(why, sizeof why,
             "raft start: cannot listen for raft on 127.0.0.1:%d: address already in use",
             ntohs(a.sin_port));
    start_fails(dir, "in-use", list, 1, why);
    close(taken);

    /* An address of no interface here. */
    snprintf(list, sizeof list, "1=192.0.2.1:%d/127.0.0.1:%d", ports[1], ports[0]);
    snprintf(why, sizeof why,
             "raft start: cannot listen for raft on 192.0.2.1:%d: address not available (not "
             "an address of this host)",
             ports[1]);
    start_fails(dir, "not-local", list, 1, why);

    /* A name that does not resolve. */
    snprintf(list, sizeof list, "1=nosuchhost.invalid:%d/127.0.0.1:%d", ports[1], ports[0]);
    snprintf(why, sizeof why,
             "raft start: raft address 'nosuchhost.invalid:%d': cannot resolve "
             "nosuchhost.invalid",
             ports[1]);
    start_fails(dir, "no-name", list, 1, why);

    /* Two members, one raft address. */
    snprintf(list, sizeof list, "1=127.0.0.1:%d/127.0.0.1:%d,2=127.0.0.1:%d/127.0.0.1:%d",
             ports[1], ports[0], ports[1], ports[2]);
    snprintf(why, sizeof why, "--cluster: members 1 and 2 have the same raft address "
                              "'127.0.0.1:%d'",
             ports[1]);
    start_fails(dir, "duplicate", list, 2, why);
    rm_rf(dir);
}

int main(int argc, char **argv)
{
    int rv;

    runner_init(argc, argv);
    runner_set_timeout(240);
    signal(SIGPIPE, SIG_IGN);
    suite_dir_init("baton-datadir");
    RUN(second_batond_refused);
    RUN(raft_start_failures_say_why);
    rv = runner_done();
    suite_dir_done();
    return rv;
}
