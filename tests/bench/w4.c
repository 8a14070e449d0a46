/*
 * w4.c -- W4 scale (docs/performance.md): one client process opens K sessions and
 * holds L distinct locks "w4-<j>" (lock j on session j mod K), taken with
 * baton_trylock by --clients threads; "seconds" is the time to acquire them
 * all, --seconds the time limit. With --pids, each server's VmRSS is read
 * from /proc before and while the locks are held.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton.h"
#include "tests/bench/bench.h"


struct w4 {
    const struct cfg *cfg;
    baton_t **b;          /* K sessions; NULL where the connect failed */
    baton_lock_t **locks; /* L held locks; NULL where not acquired */
    int64_t t_limit;      /* stop acquiring at this time */
};

struct w4_worker {
    struct w4 *w;
    int t;
    pthread_t th;
    bool started;
    struct hist acq;
    uint64_t acquired, errors;
};

/* Phase 1: open the sessions s = t, t + T, t + 2T, ... */
static void *w4_open_main(void *arg)
{
    struct w4_worker *k = arg;
    const struct cfg *cfg = k->w->cfg;
    int rv;

    for (int s = k->t; s < cfg->sessions; s += cfg->clients) {
        int64_t left_ms = (k->w->t_limit - now_ns()) / NS_PER_MS;
        if (left_ms <= 0) break;
        rv = bench_open_session(cfg, s,
                          left_ms < cfg->connect_timeout_ms ? (unsigned)left_ms
                                                            : cfg->connect_timeout_ms,
                          &k->w->b[s]);
        if (rv != 0) {
            k->errors++;
            log_err(s, "connect", rv, baton_connect_errmsg());
        }
    }
    return NULL;
}

/* Phase 2: acquire lock j = s + m*K on session s, for this worker's
 * sessions s, round-robin over them (m = 0, 1, ...). */
static void *w4_lock_main(void *arg)
{
    struct w4_worker *k = arg;
    const struct cfg *cfg = k->w->cfg;
    const int K = cfg->sessions, T = cfg->clients;
    char name[32];
    int64_t t0, t1;
    int rv;

    for (long m = 0;; m++) {
        bool any = false;
        for (int s = k->t; s < K; s += T) {
            long j = (long)s + m * K;
            if (j >= cfg->locks) break;
            any = true;
            if (k->w->b[s] == NULL) continue; /* its connect failed */
            t0 = now_ns();
            if (t0 >= k->w->t_limit) return NULL;
            snprintf(name, sizeof name, "w4-%ld", j);
            rv = baton_trylock(k->w->b[s], name, &k->w->locks[j]);
            t1 = now_ns();
            if (rv != 0) {
                k->errors++;
                log_err(s, "trylock", rv, baton_errmsg(k->w->b[s]));
                continue;
            }
            hist_record(&k->acq, (uint64_t)(t1 - t0));
            k->acquired++;
        }
        if (!any) break;
    }
    return NULL;
}

/* Phase 3: close this worker's sessions (the cluster releases their locks). */
static void *w4_close_main(void *arg)
{
    struct w4_worker *k = arg;
    const struct cfg *cfg = k->w->cfg;

    for (int s = k->t; s < cfg->sessions; s += cfg->clients) {
        baton_close(k->w->b[s]);
        k->w->b[s] = NULL;
    }
    return NULL;
}

/* Run fn on every worker and wait for them all. */
static void w4_phase(struct w4_worker *wk, int T, void *(*fn)(void *))
{
    for (int t = 0; t < T; t++) {
        wk[t].started = pthread_create(&wk[t].th, NULL, fn, &wk[t]) == 0;
        if (!wk[t].started) fn(&wk[t]); /* no thread: do its share here */
    }
    for (int t = 0; t < T; t++)
        if (wk[t].started) pthread_join(wk[t].th, NULL);
}

int run_w4(const struct cfg *cfg)
{
    struct w4 w;
    struct w4_worker *wk;
    struct hist acq;
    long rss0[MAX_PIDS], rss1[MAX_PIDS];
    uint64_t acquired = 0, errors = 0;
    int64_t t_open, t_lock, t_done;
    int T = cfg->clients, n_open = 0;

    memset(&w, 0, sizeof w);
    w.cfg = cfg;
    w.b = calloc((size_t)cfg->sessions, sizeof *w.b);
    w.locks = calloc((size_t)cfg->locks, sizeof *w.locks);
    wk = calloc((size_t)T, sizeof *wk);
    if (w.b == NULL || w.locks == NULL || wk == NULL || hist_init(&acq)) {
        fprintf(stderr, "lockbench: out of memory\n");
        return 1;
    }
    for (int t = 0; t < T; t++) {
        wk[t].w = &w;
        wk[t].t = t;
        if (hist_init(&wk[t].acq)) {
            fprintf(stderr, "lockbench: out of memory\n");
            return 1;
        }
    }
    for (int i = 0; i < cfg->npids; i++) rss0[i] = proc_rss_kb(cfg->pids[i]);

    /* --seconds bounds opening plus acquiring; closing is bounded per call. */
    t_open = now_ns();
    w.t_limit = t_open + (int64_t)(cfg->seconds * NS_PER_S);
    start_watchdog(w.t_limit + (int64_t)cfg->connect_timeout_ms * NS_PER_MS +
                   ((int64_t)cfg->sessions / T + 2) * 5 * NS_PER_S + 60 * NS_PER_S);
    w4_phase(wk, T, w4_open_main);
    for (int s = 0; s < cfg->sessions; s++) n_open += w.b[s] != NULL;
    t_lock = now_ns();
    fprintf(stderr, "lockbench: W4: %d of %d sessions open in %.2f s\n", n_open, cfg->sessions,
            (double)(t_lock - t_open) / 1e9);
    w4_phase(wk, T, w4_lock_main);
    t_done = now_ns();
    for (int i = 0; i < cfg->npids; i++) rss1[i] = proc_rss_kb(cfg->pids[i]);

    for (int t = 0; t < T; t++) {
        hist_merge(&acq, &wk[t].acq);
        acquired += wk[t].acquired;
        errors += wk[t].errors;
    }
    fprintf(stderr, "lockbench: W4: %" PRIu64 " of %ld locks in %.2f s; closing the sessions\n",
            acquired, cfg->locks, (double)(t_done - t_lock) / 1e9);
    printf("{\"system\":\"baton\",\"workload\":\"W4\",\"clients\":%d,\"sessions\":%d,"
           "\"locks\":%ld,\"seconds\":%.3f,\"ops\":%" PRIu64 ",\"ops_per_s\":%.1f,"
           "\"acq_p50_us\":%.1f,\"acq_p99_us\":%.1f,\"acq_max_us\":%.1f,"
           "\"errors\":%" PRIu64 ",\"complete\":%s,\"open_seconds\":%.3f",
           T, cfg->sessions, cfg->locks, (double)(t_done - t_lock) / 1e9, acquired,
           t_done > t_lock ? (double)acquired / ((double)(t_done - t_lock) / 1e9) : 0.0,
           us(hist_percentile(&acq, 50)), us(hist_percentile(&acq, 99)), us(acq.max), errors,
           acquired == (uint64_t)cfg->locks ? "true" : "false", (double)(t_lock - t_open) / 1e9);
    if (cfg->npids > 0) {
        print_rss("rss_kb", rss1, cfg->npids);
        print_rss("rss_before_kb", rss0, cfg->npids);
    }
    printf("}\n");
    fflush(stdout);

    /* Close every session (the cluster releases their locks), then free
     * the lock objects, which after baton_close only frees them. */
    w4_phase(wk, T, w4_close_main);
    for (long j = 0; j < cfg->locks; j++)
        if (w.locks[j]) (void)baton_unlock(w.locks[j]);
    for (int t = 0; t < T; t++) hist_free(&wk[t].acq);
    hist_free(&acq);
    free(wk);
    free(w.locks);
    free(w.b);
    return n_open > 0 ? 0 : 1;
}

