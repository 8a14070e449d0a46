/*
 * members.c -- cluster membership: the operator's MEMBERS, MEMBER_ADD and
 * MEMBER_REMOVE (served by the ready leader). Where any node finds a
 * member's client address is member_addrs.c.
 *
 * Client addresses. Raft knows each member's id and raft address only.
 * The client address of a member added at run time is committed to the
 * replicated members table (storage/, SET_MEMBER_ADDR) before the member
 * joins the configuration, so every node -- including one whose --cluster
 * list never named it -- can send clients there. A member missing from the
 * table (one of the original members, before the first member add) falls
 * back to the node's own --cluster list. The first MEMBER_ADD also copies
 * the leader's --cluster addresses of the current members into the table,
 * so that a joining node started with only itself in --cluster learns
 * them. The entry of a node that is no longer a member is deleted by the
 * ready leader's tidying (members_tidy): whenever no membership change is
 * in flight, every entry whose id is not in the configuration goes, in one
 * proposal, and a proposal that fails is made again a second later -- so
 * the delete survives a leader change between the removal's commit and
 * the delete (the next leader tidies), a second `member remove`, and a
 * MEMBER_ADD that stopped after its address entry and was never retried.
 *
 * An entry is also the replicated record that a member has started: the
 * same tidying writes the entry of every member that has caught up with
 * this leader (node.h, caught_up) and has none yet, with the client
 * address of this node's --cluster list. A node about to bootstrap on an
 * empty data directory asks the others whether they hold its entry
 * (raft/first_start.h), and refuses to start if one does: its data
 * directory was lost. SET_MEMBER_ADDR is a level 1 command, so every
 * binary applies the record alike; it is in every snapshot, and goes with
 * the removal of the member.
 *
 * One membership change at a time: srv->member_op holds the MEMBER_ADD or
 * MEMBER_REMOVE in flight on this leader (node.c refuses a second raft
 * change too, but an add starts with an ordinary proposal, before node.c
 * sees it).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "server/log.h"
#include "server/server_int.h"

/* A MEMBER_ADD or MEMBER_REMOVE waiting for raft. */
struct member_op {
    struct server *srv;
    uint64_t conn_id;
    uint64_t req_id;
    uint32_t id;
    char raft_addr[BATON_MAX_ADDR + 1];   /* MEMBER_ADD only */
    char client_addr[BATON_MAX_ADDR + 1]; /* MEMBER_ADD only */
};

/* ---- MEMBERS -------------------------------------------------------------- */

/* Send MEMBERS_R with the current raft configuration. */
static void send_members(struct server *srv, struct conn *c, uint64_t req_id)
{
    struct member_view views[BATON_MAX_MEMBERS];
    struct msg_member_info infos[BATON_MAX_MEMBERS];
    struct msg r = {.type = MSG_MEMBERS_R, .req_id = req_id};
    uint32_t n = member_views(srv, views, BATON_MAX_MEMBERS);

    for (uint32_t i = 0; i < n; i++) {
        infos[i].id = views[i].id;
        infos[i].role = (uint8_t)views[i].role;
        infos[i].raft_addr.p = views[i].raft_addr;
        infos[i].raft_addr.n = (uint16_t)strlen(views[i].raft_addr);
        infos[i].client_addr.p = views[i].client_addr;
        infos[i].client_addr.n = (uint16_t)strlen(views[i].client_addr);
    }
    r.u.members_r.n = n;
    r.u.members_r.members = n ? infos : NULL;
    conn_send(c, &r);
}

void admin_members(struct conn *c, const struct msg *m)
{
    send_members(c->srv, c, m->req_id);
}

/* ---- shared by add and remove -------------------------------------------- */

static struct member_op *op_new(struct conn *c, const struct msg *m, uint32_t id)
{
    struct member_op *q = xcalloc(1, sizeof *q);

    q->srv = c->srv;
    q->conn_id = c->id;
    q->req_id = m->req_id;
    q->id = id;
    return q;
}

/* Is a membership change in flight, here or in raft? */
static bool busy(struct server *srv)
{
    return srv->member_op != NULL || srv->nio->change_busy(srv->node);
}

/*
 * Propose one entry of SET_MEMBER_ADDR commands: (ids[i], addrs[i]) for
 * i < n, an empty address deleting the entry. 0 (cb follows) or a BATON_E*
 * code (cb never runs).
 */
static int propose_addrs(struct server *srv, const uint32_t *ids, const char *const *addrs,
                         uint32_t n, node_propose_cb *cb, void *data)
{
    struct buf b = {0};
    size_t start;
    int rv = cmd_batch_begin(&b, &start);

    for (uint32_t i = 0; i < n && rv == 0; i++) {
        struct cmd cmd = {.type = CMD_SET_MEMBER_ADDR, .session = ids[i]};
        cmd.name = addrs[i];
        cmd.name_len = (uint16_t)strlen(addrs[i]);
        rv = cmd_batch_add(&b, &cmd);
    }
    if (rv == 0) {
        cmd_batch_end(&b, start, n);
        rv = srv->nio->propose(srv->node, b.data, b.len, cb, data);
    }
    buf_free(&b);
    return rv;
}

/* ---- MEMBER_ADD ----------------------------------------------------------- */

/*
 * A timed-out add whose node was heard at a raft handshake running a
 * binary below the cluster's feature level: its handshakes were refused
 * (raft/peer_base.c, peer_base_level_ok), so it could never catch up.
 * Answer BATON_EVERSION saying so, in place of a timeout that leaves the
 * operator guessing; true if it did.
 */
static bool add_refused_level(struct server *srv, struct conn *c, const struct member_op *q)
{
    uint32_t theirs = srv->nio->peer_level(srv->node, q->id), cluster = store_level(srv->store);

    if (theirs == 0 || theirs >= cluster) return false;
    conn_send_error(c, q->req_id, BATON_EVERSION,
                    "member add: node %u runs a binary of feature level %u, below the cluster's "
                    "level %u, and was refused at the raft handshake: run this release or a newer "
                    "one there, then member add again (it stays in the configuration as a spare "
                    "until then; member remove %u takes it out)",
                    q->id, theirs, cluster, q->id);
    return true;
}

/* Answer a MEMBER_ADD and end it. ENOTLEADER becomes a redirect: the
 * client asks the next leader, where MEMBER_ADD resumes a half-done add. */
static void add_finish(struct member_op *q, int status)
{
    struct server *srv = q->srv;
    struct conn *c = srv->stopping ? NULL : conn_get(srv, q->conn_id);

    srv->member_op = NULL;
    if (status == 0)
        log_info("node %u (raft %s, clients %s) added as a voter", q->id, q->raft_addr,
                 q->client_addr);
    else
        log_warn("adding node %u failed: %s", q->id, baton_strerror(status));
    if (c == NULL) {
        free(q);
        return;
    }
    switch (status) {
    case 0:
        send_members(srv, c, q->req_id);
        break;
    case BATON_ENOTLEADER:
        reply_not_leader(c, q->req_id);
        break;
    case BATON_EBUSY:
        conn_send_error(c, q->req_id, status,
                        "member add: another membership change is in flight; try again");
        break;
    case BATON_EINVAL:
        conn_send_error(c, q->req_id, status,
                        "member add: raft refused node %u at %s (id or address in use)", q->id,
                        q->raft_addr);
        break;
    case BATON_ECANCELED:
        if (add_refused_level(srv, c, q)) break;
        conn_send_error(c, q->req_id, status,
                        "member add: node %u did not catch up with the log in time: is its "
                        "batond running with --join and raft address %s? It stays in the "
                        "configuration as a spare: run member add again to retry, or member "
                        "remove %u",
                        q->id, q->raft_addr, q->id);
        break;
    default:
        conn_send_error(c, q->req_id, status, "member add: %s", baton_strerror(status));
    }
    free(q);
}

/* node.c is done with the raft change (on the loop, outside raft). */
static void add_changed(void *data, int status)
{
    add_finish(data, status);
}

/*
 * The address entry has been applied (inside raft's apply callback: the
 * raft calls node_member_add makes wait for a loop turn of their own).
 */
static void add_addrs_applied(void *data, int status, const struct effects *fx)
{
    struct member_op *q = data;
    int rv;

    if (status == 0) {
        for (size_t i = 0; i < fx->n_results && status == 0; i++) status = fx->results[i].status;
        if (status == 0 && fx->n_results == 0) status = BATON_EIO; /* every node refused it */
    }
    if (status != 0) {
        add_finish(q, status);
        return;
    }
    rv = q->srv->nio->member_add(q->srv->node, q->id, q->raft_addr, add_changed, q);
    if (rv != 0) add_finish(q, rv);
}

/* Copy a wire string into buf if it is an address --cluster would take. */
static bool copy_addr(char buf[BATON_MAX_ADDR + 1], struct pstr s)
{
    if (s.n == 0 || s.n > BATON_MAX_ADDR || memchr(s.p, '\0', s.n) != NULL) return false;
    memcpy(buf, s.p, s.n);
    buf[s.n] = '\0';
    return config_addr_ok(buf);
}

/*
 * Check the new member against the current configuration, and collect the
 * address entries to commit: its own, and those of current members that
 * the table lacks but this node's --cluster list has. Returns 0, or sends
 * the error and returns it.
 */
static int add_check(struct conn *c, const struct msg *m, const struct member_op *q,
                     uint32_t *ids, const char **addrs, uint32_t *n_addrs)
{
    struct server *srv = c->srv;
    struct member_view views[BATON_MAX_MEMBERS];
    uint32_t n = member_views(srv, views, BATON_MAX_MEMBERS);
    char stored[BATON_MAX_ADDR + 1];

    ids[0] = q->id;
    addrs[0] = q->client_addr;
    *n_addrs = 1;
    if (n >= BATON_MAX_MEMBERS) {
        /* MEMBERS_R and STATUS_R could not list one more. */
        bool present = false;
        for (uint32_t i = 0; i < n; i++) present = present || views[i].id == q->id;
        if (!present) {
            conn_send_error(c, m->req_id, BATON_ELIMIT,
                            "member add: the cluster already has %d members", BATON_MAX_MEMBERS);
            return BATON_ELIMIT;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        const struct member_view *v = &views[i];
        const struct node_member *known;

        if (v->id == q->id && v->role == MEMBER_VOTER) {
            conn_send_error(c, m->req_id, BATON_EINVAL,
                            "member add: node %u is already a voting member (raft %s)", v->id,
                            v->raft_addr);
            return BATON_EINVAL;
        }
        if (v->id == q->id && strcmp(v->raft_addr, q->raft_addr) != 0) {
            conn_send_error(c, m->req_id, BATON_EINVAL,
                            "member add: node %u is already a member at raft address %s; "
                            "member remove %u first",
                            v->id, v->raft_addr, v->id);
            return BATON_EINVAL;
        }
        if (v->id == q->id) continue; /* a spare to promote: resume */
        if (strcmp(v->raft_addr, q->raft_addr) == 0 || strcmp(v->client_addr, q->client_addr) == 0 ||
            strcmp(v->raft_addr, q->client_addr) == 0 || strcmp(v->client_addr, q->raft_addr) == 0) {
            conn_send_error(c, m->req_id, BATON_EINVAL,
                            "member add: an address of node %u is already used by node %u",
                            q->id, v->id);
            return BATON_EINVAL;
        }
        known = node_member_find(&srv->cfg.node, v->id);
        if (known != NULL && store_member_addr(srv->store, v->id, stored, sizeof stored) == 0) {
            ids[*n_addrs] = v->id;
            addrs[(*n_addrs)++] = known->client_addr;
        }
    }
    return 0;
}

void admin_member_add(struct conn *c, const struct msg *m)
{
    struct server *srv = c->srv;
    uint32_t id = m->u.member_add.id, ids[BATON_MAX_MEMBERS + 1], n_addrs = 0;
    const char *addrs[BATON_MAX_MEMBERS + 1];
    struct member_op *q;
    int rv;

    if (id == 0 || id > INT_MAX) {
        conn_send_error(c, m->req_id, BATON_EINVAL,
                        "member add: bad node id %u (1..2147483647)", id);
        return;
    }
    q = op_new(c, m, id);
    if (!copy_addr(q->raft_addr, m->u.member_add.raft_addr) ||
        !copy_addr(q->client_addr, m->u.member_add.client_addr) ||
        strcmp(q->raft_addr, q->client_addr) == 0) {
        conn_send_error(c, m->req_id, BATON_EINVAL,
                        "member add: node %u needs two different addresses HOST:PORT "
                        "(raft and client; HOST a.b.c.d, [IPv6] or a name)",
                        id);
        free(q);
        return;
    }
    if (busy(srv)) {
        conn_send_error(c, m->req_id, BATON_EBUSY,
                        "member add: another membership change is in flight");
        free(q);
        return;
    }
    if (add_check(c, m, q, ids, addrs, &n_addrs) != 0) {
        free(q);
        return;
    }
    rv = propose_addrs(srv, ids, addrs, n_addrs, add_addrs_applied, q);
    if (rv != 0) {
        free(q);
        if (rv == BATON_ENOTLEADER)
            reply_not_leader(c, m->req_id);
        else
            conn_send_error(c, m->req_id, rv, "member add: %s", baton_strerror(rv));
        return;
    }
    srv->member_op = q;
    log_info("conn %llu (%s): adding node %u (raft %s, clients %s)", (unsigned long long)c->id,
             c->peer, id, q->raft_addr, q->client_addr);
}

/* ---- address entries of former members ------------------------------------ */

/* How often the ready leader looks for entries of former members. */
#define TIDY_MS 1000

/* The tidying proposal is done: applied, or lost (tried again at the next
 * check). */
static void tidy_done(void *data, int status, const struct effects *fx)
{
    struct server *srv = data;

    srv->tidy_inflight = false;
    if (status == 0)
        for (size_t i = 0; i < fx->n_results && status == 0; i++) status = fx->results[i].status;
    if (status != 0)
        log_warn("updating the members table failed (%s); trying again", baton_strerror(status));
}

/* The ids of the members table's entries whose id is not in servers[0..n)
 * into gone (as many as the table, at most LOOK looked at): how many. */
static uint32_t former_members(struct server *srv, const struct node_server *servers, uint32_t n,
                               uint32_t *gone, int look)
{
    uint32_t table[2 * BATON_MAX_MEMBERS], n_gone = 0;
    int n_table = store_member_ids(srv->store, table, look);

    if (n_table > look) n_table = look; /* the rest at the next looks */
    for (int i = 0; i < n_table; i++) {
        bool member = false;

        for (uint32_t k = 0; k < n && !member; k++) member = servers[k].id == table[i];
        if (!member) gone[n_gone++] = table[i];
    }
    return n_gone;
}

/*
 * The members that have started and caught up (node.h, caught_up: they
 * hold every entry up to this leader's barrier) and have no entry yet:
 * their ids into ids and their client address, from this node's --cluster
 * list, into addrs. An entry is the replicated record that a member has
 * started once, which the first-start question reads (raft/first_start.h):
 * a node whose data directory is lost must not bootstrap afresh. A member
 * this node's list does not name has its entry from its MEMBER_ADD.
 */
static uint32_t started_members(struct server *srv, const struct node_server *servers, uint32_t n,
                                uint32_t *ids, char (*addrs)[BATON_MAX_ADDR + 1])
{
    uint32_t k = 0;

    for (uint32_t i = 0; i < n; i++) {
        const struct node_member *m = node_member_find(&srv->cfg.node, servers[i].id);
        char have[BATON_MAX_ADDR + 1];

        if (!servers[i].caught_up || m == NULL || m->client_addr[0] == '\0') continue;
        if (store_member_addr(srv->store, servers[i].id, have, sizeof have) != 0) continue;
        ids[k] = servers[i].id;
        snprintf(addrs[k], BATON_MAX_ADDR + 1, "%s", m->client_addr);
        k++;
    }
    return k;
}

void members_tidy(struct server *srv)
{
    /* Twice the members at most: each look sees at least as many entries
     * of non-members as there can be members, so a longer table (the
     * entries are in id order) is worked through in a few looks. */
    enum { LOOK = 2 * BATON_MAX_MEMBERS, MAX = LOOK + BATON_MAX_MEMBERS };
    struct node_server servers[BATON_MAX_MEMBERS];
    uint32_t ids[MAX], n, n_gone, n_new;
    char addrs[BATON_MAX_MEMBERS][BATON_MAX_ADDR + 1];
    const char *vals[MAX];
    uint64_t now = uv_now(srv->loop);
    int rv;

    if (!srv->ready || srv->stopping || srv->tidy_inflight || now < srv->tidy_at || busy(srv))
        return;
    srv->tidy_at = now + TIDY_MS;
    /* No change in flight: the latest configuration is the committed one. */
    n = srv->nio->members(srv->node, servers, BATON_MAX_MEMBERS);
    if (n == 0) return;
    n_gone = former_members(srv, servers, n, ids, LOOK);
    for (uint32_t i = 0; i < n_gone; i++) vals[i] = "";
    n_new = started_members(srv, servers, n, ids + n_gone, addrs);
    for (uint32_t i = 0; i < n_new; i++) vals[n_gone + i] = addrs[i];
    if (n_gone + n_new == 0) return;
    rv = propose_addrs(srv, ids, vals, n_gone + n_new, tidy_done, srv);
    if (rv != 0) return; /* tried again at the next check */
    srv->tidy_inflight = true;
    for (uint32_t i = 0; i < n_gone; i++)
        log_info("deleting the client address of node %u: it is no longer a member", ids[i]);
    for (uint32_t i = 0; i < n_new; i++)
        log_info("recording node %u (clients %s) as started in the members table", ids[n_gone + i],
                 addrs[i]);
}

/* ---- MEMBER_REMOVE -------------------------------------------------------- */

/* node.c finished the change (on the loop, outside raft's callbacks):
 * answer with the new configuration, if the connection is still there. */
static void remove_changed(void *data, int status)
{
    struct member_op *q = data;
    struct server *srv = q->srv;
    struct conn *c = srv->stopping ? NULL : conn_get(srv, q->conn_id);

    srv->member_op = NULL;
    srv->tidy_at = 0; /* its address entry goes at the next loop turn */
    if (status == 0) {
        log_info("node %u removed from the cluster configuration", q->id);
        if (c != NULL) send_members(srv, c, q->req_id);
    } else {
        log_warn("removal of node %u failed: %s", q->id, baton_strerror(status));
        if (c != NULL && status == BATON_ENOTLEADER)
            reply_not_leader(c, q->req_id);
        else if (c != NULL)
            conn_send_error(c, q->req_id, status, "member remove: %s", baton_strerror(status));
    }
    free(q);
}

/*
 * Leadership has been handed away so that the new leader can remove this
 * node. Tell the client where the new leader is (REDIRECT: it sends the
 * MEMBER_REMOVE again there), and flush at once: losing leadership closes
 * every client connection right after this returns.
 */
static void remove_self_transferred(void *data, uint32_t new_leader)
{
    struct member_op *q = data;
    struct server *srv = q->srv;
    struct conn *c = srv->stopping ? NULL : conn_get(srv, q->conn_id);
    char addr[BATON_MAX_ADDR + 1];
    struct msg r = {.req_id = q->req_id};

    srv->member_op = NULL;
    if (new_leader == q->id) {
        log_warn("removing leader %u: leadership did not move", q->id);
        if (c != NULL)
            conn_send_error(c, q->req_id, BATON_ECANCELED,
                            "member remove: node %u is the leader and could not hand "
                            "leadership to another voter in time; try again",
                            q->id);
    } else if (c != NULL) {
        log_info("removing leader %u: leadership handed to %s%u; the client asks it", q->id,
                 new_leader ? "node " : "an unknown node ", new_leader);
        r.type = MSG_NO_LEADER;
        if (new_leader != 0 && member_client_addr(srv, new_leader, addr)[0] != '\0') {
            r.type = MSG_REDIRECT;
            r.u.redirect.leader_id = new_leader;
            r.u.redirect.client_addr.p = addr;
            r.u.redirect.client_addr.n = (uint16_t)strlen(addr);
        }
        conn_send(c, &r);
    }
    conn_flush_all(srv);
    free(q);
}

/* MEMBER_REMOVE of the leader itself: hand leadership away first. */
static void remove_self(struct conn *c, const struct msg *m, struct member_op *q)
{
    struct server *srv = c->srv;
    int rv = srv->nio->transfer(srv->node, 0, remove_self_transferred, q);

    if (rv == 0) {
        srv->member_op = q;
        log_info("conn %llu (%s): removal of this node (the leader) requested: handing "
                 "leadership away first",
                 (unsigned long long)c->id, c->peer);
        return;
    }
    free(q);
    if (rv == BATON_ENOTLEADER)
        reply_not_leader(c, m->req_id);
    else if (rv == BATON_EINVAL)
        conn_send_error(c, m->req_id, rv,
                        "member remove: node %u is the only voter; there is no one to hand "
                        "leadership to",
                        srv->cfg.node.id);
    else if (rv == BATON_EBUSY)
        conn_send_error(c, m->req_id, rv,
                        "member remove: a leadership transfer is already running; try again");
    else
        conn_send_error(c, m->req_id, rv, "member remove: %s", baton_strerror(rv));
}

void admin_member_remove(struct conn *c, const struct msg *m)
{
    struct server *srv = c->srv;
    uint32_t id = m->u.member_remove.id;
    struct member_op *q;
    int rv;

    if (busy(srv)) {
        conn_send_error(c, m->req_id, BATON_EBUSY,
                        "member remove: another membership change is in flight");
        return;
    }
    q = op_new(c, m, id);
    if (id == srv->cfg.node.id) {
        remove_self(c, m, q);
        return;
    }
    rv = srv->nio->member_remove(srv->node, id, remove_changed, q);
    if (rv == 0) {
        srv->member_op = q;
        log_info("conn %llu (%s): removal of node %u requested", (unsigned long long)c->id,
                 c->peer, id);
        return;
    }
    free(q);
    if (rv == BATON_ENOTLEADER)
        reply_not_leader(c, m->req_id);
    else if (rv == BATON_EINVAL)
        conn_send_error(c, m->req_id, rv, "member remove: node %u is not a member", id);
    else if (rv == BATON_EBUSY && srv->nio->change_busy(srv->node))
        conn_send_error(c, m->req_id, rv,
                        "member remove: another membership change is in flight");
    else if (rv == BATON_EBUSY)
        conn_send_error(c, m->req_id, rv,
                        "member remove: without node %u the remaining voters hold no caught-up "
                        "majority (a member is still catching up); try again shortly", id);
    else
        conn_send_error(c, m->req_id, rv, "member remove: %s", baton_strerror(rv));
}
