/*
 * check_load.c -- read the fault harness's logs into struct ck_data: every
 * client's lock calls and grants, the fenced store's decisions and the
 * nemesis's faults. Formats: client.c, store.c, run.c (and README.md).
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

static void see_time(struct ck_data *d, uint64_t t)
{
    if (d->t_first == 0 || t < d->t_first) d->t_first = t;
    if (t > d->t_last) d->t_last = t;
}

/* The latest grant of client c on (lock, fence), or NULL. */
static struct ck_grant *grant_find(struct ck_data *d, int c, const char *lock, uint64_t fence)
{
    for (size_t i = d->n_gr; i-- > 0;) {
        struct ck_grant *g = &d->gr[i];
        if (g->client == c && g->fence == fence && strcmp(g->lock, lock) == 0) return g;
    }
    return NULL;
}

static void bad_line(struct ck_data *d, const char *path, int lineno, const char *line)
{
    if (d->parse_errors++ < 10)
        fprintf(stderr, "faultcheck: %s:%d: cannot read '%.80s'\n", path, lineno, line);
}

/* Client c's attempt `id` on `lock` still in progress (no GRANT or AFAIL
 * yet), or NULL. first: index of c's first attempt (a client's attempts
 * are contiguous: its log is read in one go). */
static struct ck_attempt *attempt_find(struct ck_data *d, size_t first, unsigned long long id,
                                       const char *lock)
{
    for (size_t i = d->n_att; i-- > first;) {
        struct ck_attempt *at = &d->att[i];
        if (at->id == id && at->t_end == 0 && strcmp(at->lock, lock) == 0) return at;
        if (at->id < id) break;
    }
    return NULL;
}

/* One line of client c's log. first_att: index of c's first attempt. */
static void client_line(struct ck_data *d, int c, const char *path, int lineno, char *line,
                        size_t first_att)
{
    unsigned long long t, a, fence, x;
    char ev[16], lock[CK_LOCK_MAX];
    int st, k;
    struct ck_grant *g;
    struct ck_attempt *at;

    if (sscanf(line, "%llu %15s", &t, ev) != 2) {
        bad_line(d, path, lineno, line);
        return;
    }
    see_time(d, t);
    if (strcmp(ev, "ACQ") == 0) {
        long long wait;
        char mode = 'x';
        unsigned limit = 0;
        /* Older logs end after WAIT_MS: exclusive locks. */
        int n = sscanf(line, "%*u %*s %llu %31s %lld %c %u", &a, lock, &wait, &mode, &limit);
        if ((n != 3 && n != 5) || (mode != 'x' && mode != 's')) goto bad;
        CK_GROW(d->att, d->n_att, d->cap_att);
        at = &d->att[d->n_att++];
        memset(at, 0, sizeof *at);
        at->client = c;
        at->id = a;
        snprintf(at->lock, sizeof at->lock, "%s", lock);
        at->shared = mode == 's';
        at->limit = limit;
        at->t_sent = t;
    } else if (strcmp(ev, "QUEUED") == 0) {
        if (sscanf(line, "%*u %*s %llu %31s", &a, lock) != 2 ||
            (at = attempt_find(d, first_att, a, lock)) == NULL)
            goto bad;
        if (at->t_queued == 0) at->t_queued = t;
    } else if (strcmp(ev, "GRANT") == 0) {
        if (sscanf(line, "%*u %*s %llu %31s %llu %llu", &a, lock, &fence, &x) != 4 ||
            (at = attempt_find(d, first_att, a, lock)) == NULL)
            goto bad;
        at->t_end = t;
        at->granted = 1;
        at->fence = fence;
        CK_GROW(d->gr, d->n_gr, d->cap_gr);
        g = &d->gr[d->n_gr++];
        memset(g, 0, sizeof *g);
        g->client = c;
        g->attempt = a;
        snprintf(g->lock, sizeof g->lock, "%s", lock);
        g->shared = at->shared;
        g->limit = at->limit;
        g->fence = fence;
        g->session = x;
        g->t_grant = t;
        g->rel_status = CK_NO_STATUS;
        g->hold = d->n_gr - 1;
        g->n_names = 1;
    } else if (strcmp(ev, "AFAIL") == 0) {
        if (sscanf(line, "%*u %*s %llu %31s %d", &a, lock, &st) != 3 ||
            (at = attempt_find(d, first_att, a, lock)) == NULL)
            goto bad;
        at->t_end = t;
        at->status = st;
    } else if (strcmp(ev, "WRITE") == 0 || strcmp(ev, "WOK") == 0 || strcmp(ev, "WREJ") == 0 ||
               strcmp(ev, "WERR") == 0) {
        if (sscanf(line, "%*u %*s %31s %llu %d", lock, &fence, &k) != 3) goto bad;
        g = grant_find(d, c, lock, fence);
        if (g == NULL) goto bad;
        if (ev[1] == 'O') g->n_ok++;
        if (ev[1] == 'R' && ev[2] == 'E') g->n_rej++;
        if (ev[1] == 'E') g->n_err++;
    } else if (strcmp(ev, "REL") == 0) {
        if (sscanf(line, "%*u %*s %31s %llu", lock, &fence) != 2) goto bad;
        if ((g = grant_find(d, c, lock, fence)) == NULL) goto bad;
        g->t_rel = t;
    } else if (strcmp(ev, "RELD") == 0) {
        if (sscanf(line, "%*u %*s %31s %llu %d", lock, &fence, &st) != 3) goto bad;
        if ((g = grant_find(d, c, lock, fence)) == NULL) goto bad;
        g->t_reld = t;
        g->rel_status = st;
        g->n_reld++;
        if (st == BATON_ELOST && g->t_told == 0) g->t_told = t;
    } else if (strcmp(ev, "LOST") == 0) {
        if (sscanf(line, "%*u %*s %31s %llu %d", lock, &fence, &st) != 3) goto bad;
        if ((g = grant_find(d, c, lock, fence)) == NULL) {
            d->lost_unmatched++;
            return;
        }
        g->lost_cb = 1;
        g->n_lost++;
        if (g->t_told == 0) g->t_told = t;
    } else if (strcmp(ev, "SESS") == 0) {
        d->sessions++;
    } else if (strcmp(ev, "SESSFAIL") == 0) {
        d->session_fails++;
    } else if (strcmp(ev, "END") == 0) {
        d->clients_ended++;
    } else if (strcmp(ev, "CLOSED") != 0 && strcmp(ev, "NOTE") != 0) {
        goto bad;
    }
    return;
bad:
    bad_line(d, path, lineno, line);
}

/* Open a log for reading, or say why not. */
static FILE *open_log(const char *path)
{
    FILE *f = fopen(path, "r");

    if (f == NULL) fprintf(stderr, "faultcheck: %s: %s\n", path, strerror(errno));
    return f;
}

static int load_client(struct ck_data *d, const char *path, int c)
{
    FILE *f = open_log(path);
    char line[512];
    size_t first = d->n_att;
    int lineno = 0;

    if (f == NULL) return -1;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\n")] = '\0';
        if (line[0]) client_line(d, c, path, lineno, line, first);
    }
    fclose(f);
    return 0;
}

/* One line of store.log (store.c): "A OP ...", "R OP ... MAX" or "D ...".
 * 0, or -1 if it cannot be read. */
static int store_line(struct ck_data *d, const char *line)
{
    unsigned long long t, fence, max = 0, limit = 0, k;
    char verdict[4], op = 'W', lock[CK_LOCK_MAX], who[64];
    struct ck_write *w;
    int n;

    if (sscanf(line, "%llu %3s", &t, verdict) != 2) return -1;
    if (strcmp(verdict, "D") == 0) {
        if (sscanf(line, "%*u %*s %31s %llu %63s", lock, &fence, who) != 3) return -1;
        op = 'D';
    } else if (strcmp(verdict, "A") == 0 || strcmp(verdict, "R") == 0) {
        int rej = verdict[0] == 'R';
        n = sscanf(line, "%*u %*s %c %31s %llu %63s %llu %llu %llu", &op, lock, &fence, who, &k,
                   rej ? &max : &limit, &limit);
        if ((op != 'W' && op != 'S' && op != 'P') || n < 5 + rej ||
            n != 5 + rej + (op == 'P'))
            return -1;
    } else {
        return -1;
    }
    CK_GROW(d->wr, d->n_wr, d->cap_wr);
    w = &d->wr[d->n_wr++];
    w->t = t;
    w->op = op;
    snprintf(w->lock, sizeof w->lock, "%s", lock);
    w->fence = fence;
    w->accepted = verdict[0] != 'R';
    w->max = verdict[0] == 'R' ? max : fence;
    w->limit = (uint32_t)limit;
    see_time(d, t);
    return 0;
}

static int load_store(struct ck_data *d, const char *path)
{
    FILE *f = open_log(path);
    char line[512];
    int lineno = 0;

    if (f == NULL) return -1;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\n")] = '\0';
        if (store_line(d, line) != 0) bad_line(d, path, lineno, line);
    }
    fclose(f);
    return 0;
}

/* The rest of a FORCED or EXPIRED line (nemesis_admin.h), from its first
 * field after the word. 0, or -1 if it cannot be read. */
static int taken_line(struct ck_data *d, unsigned long long t, const char *what, const char *rest)
{
    unsigned long long fence, session, sent;
    char lock[CK_LOCK_MAX], mode[8], maybe[8] = "";
    struct ck_taken *tk;

    CK_GROW(d->tk, d->n_tk, d->cap_tk);
    tk = &d->tk[d->n_tk];
    memset(tk, 0, sizeof *tk);
    tk->t = t;
    if (what[0] == 'F') {
        if (sscanf(rest, "%31s %llu %llu %7s %llu", lock, &fence, &session, mode, &sent) != 5 ||
            (strcmp(mode, "now") != 0 && strcmp(mode, "wait") != 0))
            return -1;
        snprintf(tk->lock, sizeof tk->lock, "%s", lock);
        tk->fence = fence;
        tk->session = session;
        tk->now = mode[0] == 'n';
        tk->maybe = session == 0;
    } else {
        int n = sscanf(rest, "%llu %llu %7s", &session, &sent, maybe);
        if (n < 2 || (n == 3 && strcmp(maybe, "maybe") != 0)) return -1;
        tk->expiry = 1;
        tk->session = session;
        tk->maybe = n == 3;
    }
    tk->t_sent = sent;
    d->n_tk++;
    return 0;
}

static int load_nemesis(struct ck_data *d, const char *path)
{
    FILE *f = open_log(path);
    char line[512];
    int lineno = 0;

    if (f == NULL) return -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long long t;
        char what[16], kind[32];
        int off = 0;
        struct ck_fault *fa;

        lineno++;
        line[strcspn(line, "\n")] = '\0';
        if (sscanf(line, "%llu %15s %31s %n", &t, what, kind, &off) < 3) {
            bad_line(d, path, lineno, line);
            continue;
        }
        if (strcmp(what, "FORCED") == 0 || strcmp(what, "EXPIRED") == 0) {
            int rest = 0;
            sscanf(line, "%*s %*s %n", &rest);
            if (rest == 0 || taken_line(d, t, what, line + rest) != 0)
                bad_line(d, path, lineno, line);
            continue;
        }
        if (strcmp(what, "FAULT") != 0 && strcmp(what, "HEAL") != 0) continue; /* NOTE lines */
        CK_GROW(d->fa, d->n_fa, d->cap_fa);
        fa = &d->fa[d->n_fa++];
        fa->t = t;
        fa->heal = what[0] == 'H';
        snprintf(fa->kind, sizeof fa->kind, "%s", kind);
        snprintf(fa->detail, sizeof fa->detail, "%s", off > 0 ? line + off : "");
    }
    fclose(f);
    return 0;
}

/*
 * A multi-lock call's names: its ACQ lines are adjacent (one call), and so
 * are its GRANT lines (one callback). Mark each call's names and first
 * name, and give every name of a call the QUEUED of the call (it names the
 * first name; the one ACQUIRE_MANY entry queued the call in every queue at
 * once), and every name of a hold the unlock's outcome and the notice of
 * a loss (they name the handle, the first name; one unlock releases all,
 * a loss of one is a loss of all).
 */
static void link_calls(struct ck_data *d)
{
    for (size_t i = 0, j; i < d->n_att; i = j) {
        uint64_t queued = 0;
        for (j = i; j < d->n_att && d->att[j].client == d->att[i].client &&
                    d->att[j].id == d->att[i].id;
             j++)
            if (d->att[j].t_queued && (queued == 0 || d->att[j].t_queued < queued))
                queued = d->att[j].t_queued;
        for (size_t k = i; k < j; k++) {
            d->att[k].n_names = (int)(j - i);
            d->att[k].first = k == i;
            d->att[k].t_queued = queued;
        }
    }
    for (size_t i = 0, j; i < d->n_gr; i = j) {
        struct ck_grant *h = &d->gr[i];
        for (j = i + 1; j < d->n_gr && d->gr[j].client == h->client &&
                        d->gr[j].attempt == h->attempt;
             j++) {
            const struct ck_grant *g = &d->gr[j];
            if (g->t_told && (h->t_told == 0 || g->t_told < h->t_told)) h->t_told = g->t_told;
            h->lost_cb |= g->lost_cb;
            if (h->rel_status == CK_NO_STATUS) {
                h->rel_status = g->rel_status;
                h->t_reld = g->t_reld;
            }
        }
        for (size_t k = i; k < j; k++) {
            struct ck_grant *g = &d->gr[k];
            g->hold = i;
            g->n_names = (int)(j - i);
            if (k == i) continue;
            g->t_told = h->t_told;
            g->lost_cb = h->lost_cb;
            if (g->rel_status == CK_NO_STATUS) {
                g->rel_status = h->rel_status;
                g->t_reld = h->t_reld;
            }
        }
    }
}

int ck_load(const char *dir, struct ck_data *d)
{
    char path[PATH_MAX];
    struct dirent **names = NULL;
    int n, rv = 0;

    memset(d, 0, sizeof *d);
    n = scandir(dir, &names, NULL, alphasort);
    if (n < 0) {
        fprintf(stderr, "faultcheck: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const char *nm = names[i]->d_name;
        size_t len = strlen(nm);
        if (rv == 0 && strncmp(nm, "client-", 7) == 0 && len > 4 &&
            strcmp(nm + len - 4, ".log") == 0) {
            snprintf(path, sizeof path, "%s/%s", dir, nm);
            rv = load_client(d, path, d->n_clients++);
        }
        free(names[i]);
    }
    free(names);
    if (rv != 0) return -1;
    if (d->n_clients == 0) {
        fprintf(stderr, "faultcheck: no client-*.log in %s\n", dir);
        return -1;
    }
    link_calls(d);
    snprintf(path, sizeof path, "%s/store.log", dir);
    if (load_store(d, path) != 0) return -1;
    snprintf(path, sizeof path, "%s/nemesis.log", dir);
    if (load_nemesis(d, path) != 0) return -1;
    return 0;
}

void ck_free(struct ck_data *d)
{
    free(d->att);
    free(d->gr);
    free(d->wr);
    free(d->fa);
    free(d->tk);
    memset(d, 0, sizeof *d);
}
