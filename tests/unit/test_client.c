/*
 * test_client.c -- libbaton (client/): the async core, the libuv adapter and
 * the blocking API.
 *
 * There is no batond here. The tests talk to FAKE SERVERS: a TEST DOUBLE of
 * batond written for these tests ("struct fake" below). Each fake listens on
 * 127.0.0.1 at a free port, runs on its own thread with a poll() loop and
 * speaks the real wire protocol through proto/msg.h. It keeps sessions, a
 * FIFO queue per lock, fences and a (session, seq) dedup table in memory,
 * grants and pushes like the protocol says, and can be told to misbehave:
 * answer REDIRECT to another fake, answer NO_LEADER a number of times, drop
 * a connection right after a QUEUED reply, never answer ACQUIRE, ignore wait
 * deadlines, or claim another protocol version. It answers KEEPALIVE (and
 * can be told to stop answering it), and a test can make it expire a
 * session (LOST pushes for its locks, then SESSION_EXPIRED), force the
 * release of one lock (a LOST push), forget a session without a word, or
 * drop every connection. It has no Raft, no persistence and no lease timers
 * of its own; it only has to be faithful enough for the client's side of
 * the protocol.
 *
 * Async tests drive a private uv loop, count every callback and check the
 * exact numbers, and end with every handle closed and uv_loop_close() == 0.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "client/adapters/libuv.h"
#include "client/baton.h"
#include "client/baton_async.h"
#include "client/baton_defs.h"
#include "proto/buf.h"
#include "proto/msg.h"
#include "tests/lib/runner.h"

extern int baton__last_loop_close_rv; /* client/baton.c */

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* ==== the fake server: a TEST DOUBLE of batond ================================= */

#define FK_CONNS 64
#define FK_SESSIONS 64
#define FK_LOCKS 256
#define FK_WAITERS 64
#define FK_DEDUP 8192

struct fake;

struct fk_conn {
    struct fake *f;
    int fd;
    uint64_t id;
    bool hello;
    bool dead;
    struct buf in;
};

struct fk_waiter {
    uint64_t session, waiter;
    uint64_t deadline; /* 0: none */
};

struct fk_lock {
    char name[BATON_MAX_NAME];
    uint16_t len;
    uint64_t holder_session, holder_waiter, fence;
    struct fk_waiter q[FK_WAITERS];
    int nq;
};

struct fk_dedup {
    uint64_t session, seq;
    int32_t status;
    uint8_t kind;
    uint64_t value;
};

struct fk_session {
    uint64_t id;
    uint64_t conn_id;
};

struct fake {
    int lfd;
    uint16_t port;
    char addr[32];
    pthread_t th;
    int stop[2];
    pthread_mutex_t mu; /* config and counters; held while handling a frame */

    /* Behaviour (set before the client starts, or under mu). */
    char redirect_to[64];  /* answer every request with REDIRECT here */
    int no_leader;         /* answer the next N requests with NO_LEADER */
    bool silent_acquire;   /* never answer ACQUIRE */
    bool no_wait_timeouts; /* do not enforce wait_ms deadlines */
    int drop_after_queued; /* close the connection after the next N QUEUED replies */
    int drop_unanswered;   /* apply the next N ACQUIREs but close instead of replying */
    uint32_t hello_version;
    bool ka_silent;        /* do not answer KEEPALIVE */

    /* Actions a test asks for; the fake thread performs them (under mu)
     * within a few ms and clears them. */
    uint64_t do_expire;    /* expire this session: LOST pushes, SESSION_EXPIRED */
    uint64_t do_forget;    /* forget this session without telling anyone */
    char do_force[64];     /* force the release of this lock: LOST push */
    bool do_drop_all;      /* close every connection */

    /* Counters. */
    int n_conns, n_open, n_acquire, n_release, n_cancel, n_close, n_redirect, n_no_leader;
    int n_dedup_hits, n_keepalive, n_keepalive_ok;
    uint64_t last_acquire_seq, last_ack_below;
    uint64_t last_ka_req_id, last_ka_conn; /* of the last KEEPALIVE received */
    uint64_t last_ok_at;   /* when the last RESULT OK / SESSION was sent (now_ms) */

    /* State, fake thread only. */
    struct fk_conn conns[FK_CONNS];
    int nconns;
    uint64_t next_conn_id;
    struct fk_session sessions[FK_SESSIONS];
    int nsessions;
    uint64_t next_session;
    struct fk_lock *locks;
    int nlocks;
    uint64_t next_fence;
    struct fk_dedup *dedup;
    int ndedup;
};

static void fk_send(struct fk_conn *c, const struct msg *m)
{
    struct buf b;
    size_t off = 0;

    buf_init(&b);
    if (proto_encode(&b, m) != 0) FAIL("fake: cannot encode %s", msg_type_name(m->type));
    while (off < b.len) {
        ssize_t n = send(c->fd, b.data + off, b.len - off, MSG_NOSIGNAL);
        if (n <= 0) break;
        off += (size_t)n;
    }
    buf_free(&b);
}

static struct fk_conn *fk_conn(struct fake *f, uint64_t id)
{
    for (int i = 0; i < f->nconns; i++)
        if (f->conns[i].id == id && !f->conns[i].dead) return &f->conns[i];
    return NULL;
}

static struct fk_session *fk_session(struct fake *f, uint64_t id)
{
    for (int i = 0; i < f->nsessions; i++)
        if (f->sessions[i].id == id) return &f->sessions[i];
    return NULL;
}

static void fk_attach(struct fake *f, uint64_t session, uint64_t conn_id)
{
    struct fk_session *s = fk_session(f, session);

    if (s) s->conn_id = conn_id;
}

static struct fk_lock *fk_lock(struct fake *f, struct pstr name, bool create)
{
    struct fk_lock *l;

    for (int i = 0; i < f->nlocks; i++)
        if (f->locks[i].len == name.n && memcmp(f->locks[i].name, name.p, name.n) == 0)
            return &f->locks[i];
    if (!create) return NULL;
    if (f->nlocks == FK_LOCKS) FAIL("fake: too many locks");
    l = &f->locks[f->nlocks++];
    memset(l, 0, sizeof *l);
    memcpy(l->name, name.p, name.n);
    l->len = name.n;
    return l;
}

static struct fk_dedup *fk_dedup(struct fake *f, uint64_t session, uint64_t seq)
{
    for (int i = 0; i < f->ndedup; i++)
        if (f->dedup[i].session == session && f->dedup[i].seq == seq) return &f->dedup[i];
    return NULL;
}

static void fk_remember(struct fake *f, uint64_t session, uint64_t seq, int32_t status,
                        uint8_t kind, uint64_t value)
{
    struct fk_dedup *d = fk_dedup(f, session, seq);

    if (d == NULL) {
        if (f->ndedup == FK_DEDUP) FAIL("fake: dedup table full");
        d = &f->dedup[f->ndedup++];
        d->session = session;
        d->seq = seq;
    }
    d->status = status;
    d->kind = kind;
    d->value = value;
}

static void fk_result(struct fk_conn *c, uint64_t req_id, int32_t status, uint8_t kind,
                      uint64_t value)
{
    struct msg m = {.type = MSG_RESULT, .req_id = req_id};

    if (status != BATON_ESESSION) c->f->last_ok_at = now_ms(); /* under f->mu */
    m.u.result.status = status;
    m.u.result.kind = kind;
    m.u.result.value = value;
    fk_send(c, &m);
}

/* Push to the connection the session is attached to, if it is still open. */
static void fk_push(struct fake *f, uint64_t session, const struct msg *m)
{
    struct fk_session *s = fk_session(f, session);
    struct fk_conn *c = s ? fk_conn(f, s->conn_id) : NULL;

    if (c) fk_send(c, m);
}

/* The lock is free: hand it to the head of its queue, if any. */
static void fk_grant_next(struct fake *f, struct fk_lock *l)
{
    struct msg m = {.type = MSG_GRANTED};
    struct fk_waiter w;

    if (l->holder_session || l->nq == 0) return;
    w = l->q[0];
    memmove(l->q, l->q + 1, (size_t)(l->nq - 1) * sizeof l->q[0]);
    l->nq--;
    l->holder_session = w.session;
    l->holder_waiter = w.waiter;
    l->fence = ++f->next_fence;
    fk_remember(f, w.session, w.waiter, 0, RESULT_GRANTED, l->fence);
    m.u.push.session = w.session;
    m.u.push.waiter = w.waiter;
    m.u.push.fence = l->fence;
    m.u.push.lock.p = l->name;
    m.u.push.lock.n = l->len;
    fk_push(f, w.session, &m);
}

static int fk_find_waiter(const struct fk_lock *l, uint64_t session, uint64_t waiter)
{
    for (int i = 0; i < l->nq; i++)
        if (l->q[i].session == session && l->q[i].waiter == waiter) return i;
    return -1;
}

static void fk_remove_waiter(struct fk_lock *l, int i)
{
    memmove(l->q + i, l->q + i + 1, (size_t)(l->nq - i - 1) * sizeof l->q[0]);
    l->nq--;
}

static void fk_acquire(struct fake *f, struct fk_conn *c, const struct msg *m)
{
    uint64_t s = m->u.op.session, seq = m->u.op.seq;
    struct fk_dedup *d = fk_dedup(f, s, seq);
    struct fk_lock *l;

    f->last_acquire_seq = seq;
    f->last_ack_below = m->u.op.ack_below;
    if (d) {
        f->n_dedup_hits++;
        l = fk_lock(f, m->u.op.lock, false);
        if (d->kind == RESULT_QUEUED && l && fk_find_waiter(l, s, seq) >= 0)
            fk_result(c, m->req_id, 0, RESULT_QUEUED, (uint64_t)fk_find_waiter(l, s, seq) + 1);
        else
            fk_result(c, m->req_id, d->status, d->kind, d->value);
        return;
    }
    l = fk_lock(f, m->u.op.lock, true);
    if (l->holder_session == 0 && l->nq == 0) {
        l->holder_session = s;
        l->holder_waiter = seq;
        l->fence = ++f->next_fence;
        fk_remember(f, s, seq, 0, RESULT_GRANTED, l->fence);
        fk_result(c, m->req_id, 0, RESULT_GRANTED, l->fence);
    } else if (m->u.op.wait_ms == BATON_WAIT_TRY) {
        fk_remember(f, s, seq, BATON_EWOULDBLOCK, RESULT_OK, 0);
        fk_result(c, m->req_id, BATON_EWOULDBLOCK, RESULT_OK, 0);
    } else {
        struct fk_waiter *w;
        if (l->nq == FK_WAITERS) FAIL("fake: queue full");
        w = &l->q[l->nq++];
        w->session = s;
        w->waiter = seq;
        w->deadline = m->u.op.wait_ms > 0 && !f->no_wait_timeouts
                          ? now_ms() + (uint64_t)m->u.op.wait_ms
                          : 0;
        fk_remember(f, s, seq, 0, RESULT_QUEUED, 0);
        fk_result(c, m->req_id, 0, RESULT_QUEUED, (uint64_t)l->nq);
        if (f->drop_after_queued > 0) {
            f->drop_after_queued--;
            c->dead = true;
        }
    }
}

static void fk_release(struct fake *f, struct fk_conn *c, const struct msg *m)
{
    uint64_t s = m->u.op.session, seq = m->u.op.seq;
    struct fk_dedup *d = fk_dedup(f, s, seq);
    struct fk_lock *l;
    int32_t st = BATON_ENOTHELD;

    if (d) {
        f->n_dedup_hits++;
        fk_result(c, m->req_id, d->status, d->kind, d->value);
        return;
    }
    l = fk_lock(f, m->u.op.lock, false);
    if (l && l->holder_session == s && l->fence == m->u.op.fence) {
        l->holder_session = l->holder_waiter = 0;
        fk_grant_next(f, l);
        st = 0;
    }
    fk_remember(f, s, seq, st, RESULT_OK, 0);
    fk_result(c, m->req_id, st, RESULT_OK, 0);
}

static void fk_cancel(struct fake *f, struct fk_conn *c, const struct msg *m)
{
    uint64_t s = m->u.op.session, seq = m->u.op.seq, w = m->u.op.waiter;
    struct fk_dedup *d = fk_dedup(f, s, seq);
    struct fk_lock *l;
    int i;

    if (d) {
        f->n_dedup_hits++;
        fk_result(c, m->req_id, d->status, d->kind, d->value);
        return;
    }
    l = fk_lock(f, m->u.op.lock, false);
    if (l && (i = fk_find_waiter(l, s, w)) >= 0) {
        fk_remove_waiter(l, i);
        fk_remember(f, s, w, BATON_ECANCELED, RESULT_OK, 0);
        fk_remember(f, s, seq, 0, RESULT_CANCELLED, 0);
        fk_result(c, m->req_id, 0, RESULT_CANCELLED, 0);
    } else if (l && l->holder_session == s && l->holder_waiter == w) {
        fk_remember(f, s, seq, 0, RESULT_GRANTED, l->fence);
        fk_result(c, m->req_id, 0, RESULT_GRANTED, l->fence);
    } else {
        fk_remember(f, s, seq, BATON_ENOTFOUND, RESULT_OK, 0);
        fk_result(c, m->req_id, BATON_ENOTFOUND, RESULT_OK, 0);
    }
}

/* CLOSE_SESSION: release the session's locks (granting them on), drop its
 * waits, forget it. */
static void fk_close_session(struct fake *f, struct fk_conn *c, const struct msg *m)
{
    uint64_t s = m->u.op.session;

    for (int i = 0; i < f->nlocks; i++) {
        struct fk_lock *l = &f->locks[i];
        for (int j = l->nq - 1; j >= 0; j--)
            if (l->q[j].session == s) fk_remove_waiter(l, j);
        if (l->holder_session == s) {
            l->holder_session = l->holder_waiter = 0;
            fk_grant_next(f, l);
        }
    }
    for (int i = 0; i < f->nsessions; i++)
        if (f->sessions[i].id == s) f->sessions[i] = f->sessions[--f->nsessions];
    fk_result(c, m->req_id, 0, RESULT_OK, 0);
}

static void fk_handle(struct fake *f, struct fk_conn *c, const struct msg *m)
{
    struct msg r = {.req_id = m->req_id};

    if (m->type == MSG_HELLO) {
        c->hello = true;
        r.type = MSG_HELLO_OK;
        r.u.hello_ok.version = f->hello_version ? f->hello_version : BATON_PROTO_VERSION;
        r.u.hello_ok.node_id = 1;
        fk_send(c, &r);
        return;
    }
    if (!c->hello) FAIL("fake: %s before HELLO", msg_type_name(m->type));
    if (f->redirect_to[0]) {
        f->n_redirect++;
        r.type = MSG_REDIRECT;
        r.u.redirect.leader_id = 2;
        r.u.redirect.client_addr.p = f->redirect_to;
        r.u.redirect.client_addr.n = (uint16_t)strlen(f->redirect_to);
        fk_send(c, &r);
        return;
    }
    if (f->no_leader > 0) {
        f->no_leader--;
        f->n_no_leader++;
        r.type = MSG_NO_LEADER;
        fk_send(c, &r);
        return;
    }
    /* A request naming a session the fake does not know (any more). */
    if ((m->type == MSG_ACQUIRE && !f->silent_acquire && !fk_session(f, m->u.op.session)) ||
        (m->type == MSG_RELEASE && !fk_session(f, m->u.op.session)) ||
        (m->type == MSG_CANCEL && !fk_session(f, m->u.op.session))) {
        fk_result(c, m->req_id, BATON_ESESSION, RESULT_OK, 0);
        return;
    }
    switch (m->type) {
    case MSG_OPEN_SESSION:
        f->n_open++;
        if (f->nsessions == FK_SESSIONS) FAIL("fake: too many sessions");
        f->sessions[f->nsessions].id = ++f->next_session;
        f->sessions[f->nsessions].conn_id = c->id;
        f->nsessions++;
        r.type = MSG_SESSION;
        r.u.session.session = f->next_session;
        r.u.session.ttl_ms = m->u.open_session.ttl_ms ? m->u.open_session.ttl_ms : 10000;
        f->last_ok_at = now_ms();
        fk_send(c, &r);
        return;
    case MSG_KEEPALIVE:
        f->n_keepalive++;
        f->last_ka_req_id = m->req_id;
        f->last_ka_conn = c->id;
        if (f->ka_silent) return;
        if (fk_session(f, m->u.keepalive.session) == NULL) {
            fk_result(c, m->req_id, BATON_ESESSION, RESULT_OK, 0);
            return;
        }
        f->n_keepalive_ok++;
        fk_attach(f, m->u.keepalive.session, c->id);
        fk_result(c, m->req_id, 0, RESULT_OK, 0);
        return;
    case MSG_ACQUIRE:
        f->n_acquire++;
        if (f->silent_acquire) return;
        fk_attach(f, m->u.op.session, c->id);
        if (f->drop_unanswered > 0) {
            /* Apply, then "crash" before the reply leaves: the reply is
             * written to a socket that is shut down first. */
            f->drop_unanswered--;
            shutdown(c->fd, SHUT_RDWR);
            c->dead = true;
        }
        fk_acquire(f, c, m);
        return;
    case MSG_RELEASE:
        f->n_release++;
        fk_attach(f, m->u.op.session, c->id);
        fk_release(f, c, m);
        return;
    case MSG_CANCEL:
        f->n_cancel++;
        fk_attach(f, m->u.op.session, c->id);
        fk_cancel(f, c, m);
        return;
    case MSG_CLOSE_SESSION:
        f->n_close++;
        fk_close_session(f, c, m);
        return;
    default:
        FAIL("fake: unexpected %s", msg_type_name(m->type));
    }
}

/* Wait deadlines: a waiter whose time ran out leaves with WAIT_FAILED. */
static void fk_expire_waits(struct fake *f)
{
    uint64_t now = now_ms();

    for (int i = 0; i < f->nlocks; i++) {
        struct fk_lock *l = &f->locks[i];
        for (int j = 0; j < l->nq;) {
            struct fk_waiter w = l->q[j];
            struct msg m = {.type = MSG_WAIT_FAILED};
            if (w.deadline == 0 || now < w.deadline) {
                j++;
                continue;
            }
            fk_remove_waiter(l, j);
            fk_remember(f, w.session, w.waiter, BATON_ETIMEDOUT, RESULT_OK, 0);
            m.u.push.session = w.session;
            m.u.push.waiter = w.waiter;
            m.u.push.status = BATON_ETIMEDOUT;
            m.u.push.lock.p = l->name;
            m.u.push.lock.n = l->len;
            fk_push(f, w.session, &m);
        }
    }
}

/* Push LOST for the lock l that session s holds, and free the lock for the
 * next waiter. */
static void fk_take_away(struct fake *f, struct fk_lock *l, int32_t status)
{
    struct msg m = {.type = MSG_LOST};

    m.u.push.session = l->holder_session;
    m.u.push.waiter = l->holder_waiter;
    m.u.push.fence = l->fence;
    m.u.push.status = status;
    m.u.push.lock.p = l->name;
    m.u.push.lock.n = l->len;
    fk_push(f, l->holder_session, &m);
    l->holder_session = l->holder_waiter = 0;
    fk_grant_next(f, l);
}

/* Expire session s as batond does: a LOST push per lock it held, its waits
 * dropped, SESSION_EXPIRED, and it is gone. */
static void fk_expire_session(struct fake *f, uint64_t s)
{
    struct msg m = {.type = MSG_SESSION_EXPIRED};

    for (int i = 0; i < f->nlocks; i++) {
        struct fk_lock *l = &f->locks[i];
        for (int j = l->nq - 1; j >= 0; j--)
            if (l->q[j].session == s) fk_remove_waiter(l, j);
        if (l->holder_session == s) fk_take_away(f, l, BATON_ESESSION);
    }
    m.u.session_expired.session = s;
    fk_push(f, s, &m);
    for (int i = 0; i < f->nsessions; i++)
        if (f->sessions[i].id == s) f->sessions[i] = f->sessions[--f->nsessions];
}

/* Perform what the test asked for (under mu). */
static void fk_actions(struct fake *f)
{
    if (f->do_expire) {
        fk_expire_session(f, f->do_expire);
        f->do_expire = 0;
    }
    if (f->do_forget) {
        /* Like an expiry whose pushes got lost on the way. */
        for (int i = 0; i < f->nlocks; i++) {
            struct fk_lock *l = &f->locks[i];
            for (int j = l->nq - 1; j >= 0; j--)
                if (l->q[j].session == f->do_forget) fk_remove_waiter(l, j);
            if (l->holder_session == f->do_forget) {
                l->holder_session = l->holder_waiter = 0;
                fk_grant_next(f, l);
            }
        }
        for (int i = 0; i < f->nsessions; i++)
            if (f->sessions[i].id == f->do_forget) f->sessions[i] = f->sessions[--f->nsessions];
        f->do_forget = 0;
    }
    if (f->do_force[0]) {
        struct pstr name = {f->do_force, (uint16_t)strlen(f->do_force)};
        struct fk_lock *l = fk_lock(f, name, false);
        if (l && l->holder_session) fk_take_away(f, l, BATON_ELOST);
        f->do_force[0] = '\0';
    }
    if (f->do_drop_all) {
        for (int i = 0; i < f->nconns; i++) f->conns[i].dead = true;
        f->do_drop_all = false;
    }
}

static void fk_read(struct fake *f, struct fk_conn *c)
{
    size_t off = 0, flen;
    ssize_t n;

    if (buf_reserve(&c->in, 65536) != 0) FAIL("fake: out of memory");
    n = recv(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len, 0);
    if (n <= 0) {
        c->dead = true;
        return;
    }
    c->in.len += (size_t)n;
    while (!c->dead && proto_frame_check(c->in.data + off, c->in.len - off, &flen) == 1) {
        struct msg m;
        if (proto_decode(c->in.data + off, flen, &m) != 0) FAIL("fake: bad frame from client");
        pthread_mutex_lock(&f->mu);
        fk_handle(f, c, &m);
        pthread_mutex_unlock(&f->mu);
        msg_free(&m);
        off += flen;
    }
    buf_consume(&c->in, off);
}

static void *fk_main(void *arg)
{
    struct fake *f = arg;

    for (;;) {
        struct pollfd p[FK_CONNS + 2];
        int n = 0;

        p[n].fd = f->stop[0];
        p[n++].events = POLLIN;
        p[n].fd = f->lfd;
        p[n++].events = POLLIN;
        for (int i = 0; i < f->nconns; i++) {
            p[n].fd = f->conns[i].fd;
            p[n++].events = POLLIN;
        }
        if (poll(p, (nfds_t)n, 5) < 0 && errno != EINTR) FAIL("fake: poll: %s", strerror(errno));
        if (p[0].revents) break;
        if (p[1].revents & POLLIN) {
            int fd = accept(f->lfd, NULL, NULL);
            if (fd >= 0) {
                int one = 1;
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                if (f->nconns == FK_CONNS) FAIL("fake: too many connections");
                memset(&f->conns[f->nconns], 0, sizeof f->conns[0]);
                f->conns[f->nconns].fd = fd;
                f->conns[f->nconns].f = f;
                f->conns[f->nconns].id = ++f->next_conn_id;
                f->nconns++;
                pthread_mutex_lock(&f->mu);
                f->n_conns++;
                pthread_mutex_unlock(&f->mu);
            }
        }
        for (int i = 2; i < n; i++)
            if (p[i].revents) fk_read(f, &f->conns[i - 2]);
        pthread_mutex_lock(&f->mu);
        fk_expire_waits(f);
        fk_actions(f);
        pthread_mutex_unlock(&f->mu);
        for (int i = 0; i < f->nconns;) {
            if (!f->conns[i].dead) {
                i++;
                continue;
            }
            close(f->conns[i].fd);
            buf_free(&f->conns[i].in);
            f->conns[i] = f->conns[--f->nconns];
        }
    }
    return NULL;
}

static struct fake *fake_start(void)
{
    struct fake *f = calloc(1, sizeof *f);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t len = sizeof sa;
    int one = 1;

    ASSERT(f != NULL);
    f->locks = calloc(FK_LOCKS, sizeof *f->locks);
    f->dedup = calloc(FK_DEDUP, sizeof *f->dedup);
    ASSERT(f->locks && f->dedup);
    pthread_mutex_init(&f->mu, NULL);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT(f->lfd >= 0);
    setsockopt(f->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    ASSERT_EQ(bind(f->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    ASSERT_EQ(listen(f->lfd, 64), 0);
    ASSERT_EQ(getsockname(f->lfd, (struct sockaddr *)&sa, &len), 0);
    f->port = ntohs(sa.sin_port);
    snprintf(f->addr, sizeof f->addr, "127.0.0.1:%u", f->port);
    ASSERT_EQ(pipe(f->stop), 0);
    ASSERT_EQ(pthread_create(&f->th, NULL, fk_main, f), 0);
    return f;
}

static void fake_stop(struct fake *f)
{
    ASSERT_EQ(write(f->stop[1], "x", 1), 1);
    pthread_join(f->th, NULL);
    for (int i = 0; i < f->nconns; i++) {
        close(f->conns[i].fd);
        buf_free(&f->conns[i].in);
    }
    close(f->lfd);
    close(f->stop[0]);
    close(f->stop[1]);
    pthread_mutex_destroy(&f->mu);
    free(f->locks);
    free(f->dedup);
    free(f);
}

/* Read a counter of f safely (the fake thread updates them under mu). */
static int64_t fk_get_(struct fake *f, const void *field, size_t size)
{
    int64_t v;

    pthread_mutex_lock(&f->mu);
    v = size == sizeof(int) ? (int64_t) * (const int *)field : (int64_t) * (const uint64_t *)field;
    pthread_mutex_unlock(&f->mu);
    return v;
}
#define FK_GET(f, field) fk_get_((f), &(f)->field, sizeof (f)->field)

/* Set a behaviour or ask for an action, under mu. */
#define FK_SET(f, field, value)          \
    do {                                 \
        pthread_mutex_lock(&(f)->mu);    \
        (f)->field = (value);            \
        pthread_mutex_unlock(&(f)->mu);  \
    } while (0)

/* Ask the fake to force the release of lock `name`. */
static void fk_force(struct fake *f, const char *name)
{
    pthread_mutex_lock(&f->mu);
    snprintf(f->do_force, sizeof f->do_force, "%s", name);
    pthread_mutex_unlock(&f->mu);
}

/* An address where nothing listens (bound, then closed again). */
static void dead_addr(char *out, size_t n)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    ASSERT_EQ(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    close(fd);
    snprintf(out, n, "127.0.0.1:%u", ntohs(sa.sin_port));
}

/* ==== async helpers ================================================================ */

/* What one callback saw. */
struct rec {
    int calls;
    int status;
    uint64_t value; /* fence or session */
    int order;      /* global callback order, for ordering checks */
    char err[256];
    baton_async_t *free_me; /* free this context from inside the callback */
};

static int cb_seq;

static void rec_note(baton_async_t *ac, struct rec *r, int status, uint64_t value)
{
    r->calls++;
    r->status = status;
    r->value = value;
    r->order = ++cb_seq;
    snprintf(r->err, sizeof r->err, "%s", status < 0 ? baton_async_errmsg(ac) : "");
    if (r->free_me) baton_async_free(r->free_me);
}

static void rec_open(baton_async_t *ac, int status, uint64_t session, void *data)
{
    rec_note(ac, data, status, session);
}

static void rec_lock(baton_async_t *ac, int status, const char *name, uint64_t fence, void *data)
{
    ASSERT(name != NULL && name[0] != '\0');
    rec_note(ac, data, status, fence);
}

static void rec_done(baton_async_t *ac, int status, void *data)
{
    rec_note(ac, data, status, 0);
}

/* A loop with a ticker, so that run_until wakes up regularly. */
struct tloop {
    uv_loop_t loop;
    uv_timer_t tick;
};

static void tick_cb(uv_timer_t *t)
{
    (void)t;
}

static void tloop_init(struct tloop *t)
{
    ASSERT_EQ(uv_loop_init(&t->loop), 0);
    uv_timer_init(&t->loop, &t->tick);
    uv_timer_start(&t->tick, tick_cb, 5, 5);
}

/* Run the loop until *flag >= want, failing after ms milliseconds. */
static void run_until(struct tloop *t, const int *flag, int want, unsigned ms)
{
    uint64_t end = now_ms() + ms;

    while (*flag < want) {
        if (now_ms() > end) FAIL("run_until: still %d of %d after %u ms", *flag, want, ms);
        uv_run(&t->loop, UV_RUN_ONCE);
    }
}

/* Run the loop for about ms milliseconds. */
static void run_for(struct tloop *t, unsigned ms)
{
    uint64_t end = now_ms() + ms;

    while (now_ms() < end) uv_run(&t->loop, UV_RUN_ONCE);
}

/* Close the ticker, let every handle close, and check the loop is empty. */
static void tloop_done(struct tloop *t)
{
    uv_close((uv_handle_t *)&t->tick, NULL);
    uv_run(&t->loop, UV_RUN_DEFAULT);
    ASSERT_EQ(uv_loop_close(&t->loop), 0);
}

/* A context on t's loop, opened against endpoints with a session lease of
 * ttl_ms (0: the default); waits for the open. */
static baton_async_t *a_open_ttl(struct tloop *t, const char *eps, unsigned op_ms, unsigned ttl_ms,
                                 int want_status)
{
    baton_opts o = {.endpoints = eps, .client_name = "test", .op_timeout_ms = op_ms,
                    .connect_timeout_ms = 2000, .session_ttl_ms = ttl_ms};
    struct rec r = {0};
    baton_async_t *ac;

    ASSERT_EQ(baton_async_new(&o, &ac), 0);
    ASSERT_EQ(baton_uv_attach(ac, &t->loop), 0);
    ASSERT_EQ(baton_async_open(ac, rec_open, &r), 0);
    run_until(t, &r.calls, 1, 5000);
    ASSERT_EQ(r.calls, 1);
    ASSERT_EQ(r.status, want_status);
    if (want_status == 0) ASSERT_UEQ(r.value, baton_async_session_id(ac));
    return ac;
}

static baton_async_t *a_open(struct tloop *t, const char *eps, unsigned op_ms, int want_status)
{
    return a_open_ttl(t, eps, op_ms, 0, want_status);
}

/* What the lost callback saw, lock by lock. */
#define LOST_MAX 8
struct lostrec {
    int calls;
    struct {
        char name[32];
        uint64_t fence;
        int why;
        uint64_t at;   /* now_ms() */
        int order;     /* in cb_seq */
        char err[256];
        int unlock_rv; /* of baton_async_unlock called inside, if unlock_inside */
    } e[LOST_MAX];
    bool unlock_inside; /* unlock each lost lock from inside the callback */
    baton_async_t *free_me; /* free this context from inside the callback */
};

static void rec_lost(baton_async_t *ac, const char *lock, uint64_t fence, int why, void *data)
{
    struct lostrec *l = data;
    int i = l->calls++;

    ASSERT(i < LOST_MAX);
    snprintf(l->e[i].name, sizeof l->e[i].name, "%s", lock);
    l->e[i].fence = fence;
    l->e[i].why = why;
    l->e[i].at = now_ms();
    l->e[i].order = ++cb_seq;
    snprintf(l->e[i].err, sizeof l->e[i].err, "%s", baton_async_errmsg(ac));
    if (l->unlock_inside) l->e[i].unlock_rv = baton_async_unlock(ac, lock, fence, NULL, NULL);
    if (l->free_me) baton_async_free(l->free_me);
}

/* Find the lost record of lock `name`: true, with its index in *idx. */
static bool lost_find(const struct lostrec *l, const char *name, int *idx)
{
    for (int i = 0; i < l->calls; i++)
        if (strcmp(l->e[i].name, name) == 0) {
            *idx = i;
            return true;
        }
    return false;
}

/* Close the session, then free. */
static void a_close(struct tloop *t, baton_async_t *ac)
{
    struct rec r = {0};

    ASSERT_EQ(baton_async_close_session(ac, rec_done, &r), 0);
    run_until(t, &r.calls, 1, 5000);
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(baton_async_pending(ac), 0);
    baton_async_free(ac);
}

/* Lock and wait for the outcome. */
static struct rec a_lock(struct tloop *t, baton_async_t *ac, const char *name, int64_t wait_ms)
{
    struct rec r = {0};

    ASSERT_EQ(baton_async_lock(ac, name, wait_ms, rec_lock, &r), 0);
    run_until(t, &r.calls, 1, 5000);
    ASSERT_EQ(r.calls, 1);
    return r;
}

static int a_unlock(struct tloop *t, baton_async_t *ac, const char *name, uint64_t fence)
{
    struct rec r = {0};

    ASSERT_EQ(baton_async_unlock(ac, name, fence, rec_done, &r), 0);
    run_until(t, &r.calls, 1, 5000);
    ASSERT_EQ(r.calls, 1);
    return r.status;
}

/* ==== async tests ================================================================== */

TEST(async_open_close)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;

    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, 0);
    ASSERT(baton_async_session_id(ac) > 0);
    a_close(&t, ac);
    tloop_done(&t);
    ASSERT_EQ(FK_GET(f, n_open), 1);
    ASSERT_EQ(FK_GET(f, n_close), 1);
    fake_stop(f);
}

TEST(async_lock_trylock_unlock)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct rec r1, r2, r3;

    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, 0);
    r1 = a_lock(&t, ac, "a", BATON_WAIT_FOREVER);
    ASSERT_EQ(r1.status, 0);
    ASSERT(r1.value > 0);
    /* A second call of the same context is a separate waiter. */
    r2 = a_lock(&t, ac, "a", BATON_WAIT_TRY);
    ASSERT_EQ(r2.status, BATON_EWOULDBLOCK);
    ASSERT(strstr(r2.err, "'a'") != NULL);
    ASSERT_EQ(a_unlock(&t, ac, "a", r1.value), 0);
    ASSERT_EQ(a_unlock(&t, ac, "a", r1.value), BATON_ENOTHELD);
    r3 = a_lock(&t, ac, "a", BATON_WAIT_TRY);
    ASSERT_EQ(r3.status, 0);
    ASSERT_ULT(r1.value, r3.value);
    ASSERT_EQ(a_unlock(&t, ac, "a", r3.value), 0);
    a_close(&t, ac);
    tloop_done(&t);
    /* ack_below never passes an unanswered request and moves forward. */
    ASSERT(FK_GET(f, last_ack_below) <= FK_GET(f, last_acquire_seq));
    ASSERT(FK_GET(f, last_ack_below) > 1);
    fake_stop(f);
}

TEST(async_queued_waiter_granted_by_push)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *a, *b;
    struct rec ra, rb = {0}, rc = {0};

    tloop_init(&t);
    a = a_open(&t, f->addr, 0, 0);
    b = a_open(&t, f->addr, 0, 0);
    ra = a_lock(&t, a, "x", BATON_WAIT_FOREVER);
    ASSERT_EQ(ra.status, 0);
    ASSERT_EQ(baton_async_lock(b, "x", BATON_WAIT_FOREVER, rec_lock, &rb), 0);
    ASSERT_EQ(baton_async_lock(b, "x", 100, rec_lock, &rc), 0);
    /* The bounded wait runs out in the cluster: WAIT_FAILED push. */
    run_until(&t, &rc.calls, 1, 3000);
    ASSERT_EQ(rc.status, BATON_ETIMEDOUT);
    ASSERT_EQ(rb.calls, 0);
    ASSERT_EQ(a_unlock(&t, a, "x", ra.value), 0);
    run_until(&t, &rb.calls, 1, 3000);
    ASSERT_EQ(rb.status, 0);
    ASSERT_ULT(ra.value, rb.value);
    run_for(&t, 50);
    ASSERT_EQ(rb.calls, 1);
    ASSERT_EQ(rc.calls, 1);
    ASSERT_EQ(FK_GET(f, n_cancel), 0);
    a_close(&t, a);
    a_close(&t, b);
    tloop_done(&t);
    fake_stop(f);
}

/* What the queued callback saw. */
struct queuedrec {
    int calls;
    struct {
        char name[32];
        uint32_t position;
        void *call_data;
        int order; /* in cb_seq */
    } e[4];
};

static void rec_queued(baton_async_t *ac, const char *lock, uint32_t position, void *call_data,
                       void *data)
{
    struct queuedrec *q = data;
    int i = q->calls++;

    (void)ac;
    ASSERT(i < 4);
    snprintf(q->e[i].name, sizeof q->e[i].name, "%s", lock);
    q->e[i].position = position;
    q->e[i].call_data = call_data;
    q->e[i].order = ++cb_seq;
}

/* The queued callback reports each QUEUED answer with its position and the
 * lock call's data, before that call's own callback; a granted-at-once
 * call and a try get none. */
TEST(async_queued_callback)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *a, *b;
    struct rec ra, rt, r1 = {0}, r2 = {0};
    struct queuedrec qa = {0}, qb = {0};

    tloop_init(&t);
    a = a_open(&t, f->addr, 0, 0);
    b = a_open(&t, f->addr, 0, 0);
    baton_async_on_queued(a, rec_queued, &qa);
    baton_async_on_queued(b, rec_queued, &qb);
    ra = a_lock(&t, a, "q", BATON_WAIT_FOREVER);
    ASSERT_EQ(ra.status, 0);
    rt = a_lock(&t, b, "q", BATON_WAIT_TRY);
    ASSERT_EQ(rt.status, BATON_EWOULDBLOCK);
    ASSERT_EQ(baton_async_lock(b, "q", BATON_WAIT_FOREVER, rec_lock, &r1), 0);
    ASSERT_EQ(baton_async_lock(b, "q", BATON_WAIT_FOREVER, rec_lock, &r2), 0);
    run_until(&t, &qb.calls, 2, 3000);
    ASSERT_EQ(qb.calls, 2);
    ASSERT_STREQ(qb.e[0].name, "q");
    ASSERT_EQ(qb.e[0].position, 1);
    ASSERT(qb.e[0].call_data == &r1);
    ASSERT_EQ(qb.e[1].position, 2);
    ASSERT(qb.e[1].call_data == &r2);
    ASSERT_EQ(r1.calls, 0);
    ASSERT_EQ(a_unlock(&t, a, "q", ra.value), 0);
    run_until(&t, &r1.calls, 1, 3000);
    ASSERT_EQ(r1.status, 0);
    ASSERT_LT(qb.e[0].order, r1.order);
    ASSERT_EQ(a_unlock(&t, b, "q", r1.value), 0);
    run_until(&t, &r2.calls, 1, 3000);
    ASSERT_EQ(r2.status, 0);
    ASSERT_EQ(a_unlock(&t, b, "q", r2.value), 0);
    /* Removed: no more notices. */
    baton_async_on_queued(b, NULL, NULL);
    ra = a_lock(&t, a, "q", BATON_WAIT_FOREVER);
    ASSERT_EQ(baton_async_lock(b, "q", BATON_WAIT_FOREVER, rec_lock, &r1), 0);
    run_for(&t, 100);
    ASSERT_EQ(a_unlock(&t, a, "q", ra.value), 0);
    run_until(&t, &r1.calls, 2, 3000);
    ASSERT_EQ(r1.status, 0);
    ASSERT_EQ(a_unlock(&t, b, "q", r1.value), 0);
    ASSERT_EQ(qb.calls, 2);
    ASSERT_EQ(qa.calls, 0);
    a_close(&t, a);
    a_close(&t, b);
    tloop_done(&t);
    fake_stop(f);
}

/* The cluster never reports the bounded wait's end: the client's safety
 * timer CANCELs it at wait_ms + op_timeout_ms. */
TEST(async_safety_cancel)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *a, *b;
    struct rec ra, rb = {0}, rb2;
    uint64_t t0;

    f->no_wait_timeouts = true;
    tloop_init(&t);
    a = a_open(&t, f->addr, 0, 0);
    b = a_open(&t, f->addr, 200, 0);
    ra = a_lock(&t, a, "x", BATON_WAIT_FOREVER);
    t0 = now_ms();
    ASSERT_EQ(baton_async_lock(b, "x", 100, rec_lock, &rb), 0);
    run_until(&t, &rb.calls, 1, 3000);
    ASSERT_EQ(rb.status, BATON_ETIMEDOUT);
    ASSERT_GE(now_ms() - t0, 290);
    ASSERT_EQ(FK_GET(f, n_cancel), 1);
    /* The wait really is gone: after the release the lock is free. */
    ASSERT_EQ(a_unlock(&t, a, "x", ra.value), 0);
    rb2 = a_lock(&t, b, "x", BATON_WAIT_TRY);
    ASSERT_EQ(rb2.status, 0);
    a_close(&t, a);
    a_close(&t, b);
    tloop_done(&t);
    fake_stop(f);
}

TEST(async_redirect)
{
    struct fake *fa = fake_start(), *fb = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct rec r;

    snprintf(fa->redirect_to, sizeof fa->redirect_to, "%s", fb->addr);
    tloop_init(&t);
    ac = a_open(&t, fa->addr, 0, 0);
    r = a_lock(&t, ac, "r", BATON_WAIT_FOREVER);
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(a_unlock(&t, ac, "r", r.value), 0);
    a_close(&t, ac);
    tloop_done(&t);
    ASSERT_EQ(FK_GET(fa, n_redirect), 1);
    ASSERT_EQ(FK_GET(fa, n_open), 0);
    ASSERT_EQ(FK_GET(fb, n_open), 1);
    ASSERT_EQ(FK_GET(fb, n_acquire), 1);
    fake_stop(fa);
    fake_stop(fb);
}

/* Requests pending when the redirect arrives are re-sent to the leader
 * with the same ids. */
TEST(async_redirect_resends_pipelined)
{
    struct fake *fa = fake_start(), *fb = fake_start();
    struct tloop t;
    baton_opts o = {.endpoints = fa->addr};
    struct rec ro = {0}, rl[5] = {{0}};
    baton_async_t *ac;
    char name[16];

    snprintf(fa->redirect_to, sizeof fa->redirect_to, "%s", fb->addr);
    tloop_init(&t);
    ASSERT_EQ(baton_async_new(&o, &ac), 0);
    ASSERT_EQ(baton_uv_attach(ac, &t.loop), 0);
    ASSERT_EQ(baton_async_open(ac, rec_open, &ro), 0);
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "p%d", i);
        ASSERT_EQ(baton_async_lock(ac, name, BATON_WAIT_TRY, rec_lock, &rl[i]), 0);
    }
    run_until(&t, &ro.calls, 1, 3000);
    ASSERT_EQ(ro.status, 0);
    for (int i = 0; i < 5; i++) {
        run_until(&t, &rl[i].calls, 1, 3000);
        ASSERT_EQ(rl[i].status, 0);
        ASSERT(rl[i].order > ro.order);
    }
    a_close(&t, ac);
    tloop_done(&t);
    ASSERT_EQ(FK_GET(fb, n_acquire), 5);
    fake_stop(fa);
    fake_stop(fb);
}

TEST(async_no_leader_retry)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct rec r;
    uint64_t t0 = now_ms();

    f->no_leader = 3;
    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, 0);
    /* Three NO_LEADER answers, each followed by a 50..100 ms back-off. */
    ASSERT_GE(now_ms() - t0, 150);
    ASSERT_EQ(FK_GET(f, n_no_leader), 3);
    ASSERT_EQ(FK_GET(f, n_conns), 4);
    r = a_lock(&t, ac, "n", BATON_WAIT_TRY);
    ASSERT_EQ(r.status, 0);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

TEST(async_endpoint_rotation)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    char dead[32], eps[80];

    dead_addr(dead, sizeof dead);
    snprintf(eps, sizeof eps, "%s, %s", dead, f->addr);
    tloop_init(&t);
    ac = a_open(&t, eps, 0, 0);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

TEST(async_op_timeout)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct rec r;
    uint64_t t0, dt;

    f->silent_acquire = true;
    tloop_init(&t);
    ac = a_open(&t, f->addr, 300, 0);
    t0 = now_ms();
    r = a_lock(&t, ac, "s", BATON_WAIT_FOREVER);
    dt = now_ms() - t0;
    ASSERT_EQ(r.status, BATON_ETIMEDOUT);
    ASSERT_GE(dt, 290);
    ASSERT_LT(dt, 2000);
    /* The abandoned call is withdrawn. */
    run_for(&t, 50);
    ASSERT_EQ(FK_GET(f, n_cancel), 1);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

TEST(async_unavailable)
{
    struct tloop t;
    baton_opts o = {.connect_timeout_ms = 300, .op_timeout_ms = 200};
    struct rec ro = {0}, rl = {0};
    baton_async_t *ac;
    char dead[32];

    dead_addr(dead, sizeof dead);
    o.endpoints = dead;
    tloop_init(&t);
    ASSERT_EQ(baton_async_new(&o, &ac), 0);
    ASSERT_EQ(baton_uv_attach(ac, &t.loop), 0);
    ASSERT_EQ(baton_async_open(ac, rec_open, &ro), 0);
    ASSERT_EQ(baton_async_lock(ac, "u", BATON_WAIT_FOREVER, rec_lock, &rl), 0);
    run_until(&t, &rl.calls, 1, 3000);
    run_until(&t, &ro.calls, 1, 3000);
    ASSERT_EQ(rl.status, BATON_EUNAVAIL); /* its op_timeout (200) came first */
    ASSERT(rl.order < ro.order);
    ASSERT_EQ(ro.status, BATON_EUNAVAIL);
    ASSERT(strstr(ro.err, "refused") != NULL);
    ASSERT_EQ(baton_async_lock(ac, "u", 0, rec_lock, &rl), BATON_ESESSION);
    run_for(&t, 30);
    ASSERT_EQ(rl.calls, 1);
    ASSERT_EQ(ro.calls, 1);
    baton_async_free(ac);
    tloop_done(&t);
}

/* The connection drops right after the QUEUED reply: the client reconnects,
 * re-sends the ACQUIRE with the same seq (the fake's dedup table answers
 * QUEUED again), and the grant is pushed to the new connection. */
TEST(async_reconnect_resends_same_seq)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *a, *b;
    struct rec ra, rb = {0};

    tloop_init(&t);
    a = a_open(&t, f->addr, 0, 0);
    b = a_open(&t, f->addr, 0, 0);
    ra = a_lock(&t, a, "x", BATON_WAIT_FOREVER);
    pthread_mutex_lock(&f->mu);
    f->drop_after_queued = 1;
    pthread_mutex_unlock(&f->mu);
    ASSERT_EQ(baton_async_lock(b, "x", BATON_WAIT_FOREVER, rec_lock, &rb), 0);
    run_for(&t, 300);
    ASSERT_EQ(rb.calls, 0);
    ASSERT_EQ(FK_GET(f, n_acquire), 3);   /* a's, b's, b's again */
    ASSERT_EQ(FK_GET(f, n_dedup_hits), 1);
    ASSERT_EQ(FK_GET(f, n_conns), 3);
    ASSERT_EQ(a_unlock(&t, a, "x", ra.value), 0);
    run_until(&t, &rb.calls, 1, 3000);
    ASSERT_EQ(rb.status, 0);
    ASSERT_ULT(ra.value, rb.value);
    a_close(&t, a);
    a_close(&t, b);
    tloop_done(&t);
    fake_stop(f);
}

/* The cluster applied the ACQUIRE but the connection died before the
 * reply: the re-sent ACQUIRE (same seq) gets the cached grant, once. */
TEST(async_resend_unanswered_gets_cached_result)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct rec r;

    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, 0);
    pthread_mutex_lock(&f->mu);
    f->drop_unanswered = 1;
    pthread_mutex_unlock(&f->mu);
    r = a_lock(&t, ac, "d", BATON_WAIT_TRY);
    ASSERT_EQ(r.status, 0); /* not EWOULDBLOCK: the first apply is ours */
    ASSERT_EQ(FK_GET(f, n_acquire), 2);
    ASSERT_EQ(FK_GET(f, n_dedup_hits), 1);
    ASSERT_EQ(FK_GET(f, n_conns), 2);
    ASSERT_EQ(a_unlock(&t, ac, "d", r.value), 0);
    run_for(&t, 20);
    ASSERT_EQ(r.calls, 1);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

/* Freeing from inside a callback is deferred; the other pending call gets
 * BATON_ECANCELED exactly once, after the freeing callback. */
TEST(async_free_in_callback)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *a, *b;
    struct rec ra, rq = {0}, ry = {0};

    tloop_init(&t);
    a = a_open(&t, f->addr, 0, 0);
    b = a_open(&t, f->addr, 0, 0);
    ra = a_lock(&t, a, "x", BATON_WAIT_FOREVER);
    ASSERT_EQ(baton_async_lock(b, "x", BATON_WAIT_FOREVER, rec_lock, &rq), 0);
    run_for(&t, 50);
    ry.free_me = b;
    ASSERT_EQ(baton_async_lock(b, "y", BATON_WAIT_FOREVER, rec_lock, &ry), 0);
    run_until(&t, &ry.calls, 1, 3000);
    ASSERT_EQ(ry.status, 0);
    ASSERT_EQ(rq.calls, 1);
    ASSERT_EQ(rq.status, BATON_ECANCELED);
    ASSERT(rq.order > ry.order);
    run_for(&t, 50);
    ASSERT_EQ(ry.calls, 1);
    ASSERT_EQ(rq.calls, 1);
    ASSERT_EQ(a_unlock(&t, a, "x", ra.value), 0);
    a_close(&t, a);
    tloop_done(&t);
    fake_stop(f);
}

/* baton_async_free with calls pending: each callback runs once, inside the
 * free, with BATON_ECANCELED; the open callback too if it had not run. */
TEST(async_free_pending)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_opts o = {.endpoints = f->addr};
    baton_async_t *ac;
    struct rec ro = {0}, rl = {0}, ru = {0};

    tloop_init(&t);
    ASSERT_EQ(baton_async_new(&o, &ac), 0);
    ASSERT_EQ(baton_uv_attach(ac, &t.loop), 0);
    ASSERT_EQ(baton_async_open(ac, rec_open, &ro), 0);
    ASSERT_EQ(baton_async_lock(ac, "f", BATON_WAIT_FOREVER, rec_lock, &rl), 0);
    ASSERT_EQ(baton_async_unlock(ac, "f", 1, rec_done, &ru), 0);
    baton_async_free(ac);
    ASSERT_EQ(ro.calls, 1);
    ASSERT_EQ(rl.calls, 1);
    ASSERT_EQ(ru.calls, 1);
    ASSERT_EQ(ro.status, BATON_ECANCELED);
    ASSERT_EQ(rl.status, BATON_ECANCELED);
    ASSERT_EQ(ru.status, BATON_ECANCELED);
    baton_async_free(NULL);
    tloop_done(&t);
    fake_stop(f);
}

TEST(async_cancel)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *a, *b;
    struct rec ra, rb = {0}, rb2;
    int other;

    tloop_init(&t);
    a = a_open(&t, f->addr, 0, 0);
    b = a_open(&t, f->addr, 0, 0);
    ra = a_lock(&t, a, "x", BATON_WAIT_FOREVER);
    ASSERT_EQ(baton_async_lock(b, "x", BATON_WAIT_FOREVER, rec_lock, &rb), 0);
    run_for(&t, 50);
    ASSERT_EQ(baton_async_cancel(b, "x", &other), BATON_ENOTFOUND);
    ASSERT_EQ(baton_async_cancel(b, "x", &rb), 0);
    ASSERT_EQ(rb.calls, 0); /* never from inside the call */
    run_until(&t, &rb.calls, 1, 3000);
    ASSERT_EQ(rb.status, BATON_ECANCELED);
    ASSERT_EQ(FK_GET(f, n_cancel), 1);
    ASSERT_EQ(a_unlock(&t, a, "x", ra.value), 0);
    rb2 = a_lock(&t, b, "x", BATON_WAIT_TRY);
    ASSERT_EQ(rb2.status, 0);
    run_for(&t, 30);
    ASSERT_EQ(rb.calls, 1);
    a_close(&t, a);
    a_close(&t, b);
    tloop_done(&t);
    fake_stop(f);
}

/* A cancel of a call that was never sent completes it without any I/O,
 * but still from the loop. */
TEST(async_cancel_unsent)
{
    struct tloop t;
    baton_opts o = {.connect_timeout_ms = 2000};
    struct rec ro = {0}, rl = {0};
    baton_async_t *ac;
    char dead[32];

    dead_addr(dead, sizeof dead);
    o.endpoints = dead;
    tloop_init(&t);
    ASSERT_EQ(baton_async_new(&o, &ac), 0);
    ASSERT_EQ(baton_uv_attach(ac, &t.loop), 0);
    ASSERT_EQ(baton_async_open(ac, rec_open, &ro), 0);
    ASSERT_EQ(baton_async_lock(ac, "c", BATON_WAIT_FOREVER, rec_lock, &rl), 0);
    ASSERT_EQ(baton_async_cancel(ac, "c", &rl), 0);
    ASSERT_EQ(rl.calls, 0);
    run_until(&t, &rl.calls, 1, 1000);
    ASSERT_EQ(rl.status, BATON_ECANCELED);
    ASSERT_EQ(ro.calls, 0);
    baton_async_free(ac);
    ASSERT_EQ(ro.calls, 1);
    ASSERT_EQ(ro.status, BATON_ECANCELED);
    tloop_done(&t);
}

TEST(async_argument_errors)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_opts bad = {.endpoints = "nonsense"}, none = {.endpoints = " , "}, o = {.endpoints = f->addr};
    baton_async_t *ac;
    struct rec r = {0};
    char big[BATON_MAX_NAME + 2];

    memset(big, 'n', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ASSERT_EQ(baton_async_new(&bad, &ac), BATON_EINVAL);
    ASSERT(ac == NULL);
    ASSERT_EQ(baton_async_new(&none, &ac), BATON_EINVAL);
    ASSERT_EQ(baton_async_new(NULL, &ac), BATON_EINVAL);
    tloop_init(&t);
    ASSERT_EQ(baton_async_new(&o, &ac), 0);
    ASSERT_EQ(baton_async_open(ac, rec_open, &r), BATON_EINVAL); /* no adapter */
    ASSERT_EQ(baton_uv_attach(ac, &t.loop), 0);
    ASSERT_EQ(baton_uv_attach(ac, &t.loop), BATON_EBUSY);
    ASSERT_EQ(baton_async_lock(ac, "x", 0, rec_lock, &r), BATON_ESESSION); /* not opened */
    ASSERT_EQ(baton_async_open(ac, rec_open, &r), 0);
    ASSERT_EQ(baton_async_open(ac, rec_open, &r), BATON_EBUSY);
    ASSERT_EQ(baton_async_lock(ac, "", 0, rec_lock, &r), BATON_EINVAL);
    ASSERT_EQ(baton_async_lock(ac, NULL, 0, rec_lock, &r), BATON_EINVAL);
    ASSERT_EQ(baton_async_lock(ac, big, 0, rec_lock, &r), BATON_EINVAL);
    ASSERT_EQ(baton_async_lock(ac, "x", -2, rec_lock, &r), BATON_EINVAL);
    ASSERT_EQ(baton_async_unlock(ac, "", 1, rec_done, &r), BATON_EINVAL);
    run_until(&t, &r.calls, 1, 3000);
    ASSERT_EQ(r.status, 0);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

TEST(async_calls_after_close)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct rec rc = {0}, rl = {0}, rq = {0}, ra;

    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, 0);
    ra = a_lock(&t, ac, "held", BATON_WAIT_FOREVER);
    ASSERT_EQ(ra.status, 0);
    ASSERT_EQ(baton_async_lock(ac, "held", BATON_WAIT_FOREVER, rec_lock, &rq), 0);
    ASSERT_EQ(baton_async_close_session(ac, rec_done, &rc), 0);
    ASSERT_EQ(baton_async_lock(ac, "x", 0, rec_lock, &rl), BATON_ECLOSED);
    ASSERT_EQ(baton_async_close_session(ac, rec_done, &rl), BATON_ECLOSED);
    run_until(&t, &rc.calls, 1, 3000);
    ASSERT_EQ(rc.status, 0);
    /* The queued call ended first, with ECANCELED. */
    ASSERT_EQ(rq.calls, 1);
    ASSERT_EQ(rq.status, BATON_ECANCELED);
    ASSERT(rq.order < rc.order);
    ASSERT_EQ(rl.calls, 0);
    baton_async_free(ac);
    tloop_done(&t);
    fake_stop(f);
}

/* close_session right after open: the session is opened, then closed. */
TEST(async_close_while_opening)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_opts o = {.endpoints = f->addr};
    baton_async_t *ac;
    struct rec ro = {0}, rl = {0}, rc = {0};

    tloop_init(&t);
    ASSERT_EQ(baton_async_new(&o, &ac), 0);
    ASSERT_EQ(baton_uv_attach(ac, &t.loop), 0);
    ASSERT_EQ(baton_async_open(ac, rec_open, &ro), 0);
    ASSERT_EQ(baton_async_lock(ac, "w", BATON_WAIT_FOREVER, rec_lock, &rl), 0);
    ASSERT_EQ(baton_async_close_session(ac, rec_done, &rc), 0);
    run_until(&t, &rc.calls, 1, 3000);
    ASSERT_EQ(ro.calls, 1);
    ASSERT_EQ(ro.status, 0);
    ASSERT_EQ(rl.calls, 1);
    ASSERT_EQ(rl.status, 0); /* sent before the close, so granted first */
    ASSERT_EQ(rc.status, 0);
    ASSERT(ro.order < rl.order && rl.order < rc.order);
    baton_async_free(ac);
    tloop_done(&t);
    ASSERT_EQ(FK_GET(f, n_open), 1);
    ASSERT_EQ(FK_GET(f, n_close), 1);
    fake_stop(f);
}

TEST(async_version_mismatch)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;

    f->hello_version = BATON_PROTO_VERSION + 1;
    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, BATON_EVERSION);
    baton_async_free(ac);
    tloop_done(&t);
    fake_stop(f);
}

/* Many calls in flight at once, each answered exactly once. */
TEST(async_many_pipelined)
{
    enum { N = 200 };
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    static struct rec rl[N], ru[N];
    int total = 0;
    char name[16];

    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, 0);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "m%d", i);
        ASSERT_EQ(baton_async_lock(ac, name, BATON_WAIT_FOREVER, rec_lock, &rl[i]), 0);
    }
    ASSERT_EQ(baton_async_pending(ac), N);
    for (int i = 0; i < N; i++) run_until(&t, &rl[i].calls, 1, 5000);
    for (int i = 0; i < N; i++) {
        ASSERT_EQ(rl[i].status, 0);
        snprintf(name, sizeof name, "m%d", i);
        ASSERT_EQ(baton_async_unlock(ac, name, rl[i].value, rec_done, &ru[i]), 0);
    }
    for (int i = 0; i < N; i++) run_until(&t, &ru[i].calls, 1, 5000);
    run_for(&t, 20);
    for (int i = 0; i < N; i++) {
        ASSERT_EQ(ru[i].status, 0);
        total += rl[i].calls + ru[i].calls;
    }
    ASSERT_EQ(total, 2 * N);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}


/* ==== sessions, leases and lost locks ============================================= */

/* An idle session sends a keepalive about every ttl/3, from req_ids that
 * cannot be taken for seqs, and keeps its locks. */
TEST(async_keepalive_interval)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct lostrec lr = {0};
    struct rec r;
    int n;

    tloop_init(&t);
    ac = a_open_ttl(&t, f->addr, 0, 600, 0);
    baton_async_on_lost(ac, rec_lost, &lr);
    r = a_lock(&t, ac, "k", BATON_WAIT_FOREVER);
    ASSERT_EQ(r.status, 0);
    run_for(&t, 2000);
    /* 2000 ms / 200 ms = 10; allow for timer slack either way. */
    n = (int)FK_GET(f, n_keepalive);
    ASSERT_GE(n, 7);
    ASSERT_LE(n, 12);
    ASSERT_UEQ((uint64_t)FK_GET(f, last_ka_req_id) >> 63, 1);
    ASSERT_EQ(lr.calls, 0);
    ASSERT_EQ(FK_GET(f, n_open), 1);
    ASSERT_EQ(a_unlock(&t, ac, "k", r.value), 0);
    ASSERT_EQ(baton_async_pending(ac), 0);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

/* The fake stops answering keepalives: once ttl has passed since the send
 * of the last acknowledged one, every held lock is declared lost (once),
 * unlocking them says BATON_ELOST without I/O, and the next call gets a
 * fresh session. */
TEST(async_lease_runs_out)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct lostrec lr = {0};
    struct rec ra, rb, rc, rs = {0}, ru = {0};
    uint64_t s1, last_ok;
    int i;

    tloop_init(&t);
    ac = a_open_ttl(&t, f->addr, 0, 600, 0);
    baton_async_on_lost(ac, rec_lost, &lr);
    baton_async_on_session(ac, rec_open, &rs);
    s1 = baton_async_session_id(ac);
    ra = a_lock(&t, ac, "a", BATON_WAIT_FOREVER);
    rb = a_lock(&t, ac, "b", BATON_WAIT_FOREVER);
    ASSERT_EQ(ra.status, 0);
    ASSERT_EQ(rb.status, 0);
    run_for(&t, 450); /* two keepalives or so are acknowledged */
    ASSERT_GE(FK_GET(f, n_keepalive_ok), 1);
    FK_SET(f, ka_silent, true);
    run_until(&t, &lr.calls, 2, 3000);
    last_ok = (uint64_t)FK_GET(f, last_ok_at);
    ASSERT(lost_find(&lr, "a", &i));
    ASSERT_UEQ(lr.e[i].fence, ra.value);
    ASSERT(lost_find(&lr, "b", &i));
    ASSERT_UEQ(lr.e[i].fence, rb.value);
    for (i = 0; i < 2; i++) {
        ASSERT_EQ(lr.e[i].why, BATON_ESESSION);
        ASSERT(strstr(lr.e[i].err, "lease ran out") != NULL);
        /* Not after the lease ends: it was sent before the fake answered
         * it (a little slack for the loop's wake-up)... */
        ASSERT_LE(lr.e[i].at, last_ok + 600 + 100);
        /* ...and not long before either. */
        ASSERT_GE(lr.e[i].at + 100, last_ok + 600);
    }
    ASSERT_EQ(baton_async_session_id(ac), 0);
    /* The lock is gone: unlocking says so at once, and runs no callback. */
    ASSERT_EQ(baton_async_unlock(ac, "a", ra.value, rec_done, &ru), BATON_ELOST);
    ASSERT(strstr(baton_async_errmsg(ac), "lost") != NULL);
    /* The next call opens a fresh session. */
    FK_SET(f, ka_silent, false);
    rc = a_lock(&t, ac, "c", BATON_WAIT_TRY);
    ASSERT_EQ(rc.status, 0);
    ASSERT_EQ(rs.calls, 1);
    ASSERT_EQ(rs.status, 0);
    ASSERT(rs.value != 0 && rs.value != s1);
    ASSERT_UEQ(rs.value, baton_async_session_id(ac));
    ASSERT_EQ(FK_GET(f, n_open), 2);
    ASSERT_EQ(baton_async_unlock(ac, "b", rb.value, rec_done, &ru), BATON_ELOST);
    run_for(&t, 100);
    ASSERT_EQ(lr.calls, 2);
    ASSERT_EQ(ru.calls, 0);
    ASSERT_EQ(a_unlock(&t, ac, "c", rc.value), 0);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

/* A LOST push for one lock: only that one is lost (BATON_ELOST), the next
 * waiter gets it, the other lock stays held. Unlocking a lost lock from
 * inside the lost callback works and returns BATON_ELOST. */
TEST(async_lost_push_one_lock)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *a, *b;
    struct lostrec lr = {.unlock_inside = true};
    struct rec rx, ry, rw = {0};

    tloop_init(&t);
    a = a_open(&t, f->addr, 0, 0);
    b = a_open(&t, f->addr, 0, 0);
    baton_async_on_lost(a, rec_lost, &lr);
    rx = a_lock(&t, a, "x", BATON_WAIT_FOREVER);
    ry = a_lock(&t, a, "y", BATON_WAIT_FOREVER);
    ASSERT_EQ(baton_async_lock(b, "x", BATON_WAIT_FOREVER, rec_lock, &rw), 0);
    run_for(&t, 50);
    ASSERT_EQ(rw.calls, 0);
    fk_force(f, "x");
    run_until(&t, &lr.calls, 1, 3000);
    run_until(&t, &rw.calls, 1, 3000);
    ASSERT_STREQ(lr.e[0].name, "x");
    ASSERT_UEQ(lr.e[0].fence, rx.value);
    ASSERT_EQ(lr.e[0].why, BATON_ELOST);
    ASSERT(strstr(lr.e[0].err, "forced") != NULL);
    ASSERT_EQ(lr.e[0].unlock_rv, BATON_ELOST);
    ASSERT_EQ(rw.status, 0);
    ASSERT_ULT(rx.value, rw.value);
    run_for(&t, 100);
    ASSERT_EQ(lr.calls, 1);
    /* The session lives on, and so does y. */
    ASSERT_EQ(a_unlock(&t, a, "y", ry.value), 0);
    ASSERT_EQ(a_unlock(&t, b, "x", rw.value), 0);
    ASSERT_EQ(FK_GET(f, n_open), 2);
    a_close(&t, a);
    a_close(&t, b);
    tloop_done(&t);
    fake_stop(f);
}

/* SESSION_EXPIRED (after the LOST pushes): every held lock is lost once,
 * the pending wait fails with BATON_ESESSION after the lost callbacks, and
 * the next call opens a fresh session. */
TEST(async_session_expired)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *a, *b;
    struct lostrec lr = {0};
    struct rec rp, rq, rb, rw = {0}, rn, rs = {0};
    uint64_t s1;
    int i;

    tloop_init(&t);
    a = a_open(&t, f->addr, 0, 0);
    b = a_open(&t, f->addr, 0, 0);
    baton_async_on_lost(a, rec_lost, &lr);
    baton_async_on_session(a, rec_open, &rs);
    s1 = baton_async_session_id(a);
    rp = a_lock(&t, a, "p", BATON_WAIT_FOREVER);
    rq = a_lock(&t, a, "q", BATON_WAIT_FOREVER);
    rb = a_lock(&t, b, "w", BATON_WAIT_FOREVER);
    ASSERT_EQ(baton_async_lock(a, "w", BATON_WAIT_FOREVER, rec_lock, &rw), 0);
    run_for(&t, 50);
    FK_SET(f, do_expire, s1);
    run_until(&t, &lr.calls, 2, 3000);
    run_until(&t, &rw.calls, 1, 3000);
    ASSERT(lost_find(&lr, "p", &i));
    ASSERT_UEQ(lr.e[i].fence, rp.value);
    ASSERT(lost_find(&lr, "q", &i));
    ASSERT_UEQ(lr.e[i].fence, rq.value);
    for (i = 0; i < 2; i++) {
        ASSERT_EQ(lr.e[i].why, BATON_ESESSION);
        ASSERT(lr.e[i].order < rw.order);
    }
    ASSERT_EQ(rw.status, BATON_ESESSION);
    ASSERT_EQ(baton_async_session_id(a), 0);
    ASSERT_EQ(rs.calls, 0); /* no fresh session until a call needs one */
    rn = a_lock(&t, a, "n", BATON_WAIT_TRY);
    ASSERT_EQ(rn.status, 0);
    ASSERT_EQ(rs.calls, 1);
    ASSERT_EQ(rs.status, 0);
    ASSERT(rs.value != s1);
    ASSERT_UEQ(baton_async_session_id(a), rs.value);
    ASSERT_EQ(FK_GET(f, n_open), 3);
    ASSERT_EQ(baton_async_unlock(a, "p", rp.value, NULL, NULL), BATON_ELOST);
    ASSERT_EQ(baton_async_unlock(a, "q", rq.value, NULL, NULL), BATON_ELOST);
    run_for(&t, 100);
    ASSERT_EQ(lr.calls, 2);
    ASSERT_EQ(rw.calls, 1);
    ASSERT_EQ(a_unlock(&t, a, "n", rn.value), 0);
    ASSERT_EQ(a_unlock(&t, b, "w", rb.value), 0);
    a_close(&t, a);
    a_close(&t, b);
    tloop_done(&t);
    fake_stop(f);
}

/* The cluster forgot the session without a push: the next keepalive is
 * answered BATON_ESESSION, which ends the session long before its lease
 * would have run out here. */
TEST(async_keepalive_esession)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct lostrec lr = {0};
    struct rec r, r2;
    uint64_t t0;

    tloop_init(&t);
    ac = a_open_ttl(&t, f->addr, 0, 3000, 0);
    baton_async_on_lost(ac, rec_lost, &lr);
    r = a_lock(&t, ac, "k", BATON_WAIT_FOREVER);
    ASSERT_EQ(r.status, 0);
    t0 = now_ms();
    FK_SET(f, do_forget, baton_async_session_id(ac));
    run_until(&t, &lr.calls, 1, 3000);
    ASSERT_LT(now_ms() - t0, 2000); /* the next keepalive, at most ttl/3 later */
    ASSERT_EQ(lr.e[0].why, BATON_ESESSION);
    ASSERT(strstr(lr.e[0].err, "keepalive") != NULL);
    r2 = a_lock(&t, ac, "k", BATON_WAIT_TRY); /* the forgotten session's hold is gone too */
    ASSERT_EQ(r2.status, 0);
    ASSERT_EQ(FK_GET(f, n_open), 2);
    ASSERT_EQ(a_unlock(&t, ac, "k", r2.value), 0);
    ASSERT_EQ(baton_async_unlock(ac, "k", r.value, NULL, NULL), BATON_ELOST);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

/* After a reconnect the client says KEEPALIVE at once (not ttl/3 later),
 * so that the node knows where the session is, and keeps its lock. */
TEST(async_reconnect_sends_keepalive)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct lostrec lr = {0};
    struct rec r;
    uint64_t t0;

    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, 0); /* ttl 10 s: keepalives every 3.3 s */
    baton_async_on_lost(ac, rec_lost, &lr);
    r = a_lock(&t, ac, "k", BATON_WAIT_FOREVER);
    ASSERT_EQ(FK_GET(f, n_keepalive), 0);
    FK_SET(f, do_drop_all, true);
    t0 = now_ms();
    while (FK_GET(f, n_keepalive) == 0) {
        if (now_ms() - t0 > 1000) FAIL("no keepalive after the reconnect");
        run_for(&t, 10);
    }
    ASSERT_EQ(FK_GET(f, n_conns), 2);
    ASSERT_EQ(FK_GET(f, last_ka_conn), 2); /* on the new connection */
    ASSERT_EQ(a_unlock(&t, ac, "k", r.value), 0);
    ASSERT_EQ(lr.calls, 0);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

/* A node that stops answering keepalives (stopped, or a leader cut off
 * from the majority) is left after ttl/6 of silence, before the lease runs
 * out; the session carries on over the new connection. */
TEST(async_silent_node_is_left)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct lostrec lr = {0};
    struct rec r, r2;
    uint64_t t0;

    tloop_init(&t);
    ac = a_open_ttl(&t, f->addr, 0, 3000, 0); /* keepalives every 1 s, left after 0.5 s */
    baton_async_on_lost(ac, rec_lost, &lr);
    r = a_lock(&t, ac, "k", BATON_WAIT_FOREVER);
    ASSERT_EQ(r.status, 0);
    run_for(&t, 100);
    FK_SET(f, ka_silent, true);
    t0 = now_ms();
    while (FK_GET(f, n_conns) < 2) {
        if (now_ms() - t0 > 2500) FAIL("still on the silent connection after 2500 ms");
        run_for(&t, 10);
    }
    ASSERT(strstr(baton_async_errmsg(ac), "unanswered") != NULL);
    FK_SET(f, ka_silent, false);
    r2 = a_lock(&t, ac, "k2", BATON_WAIT_TRY);
    ASSERT_EQ(r2.status, 0);
    run_for(&t, 1300); /* a keepalive on the new connection is answered */
    ASSERT_EQ(lr.calls, 0);
    ASSERT_EQ(FK_GET(f, n_open), 1);
    ASSERT_GE(FK_GET(f, last_ka_conn), 2);
    ASSERT_EQ(a_unlock(&t, ac, "k", r.value), 0);
    ASSERT_EQ(a_unlock(&t, ac, "k2", r2.value), 0);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

/* Freeing the context from inside a lost callback is deferred: the other
 * lost callback and the failed wait, queued with it (the lease ran out, so
 * all three were settled in one go), still run once each with their own
 * status. */
TEST(async_free_in_lost_callback)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *a, *b;
    struct lostrec lr = {0};
    struct rec rp, rq, rb, rw = {0};

    tloop_init(&t);
    a = a_open_ttl(&t, f->addr, 0, 600, 0);
    b = a_open(&t, f->addr, 0, 0);
    baton_async_on_lost(a, rec_lost, &lr);
    rp = a_lock(&t, a, "p", BATON_WAIT_FOREVER);
    rq = a_lock(&t, a, "q", BATON_WAIT_FOREVER);
    rb = a_lock(&t, b, "w", BATON_WAIT_FOREVER);
    ASSERT_EQ(rp.status | rq.status | rb.status, 0);
    ASSERT_EQ(baton_async_lock(a, "w", BATON_WAIT_FOREVER, rec_lock, &rw), 0);
    run_for(&t, 50);
    lr.free_me = a;
    /* A stuck node: it answers nothing (the client's reconnects re-send
     * the waiting ACQUIRE, which would otherwise renew the lease). */
    FK_SET(f, silent_acquire, true);
    FK_SET(f, ka_silent, true);
    run_until(&t, &rw.calls, 1, 3000);
    ASSERT_EQ(lr.calls, 2);
    ASSERT_EQ(rw.status, BATON_ESESSION);
    run_for(&t, 50);
    ASSERT_EQ(lr.calls, 2);
    ASSERT_EQ(rw.calls, 1);
    ASSERT_EQ(a_unlock(&t, b, "w", rb.value), 0);
    a_close(&t, b);
    tloop_done(&t);
    fake_stop(f);
}

/* ==== blocking API ================================================================= */

static baton_t *b_connect(const char *eps)
{
    baton_opts o = {.endpoints = eps, .client_name = "blocking-test"};
    baton_t *b = NULL;

    ASSERT_EQ(baton_connect(&o, &b), 0);
    ASSERT(b != NULL);
    return b;
}

TEST(blocking_basic)
{
    struct fake *f = fake_start();
    baton_t *b = b_connect(f->addr);
    baton_lock_t *l = NULL, *l2 = NULL;
    uint64_t f1;

    ASSERT(baton_session_id(b) > 0);
    ASSERT_STREQ(baton_errmsg(b), "");
    ASSERT_EQ(baton_lock(b, "k", &l), 0);
    ASSERT_STREQ(baton_lock_name(l), "k");
    f1 = baton_lock_fence(l);
    ASSERT(f1 > 0);
    ASSERT_EQ(baton_trylock(b, "k", &l2), BATON_EWOULDBLOCK);
    ASSERT(l2 == NULL);
    ASSERT(strstr(baton_errmsg(b), "baton_trylock 'k'") != NULL);
    ASSERT_EQ(baton_lock_timeout(b, "k", 100, &l2), BATON_ETIMEDOUT);
    ASSERT_EQ(baton_lock(b, "", &l2), BATON_EINVAL);
    ASSERT_EQ(baton_unlock(l), 0);
    ASSERT_EQ(baton_unlock(NULL), 0);
    ASSERT_EQ(baton_lock_timeout(b, "k", 0, &l), 0);
    ASSERT_ULT(f1, baton_lock_fence(l));
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(b);
    ASSERT_EQ(baton__last_loop_close_rv, 0);
    baton_close(NULL);
    ASSERT_EQ(FK_GET(f, n_close), 1);
    fake_stop(f);
}

/* Eight threads share one baton_t and fight over one lock. */
#define N_THREADS 8
#define N_ROUNDS 40

struct shared {
    baton_t *b;
    atomic_int inside;
    long counter;
    uint64_t last_fence;
    atomic_int errors;
};

static void *worker(void *arg)
{
    struct shared *s = arg;

    for (int i = 0; i < N_ROUNDS; i++) {
        baton_lock_t *l;
        if (baton_lock(s->b, "ctr", &l) != 0) {
            atomic_fetch_add(&s->errors, 1);
            continue;
        }
        if (atomic_fetch_add(&s->inside, 1) != 0) atomic_fetch_add(&s->errors, 1);
        if (baton_lock_fence(l) <= s->last_fence) atomic_fetch_add(&s->errors, 1);
        s->last_fence = baton_lock_fence(l);
        s->counter++;
        atomic_fetch_sub(&s->inside, 1);
        if (baton_unlock(l) != 0) atomic_fetch_add(&s->errors, 1);
    }
    return NULL;
}

TEST(blocking_shared_by_8_threads)
{
    struct fake *f = fake_start();
    struct shared s = {0};
    pthread_t th[N_THREADS];

    s.b = b_connect(f->addr);
    for (int i = 0; i < N_THREADS; i++) ASSERT_EQ(pthread_create(&th[i], NULL, worker, &s), 0);
    for (int i = 0; i < N_THREADS; i++) pthread_join(th[i], NULL);
    ASSERT_EQ(atomic_load(&s.errors), 0);
    ASSERT_EQ(s.counter, N_THREADS * N_ROUNDS);
    baton_close(s.b);
    ASSERT_EQ(baton__last_loop_close_rv, 0);
    ASSERT_EQ(FK_GET(f, n_acquire), N_THREADS * N_ROUNDS);
    fake_stop(f);
}

struct waiter_arg {
    baton_t *b;
    int rv;
    atomic_int started;
};

static void *blocked_locker(void *arg)
{
    struct waiter_arg *w = arg;
    baton_lock_t *l = NULL;

    atomic_store(&w->started, 1);
    w->rv = baton_lock(w->b, "x", &l);
    if (l) baton_unlock(l);
    return NULL;
}

/* baton_close wakes a thread blocked in baton_lock with BATON_ECLOSED, and
 * a lock still held may be unlocked after the close. */
TEST(blocking_close_wakes_and_unlock_after_close)
{
    struct fake *f = fake_start();
    baton_t *b1 = b_connect(f->addr), *b2 = b_connect(f->addr);
    baton_lock_t *l1, *l2;
    struct waiter_arg w = {.b = b2};
    pthread_t th;

    ASSERT_EQ(baton_lock(b1, "x", &l1), 0);
    ASSERT_EQ(baton_lock(b2, "other", &l2), 0);
    ASSERT_EQ(pthread_create(&th, NULL, blocked_locker, &w), 0);
    while (!atomic_load(&w.started)) sleep_ms(1);
    sleep_ms(100);
    baton_close(b2);
    pthread_join(th, NULL);
    ASSERT_EQ(w.rv, BATON_ECLOSED);
    ASSERT_EQ(baton__last_loop_close_rv, 0);
    ASSERT_EQ(baton_unlock(l2), BATON_ECLOSED); /* b2's memory lived for this */
    ASSERT_EQ(baton_unlock(l1), 0);
    baton_close(b1);
    fake_stop(f);
}

TEST(blocking_connect_errors)
{
    baton_opts o = {.endpoints = "127.0.0.1:notaport"};
    baton_t *b = (baton_t *)&o;
    char dead[32];
    uint64_t t0;

    ASSERT_EQ(baton_connect(&o, &b), BATON_EINVAL);
    ASSERT(b == NULL);
    ASSERT(strlen(baton_connect_errmsg()) > 0);
    ASSERT_EQ(baton_connect(NULL, &b), BATON_EINVAL);
    dead_addr(dead, sizeof dead);
    o.endpoints = dead;
    o.connect_timeout_ms = 300;
    t0 = now_ms();
    ASSERT_EQ(baton_connect(&o, &b), BATON_EUNAVAIL);
    ASSERT_GE(now_ms() - t0, 290);
    ASSERT(b == NULL);
    ASSERT(strstr(baton_connect_errmsg(), "refused") != NULL);
    ASSERT_EQ(baton__last_loop_close_rv, 0);
}

static void *other_thread_errmsg(void *arg)
{
    baton_t *b = arg;
    baton_lock_t *l = NULL;

    if (baton_trylock(b, "e", &l) != BATON_EWOULDBLOCK) return (void *)1;
    if (strstr(baton_errmsg(b), "'e'") == NULL) return (void *)2;
    return NULL;
}

TEST(blocking_errmsg_per_thread)
{
    struct fake *f = fake_start();
    baton_t *b = b_connect(f->addr);
    baton_lock_t *l;
    pthread_t th;
    void *res;

    ASSERT_EQ(baton_lock(b, "e", &l), 0);
    ASSERT_EQ(pthread_create(&th, NULL, other_thread_errmsg, b), 0);
    pthread_join(th, &res);
    ASSERT(res == NULL);
    ASSERT_STREQ(baton_errmsg(b), ""); /* this thread's call did not fail */
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(b);
    fake_stop(f);
}

/* Through a redirect and NO_LEADER, the blocking API works the same. */
TEST(blocking_redirect_and_no_leader)
{
    struct fake *fa = fake_start(), *fb = fake_start();
    baton_t *b;
    baton_lock_t *l;

    snprintf(fa->redirect_to, sizeof fa->redirect_to, "%s", fb->addr);
    fb->no_leader = 2;
    b = b_connect(fa->addr);
    ASSERT_EQ(baton_lock(b, "z", &l), 0);
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(b);
    ASSERT_EQ(FK_GET(fb, n_no_leader), 2);
    ASSERT_GE(FK_GET(fa, n_redirect), 1);
    fake_stop(fa);
    fake_stop(fb);
}

/* What the blocking lost callback saw; written on the I/O thread, read by
 * the test's thread. */
struct blost {
    atomic_int calls;
    atomic_int why;
    atomic_int on_io_thread;   /* 1 if it ran on a thread other than the test's */
    atomic_int unlock_rv;      /* baton_unlock of `inside` from the callback */
    atomic_int lock_rv;        /* baton_trylock from the callback */
    _Atomic(baton_lock_t *) inside; /* unlock this one from the callback */
    pthread_t test_thread;
};

static void blost_cb(baton_t *b, const char *lock, uint64_t fence, int why, void *data)
{
    struct blost *bl = data;
    baton_lock_t *l = atomic_load(&bl->inside), *l2 = NULL;

    (void)fence;
    atomic_store(&bl->why, why);
    atomic_store(&bl->on_io_thread, !pthread_equal(pthread_self(), bl->test_thread));
    if (l && strcmp(lock, baton_lock_name(l)) == 0) {
        atomic_store(&bl->inside, NULL);
        atomic_store(&bl->unlock_rv, baton_unlock(l));
        atomic_store(&bl->lock_rv, baton_trylock(b, "other", &l2));
    }
    atomic_fetch_add(&bl->calls, 1);
}

static void wait_atomic(atomic_int *v, int want, unsigned ms)
{
    uint64_t end = now_ms() + ms;

    while (atomic_load(v) < want) {
        if (now_ms() > end) FAIL("still %d of %d after %u ms", atomic_load(v), want, ms);
        sleep_ms(5);
    }
}

/* The blocking API: the lease runs out while the caller's thread is busy
 * (the fake stops answering keepalives); the lost callback runs on the I/O
 * thread once per lock, can unlock there without waiting but cannot lock;
 * the caller's unlock says BATON_ELOST; the next call gets a fresh session. */
TEST(blocking_lost_callback)
{
    struct fake *f = fake_start();
    baton_opts o = {.endpoints = f->addr, .session_ttl_ms = 600};
    struct blost bl = {0};
    baton_t *b = NULL;
    baton_lock_t *lx, *ly, *lz;
    uint64_t s1;

    bl.test_thread = pthread_self();
    ASSERT_EQ(baton_connect(&o, &b), 0);
    baton_on_lost(b, blost_cb, &bl);
    s1 = baton_session_id(b);
    ASSERT_EQ(baton_lock(b, "x", &lx), 0);
    ASSERT_EQ(baton_lock(b, "y", &ly), 0);
    atomic_store(&bl.inside, lx);
    sleep_ms(300);
    FK_SET(f, ka_silent, true);
    wait_atomic(&bl.calls, 2, 3000);
    ASSERT_EQ(atomic_load(&bl.why), BATON_ESESSION);
    ASSERT_EQ(atomic_load(&bl.on_io_thread), 1);
    ASSERT_EQ(atomic_load(&bl.unlock_rv), BATON_ELOST);
    ASSERT_EQ(atomic_load(&bl.lock_rv), BATON_EBUSY);
    FK_SET(f, ka_silent, false);
    ASSERT_EQ(baton_unlock(ly), BATON_ELOST);
    ASSERT(strstr(baton_errmsg(b), "lost") != NULL);
    ASSERT_UEQ(baton_session_id(b), s1); /* until the fresh one opens */
    ASSERT_EQ(baton_lock(b, "z", &lz), 0);
    ASSERT(baton_session_id(b) != s1);
    ASSERT_EQ(baton_unlock(lz), 0);
    sleep_ms(50);
    ASSERT_EQ(atomic_load(&bl.calls), 2);
    baton_close(b);
    ASSERT_EQ(baton__last_loop_close_rv, 0);
    ASSERT_EQ(FK_GET(f, n_open), 2);
    fake_stop(f);
}

struct bwait {
    baton_t *b;
    int rv;
};

static void *bwait_main(void *arg)
{
    struct bwait *w = arg;
    baton_lock_t *l = NULL;

    w->rv = baton_lock(w->b, "busy", &l);
    if (l) baton_unlock(l);
    return NULL;
}

/* The session expires while a thread waits in baton_lock: the wait ends
 * with BATON_ESESSION; a forced release of a held lock is BATON_ELOST. */
TEST(blocking_session_expired_and_forced_release)
{
    struct fake *f = fake_start();
    baton_t *b1 = b_connect(f->addr), *b2 = b_connect(f->addr);
    struct blost bl = {0};
    struct bwait w = {.b = b2};
    baton_lock_t *l1, *l2;
    pthread_t th;

    bl.test_thread = pthread_self();
    baton_on_lost(b1, blost_cb, &bl);
    ASSERT_EQ(baton_lock(b1, "busy", &l1), 0);
    ASSERT_EQ(pthread_create(&th, NULL, bwait_main, &w), 0);
    sleep_ms(100);
    FK_SET(f, do_expire, baton_session_id(b2));
    pthread_join(th, NULL);
    ASSERT_EQ(w.rv, BATON_ESESSION);
    /* An operator takes "busy" away from b1. */
    fk_force(f, "busy");
    wait_atomic(&bl.calls, 1, 3000);
    ASSERT_EQ(atomic_load(&bl.why), BATON_ELOST);
    ASSERT_EQ(baton_unlock(l1), BATON_ELOST);
    /* b2 gets a fresh session, and the lock. */
    ASSERT_EQ(baton_trylock(b2, "busy", &l2), 0);
    ASSERT_EQ(baton_unlock(l2), 0);
    baton_close(b1);
    baton_close(b2);
    ASSERT_EQ(FK_GET(f, n_open), 3);
    fake_stop(f);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(30);
    RUN(async_open_close);
    RUN(async_lock_trylock_unlock);
    RUN(async_queued_waiter_granted_by_push);
    RUN(async_queued_callback);
    RUN(async_safety_cancel);
    RUN(async_redirect);
    RUN(async_redirect_resends_pipelined);
    RUN(async_no_leader_retry);
    RUN(async_endpoint_rotation);
    RUN(async_op_timeout);
    RUN(async_unavailable);
    RUN(async_reconnect_resends_same_seq);
    RUN(async_resend_unanswered_gets_cached_result);
    RUN(async_free_in_callback);
    RUN(async_free_pending);
    RUN(async_cancel);
    RUN(async_cancel_unsent);
    RUN(async_argument_errors);
    RUN(async_calls_after_close);
    RUN(async_close_while_opening);
    RUN(async_version_mismatch);
    RUN(async_many_pipelined);
    RUN(async_keepalive_interval);
    RUN(async_lease_runs_out);
    RUN(async_lost_push_one_lock);
    RUN(async_session_expired);
    RUN(async_keepalive_esession);
    RUN(async_reconnect_sends_keepalive);
    RUN(async_silent_node_is_left);
    RUN(async_free_in_lost_callback);
    RUN(blocking_basic);
    RUN(blocking_shared_by_8_threads);
    RUN(blocking_close_wakes_and_unlock_after_close);
    RUN(blocking_connect_errors);
    RUN(blocking_errmsg_per_thread);
    RUN(blocking_redirect_and_no_leader);
    RUN(blocking_lost_callback);
    RUN(blocking_session_expired_and_forced_release);
    return runner_done();
}
