/*
 * u64map.c -- see u64map.h.
 */
#include "server/u64map.h"

#include <stdlib.h>

#include "client/baton_defs.h"

static size_t slot_of(uint64_t key, size_t cap)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

void u64map_init(struct u64map *m)
{
    m->slots = NULL;
    m->cap = 0;
    m->n = 0;
}

void u64map_free(struct u64map *m)
{
    free(m->slots);
    u64map_init(m);
}

void *u64map_get(const struct u64map *m, uint64_t key)
{
    if (m->cap == 0) return NULL;
    for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->slots[i].key == key) return m->slots[i].val;
        if (m->slots[i].key == 0) return NULL;
    }
}

static int grow(struct u64map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 16;
    struct u64map_slot *old = m->slots, *s = calloc(cap, sizeof *s);
    size_t old_cap = m->cap;

    if (s == NULL) return BATON_ENOMEM;
    m->slots = s;
    m->cap = cap;
    m->n = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].key) u64map_put(m, old[i].key, old[i].val);
    free(old);
    return 0;
}

int u64map_put(struct u64map *m, uint64_t key, void *val)
{
    if ((m->n + 1) * 4 > m->cap * 3 && grow(m) != 0) return BATON_ENOMEM;
    for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->slots[i].key == key) {
            m->slots[i].val = val;
            return 0;
        }
        if (m->slots[i].key == 0) {
            m->slots[i].key = key;
            m->slots[i].val = val;
            m->n++;
            return 0;
        }
    }
}

/* Remove by shifting later members of the probe run back into the hole, so
 * that lookups never need tombstones. */
void *u64map_del(struct u64map *m, uint64_t key)
{
    size_t mask = m->cap - 1, i, j;
    void *val;

    if (m->cap == 0) return NULL;
    for (i = slot_of(key, m->cap);; i = (i + 1) & mask) {
        if (m->slots[i].key == 0) return NULL;
        if (m->slots[i].key == key) break;
    }
    val = m->slots[i].val;
    j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (m->slots[j].key == 0) break;
        size_t home = slot_of(m->slots[j].key, m->cap);
        /* Move j into the hole i unless its home lies cyclically in (i, j]. */
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i].key = 0;
    m->slots[i].val = NULL;
    m->n--;
    return val;
}
