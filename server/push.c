/*
 * push.c -- deliver the applied effects that concern a client: GRANTED,
 * WAIT_FAILED and LOST pushes, and SESSION_EXPIRED, to the connection each
 * session is attached to (the one its last request came on).
 *
 * Every node applies every entry, but only the ready leader pushes.
 * server.c queues the effects during apply and routes them here in the
 * loop turn's check handler, after the replies of that turn: so a waiter's
 * QUEUED reply always reaches the client before the push that ends its
 * wait.
 *
 * This state lives in memory on the leader only. A new leader starts empty:
 * sessions attach again as their clients send requests (the client library
 * sends a keepalive first thing after reconnecting).
 */
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/server_int.h"

void push_attach(struct server *srv, uint64_t session, uint64_t conn_id)
{
    struct srv_session *s;

    if (!srv->ready) return;
    s = u64map_get(&srv->sessions, session);
    if (s == NULL) {
        s = xcalloc(1, sizeof *s);
        s->id = session;
        xu64map_put(&srv->sessions, session, s);
    }
    s->conn_id = conn_id;
}

/* The connection a session's pushes go to, or NULL. */
static struct conn *session_conn(struct server *srv, uint64_t session)
{
    struct srv_session *s = u64map_get(&srv->sessions, session);
    return s != NULL && s->conn_id ? conn_get(srv, s->conn_id) : NULL;
}

/* The message of each effect that is pushed to a client. */
static const uint16_t fx_msg[] = {
    [FX_GRANT] = MSG_GRANTED,
    [FX_WAIT_FAILED] = MSG_WAIT_FAILED,
    [FX_LOST] = MSG_LOST,
};

/* A session is gone: forget where it was attached; an expiry (status
 * not 0) is pushed as SESSION_EXPIRED, a close was answered already. */
static void session_gone(struct server *srv, const struct effect *e)
{
    struct conn *c = e->status != 0 ? session_conn(srv, e->session) : NULL;
    struct msg m = {.type = MSG_SESSION_EXPIRED};

    free(u64map_del(&srv->sessions, e->session));
    if (c == NULL) return;
    m.u.session_expired.session = e->session;
    metrics_inc_label(M_PUSHES, PUSH_SESSION_EXPIRED);
    conn_send(c, &m);
}

void push_effect(struct server *srv, const struct effect *e)
{
    struct msg m = {.req_id = 0};
    struct conn *c;

    if (e->type == FX_SESSION_GONE) {
        session_gone(srv, e);
        return;
    }
    if (e->type >= sizeof fx_msg / sizeof fx_msg[0] || fx_msg[e->type] == 0) return;
    if (e->type == FX_LOST)
        log_info("session %llu lost lock '%.*s' (fence %llu): %s",
                 (unsigned long long)e->session, (int)e->name_len, e->name,
                 (unsigned long long)e->fence, baton_strerror(e->status));
    c = session_conn(srv, e->session);
    if (c == NULL) return;
    m.type = fx_msg[e->type];
    metrics_inc_label(M_PUSHES, m.type == MSG_GRANTED       ? PUSH_GRANTED
                                : m.type == MSG_WAIT_FAILED ? PUSH_WAIT_FAILED
                                                            : PUSH_LOST);
    m.u.push = (struct msg_push){
        .session = e->session,
        .waiter = e->waiter,
        .fence = e->fence,
        .status = e->status,
        .lock = {e->name, e->name_len},
    };
    conn_send(c, &m);
}

void push_clear(struct server *srv)
{
    for (size_t i = 0; i < srv->sessions.cap; i++)
        if (srv->sessions.slots[i].key) free(srv->sessions.slots[i].val);
    u64map_free(&srv->sessions);
}
