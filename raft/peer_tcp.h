/*
 * peer_tcp.h -- the plaintext raft transport: libraft's own TCP transport
 * (raft_uv_tcp) again, for addresses of every kind. libraft 0.15 reads
 * addresses with uv_ip4_addr, so it takes neither host names nor IPv6; this
 * one takes proto/addr.h's whole grammar (raft/peer_addr.h: a name is
 * resolved at every connection attempt, each of its addresses tried in
 * order; a listen address is listened on at each of its addresses) and
 * sets TCP_NODELAY on every stream (libraft never does).
 *
 * On the wire it is raft_uv_tcp's handshake with the cluster id added
 * (raft/cluster_id.h): on connect the dialling node sends four
 * little-endian uint64 -- the protocol version, 2 (libraft's is 1, which
 * has no cluster id); its raft id; the size of the address field; its
 * cluster id (0: none yet) -- and its own raft address, NUL-padded to a
 * multiple of 8 bytes. The accepting node answers with its own cluster id,
 * one uint64, and closes the connection if the two differ (both log it);
 * then raft's messages follow, from the dialling node only. A dialling
 * node waits at most PEER_TCP_HANDSHAKE_MS for the answer.
 *
 * Protocol 1 -- libraft's, and the baton binary's before the cluster id --
 * is the same without the cluster id and without the answer. It is
 * accepted, unchecked (the first 24 bytes are read before the rest, so it
 * is read exactly as that binary read it), and spoken to a peer that
 * closed protocol 2 unanswered PEER_BASE_OLD_STRIKES times in a row, for
 * PEER_BASE_OLD_MS (raft/peer_base.h, "Older peers"). Built with
 * -DBATON_TEST_PEER_PROTOCOL_1, it speaks protocol 1 only and closes
 * protocol 2 unanswered, as that binary did (for the mixed-version tests).
 *
 * Admission (raft/peer_admit.h, through raft/peer_base.h): a dialling node
 * whose id the node does not admit is closed after its handshake, without
 * an answer. When the admitted set loses a node, its connections already
 * handed to raft, both ways, are ended with shutdown(2) (peer_tcp.c,
 * struct handed, says how without owning raft's handles).
 *
 * An inbound connection must send its handshake within
 * PEER_TCP_HANDSHAKE_MS, and at most PEER_TCP_MAX_PENDING wait at once
 * (one more closes the oldest), so that idle connections cannot pile up.
 * Loop thread only.
 */
#ifndef BATON_RAFT_PEER_TCP_H
#define BATON_RAFT_PEER_TCP_H

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#define PEER_TCP_HANDSHAKE_MS 5000
#define PEER_TCP_MAX_PENDING 64
#define PEER_TCP_MAX_ADDRESS 256 /* the handshake's address field, at most */

/* Set base up as the plaintext transport on loop. 0, or RAFT_NOMEM. Its
 * bind address is set with peer_base_set_bind_address, and it is released
 * with peer_base_free (raft/peer_base.h). */
int peer_tcp_init(struct raft_uv_transport *base, uv_loop_t *loop);

#endif
