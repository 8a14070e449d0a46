/*
 * node.h -- one batond's raft node: libraft 0.15 over raft_uv and its TCP
 * transport, the FSM over the store, proposals, and leadership tracking.
 *
 * This module and raft/fsm.c are the only code that includes <raft.h>; no
 * RAFT_* value leaves it (errors become BATON_E* codes). Everything here runs
 * on the loop thread; no function may be called from another thread.
 *
 * Leadership: 0.15 has no state callback, so the node checks raft_state()
 * at the end of every loop turn (and every 20 ms). On becoming leader it
 * commits a raft_barrier first -- in 0.15 a new leader appends no entry of
 * its own, and the barrier commits every entry of earlier terms -- and only
 * then reports itself "ready"; it proposes the barrier once every follower
 * has answered its first AppendEntries, or half a heartbeat timeout after
 * the election (node.c, barrier_due, says why). Only a ready leader serves
 * writes, pushes grants and decides leases; a node that raft no longer makes
 * leader of the term it became ready in stops being ready before the
 * effects of the next entry it applies are delivered.
 */
#ifndef BATON_RAFT_NODE_H
#define BATON_RAFT_NODE_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "proto/errmsg.h"
#include "proto/msg.h"
#include "storage/cmd.h"
#include "storage/store.h"

struct node_member {
    uint32_t id;
    char raft_addr[BATON_MAX_ADDR + 1];   /* "a.b.c.d:port" */
    char client_addr[BATON_MAX_ADDR + 1];
};

/*
 * Mutual TLS on the raft port (raft/peer_tls.h, docs/security.md). With
 * cert_file NULL the node speaks plain TCP, as libraft's own transport
 * does, and the rest is ignored.
 */
struct node_peer_tls {
    const char *cert_file;          /* this node's certificate chain (PEM); its
                                       subject CN must be baton-node-<id> */
    const char *key_file;           /* its private key */
    const char *ca_file;            /* the CA that signs every node's certificate */
    bool allow_tls12;               /* accept TLS 1.2 as well as 1.3 */
    unsigned handshake_timeout_ms;  /* 0: 5000; a connection must be admitted by then */
    unsigned max_pending;           /* 0: 64; inbound handshakes at once, more close the oldest */
    /* A raft connection refused or failed, in a sentence (rate-limited by
     * the transport), under TLS or not. Which nodes are admitted is the
     * node's own rule (raft/peer_admit.h). NULL: not logged. */
    void (*log)(void *arg, const char *msg);
    void *arg;
};

struct node_config {
    uint32_t id;
    const char *raft_dir;           /* must exist */
    uint32_t n_members;
    struct node_member members[BATON_MAX_MEMBERS];
    unsigned election_timeout_ms;   /* 0: 300 */
    unsigned election_jitter_ms;    /* 0: a third of the election timeout; each
                                       election timer is random in [T, T + this] */
    unsigned heartbeat_timeout_ms;  /* 0: 30 */
    unsigned install_snapshot_timeout_ms; /* 0: 2000 */
    unsigned snapshot_threshold;    /* 0: 8192 */
    unsigned snapshot_trailing;     /* 0: 2048 */
    unsigned connect_retry_ms;      /* 0: 250 */
    bool join;                      /* skip the bootstrap: join a running cluster */
    /* A file beside raft_dir (in the data directory) that the node creates
     * once its raft has state, and that tells a lost raft directory from a
     * new one at the next start (raft/state_mark.h); NULL: none. */
    const char *state_mark;
    /* The data directory's cluster id file (raft/cluster_id.h), checked
     * at every raft handshake; made at the first start if missing (not on
     * a --join node, which takes the first id a member presents); NULL:
     * no cluster id, every peer is taken. */
    const char *cluster_id_file;
    /* Listen for raft connections here ("a.b.c.d:port") rather than on this
     * node's raft address in members, which stays the one advertised to the
     * others; "" (the default): listen on the advertised address. */
    char raft_bind[BATON_MAX_ADDR + 1];
    struct node_peer_tls peer;      /* zero: plain TCP between nodes */
    /* Feature levels (docs/design.md, "Feature levels"): this binary's
     * (storage/cmd_table.h, CMD_LEVEL), told to every peer at the raft
     * handshake, and the cluster's committed level in the store, below
     * which a peer is refused (node_set_cluster_level keeps it current).
     * 0 is taken as 1. */
    uint32_t level;
    uint32_t cluster_level;
};

/*
 * Local failures (node.c, "local failures"; docs/operations.md, "Disk
 * full"): what stops this node, whatever the rest of the cluster does.
 *   NODE_FAULT_APPLY  the store could not apply a committed entry (no room
 *                     to grow its map, an I/O error): nothing of it was
 *                     applied. A leader hands leadership to another voter;
 *                     libraft 0.15 stops a follower's raft at the entry.
 *                     An apply that succeeds later clears it.
 *   NODE_FAULT_LOG    a write of raft's directory failed on this node
 *                     (log, snapshot, term or vote; raft/io_guard.h):
 *                     libraft 0.15 cannot go on after that, so raft was
 *                     fenced at once (it sends and writes nothing more)
 *                     and the node must exit, leader or follower.
 *   NODE_FAULT_RAFT   raft stopped itself (RAFT_UNAVAILABLE while the node
 *                     is not closing) for a reason the other two do not
 *                     explain -- 0.15 does when a snapshot fails while it
 *                     handles an AppendEntries, and when a leader asks it
 *                     to replace an entry below its commit index
 *                     (canonical/raft#220) -- or the fsm gave up on an
 *                     entry it held back until its commit was sure
 *                     (raft/fsm.h, fsm_failed). The node must exit: a
 *                     restart replays raft's log from the store's own
 *                     applied index, which never counts an entry held
 *                     back.
 * Every fault is cured by a restart once its cause is gone: the node
 * catches up from the others.
 */
enum node_fault_kind { NODE_FAULT_NONE = 0, NODE_FAULT_APPLY, NODE_FAULT_LOG, NODE_FAULT_RAFT };

struct node_status {
    int role;                       /* enum node_role (proto/msg.h) */
    bool ready;                     /* leader whose barrier has committed */
    uint32_t leader_id;             /* 0 if unknown */
    uint64_t term;
    uint64_t last_index;
    uint64_t commit_index;
    uint64_t applied_index;         /* the state machine's (fsm_state_index) */
    int fault;                      /* BATON_E* of the local failure, 0 if none */
    int fault_kind;                 /* enum node_fault_kind */
    uint64_t fault_index;           /* the entry it happened on (0 if none) */
    /* For batond's metrics: */
    uint64_t leader_changes;        /* times a new leader was seen (the first included) */
    uint64_t snapshots;             /* snapshots taken since start */
    uint64_t snapshot_ns;           /* how long the last of them took */
};

/* Called on every node after every applied entry; fx valid during the call. */
typedef void node_applied_cb(void *data, const struct effects *fx);
/* Called when this node becomes a ready leader (ready = true) or stops being
 * one (ready = false). */
typedef void node_ready_cb(void *data, bool ready);
/* What the node does about a fault (node_hooks.fault), each said once. */
enum node_fault_action {
    NODE_FAULT_CLEARED = 0, /* the fault is gone (an apply succeeded again) */
    NODE_FAULT_STOPPED,     /* a follower: it stands still until restarted */
    NODE_FAULT_STEPDOWN,    /* a leader: it hands leadership to another voter */
    NODE_FAULT_EXIT,        /* it cannot go on: the process must exit (and be
                               restarted), so that another node leads */
};

struct node_fault {
    int code;               /* BATON_E* (BATON_ENOSPC, BATON_EIO...) */
    int kind;               /* enum node_fault_kind */
    uint64_t index;         /* the entry it happened on, 0 if none */
    int action;             /* enum node_fault_action */
    const char *why;        /* for the log: what happened and what to do */
    const char *cause;      /* BATON_EMALFORMED: why the entry cannot be decoded; else NULL */
};

/* Called on the loop thread, outside raft's callbacks, when a fault appears,
 * changes what the node does about it, or is cleared. On NODE_FAULT_EXIT
 * the caller must close the node (node_close) and exit non-zero. */
typedef void node_fault_cb(void *data, const struct node_fault *f);

/* Called when raft's role (enum node_role) or term changed since the node
 * last looked (at the end of a loop turn or every 20 ms): a candidacy, pre-vote
 * included, an election won, a new leader followed. For the log and the
 * metrics; the node has acted on it already. */
typedef void node_role_cb(void *data, int role, uint64_t term);

struct node_hooks {
    void *data;
    node_applied_cb *applied;
    node_ready_cb *ready;
    node_fault_cb *fault;           /* may be NULL */
    node_role_cb *role;             /* may be NULL */
};

struct node;

/*
 * Initialise raft in cfg->raft_dir over `s`, bootstrap the configuration
 * given in cfg (identical on every node; a no-op when the node already has
 * state; skipped when cfg->join is set, for a node that an operator adds to
 * a running cluster, and for a node that was a member before: see
 * BATON_ESTALE), and start it. `s`, `loop` and the hooks must outlive the node.
 * Returns 0 or BATON_EIO / BATON_ENOMEM / BATON_EINVAL with errmsg
 * (BATON_ERRMSG_SIZE bytes, proto/errmsg.h) filled; on error *out is NULL.
 * BATON_ESTALE: the raft directory holds no state although this node was a
 * member -- cfg->state_mark exists, or the store has applied entries. The
 * directory was lost; starting afresh could make the node vote twice in a
 * term (raft/state_mark.h), so it does not start: it must rejoin as a new
 * member (docs/operations.md). Also BATON_ESTALE: the whole data
 * directory is empty, yet another member knows this node as started in
 * its cluster (raft/first_start.h, asked before every bootstrap that is
 * not a --join): its data directory was lost, and the same holds. On
 * error it runs the loop until raft's handles are closed, so call it
 * before starting other handles.
 */
int node_open(uv_loop_t *loop, store *s, const struct node_config *cfg,
              const struct node_hooks *hooks, struct node **out, char *errmsg);

/*
 * Completion of a proposal: status 0 with the entry's results and effects
 * (valid only during the call), or BATON_ENOTLEADER when raft accepted the
 * entry but this node will not apply it: leadership was lost, or this
 * leader's write of it to its log failed (NODE_FAULT_LOG). The outcome is
 * then unknown -- the entry may still commit through the followers, under
 * the next leader -- and the client must re-send with the same seq, which
 * the store's dedup table answers exactly once.
 */
typedef void node_propose_cb(void *data, int status, const struct effects *fx);

/*
 * Propose one entry whose payload is data[0..len) (copied). Returns 0, and
 * then cb runs exactly once, later (never from inside this call); or
 * BATON_ENOTLEADER (not a ready leader) / BATON_ENOMEM, and then cb never
 * runs.
 */
int node_propose(struct node *n, const void *data, size_t len, node_propose_cb *cb, void *cb_data);

/* Completion of a leadership transfer: new_leader is the leader this node
 * knows of once the transfer is over -- another node's id when leadership
 * moved, this node's own id when it did not (the target did not win within
 * an election timeout), or 0 when leadership moved but the new leader is
 * not known yet, or when the node is closing. */
typedef void node_transfer_cb(void *data, uint32_t new_leader);

/*
 * Ask raft to hand leadership to voter `id` (0: raft picks an up-to-date
 * voter). Returns 0, and then cb runs exactly once, later, on the loop and
 * outside raft's callbacks, before this node reports that it stopped being
 * the ready leader (so a reply sent from cb can still be flushed); or
 * BATON_ENOTLEADER (not a ready leader), BATON_EBUSY (a transfer is already
 * running), BATON_EINVAL (id is not another voting member, or id 0 and there
 * is none) or BATON_ENOMEM / BATON_EIO, and then cb never runs. While the
 * transfer runs, proposals fail with BATON_ENOTLEADER.
 */
int node_transfer(struct node *n, uint32_t id, node_transfer_cb *cb, void *data);

/*
 * The voter a planned stop should hand leadership to: the other voter
 * whose match index (the last entry raft knows it holds) is highest --
 * among those this leader heard from within the election timeout, if any
 * -- and of equals the first in the configuration; *match is set to that
 * index. 0 when this node is not the ready leader or has no other voter.
 * libraft 0.15's own choice (node_transfer with id 0) takes the first
 * up-to-date voter, else the last voter of the configuration.
 */
uint32_t node_successor(struct node *n, uint64_t *match);

/*
 * The leader this follower knows of, if it is another node and has made
 * its leadership sure: raft's commit index here stands on an entry of the
 * current term (the new leader's barrier, raft/node.c, or a later entry),
 * so it has been elected and is committing. 0 otherwise. A node that
 * handed leadership over waits for this before it stops, so that the new
 * leader's first commit does not depend on the node that is restarting
 * next.
 */
uint32_t node_settled_leader(struct node *n);

/* Completion of node_snapshot_now: status 0 and the snapshot's index, or
 * BATON_ENOTLEADER / BATON_EIO / BATON_ENOMEM (index 0) when the empty
 * entry could not be committed, or BATON_EBUSY when it was but no snapshot
 * was started (the store could not take one: a recent failure). */
typedef void node_snapshot_cb(void *data, int status, uint64_t index);

/*
 * Take a raft snapshot now (libraft 0.15 has no call for it): lower the
 * snapshot threshold to 1, propose an empty entry (the store counts it as a
 * malformed batch that only advances its applied index), and once it has
 * been applied -- raft then takes the snapshot -- restore the configured
 * threshold. cb runs exactly once, later, on the loop and outside raft's
 * callbacks (or from inside node_close when the node closes first), with
 * the index of the snapshot raft started: the applied index after the empty
 * entry, or the index of a snapshot that was already being written then.
 * The snapshot's files are written in the background and may appear after
 * cb runs. Returns 0, or BATON_ENOTLEADER (not a ready leader), BATON_EBUSY
 * (one is already running) or BATON_ENOMEM / BATON_EIO, and then cb never
 * runs. Loop thread only.
 */
int node_snapshot_now(struct node *n, node_snapshot_cb *cb, void *data);

/* One server of the current raft configuration. */
struct node_server {
    uint32_t id;
    int role;                            /* enum member_role (proto/msg.h) */
    char raft_addr[BATON_MAX_ADDR + 1];
    /* On a ready leader: the server holds every entry up to the barrier
     * that made this node ready (this node itself always), so it has
     * started and caught up in this cluster (server/members.c records it).
     * false on any other node. */
    bool caught_up;
};

/*
 * Copy the current raft configuration (the latest one this node knows,
 * committed or not) into out[0..max), in raft's order. Returns the number
 * of servers copied. Unlike node_config, this follows membership changes.
 */
uint32_t node_members(struct node *n, struct node_server *out, uint32_t max);

/*
 * Completion of a membership change, run on the loop and outside raft's
 * callbacks (or from inside node_close when the node closes first). status:
 *   0                  the new configuration has committed;
 *   BATON_ENOTLEADER   leadership was lost first, or the node is closing:
 *                      the outcome is unknown (the entry may still commit
 *                      under the next leader);
 *   BATON_EBUSY        raft refused the step because another configuration
 *                      change was in flight (RAFT_CANTCHANGE: one started by
 *                      an earlier leader and not yet committed);
 *   BATON_EINVAL       raft refused the step (the server's id or address is
 *                      taken, or it is not a member any more);
 *   BATON_ECANCELED    member add only: raft gave up promoting the new server
 *                      because it did not catch up with the log in time (it
 *                      did not answer at its raft address, or kept falling
 *                      behind: libraft 0.15 allows 10 catch-up rounds and
 *                      5 s per round). The server stays in the
 *                      configuration as a spare, which counts for nothing;
 *                      node_member_add with the same id and address resumes
 *                      the promotion, node_member_remove drops it;
 *   BATON_ENOMEM / BATON_EIO  local failure.
 */
typedef void node_change_cb(void *data, int status);

/*
 * Add server `id` at raft address `raft_addr` ("a.b.c.d:port", copied) as a
 * voter: raft_add (it joins as a spare, which gets no entries and has no
 * vote), then, once that configuration has committed, raft_assign to
 * RAFT_VOTER, for which libraft first replicates the log to the server in
 * catch-up rounds and promotes it only when it has caught up; cb runs when
 * the promotion has committed. Each raft call is made on a loop turn of its
 * own, outside raft's callbacks, so this may be called from anywhere on the
 * loop thread, a proposal's completion included. If `id` is already a
 * spare or standby at raft_addr (an earlier add stopped before its
 * promotion), only the promotion runs.
 *
 * Returns 0, and then cb runs exactly once, later, with one of the statuses
 * listed at node_change_cb; or, and then cb never runs:
 *   BATON_ENOTLEADER  not a ready leader;
 *   BATON_EBUSY       a membership change is in flight (this node's, or an
 *                     uncommitted configuration or promotion raft has open);
 *   BATON_EINVAL      id 0, an empty or over-long raft_addr, id already a
 *                     voter, id a member at another address, or raft_addr
 *                     used by another server.
 * Only one change may be in flight at a time, cluster-wide.
 */
int node_member_add(struct node *n, uint32_t id, const char *raft_addr, node_change_cb *cb,
                    void *data);

/*
 * Remove server `id` from the raft configuration (raft_remove). Returns 0,
 * and then cb runs exactly once, later, with one of the statuses listed at
 * node_change_cb; or BATON_ENOTLEADER (not a ready leader), BATON_EBUSY
 * (another membership change is in flight -- node_change_busy() is then
 * true -- or the voters that would remain hold no caught-up majority: one
 * of them is still receiving the log, and removing `id` now would stop
 * every commit until it has caught up), BATON_EINVAL (id is not a
 * member, or is this node: hand leadership away first) or BATON_ENOMEM /
 * BATON_EIO, and then cb never runs. Only one change may be in flight at a
 * time, cluster-wide.
 */
int node_member_remove(struct node *n, uint32_t id, node_change_cb *cb, void *data);

/*
 * Confirm that this node is still the leader of its current term: propose a
 * barrier (an empty entry of this term) and call cb once it has committed.
 * A majority storing an entry of this term means no leader of a later term
 * was elected before this call, so what the leader knew when it called
 * (a session's lease, say) was not yet overruled. Returns 0, and then
 * cb(data, status) runs exactly once, later, from inside raft's callbacks
 * (so cb must not call raft functions: no node_propose, node_confirm...),
 * with status 0, or BATON_ENOTLEADER when leadership was lost or the node
 * is closing (also from inside node_close), or BATON_EIO; or returns
 * BATON_ENOTLEADER (not a ready leader), BATON_ENOMEM or BATON_EIO, and
 * then cb never runs.
 */
typedef void node_confirm_cb(void *data, int status);
int node_confirm(struct node *n, node_confirm_cb *cb, void *data);

/* Is a membership change in flight (see node_member_add's BATON_EBUSY)? */
bool node_change_busy(const struct node *n);

void node_get_status(struct node *n, struct node_status *st);
/* The cluster's committed feature level, now in the store: from now on a
 * raft peer whose binary is of a lower level is refused at its handshake
 * (connections already open stay). */
void node_set_cluster_level(struct node *n, uint32_t level);
/* The feature level node `id`'s binary said at its last raft handshake
 * with this node (either way; an older binary's handshake says 1); this
 * binary's own for this node's id; 0 if none was heard yet. */
uint32_t node_peer_level(struct node *n, uint32_t id);
bool node_is_ready(const struct node *n);

/* The member with this id, or NULL. */
const struct node_member *node_member_find(const struct node_config *c, uint32_t id);
const struct node_member *node_member_by_id(const struct node *n, uint32_t id);
const struct node_config *node_config(const struct node *n);

/*
 * Start closing: pending proposals complete with BATON_ENOTLEADER (from
 * inside this call), then raft's I/O closes; cb(data) runs when raft has
 * closed. Keep running the loop until it returns, then node_free.
 */
void node_close(struct node *n, void (*cb)(void *data), void *data);
void node_free(struct node *n); /* NULL-safe; only after the loop ran dry */


/*
 * The node as batond's server uses it, through one table: every call the
 * server makes on a running node goes through a struct node_io, so that a
 * test can run the whole server -- dispatch, batching, pushes, deadlines,
 * keepalives, access, watches -- over a node of its own in one process (as
 * canonical/raft takes its I/O through struct raft_io). node_io_raft is the
 * real node: each member is the function of the same name above, with the
 * same contract. A replacement must keep those contracts: callbacks run
 * later on the loop thread, never from inside the call that started them,
 * and hooks.applied sees every applied entry before a proposal's cb does.
 */
struct node_io {
    int (*open)(uv_loop_t *loop, store *s, const struct node_config *cfg,
                const struct node_hooks *hooks, struct node **out, char *errmsg);
    int (*propose)(struct node *n, const void *data, size_t len, node_propose_cb *cb,
                   void *cb_data);
    int (*confirm)(struct node *n, node_confirm_cb *cb, void *data);
    int (*transfer)(struct node *n, uint32_t id, node_transfer_cb *cb, void *data);
    int (*snapshot_now)(struct node *n, node_snapshot_cb *cb, void *data);
    int (*member_add)(struct node *n, uint32_t id, const char *raft_addr, node_change_cb *cb,
                      void *data);
    int (*member_remove)(struct node *n, uint32_t id, node_change_cb *cb, void *data);
    bool (*change_busy)(const struct node *n);
    uint32_t (*members)(struct node *n, struct node_server *out, uint32_t max);
    uint32_t (*successor)(struct node *n, uint64_t *match);
    uint32_t (*settled_leader)(struct node *n);
    void (*get_status)(struct node *n, struct node_status *st);
    void (*set_cluster_level)(struct node *n, uint32_t level);
    uint32_t (*peer_level)(struct node *n, uint32_t id);
    void (*close)(struct node *n, void (*cb)(void *data), void *data);
    void (*free)(struct node *n);
};

extern const struct node_io node_io_raft;

#endif /* BATON_RAFT_NODE_H */
