/*
 * test_fsm_dedup.c -- the lock state machine (storage/store.h):
 * deduplication of retried requests (seq, ack_below, the cached results),
 * entries applied again or malformed, and the determinism of a long random
 * workload across a snapshot restore.
 *
 * Each test runs on a store of its own (tests/unit/fsm_fixture.h).
 */
#include "tests/unit/fsm_fixture.h"

#include "tests/lib/rng.h"

/* ---- deduplication ------------------------------------------------------ */

TEST(repeated_request_returns_cached_result_and_changes_nothing)
{
    struct fixture f;
    struct buf before = {0}, after = {0};
    struct cmd_result r;
    uint64_t a, b, fa;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    fa = grant(&f, a, 1, "L");
    queue(&f, b, 1, "L", 1);
    ASSERT_EQ(run(&f, c_acq(b, 2, BATON_WAIT_TRY, "L")).status, BATON_EWOULDBLOCK);

    snap(&f, &before);
    /* The grant, repeated: same fence, no second grant. */
    r = run(&f, c_acq(a, 1, BATON_WAIT_FOREVER, "L"));
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    ASSERT_UEQ(r.value, fa);
    ASSERT_EQ(f.fx.n_fx, 0);
    /* The queued acquire, repeated: not queued twice. */
    r = run(&f, c_acq(b, 1, BATON_WAIT_FOREVER, "L"));
    ASSERT_EQ(r.kind, RESULT_QUEUED);
    ASSERT_UEQ(r.value, 1);
    /* A cached error comes back too. */
    ASSERT_EQ(run(&f, c_acq(b, 2, BATON_WAIT_TRY, "L")).status, BATON_EWOULDBLOCK);
    /* The cache answers by (session, seq), whatever the rest says. */
    r = run(&f, c_rel(a, 1, 12345, "other"));
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    snap(&f, &after);
    ASSERT(same_state(&before, &after));

    /* A release, repeated, does not release the next holder's grant. */
    ASSERT_EQ(run(&f, c_rel(a, 2, fa, "L")).status, 0);
    ASSERT_EQ(f.fx.n_fx, 1);
    snap(&f, &before);
    ASSERT_EQ(run(&f, c_rel(a, 2, fa, "L")).status, 0);
    ASSERT_EQ(f.fx.n_fx, 0);
    snap(&f, &after);
    ASSERT(same_state(&before, &after));
    assert_holder(&f, "L", b, 0, 0);

    /* Two copies of one request in the same entry run once. */
    struct cmd two[2] = {c_acq(a, 3, BATON_WAIT_FOREVER, "L"),
                         c_acq(a, 3, BATON_WAIT_FOREVER, "L")};
    apply_n(&f, two, 2);
    ASSERT_EQ(f.fx.results[0].kind, RESULT_QUEUED);
    ASSERT_EQ(f.fx.results[1].kind, RESULT_QUEUED);
    ASSERT_UEQ(f.fx.results[1].value, 1);
    assert_holder(&f, "L", b, 0, 1);
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
}

TEST(ack_below_prunes_and_stale_retries_are_refused)
{
    struct fixture f;
    struct buf before = {0}, after = {0};
    struct cmd c;
    uint64_t a, b;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    grant(&f, a, 1, "l1");
    grant(&f, a, 2, "l2");
    grant(&f, a, 3, "l3");
    grant(&f, a, 4, "l4");
    ASSERT_EQ(count_in(&f, DB_DEDUP), 4);
    grant(&f, b, 1, "b-lock");

    /* seq 5 acknowledges everything below 3: entries 1 and 2 go. */
    c = c_acq(a, 5, BATON_WAIT_TRY, "free");
    c.ack_below = 3;
    ASSERT_EQ(run(&f, c).kind, RESULT_GRANTED);
    ASSERT_EQ(count_in(&f, DB_DEDUP), 4); /* a: 3, 4, 5; b: 1 */

    /* A retry of seq 2 is stale: refused, nothing changes. */
    snap(&f, &before);
    ASSERT_EQ(run(&f, c_acq(a, 2, BATON_WAIT_FOREVER, "l2")).status, BATON_ESTALE);
    snap(&f, &after);
    ASSERT(same_state(&before, &after));
    /* seq 3 is still cached. */
    ASSERT_EQ(run(&f, c_acq(a, 3, BATON_WAIT_FOREVER, "l3")).kind, RESULT_GRANTED);
    /* A late duplicate with a lower ack_below cannot run seq 1 again. */
    c = c_acq(a, 1, BATON_WAIT_FOREVER, "l1");
    c.ack_below = 0;
    ASSERT_EQ(run(&f, c).status, BATON_ESTALE);
    /* The command carrying ack_below itself may be stale. */
    c = c_acq(a, 6, BATON_WAIT_TRY, "x");
    c.ack_below = 7;
    ASSERT_EQ(run(&f, c).status, BATON_ESTALE);
    ASSERT_EQ(count_in(&f, DB_DEDUP), 1); /* only b's */
    /* Other sessions' entries are untouched. */
    ASSERT_EQ(run(&f, c_acq(b, 1, BATON_WAIT_FOREVER, "b-lock")).kind, RESULT_GRANTED);
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
}

TEST(reapplying_old_index_changes_nothing)
{
    struct fixture f;
    struct buf before = {0}, after = {0}, batch = {0};
    struct cmd c;
    uint64_t a;

    setup(&f);
    a = open_session(&f);
    grant(&f, a, 1, "L");
    snap(&f, &before);
    c = c_acq(a, 2, BATON_WAIT_FOREVER, "M");
    cmds_encode(&batch, &c, 1);
    for (uint64_t idx = 0; idx <= f.index; idx++) {
        ASSERT_EQ(store_apply(f.s, idx, batch.data, batch.len, &f.fx), 0);
        ASSERT_EQ(f.fx.n_results, 0);
        ASSERT_EQ(f.fx.n_fx, 0);
    }
    snap(&f, &after);
    ASSERT_EQ(before.len, after.len);
    ASSERT(memcmp(before.data, after.data, before.len) == 0);
    ASSERT_UEQ(store_applied_index(f.s), f.index);
    /* Indexes may skip (barriers, configuration entries). */
    ASSERT_EQ(store_apply(f.s, f.index + 10, batch.data, batch.len, &f.fx), 0);
    ASSERT_EQ(f.fx.n_results, 1);
    ASSERT_UEQ(store_applied_index(f.s), f.index + 10);
    buf_free(&before);
    buf_free(&after);
    buf_free(&batch);
    teardown(&f);
}

TEST(malformed_batch_changes_nothing_but_applied)
{
    struct fixture f;
    struct buf before = {0}, after = {0}, batch = {0};
    struct cmd cmds[2];
    uint64_t a;

    setup(&f);
    a = open_session(&f);
    grant(&f, a, 1, "L");
    snap(&f, &before);
    cmds[0] = c_acq(a, 2, BATON_WAIT_FOREVER, "M");
    cmds[1] = c_rel(a, 3, 1, "L");
    cmds_encode(&batch, cmds, 2);
    /* Every truncation, a trailing byte, and random garbage. */
    for (size_t len = 0; len < batch.len; len++) {
        ASSERT_EQ(store_apply(f.s, ++f.index, batch.data, len, &f.fx), 0);
        ASSERT_EQ(f.fx.n_results, 0);
        ASSERT_EQ(f.fx.n_fx, 0);
        ASSERT_UEQ(store_applied_index(f.s), f.index);
    }
    ASSERT_EQ(buf_put_u8(&batch, 0), 0);
    ASSERT_EQ(store_apply(f.s, ++f.index, batch.data, batch.len, &f.fx), 0);
    ASSERT_EQ(f.fx.n_results, 0);
    ASSERT_EQ(store_apply(f.s, ++f.index, "\x01garbage!", 9, &f.fx), 0);
    ASSERT_EQ(f.fx.n_results, 0);
    ASSERT_EQ(store_apply(f.s, ++f.index, NULL, 0, &f.fx), 0);
    ASSERT_EQ(f.fx.n_results, 0);
    ASSERT_UEQ(store_applied_index(f.s), f.index);
    snap(&f, &after);
    ASSERT(same_state(&before, &after));
    buf_free(&before);
    buf_free(&after);
    buf_free(&batch);
    teardown(&f);
}

/* ---- determinism under a long random workload --------------------------- */

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static uint64_t rng(void)
{
    return xorshift64(&rng_state);
}

/*
 * Feed the same random commands (all types, valid and not, some repeated)
 * to two stores, one of which is restored from a snapshot of the other
 * halfway through. Every result and effect, and the final state, must be
 * identical; and the store's own invariants must hold. Most holds carry a
 * lock-delay, so that expiries leave delayed locks that DELAY_END (or
 * nothing, for a while) later hands on.
 */
static int32_t random_delay(void)
{
    switch (rng() % 8) {
    case 0:
    case 1:
        return 0;
    case 2:
        return rng() % 16 == 0 ? -1 : 250; /* now and then an invalid one */
    default:
        return (int32_t)(1 + rng() % 5000);
    }
}
TEST(random_workload_is_deterministic)
{
    static const char *names[] = {"a", "b", "c", "d"};
    struct fixture f, g;
    struct buf s1 = {0}, s2 = {0};
    uint64_t seq[64] = {0}, top = 0, last_fence = 0;
    int n_delays = 0, n_delay_grants = 0;

    setup(&f);
    setup(&g);
    for (int step = 0; step < 3000; step++) {
        uint64_t s = top ? top - rng() % (top < 12 ? top : 12) : 1;
        uint64_t *sq = &seq[s % 64], w, who;
        const char *name = names[rng() % 4];
        struct msg_lock_info_r i;
        struct cmd c;

        switch (rng() % 11) {
        case 0:
            c = c_open(1000, "r");
            break;
        case 1:
        case 2:
        case 3:
            ++*sq;
            c = c_acq_d(s, *sq, (int64_t)(rng() % 3) - 1, name, random_delay());
            break;
        case 4:
        case 5:
            i = info(&f, name);
            free(i.waiters);
            who = rng() % 4 ? i.holder_session : s;
            ++seq[who % 64];
            c = c_rel(who, seq[who % 64], i.fence, name);
            if (rng() % 3 == 0 && c.seq > 2) c.seq -= 2; /* a retry */
            break;
        case 6:
            w = *sq - rng() % 3;
            ++*sq;
            c = c_cancel(s, *sq, w, name);
            break;
        case 7:
            c = c_timeout(s, *sq - rng() % 4, name);
            break;
        case 8:
            if (rng() % 4) {
                c = c_expire(s);
            } else {
                ++*sq;
                c = c_close(s, *sq);
            }
            break;
        case 10:
            c = c_delay_end(name);
            break;
        default:
            if (rng() % 2)
                c = c_force(name);
            else
                c = c_acq(s, *sq, BATON_WAIT_FOREVER, name); /* repeats the last seq */
            c.ack_below = *sq > 5 ? *sq - 5 : 0;
            break;
        }
        if (step == 1500) {
            snap(&f, &s1);
            ASSERT_EQ(store_restore(g.s, s1.data, s1.len), 0);
            g.index = f.index;
        }
        run(&f, c);
        if (c.type == CMD_OPEN_SESSION && f.fx.results[0].status == 0) top = f.fx.results[0].value;
        if (step >= 1500) {
            run(&g, c);
            assert_same_effects(&f.fx, &g.fx);
            ASSERT_UEQ(store_digest(f.s), store_digest(g.s));
        }
        /* Every grant's fence is above every earlier one. */
        for (size_t k = 0; k < f.fx.n_fx; k++) {
            if (f.fx.fx[k].type == FX_LOCK_DELAY) {
                ASSERT_GT(f.fx.fx[k].lock_delay_ms, 0);
                n_delays++;
            }
            if (f.fx.fx[k].type != FX_GRANT) continue;
            ASSERT_ULT(last_fence, f.fx.fx[k].fence);
            last_fence = f.fx.fx[k].fence;
            n_delay_grants += c.type == CMD_DELAY_END;
        }
        /* A lock with waiters is always held or delayed, never both. */
        for (int l = 0; l < 4; l++) {
            i = info(&f, names[l]);
            if (i.total_waiters > 0) ASSERT(i.held || i.delayed);
            ASSERT(!(i.held && i.delayed));
            free(i.waiters);
        }
    }
    ASSERT_GT(top, 20);
    ASSERT_GT(n_delays, 10);
    ASSERT_GT(n_delay_grants, 5);
    snap(&f, &s1);
    snap(&g, &s2);
    ASSERT_EQ(s1.len, s2.len);
    ASSERT(memcmp(s1.data, s2.data, s1.len) == 0);
    {
        struct delayed_seen d1 = {0}, d2 = {0};
        ASSERT_EQ(store_foreach_delayed_lock(f.s, collect_delayed, &d1), 0);
        ASSERT_EQ(store_foreach_delayed_lock(g.s, collect_delayed, &d2), 0);
        ASSERT_EQ(d1.n, d2.n);
        for (int k = 0; k < d1.n; k++) {
            ASSERT_STREQ(d1.names[k], d2.names[k]);
            ASSERT_EQ(d1.delay[k], d2.delay[k]);
        }
    }
    /* Expiring every session, then ending every delay, leaves nothing
     * behind. */
    for (uint64_t s = 1; s <= top; s++) run(&f, c_expire(s));
    for (int l = 0; l < 4; l++) {
        run(&f, c_delay_end(names[l]));
        ASSERT_EQ(f.fx.n_fx, 0); /* nobody is left to grant it to */
    }
    ASSERT_EQ(count_in(&f, DB_SESSIONS), 0);
    ASSERT_EQ(count_in(&f, DB_LOCKS), 0);
    ASSERT_EQ(count_in(&f, DB_WAITERS), 0);
    ASSERT_EQ(count_in(&f, DB_OWNED), 0);
    ASSERT_EQ(count_in(&f, DB_DEDUP), 0);
    buf_free(&s1);
    buf_free(&s2);
    teardown(&f);
    teardown(&g);
}

int main(int argc, char **argv)
{
    fsm_main_begin(argc, argv);
    RUN(repeated_request_returns_cached_result_and_changes_nothing);
    RUN(ack_below_prunes_and_stale_retries_are_refused);
    RUN(reapplying_old_index_changes_nothing);
    RUN(malformed_batch_changes_nothing_but_applied);
    RUN(random_workload_is_deterministic);
    return fsm_main_end();
}
