/*
 * keepalive.c -- answer keepalives only once leadership is confirmed.
 *
 * A keepalive renews the session's lease on the leader at once (liveness.c)
 * but its reply waits for a confirmation round: a barrier of the leader's
 * term (node_confirm) proposed after the keepalive arrived. Once that
 * barrier commits, no leader of a later term can have been elected before
 * the keepalive arrived, and such a leader gives every session a full fresh
 * lease when it starts -- so the lease the client counts from the send time
 * of an acknowledged keepalive ends before any newer leader could expire
 * the session. Without the round, a leader cut off from the majority would
 * keep acknowledging keepalives until it noticed, up to an election timeout
 * later, and a client could count on a lease the new leader does not.
 *
 * Rounds are cheap but are log entries: at most one is in flight, and a new
 * one starts at most every KA_ROUND_MS, so an idle cluster of any number of
 * sessions writes at most 1000 / KA_ROUND_MS barriers per second. A reply
 * waits at most KA_ROUND_MS plus one commit.
 *
 * Keepalives that arrive while a round is in flight wait for the next one:
 * the in-flight barrier may have been proposed before they arrived.
 *
 * Lost holds (storage/store.h). A reply also says how many holds were
 * taken from the session by a forced release and not yet acknowledged
 * (RESULT's value), read from the store when the round ends: every entry
 * committed before the barrier is applied then, so a forced release
 * applied before the keepalive's reply is always counted in it, whatever
 * became of its LOST push. The client then asks for them (LOST_HOLDS,
 * served here from the applied state) and acknowledges each.
 */
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/server_int.h"

#define KA_ROUND_MS 20

static void kick_timer_cb(uv_timer_t *t);

void keepalive_init(struct server *srv)
{
    memset(&srv->ka, 0, sizeof srv->ka);
    uv_timer_init(srv->loop, &srv->ka.timer);
    srv->ka.timer.data = srv;
}

static void list_push(struct ka_list *l, const struct ka_reply *r)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        l->v = xrealloc(l->v, cap * sizeof *l->v);
        l->cap = cap;
    }
    l->v[l->n++] = *r;
}

/* How many lost holds a session has, for its keepalive's reply. A store
 * that cannot be read answers 0 and logs: the next keepalive asks again. */
static uint64_t lost_count(struct server *srv, uint64_t session)
{
    uint32_t n;
    int rv = store_lost_count(srv->store, session, BATON_MAX_LIST, &n);

    if (rv == 0) return n;
    log_warn("session %llu: counting its lost holds: %s", (unsigned long long)session,
             baton_strerror(rv));
    return 0;
}

/* Reply to every keepalive of l: alive (status 0, with the session's count
 * of lost holds) or go find the leader; and to every LOCK_STATE: the
 * state as applied now, which holds every entry committed before the
 * request arrived. */
static void answer(struct server *srv, struct ka_list *l, int status)
{
    for (size_t i = 0; i < l->n; i++) {
        struct conn *c = conn_get(srv, l->v[i].conn_id);
        struct msg r = {.type = MSG_RESULT, .req_id = l->v[i].req_id};
        char *lock = l->v[i].lock;

        if (lock != NULL) srv->ka.n_reads--;
        if (c == NULL) {
            free(lock);
            continue;
        }
        if (status != 0) {
            reply_not_leader(c, l->v[i].req_id);
            free(lock);
            continue;
        }
        if (lock != NULL) {
            reply_lock_state(c, l->v[i].req_id, lock, l->v[i].lock_len);
            free(lock);
            continue;
        }
        r.u.result.status = 0;
        r.u.result.kind = RESULT_OK;
        r.u.result.value = lost_count(srv, l->v[i].session);
        conn_send(c, &r);
    }
    l->n = 0;
}

/* The round's barrier committed (status 0) or leadership is gone. Runs
 * inside raft's callbacks: the next round starts from keepalive_kick. */
static void round_done(void *data, int status)
{
    struct server *srv = data;

    srv->ka.inflight = false;
    if (status != 0 && status != BATON_ENOTLEADER)
        log_warn("keepalive round failed: %s", baton_strerror(status));
    answer(srv, &srv->ka.round, status == 0 ? 0 : BATON_ENOTLEADER);
}

void keepalive_received(struct conn *c, uint64_t req_id, uint64_t session)
{
    struct server *srv = c->srv;
    struct ka_reply r = {.conn_id = c->id, .req_id = req_id, .session = session};

    metrics_inc(M_KEEPALIVES);
    if (!liveness_touch(srv, session)) {
        struct msg m = {.type = MSG_RESULT, .req_id = req_id};
        m.u.result.status = BATON_ESESSION;
        m.u.result.kind = RESULT_OK;
        conn_send(c, &m);
        return;
    }
    push_attach(srv, session, c->id);
    list_push(&srv->ka.next, &r);
}

/* End of a loop turn (outside raft's callbacks): start a round for the
 * keepalives that arrived, unless one is in flight or the last one started
 * less than KA_ROUND_MS ago (then the timer comes back). */
void keepalive_kick(struct server *srv)
{
    struct ka_list tmp;
    uint64_t now, due;
    int rv;

    if (srv->ka.inflight || srv->ka.next.n == 0 || srv->stopping) return;
    now = uv_now(srv->loop);
    due = srv->ka.last_start + KA_ROUND_MS;
    if (srv->ka.last_start != 0 && now < due) {
        if (!uv_is_active((uv_handle_t *)&srv->ka.timer))
            uv_timer_start(&srv->ka.timer, kick_timer_cb, due - now, 0);
        return;
    }
    tmp = srv->ka.round; /* empty: answered by the last round_done */
    srv->ka.round = srv->ka.next;
    srv->ka.next = tmp;
    srv->ka.last_start = now;
    rv = srv->nio->confirm(srv->node, round_done, srv);
    if (rv != 0) {
        answer(srv, &srv->ka.round, BATON_ENOTLEADER);
        return;
    }
    srv->ka.inflight = true;
    metrics_inc(M_KEEPALIVE_ROUNDS);
}

static void kick_timer_cb(uv_timer_t *t)
{
    keepalive_kick(t->data);
}

void keepalive_close(struct server *srv)
{
    uv_timer_stop(&srv->ka.timer);
    uv_close((uv_handle_t *)&srv->ka.timer, NULL);
}

/*
 * LOCK_STATE: a linearizable read. It waits, like a keepalive's reply, for
 * a confirmation round proposed after it arrived, and is answered from the
 * state applied then: every write acknowledged before the read was sent
 * is in it, and no later leader can have acknowledged one that is not
 * (the top of this file). Reads in flight are bounded (KA_MAX_READS).
 */
void keepalive_read_state(struct conn *c, const struct msg *m)
{
    struct server *srv = c->srv;
    const struct pstr *name = &m->u.lock_info.lock;
    struct ka_reply r = {.conn_id = c->id, .req_id = m->req_id, .lock_len = name->n};

    if (srv->ka.n_reads >= KA_MAX_READS) {
        conn_send_error(c, m->req_id, BATON_ELIMIT,
                        "lock-state: %u reads already wait for a confirmation round",
                        KA_MAX_READS);
        return;
    }
    r.lock = xmalloc(name->n);
    memcpy(r.lock, name->p, name->n);
    srv->ka.n_reads++;
    list_push(&srv->ka.next, &r);
}

static void list_free(struct ka_list *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->v[i].lock);
    free(l->v);
    memset(l, 0, sizeof *l);
}

void keepalive_free(struct server *srv)
{
    list_free(&srv->ka.round);
    list_free(&srv->ka.next);
    srv->ka.n_reads = 0;
}

/* Collects LOST_HOLDS_R items; names are copied because the store lends
 * them only for the duration of the callback. */
struct lost_page {
    struct msg_lost_hold *items;
    char *names;
    uint32_t n;
};

static int lost_one(void *data, uint64_t waiter, uint64_t fence, int32_t status,
                    const char *name, size_t name_len)
{
    struct lost_page *pg = data;
    char *dst = pg->names + (size_t)pg->n * BATON_MAX_NAME;

    memcpy(dst, name, name_len);
    pg->items[pg->n] = (struct msg_lost_hold){
        .waiter = waiter,
        .fence = fence,
        .status = status,
        .lock = {dst, (uint16_t)name_len},
    };
    pg->n++;
    return 0;
}

/*
 * LOST_HOLDS(session, after): one page of the session's lost holds, from
 * the applied state. Like the other reads it neither renews the lease nor
 * attaches the session: the keepalive that made the client ask did both.
 * An unknown session has none (its end told the client everything).
 */
void keepalive_lost_holds(struct conn *c, const struct msg *m)
{
    struct msg r = {.type = MSG_LOST_HOLDS_R, .req_id = m->req_id};
    struct lost_page pg = {0};
    int more = 0, rv;

    pg.items = xmalloc(BATON_MAX_LIST * sizeof *pg.items);
    pg.names = xmalloc((size_t)BATON_MAX_LIST * BATON_MAX_NAME);
    rv = store_lost_list(c->srv->store, m->u.lost_holds.session, m->u.lost_holds.after,
                         BATON_MAX_LIST, lost_one, &pg, &more);
    if (rv != 0) {
        conn_send_error(c, m->req_id, rv, "lost-holds: %s", baton_strerror(rv));
    } else {
        r.u.lost_holds_r.n = pg.n;
        r.u.lost_holds_r.items = pg.n ? pg.items : NULL;
        r.u.lost_holds_r.more = (uint8_t)more;
        conn_send(c, &r);
    }
    free(pg.items);
    free(pg.names);
}
