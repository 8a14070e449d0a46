/*
 * restore.h -- the raft side of `batond --restore` (docs/operations.md,
 * "Backup and restore"): a new node's raft directory that starts from a
 * snapshot of a backed-up state instead of an empty log.
 *
 * Why raft must hold the restored state, not only the store: raft gives a
 * new or lagging member the cluster's state as its latest snapshot plus
 * the log after it, and a node whose store files are lost (a crash and a
 * reboot, storage/store.h) rebuilds them the same way. A store restored
 * behind raft's back, with a log that starts at 1, would be missing from
 * both: a member added later would replay the log over an empty store.
 * So the restored state is raft's snapshot at node_restore_coords' index
 * and term, whose configuration is the new cluster's --cluster list, all
 * voters; the log is empty and resumes after it. Every node restored from
 * the same file with the same --cluster writes the same snapshot.
 *
 * Why those coordinates: a fresh bootstrap starts at index 1, term 1. Had
 * a restore started there too, raft could not tell a restored node from an
 * empty one: an empty node started with the restored cluster's --cluster
 * (one the operator forgot to restore, or whose data directory was lost)
 * has as up-to-date a log, can be elected, and would lead with an empty
 * state, granting again the locks the restored state holds. So a restore
 * starts NODE_RESTORE_OFFSET above the backup's own index and term: no
 * bootstrapped node ever reaches a term of 2^40, so its log is never as
 * up-to-date as a restored one's, it gets no restored node's vote, and a
 * restored leader replaces its log with the snapshot; and the restored
 * cluster starts above every index and term the backed-up one had. The
 * cluster id check at the raft handshake (raft/cluster_id.h) keeps such a
 * node out in the first place.
 */
#ifndef BATON_RAFT_RESTORE_H
#define BATON_RAFT_RESTORE_H

#include <stddef.h>

#include "raft/node.h"

#define NODE_RESTORE_OFFSET (1ull << 40)

/* The restored snapshot's index and term for a backup of the state at
 * (backup_index, backup_term): each plus NODE_RESTORE_OFFSET. 0, or
 * BATON_EINVAL if either is too large to add it to. */
int node_restore_coords(uint64_t backup_index, uint64_t backup_term, uint64_t *index,
                        uint64_t *term);

/*
 * Into cfg->raft_dir, which must hold no raft state: term `term` and a
 * snapshot at `index`, `term`, holding data[0..len) (the store's snapshot
 * bytes, whose applied index must be `index`) and the configuration of
 * cfg->members. Runs a loop of its own until the files
 * are written. Returns 0, BATON_EINVAL (the directory holds raft state),
 * BATON_EIO or BATON_ENOMEM, with errmsg (BATON_ERRMSG_SIZE bytes) saying
 * why.
 */
int node_restore_write(const struct node_config *cfg, const void *data, size_t len,
                       uint64_t index, uint64_t term, char *errmsg);

#endif /* BATON_RAFT_RESTORE_H */
