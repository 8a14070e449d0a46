/*
 * watch.c -- WATCH: connections subscribed to changes of a lock, and the
 * WATCH_EVENT pushes that tell them (ready leader only, on the loop thread).
 *
 * The table maps a hash of the lock name to a list of watchers (one per
 * connection and name; names that share a hash share the list and are told
 * apart by comparing them). Applied entries yield FX_LOCK_CHANGED per
 * changed lock; server.c routes each to watch_changed, which reads the
 * lock's state once and pushes it to every watcher of that name. A lock that
 * changed in several entries of one loop turn is read and pushed once, since
 * the state read is already the latest.
 *
 * Watchers are dropped when their connection closes (watch_conn_gone),
 * all at once when the node stops leading (watch_clear), which also closes
 * every client connection, and when SIGHUP narrowed their principal's
 * prefixes so that it may no longer read the lock (watch_recheck): the
 * client gets ERROR(BATON_EPERM) with the WATCH's req_id, which ends its
 * stream.
 */
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "server/access_rule.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/server_int.h"

struct watcher {
    struct watcher *next;
    uint64_t conn_id;
    uint64_t req_id;        /* of the WATCH: the client's stream */
    uint64_t seq;           /* of the last event sent */
    uint64_t turn;          /* srv->watch_turn of the last push */
    uint16_t name_len;
    char name[BATON_MAX_NAME];
};

/* The list head stored in srv->watches under the name's hash. */
struct watch_list {
    struct watcher *first;
};

static int same_name(const struct watcher *w, const char *name, size_t len)
{
    return w->name_len == len && memcmp(w->name, name, len) == 0;
}

/* Send w its next event: the lock's state in *info (whose waiters the
 * caller owns), with req_id (0 for a push). */
static void send_event(struct conn *c, struct watcher *w, const struct msg_lock_info_r *info,
                       uint64_t req_id)
{
    struct msg m = {.type = MSG_WATCH_EVENT, .req_id = req_id};

    m.u.watch_event.seq = ++w->seq;
    m.u.watch_event.info = *info;
    m.u.watch_event.info.lock.p = w->name;
    m.u.watch_event.info.lock.n = w->name_len;
    if (req_id == 0) metrics_inc_label(M_PUSHES, PUSH_WATCH_EVENT);
    conn_send(c, &m);
}

void watch_request(struct conn *c, const struct msg *m)
{
    struct server *srv = c->srv;
    const struct pstr *name = &m->u.watch.lock;
    uint64_t key = u64map_key(name->p, name->n);
    struct watch_list *l = u64map_get(&srv->watches, key);
    struct watcher *w = NULL;
    struct msg_lock_info_r info;
    int rv;

    for (struct watcher *it = l ? l->first : NULL; it; it = it->next)
        if (it->conn_id == c->id && same_name(it, name->p, name->n)) w = it;
    if (w == NULL) {
        if (c->n_watches >= WATCH_MAX_PER_CONN || srv->n_watches >= WATCH_MAX_TOTAL) {
            conn_send_error(c, m->req_id, BATON_ELIMIT, "watch: %s",
                            c->n_watches >= WATCH_MAX_PER_CONN
                                ? "too many watches on this connection"
                                : "too many watches on this server");
            return;
        }
        if (l == NULL) {
            l = xcalloc(1, sizeof *l);
            xu64map_put(&srv->watches, key, l);
        }
        w = xcalloc(1, sizeof *w);
        w->conn_id = c->id;
        w->name_len = name->n;
        memcpy(w->name, name->p, name->n);
        w->next = l->first;
        l->first = w;
        c->n_watches++;
        srv->n_watches++;
    }
    w->seq = 0; /* a new WATCH of the same lock starts over */
    w->req_id = m->req_id;
    rv = store_lock_info(srv->store, name->p, name->n, BATON_MAX_LIST, &info);
    if (rv != 0) {
        conn_send_error(c, m->req_id, rv, "watch: %s", baton_strerror(rv));
        return;
    }
    send_event(c, w, &info, m->req_id);
    store_lock_info_free(&info);
}

void watch_changed(struct server *srv, const char *name, size_t len)
{
    struct watch_list *l = u64map_get(&srv->watches, u64map_key(name, len));
    struct msg_lock_info_r info;
    int have = 0, rv;

    if (l == NULL) return;
    for (struct watcher *w = l->first; w; w = w->next) {
        struct conn *c;
        /* Pushed already in this turn: the state read then is the latest. */
        if (!same_name(w, name, len) || w->turn == srv->watch_turn) continue;
        if ((c = conn_get(srv, w->conn_id)) == NULL) continue;
        if (!have) {
            rv = store_lock_info(srv->store, name, len, BATON_MAX_LIST, &info);
            if (rv != 0) {
                log_error("watch: cannot read lock '%.*s': %s", (int)len, name,
                          baton_strerror(rv));
                return;
            }
            have = 1;
        }
        send_event(c, w, &info, 0);
        w->turn = srv->watch_turn;
    }
    if (have) store_lock_info_free(&info);
}

/* Drop w (unlinked by the caller) of c, or of a connection gone (c NULL). */
static void watcher_free(struct server *srv, struct conn *c, struct watcher *w)
{
    if (c != NULL) c->n_watches--;
    srv->n_watches--;
    free(w);
}

/* Should w end now: its connection is open and its principal may no
 * longer read the lock? Then the client is told. */
static bool revoked(struct server *srv, struct watcher *w)
{
    struct conn *c = conn_get(srv, w->conn_id);

    if (c == NULL || access_may_see(c->who, w->name, w->name_len)) return false;
    log_info("conn %llu (%s): watch of '%.*s' ended: principal '%s' may no longer read it",
             (unsigned long long)c->id, c->peer, (int)w->name_len, w->name,
             c->who != NULL ? c->who->name : "");
    conn_send_error(c, w->req_id, BATON_EPERM,
                    "watch of '%.*s' ended: principal '%s' may no longer read it (auth file "
                    "re-read)",
                    (int)w->name_len, w->name, c->who != NULL ? c->who->name : "");
    watcher_free(srv, c, w);
    return true;
}

void watch_recheck(struct server *srv)
{
    for (size_t i = 0; i < srv->watches.cap; i++) {
        struct u64map_slot *s = &srv->watches.slots[i];
        struct watch_list *l;
        if (s->key == 0) continue;
        l = s->val;
        for (struct watcher **pp = &l->first; *pp;) {
            struct watcher *w = *pp, *next = w->next;
            if (revoked(srv, w)) *pp = next;
            else pp = &w->next;
        }
        if (l->first == NULL) {
            /* Deleting may move other entries into this slot: look again. */
            free(u64map_del(&srv->watches, s->key));
            i = (size_t)-1;
        }
    }
}

void watch_conn_gone(struct server *srv, struct conn *c)
{
    for (size_t i = 0; c->n_watches > 0 && i < srv->watches.cap; i++) {
        struct u64map_slot *s = &srv->watches.slots[i];
        struct watch_list *l;
        if (s->key == 0) continue;
        l = s->val;
        for (struct watcher **pp = &l->first; *pp;) {
            struct watcher *w = *pp;
            if (w->conn_id != c->id) {
                pp = &w->next;
                continue;
            }
            *pp = w->next;
            free(w);
            c->n_watches--;
            srv->n_watches--;
        }
        if (l->first == NULL) {
            /* Deleting may move other entries into this slot: look again. */
            free(u64map_del(&srv->watches, s->key));
            i = (size_t)-1;
        }
    }
    c->n_watches = 0;
}

void watch_clear(struct server *srv)
{
    for (size_t i = 0; i < srv->watches.cap; i++) {
        struct watch_list *l = srv->watches.slots[i].val;
        if (srv->watches.slots[i].key == 0) continue;
        while (l->first) {
            struct watcher *w = l->first;
            l->first = w->next;
            free(w);
        }
        free(l);
    }
    u64map_free(&srv->watches);
    srv->n_watches = 0;
}
