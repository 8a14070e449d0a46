/*
 * fsm.h -- adapts libraft's struct raft_fsm onto the lock store.
 *
 * Used by raft/node.c with the real raft_uv I/O, and by the cluster tests
 * with raft_fixture. Every callback runs on the thread that runs the raft
 * loop, except snapshot_async (fsm version 3, fsm_use_async_snapshots),
 * which runs on a libuv pool thread.
 *
 * Two gates keep entries that libraft 0.15 may have committed by counting
 * replicas (canonical/raft#220, docs/libraft-0.15.md, "Figure 8") out of
 * the store until their commit is sure -- until raft's commit index stands
 * on an entry of the current term:
 *   - on a leader, apply refuses (raft retries on the next commit);
 *   - on a follower, where a refusal would stop raft, apply copies the
 *     entry into a queue (struct fsm_gate, raft/fsm_gate.c) and tells raft
 *     it was applied; the queue is applied in order once the gate opens --
 *     by the next apply, or by fsm_flush, which the node calls every loop
 *     turn (the entry that opens the gate may be a barrier, which raft
 *     never hands to apply).
 * While entries wait, raft's last applied index runs ahead of the store's:
 * snapshots are refused (RAFT_BUSY), and the store's own applied index is
 * what a restart replays from.
 */
#ifndef BATON_RAFT_FSM_H
#define BATON_RAFT_FSM_H

#include <raft.h>

#include "raft/fsm_gate.h"
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
    struct fsm_gate gate;   /* a follower's entries waiting for a sure commit */
    char failure[256];      /* "" while all is well (fsm_failed) */
    store_snap *snap;       /* the snapshot being taken (fsm version 3) */
    uint64_t snap_retry_at; /* after a failed snapshot: no new one before this index */
    uint64_t n_skipped;     /* entries at or below the store's applied index */
    uint64_t n_deferred;    /* applies refused until the leader's commit is sure (fsm.c) */
    uint64_t n_gated;       /* entries a follower queued until its commit was sure */
    uint64_t n_snapshots;
    uint64_t snap_started_ns; /* uv_hrtime when the snapshot being taken began */
    uint64_t snap_last_ns;  /* how long the last snapshot taken took */
    uint64_t n_snapshot_refusals; /* snapshots refused (RAFT_BUSY): entries waiting, failure */
    uint64_t n_restores;
    /* The store's error (BATON_E*) of the last apply if it failed, 0 once
     * an apply succeeds; and the index of the entry it failed on. */
    int fault;
    uint64_t fault_index;
    /* BATON_EMALFORMED's fault: why the entry cannot be decoded, "" else. */
    char fault_why[192];
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

/*
 * fsm_apply's step for one entry whose commit is sure: apply the entry at
 * `index` (raft bytes base[0..size), in fsm_entry_encode's framing) to the
 * store and call the applied hook. 0; or RAFT_IOERR with f->fault set --
 * the store's local failure, or BATON_EMALFORMED (with f->fault_why) for
 * an entry this binary cannot decode -- and nothing applied, the store's
 * applied index included. Loop thread only; the unit tests call it
 * directly.
 */
int fsm_apply_entry(struct fsm *f, uint64_t index, const uint8_t *base, size_t size);

/* Set up f over store s. applied may be NULL. Snapshots are taken on the
 * loop (fsm version 1), which raft_fixture needs: it leaves io.version
 * unset, and version 3 needs an io of version 2. */
void fsm_init(struct fsm *f, store *s, fsm_applied_cb *applied, void *data);

/*
 * Take snapshots off the loop instead (fsm version 3): snapshot opens a
 * read transaction on the loop (store_snapshot_begin), snapshot_async dumps
 * it on a libuv pool thread, snapshot_finalize closes it on the loop. Call
 * before raft_init, with an io whose version is 2 and that has async_work
 * (raft_uv does, but 0.15's raft_uv_init says version 1: the node sets 2,
 * docs/libraft-0.15.md, "Snapshots and restore").
 */
void fsm_use_async_snapshots(struct fsm *f);

/*
 * Apply the entries the follower's gate holds, in order, if raft's commit
 * index now stands on an entry of the current term (a no-op otherwise, and
 * when nothing waits). Call it after anything that may have moved the
 * commit index without an apply: the node does at the end of every loop
 * turn, and before it reports itself a ready leader. Loop thread only.
 * Entries that cannot be applied yet (the store failed: see fsm_failed)
 * stay queued.
 */
void fsm_flush(struct fsm *f);

/* How many entries the gate holds (applied for raft, not yet for the store). */
size_t fsm_gated(const struct fsm *f);
/* The entry the state machine stands at: every entry up to it is in the
 * store, or was one that never reaches the store (a barrier, a
 * configuration). Raft's applied index, less what the gate holds: a
 * follower's gated entries count as applied for raft but are not in the
 * store, whose digest describes the state without them. */
uint64_t fsm_state_index(const struct fsm *f);
/* Does raft's commit index stand on an entry of the current term (a real
 * commit: fsm.c, commit_sure)? */
bool fsm_commit_sure(struct fsm *f);

/*
 * NULL while all is well; otherwise why this node must stop and be
 * restarted: an entry its gate held was replaced in raft's log (what the
 * gate is there to survive: the store never applied it, and a restart
 * replays the log from the store's applied index), or the gate grew past
 * its bound. From then on nothing more is applied: every apply fails,
 * which stops a follower's raft.
 */
const char *fsm_failed(const struct fsm *f);

void fsm_close(struct fsm *f);

/* Internal to raft/fsm.c and raft/fsm_snap.c: the snapshot callbacks'
 * set-up (version 1) and release. */
void fsm_snap_init(struct fsm *f);
void fsm_snap_close(struct fsm *f);

#endif /* BATON_RAFT_FSM_H */
