/*
 * async_watch.c -- reading and watching locks on the async core
 * (baton_async.h: baton_async_lock_state, baton_async_watch,
 * baton_async_unwatch; baton.h, "Watches").
 *
 * A read is a LOCK_STATE, a sessionless request (async_raw.c): re-sent
 * after a redirect or a broken connection, bounded by the op timeout.
 *
 * A watch is a request of its own kind (BATON__K_WATCH) that stays in the
 * table until it ends: its id is the WATCH2's req_id, which names the
 * stream (its WATCH2_EVENTs carry it, UNWATCH names it). It is sessionless:
 * it lives on when the session ends. When the connection breaks it is
 * UNSENT again like every request, and the next ready connection (the new
 * leader) gets the WATCH2 again with after = r->resume, the revision up
 * to which the stream was complete: the last CHANGE's, SYNCED's or
 * PROGRESS's. (STATE and GAP events do not move it: they come before a
 * SYNCED, and a stream broken among them is asked for them again.) The
 * leader then answers as proto/msg.h says: SYNCED restarted 0 when nothing
 * watched changed, GAP events then SYNCED, or STATE events then SYNCED
 * restarted 1; all of them are passed on. PROGRESS only moves r->resume.
 * A CHANGE at or below r->resume was delivered already and is dropped, so
 * revisions of CHANGEs strictly increase along a watch.
 *
 * Events are converted (lockstate.c) as they arrive and each queued on
 * ac->done in its own BATON__K_WEVENT entry, so that they run in FIFO
 * order with every other callback; one that was queued for a stream the
 * watch has since left (unwatched, or restarted under a new id) is
 * dropped when its turn comes.
 *
 * How a watch ends: ERROR(BATON_EPERM) on its id (its principal may no
 * longer read the key), any ERROR before the stream's first event (the
 * leader refused it: BATON_ELIMIT, BATON_EINVAL...), no leader reached
 * before the first event within the op timeout (BATON_EUNAVAIL or
 * BATON_ETIMEDOUT, as other requests), a node's refusal of the client
 * before the first event (baton__watch_fail_new), out of memory for an event
 * (BATON_ENOMEM), baton_async_unwatch or the context's end
 * (BATON_ECANCELED). An ERROR other than EPERM on an established stream
 * (a leader that cut a slow watcher off) resubscribes it, told of what it
 * missed as after a reconnect. Once established, a watch waits for a
 * leader as long as it takes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/async_int.h"

/* ---- reads --------------------------------------------------------------------- */

struct read_ctx {
    baton_async_state_cb *cb;
    void *data;
    bool owned; /* the callback takes the state (baton__lock_state_read) */
};

static void read_done(baton_async_t *ac, int status, const struct msg *m, bool last, void *data)
{
    struct read_ctx *ctx = data;
    baton_lock_state *st = NULL;

    (void)last; /* not a stream: always the last */
    if (status == 0 && m->type != MSG_LOCK_STATE_R) {
        baton__seterr(ac, "lock_state: the node answered %s", msg_type_name(m->type));
        status = BATON_EPROTO;
    }
    if (status == 0 && (st = baton__state_new(&m->u.lock_state)) == NULL) {
        baton__seterr(ac, "lock_state: out of memory");
        status = BATON_ENOMEM;
    }
    ctx->cb(ac, status, st, ctx->data);
    if (!ctx->owned) baton_lock_state_free(st);
    free(ctx);
}

int baton__lock_state_read(baton_async_t *ac, const char *name, bool owned,
                           baton_async_state_cb *cb, void *data)
{
    struct msg m = {.type = MSG_LOCK_STATE};
    struct read_ctx *ctx;
    size_t n;
    int rv;

    if (ac == NULL || name == NULL || cb == NULL) return BATON_EINVAL;
    n = strnlen(name, BATON_MAX_NAME + 1);
    if (!proto_lock_name_ok(name, n)) return BATON_EINVAL;
    ctx = malloc(sizeof *ctx);
    if (ctx == NULL) return BATON_ENOMEM;
    *ctx = (struct read_ctx){.cb = cb, .data = data, .owned = owned};
    m.u.lock_info.lock = (struct pstr){name, (uint16_t)n};
    rv = baton__raw_send(ac, &m, false, ac->op_timeout_ms, read_done, ctx);
    if (rv != 0) free(ctx);
    return rv;
}

int baton_async_lock_state(baton_async_t *ac, const char *name, baton_async_state_cb *cb,
                           void *data)
{
    return baton__lock_state_read(ac, name, false, cb, data);
}

/* ---- watches: the stream -------------------------------------------------------- */

/* The watch a public handle names. */
static struct baton__req *of(baton_async_watch_t *w)
{
    return (struct baton__req *)(void *)w;
}

/* Tell the node of r's stream, if it is on the current connection, that
 * r no longer listens. Best effort: the answer is not waited for (its id
 * names nothing in the table), and a node that never gets it drops the
 * stream with the connection. */
static void stop_stream(baton_async_t *ac, struct baton__req *r)
{
    struct msg m = {.type = MSG_UNWATCH};

    if (r->state == BATON__R_UNSENT || r->sent_gen != ac->gen || ac->cstate != BATON__C_READY)
        return;
    m.req_id = ac->next_id++;
    m.u.unwatch.watch = r->id;
    (void)baton__send_msg(ac, &m); /* out of memory: the node keeps it until the connection goes */
}

/* End watch r with status (the caller set the message). */
static void end(baton_async_t *ac, struct baton__req *r, int status)
{
    stop_stream(ac, r);
    baton__finish(ac, r, status, 0);
}

void baton__watch_send(baton_async_t *ac, struct baton__req *r)
{
    struct msg m = {.type = MSG_WATCH2, .req_id = r->id};
    int rv;

    m.u.watch2 = (struct msg_watch2){.flags = r->wflags, .key = {r->name, r->name_len},
                                     .after = r->resume};
    rv = baton__send_msg(ac, &m);
    if (rv != 0) {
        baton__seterr(ac, "watch '%s': could not encode WATCH2: %s", r->name, baton_strerror(rv));
        baton__finish(ac, r, rv, 0);
        return;
    }
    baton__req_sent(ac, r);
    r->established = false;
}

void baton__watch_expire(baton_async_t *ac, struct baton__req *r, int status)
{
    end(ac, r, status);
}

/* The node refused this client (baton__conn_refused: TLS, the token, no
 * memory for the connection): the watches that never had an event (their
 * op deadline is still set) end with status, like sessionless requests;
 * the others wait for a connection as long as it takes. */
void baton__watch_fail_new(baton_async_t *ac, int status)
{
    struct baton__req *r, *next;

    for (r = ac->head; r; r = next) {
        next = r->next;
        if (r->kind != BATON__K_WATCH || r->deadline == 0) continue;
        baton__seterr(ac, "%s", ac->connerr[0] ? ac->connerr : baton_strerror(status));
        end(ac, r, status);
    }
}

/* Observe: did holders[0]'s (session, fence, value) change since what r
 * passed on last? Notes the new one. */
static bool leader_changed(struct baton__req *r, const struct msg_lock_state *st)
{
    const struct msg_holder_v *h = st->n_holders > 0 ? &st->holders[0] : NULL;
    uint64_t session = h ? h->session : 0, fence = h ? h->fence : 0;
    struct pstr v = h ? h->value : (struct pstr){NULL, 0};
    uint8_t *copy = NULL;

    if (r->lead_known && session == r->lead_session && fence == r->lead_fence &&
        v.n == r->value_len && (v.n == 0 || memcmp(v.p, r->value, v.n) == 0))
        return false;
    if (v.n > 0 && (copy = malloc(v.n)) != NULL) memcpy(copy, v.p, v.n);
    free(r->value);
    r->value = copy;
    r->value_len = copy ? v.n : 0;
    /* Out of memory: unknown, so the next event counts as a change. */
    r->lead_known = copy != NULL || v.n == 0;
    r->lead_session = session;
    r->lead_fence = fence;
    return true;
}

/* Queue event e of watch r for its callback. */
static void queue_event(baton_async_t *ac, struct baton__req *r, const struct msg_watch2_event *e)
{
    struct baton__req *q = baton__req_alloc(BATON__K_WEVENT, NULL, 0);

    if (q != NULL && (q->ev = baton__event_new(e)) == NULL) {
        baton__req_free(q);
        q = NULL;
    }
    if (q == NULL) {
        baton__seterr(ac, "watch '%s': out of memory for an event", r->name);
        end(ac, r, BATON_ENOMEM);
        return;
    }
    q->watch = r;
    q->target = r->id;
    baton__queue_done(ac, q);
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static void on_event(baton_async_t *ac, struct baton__req *r, const struct msg_watch2_event *e)
{
    uint64_t rev = e->state.revision;

    r->deadline = 0; /* established: it waits for leaders as long as it takes */
    r->established = true;
    r->state = BATON__R_WAITING;
    switch (e->kind) {
    case WATCH2_PROGRESS:
        r->resume = max_u64(r->resume, rev);
        return;
    case WATCH2_CHANGE:
        if (rev <= r->resume) return; /* delivered before the stream was resumed */
        r->resume = rev;
        if (r->observe && !leader_changed(r, &e->state)) return;
        break;
    case WATCH2_SYNCED:
        r->resume = max_u64(r->resume, rev);
        break;
    case WATCH2_STATE:
    case WATCH2_GAP:
        if (r->observe) (void)leader_changed(r, &e->state);
        break;
    default:
        return; /* a kind this client does not know carries nothing it needs */
    }
    queue_event(ac, r, e);
}

static void on_error(baton_async_t *ac, struct baton__req *r, const struct msg *m)
{
    int code = m->u.error.code < 0 ? m->u.error.code : BATON_EPROTO;

    if (code == BATON_ENOTLEADER || code == BATON_ENOLEADER) {
        baton__conn_err(ac, "watch", baton_err_name(code));
        baton__conn_fail(ac, true);
        return;
    }
    baton__seterr(ac, "watch '%s': %s: %.*s", r->name, baton_err_name(code),
                  (int)m->u.error.message.n, m->u.error.message.p ? m->u.error.message.p : "");
    if (code == BATON_EPERM || !r->established) {
        end(ac, r, code);
        return;
    }
    if (baton__watch_restart(ac, (baton_async_watch_t *)(void *)r, r->resume) != 0) return;
}

bool baton__watch_take(baton_async_t *ac, const struct msg *m)
{
    struct baton__req *r;

    if (ac->n_watch == 0 || m->req_id == 0 ||
        (m->type != MSG_WATCH2_EVENT && m->type != MSG_ERROR))
        return false;
    r = baton__req_find(ac, m->req_id);
    if (r == NULL || r->kind != BATON__K_WATCH) return false;
    if (m->type == MSG_ERROR)
        on_error(ac, r, m);
    else
        on_event(ac, r, &m->u.watch2_event);
    return true;
}

/* Run event entry e's callback, unless its watch has left that stream. */
void baton__watch_deliver(baton_async_t *ac, struct baton__req *e)
{
    struct baton__req *w = e->watch;
    baton_event *ev = e->ev;

    if (w->cancelled || e->target != w->id || w->cb.watch == NULL) return;
    if (w->owned) e->ev = NULL; /* the callback takes it */
    w->cb.watch(ac, 0, ev, w->data);
}

int baton__watch_restart(baton_async_t *ac, baton_async_watch_t *w, uint64_t after)
{
    struct baton__req *r = of(w);

    if (ac == NULL || r == NULL || !r->in_table || !r->user) return 0; /* ending anyway */
    stop_stream(ac, r);
    /* A new id, so that nothing of the old stream is taken for the new. */
    u64map_del(&ac->map, r->id);
    r->id = ac->next_id++;
    if (u64map_put(&ac->map, r->id, r) != 0) {
        baton__seterr(ac, "watch '%s': out of memory", r->name);
        r->state = BATON__R_UNSENT;
        end(ac, r, BATON_ENOMEM);
        return BATON_ENOMEM;
    }
    /* The table stays in id order: r moves to its end. */
    if (r != ac->tail) {
        if (r->prev)
            r->prev->next = r->next;
        else
            ac->head = r->next;
        r->next->prev = r->prev;
        r->prev = ac->tail;
        r->next = NULL;
        ac->tail->next = r;
        ac->tail = r;
    }
    r->resume = after;
    r->state = BATON__R_UNSENT;
    r->established = false;
    baton__try_send(ac, r);
    return 0;
}

/* ---- watches: the public calls ---------------------------------------------------- */

/* A watch's key: a lock name, or with BATON_WATCH_PREFIX a prefix ("" too). */
static bool key_ok(const char *key, size_t n, unsigned flags)
{
    if (flags & BATON_WATCH_PREFIX) return n == 0 || proto_lock_name_ok(key, n);
    return proto_lock_name_ok(key, n);
}

int baton__watch_start(baton_async_t *ac, const char *key, unsigned flags, uint64_t after,
                       bool observe, bool owned, baton_async_watch_cb *cb, void *data,
                       baton_async_watch_t **out)
{
    struct baton__req *r;
    size_t n;

    if (out != NULL) *out = NULL;
    if (ac == NULL || key == NULL || cb == NULL || !ac->attached ||
        (flags & ~(unsigned)BATON_WATCH_PREFIX) != 0)
        return BATON_EINVAL;
    n = strnlen(key, BATON_MAX_NAME + 1);
    if (!key_ok(key, n, flags)) return BATON_EINVAL;
    if (ac->freeing) return BATON_ECLOSED;
    r = baton__req_new(ac, BATON__K_WATCH, key, n);
    if (r == NULL) return BATON_ENOMEM;
    r->wflags = (uint8_t)flags;
    r->observe = observe;
    r->owned = owned;
    r->resume = after;
    r->cb.watch = cb;
    r->data = data;
    r->user = true;
    ac->n_user++;
    ac->n_watch++;
    baton__set_deadline(ac, r, baton__now() + ac->op_timeout_ms);
    if (out != NULL) *out = (baton_async_watch_t *)(void *)r;
    if (ac->cstate == BATON__C_READY)
        baton__watch_send(ac, r);
    else
        baton__conn_start(ac);
    return 0;
}

int baton_async_watch(baton_async_t *ac, const char *key, unsigned flags, uint64_t after,
                      baton_async_watch_cb *cb, void *data, baton_async_watch_t **out)
{
    return baton__watch_start(ac, key, flags, after, false, false, cb, data, out);
}

int baton_async_unwatch(baton_async_t *ac, baton_async_watch_t *w)
{
    struct baton__req *r = of(w);

    if (ac == NULL || r == NULL || r->kind != BATON__K_WATCH) return BATON_EINVAL;
    if (ac->freeing) return BATON_ECLOSED;
    if (!r->in_table || !r->user) return BATON_ENOTFOUND; /* its end is queued already */
    r->cancelled = true;
    baton__seterr(ac, "watch '%s': ended by baton_async_unwatch", r->name);
    end(ac, r, BATON_ECANCELED);
    return 0;
}
