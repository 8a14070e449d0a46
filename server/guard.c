/*
 * guard.c -- limits on what one client may hold on the server, so that a
 * misbehaving or hostile client costs a bounded amount of memory and
 * descriptors and never blocks the others (docs/operations.md, "Limits"):
 *
 *  - --max-conns: connections beyond it are accepted only to be answered
 *    ERROR(BATON_ELIMIT) and closed. The limit is lowered at start-up to
 *    the open-files limit less a reserve for raft, LMDB and snapshots, so
 *    accept(2) never meets EMFILE because of clients. (Should it meet
 *    EMFILE anyway, libuv accepts and closes the pending connections with
 *    its spare descriptor rather than spin; accept_cb only logs it.)
 *  - --frame-timeout: a connection whose current incomplete frame began to
 *    arrive longer ago is answered ERROR(BATON_ETIMEDOUT) and closed. An
 *    idle connection with nothing buffered is never timed out (a session's
 *    keepalives travel on it). A frame is at most BATON_MAX_FRAME bytes, so
 *    a connection holds at most that much input, plus one read.
 *  - An input buffer that has been emptied gives its memory back, so an
 *    idle connection costs a few hundred bytes, not the 64 KiB read buffer.
 *  - --handshake-timeout: a connection must finish its TLS handshake and
 *    have its HELLO accepted within this long after it was accepted, or it
 *    is closed. Silent sockets cannot pile up.
 *  - --max-unauth-conns: connections that have not finished HELLO have a
 *    cap of their own, below --max-conns, so that they cannot crowd out
 *    authenticated ones. At the cap, a new connection closes the OLDEST
 *    unauthenticated one rather than being refused: an attacker holding
 *    the cap cannot lock out a real client, whose handshake takes a few
 *    milliseconds, unless it opens the whole cap again within those
 *    milliseconds (what a SYN cache does for half-open TCP connections).
 *
 * One timer sweeps every connection a few times per frame timeout; a
 * sweep over 10,000 connections takes some tens of microseconds.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "baton/baton_defs.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/server_int.h"

/* Descriptors kept for everything that is not a client connection. */
#define GUARD_FD_RESERVE 128
/* An emptied input buffer larger than this is freed. */
#define GUARD_IN_KEEP 4096
/* At most one warning about refused connections per this many ms. */
#define GUARD_LOG_EVERY_MS 1000

/* Lower --max-conns to what the open-files limit allows. */
static void clamp_max_conns(struct server *srv)
{
    struct rlimit rl;
    rlim_t room;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return;
    room = rl.rlim_cur > 2 * GUARD_FD_RESERVE ? rl.rlim_cur - GUARD_FD_RESERVE : rl.rlim_cur / 2;
    if (srv->cfg.max_conns <= room) return;
    log_warn("--max-conns %u exceeds what the open-files limit (%llu) allows; serving at most %llu",
             srv->cfg.max_conns, (unsigned long long)rl.rlim_cur, (unsigned long long)room);
    srv->cfg.max_conns = (unsigned)room;
}

/* Close c, which has not authenticated, with a reason. */
static void close_unauth(struct conn *c, int code, const char *why)
{
    log_debug("conn %llu (%s): %s; closing", (unsigned long long)c->id, c->peer, why);
    if (conn_tls_ready(c)) conn_send_error(c, 0, code, "%s", why);
    conn_close(c);
}

/* Close the connections that have not authenticated within
 * --handshake-timeout: the oldest first, which is the list's order. */
static void sweep_handshakes(struct server *srv, uint64_t now)
{
    uint64_t limit = srv->cfg.handshake_timeout_ms;
    size_t n = 0;

    while (srv->unauth_head != NULL && now - srv->unauth_head->accepted_at >= limit) {
        close_unauth(srv->unauth_head, BATON_ETIMEDOUT,
                     "no TLS handshake and HELLO within --handshake-timeout");
        metrics_inc_label(M_REFUSALS, REF_HANDSHAKE_TIMEOUT);
        n++;
    }
    if (n > 0) log_info("closed %zu connection(s) that did not authenticate within %u ms", n,
                        srv->cfg.handshake_timeout_ms);
}

/* Close every connection whose incomplete frame is older than the timeout.
 * The ids are collected first: closing may remove a connection from the
 * map, which must not change while it is walked. */
static void sweep_cb(uv_timer_t *t)
{
    struct server *srv = t->data;
    uint64_t now = uv_now(srv->loop), limit = srv->cfg.frame_timeout_ms;
    uint64_t *ids = NULL;
    size_t n = 0, cap = 0;

    sweep_handshakes(srv, now);
    input_trim(srv);
    for (size_t i = 0; i < srv->conns.cap; i++) {
        struct conn *c;

        if (srv->conns.slots[i].key == 0) continue;
        c = srv->conns.slots[i].val;
        if (c->closing || c->closed || c->partial_since == 0 || now - c->partial_since < limit)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            ids = xrealloc(ids, cap * sizeof *ids);
        }
        ids[n++] = c->id;
    }
    for (size_t i = 0; i < n; i++) {
        struct conn *c = conn_get(srv, ids[i]);

        if (c == NULL) continue;
        log_warn("conn %llu (%s): an incomplete frame (%zu bytes) for %llu ms; closing",
                 (unsigned long long)c->id, c->peer, c->in.len,
                 (unsigned long long)(now - c->partial_since));
        metrics_inc_label(M_REFUSALS, REF_FRAME_TIMEOUT);
        conn_send_error(c, 0, BATON_ETIMEDOUT,
                        "incomplete frame: %zu bytes received, the rest not within %u ms",
                        c->in.len, srv->cfg.frame_timeout_ms);
        conn_close(c);
    }
    free(ids);
}

void guard_init(struct server *srv)
{
    uint64_t shortest = srv->cfg.frame_timeout_ms < srv->cfg.handshake_timeout_ms
                            ? srv->cfg.frame_timeout_ms
                            : srv->cfg.handshake_timeout_ms;
    uint64_t period = shortest / 4;

    if (period > 1000) period = 1000;
    if (period < 10) period = 10;
    clamp_max_conns(srv);
    uv_timer_init(srv->loop, &srv->guard_timer);
    srv->guard_timer.data = srv;
    uv_timer_start(&srv->guard_timer, sweep_cb, period, period);
}

static void guard_closed(uv_handle_t *h)
{
    (void)h;
}

void guard_close(struct server *srv)
{
    if (!uv_is_closing((uv_handle_t *)&srv->guard_timer))
        uv_close((uv_handle_t *)&srv->guard_timer, guard_closed);
}

bool guard_admit(struct conn *c)
{
    struct server *srv = c->srv;
    uint64_t now;

    if (srv->n_unauth > srv->cfg.max_unauth_conns && srv->unauth_head != c) {
        close_unauth(srv->unauth_head, BATON_ELIMIT,
                     "too many connections waiting to authenticate: closing the oldest");
        metrics_inc_label(M_REFUSALS, REF_UNAUTH);
    }
    if (srv->conns.n <= srv->cfg.max_conns) return true;
    srv->refused_conns++;
    metrics_inc_label(M_REFUSALS, REF_MAX_CONNS);
    now = uv_now(srv->loop);
    if (srv->refuse_logged == 0 || now - srv->refuse_logged >= GUARD_LOG_EVERY_MS) {
        log_warn("refused %llu connection(s): %u connections is the limit (--max-conns)",
                 (unsigned long long)srv->refused_conns, srv->cfg.max_conns);
        srv->refused_conns = 0;
        srv->refuse_logged = now;
    }
    conn_send_error(c, 0, BATON_ELIMIT, "too many connections: this server serves at most %u",
                    srv->cfg.max_conns);
    conn_close(c);
    return false;
}

/*
 * The clock of an incomplete frame starts when its first bytes arrive: in
 * the read that ended the previous frame, or in the first read after an
 * empty buffer. So a client that streams frames without pause is never
 * timed out, however rarely a read ends exactly on a frame boundary.
 */
void guard_input_done(struct conn *c, bool consumed)
{
    if (c->in.len == 0) {
        c->partial_since = 0;
        if (c->in.cap > GUARD_IN_KEEP) {
            buf_free(&c->in);
            input_account(c);
        }
    } else if (c->backlogged) {
        c->partial_since = 0; /* whole frames wait on this server, not the client */
    } else if (c->partial_since == 0 || consumed) {
        c->partial_since = uv_now(c->srv->loop);
        if (c->partial_since == 0) c->partial_since = 1;
    }
}

void guard_accept_failed(struct server *srv, int status)
{
    uint64_t now = uv_now(srv->loop);

    srv->accept_failures++;
    if (srv->accept_logged != 0 && now - srv->accept_logged < GUARD_LOG_EVERY_MS) return;
    log_warn("accept: %s (%llu failure(s) in the last second); %zu connections open",
             uv_strerror(status), (unsigned long long)srv->accept_failures, srv->conns.n);
    srv->accept_failures = 0;
    srv->accept_logged = now;
}
