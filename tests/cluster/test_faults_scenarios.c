/*
 * test_faults_scenarios.c -- raft-level fault scenarios on raft_fixture
 * (simulated time, in-memory raft I/O) with baton's real LMDB store and
 * raft/fsm.c behind every node, each node running the model of batond's
 * leader duties (tests/cluster/faults.h): partitions with commands on both
 * sides, an isolated leader with a queue of waiters, catch-up by snapshot
 * of a node that was cut off while it led, and crashes during a lock
 * hand-off (fixture kill, and a restart of every node from its persisted
 * raft log). docs/guarantees.md, "Raft level", says what they found.
 *
 * BATON_FAULT_VERBOSE=1 narrates; BATON_FAULT_BARRIER=N proposes the
 * barrier a fixed N ms after the election instead, to compare.
 */
#include "tests/cluster/faults.h"

/* ---- 1. partitions ------------------------------------------------------------------------------ */

/*
 * The leader ends up alone: what clients ask it there never applies
 * anywhere, while the majority elects a leader and decides otherwise.
 * After the heal every store holds what the majority decided. Then a
 * follower alone: it cannot disturb the leader, nor apply anything, and
 * catches up after the heal without an election (pre-vote).
 */
TEST(partition_minority_never_applies_majority_decides)
{
    struct cl c;
    struct prop minority[3];
    struct cmd cmd;
    struct buf before = {0};
    uint64_t idx, index_before;
    unsigned old, leader;
    raft_term term;

    memset(minority, 0, sizeof minority);
    open_cluster(&c, NULL, barrier_mode);
    /* sessions 1..4; a holds L, b waits; c holds M. */
    for (int s = 0; s < 4; s++) run_cmd(&c, cl_open_session(TTL, "s"), NULL);
    expect(run_cmd(&c, cl_acquire(1, 1, FOREVER, "L"), NULL), 0, RESULT_GRANTED, 1);
    expect(run_cmd(&c, cl_acquire(2, 1, FOREVER, "L"), NULL), 0, RESULT_QUEUED, 1);
    expect(run_cmd(&c, cl_acquire(3, 1, FOREVER, "M"), &idx), 0, RESULT_GRANTED, 2);
    old = ready_leader(&c);
    ASSERT_EQ(old, 0);
    cl_snapshot(&c, old, &before);

    /* Minority {0}: a releases L (would grant b), c releases M, d takes N. */
    for (unsigned j = 1; j < CL_N; j++) cl_link(&c, old, j, false);
    c.sync = CL_ALL & ~(1u << old);
    cmd = cl_release(1, 2, 1, "L");
    ASSERT_EQ(propose(&c, old, &cmd, 1, &minority[0]), 0);
    cmd = cl_release(3, 2, 2, "M");
    ASSERT_EQ(propose(&c, old, &cmd, 1, &minority[1]), 0);
    cmd = cl_acquire(4, 9, TRY, "N");
    ASSERT_EQ(propose(&c, old, &cmd, 1, &minority[2]), 0);

    /* Majority {1, 2}: elects, then d takes M's queue and L stays with a. */
    leader = wait_ready(&c, old, CL_ELECT_MS);
    ASSERT_NE(leader, old);
    expect(run_cmd(&c, cl_acquire(4, 1, FOREVER, "M"), NULL), 0, RESULT_QUEUED, 1);
    expect(run_cmd(&c, cl_acquire(4, 2, TRY, "L"), NULL), BATON_EWOULDBLOCK, 0, 0);
    expect(run_cmd(&c, cl_release(3, 2, 2, "M"), NULL), 0, RESULT_OK, 0); /* M to d, fence 3 */
    run_for(&c, 3000);

    /* The minority applied nothing; its proposals failed when it stepped
     * down; it never pushed. */
    ASSERT_NE(raft_state(cl_raft(&c, old)), RAFT_LEADER);
    for (int k = 0; k < 3; k++) {
        ASSERT(minority[k].done);
        ASSERT_EQ(minority[k].status, RAFT_LEADERSHIPLOST);
    }
    ASSERT_UEQ(store_applied_index(c.node[old].store), idx);
    ASSERT(same_bytes(&c, old, &before));
    for (size_t k = 0; k < n_pushes; k++) ASSERT_NE(pushes[k].node, old);
    /* The one push: M to d with fence 3, from the majority's leader. */
    ASSERT_EQ(n_pushes, 1);
    ASSERT_EQ(pushes[0].node, leader);
    ASSERT_UEQ(pushes[0].session, 4);
    ASSERT_UEQ(pushes[0].fence, 3);

    /* Heal: every store is the majority's. */
    heal_all(&c);
    run_for(&c, 500);
    leader = wait_ready(&c, CL_N, CL_ELECT_MS);
    wait_caught_up(&c, leader);
    cl_assert_same(&c, CL_ALL);
    assert_lock(&c, CL_ALL, "L", 1, 1, 1);
    assert_lock(&c, CL_ALL, "M", 4, 3, 0);
    assert_lock(&c, CL_ALL, "N", 0, 0, 0);

    /* A follower alone: no election, no apply, and after the heal the
     * leader is still the same, in the same term. */
    term = cl_raft(&c, leader)->current_term;
    {
        unsigned f = (leader + 1) % CL_N;
        for (unsigned j = 0; j < CL_N; j++)
            if (j != f) cl_link(&c, f, j, false);
        c.sync = CL_ALL & ~(1u << f);
        index_before = store_applied_index(c.node[f].store);
        cmd = cl_acquire(1, 3, TRY, "L"); /* a holds L already: a no-op result */
        ASSERT_EQ(propose(&c, f, &cmd, 1, &minority[0]), RAFT_NOTLEADER);
        expect(run_cmd(&c, cl_acquire(2, 2, TRY, "N"), NULL), 0, RESULT_GRANTED, 4);
        run_for(&c, 5000);
        ASSERT_UEQ(store_applied_index(c.node[f].store), index_before);
        ASSERT_NE(raft_state(cl_raft(&c, f)), RAFT_LEADER);
        heal_all(&c);
        run_for(&c, 1000);
        ASSERT_EQ(ready_leader(&c), leader);
        ASSERT_UEQ(cl_raft(&c, leader)->current_term, term);
        wait_caught_up(&c, leader);
        cl_assert_same(&c, CL_ALL);
        assert_lock(&c, CL_ALL, "N", 2, 4, 0);
    }
    buf_free(&before);
    close_cluster(&c);
}

/* ---- 2. an isolated leader with a queue ------------------------------------------------------------ */

/*
 * a holds L with b, c and d queued behind it. The leader is cut off; there
 * a releases L and b gives up. The majority's leader takes a's release
 * again (the client re-sends the same seq): b gets L -- once, whatever the
 * retries -- then hands it to c. The old leader never pushed anything;
 * after the heal it holds the majority's queue.
 */
TEST(isolated_leader_with_queued_waiters)
{
    struct cl c;
    struct prop lost[2];
    struct cmd cmd;
    uint64_t idx;
    unsigned old, leader;

    memset(lost, 0, sizeof lost);
    open_cluster(&c, NULL, barrier_mode);
    for (int s = 0; s < 4; s++) run_cmd(&c, cl_open_session(TTL, "s"), NULL);
    expect(run_cmd(&c, cl_acquire(1, 1, FOREVER, "L"), NULL), 0, RESULT_GRANTED, 1);
    for (uint64_t s = 2; s <= 4; s++)
        expect(run_cmd(&c, cl_acquire(s, 1, FOREVER, "L"), &idx), 0, RESULT_QUEUED, s - 1);
    old = ready_leader(&c);

    for (unsigned j = 0; j < CL_N; j++)
        if (j != old) cl_link(&c, old, j, false);
    c.sync = CL_ALL & ~(1u << old);
    cmd = cl_release(1, 2, 1, "L");
    ASSERT_EQ(propose(&c, old, &cmd, 1, &lost[0]), 0);
    cmd = cl_close_session(2, 9);
    ASSERT_EQ(propose(&c, old, &cmd, 1, &lost[1]), 0);
    run_for(&c, 100);
    ASSERT_EQ(n_pushes, 0);

    leader = wait_ready(&c, old, CL_ELECT_MS);
    /* a re-sends its release, twice: one hand-off, to b, fence 2. */
    expect(run_cmd(&c, cl_release(1, 2, 1, "L"), NULL), 0, RESULT_OK, 0);
    expect(run_cmd(&c, cl_release(1, 2, 1, "L"), NULL), 0, RESULT_OK, 0);
    ASSERT_EQ(n_pushes, 1);
    ASSERT_UEQ(pushes[0].session, 2);
    ASSERT_UEQ(pushes[0].fence, 2);
    /* b re-sends its queued acquire: the final outcome, the same grant. */
    expect(run_cmd(&c, cl_acquire(2, 1, FOREVER, "L"), NULL), 0, RESULT_GRANTED, 2);
    /* b releases: c gets fence 3. */
    expect(run_cmd(&c, cl_release(2, 2, 2, "L"), NULL), 0, RESULT_OK, 0);
    ASSERT_EQ(n_pushes, 2);
    ASSERT_UEQ(pushes[1].session, 3);
    ASSERT_UEQ(pushes[1].fence, 3);
    assert_lock(&c, c.sync, "L", 3, 3, 1);

    run_for(&c, 3000);
    ASSERT(lost[0].done && lost[1].done);
    ASSERT_EQ(lost[0].status, RAFT_LEADERSHIPLOST);
    ASSERT_EQ(lost[1].status, RAFT_LEADERSHIPLOST);
    ASSERT_UEQ(store_applied_index(c.node[old].store), idx);
    assert_lock(&c, 1u << old, "L", 1, 1, 3);
    for (size_t k = 0; k < n_pushes; k++) ASSERT_EQ(pushes[k].node, leader);

    heal_all(&c);
    leader = wait_ready(&c, CL_N, CL_ELECT_MS);
    wait_caught_up(&c, leader);
    cl_assert_same(&c, CL_ALL);
    assert_lock(&c, CL_ALL, "L", 3, 3, 1);
    ASSERT_EQ(store_session_exists(c.node[old].store, 2), 1);
    close_cluster(&c);
}

/* ---- 3. catch-up by snapshot of a cut-off leader ---------------------------------------------------- */

/*
 * The leader is cut off with entries of its own in its log that never
 * commit. The majority runs long enough (lock traffic with queues and
 * hand-offs) for its leader to snapshot and drop those indexes from its
 * log. After the heal the old leader gets an InstallSnapshot, which
 * replaces its state and its uncommitted tail; then it applies new entries
 * itself. Every store ends identical.
 */
TEST(cut_off_leader_catches_up_by_snapshot)
{
    const struct cl_opts o = {.snapshot_threshold = 32, .snapshot_trailing = 8};
    enum { ROUNDS = 60 };
    struct cl c;
    struct prop lost[4];
    struct cmd cmd;
    uint64_t fence = 0, idx;
    unsigned old, leader;
    char name[16];

    memset(lost, 0, sizeof lost);
    open_cluster(&c, &o, barrier_mode);
    for (int s = 0; s < 3; s++) run_cmd(&c, cl_open_session(TTL, "s"), NULL);
    expect(run_cmd(&c, cl_acquire(1, 1, FOREVER, "hot"), NULL), 0, RESULT_GRANTED, 1);
    old = ready_leader(&c);

    for (unsigned j = 0; j < CL_N; j++)
        if (j != old) cl_link(&c, old, j, false);
    c.sync = CL_ALL & ~(1u << old);
    for (int k = 0; k < 4; k++) {
        snprintf(name, sizeof name, "x%d", k);
        cmd = cl_acquire(3, 100 + (uint64_t)k, TRY, name);
        ASSERT_EQ(propose(&c, old, &cmd, 1, &lost[k]), 0);
    }
    run_for(&c, 50);
    idx = raft_last_index(cl_raft(&c, old));

    /* Sessions 1 and 2 pass "hot" back and forth through the queue. */
    leader = wait_ready(&c, old, CL_ELECT_MS);
    fence = 1;
    for (uint64_t r = 0; r < ROUNDS; r++) {
        uint64_t holder = r % 2 == 0 ? 1 : 2, other = 3 - holder;
        uint64_t seq = 2 + 2 * r;
        expect(run_cmd(&c, cl_acquire(other, seq, FOREVER, "hot"), NULL), 0, RESULT_QUEUED, 1);
        expect(run_cmd(&c, cl_release(holder, seq + 1, fence, "hot"), NULL), 0, RESULT_OK, 0);
        fence++;
    }
    assert_lock(&c, c.sync, "hot", ROUNDS % 2 == 0 ? 1 : 2, fence, 0);
    ASSERT_EQ(n_pushes, ROUNDS);
    for (unsigned i = 0; i < CL_N; i++)
        if (i != old) ASSERT_GT(c.node[i].fsm.n_snapshots, 0);
    /* The leader's log no longer holds the indexes the old leader has. */
    ASSERT_GT(cl_raft(&c, leader)->log.offset, idx);
    ASSERT_UEQ(c.node[old].fsm.n_restores, 0);

    heal_all(&c);
    run_for(&c, 500);
    leader = wait_ready(&c, CL_N, CL_ELECT_MS);
    ASSERT_NE(leader, old);
    wait_caught_up(&c, leader);
    cl_assert_same(&c, CL_ALL);
    ASSERT_GT(c.node[old].fsm.n_restores, 0);
    for (int k = 0; k < 4; k++) {
        ASSERT_EQ(lost[k].status, RAFT_LEADERSHIPLOST);
        snprintf(name, sizeof name, "x%d", k);
        assert_lock(&c, CL_ALL, name, 0, 0, 0);
    }
    /* After the restore the old leader applies new entries itself. */
    expect(run_cmd(&c, cl_acquire(3, 200, TRY, "after"), NULL), 0, RESULT_GRANTED, fence + 1);
    ASSERT_UEQ(store_applied_index(c.node[old].store), store_applied_index(c.node[leader].store));
    cl_assert_same(&c, CL_ALL);
    ASSERT_UEQ(c.node[old].fsm.n_skipped, 0);
    close_cluster(&c);
}

/* ---- 4. crashes during a lock hand-off ---------------------------------------------------------------- */

/*
 * a holds L, b waits. a's release (the hand-off to b) is proposed on the
 * leader, and the leader is killed `after` simulated events later: before
 * the entry left it, while it was on the followers' disks, after it
 * committed on the leader only, after the followers applied it... The
 * client re-sends the release with the same seq on whoever leads next;
 * the killed node comes back. Whatever the moment: exactly one hand-off
 * (b holds L with fence 2), b learns it (push, or its re-sent acquire),
 * and every store is identical. With `restart`, every node is also
 * restarted from its persisted raft log right after the kill.
 */
static void hand_off_crash(unsigned after, bool restart)
{
    struct cl c;
    struct prop rel = {0};
    struct cmd cmd;
    unsigned old, leader;

    open_cluster(&c, NULL, barrier_mode);
    run_cmd(&c, cl_open_session(TTL, "a"), NULL);
    run_cmd(&c, cl_open_session(TTL, "b"), NULL);
    expect(run_cmd(&c, cl_acquire(1, 1, FOREVER, "L"), NULL), 0, RESULT_GRANTED, 1);
    expect(run_cmd(&c, cl_acquire(2, 1, FOREVER, "L"), NULL), 0, RESULT_QUEUED, 1);
    old = ready_leader(&c);

    cmd = cl_release(1, 2, 1, "L");
    ASSERT_EQ(propose(&c, old, &cmd, 1, &rel), 0);
    for (unsigned k = 0; k < after; k++) step(&c);
    note("after %u events (t=%llu): leader applied %llu, followers %llu %llu, released %d", after,
         (unsigned long long)raft_fixture_time(c.f),
         (unsigned long long)raft_last_applied(cl_raft(&c, old)),
         (unsigned long long)raft_last_applied(cl_raft(&c, (old + 1) % CL_N)),
         (unsigned long long)raft_last_applied(cl_raft(&c, (old + 2) % CL_N)), rel.done);
    if (rel.done) {
        ASSERT_EQ(rel.status, 0);
        expect(rel.results[0], 0, RESULT_OK, 0);
    }
    cl_kill(&c, old);
    if (restart) {
        restart_all(&c, barrier_mode);
        ASSERT(!rel.busy);
    } else {
        leader = wait_ready(&c, old, CL_ELECT_MS);
        ASSERT_NE(leader, old);
    }
    /* a's client did not see an answer, or did: it re-sends either way. */
    expect(run_cmd(&c, cl_release(1, 2, 1, "L"), NULL), 0, RESULT_OK, 0);
    /* b's client re-sends its acquire after the failover. */
    expect(run_cmd(&c, cl_acquire(2, 1, FOREVER, "L"), NULL), 0, RESULT_GRANTED, 2);
    for (size_t k = 0; k < n_pushes; k++) {
        ASSERT_UEQ(pushes[k].session, 2);
        ASSERT_UEQ(pushes[k].fence, 2);
    }
    ASSERT_LE(n_pushes, 1);
    if (!restart) {
        cl_revive(&c, old);
        heal_all(&c);
    }
    leader = wait_ready(&c, CL_N, CL_ELECT_MS);
    wait_caught_up(&c, leader);
    cl_assert_same(&c, CL_ALL);
    assert_lock(&c, CL_ALL, "L", 2, 2, 0);
    /* The next grant anywhere takes fence 3: no fence was spent twice. */
    expect(run_cmd(&c, cl_acquire(1, 3, TRY, "M"), NULL), 0, RESULT_GRANTED, 3);
    cl_assert_same(&c, CL_ALL);
    for (unsigned i = 0; i < CL_N; i++) ASSERT_EQ(c.node[i].fsm.n_restores, 0);
    close_cluster(&c);
}

TEST(crash_during_hand_off_kill_and_revive)
{
    for (unsigned after = 0; after <= 24; after++) hand_off_crash(after, false);
}

TEST(crash_during_hand_off_restart_every_node)
{
    for (unsigned after = 0; after <= 24; after += 2) hand_off_crash(after, true);
}

int main(int argc, char **argv)
{
    faults_main_begin(argc, argv);
    RUN(partition_minority_never_applies_majority_decides);
    RUN(isolated_leader_with_queued_waiters);
    RUN(cut_off_leader_catches_up_by_snapshot);
    RUN(crash_during_hand_off_kill_and_revive);
    RUN(crash_during_hand_off_restart_every_node);
    return faults_main_end();
}
