/*
 * check_elect.c -- the checker's rules for elections (README.md in this
 * directory, "Elections"), from the election workers' logs (elect.c:
 * DIR/elect-*.log), the fenced store's decisions and the lock grants:
 *
 * 12. One leader at a time. A leadership runs from its LEAD to its stop:
 *     the RESIGN call or the LOST notice, whichever came first. If its
 *     resign returned 0 and it was never told, the cluster counted it
 *     leader all that time (certain, as a lock's hold is), and no other
 *     LEAD of the election may come in between, nor may the store accept
 *     another fence's write of it. If it was told (LOST, or resign answered
 *     BATON_ELOST), the library's lease rule says it stopped no later than
 *     the cluster could make another leader: no other LEAD may come before
 *     its stop less LEASE_SLACK_US (the worker's loop may run its lease
 *     timer late on a loaded machine). And fences increase with leaders: a
 *     LEAD logged after another leadership of the election ended (its
 *     resign answered 0, or its holder told) has a higher fence; no fence
 *     is in two leaderships, or in a leadership and a lock grant.
 * 13. Observers are told of what they miss. Along one watch revisions
 *     never go back, a CHANGE or GAP is above every revision before it,
 *     and the leaders shown never go back (fence, then the value's
 *     counter); when an event shows (F, v) after (E, u) while a value
 *     known committed (a LEAD's, a proclaim that returned 0) lies between
 *     -- a leader that led between, or a value E proclaimed between -- a
 *     GAP or a restart (a STATE within the watch, a SYNCED with restarted
 *     1) came between the two.
 * 14. Reads show the latest value. A leader read (linearizable) that
 *     started after a LEAD or a PROCLAIM returned 0 shows that value or a
 *     later one: a higher fence, or the same with a later counter (each
 *     worker's values count up). It finds nobody, or another leader, only
 *     if no certain leadership spans it. A read or event that shows a
 *     known leader's fence shows a value that leader set.
 * 15. No leader is lost without notice. A leadership not told lost, its
 *     process not killed while it led, whose resign answered
 *     BATON_ENOTHELD, whose guarded write the store refused, after whose
 *     LEAD a leader of a higher fence led before it resigned, or that never
 *     resigned, is a silent loss.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "tests/fault/check.h"

#define SHOW_MAX 10
#define VAL_MAX 48
/* How late a worker's lease timer may run on a loaded machine: a lost
 * leadership's notice may follow the next LEAD by this much (rule 12). */
#define LEASE_SLACK_US 100000u

enum { EV_CHANGE, EV_STATE, EV_GAP, EV_SYNCED, EV_OTHER };

/* One leadership: LEAD to RESIGN or LOST. */
struct el_lead {
    int proc, inc;
    char election[CK_LOCK_MAX];
    uint64_t fence, session, counter;
    uint64_t t_lead, t_resign, t_resigned, t_lost;
    int resign_status;        /* CK_NO_STATUS: none */
    int killed;               /* its incarnation ended (no END) while it led */
    int n_rej;
};

/* A value a leader set: its LEAD's, or a PROCLAIM's (t_ok: when it was
 * known committed -- LEAD, or PROCLAIMED 0; 0 if never). */
struct el_val {
    char election[CK_LOCK_MAX];
    uint64_t fence, counter, t_ok;
    char value[VAL_MAX];
};

/* A leader read, or an observer's event (t_start = t_end = its line). */
struct el_seen {
    int proc, inc;
    uint64_t watch;           /* events: the watch's number; reads: 0 */
    int kind, restarted, status;
    char election[CK_LOCK_MAX];
    uint64_t t_start, t_end, rev, session, fence, counter;
    char value[VAL_MAX];
};

struct el {
    struct el_lead *ld;
    size_t n_ld, cap_ld;
    struct el_val *val;
    size_t n_val, cap_val;
    struct el_seen *rd, *ev;
    size_t n_rd, cap_rd, n_ev, cap_ev;
    char names[16][16];       /* worker names, by proc */
    /* Indexes (el_index): val sorted by (election, fence, counter); the
     * values known committed sorted by (election, t_ok), each with the
     * latest (fence, counter) known by then in its election; the store's
     * accepted writes of the elections, in the store's order. */
    const struct el_val **known, **known_max;
    size_t n_known;
    const struct ck_write **wr;
    size_t n_wr;
};

static void bad(struct ck_elect *e, const char *path, int lineno, const char *line)
{
    if (e->parse_errors++ < 10)
        fprintf(stderr, "faultcheck: %s:%d: cannot read '%.80s'\n", path, lineno, line);
}

/* The counter of a value "NAME:N" (0 if it has none). */
static uint64_t counter_of(const char *v)
{
    const char *c = strrchr(v, ':');
    return c ? strtoull(c + 1, NULL, 10) : 0;
}

static struct el_lead *lead_find(struct el *x, int proc, const char *election, uint64_t fence)
{
    for (size_t i = x->n_ld; i-- > 0;) {
        struct el_lead *l = &x->ld[i];
        if (l->proc == proc && l->fence == fence && strcmp(l->election, election) == 0) return l;
    }
    return NULL;
}

static void add_val(struct el *x, const char *election, uint64_t fence, const char *value,
                    uint64_t t_ok)
{
    struct el_val *v;

    CK_GROW(x->val, x->n_val, x->cap_val);
    v = &x->val[x->n_val++];
    snprintf(v->election, sizeof v->election, "%s", election);
    snprintf(v->value, sizeof v->value, "%s", value);
    v->fence = fence;
    v->counter = counter_of(value);
    v->t_ok = t_ok;
}

static int kind_of(const char *w)
{
    static const char *const k[] = {"CHANGE", "STATE", "GAP", "SYNCED"};
    for (int i = 0; i < 4; i++)
        if (strcmp(w, k[i]) == 0) return i;
    return EV_OTHER;
}

/* The end of incarnation `inc` of proc (a START or the end of the log):
 * without END, its open leadership was killed. */
static void incarnation_over(struct el *x, int proc, int inc, int ended)
{
    for (size_t i = x->n_ld; i-- > 0;) {
        struct el_lead *l = &x->ld[i];
        if (l->proc != proc || l->inc != inc) continue;
        if (!ended && l->t_resign == 0 && l->t_lost == 0) l->killed = 1;
        return; /* a worker leads once at a time: its last leadership */
    }
}

/* One line of worker proc's log. */
static void elect_line(struct el *x, struct ck_elect *e, int proc, int *inc, int *ended,
                       const char *path, int lineno, const char *line)
{
    unsigned long long t, a, f, s, rv, rs;
    char ev[16], el[CK_LOCK_MAX], v[VAL_MAX], w[16], role[16], name[16];
    int st, k, rest;
    struct el_lead *l;
    struct el_seen *sn;

    if (sscanf(line, "%llu %15s", &t, ev) != 2) goto bad;
    if (strcmp(ev, "START") == 0) {
        if (sscanf(line, "%*u %*s %15s %15s", role, name) != 2) goto bad;
        if (*inc >= 0) incarnation_over(x, proc, *inc, *ended);
        (*inc)++;
        *ended = 0;
        snprintf(x->names[proc], sizeof x->names[proc], "%s", name);
        if (*inc == 0) {
            if (role[0] == 'o')
                e->observers++;
            else
                e->campaigners++;
        }
    } else if (strcmp(ev, "CAMPAIGN") == 0) {
        if (sscanf(line, "%*u %*s %llu %31s %*d %47s", &a, el, v) != 3) goto bad;
        e->campaigns++;
    } else if (strcmp(ev, "CFAIL") == 0) {
        if (sscanf(line, "%*u %*s %llu %31s %d", &a, el, &st) != 3) goto bad;
        e->refused_version += st == BATON_EVERSION;
    } else if (strcmp(ev, "LEAD") == 0) {
        if (sscanf(line, "%*u %*s %llu %31s %llu %llu %47s", &a, el, &f, &s, v) != 5) goto bad;
        CK_GROW(x->ld, x->n_ld, x->cap_ld);
        l = &x->ld[x->n_ld++];
        memset(l, 0, sizeof *l);
        l->proc = proc;
        l->inc = *inc;
        snprintf(l->election, sizeof l->election, "%s", el);
        l->fence = f;
        l->session = s;
        l->counter = counter_of(v);
        l->t_lead = t;
        l->resign_status = CK_NO_STATUS;
        add_val(x, el, f, v, t);
    } else if (strcmp(ev, "PROCLAIM") == 0 || strcmp(ev, "PROCLAIMED") == 0) {
        int n = sscanf(line, "%*u %*s %31s %llu %47s %d", el, &f, v, &st);
        if (n != (ev[8] == 'E' ? 4 : 3)) goto bad;
        if (ev[8] != 'E') {
            e->proclaims++;
            add_val(x, el, f, v, 0);
        } else if (st == 0) {
            e->proclaimed_ok++;
            for (size_t i = x->n_val; i-- > 0;)
                if (x->val[i].fence == f && strcmp(x->val[i].value, v) == 0 &&
                    strcmp(x->val[i].election, el) == 0) {
                    x->val[i].t_ok = t;
                    break;
                }
        }
    } else if (strcmp(ev, "WRITE") == 0 || strcmp(ev, "WOK") == 0 || strcmp(ev, "WREJ") == 0 ||
               strcmp(ev, "WERR") == 0) {
        if (sscanf(line, "%*u %*s %31s %llu %d", el, &f, &k) != 3) goto bad;
        if ((l = lead_find(x, proc, el, f)) == NULL) goto bad;
        l->n_rej += strcmp(ev, "WREJ") == 0;
    } else if (strcmp(ev, "RESIGN") == 0 || strcmp(ev, "RESIGNED") == 0 ||
               strcmp(ev, "LOST") == 0) {
        int n = sscanf(line, "%*u %*s %31s %llu %d", el, &f, &st);
        if (n != (strcmp(ev, "RESIGN") == 0 ? 2 : 3)) goto bad;
        if ((l = lead_find(x, proc, el, f)) == NULL) {
            if (ev[0] == 'L') {
                e->lost_unmatched++;
                return;
            }
            goto bad;
        }
        if (strcmp(ev, "RESIGN") == 0) {
            l->t_resign = t;
        } else if (ev[0] == 'L') {
            if (l->t_lost == 0) l->t_lost = t;
        } else {
            l->t_resigned = t;
            l->resign_status = st;
            if (st == BATON_ELOST && l->t_lost == 0) l->t_lost = t;
        }
    } else if (strcmp(ev, "EV") == 0) {
        rest = 0;
        if (sscanf(line, "%*u %*s %llu %31s %15s %llu %d %llu %llu %47s%n", &a, el, w, &rv, &st,
                   &s, &f, v, &rest) != 8 || rest == 0)
            goto bad;
        CK_GROW(x->ev, x->n_ev, x->cap_ev);
        sn = &x->ev[x->n_ev++];
        memset(sn, 0, sizeof *sn);
        sn->proc = proc;
        sn->inc = *inc;
        sn->watch = a;
        sn->kind = kind_of(w);
        sn->restarted = st;
        snprintf(sn->election, sizeof sn->election, "%s", el);
        sn->t_start = sn->t_end = t;
        sn->rev = rv;
        sn->session = s;
        sn->fence = f;
        sn->counter = counter_of(v);
        snprintf(sn->value, sizeof sn->value, "%s", v);
        e->events[sn->kind]++;
        e->restarted += sn->kind == EV_SYNCED && st;
    } else if (strcmp(ev, "OBSERVE") == 0) {
        e->watches++;
    } else if (strcmp(ev, "READ") == 0) {
        if (sscanf(line, "%*u %*s %llu %31s", &a, el) != 2) goto bad;
        CK_GROW(x->rd, x->n_rd, x->cap_rd);
        sn = &x->rd[x->n_rd++];
        memset(sn, 0, sizeof *sn);
        sn->proc = proc;
        sn->inc = *inc;
        sn->watch = a; /* the read's number until it is answered */
        snprintf(sn->election, sizeof sn->election, "%s", el);
        sn->t_start = t;
        sn->status = CK_NO_STATUS;
    } else if (strcmp(ev, "READR") == 0) {
        if (sscanf(line, "%*u %*s %llu %31s %d %llu %llu %47s %llu", &a, el, &st, &s, &f, v,
                   &rs) != 7)
            goto bad;
        for (sn = NULL, k = (int)x->n_rd; k-- > 0;)
            if (x->rd[k].proc == proc && x->rd[k].watch == a && x->rd[k].t_end == 0) {
                sn = &x->rd[k];
                break;
            }
        if (sn == NULL) goto bad;
        sn->t_end = t;
        sn->status = st;
        sn->session = s;
        sn->fence = f;
        sn->rev = rs;
        sn->counter = counter_of(v);
        snprintf(sn->value, sizeof sn->value, "%s", v);
        e->reads++;
        if (st == 0)
            e->reads_found++;
        else if (st == BATON_ENOTFOUND)
            e->reads_nobody++;
        else
            e->reads_failed++;
    } else if (strcmp(ev, "END") == 0) {
        *ended = 1;
    } else if (strcmp(ev, "SESS") != 0 && strcmp(ev, "SESSFAIL") != 0 &&
               strcmp(ev, "QUEUED") != 0 && strcmp(ev, "OBSEND") != 0 &&
               strcmp(ev, "CLOSED") != 0 && strcmp(ev, "NOTE") != 0) {
        goto bad;
    }
    return;
bad:
    bad(e, path, lineno, line);
}

static int load_worker(struct el *x, struct ck_elect *e, const char *path, int proc)
{
    FILE *f = fopen(path, "r");
    char line[512];
    int lineno = 0, inc = -1, ended = 0;

    if (f == NULL) {
        fprintf(stderr, "faultcheck: %s: %s\n", path, strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\n")] = '\0';
        if (line[0]) elect_line(x, e, proc, &inc, &ended, path, lineno, line);
    }
    if (inc >= 0) incarnation_over(x, proc, inc, ended);
    fclose(f);
    return 0;
}

/* ---- rule 12: one leader at a time ------------------------------------------------ */

/* Where leadership l stopped: its RESIGN or LOST, the first; 0 if neither. */
static uint64_t stop_of(const struct el_lead *l)
{
    if (l->t_resign && l->t_lost) return l->t_resign < l->t_lost ? l->t_resign : l->t_lost;
    return l->t_resign ? l->t_resign : l->t_lost;
}

/* Resigned with 0, never told: the cluster counted it leader from its
 * LEAD to its RESIGN. */
static int certain(const struct el_lead *l)
{
    return l->resign_status == 0 && l->t_lost == 0 && l->t_resign != 0;
}

/* When leadership l is known to have ended (resign answered 0, or its
 * holder told), or 0. */
static uint64_t ended_at(const struct el_lead *l)
{
    return l->resign_status == 0 ? l->t_resigned : l->t_lost;
}

static void lead_desc(const struct el *x, const struct el_lead *l, char *out, size_t cap)
{
    snprintf(out, cap, "%s fence %" PRIu64 " (LEAD +%.3f s)", x->names[l->proc], l->fence,
             ck_rel_s(l->t_lead));
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t p = *(const uint64_t *)a, q = *(const uint64_t *)b;
    return p < q ? -1 : p > q;
}

static void check_fences_unique(const struct el *x, const struct ck_data *d)
{
    uint64_t *g = malloc((d->n_gr + 1) * sizeof *g);

    if (g == NULL) exit(2);
    for (size_t i = 0; i < d->n_gr; i++) g[i] = d->gr[i].fence;
    qsort(g, d->n_gr, sizeof *g, cmp_u64);
    for (size_t i = 0; i < x->n_ld; i++) {
        const struct el_lead *a = &x->ld[i];
        if (bsearch(&a->fence, g, d->n_gr, sizeof *g, cmp_u64))
            ck_violation(V_FENCE_REUSE, "fence %" PRIu64 " of leader %s of %s is a lock grant's "
                         "too", a->fence, x->names[a->proc], a->election);
        for (size_t j = i + 1; j < x->n_ld; j++)
            if (x->ld[j].fence == a->fence)
                ck_violation(V_FENCE_REUSE, "fence %" PRIu64 " granted to two leaderships (%s "
                             "of %s, %s of %s)", a->fence, x->names[a->proc], a->election,
                             x->names[x->ld[j].proc], x->ld[j].election);
    }
    free(g);
}

/* The first of the elections' accepted writes after t. */
static size_t first_write_after(const struct el *x, uint64_t t)
{
    size_t lo = 0, hi = x->n_wr;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (x->wr[mid]->t <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void check_one_leader(const struct el *x)
{
    char da[128], db[128];

    for (size_t i = 0; i < x->n_ld; i++) {
        const struct el_lead *a = &x->ld[i];
        uint64_t stop = stop_of(a), bound;
        int sure = certain(a);

        /* killed, or never stopped: only the fence order (rule 15 judges it) */
        bound = stop == 0 ? 0 : sure ? stop : stop > LEASE_SLACK_US ? stop - LEASE_SLACK_US : 0;
        lead_desc(x, a, da, sizeof da);
        for (size_t j = 0; j < x->n_ld; j++) {
            const struct el_lead *b = &x->ld[j];
            uint64_t end = ended_at(b);
            if (j == i || strcmp(b->election, a->election) != 0) continue;
            if (b->t_lead > a->t_lead && b->t_lead < bound) {
                lead_desc(x, b, db, sizeof db);
                ck_violation(V_TWO_LEADERS, "%s: %s led while %s still did (it %s at +%.3f s)",
                             a->election, db, da,
                             sure        ? "resigned, answered 0,"
                             : a->t_lost ? "stopped, told lost,"
                                         : "resigned, unconfirmed,",
                             ck_rel_s(stop));
            }
            if (end && end < a->t_lead && b->fence >= a->fence) {
                lead_desc(x, b, db, sizeof db);
                ck_violation(V_LEADER_FENCE, "%s: %s came after %s had ended (+%.3f s)",
                             a->election, da, db, ck_rel_s(end));
            }
        }
        if (!sure) continue;
        for (size_t k = first_write_after(x, a->t_lead); k < x->n_wr && x->wr[k]->t < stop; k++) {
            const struct ck_write *w = x->wr[k];
            if (w->fence != a->fence && strcmp(w->lock, a->election) == 0)
                ck_violation(V_TWO_LEADERS, "%s: the store accepted fence %" PRIu64 "'s write "
                             "at +%.3f s while %s led (resigned, answered 0, +%.3f s)",
                             a->election, w->fence, ck_rel_s(w->t), da, ck_rel_s(stop));
        }
    }
}

/* ---- rule 15: no leader lost without notice ------------------------------------------ */

static void silent(struct ck_elect *e, const struct el *x, const struct el_lead *l,
                   const char *why)
{
    if (e->silent++ < SHOW_MAX)
        printf("SILENT LOSS (leader): %s: %s fence %" PRIu64 " (LEAD +%.3f s): %s\n",
               l->election, x->names[l->proc], l->fence, ck_rel_s(l->t_lead), why);
}

static void check_notice(const struct el *x, struct ck_elect *e)
{
    for (size_t i = 0; i < x->n_ld; i++) {
        const struct el_lead *a = &x->ld[i];
        uint64_t stop = a->t_resign ? a->t_resign : UINT64_MAX;
        int later = 0;

        e->leads++;
        for (size_t j = 0; j < x->n_ld && !later; j++) {
            const struct el_lead *b = &x->ld[j];
            later = b->fence > a->fence && b->t_lead < stop && b->t_lead > a->t_lead &&
                    strcmp(b->election, a->election) == 0;
        }
        if (a->resign_status == 0) {
            e->resigned_ok++;
            continue; /* an overlap is rule 12's */
        }
        if (a->t_lost) {
            e->told++;
            e->told_late += (uint64_t)later;
            continue;
        }
        if (a->killed) {
            e->killed_leading++;
            continue;
        }
        if (a->resign_status == BATON_ENOTHELD)
            silent(e, x, a, "resign answered BATON_ENOTHELD and it was never told");
        else if (a->n_rej)
            silent(e, x, a, "the store refused its write (a newer leader had written) and it "
                            "was never told");
        else if (later)
            silent(e, x, a, "a leader of a higher fence led before it resigned, and it was "
                            "never told");
        else if (a->t_resign == 0)
            silent(e, x, a, "neither resigned nor told lost");
        else
            e->unconfirmed++;
    }
}

/* ---- rule 13: observers ------------------------------------------------------------- */

static int cmp_event(const void *a, const void *b)
{
    const struct el_seen *p = a, *q = b;
    if (p->proc != q->proc) return p->proc < q->proc ? -1 : 1;
    if (p->inc != q->inc) return p->inc < q->inc ? -1 : 1;
    if (p->watch != q->watch) return p->watch < q->watch ? -1 : 1;
    return p->t_start < q->t_start ? -1 : p->t_start > q->t_start;
}

/* Does (f, c) come before (g, k): a lower fence, or the same with a lower counter? */
static int older(uint64_t f, uint64_t c, uint64_t g, uint64_t k)
{
    return f < g || (f == g && c < k);
}

/* The first value in x->val (sorted: el_index) not before (election, f, c). */
static size_t val_lower(const struct el *x, const char *election, uint64_t f, uint64_t c)
{
    size_t lo = 0, hi = x->n_val;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const struct el_val *v = &x->val[mid];
        int e = strcmp(v->election, election);
        if (e < 0 || (e == 0 && older(v->fence, v->counter, f, c)))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A value of `election` known committed (a LEAD's, or a proclaim that
 * returned 0) strictly between (f1, c1) and (f2, c2), or NULL. */
static const struct el_val *committed_between(const struct el *x, const char *election,
                                              uint64_t f1, uint64_t c1, uint64_t f2, uint64_t c2)
{
    for (size_t i = val_lower(x, election, f1, c1 + 1); i < x->n_val; i++) {
        const struct el_val *v = &x->val[i];
        if (strcmp(v->election, election) != 0 || !older(v->fence, v->counter, f2, c2)) break;
        if (v->t_ok) return v;
    }
    return NULL;
}

static void check_watch(const struct el *x, struct ck_elect *e, const struct el_seen *v, size_t n)
{
    uint64_t rev = 0, fence = 0, counter = 0;
    int told = 0, restart_state = 0;
    const char *who = x->names[v[0].proc];

    for (size_t i = 0; i < n; i++) {
        const struct el_seen *s = &v[i];
        const struct el_val *skipped;

        /* A SYNCED's revision says from where the watch is complete: the
         * order is the state events'. */
        if (s->kind != EV_SYNCED && rev &&
            (s->rev < rev || (s->rev == rev && s->kind != EV_STATE)))
            ck_violation(V_OBSERVER, "%s watch %" PRIu64 " of %s: revision %" PRIu64 " (%s, "
                         "+%.3f s) after %" PRIu64, who, s->watch, s->election, s->rev,
                         s->kind == EV_CHANGE ? "CHANGE" : s->kind == EV_GAP ? "GAP" : "STATE",
                         ck_rel_s(s->t_start), rev);
        if (s->kind != EV_SYNCED && s->rev > rev) rev = s->rev;
        /* Told: a GAP, a restart's STATE (one within the watch), or a
         * restarted SYNCED not already announced by its STATE. */
        if (s->kind == EV_GAP || (s->kind == EV_STATE && i > 0) ||
            (s->kind == EV_SYNCED && s->restarted && !restart_state))
            told = 1;
        restart_state = s->kind == EV_STATE && i > 0 ? 1 : s->kind == EV_SYNCED ? 0
                                                                                 : restart_state;
        if (s->kind == EV_CHANGE || s->kind == EV_GAP) restart_state = 0;
        if (s->fence == 0) continue;
        if (older(s->fence, s->counter, fence, counter))
            ck_violation(V_OBSERVER, "%s watch %" PRIu64 " of %s: leader fence %" PRIu64
                         " value %s at +%.3f s after fence %" PRIu64 " (its leaders went back)",
                         who, s->watch, s->election, s->fence, s->value, ck_rel_s(s->t_start),
                         fence);
        if (fence && (skipped = committed_between(x, s->election, fence, counter, s->fence,
                                                  s->counter)) != NULL) {
            if (!told)
                ck_violation(V_OBSERVER, "%s watch %" PRIu64 " of %s: fence %" PRIu64 " value %s "
                             "at +%.3f s after fence %" PRIu64 " counter %" PRIu64 ", but fence "
                             "%" PRIu64 " value %s was committed between (known +%.3f s), with "
                             "no GAP or restart", who, s->watch, s->election, s->fence, s->value,
                             ck_rel_s(s->t_start), fence, counter, skipped->fence,
                             skipped->value, ck_rel_s(skipped->t_ok));
            else
                e->skips_told++;
        }
        if (!older(s->fence, s->counter, fence, counter)) {
            fence = s->fence;
            counter = s->counter;
        }
        told = 0;
    }
}

static void check_observers(struct el *x, struct ck_elect *e)
{
    if (x->n_ev > 0) qsort(x->ev, x->n_ev, sizeof *x->ev, cmp_event); /* ev may be NULL */
    for (size_t i = 0, j; i < x->n_ev; i = j) {
        for (j = i; j < x->n_ev && x->ev[j].proc == x->ev[i].proc &&
                    x->ev[j].inc == x->ev[i].inc && x->ev[j].watch == x->ev[i].watch;
             j++)
            ;
        check_watch(x, e, &x->ev[i], j - i);
    }
}

/* ---- rule 14: reads and values ------------------------------------------------------- */

/* Did the leader of (election, fence), if a campaigner logged it, set
 * value v? 1 yes or unknown leader, 0 no. */
static int value_known(const struct el *x, const char *election, uint64_t fence, const char *v)
{
    int leader_known = 0;

    for (size_t i = val_lower(x, election, fence, 0); i < x->n_val; i++) {
        const struct el_val *k = &x->val[i];
        if (k->fence != fence || strcmp(k->election, election) != 0) break;
        leader_known = 1;
        if (strcmp(k->value, v) == 0) return 1;
    }
    return !leader_known;
}

static void check_values_seen(const struct el *x, const struct el_seen *v, size_t n,
                              const char *what)
{
    for (size_t i = 0; i < n; i++) {
        const struct el_seen *s = &v[i];
        if (s->fence && !value_known(x, s->election, s->fence, s->value))
            ck_violation(V_STALE_READ, "%s %s at +%.3f s shows %s fence %" PRIu64 " with value "
                         "%s, which that leader never set", x->names[s->proc], what,
                         ck_rel_s(s->t_start), s->election, s->fence, s->value);
    }
}

/* The certain leadership of `election` that spans [t0, t1], or NULL. */
static const struct el_lead *certain_over(const struct el *x, const char *election, uint64_t t0,
                                          uint64_t t1)
{
    for (size_t i = 0; i < x->n_ld; i++) {
        const struct el_lead *l = &x->ld[i];
        if (certain(l) && l->t_lead < t0 && l->t_resign > t1 &&
            strcmp(l->election, election) == 0)
            return l;
    }
    return NULL;
}

/* The latest value of `election` known committed before t, or NULL. */
static const struct el_val *latest_known(const struct el *x, const char *election, uint64_t t)
{
    size_t lo = 0, hi = x->n_known;

    while (lo < hi) { /* the first known of election at t or later */
        size_t mid = (lo + hi) / 2;
        const struct el_val *v = x->known[mid];
        int e = strcmp(v->election, election);
        if (e < 0 || (e == 0 && v->t_ok < t))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || strcmp(x->known[lo - 1]->election, election) != 0) return NULL;
    return x->known_max[lo - 1];
}

static void check_reads(const struct el *x)
{
    char da[128];

    for (size_t i = 0; i < x->n_rd; i++) {
        const struct el_seen *r = &x->rd[i];
        const struct el_val *latest = NULL;
        const struct el_lead *c;

        if (r->t_end == 0 || (r->status != 0 && r->status != BATON_ENOTFOUND)) continue;
        c = certain_over(x, r->election, r->t_start, r->t_end);
        if (c && (r->status != 0 || r->fence != c->fence)) {
            lead_desc(x, c, da, sizeof da);
            ck_violation(V_STALE_READ, "%s read %s at +%.3f..+%.3f s: %s, while %s certainly "
                         "led", x->names[r->proc], r->election, ck_rel_s(r->t_start),
                         ck_rel_s(r->t_end), r->status ? "nobody" : "another leader", da);
        }
        if (r->status != 0) continue;
        latest = latest_known(x, r->election, r->t_start);
        if (latest && older(r->fence, r->counter, latest->fence, latest->counter))
            ck_violation(V_STALE_READ, "%s read %s at +%.3f..+%.3f s: fence %" PRIu64 " value %s, "
                         "but fence %" PRIu64 " value %s was known committed before it "
                         "started (+%.3f s)", x->names[r->proc], r->election,
                         ck_rel_s(r->t_start), ck_rel_s(r->t_end), r->fence, r->value,
                         latest->fence, latest->value, ck_rel_s(latest->t_ok));
    }
    check_values_seen(x, x->rd, x->n_rd, "leader read");
}

/* ---- loading and the whole ------------------------------------------------------------- */

static int load_all(const char *dir, struct el *x, struct ck_elect *e)
{
    char path[PATH_MAX];
    struct dirent **names = NULL;
    int n, rv = 0, proc = 0;

    n = scandir(dir, &names, NULL, alphasort);
    if (n < 0) return -1;
    for (int i = 0; i < n; i++) {
        const char *nm = names[i]->d_name;
        size_t len = strlen(nm);
        if (rv == 0 && strncmp(nm, "elect-", 6) == 0 && len > 4 &&
            strcmp(nm + len - 4, ".log") == 0 && proc < 16) {
            snprintf(path, sizeof path, "%s/%s", dir, nm);
            snprintf(x->names[proc], sizeof x->names[proc], "%.*s", (int)(len - 10), nm + 6);
            rv = load_worker(x, e, path, proc++);
            e->ran = 1;
        }
        free(names[i]);
    }
    free(names);
    return rv;
}

static int cmp_val(const void *a, const void *b)
{
    const struct el_val *p = a, *q = b;
    int e = strcmp(p->election, q->election);

    if (e) return e;
    return older(p->fence, p->counter, q->fence, q->counter)   ? -1
           : older(q->fence, q->counter, p->fence, p->counter) ? 1
                                                               : 0;
}

static int cmp_known(const void *a, const void *b)
{
    const struct el_val *p = *(const struct el_val *const *)a, *q = *(const struct el_val *const *)b;
    int e = strcmp(p->election, q->election);

    if (e) return e;
    return p->t_ok < q->t_ok ? -1 : p->t_ok > q->t_ok;
}

/* Is `lock` the name of an election some campaigner led? */
static int is_election(const struct el *x, const char *lock)
{
    for (size_t i = 0; i < x->n_ld; i++)
        if (strcmp(x->ld[i].election, lock) == 0) return 1;
    return 0;
}

/* Build x's indexes (struct el): the rules look values and writes up by
 * binary search, so that an hour's logs take seconds. */
static void el_index(struct el *x, const struct ck_data *d)
{
    char last[CK_LOCK_MAX] = "";

    if (x->n_val > 0) qsort(x->val, x->n_val, sizeof *x->val, cmp_val); /* val may be NULL */
    x->known = malloc((x->n_val + 1) * sizeof *x->known);
    x->known_max = malloc((x->n_val + 1) * sizeof *x->known_max);
    x->wr = malloc((d->n_wr + 1) * sizeof *x->wr);
    if (x->known == NULL || x->known_max == NULL || x->wr == NULL) exit(2);
    for (size_t i = 0; i < x->n_val; i++)
        if (x->val[i].t_ok) x->known[x->n_known++] = &x->val[i];
    qsort(x->known, x->n_known, sizeof *x->known, cmp_known);
    for (size_t i = 0; i < x->n_known; i++) {
        const struct el_val *v = x->known[i], *m = i ? x->known_max[i - 1] : NULL;
        int same = strcmp(last, v->election) == 0;
        x->known_max[i] = same && older(v->fence, v->counter, m->fence, m->counter) ? m : v;
        snprintf(last, sizeof last, "%s", v->election);
    }
    for (size_t i = 0, lk = 0; i < d->n_wr; i++) {
        const struct ck_write *w = &d->wr[i];
        if (!w->accepted || w->op != 'W') continue;
        if (lk == 0 || strcmp(last, w->lock) != 0) { /* one lookup per run of a name */
            lk = 1 + (size_t)is_election(x, w->lock);
            snprintf(last, sizeof last, "%s", w->lock);
        }
        if (lk == 2) x->wr[x->n_wr++] = w;
    }
}

int ck_elect(const char *dir, const struct ck_data *d, struct ck_elect *e)
{
    struct el x;
    char seen[8][CK_LOCK_MAX];
    size_t n_seen = 0;

    memset(e, 0, sizeof *e);
    memset(&x, 0, sizeof x);
    if (load_all(dir, &x, e) != 0) return -1;
    el_index(&x, d);
    check_fences_unique(&x, d);
    check_one_leader(&x);
    check_notice(&x, e);
    check_observers(&x, e);
    check_values_seen(&x, x.ev, x.n_ev, "observed event");
    check_reads(&x);
    for (size_t i = 0; i < x.n_ld; i++) { /* rule 2 on every election's writes */
        size_t k;
        for (k = 0; k < n_seen; k++)
            if (strcmp(seen[k], x.ld[i].election) == 0) break;
        if (k == n_seen && n_seen < 8) {
            snprintf(seen[n_seen++], CK_LOCK_MAX, "%s", x.ld[i].election);
            ck_check_store(d, x.ld[i].election);
        }
    }
    free(x.known);
    free(x.known_max);
    free(x.wr);
    free(x.ld);
    free(x.val);
    free(x.rd);
    free(x.ev);
    return 0;
}

void ck_elect_print(const struct ck_elect *e)
{
    if (!e->ran) return;
    printf("elections: %d campaigners, %" PRIu64 " campaigns (%" PRIu64 " refused "
           "BATON_EVERSION), %" PRIu64 " leaderships: %" PRIu64 " resigned OK, %" PRIu64
           " told lost (%" PRIu64 " after a later leader led), %" PRIu64 " killed while "
           "leading, %" PRIu64 " resigns unconfirmed; %" PRIu64 " proclaims (%" PRIu64
           " returned 0); LOST for unknown leaderships: %" PRIu64 "\n",
           e->campaigners, e->campaigns, e->refused_version, e->leads, e->resigned_ok, e->told,
           e->told_late, e->killed_leading, e->unconfirmed, e->proclaims, e->proclaimed_ok,
           e->lost_unmatched);
    printf("observers: %d, %" PRIu64 " watches, events: %" PRIu64 " CHANGE, %" PRIu64
           " STATE, %" PRIu64 " GAP, %" PRIu64 " SYNCED (%" PRIu64 " restarted); %" PRIu64
           " changes missed and told; %" PRIu64 " leader reads: %" PRIu64 " found a leader, %"
           PRIu64 " nobody, %" PRIu64 " failed\n",
           e->observers, e->watches, e->events[EV_CHANGE], e->events[EV_STATE],
           e->events[EV_GAP], e->events[EV_SYNCED], e->restarted, e->skips_told, e->reads,
           e->reads_found, e->reads_nobody, e->reads_failed);
    printf("leaders lost without notice: %" PRIu64 "\n", e->silent);
}
