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
 * So the restored state is raft's snapshot at index 1 (term 1), whose
 * configuration is the new cluster's --cluster list, all voters; the log
 * is empty and resumes at index 2. Every node restored from the same file
 * with the same --cluster writes the same snapshot; the first election
 * then runs in term 2 as on any cluster that has been up.
 */
#ifndef BATON_RAFT_RESTORE_H
#define BATON_RAFT_RESTORE_H

#include <stddef.h>

#include "raft/node.h"

#define NODE_RESTORE_INDEX 1 /* the restored snapshot's index (and term) */

/*
 * Into cfg->raft_dir, which must hold no raft state: term 1 and a snapshot
 * at index NODE_RESTORE_INDEX, term 1, holding data[0..len) (the store's
 * snapshot bytes, whose applied index must be NODE_RESTORE_INDEX) and the
 * configuration of cfg->members. Runs a loop of its own until the files
 * are written. Returns 0, BATON_EINVAL (the directory holds raft state),
 * BATON_EIO or BATON_ENOMEM, with errmsg (BATON_ERRMSG_SIZE bytes) saying
 * why.
 */
int node_restore_write(const struct node_config *cfg, const void *data, size_t len,
                       char *errmsg);

#endif /* BATON_RAFT_RESTORE_H */
