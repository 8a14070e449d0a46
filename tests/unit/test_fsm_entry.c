/*
 * test_fsm_entry.c -- raft/fsm.c's step for one committed entry
 * (fsm_apply_entry) over a real store: an entry this binary cannot decode
 * -- a command type byte it does not know (a command of a later feature
 * level), another batch format, bad framing -- is a fault that leaves the
 * store exactly as it was, its applied index and digest included; it is
 * never applied as an empty batch. batond's own empty entry is not one.
 */
#include <stdio.h>
#include <string.h>

#include "raft/fsm.h"
#include "tests/unit/fsm_fixture.h"

/* The applied hook: count the entries it saw. */
static void count_applied(void *data, const struct effects *fx)
{
    (void)fx;
    (*(int *)data)++;
}

/* An fsm over the fixture's store, as the node sets one up. */
static void fsm_setup(struct fixture *f, struct fsm *m, int *applied)
{
    setup(f);
    open_session(f);
    fsm_init(m, f->s, count_applied, applied);
}

/* Frame a batch as a raft entry (fsm_entry_encode) into b. */
static void frame(struct buf *b, const void *payload, size_t len)
{
    ASSERT_EQ(buf_reserve(b, fsm_entry_size(len)), 0);
    fsm_entry_encode(b->data, payload, len);
    b->len = fsm_entry_size(len);
}

/* Apply raft entry bytes as the next index and expect the fault: nothing
 * changed, the hook not called, f->fault and its reason set. */
static void expect_refused(struct fixture *f, struct fsm *m, const int *applied,
                           const struct buf *entry, const char *reason)
{
    uint64_t index = store_applied_index(f->s), digest = store_digest(f->s);
    int before = *applied;

    ASSERT_NE(fsm_apply_entry(m, index + 1, entry->data, entry->len), 0);
    ASSERT_EQ(m->fault, BATON_EMALFORMED);
    ASSERT_UEQ(m->fault_index, index + 1);
    if (strstr(m->fault_why, reason) == NULL)
        FAIL("fault_why \"%s\" does not say \"%s\"", m->fault_why, reason);
    ASSERT_UEQ(store_applied_index(f->s), index);
    ASSERT_UEQ(store_digest(f->s), digest);
    ASSERT_EQ(*applied, before);
    /* Retried (a leader retries at every commit): refused again. */
    ASSERT_NE(fsm_apply_entry(m, index + 1, entry->data, entry->len), 0);
    ASSERT_UEQ(store_applied_index(f->s), index);
}

TEST(unknown_type_byte_is_a_fault)
{
    struct fixture f;
    struct fsm m;
    struct buf batch = {0}, entry = {0};
    struct cmd c = c_acq(1, 1, 0, "L");
    int applied = 0;

    fsm_setup(&f, &m, &applied);
    cmds_encode(&batch, &c, 1);
    batch.data[5] = 0x7e; /* the command's type byte: no row has it */
    ASSERT(cmd_lookup(0x7e) == NULL);
    frame(&entry, batch.data, batch.len);
    expect_refused(&f, &m, &applied, &entry, "type byte 126, unknown to this binary");
    buf_free(&batch);
    buf_free(&entry);
    fsm_close(&m);
    teardown(&f);
}

/* A batch that announces more commands than it holds: the reason is read
 * from within the batch, never past its end. */
TEST(batch_short_of_its_count_is_a_fault)
{
    struct fixture f;
    struct fsm m;
    struct buf batch = {0}, entry = {0};
    char name[201];
    struct cmd c;
    int applied = 0;

    /* a long name, so that the batch's length allows a second command */
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    c = c_acq(1, 1, 0, name);
    fsm_setup(&f, &m, &applied);
    cmds_encode(&batch, &c, 1);
    le_put_u32(batch.data + 1, 2); /* the count: one more than there is */
    frame(&entry, batch.data, batch.len);
    expect_refused(&f, &m, &applied, &entry, "the batch ends after 1 of the 2 commands");
    buf_free(&batch);
    buf_free(&entry);
    fsm_close(&m);
    teardown(&f);
}

TEST(bad_format_is_a_fault)
{
    struct fixture f;
    struct fsm m;
    struct buf batch = {0}, entry = {0};
    struct cmd c = c_acq(1, 1, 0, "L");
    int applied = 0;

    fsm_setup(&f, &m, &applied);
    cmds_encode(&batch, &c, 1);
    batch.data[0] = CMD_FORMAT + 1;
    frame(&entry, batch.data, batch.len);
    expect_refused(&f, &m, &applied, &entry, "batch format 3");
    buf_free(&batch);
    buf_free(&entry);
    fsm_close(&m);
    teardown(&f);
}

TEST(bad_framing_is_a_fault)
{
    struct fixture f;
    struct fsm m;
    struct buf entry = {0};
    int applied = 0;

    fsm_setup(&f, &m, &applied);
    frame(&entry, "\x02\0\0\0\0", 5);
    le_put_u64(entry.data, 1000); /* a length past the entry's end */
    expect_refused(&f, &m, &applied, &entry, "not in batond's entry framing");
    entry.len = 4; /* shorter than the length field */
    expect_refused(&f, &m, &applied, &entry, "not in batond's entry framing");
    buf_free(&entry);
    fsm_close(&m);
    teardown(&f);
}

/* A well-formed entry after a refused one clears the fault; batond's empty
 * entry (node_snapshot_now) applies as nothing. */
TEST(good_and_empty_entries_apply)
{
    struct fixture f;
    struct fsm m;
    struct buf batch = {0}, entry = {0}, bad = {0};
    struct cmd c = c_acq(1, 1, 0, "L");
    uint64_t index;
    int applied = 0;

    fsm_setup(&f, &m, &applied);
    cmds_encode(&batch, &c, 1);
    frame(&bad, batch.data, batch.len);
    bad.data[8 + 5] = 0x7e;
    expect_refused(&f, &m, &applied, &bad, "unknown to this binary");
    index = store_applied_index(f.s);
    frame(&entry, batch.data, batch.len);
    ASSERT_EQ(fsm_apply_entry(&m, index + 1, entry.data, entry.len), 0);
    ASSERT_EQ(m.fault, 0);
    ASSERT_EQ(applied, 1);
    ASSERT_UEQ(store_applied_index(f.s), index + 1);
    ASSERT_EQ(m.fx.n_results, 1);
    entry.len = 0;
    frame(&entry, "", 0);
    ASSERT_EQ(fsm_apply_entry(&m, index + 2, entry.data, entry.len), 0);
    ASSERT_EQ(applied, 2);
    ASSERT_UEQ(store_applied_index(f.s), index + 2);
    ASSERT_EQ(m.fx.n_results, 0);
    buf_free(&batch);
    buf_free(&entry);
    buf_free(&bad);
    fsm_close(&m);
    teardown(&f);
}

/* SET_LEVEL (the cluster's feature level, storage/level.c): 1 until
 * raised, never lowered, carried by snapshots; a snapshot of a level-1
 * store is what it was before the level existed (no "level" key). */
TEST(set_level_raises_only)
{
    struct fixture f, g;
    struct buf s1 = {0};
    struct cmd_result r;

    setup(&f);
    setup(&g);
    ASSERT_EQ(store_level(f.s), 1);
    snap(&f, &s1);
    ASSERT_EQ(snap_count(&s1, DB_META), 3);
    buf_reset(&s1);
    r = run(&f, cmd_of(CMD_SET_LEVEL, 0, 0, NULL));
    ASSERT_EQ(r.status, BATON_EINVAL);
    r = run(&f, cmd_of(CMD_SET_LEVEL, 2, 0, NULL));
    ASSERT_EQ(r.status, 0);
    ASSERT_UEQ(r.value, 2);
    ASSERT_EQ(store_level(f.s), 2);
    r = run(&f, cmd_of(CMD_SET_LEVEL, 1, 0, NULL));
    ASSERT_EQ(r.status, 0);
    ASSERT_UEQ(r.value, 2);
    ASSERT_EQ(store_level(f.s), 2);
    snap(&f, &s1);
    ASSERT_EQ(snap_count(&s1, DB_META), 4);
    ASSERT_EQ(store_restore(g.s, s1.data, s1.len), 0);
    ASSERT_EQ(store_level(g.s), 2);
    buf_free(&s1);
    teardown(&f);
    teardown(&g);
}

int main(int argc, char **argv)
{
    fsm_main_begin(argc, argv);
    RUN(set_level_raises_only);
    RUN(unknown_type_byte_is_a_fault);
    RUN(batch_short_of_its_count_is_a_fault);
    RUN(bad_format_is_a_fault);
    RUN(bad_framing_is_a_fault);
    RUN(good_and_empty_entries_apply);
    return fsm_main_end();
}
