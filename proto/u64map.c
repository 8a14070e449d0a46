/*
 * u64map.c -- the u64 -> pointer hash map; proto/u64map.h describes it.
 */
#include "proto/u64map.h"

#include <stdlib.h>

#include "baton/baton_defs.h"

/* The table's first size; it doubles from there. */
#define U64MAP_MIN_CAP 16

/* The home slot of key. Keys are often sequential (request and session
 * ids), so they are mixed with murmur3's 64-bit finaliser before the mask
 * keeps the low bits. */
static size_t slot_of(uint64_t key, size_t cap)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

uint64_t u64map_key(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t h = 0xcbf29ce484222325ull;

    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h != 0 ? h : 1;
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
    if (m->cap == 0 || key == 0) return NULL;
    for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->slots[i].key == key) return m->slots[i].val;
        if (m->slots[i].key == 0) return NULL;
    }
}

/* Double the table (or create it) and move every entry to its slot in the
 * new one. On failure the old table stays as it was. */
static int grow(struct u64map *m)
{
    size_t cap = m->cap ? m->cap * 2 : U64MAP_MIN_CAP;
    struct u64map_slot *s = calloc(cap, sizeof *s);

    if (s == NULL) return BATON_ENOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        size_t j;
        if (m->slots[i].key == 0) continue;
        for (j = slot_of(m->slots[i].key, cap); s[j].key != 0; j = (j + 1) & (cap - 1)) {
        }
        s[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = s;
    m->cap = cap;
    return 0;
}

int u64map_put(struct u64map *m, uint64_t key, void *val)
{
    size_t i;

    if (key == 0) return BATON_EINVAL;
    if ((m->n + 1) * 4 > m->cap * 3 && grow(m) != 0) return BATON_ENOMEM;
    for (i = slot_of(key, m->cap); m->slots[i].key != 0; i = (i + 1) & (m->cap - 1)) {
        if (m->slots[i].key == key) {
            m->slots[i].val = val;
            return 0;
        }
    }
    m->slots[i].key = key;
    m->slots[i].val = val;
    m->n++;
    return 0;
}

/* Remove by shifting later members of the probe run back into the hole, so
 * that lookups never need tombstones. */
void *u64map_del(struct u64map *m, uint64_t key)
{
    size_t mask = m->cap - 1, i, j;
    void *val;

    if (m->cap == 0 || key == 0) return NULL;
    for (i = slot_of(key, m->cap); m->slots[i].key != key; i = (i + 1) & mask)
        if (m->slots[i].key == 0) return NULL;
    val = m->slots[i].val;
    for (j = (i + 1) & mask; m->slots[j].key != 0; j = (j + 1) & mask) {
        size_t home = slot_of(m->slots[j].key, m->cap);
        /* Entry j stays if its home lies cyclically in (i, j]: a lookup
         * from home reaches j without crossing the hole. Otherwise that
         * lookup would stop at the hole i, so j moves into it. */
        int stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (stays) continue;
        m->slots[i] = m->slots[j];
        i = j;
    }
    m->slots[i].key = 0;
    m->slots[i].val = NULL;
    m->n--;
    return val;
}
