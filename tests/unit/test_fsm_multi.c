/*
 * test_fsm_multi.c -- atomic multi-locks in the state machine
 * (storage/multi.c, docs/design.md "Lock modes"): all names at once or
 * none, one fence, FIFO per name, two multi-locks that cross in opposite
 * orders, one RELEASE for all, cancel and timeout, expiry (with and
 * without a lock-delay), forced release of one name, refusals that change
 * nothing, snapshots. test_fsm_model.c checks the same rules against a
 * model under random operations.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/store_test.h"
#include "tests/lib/corrupt.h"
#include "tests/unit/fsm_fixture.h"

static uint8_t more[CMDS_MORE_MAX];

#define NAMES(...) ((const char *const[]){__VA_ARGS__}), \
                   (sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

static struct cmd_result many(struct fixture *f, uint64_t s, uint64_t seq, int64_t wait,
                              const char *const *names, size_t n)
{
    return run(f, c_many(s, seq, wait, names, n, more));
}

/* Who holds name: session (0: nobody) and fence (0: any); waiters. */
static void held_by(struct fixture *f, const char *name, uint64_t s, uint64_t fence,
                    uint32_t waiters)
{
    assert_holder(f, name, s, fence, waiters);
}

static uint64_t grant_fence(struct fixture *f, uint64_t session)
{
    for (size_t i = 0; i < f->fx.n_fx; i++)
        if (f->fx.fx[i].type == FX_GRANT && f->fx.fx[i].session == session)
            return f->fx.fx[i].fence;
    FAIL("no grant for session %llu", (unsigned long long)session);
    return 0;
}

TEST(granted_at_once_with_one_fence)
{
    struct fixture f;
    struct cmd_result r;
    uint64_t a, b, fa;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    fa = grant(&f, a, 1, "x");
    r = many(&f, b, 1, BATON_WAIT_FOREVER, NAMES("p", "q", "r"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    ASSERT_ULT(fa, r.value);
    held_by(&f, "p", b, r.value, 0);
    held_by(&f, "q", b, r.value, 0);
    held_by(&f, "r", b, r.value, 0);
    CHANGED(&f, "p", "q", "r");
    ASSERT_UEQ(count_in(&f, DB_MULTI), 1);
    ASSERT_UEQ(count_in(&f, DB_OWNED), 2); /* a's x, b's multi-lock */
    ASSERT_UEQ(count_in(&f, DB_SESSION_LOCKS), 4);
    /* One RELEASE, with the first name, frees them all in one entry. */
    ASSERT_EQ(run(&f, c_rel(b, 2, r.value, "p")).status, 0);
    CHANGED(&f, "p", "q", "r");
    ASSERT_UEQ(count_in(&f, DB_LOCKS), 1);
    ASSERT_UEQ(count_in(&f, DB_MULTI), 0);
    ASSERT_UEQ(count_in(&f, DB_HOLDERS), 1);
    ASSERT_UEQ(count_in(&f, DB_SESSION_LOCKS), 1);
    teardown(&f);
}

TEST(all_or_nothing_and_fifo_per_name)
{
    struct fixture f;
    struct cmd_result r;
    uint64_t a, b, c, fa, fb;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    fa = grant(&f, a, 1, "q");
    /* q is held: the multi-lock holds nothing and waits in both queues. */
    r = many(&f, b, 1, BATON_WAIT_FOREVER, NAMES("p", "q"));
    ASSERT_EQ(r.kind, RESULT_QUEUED);
    ASSERT_UEQ(r.value, 1);
    held_by(&f, "p", 0, 0, 1);
    held_by(&f, "q", a, fa, 1);
    /* p is free but the multi-lock waits first there: no barging. */
    queue(&f, c, 1, "p", 1 + 1);
    ASSERT_EQ(run(&f, c_acq(c, 2, BATON_WAIT_TRY, "p")).status, BATON_EDEADLK);
    /* a try of a multi-lock that cannot have everything now holds nothing. */
    ASSERT_EQ(many(&f, c, 3, BATON_WAIT_TRY, NAMES("z", "q")).status, BATON_EWOULDBLOCK);
    held_by(&f, "z", 0, 0, 0);
    /* q released: the multi-lock gets p and q together; c waits behind. */
    ASSERT_EQ(run(&f, c_rel(a, 2, fa, "q")).status, 0);
    assert_grants(&f, &b, 1);
    fb = grant_fence(&f, b);
    ASSERT_ULT(fa, fb);
    ASSERT_EQ(f.fx.fx[0].name_len, 1);
    ASSERT_EQ(f.fx.fx[0].name[0], 'p'); /* named by its first name */
    held_by(&f, "p", b, fb, 1);
    held_by(&f, "q", b, fb, 0);
    ASSERT_EQ(run(&f, c_rel(b, 2, fb, "q")).status, 0); /* any of its names */
    assert_grants(&f, &c, 1);
    held_by(&f, "q", 0, 0, 0);
    teardown(&f);
}

TEST(multi_locks_crossing_in_opposite_orders_do_not_deadlock)
{
    struct fixture f;
    uint64_t a, b, c, fa, f1, f2;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    fa = grant(&f, a, 1, "A");
    ASSERT_EQ(many(&f, b, 1, BATON_WAIT_FOREVER, NAMES("A", "B")).kind, RESULT_QUEUED);
    ASSERT_EQ(many(&f, c, 1, BATON_WAIT_FOREVER, NAMES("B", "A")).kind, RESULT_QUEUED);
    /* B is free, but b heads its queue and waits for A; c is behind b in
     * both queues (one commit order), so nobody holds B half-way. */
    held_by(&f, "B", 0, 0, 2);
    ASSERT_EQ(run(&f, c_rel(a, 2, fa, "A")).status, 0);
    assert_grants(&f, &b, 1);
    f1 = grant_fence(&f, b);
    held_by(&f, "A", b, f1, 1);
    held_by(&f, "B", b, f1, 1);
    ASSERT_EQ(run(&f, c_rel(b, 2, f1, "A")).status, 0);
    assert_grants(&f, &c, 1);
    f2 = grant_fence(&f, c);
    ASSERT_ULT(f1, f2);
    held_by(&f, "A", c, f2, 0);
    held_by(&f, "B", c, f2, 0);
    teardown(&f);
}

TEST(chain_of_multi_locks_granted_in_one_entry)
{
    struct fixture f;
    uint64_t s[5], fa;

    setup(&f);
    for (int i = 0; i < 5; i++) s[i] = open_session(&f);
    fa = grant(&f, s[0], 1, "k1");
    /* s1 waits for k1 (held); s2..s4 each want disjoint names except
     * where they chain: only s1 is blocked by a holder; the others wait
     * behind s1 in a chain through k2 and k3, but once s1 is done... */
    ASSERT_EQ(many(&f, s[1], 1, BATON_WAIT_FOREVER, NAMES("k1", "k2")).kind, RESULT_QUEUED);
    ASSERT_EQ(many(&f, s[2], 1, BATON_WAIT_FOREVER, NAMES("k2", "k3")).kind, RESULT_QUEUED);
    ASSERT_EQ(many(&f, s[3], 1, BATON_WAIT_FOREVER, NAMES("k3", "k4")).kind, RESULT_QUEUED);
    held_by(&f, "k3", 0, 0, 2);
    held_by(&f, "k4", 0, 0, 1);
    /* k1 released: s1 gets k1+k2; s3 still waits behind s2 on k3. */
    ASSERT_EQ(run(&f, c_rel(s[0], 2, fa, "k1")).status, 0);
    assert_grants(&f, &s[1], 1);
    held_by(&f, "k4", 0, 0, 1);
    /* s1 releases: s2 gets k2+k3 -- and s3 waits for k3 now. */
    ASSERT_EQ(run(&f, c_rel(s[1], 2, grant_fence(&f, s[1]), "k1")).status, 0);
    assert_grants(&f, &s[2], 1);
    /* s2 releases: s3 gets k3+k4 through the regrant of k3. */
    ASSERT_EQ(run(&f, c_rel(s[2], 2, grant_fence(&f, s[2]), "k2")).status, 0);
    assert_grants(&f, &s[3], 1);
    held_by(&f, "k4", s[3], 0, 0);
    teardown(&f);
}

TEST(shared_multi_lock_and_semaphores)
{
    struct fixture f;
    struct cmd c;
    struct cmd_result r;
    uint64_t a, b, w, x, fa, fb, fw;
    uint8_t more2[CMDS_MORE_MAX];

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    w = open_session(&f);
    x = open_session(&f);
    c = c_many(a, 1, BATON_WAIT_FOREVER, NAMES("r1", "r2"), more2);
    c.mode = BATON_MODE_SHARED;
    fa = run(&f, c).value;
    c.session = b;
    r = run(&f, c);
    ASSERT_EQ(r.kind, RESULT_GRANTED); /* shared beside shared */
    fb = r.value;
    /* An exclusive multi-lock waits; a shared one behind it waits too. */
    ASSERT_EQ(many(&f, w, 1, BATON_WAIT_FOREVER, NAMES("r2", "r1")).kind, RESULT_QUEUED);
    c.session = x;
    r = run(&f, c);
    ASSERT_EQ(r.kind, RESULT_QUEUED);
    ASSERT_UEQ(r.value, 2);
    ASSERT_EQ(run(&f, c_rel(a, 2, fa, "r1")).status, 0);
    assert_grants(&f, NULL, 0);
    ASSERT_EQ(run(&f, c_rel(b, 2, fb, "r2")).status, 0);
    assert_grants(&f, &w, 1);
    fw = grant_fence(&f, w);
    ASSERT_EQ(run(&f, c_rel(w, 2, fw, "r2")).status, 0);
    assert_grants(&f, &x, 1);
    teardown(&f);
    /* Semaphores: every name's limit must be the request's. */
    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    w = open_session(&f);
    c = c_many(a, 1, BATON_WAIT_FOREVER, NAMES("s1", "s2"), more2);
    c.limit = 2;
    ASSERT_EQ(run(&f, c).kind, RESULT_GRANTED);
    c.session = b;
    ASSERT_EQ(run(&f, c).kind, RESULT_GRANTED); /* two permits of each */
    c.session = w;
    ASSERT_EQ(run(&f, c).kind, RESULT_QUEUED);
    c.limit = 3;
    c.seq = 2;
    c.session = x = open_session(&f);
    r = run(&f, c);
    ASSERT_EQ(r.status, BATON_EINVAL);
    ASSERT_UEQ(r.value, 2);
    teardown(&f);
}

TEST(refusals_change_nothing)
{
    struct fixture f;
    struct cmd c;
    uint64_t a, b;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    grant(&f, a, 1, "held");
    queue(&f, b, 1, "held", 1);
    /* A repeated name, an empty one, reentrant, a shared semaphore. */
    ASSERT_EQ(many(&f, a, 2, BATON_WAIT_FOREVER, NAMES("x", "y", "x")).status, BATON_EINVAL);
    c = c_many(a, 3, BATON_WAIT_FOREVER, NAMES("x", "y"), more);
    c.reentrant = 1;
    ASSERT_EQ(run(&f, c).status, BATON_EINVAL);
    c.reentrant = 0;
    c.mode = BATON_MODE_SHARED;
    c.limit = 4;
    ASSERT_EQ(run(&f, c).status, BATON_EINVAL);
    /* A name the session holds (a), or waits for (b): EDEADLK, even
     * when it is not the first name. */
    ASSERT_EQ(many(&f, a, 4, BATON_WAIT_FOREVER, NAMES("x", "held")).status, BATON_EDEADLK);
    ASSERT_EQ(many(&f, b, 2, BATON_WAIT_FOREVER, NAMES("x", "y", "held")).status, BATON_EDEADLK);
    /* An empty first name (the decoder leaves it NULL; found by fuzz_cmd). */
    c = c_many(a, 6, BATON_WAIT_FOREVER, NAMES("x", "y"), more);
    c.name = NULL;
    c.name_len = 0;
    ASSERT_EQ(run(&f, c).status, BATON_EINVAL);
    /* An unknown session. */
    ASSERT_EQ(many(&f, 999, 1, BATON_WAIT_FOREVER, NAMES("x", "y")).status, BATON_ESESSION);
    /* Nothing but the cached results changed. */
    ASSERT_UEQ(count_in(&f, DB_LOCKS), 1);
    ASSERT_UEQ(count_in(&f, DB_WAITERS), 1);
    ASSERT_UEQ(count_in(&f, DB_HOLDERS), 1);
    ASSERT_UEQ(count_in(&f, DB_OWNED), 2);
    ASSERT_UEQ(count_in(&f, DB_MULTI), 0);
    ASSERT_UEQ(count_in(&f, DB_SESSION_LOCKS), 2);
    /* A single name is not a multi-lock (the client sends ACQUIRE). */
    c = c_many(a, 5, BATON_WAIT_FOREVER, NAMES("x", "y"), more);
    c.n_more = 0;
    c.more_len = 0;
    {
        struct buf bb = {0};
        size_t bad;
        ASSERT_NE(cmds_batch(&bb, &c, 1, &bad), 0);
        buf_free(&bb);
    }
    teardown(&f);
}

TEST(sixty_four_names_and_the_session_limit)
{
    struct fixture f;
    char names[BATON_MAX_MANY][16];
    const char *p[BATON_MAX_MANY];
    struct cmd_result r;
    uint64_t a;

    setup(&f);
    a = open_session(&f);
    for (int i = 0; i < BATON_MAX_MANY; i++) {
        snprintf(names[i], sizeof names[i], "n%02d", i);
        p[i] = names[i];
    }
    r = many(&f, a, 1, BATON_WAIT_FOREVER, p, BATON_MAX_MANY);
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    ASSERT_UEQ(count_in(&f, DB_HOLDERS), BATON_MAX_MANY);
    ASSERT_EQ(run(&f, c_rel(a, 2, r.value, "n00")).status, 0);
    ASSERT_UEQ(count_in(&f, DB_HOLDERS), 0);
    teardown(&f);
}

TEST(cancel_and_timeout_leave_every_queue)
{
    struct fixture f;
    struct cmd_result r;
    uint64_t a, b, c, fa;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    fa = grant(&f, a, 1, "m2");
    ASSERT_EQ(many(&f, b, 1, BATON_WAIT_FOREVER, NAMES("m1", "m2")).kind, RESULT_QUEUED);
    queue(&f, c, 1, "m1", 2);
    /* The cancel names the multi-lock by its first name. */
    ASSERT_EQ(run(&f, c_cancel(b, 2, 1, "m2")).status, BATON_ENOTFOUND);
    r = run(&f, c_cancel(b, 3, 1, "m1"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_CANCELLED);
    ASSERT_EQ(count_fx(&f.fx, FX_WAIT_FAILED), 1);
    assert_grants(&f, &c, 1); /* c, behind it on m1, gets m1 in the same entry */
    held_by(&f, "m2", a, fa, 0);
    ASSERT_UEQ(count_in(&f, DB_MULTI), 0);
    /* A timeout: the leader's WAIT_TIMEOUT names the first name too. */
    ASSERT_EQ(many(&f, b, 4, 5000, NAMES("m3", "m2")).kind, RESULT_QUEUED);
    {
        struct timed t = {0};
        ASSERT_EQ(store_foreach_timed_waiter(f.s, collect_timed, &t), 0);
        ASSERT_EQ(t.n, 1); /* one deadline, on the first name */
        ASSERT_STREQ(t.name, "m3");
    }
    ASSERT_EQ(run(&f, c_timeout(b, 4, "m3")).status, 0);
    ASSERT_EQ(count_fx(&f.fx, FX_WAIT_FAILED), 1);
    ASSERT_EQ(f.fx.fx[0].status, BATON_ETIMEDOUT);
    held_by(&f, "m3", 0, 0, 0);
    held_by(&f, "m2", a, fa, 0);
    ASSERT_UEQ(count_in(&f, DB_MULTI), 0);
    teardown(&f);
}

TEST(expiry_loses_every_name_and_delays_each)
{
    struct fixture f;
    struct cmd c;
    uint64_t a, b, fa;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = c_many(a, 1, BATON_WAIT_FOREVER, NAMES("e1", "e2"), more);
    c.lock_delay_ms = 500;
    fa = run(&f, c).value;
    queue(&f, b, 1, "e2", 1);
    ASSERT_EQ(run(&f, c_expire(a)).status, 0);
    ASSERT_EQ(count_fx(&f.fx, FX_LOST), 1); /* told once, by its first name */
    ASSERT_EQ(count_fx(&f.fx, FX_LOCK_DELAY), 2);
    ASSERT_EQ(count_fx(&f.fx, FX_GRANT), 0);
    ASSERT_UEQ(count_in(&f, DB_MULTI), 0);
    ASSERT_EQ(run(&f, c_delay_end("e2")).status, 0);
    assert_grants(&f, &b, 1);
    ASSERT_ULT(fa, grant_fence(&f, b));
    /* Without a delay, a close hands every name on at once. */
    a = open_session(&f);
    ASSERT_EQ(many(&f, a, 1, BATON_WAIT_FOREVER, NAMES("g1", "g2")).kind, RESULT_GRANTED);
    ASSERT_EQ(many(&f, b, 2, BATON_WAIT_FOREVER, NAMES("g2", "g1")).kind, RESULT_QUEUED);
    ASSERT_EQ(run(&f, c_close(a, 2)).status, 0);
    assert_grants(&f, &b, 1);
    teardown(&f);
}

TEST(forced_release_of_one_name_takes_all)
{
    struct fixture f;
    uint64_t a, b, c, fa;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    fa = run(&f, c_many(a, 1, BATON_WAIT_FOREVER, NAMES("f1", "f2", "f3"), more)).value;
    queue(&f, b, 1, "f3", 1);
    queue(&f, c, 1, "f1", 1);
    ASSERT_EQ(run(&f, c_force2("f2", 0, CMD_FORCE_NOW)).status, 0);
    ASSERT_EQ(count_fx(&f.fx, FX_LOST), 1);
    ASSERT_EQ(count_fx(&f.fx, FX_GRANT), 2); /* b gets f3, c gets f1 */
    held_by(&f, "f2", 0, 0, 0);
    /* One lost record, by the first name; the session acknowledges it. */
    ASSERT_UEQ(count_in(&f, DB_LOST), 1);
    ASSERT_EQ(run(&f, c_rel(a, 2, fa, "f1")).status, BATON_ELOST);
    ASSERT_UEQ(count_in(&f, DB_LOST), 0);
    /* After the lease: every name is delayed. */
    fa = run(&f, c_many(a, 3, BATON_WAIT_FOREVER, NAMES("h1", "h2"), more)).value;
    ASSERT_EQ(run(&f, c_force2("h1", fa, CMD_FORCE_AFTER_LEASE)).status, 0);
    ASSERT_EQ(count_fx(&f.fx, FX_LOCK_DELAY), 2);
    teardown(&f);
}

TEST(snapshot_and_replay_with_multi_locks)
{
    struct fixture f, g;
    struct buf s1 = {0}, s2 = {0};
    uint64_t a, b, fa;

    setup(&f);
    setup(&g);
    a = open_session(&f);
    b = open_session(&f);
    fa = run(&f, c_many(a, 1, BATON_WAIT_FOREVER, NAMES("s1", "s2"), more)).value;
    ASSERT_EQ(many(&f, b, 1, BATON_WAIT_FOREVER, NAMES("s2", "s1")).kind, RESULT_QUEUED);
    snap(&f, &s1);
    ASSERT_UEQ(snap_count(&s1, DB_MULTI), 2);
    ASSERT_EQ(store_restore(g.s, s1.data, s1.len), 0);
    snap(&g, &s2);
    ASSERT(same_state(&s1, &s2));
    g.index = f.index;
    /* Both go on the same way. */
    ASSERT_EQ(run(&f, c_rel(a, 2, fa, "s1")).status, 0);
    ASSERT_EQ(run(&g, c_rel(a, 2, fa, "s1")).status, 0);
    assert_same_effects(&f.fx, &g.fx);
    assert_grants(&g, &b, 1);
    assert_same_snapshots(&f, &g);
    /* A format 7 store cannot hold multi-locks: the downgrade refuses. */
    ASSERT_EQ(store__downgrade(f.s, 7), BATON_EINVAL);
    buf_free(&s1);
    buf_free(&s2);
    teardown(&f);
    teardown(&g);
}

/*
 * A corrupt store: a single lock's holder record that says it is part of a
 * multi-lock (the multi flag of its mode byte set on disk), so that its
 * RELEASE looks for the multi-lock's names and finds none. The apply fails
 * with BATON_EIO and changes nothing; nothing of the names that are not
 * there is read (valgrind: no use of an uninitialised value).
 */
TEST(release_of_a_multi_lock_without_its_names_fails_cleanly)
{
    struct fixture f;
    struct buf before = {0}, after = {0}, b = {0};
    char path[256], err[256];
    uint8_t key[5 + 8] = "solo";
    uint64_t a, fence;
    size_t start;
    struct cmd c;

    setup(&f);
    a = open_session(&f);
    fence = grant(&f, a, 1, "solo");
    store_close(f.s);
    snprintf(path, sizeof path, "%s/data.mdb", f.dir);
    for (int i = 0; i < 8; i++) key[5 + i] = (uint8_t)(fence >> (56 - 8 * i)); /* "solo\0" fence */
    /* the 33-byte holder record's mode byte (28): exclusive -> | 0x80 */
    ASSERT_GE(corrupt_lmdb_value_bits(path, key, sizeof key, 33, 28, 0x80), 1);
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    snap(&f, &before);
    c = c_rel(a, 2, fence, "solo");
    ASSERT_EQ(cmd_batch_begin(&b, &start), 0);
    ASSERT_EQ(cmd_batch_add(&b, &c), 0);
    cmd_batch_end(&b, start, 1);
    ASSERT_EQ(store_apply(f.s, f.index + 1, b.data, b.len, &f.fx), BATON_EIO);
    snap(&f, &after);
    ASSERT(same_state(&before, &after));
    buf_free(&b);
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
}

int main(int argc, char **argv)
{
    fsm_main_begin(argc, argv);
    RUN(granted_at_once_with_one_fence);
    RUN(all_or_nothing_and_fifo_per_name);
    RUN(multi_locks_crossing_in_opposite_orders_do_not_deadlock);
    RUN(chain_of_multi_locks_granted_in_one_entry);
    RUN(shared_multi_lock_and_semaphores);
    RUN(refusals_change_nothing);
    RUN(sixty_four_names_and_the_session_limit);
    RUN(cancel_and_timeout_leave_every_queue);
    RUN(expiry_loses_every_name_and_delays_each);
    RUN(forced_release_of_one_name_takes_all);
    RUN(snapshot_and_replay_with_multi_locks);
    RUN(release_of_a_multi_lock_without_its_names_fails_cleanly);
    return fsm_main_end();
}
