/*
 * fixture.c -- raft_fixture plus the real state machine; see fixture.h.
 */
#include "tests/cluster/fixture.h"

#include <sys/stat.h>

#include "tests/lib/files.h"
#include "tests/lib/runner.h"

/* libraft 0.15's raft_fixture_initialize does not reset the server count, so
 * the fixture must start zeroed: it is static and memset before each use. */
static struct raft_fixture fixture_;

/* The cluster whose fixture fixture_ is (one at a time per process). */
static struct cl *current_;

/* ---- directories ----------------------------------------------------------- */

void cl_suite_init(void)
{
    suite_dir_init("baton-cluster");
}

void cl_suite_done(void)
{
    suite_dir_done();
}

/* ---- life cycle -------------------------------------------------------------- */

/* After every simulated event, as batond's node does at the end of every
 * loop turn: let each fsm apply what its follower gate holds once the
 * commit is sure (raft/fsm.h, fsm_flush) -- the entry that makes it sure
 * may be a barrier, which raft never hands to apply. A dead process runs
 * nothing. */
static void flush_gates(struct raft_fixture *f, struct raft_fixture_event *event)
{
    (void)event;
    for (unsigned i = 0; current_ != NULL && i < CL_N; i++)
        if (raft_fixture_alive(f, i)) fsm_flush(&current_->node[i].fsm);
}

/* Open every node's store and make a fresh fixture with one server per node,
 * each running a struct fsm over its store. The fsm must not move after
 * raft_fixture_grow (raft keeps a pointer to it), which is why c must stay
 * in place for the cluster's lifetime. */
static void make_servers(struct cl *c)
{
    char err[256];

    memset(&fixture_, 0, sizeof fixture_);
    c->f = &fixture_;
    ASSERT_EQ(raft_fixture_initialize(c->f), 0);
    for (unsigned i = 0; i < CL_N; i++) {
        struct cl_node *n = &c->node[i];
        struct raft *r;

        if (store_open(n->dir, &n->store, err) != 0) FAIL("store_open %s: %s", n->dir, err);
        fsm_init(&n->fsm, n->store, NULL, NULL);
        ASSERT_EQ(raft_fixture_grow(c->f, &n->fsm.base), 0);
        /* fsm_apply derives the entry's index from raft_last_applied. */
        r = raft_fixture_get(c->f, i);
        n->fsm.raft = r;
        /* The same settings as batond (raft/node.c) where they matter here;
         * the election and heartbeat timeouts stay at the fixture's own
         * values, which raft_fixture_depose insists on. */
        raft_set_pre_vote(r, !c->opts.no_pre_vote);
        raft_set_install_snapshot_timeout(r, 2000);
        if (c->opts.snapshot_threshold) raft_set_snapshot_threshold(r, c->opts.snapshot_threshold);
        if (c->opts.snapshot_trailing) raft_set_snapshot_trailing(r, c->opts.snapshot_trailing);
    }
    ASSERT_EQ(raft_fixture_n(c->f), CL_N);
    current_ = c;
    raft_fixture_hook(c->f, flush_gates);
    c->sync = CL_ALL;
}

void cl_setup(struct cl *c, const struct cl_opts *o)
{
    struct raft_configuration conf;

    ASSERT(suite_dir()[0] != '\0');
    memset(c, 0, sizeof *c);
    if (o != NULL) c->opts = *o;
    snprintf(c->dir, sizeof c->dir, "%s/c-XXXXXX", suite_dir());
    ASSERT(mkdtemp(c->dir) != NULL);
    for (unsigned i = 0; i < CL_N; i++) {
        snprintf(c->node[i].dir, sizeof c->node[i].dir, "%s/n%u", c->dir, i);
        ASSERT_EQ(mkdir(c->node[i].dir, 0700), 0);
    }
    make_servers(c);
    ASSERT_EQ(raft_fixture_configuration(c->f, CL_N, &conf), 0);
    ASSERT_EQ(raft_fixture_bootstrap(c->f, &conf), 0);
    raft_configuration_close(&conf);
}

void cl_start(struct cl *c)
{
    ASSERT_EQ(raft_fixture_start(c->f), 0);
}

void cl_open(struct cl *c, const struct cl_opts *o)
{
    cl_setup(c, o);
    cl_start(c);
    cl_elect(c, 0);
}

void cl_stop(struct cl *c)
{
    if (c->f == NULL) return;
    /* Fails pending proposals with RAFT_LEADERSHIPLOST, synchronously. */
    raft_fixture_close(c->f);
    c->f = NULL;
    current_ = NULL;
    for (unsigned i = 0; i < CL_N; i++) {
        fsm_close(&c->node[i].fsm);
        store_close(c->node[i].store);
        c->node[i].store = NULL;
    }
}

void cl_setup_at(struct cl *c)
{
    ASSERT(c->f == NULL);
    make_servers(c);
}

void cl_close(struct cl *c)
{
    cl_stop(c);
    rm_rf(c->dir);
}

/* ---- raft ---------------------------------------------------------------------- */

struct raft *cl_raft(struct cl *c, unsigned i)
{
    ASSERT(i < CL_N);
    return raft_fixture_get(c->f, i);
}

unsigned cl_leader(struct cl *c)
{
    return raft_fixture_leader_index(c->f);
}

void cl_elect(struct cl *c, unsigned i)
{
    /* raft_fixture_elect asserts (aborts) rather than fails: check what it
     * needs first, so that a wrong call fails the test with a message. */
    ASSERT_EQ(cl_leader(c), CL_N);
    for (unsigned j = 0; j < CL_N; j++) ASSERT_EQ(raft_state(cl_raft(c, j)), RAFT_FOLLOWER);
    raft_fixture_elect(c->f, i);
    ASSERT_EQ(cl_leader(c), i);
    ASSERT_EQ(raft_state(cl_raft(c, i)), RAFT_LEADER);
}

struct leader_arg {
    struct cl *c;
    unsigned old;
};

static bool has_new_leader(struct raft_fixture *f, void *arg)
{
    const struct leader_arg *a = arg;
    unsigned l = raft_fixture_leader_index(f);
    return l != CL_N && l != a->old;
}

unsigned cl_wait_leader(struct cl *c, unsigned old, unsigned max_ms)
{
    struct leader_arg a = {c, old};

    raft_fixture_step_until(c->f, has_new_leader, &a, max_ms);
    if (!has_new_leader(c->f, &a))
        FAIL("no new leader within %u ms (t=%llu)", max_ms,
             (unsigned long long)raft_fixture_time(c->f));
    return cl_leader(c);
}

/*
 * In 0.15 raft_fixture_disconnect is one-way and makes sends fail with
 * RAFT_NOCONNECTION, while the fixture's leader detection only discounts
 * peers that are dead or *saturated* (messages silently dropped): with a
 * merely disconnected node in an older term, the fixture never reports the
 * majority's new leader as stable. So both are done: disconnected (the
 * sender sees the failure, as with a refused TCP connection) and saturated
 * (the fixture knows the link is down).
 */
void cl_link(struct cl *c, unsigned i, unsigned j, bool up)
{
    if (up) {
        raft_fixture_reconnect(c->f, i, j);
        raft_fixture_reconnect(c->f, j, i);
        raft_fixture_desaturate(c->f, i, j);
        raft_fixture_desaturate(c->f, j, i);
    } else {
        raft_fixture_disconnect(c->f, i, j);
        raft_fixture_disconnect(c->f, j, i);
        raft_fixture_saturate(c->f, i, j);
        raft_fixture_saturate(c->f, j, i);
    }
}

/* Cut or restore every link between node i and the others. */
static void connect_all(struct cl *c, unsigned i, bool on)
{
    for (unsigned j = 0; j < CL_N; j++)
        if (j != i) cl_link(c, i, j, on);
}

void cl_isolate(struct cl *c, unsigned i)
{
    connect_all(c, i, false);
    c->sync &= ~(1u << i);
}

void cl_heal(struct cl *c, unsigned i)
{
    connect_all(c, i, true);
    c->sync |= 1u << i;
}

void cl_kill(struct cl *c, unsigned i)
{
    raft_fixture_kill(c->f, i);
    c->sync &= ~(1u << i);
}

void cl_revive(struct cl *c, unsigned i)
{
    raft_fixture_revive(c->f, i);
    c->sync |= 1u << i;
}

/* ---- proposals ------------------------------------------------------------------- */

/* The apply callback: runs on the proposing node only, right after its fsm
 * applied the entry (result is that fsm's struct effects, valid only now), or
 * with an error if the node stopped being leader first. */
static void prop_cb(struct raft_apply *req, int status, void *result)
{
    struct cl_prop *p = req->data;
    const struct effects *fx = result;

    if (p->done) FAIL("apply callback ran twice (status %d, then %d)", p->status, status);
    p->done = true;
    p->status = status;
    p->index = req->index;
    if (status != 0) return;
    ASSERT(fx != NULL);
    if (fx->n_results > CL_MAX_RESULTS)
        FAIL("proposal too big for struct cl_prop: %zu results", fx->n_results);
    p->fx_index = fx->index;
    p->n_results = fx->n_results;
    if (fx->n_results) memcpy(p->results, fx->results, fx->n_results * sizeof *p->results);
    /* FX_LOCK_CHANGED (for watchers) comes last in every entry; the tests
     * look at the effects that change who holds what, so it is counted
     * apart. */
    p->n_fx = 0;
    p->n_changed = 0;
    for (size_t k = 0; k < fx->n_fx; k++) {
        if (fx->fx[k].type == FX_LOCK_CHANGED) {
            p->n_changed++;
            continue;
        }
        if (p->n_fx == CL_MAX_FX) FAIL("proposal too big for struct cl_prop: over %d effects", CL_MAX_FX);
        p->fx[p->n_fx++] = fx->fx[k];
    }
}

struct raft_buffer cl_entry_buf(const struct cmd *cmds, size_t n)
{
    struct buf b = {0};
    struct raft_buffer rb;

    cmds_encode(&b, cmds, n);
    rb.len = fsm_entry_size(b.len);
    rb.base = raft_malloc(rb.len);
    ASSERT(rb.base != NULL);
    fsm_entry_encode(rb.base, b.data, b.len);
    buf_free(&b);
    return rb;
}

int cl_propose(struct cl *c, unsigned i, const struct cmd *cmds, size_t n, struct cl_prop *p)
{
    struct raft_buffer rb;
    int rv;

    ASSERT(n <= CL_MAX_RESULTS);
    memset(p, 0, sizeof *p);
    rb = cl_entry_buf(cmds, n);
    p->req.data = p;
    rv = raft_apply(cl_raft(c, i), &p->req, &rb, 1, prop_cb);
    /* raft owns the buffer only if raft_apply succeeded. */
    if (rv != 0) raft_free(rb.base);
    return rv;
}

static bool prop_done(struct raft_fixture *f, void *arg)
{
    const struct cl_prop *p = arg;
    (void)f;
    return p->done;
}

bool cl_wait(struct cl *c, struct cl_prop *p, unsigned max_ms)
{
    raft_fixture_step_until(c->f, prop_done, p, max_ms);
    return p->done;
}

struct barrier_arg {
    struct raft_barrier req;
    bool done;
    int status;
};

static void barrier_done(struct raft_barrier *req, int status)
{
    struct barrier_arg *b = req->data;
    b->done = true;
    b->status = status;
}

static bool barrier_is_done(struct raft_fixture *f, void *arg)
{
    const struct barrier_arg *b = arg;
    (void)f;
    return b->done;
}

bool cl_barrier(struct cl *c, unsigned i, unsigned max_ms)
{
    struct barrier_arg b;

    memset(&b, 0, sizeof b);
    b.req.data = &b;
    if (raft_barrier(cl_raft(c, i), &b.req, barrier_done) != 0) return false;
    raft_fixture_step_until(c->f, barrier_is_done, &b, max_ms);
    /* A barrier still pending when the fixture closes is failed from
     * raft_close, which would write into this stack frame: wait for it. */
    if (!b.done) FAIL("barrier on node %u not applied within %u ms", i, max_ms);
    return b.status == 0;
}

struct applied_arg {
    struct cl *c;
    unsigned mask;
    uint64_t index;
};

static bool all_applied(struct raft_fixture *f, void *arg)
{
    const struct applied_arg *a = arg;
    (void)f;
    for (unsigned i = 0; i < CL_N; i++)
        if ((a->mask & (1u << i)) && raft_last_applied(cl_raft(a->c, i)) < a->index) return false;
    return true;
}

bool cl_wait_applied(struct cl *c, unsigned mask, uint64_t index, unsigned max_ms)
{
    struct applied_arg a = {c, mask, index};

    raft_fixture_step_until(c->f, all_applied, &a, max_ms);
    return all_applied(c->f, &a);
}

void cl_run(struct cl *c, const struct cmd *cmds, size_t n, struct cl_prop *p)
{
    unsigned leader = cl_leader(c);
    int rv;

    if (leader == CL_N) FAIL("cl_run: no leader");
    rv = cl_propose(c, leader, cmds, n, p);
    if (rv != 0) FAIL("raft_apply on node %u: %d (%s)", leader, rv, raft_strerror(rv));
    if (!cl_wait(c, p, CL_APPLY_MS)) FAIL("proposal on node %u not applied", leader);
    if (p->status != 0) FAIL("proposal on node %u failed: %s", leader, raft_strerror(p->status));
    ASSERT_EQ(p->n_results, n);
    ASSERT_UEQ(p->fx_index, p->index);
    if (!cl_wait_applied(c, c->sync, p->index, CL_APPLY_MS))
        FAIL("entry %llu not applied on every node of mask %#x", (unsigned long long)p->index,
             c->sync);
}

void cl_run1(struct cl *c, struct cmd cmd, struct cl_prop *p)
{
    cl_run(c, &cmd, 1, p);
}

/* ---- state ------------------------------------------------------------------------------ */

void cl_snapshot(struct cl *c, unsigned i, struct buf *out)
{
    ASSERT(i < CL_N);
    buf_reset(out);
    ASSERT_EQ(store_snapshot(c->node[i].store, out), 0);
    ASSERT_GE(out->len, 16);
}

void cl_assert_same(struct cl *c, unsigned mask)
{
    struct buf ref = {0}, other = {0};
    unsigned first = CL_N;

    for (unsigned i = 0; i < CL_N; i++) {
        if (!(mask & (1u << i))) continue;
        if (first == CL_N) {
            first = i;
            cl_snapshot(c, i, &ref);
            continue;
        }
        cl_snapshot(c, i, &other);
        if (store_applied_index(c->node[i].store) != store_applied_index(c->node[first].store))
            FAIL("node %u applied %llu, node %u applied %llu", first,
                 (unsigned long long)store_applied_index(c->node[first].store), i,
                 (unsigned long long)store_applied_index(c->node[i].store));
        if (other.len != ref.len || memcmp(other.data, ref.data, ref.len) != 0) {
            size_t k = 0;
            while (k < ref.len && k < other.len && ref.data[k] == other.data[k]) k++;
            FAIL("node %u and node %u differ: %zu vs %zu bytes, first difference at %zu", first,
                 i, ref.len, other.len, k);
        }
    }
    ASSERT_NE(first, CL_N);
    buf_free(&ref);
    buf_free(&other);
}

void cl_lock(struct cl *c, unsigned i, const char *name, uint64_t *holder, uint64_t *fence,
             uint64_t *waiters, uint32_t max, uint32_t *n_waiters)
{
    struct msg_lock_info_r info;

    memset(&info, 0, sizeof info);
    ASSERT_EQ(store_lock_info(c->node[i].store, name, strlen(name), BATON_MAX_LIST, &info), 0);
    *holder = info.held ? info.holder_session : 0;
    *fence = info.held ? info.fence : 0;
    ASSERT_EQ(info.n_waiters, info.total_waiters);
    for (uint32_t k = 0; k < info.n_waiters && k < max; k++) waiters[k] = info.waiters[k].session;
    *n_waiters = info.total_waiters;
    store_lock_info_free(&info);
}

void cl_assert_fx(const struct cl_prop *p, size_t k, uint8_t type, uint64_t session,
                  uint64_t waiter, uint64_t fence, const char *name)
{
    const struct effect *e;

    ASSERT(k < p->n_fx);
    e = &p->fx[k];
    ASSERT_EQ(e->type, type);
    ASSERT_UEQ(e->session, session);
    ASSERT_UEQ(e->waiter, waiter);
    ASSERT_UEQ(e->fence, fence);
    if (name != NULL) {
        ASSERT_EQ(e->name_len, strlen(name));
        ASSERT(memcmp(e->name, name, e->name_len) == 0);
    } else {
        ASSERT_EQ(e->name_len, 0);
    }
}
