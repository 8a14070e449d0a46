/*
 * test_fsm_snapshot.c -- the lock state machine (storage/store.h):
 * store_snapshot and store_restore (what they keep, what a restore rejects),
 * persistence across close, crash and reboot, the map's growth, the
 * snapshot in steps whose dump runs on another thread, and the state
 * digest.
 *
 * Each test runs on a store of its own (tests/unit/fsm_fixture.h).
 */
#include "tests/unit/fsm_fixture.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "storage/store_test.h"
#include "tests/lib/clock.h"

/* ---- snapshots ---------------------------------------------------------- */

TEST(snapshot_restore_roundtrip)
{
    struct fixture f, g;
    struct buf s1 = {0}, s2 = {0};

    setup(&f);
    setup(&g);
    populate(&f);
    populate_lost(&f);
    snap(&f, &s1);
    ASSERT_UEQ(le_get_u64(s1.data + 8), f.index);
    for (int db = 0; db < N_DB; db++) ASSERT_GT(snap_count(&s1, db), 0);
    ASSERT_EQ(memcmp(s1.data, "BTN1", 4), 0);

    ASSERT_EQ(store_restore(g.s, s1.data, s1.len), 0);
    ASSERT_UEQ(store_applied_index(g.s), f.index);
    snap(&g, &s2);
    ASSERT_EQ(s1.len, s2.len);
    ASSERT(memcmp(s1.data, s2.data, s1.len) == 0);

    /* Both continue identically: same results, same effects, same state. */
    g.index = f.index;
    struct msg_lock_info_r i = info(&f, "alpha");
    store_lock_info_free(&i);
    struct cmd_result rf = run(&f, c_expire(i.holder_session));
    struct cmd_result rg = run(&g, c_expire(i.holder_session));
    ASSERT_EQ(rf.status, rg.status);
    ASSERT_EQ(f.fx.n_fx, 5); /* b loses alpha and beta, c gets both, b is gone */
    assert_same_effects(&f.fx, &g.fx);
    ASSERT_UEQ(run(&f, c_open(1, "n")).value, run(&g, c_open(1, "n")).value);
    snap(&f, &s1);
    snap(&g, &s2);
    ASSERT_EQ(s1.len, s2.len);
    ASSERT(memcmp(s1.data, s2.data, s1.len) == 0);
    buf_free(&s1);
    buf_free(&s2);
    teardown(&f);
    teardown(&g);
}

TEST(snapshot_excludes_local_meta)
{
    /* Two stores with the same history but different boot ids and files
     * give the same bytes. */
    struct fixture f, g;
    struct buf s1 = {0}, s2 = {0};

    setup(&f);
    populate(&f);
    snap(&f, &s1);
    ASSERT_EQ(snap_count(&s1, DB_META), 3);
    store_close(f.s);
    char err[256];
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    snap(&f, &s2);
    ASSERT_EQ(s1.len, s2.len);
    ASSERT(memcmp(s1.data, s2.data, s1.len) == 0);
    setup(&g);
    populate(&g);
    snap(&g, &s2);
    ASSERT(memcmp(s1.data, s2.data, s1.len) == 0);
    buf_free(&s1);
    buf_free(&s2);
    teardown(&f);
    teardown(&g);
}

TEST(restore_older_snapshot_is_noop)
{
    struct fixture f, g;
    struct buf old = {0}, before = {0}, after = {0};

    setup(&f);
    setup(&g);
    populate(&f);
    snap(&f, &old);
    populate(&g);
    run(&g, c_open(1, "newer")); /* g is one entry ahead */
    snap(&g, &before);
    ASSERT_EQ(store_restore(g.s, old.data, old.len), 0);
    snap(&g, &after);
    ASSERT_EQ(before.len, after.len);
    ASSERT(memcmp(before.data, after.data, before.len) == 0);
    /* Equal index: also a no-op. */
    snap(&f, &old);
    ASSERT_EQ(store_restore(f.s, old.data, old.len), 0);
    buf_free(&old);
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
    teardown(&g);
}

TEST(restore_replaces_newer_state_entirely)
{
    /* A follower with its own (older) state receives a snapshot: nothing of
     * its old state survives. */
    struct fixture f, g;
    struct buf s1 = {0}, s2 = {0};

    setup(&f);
    setup(&g);
    uint64_t x = open_session(&g);
    grant(&g, x, 1, "only-in-g");
    populate(&f);
    snap(&f, &s1);
    ASSERT_EQ(store_restore(g.s, s1.data, s1.len), 0);
    snap(&g, &s2);
    ASSERT(memcmp(s1.data, s2.data, s1.len) == 0);
    assert_holder(&g, "only-in-g", 0, 0, 0);
    buf_free(&s1);
    buf_free(&s2);
    teardown(&f);
    teardown(&g);
}

TEST(restore_rejects_malformed_without_change)
{
    struct fixture f, g;
    struct buf good = {0}, bad = {0}, before = {0}, after = {0};

    setup(&f);
    setup(&g);
    populate(&f); /* f ahead of g */
    snap(&f, &good);
    uint64_t x = open_session(&g);
    grant(&g, x, 1, "g-lock");
    snap(&g, &before);

    /* Every truncation. */
    for (size_t len = 0; len < good.len; len++) {
        uint8_t *copy = malloc(len ? len : 1);
        ASSERT(copy != NULL);
        memcpy(copy, good.data, len);
        ASSERT_EQ(store_restore(g.s, copy, len), BATON_EMALFORMED);
        free(copy);
    }
    ASSERT_EQ(store_restore(g.s, NULL, 0), BATON_EMALFORMED);
    /* A trailing byte. */
    ASSERT_EQ(buf_put(&bad, good.data, good.len), 0);
    ASSERT_EQ(buf_put_u8(&bad, 0), 0);
    ASSERT_EQ(store_restore(g.s, bad.data, bad.len), BATON_EMALFORMED);
    /* Bad magic, bad format. */
    bad.len = good.len;
    bad.data[0] = 'X';
    ASSERT_EQ(store_restore(g.s, bad.data, bad.len), BATON_EMALFORMED);
    bad.data[0] = good.data[0];
    bad.data[4] = 9;
    ASSERT_EQ(store_restore(g.s, bad.data, bad.len), BATON_EMALFORMED);
    bad.data[4] = good.data[4];
    snap(&g, &after);
    ASSERT_EQ(before.len, after.len);
    ASSERT(memcmp(before.data, after.data, before.len) == 0);
    /* A flipped bit anywhere in the body: rejected without change, or (in
     * a value the format cannot check, such as a fence) accepted. Never a
     * crash. */
    for (size_t off = SNAP_HDR; off < good.len; off++) {
        memcpy(bad.data, good.data, good.len);
        bad.data[off] ^= 0x80;
        snap(&g, &before);
        int rv = store_restore(g.s, bad.data, bad.len);
        ASSERT(rv == 0 || rv == BATON_EMALFORMED);
        if (rv == BATON_EMALFORMED) {
            snap(&g, &after);
            ASSERT(before.len == after.len && memcmp(before.data, after.data, before.len) == 0);
        }
    }
    buf_free(&good);
    buf_free(&bad);
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
    teardown(&g);
}

TEST(restore_rejects_unsorted_and_unknown_entries)
{
    struct fixture f, g;
    struct buf s = {0}, before = {0}, after = {0};

    setup(&f);
    setup(&g);
    populate(&f);
    snap(&f, &s);
    snap(&g, &before);
    /* Swap the first byte of the first two meta keys ("next_enq" and
     * "next_fence" become unsorted once 'n' -> 'z' in the first). */
    size_t key0 = SNAP_HDR + 4 + 4;
    ASSERT_EQ(s.data[key0], 'n');
    s.data[key0] = 'z';
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    s.data[key0] = 'n';
    /* A meta key that is not state. */
    s.data[key0 + 5] = 'X';
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    snap(&g, &after);
    ASSERT_EQ(before.len, after.len);
    ASSERT(memcmp(before.data, after.data, before.len) == 0);
    buf_free(&s);
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
    teardown(&g);
}

TEST(restore_into_empty_store_then_reopen)
{
    struct fixture f, g;
    struct buf s1 = {0}, s2 = {0};
    char err[256];

    setup(&f);
    setup(&g);
    populate(&f);
    snap(&f, &s1);
    ASSERT_EQ(store_restore(g.s, s1.data, s1.len), 0);
    store_close(g.s);
    ASSERT_EQ(store_open(g.dir, &g.s, err), 0);
    ASSERT_UEQ(store_applied_index(g.s), f.index);
    snap(&g, &s2);
    ASSERT(memcmp(s1.data, s2.data, s1.len) == 0);
    buf_free(&s1);
    buf_free(&s2);
    teardown(&f);
    teardown(&g);
}

/* ---- persistence -------------------------------------------------------- */

TEST(reopen_after_close_keeps_everything)
{
    struct fixture f;
    struct buf s1 = {0}, s2 = {0};
    char err[256];
    uint64_t a, fence;

    setup(&f);
    populate(&f);
    snap(&f, &s1);
    store_close(f.s);
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    ASSERT_UEQ(store_applied_index(f.s), f.index);
    snap(&f, &s2);
    ASSERT_EQ(s1.len, s2.len);
    ASSERT(memcmp(s1.data, s2.data, s1.len) == 0);
    /* Counters continue where they were. */
    a = open_session(&f);
    ASSERT_UEQ(a, 6); /* populate opened five */
    fence = grant(&f, a, 1, "after-reopen");
    ASSERT_GT(fence, 3);
    buf_free(&s1);
    buf_free(&s2);
    teardown(&f);
}

static void write_boot_id(const char *dir, const char *id)
{
    char path[192];
    FILE *fp;

    snprintf(path, sizeof path, "%s/boot_id", dir);
    fp = fopen(path, "w");
    ASSERT(fp != NULL);
    fprintf(fp, "%s\n", id);
    fclose(fp);
}

TEST(crash_and_reboot_detection)
{
    static char path[192];
    struct fixture f;
    char err[256];
    uint64_t applied;

    setup(&f);
    store_close(f.s);
    snprintf(path, sizeof path, "%s/boot_id", f.dir);
    store__set_boot_id_path(path);
    write_boot_id(f.dir, "boot-one");
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    populate(&f);
    applied = f.index;

    /* A process crash, same boot: the files are kept. */
    store__abandon(f.s);
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    ASSERT_UEQ(store_applied_index(f.s), applied);

    /* A clean shutdown, then a reboot: kept. */
    store_close(f.s);
    write_boot_id(f.dir, "boot-two");
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    ASSERT_UEQ(store_applied_index(f.s), applied);

    /* A crash, then a reboot: the files cannot be trusted, start empty. */
    store__abandon(f.s);
    write_boot_id(f.dir, "boot-three");
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    ASSERT_UEQ(store_applied_index(f.s), 0);
    ASSERT_EQ(count_in(&f, DB_SESSIONS), 0);
    ASSERT_EQ(store_session_exists(f.s, 1), 0);
    /* And it works: ids start again at 1. */
    f.index = 0;
    ASSERT_UEQ(open_session(&f), 1);

    /* Unreadable boot id after a crash: treated as a reboot. */
    store__abandon(f.s);
    store__set_boot_id_path("/nonexistent/boot_id");
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    ASSERT_UEQ(store_applied_index(f.s), 0);
    teardown(&f);
}

TEST(open_fails_cleanly_on_missing_dir)
{
    store *s = (store *)1;
    char err[256] = "";

    ASSERT_EQ(store_open("/nonexistent/baton-fsm", &s, err), BATON_EIO);
    ASSERT(s == NULL);
    ASSERT(strlen(err) > 0);
    store_close(NULL);
}

TEST(map_full_grows_the_map)
{
    enum { N = 2000 };
    static char names[N][200];
    static struct cmd cmds[N];
    struct fixture f;
    size_t before;
    uint64_t a;

    setup(&f);
    a = open_session(&f);
    ASSERT_EQ(store__set_map_size(f.s, 64 * 1024), 0);
    before = store__map_size(f.s);
    ASSERT_LT(before, 1024 * 1024);
    /* Long names: a few MB of keys and values in one entry. */
    for (int i = 0; i < N; i++) {
        memset(names[i], 'k', sizeof names[i] - 1);
        snprintf(names[i], 16, "%06d", i);
        names[i][6] = 'k';
        cmds[i] = c_acq(a, (uint64_t)i + 1, BATON_WAIT_TRY, names[i]);
    }
    apply_n(&f, cmds, N);
    for (int i = 0; i < N; i++) ASSERT_EQ(f.fx.results[i].kind, RESULT_GRANTED);
    ASSERT_GT(store__map_size(f.s), before);
    ASSERT_EQ(count_in(&f, DB_LOCKS), N);
    /* A snapshot of it restores into a store with a small map, too. */
    struct fixture g;
    struct buf s1 = {0}, s2 = {0};
    setup(&g);
    ASSERT_EQ(store__set_map_size(g.s, 64 * 1024), 0);
    snap(&f, &s1);
    ASSERT_EQ(store_restore(g.s, s1.data, s1.len), 0);
    snap(&g, &s2);
    ASSERT(s1.len == s2.len && memcmp(s1.data, s2.data, s1.len) == 0);
    buf_free(&s1);
    buf_free(&s2);
    teardown(&g);
    teardown(&f);
}

/* ---- snapshots in steps, the dump on another thread ---------------------- */

struct writer {
    store_snap *sn;
    struct buf out;
    int rv;
    pthread_t th;
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    w->rv = store_snapshot_write(w->sn, &w->out);
    return NULL;
}

static void writer_start(struct writer *w, store_snap *sn)
{
    memset(w, 0, sizeof *w);
    w->sn = sn;
    ASSERT_EQ(pthread_create(&w->th, NULL, writer_main, w), 0);
}

static void writer_join(struct writer *w)
{
    ASSERT_EQ(pthread_join(w->th, NULL), 0);
}

/* Apply one entry of n try-locks of new locks with 199-byte names
 * "<tag><k>kkk..." (about 100 KB per 500), which the map must make room
 * for. */
static void apply_big(struct fixture *f, uint64_t session, uint64_t *seq, const char *tag, int n)
{
    static char names[512][200];
    static struct cmd cmds[512];
    static unsigned next;

    ASSERT(n <= 512);
    for (int i = 0; i < n; i++) {
        memset(names[i], 'k', sizeof names[i] - 1);
        names[i][sizeof names[i] - 1] = '\0';
        snprintf(names[i], 20, "%s%08u", tag, next++);
        names[i][strlen(names[i])] = 'k';
        cmds[i] = c_acq(session, *seq, BATON_WAIT_TRY, names[i]);
        cmds[i].ack_below = (*seq)++; /* seen: the cache bound stays out of the way */
    }
    apply_n(f, cmds, (size_t)n);
    for (int i = 0; i < n; i++) ASSERT_EQ(f->fx.results[i].kind, RESULT_GRANTED);
}

/* The dump, on another thread, gives the bytes store_snapshot gave at
 * begin, whatever is applied meanwhile; one snapshot at a time. */
TEST(snapshot_in_steps_is_the_state_at_begin)
{
    struct fixture f;
    struct buf expect = {0};
    struct writer w;
    store_snap *sn, *other;
    uint64_t seq = 10, a;

    setup(&f);
    populate(&f);
    a = open_session(&f);
    snap(&f, &expect);
    ASSERT_EQ(store_snapshot_begin(f.s, &sn), 0);
    ASSERT_UEQ(store_snap_applied(sn), f.index);
    /* STORE_MAX_SNAPS (2: raft's and a backup's) may be open at once. */
    ASSERT_EQ(store_snapshot_begin(f.s, &other), 0);
    store_snapshot_end(other);
    ASSERT_EQ(store_snapshot_begin(f.s, &other), 0);
    {
        store_snap *third;
        ASSERT_EQ(store_snapshot_begin(f.s, &third), BATON_EBUSY);
        ASSERT(third == NULL);
    }
    store_snapshot_end(other);
    apply_big(&f, a, &seq, "later", 64);
    writer_start(&w, sn);
    apply_big(&f, a, &seq, "during", 64);
    writer_join(&w);
    ASSERT_EQ(w.rv, 0);
    ASSERT(w.out.len == expect.len && memcmp(w.out.data, expect.data, expect.len) == 0);
    store_snapshot_end(sn);
    buf_free(&w.out);
    /* Ended: another may begin; and one left open is ended by close. */
    ASSERT_EQ(store_snapshot_begin(f.s, &sn), 0);
    buf_free(&expect);
    teardown(&f);
}

/* A full map grows even while a snapshot is open: growing needs every
 * transaction closed, so the snapshot is stopped (its write then fails
 * with BATON_ECANCELED) and the apply goes on. */
TEST(map_growth_stops_an_open_snapshot)
{
    struct fixture f;
    struct buf out = {0};
    store_snap *sn;
    size_t before;
    uint64_t seq = 1, a;

    setup(&f);
    a = open_session(&f);
    ASSERT_EQ(store__set_map_size(f.s, 64 * 1024), 0);
    before = store__map_size(f.s);
    ASSERT_EQ(store_snapshot_begin(f.s, &sn), 0);
    for (int k = 0; k < 8; k++) apply_big(&f, a, &seq, "grow", 500);
    ASSERT_GT(store__map_size(f.s), before);
    ASSERT_EQ(store_snapshot_write(sn, &out), BATON_ECANCELED);
    ASSERT_UEQ(out.len, 0);
    store_snapshot_end(sn);
    ASSERT_EQ(count_in(&f, DB_LOCKS), 4000);
    teardown(&f);
}

/* The same race with the dump running: the growth waits for it to give up
 * (or to finish first, with the right bytes); no apply fails. */
TEST(map_growth_waits_for_a_running_snapshot)
{
    struct fixture f;
    uint64_t seq = 1, a = 0;
    int cancelled = 0, finished = 0;

    setup(&f);
    /* 10,000 locks to dump (a session may own at most 10,000). */
    for (int k = 0; k < 20; k++) {
        if (k % 10 == 0) a = open_session(&f);
        apply_big(&f, a, &seq, "base", 500);
    }
    for (int round = 0; round < 6; round++) {
        struct buf expect = {0};
        struct writer w;
        store_snap *sn;
        char tag[16];

        /* As small as LMDB allows: the next big entries need a growth. */
        ASSERT_EQ(store__set_map_size(f.s, 64 * 1024), 0);
        snap(&f, &expect);
        ASSERT_EQ(store_snapshot_begin(f.s, &sn), 0);
        writer_start(&w, sn);
        /* Let the dump get going in some rounds: both cases happen. */
        if (round % 2) sleep_ms(round);
        snprintf(tag, sizeof tag, "r%d-", round);
        a = open_session(&f);
        for (int k = 0; k < 4; k++) apply_big(&f, a, &seq, tag, 500);
        writer_join(&w);
        if (w.rv == BATON_ECANCELED) {
            ASSERT_UEQ(w.out.len, 0);
            cancelled++;
        } else {
            ASSERT_EQ(w.rv, 0);
            ASSERT(w.out.len == expect.len && memcmp(w.out.data, expect.data, expect.len) == 0);
            finished++;
        }
        store_snapshot_end(sn);
        buf_free(&w.out);
        buf_free(&expect);
    }
    fprintf(stderr, "# dumps stopped by a growth: %d, finished first: %d\n", cancelled, finished);
    ASSERT_EQ(count_in(&f, DB_LOCKS), 10000 + 6 * 2000);
    teardown(&f);
}

/* A flush that blocks until released, as one on a busy disk would. */
struct slow_flush {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool in_flush, released;
};

static void slow_flush_hook(void *arg)
{
    struct slow_flush *sf = arg;

    pthread_mutex_lock(&sf->mu);
    sf->in_flush = true;
    pthread_cond_broadcast(&sf->cv);
    while (!sf->released) pthread_cond_wait(&sf->cv, &sf->mu);
    pthread_mutex_unlock(&sf->mu);
}

struct grower {
    struct fixture *f;
    uint64_t session, seq;
    atomic_bool done;
    pthread_t th;
};

static void *grower_main(void *arg)
{
    struct grower *g = arg;

    for (int k = 0; k < 4; k++) apply_big(g->f, g->session, &g->seq, "slow", 500);
    atomic_store(&g->done, true);
    return NULL;
}

/* A growth while a snapshot's worker flushes the data file does not wait
 * for the flush (batond's loop thread would be blocked meanwhile): it
 * stops the snapshot, which the worker then finds cancelled. */
TEST(map_growth_does_not_wait_for_a_snapshot_flush)
{
    struct fixture f;
    struct slow_flush sf = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    struct writer w;
    struct grower g = {.f = &f, .seq = 1};
    store_snap *sn;
    size_t before;
    bool grew = false;

    setup(&f);
    g.session = open_session(&f);
    ASSERT_EQ(store__set_map_size(f.s, 64 * 1024), 0);
    before = store__map_size(f.s);
    store__set_snapshot_sync_hook(f.s, slow_flush_hook, &sf);
    ASSERT_EQ(store_snapshot_begin(f.s, &sn), 0);
    writer_start(&w, sn);
    pthread_mutex_lock(&sf.mu);
    while (!sf.in_flush) pthread_cond_wait(&sf.cv, &sf.mu);
    pthread_mutex_unlock(&sf.mu);
    atomic_init(&g.done, false);
    ASSERT_EQ(pthread_create(&g.th, NULL, grower_main, &g), 0);
    for (int i = 0; i < 1000 && !grew; i++) { /* 10 s */
        grew = atomic_load(&g.done);
        if (!grew) sleep_ms(10);
    }
    pthread_mutex_lock(&sf.mu);
    sf.released = true;
    pthread_cond_broadcast(&sf.cv);
    pthread_mutex_unlock(&sf.mu);
    ASSERT_EQ(pthread_join(g.th, NULL), 0);
    writer_join(&w);
    if (!grew) FAIL("the map's growth waited for the snapshot's flush");
    ASSERT_GT(store__map_size(f.s), before);
    ASSERT_EQ(w.rv, BATON_ECANCELED);
    ASSERT_UEQ(w.out.len, 0);
    store_snapshot_end(sn);
    store__set_snapshot_sync_hook(f.s, NULL, NULL);
    ASSERT_EQ(count_in(&f, DB_LOCKS), 2000);
    teardown(&f);
}

/* The map grows in bounded steps: it doubles while it is smaller than the
 * step cap, then grows by the cap at a time (store_next_growth), so that a
 * growth never needs more free disk than the cap (docs/operations.md,
 * "Disk full"). The cap is lowered to 128 KiB here (store__set_grow_max)
 * so that the capped steps show after a few MB rather than 64 MiB. Every
 * growth is checked: the map grows by exactly store_next_growth of the map
 * before it, and never by more than the cap. */
TEST(map_grows_in_bounded_steps)
{
    static char name[200];
    struct fixture f;
    size_t before, growths = 0, capped = 0;
    uint64_t a;

    setup(&f);
    ASSERT_UEQ(store_next_growth(f.s), store__map_size(f.s)); /* 8 MiB: doubles */
    ASSERT_EQ(store__set_map_size(f.s, (size_t)256 << 20), 0);
    ASSERT_UEQ(store_next_growth(f.s), (size_t)64 << 20);     /* not 256 MiB */
    ASSERT_EQ(store__set_map_size(f.s, 64 * 1024), 0);
    store__set_grow_max(f.s, 128 * 1024);
    a = open_session(&f);
    memset(name, 'g', sizeof name - 1);
    for (int i = 0; i < 4000 && store__map_size(f.s) < 1024 * 1024; i++) {
        size_t step;

        before = store__map_size(f.s);
        step = store_next_growth(f.s);
        ASSERT(step <= 128 * 1024);
        snprintf(name, 16, "%06d", i);
        name[6] = 'g';
        ASSERT_UEQ(run(&f, c_acq(a, (uint64_t)i + 1, BATON_WAIT_TRY, name)).kind, RESULT_GRANTED);
        if (store__map_size(f.s) == before) continue;
        /* One lock's records never need more than one growth. */
        ASSERT_UEQ(store__map_size(f.s), before + step);
        growths++;
        if (step == 128 * 1024 && before > 128 * 1024) capped++;
    }
    ASSERT_GE(store__map_size(f.s), 1024 * 1024);
    ASSERT_GE(growths, 4);
    ASSERT_GE(capped, 3); /* 256 KiB -> 384 KiB -> ... by the cap, not doubling */
    teardown(&f);
}

/* ---- the state digest --------------------------------------------------- */

/* The digest as store.h documents it, computed here independently:
 * FNV-1a 64 over le64(prev), le64(index), then the payload. */
static uint64_t expected_digest(uint64_t prev, uint64_t index, const void *data, size_t len)
{
    uint8_t head[16];
    const uint8_t *p = data;
    uint64_t h = 0xcbf29ce484222325ull;

    for (int i = 0; i < 8; i++) {
        head[i] = (uint8_t)(prev >> (8 * i));
        head[8 + i] = (uint8_t)(index >> (8 * i));
    }
    for (size_t i = 0; i < sizeof head; i++) h = (h ^ head[i]) * 0x100000001b3ull;
    for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* Apply raw bytes as entry idx, expecting success. */
static void apply_raw(struct fixture *f, uint64_t idx, const void *data, size_t len)
{
    ASSERT_EQ(store_apply(f->s, idx, data, len, &f->fx), 0);
    if (idx > f->index) f->index = idx;
    ASSERT_UEQ(store_applied_index(f->s), f->index);
}

/* A list of entries (valid batches, one naming `variant`, an empty one, a
 * gap in the indexes) fed the same way to two stores. */
static void feed_entries(struct fixture *f, const char *variant)
{
    struct cmd cmds[3];
    struct buf b = {0};

    cmds[0] = c_open(5000, "digest");
    cmds_encode(&b, cmds, 1);
    apply_raw(f, 1, b.data, b.len);
    buf_reset(&b);
    cmds[0] = c_acq(1, 1, BATON_WAIT_FOREVER, "L");
    cmds[1] = c_acq(1, 2, BATON_WAIT_TRY, "M");
    cmds[2] = c_rel(1, 3, 99, "L");
    cmds_encode(&b, cmds, 3);
    apply_raw(f, 2, b.data, b.len);
    buf_reset(&b);
    cmds[0] = c_rel(1, 5, 99, variant); /* not held: BATON_ENOTHELD */
    cmds_encode(&b, cmds, 1);
    apply_raw(f, 3, b.data, b.len);
    apply_raw(f, 4, NULL, 0); /* empty */
    buf_reset(&b);
    cmds[0] = c_acq(1, 4, BATON_WAIT_FOREVER, "N");
    cmds_encode(&b, cmds, 1);
    apply_raw(f, 7, b.data, b.len); /* indexes may skip */
    buf_free(&b);
}

TEST(digest_follows_the_documented_hash)
{
    struct fixture f;
    struct buf b = {0};
    struct cmd c = c_open(5000, "x");
    uint64_t d;

    setup(&f);
    ASSERT_UEQ(store_digest(f.s), 0);
    cmds_encode(&b, &c, 1);
    apply_raw(&f, 1, b.data, b.len);
    d = expected_digest(0, 1, b.data, b.len);
    ASSERT_UEQ(store_digest(f.s), d);
    /* A malformed batch is refused and leaves it as it was; an empty
     * entry advances it. */
    ASSERT_EQ(store_apply(f.s, 2, "\x01garbage!", 9, &f.fx), BATON_EMALFORMED);
    ASSERT_UEQ(store_digest(f.s), d);
    apply_raw(&f, 5, NULL, 0);
    d = expected_digest(d, 5, NULL, 0);
    ASSERT_UEQ(store_digest(f.s), d);
    /* Snapshots carry it right after the applied index. */
    snap(&f, &b);
    ASSERT_UEQ(le_get_u64(b.data + 8), 5);
    ASSERT_UEQ(le_get_u64(b.data + 16), d);
    /* It survives a close and an open. */
    {
        char err[256];
        store_close(f.s);
        ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
        ASSERT_UEQ(store_digest(f.s), d);
    }
    buf_free(&b);
    teardown(&f);
}

TEST(digest_equal_for_equal_entries)
{
    struct fixture f, g;
    struct buf s1 = {0}, s2 = {0};

    setup(&f);
    setup(&g);
    feed_entries(&f, "junk");
    feed_entries(&g, "junk");
    ASSERT_NE(store_digest(f.s), 0);
    ASSERT_UEQ(store_digest(f.s), store_digest(g.s));
    snap(&f, &s1);
    snap(&g, &s2);
    ASSERT(s1.len == s2.len && memcmp(s1.data, s2.data, s1.len) == 0);
    buf_free(&s1);
    buf_free(&s2);
    teardown(&f);
    teardown(&g);
}

TEST(digest_differs_for_different_payload)
{
    struct fixture f, g, h;
    struct buf s1 = {0}, s2 = {0};

    setup(&f);
    setup(&g);
    /* One byte differs in one entry of the same outcome: the lock state
     * is the same, the digest is not, and so neither are the snapshots. */
    feed_entries(&f, "junk");
    feed_entries(&g, "junK");
    ASSERT_UEQ(store_applied_index(f.s), store_applied_index(g.s));
    ASSERT(store_digest(f.s) != store_digest(g.s));
    snap(&f, &s1);
    snap(&g, &s2);
    ASSERT(same_state(&s1, &s2));
    ASSERT(memcmp(s1.data, s2.data, SNAP_HDR) != 0);
    teardown(&g);

    /* The same payload at another index differs as well. */
    setup(&g);
    setup(&h);
    apply_raw(&g, 1, NULL, 0);
    apply_raw(&h, 2, NULL, 0);
    ASSERT(store_digest(g.s) != store_digest(h.s));
    /* And so does a different command with the same outcome. */
    teardown(&g);
    teardown(&h);
    setup(&g);
    setup(&h);
    ASSERT_UEQ(run(&g, c_open(5000, "a")).value, run(&h, c_open(5000, "b")).value);
    ASSERT(store_digest(g.s) != store_digest(h.s));
    buf_free(&s1);
    buf_free(&s2);
    teardown(&f);
    teardown(&g);
    teardown(&h);
}

TEST(digest_restored_from_snapshot)
{
    struct fixture f, g;
    struct buf s1 = {0}, s2 = {0};
    char err[256];

    setup(&f);
    setup(&g);
    populate(&f);
    run(&g, c_open(1, "g-only")); /* g has a digest of its own */
    ASSERT(store_digest(f.s) != store_digest(g.s));
    snap(&f, &s1);
    ASSERT_EQ(store_restore(g.s, s1.data, s1.len), 0);
    ASSERT_UEQ(store_digest(g.s), store_digest(f.s));
    store_close(g.s);
    ASSERT_EQ(store_open(g.dir, &g.s, err), 0);
    ASSERT_UEQ(store_digest(g.s), store_digest(f.s));
    /* Both go on with the same digests. */
    g.index = f.index;
    run(&f, c_open(1, "next"));
    run(&g, c_open(1, "next"));
    ASSERT_UEQ(store_digest(g.s), store_digest(f.s));
    snap(&f, &s1);
    snap(&g, &s2);
    ASSERT(s1.len == s2.len && memcmp(s1.data, s2.data, s1.len) == 0);

    /* A snapshot that is not newer changes nothing, the digest included. */
    {
        uint64_t before = store_digest(g.s);
        struct fixture h;
        setup(&h);
        run(&h, c_open(1, "older"));
        snap(&h, &s2);
        ASSERT_EQ(store_restore(g.s, s2.data, s2.len), 0);
        ASSERT_UEQ(store_digest(g.s), before);
        teardown(&h);
    }
    buf_free(&s1);
    buf_free(&s2);
    teardown(&f);
    teardown(&g);
}

TEST(digest_unchanged_by_replay)
{
    struct fixture f;
    struct buf b = {0};
    struct cmd c;
    uint64_t d, a;

    setup(&f);
    a = open_session(&f);
    grant(&f, a, 1, "L");
    d = store_digest(f.s);
    c = c_acq(a, 2, BATON_WAIT_FOREVER, "M");
    cmds_encode(&b, &c, 1);
    for (uint64_t idx = 0; idx <= f.index; idx++) {
        ASSERT_EQ(store_apply(f.s, idx, b.data, b.len, &f.fx), 0);
        ASSERT_UEQ(store_digest(f.s), d);
    }
    ASSERT_EQ(store_apply(f.s, f.index, "\x01other", 6, &f.fx), 0);
    ASSERT_UEQ(store_digest(f.s), d);
    ASSERT_UEQ(store_applied_index(f.s), f.index);
    buf_free(&b);
    teardown(&f);
}

/* A snapshot of format 2 (no digest in the header) or of a format not yet
 * known is refused without change, whether or not the bytes are laid out
 * the old way. (Formats 3, 4, 5 and 6 are restored: test_fsm_admin.c, test_fsm_modes.c,
 * test_fsm_owner.c, test_fsm_lost.c, test_fsm_nonce.c.) */
TEST(restore_rejects_previous_format)
{
    struct fixture f, g;
    struct buf good = {0}, old = {0}, before = {0}, after = {0};

    setup(&f);
    setup(&g);
    populate(&f);
    snap(&f, &good);
    snap(&g, &before);
    ASSERT_EQ(le_get_u32(good.data + 4), 8);
    /* Format 2's layout: the header without the digest. */
    ASSERT_EQ(buf_put(&old, good.data, 16), 0);
    ASSERT_EQ(buf_put(&old, good.data + SNAP_HDR, good.len - SNAP_HDR), 0);
    le_put_u32(old.data + 4, 2);
    ASSERT_EQ(store_restore(g.s, old.data, old.len), BATON_EMALFORMED);
    /* Format 6's layout labelled 2, or labelled 5 or 3 (whose layouts lack
     * the lost and nonce tables, and 3's the members table: their counts
     * and entries are trailing bytes), or labelled with a format to come. */
    buf_reset(&old);
    ASSERT_EQ(buf_put(&old, good.data, good.len), 0);
    le_put_u32(old.data + 4, 2);
    ASSERT_EQ(store_restore(g.s, old.data, old.len), BATON_EMALFORMED);
    le_put_u32(old.data + 4, 5);
    ASSERT_EQ(store_restore(g.s, old.data, old.len), BATON_EMALFORMED);
    le_put_u32(old.data + 4, 3);
    ASSERT_EQ(store_restore(g.s, old.data, old.len), BATON_EMALFORMED);
    le_put_u32(old.data + 4, 6); /* format 8's three last tables trail */
    ASSERT_EQ(store_restore(g.s, old.data, old.len), BATON_EMALFORMED);
    le_put_u32(old.data + 4, 7); /* format 8's last table trails */
    ASSERT_EQ(store_restore(g.s, old.data, old.len), BATON_EMALFORMED);
    le_put_u32(old.data + 4, 9);
    ASSERT_EQ(store_restore(g.s, old.data, old.len), BATON_EMALFORMED);
    snap(&g, &after);
    ASSERT(before.len == after.len && memcmp(before.data, after.data, before.len) == 0);
    ASSERT_UEQ(store_digest(g.s), 0);
    buf_free(&good);
    buf_free(&old);
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
    teardown(&g);
}

int main(int argc, char **argv)
{
    fsm_main_begin(argc, argv);
    RUN(snapshot_restore_roundtrip);
    RUN(snapshot_excludes_local_meta);
    RUN(restore_older_snapshot_is_noop);
    RUN(restore_replaces_newer_state_entirely);
    RUN(restore_rejects_malformed_without_change);
    RUN(restore_rejects_unsorted_and_unknown_entries);
    RUN(restore_into_empty_store_then_reopen);
    RUN(reopen_after_close_keeps_everything);
    RUN(crash_and_reboot_detection);
    RUN(open_fails_cleanly_on_missing_dir);
    RUN(map_full_grows_the_map);
    RUN(snapshot_in_steps_is_the_state_at_begin);
    RUN(map_growth_stops_an_open_snapshot);
    RUN(map_growth_waits_for_a_running_snapshot);
    RUN(map_growth_does_not_wait_for_a_snapshot_flush);
    RUN(map_grows_in_bounded_steps);
    RUN(digest_follows_the_documented_hash);
    RUN(digest_equal_for_equal_entries);
    RUN(digest_differs_for_different_payload);
    RUN(digest_restored_from_snapshot);
    RUN(digest_unchanged_by_replay);
    RUN(restore_rejects_previous_format);
    return fsm_main_end();
}
