/*
 * conn.c -- client connections.
 *
 * Reads are framed with proto_frame_check and decoded one frame at a time.
 * Replies are appended to the connection's `out` buffer and written with one
 * uv_write per connection per loop turn (conn_flush_all, from the check
 * handler), as Redis flushes its replies in beforeSleep. A malformed frame
 * gets an ERROR and the connection is closed once that is written; nothing
 * else is affected.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/baton_defs.h"
#include "server/log.h"
#include "server/server.h"

static void conn_closed_cb(uv_handle_t *h)
{
    struct conn *c = h->data;
    buf_free(&c->in);
    buf_free(&c->out);
    buf_free(&c->writing);
    free(c);
}

/* Close now: drop from the map and the dirty list, and free in close_cb. */
static void conn_destroy(struct conn *c)
{
    struct conn **pp;

    if (c->closed) return;
    c->closed = true;
    u64map_del(&c->srv->conns, c->id);
    if (c->n_watches > 0) watch_conn_gone(c->srv, c);
    for (pp = &c->srv->dirty; *pp; pp = &(*pp)->next_dirty)
        if (*pp == c) {
            *pp = c->next_dirty;
            break;
        }
    log_debug("conn %llu (%s) closed", (unsigned long long)c->id, c->peer);
    uv_close((uv_handle_t *)&c->tcp, conn_closed_cb);
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

void conn_send(struct conn *c, const struct msg *m)
{
    int rv;

    if (c->closed || c->closing) return;
    rv = proto_encode(&c->out, m);
    if (rv != 0) {
        log_error("conn %llu: cannot encode %s: %s", (unsigned long long)c->id,
                  msg_type_name(m->type), baton_strerror(rv));
        conn_close(c);
        return;
    }
    if (c->out.len > CONN_MAX_OUT) {
        log_warn("conn %llu (%s): client does not read its replies; closing",
                 (unsigned long long)c->id, c->peer);
        buf_reset(&c->out);
        conn_destroy(c);
        return;
    }
    mark_dirty(c);
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
    uv_read_stop((uv_stream_t *)&c->tcp);
    if (c->out.len == 0 && !c->write_pending)
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
    if (c->closed) return;
    if (status < 0) {
        log_debug("conn %llu: write failed: %s", (unsigned long long)c->id, uv_strerror(status));
        conn_destroy(c);
        return;
    }
    if (c->out.len > 0)
        conn_flush(c);
    else if (c->closing)
        conn_destroy(c);
}

/*
 * Write everything in `out`, unless a write is in flight (its callback
 * writes the rest). The common case, a socket with room, is one
 * uv_try_write: one write(2). Only what does not fit goes to uv_write,
 * whose completion makes libuv re-arm the poll watcher (an epoll_ctl per
 * call), which is why it is not used for every reply.
 */
static void conn_flush(struct conn *c)
{
    struct buf tmp;
    uv_buf_t b;
    size_t done = 0;
    int rv;

    if (c->closed || c->write_pending || c->out.len == 0) {
        if (c->closing && !c->write_pending && c->out.len == 0) conn_destroy(c);
        return;
    }
    b = uv_buf_init((char *)c->out.data, (unsigned)c->out.len);
    rv = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    if (rv >= 0) {
        done = (size_t)rv;
    } else if (rv != UV_EAGAIN) {
        log_debug("conn %llu: write failed: %s", (unsigned long long)c->id, uv_strerror(rv));
        conn_destroy(c);
        return;
    }
    if (done == c->out.len) {
        buf_reset(&c->out);
        if (c->closing) conn_destroy(c);
        return;
    }
    tmp = c->writing;
    c->writing = c->out;
    c->out = tmp;
    buf_reset(&c->out);
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

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    struct conn *c = h->data;
    (void)suggested;
    if (buf_reserve(&c->in, 64 * 1024) != 0) {
        b->base = NULL;
        b->len = 0;
        return;
    }
    b->base = (char *)c->in.data + c->in.len;
    b->len = c->in.cap - c->in.len;
}

/* Frame and handle every whole frame in the input buffer. */
static void conn_process(struct conn *c)
{
    size_t off = 0, frame_len;
    int rv;

    while (!c->closing && !c->closed) {
        struct msg m;

        rv = proto_frame_check(c->in.data + off, c->in.len - off, &frame_len);
        if (rv == 0) break;
        if (rv < 0) {
            uint32_t claimed = le_get_u32(c->in.data + off);
            log_warn("conn %llu (%s): bad frame length %u: %s; closing", (unsigned long long)c->id,
                     c->peer, claimed, baton_strerror(rv));
            conn_send_error(c, 0, rv, "bad frame: length %u is %s (%u..%u)", claimed,
                            rv == BATON_ETOOBIG ? "above the limit" : "below the minimum",
                            PROTO_FRAME_MIN, BATON_MAX_FRAME);
            conn_close(c);
            break;
        }
        rv = proto_decode(c->in.data + off, frame_len, &m);
        if (rv != 0) {
            log_warn("conn %llu (%s): cannot decode %s frame: %s; closing",
                     (unsigned long long)c->id, c->peer, msg_type_name(m.type), baton_strerror(rv));
            if (msg_type_name(m.type)[0] == '?')
                conn_send_error(c, m.req_id, rv, "unknown message type %u", m.type);
            else
                conn_send_error(c, m.req_id, rv, "cannot decode %s frame: %s",
                                msg_type_name(m.type), baton_strerror(rv));
            conn_close(c);
            break;
        }
        dispatch(c, &m);
        msg_free(&m);
        off += frame_len;
    }
    if (!c->closed) {
        buf_consume(&c->in, off);
        guard_input_done(c, off > 0);
    }
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    struct conn *c = s->data;
    (void)b;

    if (nread < 0) {
        if (nread != UV_EOF)
            log_debug("conn %llu: read: %s", (unsigned long long)c->id, uv_strerror((int)nread));
        conn_destroy(c);
        return;
    }
    if (nread == 0) return;
    c->in.len += (size_t)nread;
    conn_process(c);
}

static void accept_cb(uv_stream_t *server, int status)
{
    struct server *srv = server->data;
    struct sockaddr_storage ss;
    int sslen = sizeof ss;
    struct conn *c;

    if (status < 0) {
        guard_accept_failed(srv, status);
        return;
    }
    c = calloc(1, sizeof *c);
    if (c == NULL) return;
    uv_tcp_init(srv->loop, &c->tcp);
    c->tcp.data = c;
    c->srv = srv;
    c->id = ++srv->next_conn_id;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0 ||
        u64map_put(&srv->conns, c->id, c) != 0) {
        c->closed = true;
        uv_close((uv_handle_t *)&c->tcp, conn_closed_cb);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &sslen) == 0 &&
        ss.ss_family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)&ss;
        char ip[INET_ADDRSTRLEN] = "?";
        uv_ip4_name(in, ip, sizeof ip);
        snprintf(c->peer, sizeof c->peer, "%s:%u", ip, ntohs(in->sin_port));
    }
    log_debug("conn %llu from %s", (unsigned long long)c->id, c->peer);
    if (!guard_admit(c)) return; /* over --max-conns: answered and closing */
    uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
}

int conn_listen(struct server *srv, const char *addr)
{
    char host[64];
    const char *colon = strrchr(addr, ':');
    struct sockaddr_in sa;
    int rv;

    uv_tcp_init(srv->loop, &srv->listener);
    srv->listener.data = srv;
    if (colon == NULL || (size_t)(colon - addr) >= sizeof host) return UV_EINVAL;
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = '\0';
    rv = uv_ip4_addr(host, atoi(colon + 1), &sa);
    if (rv != 0) return rv;
    rv = uv_tcp_bind(&srv->listener, (const struct sockaddr *)&sa, 0);
    if (rv == 0) rv = uv_listen((uv_stream_t *)&srv->listener, 1024, accept_cb);
    return rv;
}

/* Close every client connection at once (shutdown, or leadership lost: the
 * clients reconnect and find the new leader). */
void conn_close_all(struct server *srv)
{
    size_t n = 0;
    uint64_t *ids = malloc(sizeof *ids * (srv->conns.n + 1));

    if (ids == NULL) return;
    for (size_t i = 0; i < srv->conns.cap; i++)
        if (srv->conns.slots[i].key) ids[n++] = srv->conns.slots[i].key;
    for (size_t i = 0; i < n; i++) {
        struct conn *c = u64map_get(&srv->conns, ids[i]);
        if (c) conn_destroy(c);
    }
    free(ids);
}
