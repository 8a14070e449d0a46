/*
 * transport.c -- the choice between the TLS transport (raft/peer_tls.c)
 * and raft_uv_tcp with TCP_NODELAY on every stream. See transport.h.
 *
 * The wrapper forwards init, listen, connect and close to the inner
 * transport. Accepted streams pass through accept_trampoline; each connect
 * request gets a small heap record (one per connection attempt, not per
 * message) so that the inner transport's callback can find the outer
 * request raft_uv gave us.
 */
#include "raft/transport.h"

#include <stdio.h>
#include <stdlib.h>

#include "client/baton_defs.h"
#include "proto/errmsg.h"
#include "raft/peer_tls.h"

/* One connect in flight through the inner transport. */
struct connect_req {
    struct raft_uv_connect inner;   /* given to the inner transport */
    struct raft_uv_connect *outer;  /* raft_uv's request */
};

static struct transport *outer_of(struct raft_uv_transport *t)
{
    return t->impl;
}

static void set_nodelay(struct uv_stream_s *stream)
{
    if (stream != NULL && stream->type == UV_TCP) (void)uv_tcp_nodelay((uv_tcp_t *)stream, 1);
}

static int wrap_init(struct raft_uv_transport *base, raft_id id, const char *address)
{
    struct transport *t = outer_of(base);
    return t->tcp.init(&t->tcp, id, address);
}

static void accept_trampoline(struct raft_uv_transport *tcp, raft_id id, const char *address,
                              struct uv_stream_s *stream)
{
    struct transport *t = tcp->data;

    set_nodelay(stream);
    t->accept_cb(&t->base, id, address, stream);
}

static int wrap_listen(struct raft_uv_transport *base, raft_uv_accept_cb cb)
{
    struct transport *t = outer_of(base);

    t->accept_cb = cb;
    return t->tcp.listen(&t->tcp, accept_trampoline);
}

static void connect_trampoline(struct raft_uv_connect *inner, struct uv_stream_s *stream,
                               int status)
{
    struct connect_req *req = inner->data;
    struct raft_uv_connect *outer = req->outer;

    free(req);
    if (status == 0) set_nodelay(stream);
    outer->cb(outer, stream, status);
}

static int wrap_connect(struct raft_uv_transport *base, struct raft_uv_connect *outer,
                        raft_id id, const char *address, raft_uv_connect_cb cb)
{
    struct transport *t = outer_of(base);
    struct connect_req *req;
    int rv;

    req = malloc(sizeof *req);
    if (req == NULL) return RAFT_NOMEM;
    req->inner.data = req;
    req->outer = outer;
    outer->cb = cb;
    rv = t->tcp.connect(&t->tcp, &req->inner, id, address, connect_trampoline);
    if (rv != 0) free(req);
    return rv;
}

static void close_trampoline(struct raft_uv_transport *tcp)
{
    struct transport *t = tcp->data;

    if (t->close_cb != NULL) t->close_cb(&t->base);
}

static void wrap_close(struct raft_uv_transport *base, raft_uv_transport_close_cb cb)
{
    struct transport *t = outer_of(base);

    t->close_cb = cb;
    t->tcp.close(&t->tcp, close_trampoline);
}

static int tcp_init(struct transport *t, uv_loop_t *loop, char *errmsg)
{
    int rv;

    rv = raft_uv_tcp_init(&t->tcp, loop);
    if (rv != 0) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "raft transport init failed (%d)", rv);
        return BATON_ENOMEM;
    }
    t->tcp.data = t;
    t->base.data = NULL;
    t->base.impl = t;
    t->base.errmsg[0] = '\0';
    t->base.init = wrap_init;
    t->base.listen = wrap_listen;
    t->base.connect = wrap_connect;
    t->base.close = wrap_close;
    t->accept_cb = NULL;
    t->close_cb = NULL;
    return 0;
}

int transport_init(struct transport *t, uv_loop_t *loop, uint32_t id,
                   const struct node_peer_tls *peer, char *errmsg)
{
    t->tls = peer->cert_file != NULL;
    if (t->tls) return peer_tls_init(&t->base, loop, id, peer, errmsg);
    return tcp_init(t, loop, errmsg);
}

int transport_set_bind_address(struct transport *t, const char *address)
{
    if (t->tls) return peer_tls_set_bind_address(&t->base, address);
    return raft_uv_tcp_set_bind_address(&t->tcp, address);
}

void transport_close(struct transport *t)
{
    if (t->tls)
        peer_tls_free(&t->base);
    else
        raft_uv_tcp_close(&t->tcp);
}
