/*
 * w4_async.c -- W4 scale on the async API (the default driver): one client
 * process, K sessions (each its own baton_async_t: own session, connection
 * and keepalives) on one libuv loop, holding L distinct locks "w4-<j>"
 * (lock j on session j mod K), each taken with a try-lock (wait 0).
 *
 * Phases, all driven by the loop:
 *   open     at most --open-inflight session opens in flight;
 *   lock     every session keeps at most W4_WINDOW try-locks in flight, a
 *            new one starting as one ends, so the cluster sees many
 *            requests per loop turn (as it would from many clients);
 *   report   the JSON line (the same fields as the blocking W4 driver) with
 *            each server's VmRSS read while the locks are held;
 *   hold     with --hold-ms, the locks stay held that long (a measurement
 *            of the servers under that state runs meanwhile, e.g.
 *            tests/bench/snapshot-stall.sh);
 *   close    at most --open-inflight session closes in flight (the cluster
 *            releases their locks), then every context freed.
 * "seconds" is the time from the first try-lock to the last grant;
 * --seconds bounds opening plus locking.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton/adapters/libuv.h"
#include "baton/baton_async.h"
#include "tests/bench/bench.h"

#define W4_WINDOW 16 /* try-locks in flight per session */

struct w4a;
struct w4s;

/* One try-lock in flight (the callback's data). */
struct w4slot {
    struct w4s *s;
    int64_t t_sent;
    bool busy;
};

struct w4s {
    struct w4a *w;
    int id;
    baton_async_t *ac;
    bool open;
    long next_m;        /* the next lock of this session is id + next_m * K */
    int inflight;       /* its try-locks in flight */
    struct w4slot slot[W4_WINDOW];
};

struct w4a {
    const struct cfg *cfg;
    uv_loop_t loop;
    uv_timer_t limit;   /* --seconds */
    struct w4s *s;
    int K;
    int next_open, opening, n_settled, n_open;
    int next_close, closing, n_freed;
    long acquired, errors, lock_busy;
    int sessions_locking;
    bool locking_over, reported;
    struct hist acq;
    int64_t t_open, t_lock, t_done;
    long rss0[MAX_PIDS];
    int rc;
};

static void open_more(struct w4a *w);
static void close_more(struct w4a *w);
static void lock_more(struct w4s *s);

static void session_free(struct w4s *s)
{
    baton_async_free(s->ac); /* deferred when inside one of its callbacks */
    s->ac = NULL;
    s->open = false;
    if (++s->w->n_freed == s->w->K) uv_close((uv_handle_t *)&s->w->limit, NULL);
}

static void report(struct w4a *w)
{
    const struct cfg *cfg = w->cfg;
    long rss1[MAX_PIDS];
    double secs = (double)(w->t_done - w->t_lock) / 1e9;

    if (w->reported) return;
    w->reported = true;
    for (int i = 0; i < cfg->npids; i++) rss1[i] = proc_rss_kb(cfg->pids[i]);
    fprintf(stderr, "lockbench: W4: %ld of %ld locks in %.2f s; closing the sessions\n",
            w->acquired, cfg->locks, secs);
    printf("{\"system\":\"baton\",\"workload\":\"W4\",\"clients\":%d,\"sessions\":%d,"
           "\"locks\":%ld,\"seconds\":%.3f,\"ops\":%ld,\"ops_per_s\":%.1f,"
           "\"acq_p50_us\":%.1f,\"acq_p99_us\":%.1f,\"acq_max_us\":%.1f,"
           "\"errors\":%ld,\"complete\":%s,\"open_seconds\":%.3f",
           w->K, cfg->sessions, cfg->locks, secs, w->acquired,
           secs > 0 ? (double)w->acquired / secs : 0.0, us(hist_percentile(&w->acq, 50)),
           us(hist_percentile(&w->acq, 99)), us(w->acq.max), w->errors,
           w->acquired == cfg->locks ? "true" : "false", (double)(w->t_lock - w->t_open) / 1e9);
    if (cfg->npids > 0) {
        print_rss("rss_kb", rss1, cfg->npids);
        print_rss("rss_before_kb", w->rss0, cfg->npids);
    }
    printf("}\n");
    fflush(stdout);
    if (w->acquired != cfg->locks) w->rc = 1;
}

/* --hold-ms is over: close the sessions (the cluster releases the locks). */
static void hold_over(uv_timer_t *t)
{
    close_more(t->data);
}

/* Locking is over (all done, or the time limit): report, then close --
 * after --hold-ms, if given, during which the sessions keep their locks
 * (their keepalives run on this loop). */
static void locking_over(struct w4a *w)
{
    if (w->locking_over) return;
    w->locking_over = true;
    w->t_done = now_ns();
    uv_timer_stop(&w->limit);
    report(w);
    if (w->cfg->hold_ms > 0) {
        uv_timer_start(&w->limit, hold_over, (uint64_t)w->cfg->hold_ms, 0);
        return;
    }
    close_more(w);
}

static void session_done_locking(struct w4s *s)
{
    if (--s->w->sessions_locking == 0) locking_over(s->w);
}

static void on_locked(baton_async_t *ac, int status, const char *name, uint64_t fence,
                      void *data)
{
    struct w4slot *slot = data;
    struct w4s *s = slot->s;
    struct w4a *w = s->w;

    (void)name;
    (void)fence;
    s->inflight--;
    slot->busy = false;
    if (status == 0) {
        hist_record(&w->acq, (uint64_t)(now_ns() - slot->t_sent));
        if (++w->acquired == w->cfg->locks) w->t_done = now_ns();
    } else {
        w->errors++;
        log_err(s->id, "trylock", status, baton_async_errmsg(ac));
    }
    if (w->locking_over) return;
    lock_more(s);
    if (s->inflight == 0 && s->next_m < 0) session_done_locking(s);
}

/* Start try-locks on s until its window is full or it has no lock left;
 * next_m < 0 marks a session with nothing left to start. */
static void lock_more(struct w4s *s)
{
    struct w4a *w = s->w;
    char name[32];

    while (s->next_m >= 0 && s->inflight < W4_WINDOW) {
        long j = (long)s->id + s->next_m * w->K;
        struct w4slot *slot = s->slot;
        int rv;

        if (j >= w->cfg->locks) {
            s->next_m = -1;
            break;
        }
        s->next_m++;
        while (slot->busy) slot++;
        snprintf(name, sizeof name, "w4-%ld", j);
        slot->t_sent = now_ns();
        rv = baton_async_lock(s->ac, name, 0, on_locked, slot);
        if (rv != 0) {
            w->errors++;
            log_err(s->id, "trylock", rv, baton_async_errmsg(s->ac));
            continue;
        }
        slot->busy = true;
        s->inflight++;
    }
}

static void start_locking(struct w4a *w)
{
    w->t_lock = now_ns();
    fprintf(stderr, "lockbench: W4: %d of %d sessions open in %.2f s\n", w->n_open, w->K,
            (double)(w->t_lock - w->t_open) / 1e9);
    for (int i = 0; i < w->K; i++)
        if (w->s[i].open) w->sessions_locking++;
    if (w->sessions_locking == 0) {
        locking_over(w);
        return;
    }
    for (int i = 0; i < w->K; i++) {
        struct w4s *s = &w->s[i];
        if (!s->open) continue;
        lock_more(s);
        if (s->inflight == 0 && s->next_m < 0) session_done_locking(s);
    }
}

static void on_open(baton_async_t *ac, int status, uint64_t session, void *data)
{
    struct w4s *s = data;
    struct w4a *w = s->w;

    (void)session;
    w->opening--;
    if (status != 0) {
        w->errors++;
        log_err(s->id, "connect", status, baton_async_errmsg(ac));
        session_free(s);
    } else {
        s->open = true;
        w->n_open++;
    }
    if (++w->n_settled == w->K) start_locking(w);
    open_more(w);
}

static bool session_open(struct w4a *w, struct w4s *s)
{
    if (bench_async_open(w->cfg, "lockbench-w4-", s->id, &w->loop, on_open, s, &s->ac) != 0) {
        w->errors++;
        session_free(s);
        return false;
    }
    return true;
}

static void open_more(struct w4a *w)
{
    while (w->opening < w->cfg->open_inflight && w->next_open < w->K) {
        struct w4s *s = &w->s[w->next_open++];
        if (session_open(w, s))
            w->opening++;
        else if (++w->n_settled == w->K)
            start_locking(w);
    }
}

static void on_closed(baton_async_t *ac, int status, void *data)
{
    struct w4s *s = data;
    struct w4a *w = s->w;

    (void)ac;
    if (status != 0 && status != BATON_ECANCELED)
        note("session %d: close: %s", s->id, baton_err_name(status));
    session_free(s);
    w->closing--;
    close_more(w);
}

static void close_more(struct w4a *w)
{
    while (w->closing < w->cfg->open_inflight && w->next_close < w->K) {
        struct w4s *s = &w->s[w->next_close++];
        if (s->ac == NULL) continue;
        if (s->open && baton_async_close_session(s->ac, on_closed, s) == 0)
            w->closing++;
        else
            session_free(s);
    }
}

static void on_limit(uv_timer_t *t)
{
    struct w4a *w = t->data;

    note("W4: the time limit ran out with %ld of %ld locks", w->acquired, w->cfg->locks);
    if (w->t_lock == 0) w->t_lock = now_ns();
    locking_over(w);
}

int run_w4_async(const struct cfg *cfg)
{
    struct w4a w;
    int rv;

    memset(&w, 0, sizeof w);
    w.cfg = cfg;
    w.K = cfg->sessions;
    w.s = calloc((size_t)w.K, sizeof *w.s);
    if (w.s == NULL || hist_init(&w.acq)) {
        fprintf(stderr, "lockbench: out of memory\n");
        free(w.s);
        return 1;
    }
    for (int i = 0; i < w.K; i++) {
        w.s[i].w = &w;
        w.s[i].id = i;
        for (int k = 0; k < W4_WINDOW; k++) w.s[i].slot[k].s = &w.s[i];
    }
    for (int i = 0; i < cfg->npids; i++) w.rss0[i] = proc_rss_kb(cfg->pids[i]);
    start_watchdog(now_ns() + (int64_t)(cfg->seconds * NS_PER_S) +
                   2 * ((int64_t)w.K / cfg->open_inflight + 2) *
                       (int64_t)(cfg->connect_timeout_ms + cfg->op_timeout_ms) * NS_PER_MS +
                   60 * NS_PER_S);
    uv_loop_init(&w.loop);
    uv_timer_init(&w.loop, &w.limit);
    w.limit.data = &w;
    uv_timer_start(&w.limit, on_limit, (uint64_t)(cfg->seconds * 1000.0 + 0.5), 0);
    w.t_open = now_ns();
    open_more(&w);
    uv_run(&w.loop, UV_RUN_DEFAULT);
    rv = uv_loop_close(&w.loop);
    if (rv != 0) fprintf(stderr, "lockbench: the loop still had handles: %s\n", uv_strerror(rv));
    hist_free(&w.acq);
    free(w.s);
    return w.n_open > 0 ? w.rc : 1;
}
