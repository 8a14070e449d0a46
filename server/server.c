/*
 * server.c -- batond's start-up, per-loop-turn work and shutdown, and the
 * two things only the whole server can decide: what a node does when it
 * starts or stops being the ready leader, and which module each applied
 * effect goes to. The modules below it know nothing of each other.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/server_int.h"

/* The metrics of an applied entry, on every node: its apply's duration,
 * the grants and expiries in it. A lock is granted either at once (its
 * ACQUIRE's result) or to a waiter later (FX_GRANT). */
static void count_applied(const struct effects *fx)
{
    metrics_observe(M_APPLY_SECONDS, (double)fx->apply_ns / 1e9);
    for (size_t i = 0; i < fx->n_results; i++)
        if (fx->results[i].status == 0 && fx->results[i].kind == RESULT_GRANTED)
            metrics_inc(M_GRANTS);
    for (size_t i = 0; i < fx->n_fx; i++) {
        if (fx->fx[i].type == FX_GRANT) metrics_inc(M_GRANTS);
        if (fx->fx[i].type == FX_SESSION_GONE && fx->fx[i].status != 0)
            metrics_inc(M_SESSIONS_EXPIRED);
    }
}

/*
 * Node hook: an entry was applied (on every node), its transaction
 * committed: the store holds exactly its result (raft/fsm.c,
 * fsm_apply_entry, calls this right after store_apply, entry by entry).
 * Every node records its lock changes in the change history; the ready
 * leader sends them to WATCH2s now, one event per entry, and queues the
 * effects for the rest, to be routed in this loop turn's check handler.
 */
static void effects_applied(void *data, const struct effects *fx)
{
    struct server *srv = data;
    size_t need;

    count_applied(fx);
    hist_applied(&srv->hist, fx);
    if (!srv->ready || fx->n_fx == 0) return;
    watch2_applied(srv, fx);
    need = srv->n_pushq + fx->n_fx;
    if (need > srv->cap_pushq) {
        size_t cap = srv->cap_pushq ? srv->cap_pushq : 64;
        while (cap < need) cap *= 2;
        srv->pushq = xrealloc(srv->pushq, cap * sizeof *srv->pushq);
        srv->cap_pushq = cap;
    }
    memcpy(srv->pushq + srv->n_pushq, fx->fx, fx->n_fx * sizeof *fx->fx);
    srv->n_pushq += fx->n_fx;
}

/* Send one applied effect to each module it concerns. */
static void route_effect(struct server *srv, const struct effect *e)
{
    if (e->type == FX_GRANT) metrics_wait_granted(e->session, e->waiter);
    deadlines_effect(srv, e);
    if (e->type == FX_SESSION_GONE) liveness_gone(srv, e->session);
    if (e->type == FX_LOCK_CHANGED) watch_changed(srv, e->name, e->name_len);
    push_effect(srv, e);
}

/*
 * Runs once per loop turn, after I/O: propose the commands that arrived
 * this turn and the one before as one entry (batch.c says why two),
 * deliver the effects of entries applied this turn
 * (after this turn's replies: a QUEUED reply reaches the client before the
 * push that ends the wait), then write every connection's output with one
 * write each.
 */
static void check_cb(uv_check_t *h)
{
    struct server *srv = h->data;

    batch_flush(srv);
    keepalive_kick(srv);
    srv->watch_turn++;
    for (size_t i = 0; i < srv->n_pushq; i++) route_effect(srv, &srv->pushq[i]);
    srv->n_pushq = 0;
    backup_kick(srv);
    members_tidy(srv);
    conn_flush_all(srv);
    listen_turn_end(srv);
}

/* Forget everything only the ready leader keeps. */
static void leader_state_clear(struct server *srv)
{
    deadlines_stop(srv);
    push_clear(srv);
    watch_clear(srv);
    watch2_clear(srv);
    srv->n_pushq = 0;
}

/*
 * Node hook: this node became the ready leader (its barrier committed), or
 * stopped being it. A new leader gives every session a fresh lease and
 * re-arms every wait deadline and lock-delay with its full duration (it
 * cannot know how much of them had passed). A node that stops leading
 * forgets all of that and closes its client connections, so that the
 * clients find the new leader and re-send what is unanswered.
 */
static void leadership_changed(void *data, bool ready)
{
    struct server *srv = data;

    srv->ready = ready;
    if (ready) {
        log_info("leader: serving");
        levels_kick(srv);
        liveness_start(srv);
        deadlines_start(srv);
        listen_unpark_soon(srv);
    } else {
        log_info("no longer the leader");
        liveness_stop(srv);
        leader_state_clear(srv);
        if (!srv->stopping) conn_close_all(srv);
    }
}

/*
 * Node hook: raft's role or term changed. Logged at info level with the
 * time, which is how a failover's election is timed
 * (tests/bench/failover.sh); candidacies are counted (a spurious one means
 * the election timeout is too short for this machine).
 */
static void role_changed(void *data, int role, uint64_t term)
{
    struct server *srv = data;
    bool stood = role == ROLE_CANDIDATE && srv->raft_role != ROLE_CANDIDATE;

    srv->raft_role = role;
    switch (role) {
    case ROLE_CANDIDATE:
        if (stood) metrics_add(M_CANDIDACIES, 1); /* a pre-vote's candidate, then the vote's */
        log_info("raft: candidate (term %llu)", (unsigned long long)term);
        break;
    case ROLE_LEADER:
        log_info("raft: leader of term %llu", (unsigned long long)term);
        break;
    case ROLE_FOLLOWER:
        log_info("raft: follower (term %llu)", (unsigned long long)term);
        break;
    default:
        break;
    }
}

/*
 * An entry this binary cannot decode (raft/fsm.c, fsm_apply_entry): most
 * likely a command of a later feature level than this binary's, written
 * while this node's binary was too old. The node applies nothing past it;
 * a newer binary is the cure, not free space or a restart of this one.
 */
static void undecodable_entry(struct server *srv, const struct node_fault *f)
{
    unsigned long long index = (unsigned long long)f->index;
    const char *cause = f->cause != NULL ? f->cause : "malformed";

    switch (f->action) {
    case NODE_FAULT_CLEARED:
        log_info("local failure cleared: %s", f->why);
        break;
    case NODE_FAULT_STOPPED:
        log_error("entry %llu cannot be decoded by this binary (feature level %d): %s. This node "
                  "applies nothing past it; %s. Run a batond of the cluster's feature level on "
                  "this node and restart it: it catches up from the leader",
                  index, CMD_LEVEL, cause, f->why);
        break;
    case NODE_FAULT_STEPDOWN:
        log_error("entry %llu cannot be decoded by this binary (feature level %d): %s. The leader "
                  "stops serving and is %s",
                  index, CMD_LEVEL, cause, f->why);
        break;
    default:
        log_error("entry %llu cannot be decoded by this binary (feature level %d): %s; %s: "
                  "exiting with status %d. Run a batond of the cluster's feature level on this "
                  "node",
                  index, CMD_LEVEL, cause, f->why, BATON_EXIT_FAULT);
        srv->exit_code = BATON_EXIT_FAULT;
        server_stop(srv);
    }
}

/*
 * Node hook: a local failure (raft/node.h, "local failures"). Each is
 * logged once per action, with what to do; a node that cannot go on stops
 * and exits with BATON_EXIT_FAULT, so that a supervisor restarts it and
 * the other nodes elect a leader meanwhile. docs/operations.md, "Disk
 * full", says how an operator recovers.
 */
static void node_fault(void *data, const struct node_fault *f)
{
    struct server *srv = data;
    char what[128];
    unsigned long long index = (unsigned long long)f->index;

    if (f->kind == NODE_FAULT_APPLY && f->code == BATON_EMALFORMED) {
        undecodable_entry(srv, f);
        return;
    }
    switch (f->kind) {
    case NODE_FAULT_APPLY:
        snprintf(what, sizeof what, "applying entry %llu failed (%s)", index,
                 baton_strerror(f->code));
        break;
    case NODE_FAULT_LOG:
        log_error("I/O error on the raft log (%s): %s. Exiting with status %d; the other nodes "
                  "go on without this one. Free space on its data disk or repair it, then "
                  "restart batond: it catches up from the others",
                  baton_strerror(f->code), f->why, BATON_EXIT_FAULT);
        srv->exit_code = BATON_EXIT_FAULT;
        server_stop(srv);
        return;
    default:
        snprintf(what, sizeof what, "raft stopped before entry %llu", index);
    }
    if (f->kind == NODE_FAULT_RAFT && f->action == NODE_FAULT_EXIT) {
        /* Nothing to free or repair: a restart replays the log from the
         * store's own applied index (raft/node.h, NODE_FAULT_RAFT). */
        log_error("%s: %s; exiting with status %d: restart batond, it replays its log", what,
                  f->why, BATON_EXIT_FAULT);
        srv->exit_code = BATON_EXIT_FAULT;
        server_stop(srv);
        return;
    }
    switch (f->action) {
    case NODE_FAULT_CLEARED:
        log_info("local failure cleared: %s", f->why);
        break;
    case NODE_FAULT_STOPPED:
        log_error("%s; %s. The other nodes go on without this one: free space on its data disk "
                  "(or repair it) and restart batond; it catches up from the leader",
                  what, f->why);
        break;
    case NODE_FAULT_STEPDOWN:
        log_error("%s on the leader: it stops serving and is %s", what, f->why);
        break;
    default:
        log_error("%s; %s: exiting with status %d so that another node leads. Restart batond "
                  "once the data disk has room (or is repaired): it catches up from the others",
                  what, f->why, BATON_EXIT_FAULT);
        srv->exit_code = BATON_EXIT_FAULT;
        server_stop(srv);
    }
}

static void noop_close(uv_handle_t *h)
{
    (void)h;
}

/* conn.c's srv->conn_gone: a connection that watches closes. */
static void conn_gone(struct server *srv, struct conn *c)
{
    if (c->n_watches > 0) watch_conn_gone(srv, c);
    if (c->watches2 != NULL) watch2_conn_gone(srv, c);
}

static void sighup_cb(uv_signal_t *h, int signum)
{
    (void)signum;
    access_reload(h->data);
    watch_recheck(h->data);
    watch2_recheck(h->data);
}

/* ---- a planned stop hands leadership over first ----------------------------
 *
 * SIGTERM or SIGINT on the ready leader (docs/operations.md, "Planned
 * restarts"): rather than leave the others to notice its silence and elect
 * a leader an election timeout later, the leader hands leadership to the
 * voter whose log is furthest along (node_successor) with raft_transfer,
 * and stops once leadership has moved and the new leader has committed an
 * entry of its term -- or after --shutdown-transfer-timeout, or at a
 * second signal. Meanwhile it listens no more (new connections go
 * to the other endpoints) and proposes nothing (libraft 0.15 refuses every
 * raft_apply while a transfer runs): commands that arrive wait in the batch
 * unanswered, and the entries already proposed commit on the target, which
 * raft brings up to date before it asks it to stand. When leadership
 * moves, the node closes its client connections (leadership_changed); the
 * clients re-send everything unanswered, with the same seqs, to the new
 * leader, whose store deduplicates them, and which gives every session a
 * fresh lease. A follower just stops.
 */

#define HANDOFF_POLL_MS 5
/* How long the old leader stays, as a follower, once the new one has
 * committed: the new leader may still lack a working link to the third
 * node -- in a rolling restart, a node restarted just before, to which it
 * (a follower until now) had no connection or a broken one, and which may
 * need the entries appended since -- and until it has one, it commits with
 * this node alone. Measured with the benchmark's W3R: the clients' longest
 * gap began when the old leader left right at the first commit, and
 * lasted 110-160 ms; staying 200 ms more took it to about 46 ms. */
#define HANDOFF_LINGER_MS 200

/*
 * The hand-off's timer: once raft reports that leadership moved, every
 * HANDOFF_POLL_MS until the new leader has made its leadership sure
 * (node_settled_leader: its barrier has committed, acknowledged by this
 * node if need be -- in a rolling restart the third node may be the one
 * that just came back); before that, only at the deadline. The node stops
 * at whichever comes first.
 */
static void handoff_tick(uv_timer_t *t)
{
    struct server *srv = t->data;
    uint32_t id;

    if (srv->handoff_failed) {
        /* handoff_done said why */
    } else if (uv_now(srv->loop) >= srv->handoff_deadline) {
        log_warn("leadership hand-off did not finish within %d ms: stopping anyway",
                 srv->cfg.shutdown_transfer_ms);
    } else {
        if (!srv->handoff_moved) return;
        id = srv->nio->settled_leader(srv->node);
        if (id == 0) return;
        if (srv->handoff_settled == 0) srv->handoff_settled = uv_now(srv->loop);
        if (uv_now(srv->loop) < srv->handoff_settled + HANDOFF_LINGER_MS) return;
        log_info("leadership handed to node %u, which has committed an entry of its term "
                 "(%d ms ago): stopping", id, HANDOFF_LINGER_MS);
    }
    srv->handing_off = false;
    server_stop(srv);
}

/* node_transfer's completion: runs on the loop, maybe while raft reports
 * the change of leader, so the stop itself waits for the timer. */
static void handoff_done(void *data, uint32_t new_leader)
{
    struct server *srv = data;

    if (!srv->handing_off) return;
    if (new_leader == srv->cfg.node.id) {
        log_warn("leadership did not move (node %u did not win within an election timeout): "
                 "stopping anyway; the others elect a leader", srv->handoff_to);
        srv->handoff_failed = true;
        uv_timer_start(&srv->handoff_timer, handoff_tick, 0, 0);
        return;
    }
    /* new_leader is 0 when this node stepped down for a higher term -- the
     * target's election -- and has not heard the result yet. */
    log_info("leadership moved (to node %u); waiting for it to commit an entry of its term",
             new_leader ? new_leader : srv->handoff_to);
    srv->handoff_moved = true;
    uv_timer_start(&srv->handoff_timer, handoff_tick, 0, HANDOFF_POLL_MS);
}

/* Start the hand-off: true if it runs (the node stops when it ends). */
static bool handoff_start(struct server *srv, int signum)
{
    struct node_status st;
    uint64_t match;
    uint32_t id;
    int rv;

    if (!srv->ready || srv->cfg.shutdown_transfer_ms <= 0) return false;
    id = srv->nio->successor(srv->node, &match);
    if (id == 0) {
        log_warn("signal %d: no other voter; stopping without a hand-off", signum);
        return false;
    }
    srv->nio->get_status(srv->node, &st);
    rv = srv->nio->transfer(srv->node, id, handoff_done, srv);
    if (rv != 0) {
        log_warn("signal %d: cannot hand leadership to node %u (%s); stopping without a "
                 "hand-off", signum, id, baton_strerror(rv));
        return false;
    }
    srv->handing_off = true;
    srv->handoff_moved = false;
    srv->handoff_failed = false;
    srv->handoff_settled = 0;
    srv->handoff_to = id;
    srv->handoff_deadline = uv_now(srv->loop) + (uint64_t)srv->cfg.shutdown_transfer_ms;
    srv->batch.hold = true;
    listen_stop(srv);
    uv_timer_start(&srv->handoff_timer, handoff_tick, (uint64_t)srv->cfg.shutdown_transfer_ms, 0);
    log_info("signal %d: handing leadership to node %u (its log at %llu, ours at %llu) before "
             "stopping, for at most %d ms; no new connections or proposals meanwhile", signum,
             id, (unsigned long long)match, (unsigned long long)st.last_index,
             srv->cfg.shutdown_transfer_ms);
    notify_stopping(srv, id);
    return true;
}

static void signal_cb(uv_signal_t *h, int signum)
{
    struct server *srv = h->data;

    if (srv->handing_off) {
        log_info("signal %d during the leadership hand-off: stopping now", signum);
        server_stop(srv);
        return;
    }
    if (handoff_start(srv, signum)) return;
    log_info("signal %d: shutting down", signum);
    server_stop(srv);
}

/*
 * node_open refused a raft directory that lost its state (node.h,
 * BATON_ESTALE): say why it will not start afresh and how the node comes
 * back (docs/operations.md, "A node that lost its raft directory").
 */
static void lost_raft_dir_help(const struct server *srv)
{
    const struct node_member *self = node_member_find(&srv->cfg.node, srv->cfg.node.id);

    log_error("starting afresh could make this node vote twice in a term, so it will not "
              "start. To bring node %u back as a new member: on a running member run "
              "`batonctl member remove %u`; delete this node's data directory %s; start it "
              "again with --join; then run `batonctl member add %u %s/%s`",
              srv->cfg.node.id, srv->cfg.node.id, srv->cfg.data_dir, srv->cfg.node.id,
              self != NULL ? self->raft_addr : "RAFTADDR",
              self != NULL ? self->client_addr : "CLIENTADDR");
}

/* Hand the raft port's TLS flags and the admission hooks to the node. */
static void peer_tls_config(struct server *srv)
{
    struct node_peer_tls *p = &srv->cfg.node.peer;

    p->cert_file = srv->cfg.peer_cert;
    p->key_file = srv->cfg.peer_key;
    p->ca_file = srv->cfg.peer_ca;
    p->allow_tls12 = srv->cfg.tls12;
    p->handshake_timeout_ms = srv->cfg.handshake_timeout_ms;
    p->log = peers_log;
    p->arg = srv;
}

int server_init(struct server *srv, uv_loop_t *loop, store *st, const struct srv_config *cfg,
                const struct node_io *io)
{
    const struct node_member *self;
    struct node_hooks hooks;
    char errmsg[BATON_ERRMSG_SIZE] = "";
    int rv;

    memset(srv, 0, sizeof *srv);
    srv->loop = loop;
    srv->store = st;
    srv->nio = io;
    srv->cfg = *cfg;
    u64map_init(&srv->conns);
    u64map_init(&srv->sessions);
    u64map_init(&srv->waits);
    srv->conn_gone = conn_gone;
    u64map_init(&srv->watches);
    hist_init(&srv->hist, st);
    batch_init(&srv->batch);
    srv->batch.max_inflight = cfg->max_inflight;
    self = node_member_find(&srv->cfg.node, cfg->node.id);

    peer_tls_config(srv);
    hooks.data = srv;
    hooks.applied = effects_applied;
    hooks.ready = leadership_changed;
    hooks.fault = node_fault;
    hooks.role = role_changed;
    rv = conn_tls_init(srv);
    if (rv == 0) rv = access_init(srv);
    if (rv != 0) return rv;
    if (srv->client_tls != NULL) srv->rbuf = xmalloc(LISTEN_RBUF);
    srv->cfg.node.level = CMD_LEVEL;
    srv->cfg.node.cluster_level = store_level(srv->store);
    if (srv->cfg.node.cluster_level > CMD_LEVEL) {
        log_error("the store in %s is at feature level %u; this binary applies level %u only: "
                  "a node cannot go back below its cluster's level (docs/operations.md, "
                  "\"Upgrades and downgrades\")",
                  cfg->data_dir, srv->cfg.node.cluster_level, CMD_LEVEL);
        return BATON_EVERSION;
    }
    rv = srv->nio->open(loop, srv->store, &srv->cfg.node, &hooks, &srv->node, errmsg);
    if (rv != 0) {
        log_error("%s", errmsg);
        if (rv == BATON_ESTALE) lost_raft_dir_help(srv);
        return rv;
    }
    rv = listen_start(srv, self->client_addr);
    if (rv != 0) {
        log_error("cannot listen on %s: %s", self->client_addr, uv_strerror(rv));
        listen_stop(srv);
        listen_close(srv);
        srv->nio->close(srv->node, NULL, NULL);
        uv_run(loop, UV_RUN_DEFAULT);
        return BATON_EIO;
    }
    rv = http_start(srv);
    if (rv != 0) {
        listen_stop(srv);
        listen_close(srv);
        srv->nio->close(srv->node, NULL, NULL);
        uv_run(loop, UV_RUN_DEFAULT);
        return rv;
    }
    liveness_init(srv);
    guard_init(srv);
    disk_init(srv);
    levels_init(srv);
    loop_lag_init(srv);
    keepalive_init(srv);
    watch2_init(srv);
    uv_check_init(loop, &srv->check);
    srv->check.data = srv;
    batch_open(&srv->batch, loop);
    uv_check_start(&srv->check, check_cb);
    uv_signal_init(loop, &srv->sigint);
    uv_signal_init(loop, &srv->sigterm);
    srv->sigint.data = srv;
    srv->sigterm.data = srv;
    uv_signal_start(&srv->sigint, signal_cb, SIGINT);
    uv_signal_start(&srv->sigterm, signal_cb, SIGTERM);
    uv_timer_init(loop, &srv->handoff_timer);
    srv->handoff_timer.data = srv;
    notify_init(srv);
    uv_signal_init(loop, &srv->sighup);
    srv->sighup.data = srv;
    uv_signal_start(&srv->sighup, sighup_cb, SIGHUP);
    access_warn_if_open(srv, self->client_addr, self->raft_addr);
    log_info("node %u: clients on %s, raft on %s%s, %u members", cfg->node.id,
             self->client_addr, self->raft_addr, cfg->peer_cert ? " (mutual TLS)" : "",
             cfg->node.n_members);
    return 0;
}

static void node_closed(void *data)
{
    struct server *srv = data;
    log_info("raft closed");
    (void)srv;
}

/* Close everything; uv_run returns once the last handle is closed. */
void server_stop(struct server *srv)
{
    if (srv->stopping) return;
    srv->stopping = true;
    srv->handing_off = false;
    notify_stopping(srv, 0);
    uv_close((uv_handle_t *)&srv->handoff_timer, noop_close);
    notify_close(srv);
    listen_close(srv);
    listen_stop(srv);
    conn_close_all(srv);
    http_stop(srv);
    uv_close((uv_handle_t *)&srv->check, noop_close);
    batch_close(&srv->batch);
    uv_close((uv_handle_t *)&srv->sigint, noop_close);
    uv_close((uv_handle_t *)&srv->sigterm, noop_close);
    uv_close((uv_handle_t *)&srv->sighup, noop_close);
    leader_state_clear(srv);
    liveness_close(srv);
    guard_close(srv);
    disk_close(srv);
    levels_close(srv);
    loop_lag_close(srv);
    keepalive_close(srv);
    watch2_close(srv);
    backup_close(srv);
    srv->nio->close(srv->node, node_closed, srv);
    /* raft_close failed pending proposals synchronously; drop their replies. */
    srv->dirty = NULL;
    leader_state_clear(srv);
}

void server_free(struct server *srv)
{
    srv->nio->free(srv->node);
    batch_free(&srv->batch);
    keepalive_free(srv);
    u64map_free(&srv->conns);
    u64map_free(&srv->sessions);
    u64map_free(&srv->waits);
    watch_clear(srv);
    watch2_clear(srv);
    hist_free(&srv->hist);
    free(srv->pushq);
    free(srv->rbuf);
    conn_tls_free(srv);
    access_free(srv);
}
