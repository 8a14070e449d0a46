/*
 * test_fsm_owner.c -- the lock state machine (storage/store.h): a
 * session's owner, the principal that opened it. It is recorded from the
 * OPEN_SESSION command, read back by store_session_owner, the session
 * walk and the session listing, kept by every rewrite of the session
 * record, snapshots, restores and reopens; and stores and snapshots of
 * formats 3 and 4, which had no owners, are upgraded to the same bytes a
 * store that applied the same entries afresh holds.
 *
 * Each test runs on a store of its own (tests/unit/fsm_fixture.h).
 */
#include "tests/unit/fsm_fixture.h"

#include "storage/store_test.h"

/* ---- helpers ------------------------------------------------------------ */

/* store_session_owner of session, expected to succeed: the owner as a
 * NUL-terminated string (owners in these tests have no NUL of their own
 * unless a test checks the length itself). */
static const char *owner_of(struct fixture *f, uint64_t session)
{
    static char out[BATON_MAX_PRINCIPAL + 1];
    size_t len = 999;

    ASSERT_EQ(store_session_owner(f->s, session, out, sizeof out, &len), 0);
    ASSERT_EQ(len, strlen(out));
    return out;
}

/* Open a session by `owner` and expect success; its id. */
static uint64_t open_by(struct fixture *f, const char *owner)
{
    struct cmd_result r = run(f, c_open_by(10000, "client", owner));

    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_OK);
    return r.value;
}

/* Where session id's value is in snapshot b (the offset of its u32
 * length); 0 if it is not there. */
static size_t session_value_at(const struct buf *b, uint64_t id)
{
    size_t off = SNAP_HDR;
    uint32_t n;

    for (int db = 0; db < DB_SESSIONS; db++) {
        n = le_get_u32(b->data + off);
        off += 4;
        for (uint32_t j = 0; j < n; j++) {
            off += 4 + le_get_u32(b->data + off);
            off += 4 + le_get_u32(b->data + off);
        }
    }
    n = le_get_u32(b->data + off);
    off += 4;
    for (uint32_t j = 0; j < n; j++) {
        uint32_t klen = le_get_u32(b->data + off);
        int match = klen == 8 && be_get_u64(b->data + off + 4) == id;
        off += 4 + klen;
        if (match) return off;
        off += 4 + le_get_u32(b->data + off);
    }
    return 0;
}

/* ---- recording and reading ---------------------------------------------- */

/* What the session walk reported: "id@owner" for each, in order. */
struct walked {
    char text[512];
    size_t len;
};

static int walk_owner(void *data, uint64_t session, uint32_t ttl_ms, const char *owner,
                      size_t owner_len)
{
    struct walked *w = data;

    (void)ttl_ms;
    w->len += (size_t)snprintf(w->text + w->len, sizeof w->text - w->len, "%llu@%.*s;",
                               (unsigned long long)session, (int)owner_len, owner);
    return 0;
}

/* What the session listing reported: "id:client@owner" for each. */
static int list_owner(void *data, uint64_t session, uint32_t ttl_ms, uint64_t created,
                      const char *name, size_t name_len, const char *owner, size_t owner_len,
                      uint32_t holds, uint32_t waits)
{
    struct walked *w = data;

    (void)ttl_ms;
    (void)created;
    (void)holds;
    (void)waits;
    w->len += (size_t)snprintf(w->text + w->len, sizeof w->text - w->len, "%llu:%.*s@%.*s;",
                               (unsigned long long)session, (int)name_len, name, (int)owner_len,
                               owner);
    return 0;
}

TEST(owner_recorded_and_read)
{
    char longest[BATON_MAX_PRINCIPAL + 1], out[BATON_MAX_PRINCIPAL + 1];
    struct fixture f;
    struct walked w;
    struct cmd c;
    uint64_t a, b, l, x;
    size_t len;
    int more;

    setup(&f);
    memset(longest, 'p', BATON_MAX_PRINCIPAL);
    longest[BATON_MAX_PRINCIPAL] = 0;
    a = open_by(&f, "alice");
    b = run(&f, c_open(7000, "anon")).value;
    l = open_by(&f, longest);
    /* Any bytes, a NUL included: the store does not interpret them. */
    c = c_open_by(1000, "bin", "x");
    c.owner = "b\0\xff";
    c.owner_len = 3;
    x = run(&f, c).value;

    ASSERT_STREQ(owner_of(&f, a), "alice");
    ASSERT_STREQ(owner_of(&f, b), "");
    ASSERT_STREQ(owner_of(&f, l), longest);
    ASSERT_EQ(store_session_owner(f.s, x, out, sizeof out, &len), 0);
    ASSERT_EQ(len, 3);
    ASSERT(memcmp(out, "b\0\xff", 4) == 0);
    ASSERT_EQ(store_session_owner(f.s, a, out, sizeof out, NULL), 0); /* len may be NULL */
    ASSERT_STREQ(out, "alice");

    /* The walk and the listing report it beside the rest. */
    memset(&w, 0, sizeof w);
    ASSERT_EQ(store_foreach_session(f.s, walk_owner, &w), 0);
    snprintf(out, sizeof out, "1@alice;2@;3@%.10s", longest);
    ASSERT(strncmp(w.text, out, strlen(out)) == 0);
    memset(&w, 0, sizeof w);
    ASSERT_EQ(store_list_sessions(f.s, 0, 3, list_owner, &w, &more), 0);
    ASSERT(strncmp(w.text, "1:client@alice;2:anon@;3:client@pppp", 36) == 0);
    ASSERT_EQ(more, 1);

    /* No such session; a buffer that could not hold every owner. */
    strcpy(out, "junk");
    len = 7;
    ASSERT_EQ(store_session_owner(f.s, 99, out, sizeof out, &len), BATON_ENOTFOUND);
    ASSERT_STREQ(out, "");
    ASSERT_EQ(len, 0);
    ASSERT_EQ(store_session_owner(f.s, a, out, BATON_MAX_PRINCIPAL, &len), BATON_EINVAL);
    /* A session that ends takes its owner with it. */
    ASSERT_EQ(run(&f, c_close(a, 1)).status, 0);
    ASSERT_EQ(store_session_owner(f.s, a, out, sizeof out, &len), BATON_ENOTFOUND);
    ASSERT_EQ(run(&f, c_expire(l)).status, 0);
    ASSERT_EQ(store_session_owner(f.s, l, out, sizeof out, &len), BATON_ENOTFOUND);
    ASSERT_STREQ(owner_of(&f, b), "");
    teardown(&f);
}

/* Session a's record is rewritten at each step: n_owned up, a second
 * handle of its own hold (reentrant), the ack floor moving, n_owned down
 * with one handle released; then a stale request. */
static void rewrite_history(struct fixture *h, uint64_t a)
{
    struct cmd ack = c_acq(a, 3, BATON_WAIT_FOREVER, "z");
    struct cmd again = c_acq(a, 2, 5000, "x");
    uint64_t fa = grant(h, a, 1, "x");

    again.reentrant = 1;
    ASSERT_UEQ(run(h, again).value, fa);
    ack.ack_below = 2;
    ASSERT_EQ(run(h, ack).kind, RESULT_GRANTED);
    ASSERT_EQ(run(h, c_rel(a, 4, fa, "x")).status, 0);
    ASSERT_EQ(run(h, c_acq(a, 1, BATON_WAIT_TRY, "y")).status, BATON_ESTALE);
    assert_holder(h, "x", a, 0, 0);
}

/* The owner survives every rewrite of the session record, and an owned
 * session behaves as an anonymous one does. */
TEST(owner_kept_through_record_rewrites)
{
    struct fixture f, g;
    uint64_t a;

    setup(&f);
    setup(&g);
    a = open_by(&f, "alice");
    ASSERT_UEQ(run(&g, c_open(10000, "client")).value, a);
    rewrite_history(&f, a);
    rewrite_history(&g, a);
    ASSERT_STREQ(owner_of(&f, a), "alice");
    ASSERT_STREQ(owner_of(&g, a), "");
    assert_same_effects(&f.fx, &g.fx);
    /* The owner is all that differs: the rest of the record is the same. */
    {
        struct buf sf = {0}, sg = {0};
        size_t vf, vg;
        snap(&f, &sf);
        snap(&g, &sg);
        vf = session_value_at(&sf, a);
        vg = session_value_at(&sg, a);
        ASSERT(vf != 0 && vg != 0);
        ASSERT_EQ(le_get_u32(sf.data + vf), le_get_u32(sg.data + vg) + 5);
        ASSERT(memcmp(sf.data + vf + 4, sg.data + vg + 4, 24) == 0);
        ASSERT_EQ(sf.data[vf + 4 + 24], 5);
        ASSERT(memcmp(sf.data + vf + 4 + 25, "alice", 5) == 0);
        buf_free(&sf);
        buf_free(&sg);
    }
    teardown(&f);
    teardown(&g);
}

/* The bytes a batond from before owners wrote for OPEN_SESSION(ttl 5000,
 * "legacy"), spelled out (storage/cmd.h): they still apply, to a session
 * of the anonymous principal, and are what the encoder writes today for a
 * session without an owner. */
TEST(old_open_session_entry_still_applies)
{
    static const uint8_t entry[] = {
        2,          1, 0, 0, 0,                 /* format 2, one command */
        1,                                      /* OPEN_SESSION */
        0, 0, 0, 0, 0, 0, 0, 0,                 /* session */
        0, 0, 0, 0, 0, 0, 0, 0,                 /* seq */
        0, 0, 0, 0, 0, 0, 0, 0,                 /* ack_below */
        0x88, 0x13, 0, 0,                       /* ttl_ms 5000 */
        0, 0, 0, 0, 0, 0, 0, 0,                 /* wait_ms */
        0, 0, 0, 0, 0, 0, 0, 0,                 /* fence */
        0, 0, 0, 0, 0, 0, 0, 0,                 /* waiter */
        0, 0, 0, 0,                             /* lock_delay_ms */
        6, 0, 'l', 'e', 'g', 'a', 'c', 'y',     /* client name */
    };
    struct fixture f, g;
    struct buf b = {0};
    struct walked w = {0};
    struct cmd c = c_open_by(5000, "legacy", "");
    int more;

    setup(&f);
    setup(&g);
    ASSERT_EQ(store_apply(f.s, 1, entry, sizeof entry, &f.fx), 0);
    f.index = 1;
    ASSERT_EQ(f.fx.n_results, 1);
    ASSERT_EQ(f.fx.results[0].status, 0);
    ASSERT_UEQ(f.fx.results[0].value, 1);
    ASSERT_STREQ(owner_of(&f, 1), "");
    ASSERT_EQ(store_list_sessions(f.s, 0, 10, list_owner, &w, &more), 0);
    ASSERT_STREQ(w.text, "1:legacy@;");
    cmds_encode(&b, &c, 1);
    ASSERT_UEQ(b.len, sizeof entry);
    ASSERT(memcmp(b.data, entry, sizeof entry) == 0);
    run(&g, c);
    assert_same_snapshots(&f, &g);
    buf_free(&b);
    teardown(&f);
    teardown(&g);
}

/* An entry whose OPEN_OWNED carries an owner the decoder refuses is a
 * malformed batch: refused whole, not even its well-formed commands
 * apply, and the applied index and digest stay where they were. */
TEST(entry_with_bad_owner_applies_nothing)
{
    struct fixture f;
    struct buf b = {0}, before = {0}, after = {0};
    struct cmd cmds[2] = {c_open(1000, "ok"), c_open_by(1000, "c", "alice")};
    uint64_t digest;

    setup(&f);
    open_session(&f);
    snap(&f, &before);
    digest = store_digest(f.s);
    cmds_encode(&b, cmds, 2);
    ASSERT_EQ(b.data[b.len - 7], 5); /* the owner's length, then "alice" */
    b.data[b.len - 7] = BATON_MAX_PRINCIPAL + 1;
    ASSERT_EQ(store_apply(f.s, f.index + 1, b.data, b.len, &f.fx), BATON_EMALFORMED);
    ASSERT_EQ(f.fx.n_results, 0);
    ASSERT_UEQ(store_applied_index(f.s), f.index);
    ASSERT_UEQ(store_digest(f.s), digest);
    snap(&f, &after);
    ASSERT(same_state(&before, &after));
    ASSERT_EQ(store_session_exists(f.s, 2), 0);
    buf_free(&b);
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
}

/* ---- snapshots and reopening --------------------------------------------- */

TEST(owner_in_snapshot_restore_and_reopen)
{
    struct fixture f, g;
    struct buf s1 = {0};
    char err[256];
    uint64_t a, b;

    setup(&f);
    setup(&g);
    populate(&f);
    a = open_by(&f, "alice");
    b = open_by(&f, "bob");
    grant(&f, b, 1, "bobs");
    snap(&f, &s1);
    ASSERT_EQ(store_restore(g.s, s1.data, s1.len), 0);
    g.index = f.index;
    assert_same_snapshots(&f, &g);
    ASSERT_STREQ(owner_of(&g, a), "alice");
    ASSERT_STREQ(owner_of(&g, b), "bob");
    ASSERT_STREQ(owner_of(&g, 1), "");
    store_close(g.s);
    ASSERT_EQ(store_open(g.dir, &g.s, err), 0);
    ASSERT_STREQ(owner_of(&g, a), "alice");
    /* Both go on alike. */
    ASSERT_UEQ(open_by(&f, "carol"), open_by(&g, "carol"));
    ASSERT_EQ(run(&f, c_expire(b)).status, run(&g, c_expire(b)).status);
    assert_same_effects(&f.fx, &g.fx);
    assert_same_snapshots(&f, &g);
    buf_free(&s1);
    teardown(&f);
    teardown(&g);
}

/* A restored session record whose owner length is over the limit or
 * beyond the record is malformed; the store is left as it was. */
TEST(restore_rejects_bad_owner_length)
{
    struct fixture f, g;
    struct buf s = {0}, before = {0}, after = {0};
    size_t v;

    setup(&f);
    setup(&g);
    open_by(&f, "alice"); /* record: 24 fixed bytes, 5, "alice", "client" */
    snap(&f, &s);
    v = session_value_at(&s, 1);
    ASSERT(v != 0);
    ASSERT_EQ(le_get_u32(s.data + v), 25 + 5 + 6);
    snap(&g, &before);
    s.data[v + 4 + 24] = BATON_MAX_PRINCIPAL + 1;
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    s.data[v + 4 + 24] = 5 + 6 + 1; /* one past the record's end */
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    snap(&g, &after);
    ASSERT(before.len == after.len && memcmp(before.data, after.data, before.len) == 0);
    s.data[v + 4 + 24] = 5 + 6; /* the whole rest is the owner: legal */
    ASSERT_EQ(store_restore(g.s, s.data, s.len), 0);
    ASSERT_STREQ(owner_of(&g, 1), "aliceclient");
    buf_free(&s);
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
    teardown(&g);
}

/* ---- upgrades from formats 3 and 4 --------------------------------------- */

/* The same entries, as a batond of format 4 would have applied them (no
 * owners): sessions, locks, queues, dedup entries, a member. */
static void old_history(struct fixture *f)
{
    populate_old(f);
    grant(f, open_session(f), 1, "late");
    ASSERT_UEQ(run(f, c_open(3000, "")).value, 6);
}

/*
 * A store left in format 4 opens as format 6: every session record gets
 * the anonymous owner, and the store is then the same, byte for byte and
 * digest for digest, as one that applied the same entries in format 6.
 * Both go on alike, owned sessions included.
 */
TEST(format4_store_upgraded_on_open)
{
    struct fixture f, g;
    struct buf s = {0};
    char err[256];

    setup(&f);
    setup(&g);
    old_history(&f);
    old_history(&g);
    ASSERT_EQ(store__downgrade(f.s, 4), 0);
    /* The records on disk are now a byte shorter each (no owner byte). */
    snap(&f, &s);
    ASSERT_EQ(le_get_u32(s.data + session_value_at(&s, 1)), 24 + 4);
    store_close(f.s);
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    assert_same_snapshots(&f, &g);
    for (uint64_t id = 1; id <= 6; id++) ASSERT_STREQ(owner_of(&f, id), "");
    /* Opening it again changes nothing. */
    store_close(f.s);
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    assert_same_snapshots(&f, &g);
    ASSERT_UEQ(open_by(&f, "alice"), open_by(&g, "alice"));
    ASSERT_EQ(run(&f, c_expire(2)).status, run(&g, c_expire(2)).status);
    assert_same_effects(&f.fx, &g.fx);
    assert_same_snapshots(&f, &g);
    buf_free(&s);
    teardown(&f);
    teardown(&g);
}

/* Many sessions, so that rewriting their records splits pages while the
 * upgrade walks them: every one is rewritten exactly once. */
TEST(format4_upgrade_of_many_sessions)
{
    enum { N = 3000, PER_ENTRY = 1000 };
    static struct cmd cmds[PER_ENTRY];
    char name[BATON_MAX_CLIENT_NAME + 1];
    struct fixture f, g;
    char err[256];

    setup(&f);
    setup(&g);
    memset(name, 'n', BATON_MAX_CLIENT_NAME);
    name[BATON_MAX_CLIENT_NAME] = 0;
    for (int i = 0; i < PER_ENTRY; i++) cmds[i] = c_open(1000, name);
    for (int e = 0; e < N / PER_ENTRY; e++) {
        apply_n(&f, cmds, PER_ENTRY);
        apply_n(&g, cmds, PER_ENTRY);
    }
    ASSERT_EQ(store__downgrade(f.s, 4), 0);
    store_close(f.s);
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    assert_same_snapshots(&f, &g);
    ASSERT_EQ(count_in(&f, DB_SESSIONS), N);
    teardown(&f);
    teardown(&g);
}

/* A format 3 store (no members table either) upgrades the same way. */
TEST(format3_store_upgraded_to_the_same_bytes)
{
    struct fixture f, g;
    char err[256];

    setup(&f);
    setup(&g);
    old_history(&f);
    old_history(&g);
    ASSERT_EQ(run(&f, c_member(4, NULL)).status, 0);
    ASSERT_EQ(run(&g, c_member(4, NULL)).status, 0);
    ASSERT_EQ(store__downgrade(f.s, 3), 0);
    store_close(f.s);
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    assert_same_snapshots(&f, &g);
    teardown(&f);
    teardown(&g);
}

TEST(downgrade_hook_takes_only_old_formats)
{
    struct fixture f;

    setup(&f);
    ASSERT_EQ(store__downgrade(f.s, 2), BATON_EINVAL);
    ASSERT_EQ(store__downgrade(f.s, 9), BATON_EINVAL); /* the current format */
    teardown(&f);
}

/*
 * A format 4 snapshot (taken by a node not yet upgraded, or the latest one
 * raft keeps on disk) restores as the format 6 state of the same entries:
 * the same snapshot bytes and digest as the store it came from.
 */
TEST(format4_snapshot_restores)
{
    struct fixture f, g;
    struct buf s5 = {0}, s4 = {0};

    setup(&f);
    setup(&g);
    old_history(&f);
    snap(&f, &s5);
    snap_as_format(&s5, 4, &s4);
    ASSERT_EQ(le_get_u32(s4.data + 4), 4);
    ASSERT_ULT(s4.len, s5.len); /* a byte less per session; no lost, nonce or holders tables */
    ASSERT_EQ(store_restore(g.s, s4.data, s4.len), 0);
    g.index = f.index;
    assert_same_snapshots(&f, &g);
    ASSERT_STREQ(owner_of(&g, 6), "");
    ASSERT_UEQ(open_by(&f, "alice"), open_by(&g, "alice"));
    assert_same_snapshots(&f, &g);
    buf_free(&s5);
    buf_free(&s4);
    teardown(&f);
    teardown(&g);
}

/* A format 4 session record longer than a client name allows, or shorter
 * than its fixed part, is malformed. */
TEST(format4_snapshot_rejects_bad_session_records)
{
    struct fixture f, g;
    struct buf s5 = {0}, s4 = {0}, bad = {0};
    size_t v;

    setup(&f);
    setup(&g);
    run(&f, c_open(1000, "abc"));
    snap(&f, &s5);
    snap_as_format(&s5, 4, &s4);
    v = session_value_at(&s4, 1);
    ASSERT_EQ(le_get_u32(s4.data + v), 24 + 3);
    /* 23 bytes: cut the name and one fixed byte. */
    ASSERT_EQ(buf_put(&bad, s4.data, v), 0);
    ASSERT_EQ(buf_put_u32(&bad, 23), 0);
    ASSERT_EQ(buf_put(&bad, s4.data + v + 4, 23), 0);
    ASSERT_EQ(buf_put(&bad, s4.data + v + 4 + 27, s4.len - v - 4 - 27), 0);
    ASSERT_EQ(store_restore(g.s, bad.data, bad.len), BATON_EMALFORMED);
    /* A 65-byte name. */
    buf_reset(&bad);
    ASSERT_EQ(buf_put(&bad, s4.data, v), 0);
    ASSERT_EQ(buf_put_u32(&bad, 24 + BATON_MAX_CLIENT_NAME + 1), 0);
    ASSERT_EQ(buf_put(&bad, s4.data + v + 4, 24), 0);
    for (int i = 0; i < BATON_MAX_CLIENT_NAME + 1; i++) ASSERT_EQ(buf_put_u8(&bad, 'n'), 0);
    ASSERT_EQ(buf_put(&bad, s4.data + v + 4 + 27, s4.len - v - 4 - 27), 0);
    ASSERT_EQ(store_restore(g.s, bad.data, bad.len), BATON_EMALFORMED);
    ASSERT_UEQ(store_applied_index(g.s), 0);
    /* The record as it was restores. */
    ASSERT_EQ(store_restore(g.s, s4.data, s4.len), 0);
    buf_free(&s5);
    buf_free(&s4);
    buf_free(&bad);
    teardown(&f);
    teardown(&g);
}

int main(int argc, char **argv)
{
    fsm_main_begin(argc, argv);
    RUN(owner_recorded_and_read);
    RUN(owner_kept_through_record_rewrites);
    RUN(old_open_session_entry_still_applies);
    RUN(entry_with_bad_owner_applies_nothing);
    RUN(owner_in_snapshot_restore_and_reopen);
    RUN(restore_rejects_bad_owner_length);
    RUN(format4_store_upgraded_on_open);
    RUN(format4_upgrade_of_many_sessions);
    RUN(format3_store_upgraded_to_the_same_bytes);
    RUN(downgrade_hook_takes_only_old_formats);
    RUN(format4_snapshot_restores);
    RUN(format4_snapshot_rejects_bad_session_records);
    return fsm_main_end();
}
