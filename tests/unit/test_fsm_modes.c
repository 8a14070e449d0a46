/*
 * test_fsm_modes.c -- lock modes in the state machine (storage/locks.c,
 * docs/design.md "Lock modes"): shared locks granted together and fair to
 * writers, semaphores whose limit the first request fixes, reentrant
 * handles and BATON_EDEADLK, waits that end and let the requests behind
 * them through, expiry and forced release of shared holds, snapshots, and
 * the upgrade of format 6 stores and snapshots. test_fsm_model.c checks
 * the same rules against a model under random operations.
 */
#include <stdlib.h>
#include <string.h>

#include "storage/store_test.h"
#include "tests/unit/fsm_fixture.h"

static struct cmd c_mode(uint64_t s, uint64_t seq, int64_t wait, const char *name, uint8_t mode,
                         uint32_t limit, uint8_t reentrant)
{
    struct cmd c = c_acq(s, seq, wait, name);

    c.mode = mode;
    c.limit = limit;
    c.reentrant = reentrant;
    return c;
}

#define SH BATON_MODE_SHARED
#define EX BATON_MODE_EXCLUSIVE

static uint64_t grant_m(struct fixture *f, uint64_t s, uint64_t seq, const char *name,
                        uint8_t mode, uint32_t limit)
{
    struct cmd_result r = run(f, c_mode(s, seq, BATON_WAIT_FOREVER, name, mode, limit, 0));

    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    return r.value;
}

static void queue_m(struct fixture *f, uint64_t s, uint64_t seq, const char *name, uint8_t mode,
                    uint32_t limit, uint64_t pos)
{
    struct cmd_result r = run(f, c_mode(s, seq, BATON_WAIT_FOREVER, name, mode, limit, 0));

    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_QUEUED);
    ASSERT_UEQ(r.value, pos);
}

/* The lock's holders are exactly these sessions (fence order), its queue
 * has `waiters` requests. */
static void assert_holders(struct fixture *f, const char *name, const uint64_t *sessions,
                           uint32_t n, uint32_t waiters)
{
    struct msg_lock_info_r i = info(f, name);

    ASSERT_EQ(i.total_holders, n);
    ASSERT_EQ(i.n_holders, n);
    ASSERT_EQ(i.held, n > 0);
    for (uint32_t k = 0; k < n; k++) {
        ASSERT_UEQ(i.holders[k].session, sessions[k]);
        if (k > 0) ASSERT_ULT(i.holders[k - 1].fence, i.holders[k].fence);
    }
    if (n > 0) ASSERT_UEQ(i.holder_session, sessions[0]);
    ASSERT_EQ(i.total_waiters, waiters);
    store_lock_info_free(&i);
}

TEST(shared_holders_granted_together_and_writer_not_starved)
{
    struct fixture f;
    uint64_t s[6], fa, fb, fc, fd;

    setup(&f);
    for (int i = 0; i < 6; i++) s[i] = open_session(&f);
    fa = grant_m(&f, s[0], 1, "L", SH, 0);
    fb = grant_m(&f, s[1], 1, "L", SH, 0);
    fc = grant_m(&f, s[2], 1, "L", SH, 0);
    ASSERT_ULT(fa, fb);
    ASSERT_ULT(fb, fc); /* every grant its own fence */
    assert_holders(&f, "L", s, 3, 0);
    {
        struct msg_lock_info_r i = info(&f, "L");
        ASSERT_EQ(i.mode, SH);
        ASSERT_EQ(i.limit, 1);
        store_lock_info_free(&i);
    }
    /* An exclusive request waits; a shared one behind it waits too, though
     * it is compatible with the holders: no writer starvation. */
    queue_m(&f, s[3], 1, "L", EX, 0, 1);
    queue_m(&f, s[4], 1, "L", SH, 0, 2);
    ASSERT_EQ(run(&f, c_mode(s[5], 1, BATON_WAIT_TRY, "L", SH, 0, 0)).status, BATON_EWOULDBLOCK);
    ASSERT_EQ(run(&f, c_rel(s[0], 2, fa, "L")).status, 0);
    assert_grants(&f, NULL, 0);
    ASSERT_EQ(run(&f, c_rel(s[1], 2, fb, "L")).status, 0);
    assert_grants(&f, NULL, 0);
    ASSERT_EQ(run(&f, c_rel(s[2], 2, fc, "L")).status, 0);
    assert_grants(&f, &s[3], 1);
    fd = f.fx.fx[0].fence;
    ASSERT_ULT(fc, fd);
    assert_holders(&f, "L", &s[3], 1, 1);
    ASSERT_EQ(run(&f, c_rel(s[3], 2, fd, "L")).status, 0);
    assert_grants(&f, &s[4], 1);
    teardown(&f);
}

TEST(fifo_with_mixed_modes_grants_consecutive_shared_at_the_head)
{
    struct fixture f;
    uint64_t s[7], f0, g1, g2, fx;

    setup(&f);
    for (int i = 0; i < 7; i++) s[i] = open_session(&f);
    f0 = grant_m(&f, s[0], 1, "L", EX, 0);
    queue_m(&f, s[1], 1, "L", SH, 0, 1);
    queue_m(&f, s[2], 1, "L", SH, 0, 2);
    queue_m(&f, s[3], 1, "L", EX, 0, 3);
    queue_m(&f, s[4], 1, "L", SH, 0, 4);
    queue_m(&f, s[5], 1, "L", SH, 0, 5);
    queue_m(&f, s[6], 1, "L", EX, 0, 6);
    ASSERT_EQ(run(&f, c_rel(s[0], 2, f0, "L")).status, 0);
    assert_grants(&f, &s[1], 2); /* both shared at the head, in one entry */
    g1 = f.fx.fx[0].fence;
    g2 = f.fx.fx[1].fence;
    ASSERT_ULT(g1, g2);
    assert_holders(&f, "L", &s[1], 2, 4);
    ASSERT_EQ(run(&f, c_rel(s[2], 2, g2, "L")).status, 0);
    assert_grants(&f, NULL, 0);
    ASSERT_EQ(run(&f, c_rel(s[1], 2, g1, "L")).status, 0);
    assert_grants(&f, &s[3], 1);
    fx = f.fx.fx[0].fence;
    ASSERT_EQ(run(&f, c_rel(s[3], 2, fx, "L")).status, 0);
    assert_grants(&f, &s[4], 2);
    assert_holders(&f, "L", &s[4], 2, 1);
    teardown(&f);
}

TEST(semaphore_limit_fixed_by_first_request)
{
    struct fixture f;
    uint64_t s[6], fence[3];
    struct cmd_result r;

    setup(&f);
    for (int i = 0; i < 6; i++) s[i] = open_session(&f);
    for (int i = 0; i < 3; i++) fence[i] = grant_m(&f, s[i], 1, "S", EX, 3);
    queue_m(&f, s[3], 1, "S", EX, 3, 1);
    queue_m(&f, s[4], 1, "S", EX, 3, 2);
    assert_holders(&f, "S", s, 3, 2);
    /* Another limit, a plain request, a shared one: EINVAL, value 3. */
    r = run(&f, c_mode(s[5], 1, BATON_WAIT_FOREVER, "S", EX, 4, 0));
    ASSERT_EQ(r.status, BATON_EINVAL);
    ASSERT_UEQ(r.value, 3);
    r = run(&f, c_mode(s[5], 2, BATON_WAIT_FOREVER, "S", EX, 0, 0));
    ASSERT_EQ(r.status, BATON_EINVAL);
    ASSERT_UEQ(r.value, 3);
    r = run(&f, c_mode(s[5], 3, BATON_WAIT_FOREVER, "S", SH, 3, 0));
    ASSERT_EQ(r.status, BATON_EINVAL);
    ASSERT_UEQ(r.value, 3);
    /* A semaphore limit on a plain lock: EINVAL with its limit, 1. */
    grant(&f, s[5], 4, "P");
    r = run(&f, c_mode(s[0], 2, BATON_WAIT_TRY, "P", EX, 2, 0));
    ASSERT_EQ(r.status, BATON_EINVAL);
    ASSERT_UEQ(r.value, 1);
    /* FIFO, one permit per release, no barging. */
    ASSERT_EQ(run(&f, c_rel(s[1], 2, fence[1], "S")).status, 0);
    assert_grants(&f, &s[3], 1);
    ASSERT_EQ(run(&f, c_mode(s[5], 5, BATON_WAIT_TRY, "S", EX, 3, 0)).status, BATON_EWOULDBLOCK);
    ASSERT_EQ(run(&f, c_rel(s[0], 7, fence[0], "S")).status, 0);
    assert_grants(&f, &s[4], 1);
    /* Once the name is gone, the next request fixes another limit. */
    for (int i = 2; i < 5; i++) {
        struct msg_lock_info_r in = info(&f, "S");
        uint64_t fe = 0;
        for (uint32_t k = 0; k < in.n_holders; k++)
            if (in.holders[k].session == s[i]) fe = in.holders[k].fence;
        store_lock_info_free(&in);
        ASSERT_EQ(run(&f, c_rel(s[i], 9, fe, "S")).status, 0);
    }
    ASSERT_EQ(count_in(&f, DB_LOCKS), 1); /* only P */
    grant_m(&f, s[0], 3, "S", EX, 2);
    grant_m(&f, s[1], 3, "S", EX, 2);
    ASSERT_EQ(run(&f, c_mode(s[2], 10, BATON_WAIT_TRY, "S", EX, 2, 0)).status, BATON_EWOULDBLOCK);
    teardown(&f);
}

TEST(reentrant_handles_counted_and_released_by_the_last)
{
    struct fixture f;
    uint64_t a, b, fa;
    struct cmd_result r;
    struct msg_lock_info_r i;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    fa = grant(&f, a, 1, "R");
    queue(&f, b, 1, "R", 1);
    /* Reentrant: a second handle at once, the same fence, past the queue. */
    r = run(&f, c_mode(a, 2, BATON_WAIT_TRY, "R", EX, 0, 1));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    ASSERT_UEQ(r.value, fa);
    r = run(&f, c_mode(a, 3, BATON_WAIT_FOREVER, "R", SH, 0, 1)); /* shared: covered */
    ASSERT_UEQ(r.value, fa);
    i = info(&f, "R");
    ASSERT_EQ(i.holders[0].count, 3);
    store_lock_info_free(&i);
    /* Without reentrant: EDEADLK; b, which waits, too, reentrant or not. */
    ASSERT_EQ(run(&f, c_acq(a, 4, BATON_WAIT_FOREVER, "R")).status, BATON_EDEADLK);
    ASSERT_EQ(run(&f, c_mode(b, 2, BATON_WAIT_FOREVER, "R", EX, 0, 1)).status, BATON_EDEADLK);
    ASSERT_EQ(run(&f, c_rel(a, 5, fa, "R")).status, 0);
    ASSERT_EQ(run(&f, c_rel(a, 6, fa, "R")).status, 0);
    assert_grants(&f, NULL, 0);
    assert_holder(&f, "R", a, fa, 1);
    ASSERT_EQ(run(&f, c_rel(a, 7, fa, "R")).status, 0); /* the last handle */
    assert_grants(&f, &b, 1);
    ASSERT_EQ(run(&f, c_rel(a, 8, fa, "R")).status, BATON_ENOTHELD);
    /* An upgrade (exclusive reentrant on a shared hold) would wait for
     * itself: EDEADLK. */
    grant_m(&f, a, 9, "U", SH, 0);
    ASSERT_EQ(run(&f, c_mode(a, 10, BATON_WAIT_FOREVER, "U", EX, 0, 1)).status, BATON_EDEADLK);
    /* A reentrant first request is an ordinary one. */
    ASSERT_EQ(run(&f, c_mode(b, 3, BATON_WAIT_TRY, "V", EX, 0, 1)).kind, RESULT_GRANTED);
    teardown(&f);
}

/* A waiting exclusive request that is cancelled, or times out, lets the
 * shared requests behind it join the shared holders. */
TEST(cancel_and_timeout_of_a_wait_let_the_requests_behind_through)
{
    struct fixture f;
    uint64_t a, b, c, d;
    struct cmd_result r;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    d = open_session(&f);
    grant_m(&f, a, 1, "L", SH, 0);
    queue_m(&f, b, 1, "L", EX, 0, 1);
    queue_m(&f, c, 1, "L", SH, 0, 2);
    r = run(&f, c_cancel(b, 2, 1, "L"));
    ASSERT_EQ(r.kind, RESULT_CANCELLED);
    ASSERT_EQ(f.fx.fx[0].type, FX_WAIT_FAILED);
    assert_grants(&f, &c, 1);
    {
        uint64_t want[2] = {a, c};
        assert_holders(&f, "L", want, 2, 0);
    }
    queue_m(&f, d, 1, "L", EX, 0, 1);
    queue_m(&f, b, 3, "L", SH, 0, 2);
    ASSERT_EQ(run(&f, c_timeout(d, 1, "L")).kind, RESULT_OK);
    ASSERT_EQ(count_fx(&f.fx, FX_WAIT_FAILED), 1);
    assert_grants(&f, &b, 1);
    {
        uint64_t want[3] = {a, c, b};
        assert_holders(&f, "L", want, 3, 0);
    }
    teardown(&f);
}

static uint32_t lost_count(struct fixture *f, uint64_t s)
{
    uint32_t n;

    ASSERT_EQ(store_lost_count(f->s, s, 1000, &n), 0);
    return n;
}

/* Expiry of a session with shared holds and a reentrant hold: one LOST
 * per hold, the others keep theirs; a forced release of a shared lock
 * takes every holder (a lost record each) and grants the writer. */
TEST(expiry_and_forced_release_of_shared_holds)
{
    struct fixture f;
    uint64_t a, b, c, d;
    struct cmd reent;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    d = open_session(&f);
    grant_m(&f, a, 1, "L1", SH, 0);
    grant_m(&f, b, 1, "L1", SH, 0);
    grant_m(&f, a, 2, "L2", SH, 0);
    grant(&f, a, 3, "L3");
    reent = c_mode(a, 4, BATON_WAIT_FOREVER, "L3", EX, 0, 1);
    ASSERT_EQ(run(&f, reent).kind, RESULT_GRANTED);
    grant_m(&f, a, 5, "S", EX, 2);
    queue_m(&f, c, 1, "L1", EX, 0, 1);
    queue_m(&f, c, 2, "L3", SH, 0, 1);
    run(&f, c_expire(a));
    ASSERT_EQ(count_fx(&f.fx, FX_LOST), 4); /* L1, L2, L3 (two handles, one hold), S */
    for (size_t i = 0; i < f.fx.n_fx; i++)
        if (f.fx.fx[i].type == FX_LOST) ASSERT_UEQ(f.fx.fx[i].session, a);
    assert_grants(&f, &c, 1); /* L3 */
    assert_holders(&f, "L1", &b, 1, 1);
    assert_holder(&f, "L2", 0, 0, 0);
    assert_holder(&f, "L3", c, 0, 0);
    ASSERT_EQ(count_in(&f, DB_SESSION_LOCKS), 3); /* b: L1; c: L1 (wait), L3 */

    /* The forced release of a lock with two shared holders. */
    grant_m(&f, d, 1, "L4", SH, 0);
    grant_m(&f, b, 2, "L4", SH, 0);
    queue_m(&f, c, 3, "L4", EX, 0, 1);
    ASSERT_EQ(run(&f, c_force2("L4", 0, CMD_FORCE_NOW)).status, 0);
    ASSERT_EQ(count_fx(&f.fx, FX_LOST), 2);
    assert_grants(&f, &c, 1);
    ASSERT_EQ(lost_count(&f, d), 1);
    ASSERT_EQ(lost_count(&f, b), 1);
    /* With a fence, only that hold. */
    grant_m(&f, d, 2, "L5", SH, 0);
    {
        uint64_t fb = grant_m(&f, b, 3, "L5", SH, 0);
        ASSERT_EQ(run(&f, c_force2("L5", fb, CMD_FORCE_NOW)).status, 0);
        ASSERT_EQ(count_fx(&f.fx, FX_LOST), 1);
        assert_holders(&f, "L5", &d, 1, 0);
        ASSERT_EQ(run(&f, c_rel(b, 4, fb, "L5")).status, BATON_ELOST); /* acknowledged */
    }
    teardown(&f);
}

/* A shared holder's expiry with a lock-delay: the other holder keeps its
 * hold, nobody new is granted until DELAY_END. */
TEST(lock_delay_with_shared_holders)
{
    struct fixture f;
    uint64_t a, b, c, fb;
    struct cmd ca;
    struct msg_lock_info_r i;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    ca = c_mode(a, 1, BATON_WAIT_FOREVER, "D", SH, 0, 0);
    ca.lock_delay_ms = 500;
    ASSERT_EQ(run(&f, ca).kind, RESULT_GRANTED);
    fb = grant_m(&f, b, 1, "D", SH, 0);
    queue_m(&f, c, 1, "D", EX, 0, 1);
    run(&f, c_expire(a));
    ASSERT_EQ(count_fx(&f.fx, FX_LOCK_DELAY), 1);
    i = info(&f, "D");
    ASSERT_EQ(i.delayed, 1);
    ASSERT_EQ(i.total_holders, 1);
    store_lock_info_free(&i);
    ASSERT_EQ(run(&f, c_rel(b, 2, fb, "D")).status, 0);
    assert_grants(&f, NULL, 0);
    run(&f, c_delay_end("D"));
    assert_grants(&f, &c, 1);
    teardown(&f);
}

/* Shared, semaphore, reentrant and waiting state survives a snapshot:
 * the restored store holds the same bytes and then behaves the same. */
TEST(snapshot_round_trip_with_modes)
{
    struct fixture f, g;
    struct buf sf = {0};
    uint64_t a, b, c, d, fa, fb;
    struct cmd steps[4];

    setup(&f);
    setup(&g);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    d = open_session(&f);
    fa = grant_m(&f, a, 1, "L", SH, 0);
    fb = grant_m(&f, b, 1, "L", SH, 0);
    queue_m(&f, c, 1, "L", EX, 0, 1);
    queue_m(&f, d, 1, "L", SH, 0, 2);
    grant_m(&f, d, 2, "S", EX, 3);
    grant_m(&f, a, 2, "S", EX, 3);
    grant(&f, b, 2, "R");
    ASSERT_EQ(run(&f, c_mode(b, 3, BATON_WAIT_TRY, "R", EX, 0, 1)).kind, RESULT_GRANTED);
    snap(&f, &sf);
    ASSERT_EQ(store_restore(g.s, sf.data, sf.len), 0);
    g.index = f.index;
    assert_same_snapshots(&f, &g);
    steps[0] = c_rel(a, 3, fa, "L");
    steps[1] = c_rel(b, 4, fb, "L");
    steps[2] = c_rel(b, 5, fb, "R");
    steps[3] = c_expire(c);
    for (int i = 0; i < 4; i++) {
        run(&f, steps[i]);
        run(&g, steps[i]);
        assert_same_effects(&f.fx, &g.fx);
    }
    assert_same_snapshots(&f, &g);
    assert_holders(&f, "L", &d, 1, 0);
    buf_free(&sf);
    teardown(&f);
    teardown(&g);
}

/* What format 6 could hold: ordinary locks, one exclusive hold each,
 * exclusive waiters, a delayed lock. */
static void populate_v6(struct fixture *f)
{
    uint64_t a = open_session(f), b = open_session(f), e = open_session(f);

    ASSERT_EQ(run(f, c_acq_d(a, 1, BATON_WAIT_FOREVER, "X", 100)).kind, RESULT_GRANTED);
    queue(f, b, 1, "X", 1);
    grant(f, b, 2, "Y");
    ASSERT_EQ(run(f, c_acq_d(e, 1, BATON_WAIT_FOREVER, "Z", 250)).kind, RESULT_GRANTED);
    queue(f, a, 2, "Z", 1);
    run(f, c_expire(e)); /* Z: delayed, with a's wait */
}

/* A format 6 store opens as format 7 holding the bytes a store that
 * applied the same entries in format 7 holds; a format 6 snapshot restores
 * the same way; a store with shared or semaphore locks cannot be made a
 * format 6 one. */
TEST(format6_store_and_snapshot_upgrade)
{
    struct fixture f, g;
    struct buf s7 = {0}, s6 = {0}, out = {0};
    char err[256];
    uint64_t a;

    setup(&f);
    setup(&g);
    populate_v6(&f);
    snap(&f, &s7);
    ASSERT_EQ(le_get_u32(s7.data + 4), 8);
    ASSERT_EQ(store__downgrade(f.s, 6), 0);
    store_close(f.s);
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    snap(&f, &out);
    ASSERT_EQ(out.len, s7.len);
    ASSERT(memcmp(out.data, s7.data, s7.len) == 0);
    /* The upgraded store goes on: X to b, with modes now. */
    a = open_session(&f);
    grant_m(&f, a, 1, "M", SH, 0);
    ASSERT_EQ(store__downgrade(f.s, 6), BATON_EINVAL);

    snap_as_format(&s7, 6, &s6);
    ASSERT_EQ(le_get_u32(s6.data + 4), 6);
    ASSERT_EQ(store_restore(g.s, s6.data, s6.len), 0);
    snap(&g, &out);
    ASSERT_EQ(out.len, s7.len);
    ASSERT(memcmp(out.data, s7.data, s7.len) == 0);
    /* Format 7's bytes labelled 6 are malformed (the layouts differ). */
    le_put_u32(s7.data + 4, 6);
    le_put_u64(s7.data + 8, le_get_u64(s7.data + 8) + 1);
    ASSERT_EQ(store_restore(g.s, s7.data, s7.len), BATON_EMALFORMED);
    buf_free(&s7);
    buf_free(&s6);
    buf_free(&out);
    teardown(&f);
    teardown(&g);
}

int main(int argc, char **argv)
{
    fsm_main_begin(argc, argv);
    RUN(shared_holders_granted_together_and_writer_not_starved);
    RUN(fifo_with_mixed_modes_grants_consecutive_shared_at_the_head);
    RUN(semaphore_limit_fixed_by_first_request);
    RUN(reentrant_handles_counted_and_released_by_the_last);
    RUN(cancel_and_timeout_of_a_wait_let_the_requests_behind_through);
    RUN(expiry_and_forced_release_of_shared_holds);
    RUN(lock_delay_with_shared_holders);
    RUN(snapshot_round_trip_with_modes);
    RUN(format6_store_and_snapshot_upgrade);
    return fsm_main_end();
}
