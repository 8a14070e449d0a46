/*
 * access_rule.c -- the decision of access.c (docs/security.md,
 * "Principals and roles"), from the columns of proto/msg_table.h:
 *
 *  - role: the principal's role must include the request's;
 *  - session: the session a request acts on must have been opened by the
 *    same principal (when the session is known);
 *  - locks: a lock it names must fall within the principal's prefixes,
 *    every name of a multi-lock, and a LIST_LOCKS prefix must be covered
 *    by one of them. An admin and a principal without prefixes pass; a
 *    name given back (RELEASE, CANCEL) needs only the session's ownership.
 */
#include "server/access_rule.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "proto/addr.h"

/* Refuse: the lock name s is outside p's prefixes. */
static bool refuse_lock(const struct pstr *s, char *why, size_t size)
{
    snprintf(why, size, "lock '%.*s' is outside its prefixes", (int)s->n, s->p);
    return false;
}

/* Do p's prefixes allow what scope s names? */
static bool prefixes_allow(const struct principal *p, const struct msg_scope *s, char *why,
                           size_t size)
{
    switch (s->locks) {
    case MSG_LOCKS_NONE:
    case MSG_LOCKS_GIVE_BACK: return true;
    case MSG_LOCKS_NAMES:
        if (!auth_may_use(p, s->name->p, s->name->n)) return refuse_lock(s->name, why, size);
        for (uint32_t i = 0; i < s->n_more; i++)
            if (!auth_may_use(p, s->more[i].name.p, s->more[i].name.n))
                return refuse_lock(&s->more[i].name, why, size);
        return true;
    case MSG_LOCKS_PREFIX:
        if (auth_covers_prefix(p, s->name->p, s->name->n)) return true;
        snprintf(why, size, "list only within its prefixes (give one of them as the prefix)");
        return false;
    default:
        snprintf(why, size, "its lock names cannot be checked");
        return false;
    }
}

bool access_decide(const struct principal *p, const struct msg *m, access_owner_fn *owner_of,
                   void *ctx, char *why, size_t size)
{
    const struct msg_info *info = msg_info(m->type);
    struct msg_scope s;
    uint64_t owner;

    if (info == NULL || info->dir != MSG_C2S || !msg_scope(m, &s)) {
        snprintf(why, size, "it is not a request");
        return false;
    }
    if (p->role < info->role) {
        snprintf(why, size, "it needs role %s, not %s", auth_role_name(info->role),
                 auth_role_name(p->role));
        return false;
    }
    if (s.has_session && s.session != 0 && owner_of(ctx, s.session, &owner) &&
        owner != p->key) {
        snprintf(why, size, "the session belongs to another principal");
        return false;
    }
    if (p->role == MSG_ROLE_ADMIN || p->n_prefixes == 0) return true;
    return prefixes_allow(p, &s, why, size);
}

bool access_addr_loopback(const char *addr)
{
    struct proto_addr a;
    struct sockaddr_storage ss;

    if (proto_addr_parse(addr, strlen(addr), &a) != 0) return true;
    if (proto_addr_sockaddr(&a, &ss) == 0) return strcmp(a.host, "localhost") == 0; /* a name */
    return proto_sockaddr_is_loopback((const struct sockaddr *)&ss);
}

bool access_raft_exposed(bool client_secured, bool peer_tls, const char *raft_addr)
{
    return client_secured && !peer_tls && !access_addr_loopback(raft_addr);
}

bool access_may_see(const struct principal *p, const char *name, size_t n)
{
    return p != NULL && (p->role == MSG_ROLE_ADMIN || auth_may_use(p, name, n));
}
