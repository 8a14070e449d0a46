/*
 * w5.c -- W5 idle sessions: what keeping N sessions alive costs the
 * servers. lockbench --workload W5 --clients N --seconds S [--pids P1,P2,P3
 * --leader-pid P] [--ttl-ms T] [--open-inflight K].
 *
 * N clients, each its own baton_async_t (own session, own connection, own
 * keepalive every ttl/3, as any client of the library), all on one libuv
 * loop in this thread. Phases, all driven by the loop:
 *
 *   open    at most K opens in flight; each finished open starts the next;
 *   settle  SETTLE_MS with nothing but keepalives, so that the commits of
 *           the opens are over before the window;
 *   window  S seconds of idling; the utime+stime of every --pids process
 *           (/proc/PID/stat) and this process's CPU time are read at both
 *           ends of it;
 *   close   at most K session closes in flight, then every context freed.
 *
 * The JSON line is printed when the window ends (before the close phase):
 *   sessions        sessions open at the start of the window
 *   sessions_alive  those still on their first session at its end (a
 *                   session that the cluster expired meanwhile is not)
 *   cpu_pct         per --pids process: CPU time over the window / window,
 *                   in % of one core; leader_cpu_pct the --leader-pid one
 *                   (null without it), leader_rss_kb its VmRSS
 *   client_cpu_pct  lockbench's own, for the same window
 *   rss_kb          each server's VmRSS at the end of the window,
 *                   rss_before_kb before the first open
 *   errors          opens that failed plus sessions lost in the window
 *   keepalives_per_s  what the sessions must send: sessions * 3 / ttl
 *
 * With SECONDS below ttl/3 the window can miss the keepalives entirely;
 * run-bench.sh gives W5 at least 10 s.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baton/adapters/libuv.h"
#include "baton/baton_async.h"
#include "tests/bench/bench.h"

#define SETTLE_MS 1000
#define DEFAULT_TTL_MS 10000 /* libbaton's, when --ttl-ms is not given */

enum w5state { S_NEW, S_OPENING, S_OPEN, S_FAILED, S_CLOSING, S_FREED };

struct w5;

struct w5client {
    struct w5 *w;
    int id;
    baton_async_t *ac;
    enum w5state state;
    uint64_t session; /* the first session's id */
};

struct w5 {
    const struct cfg *cfg;
    uv_loop_t loop;
    uv_timer_t phase; /* the settle and the window */
    struct w5client *cl;
    int n;
    int next_open, inflight, n_settled, n_open;
    int next_close, n_freed;
    int64_t t_open, t_opened;
    int64_t t_win0, cpu_self0;
    long long ticks0[MAX_PIDS];
    long rss0[MAX_PIDS];
    int rc;
};

static void open_more(struct w5 *w);
static void close_more(struct w5 *w);

static void client_free(struct w5client *c)
{
    baton_async_free(c->ac); /* deferred when inside one of its callbacks */
    c->ac = NULL;
    c->state = S_FREED;
    if (++c->w->n_freed == c->w->n) uv_close((uv_handle_t *)&c->w->phase, NULL);
}

static void on_closed(baton_async_t *ac, int status, void *data)
{
    struct w5client *c = data;
    struct w5 *w = c->w;

    (void)ac;
    if (status != 0 && status != BATON_ECANCELED)
        note("session %d: close: %s", c->id, baton_err_name(status));
    client_free(c);
    w->inflight--;
    close_more(w);
}

/* Close sessions until K closes are in flight; free the failed ones. */
static void close_more(struct w5 *w)
{
    while (w->inflight < w->cfg->open_inflight && w->next_close < w->n) {
        struct w5client *c = &w->cl[w->next_close++];
        if (c->state != S_OPEN) {
            if (c->state != S_FREED) client_free(c);
            continue;
        }
        c->state = S_CLOSING;
        if (baton_async_close_session(c->ac, on_closed, c) == 0)
            w->inflight++;
        else
            client_free(c);
    }
}

/* Print the JSON line for the window that just ended. */
static void report(struct w5 *w, int64_t t_win1, int64_t cpu_self1, const long long *ticks1)
{
    const struct cfg *cfg = w->cfg;
    double win_s = (double)(t_win1 - w->t_win0) / 1e9, hz = (double)sysconf(_SC_CLK_TCK);
    double pct[MAX_PIDS], leader = -1;
    long leader_rss = -1;
    unsigned ttl = cfg->ttl_ms ? cfg->ttl_ms : DEFAULT_TTL_MS;
    long rss1[MAX_PIDS];
    int alive = 0, lost;

    for (int i = 0; i < w->n; i++) {
        const struct w5client *c = &w->cl[i];
        if (c->state == S_OPEN && baton_async_session_id(c->ac) == c->session) alive++;
    }
    lost = w->n_open - alive;
    if (lost > 0) note("W5: %d sessions were lost during the idle window", lost);
    for (int i = 0; i < cfg->npids; i++) {
        rss1[i] = proc_rss_kb(cfg->pids[i]);
        pct[i] = w->ticks0[i] < 0 || ticks1[i] < 0 || win_s <= 0
                     ? -1
                     : 100.0 * (double)(ticks1[i] - w->ticks0[i]) / hz / win_s;
        if (cfg->pids[i] == cfg->leader_pid) leader = pct[i], leader_rss = rss1[i];
    }
    printf("{\"system\":\"baton\",\"workload\":\"W5\",\"clients\":%d,\"seconds\":%g,"
           "\"sessions\":%d,\"sessions_alive\":%d,\"ttl_ms\":%u,\"keepalives_per_s\":%.1f,"
           "\"open_seconds\":%.3f,",
           w->n, cfg->seconds, w->n_open, alive, ttl, (double)w->n_open * 3000.0 / ttl,
           (double)(w->t_opened - w->t_open) / 1e9);
    if (leader >= 0)
        printf("\"leader_cpu_pct\":%.2f,", leader);
    else
        printf("\"leader_cpu_pct\":null,");
    if (leader_rss >= 0)
        printf("\"leader_rss_kb\":%ld,", leader_rss);
    else
        printf("\"leader_rss_kb\":null,");
    printf("\"cpu_pct\":[");
    for (int i = 0; i < cfg->npids; i++) {
        if (pct[i] < 0)
            printf("%snull", i ? "," : "");
        else
            printf("%s%.2f", i ? "," : "", pct[i]);
    }
    if (win_s > 0)
        printf("],\"client_cpu_pct\":%.2f",
               100.0 * (double)(cpu_self1 - w->cpu_self0) / 1e9 / win_s);
    else
        printf("],\"client_cpu_pct\":null");
    if (cfg->npids > 0) {
        print_rss("rss_kb", rss1, cfg->npids);
        print_rss("rss_before_kb", w->rss0, cfg->npids);
    }
    printf(",\"errors\":%d}\n", (w->n - w->n_open) + lost);
    fflush(stdout);
    if (leader >= 0)
        fprintf(stderr, "lockbench: W5: %d sessions idled %.2f s; leader CPU %.2f%%\n",
                w->n_open, win_s, leader);
    else
        fprintf(stderr, "lockbench: W5: %d sessions idled %.2f s; leader CPU unknown\n",
                w->n_open, win_s);
}

static void on_window_over(uv_timer_t *t)
{
    struct w5 *w = t->data;
    long long ticks1[MAX_PIDS];
    int64_t cpu_self1 = self_cpu_ns(), t_win1 = now_ns();

    for (int i = 0; i < w->cfg->npids; i++) ticks1[i] = read_cpu_ticks(w->cfg->pids[i]);
    report(w, t_win1, cpu_self1, ticks1);
    fprintf(stderr, "lockbench: W5: closing the sessions\n");
    close_more(w);
}

static void on_settled(uv_timer_t *t)
{
    struct w5 *w = t->data;

    for (int i = 0; i < w->cfg->npids; i++) w->ticks0[i] = read_cpu_ticks(w->cfg->pids[i]);
    w->cpu_self0 = self_cpu_ns();
    w->t_win0 = now_ns();
    uv_timer_start(&w->phase, on_window_over, (uint64_t)(w->cfg->seconds * 1000.0 + 0.5), 0);
}

/* Every open finished: settle, then start the window. */
static void all_opened(struct w5 *w)
{
    w->t_opened = now_ns();
    fprintf(stderr, "lockbench: W5: %d of %d sessions open in %.2f s\n", w->n_open, w->n,
            (double)(w->t_opened - w->t_open) / 1e9);
    if (w->n_open == 0) {
        /* Nothing to idle: a line with the errors, and no window. Every
         * client is freed already (so is the phase timer). */
        w->rc = 1;
        w->t_win0 = w->t_opened;
        w->cpu_self0 = self_cpu_ns();
        for (int i = 0; i < w->cfg->npids; i++) w->ticks0[i] = -1;
        report(w, w->t_win0, w->cpu_self0, w->ticks0);
        return;
    }
    uv_timer_start(&w->phase, on_settled, SETTLE_MS, 0);
}

static void on_open(baton_async_t *ac, int status, uint64_t session, void *data)
{
    struct w5client *c = data;
    struct w5 *w = c->w;

    w->inflight--;
    if (status != 0) {
        log_err(c->id, "connect", status, baton_async_errmsg(ac));
        c->state = S_FAILED;
        client_free(c);
    } else {
        c->state = S_OPEN;
        c->session = session;
        w->n_open++;
    }
    if (++w->n_settled == w->n) all_opened(w);
    open_more(w);
}

/* Start opening client c's session; false if that failed at once. */
static bool client_open(struct w5 *w, struct w5client *c)
{
    if (bench_async_open(w->cfg, "lockbench-w5-", c->id, &w->loop, on_open, c, &c->ac) != 0) {
        c->state = S_FAILED;
        client_free(c);
        return false;
    }
    c->state = S_OPENING;
    return true;
}

/* Start opens until K are in flight. */
static void open_more(struct w5 *w)
{
    while (w->inflight < w->cfg->open_inflight && w->next_open < w->n) {
        struct w5client *c = &w->cl[w->next_open++];
        if (client_open(w, c)) {
            w->inflight++;
        } else if (++w->n_settled == w->n) {
            all_opened(w);
        }
    }
}

int run_w5(const struct cfg *cfg)
{
    struct w5 w;
    int rv;

    memset(&w, 0, sizeof w);
    w.cfg = cfg;
    w.n = cfg->clients;
    w.cl = calloc((size_t)w.n, sizeof *w.cl);
    if (w.cl == NULL) {
        fprintf(stderr, "lockbench: out of memory\n");
        return 1;
    }
    for (int i = 0; i < w.n; i++) {
        w.cl[i].w = &w;
        w.cl[i].id = i;
    }
    for (int i = 0; i < cfg->npids; i++) w.rss0[i] = proc_rss_kb(cfg->pids[i]);
    /* Opening and closing: N / K rounds of at most one connect timeout each. */
    start_watchdog(now_ns() + (int64_t)(cfg->seconds * NS_PER_S) + SETTLE_MS * NS_PER_MS +
                   2 * ((int64_t)w.n / cfg->open_inflight + 2) *
                       (int64_t)(cfg->connect_timeout_ms + cfg->op_timeout_ms) * NS_PER_MS +
                   60 * NS_PER_S);

    uv_loop_init(&w.loop);
    uv_timer_init(&w.loop, &w.phase);
    w.phase.data = &w;
    w.t_open = now_ns();
    open_more(&w);
    uv_run(&w.loop, UV_RUN_DEFAULT);
    rv = uv_loop_close(&w.loop);
    if (rv != 0) fprintf(stderr, "lockbench: the loop still had handles: %s\n", uv_strerror(rv));
    free(w.cl);
    return w.rc;
}
