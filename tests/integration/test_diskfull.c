/*
 * test_diskfull.c -- the data directories' filesystem runs full while a
 * client writes, on three real batond processes.
 *
 * main() mounts a small tmpfs (160 MiB) and points $TMPDIR at it, so that
 * the cluster harness puts all three nodes' data there; the nodes run with
 * --min-free-mb 24. The test then fills the filesystem with a filler file,
 * step by step, locking and unlocking between the steps, and checks:
 *  - once free space is below the floor plus the lock store's next growth
 *    step (8 MiB for its 8 MiB map), writes that grow the state
 *    (lock, trylock) fail at once with BATON_ENOSPC and a message that says
 *    why (no hang, no other error), while a release still goes through: a
 *    lock taken before the disk filled is unlocked below the floor;
 *  - below the floor, a raw session's RELEASEs of a lock it does not hold
 *    and CANCELs of no wait -- each would only add a cached result -- are
 *    refused with ERROR(BATON_ENOSPC), however many it sends, while its
 *    release of a lock it holds goes through and a re-send of that release
 *    is answered from its cached result;
 *  - with the filesystem completely full, the same, and every node stays
 *    up and answers STATUS, and the session stays alive (keepalives);
 *  - after the filler is deleted, writes succeed again without a restart;
 *  - nothing was corrupted: the three nodes reach the same applied index
 *    with the same state digest, also after a node is restarted on its
 *    data.
 * Mounting needs root (CAP_SYS_ADMIN); without it, or where mounting is not
 * permitted, the test is skipped with a message saying why.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "baton/baton.h"
#include "baton/baton_defs.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/files.h"
#include "tests/lib/runner.h"
#include "tests/lib/tls_sock.h"

#define FS_SIZE "160m"
#define FLOOR_MB 24

static char mnt[64];
static struct cluster C;
static const char *const EXTRA[] = {"--min-free-mb", "24", NULL};

static uint64_t free_bytes(void)
{
    struct statvfs sv;
    if (statvfs(mnt, &sv) != 0) FAIL("statvfs %s: %s", mnt, strerror(errno));
    return (uint64_t)sv.f_bavail * sv.f_frsize;
}

/* Append to the filler file until at most `target` bytes are free (or the
 * filesystem refuses more), at most `step` bytes per call. Returns the
 * bytes written. */
static uint64_t fill(uint64_t target, uint64_t step)
{
    static char chunk[1 << 20];
    char path[128];
    uint64_t written = 0;
    int fd;

    memset(chunk, 'f', sizeof chunk);
    snprintf(path, sizeof path, "%s/filler", mnt);
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) FAIL("open %s: %s", path, strerror(errno));
    while (written < step && free_bytes() > target) {
        uint64_t room = free_bytes() - target;
        size_t n = room < sizeof chunk ? (size_t)room : sizeof chunk;
        ssize_t w = write(fd, chunk, n);
        if (w <= 0) break; /* ENOSPC: full */
        written += (uint64_t)w;
    }
    close(fd);
    return written;
}

static baton_t *client(void)
{
    baton_opts o = {.endpoints = cluster_endpoints(&C), .client_name = "diskfull",
                    .connect_timeout_ms = 15000, .op_timeout_ms = 10000,
                    .session_ttl_ms = 30000};
    baton_t *b = NULL;
    int rv = baton_connect(&o, &b);

    if (rv != 0) FAIL("baton_connect: %s: %s", baton_err_name(rv), baton_connect_errmsg());
    return b;
}

/* Lock and unlock `name`; returns 0 or the error of the lock. */
static int write_once(baton_t *b, const char *name)
{
    baton_lock_t *l = NULL;
    int rv = baton_lock_timeout(b, name, 5000, &l);

    if (rv == 0) {
        rv = baton_unlock(l);
        if (rv != 0) FAIL("unlock %s: %s", name, baton_err_name(rv));
    }
    return rv;
}

/* A raw connection to node i, through HELLO. */
static void raw_open(struct tls_sock *s, int i)
{
    struct tls_sock_cfg cfg;

    cluster_sock_cfg(&C, &cfg);
    if (tls_sock_connect(s, C.nodes[i].client_port, &cfg, 5000) != 0) FAIL("%s", s->err);
    ASSERT_EQ(tls_sock_hello(s, NULL, NULL), 0);
}

/* Send a session op of `type` and return the answer's code (an ERROR's,
 * or a RESULT's status); the RESULT's value goes to *value. */
static int raw_op(struct tls_sock *s, uint16_t type, struct msg_op op, uint64_t *value)
{
    static uint64_t req_id = 1000;
    struct msg m = {.type = type, .req_id = ++req_id}, r;
    int code;

    m.u.op = op;
    m.u.op.lock.n = (uint16_t)strlen(op.lock.p);
    if (tls_sock_request(s, &m, &r, 10000) != 0) FAIL("%s: %s", msg_type_name(type), s->err);
    code = tls_sock_status(&r);
    if (r.type != MSG_RESULT && r.type != MSG_ERROR)
        FAIL("%s: answered %s", msg_type_name(type), msg_type_name(r.type));
    if (value != NULL) *value = r.type == MSG_RESULT ? r.u.result.value : 0;
    msg_free(&r);
    return code;
}

static void all_alive(void)
{
    for (int i = 0; i < C.n; i++) {
        struct cluster_status st;
        if (kill(C.nodes[i].pid, 0) != 0) FAIL("node %d is gone", i + 1);
        if (cluster_node_status(&C, i, &st, 10000) != 0) FAIL("node %d does not answer STATUS", i + 1);
    }
}

TEST(disk_full)
{
    struct cluster_opts o = {.extra_args = EXTRA};
    int64_t deadline;
    int rv = 0, ok_writes = 0, refused = 0, leader;
    char path[128];
    baton_t *b;
    baton_lock_t *held = NULL;
    struct tls_sock raw;
    struct msg m = {.type = MSG_OPEN_SESSION, .req_id = 2}, r;
    struct msg_op op = {.ack_below = 1, .lock = {"raw-held", 0}};
    uint64_t raw_fence;

    ASSERT_EQ(cluster_start_opts(&C, 3, &o), 0);
    leader = cluster_wait_leader(&C, 15000);
    ASSERT_GE(leader, 0);
    b = client();
    for (int i = 0; i < 20; i++) ASSERT_EQ(write_once(b, "before"), 0);
    ASSERT_EQ(baton_lock(b, "held-across", &held), 0);
    /* A raw session on the leader, holding "raw-held" (seq 1). */
    raw_open(&raw, leader);
    m.u.open_session.ttl_ms = 120000;
    if (tls_sock_request(&raw, &m, &r, 10000) != 0) FAIL("OPEN_SESSION: %s", raw.err);
    ASSERT_EQ(r.type, MSG_SESSION);
    op.session = r.u.session.session;
    msg_free(&r);
    op.seq = 1;
    ASSERT_EQ(raw_op(&raw, MSG_ACQUIRE, op, &raw_fence), 0);
    fprintf(stderr, "# %.1f MiB free with the cluster running\n", (double)free_bytes() / 1048576);
    ASSERT_GT(free_bytes(), (uint64_t)(FLOOR_MB + 8) << 20);

    /* Above the floor but below the floor plus the lock store's next
     * growth (its map is 8 MiB, and grows by 8 MiB more): refused already,
     * since a store whose map filled up now could not grow on this disk,
     * and could not apply the entry that filled it. */
    fill(((uint64_t)FLOOR_MB + 4) << 20, UINT64_MAX);
    fprintf(stderr, "# filled to %.1f MiB free: between the floor and the floor plus a growth\n",
            (double)free_bytes() / 1048576);
    ASSERT_GT(free_bytes(), (uint64_t)FLOOR_MB << 20);
    deadline = now_ms() + 10000;
    while ((rv = write_once(b, "above-floor")) == 0 && now_ms() < deadline) sleep_ms(100);
    if (rv != BATON_ENOSPC)
        FAIL("%.1f MiB free, less than the floor plus the store's growth: %s, not BATON_ENOSPC",
             (double)free_bytes() / 1048576, baton_err_name(rv));
    fprintf(stderr, "# %s\n", baton_errmsg(b));
    ASSERT(strstr(baton_errmsg(b), "growth") != NULL);

    /* Fill in 4 MiB steps while writing: every write either succeeds or,
     * once below the floor, fails with ENOSPC. */
    while (free_bytes() > ((uint64_t)FLOOR_MB << 20) / 2) {
        fill(((uint64_t)FLOOR_MB << 20) / 2, 4 << 20);
        rv = write_once(b, "filling");
        if (rv == 0)
            ok_writes++;
        else if (rv == BATON_ENOSPC)
            refused++;
        else
            FAIL("write while filling: %s (%s)", baton_err_name(rv), baton_errmsg(b));
    }
    fprintf(stderr, "# filled to %.1f MiB free: %d writes went through, %d refused\n",
            (double)free_bytes() / 1048576, ok_writes, refused);

    /* Below the floor: refused at once, with the reason. */
    deadline = now_ms() + 10000;
    while ((rv = write_once(b, "below-floor")) == 0 && now_ms() < deadline) sleep_ms(100);
    if (rv != BATON_ENOSPC) FAIL("below the floor: %s, not BATON_ENOSPC", baton_err_name(rv));
    fprintf(stderr, "# %s\n", baton_errmsg(b));
    ASSERT(strstr(baton_errmsg(b), "data disk") != NULL); /* the node's own reason */
    {
        baton_lock_t *l = NULL;
        ASSERT_EQ(baton_trylock(b, "try", &l), BATON_ENOSPC);
    }
    /* A release gives something back and is never refused. */
    ASSERT_EQ(baton_unlock(held), 0);
    /* One that frees nothing would add a cached result: refused, every
     * time; so is a CANCEL of no wait. The raw session's release of its
     * lock goes through, and so does its re-send (answered from the
     * cache); a second release of it frees nothing any more. */
    op.lock.p = "not-held";
    op.fence = 12345;
    for (op.seq = 2; op.seq < 202; op.seq++)
        ASSERT_EQ(raw_op(&raw, MSG_RELEASE, op, NULL), BATON_ENOSPC);
    op.waiter = 77;
    ASSERT_EQ(raw_op(&raw, MSG_CANCEL, op, NULL), BATON_ENOSPC);
    op.lock.p = "raw-held";
    op.fence = raw_fence;
    ASSERT_EQ(raw_op(&raw, MSG_RELEASE, op, NULL), 0);
    ASSERT_EQ(raw_op(&raw, MSG_RELEASE, op, NULL), 0);
    op.seq++;
    ASSERT_EQ(raw_op(&raw, MSG_RELEASE, op, NULL), BATON_ENOSPC);
    all_alive();

    /* Completely full. */
    fill(0, UINT64_MAX);
    fprintf(stderr, "# filled to %llu bytes free\n", (unsigned long long)free_bytes());
    sleep_ms(500);
    ASSERT_EQ(write_once(b, "full"), BATON_ENOSPC);
    sleep_ms(2000); /* keepalives and heartbeats go on meanwhile */
    all_alive();
    ASSERT_EQ(write_once(b, "full"), BATON_ENOSPC); /* the session is still alive */
    tls_sock_close(&raw);

    /* Space returns: writes go through again, no restart needed. */
    snprintf(path, sizeof path, "%s/filler", mnt);
    ASSERT_EQ(unlink(path), 0);
    deadline = now_ms() + 15000;
    while ((rv = write_once(b, "after")) == BATON_ENOSPC && now_ms() < deadline) sleep_ms(100);
    if (rv != 0) FAIL("after freeing space: %s (%s)", baton_err_name(rv), baton_errmsg(b));
    for (int i = 0; i < 50; i++) ASSERT_EQ(write_once(b, "after"), 0);

    /* Nothing diverged or broke, also across a restart from the data. */
    ASSERT_EQ(cluster_digests_agree(&C, 30000), 0);
    ASSERT_EQ(cluster_restart(&C, (leader + 1) % C.n), 0);
    ASSERT_EQ(write_once(b, "restarted"), 0);
    ASSERT_EQ(cluster_digests_agree(&C, 30000), 0);
    all_alive();
    baton_close(b);
    ASSERT_EQ(cluster_stop(&C), 0);
}

int main(int argc, char **argv)
{
    int failed;

    runner_init(argc, argv);
    runner_set_timeout(180);
    if (geteuid() != 0) {
        printf("# SKIP disk_full: mounting a small tmpfs needs root\n");
        return runner_done();
    }
    if (tmpdir_make(mnt, sizeof mnt, "baton-diskfull") != 0) {
        printf("# SKIP disk_full: no mount point: %s\n", strerror(errno));
        return runner_done();
    }
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=" FS_SIZE ",mode=0700") != 0) {
        printf("# SKIP disk_full: cannot mount a tmpfs on %s: %s\n", mnt, strerror(errno));
        rmdir(mnt);
        return runner_done();
    }
    setenv("TMPDIR", mnt, 1);
    RUN(disk_full);
    failed = runner_done();
    if (umount2(mnt, MNT_DETACH) != 0) fprintf(stderr, "# umount %s: %s\n", mnt, strerror(errno));
    rmdir(mnt);
    return failed;
}
