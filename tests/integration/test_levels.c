/*
 * test_levels.c -- the cluster's feature level in a rolling upgrade
 * (docs/operations.md, "Upgrades and downgrades"), with real batond
 * processes: one voter runs BUILD/level1/batond, a binary of feature level
 * 1 (the Makefile's LEVEL1: storage/ and server/ built with
 * BATON_TEST_MAX_LEVEL=1), the others this build's. The cluster stays at
 * level 1 while that voter runs it -- its raft handshakes say so -- and
 * every node's metrics show its binary's level and the cluster's; once it
 * runs the full binary the leader raises the level on its own, every node
 * applies it, and states stay equal. The level-1 binary then refuses to
 * start on that node's data (its store is at a level it cannot apply).
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/cmd_table.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/files.h"
#include "tests/lib/runner.h"

/* Occurrences of needle in hay. */
static int count(const char *hay, const char *needle)
{
    int n = 0;

    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

/* A gauge of node i's METRICS. */
static double gauge(struct cluster *c, int i, const char *key)
{
    return cluster_node_gauge(c, i, key, 5000);
}

TEST(one_old_voter_holds_the_level_until_upgraded)
{
    struct cluster c;
    struct cluster_opts o = {0};
    char level1[PATH_MAX];
    const char *build = getenv("BATON_BUILD") ? getenv("BATON_BUILD") : "build/default";
    int st;

    snprintf(level1, sizeof level1, "%s/level1/batond", build);
    o.node_batond[2] = level1;
    ASSERT_EQ(cluster_start_opts(&c, 3, &o), 0);
    ASSERT_GE(cluster_wait_leader(&c, 15000), 0);

    /* 1. Node 3 runs level 1: its metrics say so, and the leader, looking
     * every second, does not raise the level (a few rounds). */
    sleep_ms(4000);
    ASSERT_EQ(gauge(&c, 0, "baton_feature_level"), CMD_LEVEL);
    ASSERT_EQ(gauge(&c, 1, "baton_feature_level"), CMD_LEVEL);
    ASSERT_EQ(gauge(&c, 2, "baton_feature_level"), 1);
    for (int i = 0; i < 3; i++) ASSERT_EQ(gauge(&c, i, "baton_cluster_feature_level"), 1);
    {
        struct ctl_result r;
        char want[32];

        ASSERT_EQ(cluster_ctl(&c, &r, "status", "-o", "json", NULL), 0);
        snprintf(want, sizeof want, "\"level\":%d", CMD_LEVEL);
        if (count(r.out, want) != 2) FAIL("status: %s", r.out);
        ASSERT_EQ(count(r.out, "\"level\":1"), 1);
        ASSERT_EQ(count(r.out, "\"cluster_level\":1"), 3);
        ctl_result_free(&r);
        ASSERT_EQ(cluster_ctl(&c, &r, "status", NULL), 0);
        ASSERT(strstr(r.out, "CLUSTER-LEVEL") != NULL);
        ctl_result_free(&r);
    }

    /* Values need level 3: refused, with the reason, by the leader of
     * this build and by a level-1 leader alike. */
    for (int round = 0; round < 2; round++) {
        struct ctl_result r;

        if (round == 1) {
            ASSERT_EQ(cluster_ctl(&c, &r, "transfer-leader", "3", NULL), 0);
            ctl_result_free(&r);
            ASSERT_EQ(cluster_wait_leader(&c, 15000), 2);
        }
        cluster_ctl(&c, &r, "lock", "--value", "me", "v", "--", "true", NULL);
        if (r.status != 70 || strstr(r.err, "feature level") == NULL)
            FAIL("lock --value at level 1 (leader %d): exit %d: %s", round ? 3 : 1, r.status,
                 r.err);
        ctl_result_free(&r);
    }

    /* 2. Node 3 gets the full binary: the leader raises the level, every
     * node applies it, and their states agree. */
    c.node_batond[2] = NULL;
    ASSERT_EQ(cluster_restart(&c, 2), 0);
    if (cluster_wait_gauge(&c, "baton_cluster_feature_level", CMD_LEVEL, 30000) != 0) {
        cluster_dump_logs(&c, 20);
        FAIL("the cluster's level never reached %d on every node", CMD_LEVEL);
    }
    ASSERT_EQ(cluster_digests_agree(&c, 20000), 0);

    /* 2b. A node on the level-1 binary cannot join the raised cluster: its
     * handshakes are refused, and member add says so (not just that it
     * did not catch up). It stays a spare until removed. */
    {
        struct ctl_result r;
        char spec[64];
        int n4;

        c.node_batond[3] = level1;
        n4 = cluster_add_node(&c);
        ASSERT_EQ(n4, 3);
        cluster_member_addrs(&c, n4, spec, sizeof spec);
        ASSERT_EQ(cluster_ctl(&c, &r, "member", "add", "4", spec, NULL), 70);
        if (strstr(r.err, "feature level 1, below the cluster's level") == NULL)
            FAIL("member add of a level-1 node: %s", r.err);
        ctl_result_free(&r);
        ASSERT_EQ(cluster_ctl(&c, &r, "member", "remove", "4", NULL), 0);
        ctl_result_free(&r);
        ASSERT_EQ(cluster_kill(&c, n4, SIGTERM), 0);
        c.node_batond[3] = NULL;
    }

    /* 3. Back to the level-1 binary on node 3: it refuses to start on a
     * store of a level it cannot apply, and says why. */
    ASSERT_EQ(cluster_kill(&c, 2, SIGTERM), 0);
    c.node_batond[2] = level1;
    st = cluster_run_to_exit(&c, 2, 10000);
    ASSERT_NE(st, 0);
    ASSERT_NE(st, -1);
    ASSERT(cluster_log_says(&c, 2, "this binary applies level 1 only", 0));
    c.node_batond[2] = NULL;
    ASSERT_EQ(cluster_stop(&c), 0);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(one_old_voter_holds_the_level_until_upgraded);
    return runner_done();
}
