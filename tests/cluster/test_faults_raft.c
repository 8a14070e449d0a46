/*
 * test_faults_raft.c -- two behaviours of libraft 0.15 itself, on
 * raft_fixture with baton's real store behind every node and the model of
 * batond's leader duties (tests/cluster/faults.h): "commit entries of an
 * earlier term by counting replicas" (canonical/raft#220, Raft figure 8)
 * -- seen from the leader, and from a follower that learns such a commit --
 * and its pre-vote with an outdated term. docs/libraft-0.15.md says what
 * they found and what baton does about it.
 *
 * BATON_FAULT_VERBOSE=1 narrates.
 */
#include "tests/cluster/faults.h"

/* ---- 6. canonical/raft#220 ------------------------------------------------------------------------------ */

/*
 * Raft paper figure 8 in a 3-node cluster, A = node 0, B and C the others:
 *
 *   1. A leads (term 2); a holds lock L, b waits for it. A is cut off and
 *      appends X = "a releases L" (L to b, fence 2) at index k, on A only.
 *   2. B and C elect C (term 3), cut off as soon as raft makes it leader:
 *      it appends Y = "b try-acquires M" at index k, on C only; C crashes.
 *   3. A comes back and wins with B's vote (A's last entry, X, is newer
 *      than B's). B rejects A's first AppendEntries (it lacks index k);
 *      A sends X again.
 *
 * libraft 0.15 commits X as soon as A and B store it, although X is of an
 * earlier term and no entry of A's term is on B (canonical/raft#220): if A
 * then crashes, C can win (its last term, 3, beats B's 2), replace X by Y
 * on B, and commit Y. Whether A's commit can happen depends on when A's
 * barrier is in its log: 0.15 re-sends to a follower that rejected only at
 * the next heartbeat, and sends it everything from index k on, so a
 * barrier appended before then travels with X, and X commits only with it.
 *
 *   delay 0    batond now: the barrier in the same loop turn as the
 *              election;
 *   delay 20   batond before: a 20 ms poll noticed the election (inside
 *              the heartbeat interval);
 *   delay 250  a leader that notices its election only after more than a
 *              heartbeat (a stalled loop, or an application without
 *              barrier): the bug happens. A is killed the moment it
 *              commits X.
 *
 * What is asserted is baton's side: no ready leader ever served from X
 * before X was really committed -- A does not become ready, no grant of L
 * is pushed, and A's own store does not apply X (raft/fsm.c refuses to
 * apply on a leader whose commit index is not on an entry of its term);
 * the stores of the nodes that go on agree with the majority's decision;
 * and with delay 0 the figure-8 sequence cannot happen at all.
 */
/* The nodes of a figure-8 run, and the index X and Y compete for. */
struct fig8_nodes {
    unsigned a, b, c;
    uint64_t k;
};

/* With A cut off: step until B or C is raft's leader (of term 3) and return
 * it, running the duties until then but not after (it must not propose its
 * barrier). */
static unsigned elect_cut_off_other(struct cl *c)
{
    for (raft_time end = raft_fixture_time(c->f) + CL_ELECT_MS; raft_fixture_time(c->f) < end;) {
        raft_fixture_step(c->f);
        for (unsigned i = 1; i < CL_N; i++)
            if (raft_state(cl_raft(c, i)) == RAFT_LEADER) return i;
        for (unsigned i = 0; i < CL_N; i++) duty_step(&duties[i]);
    }
    FAIL("no leader among the nodes cut off from A");
}

struct fig8 {
    bool bug_seen;           /* A committed X with no entry of its term on B */
    bool a_store_x;          /* A's store applied X */
    bool a_shut_down;        /* A's raft stopped on the entry that replaced X */
    unsigned winner;         /* who led after A's crash: B or C */
};

static bool a_committed(struct cl *c, void *arg)
{
    const uint64_t *k = arg;
    return cl_raft(c, 0)->commit_index >= *k || raft_state(cl_raft(c, 0)) != RAFT_LEADER;
}

static void fig8_run(int delay_ms, struct fig8 *out)
{
    struct cl c;
    struct cmd cmds[2];
    struct prop x = {0}, y = {0};
    struct buf before_x = {0};
    const unsigned a = 0;
    unsigned b, cc, l;
    uint64_t k;
    raft_term term_a;

    memset(out, 0, sizeof *out);
    open_cluster(&c, &(struct cl_opts){.no_pre_vote = true}, delay_ms);
    run_cmd(&c, cl_open_session(TTL, "a"), NULL);
    run_cmd(&c, cl_open_session(TTL, "b"), NULL);
    expect(run_cmd(&c, cl_acquire(1, 1, FOREVER, "L"), NULL), 0, RESULT_GRANTED, 1);
    expect(run_cmd(&c, cl_acquire(2, 1, FOREVER, "L"), NULL), 0, RESULT_QUEUED, 1);
    ASSERT_EQ(ready_leader(&c), a);
    k = raft_last_index(cl_raft(&c, a)) + 1;
    cl_snapshot(&c, a, &before_x);

    /* 1. X on A only. */
    for (unsigned j = 1; j < CL_N; j++) cl_link(&c, a, j, false);
    cmds[0] = cl_release(1, 2, 1, "L");
    ASSERT_EQ(propose(&c, a, cmds, 1, &x), 0);
    ASSERT_UEQ(x.req.index, k);
    run_for(&c, 50);

    /* 2. C: leader of term 3, cut off at once, Y on it only; it crashes. */
    cc = elect_cut_off_other(&c);
    b = cc == 1 ? 2 : 1;
    cl_link(&c, b, cc, false);
    cmds[0] = cl_acquire(2, 2, TRY, "M");
    ASSERT_EQ(propose(&c, cc, cmds, 1, &y), 0);
    ASSERT_UEQ(y.req.index, k);
    run_for(&c, 50);
    cl_kill(&c, cc);
    ASSERT_EQ(log_term(&c, cc, k), cl_raft(&c, cc)->current_term);
    ASSERT_UEQ(raft_last_index(cl_raft(&c, b)), k - 1);
    ASSERT_GT(log_term(&c, cc, k), log_term(&c, a, k));

    /* 3. A comes back (to B only) and wins. */
    cl_link(&c, a, b, true);
    if (!run_until(&c, raft_leads, &(unsigned){a}, CL_ELECT_MS)) FAIL("A was not elected");
    term_a = cl_raft(&c, a)->current_term;
    note("delay %d: X (term %llu) on A, Y (term %llu) on C=%u, both at %llu; A leads in term "
         "%llu",
         delay_ms, (unsigned long long)log_term(&c, a, k), (unsigned long long)log_term(&c, cc, k),
         cc, (unsigned long long)k, (unsigned long long)term_a);
    ASSERT(run_until(&c, a_committed, &k, 3000));
    ASSERT_EQ(raft_state(cl_raft(&c, a)), RAFT_LEADER);
    out->bug_seen = !log_has_term(&c, b, term_a);
    out->a_store_x = store_applied_index(c.node[a].store) >= k;
    note("A's commit index reached %llu; B's log %s of term %llu; A's store %s X",
         (unsigned long long)k, out->bug_seen ? "has no entry" : "has an entry", (unsigned long long)term_a,
         out->a_store_x ? "applied" : "did not apply");
    /* baton's side: A did not serve from X before it really committed. */
    if (out->bug_seen) {
        ASSERT(!duties[a].ready);
        ASSERT(!out->a_store_x);
        ASSERT_GT(c.node[a].fsm.n_deferred, 0);
    }

    /* 4. A crashes before telling B. C comes back. */
    cl_kill(&c, a);
    cl_revive(&c, cc);
    cl_link(&c, b, cc, true);
    c.sync = (1u << b) | (1u << cc);
    l = wait_ready(&c, CL_N, CL_ELECT_MS);
    out->winner = l;
    wait_caught_up(&c, l);
    cl_assert_same(&c, c.sync);
    if (out->bug_seen) {
        /* C's log beat B's: Y replaced X; a still holds L, b holds M. */
        ASSERT_EQ(l, cc);
        assert_lock(&c, c.sync, "L", 1, 1, 1);
        assert_lock(&c, c.sync, "M", 2, 2, 0);
    } else {
        /* B holds an entry of A's term, newer than all of C's log: B leads
         * and X stands. */
        ASSERT_EQ(l, b);
        assert_lock(&c, c.sync, "L", 2, 2, 0);
        assert_lock(&c, c.sync, "M", 0, 0, 0);
    }
    /* No leader pushed X's grant of L: where X stands it applied before
     * its leader was ready (b learns it by re-sending its acquire). */
    for (size_t i = 0; i < n_pushes; i++) ASSERT(strcmp(pushes[i].name, "L") != 0);

    /* 5. A comes back. */
    cl_revive(&c, a);
    heal_all(&c);
    run_for(&c, 3000);
    out->a_shut_down = raft_state(cl_raft(&c, a)) == RAFT_UNAVAILABLE;
    if (out->a_shut_down) {
        /* 0.15 stops a node asked to replace an entry below its commit
         * index; the fixture's kill kept A's commit index. A's store never
         * applied X: it is the state before X. */
        ASSERT(same_bytes(&c, a, &before_x));
        /* A real crash loses the commit index: restart every node from
         * its persisted log, and A rejoins. */
        restart_all(&c, delay_ms);
    }
    l = wait_ready(&c, CL_N, CL_ELECT_MS);
    wait_caught_up(&c, l);
    cl_assert_same(&c, CL_ALL);
    assert_lock(&c, CL_ALL, "L", out->bug_seen ? 1 : 2, out->bug_seen ? 1 : 2,
                out->bug_seen ? 1 : 0);
    buf_free(&before_x);
    close_cluster(&c);
}

TEST(raft220_commit_of_earlier_term_entries)
{
    static const struct {
        int delay;
        const char *what;
    } timing[] = {
        {BARRIER_BATOND, "batond: once every follower answered, at most half a heartbeat after "
                         "the election"},
        {0, "in the same step as the election"},
        {20, "20 ms after the election (batond's former 20 ms poll)"},
        {250, "250 ms after the election, later than a heartbeat"},
    };
    struct fig8 r[4];

    for (int i = 0; i < 4; i++) {
        fig8_run(timing[i].delay, &r[i]);
        fprintf(stderr, "# canonical/raft#220, barrier %s: %s\n", timing[i].what,
                r[i].bug_seen
                    ? "REPRODUCED -- libraft 0.15 committed an entry of an earlier term with no "
                      "entry of the leader's term on a majority; the leader's store did not "
                      "apply it (raft/fsm.c), the leader never became ready, the next leader "
                      "replaced it, and every store agrees"
                    : "not reproduced -- the barrier went out with the earlier entry, which "
                      "committed only with it; every store agrees");
    }
    /* Any barrier in the log before the next heartbeat keeps the figure-8
     * sequence from completing. (Later than that, libraft 0.15 does commit
     * by counting replicas, and fig8_run checked baton's side; a libraft
     * that does not would print "not reproduced" above.) */
    for (int i = 0; i < 3; i++) ASSERT(!r[i].bug_seen);
}

/*
 * The same sequence, but the follower learns the commit: figure 8 with a
 * leader that never proposes its barrier (a stalled loop, or an
 * application without one). A commits X by counting (A and B store it, no
 * entry of A's term is on B) and tells B in a heartbeat; B's raft now
 * counts X as applied. A crashes; C comes back and wins (its last term, 3,
 * beats B's 2), and sends Y for index k: 0.15 stops B's raft ("new index
 * conflicts with committed entry"). The cluster restarts from its
 * persisted logs with A still down, so that only C can lead, and C's Y
 * replaces X on B.
 *
 * Had B's store applied X, the restart would not repair it: B's store
 * skips Y as already applied (same index, different state, for good; the
 * digest check per index catches it the moment C applies Y). raft/fsm.c
 * keeps X in B's gate instead -- the commit index stood on an entry of an
 * earlier term -- so B's store stays at k - 1, B is a stopped follower,
 * and the restart puts every store on Y.
 */
static bool b_learned(struct cl *c, void *arg)
{
    const struct fig8_nodes *n = arg;
    return cl_raft(c, n->b)->commit_index >= n->k || !raft_fixture_alive(c->f, n->a);
}

static bool b_stopped(struct cl *c, void *arg)
{
    const struct fig8_nodes *n = arg;
    return raft_state(cl_raft(c, n->b)) == RAFT_UNAVAILABLE;
}

TEST(raft220_follower_keeps_earlier_term_entry_out_of_store)
{
    struct cl c;
    struct cmd cmds[1];
    struct prop x = {0}, y = {0};
    struct fig8_nodes n = {.a = 0};
    unsigned l;
    raft_term term_a;

    open_cluster(&c, &(struct cl_opts){.no_pre_vote = true}, BARRIER_BATOND);
    run_cmd(&c, cl_open_session(TTL, "a"), NULL);
    run_cmd(&c, cl_open_session(TTL, "b"), NULL);
    expect(run_cmd(&c, cl_acquire(1, 1, FOREVER, "L"), NULL), 0, RESULT_GRANTED, 1);
    expect(run_cmd(&c, cl_acquire(2, 1, FOREVER, "L"), NULL), 0, RESULT_QUEUED, 1);
    n.k = raft_last_index(cl_raft(&c, n.a)) + 1;
    /* From now on a new leader never proposes its barrier. */
    for (unsigned i = 0; i < CL_N; i++) duties[i].delay_ms = 1000000;

    /* 1. X on A only; 2. C leads term 3, Y on C only, C crashes. */
    for (unsigned j = 1; j < CL_N; j++) cl_link(&c, n.a, j, false);
    cmds[0] = cl_release(1, 2, 1, "L");
    ASSERT_EQ(propose(&c, n.a, cmds, 1, &x), 0);
    ASSERT_UEQ(x.req.index, n.k);
    run_for(&c, 50);
    n.c = elect_cut_off_other(&c);
    n.b = n.c == 1 ? 2 : 1;
    cl_link(&c, n.b, n.c, false);
    cmds[0] = cl_acquire(2, 2, TRY, "M");
    ASSERT_EQ(propose(&c, n.c, cmds, 1, &y), 0);
    ASSERT_UEQ(y.req.index, n.k);
    run_for(&c, 50);
    cl_kill(&c, n.c);

    /* 3. A wins with B's vote, commits X by counting, tells B. */
    cl_link(&c, n.a, n.b, true);
    if (!run_until(&c, raft_leads, &n.a, CL_ELECT_MS)) FAIL("A was not elected");
    term_a = cl_raft(&c, n.a)->current_term;
    ASSERT(run_until(&c, b_learned, &n, 3000));
    ASSERT(!log_has_term(&c, n.b, term_a));
    note("B learned commit index %llu; its entry there is of term %llu, its term %llu",
         (unsigned long long)cl_raft(&c, n.b)->commit_index,
         (unsigned long long)log_term(&c, n.b, n.k),
         (unsigned long long)cl_raft(&c, n.b)->current_term);
    /* raft counts X applied on B; B's store does not have it. */
    ASSERT_GE(raft_last_applied(cl_raft(&c, n.b)), n.k);
    ASSERT_UEQ(store_applied_index(c.node[n.b].store), n.k - 1);
    ASSERT_UEQ(fsm_gated(&c.node[n.b].fsm), 1);
    /* STATUS reports the index the store's digest describes, not raft's:
     * otherwise B and a node whose store has X would report one index
     * with two digests, which batonctl status calls diverged. */
    ASSERT_UEQ(fsm_state_index(&c.node[n.b].fsm), n.k - 1);
    ASSERT(!duties[n.a].ready);
    /* A snapshot now would be taken at raft's index k with the store's
     * state of k - 1: refused. */
    {
        struct raft_fsm *rf = &c.node[n.b].fsm.base;
        struct raft_buffer *bufs = NULL;
        unsigned n_bufs = 0;
        ASSERT_EQ(rf->snapshot(rf, &bufs, &n_bufs), RAFT_BUSY);
        ASSERT(bufs == NULL);
    }

    /* 4. A crashes; C returns, wins, and sends Y: 0.15 stops B's raft. */
    cl_kill(&c, n.a);
    cl_revive(&c, n.c);
    cl_link(&c, n.b, n.c, true);
    c.sync = (1u << n.b) | (1u << n.c);
    ASSERT(run_until(&c, b_stopped, &n, CL_ELECT_MS));
    ASSERT_UEQ(store_applied_index(c.node[n.b].store), n.k - 1);
    ASSERT(fsm_failed(&c.node[n.b].fsm) == NULL);
    note("B's raft stopped with X still in its gate; its store is at %llu",
         (unsigned long long)store_applied_index(c.node[n.b].store));

    /* 5. Every node restarts from its persisted log, A stays down: C leads,
     * Y replaces X on B, and B's store applies it. */
    restart_all(&c, BARRIER_BATOND);
    cl_kill(&c, n.a);
    c.sync = (1u << n.b) | (1u << n.c);
    l = wait_ready(&c, CL_N, CL_ELECT_MS);
    ASSERT_EQ(l, n.c);
    wait_caught_up(&c, l);
    cl_assert_same(&c, c.sync);
    assert_lock(&c, c.sync, "L", 1, 1, 1);
    assert_lock(&c, c.sync, "M", 2, 2, 0);

    /* 6. A returns: its X is replaced too (its store never applied it). */
    cl_revive(&c, n.a);
    heal_all(&c);
    wait_caught_up(&c, l);
    cl_assert_same(&c, CL_ALL);
    assert_lock(&c, CL_ALL, "L", 1, 1, 1);
    close_cluster(&c);
}

/* ---- 7. pre-vote and an outdated term ------------------------------------------------------------ */

/*
 * libraft 0.15's pre-vote asks for the candidate's term + 1 and a voter
 * refuses a term not above its own; the refusal does not raise the
 * candidate's term (canonical/raft PR #280 addresses it; 0.15 lacks it). A
 * node cut off keeps its term (pre-vote is what keeps it from inflating),
 * so when it comes back with the longer log and the other live node has a
 * higher term but a shorter log, neither can win: the cluster has no
 * leader until a third node returns. Sequence: leader A is cut off with an
 * entry of its own; B and C elect C, which is cut off at once (its first
 * entries stay on it) and crashes; A and B meet again.
 *
 * The test prints whether A and B elected a leader, and asserts what must
 * hold either way: nothing applied without a majority, and once C is back
 * a leader is elected and every store agrees.
 */
TEST(prevote_outdated_term_waits_for_third_node)
{
    struct cl c;
    struct prop x;
    struct cmd cmd;
    struct buf before = {0};
    unsigned cc = CL_N, b, l;
    bool led = false;

    memset(&x, 0, sizeof x);
    open_cluster(&c, NULL, barrier_mode);
    run_cmd(&c, cl_open_session(TTL, "a"), NULL);
    run_cmd(&c, cl_open_session(TTL, "b"), NULL);
    expect(run_cmd(&c, cl_acquire(1, 1, FOREVER, "L"), NULL), 0, RESULT_GRANTED, 1);
    expect(run_cmd(&c, cl_acquire(2, 1, FOREVER, "L"), NULL), 0, RESULT_QUEUED, 1);
    ASSERT_EQ(ready_leader(&c), 0);
    cl_snapshot(&c, 0, &before);

    for (unsigned j = 1; j < CL_N; j++) cl_link(&c, 0, j, false);
    cmd = cl_release(1, 2, 1, "L");
    ASSERT_EQ(propose(&c, 0, &cmd, 1, &x), 0);
    for (raft_time end = raft_fixture_time(c.f) + CL_ELECT_MS;
         cc == CL_N && raft_fixture_time(c.f) < end;) {
        step(&c);
        for (unsigned i = 1; i < CL_N; i++)
            if (raft_state(cl_raft(&c, i)) == RAFT_LEADER) cc = i;
    }
    ASSERT(cc != CL_N);
    b = cc == 1 ? 2 : 1;
    cl_link(&c, b, cc, false);
    run_for(&c, 100);
    cl_kill(&c, cc);
    ASSERT_GT(raft_last_index(cl_raft(&c, 0)), raft_last_index(cl_raft(&c, b)));
    ASSERT_GT(cl_raft(&c, b)->current_term, cl_raft(&c, 0)->current_term);

    cl_link(&c, 0, b, true);
    c.sync = 1u | (1u << b);
    for (raft_time end = raft_fixture_time(c.f) + 10000; raft_fixture_time(c.f) < end;) {
        step(&c);
        if (ready_leader(&c) != CL_N) led = true;
    }
    fprintf(stderr, "# pre-vote, A (longer log, term %llu) and B (term %llu) alone for 10 s: %s\n",
            (unsigned long long)cl_raft(&c, 0)->current_term,
            (unsigned long long)cl_raft(&c, b)->current_term,
            led ? "a leader was elected"
                : "no leader (libraft 0.15 pre-vote, canonical/raft PR #280): the cluster "
                  "waits for the third node");
    if (!led) {
        /* Nothing was applied meanwhile. */
        ASSERT(same_bytes(&c, 0, &before));
        ASSERT(same_bytes(&c, b, &before));
    }

    cl_revive(&c, cc);
    heal_all(&c);
    l = wait_ready(&c, CL_N, CL_ELECT_MS);
    wait_caught_up(&c, l);
    cl_assert_same(&c, CL_ALL);
    /* a's release stands or not, on every node alike; one holder. */
    {
        struct lock_view v = lock_of(&c, 0, "L");
        ASSERT((v.holder == 1 && v.fence == 1 && v.n_waiters == 1) ||
               (v.holder == 2 && v.fence == 2 && v.n_waiters == 0));
    }
    buf_free(&before);
    close_cluster(&c);
}

int main(int argc, char **argv)
{
    faults_main_begin(argc, argv);
    RUN(raft220_commit_of_earlier_term_entries);
    RUN(raft220_follower_keeps_earlier_term_entry_out_of_store);
    RUN(prevote_outdated_term_waits_for_third_node);
    return faults_main_end();
}
