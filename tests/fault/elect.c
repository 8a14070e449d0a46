/*
 * elect.c -- faultelect: an election worker of the fault harness, beside
 * the lock workers (client.c), on libbaton's async API (baton_async.h,
 * "Elections"). Two roles:
 *
 *   campaign   loops: campaign for one of the elections elect0..electK-1
 *              with a value naming this worker and a counter ("e1:17"),
 *              wait 0.5-5 s to lead; leading, make guarded writes on the
 *              fenced store (store.c, W under the leader's fence) 20-100 ms
 *              apart for 0.2-2 s, proclaiming a new value (the counter
 *              raised) one step in three; resign; campaign again. Told its
 *              leadership is lost, it stops writing at once and resigns
 *              (BATON_ELOST).
 *   observe    observes every election (baton_async_observe), logging
 *              every event; ends each watch after 2-8 s and observes
 *              again; and reads the leader of a random election
 *              (baton_async_leader, linearizable) every 50-300 ms.
 *
 * Log lines (flog.h: CLOCK_MONOTONIC in microseconds first), for the
 * checker (check_elect.c); the file is opened for appending, so that the
 * incarnations of a worker killed and restarted by the nemesis follow one
 * another, each starting with START:
 *
 *     T START ROLE NAME PID          the worker started (an incarnation)
 *     T SESS SESSION / SESSFAIL ST   a session opened / could not be
 *     T CAMPAIGN A ELECTION WAIT_MS VALUE   campaign A called (before it is sent)
 *     T QUEUED A ELECTION POS        the cluster queued campaign A
 *     T LEAD A ELECTION FENCE SESSION VALUE  campaign A won: this worker leads
 *     T CFAIL A ELECTION STATUS      campaign A ended without leading (a NOTE
 *                                    with baton_async_errmsg follows unless it
 *                                    timed out)
 *     T WRITE/WOK/WREJ/WERR ELECTION FENCE K [MAX]   a guarded write, as client.c
 *     T PROCLAIM ELECTION FENCE VALUE      proclaim called
 *     T PROCLAIMED ELECTION FENCE VALUE ST proclaim's outcome
 *     T RESIGN ELECTION FENCE        resign called: the leader stops here
 *     T RESIGNED ELECTION FENCE ST   resign's outcome (0, BATON_ELOST, ...)
 *     T LOST ELECTION FENCE WHY      the lost callback: leadership lost
 *     T OBSERVE W ELECTION           watch W started (observe called)
 *     T EV W ELECTION KIND REV RESTARTED SESSION FENCE VALUE
 *                                    an event of watch W: KIND CHANGE, STATE,
 *                                    GAP or SYNCED; the leader (holders[0])
 *                                    or session 0, fence 0, value "-"
 *     T OBSEND W ELECTION STATUS     watch W ended (its end call)
 *     T READ R ELECTION              leader read R called
 *     T READR R ELECTION ST SESSION FENCE VALUE REV   its outcome (ST
 *                                    BATON_ENOTFOUND: nobody leads)
 *     T CLOSED ST / END / NOTE ...   as client.c
 *
 *   faultelect --role campaign|observe --endpoints E --store PORT --name N
 *              --log FILE [--elections K] [--ttl MS] [--seed S]
 *              [--cacert FILE] [--token T] [--expect-clock-ppm N]
 *              [--expect-proxy-ports N]
 *
 * --expect-clock-ppm and --expect-proxy-ports say which shims the harness
 * preloaded, as for client.c (shim_check.h): the worker refuses to run
 * without them.
 *
 * SIGTERM: a campaigner finishes its leadership (resigns) or its campaign,
 * an observer ends its watches and reads; then the session is closed and
 * the worker exits 0.
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

#define ELECT_MAX 8
#define VALUE_MAX 48

enum estate { E_OPENING, E_IDLE, E_CAMPAIGNING, E_LEADING, E_RESIGNING, E_CLOSING, E_DONE };

struct app;

/* One observed election: its watch, restarted now and then. */
struct obs {
    struct app *a;
    char election[24]; /* "elect" and an int */
    baton_async_watch_t *w; /* NULL: no watch running */
    uint64_t id;            /* the watch's number in the log */
    uv_timer_t timer;       /* ends the watch, or starts the next */
};

struct app {
    uv_loop_t *loop;
    baton_opts opts;
    baton_async_t *ac;
    FILE *log;
    const char *name;
    int observer;            /* --role observe */
    int n_elections;
    int store_port, store_fd;
    uint64_t rng;
    int stopping;
    enum estate state;
    uint64_t session;
    uv_timer_t timer;        /* the campaigner's steps; the observer's reads */
    void (*on_timer)(struct app *);
    uv_signal_t sigterm;

    /* campaign */
    uint64_t attempt, counter;
    char election[24]; /* "elect" and an int */
    char value[VALUE_MAX];
    uint64_t fence;
    int lost, steps_left, write_no;

    /* observe */
    struct obs obs[ELECT_MAX];
    uint64_t watches, reads;
    int reads_in_flight;
};

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

/* A value as a log word: printable, no blanks ("-" if empty). */
static void value_word(const void *v, size_t len, char *out, size_t cap)
{
    size_t n = 0;

    for (size_t i = 0; i < len && n + 1 < cap; i++) {
        char c = ((const char *)v)[i];
        out[n++] = c > ' ' && c < 127 ? c : '?';
    }
    if (n == 0 && cap > 1) out[n++] = '-';
    out[n] = '\0';
}

/* ---- campaign: lead, write, proclaim, resign ----------------------------------- */

static void next_campaign(struct app *a);
static void close_session(struct app *a);

static void on_resigned(baton_async_t *ac, int status, void *data)
{
    struct app *a = data;

    (void)ac;
    flog(a->log, "RESIGNED %s %" PRIu64 " %d", a->election, a->fence, status);
    a->state = E_IDLE;
    next_campaign(a);
}

static void resign(struct app *a)
{
    int rv;

    a->state = E_RESIGNING;
    flog(a->log, "RESIGN %s %" PRIu64, a->election, a->fence);
    rv = baton_async_unlock(a->ac, a->election, a->fence, on_resigned, a);
    if (rv < 0) { /* BATON_ELOST at once: the lost callback had run */
        flog(a->log, "RESIGNED %s %" PRIu64 " %d", a->election, a->fence, rv);
        a->state = E_IDLE;
        next_campaign(a);
    }
}

static void lead_step(struct app *a);

static void on_proclaimed(baton_async_t *ac, int status, void *data)
{
    struct app *a = data;

    (void)ac;
    flog(a->log, "PROCLAIMED %s %" PRIu64 " %s %d", a->election, a->fence, a->value, status);
    after(a, rnd(a, 20, 100), lead_step);
}

static void proclaim(struct app *a)
{
    int rv;

    snprintf(a->value, sizeof a->value, "%s:%" PRIu64, a->name, ++a->counter);
    flog(a->log, "PROCLAIM %s %" PRIu64 " %s", a->election, a->fence, a->value);
    rv = baton_async_proclaim(a->ac, a->election, a->fence, a->value, strlen(a->value),
                              on_proclaimed, a);
    if (rv < 0) {
        flog(a->log, "PROCLAIMED %s %" PRIu64 " %s %d", a->election, a->fence, a->value, rv);
        after(a, rnd(a, 20, 100), lead_step);
    }
}

static void guarded_write(struct app *a)
{
    char req[128], ans[64];
    unsigned long long max;
    int k = ++a->write_no;

    snprintf(req, sizeof req, "W %s %" PRIu64 " %s %d\n", a->election, a->fence, a->name, k);
    flog(a->log, "WRITE %s %" PRIu64 " %d", a->election, a->fence, k);
    if (store_call(a->store_port, &a->store_fd, req, ans, sizeof ans) != 0)
        flog(a->log, "WERR %s %" PRIu64 " %d", a->election, a->fence, k);
    else if (ans[0] == 'A')
        flog(a->log, "WOK %s %" PRIu64 " %d", a->election, a->fence, k);
    else if (sscanf(ans, "R %llu", &max) == 1)
        flog(a->log, "WREJ %s %" PRIu64 " %d %llu", a->election, a->fence, k, max);
    else
        flog(a->log, "WERR %s %" PRIu64 " %d", a->election, a->fence, k);
}

/* One step of a leadership: stop if told, else a write or a proclaim. */
static void lead_step(struct app *a)
{
    if (a->lost || a->stopping || a->steps_left-- <= 0) {
        resign(a);
        return;
    }
    if (rnd(a, 1, 3) == 1) {
        proclaim(a);
        return;
    }
    guarded_write(a);
    after(a, rnd(a, 20, 100), lead_step);
}

static void on_campaign(baton_async_t *ac, int status, const char *name, uint64_t fence,
                        void *data)
{
    struct app *a = data;
    /* A grant can arrive with the session's end (id 0 then): it is the
     * last session's. */
    uint64_t session = baton_async_session_id(ac) ? baton_async_session_id(ac) : a->session;

    (void)name;
    if (status != 0) {
        flog(a->log, "CFAIL %" PRIu64 " %s %d", a->attempt, a->election, status);
        if (status != BATON_ETIMEDOUT && status != BATON_EWOULDBLOCK)
            flog(a->log, "NOTE campaign %" PRIu64 ": %s", a->attempt, baton_async_errmsg(ac));
        a->state = E_IDLE;
        after(a, status == BATON_EUNAVAIL || status == BATON_ESESSION || status == BATON_EVERSION
                     ? rnd(a, 100, 500)
                     : rnd(a, 0, 50),
              next_campaign);
        return;
    }
    a->fence = fence;
    a->lost = 0;
    a->write_no = 0;
    a->steps_left = (int)rnd(a, 4, 40);
    a->state = E_LEADING;
    flog(a->log, "LEAD %" PRIu64 " %s %" PRIu64 " %" PRIu64 " %s", a->attempt, a->election, fence,
         session, a->value);
    lead_step(a);
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
    if (a->state == E_LEADING && fence == a->fence && strcmp(lock, a->election) == 0) a->lost = 1;
}

static void campaign(struct app *a)
{
    baton_lock_args args = {.wait_ms = rnd(a, 500, 5000)};
    int rv;

    a->attempt++;
    snprintf(a->election, sizeof a->election, "elect%u", rnd(a, 0, (uint32_t)a->n_elections - 1));
    snprintf(a->value, sizeof a->value, "%s:%" PRIu64, a->name, ++a->counter);
    a->state = E_CAMPAIGNING;
    flog(a->log, "CAMPAIGN %" PRIu64 " %s %" PRId64 " %s", a->attempt, a->election, args.wait_ms,
         a->value);
    rv = baton_async_campaign(a->ac, a->election, a->value, strlen(a->value), &args, on_campaign,
                              a);
    if (rv < 0) {
        flog(a->log, "CFAIL %" PRIu64 " %s %d", a->attempt, a->election, rv);
        a->state = E_IDLE;
        after(a, 100, next_campaign);
    }
}

static void next_campaign(struct app *a)
{
    if (a->state != E_IDLE) return;
    if (a->stopping) {
        uv_timer_stop(&a->timer);
        a->on_timer = NULL;
        close_session(a);
        return;
    }
    if (a->on_timer == NULL) after(a, rnd(a, 0, 200), campaign);
}

/* ---- observe: watches and leader reads ---------------------------------------------- */

static void observe(struct obs *o);

static const char *kind_word(int kind)
{
    switch (kind) {
    case BATON_EVENT_CHANGE: return "CHANGE";
    case BATON_EVENT_STATE: return "STATE";
    case BATON_EVENT_GAP: return "GAP";
    case BATON_EVENT_SYNCED: return "SYNCED";
    default: return "UNKNOWN";
    }
}

/* The leader a state shows: holders[0], or none. */
static void leader_of(const baton_lock_state *st, uint64_t *session, uint64_t *fence, char *val,
                      size_t cap)
{
    *session = *fence = 0;
    snprintf(val, cap, "-");
    if (st == NULL || st->n_holders == 0) return;
    *session = st->holders[0].session;
    *fence = st->holders[0].fence;
    value_word(st->holders[0].value, st->holders[0].value_len, val, cap);
}

static void obs_timer_cb(uv_timer_t *t)
{
    struct obs *o = t->data;

    if (o->w != NULL)
        baton_async_unwatch(o->a->ac, o->w); /* its end call follows */
    else if (!o->a->stopping)
        observe(o);
}

static void on_event(baton_async_t *ac, int status, const baton_event *ev, void *data)
{
    struct obs *o = data;
    struct app *a = o->a;
    uint64_t session, fence;
    char val[VALUE_MAX];

    (void)ac;
    if (ev == NULL) { /* the watch's end */
        flog(a->log, "OBSEND %" PRIu64 " %s %d", o->id, o->election, status);
        o->w = NULL;
        if (!a->stopping) uv_timer_start(&o->timer, obs_timer_cb, rnd(a, 50, 500), 0);
        else close_session(a);
        return;
    }
    leader_of(ev->state, &session, &fence, val, sizeof val);
    flog(a->log, "EV %" PRIu64 " %s %s %" PRIu64 " %d %" PRIu64 " %" PRIu64 " %s", o->id,
         o->election, kind_word(ev->kind), ev->revision, ev->restarted, session, fence, val);
}

static void observe(struct obs *o)
{
    struct app *a = o->a;
    int rv;

    o->id = ++a->watches;
    flog(a->log, "OBSERVE %" PRIu64 " %s", o->id, o->election);
    rv = baton_async_observe(a->ac, o->election, on_event, o, &o->w);
    if (rv < 0) {
        o->w = NULL;
        flog(a->log, "OBSEND %" PRIu64 " %s %d", o->id, o->election, rv);
        uv_timer_start(&o->timer, obs_timer_cb, 500, 0);
        return;
    }
    uv_timer_start(&o->timer, obs_timer_cb, rnd(a, 2000, 8000), 0);
}

struct read_ctx {
    struct app *a;
    uint64_t id;
    char election[24]; /* "elect" and an int */
};

static void read_next(struct app *a);

static void on_read(baton_async_t *ac, int status, const baton_lock_state *st, void *data)
{
    struct read_ctx *r = data;
    struct app *a = r->a;
    uint64_t session, fence;
    char val[VALUE_MAX];

    (void)ac;
    leader_of(status == 0 ? st : NULL, &session, &fence, val, sizeof val);
    flog(a->log, "READR %" PRIu64 " %s %d %" PRIu64 " %" PRIu64 " %s %" PRIu64, r->id,
         r->election, status, session, fence, val, status == 0 && st ? st->revision : 0);
    free(r);
    a->reads_in_flight--;
    if (a->stopping)
        close_session(a);
    else
        after(a, rnd(a, 50, 300), read_next);
}

static void read_next(struct app *a)
{
    struct read_ctx *r = malloc(sizeof *r);

    if (r == NULL) exit(1);
    r->a = a;
    r->id = ++a->reads;
    snprintf(r->election, sizeof r->election, "elect%u",
             rnd(a, 0, (uint32_t)a->n_elections - 1));
    flog(a->log, "READ %" PRIu64 " %s", r->id, r->election);
    a->reads_in_flight++;
    if (baton_async_leader(a->ac, r->election, on_read, r) < 0) {
        flog(a->log, "READR %" PRIu64 " %s %d 0 0 - 0", r->id, r->election, BATON_EINVAL);
        a->reads_in_flight--;
        free(r);
        after(a, 500, read_next);
    }
}

static void observer_start(struct app *a)
{
    for (int i = 0; i < a->n_elections; i++) observe(&a->obs[i]);
    after(a, rnd(a, 50, 300), read_next);
}

/* SIGTERM: end every watch (their end calls follow). */
static void observer_stop(struct app *a)
{
    uv_timer_stop(&a->timer);
    a->on_timer = NULL;
    for (int i = 0; i < a->n_elections; i++) {
        uv_timer_stop(&a->obs[i].timer);
        if (a->obs[i].w) baton_async_unwatch(a->ac, a->obs[i].w);
    }
    close_session(a);
}

/* ---- session life ------------------------------------------------------------------ */

static void finish(struct app *a)
{
    a->state = E_DONE;
    uv_timer_stop(&a->timer);
    uv_close((uv_handle_t *)&a->timer, NULL);
    uv_close((uv_handle_t *)&a->sigterm, NULL);
    for (int i = 0; a->observer && i < a->n_elections; i++)
        uv_close((uv_handle_t *)&a->obs[i].timer, NULL);
}

static void on_closed(baton_async_t *ac, int status, void *data)
{
    struct app *a = data;

    flog(a->log, "CLOSED %d", status);
    baton_async_free(ac);
    a->ac = NULL;
    finish(a);
}

/* Close the session once nothing is left to wait for (an observer's
 * watches ended and reads answered). */
static void close_session(struct app *a)
{
    if (a->state == E_CLOSING || a->state == E_DONE) return;
    for (int i = 0; a->observer && i < a->n_elections; i++)
        if (a->obs[i].w) return;
    if (a->reads_in_flight) return;
    a->state = E_CLOSING;
    if (baton_async_close_session(a->ac, on_closed, a) != 0) {
        flog(a->log, "CLOSED %d", -1);
        baton_async_free(a->ac);
        a->ac = NULL;
        finish(a);
    }
}

static void open_session(struct app *a);

static void on_open(baton_async_t *ac, int status, uint64_t session, void *data)
{
    struct app *a = data;

    if (status != 0) {
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
    a->state = E_IDLE;
    if (a->stopping)
        close_session(a);
    else if (a->observer)
        observer_start(a);
    else
        next_campaign(a);
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
    a->state = E_OPENING;
    if (baton_async_new(&a->opts, &a->ac) != 0 || baton_uv_attach(a->ac, a->loop) != 0) {
        fprintf(stderr, "faultelect: cannot create a context\n");
        exit(1);
    }
    baton_async_on_lost(a->ac, on_lost, a);
    baton_async_on_queued(a->ac, on_queued, a);
    baton_async_on_session(a->ac, on_session, a);
    if (baton_async_open(a->ac, on_open, a) != 0) {
        fprintf(stderr, "faultelect: baton_async_open failed\n");
        exit(1);
    }
}

static void on_sigterm(uv_signal_t *s, int sig)
{
    struct app *a = s->data;

    (void)sig;
    if (a->stopping) return;
    a->stopping = 1;
    if (a->state == E_OPENING) return; /* on_open closes */
    if (a->observer) {
        observer_stop(a);
    } else if (a->state == E_IDLE) {
        a->on_timer = NULL;
        next_campaign(a);
    }
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"role", required_argument, NULL, 'R'},      {"endpoints", required_argument, NULL, 'e'},
        {"store", required_argument, NULL, 's'},     {"name", required_argument, NULL, 'n'},
        {"log", required_argument, NULL, 'l'},       {"elections", required_argument, NULL, 'k'},
        {"ttl", required_argument, NULL, 't'},       {"seed", required_argument, NULL, 'r'},
        {"cacert", required_argument, NULL, 'c'},    {"token", required_argument, NULL, 'T'},
        {"expect-clock-ppm", required_argument, NULL, 'P'},
        {"expect-proxy-ports", required_argument, NULL, 'X'}, {0},
    };
    struct app a = {.n_elections = 2, .store_fd = -1, .rng = 0x2545F4914F6CDD1Dull};
    const char *logpath = NULL, *role = NULL;
    unsigned ttl = 3000;
    long want_ppm = 0;
    int o, want_ports = 0;

    a.opts.client_name = "faultelect";
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'R': role = optarg; break;
        case 'e': a.opts.endpoints = optarg; break;
        case 's': a.store_port = atoi(optarg); break;
        case 'n': a.name = optarg; break;
        case 'l': logpath = optarg; break;
        case 'k': a.n_elections = atoi(optarg); break;
        case 't': ttl = (unsigned)atoi(optarg); break;
        case 'r': a.rng ^= strtoull(optarg, NULL, 10) * 0x9E3779B97F4A7C15ull; break;
        case 'c': a.opts.tls_ca_file = optarg; break;
        case 'T': a.opts.token = optarg; break;
        case 'P': want_ppm = strtol(optarg, NULL, 10); break;
        case 'X': want_ports = atoi(optarg); break;
        default: goto usage;
        }
    }
    if (role == NULL || (strcmp(role, "campaign") != 0 && strcmp(role, "observe") != 0) ||
        a.opts.endpoints == NULL || a.store_port <= 0 || a.name == NULL || logpath == NULL ||
        a.n_elections < 1 || a.n_elections > ELECT_MAX || optind != argc)
        goto usage;
    a.observer = role[0] == 'o';
    if (a.rng == 0) a.rng = 1;
    a.rng ^= (uint64_t)getpid() << 20; /* a restarted worker does not replay its last life */
    a.opts.session_ttl_ms = ttl;
    a.log = fopen(logpath, "a");
    if (a.log == NULL) {
        fprintf(stderr, "faultelect: %s: %s\n", logpath, strerror(errno));
        return 1;
    }
    flog(a.log, "START %s %s %ld", role, a.name, (long)getpid());
    if (shims_check(a.log, "faultelect", want_ppm, want_ports) != 0) return 1;
    signal(SIGPIPE, SIG_IGN);
    a.loop = uv_default_loop();
    uv_timer_init(a.loop, &a.timer);
    a.timer.data = &a;
    for (int i = 0; a.observer && i < a.n_elections; i++) {
        a.obs[i].a = &a;
        snprintf(a.obs[i].election, sizeof a.obs[i].election, "elect%d", i);
        uv_timer_init(a.loop, &a.obs[i].timer);
        a.obs[i].timer.data = &a.obs[i];
    }
    uv_signal_init(a.loop, &a.sigterm);
    a.sigterm.data = &a;
    uv_signal_start(&a.sigterm, on_sigterm, SIGTERM);
    open_session(&a);
    uv_run(a.loop, UV_RUN_DEFAULT);
    flog(a.log, "END");
    if (a.store_fd >= 0) close(a.store_fd);
    fclose(a.log);
    return uv_loop_close(a.loop) == 0 ? 0 : 1;

usage:
    fprintf(stderr, "usage: faultelect --role campaign|observe --endpoints E --store PORT "
                    "--name N --log FILE [--elections K] [--ttl MS] [--seed S] [--cacert FILE] "
                    "[--token T] [--expect-clock-ppm N] [--expect-proxy-ports N]\n");
    return 2;
}
