/*
 * listen.c -- where a request enters batond: accept client connections,
 * read them, frame the bytes with proto_frame_check and decode one frame
 * at a time, then hand each message to dispatch(). A malformed frame gets
 * an ERROR and the connection is closed once that is written; nothing
 * else is affected. guard.c bounds what one connection may hold. A request
 * for the leader that reaches a leader not serving yet waits (park).
 *
 * A loop turn handles a bounded amount of input (TURN_FRAMES frames, or
 * TURN_MS of handling, over all connections; CONN_VISIT_FRAMES of one
 * connection before the others' turn). Raft's heartbeats, ticks and
 * replies run on this loop between turns, so however fast one client
 * writes -- 100,000 pipelined requests, or thousands of expensive reads in
 * one write -- the leader keeps its followers and its term. A connection
 * with whole frames left over is backlogged: it is not read (TCP pushes
 * back on the client) and its frames are handled in the next turns, the
 * oldest backlogged connection first. Accepting a connection counts as a
 * frame (accept_cb).
 */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/addr.h"
#include "server/log.h"
#include "server/resolve.h"
#include "server/metrics.h"
#include "server/server_int.h"

/* TLS: ciphertext is read into the server's one scratch buffer (the loop
 * decrypts it before the next read); plaintext straight into `in`. */
static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    struct conn *c = h->data;
    (void)suggested;
    if (c->tls != NULL) {
        b->base = (char *)c->srv->rbuf;
        b->len = LISTEN_RBUF;
        return;
    }
    b->len = input_reserve(c, CONN_READ);
    b->base = (char *)c->in.data + c->in.len;
}

static void park_timer_cb(uv_timer_t *t);

/* The per-turn budget (the top of this file). A frame costs some
 * microseconds, an expensive read a millisecond or so: TURN_MS bounds the
 * turn whatever its frames cost, TURN_FRAMES when they are cheap. */
#define TURN_FRAMES 1024
#define TURN_MS 10
#define CONN_VISIT_FRAMES 128

/* May another frame be handled in this loop turn, c's visit having
 * handled `visit` frames? */
static bool budget_left(struct server *srv, uint32_t visit)
{
    uint64_t now = uv_hrtime();

    if (srv->turn_began_ns == 0) srv->turn_began_ns = now;
    return visit < CONN_VISIT_FRAMES && srv->turn_frames < TURN_FRAMES &&
           now - srv->turn_began_ns < (uint64_t)TURN_MS * 1000000;
}

static void backlog_idle_cb(uv_idle_t *h);

/* c has whole frames the budget did not reach: stop reading it and queue
 * it for the next turns. */
static void backlog(struct conn *c)
{
    struct server *srv = c->srv;

    if (c->backlogged) return;
    c->backlogged = true;
    uv_read_stop((uv_stream_t *)&c->tcp);
    if (srv->n_backlog == srv->cap_backlog) {
        srv->cap_backlog = srv->cap_backlog ? srv->cap_backlog * 2 : 64;
        srv->backlog = xrealloc(srv->backlog, srv->cap_backlog * sizeof *srv->backlog);
    }
    srv->backlog[srv->n_backlog++] = c->id;
    if (!srv->stopping) uv_idle_start(&srv->backlog_idle, backlog_idle_cb);
}

/*
 * A request only the ready leader serves, on a node that raft has just
 * elected and whose first entry (its barrier, raft/node.h) has not
 * committed yet. Answering NO_LEADER would send the client into a
 * back-off although this node serves within a few tens of ms -- after a
 * planned hand-off (server.c) that is where clients arrive, and most of
 * the gap they saw. So the connection is parked instead: this frame and
 * those after it stay in its input buffer, reading stops (nothing more is
 * buffered meanwhile), and it is processed again once the node serves
 * (listen_unpark_soon, called by server.c), or at the latest an election
 * timeout after the first connection was parked in this term -- then the
 * frame gets NO_LEADER as before. true if c was parked.
 */
static bool park(struct conn *c, const struct msg *m)
{
    struct server *srv = c->srv;
    const struct msg_info *info = msg_info(m->type);
    unsigned window = srv->cfg.node.election_timeout_ms ? srv->cfg.node.election_timeout_ms : 300;
    struct node_status st;
    uint64_t now;

    if (srv->ready || srv->stopping || info == NULL || !info->leader || !c->hello) return false;
    srv->nio->get_status(srv->node, &st);
    if (st.role != ROLE_LEADER || st.fault != 0) return false;
    now = uv_now(srv->loop);
    if (srv->park_term != st.term) {
        srv->park_term = st.term;
        srv->park_until = now + window;
        uv_timer_start(&srv->park_timer, park_timer_cb, window, 0);
    }
    if (now >= srv->park_until) return false;
    c->parked = true;
    uv_read_stop((uv_stream_t *)&c->tcp);
    return true;
}

/* Frame and handle every whole frame in the input buffer. */
static void conn_process(struct conn *c)
{
    size_t off = 0, frame_len;
    uint32_t visit = 0;
    int rv;

    if (c->parked) return;
    if (c->tls == NULL && c->srv->client_tls == NULL && conn_plain_is_tls(c)) {
        conn_close(c); /* answered ERROR(BATON_ETLS) */
        return;
    }
    while (!c->closing && !c->closed) {
        struct msg m;

        if (input_unauth_too_big(c, off)) break; /* answered, closing */
        rv = proto_frame_check(c->in.data + off, c->in.len - off, &frame_len);
        if (rv == 0) break;
        if (rv == 1 && !budget_left(c->srv, visit)) {
            backlog(c);
            break;
        }
        if (rv < 0) {
            uint32_t claimed = le_get_u32(c->in.data + off);

            metrics_inc_label(M_REFUSALS, REF_MALFORMED);
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
            metrics_inc_label(M_REFUSALS, REF_MALFORMED);
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
        if (park(c, &m)) {
            msg_free(&m);
            break;
        }
        dispatch(c, &m);
        msg_free(&m);
        off += frame_len;
        visit++;
        c->srv->turn_frames++;
    }
    if (!c->closed) {
        buf_consume(&c->in, off);
        guard_input_done(c, off > 0);
    }
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    struct conn *c = s->data;
    int rv;
    (void)b;

    if (nread < 0) {
        if (nread != UV_EOF)
            log_debug("conn %llu: read: %s", (unsigned long long)c->id, uv_strerror((int)nread));
        conn_destroy(c);
        return;
    }
    if (nread == 0) return;
    metrics_add(M_BYTES_IN, (uint64_t)nread);
    if (c->tls != NULL) {
        /* the plaintext is no longer than the record it came in */
        input_reserve(c, (size_t)nread);
        rv = conn_tls_input(c, c->srv->rbuf, (size_t)nread);
        input_account(c);
        if (rv != 0) {
            conn_close(c); /* an alert or an ERROR is queued */
            return;
        }
    } else {
        c->in.len += (size_t)nread;
    }
    conn_process(c);
    input_check(c->srv);
}

/* srv's listener i: 0 the client address's first, then listen_more's.
 * Bit i of srv->accept_deferred stands for it. */
static uv_tcp_t *listener_at(struct server *srv, unsigned i)
{
    return i == 0 ? &srv->listener : &srv->listen_more[i - 1];
}

/* Which of srv's listeners h is (its index), or n_listen if none. */
static unsigned listener_index(struct server *srv, const uv_stream_t *h)
{
    unsigned i = 0;

    while (i < srv->n_listen && h != (const uv_stream_t *)listener_at(srv, i)) i++;
    return i;
}

/* Take the connection waiting on listener `server` and start reading it. */
static void accept_one(struct server *srv, uv_stream_t *server)
{
    struct sockaddr_storage ss;
    int sslen = sizeof ss, rv;
    struct conn *c;

    srv->turn_frames++;
    c = conn_new(srv);
    uv_tcp_init(srv->loop, &c->tcp);
    rv = uv_accept(server, (uv_stream_t *)&c->tcp);
    if (rv != 0) {
        guard_accept_failed(srv, rv);
        conn_destroy(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &sslen) == 0)
        proto_addr_format((struct sockaddr *)&ss, c->peer, sizeof c->peer);
    log_debug("conn %llu from %s", (unsigned long long)c->id, c->peer);
    if (!guard_admit(c)) return; /* over --max-conns: answered and closing */
    conn_tls_start(c);
    uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
}

/*
 * A connection waits on a listener. An accept counts against the loop
 * turn's budget like a frame: past it, the connection is left to a later
 * turn (the backlog's idle handler), and libuv stops polling that listener
 * until it is taken -- so 10,000 clients connecting at once are accepted
 * over many turns, raft's heartbeats going out between them, and the
 * kernel's listen queue holds the rest meanwhile.
 */
static void accept_cb(uv_stream_t *server, int status)
{
    struct server *srv = server->data;

    if (status < 0) {
        guard_accept_failed(srv, status);
        return;
    }
    if (!budget_left(srv, 0)) {
        srv->accept_deferred |= 1u << listener_index(srv, server);
        if (!srv->stopping) uv_idle_start(&srv->backlog_idle, backlog_idle_cb);
        return;
    }
    accept_one(srv, server);
}

/* Process every parked connection again: it is served now, or gets
 * NO_LEADER if the window has passed. One closed meanwhile stays unread. */
static void park_timer_cb(uv_timer_t *t)
{
    struct server *srv = t->data;
    size_t n = 0;
    uint64_t *ids;

    if (srv->stopping) return;
    ids = xmalloc(sizeof *ids * (srv->conns.n + 1));
    for (size_t i = 0; i < srv->conns.cap; i++) {
        struct conn *c = srv->conns.slots[i].val;
        if (srv->conns.slots[i].key && c != NULL && c->parked) ids[n++] = srv->conns.slots[i].key;
    }
    for (size_t i = 0; i < n; i++) {
        struct conn *c = u64map_get(&srv->conns, ids[i]);
        if (c == NULL || !c->parked) continue;
        c->parked = false;
        /* closed while parked (SIGHUP took its principal's access): its
         * frames are never handled, so reading it would only buffer
         * whatever its client sends until the ERROR is written */
        if (c->closing || c->closed) continue;
        uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
        conn_process(c);
    }
    free(ids);
}

/* A new turn: the backlogged connections first, oldest first, as far as
 * the budget goes; one that still has whole frames goes to the back. A
 * connection that is through its backlog is read again. */
static void backlog_idle_cb(uv_idle_t *h)
{
    struct server *srv = h->data;
    size_t n = srv->n_backlog, done = 0;

    for (unsigned i = 0; i < srv->n_listen && srv->accept_deferred != 0; i++) {
        uv_stream_t *l = (uv_stream_t *)listener_at(srv, i);

        if (!(srv->accept_deferred & 1u << i) || !budget_left(srv, 0)) continue;
        srv->accept_deferred &= ~(1u << i);
        if (!srv->stopping && !uv_is_closing((uv_handle_t *)l)) accept_one(srv, l);
    }

    while (done < n && budget_left(srv, 0)) {
        struct conn *c = u64map_get(&srv->conns, srv->backlog[done++]);

        if (c == NULL || !c->backlogged) continue;
        c->backlogged = false;
        if (c->closing || c->closed) continue;
        conn_process(c);
        if (!c->backlogged && !c->parked && !c->closing && !c->closed)
            uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
    }
    if (done > 0) {
        memmove(srv->backlog, srv->backlog + done,
                (srv->n_backlog - done) * sizeof *srv->backlog);
        srv->n_backlog -= done;
    }
    if (srv->n_backlog == 0 && srv->accept_deferred == 0) uv_idle_stop(&srv->backlog_idle);
}

void listen_turn_end(struct server *srv)
{
    srv->turn_frames = 0;
    srv->turn_began_ns = 0;
}

void listen_unpark_soon(struct server *srv)
{
    if (!srv->stopping) uv_timer_start(&srv->park_timer, park_timer_cb, 0, 0);
}

static void park_timer_closed(uv_handle_t *h)
{
    (void)h;
}

void listen_close(struct server *srv)
{
    uv_timer_stop(&srv->park_timer);
    uv_close((uv_handle_t *)&srv->park_timer, park_timer_closed);
    uv_idle_stop(&srv->backlog_idle);
    uv_close((uv_handle_t *)&srv->backlog_idle, park_timer_closed);
    free(srv->backlog);
    srv->backlog = NULL;
    srv->n_backlog = srv->cap_backlog = 0;
}

/* Listen on one resolved address with handle h (initialised here). */
static int listen_one(struct server *srv, uv_tcp_t *h, const struct sockaddr *sa)
{
    char text[BATON_MAX_ADDR + 1];
    int rv;

    uv_tcp_init(srv->loop, h);
    h->data = srv;
    rv = uv_tcp_bind(h, sa, 0);
    if (rv == 0) rv = uv_listen((uv_stream_t *)h, 1024, accept_cb);
    proto_addr_format(sa, text, sizeof text);
    if (rv == 0)
        log_debug("listening for clients on %s", text);
    else
        log_warn("cannot listen for clients on %s: %s", text, uv_strerror(rv));
    return rv;
}

/*
 * Listen on every address addr stands for: an IP literal as it is, a host
 * name resolved now, once (getaddrinfo through libuv, synchronously: the
 * node is starting), on each of its addresses -- "localhost" on ::1 and
 * 127.0.0.1 -- so that a client reaches the node whichever of them it
 * tries. Succeeds if one of them listens.
 */
int listen_start(struct server *srv, const char *addr)
{
    struct sockaddr_storage sas[1 + LISTEN_MORE];
    unsigned ok = 0;
    int rv, first = 0, n;

    srv->n_listen = 0;
    uv_timer_init(srv->loop, &srv->park_timer);
    srv->park_timer.data = srv;
    uv_idle_init(srv->loop, &srv->backlog_idle);
    srv->backlog_idle.data = srv;
    n = resolve_listen_addrs("client address", addr, sas, 1 + LISTEN_MORE);
    if (n < 0) return n;
    for (int i = 0; i < n; i++) {
        uv_tcp_t *h = listener_at(srv, i);
        srv->n_listen++;
        rv = listen_one(srv, h, (const struct sockaddr *)&sas[i]);
        if (rv == 0) ok++;
        else if (first == 0) first = rv;
    }
    return ok > 0 ? 0 : first;
}

void listen_stop(struct server *srv)
{
    for (unsigned i = 0; i < srv->n_listen; i++) {
        uv_tcp_t *h = listener_at(srv, i);
        if (!uv_is_closing((uv_handle_t *)h)) uv_close((uv_handle_t *)h, NULL);
    }
}
