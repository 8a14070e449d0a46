/*
 * history.c -- the change history every node keeps of the applied entries:
 * which locks changed at which raft index, so that the leader can tell a
 * resuming watch (WATCH2 with `after`) whether what it watches changed
 * since (docs/design.md, "Watches").
 *
 * A ring of HIST_SIZE entries, one per FX_LOCK_CHANGED, fed by server.c
 * from the node's applied hook on every node, in commit order: the raft
 * index, a 64-bit hash of the lock's full name, its length and its first
 * HIST_HEAD bytes (for prefix matches). Its memory is fixed: HIST_SIZE *
 * sizeof(struct hist_entry), 3 MiB, allocated at start.
 *
 * The floor is the index at or above which the ring knows every change:
 * a question about (after, applied] is answered only if after >= floor.
 * It starts at the store's applied index when the process starts (what
 * was applied before is not in the ring), rises to the index of each
 * entry the ring overwrites, and to a snapshot's index when one is
 * installed (store_restored_index: the state jumped there without the
 * entries between being seen). Answers may say "changed" when nothing
 * did (two names with one hash, a prefix longer than HIST_HEAD bytes):
 * that costs a client a needless GAP or restart, never a missed change.
 */
#include <stdlib.h>
#include <string.h>

#include "server/server_int.h"

void hist_init(struct history *h, store *st)
{
    h->v = xcalloc(HIST_SIZE, sizeof *h->v);
    h->n = 0;
    h->floor = store_applied_index(st);
    h->restored = store_restored_index(st);
    h->st = st;
}

void hist_free(struct history *h)
{
    free(h->v);
    h->v = NULL;
}

/* A snapshot installed since the last look: nothing up to it is known. */
static void hist_sync(struct history *h)
{
    uint64_t r = store_restored_index(h->st);

    if (r == h->restored) return;
    h->restored = r;
    if (r > h->floor) h->floor = r;
}

uint64_t hist_floor(struct history *h)
{
    hist_sync(h);
    return h->floor;
}

void hist_applied(struct history *h, const struct effects *fx)
{
    hist_sync(h);
    if (fx->index <= h->floor) return; /* replayed: its changes predate the ring */
    for (size_t i = 0; i < fx->n_fx; i++) {
        const struct effect *e = &fx->fx[i];
        struct hist_entry *s;
        if (e->type != FX_LOCK_CHANGED) continue;
        s = &h->v[h->n % HIST_SIZE];
        if (h->n >= HIST_SIZE && s->index > h->floor) h->floor = s->index;
        s->index = fx->index;
        s->hash = u64map_key(e->name, e->name_len);
        s->len = e->name_len;
        memcpy(s->head, e->name, e->name_len < HIST_HEAD ? e->name_len : HIST_HEAD);
        h->n++;
    }
}

/* The position (in 0..n) of the oldest entry still held whose index is
 * above `after`: a binary search, indexes rising along the ring. */
static uint64_t first_after(const struct history *h, uint64_t after)
{
    uint64_t lo = h->n > HIST_SIZE ? h->n - HIST_SIZE : 0, hi = h->n;

    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (h->v[mid % HIST_SIZE].index > after) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

static bool entry_matches(const struct hist_entry *s, bool prefix, uint64_t hash, const char *key,
                          size_t len)
{
    size_t head = len < HIST_HEAD ? len : HIST_HEAD;

    if (!prefix) return s->hash == hash && s->len == len && memcmp(s->head, key, head) == 0;
    return s->len >= len && memcmp(s->head, key, head) == 0;
}

bool hist_changed(struct history *h, uint64_t after, bool prefix, const char *key, size_t len)
{
    uint64_t hash = u64map_key(key, len);

    for (uint64_t i = first_after(h, after); i < h->n; i++)
        if (entry_matches(&h->v[i % HIST_SIZE], prefix, hash, key, len)) return true;
    return false;
}
