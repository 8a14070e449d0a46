/*
 * dispatch.c -- what batond does with one decoded client request.
 *
 * HELLO and STATUS are answered by any node. Everything else needs the
 * ready leader; other nodes answer REDIRECT (or NO_LEADER while no leader is
 * known). State-changing requests become commands in this loop turn's batch
 * and are answered once their entry is applied (batch.c).
 */
#include <string.h>

#include "client/baton_defs.h"
#include "server/log.h"
#include "server/server.h"

/* Answer a request this node cannot serve because it is not the leader.
 * The leader's client address comes from the replicated members table, else
 * from --cluster (members.c); a leader whose address is unknown gets
 * NO_LEADER, and the client tries its other endpoints. */
void dispatch_not_leader(struct conn *c, uint64_t req_id)
{
    struct node_status st;
    char addr[BATON_MAX_ADDR + 1] = "";
    struct msg m = {.req_id = req_id};

    node_get_status(c->srv->node, &st);
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

static void hello(struct conn *c, const struct msg *m)
{
    struct msg r = {.type = MSG_HELLO_OK, .req_id = m->req_id};

    if (m->u.hello.version != BATON_PROTO_VERSION) {
        conn_send_error(c, m->req_id, BATON_EVERSION,
                        "protocol version %u not supported; this server speaks %u",
                        m->u.hello.version, BATON_PROTO_VERSION);
        conn_close(c);
        return;
    }
    c->hello = true;
    r.u.hello_ok.version = BATON_PROTO_VERSION;
    r.u.hello_ok.node_id = c->srv->cfg.node.id;
    conn_send(c, &r);
}

/* Fill the parts of a pending reply record that every command shares. */
static void pending_for(struct pending *p, struct conn *c, const struct msg *m, const struct cmd *cmd)
{
    memset(p, 0, offsetof(struct pending, name));
    p->conn_id = c->id;
    p->req_id = m->req_id;
    p->cmd_type = cmd->type;
    p->session = cmd->session;
    p->seq = cmd->seq;
    p->wait_ms = cmd->wait_ms;
    p->ttl_ms = cmd->ttl_ms;
    p->name_len = cmd->name_len;
    if (cmd->name_len) memcpy(p->name, cmd->name, cmd->name_len);
}

static uint32_t clamp_ttl(const struct srv_config *cfg, uint32_t ttl)
{
    if (ttl == 0) return cfg->default_ttl_ms;
    if (ttl < cfg->min_ttl_ms) return cfg->min_ttl_ms;
    if (ttl > cfg->max_ttl_ms) return cfg->max_ttl_ms;
    return ttl;
}

/* The lock-delay a hold gets: the client's choice within the server's
 * bound, or the server's default. In the command, 0 means none. */
static int32_t effective_lock_delay(const struct srv_config *cfg, int32_t asked)
{
    if (asked == BATON_LOCK_DELAY_DEFAULT) return (int32_t)cfg->lock_delay_ms;
    if (asked < 0) return 0;
    if ((uint32_t)asked > cfg->max_lock_delay_ms) return (int32_t)cfg->max_lock_delay_ms;
    return asked;
}

/* Turn a state-changing request into a command for this turn's batch. */
static void command(struct conn *c, const struct msg *m)
{
    struct cmd cmd = {0};
    struct pending p;

    switch (m->type) {
    case MSG_OPEN_SESSION:
        cmd.type = CMD_OPEN_SESSION;
        cmd.ttl_ms = clamp_ttl(&c->srv->cfg, m->u.open_session.ttl_ms);
        cmd.name = m->u.open_session.client_name.p;
        cmd.name_len = m->u.open_session.client_name.n;
        break;
    case MSG_ACQUIRE:
        if (m->u.acquire.wait_ms < BATON_WAIT_FOREVER) {
            conn_send_error(c, m->req_id, BATON_EINVAL, "wait_ms must be -1, 0 or positive");
            return;
        }
        cmd.type = CMD_ACQUIRE;
        cmd.session = m->u.acquire.session;
        cmd.seq = m->u.acquire.seq;
        cmd.ack_below = m->u.acquire.ack_below;
        cmd.wait_ms = m->u.acquire.wait_ms;
        cmd.lock_delay_ms = effective_lock_delay(&c->srv->cfg, m->u.acquire.lock_delay_ms);
        cmd.name = m->u.acquire.lock.p;
        cmd.name_len = m->u.acquire.lock.n;
        break;
    case MSG_RELEASE:
        cmd.type = CMD_RELEASE;
        cmd.session = m->u.release.session;
        cmd.seq = m->u.release.seq;
        cmd.ack_below = m->u.release.ack_below;
        cmd.fence = m->u.release.fence;
        cmd.name = m->u.release.lock.p;
        cmd.name_len = m->u.release.lock.n;
        break;
    case MSG_CANCEL:
        cmd.type = CMD_CANCEL;
        cmd.session = m->u.cancel.session;
        cmd.seq = m->u.cancel.seq;
        cmd.ack_below = m->u.cancel.ack_below;
        cmd.waiter = m->u.cancel.waiter;
        cmd.name = m->u.cancel.lock.p;
        cmd.name_len = m->u.cancel.lock.n;
        break;
    case MSG_CLOSE_SESSION:
        cmd.type = CMD_CLOSE_SESSION;
        cmd.session = m->u.close_session.session;
        cmd.seq = m->u.close_session.seq;
        cmd.ack_below = m->u.close_session.ack_below;
        break;
    default:
        return;
    }
    if (cmd.type != CMD_OPEN_SESSION && (cmd.session == 0 || cmd.seq == 0)) {
        conn_send_error(c, m->req_id, BATON_EINVAL, "%s needs a session and a non-zero seq",
                        msg_type_name(m->type));
        return;
    }
    if (cmd.session && !liveness_touch(c->srv, cmd.session)) {
        struct msg r = {.type = MSG_RESULT, .req_id = m->req_id};
        r.u.result.status = BATON_ESESSION;
        conn_send(c, &r);
        return;
    }
    if (cmd.session) push_attach(c->srv, cmd.session, c->id);
    pending_for(&p, c, m, &cmd);
    batch_add(c->srv, &cmd, &p);
}

/* A keepalive is not a log entry: the leader renews the lease in memory. */
static void keepalive(struct conn *c, const struct msg *m)
{
    keepalive_received(c, m->req_id, m->u.keepalive.session);
}

void dispatch(struct conn *c, const struct msg *m)
{
    if (m->type == MSG_HELLO) {
        hello(c, m);
        return;
    }
    if (!c->hello) {
        conn_send_error(c, m->req_id, BATON_EPROTO, "the first message must be HELLO, not %s",
                        msg_type_name(m->type));
        conn_close(c);
        return;
    }
    if (m->type == MSG_STATUS) {
        admin_status(c, m);
        return;
    }
    switch (m->type) {
    case MSG_OPEN_SESSION:
    case MSG_ACQUIRE:
    case MSG_RELEASE:
    case MSG_CANCEL:
    case MSG_CLOSE_SESSION:
    case MSG_KEEPALIVE:
    case MSG_LOCK_INFO:
    case MSG_LIST_LOCKS:
    case MSG_LIST_SESSIONS:
    case MSG_FORCE_RELEASE:
    case MSG_EXPIRE_SESSION:
    case MSG_TRANSFER:
    case MSG_WATCH:
    case MSG_SNAPSHOT:
    case MSG_MEMBERS:
    case MSG_MEMBER_REMOVE:
    case MSG_MEMBER_ADD:
        break;
    default:
        conn_send_error(c, m->req_id, BATON_EPROTO, "%s is not a request", msg_type_name(m->type));
        return;
    }
    if (!c->srv->ready) {
        dispatch_not_leader(c, m->req_id);
        return;
    }
    switch (m->type) {
    case MSG_KEEPALIVE:
        keepalive(c, m);
        break;
    case MSG_LOCK_INFO:
        admin_lock_info(c, m);
        break;
    case MSG_LIST_LOCKS:
        admin_list_locks(c, m);
        break;
    case MSG_LIST_SESSIONS:
        admin_list_sessions(c, m);
        break;
    case MSG_FORCE_RELEASE:
        admin_force_release(c, m);
        break;
    case MSG_EXPIRE_SESSION:
        admin_expire_session(c, m);
        break;
    case MSG_TRANSFER:
        admin_transfer(c, m);
        break;
    case MSG_WATCH:
        watch_request(c, m);
        break;
    case MSG_SNAPSHOT:
        admin_snapshot(c, m);
        break;
    case MSG_MEMBERS:
        admin_members(c, m);
        break;
    case MSG_MEMBER_REMOVE:
        admin_member_remove(c, m);
        break;
    case MSG_MEMBER_ADD:
        admin_member_add(c, m);
        break;
    default:
        command(c, m);
    }
}
