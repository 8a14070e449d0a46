/*
 * transport.h -- the raft_uv transport baton hands to libraft, one of two:
 *
 *  - without peer TLS: raft/peer_tcp.h, libraft's own TCP transport
 *    (raft_uv_tcp) again, on the same wire, for host names and IPv6 as
 *    well as IPv4 (libraft's takes only IPv4), with TCP_NODELAY on every
 *    connection. libraft 0.15 never disables Nagle's algorithm on its
 *    sockets; with it on, a small message (an AppendEntries result, a
 *    heartbeat) written while an earlier one is unacknowledged waits for
 *    the peer's delayed ACK, up to 40 ms on Linux, and commits stall
 *    behind it under load;
 *  - with peer TLS (node_config.peer.cert_file set): raft/peer_tls.h,
 *    mutual TLS on every raft connection (it sets TCP_NODELAY too).
 *
 * Both admit only the node ids of transport_set_admit's set
 * (raft/peer_admit.h), which raft/node.c derives from raft's
 * configuration.
 *
 * Everything runs on the loop thread that runs raft. Not thread-safe.
 */
#ifndef BATON_RAFT_TRANSPORT_H
#define BATON_RAFT_TRANSPORT_H

#include <raft.h>
#include <raft/uv.h>
#include <stdbool.h>
#include <uv.h>

#include "raft/node.h"
#include "raft/peer_admit.h"

struct transport {
    struct raft_uv_transport base;  /* handed to raft_uv_init */
    bool tls;                       /* base is raft/peer_tls.c's, else raft/peer_tcp.c's */
};

/*
 * Initialise t on loop for node `id`: the TLS transport when
 * peer->cert_file is set, else the wrapped TCP one. Returns 0, or
 * BATON_EINVAL / BATON_ENOMEM with errmsg (BATON_ERRMSG_SIZE bytes) saying
 * why (a certificate, key or CA file that cannot be used). On success, t
 * must be released with transport_close after the raft_uv I/O that uses it
 * has been closed. t must not move in memory.
 */
int transport_init(struct transport *t, uv_loop_t *loop, uint32_t id,
                   const struct node_peer_tls *peer, char *errmsg);

/*
 * The cluster check of every handshake (raft/cluster_id.h): this node's
 * cluster id (0: none yet), and what is told when a node without one takes
 * the first one a peer presents. Refusals are logged through peer->log.
 * Call after transport_init and before raft_init.
 */
void transport_set_cluster(struct transport *t, uint64_t cluster_id,
                           void (*adopted)(void *arg, uint64_t id), void *arg);

/*
 * Feature levels (raft/peer_base.h): this binary's, which every handshake
 * tells the peer, and the cluster's committed one, below which a peer is
 * refused. May be called again at any time.
 */
void transport_set_levels(struct transport *t, uint32_t level, uint32_t cluster_level);

/* The first-start question (raft/peer_base.h): started(arg, id) says
 * whether node id has started in this cluster before. Until it is set
 * every question is answered "not known". */
void transport_set_started(struct transport *t, bool (*started)(void *arg, uint64_t id),
                           void *arg);

/* This node's cluster id as the handshakes present it (0: none yet). */
uint64_t transport_cluster_id(struct transport *t);

/* The level node `id` said at its last handshake with this node, 0 if
 * none was heard. */
uint32_t transport_peer_level(struct transport *t, uint32_t id);

/*
 * Make raft listen on `address` (HOST:PORT, proto/addr.h) instead of the address it
 * advertises in the configuration: another process -- the fault harness's
 * proxy, tests/fault/proxy.c -- then listens on the advertised address and
 * forwards to this one. Call after transport_init and before raft_init.
 * Returns 0, or RAFT_INVALID (not an address of proto/addr.h's grammar).
 */
int transport_set_bind_address(struct transport *t, const char *address);

/*
 * Who may connect from now on (raft/peer_admit.h; copied). When the set
 * changes, every live raft connection with a node it no longer admits is
 * closed at once, inbound and outbound. Until the first call every id is
 * admitted. Loop thread only.
 */
void transport_set_admit(struct transport *t, const struct peer_admit *a);

/* Release what transport_init allocated. */
void transport_close(struct transport *t);

#endif
