/*
 * async_conn.c -- the async core's connection to the cluster.
 *
 * One non-blocking TCP socket at a time. Its life:
 *
 *   IDLE/BACKOFF --connect()--> CONNECTING --writable, SO_ERROR 0--> HELLO
 *   --HELLO_OK--> READY --EOF, error, REDIRECT, NO_LEADER--> IDLE/BACKOFF
 *
 * Choosing where to connect: a REDIRECT names the leader, and the next
 * attempt goes there at once (after BATON__MAX_REDIRECTS redirects in a row
 * without reaching a leader, only after a back-off). Otherwise the
 * endpoints are tried in turn: a failed attempt moves on to the next one
 * immediately, until every endpoint has failed in a row; then, and after a
 * NO_LEADER answer, the core backs off: 10-20 ms the first time since the
 * leader last answered, twice as long each next time, up to 50-100 ms
 * (random, so that many clients do not retry in step).
 *
 * An attempt (connect plus HELLO) must finish within BATON__ATTEMPT_MS, so
 * that a node that swallows packets does not stall the client.
 *
 * A silent node. A leader that is frozen (SIGSTOP, a stalled VM) keeps its
 * connections open and says nothing; its followers elect another after
 * their election timeout, but the client would wait for its requests' own
 * timeouts, or for a keepalive left unanswered (async_session.c), seconds
 * later. So a node that owes an answer -- HELLO_OK, or the reply to a
 * request sent on this connection -- and has sent no byte for
 * BATON__SILENT_MS is left like a closed connection: what is unanswered
 * is re-sent elsewhere (every request is idempotent), and a follower's
 * redirect leads back to the silent node only until the followers elect
 * another; each such attempt ends after the same silence. A healthy leader
 * answers within milliseconds, and a loop stalled for longer than an
 * election timeout (300 ms by default) costs its leadership anyway; a
 * wrong guess costs one reconnection (docs/performance.md, "Failover").
 *
 * With TLS (async_tls.c) the handshake runs between connect and HELLO_OK,
 * inside the same attempt: HELLO is queued at once and leaves encrypted as
 * soon as the node's certificate is verified. A node that refuses this
 * client for good -- a certificate refused on either side, TLS on one side
 * only, an unknown token -- ends the opening of a session at once
 * (baton__conn_refused) instead of being retried until connect_timeout_ms.
 *
 * The connection is "confirmed" once a reply that only the leader gives
 * (SESSION, RESULT, GRANTED, WAIT_FAILED, LOST, SESSION_EXPIRED,
 * LOST_HOLDS_R) arrives
 * on it; async_ops.c uses
 * that to tell BATON_ETIMEDOUT (the leader did not answer in time) from
 * BATON_EUNAVAIL (no leader was reachable).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client/async_int.h"
#include "proto/addr.h"
#include "proto/resolve.h"

#define READ_CHUNK 16384
#define READS_PER_EVENT 16

/*
 * Parse an endpoint or a redirect's address (s need not be NUL-terminated)
 * with the one address grammar (proto/addr.h): an IP literal becomes its
 * socket address now; a host name is kept as a name (a->len 0) and
 * resolved at every attempt (baton__conn_start). Returns 0, or BATON_EINVAL
 * with *why (static storage) saying what is wrong.
 */
int baton__parse_addr(const char *s, size_t n, struct baton__addr *a, const char **why)
{
    struct proto_addr pa;

    memset(a, 0, sizeof *a);
    if (proto_addr_parse(s, n, &pa) != 0) {
        *why = pa.why;
        return BATON_EINVAL;
    }
    snprintf(a->text, sizeof a->text, "%.*s", (int)n, s);
    snprintf(a->host, sizeof a->host, "%s", pa.host);
    a->port = pa.port;
    a->len = proto_addr_sockaddr(&pa, &a->sa);
    return 0;
}

/* Remember a connection-level error for messages (both the current error
 * and the last connection error, which EUNAVAIL messages quote):
 * "ADDRESS: WHAT: WHY". */
void baton__conn_err(baton_async_t *ac, const char *what, const char *why)
{
    int n = snprintf(ac->connerr, sizeof ac->connerr, "%s: %s: ", ac->cur_text, what);

    if (n > 0 && (size_t)n < sizeof ac->connerr)
        snprintf(ac->connerr + n, sizeof ac->connerr - (size_t)n, "%s", why);
    memcpy(ac->errmsg, ac->connerr, sizeof ac->errmsg);
}

/* Does the session still need a connection? */
static bool want_conn(const baton_async_t *ac)
{
    return !ac->freeing && (ac->sstate == BATON__S_OPENING || ac->sstate == BATON__S_OPEN ||
                            ac->sstate == BATON__S_CLOSING || ac->n_raw > 0 ||
                            ac->n_watch > 0);
}

/*
 * Wait before the next attempt; the timer check starts it
 * (baton__conn_check_timers). A back-off ends a round. The first since the
 * leader last answered is short, 10..20 ms (random), and each next one
 * twice as long up to 50..100 ms: after a planned hand-off the new leader
 * serves some 30 ms after the old one let go (docs/operations.md,
 * "Planned restarts"), and a client that waited 50..100 ms at once would
 * lose most of that time; while there is no leader at all (an election
 * after a crash) the retries soon slow to the 50..100 ms of before.
 */
static void backoff(baton_async_t *ac)
{
    uint64_t lo = BATON__BACKOFF_FIRST_MS;

    for (unsigned i = 0; i < ac->backoffs && lo < BATON__BACKOFF_MIN_MS; i++) lo *= 2;
    if (lo > BATON__BACKOFF_MIN_MS) lo = BATON__BACKOFF_MIN_MS;
    ac->backoffs++;
    ac->cstate = BATON__C_BACKOFF;
    ac->round_fails = 0;
    ac->reconnect_at = baton__now() + baton__rand(ac, lo, lo * 2);
    baton__sched(ac, ac->reconnect_at);
}

/* An attempt failed: move to the next endpoint. Returns true if the next
 * one should be tried at once, false if a back-off was scheduled. */
static bool attempt_failed(baton_async_t *ac)
{
    if (!ac->cur_is_redirect) ac->ep_next = (ac->ep_next + 1) % ac->n_eps;
    ac->round_fails++;
    if (ac->round_fails >= ac->n_eps) {
        backoff(ac);
        return false;
    }
    return true;
}

/* Connect to the current attempt's next address. Returns true once a
 * connect is in progress (CONNECTING), false when every address failed at
 * once (the last failure is in the error message). */
static bool connect_next(baton_async_t *ac)
{
    while (ac->try_next < ac->n_try) {
        unsigned i = ac->try_next++;
        int fd, one = 1;

        fd = socket(ac->try_sa[i].ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            baton__conn_err(ac, "socket", strerror(errno));
            continue;
        }
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(fd, (const struct sockaddr *)&ac->try_sa[i], ac->try_len[i]) == 0 ||
            errno == EINPROGRESS) {
            /* Completion (even an immediate one) is reported as writability. */
            ac->fd = fd;
            ac->cstate = BATON__C_CONNECTING;
            ac->ev.add_write(ac->ev.data, fd);
            ac->ev_write = true;
            ac->attempt_deadline = baton__now() + BATON__ATTEMPT_MS;
            baton__sched(ac, ac->attempt_deadline);
            return true;
        }
        baton__conn_err(ac, "connect", strerror(errno));
        close(fd);
    }
    return false;
}

/* A connect to one of the attempt's addresses failed: try the next one of
 * the same name, if any. Returns true if one is being tried. */
static bool connect_other(baton_async_t *ac)
{
    if (ac->cstate != BATON__C_CONNECTING || ac->try_next >= ac->n_try) return false;
    baton__conn_drop(ac);
    return connect_next(ac);
}

/* The addresses of a lookup, IPv4 and IPv6, in its order. */
static void take_addrs(baton_async_t *ac, const struct addrinfo *res)
{
    ac->n_try = proto_resolve_take(res, ac->try_sa, ac->try_len, BATON__MAX_RESOLVED);
    ac->try_next = 0;
}

/* Look up a's host name for this attempt: through the adapter's resolver
 * (returns true: RESOLVING, baton__conn_resolved follows), or with a
 * blocking getaddrinfo (the addresses are in the try list: returns false
 * with n_try > 0, or 0 after a failure, whose message is set). */
static bool resolve(baton_async_t *ac, const struct baton__addr *a)
{
    const char *why;
    char port[8];

    snprintf(port, sizeof port, "%u", a->port);
    if (ac->resolver.start != NULL) {
        ac->lookup = ac->resolver.start(ac->resolver.data, a->host, port, baton__on_resolved, ac);
        if (ac->lookup == NULL) {
            baton__conn_err(ac, "resolve", "the resolver could not start a lookup");
            return false;
        }
        ac->cstate = BATON__C_RESOLVING;
        ac->attempt_deadline = baton__now() + BATON__ATTEMPT_MS;
        baton__sched(ac, ac->attempt_deadline);
        return true;
    }
    /* Blocks: see baton_async.h. */
    ac->n_try = proto_resolve_name(a->host, a->port, ac->try_sa, ac->try_len,
                                   BATON__MAX_RESOLVED, &why);
    ac->try_next = 0;
    if (ac->n_try == 0) baton__conn_err(ac, "resolve", why);
    return false;
}

/* The endpoints' turn passes over the node just left for its silence for
 * 2 * BATON__SILENT_MS (a frozen leader would cost another silence); a
 * redirect still leads there, in case it only was slow. */
static void skip_silent(baton_async_t *ac)
{
    if (ac->n_eps < 2 || baton__now() >= ac->silent_until) return;
    if (strcmp(ac->eps[ac->ep_next].text, ac->silent_text) == 0)
        ac->ep_next = (ac->ep_next + 1) % ac->n_eps;
}

/*
 * Start a connection attempt to the redirect target, if there is one, or
 * to the next endpoint: its IP address, or each address its name resolves
 * to now, in order. An attempt that fails at once moves on to the next
 * endpoint; when a whole round failed, a back-off is scheduled instead.
 */
void baton__conn_start(baton_async_t *ac)
{
    if (ac->fd >= 0 || ac->cstate == BATON__C_RESOLVING || !want_conn(ac)) return;
    for (;;) {
        const struct baton__addr *a;

        if (ac->have_redirect) {
            a = &ac->redirect;
            ac->have_redirect = false;
            ac->cur_is_redirect = true;
        } else {
            skip_silent(ac);
            a = &ac->eps[ac->ep_next];
            ac->cur_is_redirect = false;
        }
        snprintf(ac->cur_text, sizeof ac->cur_text, "%s", a->text);
        snprintf(ac->cur_host, sizeof ac->cur_host, "%s", a->host);
        ac->n_try = ac->try_next = 0;
        if (a->len > 0) {
            ac->try_sa[0] = a->sa;
            ac->try_len[0] = a->len;
            ac->n_try = 1;
        } else if (resolve(ac, a)) {
            return;
        }
        if (connect_next(ac)) return;
        if (ac->one_node) baton__raw_fail_all(ac, BATON_EUNAVAIL);
        if (!attempt_failed(ac)) return;
    }
}

void baton__conn_resolved(baton_async_t *ac, const struct addrinfo *res, const char *why)
{
    ac->lookup = NULL;
    if (ac->cstate != BATON__C_RESOLVING) return;
    ac->cstate = BATON__C_IDLE;
    ac->attempt_deadline = 0;
    if (why != NULL) {
        baton__conn_err(ac, "resolve", why);
    } else {
        take_addrs(ac, res);
        if (ac->n_try == 0) baton__conn_err(ac, "resolve", "no IPv4 or IPv6 address");
        if (connect_next(ac)) return;
    }
    baton__conn_fail(ac, false);
}

/* Close the socket (if any) and forget the connection's buffers. The
 * requests are not touched: see baton__on_conn_lost. */
void baton__conn_drop(baton_async_t *ac)
{
    if (ac->lookup != NULL) {
        ac->resolver.cancel(ac->resolver.data, ac->lookup);
        ac->lookup = NULL;
    }
    if (ac->fd >= 0) {
        if (ac->attached) {
            if (ac->ev_read) ac->ev.del_read(ac->ev.data, ac->fd);
            if (ac->ev_write) ac->ev.del_write(ac->ev.data, ac->fd);
            ac->ev.close_fd(ac->ev.data, ac->fd);
        }
        close(ac->fd);
    }
    ac->fd = -1;
    ac->ev_read = ac->ev_write = false;
    baton__tls_end(ac);
    buf_reset(&ac->in);
    buf_reset(&ac->out);
    ac->rx_bytes = 0;
    ac->gen++;
    ac->confirmed = false;
    ac->cstate = BATON__C_IDLE;
    ac->attempt_deadline = 0;
    ac->hello_id = 0;
}

/*
 * The current connection (or attempt) failed. Everything unanswered goes
 * back to be re-sent, and the next attempt starts now or after a back-off
 * (always after one when `force_backoff`, as for NO_LEADER).
 */
void baton__conn_fail(baton_async_t *ac, bool force_backoff)
{
    bool was_confirmed = ac->confirmed;

    baton__conn_drop(ac);
    baton__on_conn_lost(ac, was_confirmed);
    if (!want_conn(ac)) return;
    if (!attempt_failed(ac)) return;
    if (force_backoff)
        backoff(ac);
    else
        baton__conn_start(ac);
}

/*
 * The node refused this client for good (BATON_ETLS, BATON_EAUTH; the
 * message is set): the other nodes share its certificates and auth file,
 * so a session being opened fails now with status rather than after
 * connect_timeout_ms. With a session open, the connection fails like any
 * other: the nodes are tried again after a back-off (a certificate or an
 * auth file being rolled out may be fixed meanwhile), and if no leader
 * answers in time the calls' messages quote this refusal.
 */
void baton__conn_refused(baton_async_t *ac, int status)
{
    baton__raw_fail_all(ac, status);
    baton__watch_fail_new(ac, status);
    if (baton__open_refused(ac, status)) return;
    baton__conn_fail(ac, true);
}

/*
 * The connection could not get memory for `what` (include/baton/baton_async.h,
 * "Out of memory"): a session being opened fails now with BATON_ENOMEM;
 * with a session open, the connection fails like any other and is tried
 * again after a back-off, by when memory may be back (if no leader answers
 * in time, the calls' messages quote this).
 */
void baton__conn_oom(baton_async_t *ac, const char *what)
{
    baton__conn_err(ac, what, "out of memory");
    baton__conn_refused(ac, BATON_ENOMEM);
}

/* The node says the leader is at addr: go there. */
void baton__conn_redirect(baton_async_t *ac, const char *addr, size_t n)
{
    struct baton__addr a;
    const char *why;
    bool was_confirmed = ac->confirmed;

    if (baton__parse_addr(addr, n, &a, &why) != 0) {
        baton__conn_err(ac, "REDIRECT to a bad address ignored", why);
        baton__conn_fail(ac, true);
        return;
    }
    baton__conn_drop(ac);
    baton__on_conn_lost(ac, was_confirmed);
    ac->redirect = a;
    ac->have_redirect = true;
    ac->redirects_in_row++;
    if (!want_conn(ac)) return;
    if (ac->redirects_in_row > BATON__MAX_REDIRECTS)
        backoff(ac);
    else
        baton__conn_start(ac);
}

static uint64_t silent_deadline(const baton_async_t *ac);

/* Timer fired: start the attempt a back-off was waiting for, give up on
 * an attempt that did not reach HELLO_OK in time, or leave a silent node. */
void baton__conn_check_timers(baton_async_t *ac, uint64_t now)
{
    if (ac->cstate == BATON__C_BACKOFF && now >= ac->reconnect_at) {
        ac->cstate = BATON__C_IDLE;
        baton__conn_start(ac);
    } else if ((ac->cstate == BATON__C_RESOLVING || ac->cstate == BATON__C_CONNECTING ||
                ac->cstate == BATON__C_HELLO) &&
               ac->attempt_deadline && now >= ac->attempt_deadline) {
        char why[64];
        snprintf(why, sizeof why, "no answer within %d ms", BATON__ATTEMPT_MS);
        baton__conn_err(ac, ac->cstate == BATON__C_RESOLVING    ? "resolve"
                            : ac->cstate == BATON__C_CONNECTING ? "connect"
                                                                : "HELLO",
                        why);
        if (connect_other(ac)) return;
        baton__conn_fail(ac, false);
    } else if (silent_deadline(ac) && now >= silent_deadline(ac)) {
        char why[64];
        snprintf(why, sizeof why, "no answer for %d ms: trying another node", BATON__SILENT_MS);
        baton__conn_err(ac, ac->cstate == BATON__C_HELLO ? "HELLO" : "read", why);
        /* Not a lost connection to the leader: the requests' op timeouts
         * keep counting from their send, so that a node that answers
         * HELLO but never a request still times them out. */
        ac->confirmed = false;
        ac->silenced = true;
        snprintf(ac->silent_text, sizeof ac->silent_text, "%s", ac->cur_text);
        ac->silent_until = now + 2 * BATON__SILENT_MS;
        baton__conn_fail(ac, false);
    }
}

/* When the node owes us an answer and has said nothing for BATON__SILENT_MS
 * (see "A silent node" above); 0 if it owes none. */
static uint64_t silent_deadline(const baton_async_t *ac)
{
    uint64_t since = 0;

    if (ac->cstate == BATON__C_HELLO) {
        since = ac->rx_at;
    } else if (ac->cstate == BATON__C_READY) {
        for (const struct baton__req *r = ac->head; r; r = r->next)
            if (r->kind != BATON__K_RAW && r->state == BATON__R_SENT && r->sent_gen == ac->gen &&
                (since == 0 || r->sent_at < since))
                since = r->sent_at;
        if (since == 0) return 0;
        if (ac->rx_at > since) since = ac->rx_at;
    }
    return since ? since + BATON__SILENT_MS : 0;
}

uint64_t baton__conn_next_timer(const baton_async_t *ac)
{
    uint64_t silent = silent_deadline(ac);

    if (ac->cstate == BATON__C_BACKOFF) return ac->reconnect_at;
    if (ac->cstate == BATON__C_RESOLVING || ac->cstate == BATON__C_CONNECTING ||
        ac->cstate == BATON__C_HELLO)
        return silent && silent < ac->attempt_deadline ? silent : ac->attempt_deadline;
    return silent;
}

/* ---- output ----------------------------------------------------------------------- */

void baton__want_write(baton_async_t *ac)
{
    if (ac->fd < 0 || ac->ev_write || ac->cstate < BATON__C_HELLO) return;
    ac->ev.add_write(ac->ev.data, ac->fd);
    ac->ev_write = true;
}

/* Queue one message; it is written when the socket is next writable (so
 * that the requests of one loop turn leave in one write). */
int baton__send_msg(baton_async_t *ac, const struct msg *m)
{
    int rv = proto_encode(&ac->out, m);

    if (rv != 0) return rv;
    baton__want_write(ac);
    /* The node owes an answer from now on: wake up to check its silence. */
    if (ac->cstate == BATON__C_READY) baton__sched(ac, baton__now() + BATON__SILENT_MS);
    return 0;
}

/* Write what is queued (with TLS: encrypted first); stop watching
 * writability once it is all out. */
static void flush(baton_async_t *ac)
{
    struct buf *wire = &ac->out;

    if (ac->tls != NULL) {
        int rv = baton__tls_wrap(ac);

        if (rv == BATON_ENOMEM) {
            baton__conn_oom(ac, "TLS");
            return;
        }
        if (rv != 0) {
            baton__conn_fail(ac, true);
            return;
        }
        wire = &ac->net;
    }
    while (wire->len) {
        ssize_t n = send(ac->fd, wire->data, wire->len, MSG_NOSIGNAL);
        if (n > 0) {
            buf_consume(wire, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        baton__conn_err(ac, "write", n < 0 ? strerror(errno) : "short write");
        baton__conn_fail(ac, false);
        return;
    }
    if (ac->ev_write) {
        ac->ev.del_write(ac->ev.data, ac->fd);
        ac->ev_write = false;
    }
}

/*
 * A bearer token goes over plaintext only to a loopback address (the
 * address dialled: an endpoint's, or a REDIRECT's, as resolved), where it
 * never leaves the machine. Anywhere else whoever sees the traffic could
 * replay it, so the connection is refused for good with BATON_ETLS before
 * HELLO leaves (include/baton/baton.h, tls_ca_file and token).
 */
static bool token_exposed(const baton_async_t *ac)
{
    const struct sockaddr *sa;

    if (ac->token == NULL || ac->tls_ctx != NULL || ac->try_next == 0) return false;
    sa = (const struct sockaddr *)&ac->try_sa[ac->try_next - 1];
    return !proto_sockaddr_is_loopback(sa);
}

/* The non-blocking connect finished: check how, then say HELLO (with
 * TLS, the handshake goes first and HELLO waits in the endpoint). */
static void connected(baton_async_t *ac)
{
    struct msg m = {.type = MSG_HELLO};
    int err = 0;
    socklen_t len = sizeof err;

    if (getsockopt(ac->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) {
        baton__conn_err(ac, "connect", strerror(err));
        if (connect_other(ac)) return;
        baton__conn_fail(ac, false);
        return;
    }
    if (token_exposed(ac)) {
        baton__conn_err(ac, "token", "not sent in clear to an address that is not loopback: "
                                     "set tls_ca_file (TLS), or connect without a token");
        baton__conn_refused(ac, BATON_ETLS);
        return;
    }
    if (baton__tls_begin(ac) != 0) {
        baton__conn_oom(ac, "TLS");
        return;
    }
    ac->cstate = BATON__C_HELLO;
    ac->rx_at = baton__now();
    ac->ev.add_read(ac->ev.data, ac->fd);
    ac->ev_read = true;
    ac->hello_id = ac->next_id++;
    m.req_id = ac->hello_id;
    m.u.hello.version = BATON_PROTO_VERSION;
    m.u.hello.client_name.p = ac->client_name;
    m.u.hello.client_name.n = (uint16_t)strlen(ac->client_name);
    if (ac->token != NULL) {
        m.u.hello.token.p = ac->token;
        m.u.hello.token.n = (uint16_t)strlen(ac->token);
    }
    if (baton__send_msg(ac, &m) != 0) {
        baton__conn_oom(ac, "HELLO");
        return;
    }
    flush(ac);
}

void baton__write(baton_async_t *ac)
{
    if (ac->fd < 0) return;
    if (ac->cstate == BATON__C_CONNECTING)
        connected(ac);
    else
        flush(ac);
}

/* ---- input ------------------------------------------------------------------------ */

/* The messages that concern the connection itself; the rest goes to
 * async_ops.c. */
static void on_msg(baton_async_t *ac, const struct msg *m)
{
    if (ac->cstate == BATON__C_READY && baton__raw_take(ac, m)) return;
    if (ac->cstate == BATON__C_READY && baton__watch_take(ac, m)) return;
    switch (m->type) {
    case MSG_HELLO_OK:
        if (ac->cstate != BATON__C_HELLO || m->req_id != ac->hello_id) return;
        if (m->u.hello_ok.version != BATON_PROTO_VERSION) {
            baton__seterr(ac, "%s speaks protocol version %u, this client %u", ac->cur_text,
                          m->u.hello_ok.version, BATON_PROTO_VERSION);
            baton__session_fail(ac, BATON_EVERSION);
            return;
        }
        ac->cstate = BATON__C_READY;
        ac->attempt_deadline = 0;
        ac->node_id = m->u.hello_ok.node_id;
        /* A keepalive first (if there is a session), so that a new leader
         * attaches the session to this connection; then the rest. */
        baton__on_conn_ready(ac);
        return;
    case MSG_ERROR:
        if (m->req_id == 0 || (m->req_id == ac->hello_id && ac->cstate == BATON__C_HELLO)) {
            int code = m->u.error.code;
            bool refused = code == BATON_ETLS || code == BATON_EAUTH;
            char why[BATON_MAX_ERRMSG + 64];

            snprintf(why, sizeof why, "%s: %.*s", baton_err_name(code),
                     (int)m->u.error.message.n, m->u.error.message.p ? m->u.error.message.p : "");
            baton__conn_err(ac, refused ? "refused" : "server error", why);
            if (code == BATON_EVERSION)
                baton__session_fail(ac, BATON_EVERSION);
            else if (refused)
                baton__conn_refused(ac, code);
            else
                baton__conn_fail(ac, true);
            return;
        }
        break;
    case MSG_REDIRECT:
        baton__conn_redirect(ac, m->u.redirect.client_addr.p, m->u.redirect.client_addr.n);
        return;
    case MSG_NO_LEADER:
        baton__conn_err(ac, "request", "no leader");
        baton__conn_fail(ac, true);
        return;
    default:
        break;
    }
    if (ac->cstate != BATON__C_READY) {
        baton__conn_err(ac, "protocol", "reply before HELLO_OK");
        baton__conn_fail(ac, true);
        return;
    }
    if (!baton__is_keepalive_id(m->req_id)) ac->silenced = false;
    baton__on_msg(ac, m);
    baton__flush_held(ac);
}

/*
 * Decode and handle the whole frames in the input buffer. Handling a frame
 * may drop the connection (a redirect, a failure): the generation changes
 * and the rest of the buffer, which belonged to that connection, is gone.
 */
static void process(baton_async_t *ac)
{
    uint64_t gen = ac->gen;
    size_t off = 0;

    /* Read after the lease ran out here (the process was stopped, its
     * loop stalled): the session ends before any of it is believed
     * (async_int.h, baton__session_lease_check). What follows is still
     * handled: replies of requests just settled are ignored as late ones
     * are, and sessionless ones (reads, watches) stand. */
    baton__session_lease_check(ac, ac->rx_at);
    if (ac->gen != gen) return;
    for (;;) {
        struct msg m;
        size_t flen;
        int rv = proto_frame_check(ac->in.data + off, ac->in.len - off, &flen);

        if (rv == 0) break;
        if (rv < 0) {
            baton__conn_err(ac, "bad frame", baton_strerror(rv));
            baton__conn_fail(ac, true);
            return;
        }
        rv = proto_decode(ac->in.data + off, flen, &m);
        if (rv == BATON_ENOMEM) {
            baton__conn_oom(ac, "a message");
            return;
        }
        if (rv != 0) {
            baton__conn_err(ac, "bad message", baton_strerror(rv));
            baton__conn_fail(ac, true);
            return;
        }
        on_msg(ac, &m);
        msg_free(&m);
        if (ac->gen != gen) return;
        off += flen;
    }
    buf_consume(&ac->in, off);
}

/* What became of bytes that were read: rv is a failure of
 * baton__tls_unwrap or baton__plain_check (their message is set). A
 * refusal is for good; the rest are ordinary connection failures. */
static void input_failed(baton_async_t *ac, int rv)
{
    if (rv == BATON_ETLS || rv == BATON_ENOMEM)
        baton__conn_refused(ac, rv); /* the message is set */
    else
        baton__conn_fail(ac, false);
}

/* The node closed the connection. After a plaintext answer to our TLS,
 * that was its refusal (batond sends one ERROR and closes). */
static void input_ended(baton_async_t *ac)
{
    if (ac->plain_answer) {
        baton__conn_err(ac, "TLS", "the node does not serve TLS; it answered in plaintext "
                                   "and closed the connection");
        baton__conn_refused(ac, BATON_ETLS);
        return;
    }
    baton__conn_err(ac, "read", ac->tls != NULL && !tls_established(ac->tls)
                                    ? "connection closed by the server during the TLS handshake"
                                    : "connection closed by the server");
    baton__conn_fail(ac, false);
}

/* The socket is readable: read what is there (a bounded number of times,
 * so that one busy connection cannot starve the caller's loop) and handle
 * each whole frame. EOF or an error fails the connection. Plaintext is
 * read straight into ac->in; TLS records into a chunk that is decrypted
 * into ac->in. */
void baton__read(baton_async_t *ac)
{
    uint64_t gen = ac->gen;
    uint8_t chunk[READ_CHUNK];

    if (ac->fd < 0 || ac->cstate < BATON__C_HELLO) return;
    for (int i = 0; i < READS_PER_EVENT; i++) {
        uint8_t *dst = chunk;
        size_t room = sizeof chunk;
        ssize_t n;
        int rv;

        if (ac->tls == NULL) {
            if (buf_reserve(&ac->in, READ_CHUNK) != 0) {
                baton__conn_oom(ac, "read");
                return;
            }
            dst = ac->in.data + ac->in.len;
            room = ac->in.cap - ac->in.len;
        }
        n = read(ac->fd, dst, room);
        if (n > 0) {
            ac->rx_at = baton__now();
            if (ac->tls != NULL) {
                rv = baton__tls_unwrap(ac, chunk, (size_t)n);
            } else {
                ac->in.len += (size_t)n;
                rv = baton__plain_check(ac, (size_t)n);
            }
            if (rv != 0) {
                input_failed(ac, rv);
                return;
            }
            process(ac);
            if (ac->gen != gen) return;
            /* A short read emptied the socket: the next read would only
             * say EAGAIN, so leave it to the next readiness event. */
            if ((size_t)n < room) return;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (n == 0) {
            input_ended(ac);
            return;
        }
        baton__conn_err(ac, "read", strerror(errno));
        baton__conn_fail(ac, false);
        return;
    }
}
