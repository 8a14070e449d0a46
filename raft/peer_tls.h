/*
 * peer_tls.h -- a libraft 0.15 transport (struct raft_uv_transport) that
 * runs every raft connection over mutual TLS and admits only the nodes the
 * cluster knows. batond uses it when --peer-cert is given
 * (raft/transport.c chooses); docs/security.md describes the design and
 * docs/libraft-0.15.md what the transport interface asks of it.
 *
 * A connection, from the dialling node A to node B:
 *   1. TCP, then a TLS handshake (TLS 1.3, or 1.2 with --tls12). B
 *      requires a client certificate; each side verifies the other's chain
 *      against --peer-ca. No host names are checked: a node is known by its
 *      id, and A checks that B's certificate's subject CN is
 *      "baton-node-<B>" for the B raft asked it to dial.
 *   2. A sends a HELLO inside TLS (raft/peer_hello.h): its id and raft
 *      address, what libraft's own TCP handshake carries.
 *   3. B admits A only if A's certificate's CN is "baton-node-<id>" for
 *      the id of the HELLO, that id is not B's own, and B admits the id
 *      (raft/peer_admit.h: in raft's committed or latest configuration).
 *      B answers an ACK byte;
 *      anything else is closed, and the reason logged on B.
 *   4. Both sides hand raft a plaintext stream bridged to the TLS
 *      connection (raft/peer_link.h): raft reads and writes libraft's
 *      messages as it would on TCP.
 *
 * Bounds on what an unauthenticated peer may hold: every connection must
 * reach step 4 within handshake_timeout_ms, and at most max_pending inbound
 * connections may be short of it at once -- one more closes the oldest.
 * Refusals are logged through the `log` hook, at most 10 lines per 10 s,
 * so a flood cannot fill the disk.
 *
 * Everything runs on the loop thread. Only raft/ includes this header.
 */
#ifndef BATON_RAFT_PEER_TLS_H
#define BATON_RAFT_PEER_TLS_H

#include <raft.h>
#include <raft/uv.h>
#include <stdint.h>
#include <uv.h>

#include "raft/node.h"

/*
 * Make `base` the TLS transport for node self_id on loop, with the
 * certificates and hooks of cfg (its strings are read now and not kept).
 * Before returning it checks what every peer will check: that the
 * certificate and key are readable and match, that the certificate chain
 * verifies against the CA, and that its subject CN is baton-node-<self_id>.
 * Returns 0, or BATON_EINVAL / BATON_ENOMEM with errmsg
 * (BATON_ERRMSG_SIZE bytes) saying which file is wrong and why. Its bind
 * address is set with peer_base_set_bind_address (raft/peer_base.h). On
 * success release it with peer_base_free, after raft_uv has closed it (if
 * raft never closed it, its handles are closed and the memory goes once
 * the loop has run their callbacks).
 */
int peer_tls_init(struct raft_uv_transport *base, uv_loop_t *loop, uint32_t self_id,
                  const struct node_peer_tls *cfg, char *errmsg);

#endif /* BATON_RAFT_PEER_TLS_H */
