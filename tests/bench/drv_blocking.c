/*
 * drv_blocking.c -- the blocking driver of W1/W2/W3/W6/W7 (lockbench --driver
 * blocking): every client is a thread with its own baton_t (include/baton/baton.h),
 * so its own session, connection and libbaton I/O thread. Latencies are
 * measured around the blocking calls.
 *
 * This is how an application with a thread per worker uses baton. Each
 * client costs two threads and every call two context switches, so on a
 * small machine the driver itself can take a large share of the CPU the
 * servers need; drv_async.c drives the same loops from one thread.
 *
 * Acquires use baton_lock_timeout(time left in the run) so that the run
 * ends on time; such a wait ending with the run is not an error. After
 * ESESSION or ECLOSED the client opens a new session; after any other error
 * it pauses 10 ms and goes on.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "baton/baton.h"
#include "tests/bench/bench.h"

struct bench;

struct client {
    struct bench *bench;
    struct cres *r;
    pthread_t th;
    bool started;
    baton_t *b;
    char name[32]; /* the lock this client takes */
};

struct bench {
    const struct cfg *cfg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n_ready, n_done;
    bool go;
    int64_t t_start, t_end;
    atomic_int holder; /* W2: client id + 1 of the holder, 0 if none */
    atomic_uint_fast64_t grant_seq;
    struct modes modes; /* W6/W7 */
};

/* Open a blocking session for client `id` (see bench.h). */
int bench_open_session(const struct cfg *cfg, int id, unsigned timeout_ms, struct baton **out)
{
    char name[48];
    baton_opts o;

    snprintf(name, sizeof name, "lockbench-%d", id);
    bench_opts(cfg, &o);
    o.client_name = name;
    o.connect_timeout_ms = timeout_ms ? timeout_ms : 1;
    return baton_connect(&o, out);
}

static void client_fail(struct client *c, const char *what, int rv)
{
    c->r->errors++;
    log_err(c->r->id, what, rv, c->b ? baton_errmsg(c->b) : baton_connect_errmsg());
}

/* Close the session and open a new one, until the run ends. 0 or -1. */
static int reconnect(struct client *c)
{
    const struct bench *B = c->bench;
    int64_t now;
    int rv;

    baton_close(c->b);
    c->b = NULL;
    while ((now = now_ns()) < B->t_end) {
        int64_t left_ms = (B->t_end - now) / NS_PER_MS + 1;
        unsigned ms = B->cfg->connect_timeout_ms;
        if ((int64_t)ms > left_ms) ms = (unsigned)left_ms;
        rv = bench_open_session(B->cfg, c->r->id, ms, &c->b);
        if (rv == 0) return 0;
        client_fail(c, "reconnect", rv);
        sleep_ns_until(RECONNECT_PAUSE_NS, B->t_end);
    }
    return -1;
}

/* After a failed call: a lost session is replaced, anything else paused on. */
static void recover(struct client *c, int rv)
{
    if (rv == BATON_ESESSION || rv == BATON_ECLOSED)
        (void)reconnect(c);
    else if (rv != BATON_ENOTHELD)
        sleep_ns_until(ERROR_PAUSE_NS, c->bench->t_end);
}

/* W1 and W3: lock and unlock this client's own lock until the run ends.
 * The lock is free, so the wait is bounded only as a safety net: after a
 * reconnect, the old session may still hold the lock in the cluster (if its
 * close did not get through), and a plain baton_lock would wait forever. */
static void run_w1(struct client *c)
{
    const struct bench *B = c->bench;
    baton_lock_t *l;
    uint64_t fence;
    int64_t t0, t1, t2, left_ms;
    int rv;

    while ((t0 = now_ns()) < B->t_end) {
        if (c->b == NULL && reconnect(c) != 0) break;
        t0 = now_ns();
        left_ms = (B->t_end - t0 + NS_PER_MS - 1) / NS_PER_MS;
        if (left_ms <= 0) break;
        if (B->cfg->names > 1) { /* --names K: the client's K names at once */
            baton_lock_args a = {.wait_ms = left_ms};
            char buf[W1_MAX_NAMES][48];
            const char *names[W1_MAX_NAMES];
            w1_names(c->name, B->cfg->names, buf, names);
            rv = baton_lock_many(c->b, names, (size_t)B->cfg->names, &a, &l);
        } else {
            rv = baton_lock_timeout(c->b, c->name, left_ms, &l);
        }
        t1 = now_ns();
        if (rv == BATON_ETIMEDOUT && t1 >= B->t_end - RUN_OVER_SLACK_NS) break; /* run over */
        if (rv != 0) {
            client_fail(c, "lock", rv);
            recover(c, rv);
            continue;
        }
        hist_record(&c->r->acq, (uint64_t)(t1 - t0));
        fence = baton_lock_fence(l);
        cres_check_fence(c->r, fence);
        rv = baton_unlock(l);
        t2 = now_ns();
        if (rv != 0) {
            client_fail(c, "unlock", rv);
            recover(c, rv);
            continue;
        }
        hist_record(&c->r->rel, (uint64_t)(t2 - t1));
        recs_add(&c->r->recs, (uint64_t)(t2 - B->t_start), fence);
        if (t2 <= B->t_end) c->r->ops++;
    }
}

/* Release l (W2/W6-W8, after the hold): the release's latency, or the
 * error and its recovery. */
static void unlock_timed(struct client *c, baton_lock_t *l)
{
    int64_t t2 = now_ns();
    int rv = baton_unlock(l);

    if (rv != 0) {
        client_fail(c, "unlock", rv);
        recover(c, rv);
        return;
    }
    hist_record(&c->r->rel, (uint64_t)(now_ns() - t2));
}

/* W2: everybody takes "hot", holds it hold_ms, releases, until the run ends. */
static void run_w2(struct client *c)
{
    struct bench *B = c->bench;
    baton_lock_t *l;
    uint64_t fence, seq;
    int64_t t0, t1, left_ms;
    int rv, prev, me = c->r->id + 1;

    while ((t0 = now_ns()) < B->t_end) {
        if (c->b == NULL && reconnect(c) != 0) break;
        t0 = now_ns();
        left_ms = (B->t_end - t0 + NS_PER_MS - 1) / NS_PER_MS;
        if (left_ms <= 0) break;
        rv = baton_lock_timeout(c->b, "hot", left_ms, &l);
        t1 = now_ns();
        if (rv == BATON_ETIMEDOUT && t1 >= B->t_end - RUN_OVER_SLACK_NS) break; /* run over */
        if (rv != 0) {
            client_fail(c, "lock", rv);
            recover(c, rv);
            continue;
        }
        prev = atomic_exchange(&B->holder, me);
        if (prev != 0) {
            c->r->violations++;
            note("client %d granted \"hot\" while client %d holds it", c->r->id, prev - 1);
        }
        seq = atomic_fetch_add(&B->grant_seq, 1);
        fence = baton_lock_fence(l);
        recs_add(&c->r->recs, seq, fence);
        cres_check_fence(c->r, fence);
        hist_record(&c->r->acq, (uint64_t)(t1 - t0));
        if (t1 <= B->t_end) c->r->ops++;
        if (B->cfg->hold_ms > 0) sleep_ns(B->cfg->hold_ms * NS_PER_MS);
        atomic_compare_exchange_strong(&B->holder, &me, 0);
        me = c->r->id + 1; /* the exchange may have overwritten it */
        unlock_timed(c, l);
    }
}

/* W6/W7: ask for the picked names, in the picked mode, waiting at most
 * left_ms; baton_lock_with's result. */
static int lock_modes(struct client *c, const struct mreq *q, int64_t left_ms, baton_lock_t **l)
{
    baton_lock_args a = {.wait_ms = left_ms, .mode = q->mode, .limit = q->limit};
    const char *names[MREQ_MAX];

    for (int k = 0; k < q->n; k++) names[k] = c->bench->modes.names[q->idx[k]];
    return baton_lock_many(c->b, names, (size_t)q->n, &a, l); /* W8: several at once */
}

/* W6/W7: pick a request (modes.c), acquire, count the holders in, hold
 * hold_ms, count them out, release; until the run ends. */
static void run_modes(struct client *c)
{
    struct bench *B = c->bench;
    struct mreq q;
    baton_lock_t *l;
    uint64_t fence, rng;
    int64_t t0, t1, left_ms;
    int rv;

    modes_seed(&rng, c->r->id);
    while ((t0 = now_ns()) < B->t_end) {
        if (c->b == NULL && reconnect(c) != 0) break;
        t0 = now_ns();
        left_ms = (B->t_end - t0 + NS_PER_MS - 1) / NS_PER_MS;
        if (left_ms <= 0) break;
        modes_pick(&B->modes, &rng, &q);
        rv = lock_modes(c, &q, left_ms, &l);
        t1 = now_ns();
        if (rv == BATON_ETIMEDOUT && t1 >= B->t_end - RUN_OVER_SLACK_NS) break; /* run over */
        if (rv != 0) {
            client_fail(c, "lock", rv);
            recover(c, rv);
            continue;
        }
        c->r->violations += modes_enter(&B->modes, &q, c->r->id);
        fence = baton_lock_fence(l);
        recs_add(&c->r->recs, atomic_fetch_add(&B->grant_seq, 1), fence);
        cres_check_fence(c->r, fence);
        hist_record(&c->r->acq, (uint64_t)(t1 - t0));
        if (t1 <= B->t_end) {
            c->r->ops++;
            c->r->shared_ops += q.mode == BATON_MODE_SHARED;
        }
        if (B->cfg->hold_ms > 0) sleep_ns(B->cfg->hold_ms * NS_PER_MS);
        modes_leave(&B->modes, &q);
        unlock_timed(c, l);
    }
}

static void *client_main(void *arg)
{
    struct client *c = arg;
    struct bench *B = c->bench;
    int rv;

    rv = bench_open_session(B->cfg, c->r->id, B->cfg->connect_timeout_ms, &c->b);
    if (rv != 0) {
        c->b = NULL;
        client_fail(c, "connect", rv);
    } else {
        c->r->connected = true;
    }
    pthread_mutex_lock(&B->mu);
    B->n_ready++;
    pthread_cond_broadcast(&B->cv);
    while (!B->go) pthread_cond_wait(&B->cv, &B->mu);
    pthread_mutex_unlock(&B->mu);

    if (c->r->connected) {
        if (B->cfg->workload == W2)
            run_w2(c);
        else if (MODES_WORKLOAD(B->cfg->workload))
            run_modes(c);
        else
            run_w1(c);
    }
    baton_close(c->b);
    c->b = NULL;

    pthread_mutex_lock(&B->mu);
    B->n_done++;
    pthread_cond_broadcast(&B->cv);
    pthread_mutex_unlock(&B->mu);
    return NULL;
}

int run_blocking(const struct cfg *cfg)
{
    struct bench B;
    struct client *cl;
    struct cres *res;
    int64_t cpu0, cpu1;
    int n = cfg->clients, rv;

    memset(&B, 0, sizeof B);
    B.cfg = cfg;
    pthread_mutex_init(&B.mu, NULL);
    pthread_cond_init(&B.cv, NULL);
    atomic_init(&B.holder, 0);
    atomic_init(&B.grant_seq, 0);
    (void)modes_init(&B.modes, cfg); /* W6/W7 only; -1 otherwise */

    cl = calloc((size_t)n, sizeof *cl);
    res = cres_new(n);
    if (cl == NULL || res == NULL) {
        fprintf(stderr, "lockbench: out of memory\n");
        return 1;
    }
    /* Connects take at most connect_timeout_ms each, calls op_timeout_ms. */
    start_watchdog(now_ns() + (int64_t)(cfg->seconds * NS_PER_S) +
                   4 * (int64_t)(cfg->connect_timeout_ms + cfg->op_timeout_ms) * NS_PER_MS +
                   30 * NS_PER_S);

    for (int i = 0; i < n; i++) {
        struct client *c = &cl[i];
        c->bench = &B;
        c->r = &res[i];
        snprintf(c->name, sizeof c->name, "w1-%d", i);
        if (pthread_create(&c->th, NULL, client_main, c) != 0) {
            fprintf(stderr, "lockbench: cannot start client thread %d\n", i);
            pthread_mutex_lock(&B.mu);
            B.n_ready++; /* never runs: counts as ready and done */
            B.n_done++;
            pthread_mutex_unlock(&B.mu);
            c->r->errors++;
            continue;
        }
        c->started = true;
    }

    /* Wait until every client has its session, then start the clock. */
    pthread_mutex_lock(&B.mu);
    while (B.n_ready < n) pthread_cond_wait(&B.cv, &B.mu);
    B.t_start = now_ns();
    B.t_end = B.t_start + (int64_t)(cfg->seconds * NS_PER_S);
    B.go = true;
    cpu0 = self_cpu_ns();
    pthread_cond_broadcast(&B.cv);
    pthread_mutex_unlock(&B.mu);

    sleep_ns(B.t_end - B.t_start);
    cpu1 = self_cpu_ns();
    pthread_mutex_lock(&B.mu);
    while (B.n_done < n) pthread_cond_wait(&B.cv, &B.mu);
    pthread_mutex_unlock(&B.mu);
    for (int i = 0; i < n; i++)
        if (cl[i].started) pthread_join(cl[i].th, NULL);

    rv = report_clients(cfg, res, n, B.t_start, B.t_end, atomic_load(&B.grant_seq),
                        MODES_WORKLOAD(cfg->workload) ? &B.modes : NULL);
    report_driver_cpu("blocking", cpu1 - cpu0, B.t_end - B.t_start);
    cres_free(res, n);
    free(cl);
    pthread_cond_destroy(&B.cv);
    pthread_mutex_destroy(&B.mu);
    return rv;
}
