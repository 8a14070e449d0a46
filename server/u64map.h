/*
 * u64map.h -- a hash map from non-zero uint64_t keys to pointers (open
 * addressing, linear probing, backward-shift deletion). Used for connections
 * by id and sessions by id.
 */
#ifndef BATON_SERVER_U64MAP_H
#define BATON_SERVER_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct u64map_slot {
    uint64_t key;   /* 0: empty */
    void *val;
};

struct u64map {
    struct u64map_slot *slots;
    size_t cap;     /* power of two, or 0 */
    size_t n;
};

void u64map_init(struct u64map *m);
void u64map_free(struct u64map *m);
void *u64map_get(const struct u64map *m, uint64_t key);
/* Insert or replace. 0 or BATON_ENOMEM. key must not be 0. */
int u64map_put(struct u64map *m, uint64_t key, void *val);
/* Remove and return the value (NULL if absent). */
void *u64map_del(struct u64map *m, uint64_t key);

/* Iterate: for (size_t i = 0; i < m->cap; i++) if (m->slots[i].key) ...
 * The map must not change during the walk; collect keys first to delete. */

#endif
