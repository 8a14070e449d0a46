/*
 * test_leader.c -- the leader's logic in one process: batond's server over
 * a fake node and a fake clock (tests/unit/leader_fixture.h), driven by
 * libbaton and raw clients through its real client port. The server's
 * clock moves only when a test moves it (lf_advance), so every rule about
 * time is checked at its exact boundary: one ms before, nothing; at it,
 * the effect. Each test names the part of server/ it drives:
 *
 *  - dispatch, batch, reply: a lock is granted and released, fences rise;
 *  - push: a release hands the lock to the waiter by a GRANTED push;
 *  - deadlines: a wait of N ms is still queued N - 1 ms after it was, and
 *    ends at N ms, taken out of the queue (WAIT_TIMEOUT); a lock-delay of
 *    N ms (the ACQUIRE's, or --lock-delay's) keeps an expired holder's
 *    lock from its waiter exactly N ms (DELAY_END);
 *  - batch: requests read in one loop turn share one entry;
 *  - access: a principal limited to a prefix is refused outside it; a
 *    principal of each role sends every request type and is refused
 *    exactly what its role does not allow;
 *  - access, observe, watch: nor does a prefix-limited principal see
 *    another prefix's lock names in METRICS, or in a watch taken before
 *    SIGHUP narrowed its prefixes;
 *  - listen, access: a connection parked while the new leader is not
 *    serving yet, then closed by SIGHUP, is not read again;
 *  - liveness: a session's lease runs ttl ms from the last request that
 *    named it, and the leader's tick (every 50 ms) expires it at the first
 *    tick at or after that: its lock goes to the next waiter and its
 *    client is told; keepalives renew the lease from when each is handled;
 *    the last sessions of a cluster are kept for admins;
 *  - watch: a WATCH sees the lock's state, then each change;
 *  - the leadership switch: a node that does not lead serves no session,
 *    and one that starts leading does; a waiter kept across a lost and
 *    regained leadership is still granted; a new leader gives every
 *    session a full fresh lease.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "baton/baton.h"
#include "tests/lib/aclient.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/runner.h"
#include "tests/lib/tls_sock.h"
#include "tests/unit/fake_clock.h"
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

/* The kernel's CLOCK_MONOTONIC in ms, past any clock_gettime. */
static uint64_t kernel_now_ms(void)
{
    struct timespec ts;

    if (syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts) != 0) FAIL("clock_gettime");
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct clock_probe {
    uint64_t hrtime_ms, loop_ms, later_ms, fake_ms;
};

static void *probe_bound(void *arg)
{
    struct clock_probe *p = arg;
    uv_loop_t loop;

    fake_clock_bind_thread();
    p->fake_ms = fake_clock_now_ms();
    p->hrtime_ms = uv_hrtime() / 1000000;
    uv_loop_init(&loop);
    p->loop_ms = uv_now(&loop);
    fake_clock_advance(7);
    uv_update_time(&loop);
    p->later_ms = uv_now(&loop);
    uv_loop_close(&loop);
    return NULL;
}

/* The fixture rests on this: libuv.so's own clock reads (uv_hrtime, a
 * loop's time) reach this executable's clock_gettime, which gives a bound
 * thread the fake clock and every other thread the kernel's. */
TEST(fake_clock_reaches_libuv)
{
    struct clock_probe p = {0};
    pthread_t t;
    uint64_t before = kernel_now_ms(), hr = uv_hrtime() / 1000000, after = kernel_now_ms();

    ASSERT(before <= hr && hr <= after);
    ASSERT_EQ(pthread_create(&t, NULL, probe_bound, &p), 0);
    pthread_join(t, NULL);
    ASSERT_UEQ(p.hrtime_ms, p.fake_ms);
    ASSERT_UEQ(p.loop_ms, p.fake_ms);
    ASSERT_UEQ(p.later_ms, p.fake_ms + 7);
    ASSERT_UEQ(fake_clock_now_ms(), p.fake_ms + 7);
}

/* Wait (real time, the client is on a thread of its own) until the store
 * shows `waiters` waiting for `name`. */
static void await_waiters(struct lf *f, const char *name, uint32_t waiters)
{
    struct lf_lock_state st;
    int64_t deadline = now_ms() + 10000;

    for (;;) {
        lf_lock_state(f, name, &st);
        if (st.waiters == waiters) return;
        if (now_ms() > deadline) FAIL("%s: %u waiters, not %u", name, st.waiters, waiters);
        sleep_ms(2);
    }
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
    await_waiters(&h.f, "h", 1);
    ASSERT_EQ(h.w.done, 0); /* queued behind a */
    handoff_finish(&h);
    ASSERT_EQ(h.w.rv, 0);
    ASSERT_GT(h.w.fence, 0);
}

/* The wait's timer is armed when its ACQUIRE is applied, and the clock
 * stands still from then until the test moves it. */
TEST(wait_deadline_ends_the_wait_at_its_ms)
{
    struct handoff h;
    struct lf_lock_state st;
    baton_lock_t *l;
    uint64_t held;

    handoff_start(&h, 200, NULL);
    held = baton_lock_fence(h.held);
    await_waiters(&h.f, "h", 1);
    lf_advance(&h.f, 199);
    lf_lock_state(&h.f, "h", &st);
    ASSERT_EQ(st.waiters, 1);
    ASSERT_EQ(h.w.done, 0);
    lf_advance(&h.f, 1);
    lf_lock_state(&h.f, "h", &st);
    ASSERT_EQ(st.waiters, 0);
    ASSERT_UEQ(st.fence, held);
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
    await_waiters(&h.f, "h", 1);
    lf_set_leading(&h.f, false);
    lf_set_leading(&h.f, true);
    ASSERT_EQ(h.w.done, 0);
    handoff_finish(&h);
    ASSERT_EQ(h.w.rv, 0);
}

static void raw_connect(const struct lf *f, struct tls_sock *s)
{
    lf_raw_connect(f, s, NULL);
}

/* ---- access: every request type by every role ---- */

/* Which role each request needs, as the README documents it. */
static int needs(int type)
{
    switch (type) {
    case MSG_STATUS:
    case MSG_LOCK_INFO:
    case MSG_LIST_LOCKS:
    case MSG_LIST_SESSIONS:
    case MSG_WATCH:
    case MSG_METRICS:
    case MSG_LOCK_STATE:
    case MSG_WATCH2:
    case MSG_UNWATCH:
        return MSG_ROLE_READ;
    case MSG_OPEN_SESSION:
    case MSG_ACQUIRE:
    case MSG_ACQUIRE2:
    case MSG_PROCLAIM:
    case MSG_ACQUIRE_MANY:
    case MSG_RELEASE:
    case MSG_CANCEL:
    case MSG_CLOSE_SESSION:
    case MSG_KEEPALIVE:
    case MSG_LOST_HOLDS:
        return MSG_ROLE_LOCK;
    case MSG_SNAPSHOT_SAVE: /* a copy of every session and lock: admin only. Here
                               the state fits in one SNAPSHOT_CHUNK, the whole answer */
    default:
        return MSG_ROLE_ADMIN;
    }
}

/* A harmless request of each type: names that alice may use, a session
 * and member ids nobody has, so an allowed request fails in its handler
 * (or succeeds) without changing the state. */
static void harmless(int type, struct msg *m, uint64_t req)
{
    memset(m, 0, sizeof *m);
    m->type = (uint16_t)type;
    m->req_id = req;
    switch (type) {
    case MSG_OPEN_SESSION: m->u.open_session.ttl_ms = 5000; break;
    case MSG_ACQUIRE:
    case MSG_ACQUIRE2:
    case MSG_PROCLAIM:
    case MSG_RELEASE:
    case MSG_CANCEL:
    case MSG_CLOSE_SESSION:
        m->u.op.session = 999999;
        m->u.op.seq = req;
        m->u.op.fence = 1;
        m->u.op.waiter = 1;
        m->u.op.lock = P("jobs/matrix");
        break;
    case MSG_ACQUIRE_MANY: {
        static struct msg_lock_name more[1] = {{{"jobs/matrix2", 12}}};
        m->u.op.session = 999999;
        m->u.op.seq = req;
        m->u.op.lock = P("jobs/matrix");
        m->u.op.n_more = 1;
        m->u.op.more = more;
        break;
    }
    case MSG_KEEPALIVE: m->u.keepalive.session = 999999; break;
    case MSG_LOST_HOLDS: m->u.lost_holds.session = 999999; break;
    case MSG_LOCK_INFO:
    case MSG_LOCK_STATE: m->u.lock_info.lock = P("jobs/matrix"); break;
    case MSG_WATCH2: m->u.watch2.key = P("jobs/matrix"); break;
    case MSG_UNWATCH: m->u.unwatch.watch = 1; break;
    case MSG_LIST_LOCKS: m->u.list_locks.prefix = P("jobs/"); m->u.list_locks.limit = 10; break;
    case MSG_LIST_SESSIONS: m->u.list_sessions.limit = 10; break;
    case MSG_WATCH: m->u.watch.lock = P("jobs/matrix"); break;
    case MSG_FORCE_RELEASE: m->u.force_release.lock = P("jobs/none"); break;
    case MSG_EXPIRE_SESSION: m->u.expire_session.session = 999999; break;
    case MSG_TRANSFER: m->u.transfer.id = 99; break;
    case MSG_MEMBER_REMOVE: m->u.member_remove.id = 99; break;
    case MSG_MEMBER_ADD: m->u.member_add.id = 0; break; /* refused as EINVAL if allowed */
    default: break;
    }
}

/* A token of each role (admin, client within jobs/ and batch/, read)
 * sends every request type: what its role allows gets the handler's
 * answer, the rest BATON_EPERM (the expected matrix is written out here,
 * not read from proto/msg_table.h). */
TEST(every_request_type_by_role)
{
    static const int roles[] = {MSG_ROLE_ADMIN, MSG_ROLE_LOCK, MSG_ROLE_READ};
    static const char *const name[] = {"root", "alice", "bob"};
    static const char *const role[] = {"admin", "client", "read"};
    static const char *const opts[] = {"", "prefixes=jobs/,batch/", ""};
    char tokens[3][72], line[512], path[300], flag_path[320];
    const char *extra[] = {"--auth-file", flag_path, NULL};
    uint64_t req = 100;
    struct lf f;
    FILE *fp;

    snprintf(path, sizeof path, "/tmp/baton-leader-matrix-%d", (int)getpid());
    fp = fopen(path, "w");
    ASSERT(fp != NULL);
    for (int w = 0; w < 3; w++) {
        ASSERT_EQ(cluster_token(name[w], role[w], opts[w], tokens[w], line, sizeof line), 0);
        fputs(line, fp);
    }
    fclose(fp);
    snprintf(flag_path, sizeof flag_path, "%s", path);
    lf_start(&f, extra);
    for (int w = 0; w < 3; w++) {
        struct tls_sock s;
        lf_raw_connect(&f, &s, tokens[w]);
        for (int t = 1; t < MSG_TYPE_MAX_; t++) {
            const struct msg_info *info = msg_info(t);
            struct msg m, r;
            int st;
            if (info == NULL || info->dir != MSG_C2S || t == MSG_HELLO) continue;
            harmless(t, &m, ++req);
            /* past the confirmation rounds' rate limit, which a LOCK_STATE
             * waits for (server/keepalive.c), on a clock that stands still */
            lf_advance(&f, 25);
            if (tls_sock_request(&s, &m, &r, 5000) != 0)
                FAIL("%s as %s: %s", msg_type_name(t), name[w], s.err);
            st = tls_sock_status(&r);
            msg_free(&r);
            if (roles[w] >= needs(t)) {
                if (st == BATON_EPERM || st == BATON_EAUTH)
                    FAIL("%s as %s: refused (%d)", msg_type_name(t), name[w], st);
            } else if (st != BATON_EPERM) {
                FAIL("%s as %s: answered %d, want BATON_EPERM", msg_type_name(t), name[w], st);
            }
        }
        tls_sock_close(&s);
    }
    lf_stop(&f);
    unlink(path);
}

/* OPEN_SESSION with ttl_ms on s: the session id. */
static uint64_t raw_open(struct tls_sock *s, uint32_t ttl_ms)
{
    return lf_raw_open(s, ttl_ms, "raw");
}

/* ACQUIRE name, waiting wait_ms (BATON_WAIT_*), with lock_delay_ms
 * (BATON_LOCK_DELAY_*): the RESULT's status. */
static int raw_acquire(struct tls_sock *s, uint64_t session, uint64_t seq, const char *name,
                       int64_t wait_ms, int32_t lock_delay_ms)
{
    struct msg m = {.type = MSG_ACQUIRE, .req_id = 100 + seq}, r;
    int st;

    m.u.op.session = session;
    m.u.op.seq = seq;
    m.u.op.lock = (struct pstr){name, strlen(name)};
    m.u.op.wait_ms = wait_ms;
    m.u.op.lock_delay_ms = lock_delay_ms;
    if (tls_sock_request(s, &m, &r, 2000) != 0) FAIL("acquire: %s", s->err);
    st = tls_sock_status(&r);
    msg_free(&r);
    return st;
}

/* ACQUIRE name without waiting, without lock-delay. */
static int raw_trylock(struct tls_sock *s, uint64_t session, uint64_t seq, const char *name)
{
    return raw_acquire(s, session, seq, name, BATON_WAIT_TRY, BATON_LOCK_DELAY_NONE);
}

/* KEEPALIVE of session: its reply's status. */
static int raw_keepalive(struct tls_sock *s, uint64_t session)
{
    static uint64_t req_id = 1000;
    struct msg m = {.type = MSG_KEEPALIVE, .req_id = ++req_id}, r;
    int st;

    m.u.keepalive.session = session;
    if (tls_sock_request(s, &m, &r, 2000) != 0) FAIL("keepalive: %s", s->err);
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

static const char *const short_leases[] = {"--min-ttl", "200", NULL};

/* Is session alive, and does it hold name? */
static void assert_holds(struct lf *f, uint64_t session, const char *name)
{
    struct lf_lock_state st;

    ASSERT(lf_session_exists(f, session));
    lf_lock_state(f, name, &st);
    ASSERT(st.held);
    ASSERT_UEQ(st.holder, session);
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

/*
 * A lease is ttl ms from the last request that named the session; the
 * liveness tick (every LIVENESS_TICK_MS = 50 ms, server/liveness.c, and
 * re-armed 50 ms after each run) expires it at its first run at or after
 * that. Sessions a (ttl 300 from t = 0) and b (from t = 1), where the
 * leader started to lead at t = 0, so the tick first comes at t = 50:
 *
 *   t = 250  the tick runs (it was due at 50), next at 300; both alive
 *   t = 299  no tick; both alive
 *   t = 300  the tick: a's lease ends now, so a expires, its lock goes
 *            to b, which waited, and a's client is told; b has 1 ms left
 *   t = 349  no tick; b's lease ran out at 301, but nothing looked
 *   t = 350  the tick: b expires, and the lock is free
 */
TEST(silent_session_expires_at_the_first_tick_past_its_ttl)
{
    struct lf f;
    struct tls_sock sa, sb;
    struct lf_lock_state st;
    struct msg m;
    uint64_t a, b;

    lf_start(&f, short_leases);
    raw_connect(&f, &sa);
    a = raw_open(&sa, 300);
    ASSERT_EQ(raw_trylock(&sa, a, 1, "e"), 0);
    lf_advance(&f, 1);
    raw_connect(&f, &sb);
    b = raw_open(&sb, 300);
    ASSERT_EQ(raw_acquire(&sb, b, 1, "e", BATON_WAIT_FOREVER, BATON_LOCK_DELAY_NONE), 0);
    lf_advance(&f, 249);
    assert_holds(&f, a, "e");
    ASSERT(lf_session_exists(&f, b));
    lf_advance(&f, 49);
    assert_holds(&f, a, "e");
    lf_advance(&f, 1);
    ASSERT(!lf_session_exists(&f, a));
    assert_holds(&f, b, "e");
    ASSERT_EQ(raw_wait_for(&sa, MSG_SESSION_EXPIRED, &m, 2000), 0);
    ASSERT_UEQ(m.u.session_expired.session, a);
    msg_free(&m);
    ASSERT_EQ(raw_wait_for(&sb, MSG_GRANTED, &m, 2000), 0);
    ASSERT_UEQ(m.u.push.session, b);
    msg_free(&m);
    lf_advance(&f, 49);
    assert_holds(&f, b, "e");
    lf_advance(&f, 1);
    ASSERT(!lf_session_exists(&f, b));
    lf_lock_state(&f, "e", &st);
    ASSERT(!st.held);
    tls_sock_close(&sa);
    tls_sock_close(&sb);
    lf_stop(&f);
}

/*
 * A keepalive renews the lease from when the leader handles it. Session
 * (ttl 300, from t = 0) sends one every 200 ms, five times (t = 200 ..
 * 1000, more than three leases), each after the tick of that instant has
 * run; then it falls silent. The tick runs at t = 1250 (due at 1050), is
 * next due at 1300: alive at 1299, expired at 1300, the last keepalive's
 * time plus its ttl.
 */
TEST(keepalives_renew_the_lease_from_when_handled)
{
    struct lf f;
    struct tls_sock s;
    uint64_t sess;

    lf_start(&f, short_leases);
    raw_connect(&f, &s);
    sess = raw_open(&s, 300);
    ASSERT_EQ(raw_trylock(&s, sess, 1, "k"), 0);
    for (int i = 0; i < 5; i++) {
        lf_advance(&f, 200);
        assert_holds(&f, sess, "k");
        ASSERT_EQ(raw_keepalive(&s, sess), 0);
    }
    lf_advance(&f, 250);
    assert_holds(&f, sess, "k");
    lf_advance(&f, 49);
    assert_holds(&f, sess, "k");
    lf_advance(&f, 1);
    ASSERT(!lf_session_exists(&f, sess));
    tls_sock_close(&s);
    lf_stop(&f);
}

/*
 * A holder whose lock-delay is 200 ms expires (t = 300, as above): its
 * lock stays free and ungranted, delayed, until t = 500, then goes to the
 * waiter -- whose own session keeps alive meanwhile (a keepalive at t =
 * 250). The holder's ACQUIRE asks for holder_delay (BATON_LOCK_DELAY_*
 * or ms) on a server started with extra flags.
 */
static void check_lock_delay(const char *const *extra, int32_t holder_delay)
{
    struct lf f;
    struct tls_sock sa, sb;
    struct lf_lock_state st;
    uint64_t a, b;

    lf_start(&f, extra);
    raw_connect(&f, &sa);
    a = raw_open(&sa, 300);
    ASSERT_EQ(raw_acquire(&sa, a, 1, "d", BATON_WAIT_TRY, holder_delay), 0);
    raw_connect(&f, &sb);
    b = raw_open(&sb, 300);
    ASSERT_EQ(raw_acquire(&sb, b, 1, "d", BATON_WAIT_FOREVER, BATON_LOCK_DELAY_NONE), 0);
    lf_advance(&f, 250);
    ASSERT_EQ(raw_keepalive(&sb, b), 0);
    lf_advance(&f, 50);
    ASSERT(!lf_session_exists(&f, a));
    lf_lock_state(&f, "d", &st);
    ASSERT(!st.held);
    ASSERT(st.delayed);
    ASSERT_EQ(st.waiters, 1);
    lf_advance(&f, 199);
    lf_lock_state(&f, "d", &st);
    ASSERT(st.delayed);
    ASSERT_EQ(st.waiters, 1);
    lf_advance(&f, 1);
    assert_holds(&f, b, "d");
    lf_lock_state(&f, "d", &st);
    ASSERT(!st.delayed);
    ASSERT_EQ(st.waiters, 0);
    tls_sock_close(&sa);
    tls_sock_close(&sb);
    lf_stop(&f);
}

TEST(lock_delay_keeps_the_lock_from_the_waiter_its_ms)
{
    check_lock_delay(short_leases, 200);
}

/* An ACQUIRE that asks for the default lock-delay gets --lock-delay. */
TEST(server_lock_delay_applies_to_a_default_acquire)
{
    static const char *const extra[] = {"--min-ttl", "200", "--lock-delay", "200", NULL};

    check_lock_delay(extra, BATON_LOCK_DELAY_DEFAULT);
}

/*
 * A new leader cannot know how long each session was silent before, so it
 * gives every one a full lease from when it starts to lead. Session (ttl
 * 300, from t = 0); leadership lost and regained at t = 250: the tick
 * restarts then (next at 300), and the session, which would have expired
 * at 300, lives until the tick at 550.
 */
TEST(new_leader_gives_every_session_a_fresh_lease)
{
    struct lf f;
    struct tls_sock s;
    uint64_t sess;

    lf_start(&f, short_leases);
    raw_connect(&f, &s);
    sess = raw_open(&s, 300);
    ASSERT_EQ(raw_trylock(&s, sess, 1, "n"), 0);
    tls_sock_close(&s); /* the switch closes every client connection */
    lf_advance(&f, 250);
    lf_set_leading(&f, false);
    lf_set_leading(&f, true);
    lf_advance(&f, 50);
    assert_holds(&f, sess, "n");
    lf_advance(&f, 200);
    assert_holds(&f, sess, "n");
    lf_advance(&f, 49);
    assert_holds(&f, sess, "n");
    lf_advance(&f, 1);
    ASSERT(!lf_session_exists(&f, sess));
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

/* ---- the feature level (server/levels.c) ---------------------------------- */

/* The raise rule: the lowest level over the voters (not heard from yet: 0)
 * and the leader's own binary, if above the committed level; never lower. */
TEST(level_raise_rule)
{
    struct level_voter v[3] = {{2, 2}, {3, 2}, {4, 2}};
    uint32_t low;

    ASSERT_EQ(level_to_raise(v, 3, 2, 1), 2);
    ASSERT_EQ(level_to_raise(v, 0, 2, 1), 2);  /* a cluster of one */
    ASSERT_EQ(level_to_raise(v, 3, 1, 1), 0);  /* the leader's own binary is level 1 */
    ASSERT_EQ(level_to_raise(v, 3, 2, 2), 0);  /* there already */
    ASSERT_EQ(level_to_raise(v, 3, 2, 3), 0);  /* never lower */
    v[1].level = 1;
    ASSERT_EQ(level_to_raise(v, 3, 2, 1), 0);
    ASSERT_EQ(level_voters_min(v, 3, 2, &low), 1);
    ASSERT_EQ(low, 3);
    v[1].level = 0; /* not heard from yet: holds the raise back */
    ASSERT_EQ(level_to_raise(v, 3, 2, 1), 0);
    ASSERT_EQ(level_voters_min(v, 3, 2, &low), 0);
    ASSERT_EQ(low, 3);
    v[1].level = 3;
    ASSERT_EQ(level_to_raise(v, 3, 3, 1), 2); /* the lowest, not the highest */
    ASSERT_EQ(level_voters_min(v, 3, 2, &low), 2);
    ASSERT_EQ(low, 0);
}

struct level_probe_arg {
    uint32_t level;
    int status;
};

/* The committed level, read on the loop. */
static void level_read(struct lf *f, void *arg)
{
    ((struct level_probe_arg *)arg)->level = store_level(f->srv.store);
}

/* In process, a leader of one: it has no other member, so it raises the
 * level to its own binary's as it becomes ready, before it serves a
 * request (server/levels.c, levels_kick), without waiting for a poll: a
 * new cluster takes values and owners from its first request on. */
TEST(leader_of_one_raises_the_level_as_it_becomes_ready)
{
    struct lf f;
    struct level_probe_arg a = {0};

    lf_start(&f, NULL);
    lf_on_loop(&f, level_read, &a);
    ASSERT_EQ(a.level, CMD_LEVEL);
    lf_stop(&f);
}

/* ---- address entries of former members ----------------------------------- */

/* Commit a SET_MEMBER_ADDR of member `id` straight into the store, as a
 * replicated entry would (loop thread). */
static void put_member_addr(struct lf *f, uint32_t id, const char *addr)
{
    struct cmd cmd = {.type = CMD_SET_MEMBER_ADDR, .session = id, .name = addr};
    struct buf b = {0};
    struct effects fx;
    size_t start;

    cmd.name_len = (uint16_t)strlen(addr);
    effects_init(&fx);
    ASSERT_EQ(cmd_batch_begin(&b, &start), 0);
    ASSERT_EQ(cmd_batch_add(&b, &cmd), 0);
    cmd_batch_end(&b, start, 1);
    ASSERT_EQ(store_apply(f->st, store_applied_index(f->st) + 1, b.data, b.len, &fx), 0);
    buf_free(&b);
    effects_free(&fx);
}

/* The entry of node 7, no member, appears (its removal committed), and the
 * leader loses leadership in the same loop turn: whatever it proposes to
 * delete it is lost. */
static void leftover_then_depose(struct lf *f, void *arg)
{
    (void)arg;
    put_member_addr(f, f->srv.cfg.node.id, "127.0.0.1:7001");
    put_member_addr(f, 7, "127.0.0.1:7007");
    fake_node_set_leading(fake_node_current(), false);
}

static void member_addr_found(struct lf *f, void *arg)
{
    int *found = arg; /* [0]: this node's, [1]: node 7's */
    char out[BATON_MAX_ADDR + 1];

    found[0] = store_member_addr(f->st, f->srv.cfg.node.id, out, sizeof out);
    found[1] = store_member_addr(f->st, 7, out, sizeof out);
}

/* A former member's client address entry is deleted by the ready leader
 * even when the delete proposed right after the removal is lost with
 * leadership: the next leader tidies it, and a member's entry stays. */
TEST(former_member_address_deleted_across_leader_change)
{
    struct lf f;
    int found[2];

    lf_start(&f, NULL);
    lf_on_loop(&f, leftover_then_depose, NULL);
    lf_settle(&f);
    lf_on_loop(&f, member_addr_found, found);
    ASSERT_EQ(found[0], 1);
    ASSERT_EQ(found[1], 1); /* the lost leader could not delete it */
    lf_set_leading(&f, true);
    lf_advance(&f, 1100);
    lf_on_loop(&f, member_addr_found, found);
    ASSERT_EQ(found[0], 1);
    ASSERT_EQ(found[1], 0);
    lf_stop(&f);
}

/* An entry of node 7, no member, and no leader for now. */
static void former_entry_then_depose(struct lf *f, void *arg)
{
    (void)arg;
    put_member_addr(f, 7, "127.0.0.1:7007");
    fake_node_set_leading(fake_node_current(), false);
}

/* This node's entry, and whether it is its --cluster client address. */
static void own_entry(struct lf *f, void *arg)
{
    int *same = arg;
    const struct node_member *self = node_member_find(&f->srv.cfg.node, f->srv.cfg.node.id);
    char out[BATON_MAX_ADDR + 1];

    *same = store_member_addr(f->st, f->srv.cfg.node.id, out, sizeof out) == 1 &&
            self != NULL && strcmp(out, self->client_addr) == 0;
}

/* The ready leader records a member that has caught up, and has no entry
 * yet, in the members table: its client address from --cluster, the
 * record that it has started (raft/first_start.h). Not before the node
 * says it has caught up; and not while it does not lead. */
TEST(caught_up_member_recorded_as_started)
{
    struct lf f;
    int found[2];

    lf_start(&f, NULL);
    lf_advance(&f, 1100);
    lf_on_loop(&f, member_addr_found, found);
    ASSERT_EQ(found[0], 0); /* not caught up (as far as the node says) */
    fake_node_report_caught_up(true);
    lf_on_loop(&f, former_entry_then_depose, NULL);
    lf_settle(&f);
    lf_advance(&f, 1100);
    lf_on_loop(&f, member_addr_found, found);
    ASSERT_EQ(found[0], 0); /* no leader, no record */
    ASSERT_EQ(found[1], 1);
    lf_set_leading(&f, true);
    lf_advance(&f, 1100);
    lf_on_loop(&f, member_addr_found, found);
    ASSERT_EQ(found[0], 1); /* recorded */
    ASSERT_EQ(found[1], 0); /* and the former member's entry deleted with it */
    lf_on_loop(&f, own_entry, found);
    ASSERT_EQ(found[0], 1);
    fake_node_report_caught_up(false);
    lf_stop(&f);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(30);
    RUN(fake_clock_reaches_libuv);
    RUN(grant_and_release_fences_rise);
    RUN(release_hands_over_by_push);
    RUN(wait_deadline_ends_the_wait_at_its_ms);
    RUN(requests_of_one_turn_share_an_entry);
    RUN(prefix_principal_refused_outside_its_prefix);
    RUN(every_request_type_by_role);
    RUN(parked_conn_closed_by_sighup_is_not_read_again);
    RUN(prefix_principal_sees_no_other_prefix_in_metrics_or_watches);
    RUN(silent_session_expires_at_the_first_tick_past_its_ttl);
    RUN(keepalives_renew_the_lease_from_when_handled);
    RUN(lock_delay_keeps_the_lock_from_the_waiter_its_ms);
    RUN(server_lock_delay_applies_to_a_default_acquire);
    RUN(watch_sees_the_state_then_each_change);
    RUN(no_session_until_the_node_leads);
    RUN(waiter_kept_across_lost_leadership);
    RUN(new_leader_gives_every_session_a_fresh_lease);
    RUN(last_sessions_kept_for_admins);
    RUN(level_raise_rule);
    RUN(leader_of_one_raises_the_level_as_it_becomes_ready);
    RUN(former_member_address_deleted_across_leader_change);
    RUN(caught_up_member_recorded_as_started);
    return runner_done();
}
