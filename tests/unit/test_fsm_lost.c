/*
 * test_fsm_lost.c -- the lock state machine (storage/store.h): forced
 * releases (FORCE_RELEASE2, storage/cmd.h "Forced releases") and the lost
 * holds they leave until the holder's session acknowledges them
 * (store.h, "Lost holds"): the record, its bound, its acknowledgement by
 * RELEASE, its end with the session, snapshots and format 5 stores; the
 * expected fence, and waiting out the holder's lease versus granting now.
 *
 * Each test runs on a store of its own (tests/unit/fsm_fixture.h).
 */
#include "tests/unit/fsm_fixture.h"

#include "storage/store_test.h"

/* ---- reading the lost table ------------------------------------------------ */

struct lost_seen {
    int n;
    uint64_t waiter[8], fence[8];
    int32_t status[8];
    char names[8][16];
};

static int collect_lost(void *data, uint64_t waiter, uint64_t fence, int32_t status,
                        const char *name, size_t name_len)
{
    struct lost_seen *l = data;

    ASSERT_LT(l->n, 8);
    ASSERT_LT(name_len, 16);
    l->waiter[l->n] = waiter;
    l->fence[l->n] = fence;
    l->status[l->n] = status;
    memcpy(l->names[l->n], name, name_len);
    l->names[l->n][name_len] = 0;
    l->n++;
    return 0;
}

/* The lost holds of session (fence > after, at most limit), and *more. */
static struct lost_seen lost_of(struct fixture *f, uint64_t session, uint64_t after,
                                uint32_t limit, int *more)
{
    struct lost_seen l;
    int m;

    memset(&l, 0, sizeof l);
    ASSERT_EQ(store_lost_list(f->s, session, after, limit, collect_lost, &l, &m), 0);
    if (more != NULL) *more = m;
    return l;
}

static uint32_t n_lost(struct fixture *f, uint64_t session)
{
    uint32_t n;

    ASSERT_EQ(store_lost_count(f->s, session, 1000, &n), 0);
    return n;
}

/* ---- the record -------------------------------------------------------------- */

/* A forced release takes the lock (FX_LOST, the grant to the next waiter
 * with --now) and leaves a lost record that names the hold exactly; the
 * old holder's RELEASE of it is its acknowledgement: BATON_ELOST, and the
 * record goes. A second RELEASE, or one naming another lock, is
 * BATON_ENOTHELD. */
TEST(forced_release_records_a_lost_hold)
{
    struct fixture f;
    struct cmd_result r;
    struct lost_seen l;
    uint64_t a, b, fa, fb;
    int more;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    grant(&f, a, 1, "other");
    fa = grant(&f, a, 2, "L");
    queue(&f, b, 1, "L", 1);
    r = run(&f, c_force2("L", 0, CMD_FORCE_NOW));
    ASSERT_EQ(r.status, 0);
    ASSERT_UEQ(r.value, fa);
    ASSERT_EQ(f.fx.n_fx, 2);
    assert_fx(&f.fx.fx[0], FX_LOST, BATON_ELOST, a, 2, "L");
    ASSERT_UEQ(f.fx.fx[0].fence, fa);
    assert_fx(&f.fx.fx[1], FX_GRANT, 0, b, 1, "L");
    fb = f.fx.fx[1].fence;
    ASSERT_GT(fb, fa);
    CHANGED(&f, "L");
    assert_holder(&f, "L", b, fb, 0);

    ASSERT_EQ(n_lost(&f, a), 1);
    ASSERT_EQ(n_lost(&f, b), 0);
    l = lost_of(&f, a, 0, 10, &more);
    ASSERT_EQ(l.n, 1);
    ASSERT_EQ(more, 0);
    ASSERT_UEQ(l.waiter[0], 2);
    ASSERT_UEQ(l.fence[0], fa);
    ASSERT_EQ(l.status[0], BATON_ELOST);
    ASSERT_STREQ(l.names[0], "L");
    ASSERT_EQ(count_in(&f, DB_LOST), 1);
    ASSERT_EQ(count_in(&f, DB_OWNED), 2); /* a's "other", b's "L": not a's lost "L" */

    /* A RELEASE naming another lock with that fence is no acknowledgement. */
    ASSERT_EQ(run(&f, c_rel(a, 3, fa, "other")).status, BATON_ENOTHELD);
    ASSERT_EQ(n_lost(&f, a), 1);
    /* The holder's own RELEASE is: BATON_ELOST, and the record goes. */
    ASSERT_EQ(run(&f, c_rel(a, 4, fa, "L")).status, BATON_ELOST);
    ASSERT_EQ(f.fx.n_fx, 0);
    UNCHANGED(&f);
    ASSERT_EQ(n_lost(&f, a), 0);
    ASSERT_EQ(count_in(&f, DB_LOST), 0);
    ASSERT_EQ(run(&f, c_rel(a, 5, fa, "L")).status, BATON_ENOTHELD);
    /* Its retry (the same seq) gets the cached answer. */
    ASSERT_EQ(run(&f, c_rel(a, 4, fa, "L")).status, BATON_ELOST);
    /* b was untouched all along. */
    assert_holder(&f, "L", b, fb, 0);
    teardown(&f);
}

/* Nobody waiting: the lock is simply free (and its record gone). Two
 * forced holds of one session are listed in fence order and paged. */
TEST(lost_holds_listed_in_fence_order_and_paged)
{
    struct fixture f;
    struct lost_seen l;
    uint64_t a, f1, f2, f3;
    int more;

    setup(&f);
    a = open_session(&f);
    f1 = grant(&f, a, 1, "x");
    f2 = grant(&f, a, 2, "y");
    f3 = grant(&f, a, 3, "z");
    /* Forced in another order than their fences. */
    ASSERT_EQ(run(&f, c_force2("z", 0, CMD_FORCE_NOW)).status, 0);
    ASSERT_EQ(run(&f, c_force2("x", f1, CMD_FORCE_NOW)).status, 0);
    ASSERT_EQ(run(&f, c_force2("y", 0, CMD_FORCE_NOW)).status, 0);
    ASSERT_EQ(count_in(&f, DB_LOCKS), 0);
    ASSERT_EQ(n_lost(&f, a), 3);
    l = lost_of(&f, a, 0, 2, &more);
    ASSERT_EQ(l.n, 2);
    ASSERT_EQ(more, 1);
    ASSERT_UEQ(l.fence[0], f1);
    ASSERT_STREQ(l.names[0], "x");
    ASSERT_UEQ(l.fence[1], f2);
    l = lost_of(&f, a, l.fence[1], 2, &more);
    ASSERT_EQ(l.n, 1);
    ASSERT_EQ(more, 0);
    ASSERT_UEQ(l.fence[0], f3);
    ASSERT_UEQ(l.waiter[0], 3);
    /* Counting stops at max. */
    {
        uint32_t n;
        ASSERT_EQ(store_lost_count(f.s, a, 2, &n), 0);
        ASSERT_EQ(n, 2);
    }
    /* Another session's records are not listed. */
    ASSERT_EQ(lost_of(&f, a + 1, 0, 10, NULL).n, 0);
    teardown(&f);
}

/* The end of the session -- a close or an expiry -- deletes its records:
 * the end itself tells the client. Other sessions' records stay. */
TEST(lost_records_end_with_the_session)
{
    struct fixture f;
    uint64_t a, b, c;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    grant(&f, a, 1, "x");
    grant(&f, b, 1, "y");
    grant(&f, c, 1, "z");
    ASSERT_EQ(run(&f, c_force2("x", 0, CMD_FORCE_NOW)).status, 0);
    ASSERT_EQ(run(&f, c_force2("y", 0, CMD_FORCE_NOW)).status, 0);
    ASSERT_EQ(run(&f, c_force2("z", 0, CMD_FORCE_NOW)).status, 0);
    ASSERT_EQ(count_in(&f, DB_LOST), 3);
    ASSERT_EQ(run(&f, c_close(a, 2)).status, 0);
    ASSERT_EQ(n_lost(&f, a), 0);
    ASSERT_EQ(run(&f, c_expire(b)).status, 0);
    ASSERT_EQ(n_lost(&f, b), 0);
    ASSERT_EQ(n_lost(&f, c), 1);
    ASSERT_EQ(count_in(&f, DB_LOST), 1);
    teardown(&f);
}

/* A lost record keeps its hold's slot: a session at its limit stays there
 * after a forced release (an ACQUIRE gets BATON_ELIMIT) until it
 * acknowledges the loss. The forced release itself never fails for it. */
TEST(lost_record_counts_toward_the_session_limit)
{
    struct fixture f;
    static struct cmd cmds[CMD_MAX_BATCH];
    static char names[STORE_MAX_OWNED_PER_SESSION][16];
    uint64_t a, seq = 1, fence;
    size_t n = 0;

    setup(&f);
    a = open_session(&f);
    for (int i = 0; i < STORE_MAX_OWNED_PER_SESSION; i++) {
        snprintf(names[i], sizeof names[i], "k%d", i);
        cmds[n] = c_acq(a, seq, BATON_WAIT_TRY, names[i]);
        cmds[n++].ack_below = seq++; /* seen: the cache bound stays out of the way */
        if (n == CMD_MAX_BATCH || i == STORE_MAX_OWNED_PER_SESSION - 1) {
            apply_n(&f, cmds, n);
            for (size_t j = 0; j < n; j++) ASSERT_EQ(f.fx.results[j].kind, RESULT_GRANTED);
            n = 0;
        }
    }
    ASSERT_EQ(run(&f, c_acq(a, seq++, BATON_WAIT_TRY, "more")).status, BATON_ELIMIT);
    {
        struct msg_lock_info_r i = info(&f, "k0");
        fence = i.fence;
        store_lock_info_free(&i);
    }
    ASSERT_EQ(run(&f, c_force2("k0", fence, CMD_FORCE_NOW)).status, 0);
    ASSERT_EQ(run(&f, c_acq(a, seq++, BATON_WAIT_TRY, "more")).status, BATON_ELIMIT);
    ASSERT_EQ(run(&f, c_rel(a, seq++, fence, "k0")).status, BATON_ELOST);
    ASSERT_EQ(run(&f, c_acq(a, seq++, BATON_WAIT_TRY, "more")).kind, RESULT_GRANTED);
    teardown(&f);
}

/* ---- the expected fence -------------------------------------------------------- */

/* With a fence, only that hold is taken: another fence (or a free lock)
 * changes nothing and says which fence is there. A re-sent forced release
 * with the fence, once the lock has moved on, never takes it from the next
 * holder; one without a fence would. */
TEST(forced_release_with_a_fence_is_exact)
{
    struct fixture f;
    struct buf before = {0}, after = {0};
    struct cmd_result r;
    uint64_t a, b, c, fa, fb;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    fa = grant(&f, a, 1, "L");
    queue(&f, b, 1, "L", 1);
    queue(&f, c, 1, "L", 2);
    snap(&f, &before);
    r = run(&f, c_force2("L", fa + 100, CMD_FORCE_NOW));
    ASSERT_EQ(r.status, BATON_ENOTHELD);
    ASSERT_UEQ(r.value, fa);
    ASSERT_EQ(f.fx.n_fx, 0);
    UNCHANGED(&f);
    snap(&f, &after);
    ASSERT(same_state(&before, &after));
    r = run(&f, c_force2("free", 7, CMD_FORCE_NOW));
    ASSERT_EQ(r.status, BATON_ENOTHELD);
    ASSERT_UEQ(r.value, 0);

    /* The right fence: taken, b is next. */
    r = run(&f, c_force2("L", fa, CMD_FORCE_NOW));
    ASSERT_EQ(r.status, 0);
    assert_fx(&f.fx.fx[1], FX_GRANT, 0, b, 1, "L");
    fb = f.fx.fx[1].fence;
    /* The same request again (batonctl re-sends after a broken
     * connection): b keeps the lock, nothing changes. */
    snap(&f, &before);
    r = run(&f, c_force2("L", fa, CMD_FORCE_NOW));
    ASSERT_EQ(r.status, BATON_ENOTHELD);
    ASSERT_UEQ(r.value, fb);
    ASSERT_EQ(f.fx.n_fx, 0);
    snap(&f, &after);
    ASSERT(same_state(&before, &after));
    assert_holder(&f, "L", b, fb, 1);
    ASSERT_EQ(n_lost(&f, b), 0);
    /* Without a fence, the re-send takes it from b: what --fence is for. */
    ASSERT_EQ(run(&f, c_force2("L", 0, CMD_FORCE_NOW)).status, 0);
    ASSERT_EQ(n_lost(&f, b), 1);
    assert_holder(&f, "L", c, 0, 0);
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
}

/* ---- waiting out the holder's lease -------------------------------------------- */

/* By default the lock goes to nobody for the holder session's ttl plus the
 * hold's lock-delay (FX_LOCK_DELAY, the lock delayed with its queue, a new
 * leader re-arms it); a re-send without a fence then finds it not held;
 * DELAY_END grants the head of the queue. --now (CMD_FORCE_NOW) grants at
 * once, whatever the hold's lock-delay. */
TEST(forced_release_waits_out_the_lease_unless_now)
{
    struct fixture f;
    struct delayed_seen d = {0};
    struct cmd_result r;
    struct msg_lock_info_r i;
    uint64_t a, b, fa;

    setup(&f);
    a = run(&f, c_open(3000, "holder")).value;
    b = open_session(&f);
    r = run(&f, c_acq_d(a, 1, BATON_WAIT_FOREVER, "L", 500));
    fa = r.value;
    queue(&f, b, 1, "L", 1);
    r = run(&f, c_force2("L", fa, CMD_FORCE_AFTER_LEASE));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(f.fx.n_fx, 2);
    assert_fx(&f.fx.fx[0], FX_LOST, BATON_ELOST, a, 1, "L");
    assert_fx(&f.fx.fx[1], FX_LOCK_DELAY, 0, a, 1, "L");
    ASSERT_UEQ(f.fx.fx[1].fence, fa);
    ASSERT_EQ(f.fx.fx[1].lock_delay_ms, 3000 + 500);
    CHANGED(&f, "L");
    i = info(&f, "L");
    ASSERT_EQ(i.held, 0);
    ASSERT_EQ(i.delayed, 1);
    ASSERT_EQ(i.total_waiters, 1);
    store_lock_info_free(&i);
    ASSERT_EQ(store_foreach_delayed_lock(f.s, collect_delayed, &d), 0);
    ASSERT_EQ(d.n, 1);
    ASSERT_EQ(d.delay[0], 3500);
    ASSERT_EQ(n_lost(&f, a), 1);
    /* Re-sent, with or without the fence: not held, nothing changes. */
    r = run(&f, c_force2("L", 0, CMD_FORCE_AFTER_LEASE));
    ASSERT_EQ(r.status, BATON_ENOTHELD);
    ASSERT_UEQ(r.value, 0);
    ASSERT_EQ(run(&f, c_force2("L", fa, CMD_FORCE_NOW)).status, BATON_ENOTHELD);
    ASSERT_EQ(f.fx.n_fx, 0);
    /* A try fails meanwhile; the delay's end grants b. */
    ASSERT_EQ(run(&f, c_acq(a, 2, BATON_WAIT_TRY, "L")).status, BATON_EWOULDBLOCK);
    ASSERT_EQ(run(&f, c_delay_end("L")).status, 0);
    ASSERT_EQ(f.fx.n_fx, 1);
    assert_fx(&f.fx.fx[0], FX_GRANT, 0, b, 1, "L");
    ASSERT_GT(f.fx.fx[0].fence, fa);

    /* --now: the next waiter at once, the hold's lock-delay ignored. */
    r = run(&f, c_acq_d(a, 3, BATON_WAIT_FOREVER, "L", 500));
    ASSERT_EQ(r.kind, RESULT_QUEUED);
    ASSERT_EQ(run(&f, c_force2("L", 0, CMD_FORCE_NOW)).status, 0);
    ASSERT_EQ(f.fx.n_fx, 2);
    assert_fx(&f.fx.fx[0], FX_LOST, BATON_ELOST, b, 1, "L");
    assert_fx(&f.fx.fx[1], FX_GRANT, 0, a, 3, "L");
    ASSERT_EQ(count_fx(&f.fx, FX_LOCK_DELAY), 0);
    teardown(&f);
}

/* Bad forced releases: a wait_ms that is neither CMD_FORCE_NOW nor
 * CMD_FORCE_AFTER_LEASE, or a bad name, fail alone and change nothing.
 * The forced release of logs written before FORCE_RELEASE2 keeps its
 * meaning (a node replays them): no record, the next waiter at once. */
TEST(bad_forced_releases_and_the_old_command)
{
    struct fixture f;
    uint64_t a, b, fa;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    fa = grant(&f, a, 1, "L");
    queue(&f, b, 1, "L", 1);
    ASSERT_EQ(run(&f, c_force2("L", fa, 2)).status, BATON_EINVAL);
    ASSERT_EQ(run(&f, c_force2("L", fa, -1)).status, BATON_EINVAL);
    ASSERT_EQ(run(&f, c_force2("", 0, CMD_FORCE_NOW)).status, BATON_EINVAL);
    assert_holder(&f, "L", a, fa, 1);
    ASSERT_EQ(run(&f, c_force("L")).status, 0);
    assert_fx(&f.fx.fx[0], FX_LOST, BATON_ELOST, a, 1, "L");
    assert_fx(&f.fx.fx[1], FX_GRANT, 0, b, 1, "L");
    ASSERT_EQ(count_in(&f, DB_LOST), 0);
    ASSERT_EQ(run(&f, c_rel(a, 2, fa, "L")).status, BATON_ENOTHELD);
    teardown(&f);
}

/* ---- snapshots and formats -------------------------------------------------------- */

/* Lost records travel in snapshots and survive a close: a restored store
 * lists them, and both go on alike (the acknowledgement included). */
TEST(lost_records_in_snapshot_and_after_reopen)
{
    struct fixture f, g;
    struct buf s1 = {0}, s2 = {0};
    char err[256];
    struct lost_seen l;
    uint64_t a, fa;

    setup(&f);
    setup(&g);
    populate(&f);
    a = open_session(&f);
    fa = grant(&f, a, 1, "lost-one");
    ASSERT_EQ(run(&f, c_force2("lost-one", fa, CMD_FORCE_AFTER_LEASE)).status, 0);
    snap(&f, &s1);
    ASSERT_EQ(snap_count(&s1, DB_LOST), 1);
    ASSERT_EQ(store_restore(g.s, s1.data, s1.len), 0);
    g.index = f.index;
    l = lost_of(&g, a, 0, 10, NULL);
    ASSERT_EQ(l.n, 1);
    ASSERT_UEQ(l.fence[0], fa);
    store_close(g.s);
    ASSERT_EQ(store_open(g.dir, &g.s, err), 0);
    ASSERT_EQ(n_lost(&g, a), 1);
    ASSERT_EQ(run(&f, c_rel(a, 2, fa, "lost-one")).status, BATON_ELOST);
    ASSERT_EQ(run(&g, c_rel(a, 2, fa, "lost-one")).status, BATON_ELOST);
    snap(&f, &s1);
    snap(&g, &s2);
    ASSERT_EQ(s1.len, s2.len);
    ASSERT(memcmp(s1.data, s2.data, s1.len) == 0);
    buf_free(&s1);
    buf_free(&s2);
    teardown(&f);
    teardown(&g);
}

/* A snapshot may hold only well-formed lost entries: a 16-byte key, a
 * status below 0, a lock name. */
TEST(restore_rejects_bad_lost_entries)
{
    struct fixture f, g;
    struct buf s = {0};
    size_t v;

    setup(&f);
    setup(&g);
    populate_lost(&f); /* the one lost record */
    snap(&f, &s);
    /* ... {u32 16, key, u32 vlen, u64 waiter, i32 status, "gamma"}: find
     * the value (the nonce tables follow the lost table). */
    for (v = 20; v + 4 + 12 + 5 <= s.len; v++)
        if (le_get_u32(s.data + v) == 12 + 5 &&
            (int32_t)le_get_u32(s.data + v + 4 + 8) == BATON_ELOST &&
            memcmp(s.data + v + 4 + 12, "gamma", 5) == 0)
            break;
    ASSERT(v + 4 + 12 + 5 <= s.len);
    ASSERT_EQ(le_get_u32(s.data + v - 16 - 4), 16);
    le_put_u32(s.data + v + 4 + 8, 0); /* status 0 */
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    le_put_u32(s.data + v + 4 + 8, (uint32_t)BATON_ELOST);
    s.data[v + 4 + 12 + 4] = 0; /* a NUL in the name */
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    s.data[v + 4 + 12 + 4] = 'a';
    ASSERT_EQ(store_restore(g.s, s.data, s.len), 0);
    ASSERT_EQ(count_in(&g, DB_LOST), 1);
    buf_free(&s);
    teardown(&f);
    teardown(&g);
}

/* A store that a batond of format 5 left opens as format 6 with an empty
 * lost table, byte for byte the state of a store that applied the same
 * entries in format 6; a format 5 snapshot restores the same way, and one
 * that carries a lost table has trailing bytes. */
TEST(format5_store_and_snapshot_upgrade)
{
    struct fixture f, g;
    struct buf s6 = {0}, s5 = {0}, out = {0};
    char err[256];
    uint64_t a, fa;

    setup(&f);
    setup(&g);
    populate_old(&f); /* no nonces: format 5 had none */
    snap(&f, &s6);
    ASSERT_EQ(store__downgrade(f.s, 5), 0);
    store_close(f.s);
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    snap(&f, &out);
    ASSERT_EQ(le_get_u32(out.data + 4), 8);
    ASSERT_EQ(out.len, s6.len);
    ASSERT(memcmp(out.data, s6.data, s6.len) == 0);
    /* It records lost holds now. */
    a = open_session(&f);
    fa = grant(&f, a, 1, "new");
    ASSERT_EQ(run(&f, c_force2("new", fa, CMD_FORCE_NOW)).status, 0);
    ASSERT_EQ(n_lost(&f, a), 1);
    /* A store that holds lost records cannot be made a format 5 one. */
    ASSERT_EQ(store__downgrade(f.s, 5), BATON_EINVAL);

    /* The format 5 snapshot of the populated state. */
    snap_as_format(&s6, 5, &s5);
    ASSERT_EQ(le_get_u32(s5.data + 4), 5);
    ASSERT_ULT(s5.len, s6.len); /* no lost, nonce or holders tables, not even their counts */
    ASSERT_EQ(store_restore(g.s, s5.data, s5.len), 0);
    snap(&g, &out);
    ASSERT_EQ(out.len, s6.len);
    ASSERT(memcmp(out.data, s6.data, s6.len) == 0);
    /* Format 6's bytes labelled 5: the lost count is trailing. */
    le_put_u32(s6.data + 4, 5);
    le_put_u64(s6.data + 8, le_get_u64(s6.data + 8) + 1);
    ASSERT_EQ(store_restore(g.s, s6.data, s6.len), BATON_EMALFORMED);
    buf_free(&s6);
    buf_free(&s5);
    buf_free(&out);
    teardown(&f);
    teardown(&g);
}

int main(int argc, char **argv)
{
    fsm_main_begin(argc, argv);
    RUN(forced_release_records_a_lost_hold);
    RUN(lost_holds_listed_in_fence_order_and_paged);
    RUN(lost_records_end_with_the_session);
    RUN(lost_record_counts_toward_the_session_limit);
    RUN(forced_release_with_a_fence_is_exact);
    RUN(forced_release_waits_out_the_lease_unless_now);
    RUN(bad_forced_releases_and_the_old_command);
    RUN(lost_records_in_snapshot_and_after_reopen);
    RUN(restore_rejects_bad_lost_entries);
    RUN(format5_store_and_snapshot_upgrade);
    return fsm_main_end();
}
