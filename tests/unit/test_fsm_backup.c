/*
 * test_fsm_backup.c -- backup and restore (docs/operations.md, "Backup and
 * restore"): the snapshot file's format (proto/backup.h: round trip, a
 * truncated file, a flipped byte, a wrong magic or version), a store
 * restored from a backup (store_restore_backup: the same locks, queues,
 * sessions, lost holds and digest; the new applied index; no members
 * table; the next fence above every saved one), and the two snapshot
 * slots a backup and raft's snapshot use at once.
 */
#include "tests/unit/fsm_fixture.h"

#include <stdlib.h>

#include "proto/backup.h"
#include "proto/errmsg.h"

/* The snapshot file of f's state, taken in term 7. */
static void backup_of(struct fixture *f, struct buf *file)
{
    struct backup_header h = {.term = 7};
    uint32_t format;
    size_t start;

    buf_reset(file);
    ASSERT_EQ(backup_start(file, &start), 0);
    ASSERT_EQ(store_snapshot(f->s, file), 0);
    ASSERT_EQ(store_snapshot_header(file->data + start + BACKUP_HEADER_LEN,
                                    file->len - start - BACKUP_HEADER_LEN, &format, &h.index,
                                    &h.digest),
              0);
    h.store_format = format;
    ASSERT_EQ(backup_seal(file, start, &h), 0);
}

/* The snapshot in a (header and all) with its members table emptied, into
 * out: what a restored store holds. */
static void without_members(const struct buf *a, struct buf *out)
{
    size_t off = SNAP_HDR;

    buf_reset(out);
    ASSERT_EQ(buf_put(out, a->data, SNAP_HDR), 0);
    for (int db = 0; db < N_DB; db++) {
        uint32_t n = le_get_u32(a->data + off);
        size_t start = off;

        off += 4;
        for (uint32_t i = 0; i < n; i++) {
            off += 4 + le_get_u32(a->data + off);
            off += 4 + le_get_u32(a->data + off);
        }
        if (db == DB_MEMBERS)
            ASSERT_EQ(buf_put_u32(out, 0), 0);
        else
            ASSERT_EQ(buf_put(out, a->data + start, off - start), 0);
    }
    ASSERT_EQ(off, a->len);
}

/* The meta table's next fence in snapshot a (DB_META is its first table),
 * or its place to overwrite: the offset of its 8-byte value. */
static size_t next_fence_at(const struct buf *a)
{
    size_t off = SNAP_HDR + 4;
    uint32_t n = le_get_u32(a->data + SNAP_HDR);

    for (uint32_t i = 0; i < n; i++) {
        uint32_t klen = le_get_u32(a->data + off);
        const uint8_t *key = a->data + off + 4;

        off += 4 + klen;
        if (klen == 10 && memcmp(key, "next_fence", 10) == 0)
            return off + 4;
        off += 4 + le_get_u32(a->data + off);
    }
    FAIL("no next_fence in the snapshot");
    return 0;
}

TEST(file_roundtrip)
{
    struct fixture f;
    struct buf file = {0}, s = {0};
    struct backup_header h;
    const uint8_t *body;
    char err[BATON_ERRMSG_SIZE];

    setup(&f);
    populate(&f);
    backup_of(&f, &file);
    snap(&f, &s);
    ASSERT_EQ(backup_check(file.data, file.len, &h, &body, err), 0);
    ASSERT_UEQ(h.version, BACKUP_VERSION);
    ASSERT_UEQ(h.index, f.index);
    ASSERT_UEQ(h.term, 7);
    ASSERT_UEQ(h.digest, store_digest(f.s));
    ASSERT_UEQ(h.body_len, s.len);
    ASSERT_EQ(file.len, BACKUP_HEADER_LEN + s.len + BACKUP_TRAILER_LEN);
    ASSERT(memcmp(body, s.data, s.len) == 0);
    ASSERT(memcmp(file.data, "BATONSNP", 8) == 0);
    ASSERT_EQ(backup_read_header(file.data, BACKUP_HEADER_LEN, &h, err), 0);
    buf_free(&file);
    buf_free(&s);
    teardown(&f);
}

TEST(file_truncated_or_too_long)
{
    struct fixture f;
    struct buf file = {0};
    struct backup_header h;
    const uint8_t *body;
    char err[BATON_ERRMSG_SIZE];

    setup(&f);
    populate(&f);
    backup_of(&f, &file);
    for (size_t n = 0; n < file.len; n += (n < 64 || n + 64 > file.len) ? 1 : 97)
        ASSERT_EQ(backup_check(file.data, n, &h, &body, err), BATON_EMALFORMED);
    ASSERT_EQ(backup_check(file.data, 10, &h, &body, err), BATON_EMALFORMED);
    ASSERT(strstr(err, "truncated") != NULL);
    ASSERT_EQ(buf_put_u8(&file, 0), 0);
    ASSERT_EQ(backup_check(file.data, file.len, &h, &body, err), BATON_EMALFORMED);
    ASSERT(strstr(err, "longer") != NULL);
    buf_free(&file);
    teardown(&f);
}

TEST(file_flipped_byte)
{
    struct fixture f;
    struct buf file = {0};
    struct backup_header h;
    const uint8_t *body;
    char err[BATON_ERRMSG_SIZE];

    setup(&f);
    populate(&f);
    backup_of(&f, &file);
    for (size_t i = 0; i < file.len; i++) {
        file.data[i] ^= 0x10;
        if (backup_check(file.data, file.len, &h, &body, err) == 0)
            FAIL("a file with byte %zu flipped passed the check", i);
        file.data[i] ^= 0x10;
    }
    file.data[BACKUP_HEADER_LEN + 30] ^= 1;
    ASSERT_EQ(backup_check(file.data, file.len, &h, &body, err), BATON_EMALFORMED);
    ASSERT(strstr(err, "SHA-256") != NULL);
    buf_free(&file);
    teardown(&f);
}

TEST(file_wrong_magic_or_version)
{
    struct fixture f;
    struct buf file = {0};
    struct backup_header h;
    const uint8_t *body;
    char err[BATON_ERRMSG_SIZE];

    setup(&f);
    populate(&f);
    backup_of(&f, &file);
    memcpy(file.data, "BATONSNQ", 8);
    ASSERT_EQ(backup_check(file.data, file.len, &h, &body, err), BATON_EMALFORMED);
    ASSERT(strstr(err, "magic") != NULL);
    memcpy(file.data, "BATONSNP", 8);
    le_put_u32(file.data + 8, BACKUP_VERSION + 1);
    ASSERT_EQ(backup_check(file.data, file.len, &h, &body, err), BATON_EVERSION);
    ASSERT(strstr(err, "version 2") != NULL);
    buf_free(&file);
    teardown(&f);
}

/* Every fence a store ever granted is below this one. */
static uint64_t max_fence(struct fixture *f, const char *const *names)
{
    uint64_t m = 0;

    for (; *names != NULL; names++) {
        struct msg_lock_info_r i = info(f, *names);
        if (i.fence > m) m = i.fence;
        store_lock_info_free(&i);
    }
    return m;
}

TEST(store_restore_backup_keeps_the_state)
{
    static const char *const names[] = {"alpha", "beta", "gamma", NULL};
    struct fixture f, g;
    struct buf file = {0}, a = {0}, b = {0}, want = {0};
    struct backup_header h;
    const uint8_t *body;
    uint64_t saved_max, sess;
    char err[BATON_ERRMSG_SIZE];

    setup(&f);
    setup(&g);
    populate(&f);
    populate_lost(&f);
    backup_of(&f, &file);
    ASSERT_EQ(backup_check(file.data, file.len, &h, &body, err), 0);
    ASSERT_EQ(store_restore_backup(g.s, body, h.body_len, 1, 0, NULL, 0, NULL), 0);
    ASSERT_UEQ(store_applied_index(g.s), 1);
    ASSERT_UEQ(store_digest(g.s), store_digest(f.s));

    /* The same state but the members table, and the new applied index. */
    snap(&f, &a);
    snap(&g, &b);
    without_members(&a, &want);
    /* The next fence: the saved one plus the margin (store.h). */
    ASSERT_UEQ(le_get_u64(b.data + next_fence_at(&b)),
               le_get_u64(want.data + next_fence_at(&want)) + STORE_RESTORE_FENCE_MARGIN);
    le_put_u64(want.data + next_fence_at(&want), le_get_u64(b.data + next_fence_at(&b)));
    ASSERT(same_state(&want, &b));
    ASSERT_UEQ(le_get_u64(b.data + 8), 1);
    ASSERT_GT(snap_count(&a, DB_MEMBERS), 0);
    ASSERT_EQ(snap_count(&b, DB_MEMBERS), 0);
    for (const char *const *n = names; *n != NULL; n++) {
        struct msg_lock_info_r x = info(&f, *n), y = info(&g, *n);
        ASSERT_UEQ(x.holder_session, y.holder_session);
        ASSERT_UEQ(x.fence, y.fence);
        ASSERT_EQ(x.n_waiters, y.n_waiters);
        for (uint32_t i = 0; i < x.n_waiters; i++) {
            ASSERT_UEQ(x.waiters[i].session, y.waiters[i].session);
            ASSERT_UEQ(x.waiters[i].waiter, y.waiters[i].waiter);
        }
        store_lock_info_free(&x);
        store_lock_info_free(&y);
    }

    /* The restored store goes on from index 2; its next fence is above
     * every saved one, and its sessions' ids go on above the saved ones. */
    saved_max = max_fence(&f, names);
    ASSERT_GT(saved_max, 0);
    g.index = 1;
    sess = open_session(&g);
    ASSERT_GT(grant(&g, sess, 1, "delta"), saved_max);
    ASSERT_GT(sess, 4);

    /* A floor above the margin wins; one below it does not. */
    {
        struct fixture k;
        uint64_t next = 0;

        setup(&k);
        ASSERT_EQ(
            store_restore_backup(k.s, body, h.body_len, 1, UINT64_C(1) << 50, NULL, 0, &next), 0);
        ASSERT_UEQ(next, UINT64_C(1) << 50);
        k.index = 1;
        sess = open_session(&k);
        ASSERT_UEQ(grant(&k, sess, 1, "delta"), UINT64_C(1) << 50);
        teardown(&k);
        setup(&k);
        ASSERT_EQ(store_restore_backup(k.s, body, h.body_len, 1, 5, NULL, 0, &next), 0);
        ASSERT_GT(next, STORE_RESTORE_FENCE_MARGIN);
        teardown(&k);
    }

    /* A second restore, or one into a store that applied entries, is refused. */
    ASSERT_EQ(store_restore_backup(g.s, body, h.body_len, 1, 0, NULL, 0, NULL), BATON_EINVAL);
    ASSERT_EQ(store_restore_backup(f.s, body, h.body_len, 1, 0, NULL, 0, NULL), BATON_EINVAL);
    buf_free(&file);
    buf_free(&a);
    buf_free(&b);
    buf_free(&want);
    teardown(&f);
    teardown(&g);
}

/* The new cluster's members given to the restore are its members table,
 * each recorded as started, in place of the saved one: a member without a
 * client address the table may hold (id 0, an empty or bad one) is left
 * out; the digest is the saved one all the same. */
TEST(store_restore_backup_records_the_members)
{
    static const struct store_member members[] = {
        {1, "127.0.0.1:7001"}, {3, "10.0.0.3:7003"}, {4, ""}, {5, "no port"}, {0, "127.0.0.1:9"}};
    struct fixture f, g;
    struct buf file = {0}, b = {0};
    struct backup_header h;
    const uint8_t *body;
    char err[BATON_ERRMSG_SIZE], addr[BATON_MAX_ADDR + 1];
    uint32_t ids[8];

    setup(&f);
    setup(&g);
    populate(&f);
    backup_of(&f, &file);
    ASSERT_EQ(backup_check(file.data, file.len, &h, &body, err), 0);
    ASSERT_EQ(store_restore_backup(g.s, body, h.body_len, 7, 0, members,
                                   sizeof members / sizeof *members, NULL),
              0);
    ASSERT_UEQ(store_digest(g.s), store_digest(f.s));
    ASSERT_EQ(store_member_ids(g.s, ids, 8), 2);
    ASSERT_EQ(ids[0], 1);
    ASSERT_EQ(ids[1], 3);
    ASSERT_EQ(store_member_addr(g.s, 1, addr, sizeof addr), 1);
    ASSERT_STREQ(addr, "127.0.0.1:7001");
    ASSERT_EQ(store_member_addr(g.s, 3, addr, sizeof addr), 1);
    ASSERT_STREQ(addr, "10.0.0.3:7003");
    snap(&g, &b);
    ASSERT_EQ(snap_count(&b, DB_MEMBERS), 2);
    buf_free(&file);
    buf_free(&b);
    teardown(&f);
    teardown(&g);
}

TEST(store_restore_backup_refuses_bad_bodies)
{
    struct fixture f, g;
    struct buf s = {0};

    setup(&f);
    setup(&g);
    populate(&f);
    snap(&f, &s);
    ASSERT_EQ(store_restore_backup(g.s, s.data, s.len, 0, 0, NULL, 0, NULL), BATON_EINVAL);
    ASSERT_EQ(store_restore_backup(g.s, s.data, s.len - 1, 1, 0, NULL, 0, NULL), BATON_EMALFORMED);
    s.data[0] ^= 1;
    ASSERT_EQ(store_restore_backup(g.s, s.data, s.len, 1, 0, NULL, 0, NULL), BATON_EMALFORMED);
    ASSERT_UEQ(store_applied_index(g.s), 0);
    {
        uint32_t format;
        uint64_t applied, digest;
        ASSERT_EQ(store_snapshot_header(s.data, s.len, &format, &applied, &digest),
                  BATON_EMALFORMED);
        s.data[0] ^= 1;
        ASSERT_EQ(store_snapshot_header(s.data, s.len, &format, &applied, &digest), 0);
        ASSERT_UEQ(applied, f.index);
        ASSERT_UEQ(digest, store_digest(f.s));
        ASSERT_EQ(store_snapshot_header(s.data, 23, &format, &applied, &digest),
                  BATON_EMALFORMED);
    }
    buf_free(&s);
    teardown(&f);
    teardown(&g);
}

/* A backup's dump and raft's may be open at once; a third is refused. */
TEST(two_snapshots_at_once)
{
    struct fixture f;
    store_snap *a, *b, *c;
    struct buf x = {0}, y = {0};

    setup(&f);
    populate(&f);
    ASSERT_EQ(store_snapshot_begin(f.s, &a), 0);
    ASSERT_EQ(store_snapshot_begin(f.s, &b), 0);
    ASSERT_EQ(store_snapshot_begin(f.s, &c), BATON_EBUSY);
    ASSERT_EQ(store_snapshot_write(a, &x), 0);
    ASSERT_EQ(store_snapshot_write(b, &y), 0);
    ASSERT(x.len == y.len && memcmp(x.data, y.data, x.len) == 0);
    store_snapshot_end(a);
    ASSERT_EQ(store_snapshot_begin(f.s, &c), 0);
    store_snapshot_end(c);
    store_snapshot_end(b);
    buf_free(&x);
    buf_free(&y);
    teardown(&f);
}

int main(int argc, char **argv)
{
    fsm_main_begin(argc, argv);
    RUN(file_roundtrip);
    RUN(file_truncated_or_too_long);
    RUN(file_flipped_byte);
    RUN(file_wrong_magic_or_version);
    RUN(store_restore_backup_keeps_the_state);
    RUN(store_restore_backup_records_the_members);
    RUN(store_restore_backup_refuses_bad_bodies);
    RUN(two_snapshots_at_once);
    return fsm_main_end();
}
