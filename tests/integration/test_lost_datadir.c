/*
 * test_lost_datadir.c -- a node whose whole data directory is lost does
 * not bootstrap a second cluster next to the first, with real batond
 * processes on 127.0.0.1 (tests/lib/cluster.h starts and always stops
 * them).
 *
 * A node started without --join on an empty data directory would
 * bootstrap: term 1 and the configuration of its --cluster list, and the
 * same cluster id as the running cluster's. Before it does, it asks the
 * other members over the raft port whether it has started in their
 * cluster before (raft/first_start.h); the ready leader records every
 * member that has caught up once in the replicated members table
 * (server/members.c), and a member that holds the record answers "known".
 *
 *  - lost_datadir_refuses_then_rejoins (plaintext) and
 *    lost_datadir_refuses_then_rejoins_secure (mutual TLS between the
 *    nodes, client TLS and tokens): a 3-node cluster serves a lock; once
 *    the leader has logged that it recorded the follower as started, the
 *    follower is stopped, its whole data directory deleted, and it is
 *    started again with its original flags. It must exit non-zero within
 *    15 s, saying which member knows it and how to rejoin. The other two
 *    keep serving and agree on their digest. Then the documented remedy
 *    (member remove, start with --join, member add) brings it back, and
 *    the three agree on the state digest.
 *  - two_lost_datadirs_make_no_second_cluster: both followers of a
 *    3-node cluster lose their data directories and start again with
 *    their original flags: both refuse (the survivor knows them), so they
 *    never make a majority of their own.
 * A fresh 3-node start (the cluster_start above, and every other
 * integration test) still bootstraps: the members answer "not known" or
 * are not up yet.
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "baton/baton.h"
#include "baton/baton_defs.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/files.h"
#include "tests/lib/runner.h"

static struct cluster C;

static void ctl_expect(int want, struct ctl_result *r, const char *const *args)
{
    const char *a[16];
    int n = 0, rv;

    while (args[n] != NULL && n < 15) {
        a[n] = args[n];
        n++;
    }
    a[n] = NULL;
    rv = cluster_ctlv(&C, 20000, r, a);
    if (rv != want) {
        fprintf(stderr, "# batonctl exit %d (want %d)\n# out: %s\n# err: %s\n", rv, want,
                r->out ? r->out : "", r->err ? r->err : "");
        FAIL("batonctl");
    }
}

/* Wait (at most 20 s) until some node's log says node `id` was recorded
 * as started. */
static void wait_recorded(uint32_t id)
{
    char want[64], log[65536];
    int64_t deadline = now_ms() + 20000;

    snprintf(want, sizeof want, "recording node %u (clients", id);
    for (;;) {
        for (int i = 0; i < C.n; i++)
            if (read_tail(C.nodes[i].log, log, sizeof log) > 0 && strstr(log, want) != NULL)
                return;
        if (now_ms() > deadline) break;
        sleep_ms(100);
    }
    cluster_dump_logs(&C, 20);
    FAIL("no node recorded the follower as started");
}

static void lost_and_back(int secure)
{
    struct cluster_opts o = {.secure = secure};
    char spec[16], addrs[PATH_MAX], log[16384];
    struct ctl_result r;
    baton_opts bo;
    baton_t *b;
    baton_lock_t *l;
    int leader, f;
    int64_t t0;

    ASSERT_EQ(cluster_start_opts(&C, 3, &o), 0);
    leader = cluster_wait_leader(&C, 15000);
    ASSERT_GE(leader, 0);
    f = (leader + 1) % 3;
    cluster_client_opts(&C, &bo);
    bo.client_name = "lost-datadir";
    b = client_connect(&bo);
    ASSERT(b != NULL);
    ASSERT_EQ(baton_lock_timeout(b, "before", 5000, &l), 0);
    ASSERT_EQ(cluster_digests_agree(&C, 20000), 0);
    wait_recorded(C.nodes[f].id);

    /* The whole data directory is lost; started again as it was. */
    ASSERT_EQ(cluster_kill(&C, f, SIGTERM), 0);
    rm_rf(C.nodes[f].dir);
    t0 = now_ms();
    ASSERT_EQ(cluster_run_to_exit(&C, f, 15000), 1);
    fprintf(stderr, "# refused after %lld ms\n", (long long)(now_ms() - t0));
    ASSERT_GT(read_tail(C.nodes[f].log, log, sizeof log), 0);
    ASSERT(strstr(log, "has started in this cluster before") != NULL);
    ASSERT(strstr(log, "bootstrapping would make a second cluster") != NULL);
    ASSERT(strstr(log, "batonctl member remove") != NULL);
    ASSERT(strstr(log, "--join") != NULL);
    ASSERT(strstr(log, "batonctl member add") != NULL);

    /* The other two are unharmed: they serve and agree. */
    ASSERT_EQ(baton_unlock(l), 0);
    ASSERT_EQ(baton_lock_timeout(b, "during", 5000, &l), 0);
    ASSERT_EQ(cluster_digests_agree(&C, 20000), 0);

    /* The remedy: member remove, start with --join, member add. */
    snprintf(spec, sizeof spec, "%u", C.nodes[f].id);
    ctl_expect(0, &r, (const char *[]){"member", "remove", spec, NULL});
    ctl_result_free(&r);
    rm_rf(C.nodes[f].dir);
    C.nodes[f].joined = 1;
    ASSERT_EQ(cluster_restart(&C, f), 0);
    cluster_member_addrs(&C, f, addrs, sizeof addrs);
    ctl_expect(0, &r, (const char *[]){"member", "add", spec, addrs, NULL});
    ctl_result_free(&r);
    ASSERT_EQ(baton_unlock(l), 0);
    ASSERT_EQ(cluster_wait_caught_up(&C, f, 30000), 0);
    ASSERT_EQ(cluster_digests_agree(&C, 30000), 0);
    baton_close(b);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* Two of three nodes lose their data directories: started again at once
 * with their original flags, they would be a majority of their own -- a
 * second cluster next to the survivor. Each asks the other (not up, or
 * asking too: no answer) and the survivor (which knows it), and both
 * refuse. The survivor still holds the state it had. */
static void two_lost(void)
{
    struct cluster_status st;
    char log[16384];
    int leader, lost[2];
    uint64_t applied;

    ASSERT_EQ(cluster_start(&C, 3), 0);
    leader = cluster_wait_leader(&C, 15000);
    ASSERT_GE(leader, 0);
    lost[0] = (leader + 1) % 3;
    lost[1] = (leader + 2) % 3;
    ASSERT_EQ(cluster_digests_agree(&C, 20000), 0);
    wait_recorded(C.nodes[lost[0]].id);
    wait_recorded(C.nodes[lost[1]].id);
    ASSERT_EQ(cluster_node_status(&C, leader, &st, 2000), 0);
    applied = st.applied_index;
    for (int k = 0; k < 2; k++) {
        ASSERT_EQ(cluster_kill(&C, lost[k], SIGTERM), 0);
        rm_rf(C.nodes[lost[k]].dir);
    }
    for (int k = 0; k < 2; k++) {
        ASSERT_EQ(cluster_run_to_exit(&C, lost[k], 15000), 1);
        ASSERT_GT(read_tail(C.nodes[lost[k]].log, log, sizeof log), 0);
        ASSERT(strstr(log, "has started in this cluster before") != NULL);
    }
    ASSERT_EQ(cluster_node_status(&C, leader, &st, 2000), 0);
    ASSERT_UEQ(st.applied_index, applied);
    ASSERT_EQ(cluster_stop(&C), 0);
}

TEST(two_lost_datadirs_make_no_second_cluster)
{
    two_lost();
}

TEST(lost_datadir_refuses_then_rejoins)
{
    lost_and_back(0);
}

TEST(lost_datadir_refuses_then_rejoins_secure)
{
    lost_and_back(CLUSTER_SECURE);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(180);
    RUN(lost_datadir_refuses_then_rejoins);
    RUN(lost_datadir_refuses_then_rejoins_secure);
    RUN(two_lost_datadirs_make_no_second_cluster);
    return runner_done();
}
