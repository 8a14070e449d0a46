/*
 * batch.c -- group every command that arrives during one loop turn into one
 * raft entry (one LMDB transaction, one fsync on each node), and answer each
 * request once its entry is applied on the leader.
 *
 * Under load -- --max-inflight entries (default 1) proposed and not yet
 * applied, carrying at least HOLD_MIN_CMDS commands between them -- the
 * batch is held and keeps growing over the following turns; the check
 * handler of the turn in which an entry applies proposes it. The followers
 * then write a few large entries rather than one per loop turn (each a
 * synchronous disk write). A lightly loaded leader proposes at once: when
 * the entries in flight are a handful of commands (one hot lock's hand-offs,
 * say), holding would only add a commit's latency to the next hand-off.
 */
#include <stdlib.h>
#include <string.h>

#include "client/baton_defs.h"
#include "server/log.h"
#include "server/server.h"

#define HOLD_MIN_CMDS 8

/* One proposed entry and the requests waiting for it. */
struct inflight {
    struct server *srv;
    struct pending *p;
    uint32_t n;
};

void batch_init(struct batch *b)
{
    memset(b, 0, sizeof *b);
}

void batch_free(struct batch *b)
{
    buf_free(&b->payload);
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* Answer every request of a batch that cannot be applied here. */
static void fail_all(struct server *srv, struct pending *p, uint32_t n, int status)
{
    for (uint32_t i = 0; i < n; i++) {
        struct conn *c = p[i].conn_id ? conn_get(srv, p[i].conn_id) : NULL;
        if (c == NULL) continue;
        if (status == BATON_ENOTLEADER)
            dispatch_not_leader(c, p[i].req_id);
        else
            conn_send_error(c, p[i].req_id, status, "could not commit: %s", baton_strerror(status));
    }
}

/* Send the applied result of one command to the request that asked for it. */
static void reply(struct server *srv, const struct pending *p, const struct cmd_result *r)
{
    struct conn *c = p->conn_id ? conn_get(srv, p->conn_id) : NULL;
    struct msg m = {.req_id = p->req_id};

    if (p->cmd_type == CMD_ACQUIRE && r->status == 0 && r->kind == RESULT_QUEUED && p->wait_ms > 0)
        push_wait_arm(srv, p->session, p->seq, p->wait_ms, p->name, p->name_len);
    if (p->cmd_type == CMD_OPEN_SESSION && r->status == 0) {
        liveness_opened(srv, r->value, p->ttl_ms);
        if (p->conn_id) push_attach(srv, r->value, p->conn_id);
    }
    if (c == NULL) return;
    if (p->cmd_type == CMD_OPEN_SESSION && r->status == 0) {
        m.type = MSG_SESSION;
        m.u.session.session = r->value;
        m.u.session.ttl_ms = p->ttl_ms;
    } else {
        m.type = MSG_RESULT;
        m.u.result.status = r->status;
        m.u.result.kind = r->kind;
        m.u.result.value = r->value;
    }
    conn_send(c, &m);
}

/*
 * The entry has been applied on this leader (status 0), or its fate is
 * unknown because leadership was lost (BATON_ENOTLEADER: the client retries
 * with the same seq and the store's dedup table keeps it exactly-once).
 */
static void proposed_cb(void *data, int status, const struct effects *fx)
{
    struct inflight *f = data;

    f->srv->batch.inflight--;
    f->srv->batch.inflight_cmds -= f->n;
    if (status != 0) {
        fail_all(f->srv, f->p, f->n, status);
    } else if (fx->n_results != f->n) {
        log_error("entry %llu: %zu results for %u commands", (unsigned long long)fx->index,
                  fx->n_results, f->n);
        fail_all(f->srv, f->p, f->n, BATON_EIO);
    } else {
        size_t cursor = 0; /* where the next FORCE_RELEASE's effects may start */
        for (uint32_t i = 0; i < f->n; i++) {
            if (f->p[i].cmd_type == CMD_FORCE_RELEASE)
                admin_force_release_done(f->srv, &f->p[i], &fx->results[i], fx, &cursor);
            else
                reply(f->srv, &f->p[i], &fx->results[i]);
        }
    }
    free(f->p);
    free(f);
}

void batch_add(struct server *srv, const struct cmd *cmd, const struct pending *p)
{
    struct batch *b = &srv->batch;
    int rv = 0;

    if (disk_refuse(srv, p)) return; /* answered ERROR(BATON_ENOSPC) */
    if (b->count == CMD_MAX_BATCH) batch_flush(srv);
    if (b->count == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        struct pending *np = realloc(b->p, cap * sizeof *np);
        if (np == NULL) {
            rv = BATON_ENOMEM;
            goto fail;
        }
        b->p = np;
        b->cap = cap;
    }
    if (b->count == 0) {
        buf_reset(&b->payload);
        rv = cmd_batch_begin(&b->payload, &b->start);
        if (rv != 0) goto fail;
    }
    rv = cmd_batch_add(&b->payload, cmd);
    if (rv != 0) goto fail;
    b->p[b->count++] = *p;
    return;

fail:
    fail_all(srv, (struct pending *)p, 1, rv);
}

void batch_flush(struct server *srv)
{
    struct batch *b = &srv->batch;
    struct inflight *f;
    int rv;

    if (b->count == 0) return;
    /* Under load let the batch grow (see the top of this file): one larger
     * entry costs each node one disk write where many small ones would
     * cost one each. A full batch goes anyway. */
    if (b->max_inflight && b->inflight >= b->max_inflight && b->inflight_cmds >= HOLD_MIN_CMDS &&
        b->count < CMD_MAX_BATCH)
        return;
    cmd_batch_end(&b->payload, b->start, b->count);
    f = malloc(sizeof *f);
    if (f == NULL) {
        fail_all(srv, b->p, b->count, BATON_ENOMEM);
        b->count = 0;
        return;
    }
    f->srv = srv;
    f->p = b->p;
    f->n = b->count;
    b->p = NULL;
    b->cap = 0;
    b->count = 0;
    b->inflight++;
    b->inflight_cmds += f->n;
    rv = node_propose(srv->node, b->payload.data, b->payload.len, proposed_cb, f);
    if (rv != 0) {
        b->inflight--;
        b->inflight_cmds -= f->n;
        fail_all(srv, f->p, f->n, rv);
        free(f->p);
        free(f);
    }
}
