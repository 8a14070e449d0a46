/*
 * admin.c -- the read-only requests: STATUS (any node) and LOCK_INFO /
 * LIST_LOCKS / LIST_SESSIONS (the leader, from its applied state).
 */
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "server/log.h"
#include "server/server_int.h"

/* STATUS lists the members of the current raft configuration with their
 * client addresses (members.c), so that `batonctl status` follows members
 * added and removed at run time. */
void admin_status(struct conn *c, const struct msg *m)
{
    const struct node_config *cfg = &c->srv->cfg.node;
    struct member_view views[BATON_MAX_MEMBERS];
    struct msg_member members[BATON_MAX_MEMBERS];
    struct msg r = {.type = MSG_STATUS_R, .req_id = m->req_id};
    struct node_status st;
    uint32_t n;

    c->srv->nio->get_status(c->srv->node, &st);
    r.u.status_r.node_id = cfg->id;
    r.u.status_r.role = (uint8_t)st.role;
    r.u.status_r.leader_id = st.leader_id;
    r.u.status_r.term = st.term;
    r.u.status_r.last_index = st.last_index;
    r.u.status_r.commit_index = st.commit_index;
    /* The state machine's index (raft/fsm.h, fsm_state_index: raft's
     * applied index less the entries a follower holds back until its
     * commit is sure), unless the store is ahead: a restarted node replays
     * entries its store already has. The digest below describes the store,
     * so two nodes at the same index must report the same digest. */
    r.u.status_r.applied_index = st.applied_index;
    if (store_applied_index(c->srv->store) > st.applied_index)
        r.u.status_r.applied_index = store_applied_index(c->srv->store);
    /* The store runs on this (the loop) thread, like raft: the digest is
     * read at the same moment as the indexes above. */
    r.u.status_r.state_digest = store_digest(c->srv->store);
    r.u.status_r.auth_digest = c->srv->have_auth ? c->srv->auth.digest : 0;
    store_last_check(c->srv->store, &r.u.status_r.check_index, &r.u.status_r.content_hash);
    _Static_assert((int)NODE_FAULT_APPLY == (int)FAULT_APPLY &&
                       (int)NODE_FAULT_LOG == (int)FAULT_LOG &&
                       (int)NODE_FAULT_RAFT == (int)FAULT_RAFT,
                   "raft/node.h's fault kinds are STATUS_R's (proto/msg.h) one for one");
    r.u.status_r.fault_kind = (uint8_t)st.fault_kind;
    r.u.status_r.fault = st.fault;
    r.u.status_r.fault_index = st.fault_index;
    n = member_views(c->srv, views, BATON_MAX_MEMBERS);
    r.u.status_r.n_members = n;
    r.u.status_r.members = n ? members : NULL;
    for (uint32_t i = 0; i < n; i++) {
        members[i].id = views[i].id;
        members[i].raft_addr.p = views[i].raft_addr;
        members[i].raft_addr.n = (uint16_t)strlen(views[i].raft_addr);
        members[i].client_addr.p = views[i].client_addr;
        members[i].client_addr.n = (uint16_t)strlen(views[i].client_addr);
    }
    conn_send(c, &r);
}

void admin_lock_info(struct conn *c, const struct msg *m)
{
    struct msg r = {.type = MSG_LOCK_INFO_R, .req_id = m->req_id};
    int rv;

    rv = store_lock_info(c->srv->store, m->u.lock_info.lock.p, m->u.lock_info.lock.n,
                         BATON_MAX_LIST, &r.u.lock_info_r);
    if (rv != 0) {
        conn_send_error(c, m->req_id, rv, "lock-info: %s", baton_strerror(rv));
        return;
    }
    r.u.lock_info_r.lock = m->u.lock_info.lock;
    conn_send(c, &r);
    store_lock_info_free(&r.u.lock_info_r);
}

/* Collects LIST_LOCKS items; names are copied because the store lends them
 * only for the duration of the callback. */
struct lister {
    struct msg_lock_summary *items;
    char *names;
    uint32_t n;
};

static int list_one(void *data, const char *name, size_t name_len,
                    const struct msg_lock_summary *sum)
{
    struct lister *l = data;
    struct msg_lock_summary *it = &l->items[l->n];
    char *copy = l->names + (size_t)l->n * BATON_MAX_NAME;

    memcpy(copy, name, name_len);
    *it = *sum;
    it->name.p = copy;
    it->name.n = (uint16_t)name_len;
    l->n++;
    return 0;
}

void admin_list_locks(struct conn *c, const struct msg *m)
{
    struct msg r = {.type = MSG_LIST_LOCKS_R, .req_id = m->req_id};
    uint32_t limit = m->u.list_locks.limit;
    struct lister l = {0};
    int more = 0, rv;

    /* Names can be long: keep the reply within one frame. */
    const uint32_t frame_cap = (BATON_MAX_FRAME - 64) / (BATON_MAX_NAME + 32);
    if (limit == 0 || limit > BATON_MAX_LIST) limit = BATON_MAX_LIST;
    if (limit > frame_cap) limit = frame_cap;
    l.items = xmalloc(sizeof *l.items * limit);
    l.names = xmalloc((size_t)BATON_MAX_NAME * limit);
    rv = store_list_locks(c->srv->store, m->u.list_locks.prefix.p, m->u.list_locks.prefix.n, limit,
                          list_one, &l, &more);
    if (rv != 0) {
        conn_send_error(c, m->req_id, rv, "list-locks: %s", baton_strerror(rv));
        goto out;
    }
    r.u.list_locks_r.n = l.n;
    r.u.list_locks_r.items = l.items;
    r.u.list_locks_r.more = (uint8_t)(more != 0);
    conn_send(c, &r);
out:
    free(l.items);
    free(l.names);
}

/* Collects LIST_SESSIONS items; client names and owners are copied
 * because the store lends them only for the duration of the callback. */
struct sess_lister {
    struct msg_session_summary *items;
    char (*names)[BATON_MAX_CLIENT_NAME];
    char (*owners)[BATON_MAX_PRINCIPAL];
    uint32_t n, max;
    const char *only;       /* list only this owner's sessions; NULL: all */
    uint64_t last;          /* the last session the store gave */
};

static int list_session(void *data, uint64_t session, uint32_t ttl_ms, uint64_t created,
                        const char *name, size_t name_len, const char *owner, size_t owner_len,
                        uint32_t n_holds, uint32_t n_waits)
{
    struct sess_lister *l = data;
    struct msg_session_summary *it = &l->items[l->n];

    l->last = session;
    if (l->n == l->max) return 0;
    if (l->only != NULL && (owner_len != strlen(l->only) || memcmp(owner, l->only, owner_len) != 0))
        return 0;
    if (name_len > BATON_MAX_CLIENT_NAME) name_len = BATON_MAX_CLIENT_NAME;
    if (name_len) memcpy(l->names[l->n], name, name_len);
    if (owner_len > BATON_MAX_PRINCIPAL) owner_len = BATON_MAX_PRINCIPAL;
    if (owner_len) memcpy(l->owners[l->n], owner, owner_len);
    it->id = session;
    it->ttl_ms = ttl_ms;
    it->created_index = created;
    it->client_name.p = l->names[l->n];
    it->client_name.n = (uint16_t)name_len;
    it->owner.p = l->owners[l->n];
    it->owner.n = (uint16_t)owner_len;
    it->n_holds = n_holds;
    it->n_waits = n_waits;
    l->n++;
    return 0;
}

/*
 * A lock-role principal's page: its own sessions only, found in the
 * leader's leases (which know each session's owner) rather than by a walk
 * of every session in the store, so that its cost follows its own
 * sessions, not everyone's. *more: its sessions go on beyond the page.
 */
static int list_own_sessions(struct conn *c, struct sess_lister *l, uint64_t after,
                             uint32_t limit, int *more)
{
    uint64_t *ids = NULL;
    size_t n = lease_sessions_of(&c->srv->leases, c->who->key, after, &ids), done = 0;
    size_t ask = n < limit ? n : limit;
    int rv = 0;

    if (ask > 0) rv = store_session_summaries(c->srv->store, ids, ask, list_session, l, &done);
    *more = n > done;
    free(ids);
    return rv;
}

void admin_list_sessions(struct conn *c, const struct msg *m)
{
    struct msg r = {.type = MSG_SESSIONS_R, .req_id = m->req_id};
    uint32_t limit = m->u.list_sessions.limit;
    struct sess_lister l = {0};
    int more = 0, rv;

    /* BATON_MAX_LIST items of at most 160 bytes fit one frame easily. */
    if (limit == 0 || limit > BATON_MAX_LIST) limit = BATON_MAX_LIST;
    l.items = xmalloc(sizeof *l.items * limit);
    l.names = xmalloc(sizeof *l.names * limit);
    l.owners = xmalloc(sizeof *l.owners * limit);
    l.max = limit;
    /* A client-role principal sees only its own sessions (list_own_sessions);
     * the last item is the cursor of the next request either way. */
    l.only = c->who->role == MSG_ROLE_LOCK ? c->who->name : NULL;
    l.last = m->u.list_sessions.after;
    if (l.only != NULL)
        rv = list_own_sessions(c, &l, l.last, limit, &more);
    else
        rv = store_list_sessions(c->srv->store, l.last, limit, list_session, &l, &more);
    if (rv != 0) {
        conn_send_error(c, m->req_id, rv, "sessions: %s", baton_strerror(rv));
        goto out;
    }
    r.u.sessions_r.n = l.n;
    r.u.sessions_r.items = l.n ? l.items : NULL;
    r.u.sessions_r.more = (uint8_t)(more != 0);
    conn_send(c, &r);
out:
    free(l.items);
    free(l.names);
    free(l.owners);
}
