/*
 * peer_hello.h -- the first message on a raft connection secured with
 * mutual TLS (raft/peer_tls.c), and the certificate name that goes with a
 * node id. No I/O; does not include <raft.h>, so tests may use it too.
 *
 * Once the TLS handshake is over, the connecting node sends one HELLO,
 * inside TLS, carrying what libraft's own TCP handshake carries and what
 * raft's accept callback needs: the sender's node id and raft address.
 *
 *     u32  version   PEER_HELLO_VERSION (2)
 *     u64  node id   the sender's raft id
 *     u64  cluster   the sender's cluster id (raft/cluster_id.h; 0: none yet)
 *     u16  n         1..BATON_MAX_ADDR
 *     n bytes        the sender's raft address ("a.b.c.d:port", no NUL)
 *
 * all little-endian. The accepting node answers PEER_HELLO_ACK and its own
 * cluster id (u64) when it takes the connection; a node of another
 * cluster gets PEER_HELLO_OTHER and that id instead, and the connection is
 * closed, which both sides log; any other refused connection is closed
 * without an answer, and the reason is logged on the refusing side only. After the ACK the
 * connection carries libraft's messages, unchanged, in both directions.
 *
 * Version 1, the binary's before the cluster id, has no cluster field
 * (header PEER_HELLO_HEADER_1) and is answered with the ACK byte alone; it
 * is taken unchecked, and sent to a peer that closed version 2 unanswered
 * (raft/peer_tls.c; raft/peer_base.h, "Older peers").
 */
#ifndef BATON_RAFT_PEER_HELLO_H
#define BATON_RAFT_PEER_HELLO_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/msg.h"

#define PEER_HELLO_VERSION 2u
#define PEER_HELLO_HEADER 22u                          /* version, id, cluster, n */
#define PEER_HELLO_VERSION_1 1u /* an older binary's: no cluster id */
#define PEER_HELLO_HEADER_1 14u /* version, id, n */
#define PEER_HELLO_MAX (PEER_HELLO_HEADER + BATON_MAX_ADDR)
#define PEER_HELLO_ACK 0x01
#define PEER_HELLO_OTHER 0x02 /* another cluster's node */
#define PEER_HELLO_ANSWER 9u  /* ACK or OTHER, then the cluster id */

/* Longest subject CN a node certificate carries: "baton-node-" and a u64. */
#define PEER_CN_MAX 32

struct peer_hello {
    unsigned version; /* PEER_HELLO_VERSION or PEER_HELLO_VERSION_1 */
    uint64_t id;
    uint64_t cluster;
    char address[BATON_MAX_ADDR + 1];
};

/* Append the HELLO of node `id` of cluster `cluster` at `address` to b,
 * version `version` (version 1 leaves the cluster out). 0, BATON_EINVAL (an
 * address that is empty or longer than BATON_MAX_ADDR, another version) or
 * BATON_ENOMEM. */
int peer_hello_encode(struct buf *b, unsigned version, uint64_t id, uint64_t cluster,
                      const char *address);

/*
 * Parse a HELLO, of version 2 or 1 (h->version says which; version 1's
 * h->cluster is 0), from the first n bytes received. Returns its length
 * (the bytes to consume) with *h filled; 0 while more bytes are needed; or
 * BATON_EMALFORMED (another version, id 0, a bad length, or an address
 * with a NUL byte). A build with BATON_TEST_PEER_PROTOCOL_1 takes version
 * 1 only, as the binary before the cluster id did.
 */
int peer_hello_parse(const void *data, size_t n, struct peer_hello *h);

/* The subject CN node `id`'s certificate must carry: "baton-node-<id>",
 * the id in decimal without leading zeros. out has PEER_CN_MAX bytes. */
const char *peer_cn_of(uint64_t id, char out[PEER_CN_MAX]);

#endif /* BATON_RAFT_PEER_HELLO_H */
