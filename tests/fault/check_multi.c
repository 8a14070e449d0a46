/*
 * check_multi.c -- the checker's rule for atomic multi-locks (README.md in
 * this directory, "What the checker checks", rule 9): a multi-lock's names
 * are held as one.
 *
 * The rules that look at one name (3, 4, 5, 6, 7) already judge every name
 * of a multi-lock, as a hold of that name (check_load.c gives each name the
 * hold's unlock outcome and notice of loss): nobody else holds one of its
 * names while it holds them all, a name taken from it must be told, fences
 * and FIFO per name. What is left is what only the hold as a whole shows:
 *
 *  - all or nothing: a multi-lock call is granted on every one of its
 *    names with one fence (and one session), or on none of them;
 *  - told once, by its first name: the lost callback runs once for the
 *    hold and names its first name (the handle), and unlock is answered
 *    for the first name;
 *  - released means released: a lock call of a client answered
 *    BATON_EDEADLK ("the caller already holds or waits for the lock")
 *    for a name its previous call held and released with an unlock that
 *    returned 0. A client makes one call at a time, so its session holds
 *    and waits for nothing else; the cluster applied the release before
 *    answering it, and the new call was sent after. A multi-lock's release
 *    that let go of some of its names only would show here the next time
 *    the client asks for one of the others.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "tests/fault/check.h"

int ck_hold_has(const struct ck_data *d, const struct ck_grant *g, const char *lock)
{
    for (size_t i = g->hold; i < g->hold + (size_t)g->n_names && i < d->n_gr; i++)
        if (strcmp(d->gr[i].lock, lock) == 0) return 1;
    return 0;
}

/* All or nothing: the names of call att[i..j) (ACQ lines of one attempt)
 * granted all with one fence, or none. */
static void check_call(const struct ck_data *d, size_t i, size_t j)
{
    const struct ck_attempt *a = &d->att[i];
    size_t granted = 0;

    for (size_t k = i; k < j; k++) {
        const struct ck_attempt *b = &d->att[k];
        granted += (size_t)b->granted;
        if (b->granted && a->granted && b->fence != a->fence)
            ck_violation(V_MULTI, "client %d's multi-lock call %" PRIu64 " got fence %" PRIu64
                         " on %s and %" PRIu64 " on %s", a->client, a->id, a->fence, a->lock,
                         b->fence, b->lock);
    }
    if (granted != 0 && granted != j - i)
        ck_violation(V_MULTI, "client %d's multi-lock call %" PRIu64 " (first name %s, sent "
                     "+%.3f s) was granted %zu of its %zu names", a->client, a->id, a->lock,
                     ck_rel_s(a->t_sent), granted, j - i);
}

/* Told once, by its first name: hold gr[i..i+n). *told counts holds told. */
static void check_hold(const struct ck_data *d, size_t i, uint64_t *told)
{
    const struct ck_grant *h = &d->gr[i];
    int lost = 0;

    for (size_t k = i; k < i + (size_t)h->n_names; k++) {
        const struct ck_grant *g = &d->gr[k];
        lost += g->n_lost;
        if (g->session != h->session)
            ck_violation(V_MULTI, "client %d's multi-lock of fence %" PRIu64 " was granted %s "
                         "in session %" PRIu64 " and %s in session %" PRIu64, h->client,
                         h->fence, h->lock, h->session, g->lock, g->session);
        if (k > i && (g->n_lost || g->n_reld))
            ck_violation(V_MULTI, "client %d's multi-lock of fence %" PRIu64 " was %s by %s, "
                         "not by its first name %s", h->client, h->fence,
                         g->n_lost ? "reported lost" : "unlocked", g->lock, h->lock);
    }
    if (lost > 1)
        ck_violation(V_MULTI, "client %d's multi-lock of fence %" PRIu64 " (first name %s) was "
                     "reported lost %d times", h->client, h->fence, h->lock, lost);
    *told += h->t_told != 0;
}

/* Is `lock` among the names of client c's call that ends just before
 * att[i] (its previous call), granted and released with an unlock that
 * returned 0? */
static int released_just_before(const struct ck_data *d, size_t i, const char *lock)
{
    size_t p;

    if (i == 0 || d->att[i - 1].client != d->att[i].client) return 0;
    for (p = i - 1; p > 0 && !d->att[p].first; p--) {}
    for (size_t k = p; k < i; k++) {
        const struct ck_attempt *b = &d->att[k];
        if (!b->granted || strcmp(b->lock, lock) != 0) continue;
        for (size_t g = 0; g < d->n_gr; g++)
            if (d->gr[g].client == b->client && d->gr[g].attempt == b->id &&
                strcmp(d->gr[g].lock, lock) == 0)
                return d->gr[g].rel_status == 0;
    }
    return 0;
}

/* Released means released: no BATON_EDEADLK for a name the client's
 * previous call released with an unlock that returned 0. */
static void check_still_held(const struct ck_data *d, size_t i, size_t j, uint64_t *edeadlk)
{
    for (size_t k = i; k < j; k++) {
        const struct ck_attempt *a = &d->att[k];
        if (a->granted || a->status != BATON_EDEADLK) continue;
        ++*edeadlk;
        if (released_just_before(d, i, a->lock))
            ck_violation(V_STILL_HELD, "client %d's call %" PRIu64 " for %s (sent +%.3f s) was "
                         "answered BATON_EDEADLK, yet its previous call's unlock of %s had "
                         "returned 0", a->client, a->id, a->lock, ck_rel_s(a->t_sent), a->lock);
    }
}

#define SIZES 5 /* calls counted by names: 2, 3, 4 or more */

void ck_check_multi(const struct ck_data *d)
{
    uint64_t calls[SIZES] = {0}, n_calls = 0, granted = 0, queued = 0, names = 0, told = 0,
             released = 0, edeadlk = 0;

    for (size_t i = 0, j; i < d->n_att; i = j) {
        j = i + (size_t)(d->att[i].n_names > 0 ? d->att[i].n_names : 1);
        if (j > d->n_att) j = d->n_att;
        check_still_held(d, i, j, &edeadlk);
        if (j - i < 2) continue;
        n_calls++;
        calls[j - i < SIZES - 1 ? j - i : SIZES - 1]++;
        check_call(d, i, j);
        queued += d->att[i].t_queued != 0;
    }
    for (size_t i = 0; i < d->n_gr; i += (size_t)(d->gr[i].n_names > 0 ? d->gr[i].n_names : 1)) {
        if (d->gr[i].n_names < 2) continue;
        granted++;
        names += (uint64_t)d->gr[i].n_names;
        released += d->gr[i].rel_status == 0;
        check_hold(d, i, &told);
    }
    printf("multi-locks: %" PRIu64 " calls (%" PRIu64 " of 2 names, %" PRIu64 " of 3, %" PRIu64
           " of more; %" PRIu64 " queued), %" PRIu64 " granted (%" PRIu64 " names, one fence "
           "each), %" PRIu64 " released OK, %" PRIu64 " told lost; lock calls answered "
           "BATON_EDEADLK: %" PRIu64 "\n", n_calls, calls[2], calls[3], calls[4], queued, granted,
           names, released, told, edeadlk);
}
