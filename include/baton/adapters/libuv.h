/*
 * adapters/libuv.h -- run a baton_async_t on a libuv loop. Header-only.
 *
 *     uv_loop_t *loop = uv_default_loop();
 *     baton_async_t *ac;
 *     baton_async_new(&opts, &ac);
 *     baton_uv_attach(ac, loop);          // before baton_async_open
 *     baton_async_open(ac, on_open, NULL);
 *     uv_run(loop, UV_RUN_DEFAULT);
 *
 * Host names are looked up with uv_getaddrinfo (libuv's thread pool), so
 * the loop never blocks on DNS.
 * The adapter holds one uv_timer_t, one uv_idle_t and, while the core has
 * a socket, one uv_poll_t on it. The core opens a new socket on every reconnect, so a
 * poll handle lives only as long as its socket: the adapter closes it when
 * the core announces close_fd and makes a new one for the next socket.
 * Output queued on a connected socket is written from the idle handle at
 * the end of the loop turn (see baton_uv__flush_cb).
 * After baton_async_free the adapter closes its handles and frees itself in
 * the last close callback, so run the loop until it has no more handles
 * (uv_run returns) before uv_loop_close.
 *
 * Everything runs on the loop's thread: call the baton_async_* functions
 * only from that thread (for example from baton callbacks or other handles'
 * callbacks of the same loop).
 *
 * Like <uv.h> itself, this header needs the POSIX declarations: in a strict
 * ISO C mode (-std=c11) define _POSIX_C_SOURCE to 200809L (or _GNU_SOURCE)
 * before the first #include; the compilers' default gnu modes need nothing.
 * Every function here is static: libbaton.so exports none of them.
 */
#ifndef BATON_ADAPTERS_LIBUV_H
#define BATON_ADAPTERS_LIBUV_H

#include <stdlib.h>
#include <string.h>
#include <uv.h> /* and, through it, <netdb.h> */

#include "../baton_async.h"

struct baton_uv;

/* A poll handle for one socket of the core. */
struct baton_uv_poll {
    uv_poll_t h;
    struct baton_uv *a;
    int fd;
    int events;     /* UV_READABLE | UV_WRITABLE being watched */
    int want_write; /* the core has output queued (add_write .. del_write) */
    int busy;       /* in use or closing (a slot of struct baton_uv) */
    int heap;       /* calloc'd: every slot was busy */
};

/*
 * Poll handles made in baton_uv_attach, with the adapter. A hook cannot
 * report an error to the core, so the hooks take a handle from these
 * instead of allocating one: a socket's handle closes in the loop turn
 * after the core let go of it, and the core watches one socket at a time,
 * so two are busy at most but for reconnects in quick succession; only
 * when all are busy is one allocated (and if that fails, the core times
 * the connection attempt out and tries again).
 */
#define BATON_UV_POLLS 4

/* The adapter; freed by itself once cleaned up and every handle closed. */
struct baton_uv {
    uv_loop_t *loop;
    baton_async_t *ac;          /* NULL once the core called cleanup */
    uv_timer_t timer;
    uv_idle_t flush;            /* writes queued output at the end of a loop turn */
    struct baton_uv_poll *poll; /* the current socket's, or NULL */
    struct baton_uv_poll polls[BATON_UV_POLLS];
    int handles;                /* handles not yet through their close callback */
    int cleaned;
};

static inline void baton_uv__maybe_free(struct baton_uv *a)
{
    if (a->cleaned && a->handles == 0) free(a);
}

static inline void baton_uv__poll_closed(uv_handle_t *h)
{
    struct baton_uv_poll *p = (struct baton_uv_poll *)h->data;
    struct baton_uv *a = p->a;

    if (p->heap)
        free(p);
    else
        p->busy = 0;
    a->handles--;
    baton_uv__maybe_free(a);
}

static inline void baton_uv__handle_closed(uv_handle_t *h)
{
    struct baton_uv *a = (struct baton_uv *)h->data;

    a->handles--;
    baton_uv__maybe_free(a);
}

/*
 * The socket is ready. On a poll error (libuv reports POLLERR, e.g. a
 * refused connect or a reset, as UV_EBADF and stops the handle) both
 * handlers run, so that the core finds the error itself through read() or
 * SO_ERROR; if the core keeps the socket, watching resumes. The read
 * handler may free the context or replace the socket; then nothing more
 * may be done for this (old) poll handle.
 */
static inline void baton_uv__poll_cb(uv_poll_t *h, int status, int events)
{
    struct baton_uv_poll *p = (struct baton_uv_poll *)h->data;
    struct baton_uv *a = p->a;

    if (status < 0) events = UV_READABLE | UV_WRITABLE;
    if ((events & UV_READABLE) && a->ac && a->poll == p) baton_async_handle_read(a->ac);
    if ((events & UV_WRITABLE) && a->ac && a->poll == p) baton_async_handle_write(a->ac);
    if (status < 0 && a->ac && a->poll == p && p->events)
        uv_poll_start(&p->h, p->events, baton_uv__poll_cb);
}

static inline void baton_uv__timer_cb(uv_timer_t *t)
{
    struct baton_uv *a = (struct baton_uv *)t->data;

    if (a->ac) baton_async_handle_timeout(a->ac);
}

/* Stop watching the current socket for good and close its poll handle. */
static inline void baton_uv__poll_close(struct baton_uv *a)
{
    struct baton_uv_poll *p = a->poll;

    if (p == NULL) return;
    a->poll = NULL;
    uv_poll_stop(&p->h);
    uv_close((uv_handle_t *)&p->h, baton_uv__poll_closed);
}

/* The poll handle for fd, set up on first use (BATON_UV_POLLS). NULL if
 * libuv refuses the fd; the core then times the connection attempt out and
 * tries again. */
static inline struct baton_uv_poll *baton_uv__poll_get(struct baton_uv *a, int fd)
{
    struct baton_uv_poll *p = a->poll;
    int i = 0;

    if (p && p->fd == fd) return p;
    baton_uv__poll_close(a);
    while (i < BATON_UV_POLLS && a->polls[i].busy) i++;
    if (i < BATON_UV_POLLS) {
        p = &a->polls[i];
        memset(p, 0, sizeof *p);
    } else {
        p = (struct baton_uv_poll *)calloc(1, sizeof *p);
        if (p == NULL) return NULL;
        p->heap = 1;
    }
    if (uv_poll_init(a->loop, &p->h, fd) != 0) {
        if (p->heap) free(p);
        return NULL;
    }
    p->busy = 1;
    p->h.data = p;
    p->a = a;
    p->fd = fd;
    a->handles++;
    a->poll = p;
    return p;
}

static inline void baton_uv__watch(void *data, int fd, int ev, int on)
{
    struct baton_uv_poll *p = baton_uv__poll_get((struct baton_uv *)data, fd);
    int events;

    if (p == NULL) return;
    events = on ? (p->events | ev) : (p->events & ~ev);
    if (events == p->events) return;
    p->events = events;
    if (events)
        uv_poll_start(&p->h, events, baton_uv__poll_cb);
    else
        uv_poll_stop(&p->h);
}

static inline void baton_uv__add_read(void *data, int fd)
{
    baton_uv__watch(data, fd, UV_READABLE, 1);
}

static inline void baton_uv__del_read(void *data, int fd)
{
    baton_uv__watch(data, fd, UV_READABLE, 0);
}

/*
 * The end of the loop turn in which the core queued output on a connected
 * socket: write it now, in one send for everything the turn queued. Only
 * if the socket is full (the core still wants to write afterwards) does the
 * adapter watch it for writability. Doing this instead of watching at once
 * saves, per request, a poll wakeup and two epoll_ctl calls.
 */
static inline void baton_uv__flush_cb(uv_idle_t *h)
{
    struct baton_uv *a = (struct baton_uv *)h->data;

    uv_idle_stop(&a->flush);
    if (a->ac && a->poll && a->poll->want_write) baton_async_handle_write(a->ac);
    /* The core may have failed the socket (a->poll gone or replaced). */
    if (a->ac && a->poll && a->poll->want_write)
        baton_uv__watch(a, a->poll->fd, UV_WRITABLE, 1);
}

/*
 * While the socket is connecting (not yet watched for reading), writability
 * is what tells the core that the connect finished: watch it at once.
 * Afterwards add_write means "output is queued": defer to flush_cb.
 */
static inline void baton_uv__add_write(void *data, int fd)
{
    struct baton_uv *a = (struct baton_uv *)data;
    struct baton_uv_poll *p = baton_uv__poll_get(a, fd);

    if (p == NULL) return;
    p->want_write = 1;
    if (p->events & UV_READABLE)
        uv_idle_start(&a->flush, baton_uv__flush_cb);
    else
        baton_uv__watch(data, fd, UV_WRITABLE, 1);
}

static inline void baton_uv__del_write(void *data, int fd)
{
    struct baton_uv *a = (struct baton_uv *)data;

    if (a->poll && a->poll->fd == fd) a->poll->want_write = 0;
    baton_uv__watch(data, fd, UV_WRITABLE, 0);
}

static inline void baton_uv__close_fd(void *data, int fd)
{
    struct baton_uv *a = (struct baton_uv *)data;

    if (a->poll && a->poll->fd == fd) baton_uv__poll_close(a);
}

static inline void baton_uv__timer_start(void *data, uint64_t ms)
{
    struct baton_uv *a = (struct baton_uv *)data;

    uv_timer_start(&a->timer, baton_uv__timer_cb, ms, 0);
}

static inline void baton_uv__timer_stop(void *data)
{
    struct baton_uv *a = (struct baton_uv *)data;

    uv_timer_stop(&a->timer);
}

/* The context is being freed: close every handle; the last close callback
 * frees the adapter. */
static inline void baton_uv__cleanup(void *data)
{
    struct baton_uv *a = (struct baton_uv *)data;

    a->ac = NULL;
    a->cleaned = 1;
    baton_uv__poll_close(a);
    uv_close((uv_handle_t *)&a->timer, baton_uv__handle_closed);
    uv_close((uv_handle_t *)&a->flush, baton_uv__handle_closed);
}

/* ---- the resolver: uv_getaddrinfo on the loop (libuv's thread pool) ---- */

/* One lookup; freed in its libuv callback, so a cancelled one outlives the
 * context and the adapter safely (run the loop until uv_run returns). */
struct baton_uv_lookup {
    uv_getaddrinfo_t req;
    baton_async_resolved_cb *cb;
    void *arg;
    int canceled;
};

static inline void baton_uv__resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    struct baton_uv_lookup *l = (struct baton_uv_lookup *)req->data;

    if (!l->canceled)
        l->cb(l->arg, status == 0 ? res : NULL, status == 0 ? NULL : uv_strerror(status));
    uv_freeaddrinfo(res);
    free(l);
}

static inline void *baton_uv__resolve(void *data, const char *host, const char *port,
                                      baton_async_resolved_cb *cb, void *arg)
{
    struct baton_uv *a = (struct baton_uv *)data;
    struct baton_uv_lookup *l = (struct baton_uv_lookup *)calloc(1, sizeof *l);
    struct addrinfo hints;

    if (l == NULL) return NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    l->req.data = l;
    l->cb = cb;
    l->arg = arg;
    if (uv_getaddrinfo(a->loop, &l->req, baton_uv__resolved, host, port, &hints) != 0) {
        free(l);
        return NULL;
    }
    return l;
}

static inline void baton_uv__resolve_cancel(void *data, void *lookup)
{
    struct baton_uv_lookup *l = (struct baton_uv_lookup *)lookup;

    (void)data;
    l->canceled = 1;
    (void)uv_cancel((uv_req_t *)&l->req); /* the callback still runs, and frees l */
}

/*
 * Attach ac to loop (once, before baton_async_open), with a resolver of
 * host names that does not block the loop (uv_getaddrinfo).
 * @return 0, BATON_ENOMEM, or baton_async_attach's errors (BATON_EBUSY if
 *         ac already has an adapter). On error nothing stays behind (the
 *         timer handle is closed; run the loop to finish closing it).
 */
static inline int baton_uv_attach(baton_async_t *ac, uv_loop_t *loop)
{
    struct baton_uv *a;
    baton_async_hooks h;
    baton_async_resolver r;
    int rv;

    if (ac == NULL || loop == NULL) return BATON_EINVAL;
    a = (struct baton_uv *)calloc(1, sizeof *a);
    if (a == NULL) return BATON_ENOMEM;
    a->loop = loop;
    a->ac = ac;
    uv_timer_init(loop, &a->timer);
    a->timer.data = a;
    uv_idle_init(loop, &a->flush);
    a->flush.data = a;
    a->handles = 2;
    h.data = a;
    h.add_read = baton_uv__add_read;
    h.del_read = baton_uv__del_read;
    h.add_write = baton_uv__add_write;
    h.del_write = baton_uv__del_write;
    h.close_fd = baton_uv__close_fd;
    h.timer_start = baton_uv__timer_start;
    h.timer_stop = baton_uv__timer_stop;
    h.cleanup = baton_uv__cleanup;
    rv = baton_async_attach(ac, &h);
    if (rv != 0) {
        baton_uv__cleanup(a);
        return rv;
    }
    r.data = a;
    r.start = baton_uv__resolve;
    r.cancel = baton_uv__resolve_cancel;
    (void)baton_async_set_resolver(ac, &r); /* cannot fail: attach succeeded before open */
    return 0;
}

#endif /* BATON_ADAPTERS_LIBUV_H */
