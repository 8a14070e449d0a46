/*
 * drv_async.c -- the async driver of W1/W2/W3 (lockbench --driver async, the
 * default): every client is a small callback state machine with its own
 * baton_async_t (include/baton/baton_async.h) -- its own session, connection and
 * keepalives, as docs/performance.md describes -- and the clients are spread over
 * --loops libuv loops, one thread each (client i on loop i mod loops; the
 * loops, the start and end of the run and the per-grant bookkeeping are
 * loops.c's, which drv_redis.c shares).
 *
 * Why: with the blocking driver every client is two threads and every call
 * two context switches; on a 2-core machine lockbench then takes much of
 * the CPU the servers need and caps what it measures. Here a loop turn
 * handles every reply that arrived and sends every next request at once.
 *
 * A client's life:
 *
 *   OPENING --open cb--> IDLE --go--> LOCKING --granted--> (W2: HOLDING)
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton/adapters/libuv.h"
#include "baton/baton_async.h"
#include "tests/bench/loops.h"

enum cstate { C_OPENING, C_IDLE, C_LOCKING, C_HOLDING, C_UNLOCKING, C_PAUSED, C_CLOSING, C_DONE };

struct aclient {
    struct run_loop *L;
    struct cres *r;
    baton_async_t *ac; /* NULL once freed */
    uv_timer_t timer;  /* W2/W6/W7/W8's hold and the pause after an error */
    enum cstate state;
    char name[32];     /* the lock this client takes (W6-W8: this cycle's first) */
    struct mreq req;   /* W6-W8: this cycle's request */
    uint64_t rng;      /* W6-W8: the stream its picks come from */
    uint64_t fence;    /* of the grant being held */
    int64_t t0, t1;    /* when the lock call / the unlock call was made */
};

static void next_op(struct aclient *c);

static void fail(struct aclient *c, const char *what, int rv)
{
    c->r->errors++;
    log_err(c->r->id, what, rv, c->ac ? baton_async_errmsg(c->ac) : NULL);
}

/* Free the client's context (deferred if inside one of its callbacks) and
 * its timer. */
static void client_free(struct aclient *c)
{
    baton_async_free(c->ac);
    c->ac = NULL;
    uv_close((uv_handle_t *)&c->timer, NULL);
    c->state = C_DONE;
    loop_client_done(c->L);
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

    (void)ac;
    if (status != 0) {
        fail(c, "unlock", status);
        recover(c, status, false);
        return;
    }
    loop_released(c->L, c->r, c->t1, now_ns(), c->fence);
    next_op(c);
}

/* Release the held lock (W2: clear the holder flag first; W6-W8: count
 * this holder out first). */
static void release(struct aclient *c)
{
    int rv;

    loop_releasing(c->L, c->r);
    if (MODES_WORKLOAD(c->L->B->cfg->workload)) modes_leave(&c->L->B->modes, &c->req);
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

/* W6-W8's bookkeeping of a grant: the holders' check, the grant's place
 * in the sequence, and the counts if it came within the run. */
static void modes_granted(struct aclient *c, int64_t t1)
{
    struct run_bench *B = c->L->B;

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
    loop_granted(c->L, c->r, c->t0, t1, fence);
    if (MODES_WORKLOAD(cfg->workload)) modes_granted(c, t1);
    if ((cfg->workload == W2 || MODES_WORKLOAD(cfg->workload)) && cfg->hold_ms > 0) {
        c->state = C_HOLDING;
        uv_timer_start(&c->timer, on_hold_over, (uint64_t)cfg->hold_ms, 0);
        return;
    }
    release(c);
}

/* W6-W8: pick this cycle's request and ask for it, waiting at most
 * left_ms (W8: one atomic multi-lock; its handle is its first name). */
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
    const struct cfg *cfg = c->L->B->cfg;
    int64_t left_ms = loop_ms_left(c->L);
    int rv;

    if (left_ms == 0) {
        finish_client(c);
        return;
    }
    c->state = C_LOCKING;
    c->t0 = now_ns();
    if (MODES_WORKLOAD(cfg->workload))
        rv = lock_modes(c, left_ms);
    else if (cfg->names > 1)
        rv = lock_own_names(c, left_ms);
    else
        rv = baton_async_lock(c->ac, c->name, left_ms, on_locked, c);
    if (rv < 0) {
        fail(c, "lock", rv);
        recover(c, rv, true);
    }
}

/* The run is over: a client waiting for a lock or pausing closes now; the
 * others close when their current call completes (next_op). */
static void client_end(void *p)
{
    struct aclient *c = p;

    if (c->state == C_LOCKING || c->state == C_PAUSED || c->state == C_IDLE) finish_client(c);
}

static void client_go(void *p)
{
    struct aclient *c = p;

    if (c->state == C_IDLE) next_op(c);
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
    loop_settled(c->L);
}

/* Create the client's context on its loop and start opening its session. */
static void client_start(void *p)
{
    struct aclient *c = p;
    int rv;

    uv_timer_init(&c->L->loop, &c->timer);
    c->timer.data = c;
    c->state = C_OPENING;
    rv = bench_async_open(c->L->B->cfg, "lockbench-", c->r->id, &c->L->loop, on_open, c, &c->ac);
    if (rv != 0) {
        c->r->errors++;
        client_free(c);
        loop_settled(c->L);
    }
}

static void client_init(void *p, struct run_loop *L, struct cres *r)
{
    struct aclient *c = p;

    c->L = L;
    c->r = r;
    snprintf(c->name, sizeof c->name, L->B->cfg->workload == W2 ? "hot" : "w1-%d", r->id);
    modes_seed(&c->rng, r->id);
}

int run_async(const struct cfg *cfg)
{
    static const struct loop_driver drv = {
        .name = "async",
        .client_size = sizeof(struct aclient),
        .init = client_init,
        .start = client_start,
        .go = client_go,
        .end = client_end,
    };

    return run_loops(cfg, &drv);
}
