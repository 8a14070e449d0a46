/*
 * fake_server.c -- a TEST DOUBLE of batond for libbaton's unit tests; see
 * fake_server.h.
 */
#include "tests/unit/fake_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/msg.h"
#include "tests/lib/clock.h"
#include "tests/lib/runner.h"

/* Write n bytes to the client's socket (blocking; a dead client just
 * stops the write). */
static void fk_write(struct fk_conn *c, const uint8_t *p, size_t n)
{
    size_t off = 0;

    while (off < n) {
        ssize_t w = send(c->fd, p + off, n - off, MSG_NOSIGNAL);
        if (w <= 0) break;
        off += (size_t)w;
    }
}

/* With TLS: write what the endpoint has for the client. */
static void fk_flush_tls(struct fk_conn *c)
{
    struct buf net = {0};

    if (tls_out(c->t, &net) != 0) FAIL("fake: out of memory");
    fk_write(c, net.data, net.len);
    buf_free(&net);
}

static void fk_send(struct fk_conn *c, const struct msg *m)
{
    struct buf b;

    if (c->mute) return;
    buf_init(&b);
    if (proto_encode(&b, m) != 0) FAIL("fake: cannot encode %s", msg_type_name(m->type));
    if (c->t != NULL) {
        if (tls_send(c->t, b.data, b.len) == 0) fk_flush_tls(c);
    } else {
        fk_write(c, b.data, b.len);
    }
    buf_free(&b);
}

/* Answer with ERROR(code, text) for request req_id. */
static void fk_error(struct fk_conn *c, uint64_t req_id, int32_t code, const char *text)
{
    struct msg r = {.type = MSG_ERROR, .req_id = req_id};

    r.u.error.code = code;
    r.u.error.message.p = text;
    r.u.error.message.n = (uint16_t)strlen(text);
    fk_send(c, &r);
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

/* Is seq in the op's keep list? */
static bool fk_kept(const struct msg_op *op, uint64_t seq)
{
    for (uint32_t i = 0; i < op->n_keep; i++)
        if (op->keep[i].seq == seq) return true;
    return false;
}

/* What an op acknowledges, as batond's store takes it (storage/apply.c):
 * unless ack_below is below the session's floor, every cached result below
 * it that the op does not keep goes, and the floor rises. */
static void fk_ack(struct fake *f, const struct msg_op *op)
{
    struct fk_session *s = fk_session(f, op->session);

    f->last_n_keep = op->n_keep;
    f->last_keep0 = op->n_keep ? op->keep[0].seq : 0;
    if (s == NULL || op->ack_below < s->ack_floor) return;
    s->ack_floor = op->ack_below;
    for (int i = 0; i < f->ndedup;) {
        struct fk_dedup *d = &f->dedup[i];
        if (d->session == op->session && d->seq < op->ack_below && !fk_kept(op, d->seq))
            *d = f->dedup[--f->ndedup];
        else
            i++;
    }
}

/* A request below its session's floor whose result is gone: a stale copy. */
static bool fk_stale(struct fake *f, const struct msg_op *op)
{
    struct fk_session *s = fk_session(f, op->session);

    return s != NULL && op->seq < s->ack_floor && fk_dedup(f, op->session, op->seq) == NULL;
}

int fk_cached(struct fake *f, uint64_t session)
{
    int n = 0;

    pthread_mutex_lock(&f->mu);
    for (int i = 0; i < f->ndedup; i++) n += f->dedup[i].session == session;
    pthread_mutex_unlock(&f->mu);
    return n;
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
    f->values[l - f->locks][0] = '\0'; /* the fake keeps a granted waiter's value nowhere */
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
        snprintf(f->values[l - f->locks], sizeof f->values[0], "%s", f->last_value);
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

/* ---- lost holds ------------------------------------------------------------ */

static void fk_lost_add(struct fake *f, const struct fk_lock *l)
{
    struct fk_lost *x;

    if (f->n_lost == FK_LOSTS) FAIL("fake: too many lost holds");
    x = &f->lost[f->n_lost++];
    x->session = l->holder_session;
    x->waiter = l->holder_waiter;
    x->fence = l->fence;
    memcpy(x->name, l->name, l->len);
    x->len = l->len;
}

static void fk_lost_del(struct fake *f, int i)
{
    f->lost[i] = f->lost[--f->n_lost];
}

/* The session is gone: so are its records. */
static void fk_lost_drop_session(struct fake *f, uint64_t s)
{
    for (int i = f->n_lost - 1; i >= 0; i--)
        if (f->lost[i].session == s) fk_lost_del(f, i);
}

static uint64_t fk_lost_count(struct fake *f, uint64_t s)
{
    uint64_t n = 0;

    for (int i = 0; i < f->n_lost; i++) n += f->lost[i].session == s;
    return n;
}

/* A RELEASE that names a lost hold acknowledges it: 1 (the record goes). */
static int fk_lost_ack(struct fake *f, uint64_t s, uint64_t fence, struct pstr name)
{
    for (int i = 0; i < f->n_lost; i++) {
        struct fk_lost *x = &f->lost[i];
        if (x->session == s && x->fence == fence && x->len == name.n &&
            memcmp(x->name, name.p, name.n) == 0) {
            fk_lost_del(f, i);
            f->n_lost_acks++;
            return 1;
        }
    }
    return 0;
}

/* LOST_HOLDS: every record of the session above `after` (unsorted: the
 * client must not depend on more than the protocol says, and a handful of
 * records fits one page). */
static void fk_lost_holds(struct fake *f, struct fk_conn *c, const struct msg *m)
{
    struct msg r = {.type = MSG_LOST_HOLDS_R, .req_id = m->req_id};
    struct msg_lost_hold items[FK_LOSTS];
    uint32_t n = 0;

    for (int i = 0; i < f->n_lost; i++) {
        const struct fk_lost *x = &f->lost[i];
        if (x->session != m->u.lost_holds.session || x->fence <= m->u.lost_holds.after) continue;
        items[n].waiter = x->waiter;
        items[n].fence = x->fence;
        items[n].status = BATON_ELOST;
        items[n].lock.p = x->name;
        items[n].lock.n = x->len;
        n++;
    }
    r.u.lost_holds_r.n = n;
    r.u.lost_holds_r.items = n ? items : NULL;
    fk_send(c, &r);
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
    } else if (fk_lost_ack(f, s, m->u.op.fence, m->u.op.lock)) {
        st = BATON_ELOST;
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
    fk_lost_drop_session(f, s);
    fk_result(c, m->req_id, 0, RESULT_OK, 0);
}

/* Apply ACQUIRE or RELEASE m, then answer NO_LEADER instead of its
 * RESULT: the outcome of a command whose log write failed on batond's
 * leader is unknown to that node (raft/node.c, "local failures"). */
static void fk_unknown_outcome(struct fake *f, struct fk_conn *c, const struct msg *m)
{
    struct msg r = {.type = MSG_NO_LEADER, .req_id = m->req_id};

    f->unknown_outcome--;
    f->n_no_leader++;
    c->mute = true;
    if (m->type == MSG_ACQUIRE)
        fk_acquire(f, c, m);
    else
        fk_release(f, c, m);
    c->mute = false;
    fk_send(c, &r);
}

/* ---- protocol 6: values, reads, watches --------------------------------------- */

/* LOCK_STATE_R for lock `name`: the holder (its value) and the waiters. */
static void fk_lock_state(struct fake *f, struct fk_conn *c, const struct msg *m)
{
    struct msg r = {.type = MSG_LOCK_STATE_R, .req_id = m->req_id};
    struct fk_lock *l = fk_lock(f, m->u.lock_info.lock, false);
    struct msg_holder_v h = {0};
    struct msg_waiter_v w[FK_WAITERS];
    struct msg_lock_state *st = &r.u.lock_state;

    f->n_lock_state++;
    st->revision = ++f->rev;
    st->lock = m->u.lock_info.lock;
    if (l && l->holder_session) {
        const char *v = f->values[l - f->locks];
        h = (struct msg_holder_v){.session = l->holder_session, .waiter = l->holder_waiter,
                                  .fence = l->fence, .granted_index = 1, .count = 1,
                                  .client_name = {"fk", 2}, .value = {v, (uint16_t)strlen(v)}};
        st->held = 1;
        st->limit = 1;
        st->total_holders = st->n_holders = 1;
        st->holders = &h;
    }
    if (l) {
        for (int i = 0; i < l->nq; i++)
            w[i] = (struct msg_waiter_v){.session = l->q[i].session, .waiter = l->q[i].waiter,
                                         .wait_ms = -1};
        st->total_waiters = st->n_waiters = (uint32_t)l->nq;
        st->waiters = w;
        st->limit = 1;
    }
    fk_send(c, &r);
}

/* PROCLAIM: the holder of fence on the lock replaces its value. */
static void fk_proclaim(struct fake *f, struct fk_conn *c, const struct msg *m)
{
    struct fk_lock *l = fk_lock(f, m->u.op.lock, false);

    if (l == NULL || l->holder_session != m->u.op.session || l->fence != m->u.op.fence) {
        fk_result(c, m->req_id, BATON_ENOTHELD, RESULT_OK, 0);
        return;
    }
    snprintf(f->values[l - f->locks], sizeof f->values[0], "%s", f->last_value);
    fk_result(c, m->req_id, 0, RESULT_OK, 0);
}

/* One WATCH2_EVENT of the stream: kind at revision `rev`, with the
 * watched lock held by session 1 with value "c<rev>" (CHANGE, STATE). */
static void fk_watch_event(struct fake *f, uint8_t kind, uint8_t restarted, uint64_t rev)
{
    struct fk_conn *c = fk_conn(f, f->watch_conn);
    struct msg r = {.type = MSG_WATCH2_EVENT, .req_id = f->watch_req};
    struct msg_holder_v h = {.session = 1, .fence = rev, .count = 1};
    char v[32];

    if (c == NULL || c->dead) return;
    r.u.watch2_event.kind = kind;
    r.u.watch2_event.restarted = restarted;
    r.u.watch2_event.state.revision = rev;
    if (kind == WATCH2_CHANGE || kind == WATCH2_STATE) {
        snprintf(v, sizeof v, "c%llu", (unsigned long long)rev);
        if (f->watch_same) {
            snprintf(v, sizeof v, "same");
            h.fence = 1;
        }
        h.value = (struct pstr){v, (uint16_t)strlen(v)};
        r.u.watch2_event.state.lock = (struct pstr){f->watch_key, (uint16_t)strlen(f->watch_key)};
        r.u.watch2_event.state.held = 1;
        r.u.watch2_event.state.limit = 1;
        r.u.watch2_event.state.total_holders = r.u.watch2_event.state.n_holders = 1;
        r.u.watch2_event.state.holders = &h;
    }
    fk_send(c, &r);
}

/* WATCH2: from after 0, the state then SYNCED; from after N, SYNCED
 * restarted 0 (nothing changed: the fake only changes when told to). */
static void fk_watch2(struct fake *f, struct fk_conn *c, const struct msg *m)
{
    f->n_watch2++;
    f->last_after = m->u.watch2.after;
    f->watch_conn = c->id;
    f->watch_req = m->req_id;
    snprintf(f->watch_key, sizeof f->watch_key, "%.*s", (int)m->u.watch2.key.n,
             m->u.watch2.key.p ? m->u.watch2.key.p : "");
    if (m->u.watch2.after == 0) fk_watch_event(f, WATCH2_STATE, 0, f->rev);
    if (m->u.watch2.after > f->rev) f->rev = m->u.watch2.after;
    fk_watch_event(f, WATCH2_SYNCED, 0, f->rev);
}

static void fk_handle(struct fake *f, struct fk_conn *c, const struct msg *m)
{
    struct msg r = {.req_id = m->req_id};
    struct msg as_acquire;

    if (m->type == MSG_ACQUIRE) f->last_value[0] = '\0';
    if (m->type == MSG_ACQUIRE2 || m->type == MSG_PROCLAIM) {
        snprintf(f->last_value, sizeof f->last_value, "%.*s", (int)m->u.op.value.n,
                 m->u.op.value.p ? m->u.op.value.p : "");
        if (m->type == MSG_ACQUIRE2) {
            f->n_acquire2++;
            as_acquire = *m;
            as_acquire.type = MSG_ACQUIRE;
            m = &as_acquire;
        }
    }

    if (m->type == MSG_HELLO) {
        f->n_hello++;
        snprintf(f->last_token, sizeof f->last_token, "%.*s", (int)m->u.hello.token.n,
                 m->u.hello.token.p ? m->u.hello.token.p : "");
        if (f->hello_error) {
            fk_error(c, m->req_id, f->hello_error, f->hello_error_msg);
            c->dead = true;
            return;
        }
        c->hello = true;
        r.type = MSG_HELLO_OK;
        r.u.hello_ok.version = f->hello_version ? f->hello_version : BATON_PROTO_VERSION;
        r.u.hello_ok.node_id = 1;
        r.u.hello_ok.role = MSG_ROLE_ADMIN;
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
    if (f->refuse_type != 0 && m->type == f->refuse_type) {
        fk_error(c, m->req_id, f->refuse_code, f->refuse_msg);
        return;
    }
    /* A request naming a session the fake does not know (any more). */
    if ((m->type == MSG_ACQUIRE && !f->silent_acquire && !fk_session(f, m->u.op.session)) ||
        (m->type == MSG_RELEASE && !fk_session(f, m->u.op.session)) ||
        (m->type == MSG_CANCEL && !fk_session(f, m->u.op.session)) ||
        (m->type == MSG_PROCLAIM && !fk_session(f, m->u.op.session))) {
        fk_result(c, m->req_id, BATON_ESESSION, RESULT_OK, 0);
        return;
    }
    if ((m->type == MSG_ACQUIRE && !f->silent_acquire) || m->type == MSG_RELEASE ||
        m->type == MSG_CANCEL || m->type == MSG_PROCLAIM) {
        fk_ack(f, &m->u.op);
        if (fk_stale(f, &m->u.op)) {
            f->n_stale++;
            fk_result(c, m->req_id, BATON_ESTALE, RESULT_OK, 0);
            return;
        }
    }
    switch (m->type) {
    case MSG_OPEN_SESSION:
        f->n_open++;
        f->last_nonce = m->u.open_session.nonce;
        r.type = MSG_SESSION;
        r.u.session.ttl_ms = m->u.open_session.ttl_ms ? m->u.open_session.ttl_ms : 10000;
        /* A re-sent OPEN_SESSION: the session its nonce opened. */
        for (int i = 0; i < f->nsessions && m->u.open_session.nonce; i++)
            if (f->sessions[i].nonce == m->u.open_session.nonce) r.u.session.session = f->sessions[i].id;
        if (r.u.session.session != 0) {
            f->n_open_resent++;
        } else {
            if (f->nsessions == FK_SESSIONS) FAIL("fake: too many sessions");
            memset(&f->sessions[f->nsessions], 0, sizeof f->sessions[0]);
            f->sessions[f->nsessions].id = ++f->next_session;
            f->sessions[f->nsessions].nonce = m->u.open_session.nonce;
            f->nsessions++;
            r.u.session.session = f->next_session;
        }
        fk_attach(f, r.u.session.session, c->id);
        if (f->drop_session_reply > 0) {
            /* Opened, then "crash" before the reply leaves. */
            f->drop_session_reply--;
            shutdown(c->fd, SHUT_RDWR);
            c->dead = true;
            return;
        }
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
        fk_result(c, m->req_id, 0, RESULT_OK, fk_lost_count(f, m->u.keepalive.session));
        return;
    case MSG_LOST_HOLDS:
        f->n_lost_holds++;
        fk_lost_holds(f, c, m);
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
        if (f->unknown_outcome > 0)
            fk_unknown_outcome(f, c, m);
        else
            fk_acquire(f, c, m);
        return;
    case MSG_RELEASE:
        f->n_release++;
        fk_attach(f, m->u.op.session, c->id);
        if (f->unknown_outcome > 0)
            fk_unknown_outcome(f, c, m);
        else
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
    case MSG_PROCLAIM:
        f->n_proclaim++;
        fk_attach(f, m->u.op.session, c->id);
        fk_proclaim(f, c, m);
        return;
    case MSG_LOCK_STATE:
        fk_lock_state(f, c, m);
        return;
    case MSG_WATCH2:
        fk_watch2(f, c, m);
        return;
    case MSG_UNWATCH:
        f->n_unwatch++;
        if (m->u.unwatch.watch == f->watch_req) f->watch_conn = 0;
        fk_result(c, m->req_id, 0, RESULT_OK, 0);
        return;
    case MSG_CHECK:
        f->n_check++;
        r.type = MSG_CHECK_R;
        r.u.check_r.index = 7;
        fk_send(c, &r);
        return;
    case MSG_WATCH:
        /* The first event answers the WATCH; the next is a push. */
        f->n_watch++;
        r.type = MSG_WATCH_EVENT;
        r.u.watch_event.seq = 1;
        r.u.watch_event.info.lock = m->u.watch.lock;
        fk_send(c, &r);
        r.req_id = 0;
        r.u.watch_event.seq = 2;
        fk_send(c, &r);
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

/* Push LOST for the lock l that session s holds (unless it is a forced
 * release and force_silent is set; a forced release also leaves a lost
 * record), and free the lock for the next waiter. */
static void fk_take_away(struct fake *f, struct fk_lock *l, int32_t status)
{
    struct msg m = {.type = MSG_LOST};

    m.u.push.session = l->holder_session;
    m.u.push.waiter = l->holder_waiter;
    m.u.push.fence = l->fence;
    m.u.push.status = status;
    m.u.push.lock.p = l->name;
    m.u.push.lock.n = l->len;
    if (status == BATON_ELOST) fk_lost_add(f, l);
    if (status != BATON_ELOST || !f->force_silent) fk_push(f, l->holder_session, &m);
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
    fk_lost_drop_session(f, s);
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
        fk_lost_drop_session(f, f->do_forget);
        f->do_forget = 0;
    }
    if (f->do_force[0]) {
        struct pstr name = {f->do_force, (uint16_t)strlen(f->do_force)};
        struct fk_lock *l = fk_lock(f, name, false);
        if (l && l->holder_session) fk_take_away(f, l, BATON_ELOST);
        f->do_force[0] = '\0';
    }
    for (; f->do_watch_change > 0; f->do_watch_change--)
        fk_watch_event(f, WATCH2_CHANGE, 0, ++f->rev);
    for (; f->do_watch_progress > 0; f->do_watch_progress--)
        fk_watch_event(f, WATCH2_PROGRESS, 0, ++f->rev);
    if (f->do_drop_all) {
        for (int i = 0; i < f->nconns; i++) f->conns[i].dead = true;
        f->do_drop_all = false;
    }
}

/*
 * A client's first bytes. Like batond, answer the wrong kind -- plaintext
 * to a TLS fake, a TLS record to a plaintext one -- with a plaintext
 * ERROR(BATON_ETLS) and close (or, with tls_alert_plain, a plaintext
 * client with a TLS alert: protocol_version). A TLS fake's client gets its
 * endpoint here. Returns false when the connection is done.
 */
static bool fk_first_bytes(struct fake *f, struct fk_conn *c, const uint8_t *p, size_t n)
{
    static const uint8_t alert[] = {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46};
    int kind = tls_sniff(p, n);
    const char *why = NULL;
    bool alert_plain;

    pthread_mutex_lock(&f->mu);
    alert_plain = f->tls_alert_plain;
    pthread_mutex_unlock(&f->mu);
    if (f->tls != NULL && kind == 0 && alert_plain) {
        fk_write(c, alert, sizeof alert);
        c->dead = true;
        return false;
    }
    if (f->tls != NULL && kind == 0) why = "this node requires TLS";
    if (f->tls == NULL && kind == 1) why = "this node does not serve TLS";
    if (why != NULL) {
        pthread_mutex_lock(&f->mu);
        f->n_wrong_kind++;
        pthread_mutex_unlock(&f->mu);
        fk_error(c, 0, BATON_ETLS, why);
        c->dead = true;
        return false;
    }
    if (f->tls != NULL) {
        c->t = tls_new(f->tls, NULL);
        if (c->t == NULL) FAIL("fake: tls_new failed");
    }
    return true;
}

/* Bytes from a TLS client: decrypt them into c->in, answer the handshake,
 * note the client certificate's name. */
static void fk_tls_input(struct fake *f, struct fk_conn *c, const uint8_t *p, size_t n)
{
    int rv = tls_recv(c->t, p, n, &c->in);

    fk_flush_tls(c);
    pthread_mutex_lock(&f->mu);
    if (rv != 0) {
        f->n_tls_failed++;
        c->dead = true;
    } else if (tls_established(c->t) && tls_peer_cn(c->t)[0] != '\0') {
        snprintf(f->last_cn, sizeof f->last_cn, "%s", tls_peer_cn(c->t));
    }
    pthread_mutex_unlock(&f->mu);
}

static void fk_read(struct fake *f, struct fk_conn *c)
{
    uint8_t tmp[65536];
    size_t off = 0, flen;
    ssize_t n;

    n = recv(c->fd, tmp, sizeof tmp, 0);
    if (n <= 0) {
        c->dead = true;
        return;
    }
    if (!c->sniffed) {
        c->sniffed = true;
        if (!fk_first_bytes(f, c, tmp, (size_t)n)) return;
    }
    if (c->t != NULL)
        fk_tls_input(f, c, tmp, (size_t)n);
    else if (buf_put(&c->in, tmp, (size_t)n) != 0)
        FAIL("fake: out of memory");
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
            tls_free(f->conns[i].t);
            f->conns[i] = f->conns[--f->nconns];
        }
    }
    return NULL;
}

struct fake *fake_start(void)
{
    return fake_start_tls(NULL);
}

struct fake *fake_start_tls(const struct fk_tls *t)
{
    struct fake *f = calloc(1, sizeof *f);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t len = sizeof sa;
    int one = 1;

    ASSERT(f != NULL);
    if (t != NULL) {
        struct tls_config cfg = {.server = true, .cert_file = t->cert_file,
                                 .key_file = t->key_file, .ca_file = t->client_ca,
                                 .require_peer_cert = t->require};
        char err[256];
        if (tls_ctx_new(&cfg, &f->tls, err, sizeof err) != 0) FAIL("fake: %s", err);
    }
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

void fake_stop(struct fake *f)
{
    ASSERT_EQ(write(f->stop[1], "x", 1), 1);
    pthread_join(f->th, NULL);
    for (int i = 0; i < f->nconns; i++) {
        close(f->conns[i].fd);
        buf_free(&f->conns[i].in);
        tls_free(f->conns[i].t);
    }
    tls_ctx_free(f->tls);
    close(f->lfd);
    close(f->stop[0]);
    close(f->stop[1]);
    pthread_mutex_destroy(&f->mu);
    free(f->locks);
    free(f->dedup);
    free(f);
}

/* Read a counter of f safely (the fake thread updates them under mu). */
int64_t fk_get_(struct fake *f, const void *field, size_t size)
{
    int64_t v;

    pthread_mutex_lock(&f->mu);
    v = size == sizeof(int) ? (int64_t) * (const int *)field : (int64_t) * (const uint64_t *)field;
    pthread_mutex_unlock(&f->mu);
    return v;
}

/* Ask the fake to force the release of lock `name`. */
void fk_force(struct fake *f, const char *name)
{
    pthread_mutex_lock(&f->mu);
    snprintf(f->do_force, sizeof f->do_force, "%s", name);
    pthread_mutex_unlock(&f->mu);
}

/* Make the fake answer every request with REDIRECT to addr ("": stop). */
void fk_redirect(struct fake *f, const char *addr)
{
    pthread_mutex_lock(&f->mu);
    snprintf(f->redirect_to, sizeof f->redirect_to, "%s", addr);
    pthread_mutex_unlock(&f->mu);
}

/* An address where nothing listens (bound, then closed again). */
void dead_addr(char *out, size_t n)
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

/* Make the fake refuse HELLO with ERROR(code, msg) and close (code 0: stop). */
void fk_hello_error(struct fake *f, int32_t code, const char *msg)
{
    pthread_mutex_lock(&f->mu);
    f->hello_error = code;
    snprintf(f->hello_error_msg, sizeof f->hello_error_msg, "%s", msg);
    pthread_mutex_unlock(&f->mu);
}

/* Make the fake answer requests of type `type` with ERROR(code, msg). */
void fk_refuse(struct fake *f, int type, int32_t code, const char *msg)
{
    pthread_mutex_lock(&f->mu);
    f->refuse_type = type;
    f->refuse_code = code;
    snprintf(f->refuse_msg, sizeof f->refuse_msg, "%s", msg);
    pthread_mutex_unlock(&f->mu);
}

void fk_last_token(struct fake *f, char *out, size_t n)
{
    pthread_mutex_lock(&f->mu);
    snprintf(out, n, "%s", f->last_token);
    pthread_mutex_unlock(&f->mu);
}

void fk_last_cn(struct fake *f, char *out, size_t n)
{
    pthread_mutex_lock(&f->mu);
    snprintf(out, n, "%s", f->last_cn);
    pthread_mutex_unlock(&f->mu);
}
