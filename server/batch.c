/*
 * batch.c -- group every command that arrives during one loop turn into one
 * raft entry (one LMDB transaction, one fsync on each node), and complete
 * each command once its entry is applied on the leader: every command
 * carries its own completion (struct pending's `done`), so this file
 * knows nothing of requests, replies or what a command is for.
 *
 * Under load -- --max-inflight entries (default 1) proposed and not yet
 * applied, carrying at least HOLD_MIN_CMDS commands between them -- the
 * batch is held and keeps growing over the following turns; the check
 * handler of the turn in which an entry applies proposes it. The followers
 * then write a few large entries rather than one per loop turn (each a
 * synchronous disk write). A lightly loaded leader proposes at once: when
 * the entries in flight are a handful of commands (one hot lock's hand-offs,
 * say), holding would only add a commit's latency to the next hand-off.
 *
 * A batch waits one more loop turn before it is proposed: the turn that
 * read its first command ends without proposing, and an idle handle makes
 * the next turn poll without blocking, so that whatever arrived while the
 * first turn ran joins the entry. A hot lock's hand-off sends two commands
 * at once -- the new holder's RELEASE and the last holder's next ACQUIRE,
 * both answers to one entry -- and the node wakes on the first: proposed
 * alone, each went into an entry of its own, and libraft 0.15 writes one
 * entry after the other (one log write at a time on each node), so the
 * hand-off paid two disk writes on the leader and on each follower instead
 * of one (docs/performance.md, "The limit of W2"). The cost is one
 * epoll_wait that returns at once, a few microseconds.
 *
 * While a planned stop hands leadership over (server.c), `hold` keeps
 * every command in the batch, unproposed and unanswered: libraft 0.15
 * would refuse the entry anyway, and the clients re-send them to the new
 * leader once this node has closed their connections.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/server_int.h"

#define HOLD_MIN_CMDS 8

/* One proposed entry and the requests waiting for it. */
struct inflight {
    struct server *srv;
    struct pending *p;
    uint32_t n;
    uint64_t proposed_ns;   /* metrics_now_ns at the proposal */
};

void batch_init(struct batch *b)
{
    memset(b, 0, sizeof *b);
}

/* The idle handle only keeps the loop from blocking in its poll. */
static void linger_cb(uv_idle_t *h)
{
    (void)h;
}

void batch_open(struct batch *b, uv_loop_t *loop)
{
    uv_idle_init(loop, &b->linger);
}

void batch_close(struct batch *b)
{
    uv_close((uv_handle_t *)&b->linger, NULL);
}

void batch_free(struct batch *b)
{
    buf_free(&b->payload);
    free(b->p);
    memset(b, 0, sizeof *b);
}

void pending_init(struct pending *p, pending_done_fn *done, uint64_t conn_id, uint64_t req_id,
                  const struct cmd *cmd)
{
    memset(p, 0, offsetof(struct pending, name));
    p->done = done;
    p->conn_id = conn_id;
    p->req_id = req_id;
    p->cmd_type = cmd->type;
    p->session = cmd->session;
    p->seq = cmd->seq;
    p->wait_ms = cmd->wait_ms;
    p->ttl_ms = cmd->ttl_ms;
    p->name_len = cmd->name_len;
    if (cmd->name_len) memcpy(p->name, cmd->name, cmd->name_len);
}

/* Tell every command of a batch that it was not applied here. */
static void fail_all(struct server *srv, const struct pending *p, uint32_t n, int status)
{
    struct cmd_outcome o = {.status = status};

    for (uint32_t i = 0; i < n; i++)
        if (p[i].done) p[i].done(srv, &p[i], &o);
}

/*
 * The entry has been applied on this leader (status 0), or its fate is
 * unknown (BATON_ENOTLEADER: leadership was lost, or this leader's log
 * write of it failed, raft/node.h): the client retries with the same seq
 * and the store's dedup table keeps it exactly-once. Each command's own
 * completion answers it. An answer that does not fit the entry (a result
 * count other than its commands', which would be a bug) is an unknown
 * outcome too, never a failure: the entry was applied, and the re-sent
 * commands learn their results from the dedup table.
 */
static void proposed_cb(void *data, int status, const struct effects *fx)
{
    struct inflight *f = data;

    f->srv->batch.inflight--;
    f->srv->batch.inflight_cmds -= f->n;
    if (status == 0) metrics_observe_since(M_COMMIT_SECONDS, f->proposed_ns);
    if (status != 0) {
        fail_all(f->srv, f->p, f->n, status);
    } else if (fx->n_results != f->n) {
        log_error("entry %llu: %zu results for %u commands", (unsigned long long)fx->index,
                  fx->n_results, f->n);
        fail_all(f->srv, f->p, f->n, BATON_ENOTLEADER);
    } else {
        for (uint32_t i = 0; i < f->n; i++) {
            struct cmd_outcome o = {.status = 0, .r = &fx->results[i], .fx = fx, .index = i};
            if (f->p[i].done) f->p[i].done(f->srv, &f->p[i], &o);
        }
    }
    free(f->p);
    free(f);
}

/* The most bytes one entry's batch takes: values make commands of up to
 * CMD_MAX_VALUE bytes, and an entry is written, sent and applied whole. */
#define BATCH_MAX_BYTES ((size_t)4 << 20)

/* Is there no room for one more command (of any size) in b? */
static bool batch_full(const struct batch *b)
{
    return b->count == CMD_MAX_BATCH ||
           (b->count > 0 &&
            b->payload.len + CMD_MAX_VALUE + 2 * BATON_MAX_NAME + 1024 > BATCH_MAX_BYTES);
}

void batch_add(struct server *srv, const struct cmd *cmd, const struct pending *p)
{
    struct batch *b = &srv->batch;
    int rv = 0;

    /* A row above the cluster's committed level (storage/cmd_table.h,
     * level): a voter may not decode it. Clients are told why before
     * (levels.c, level_refuse); this holds for every proposer. */
    if (cmd_level(cmd) > 1 && (uint32_t)cmd_level(cmd) > levels_usable(srv)) {
        fail_all(srv, p, 1, BATON_EVERSION);
        return;
    }
    if (batch_full(b)) batch_flush(srv);
    if (batch_full(b)) { /* held: no room for more */
        fail_all(srv, p, 1, BATON_ENOTLEADER);
        return;
    }
    if (b->count == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        b->p = xrealloc(b->p, cap * sizeof *b->p);
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
    fail_all(srv, p, 1, rv);
}

void batch_flush(struct server *srv)
{
    struct batch *b = &srv->batch;
    struct inflight *f;
    int rv;

    if (uv_is_closing((uv_handle_t *)&b->linger)) return; /* stopping: nothing goes out */
    if (b->count == 0 || b->hold) {
        uv_idle_stop(&b->linger);
        return;
    }
    /* A batch started this turn waits for one more poll (the top of this
     * file); a full one goes at once. */
    if (b->turns++ == 0 && !batch_full(b)) {
        uv_idle_start(&b->linger, linger_cb);
        return;
    }
    uv_idle_stop(&b->linger);
    /* Under load let the batch grow (see the top of this file): one larger
     * entry costs each node one disk write where many small ones would
     * cost one each. A full batch goes anyway. */
    if (b->max_inflight && b->inflight >= b->max_inflight && b->inflight_cmds >= HOLD_MIN_CMDS &&
        !batch_full(b))
        return;
    cmd_batch_end(&b->payload, b->start, b->count);
    f = xmalloc(sizeof *f);
    f->srv = srv;
    f->p = b->p;
    f->n = b->count;
    b->p = NULL;
    b->cap = 0;
    b->count = 0;
    b->turns = 0;
    b->inflight++;
    b->inflight_cmds += f->n;
    metrics_observe(M_BATCH_COMMANDS, f->n);
    f->proposed_ns = metrics_now_ns();
    rv = srv->nio->propose(srv->node, b->payload.data, b->payload.len, proposed_cb, f);
    if (rv != 0) {
        b->inflight--;
        b->inflight_cmds -= f->n;
        fail_all(srv, f->p, f->n, rv);
        free(f->p);
        free(f);
    }
}
