/*
 * test_leader.c -- the leader's logic in one process: batond's server over
 * a fake node (tests/unit/leader_fixture.h), driven by libbaton through
 * its real client port. Each test names the part of server/ it drives:
 *
 *  - dispatch, batch, reply: a lock is granted and released, fences rise;
 *  - push: a release hands the lock to the waiter by a GRANTED push;
 *  - deadlines: a wait that times out is cancelled in the state, and the
 *    lock is not granted to it later;
 *  - batch: requests read in one loop turn share one entry;
 *  - access: a principal limited to a prefix is refused outside it;
 *  - access, observe, watch: nor does it see another prefix's lock names
 *    in METRICS, or in a watch taken before SIGHUP narrowed its prefixes;
 *  - listen, access: a connection parked while the new leader is not
 *    serving yet, then closed by SIGHUP, is not read again;
 *  - liveness: a session whose client falls silent expires, its lock goes
 *    to the next waiter and the client is told; keepalives keep it; the
 *    last sessions of a cluster are kept for admins;
 *  - watch: a WATCH sees the lock's state, then each change;
 *  - the leadership switch: a node that does not lead serves no session,
 *    and one that starts leading does; a waiter kept across a lost and
 *    regained leadership is still granted.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "baton/baton.h"
#include "tests/lib/aclient.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/runner.h"
#include "tests/lib/tls_sock.h"
#include "tests/unit/leader_fixture.h"

#define P(s) ((struct pstr){(s), sizeof(s) - 1})

static baton_t *connect_to(const struct lf *f, const char *token, unsigned connect_ms)
{
    baton_opts o = {.endpoints = f->endpoint, .client_name = "test_leader",
                    .connect_timeout_ms = connect_ms, .token = token};
    baton_t *b = NULL;
    int rv = baton_connect(&o, &b);

    if (rv != 0) FAIL("baton_connect %s: %s", f->endpoint, baton_connect_errmsg());
    return b;
}

TEST(grant_and_release_fences_rise)
{
    struct lf f;
    baton_t *b;
    baton_lock_t *l;
    uint64_t first;

    lf_start(&f, NULL);
    b = connect_to(&f, NULL, 5000);
    ASSERT_EQ(baton_lock(b, "a", &l), 0);
    first = baton_lock_fence(l);
    ASSERT_GT(first, 0);
    ASSERT_EQ(baton_unlock(l), 0);
    ASSERT_EQ(baton_lock(b, "a", &l), 0);
    ASSERT_GT(baton_lock_fence(l), first);
    ASSERT_EQ(baton_unlock(l), 0);
    ASSERT_EQ(baton_trylock(b, "b", &l), 0);
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(b);
    lf_stop(&f);
}

struct waiter {
    baton_t *b;
    int64_t wait_ms;
    int rv;
    uint64_t fence;
    volatile int done;
};

static void *wait_for_h(void *arg)
{
    struct waiter *w = arg;
    baton_lock_t *l = NULL;

    w->rv = w->wait_ms < 0 ? baton_lock(w->b, "h", &l) : baton_lock_timeout(w->b, "h", w->wait_ms, &l);
    if (w->rv == 0) {
        w->fence = baton_lock_fence(l);
        baton_unlock(l);
    }
    w->done = 1;
    return NULL;
}

/* Client a holds "h" while client b waits for it (for wait_ms, -1: no
 * limit) on a thread of its own. */
struct handoff {
    struct lf f;
    baton_t *a;
    baton_lock_t *held;
    struct waiter w;
    pthread_t t;
};

static void handoff_start(struct handoff *h, int64_t wait_ms, const char *const *extra)
{
    lf_start(&h->f, extra);
    h->a = connect_to(&h->f, NULL, 5000);
    h->w = (struct waiter){.b = connect_to(&h->f, NULL, 5000), .wait_ms = wait_ms};
    ASSERT_EQ(baton_lock(h->a, "h", &h->held), 0);
    ASSERT_EQ(pthread_create(&h->t, NULL, wait_for_h, &h->w), 0);
}

/* a releases "h" (if it still holds it), b's wait ends, and all stops. */
static void handoff_finish(struct handoff *h)
{
    if (h->held != NULL) ASSERT_EQ(baton_unlock(h->held), 0);
    pthread_join(h->t, NULL);
    baton_close(h->a);
    baton_close(h->w.b);
    lf_stop(&h->f);
}

TEST(release_hands_over_by_push)
{
    struct handoff h;

    handoff_start(&h, -1, NULL);
    usleep(200 * 1000);
    ASSERT_EQ(h.w.done, 0); /* queued behind a */
    handoff_finish(&h);
    ASSERT_EQ(h.w.rv, 0);
    ASSERT_GT(h.w.fence, 0);
}

TEST(wait_deadline_cancels_the_wait)
{
    struct handoff h;
    baton_lock_t *l;
    uint64_t held;

    handoff_start(&h, 150, NULL);
    held = baton_lock_fence(h.held);
    pthread_join(h.t, NULL);
    ASSERT_EQ(h.w.rv, BATON_ETIMEDOUT);
    ASSERT_EQ(baton_unlock(h.held), 0);
    /* The timed-out waiter was taken out of the queue: the lock is free. */
    ASSERT_EQ(baton_trylock(h.w.b, "h", &l), 0);
    ASSERT_GT(baton_lock_fence(l), held);
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(h.a);
    baton_close(h.w.b);
    lf_stop(&h.f);
}

#define BURST 64

TEST(requests_of_one_turn_share_an_entry)
{
    struct lf f;
    struct tloop t;
    struct rec open = {0}, locks[BURST];
    struct fake_node_stats before, after;
    baton_opts o;
    baton_async_t *ac;
    char name[BURST][24];
    int granted = 0;

    lf_start(&f, NULL);
    tloop_init(&t);
    o = (baton_opts){.endpoints = f.endpoint, .client_name = "burst"};
    ac = a_new(&t, &o);
    ASSERT_EQ(baton_async_open(ac, rec_open, &open), 0);
    run_until(&t, &open.calls, 1, 5000);
    ASSERT_EQ(open.status, 0);
    lf_node_stats(&f, &before);
    memset(locks, 0, sizeof locks);
    for (int i = 0; i < BURST; i++) {
        snprintf(name[i], sizeof name[i], "burst%d", i);
        ASSERT_EQ(baton_async_lock(ac, name[i], 0, rec_lock, &locks[i]), 0);
    }
    for (int i = 0; i < BURST; i++) run_until(&t, &locks[i].calls, 1, 5000);
    for (int i = 0; i < BURST; i++) granted += locks[i].status == 0;
    ASSERT_EQ(granted, BURST);
    lf_node_stats(&f, &after);
    /* One write of 64 requests: far fewer entries than commands. */
    ASSERT_GT(after.entries, before.entries);
    ASSERT_LE(after.entries - before.entries, BURST / 4);
    baton_async_free(ac);
    tloop_done(&t);
    lf_stop(&f);
}

TEST(prefix_principal_refused_outside_its_prefix)
{
    struct lf f;
    char token[72], line[512], path[300], flag_path[320];
    const char *extra[] = {"--auth-file", flag_path, NULL};
    baton_t *b;
    baton_lock_t *l;
    FILE *fp;

    ASSERT_EQ(cluster_token("alice", "client", "prefixes=jobs/", token, line, sizeof line), 0);
    snprintf(path, sizeof path, "/tmp/baton-leader-auth-%d", (int)getpid());
    fp = fopen(path, "w");
    ASSERT(fp != NULL);
    fputs(line, fp);
    fclose(fp);
    snprintf(flag_path, sizeof flag_path, "%s", path);
    lf_start(&f, extra);
    b = connect_to(&f, token, 5000);
    ASSERT_EQ(baton_trylock(b, "jobs/1", &l), 0);
    ASSERT_EQ(baton_unlock(l), 0);
    ASSERT_EQ(baton_trylock(b, "mail/1", &l), BATON_EPERM);
    baton_close(b);
    lf_stop(&f);
    unlink(path);
}

TEST(no_session_until_the_node_leads)
{
    struct lf f;
    baton_opts o;
    baton_t *b = NULL;
    baton_lock_t *l;

    fake_node_lead_at_open(false);
    lf_start(&f, NULL);
    o = (baton_opts){.endpoints = f.endpoint, .connect_timeout_ms = 300};
    ASSERT_NE(baton_connect(&o, &b), 0);
    lf_set_leading(&f, true);
    b = connect_to(&f, NULL, 5000);
    ASSERT_EQ(baton_lock(b, "x", &l), 0);
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(b);
    lf_stop(&f);
}

TEST(waiter_kept_across_lost_leadership)
{
    struct handoff h;

    handoff_start(&h, -1, NULL);
    usleep(100 * 1000);
    lf_set_leading(&h.f, false);
    usleep(100 * 1000);
    lf_set_leading(&h.f, true);
    ASSERT_EQ(h.w.done, 0);
    handoff_finish(&h);
    ASSERT_EQ(h.w.rv, 0);
}

/* A raw client (tests/lib/tls_sock.h) on f's port: HELLO done. */
static void raw_connect(const struct lf *f, struct tls_sock *s)
{
    const char *colon = strrchr(f->endpoint, ':');

    if (tls_sock_connect(s, atoi(colon + 1), &(struct tls_sock_cfg){0}, 2000) != 0)
        FAIL("connect: %s", s->err);
    if (tls_sock_hello(s, NULL, NULL) != 0) FAIL("hello: %s", s->err);
}

/* OPEN_SESSION with ttl_ms on s: the session id. */
static uint64_t raw_open(struct tls_sock *s, uint32_t ttl_ms)
{
    struct msg m = {.type = MSG_OPEN_SESSION, .req_id = 1}, r;
    uint64_t id;

    m.u.open_session.ttl_ms = ttl_ms;
    m.u.open_session.client_name = P("raw");
    if (tls_sock_request(s, &m, &r, 2000) != 0) FAIL("open: %s", s->err);
    ASSERT_EQ(r.type, MSG_SESSION);
    id = r.u.session.session;
    msg_free(&r);
    return id;
}

/* ACQUIRE name without waiting: the RESULT's status. */
static int raw_trylock(struct tls_sock *s, uint64_t session, uint64_t seq, const char *name)
{
    struct msg m = {.type = MSG_ACQUIRE, .req_id = 100 + seq}, r;
    int st;

    m.u.op.session = session;
    m.u.op.seq = seq;
    m.u.op.lock = (struct pstr){name, strlen(name)};
    m.u.op.lock_delay_ms = BATON_LOCK_DELAY_NONE;
    if (tls_sock_request(s, &m, &r, 2000) != 0) FAIL("acquire: %s", s->err);
    st = tls_sock_status(&r);
    msg_free(&r);
    return st;
}

/* Wait for a frame of type `type` on s (skipping others): 0, or -1. */
static int raw_wait_for(struct tls_sock *s, int type, struct msg *out, int ms)
{
    for (int i = 0; i < 50; i++) {
        if (tls_sock_recv_msg(s, out, ms) != 0) return -1;
        if (out->type == type) return 0;
        msg_free(out);
    }
    return -1;
}

/* A server with short leases, and a raw client on it whose session (ttl
 * 300 ms, the session's id returned) holds `name`. */
static uint64_t raw_holder(struct lf *f, struct tls_sock *s, const char *name)
{
    static const char *const extra[] = {"--min-ttl", "200", NULL};
    uint64_t sess;

    lf_start(f, extra);
    raw_connect(f, s);
    sess = raw_open(s, 300);
    ASSERT_EQ(raw_trylock(s, sess, 1, name), 0);
    return sess;
}

/* Leases for sessions the store does not have, up to where only admins
 * may open more: the leader counts them as open (arg unused). */
static void fill_to_reserve(struct lf *f, void *arg)
{
    struct server *srv = &f->srv;
    uint64_t now = uv_now(srv->loop);
    (void)arg;

    for (uint64_t i = lease_count(&srv->leases);
         i < STORE_MAX_SESSIONS - SESSION_ADMIN_RESERVE; i++)
        lease_grant(&srv->leases, (1ull << 40) + i, 600000, now);
}

/* OPEN_SESSION as the principal of token: 0 (a session), or the code of
 * its ERROR. */
static int open_as(const struct lf *f, const char *token)
{
    const char *colon = strrchr(f->endpoint, ':');
    struct msg m = {.type = MSG_OPEN_SESSION, .req_id = 1}, r;
    struct tls_sock s;
    int st;

    if (tls_sock_connect(&s, atoi(colon + 1), &(struct tls_sock_cfg){0}, 2000) != 0)
        FAIL("connect: %s", s.err);
    if (tls_sock_hello(&s, token, NULL) != 0) FAIL("hello: %s", s.err);
    m.u.open_session.ttl_ms = 60000;
    if (tls_sock_request(&s, &m, &r, 5000) != 0) FAIL("open: %s", s.err);
    st = r.type == MSG_SESSION ? 0 : tls_sock_status(&r);
    if (r.type == MSG_ERROR)
        fprintf(stderr, "# %.*s\n", (int)r.u.error.message.n, r.u.error.message.p);
    msg_free(&r);
    tls_sock_close(&s);
    return st;
}

/* The last SESSION_ADMIN_RESERVE of the STORE_MAX_SESSIONS sessions are
 * for admins: with the rest open, a client principal is refused with
 * ELIMIT and an admin opens one. */
TEST(last_sessions_kept_for_admins)
{
    struct lf f;
    char alice[72], ops[72], line[512], lines[1024], path[300], flag_path[320];
    const char *extra[] = {"--auth-file", flag_path, NULL};
    FILE *fp;

    ASSERT_EQ(cluster_token("alice", "client", "", alice, line, sizeof line), 0);
    snprintf(lines, sizeof lines, "%s", line);
    ASSERT_EQ(cluster_token("ops", "admin", "", ops, line, sizeof line), 0);
    strncat(lines, line, sizeof lines - strlen(lines) - 1);
    snprintf(path, sizeof path, "/tmp/baton-leader-reserve-%d", (int)getpid());
    fp = fopen(path, "w");
    ASSERT(fp != NULL);
    fputs(lines, fp);
    fclose(fp);
    snprintf(flag_path, sizeof flag_path, "%s", path);
    lf_start(&f, extra);
    ASSERT_EQ(open_as(&f, alice), 0); /* room still */
    lf_on_loop(&f, fill_to_reserve, NULL);
    ASSERT_EQ(open_as(&f, alice), BATON_ELIMIT);
    ASSERT_EQ(open_as(&f, ops), 0);
    lf_stop(&f);
    unlink(path);
}

TEST(silent_session_expires_and_its_lock_moves_on)
{
    struct lf f;
    struct tls_sock s;
    struct msg m;
    baton_t *b;
    baton_lock_t *l;
    uint64_t sess = raw_holder(&f, &s, "e");

    b = connect_to(&f, NULL, 5000);
    /* The raw client sends nothing more: its lease runs out, and the
     * waiter is granted by the expiry. */
    ASSERT_EQ(baton_lock_timeout(b, "e", 5000, &l), 0);
    ASSERT_EQ(raw_wait_for(&s, MSG_SESSION_EXPIRED, &m, 2000), 0);
    ASSERT_UEQ(m.u.session_expired.session, sess);
    msg_free(&m);
    tls_sock_close(&s);
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(b);
    lf_stop(&f);
}

TEST(keepalives_keep_a_session)
{
    struct lf f;
    struct tls_sock s;
    struct msg m = {.type = MSG_KEEPALIVE}, r;
    baton_t *b;
    baton_lock_t *l;
    uint64_t sess = raw_holder(&f, &s, "k");

    b = connect_to(&f, NULL, 5000);
    for (int i = 0; i < 10; i++) { /* 1 s: more than three leases */
        m.req_id = 1000 + (uint64_t)i;
        m.u.keepalive.session = sess;
        if (tls_sock_request(&s, &m, &r, 2000) != 0) FAIL("keepalive: %s", s.err);
        ASSERT_EQ(tls_sock_status(&r), 0);
        msg_free(&r);
        usleep(100 * 1000);
    }
    ASSERT_EQ(baton_trylock(b, "k", &l), BATON_EWOULDBLOCK);
    tls_sock_close(&s);
    baton_close(b);
    lf_stop(&f);
}

TEST(watch_sees_the_state_then_each_change)
{
    struct lf f;
    struct tls_sock s;
    struct msg m = {.type = MSG_WATCH, .req_id = 5}, ev;
    baton_t *b;
    baton_lock_t *l;

    lf_start(&f, NULL);
    raw_connect(&f, &s);
    m.u.watch.lock = P("w");
    ASSERT_EQ(tls_sock_send_msg(&s, &m), 0);
    ASSERT_EQ(raw_wait_for(&s, MSG_WATCH_EVENT, &ev, 2000), 0);
    ASSERT_UEQ(ev.u.watch_event.seq, 1);
    ASSERT_EQ(ev.u.watch_event.info.held, 0);
    msg_free(&ev);
    b = connect_to(&f, NULL, 5000);
    ASSERT_EQ(baton_lock(b, "w", &l), 0);
    ASSERT_EQ(raw_wait_for(&s, MSG_WATCH_EVENT, &ev, 2000), 0);
    ASSERT_UEQ(ev.u.watch_event.seq, 2);
    ASSERT_EQ(ev.u.watch_event.info.held, 1);
    ASSERT_UEQ(ev.u.watch_event.info.fence, baton_lock_fence(l));
    msg_free(&ev);
    tls_sock_close(&s);
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(b);
    lf_stop(&f);
}

/* The one connection of f's server (on the loop thread). */
static struct conn *only_conn(struct lf *f)
{
    for (size_t i = 0; i < f->srv.conns.cap; i++)
        if (f->srv.conns.slots[i].key) return f->srv.conns.slots[i].val;
    return NULL;
}

static void shrink_sndbuf(struct lf *f, void *arg)
{
    struct conn *c = only_conn(f);
    uv_os_fd_t fd;
    int small = 4096;

    (void)arg;
    if (c != NULL && uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
}

static void not_ready(struct lf *f, void *arg)
{
    (void)arg;
    f->srv.ready = false; /* a new leader whose barrier has not committed */
}

static void conn_state(struct lf *f, void *arg)
{
    struct conn *c = only_conn(f);
    size_t *out = arg; /* parked, closing, input bytes, open at all */

    out[0] = c != NULL && c->parked;
    out[1] = c != NULL && c->closing;
    out[2] = c != NULL ? c->in.len : 0;
    out[3] = c != NULL;
}

static void sighup_then_unpark(struct lf *f, void *arg)
{
    (void)arg;
    access_reload(&f->srv);
    listen_unpark_soon(&f->srv);
}

/*
 * A parked connection whose principal SIGHUP removes is closing, its ERROR
 * unwritten while its client reads nothing. The unpark that follows must
 * not read it again: its input would grow as long as the client writes,
 * since a closing connection's frames are never handled.
 */
TEST(parked_conn_closed_by_sighup_is_not_read_again)
{
    struct lf f;
    char token[72], line[512], path[300], flag_path[320];
    const char *extra[] = {"--auth-file", flag_path, "--election-timeout", "5000", NULL};
    struct tls_sock s;
    struct msg m = {.type = MSG_STATUS}, acq = {.type = MSG_ACQUIRE, .req_id = 9};
    struct buf flood = {0};
    size_t st[4] = {0}, sent = 0;
    int64_t until;
    FILE *fp;

    ASSERT_EQ(cluster_token("alice", "client", NULL, token, line, sizeof line), 0);
    snprintf(path, sizeof path, "/tmp/baton-leader-auth-%d", (int)getpid());
    fp = fopen(path, "w");
    ASSERT(fp != NULL);
    fputs(line, fp);
    fclose(fp);
    snprintf(flag_path, sizeof flag_path, "%s", path);
    lf_start(&f, extra);
    if (tls_sock_connect(&s, atoi(strrchr(f.endpoint, ':') + 1),
                         &(struct tls_sock_cfg){.rcvbuf = 4096}, 2000) != 0)
        FAIL("connect: %s", s.err);
    if (tls_sock_hello(&s, token, NULL) != 0) FAIL("hello: %s", s.err);
    lf_on_loop(&f, shrink_sndbuf, NULL);
    /* Replies the client does not read, until the node cannot write more. */
    for (int i = 0; i < 3000; i++) {
        m.req_id = 100 + (uint64_t)i;
        ASSERT_EQ(tls_sock_send_msg(&s, &m), 0);
    }
    usleep(300 * 1000);
    lf_on_loop(&f, not_ready, NULL);
    acq.u.op.session = 1;
    acq.u.op.seq = 1;
    acq.u.op.lock = P("p");
    acq.u.op.lock_delay_ms = BATON_LOCK_DELAY_NONE;
    ASSERT_EQ(tls_sock_send_msg(&s, &acq), 0);
    for (int i = 0; i < 500 && !st[0]; i++) {
        usleep(10 * 1000);
        lf_on_loop(&f, conn_state, st);
    }
    ASSERT(st[0]); /* parked */
    fp = fopen(path, "w"); /* alice is gone */
    ASSERT(fp != NULL);
    fclose(fp);
    lf_on_loop(&f, sighup_then_unpark, NULL);
    lf_on_loop(&f, conn_state, st);
    ASSERT(st[1]); /* closing, its ERROR not written */
    /* The client writes on: 16 MiB, or as much as the node takes in 2 s. */
    for (int i = 0; i < 1000; i++) ASSERT_EQ(proto_encode(&flood, &m), 0);
    until = now_ms() + 2000;
    while (now_ms() < until && sent < (16u << 20)) {
        ssize_t w = send(s.fd, flood.data, flood.len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w > 0) sent += (size_t)w;
        else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) break;
        else usleep(5 * 1000);
    }
    usleep(200 * 1000);
    lf_on_loop(&f, conn_state, st);
    ASSERT(st[3]); /* still there: its ERROR is still not written */
    if (st[2] > (1u << 20))
        FAIL("a closing connection was read again: %zu bytes buffered of %zu sent", st[2], sent);
    buf_free(&flood);
    tls_sock_close(&s);
    lf_stop(&f);
    unlink(path);
}

/* Write the auth file at path: the lines given, each ending in '\n'. */
static void write_auth(const char *path, const char *a, const char *b)
{
    FILE *fp = fopen(path, "w");

    if (fp == NULL) FAIL("cannot write %s", path);
    fputs(a, fp);
    if (b != NULL) fputs(b, fp);
    fclose(fp);
}

/* The METRICS text s's principal gets, into *out (NUL-terminated). */
static void raw_metrics(struct tls_sock *s, struct buf *out)
{
    struct msg m = {.type = MSG_METRICS, .req_id = 77}, r;

    if (tls_sock_request(s, &m, &r, 5000) != 0) FAIL("metrics: %s", s->err);
    ASSERT_EQ(r.type, MSG_METRICS_R);
    for (uint32_t i = 0; i < r.u.metrics_r.n; i++)
        ASSERT_EQ(buf_put(out, r.u.metrics_r.chunks[i].text.p, r.u.metrics_r.chunks[i].text.n), 0);
    ASSERT_EQ(buf_put(out, "", 1), 0);
    msg_free(&r);
}

/* ACQUIRE name for session, waiting up to a minute; the answer not read. */
static void raw_queue(struct tls_sock *s, uint64_t session, uint64_t seq, const char *name)
{
    struct msg m = {.type = MSG_ACQUIRE, .req_id = 500 + seq};

    m.u.op.session = session;
    m.u.op.seq = seq;
    m.u.op.lock = (struct pstr){name, strlen(name)};
    m.u.op.lock_delay_ms = BATON_LOCK_DELAY_NONE;
    m.u.op.wait_ms = 60000;
    ASSERT_EQ(tls_sock_send_msg(s, &m), 0);
}

/* WATCH name with req_id on s: its first event read. */
static void raw_watch(struct tls_sock *s, uint64_t req_id, const char *name)
{
    struct msg m = {.type = MSG_WATCH, .req_id = req_id}, ev;

    m.u.watch.lock = (struct pstr){name, strlen(name)};
    ASSERT_EQ(tls_sock_send_msg(s, &m), 0);
    ASSERT_EQ(raw_wait_for(s, MSG_WATCH_EVENT, &ev, 2000), 0);
    ASSERT_UEQ(ev.req_id, req_id);
    msg_free(&ev);
}

/*
 * A principal limited to prefixes reads no other prefix's lock name: not
 * in METRICS (the longest queues' gauges are labelled with lock names),
 * and not through a watch taken before SIGHUP narrowed its prefixes --
 * that watch ends with ERROR(BATON_EPERM) under its WATCH's req_id, while
 * its watch of a lock still within its prefixes goes on.
 */
TEST(prefix_principal_sees_no_other_prefix_in_metrics_or_watches)
{
    struct lf f;
    char atok[72], aline[512], rtok[72], rline[512], narrowed[512], path[300];
    const char *extra[] = {"--auth-file", path, NULL};
    struct tls_sock adm, rd;
    struct buf text = {0};
    struct msg m;
    uint64_t s1, s2;

    ASSERT_EQ(cluster_token("root", "admin", NULL, atok, aline, sizeof aline), 0);
    ASSERT_EQ(cluster_token("viewer", "read", "prefixes=jobs/,keep/", rtok, rline, sizeof rline),
              0);
    ASSERT_EQ(cluster_token_line("viewer", "read", "prefixes=keep/", rtok, narrowed,
                                 sizeof narrowed),
              0);
    snprintf(path, sizeof path, "/tmp/baton-leader-auth-%d", (int)getpid());
    write_auth(path, aline, rline);
    lf_start(&f, extra);
    if (tls_sock_connect(&adm, atoi(strrchr(f.endpoint, ':') + 1), &(struct tls_sock_cfg){0},
                         2000) != 0)
        FAIL("connect: %s", adm.err);
    if (tls_sock_hello(&adm, atok, NULL) != 0) FAIL("hello: %s", adm.err);
    if (tls_sock_connect(&rd, atoi(strrchr(f.endpoint, ':') + 1), &(struct tls_sock_cfg){0},
                         2000) != 0)
        FAIL("connect: %s", rd.err);
    if (tls_sock_hello(&rd, rtok, NULL) != 0) FAIL("hello: %s", rd.err);
    /* A queue on "mail/secret" and on "jobs/open": both are among the
     * longest queues. */
    s1 = raw_open(&adm, 60000);
    s2 = raw_open(&adm, 60000);
    ASSERT_EQ(raw_trylock(&adm, s1, 1, "mail/secret"), 0);
    ASSERT_EQ(raw_trylock(&adm, s1, 2, "jobs/open"), 0);
    raw_queue(&adm, s2, 1, "mail/secret");
    raw_queue(&adm, s2, 2, "jobs/open");
    usleep(200 * 1000);
    raw_metrics(&adm, &text);
    ASSERT(strstr((char *)text.data, "lock=\"mail/secret\"") != NULL);
    ASSERT(strstr((char *)text.data, "lock=\"jobs/open\"") != NULL);
    buf_reset(&text);
    raw_metrics(&rd, &text);
    ASSERT(strstr((char *)text.data, "lock=\"jobs/open\"") != NULL);
    if (strstr((char *)text.data, "mail/secret") != NULL)
        FAIL("METRICS shows a principal limited to jobs/,keep/ the lock mail/secret");
    buf_free(&text);

    raw_watch(&rd, 41, "jobs/open");
    raw_watch(&rd, 42, "keep/k");
    write_auth(path, aline, narrowed);
    ASSERT_EQ(kill(getpid(), SIGHUP), 0);
    if (raw_wait_for(&rd, MSG_ERROR, &m, 5000) != 0)
        FAIL("the watch of jobs/open was not ended by SIGHUP: %s", rd.err);
    ASSERT_UEQ(m.req_id, 41);
    ASSERT_EQ(m.u.error.code, BATON_EPERM);
    msg_free(&m);
    /* Both locks change: only keep/k's watch is told. */
    ASSERT_EQ(raw_trylock(&adm, s1, 3, "keep/k"), 0);
    ASSERT_EQ(raw_trylock(&adm, s1, 4, "jobs/other"), 0);
    {
        struct msg rel = {.type = MSG_RELEASE, .req_id = 600}, r;
        rel.u.op.session = s1;
        rel.u.op.seq = 5;
        rel.u.op.lock = P("jobs/open");
        ASSERT_EQ(tls_sock_request(&adm, &rel, &r, 2000), 0);
        msg_free(&r);
    }
    ASSERT_EQ(raw_wait_for(&rd, MSG_WATCH_EVENT, &m, 2000), 0);
    ASSERT_UEQ(m.req_id, 0);
    ASSERT(m.u.watch_event.info.lock.n == 6 && memcmp(m.u.watch_event.info.lock.p, "keep/k", 6) == 0);
    msg_free(&m);
    ASSERT_NE(tls_sock_recv_msg(&rd, &m, 300), 0); /* nothing of jobs/open */
    tls_sock_close(&rd);
    tls_sock_close(&adm);
    lf_stop(&f);
    unlink(path);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(30);
    RUN(grant_and_release_fences_rise);
    RUN(release_hands_over_by_push);
    RUN(wait_deadline_cancels_the_wait);
    RUN(requests_of_one_turn_share_an_entry);
    RUN(prefix_principal_refused_outside_its_prefix);
    RUN(parked_conn_closed_by_sighup_is_not_read_again);
    RUN(prefix_principal_sees_no_other_prefix_in_metrics_or_watches);
    RUN(silent_session_expires_and_its_lock_moves_on);
    RUN(keepalives_keep_a_session);
    RUN(watch_sees_the_state_then_each_change);
    RUN(no_session_until_the_node_leads);
    RUN(waiter_kept_across_lost_leadership);
    RUN(last_sessions_kept_for_admins);
    return runner_done();
}
