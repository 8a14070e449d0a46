/*
 * test_fsm_check.c -- the lock state machine's content check
 * (storage/store.h, "Content hash"; storage/cmd.h, "Content checks"): what
 * a CHECK entry records, that equal states hash alike however they were
 * reached, and that a byte changed in the data file behind LMDB's back --
 * which the state digest cannot see -- changes the hash.
 *
 * Each test runs on stores of its own (tests/unit/fsm_fixture.h).
 */
#include <stdio.h>

#include "tests/lib/corrupt.h"
#include "tests/unit/fsm_fixture.h"

/* FNV-1a 64 as store.h spells it out, written here again so that the test
 * checks the documented definition rather than the store's own code. */
static uint64_t fnv1a64(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;

    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* Apply a CHECK as the next entry: its result, and the check it recorded,
 * which must be at that entry's index. */
static uint64_t check(struct fixture *f)
{
    struct cmd_result r = run(f, c_check());
    uint64_t index, hash;

    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_OK);
    ASSERT_UEQ(f->fx.n_fx, 0);
    UNCHANGED(f);
    store_last_check(f->s, &index, &hash);
    ASSERT_UEQ(index, f->index);
    ASSERT(hash != 0);
    return hash;
}

TEST(check_hashes_the_snapshot_bytes)
{
    struct fixture f;
    struct buf before = {0}, after = {0};
    uint64_t index, hash, now;

    setup(&f);
    store_last_check(f.s, &index, &hash);
    ASSERT_UEQ(index, 0);
    ASSERT_UEQ(hash, 0);
    populate(&f);
    snap(&f, &before);
    hash = check(&f);
    /* A CHECK changes no state: only the applied index and the digest in
     * the header moved. */
    snap(&f, &after);
    ASSERT(same_state(&before, &after));
    /* The hash is FNV-1a 64 of the bytes a snapshot taken right after the
     * entry holds, header (index, digest) included. */
    ASSERT_UEQ(hash, fnv1a64(after.data, after.len));
    ASSERT_EQ(store_content_hash(f.s, &now), 0);
    ASSERT_UEQ(now, hash);
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
}

TEST(equal_states_hash_alike_and_others_do_not)
{
    struct fixture f, g, h;
    uint64_t hf, hg, hh;

    setup(&f);
    setup(&g);
    setup(&h);
    populate(&f);
    populate(&g);
    populate(&h);
    hf = check(&f);
    ASSERT_UEQ(hf, check(&g));
    ASSERT_UEQ(hf, check(&h));
    /* The same number of entries, one lock name apart: the same index and
     * another state. */
    grant(&f, open_session(&f), 1, "gamma");
    grant(&g, open_session(&g), 1, "gamma");
    grant(&h, open_session(&h), 1, "omega");
    hf = check(&f);
    hg = check(&g);
    hh = check(&h);
    ASSERT_UEQ(f.index, h.index);
    ASSERT_UEQ(hf, hg);
    ASSERT(hf != hh);
    teardown(&f);
    teardown(&g);
    teardown(&h);
}

/* A store that installed a snapshot hashes like the one that applied the
 * entries: the check compares content, not history. */
TEST(restored_state_hashes_like_the_original)
{
    struct fixture f, g;
    struct buf b = {0};

    setup(&f);
    setup(&g);
    populate(&f);
    snap(&f, &b);
    ASSERT_EQ(store_restore(g.s, b.data, b.len), 0);
    g.index = f.index;
    ASSERT_UEQ(check(&f), check(&g));
    buf_free(&b);
    teardown(&f);
    teardown(&g);
}

/* The hash covers the state after the whole entry, whatever else it holds. */
TEST(check_in_a_batch_sees_the_whole_entry)
{
    struct fixture f, g;
    uint64_t s, hash, index, now;
    struct cmd cmds[2];

    setup(&f);
    setup(&g);
    s = open_session(&f);
    ASSERT_UEQ(open_session(&g), s);
    cmds[0] = c_check();
    cmds[1] = c_acq(s, 1, BATON_WAIT_TRY, "delta");
    apply_n(&f, cmds, 2);
    ASSERT_EQ(f.fx.results[1].kind, RESULT_GRANTED);
    store_last_check(f.s, &index, &hash);
    ASSERT_UEQ(index, f.index);
    ASSERT_EQ(store_content_hash(f.s, &now), 0);
    ASSERT_UEQ(hash, now);
    /* Another store applying the same entries records the same. */
    apply_n(&g, cmds, 2);
    store_last_check(g.s, &index, &now);
    ASSERT_UEQ(index, f.index);
    ASSERT_UEQ(now, hash);
    teardown(&f);
    teardown(&g);
}

/* The last check lives in memory: a reopened store has none, and raft's
 * replay of the CHECK entry (not above the applied index) computes
 * nothing. */
TEST(check_is_not_kept_or_replayed)
{
    struct fixture f;
    struct buf b = {0};
    uint64_t index, hash;
    size_t start;
    char err[256];
    struct cmd c = c_check();

    setup(&f);
    populate(&f);
    check(&f);
    store_close(f.s);
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    store_last_check(f.s, &index, &hash);
    ASSERT_UEQ(index, 0);
    ASSERT_UEQ(hash, 0);
    ASSERT_EQ(cmd_batch_begin(&b, &start), 0);
    ASSERT_EQ(cmd_batch_add(&b, &c), 0);
    cmd_batch_end(&b, start, 1);
    ASSERT_EQ(store_apply(f.s, f.index, b.data, b.len, &f.fx), 0);
    store_last_check(f.s, &index, &hash);
    ASSERT_UEQ(index, 0);
    buf_free(&b);
    teardown(&f);
}

/*
 * The case the check exists for: a byte of a lock's record changed in
 * data.mdb behind LMDB's back. The store opens and its digest still equals
 * its twin's (the digest follows the entries, not the content), but the
 * content hash at the next CHECK differs. The byte changed is the low byte
 * of the lock's grant index (offset 24 of its 41-byte record,
 * storage/store_int.h, struct lock_rec), which nothing but lock-info reads.
 */
TEST(one_byte_changed_on_disk_changes_the_hash)
{
    struct fixture f, g;
    char path[256], err[256];

    setup(&f);
    setup(&g);
    populate(&f);
    populate(&g);
    ASSERT_UEQ(check(&f), check(&g));
    store_close(f.s);
    snprintf(path, sizeof path, "%s/data.mdb", f.dir);
    ASSERT_GE(corrupt_lmdb_value(path, "alpha", 5, 18, 9), 1);
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    ASSERT_UEQ(store_digest(f.s), store_digest(g.s));
    ASSERT_UEQ(store_applied_index(f.s), store_applied_index(g.s));
    ASSERT(check(&f) != check(&g));
    teardown(&f);
    teardown(&g);
}

int main(int argc, char **argv)
{
    fsm_main_begin(argc, argv);
    RUN(check_hashes_the_snapshot_bytes);
    RUN(equal_states_hash_alike_and_others_do_not);
    RUN(restored_state_hashes_like_the_original);
    RUN(check_in_a_batch_sees_the_whole_entry);
    RUN(check_is_not_kept_or_replayed);
    RUN(one_byte_changed_on_disk_changes_the_hash);
    return fsm_main_end();
}
