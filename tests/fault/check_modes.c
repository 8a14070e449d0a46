/*
 * check_modes.c -- the checker's rules that the lock modes add (README.md
 * in this directory, "What the checker checks"): the fenced store's three
 * kinds of guarded operation, the semaphore's limit, and fences that
 * increase across every name.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fault/check.h"

#define OPEN_MAX 64 /* as store.c */

/* ---- rule 2: the store's decisions ---------------------------------------------------- */

/* The open permits of one semaphore, as store.c keeps them. */
struct permits {
    uint64_t f[OPEN_MAX];
    int n;
};

static void permits_add(struct permits *p, uint64_t fence)
{
    int lo = 0;

    for (int i = 0; i < p->n; i++)
        if (p->f[i] == fence) return;
    if (p->n == OPEN_MAX) {
        for (int i = 1; i < p->n; i++)
            if (p->f[i] < p->f[lo]) lo = i;
        p->f[lo] = p->f[--p->n];
    }
    p->f[p->n++] = fence;
}

static void permits_del(struct permits *p, uint64_t fence)
{
    for (int i = 0; i < p->n; i++)
        if (p->f[i] == fence) {
            p->f[i] = p->f[--p->n];
            return;
        }
}

static int permits_above(const struct permits *p, uint64_t fence)
{
    int k = 0;

    for (int i = 0; i < p->n; i++) k += p->f[i] > fence;
    return k;
}

/*
 * Replay store.c's rules over its log: a write accepted only at or above
 * every fence accepted before (writes and reads), a read only at or above
 * every write's, a permit write only while fewer than N open permits are
 * newer. The store's own bookkeeping is what keeps a stale holder out, so
 * an accepted operation that breaks them is a violation of the harness's
 * resource (and would hide the stale writes the other rules look for).
 */
void ck_check_store(const struct ck_data *d, const char *lock)
{
    uint64_t max = 0, wmax = 0;
    struct permits open = {.n = 0};

    for (size_t i = 0; i < d->n_wr; i++) {
        const struct ck_write *w = &d->wr[i];
        if (strcmp(w->lock, lock) != 0) continue;
        switch (w->op) {
        case 'D':
            permits_del(&open, w->fence);
            continue;
        case 'P':
            if (!w->accepted) continue;
            if (permits_above(&open, w->fence) >= (int)w->limit)
                ck_violation(V_STORE_ORDER, "%s: permit write of fence %" PRIu64 " accepted at "
                             "+%.3f s with %d newer permits open (limit %u)", lock, w->fence,
                             ck_rel_s(w->t), permits_above(&open, w->fence), w->limit);
            permits_add(&open, w->fence);
            continue;
        case 'S':
            if (!w->accepted) continue;
            if (w->fence < wmax)
                ck_violation(V_STORE_ORDER, "%s: read of fence %" PRIu64 " accepted at +%.3f s "
                             "after a write of %" PRIu64, lock, w->fence, ck_rel_s(w->t), wmax);
            if (w->fence > max) max = w->fence;
            continue;
        default: /* W */
            if (!w->accepted) continue;
            if (w->fence < max)
                ck_violation(V_STORE_ORDER, "%s: fence %" PRIu64 " accepted at +%.3f s after %"
                             PRIu64, lock, w->fence, ck_rel_s(w->t), max);
            if (w->fence > max) max = w->fence;
            if (w->fence > wmax) wmax = w->fence;
        }
    }
}

/* ---- rule 3 for semaphores: at most N holders ---------------------------------------- */

/* How many of the sorted v[0..n) are <= t. */
static size_t count_le(const uint64_t *v, size_t n, uint64_t t)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t ck_certain_at(const struct ck_lockv *L, uint64_t t)
{
    /* [start, end) intervals: started at or before t, not ended by t. */
    return count_le(L->ok_start, L->n_ok, t) - count_le(L->ok_end, L->n_ok, t);
}

/*
 * A grant whose unlock returned 0 certainly held a permit from when its
 * lock callback ran until its unlock call (the cluster granted it before
 * the one and applied its release after the other). Any grant certainly
 * held one when its callback ran (it was granted before). So at the
 * moment a grant reached its client, that grant and every certain holder
 * then must number at most N. The most at once is at some grant's moment.
 */
size_t ck_check_limit(const struct ck_lockv *L)
{
    size_t most = 0;

    for (size_t i = 0; i < L->n; i++) {
        const struct ck_grant *g = L->v[i];
        size_t at = ck_certain_at(L, g->t_grant);
        if (!(g->rel_status == 0 && g->t_rel != 0)) at++; /* g itself, not counted yet */
        if (at > most) most = at;
        if (at > L->limit)
            ck_violation(V_OVER_LIMIT, "%s: client %d got fence %" PRIu64 " at +%.3f s while %zu "
                         "others certainly held a permit (limit %u)", L->lock, g->client,
                         g->fence, ck_rel_s(g->t_grant), at - 1, L->limit);
    }
    return most;
}

int ck_permit_taken(const struct ck_lockv *L, const struct ck_grant *g, uint64_t stop)
{
    size_t k;

    if (ck_certain_at(L, g->t_grant) >= L->limit) return 1;
    /* The count only rises at a start: look at each start inside. */
    for (k = count_le(L->ok_start, L->n_ok, g->t_grant); k < L->n_ok && L->ok_start[k] < stop; k++)
        if (ck_certain_at(L, L->ok_start[k]) >= L->limit) return 1;
    return 0;
}

/* ---- rule 5b: fences increase across names -------------------------------------------- */

static int cmp_att_sent(const void *a, const void *b)
{
    uint64_t x = (*(const struct ck_attempt *const *)a)->t_sent,
             y = (*(const struct ck_attempt *const *)b)->t_sent;
    return x < y ? -1 : x > y;
}

static int cmp_grant_t(const void *a, const void *b)
{
    uint64_t x = (*(const struct ck_grant *const *)a)->t_grant,
             y = (*(const struct ck_grant *const *)b)->t_grant;
    return x < y ? -1 : x > y;
}

/*
 * Every fence is greater than every fence granted before it, for any
 * name. What the logs can show of "before": grant G was applied before
 * its client logged GRANT, and request Q was committed (and then granted)
 * after its client logged ACQ. So if G's GRANT precedes Q's ACQ, G's fence
 * is lower than Q's -- whatever the names and modes, leader changes and
 * re-sent requests included (a re-send is applied once, after the ACQ).
 */
void ck_check_fence_global(const struct ck_data *d)
{
    struct ck_attempt **q = malloc((d->n_att + 1) * sizeof *q);
    struct ck_grant **g = malloc((d->n_gr + 1) * sizeof *g);
    const struct ck_grant *maxg = NULL;
    size_t nq = 0, j = 0;

    if (q == NULL || g == NULL) exit(2);
    for (size_t i = 0; i < d->n_att; i++)
        if (d->att[i].granted) q[nq++] = &d->att[i];
    for (size_t i = 0; i < d->n_gr; i++) g[i] = &d->gr[i];
    qsort(q, nq, sizeof *q, cmp_att_sent);
    qsort(g, d->n_gr, sizeof *g, cmp_grant_t);
    for (size_t i = 0; i < nq; i++) {
        while (j < d->n_gr && g[j]->t_grant < q[i]->t_sent) {
            if (maxg == NULL || g[j]->fence > maxg->fence) maxg = g[j];
            j++;
        }
        if (maxg && maxg->fence >= q[i]->fence)
            ck_violation(V_FENCE_GLOBAL, "client %d asked for %s at +%.3f s and got fence %" PRIu64
                         ", not above fence %" PRIu64 " of %s (client %d, granted +%.3f s)",
                         q[i]->client, q[i]->lock, ck_rel_s(q[i]->t_sent), q[i]->fence,
                         maxg->fence, maxg->lock, maxg->client, ck_rel_s(maxg->t_grant));
    }
    free(q);
    free(g);
}
