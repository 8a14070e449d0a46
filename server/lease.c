/*
 * lease.c -- see lease.h.
 *
 * A linear scan finds expired leases. The leader scans at most every tick
 * (server/liveness.c), and a scan of 10,000 sessions costs a few tens of
 * microseconds, so a heap would not pay for itself yet.
 */
#include "server/lease.h"
#include "server/xmalloc.h"

#include <stdlib.h>

#include "baton/baton_defs.h"

void lease_init(struct lease_table *t)
{
    u64map_init(&t->map);
}

void lease_free(struct lease_table *t)
{
    for (size_t i = 0; i < t->map.cap; i++)
        if (t->map.slots[i].key) free(t->map.slots[i].val);
    u64map_free(&t->map);
}

void lease_grant(struct lease_table *t, uint64_t session, uint32_t ttl_ms, uint64_t now)
{
    struct lease *l = u64map_get(&t->map, session);

    if (l == NULL) {
        l = xcalloc(1, sizeof *l);
        xu64map_put(&t->map, session, l);
    }
    l->session = session;
    l->ttl_ms = ttl_ms;
    l->deadline = now + ttl_ms;
    l->expiring = false;
    l->retry_at = 0;
}

bool lease_renew(struct lease_table *t, uint64_t session, uint64_t now)
{
    struct lease *l = u64map_get(&t->map, session);

    if (l == NULL || l->expiring) return false;
    l->deadline = now + l->ttl_ms;
    return true;
}

bool lease_alive(const struct lease_table *t, uint64_t session)
{
    const struct lease *l = u64map_get(&t->map, session);
    return l != NULL && !l->expiring;
}

uint32_t lease_ttl(const struct lease_table *t, uint64_t session)
{
    const struct lease *l = u64map_get(&t->map, session);
    return l != NULL ? l->ttl_ms : 0;
}

void lease_remove(struct lease_table *t, uint64_t session)
{
    free(u64map_del(&t->map, session));
}

void lease_set_owner(struct lease_table *t, uint64_t session, uint64_t owner)
{
    struct lease *l = u64map_get(&t->map, session);
    if (l != NULL) l->owner = owner;
}

bool lease_owner(const struct lease_table *t, uint64_t session, uint64_t *owner)
{
    const struct lease *l = u64map_get(&t->map, session);

    if (l == NULL) return false;
    *owner = l->owner;
    return true;
}

size_t lease_collect_expired(struct lease_table *t, uint64_t now, uint64_t *out, size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < t->map.cap && n < max; i++) {
        struct lease *l = t->map.slots[i].val;
        if (t->map.slots[i].key == 0) continue;
        if (l->expiring ? now < l->retry_at : now < l->deadline) continue;
        l->expiring = true;
        l->retry_at = now + LEASE_RETRY_MS;
        out[n++] = l->session;
    }
    return n;
}

uint64_t lease_next_deadline(const struct lease_table *t)
{
    uint64_t next = UINT64_MAX;

    for (size_t i = 0; i < t->map.cap; i++) {
        const struct lease *l = t->map.slots[i].val;
        uint64_t when;
        if (t->map.slots[i].key == 0) continue;
        when = l->expiring ? l->retry_at : l->deadline;
        if (when < next) next = when;
    }
    return next;
}

size_t lease_count(const struct lease_table *t)
{
    return t->map.n;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

size_t lease_sessions_of(const struct lease_table *t, uint64_t owner, uint64_t after,
                         uint64_t **out)
{
    size_t n = 0, cap = 0;
    uint64_t *ids = NULL;

    for (size_t i = 0; i < t->map.cap; i++) {
        const struct lease *l = t->map.slots[i].val;
        if (t->map.slots[i].key == 0 || l->owner != owner || l->session <= after) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            ids = xrealloc(ids, cap * sizeof *ids);
        }
        ids[n++] = l->session;
    }
    if (n > 1) qsort(ids, n, sizeof *ids, cmp_u64);
    *out = ids;
    return n;
}
