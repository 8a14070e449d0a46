/*
 * test_cluster_id.c -- a cluster's identity against real batond processes
 * (raft/cluster_id.h, raft/restore.h; docs/operations.md, "Cluster
 * identity" and "Backup and restore").
 *
 *  - empty_node_beside_restored_ones: a backup restored onto 2 of 3 nodes,
 *    the third started empty with the same --cluster. Raft alone cannot
 *    tell the empty node from the restored ones if a restore starts where
 *    a bootstrap does; the empty node then follows the restored leader on
 *    an empty store and, leader in its turn, grants a lock the restored
 *    state holds. Here, over several leader kills, the empty node never
 *    leads, the restored holder's lock is never granted to another
 *    session, every new fence is above the restore's floor, and both sides
 *    log the refusal at the raft handshake.
 *  - empty_node_refused_over_peer_tls: the same refusal, logged on both
 *    sides, when the raft connections are mutual TLS.
 *  - interrupted_restore_does_not_start: a data directory holding the
 *    marker of a restore that did not finish (as a kill leaves it) does
 *    not start, neither as a new cluster nor from what it holds.
 *  - fence_floor: --fence-floor N makes the restored cluster's first fence
 *    N; without it, the first fence is the backup's next one plus 2^40.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "baton/baton.h"
#include "proto/msg.h"
#include "storage/store.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/files.h"
#include "tests/lib/runner.h"

#define TTL_MS 120000 /* no session may expire while the test runs */

static baton_t *connect_as(struct cluster *c, const char *name)
{
    baton_opts o = {.endpoints = cluster_endpoints(c), .client_name = name,
                    .session_ttl_ms = TTL_MS};

    return client_connect(&o);
}

/* Every node of c answers STATUS: started, so that a stop right after
 * finds its signal handlers in place. */
static void wait_nodes(struct cluster *c)
{
    for (int i = 0; i < c->n; i++) ASSERT_EQ(cluster_wait_node(c, i, 15000), 0);
}

/* A cluster of 3 where "held" is held by a session and "free/0" was
 * granted once: saved to path. Returns the highest fence granted. */
static uint64_t saved_cluster(const char *path)
{
    struct cluster a;
    struct ctl_result r;
    baton_t *b;
    baton_lock_t *l, *m;
    uint64_t top;

    ASSERT_EQ(cluster_start(&a, 3), 0);
    ASSERT_GE(cluster_wait_leader(&a, 15000), 0);
    wait_nodes(&a);
    b = connect_as(&a, "holder");
    ASSERT_EQ(baton_lock(b, "held", &l), 0);
    ASSERT_EQ(baton_lock(b, "free/0", &m), 0);
    top = baton_lock_fence(m);
    ASSERT_EQ(baton_unlock(m), 0);
    if (cluster_ctl(&a, &r, "snapshot", "save", path, NULL) != 0)
        FAIL("snapshot save: %s%s", r.out, r.err);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_stop(&a), 0);
    baton_close(b);
    ASSERT_EQ(baton_unlock(l), BATON_ECLOSED); /* frees the handle (baton.h) */
    return top;
}

TEST(empty_node_beside_restored_ones)
{
    static const char *const extra[] = {"--log-level", "info", NULL};
    struct cluster_opts o = {.extra_args = extra, .restore_skip = 1u << 2};
    struct cluster c;
    struct cluster_status st;
    char path[PATH_MAX];
    uint64_t top;
    int refused_local = 0;

    snprintf(path, sizeof path, "%s/backup.snap", suite_dir());
    top = saved_cluster(path);
    o.restore = path;
    ASSERT_EQ(cluster_start_opts(&c, 3, &o), 0);
    for (int round = 0; round < 5; round++) {
        baton_t *b;
        baton_lock_t *l = NULL;
        int leader = cluster_wait_leader(&c, 20000), rv;

        if (leader < 0) FAIL("round %d: no leader", round);
        ASSERT_NE(leader, 2); /* the empty node never leads */
        b = connect_as(&c, "other");
        rv = baton_trylock(b, "held", &l);
        if (rv == 0)
            FAIL("round %d: node %d granted the restored holder's lock again, fence %llu", round,
                 leader + 1, (unsigned long long)baton_lock_fence(l));
        ASSERT_EQ(rv, BATON_EWOULDBLOCK);
        ASSERT_EQ(baton_lock(b, "free/0", &l), 0);
        printf("# round %d: leader node %d, fence %llu (saved up to %llu)\n", round, leader + 1,
               (unsigned long long)baton_lock_fence(l), (unsigned long long)top);
        ASSERT_GT(baton_lock_fence(l), top + STORE_RESTORE_FENCE_MARGIN);
        ASSERT_EQ(baton_unlock(l), 0);
        baton_close(b);
        /* The empty node is not a follower of the restored cluster. */
        if (cluster_node_status(&c, 2, &st, 2000) == 0) {
            ASSERT_NE(st.role, ROLE_LEADER);
            ASSERT_UEQ(st.leader_id, 0);
        }
        /* Kill the leader: its restored peer alone cannot elect one (the
         * empty node is no member of its cluster); the leader comes back. */
        ASSERT_GE(cluster_kill(&c, leader, SIGKILL), 0);
        sleep_ms(1500);
        if (cluster_node_status(&c, 2, &st, 2000) == 0) ASSERT_NE(st.role, ROLE_LEADER);
        ASSERT_EQ(cluster_restart(&c, leader), 0);
    }
    ASSERT(cluster_log_says(&c, 2, "belongs to cluster", 0));
    refused_local = cluster_log_says(&c, 0, "belongs to cluster", 0) ||
                    cluster_log_says(&c, 1, "belongs to cluster", 0);
    ASSERT(refused_local);
    wait_nodes(&c);
    ASSERT_EQ(cluster_stop(&c), 0);
}

/* The same refusal on raft connections secured with mutual TLS (the
 * HELLO's cluster id, raft/peer_hello.h). */
TEST(empty_node_refused_over_peer_tls)
{
    struct cluster_opts o = {.secure = CLUSTER_PEER_TLS, .restore_skip = 1u << 2};
    struct cluster c;
    struct cluster_status st;
    char path[PATH_MAX];
    int64_t deadline;

    snprintf(path, sizeof path, "%s/backup.snap", suite_dir());
    (void)saved_cluster(path);
    o.restore = path;
    ASSERT_EQ(cluster_start_opts(&c, 3, &o), 0);
    ASSERT_GE(cluster_wait_leader(&c, 20000), 0);
    wait_nodes(&c);
    deadline = now_ms() + 10000;
    while (!(cluster_log_says(&c, 2, "belongs to cluster", 0) &&
             (cluster_log_says(&c, 0, "belongs to cluster", 0) ||
              cluster_log_says(&c, 1, "belongs to cluster", 0)))) {
        if (now_ms() > deadline) FAIL("no refusal logged on both sides within 10 s");
        sleep_ms(100);
    }
    ASSERT_EQ(cluster_node_status(&c, 2, &st, 2000), 0);
    ASSERT_NE(st.role, ROLE_LEADER);
    ASSERT_UEQ(st.leader_id, 0);
    ASSERT_EQ(cluster_stop(&c), 0);
}

TEST(interrupted_restore_does_not_start)
{
    struct cluster c;
    char path[PATH_MAX], marker[PATH_MAX + 16];
    int fd;

    snprintf(path, sizeof path, "%s/backup.snap", suite_dir());
    (void)saved_cluster(path);
    ASSERT_EQ(cluster_start(&c, 3), 0);
    ASSERT_GE(cluster_wait_leader(&c, 15000), 0);
    wait_nodes(&c);
    /* Node 3's restore stopped right after its first step: the directory
     * holds the marker and nothing else. */
    ASSERT_GE(cluster_kill(&c, 2, SIGKILL), 0);
    rm_rf(c.nodes[2].dir);
    ASSERT_EQ(mkdir(c.nodes[2].dir, 0755), 0);
    snprintf(marker, sizeof marker, "%s/restoring", c.nodes[2].dir);
    fd = open(marker, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    close(fd);
    ASSERT_EQ(cluster_run_to_exit(&c, 2, 15000), 1);
    ASSERT(cluster_log_says(&c, 2, "holds a restore that did not finish", 0));
    /* A restore into it is refused too: the directory is not empty. */
    ASSERT_EQ(cluster_restore(&c, 2, path, c.nodes[2].dir), 1);
    ASSERT_EQ(cluster_stop(&c), 0);
}

TEST(fence_floor)
{
    struct cluster c;
    char path[PATH_MAX], fresh[PATH_MAX];
    uint64_t top;
    baton_t *b;
    baton_lock_t *l;

    snprintf(path, sizeof path, "%s/backup.snap", suite_dir());
    top = saved_cluster(path);
    /* The default: above the backup's fences by the margin. */
    {
        struct cluster_opts o = {.restore = path};

        ASSERT_EQ(cluster_start_opts(&c, 3, &o), 0);
        ASSERT_GE(cluster_wait_leader(&c, 20000), 0);
        wait_nodes(&c);
        b = connect_as(&c, "after");
        ASSERT_EQ(baton_lock(b, "new", &l), 0);
        printf("# first fence %llu, saved up to %llu\n", (unsigned long long)baton_lock_fence(l),
               (unsigned long long)top);
        ASSERT_GT(baton_lock_fence(l), top + STORE_RESTORE_FENCE_MARGIN);
        ASSERT_EQ(baton_unlock(l), 0);
        baton_close(b);
        ASSERT_EQ(cluster_stop(&c), 0);
    }
    /* A floor above that: the first fence is the floor. */
    ASSERT_EQ(cluster_start(&c, 3), 0);
    ASSERT_GE(cluster_wait_leader(&c, 15000), 0);
    wait_nodes(&c);
    for (int i = 0; i < 3; i++) ASSERT_GE(cluster_kill(&c, i, SIGTERM), 0);
    for (int i = 0; i < 3; i++) {
        char cmd[PATH_MAX * 5 + 1400];

        snprintf(fresh, sizeof fresh, "%s", c.nodes[i].dir);
        rm_rf(fresh);
        snprintf(cmd, sizeof cmd,
                 "%s/batond --restore '%s' --id %u --data '%s' --cluster '%s' --fence-floor "
                 "123456789012345 >> '%s' 2>&1",
                 c.build, path, c.nodes[i].id, fresh, c.members, c.nodes[i].log);
        ASSERT_EQ(system(cmd), 0);
    }
    for (int i = 0; i < 3; i++) ASSERT_EQ(cluster_restart(&c, i), 0);
    ASSERT_GE(cluster_wait_leader(&c, 20000), 0);
    wait_nodes(&c);
    b = connect_as(&c, "after");
    ASSERT_EQ(baton_lock(b, "new", &l), 0);
    ASSERT_UEQ(baton_lock_fence(l), 123456789012345ull);
    /* A floor that is not a number is refused, and so is one without
     * --restore. */
    {
        char cmd[PATH_MAX * 4 + 1200];

        snprintf(fresh, sizeof fresh, "%s/refused", suite_dir());
        snprintf(cmd, sizeof cmd,
                 "%s/batond --restore '%s' --id 1 --data '%s' --cluster '%s' --fence-floor 12x "
                 ">/dev/null 2>&1",
                 c.build, path, fresh, c.members);
        ASSERT_EQ(WEXITSTATUS(system(cmd)), 1);
        snprintf(cmd, sizeof cmd,
                 "%s/batond --id 1 --data '%s' --cluster '%s' --fence-floor 12 >/dev/null 2>&1",
                 c.build, fresh, c.members);
        ASSERT_EQ(WEXITSTATUS(system(cmd)), 2);
    }
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(b);
    ASSERT_EQ(cluster_stop(&c), 0);
}

int main(int argc, char **argv)
{
    int rv;

    suite_dir_init("baton-cluster-id");
    runner_init(argc, argv);
    runner_set_timeout(240);
    RUN(empty_node_beside_restored_ones);
    RUN(empty_node_refused_over_peer_tls);
    RUN(interrupted_restore_does_not_start);
    RUN(fence_floor);
    rv = runner_done();
    suite_dir_done();
    return rv;
}
