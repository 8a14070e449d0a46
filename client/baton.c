/*
 * baton.c -- the blocking API (include/baton/baton.h) on top of the async core.
 *
 * Each baton_t owns one I/O thread that runs a private libuv loop with the
 * async context, a uv_async_t ("wake") through which other threads hand in
 * requests, and a timer that bounds baton_close. A blocking call fills in a
 * struct bop on its own stack, appends it to the submission queue under
 * b->mu, wakes the I/O thread and waits on the bop's condition variable;
 * the I/O thread turns it into an async call whose callback stores the
 * outcome and signals. Only the I/O thread touches the async context.
 *
 * Lifetime: b is reference-counted. baton_connect's caller holds one
 * reference (dropped by baton_close), every call in progress holds one,
 * and so does every baton_lock_t, so that a baton_unlock after baton_close,
 * or a call that baton_close woke up, never touches freed memory.
 *
 * Locking: b->mu protects the queue, `closed`, the lost callback and the
 * bops' results. It is never held while calling into the async core or
 * into the user's lost callback.
 *
 * Lost locks and fresh sessions: the async core reports them on the I/O
 * thread (io_lost_cb, io_session_cb); the user's lost callback runs right
 * there, and the session id is kept in an atomic for baton_session_id.
 * Code running on the I/O thread (that is, the lost callback) must never
 * wait for the I/O thread: baton_unlock does not wait there, and the lock
 * calls refuse with BATON_EBUSY (see baton.h).
 */
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "baton/adapters/libuv.h"
#include "baton/baton.h"
#include "baton/baton_async.h"
#include "client/async_int.h"
#include "proto/errmsg.h"
#include "proto/msg.h"

#define ERR_SLOTS 4              /* batons per thread whose messages are kept */
#define CLOSE_BOUND_MS 5000      /* baton_close waits at most this for CLOSE_SESSION */

enum bop_type { BOP_OPEN, BOP_LOCK, BOP_UNLOCK, BOP_CLOSE, BOP_PROCLAIM, BOP_STATE, BOP_WATCH,
                BOP_UNWATCH };

/*
 * A blocking watch (baton_watch) queues the events the core hands it (the
 * core's watch is "owned": each event is ours) until a thread takes them
 * with baton_watch_next. At most WATCH_QUEUE wait; when one more comes,
 * the queue is dropped and the core subscribes again from `taken`, the
 * revision up to which the caller has taken the stream whole (its last
 * CHANGE or SYNCED), so that the next events (GAPs, or a restart) say
 * what changed since: the caller is always told what it missed.
 */
#define WATCH_QUEUE 4096

/* One blocking call in progress. Lives on the caller's stack. */
struct bop {
    struct bop *next;
    baton_t *b;
    int type;
    const char *name;
    const char *const *names; /* BOP_LOCK of a multi-lock: n_names names, names[0] == name */
    size_t n_names;
    baton_lock_args args; /* BOP_LOCK: wait_ms, lock_delay_ms, mode, limit, reentrant, value */
    uint64_t fence;       /* BOP_UNLOCK, BOP_PROCLAIM */
    const void *pvalue;   /* BOP_PROCLAIM: the value */
    size_t pvalue_len;
    unsigned flags;       /* BOP_WATCH: BATON_WATCH_PREFIX */
    uint64_t after;       /* BOP_WATCH */
    bool observe;         /* BOP_WATCH: an election's observer */
    struct baton_watch *w; /* BOP_WATCH, BOP_UNWATCH */
    baton_lock_state *st; /* BOP_STATE: the result, the caller's */
    pthread_cond_t cv;
    /* BOP_LOCK with a cancel handle (baton_lock_call). creg is joined to
     * the handle while the call waits; the rest is under b->mu. */
    struct baton__cancel_reg creg;
    bool submitted;       /* queued for the I/O thread: only it finishes the call */
    bool started;         /* the I/O thread has made it an async call */
    bool cancel_req;      /* the handle fired */
    bool cancel_queued;   /* on b->cancel_q, for the I/O thread */
    struct bop *cancel_next;
    /* Results, written by the I/O thread under b->mu. */
    bool done;
    int status;
    uint64_t value; /* fence, or session id for BOP_OPEN */
    char errmsg[BATON_ERRMSG_SIZE];
};

struct baton {
    uint64_t uid; /* never reused; keys the per-thread error messages */
    pthread_mutex_t mu;
    unsigned refs;
    bool closed;  /* baton_close has begun: new calls fail with ECLOSED */
    struct bop *q_head, *q_tail;
    struct bop *cancel_q; /* lock calls whose cancel handle fired */
    pthread_t thread;
    uv_loop_t loop;
    uv_async_t wake;
    uv_timer_t close_timer;
    unsigned close_ms;
    _Atomic uint64_t session;   /* the current (or last) session's id */
    baton_lost_cb *lost_cb;     /* under mu */
    void *lost_data;
    /* I/O thread only. */
    baton_async_t *ac;
    struct bop *close_op;
    bool io_down;
};

struct baton_lock {
    baton_t *b;
    uint64_t fence;
    bool multi; /* of baton_lock_many: no value (baton_proclaim) */
    char name[];
};

struct baton_watch {
    baton_t *b;                /* holds a reference until baton_watch_close */
    /* I/O thread only. */
    baton_async_watch_t *aw;   /* the core's watch; NULL once it has ended */
    struct bop *start_op;      /* baton_watch, waiting for the first event */
    struct bop *close_op;      /* baton_watch_close, waiting for the end */
    bool free_on_end;          /* closed from the lost callback: the end frees it */
    /* Under b->mu. */
    pthread_cond_t cv;         /* CLOCK_MONOTONIC: an event, the end, or closing */
    baton_event **q;           /* WATCH_QUEUE slots, a ring */
    unsigned q_head, q_n;
    int end;                   /* why the watch ended; 0 while it runs */
    bool closing;              /* baton_watch_close has begun */
    unsigned waiters;          /* threads in baton_watch_next */
    uint64_t taken;            /* see WATCH_QUEUE */
};

/* The result of the last uv_loop_close of an I/O thread's loop; 0 unless a
 * handle was leaked. Tests read it (they link libbaton.a); hidden, so that
 * libbaton.so never exports it. */
__attribute__((visibility("hidden"))) int baton__last_loop_close_rv;

static atomic_uint_fast64_t next_uid;

/* On a baton's I/O thread: that baton; NULL on every other thread. */
static _Thread_local baton_t *tls_io;

/* The calling thread as the owner of its lock calls (baton.h, "Owners"):
 * a number of its own, never 0 (the async API's owner 0 is the whole
 * context) and never reused, the same with every baton_t. Threads are not
 * compared by pthread_t, whose values a later thread may get again. */
static atomic_uint_fast64_t next_owner;
static _Thread_local uint64_t tls_owner;

static uint64_t thread_owner(void)
{
    if (tls_owner == 0) tls_owner = atomic_fetch_add(&next_owner, 1) + 1;
    return tls_owner;
}

/* ---- error messages ---------------------------------------------------------------- */

static _Thread_local char connect_err[BATON_ERRMSG_SIZE];
static _Thread_local struct {
    uint64_t uid;
    char msg[BATON_ERRMSG_SIZE];
} tls_err[ERR_SLOTS];
static _Thread_local unsigned tls_err_next;

/* Record the calling thread's last error on b. A thread keeps messages for
 * its ERR_SLOTS most recently failing batons. */
static void set_err(const baton_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(const baton_t *b, const char *fmt, ...)
{
    unsigned i;
    va_list ap;

    for (i = 0; i < ERR_SLOTS; i++)
        if (tls_err[i].uid == b->uid) break;
    if (i == ERR_SLOTS) i = tls_err_next++ % ERR_SLOTS;
    tls_err[i].uid = b->uid;
    va_start(ap, fmt);
    vsnprintf(tls_err[i].msg, sizeof tls_err[i].msg, fmt, ap);
    va_end(ap);
}

const char *baton_errmsg(const baton_t *b)
{
    if (b == NULL) return "";
    for (unsigned i = 0; i < ERR_SLOTS; i++)
        if (tls_err[i].uid == b->uid) return tls_err[i].msg;
    return "";
}

const char *baton_connect_errmsg(void)
{
    return connect_err;
}

/* ---- references -------------------------------------------------------------------- */

static void ref_drop(baton_t *b)
{
    bool last;

    pthread_mutex_lock(&b->mu);
    last = --b->refs == 0;
    pthread_mutex_unlock(&b->mu);
    if (!last) return;
    pthread_mutex_destroy(&b->mu);
    free(b);
}

/* ---- the I/O thread ---------------------------------------------------------------- */

/* Take op off b->cancel_q, if it is there. Under b->mu. */
static void cancel_unqueue(baton_t *b, struct bop *op)
{
    struct bop **pp;

    if (!op->cancel_queued) return;
    for (pp = &b->cancel_q; *pp != op; pp = &(*pp)->cancel_next) {}
    *pp = op->cancel_next;
    op->cancel_queued = false;
}

/* Store a call's outcome and wake its thread. After this the I/O thread
 * must not touch op: its owner may return at once. */
static void bop_finish(struct bop *op, int status, uint64_t value, const char *msg)
{
    baton_t *b = op->b;

    pthread_mutex_lock(&b->mu);
    cancel_unqueue(b, op);
    if (status == BATON_ECANCELED && b->closed) status = BATON_ECLOSED;
    op->status = status;
    op->value = value;
    if (status < 0) snprintf(op->errmsg, sizeof op->errmsg, "%s", msg ? msg : baton_strerror(status));
    op->done = true;
    pthread_cond_signal(&op->cv);
    pthread_mutex_unlock(&b->mu);
}

/*
 * Stop everything on the I/O side: free the context (pending calls end with
 * BATON_ECANCELED, reported as BATON_ECLOSED), close our handles. The loop
 * then runs out of handles and the thread ends. Runs once; a second call
 * (from a callback that the free itself runs) returns at once.
 */
static void io_shutdown(baton_t *b)
{
    struct bop *q, *next;
    baton_async_t *ac = b->ac;

    if (b->io_down) return;
    b->io_down = true;
    b->ac = NULL;
    baton_async_free(ac);
    uv_close((uv_handle_t *)&b->wake, NULL);
    uv_close((uv_handle_t *)&b->close_timer, NULL);
    /* Nothing can be queued after the close began, but be safe. */
    pthread_mutex_lock(&b->mu);
    q = b->q_head;
    b->q_head = b->q_tail = NULL;
    pthread_mutex_unlock(&b->mu);
    for (; q; q = next) {
        next = q->next;
        bop_finish(q, BATON_ECLOSED, 0, "the baton_t is closed");
    }
}

static void open_cb(baton_async_t *ac, int status, uint64_t session, void *data)
{
    struct bop *op = data;
    char msg[BATON_ERRMSG_SIZE];

    snprintf(msg, sizeof msg, "%s", status < 0 ? baton_async_errmsg(ac) : "");
    if (status < 0) io_shutdown(op->b);
    bop_finish(op, status, session, msg);
}

static void lock_cb(baton_async_t *ac, int status, const char *name, uint64_t fence, void *data)
{
    (void)name;
    bop_finish(data, status, fence, status < 0 ? baton_async_errmsg(ac) : NULL);
}

static void unlock_cb(baton_async_t *ac, int status, void *data)
{
    bop_finish(data, status, 0, status < 0 ? baton_async_errmsg(ac) : NULL);
}

static void state_cb(baton_async_t *ac, int status, const baton_lock_state *st, void *data)
{
    struct bop *op = data;

    op->st = (baton_lock_state *)st; /* read with baton__lock_state_read(owned): ours */
    bop_finish(op, status, 0, status < 0 ? baton_async_errmsg(ac) : NULL);
}

/* Empty w's queue (under b->mu). */
static void watch_drop_queue(struct baton_watch *w)
{
    for (; w->q_n > 0; w->q_n--) {
        baton_event_free(w->q[w->q_head]);
        w->q_head = (w->q_head + 1) % WATCH_QUEUE;
    }
}

static void watch_free(struct baton_watch *w)
{
    watch_drop_queue(w);
    free(w->q);
    pthread_cond_destroy(&w->cv);
    free(w);
}

/* An event of watch w (status 0; ev is ours), or its end (status < 0). */
static void watch_cb(baton_async_t *ac, int status, const baton_event *cev, void *data)
{
    struct baton_watch *w = data;
    baton_t *b = w->b;
    baton_event *ev = (baton_event *)cev;
    struct bop *start = w->start_op, *close = w->close_op;
    bool restart = false;
    uint64_t after = 0;
    char msg[BATON_ERRMSG_SIZE];

    /* ECANCELED: baton_watch_close, or baton_close freed the context. */
    if (status == BATON_ECANCELED) status = BATON_ECLOSED;
    snprintf(msg, sizeof msg, "%s", status < 0 ? baton_async_errmsg(ac) : "");
    pthread_mutex_lock(&b->mu);
    if (status < 0) {
        w->end = status;
    } else if (w->q_n == WATCH_QUEUE) {
        watch_drop_queue(w);
        baton_event_free(ev);
        restart = true;
        after = w->taken;
    } else {
        w->q[(w->q_head + w->q_n++) % WATCH_QUEUE] = ev;
    }
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&b->mu);
    if (restart) (void)baton__watch_restart(ac, w->aw, after); /* ENOMEM ends w: told */
    /* Done with w before waking a thread that may free it. */
    w->start_op = NULL;
    if (status < 0) {
        w->aw = NULL;
        w->close_op = NULL;
        if (w->free_on_end) {
            watch_free(w);
            ref_drop(b);
        }
    }
    if (start) bop_finish(start, status, 0, msg);
    if (status < 0 && close) bop_finish(close, 0, 0, NULL);
}

/* The core declared a held lock lost: run the user's callback, here on the
 * I/O thread. The callback is read under the mutex but run without it. */
static void io_lost_cb(baton_async_t *ac, const char *lock, uint64_t fence, int why, void *data)
{
    baton_t *b = data;
    baton_lost_cb *cb;
    void *cb_data;

    (void)ac;
    pthread_mutex_lock(&b->mu);
    cb = b->lost_cb;
    cb_data = b->lost_data;
    pthread_mutex_unlock(&b->mu);
    if (cb) cb(b, lock, fence, why, cb_data);
}

/* The core opened a fresh session in place of a lost one. */
static void io_session_cb(baton_async_t *ac, int status, uint64_t session, void *data)
{
    baton_t *b = data;

    (void)ac;
    if (status == 0) atomic_store(&b->session, session);
}

/* CLOSE_SESSION was answered, failed, or took too long: shut down. Runs
 * once; later triggers (the timer, the close callback run by the free)
 * find close_op gone. */
static void close_finish(baton_t *b)
{
    struct bop *op = b->close_op;

    if (op == NULL) return;
    b->close_op = NULL;
    uv_timer_stop(&b->close_timer);
    io_shutdown(b);
    bop_finish(op, 0, 0, NULL);
}

static void close_cb(baton_async_t *ac, int status, void *data)
{
    (void)ac;
    (void)status;
    close_finish(data);
}

static void close_timer_cb(uv_timer_t *t)
{
    close_finish(t->data);
}

/* Hand one queued call to the async core. */
static void io_start(baton_t *b, struct bop *op)
{
    bool cancelled;
    int rv = 0;

    switch (op->type) {
    case BOP_LOCK:
        pthread_mutex_lock(&b->mu);
        op->started = true;
        cancelled = op->cancel_req;
        pthread_mutex_unlock(&b->mu);
        if (cancelled) {
            bop_finish(op, BATON_ECANCELED, 0, "cancelled (baton_cancel) before it was sent");
            return;
        }
        if (op->n_names > 1)
            rv = baton_async_lock_many(b->ac, op->names, op->n_names, &op->args, lock_cb, op);
        else
            rv = baton_async_lock_with(b->ac, op->name, &op->args, lock_cb, op);
        break;
    case BOP_UNLOCK:
        rv = baton_async_unlock(b->ac, op->name, op->fence, unlock_cb, op);
        break;
    case BOP_PROCLAIM:
        rv = baton_async_proclaim(b->ac, op->name, op->fence, op->pvalue, op->pvalue_len, unlock_cb,
                                  op);
        break;
    case BOP_STATE:
        rv = baton__lock_state_read(b->ac, op->name, true, state_cb, op);
        break;
    case BOP_WATCH:
        op->w->start_op = op;
        rv = baton__watch_start(b->ac, op->name, op->flags, op->after, op->observe, true, watch_cb,
                                op->w, &op->w->aw);
        if (rv != 0) op->w->start_op = NULL;
        break;
    case BOP_UNWATCH:
        if (op->w->aw == NULL) break; /* it has ended: nothing to wait for */
        op->w->close_op = op;
        rv = baton_async_unwatch(b->ac, op->w->aw);
        if (rv == 0 || rv == BATON_ENOTFOUND) return; /* its end callback finishes op */
        op->w->close_op = NULL;
        break;
    case BOP_CLOSE:
        b->close_op = op;
        if (baton_async_close_session(b->ac, close_cb, b) != 0) {
            close_finish(b);
        } else {
            uv_timer_start(&b->close_timer, close_timer_cb, b->close_ms, 0);
        }
        return;
    default:
        rv = BATON_EINVAL;
        break;
    }
    /* Only BATON_ELOST and BATON_ENOTHELD come with a message of their
     * own; for the other immediate refusals the code says it all. */
    if (rv < 0)
        bop_finish(op, rv, 0,
                   rv == BATON_ELOST || rv == BATON_ENOTHELD ? baton_async_errmsg(b->ac) : NULL);
    else if (op->type == BOP_UNWATCH)
        bop_finish(op, 0, 0, NULL);
}

/* Withdraw the lock calls whose cancel handle fired. One not started yet
 * stays: io_start sees its cancel_req. Only this thread finishes a call,
 * so each one taken off the queue lives until it is cancelled here. The
 * core's cancel ends the call through lock_cb: BATON_ECANCELED, or the
 * grant if that won the race. */
static void cancel_started(baton_t *b)
{
    struct bop *q, *next;

    pthread_mutex_lock(&b->mu);
    q = b->cancel_q;
    b->cancel_q = NULL;
    for (struct bop *op = q; op; op = op->cancel_next) op->cancel_queued = false;
    pthread_mutex_unlock(&b->mu);
    for (; q; q = next) {
        next = q->cancel_next;
        if (q->started && b->ac != NULL) (void)baton_async_cancel(b->ac, q->name, q);
    }
}

/* Another thread queued calls: start them, in order; then withdraw those
 * whose cancel handle fired. */
static void wake_cb(uv_async_t *h)
{
    baton_t *b = h->data;
    struct bop *q, *next;

    pthread_mutex_lock(&b->mu);
    q = b->q_head;
    b->q_head = b->q_tail = NULL;
    pthread_mutex_unlock(&b->mu);
    for (; q; q = next) {
        next = q->next; /* q may be gone once started */
        if (b->ac == NULL)
            bop_finish(q, BATON_ECLOSED, 0, "the baton_t is closed");
        else
            io_start(b, q);
    }
    cancel_started(b);
}

static void *io_main(void *arg)
{
    baton_t *b = arg;

    tls_io = b;
    uv_run(&b->loop, UV_RUN_DEFAULT);
    return NULL;
}

/* ---- calls from user threads ---------------------------------------------------------- */

static void bop_init(struct bop *op, int type)
{
    memset(op, 0, sizeof *op);
    op->type = type;
    pthread_cond_init(&op->cv, NULL);
}

/*
 * Queue op for the I/O thread and wait for its outcome. The call holds a
 * reference on b while it waits; on success of a lock call that reference
 * passes to the baton_lock_t (see lock_common), otherwise the caller drops
 * it with ref_drop. Returns BATON_ECLOSED without queueing if baton_close
 * has begun (and then no reference is taken).
 */
static int submit(baton_t *b, struct bop *op)
{
    op->b = b;
    pthread_mutex_lock(&b->mu);
    if (b->closed && op->type != BOP_CLOSE) {
        pthread_mutex_unlock(&b->mu);
        snprintf(op->errmsg, sizeof op->errmsg, "baton_close was called");
        return BATON_ECLOSED;
    }
    if (op->type == BOP_CLOSE) b->closed = true;
    b->refs++;
    if (b->q_tail)
        b->q_tail->next = op;
    else
        b->q_head = op;
    b->q_tail = op;
    op->submitted = true;
    /* Sent under the mutex: once `closed` is set nobody sends again, so
     * the I/O thread may close the handle safely after draining. */
    uv_async_send(&b->wake);
    while (!op->done) pthread_cond_wait(&op->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
    return op->status;
}

/* A lock call's cancel handle fired (under the handle's mutex): mark the
 * call, and have the I/O thread withdraw it if it has it. A call not yet
 * submitted is only marked: io_start refuses it. */
static void bop_cancel_fire(struct baton__cancel_reg *r)
{
    struct bop *op = (struct bop *)((char *)r - offsetof(struct bop, creg));
    baton_t *b = op->b;

    pthread_mutex_lock(&b->mu);
    op->cancel_req = true;
    if (op->submitted && !op->done && !op->cancel_queued && !b->closed) {
        op->cancel_next = b->cancel_q;
        b->cancel_q = op;
        op->cancel_queued = true;
        uv_async_send(&b->wake);
    }
    pthread_mutex_unlock(&b->mu);
}

/* A lock call of owner (0: the calling thread), withdrawn when cancel
 * (NULL: none) fires. */
static int lock_common(baton_t *b, const char *const *names, size_t n_names,
                       const baton_lock_args *a, uint64_t owner, baton_cancel_t *cancel,
                       baton_lock_t **out, const char *fn)
{
    const char *name = names[0];
    struct bop op;
    baton_lock_t *l;
    size_t n;
    int rv;

    if (out == NULL) return BATON_EINVAL;
    *out = NULL;
    if (b == NULL) return BATON_EINVAL;
    if (tls_io == b) {
        /* The I/O thread (a lost callback) cannot wait for itself. */
        set_err(b, "%s: called from the lost callback, which must not wait", fn);
        return BATON_EBUSY;
    }
    n = name ? strnlen(name, BATON_MAX_NAME + 1) : 0;
    if (!proto_lock_name_ok(name, n)) {
        set_err(b, "%s: the lock name must be 1..%d bytes", fn, BATON_MAX_NAME);
        return BATON_EINVAL;
    }
    /* Allocate first: once granted, the lock must reach the caller. */
    l = malloc(sizeof *l + n + 1);
    if (l == NULL) {
        set_err(b, "%s: out of memory", fn);
        return BATON_ENOMEM;
    }
    bop_init(&op, BOP_LOCK);
    op.name = name;
    op.names = names;
    op.n_names = n_names;
    op.args = *a;
    op.args.owner = owner ? owner : thread_owner();
    op.b = b;
    op.creg.fire = bop_cancel_fire;
    rv = cancel ? baton__cancel_join(cancel, &op.creg) : 0;
    if (rv == 0) {
        rv = submit(b, &op);
        if (cancel) baton__cancel_leave(cancel, &op.creg);
    } else {
        snprintf(op.errmsg, sizeof op.errmsg, "its cancel handle had fired (baton_cancel)");
    }
    pthread_cond_destroy(&op.cv);
    /* For a try or an unbounded wait, a timeout can only mean that the
     * cluster did not answer: baton.h calls that BATON_EUNAVAIL. */
    if (rv == BATON_ETIMEDOUT && a->wait_ms <= 0) rv = BATON_EUNAVAIL;
    if (rv != 0) {
        set_err(b, "%s '%s': %s", fn, name, op.errmsg);
        free(l);
        if (op.done) ref_drop(b); /* the call's reference, if it took one */
        return rv;
    }
    l->b = b; /* takes over the call's reference */
    l->fence = op.value;
    l->multi = n_names > 1;
    memcpy(l->name, name, n + 1);
    *out = l;
    return 0;
}

int baton_lock(baton_t *b, const char *name, baton_lock_t **out)
{
    return lock_common(b, &name, 1, &(baton_lock_args){.wait_ms = BATON_WAIT_FOREVER}, 0, NULL,
                       out, "baton_lock");
}

int baton_trylock(baton_t *b, const char *name, baton_lock_t **out)
{
    return lock_common(b, &name, 1, &(baton_lock_args){.wait_ms = BATON_WAIT_TRY}, 0, NULL, out,
                       "baton_trylock");
}

int baton_lock_timeout(baton_t *b, const char *name, int64_t ms, baton_lock_t **out)
{
    return lock_common(b, &name, 1,
                       &(baton_lock_args){.wait_ms = ms < 0 ? BATON_WAIT_FOREVER : ms}, 0, NULL,
                       out, "baton_lock_timeout");
}

/* The checks of a lock call's arguments, made before a call is queued so
 * that a refusal needs no round trip to the I/O thread; then the call. A
 * NULL a waits forever, exclusive. */
static int lock_checked(baton_t *b, const char *const *names, size_t n, bool many,
                        const baton_lock_args *a, uint64_t owner, baton_cancel_t *cancel,
                        baton_lock_t **out, const char *fn)
{
    baton_lock_args dflt = {.wait_ms = BATON_WAIT_FOREVER};
    int rv;

    if (a == NULL) a = &dflt;
    if (names == NULL || !baton__lock_args_ok(a, many, n)) {
        if (out != NULL) *out = NULL;
        return BATON_EINVAL;
    }
    rv = baton__value_check(a->value, a->value_len);
    if (rv != 0) {
        if (out != NULL) *out = NULL;
        if (b != NULL)
            set_err(b, "%s: %s", fn, rv == BATON_ETOOBIG ? "a value longer than "
                    "BATON_MAX_VALUE bytes" : "value is NULL with value_len > 0");
        return rv;
    }
    return lock_common(b, names, n, a, owner, cancel, out, fn);
}

int baton_lock_with(baton_t *b, const char *name, const baton_lock_args *a, baton_lock_t **out)
{
    if (a == NULL) {
        if (out != NULL) *out = NULL;
        return BATON_EINVAL;
    }
    return lock_checked(b, &name, 1, false, a, 0, NULL, out, "baton_lock_with");
}

int baton_lock_many(baton_t *b, const char *const *names, size_t n, const baton_lock_args *a,
                    baton_lock_t **out)
{
    return lock_checked(b, names, n, true, a, 0, NULL, out, "baton_lock_many");
}

int baton_lock_call(baton_t *b, const char *const *names, size_t n, const baton_lock_args *a,
                    baton_cancel_t *cancel, baton_lock_t **out)
{
    return lock_checked(b, names, n, n > 1, a, a ? a->owner : 0, cancel, out,
                        "baton_lock_call");
}

uint64_t baton_owner_new(void)
{
    return atomic_fetch_add(&next_owner, 1) + 1;
}

uint64_t baton_lock_fence(const baton_lock_t *l)
{
    return l ? l->fence : 0;
}

const char *baton_lock_name(const baton_lock_t *l)
{
    return l ? l->name : "";
}

int baton_unlock(baton_lock_t *l)
{
    struct bop op;
    baton_t *b;
    int rv;

    if (l == NULL) return 0;
    b = l->b;
    if (tls_io == b) {
        /* Inside the lost callback: hand the release to the core without
         * waiting for its outcome (a lost lock is settled at once). */
        rv = b->ac ? baton_async_unlock(b->ac, l->name, l->fence, NULL, NULL) : BATON_ECLOSED;
        if (rv == BATON_ESESSION) rv = BATON_ENOTHELD;
        if (rv != 0)
            set_err(b, "baton_unlock '%s': %s", l->name,
                    rv == BATON_ELOST ? baton_async_errmsg(b->ac) : baton_strerror(rv));
        free(l);
        ref_drop(b); /* the lock's; the caller of baton_close holds another */
        return rv;
    }
    bop_init(&op, BOP_UNLOCK);
    op.name = l->name;
    op.fence = l->fence;
    rv = submit(b, &op);
    pthread_cond_destroy(&op.cv);
    /* In baton.h's terms: no answer is BATON_EUNAVAIL (the core keeps
     * trying to release), and a session that ended holds nothing. */
    if (rv == BATON_ETIMEDOUT) rv = BATON_EUNAVAIL;
    if (rv == BATON_ESESSION) rv = BATON_ENOTHELD;
    if (rv != 0) set_err(b, "baton_unlock '%s': %s", l->name, op.errmsg);
    if (op.done) ref_drop(b); /* the call's own reference */
    free(l);
    ref_drop(b); /* the lock's */
    return rv;
}

/* ---- values, reading, watching, elections ------------------------------------------- */

int baton_proclaim(baton_lock_t *l, const void *value, size_t len)
{
    struct bop op;
    baton_t *b;
    int rv;

    if (l == NULL) return BATON_EINVAL;
    b = l->b;
    if (l->multi) {
        set_err(b, "baton_proclaim '%s': a multi-lock has no value", l->name);
        return BATON_EINVAL;
    }
    rv = baton__value_check(value, len);
    if (rv != 0) {
        set_err(b, "baton_proclaim '%s': %s", l->name, baton_strerror(rv));
        return rv;
    }
    if (tls_io == b) {
        set_err(b, "baton_proclaim: called from the lost callback, which must not wait");
        return BATON_EBUSY;
    }
    bop_init(&op, BOP_PROCLAIM);
    op.name = l->name;
    op.fence = l->fence;
    op.pvalue = value;
    op.pvalue_len = len;
    rv = submit(b, &op);
    pthread_cond_destroy(&op.cv);
    /* As baton_unlock: no answer is BATON_EUNAVAIL; a session that ended
     * lost the hold. */
    if (rv == BATON_ETIMEDOUT) rv = BATON_EUNAVAIL;
    if (rv == BATON_ESESSION) rv = BATON_ELOST;
    if (rv != 0) set_err(b, "baton_proclaim '%s': %s", l->name, op.errmsg);
    if (op.done) ref_drop(b);
    return rv;
}

/* The checks every blocking call that waits makes first. */
static int may_wait(baton_t *b, const char *fn)
{
    if (b == NULL) return BATON_EINVAL;
    if (tls_io == b) {
        set_err(b, "%s: called from the lost callback, which must not wait", fn);
        return BATON_EBUSY;
    }
    return 0;
}

int baton_lock_state_get(baton_t *b, const char *name, baton_lock_state **out)
{
    struct bop op;
    int rv;

    if (out == NULL) return BATON_EINVAL;
    *out = NULL;
    if ((rv = may_wait(b, "baton_lock_state_get")) != 0) return rv;
    if (name == NULL || !proto_lock_name_ok(name, strnlen(name, BATON_MAX_NAME + 1))) {
        set_err(b, "baton_lock_state_get: the lock name must be 1..%d bytes", BATON_MAX_NAME);
        return BATON_EINVAL;
    }
    bop_init(&op, BOP_STATE);
    op.name = name;
    rv = submit(b, &op);
    pthread_cond_destroy(&op.cv);
    if (rv == BATON_ETIMEDOUT) rv = BATON_EUNAVAIL;
    if (rv != 0)
        set_err(b, "baton_lock_state_get '%s': %s", name, op.errmsg);
    else
        *out = op.st;
    if (op.done) ref_drop(b);
    return rv;
}

static int watch_common(baton_t *b, const char *key, unsigned flags, uint64_t after, bool observe,
                        baton_watch_t **out, const char *fn)
{
    pthread_condattr_t ca;
    struct baton_watch *w;
    struct bop op;
    int rv;

    if (out == NULL) return BATON_EINVAL;
    *out = NULL;
    if ((rv = may_wait(b, fn)) != 0) return rv;
    if (key == NULL) return BATON_EINVAL;
    w = calloc(1, sizeof *w);
    if (w != NULL && (w->q = malloc(WATCH_QUEUE * sizeof *w->q)) == NULL) {
        free(w);
        w = NULL;
    }
    if (w == NULL) {
        set_err(b, "%s: out of memory", fn);
        return BATON_ENOMEM;
    }
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    w->b = b;
    w->taken = after;
    bop_init(&op, BOP_WATCH);
    op.name = key;
    op.flags = flags;
    op.after = after;
    op.observe = observe;
    op.w = w;
    rv = submit(b, &op); /* returns with the first event queued, or the end */
    pthread_cond_destroy(&op.cv);
    if (rv == BATON_ETIMEDOUT) rv = BATON_EUNAVAIL;
    if (rv != 0) {
        set_err(b, "%s '%s': %s", fn, key, op.errmsg);
        watch_free(w); /* the core has ended it: its end callback ran */
        if (op.done) ref_drop(b);
        return rv;
    }
    *out = w; /* takes over the call's reference */
    return 0;
}

int baton_watch(baton_t *b, const char *key, unsigned flags, uint64_t after, baton_watch_t **out)
{
    return watch_common(b, key, flags, after, false, out, "baton_watch");
}

int baton_watch_next(baton_watch_t *w, int64_t timeout_ms, baton_event **ev)
{
    struct timespec at;
    int rv = BATON_ETIMEDOUT;

    if (ev == NULL) return BATON_EINVAL;
    *ev = NULL;
    if (w == NULL) return BATON_EINVAL;
    if (tls_io == w->b && timeout_ms != 0) {
        /* Only the I/O thread brings events: it cannot wait for them. */
        set_err(w->b, "baton_watch_next: called from the lost callback with a timeout");
        return BATON_EBUSY;
    }
    if (timeout_ms >= 0) {
        clock_gettime(CLOCK_MONOTONIC, &at);
        at.tv_sec += timeout_ms / 1000;
        at.tv_nsec += (timeout_ms % 1000) * 1000000;
        if (at.tv_nsec >= 1000000000) {
            at.tv_sec++;
            at.tv_nsec -= 1000000000;
        }
    }
    pthread_mutex_lock(&w->b->mu);
    w->waiters++;
    while (w->q_n == 0 && w->end == 0 && !w->closing) {
        if (timeout_ms < 0)
            pthread_cond_wait(&w->cv, &w->b->mu);
        else if (pthread_cond_timedwait(&w->cv, &w->b->mu, &at) != 0)
            break;
    }
    if (w->closing) {
        rv = BATON_ECLOSED;
    } else if (w->q_n > 0) {
        baton_event *e = w->q[w->q_head];
        w->q_head = (w->q_head + 1) % WATCH_QUEUE;
        w->q_n--;
        if ((e->kind == BATON_EVENT_CHANGE || e->kind == BATON_EVENT_SYNCED) &&
            e->revision > w->taken)
            w->taken = e->revision;
        *ev = e;
        rv = 0;
    } else if (w->end != 0) {
        rv = w->end;
    }
    if (--w->waiters == 0 && w->closing) pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->b->mu);
    return rv;
}

void baton_watch_close(baton_watch_t *w)
{
    struct bop op;
    baton_t *b;

    if (w == NULL) return;
    b = w->b;
    pthread_mutex_lock(&b->mu);
    w->closing = true;
    pthread_cond_broadcast(&w->cv);
    while (w->waiters > 0) pthread_cond_wait(&w->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
    if (tls_io == b) {
        /* The lost callback cannot wait for the end: it frees w. */
        if (w->aw != NULL && b->ac != NULL && baton_async_unwatch(b->ac, w->aw) == 0) {
            w->free_on_end = true;
            return;
        }
        if (w->aw == NULL) {
            watch_free(w);
            ref_drop(b);
        } else {
            w->free_on_end = true; /* its end is queued already */
        }
        return;
    }
    bop_init(&op, BOP_UNWATCH);
    op.w = w;
    (void)submit(b, &op); /* ECLOSED: the I/O side is gone, and w's end ran */
    pthread_cond_destroy(&op.cv);
    if (op.done) ref_drop(b);
    watch_free(w);
    ref_drop(b); /* the watch's */
}

int baton_campaign(baton_t *b, const char *election, const void *value, size_t len,
                   int64_t wait_ms, baton_lock_t **leader)
{
    baton_lock_args a = {.wait_ms = wait_ms < 0 ? BATON_WAIT_FOREVER : wait_ms,
                         .value = value, .value_len = len};

    return baton_lock_with(b, election, &a, leader);
}

int baton_resign(baton_lock_t *leader)
{
    return baton_unlock(leader);
}

int baton_leader(baton_t *b, const char *election, baton_lock_state **out)
{
    int rv = baton_lock_state_get(b, election, out);

    if (rv == 0 && (*out)->n_holders == 0) {
        baton_lock_state_free(*out);
        *out = NULL;
        set_err(b, "baton_leader '%s': nobody leads", election);
        rv = BATON_ENOTFOUND;
    }
    return rv;
}

int baton_observe(baton_t *b, const char *election, baton_watch_t **out)
{
    return watch_common(b, election, 0, 0, true, out, "baton_observe");
}

uint64_t baton_session_id(const baton_t *b)
{
    return b ? atomic_load(&((baton_t *)b)->session) : 0;
}

void baton_on_lost(baton_t *b, baton_lost_cb *cb, void *data)
{
    if (b == NULL) return;
    pthread_mutex_lock(&b->mu);
    b->lost_cb = cb;
    b->lost_data = data;
    pthread_mutex_unlock(&b->mu);
}

/* ---- connect and close ---------------------------------------------------------------- */

/* Undo a partly built b on the calling thread (no I/O thread running). */
static void abandon(baton_t *b)
{
    io_shutdown(b);
    uv_run(&b->loop, UV_RUN_DEFAULT);
    baton__last_loop_close_rv = uv_loop_close(&b->loop);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

int baton_connect(const baton_opts *o, baton_t **out)
{
    sigset_t all, old;
    struct bop op;
    baton_t *b;
    int rv;

    connect_err[0] = '\0';
    if (out == NULL) return BATON_EINVAL;
    *out = NULL;
    if (o == NULL || o->endpoints == NULL) {
        snprintf(connect_err, sizeof connect_err, "no endpoints given");
        return BATON_EINVAL;
    }
    b = calloc(1, sizeof *b);
    if (b == NULL) goto err_nomem;
    b->uid = atomic_fetch_add(&next_uid, 1) + 1;
    b->refs = 1;
    b->close_ms = o->op_timeout_ms && o->op_timeout_ms < CLOSE_BOUND_MS ? o->op_timeout_ms
                                                                      : CLOSE_BOUND_MS;
    if (pthread_mutex_init(&b->mu, NULL) != 0) goto err_free;
    if (uv_loop_init(&b->loop) != 0) goto err_mutex;
    uv_async_init(&b->loop, &b->wake, wake_cb);
    b->wake.data = b;
    uv_timer_init(&b->loop, &b->close_timer);
    b->close_timer.data = b;

    rv = baton_async_new(o, &b->ac);
    if (rv != 0) {
        snprintf(connect_err, sizeof connect_err, "%s%s", rv == BATON_EINVAL ? "bad options: " : "",
                 baton_async_new_errmsg());
        abandon(b);
        return rv;
    }
    baton_async_on_lost(b->ac, io_lost_cb, b);
    baton_async_on_session(b->ac, io_session_cb, b);
    rv = baton_uv_attach(b->ac, &b->loop);
    bop_init(&op, BOP_OPEN);
    op.b = b;
    if (rv == 0 && !o->read_only) rv = baton_async_open(b->ac, open_cb, &op);
    if (rv != 0) {
        snprintf(connect_err, sizeof connect_err, "%s", baton_strerror(rv));
        abandon(b); /* may run the open callback with ECANCELED: op is still ours */
        pthread_cond_destroy(&op.cv);
        return rv;
    }
    /* The I/O thread takes no signals: they belong to the application. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rv = pthread_create(&b->thread, NULL, io_main, b);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rv != 0) {
        abandon(b); /* runs the open callback with ECANCELED: op is still ours */
        pthread_cond_destroy(&op.cv);
        snprintf(connect_err, sizeof connect_err, "cannot start the I/O thread");
        return BATON_ENOMEM;
    }
    if (o->read_only) { /* a reader: no session to wait for */
        pthread_cond_destroy(&op.cv);
        *out = b;
        return 0;
    }
    pthread_mutex_lock(&b->mu);
    while (!op.done) pthread_cond_wait(&op.cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
    pthread_cond_destroy(&op.cv);
    if (op.status != 0) {
        /* open_cb already shut the I/O side down; the thread is ending. */
        snprintf(connect_err, sizeof connect_err, "%s", op.errmsg);
        pthread_join(b->thread, NULL);
        baton__last_loop_close_rv = uv_loop_close(&b->loop);
        pthread_mutex_destroy(&b->mu);
        free(b);
        return op.status;
    }
    atomic_store(&b->session, op.value);
    *out = b;
    return 0;

err_mutex:
    pthread_mutex_destroy(&b->mu);
err_free:
    free(b);
err_nomem:
    snprintf(connect_err, sizeof connect_err, "out of memory");
    return BATON_ENOMEM;
}

void baton_close(baton_t *b)
{
    struct bop op;

    if (b == NULL || tls_io == b) return; /* see baton.h: not from the lost callback */
    bop_init(&op, BOP_CLOSE);
    (void)submit(b, &op); /* a close is always queued */
    pthread_cond_destroy(&op.cv);
    pthread_join(b->thread, NULL);
    baton__last_loop_close_rv = uv_loop_close(&b->loop);
    ref_drop(b); /* the close call's */
    ref_drop(b); /* the caller's */
}
