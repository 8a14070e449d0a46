/*
 * access.c -- who a connection is, and what it may ask (docs/security.md,
 * "Principals and roles").
 *
 * HELLO makes a connection's principal: the one whose token it carries,
 * else the one its client certificate names, else -- on a node without
 * --auth-file -- the anonymous admin. Then every request is checked
 * against that principal before its handler runs, by access_rule.c from
 * proto/msg_table.h's role, session and locks columns:
 *
 *  - the role its message type needs;
 *  - the session it acts on (ACQUIRE, ACQUIRE_MANY, RELEASE, CANCEL,
 *    CLOSE_SESSION, KEEPALIVE, LOST_HOLDS, and so the ack_below they
 *    carry) must have been opened by the same principal: the owner is
 *    replicated with the session, so a new leader knows it too;
 *  - a lock it acquires (every name of a multi-lock), or reads as a
 *    non-admin, must fall within the principal's prefixes, and a
 *    LIST_LOCKS prefix must be covered by one of them. RELEASE and CANCEL
 *    need only the ownership of the session: a session may always give
 *    back what it holds, even after its prefixes were narrowed.
 *
 * A refusal is ERROR(BATON_EPERM) naming what was refused, for that
 * request only; the connection stays open. The leader decides requests
 * only the leader serves (followers redirect them first), each node the
 * others, each against its own auth file.
 */
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/addr.h"
#include "server/access_rule.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/server_int.h"

int access_init(struct server *srv)
{
    char err[BATON_ERRMSG_SIZE];

    if (srv->cfg.auth_file == NULL) return 0;
    if (auth_load(srv->cfg.auth_file, &srv->auth, err, sizeof err) != 0) {
        log_error("%s", err);
        return BATON_EINVAL;
    }
    srv->have_auth = true;
    log_info("auth file %s: %zu principal(s), digest %016llx", srv->cfg.auth_file, srv->auth.n,
             (unsigned long long)srv->auth.digest);
    return 0;
}

void access_warn_if_open(struct server *srv, const char *client_addr, const char *raft_addr)
{
    if (access_raft_exposed(srv->client_tls != NULL || srv->have_auth, srv->cfg.peer_cert != NULL,
                            raft_addr))
        log_warn("raft on %s, not a loopback address, without mutual TLS (--peer-cert): the "
                 "clients' port is secured, but whoever reaches the raft port can pose as a "
                 "node and rewrite every lock (docs/security.md, \"Between nodes: mutual TLS on the raft port\")",
                 raft_addr);
    if (srv->client_tls != NULL) return;
    if (access_addr_loopback(client_addr)) return;
    if (srv->have_auth) {
        log_warn("clients on %s, not a loopback address, without TLS: their tokens cross the "
                 "network in clear (add --tls-cert and --tls-key)",
                 client_addr);
        return;
    }
    log_warn("clients on %s, not a loopback address, with neither TLS (--tls-cert) nor "
             "authentication (--auth-file): anyone who reaches this port can take or break "
             "every lock (README, \"Securing a cluster\")",
             client_addr);
}

void access_free(struct server *srv)
{
    auth_free(&srv->auth);
    srv->have_auth = false;
}

/* Point c at its principal in the table `a`, or close it if `a` no
 * longer has it (SIGHUP removed or changed it). */
static void rebind(struct conn *c, const struct auth *a)
{
    const struct principal *old = c->who, *p;

    if (old == NULL || old == &auth_anonymous) return;
    p = auth_by_name(a, old->name);
    if (p != NULL && p->by_cert == old->by_cert &&
        (p->by_cert || memcmp(p->token_hash, old->token_hash, sizeof p->token_hash) == 0)) {
        c->who = p;
        return;
    }
    log_info("conn %llu (%s): principal '%s' is gone from the auth file; closing",
             (unsigned long long)c->id, c->peer, old->name);
    c->who = NULL;
    conn_send_error(c, 0, BATON_EAUTH, "principal '%s' is no longer in the auth file",
                    old->name);
    conn_close(c);
}

void access_reload(struct server *srv)
{
    struct auth fresh, old;
    char err[BATON_ERRMSG_SIZE];

    if (!srv->have_auth) {
        log_info("SIGHUP: no --auth-file to re-read");
        return;
    }
    if (auth_load(srv->cfg.auth_file, &fresh, err, sizeof err) != 0) {
        log_error("SIGHUP: %s; keeping the auth file loaded before (digest %016llx)", err,
                  (unsigned long long)srv->auth.digest);
        return;
    }
    old = srv->auth;
    srv->auth = fresh;
    for (size_t i = 0; i < srv->conns.cap; i++)
        if (srv->conns.slots[i].key) rebind(srv->conns.slots[i].val, &srv->auth);
    auth_free(&old);
    log_info("SIGHUP: auth file %s re-read: %zu principal(s), digest %016llx",
             srv->cfg.auth_file, srv->auth.n, (unsigned long long)srv->auth.digest);
}

/* Refuse HELLO with BATON_EAUTH and close. */
static bool refuse_hello(struct conn *c, uint64_t req_id, const char *why, const char *what)
{
    log_info("conn %llu (%s): HELLO refused: %s%s", (unsigned long long)c->id, c->peer, why,
             what);
    metrics_inc_label(M_REFUSALS, REF_AUTH);
    conn_send_error(c, req_id, BATON_EAUTH, "%s%s", why, what);
    conn_close(c);
    return false;
}

bool access_hello(struct conn *c, const struct msg *m)
{
    const struct msg_hello *h = &m->u.hello;
    const char *cn = conn_tls_peer_cn(c);
    const struct principal *p;

    if (!c->srv->have_auth) {
        c->who = &auth_anonymous;
        return true;
    }
    if (h->token.n > 0) {
        p = auth_by_token(&c->srv->auth, h->token.p, h->token.n);
        if (p == NULL) return refuse_hello(c, m->req_id, "unknown token", "");
    } else if (cn[0] != '\0') {
        p = auth_by_cert(&c->srv->auth, cn);
        if (p == NULL)
            return refuse_hello(c, m->req_id, "no principal for the client certificate CN ", cn);
    } else {
        return refuse_hello(c, m->req_id,
                            "this node requires authentication: a token (baton_opts.token, "
                            "batonctl --token) or a client certificate",
                            "");
    }
    c->who = p;
    return true;
}

/* Refuse request m of c with BATON_EPERM, saying why. */
static bool refuse(struct conn *c, const struct msg *m, const char *why)
{
    metrics_inc_label(M_REFUSALS, REF_PERM);
    log_debug("conn %llu (%s): %s refused for '%s': %s", (unsigned long long)c->id, c->peer,
              msg_type_name(m->type), c->who->name, why);
    conn_send_error(c, m->req_id, BATON_EPERM, "%s refused for principal '%s': %s",
                    msg_type_name(m->type), c->who->name, why);
    return false;
}

/* access_owner_fn over the sessions this node knows. */
static bool session_owner(void *srv, uint64_t session, uint64_t *owner)
{
    return liveness_owner(srv, session, owner);
}

bool access_allowed(struct conn *c, const struct msg *m)
{
    char why[200];

    if (access_decide(c->who, m, session_owner, c->srv, why, sizeof why)) return true;
    return refuse(c, m, why);
}

int32_t access_lock_delay_cap(const struct conn *c, int32_t delay)
{
    const struct principal *p = c->who;

    if (p->max_lock_delay_ms >= 0 && delay > p->max_lock_delay_ms)
        return (int32_t)p->max_lock_delay_ms;
    return delay;
}
