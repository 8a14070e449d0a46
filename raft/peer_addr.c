/*
 * peer_addr.c -- listen on and dial raft addresses of every kind. See
 * peer_addr.h.
 */
#include "raft/peer_addr.h"

#include <netdb.h>
#include <raft.h>
#include <stdio.h>
#include <string.h>

#include "proto/addr.h"
#include "proto/resolve.h"

static void free_handle(uv_handle_t *h)
{
    raft_free(h);
}

void peer_tcp_handle_close(uv_tcp_t *tcp)
{
    if (!uv_is_closing((uv_handle_t *)tcp)) uv_close((uv_handle_t *)tcp, free_handle);
}

/* What a failed bind or listen on a raft address means to an operator. */
static const char *listen_hint(int rv)
{
    if (rv == UV_EADDRINUSE) return " (another process listens there: another batond?)";
    if (rv == UV_EADDRNOTAVAIL) return " (not an address of this host)";
    return "";
}

int peer_listen(uv_loop_t *loop, const char *address, struct peer_listeners *ls,
                uv_connection_cb cb, void *data, char *errmsg, size_t cap)
{
    struct sockaddr_storage addrs[PEER_ADDR_MAX];
    char text[BATON_MAX_ADDR + 1];
    struct proto_addr a;
    const char *why;
    unsigned n, ok = 0;
    int rv, first = 0;

    ls->n = 0;
    if (proto_addr_parse(address, strlen(address), &a) != 0) {
        snprintf(errmsg, cap, "raft address '%s': %s", address, a.why);
        return UV_EINVAL;
    }
    n = proto_resolve(&a, addrs, NULL, PEER_ADDR_MAX, &why); /* blocks: the node is starting */
    if (n == 0) {
        snprintf(errmsg, cap, "raft address '%s': cannot resolve %s: %s", address, a.host, why);
        return UV_EAI_NONAME;
    }
    for (unsigned i = 0; i < n; i++) {
        uv_tcp_t *h = &ls->h[ls->n++];

        uv_tcp_init(loop, h);
        h->data = data;
        rv = uv_tcp_bind(h, (const struct sockaddr *)&addrs[i], 0);
        if (rv == 0) rv = uv_listen((uv_stream_t *)h, 128, cb);
        if (rv == 0) {
            ok++;
        } else if (first == 0) {
            first = rv;
            snprintf(errmsg, cap, "cannot listen for raft on %s: %s%s",
                     proto_addr_format((const struct sockaddr *)&addrs[i], text, sizeof text),
                     uv_strerror(rv), listen_hint(rv));
        }
    }
    return ok > 0 ? 0 : first;
}

/* ---- dialling ----------------------------------------------------------- */

static void finish(struct peer_dial *d, uv_tcp_t *tcp, int status)
{
    d->cb(d, tcp, status);
}

static void on_connect(uv_connect_t *req, int status);

/* Try the next address; at the end of the list report the last error. */
static void try_next(struct peer_dial *d)
{
    while (!d->canceled && d->next < d->n) {
        const struct sockaddr *sa = (const struct sockaddr *)&d->addrs[d->next++];
        int rv;

        d->tcp = raft_malloc(sizeof *d->tcp);
        if (d->tcp == NULL) {
            d->last = UV_ENOMEM;
            break;
        }
        uv_tcp_init(d->loop, d->tcp);
        d->tcp->data = d;
        rv = uv_tcp_connect(&d->creq, d->tcp, sa, on_connect);
        if (rv == 0) return;
        peer_tcp_handle_close(d->tcp);
        d->tcp = NULL;
        d->last = rv;
    }
    finish(d, NULL, d->canceled ? UV_ECANCELED : d->last);
}

static void on_connect(uv_connect_t *req, int status)
{
    struct peer_dial *d = req->data;
    uv_tcp_t *tcp = d->tcp;

    d->tcp = NULL;
    if (status == 0 && !d->canceled) {
        finish(d, tcp, 0);
        return;
    }
    peer_tcp_handle_close(tcp); /* a no-op after peer_dial_cancel closed it */
    d->last = status < 0 ? status : UV_ECANCELED;
    try_next(d);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    struct peer_dial *d = req->data;

    d->resolving = false;
    if (status == 0) d->n = proto_resolve_take(res, d->addrs, NULL, PEER_ADDR_MAX);
    uv_freeaddrinfo(res);
    if (d->canceled) {
        finish(d, NULL, UV_ECANCELED);
        return;
    }
    if (status < 0) {
        finish(d, NULL, status);
        return;
    }
    d->last = UV_EAI_NONAME;
    try_next(d);
}

int peer_dial_start(struct peer_dial *d, uv_loop_t *loop, const char *address, peer_dial_cb cb)
{
    struct proto_addr a;
    struct addrinfo hints;
    char port[8];
    int rv;

    memset(d->addrs, 0, sizeof d->addrs);
    d->loop = loop;
    d->cb = cb;
    d->n = d->next = 0;
    d->tcp = NULL;
    d->canceled = d->resolving = false;
    d->creq.data = d;
    d->gai.data = d;
    if (proto_addr_parse(address, strlen(address), &a) != 0) return UV_EINVAL;
    if (proto_addr_sockaddr(&a, &d->addrs[0]) != 0) {
        /* An IP literal: no resolver. uv_tcp_connect reports even an
         * immediate failure through its callback, so cb still runs later. */
        d->n = 1;
        d->next = 1;
        d->tcp = raft_malloc(sizeof *d->tcp);
        if (d->tcp == NULL) return UV_ENOMEM;
        uv_tcp_init(loop, d->tcp);
        d->tcp->data = d;
        rv = uv_tcp_connect(&d->creq, d->tcp, (const struct sockaddr *)&d->addrs[0], on_connect);
        if (rv != 0) {
            peer_tcp_handle_close(d->tcp);
            d->tcp = NULL;
        }
        return rv;
    }
    proto_resolve_hints(&hints);
    snprintf(port, sizeof port, "%u", a.port);
    rv = uv_getaddrinfo(loop, &d->gai, on_resolved, a.host, port, &hints);
    if (rv == 0) d->resolving = true;
    return rv;
}

void peer_dial_cancel(struct peer_dial *d)
{
    if (d->canceled) return;
    d->canceled = true;
    if (d->resolving) (void)uv_cancel((uv_req_t *)&d->gai); /* on_resolved follows */
    if (d->tcp != NULL) peer_tcp_handle_close(d->tcp);  /* on_connect: UV_ECANCELED */
}
