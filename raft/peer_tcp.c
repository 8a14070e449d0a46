/*
 * peer_tcp.c -- the plaintext raft transport, raft_uv_tcp's handshake over
 * addresses of every kind. See peer_tcp.h.
 *
 * Every connection in its handshake is a struct pending, in one list, so
 * that close() can end them all. Its socket is a uv_tcp_t from raft_malloc:
 * once the handshake is done it is handed to raft as is (raft closes it and
 * raft_frees it), so no byte is copied after the handshake. The handshake
 * is read with buffers of exactly the bytes still missing, so not one byte
 * of raft's that follows is read here.
 */
#include "raft/peer_tcp.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/baton_defs.h"
#include "proto/addr.h"
#include "raft/peer_addr.h"

#define PROTOCOL 1
#define PREAMBLE 24 /* protocol, id, address size: three uint64 */
#define SWEEP_MS 1000

struct peer_tcp;

struct pending {
    struct peer_tcp *t;
    struct pending *prev, *next;
    uv_tcp_t *tcp;                  /* raft_malloc'd; NULL while dialling */
    bool outbound;
    uint64_t since;                 /* uv_now at accept (inbound) */
    /* Outbound. */
    struct raft_uv_connect *req;
    struct peer_dial dial;
    bool dialing;
    uv_write_t write;
    uint8_t *hs;                    /* the handshake being written */
    /* Inbound. */
    uint8_t pre[PREAMBLE];
    size_t got;                     /* bytes of preamble and address read */
    uint64_t id, addr_len;
    char *addr;                     /* addr_len + 1 bytes once the preamble is in */
};

struct peer_tcp {
    struct raft_uv_transport *base;
    uv_loop_t *loop;
    uint64_t id;
    char address[BATON_MAX_ADDR + 1];
    char bind[BATON_MAX_ADDR + 1];  /* "": listen on `address` */
    struct peer_listeners ls;
    uv_timer_t sweep;               /* the inbound handshakes' deadline */
    bool sweep_init;
    int handles;                    /* listeners and timer open */
    struct pending *head, *tail;
    unsigned n_inbound;
    raft_uv_accept_cb accept_cb;
    raft_uv_transport_close_cb close_cb;
    bool closing, close_reported, freed;
};

static struct peer_tcp *impl(struct raft_uv_transport *base)
{
    return base->impl;
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;

    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* ---- the list and the end of the transport ------------------------------ */

static void append(struct peer_tcp *t, struct pending *p)
{
    p->prev = t->tail;
    p->next = NULL;
    if (t->tail != NULL)
        t->tail->next = p;
    else
        t->head = p;
    t->tail = p;
    if (!p->outbound) t->n_inbound++;
}

static void unlink_pending(struct peer_tcp *t, struct pending *p)
{
    if (p->prev != NULL)
        p->prev->next = p->next;
    else
        t->head = p->next;
    if (p->next != NULL)
        p->next->prev = p->prev;
    else
        t->tail = p->prev;
    if (!p->outbound) t->n_inbound--;
}

static void maybe_finish(struct peer_tcp *t)
{
    if (t->handles > 0 || t->head != NULL) return;
    if (t->freed) {
        t->base->impl = NULL;
        free(t);
        return;
    }
    if (t->closing && !t->close_reported && t->close_cb != NULL) {
        t->close_reported = true;
        t->close_cb(t->base);
    }
}

/* Remove p from the list and free it; its socket, if any, is the caller's
 * business (closed, or raft's now). */
static void pending_free(struct pending *p)
{
    struct peer_tcp *t = p->t;

    unlink_pending(t, p);
    free(p->hs);
    free(p->addr);
    free(p);
    maybe_finish(t);
}

/* An inbound handshake failed or was cut short: close and forget it. */
static void drop(struct pending *p)
{
    peer_tcp_handle_close(p->tcp);
    pending_free(p);
}

static void handle_closed(uv_handle_t *h)
{
    struct peer_tcp *t = h->data;

    t->handles--;
    maybe_finish(t);
}

static void close_all(struct peer_tcp *t)
{
    struct pending *p, *next;

    t->closing = true;
    for (unsigned i = 0; i < t->ls.n; i++) uv_close((uv_handle_t *)&t->ls.h[i], handle_closed);
    t->ls.n = 0;
    if (!t->sweep_init) { /* a handle to close, so that the end is always async */
        uv_timer_init(t->loop, &t->sweep);
        t->sweep.data = t;
        t->sweep_init = true;
        t->handles++;
    }
    uv_close((uv_handle_t *)&t->sweep, handle_closed);
    for (p = t->head; p != NULL; p = next) {
        next = p->next;
        if (!p->outbound)
            drop(p);
        else if (p->dialing)
            peer_dial_cancel(&p->dial); /* on_dialed ends it */
        else
            peer_tcp_handle_close(p->tcp); /* on_written ends it */
    }
}

/* ---- inbound: read the handshake, hand the stream to raft ---------------- */

static void hs_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    struct pending *p = h->data;

    (void)hint;
    if (p->got < PREAMBLE)
        *b = uv_buf_init((char *)p->pre + p->got, (unsigned)(PREAMBLE - p->got));
    else
        *b = uv_buf_init(p->addr + (p->got - PREAMBLE),
                         (unsigned)(p->addr_len - (p->got - PREAMBLE)));
}

static void hs_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct pending *p = s->data;
    struct peer_tcp *t = p->t;
    uint64_t id;
    char *addr;

    (void)b;
    if (n == 0) return;
    if (n < 0) {
        drop(p);
        return;
    }
    p->got += (size_t)n;
    if (p->got == PREAMBLE) {
        p->id = get64(p->pre + 8);
        p->addr_len = get64(p->pre + 16);
        if (get64(p->pre) != PROTOCOL || p->addr_len == 0 ||
            p->addr_len > PEER_TCP_MAX_ADDRESS) {
            drop(p); /* not a raft peer, or another protocol version */
            return;
        }
        p->addr = calloc(1, p->addr_len + 1);
        if (p->addr == NULL) {
            drop(p);
            return;
        }
        return;
    }
    if (p->got < PREAMBLE + p->addr_len) return;
    uv_read_stop(s);
    uv_tcp_nodelay(p->tcp, 1);
    s->data = NULL;
    id = p->id;
    addr = p->addr;
    p->addr = NULL;
    pending_free(p);
    t->accept_cb(t->base, id, addr, s); /* raft owns s from here, and copies addr */
    free(addr);
}

/* The oldest inbound handshake, once PEER_TCP_MAX_PENDING are waiting. */
static struct pending *oldest_inbound(struct peer_tcp *t)
{
    if (t->n_inbound < PEER_TCP_MAX_PENDING) return NULL;
    for (struct pending *p = t->head; p != NULL; p = p->next)
        if (!p->outbound) return p;
    return NULL;
}

static void on_accept(uv_stream_t *server, int status)
{
    struct peer_tcp *t = server->data;
    struct pending *p, *old;

    if (status < 0 || t->closing) return;
    if ((old = oldest_inbound(t)) != NULL) drop(old);
    p = calloc(1, sizeof *p);
    if (p == NULL || (p->tcp = raft_malloc(sizeof *p->tcp)) == NULL) {
        free(p);
        return;
    }
    p->t = t;
    p->since = uv_now(t->loop);
    uv_tcp_init(t->loop, p->tcp);
    p->tcp->data = p;
    append(t, p);
    if (uv_accept(server, (uv_stream_t *)p->tcp) != 0 ||
        uv_read_start((uv_stream_t *)p->tcp, hs_alloc, hs_read) != 0)
        drop(p);
}

/* Close the inbound connections that have not finished their handshake in
 * time. */
static void sweep_cb(uv_timer_t *timer)
{
    struct peer_tcp *t = timer->data;
    uint64_t now = uv_now(t->loop);
    struct pending *p, *next;

    for (p = t->head; p != NULL; p = next) {
        next = p->next;
        if (!p->outbound && now - p->since >= PEER_TCP_HANDSHAKE_MS) drop(p);
    }
}

/* ---- outbound: dial, send the handshake, hand the stream to raft --------- */

static void end_connect(struct pending *p, uv_tcp_t *stream, int status)
{
    struct raft_uv_connect *req = p->req;
    bool closing = p->t->closing;

    pending_free(p);
    req->cb(req, (struct uv_stream_s *)stream,
            status == 0 ? 0 : closing ? RAFT_CANCELED : RAFT_NOCONNECTION);
}

static void on_written(uv_write_t *w, int status)
{
    struct pending *p = w->data;

    if (status < 0 || p->t->closing) {
        peer_tcp_handle_close(p->tcp);
        end_connect(p, NULL, status < 0 ? status : UV_ECANCELED);
        return;
    }
    p->tcp->data = NULL;
    end_connect(p, p->tcp, 0);
}

static void on_dialed(struct peer_dial *d, uv_tcp_t *tcp, int status)
{
    struct pending *p = d->data;
    struct peer_tcp *t = p->t;
    size_t len = strlen(t->address) + 1, padded = (len + 7) / 8 * 8;
    uv_buf_t b;
    int rv;

    p->dialing = false;
    if (status < 0) {
        end_connect(p, NULL, status);
        return;
    }
    p->tcp = tcp;
    uv_tcp_nodelay(tcp, 1);
    p->hs = calloc(1, PREAMBLE + padded);
    if (p->hs == NULL) {
        peer_tcp_handle_close(tcp);
        end_connect(p, NULL, UV_ENOMEM);
        return;
    }
    put64(p->hs, PROTOCOL);
    put64(p->hs + 8, t->id);
    put64(p->hs + 16, padded);
    memcpy(p->hs + PREAMBLE, t->address, len);
    b = uv_buf_init((char *)p->hs, (unsigned)(PREAMBLE + padded));
    p->write.data = p;
    rv = uv_write(&p->write, (uv_stream_t *)tcp, &b, 1, on_written);
    if (rv != 0) {
        peer_tcp_handle_close(tcp);
        end_connect(p, NULL, rv);
    }
}

/* ---- raft's interface ----------------------------------------------------- */

static int tcp_init_cb(struct raft_uv_transport *base, raft_id id, const char *address)
{
    struct peer_tcp *t = impl(base);

    if (strlen(address) > BATON_MAX_ADDR) return RAFT_INVALID;
    t->id = id;
    snprintf(t->address, sizeof t->address, "%s", address);
    return 0;
}

static int tcp_listen_cb(struct raft_uv_transport *base, raft_uv_accept_cb cb)
{
    struct peer_tcp *t = impl(base);
    const char *where = t->bind[0] != '\0' ? t->bind : t->address;
    int rv;

    t->accept_cb = cb;
    rv = peer_listen(t->loop, where, &t->ls, on_accept, t, base->errmsg, sizeof base->errmsg);
    t->handles += (int)t->ls.n;
    if (rv != 0) return rv == UV_EINVAL ? RAFT_INVALID : RAFT_IOERR;
    uv_timer_init(t->loop, &t->sweep);
    t->sweep.data = t;
    t->sweep_init = true;
    t->handles++;
    uv_timer_start(&t->sweep, sweep_cb, SWEEP_MS, SWEEP_MS);
    return 0;
}

static int tcp_connect_cb(struct raft_uv_transport *base, struct raft_uv_connect *req, raft_id id,
                          const char *address, raft_uv_connect_cb cb)
{
    struct peer_tcp *t = impl(base);
    struct pending *p;
    int rv;

    (void)id;
    if (t->closing) return RAFT_CANCELED;
    p = calloc(1, sizeof *p);
    if (p == NULL) return RAFT_NOMEM;
    p->t = t;
    p->outbound = true;
    p->req = req;
    p->dial.data = p;
    req->cb = cb;
    rv = peer_dial_start(&p->dial, t->loop, address, on_dialed);
    if (rv != 0) {
        free(p);
        return rv == UV_ENOMEM ? RAFT_NOMEM : RAFT_NOCONNECTION;
    }
    p->dialing = true;
    append(t, p);
    return 0;
}

static void tcp_close_cb(struct raft_uv_transport *base, raft_uv_transport_close_cb cb)
{
    struct peer_tcp *t = impl(base);

    t->close_cb = cb;
    if (t->closing)
        maybe_finish(t);
    else
        close_all(t);
}

/* ---- set-up and release ----------------------------------------------------- */

int peer_tcp_init(struct raft_uv_transport *base, uv_loop_t *loop)
{
    struct peer_tcp *t = calloc(1, sizeof *t);

    if (t == NULL) return RAFT_NOMEM;
    t->base = base;
    t->loop = loop;
    base->data = NULL;
    base->impl = t;
    base->errmsg[0] = '\0';
    base->init = tcp_init_cb;
    base->listen = tcp_listen_cb;
    base->connect = tcp_connect_cb;
    base->close = tcp_close_cb;
    return 0;
}

int peer_tcp_set_bind_address(struct raft_uv_transport *base, const char *address)
{
    struct peer_tcp *t = impl(base);
    struct proto_addr a;

    if (proto_addr_parse(address, strlen(address), &a) != 0) return RAFT_INVALID;
    snprintf(t->bind, sizeof t->bind, "%s", address);
    return 0;
}

void peer_tcp_free(struct raft_uv_transport *base)
{
    struct peer_tcp *t = impl(base);

    if (t == NULL) return;
    if (t->handles == 0 && t->head == NULL) {
        base->impl = NULL;
        free(t);
        return;
    }
    t->freed = true;
    if (!t->closing) close_all(t);
}
