/*
 * u64map.h -- a hash map from non-zero uint64_t keys to pointers: open
 * addressing, linear probing, and backward-shift deletion, so that no
 * tombstones are ever needed. It is the one map of this kind in the tree:
 * batond keeps connections, sessions, leases and watches in it (server/),
 * and libbaton keeps its requests by id and its held locks by fence in it
 * (client/async.c, client/async_session.c). It lives in proto/ because
 * proto/ is the code that both the server and libbaton link; it does no
 * I/O. These functions are internal: they are not part of libbaton's API.
 *
 * Key 0 is reserved: it marks an empty slot, so it can never be stored,
 * and looking it up finds nothing.
 *
 * A zeroed struct u64map (or one set up by u64map_init) is an empty map;
 * it allocates nothing until the first put.
 *
 * Iteration: walk the slots directly, skipping the empty ones:
 *
 *     for (size_t i = 0; i < m->cap; i++)
 *         if (m->slots[i].key != 0) use(m->slots[i].key, m->slots[i].val);
 *
 * The map must not change during such a walk, because a put may grow the
 * table and a delete may move a later entry into an earlier slot: collect
 * the keys first to delete them, or restart the walk after each delete.
 */
#ifndef BATON_PROTO_U64MAP_H
#define BATON_PROTO_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct u64map_slot {
    uint64_t key; /* 0: the slot is empty */
    void *val;
};

struct u64map {
    struct u64map_slot *slots;
    size_t cap; /* a power of two, or 0 before the first put */
    size_t n;   /* the entries stored */
};

/* Make *m an empty map (the same as zeroing it). */
void u64map_init(struct u64map *m);

/* A key for bytes p[0..n) (a lock name): their FNV-1a 64, never 0. Keys
 * of different bytes may collide: a map keyed by them holds a list per
 * key and compares the bytes. */
uint64_t u64map_key(const void *p, size_t n);

/* Free the table (not the values) and leave *m empty and reusable. */
void u64map_free(struct u64map *m);

/* The value stored under key, or NULL if there is none (always for key 0). */
void *u64map_get(const struct u64map *m, uint64_t key);

/* Store val under key, replacing any value stored there, and grow the table
 * at 3/4 load. Returns 0; BATON_EINVAL for key 0; BATON_ENOMEM when the
 * table cannot grow, and then the map is unchanged. */
int u64map_put(struct u64map *m, uint64_t key, void *val);

/* Remove key and return its value, or NULL if it was absent. */
void *u64map_del(struct u64map *m, uint64_t key);

#endif
