/*
 * peer_addr.h -- raft addresses made into sockets, for both raft transports
 * (raft/peer_tcp.c, raft/peer_tls.c): an address is any of proto/addr.h's
 * grammar -- a.b.c.d:port, [IPv6]:port or host.name:port.
 *
 *  - peer_listen: listen on every address a name stands for ("localhost"
 *    on ::1 and 127.0.0.1), resolved once when raft starts listening;
 *  - peer_dial: connect to a peer. A name is resolved again at every
 *    attempt, on the loop (uv_getaddrinfo, which runs getaddrinfo on
 *    libuv's thread pool), so that a node whose address changed behind its
 *    name is found on the next reconnect; each address it resolves to is
 *    tried in order until one connects. An IP literal never reaches a
 *    resolver.
 *
 * Loop thread only.
 */
#ifndef BATON_RAFT_PEER_ADDR_H
#define BATON_RAFT_PEER_ADDR_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <uv.h>

#define PEER_ADDR_MAX 8 /* addresses of one name tried or listened on */

/* ---- listening ---------------------------------------------------------- */

struct peer_listeners {
    uv_tcp_t h[PEER_ADDR_MAX];
    unsigned n;             /* handles initialised (each must be closed) */
};

/*
 * Listen on every address `address` stands for (resolved now, blocking
 * the loop: call it at start), with cb and h->data = data on each handle.
 * Returns 0 if at least one address listens, else a negative libuv code
 * with errmsg (cap bytes) saying why. Either way ls->n handles are
 * initialised (listening or not), and the caller closes each of them.
 */
int peer_listen(uv_loop_t *loop, const char *address, struct peer_listeners *ls,
                uv_connection_cb cb, void *data, char *errmsg, size_t cap);

/* ---- dialling ----------------------------------------------------------- */

struct peer_dial;

/*
 * The end of a dial: tcp is the connected handle (allocated with
 * raft_malloc; the callee owns it: uv_close it and raft_free it in the close
 * callback, or give it to raft, which does) and status 0; or tcp NULL and
 * a negative libuv code (UV_ECANCELED after peer_dial_cancel). d may be
 * freed from here.
 */
typedef void (*peer_dial_cb)(struct peer_dial *d, uv_tcp_t *tcp, int status);

struct peer_dial {
    void *data;             /* the caller's */
    /* Private. */
    uv_loop_t *loop;
    peer_dial_cb cb;
    uv_getaddrinfo_t gai;
    uv_connect_t creq;
    uv_tcp_t *tcp;          /* the current attempt's handle */
    struct sockaddr_storage addrs[PEER_ADDR_MAX];
    unsigned n, next;
    bool resolving, canceled;
    int last;               /* the last attempt's error */
};

/*
 * Start connecting d (its memory must stay put until the callback) to
 * `address`. Returns 0, and cb runs exactly once, later, from the loop; or
 * a negative libuv code (a malformed address: UV_EINVAL), and cb never runs.
 */
int peer_dial_start(struct peer_dial *d, uv_loop_t *loop, const char *address, peer_dial_cb cb);

/* Stop a dial in progress: its callback runs soon with UV_ECANCELED (or,
 * if it was about to succeed, still UV_ECANCELED: the socket is closed). */
void peer_dial_cancel(struct peer_dial *d);

/* Close a handle from a dial or given to raft: uv_close, then raft_free. */
void peer_tcp_handle_close(uv_tcp_t *tcp);

#endif
