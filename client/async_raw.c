/*
 * async_raw.c -- sessionless requests on the async core.
 *
 * Any C2S message that needs no session (STATUS, LOCK_INFO, LIST_LOCKS,
 * FORCE_RELEASE, SNAPSHOT_SAVE, WATCH, ...) can be sent through the same
 * connection a lock call uses: the core connects, does TLS and HELLO with
 * the token, follows REDIRECT, backs off on NO_LEADER or a broken
 * connection, re-sends what was unanswered on the next connection, and
 * gives up at the request's deadline. batonctl's admin commands run on it
 * through the blocking form (client/call.h); nothing here is public.
 *
 * A request (BATON__K_RAW) is encoded once, with its id as req_id, and the
 * same bytes are written on every connection. The replies are the
 * messages that carry that req_id; an ERROR among them ends the request
 * with its code and the node's message. A stream (WATCH, SNAPSHOT_SAVE)
 * stays in the table after its first reply: later messages with its
 * req_id, and pushes with req_id 0 of the first reply's type (WATCH_EVENT),
 * are its too, until the caller ends it or the connection goes -- a stream
 * is not re-sent elsewhere (the caller decides whether to subscribe
 * again), it ends with BATON_ECLOSED.
 *
 * Every reply is handed over in its own BATON__K_REPLY entry on ac->done,
 * holding the encoded reply, so that the callbacks run at the end of the
 * handler in FIFO order, like every other callback of the core.
 *
 * A raw request is not "silent node" material (async_conn.c): a node may
 * take long to answer CHECK or SNAPSHOT_SAVE, and re-sending those
 * elsewhere would only start them twice; its own deadline bounds it.
 *
 * In one-node mode (baton__set_one_node) the context talks to its first
 * endpoint only: to ask one node for its own STATUS or METRICS. A REDIRECT
 * or NO_LEADER is then a reply like any other, and a connection that
 * fails fails the requests with BATON_EUNAVAIL and the connection's error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/async_int.h"

void baton__set_one_node(baton_async_t *ac)
{
    ac->one_node = true;
    ac->n_eps = 1;
}

int baton__raw_send(baton_async_t *ac, const struct msg *req, bool stream, uint64_t timeout_ms,
                    baton__raw_cb *cb, void *data)
{
    struct baton__req *r;
    struct buf out = {0};
    struct msg m;
    int rv;

    if (ac == NULL || req == NULL || cb == NULL || !ac->attached) return BATON_EINVAL;
    if (ac->freeing) return BATON_ECLOSED;
    r = baton__req_new(ac, BATON__K_RAW, NULL, 0);
    if (r == NULL) return BATON_ENOMEM;
    m = *req;
    m.req_id = r->id;
    rv = proto_encode(&out, &m);
    if (rv != 0) {
        baton__seterr(ac, "could not encode %s: %s", msg_type_name(m.type), baton_strerror(rv));
        buf_free(&out);
        baton__req_remove(ac, r);
        return rv;
    }
    r->frame = out.data;
    r->frame_len = out.len;
    r->stream = stream;
    r->cb.raw = cb;
    r->data = data;
    r->user = true;
    r->wait_ms = (int64_t)timeout_ms;
    ac->n_user++;
    ac->n_raw++;
    baton__set_deadline(ac, r, baton__now() + timeout_ms);
    if (ac->cstate == BATON__C_READY)
        baton__raw_write(ac, r);
    else
        baton__conn_start(ac);
    return 0;
}

/* Queue the encoded request on the connection. */
void baton__raw_write(baton_async_t *ac, struct baton__req *r)
{
    if (buf_put(&ac->out, r->frame, r->frame_len) != 0) {
        baton__seterr(ac, "out of memory");
        baton__finish(ac, r, BATON_ENOMEM, 0);
        return;
    }
    baton__want_write(ac);
    baton__req_sent(ac, r);
}

/* r no longer owes its caller anything: take it out quietly. */
static void settle(baton_async_t *ac, struct baton__req *r)
{
    if (r->user) {
        r->user = false;
        ac->n_user--;
    }
    baton__req_remove(ac, r);
}

/* Hand m to r's callback (queued on ac->done, a copy); the last reply
 * settles r. */
static void deliver(baton_async_t *ac, struct baton__req *r, const struct msg *m, bool last)
{
    struct baton__req *e = baton__req_alloc(BATON__K_REPLY, NULL, 0);
    struct buf out = {0};
    struct msg copy = *m;

    copy.req_id = r->id;
    if (e == NULL || proto_encode(&out, &copy) != 0) {
        free(e);
        buf_free(&out);
        baton__seterr(ac, "out of memory");
        baton__finish(ac, r, BATON_ENOMEM, 0);
        return;
    }
    e->frame = out.data;
    e->frame_len = out.len;
    e->cb.raw = r->cb.raw;
    e->data = r->data;
    e->stream = last; /* a K_REPLY's `stream` says: the last one */
    baton__queue_done(ac, e);
    if (last) settle(ac, r);
}

/* The K_RAW request a message answers, or NULL. */
static struct baton__req *owner(baton_async_t *ac, const struct msg *m)
{
    struct baton__req *r;

    if (ac->n_raw == 0) return NULL;
    if (m->req_id != 0) {
        r = baton__req_find(ac, m->req_id);
        return r != NULL && r->kind == BATON__K_RAW ? r : NULL;
    }
    for (r = ac->head; r; r = r->next)
        if (r->kind == BATON__K_RAW && r->stream && r->state == BATON__R_WAITING &&
            r->push_type == m->type)
            return r;
    return NULL;
}

/*
 * A message arrived on a ready connection. If it answers a sessionless
 * request, handle it and return true; else false (the connection and the
 * session code deal with it).
 */
bool baton__raw_take(baton_async_t *ac, const struct msg *m)
{
    struct baton__req *r = owner(ac, m);

    if (r == NULL) return false;
    if (!ac->one_node && (m->type == MSG_REDIRECT || m->type == MSG_NO_LEADER)) return false;
    if (m->type == MSG_ERROR) {
        int code = m->u.error.code;

        if (!ac->one_node && (code == BATON_ENOTLEADER || code == BATON_ENOLEADER)) {
            baton__conn_err(ac, "request", baton_err_name(code));
            baton__conn_fail(ac, true);
            return true;
        }
        if (m->u.error.message.n > 0)
            baton__seterr(ac, "%s: %.*s", ac->cur_text, (int)m->u.error.message.n,
                          m->u.error.message.p);
        else
            baton__seterr(ac, "%s: %s", ac->cur_text, baton_strerror(code));
        baton__finish(ac, r, code < 0 ? code : BATON_EPROTO, 0);
        return true;
    }
    if (!r->stream) {
        deliver(ac, r, m, true);
        return true;
    }
    if (r->state != BATON__R_WAITING) {
        /* The stream's first reply: from now on it only listens. */
        r->state = BATON__R_WAITING;
        r->push_type = m->type;
        r->deadline = 0;
    }
    deliver(ac, r, m, false);
    return true;
}

/* The caller is done with its streams: they end without another word. */
void baton__raw_end_streams(baton_async_t *ac)
{
    struct baton__req *r, *next;

    for (r = ac->head; r; r = next) {
        next = r->next;
        if (r->kind == BATON__K_RAW && r->stream) settle(ac, r);
    }
}

/* The connection is gone: a stream that was answered on it ends; the
 * rest are re-sent on the next one (async_ops.c, baton__on_conn_lost), or,
 * in one-node mode, fail. */
void baton__raw_conn_lost(baton_async_t *ac)
{
    struct baton__req *r, *next;

    if (ac->one_node) {
        baton__raw_fail_all(ac, BATON_EUNAVAIL);
        return;
    }
    for (r = ac->head; r; r = next) {
        next = r->next;
        if (r->kind != BATON__K_RAW || r->state != BATON__R_WAITING) continue;
        baton__seterr(ac, "%s", ac->connerr[0] ? ac->connerr : "connection lost");
        baton__finish(ac, r, BATON_ECLOSED, 0);
    }
}

/* Fail every sessionless request with status; the message is the last
 * connection error. */
void baton__raw_fail_all(baton_async_t *ac, int status)
{
    struct baton__req *r, *next;

    for (r = ac->head; r; r = next) {
        next = r->next;
        if (r->kind != BATON__K_RAW) continue;
        baton__seterr(ac, "%s", ac->connerr[0] ? ac->connerr : baton_strerror(status));
        baton__finish(ac, r, status, 0);
    }
}

/* r's deadline passed without an answer. */
void baton__raw_expire(baton_async_t *ac, struct baton__req *r)
{
    if (ac->one_node)
        baton__seterr(ac, "%s: no answer within %lld ms", ac->eps[0].text, (long long)r->wait_ms);
    else
        baton__seterr(ac, "no leader answered within %lld ms (last: %s)", (long long)r->wait_ms,
                      ac->connerr[0] ? ac->connerr : "no endpoint tried");
    baton__finish(ac, r, BATON_EUNAVAIL, 0);
}
