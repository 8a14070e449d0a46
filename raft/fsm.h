/*
 * fsm.h -- adapts libraft's struct raft_fsm onto the lock store.
 *
 * Used by raft/node.c with the real raft_uv I/O, and by the cluster tests
 * with raft_fixture. Every callback runs on the thread that runs the raft
 * loop.
 */
#ifndef BATON_RAFT_FSM_H
#define BATON_RAFT_FSM_H

#include <raft.h>

#include "storage/cmd.h"
#include "storage/store.h"

/* Called after every applied entry, on every node, with the entry's results
 * and effects. fx is valid only during the call. */
typedef void fsm_applied_cb(void *data, const struct effects *fx);

struct fsm {
    struct raft_fsm base;   /* handed to raft_init; base.data points here */
    struct raft *raft;      /* set once raft_init ran: gives the entry index */
    store *store;           /* borrowed */
    struct effects fx;      /* reused for every entry; see fsm_apply */
    fsm_applied_cb *applied;
    void *data;
    uint64_t n_skipped;     /* entries at or below the store's applied index */
    uint64_t n_deferred;    /* applies refused until the leader's commit is sure (fsm.c) */
    uint64_t n_snapshots;
    uint64_t n_restores;
    /* The store's error (BATON_E*) of the last apply if it failed, 0 once
     * an apply succeeds; and the index of the entry it failed on. */
    int fault;
    uint64_t fault_index;
};

/*
 * The payload of a raft entry: u64 little-endian payload length, the
 * payload, then zero bytes up to a multiple of 8. libraft 0.15's TCP
 * transport sends several entries back to back in one AppendEntries message
 * and its receiver assumes every entry is padded to 8 bytes, so an entry of
 * any other length would be read at the wrong offset on followers.
 * fsm_entry_size gives the padded size for a payload of len bytes;
 * fsm_entry_encode fills such a buffer.
 */
size_t fsm_entry_size(size_t len);
void fsm_entry_encode(void *entry, const void *payload, size_t len);

/* Set up f over store s. applied may be NULL. */
void fsm_init(struct fsm *f, store *s, fsm_applied_cb *applied, void *data);
void fsm_close(struct fsm *f);

#endif /* BATON_RAFT_FSM_H */
