/*
 * nemesis_upgrade.c -- a rolling upgrade past a node of a lower feature
 * level (docs/design.md "Feature levels", docs/operations.md "Upgrades and
 * downgrades"), with BUILD/level1/batond: a batond of feature level 1.
 *
 * With the fault enabled, node 3 runs the level-1 binary from the start
 * (upgrade_setup), so the cluster stays at level 1 while the other faults
 * strike (its restarts keep that binary); before each of them the nemesis
 * looks at every node's levels (upgrade_watch, as in "held" below). An
 * upgrade fault in the first quarter of the run only looks again; the
 * first one after it:
 *
 *   held      every node's METRICS, three rounds a second apart: the
 *             cluster's level (baton_cluster_feature_level) may not be
 *             above the lowest binary level (baton_feature_level) of the
 *             voters -- node 3 among them;
 *   raised    node 3 restarted on the full binary: the level must reach
 *             the binaries' level on every node within 30 s;
 *   downgrade one time in two, a follower stopped and started on the
 *             level-1 binary: it must refuse to start (exit non-zero,
 *             saying "this binary applies level 1 only"), an expected exit;
 *             then started on the full binary again.
 *
 * A cluster rises once, so the later upgrade faults are the ways a lower
 * binary meets a raised cluster: a downgrade as above, or (one time in
 * two) a follower removed, wiped and started with --join on the level-1
 * binary, then `member add`ed: every handshake with it must be refused
 * (the others' logs say it runs "feature level 1, below the cluster's
 * level") and it must apply nothing; then it is removed, wiped again and
 * added back on the full binary.
 *
 * What was seen goes to nemesis.log as "NOTE upgrade KIND key=value ..."
 * lines (level, raise, downgrade, refused); faultcheck judges them
 * (check_upgrade.c).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fault/flog.h"
#include "tests/fault/nemesis.h"
#include "tests/lib/files.h"

#define START_MARK "=== cluster harness: starting node" /* cluster.c, spawn_node */
#define RAISE_MS 30000

int upgrade_setup(struct run *r, struct cluster_opts *o)
{
    const char *build = getenv("BATON_BUILD");

    r->old_node = -1;
    if (!(r->faults_enabled & (1u << F_UPGRADE))) return 0;
    snprintf(r->level1, sizeof r->level1, "%s/level1/batond",
             build && *build ? build : "build/default");
    if (access(r->level1, X_OK) != 0) {
        /* A build without one (the selftest's broken build): the fault is
         * off, and the run says so. */
        printf("# the upgrade fault is off: no %s\n", r->level1);
        r->faults_enabled &= ~(1u << F_UPGRADE);
        return r->faults_enabled ? 0 : -1;
    }
    r->old_node = 2;
    o->node_batond[2] = r->level1;
    return 0;
}

static int gauge(struct run *r, int i, const char *key)
{
    return r->c.nodes[i].pid > 0 ? (int)cluster_node_gauge(&r->c, i, key, 3000) : -1;
}

/* One "NOTE upgrade level" line per running node (nemesis.log only, not
 * the progress lines): its binary's level and
 * the cluster's, and the lowest binary level among the voters: every
 * node (faults do not overlap, and this fault's own removals end before
 * it looks), the old node at level 1 even when it does not answer (down,
 * restarting). */
void upgrade_watch(struct run *r)
{
    int bin[CLUSTER_MAX_NODES], cl[CLUSTER_MAX_NODES], lowest = r->old_node >= 0 ? 1 : -1;

    for (int i = 0; i < r->c.n; i++) {
        bin[i] = gauge(r, i, "baton_feature_level");
        cl[i] = gauge(r, i, "baton_cluster_feature_level");
        if (bin[i] > 0 && (lowest < 0 || bin[i] < lowest)) lowest = bin[i];
    }
    for (int i = 0; i < r->c.n; i++)
        if (bin[i] > 0 && cl[i] > 0)
            flog(r->nemesis, "NOTE upgrade level node=%u binary=%d cluster=%d lowest-voter=%d",
                 r->c.nodes[i].id, bin[i], cl[i], lowest);
}

void upgrade_replaced(struct run *r, int t)
{
    if (t != r->old_node) return;
    /* Not a "NOTE upgrade" line: those are the checker's (check_upgrade.c). */
    note(r, "NOTE", "member node %u ran feature level 1: it comes back on the full binary",
         r->c.nodes[t].id);
    r->c.node_batond[t] = NULL;
    r->old_node = -1;
}

/* Did node i's log say `what` since it last started? */
static int log_says(struct run *r, int i, const char *what)
{
    static char tail[65537];
    const char *since, *p;

    if (read_tail(r->c.nodes[i].log, tail, sizeof tail) < 0) return 0;
    for (since = tail; (p = strstr(since, START_MARK)) != NULL; since = p + 1) {
    }
    return strstr(since, what) != NULL;
}

/* Start node t on the level-1 binary over its raised store: it must
 * refuse. Then back on the full binary. */
static void downgrade(struct run *r, int t)
{
    int store = gauge(r, t, "baton_cluster_feature_level"), st;
    uint32_t id = r->c.nodes[t].id;

    r->down[t] = 1;
    cluster_kill(&r->c, t, SIGTERM);
    r->c.node_batond[t] = r->level1;
    st = cluster_run_to_exit(&r->c, t, 15000);
    r->c.node_batond[t] = NULL;
    note(r, "NOTE", "upgrade downgrade node=%u binary=1 store=%d exit=%d said=%d", id, store, st,
         log_says(r, t, "this binary applies level 1 only"));
    restart_node(r, t);
}

/* Wait until every node's cluster level is node o's binary level; the
 * ms it took, or -1 (*want: that level, or -1 if o never said). */
static int wait_raised(struct run *r, int o, int *want)
{
    int64_t t0 = now_us();

    *want = -1;
    while (now_us() - t0 < RAISE_MS * 1000LL) {
        int all = (*want = gauge(r, o, "baton_feature_level")) > 0;
        for (int i = 0; i < r->c.n && all; i++)
            all = gauge(r, i, "baton_cluster_feature_level") == *want;
        if (all) return (int)((now_us() - t0) / 1000);
        sleep_ms(250);
    }
    return -1;
}

static void upgrade_first(struct run *r)
{
    int o = r->old_node, want, ms, t;
    uint32_t id = r->c.nodes[o].id;

    note(r, "FAULT", "upgrade node %u runs feature level 1: the level holds, then rises", id);
    for (int round = 0; round < 3; round++) {
        if (round) sleep_ms(1000);
        upgrade_watch(r);
    }
    r->down[o] = 1;
    cluster_kill(&r->c, o, SIGTERM);
    r->c.node_batond[o] = NULL;
    r->old_node = -1;
    if (restart_node(r, o) != 0) return;
    ms = wait_raised(r, o, &want);
    note(r, "NOTE", "upgrade raise node=%u want=%d raised=%d ms=%d", id, want, ms >= 0, ms);
    upgrade_watch(r);
    if (run_rand(r, 0, 1) == 0 && (t = other_node(r, leader(r, 15000))) >= 0) downgrade(r, t);
    note(r, "HEAL", "upgrade node %u runs the full binary", id);
}

/* Node t, removed and wiped, joins on the level-1 binary: refused. */
static void rejoin_low(struct run *r, int l, int t)
{
    uint32_t id = r->c.nodes[t].id;
    int cl = gauge(r, l, "baton_cluster_feature_level"), said = 0, add;
    char ids[16], addrs[64];
    struct ctl_result res;
    struct cluster_status st;
    long long applied = -1;

    note(r, "FAULT", "upgrade node %u: remove, wipe, rejoin on the level-1 binary (cluster level %d)",
         id, cl);
    if (member_out(r, t, "upgrade") != 0) return;
    snprintf(ids, sizeof ids, "%u", id);
    cluster_member_addrs(&r->c, t, addrs, sizeof addrs);
    r->c.node_batond[t] = r->level1;
    if (restart_node(r, t) == 0) {
        add = cluster_ctlv(&r->c, 20000, &res,
                           (const char *[]){"member", "add", ids, addrs, "--timeout", "6000", NULL});
        ctl_result_free(&res);
        sleep_ms(2000);
        if (cluster_node_status(&r->c, t, &st, 3000) == 0) applied = (long long)st.applied_index;
        for (int i = 0; i < r->c.n; i++)
            if (i != t) said |= log_says(r, i, "feature level 1, below the cluster's level");
        note(r, "NOTE", "upgrade refused node=%u binary=1 cluster=%d applied=%lld said=%d add=%d",
             id, cl, applied, said, add);
        /* Out again (a spare now, or never added: either answer will do). */
        cluster_ctlv(&r->c, 20000, &res,
                     (const char *[]){"member", "remove", ids, "--timeout", "20000", NULL});
        ctl_result_free(&res);
    }
    member_wipe(r, t);
    r->c.node_batond[t] = NULL;
    note(r, "HEAL", "upgrade node %u %s", id,
         member_in(r, t) == 0 ? "is a voter again, on the full binary" : "could NOT be added back");
}

void fault_upgrade(struct run *r, int l)
{
    int t;

    if (r->old_node >= 0 && now_us() - r->t_start_us < (int64_t)r->seconds * 250000) {
        /* Not yet: the other faults get the first quarter of the run
         * with a level-1 voter among them. */
        note(r, "FAULT", "upgrade node %u runs feature level 1 (upgraded after the first "
             "quarter of the run)", r->c.nodes[r->old_node].id);
        sleep_ms(1000);
        upgrade_watch(r);
        note(r, "HEAL", "upgrade node %u still runs feature level 1", r->c.nodes[r->old_node].id);
        return;
    }
    if (r->old_node >= 0) {
        upgrade_first(r);
        return;
    }
    if ((t = other_node(r, l)) < 0) return;
    if (run_rand(r, 0, 1) == 0) {
        rejoin_low(r, l, t);
        return;
    }
    note(r, "FAULT", "upgrade node %u: the level-1 binary on its raised store", r->c.nodes[t].id);
    downgrade(r, t);
    note(r, "HEAL", "upgrade node %u runs the full binary", r->c.nodes[t].id);
}
