/*
 * test_mixed_versions.c -- a cluster whose nodes run two binaries, as in a
 * rolling upgrade from the binary before the cluster id (docs/operations.md,
 * "Cluster identity" and "Planned restarts"). The older binary is
 * BUILD/proto1/batond: this source built with -DBATON_TEST_PEER_PROTOCOL_1,
 * whose raft handshakes are those of that binary only (plaintext protocol
 * 1, HELLO version 1, and an unknown protocol or version closed without an
 * answer: raft/peer_tcp.c, raft/peer_tls.c, raft/peer_hello.c).
 *
 *  - one_old_node, two_old_nodes: 3 nodes, 1 or 2 on the older binary.
 *    A leader is elected, locks are served, and over three leader kills
 *    (of which at least one leaves an older and a newer node to elect a
 *    leader between them) a lock held all along stays held, new locks
 *    are granted on every leader, every node catches up and the state
 *    digests agree. The newer nodes log that a peer runs an older binary.
 *  - rolling_upgrade: 3 nodes on the older binary, restarted one at a time
 *    on the newer one; a lock held all along stays held and locks are
 *    granted after every restart.
 *  - one_old_node_over_peer_tls: one_old_node with mutual TLS between the
 *    nodes (HELLO versions 1 and 2).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baton/baton.h"
#include "proto/msg.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/files.h"
#include "tests/lib/runner.h"

#define TTL_MS 120000 /* no session may expire while the test runs */

static char old_batond[4096];

static baton_t *connect_as(struct cluster *c, const char *name)
{
    baton_opts o = {.endpoints = cluster_endpoints(c), .client_name = name,
                    .session_ttl_ms = TTL_MS};

    return client_connect(&o);
}

static void wait_nodes(struct cluster *c)
{
    for (int i = 0; i < c->n; i++) ASSERT_EQ(cluster_wait_node(c, i, 15000), 0);
}

static int is_old(const struct cluster *c, int i)
{
    return c->node_batond[i] != NULL;
}

/* The lock "held" is b's; another session cannot take it, and can take
 * and give back "free". */
static void check_locks(struct cluster *c, const char *round)
{
    baton_t *b = connect_as(c, "other");
    baton_lock_t *l = NULL;
    int rv = baton_trylock(b, "held", &l);

    if (rv == 0) FAIL("%s: the held lock was granted again", round);
    ASSERT_EQ(rv, BATON_EWOULDBLOCK);
    ASSERT_EQ(baton_lock(b, "free", &l), 0);
    printf("# %s: free granted, fence %llu\n", round, (unsigned long long)baton_lock_fence(l));
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(b);
}

/* Kill the leader three times: a new one is elected by the other two,
 * serves locks, and the killed node comes back and catches up. Returns how
 * many of those elections were between an older and a newer node. */
static int leader_changes(struct cluster *c)
{
    int mixed = 0;

    for (int round = 0; round < 3; round++) {
        char name[64];
        int leader = cluster_wait_leader(c, 20000), next, a, b;

        if (leader < 0) FAIL("round %d: no leader", round);
        a = (leader + 1) % 3;
        b = (leader + 2) % 3;
        mixed += is_old(c, a) != is_old(c, b);
        ASSERT_GE(cluster_kill(c, leader, SIGKILL), 0);
        next = cluster_wait_leader(c, 20000);
        if (next < 0) FAIL("round %d: no leader after node %d was killed", round, leader + 1);
        printf("# round %d: node %d (%s) killed, node %d (%s) leads\n", round, leader + 1,
               is_old(c, leader) ? "older" : "newer", next + 1, is_old(c, next) ? "older" : "newer");
        snprintf(name, sizeof name, "round %d", round);
        check_locks(c, name);
        ASSERT_EQ(cluster_restart(c, leader), 0);
        ASSERT_EQ(cluster_wait_caught_up(c, leader, 20000), 0);
    }
    return mixed;
}

static void mixed_cluster(unsigned old_mask, int secure)
{
    struct cluster_opts o = {.secure = secure};
    struct cluster c;
    baton_t *holder;
    baton_lock_t *held;
    uint64_t fence;
    int mixed;

    for (int i = 0; i < 3; i++)
        if (old_mask & (1u << i)) o.node_batond[i] = old_batond;
    ASSERT_EQ(cluster_start_opts(&c, 3, &o), 0);
    ASSERT_GE(cluster_wait_leader(&c, 20000), 0);
    wait_nodes(&c);
    holder = connect_as(&c, "holder");
    ASSERT_EQ(baton_lock(holder, "held", &held), 0);
    fence = baton_lock_fence(held);
    check_locks(&c, "start");
    for (int i = 0; i < 3; i++) ASSERT_EQ(cluster_wait_caught_up(&c, i, 20000), 0);
    mixed = leader_changes(&c);
    printf("# %d of 3 elections between an older and a newer node\n", mixed);
    ASSERT_GE(mixed, 1);
    ASSERT_EQ(cluster_digests_agree(&c, 20000), 0);
    ASSERT_UEQ(baton_lock_fence(held), fence);
    for (int i = 0; i < 3; i++)
        if (!is_old(&c, i)) ASSERT(cluster_log_says(&c, i, "older binary", 0));
    ASSERT_EQ(baton_unlock(held), 0);
    baton_close(holder);
    wait_nodes(&c);
    ASSERT_EQ(cluster_stop(&c), 0);
}

TEST(one_old_node)
{
    mixed_cluster(1u << 0, 0);
}

TEST(two_old_nodes)
{
    mixed_cluster(1u << 1 | 1u << 2, 0);
}

TEST(one_old_node_over_peer_tls)
{
    mixed_cluster(1u << 2, CLUSTER_PEER_TLS);
}

TEST(rolling_upgrade)
{
    struct cluster_opts o = {0};
    struct cluster c;
    baton_t *holder;
    baton_lock_t *held;

    for (int i = 0; i < 3; i++) o.node_batond[i] = old_batond;
    ASSERT_EQ(cluster_start_opts(&c, 3, &o), 0);
    ASSERT_GE(cluster_wait_leader(&c, 20000), 0);
    wait_nodes(&c);
    holder = connect_as(&c, "holder");
    ASSERT_EQ(baton_lock(holder, "held", &held), 0);
    check_locks(&c, "all older");
    for (int i = 0; i < 3; i++) {
        char name[64];

        ASSERT_EQ(cluster_wait_caught_up(&c, i, 20000), 0);
        c.node_batond[i] = NULL; /* the newer binary from its next start */
        ASSERT_EQ(cluster_kill(&c, i, SIGTERM), 0);
        ASSERT_EQ(cluster_restart(&c, i), 0);
        ASSERT_GE(cluster_wait_leader(&c, 20000), 0);
        ASSERT_EQ(cluster_wait_caught_up(&c, i, 20000), 0);
        snprintf(name, sizeof name, "node %d upgraded", i + 1);
        check_locks(&c, name);
    }
    ASSERT_EQ(cluster_digests_agree(&c, 20000), 0);
    ASSERT_EQ(baton_unlock(held), 0);
    baton_close(holder);
    wait_nodes(&c);
    ASSERT_EQ(cluster_stop(&c), 0);
}

int main(int argc, char **argv)
{
    const char *build = getenv("BATON_BUILD");
    int rv;

    snprintf(old_batond, sizeof old_batond, "%s/proto1/batond",
             build != NULL && *build ? build : "build/default");
    if (access(old_batond, X_OK) != 0) {
        fprintf(stderr, "# %s: not built (make %s)\n", old_batond, old_batond);
        return 1;
    }
    suite_dir_init("baton-mixed-versions");
    runner_init(argc, argv);
    runner_set_timeout(300);
    RUN(one_old_node);
    RUN(two_old_nodes);
    RUN(rolling_upgrade);
    RUN(one_old_node_over_peer_tls);
    rv = runner_done();
    suite_dir_done();
    return rv;
}
