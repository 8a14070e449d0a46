/*
 * cluster_id.h -- the identity of a cluster, which every raft connection
 * checks at its handshake (raft/peer_tcp.h, raft/peer_hello.h): a node
 * refuses a peer that belongs to another cluster, and logs it.
 *
 * Why: a fresh bootstrap and a restored cluster both start with the same
 * member list, and raft alone cannot tell an empty node from a restored
 * one. An empty node started next to restored ones (a node the operator
 * forgot to restore) could otherwise be elected and lead with an empty
 * state, granting again locks the restored state holds.
 *
 * The id is a nonzero 64-bit value in the data directory's file
 * `cluster-id` (beside the raft directory, like the member mark of
 * raft/state_mark.h), made once and never changed:
 *  - at the first start of a node that bootstraps: derived from the
 *    --cluster member list (cluster_id_of_bootstrap), so that every node of
 *    a new cluster, each bootstrapping on its own, makes the same one;
 *  - by `batond --restore`: derived from the backup file's digest, its
 *    coordinates and the member list (cluster_id_of_restore), so that every
 *    node restored from the same file onto the same --cluster makes the
 *    same one, and no bootstrap of those members makes it;
 *  - on a --join node: none (0) until the first member that connects to it
 *    presents one, which it then keeps (cluster_id_write).
 * A node with state from before the id existed makes the bootstrap one.
 */
#ifndef BATON_RAFT_CLUSTER_ID_H
#define BATON_RAFT_CLUSTER_ID_H

#include <stdint.h>

#include "raft/node.h"

/* The id in the file at path: 0 and *id set, BATON_ENOTFOUND (no file) or
 * BATON_EMALFORMED (not a nonzero 16-digit hex number). */
int cluster_id_load(const char *path, uint64_t *id);

/* Write id (nonzero) to path durably (a temporary file, fsync, rename,
 * fsync of the directory). 0 or BATON_EIO. */
int cluster_id_write(const char *path, uint64_t id);

/* The id a bootstrap of cfg's members makes. */
uint64_t cluster_id_of_bootstrap(const struct node_config *cfg);

/* The id a restore of a backup (its state's digest, index and term) onto
 * cfg's members, at raft index `index`, makes. Never the bootstrap's. */
uint64_t cluster_id_of_restore(const struct node_config *cfg, uint64_t digest,
                               uint64_t backup_index, uint64_t backup_term, uint64_t index,
                               uint64_t fence_floor);

#endif /* BATON_RAFT_CLUSTER_ID_H */
