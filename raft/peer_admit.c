/*
 * peer_admit.c -- which node ids the raft port admits. See peer_admit.h.
 */
#include "raft/peer_admit.h"

#include <string.h>

static void add(struct peer_admit *a, uint64_t id)
{
    if (peer_admit_has(a, id) || a->n == PEER_ADMIT_MAX) return;
    a->ids[a->n++] = id;
}

void peer_admit_compute(struct peer_admit *out, const struct peer_admit_in *in)
{
    memset(out, 0, sizeof *out);
    if (in->n_latest == 0 && in->n_committed == 0) {
        /* No configuration: a --join node waiting to be added. */
        if (!in->strict) {
            out->any = true;
            return;
        }
        for (unsigned i = 0; i < in->n_listed; i++) add(out, in->listed[i]);
        return;
    }
    for (unsigned i = 0; i < in->n_latest; i++) add(out, in->latest[i]);
    for (unsigned i = 0; i < in->n_committed; i++) add(out, in->committed[i]);
}

bool peer_admit_has(const struct peer_admit *a, uint64_t id)
{
    if (a->any) return true;
    for (unsigned i = 0; i < a->n; i++)
        if (a->ids[i] == id) return true;
    return false;
}

bool peer_admit_same(const struct peer_admit *a, const struct peer_admit *b)
{
    if (a->any != b->any || a->n != b->n) return false;
    for (unsigned i = 0; i < a->n; i++)
        if (!peer_admit_has(b, a->ids[i])) return false;
    return true;
}
