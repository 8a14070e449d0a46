/*
 * peer_hello.h -- the first message on a raft connection secured with
 * mutual TLS (raft/peer_tls.c), and the certificate name that goes with a
 * node id. No I/O; does not include <raft.h>, so tests may use it too.
 *
 * Once the TLS handshake is over, the connecting node sends one HELLO,
 * inside TLS, carrying what libraft's own TCP handshake carries and what
 * raft's accept callback needs: the sender's node id and raft address.
 *
 *     u32  version   PEER_HELLO_VERSION (3)
 *     u64  node id   the sender's raft id
 *     u64  cluster   the sender's cluster id (raft/cluster_id.h; 0: none yet)
 *     u64  levels    the sender's feature level, its cluster level above it
 *                    (raft/peer_base.h, "Feature levels")
 *     u8   flags     0, or PEER_ASK_STARTED: the first-start question
 *                    (raft/peer_base.h), not a raft connection
 *     u16  n         1..BATON_MAX_ADDR
 *     n bytes        the sender's raft address ("a.b.c.d:port", no NUL)
 *
 * all little-endian. The accepting node answers with PEER_HELLO_ANSWER
 * bytes: PEER_HELLO_ACK when it takes the connection, PEER_HELLO_OTHER (a
 * node of another cluster) or PEER_HELLO_REFUSED (any other refusal: not
 * admitted, a feature level below the cluster's, a certificate that does
 * not match), then its own cluster id and levels; a refused connection is
 * then closed, and both sides log why. After the ACK the connection
 * carries libraft's messages, unchanged, in both directions. A question
 * whose checks pass is answered PEER_HELLO_KNOWN (the sender's id has
 * started in this cluster) or PEER_HELLO_ACK (it has not), and closed.
 *
 * Older versions, each binary's before: version 2 has no levels (header
 * PEER_HELLO_HEADER_2) and is answered with ACK or OTHER and the cluster
 * id (PEER_HELLO_ANSWER_2 bytes), any other refusal without an answer;
 * version 1 has no cluster id either (PEER_HELLO_HEADER_1) and is answered
 * with the ACK byte alone. Either counts as feature level 1. They are
 * taken, and sent to a peer that closed the newer one unanswered
 * (raft/peer_tls.c; raft/peer_base.h, "Older peers").
 */
#ifndef BATON_RAFT_PEER_HELLO_H
#define BATON_RAFT_PEER_HELLO_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/msg.h"

#define PEER_HELLO_VERSION 3u
#define PEER_HELLO_HEADER 31u   /* version, id, cluster, levels, flags, n */
#define PEER_HELLO_VERSION_2 2u /* an older binary's: no levels */
#define PEER_HELLO_HEADER_2 22u /* version, id, cluster, n */
#define PEER_HELLO_VERSION_1 1u /* an older binary's: no cluster id */
#define PEER_HELLO_HEADER_1 14u /* version, id, n */
#define PEER_HELLO_MAX (PEER_HELLO_HEADER + BATON_MAX_ADDR)
#define PEER_HELLO_ACK 0x01
#define PEER_HELLO_OTHER 0x02   /* another cluster's node */
#define PEER_HELLO_REFUSED 0x03 /* any other refusal (version 3 only) */
#define PEER_HELLO_KNOWN 0x04   /* a question's answer: the sender has started here */
/* The flag of the first-start question, in the HELLO's flags and in the
 * plaintext handshake's flags word (raft/peer_base.h). */
#define PEER_ASK_STARTED 0x1u
#define PEER_HELLO_ANSWER 17u   /* the answer byte, the cluster id, the levels */
#define PEER_HELLO_ANSWER_2 9u  /* version 2's: the answer byte, the cluster id */

/* Longest subject CN a node certificate carries: "baton-node-" and a u64. */
#define PEER_CN_MAX 32

struct peer_hello {
    unsigned version; /* PEER_HELLO_VERSION, _2 or _1 */
    uint64_t id;
    uint64_t cluster; /* 0 in version 1 */
    uint64_t levels;  /* 0 before version 3 */
    unsigned flags;   /* 0 before version 3 */
    char address[BATON_MAX_ADDR + 1];
};

/* Append the HELLO of node `id` of cluster `cluster` at `address` with
 * levels word `levels` and flags `flags` to b, version `version` (version
 * 2 leaves the levels and flags out, version 1 the cluster too). 0,
 * BATON_EINVAL (an address that is empty or longer than BATON_MAX_ADDR,
 * flags above a byte, another version) or BATON_ENOMEM. */
int peer_hello_encode(struct buf *b, unsigned version, uint64_t id, uint64_t cluster,
                      uint64_t levels, unsigned flags, const char *address);

/*
 * Parse a HELLO, of version 3, 2 or 1 (h->version says which), from the
 * first n bytes received. Returns its length
 * (the bytes to consume) with *h filled; 0 while more bytes are needed; or
 * BATON_EMALFORMED (another version, id 0, a flag other than
 * PEER_ASK_STARTED, a bad length, or an address with a NUL byte). A build with BATON_TEST_PEER_PROTOCOL_1 takes version
 * 1 only, as the binary before the cluster id did.
 */
int peer_hello_parse(const void *data, size_t n, struct peer_hello *h);

/* The subject CN node `id`'s certificate must carry: "baton-node-<id>",
 * the id in decimal without leading zeros. out has PEER_CN_MAX bytes. */
const char *peer_cn_of(uint64_t id, char out[PEER_CN_MAX]);

#endif /* BATON_RAFT_PEER_HELLO_H */
