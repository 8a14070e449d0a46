/*
 * test_fsm_nonce.c -- the lock state machine (storage/store.h):
 * OPEN_SESSION's nonce (storage/nonces.c). A re-sent OPEN_SESSION gets the
 * session its nonce opened, for as long as that session lives, and only
 * for the principal that opened it; the nonce goes with the session; and
 * stores and snapshots of format 5, which had no nonces, upgrade to the
 * same bytes as a store that applied the same entries in format 6.
 *
 * Each test runs on a store of its own (tests/unit/fsm_fixture.h).
 */
#include "tests/unit/fsm_fixture.h"

#include "storage/store_test.h"

/* An OPEN_SESSION with a nonce by owner: its result. */
static struct cmd_result open_n(struct fixture *f, const char *owner, uint64_t nonce)
{
    return run(f, c_open_nonce(10000, "client", owner, nonce));
}

/*
 * The SESSION reply to an OPEN_SESSION is lost and the client sends it
 * again, with the same nonce: it gets the same session, and nothing else
 * changes -- however often, in the same entry or later. Another principal
 * with the same nonce, or the same principal with another nonce or none,
 * opens a session of its own.
 */
TEST(resent_open_session_gets_the_same_session)
{
    struct buf before = {0}, after = {0};
    struct fixture f;
    struct cmd_result r;
    uint64_t s1, s2;

    setup(&f);
    r = open_n(&f, "", 0xfeedULL);
    ASSERT_EQ(r.status, 0);
    s1 = r.value;
    grant(&f, s1, 1, "L");
    snap(&f, &before);
    for (int i = 0; i < 3; i++) {
        r = open_n(&f, "", 0xfeedULL);
        ASSERT_EQ(r.status, 0);
        ASSERT_EQ(r.kind, RESULT_OK);
        ASSERT_UEQ(r.value, s1);
        ASSERT_EQ(f.fx.n_fx, 0);
    }
    snap(&f, &after);
    ASSERT(same_state(&before, &after));
    ASSERT_EQ(count_in(&f, DB_SESSIONS), 1);
    ASSERT_EQ(count_in(&f, DB_NONCES), 1);
    ASSERT_EQ(count_in(&f, DB_SESSION_NONCES), 1);
    /* Two copies in one entry: one session. */
    {
        struct cmd two[2] = {c_open_nonce(10000, "c", "bob", 7), c_open_nonce(10000, "c", "bob", 7)};
        apply_n(&f, two, 2);
        ASSERT_EQ(f.fx.results[0].status, 0);
        ASSERT_UEQ(f.fx.results[1].value, f.fx.results[0].value);
        s2 = f.fx.results[0].value;
        ASSERT(s2 != s1);
    }
    /* The nonce is the principal's: another one's same nonce is another
     * session, and does not reveal the first. */
    r = open_n(&f, "alice", 0xfeedULL);
    ASSERT(r.value != s1 && r.value != s2);
    ASSERT_UEQ(open_n(&f, "alice", 0xfeedULL).value, r.value);
    ASSERT_UEQ(open_n(&f, "", 0xfeedULL).value, s1);
    /* Another nonce, or none (0, as every OPEN_SESSION before nonces),
     * opens a new session every time. */
    ASSERT(open_n(&f, "", 0xbeefULL).value > r.value);
    ASSERT(open_n(&f, "", 0).value != open_n(&f, "", 0).value);
    ASSERT_EQ(count_in(&f, DB_SESSIONS), 6);
    ASSERT_EQ(count_in(&f, DB_NONCES), 4); /* none for the two without */
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
}

/*
 * A session's nonce ends with it (close or expiry): the index holds only
 * live sessions, and an OPEN_SESSION with the nonce of a session that has
 * ended opens a new session, with a new id -- the old one stays ended,
 * its locks released, nothing of it comes back.
 */
TEST(nonce_ends_with_its_session)
{
    struct fixture f;
    uint64_t s1, s2, s3, f1;

    setup(&f);
    s1 = open_n(&f, "", 11).value;
    s2 = open_n(&f, "carol", 12).value;
    f1 = grant(&f, s1, 1, "L");
    ASSERT_EQ(run(&f, c_close(s1, 2)).status, 0);
    ASSERT_EQ(run(&f, c_expire(s2)).status, 0);
    ASSERT_EQ(count_in(&f, DB_NONCES), 0);
    ASSERT_EQ(count_in(&f, DB_SESSION_NONCES), 0);
    s3 = open_n(&f, "", 11).value;
    ASSERT(s3 != s1 && s3 != s2);
    ASSERT_EQ(store_session_exists(f.s, s1), 0);
    assert_holder(&f, "L", 0, 0, 0);
    ASSERT_EQ(run(&f, c_acq(s1, 3, BATON_WAIT_TRY, "L")).status, BATON_ESESSION);
    ASSERT(grant(&f, s3, 1, "L") > f1);
    ASSERT_UEQ(open_n(&f, "carol", 12).value, s3 + 1);
    /* Many sessions come and go: the index follows them. */
    for (uint64_t n = 100; n < 400; n++) ASSERT_EQ(open_n(&f, "", n).status, 0);
    ASSERT_EQ(count_in(&f, DB_NONCES), 302);
    for (uint64_t id = s3 + 2; id < s3 + 302; id++) ASSERT_EQ(run(&f, c_expire(id)).status, 0);
    ASSERT_EQ(count_in(&f, DB_NONCES), 2);
    ASSERT_EQ(count_in(&f, DB_SESSION_NONCES), 2);
    ASSERT_EQ(count_in(&f, DB_SESSIONS), 2);
    teardown(&f);
}

/* Nonces survive snapshots, restores and reopening, and a restored store
 * answers a re-sent OPEN_SESSION as the original does. */
TEST(nonces_in_snapshot_restore_and_reopen)
{
    struct fixture f, g;
    struct buf s = {0};
    char err[256];
    uint64_t s1;

    setup(&f);
    setup(&g);
    populate(&f);
    s1 = open_n(&f, "dave", 99).value;
    snap(&f, &s);
    ASSERT_EQ(snap_count(&s, DB_NONCES), 2); /* populate's and dave's */
    ASSERT_EQ(store_restore(g.s, s.data, s.len), 0);
    g.index = f.index;
    assert_same_snapshots(&f, &g);
    store_close(g.s);
    ASSERT_EQ(store_open(g.dir, &g.s, err), 0);
    ASSERT_UEQ(open_n(&g, "dave", 99).value, s1);
    ASSERT_UEQ(open_n(&f, "dave", 99).value, s1);
    assert_same_snapshots(&f, &g);
    buf_free(&s);
    teardown(&f);
    teardown(&g);
}

/* Where the (only) entry of database db starts in snapshot b: the offset
 * of its key's u32 length. */
static size_t only_entry_at(const struct buf *b, int db)
{
    size_t off = SNAP_HDR;

    for (int i = 0; i < db; i++) {
        uint32_t n = le_get_u32(b->data + off);
        off += 4;
        for (uint32_t j = 0; j < n; j++) {
            off += 4 + le_get_u32(b->data + off);
            off += 4 + le_get_u32(b->data + off);
        }
    }
    ASSERT_EQ(le_get_u32(b->data + off), 1);
    return off + 4;
}

/* Nonce entries a snapshot may not hold: a zero nonce, session 0 or nonce
 * 0 as a value, values of the wrong size, an owner longer than a
 * principal. The store is left as it was. */
TEST(restore_rejects_bad_nonce_entries)
{
    struct fixture f, g;
    struct buf s = {0}, bad = {0}, before = {0}, after = {0};
    char owner[BATON_MAX_PRINCIPAL + 2];
    size_t n, r;

    setup(&f);
    setup(&g);
    open_n(&f, "", 0x0102030405060708ULL);
    snap(&f, &s);
    snap(&g, &before);
    n = only_entry_at(&s, DB_NONCES);
    ASSERT_EQ(le_get_u32(s.data + n), 8); /* the nonce, no owner */
    ASSERT_EQ(s.data[n + 4], 0x01);
    r = only_entry_at(&s, DB_SESSION_NONCES);
    ASSERT_EQ(le_get_u32(s.data + r + 4 + 8), 8);

    be_put_u64(s.data + n + 4, 0); /* nonce 0 */
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    be_put_u64(s.data + n + 4, 0x0102030405060708ULL);
    le_put_u64(s.data + n + 4 + 8 + 4, 0); /* -> session 0 */
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    le_put_u64(s.data + n + 4 + 8 + 4, 1);
    le_put_u64(s.data + r + 4 + 8 + 4, 0); /* session 1 -> nonce 0 */
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    le_put_u64(s.data + r + 4 + 8 + 4, 0x0102030405060708ULL);
    /* A value of 7 bytes. */
    ASSERT_EQ(buf_put(&bad, s.data, r + 4 + 8), 0);
    ASSERT_EQ(buf_put_u32(&bad, 7), 0);
    ASSERT_EQ(buf_put(&bad, s.data + r + 4 + 8 + 4, 7), 0);
    ASSERT_EQ(store_restore(g.s, bad.data, bad.len), BATON_EMALFORMED);
    /* An owner of BATON_MAX_PRINCIPAL + 1 bytes in the nonce's key. */
    buf_reset(&bad);
    memset(owner, 'o', sizeof owner);
    ASSERT_EQ(buf_put(&bad, s.data, n), 0);
    ASSERT_EQ(buf_put_u32(&bad, 8 + BATON_MAX_PRINCIPAL + 1), 0);
    ASSERT_EQ(buf_put(&bad, s.data + n + 4, 8), 0);
    ASSERT_EQ(buf_put(&bad, owner, BATON_MAX_PRINCIPAL + 1), 0);
    ASSERT_EQ(buf_put(&bad, s.data + n + 4 + 8, s.len - n - 4 - 8), 0);
    ASSERT_EQ(store_restore(g.s, bad.data, bad.len), BATON_EMALFORMED);
    snap(&g, &after);
    ASSERT(same_state(&before, &after));
    ASSERT_UEQ(store_applied_index(g.s), 0);
    /* As it was, it restores. */
    ASSERT_EQ(store_restore(g.s, s.data, s.len), 0);
    buf_free(&s);
    buf_free(&bad);
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
    teardown(&g);
}

/* ---- format 5 (before nonces) --------------------------------------------- */

/*
 * A store left in format 5 opens as format 6 with empty nonce tables:
 * byte for byte and digest for digest the store that applied the same
 * entries in format 6; both then go on alike, nonces included.
 */
TEST(format5_store_upgraded_on_open)
{
    struct fixture f, g;
    struct buf s = {0};
    char err[256];

    setup(&f);
    setup(&g);
    populate_old(&f);
    populate_old(&g);
    ASSERT_EQ(store__downgrade(f.s, 5), 0);
    store_close(f.s);
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    assert_same_snapshots(&f, &g);
    snap(&f, &s);
    ASSERT_EQ(le_get_u32(s.data + 4), 8);
    ASSERT_UEQ(open_n(&f, "", 5).value, open_n(&g, "", 5).value);
    ASSERT_UEQ(open_n(&f, "", 5).value, open_n(&g, "", 5).value);
    assert_same_snapshots(&f, &g);
    buf_free(&s);
    teardown(&f);
    teardown(&g);
}

/* A store that says format 5 but holds nonces was not written by a batond
 * of format 5: it is refused (BATON_EIO), not taken for one. */
TEST(format5_store_with_nonces_is_refused)
{
    struct fixture f;
    char err[256];
    store *s;

    setup(&f);
    open_n(&f, "", 5);
    ASSERT_EQ(store__set_format(f.s, 5), 0);
    store_close(f.s);
    f.s = NULL;
    ASSERT_EQ(store_open(f.dir, &s, err), BATON_EIO);
    ASSERT(s == NULL);
    ASSERT(strstr(err, f.dir) != NULL);
    /* Start afresh so that teardown has a store to close. */
    {
        char path[192];
        snprintf(path, sizeof path, "%s/data.mdb", f.dir);
        ASSERT_EQ(unlink(path), 0);
        snprintf(path, sizeof path, "%s/lock.mdb", f.dir);
        unlink(path);
    }
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    teardown(&f);
}

/* A format 5 snapshot (a node not yet upgraded sent it, or raft kept it on
 * disk) restores with empty nonce tables, as the format 6 state of the
 * same entries; a format 5 snapshot carrying nonce tables has trailing
 * bytes. */
TEST(format5_snapshot_restores)
{
    struct fixture f, g;
    struct buf s6 = {0}, s5 = {0};

    setup(&f);
    setup(&g);
    populate_old(&f);
    snap(&f, &s6);
    snap_as_format(&s6, 5, &s5);
    ASSERT_EQ(le_get_u32(s5.data + 4), 5);
    ASSERT_ULT(s5.len, s6.len); /* no lost, nonce or holders tables, not even their counts */
    ASSERT_EQ(store_restore(g.s, s5.data, s5.len), 0);
    g.index = f.index;
    assert_same_snapshots(&f, &g);
    ASSERT_UEQ(open_n(&f, "", 5).value, open_n(&g, "", 5).value);
    assert_same_snapshots(&f, &g);
    le_put_u32(s6.data + 4, 5);
    le_put_u64(s6.data + 8, f.index + 10);
    ASSERT_EQ(store_restore(g.s, s6.data, s6.len), BATON_EMALFORMED);
    buf_free(&s6);
    buf_free(&s5);
    teardown(&f);
    teardown(&g);
}

int main(int argc, char **argv)
{
    fsm_main_begin(argc, argv);
    RUN(resent_open_session_gets_the_same_session);
    RUN(nonce_ends_with_its_session);
    RUN(nonces_in_snapshot_restore_and_reopen);
    RUN(restore_rejects_bad_nonce_entries);
    RUN(format5_store_upgraded_on_open);
    RUN(format5_store_with_nonces_is_refused);
    RUN(format5_snapshot_restores);
    return fsm_main_end();
}
