/*
 * test_fsm_locks.c -- the lock state machine (storage/store.h): acquire and
 * release, FIFO queues, fences, cancel and wait timeouts, the
 * FX_LOCK_CHANGED effects, the limits on names and on what a session may
 * own, and the lock reads (store_list_locks, store_lock_info).
 *
 * Each test runs on a store of its own (tests/unit/fsm_fixture.h).
 */
#include "tests/unit/fsm_fixture.h"

TEST(acquire_free_lock_grants)
{
    struct fixture f;
    struct msg_lock_info_r i;
    uint64_t s, fence;

    setup(&f);
    s = open_session(&f);
    fence = grant(&f, s, 1, "L");
    ASSERT_UEQ(fence, 1);
    ASSERT_EQ(f.fx.n_fx, 0); /* the result is the answer: no push */
    i = info(&f, "L");
    ASSERT_EQ(i.held, 1);
    ASSERT_UEQ(i.holder_session, s);
    ASSERT_UEQ(i.holder_waiter, 1);
    ASSERT_UEQ(i.fence, 1);
    ASSERT_UEQ(i.granted_index, f.index);
    store_lock_info_free(&i);
    teardown(&f);
}

TEST(try_on_held_lock_wouldblock_and_queues_nothing)
{
    struct fixture f;
    struct cmd_result r;
    uint64_t a, b;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    grant(&f, a, 1, "L");
    r = run(&f, c_acq(b, 1, BATON_WAIT_TRY, "L"));
    ASSERT_EQ(r.status, BATON_EWOULDBLOCK);
    ASSERT_EQ(f.fx.n_fx, 0);
    assert_holder(&f, "L", a, 1, 0);
    ASSERT_EQ(count_in(&f, DB_WAITERS), 0);
    ASSERT_EQ(count_in(&f, DB_OWNED), 1);
    /* The holder's own session gets EDEADLK: not re-entrant unless asked
     * (test_fsm_modes.c). */
    r = run(&f, c_acq(a, 2, BATON_WAIT_TRY, "L"));
    ASSERT_EQ(r.status, BATON_EDEADLK);
    /* A try on a free lock grants. */
    r = run(&f, c_acq(b, 2, BATON_WAIT_TRY, "M"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    teardown(&f);
}

TEST(fifo_order_with_many_waiters)
{
    enum { N = 50 };
    struct fixture f;
    uint64_t sess[N], fence[N];

    setup(&f);
    for (int i = 0; i < N; i++) sess[i] = open_session(&f);
    fence[0] = grant(&f, sess[0], 1, "hot");
    /* Enqueue in a scrambled session order: the queue follows commit
     * order, not session ids. */
    int order[N];
    order[0] = 0;
    for (int i = 1; i < N; i++) order[i] = 1 + (i * 17) % (N - 1);
    for (int i = 1; i < N; i++) queue(&f, sess[order[i]], 1, "hot", (uint64_t)i);
    assert_holder(&f, "hot", sess[0], fence[0], N - 1);

    struct msg_lock_info_r in = info(&f, "hot");
    for (int i = 1; i < N; i++) {
        ASSERT_UEQ(in.waiters[i - 1].session, sess[order[i]]);
        ASSERT_UEQ(in.waiters[i - 1].waiter, 1);
        ASSERT_EQ(in.waiters[i - 1].wait_ms, BATON_WAIT_FOREVER);
    }
    store_lock_info_free(&in);

    /* One release, one grant, strictly in enqueue order. */
    uint64_t holder = sess[0], hfence = fence[0];
    for (int i = 1; i < N; i++) {
        struct cmd_result r = run(&f, c_rel(holder, 2, hfence, "hot"));
        ASSERT_EQ(r.status, 0);
        ASSERT_EQ(f.fx.n_fx, 1);
        assert_fx(&f.fx.fx[0], FX_GRANT, 0, sess[order[i]], 1, "hot");
        ASSERT_ULT(hfence, f.fx.fx[0].fence);
        holder = f.fx.fx[0].session;
        hfence = f.fx.fx[0].fence;
        assert_holder(&f, "hot", holder, hfence, (uint32_t)(N - 1 - i));
    }
    ASSERT_EQ(run(&f, c_rel(holder, 2, hfence, "hot")).status, 0);
    ASSERT_EQ(f.fx.n_fx, 0);
    /* Lock records exist only while held or queued. */
    ASSERT_EQ(count_in(&f, DB_LOCKS), 0);
    ASSERT_EQ(count_in(&f, DB_WAITERS), 0);
    ASSERT_EQ(count_in(&f, DB_OWNED), 0);
    teardown(&f);
}

TEST(release_by_non_holder_rejected)
{
    struct fixture f;
    uint64_t a, b, fence;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    fence = grant(&f, a, 1, "L");
    ASSERT_EQ(run(&f, c_rel(b, 1, fence, "L")).status, BATON_ENOTHELD);      /* wrong session */
    ASSERT_EQ(run(&f, c_rel(a, 2, fence + 1, "L")).status, BATON_ENOTHELD);  /* wrong fence */
    ASSERT_EQ(run(&f, c_rel(a, 3, 0, "L")).status, BATON_ENOTHELD);
    ASSERT_EQ(run(&f, c_rel(a, 4, fence, "other")).status, BATON_ENOTHELD);  /* wrong lock */
    ASSERT_EQ(run(&f, c_rel(b, 2, 0, "")).status, BATON_EINVAL);
    assert_holder(&f, "L", a, fence, 0);
    ASSERT_EQ(run(&f, c_rel(a, 5, fence, "L")).status, 0);
    /* A second release of the same grant is refused. */
    ASSERT_EQ(run(&f, c_rel(a, 6, fence, "L")).status, BATON_ENOTHELD);
    assert_holder(&f, "L", 0, 0, 0);
    teardown(&f);
}

TEST(release_hands_lock_to_head_in_same_apply)
{
    struct fixture f;
    struct cmd_result r;
    uint64_t a, b, c, fa, fb;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    fa = grant(&f, a, 1, "L");
    queue(&f, b, 5, "L", 1);
    queue(&f, c, 9, "L", 2);
    r = run(&f, c_rel(a, 2, fa, "L"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_OK);
    ASSERT_EQ(f.fx.n_fx, 1);
    assert_fx(&f.fx.fx[0], FX_GRANT, 0, b, 5, "L");
    fb = f.fx.fx[0].fence;
    ASSERT_ULT(fa, fb);
    assert_holder(&f, "L", b, fb, 1);
    /* B's queued ACQUIRE, retried, now reports the grant. */
    r = run(&f, c_acq(b, 5, BATON_WAIT_FOREVER, "L"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    ASSERT_UEQ(r.value, fb);
    ASSERT_EQ(f.fx.n_fx, 0);
    /* C's, retried, still reports QUEUED. */
    r = run(&f, c_acq(c, 9, BATON_WAIT_FOREVER, "L"));
    ASSERT_EQ(r.kind, RESULT_QUEUED);
    teardown(&f);
}

/* A second thread of the same client asking for the lock its session
 * holds or waits for would wait behind itself: BATON_EDEADLK at once, and
 * nothing changes (format 7; until then it queued). */
TEST(same_session_asking_again_gets_edeadlk)
{
    struct fixture f;
    uint64_t a, b, f1;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    f1 = grant(&f, a, 1, "L");
    ASSERT_EQ(run(&f, c_acq(a, 2, BATON_WAIT_FOREVER, "L")).status, BATON_EDEADLK);
    ASSERT_EQ(f.fx.n_fx, 0);
    queue(&f, b, 1, "L", 1);
    ASSERT_EQ(run(&f, c_acq(b, 2, 1000, "L")).status, BATON_EDEADLK); /* it waits already */
    ASSERT_EQ(run(&f, c_rel(a, 4, f1, "L")).status, 0);
    ASSERT_EQ(f.fx.n_fx, 1);
    assert_fx(&f.fx.fx[0], FX_GRANT, 0, b, 1, "L");
    struct msg_lock_info_r i = info(&f, "L");
    ASSERT_UEQ(i.holder_waiter, 1);
    ASSERT_UEQ(i.holder_session, b);
    store_lock_info_free(&i);
    teardown(&f);
}

TEST(fences_strictly_increase_across_locks)
{
    struct fixture f;
    uint64_t a, b, last = 0, fence;
    const char *names[] = {"a", "b", "c", "a", "d", "b"};

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 6; i++) {
            uint64_t seq = (uint64_t)(round * 100 + i * 2 + 1);
            struct cmd_result r = run(&f, c_acq(i % 2 ? b : a, seq, BATON_WAIT_TRY, names[i]));
            if (r.status == BATON_EWOULDBLOCK) continue;
            ASSERT_EQ(r.kind, RESULT_GRANTED);
            fence = r.value;
            ASSERT_ULT(last, fence);
            last = fence;
            ASSERT_EQ(run(&f, c_rel(i % 2 ? b : a, seq + 1, fence, names[i])).status, 0);
        }
    }
    teardown(&f);
}

/* ---- cancel and wait timeouts ------------------------------------------- */

TEST(cancel_waiting_and_cancel_vs_grant_race)
{
    struct fixture f;
    struct cmd_result r;
    uint64_t a, b, fa, fb;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    fa = grant(&f, a, 1, "L");
    queue(&f, b, 7, "L", 1);
    /* Still waiting: removed. */
    r = run(&f, c_cancel(b, 8, 7, "L"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_CANCELLED);
    ASSERT_EQ(f.fx.n_fx, 1);
    assert_fx(&f.fx.fx[0], FX_WAIT_FAILED, BATON_ECANCELED, b, 7, "L");
    assert_holder(&f, "L", a, fa, 0);
    /* The cancelled ACQUIRE, retried, reports how its wait ended. */
    ASSERT_EQ(run(&f, c_acq(b, 7, BATON_WAIT_FOREVER, "L")).status, BATON_ECANCELED);
    /* Cancelling again: nothing to cancel (a new seq, so not cached). */
    ASSERT_EQ(run(&f, c_cancel(b, 9, 7, "L")).status, BATON_ENOTFOUND);

    /* The race: the grant lands before the cancel. */
    queue(&f, b, 10, "L", 1);
    ASSERT_EQ(run(&f, c_rel(a, 2, fa, "L")).status, 0);
    assert_fx(&f.fx.fx[0], FX_GRANT, 0, b, 10, "L");
    fb = f.fx.fx[0].fence;
    r = run(&f, c_cancel(b, 11, 10, "L"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    ASSERT_UEQ(r.value, fb);
    ASSERT_EQ(f.fx.n_fx, 0);
    assert_holder(&f, "L", b, fb, 0);
    /* Wrong name or someone else's waiter: not found. */
    ASSERT_EQ(run(&f, c_cancel(b, 12, 10, "M")).status, BATON_ENOTFOUND);
    ASSERT_EQ(run(&f, c_cancel(a, 3, 10, "L")).status, BATON_ENOTFOUND);
    ASSERT_EQ(run(&f, c_cancel(b, 13, 999, "L")).status, BATON_ENOTFOUND);
    teardown(&f);
}

TEST(cancel_from_middle_of_queue_keeps_order)
{
    struct fixture f;
    uint64_t s[5], fence;

    setup(&f);
    for (int i = 0; i < 5; i++) s[i] = open_session(&f);
    fence = grant(&f, s[0], 1, "L");
    for (int i = 1; i < 5; i++) queue(&f, s[i], 1, "L", (uint64_t)i);
    ASSERT_EQ(run(&f, c_cancel(s[2], 2, 1, "L")).kind, RESULT_CANCELLED);
    assert_holder(&f, "L", s[0], fence, 3);
    /* A new waiter gets the position after the remaining three. */
    ASSERT_EQ(run(&f, c_acq(s[2], 3, BATON_WAIT_FOREVER, "L")).value, 4);
    uint64_t expect[] = {s[1], s[3], s[4], s[2]};
    uint64_t expect_waiter[] = {1, 1, 1, 3};
    uint64_t holder = s[0];
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ(run(&f, c_rel(holder, 100 + (uint64_t)i, fence, "L")).status, 0);
        assert_fx(&f.fx.fx[0], FX_GRANT, 0, expect[i], expect_waiter[i], "L");
        holder = expect[i];
        fence = f.fx.fx[0].fence;
    }
    teardown(&f);
}

TEST(wait_timeout_removes_only_waiters)
{
    struct fixture f;
    struct timed t = {0};
    struct cmd_result r;
    uint64_t a, b, c, fa;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    fa = grant(&f, a, 1, "L");
    r = run(&f, c_acq(b, 4, 250, "L"));
    ASSERT_EQ(r.kind, RESULT_QUEUED);
    queue(&f, c, 1, "L", 2);
    ASSERT_EQ(store_foreach_timed_waiter(f.s, collect_timed, &t), 0);
    ASSERT_EQ(t.n, 1);
    ASSERT_UEQ(t.session, b);
    ASSERT_UEQ(t.waiter, 4);
    ASSERT_EQ(t.wait_ms, 250);
    ASSERT_STREQ(t.name, "L");

    /* On a holder: a no-op. */
    struct buf before = {0}, after = {0};
    snap(&f, &before);
    r = run(&f, c_timeout(a, 1, "L"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(f.fx.n_fx, 0);
    r = run(&f, c_timeout(b, 4, "wrong-name"));
    ASSERT_EQ(r.status, 0);
    r = run(&f, c_timeout(99, 4, "L"));
    ASSERT_EQ(r.status, 0);
    snap(&f, &after);
    ASSERT(same_state(&before, &after));

    /* On the waiter: removed, with WAIT_FAILED. */
    r = run(&f, c_timeout(b, 4, "L"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(f.fx.n_fx, 1);
    assert_fx(&f.fx.fx[0], FX_WAIT_FAILED, BATON_ETIMEDOUT, b, 4, "L");
    assert_holder(&f, "L", a, fa, 1);
    ASSERT_EQ(run(&f, c_acq(b, 4, 250, "L")).status, BATON_ETIMEDOUT);
    /* Twice: a no-op. */
    r = run(&f, c_timeout(b, 4, "L"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(f.fx.n_fx, 0);
    /* The grant came first: the timeout is a no-op. */
    ASSERT_EQ(run(&f, c_rel(a, 2, fa, "L")).status, 0);
    assert_fx(&f.fx.fx[0], FX_GRANT, 0, c, 1, "L");
    r = run(&f, c_timeout(c, 1, "L"));
    ASSERT_EQ(f.fx.n_fx, 0);
    assert_holder(&f, "L", c, 0, 0);
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
}

/* ---- FX_LOCK_CHANGED ---------------------------------------------------- */

/* Every kind of change to a lock's record or queue emits FX_LOCK_CHANGED
 * once per lock per entry; what changes nothing emits none. */
TEST(lock_changed_once_per_lock_per_entry)
{
    struct fixture f;
    struct cmd_result r;
    struct cmd cmds[5];
    uint64_t a, b, c, fa;

    setup(&f);
    a = open_session(&f);
    UNCHANGED(&f); /* sessions are not locks */
    b = open_session(&f);
    c = open_session(&f);

    fa = grant(&f, a, 1, "L");                     /* granted */
    CHANGED(&f, "L");
    queue(&f, b, 1, "L", 1);                       /* queued */
    CHANGED(&f, "L");
    r = run(&f, c_acq(c, 1, BATON_WAIT_TRY, "L")); /* refused try: no change */
    ASSERT_EQ(r.status, BATON_EWOULDBLOCK);
    UNCHANGED(&f);
    r = run(&f, c_acq(b, 1, BATON_WAIT_FOREVER, "L")); /* replayed: no change */
    ASSERT_EQ(r.kind, RESULT_QUEUED);
    UNCHANGED(&f);
    ASSERT_EQ(run(&f, c_rel(a, 2, fa + 100, "L")).status, BATON_ENOTHELD);
    UNCHANGED(&f);

    /* A release that hands the lock on changes it once, not twice. */
    ASSERT_EQ(run(&f, c_rel(a, 3, fa, "L")).status, 0);
    ASSERT_EQ(count_fx(&f.fx, FX_GRANT), 1);
    CHANGED(&f, "L");

    /* Cancel, wait timeout; a timeout of a waiter that is gone is a no-op. */
    queue(&f, c, 2, "L", 1);
    ASSERT_EQ(run(&f, c_cancel(c, 3, 2, "L")).kind, RESULT_CANCELLED);
    CHANGED(&f, "L");
    queue(&f, c, 4, "L", 1);
    run(&f, c_timeout(c, 4, "L"));
    CHANGED(&f, "L");
    run(&f, c_timeout(c, 4, "L"));
    UNCHANGED(&f);

    /* Forced release (to nobody), and of a lock nobody holds. */
    ASSERT_EQ(run(&f, c_force("L")).status, 0);
    CHANGED(&f, "L");
    ASSERT_EQ(run(&f, c_force("L")).status, BATON_ENOTHELD);
    UNCHANGED(&f);

    /* Several commands on two locks in one entry: each lock once, in the
     * order of its first change. */
    cmds[0] = c_acq(a, 10, BATON_WAIT_FOREVER, "M");
    cmds[1] = c_acq(b, 10, BATON_WAIT_FOREVER, "L");
    cmds[2] = c_acq(c, 10, BATON_WAIT_FOREVER, "M");
    cmds[3] = c_acq(c, 11, BATON_WAIT_TRY, "L");
    cmds[4] = c_cancel(c, 12, 10, "M");
    apply_n(&f, cmds, 5);
    ASSERT_EQ(f.fx.results[2].kind, RESULT_QUEUED);
    ASSERT_EQ(f.fx.results[3].status, BATON_EWOULDBLOCK);
    CHANGED(&f, "M", "L");

    /* Expiry and close drop holds and waits: every lock touched, once. */
    queue(&f, c, 20, "M", 1);
    queue(&f, c, 21, "L", 1);
    run(&f, c_expire(c)); /* c's two waits */
    CHANGED(&f, "M", "L");
    queue(&f, b, 20, "M", 1);
    run(&f, c_close(a, 30)); /* a holds M, which goes to b */
    ASSERT_EQ(count_fx(&f.fx, FX_GRANT), 1);
    CHANGED(&f, "M");

    /* A lock-delay: the expiry starts it, DELAY_END ends it; a DELAY_END
     * of a lock that is not delayed changes nothing. */
    c = open_session(&f);
    ASSERT_EQ(run(&f, c_acq_d(c, 1, BATON_WAIT_FOREVER, "D", 500)).kind, RESULT_GRANTED);
    CHANGED(&f, "D");
    run(&f, c_expire(c));
    ASSERT_EQ(count_fx(&f.fx, FX_LOCK_DELAY), 1);
    CHANGED(&f, "D");
    run(&f, c_delay_end("D"));
    CHANGED(&f, "D");
    run(&f, c_delay_end("D"));
    UNCHANGED(&f);
    teardown(&f);
}

/* ---- limits and validation ---------------------------------------------- */

TEST(invalid_names_and_waits)
{
    struct fixture f;
    struct cmd c;
    uint64_t a;

    setup(&f);
    a = open_session(&f);
    ASSERT_EQ(run(&f, c_acq(a, 1, BATON_WAIT_FOREVER, "")).status, BATON_EINVAL);
    c = c_acq(a, 2, BATON_WAIT_FOREVER, "a\0b");
    c.name_len = 3;
    ASSERT_EQ(run(&f, c).status, BATON_EINVAL);
    ASSERT_EQ(run(&f, c_acq(a, 3, -2, "ok")).status, BATON_EINVAL);
    ASSERT_EQ(run(&f, c_acq(a, 0, BATON_WAIT_FOREVER, "ok")).status, BATON_EINVAL);
    ASSERT_EQ(count_in(&f, DB_LOCKS), 0);
    teardown(&f);
}

TEST(limit_owned_per_session)
{
    struct fixture f;
    static char names[STORE_MAX_OWNED_PER_SESSION][16];
    static struct cmd cmds[CMD_MAX_BATCH];
    uint64_t a, b, seq = 0;
    int done = 0;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    grant(&f, b, 1, "held");
    /* Holds and waits both count. */
    queue(&f, a, ++seq, "held", 1);
    done = 1;
    while (done < STORE_MAX_OWNED_PER_SESSION) {
        size_t n = 0;
        while (n < CMD_MAX_BATCH && done < STORE_MAX_OWNED_PER_SESSION) {
            snprintf(names[done], sizeof names[done], "l%05d", done);
            cmds[n] = c_acq(a, ++seq, BATON_WAIT_TRY, names[done]);
            cmds[n++].ack_below = seq; /* seen: the cache bound stays out of the way */
            done++;
        }
        apply_n(&f, cmds, n);
        for (size_t i = 0; i < n; i++) ASSERT_EQ(f.fx.results[i].kind, RESULT_GRANTED);
    }
    ASSERT_EQ(run(&f, c_acq(a, ++seq, BATON_WAIT_TRY, "one-more")).status, BATON_ELIMIT);
    ASSERT_EQ(run(&f, c_acq(a, ++seq, BATON_WAIT_FOREVER, "held")).status, BATON_ELIMIT);
    /* Letting go of one makes room again. */
    ASSERT_EQ(run(&f, c_cancel(a, ++seq, 1, "held")).kind, RESULT_CANCELLED);
    ASSERT_EQ(run(&f, c_acq(a, ++seq, BATON_WAIT_TRY, "one-more")).kind, RESULT_GRANTED);
    /* Other sessions are not limited by a's count. */
    ASSERT_EQ(run(&f, c_acq(b, 2, BATON_WAIT_TRY, "b-too")).kind, RESULT_GRANTED);
    /* Closing a releases all 10000 in one entry. */
    ASSERT_EQ(run(&f, c_close(a, ++seq)).status, 0);
    ASSERT_EQ(count_in(&f, DB_OWNED), 2);
    teardown(&f);
}

/* ---- reads -------------------------------------------------------------- */

TEST(list_locks_and_lock_info)
{
    struct fixture f;
    struct listed l;
    struct msg_lock_info_r i;
    uint64_t a, b;
    int more;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    grant(&f, a, 1, "app/b");
    grant(&f, a, 2, "app/a");
    grant(&f, a, 3, "zzz");
    grant(&f, a, 4, "app");
    queue(&f, b, 1, "app/b", 1);
    queue(&f, open_session(&f), 2, "app/b", 2);

    memset(&l, 0, sizeof l);
    ASSERT_EQ(store_list_locks(f.s, "app/", 4, 10, collect_lock, &l, &more), 0);
    ASSERT_EQ(l.n, 2);
    ASSERT_EQ(more, 0);
    ASSERT_STREQ(l.names[0], "app/a");
    ASSERT_STREQ(l.names[1], "app/b");
    ASSERT_EQ(l.waiters[1], 2);
    ASSERT_UEQ(l.holder[1], a);

    memset(&l, 0, sizeof l);
    ASSERT_EQ(store_list_locks(f.s, "", 0, 3, collect_lock, &l, &more), 0);
    ASSERT_EQ(l.n, 3);
    ASSERT_EQ(more, 1);
    ASSERT_STREQ(l.names[0], "app");

    memset(&l, 0, sizeof l);
    ASSERT_EQ(store_list_locks(f.s, "nope", 4, 3, collect_lock, &l, &more), 0);
    ASSERT_EQ(l.n, 0);
    ASSERT_EQ(more, 0);

    /* max_waiters caps the list, not the total. */
    memset(&i, 0, sizeof i);
    ASSERT_EQ(store_lock_info(f.s, "app/b", 5, 1, &i), 0);
    ASSERT_EQ(i.total_waiters, 2);
    ASSERT_EQ(i.n_waiters, 1);
    ASSERT_UEQ(i.waiters[0].session, b);
    ASSERT_UEQ(i.waiters[0].waiter, 1);
    store_lock_info_free(&i);
    /* Names that cannot be locks are simply free. */
    i = info(&f, "");
    ASSERT_EQ(i.held, 0);
    teardown(&f);
}

int main(int argc, char **argv)
{
    fsm_main_begin(argc, argv);
    RUN(acquire_free_lock_grants);
    RUN(try_on_held_lock_wouldblock_and_queues_nothing);
    RUN(fifo_order_with_many_waiters);
    RUN(release_by_non_holder_rejected);
    RUN(release_hands_lock_to_head_in_same_apply);
    RUN(same_session_asking_again_gets_edeadlk);
    RUN(fences_strictly_increase_across_locks);
    RUN(cancel_waiting_and_cancel_vs_grant_race);
    RUN(cancel_from_middle_of_queue_keeps_order);
    RUN(wait_timeout_removes_only_waiters);
    RUN(lock_changed_once_per_lock_per_entry);
    RUN(invalid_names_and_waits);
    RUN(limit_owned_per_session);
    RUN(list_locks_and_lock_info);
    return fsm_main_end();
}
