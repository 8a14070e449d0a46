/*
 * state_mark.h -- the mark a node leaves in its data directory once its
 * raft has had state (a term), so that a later start can tell a raft
 * directory that was never used from one that was lost.
 *
 * Why it matters: on an empty raft directory raft_bootstrap writes term 1
 * and the configuration, and the node takes part in elections again with
 * no memory of the votes it cast -- it could vote twice in a term, and two
 * leaders could be elected in one. So a node whose data directory carries
 * the mark (or whose store has applied entries) but whose raft directory
 * holds no state refuses to start (raft/node.c, node_open). The mark lives
 * beside the raft directory, not in it: it must outlive the loss of that
 * directory, and go only with the whole data directory.
 */
#ifndef BATON_RAFT_STATE_MARK_H
#define BATON_RAFT_STATE_MARK_H

#include <stdbool.h>
#include <stdint.h>

/* Does the mark exist at path? */
bool state_mark_exists(const char *path);

/*
 * Create the mark at path, durably (the file and its directory are synced:
 * it must be on disk before the votes it vouches for can matter). Its text
 * names the node and the term in which it was made, for a reader. Returns
 * 0 or BATON_EIO.
 */
int state_mark_write(const char *path, uint32_t id, uint64_t term);

#endif /* BATON_RAFT_STATE_MARK_H */
