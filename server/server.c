/*
 * server.c -- batond's start-up, per-loop-turn work and shutdown.
 */
#include <stdlib.h>
#include <string.h>

#include "client/baton_defs.h"
#include "server/log.h"
#include "server/server.h"

/*
 * Runs once per loop turn, after I/O: propose the commands that arrived
 * this turn as one entry, deliver the pushes of entries applied this turn,
 * then write every connection's output with one write each.
 */
static void check_cb(uv_check_t *h)
{
    struct server *srv = h->data;

    batch_flush(srv);
    keepalive_kick(srv);
    push_deliver(srv);
    conn_flush_all(srv);
}

static void noop_close(uv_handle_t *h)
{
    (void)h;
}

static void signal_cb(uv_signal_t *h, int signum)
{
    struct server *srv = h->data;
    log_info("signal %d: shutting down", signum);
    server_stop(srv);
}

int server_init(struct server *srv, uv_loop_t *loop, store *st, const struct srv_config *cfg)
{
    const struct node_member *self;
    struct node_hooks hooks;
    char errmsg[256] = "";
    int rv;

    memset(srv, 0, sizeof *srv);
    srv->loop = loop;
    srv->store = st;
    srv->cfg = *cfg;
    u64map_init(&srv->conns);
    u64map_init(&srv->sessions);
    u64map_init(&srv->watches);
    batch_init(&srv->batch);
    srv->batch.max_inflight = cfg->max_inflight;
    self = node_member_find(&srv->cfg.node, cfg->node.id);

    hooks.data = srv;
    hooks.applied = push_applied;
    hooks.ready = push_ready;
    rv = node_open(loop, srv->store, &srv->cfg.node, &hooks, &srv->node, errmsg);
    if (rv != 0) {
        log_error("%s", errmsg);
        return rv;
    }
    rv = conn_listen(srv, self->client_addr);
    if (rv != 0) {
        log_error("cannot listen on %s: %s", self->client_addr, uv_strerror(rv));
        uv_close((uv_handle_t *)&srv->listener, noop_close);
        node_close(srv->node, NULL, NULL);
        uv_run(loop, UV_RUN_DEFAULT);
        return BATON_EIO;
    }
    liveness_init(srv);
    guard_init(srv);
    disk_init(srv);
    keepalive_init(srv);
    uv_check_init(loop, &srv->check);
    srv->check.data = srv;
    uv_check_start(&srv->check, check_cb);
    uv_signal_init(loop, &srv->sigint);
    uv_signal_init(loop, &srv->sigterm);
    srv->sigint.data = srv;
    srv->sigterm.data = srv;
    uv_signal_start(&srv->sigint, signal_cb, SIGINT);
    uv_signal_start(&srv->sigterm, signal_cb, SIGTERM);
    log_info("node %u: clients on %s, raft on %s, %u members", cfg->node.id, self->client_addr,
             self->raft_addr, cfg->node.n_members);
    return 0;
}

static void node_closed(void *data)
{
    struct server *srv = data;
    log_info("raft closed");
    (void)srv;
}

/* Close everything; uv_run returns once the last handle is closed. */
void server_stop(struct server *srv)
{
    if (srv->stopping) return;
    srv->stopping = true;
    if (!uv_is_closing((uv_handle_t *)&srv->listener))
        uv_close((uv_handle_t *)&srv->listener, noop_close);
    conn_close_all(srv);
    uv_close((uv_handle_t *)&srv->check, noop_close);
    uv_close((uv_handle_t *)&srv->sigint, noop_close);
    uv_close((uv_handle_t *)&srv->sigterm, noop_close);
    push_clear(srv);
    liveness_close(srv);
    guard_close(srv);
    disk_close(srv);
    keepalive_close(srv);
    node_close(srv->node, node_closed, srv);
    /* raft_close failed pending proposals synchronously; drop their replies. */
    srv->dirty = NULL;
    push_clear(srv);
}

void server_free(struct server *srv)
{
    node_free(srv->node);
    batch_free(&srv->batch);
    keepalive_free(srv);
    u64map_free(&srv->conns);
    u64map_free(&srv->sessions);
    watch_clear(srv);
    free(srv->pushq);
}
