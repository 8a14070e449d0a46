/*
 * loops.c -- the libuv harness of lockbench's callback drivers (loops.h):
 * the loop threads, the start and the end of the run, and the bookkeeping
 * of grants and releases that drv_async.c and drv_redis.c share.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/bench/loops.h"

static void *client_at(struct run_loop *L, int j)
{
    return L->cl + (size_t)j * L->B->drv->client_size;
}

/* Tell the main thread that every client of this loop is connected (or
 * failed to connect). */
void loop_settled(struct run_loop *L)
{
    if (++L->n_settled < L->n) return;
    pthread_mutex_lock(&L->B->mu);
    L->B->loops_ready++;
    pthread_cond_broadcast(&L->B->cv);
    pthread_mutex_unlock(&L->B->mu);
}

/* Every client is done and the run started: close the loop's own handles
 * so that uv_run returns. */
static void loop_maybe_finish(struct run_loop *L)
{
    if (L->finished || !L->running || L->n_done < L->n) return;
    L->finished = true;
    uv_close((uv_handle_t *)&L->go, NULL);
    uv_close((uv_handle_t *)&L->end, NULL);
}

void loop_client_done(struct run_loop *L)
{
    L->n_done++;
    loop_maybe_finish(L);
}

int64_t loop_ms_left(const struct run_loop *L)
{
    int64_t now = now_ns();

    if (L->ending || now >= L->t_end) return 0;
    return (L->t_end - now + NS_PER_MS - 1) / NS_PER_MS;
}

void loop_granted(struct run_loop *L, struct cres *r, int64_t t0, int64_t t1, uint64_t fence)
{
    struct run_bench *B = L->B;
    int prev;

    hist_record(&r->acq, (uint64_t)(t1 - t0));
    if (B->cfg->fenced) cres_check_fence(r, fence);
    if (B->cfg->workload != W2) return;
    prev = atomic_exchange(&B->holder, r->id + 1);
    if (prev != 0) {
        r->violations++;
        note("client %d granted \"hot\" while client %d holds it", r->id, prev - 1);
    }
    recs_add(&r->recs, atomic_fetch_add(&B->grant_seq, 1), fence);
    if (t1 <= L->t_end) r->ops++;
}

void loop_releasing(struct run_loop *L, const struct cres *r)
{
    int me = r->id + 1;

    if (L->B->cfg->workload == W2) atomic_compare_exchange_strong(&L->B->holder, &me, 0);
}

void loop_released(struct run_loop *L, struct cres *r, int64_t t1, int64_t t2, uint64_t fence)
{
    hist_record(&r->rel, (uint64_t)(t2 - t1));
    if (GRANT_SEQ_WORKLOAD(L->B->cfg->workload)) return; /* counted at the grant */
    recs_add(&r->recs, (uint64_t)(t2 - L->t_start), fence);
    if (t2 <= L->t_end) r->ops++;
}

/* The run is over: each client stops or finishes what it is doing. */
static void on_end(uv_timer_t *t)
{
    struct run_loop *L = t->data;

    L->ending = true;
    for (int i = 0; i < L->n; i++) L->B->drv->end(client_at(L, i));
}

/* The main thread started the clock: arm the end and start every client. */
static void on_go(uv_async_t *h)
{
    struct run_loop *L = h->data;
    int64_t now;

    if (L->running) return;
    pthread_mutex_lock(&L->B->mu);
    L->t_start = L->B->t_start;
    L->t_end = L->B->t_end;
    pthread_mutex_unlock(&L->B->mu);
    L->running = true;
    now = now_ns();
    uv_timer_start(&L->end, on_end,
                   L->t_end > now ? (uint64_t)((L->t_end - now + NS_PER_MS - 1) / NS_PER_MS) : 0,
                   0);
    for (int i = 0; i < L->n; i++) L->B->drv->go(client_at(L, i));
    loop_maybe_finish(L);
}

static void *loop_main(void *arg)
{
    struct run_loop *L = arg;
    int rv;

    for (int i = 0; i < L->n; i++) L->B->drv->start(client_at(L, i));
    uv_run(&L->loop, UV_RUN_DEFAULT);
    rv = uv_loop_close(&L->loop);
    if (rv != 0) fprintf(stderr, "lockbench: a loop still had handles: %s\n", uv_strerror(rv));
    return NULL;
}

/* Spread the clients over the loops and initialise each loop (on this
 * thread; each loop is then run only by its own thread). */
static struct run_loop *loops_new(struct run_bench *B, struct cres *res, int nl)
{
    const int n = B->cfg->clients;
    struct run_loop *loops = calloc((size_t)nl, sizeof *loops);

    if (loops == NULL) return NULL;
    for (int k = 0; k < nl; k++) {
        struct run_loop *L = &loops[k];
        L->B = B;
        L->n = (n - k + nl - 1) / nl;
        L->cl = calloc((size_t)L->n, B->drv->client_size);
        if (L->cl == NULL) return NULL; /* the process exits on this path */
        uv_loop_init(&L->loop);
        uv_async_init(&L->loop, &L->go, on_go);
        L->go.data = L;
        uv_timer_init(&L->loop, &L->end);
        L->end.data = L;
        for (int j = 0; j < L->n; j++) B->drv->init(client_at(L, j), L, &res[k + j * nl]);
    }
    return loops;
}

int run_loops(const struct cfg *cfg, const struct loop_driver *drv)
{
    struct run_bench B;
    struct run_loop *loops;
    struct cres *res;
    int64_t cpu0, cpu1;
    int n = cfg->clients, nl = cfg->loops < cfg->clients ? cfg->loops : cfg->clients, rv;
    char name[64];

    memset(&B, 0, sizeof B);
    B.cfg = cfg;
    B.drv = drv;
    pthread_mutex_init(&B.mu, NULL);
    pthread_cond_init(&B.cv, NULL);
    atomic_init(&B.holder, 0);
    atomic_init(&B.grant_seq, 0);
    (void)modes_init(&B.modes, cfg); /* W6-W8 only; -1 otherwise */
    res = cres_new(n);
    loops = res ? loops_new(&B, res, nl) : NULL;
    if (loops == NULL) {
        fprintf(stderr, "lockbench: out of memory\n");
        return 1;
    }
    start_watchdog(now_ns() + (int64_t)(cfg->seconds * NS_PER_S) +
                   4 * (int64_t)(cfg->connect_timeout_ms + cfg->op_timeout_ms) * NS_PER_MS +
                   30 * NS_PER_S);
    for (int k = 0; k < nl; k++) {
        if (pthread_create(&loops[k].th, NULL, loop_main, &loops[k]) != 0) {
            fprintf(stderr, "lockbench: cannot start loop thread %d\n", k);
            _exit(1); /* its clients would never be driven */
        }
    }

    /* Wait until every client is connected, then start the clock. */
    pthread_mutex_lock(&B.mu);
    while (B.loops_ready < nl) pthread_cond_wait(&B.cv, &B.mu);
    B.t_start = now_ns();
    B.t_end = B.t_start + (int64_t)(cfg->seconds * NS_PER_S);
    pthread_mutex_unlock(&B.mu);
    cpu0 = self_cpu_ns();
    for (int k = 0; k < nl; k++) uv_async_send(&loops[k].go);

    sleep_ns(B.t_end - B.t_start);
    cpu1 = self_cpu_ns();
    for (int k = 0; k < nl; k++) pthread_join(loops[k].th, NULL);

    rv = report_clients(cfg, res, n, B.t_start, B.t_end, atomic_load(&B.grant_seq),
                        MODES_WORKLOAD(cfg->workload) ? &B.modes : NULL);
    snprintf(name, sizeof name, "%s%s", drv->name, nl > 1 ? " (several loops)" : "");
    report_driver_cpu(name, cpu1 - cpu0, B.t_end - B.t_start);
    for (int k = 0; k < nl; k++) free(loops[k].cl);
    free(loops);
    cres_free(res, n);
    pthread_cond_destroy(&B.cv);
    pthread_mutex_destroy(&B.mu);
    return rv;
}
