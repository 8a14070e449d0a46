/*
 * test_addrs.c -- host names and IPv6 addresses everywhere an address is
 * taken, with real batond processes (tests/lib/cluster.h starts and always
 * stops them):
 *
 *  - a 3-node cluster whose --cluster names every node "localhost:PORT":
 *    raft between the nodes (raft/peer_tcp.c resolves the names), libbaton
 *    with names as endpoints, a REDIRECT from a follower to the leader's
 *    name, failover after the leader is killed, `batonctl -e
 *    localhost:PORT status` and `member add 4 localhost:P1/localhost:P2`;
 *  - the same cluster on "[::1]:PORT" addresses, and one on names with
 *    mutual TLS between the nodes (raft/peer_tls.c dials the names);
 *  - a name whose address changes while its node is down: with
 *    tests/shim/hosts.so preloaded, getaddrinfo reads names from a file;
 *    a follower restarted on another address (127.0.0.2) behind the same
 *    name is found by the other nodes' next reconnects and catches up.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton.h"
#include "baton/baton_defs.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/files.h"
#include "tests/lib/runner.h"

static struct cluster C;

static baton_t *connect_to(const char *endpoints, const char *name)
{
    baton_opts o = {.endpoints = endpoints, .client_name = name};

    return client_connect(&o);
}

static void lock_unlock(baton_t *b, const char *name)
{
    baton_lock_t *l = NULL;
    int rv = baton_lock_timeout(b, name, 20000, &l);

    if (rv != 0) FAIL("baton_lock(%s): %s (%s)", name, baton_err_name(rv), baton_errmsg(b));
    ASSERT_GT(baton_lock_fence(l), 0);
    ASSERT_EQ(baton_unlock(l), 0);
}

/* A node that is not the leader. */
static int a_follower(int leader)
{
    return (leader + 1) % C.n;
}

/* Start a 3-node cluster whose every address has this host. */
static int start_on(const char *host)
{
    struct cluster_opts o = {.host = host};
    int leader;

    ASSERT_EQ(cluster_start_opts(&C, 3, &o), 0);
    leader = cluster_wait_leader(&C, 15000);
    ASSERT_GE(leader, 0);
    return leader;
}

/* libbaton through a follower only: its REDIRECT names the leader by the
 * cluster's host (a name or [::1]), which the client resolves and follows. */
static void redirect_followed(int leader, const char *host)
{
    const char *ep = cluster_endpoint(&C, a_follower(leader));
    baton_t *b;

    ASSERT(strncmp(ep, host, strlen(host)) == 0);
    b = connect_to(ep, "via-follower");
    lock_unlock(b, "redirected");
    baton_close(b);
}

/* batonctl -e HOST:PORT status: every node answers, one leads. */
static void ctl_status(int i)
{
    struct ctl_result r;
    int st = cluster_ctl(NULL, &r, "-e", cluster_endpoint(&C, i), "status", NULL);

    if (st != 0) FAIL("batonctl status exited %d\n# %s# %s", st, r.out, r.err);
    ASSERT(strstr(r.out, "leader") != NULL);
    ASSERT(strstr(r.out, cluster_endpoint(&C, i)) != NULL);
    ctl_result_free(&r);
}

TEST(names_cluster)
{
    int leader = start_on("localhost"), next, n4, st;
    struct ctl_result r;
    char spec[128];
    baton_t *b;

    ASSERT(strstr(C.members, "=localhost:") != NULL);
    redirect_followed(leader, "localhost:");
    ctl_status(a_follower(leader));

    /* Failover: a session on every name survives the leader's death. */
    b = connect_to(cluster_endpoints(&C), "failover");
    lock_unlock(b, "before");
    ASSERT_EQ(cluster_kill(&C, leader, SIGKILL), 128 + SIGKILL);
    next = cluster_wait_leader(&C, 15000);
    ASSERT_GE(next, 0);
    ASSERT_NE(next, leader);
    lock_unlock(b, "after");
    baton_close(b);
    ASSERT_EQ(cluster_restart(&C, leader), 0);

    /* member add with names: the new node's --cluster names it localhost. */
    n4 = cluster_add_node(&C);
    ASSERT_EQ(n4, 3);
    cluster_member_addrs(&C, n4, spec, sizeof spec);
    ASSERT(strncmp(spec, "localhost:", 10) == 0);
    st = cluster_ctl(&C, &r, "member", "add", "4", spec, NULL);
    if (st != 0) FAIL("member add %s exited %d\n# %s# %s", spec, st, r.out, r.err);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&C, &r, "-o", "json", "member", "list", NULL), 0);
    ASSERT(strstr(r.out, "\"id\":4,\"role\":\"voter\"") != NULL);
    ctl_result_free(&r);
    ctl_status(n4);
    b = connect_to(cluster_endpoint(&C, n4), "via-node-4");
    lock_unlock(b, "four");
    baton_close(b);
    ASSERT_EQ(cluster_stop(&C), 0);
}

TEST(ipv6_cluster)
{
    int leader = start_on("[::1]"), next;
    baton_t *b;

    ASSERT(strstr(C.members, "=[::1]:") != NULL);
    redirect_followed(leader, "[::1]:");
    ctl_status(leader);
    b = connect_to(cluster_endpoints(&C), "v6");
    lock_unlock(b, "before");
    ASSERT_EQ(cluster_kill(&C, leader, SIGKILL), 128 + SIGKILL);
    next = cluster_wait_leader(&C, 15000);
    ASSERT_GE(next, 0);
    lock_unlock(b, "after");
    baton_close(b);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* Under mutual TLS between the nodes the TLS transport dials names too. */
TEST(names_with_peer_tls)
{
    struct cluster_opts o = {.host = "localhost", .secure = CLUSTER_PEER_TLS};
    int leader;
    baton_t *b;

    ASSERT_EQ(cluster_start_opts(&C, 3, &o), 0);
    leader = cluster_wait_leader(&C, 15000);
    ASSERT_GE(leader, 0);
    b = connect_to(cluster_endpoints(&C), "peer-tls");
    lock_unlock(b, "before");
    ASSERT_EQ(cluster_kill(&C, leader, SIGKILL), 128 + SIGKILL);
    ASSERT_GE(cluster_wait_leader(&C, 15000), 0);
    lock_unlock(b, "after");
    baton_close(b);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* ---- a name whose address changes ---------------------------------------- */

static char hosts_file[PATH_MAX], shim_env[PATH_MAX + 16], hosts_env[PATH_MAX + 32],
    asan_env[600];

/* Write the names of the three nodes, node f's at addr, the others' at
 * 127.0.0.1 (the shim reads the file at every lookup). */
static void write_hosts(int f, const char *addr)
{
    FILE *fp = fopen(hosts_file, "w");

    ASSERT(fp != NULL);
    for (int i = 0; i < 3; i++)
        fprintf(fp, "node%d.baton-test %s\n", i + 1, i == f ? addr : "127.0.0.1");
    fclose(fp);
}

/* The environment that makes a process resolve names with the shim. */
static void shim_setup(const char *dir)
{
    const char *build = getenv("BATON_BUILD"), *prev = getenv("ASAN_OPTIONS");
    char rel[PATH_MAX], abs[PATH_MAX];

    snprintf(rel, sizeof rel, "%s/tests/shim/hosts.so", build && *build ? build : "build/default");
    if (realpath(rel, abs) == NULL) FAIL("%s: %s (make build-tests builds it)", rel, strerror(errno));
    snprintf(hosts_file, sizeof hosts_file, "%s/hosts", dir);
    snprintf(shim_env, sizeof shim_env, "LD_PRELOAD=%s", abs);
    snprintf(hosts_env, sizeof hosts_env, "BATON_SHIM_HOSTS=%s", hosts_file);
    /* An ASan batond or batonctl wants its runtime first among the libraries. */
    snprintf(asan_env, sizeof asan_env, "ASAN_OPTIONS=%s%sverify_asan_link_order=0",
             prev ? prev : "", prev && *prev ? ":" : "");
}

/* batonctl with the shim (the test process itself cannot resolve the
 * names): cluster_ctl with the variables set for the child only. */
static int ctl_shim(struct ctl_result *r, const char *const *args)
{
    char *env[3] = {shim_env, hosts_env, asan_env};
    int st;

    for (int i = 0; i < 3; i++) putenv(env[i]);
    st = cluster_ctlv(&C, 30000, r, args);
    unsetenv("LD_PRELOAD");
    unsetenv("BATON_SHIM_HOSTS");
    return st;
}

/* Node f's applied index reaches the leader's commit index. */
static void wait_caught_up(int f)
{
    int64_t deadline = now_ms() + 20000;
    struct cluster_status lst, fst;
    int leader;

    while (now_ms() < deadline) {
        leader = cluster_wait_leader(&C, 5000);
        if (leader >= 0 && leader != f && cluster_node_status(&C, leader, &lst, 2000) == 0 &&
            cluster_node_status(&C, f, &fst, 2000) == 0 && fst.applied_index >= lst.commit_index)
            return;
        sleep_ms(100);
    }
    FAIL("node %d did not catch up at its new address", f + 1);
}

TEST(name_moves_to_another_address)
{
    const char *names[] = {"node1.baton-test", "node2.baton-test", "node3.baton-test"};
    const char *const lock_args[] = {"lock", "moved", "--", "true", NULL};
    struct cluster_opts o = {0};
    const char *const *envs;
    struct ctl_result r;
    char dir[PATH_MAX - 64];
    int leader, f, st;

    ASSERT_EQ(tmpdir_make(dir, sizeof dir, "baton-hosts"), 0);
    shim_setup(dir);
    write_hosts(-1, NULL);
    envs = (const char *const[]){shim_env, hosts_env, asan_env, NULL};
    for (int i = 0; i < 3; i++) {
        o.node_host[i] = names[i];
        o.node_env[i] = envs;
    }
    ASSERT_EQ(cluster_start_opts(&C, 3, &o), 0);
    leader = cluster_wait_leader(&C, 15000);
    ASSERT_GE(leader, 0);
    st = ctl_shim(&r, lock_args);
    if (st != 0) FAIL("batonctl lock exited %d\n# %s# %s", st, r.out, r.err);
    ctl_result_free(&r);

    /* A follower goes down and comes back on 127.0.0.2 behind its name,
     * after the cluster moved on without it. */
    f = a_follower(leader);
    cluster_kill(&C, f, SIGTERM);
    write_hosts(f, "127.0.0.2");
    snprintf(C.nodes[f].ip, sizeof C.nodes[f].ip, "127.0.0.2");
    for (int i = 0; i < 3; i++) {
        st = ctl_shim(&r, lock_args);
        if (st != 0) FAIL("batonctl lock exited %d\n# %s# %s", st, r.out, r.err);
        ctl_result_free(&r);
    }
    ASSERT_EQ(cluster_restart(&C, f), 0);
    /* Only reconnects that resolve the name again reach it there. */
    wait_caught_up(f);
    ASSERT_EQ(cluster_stop(&C), 0);
    rm_rf(dir);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(180);
    RUN(names_cluster);
    RUN(ipv6_cluster);
    RUN(names_with_peer_tls);
    RUN(name_moves_to_another_address);
    return runner_done();
}
