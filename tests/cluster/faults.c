/*
 * faults.c -- what the raft-level fault scenarios share; see faults.h.
 */
#include "tests/cluster/faults.h"

#include <stdarg.h>
#include <stdlib.h>

#include "tests/lib/runner.h"

bool verbose;

void note(const char *fmt, ...)
{
    va_list ap;

    if (!verbose) return;
    va_start(ap, fmt);
    fprintf(stderr, "#   ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

/* ---- links -------------------------------------------------------------------- */

/* Restore every link between live nodes (cl_link, fixture.h). */
void heal_all(struct cl *c)
{
    for (unsigned i = 0; i < CL_N; i++)
        for (unsigned j = i + 1; j < CL_N; j++)
            if (raft_fixture_alive(c->f, i) && raft_fixture_alive(c->f, j)) cl_link(c, i, j, true);
    c->sync = 0;
    for (unsigned i = 0; i < CL_N; i++)
        if (raft_fixture_alive(c->f, i)) c->sync |= 1u << i;
}

/* ---- the leader duties of batond, modelled ---------------------------------------- */

/* The timing every test but the canonical/raft#220 one uses;
 * BATON_FAULT_BARRIER=N makes it a fixed N ms, to compare. */
int barrier_mode = BARRIER_BATOND;

void faults_init(void)
{
    const char *barrier = getenv("BATON_FAULT_BARRIER");

    verbose = getenv("BATON_FAULT_VERBOSE") != NULL;
    if (barrier != NULL) barrier_mode = atoi(barrier);
}

struct duty duties[CL_N];
struct push pushes[MAX_PUSHES];
size_t n_pushes;

/*
 * The state digest each store had right after applying index i, from the
 * first store that applied it: every other store that applies i must end
 * with the same digest. This catches two stores applying different entries
 * at the same index the moment it happens.
 */
#define MAX_INDEX 65536
static uint64_t digest_at[MAX_INDEX];
static bool digest_known[MAX_INDEX];
static struct cl *digest_cl;

static void digest_check(unsigned i, uint64_t index)
{
    store *st = digest_cl->node[i].store;
    uint64_t d;

    /* An entry the store had applied already (raft's replay) says nothing. */
    if (index >= MAX_INDEX || store_applied_index(st) != index) return;
    d = store_digest(st);
    if (!digest_known[index]) {
        digest_known[index] = true;
        digest_at[index] = d;
    } else if (digest_at[index] != d) {
        FAIL("node %u applied index %llu with digest %016llx; another node had %016llx", i,
             (unsigned long long)index, (unsigned long long)d,
             (unsigned long long)digest_at[index]);
    }
}

/* Called for every push delivered, if set (the random schedules' clients). */
void (*on_push)(const struct push *p);

static bool leading_in(struct cl *c, unsigned i, raft_term term)
{
    struct raft *r = cl_raft(c, i);
    return raft_state(r) == RAFT_LEADER && r->current_term == term;
}

static void duty_barrier_cb(struct raft_barrier *req, int status)
{
    struct duty *d = req->data;

    d->barrier_pending = false;
    if (status == 0 && leading_in(d->c, d->i, d->ready_term)) {
        d->ready = true;
        d->n_ready++;
        note("node %u ready in term %llu at t=%llu", d->i, (unsigned long long)d->ready_term,
             (unsigned long long)raft_fixture_time(d->c->f));
    }
}

/* The fsm's applied hook. As in batond (raft/node.c), a node that is not
 * the leader of the term it became ready in stops being ready at once; only
 * a ready leader delivers effects. */
static void duty_applied(void *data, const struct effects *fx)
{
    struct duty *d = data;

    if (digest_cl != NULL) digest_check(d->i, fx->index);
    if (d->ready && !leading_in(d->c, d->i, d->ready_term)) d->ready = false;
    if (!d->ready) return;
    for (size_t k = 0; k < fx->n_fx; k++) {
        const struct effect *e = &fx->fx[k];
        struct push *p;

        if (e->type != FX_GRANT) continue;
        ASSERT(n_pushes < MAX_PUSHES);
        p = &pushes[n_pushes++];
        p->node = d->i;
        p->session = e->session;
        p->waiter = e->waiter;
        p->fence = e->fence;
        ASSERT(e->name_len < sizeof p->name);
        snprintf(p->name, sizeof p->name, "%.*s", (int)e->name_len, e->name);
        if (on_push != NULL) on_push(p);
    }
}

/* raft/node.c's barrier_due: every follower answered our first
 * AppendEntries, or half a heartbeat timeout passed since the election. */
static bool barrier_due_batond(struct raft *r, raft_time since, raft_time now)
{
    if (now >= since + r->heartbeat_timeout / 2) return true;
    for (unsigned k = 0; k < r->configuration.n; k++) {
        const struct raft_server *sv = &r->configuration.servers[k];
        if (sv->id == r->id || sv->role == RAFT_SPARE) continue;
        if (!r->leader_state.progress[k].recent_recv) return false;
    }
    return true;
}

/* After every simulated event: notice leadership and propose the barrier
 * when due; drop readiness as soon as raft is not leader of that term. */
void duty_step(struct duty *d)
{
    struct cl *c = d->c;
    struct raft *r = cl_raft(c, d->i);
    raft_time now = raft_fixture_time(c->f);

    if (!raft_fixture_alive(c->f, d->i)) return; /* a dead process runs nothing */
    if (raft_state(r) != RAFT_LEADER) {
        d->ready = false;
        d->seen_term = 0;
        return;
    }
    if (d->ready && d->ready_term == r->current_term) return;
    d->ready = false;
    if (d->seen_term != r->current_term) {
        d->seen_term = r->current_term;
        d->since = now;
    }
    if (d->barrier_pending) return;
    if (d->delay_ms == BARRIER_BATOND ? !barrier_due_batond(r, d->since, now)
                                      : now < d->since + (raft_time)d->delay_ms)
        return;
    d->ready_term = r->current_term;
    d->barrier.data = d;
    if (raft_barrier(r, &d->barrier, duty_barrier_cb) == 0) d->barrier_pending = true;
}

/* Give every node its duties, over the fsm's applied hook. Call again after
 * cl_setup_at (a restart makes new fsms). */
static void duties_init(struct cl *c, int delay_ms)
{
    memset(duties, 0, sizeof duties);
    for (unsigned i = 0; i < CL_N; i++) {
        duties[i].c = c;
        duties[i].i = i;
        duties[i].delay_ms = delay_ms;
        c->node[i].fsm.applied = duty_applied;
        c->node[i].fsm.data = &duties[i];
    }
}

static void pushes_reset(void)
{
    n_pushes = 0;
    on_push = NULL;
}

/* Start checking digests per index (see digest_check) on cluster c. */
static void digests_start(struct cl *c)
{
    memset(digest_known, 0, sizeof digest_known);
    digest_cl = c;
}

/* A new cluster (node 0 leads) whose nodes run their duties with barrier
 * timing `barrier`, with digests checked per index; and its end. */
void open_cluster(struct cl *c, const struct cl_opts *o, int barrier)
{
    cl_open(c, o);
    duties_init(c, barrier);
    pushes_reset();
    digests_start(c);
}

void close_cluster(struct cl *c)
{
    digest_cl = NULL;
    cl_close(c);
}

/* Called after every step, if set (the random schedules' clients). */
void (*on_step)(struct cl *c);

/* One simulated event, then every node's duties. */
void step(struct cl *c)
{
    raft_fixture_step(c->f);
    for (unsigned i = 0; i < CL_N; i++) duty_step(&duties[i]);
    if (on_step != NULL) on_step(c);
}

void run_for(struct cl *c, unsigned ms)
{
    raft_time end = raft_fixture_time(c->f) + ms;
    while (raft_fixture_time(c->f) < end) step(c);
}

/* Step (with duties) until cond holds or max_ms passed; returns cond. */
bool run_until(struct cl *c, bool (*cond)(struct cl *c, void *arg), void *arg,
               unsigned max_ms)
{
    raft_time end = raft_fixture_time(c->f) + max_ms;
    while (!cond(c, arg)) {
        if (raft_fixture_time(c->f) >= end) return false;
        step(c);
    }
    return true;
}

/* The ready leader a client would find: alive, and of the newest term if a
 * stale one (cut off, or just revived) still believes it leads. CL_N if
 * none. */
unsigned ready_leader(struct cl *c)
{
    unsigned best = CL_N;
    raft_term term = 0;

    for (unsigned i = 0; i < CL_N; i++)
        if (duties[i].ready && raft_fixture_alive(c->f, i) && cl_raft(c, i)->current_term > term) {
            best = i;
            term = cl_raft(c, i)->current_term;
        }
    return best;
}

/* A ready leader other than node `not` (CL_N: any). */
static bool ready_other(struct cl *c, void *arg)
{
    unsigned l = ready_leader(c);
    return l != CL_N && l != *(const unsigned *)arg;
}

unsigned wait_ready(struct cl *c, unsigned not_this, unsigned max_ms)
{
    if (!run_until(c, ready_other, &not_this, max_ms))
        FAIL("no ready leader (other than %u) within %u ms (t=%llu)", not_this, max_ms,
             (unsigned long long)raft_fixture_time(c->f));
    return ready_leader(c);
}

bool raft_leads(struct cl *c, void *arg)
{
    return raft_state(cl_raft(c, *(const unsigned *)arg)) == RAFT_LEADER;
}

struct applied_arg {
    unsigned mask;
    uint64_t index;
};

static bool stores_applied(struct cl *c, void *arg)
{
    const struct applied_arg *a = arg;
    for (unsigned i = 0; i < CL_N; i++)
        if ((a->mask & (1u << i)) && store_applied_index(c->node[i].store) < a->index) return false;
    return true;
}

static void wait_stores(struct cl *c, unsigned mask, uint64_t index)
{
    struct applied_arg a = {mask, index};
    if (!run_until(c, stores_applied, &a, CL_APPLY_MS))
        FAIL("index %llu not applied by every store of mask %#x", (unsigned long long)index, mask);
}

void dump_nodes(struct cl *c)
{
    for (unsigned i = 0; i < CL_N; i++) {
        struct raft *r = cl_raft(c, i);
        fprintf(stderr,
                "# node %u: alive %d state %d term %llu last %llu commit %llu applied %llu "
                "store %llu\n",
                i, raft_fixture_alive(c->f, i), raft_state(r), (unsigned long long)r->current_term,
                (unsigned long long)raft_last_index(r), (unsigned long long)r->commit_index,
                (unsigned long long)raft_last_applied(r),
                (unsigned long long)store_applied_index(c->node[i].store));
    }
}

/* Step until every live node's raft has applied everything the leader l
 * has, or max_ms passed; returns whether they did. */
bool caught_up(struct cl *c, unsigned l, unsigned max_ms)
{
    uint64_t last = raft_last_index(cl_raft(c, l));

    for (raft_time end = raft_fixture_time(c->f) + max_ms;;) {
        bool all = true;
        for (unsigned i = 0; i < CL_N; i++)
            if ((c->sync & (1u << i)) && raft_last_applied(cl_raft(c, i)) < last) all = false;
        if (all) return true;
        if (raft_fixture_time(c->f) >= end) return false;
        step(c);
    }
}

void wait_caught_up(struct cl *c, unsigned l)
{
    if (caught_up(c, l, CL_APPLY_MS)) return;
    dump_nodes(c);
    FAIL("live nodes did not apply up to %llu",
         (unsigned long long)raft_last_index(cl_raft(c, l)));
}

/* ---- proposals with a callback ---------------------------------------------------- */

static void prop_apply_cb(struct raft_apply *req, int status, void *result)
{
    struct prop *p = req->data;
    const struct effects *fx = result;

    ASSERT(p->busy && !p->done);
    p->busy = false;
    p->done = true;
    p->status = status;
    p->index = req->index;
    if (status == 0) {
        ASSERT(fx->n_results <= 8);
        p->n_results = fx->n_results;
        memcpy(p->results, fx->results, fx->n_results * sizeof *p->results);
    }
    if (p->cb != NULL) p->cb(p);
}

/* raft_apply of cmds as one entry on node i; 0 or raft's error (then the
 * callback never runs). cb/data are kept. */
int propose(struct cl *c, unsigned i, const struct cmd *cmds, size_t n, struct prop *p)
{
    struct raft_buffer rb;
    prop_done_cb *cb = p->cb;
    void *data = p->data;
    int rv;

    ASSERT(!p->busy);
    memset(p, 0, sizeof *p);
    p->cb = cb;
    p->data = data;
    rb = cl_entry_buf(cmds, n);
    p->req.data = p;
    p->busy = true;
    rv = raft_apply(cl_raft(c, i), &p->req, &rb, 1, prop_apply_cb);
    if (rv != 0) {
        raft_free(rb.base);
        p->busy = false;
    }
    return rv;
}

static bool prop_is_done(struct cl *c, void *arg)
{
    (void)c;
    return ((const struct prop *)arg)->done;
}

/*
 * Propose one command on the ready leader, as a client would: if the leader
 * refuses or loses leadership first, send it again (same command, same
 * seq) to whoever is the ready leader then. Runs until it has applied
 * there and on every store of c->sync; returns its result (and index).
 */
struct cmd_result run_cmd(struct cl *c, struct cmd cmd, uint64_t *index)
{
    struct prop p = {0};

    for (int attempt = 0; attempt < 20; attempt++) {
        unsigned l = wait_ready(c, CL_N, CL_ELECT_MS);

        if (propose(c, l, &cmd, 1, &p) != 0) {
            run_for(c, 10);
            continue;
        }
        if (!run_until(c, prop_is_done, &p, CL_APPLY_MS))
            FAIL("proposal on node %u not applied", l);
        if (p.status != 0) {
            note("proposal on node %u: %s; sent again", l, raft_strerror(p.status));
            continue;
        }
        ASSERT_EQ(p.n_results, 1);
        wait_stores(c, c->sync, p.index);
        if (index != NULL) *index = p.index;
        return p.results[0];
    }
    FAIL("command type %u never applied", cmd.type);
}

void expect(struct cmd_result r, int32_t status, uint8_t kind, uint64_t value)
{
    if (r.status != status || (status == 0 && (r.kind != kind || r.value != value)))
        FAIL("result status %d kind %u value %llu; expected %d %u %llu", r.status, r.kind,
             (unsigned long long)r.value, status, kind, (unsigned long long)value);
}

/* ---- state ------------------------------------------------------------------------------ */

struct lock_view lock_of(struct cl *c, unsigned i, const char *name)
{
    struct lock_view v;
    memset(&v, 0, sizeof v);
    cl_lock(c, i, name, &v.holder, &v.fence, v.waiters, 8, &v.n_waiters);
    return v;
}

void assert_lock(struct cl *c, unsigned mask, const char *name, uint64_t holder,
                 uint64_t fence, uint32_t n_waiters)
{
    for (unsigned i = 0; i < CL_N; i++) {
        struct lock_view v;
        if (!(mask & (1u << i))) continue;
        v = lock_of(c, i, name);
        if (v.holder != holder || v.fence != fence || v.n_waiters != n_waiters)
            FAIL("node %u, lock %s: holder %llu fence %llu waiters %u; expected %llu %llu %u", i,
                 name, (unsigned long long)v.holder, (unsigned long long)v.fence, v.n_waiters,
                 (unsigned long long)holder, (unsigned long long)fence, n_waiters);
    }
}

bool same_bytes(struct cl *c, unsigned i, const struct buf *ref)
{
    struct buf now = {0};
    bool same;

    cl_snapshot(c, i, &now);
    same = now.len == ref->len && memcmp(now.data, ref->data, now.len) == 0;
    buf_free(&now);
    return same;
}

/* The term of the entry at `index` in node i's in-memory raft log, 0 if it
 * is not there (0.15's struct raft_log is public: a circular buffer of the
 * entries after `offset`). */
raft_term log_term(struct cl *c, unsigned i, raft_index index)
{
    const struct raft_log *l = &cl_raft(c, i)->log;
    size_t n = l->back >= l->front ? l->back - l->front : l->size - l->front + l->back;

    if (index <= l->offset || index > l->offset + n) return 0;
    return l->entries[(l->front + (index - l->offset - 1)) % l->size].term;
}

static const struct raft_entry *log_entry(struct cl *c, unsigned i, raft_index index)
{
    const struct raft_log *l = &cl_raft(c, i)->log;

    if (log_term(c, i, index) == 0) return NULL;
    return &l->entries[(l->front + (index - l->offset - 1)) % l->size];
}

/* Does node i's log hold any entry of `term`? */
bool log_has_term(struct cl *c, unsigned i, raft_term term)
{
    struct raft *r = cl_raft(c, i);
    for (raft_index k = r->log.offset + 1; k <= raft_last_index(r); k++)
        if (log_term(c, i, k) == term) return true;
    return false;
}

/* ---- a crash and restart of every node ------------------------------------------------------ */

/*
 * Every node "crashes" and restarts from what it had persisted: its raft
 * log up to last_stored (entries still in flight to its disk are lost) and
 * its store (LMDB as the process left it; stores are closed cleanly, which
 * is what MDB_NOSYNC gives a killed process, notes section 4). raft comes
 * back with commit index 0 and replays as a leader commits. The vote is not
 * kept (the fixture has no call for it), so every node restarts one term
 * later, in which it has not voted. The cluster must not have snapshots.
 */
void restart_all(struct cl *c, int delay_ms)
{
    struct saved {
        raft_term term;
        size_t n;
        struct raft_entry *e;
    } saved[CL_N];
    struct raft_configuration conf;

    for (unsigned i = 0; i < CL_N; i++) {
        struct raft *r = cl_raft(c, i);
        struct saved *s = &saved[i];

        ASSERT_UEQ(r->log.snapshot.last_index, 0);
        ASSERT_GE(r->last_stored, 1);
        s->term = r->current_term;
        s->n = 0;
        s->e = calloc(r->last_stored, sizeof *s->e);
        ASSERT(s->e != NULL);
        for (raft_index k = 2; k <= r->last_stored; k++) {
            const struct raft_entry *src = log_entry(c, i, k);
            struct raft_entry *dst = &s->e[s->n++];

            ASSERT(src != NULL);
            memset(dst, 0, sizeof *dst);
            dst->term = src->term;
            dst->type = src->type;
            dst->buf.len = src->buf.len;
            dst->buf.base = raft_malloc(src->buf.len ? src->buf.len : 1);
            ASSERT(dst->buf.base != NULL);
            if (src->buf.len) memcpy(dst->buf.base, src->buf.base, src->buf.len);
        }
    }
    note("restart of every node at t=%llu", (unsigned long long)raft_fixture_time(c->f));
    cl_stop(c);
    cl_setup_at(c);
    ASSERT_EQ(raft_fixture_configuration(c->f, CL_N, &conf), 0);
    for (unsigned i = 0; i < CL_N; i++) {
        ASSERT_EQ(raft_bootstrap(cl_raft(c, i), &conf), 0);
        raft_fixture_set_term(c->f, i, saved[i].term + 1);
        for (size_t k = 0; k < saved[i].n; k++) raft_fixture_add_entry(c->f, i, &saved[i].e[k]);
        free(saved[i].e); /* the fixture owns the buffers now */
    }
    raft_configuration_close(&conf);
    cl_start(c);
    duties_init(c, delay_ms);
}
