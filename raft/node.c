/*
 * node.c -- libraft 0.15 set up over raft_uv, the TCP transport and the lock
 * store; proposals; leadership polling and the barrier on election. See
 * node.h and docs/libraft-0.15.md.
 */
#include "raft/node.h"

#include <raft.h>
#include <raft/uv.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "raft/cluster_id.h"
#include "raft/first_start.h"
#include "raft/fsm.h"
#include "raft/io_guard.h"
#include "raft/state_mark.h"
#include "raft/transport.h"

#define NODE_POLL_MS 20

struct node {
    uv_loop_t *loop;
    struct node_config cfg;
    struct node_hooks hooks;
    store *store;            /* the fsm's: the members table answers the first-start question */
    struct raft raft;
    struct io_guard guard;   /* raft_uv's I/O, fenced at a failed write (raft/io_guard.h) */
    struct transport transport;   /* TLS, or raft_uv_tcp with TCP_NODELAY */
    struct fsm fsm;
    uv_timer_t poll;
    uv_check_t watch;        /* node_poll at the end of every loop turn */
    struct raft_barrier barrier;
    bool barrier_pending;
    bool ready;
    uint64_t ready_term;     /* term whose barrier made us ready */
    uint64_t ready_index;    /* and that barrier's index */
    uint64_t lead_term;      /* term in which we last saw raft make us leader */
    uint64_t lead_since;     /* when (uv_now) */
    bool closing;
    raft_id last_leader;     /* the last leader seen (leader_track), and its term */
    uint64_t last_leader_term;
    uint64_t leader_changes;
    int (*uv_random)(struct raft_io *io, int min, int max); /* raft_uv's own */
    unsigned election_ms, jitter_ms; /* the election timer is random in [T, T + jitter] */
    int seen_state;          /* raft's state and term at the last role_track */
    uint64_t seen_term;
    bool marked;             /* cfg.state_mark exists (or there is none to make) */
    struct raft_transfer transfer;
    node_transfer_cb *transfer_cb; /* set while a transfer is running */
    void *transfer_data;
    bool transfer_over;      /* raft's callback ran; ours is still due */
    bool transfer_in_raft;   /* raft holds n->transfer: its callback is due */
    void (*close_cb)(void *data);
    void *close_data;
    uv_timer_t snap_timer;   /* finishes node_snapshot_now outside raft */
    node_snapshot_cb *snap_cb; /* set while a node_snapshot_now runs */
    void *snap_data;
    int snap_status;
    uint64_t snap_index;
    struct raft_change change;
    uv_timer_t change_timer; /* runs a membership change's steps outside raft */
    node_change_cb *change_cb; /* set while a membership change runs */
    void *change_data;
    int change_status;
    bool change_over;        /* raft's change callback ran */
    int change_next;         /* enum change_step: the raft call still to make */
    raft_id change_id;       /* the server being added */
    char change_addr[BATON_MAX_ADDR + 1];
    /* Local failures ("local failures" below, node.h). */
    int fault;               /* BATON_E* as last reported, 0 if none */
    int fault_kind;          /* enum node_fault_kind */
    uint64_t fault_index;
    int fault_said;          /* the action reported for it, -1: none yet */
    struct raft_transfer stepdown;
    bool stepdown_in_raft;   /* raft holds n->stepdown: its callback is due */
    bool stepdown_over;      /* its callback ran */
    uint64_t stepdown_term;  /* the term in which it was asked for */
    bool fatal;              /* NODE_FAULT_EXIT reported */
    /* When (uv_now) this leader last saw each voter's recent_recv set
     * (heard_track): 0.15 clears every recent_recv at each election
     * timeout's check, so the flag alone misses a follower that answers
     * every heartbeat. */
    struct {
        raft_id id;
        uint64_t at;
    } heard[BATON_MAX_MEMBERS];
    /* The committed configuration's ids as last seen (admit_track). */
    uint64_t committed[BATON_MAX_MEMBERS];
    unsigned n_committed;
};

/* The steps of a membership change, each one raft call made on a loop turn
 * of its own, outside raft's callbacks: member add is ADD (raft_add: the
 * server joins as a spare) then PROMOTE (raft_assign to voter: raft runs
 * catch-up rounds first), or PROMOTE alone to resume an add that stopped
 * after its first step; member remove makes its one call at once. */
enum change_step { CHANGE_DONE = 0, CHANGE_ADD, CHANGE_PROMOTE };

/* One proposal in flight: raft's request plus our completion. */
struct proposal {
    struct raft_apply req;
    struct node *node;
    node_propose_cb *cb;
    void *data;
};

static void node_poll(struct node *n);
static void node_poll_soon(struct node *n);
static void raft_closed(struct raft *r);
static void set_ready(struct node *n, bool ready);

static int status_from_raft(int rv)
{
    switch (rv) {
    case 0:
        return 0;
    case RAFT_NOTLEADER:
    case RAFT_LEADERSHIPLOST:
    case RAFT_SHUTDOWN:
        return BATON_ENOTLEADER;
    case RAFT_NOMEM:
        return BATON_ENOMEM;
    case RAFT_NOSPACE:
        return BATON_ENOSPC;
    default:
        return BATON_EIO;
    }
}

/*
 * The status of a request raft had accepted (an apply's or a barrier's
 * callback). Anything but success and a lost leadership comes from this
 * leader's failed write of the entry to its log (libraft 0.15's
 * appendLeaderCb): the entry may still commit through the followers, so
 * the outcome is unknown, which node.h spells BATON_ENOTLEADER; and the
 * node must stop leading at once ("local failures" below).
 */
static int accepted_status(struct node *n, int status, raft_index index)
{
    int st = status_from_raft(status);

    if (st == 0 || st == BATON_ENOTLEADER) return st;
    /* The guard has fenced the node already (its append callback runs
     * before raft's); this names the entry, or fences it if it had not. */
    io_guard_fail(&n->guard, status, index, "appending an entry to the raft log");
    if (n->guard.failed_index == 0) n->guard.failed_index = index;
    /* Nothing more may be proposed in this term: a new entry would take
     * the index raft has just dropped from its in-memory log, which the
     * followers may already hold with other contents. set_ready runs the
     * server's hook, which is safe here (fsm_applied does the same). */
    set_ready(n, false);
    node_poll_soon(n);
    return BATON_ENOTLEADER;
}

static void transfer_finish(struct node *n, bool closing);

/*
 * Tell the server whenever our readiness to serve as leader flips. A node
 * that stops serving because raft made it a follower has, if a transfer was
 * running, handed leadership over: report that first, so that the transfer's
 * reply goes out before the server closes every client connection (raft may
 * call its own transfer callback only later, and a client that never saw
 * the reply would re-send the transfer to the new leader).
 */
static void set_ready(struct node *n, bool ready)
{
    if (n->ready == ready) return;
    if (!ready && !n->closing && raft_state(&n->raft) != RAFT_LEADER) transfer_finish(n, false);
    n->ready = ready;
    if (n->hooks.ready != NULL) n->hooks.ready(n->hooks.data, ready);
}

/*
 * The barrier proposed on becoming leader has been applied: every entry of
 * earlier terms is now committed and applied here, so the store is current
 * and this node may serve. If leadership was lost meanwhile, or entries it
 * held back could not reach the store yet, the next poll notices (and
 * proposes another barrier).
 */
static void barrier_cb(struct raft_barrier *req, int status)
{
    struct node *n = req->data;

    n->barrier_pending = false;
    if (n->closing) return;
    /* Entries this node held back as a follower (raft/fsm.h) reach the
     * store before it serves: its commit is sure now. */
    fsm_flush(&n->fsm);
    if (accepted_status(n, status, req->index) != 0) status = RAFT_LEADERSHIPLOST;
    if (status == 0 && raft_state(&n->raft) == RAFT_LEADER &&
        n->raft.current_term == n->ready_term && fsm_gated(&n->fsm) == 0) {
        n->ready_index = req->index;
        set_ready(n, true);
        return;
    }
    node_poll_soon(n);
}

/* Run the caller's transfer callback, once, with the leader raft now knows
 * (0 if none). Never called from inside a raft callback. */
static void transfer_finish(struct node *n, bool closing)
{
    node_transfer_cb *cb = n->transfer_cb;
    void *data = n->transfer_data;
    raft_id id = 0;
    const char *addr = NULL;

    if (cb == NULL) return;
    n->transfer_cb = NULL;
    n->transfer_data = NULL;
    n->transfer_over = false;
    if (!closing) raft_leader(&n->raft, &id, &addr);
    cb(data, (uint32_t)id);
}

static void poll_timer_cb(uv_timer_t *t);

/*
 * Is it time to propose the barrier of a new leadership? Two bugs of
 * libraft 0.15 decide when (docs/libraft-0.15.md, "Figure 8" and "A
 * follower credited with entries it lacks"):
 *
 *  - canonical/raft#220: 0.15 commits an entry of an earlier term as soon as
 *    a majority stores it. A follower that rejects the new leader's first,
 *    empty AppendEntries (it lacks the leader's last entry) is sent the
 *    missing entries only at the next heartbeat, a heartbeat timeout later;
 *    if the barrier is in the log by then it travels with them, and they
 *    commit only with it.
 *  - A follower that accepts that first AppendEntries reports its own last
 *    index, and 0.15 takes it as the follower's match index capped to the
 *    end of the leader's log *when the answer arrives*: a follower holding
 *    a longer stale tail (the entries it took while it led, cut off) is
 *    then credited with a barrier appended meanwhile -- the barrier counts
 *    as committed while only the leader has it, and the follower's
 *    rejections are ignored from then on, so it never catches up.
 *
 * So the barrier waits until every follower has answered (0.15 sets
 * recent_recv in the follower's progress), or half a heartbeat timeout
 * after the election, whichever comes first; node_poll runs at the end of
 * every loop turn, so it goes in the turn the last answer arrives.
 */
static bool barrier_due(struct node *n)
{
    struct raft *r = &n->raft;
    uint64_t now = uv_now(n->loop);
    uint64_t wait = r->heartbeat_timeout / 2;

    if (n->lead_term != r->current_term) {
        n->lead_term = r->current_term;
        n->lead_since = now;
    }
    if (now >= n->lead_since + wait) return true;
    for (unsigned i = 0; i < r->configuration.n; i++) {
        const struct raft_server *sv = &r->configuration.servers[i];

        if (sv->id == r->id || sv->role == RAFT_SPARE) continue;
        if (!r->leader_state.progress[i].recent_recv) {
            /* Come back at the deadline if nothing else wakes the loop. */
            uv_timer_start(&n->poll, poll_timer_cb, n->lead_since + wait - now, NODE_POLL_MS);
            return false;
        }
    }
    return true;
}

/* ---- local failures ------------------------------------------------------
 *
 * libraft 0.15 has no answer to a node that cannot do its part
 * (docs/libraft-0.15.md, "apply has no index, and a refused apply is
 * retried" and "Failed disk writes"):
 *
 *  - A leader whose fsm apply fails (the store could not grow its map on a
 *    full disk, an I/O error) keeps leading and retries the entry at every
 *    commit: the barriers of every later keepalive round never apply, every
 *    lease runs out, and nobody holds an election -- a total outage. So a
 *    leader whose apply failed stops serving and hands leadership to
 *    another voter (raft_transfer); if raft cannot start the transfer, or
 *    the node still leads when it is over, the node must exit (a supervisor
 *    restarts it) so that the others elect a leader. Nothing was applied
 *    of the failed entry (store_apply is one transaction), so the new leader
 *    applies it from scratch, and so does this node once restarted.
 *  - A follower whose apply fails is stopped by raft (RAFT_UNAVAILABLE, or
 *    it no longer acknowledges entries); the other two go on. It reports
 *    the fault (the log, STATUS) and waits: freeing space and restarting
 *    it is the cure, and it catches up from the leader.
 *  - A node whose write of its raft directory fails -- log, snapshot, term
 *    or vote -- cannot go on: libraft 0.15 keeps a follower's failed
 *    entries in memory and never counts them stored (it stands still,
 *    silently), drops a leader's failed entry from its in-memory log but
 *    not from its segment writer (a new entry would reuse the index with
 *    the same term: divergence), and its writer does not rewind. The
 *    guard (raft/io_guard.h) fences raft at the first failure -- no
 *    ticks, messages, sends or writes reach or leave it any more -- and
 *    calls io_failed; a leader's clients whose entries failed are answered
 *    "outcome unknown" (accepted_status: the followers may hold the entry,
 *    and the next leader commits it). The next poll reports
 *    NODE_FAULT_LOG with NODE_FAULT_EXIT, and the server closes the node
 *    and exits.
 *
 * Each fault is reported once per action through hooks.fault, outside
 * raft's callbacks (this runs from node_poll).
 */

/* The guard fenced raft at a failed write (raft/io_guard.h). This runs
 * inside raft's I/O callbacks or calls: the node stops on the next turn. */
static void io_failed(void *arg)
{
    node_poll_soon(arg);
}

static void stepdown_cb(struct raft_transfer *req)
{
    struct node *n = req->data;

    n->stepdown_in_raft = false;
    n->stepdown_over = true;
    node_poll_soon(n);
}

/* Tell the server what the node does about its fault, once per action. */
static void fault_say(struct node *n, int action, const char *why)
{
    struct node_fault f = {.code = n->fault, .kind = n->fault_kind, .index = n->fault_index,
                           .action = action, .why = why};

    if (n->fault_kind == NODE_FAULT_APPLY && n->fsm.fault_why[0] != '\0')
        f.cause = n->fsm.fault_why;

    if (n->fault_said == action) return;
    n->fault_said = action;
    if (action == NODE_FAULT_EXIT) n->fatal = true;
    if (n->hooks.fault != NULL) n->hooks.fault(n->hooks.data, &f);
}

/* The fault as it stands now: a failed log write outranks a failed apply,
 * which outranks raft having stopped for another reason. */
static void fault_update(struct node *n)
{
    int code = 0, kind = NODE_FAULT_NONE;
    uint64_t index = 0;
    bool said;

    if (io_guard_fenced(&n->guard)) {
        code = n->guard.sys_errno == ENOSPC ? BATON_ENOSPC : BATON_EIO;
        kind = NODE_FAULT_LOG;
        index = n->guard.failed_index;
    } else if (n->fsm.fault) {
        code = n->fsm.fault;
        kind = NODE_FAULT_APPLY;
        index = n->fsm.fault_index;
    } else if (fsm_failed(&n->fsm) != NULL) {
        code = BATON_EIO;
        kind = NODE_FAULT_RAFT;
        index = raft_last_applied(&n->raft) + 1;
    } else if (raft_state(&n->raft) == RAFT_UNAVAILABLE) {
        code = BATON_EIO;
        kind = NODE_FAULT_RAFT;
        index = raft_last_applied(&n->raft) + 1;
    }
    if (code == n->fault && kind == n->fault_kind) return;
    said = n->fault_said != -1;
    n->fault = code;
    n->fault_kind = kind;
    n->fault_index = index;
    n->fault_said = -1; /* a new state: its action is yet to be said */
    if (code == 0 && said) fault_say(n, NODE_FAULT_CLEARED, "an apply succeeded again");
}

/* A leader with a failed apply: hand leadership away, or give up. */
static void fault_step_down(struct node *n)
{
    int rv;

    if (n->stepdown_over) {
        n->stepdown_over = false;
        /* raft's transfer is over and this node still leads the term it
         * asked in. (Leading a later term, it lost leadership in between
         * and won it back: ask again.) */
        if (n->raft.current_term == n->stepdown_term) {
            fault_say(n, NODE_FAULT_EXIT, "leadership could not be handed to another voter");
            return;
        }
    }
    /* A transfer raft still holds (0.15 closes one whose target did not
     * win only when this node leads again, an election timeout later). */
    if (n->stepdown_in_raft) return;
    if (n->transfer_in_raft) return; /* an operator's transfer runs: wait for it */
    memset(&n->stepdown, 0, sizeof n->stepdown);
    n->stepdown.data = n;
    rv = raft_transfer(&n->raft, &n->stepdown, 0, stepdown_cb);
    if (rv != 0) {
        fault_say(n, NODE_FAULT_EXIT, raft_errmsg(&n->raft));
        return;
    }
    n->stepdown_in_raft = true;
    n->stepdown_term = n->raft.current_term;
    fault_say(n, NODE_FAULT_STEPDOWN, "handing leadership to another voter");
}

/* Why raft stopped on its own (NODE_FAULT_RAFT), in a sentence: the fsm
 * gave up on an entry it held back (fsm_failed), or libraft stopped it --
 * 0.15 does when an apply or snapshot fails while handling an
 * AppendEntries, and when a leader asks it to replace an entry below its
 * commit index (canonical/raft#220, raft/fsm.h). */
static const char *raft_stop_reason(struct node *n, char *buf, size_t size)
{
    const char *failed = fsm_failed(&n->fsm);

    if (failed != NULL) return failed;
    snprintf(buf, size, "raft stopped (%s)%s; restart the node to replay its log",
             raft_errmsg(&n->raft),
             fsm_gated(&n->fsm) > 0
                 ? " while entries committed under an earlier term waited for a sure commit "
                   "(canonical/raft#220): the store never applied them"
                 : "");
    return buf;
}

/* A failed write fenced raft (NODE_FAULT_LOG): the node must exit. */
static void io_fault_say(struct node *n)
{
    char why[2 * BATON_ERRMSG_SIZE + IO_GUARD_WHAT_SIZE + PATH_MAX];
    char entry[48] = "";

    if (n->guard.failed_index != 0)
        snprintf(entry, sizeof entry, " (entry %llu)", (unsigned long long)n->guard.failed_index);
    snprintf(why, sizeof why,
             "%s%s in %s failed: %s; libraft 0.15 cannot go on after a failed write to its "
             "raft directory, so this node's raft sends and writes nothing more",
             n->guard.what, entry, n->cfg.raft_dir, n->guard.errmsg);
    fault_say(n, NODE_FAULT_EXIT, why);
}

/*
 * Act on a local failure, if there is one. Returns true when the node has
 * one: it is then not ready, whatever raft says, and node_poll stops here.
 */
static bool fault_poll(struct node *n)
{
    char why[BATON_ERRMSG_SIZE];

    fault_update(n);
    if (n->fault == 0) return false;
    set_ready(n, false);
    if (n->closing || n->fatal) return true;
    if (n->fault_kind == NODE_FAULT_LOG) {
        io_fault_say(n);
        return true;
    }
    if (n->fault_kind == NODE_FAULT_RAFT) {
        fault_say(n, NODE_FAULT_EXIT, raft_stop_reason(n, why, sizeof why));
        return true;
    }
    if (n->fault_kind == NODE_FAULT_APPLY && raft_state(&n->raft) == RAFT_LEADER) {
        fault_step_down(n);
        return true;
    }
    fault_say(n, NODE_FAULT_STOPPED,
              "it applies nothing more until it is restarted (libraft 0.15 stops a follower at "
              "an entry it cannot apply)");
    return true;
}

/*
 * Compare raft's role with what we last saw. Runs at the end of every loop
 * turn (the watch handle), every NODE_POLL_MS, and whenever a proposal
 * reports lost leadership. First the fsm applies the entries its follower
 * gate held if their commit has become sure (raft/fsm.h: the entry that
 * makes it sure may be a barrier, which never reaches apply), and a node
 * that stopped for good says so. A finished leadership transfer is
 * reported next, so that its reply goes out before the loss of leadership
 * closes the client connections.
 */
/* Count the leaderships this node sees (node_status.leader_changes): a
 * leader known in a term other than the last one's, or another node. */
static void leader_track(struct node *n)
{
    raft_id id = 0;
    const char *addr = NULL;

    raft_leader(&n->raft, &id, &addr);
    if (id == 0 || (id == n->last_leader && n->raft.current_term == n->last_leader_term)) return;
    n->leader_changes++;
    n->last_leader = id;
    n->last_leader_term = n->raft.current_term;
}

/* raft's state as an enum node_role. */
static int role_of(int state)
{
    switch (state) {
    case RAFT_FOLLOWER: return ROLE_FOLLOWER;
    case RAFT_CANDIDATE: return ROLE_CANDIDATE;
    case RAFT_LEADER: return ROLE_LEADER;
    default: return ROLE_UNAVAILABLE;
    }
}

/* Report a change of raft's role or term (hooks.role): failovers are timed
 * and spurious elections counted from it (docs/performance.md, "Failover"). */
static void role_track(struct node *n, int state)
{
    if (state == n->seen_state && n->raft.current_term == n->seen_term) return;
    n->seen_state = state;
    n->seen_term = n->raft.current_term;
    if (n->hooks.role != NULL) n->hooks.role(n->hooks.data, role_of(state), n->seen_term);
}

/* A leader notes, at every poll, the voters raft has just heard from. */
static void heard_track(struct node *n)
{
    const struct raft *r = &n->raft;
    uint64_t now = uv_now(n->loop);

    for (unsigned i = 0; i < r->configuration.n && i < BATON_MAX_MEMBERS; i++) {
        if (!r->leader_state.progress[i].recent_recv) continue;
        n->heard[i].id = r->configuration.servers[i].id;
        n->heard[i].at = now;
    }
}

/* Has this leader heard from voter i (its index in the configuration)
 * within an election timeout? */
static bool heard_recently(const struct node *n, unsigned i)
{
    const struct raft *r = &n->raft;

    if (r->leader_state.progress[i].recent_recv) return true;
    return i < BATON_MAX_MEMBERS && n->heard[i].id == r->configuration.servers[i].id &&
           n->heard[i].at != 0 && uv_now(n->loop) - n->heard[i].at <= r->election_timeout;
}

/*
 * Who the raft port admits (raft/peer_admit.h), told to the transport at
 * every poll; the transport acts only on a change. libraft 0.15 keeps
 * only the latest configuration in memory, and marks it uncommitted
 * (configuration_uncommitted_index) until its entry commits here; so the
 * committed configuration is the copy taken the last time there was no
 * uncommitted one. A node that starts with a configuration entry it
 * cannot know to be committed (0.15 treats every one after index 1 so)
 * has no copy until its commit index passes that entry, one heartbeat
 * after a leader reaches it; meanwhile it admits the latest configuration
 * alone.
 */
static void admit_track(struct node *n)
{
    const struct raft_configuration *conf = &n->raft.configuration;
    uint64_t latest[BATON_MAX_MEMBERS], listed[BATON_MAX_MEMBERS];
    struct peer_admit_in in = {.latest = latest, .committed = n->committed, .listed = listed};
    struct peer_admit a;

    for (unsigned i = 0; i < conf->n && in.n_latest < BATON_MAX_MEMBERS; i++)
        latest[in.n_latest++] = conf->servers[i].id;
    if (n->raft.configuration_uncommitted_index == 0 && in.n_latest > 0) {
        memcpy(n->committed, latest, in.n_latest * sizeof *latest);
        n->n_committed = in.n_latest;
    }
    in.n_committed = n->n_committed;
    for (uint32_t i = 0; i < n->cfg.n_members && i < BATON_MAX_MEMBERS; i++)
        listed[in.n_listed++] = n->cfg.members[i].id;
    in.strict = n->cfg.peer.cert_file != NULL;
    peer_admit_compute(&a, &in);
    transport_set_admit(&n->transport, &a);
}

static void node_poll(struct node *n)
{
    int state;
    int rv;

    if (n->closing) return;
    /* A failed write fenced raft (raft/io_guard.h): only stop now. */
    if (io_guard_fenced(&n->guard)) {
        fault_poll(n);
        return;
    }
    admit_track(n);
    fsm_flush(&n->fsm);
    if (n->transfer_over) transfer_finish(n, false);
    if (fault_poll(n)) return;
    leader_track(n);
    state = raft_state(&n->raft);
    role_track(n, state);
    if (state != RAFT_LEADER) {
        set_ready(n, false);
        return;
    }
    heard_track(n);
    if (n->ready && n->ready_term == n->raft.current_term) return;
    if (n->ready) set_ready(n, false); /* leader again in a newer term */
    if (n->barrier_pending || !barrier_due(n)) return;
    n->ready_term = n->raft.current_term;
    n->barrier.data = n;
    rv = raft_barrier(&n->raft, &n->barrier, barrier_cb);
    if (rv == 0) n->barrier_pending = true;
}

/* Once raft has state -- at the first start for a bootstrapped node, when
 * a leader first reaches a --join node -- mark the data directory
 * (raft/state_mark.h). A failed write is tried again at the next poll;
 * meanwhile the store's applied index still tells a lost raft directory. */
static void state_mark(struct node *n)
{
    if (n->marked || n->raft.current_term == 0) return;
    if (n->cfg.state_mark == NULL ||
        state_mark_write(n->cfg.state_mark, n->cfg.id, n->raft.current_term) == 0)
        n->marked = true;
}

static void poll_timer_cb(uv_timer_t *t)
{
    state_mark(t->data);
    node_poll(t->data);
}

static void watch_cb(uv_check_t *h)
{
    node_poll(h->data);
}

/*
 * Poll on the next loop iteration rather than now. Used from inside raft's
 * callbacks: when leadership is lost, raft fails pending requests while it
 * is still tearing down its leader state, and calling raft_barrier (or any
 * other raft function that changes state) from there is not safe.
 */
static void node_poll_soon(struct node *n)
{
    if (n->closing) return;
    uv_timer_start(&n->poll, poll_timer_cb, 0, NODE_POLL_MS);
}

/*
 * Every applied entry, on every node. A ready node that raft no longer
 * makes leader of the term it became ready in (it stepped down, or leads a
 * newer term whose barrier has not applied yet) stops being ready first,
 * here, rather than at the end of the loop turn: the entry may have been
 * committed by another leader -- in 0.15 possibly an entry of an earlier
 * term committed by counting replicas -- and its effects must not reach a
 * client from this node, whose server delivers them before the poll runs.
 */
static void fsm_applied(void *data, const struct effects *fx)
{
    struct node *n = data;

    if (n->ready && (raft_state(&n->raft) != RAFT_LEADER ||
                     n->raft.current_term != n->ready_term))
        set_ready(n, false);
    if (n->hooks.applied != NULL) n->hooks.applied(n->hooks.data, fx);
}

static void apply_cb(struct raft_apply *req, int status, void *result)
{
    struct proposal *p = req->data;
    struct node *n = p->node;
    int st = accepted_status(n, status, req->index);

    p->cb(p->data, st, st == 0 ? result : NULL);
    free(p);
    if (st == BATON_ENOTLEADER) node_poll_soon(n);
}

int node_propose(struct node *n, const void *data, size_t len, node_propose_cb *cb, void *cb_data)
{
    struct proposal *p;
    struct raft_buffer buf;
    int rv;

    if (!node_is_ready(n)) return BATON_ENOTLEADER;
    p = malloc(sizeof *p);
    if (p == NULL) return BATON_ENOMEM;
    buf.len = fsm_entry_size(len);
    buf.base = raft_malloc(buf.len);
    if (buf.base == NULL) {
        free(p);
        return BATON_ENOMEM;
    }
    fsm_entry_encode(buf.base, data, len);
    p->req.data = p;
    p->node = n;
    p->cb = cb;
    p->data = cb_data;
    rv = raft_apply(&n->raft, &p->req, &buf, 1, apply_cb);
    if (rv != 0) {
        /* On failure the buffer is still ours (docs/libraft-0.15.md,
         * "raft_apply: buffers and outcomes"). */
        raft_free(buf.base);
        free(p);
        /* Refused because a write failed: nothing was sent; the node stops. */
        rv = io_guard_fenced(&n->guard) ? BATON_ENOTLEADER : status_from_raft(rv);
        if (rv == BATON_ENOTLEADER) node_poll_soon(n);
        return rv;
    }
    return 0;
}

/* raft's transfer callback: runs inside raft (possibly while it steps
 * down), so only note it and let the next poll report it. */
static void transfer_cb(struct raft_transfer *req)
{
    struct node *n = req->data;

    n->transfer_in_raft = false;
    if (n->transfer_cb == NULL) return; /* already reported at step-down */
    n->transfer_over = true;
    node_poll_soon(n);
}

int node_transfer(struct node *n, uint32_t id, node_transfer_cb *cb, void *data)
{
    int rv;

    if (!n->ready || n->closing) return BATON_ENOTLEADER;
    if (n->transfer_cb != NULL || n->transfer_in_raft) return BATON_EBUSY;
    memset(&n->transfer, 0, sizeof n->transfer);
    n->transfer.data = n;
    n->transfer_cb = cb;
    n->transfer_data = data;
    n->transfer_over = false;
    rv = raft_transfer(&n->raft, &n->transfer, id, transfer_cb);
    if (rv == 0) {
        n->transfer_in_raft = true;
        return 0;
    }
    n->transfer_cb = NULL;
    n->transfer_data = NULL;
    n->transfer_over = false;
    switch (rv) {
    case RAFT_BADID:
    case RAFT_NOTFOUND:
        return BATON_EINVAL;
    default:
        return status_from_raft(rv);
    }
}

uint32_t node_successor(struct node *n, uint64_t *match)
{
    const struct raft *r = &n->raft;
    uint32_t best = 0;

    bool best_recent = false;

    *match = 0;
    if (!node_is_ready(n) || r->state != RAFT_LEADER) return 0;
    for (unsigned i = 0; i < r->configuration.n; i++) {
        const struct raft_server *sv = &r->configuration.servers[i];
        const struct raft_progress *p = &r->leader_state.progress[i];

        if (sv->id == r->id || sv->role != RAFT_VOTER) continue;
        /* Heard from recently first, then the highest match index. 0.15
         * clears every recent_recv at each election timeout's check, so
         * right after it none may be set: then the match index alone. */
        if (best == 0 || (p->recent_recv && !best_recent) ||
            (p->recent_recv == best_recent && p->match_index > *match)) {
            best = (uint32_t)sv->id;
            best_recent = p->recent_recv;
            *match = p->match_index;
        }
    }
    return best;
}

uint32_t node_settled_leader(struct node *n)
{
    raft_id id = 0;
    const char *addr = NULL;

    if (n->closing || raft_state(&n->raft) != RAFT_FOLLOWER) return 0;
    raft_leader(&n->raft, &id, &addr);
    if (id == 0 || id == n->cfg.id || !fsm_commit_sure(&n->fsm)) return 0;
    return (uint32_t)id;
}

/* The configured snapshot threshold. */
static unsigned snapshot_threshold(const struct node *n)
{
    return n->cfg.snapshot_threshold ? n->cfg.snapshot_threshold : 8192;
}

/* Run the caller's snapshot callback, once. */
static void snapshot_finish(struct node *n)
{
    node_snapshot_cb *cb = n->snap_cb;
    void *data = n->snap_data;

    if (cb == NULL) return;
    n->snap_cb = NULL;
    n->snap_data = NULL;
    cb(data, n->snap_status, n->snap_status == 0 ? n->snap_index : 0);
}

/* The loop turn after the empty entry was applied (or failed): raft has
 * started the snapshot by now, so the threshold can go back. */
static void snapshot_timer_cb(uv_timer_t *t)
{
    struct node *n = t->data;

    if (n->closing) return;
    raft_set_snapshot_threshold(&n->raft, snapshot_threshold(n));
    /* A snapshot being written is the one taken for us (or an earlier one
     * that kept raft from starting another). None, and none as recent
     * persisted: the fsm refused it (raft/fsm_snap.c: entries held back
     * on a sure commit, or a recent failure) -- try again later. */
    if (n->snap_status == 0 && n->raft.snapshot.pending.term != 0)
        n->snap_index = n->raft.snapshot.pending.index;
    else if (n->snap_status == 0 && n->raft.log.snapshot.last_index < n->snap_index)
        n->snap_status = BATON_EBUSY;
    snapshot_finish(n);
}

/* The empty entry was applied, or failed. This runs inside raft's apply
 * loop, before raft decides whether to snapshot: note the outcome only. */
static void snapshot_applied(void *data, int status, const struct effects *fx)
{
    struct node *n = data;

    n->snap_status = status;
    n->snap_index = status == 0 && fx != NULL ? fx->index : 0;
    if (n->closing) {
        /* node_close is failing the proposals: no loop turn will follow. */
        snapshot_finish(n);
        return;
    }
    uv_timer_start(&n->snap_timer, snapshot_timer_cb, 0, 0);
}

int node_snapshot_now(struct node *n, node_snapshot_cb *cb, void *data)
{
    int rv;

    if (!n->ready || n->closing) return BATON_ENOTLEADER;
    if (n->snap_cb != NULL) return BATON_EBUSY;
    n->snap_cb = cb;
    n->snap_data = data;
    raft_set_snapshot_threshold(&n->raft, 1);
    rv = node_propose(n, "", 0, snapshot_applied, n);
    if (rv != 0) {
        raft_set_snapshot_threshold(&n->raft, snapshot_threshold(n));
        n->snap_cb = NULL;
        n->snap_data = NULL;
    }
    return rv;
}

uint32_t node_members(struct node *n, struct node_server *out, uint32_t max)
{
    const struct raft_configuration *conf = &n->raft.configuration;
    bool leading = node_is_ready(n) && raft_state(&n->raft) == RAFT_LEADER;
    uint32_t k = 0;

    for (unsigned i = 0; i < conf->n && k < max; i++) {
        const struct raft_server *sv = &conf->servers[i];
        struct node_server *o = &out[k++];

        o->id = (uint32_t)sv->id;
        o->caught_up = leading && (sv->id == n->raft.id ||
                                   n->raft.leader_state.progress[i].match_index >= n->ready_index);
        switch (sv->role) {
        case RAFT_VOTER:
            o->role = MEMBER_VOTER;
            break;
        case RAFT_STANDBY:
            o->role = MEMBER_STANDBY;
            break;
        default:
            o->role = MEMBER_SPARE;
        }
        snprintf(o->raft_addr, sizeof o->raft_addr, "%s", sv->address ? sv->address : "");
    }
    return k;
}

/* Run the caller's membership-change callback, once. */
static void change_finish(struct node *n, int status)
{
    node_change_cb *cb = n->change_cb;
    void *data = n->change_data;

    if (cb == NULL) return;
    n->change_cb = NULL;
    n->change_data = NULL;
    n->change_next = CHANGE_DONE;
    cb(data, status);
}

/* A RAFT_* code from raft_add / raft_assign / raft_remove or from their
 * callback, as the BATON_E* code node.h documents. */
static int change_status_from_raft(int rv)
{
    switch (rv) {
    case RAFT_CANTCHANGE:
        return BATON_EBUSY;
    case RAFT_BADID:
    case RAFT_NOTFOUND:
    case RAFT_DUPLICATEID:
    case RAFT_DUPLICATEADDRESS:
    case RAFT_BADROLE:
        return BATON_EINVAL;
    case RAFT_NOCONNECTION:
        /* raft gave up on the promotee's catch-up (the server did not
         * answer, or kept falling behind). */
        return BATON_ECANCELED;
    default:
        return status_from_raft(rv);
    }
}

static void raft_change_done(struct raft_change *req, int status);

/* Make the raft call of the next step. 0 once raft has accepted it (its
 * callback follows), or a BATON_E* code. */
static int change_step(struct node *n)
{
    int rv;

    if (!n->ready || n->closing) return BATON_ENOTLEADER;
    memset(&n->change, 0, sizeof n->change);
    n->change.data = n;
    n->change_over = false;
    switch (n->change_next) {
    case CHANGE_ADD:
        n->change_next = CHANGE_PROMOTE;
        rv = raft_add(&n->raft, &n->change, n->change_id, n->change_addr, raft_change_done);
        break;
    case CHANGE_PROMOTE:
        n->change_next = CHANGE_DONE;
        rv = raft_assign(&n->raft, &n->change, n->change_id, RAFT_VOTER, raft_change_done);
        break;
    default:
        return BATON_EINVAL;
    }
    return change_status_from_raft(rv);
}

/*
 * The change timer: runs on a loop turn of its own. Before raft's
 * callback (change_over unset) it makes the next step's call; after it,
 * it either goes on with the next step or reports the outcome.
 */
static void change_timer_cb(uv_timer_t *t)
{
    struct node *n = t->data;
    int rv;

    if (n->closing || n->change_cb == NULL) return;
    if (n->change_over && (n->change_status != 0 || n->change_next == CHANGE_DONE)) {
        change_finish(n, n->change_status);
        return;
    }
    rv = change_step(n);
    if (rv != 0) change_finish(n, rv);
}

/* raft's change callback runs inside raft (possibly while it steps down,
 * or from its tick when a promotion is abandoned), so only note the
 * outcome and act on it on the next loop turn. */
static void raft_change_done(struct raft_change *req, int status)
{
    struct node *n = req->data;

    n->change_status = change_status_from_raft(status);
    n->change_over = true;
    if (n->closing) {
        /* node_close has already answered the caller, or will. */
        return;
    }
    uv_timer_start(&n->change_timer, change_timer_cb, 0, 0);
    if (n->change_status == BATON_ENOTLEADER) node_poll_soon(n);
}

/* Is a configuration change running, ours or one raft still has open (an
 * uncommitted configuration, or a promotion)? */
static bool change_running(const struct node *n)
{
    return n->change_cb != NULL || n->raft.configuration_uncommitted_index != 0 ||
           (n->raft.state == RAFT_LEADER && n->raft.leader_state.promotee_id != 0);
}

int node_member_add(struct node *n, uint32_t id, const char *raft_addr, node_change_cb *cb,
                    void *data)
{
    const struct raft_configuration *conf = &n->raft.configuration;
    int next = CHANGE_ADD;

    if (!n->ready || n->closing) return BATON_ENOTLEADER;
    if (change_running(n)) return BATON_EBUSY;
    if (id == 0 || raft_addr == NULL || raft_addr[0] == '\0' || strlen(raft_addr) > BATON_MAX_ADDR)
        return BATON_EINVAL;
    for (unsigned i = 0; i < conf->n; i++) {
        const struct raft_server *sv = &conf->servers[i];
        bool same_addr = sv->address != NULL && strcmp(sv->address, raft_addr) == 0;

        if (sv->id != id) {
            if (same_addr) return BATON_EINVAL; /* another server's address */
            continue;
        }
        /* Already a member: a voter is a duplicate; a spare or standby
         * with this address is an add that stopped before its promotion. */
        if (sv->role == RAFT_VOTER || !same_addr) return BATON_EINVAL;
        next = CHANGE_PROMOTE;
    }
    n->change_cb = cb;
    n->change_data = data;
    n->change_status = 0;
    n->change_over = false;
    n->change_next = next;
    n->change_id = id;
    snprintf(n->change_addr, sizeof n->change_addr, "%s", raft_addr);
    /* The first raft call too is made from the timer: the caller may be
     * inside a raft callback (a proposal's completion). */
    uv_timer_start(&n->change_timer, change_timer_cb, 0, 0);
    return 0;
}

/* How far (in entries) a voter's match index may trail the commit index
 * and still count as caught up: a follower that is replicating normally
 * trails by the entries in flight, a few at most. */
#define CAUGHT_UP_SLACK 128

/*
 * Would the voters left without server `id` still include a majority that
 * is caught up with this leader? libraft 0.15 walks a follower's diverged
 * log back one entry per heartbeat (it ignores the follower's hint when the
 * follower's log is the longer one), so a follower that returns from a
 * partition with a stale tail of a few hundred entries takes tens of
 * seconds to match again. While it does, the cluster commits with the
 * other two; removing one of those two leaves it a voter that cannot
 * acknowledge anything, and nothing commits -- the removal included --
 * until it has caught up (seen in the fault harness: 30 s without a grant).
 * So, like etcd's strict reconfiguration check, a removal is refused unless
 * the leader plus the caught-up remaining voters make a majority of the
 * remaining voters. A voter counts as caught up if raft heard from it within
 * an election timeout (heard_recently: not raft's recent_recv alone, which
 * 0.15 clears at every election timeout's check) and its match index is
 * within CAUGHT_UP_SLACK of the commit index.
 */
static bool remove_keeps_quorum(const struct node *n, raft_id id)
{
    const struct raft *r = &n->raft;
    unsigned voters = 0, caught_up = 0;

    for (unsigned i = 0; i < r->configuration.n; i++) {
        const struct raft_server *sv = &r->configuration.servers[i];
        const struct raft_progress *p = &r->leader_state.progress[i];

        if (sv->id == id || sv->role != RAFT_VOTER) continue;
        voters++;
        if (sv->id == r->id ||
            (heard_recently(n, i) && p->match_index + CAUGHT_UP_SLACK >= r->commit_index))
            caught_up++;
    }
    return caught_up >= voters / 2 + 1;
}

int node_member_remove(struct node *n, uint32_t id, node_change_cb *cb, void *data)
{
    int rv;

    if (!n->ready || n->closing) return BATON_ENOTLEADER;
    if (n->change_cb != NULL) return BATON_EBUSY;
    if (id == n->cfg.id || id == 0) return BATON_EINVAL;
    if (!remove_keeps_quorum(n, id)) return BATON_EBUSY;
    memset(&n->change, 0, sizeof n->change);
    n->change.data = n;
    n->change_cb = cb;
    n->change_data = data;
    n->change_status = 0;
    n->change_over = false;
    n->change_next = CHANGE_DONE;
    rv = raft_remove(&n->raft, &n->change, id, raft_change_done);
    if (rv == 0) return 0;
    n->change_cb = NULL;
    n->change_data = NULL;
    return change_status_from_raft(rv);
}

bool node_change_busy(const struct node *n)
{
    return change_running(n);
}

void node_get_status(struct node *n, struct node_status *st)
{
    raft_id id = 0;
    const char *addr = NULL;

    memset(st, 0, sizeof *st);
    st->role = role_of(raft_state(&n->raft));
    st->ready = n->ready;
    raft_leader(&n->raft, &id, &addr);
    st->leader_id = (uint32_t)id;
    st->term = n->raft.current_term;
    st->last_index = raft_last_index(&n->raft);
    st->commit_index = n->raft.commit_index;
    st->applied_index = fsm_state_index(&n->fsm);
    st->fault = n->fault;
    st->fault_kind = n->fault_kind;
    st->fault_index = n->fault_index;
    st->leader_changes = n->leader_changes;
    st->snapshots = n->fsm.n_snapshots;
    st->snapshot_ns = n->fsm.snap_last_ns;
}

bool node_is_ready(const struct node *n)
{
    return n->ready && !n->closing && !io_guard_fenced(&n->guard);
}

const struct node_member *node_member_find(const struct node_config *c, uint32_t id)
{
    for (uint32_t i = 0; i < c->n_members; i++)
        if (c->members[i].id == id) return &c->members[i];
    return NULL;
}

const struct node_member *node_member_by_id(const struct node *n, uint32_t id)
{
    return node_member_find(&n->cfg, id);
}

void node_set_cluster_level(struct node *n, uint32_t level)
{
    n->cfg.cluster_level = level;
    transport_set_levels(&n->transport, n->cfg.level, level);
}

uint32_t node_peer_level(struct node *n, uint32_t id)
{
    if (id == n->cfg.id) return n->cfg.level ? n->cfg.level : 1;
    return transport_peer_level(&n->transport, id);
}

const struct node_config *node_config(const struct node *n)
{
    return &n->cfg;
}

static unsigned or_default(unsigned v, unsigned d)
{
    return v ? v : d;
}

/*
 * raft_io's random, which 0.15 calls to draw each election timer in
 * [T, 2T] (electionResetTimer). With pre-vote a follower grants no vote
 * while it still has a leader, so after a leader dies the first follower
 * whose timer runs out is refused, and the election is won only when the
 * *second* one's runs out: a failover takes the later of two timers, on
 * average T + 2/3 T, up to 2T. Drawing them in [T, T + jitter] instead
 * bounds that by T + jitter without shortening the shortest timer, which
 * is what protects a loaded cluster from needless elections
 * (docs/performance.md, "Failover"). The jitter is still there to keep two
 * candidates from standing at the same moment. Any other range is passed
 * through.
 */
static int election_random(struct raft_io *io, int min, int max)
{
    struct node *n = (struct node *)(void *)((char *)io - offsetof(struct node, guard.io));

    if (min == (int)n->election_ms && max == 2 * (int)n->election_ms &&
        n->jitter_ms < n->election_ms)
        max = min + (int)n->jitter_ms;
    return n->uv_random(io, min, max);
}

/*
 * Why raft_start failed, into errmsg. 0.15 leaves raft's own message empty
 * when loading the log fails (the I/O layer's says why) and when the
 * transport cannot listen (the transport's says why: raft_uv passes the
 * code up and copies no message), so these are added, and the code's name
 * when none says anything.
 */
static void start_failed(struct node *n, int rv, char *errmsg)
{
    const char *own = raft_errmsg(&n->raft);
    const char *io = n->guard.io.errmsg[0] ? n->guard.io.errmsg : n->transport.base.errmsg;

    if (own[0] == '\0' && io[0] == '\0') io = raft_strerror(rv);
    snprintf(errmsg, BATON_ERRMSG_SIZE, "raft start: %.100s%s%.140s", own,
             own[0] && io[0] ? ": " : "", io);
}

/* A --join node took the cluster id a member presented: keep it. A failed
 * write leaves it to be taken again at the next start. */
static void cluster_adopted(void *arg, uint64_t id)
{
    struct node *n = arg;

    (void)cluster_id_write(n->cfg.cluster_id_file, id);
}

/* This node's cluster id (raft/cluster_id.h): the file's; else, for a
 * node that bootstraps or has state from before the id existed, the
 * bootstrap's, written now; else (a --join node) none yet. 0 or
 * BATON_EINVAL / BATON_EIO with errmsg. */
static int cluster_id_setup(struct node *n, char *errmsg)
{
    const char *path = n->cfg.cluster_id_file;
    uint64_t id = 0;
    int rv;

    if (path == NULL) return 0;
    rv = cluster_id_load(path, &id);
    if (rv == BATON_ENOTFOUND && !n->cfg.join) {
        id = cluster_id_of_bootstrap(&n->cfg);
        rv = cluster_id_write(path, id);
    } else if (rv == BATON_ENOTFOUND) {
        id = 0;
        rv = 0;
    }
    if (rv != 0) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "cluster id file %s: %s", path,
                 rv == BATON_EMALFORMED ? "not a cluster id" : "cannot be read or written");
        return rv == BATON_EMALFORMED ? BATON_EINVAL : BATON_EIO;
    }
    transport_set_cluster(&n->transport, id, cluster_adopted, n);
    return 0;
}

/* The first-start question, answering side: node id is known as started
 * if it is in raft's configuration and the members table holds its entry
 * (server/members.c writes it once the node has caught up). */
static bool knows_started(void *arg, uint64_t id)
{
    struct node *n = arg;
    const struct raft_configuration *conf = &n->raft.configuration;
    char addr[BATON_MAX_ADDR + 1];
    bool member = false;

    for (unsigned i = 0; i < conf->n && !member; i++) member = conf->servers[i].id == id;
    return member && id <= UINT32_MAX && store_member_addr(n->store, (uint32_t)id, addr,
                                                           sizeof addr) == 1;
}

/* The first-start question, asking side: before a bootstrap on an empty
 * data directory, ask the other members whether this node has started in
 * their cluster before (raft/first_start.h). 0: bootstrap; BATON_ESTALE
 * (one knows it: it lost its data directory and must be added back, as
 * after a lost raft directory: server/server.c says how) or a transport
 * failure, with errmsg. */
static int first_start_check(struct node *n, char *errmsg)
{
    struct first_start_answer a;
    int rv = first_start_ask(&n->cfg, transport_cluster_id(&n->transport), 0, &a, errmsg);

    if (rv != 0) return rv;
    if (a.known_by == 0) return 0;
    snprintf(errmsg, BATON_ERRMSG_SIZE,
             "node %u has started in this cluster before (member %u at %.48s says so), yet "
             "its data directory holds no state: bootstrapping would make a second cluster",
             n->cfg.id, a.known_by, a.known_addr);
    return BATON_ESTALE;
}

/* Bootstrap the static configuration. Every node does it on every start:
 * 0 means this was the first start, RAFT_CANTBOOTSTRAP that state exists. */
static int node_bootstrap(struct node *n, char *errmsg)
{
    struct raft_configuration conf;
    int rv = 0;

    raft_configuration_init(&conf);
    for (uint32_t i = 0; i < n->cfg.n_members && rv == 0; i++)
        rv = raft_configuration_add(&conf, n->cfg.members[i].id, n->cfg.members[i].raft_addr,
                                    RAFT_VOTER);
    if (rv == 0) rv = raft_bootstrap(&n->raft, &conf);
    raft_configuration_close(&conf);
    if (rv != 0 && rv != RAFT_CANTBOOTSTRAP) {
        /* raft_configuration_add's refusals leave raft's message empty. */
        snprintf(errmsg, BATON_ERRMSG_SIZE, "raft bootstrap: %s",
                 raft_errmsg(&n->raft)[0] ? raft_errmsg(&n->raft) : raft_strerror(rv));
        return BATON_EIO;
    }
    return 0;
}

int node_open(uv_loop_t *loop, store *s, const struct node_config *cfg,
              const struct node_hooks *hooks, struct node **out, char *errmsg)
{
    const struct node_member *self;
    struct node *n;
    bool was_member;
    int err = BATON_EIO;
    int rv;

    *out = NULL;
    n = calloc(1, sizeof *n);
    if (n == NULL) return BATON_ENOMEM;
    n->loop = loop;
    n->cfg = *cfg;
    n->hooks = *hooks;
    n->store = s;
    n->marked = cfg->state_mark != NULL && state_mark_exists(cfg->state_mark);
    n->fault_said = -1;
    self = node_member_by_id(n, cfg->id);
    if (self == NULL) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "node id %u is not in the cluster configuration",
                 cfg->id);
        free(n);
        return BATON_EINVAL;
    }
    fsm_init(&n->fsm, s, fsm_applied, n);

    rv = transport_init(&n->transport, loop, cfg->id, &cfg->peer, errmsg);
    if (rv != 0) {
        fsm_close(&n->fsm);
        free(n);
        return rv;
    }
    if (cfg->raft_bind[0] != '\0' &&
        (rv = transport_set_bind_address(&n->transport, cfg->raft_bind)) != 0) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "raft bind address '%s' refused (%d)", cfg->raft_bind,
                 rv);
        goto err_after_transport;
    }
    if ((rv = cluster_id_setup(n, errmsg)) != 0) {
        err = rv;
        goto err_after_transport;
    }
    transport_set_levels(&n->transport, cfg->level, cfg->cluster_level);
    transport_set_started(&n->transport, knows_started, n);
    rv = raft_uv_init(&n->guard.io, loop, cfg->raft_dir, &n->transport.base);
    if (rv != 0) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "raft io init: %.200s", n->guard.io.errmsg);
        goto err_after_transport;
    }
    io_guard_init(&n->guard, io_failed, n);
    raft_uv_set_connect_retry_delay(&n->guard.io, or_default(cfg->connect_retry_ms, 250));
    /* Snapshots dump the store on a libuv pool thread (raft/fsm_snap.c).
     * 0.15's raft_uv implements async_work but its init says version 1,
     * and raft_init refuses fsm version 3 over that
     * (docs/libraft-0.15.md, "Snapshots and restore"). */
    n->guard.io.version = 2;
    n->election_ms = or_default(cfg->election_timeout_ms, 300);
    n->jitter_ms = or_default(cfg->election_jitter_ms, n->election_ms / 3);
    n->uv_random = n->guard.io.random;
    n->guard.io.random = election_random;
    fsm_use_async_snapshots(&n->fsm);
    rv = raft_init(&n->raft, &n->guard.io, &n->fsm.base, cfg->id, self->raft_addr);
    if (rv != 0) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "raft init: %s", raft_errmsg(&n->raft));
        goto err_after_io;
    }
    io_guard_attach(&n->guard, &n->raft);
    n->raft.data = n;
    n->fsm.raft = &n->raft;
    raft_set_election_timeout(&n->raft, n->election_ms);
    raft_set_heartbeat_timeout(&n->raft, or_default(cfg->heartbeat_timeout_ms, 30));
    raft_set_install_snapshot_timeout(&n->raft, or_default(cfg->install_snapshot_timeout_ms, 2000));
    raft_set_snapshot_threshold(&n->raft, snapshot_threshold(n));
    raft_set_snapshot_trailing(&n->raft, or_default(cfg->snapshot_trailing, 2048));
    raft_set_pre_vote(&n->raft, true);

    /* A joining node must not bootstrap: it would start a cluster of its own
     * configuration. It waits, with no configuration, for the leader to add
     * it and send it the log. Nor may a node that was a member: on a raft
     * directory that was lost the bootstrap would start it afresh (see
     * below); on one that was not it would be a no-op. */
    was_member = n->marked || store_applied_index(s) > 0;
    if (!cfg->join && !was_member && (rv = first_start_check(n, errmsg)) != 0) {
        err = rv;
        goto err_after_raft;
    }
    if (!cfg->join && !was_member && node_bootstrap(n, errmsg) != 0) goto err_after_raft;
    rv = raft_start(&n->raft);
    if (rv != 0) {
        start_failed(n, rv, errmsg);
        goto err_after_raft;
    }
    if (was_member && n->raft.current_term == 0) {
        snprintf(errmsg, BATON_ERRMSG_SIZE,
                 "raft directory %s holds no state, yet this node was a cluster member (%s)",
                 cfg->raft_dir,
                 n->marked ? "its data directory is marked so" : "its store applied entries");
        err = BATON_ESTALE;
        goto err_after_raft;
    }
    state_mark(n);
    admit_track(n); /* before the loop runs a single accept */
    uv_timer_init(loop, &n->poll);
    n->poll.data = n;
    uv_check_init(loop, &n->watch);
    n->watch.data = n;
    uv_check_start(&n->watch, watch_cb);
    uv_timer_init(loop, &n->snap_timer);
    n->snap_timer.data = n;
    uv_timer_init(loop, &n->change_timer);
    n->change_timer.data = n;
    uv_timer_start(&n->poll, poll_timer_cb, NODE_POLL_MS, NODE_POLL_MS);
    *out = n;
    return 0;

    /* raft_init succeeded: the instance must go through raft_close, whose
     * callback closes the I/O and the transport. */
err_after_raft:
    n->closing = true;
    raft_close(&n->raft, raft_closed);
    uv_run(loop, UV_RUN_DEFAULT);
    fsm_close(&n->fsm);
    free(n);
    return err;

err_after_io:
    raft_uv_close(&n->guard.io);
err_after_transport:
    transport_close(&n->transport);
    uv_run(loop, UV_RUN_DEFAULT);
    fsm_close(&n->fsm);
    free(n);
    return err;
}

static void timer_closed(uv_handle_t *h)
{
    (void)h;
}

/* raft has closed: close its I/O and transport, then tell the caller. */
static void raft_closed(struct raft *r)
{
    struct node *n = r->data;

    /* A write that failed while a running node was closing (a shutdown,
     * or before the node was ever polled) is reported all the same: the
     * process must not exit 0 over a log it could not write. (A node_open
     * that fails says why in its errmsg: close_cb is NULL then.) */
    if (io_guard_fenced(&n->guard) && !n->fatal && n->close_cb != NULL) {
        fault_update(n);
        io_fault_say(n);
    }
    raft_uv_close(&n->guard.io);
    transport_close(&n->transport);
    if (n->close_cb != NULL) n->close_cb(n->close_data);
}

void node_close(struct node *n, void (*cb)(void *data), void *data)
{
    if (n->closing) return;
    set_ready(n, false);
    n->closing = true;
    n->close_cb = cb;
    n->close_data = data;
    uv_timer_stop(&n->poll);
    uv_close((uv_handle_t *)&n->poll, timer_closed);
    uv_check_stop(&n->watch);
    uv_close((uv_handle_t *)&n->watch, timer_closed);
    uv_timer_stop(&n->snap_timer);
    uv_close((uv_handle_t *)&n->snap_timer, timer_closed);
    uv_timer_stop(&n->change_timer);
    uv_close((uv_handle_t *)&n->change_timer, timer_closed);
    raft_close(&n->raft, raft_closed);
    /* A snapshot whose entry was applied but not yet finished ends here. */
    snapshot_finish(n);
    /* No poll will run again: a transfer still running ends here. */
    transfer_finish(n, true);
    /* Neither will the change timer: a membership change whose outcome has
     * not been reported yet ends here, as unknown -- unless its last step
     * is over and only the report was due. */
    change_finish(n, n->change_over && (n->change_status != 0 || n->change_next == CHANGE_DONE)
                         ? n->change_status
                         : BATON_ENOTLEADER);
}

void node_free(struct node *n)
{
    if (n == NULL) return;
    fsm_close(&n->fsm);
    free(n);
}

/* ---- leadership confirmation (node_confirm) ------------------------------------- */

struct confirm {
    struct raft_barrier req;
    struct node *node;
    uint64_t term;
    node_confirm_cb *cb;
    void *data;
};

static void confirm_cb(struct raft_barrier *req, int status)
{
    struct confirm *q = req->data;
    struct node *n = q->node;
    int st = accepted_status(n, status, req->index);

    /* The barrier is an entry of q->term, committed by a majority: no
     * leader of a later term was elected before that majority stored it. */
    if (st == 0 && (n->closing || !n->ready || n->raft.current_term != q->term))
        st = BATON_ENOTLEADER;
    q->cb(q->data, st);
    free(q);
    if (st == BATON_ENOTLEADER) node_poll_soon(n);
}

int node_confirm(struct node *n, node_confirm_cb *cb, void *data)
{
    struct confirm *q;
    int rv;

    if (!node_is_ready(n)) return BATON_ENOTLEADER;
    q = malloc(sizeof *q);
    if (q == NULL) return BATON_ENOMEM;
    q->req.data = q;
    q->node = n;
    q->term = n->ready_term;
    q->cb = cb;
    q->data = data;
    rv = raft_barrier(&n->raft, &q->req, confirm_cb);
    if (rv != 0) {
        free(q);
        return status_from_raft(rv);
    }
    return 0;
}

const struct node_io node_io_raft = {
    .open = node_open,
    .propose = node_propose,
    .confirm = node_confirm,
    .transfer = node_transfer,
    .snapshot_now = node_snapshot_now,
    .member_add = node_member_add,
    .member_remove = node_member_remove,
    .change_busy = node_change_busy,
    .members = node_members,
    .successor = node_successor,
    .settled_leader = node_settled_leader,
    .get_status = node_get_status,
    .set_cluster_level = node_set_cluster_level,
    .peer_level = node_peer_level,
    .close = node_close,
    .free = node_free,
};
