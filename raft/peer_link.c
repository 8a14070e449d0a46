/*
 * peer_link.c -- one raft connection under TLS and its bridge to raft. See
 * peer_link.h.
 *
 * Bytes flow:
 *
 *   peer --TCP--> tcp_read -> tls_recv -> `plain` -> (owner, until bridged)
 *                                               \--> local --> raft's end
 *   raft's end --> local_read -> tls_send -> tls_out -> TCP --> peer
 *
 * Every buffer handed to uv_write is a heap copy owned by its write request
 * (struct link_write), freed in its callback, so a link can close with
 * writes in flight: libuv cancels them before the handle's close callback,
 * and the link is freed only after that.
 */
#include "raft/peer_link.h"

#include <arpa/inet.h>
#include <errno.h>
#include <raft.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "baton/baton_defs.h"
#include "proto/addr.h"

struct link_write {
    uv_write_t req; /* first: the callback gets it back */
    struct peer_link *l;
    uint8_t *data;
};

/* One of the link's handles (or its dial) is done; the last one ends it. */
static void handle_done(struct peer_link *l)
{
    if (--l->handles > 0) return;
    tls_free(l->tls);
    l->tls = NULL;
    buf_free(&l->plain);
    buf_free(&l->out);
    l->ev->closed(l);
}

static void handle_closed(uv_handle_t *h)
{
    handle_done(h->data);
}

void peer_link_close(struct peer_link *l, const char *fmt, ...)
{
    va_list ap;

    if (l->closing) return;
    l->closing = true;
    va_start(ap, fmt);
    vsnprintf(l->why, sizeof l->why, fmt, ap);
    va_end(ap);
    if (l->dialing) peer_dial_cancel(&l->dial);
    uv_close((uv_handle_t *)&l->tcp, handle_closed);
    uv_close((uv_handle_t *)&l->deadline, handle_closed);
    if (l->local_open) uv_close((uv_handle_t *)&l->local, handle_closed);
}

static size_t queued(const void *stream)
{
    return uv_stream_get_write_queue_size((const uv_stream_t *)stream);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b);
static void tcp_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b);
static void local_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b);

/* A write drained: read again from a side paused for its peer's queue. */
static void resume(struct peer_link *l)
{
    if (l->local_paused && queued(&l->tcp) < PEER_LINK_HIGH_WATER / 4) {
        l->local_paused = false;
        uv_read_start((uv_stream_t *)&l->local, on_alloc, local_read);
    }
    if (l->tcp_paused && queued(&l->local) < PEER_LINK_HIGH_WATER / 4) {
        l->tcp_paused = false;
        uv_read_start((uv_stream_t *)&l->tcp, on_alloc, tcp_read);
    }
}

static void written(uv_write_t *req, int status)
{
    struct link_write *w = (struct link_write *)req;
    struct peer_link *l = w->l;

    free(w->data);
    free(w);
    if (l->closing) return;
    if (status < 0) {
        peer_link_close(l, "write failed: %s", uv_strerror(status));
        return;
    }
    resume(l);
}

/*
 * Write b's bytes to s, taking them from b (b is left empty either way).
 * The common case, a socket with room and nothing queued, is one
 * uv_try_write that leaves b's memory with b for the next message; only
 * what does not fit goes to uv_write, which takes b's memory (struct buf's
 * memory comes from malloc, so the request frees it). uv_write for every
 * message would cost a malloc and libuv's re-arming of the poll watcher
 * (epoll_ctl) per message, on each hop of every raft message.
 */
static int write_buf(struct peer_link *l, void *s, struct buf *b)
{
    struct link_write *w;
    uv_buf_t ub;
    int rv;

    if (b->len == 0) return 0;
    if (queued(s) == 0) {
        ub = uv_buf_init((char *)b->data, (unsigned)b->len);
        rv = uv_try_write(s, &ub, 1);
        if (rv >= 0 && (size_t)rv == b->len) {
            buf_reset(b);
            return 0;
        }
        if (rv >= 0)
            buf_consume(b, (size_t)rv);
        else if (rv != UV_EAGAIN)
            return rv;
    }
    w = malloc(sizeof *w);
    if (w == NULL) {
        buf_free(b);
        return BATON_ENOMEM;
    }
    w->l = l;
    w->data = b->data;
    ub = uv_buf_init((char *)b->data, (unsigned)b->len);
    buf_init(b);
    rv = uv_write(&w->req, s, &ub, 1, written);
    if (rv != 0) {
        free(w->data);
        free(w);
    }
    return rv;
}

/* Send what the TLS endpoint has for the peer. */
static int flush_tls(struct peer_link *l)
{
    int rv = tls_out(l->tls, &l->out);

    if (rv != 0) return rv;
    return write_buf(l, &l->tcp, &l->out);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    struct peer_link *l = h->data;

    (void)hint;
    *b = uv_buf_init(l->rbuf, PEER_LINK_READ_SIZE);
}

/* Decrypted bytes to raft's end of the bridge; stop reading the peer while
 * raft is behind. */
static void to_raft(struct peer_link *l)
{
    if (l->plain.len == 0) return;
    if (write_buf(l, &l->local, &l->plain) != 0) {
        peer_link_close(l, "writing to raft's end of the bridge failed");
        return;
    }
    if (!l->tcp_paused && queued(&l->local) > PEER_LINK_HIGH_WATER) {
        uv_read_stop((uv_stream_t *)&l->tcp);
        l->tcp_paused = true;
    }
}

/* Plaintext to the owner until the bridge is open, then to raft. */
static void deliver(struct peer_link *l)
{
    if (l->plain.len == 0) return;
    if (!l->bridged) {
        l->ev->plain(l, &l->plain);
        if (l->closing || !l->bridged) return;
    }
    to_raft(l);
}

static void tcp_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct peer_link *l = s->data;
    int rv, frv;

    (void)b;
    if (l->closing || n == 0) return;
    if (n < 0) {
        l->peer_ended = n == UV_EOF || n == UV_ECONNRESET;
        peer_link_close(l, "%s",
                        n == UV_EOF ? "the peer closed the connection" : uv_strerror((int)n));
        return;
    }
    /* A plaintext peer (libraft's own TCP handshake, say) gets a clear
     * reason in the log rather than OpenSSL's "wrong version number". */
    if (!l->sniffed) {
        l->sniffed = true;
        if (tls_sniff(l->rbuf, (size_t)n) == 0) {
            peer_link_close(l, "not TLS: the peer speaks plaintext (is --peer-cert set on "
                               "every node?)");
            return;
        }
    }
    rv = tls_recv(l->tls, l->rbuf, (size_t)n, &l->plain);
    frv = flush_tls(l); /* even after an error: an alert may be waiting */
    if (rv == 0) rv = frv;
    if (rv != 0) {
        l->peer_ended = rv == BATON_ECLOSED;
        peer_link_close(l, "%s", rv == BATON_ECLOSED ? "the peer closed the connection"
                                 : rv == BATON_ENOMEM ? "out of memory"
                                                      : tls_errmsg(l->tls));
        return;
    }
    if (!l->up && tls_established(l->tls)) {
        l->up = true;
        l->ev->up(l);
        if (l->closing) return;
    }
    deliver(l);
}

static void local_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct peer_link *l = s->data;
    int rv;

    (void)b;
    if (l->closing || n == 0) return;
    if (n < 0) {
        peer_link_close(l, "%s", n == UV_EOF ? "raft closed the connection" : uv_strerror((int)n));
        return;
    }
    rv = tls_send(l->tls, l->rbuf, (size_t)n);
    if (rv == 0) rv = flush_tls(l);
    if (rv != 0) {
        peer_link_close(l, "sending to the peer failed: %s",
                        rv == BATON_ENOMEM ? "out of memory" : tls_errmsg(l->tls));
        return;
    }
    if (!l->local_paused && queued(&l->tcp) > PEER_LINK_HIGH_WATER) {
        uv_read_stop((uv_stream_t *)&l->local);
        l->local_paused = true;
    }
}

static void deadline_cb(uv_timer_t *t)
{
    struct peer_link *l = t->data;

    peer_link_close(l, "the handshake did not finish in time");
}

void peer_link_init(struct peer_link *l, uv_loop_t *loop, const struct peer_link_events *ev,
                    char *rbuf)
{
    l->loop = loop;
    l->ev = ev;
    l->rbuf = rbuf;
    uv_tcp_init(loop, &l->tcp);
    uv_timer_init(loop, &l->deadline);
    l->tcp.data = l;
    l->deadline.data = l;
    l->dial.data = l;
    l->handles = 2;
}

/* The TCP connection is up: start the TLS handshake. */
static void start_tls(struct peer_link *l, tls_ctx *ctx)
{
    int rv;

    uv_tcp_nodelay(&l->tcp, 1);
    l->tls = tls_new(ctx, NULL);
    if (l->tls == NULL) {
        peer_link_close(l, "out of memory for a TLS endpoint");
        return;
    }
    if ((rv = flush_tls(l)) != 0 ||
        (rv = uv_read_start((uv_stream_t *)&l->tcp, on_alloc, tcp_read)) != 0)
        peer_link_close(l, "cannot start the handshake: %s",
                         rv == BATON_ENOMEM ? "out of memory" : uv_strerror(rv));
}

void peer_link_accept(struct peer_link *l, uv_stream_t *server, tls_ctx *ctx,
                      unsigned timeout_ms)
{
    struct sockaddr_storage a;
    int len = sizeof a, rv;

    uv_timer_start(&l->deadline, deadline_cb, timeout_ms, 0);
    if ((rv = uv_accept(server, (uv_stream_t *)&l->tcp)) != 0) {
        peer_link_close(l, "accept failed: %s", uv_strerror(rv));
        return;
    }
    if (uv_tcp_getpeername(&l->tcp, (struct sockaddr *)&a, &len) == 0)
        proto_addr_format((struct sockaddr *)&a, l->peer, sizeof l->peer);
    start_tls(l, ctx);
}

/* The dial ended: take over its socket (a dup of it in the link's own
 * handle, as the dial's handle is its own) and start TLS. */
static void on_dialed(struct peer_dial *d, uv_tcp_t *tcp, int status)
{
    struct peer_link *l = d->data;
    int fd = -1, rv = status;
    uv_os_fd_t os;

    l->dialing = false;
    if (rv == 0 && !l->closing) {
        rv = uv_fileno((uv_handle_t *)tcp, &os);
        if (rv == 0) fd = dup(os);
        if (rv == 0 && fd < 0) rv = uv_translate_sys_error(errno);
        if (rv == 0 && (rv = uv_tcp_open(&l->tcp, fd)) != 0) close(fd);
    }
    if (tcp != NULL) peer_tcp_handle_close(tcp);
    if (l->closing) {
        handle_done(l); /* may end the link */
        return;
    }
    handle_done(l); /* the dial's count: the link's own handles remain */
    if (rv != 0) {
        l->quiet = true;
        peer_link_close(l, "connect: %s", uv_strerror(rv));
        return;
    }
    start_tls(l, l->ctx);
}

void peer_link_connect(struct peer_link *l, const char *address, tls_ctx *ctx,
                       unsigned timeout_ms)
{
    int rv;

    l->ctx = ctx;
    uv_timer_start(&l->deadline, deadline_cb, timeout_ms, 0);
    rv = peer_dial_start(&l->dial, l->loop, address, on_dialed);
    if (rv != 0) {
        l->quiet = true;
        peer_link_close(l, "connect: %s", uv_strerror(rv));
        return;
    }
    l->dialing = true;
    l->handles++;
}

int peer_link_send(struct peer_link *l, const void *data, size_t n)
{
    int rv = tls_send(l->tls, data, n);

    return rv != 0 ? rv : flush_tls(l);
}

/* Close callback of raft's end when the bridge could not be opened. */
static void free_raft_end(uv_handle_t *h)
{
    raft_free(h);
}

int peer_link_bridge(struct peer_link *l, uv_stream_t **raft_end)
{
    uv_pipe_t *p;
    int fds[2], rv;

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return -errno;
    p = raft_malloc(sizeof *p);
    if (p == NULL) {
        close(fds[0]);
        close(fds[1]);
        return BATON_ENOMEM;
    }
    uv_pipe_init(l->loop, &l->local, 0);
    l->local.data = l;
    l->local_open = true;
    l->handles++;
    if ((rv = uv_pipe_open(&l->local, fds[0])) != 0) {
        close(fds[0]);
        close(fds[1]);
        raft_free(p);
        return rv;
    }
    uv_pipe_init(l->loop, p, 0);
    if ((rv = uv_pipe_open(p, fds[1])) != 0) {
        close(fds[1]);
        uv_close((uv_handle_t *)p, free_raft_end);
        return rv;
    }
    if ((rv = uv_read_start((uv_stream_t *)&l->local, on_alloc, local_read)) != 0) {
        uv_close((uv_handle_t *)p, free_raft_end);
        return rv;
    }
    uv_timer_stop(&l->deadline);
    l->bridged = true;
    *raft_end = (uv_stream_t *)p;
    to_raft(l);
    return 0;
}

const char *peer_link_cn(const struct peer_link *l)
{
    return l->tls != NULL ? tls_peer_cn(l->tls) : "";
}
