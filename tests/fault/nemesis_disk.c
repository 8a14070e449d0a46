/*
 * nemesis_disk.c -- slow and failing disks, one node at a time, through
 * shim_disk.so: every node runs with it preloaded and a control file of
 * its own, DIR/disk-ID.ctl in the run's log directory (shim_disk.c has
 * what it does to which calls).
 *
 *   disk-slow         a node -- the leader one time in two -- takes 20-250
 *                     ms more for every write and sync of its data, for 2-6 s
 *   disk-fail         a follower fails every write and sync of its data
 *                     with EIO (ENOSPC one time in three), for 1-4 s; a raft
 *                     log write fails after it was done (its bytes may be on
 *                     disk): the outcome is unknown to the node
 *   disk-fail-leader  the same on the leader
 *
 * A node may exit on a write it cannot recover from: batond's documented
 * way out of an I/O error, which says "I/O error" in its log. The harness
 * restarts it as it restarts a killed leader, and counts it apart
 * (io_exits, "exited on an I/O error") -- but only a node that exits (not
 * one a signal killed: SIGSEGV, SIGABRT) while its disk fails or within
 * DISK_GRACE_MS after, and whose log since it last started has a line with
 * "I/O error". Any other death is a crash, a harness failure. The checker
 * stays the judge of safety: 0 violations.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tests/fault/flog.h"
#include "tests/fault/nemesis.h"
#include "tests/lib/files.h"

#define DISK_GRACE_MS 10000
#define START_MARK "=== cluster harness: starting node" /* cluster.c, spawn_node */

static void ctl_path(const struct run *r, int i, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/disk-%d.ctl", r->dir, i + 1);
}

/* Write node i's control file (a new file renamed over the old one, so the
 * shim never reads half a line). 0 or -1. */
static int disk_set(struct run *r, int i, const char *line)
{
    char path[PATH_MAX + 32], tmp[PATH_MAX + 40];
    FILE *f;

    ctl_path(r, i, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if ((f = fopen(tmp, "w")) == NULL) return -1;
    fprintf(f, "%s\n", line);
    if (fclose(f) != 0 || rename(tmp, path) != 0) return -1;
    return 0;
}

int disk_setup(struct run *r)
{
    char so[PATH_MAX + 32];

    snprintf(so, sizeof so, "%s/shim_disk.so", r->tools);
    r->disk_node = -1;
    for (int i = 0; i < CLUSTER_MAX_NODES; i++) {
        char path[PATH_MAX + 32];

        if (disk_set(r, i, "ok") != 0) return -1;
        ctl_path(r, i, path, sizeof path);
        preload_env(so, r->node_env_buf[i][0], sizeof r->node_env_buf[i][0],
                    r->node_env_buf[i][1], sizeof r->node_env_buf[i][1]);
        snprintf(r->node_env_buf[i][2], sizeof r->node_env_buf[i][2], "BATON_FAULT_DISK_CTL=%s",
                 path);
        for (int k = 0; k < 3; k++) r->node_env[i][k] = r->node_env_buf[i][k];
        r->node_env[i][3] = NULL;
    }
    return 0;
}

int disk_exit_expected(struct run *r, int i)
{
    enum { WINDOW = 65536 };
    static char tail[WINDOW + 1];
    const char *since, *p;

    /* Exited, not killed by a signal: a crash (SIGSEGV, SIGABRT) is never
     * the documented way out, whatever its log said before. */
    if (i != r->disk_node || now_us() > r->disk_grace_us || r->c.nodes[i].exit_code < 0)
        return 0;
    if (read_tail(r->c.nodes[i].log, tail, sizeof tail) < 0) return 0;
    /* Only what it said since it last started. */
    for (since = tail; (p = strstr(since, START_MARK)) != NULL; since = p + 1) {
    }
    return strstr(since, "I/O error") != NULL;
}

void fault_disk(struct run *r, enum fault_kind k, int l)
{
    int i = k == F_DISK_FAIL_LEADER ? l
            : k == F_DISK_FAIL      ? other_node(r, l)
            : run_rand(r, 0, 1)     ? l
                                    : other_node(r, l),
        err;
    unsigned ms, dur;
    char line[32];

    if (i < 0) return;
    if (k == F_DISK_SLOW) {
        ms = (unsigned)run_rand(r, 20, 250);
        dur = (unsigned)run_rand(r, 2000, 6000);
        snprintf(line, sizeof line, "delay %u", ms);
        note(r, "FAULT", "disk-slow node %u%s: +%u ms per write and sync for %u ms",
             r->c.nodes[i].id, i == l ? " (leader)" : "", ms, dur);
    } else {
        err = run_rand(r, 0, 2) == 0 ? ENOSPC : EIO;
        dur = (unsigned)run_rand(r, 1000, 4000);
        snprintf(line, sizeof line, "fail %d", err);
        note(r, "FAULT", "%s node %u: every write and sync fails with %s for %u ms",
             fault_names[k], r->c.nodes[i].id, err == EIO ? "EIO" : "ENOSPC", dur);
    }
    r->disk_node = i;
    r->disk_grace_us = INT64_MAX;
    if (disk_set(r, i, line) != 0) {
        note(r, "NOTE", "cannot write node %u's disk control file", r->c.nodes[i].id);
        r->harness_errors++;
    }
    sleep_ms(dur);
    if (disk_set(r, i, "ok") != 0) {
        note(r, "NOTE", "cannot write node %u's disk control file", r->c.nodes[i].id);
        r->harness_errors++;
    }
    r->disk_grace_us = now_us() + DISK_GRACE_MS * 1000;
    note(r, "HEAL", "%s node %u: its disk works again", fault_names[k], r->c.nodes[i].id);
    /* Reap and restart the node now if it exited (leader() does). */
    sleep_ms(500);
    leader(r, 15000);
}
