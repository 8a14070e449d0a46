/*
 * peer_tls.c -- the mutual-TLS raft transport: raft's interface (init,
 * listen, connect, close), the HELLO exchange, who is admitted, and the
 * rate-limited log of refusals. See peer_tls.h; one connection's bytes are
 * raft/peer_link.c's job, the HELLO's format raft/peer_hello.c's, and the
 * start-up check of this node's own certificate raft/peer_cert.c's.
 */
#include "raft/peer_tls.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/baton_defs.h"
#include "proto/addr.h"
#include "proto/errmsg.h"
#include "raft/peer_cert.h"
#include "raft/peer_hello.h"
#include "raft/peer_link.h"

#define DEFAULT_HANDSHAKE_MS 5000
#define DEFAULT_MAX_PENDING 64
#define LOG_WINDOW_MS 10000 /* at most LOG_LINES refusals logged per window */
#define LOG_LINES 10

struct peer_tls {
    struct raft_uv_transport *base;
    uv_loop_t *loop;
    tls_ctx *server, *client;
    struct node_peer_tls cfg;       /* the hooks; the file names are not kept */
    unsigned handshake_ms, max_pending;
    uint64_t id;                    /* raft's, from init */
    char address[BATON_MAX_ADDR + 1];
    char bind[BATON_MAX_ADDR + 1];  /* "" : listen on `address` */
    struct peer_listeners ls;       /* every address of the bind or own address */
    uv_timer_t closer;              /* closed by close(), so that its end is always async */
    int handles;                    /* listener / closer initialised, not yet closed */
    struct peer_link *head, *tail;  /* every link, oldest first */
    raft_uv_accept_cb accept_cb;
    raft_uv_transport_close_cb close_cb;
    bool closing, close_reported, freed;
    uint64_t log_window;            /* uv_now when the current log window began */
    unsigned log_lines, log_dropped;
    char rbuf[PEER_LINK_READ_SIZE]; /* every link's reads */
};

static struct peer_tls *impl(struct raft_uv_transport *base)
{
    return base->impl;
}

/* ---- the log of refusals, rate-limited ----------------------------------- */

static void say(struct peer_tls *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct peer_tls *t, const char *fmt, ...)
{
    uint64_t now = uv_now(t->loop);
    char msg[512];
    va_list ap;

    if (t->cfg.log == NULL) return;
    if (now - t->log_window >= LOG_WINDOW_MS) {
        if (t->log_dropped > 0) {
            snprintf(msg, sizeof msg, "%u more raft connection problems were not logged",
                     t->log_dropped);
            t->cfg.log(t->cfg.arg, msg);
        }
        t->log_window = now;
        t->log_lines = 0;
        t->log_dropped = 0;
    }
    if (t->log_lines == LOG_LINES) {
        t->log_dropped++;
        return;
    }
    t->log_lines++;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    t->cfg.log(t->cfg.arg, msg);
}

/* ---- the list of links and the end of the transport ---------------------- */

static void link_append(struct peer_tls *t, struct peer_link *l)
{
    l->prev = t->tail;
    l->next = NULL;
    if (t->tail != NULL)
        t->tail->next = l;
    else
        t->head = l;
    t->tail = l;
}

static void link_remove(struct peer_tls *t, struct peer_link *l)
{
    if (l->prev != NULL)
        l->prev->next = l->next;
    else
        t->head = l->next;
    if (l->next != NULL)
        l->next->prev = l->prev;
    else
        t->tail = l->prev;
}

static void destroy(struct peer_tls *t)
{
    tls_ctx_free(t->server);
    tls_ctx_free(t->client);
    t->base->impl = NULL;
    free(t);
}

/* The last handle or link went: report the close to raft, or free a
 * transport already released. */
static void maybe_finish(struct peer_tls *t)
{
    if (t->handles > 0 || t->head != NULL) return;
    if (t->freed) {
        destroy(t);
        return;
    }
    if (t->closing && !t->close_reported && t->close_cb != NULL) {
        t->close_reported = true;
        t->close_cb(t->base); /* raft may release the transport from here on */
    }
}

static void handle_closed(uv_handle_t *h)
{
    struct peer_tls *t = h->data;

    t->handles--;
    maybe_finish(t);
}

static void close_all(struct peer_tls *t)
{
    struct peer_link *l, *next;

    t->closing = true;
    uv_timer_init(t->loop, &t->closer);
    t->closer.data = t;
    t->handles++;
    uv_close((uv_handle_t *)&t->closer, handle_closed);
    for (unsigned i = 0; i < t->ls.n; i++) uv_close((uv_handle_t *)&t->ls.h[i], handle_closed);
    t->ls.n = 0;
    for (l = t->head; l != NULL; l = next) {
        next = l->next;
        peer_link_close(l, "the node is shutting down");
    }
}

/* ---- a link's events ------------------------------------------------------ */

/* A link is gone: tell raft about a connect that did not complete, and log
 * why a connection did not reach raft (unless it is of no interest). */
static void link_closed(struct peer_link *l)
{
    struct peer_tls *t = l->owner;
    struct raft_uv_connect *req = l->req;

    link_remove(t, l);
    if (!l->handed && !l->quiet && !t->closing) {
        if (l->outbound)
            say(t, "raft connection to node %" PRIu64 " (%s) failed: %s", l->peer_id, l->peer,
                l->why);
        else
            say(t, "raft connection from %s refused: %s", l->peer[0] ? l->peer : "?", l->why);
    }
    free(l);
    if (req != NULL) req->cb(req, NULL, t->closing ? RAFT_CANCELED : RAFT_NOCONNECTION);
    maybe_finish(t);
}

/* Dialling side: the peer's certificate must name the node dialled; then
 * send the HELLO. */
static void link_up(struct peer_link *l)
{
    struct peer_tls *t = l->owner;
    char want[PEER_CN_MAX];
    struct buf b = {0};
    int rv;

    if (!l->outbound) return; /* the accepting side waits for the HELLO */
    if (strcmp(peer_link_cn(l), peer_cn_of(l->peer_id, want)) != 0) {
        peer_link_close(l, "its certificate names '%s', not '%s'", peer_link_cn(l), want);
        return;
    }
    rv = peer_hello_encode(&b, t->id, t->address);
    if (rv == 0) rv = peer_link_send(l, b.data, b.len);
    buf_free(&b);
    if (rv != 0) peer_link_close(l, "cannot send the HELLO: %s", baton_strerror(rv));
}

/* Why node h->id, on link l, may not connect; NULL if it may. */
static const char *refusal(struct peer_tls *t, struct peer_link *l, const struct peer_hello *h,
                           char *why, size_t cap)
{
    char want[PEER_CN_MAX];

    if (strcmp(peer_link_cn(l), peer_cn_of(h->id, want)) != 0) {
        snprintf(why, cap, "its certificate names '%s' but its HELLO says node %" PRIu64,
                 peer_link_cn(l), h->id);
        return why;
    }
    if (h->id == t->id) {
        snprintf(why, cap, "it says it is this node (%" PRIu64 ")", h->id);
        return why;
    }
    if (h->id > UINT32_MAX ||
        (t->cfg.allowed != NULL && !t->cfg.allowed(t->cfg.arg, (uint32_t)h->id))) {
        snprintf(why, cap,
                 "node %" PRIu64 " is neither in the raft configuration nor being added", h->id);
        return why;
    }
    return NULL;
}

/* Accepting side: a HELLO arrived; admit the node or close. */
static void admit(struct peer_tls *t, struct peer_link *l, const struct peer_hello *h)
{
    static const uint8_t ack = PEER_HELLO_ACK;
    uv_stream_t *stream;
    char why[200];
    int rv;

    l->peer_id = h->id;
    if (refusal(t, l, h, why, sizeof why) != NULL) {
        peer_link_close(l, "%s", why);
        return;
    }
    if ((rv = peer_link_send(l, &ack, 1)) != 0 || (rv = peer_link_bridge(l, &stream)) != 0) {
        peer_link_close(l, "cannot open the bridge to raft (%d)", rv);
        return;
    }
    l->handed = true;
    t->accept_cb(t->base, h->id, h->address, stream);
}

/* Dialling side: the ACK arrived; hand raft its stream. */
static void connected(struct peer_link *l)
{
    struct raft_uv_connect *req = l->req;
    uv_stream_t *stream;
    int rv;

    if ((rv = peer_link_bridge(l, &stream)) != 0) {
        peer_link_close(l, "cannot open the bridge to raft (%d)", rv);
        return;
    }
    l->handed = true;
    l->req = NULL;
    req->cb(req, stream, 0);
}

static void link_plain(struct peer_link *l, struct buf *in)
{
    struct peer_tls *t = l->owner;
    struct peer_hello h;
    int n;

    if (l->outbound) {
        if (in->data[0] != PEER_HELLO_ACK) {
            peer_link_close(l, "it answered the HELLO with 0x%02x, not an ACK", in->data[0]);
            return;
        }
        buf_consume(in, 1);
        connected(l);
        return;
    }
    n = peer_hello_parse(in->data, in->len, &h);
    if (n == 0) return;
    if (n < 0) {
        peer_link_close(l, "malformed HELLO");
        return;
    }
    buf_consume(in, (size_t)n);
    admit(t, l, &h);
}

static const struct peer_link_events events = {
    .up = link_up,
    .plain = link_plain,
    .closed = link_closed,
};

/* ---- raft's interface ------------------------------------------------------ */

static int tls_init_cb(struct raft_uv_transport *base, raft_id id, const char *address)
{
    struct peer_tls *t = impl(base);

    if (strlen(address) > BATON_MAX_ADDR) return RAFT_INVALID;
    t->id = id;
    snprintf(t->address, sizeof t->address, "%s", address);
    return 0;
}

/* The oldest inbound connection still in its handshake, once max_pending
 * of them are: closing it makes room for one more. */
static struct peer_link *evictable(struct peer_tls *t)
{
    struct peer_link *l, *oldest = NULL;
    unsigned n = 0;

    for (l = t->head; l != NULL; l = l->next) {
        if (l->outbound || l->handed || l->closing) continue;
        if (oldest == NULL) oldest = l;
        n++;
    }
    return n >= t->max_pending ? oldest : NULL;
}

static void on_accept(uv_stream_t *server, int status)
{
    struct peer_tls *t = server->data;
    struct peer_link *l, *old;

    if (status < 0 || t->closing) return;
    if ((old = evictable(t)) != NULL)
        peer_link_close(old, "dropped: %u raft handshakes were pending at once", t->max_pending);
    l = calloc(1, sizeof *l);
    if (l == NULL) {
        say(t, "out of memory for a raft connection");
        return;
    }
    l->owner = t;
    peer_link_init(l, t->loop, &events, t->rbuf);
    link_append(t, l);
    peer_link_accept(l, server, t->server, t->handshake_ms);
}

static int tls_listen_cb(struct raft_uv_transport *base, raft_uv_accept_cb cb)
{
    struct peer_tls *t = impl(base);
    const char *where = t->bind[0] != '\0' ? t->bind : t->address;
    int rv;

    t->accept_cb = cb;
    rv = peer_listen(t->loop, where, &t->ls, on_accept, t, base->errmsg, sizeof base->errmsg);
    t->handles += (int)t->ls.n;
    if (rv != 0) return rv == UV_EINVAL ? RAFT_INVALID : RAFT_IOERR;
    return 0;
}

static int tls_connect_cb(struct raft_uv_transport *base, struct raft_uv_connect *req, raft_id id,
                          const char *address, raft_uv_connect_cb cb)
{
    struct peer_tls *t = impl(base);
    struct proto_addr a;
    struct peer_link *l;

    if (t->closing) return RAFT_CANCELED;
    if (proto_addr_parse(address, strlen(address), &a) != 0) return RAFT_NOCONNECTION;
    l = calloc(1, sizeof *l);
    if (l == NULL) return RAFT_NOMEM;
    req->cb = cb;
    l->owner = t;
    l->outbound = true;
    l->req = req;
    l->peer_id = id;
    snprintf(l->peer, sizeof l->peer, "%s", address);
    peer_link_init(l, t->loop, &events, t->rbuf);
    link_append(t, l);
    peer_link_connect(l, address, t->client, t->handshake_ms);
    return 0;
}

static void tls_close_cb(struct raft_uv_transport *base, raft_uv_transport_close_cb cb)
{
    struct peer_tls *t = impl(base);

    t->close_cb = cb;
    if (t->closing)
        maybe_finish(t); /* already closing: peer_tls_free came first */
    else
        close_all(t);
}

/* ---- set-up and release ------------------------------------------------------ */

static int make_ctx(const struct node_peer_tls *cfg, bool server, tls_ctx **out, char *errmsg)
{
    struct tls_config c = {
        .ca_file = cfg->ca_file,
        .cert_file = cfg->cert_file,
        .key_file = cfg->key_file,
        .server = server,
        .require_peer_cert = server,
        .allow_tls12 = cfg->allow_tls12,
    };
    char why[BATON_ERRMSG_SIZE - 32];
    int rv = tls_ctx_new(&c, out, why, sizeof why);

    if (rv != 0) snprintf(errmsg, BATON_ERRMSG_SIZE, "peer TLS: %s", why);
    return rv;
}

/* OpenSSL says "system lib" for a file it cannot open: say which and why. */
static int readable(const char *what, const char *path, char *errmsg)
{
    FILE *f = fopen(path, "r");

    if (f == NULL) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "peer TLS: cannot read the %s '%.150s': %s", what,
                 path, strerror(errno));
        return BATON_EINVAL;
    }
    fclose(f);
    return 0;
}

int peer_tls_init(struct raft_uv_transport *base, uv_loop_t *loop, uint32_t self_id,
                  const struct node_peer_tls *cfg, char *errmsg)
{
    struct peer_tls *t;
    int rv;

    if ((rv = readable("certificate", cfg->cert_file, errmsg)) != 0 ||
        (rv = readable("key", cfg->key_file, errmsg)) != 0 ||
        (rv = readable("CA file", cfg->ca_file, errmsg)) != 0)
        return rv;
    t = calloc(1, sizeof *t);
    if (t == NULL) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "out of memory for the raft transport");
        return BATON_ENOMEM;
    }
    if ((rv = make_ctx(cfg, true, &t->server, errmsg)) != 0 ||
        (rv = make_ctx(cfg, false, &t->client, errmsg)) != 0 ||
        (rv = peer_cert_check(t->server, t->client, self_id, cfg, errmsg)) != 0) {
        tls_ctx_free(t->server);
        tls_ctx_free(t->client);
        free(t);
        return rv;
    }
    t->base = base;
    t->loop = loop;
    t->cfg = *cfg;
    t->cfg.cert_file = t->cfg.key_file = t->cfg.ca_file = NULL;
    t->handshake_ms = cfg->handshake_timeout_ms ? cfg->handshake_timeout_ms : DEFAULT_HANDSHAKE_MS;
    t->max_pending = cfg->max_pending ? cfg->max_pending : DEFAULT_MAX_PENDING;
    t->log_window = uv_now(loop);
    base->data = NULL;
    base->impl = t;
    base->errmsg[0] = '\0';
    base->init = tls_init_cb;
    base->listen = tls_listen_cb;
    base->connect = tls_connect_cb;
    base->close = tls_close_cb;
    return 0;
}

int peer_tls_set_bind_address(struct raft_uv_transport *base, const char *address)
{
    struct peer_tls *t = impl(base);
    struct proto_addr a;

    if (proto_addr_parse(address, strlen(address), &a) != 0) return RAFT_INVALID;
    snprintf(t->bind, sizeof t->bind, "%s", address);
    return 0;
}

void peer_tls_free(struct raft_uv_transport *base)
{
    struct peer_tls *t = impl(base);

    if (t == NULL) return;
    if (t->handles == 0 && t->head == NULL) {
        destroy(t);
        return;
    }
    t->freed = true;
    if (!t->closing) close_all(t);
}
