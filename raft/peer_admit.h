/*
 * peer_admit.h -- which node ids the raft port admits, as a pure function
 * of what raft knows (raft/node.c feeds it; both transports,
 * raft/peer_tcp.c and raft/peer_tls.c, consult the result through
 * raft/peer_base.h). No I/O; does not include <raft.h>, so tests may use
 * it too. docs/design.md, "Who the raft port admits", gives the rule's
 * reasons.
 *
 * The rule. A node id is admitted if it is in
 *   - the committed configuration: the last one raft reported with no
 *     configuration entry uncommitted after it; or
 *   - the latest configuration raft has (its last configuration entry,
 *     committed or not): the one libraft 0.15 counts votes and commits
 *     by, so a node being added -- raft_add puts it there before the
 *     leader sends it anything -- is reachable at once.
 * A node with no configuration at all (started with --join, not added
 * yet) has nothing to follow: under peer TLS it admits the ids of its
 * --cluster list, as before; in plaintext every id (the cluster id check
 * still applies).
 */
#ifndef BATON_RAFT_PEER_ADMIT_H
#define BATON_RAFT_PEER_ADMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/msg.h" /* BATON_MAX_MEMBERS */

/* Committed and latest configurations together, at most. */
#define PEER_ADMIT_MAX (2 * BATON_MAX_MEMBERS)

struct peer_admit {
    bool any;                       /* every id is admitted */
    unsigned n;
    uint64_t ids[PEER_ADMIT_MAX];   /* else these, each once */
};

/* What the rule is computed from. */
struct peer_admit_in {
    const uint64_t *latest;         /* the latest configuration's ids */
    unsigned n_latest;              /* 0: no configuration */
    const uint64_t *committed;      /* the committed configuration's ids */
    unsigned n_committed;           /* 0: none known (see raft/node.c) */
    const uint64_t *listed;         /* the --cluster list's ids */
    unsigned n_listed;
    bool strict;                    /* peer TLS: no configuration admits only `listed` */
};

/* The admitted set of `in` into *out. */
void peer_admit_compute(struct peer_admit *out, const struct peer_admit_in *in);

/* Is id admitted by a? */
bool peer_admit_has(const struct peer_admit *a, uint64_t id);

/* Do a and b admit the same ids? */
bool peer_admit_same(const struct peer_admit *a, const struct peer_admit *b);

#endif /* BATON_RAFT_PEER_ADMIT_H */
