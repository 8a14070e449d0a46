/*
 * test_faults_random.c -- seeded random schedules of raft-level faults
 * (nodes and links cut, nodes killed and revived, every node restarted)
 * under six clients that lock and release three locks, on raft_fixture with
 * baton's real store behind every node and the model of batond's leader
 * duties (tests/cluster/faults.h): no lock granted to two clients at once,
 * fences only go up, and every store ends identical.
 * docs/guarantees.md, "Raft level", says what they found.
 *
 * The schedules print their seeds; BATON_FAULT_SEED=N reruns one,
 * BATON_FAULT_SCHEDULES=N sets how many run. BATON_FAULT_VERBOSE=1
 * narrates; BATON_FAULT_BARRIER=N proposes the barrier a fixed N ms after
 * the election instead, to compare.
 */
#include "tests/cluster/faults.h"
#include "tests/lib/rng.h"

/* ---- 5. random schedules ------------------------------------------------------------------------------ */

/* xorshift64*: deterministic per seed. */
static uint64_t rng_state;

static uint64_t rng(void)
{
    return xorshift64star(&rng_state);
}

static unsigned rnd(unsigned n)
{
    return (unsigned)(rng() % n);
}

#define N_CLIENTS 6
#define N_LOCKS 3
#define PROP_POOL 4096
#define CLIENT_TIMEOUT_MS 1500

static const char *lock_names[N_LOCKS] = {"r0", "r1", "r2"};

enum cstate { C_IDLE, C_ACQUIRING, C_WAITING, C_HOLDING, C_RELEASING };

/* A client of the model: one session, at most one request in flight. */
struct client {
    uint64_t session;
    uint64_t seq;            /* seq of the request being made */
    uint64_t acq_seq;        /* seq of the acquire that made it wait or hold */
    unsigned lock;
    uint64_t fence;
    enum cstate st;
    struct prop *inflight;   /* NULL when none; abandoned on timeout */
    raft_time sent_at;
    raft_time next_at;       /* when to act next */
};

static struct client clients[N_CLIENTS];
static struct prop *prop_pool;
static uint64_t last_fence[N_LOCKS];
static uint64_t node_fence[CL_N][N_LOCKS];
static unsigned n_grants_seen, n_unknown;

static struct client *client_of(uint64_t session)
{
    for (int k = 0; k < N_CLIENTS; k++)
        if (clients[k].session == session) return &clients[k];
    return NULL;
}

/* A client learns that it holds its lock with `fence`: nobody else may
 * hold it, and the lock's fences only go up. */
static void client_granted(struct client *cl, uint64_t fence, const char *how)
{
    if (cl->st == C_HOLDING) {
        if (cl->fence != fence)
            FAIL("session %llu told fence %llu while holding %s with %llu (%s)",
                 (unsigned long long)cl->session, (unsigned long long)fence,
                 lock_names[cl->lock], (unsigned long long)cl->fence, how);
        return;
    }
    if (cl->st != C_ACQUIRING && cl->st != C_WAITING)
        FAIL("session %llu granted %s in state %d (%s)", (unsigned long long)cl->session,
             lock_names[cl->lock], cl->st, how);
    for (int k = 0; k < N_CLIENTS; k++)
        if (&clients[k] != cl && clients[k].st == C_HOLDING && clients[k].lock == cl->lock)
            FAIL("%s granted to session %llu (fence %llu, %s) while session %llu holds it "
                 "(fence %llu)",
                 lock_names[cl->lock], (unsigned long long)cl->session,
                 (unsigned long long)fence, how, (unsigned long long)clients[k].session,
                 (unsigned long long)clients[k].fence);
    if (fence <= last_fence[cl->lock])
        FAIL("%s: fence %llu after %llu", lock_names[cl->lock], (unsigned long long)fence,
             (unsigned long long)last_fence[cl->lock]);
    last_fence[cl->lock] = fence;
    cl->st = C_HOLDING;
    cl->fence = fence;
    n_grants_seen++;
}

static void client_push(const struct push *p)
{
    struct client *cl = client_of(p->session);

    ASSERT(cl != NULL);
    if (p->waiter != cl->acq_seq || strcmp(p->name, lock_names[cl->lock]) != 0)
        FAIL("push for session %llu waiter %llu lock %s; its acquire is %llu on %s",
             (unsigned long long)p->session, (unsigned long long)p->waiter, p->name,
             (unsigned long long)cl->acq_seq, lock_names[cl->lock]);
    client_granted(cl, p->fence, "push");
}

static void client_done(struct prop *p)
{
    struct client *cl = p->data;
    const struct cmd_result *r = &p->results[0];

    if (cl == NULL || cl->inflight != p) return; /* abandoned: a closed connection */
    cl->inflight = NULL;
    if (p->status != 0) {
        n_unknown++; /* outcome unknown: re-send the same seq */
        return;
    }
    ASSERT_EQ(p->n_results, 1);
    switch (cl->st) {
    case C_ACQUIRING:
    case C_WAITING:
        if (r->status != 0) FAIL("acquire by %llu: %d", (unsigned long long)cl->session, r->status);
        if (r->kind == RESULT_GRANTED)
            client_granted(cl, r->value, "reply");
        else if (r->kind == RESULT_QUEUED)
            cl->st = C_WAITING;
        else
            FAIL("acquire result kind %u", r->kind);
        break;
    case C_RELEASING:
        if (r->status != 0)
            FAIL("release by %llu of %s fence %llu: %d", (unsigned long long)cl->session,
                 lock_names[cl->lock], (unsigned long long)cl->fence, r->status);
        cl->st = C_IDLE;
        break;
    case C_HOLDING:
        /* A re-sent acquire answered after a push told it already. */
        if (r->kind != RESULT_GRANTED || r->value != cl->fence) FAIL("late acquire result");
        break;
    default:
        FAIL("reply in state %d", cl->st);
    }
}

static struct prop *prop_get(void)
{
    for (int k = 0; k < PROP_POOL; k++)
        if (!prop_pool[k].busy) return &prop_pool[k];
    FAIL("proposal pool exhausted");
}

/* One client's turn: decide, then send to the ready leader, if any. */
static void client_act(struct cl *c, struct client *cl)
{
    raft_time now = raft_fixture_time(c->f);
    unsigned l = ready_leader(c);
    struct cmd cmd;
    struct prop *p;

    if (cl->inflight != NULL) {
        if (now < cl->sent_at + CLIENT_TIMEOUT_MS) return;
        cl->inflight->data = NULL; /* the connection is given up */
        cl->inflight = NULL;
        n_unknown++;
    }
    if (now < cl->next_at) return;
    cl->next_at = now + 20 + rnd(200);
    switch (cl->st) {
    case C_IDLE:
        if (rnd(3) != 0) return;
        cl->lock = rnd(N_LOCKS);
        cl->acq_seq = ++cl->seq;
        cl->st = C_ACQUIRING;
        /* fall through */
    case C_ACQUIRING:
    case C_WAITING:
        /* (Re-)send the acquire: a waiting client does so now and then, as
         * libbaton does after a reconnect; the answer is the outcome so
         * far. */
        if (cl->st == C_WAITING && rnd(4) != 0) return;
        cmd = cl_acquire(cl->session, cl->acq_seq, FOREVER, lock_names[cl->lock]);
        break;
    case C_HOLDING:
        if (rnd(2) != 0) return;
        cl->seq++;
        cl->st = C_RELEASING;
        /* fall through */
    case C_RELEASING:
    default:
        cmd = cl_release(cl->session, cl->seq, cl->fence, lock_names[cl->lock]);
        break;
    }
    if (l == CL_N) return;
    p = prop_get();
    p->cb = client_done;
    p->data = cl;
    if (propose(c, l, &cmd, 1, p) != 0) return;
    cl->inflight = p;
    cl->sent_at = now;
}

static bool clients_on;

static void clients_step(struct cl *c)
{
    if (!clients_on) return;
    for (int k = 0; k < N_CLIENTS; k++) client_act(c, &clients[k]);
}

/* Every node's fences per lock only go up (a held lock's fence). */
static void check_node_fences(struct cl *c)
{
    for (unsigned i = 0; i < CL_N; i++)
        for (int k = 0; k < N_LOCKS; k++) {
            struct lock_view v = lock_of(c, i, lock_names[k]);
            if (v.holder == 0) continue;
            if (v.fence < node_fence[i][k])
                FAIL("node %u: %s fence went back from %llu to %llu", i, lock_names[k],
                     (unsigned long long)node_fence[i][k], (unsigned long long)v.fence);
            node_fence[i][k] = v.fence;
        }
}

static unsigned n_stuck, n_shutdown;
static struct raft_transfer transfer_req;
static bool transfer_busy;

static void transfer_done(struct raft_transfer *req)
{
    (void)req;
    transfer_busy = false;
}

/*
 * Heal everything, let requests finish, and compare every store.
 *
 * libraft 0.15 can leave a follower behind for good: one that holds a
 * longer stale tail of an earlier term (entries it took as a cut-off
 * leader) answers the new leader's first empty AppendEntries with success
 * and its own last index, which the leader caps to its log's end and takes
 * as the follower's match index; from then on it ignores the follower's
 * rejections ("match index is up to date"). Only a new leader unsticks it.
 * When a node does not catch up, hand leadership to another up-to-date
 * node (batonctl transfer-leader) and count it.
 *
 * The same false match lets that leader count its barrier as committed
 * while only it stores it; if the next leader replaces it, 0.15 stops the
 * raft of the node that "committed" it (RAFT_UNAVAILABLE, "new index
 * conflicts with committed entry"); only a restart brings it back, as
 * raft's commit index is not persisted. Then every node is restarted from
 * its persisted log (the fixture cannot restart one), and it is counted.
 */
static void converge(struct cl *c)
{
    unsigned l;

    for (unsigned i = 0; i < CL_N; i++)
        if (!raft_fixture_alive(c->f, i)) cl_revive(c, i);
    heal_all(c);
    clients_on = false;
    run_for(c, 300);
    l = wait_ready(c, CL_N, CL_ELECT_MS);
    run_for(c, CLIENT_TIMEOUT_MS); /* replies of requests still in flight */
    for (unsigned i = 0; i < CL_N; i++)
        if (raft_state(cl_raft(c, i)) == RAFT_UNAVAILABLE) {
            note("node %u: raft shut down; restart", i);
            if (verbose) dump_nodes(c);
            n_shutdown++;
            restart_all(c, barrier_mode);
            break;
        }
    l = wait_ready(c, CL_N, CL_ELECT_MS);
    for (int tries = 0; !caught_up(c, l, 3000); tries++) {
        unsigned to = CL_N;
        if (tries == 3) {
            dump_nodes(c);
            FAIL("a node stays behind after %d leader changes", tries);
        }
        for (unsigned i = 0; i < CL_N; i++)
            if (i != l && raft_last_applied(cl_raft(c, i)) >= raft_last_applied(cl_raft(c, l)))
                to = i;
        note("node(s) behind leader %u: transfer to %u", l, to);
        if (verbose) dump_nodes(c);
        n_stuck++;
        memset(&transfer_req, 0, sizeof transfer_req);
        transfer_busy = true;
        if (raft_transfer(cl_raft(c, l), &transfer_req, to == CL_N ? 0 : to + 1, transfer_done) != 0)
            transfer_busy = false;
        for (raft_time end = raft_fixture_time(c->f) + 3000;
             transfer_busy && raft_fixture_time(c->f) < end;)
            step(c);
        l = wait_ready(c, CL_N, CL_ELECT_MS);
    }
    cl_assert_same(c, CL_ALL);
    check_node_fences(c);
    clients_on = true;
}

static void schedule(uint64_t seed, unsigned rounds)
{
    struct cl c;
    unsigned n_kill = 0, n_cut = 0, n_restart = 0;

    n_stuck = n_shutdown = 0;

    fprintf(stderr, "# random schedule seed %llu\n", (unsigned long long)seed);
    rng_state = seed * 0x9E3779B97F4A7C15ull + 1;
    memset(clients, 0, sizeof clients);
    memset(last_fence, 0, sizeof last_fence);
    memset(node_fence, 0, sizeof node_fence);
    n_grants_seen = n_unknown = 0;
    prop_pool = calloc(PROP_POOL, sizeof *prop_pool);
    ASSERT(prop_pool != NULL);

    /* No raft snapshots (restart_all needs the whole log); catch-up by
     * snapshot has a test of its own. */
    open_cluster(&c, &(struct cl_opts){.snapshot_threshold = 1u << 20}, barrier_mode);
    on_push = client_push;
    for (int k = 0; k < N_CLIENTS; k++)
        clients[k].session = run_cmd(&c, cl_open_session(TTL, "r"), NULL).value;
    on_step = clients_step;
    clients_on = true;

    for (unsigned r = 0; r < rounds; r++) {
        unsigned what = rnd(10), x = rnd(CL_N), y = (x + 1 + rnd(CL_N - 1)) % CL_N;

        switch (what) {
        case 0:
        case 1:
        case 2: /* cut one node off */
            for (unsigned j = 0; j < CL_N; j++)
                if (j != x && raft_fixture_alive(c.f, j) && raft_fixture_alive(c.f, x))
                    cl_link(&c, x, j, false);
            n_cut++;
            break;
        case 3: /* cut one link */
            if (raft_fixture_alive(c.f, x) && raft_fixture_alive(c.f, y)) cl_link(&c, x, y, false);
            n_cut++;
            break;
        case 4:
        case 5: /* kill the leader, or any node */
            if (ready_leader(&c) != CL_N && rnd(2) == 0) x = ready_leader(&c);
            if (raft_fixture_alive(c.f, x)) cl_kill(&c, x);
            n_kill++;
            break;
        case 6: /* revive and heal */
        case 7:
            for (unsigned i = 0; i < CL_N; i++)
                if (!raft_fixture_alive(c.f, i)) cl_revive(&c, i);
            heal_all(&c);
            break;
        case 8: /* heal, wait, and compare every store */
            converge(&c);
            break;
        default: /* a restart of every node, now and then */
            if (rnd(3) != 0) break;
            clients_on = false;
            restart_all(&c, barrier_mode);
            clients_on = true;
            n_restart++;
            break;
        }
        run_for(&c, 100 + rnd(900));
    }
    converge(&c);
    /* Drain: everyone lets go; the queues empty; every store agrees. */
    for (int k = 0; k < N_CLIENTS; k++) clients[k].next_at = 0;
    for (int round = 0; round < 200; round++) {
        bool busy = false;
        run_for(&c, 50);
        for (int k = 0; k < N_CLIENTS; k++) {
            if (clients[k].st == C_IDLE) clients[k].next_at = (raft_time)-1; /* stays idle */
            if (clients[k].st != C_IDLE) busy = true;
        }
        if (!busy) break;
    }
    for (int k = 0; k < N_CLIENTS; k++)
        if (clients[k].st != C_IDLE) FAIL("client %d still in state %d", k, clients[k].st);
    converge(&c);
    for (int k = 0; k < N_LOCKS; k++) assert_lock(&c, CL_ALL, lock_names[k], 0, 0, 0);
    fprintf(stderr,
            "# seed %llu: %u grants seen by clients, %u requests re-sent, %u cuts, %u kills, "
            "%u restarts; libraft left a follower behind %u times (leadership moved) and "
            "shut a raft down %u times (restarted)\n",
            (unsigned long long)seed, n_grants_seen, n_unknown, n_cut, n_kill, n_restart, n_stuck,
            n_shutdown);
    ASSERT_GT(n_grants_seen, 0);
    /* With batond's barrier timing the follower that 0.15 over-credits
     * never exists: its answer is in before the barrier. */
    if (barrier_mode == BARRIER_BATOND) {
        ASSERT_EQ(n_stuck, 0);
        ASSERT_EQ(n_shutdown, 0);
    }
    on_step = NULL;
    clients_on = false;
    close_cluster(&c);
    free(prop_pool);
    prop_pool = NULL;
}

TEST(random_schedules)
{
    const char *one = getenv("BATON_FAULT_SEED");
    const char *n = getenv("BATON_FAULT_SCHEDULES");
    unsigned schedules = n != NULL ? (unsigned)atoi(n) : 24;

    if (one != NULL) {
        schedule(strtoull(one, NULL, 10), 40);
        return;
    }
    for (unsigned s = 1; s <= schedules; s++) schedule(s, 40);
}

int main(int argc, char **argv)
{
    faults_main_begin(argc, argv);
    RUN(random_schedules);
    return faults_main_end();
}
