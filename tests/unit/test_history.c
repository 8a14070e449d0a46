/*
 * test_history.c -- the change history of server/history.c over a real
 * store (for its applied and restored indexes) and effects built here:
 *
 *  - its floor starts at the store's applied index, and entries at or
 *    below it (replayed at start) are not recorded;
 *  - a name matches only itself; a prefix the names under it, names
 *    longer than the stored head matching by their head (a false
 *    positive, never a miss); only changes above `after` count;
 *  - once full, each entry overwritten raises the floor to its index,
 *    and the search still finds the newest entries;
 *  - a snapshot installed into the store raises the floor to its index.
 */
#include <string.h>

#include "server/server_int.h"
#include "tests/lib/files.h"
#include "tests/lib/runner.h"

struct hfix {
    char dir[256];
    store *st;
    struct history h;
    struct effects fx;
};

/* A store whose applied index is `applied` (an empty entry there). */
static store *store_at(char *dir, size_t cap, uint64_t applied)
{
    char errmsg[BATON_ERRMSG_SIZE];
    struct effects fx;
    store *st;

    if (tmpdir_make_in(dir, cap, suite_dir(), "hist") != 0) FAIL("tmpdir");
    ASSERT_EQ(store_open(dir, &st, errmsg), 0);
    effects_init(&fx);
    if (applied > 0) ASSERT_EQ(store_apply(st, applied, "", 0, &fx), 0);
    effects_free(&fx);
    ASSERT_UEQ(store_applied_index(st), applied);
    return st;
}

static void hfix_start(struct hfix *f, uint64_t applied)
{
    f->st = store_at(f->dir, sizeof f->dir, applied);
    hist_init(&f->h, f->st);
    effects_init(&f->fx);
}

static void hfix_stop(struct hfix *f)
{
    hist_free(&f->h);
    effects_free(&f->fx);
    store_close(f->st);
    rm_rf(f->dir);
}

/* Entry `index` changed the locks names[0..n). */
static void entry(struct hfix *f, uint64_t index, const char *const *names, size_t n)
{
    effects_reset(&f->fx);
    f->fx.index = index;
    for (size_t i = 0; i < n; i++) {
        struct effect e = {.type = FX_LOCK_CHANGED};
        e.name_len = (uint16_t)strlen(names[i]);
        memcpy(e.name, names[i], e.name_len);
        ASSERT_EQ(effects_add_fx(&f->fx, &e), 0);
    }
    hist_applied(&f->h, &f->fx);
}

static bool name_changed(struct hfix *f, uint64_t after, const char *name)
{
    return hist_changed(&f->h, after, false, name, strlen(name));
}

static bool prefix_changed(struct hfix *f, uint64_t after, const char *prefix)
{
    return hist_changed(&f->h, after, true, prefix, strlen(prefix));
}

TEST(floor_starts_at_the_applied_index)
{
    struct hfix f;

    hfix_start(&f, 5);
    ASSERT_UEQ(hist_floor(&f.h), 5);
    entry(&f, 4, (const char *[]){"old"}, 1); /* replayed: known to the store already */
    ASSERT(!name_changed(&f, 0, "old"));
    ASSERT(!name_changed(&f, 5, "new"));
    entry(&f, 6, (const char *[]){"new"}, 1);
    ASSERT(name_changed(&f, 5, "new"));
    ASSERT_UEQ(hist_floor(&f.h), 5);
    hfix_stop(&f);
}

TEST(names_and_prefixes_match_changes_above_after)
{
    static const char long_a[] = "0123456789abcdefghijklmnopq-long-name-one";
    static const char long_b[] = "0123456789abcdefghijklmnopq-other";
    struct hfix f;

    hfix_start(&f, 0);
    entry(&f, 1, (const char *[]){"jobs/a", "c"}, 2);
    entry(&f, 3, (const char *[]){long_a}, 1);
    ASSERT(name_changed(&f, 0, "jobs/a"));
    ASSERT(!name_changed(&f, 1, "jobs/a"));
    ASSERT(name_changed(&f, 0, "c"));
    ASSERT(!name_changed(&f, 0, "jobs"));
    ASSERT(!name_changed(&f, 0, "jobs/a2"));
    ASSERT(prefix_changed(&f, 0, "jobs/"));
    ASSERT(prefix_changed(&f, 0, ""));
    ASSERT(prefix_changed(&f, 0, "jobs/a"));
    ASSERT(!prefix_changed(&f, 0, "jobs/ab"));
    ASSERT(!prefix_changed(&f, 1, "jobs/"));
    ASSERT(!prefix_changed(&f, 0, "x"));
    /* Past the stored head: the name by its hash, a prefix by its head. */
    ASSERT(name_changed(&f, 2, long_a));
    ASSERT(!name_changed(&f, 2, long_b));
    ASSERT(prefix_changed(&f, 2, long_b)); /* same head: a false positive */
    ASSERT(!prefix_changed(&f, 2, "0123456789abcdefghijkX"));
    ASSERT(!prefix_changed(&f, 3, long_a));
    hfix_stop(&f);
}

TEST(full_ring_raises_the_floor_and_finds_the_newest)
{
    struct hfix f;
    char name[32];
    const char *names[1] = {name};
    uint64_t first = 10, n = HIST_SIZE + 10;

    hfix_start(&f, first - 1);
    for (uint64_t i = 0; i < n; i++) {
        snprintf(name, sizeof name, "k%llu", (unsigned long long)(first + i));
        entry(&f, first + i, names, 1);
    }
    /* The 10 oldest (indexes 10..19) were overwritten. */
    ASSERT_UEQ(hist_floor(&f.h), first + 9);
    ASSERT(name_changed(&f, first + 9, "k20"));
    ASSERT(!name_changed(&f, first + 10, "k20"));
    snprintf(name, sizeof name, "k%llu", (unsigned long long)(first + n - 1));
    ASSERT(name_changed(&f, first + n - 2, name));
    ASSERT(!name_changed(&f, first + n - 1, name));
    ASSERT(name_changed(&f, first + 40000, "k50000"));
    ASSERT(!name_changed(&f, 50000, "k50000"));
    hfix_stop(&f);
}

TEST(installed_snapshot_raises_the_floor)
{
    struct hfix f;
    char dir[256];
    store *other = store_at(dir, sizeof dir, 100);
    struct buf snap = {0};

    hfix_start(&f, 5);
    entry(&f, 6, (const char *[]){"a"}, 1);
    ASSERT_EQ(store_snapshot(other, &snap), 0);
    ASSERT_EQ(store_restore(f.st, snap.data, snap.len), 0);
    ASSERT_UEQ(store_restored_index(f.st), 100);
    ASSERT_UEQ(hist_floor(&f.h), 100);
    entry(&f, 101, (const char *[]){"b"}, 1);
    ASSERT(name_changed(&f, 100, "b"));
    buf_free(&snap);
    store_close(other);
    rm_rf(dir);
    hfix_stop(&f);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    suite_dir_init("baton-history");
    RUN(floor_starts_at_the_applied_index);
    RUN(names_and_prefixes_match_changes_above_after);
    RUN(full_ring_raises_the_floor_and_finds_the_newest);
    RUN(installed_snapshot_raises_the_floor);
    suite_dir_done();
    return runner_done();
}
