/*
 * async_ops.c -- the session and its lock operations: the public calls,
 * the requests they become, and what the cluster's replies and pushes do
 * to them.
 *
 * Timeouts. Each request that owes its caller a callback has an op
 * deadline. It starts when the request is created and restarts whenever
 * the request is sent on a connection known to reach the leader, when that
 * connection is confirmed (for what was sent on it before), and when such a
 * connection is lost (for everything unanswered, which will be re-sent):
 * so a failover restarts the clock, while a search for a leader that keeps
 * getting NO_LEADER or REDIRECT does not. An ACQUIRE answered QUEUED has no
 * op deadline while it waits; a bounded wait (wait_ms > 0) instead has a
 * safety deadline at call time + wait_ms + op_timeout_ms, when the client
 * sends a CANCEL in case the cluster's own WAIT_FAILED got lost.
 *
 * When an op deadline passes the callback gets BATON_ETIMEDOUT if the
 * request was sent on a confirmed connection, BATON_EUNAVAIL otherwise.
 *
 * Abandoned lock calls. A lock call whose callback has run with an error
 * (timeout, cancel) but which the cluster may have queued or granted stays
 * in the table without a caller. A CANCEL is sent for it; if the answer (or
 * a GRANTED push that crossed it) says the session holds the lock, an
 * internal RELEASE gives it back. A RELEASE that timed out likewise stays
 * and is re-sent until the cluster answers it.
 *
 * The session's liveness (keepalives, the lease, held locks, declaring
 * them lost, opening a fresh session) lives in async_session.c; this file
 * feeds it: a grant reported to its caller becomes a held lock
 * (baton__held_add), every acknowledged request renews the lease from its
 * send time (baton__lease_renew), and BATON_ESESSION answers, LOST and
 * SESSION_EXPIRED pushes end up in baton__session_lost or
 * baton__held_lost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/async_int.h"

/* The session requests may be sent (once the session id is known). */
bool baton__session_known(const baton_async_t *ac)
{
    return ac->session != 0 &&
           (ac->sstate == BATON__S_OPEN || ac->sstate == BATON__S_CLOSING);
}

/* The message each request kind is sent as (0: not a request). */
static const uint16_t kind_msg[] = {
    [BATON__K_OPEN] = MSG_OPEN_SESSION, [BATON__K_ACQUIRE] = MSG_ACQUIRE,
    [BATON__K_RELEASE] = MSG_RELEASE,   [BATON__K_CANCEL] = MSG_CANCEL,
    [BATON__K_CLOSE] = MSG_CLOSE_SESSION, [BATON__K_PROCLAIM] = MSG_PROCLAIM,
};

/*
 * The wire form of ACQUIRE r, into m (whose other op fields are filled):
 * the one place that decides it. A request with a value, flags
 * (BATON_ACQ_*: r->acq_flags) or a fence to name (r->acq_fence) goes as
 * ACQUIRE2 (protocol 6), which needs a cluster at feature level 3;
 * without, as the plain ACQUIRE every cluster takes, so that such a lock
 * call is the same frame it always was; a multi-lock as ACQUIRE_MANY
 * (which takes no value: baton__lock_args_ok). Owners set acq_flags and
 * acq_fence when the request is made; nothing else here changes.
 */
static void acquire_encode(const struct baton__req *r, struct msg *m)
{
    m->u.op.fence = r->acq_fence;
    m->u.op.flags = r->acq_flags;
    m->u.op.value = (struct pstr){(const char *)r->value, (uint16_t)r->value_len};
    if (r->n_more > 0)
        m->type = MSG_ACQUIRE_MANY;
    else if (r->value_len > 0 || r->acq_flags != 0 || r->acq_fence != 0)
        m->type = MSG_ACQUIRE2;
    else
        m->type = MSG_ACQUIRE;
}

void baton__req_sent(baton_async_t *ac, struct baton__req *r)
{
    r->state = BATON__R_SENT;
    r->sent_gen = ac->gen;
    r->sent_at = baton__now();
    r->ever_sent = true;
}

/* Encode r and queue it on the current connection. The session's requests
 * share one body (struct msg_op): every field is filled, and each message
 * type puts only its own on the wire (proto/msg_table.h). */
void baton__req_send(baton_async_t *ac, struct baton__req *r)
{
    struct msg m = {.req_id = r->id};
    struct msg_seq keep[BATON_MAX_KEEP];
    uint32_t n_keep;
    int rv;

    if (r->kind == BATON__K_WATCH) {
        baton__watch_send(ac, r);
        return;
    }
    if ((size_t)r->kind >= sizeof kind_msg / sizeof kind_msg[0] || kind_msg[r->kind] == 0) return;
    m.type = kind_msg[r->kind];
    if (r->kind == BATON__K_OPEN) {
        m.u.open_session.ttl_ms = ac->session_ttl_ms;
        m.u.open_session.client_name.p = ac->client_name;
        m.u.open_session.client_name.n = (uint16_t)strlen(ac->client_name);
        m.u.open_session.nonce = r->nonce;
    } else {
        uint64_t ack_below = baton__acks(ac, keep, &n_keep);
        m.u.op = (struct msg_op){
            .session = ac->session,
            .seq = r->id,
            .ack_below = ack_below,
            .n_keep = n_keep,
            .keep = keep,
            .wait_ms = r->wait_ms,
            .lock_delay_ms = r->lock_delay_ms,
            .mode = r->mode,
            .limit = r->limit,
            .reentrant = r->reentrant,
            .fence = r->fence,
            .waiter = r->target,
            .lock = {r->name, r->name_len},
            .n_more = r->n_more,
            .more = r->more,
            .value = {(const char *)r->value, (uint16_t)r->value_len},
        };
        if (r->kind == BATON__K_ACQUIRE) acquire_encode(r, &m);
    }
    rv = baton__send_msg(ac, &m);
    if (rv != 0) {
        /* Only ENOMEM is possible here: names were checked on entry. */
        baton__seterr(ac, "could not encode %s: %s", msg_type_name(m.type), baton_strerror(rv));
        baton__finish(ac, r, rv, 0);
        return;
    }
    baton__req_sent(ac, r);
    if (ac->confirmed && r->deadline && r->kind != BATON__K_OPEN)
        baton__set_deadline(ac, r, baton__now() + ac->op_timeout_ms);
}

/* Would ACQUIRE r, sent now, run BATON_MAX_UNACKED or more ahead of the
 * session's acknowledgement (async_int.h, "How far ahead the client
 * runs")? */
static bool too_far_ahead(const baton_async_t *ac, const struct baton__req *r)
{
    struct msg_seq keep[BATON_MAX_KEEP];
    uint32_t n_keep;
    uint64_t ack;

    if (r->kind != BATON__K_ACQUIRE) return false;
    ack = baton__acks(ac, keep, &n_keep);
    return r->id >= ack && r->id - ack >= BATON_MAX_UNACKED; /* a kept one is below ack */
}

/* Send r now if the connection and the session allow it; otherwise it
 * stays UNSENT and baton__flush_unsent (or, for an ACQUIRE held back,
 * baton__flush_held) sends it later. */
void baton__try_send(baton_async_t *ac, struct baton__req *r)
{
    if (ac->cstate != BATON__C_READY) return;
    if (r->kind == BATON__K_RAW) {
        baton__raw_write(ac, r);
        return;
    } else if (r->kind == BATON__K_WATCH) {
        baton__watch_send(ac, r);
        return;
    } else if (r->kind == BATON__K_OPEN) {
        /* Still wanted after a close_session made while opening: the
         * CLOSE_SESSION needs the session id. */
        if (ac->session != 0 ||
            (ac->sstate != BATON__S_OPENING && ac->sstate != BATON__S_CLOSING))
            return;
    } else if (!baton__session_known(ac)) {
        return;
    } else if (too_far_ahead(ac, r)) {
        if (ac->held_id == 0 || r->id < ac->held_id) ac->held_id = r->id;
        return;
    }
    baton__req_send(ac, r);
}

/* Send the ACQUIREs held back that ack_below now lets go, oldest first:
 * each request is tried once per move of the window, not per message. */
void baton__flush_held(baton_async_t *ac)
{
    struct baton__req *r, *next;

    if (ac->held_id == 0 || ac->cstate != BATON__C_READY || !baton__session_known(ac)) return;
    r = baton__req_find(ac, ac->held_id);
    if (r != NULL && too_far_ahead(ac, r)) return;
    ac->held_id = 0;
    for (r = r != NULL ? r : ac->head; r; r = next) {
        next = r->next;
        if (r->state != BATON__R_UNSENT || r->kind != BATON__K_ACQUIRE) continue;
        if (!r->user && r->cancel_id) continue; /* as baton__flush_unsent */
        baton__try_send(ac, r);
        if (ac->cstate != BATON__C_READY || ac->held_id != 0) return;
    }
}

/* The connection became ready, or the session opened: send, in id order,
 * everything that waits for that. An abandoned lock call with a CANCEL in
 * flight is not re-sent: the CANCEL alone settles it. */
void baton__flush_unsent(baton_async_t *ac)
{
    struct baton__req *r, *next;

    for (r = ac->head; r; r = next) {
        next = r->next;
        if (r->state != BATON__R_UNSENT) continue;
        if (r->kind == BATON__K_ACQUIRE && !r->user && r->cancel_id) continue;
        baton__try_send(ac, r);
        if (ac->cstate != BATON__C_READY) return; /* the send failed the connection */
    }
}

/* The connection is gone: what was sent must be sent again; see the
 * comment at the top for the deadlines. */
void baton__on_conn_lost(baton_async_t *ac, bool was_confirmed)
{
    uint64_t now = baton__now();

    baton__raw_conn_lost(ac);
    for (struct baton__req *r = ac->head; r; r = r->next) {
        if (r->kind == BATON__K_RAW) { /* its own deadline stands */
            r->state = BATON__R_UNSENT;
            continue;
        }
        /* A waiting lock call must hear again in time; a watch that had
         * its events waits for the next leader as long as it takes. */
        if (r->state == BATON__R_WAITING && r->user && r->kind != BATON__K_WATCH)
            baton__set_deadline(ac, r, now + ac->op_timeout_ms);
        r->state = BATON__R_UNSENT;
        if (was_confirmed && r->deadline && r->kind != BATON__K_OPEN)
            baton__set_deadline(ac, r, now + ac->op_timeout_ms);
    }
}

/* A reply only the leader gives arrived: this connection reaches it. */
static void confirm(baton_async_t *ac)
{
    uint64_t now;

    if (ac->confirmed) return;
    ac->confirmed = true;
    ac->redirects_in_row = 0;
    ac->round_fails = 0;
    ac->backoffs = 0;
    if (ac->silenced) return; /* async_conn.c, "A silent node" */
    now = baton__now();
    for (struct baton__req *r = ac->head; r; r = r->next)
        if (r->state == BATON__R_SENT && r->sent_gen == ac->gen && r->deadline &&
            r->kind != BATON__K_OPEN && r->kind != BATON__K_RAW) /* raw: its own bound */
            baton__set_deadline(ac, r, now + ac->op_timeout_ms);
}

/* ---- the session ---------------------------------------------------------------- */

/*
 * The context cannot go on: the first session could not be opened, or the
 * cluster turned out to speak another protocol version. Every held lock
 * is declared lost (nobody keeps its lease alive any more), every pending
 * call fails with status and the connection is closed for good; only
 * baton_async_free remains. The caller has set the error message.
 */
void baton__session_fail(baton_async_t *ac, int status)
{
    baton__held_all_lost(ac);
    ac->sstate = BATON__S_FAILED;
    ac->ka_at = 0;
    baton__fail_all(ac, status, NULL);
    baton__conn_drop(ac);
}

/* CLOSE_SESSION was answered (or given up on, close->status says how):
 * every other call ends with BATON_ECANCELED, then the close itself. */
void baton__session_closed(baton_async_t *ac, struct baton__req *close, int status)
{
    ac->sstate = BATON__S_CLOSED;
    ac->ka_at = 0;
    baton__seterr(ac, "the session was closed");
    baton__fail_all(ac, BATON_ECANCELED, close);
    if (status < 0) baton__seterr(ac, "close_session: %s", baton_strerror(status));
    baton__finish(ac, close, status, 0);
    baton__conn_drop(ac);
}

/* Opening the session failed with status (the caller set the message).
 * The first session's failure ends the context; a fresh session's failure
 * fails only the calls waiting for it, and the next call tries again. */
static void open_failed(baton_async_t *ac, struct baton__req *r, int status)
{
    if (!r->reopen || status == BATON_EVERSION) {
        baton__session_fail(ac, status);
        return;
    }
    ac->sstate = BATON__S_GONE;
    baton__finish(ac, r, status, 0);
    baton__fail_all(ac, status, NULL);
    baton__conn_drop(ac);
}

/* A node refused this client for good (async_conn.c, baton__conn_refused)
 * while a session is being opened: that open fails with status. Returns
 * false, doing nothing, when no open is pending. */
bool baton__open_refused(baton_async_t *ac, int status)
{
    for (struct baton__req *r = ac->head; r; r = r->next)
        if (r->kind == BATON__K_OPEN) {
            open_failed(ac, r, status);
            return true;
        }
    return false;
}

/* SESSION arrived for OPEN request r: the session is open (or, if
 * close_session was called meanwhile, open and closing). */
static void on_session(baton_async_t *ac, struct baton__req *r, uint64_t session, uint32_t ttl)
{
    if (session == 0) {
        baton__seterr(ac, "the cluster opened session 0");
        baton__session_fail(ac, BATON_EPROTO);
        return;
    }
    ac->session = session;
    ac->ttl_ms = ttl ? ttl : ac->session_ttl_ms;
    if (ac->sstate == BATON__S_OPENING) ac->sstate = BATON__S_OPEN;
    r->fence = session; /* reported by the open / session callback */
    baton__session_started(ac, r->sent_at);
    baton__finish(ac, r, 0, 0);
    baton__flush_unsent(ac);
}

/* ---- helpers for the lock calls ----------------------------------------------------- */

/* Give back a lock that was granted to an abandoned lock call. */
static void issue_release(baton_async_t *ac, const char *name, size_t n, uint64_t fence)
{
    struct baton__req *r = baton__req_new(ac, BATON__K_RELEASE, name, n);

    if (r == NULL) return; /* the lock stays held until the session ends */
    r->fence = fence;
    baton__try_send(ac, r);
}

/*
 * Acknowledge the cluster's record that the hold of `name` with `fence` was
 * forced away (async_session.c, "Lost holds"): a RELEASE of that fence,
 * which the cluster answers BATON_ELOST and which deletes the record. It
 * owes no caller a callback and is re-sent until answered, like the
 * release of an abandoned grant. Not sent twice: a RELEASE of that hold
 * already in the table (an earlier acknowledgement, or the caller's own
 * unlock) does the same.
 */
void baton__ack_lost(baton_async_t *ac, const char *name, size_t n, uint64_t fence)
{
    for (const struct baton__req *r = ac->head; r; r = r->next)
        if (r->kind == BATON__K_RELEASE && r->fence == fence && r->name_len == n &&
            memcmp(r->name, name, n) == 0)
            return;
    issue_release(ac, name, n, fence);
}

/*
 * Ask the cluster to withdraw lock call t. If the CANCEL wins, t ends with
 * `status`; if the grant wins, with the lock. While t's caller waits, the
 * CANCEL has an op deadline of its own (expiring it fails t).
 */
static int issue_cancel(baton_async_t *ac, struct baton__req *t, int status)
{
    struct baton__req *c = baton__req_new(ac, BATON__K_CANCEL, t->name, t->name_len);

    if (c == NULL) return BATON_ENOMEM;
    c->target = t->id;
    t->cancel_id = c->id;
    t->cancel_status = status;
    if (t->user) baton__set_deadline(ac, c, baton__now() + ac->op_timeout_ms);
    baton__try_send(ac, c);
    return 0;
}

/* Lock call t has been granted with fence. A grant reported to its caller
 * becomes a held lock, until it is unlocked or lost. */
static void granted(baton_async_t *ac, struct baton__req *t, uint64_t fence)
{
    if (t->user) {
        baton__held_add(ac, t, fence);
        baton__finish(ac, t, 0, fence);
    } else {
        issue_release(ac, t->name, t->name_len, fence);
        baton__req_remove(ac, t);
    }
}

/* The text for a refused request: the node's own message when an ERROR
 * brought one (it says what was refused, e.g. for BATON_EPERM), else the
 * code's. */
static const char *why_text(int status, const char *why)
{
    return why != NULL && why[0] != '\0' ? why : baton_strerror(status);
}

/* Lock call t has ended without the lock; why is the node's message, or
 * NULL. */
static void not_granted(baton_async_t *ac, struct baton__req *t, int status, const char *why)
{
    if (t->user) baton__seterr(ac, "lock '%s': %s", t->name, why_text(status, why));
    baton__finish(ac, t, status, 0);
}

/* A reply says the cluster does not know the session (any more). */
static void session_gone(baton_async_t *ac)
{
    baton__seterr(ac, "session %llu: the cluster answered that it is expired or unknown",
                  (unsigned long long)ac->session);
    baton__session_lost(ac);
}

/*
 * The answer to a RELEASE. If it released a lock the context holds, that
 * lock's entry goes; BATON_ELOST says the cluster had forced the lock away
 * (the RELEASE acknowledged that), and an ENOTHELD for a lock that the
 * cluster had said was taken away (a LOST push that crossed the RELEASE)
 * becomes BATON_ELOST too.
 */
static void on_release_result(baton_async_t *ac, struct baton__req *r, int status, int kind,
                              uint64_t value, const char *why)
{
    (void)kind;
    (void)value;
    struct baton__req *h;

    if (status == BATON_ESESSION) {
        session_gone(ac);
        return;
    }
    h = baton__held_find(ac, r->fence, r->name, r->name_len);
    if (h && h->state == BATON__H_RELEASING && h->target == r->id) {
        if (status == BATON_ELOST || (status == BATON_ENOTHELD && h->status < 0)) {
            baton__seterr(ac, "unlock '%s': the cluster had taken the lock away (%s) before "
                          "the release arrived", r->name,
                          baton_strerror(status == BATON_ELOST ? BATON_ELOST : h->status));
            status = BATON_ELOST;
        }
        baton__held_remove(ac, h);
    } else if (status == BATON_ELOST && r->user) {
        baton__seterr(ac, "unlock '%s': an operator had forced the lock's release", r->name);
    }
    if (status < 0 && status != BATON_ELOST && r->user)
        baton__seterr(ac, "unlock '%s': %s", r->name, why_text(status, why));
    baton__finish(ac, r, status, 0);
}

/* ---- replies and pushes ------------------------------------------------------------- */

/* Queue the queued callback's notice for lock call r, now in the lock's
 * queue at 1-based `position`. Best effort: skipped when nobody listens,
 * or when out of memory (nothing else depends on it). */
static void queued_notice(baton_async_t *ac, const struct baton__req *r, uint64_t position)
{
    struct baton__req *n;

    if (ac->queued_cb == NULL) return;
    n = baton__req_alloc(BATON__K_QUEUED, r->name, r->name_len);
    if (n == NULL) return;
    n->fence = position;
    n->data = r->data;
    baton__queue_done(ac, n);
}

/*
 * The answer to an ACQUIRE (first send or re-send). GRANTED and errors end
 * the call; QUEUED makes it wait for its push, re-arming the safety timer
 * of a bounded wait. An abandoned call that turns out queued is withdrawn
 * at once, and one that turns out granted is released.
 */
static void on_acquire_result(baton_async_t *ac, struct baton__req *r, int status, int kind,
                              uint64_t value, const char *why)
{
    if (status == BATON_ESESSION) {
        session_gone(ac);
        return;
    }
    if (status == BATON_EINVAL && value != 0 && why == NULL) {
        /* The state machine's refusal of a limit: value is the lock's. */
        char text[128];
        snprintf(text, sizeof text,
                 value > 1 ? "the lock is a semaphore of %llu (its limit is fixed while it is "
                             "held or waited for; shared requests are refused on a semaphore)"
                           : "the lock is an ordinary lock (limit %llu) while it is held or "
                             "waited for",
                 (unsigned long long)value);
        not_granted(ac, r, status, text);
        return;
    }
    if (status < 0) {
        not_granted(ac, r, status, why);
        return;
    }
    switch (kind) {
    case RESULT_GRANTED:
        granted(ac, r, value);
        return;
    case RESULT_QUEUED:
        r->state = BATON__R_WAITING;
        r->queued = true;
        r->deadline = 0;
        if (r->user) queued_notice(ac, r, value);
        if (!r->user && !r->cancel_id)
            (void)issue_cancel(ac, r, BATON_ECANCELED);
        else if (r->user && r->safety_at && !r->cancel_id)
            baton__sched(ac, r->safety_at);
        return;
    default:
        not_granted(ac, r, BATON_EPROTO, NULL);
        return;
    }
}

/*
 * The answer to a CANCEL for lock call c->target. CANCELLED (or ENOTFOUND:
 * the wait had already ended without a grant) ends the call with the
 * status the cancel was made for; GRANTED means the grant won the race, so
 * the call ends with the lock (or, abandoned, the lock is released).
 */
static void on_cancel_result(baton_async_t *ac, struct baton__req *c, int status, int kind,
                             uint64_t value, const char *why)
{
    struct baton__req *t = baton__req_find(ac, c->target);
    uint64_t cid = c->id;

    baton__req_remove(ac, c); /* c is gone from here on */
    if (status == BATON_ESESSION) {
        session_gone(ac);
        return;
    }
    /* No target: it ended meanwhile (a push or its own reply came first). */
    if (t == NULL || t->kind != BATON__K_ACQUIRE) return;
    if (t->cancel_id == cid) t->cancel_id = 0;
    if (status == 0 && kind == RESULT_GRANTED)
        granted(ac, t, value);
    else if ((status == 0 && kind == RESULT_CANCELLED) || status == BATON_ENOTFOUND)
        not_granted(ac, t, t->cancel_status ? t->cancel_status : BATON_ECANCELED, NULL);
    else
        not_granted(ac, t, status < 0 ? status : BATON_EPROTO, why);
}

static void on_open_result(baton_async_t *ac, struct baton__req *r, int status, int kind,
                           uint64_t value, const char *why)
{
    (void)kind;
    if (status == 0) {
        on_session(ac, r, value, 0);
    } else {
        baton__seterr(ac, "open session: %s", why_text(status, why));
        open_failed(ac, r, status);
    }
}

static void on_close_result(baton_async_t *ac, struct baton__req *r, int status, int kind,
                            uint64_t value, const char *why)
{
    (void)kind;
    (void)value;
    (void)why;
    /* ESESSION: the cluster had already forgotten it; closed either way. */
    baton__session_closed(ac, r, status == BATON_ESESSION ? 0 : status);
}

/* The answer to a PROCLAIM: its status is the caller's (BATON_ENOTHELD,
 * BATON_ELOST: the hold is not this session's any more). */
static void on_proclaim_result(baton_async_t *ac, struct baton__req *r, int status, int kind,
                               uint64_t value, const char *why)
{
    (void)kind;
    (void)value;
    if (status == BATON_ESESSION) {
        session_gone(ac);
        return;
    }
    if (status < 0 && r->user) baton__seterr(ac, "proclaim '%s': %s", r->name, why_text(status, why));
    baton__finish(ac, r, status, 0);
}

/* status, kind and value are a RESULT's; why is the node's message when an
 * ERROR came instead (status = its code), else NULL. */
typedef void result_fn(baton_async_t *ac, struct baton__req *r, int status, int kind,
                       uint64_t value, const char *why);

/* What ends each kind of request. */
static result_fn *const result_handlers[] = {
    [BATON__K_OPEN] = on_open_result,       [BATON__K_ACQUIRE] = on_acquire_result,
    [BATON__K_RELEASE] = on_release_result, [BATON__K_CANCEL] = on_cancel_result,
    [BATON__K_CLOSE] = on_close_result,     [BATON__K_PROCLAIM] = on_proclaim_result,
};

/* The outcome of request r: a RESULT, or an ERROR the server sent instead
 * (status = its code, why = its message). */
static void on_result(baton_async_t *ac, struct baton__req *r, int status, int kind, uint64_t value,
                      const char *why)
{
    if ((size_t)r->kind < sizeof result_handlers / sizeof result_handlers[0] &&
        result_handlers[r->kind] != NULL)
        result_handlers[r->kind](ac, r, status, kind, value, why);
}

/* A GRANTED or WAIT_FAILED push for waiter `waiter` of the session. Pushes
 * for waiters the client no longer tracks are ignored: they are answered
 * already (for instance a CANCEL reply reported the grant first). */
static void on_push(baton_async_t *ac, uint64_t session, uint64_t waiter, bool grant, int status,
                    uint64_t fence)
{
    struct baton__req *r;

    if (session != ac->session) return;
    r = baton__req_find(ac, waiter);
    if (r == NULL || r->kind != BATON__K_ACQUIRE) return;
    if (grant)
        granted(ac, r, fence);
    else
        not_granted(ac, r, status < 0 ? status : BATON_EPROTO, NULL);
}

/* Every message past HELLO except REDIRECT and NO_LEADER
 * (async_conn.c handles those). */
void baton__on_msg(baton_async_t *ac, const struct msg *m)
{
    struct baton__req *r;

    switch (m->type) {
    case MSG_SESSION:
        confirm(ac);
        r = baton__req_find(ac, m->req_id);
        if (r && r->kind == BATON__K_OPEN) on_session(ac, r, m->u.session.session, m->u.session.ttl_ms);
        return;
    case MSG_RESULT:
        confirm(ac);
        if (baton__is_keepalive_id(m->req_id)) {
            baton__on_keepalive_reply(ac, m->req_id, m->u.result.status,
                                      m->u.result.status == 0 ? m->u.result.value : 0);
            return;
        }
        r = baton__req_find(ac, m->req_id);
        if (r == NULL) return;
        /* The cluster renewed the lease when this request arrived, which
         * was after it was sent. */
        if (r->kind != BATON__K_OPEN && m->u.result.status != BATON_ESESSION &&
            baton__session_known(ac))
            baton__lease_renew(ac, r->sent_at);
        on_result(ac, r, m->u.result.status, m->u.result.kind, m->u.result.value, NULL);
        return;
    case MSG_GRANTED:
        confirm(ac);
        on_push(ac, m->u.push.session, m->u.push.waiter, true, 0, m->u.push.fence);
        return;
    case MSG_WAIT_FAILED:
        confirm(ac);
        on_push(ac, m->u.push.session, m->u.push.waiter, false,
                m->u.push.status, 0);
        return;
    case MSG_LOST:
        confirm(ac);
        baton__on_lost_push(ac, m);
        return;
    case MSG_LOST_HOLDS_R:
        confirm(ac);
        baton__on_lost_holds(ac, m);
        return;
    case MSG_SESSION_EXPIRED:
        confirm(ac);
        if (m->u.session_expired.session != ac->session || !baton__session_known(ac)) return;
        baton__seterr(ac, "session %llu expired in the cluster (its lease ran out there)",
                      (unsigned long long)ac->session);
        baton__session_lost(ac);
        return;
    case MSG_ERROR:
        if (baton__is_keepalive_id(m->req_id)) {
            /* A refused keepalive: only "not the leader" (the connection
             * is the wrong one) and "no such session" matter; otherwise
             * the lease simply is not renewed. */
            baton__on_lost_holds_error(ac, m->req_id); /* if it was a LOST_HOLDS */
            if (m->u.error.code == BATON_ENOTLEADER || m->u.error.code == BATON_ENOLEADER) {
                baton__seterr(ac, "keepalive: %s", baton_err_name(m->u.error.code));
                baton__conn_fail(ac, true);
            } else if (m->u.error.code == BATON_ESESSION) {
                baton__on_keepalive_reply(ac, m->req_id, BATON_ESESSION, 0);
            }
            return;
        }
        r = baton__req_find(ac, m->req_id);
        if (r == NULL) return; /* a late answer to something already settled */
        {
            char why[BATON_MAX_ERRMSG + 64];

            snprintf(why, sizeof why, "%s: %.*s", baton_err_name(m->u.error.code),
                     (int)m->u.error.message.n, m->u.error.message.p ? m->u.error.message.p : "");
            baton__seterr(ac, "%s", why);
            if (m->u.error.code == BATON_ENOTLEADER || m->u.error.code == BATON_ENOLEADER) {
                baton__conn_fail(ac, true);
                return;
            }
            on_result(ac, r, m->u.error.code < 0 ? m->u.error.code : BATON_EPROTO, 0, 0, why);
        }
        return;
    default:
        return; /* replies to requests this client does not make */
    }
}

/* ---- timers ----------------------------------------------------------------------- */

/* r's op deadline passed. Returns false if the whole table was reset (the
 * session failed or closed), so the caller must stop iterating. */
static bool expire(baton_async_t *ac, struct baton__req *r)
{
    bool timedout = r->state == BATON__R_SENT && r->sent_gen == ac->gen && ac->confirmed;
    bool held = r->state == BATON__R_UNSENT && ac->cstate == BATON__C_READY &&
                baton__session_known(ac) && too_far_ahead(ac, r);
    int status = held ? BATON_ELIMIT : timedout ? BATON_ETIMEDOUT : BATON_EUNAVAIL;
    struct baton__req *t;

    r->deadline = 0;
    if (held)
        baton__seterr(ac, "lock '%s': not sent within %u ms: the session has %u requests since "
                      "the oldest one the cluster has not answered (or the oldest of more than "
                      "%u waiting locks), the most it may have",
                      r->name, ac->op_timeout_ms, BATON_MAX_UNACKED, BATON_MAX_KEEP);
    else if (timedout)
        baton__seterr(ac, "no answer from the leader within %u ms", ac->op_timeout_ms);
    else
        baton__seterr(ac, "no leader reachable for %u ms (last error: %s)", ac->op_timeout_ms,
                      ac->connerr[0] ? ac->connerr : "none");
    switch (r->kind) {
    case BATON__K_OPEN:
        baton__seterr(ac, "no leader reachable within %u ms (last error: %s)",
                      ac->connect_timeout_ms, ac->connerr[0] ? ac->connerr : "none");
        open_failed(ac, r, BATON_EUNAVAIL);
        return false;
    case BATON__K_ACQUIRE:
        baton__req_complete(ac, r, status, 0);
        if (!r->ever_sent)
            baton__req_remove(ac, r);
        else if (!r->cancel_id)
            (void)issue_cancel(ac, r, BATON_ECANCELED);
        return true;
    case BATON__K_RELEASE:
        baton__req_complete(ac, r, status, 0); /* and keep trying */
        return true;
    case BATON__K_CANCEL:
        t = baton__req_find(ac, r->target);
        if (t && t->user) baton__req_complete(ac, t, status, 0);
        return true;
    case BATON__K_CLOSE:
        baton__session_closed(ac, r, status);
        return false;
    case BATON__K_RAW:
        baton__raw_expire(ac, r);
        return true;
    case BATON__K_PROCLAIM:
        /* Applied or not, the caller is told it is unknown; nothing to
         * retry for: the holder proclaims again if it must. */
        baton__finish(ac, r, status, 0);
        return true;
    case BATON__K_WATCH:
        baton__watch_expire(ac, r, status);
        return true;
    default:
        return true;
    }
}

/* Timer fired: expire the requests whose op deadline passed, and CANCEL
 * the bounded waits whose safety deadline passed. */
void baton__ops_check_timers(baton_async_t *ac, uint64_t now)
{
    struct baton__req *r, *next;

    for (r = ac->head; r; r = next) {
        next = r->next;
        if (r->deadline && now >= r->deadline) {
            if (!expire(ac, r)) return;
        } else if (r->kind == BATON__K_ACQUIRE && r->user && r->state == BATON__R_WAITING &&
                   r->safety_at && !r->cancel_id && now >= r->safety_at) {
            baton__seterr(ac, "lock '%s': no answer %lld ms after the wait should have ended", r->name,
                          (long long)ac->op_timeout_ms);
            if (issue_cancel(ac, r, BATON_ETIMEDOUT) != 0) r->safety_at = now + 100;
        }
    }
}

/* The earliest deadline of any request (0: none). A linear scan; it runs
 * only after the timer fired or when no timer is armed (async.c). */
uint64_t baton__ops_next_timer(const baton_async_t *ac)
{
    uint64_t next = 0;

    for (const struct baton__req *r = ac->head; r; r = r->next) {
        uint64_t t = r->deadline;
        if (r->kind == BATON__K_ACQUIRE && r->user && r->state == BATON__R_WAITING && r->safety_at &&
            !r->cancel_id && (t == 0 || r->safety_at < t))
            t = r->safety_at;
        if (t && (next == 0 || t < next)) next = t;
    }
    return next;
}

/* ---- public calls ----------------------------------------------------------------- */

/* Refuse new session calls when there is no session to make them in; when
 * the last session ended, start opening a fresh one for them. */
static int check_session(baton_async_t *ac)
{
    if (ac->freeing) return BATON_ECLOSED;
    switch (ac->sstate) {
    case BATON__S_OPENING:
    case BATON__S_OPEN:
        return 0;
    case BATON__S_GONE:
        return baton__session_reopen(ac);
    case BATON__S_CLOSING:
    case BATON__S_CLOSED:
        return BATON_ECLOSED;
    default:
        return BATON_ESESSION;
    }
}

static int check_name(const char *name, size_t *n)
{
    if (name == NULL) return BATON_EINVAL;
    *n = strnlen(name, BATON_MAX_NAME + 1);
    return proto_lock_name_ok(name, *n) ? 0 : BATON_EINVAL;
}

/* r is a call of the user's: it counts as pending (baton_async_pending)
 * and its callback gets data. */
static void user_call(baton_async_t *ac, struct baton__req *r, void *data)
{
    r->user = true;
    ac->n_user++;
    r->data = data;
}

int baton_async_open(baton_async_t *ac, baton_async_open_cb *cb, void *data)
{
    struct baton__req *r;

    if (ac == NULL || !ac->attached) return BATON_EINVAL;
    if (ac->freeing) return BATON_ECLOSED;
    if (ac->opened) return BATON_EBUSY;
    r = baton__req_new(ac, BATON__K_OPEN, NULL, 0);
    if (r == NULL) return BATON_ENOMEM;
    user_call(ac, r, data);
    r->cb.open = cb;
    r->nonce = baton__nonce(ac);
    ac->opened = true;
    ac->sstate = BATON__S_OPENING;
    baton__set_deadline(ac, r, baton__now() + ac->connect_timeout_ms);
    baton__conn_start(ac);
    return 0;
}

int baton_async_lock(baton_async_t *ac, const char *name, int64_t wait_ms, baton_async_lock_cb *cb,
                     void *data)
{
    baton_lock_args a = {.wait_ms = wait_ms, .lock_delay_ms = BATON_LOCK_DELAY_DEFAULT};
    return baton_async_lock_with(ac, name, &a, cb, data);
}

bool baton__lock_args_ok(const baton_lock_args *a, bool many, size_t n)
{
    struct lockreq r = {.wait_ms = a->wait_ms, .lock_delay_ms = a->lock_delay_ms,
                        .mode = a->mode, .limit = a->limit, .reentrant = a->reentrant,
                        .many = many, .n_names = n};
    const char *why;

    if (many && a->value_len > 0) return false; /* a value is one name's */
    return lockreq_check(&r, &why) == 0;
}

/* Start a lock call on name[0..n), checked, with *a checked; a multi-lock
 * also carries its more names (taken over, freed on every path). */
static int lock_start(baton_async_t *ac, const char *name, size_t n, const baton_lock_args *a,
                      struct msg_lock_name *more, uint32_t n_more, baton_async_lock_cb *cb,
                      void *data)
{
    struct baton__req *r;
    uint64_t now;
    int rv = check_session(ac);

    if (rv != 0) {
        free(more);
        return rv;
    }
    r = baton__req_new(ac, BATON__K_ACQUIRE, name, n);
    if (r == NULL) {
        free(more);
        return BATON_ENOMEM;
    }
    r->more = more;
    r->n_more = n_more;
    if (a->value_len > 0) {
        r->value = malloc(a->value_len);
        if (r->value == NULL) {
            baton__req_remove(ac, r);
            return BATON_ENOMEM;
        }
        memcpy(r->value, a->value, a->value_len);
        r->value_len = a->value_len;
    }
    r->wait_ms = a->wait_ms;
    r->lock_delay_ms = a->lock_delay_ms;
    r->mode = a->mode;
    r->limit = a->limit;
    r->reentrant = a->reentrant;
    /* Reserve the held-lock entry now: a grant must never fail for want
     * of memory. Then claim the names for the call's owner. */
    r->held = baton__req_alloc(BATON__K_HELD, name, n);
    rv = r->held == NULL ? BATON_ENOMEM : baton__owners_claim(ac, r, a->owner);
    if (rv == BATON_ENOMEM) {
        baton__req_remove(ac, r);
        return BATON_ENOMEM;
    }
    user_call(ac, r, data);
    r->cb.lock = cb;
    if (rv != 0) { /* this owner's own lock: the callback says so, at once */
        baton__seterr(ac, "lock '%s': %s", r->name,
                      rv == BATON__OWNERS_WAITS
                          ? "this owner waits for it: a reentrant call needs its hold"
                          : "this owner already holds or waits for it (baton_lock_args."
                            "reentrant adds a handle to its hold)");
        baton__finish(ac, r, BATON_EDEADLK, 0);
        return 0;
    }
    now = baton__now();
    if (a->wait_ms > 0) r->safety_at = now + (uint64_t)a->wait_ms + ac->op_timeout_ms;
    baton__set_deadline(ac, r, now + ac->op_timeout_ms);
    baton__try_send(ac, r);
    return 0;
}

int baton_async_lock_with(baton_async_t *ac, const char *name, const baton_lock_args *a,
                          baton_async_lock_cb *cb, void *data)
{
    size_t n;

    int rv;

    if (ac == NULL || a == NULL || check_name(name, &n) != 0 || !baton__lock_args_ok(a, false, 1))
        return BATON_EINVAL;
    rv = baton__value_check(a->value, a->value_len);
    if (rv != 0) return rv;
    return lock_start(ac, name, n, a, NULL, 0, cb, data);
}

/*
 * The names after the first of a multi-lock, checked (legal, none
 * repeated) and copied into one malloc'd block: n - 1 pstrs, then their
 * bytes. 0, BATON_EINVAL or BATON_ENOMEM.
 */
static int copy_more(const char *const *names, size_t n, struct msg_lock_name **out)
{
    size_t len[BATON_MAX_MANY], bytes = 0;
    struct msg_lock_name *more;
    const char *why;
    char *p;

    if (n < 2 || n > BATON_MAX_MANY) return BATON_EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (names[i] == NULL) return BATON_EINVAL;
        len[i] = strnlen(names[i], BATON_MAX_NAME + 1);
        bytes += len[i];
    }
    if (lockreq_names_check(n, names, len, &why) != 0) return BATON_EINVAL;
    more = malloc((n - 1) * sizeof *more + bytes);
    if (more == NULL) return BATON_ENOMEM;
    p = (char *)(more + (n - 1));
    for (size_t i = 1; i < n; i++) {
        memcpy(p, names[i], len[i]);
        more[i - 1].name.p = p;
        more[i - 1].name.n = (uint16_t)len[i];
        p += len[i];
    }
    *out = more;
    return 0;
}

int baton_async_lock_many(baton_async_t *ac, const char *const *names, size_t n,
                          const baton_lock_args *a, baton_async_lock_cb *cb, void *data)
{
    baton_lock_args dflt = {.wait_ms = BATON_WAIT_FOREVER};
    struct msg_lock_name *more = NULL;
    size_t first;
    int rv;

    if (a == NULL) a = &dflt;
    if (ac == NULL || names == NULL || !baton__lock_args_ok(a, true, n)) return BATON_EINVAL;
    if (n == 1) return baton_async_lock_with(ac, names[0], a, cb, data);
    rv = copy_more(names, n, &more);
    if (rv != 0) return rv;
    first = strlen(names[0]); /* checked by copy_more */
    return lock_start(ac, names[0], first, a, more, (uint32_t)(n - 1), cb, data);
}

int baton_async_cancel(baton_async_t *ac, const char *name, void *data)
{
    struct baton__req *r, *next;
    int found = 0, rv = 0;
    size_t n;

    if (ac == NULL || check_name(name, &n) != 0) return BATON_EINVAL;
    if (ac->freeing) return BATON_ECLOSED;
    for (r = ac->head; r; r = next) {
        next = r->next;
        if (r->kind != BATON__K_ACQUIRE || !r->user || r->data != data || r->name_len != n ||
            memcmp(r->name, name, n) != 0)
            continue;
        found++;
        if (!r->ever_sent) {
            baton__seterr(ac, "lock '%s': canceled", r->name);
            baton__finish(ac, r, BATON_ECANCELED, 0);
        } else if (!r->cancel_id) {
            if (issue_cancel(ac, r, BATON_ECANCELED) != 0) rv = BATON_ENOMEM;
        }
    }
    if (rv != 0) return rv;
    return found ? 0 : BATON_ENOTFOUND;
}

/*
 * A lock declared lost is only forgotten (BATON_ELOST, no I/O). A lock the
 * context holds becomes RELEASING until the cluster answers. A lock it
 * does not know is released all the same (the cluster decides), except
 * while there is no session at all: then it cannot be held.
 */
int baton_async_unlock(baton_async_t *ac, const char *name, uint64_t fence, baton_async_done_cb *cb,
                       void *data)
{
    struct baton__req *r, *h;
    size_t n;
    int rv;

    if (ac == NULL || check_name(name, &n) != 0) return BATON_EINVAL;
    if (ac->freeing) return BATON_ECLOSED;
    h = baton__held_find(ac, fence, name, n);
    if (h && h->state == BATON__H_LOST) {
        baton__seterr(ac, "unlock '%s': the lock was lost (%s); nothing to release", h->name,
                      baton_strerror(h->status));
        baton__held_remove(ac, h);
        return BATON_ELOST;
    }
    if (h == NULL && ac->sstate == BATON__S_GONE) {
        r = baton__req_alloc(BATON__K_RELEASE, name, n);
        if (r == NULL) return BATON_ENOMEM;
        user_call(ac, r, data);
        r->cb.done = cb;
        baton__seterr(ac, "unlock '%s': the context has no session, so it holds no lock", name);
        baton__req_complete(ac, r, BATON_ENOTHELD, 0);
        return 0;
    }
    rv = check_session(ac);
    if (rv != 0) return rv;
    r = baton__req_new(ac, BATON__K_RELEASE, name, n);
    if (r == NULL) return BATON_ENOMEM;
    user_call(ac, r, data);
    r->cb.done = cb;
    r->fence = fence;
    if (h && h->state == BATON__H_HELD) {
        h->state = BATON__H_RELEASING;
        h->target = r->id;
    }
    baton__set_deadline(ac, r, baton__now() + ac->op_timeout_ms);
    baton__try_send(ac, r);
    return 0;
}

int baton_async_close_session(baton_async_t *ac, baton_async_done_cb *cb, void *data)
{
    struct baton__req *r;
    bool gone;
    int rv;

    if (ac == NULL) return BATON_EINVAL;
    gone = ac->sstate == BATON__S_GONE && !ac->freeing;
    if (!gone && (rv = check_session(ac)) != 0) return rv;
    r = baton__req_new(ac, BATON__K_CLOSE, NULL, 0);
    if (r == NULL) return BATON_ENOMEM;
    user_call(ac, r, data);
    r->cb.done = cb;
    if (gone) {
        /* No session to close: done at once (the callback runs from the
         * loop). */
        baton__session_closed(ac, r, 0);
        return 0;
    }
    ac->sstate = BATON__S_CLOSING;
    baton__set_deadline(ac, r, baton__now() + ac->op_timeout_ms);
    baton__try_send(ac, r);
    return 0;
}

/*
 * Like an unlock, a proclaim of a lock declared lost is answered at once
 * (BATON_ELOST, the entry stays for the unlock), and one made while the
 * context has no session holds nothing (BATON_ENOTHELD). Otherwise it is a
 * session op with its seq, re-sent with it until answered.
 */
int baton_async_proclaim(baton_async_t *ac, const char *name, uint64_t fence, const void *value,
                         size_t len, baton_async_done_cb *cb, void *data)
{
    struct baton__req *r, *h;
    size_t n;
    int rv;

    if (ac == NULL || check_name(name, &n) != 0) return BATON_EINVAL;
    rv = baton__value_check(value, len);
    if (rv != 0) return rv;
    if (ac->freeing) return BATON_ECLOSED;
    h = baton__held_find(ac, fence, name, n);
    if (h && h->state == BATON__H_LOST) {
        baton__seterr(ac, "proclaim '%s': the lock was lost (%s)", h->name,
                      baton_strerror(h->status));
        return BATON_ELOST;
    }
    if (ac->sstate == BATON__S_GONE) {
        baton__seterr(ac, "proclaim '%s': the context has no session, so it holds no lock", name);
        return BATON_ENOTHELD;
    }
    rv = check_session(ac);
    if (rv != 0) return rv;
    r = baton__req_new(ac, BATON__K_PROCLAIM, name, n);
    if (r == NULL) return BATON_ENOMEM;
    if (len > 0) {
        r->value = malloc(len);
        if (r->value == NULL) {
            baton__req_remove(ac, r);
            return BATON_ENOMEM;
        }
        memcpy(r->value, value, len);
        r->value_len = len;
    }
    user_call(ac, r, data);
    r->cb.done = cb;
    r->fence = fence;
    baton__set_deadline(ac, r, baton__now() + ac->op_timeout_ms);
    baton__try_send(ac, r);
    return 0;
}
