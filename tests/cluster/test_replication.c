/*
 * test_replication.c -- the real lock state machine replicated by libraft
 * 0.15 on a raft_fixture cluster (simulated time, in-memory raft I/O), one
 * LMDB store per node: identical state on every node, leader changes with
 * queued waiters, an isolated leader, catch-up by snapshot, and replay
 * safety after a restart.
 *
 * "Identical" means identical store_snapshot bytes, applied index included.
 */
#include "tests/lib/runner.h"

#include "baton/baton_defs.h"
#include "storage/store_test.h"
#include "tests/cluster/fixture.h"

#define TTL 10000
#define FOREVER BATON_WAIT_FOREVER
#define TRY BATON_WAIT_TRY

/* Expect result k of p: status, kind and value. */
static void assert_res(const struct cl_prop *p, size_t k, int32_t status, uint8_t kind,
                       uint64_t value)
{
    ASSERT(k < p->n_results);
    ASSERT_EQ(p->results[k].status, status);
    if (status == 0) {
        ASSERT_EQ(p->results[k].kind, kind);
        ASSERT_UEQ(p->results[k].value, value);
    }
}

/* Every node in mask sees lock `name` held by `holder` with `fence`, and
 * exactly the waiters listed (sessions, queue order). */
static void assert_lock(struct cl *c, unsigned mask, const char *name, uint64_t holder,
                        uint64_t fence, const uint64_t *waiters, uint32_t n)
{
    for (unsigned i = 0; i < CL_N; i++) {
        uint64_t h, f, w[16];
        uint32_t nw;

        if (!(mask & (1u << i))) continue;
        cl_lock(c, i, name, &h, &f, w, 16, &nw);
        if (h != holder || f != fence || nw != n)
            FAIL("node %u, lock %s: holder %llu fence %llu waiters %u, expected %llu %llu %u", i,
                 name, (unsigned long long)h, (unsigned long long)f, nw,
                 (unsigned long long)holder, (unsigned long long)fence, n);
        for (uint32_t k = 0; k < n; k++) ASSERT_UEQ(w[k], waiters[k]);
    }
}

/* The raft index and the store's applied index agree on every node in mask
 * (no barrier or configuration entry is proposed after the bootstrap one, so
 * every entry past index 1 is a command the store saw). */
static void assert_indexes_agree(struct cl *c, unsigned mask)
{
    for (unsigned i = 0; i < CL_N; i++) {
        if (!(mask & (1u << i))) continue;
        ASSERT_UEQ(store_applied_index(c->node[i].store), raft_last_applied(cl_raft(c, i)));
    }
}

/* ---- 1. the same state everywhere ------------------------------------------- */

TEST(state_identical_on_all_nodes)
{
    struct cl c;
    struct cl_prop p;
    struct cmd three[3], mixed[4];
    const uint64_t q_bc[] = {2, 3}, q_c[] = {3};

    cl_open(&c, NULL);

    /* One entry, three sessions: ids follow commit order. The first entry
     * after the bootstrap configuration is index 2. */
    three[0] = cl_open_session(TTL, "a");
    three[1] = cl_open_session(TTL, "b");
    three[2] = cl_open_session(TTL, "c");
    cl_run(&c, three, 3, &p);
    ASSERT_UEQ(p.index, 2);
    for (size_t k = 0; k < 3; k++) assert_res(&p, k, 0, RESULT_OK, k + 1);
    cl_assert_same(&c, CL_ALL);

    /* A mixed batch, applied in order within one entry. */
    mixed[0] = cl_acquire(1, 1, FOREVER, "L");   /* a gets L with fence 1. */
    mixed[1] = cl_acquire(2, 1, FOREVER, "L");   /* b queues first. */
    mixed[2] = cl_acquire(3, 1, FOREVER, "L");   /* c queues second. */
    mixed[3] = cl_acquire(3, 2, TRY, "M");       /* c gets M with fence 2. */
    cl_run(&c, mixed, 4, &p);
    ASSERT_UEQ(p.index, 3);
    assert_res(&p, 0, 0, RESULT_GRANTED, 1);
    assert_res(&p, 1, 0, RESULT_QUEUED, 1);
    assert_res(&p, 2, 0, RESULT_QUEUED, 2);
    assert_res(&p, 3, 0, RESULT_GRANTED, 2);
    ASSERT_EQ(p.n_fx, 0);
    cl_assert_same(&c, CL_ALL);
    assert_lock(&c, CL_ALL, "L", 1, 1, q_bc, 2);
    assert_lock(&c, CL_ALL, "M", 3, 2, NULL, 0);

    /* A try on a held lock is refused and queues nothing. */
    cl_run1(&c, cl_acquire(2, 2, TRY, "M"), &p);
    assert_res(&p, 0, BATON_EWOULDBLOCK, 0, 0);
    assert_lock(&c, CL_ALL, "M", 3, 2, NULL, 0);

    /* A follower refuses proposals. */
    {
        struct cl_prop q;
        struct cmd cmd = cl_open_session(TTL, "x");
        ASSERT_EQ(cl_propose(&c, 1, &cmd, 1, &q), RAFT_NOTLEADER);
        ASSERT(!q.done);
    }

    /* Releasing hands L to the queue head in the same entry, fence 3. */
    cl_run1(&c, cl_release(1, 2, 1, "L"), &p);
    assert_res(&p, 0, 0, RESULT_OK, 0);
    ASSERT_EQ(p.n_fx, 1);
    cl_assert_fx(&p, 0, FX_GRANT, 2, 1, 3, "L");
    assert_lock(&c, CL_ALL, "L", 2, 3, q_c, 1);
    cl_assert_same(&c, CL_ALL);

    /* The same request again (a client retry) gets the cached result and
     * changes nothing: no second grant. */
    cl_run1(&c, cl_release(1, 2, 1, "L"), &p);
    assert_res(&p, 0, 0, RESULT_OK, 0);
    ASSERT_EQ(p.n_fx, 0);
    assert_lock(&c, CL_ALL, "L", 2, 3, q_c, 1);

    /* A stale release (old fence) is refused. */
    cl_run1(&c, cl_release(1, 3, 1, "L"), &p);
    assert_res(&p, 0, BATON_ENOTHELD, 0, 0);

    /* Closing c drops its wait on L and frees M. */
    cl_run1(&c, cl_close_session(3, 3), &p);
    assert_res(&p, 0, 0, RESULT_OK, 0);
    ASSERT_EQ(p.n_fx, 1);
    cl_assert_fx(&p, 0, FX_SESSION_GONE, 3, 0, 0, NULL);
    assert_lock(&c, CL_ALL, "L", 2, 3, NULL, 0);
    assert_lock(&c, CL_ALL, "M", 0, 0, NULL, 0);

    /* b releases; L is free; the next grant anywhere takes fence 4. */
    cl_run1(&c, cl_release(2, 3, 3, "L"), &p);
    assert_res(&p, 0, 0, RESULT_OK, 0);
    ASSERT_EQ(p.n_fx, 0);
    cl_run1(&c, cl_acquire(1, 4, TRY, "M"), &p);
    assert_res(&p, 0, 0, RESULT_GRANTED, 4);

    assert_lock(&c, CL_ALL, "L", 0, 0, NULL, 0);
    ASSERT_EQ(store_session_exists(c.node[2].store, 3), 0);
    ASSERT_EQ(store_session_exists(c.node[2].store, 2), 1);
    cl_assert_same(&c, CL_ALL);
    assert_indexes_agree(&c, CL_ALL);
    for (unsigned i = 0; i < CL_N; i++) {
        ASSERT_UEQ(c.node[i].fsm.n_skipped, 0);
        ASSERT_UEQ(c.node[i].fsm.n_restores, 0);
    }
    cl_close(&c);
}

/* ---- 2. leader changes with queued waiters --------------------------------- */

TEST(leader_change_keeps_queue_and_fences)
{
    struct cl c;
    struct cl_prop p, q;
    struct cmd setup[5], cmd;
    const uint64_t q_bcd[] = {2, 3, 4}, q_cd[] = {3, 4};
    unsigned leader2, dead;
    uint64_t idx;
    raft_term term;

    cl_open(&c, NULL);
    for (size_t k = 0; k < 4; k++) setup[k] = cl_open_session(TTL, "s");
    cl_run(&c, setup, 4, &p);
    setup[0] = cl_acquire(1, 1, FOREVER, "L");  /* a gets L with fence 1. */
    setup[1] = cl_acquire(2, 1, FOREVER, "L");  /* b, c and d queue. */
    setup[2] = cl_acquire(3, 1, FOREVER, "L");
    setup[3] = cl_acquire(4, 1, FOREVER, "L");
    setup[4] = cl_acquire(4, 2, FOREVER, "M");  /* d gets M with fence 2. */
    cl_run(&c, setup, 5, &p);
    assert_res(&p, 0, 0, RESULT_GRANTED, 1);
    assert_res(&p, 3, 0, RESULT_QUEUED, 3);
    assert_res(&p, 4, 0, RESULT_GRANTED, 2);
    assert_lock(&c, CL_ALL, "L", 1, 1, q_bcd, 3);
    idx = p.index;
    term = raft_fixture_get(c.f, 0)->current_term;

    /* Depose node 0 and elect node 1. The old leader now refuses
     * proposals. Nothing was applied in between. */
    raft_fixture_depose(c.f);
    ASSERT_EQ(cl_leader(&c), CL_N);
    ASSERT_NE(raft_state(cl_raft(&c, 0)), RAFT_LEADER);
    cmd = cl_open_session(TTL, "x");
    ASSERT_EQ(cl_propose(&c, 0, &cmd, 1, &q), RAFT_NOTLEADER);
    cl_elect(&c, 1);
    ASSERT_GT(cl_raft(&c, 1)->current_term, term);
    cl_assert_same(&c, CL_ALL);
    ASSERT_UEQ(store_applied_index(c.node[1].store), idx);

    /* On the new leader a's release grants the queue head, b, with fence 3.
     * 0.15 appends no entry of its own on election: this is idx + 1. */
    cl_run1(&c, cl_release(1, 2, 1, "L"), &p);
    ASSERT_UEQ(p.index, idx + 1);
    assert_res(&p, 0, 0, RESULT_OK, 0);
    ASSERT_EQ(p.n_fx, 1);
    cl_assert_fx(&p, 0, FX_GRANT, 2, 1, 3, "L");
    assert_lock(&c, CL_ALL, "L", 2, 3, q_cd, 2);

    /* The client did not see the answer and retries on the new leader with
     * the same seq: the cached result, no second grant. */
    cl_run1(&c, cl_release(1, 2, 1, "L"), &p);
    assert_res(&p, 0, 0, RESULT_OK, 0);
    ASSERT_EQ(p.n_fx, 0);
    assert_lock(&c, CL_ALL, "L", 2, 3, q_cd, 2);
    cl_assert_same(&c, CL_ALL);

    /* Kill that leader too; one of the other two takes over. */
    dead = 1;
    cl_kill(&c, dead);
    leader2 = cl_wait_leader(&c, dead, CL_ELECT_MS);
    ASSERT_NE(leader2, dead);

    /* b releases: c gets fence 4. d releases M (no waiter). c releases:
     * d gets fence 5. */
    cl_run1(&c, cl_release(2, 2, 3, "L"), &p);
    ASSERT_EQ(p.n_fx, 1);
    cl_assert_fx(&p, 0, FX_GRANT, 3, 1, 4, "L");
    cl_run1(&c, cl_release(4, 3, 2, "M"), &p);
    assert_res(&p, 0, 0, RESULT_OK, 0);
    ASSERT_EQ(p.n_fx, 0);
    cl_run1(&c, cl_release(3, 2, 4, "L"), &p);
    ASSERT_EQ(p.n_fx, 1);
    cl_assert_fx(&p, 0, FX_GRANT, 4, 1, 5, "L");
    assert_lock(&c, c.sync, "L", 4, 5, NULL, 0);

    /* Bring the dead node back: it catches up with the same state, each
     * entry applied once. The next fence is 6 everywhere. */
    cl_revive(&c, dead);
    ASSERT(cl_wait_applied(&c, CL_ALL, p.index, CL_APPLY_MS));
    cl_assert_same(&c, CL_ALL);
    assert_lock(&c, CL_ALL, "L", 4, 5, NULL, 0);
    cl_run1(&c, cl_acquire(1, 3, TRY, "N"), &p);
    assert_res(&p, 0, 0, RESULT_GRANTED, 6);
    cl_assert_same(&c, CL_ALL);
    assert_indexes_agree(&c, CL_ALL);
    for (unsigned i = 0; i < CL_N; i++) ASSERT_UEQ(c.node[i].fsm.n_skipped, 0);
    ASSERT(!q.done);
    cl_close(&c);
}

/* ---- 3. an isolated leader cannot commit ------------------------------------ */

TEST(isolated_leader_cannot_commit)
{
    struct cl c;
    struct cl_prop p, old;
    struct cmd cmds[2], cmd;
    struct buf before = {0}, now = {0};
    const uint64_t q_b[] = {2};
    unsigned leader;
    uint64_t idx;

    cl_open(&c, NULL);
    cmds[0] = cl_open_session(TTL, "a");
    cmds[1] = cl_open_session(TTL, "b");
    cl_run(&c, cmds, 2, &p);
    cmds[0] = cl_acquire(1, 1, FOREVER, "L");
    cmds[1] = cl_acquire(2, 1, FOREVER, "L");
    cl_run(&c, cmds, 2, &p);
    assert_lock(&c, CL_ALL, "L", 1, 1, q_b, 1);
    idx = p.index;
    cl_snapshot(&c, 0, &before);

    /* Cut node 0, the leader, off from both followers. It still believes
     * it leads and accepts a proposal, which can never commit. */
    cl_isolate(&c, 0);
    ASSERT_EQ(raft_state(cl_raft(&c, 0)), RAFT_LEADER);
    cmd = cl_release(1, 2, 1, "L");
    ASSERT_EQ(cl_propose(&c, 0, &cmd, 1, &old), 0);
    ASSERT_UEQ(old.req.index, idx + 1);

    /* The majority elects one of its own. */
    leader = cl_wait_leader(&c, 0, CL_ELECT_MS);
    ASSERT(leader == 1 || leader == 2);

    /* A few more simulated seconds: the old leader steps down and fails its
     * proposal; nothing was applied on it. */
    raft_fixture_step_until_elapsed(c.f, 3000);
    ASSERT_NE(raft_state(cl_raft(&c, 0)), RAFT_LEADER);
    ASSERT(old.done);
    ASSERT_EQ(old.status, RAFT_LEADERSHIPLOST);
    ASSERT_UEQ(store_applied_index(c.node[0].store), idx);
    cl_snapshot(&c, 0, &now);
    ASSERT(now.len == before.len && memcmp(now.data, before.data, now.len) == 0);

    /* The majority commits: a try by b is refused (b waits for L already:
     * BATON_EDEADLK; a still holds it, the release never happened), then
     * the client retries its release on the
     * new leader with the same seq: never applied before, so it runs, and
     * b gets L with fence 2. That entry takes index idx + 2, overwriting the
     * old leader's idx + 1 with the try. */
    cl_run1(&c, cl_acquire(2, 2, TRY, "L"), &p);
    ASSERT_UEQ(p.index, idx + 1);
    assert_res(&p, 0, BATON_EDEADLK, 0, 0);
    cl_run1(&c, cl_release(1, 2, 1, "L"), &p);
    assert_res(&p, 0, 0, RESULT_OK, 0);
    ASSERT_EQ(p.n_fx, 1);
    cl_assert_fx(&p, 0, FX_GRANT, 2, 1, 2, "L");
    ASSERT_UEQ(store_applied_index(c.node[0].store), idx);

    /* Node 0 still holds its own uncommitted entry at idx + 1 in its log. */
    ASSERT_UEQ(raft_last_index(cl_raft(&c, 0)), idx + 1);
    ASSERT_UEQ(raft_last_index(cl_raft(&c, leader)), idx + 2);

    /* Heal: node 0 drops its uncommitted entry, takes the majority's log,
     * and ends with the same state. */
    cl_heal(&c, 0);
    ASSERT(cl_wait_applied(&c, CL_ALL, p.index, CL_APPLY_MS));
    ASSERT_UEQ(raft_last_index(cl_raft(&c, 0)), raft_last_index(cl_raft(&c, leader)));
    ASSERT_UEQ(raft_last_applied(cl_raft(&c, 0)), idx + 2);
    cl_assert_same(&c, CL_ALL);
    assert_lock(&c, CL_ALL, "L", 2, 2, NULL, 0);
    assert_indexes_agree(&c, CL_ALL);
    ASSERT_UEQ(c.node[0].fsm.n_skipped, 0);

    /* And the cluster keeps going with node 0 in it. */
    cl_run1(&c, cl_acquire(1, 3, FOREVER, "L"), &p);
    assert_res(&p, 0, 0, RESULT_QUEUED, 1);
    cl_assert_same(&c, CL_ALL);
    buf_free(&before);
    buf_free(&now);
    cl_close(&c);
}

/* ---- 4. catch-up by snapshot ------------------------------------------------- */

TEST(lagging_follower_catches_up_by_snapshot)
{
    enum { ENTRIES = 400, WINDOW = 10 };
    const struct cl_opts o = {.snapshot_threshold = 64, .snapshot_trailing = 16};
    static struct cl_prop props[WINDOW];
    static char names[ENTRIES][16];
    struct cl c;
    struct cl_prop p;
    uint64_t lag_idx, last_fence;
    unsigned leader;

    cl_open(&c, &o);
    cl_run1(&c, cl_open_session(TTL, "a"), &p);
    cl_run1(&c, cl_acquire(1, 1, TRY, "first"), &p);
    assert_res(&p, 0, 0, RESULT_GRANTED, 1);

    cl_isolate(&c, 2);
    lag_idx = store_applied_index(c.node[2].store);
    ASSERT_UEQ(lag_idx, p.index);

    /* Entries in windows of WINDOW proposals in flight. Entry k grants lock
     * k; every odd entry also releases lock k - 1 in the same batch. Commit
     * order is proposal order, so the fences are known in advance: "first"
     * has 1, lock k gets k + 2. */
    leader = cl_leader(&c);
    for (int base = 0; base < ENTRIES; base += WINDOW) {
        for (int k = base; k < base + WINDOW; k++) {
            struct cmd cmds[2];
            size_t n = 0;

            snprintf(names[k], sizeof names[k], "lock-%d", k);
            cmds[n++] = cl_acquire(1, 2 + 2 * (uint64_t)k, TRY, names[k]);
            if (k % 2 == 1)
                cmds[n++] = cl_release(1, 3 + 2 * (uint64_t)k, (uint64_t)k + 1, names[k - 1]);
            ASSERT_EQ(cl_propose(&c, leader, cmds, n, &props[k - base]), 0);
        }
        for (int k = base; k < base + WINDOW; k++) {
            struct cl_prop *q = &props[k - base];
            ASSERT(cl_wait(&c, q, CL_APPLY_MS));
            ASSERT_EQ(q->status, 0);
            ASSERT_UEQ(q->index, props[0].index + (uint64_t)(k - base));
            assert_res(q, 0, 0, RESULT_GRANTED, (uint64_t)k + 2);
            if (k % 2 == 1) assert_res(q, 1, 0, RESULT_OK, 0);
        }
        ASSERT(cl_wait_applied(&c, c.sync, props[WINDOW - 1].index, CL_APPLY_MS));
    }
    last_fence = ENTRIES + 1;
    p = props[WINDOW - 1];
    cl_assert_same(&c, c.sync);
    ASSERT_UEQ(store_applied_index(c.node[2].store), lag_idx);
    /* raft considers a snapshot once per run of applied entries, so with
     * WINDOW entries committed together they come every 64 to 64 + WINDOW. */
    for (unsigned i = 0; i < 2; i++) ASSERT_GE(c.node[i].fsm.n_snapshots, ENTRIES / (64 + WINDOW));
    ASSERT_UEQ(c.node[2].fsm.n_restores, 0);

    /* Reconnect: the entries node 2 misses are gone from the leader's log
     * (trailing 16), so it must be sent a snapshot. */
    cl_heal(&c, 2);
    ASSERT(cl_wait_applied(&c, CL_ALL, p.index, 30000));
    cl_assert_same(&c, CL_ALL);
    ASSERT_GT(c.node[2].fsm.n_restores, 0);
    ASSERT_UEQ(c.node[0].fsm.n_restores, 0);
    ASSERT_UEQ(c.node[1].fsm.n_restores, 0);
    assert_lock(&c, CL_ALL, names[ENTRIES - 1], 1, last_fence, NULL, 0);
    assert_lock(&c, CL_ALL, names[ENTRIES - 2], 0, 0, NULL, 0);
    assert_lock(&c, CL_ALL, "first", 1, 1, NULL, 0);

    /* After the restore node 2 applies new entries itself. */
    cl_run1(&c, cl_acquire(1, 3 + 2 * (uint64_t)ENTRIES, TRY, "after"), &p);
    assert_res(&p, 0, 0, RESULT_GRANTED, last_fence + 1);
    cl_assert_same(&c, CL_ALL);
    for (unsigned i = 0; i < CL_N; i++) ASSERT_UEQ(c.node[i].fsm.n_skipped, 0);
    cl_close(&c);
}

/* ---- 4b. a follower whose snapshot fails ------------------------------------- */

/*
 * libraft 0.15 returns a snapshot's failure from its apply path, and a
 * follower that meets it while handling an AppendEntries stops its raft
 * for good; only RAFT_BUSY makes it skip the snapshot. So raft/fsm_snap.c
 * answers every failure of the store RAFT_BUSY. Node 2's store fails every
 * snapshot for a while (store__fail_snapshots, as a failing disk would):
 * it must keep following and applying, and take snapshots again once its
 * store can.
 */
TEST(follower_snapshot_failure_keeps_it_following)
{
    const struct cl_opts o = {.snapshot_threshold = 16, .snapshot_trailing = 8};
    struct cl c;
    struct cl_prop p;
    uint64_t seq = 1;

    cl_open(&c, &o);
    cl_run1(&c, cl_open_session(TTL, "a"), &p);
    store__fail_snapshots(c.node[2].store, 1000);
    for (int k = 0; k < 60; k++) {
        cl_run1(&c, cl_acquire(1, seq++, TRY, "s"), &p);
        cl_run1(&c, cl_release(1, seq++, p.results[0].value, "s"), &p);
        ASSERT_EQ(raft_state(cl_raft(&c, 2)), RAFT_FOLLOWER);
    }
    raft_fixture_step_until_elapsed(c.f, 1000); /* heartbeats carry the last commit */
    ASSERT_EQ(raft_state(cl_raft(&c, 2)), RAFT_FOLLOWER);
    ASSERT_UEQ(c.node[2].fsm.n_snapshots, 0);
    ASSERT_GT(c.node[2].fsm.n_snapshot_refusals, 0);
    ASSERT_GT(c.node[0].fsm.n_snapshots, 0);
    ASSERT_UEQ(store_applied_index(c.node[2].store), store_applied_index(c.node[0].store));
    ASSERT_UEQ(store_digest(c.node[2].store), store_digest(c.node[0].store));

    /* The store recovers: snapshots resume (after the wait that follows a
     * failure, raft/fsm_snap.c). */
    store__fail_snapshots(c.node[2].store, 0);
    for (int k = 0; k < 60; k++) {
        cl_run1(&c, cl_acquire(1, seq++, TRY, "s"), &p);
        cl_run1(&c, cl_release(1, seq++, p.results[0].value, "s"), &p);
    }
    ASSERT_GT(c.node[2].fsm.n_snapshots, 0);
    cl_assert_same(&c, CL_ALL);
    cl_close(&c);
}

/* ---- 5. replay safety ------------------------------------------------------------ */

/* The entries of the first run, re-encoded: entry k (raft index k + 2). */
#define REPLAY_N 6
static void replay_entry(int k, struct cmd *cmds, size_t *n)
{
    switch (k) {
    case 0:
        cmds[0] = cl_open_session(TTL, "a");
        cmds[1] = cl_open_session(TTL, "b");
        *n = 2;
        break;
    case 1:
        cmds[0] = cl_acquire(1, 1, FOREVER, "L");   /* a gets fence 1. */
        cmds[1] = cl_acquire(2, 1, FOREVER, "L");   /* b queues. */
        *n = 2;
        break;
    case 2:
        cmds[0] = cl_release(1, 2, 1, "L");         /* b gets fence 2. */
        *n = 1;
        break;
    case 3:
        cmds[0] = cl_open_session(TTL, "c");        /* This is session 3. */
        *n = 1;
        break;
    case 4:
        cmds[0] = cl_acquire(3, 1, FOREVER, "M");   /* c gets fence 3. */
        *n = 1;
        break;
    default:
        cmds[0] = cl_acquire(1, 3, FOREVER, "M");   /* a queues behind c. */
        *n = 1;
        break;
    }
}

/* A raft_malloc'd copy of entry k, as raft_fixture_add_entry wants it. */
static struct raft_entry replay_raft_entry(int k, raft_term term)
{
    struct cmd cmds[2];
    struct raft_entry e;
    size_t n;

    replay_entry(k, cmds, &n);
    memset(&e, 0, sizeof e);
    e.term = term;
    e.type = RAFT_COMMAND;
    e.buf = cl_entry_buf(cmds, n);
    return e;
}

TEST(replay_after_restart_is_skipped)
{
    enum { SNAP_AT = 4 };   /* Node 2 restarts from a raft snapshot at index 4. */
    struct cl c;
    struct cl_prop p;
    struct cmd cmds[2];
    struct buf snap_at = {0}, final = {0}, now = {0};
    struct raft_configuration conf;
    struct raft_snapshot *snap;
    struct effects fx;
    raft_term term;
    uint64_t last;
    size_t n;
    const uint64_t q_a[] = {1};

    /* First run: the entries, at indexes 2 .. REPLAY_N + 1. */
    cl_open(&c, NULL);
    for (int k = 0; k < REPLAY_N; k++) {
        replay_entry(k, cmds, &n);
        cl_run(&c, cmds, n, &p);
        ASSERT_UEQ(p.index, (uint64_t)k + 2);
        if (p.index == SNAP_AT) cl_snapshot(&c, 0, &snap_at);
    }
    last = p.index;
    term = cl_raft(&c, 0)->current_term;
    cl_assert_same(&c, CL_ALL);
    cl_snapshot(&c, 0, &final);
    assert_lock(&c, CL_ALL, "M", 3, 3, q_a, 1);

    /* Restart every node: the stores are closed and reopened from disk, and
     * raft comes back with its log as it would be on disk. Nodes 0 and 1
     * have the whole log (bootstrap configuration, then every entry); node
     * 2 has a snapshot at SNAP_AT and the entries after it. */
    cl_stop(&c);
    cl_setup_at(&c);
    ASSERT_EQ(raft_fixture_configuration(c.f, CL_N, &conf), 0);
    for (unsigned i = 0; i < 2; i++) {
        ASSERT_EQ(raft_bootstrap(cl_raft(&c, i), &conf), 0);
        raft_fixture_set_term(c.f, i, term);
        for (int k = 0; k < REPLAY_N; k++) {
            struct raft_entry e = replay_raft_entry(k, term);
            raft_fixture_add_entry(c.f, i, &e);
        }
    }
    snap = raft_malloc(sizeof *snap);
    ASSERT(snap != NULL);
    memset(snap, 0, sizeof *snap);
    snap->index = SNAP_AT;
    snap->term = term;
    snap->configuration = conf; /* The snapshot owns it from here on. */
    snap->configuration_index = 1;
    snap->bufs = raft_malloc(sizeof *snap->bufs);
    ASSERT(snap->bufs != NULL);
    snap->bufs[0].len = snap_at.len;
    snap->bufs[0].base = raft_malloc(snap_at.len);
    ASSERT(snap->bufs[0].base != NULL);
    memcpy(snap->bufs[0].base, snap_at.data, snap_at.len);
    snap->n_bufs = 1;
    raft_fixture_set_term(c.f, 2, term);
    raft_fixture_set_snapshot(c.f, 2, snap);
    for (int k = SNAP_AT - 1; k < REPLAY_N; k++) {
        struct raft_entry e = replay_raft_entry(k, term);
        raft_fixture_add_entry(c.f, 2, &e);
    }

    /* raft_start restores node 2's snapshot at once: the store is already
     * past it, so restore changes nothing. */
    cl_start(&c);
    ASSERT_UEQ(raft_last_applied(cl_raft(&c, 2)), SNAP_AT);
    ASSERT_UEQ(c.node[2].fsm.n_restores, 0);
    for (unsigned i = 0; i < CL_N; i++) {
        ASSERT_UEQ(store_applied_index(c.node[i].store), last);
        cl_snapshot(&c, i, &now);
        ASSERT(now.len == final.len && memcmp(now.data, final.data, now.len) == 0);
    }

    /* A leader commits the old entries again, with the barrier batond's node
     * commits on election (index last + 1): every node gets them through
     * apply and skips them all. The state is still exactly the first run's. */
    cl_elect(&c, 0);
    ASSERT(cl_barrier(&c, 0, CL_APPLY_MS));
    ASSERT(cl_wait_applied(&c, CL_ALL, last + 1, CL_APPLY_MS));
    ASSERT_UEQ(c.node[0].fsm.n_skipped, last - 1);
    ASSERT_UEQ(c.node[1].fsm.n_skipped, last - 1);
    ASSERT_UEQ(c.node[2].fsm.n_skipped, last - SNAP_AT);
    for (unsigned i = 0; i < CL_N; i++) {
        cl_snapshot(&c, i, &now);
        ASSERT(now.len == final.len && memcmp(now.data, final.data, now.len) == 0);
    }

    /* New entries apply normally and continue the counters: the next
     * session is 4 (no OPEN_SESSION ran twice), the next fence is 4. */
    cmds[0] = cl_open_session(TTL, "d");
    cmds[1] = cl_acquire(2, 2, TRY, "N");
    cl_run(&c, cmds, 2, &p);
    ASSERT_UEQ(p.index, last + 2);
    assert_res(&p, 0, 0, RESULT_OK, 4);
    assert_res(&p, 1, 0, RESULT_GRANTED, 4);
    cl_assert_same(&c, CL_ALL);
    assert_lock(&c, CL_ALL, "M", 3, 3, q_a, 1);
    ASSERT_UEQ(c.node[0].fsm.n_skipped, last - 1);

    /* The store's own guard, without raft: an entry at an old index is
     * skipped whatever it contains, and yields no results. */
    cl_snapshot(&c, 1, &final);
    effects_init(&fx);
    cmds[0] = cl_release(3, 2, 3, "M");
    buf_reset(&now);
    cmds_encode(&now, cmds, 1);
    ASSERT_EQ(store_apply(c.node[1].store, 3, now.data, now.len, &fx), 0);
    ASSERT_EQ(fx.n_results, 0);
    ASSERT_EQ(fx.n_fx, 0);
    ASSERT_EQ(store_apply(c.node[1].store, last + 1, now.data, now.len, &fx), 0);
    ASSERT_EQ(fx.n_results, 0);
    cl_snapshot(&c, 1, &now);
    ASSERT(now.len == final.len && memcmp(now.data, final.data, now.len) == 0);
    effects_free(&fx);

    buf_free(&snap_at);
    buf_free(&final);
    buf_free(&now);
    cl_close(&c);
}

int main(int argc, char **argv)
{
    int rv;

    cl_suite_init();
    runner_init(argc, argv);
    runner_set_timeout(60);
    RUN(state_identical_on_all_nodes);
    RUN(leader_change_keeps_queue_and_fences);
    RUN(isolated_leader_cannot_commit);
    RUN(lagging_follower_catches_up_by_snapshot);
    RUN(follower_snapshot_failure_keeps_it_following);
    RUN(replay_after_restart_is_skipped);
    rv = runner_done();
    cl_suite_done();
    return rv;
}
