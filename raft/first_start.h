/*
 * first_start.h -- the question a node asks the other members before it
 * bootstraps on an empty data directory: "has node <id> started in your
 * cluster before?" (docs/design.md, "A node that lost its data
 * directory").
 *
 * A node that bootstraps writes term 1 and the configuration of its
 * --cluster list, and derives the same cluster id as the running cluster's
 * (raft/cluster_id.h). On a node that had run before and lost its whole
 * data directory, that forgets every vote it gave, and two such nodes of
 * three make a second cluster next to the first. The running cluster
 * records, in its replicated members table, every member that has started
 * and caught up once (server/members.c); a member asked about a node id it
 * has recorded answers "known" (raft/peer_base.h, "The first-start
 * question"), and the asking node refuses to start.
 *
 * The question goes over the raft port, with the transport the node would
 * use (mutual TLS or plaintext: raft/transport.h), on a loop of its own,
 * before the node's raft exists. Each other member is dialled once, all at
 * once; the question ends when every dial has ended or after budget_ms.
 * A member that is not up refuses the dial at once, so the first start of
 * a whole fresh cluster, whose nodes start together, is not held up.
 */
#ifndef BATON_RAFT_FIRST_START_H
#define BATON_RAFT_FIRST_START_H

#include <stdint.h>

#include "raft/node.h"

/* The bound of the question when the caller gives none. */
#define FIRST_START_BUDGET_MS 3000

struct first_start_answer {
    uint32_t known_by;              /* the first that knew this node as started, 0: none */
    char known_addr[BATON_MAX_ADDR + 1]; /* its raft address */
};

/*
 * Ask every member of cfg's --cluster list but cfg->id, as node cfg->id of
 * cluster `cluster_id`, within budget_ms (0: FIRST_START_BUDGET_MS). The
 * answer is in *out. Returns 0, or BATON_EINVAL / BATON_ENOMEM with errmsg
 * (BATON_ERRMSG_SIZE bytes) when the transport cannot be set up (a
 * certificate that cannot be used: the node could not start anyway).
 */
int first_start_ask(const struct node_config *cfg, uint64_t cluster_id, unsigned budget_ms,
                    struct first_start_answer *out, char *errmsg);

#endif /* BATON_RAFT_FIRST_START_H */
