/*
 * test_fsm_sessions.c -- the lock state machine (storage/store.h): opening,
 * listing, closing and expiring sessions, the limit on sessions, and
 * lock-delay: what an expired hold leaves behind and how DELAY_END hands
 * the lock on.
 *
 * Each test runs on a store of its own (tests/unit/fsm_fixture.h).
 */
#include "tests/unit/fsm_fixture.h"

/* ---- basics ------------------------------------------------------------- */

TEST(new_store_is_empty)
{
    struct fixture f;
    struct msg_lock_info_r i;

    setup(&f);
    ASSERT_UEQ(store_applied_index(f.s), 0);
    i = info(&f, "nothing");
    ASSERT_EQ(i.held, 0);
    ASSERT_EQ(i.total_waiters, 0);
    ASSERT(i.waiters == NULL);
    ASSERT_EQ(store_session_exists(f.s, 1), 0);
    teardown(&f);
}

TEST(open_session_ids_and_reads)
{
    struct fixture f;
    uint64_t a, b;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    ASSERT_UEQ(a, 1);
    ASSERT_UEQ(b, 2);
    ASSERT_EQ(store_session_exists(f.s, a), 1);
    ASSERT_EQ(store_session_exists(f.s, 3), 0);
    ASSERT_EQ(count_in(&f, DB_DEDUP), 0); /* OPEN_SESSION is not deduplicated */
    teardown(&f);
}

static int count_sessions(void *data, uint64_t session, uint32_t ttl_ms, const char *owner,
                          size_t owner_len)
{
    uint64_t *sum = data;
    (void)owner;
    *sum += session * 1000000 + ttl_ms + owner_len * 100000000;
    return 0;
}

static int stop_at_first(void *data, uint64_t session, uint32_t ttl_ms, const char *owner,
                         size_t owner_len)
{
    (void)data;
    (void)session;
    (void)ttl_ms;
    (void)owner;
    (void)owner_len;
    return 42;
}

TEST(foreach_session)
{
    struct fixture f;
    uint64_t sum = 0;

    setup(&f);
    ASSERT_UEQ(run(&f, c_open(5000, "a")).value, 1);
    ASSERT_UEQ(run(&f, c_open(7000, "b")).value, 2);
    ASSERT_UEQ(run(&f, c_open_by(9000, "c", "carol")).value, 3);
    ASSERT_EQ(store_foreach_session(f.s, count_sessions, &sum), 0);
    ASSERT_UEQ(sum, 1 * 1000000 + 5000 + 2 * 1000000 + 7000 + 3 * 1000000 + 9000 + 5 * 100000000);
    ASSERT_EQ(store_foreach_session(f.s, stop_at_first, NULL), 42);
    teardown(&f);
}

/* What store_list_sessions reported, one line per session. */
struct sess_list {
    char text[512];
    size_t len;
    int stop_after;     /* return 42 after this many calls; 0: never */
    int calls;
};

static int collect_session(void *data, uint64_t session, uint32_t ttl_ms, uint64_t created,
                           const char *name, size_t name_len, const char *owner,
                           size_t owner_len, uint32_t holds, uint32_t waits)
{
    struct sess_list *l = data;

    /* The owner only when there is one, so that the lines of anonymous
     * sessions read as they always did. */
    l->len += (size_t)snprintf(l->text + l->len, sizeof l->text - l->len,
                               "%llu:%u:%llu:%.*s:%u:%u%s%.*s;", (unsigned long long)session,
                               ttl_ms, (unsigned long long)created, (int)name_len, name, holds,
                               waits, owner_len ? "@" : "", (int)owner_len, owner);
    l->calls++;
    return l->stop_after && l->calls == l->stop_after ? 42 : 0;
}

TEST(list_sessions_counts_holds_and_waits)
{
    struct fixture f;
    struct sess_list l;
    uint64_t a, b, c;
    int more;

    setup(&f);
    a = run(&f, c_open(5000, "alpha")).value;  /* index 1 */
    b = run(&f, c_open(7000, "")).value;       /* index 2 */
    c = run(&f, c_open_by(9000, "gamma", "carol")).value; /* index 3 */
    grant(&f, a, 1, "x");
    grant(&f, a, 2, "y");
    queue(&f, b, 1, "x", 1);
    grant(&f, b, 2, "z");
    queue(&f, c, 1, "x", 2);

    memset(&l, 0, sizeof l);
    ASSERT_EQ(store_list_sessions(f.s, 0, 10, collect_session, &l, &more), 0);
    ASSERT_STREQ(l.text, "1:5000:1:alpha:2:0;2:7000:2::1:1;3:9000:3:gamma:0:1@carol;");
    ASSERT_EQ(more, 0);

    /* Paging: a limit sets `more`, and `after` starts past an id. */
    memset(&l, 0, sizeof l);
    ASSERT_EQ(store_list_sessions(f.s, 0, 2, collect_session, &l, &more), 0);
    ASSERT_STREQ(l.text, "1:5000:1:alpha:2:0;2:7000:2::1:1;");
    ASSERT_EQ(more, 1);
    memset(&l, 0, sizeof l);
    ASSERT_EQ(store_list_sessions(f.s, b, 2, collect_session, &l, &more), 0);
    ASSERT_STREQ(l.text, "3:9000:3:gamma:0:1@carol;");
    ASSERT_EQ(more, 0);
    memset(&l, 0, sizeof l);
    ASSERT_EQ(store_list_sessions(f.s, c, 2, collect_session, &l, &more), 0);
    ASSERT_EQ(l.calls, 0);
    ASSERT_EQ(store_list_sessions(f.s, UINT64_MAX, 2, collect_session, &l, &more), 0);
    ASSERT_EQ(l.calls, 0);
    ASSERT_EQ(store_list_sessions(f.s, 0, 0, collect_session, &l, &more), 0);
    ASSERT_EQ(l.calls, 0);
    ASSERT_EQ(more, 1);

    /* The callback's code stops the walk and is returned. */
    memset(&l, 0, sizeof l);
    l.stop_after = 1;
    ASSERT_EQ(store_list_sessions(f.s, 0, 10, collect_session, &l, &more), 42);
    ASSERT_EQ(l.calls, 1);

    /* An expired session is gone from the list, and its hold moved on. */
    ASSERT_EQ(run(&f, cmd_of(CMD_EXPIRE_SESSION, a, 0, NULL)).status, 0);
    memset(&l, 0, sizeof l);
    ASSERT_EQ(store_list_sessions(f.s, 0, 10, collect_session, &l, &more), 0);
    ASSERT_STREQ(l.text, "2:7000:2::2:0;3:9000:3:gamma:0:1@carol;");
    teardown(&f);
}

TEST(session_summaries_by_id)
{
    struct fixture f;
    struct sess_list l;
    uint64_t a, b, c, ids[4];
    size_t done;

    setup(&f);
    a = run(&f, c_open(5000, "alpha")).value;
    b = run(&f, c_open(7000, "")).value;
    c = run(&f, c_open_by(9000, "gamma", "carol")).value;
    grant(&f, a, 1, "x");
    queue(&f, c, 1, "x", 1);
    /* In the order asked, an id that is no session skipped. */
    ids[0] = c;
    ids[1] = 99;
    ids[2] = a;
    ids[3] = b;
    memset(&l, 0, sizeof l);
    ASSERT_EQ(store_session_summaries(f.s, ids, 3, collect_session, &l, &done), 0);
    ASSERT_STREQ(l.text, "3:9000:3:gamma:0:1@carol;1:5000:1:alpha:1:0;");
    ASSERT_UEQ(done, 3);
    memset(&l, 0, sizeof l);
    ASSERT_EQ(store_session_summaries(f.s, ids, 0, collect_session, &l, &done), 0);
    ASSERT_EQ(l.calls, 0);
    ASSERT_UEQ(done, 0);
    /* The callback's code stops it and is returned. */
    memset(&l, 0, sizeof l);
    l.stop_after = 1;
    ASSERT_EQ(store_session_summaries(f.s, ids, 4, collect_session, &l, &done), 42);
    ASSERT_EQ(l.calls, 1);
    teardown(&f);
}

static int count_listed(void *data, uint64_t session, uint32_t ttl_ms, uint64_t created,
                        const char *name, size_t name_len, const char *owner, size_t owner_len,
                        uint32_t holds, uint32_t waits)
{
    uint64_t *last = data;

    (void)ttl_ms, (void)created, (void)name, (void)name_len, (void)owner, (void)owner_len;
    (void)holds, (void)waits;
    last[0]++;
    last[1] = session;
    return 0;
}

/* A page ends once it has walked STORE_LIST_WALK_MAX records: eight
 * sessions of 10,000 holds each are not counted in one call. */
TEST(list_sessions_walk_is_bounded)
{
    enum { SESSIONS = 8, HOLDS = STORE_MAX_OWNED_PER_SESSION };
    static char names[SESSIONS][HOLDS][24];
    static struct cmd cmds[CMD_MAX_BATCH];
    struct fixture f;
    uint64_t sess[SESSIONS], got[2] = {0, 0};
    size_t done;
    int more;

    /* the last session is past the bound however the others fall */
    ASSERT_GE(SESSIONS * (HOLDS + 1), STORE_LIST_WALK_MAX + HOLDS + 1);
    setup(&f);
    for (int s = 0; s < SESSIONS; s++) {
        int k = 0;

        sess[s] = open_session(&f);
        while (k < HOLDS) {
            size_t n = 0;
            for (; n < CMD_MAX_BATCH && k < HOLDS; k++) {
                snprintf(names[s][k], sizeof names[s][k], "%d/%05d", s, k);
                cmds[n] = c_acq(sess[s], (uint64_t)k + 1, BATON_WAIT_TRY, names[s][k]);
                cmds[n++].ack_below = (uint64_t)k + 1; /* within the cached-results bound */
            }
            apply_n(&f, cmds, n);
        }
    }
    ASSERT_EQ(store_list_sessions(f.s, 0, 1000, count_listed, got, &more), 0);
    ASSERT_LT(got[0], SESSIONS);
    ASSERT_GE(got[0], 1);
    ASSERT_EQ(more, 1);
    /* The next page goes on from the last one listed, to the end. */
    ASSERT_EQ(store_list_sessions(f.s, got[1], 1000, count_listed, got, &more), 0);
    ASSERT_UEQ(got[0], SESSIONS);
    ASSERT_UEQ(got[1], sess[SESSIONS - 1]);
    ASSERT_EQ(more, 0);
    /* By id, the same bound: *done says where to go on. */
    got[0] = 0;
    ASSERT_EQ(store_session_summaries(f.s, sess, SESSIONS, count_listed, got, &done), 0);
    ASSERT_LT(done, SESSIONS);
    ASSERT_UEQ(got[0], done);
    teardown(&f);
}

/* ---- sessions ----------------------------------------------------------- */

TEST(close_session_releases_and_drops_waits)
{
    struct fixture f;
    struct cmd_result r;
    uint64_t a, b, c, d;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    d = open_session(&f);
    grant(&f, a, 1, "L1");
    grant(&f, a, 2, "L2");
    grant(&f, d, 1, "L3");
    queue(&f, a, 3, "L3", 1);  /* a waits for L3 */
    queue(&f, b, 1, "L1", 1);
    queue(&f, c, 1, "L2", 1);
    queue(&f, b, 2, "L3", 2);

    r = run(&f, c_close(a, 5));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_OK);
    /* L1 goes to b, L2 to c, then the goodbye. */
    ASSERT_EQ(f.fx.n_fx, 3);
    assert_fx(&f.fx.fx[0], FX_GRANT, 0, b, 1, "L1");
    assert_fx(&f.fx.fx[1], FX_GRANT, 0, c, 1, "L2");
    assert_fx(&f.fx.fx[2], FX_SESSION_GONE, 0, a, 0, NULL);
    assert_holder(&f, "L1", b, f.fx.fx[0].fence, 0);
    assert_holder(&f, "L2", c, f.fx.fx[1].fence, 0);
    assert_holder(&f, "L3", d, 0, 1);
    struct msg_lock_info_r i = info(&f, "L3");
    ASSERT_UEQ(i.waiters[0].session, b);
    store_lock_info_free(&i);
    ASSERT_EQ(store_session_exists(f.s, a), 0);
    /* No trace of a: its owned and dedup entries are gone. */
    ASSERT_EQ(count_in(&f, DB_OWNED), 4); /* b: L1 and its L3 wait, c: L2, d: L3 */
    /* A retried CLOSE finds no session. */
    ASSERT_EQ(run(&f, c_close(a, 5)).status, BATON_ESESSION);
    ASSERT_EQ(run(&f, c_acq(a, 6, BATON_WAIT_TRY, "x")).status, BATON_ESESSION);
    teardown(&f);
}

TEST(close_deletes_dedup_entries)
{
    struct fixture f;
    uint64_t a, b;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    grant(&f, a, 1, "x");
    grant(&f, b, 1, "y");
    ASSERT_EQ(count_in(&f, DB_DEDUP), 2);
    run(&f, c_close(a, 2));
    ASSERT_EQ(count_in(&f, DB_DEDUP), 1);
    ASSERT_EQ(count_in(&f, DB_SESSIONS), 1);
    teardown(&f);
}

TEST(expire_session_loses_locks_and_grants_next)
{
    struct fixture f;
    struct cmd_result r;
    uint64_t a, b, fa;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    fa = grant(&f, a, 1, "L");
    queue(&f, b, 1, "L", 1);
    grant(&f, a, 2, "M");
    r = run(&f, c_expire(a));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(f.fx.n_fx, 4);
    assert_fx(&f.fx.fx[0], FX_LOST, BATON_ESESSION, a, 1, "L");
    ASSERT_UEQ(f.fx.fx[0].fence, fa);
    assert_fx(&f.fx.fx[1], FX_GRANT, 0, b, 1, "L");
    assert_fx(&f.fx.fx[2], FX_LOST, BATON_ESESSION, a, 2, "M");
    assert_fx(&f.fx.fx[3], FX_SESSION_GONE, BATON_ESESSION, a, 0, NULL);
    assert_holder(&f, "L", b, f.fx.fx[1].fence, 0);
    assert_holder(&f, "M", 0, 0, 0);
    ASSERT_EQ(store_session_exists(f.s, a), 0);
    /* Expiring it again (or any unknown session) is refused. */
    ASSERT_EQ(run(&f, c_expire(a)).status, BATON_ESESSION);
    ASSERT_EQ(f.fx.n_fx, 0);
    ASSERT_EQ(run(&f, c_expire(999)).status, BATON_ESESSION);
    teardown(&f);
}

TEST(unknown_session_is_esession_and_cached_nowhere)
{
    struct fixture f;
    struct buf before = {0}, after = {0};

    setup(&f);
    open_session(&f);
    snap(&f, &before);
    ASSERT_EQ(run(&f, c_acq(77, 1, BATON_WAIT_FOREVER, "L")).status, BATON_ESESSION);
    ASSERT_EQ(run(&f, c_rel(77, 2, 1, "L")).status, BATON_ESESSION);
    ASSERT_EQ(run(&f, c_cancel(77, 3, 1, "L")).status, BATON_ESESSION);
    ASSERT_EQ(run(&f, c_close(77, 4)).status, BATON_ESESSION);
    snap(&f, &after);
    ASSERT(same_state(&before, &after));
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
}

TEST(limit_sessions)
{
    struct fixture f;
    static struct cmd cmds[CMD_MAX_BATCH];
    int opened = 0;

    setup(&f);
    while (opened < STORE_MAX_SESSIONS) {
        size_t n = 0;
        while (n < CMD_MAX_BATCH && opened < STORE_MAX_SESSIONS) {
            cmds[n++] = c_open(1000, "many");
            opened++;
        }
        apply_n(&f, cmds, n);
        ASSERT_EQ(f.fx.results[n - 1].status, 0);
    }
    ASSERT_UEQ(f.fx.results[f.fx.n_results - 1].value, STORE_MAX_SESSIONS);
    ASSERT_EQ(run(&f, c_open(1000, "late")).status, BATON_ELIMIT);
    ASSERT_EQ(run(&f, c_expire(5)).status, 0);
    ASSERT_UEQ(run(&f, c_open(1000, "late")).value, STORE_MAX_SESSIONS + 1);
    teardown(&f);
}

/* ---- lock-delay --------------------------------------------------------- */

/* Acquire with a lock-delay and expect a grant; returns the fence. */
static uint64_t grant_d(struct fixture *f, uint64_t s, uint64_t seq, const char *name,
                        int32_t delay_ms)
{
    struct cmd_result r = run(f, c_acq_d(s, seq, BATON_WAIT_FOREVER, name, delay_ms));

    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    return r.value;
}

/* Acquire with a lock-delay and expect to be queued at `pos`. */
static void queue_d(struct fixture *f, uint64_t s, uint64_t seq, const char *name, uint64_t pos,
                    int32_t delay_ms)
{
    struct cmd_result r = run(f, c_acq_d(s, seq, BATON_WAIT_FOREVER, name, delay_ms));

    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_QUEUED);
    ASSERT_UEQ(r.value, pos);
}

/* The lock is free, delayed, and has `waiters` waiters. */
static void assert_delayed(struct fixture *f, const char *name, uint32_t waiters)
{
    struct msg_lock_info_r i = info(f, name);

    ASSERT_EQ(i.held, 0);
    ASSERT_EQ(i.delayed, 1);
    ASSERT_UEQ(i.holder_session, 0);
    ASSERT_UEQ(i.holder_waiter, 0);
    ASSERT_UEQ(i.fence, 0);
    ASSERT_EQ(i.total_waiters, waiters);
    ASSERT_EQ(i.n_waiters, waiters);
    store_lock_info_free(&i);
}

/* store_lock_info's delayed flag for name. */
static int is_delayed(struct fixture *f, const char *name)
{
    struct msg_lock_info_r i = info(f, name);

    store_lock_info_free(&i);
    return i.delayed;
}

static int stop_delayed(void *data, const char *name, size_t name_len, int32_t delay_ms)
{
    (void)data;
    (void)name;
    (void)name_len;
    (void)delay_ms;
    return 7;
}

/*
 * The whole life of a delay: an expired hold with a delay leaves its lock
 * ungranted (FX_LOST, FX_LOCK_DELAY, no FX_GRANT), newcomers queue behind
 * the delay, DELAY_END grants the head with a higher fence, and each grant
 * carries the delay of the ACQUIRE that won it.
 */
TEST(expire_with_lock_delay_keeps_lock_ungranted)
{
    struct fixture f;
    struct cmd_result r;
    uint64_t a, b, c, fa, fb;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    fa = grant_d(&f, a, 1, "L", 5000);
    queue_d(&f, b, 1, "L", 1, 0);   /* b's hold will have no delay */
    r = run(&f, c_expire(a));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(f.fx.n_fx, 3);
    assert_fx(&f.fx.fx[0], FX_LOST, BATON_ESESSION, a, 1, "L");
    ASSERT_UEQ(f.fx.fx[0].fence, fa);
    assert_fx(&f.fx.fx[1], FX_LOCK_DELAY, 0, a, 1, "L");
    ASSERT_UEQ(f.fx.fx[1].fence, fa);
    ASSERT_EQ(f.fx.fx[1].lock_delay_ms, 5000);
    assert_fx(&f.fx.fx[2], FX_SESSION_GONE, BATON_ESESSION, a, 0, NULL);
    ASSERT_EQ(f.fx.fx[0].lock_delay_ms, 0); /* only FX_LOCK_DELAY carries it */
    assert_delayed(&f, "L", 1);
    /* b's ACQUIRE, retried, still waits. */
    r = run(&f, c_acq(b, 1, BATON_WAIT_FOREVER, "L"));
    ASSERT_EQ(r.kind, RESULT_QUEUED);

    /* While delayed: a try fails, a wait queues behind b. */
    r = run(&f, c_acq(c, 1, BATON_WAIT_TRY, "L"));
    ASSERT_EQ(r.status, BATON_EWOULDBLOCK);
    ASSERT_EQ(f.fx.n_fx, 0);
    queue_d(&f, c, 2, "L", 2, 700); /* c's hold will have a 700 ms delay */
    assert_delayed(&f, "L", 2);
    /* Nobody holds it: a release and a forced release find no holder. */
    ASSERT_EQ(run(&f, c_rel(a, 9, fa, "L")).status, BATON_ESESSION);
    ASSERT_EQ(run(&f, c_rel(b, 2, 0, "L")).status, BATON_ENOTHELD);
    ASSERT_EQ(run(&f, c_force("L")).status, BATON_ENOTHELD);
    assert_delayed(&f, "L", 2);

    /* The delay ends: the head gets it with a fence above the lost one. */
    r = run(&f, c_delay_end("L"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_OK);
    ASSERT_EQ(f.fx.n_fx, 1);
    assert_fx(&f.fx.fx[0], FX_GRANT, 0, b, 1, "L");
    fb = f.fx.fx[0].fence;
    ASSERT_ULT(fa, fb);
    assert_holder(&f, "L", b, fb, 1);
    ASSERT_EQ(is_delayed(&f, "L"), 0);
    r = run(&f, c_acq(b, 1, BATON_WAIT_FOREVER, "L"));
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    ASSERT_UEQ(r.value, fb);
    /* A second DELAY_END (late timer, new leader) changes nothing. */
    {
        struct buf before = {0}, after = {0};
        snap(&f, &before);
        r = run(&f, c_delay_end("L"));
        ASSERT_EQ(r.status, 0);
        ASSERT_EQ(f.fx.n_fx, 0);
        snap(&f, &after);
        ASSERT(same_state(&before, &after));
        buf_free(&before);
        buf_free(&after);
    }

    /* b's hold has no delay: its expiry hands the lock on at once... */
    r = run(&f, c_expire(b));
    ASSERT_EQ(f.fx.n_fx, 3);
    assert_fx(&f.fx.fx[0], FX_LOST, BATON_ESESSION, b, 1, "L");
    assert_fx(&f.fx.fx[1], FX_GRANT, 0, c, 2, "L");
    assert_fx(&f.fx.fx[2], FX_SESSION_GONE, BATON_ESESSION, b, 0, NULL);
    assert_holder(&f, "L", c, f.fx.fx[1].fence, 0);
    /* ...and c's hold carries the 700 ms it asked for while queued. */
    r = run(&f, c_expire(c));
    ASSERT_EQ(f.fx.n_fx, 3);
    assert_fx(&f.fx.fx[1], FX_LOCK_DELAY, 0, c, 2, "L");
    ASSERT_EQ(f.fx.fx[1].lock_delay_ms, 700);
    assert_delayed(&f, "L", 0);
    teardown(&f);
}

/* A delay of 0 means none: expiry grants at once, as before lock-delay. */
TEST(expire_without_delay_grants_at_once)
{
    struct fixture f;
    uint64_t a, b;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    grant_d(&f, a, 1, "L", 0);
    queue_d(&f, b, 1, "L", 1, 300);
    run(&f, c_expire(a));
    ASSERT_EQ(count_fx(&f.fx, FX_LOCK_DELAY), 0);
    ASSERT_EQ(count_fx(&f.fx, FX_GRANT), 1);
    assert_holder(&f, "L", b, 0, 0);
    ASSERT_EQ(is_delayed(&f, "L"), 0);
    teardown(&f);
}

/* CLOSE_SESSION, RELEASE and FORCE_RELEASE never delay, whatever the hold's
 * lock-delay: the lock goes to the next waiter in the same apply. */
TEST(close_release_and_force_never_delay)
{
    struct fixture f;
    struct cmd_result r;
    uint64_t a, b, c, fa;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    grant_d(&f, a, 1, "L", 5000);
    queue_d(&f, b, 1, "L", 1, 5000);
    queue_d(&f, c, 1, "L", 2, 5000);
    grant_d(&f, a, 2, "M", 5000);

    r = run(&f, c_close(a, 3));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(count_fx(&f.fx, FX_LOCK_DELAY), 0);
    ASSERT_EQ(count_fx(&f.fx, FX_LOST), 0);
    ASSERT_EQ(f.fx.n_fx, 2);
    assert_fx(&f.fx.fx[0], FX_GRANT, 0, b, 1, "L");
    assert_fx(&f.fx.fx[1], FX_SESSION_GONE, 0, a, 0, NULL);
    ASSERT_EQ(count_in(&f, DB_LOCKS), 1); /* M was deleted, not delayed */

    r = run(&f, c_force("L"));
    ASSERT_EQ(f.fx.n_fx, 2);
    assert_fx(&f.fx.fx[0], FX_LOST, BATON_ELOST, b, 1, "L");
    assert_fx(&f.fx.fx[1], FX_GRANT, 0, c, 1, "L");
    fa = f.fx.fx[1].fence;

    r = run(&f, c_rel(c, 2, fa, "L"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(f.fx.n_fx, 0);
    ASSERT_EQ(count_in(&f, DB_LOCKS), 0);
    teardown(&f);
}

/* A delayed lock nobody waits for keeps its record until DELAY_END, which
 * then deletes it. DELAY_END on anything but a delayed lock is a no-op. */
TEST(delayed_lock_with_empty_queue)
{
    struct fixture f;
    struct buf before = {0}, after = {0};
    struct cmd_result r;
    uint64_t a, b;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    grant_d(&f, a, 1, "L", 250);
    grant_d(&f, b, 1, "held", 250);

    snap(&f, &before);
    ASSERT_EQ(run(&f, c_delay_end("L")).status, 0);       /* held: no-op */
    ASSERT_EQ(run(&f, c_delay_end("nothing")).status, 0); /* no such lock */
    ASSERT_EQ(run(&f, c_delay_end("")).status, 0);        /* not a lock name */
    ASSERT_EQ(f.fx.n_fx, 0);
    snap(&f, &after);
    ASSERT(same_state(&before, &after));

    run(&f, c_expire(a));
    ASSERT_EQ(count_fx(&f.fx, FX_LOCK_DELAY), 1);
    ASSERT_EQ(count_fx(&f.fx, FX_GRANT), 0);
    assert_delayed(&f, "L", 0);
    ASSERT_EQ(count_in(&f, DB_LOCKS), 2);
    ASSERT_EQ(count_in(&f, DB_OWNED), 1); /* b's hold only */

    r = run(&f, c_delay_end("L"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_OK);
    ASSERT_EQ(f.fx.n_fx, 0);
    ASSERT_EQ(count_in(&f, DB_LOCKS), 1);
    assert_holder(&f, "L", 0, 0, 0);
    ASSERT_EQ(is_delayed(&f, "L"), 0);
    /* Free again: the next ACQUIRE is granted at once. */
    grant(&f, b, 2, "L");
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
}

/* The waiters of a delayed lock can be cancelled, time out, or vanish with
 * their session; the lock stays delayed until DELAY_END even once its
 * queue is empty. */
TEST(waiters_of_delayed_lock_leave_as_usual)
{
    struct fixture f;
    struct timed t = {0};
    struct cmd_result r;
    uint64_t a, b, c, d;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    d = open_session(&f);
    grant_d(&f, a, 1, "L", 1000);
    queue_d(&f, b, 1, "L", 1, 0);
    run(&f, c_expire(a));
    assert_delayed(&f, "L", 1);
    ASSERT_EQ(run(&f, c_acq(c, 1, 400, "L")).kind, RESULT_QUEUED);
    queue_d(&f, d, 1, "L", 3, 0);
    /* The timed waiter is still found for its deadline. */
    ASSERT_EQ(store_foreach_timed_waiter(f.s, collect_timed, &t), 0);
    ASSERT_EQ(t.n, 1);
    ASSERT_UEQ(t.session, c);

    r = run(&f, c_cancel(b, 2, 1, "L"));
    ASSERT_EQ(r.kind, RESULT_CANCELLED);
    assert_fx(&f.fx.fx[0], FX_WAIT_FAILED, BATON_ECANCELED, b, 1, "L");
    assert_delayed(&f, "L", 2);
    r = run(&f, c_timeout(c, 1, "L"));
    ASSERT_EQ(r.status, 0);
    assert_fx(&f.fx.fx[0], FX_WAIT_FAILED, BATON_ETIMEDOUT, c, 1, "L");
    assert_delayed(&f, "L", 1);
    run(&f, c_expire(d));
    ASSERT_EQ(f.fx.n_fx, 1); /* only FX_SESSION_GONE */
    assert_delayed(&f, "L", 0);
    ASSERT_EQ(count_in(&f, DB_WAITERS), 0);
    ASSERT_EQ(count_in(&f, DB_OWNED), 0);
    ASSERT_EQ(count_in(&f, DB_LOCKS), 1);
    run(&f, c_delay_end("L"));
    ASSERT_EQ(f.fx.n_fx, 0);
    ASSERT_EQ(count_in(&f, DB_LOCKS), 0);
    teardown(&f);
}

/* A session that holds a delayed lock and also waits for it (another
 * thread), plus a second delayed lock: its own wait leaves first, both
 * locks become delayed, and the undelayed one goes to the next waiter. */
TEST(expire_with_several_delayed_holds)
{
    struct fixture f;
    struct delayed_seen d = {0};
    uint64_t a, b;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    grant_d(&f, a, 1, "x", 100);
    grant_d(&f, a, 3, "y", 200);
    grant_d(&f, a, 4, "z", 0);
    queue_d(&f, b, 1, "z", 1, 0);
    queue_d(&f, b, 2, "y", 1, 0);
    run(&f, c_expire(a));
    ASSERT_EQ(count_fx(&f.fx, FX_LOST), 3);
    ASSERT_EQ(count_fx(&f.fx, FX_LOCK_DELAY), 2);
    ASSERT_EQ(count_fx(&f.fx, FX_GRANT), 1);
    ASSERT_EQ(count_fx(&f.fx, FX_SESSION_GONE), 1);
    /* Each FX_LOCK_DELAY follows its FX_LOST. */
    for (size_t i = 0; i < f.fx.n_fx; i++) {
        if (f.fx.fx[i].type != FX_LOCK_DELAY) continue;
        ASSERT_GT(i, 0);
        ASSERT_EQ(f.fx.fx[i - 1].type, FX_LOST);
        ASSERT_UEQ(f.fx.fx[i - 1].fence, f.fx.fx[i].fence);
    }
    assert_delayed(&f, "x", 0);
    assert_delayed(&f, "y", 1);
    assert_holder(&f, "z", b, 0, 0);
    ASSERT_EQ(store_foreach_delayed_lock(f.s, collect_delayed, &d), 0);
    ASSERT_EQ(d.n, 2);
    ASSERT_STREQ(d.names[0], "x");
    ASSERT_EQ(d.delay[0], 100);
    ASSERT_STREQ(d.names[1], "y");
    ASSERT_EQ(d.delay[1], 200);
    teardown(&f);
}

/* store_foreach_delayed_lock reports every delayed lock with its full
 * delay, skips held and queued ones, and stops at a callback's non-zero
 * return. */
TEST(foreach_delayed_lock)
{
    struct fixture f;
    struct delayed_seen d = {0};
    uint64_t a, b, c;

    setup(&f);
    ASSERT_EQ(store_foreach_delayed_lock(f.s, collect_delayed, &d), 0);
    ASSERT_EQ(d.n, 0);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    grant_d(&f, a, 1, "d1", 1500);
    grant_d(&f, b, 1, "d2", 30000);
    queue_d(&f, c, 1, "d2", 1, 0);
    grant_d(&f, c, 2, "held", 999);
    queue_d(&f, a, 2, "held", 1, 0);
    run(&f, c_expire(a));
    run(&f, c_expire(b));
    ASSERT_EQ(store_foreach_delayed_lock(f.s, collect_delayed, &d), 0);
    ASSERT_EQ(d.n, 2);
    ASSERT_STREQ(d.names[0], "d1");
    ASSERT_EQ(d.delay[0], 1500);
    ASSERT_STREQ(d.names[1], "d2");
    ASSERT_EQ(d.delay[1], 30000);
    ASSERT_EQ(store_foreach_delayed_lock(f.s, stop_delayed, NULL), 7);
    /* Listing shows them free, with their queues. */
    {
        struct listed l;
        int more;
        memset(&l, 0, sizeof l);
        ASSERT_EQ(store_list_locks(f.s, "d", 1, 10, collect_lock, &l, &more), 0);
        ASSERT_EQ(l.n, 2);
        ASSERT_UEQ(l.holder[0], 0);
        ASSERT_UEQ(l.holder[1], 0);
        ASSERT_EQ(l.waiters[1], 1);
    }
    run(&f, c_delay_end("d2"));
    ASSERT_EQ(count_fx(&f.fx, FX_GRANT), 1);
    memset(&d, 0, sizeof d);
    ASSERT_EQ(store_foreach_delayed_lock(f.s, collect_delayed, &d), 0);
    ASSERT_EQ(d.n, 1);
    ASSERT_STREQ(d.names[0], "d1");
    teardown(&f);
}

/* A negative lock-delay in the command is the leader's bug: refused. */
TEST(negative_lock_delay_is_einval)
{
    struct fixture f;
    uint64_t a;

    setup(&f);
    a = open_session(&f);
    ASSERT_EQ(run(&f, c_acq_d(a, 1, BATON_WAIT_FOREVER, "L", -1)).status, BATON_EINVAL);
    ASSERT_EQ(run(&f, c_acq_d(a, 2, BATON_WAIT_TRY, "L", INT32_MIN)).status, BATON_EINVAL);
    ASSERT_EQ(count_in(&f, DB_LOCKS), 0);
    ASSERT_EQ(count_in(&f, DB_OWNED), 0);
    teardown(&f);
}

/* A snapshot carries the delayed flag, the running delay and the waiters'
 * delays: the restored store reports the same, and both go on identically
 * through DELAY_END and the next expiry. */
TEST(snapshot_restore_keeps_delay)
{
    struct fixture f, g;
    struct buf s1 = {0}, s2 = {0};
    struct delayed_seen d = {0};
    uint64_t a, b;

    setup(&f);
    setup(&g);
    a = open_session(&f);
    b = open_session(&f);
    grant_d(&f, a, 1, "L", 4000);
    queue_d(&f, b, 1, "L", 1, 600);
    grant_d(&f, a, 2, "E", 50);
    run(&f, c_expire(a));
    snap(&f, &s1);
    ASSERT_EQ(store_restore(g.s, s1.data, s1.len), 0);
    g.index = f.index;
    snap(&g, &s2);
    ASSERT(s1.len == s2.len && memcmp(s1.data, s2.data, s1.len) == 0);
    assert_delayed(&g, "L", 1);
    assert_delayed(&g, "E", 0);
    ASSERT_EQ(store_foreach_delayed_lock(g.s, collect_delayed, &d), 0);
    ASSERT_EQ(d.n, 2);
    ASSERT_STREQ(d.names[0], "E");
    ASSERT_EQ(d.delay[0], 50);
    ASSERT_EQ(d.delay[1], 4000);

    /* Reopening keeps it too. */
    {
        char err[256];
        store_close(g.s);
        ASSERT_EQ(store_open(g.dir, &g.s, err), 0);
        assert_delayed(&g, "L", 1);
    }

    run(&f, c_delay_end("L"));
    run(&g, c_delay_end("L"));
    assert_same_effects(&f.fx, &g.fx);
    ASSERT_EQ(count_fx(&g.fx, FX_GRANT), 1);
    run(&f, c_expire(b));
    run(&g, c_expire(b));
    assert_same_effects(&f.fx, &g.fx);
    ASSERT_EQ(count_fx(&g.fx, FX_LOCK_DELAY), 1); /* b's 600 ms came along */
    ASSERT_EQ(f.fx.fx[1].lock_delay_ms, 600);
    snap(&f, &s1);
    snap(&g, &s2);
    ASSERT(s1.len == s2.len && memcmp(s1.data, s2.data, s1.len) == 0);
    buf_free(&s1);
    buf_free(&s2);
    teardown(&f);
    teardown(&g);
}

/* A snapshot whose lock record claims a delayed lock with a holder, or a
 * delayed flag other than 0 or 1, is refused without change. */
TEST(restore_rejects_bad_delay_fields)
{
    struct fixture f, g;
    struct buf s = {0}, before = {0}, after = {0};
    uint64_t a;
    size_t off;
    uint8_t *rec;

    setup(&f);
    setup(&g);
    a = open_session(&f);
    grant_d(&f, a, 1, "Q", 10);
    snap(&f, &s);
    snap(&g, &before);
    /* The one lock record: key "Q", 18-byte value (format 7: n_holders,
     * mode, limit, n_waiters, the delay that runs, the delayed flag). */
    rec = memmem(s.data, s.len, "\x01\x00\x00\x00Q\x12\x00\x00\x00", 9);
    ASSERT(rec != NULL);
    off = (size_t)(rec - s.data) + 9;
    ASSERT_EQ(le_get_u32(s.data + off), 1);
    s.data[off + 17] = 2; /* a delayed flag other than 0 or 1 */
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    s.data[off + 17] = 0;
    le_put_u32(s.data + off + 13, (uint32_t)-5);
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    le_put_u32(s.data + off + 13, 0);
    s.data[off + 4] = 2; /* no such mode */
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    s.data[off + 4] = 0;
    le_put_u32(s.data + off + 5, 0); /* no limit */
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    snap(&g, &after);
    ASSERT(same_state(&before, &after));
    le_put_u32(s.data + off + 5, 1);
    ASSERT_EQ(store_restore(g.s, s.data, s.len), 0);
    buf_free(&s);
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
    teardown(&g);
}

int main(int argc, char **argv)
{
    fsm_main_begin(argc, argv);
    RUN(new_store_is_empty);
    RUN(open_session_ids_and_reads);
    RUN(foreach_session);
    RUN(list_sessions_counts_holds_and_waits);
    RUN(session_summaries_by_id);
    RUN(list_sessions_walk_is_bounded);
    RUN(close_session_releases_and_drops_waits);
    RUN(close_deletes_dedup_entries);
    RUN(expire_session_loses_locks_and_grants_next);
    RUN(unknown_session_is_esession_and_cached_nowhere);
    RUN(limit_sessions);
    RUN(expire_with_lock_delay_keeps_lock_ungranted);
    RUN(expire_without_delay_grants_at_once);
    RUN(close_release_and_force_never_delay);
    RUN(delayed_lock_with_empty_queue);
    RUN(waiters_of_delayed_lock_leave_as_usual);
    RUN(expire_with_several_delayed_holds);
    RUN(foreach_delayed_lock);
    RUN(negative_lock_delay_is_einval);
    RUN(snapshot_restore_keeps_delay);
    RUN(restore_rejects_bad_delay_fields);
    return fsm_main_end();
}
