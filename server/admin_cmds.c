/*
 * admin_cmds.c -- the operator's state-changing requests, served by the
 * ready leader: FORCE_RELEASE and EXPIRE_SESSION become commands in this
 * loop turn's batch (answered by their completions once applied), TRANSFER
 * hands leadership to another node through raft/node.c, SNAPSHOT asks it
 * for a raft snapshot, and CHECK commits an entry of its own on which every
 * node hashes its state. The membership requests are in members.c.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "server/log.h"
#include "server/server_int.h"

/*
 * Answer an applied FORCE_RELEASE with who lost the lock and who got it:
 * the entry's FX_LOST with status BATON_ELOST that this command caused
 * (effect.cmd is its index in the entry), the FX_GRANT of the same command
 * and name, the hand-off to the next waiter, if any, and its FX_LOCK_DELAY
 * when the lock waits out the holder's lease instead. A refusal carries
 * the fence of the hold there is (the command's result value).
 */
static void force_release_done(struct server *srv, const struct pending *p,
                               const struct cmd_outcome *o)
{
    struct conn *c = p->conn_id ? conn_get(srv, p->conn_id) : NULL;
    struct msg m = {.type = MSG_FORCE_RELEASE_R, .req_id = p->req_id};
    struct msg_force_release_r *fr = &m.u.force_release_r;

    if (o->status != 0) {
        if (c != NULL) reply_not_applied(c, p->req_id, o->status);
        return;
    }
    fr->status = o->r->status;
    if (fr->status == BATON_ENOTHELD) fr->cur_fence = o->r->value;
    for (size_t i = 0; fr->status == 0 && i < o->fx->n_fx; i++) {
        const struct effect *e = &o->fx->fx[i];
        bool same = e->name_len == p->name_len && memcmp(e->name, p->name, p->name_len) == 0;
        if (e->cmd != o->index) continue;
        /* Every FX_LOST of the command is of a holder of this lock; a
         * multi-lock's names its first name (storage/multi.c). */
        if (e->type == FX_LOST && e->status == BATON_ELOST) {
            fr->lost_session = e->session;
            fr->lost_fence = e->fence;
        } else if (e->type == FX_GRANT && same) {
            fr->new_session = e->session;
            fr->new_fence = e->fence;
        } else if (e->type == FX_LOCK_DELAY && e->lock_delay_ms > 0 && same) {
            fr->delay_ms = (uint32_t)e->lock_delay_ms;
        }
    }
    if (fr->status == 0)
        log_info("lock '%.*s' force-released from session %llu (fence %llu)%s", (int)p->name_len,
                 p->name, (unsigned long long)fr->lost_session,
                 (unsigned long long)fr->lost_fence,
                 fr->delay_ms ? ", granted to no one while its holder's lease runs out" : "");
    if (c != NULL) conn_send(c, &m);
}

/* FORCE_RELEASE(fence, flags, lock) -> the store's FORCE_RELEASE2
 * (storage/cmd.h, "Forced releases"). */
void admin_force_release(struct conn *c, const struct msg *m)
{
    const struct msg_force_release *fr = &m->u.force_release;
    struct cmd cmd = {0};
    struct pending p;

    if ((fr->flags & ~BATON_FORCE_NOW) != 0) {
        conn_send_error(c, m->req_id, BATON_EINVAL, "release: unknown flags 0x%02x",
                        (unsigned)fr->flags);
        return;
    }
    cmd.type = CMD_FORCE_RELEASE2;
    cmd.fence = fr->fence;
    cmd.wait_ms = (fr->flags & BATON_FORCE_NOW) ? CMD_FORCE_NOW : CMD_FORCE_AFTER_LEASE;
    cmd.name = fr->lock.p;
    cmd.name_len = fr->lock.n;
    log_info("conn %llu (%s): forced release of '%.*s' requested (fence %llu%s)",
             (unsigned long long)c->id, c->peer, (int)cmd.name_len, cmd.name,
             (unsigned long long)cmd.fence, cmd.wait_ms == CMD_FORCE_NOW ? ", now" : "");
    pending_init(&p, force_release_done, c->id, m->req_id, &cmd);
    batch_add(c->srv, &cmd, &p);
}

void admin_expire_session(struct conn *c, const struct msg *m)
{
    struct cmd cmd = {0};
    struct pending p;

    if (m->u.expire_session.session == 0) {
        conn_send_error(c, m->req_id, BATON_EINVAL, "expire: session 0 does not exist");
        return;
    }
    cmd.type = CMD_EXPIRE_SESSION;
    cmd.session = m->u.expire_session.session;
    log_info("conn %llu (%s): expiry of session %llu requested", (unsigned long long)c->id,
             c->peer, (unsigned long long)cmd.session);
    pending_init(&p, reply_result, c->id, m->req_id, &cmd);
    batch_add(c->srv, &cmd, &p);
}

/* A TRANSFER waiting for raft to finish the hand-over. */
struct transfer_req {
    struct server *srv;
    uint64_t conn_id;
    uint64_t req_id;
    uint32_t target;        /* 0: raft's choice */
};

/*
 * The transfer is over (node.c calls this on the loop, outside raft's
 * callbacks, before it reports the loss of leadership). The reply is
 * flushed at once: losing leadership closes every client connection right
 * after this returns.
 */
static void transfer_done(void *data, uint32_t new_leader)
{
    struct transfer_req *t = data;
    struct server *srv = t->srv;
    struct conn *c = conn_get(srv, t->conn_id);
    struct msg m = {.type = MSG_TRANSFER_R, .req_id = t->req_id};

    if (new_leader == srv->cfg.node.id) {
        log_warn("leadership transfer to node %u did not complete", t->target);
        if (c != NULL)
            conn_send_error(c, t->req_id, BATON_ECANCELED,
                            "leadership transfer did not complete; node %u is still the leader",
                            new_leader);
    } else {
        log_info("leadership handed over (new leader: %s%u)", new_leader ? "node " : "unknown ",
                 new_leader);
        m.u.transfer_r.leader_id = new_leader;
        if (c != NULL) conn_send(c, &m);
    }
    conn_flush_all(srv);
    free(t);
}

void admin_transfer(struct conn *c, const struct msg *m)
{
    struct server *srv = c->srv;
    uint32_t id = m->u.transfer.id;
    struct transfer_req *t;
    int rv;

    if (id == srv->cfg.node.id) {
        struct msg r = {.type = MSG_TRANSFER_R, .req_id = m->req_id};
        r.u.transfer_r.leader_id = id;
        conn_send(c, &r);
        return;
    }
    t = xmalloc(sizeof *t);
    t->srv = srv;
    t->conn_id = c->id;
    t->req_id = m->req_id;
    t->target = id;
    rv = srv->nio->transfer(srv->node, id, transfer_done, t);
    if (rv == 0) {
        log_info("conn %llu (%s): leadership transfer to %s%u requested",
                 (unsigned long long)c->id, c->peer, id ? "node " : "any voter, ", id);
        return;
    }
    free(t);
    if (rv == BATON_ENOTLEADER)
        reply_not_leader(c, m->req_id);
    else if (rv == BATON_EINVAL && id != 0)
        conn_send_error(c, m->req_id, rv, "transfer: node %u is not another voting member", id);
    else if (rv == BATON_EINVAL)
        conn_send_error(c, m->req_id, rv, "transfer: no other voting member");
    else if (rv == BATON_EBUSY)
        conn_send_error(c, m->req_id, rv, "transfer: another leadership transfer is running");
    else
        conn_send_error(c, m->req_id, rv, "transfer: %s", baton_strerror(rv));
}

/* A SNAPSHOT waiting for its empty entry to be applied. */
struct snapshot_req {
    struct server *srv;
    uint64_t conn_id;
    uint64_t req_id;
};

/* node.c took (or failed to take) the snapshot: answer, if the connection
 * is still there. */
static void snapshot_done(void *data, int status, uint64_t index)
{
    struct snapshot_req *q = data;
    struct conn *c = conn_get(q->srv, q->conn_id);
    struct msg m = {.type = MSG_SNAPSHOT_R, .req_id = q->req_id};

    if (status == 0) {
        log_info("snapshot taken at index %llu on request", (unsigned long long)index);
        m.u.snapshot_r.index = index;
        if (c != NULL) conn_send(c, &m);
    } else if (c != NULL) {
        conn_send_error(c, q->req_id, status, "snapshot: %s", baton_strerror(status));
    }
    free(q);
}

void admin_snapshot(struct conn *c, const struct msg *m)
{
    struct snapshot_req *q = xmalloc(sizeof *q);
    int rv;

    q->srv = c->srv;
    q->conn_id = c->id;
    q->req_id = m->req_id;
    rv = c->srv->nio->snapshot_now(c->srv->node, snapshot_done, q);
    if (rv == 0) return;
    free(q);
    if (rv == BATON_ENOTLEADER)
        reply_not_leader(c, m->req_id);
    else if (rv == BATON_EBUSY)
        conn_send_error(c, m->req_id, rv, "snapshot: another snapshot request is running");
    else
        conn_send_error(c, m->req_id, rv, "snapshot: %s", baton_strerror(rv));
}

/* A CHECK waiting for its entry to be applied on this leader. */
struct check_req {
    struct server *srv;
    uint64_t conn_id;
    uint64_t req_id;
};

/* The CHECK entry was applied here (every node hashes its state when it
 * applies it: storage/store.h, store_last_check), or it will not be. Runs
 * once, inside raft's apply or from node_close. */
static void check_applied(void *data, int status, const struct effects *fx)
{
    struct check_req *q = data;
    struct server *srv = q->srv;
    struct conn *c = conn_get(srv, q->conn_id);
    struct msg m = {.type = MSG_CHECK_R, .req_id = q->req_id};
    uint64_t index, hash;

    srv->check_inflight = false;
    if (status == 0) {
        store_last_check(srv->store, &index, &hash);
        if (index == fx->index && hash != 0)
            log_info("content check at index %llu: hash %016llx", (unsigned long long)index,
                     (unsigned long long)hash);
        else
            log_warn("content check at index %llu: this node could not hash its state",
                     (unsigned long long)fx->index);
        m.u.check_r.index = fx->index;
        if (c != NULL) conn_send(c, &m);
    } else if (c != NULL) {
        reply_not_applied(c, q->req_id, status);
    }
    free(q);
}

/*
 * The entry holds one CMD_CHECK and nothing else, proposed directly rather
 * than through this turn's batch: a binary that does not know CHECK takes
 * the whole batch for malformed (storage/cmd.h, "Content checks"), which
 * must cost it no other command. One at a time: each costs every node a
 * pass over its whole state on its loop thread.
 */
void admin_check(struct conn *c, const struct msg *m)
{
    struct server *srv = c->srv;
    struct cmd cmd = {.type = CMD_CHECK};
    struct buf b = {0};
    struct check_req *q;
    size_t start;
    int rv;

    if (srv->check_inflight) {
        conn_send_error(c, m->req_id, BATON_EBUSY, "check: another check is running");
        return;
    }
    rv = cmd_batch_begin(&b, &start);
    if (rv == 0) rv = cmd_batch_add(&b, &cmd);
    if (rv != 0) {
        buf_free(&b);
        conn_send_error(c, m->req_id, rv, "check: %s", baton_strerror(rv));
        return;
    }
    cmd_batch_end(&b, start, 1);
    q = xmalloc(sizeof *q);
    q->srv = srv;
    q->conn_id = c->id;
    q->req_id = m->req_id;
    rv = srv->nio->propose(srv->node, b.data, b.len, check_applied, q);
    buf_free(&b);
    if (rv == 0) {
        srv->check_inflight = true;
        log_info("conn %llu (%s): content check requested", (unsigned long long)c->id, c->peer);
        return;
    }
    free(q);
    if (rv == BATON_ENOTLEADER)
        reply_not_leader(c, m->req_id);
    else
        conn_send_error(c, m->req_id, rv, "check: %s", baton_strerror(rv));
}
