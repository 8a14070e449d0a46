/*
 * call.c -- the blocking form of sessionless requests (client/call.h):
 * an async context on a private libuv loop, run until the reply is in.
 *
 * The core hands every reply (or the failure) to on_reply at the end of
 * a handler; on_reply keeps its own copy on the caller's queue, and the
 * blocking calls run the loop until the queue has something. A call's
 * timeout is the core's deadline for the request; a stream's wait for its
 * next reply is bounded by a timer of the loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "baton/adapters/libuv.h"
#include "client/async_int.h"
#include "client/call.h"

struct entry {
    struct entry *next;
    int status;
    bool last;
    struct baton__reply rep;
    char *errmsg;
};

struct baton__caller {
    uv_loop_t loop;
    uv_timer_t wait;         /* bounds baton__call_next */
    bool waited_out;
    baton_async_t *ac;
    bool open;               /* a call's last reply is still to come */
    struct entry *head, *tail;
    char errmsg[BATON_ERRMSG_SIZE];
};

void baton__reply_free(struct baton__reply *r)
{
    if (r == NULL) return;
    if (r->frame != NULL) msg_free(&r->m);
    free(r->frame);
    r->frame = NULL;
    memset(&r->m, 0, sizeof r->m);
}

/* A copy of m that owns its bytes. */
static int reply_copy(const struct msg *m, struct baton__reply *rep)
{
    struct buf out = {0};

    memset(rep, 0, sizeof *rep);
    if (proto_encode(&out, m) != 0 || proto_decode(out.data, out.len, &rep->m) != 0) {
        buf_free(&out);
        return BATON_ENOMEM;
    }
    rep->frame = out.data;
    return 0;
}

static void on_reply(baton_async_t *ac, int status, const struct msg *m, bool last, void *data)
{
    baton__caller *c = data;
    struct entry *e = calloc(1, sizeof *e);

    if (e == NULL) return; /* the call then ends at its deadline */
    e->status = status;
    e->last = last;
    if (status == 0 && reply_copy(m, &e->rep) != 0) e->status = BATON_ENOMEM;
    if (e->status < 0) {
        e->errmsg = strdup(status < 0 ? baton_async_errmsg(ac) : "out of memory");
        e->last = true;
    }
    if (c->tail)
        c->tail->next = e;
    else
        c->head = e;
    c->tail = e;
}

static void drop_queue(baton__caller *c)
{
    while (c->head) {
        struct entry *e = c->head;
        c->head = e->next;
        baton__reply_free(&e->rep);
        free(e->errmsg);
        free(e);
    }
    c->tail = NULL;
}

int baton__caller_new(const baton_opts *o, bool one_node, baton__caller **out, char *err,
                      size_t errlen)
{
    baton__caller *c = calloc(1, sizeof *c);
    int rv;

    *out = NULL;
    if (c == NULL) {
        snprintf(err, errlen, "out of memory");
        return BATON_ENOMEM;
    }
    rv = baton_async_new(o, &c->ac);
    if (rv != 0) {
        snprintf(err, errlen, "%s", baton_async_new_errmsg());
        free(c);
        return rv;
    }
    if (uv_loop_init(&c->loop) != 0) {
        snprintf(err, errlen, "cannot start an event loop");
        baton_async_free(c->ac);
        free(c);
        return BATON_ENOMEM;
    }
    uv_timer_init(&c->loop, &c->wait);
    c->wait.data = c;
    rv = baton_uv_attach(c->ac, &c->loop);
    if (rv != 0) {
        snprintf(err, errlen, "cannot attach to the event loop");
        baton__caller_free(c);
        return rv;
    }
    if (one_node) baton__set_one_node(c->ac);
    *out = c;
    return 0;
}

void baton__caller_free(baton__caller *c)
{
    if (c == NULL) return;
    baton_async_free(c->ac);
    uv_close((uv_handle_t *)&c->wait, NULL);
    uv_run(&c->loop, UV_RUN_DEFAULT); /* the adapter's and our close callbacks */
    (void)uv_loop_close(&c->loop);
    drop_queue(c);
    free(c);
}

static void on_wait(uv_timer_t *t)
{
    baton__caller *c = t->data;
    c->waited_out = true;
}

/* Run the loop until a reply (or the end) is queued, or timeout_ms (0:
 * no bound but the core's deadline) pass; take it. */
static int take(baton__caller *c, uint64_t timeout_ms, struct baton__reply *rep)
{
    struct entry *e;
    int rv;

    memset(rep, 0, sizeof *rep);
    c->waited_out = false;
    if (timeout_ms > 0) uv_timer_start(&c->wait, on_wait, timeout_ms, 0);
    while (c->head == NULL && !c->waited_out)
        if (uv_run(&c->loop, UV_RUN_ONCE) == 0 && c->head == NULL) break;
    uv_timer_stop(&c->wait);
    e = c->head;
    if (e == NULL) {
        if (c->waited_out) {
            snprintf(c->errmsg, sizeof c->errmsg, "no reply within %llu ms",
                     (unsigned long long)timeout_ms);
            return BATON_ETIMEDOUT;
        }
        snprintf(c->errmsg, sizeof c->errmsg, "nothing left to wait for");
        c->open = false;
        return BATON_EIO;
    }
    c->head = e->next;
    if (c->head == NULL) c->tail = NULL;
    if (e->last) c->open = false;
    rv = e->status;
    if (rv < 0)
        snprintf(c->errmsg, sizeof c->errmsg, "%s", e->errmsg ? e->errmsg : baton_strerror(rv));
    else
        *rep = e->rep;
    free(e->errmsg);
    free(e);
    return rv;
}

int baton__call(baton__caller *c, const struct msg *req, bool stream, uint64_t timeout_ms,
                struct baton__reply *rep)
{
    int rv;

    memset(rep, 0, sizeof *rep);
    if (c->open) { /* the last call's stream ends here */
        baton__raw_end_streams(c->ac);
        c->open = false;
    }
    drop_queue(c);
    c->errmsg[0] = '\0';
    rv = baton__raw_send(c->ac, req, stream, timeout_ms, on_reply, c);
    if (rv != 0) {
        snprintf(c->errmsg, sizeof c->errmsg, "%s", baton_async_errmsg(c->ac));
        return rv;
    }
    c->open = true;
    return take(c, 0, rep);
}

int baton__call_next(baton__caller *c, uint64_t timeout_ms, struct baton__reply *rep)
{
    memset(rep, 0, sizeof *rep);
    if (!c->open && c->head == NULL) {
        snprintf(c->errmsg, sizeof c->errmsg, "the stream has ended");
        return BATON_ECLOSED;
    }
    return take(c, timeout_ms > 0 ? timeout_ms : 1, rep);
}

const char *baton__caller_errmsg(const baton__caller *c)
{
    return c->errmsg;
}

uint32_t baton__caller_node(const baton__caller *c)
{
    return c->ac->node_id;
}
