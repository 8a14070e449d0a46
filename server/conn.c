/*
 * conn.c -- a client connection's output and lifetime. (Accepting and
 * reading connections is listen.c.)
 *
 * Replies are appended to the connection's `out` buffer and written with one
 * uv_write per connection per loop turn (conn_flush_all, from the check
 * handler), as Redis flushes its replies in beforeSleep. A malformed frame
 * gets an ERROR and the connection is closed once that is written; nothing
 * else is affected.
 *
 * Unread replies are bounded twice (docs/operations.md, "Limits"): a
 * connection whose client leaves more than CONN_MAX_OUT unread is closed,
 * and so, while the unread replies of all connections together pass
 * --max-unread-mb, are the connections holding the most, largest first
 * (Redis's client-output-buffer-limit, with a bound on the sum as well:
 * without it, every client that stops reading could hold CONN_MAX_OUT).
 * srv->unread counts every reply byte the server holds for its clients --
 * this turn's (`out`), those handed to the socket and not yet taken
 * (`writing`), and on TLS the sealed ones (`net`) -- and is brought up to
 * date wherever those change. Such a connection is not destroyed where the
 * bound is found broken, inside conn_send, whose caller may be walking a
 * list the destruction would change (watch.c's watchers, say): it is
 * "shed" -- its output dropped, nothing more queued for it, its bytes no
 * longer counted -- and destroyed at the end of the loop turn.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/server_int.h"

static void conn_closed_cb(uv_handle_t *h)
{
    struct conn *c = h->data;
    buf_free(&c->in);
    buf_free(&c->out);
    buf_free(&c->writing);
    buf_free(&c->net);
    tls_free(c->tls);
    free(c);
}

/* c no longer counts as a connection waiting to authenticate. */
static void unauth_unlink(struct conn *c)
{
    struct server *srv = c->srv;

    if (c->unauth_prev == NULL && srv->unauth_head != c) return; /* not linked */
    if (c->unauth_prev) c->unauth_prev->unauth_next = c->unauth_next;
    else srv->unauth_head = c->unauth_next;
    if (c->unauth_next) c->unauth_next->unauth_prev = c->unauth_prev;
    else srv->unauth_tail = c->unauth_prev;
    c->unauth_prev = c->unauth_next = NULL;
    srv->n_unauth--;
}

void conn_set_authenticated(struct conn *c)
{
    c->hello = true;
    unauth_unlink(c);
}

/* Bring srv->unread up to date with c's unread replies (none once c is
 * shed or closed: its buffers are about to go). */
static void unread_account(struct conn *c)
{
    size_t now = c->closed || c->shed ? 0 : c->out.len + c->writing.len + c->net.len;

    c->srv->unread = c->srv->unread - c->unread + now;
    c->unread = now;
}

/* An emptied output buffer gives back memory beyond CONN_OUT_KEEP: a
 * burst of replies is not held for the rest of the connection's life. */
static void out_trim(struct buf *b)
{
    if (b->len == 0 && b->cap > CONN_OUT_KEEP) buf_free(b);
}

/* Close now: drop from the map and the dirty list, and free in close_cb. */
/*
 * Read and drop what the peer sent that nobody read (at most 64 KiB, not
 * waiting): closing a socket that still holds unread input sends a reset
 * instead of an orderly end, and a reset can reach the peer before our
 * last reply -- the ERROR that says why it is closed (a HELLO that arrived
 * while the connection waited to be accepted, refused at --max-conns).
 */
static void drain_unread(struct conn *c)
{
    uv_os_fd_t fd;
    char scratch[4096];

    if (uv_fileno((uv_handle_t *)&c->tcp, &fd) != 0) return;
    for (int i = 0; i < 16; i++)
        if (recv(fd, scratch, sizeof scratch, MSG_DONTWAIT) <= 0) break;
}

void conn_destroy(struct conn *c)
{
    struct conn **pp;

    if (c->closed) return;
    c->closed = true;
    unread_account(c);
    c->srv->input -= c->in_held; /* input.c's count: the buffer is about to go */
    c->srv->input_freed += c->in_held;
    c->in_held = 0;
    unauth_unlink(c);
    u64map_del(&c->srv->conns, c->id);
    if ((c->n_watches > 0 || c->n_watches2 > 0) && c->srv->conn_gone != NULL)
        c->srv->conn_gone(c->srv, c);
    for (pp = &c->srv->dirty; *pp; pp = &(*pp)->next_dirty)
        if (*pp == c) {
            *pp = c->next_dirty;
            break;
        }
    log_debug("conn %llu (%s) closed", (unsigned long long)c->id, c->peer);
    drain_unread(c);
    uv_close((uv_handle_t *)&c->tcp, conn_closed_cb);
}

struct conn *conn_new(struct server *srv)
{
    struct conn *c = xcalloc(1, sizeof *c);

    c->srv = srv;
    c->id = ++srv->next_conn_id;
    c->tcp.data = c;
    c->accepted_at = uv_now(srv->loop);
    c->unauth_prev = srv->unauth_tail;
    if (srv->unauth_tail) srv->unauth_tail->unauth_next = c;
    else srv->unauth_head = c;
    srv->unauth_tail = c;
    srv->n_unauth++;
    xu64map_put(&srv->conns, c->id, c);
    return c;
}

struct conn *conn_get(struct server *srv, uint64_t id)
{
    struct conn *c = u64map_get(&srv->conns, id);
    return c && !c->closing && !c->closed ? c : NULL;
}

static void mark_dirty(struct conn *c)
{
    if (c->dirty || c->closed) return;
    c->dirty = true;
    c->next_dirty = c->srv->dirty;
    c->srv->dirty = c;
}

void conn_want_flush(struct conn *c)
{
    mark_dirty(c);
}

/* Drop c for the replies it does not read: its output goes, nothing more
 * is queued for it, and conn_flush destroys it at the end of this turn. */
static void conn_shed(struct conn *c)
{
    metrics_inc_label(M_REFUSALS, REF_UNREAD);
    c->shed = true;
    unread_account(c);
    buf_free(&c->out);
    buf_free(&c->net);
    if (!c->write_pending) buf_free(&c->writing); /* else uv_close cancels the write */
    if (!c->closing) {
        c->closing = true;
        unauth_unlink(c);
        uv_read_stop((uv_stream_t *)&c->tcp);
    }
    mark_dirty(c);
}

static int by_unread_desc(const void *a, const void *b)
{
    const struct conn *x = *(struct conn *const *)a, *y = *(struct conn *const *)b;

    return x->unread < y->unread ? 1 : x->unread > y->unread ? -1 : 0;
}

/*
 * The unread replies of all connections passed --max-unread-mb: shed the
 * connections that hold the most, largest first -- the clients that read
 * slowest or not at all -- until the total is back under 7/8 of the bound,
 * so that the next reply does not start another walk over every
 * connection.
 */
static void unread_shed(struct server *srv)
{
    size_t limit = (size_t)srv->cfg.max_unread_mb << 20, target = limit - limit / 8;
    struct conn **v = xmalloc((srv->conns.n + 1) * sizeof *v);
    size_t n = 0, closed = 0;

    for (size_t i = 0; i < srv->conns.cap; i++) {
        struct conn *c = srv->conns.slots[i].val;
        if (srv->conns.slots[i].key != 0 && c->unread > 0 && !c->shed) v[n++] = c;
    }
    qsort(v, n, sizeof *v, by_unread_desc);
    for (size_t i = 0; i < n && srv->unread > target; i++, closed++) {
        log_warn("unread replies: %.1f MiB in all connections, over --max-unread-mb %u: "
                 "closing conn %llu (%s), which holds the most (%.1f MiB)",
                 (double)srv->unread / MIB, srv->cfg.max_unread_mb,
                 (unsigned long long)v[i]->id, v[i]->peer, (double)v[i]->unread / MIB);
        conn_shed(v[i]);
    }
    log_warn("unread replies: %.1f MiB in all connections after closing %zu",
             (double)srv->unread / MIB, closed);
    free(v);
}

/* Is anything of c's output not yet handed to the socket? */
static bool output_pending(const struct conn *c)
{
    return c->out.len > 0 || c->net.len > 0 || (c->tls != NULL && tls_out_pending(c->tls));
}

void conn_send(struct conn *c, const struct msg *m)
{
    int rv;

    if (c->closed || c->closing) return;
    rv = proto_encode(&c->out, m);
    if (rv == BATON_ENOMEM) xalloc_failed("a reply"); /* server/xmalloc.h's policy */
    if (rv != 0) {
        /* A message batond built that the codec refuses (too big, say): a
         * bug, not a reply to drop silently; the client sees the close. */
        log_error("conn %llu: cannot encode %s: %s", (unsigned long long)c->id,
                  msg_type_name(m->type), baton_strerror(rv));
        conn_close(c);
        return;
    }
    unread_account(c);
    if (c->unread > CONN_MAX_OUT) {
        log_warn("conn %llu (%s): client does not read its replies (%.1f MiB unread); closing",
                 (unsigned long long)c->id, c->peer, (double)c->unread / MIB);
        conn_shed(c);
        return;
    }
    mark_dirty(c);
    if (c->srv->unread > (size_t)c->srv->cfg.max_unread_mb << 20) unread_shed(c->srv);
}

void conn_send_error(struct conn *c, uint64_t req_id, int code, const char *fmt, ...)
{
    char text[BATON_MAX_ERRMSG];
    struct msg m = {.type = MSG_ERROR, .req_id = req_id};
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    m.u.error.code = code;
    m.u.error.message.p = text;
    m.u.error.message.n = (uint16_t)strlen(text);
    conn_send(c, &m);
}

void conn_close(struct conn *c)
{
    if (c->closing || c->closed) return;
    c->closing = true;
    unauth_unlink(c);
    uv_read_stop((uv_stream_t *)&c->tcp);
    if (!output_pending(c) && !c->write_pending)
        conn_destroy(c);
    else
        mark_dirty(c);
}

static void conn_flush(struct conn *c);

static void write_cb(uv_write_t *req, int status)
{
    struct conn *c = req->data;

    c->write_pending = false;
    buf_reset(&c->writing);
    out_trim(&c->writing);
    if (c->closed) return;
    unread_account(c);
    if (c->shed) {
        conn_destroy(c);
        return;
    }
    if (status < 0) {
        log_debug("conn %llu: write failed: %s", (unsigned long long)c->id, uv_strerror(status));
        conn_destroy(c);
        return;
    }
    if (output_pending(c))
        conn_flush(c);
    else if (c->closing)
        conn_destroy(c);
}

/*
 * The bytes to write: `out` itself on a plaintext connection; on a TLS one,
 * `net`, after sealing `out` into it (one TLS record per loop turn for all
 * the replies of the turn). NULL if sealing failed: c must be closed.
 */
static struct buf *wire(struct conn *c)
{
    if (c->tls == NULL) return &c->out;
    int rv = tls_seal(c->tls, &c->out, &c->net);

    if (rv == BATON_ENOMEM) xalloc_failed("TLS output"); /* server/xmalloc.h's policy */
    if (rv != 0) {
        log_debug("conn %llu: TLS: %s", (unsigned long long)c->id, tls_errmsg(c->tls));
        return NULL;
    }
    unread_account(c);
    if (c->unread > CONN_MAX_OUT) {
        log_warn("conn %llu (%s): client does not read its replies (%.1f MiB unread); closing",
                 (unsigned long long)c->id, c->peer, (double)c->unread / MIB);
        metrics_inc_label(M_REFUSALS, REF_UNREAD);
        return NULL;
    }
    return &c->net;
}

/*
 * Write everything pending, unless a write is in flight (its callback
 * writes the rest). The common case, a socket with room, is one
 * uv_try_write: one write(2). Only what does not fit goes to uv_write,
 * whose completion makes libuv re-arm the poll watcher (an epoll_ctl per
 * call), which is why it is not used for every reply.
 */
static void conn_flush(struct conn *c)
{
    struct buf tmp, *w;
    uv_buf_t b;
    size_t done = 0;
    int rv;

    if (c->shed) {
        conn_destroy(c);
        return;
    }
    if (c->closed || c->write_pending || !output_pending(c)) {
        if (c->closing && !c->write_pending && !output_pending(c)) conn_destroy(c);
        return;
    }
    w = wire(c);
    if (w == NULL) {
        conn_destroy(c);
        return;
    }
    if (w->len == 0) {
        if (c->closing) conn_destroy(c);
        return;
    }
    metrics_add(M_BYTES_OUT, w->len);
    b = uv_buf_init((char *)w->data, (unsigned)w->len);
    rv = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    if (rv >= 0) {
        done = (size_t)rv;
    } else if (rv != UV_EAGAIN) {
        log_debug("conn %llu: write failed: %s", (unsigned long long)c->id, uv_strerror(rv));
        conn_destroy(c);
        return;
    }
    if (done == w->len) {
        buf_reset(w);
        out_trim(w);
        unread_account(c);
        if (c->closing) conn_destroy(c);
        return;
    }
    tmp = c->writing;
    c->writing = *w;
    *w = tmp;
    buf_reset(w);
    out_trim(w);
    unread_account(c);
    b = uv_buf_init((char *)c->writing.data + done, (unsigned)(c->writing.len - done));
    c->wreq.data = c;
    rv = uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, write_cb);
    if (rv != 0) {
        conn_destroy(c);
        return;
    }
    c->write_pending = true;
}

void conn_flush_all(struct server *srv)
{
    while (srv->dirty) {
        struct conn *c = srv->dirty;
        srv->dirty = c->next_dirty;
        c->dirty = false;
        c->next_dirty = NULL;
        conn_flush(c);
    }
}

/* Close every client connection at once (shutdown, or leadership lost: the
 * clients reconnect and find the new leader). */
void conn_close_all(struct server *srv)
{
    size_t n = 0;
    uint64_t *ids = xmalloc(sizeof *ids * (srv->conns.n + 1));

    for (size_t i = 0; i < srv->conns.cap; i++)
        if (srv->conns.slots[i].key) ids[n++] = srv->conns.slots[i].key;
    for (size_t i = 0; i < n; i++) {
        struct conn *c = u64map_get(&srv->conns, ids[i]);
        if (c) conn_destroy(c);
    }
    free(ids);
}
