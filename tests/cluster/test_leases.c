/*
 * test_leases.c -- session leases under raft_fixture's simulated time, with
 * the real lease table (server/lease.c) and the real store.
 *
 * Each fixture node gets the duties batond's leader has (server/liveness.c
 * and raft/node.c): when raft says it is leader in a new term it commits a
 * barrier, then gives every session in its store a full fresh lease, then
 * proposes EXPIRE_SESSION for every lease that runs out. Clients "send
 * keepalives" by renewing their lease on whichever node is a ready leader,
 * as they would by talking to it. Time is the fixture's simulated clock.
 */
#include <string.h>

#include "baton/baton_defs.h"
#include "server/lease.h"
#include "tests/cluster/fixture.h"
#include "tests/lib/runner.h"

#define POOL 512

/* What one node's leader duties keep. */
struct duty {
    struct cl *c;
    unsigned i;
    struct lease_table leases;
    raft_term term;          /* term whose barrier was proposed */
    bool barrier_pending;
    bool ready;
    struct raft_barrier barrier;
    uint64_t n_expiries;     /* EXPIRE_SESSION proposals made */
};

static struct duty duties[CL_N];
static struct cl_prop pool[POOL];
static unsigned pool_next;

static uint64_t now(struct cl *c)
{
    return (uint64_t)raft_fixture_time(c->f);
}

static int grant_fresh(void *data, uint64_t session, uint32_t ttl_ms, const char *owner,
                       size_t owner_len)
{
    struct duty *d = data;
    (void)owner;
    (void)owner_len;
    lease_grant(&d->leases, session, ttl_ms, now(d->c));
    return 0;
}

static void barrier_cb(struct raft_barrier *req, int status)
{
    struct duty *d = req->data;

    d->barrier_pending = false;
    if (status != 0 || raft_state(cl_raft(d->c, d->i)) != RAFT_LEADER) return;
    lease_free(&d->leases);
    store_foreach_session(d->c->node[d->i].store, grant_fresh, d);
    d->ready = true;
}

/* One node's leader duties, run after every simulated event. */
static void duty_step(struct duty *d)
{
    struct raft *r = cl_raft(d->c, d->i);
    uint64_t expired[16];
    size_t n;

    if (raft_state(r) != RAFT_LEADER) {
        d->ready = false;
        return;
    }
    if (!d->ready || d->term != r->current_term) {
        d->ready = false;
        if (!d->barrier_pending && d->term != r->current_term) {
            d->term = r->current_term;
            d->barrier.data = d;
            if (raft_barrier(r, &d->barrier, barrier_cb) == 0) d->barrier_pending = true;
        }
        return;
    }
    n = lease_collect_expired(&d->leases, now(d->c), expired, 16);
    for (size_t k = 0; k < n; k++) {
        struct cmd cmd = {.type = CMD_EXPIRE_SESSION, .session = expired[k]};
        struct cl_prop *p = &pool[pool_next++ % POOL];
        if (cl_propose(d->c, d->i, &cmd, 1, p) == 0) d->n_expiries++;
    }
}

/* Sessions whose clients are alive keep renewing on the ready leader. */
static uint64_t live[8];
static size_t n_live;
static uint64_t last_keepalive;

static void keepalives(struct cl *c, unsigned every_ms)
{
    if (now(c) < last_keepalive + every_ms) return;
    last_keepalive = now(c);
    for (unsigned i = 0; i < CL_N; i++)
        if (duties[i].ready)
            for (size_t k = 0; k < n_live; k++) lease_renew(&duties[i].leases, live[k], now(c));
}

/* Step the cluster for ms of simulated time, running every node's duties. */
static void run_for(struct cl *c, unsigned ms)
{
    uint64_t end = now(c) + ms;
    while (now(c) < end) {
        raft_fixture_step(c->f);
        for (unsigned i = 0; i < CL_N; i++) duty_step(&duties[i]);
        keepalives(c, 1000);
    }
}

static void setup(struct cl *c)
{
    cl_open(c, NULL);
    memset(duties, 0, sizeof duties);
    for (unsigned i = 0; i < CL_N; i++) {
        duties[i].c = c;
        duties[i].i = i;
        lease_init(&duties[i].leases);
    }
    n_live = 0;
    last_keepalive = 0;
    run_for(c, 500); /* the first leader commits its barrier */
}

static void teardown(struct cl *c)
{
    cl_close(c);
    for (unsigned i = 0; i < CL_N; i++) lease_free(&duties[i].leases);
}

/* Open a session on the current leader; a live client renews it. */
static uint64_t open_session(struct cl *c, uint32_t ttl, bool alive)
{
    struct cl_prop p;
    uint64_t id;
    unsigned l = cl_leader(c);

    cl_run1(c, cl_open_session(ttl, "t"), &p);
    id = p.results[0].value;
    ASSERT(duties[l].ready);
    lease_grant(&duties[l].leases, id, ttl, now(c));
    if (alive) live[n_live++] = id;
    return id;
}

static bool exists(struct cl *c, unsigned i, uint64_t session)
{
    return store_session_exists(c->node[i].store, session) == 1;
}

TEST(live_sessions_survive_repeated_leader_changes)
{
    struct cl c;
    struct cl_prop p;
    uint64_t s, holder, fence;
    uint32_t n_w;

    setup(&c);
    s = open_session(&c, 3000, true);
    cl_run1(&c, cl_acquire(s, 1, BATON_WAIT_FOREVER, "x"), &p);
    ASSERT_EQ(p.results[0].kind, RESULT_GRANTED);
    for (int round = 0; round < 4; round++) {
        unsigned old = cl_leader(&c);
        cl_kill(&c, old);
        cl_wait_leader(&c, old, CL_ELECT_MS);
        run_for(&c, 2000);
        cl_revive(&c, old);
        run_for(&c, 2000);
    }
    run_for(&c, 5000);
    for (unsigned i = 0; i < CL_N; i++) {
        ASSERT(exists(&c, i, s));
        cl_lock(&c, i, "x", &holder, &fence, NULL, 0, &n_w);
        ASSERT_UEQ(holder, s);
    }
    teardown(&c);
}

TEST(dead_clients_locks_go_to_next_waiter_after_ttl)
{
    struct cl c;
    struct cl_prop p;
    uint64_t dead, waiter, holder = 0, fence, t_last, t_grant = 0;
    uint32_t n_w;
    const uint32_t ttl = 2000;

    setup(&c);
    dead = open_session(&c, ttl, false);
    waiter = open_session(&c, ttl, true);
    /* The dead client's last message is its ACQUIRE: like every request it
     * renews the lease when the leader receives it. */
    t_last = now(&c);
    lease_renew(&duties[cl_leader(&c)].leases, dead, t_last);
    cl_run1(&c, cl_acquire(dead, 1, BATON_WAIT_FOREVER, "y"), &p);
    cl_run1(&c, cl_acquire(waiter, 1, BATON_WAIT_FOREVER, "y"), &p);
    ASSERT_EQ(p.results[0].kind, RESULT_QUEUED);
    while (now(&c) < t_last + 3 * ttl) {
        run_for(&c, 10);
        cl_lock(&c, cl_leader(&c) < CL_N ? cl_leader(&c) : 0, "y", &holder, &fence, NULL, 0, &n_w);
        if (holder == waiter) {
            t_grant = now(&c);
            break;
        }
    }
    ASSERT_UEQ(holder, waiter);
    ASSERT_GE(t_grant - t_last, ttl);
    ASSERT_LE(t_grant - t_last, ttl + 500);
    ASSERT(!exists(&c, 0, dead));
    teardown(&c);
}

TEST(cut_off_leader_neither_expires_nor_grants)
{
    struct cl c;
    struct cl_prop p;
    struct buf before = {0}, after = {0};
    uint64_t a, b;
    unsigned old, next;

    setup(&c);
    a = open_session(&c, 2000, true);
    b = open_session(&c, 2000, true);
    cl_run1(&c, cl_acquire(a, 1, BATON_WAIT_FOREVER, "z"), &p);
    cl_run1(&c, cl_acquire(b, 1, BATON_WAIT_FOREVER, "z"), &p);
    old = cl_leader(&c);
    cl_snapshot(&c, old, &before);
    /* The clients can reach only the majority side, so on the old leader no
     * lease is renewed from here on. */
    cl_isolate(&c, old);
    next = cl_wait_leader(&c, old, CL_ELECT_MS);
    run_for(&c, 8000);
    /* The old leader may have proposed expiries while it still believed it
     * led, but none of them committed: its state did not change. */
    cl_snapshot(&c, old, &after);
    ASSERT_UEQ(after.len, before.len);
    ASSERT(memcmp(after.data, before.data, before.len) == 0);
    /* On the majority both sessions live and a still holds z. */
    ASSERT(exists(&c, next, a) && exists(&c, next, b));
    cl_heal(&c, old);
    run_for(&c, 3000);
    for (unsigned i = 0; i < CL_N; i++) ASSERT(exists(&c, i, a) && exists(&c, i, b));
    cl_assert_same(&c, CL_ALL);
    buf_free(&before);
    buf_free(&after);
    teardown(&c);
}

TEST(waiter_whose_session_expired_while_queued_is_never_granted)
{
    struct cl c;
    struct cl_prop p;
    uint64_t holder_s, gone, next, holder = 0, fence, waiters[4];
    uint32_t n_waiters = 0;

    setup(&c);
    holder_s = open_session(&c, 2000, true);
    gone = open_session(&c, 2000, false);
    next = open_session(&c, 2000, true);
    cl_run1(&c, cl_acquire(holder_s, 1, BATON_WAIT_FOREVER, "w"), &p);
    cl_run1(&c, cl_acquire(gone, 1, BATON_WAIT_FOREVER, "w"), &p);
    cl_run1(&c, cl_acquire(next, 1, BATON_WAIT_FOREVER, "w"), &p);
    run_for(&c, 4000); /* gone's lease runs out while it is queued */
    ASSERT(!exists(&c, cl_leader(&c), gone));
    cl_lock(&c, cl_leader(&c), "w", &holder, &fence, waiters, 4, &n_waiters);
    ASSERT_EQ(n_waiters, 1);
    ASSERT_UEQ(waiters[0], next);
    cl_run1(&c, cl_release(holder_s, 2, fence, "w"), &p);
    ASSERT_EQ(p.n_fx, 1);
    cl_assert_fx(&p, 0, FX_GRANT, next, 1, fence + 1, "w");
    run_for(&c, 1000);
    cl_assert_same(&c, CL_ALL);
    teardown(&c);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    cl_suite_init();
    RUN(live_sessions_survive_repeated_leader_changes);
    RUN(dead_clients_locks_go_to_next_waiter_after_ttl);
    RUN(cut_off_leader_neither_expires_nor_grants);
    RUN(waiter_whose_session_expired_while_queued_is_never_granted);
    cl_suite_done();
    return runner_done();
}
