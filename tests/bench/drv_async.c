/*
 * drv_async.c -- the async driver of W1/W2/W3/W6/W7 (lockbench --driver async, the
 * default): every client is a small callback state machine with its own
 * baton_async_t (client/baton_async.h) -- its own session, connection and
 * keepalives, as docs/performance.md describes -- and the clients are spread over
 * --loops libuv loops, one thread each (client i on loop i mod loops).
 *
 * Why: with the blocking driver every client is two threads and every call
 * two context switches; on a 2-core machine lockbench then takes much of
 * the CPU the servers need and caps what it measures. Here a loop turn
 * handles every reply that arrived and sends every next request at once.
 *
 * A client's life:
 *
 *   OPENING --open cb--> IDLE --go--> LOCKING --granted--> (W2/W6/W7: HOLDING)
 *   --> UNLOCKING --done--> LOCKING ... ; an error --> PAUSED (10 ms) or,
 *   after a lost session, LOCKING again at once (the core opens a fresh
 *   session for the next call); at the end of the run --> CLOSING --> DONE.
 *
 * Latencies are measured from the call to its callback, so they include
 * the time the reply waits for the loop, as the blocking driver's include
 * the thread wake-up. Acquires wait at most for the time left in the run.
 * When the run ends, a client waiting for a lock closes its session at once
 * (the close withdraws the wait; a grant that races it is released by the
 * close), a client holding or releasing finishes that first. Results go to
 * report.c, so both drivers print the same line.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/adapters/libuv.h"
#include "client/baton_async.h"
#include "tests/bench/bench.h"

enum cstate { C_OPENING, C_IDLE, C_LOCKING, C_HOLDING, C_UNLOCKING, C_PAUSED, C_CLOSING, C_DONE };

struct abench;
struct aloop;

struct aclient {
    struct aloop *L;
    struct cres *r;
    baton_async_t *ac; /* NULL once freed */
    uv_timer_t timer;  /* W2/W6/W7's hold and the pause after an error */
    enum cstate state;
    char name[32];     /* the lock this client takes (W6/W7: this cycle's) */
    struct mreq req;   /* W6/W7: this cycle's request */
    uint64_t rng;      /* W6: the stream its picks come from */
    uint64_t fence;    /* of the grant being held */
    int64_t t0, t1;    /* when the lock call / the unlock call was made */
};

struct aloop {
    struct abench *B;
    uv_loop_t loop;
    uv_async_t go;  /* the main thread starts the run */
    uv_timer_t end; /* the end of the run */
    pthread_t th;
    bool started;
    struct aclient *cl;
    int n;
    int n_settled;  /* open callbacks that ran (or opens that failed at once) */
    int n_done;     /* clients freed */
    bool running;   /* go arrived */
    bool ending;    /* the end timer fired */
    bool finished;  /* go and end closed */
    int64_t t_start, t_end;
};

struct abench {
    const struct cfg *cfg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int loops_ready;
    int64_t t_start, t_end;
    atomic_int holder; /* W2: client id + 1 of the holder, 0 if none */
    atomic_uint_fast64_t grant_seq;
    struct modes modes; /* W6/W7 */
};

static void next_op(struct aclient *c);

static void fail(struct aclient *c, const char *what, int rv)
{
    c->r->errors++;
    log_err(c->r->id, what, rv, c->ac ? baton_async_errmsg(c->ac) : NULL);
}

/* Tell the main thread that every client of this loop has its session (or
 * failed to open one). */
static void loop_ready(struct aloop *L)
{
    pthread_mutex_lock(&L->B->mu);
    L->B->loops_ready++;
    pthread_cond_broadcast(&L->B->cv);
    pthread_mutex_unlock(&L->B->mu);
}

/* Every client is done and the run started: close the loop's own handles so
 * that uv_run returns. */
static void loop_maybe_finish(struct aloop *L)
{
    if (L->finished || !L->running || L->n_done < L->n) return;
    L->finished = true;
    uv_close((uv_handle_t *)&L->go, NULL);
    uv_close((uv_handle_t *)&L->end, NULL);
}

/* Free the client's context (deferred if inside one of its callbacks) and
 * its timer. */
static void client_free(struct aclient *c)
{
    struct aloop *L = c->L;

    baton_async_free(c->ac);
    c->ac = NULL;
    uv_close((uv_handle_t *)&c->timer, NULL);
    c->state = C_DONE;
    L->n_done++;
    loop_maybe_finish(L);
}

static void on_closed(baton_async_t *ac, int status, void *data)
{
    struct aclient *c = data;

    (void)ac;
    if (status != 0 && status != BATON_ECANCELED)
        note("client %d: close: %s", c->r->id, baton_err_name(status));
    client_free(c);
}

/* The run is over for this client: end its session in the cluster (which
 * releases what it holds and withdraws its wait), then free it. */
static void finish_client(struct aclient *c)
{
    int rv;

    c->state = C_CLOSING;
    uv_timer_stop(&c->timer);
    rv = baton_async_close_session(c->ac, on_closed, c);
    if (rv < 0) client_free(c); /* no session to close */
}

static void on_pause_over(uv_timer_t *t)
{
    next_op(t->data);
}

/* After a failed call: right after a lost session the next call opens a
 * fresh one; an unlock the cluster did not count needs no pause; anything
 * else, and any call refused before it started (sync), pauses 10 ms. */
static void recover(struct aclient *c, int rv, bool sync)
{
    if (!sync && (rv == BATON_ESESSION || rv == BATON_ENOTHELD)) {
        next_op(c);
        return;
    }
    c->state = C_PAUSED;
    uv_timer_start(&c->timer, on_pause_over, ERROR_PAUSE_NS / NS_PER_MS, 0);
}

static void on_unlocked(baton_async_t *ac, int status, void *data)
{
    struct aclient *c = data;
    const struct aloop *L = c->L;
    int64_t t2 = now_ns();

    (void)ac;
    if (status != 0) {
        fail(c, "unlock", status);
        recover(c, status, false);
        return;
    }
    hist_record(&c->r->rel, (uint64_t)(t2 - c->t1));
    if (!GRANT_SEQ_WORKLOAD(L->B->cfg->workload)) {
        recs_add(&c->r->recs, (uint64_t)(t2 - L->t_start), c->fence);
        if (t2 <= L->t_end) c->r->ops++;
    }
    next_op(c);
}

/* Release the held lock (W2: clear the holder flag first; W6/W7: count
 * this holder out first). */
static void release(struct aclient *c)
{
    struct abench *B = c->L->B;
    int me = c->r->id + 1, rv;

    if (B->cfg->workload == W2) atomic_compare_exchange_strong(&B->holder, &me, 0);
    if (MODES_WORKLOAD(B->cfg->workload)) modes_leave(&B->modes, &c->req);
    c->state = C_UNLOCKING;
    c->t1 = now_ns();
    rv = baton_async_unlock(c->ac, c->name, c->fence, on_unlocked, c);
    if (rv < 0) {
        fail(c, "unlock", rv);
        recover(c, rv, true);
    }
}

static void on_hold_over(uv_timer_t *t)
{
    release(t->data);
}

/* W2's bookkeeping of a grant: the holder flag, the grant's place in the
 * sequence, and the count if it came within the run. */
static void w2_granted(struct aclient *c, int64_t t1)
{
    struct abench *B = c->L->B;
    int prev = atomic_exchange(&B->holder, c->r->id + 1);
    uint64_t seq;

    if (prev != 0) {
        c->r->violations++;
        note("client %d granted \"hot\" while client %d holds it", c->r->id, prev - 1);
    }
    seq = atomic_fetch_add(&B->grant_seq, 1);
    recs_add(&c->r->recs, seq, c->fence);
    if (t1 <= c->L->t_end) c->r->ops++;
}

/* W6/W7's bookkeeping of a grant: the holders' check, the grant's place in
 * the sequence, and the counts if it came within the run. */
static void modes_granted(struct aclient *c, int64_t t1)
{
    struct abench *B = c->L->B;

    c->r->violations += modes_enter(&B->modes, &c->req, c->r->id);
    recs_add(&c->r->recs, atomic_fetch_add(&B->grant_seq, 1), c->fence);
    if (t1 <= c->L->t_end) {
        c->r->ops++;
        c->r->shared_ops += c->req.mode == BATON_MODE_SHARED;
    }
}

static void on_locked(baton_async_t *ac, int status, const char *name, uint64_t fence,
                      void *data)
{
    struct aclient *c = data;
    const struct cfg *cfg = c->L->B->cfg;
    int64_t t1 = now_ns();

    (void)ac;
    (void)name;
    if (c->state == C_CLOSING) return; /* the run ended; the close releases a grant */
    if (status == BATON_ETIMEDOUT && t1 >= c->L->t_end - RUN_OVER_SLACK_NS) {
        finish_client(c); /* the wait ended with the run */
        return;
    }
    if (status != 0) {
        fail(c, "lock", status);
        recover(c, status, false);
        return;
    }
    c->fence = fence;
    hist_record(&c->r->acq, (uint64_t)(t1 - c->t0));
    cres_check_fence(c->r, fence);
    if (cfg->workload == W2 || MODES_WORKLOAD(cfg->workload)) {
        if (cfg->workload == W2)
            w2_granted(c, t1);
        else
            modes_granted(c, t1);
        if (cfg->hold_ms > 0) {
            c->state = C_HOLDING;
            uv_timer_start(&c->timer, on_hold_over, (uint64_t)cfg->hold_ms, 0);
            return;
        }
    }
    release(c);
}

/* W6/W7: pick this cycle's request and ask for it, waiting at most left_ms. */
static int lock_modes(struct aclient *c, int64_t left_ms)
{
    struct modes *m = &c->L->B->modes;
    baton_lock_args a = {.wait_ms = left_ms};

    const char *names[MREQ_MAX];

    modes_pick(m, &c->rng, &c->req);
    snprintf(c->name, sizeof c->name, "%s", m->names[c->req.idx[0]]);
    a.mode = c->req.mode;
    a.limit = c->req.limit;
    for (int k = 0; k < c->req.n; k++) names[k] = m->names[c->req.idx[k]];
    /* W8: one atomic multi-lock; its handle is its first name (c->name). */
    return baton_async_lock_many(c->ac, names, (size_t)c->req.n, &a, on_locked, c);
}

/* W1/W3 with --names K: the client's K names at once; the handle is its
 * first name (c->name). */
static int lock_own_names(struct aclient *c, int64_t left_ms)
{
    baton_lock_args a = {.wait_ms = left_ms};
    char buf[W1_MAX_NAMES][48];
    const char *names[W1_MAX_NAMES];
    int k = c->L->B->cfg->names;

    w1_names(c->name, k, buf, names);
    return baton_async_lock_many(c->ac, names, (size_t)k, &a, on_locked, c);
}

/* Start the next acquire, or finish if the run is over. */
static void next_op(struct aclient *c)
{
    struct aloop *L = c->L;
    int64_t now = now_ns(), left_ms;
    int rv;

    if (L->ending || now >= L->t_end) {
        finish_client(c);
        return;
    }
    left_ms = (L->t_end - now + NS_PER_MS - 1) / NS_PER_MS;
    c->state = C_LOCKING;
    c->t0 = now;
    if (MODES_WORKLOAD(L->B->cfg->workload))
        rv = lock_modes(c, left_ms);
    else if (L->B->cfg->names > 1)
        rv = lock_own_names(c, left_ms);
    else
        rv = baton_async_lock(c->ac, c->name, left_ms, on_locked, c);
    if (rv < 0) {
        fail(c, "lock", rv);
        recover(c, rv, true);
    }
}

/* The run is over: clients waiting for a lock or pausing close now; the
 * others close when their current call completes (next_op). */
static void on_end(uv_timer_t *t)
{
    struct aloop *L = t->data;

    L->ending = true;
    for (int i = 0; i < L->n; i++)
        if (L->cl[i].state == C_LOCKING || L->cl[i].state == C_PAUSED ||
            L->cl[i].state == C_IDLE)
            finish_client(&L->cl[i]);
}

/* The main thread started the clock: arm the end and start every client. */
static void on_go(uv_async_t *h)
{
    struct aloop *L = h->data;
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
    for (int i = 0; i < L->n; i++)
        if (L->cl[i].state == C_IDLE) next_op(&L->cl[i]);
    loop_maybe_finish(L);
}

static void settle(struct aclient *c)
{
    if (++c->L->n_settled == c->L->n) loop_ready(c->L);
}

static void on_open(baton_async_t *ac, int status, uint64_t session, void *data)
{
    struct aclient *c = data;

    (void)session;
    if (status != 0) {
        c->r->errors++;
        log_err(c->r->id, "connect", status, baton_async_errmsg(ac));
        client_free(c);
    } else {
        c->r->connected = true;
        c->state = C_IDLE;
    }
    settle(c);
}

/* Create client c's context on its loop and start opening its session. */
static void client_start(struct aclient *c, const struct cfg *cfg)
{
    int rv;

    uv_timer_init(&c->L->loop, &c->timer);
    c->timer.data = c;
    c->state = C_OPENING;
    rv = bench_async_open(cfg, "lockbench-", c->r->id, &c->L->loop, on_open, c, &c->ac);
    if (rv != 0) {
        c->r->errors++;
        client_free(c);
        settle(c);
    }
}

static void *loop_main(void *arg)
{
    struct aloop *L = arg;
    int rv;

    for (int i = 0; i < L->n; i++) client_start(&L->cl[i], L->B->cfg);
    uv_run(&L->loop, UV_RUN_DEFAULT);
    rv = uv_loop_close(&L->loop);
    if (rv != 0) fprintf(stderr, "lockbench: a loop still had handles: %s\n", uv_strerror(rv));
    return NULL;
}

/* Spread the clients over the loops and initialise each loop (on this
 * thread; each loop is then run only by its own thread). */
static struct aloop *loops_new(struct abench *B, struct cres *res, int nl)
{
    const int n = B->cfg->clients;
    struct aloop *loops = calloc((size_t)nl, sizeof *loops);

    if (loops == NULL) return NULL;
    for (int k = 0; k < nl; k++) {
        struct aloop *L = &loops[k];
        L->B = B;
        L->n = (n - k + nl - 1) / nl;
        L->cl = calloc((size_t)L->n, sizeof *L->cl);
        if (L->cl == NULL) return NULL; /* the process exits on this path */
        uv_loop_init(&L->loop);
        uv_async_init(&L->loop, &L->go, on_go);
        L->go.data = L;
        uv_timer_init(&L->loop, &L->end);
        L->end.data = L;
        for (int j = 0; j < L->n; j++) {
            struct aclient *c = &L->cl[j];
            c->L = L;
            c->r = &res[k + j * nl];
            snprintf(c->name, sizeof c->name, B->cfg->workload == W2 ? "hot" : "w1-%d", c->r->id);
            modes_seed(&c->rng, c->r->id);
        }
    }
    return loops;
}

int run_async(const struct cfg *cfg)
{
    struct abench B;
    struct aloop *loops;
    struct cres *res;
    int64_t cpu0, cpu1;
    int n = cfg->clients, nl = cfg->loops < cfg->clients ? cfg->loops : cfg->clients, rv;

    memset(&B, 0, sizeof B);
    B.cfg = cfg;
    pthread_mutex_init(&B.mu, NULL);
    pthread_cond_init(&B.cv, NULL);
    atomic_init(&B.holder, 0);
    atomic_init(&B.grant_seq, 0);
    (void)modes_init(&B.modes, cfg); /* W6/W7 only; -1 otherwise */
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
            _exit(1); /* its clients' contexts would never be driven */
        }
        loops[k].started = true;
    }

    /* Wait until every client has its session, then start the clock. */
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
    report_driver_cpu(nl > 1 ? "async (several loops)" : "async", cpu1 - cpu0,
                      B.t_end - B.t_start);
    for (int k = 0; k < nl; k++) free(loops[k].cl);
    free(loops);
    cres_free(res, n);
    pthread_cond_destroy(&B.cv);
    pthread_mutex_destroy(&B.mu);
    return rv;
}
