/*
 * fake_node.h -- a node of one, for running batond's server in a test
 * process without raft (struct node_io, raft/node.h).
 *
 * It leads from the first loop turn after open, unless told otherwise, and
 * "commits" every proposal on the next loop turn by applying it to the
 * store at the next index: hooks.applied sees the entry first, then the
 * proposal's callback, as with the real node. A barrier (confirm) commits
 * the same way. It has no other voter, so transfers and membership
 * changes are refused with the errors the real node gives for a cluster
 * of one. Everything runs on the loop thread.
 */
#ifndef BATON_TESTS_UNIT_FAKE_NODE_H
#define BATON_TESTS_UNIT_FAKE_NODE_H

#include <stdbool.h>
#include <stdint.h>

#include "raft/node.h"

extern const struct node_io fake_node_io;

/* What a test may look at and steer, on the loop thread. */
struct fake_node_stats {
    uint64_t entries;       /* proposals applied */
    uint64_t barriers;      /* confirms committed */
    uint64_t refused;       /* proposals refused: not leading */
};

/* The one fake node of this process (NULL before open and after free). */
struct node *fake_node_current(void);
void fake_node_stats(const struct node *n, struct fake_node_stats *out);
/* Start or stop leading: hooks.ready(ready) runs on the next loop turn;
 * proposals queued when it stops complete with BATON_ENOTLEADER. */
void fake_node_set_leading(struct node *n, bool leading);
/* Should the node lead from its first loop turn (default true)? Set before
 * server_init. */
void fake_node_lead_at_open(bool lead);
/* Should members() say, while it leads, that it has caught up (node.h,
 * caught_up), as the real leader says of itself (default false)? */
void fake_node_report_caught_up(bool on);

#endif /* BATON_TESTS_UNIT_FAKE_NODE_H */
