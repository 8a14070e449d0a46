/*
 * watch2.c -- WATCH2 and UNWATCH: watches of a lock or of a prefix, with
 * revisions and resumption (ready leader only, on the loop thread;
 * proto/msg.h and docs/design.md, "Watches").
 *
 * Events are sent at apply time: server.c hands every applied entry to
 * watch2_applied from the node's applied hook, right after the entry's
 * transaction committed, and each FX_LOCK_CHANGED of it becomes one
 * CHANGE event per matching watch, with the lock's state read then (once
 * for all its watchers) and the entry's index as its revision. So a watch
 * sees every change, one per entry, in commit order. A WATCH2 is served
 * in one go between two entries: its initial state is read and the watch
 * registered at one applied index, the SYNCED's revision, and every
 * entry applied after it is sent as a CHANGE.
 *
 * Name watches sit in srv->w2.names under the name's hash (names that
 * share a hash share a list and are told apart by comparing them);
 * prefix watches in one list, at most WATCH2_MAX_PREFIX. Each watch is
 * also on its connection's list (c->watches2), for UNWATCH and for its
 * end with the connection. Nothing here costs anything while no WATCH2
 * is held: watch2_applied looks at a counter first.
 *
 * A connection that leaves events unread is cut off by conn.c's bounds
 * (CONN_MAX_OUT, --max-unread-mb), as any reply is; its client resumes
 * with `after` and is told what it may have missed. Sending to a
 * connection may close it at once (a message the codec refuses): while a
 * list is walked (srv->w2.walking) a closed connection's watches are only
 * marked (conn_id 0) and unlinked after the walk.
 */
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "server/access_rule.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/server_int.h"

/* One WATCH2 of one connection. */
struct watcher2 {
    struct watcher2 *prev, *next; /* on its name's list or the prefix list */
    struct watcher2 *cnext;       /* on its connection's list */
    struct w2_list *list;         /* its name's list; NULL: the prefix list */
    uint64_t key_hash;            /* u64map_key of a name watch's key */
    uint64_t conn_id;             /* 0: its connection closed during a walk */
    uint64_t req_id;              /* of the WATCH2: every event carries it */
    uint64_t last_event;          /* uv_now of the last event sent */
    bool prefix;
    uint16_t len;
    char key[BATON_MAX_NAME];
};

/* The watches of one name hash (srv->w2.names). */
struct w2_list {
    struct watcher2 *first;
};

void watch2_init(struct server *srv)
{
    u64map_init(&srv->w2.names);
    uv_timer_init(srv->loop, &srv->w2.progress);
    srv->w2.progress.data = srv;
}

static bool key_is(const struct watcher2 *w, const char *name, size_t len)
{
    return w->len == len && memcmp(w->key, name, len) == 0;
}

static bool matches(const struct watcher2 *w, const char *name, size_t len)
{
    return w->prefix ? len >= w->len && memcmp(w->key, name, w->len) == 0 : key_is(w, name, len);
}

/* Send w one event (state NULL: SYNCED or PROGRESS). */
static void send_event(struct conn *c, struct watcher2 *w, int kind, int restarted,
                       uint64_t revision, const struct msg_lock_state *state)
{
    struct msg m = {.type = MSG_WATCH2_EVENT, .req_id = w->req_id};

    if (state != NULL) m.u.watch2_event.state = *state;
    m.u.watch2_event.kind = (uint8_t)kind;
    m.u.watch2_event.restarted = (uint8_t)restarted;
    m.u.watch2_event.state.revision = revision;
    w->last_event = uv_now(c->srv->loop);
    metrics_inc_label(M_PUSHES, PUSH_WATCH2_EVENT);
    conn_send(c, &m);
}

/* Read lock name's state as applied now into *st (named name, its lists
 * within a frame): 0, or an error already logged. */
static int read_state(struct server *srv, const char *name, size_t len,
                      struct msg_lock_state *st, struct lock_state_mem *mem)
{
    int rv = store_lock_state(srv->store, name, len, LOCK_STATE_BUDGET, st, mem);

    if (rv != 0)
        log_error("watch: cannot read lock '%.*s': %s", (int)len, name, baton_strerror(rv));
    return rv;
}

/* Send w the state of lock name now as an event of `kind` (STATE, GAP). */
static int send_state(struct conn *c, struct watcher2 *w, int kind, const char *name, size_t len)
{
    struct msg_lock_state st;
    struct lock_state_mem mem;
    int rv = read_state(c->srv, name, len, &st, &mem);

    if (rv != 0) return rv;
    send_event(c, w, kind, 0, st.revision, &st);
    store_lock_state_free(&mem);
    return 0;
}

/* ---- the lists ---------------------------------------------------------- */

static void link_watch(struct server *srv, struct conn *c, struct watcher2 *w)
{
    struct watcher2 **head;

    if (w->prefix) {
        head = &srv->w2.prefixes;
        srv->w2.n_prefix++;
    } else {
        w->key_hash = u64map_key(w->key, w->len);
        w->list = u64map_get(&srv->w2.names, w->key_hash);
        if (w->list == NULL) {
            w->list = xcalloc(1, sizeof *w->list);
            xu64map_put(&srv->w2.names, w->key_hash, w->list);
        }
        head = &w->list->first;
    }
    w->prev = NULL;
    w->next = *head;
    if (*head) (*head)->prev = w;
    *head = w;
    w->cnext = c->watches2;
    c->watches2 = w;
    c->n_watches2++;
    srv->w2.n++;
}

/* Take w off its name's or the prefix list and free it (its connection's
 * list is the caller's). */
static void unlink_free(struct server *srv, struct watcher2 *w)
{
    if (w->prev) w->prev->next = w->next;
    else if (w->prefix) srv->w2.prefixes = w->next;
    else w->list->first = w->next;
    if (w->next) w->next->prev = w->prev;
    if (w->prefix) srv->w2.n_prefix--;
    else if (w->list->first == NULL) free(u64map_del(&srv->w2.names, w->key_hash));
    srv->w2.n--;
    free(w);
}

/* Take w off c's list (it is there). */
static void conn_unlink(struct conn *c, struct watcher2 *w)
{
    for (struct watcher2 **pp = &c->watches2; *pp; pp = &(*pp)->cnext)
        if (*pp == w) {
            *pp = w->cnext;
            c->n_watches2--;
            return;
        }
}

/* After a walk: free the watches of connections that closed during it. */
static void reap(struct server *srv)
{
    struct watcher2 *dead = NULL;

    if (!srv->w2.reap) return;
    srv->w2.reap = false;
    for (size_t i = 0; i < srv->w2.names.cap; i++) {
        struct w2_list *l = srv->w2.names.slots[i].val;
        if (srv->w2.names.slots[i].key == 0) continue;
        for (struct watcher2 *w = l->first; w; w = w->next)
            if (w->conn_id == 0) {
                w->cnext = dead;
                dead = w;
            }
    }
    for (struct watcher2 *w = srv->w2.prefixes; w; w = w->next)
        if (w->conn_id == 0) {
            w->cnext = dead;
            dead = w;
        }
    while (dead) {
        struct watcher2 *w = dead;
        dead = w->cnext;
        unlink_free(srv, w);
    }
}

void watch2_conn_gone(struct server *srv, struct conn *c)
{
    while (c->watches2) {
        struct watcher2 *w = c->watches2;
        c->watches2 = w->cnext;
        if (srv->w2.walking) {
            w->conn_id = 0;
            srv->w2.reap = true;
        } else {
            unlink_free(srv, w);
        }
    }
    c->n_watches2 = 0;
}

/* ---- events at apply time ----------------------------------------------- */

/* Lock name changed in entry `index`: one CHANGE to each of its watches. */
static void changed(struct server *srv, const char *name, size_t len, uint64_t index)
{
    struct w2_list *l = u64map_get(&srv->w2.names, u64map_key(name, len));
    struct watcher2 *lists[2] = {l ? l->first : NULL, srv->w2.prefixes};
    struct msg_lock_state st;
    struct lock_state_mem mem;
    bool have = false;

    for (int k = 0; k < 2; k++)
        for (struct watcher2 *w = lists[k]; w; w = w->next) {
            struct conn *c;
            if (!matches(w, name, len) || (c = conn_get(srv, w->conn_id)) == NULL) continue;
            if (!have) {
                if (read_state(srv, name, len, &st, &mem) != 0) return;
                have = true;
            }
            send_event(c, w, WATCH2_CHANGE, 0, index, &st);
        }
    if (have) store_lock_state_free(&mem);
}

void watch2_applied(struct server *srv, const struct effects *fx)
{
    if (srv->w2.n == 0) return;
    srv->w2.walking = true;
    for (size_t i = 0; i < fx->n_fx; i++)
        if (fx->fx[i].type == FX_LOCK_CHANGED)
            changed(srv, fx->fx[i].name, fx->fx[i].name_len, fx->index);
    srv->w2.walking = false;
    reap(srv);
}

/* ---- PROGRESS ----------------------------------------------------------- */

/*
 * Every WATCH2_PROGRESS_MS: each watch that was sent nothing for that long
 * gets PROGRESS at the applied index -- nothing it watches changed up to
 * there, since every change up to there was sent at apply time. A client
 * idle for long thus resumes from a recent revision, well inside the
 * change history. The timer stops while no watch is held.
 */
static void progress_tick(uv_timer_t *t)
{
    struct server *srv = t->data;
    uint64_t now = uv_now(srv->loop), applied = store_applied_index(srv->store);

    if (srv->w2.n == 0) {
        uv_timer_stop(t);
        return;
    }
    srv->w2.walking = true;
    for (size_t i = 0; i < srv->conns.cap; i++) {
        struct conn *c = srv->conns.slots[i].val;
        if (srv->conns.slots[i].key == 0 || c->closing || c->closed) continue;
        for (struct watcher2 *w = c->watches2; w; w = w->cnext)
            if (now - w->last_event >= WATCH2_PROGRESS_MS)
                send_event(c, w, WATCH2_PROGRESS, 0, applied, NULL);
    }
    srv->w2.walking = false;
    reap(srv);
}

/* ---- WATCH2 ------------------------------------------------------------- */

/* The names of the locks under a prefix, collected (store_list_locks lends
 * them for its callback only): u16 length + bytes each. */
struct names {
    struct buf b;
    uint32_t n;
};

static int collect(void *data, const char *name, size_t name_len,
                   const struct msg_lock_summary *sum)
{
    struct names *ns = data;
    uint8_t len[2] = {(uint8_t)name_len, (uint8_t)(name_len >> 8)};

    (void)sum;
    if (buf_put(&ns->b, len, 2) != 0 || buf_put(&ns->b, name, name_len) != 0)
        xalloc_failed("a watch's lock names");
    ns->n++;
    return 0;
}

/* The whole current state: a STATE per watched lock (for a name, one even
 * if free), then SYNCED(restarted) at the applied index. 0, or an error
 * for the WATCH2's ERROR (nothing was sent then, or c is closing). */
static int send_dump(struct conn *c, struct watcher2 *w, int restarted)
{
    struct server *srv = c->srv;
    struct names ns = {{0}, 0};
    size_t off = 0;
    int more = 0, rv = 0;

    if (!w->prefix) {
        rv = send_state(c, w, WATCH2_STATE, w->key, w->len);
    } else {
        rv = store_list_locks(srv->store, w->key, w->len, WATCH2_MAX_DUMP, collect, &ns, &more);
        if (rv == 0 && more) rv = BATON_ELIMIT;
        for (uint32_t i = 0; rv == 0 && i < ns.n; i++) {
            size_t len = (size_t)ns.b.data[off] | (size_t)ns.b.data[off + 1] << 8;
            rv = send_state(c, w, WATCH2_STATE, (const char *)ns.b.data + off + 2, len);
            off += 2 + len;
        }
        buf_free(&ns.b);
    }
    if (rv == 0) send_event(c, w, WATCH2_SYNCED, restarted, store_applied_index(srv->store), NULL);
    return rv;
}

/* A resumed watch (after > 0): what changed since `after`, as far as the
 * change history (history.c) can tell. */
static int send_resume(struct conn *c, struct watcher2 *w, uint64_t after)
{
    struct server *srv = c->srv;
    uint64_t applied = store_applied_index(srv->store);
    int rv = 0;

    if (after < hist_floor(&srv->hist) || after > applied) return send_dump(c, w, 1);
    if (hist_changed(&srv->hist, after, w->prefix, w->key, w->len)) {
        if (w->prefix) return send_dump(c, w, 1); /* which locks changed is not known */
        rv = send_state(c, w, WATCH2_GAP, w->key, w->len);
    }
    if (rv == 0) send_event(c, w, WATCH2_SYNCED, 0, applied, NULL);
    return rv;
}

/* The WATCH2 of c with req_id, if any. */
static struct watcher2 *find(struct conn *c, uint64_t req_id)
{
    for (struct watcher2 *w = c->watches2; w; w = w->cnext)
        if (w->req_id == req_id) return w;
    return NULL;
}

/* Drop c's watch w (on c's list). */
static void drop(struct server *srv, struct conn *c, struct watcher2 *w)
{
    conn_unlink(c, w);
    unlink_free(srv, w);
}

/* Is c over a limit for one more watch (prefix or not)? Then it has been
 * answered ERROR(BATON_ELIMIT). */
static bool over_limit(struct conn *c, uint64_t req_id, bool prefix)
{
    struct server *srv = c->srv;
    const char *why = NULL;

    if (c->n_watches2 >= WATCH_MAX_PER_CONN) why = "too many watches on this connection";
    else if (srv->w2.n >= WATCH_MAX_TOTAL) why = "too many watches on this server";
    else if (prefix && srv->w2.n_prefix >= WATCH2_MAX_PREFIX)
        why = "too many prefix watches on this server";
    if (why == NULL) return false;
    conn_send_error(c, req_id, BATON_ELIMIT, "watch: %s", why);
    return true;
}

void watch2_request(struct conn *c, const struct msg *m)
{
    struct server *srv = c->srv;
    const struct msg_watch2 *q = &m->u.watch2;
    bool prefix = q->flags == BATON_WATCH_PREFIX;
    struct watcher2 *w, *old = find(c, m->req_id);
    int rv;

    if (q->flags != 0 && !prefix) {
        conn_send_error(c, m->req_id, BATON_EINVAL, "watch: unknown flags 0x%x", q->flags);
        return;
    }
    if (!prefix && !proto_lock_name_ok(q->key.p, q->key.n)) {
        conn_send_error(c, m->req_id, BATON_EINVAL, "watch: not a lock name");
        return;
    }
    if (old != NULL) drop(srv, c, old); /* the same req_id again: it starts over */
    if (over_limit(c, m->req_id, prefix)) return;
    w = xcalloc(1, sizeof *w);
    w->conn_id = c->id;
    w->req_id = m->req_id;
    w->prefix = prefix;
    w->len = q->key.n;
    memcpy(w->key, q->key.p, q->key.n);
    /* The state is sent and the watch registered between two entries: the
     * SYNCED's revision is the index at which both happen. */
    srv->w2.walking = true;
    rv = q->after == 0 ? send_dump(c, w, 0) : send_resume(c, w, q->after);
    srv->w2.walking = false;
    reap(srv);
    if (rv != 0) conn_send_error(c, m->req_id, rv, "watch: %s", baton_strerror(rv));
    if (rv != 0 || c->closing || c->closed) {
        free(w);
        return;
    }
    link_watch(srv, c, w);
    if (!uv_is_active((uv_handle_t *)&srv->w2.progress))
        uv_timer_start(&srv->w2.progress, progress_tick, WATCH2_PROGRESS_MS, WATCH2_PROGRESS_MS);
}

void watch2_unwatch(struct conn *c, const struct msg *m)
{
    struct msg r = {.type = MSG_RESULT, .req_id = m->req_id};
    struct watcher2 *w = find(c, m->u.unwatch.watch);

    if (w != NULL) drop(c->srv, c, w);
    r.u.result.status = w != NULL ? 0 : BATON_ENOTFOUND;
    conn_send(c, &r);
}

/* ---- the end of watches -------------------------------------------------- */

/* May principal p still read what w watches? */
static bool may_see(const struct principal *p, const struct watcher2 *w)
{
    if (!w->prefix) return access_may_see(p, w->key, w->len);
    return p != NULL && (p->role == MSG_ROLE_ADMIN || p->n_prefixes == 0 ||
                         auth_covers_prefix(p, w->key, w->len));
}

void watch2_recheck(struct server *srv)
{
    if (srv->w2.n == 0) return;
    srv->w2.walking = true;
    for (size_t i = 0; i < srv->conns.cap; i++) {
        struct conn *c = srv->conns.slots[i].val;
        if (srv->conns.slots[i].key == 0 || c->closing || c->closed) continue;
        for (struct watcher2 *w = c->watches2, *next; w; w = next) {
            next = w->cnext;
            if (may_see(c->who, w)) continue;
            log_info("conn %llu (%s): watch of %s'%.*s' ended: principal '%s' may no longer "
                     "read it", (unsigned long long)c->id, c->peer, w->prefix ? "prefix " : "",
                     (int)w->len, w->key, c->who != NULL ? c->who->name : "");
            conn_send_error(c, w->req_id, BATON_EPERM,
                            "watch of %s'%.*s' ended: principal '%s' may no longer read it "
                            "(auth file re-read)", w->prefix ? "prefix " : "", (int)w->len,
                            w->key, c->who != NULL ? c->who->name : "");
            conn_unlink(c, w);
            w->conn_id = 0; /* freed by reap, after the walk */
            srv->w2.reap = true;
        }
    }
    srv->w2.walking = false;
    reap(srv);
}

void watch2_clear(struct server *srv)
{
    for (size_t i = 0; i < srv->conns.cap; i++) {
        struct conn *c = srv->conns.slots[i].val;
        if (srv->conns.slots[i].key == 0) continue;
        c->watches2 = NULL;
        c->n_watches2 = 0;
    }
    for (size_t i = 0; i < srv->w2.names.cap; i++) {
        struct w2_list *l = srv->w2.names.slots[i].val;
        if (srv->w2.names.slots[i].key == 0) continue;
        while (l->first) {
            struct watcher2 *w = l->first;
            l->first = w->next;
            free(w);
        }
        free(l);
    }
    u64map_free(&srv->w2.names);
    while (srv->w2.prefixes) {
        struct watcher2 *w = srv->w2.prefixes;
        srv->w2.prefixes = w->next;
        free(w);
    }
    srv->w2.n = srv->w2.n_prefix = 0;
    srv->w2.reap = false;
}

void watch2_close(struct server *srv)
{
    uv_close((uv_handle_t *)&srv->w2.progress, NULL);
}
