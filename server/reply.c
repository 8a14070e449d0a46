/*
 * reply.c -- answers that every request handler may give: the redirect of
 * a request this node cannot serve, the answer for a command that was not
 * applied, the plain RESULT of an applied command, and a lock's whole
 * state (LOCK_STATE_R).
 */
#include <string.h>

#include "baton/baton_defs.h"
#include "server/server_int.h"

/* The leader's client address comes from the replicated members table,
 * else from --cluster (member_addrs.c); a leader whose address is unknown
 * gets NO_LEADER, and the client tries its other endpoints. */
void reply_not_leader(struct conn *c, uint64_t req_id)
{
    struct node_status st;
    char addr[BATON_MAX_ADDR + 1] = "";
    struct msg m = {.req_id = req_id};

    c->srv->nio->get_status(c->srv->node, &st);
    if (st.leader_id && st.leader_id != c->srv->cfg.node.id)
        member_client_addr(c->srv, st.leader_id, addr);
    if (addr[0] == '\0') {
        m.type = MSG_NO_LEADER;
    } else {
        m.type = MSG_REDIRECT;
        m.u.redirect.leader_id = st.leader_id;
        m.u.redirect.client_addr.p = addr;
        m.u.redirect.client_addr.n = (uint16_t)strlen(addr);
    }
    conn_send(c, &m);
}

void reply_not_applied(struct conn *c, uint64_t req_id, int status)
{
    if (status == BATON_ENOTLEADER)
        reply_not_leader(c, req_id);
    else
        conn_send_error(c, req_id, status, "could not commit: %s", baton_strerror(status));
}

void reply_result(struct server *srv, const struct pending *p, const struct cmd_outcome *o)
{
    struct conn *c = p->conn_id ? conn_get(srv, p->conn_id) : NULL;
    struct msg m = {.type = MSG_RESULT, .req_id = p->req_id};

    if (c == NULL) return;
    if (o->status != 0) {
        reply_not_applied(c, p->req_id, o->status);
        return;
    }
    m.u.result.status = o->r->status;
    m.u.result.kind = o->r->kind;
    m.u.result.value = o->r->value;
    conn_send(c, &m);
}

void reply_lock_state(struct conn *c, uint64_t req_id, const char *name, size_t len)
{
    struct msg r = {.type = MSG_LOCK_STATE_R, .req_id = req_id};
    struct lock_state_mem mem;
    int rv = store_lock_state(c->srv->store, name, len, LOCK_STATE_BUDGET, &r.u.lock_state, &mem);

    if (rv != 0) {
        conn_send_error(c, req_id, rv, "lock-state: %s", baton_strerror(rv));
        return;
    }
    conn_send(c, &r);
    store_lock_state_free(&mem);
}
