/*
 * peer_tls.c -- the mutual-TLS raft transport: raft's listen and connect,
 * the HELLO exchange, who is admitted, and the rate-limited log of
 * refusals. See peer_tls.h; one connection's bytes are raft/peer_link.c's
 * job, the HELLO's format raft/peer_hello.c's, the start-up check of this
 * node's own certificate raft/peer_cert.c's, and raft's init and close,
 * the list of links and the end of the transport raft/peer_base.c's.
 */
#include "raft/peer_tls.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/addr.h"
#include "proto/errmsg.h"
#include "raft/peer_cert.h"
#include "raft/peer_hello.h"
#include "raft/peer_link.h"

#define DEFAULT_HANDSHAKE_MS 5000
#define DEFAULT_MAX_PENDING 64
#define LOG_WINDOW_MS 10000 /* at most LOG_LINES refusals logged per window */
#define LOG_LINES 10

/* A test build that speaks HELLO version 1 only, as the binary before the
 * cluster id did, for the mixed-version cluster tests. */
#ifdef BATON_TEST_PEER_PROTOCOL_1
#define ONLY_VERSION_1 true
#else
#define ONLY_VERSION_1 false
#endif

struct peer_tls {
    struct peer_base pb;            /* its timer: only closed, by close_all */
    tls_ctx *server, *client;
    struct node_peer_tls cfg;       /* the hooks; the file names are not kept */
    unsigned handshake_ms, max_pending;
    uint64_t log_window;            /* uv_now when the current log window began */
    unsigned log_lines, log_dropped;
    char rbuf[PEER_LINK_READ_SIZE]; /* every link's reads */
};

static struct peer_tls *impl(struct raft_uv_transport *base)
{
    return PEER_CONTAINER(peer_base_of(base), struct peer_tls, pb);
}

static struct peer_link *link_of(const struct peer_conn *c)
{
    return PEER_CONTAINER(c, struct peer_link, conn);
}

/* ---- the log of refusals, rate-limited ----------------------------------- */

static void say(struct peer_tls *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct peer_tls *t, const char *fmt, ...)
{
    uint64_t now = uv_now(t->pb.loop);
    char msg[512];
    va_list ap;

    if (t->cfg.log == NULL) return;
    if (now - t->log_window >= LOG_WINDOW_MS) {
        if (t->log_dropped > 0) {
            snprintf(msg, sizeof msg, "%u more raft connection problems were not logged",
                     t->log_dropped);
            t->cfg.log(t->cfg.arg, msg);
        }
        t->log_window = now;
        t->log_lines = 0;
        t->log_dropped = 0;
    }
    if (t->log_lines == LOG_LINES) {
        t->log_dropped++;
        return;
    }
    t->log_lines++;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    t->cfg.log(t->cfg.arg, msg);
}

/* ---- the end of the transport -------------------------------------------- */

static void destroy(struct peer_base *pb)
{
    struct peer_tls *t = PEER_CONTAINER(pb, struct peer_tls, pb);

    tls_ctx_free(t->server);
    tls_ctx_free(t->client);
    free(t);
}

/* The transport is closing: end c. */
static void end_conn(struct peer_conn *c)
{
    peer_link_close(link_of(c), "the node is shutting down");
}

/* The admitted set changed: close every link with a node it no longer
 * admits -- inbound ones once their HELLO named the node, outbound ones
 * from the dial on. */
static void prune(struct peer_base *pb)
{
    struct peer_conn *c, *next;

    for (c = pb->head; c != NULL; c = next) {
        struct peer_link *l = link_of(c);

        next = c->next;
        if (l->closing || l->peer_id == 0 || peer_admit_has(&pb->admit, l->peer_id)) continue;
        if (l->handed) peer_base_say_pruned(pb, l->peer_id, l->peer);
        l->quiet = true;
        peer_link_close(l, "node %" PRIu64 " left the raft configuration", l->peer_id);
    }
}

static const struct peer_base_hooks hooks = {
    .end_conn = end_conn,
    .destroy = destroy,
    .prune = prune,
};

/* ---- a link's events ------------------------------------------------------ */

/* A link is gone: tell raft about a connect that did not complete, and log
 * why a connection did not reach raft (unless it is of no interest). */
static void link_closed(struct peer_link *l)
{
    struct peer_tls *t = l->owner;
    struct raft_uv_connect *req = l->req;

    peer_base_remove(&t->pb, &l->conn);
    /* Closed after a HELLO without a byte of answer: what a binary that
     * does not take this version does ("malformed HELLO"), and a node
     * killed just now once. A few in a row: dial it with the next older
     * version for a while (raft dials again after its retry delay). */
    if (l->conn.outbound && l->hello > PEER_HELLO_VERSION_1 && !l->answered && l->peer_ended &&
        !t->pb.closing) {
        peer_base_old_strike(&t->pb, l->peer_id, l->peer);
        l->quiet = true;
    } else if (l->conn.outbound) {
        peer_base_old_other(&t->pb, l->peer);
    }
    if (!l->handed && !l->quiet && !t->pb.closing) {
        if (l->conn.outbound)
            say(t, "raft connection to node %" PRIu64 " (%s) failed: %s", l->peer_id, l->peer,
                l->why);
        else
            say(t, "raft connection from %s refused: %s", l->peer[0] ? l->peer : "?", l->why);
    }
    free(l);
    if (req != NULL) req->cb(req, NULL, t->pb.closing ? RAFT_CANCELED : RAFT_NOCONNECTION);
    peer_base_maybe_finish(&t->pb);
}

/* Dialling side: the peer's certificate must name the node dialled; then
 * send the HELLO. */
static void link_up(struct peer_link *l)
{
    struct peer_tls *t = l->owner;
    char want[PEER_CN_MAX];
    struct buf b = {0};
    unsigned version = ONLY_VERSION_1 ? PEER_HELLO_VERSION_1
                                      : peer_base_dial_version(&t->pb, l->peer, PEER_HELLO_VERSION);
    char why[400];
    int rv;

    if (!l->conn.outbound) return; /* the accepting side waits for the HELLO */
    if (t->pb.asking) version = PEER_HELLO_VERSION; /* only the newest carries the question */
    if (strcmp(peer_link_cn(l), peer_cn_of(l->peer_id, want)) != 0) {
        peer_link_close(l, "its certificate names '%s', not '%s'", peer_link_cn(l), want);
        return;
    }
    /* An older binary counts as level 1: perhaps below the cluster's. */
    if (version < PEER_HELLO_VERSION &&
        !peer_base_level_ok(&t->pb, l->peer_id, l->peer, 1, why, sizeof why)) {
        peer_link_close(l, "%s", why);
        return;
    }
    rv = peer_hello_encode(&b, version, t->pb.id, t->pb.cluster_id, peer_base_levels_word(&t->pb),
                           t->pb.asking ? PEER_ASK_STARTED : 0, t->pb.address);
    if (rv == 0) rv = peer_link_send(l, b.data, b.len);
    buf_free(&b);
    if (rv != 0)
        peer_link_close(l, "cannot send the HELLO: %s", baton_strerror(rv));
    else
        l->hello = version;
}

/* Why node h->id, on link l, may not connect; NULL if it may. */
static const char *refusal(struct peer_tls *t, struct peer_link *l, const struct peer_hello *h,
                           char *why, size_t cap)
{
    char want[PEER_CN_MAX];

    if (strcmp(peer_link_cn(l), peer_cn_of(h->id, want)) != 0) {
        snprintf(why, cap, "its certificate names '%s' but its HELLO says node %" PRIu64,
                 peer_link_cn(l), h->id);
        return why;
    }
    if (h->id == t->pb.id) {
        snprintf(why, cap, "it says it is this node (%" PRIu64 ")", h->id);
        return why;
    }
    if (!peer_base_admits(&t->pb, h->id, h->address)) {
        /* Logged by peer_base_admits, once a minute per node. */
        l->quiet = true;
        snprintf(why, cap, "node %" PRIu64 " is not in the raft configuration", h->id);
        return why;
    }
    return NULL;
}

/* Accepting side, a version 3 HELLO refused: answer why, in a word, and
 * close, logging the reason. */
static void refuse(struct peer_tls *t, struct peer_link *l, uint8_t word, const char *why)
{
    uint8_t answer[PEER_HELLO_ANSWER];

    answer[0] = word;
    le_put_u64(answer + 1, t->pb.cluster_id);
    le_put_u64(answer + 9, peer_base_levels_word(&t->pb));
    (void)peer_link_send(l, answer, sizeof answer);
    peer_link_close(l, "%s", why);
}

/* Accepting side: a HELLO arrived; admit the node or close. */
static void admit(struct peer_tls *t, struct peer_link *l, const struct peer_hello *h)
{
    uint8_t answer[PEER_HELLO_ANSWER];
    size_t n = PEER_HELLO_ANSWER;
    uint32_t level = h->version >= PEER_HELLO_VERSION ? peer_levels_max(h->levels) : 1;
    uv_stream_t *stream;
    char why[400];
    int rv;

    l->peer_id = h->id;
    if (refusal(t, l, h, why, sizeof why) != NULL) {
        if (h->version >= PEER_HELLO_VERSION)
            refuse(t, l, PEER_HELLO_REFUSED, why);
        else
            peer_link_close(l, "%s", why);
        return;
    }
    peer_base_level_heard(&t->pb, h->id, level);
    if (h->version < PEER_HELLO_VERSION)
        peer_base_old_inbound(&t->pb, h->id, h->address);
    else
        peer_base_old_forget(&t->pb, h->address);
    if (!peer_base_cluster_ok(&t->pb, h->id, h->address, h->cluster, why, sizeof why)) {
        if (h->version >= PEER_HELLO_VERSION_2) {
            answer[0] = PEER_HELLO_OTHER;
            le_put_u64(answer + 1, t->pb.cluster_id);
            le_put_u64(answer + 9, peer_base_levels_word(&t->pb));
            (void)peer_link_send(l, answer,
                                 h->version >= PEER_HELLO_VERSION ? PEER_HELLO_ANSWER
                                                                  : PEER_HELLO_ANSWER_2);
        }
        peer_link_close(l, "%s", why);
        return;
    }
    if (!peer_base_level_ok(&t->pb, h->id, h->address, level, why, sizeof why)) {
        if (h->version >= PEER_HELLO_VERSION)
            refuse(t, l, PEER_HELLO_REFUSED, why);
        else
            peer_link_close(l, "%s", why);
        return;
    }
    answer[0] = PEER_HELLO_ACK;
    le_put_u64(answer + 1, t->pb.cluster_id);
    le_put_u64(answer + 9, peer_base_levels_word(&t->pb));
    if (h->flags & PEER_ASK_STARTED) { /* a question: answered, never handed to raft */
        if (peer_base_known(&t->pb, h->id, h->address)) answer[0] = PEER_HELLO_KNOWN;
        (void)peer_link_send(l, answer, n);
        l->quiet = true;
        peer_link_close(l, "the first-start question is answered");
        return;
    }
    if (h->version == PEER_HELLO_VERSION_1) n = 1;
    if (h->version == PEER_HELLO_VERSION_2) n = PEER_HELLO_ANSWER_2;
    if ((rv = peer_link_send(l, answer, n)) != 0 || (rv = peer_link_bridge(l, &stream)) != 0) {
        peer_link_close(l, "cannot open the bridge to raft (%d)", rv);
        return;
    }
    l->handed = true;
    t->pb.accept_cb(t->pb.tr, h->id, h->address, stream);
}

/* Dialling side: the ACK arrived; hand raft its stream. */
static void connected(struct peer_link *l)
{
    struct raft_uv_connect *req = l->req;
    uv_stream_t *stream;
    int rv;

    if ((rv = peer_link_bridge(l, &stream)) != 0) {
        peer_link_close(l, "cannot open the bridge to raft (%d)", rv);
        return;
    }
    l->handed = true;
    l->req = NULL;
    peer_base_old_other(&((struct peer_tls *)l->owner)->pb, l->peer);
    req->cb(req, stream, 0);
}

/* Dialling side: the checks of a version 2 or 3 answer a (whole): the
 * peer's cluster id and level, and its own verdict. true: connected. */
static bool answer_ok(struct peer_tls *t, struct peer_link *l, const uint8_t *a, char *why,
                      size_t cap)
{
    bool v3 = l->hello >= PEER_HELLO_VERSION;
    uint32_t level = v3 ? peer_levels_max(le_get_u64(a + 9)) : 1;

    peer_base_level_heard(&t->pb, l->peer_id, level);
    if (!peer_base_cluster_ok(&t->pb, l->peer_id, l->peer, le_get_u64(a + 1), why, cap) ||
        !peer_base_level_ok(&t->pb, l->peer_id, l->peer, level, why, cap))
        return false;
    if (a[0] == PEER_HELLO_OTHER) {
        snprintf(why, cap, "it refused this node's cluster id");
        return false;
    }
    if (a[0] == PEER_HELLO_REFUSED) {
        snprintf(why, cap,
                 "it refused this node (its log says why; its cluster level is %" PRIu32 ")",
                 peer_levels_cluster(le_get_u64(a + 9)));
        return false;
    }
    return true;
}

static void link_plain(struct peer_link *l, struct buf *in)
{
    struct peer_tls *t = l->owner;
    struct peer_hello h;
    int n;

    if (l->conn.outbound) {
        char why[400];

        l->answered = true;
        if (l->hello == PEER_HELLO_VERSION_1) { /* an older peer's answer: one byte */
            if (in->data[0] != PEER_HELLO_ACK) {
                peer_link_close(l, "it answered the HELLO with 0x%02x, not an ACK", in->data[0]);
                return;
            }
            buf_consume(in, 1);
            peer_base_level_heard(&t->pb, l->peer_id, 1);
            connected(l);
            return;
        }
        if (in->data[0] != PEER_HELLO_ACK && in->data[0] != PEER_HELLO_OTHER &&
            !(in->data[0] == PEER_HELLO_REFUSED && l->hello >= PEER_HELLO_VERSION) &&
            !(in->data[0] == PEER_HELLO_KNOWN && t->pb.asking)) {
            peer_link_close(l, "it answered the HELLO with 0x%02x, not an ACK", in->data[0]);
            return;
        }
        if (in->len < (l->hello >= PEER_HELLO_VERSION ? PEER_HELLO_ANSWER : PEER_HELLO_ANSWER_2))
            return;
        if (!answer_ok(t, l, in->data, why, sizeof why)) {
            peer_link_close(l, "%s", why);
            return;
        }
        if (t->pb.asking) { /* answered: the question's connection ends here */
            peer_base_heard_answer(&t->pb, l->peer_id, l->peer, in->data[0] == PEER_HELLO_KNOWN);
            l->quiet = true;
            peer_link_close(l, "the first-start question is answered");
            return;
        }
        buf_consume(in, l->hello >= PEER_HELLO_VERSION ? PEER_HELLO_ANSWER : PEER_HELLO_ANSWER_2);
        connected(l);
        return;
    }
    n = peer_hello_parse(in->data, in->len, &h);
    if (n == 0) return;
    if (n < 0) {
        peer_link_close(l, "malformed HELLO");
        return;
    }
    buf_consume(in, (size_t)n);
    admit(t, l, &h);
}

static const struct peer_link_events events = {
    .up = link_up,
    .plain = link_plain,
    .closed = link_closed,
};

/* ---- raft's interface ------------------------------------------------------ */

/* An inbound link still in its handshake (not handed to raft, not
 * closing): max_pending of them at most. */
static bool in_handshake(const struct peer_conn *c)
{
    const struct peer_link *l = link_of(c);

    return !l->handed && !l->closing;
}

static void on_accept(uv_stream_t *server, int status)
{
    struct peer_tls *t = PEER_CONTAINER(server->data, struct peer_tls, pb);
    struct peer_conn *old;
    struct peer_link *l;

    if (status < 0 || t->pb.closing) return;
    if ((old = peer_base_evictable(&t->pb, t->max_pending, in_handshake)) != NULL)
        peer_link_close(link_of(old), "dropped: %u raft handshakes were pending at once",
                        t->max_pending);
    l = calloc(1, sizeof *l);
    if (l == NULL) {
        say(t, "out of memory for a raft connection");
        return;
    }
    l->owner = t;
    peer_link_init(l, t->pb.loop, &events, t->rbuf);
    peer_base_append(&t->pb, &l->conn);
    peer_link_accept(l, server, t->server, t->handshake_ms);
}

static int tls_listen_cb(struct raft_uv_transport *base, raft_uv_accept_cb cb)
{
    return peer_base_listen(peer_base_of(base), cb, on_accept);
}

static int tls_connect_cb(struct raft_uv_transport *base, struct raft_uv_connect *req, raft_id id,
                          const char *address, raft_uv_connect_cb cb)
{
    struct peer_tls *t = impl(base);
    struct proto_addr a;
    struct peer_link *l;

    if (t->pb.closing) return RAFT_CANCELED;
    if (proto_addr_parse(address, strlen(address), &a) != 0) return RAFT_NOCONNECTION;
    l = calloc(1, sizeof *l);
    if (l == NULL) return RAFT_NOMEM;
    req->cb = cb;
    l->owner = t;
    l->conn.outbound = true;
    l->req = req;
    l->peer_id = id;
    snprintf(l->peer, sizeof l->peer, "%s", address);
    peer_link_init(l, t->pb.loop, &events, t->rbuf);
    peer_base_append(&t->pb, &l->conn);
    peer_link_connect(l, address, t->client, t->handshake_ms);
    return 0;
}

/* ---- set-up and release ------------------------------------------------------ */

static int make_ctx(const struct node_peer_tls *cfg, bool server, tls_ctx **out, char *errmsg)
{
    struct tls_config c = {
        .ca_file = cfg->ca_file,
        .cert_file = cfg->cert_file,
        .key_file = cfg->key_file,
        .server = server,
        .require_peer_cert = server,
        .allow_tls12 = cfg->allow_tls12,
    };
    char why[BATON_ERRMSG_SIZE - 32];
    int rv = tls_ctx_new(&c, out, why, sizeof why);

    if (rv != 0) snprintf(errmsg, BATON_ERRMSG_SIZE, "peer TLS: %s", why);
    return rv;
}

/* OpenSSL says "system lib" for a file it cannot open: say which and why. */
static int readable(const char *what, const char *path, char *errmsg)
{
    FILE *f = fopen(path, "r");

    if (f == NULL) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "peer TLS: cannot read the %s '%.150s': %s", what,
                 path, strerror(errno));
        return BATON_EINVAL;
    }
    fclose(f);
    return 0;
}

int peer_tls_init(struct raft_uv_transport *base, uv_loop_t *loop, uint32_t self_id,
                  const struct node_peer_tls *cfg, char *errmsg)
{
    struct peer_tls *t;
    int rv;

    if ((rv = readable("certificate", cfg->cert_file, errmsg)) != 0 ||
        (rv = readable("key", cfg->key_file, errmsg)) != 0 ||
        (rv = readable("CA file", cfg->ca_file, errmsg)) != 0)
        return rv;
    t = calloc(1, sizeof *t);
    if (t == NULL) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "out of memory for the raft transport");
        return BATON_ENOMEM;
    }
    if ((rv = make_ctx(cfg, true, &t->server, errmsg)) != 0 ||
        (rv = make_ctx(cfg, false, &t->client, errmsg)) != 0 ||
        (rv = peer_cert_check(t->server, t->client, self_id, cfg, errmsg)) != 0) {
        tls_ctx_free(t->server);
        tls_ctx_free(t->client);
        free(t);
        return rv;
    }
    peer_base_setup(&t->pb, base, loop, &hooks);
    t->cfg = *cfg;
    t->cfg.cert_file = t->cfg.key_file = t->cfg.ca_file = NULL;
    t->handshake_ms = cfg->handshake_timeout_ms ? cfg->handshake_timeout_ms : DEFAULT_HANDSHAKE_MS;
    t->max_pending = cfg->max_pending ? cfg->max_pending : DEFAULT_MAX_PENDING;
    t->log_window = uv_now(loop);
    base->listen = tls_listen_cb;
    base->connect = tls_connect_cb;
    return 0;
}
