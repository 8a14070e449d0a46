/*
 * client.c -- faultclient: one worker of the fault harness. It loops
 *
 *     lock a random name -> 2..4 guarded operations on the fenced store
 *     (tests/fault/store.c) with the lock's fence -> unlock
 *
 * What it locks. By default only the exclusive hot locks hot0..hotK-1.
 * With --modes it mixes the lock modes (README "Lock modes"): one call in
 * five takes a hot lock, two in five the read/write lock `rw0` (shared two
 * times in three, exclusive otherwise) and two in five a permit of the
 * semaphore `sem0` (limit --sem-limit, 3). The guarded operation depends
 * on how the name is held (store.c has the store's rules):
 *
 *     exclusive       W: a write, refused below any fence seen
 *     shared          S: a read, refused below the highest write's fence
 *     semaphore       P: a write under a permit, refused once N newer
 *                     permit holders are writing; D (done) when the hold
 *                     ends, before unlock
 *
 * With --multi, one call in six is an atomic
 * multi-lock (baton_async_lock_many): 2 or 3 distinct names, in a random
 * order, among the exclusive names the other calls take one by one (the
 * hot locks and rw0), all exclusive, so that multi-locks cross each other,
 * single exclusive holders and rw0's readers. A hold is a record of the
 * names it holds (struct hold): one, or a multi-lock's. It is one handle,
 * known by its first name: one GRANT (logged once per name, with the one
 * fence), the guarded operations on every name, one lost notice (which
 * names the first name and stops the use of all), one unlock of the first
 * name that releases all (REL logged per name: the holder stops using each;
 * RELD once, for the first name, as the library answers it).
 *
 * The writes of a hold are 5-25 ms apart. With --long-holds (the clients
 * that go through the client proxy, which the client partitions strike),
 * one hold in twenty is a long one, 100-600 ms between writes (0.1-1.8 s in
 * all): a cut then often strikes while the lock is held, and the holder
 * must learn of a loss in the middle of its work.
 *
 * with libbaton's async API on a libuv loop, and logs every event with a
 * CLOCK_MONOTONIC timestamp (flog.h) for the checker (check.c):
 *
 *     T SESS SESSION              a session is open (first or fresh one)
 *     T SESSFAIL STATUS           opening a session failed
 *     T ACQ A LOCK WAIT_MS MODE LIMIT  attempt A: lock call made (before it is
 *                                 sent); MODE x (exclusive) or s (shared),
 *                                 LIMIT the semaphore's N (0: a lock); a
 *                                 multi-lock: one line per name, first name
 *                                 first, all with attempt number A
 *     T QUEUED A LOCK POS         the cluster committed A's ACQUIRE and queued it
 *                                 (a multi-lock: its first name, in every queue)
 *     T GRANT A LOCK FENCE SESSION   the lock callback: granted (a multi-lock:
 *                                 one line per name, one fence)
 *     T AFAIL A LOCK STATUS       the lock callback (or the call) failed
 *                                 (a multi-lock: one line per name)
 *     T WRITE LOCK FENCE K        guarded operation K of this hold (W, S or P
 *                                 above), about to be sent
 *     T WOK LOCK FENCE K          the store accepted it
 *     T WREJ LOCK FENCE K MAX     the store rejected it: MAX is the fence that
 *                                 shut it out
 *     T WERR LOCK FENCE K         no answer from the store (harness problem)
 *     T REL LOCK FENCE            unlock called (the holder stops writing here)
 *     T RELD LOCK FENCE STATUS    unlock's outcome (0, BATON_ELOST, ...); a
 *                                 multi-lock's names the first name
 *     T LOST LOCK FENCE WHY       the lost callback (a multi-lock's: the first
 *                                 name, once for all)
 *     T CLOSED STATUS             the session was closed at the end
 *     T END                       the client exits
 *     T NOTE ...                  anything else (the shims it runs with,
 *                                 its clock's measured rate); not checked
 * STATUS values are BATON_E* numbers.
 *
 *   faultclient --endpoints E --store PORT --name N --log FILE
 *               [--locks K] [--ttl MS] [--seed S] [--cacert FILE] [--token T]
 *               [--expect-clock-ppm N] [--expect-proxy-ports N] [--long-holds]
 *               [--modes] [--sem-limit N] [--multi]
 *
 * --expect-clock-ppm and --expect-proxy-ports say which shims the harness preloaded (run.c,
 * client_profiles): a clock N ppm fast or slow (shim_clock.so) and a map
 * of N node ports to the client proxy's (shim_connect.so). The client
 * refuses to run (exit 1) unless the shims are in as said, so a run never
 * passes without the faults it claims; it logs its clock's rate measured
 * against the real one when it ends.
 *
 * SIGTERM: start no new lock call, finish the current one (its hold and
 * unlock), close the session, exit 0. A client that is told its lock is
 * lost stops writing at once and unlocks (BATON_ELOST).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "baton/adapters/libuv.h"
#include "baton/baton_async.h"
#include "tests/fault/flog.h"
#include "tests/fault/shim_check.h"
#include "tests/fault/store_client.h"
#include "tests/lib/rng.h"

enum cstate { C_OPENING, C_IDLE, C_ACQUIRING, C_HOLDING, C_RELEASING, C_CLOSING, C_DONE };

#define HOLD_MAX 4  /* names one hold may take */
#define MULTI_MAX 3 /* names a multi-lock call takes: 2..MULTI_MAX */
#define RW_LOCK "rw0"
#define SEM_LOCK "sem0"

struct app;

/* One name of a hold: how it is asked for and, once granted, its fence. */
struct part {
    struct app *a;
    char lock[32];
    uint8_t mode;            /* BATON_MODE_* */
    uint32_t limit;          /* a semaphore's N; 0: a lock */
    uint64_t fence;
    int lost;                /* the lost callback ran for it */
};

/* What the client holds (or asks for): every name of it is used, told
 * lost and unlocked as one. */
struct hold {
    int n;
    struct part p[HOLD_MAX];
    int writes_left, write_no;
    int slow;                /* a long hold: writes 100-600 ms apart */
};

struct app {
    uv_loop_t *loop;
    baton_opts opts;
    baton_async_t *ac;
    uv_timer_t timer;
    void (*on_timer)(struct app *);
    uv_signal_t sigterm;
    FILE *log;
    const char *name;
    int n_locks;
    int modes;               /* --modes: shared locks and the semaphore too */
    int multi;               /* --multi: atomic multi-locks too */
    uint32_t sem_limit;      /* --sem-limit */
    int store_port;
    int store_fd;
    uint64_t rng;
    int stopping;
    enum cstate state;
    uint64_t attempt;
    uint64_t session;        /* the last session opened (SESS) */
    struct hold h;
    int long_holds;          /* --long-holds */
};

static void next_op(struct app *a);

static uint32_t rnd(struct app *a, uint32_t lo, uint32_t hi)
{
    return lo + (uint32_t)(xorshift64(&a->rng) % (uint64_t)(hi - lo + 1));
}

static void timer_cb(uv_timer_t *t)
{
    struct app *a = t->data;
    void (*f)(struct app *) = a->on_timer;

    a->on_timer = NULL;
    if (f) f(a);
}

static void after(struct app *a, uint64_t ms, void (*f)(struct app *))
{
    a->on_timer = f;
    uv_timer_start(&a->timer, timer_cb, ms, 0);
}

/* ---- one hold: guarded operations, then unlock ------------------------------------- */

/* The store request that a holder of p makes (store.c): a write under an
 * exclusive hold, a read under a shared one, a write under a permit. */
static void store_request(const struct app *a, const struct part *p, int k, char *out,
                          size_t cap)
{
    if (p->limit > 1)
        snprintf(out, cap, "P %s %" PRIu64 " %s %d %u\n", p->lock, p->fence, a->name, k,
                 p->limit);
    else
        snprintf(out, cap, "%c %s %" PRIu64 " %s %d\n",
                 p->mode == BATON_MODE_SHARED ? 'S' : 'W', p->lock, p->fence, a->name, k);
}

static void on_unlocked(baton_async_t *ac, int status, void *data)
{
    struct part *p = data;
    struct app *a = p->a;

    (void)ac;
    flog(a->log, "RELD %s %" PRIu64 " %d", p->lock, p->fence, status);
    a->state = C_IDLE;
    next_op(a);
}

/* The holder stops using every name of its hold, tells the store that its
 * permits are done with, and unlocks the hold: one unlock of its first
 * name, which releases a multi-lock's every name. */
static void release(struct app *a)
{
    struct part *p = &a->h.p[0];
    char req[128], ans[64];
    int rv;

    a->state = C_RELEASING;
    for (int i = 0; i < a->h.n; i++) {
        struct part *q = &a->h.p[i];
        if (q->limit > 1) {
            snprintf(req, sizeof req, "D %s %" PRIu64 " %s\n", q->lock, q->fence, a->name);
            /* the store logs it; nothing to learn */
            store_call(a->store_port, &a->store_fd, req, ans, sizeof ans);
        }
    }
    for (int i = 0; i < a->h.n; i++) flog(a->log, "REL %s %" PRIu64, a->h.p[i].lock, p->fence);
    rv = baton_async_unlock(a->ac, p->lock, p->fence, on_unlocked, p);
    if (rv < 0) { /* BATON_ELOST at once: the lost callback had run */
        flog(a->log, "RELD %s %" PRIu64 " %d", p->lock, p->fence, rv);
        a->state = C_IDLE;
        next_op(a);
    }
}

/* One guarded operation on the store under part p, logged. */
static void guarded_op(struct app *a, const struct part *p)
{
    char req[128], ans[64];
    unsigned long long max;

    store_request(a, p, a->h.write_no, req, sizeof req);
    flog(a->log, "WRITE %s %" PRIu64 " %d", p->lock, p->fence, a->h.write_no);
    if (store_call(a->store_port, &a->store_fd, req, ans, sizeof ans) != 0)
        flog(a->log, "WERR %s %" PRIu64 " %d", p->lock, p->fence, a->h.write_no);
    else if (ans[0] == 'A')
        flog(a->log, "WOK %s %" PRIu64 " %d", p->lock, p->fence, a->h.write_no);
    else if (sscanf(ans, "R %llu", &max) == 1)
        flog(a->log, "WREJ %s %" PRIu64 " %d %llu", p->lock, p->fence, a->h.write_no, max);
    else
        flog(a->log, "WERR %s %" PRIu64 " %d", p->lock, p->fence, a->h.write_no);
}

static void write_once(struct app *a)
{
    for (int i = 0; i < a->h.n; i++)
        if (a->h.p[i].lost) { /* told: stop using the resource, all of it */
            release(a);
            return;
        }
    a->h.write_no++;
    for (int i = 0; i < a->h.n; i++) guarded_op(a, &a->h.p[i]);
    if (--a->h.writes_left > 0)
        after(a, a->h.slow ? rnd(a, 100, 600) : rnd(a, 5, 25), write_once);
    else
        release(a);
}

/* ---- lock calls ---------------------------------------------------------------- */

/* After a failed lock call: back off a little when the cluster is
 * unreachable, then the next call. */
static void lock_failed(struct app *a, int status)
{
    for (int i = 0; i < a->h.n; i++)
        flog(a->log, "AFAIL %" PRIu64 " %s %d", a->attempt, a->h.p[i].lock, status);
    a->state = C_IDLE;
    after(a, status == BATON_EUNAVAIL || status == BATON_ESESSION ? rnd(a, 50, 200)
                                                                    : rnd(a, 0, 20),
          next_op);
}

/* The lock callback: for a multi-lock, `name` is its first name and the
 * grant (or the failure) covers every name of the hold. */
static void on_locked(baton_async_t *ac, int status, const char *name, uint64_t fence, void *data)
{
    struct app *a = data;
    /* A grant and the session's end can arrive together: the context has
     * forgotten the session (id 0) when this callback runs, and the lost
     * callback follows. The grant is the last session's. */
    uint64_t session = baton_async_session_id(ac) ? baton_async_session_id(ac) : a->session;

    (void)name;
    if (status != 0) {
        lock_failed(a, status);
        return;
    }
    for (int i = 0; i < a->h.n; i++) {
        struct part *p = &a->h.p[i];
        p->fence = fence;
        p->lost = 0;
        flog(a->log, "GRANT %" PRIu64 " %s %" PRIu64 " %" PRIu64, a->attempt, p->lock, fence,
             session);
    }
    a->state = C_HOLDING;
    a->h.write_no = 0;
    a->h.writes_left = (int)rnd(a, 2, 4);
    a->h.slow = a->long_holds && rnd(a, 1, 20) == 1;
    write_once(a);
}

static void on_queued(baton_async_t *ac, const char *lock, uint32_t position, void *call_data,
                      void *data)
{
    struct app *a = data;

    (void)ac;
    (void)call_data;
    flog(a->log, "QUEUED %" PRIu64 " %s %u", a->attempt, lock, position);
}

static void on_lost(baton_async_t *ac, const char *lock, uint64_t fence, int why, void *data)
{
    struct app *a = data;

    (void)ac;
    flog(a->log, "LOST %s %" PRIu64 " %d", lock, fence, why);
    if (a->state != C_HOLDING) return;
    /* A multi-lock is told once, by its first name: the hold is lost. */
    for (int i = 0; i < a->h.n; i++)
        if (a->h.p[i].fence == fence && strcmp(a->h.p[i].lock, lock) == 0)
            for (int j = 0; j < a->h.n; j++) a->h.p[j].lost = 1;
}

/* The name the next hold takes, and how (see the top of this file). */
static void pick(struct app *a, struct part *p)
{
    uint32_t r = a->modes ? rnd(a, 1, 5) : 1;

    memset(p, 0, sizeof *p);
    p->a = a;
    p->mode = BATON_MODE_EXCLUSIVE;
    if (r == 1) {
        snprintf(p->lock, sizeof p->lock, "hot%u", rnd(a, 0, (uint32_t)a->n_locks - 1));
    } else if (r <= 3) {
        snprintf(p->lock, sizeof p->lock, RW_LOCK);
        if (rnd(a, 1, 3) <= 2) p->mode = BATON_MODE_SHARED;
    } else {
        snprintf(p->lock, sizeof p->lock, SEM_LOCK);
        p->limit = a->sem_limit;
    }
}

/* A multi-lock's names: 2..MULTI_MAX of the hot locks and rw0, distinct,
 * in a random order (the first is the handle's name), all exclusive. */
static void pick_multi(struct app *a)
{
    int pool[8], n = 0; /* hot<i>, or -1 for rw0 */

    for (int i = 0; i < a->n_locks && n < 7; i++) pool[n++] = i;
    pool[n++] = -1;
    for (int i = n - 1; i > 0; i--) { /* shuffle */
        int j = (int)rnd(a, 0, (uint32_t)i), t = pool[i];
        pool[i] = pool[j];
        pool[j] = t;
    }
    a->h.n = (int)rnd(a, 2, (uint32_t)(n < MULTI_MAX ? n : MULTI_MAX));
    for (int i = 0; i < a->h.n; i++) {
        struct part *p = &a->h.p[i];
        memset(p, 0, sizeof *p);
        p->a = a;
        p->mode = BATON_MODE_EXCLUSIVE;
        if (pool[i] < 0)
            snprintf(p->lock, sizeof p->lock, RW_LOCK);
        else
            snprintf(p->lock, sizeof p->lock, "hot%d", pool[i]);
    }
}

static void acquire(struct app *a)
{
    int64_t wait_ms = rnd(a, 1, 10) == 1 ? BATON_WAIT_TRY : (int64_t)rnd(a, 500, 5000);
    baton_lock_args args = {.wait_ms = wait_ms};
    const char *names[HOLD_MAX];
    int rv;

    a->attempt++;
    if (a->multi && rnd(a, 1, 6) == 1) {
        pick_multi(a);
    } else {
        a->h.n = 1;
        pick(a, &a->h.p[0]);
    }
    args.mode = a->h.p[0].mode;
    args.limit = a->h.p[0].limit;
    a->state = C_ACQUIRING;
    for (int i = 0; i < a->h.n; i++) {
        const struct part *p = &a->h.p[i];
        names[i] = p->lock;
        flog(a->log, "ACQ %" PRIu64 " %s %" PRId64 " %c %u", a->attempt, p->lock, wait_ms,
             p->mode == BATON_MODE_SHARED ? 's' : 'x', p->limit);
    }
    if (a->h.n > 1)
        rv = baton_async_lock_many(a->ac, names, (size_t)a->h.n, &args, on_locked, a);
    else
        rv = baton_async_lock_with(a->ac, names[0], &args, on_locked, a);
    if (rv < 0) {
        for (int i = 0; i < a->h.n; i++)
            flog(a->log, "AFAIL %" PRIu64 " %s %d", a->attempt, a->h.p[i].lock, rv);
        a->state = C_IDLE;
        after(a, 100, next_op);
    }
}

/* ---- session life ------------------------------------------------------------------ */

static void finish(struct app *a)
{
    a->state = C_DONE;
    uv_timer_stop(&a->timer);
    uv_close((uv_handle_t *)&a->timer, NULL);
    uv_close((uv_handle_t *)&a->sigterm, NULL);
}

static void on_closed(baton_async_t *ac, int status, void *data)
{
    struct app *a = data;

    flog(a->log, "CLOSED %d", status);
    baton_async_free(ac); /* deferred until this callback returns */
    a->ac = NULL;
    finish(a);
}

static void close_session(struct app *a)
{
    a->state = C_CLOSING;
    if (baton_async_close_session(a->ac, on_closed, a) != 0) {
        flog(a->log, "CLOSED %d", -1);
        baton_async_free(a->ac);
        a->ac = NULL;
        finish(a);
    }
}

static void next_op(struct app *a)
{
    if (a->state != C_IDLE) return;
    if (a->stopping) {
        uv_timer_stop(&a->timer);
        close_session(a);
        return;
    }
    if (a->on_timer == NULL) after(a, rnd(a, 0, 20), acquire);
}

static void open_session(struct app *a);

static void on_open(baton_async_t *ac, int status, uint64_t session, void *data)
{
    struct app *a = data;

    if (status != 0) {
        /* A context whose first open failed can only be freed; try anew. */
        flog(a->log, "SESSFAIL %d", status);
        baton_async_free(ac);
        a->ac = NULL;
        if (a->stopping)
            finish(a);
        else
            after(a, 500, open_session);
        return;
    }
    flog(a->log, "SESS %" PRIu64, session);
    a->session = session;
    a->state = C_IDLE;
    next_op(a);
}

static void on_session(baton_async_t *ac, int status, uint64_t session, void *data)
{
    struct app *a = data;

    (void)ac;
    if (status == 0) {
        flog(a->log, "SESS %" PRIu64, session);
        a->session = session;
    } else {
        flog(a->log, "SESSFAIL %d", status);
    }
}

static void open_session(struct app *a)
{
    a->state = C_OPENING;
    if (baton_async_new(&a->opts, &a->ac) != 0 || baton_uv_attach(a->ac, a->loop) != 0) {
        fprintf(stderr, "faultclient: cannot create a context\n");
        exit(1);
    }
    baton_async_on_lost(a->ac, on_lost, a);
    baton_async_on_queued(a->ac, on_queued, a);
    baton_async_on_session(a->ac, on_session, a);
    if (baton_async_open(a->ac, on_open, a) != 0) {
        fprintf(stderr, "faultclient: baton_async_open failed\n");
        exit(1);
    }
}

/* ---- the shims ----------------------------------------------------------------- */

/* The lease clock (CLOCK_BOOTTIME, through any shim) and the real one (the
 * system call), in ns. */
static void clocks_now(int64_t *lease, int64_t *real)
{
    struct timespec ts;

    clock_gettime(CLOCK_BOOTTIME, &ts);
    *lease = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    *real = flog_now_us() * 1000;
}

static void on_sigterm(uv_signal_t *s, int sig)
{
    struct app *a = s->data;

    (void)sig;
    a->stopping = 1;
    if (a->state == C_IDLE) {
        a->on_timer = NULL;
        next_op(a);
    }
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"endpoints", required_argument, NULL, 'e'}, {"store", required_argument, NULL, 's'},
        {"name", required_argument, NULL, 'n'},      {"log", required_argument, NULL, 'l'},
        {"locks", required_argument, NULL, 'k'},     {"ttl", required_argument, NULL, 't'},
        {"seed", required_argument, NULL, 'r'},      {"cacert", required_argument, NULL, 'c'},
        {"token", required_argument, NULL, 'T'},
        {"expect-clock-ppm", required_argument, NULL, 'P'},
        {"expect-proxy-ports", required_argument, NULL, 'X'},
        {"long-holds", no_argument, NULL, 'L'}, {"modes", no_argument, NULL, 'M'},
        {"sem-limit", required_argument, NULL, 'N'}, {"multi", no_argument, NULL, 'U'}, {0},
    };
    struct app a = {.n_locks = 2, .sem_limit = 3, .store_fd = -1, .rng = 88172645463325252ull};
    const char *logpath = NULL;
    unsigned ttl = 3000;
    long want_ppm = 0;
    int o, want_ports = 0;
    int64_t lease0, real0, lease1, real1;

    a.opts.client_name = "faultclient";
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'e': a.opts.endpoints = optarg; break;
        case 's': a.store_port = atoi(optarg); break;
        case 'n': a.name = optarg; break;
        case 'l': logpath = optarg; break;
        case 'k': a.n_locks = atoi(optarg); break;
        case 't': ttl = (unsigned)atoi(optarg); break;
        case 'r': a.rng ^= strtoull(optarg, NULL, 10) * 0x9E3779B97F4A7C15ull; break;
        case 'c': a.opts.tls_ca_file = optarg; break;
        case 'T': a.opts.token = optarg; break;
        case 'P': want_ppm = strtol(optarg, NULL, 10); break;
        case 'X': want_ports = atoi(optarg); break;
        case 'L': a.long_holds = 1; break;
        case 'M': a.modes = 1; break;
        case 'N': a.sem_limit = (uint32_t)atoi(optarg); break;
        case 'U': a.multi = 1; break;
        default: goto usage;
        }
    }
    if (a.opts.endpoints == NULL || a.store_port <= 0 || a.name == NULL || logpath == NULL ||
        a.n_locks < 1 || a.n_locks > 1000 || a.sem_limit < 2 || a.sem_limit > BATON_MAX_LIMIT ||
        optind != argc)
        goto usage;
    if (a.rng == 0) a.rng = 1;
    a.opts.session_ttl_ms = ttl;
    a.log = fopen(logpath, "w");
    if (a.log == NULL) {
        fprintf(stderr, "faultclient: %s: %s\n", logpath, strerror(errno));
        return 1;
    }
    if (shims_check(a.log, "faultclient", want_ppm, want_ports) != 0) return 1;
    clocks_now(&lease0, &real0);
    signal(SIGPIPE, SIG_IGN);
    a.loop = uv_default_loop();
    uv_timer_init(a.loop, &a.timer);
    a.timer.data = &a;
    uv_signal_init(a.loop, &a.sigterm);
    a.sigterm.data = &a;
    uv_signal_start(&a.sigterm, on_sigterm, SIGTERM);
    open_session(&a);
    uv_run(a.loop, UV_RUN_DEFAULT);
    clocks_now(&lease1, &real1);
    if (real1 > real0)
        flog(a.log, "NOTE lease clock ran %+.0f ppm against the real one over %.1f s",
             ((double)(lease1 - lease0) / (double)(real1 - real0) - 1) * 1e6,
             (double)(real1 - real0) / 1e9);
    flog(a.log, "END");
    if (a.store_fd >= 0) close(a.store_fd);
    fclose(a.log);
    return uv_loop_close(a.loop) == 0 ? 0 : 1;

usage:
    fprintf(stderr, "usage: faultclient --endpoints E --store PORT --name N --log FILE "
                    "[--locks K] [--ttl MS] [--seed S] [--cacert FILE] [--token T] "
                    "[--expect-clock-ppm N] [--expect-proxy-ports N] [--long-holds] "
                    "[--modes] [--sem-limit N] [--multi]\n");
    return 2;
}
