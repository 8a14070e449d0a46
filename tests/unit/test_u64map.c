/*
 * test_u64map.c -- the u64 -> pointer hash map (proto/u64map.h) that batond
 * and libbaton share: put, get, replace, delete, growth, iteration, and a
 * long random run checked against a plain array.
 */
#include <stdint.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/u64map.h"
#include "tests/lib/rng.h"
#include "tests/lib/runner.h"

/* A distinct non-NULL pointer for each value number. */
static char vals[4096];
#define V(i) ((void *)&vals[(i)])

/* Count the occupied slots by walking the table the way the header says. */
static size_t walk_count(const struct u64map *m)
{
    size_t n = 0;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key != 0) n++;
    return n;
}

TEST(empty_map)
{
    struct u64map m;

    memset(&m, 0, sizeof m);
    ASSERT(u64map_get(&m, 1) == NULL);
    ASSERT(u64map_del(&m, 1) == NULL);
    ASSERT_EQ(m.n, 0);
    u64map_init(&m);
    ASSERT(u64map_get(&m, 42) == NULL);
    u64map_free(&m);
    u64map_free(&m);
    ASSERT(m.slots == NULL);
}

/* u64map_key is FNV-1a 64 (the published vectors), never 0. */
TEST(key_of_bytes)
{
    ASSERT_UEQ(u64map_key("", 0), 0xcbf29ce484222325ull);
    ASSERT_UEQ(u64map_key("a", 1), 0xaf63dc4c8601ec8cull);
    ASSERT_UEQ(u64map_key("foobar", 6), 0x85944171f73967e8ull);
}

TEST(key_zero_is_reserved)
{
    struct u64map m;

    u64map_init(&m);
    ASSERT_EQ(u64map_put(&m, 0, V(1)), BATON_EINVAL);
    ASSERT_EQ(m.n, 0);
    ASSERT_EQ(u64map_put(&m, 5, V(5)), 0);
    ASSERT(u64map_get(&m, 0) == NULL);
    ASSERT(u64map_del(&m, 0) == NULL);
    ASSERT_EQ(m.n, 1);
    u64map_free(&m);
}

TEST(put_get_replace_del)
{
    struct u64map m;

    u64map_init(&m);
    ASSERT_EQ(u64map_put(&m, 7, V(7)), 0);
    ASSERT_EQ(u64map_put(&m, UINT64_MAX, V(9)), 0);
    ASSERT(u64map_get(&m, 7) == V(7));
    ASSERT(u64map_get(&m, UINT64_MAX) == V(9));
    ASSERT(u64map_get(&m, 8) == NULL);
    ASSERT_EQ(u64map_put(&m, 7, V(70)), 0); /* replaces */
    ASSERT_EQ(m.n, 2);
    ASSERT(u64map_get(&m, 7) == V(70));
    ASSERT(u64map_del(&m, 7) == V(70));
    ASSERT(u64map_del(&m, 7) == NULL);
    ASSERT(u64map_get(&m, 7) == NULL);
    ASSERT_EQ(m.n, 1);
    u64map_free(&m);
    ASSERT_EQ(m.n, 0);
    ASSERT(u64map_get(&m, UINT64_MAX) == NULL);
    /* A freed map is empty and usable again. */
    ASSERT_EQ(u64map_put(&m, 3, V(3)), 0);
    ASSERT(u64map_get(&m, 3) == V(3));
    u64map_free(&m);
}

TEST(growth_keeps_entries_and_load)
{
    struct u64map m;

    u64map_init(&m);
    for (uint64_t k = 1; k <= 3000; k++) ASSERT_EQ(u64map_put(&m, k, V(k)), 0);
    ASSERT_EQ(m.n, 3000);
    ASSERT_EQ(walk_count(&m), 3000);
    ASSERT_EQ(m.cap & (m.cap - 1), 0);  /* a power of two */
    ASSERT_LE(m.n * 4, m.cap * 3);      /* at most 3/4 full */
    for (uint64_t k = 1; k <= 3000; k++) ASSERT(u64map_get(&m, k) == V(k));
    ASSERT(u64map_get(&m, 3001) == NULL);
    u64map_free(&m);
}

TEST(iteration_sees_every_entry_once)
{
    struct u64map m;
    unsigned seen[101] = {0};

    u64map_init(&m);
    for (uint64_t k = 1; k <= 100; k++) ASSERT_EQ(u64map_put(&m, k * 1000003, V(k)), 0);
    for (size_t i = 0; i < m.cap; i++) {
        uint64_t k = m.slots[i].key;
        if (k == 0) continue;
        ASSERT_EQ(k % 1000003, 0);
        ASSERT(m.slots[i].val == V(k / 1000003));
        seen[k / 1000003]++;
    }
    for (int k = 1; k <= 100; k++) ASSERT_EQ(seen[k], 1);
    u64map_free(&m);
}

/* Many puts and deletes of keys from a small universe, in random order,
 * checked against an array after every step: this exercises probe runs that
 * wrap around the table's end and the backward shift of deletion. */
TEST(random_ops_match_reference)
{
    enum { UNIVERSE = 600, STEPS = 200000 };
    static void *ref[UNIVERSE + 1];
    struct u64map m;
    uint64_t s = 0x9e3779b97f4a7c15ULL;
    size_t n = 0;

    u64map_init(&m);
    memset(ref, 0, sizeof ref);
    for (int step = 0; step < STEPS; step++) {
        uint64_t k = xorshift64(&s) % UNIVERSE + 1;
        if (xorshift64(&s) % 3 != 0) {
            void *v = V(xorshift64(&s) % sizeof vals);
            ASSERT_EQ(u64map_put(&m, k, v), 0);
            if (ref[k] == NULL) n++;
            ref[k] = v;
        } else {
            ASSERT(u64map_del(&m, k) == ref[k]);
            if (ref[k] != NULL) n--;
            ref[k] = NULL;
        }
        ASSERT_EQ(m.n, n);
        if (step % 1000 == 0) {
            ASSERT_EQ(walk_count(&m), n);
            for (uint64_t j = 1; j <= UNIVERSE; j++) ASSERT(u64map_get(&m, j) == ref[j]);
        }
    }
    for (uint64_t j = 1; j <= UNIVERSE; j++) ASSERT(u64map_get(&m, j) == ref[j]);
    u64map_free(&m);
}

/* Deleting while walking, the way server/watch.c does it: restart the walk
 * after each delete, since a delete may move a later entry into the slot. */
TEST(delete_during_walk_with_restart)
{
    struct u64map m;

    u64map_init(&m);
    for (uint64_t k = 1; k <= 500; k++) ASSERT_EQ(u64map_put(&m, k, V(k)), 0);
    for (size_t i = 0; i < m.cap; i++) {
        uint64_t k = m.slots[i].key;
        if (k == 0 || k % 2 != 0) continue;
        ASSERT(u64map_del(&m, k) == V(k));
        i = (size_t)-1;
    }
    ASSERT_EQ(m.n, 250);
    for (uint64_t k = 1; k <= 500; k++) ASSERT(u64map_get(&m, k) == (k % 2 ? V(k) : NULL));
    u64map_free(&m);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(empty_map);
    RUN(key_of_bytes);
    RUN(key_zero_is_reserved);
    RUN(put_get_replace_del);
    RUN(growth_keeps_entries_and_load);
    RUN(iteration_sees_every_entry_once);
    RUN(random_ops_match_reference);
    RUN(delete_during_walk_with_restart);
    return runner_done();
}
