/*
 * push.c -- the leader's duties beyond answering requests: deliver the
 * effects of applied entries (GRANTED, WAIT_FAILED and LOST pushes; lock
 * changes go to watch.c for WATCH_EVENTs) to the
 * connection each session is attached to, and enforce wait deadlines by
 * proposing WAIT_TIMEOUT.
 *
 * Every node applies every entry, but only the ready leader pushes. Effects
 * are queued during apply and delivered in the loop turn's check handler,
 * after the replies of that turn: so a waiter's QUEUED reply always reaches
 * the client before the push that ends its wait.
 *
 * A lock freed by an expiry with a lock-delay gets a timer here, after which
 * the leader proposes DELAY_END and the queue head is granted.
 *
 * This state lives in memory on the leader only. A new leader starts empty:
 * sessions attach again as their clients send requests, and wait deadlines
 * and lock-delays are re-armed from the store with their full duration.
 */
#include <stdlib.h>
#include <string.h>

#include "client/baton_defs.h"
#include "server/log.h"
#include "server/server.h"

static struct srv_session *session_get(struct server *srv, uint64_t id, bool create)
{
    struct srv_session *s = u64map_get(&srv->sessions, id);

    if (s != NULL || !create) return s;
    s = calloc(1, sizeof *s);
    if (s == NULL) return NULL;
    s->id = id;
    if (u64map_put(&srv->sessions, id, s) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

void push_attach(struct server *srv, uint64_t session, uint64_t conn_id)
{
    struct srv_session *s;

    if (!srv->ready) return;
    s = session_get(srv, session, true);
    if (s != NULL) s->conn_id = conn_id;
}

static void wait_closed(uv_handle_t *h)
{
    free(h->data);
}

/* Stop and free the wait timer of (session, waiter), if there is one. */
static void wait_disarm(struct srv_session *s, uint64_t waiter)
{
    for (struct wait_timer **pp = &s->waits; *pp; pp = &(*pp)->next) {
        struct wait_timer *w = *pp;
        if (w->waiter != waiter) continue;
        *pp = w->next;
        uv_timer_stop(&w->t);
        uv_close((uv_handle_t *)&w->t, wait_closed);
        return;
    }
}

static void session_free(struct srv_session *s)
{
    while (s->waits) wait_disarm(s, s->waits->waiter);
    free(s);
}

/* A wait deadline passed: propose its end. The store makes it a no-op if
 * the waiter was granted meanwhile. */
static void wait_fire(uv_timer_t *t)
{
    struct wait_timer *w = t->data;
    struct server *srv = w->srv;
    struct cmd cmd = {0};
    struct pending p;

    if (!srv->ready) return;
    cmd.type = CMD_WAIT_TIMEOUT;
    cmd.session = w->session;
    cmd.waiter = w->waiter;
    cmd.name = w->name;
    cmd.name_len = w->name_len;
    memset(&p, 0, sizeof p);
    p.cmd_type = CMD_WAIT_TIMEOUT;
    p.session = w->session;
    p.seq = w->waiter;
    batch_add(srv, &cmd, &p);
    /* The timer stays until the WAIT_FAILED (or GRANT) effect disarms it;
     * if the proposal is lost to a leader change, the next leader re-arms. */
}

void push_wait_arm(struct server *srv, uint64_t session, uint64_t waiter, int64_t wait_ms,
                   const char *name, size_t name_len)
{
    struct srv_session *s;
    struct wait_timer *w;

    if (!srv->ready || wait_ms <= 0 || name_len > BATON_MAX_NAME) return;
    s = session_get(srv, session, true);
    if (s == NULL) return;
    wait_disarm(s, waiter);
    w = calloc(1, sizeof *w);
    if (w == NULL) return;
    w->srv = srv;
    w->session = session;
    w->waiter = waiter;
    w->name_len = (uint16_t)name_len;
    memcpy(w->name, name, name_len);
    uv_timer_init(srv->loop, &w->t);
    w->t.data = w;
    uv_timer_start(&w->t, wait_fire, (uint64_t)wait_ms, 0);
    w->next = s->waits;
    s->waits = w;
}

static void delay_closed(uv_handle_t *h)
{
    free(h->data);
}

/* A lock-delay ran out: propose its end. The timer is freed now; if the
 * proposal is lost to a leader change, the next leader re-arms from the
 * store. */
static void delay_fire(uv_timer_t *t)
{
    struct delay_timer *d = t->data, **pp;
    struct server *srv = d->srv;
    struct cmd cmd = {0};
    struct pending p = {0};

    if (srv->ready) {
        cmd.type = CMD_DELAY_END;
        cmd.name = d->name;
        cmd.name_len = d->name_len;
        p.cmd_type = CMD_DELAY_END;
        batch_add(srv, &cmd, &p);
    }
    for (pp = &srv->delays; *pp; pp = &(*pp)->next)
        if (*pp == d) {
            *pp = d->next;
            break;
        }
    uv_close((uv_handle_t *)&d->t, delay_closed);
}

static void delay_arm(struct server *srv, const char *name, size_t name_len, int32_t ms)
{
    struct delay_timer *d;

    if (!srv->ready || ms <= 0 || name_len > BATON_MAX_NAME) return;
    d = calloc(1, sizeof *d);
    if (d == NULL) return;
    d->srv = srv;
    d->name_len = (uint16_t)name_len;
    memcpy(d->name, name, name_len);
    uv_timer_init(srv->loop, &d->t);
    d->t.data = d;
    uv_timer_start(&d->t, delay_fire, (uint64_t)ms, 0);
    d->next = srv->delays;
    srv->delays = d;
}

static void delays_clear(struct server *srv)
{
    while (srv->delays) {
        struct delay_timer *d = srv->delays;
        srv->delays = d->next;
        uv_timer_stop(&d->t);
        uv_close((uv_handle_t *)&d->t, delay_closed);
    }
}

void push_clear(struct server *srv)
{
    delays_clear(srv);
    for (size_t i = 0; i < srv->sessions.cap; i++)
        if (srv->sessions.slots[i].key) session_free(srv->sessions.slots[i].val);
    u64map_free(&srv->sessions);
    watch_clear(srv);
    srv->n_pushq = 0;
}

/* Node hook: an entry was applied (on every node). Queue its effects. */
void push_applied(void *data, const struct effects *fx)
{
    struct server *srv = data;

    if (!srv->ready || fx->n_fx == 0) return;
    if (srv->n_pushq + fx->n_fx > srv->cap_pushq) {
        size_t cap = srv->cap_pushq ? srv->cap_pushq : 64;
        struct effect *q;
        while (cap < srv->n_pushq + fx->n_fx) cap *= 2;
        q = realloc(srv->pushq, cap * sizeof *q);
        if (q == NULL) {
            log_error("out of memory queueing %zu pushes; clients will find out on retry",
                      fx->n_fx);
            return;
        }
        srv->pushq = q;
        srv->cap_pushq = cap;
    }
    memcpy(srv->pushq + srv->n_pushq, fx->fx, fx->n_fx * sizeof *fx->fx);
    srv->n_pushq += fx->n_fx;
}

static void push_one(struct server *srv, const struct effect *e)
{
    struct srv_session *s = session_get(srv, e->session, false);
    struct conn *c;
    struct msg m = {.req_id = 0};

    switch (e->type) {
    case FX_GRANT:
        m.type = MSG_GRANTED;
        m.u.granted.session = e->session;
        m.u.granted.waiter = e->waiter;
        m.u.granted.fence = e->fence;
        m.u.granted.lock.p = e->name;
        m.u.granted.lock.n = e->name_len;
        break;
    case FX_WAIT_FAILED:
        m.type = MSG_WAIT_FAILED;
        m.u.wait_failed.session = e->session;
        m.u.wait_failed.waiter = e->waiter;
        m.u.wait_failed.status = e->status;
        m.u.wait_failed.lock.p = e->name;
        m.u.wait_failed.lock.n = e->name_len;
        break;
    case FX_LOST:
        log_info("session %llu lost lock '%.*s' (fence %llu): %s",
                 (unsigned long long)e->session, (int)e->name_len, e->name,
                 (unsigned long long)e->fence, baton_strerror(e->status));
        m.type = MSG_LOST;
        m.u.lost.session = e->session;
        m.u.lost.waiter = e->waiter;
        m.u.lost.fence = e->fence;
        m.u.lost.status = e->status;
        m.u.lost.lock.p = e->name;
        m.u.lost.lock.n = e->name_len;
        break;
    case FX_LOCK_DELAY:
        log_info("lock '%.*s' delayed %d ms after its holder expired", (int)e->name_len, e->name,
                 e->lock_delay_ms);
        delay_arm(srv, e->name, e->name_len, e->lock_delay_ms);
        return;
    case FX_LOCK_CHANGED:
        watch_changed(srv, e->name, e->name_len);
        return;
    case FX_SESSION_GONE:
        liveness_gone(srv, e->session);
        if (s == NULL) return;
        u64map_del(&srv->sessions, e->session);
        c = e->status != 0 && s->conn_id ? conn_get(srv, s->conn_id) : NULL;
        session_free(s);
        if (c != NULL) {
            m.type = MSG_SESSION_EXPIRED;
            m.u.session_expired.session = e->session;
            conn_send(c, &m);
        }
        return;
    default:
        return;
    }
    if (s == NULL) return;
    wait_disarm(s, e->waiter);
    c = s->conn_id ? conn_get(srv, s->conn_id) : NULL;
    if (c != NULL) conn_send(c, &m);
}

/* Deliver what was applied this turn; runs in the check handler. */
void push_deliver(struct server *srv)
{
    srv->watch_turn++;
    for (size_t i = 0; i < srv->n_pushq; i++) push_one(srv, &srv->pushq[i]);
    srv->n_pushq = 0;
}

static int rearm_delay(void *data, const char *name, size_t name_len, int32_t lock_delay_ms)
{
    delay_arm(data, name, name_len, lock_delay_ms);
    return 0;
}

static int rearm_waiter(void *data, uint64_t session, uint64_t waiter, int64_t wait_ms,
                        const char *name, size_t name_len)
{
    push_wait_arm(data, session, waiter, wait_ms, name, name_len);
    return 0;
}

/*
 * Node hook: this node became the ready leader (its barrier committed), or
 * stopped being it. A new leader re-arms every wait deadline with its full
 * duration (it cannot know how much of it had passed). A node that stops
 * leading forgets everything and closes its client connections, so that the
 * clients find the new leader and re-send what is unanswered.
 */
void push_ready(void *data, bool ready)
{
    struct server *srv = data;

    srv->ready = ready;
    if (ready) {
        log_info("leader: serving");
        liveness_start(srv);
        store_foreach_timed_waiter(srv->store, rearm_waiter, srv);
        store_foreach_delayed_lock(srv->store, rearm_delay, srv);
    } else {
        log_info("no longer the leader");
        liveness_stop(srv);
        push_clear(srv);
        if (!srv->stopping) conn_close_all(srv);
    }
}
