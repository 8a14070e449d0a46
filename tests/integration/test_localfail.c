/*
 * test_localfail.c -- a leader that cannot do its part, on three real
 * batond processes (raft/node.c, "local failures"; docs/operations.md,
 * "Disk full").
 *
 * leader_log_write_fails: the leader's write of a client's ACQUIRE to its
 * raft log fails (tests/shim/failwrite.so, preloaded into every node, fails
 * one write when the test drops a trigger file into the leader's data
 * directory). The entry already went to the followers, so its outcome is
 * unknown, not failed: the client must learn the real one. Checks that the
 * lock call succeeds (before, the client got BATON_EIO for a lock the
 * cluster then granted it), that the lock is held by the client's session
 * with the fence it was told, that the leader exits with status 74 and says
 * why in its log, that another node leads and serves, and that after a
 * restart the three nodes agree on the state digest.
 *
 * leader_store_cannot_grow: node 1's lock store lives on a 12 MiB tmpfs
 * (its map is 8 MiB and cannot grow by 8 MiB more), node 1 is made leader,
 * and four clients take locks until the store fills. The apply of the
 * entry that needs the growth fails on the leader; before, libraft 0.15
 * retried it at every commit, the keepalive rounds behind it never
 * applied, and the cluster stalled for good without an election. Checks
 * that every lock call still succeeds (the clients' ops continue), that
 * node 1 steps down and reports the fault (STATUS: FAULT_APPLY,
 * BATON_ENOSPC; batonctl status's warning; its log), that another node
 * leads, and that after the tmpfs is enlarged and node 1 restarted it
 * catches up to the same state digest. Mounting needs root; without it the
 * case is skipped with a message.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "baton/baton.h"
#include "baton/baton_defs.h"
#include "proto/msg.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/files.h"
#include "tests/lib/runner.h"

#define EXIT_FAULT 74 /* BATON_EXIT_FAULT (server/server_int.h) */

static struct cluster C;

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

static void touch(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

    if (fd < 0) FAIL("create %s: %s", path, strerror(errno));
    close(fd);
}

/* The lock is held by session `session` with fence `fence`. */
static void held_by(const char *name, uint64_t session, uint64_t fence)
{
    ASSERT_UEQ((uint64_t)cluster_lock_i64(&C, name, "holder_session"), session);
    ASSERT_UEQ((uint64_t)cluster_lock_i64(&C, name, "fence"), fence);
}

/* ---- the leader's raft log write fails -------------------------------- */

static void preload_shim(void)
{
    const char *build = getenv("BATON_BUILD");
    char rel[PATH_MAX], abs[PATH_MAX], asan[512];
    const char *prev = getenv("ASAN_OPTIONS");

    snprintf(rel, sizeof rel, "%s/tests/shim/failwrite.so",
             build && *build ? build : "build/default");
    if (realpath(rel, abs) == NULL)
        FAIL("%s: %s (make build-tests builds it)", rel, strerror(errno));
    setenv("LD_PRELOAD", abs, 1);
    /* An ASan batond wants its runtime first among the libraries. */
    snprintf(asan, sizeof asan, "%s%sverify_asan_link_order=0", prev ? prev : "",
             prev && *prev ? ":" : "");
    setenv("ASAN_OPTIONS", asan, 1);
}

TEST(leader_log_write_fails)
{
    char trigger[PATH_MAX + 32];
    baton_t *b;
    baton_lock_t *l = NULL, *again = NULL;
    int leader, next, rv, code;

    preload_shim();
    ASSERT_EQ(cluster_start(&C, 3), 0);
    unsetenv("LD_PRELOAD"); /* only the nodes */
    leader = cluster_wait_leader(&C, 15000);
    ASSERT_GE(leader, 0);
    b = client("logfail");
    ASSERT_EQ(baton_lock(b, "warm", &l), 0);
    ASSERT_EQ(baton_unlock(l), 0);

    /* The leader's next log write -- this ACQUIRE's entry -- fails. */
    snprintf(trigger, sizeof trigger, "%s/fail-log-write", C.nodes[leader].dir);
    touch(trigger);
    rv = baton_lock_timeout(b, "x", 30000, &l);
    if (rv != 0)
        FAIL("lock whose log write failed on the leader: %s (%s): an outcome the cluster had "
             "not decided was reported as final",
             baton_err_name(rv), baton_errmsg(b));
    ASSERT(access(trigger, F_OK) != 0); /* the write did fail */
    fprintf(stderr, "# lock x granted with fence %llu\n", (unsigned long long)baton_lock_fence(l));

    /* The leader stopped and exits so that another node leads. */
    code = cluster_wait_exit(&C, leader, 20000);
    if (code != EXIT_FAULT) FAIL("node %d: exit status %d, not %d", leader + 1, code, EXIT_FAULT);
    ASSERT(cluster_log_says(&C, leader, "I/O error on the raft log", 0));
    next = cluster_wait_leader(&C, 15000);
    ASSERT_GE(next, 0);
    ASSERT_NE(next, leader);

    /* The grant the client was told of is the cluster's. */
    held_by("x", baton_session_id(b), baton_lock_fence(l));
    ASSERT_EQ(baton_unlock(l), 0);
    ASSERT_EQ(cluster_lock_i64(&C, "x", "holder_session"), 0);
    ASSERT_EQ(baton_trylock(b, "x", &again), 0);
    ASSERT_EQ(baton_unlock(again), 0);

    /* Restarted, the node catches up: nothing diverged. */
    ASSERT_EQ(cluster_restart(&C, leader), 0);
    ASSERT_EQ(cluster_digests_agree(&C, 30000), 0);
    baton_close(b);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* ---- the leader's store cannot grow ----------------------------------- */

#define FILLERS 4
#define FILL_MAX 12000 /* locks per filler at most (a session may own 10,000) */
#define AFTER 100      /* locks per filler once the fault is seen */

struct filler {
    pthread_t th;
    int id;
    baton_t *b;
    baton_lock_t **held; /* the locks taken, FILL_MAX slots */
    int done;          /* locks taken */
    int err;           /* the first failure, 0 if none */
    char errmsg[256];
};

static volatile int fault_seen, stop_fill;

static void *fill(void *arg)
{
    struct filler *f = arg;
    char name[BATON_MAX_NAME];
    int after = 0;

    for (int i = 0; i < FILL_MAX && !stop_fill && after < AFTER; i++) {
        baton_lock_t *l = NULL;
        int rv;

        /* Long names: each lock takes about 1 KB of the store. */
        memset(name, 'n', 240);
        snprintf(name, 32, "f%d-%06d", f->id, i);
        name[strlen(name)] = '-';
        name[240] = '\0';
        rv = baton_trylock(f->b, name, &l);
        if (rv != 0) {
            f->err = rv;
            snprintf(f->errmsg, sizeof f->errmsg, "%s", baton_errmsg(f->b));
            return NULL;
        }
        f->held[f->done++] = l;
        if (fault_seen) after++;
    }
    return NULL;
}

/* The small filesystem of leader_store_cannot_grow, mounted by main (so
 * that it is unmounted however the test ends); "" if it could not be. */
static char mnt[64];
static const char *mnt_skip = "not tried";

/* Move node i's store (node i is stopped) onto the small tmpfs: its
 * directory becomes a symbolic link there, which batond follows and the
 * harness's clean-up removes without following. */
static void store_on_tmpfs(int i)
{
    char fsm[PATH_MAX + 8], save[PATH_MAX + 16], cmd[3 * PATH_MAX];

    snprintf(fsm, sizeof fsm, "%s/fsm", C.nodes[i].dir);
    snprintf(save, sizeof save, "%s/fsm.save", C.nodes[i].dir);
    if (rename(fsm, save) != 0) FAIL("rename %s: %s", fsm, strerror(errno));
    snprintf(cmd, sizeof cmd, "cp -p '%s'/* '%s'/", save, mnt);
    if (system(cmd) != 0) FAIL("%s failed", cmd);
    if (symlink(mnt, fsm) != 0) FAIL("symlink %s: %s", fsm, strerror(errno));
}

TEST(leader_store_cannot_grow)
{
    struct filler fl[FILLERS];
    struct cluster_status st;
    struct ctl_result r;
    const int x = 0; /* the node whose store cannot grow */
    int leader, total = 0;
    int64_t deadline;

    if (mnt[0] == '\0') {
        printf("# SKIP leader_store_cannot_grow: %s\n", mnt_skip);
        return;
    }
    ASSERT_EQ(cluster_start(&C, 3), 0);
    ASSERT_GE(cluster_wait_leader(&C, 15000), 0);
    ASSERT_EQ(cluster_kill(&C, x, SIGTERM), 0);
    store_on_tmpfs(x);
    ASSERT_EQ(cluster_restart(&C, x), 0);

    /* Node 1 leads. */
    deadline = now_ms() + 30000;
    while ((leader = cluster_wait_leader(&C, 15000)) != x && now_ms() < deadline) {
        cluster_ctl(&C, &r, "transfer-leader", "1", NULL);
        ctl_result_free(&r);
        sleep_ms(200);
    }
    ASSERT_EQ(leader, x);

    /* Fill its store while watching for the fault. */
    for (int i = 0; i < FILLERS; i++) {
        char name[32];
        snprintf(name, sizeof name, "filler%d", i);
        memset(&fl[i], 0, sizeof fl[i]);
        fl[i].id = i;
        fl[i].b = client(name);
        fl[i].held = calloc(FILL_MAX, sizeof *fl[i].held);
        ASSERT(fl[i].held != NULL);
        ASSERT_EQ(pthread_create(&fl[i].th, NULL, fill, &fl[i]), 0);
    }
    deadline = now_ms() + 120000;
    while (!fault_seen && now_ms() < deadline) {
        int busy = 0;
        if (cluster_node_status(&C, x, &st, 5000) == 0 && st.fault != 0) fault_seen = 1;
        for (int i = 0; i < FILLERS; i++) busy |= fl[i].err == 0 && fl[i].done < FILL_MAX;
        if (!busy) break;
        sleep_ms(100);
    }
    if (!fault_seen) stop_fill = 1;
    for (int i = 0; i < FILLERS; i++) {
        pthread_join(fl[i].th, NULL);
        total += fl[i].done;
    }
    fprintf(stderr, "# %d locks taken; the fault %s\n", total, fault_seen ? "was seen" : "was not");
    for (int i = 0; i < FILLERS; i++)
        if (fl[i].err != 0)
            FAIL("filler %d: lock %d failed: %s (%s): the cluster stopped serving", i, fl[i].done,
                 baton_err_name(fl[i].err), fl[i].errmsg);
    if (!fault_seen) FAIL("node 1's store never failed to grow (%d locks)", total);

    /* Node 1 reports why it stopped, and someone else leads. */
    ASSERT_EQ(cluster_node_status(&C, x, &st, 5000), 0);
    fprintf(stderr, "# node 1: role %d, fault %d (%s) at entry %llu\n", st.role, st.fault,
            baton_err_name(st.fault), (unsigned long long)st.fault_index);
    ASSERT_EQ(st.fault_kind, FAULT_APPLY);
    ASSERT_EQ(st.fault, BATON_ENOSPC);
    ASSERT_NE(st.role, ROLE_LEADER);
    leader = cluster_wait_leader(&C, 15000);
    ASSERT_GE(leader, 0);
    ASSERT_NE(leader, x);
    ASSERT(cluster_log_says(&C, x, "on the leader: it stops serving", 0));
    ASSERT_EQ(cluster_ctl(&C, &r, "status", NULL), 0);
    fprintf(stderr, "%s", r.out);
    ASSERT(strstr(r.out, "WARNING: node 1: applying entry") != NULL);
    ctl_result_free(&r);

    /* Room again, and a restart: node 1 catches up, and the fault is gone. */
    if (mount("tmpfs", mnt, "tmpfs", MS_REMOUNT, "size=96m,mode=0700") != 0)
        FAIL("remount %s: %s", mnt, strerror(errno));
    ASSERT_EQ(cluster_restart(&C, x), 0);
    ASSERT_EQ(cluster_digests_agree(&C, 60000), 0);
    ASSERT_EQ(cluster_node_status(&C, x, &st, 5000), 0);
    ASSERT_EQ(st.fault, 0);
    for (int i = 0; i < FILLERS; i++) {
        baton_close(fl[i].b);
        for (int j = 0; j < fl[i].done; j++) baton_unlock(fl[i].held[j]); /* frees them */
        free(fl[i].held);
    }
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* A 12 MiB tmpfs for node 1's store: its 8 MiB map fits, the next 8 MiB
 * do not. */
static void mount_small(void)
{
    if (geteuid() != 0) {
        mnt_skip = "mounting a small tmpfs needs root";
        return;
    }
    if (tmpdir_make(mnt, sizeof mnt, "baton-localfail") != 0) {
        mnt[0] = '\0';
        mnt_skip = "no mount point";
        return;
    }
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=12m,mode=0700") != 0) {
        fprintf(stderr, "# cannot mount a tmpfs on %s: %s\n", mnt, strerror(errno));
        rmdir(mnt);
        mnt[0] = '\0';
        mnt_skip = "mounting a tmpfs is not permitted here";
    }
}

int main(int argc, char **argv)
{
    int failed;

    runner_init(argc, argv);
    runner_set_timeout(300);
    signal(SIGPIPE, SIG_IGN);
    mount_small();
    RUN(leader_log_write_fails);
    RUN(leader_store_cannot_grow);
    failed = runner_done();
    if (mnt[0] != '\0') {
        if (umount2(mnt, MNT_DETACH) != 0)
            fprintf(stderr, "# umount %s: %s\n", mnt, strerror(errno));
        rmdir(mnt);
    }
    return failed;
}
