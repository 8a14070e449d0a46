/*
 * async.c -- the async core's context: creation and free, the adapter
 * hooks, the table of requests, the queue of completed requests whose
 * callbacks are due, the single timer, and the deferred free.
 *
 * Every entry point that can run callbacks (the three handlers and
 * baton_async_free) brackets its work with baton__enter / baton__leave.
 * Work inside the bracket only queues completions; baton__leave runs them,
 * re-arms the timer, and performs a free that a callback asked for.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "client/async_int.h"

/* ---- small helpers ---------------------------------------------------------- */

/* Milliseconds of a monotonic clock. The core keeps its own time rather
 * than the loop's, so that it does not depend on the adapter. */
/*
 * The client's clock: CLOCK_BOOTTIME, which, unlike CLOCK_MONOTONIC, keeps
 * counting while the machine is suspended. A laptop that sleeps through
 * its session's lease then sees, on waking, that the lease is over and
 * declares its locks lost, instead of believing it still holds them for a
 * whole ttl after the cluster gave them away. (CLOCK_MONOTONIC only where
 * the kernel is older than 2.6.39 and lacks CLOCK_BOOTTIME.)
 */
uint64_t baton__now(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_BOOTTIME, &ts) != 0) clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A uniformly distributed integer in [lo, hi] (xorshift64; only used for
 * back-off jitter, so quality hardly matters). */
uint32_t baton__rand(baton_async_t *ac, uint32_t lo, uint32_t hi)
{
    uint64_t x = ac->rng;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    ac->rng = x;
    return lo + (uint32_t)(x % ((uint64_t)hi - lo + 1));
}

void baton__seterr(baton_async_t *ac, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(ac->errmsg, sizeof ac->errmsg, fmt, ap);
    va_end(ap);
}

/* ---- requests ------------------------------------------------------------------- */

/* Allocate a zeroed struct baton__req of `kind` for lock `name` (may be
 * NULL), linked nowhere. NULL when out of memory. */
struct baton__req *baton__req_alloc(int kind, const char *name, size_t name_len)
{
    struct baton__req *r = calloc(1, sizeof *r + name_len + 1);

    if (r == NULL) return NULL;
    r->kind = (uint8_t)kind;
    r->name_len = (uint16_t)name_len;
    if (name_len) memcpy(r->name, name, name_len);
    r->name[name_len] = '\0';
    return r;
}

/*
 * Create a request of `kind` for lock `name` (may be NULL), give it the next
 * id, and link it into the table. The caller sets the rest. Returns NULL
 * when out of memory.
 */
struct baton__req *baton__req_new(baton_async_t *ac, int kind, const char *name, size_t name_len)
{
    struct baton__req *r = baton__req_alloc(kind, name, name_len);

    if (r == NULL) return NULL;
    r->id = ac->next_id++;
    if (u64map_put(&ac->map, r->id, r) != 0) {
        free(r);
        return NULL;
    }
    r->prev = ac->tail;
    if (ac->tail)
        ac->tail->next = r;
    else
        ac->head = r;
    ac->tail = r;
    r->in_table = true;
    return r;
}

struct baton__req *baton__req_find(baton_async_t *ac, uint64_t id)
{
    return u64map_get(&ac->map, id);
}

/* Free r and what it owns (its message, a held-lock entry it reserved and
 * never used). r must be linked nowhere. */
void baton__req_free(struct baton__req *r)
{
    if (r == NULL) return;
    baton__req_free(r->held);
    free(r->errmsg);
    free(r->frame);
    free(r->more);
    free(r->value);
    free(r->ev);
    free(r);
}

/*
 * Queue r on ac->done: its callback (whatever r->kind says it is) runs
 * when the current handler ends, in FIFO order with every other. With
 * r->status < 0 the context's current error message goes with it.
 */
void baton__queue_done(baton_async_t *ac, struct baton__req *r)
{
    if (r->status < 0) {
        if (ac->errmsg[0] == '\0') baton__seterr(ac, "%s", baton_strerror(r->status));
        free(r->errmsg);
        r->errmsg = strdup(ac->errmsg);
    }
    r->dnext = NULL;
    if (ac->done_tail)
        ac->done_tail->dnext = r;
    else
        ac->done_head = r;
    ac->done_tail = r;
    r->in_done = true;
    /* Outside a handler (a public call), get the callbacks run soon. */
    if (ac->depth == 0) baton__sched(ac, baton__now());
}

/*
 * The caller's callback for r is due with `status` (and, for a lock, the
 * fence). It is queued and runs when the current handler ends; r itself
 * may stay in the table (an abandoned lock call). No-op if the callback
 * was already queued. With status < 0 the context's current error message
 * is kept with r and shown to the callback. The OPEN of a fresh session
 * has no caller but owes the session callback, which is queued the same
 * way.
 */
void baton__req_complete(baton_async_t *ac, struct baton__req *r, int status, uint64_t fence)
{
    if (!r->user && !r->notify) return;
    if (r->user) {
        r->user = false;
        r->user_queued = true;
        ac->n_user--;
    }
    r->notify = false;
    r->status = status;
    if (r->kind == BATON__K_ACQUIRE) r->fence = status == 0 ? fence : 0;
    baton__queue_done(ac, r);
}

/* Take r out of the table; free it unless its callback is still queued. */
void baton__req_remove(baton_async_t *ac, struct baton__req *r)
{
    if (!r->in_table) return;
    if (r->prev)
        r->prev->next = r->next;
    else
        ac->head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        ac->tail = r->prev;
    r->prev = r->next = NULL;
    u64map_del(&ac->map, r->id);
    r->in_table = false;
    if (r->kind == BATON__K_RAW) ac->n_raw--;
    if (r->kind == BATON__K_WATCH) ac->n_watch--;
    if (!r->in_done) baton__req_free(r);
}

/* Complete r for its caller (if still owed) and take it out of the table. */
void baton__finish(baton_async_t *ac, struct baton__req *r, int status, uint64_t fence)
{
    baton__req_complete(ac, r, status, fence);
    baton__req_remove(ac, r);
}

/*
 * What the session's next request acknowledges (async_int.h, "What the
 * client acknowledges"): returns ack_below, the lowest seq that is still
 * owed an answer and not kept, and fills keep[0..*n_keep) with the queued
 * ACQUIREs below it, in increasing order. Requests are in id order, and
 * every request but OPEN_SESSION and the sessionless ones carries a seq. Walks the table up to the
 * first request that stops it: at most BATON_MAX_KEEP queued ones.
 */
uint64_t baton__acks(const baton_async_t *ac, struct msg_seq keep[BATON_MAX_KEEP],
                     uint32_t *n_keep)
{
    *n_keep = 0;
    for (const struct baton__req *r = ac->head; r; r = r->next) {
        if (r->kind == BATON__K_OPEN || r->kind == BATON__K_RAW || r->kind == BATON__K_WATCH)
            continue; /* no seq */
        if (!r->queued || *n_keep == BATON_MAX_KEEP) return r->id;
        keep[(*n_keep)++].seq = r->id;
    }
    return ac->next_id;
}

/*
 * A new OPEN_SESSION nonce (proto/msg.h): 64 random bits from the kernel,
 * never 0. It must differ from the nonce of every other live session of
 * the same principal (else a re-sent OPEN_SESSION could be answered with
 * another client's session), which 64 random bits do. Where getrandom
 * fails (a kernel before 3.17, a seccomp filter), the back-off generator
 * (seeded from the clock, the pid and the context's address) and the
 * clock and pid once more stand in: unique across processes and contexts
 * in practice, if not unpredictable.
 */
uint64_t baton__nonce(baton_async_t *ac)
{
    uint64_t n = 0;

    if (getrandom(&n, sizeof n, GRND_NONBLOCK) != (ssize_t)sizeof n) {
        n = (uint64_t)baton__rand(ac, 0, UINT32_MAX) << 32 | baton__rand(ac, 0, UINT32_MAX);
        n ^= baton__now() * 0x9e3779b97f4a7c15ULL ^ (uint64_t)getpid() << 40;
    }
    return n != 0 ? n : 1;
}

/* Complete every owed callback with status and empty the table, except
 * for `keep`. */
void baton__fail_all(baton_async_t *ac, int status, const struct baton__req *keep)
{
    struct baton__req *r = ac->head, *next;

    for (; r; r = next) {
        next = r->next;
        if (r == keep) continue;
        baton__finish(ac, r, status, 0);
    }
}

/* Run the queued callbacks, oldest first, until the queue is empty or a
 * callback asked for the context to be freed. */
static void run_completions(baton_async_t *ac)
{
    while (ac->done_head && !ac->free_req) {
        struct baton__req *r = ac->done_head;

        ac->done_head = r->dnext;
        if (ac->done_head == NULL) ac->done_tail = NULL;
        /* r stays marked in_done while its callback runs, so that a call
         * made from the callback which takes r out of the table or the
         * held locks (an unlock of a lost lock) leaves freeing it to us. */
        if (r->status < 0 && r->errmsg) snprintf(ac->errmsg, sizeof ac->errmsg, "%s", r->errmsg);
        switch (r->kind) {
        case BATON__K_OPEN:
            /* The session id the callback reports is the one this OPEN
             * got (a later one may be open by the time a fresh session's
             * callback runs, which is why the value is kept in r). */
            if (r->reopen) {
                if (ac->session_cb) ac->session_cb(ac, r->status, r->fence, ac->session_data);
            } else if (r->cb.open) {
                r->cb.open(ac, r->status, r->fence, r->data);
            }
            break;
        case BATON__K_ACQUIRE:
            if (r->cb.lock) r->cb.lock(ac, r->status, r->name, r->fence, r->data);
            break;
        case BATON__K_HELD:
            if (ac->lost_cb) ac->lost_cb(ac, r->name, r->fence, r->status, ac->lost_data);
            break;
        case BATON__K_QUEUED:
            if (ac->queued_cb)
                ac->queued_cb(ac, r->name, (uint32_t)r->fence, r->data, ac->queued_data);
            break;
        case BATON__K_RAW:
            r->cb.raw(ac, r->status, NULL, true, r->data);
            break;
        case BATON__K_WATCH:
            if (r->cb.watch) r->cb.watch(ac, r->status, NULL, r->data);
            break;
        case BATON__K_WEVENT:
            baton__watch_deliver(ac, r);
            break;
        case BATON__K_REPLY: {
            struct msg m;
            /* The core encoded it: it decodes. */
            if (proto_decode(r->frame, r->frame_len, &m) == 0) {
                r->cb.raw(ac, 0, &m, r->stream, r->data);
                msg_free(&m);
            }
            break;
        }
        default:
            if (r->cb.done) r->cb.done(ac, r->status, r->data);
            break;
        }
        r->user_queued = false;
        r->in_done = false;
        if (!r->in_table && !r->in_held) baton__req_free(r);
    }
}

/* ---- the timer -------------------------------------------------------------- */

/* Make sure the timer fires no later than `at` (absolute ms). */
void baton__sched(baton_async_t *ac, uint64_t at)
{
    uint64_t now;

    if (!ac->attached || ac->freeing) return;
    if (ac->timer_armed && ac->timer_at <= at) return;
    now = baton__now();
    ac->timer_armed = true;
    ac->timer_at = at;
    ac->ev.timer_start(ac->ev.data, at > now ? at - now : 0);
}

void baton__set_deadline(baton_async_t *ac, struct baton__req *r, uint64_t at)
{
    r->deadline = at;
    if (at) baton__sched(ac, at);
}

/*
 * After the timer fired, find the next deadline and arm for it. Deadlines
 * that are set later arm the timer themselves (baton__sched), and ones
 * that disappear just cause a harmless early wake-up, so a full scan is
 * needed only here.
 */
static void rearm(baton_async_t *ac)
{
    uint64_t next = baton__conn_next_timer(ac), t = baton__ops_next_timer(ac);

    if (t && (next == 0 || t < next)) next = t;
    t = baton__session_next_timer(ac);
    if (t && (next == 0 || t < next)) next = t;
    if (ac->done_head) next = baton__now();
    if (next) baton__sched(ac, next);
}

/* ---- enter / leave and the deferred free ---------------------------------------- */

static void destroy(baton_async_t *ac);

void baton__enter(baton_async_t *ac)
{
    ac->depth++;
}

void baton__leave(baton_async_t *ac)
{
    if (ac->depth == 1 && !ac->freeing) {
        run_completions(ac);
        if (!ac->free_req && !ac->timer_armed) rearm(ac);
    }
    ac->depth--;
    if (ac->depth == 0 && ac->free_req) destroy(ac);
}

/*
 * Free the context now: owed callbacks run with BATON_ECANCELED (and those
 * already queued with their own status), the socket is closed, the adapter
 * cleaned up. Callbacks that call back in find `freeing` set: new requests
 * are refused and a second free is ignored.
 */
static void destroy(baton_async_t *ac)
{
    ac->freeing = true;
    ac->free_req = false;
    ac->depth++;
    baton__seterr(ac, "the context was freed");
    baton__fail_all(ac, BATON_ECANCELED, NULL);
    run_completions(ac);
    baton__held_free_all(ac);
    baton__conn_drop(ac);
    if (ac->attached) {
        ac->ev.timer_stop(ac->ev.data);
        ac->ev.cleanup(ac->ev.data);
    }
    /* Nothing is left in the table, on the queue or among the held locks:
     * fail_all emptied the first, run_completions the second and
     * held_free_all the third. */
    u64map_free(&ac->map);
    u64map_free(&ac->held_map);
    buf_free(&ac->in);
    buf_free(&ac->out);
    baton__tls_free(ac);
    free(ac->client_name);
    free(ac);
}

/* ---- public: life cycle ------------------------------------------------------- */

/* Why the calling thread's last baton_async_new failed (there is no
 * context to keep it in). */
static _Thread_local char new_err[BATON_ERRMSG_SIZE];

const char *baton_async_new_errmsg(void)
{
    return new_err;
}

/* Split the comma-separated endpoint list into parsed addresses; a bad one
 * is described in new_err. */
static int parse_endpoints(baton_async_t *ac, const char *s)
{
    const char *p = s, *why;

    while (*p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);

        while (n && (*p == ' ' || *p == '\t')) p++, n--;
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
        if (n) {
            if (ac->n_eps == BATON__MAX_ENDPOINTS) {
                snprintf(new_err, sizeof new_err, "more than %d endpoints", BATON__MAX_ENDPOINTS);
                return BATON_EINVAL;
            }
            if (baton__parse_addr(p, n, &ac->eps[ac->n_eps], &why) != 0) {
                snprintf(new_err, sizeof new_err, "bad endpoint '%.*s': %s (want a.b.c.d:port, "
                         "[v6]:port or localhost:port)", (int)n, p, why);
                return BATON_EINVAL;
            }
            ac->n_eps++;
        }
        if (end == NULL) break;
        p = end + 1;
    }
    if (ac->n_eps == 0) {
        snprintf(new_err, sizeof new_err, "no endpoints given");
        return BATON_EINVAL;
    }
    return 0;
}

/* Validate and copy the options, read the TLS files. No network I/O and
 * no hooks are needed yet. */
int baton_async_new(const baton_opts *o, baton_async_t **out)
{
    baton_async_t *ac;
    const char *name;
    int rv;

    new_err[0] = '\0';
    if (out == NULL) {
        snprintf(new_err, sizeof new_err, "no place for the context (out is NULL)");
        return BATON_EINVAL;
    }
    *out = NULL;
    if (o == NULL || o->endpoints == NULL) {
        snprintf(new_err, sizeof new_err, "no endpoints given");
        return BATON_EINVAL;
    }
    name = o->client_name ? o->client_name : "baton";
    if (strlen(name) > BATON_MAX_CLIENT_NAME) {
        snprintf(new_err, sizeof new_err, "the client name is longer than %d bytes",
                 BATON_MAX_CLIENT_NAME);
        return BATON_EINVAL;
    }
    ac = calloc(1, sizeof *ac);
    if (ac == NULL) {
        snprintf(new_err, sizeof new_err, "out of memory");
        return BATON_ENOMEM;
    }
    ac->fd = -1;
    ac->next_id = 1;
    ac->ka_next_id = BATON__KA_ID_BASE;
    ac->connect_timeout_ms = o->connect_timeout_ms ? o->connect_timeout_ms : BATON__DEFAULT_CONNECT_MS;
    ac->op_timeout_ms = o->op_timeout_ms ? o->op_timeout_ms : BATON__DEFAULT_OP_MS;
    ac->session_ttl_ms = o->session_ttl_ms ? o->session_ttl_ms : BATON__DEFAULT_TTL_MS;
    ac->rng = (baton__now() * 0x9e3779b97f4a7c15ULL) ^ (uint64_t)(uintptr_t)ac ^ (uint64_t)getpid();
    if (ac->rng == 0) ac->rng = 1;
    buf_init(&ac->in);
    buf_init(&ac->out);
    rv = parse_endpoints(ac, o->endpoints);
    if (rv == 0) rv = baton__tls_setup(ac, o, new_err, sizeof new_err);
    if (rv == 0 && (ac->client_name = strdup(name)) == NULL) {
        snprintf(new_err, sizeof new_err, "out of memory");
        rv = BATON_ENOMEM;
    }
    if (rv != 0) {
        baton__tls_free(ac);
        free(ac);
        return rv;
    }
    *out = ac;
    return 0;
}

int baton_async_attach(baton_async_t *ac, const baton_async_hooks *h)
{
    if (ac == NULL || h == NULL) return BATON_EINVAL;
    if (ac->attached) return BATON_EBUSY;
    if (!h->add_read || !h->del_read || !h->add_write || !h->del_write || !h->close_fd ||
        !h->timer_start || !h->timer_stop || !h->cleanup)
        return BATON_EINVAL;
    ac->ev = *h;
    ac->attached = true;
    return 0;
}

int baton_async_set_resolver(baton_async_t *ac, const baton_async_resolver *r)
{
    if (ac == NULL || r == NULL || r->start == NULL || r->cancel == NULL) return BATON_EINVAL;
    if (ac->opened) return BATON_EBUSY;
    ac->resolver = *r;
    return 0;
}

void baton__on_resolved(void *arg, const void *res, const char *why)
{
    baton_async_t *ac = arg;

    if (ac->freeing) return; /* cannot be: freeing cancels the lookup */
    baton__enter(ac);
    baton__conn_resolved(ac, (const struct addrinfo *)res, why);
    baton__leave(ac);
}

void baton_async_on_lost(baton_async_t *ac, baton_async_lost_cb *cb, void *data)
{
    if (ac == NULL) return;
    ac->lost_cb = cb;
    ac->lost_data = data;
}

void baton_async_on_queued(baton_async_t *ac, baton_async_queued_cb *cb, void *data)
{
    if (ac == NULL) return;
    ac->queued_cb = cb;
    ac->queued_data = data;
}

void baton_async_on_session(baton_async_t *ac, baton_async_open_cb *cb, void *data)
{
    if (ac == NULL) return;
    ac->session_cb = cb;
    ac->session_data = data;
}

void baton_async_free(baton_async_t *ac)
{
    if (ac == NULL || ac->freeing) return;
    if (ac->depth > 0) {
        ac->free_req = true;
        return;
    }
    destroy(ac);
}

/* ---- public: adapter entry points ----------------------------------------------- */

void baton_async_handle_read(baton_async_t *ac)
{
    if (ac == NULL || ac->freeing) return;
    baton__enter(ac);
    baton__read(ac);
    baton__leave(ac);
}

void baton_async_handle_write(baton_async_t *ac)
{
    if (ac == NULL || ac->freeing) return;
    baton__enter(ac);
    baton__write(ac);
    baton__leave(ac);
}

void baton_async_handle_timeout(baton_async_t *ac)
{
    uint64_t now;

    if (ac == NULL || ac->freeing) return;
    baton__enter(ac);
    ac->timer_armed = false;
    now = baton__now();
    baton__conn_check_timers(ac, now);
    /* The lease first: if it ran out, the requests of the session are
     * settled with BATON_ESESSION rather than with their own timeouts. */
    baton__session_check_timers(ac, now);
    baton__ops_check_timers(ac, now);
    /* A deadline armed during the checks may lie beyond one that was
     * waiting for this very expiry: look at them all. */
    if (!ac->freeing) rearm(ac);
    baton__leave(ac);
}

/* ---- public: accessors -------------------------------------------------------------- */

uint64_t baton_async_session_id(const baton_async_t *ac)
{
    return ac && ac->sstate >= BATON__S_OPEN ? ac->session : 0;
}

const char *baton_async_errmsg(const baton_async_t *ac)
{
    return ac ? ac->errmsg : "";
}

unsigned baton_async_pending(const baton_async_t *ac)
{
    unsigned n = 0;

    if (ac == NULL) return 0;
    n = ac->n_user;
    for (const struct baton__req *r = ac->done_head; r; r = r->dnext)
        if (r->user_queued) n++;
    return n;
}
