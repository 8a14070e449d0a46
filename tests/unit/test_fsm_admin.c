/*
 * test_fsm_admin.c -- the lock state machine (storage/store.h): what
 * operators do: the forced release of a lock, and the members table
 * (SET_MEMBER_ADDR) with its snapshot formats.
 *
 * Each test runs on a store of its own (tests/unit/fsm_fixture.h).
 */
#include "tests/unit/fsm_fixture.h"

#include "storage/store_test.h"

/* ---- forced release ----------------------------------------------------- */

TEST(force_release)
{
    struct fixture f;
    struct cmd_result r;
    uint64_t a, b, fa;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    fa = grant(&f, a, 1, "L");
    queue(&f, b, 1, "L", 1);
    r = run(&f, c_force("L"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(f.fx.n_fx, 2);
    assert_fx(&f.fx.fx[0], FX_LOST, BATON_ELOST, a, 1, "L");
    ASSERT_UEQ(f.fx.fx[0].fence, fa);
    assert_fx(&f.fx.fx[1], FX_GRANT, 0, b, 1, "L");
    /* The old holder can no longer release. */
    ASSERT_EQ(run(&f, c_rel(a, 2, fa, "L")).status, BATON_ENOTHELD);
    ASSERT_EQ(run(&f, c_force("L")).status, 0);
    ASSERT_EQ(run(&f, c_force("L")).status, BATON_ENOTHELD);
    ASSERT_EQ(run(&f, c_force("")).status, BATON_EINVAL);
    /* n_owned went down with each loss: both sessions own nothing. */
    ASSERT_EQ(count_in(&f, DB_OWNED), 0);
    teardown(&f);
}

/* ---- the members table (SET_MEMBER_ADDR) -------------------------------- */

/* The address the store holds for member id, or "" (asserting the return). */
static const char *member_addr(struct fixture *f, uint32_t id, int want_found)
{
    static char out[BATON_MAX_ADDR + 1];

    ASSERT_EQ(store_member_addr(f->s, id, out, sizeof out), want_found);
    if (!want_found) ASSERT_STREQ(out, "");
    return out;
}

TEST(member_addr_set_replace_delete)
{
    struct fixture f;
    struct buf before = {0}, after = {0};
    struct cmd_result r;
    char small[BATON_MAX_ADDR];
    uint64_t digest;

    setup(&f);
    member_addr(&f, 4, 0);
    r = run(&f, c_member(4, "127.0.0.1:7004"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_OK);
    ASSERT_EQ(f.fx.n_fx, 0);
    ASSERT_EQ(f.changed.n_fx, 0);
    ASSERT_STREQ(member_addr(&f, 4, 1), "127.0.0.1:7004");
    member_addr(&f, 5, 0);
    ASSERT_EQ(count_in(&f, DB_MEMBERS), 1);

    /* Several in one entry, applied in order: the last one wins. */
    {
        struct cmd cs[3] = {c_member(5, "10.0.0.5:1"), c_member(4, "10.0.0.4:1"),
                            c_member(4, "10.0.0.4:2")};
        apply_n(&f, cs, 3);
        for (int i = 0; i < 3; i++) ASSERT_EQ(f.fx.results[i].status, 0);
    }
    ASSERT_STREQ(member_addr(&f, 4, 1), "10.0.0.4:2");
    ASSERT_STREQ(member_addr(&f, 5, 1), "10.0.0.5:1");

    /* The same command again is applied again (never deduplicated), and
     * changes only the applied index and the digest. */
    snap(&f, &before);
    digest = store_digest(f.s);
    ASSERT_EQ(run(&f, c_member(4, "10.0.0.4:2")).status, 0);
    snap(&f, &after);
    ASSERT(same_state(&before, &after));
    ASSERT(store_digest(f.s) != digest);

    /* The largest id, and an address of exactly BATON_MAX_ADDR bytes: a
     * one-label host name and ":1" (proto/addr.h). */
    memset(small, 'a', sizeof small);
    {
        char full[BATON_MAX_ADDR + 1];
        memcpy(full, small, BATON_MAX_ADDR);
        memcpy(full + BATON_MAX_ADDR - 2, ":1", 2);
        full[BATON_MAX_ADDR] = '\0';
        ASSERT_EQ(run(&f, c_member(UINT32_MAX, full)).status, 0);
        ASSERT_STREQ(member_addr(&f, UINT32_MAX, 1), full);
    }

    /* An empty address deletes; deleting again (or an absent id) is fine. */
    ASSERT_EQ(run(&f, c_member(5, NULL)).status, 0);
    member_addr(&f, 5, 0);
    ASSERT_EQ(run(&f, c_member(5, NULL)).status, 0);
    ASSERT_EQ(run(&f, c_member(77, NULL)).status, 0);
    ASSERT_STREQ(member_addr(&f, 4, 1), "10.0.0.4:2");
    ASSERT_EQ(count_in(&f, DB_MEMBERS), 2);

    /* The reader needs room for the longest address and its NUL. */
    ASSERT_EQ(store_member_addr(f.s, 4, small, sizeof small), BATON_EINVAL);
    ASSERT_EQ(small[0], '\0');
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
}

TEST(member_addr_rejects_bad_ids_and_addresses)
{
    static const char *const bad[] = {"127.0.0.1 :1", "a\tb", "\x7f", "caf\xc3\xa9:1", "x\ny"};
    struct fixture f;
    struct buf before = {0}, after = {0};
    struct cmd c;

    setup(&f);
    ASSERT_EQ(run(&f, c_member(3, "127.0.0.1:7003")).status, 0);
    snap(&f, &before);
    /* Ids 0 and above UINT32_MAX. */
    ASSERT_EQ(run(&f, c_member(0, "127.0.0.1:1")).status, BATON_EINVAL);
    ASSERT_EQ(run(&f, c_member((uint64_t)UINT32_MAX + 1, "127.0.0.1:1")).status, BATON_EINVAL);
    ASSERT_EQ(run(&f, c_member(UINT64_MAX, NULL)).status, BATON_EINVAL);
    ASSERT_EQ(run(&f, c_member(0, NULL)).status, BATON_EINVAL);
    /* Blanks, control bytes, DEL, bytes above 0x7e. */
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ASSERT_EQ(run(&f, c_member(3, bad[i])).status, BATON_EINVAL);
    /* A NUL inside. */
    c = c_member(3, "1.2.3.4:5");
    c.name = "1.2\0.4:5";
    ASSERT_EQ(run(&f, c).status, BATON_EINVAL);
    /* One bad command fails alone: the others of its entry still apply. */
    {
        struct cmd cs[3] = {c_member(8, "8.8.8.8:8"), c_member(0, "0.0.0.0:1"),
                            c_member(9, "9.9.9.9:9")};
        apply_n(&f, cs, 3);
        ASSERT_EQ(f.fx.results[0].status, 0);
        ASSERT_EQ(f.fx.results[1].status, BATON_EINVAL);
        ASSERT_EQ(f.fx.results[2].status, 0);
        ASSERT_STREQ(member_addr(&f, 8, 1), "8.8.8.8:8");
        ASSERT_STREQ(member_addr(&f, 9, 1), "9.9.9.9:9");
        ASSERT_EQ(run(&f, c_member(8, NULL)).status, 0);
        ASSERT_EQ(run(&f, c_member(9, NULL)).status, 0);
    }
    snap(&f, &after);
    ASSERT(same_state(&before, &after));
    ASSERT_STREQ(member_addr(&f, 3, 1), "127.0.0.1:7003");
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
}

/* The table travels in snapshots and survives a close and reopen. */
TEST(member_addr_in_snapshot_and_after_reopen)
{
    struct fixture f, g;
    struct buf s1 = {0};
    char err[256];

    setup(&f);
    setup(&g);
    populate(&f);
    ASSERT_EQ(run(&f, c_member(2, "127.0.0.1:7002")).status, 0);
    snap(&f, &s1);
    ASSERT_EQ(snap_count(&s1, DB_MEMBERS), 2);
    ASSERT_EQ(store_restore(g.s, s1.data, s1.len), 0);
    ASSERT_STREQ(member_addr(&g, 2, 1), "127.0.0.1:7002");
    ASSERT_STREQ(member_addr(&g, 4, 1), "127.0.0.1:7004");
    member_addr(&g, 3, 0);
    store_close(g.s);
    ASSERT_EQ(store_open(g.dir, &g.s, err), 0);
    ASSERT_STREQ(member_addr(&g, 2, 1), "127.0.0.1:7002");
    /* A restore replaces the table too. */
    ASSERT_EQ(run(&f, c_member(2, NULL)).status, 0);
    snap(&f, &s1);
    ASSERT_EQ(store_restore(g.s, s1.data, s1.len), 0);
    member_addr(&g, 2, 0);
    ASSERT_STREQ(member_addr(&g, 4, 1), "127.0.0.1:7004");
    buf_free(&s1);
    teardown(&f);
    teardown(&g);
}

/* Member entries a snapshot may not hold: id 0, a key of the wrong size,
 * an address with a blank or an empty one. */
TEST(restore_rejects_bad_member_entries)
{
    struct fixture f, g;
    struct buf s = {0}, before = {0}, after = {0};
    uint8_t *rec;
    size_t off;

    setup(&f);
    setup(&g);
    populate_old(&f); /* the one member: 4 -> "127.0.0.1:7004" (14 bytes) */
    snap(&f, &s);
    snap(&g, &before);
    rec = memmem(s.data, s.len, "\x04\x00\x00\x00\x00\x00\x00\x04\x0e\x00\x00\x00", 12);
    ASSERT(rec != NULL);
    off = (size_t)(rec - s.data);
    ASSERT_EQ(snap_count(&s, DB_MEMBERS), 1); /* the one entry: the last of its table */
    s.data[off + 7] = 0; /* id 0 */
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    s.data[off + 7] = 4;
    s.data[off + 12 + 9] = ' '; /* "127.0.0.1 7004" */
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    s.data[off + 12 + 9] = 0;
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    s.data[off + 12 + 9] = ':';
    /* klen 3 with the address one byte longer: still 26 bytes, wrong key. */
    le_put_u32(s.data + off, 3);
    le_put_u32(s.data + off + 7, 15);
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    snap(&g, &after);
    ASSERT(same_state(&before, &after));
    /* Put back, it is accepted. */
    le_put_u32(s.data + off, 4);
    s.data[off + 4] = 0;
    s.data[off + 5] = 0;
    s.data[off + 6] = 0;
    s.data[off + 7] = 4;
    le_put_u32(s.data + off + 8, 14);
    ASSERT_EQ(store_restore(g.s, s.data, s.len), 0);
    ASSERT_STREQ(member_addr(&g, 4, 1), "127.0.0.1:7004");
    buf_free(&s);
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
    teardown(&g);
}

/* A format 3 snapshot (written before the members table existed; raft
 * loads its latest snapshot at every start, so an upgraded node meets one)
 * restores with an empty members table and owner-less sessions, and the
 * result is a format 6 store identical to the one the snapshot came from. */
TEST(restore_accepts_format3_snapshot)
{
    struct fixture f, g;
    struct buf s5 = {0}, s3 = {0}, s4 = {0}, out = {0};

    setup(&f);
    setup(&g);
    populate_old(&f);
    ASSERT_EQ(run(&f, c_member(4, NULL)).status, 0); /* no member entries */
    snap(&f, &s5);
    ASSERT_EQ(snap_count(&s5, DB_MEMBERS), 0);
    for (int db = DB_MEMBERS; db <= DB_SESSION_NONCES; db++)
        ASSERT_EQ(snap_count(&s5, db), 0);
    snap_as_format(&s5, 3, &s3);
    ASSERT_EQ(store_restore(g.s, s3.data, s3.len), 0);
    ASSERT_UEQ(store_applied_index(g.s), f.index);
    ASSERT_UEQ(store_digest(g.s), store_digest(f.s));
    snap(&g, &out);
    ASSERT_EQ(out.len, s5.len);
    ASSERT(memcmp(out.data, s5.data, s5.len) == 0);
    /* A format 3 snapshot that carries a members table has trailing bytes. */
    snap_as_format(&s5, 4, &s4);
    le_put_u32(s4.data + 4, 3);
    le_put_u64(s4.data + 8, f.index + 1);
    ASSERT_EQ(store_restore(g.s, s4.data, s4.len), BATON_EMALFORMED);
    buf_free(&s4);
    buf_free(&s5);
    buf_free(&s3);
    buf_free(&out);
    teardown(&f);
    teardown(&g);
}

/* A store left in format 3 by an older batond opens as format 6, with its
 * state intact, its sessions the anonymous principal's and empty members
 * and lost tables and nonce databases; format 2 is still refused. */
TEST(format3_store_upgraded_on_open)
{
    struct fixture f;
    struct buf s1 = {0}, s2 = {0};
    char err[256];
    store *s;

    setup(&f);
    populate_old(&f);
    ASSERT_EQ(run(&f, c_member(4, NULL)).status, 0);
    snap(&f, &s1);
    ASSERT_EQ(store__downgrade(f.s, 3), 0);
    store_close(f.s);
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    snap(&f, &s2);
    ASSERT_EQ(le_get_u32(s2.data + 4), 8);
    ASSERT_EQ(s1.len, s2.len);
    ASSERT(memcmp(s1.data, s2.data, s1.len) == 0);
    /* It is a format 6 store now: members can be set. */
    ASSERT_EQ(run(&f, c_member(4, "127.0.0.1:7004")).status, 0);
    ASSERT_STREQ(member_addr(&f, 4, 1), "127.0.0.1:7004");
    ASSERT_EQ(store__set_format(f.s, 2), 0);
    store_close(f.s);
    f.s = NULL;
    ASSERT_EQ(store_open(f.dir, &s, err), BATON_EIO);
    ASSERT(s == NULL);
    ASSERT(strstr(err, f.dir) != NULL);
    /* Put the format back so that teardown can close a store. */
    {
        char path[192];
        snprintf(path, sizeof path, "%s/data.mdb", f.dir);
        ASSERT_EQ(unlink(path), 0);
        snprintf(path, sizeof path, "%s/lock.mdb", f.dir);
        unlink(path);
    }
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    buf_free(&s1);
    buf_free(&s2);
    teardown(&f);
}

int main(int argc, char **argv)
{
    fsm_main_begin(argc, argv);
    RUN(force_release);
    RUN(member_addr_set_replace_delete);
    RUN(member_addr_rejects_bad_ids_and_addresses);
    RUN(member_addr_in_snapshot_and_after_reopen);
    RUN(restore_rejects_bad_member_entries);
    RUN(restore_accepts_format3_snapshot);
    RUN(format3_store_upgraded_on_open);
    return fsm_main_end();
}
