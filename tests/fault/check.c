/*
 * check.c -- faultcheck: decide, from the logs of one fault-harness run,
 * whether the lock service kept its guarantees, and print the run's numbers.
 *
 *   faultcheck DIR
 *
 * DIR holds client-*.log (client.c), store.log (store.c), nemesis.log
 * (run.c) and, if election workers ran, elect-*.log (elect.c). Exit
 * status: 0 if no rule was broken, 1 if one was (each break is printed on
 * a "VIOLATION" or "SILENT LOSS" line), 2 if the logs could
 * not be read.
 *
 * Every process of the harness stamps its lines with the same clock
 * (CLOCK_MONOTONIC, one per machine), so events of different processes
 * can be ordered. The rules (README.md in this directory has the why):
 *
 *  1. Fences are unique: no fence is in two grants.
 *  2. The fenced store kept its own rules (store.c), replayed over its log.
 *  3. Holders beside holders. A grant whose unlock returned 0 was held
 *     from its grant until its unlock call (t_rel): the cluster granted it
 *     before the one and applied its release after the other. Ordinary
 *     locks: no other grant of the lock may reach its client then if
 *     either is exclusive, and the store may accept no other fence's write
 *     (nor, under an exclusive hold, read). Semaphores of N: a grant and
 *     the holds certain when it reached its client number at most N
 *     (check_modes.c).
 *  4. Never silently dropped. A grant must end in a successful unlock or
 *     with its holder told (lost callback, or unlock answering
 *     BATON_ELOST). Evidence that the hold was taken from A while A
 *     believed it held it (was_taken: by mode), with A never told, or an
 *     unlock answering BATON_ENOTHELD without a notice, or a grant neither
 *     released nor reported lost, is a silent loss.
 *  5. Fences increase: (a) a grant that reaches its client after another
 *     grant of the lock has ended (unlock answered, or its holder told of
 *     the loss) has a higher fence, if either is exclusive; (b) a grant
 *     known before a request was sent has a lower fence than that
 *     request's, for any names (check_modes.c).
 *  6. FIFO, every mode: if P's ACQUIRE was known committed (QUEUED or
 *     GRANT logged) before Q's ACQUIRE was sent, and both were granted,
 *     P's fence is lower (queue order is commit order, and waiters are
 *     granted from the head with fresh fences).
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
 *  9. A multi-lock's names are held as one (check_multi.c): granted all
 *     with one fence or none, told lost once by the first name (the
 *     handle), and no BATON_EDEADLK for a name whose release returned 0.
 *     Rules 3-7 judge each of its names as a hold of that name, with the
 *     hold's unlock outcome and notice (check_load.c copies them).
 * 10. A hostile authenticated client's floods (the hostile-* faults) are
 *     bounded: cached results of a session, sessions of a principal,
 *     frames before HELLO, data.mdb's growth (check_flood.c).
 * 11. A rolling upgrade keeps the feature level's promises (the upgrade
 *     fault; check_upgrade.c).
 * 12-15. Elections (check_elect.c, from DIR/elect-*.log): one leader at a
 *     time (certain leaderships never overlap another LEAD, a told one
 *     within the lease rule) with fences that increase; observers told of
 *     every leader they miss; leader reads that show the latest value
 *     known before they started; no leader lost without notice.
 *
 * It also prints the operations, the faults of each kind (nemesis.log),
 * the lost-with-notice counts and the longest time without any grant.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "tests/fault/check.h"

#define SHOW_MAX 10 /* detailed lines per kind */

static const char *vname[V_COUNT] = {
    "fence issued twice", "store accepted what its rules refuse",
    "exclusive holder beside another holder", "write accepted beside another holder",
    "more holders than the semaphore's limit", "fence not increasing in grant order",
    "fence not above a grant known before the request", "FIFO order broken",
    "unlock succeeded after the lock was reported lost",
    "unlock succeeded for a hold an operator had taken", "multi-lock not held as one",
    "name still held after its release returned 0", "hostile request not refused",
    "hostile flood not bounded", "feature level broken",
    "two leaders of an election at once", "leader's fence not above an ended leader's",
    "observer not told of a change it missed", "leader read or event shows a stale or unknown value",
};

static uint64_t viol[V_COUNT];
static uint64_t t0; /* first event: times are printed relative to it */

double ck_rel_s(uint64_t t)
{
    return t >= t0 ? (double)(t - t0) / 1e6 : -(double)(t0 - t) / 1e6;
}

static double rel_s(uint64_t t)
{
    return ck_rel_s(t);
}

void ck_violation(enum ck_vkind k, const char *fmt, ...)
{
    va_list ap;

    if (viol[k]++ >= SHOW_MAX) return;
    printf("VIOLATION (%s): ", vname[k]);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

#define violation ck_violation

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

/* A grant's fence and the hold it belongs to (client, attempt). */
struct fence_of {
    uint64_t fence, attempt;
    int client;
};

static int cmp_fence_of(const void *a, const void *b)
{
    const struct fence_of *x = a, *y = b;
    return x->fence < y->fence ? -1 : x->fence > y->fence;
}

/* One fence per hold: the names of one hold (an atomic multi-lock grant:
 * one fence for all) share it; two holds never do. */
static void check_fence_unique(const struct ck_data *d)
{
    struct fence_of *f = malloc((d->n_gr + 1) * sizeof *f);

    if (f == NULL) exit(2);
    for (size_t i = 0; i < d->n_gr; i++)
        f[i] = (struct fence_of){d->gr[i].fence, d->gr[i].attempt, d->gr[i].client};
    qsort(f, d->n_gr, sizeof *f, cmp_fence_of);
    for (size_t i = 1; i < d->n_gr; i++)
        for (size_t j = i; j-- > 0 && f[j].fence == f[i].fence;)
            if (f[j].client != f[i].client || f[j].attempt != f[i].attempt) {
                violation(V_FENCE_REUSE, "fence %" PRIu64 " granted twice", f[i].fence);
                break;
            }
    free(f);
}

/* ---- rule 3: holders beside holders ---------------------------------------------------- */

static void lockv_build(const struct ck_data *d, const char *lock, struct ck_lockv *L)
{
    memset(L, 0, sizeof *L);
    L->lock = lock;
    L->v = grants_of(d, lock, &L->n);
    L->premax = malloc((L->n + 1) * sizeof *L->premax);
    L->premax_x = malloc((L->n + 1) * sizeof *L->premax_x);
    L->ok_start = malloc((L->n + 1) * sizeof *L->ok_start);
    L->ok_end = malloc((L->n + 1) * sizeof *L->ok_end);
    L->w = malloc((d->n_wr + 1) * sizeof *L->w);
    if (L->premax == NULL || L->premax_x == NULL || L->ok_start == NULL || L->ok_end == NULL ||
        L->w == NULL)
        exit(2);
    L->premax[0] = L->premax_x[0] = 0;
    for (size_t i = 0; i < L->n; i++) {
        const struct ck_grant *g = L->v[i];
        uint64_t fx = g->shared ? 0 : g->fence;
        L->premax[i + 1] = g->fence > L->premax[i] ? g->fence : L->premax[i];
        L->premax_x[i + 1] = fx > L->premax_x[i] ? fx : L->premax_x[i];
        if (g->rel_status == 0 && g->t_rel != 0) {
            L->ok_start[L->n_ok] = g->t_grant;
            L->ok_end[L->n_ok++] = g->t_rel;
        }
    }
    qsort(L->ok_start, L->n_ok, sizeof *L->ok_start, cmp_u64);
    qsort(L->ok_end, L->n_ok, sizeof *L->ok_end, cmp_u64);
    if (L->n > 0) L->limit = L->v[0]->limit > 1 ? L->v[0]->limit : 0;
    for (size_t i = 0; i < d->n_wr; i++)
        if (d->wr[i].accepted && d->wr[i].op != 'D' && strcmp(d->wr[i].lock, lock) == 0)
            L->w[L->nw++] = &d->wr[i];
}

static void lockv_free(struct ck_lockv *L)
{
    free(L->v);
    free(L->premax);
    free(L->premax_x);
    free(L->ok_start);
    free(L->ok_end);
    free(L->w);
}

/* The grant of `fence` among L's grants, or NULL. */
static const struct ck_grant *grant_of_fence(const struct ck_lockv *L, uint64_t fence)
{
    for (size_t i = 0; i < L->n; i++)
        if (L->v[i]->fence == fence) return L->v[i];
    return NULL;
}

/* Had an operator, by time t, handed on the hold `fence` of `lock` at once
 * -- a forced release with --now (or one that may have been, fence 0) of
 * it or, for a multi-lock, of any of its names, or an expiry of its
 * session -- so that its holder could still write before hearing of it?
 * (Rule 7.) */
static int handed_on_by_operator(const struct ck_data *d, const struct ck_lockv *L, const char *lock,
                                 uint64_t fence, uint64_t t)
{
    const struct ck_grant *g = grant_of_fence(L, fence);

    for (size_t i = 0; i < d->n_tk; i++) {
        const struct ck_taken *tk = &d->tk[i];
        if (tk->t_sent > t) continue;
        if (!tk->expiry) {
            if (tk->now && strcmp(tk->lock, lock) == 0 && (tk->fence == fence || tk->fence == 0))
                return 1;
            if (tk->now && tk->fence == fence && g && ck_hold_has(d, g, tk->lock)) return 1;
            continue;
        }
        if (g && tk->session == g->session) return 1;
    }
    return 0;
}

/* How grant g holds its name, for messages. */
static const char *how_held(const struct ck_grant *g)
{
    return g->shared ? (g->n_names > 1 ? "shared, a multi-lock" : "shared")
                     : (g->n_names > 1 ? "exclusive, a multi-lock" : "exclusive");
}

/*
 * Grant g of an ordinary lock ended with a successful unlock: from its
 * grant to its unlock call the cluster counted it as a holder. If g is
 * exclusive, no other grant of the lock may reach its client then, and the
 * store may accept no other fence's write or read; if g is shared, no
 * exclusive grant may reach its client and no other fence's write be
 * accepted (except the stale writes of a hold an operator handed on at
 * once: rule 7). Semaphores: ck_check_limit.
 */
static void check_one_holder(const struct ck_data *d, const struct ck_grant *g,
                             const struct ck_lockv *L)
{
    struct ck_grant **v = L->v;
    size_t n = L->n, lo = 0, hi = L->nw;

    if (g->rel_status != 0 || g->t_rel == 0) return;
    for (size_t k = first_grant_after(v, n, g->t_grant); k < n && v[k]->t_grant < g->t_rel; k++)
        if (v[k] != g && (!g->shared || !v[k]->shared))
            violation(V_DOUBLE_GRANT,
                      "%s: client %d got fence %" PRIu64 " (%s) at +%.3f s while client %d held "
                      "fence %" PRIu64 " (%s, granted +%.3f s, released OK, unlock called "
                      "+%.3f s)",
                      g->lock, v[k]->client, v[k]->fence, how_held(v[k]), rel_s(v[k]->t_grant),
                      g->client, g->fence, how_held(g), rel_s(g->t_grant), rel_s(g->t_rel));
    while (lo < hi) { /* the first accepted write after the grant */
        size_t mid = (lo + hi) / 2;
        if (L->w[mid]->t <= g->t_grant)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < L->nw && L->w[i]->t < g->t_rel; i++) {
        const struct ck_write *w = L->w[i];
        if (w->fence != g->fence && (w->op == 'W' || !g->shared) &&
            !handed_on_by_operator(d, L, g->lock, w->fence, w->t))
            violation(V_TWO_WRITERS,
                      "%s: store accepted fence %" PRIu64 " (%s) at +%.3f s while client %d held "
                      "fence %" PRIu64 " (%s, granted +%.3f s, released OK, unlock called "
                      "+%.3f s)",
                      g->lock, w->fence, w->op == 'W' ? "write" : "read", rel_s(w->t), g->client,
                      g->fence, how_held(g), rel_s(g->t_grant), rel_s(g->t_rel));
    }
}

/* ---- rule 4: never silently dropped ----------------------------------------------------- */

struct notice_stats {
    uint64_t released_ok, told, told_late, unconfirmed, silent, stale_rejects;
    uint64_t permit_refused; /* permit writes refused to holders never told (not evidence) */
};

static void silent(struct notice_stats *ns, const struct ck_grant *g, const char *why)
{
    if (ns->silent++ < SHOW_MAX)
        printf("SILENT LOSS: %s: client %d, fence %" PRIu64 " (granted +%.3f s): %s\n", g->lock,
               g->client, g->fence, rel_s(g->t_grant), why);
}

/*
 * Evidence that the cluster took g from its holder while the holder still
 * believed it held it (before `stop`, its unlock call): for an exclusive
 * hold, any higher fence of the lock reached its client, or the store
 * refused g's write or read (a newer holder had acted); for a shared hold,
 * a higher *exclusive* fence reached its client, or the store refused its
 * read (a newer writer had written); for a permit, N others certainly held
 * the semaphore at one moment (a refused permit write is no evidence: the
 * store cannot tell a stale newer permit from a live one, store.c).
 */
static int was_taken(const struct ck_grant *g, const struct ck_lockv *L, uint64_t stop)
{
    size_t k = first_grant_after(L->v, L->n, stop - 1);

    if (ck_is_permit(g->limit)) return ck_permit_taken(L, g, stop);
    return g->n_rej > 0 || (g->shared ? L->premax_x[k] : L->premax[k]) > g->fence;
}

static void check_notice(const struct ck_grant *g, const struct ck_lockv *L,
                         struct notice_stats *ns)
{
    uint64_t stop = g->t_rel ? g->t_rel : UINT64_MAX;
    int permit = ck_is_permit(g->limit), told = g->t_told != 0, taken;

    ns->stale_rejects += (uint64_t)g->n_rej;
    if (told && g->rel_status == 0)
        violation(V_RELEASE_AFTER_LOST, "%s: client %d fence %" PRIu64 " was reported lost at "
                  "+%.3f s, yet its unlock returned 0", g->lock, g->client, g->fence,
                  rel_s(g->t_told));
    if (g->rel_status == 0) {
        ns->released_ok++; /* an overlap here is rule 3's violation */
        return;
    }
    taken = was_taken(g, L, stop);
    if (told) {
        ns->told++;
        if (taken) ns->told_late++;
        return;
    }
    if (permit && g->n_rej > 0) ns->permit_refused++;
    if (g->rel_status == BATON_ENOTHELD)
        silent(ns, g, "unlock answered BATON_ENOTHELD and the holder was never told");
    else if (taken)
        silent(ns, g, permit ? "the semaphore's limit of others certainly held it before it let "
                               "go, and it was never told"
                      : !g->shared && g->n_rej ? "the store rejected its write (a newer fence "
                                                 "had acted) and the holder was never told"
                      : g->n_rej ? "the store rejected its read (a newer writer had written) and "
                                   "the holder was never told"
                      : g->shared ? "a higher exclusive fence was granted before it let go, and "
                                    "it was never told"
                                  : "a higher fence was granted before it let go, and it was "
                                    "never told");
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
        /* Once per hold: a forced release of any name of a multi-lock
         * takes all of it (each name has the hold's notice and unlock). */
        for (size_t j = 0; j < d->n_gr; j += (size_t)d->gr[j].n_names) {
            const struct ck_grant *g = &d->gr[j];
            if (tk->expiry ? g->session != tk->session || g->t_grant > tk->t
                           : g->fence != tk->fence || !ck_hold_has(d, g, tk->lock))
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

/*
 * A grant that reaches its client after another grant of the lock ended
 * has a higher fence -- if the two could not hold together (one of them
 * exclusive): then the later one was granted after the earlier one's hold
 * ended. Two shared holds may overlap, and a later-delivered one may have
 * been granted first. Not for semaphores (their holders overlap).
 */
static void check_fence_order(struct ck_grant **v, size_t n)
{
    struct ended *e = malloc((n + 1) * sizeof *e);
    size_t ne = 0, j = 0;
    const struct ck_grant *maxg = NULL, *maxg_x = NULL;

    if (e == NULL) exit(2);
    for (size_t i = 0; i < n; i++) {
        uint64_t end = v[i]->rel_status == 0 ? v[i]->t_reld : v[i]->t_told;
        if (end) e[ne++] = (struct ended){end, v[i]->fence, v[i]};
    }
    qsort(e, ne, sizeof *e, cmp_ended);
    for (size_t i = 0; i < n; i++) {
        const struct ck_grant *before;
        while (j < ne && e[j].t < v[i]->t_grant) {
            if (maxg == NULL || e[j].fence > maxg->fence) maxg = e[j].g;
            if (!e[j].g->shared && (maxg_x == NULL || e[j].fence > maxg_x->fence))
                maxg_x = e[j].g;
            j++;
        }
        before = v[i]->shared ? maxg_x : maxg;
        if (before && v[i]->fence <= before->fence)
            violation(V_FENCE_ORDER,
                      "%s: client %d got fence %" PRIu64 " (%s) at +%.3f s, after fence %" PRIu64
                      " (client %d, %s) had ended",
                      v[i]->lock, v[i]->client, v[i]->fence, v[i]->shared ? "shared" : "exclusive",
                      rel_s(v[i]->t_grant), before->fence, before->client,
                      before->shared ? "shared" : "exclusive");
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

/* An attempt's kind for the FIFO counts: 0 exclusive, 1 shared, 2 permit. */
static int att_kind(const struct ck_attempt *a)
{
    return ck_is_permit(a->limit) ? 2 : a->shared;
}

/*
 * Queue order is commit order, whatever the modes: a new request is
 * granted at once only when nobody waits, and waiters are granted from
 * the head, each with a fresh fence, even when several shared ones (or
 * permits) go in one step. So if P's ACQUIRE was known committed (QUEUED
 * or GRANT logged) before Q's was sent, and both were granted, P's fence
 * is lower. Adds to pairs[P's kind][Q's kind] the pairs where P was still
 * waiting in the queue when Q was sent: the pairs that really test FIFO
 * (and to *multi those where P or Q is a multi-lock).
 *
 * Multi-locks too: one ACQUIRE_MANY entry joins every queue of its names
 * at once, and a request is granted only when it heads (or is compatible
 * at the head of) every queue it is in -- nothing behind a waiting
 * multi-lock is granted, even if it would fit (storage/multi.c). So per
 * name, queue order is still commit order is grant order is fence order;
 * a multi-lock's QUEUED (for its first name) tells that it is committed
 * in all its queues (check_load.c gives it to every name of the call).
 */
static void check_fifo(const struct ck_data *d, const char *lock, uint64_t pairs[3][3],
                       uint64_t *multi)
{
    struct ck_attempt **k = malloc((d->n_att + 1) * sizeof *k), **s;
    const struct ck_attempt *maxp = NULL;
    size_t n = 0, j = 0;

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
                      "%s: client %d's acquire%s was committed (+%.3f s) before client %d sent "
                      "its own%s (+%.3f s), yet got fence %" PRIu64 " >= %" PRIu64,
                      lock, maxp->client, maxp->n_names > 1 ? " (a multi-lock)" : "",
                      rel_s(known_at(maxp)), q->client, q->n_names > 1 ? " (a multi-lock)" : "",
                      rel_s(q->t_sent), maxp->fence, q->fence);
        /* Count the queued predecessors still waiting when q was sent. */
        for (size_t m = j; m-- > 0;) {
            const struct ck_attempt *p = k[m];
            if (known_at(p) + 60000000u < q->t_sent) break;
            if (p->t_queued && p->t_end > q->t_sent) {
                pairs[att_kind(p)][att_kind(q)]++;
                *multi += p->n_names > 1 || q->n_names > 1;
            }
        }
    }
    free(k);
    free(s);
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

/* The most holders that certainly held L at one moment (a grant's). */
static size_t most_at_once(const struct ck_lockv *L)
{
    size_t most = 0;

    for (size_t i = 0; i < L->n; i++) {
        size_t at = ck_certain_at(L, L->v[i]->t_grant);
        if (!(L->v[i]->rel_status == 0 && L->v[i]->t_rel != 0)) at++;
        if (at > most) most = at;
    }
    return most;
}

/* One lock's line: its grants by mode and the most holders at once. */
static void print_lock(const struct ck_data *d, const struct ck_lockv *L, size_t most)
{
    uint64_t shared = 0, queued = 0;

    for (size_t i = 0; i < L->n; i++) shared += (uint64_t)L->v[i]->shared;
    for (size_t i = 0; i < d->n_att; i++)
        queued += d->att[i].t_queued != 0 && strcmp(d->att[i].lock, L->lock) == 0;
    if (L->limit)
        printf("lock %s (semaphore of %u): %zu permits granted, %" PRIu64 " requests queued, "
               "up to %zu holders at once\n", L->lock, L->limit, L->n, queued, most);
    else
        printf("lock %s: %zu grants (%" PRIu64 " exclusive, %" PRIu64 " shared), %" PRIu64
               " requests queued, up to %zu holders at once\n", L->lock, L->n, L->n - shared,
               shared, queued, most);
}

int main(int argc, char **argv)
{
    char names[64][CK_LOCK_MAX];
    struct ck_data d;
    struct notice_stats ns = {0};
    struct taken_stats ts = {0};
    struct ck_hostile hs;
    struct ck_flood fl;
    struct ck_upgrade up;
    struct ck_elect el;
    uint64_t fifo_pairs[3][3] = {{0}}, writes_ok = 0, writes_rej = 0, att_failed = 0,
             att_queued = 0, by_mode[3] = {0}, fifo_total = 0, fifo_multi = 0, multi_names = 0,
             n_calls = 0, n_holds = 0;
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
    ck_check_fence_global(&d);
    nl = lock_names(&d, names, 64);
    for (size_t l = 0; l < nl; l++) {
        struct ck_lockv L;
        size_t most;
        lockv_build(&d, names[l], &L);
        ck_check_store(&d, names[l]);
        for (size_t i = 0; i < L.n; i++) {
            if (!L.limit) check_one_holder(&d, L.v[i], &L);
            check_notice(L.v[i], &L, &ns);
            by_mode[L.limit ? 2 : L.v[i]->shared]++;
            multi_names += L.v[i]->n_names > 1;
        }
        if (L.limit) {
            most = ck_check_limit(&L);
        } else {
            most = most_at_once(&L);
            check_fence_order(L.v, L.n);
        }
        check_fifo(&d, names[l], fifo_pairs, &fifo_multi);
        print_lock(&d, &L, most);
        lockv_free(&L);
    }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) fifo_total += fifo_pairs[i][j];
    check_taken(&d, &ns, &ts);
    ck_check_multi(&d);
    for (size_t i = 0; i < d.n_wr; i++) {
        if (d.wr[i].accepted)
            writes_ok++;
        else
            writes_rej++;
    }
    for (size_t i = 0; i < d.n_att; i++) { /* per call: a multi-lock's first name */
        if (!d.att[i].first) continue;
        n_calls++;
        if (!d.att[i].granted) att_failed++;
        if (d.att[i].t_queued) att_queued++;
    }
    for (size_t i = 0; i < d.n_gr; i++) n_holds += d.gr[i].hold == i;
    if (ck_hostile(argv[1], &hs, rel_s) != 0) {
        fprintf(stderr, "faultcheck: cannot read %s/hostile.log\n", argv[1]);
        return 2;
    }
    viol[V_HOSTILE] += hs.violations;
    if (ck_flood(argv[1], &fl) != 0) {
        fprintf(stderr, "faultcheck: cannot read %s/flood.log\n", argv[1]);
        return 2;
    }
    viol[V_FLOOD] += fl.violations;
    if (ck_upgrade(argv[1], &up) != 0) {
        fprintf(stderr, "faultcheck: cannot read %s/nemesis.log\n", argv[1]);
        return 2;
    }
    if (ck_elect(argv[1], &d, &el) != 0) {
        fprintf(stderr, "faultcheck: cannot read the election logs in %s\n", argv[1]);
        return 2;
    }
    for (int k = 0; k < V_COUNT; k++) total_viol += viol[k];

    printf("run: %.1f s of logs, %d clients (%d ended cleanly), %zu locks, %" PRIu64
           " sessions opened (%" PRIu64 " failed opens)\n",
           (double)(d.t_last - d.t_first) / 1e6, d.n_clients, d.clients_ended, nl, d.sessions,
           d.session_fails);
    printf("operations: %" PRIu64 " lock calls (%" PRIu64 " queued, %" PRIu64 " not granted), %"
           PRIu64 " grants (%zu names), %" PRIu64 " writes accepted, %" PRIu64 " stale writes "
           "rejected, %" PRIu64 " releases OK (names)\n",
           n_calls, att_queued, att_failed, n_holds, d.n_gr, writes_ok, writes_rej,
           ns.released_ok);
    printf("grants by mode: %" PRIu64 " exclusive, %" PRIu64 " shared, %" PRIu64
           " semaphore permits (names; %" PRIu64 " of them held by multi-locks)\n", by_mode[0],
           by_mode[1], by_mode[2], multi_names);
    print_faults(&d);
    if (hs.ran)
        printf("hostile client: %" PRIu64 " requests naming others' sessions: %" PRIu64
               " refused EPERM, %" PRIu64 " refused ESESSION, %" PRIu64 " unanswered, %" PRIu64
               " NOT refused\n",
               hs.sent, hs.refused_perm, hs.refused_session, hs.unanswered, hs.violations);
    ck_flood_print(&fl);
    ck_upgrade_print(&up);
    ck_elect_print(&el);
    printf("lost with notice: %" PRIu64 " (%" PRIu64 " after the lock had moved on, fenced off); "
           "releases unconfirmed: %" PRIu64 "; LOST for unknown grants: %" PRIu64 "\n",
           ns.told, ns.told_late, ns.unconfirmed, d.lost_unmatched);
    if (ns.permit_refused)
        printf("permit writes refused to holders never told: %" PRIu64 " (no evidence of a "
               "loss: README)\n", ns.permit_refused);
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
    printf("fifo: %" PRIu64 " queued pairs (waiter committed before the other was sent); "
           "waiter/later exclusive/exclusive %" PRIu64 ", exclusive/shared %" PRIu64
           ", shared/exclusive %" PRIu64 ", shared/shared %" PRIu64 ", permit/permit %" PRIu64
           "; with a multi-lock on either side %" PRIu64 "\n", fifo_total, fifo_pairs[0][0],
           fifo_pairs[0][1], fifo_pairs[1][0], fifo_pairs[1][1], fifo_pairs[2][2], fifo_multi);
    print_unavailability(&d);
    parse_errors = d.parse_errors + hs.parse_errors + fl.parse_errors + up.parse_errors +
                   el.parse_errors;
    if (parse_errors) printf("unreadable log lines: %d\n", parse_errors);
    ck_free(&d);
    return total_viol || ns.silent || el.silent || parse_errors ? 1 : 0;
}
