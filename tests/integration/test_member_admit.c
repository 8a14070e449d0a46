/*
 * test_member_admit.c -- the raft port admits what raft's configuration
 * says (raft/peer_admit.h; docs/design.md, "Who the raft port admits"),
 * with real batond processes on 127.0.0.1 (tests/lib/cluster.h starts and
 * always stops them), in plaintext and under peer TLS:
 *
 *  - a follower removed with `batonctl member remove`, left running: the
 *    leader closes its live raft connections at once and says so; the
 *    node, which never learns it was removed, keeps dialling, and every
 *    remaining node refuses it at the handshake with one log line a
 *    minute, not one per attempt; it gets no entry from then on, and the
 *    cluster's term does not move while it campaigns;
 *  - a second `member remove` of it is refused as "not a member";
 *  - added again with the same id, it is admitted again and catches up;
 *    removed once more, its client address entry (which the add wrote)
 *    is deleted by the leader.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "baton/baton.h"
#include "baton/baton_defs.h"
#include "proto/msg.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/files.h"
#include "tests/lib/runner.h"

static struct cluster C;
static char tail_buf[512 * 1024];

/* Occurrences of what in node i's log (its last 512 KiB). */
static int log_count(int i, const char *what)
{
    int n = 0;

    if (read_tail(C.nodes[i].log, tail_buf, sizeof tail_buf) < 0) return 0;
    for (const char *p = tail_buf; (p = strstr(p, what)) != NULL; p += strlen(what)) n++;
    return n;
}

static int log_says(int i, const char *what, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;

    do {
        if (log_count(i, what) > 0) return 1;
        sleep_ms(50);
    } while (now_ms() < deadline);
    return 0;
}

static void lock_unlock(const char *name)
{
    baton_opts o = {.endpoints = cluster_endpoints(&C), .client_name = "admit"};
    baton_lock_t *l = NULL;
    baton_t *b;
    int rv;

    cluster_client_opts(&C, &o);
    b = client_connect(&o);
    rv = baton_lock_timeout(b, name, 20000, &l);
    if (rv != 0) FAIL("baton_lock(%s): %s (%s)", name, baton_err_name(rv), baton_errmsg(b));
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(b);
}

static void ctl(int want_ok, struct ctl_result *r, const char *const *args)
{
    int st = cluster_ctlv(&C, 60000, r, args);

    if ((st == 0) != want_ok)
        FAIL("batonctl %s %s exited %d\n# stdout: %s# stderr: %s", args[0], args[1], st, r->out,
             r->err);
}

static void removed_node(int secure)
{
    const struct cluster_opts opts = {.secure = secure};
    struct cluster_status before, st, lst;
    struct ctl_result r;
    char vid[16], closing[96], refused[96], deleting[96], spec[64];
    int leader, victim, other;
    uint64_t term;

    ASSERT_EQ(cluster_start_opts(&C, 3, &opts), 0);
    leader = cluster_wait_leader(&C, 15000);
    ASSERT_GE(leader, 0);
    victim = (leader + 1) % 3;
    other = (leader + 2) % 3;
    snprintf(vid, sizeof vid, "%u", C.nodes[victim].id);
    snprintf(closing, sizeof closing, "closing a raft connection with node %s ", vid);
    snprintf(refused, sizeof refused, "raft connection from node %s (", vid);
    snprintf(deleting, sizeof deleting, "deleting the client address of node %s:", vid);
    lock_unlock("before");
    ASSERT_EQ(cluster_wait_caught_up(&C, victim, 20000), 0);
    ASSERT_EQ(log_count(leader, closing) + log_count(leader, refused), 0);

    /* 1. Remove it; it keeps running. The leader cuts its connections. */
    ctl(1, &r, (const char *[]){"member", "remove", vid, NULL});
    ctl_result_free(&r);
    ASSERT(log_says(leader, closing, 5000));

    /* 2. It campaigns, and every remaining node refuses it at the
     * handshake: once in the log, however often it dials (every 250 ms). */
    ASSERT(log_says(leader, refused, 10000));
    ASSERT(log_says(other, refused, 10000));
    ASSERT_EQ(cluster_node_status(&C, victim, &before, 2000), 0);
    ASSERT_EQ(cluster_node_status(&C, leader, &lst, 2000), 0);
    term = lst.term;
    for (int i = 0; i < 10; i++) {
        char name[24];

        snprintf(name, sizeof name, "after-%d", i);
        lock_unlock(name);
    }
    sleep_ms(3000);
    ASSERT_EQ(log_count(leader, refused), 1);
    ASSERT_EQ(log_count(other, refused), 1);
    /* No entry reached it; the cluster went on, in the same term. */
    ASSERT_EQ(cluster_node_status(&C, victim, &st, 2000), 0);
    ASSERT_UEQ(st.applied_index, before.applied_index);
    ASSERT_UEQ(st.last_index, before.last_index);
    ASSERT_EQ(cluster_node_status(&C, leader, &lst, 2000), 0);
    ASSERT_GT(lst.commit_index, st.last_index);
    ASSERT_UEQ(lst.term, term);
    ASSERT_EQ(lst.role, ROLE_LEADER);

    /* 3. Removing it again: not a member. */
    ctl(0, &r, (const char *[]){"member", "remove", vid, NULL});
    ASSERT(strstr(r.err, "not a member") != NULL);
    ctl_result_free(&r);

    /* 4. Added again with the same id and addresses: admitted again, it
     * catches up (its old log is a prefix of the leader's). */
    cluster_member_addrs(&C, victim, spec, sizeof spec);
    ctl(1, &r, (const char *[]){"member", "add", vid, spec, NULL});
    ctl_result_free(&r);
    lock_unlock("readded");
    ASSERT_EQ(cluster_wait_caught_up(&C, victim, 20000), 0);

    /* 5. Removed once more: its address entry, which the add wrote, goes. */
    leader = cluster_wait_leader(&C, 15000);
    ASSERT_GE(leader, 0);
    ASSERT(leader != victim);
    ctl(1, &r, (const char *[]){"member", "remove", vid, NULL});
    ctl_result_free(&r);
    ASSERT(log_says(leader, deleting, 5000));
    lock_unlock("removed-again");
    ASSERT_EQ(cluster_stop(&C), 0);
}

TEST(removed_node_refused_and_cut_off)
{
    removed_node(0);
}

TEST(removed_node_refused_and_cut_off_peer_tls)
{
    removed_node(CLUSTER_PEER_TLS);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(180);
    RUN(removed_node_refused_and_cut_off);
    RUN(removed_node_refused_and_cut_off_peer_tls);
    return runner_done();
}
