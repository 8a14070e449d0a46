/*
 * test_fsm_owners.c -- ACQUIREs with CMD_ACQ_OWNERS in the state machine
 * (storage/locks.c, "Owners"; docs/design.md, "Owners"): a session's
 * second request for a name it holds or waits for is a new waiter like
 * any other session's, reentrant requests name the hold they re-enter by
 * its fence, and everything that ends a hold or a wait -- release,
 * cancel, wait timeout, forced release, expiry and close, lock-delay --
 * ends exactly the entry it names, never another of the same session on
 * the same name. test_fsm_model.c checks the same rules against its model
 * under random operations. Requests without the flag keep their old
 * answers (test_fsm_modes.c, test_fsm_locks.c).
 */
#include <stdlib.h>
#include <string.h>

#include "tests/unit/fsm_fixture.h"

#define SH BATON_MODE_SHARED
#define EX BATON_MODE_EXCLUSIVE

/* An ACQUIRE with CMD_ACQ_OWNERS (wait forever, exclusive). */
static struct cmd c_own(uint64_t s, uint64_t seq, const char *name)
{
    struct cmd c = c_acq(s, seq, BATON_WAIT_FOREVER, name);

    c.flags = CMD_ACQ_OWNERS;
    return c;
}

/* ... reentrant, re-entering the hold of `fence`. */
static struct cmd c_enter(uint64_t s, uint64_t seq, const char *name, uint64_t fence)
{
    struct cmd c = c_own(s, seq, name);

    c.reentrant = 1;
    c.fence = fence;
    return c;
}

static uint64_t granted(struct cmd_result r)
{
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    ASSERT_NE(r.value, 0);
    return r.value;
}

static void queued(struct cmd_result r, uint64_t pos)
{
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_QUEUED);
    ASSERT_UEQ(r.value, pos);
}

/* The holds of name, in fence order, are exactly (session, waiter) pairs
 * hw[0..nh), and its queue (session, waiter) pairs qw[0..nq). */
static void assert_lock(struct fixture *f, const char *name, const uint64_t (*hw)[2], int nh,
                        const uint64_t (*qw)[2], int nq)
{
    struct msg_lock_info_r i = info(f, name);

    ASSERT_EQ((int)i.total_holders, nh);
    ASSERT_EQ((int)i.total_waiters, nq);
    for (int k = 0; k < nh; k++) {
        ASSERT_UEQ(i.holders[k].session, hw[k][0]);
        ASSERT_UEQ(i.holders[k].waiter, hw[k][1]);
    }
    for (int k = 0; k < nq; k++) {
        ASSERT_UEQ(i.waiters[k].session, qw[k][0]);
        ASSERT_UEQ(i.waiters[k].waiter, qw[k][1]);
    }
    store_lock_info_free(&i);
}

/* Does the session count an entry on name? A plain ACQUIRE tells: with a
 * count it is refused with BATON_EDEADLK, without one it is a try that
 * queues nothing (BATON_EWOULDBLOCK on a lock held by another) or is
 * granted, and then released again. */
static int counted(struct fixture *f, uint64_t s, uint64_t *seq, const char *name)
{
    struct cmd_result r = run(f, c_acq(s, ++*seq, BATON_WAIT_TRY, name));

    if (r.status == BATON_EDEADLK) return 1;
    if (r.status == BATON_EWOULDBLOCK) return 0;
    ASSERT_EQ(run(f, c_rel(s, ++*seq, granted(r), name)).status, 0);
    return 0;
}

TEST(a_second_request_of_a_session_queues_in_fifo_order)
{
    struct fixture f;
    uint64_t a, b, fa, f2, f3, seq = 10;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    fa = grant(&f, a, 1, "L");
    /* Without the flag: refused, as ever. */
    ASSERT_EQ(run(&f, c_acq(a, 2, BATON_WAIT_FOREVER, "L")).status, BATON_EDEADLK);
    queued(run(&f, c_own(a, 3, "L")), 1);
    queue(&f, b, 1, "L", 2);
    queued(run(&f, c_own(a, 4, "L")), 3); /* a third entry of a, behind b */
    assert_lock(&f, "L", (const uint64_t[][2]){{a, 1}}, 1,
                (const uint64_t[][2]){{a, 3}, {b, 1}, {a, 4}}, 3);
    ASSERT_EQ(count_in(&f, DB_SESSION_LOCKS), 2); /* a: L (3 entries), b: L */
    /* A try with the flag behind waiters: refused, nothing queued. */
    {
        struct cmd c = c_own(a, 5, "L");
        c.wait_ms = BATON_WAIT_TRY;
        ASSERT_EQ(run(&f, c).status, BATON_EWOULDBLOCK);
    }
    /* FIFO: a's second request, then b, then a's third. */
    ASSERT_EQ(run(&f, c_rel(a, 6, fa, "L")).status, 0);
    assert_grants(&f, &a, 1);
    ASSERT_UEQ(f.fx.fx[0].waiter, 3);
    f2 = f.fx.fx[0].fence;
    ASSERT_ULT(fa, f2);
    ASSERT_EQ(run(&f, c_rel(a, 7, f2, "L")).status, 0);
    assert_grants(&f, &b, 1);
    ASSERT_EQ(run(&f, c_rel(b, 2, f.fx.fx[0].fence, "L")).status, 0);
    assert_grants(&f, &a, 1);
    ASSERT_UEQ(f.fx.fx[0].waiter, 4);
    f3 = f.fx.fx[0].fence;
    ASSERT_ULT(f2, f3);
    ASSERT(counted(&f, a, &seq, "L"));
    ASSERT_EQ(run(&f, c_rel(a, ++seq, f3, "L")).status, 0);
    /* The count went down with each entry: none is left. */
    ASSERT_EQ(count_in(&f, DB_SESSION_LOCKS), 0);
    ASSERT(!counted(&f, a, &seq, "L"));
    teardown(&f);
}

TEST(a_compatible_second_request_is_granted_at_once)
{
    struct fixture f;
    uint64_t a, b, f1, f2, f3;
    struct cmd c;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    /* Two shared holds of one session, each its own fence. */
    c = c_own(a, 1, "R");
    c.mode = SH;
    f1 = granted(run(&f, c));
    c.seq = 2;
    f2 = granted(run(&f, c));
    ASSERT_ULT(f1, f2);
    assert_lock(&f, "R", (const uint64_t[][2]){{a, 1}, {a, 2}}, 2, NULL, 0);
    /* A semaphore of 2: the session takes both permits, a third waits. */
    c = c_own(a, 3, "S");
    c.limit = 2;
    granted(run(&f, c));
    c.seq = 4;
    f3 = granted(run(&f, c));
    c.seq = 5;
    queued(run(&f, c), 1);
    c.seq = 6;
    c.wait_ms = BATON_WAIT_TRY;
    ASSERT_EQ(run(&f, c).status, BATON_EWOULDBLOCK);
    ASSERT_EQ(run(&f, c_rel(a, 7, f3, "S")).status, 0);
    assert_grants(&f, &a, 1);
    ASSERT_UEQ(f.fx.fx[0].waiter, 5);
    /* An exclusive request with the flag on the session's shared hold
     * waits for it like anybody's. */
    c = c_own(a, 8, "R");
    queued(run(&f, c), 1);
    c = c_own(b, 1, "R");
    c.mode = SH;
    queued(run(&f, c), 2); /* no barging past the waiting writer */
    ASSERT_EQ(run(&f, c_rel(a, 9, f1, "R")).status, 0);
    assert_grants(&f, NULL, 0);
    ASSERT_EQ(run(&f, c_rel(a, 10, f2, "R")).status, 0);
    assert_grants(&f, &a, 1);
    ASSERT_UEQ(f.fx.fx[0].waiter, 8);
    teardown(&f);
}

TEST(reentrant_with_the_flag_names_its_hold_by_fence)
{
    struct fixture f;
    uint64_t a, b, fa, fb, fm, fx, seq = 20;
    uint8_t more[CMDS_MORE_MAX];
    const char *mn[] = {"M1", "M2"};
    struct cmd c;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    fa = grant(&f, a, 1, "L");
    fb = grant(&f, b, 1, "O");
    fx = grant(&f, a, 2, "X");
    queued(run(&f, c_own(a, 3, "L")), 1);
    queue(&f, b, 2, "L", 2);
    /* The session's hold, whoever waits: a second handle, same fence. */
    ASSERT_UEQ(granted(run(&f, c_enter(a, 4, "L", fa))), fa);
    {
        struct msg_lock_info_r i = info(&f, "L");
        ASSERT_UEQ(i.holders[0].count, 2);
        ASSERT_EQ(i.total_waiters, 2);
        store_lock_info_free(&i);
    }
    /* Not a hold of this session on this name: refused, nothing changes. */
    ASSERT_EQ(run(&f, c_enter(a, 5, "L", 0)).status, BATON_ENOTHELD);
    ASSERT_EQ(run(&f, c_enter(a, 6, "L", fa + 1000)).status, BATON_ENOTHELD);
    ASSERT_EQ(run(&f, c_enter(a, 7, "L", fx)).status, BATON_ENOTHELD); /* a's, on X */
    ASSERT_EQ(run(&f, c_enter(a, 8, "O", fb)).status, BATON_ENOTHELD); /* b's */
    ASSERT_EQ(run(&f, c_enter(a, 9, "Q", fa)).status, BATON_ENOTHELD); /* no such lock */
    ASSERT_EQ(count_in(&f, DB_LOCKS), 3);
    /* Not reentrant: the fence must be 0. */
    c = c_own(a, 10, "L");
    c.fence = fa;
    ASSERT_EQ(run(&f, c).status, BATON_EINVAL);
    /* Two handles: the first release keeps the hold. */
    ASSERT_EQ(run(&f, c_rel(a, 11, fa, "L")).status, 0);
    assert_grants(&f, NULL, 0);
    ASSERT_EQ(run(&f, c_rel(a, 12, fa, "L")).status, 0);
    assert_grants(&f, &a, 1);
    ASSERT_UEQ(f.fx.fx[0].waiter, 3);

    /* An upgrade would wait for itself; a shared re-entry is granted. */
    c = c_own(a, 13, "R");
    c.mode = SH;
    fa = granted(run(&f, c));
    ASSERT_EQ(run(&f, c_enter(a, 14, "R", fa)).status, BATON_EDEADLK);
    c = c_enter(a, 15, "R", fa);
    c.mode = SH;
    ASSERT_UEQ(granted(run(&f, c)), fa);
    /* A multi-lock's hold has one handle. */
    fm = granted(run(&f, c_many(a, 16, BATON_WAIT_FOREVER, mn, 2, more)));
    ASSERT_EQ(run(&f, c_enter(a, 17, "M2", fm)).status, BATON_EDEADLK);
    /* A hold forced away: ELOST until the RELEASE acknowledges it, and the
     * re-entry does not acknowledge it. */
    ASSERT_EQ(run(&f, c_force2("X", fx, CMD_FORCE_NOW)).status, 0);
    ASSERT_EQ(run(&f, c_enter(a, 18, "X", fx)).status, BATON_ELOST);
    ASSERT_EQ(run(&f, c_enter(a, 19, "X", fx)).status, BATON_ELOST);
    ASSERT_EQ(run(&f, c_rel(a, ++seq, fx, "X")).status, BATON_ELOST);
    ASSERT_EQ(run(&f, c_enter(a, ++seq, "X", fx)).status, BATON_ENOTHELD);
    teardown(&f);
}

TEST(release_cancel_and_timeout_end_only_the_entry_they_name)
{
    struct fixture f;
    uint64_t a, b, fb, fa2, seq = 10;
    struct cmd_result r;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    fb = grant(&f, b, 1, "L");
    queued(run(&f, c_own(a, 1, "L")), 1);
    queued(run(&f, c_own(a, 2, "L")), 2);
    queued(run(&f, c_own(a, 3, "L")), 3);
    /* A CANCEL names its waiter: the others stay, in order. */
    r = run(&f, c_cancel(a, 4, 2, "L"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_CANCELLED);
    ASSERT_EQ(count_fx(&f.fx, FX_WAIT_FAILED), 1);
    ASSERT_UEQ(f.fx.fx[0].waiter, 2);
    assert_lock(&f, "L", (const uint64_t[][2]){{b, 1}}, 1,
                (const uint64_t[][2]){{a, 1}, {a, 3}}, 2);
    /* So does WAIT_TIMEOUT. */
    run(&f, c_timeout(a, 3, "L"));
    ASSERT_EQ(count_fx(&f.fx, FX_WAIT_FAILED), 1);
    ASSERT_UEQ(f.fx.fx[0].waiter, 3);
    assert_lock(&f, "L", (const uint64_t[][2]){{b, 1}}, 1, (const uint64_t[][2]){{a, 1}}, 1);
    ASSERT(counted(&f, a, &seq, "L"));
    /* The grant goes to the one left; a CANCEL of it now reports it. */
    ASSERT_EQ(run(&f, c_rel(b, 2, fb, "L")).status, 0);
    assert_grants(&f, &a, 1);
    fa2 = f.fx.fx[0].fence;
    queued(run(&f, c_own(a, 5, "L")), 1);
    r = run(&f, c_cancel(a, 6, 1, "L"));
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    ASSERT_UEQ(r.value, fa2);
    /* A RELEASE names its hold by fence: the wait stays, and is granted. */
    ASSERT_EQ(run(&f, c_rel(a, 7, fa2, "L")).status, 0);
    assert_grants(&f, &a, 1);
    ASSERT_UEQ(f.fx.fx[0].waiter, 5);
    ASSERT_EQ(run(&f, c_rel(a, 8, f.fx.fx[0].fence, "L")).status, 0);
    ASSERT(!counted(&f, a, &seq, "L"));
    ASSERT_EQ(count_in(&f, DB_SESSION_LOCKS), 0);
    ASSERT_EQ(count_in(&f, DB_OWNED), 0);
    teardown(&f);
}

/* The end of a session with a hold and waits on one name: its waits go
 * first, so its hold goes to the next session's waiter, never to one of
 * its own; FX_LOST once per hold. */
static void session_end_skips_its_own_waits(int expire)
{
    struct fixture f;
    uint64_t a, b, c;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    grant(&f, a, 1, "L");
    queued(run(&f, c_own(a, 2, "L")), 1);
    queue(&f, b, 1, "L", 2);
    queued(run(&f, c_own(a, 3, "L")), 3);
    /* Two shared holds of a on R, and c waits for it exclusively. */
    {
        struct cmd s = c_own(a, 4, "R");
        s.mode = SH;
        granted(run(&f, s));
        s.seq = 5;
        granted(run(&f, s));
    }
    queue(&f, c, 1, "R", 1);
    run(&f, expire ? c_expire(a) : c_close(a, 6));
    ASSERT_EQ(count_fx(&f.fx, FX_LOST), expire ? 3 : 0);
    for (size_t i = 0; i < f.fx.n_fx; i++)
        if (f.fx.fx[i].type == FX_LOST) ASSERT_UEQ(f.fx.fx[i].session, a);
    {
        const uint64_t want[] = {b, c};
        assert_grants(&f, want, 2); /* L, then R once both of a's holds went */
    }
    ASSERT_EQ(count_fx(&f.fx, FX_WAIT_FAILED), 0);
    ASSERT_EQ(count_fx(&f.fx, FX_SESSION_GONE), 1);
    assert_lock(&f, "L", (const uint64_t[][2]){{b, 1}}, 1, NULL, 0);
    assert_lock(&f, "R", (const uint64_t[][2]){{c, 1}}, 1, NULL, 0);
    ASSERT_EQ(count_in(&f, DB_SESSION_LOCKS), 2); /* b: L, c: R */
    ASSERT_EQ(count_in(&f, DB_OWNED), 2);
    teardown(&f);
}

TEST(expiry_hands_a_hold_past_the_sessions_own_waits)
{
    session_end_skips_its_own_waits(1);
}

TEST(close_hands_a_hold_past_the_sessions_own_waits)
{
    session_end_skips_its_own_waits(0);
}

TEST(expiry_with_a_lock_delay_and_waits_of_the_same_session)
{
    struct fixture f;
    uint64_t a, b;
    struct cmd c;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    grant(&f, b, 1, "D0"); /* some other state */
    ASSERT_EQ(granted(run(&f, c_acq_d(a, 1, BATON_WAIT_FOREVER, "D", 500))), 2);
    c = c_own(a, 2, "D");
    c.lock_delay_ms = 500;
    queued(run(&f, c), 1);
    queue(&f, b, 2, "D", 2);
    run(&f, c_expire(a));
    ASSERT_EQ(count_fx(&f.fx, FX_LOST), 1);
    ASSERT_EQ(count_fx(&f.fx, FX_LOCK_DELAY), 1);
    assert_grants(&f, NULL, 0);
    assert_lock(&f, "D", NULL, 0, (const uint64_t[][2]){{b, 2}}, 1);
    run(&f, c_delay_end("D"));
    assert_grants(&f, &b, 1);
    teardown(&f);
}

TEST(forced_release_of_one_of_two_holds)
{
    struct fixture f;
    uint64_t a, b, f1, f2, fb, seq = 10;
    struct cmd c;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = c_own(a, 1, "R");
    c.mode = SH;
    f1 = granted(run(&f, c));
    c.seq = 2;
    f2 = granted(run(&f, c));
    queue(&f, b, 1, "R", 1);
    ASSERT_EQ(run(&f, c_force2("R", f1, CMD_FORCE_NOW)).status, 0);
    ASSERT_EQ(count_fx(&f.fx, FX_LOST), 1);
    ASSERT_UEQ(f.fx.fx[0].fence, f1);
    assert_grants(&f, NULL, 0); /* the other hold of a stays */
    assert_lock(&f, "R", (const uint64_t[][2]){{a, 2}}, 1, (const uint64_t[][2]){{b, 1}}, 1);
    ASSERT(counted(&f, a, &seq, "R"));
    ASSERT_EQ(run(&f, c_rel(a, ++seq, f1, "R")).status, BATON_ELOST);
    ASSERT_EQ(run(&f, c_rel(a, ++seq, f2, "R")).status, 0);
    assert_grants(&f, &b, 1);
    fb = f.fx.fx[0].fence;
    ASSERT(!counted(&f, a, &seq, "R"));
    /* Every hold at once: a lost record for each of a's two. */
    c.seq = ++seq;
    c.mode = EX;
    queued(run(&f, c), 1);
    ASSERT_EQ(run(&f, c_rel(b, 2, fb, "R")).status, 0);
    assert_grants(&f, &a, 1);
    f1 = f.fx.fx[0].fence;
    ASSERT_UEQ(granted(run(&f, c_enter(a, ++seq, "R", f1))), f1);
    c.seq = ++seq;
    queued(run(&f, c), 1);
    ASSERT_EQ(run(&f, c_force2("R", 0, CMD_FORCE_NOW)).status, 0);
    ASSERT_EQ(count_fx(&f.fx, FX_LOST), 1); /* one hold of two handles */
    assert_grants(&f, &a, 1);               /* a's waiter is a waiter like any */
    ASSERT_UEQ(f.fx.fx[1].waiter, c.seq);
    ASSERT_EQ(run(&f, c_rel(a, ++seq, f1, "R")).status, BATON_ELOST);
    teardown(&f);
}

TEST(multi_locks_stay_session_level)
{
    struct fixture f;
    uint64_t a, b, fm, fl, seq = 10;
    uint8_t more[CMDS_MORE_MAX];
    const char *ln[] = {"L", "M"}, *pn[] = {"P", "L"};

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    fl = grant(&f, b, 1, "L");
    queued(run(&f, c_own(a, 1, "L")), 1);
    /* A multi-lock on a name the session waits for: refused. */
    ASSERT_EQ(run(&f, c_many(a, 2, BATON_WAIT_FOREVER, pn, 2, more)).status, BATON_EDEADLK);
    ASSERT_EQ(count_in(&f, DB_LOCKS), 1);
    ASSERT_EQ(run(&f, c_rel(b, 2, fl, "L")).status, 0);
    assert_grants(&f, &a, 1);
    ASSERT_EQ(run(&f, c_rel(a, 3, f.fx.fx[0].fence, "L")).status, 0);
    /* A request with the flag on a name of the session's multi-lock waits
     * for it. */
    fm = granted(run(&f, c_many(a, 4, BATON_WAIT_FOREVER, ln, 2, more)));
    queued(run(&f, c_own(a, 5, "M")), 1);
    ASSERT_EQ(run(&f, c_many(a, 6, BATON_WAIT_FOREVER, pn, 2, more)).status, BATON_EDEADLK);
    ASSERT_EQ(run(&f, c_rel(a, 7, fm, "L")).status, 0);
    assert_grants(&f, &a, 1);
    ASSERT_UEQ(f.fx.fx[0].waiter, 5);
    ASSERT(!counted(&f, a, &seq, "L"));
    ASSERT(counted(&f, a, &seq, "M"));
    teardown(&f);
}

TEST(several_entries_survive_a_snapshot)
{
    struct fixture f, g;
    struct buf b = {0};
    uint64_t a, s2, fa;

    setup(&f);
    setup(&g);
    a = open_session(&f);
    s2 = open_session(&f);
    fa = grant(&f, a, 1, "L");
    queued(run(&f, c_own(a, 2, "L")), 1);
    queue(&f, s2, 1, "L", 2);
    queued(run(&f, c_own(a, 3, "L")), 3);
    granted(run(&f, c_enter(a, 4, "L", fa)));
    snap(&f, &b);
    ASSERT_EQ(store_restore(g.s, b.data, b.len), 0);
    g.index = f.index;
    assert_same_snapshots(&f, &g);
    /* The restored store goes on as the first does. */
    {
        struct cmd_result r1, r2;
        r1 = run(&f, c_expire(a));
        r2 = run(&g, c_expire(a));
        ASSERT_EQ(r1.status, r2.status);
        assert_same_effects(&f.fx, &g.fx);
        assert_grants(&g, &s2, 1);
    }
    assert_same_snapshots(&f, &g);
    buf_free(&b);
    teardown(&f);
    teardown(&g);
}

int main(int argc, char **argv)
{
    fsm_main_begin(argc, argv);
    RUN(a_second_request_of_a_session_queues_in_fifo_order);
    RUN(a_compatible_second_request_is_granted_at_once);
    RUN(reentrant_with_the_flag_names_its_hold_by_fence);
    RUN(release_cancel_and_timeout_end_only_the_entry_they_name);
    RUN(expiry_hands_a_hold_past_the_sessions_own_waits);
    RUN(close_hands_a_hold_past_the_sessions_own_waits);
    RUN(expiry_with_a_lock_delay_and_waits_of_the_same_session);
    RUN(forced_release_of_one_of_two_holds);
    RUN(multi_locks_stay_session_level);
    RUN(several_entries_survive_a_snapshot);
    return fsm_main_end();
}
