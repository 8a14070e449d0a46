/*
 * peer_tcp.c -- the plaintext raft transport, raft_uv_tcp's handshake over
 * addresses of every kind. See peer_tcp.h.
 *
 * Every connection in its handshake is a struct pending, in the list of
 * raft/peer_base.h (with raft's init and close and the end of the
 * transport), so that close() can end them all; the base's timer is the
 * sweep of inbound handshakes past PEER_TCP_HANDSHAKE_MS. Its socket is a uv_tcp_t from raft_malloc:
 * once the handshake is done it is handed to raft as is (raft closes it and
 * raft_frees it), so no byte is copied after the handshake. The handshake
 * is read with buffers of exactly the bytes still missing, so not one byte
 * of raft's that follows is read here.
 */
#include "raft/peer_tcp.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "raft/peer_addr.h"
#include "raft/peer_base.h"

/*
 * The handshakes, all uint64 little-endian, then the address (padded to 8):
 *   protocol 1 (raft_uv_tcp's, and the oldest baton binaries'): protocol,
 *              id, address size; no reply.
 *   protocol 2: protocol 1's and the cluster id; the reply is the
 *              accepting node's cluster id.
 *   protocol 3: protocol 2's, the levels word (peer_base.h, "Feature
 *              levels") and a flags word (0, or PEER_ASK_STARTED: the
 *              first-start question, peer_base.h); the reply is an
 *              outcome (REPLY_*), the accepting node's cluster id and its
 *              levels word. A refusal is answered, so that it is never
 *              taken for an older binary. A question is answered
 *              REPLY_KNOWN or REPLY_OK (not known) when its checks pass,
 *              and the connection is closed either way.
 */
#define PROTOCOL 3   /* the newest: with the feature levels */
#define PROTOCOL_2 2 /* with the cluster id */
#define PROTOCOL_1 1
#define PREAMBLE 48  /* protocol 3's: six uint64 */
#define PREAMBLE_2 32
#define PREAMBLE_1 24
#define REPLY 24     /* protocol 3's */
#define REPLY_2 8
#define REPLY_OK 0
#define REPLY_REFUSED 1 /* another cluster, a level below the cluster's, not admitted */
#define REPLY_KNOWN 2   /* the question's answer: that node id has started here */
#define SWEEP_MS 1000

/* A test build that speaks protocol 1 only, as the binary before the
 * cluster id did, for the mixed-version cluster tests. */
#ifdef BATON_TEST_PEER_PROTOCOL_1
#define ONLY_PROTOCOL_1 true
#else
#define ONLY_PROTOCOL_1 false
#endif

/*
 * A connection handed to raft. Its uv_tcp_t is raft's from then on (raft
 * closes and frees it, and says nothing when it does), so the transport
 * keeps only its descriptor and the socket's identity (st_dev, st_ino):
 * the descriptor still names that socket exactly while raft has not closed
 * it (a socket's inode is unique while it exists). Closing it is
 * shutdown(2) on the descriptor: both directions end, the peer sees the
 * end at once, and raft sees it at its next read or write and closes the
 * handle itself.
 */
struct handed {
    uint64_t id;                    /* the peer's */
    char addr[BATON_MAX_ADDR + 1];  /* for the log */
    int fd;
    dev_t dev;
    ino_t ino;
};

struct peer_tcp {
    struct peer_base pb;
    struct handed *h;               /* h[0..n) */
    unsigned n, cap;
};

struct pending {
    struct peer_conn c;             /* in the transport's list */
    struct peer_base *t;            /* the transport (its timer: the sweep) */
    uv_tcp_t *tcp;                  /* raft_malloc'd; NULL while dialling */
    uint64_t since;                 /* uv_now at accept (inbound) */
    /* Outbound. */
    struct raft_uv_connect *req;
    struct peer_dial dial;
    bool dialing;
    bool replying;                  /* the handshake is sent; reading the reply */
    unsigned version;               /* the protocol dialled with (older peers: below 3) */
    bool struck;                    /* closed unanswered: peer_base_old_strike */
    uint64_t req_id;                /* the node dialled, and its address */
    char req_addr[BATON_MAX_ADDR + 1];
    uint8_t reply[REPLY];
    size_t reply_got;
    uv_write_t write;
    uint8_t *hs;                    /* the handshake being written */
    /* Inbound. */
    uint8_t pre[PREAMBLE];
    size_t pre_len;                 /* PREAMBLE_1, then the protocol's */
    size_t got;                     /* bytes of preamble and address read */
    uint64_t id, addr_len;
    char *addr;                     /* addr_len + 1 bytes once the preamble is in */
};

static struct pending *pending_of(struct peer_conn *c)
{
    return PEER_CONTAINER(c, struct pending, c);
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;

    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* ---- a connection's end ---------------------------------------------------- */

/* Remove p from the list and free it; its socket, if any, is the caller's
 * business (closed, or raft's now). */
static void pending_free(struct pending *p)
{
    struct peer_base *t = p->t;

    peer_base_remove(t, &p->c);
    free(p->hs);
    free(p->addr);
    free(p);
    peer_base_maybe_finish(t);
}

/* An inbound handshake failed or was cut short: close and forget it. */
static void drop(struct pending *p)
{
    peer_tcp_handle_close(p->tcp);
    pending_free(p);
}

static void fail_connect(struct pending *p, int status);

/* The transport is closing: end c. */
static void end_conn(struct peer_conn *c)
{
    struct pending *p = pending_of(c);

    if (!c->outbound)
        drop(p);
    else if (p->dialing)
        peer_dial_cancel(&p->dial); /* on_dialed ends it */
    else if (p->replying)
        fail_connect(p, UV_ECANCELED);
    else
        peer_tcp_handle_close(p->tcp); /* on_written ends it */
}

static struct peer_tcp *tcp_of(struct peer_base *t)
{
    return PEER_CONTAINER(t, struct peer_tcp, pb);
}

static void destroy(struct peer_base *t)
{
    free(tcp_of(t)->h);
    free(tcp_of(t));
}

/* ---- connections handed to raft ------------------------------------------ */

/* Is h's descriptor still the socket handed to raft? */
static bool handed_live(const struct handed *h)
{
    struct stat st;

    return fstat(h->fd, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == h->dev &&
           st.st_ino == h->ino;
}

/* Remember the connection with node id on stream s, handed to raft now
 * (a record that cannot be made only means it cannot be closed early). */
static void handed_add(struct peer_base *t, uint64_t id, const char *addr, uv_tcp_t *s)
{
    struct peer_tcp *pt = tcp_of(t);
    struct handed *h;
    uv_os_fd_t fd;
    struct stat st;

    if (uv_fileno((uv_handle_t *)s, &fd) != 0 || fstat(fd, &st) != 0) return;
    if (pt->n == pt->cap) {
        unsigned cap = pt->cap ? 2 * pt->cap : 8;
        struct handed *nh = realloc(pt->h, cap * sizeof *nh);

        if (nh == NULL) return;
        pt->h = nh;
        pt->cap = cap;
    }
    h = &pt->h[pt->n++];
    h->id = id;
    snprintf(h->addr, sizeof h->addr, "%s", addr);
    h->fd = fd;
    h->dev = st.st_dev;
    h->ino = st.st_ino;
}

/* Forget the records of connections raft has closed, and with `prune`
 * close those of nodes no longer admitted. */
static void handed_sweep(struct peer_base *t, bool prune)
{
    struct peer_tcp *pt = tcp_of(t);
    unsigned k = 0;

    for (unsigned i = 0; i < pt->n; i++) {
        struct handed *h = &pt->h[i];

        if (!handed_live(h)) continue;
        if (prune && !peer_admit_has(&t->admit, h->id)) {
            peer_base_say_pruned(t, h->id, h->addr);
            (void)shutdown(h->fd, SHUT_RDWR);
            continue;
        }
        pt->h[k++] = *h;
    }
    pt->n = k;
}

static void prune(struct peer_base *t)
{
    handed_sweep(t, true);
}

static const struct peer_base_hooks hooks = {
    .end_conn = end_conn,
    .destroy = destroy,
    .prune = prune,
};

/* ---- inbound: read the handshake, hand the stream to raft ---------------- */

static void hs_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    struct pending *p = h->data;

    (void)hint;
    if (p->got < p->pre_len)
        *b = uv_buf_init((char *)p->pre + p->got, (unsigned)(p->pre_len - p->got));
    else
        *b = uv_buf_init(p->addr + (p->got - p->pre_len),
                         (unsigned)(p->addr_len - (p->got - p->pre_len)));
}

/* Log a refused inbound handshake (rate-limited). */
static void say_refused(struct peer_base *t, const char *addr, const char *why)
{
    char msg[700];

    snprintf(msg, sizeof msg, "raft connection from %s refused: %s", addr, why);
    peer_base_say(t, msg);
}

/* The checks of an inbound handshake -- admission (raft/peer_admit.h), the
 * cluster id, the feature level -- and the reply that tells the dialling node the outcome, this node's
 * cluster id and (protocol 3) its levels (a socket just accepted has room
 * for REPLY bytes: uv_try_write writes them whole or the connection goes).
 * true: hand the stream to raft. */
static bool answer(struct pending *p)
{
    struct peer_base *t = p->t;
    unsigned version = (unsigned)get64(p->pre);
    uint64_t theirs = version >= PROTOCOL_2 ? get64(p->pre + 24) : 0;
    uint32_t level = version >= PROTOCOL ? peer_levels_max(get64(p->pre + 32)) : 1;
    bool ask = version >= PROTOCOL && (get64(p->pre + 40) & PEER_ASK_STARTED) != 0;
    uint64_t outcome;
    char why[400];
    uint8_t reply[REPLY];
    size_t n = version >= PROTOCOL ? REPLY : REPLY_2;
    uv_buf_t b;
    bool ok;

    if (version >= PROTOCOL && (get64(p->pre + 40) & ~(uint64_t)PEER_ASK_STARTED) != 0)
        return false; /* a flag this binary does not know: closed unanswered */
    if (!peer_base_admits(t, p->id, p->addr)) { /* logged there, once a minute per node */
        ok = false;
        if (version < PROTOCOL) return false; /* closed unanswered, as that binary did */
    } else {
        if (version < PROTOCOL)
            peer_base_old_inbound(t, p->id, p->addr);
        else
            peer_base_old_forget(t, p->addr);
        peer_base_level_heard(t, p->id, level);
        ok = peer_base_cluster_ok(t, p->id, p->addr, theirs, why, sizeof why) &&
             peer_base_level_ok(t, p->id, p->addr, level, why, sizeof why);
        if (!ok) say_refused(t, p->addr, why);
    }
    if (version == PROTOCOL_1) return ok; /* no reply */
    if (version >= PROTOCOL) {
        outcome = !ok ? REPLY_REFUSED
                  : ask && peer_base_known(t, p->id, p->addr) ? REPLY_KNOWN
                                                               : REPLY_OK;
        put64(reply, outcome);
        put64(reply + 8, t->cluster_id);
        put64(reply + 16, peer_base_levels_word(t));
    } else {
        put64(reply, t->cluster_id);
    }
    b = uv_buf_init((char *)reply, (unsigned)n);
    if (uv_try_write((uv_stream_t *)p->tcp, &b, 1) != (int)n) return false;
    return ok && !ask; /* a question is answered, never handed to raft */
}

static void hs_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct pending *p = s->data;
    struct peer_base *t = p->t;
    uint64_t id;
    char *addr;

    (void)b;
    if (n == 0) return;
    if (n < 0) {
        drop(p);
        return;
    }
    p->got += (size_t)n;
    if (p->got == PREAMBLE_1 && p->pre_len == PREAMBLE_1 && !ONLY_PROTOCOL_1) {
        if (get64(p->pre) == PROTOCOL_2) p->pre_len = PREAMBLE_2; /* the cluster id follows */
        if (get64(p->pre) == PROTOCOL) p->pre_len = PREAMBLE;     /* and the levels */
        if (p->pre_len != PREAMBLE_1) return;
    }
    if (p->got == p->pre_len) {
        p->id = get64(p->pre + 8);
        p->addr_len = get64(p->pre + 16);
        if ((p->pre_len == PREAMBLE_1 && get64(p->pre) != PROTOCOL_1) || p->addr_len == 0 ||
            p->addr_len > PEER_TCP_MAX_ADDRESS) {
            drop(p); /* not a raft peer, or another protocol version */
            return;
        }
        p->addr = calloc(1, p->addr_len + 1);
        if (p->addr == NULL) {
            drop(p);
            return;
        }
        return;
    }
    if (p->got < p->pre_len + p->addr_len) return;
    uv_read_stop(s);
    if (!answer(p)) {
        drop(p);
        return;
    }
    uv_tcp_nodelay(p->tcp, 1);
    s->data = NULL;
    id = p->id;
    addr = p->addr;
    p->addr = NULL;
    pending_free(p);
    handed_add(t, id, addr, (uv_tcp_t *)s);
    t->accept_cb(t->tr, id, addr, s); /* raft owns s from here, and copies addr */
    free(addr);
}

static void on_accept(uv_stream_t *server, int status)
{
    struct peer_base *t = server->data;
    struct peer_conn *old;
    struct pending *p;

    if (status < 0 || t->closing) return;
    /* Every inbound connection in the list is in its handshake. */
    if ((old = peer_base_evictable(t, PEER_TCP_MAX_PENDING, NULL)) != NULL) drop(pending_of(old));
    p = calloc(1, sizeof *p);
    if (p == NULL || (p->tcp = raft_malloc(sizeof *p->tcp)) == NULL) {
        free(p);
        return;
    }
    p->t = t;
    p->since = uv_now(t->loop);
    p->pre_len = PREAMBLE_1;
    uv_tcp_init(t->loop, p->tcp);
    p->tcp->data = p;
    peer_base_append(t, &p->c);
    if (uv_accept(server, (uv_stream_t *)p->tcp) != 0 ||
        uv_read_start((uv_stream_t *)p->tcp, hs_alloc, hs_read) != 0)
        drop(p);
}

/* Close the inbound connections that have not finished their handshake in
 * time. */
static void sweep_cb(uv_timer_t *timer)
{
    struct peer_base *t = timer->data;
    uint64_t now = uv_now(t->loop);
    struct peer_conn *c, *next;

    handed_sweep(t, false);
    for (c = t->head; c != NULL; c = next) {
        next = c->next;
        if (now - pending_of(c)->since < PEER_TCP_HANDSHAKE_MS) continue;
        if (!c->outbound)
            drop(pending_of(c));
        else if (pending_of(c)->replying)
            fail_connect(pending_of(c), UV_ETIMEDOUT);
    }
}

/* ---- outbound: dial, send the handshake, hand the stream to raft --------- */

static void end_connect(struct pending *p, uv_tcp_t *stream, int status)
{
    struct raft_uv_connect *req = p->req;
    bool closing = p->t->closing;

    if (!p->struck) peer_base_old_other(p->t, p->req_addr);
    if (status == 0) handed_add(p->t, p->req_id, p->req_addr, stream);
    pending_free(p);
    req->cb(req, (struct uv_stream_s *)stream,
            status == 0 ? 0 : closing ? RAFT_CANCELED : RAFT_NOCONNECTION);
}

/* The dialled node did not take the connection. */
static void fail_connect(struct pending *p, int status)
{
    peer_tcp_handle_close(p->tcp);
    end_connect(p, NULL, status);
}

/* The bytes of reply the protocol dialled with has. */
static size_t reply_len(const struct pending *p)
{
    return p->version >= PROTOCOL ? REPLY : REPLY_2;
}

static void reply_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    struct pending *p = h->data;

    (void)hint;
    *b = uv_buf_init((char *)p->reply + p->reply_got, (unsigned)(reply_len(p) - p->reply_got));
}

/* The checks of the dialled node's reply: its cluster id and level; true
 * if raft may have the stream. */
static bool reply_ok(struct pending *p)
{
    bool v3 = p->version >= PROTOCOL;
    uint64_t cluster = get64(v3 ? p->reply + 8 : p->reply);
    uint32_t level = v3 ? peer_levels_max(get64(p->reply + 16)) : 1;
    char why[400], msg[700];

    peer_base_level_heard(p->t, p->req_id, level);
    if (peer_base_cluster_ok(p->t, p->req_id, p->req_addr, cluster, why, sizeof why) &&
        peer_base_level_ok(p->t, p->req_id, p->req_addr, level, why, sizeof why)) {
        if (p->t->asking && v3 && get64(p->reply) != REPLY_REFUSED) {
            peer_base_heard_answer(p->t, p->req_id, p->req_addr,
                                   get64(p->reply) == REPLY_KNOWN);
            return false; /* answered: the question's connection ends here */
        }
        if (!v3 || get64(p->reply) == REPLY_OK) return true;
        snprintf(why, sizeof why,
                 "it refused this node (its log says why; its cluster level is %" PRIu32 ")",
                 peer_levels_cluster(get64(p->reply + 16)));
    }
    snprintf(msg, sizeof msg, "raft connection to %s refused: %s", p->req_addr, why);
    peer_base_say(p->t, msg);
    return false;
}

/* The dialled node's reply (protocol 2 and 3). */
static void reply_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct pending *p = s->data;

    (void)b;
    if (n == 0) return;
    if (n < 0) {
        /* Closed before a byte of the reply: what a binary that does not
         * speak this protocol does (it reads 24 bytes, sees another
         * protocol and closes), and a node killed just now once. A few in
         * a row: dial it with the next older protocol for a while (raft
         * dials again after its retry delay). */
        if (p->reply_got == 0 && (n == UV_EOF || n == UV_ECONNRESET)) {
            p->struck = true;
            peer_base_old_strike(p->t, p->req_id, p->req_addr);
        }
        fail_connect(p, (int)n);
        return;
    }
    p->reply_got += (size_t)n;
    if (p->reply_got < reply_len(p)) return;
    uv_read_stop(s);
    if (!reply_ok(p)) {
        fail_connect(p, UV_ECONNREFUSED);
        return;
    }
    p->replying = false;
    s->data = NULL;
    end_connect(p, p->tcp, 0);
}

static void on_written(uv_write_t *w, int status)
{
    struct pending *p = w->data;

    if (status < 0 || p->t->closing) {
        fail_connect(p, status < 0 ? status : UV_ECANCELED);
        return;
    }
    if (p->version == PROTOCOL_1) { /* no reply: raft's messages follow */
        peer_base_level_heard(p->t, p->req_id, 1);
        p->tcp->data = NULL;
        end_connect(p, p->tcp, 0);
        return;
    }
    p->tcp->data = p;
    p->replying = true;
    p->since = uv_now(p->t->loop);
    if (uv_read_start((uv_stream_t *)p->tcp, reply_alloc, reply_read) != 0) {
        p->replying = false;
        fail_connect(p, UV_EIO);
    }
}

static void on_dialed(struct peer_dial *d, uv_tcp_t *tcp, int status)
{
    struct pending *p = d->data;
    struct peer_base *t = p->t;
    size_t len = strlen(t->address) + 1, padded = (len + 7) / 8 * 8;
    size_t pre = p->version >= PROTOCOL ? PREAMBLE : p->version == PROTOCOL_2 ? PREAMBLE_2
                                                                             : PREAMBLE_1;
    uv_buf_t b;
    int rv;

    p->dialing = false;
    if (status < 0) {
        end_connect(p, NULL, status);
        return;
    }
    p->tcp = tcp;
    uv_tcp_nodelay(tcp, 1);
    p->hs = calloc(1, pre + padded);
    if (p->hs == NULL) {
        peer_tcp_handle_close(tcp);
        end_connect(p, NULL, UV_ENOMEM);
        return;
    }
    put64(p->hs, p->version);
    put64(p->hs + 8, t->id);
    put64(p->hs + 16, padded);
    if (p->version >= PROTOCOL_2) put64(p->hs + 24, t->cluster_id);
    if (p->version >= PROTOCOL) put64(p->hs + 32, peer_base_levels_word(t));
    if (p->version >= PROTOCOL) put64(p->hs + 40, t->asking ? PEER_ASK_STARTED : 0);
    memcpy(p->hs + pre, t->address, len);
    b = uv_buf_init((char *)p->hs, (unsigned)(pre + padded));
    p->write.data = p;
    rv = uv_write(&p->write, (uv_stream_t *)tcp, &b, 1, on_written);
    if (rv != 0) {
        peer_tcp_handle_close(tcp);
        end_connect(p, NULL, rv);
    }
}

/* ---- raft's interface ----------------------------------------------------- */

static int tcp_listen_cb(struct raft_uv_transport *base, raft_uv_accept_cb cb)
{
    struct peer_base *t = peer_base_of(base);
    int rv = peer_base_listen(t, cb, on_accept);

    if (rv != 0) return rv;
    uv_timer_start(peer_base_timer(t), sweep_cb, SWEEP_MS, SWEEP_MS);
    return 0;
}

static int tcp_connect_cb(struct raft_uv_transport *base, struct raft_uv_connect *req, raft_id id,
                          const char *address, raft_uv_connect_cb cb)
{
    struct peer_base *t = peer_base_of(base);
    struct pending *p;
    char why[400], msg[700];
    int rv;

    if (t->closing) return RAFT_CANCELED;
    p = calloc(1, sizeof *p);
    if (p == NULL) return RAFT_NOMEM;
    p->req_id = id;
    snprintf(p->req_addr, sizeof p->req_addr, "%s", address);
    p->version = ONLY_PROTOCOL_1 ? PROTOCOL_1 : peer_base_dial_version(t, p->req_addr, PROTOCOL);
    if (t->asking) p->version = PROTOCOL; /* only the newest carries the question */
    if (p->version < PROTOCOL && !peer_base_level_ok(t, id, address, 1, why, sizeof why)) {
        /* An older binary counts as level 1: below the cluster's. */
        snprintf(msg, sizeof msg, "raft connection to %s not made: %s", address, why);
        peer_base_say(t, msg);
        free(p);
        return RAFT_NOCONNECTION;
    }
    p->t = t;
    p->c.outbound = true;
    p->req = req;
    p->dial.data = p;
    req->cb = cb;
    rv = peer_dial_start(&p->dial, t->loop, address, on_dialed);
    if (rv != 0) {
        free(p);
        return rv == UV_ENOMEM ? RAFT_NOMEM : RAFT_NOCONNECTION;
    }
    p->dialing = true;
    peer_base_append(t, &p->c);
    return 0;
}

/* ---- set-up and release ----------------------------------------------------- */

int peer_tcp_init(struct raft_uv_transport *base, uv_loop_t *loop)
{
    struct peer_tcp *pt = calloc(1, sizeof *pt);
    struct peer_base *t = pt != NULL ? &pt->pb : NULL;

    if (t == NULL) return RAFT_NOMEM;
    peer_base_setup(t, base, loop, &hooks);
    base->listen = tcp_listen_cb;
    base->connect = tcp_connect_cb;
    return 0;
}
