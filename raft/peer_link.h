/*
 * peer_link.h -- one raft connection under TLS: a TCP socket, a proto/tls.h
 * endpoint, a handshake deadline, and, once its owner (raft/peer_tls.c)
 * has decided who is on the other end, a bridge that turns the connection
 * into a plaintext stream libraft can own.
 *
 * Why a bridge. libraft's transport interface hands raft a uv_stream_t,
 * which raft reads with uv_read_start, writes with uv_write, closes with
 * uv_close and then frees with raft_free. libuv has no user-defined streams,
 * so TLS cannot sit inside one. The bridge is a socketpair: raft gets one
 * end as a uv_pipe_t it owns outright (allocated with raft_malloc, as raft
 * frees it); the link keeps the other end and pumps bytes between it and
 * the TLS connection. Raft closing its end, the peer closing the TCP
 * connection, and the link closing itself all reach the other side as an
 * ordinary end of stream, so neither side ever touches the other's memory.
 *
 * Flow control: the link stops reading one side while the other side's
 * write queue holds more than PEER_LINK_HIGH_WATER bytes, and starts again
 * once it drained below a quarter of that.
 *
 * Lifetime: the owner allocates the struct, calls peer_link_init and then
 * peer_link_accept or peer_link_connect; from then on the link reports
 * through its events and ends with exactly one `closed` event, after every
 * handle is closed, after which the owner frees the struct. Loop thread
 * only.
 */
#ifndef BATON_RAFT_PEER_LINK_H
#define BATON_RAFT_PEER_LINK_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "proto/buf.h"
#include "proto/tls.h"
#include "raft/peer_addr.h"
#include "raft/peer_base.h"

#define PEER_LINK_HIGH_WATER (4u << 20)
#define PEER_LINK_READ_SIZE 65536

struct peer_link;

struct peer_link_events {
    /* The TLS handshake is over and the peer's certificate chain verified
     * against the CA (peer_link_cn names it). The owner may close the
     * link, or send. */
    void (*up)(struct peer_link *l);
    /* Plaintext arrived before the bridge: `in` holds every byte not yet
     * consumed; the owner consumes what it uses (buf_consume) and may close
     * the link or bridge it (what it left in `in` then goes to raft). */
    void (*plain)(struct peer_link *l, struct buf *in);
    /* Every handle is closed; the owner frees l now. l->why says why the
     * link closed. */
    void (*closed)(struct peer_link *l);
};

struct peer_link {
    /* The owner's. */
    void *owner;
    struct peer_conn conn;  /* in the owner's list; conn.outbound: we dialled */
    bool handed;            /* its stream was given to raft */
    bool quiet;             /* do not log its end (owner's choice) */
    uint64_t peer_id;       /* outbound: the node dialled; inbound: from its HELLO */
    void *req;              /* outbound: raft's connect request, until answered */
    char peer[72];          /* the other end's address, for logs: the one dialled
                               (a name, say), or the accepted socket's */
    char why[200];          /* why it closed ("" while open) */
    bool peer_ended;        /* it closed because the peer ended the connection */
    unsigned hello;         /* outbound: the HELLO version sent, 0: none yet */
    bool answered;          /* outbound: a byte of the answer arrived */

    /* The link's own. */
    uv_loop_t *loop;
    const struct peer_link_events *ev;
    char *rbuf;             /* PEER_LINK_READ_SIZE bytes, shared by the owner's links */
    uv_tcp_t tcp;
    struct peer_dial dial;  /* outbound: resolving the address and connecting */
    bool dialing;           /* dial started and its callback not yet run */
    uv_timer_t deadline;    /* the handshake's */
    tls_ctx *ctx;           /* the transport's; outlives the link */
    uv_pipe_t local;        /* our end of the bridge */
    bool local_open;
    tls *tls;
    struct buf plain;       /* decrypted, not yet consumed or written to raft */
    struct buf out;         /* sealed for the peer, not yet written */
    bool sniffed;           /* the first bytes were checked to be TLS */
    bool up, bridged, closing;
    bool tcp_paused, local_paused;
    int handles;            /* handles initialised and not yet closed */
};

/* Set up l (zeroed by the caller) on loop: its TCP and timer handles. rbuf
 * is a buffer of PEER_LINK_READ_SIZE bytes that outlives the link (reads
 * are consumed before the read callback returns, so links may share it). */
void peer_link_init(struct peer_link *l, uv_loop_t *loop, const struct peer_link_events *ev,
                    char *rbuf);

/* Accept the pending connection of `server` and run the server side of a
 * TLS handshake with ctx, which must end within timeout_ms. On failure the
 * link closes itself (its `closed` event follows). */
void peer_link_accept(struct peer_link *l, uv_stream_t *server, tls_ctx *ctx,
                      unsigned timeout_ms);

/* Connect to address (resolved now if it is a name, every address tried:
 * raft/peer_addr.h) and run the client side of a TLS handshake with ctx (no
 * host-name check: the owner checks the certificate's CN), all within
 * timeout_ms. On failure the link closes itself; l->quiet is set when the
 * TCP connection itself failed (the peer is down: nothing worth a log). */
void peer_link_connect(struct peer_link *l, const char *address, tls_ctx *ctx,
                       unsigned timeout_ms);

/* Send plaintext through TLS (before the bridge: the HELLO and its ACK).
 * 0, or a BATON_E* code (the owner then closes the link). */
int peer_link_send(struct peer_link *l, const void *data, size_t n);

/*
 * Open the bridge: *raft_end becomes a new uv_pipe_t (raft_malloc'd, raft
 * owns it from now on: it uv_closes and raft_frees it) whose bytes travel
 * through this link's TLS connection, and the handshake deadline stops.
 * 0, or a negative libuv / BATON_E* code (no stream was made; the owner
 * closes the link).
 */
int peer_link_bridge(struct peer_link *l, uv_stream_t **raft_end);

/* Close l (idempotent): its `closed` event follows once every handle is
 * closed. `why` (printf-style) is kept in l->why for the owner's log. */
void peer_link_close(struct peer_link *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The subject CN of the peer's verified certificate, "" if none yet. */
const char *peer_link_cn(const struct peer_link *l);

#endif /* BATON_RAFT_PEER_LINK_H */
