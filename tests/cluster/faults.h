/*
 * faults.h -- what the raft-level fault scenarios (tests/cluster/
 * test_faults_*.c) share, on top of fixture.h: links cut and restored, a
 * model of batond's leader duties, proposals with a callback, and views of
 * the nodes' state and raft logs.
 *
 * Each node runs a model of what batond's raft/node.c and server/push.c do
 * around raft (struct duty): when raft makes it leader in a new term it
 * proposes a barrier as node.c's barrier_due says (once every follower
 * answered its first AppendEntries, at most half a heartbeat after the
 * election), and only once that barrier has applied is it "ready": only a
 * ready leader takes client requests and delivers the effects of applied
 * entries (grant pushes). Effects of entries applied while not ready, or
 * once raft is no longer leader of the ready term, are dropped. The tests
 * check what a client could observe from ready leaders, and that every
 * store ends with identical bytes (applied index and state digest
 * included); open_cluster also checks, at every index, that every store
 * that applies it ends with the same digest.
 *
 * faults_init (faults_main_begin calls it) reads BATON_FAULT_VERBOSE=1,
 * which makes note() narrate, and BATON_FAULT_BARRIER=N, which proposes the
 * barrier a fixed N ms after the election instead (barrier_mode), to
 * compare.
 *
 * Every helper that can fail FAILs the running test (tests/lib/runner.h).
 */
#ifndef BATON_TESTS_CLUSTER_FAULTS_H
#define BATON_TESTS_CLUSTER_FAULTS_H

#include <stdbool.h>

#include "baton/baton_defs.h"
#include "tests/cluster/fixture.h"
#include "tests/lib/runner.h"

#define TTL 60000
#define FOREVER BATON_WAIT_FOREVER
#define TRY BATON_WAIT_TRY

#define MAX_PUSHES 4096

/* A grant push, as a client would receive it from a ready leader. */
struct push {
    unsigned node;
    uint64_t session, waiter, fence;
    char name[16];
};

/* Barrier timing of a duty: as batond does (BARRIER_BATOND), or a fixed
 * delay after raft elected the node (0: the same step). */
#define BARRIER_BATOND (-1)

struct duty {
    struct cl *c;
    unsigned i;
    int delay_ms;            /* BARRIER_BATOND, or ms after raft elected us */
    raft_term seen_term;     /* term in which we noticed leadership */
    raft_time since;         /* when raft made us leader in seen_term */
    raft_term ready_term;    /* term of the barrier proposed */
    bool barrier_pending;
    bool ready;
    unsigned n_ready;        /* times this node became ready */
    struct raft_barrier barrier;
};

struct prop;
typedef void prop_done_cb(struct prop *p);

/* One raft_apply. It must stay in place until its callback ran: the
 * fixture's close fails pending proposals. */
struct prop {
    struct raft_apply req;
    bool busy;               /* proposed, callback not run yet */
    bool done;
    int status;
    uint64_t index;
    size_t n_results;
    struct cmd_result results[8];
    prop_done_cb *cb;
    void *data;
};

struct lock_view {
    uint64_t holder, fence;
    uint32_t n_waiters;
    uint64_t waiters[8];
};

/* ---- settings and narration ------------------------------------------------ */

extern bool verbose;        /* BATON_FAULT_VERBOSE */
extern int barrier_mode;    /* BARRIER_BATOND, or BATON_FAULT_BARRIER */
void faults_init(void);

/*
 * main's first and last steps in every test_faults_*.c: the settings, the
 * per-run directory (cl_suite_init), the runner. Inline: the runner's
 * state is per file (tests/lib/runner.h).
 */
static inline void faults_main_begin(int argc, char **argv)
{
    faults_init();
    cl_suite_init();
    runner_init(argc, argv);
    runner_set_timeout(120);
}

static inline int faults_main_end(void)
{
    int rv = runner_done();

    cl_suite_done();
    return rv;
}

/* One line of narration to stderr, if verbose. */
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- links ------------------------------------------------------------------ */

/* Restore every link between live nodes (one link: cl_link, fixture.h). */
void heal_all(struct cl *c);

/* ---- the leader duties, and stepping with them ------------------------------- */

extern struct duty duties[CL_N];
/* The grants ready leaders pushed, in order (open_cluster empties it). */
extern struct push pushes[MAX_PUSHES];
extern size_t n_pushes;
/* Called for every push delivered, and after every step, if set. */
extern void (*on_push)(const struct push *p);
extern void (*on_step)(struct cl *c);

/* After every simulated event: a node's duties (step does it for all). */
void duty_step(struct duty *d);
/* A new cluster (node 0 leads) whose nodes run their duties with barrier
 * timing `barrier`, with digests checked per index; and its end. */
void open_cluster(struct cl *c, const struct cl_opts *o, int barrier);
void close_cluster(struct cl *c);

/* One simulated event, then every node's duties. */
void step(struct cl *c);
void run_for(struct cl *c, unsigned ms);
/* Step (with duties) until cond holds or max_ms passed; returns cond. */
bool run_until(struct cl *c, bool (*cond)(struct cl *c, void *arg), void *arg, unsigned max_ms);
/* The ready leader a client would find, CL_N if none; wait_ready waits for
 * one other than node `not_this` (CL_N: any) and FAILs after max_ms. */
unsigned ready_leader(struct cl *c);
unsigned wait_ready(struct cl *c, unsigned not_this, unsigned max_ms);
/* A run_until condition: raft of node *(unsigned *)arg is leader. */
bool raft_leads(struct cl *c, void *arg);
void dump_nodes(struct cl *c);
/* Step until every live node applied what leader l has (within max_ms);
 * wait_caught_up FAILs if they do not. */
bool caught_up(struct cl *c, unsigned l, unsigned max_ms);
void wait_caught_up(struct cl *c, unsigned l);

/* ---- proposals ------------------------------------------------------------------ */

/* raft_apply of cmds as one entry on node i; 0 or raft's error (then the
 * callback never runs). p->cb and p->data are kept. */
int propose(struct cl *c, unsigned i, const struct cmd *cmds, size_t n, struct prop *p);
/* Propose one command on the ready leader as a client would, sending it
 * again to the next ready leader if need be, until it applied there and on
 * every store of c->sync; its result (and index). */
struct cmd_result run_cmd(struct cl *c, struct cmd cmd, uint64_t *index);
void expect(struct cmd_result r, int32_t status, uint8_t kind, uint64_t value);

/* ---- state ------------------------------------------------------------------------ */

struct lock_view lock_of(struct cl *c, unsigned i, const char *name);
/* Every node of mask sees lock `name` so. */
void assert_lock(struct cl *c, unsigned mask, const char *name, uint64_t holder,
                 uint64_t fence, uint32_t n_waiters);
/* Node i's store_snapshot bytes are ref's. */
bool same_bytes(struct cl *c, unsigned i, const struct buf *ref);
/* The term of the entry at `index` in node i's raft log, 0 if not there. */
raft_term log_term(struct cl *c, unsigned i, raft_index index);
/* Does node i's log hold any entry of `term`? */
bool log_has_term(struct cl *c, unsigned i, raft_term term);

/* Every node crashes and restarts from its persisted raft log and store;
 * the duties start again with barrier timing delay_ms. */
void restart_all(struct cl *c, int delay_ms);

#endif /* BATON_TESTS_CLUSTER_FAULTS_H */
