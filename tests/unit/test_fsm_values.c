/*
 * test_fsm_values.c -- values of holds and waits (storage/values.c) and
 * the reader's lock state (storage/lockstate.c): a value travels with its
 * request from the queue to the hold, a holder replaces it (SET_VALUE),
 * and it goes whenever the hold or the wait ends; the lock state shows
 * client names and values and stays within its byte budget; snapshots
 * keep the format before values below the level of values.
 */
#include <string.h>

#include "storage/store_test.h"
#include "tests/unit/fsm_fixture.h"

/* The number of entries of DB_VALUES (format 9: the last database). */
#define DB_VALUES_ N_DB

static struct cmd with_value(struct cmd c, const char *v)
{
    c.value = (const uint8_t *)v;
    c.value_len = (uint16_t)strlen(v);
    return c;
}

static struct cmd c_set(uint64_t s, uint64_t seq, uint64_t fence, const char *name, const char *v)
{
    struct cmd c = cmd_of(CMD_SET_VALUE, s, seq, name);
    c.fence = fence;
    return with_value(c, v);
}

/* A store at the level of values, with two sessions named "a" and "b". */
static void setup_level3(struct fixture *f, uint64_t *a, uint64_t *b)
{
    struct cmd_result r;

    setup(f);
    ASSERT_EQ(run(f, cmd_of(CMD_SET_LEVEL, STORE_LEVEL_VALUES, 0, NULL)).status, 0);
    r = run(f, c_open(10000, "a"));
    ASSERT_EQ(r.status, 0);
    *a = r.value;
    r = run(f, c_open(10000, "b"));
    ASSERT_EQ(r.status, 0);
    *b = r.value;
}

/* The lock's state as a reader gets it (budget: everything fits). */
static void state_of(struct fixture *f, const char *name, struct msg_lock_state *st,
                     struct lock_state_mem *mem)
{
    ASSERT_EQ(store_lock_state(f->s, name, strlen(name), 1u << 20, st, mem), 0);
}

static void assert_bytes(struct pstr got, const char *want)
{
    ASSERT_UEQ(got.n, strlen(want));
    if (got.n) ASSERT(memcmp(got.p, want, got.n) == 0);
}

/* A value queued with its request becomes the hold's when granted; the
 * state lists holders then waiters with their client names and values. */
TEST(value_follows_the_request_from_queue_to_hold)
{
    struct fixture f;
    struct msg_lock_state st;
    struct lock_state_mem mem;
    struct cmd_result r;
    uint64_t a, b, fence;

    setup_level3(&f, &a, &b);
    r = run(&f, with_value(c_acq(a, 1, BATON_WAIT_FOREVER, "svc"), "10.0.0.1:80"));
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    fence = r.value;
    CHANGED(&f, "svc");
    r = run(&f, with_value(c_acq(b, 1, BATON_WAIT_FOREVER, "svc"), "10.0.0.2:80"));
    ASSERT_EQ(r.kind, RESULT_QUEUED);
    state_of(&f, "svc", &st, &mem);
    ASSERT_UEQ(st.revision, f.index);
    ASSERT_EQ(st.held, 1);
    ASSERT_UEQ(st.n_holders, 1);
    ASSERT_UEQ(st.holders[0].session, a);
    ASSERT_UEQ(st.holders[0].fence, fence);
    assert_bytes(st.holders[0].client_name, "a");
    assert_bytes(st.holders[0].value, "10.0.0.1:80");
    ASSERT_UEQ(st.n_waiters, 1);
    assert_bytes(st.waiters[0].client_name, "b");
    assert_bytes(st.waiters[0].value, "10.0.0.2:80");
    store_lock_state_free(&mem);
    ASSERT_EQ(count_in(&f, DB_VALUES_), 2);
    /* a releases: b holds, with the value it queued with; a's is gone */
    ASSERT_EQ(run(&f, c_rel(a, 2, fence, "svc")).status, 0);
    state_of(&f, "svc", &st, &mem);
    ASSERT_UEQ(st.holders[0].session, b);
    assert_bytes(st.holders[0].value, "10.0.0.2:80");
    ASSERT_UEQ(st.n_waiters, 0);
    store_lock_state_free(&mem);
    ASSERT_EQ(count_in(&f, DB_VALUES_), 1);
    teardown(&f);
}

/* SET_VALUE replaces the holder's value (and tells watchers), empty
 * removes it; it is refused for a hold that is not the session's. */
TEST(set_value_by_the_holder_only)
{
    struct fixture f;
    struct msg_lock_state st;
    struct lock_state_mem mem;
    uint64_t a, b, fence;

    setup_level3(&f, &a, &b);
    fence = run(&f, with_value(c_acq(a, 1, BATON_WAIT_FOREVER, "svc"), "one")).value;
    ASSERT_EQ(run(&f, c_set(a, 2, fence, "svc", "two")).status, 0);
    CHANGED(&f, "svc");
    state_of(&f, "svc", &st, &mem);
    assert_bytes(st.holders[0].value, "two");
    store_lock_state_free(&mem);
    ASSERT_EQ(run(&f, c_set(b, 1, fence, "svc", "mine")).status, BATON_ENOTHELD);
    UNCHANGED(&f);
    ASSERT_EQ(run(&f, c_set(a, 3, fence + 1, "svc", "x")).status, BATON_ENOTHELD);
    ASSERT_EQ(run(&f, c_set(a, 4, fence, "other", "x")).status, BATON_ENOTHELD);
    ASSERT_EQ(run(&f, c_set(a, 5, fence, "svc", "")).status, 0);
    ASSERT_EQ(count_in(&f, DB_VALUES_), 0);
    state_of(&f, "svc", &st, &mem);
    ASSERT_UEQ(st.holders[0].value.n, 0);
    store_lock_state_free(&mem);
    teardown(&f);
}

/* A forced-away hold answers ELOST to its proclaim, as to its release. */
TEST(set_value_of_a_lost_hold_is_elost)
{
    struct fixture f;
    uint64_t a, b, fence;

    setup_level3(&f, &a, &b);
    fence = run(&f, with_value(c_acq(a, 1, BATON_WAIT_FOREVER, "svc"), "one")).value;
    ASSERT_EQ(run(&f, c_force2("svc", fence, CMD_FORCE_NOW)).status, 0);
    ASSERT_EQ(count_in(&f, DB_VALUES_), 0);
    ASSERT_EQ(run(&f, c_set(a, 2, fence, "svc", "two")).status, BATON_ELOST);
    ASSERT_EQ(count_in(&f, DB_VALUES_), 0);
    teardown(&f);
}

/* Every way a hold or wait ends takes its value: cancel, timeout, expiry,
 * close. */
TEST(values_end_with_their_request)
{
    struct fixture f;
    uint64_t a, b;

    setup_level3(&f, &a, &b);
    run(&f, with_value(c_acq(a, 1, BATON_WAIT_FOREVER, "x"), "a1"));
    run(&f, with_value(c_acq(b, 1, BATON_WAIT_FOREVER, "x"), "b1"));
    run(&f, with_value(c_acq(b, 2, 5000, "y"), "b2"));
    run(&f, with_value(c_acq(a, 2, BATON_WAIT_FOREVER, "y"), "a2")); /* queued behind b */
    ASSERT_EQ(count_in(&f, DB_VALUES_), 4);
    ASSERT_EQ(run(&f, c_cancel(a, 3, 2, "y")).status, 0);
    ASSERT_EQ(count_in(&f, DB_VALUES_), 3);
    ASSERT_EQ(run(&f, c_expire(b)).status, 0); /* b's wait on x and hold of y */
    ASSERT_EQ(count_in(&f, DB_VALUES_), 1);
    ASSERT_EQ(run(&f, c_close(a, 4)).status, 0);
    ASSERT_EQ(count_in(&f, DB_VALUES_), 0);
    teardown(&f);
}

/* A try that fails stores nothing; a reentrant request keeps the hold's
 * value. */
TEST(refused_and_reentrant_requests_leave_the_value)
{
    struct fixture f;
    struct msg_lock_state st;
    struct lock_state_mem mem;
    struct cmd c;
    uint64_t a, b;

    setup_level3(&f, &a, &b);
    run(&f, with_value(c_acq(a, 1, BATON_WAIT_FOREVER, "x"), "first"));
    ASSERT_EQ(run(&f, with_value(c_acq(b, 1, BATON_WAIT_TRY, "x"), "try")).status,
              BATON_EWOULDBLOCK);
    c = with_value(c_acq(a, 2, BATON_WAIT_FOREVER, "x"), "second");
    c.reentrant = 1;
    ASSERT_EQ(run(&f, c).kind, RESULT_GRANTED);
    ASSERT_EQ(count_in(&f, DB_VALUES_), 1);
    state_of(&f, "x", &st, &mem);
    assert_bytes(st.holders[0].value, "first");
    ASSERT_UEQ(st.holders[0].count, 2);
    store_lock_state_free(&mem);
    teardown(&f);
}

/* The lists stop where the byte budget ends, and the totals still count
 * everything; a free lock reads as empty; a bad name is refused. */
TEST(lock_state_within_its_budget)
{
    struct fixture f;
    struct msg_lock_state st;
    struct lock_state_mem mem;
    char big[4001];
    uint64_t a, b;

    memset(big, 'v', sizeof big - 1);
    big[sizeof big - 1] = 0;
    setup_level3(&f, &a, &b);
    run(&f, with_value(c_acq(a, 1, BATON_WAIT_FOREVER, "x"), big));
    for (uint64_t i = 0; i < 5; i++) run(&f, with_value(c_acq(b, 1 + i, BATON_WAIT_FOREVER, "x"), big));
    /* b waits once for x: its four other requests are refused (BATON_EDEADLK) */
    ASSERT_EQ(store_lock_state(f.s, "x", 1, 10000, &st, &mem), 0);
    ASSERT_UEQ(st.total_holders, 1);
    ASSERT_UEQ(st.total_waiters, 1);
    ASSERT_UEQ(st.n_holders, 1);
    ASSERT_UEQ(st.n_waiters, 1);
    store_lock_state_free(&mem);
    ASSERT_EQ(store_lock_state(f.s, "x", 1, 6000, &st, &mem), 0);
    ASSERT_UEQ(st.n_holders, 1);
    ASSERT_UEQ(st.n_waiters, 0); /* the second 4000-byte value does not fit */
    ASSERT_UEQ(st.total_waiters, 1);
    store_lock_state_free(&mem);
    ASSERT_EQ(store_lock_state(f.s, "free", 4, 10000, &st, &mem), 0);
    ASSERT_EQ(st.held, 0);
    ASSERT_UEQ(st.limit, 0);
    ASSERT_UEQ(st.n_holders + st.n_waiters, 0);
    store_lock_state_free(&mem);
    ASSERT_EQ(store_lock_state(f.s, "", 0, 10000, &st, &mem), BATON_EINVAL);
    teardown(&f);
}

/* Below the level of values the snapshot keeps format 8 (no values
 * database): what a binary of level 2 reads. At level 3 it is format 9. */
TEST(snapshot_format_follows_the_level)
{
    struct fixture f;
    struct buf b = {0};

    setup(&f);
    snap(&f, &b);
    ASSERT_UEQ(le_get_u32(b.data + 4), 8);
    ASSERT_EQ(run(&f, cmd_of(CMD_SET_LEVEL, 2, 0, NULL)).status, 0);
    snap(&f, &b);
    ASSERT_UEQ(le_get_u32(b.data + 4), 8);
    ASSERT_EQ(run(&f, cmd_of(CMD_SET_LEVEL, STORE_LEVEL_VALUES, 0, NULL)).status, 0);
    snap(&f, &b);
    ASSERT_UEQ(le_get_u32(b.data + 4), 9);
    buf_free(&b);
    teardown(&f);
}

/* The store on disk keeps format 8 below the level of values, through
 * reopening, so that the release before it can still open it (a rolling
 * downgrade before the raise); the raise moves it to format 9. */
TEST(format_on_disk_follows_the_level)
{
    struct fixture f;
    char err[BATON_ERRMSG_SIZE];

    setup(&f);
    ASSERT_UEQ(store__format(f.s), 8);
    open_session(&f);
    store_close(f.s);
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    ASSERT_UEQ(store__format(f.s), 8);
    ASSERT_EQ(run(&f, cmd_of(CMD_SET_LEVEL, STORE_LEVEL_VALUES, 0, NULL)).status, 0);
    ASSERT_UEQ(store__format(f.s), 9);
    store_close(f.s);
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    ASSERT_UEQ(store__format(f.s), 9);
    teardown(&f);
}

/* A format 9 snapshot with values restores to the same bytes. */
TEST(snapshot_with_values_restores)
{
    struct fixture f, g;
    struct buf b = {0};
    uint64_t a, s2;

    setup_level3(&f, &a, &s2);
    run(&f, with_value(c_acq(a, 1, BATON_WAIT_FOREVER, "x"), "v1"));
    run(&f, with_value(c_acq(s2, 1, BATON_WAIT_FOREVER, "x"), "v2"));
    snap(&f, &b);
    setup(&g);
    ASSERT_EQ(store_restore(g.s, b.data, b.len), 0);
    assert_same_snapshots(&f, &g);
    ASSERT_EQ(count_in(&g, DB_VALUES_), 2);
    buf_free(&b);
    teardown(&f);
    teardown(&g);
}

int main(int argc, char **argv)
{
    fsm_main_begin(argc, argv);
    RUN(value_follows_the_request_from_queue_to_hold);
    RUN(set_value_by_the_holder_only);
    RUN(set_value_of_a_lost_hold_is_elost);
    RUN(values_end_with_their_request);
    RUN(refused_and_reentrant_requests_leave_the_value);
    RUN(lock_state_within_its_budget);
    RUN(snapshot_format_follows_the_level);
    RUN(snapshot_with_values_restores);
    RUN(format_on_disk_follows_the_level);
    return fsm_main_end();
}
