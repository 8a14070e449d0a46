/*
 * peer_cert.h -- batond's start-up check of its own raft certificate.
 *
 * A node whose certificate its peers would refuse -- signed by another CA,
 * expired, or naming another node -- would start, then fail every raft
 * connection with a reason logged only on the other nodes. So before
 * listening, the TLS transport runs one complete handshake in memory
 * between its own client and server contexts: each side verifies the
 * other's certificate (this node's) against --peer-ca exactly as a peer
 * does, and the server side reads the subject CN a peer would see.
 */
#ifndef BATON_RAFT_PEER_CERT_H
#define BATON_RAFT_PEER_CERT_H

#include <stdint.h>

#include "proto/tls.h"
#include "raft/node.h"

/* 0 if the contexts made from cfg accept each other and the certificate's
 * CN is baton-node-<self_id>; else BATON_EINVAL / BATON_ENOMEM with errmsg
 * (BATON_ERRMSG_SIZE bytes) naming the file and the problem. */
int peer_cert_check(tls_ctx *server, tls_ctx *client, uint32_t self_id,
                    const struct node_peer_tls *cfg, char *errmsg);

#endif /* BATON_RAFT_PEER_CERT_H */
