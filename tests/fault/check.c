/*
 * check.c -- faultcheck: decide, from the logs of one fault-harness run,
 * whether the lock service kept its guarantees, and print the run's numbers.
 *
 *   faultcheck DIR
 *
 * DIR holds client-*.log (client.c), store.log (store.c) and nemesis.log
 * (run.c). Exit status: 0 if no rule was broken, 1 if one was (each break
 * is printed on a "VIOLATION" or "SILENT LOSS" line), 2 if the logs could
 * not be read.
 *
 * Every process of the harness stamps its lines with the same clock
 * (CLOCK_MONOTONIC, one per machine), so events of different processes
 * can be ordered. The rules (README.md in this directory has the why):
 *
 *  1. Fences are unique: no fence is in two grants.
 *  2. The fenced store's accepted fences never go down, per lock (a check
 *     on the store itself).
 *  3. One holder at a time. If holder A's unlock returned 0, the cluster
 *     counted A as the holder from A's grant until it applied the release,
 *     which came after A called unlock (t_rel). So no other grant of that
 *     lock may reach its client, and the store may accept no other fence
 *     of that lock, between A's grant and A's t_rel.
 *  4. Never silently dropped. A grant must end in a successful unlock or
 *     with its holder told (lost callback, or unlock answering
 *     BATON_ELOST). Evidence that the lock was taken from A while A
 *     believed it held it -- the store rejected A's write, or a higher
 *     fence of the lock was granted before A called unlock -- with A never
 *     told, or an unlock answering BATON_ENOTHELD without a notice, or a
 *     grant neither released nor reported lost, is a silent loss.
 *  5. Fences increase in grant order: a grant that reaches its client
 *     after another grant of the lock has ended (unlock answered, or its
 *     holder told of the loss) has a higher fence.
 *  6. FIFO: if P's ACQUIRE was known committed (QUEUED or GRANT logged)
 *     before Q's ACQUIRE was sent, and both were granted, P's fence is
 *     lower (fences are handed out in grant order).
 *  7. An operator's taking is always told. Every hold a forced release
 *     took (FORCED in nemesis.log) and every hold of a session an admin
 *     expiry ended (EXPIRED) ends with its holder told -- the lost
 *     callback, or unlock answering BATON_ELOST -- unless the holder had
 *     called unlock before the operator acted; an unlock that returned 0
 *     for a hold a forced release took is a violation. A forced release
 *     with --now and an expiry hand the lock on at once, so the old
 *     holder's writes accepted by the store meanwhile (before it hears)
 *     are what the fence is for, not a breach of rule 3: rule 3 does not
 *     count them.
 *  8. The hostile client's requests, which name sessions of another
 *     principal, are all refused (check_hostile.c).
 *
 * It also prints the operations, the faults of each kind (nemesis.log),
 * the lost-with-notice counts and the longest time without any grant.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/baton_defs.h"
#include "tests/fault/check.h"

#define SHOW_MAX 10 /* detailed lines per kind */

enum vkind {
    V_FENCE_REUSE,
    V_STORE_ORDER,
    V_DOUBLE_GRANT,
    V_TWO_WRITERS,
    V_FENCE_ORDER,
    V_FIFO,
    V_RELEASE_AFTER_LOST,
    V_RELEASE_AFTER_FORCED,
    V_HOSTILE,
    V_COUNT
};

static const char *vname[V_COUNT] = {
    "fence issued twice", "store accepted a lower fence", "two holders granted at once",
    "two holders' writes accepted at once", "fence not increasing in grant order",
    "FIFO order broken", "unlock succeeded after the lock was reported lost",
    "unlock succeeded for a hold an operator had taken",
    "hostile request not refused",
};

static uint64_t viol[V_COUNT];
static uint64_t t0; /* first event: times are printed relative to it */

static double rel_s(uint64_t t)
{
    return t >= t0 ? (double)(t - t0) / 1e6 : -(double)(t0 - t) / 1e6;
}

static void violation(enum vkind k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void violation(enum vkind k, const char *fmt, ...)
{
    va_list ap;

    if (viol[k]++ >= SHOW_MAX) return;
    printf("VIOLATION (%s): ", vname[k]);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

/* ---- sorting helpers ---------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_grant_t(const void *a, const void *b)
{
    const struct ck_grant *x = *(const struct ck_grant *const *)a,
                          *y = *(const struct ck_grant *const *)b;
    return x->t_grant < y->t_grant ? -1 : x->t_grant > y->t_grant;
}

/* ---- the locks ------------------------------------------------------------------ */

/* The distinct lock names of the grants (few: the hot locks). */
static size_t lock_names(const struct ck_data *d, char (*names)[CK_LOCK_MAX], size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < d->n_gr; i++) {
        size_t k;
        for (k = 0; k < n; k++)
            if (strcmp(names[k], d->gr[i].lock) == 0) break;
        if (k == n && n < max) snprintf(names[n++], CK_LOCK_MAX, "%s", d->gr[i].lock);
    }
    return n;
}

/* Grants of one lock sorted by t_grant; *n set. Caller frees. */
static struct ck_grant **grants_of(const struct ck_data *d, const char *lock, size_t *n)
{
    struct ck_grant **v = malloc((d->n_gr + 1) * sizeof *v);

    *n = 0;
    if (v == NULL) exit(2);
    for (size_t i = 0; i < d->n_gr; i++)
        if (strcmp(d->gr[i].lock, lock) == 0) v[(*n)++] = &d->gr[i];
    qsort(v, *n, sizeof *v, cmp_grant_t);
    return v;
}

/* First index in v[0..n) (sorted by t_grant) with t_grant > t. */
static size_t first_grant_after(struct ck_grant **v, size_t n, uint64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v[mid]->t_grant <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* ---- rule 1: unique fences -------------------------------------------------------- */

static void check_fence_unique(const struct ck_data *d)
{
    uint64_t *f = malloc((d->n_gr + 1) * sizeof *f);

    if (f == NULL) exit(2);
    for (size_t i = 0; i < d->n_gr; i++) f[i] = d->gr[i].fence;
    qsort(f, d->n_gr, sizeof *f, cmp_u64);
    for (size_t i = 1; i < d->n_gr; i++)
        if (f[i] == f[i - 1]) violation(V_FENCE_REUSE, "fence %" PRIu64 " granted twice", f[i]);
    free(f);
}

/* ---- rule 2: the store ------------------------------------------------------------ */

static void check_store(const struct ck_data *d, const char *lock)
{
    uint64_t max = 0;

    for (size_t i = 0; i < d->n_wr; i++) {
        const struct ck_write *w = &d->wr[i];
        if (!w->accepted || strcmp(w->lock, lock) != 0) continue;
        if (w->fence < max)
            violation(V_STORE_ORDER, "%s: fence %" PRIu64 " accepted at +%.3f s after %" PRIu64,
                      lock, w->fence, rel_s(w->t), max);
        if (w->fence > max) max = w->fence;
    }
}

/* ---- rule 3: one holder at a time ---------------------------------------------------- */

/* One lock's grants (sorted by t_grant, with prefix maxima of their
 * fences) and the store's accepted writes of it (in time order). */
struct lockv {
    struct ck_grant **v;
    size_t n;
    uint64_t *premax;          /* premax[i]: highest fence of v[0..i) */
    const struct ck_write **w;
    size_t nw;
};

static void lockv_build(const struct ck_data *d, const char *lock, struct lockv *L)
{
    L->v = grants_of(d, lock, &L->n);
    L->premax = malloc((L->n + 1) * sizeof *L->premax);
    L->w = malloc((d->n_wr + 1) * sizeof *L->w);
    if (L->premax == NULL || L->w == NULL) exit(2);
    L->premax[0] = 0;
    for (size_t i = 0; i < L->n; i++)
        L->premax[i + 1] = L->v[i]->fence > L->premax[i] ? L->v[i]->fence : L->premax[i];
    L->nw = 0;
    for (size_t i = 0; i < d->n_wr; i++)
        if (d->wr[i].accepted && strcmp(d->wr[i].lock, lock) == 0) L->w[L->nw++] = &d->wr[i];
}

static void lockv_free(struct lockv *L)
{
    free(L->v);
    free(L->premax);
    free(L->w);
}

/* The session of the grant of `fence` among L's grants, 0 if none. */
static uint64_t session_of_fence(const struct lockv *L, uint64_t fence)
{
    for (size_t i = 0; i < L->n; i++)
        if (L->v[i]->fence == fence) return L->v[i]->session;
    return 0;
}

/* Had an operator, by time t, handed on the hold `fence` of `lock` at once
 * -- a forced release with --now (or one that may have been, fence 0), or
 * an expiry of its session -- so that its holder could still write before
 * hearing of it? (Rule 7.) */
static int handed_on_by_operator(const struct ck_data *d, const struct lockv *L, const char *lock,
                                 uint64_t fence, uint64_t t)
{
    uint64_t session = 0;

    for (size_t i = 0; i < d->n_tk; i++) {
        const struct ck_taken *tk = &d->tk[i];
        if (tk->t_sent > t) continue;
        if (!tk->expiry) {
            if (tk->now && strcmp(tk->lock, lock) == 0 && (tk->fence == fence || tk->fence == 0))
                return 1;
            continue;
        }
        if (session == 0) session = session_of_fence(L, fence);
        if (session != 0 && tk->session == session) return 1;
    }
    return 0;
}

/* Grant g ended with a successful unlock: nothing else of its lock may be
 * granted or written between its grant and its unlock call (except the
 * stale writes of a hold an operator handed on at once: rule 7). */
static void check_one_holder(const struct ck_data *d, const struct ck_grant *g,
                             const struct lockv *L)
{
    struct ck_grant **v = L->v;
    size_t n = L->n, lo = 0, hi = L->nw;

    if (g->rel_status != 0 || g->t_rel == 0) return;
    for (size_t k = first_grant_after(v, n, g->t_grant); k < n && v[k]->t_grant < g->t_rel; k++)
        if (v[k] != g)
            violation(V_DOUBLE_GRANT,
                      "%s: client %d got fence %" PRIu64 " at +%.3f s while client %d held "
                      "fence %" PRIu64 " (granted +%.3f s, released OK, unlock called +%.3f s)",
                      g->lock, v[k]->client, v[k]->fence, rel_s(v[k]->t_grant), g->client,
                      g->fence, rel_s(g->t_grant), rel_s(g->t_rel));
    while (lo < hi) { /* the first accepted write after the grant */
        size_t mid = (lo + hi) / 2;
        if (L->w[mid]->t <= g->t_grant)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < L->nw && L->w[i]->t < g->t_rel; i++) {
        const struct ck_write *w = L->w[i];
        if (w->fence != g->fence && !handed_on_by_operator(d, L, g->lock, w->fence, w->t))
            violation(V_TWO_WRITERS,
                      "%s: store accepted fence %" PRIu64 " at +%.3f s while client %d held "
                      "fence %" PRIu64 " (granted +%.3f s, released OK, unlock called +%.3f s)",
                      g->lock, w->fence, rel_s(w->t), g->client, g->fence, rel_s(g->t_grant),
                      rel_s(g->t_rel));
    }
}

/* ---- rule 4: never silently dropped ----------------------------------------------------- */

struct notice_stats {
    uint64_t released_ok, told, told_late, unconfirmed, silent, stale_rejects;
};

static void silent(struct notice_stats *ns, const struct ck_grant *g, const char *why)
{
    if (ns->silent++ < SHOW_MAX)
        printf("SILENT LOSS: %s: client %d, fence %" PRIu64 " (granted +%.3f s): %s\n", g->lock,
               g->client, g->fence, rel_s(g->t_grant), why);
}

static void check_notice(const struct ck_grant *g, const struct lockv *L,
                         struct notice_stats *ns)
{
    uint64_t stop = g->t_rel ? g->t_rel : UINT64_MAX;
    int taken = g->n_rej > 0, told = g->t_told != 0;

    /* A higher fence of the lock reached its client before g's holder let
     * go: the cluster had taken the lock from g. */
    if (L->premax[first_grant_after(L->v, L->n, stop - 1)] > g->fence) taken = 1;
    ns->stale_rejects += (uint64_t)g->n_rej;

    if (told && g->rel_status == 0)
        violation(V_RELEASE_AFTER_LOST, "%s: client %d fence %" PRIu64 " was reported lost at "
                  "+%.3f s, yet its unlock returned 0", g->lock, g->client, g->fence,
                  rel_s(g->t_told));
    if (g->rel_status == 0) {
        ns->released_ok++; /* an overlap here is rule 3's violation */
        return;
    }
    if (told) {
        ns->told++;
        if (taken) ns->told_late++;
        return;
    }
    if (g->rel_status == BATON_ENOTHELD)
        silent(ns, g, "unlock answered BATON_ENOTHELD and the holder was never told");
    else if (taken)
        silent(ns, g, g->n_rej ? "the store rejected its write (a newer fence had written) and "
                                 "the holder was never told"
                               : "a higher fence was granted before it let go, and it was never "
                                 "told");
    else if (g->t_rel == 0)
        silent(ns, g, "neither released nor reported lost");
    else
        ns->unconfirmed++; /* unlock timed out / unavailable: stopped using it, fine */
}

/* ---- rule 7: an operator's taking is always told ----------------------------------------- */

struct taken_stats {
    uint64_t forced, forced_now, expired, maybe, holds, told, unseen, stopped_before;
    uint64_t max_us;     /* the longest from batonctl's start to the holder's notice */
};

/* Hold g was taken by tk: it must end with its holder told, unless the
 * holder had already called unlock. */
static void taken_hold(const struct ck_grant *g, const struct ck_taken *tk,
                       struct notice_stats *ns, struct taken_stats *ts)
{
    if (tk->expiry) {
        /* Only the holds the session still had when the operator acted:
         * not those it released (a release that returned 0 applied before
         * the expiry) or had been told it lost before. */
        if (g->rel_status == 0 || (g->t_rel != 0 && g->t_rel < tk->t_sent) ||
            (g->t_told != 0 && g->t_told < tk->t_sent))
            return;
    }
    ts->holds++;
    if (g->rel_status == 0) {
        violation(V_RELEASE_AFTER_FORCED, "%s: client %d fence %" PRIu64 " was force-released "
                  "(batonctl sent +%.3f s), yet its unlock returned 0", g->lock, g->client,
                  g->fence, rel_s(tk->t_sent));
        return;
    }
    if (g->t_rel != 0 && g->t_rel < tk->t_sent) {
        ts->stopped_before++;
        return;
    }
    if (g->t_told == 0) {
        silent(ns, g, tk->expiry ? "an operator expired its session and the holder was never told"
                                 : "an operator forced its release and the holder was never told");
        return;
    }
    ts->told++;
    if (g->t_told > tk->t_sent && g->t_told - tk->t_sent > ts->max_us)
        ts->max_us = g->t_told - tk->t_sent;
}

static void check_taken(const struct ck_data *d, struct notice_stats *ns, struct taken_stats *ts)
{
    for (size_t i = 0; i < d->n_tk; i++) {
        const struct ck_taken *tk = &d->tk[i];
        int seen = 0;

        if (tk->maybe) {
            ts->maybe++;
            continue;
        }
        if (tk->expiry) {
            ts->expired++;
        } else {
            ts->forced++;
            ts->forced_now += (uint64_t)tk->now;
        }
        for (size_t j = 0; j < d->n_gr; j++) {
            const struct ck_grant *g = &d->gr[j];
            if (tk->expiry ? g->session != tk->session || g->t_grant > tk->t
                           : g->fence != tk->fence || strcmp(g->lock, tk->lock) != 0)
                continue;
            seen = 1;
            taken_hold(g, tk, ns, ts);
        }
        /* A forced hold no client logged: granted to a lock call that had
         * already given up (its client releases it itself). */
        if (!seen && !tk->expiry) ts->unseen++;
    }
}

/* ---- rule 5: fences increase in grant order ------------------------------------------------ */

struct ended {
    uint64_t t, fence;
    const struct ck_grant *g;
};

static int cmp_ended(const void *a, const void *b)
{
    const struct ended *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

static void check_fence_order(struct ck_grant **v, size_t n)
{
    struct ended *e = malloc((n + 1) * sizeof *e);
    size_t ne = 0, j = 0;
    const struct ck_grant *maxg = NULL;

    if (e == NULL) exit(2);
    for (size_t i = 0; i < n; i++) {
        uint64_t end = v[i]->rel_status == 0 ? v[i]->t_reld : v[i]->t_told;
        if (end) e[ne++] = (struct ended){end, v[i]->fence, v[i]};
    }
    qsort(e, ne, sizeof *e, cmp_ended);
    for (size_t i = 0; i < n; i++) {
        while (j < ne && e[j].t < v[i]->t_grant) {
            if (maxg == NULL || e[j].fence > maxg->fence) maxg = e[j].g;
            j++;
        }
        if (maxg && v[i]->fence <= maxg->fence)
            violation(V_FENCE_ORDER,
                      "%s: client %d got fence %" PRIu64 " at +%.3f s, after fence %" PRIu64
                      " (client %d) had ended",
                      v[i]->lock, v[i]->client, v[i]->fence, rel_s(v[i]->t_grant), maxg->fence,
                      maxg->client);
    }
    free(e);
}

/* ---- rule 6: FIFO ------------------------------------------------------------------------- */

static uint64_t known_at(const struct ck_attempt *a)
{
    return a->t_queued ? a->t_queued : a->t_end;
}

static int cmp_att_known(const void *a, const void *b)
{
    uint64_t x = known_at(*(const struct ck_attempt *const *)a),
             y = known_at(*(const struct ck_attempt *const *)b);
    return x < y ? -1 : x > y;
}

static int cmp_att_sent(const void *a, const void *b)
{
    uint64_t x = (*(const struct ck_attempt *const *)a)->t_sent,
             y = (*(const struct ck_attempt *const *)b)->t_sent;
    return x < y ? -1 : x > y;
}

/* Returns the number of (P, Q) pairs where P was waiting in the queue,
 * known committed, when Q was sent: the pairs that really test FIFO. */
static uint64_t check_fifo(const struct ck_data *d, const char *lock)
{
    struct ck_attempt **k = malloc((d->n_att + 1) * sizeof *k), **s;
    const struct ck_attempt *maxp = NULL;
    size_t n = 0, j = 0;
    uint64_t pairs = 0;

    s = malloc((d->n_att + 1) * sizeof *s);
    if (k == NULL || s == NULL) exit(2);
    for (size_t i = 0; i < d->n_att; i++)
        if (d->att[i].granted && strcmp(d->att[i].lock, lock) == 0) k[n++] = &d->att[i];
    memcpy(s, k, n * sizeof *k);
    qsort(k, n, sizeof *k, cmp_att_known);
    qsort(s, n, sizeof *s, cmp_att_sent);
    for (size_t i = 0; i < n; i++) {
        const struct ck_attempt *q = s[i];
        while (j < n && known_at(k[j]) < q->t_sent) {
            if (maxp == NULL || k[j]->fence > maxp->fence) maxp = k[j];
            j++;
        }
        if (maxp && maxp->fence >= q->fence)
            violation(V_FIFO,
                      "%s: client %d's acquire was committed (+%.3f s) before client %d sent "
                      "its own (+%.3f s), yet got fence %" PRIu64 " >= %" PRIu64,
                      lock, maxp->client, rel_s(known_at(maxp)), q->client, rel_s(q->t_sent),
                      maxp->fence, q->fence);
        /* Count the queued predecessors still waiting when q was sent. */
        for (size_t m = j; m-- > 0;) {
            const struct ck_attempt *p = k[m];
            if (known_at(p) + 60000000u < q->t_sent) break;
            if (p->t_queued && p->t_end > q->t_sent) pairs++;
        }
    }
    free(k);
    free(s);
    return pairs;
}

/* ---- availability and faults --------------------------------------------------------------- */

static void print_faults(const struct ck_data *d)
{
    char kinds[32][32];
    uint64_t count[32] = {0};
    size_t nk = 0;

    printf("faults:");
    for (size_t i = 0; i < d->n_fa; i++) {
        size_t k;
        if (d->fa[i].heal) continue;
        for (k = 0; k < nk; k++)
            if (strcmp(kinds[k], d->fa[i].kind) == 0) break;
        if (k == nk) {
            if (nk == 32) continue;
            snprintf(kinds[nk++], sizeof kinds[0], "%s", d->fa[i].kind);
        }
        count[k]++;
    }
    for (size_t k = 0; k < nk; k++) printf("%s %s %" PRIu64, k ? "," : "", kinds[k], count[k]);
    printf("%s\n", nk ? "" : " none");
}

/* The fault a stretch without grants that began at time t is put down to:
 * the last one that began before t + 0.5 s (grants come every few tens of
 * ms, so a stretch that begins just before a fault is that fault's), or
 * NULL if none began in the 15 s before. */
static const struct ck_fault *cause_of(const struct ck_data *d, uint64_t t)
{
    const struct ck_fault *last = NULL;

    t += 500000u;
    for (size_t i = 0; i < d->n_fa && d->fa[i].t <= t; i++)
        if (!d->fa[i].heal) last = &d->fa[i];
    return last && last->t + 15000000u >= t ? last : NULL;
}

/* For each kind of fault, the longest stretch without any grant put down
 * to a fault of that kind (cause_of). t: grant times, sorted. */
static void print_gaps_by_fault(const struct ck_data *d, const uint64_t *t, size_t n)
{
    char kinds[32][32];
    uint64_t worst[32] = {0}, quiet = 0;
    size_t nk = 0;

    for (size_t i = 0; i < d->n_fa; i++) { /* every kind, in order of appearance */
        size_t k;
        if (d->fa[i].heal) continue;
        for (k = 0; k < nk; k++)
            if (strcmp(kinds[k], d->fa[i].kind) == 0) break;
        if (k == nk && nk < 32) snprintf(kinds[nk++], sizeof kinds[0], "%s", d->fa[i].kind);
    }
    for (size_t m = 1; m < n; m++) {
        uint64_t gap = t[m] - t[m - 1];
        const struct ck_fault *f;
        size_t k;

        if (gap < 100000u) continue; /* not worth the search */
        f = cause_of(d, t[m - 1]);
        if (f == NULL) {
            if (gap > quiet) quiet = gap;
            continue;
        }
        for (k = 0; k < nk; k++)
            if (strcmp(kinds[k], f->kind) == 0) break;
        if (k < nk && gap > worst[k]) worst[k] = gap;
    }
    printf("longest time without a grant, by the fault that preceded it:");
    for (size_t k = 0; k < nk; k++)
        printf("%s %s %.2f s", k ? "," : "", kinds[k], (double)worst[k] / 1e6);
    printf("%s no fault in the 15 s before %.2f s\n", nk ? ";" : "", (double)quiet / 1e6);
}

/* The longest stretch without any grant, from the first grant to the end
 * of the logs (an outage that lasts until the clients stop counts too),
 * and the faults in effect during it (or, if none, the last one before it:
 * recovery can outlast a fault). The nemesis runs one fault at a time, so a
 * FAULT line's HEAL is the next HEAL line. */
static void print_unavailability(const struct ck_data *d)
{
    uint64_t *t = malloc((d->n_gr + 1) * sizeof *t), best = 0, at = 0;
    const struct ck_fault *cause;

    if (t == NULL) exit(2);
    for (size_t i = 0; i < d->n_gr; i++) t[i] = d->gr[i].t_grant;
    qsort(t, d->n_gr, sizeof *t, cmp_u64);
    for (size_t i = 1; i < d->n_gr; i++)
        if (t[i] - t[i - 1] > best) {
            best = t[i] - t[i - 1];
            at = t[i - 1];
        }
    if (d->n_gr > 0 && d->t_last > t[d->n_gr - 1] && d->t_last - t[d->n_gr - 1] > best) {
        best = d->t_last - t[d->n_gr - 1];
        at = t[d->n_gr - 1];
    }
    printf("longest unavailability: %.2f s (no grant from +%.3f s)", (double)best / 1e6, rel_s(at));
    if ((cause = cause_of(d, at)) != NULL)
        printf(", after %s %s (+%.3f s)", cause->kind, cause->detail, rel_s(cause->t));
    for (size_t i = 0; i < d->n_fa; i++) {
        const struct ck_fault *f = &d->fa[i];
        if (!f->heal && f->t > at + 500000u && f->t < at + best)
            printf("; then %s %s (+%.3f s)", f->kind, f->detail, rel_s(f->t));
    }
    putchar('\n');
    if (d->n_gr > 1) print_gaps_by_fault(d, t, d->n_gr);
    free(t);
}

int main(int argc, char **argv)
{
    char names[64][CK_LOCK_MAX];
    struct ck_data d;
    struct notice_stats ns = {0};
    struct taken_stats ts = {0};
    struct ck_hostile hs;
    uint64_t fifo_pairs = 0, writes_ok = 0, writes_rej = 0, att_failed = 0, att_queued = 0;
    uint64_t total_viol = 0;
    size_t nl;
    int parse_errors;

    if (argc != 2) {
        fprintf(stderr, "usage: faultcheck DIR\n");
        return 2;
    }
    if (ck_load(argv[1], &d) != 0) return 2;
    t0 = d.t_first;

    check_fence_unique(&d);
    nl = lock_names(&d, names, 64);
    for (size_t l = 0; l < nl; l++) {
        struct lockv L;
        lockv_build(&d, names[l], &L);
        check_store(&d, names[l]);
        for (size_t i = 0; i < L.n; i++) {
            check_one_holder(&d, L.v[i], &L);
            check_notice(L.v[i], &L, &ns);
        }
        check_fence_order(L.v, L.n);
        fifo_pairs += check_fifo(&d, names[l]);
        lockv_free(&L);
    }
    check_taken(&d, &ns, &ts);
    for (size_t i = 0; i < d.n_wr; i++) {
        if (d.wr[i].accepted)
            writes_ok++;
        else
            writes_rej++;
    }
    for (size_t i = 0; i < d.n_att; i++) {
        if (!d.att[i].granted) att_failed++;
        if (d.att[i].t_queued) att_queued++;
    }
    if (ck_hostile(argv[1], &hs, rel_s) != 0) {
        fprintf(stderr, "faultcheck: cannot read %s/hostile.log\n", argv[1]);
        return 2;
    }
    viol[V_HOSTILE] += hs.violations;
    for (int k = 0; k < V_COUNT; k++) total_viol += viol[k];

    printf("run: %.1f s of logs, %d clients (%d ended cleanly), %zu locks, %" PRIu64
           " sessions opened (%" PRIu64 " failed opens)\n",
           (double)(d.t_last - d.t_first) / 1e6, d.n_clients, d.clients_ended, nl, d.sessions,
           d.session_fails);
    printf("operations: %zu lock calls (%" PRIu64 " queued, %" PRIu64 " not granted), %zu grants, "
           "%" PRIu64 " writes accepted, %" PRIu64 " stale writes rejected, %" PRIu64
           " releases OK\n",
           d.n_att, att_queued, att_failed, d.n_gr, writes_ok, writes_rej, ns.released_ok);
    print_faults(&d);
    if (hs.ran)
        printf("hostile client: %" PRIu64 " requests naming others' sessions: %" PRIu64
               " refused EPERM, %" PRIu64 " refused ESESSION, %" PRIu64 " unanswered, %" PRIu64
               " NOT refused\n",
               hs.sent, hs.refused_perm, hs.refused_session, hs.unanswered, hs.violations);
    printf("lost with notice: %" PRIu64 " (%" PRIu64 " after the lock had moved on, fenced off); "
           "releases unconfirmed: %" PRIu64 "; LOST for unknown grants: %" PRIu64 "\n",
           ns.told, ns.told_late, ns.unconfirmed, d.lost_unmatched);
    printf("operator: %" PRIu64 " forced releases (%" PRIu64 " with --now), %" PRIu64
           " expiries, %" PRIu64 " of unknown outcome; %" PRIu64 " holds taken: %" PRIu64
           " holders told (the longest %.3f s after batonctl started), %" PRIu64
           " had let go already; %" PRIu64 " forced holds no client had been told of\n",
           ts.forced, ts.forced_now, ts.expired, ts.maybe, ts.holds, ts.told,
           (double)ts.max_us / 1e6, ts.stopped_before, ts.unseen);
    printf("violations: %" PRIu64, total_viol);
    for (int k = 0; k < V_COUNT; k++) printf("%s %s %" PRIu64, k ? "," : " (", vname[k], viol[k]);
    printf(")\n");
    printf("lost without notice: %" PRIu64 "\n", ns.silent);
    printf("fifo: %" PRIu64 " queued pairs (waiter committed before the other was sent)\n",
           fifo_pairs);
    print_unavailability(&d);
    parse_errors = d.parse_errors + hs.parse_errors;
    if (parse_errors) printf("unreadable log lines: %d\n", parse_errors);
    ck_free(&d);
    return total_viol || ns.silent || parse_errors ? 1 : 0;
}
