/*
 * fixture.h -- deterministic cluster tests: libraft's raft_fixture (simulated
 * time, in-memory raft I/O, no sockets) running baton's REAL state machine.
 *
 * Every fixture server gets a struct fsm (raft/fsm.c) over its own LMDB store
 * in a fresh directory, so that what the tests compare is exactly what batond
 * would hold: the bytes of store_snapshot. After every simulated event each
 * live node's fsm_flush runs, as batond's node runs it every loop turn. The
 * fsms take snapshots on the loop (fsm version 1): the fixture cannot run
 * version 3.
 *
 *     struct cl c;
 *     struct cl_prop p;
 *     cl_open(&c, NULL);                          // Three nodes; node 0 leads.
 *     cl_run1(&c, cl_open_session(10000, "a"), &p);
 *     ASSERT_UEQ(p.results[0].value, 1);          // This is the new session's id.
 *     cl_assert_same(&c, CL_ALL);                 // The stores are identical.
 *     cl_close(&c);
 *
 * Nodes are indexed 0..CL_N-1 (raft ids 1..CL_N), as in raft_fixture. One
 * cluster may exist at a time per process: libraft 0.15's fixture lives in a
 * static struct that is zeroed before every raft_fixture_initialize (0.15
 * does not reset its server count, see docs/libraft-0.15.md, "raft_fixture").
 *
 * Directories: cl_suite_init makes one per-run directory and cl_suite_done
 * removes it with everything inside (suite_dir_init/_done,
 * tests/lib/files.h), so that a test that fails (and exits at once) leaves
 * nothing behind. Each cluster lives in its own subdirectory, removed by
 * cl_close.
 *
 * Every helper that can fail FAILs the running test (tests/lib/runner.h).
 */
#ifndef BATON_TESTS_CLUSTER_FIXTURE_H
#define BATON_TESTS_CLUSTER_FIXTURE_H

#include <raft.h>
#include <raft/fixture.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "raft/fsm.h"
#include "storage/cmd.h"
#include "storage/store.h"
#include "tests/lib/cmds.h"

#define CL_N 3
#define CL_ALL ((1u << CL_N) - 1)   /* This node mask names every node. */
#define CL_MAX_RESULTS 64           /* This is the most commands per proposal. */
#define CL_MAX_FX 16                /* This is the most effects kept per proposal. */

/* Generous bounds in simulated milliseconds: the simulation is cheap, a wait
 * that hits these is a failure. */
#define CL_ELECT_MS 20000
#define CL_APPLY_MS 10000

struct cl_opts {
    unsigned snapshot_threshold;   /* Zero keeps libraft's default. */
    unsigned snapshot_trailing;    /* Zero keeps libraft's default. */
    bool no_pre_vote;              /* batond turns pre-vote on, and so do we unless this is set. */
};

struct cl_node {
    char dir[192];                 /* This is the store's LMDB directory. */
    store *store;
    struct fsm fsm;
};

struct cl {
    struct raft_fixture *f;        /* This is the fixture (static, see above). */
    char dir[160];                 /* This is the cluster's own directory. */
    unsigned sync;                 /* This mask names the nodes that cl_run waits for. */
    struct cl_opts opts;
    struct cl_node node[CL_N];
};

/*
 * One proposal. It must stay valid (and in place) until its callback ran:
 * cl_close runs raft_close, which fails pending proposals synchronously.
 * The results and effects are copies, taken during the apply callback (the
 * fsm's struct effects is reused for the next entry).
 */
struct cl_prop {
    struct raft_apply req;
    bool done;                     /* The apply callback ran. */
    int status;                    /* This is its raft status (0, RAFT_LEADERSHIPLOST...). */
    uint64_t index;                /* This is the entry's raft index (req.index). */
    uint64_t fx_index;             /* This is the index the fsm reported in its effects. */
    size_t n_results;
    struct cmd_result results[CL_MAX_RESULTS];
    size_t n_fx;                   /* effects other than FX_LOCK_CHANGED */
    struct effect fx[CL_MAX_FX];
    size_t n_changed;              /* FX_LOCK_CHANGED effects (one per changed lock) */
};

/* ---- suite ----------------------------------------------------------------- */

/* cl_suite_init makes the per-run directory (call it once, in main), and
 * cl_suite_done removes it with everything inside. */
void cl_suite_init(void);
void cl_suite_done(void);

/* ---- life cycle -------------------------------------------------------------- */

/*
 * Make CL_N servers, each with a new store in a new directory, bootstrapped
 * with the same 3-voter configuration, with the options applied to every
 * raft, but not started: a test may still seed raft state (see cl_setup_at).
 * o may be NULL for the defaults.
 */
void cl_setup(struct cl *c, const struct cl_opts *o);
/* cl_start runs raft_fixture_start; cl_open sets up, starts and elects node 0. */
void cl_start(struct cl *c);
void cl_open(struct cl *c, const struct cl_opts *o);

/*
 * A simulated restart: cl_stop closes the fixture and every store (cleanly)
 * but keeps the directories; cl_setup_at then reopens the same stores under
 * a new fixture whose servers have no raft state at all: no bootstrap, the
 * test seeds them (raft_fixture_set_term, _add_entry, _set_snapshot) before
 * cl_start, as if it were raft's log on disk.
 */
void cl_stop(struct cl *c);
void cl_setup_at(struct cl *c);

/* Stop the cluster and remove its directory. */
void cl_close(struct cl *c);

/* ---- raft ---------------------------------------------------------------------- */

struct raft *cl_raft(struct cl *c, unsigned i);
/* cl_leader returns the fixture's stable leader, or CL_N if there is none;
 * cl_elect runs raft_fixture_elect and checks the outcome. */
unsigned cl_leader(struct cl *c);
void cl_elect(struct cl *c, unsigned i);
/* Step until there is a stable leader other than node `old` (CL_N: any);
 * returns its index (FAILs if none). The fixture updates its idea of the
 * leader only while stepping, so right after a fault it still names the old
 * one: pass that one as `old`. */
unsigned cl_wait_leader(struct cl *c, unsigned old, unsigned max_ms);

/* Partitions, both directions. cl_link cuts or restores the link between
 * nodes i and j (never restore a link to a killed node: 0.15's
 * raft_fixture_kill only saturates its links, so it would receive messages
 * again). isolate/heal cut or restore all of node i's links, and they and
 * kill/revive also drop the node from, or return it to, the set that cl_run
 * waits for. */
void cl_link(struct cl *c, unsigned i, unsigned j, bool up);
void cl_isolate(struct cl *c, unsigned i);
void cl_heal(struct cl *c, unsigned i);
void cl_kill(struct cl *c, unsigned i);
void cl_revive(struct cl *c, unsigned i);

/* ---- proposals ------------------------------------------------------------------- */

/* Commands are encoded as one batch with cmds_encode (tests/lib/cmds.h);
 * cl_entry_buf makes that batch a raft entry's payload (fsm_entry_encode)
 * in a raft_malloc'd buffer, as raft_apply and raft_fixture_add_entry take
 * it. */
struct raft_buffer cl_entry_buf(const struct cmd *cmds, size_t n);

/*
 * Propose cmds as one entry on node i: the batch goes to raft_apply in a
 * raft_malloc'd buffer. Returns raft_apply's status (on failure the buffer
 * is freed here and the callback will never run).
 */
int cl_propose(struct cl *c, unsigned i, const struct cmd *cmds, size_t n, struct cl_prop *p);

/* Step until p's callback ran; returns whether it did within max_ms. */
bool cl_wait(struct cl *c, struct cl_prop *p, unsigned max_ms);

/*
 * Commit a barrier on node i (the leader) and step until its callback ran,
 * as batond's node does on every election: a leader applies no entry before
 * its commit index is on an entry of its own term (raft/fsm.c). Returns
 * whether the barrier applied within max_ms.
 */
bool cl_barrier(struct cl *c, unsigned i, unsigned max_ms);

/* Step until every node in mask has raft_last_applied >= index. (raft's
 * count includes what a follower's gate still holds back from its store,
 * raft/fsm.h: compare stores after a commit of the current term.) */
bool cl_wait_applied(struct cl *c, unsigned mask, uint64_t index, unsigned max_ms);

/*
 * Propose cmds on the current leader, expect the callback with status 0 and
 * one result per command, then step until every node of c->sync applied it.
 */
void cl_run(struct cl *c, const struct cmd *cmds, size_t n, struct cl_prop *p);
void cl_run1(struct cl *c, struct cmd cmd, struct cl_prop *p);

/* ---- commands ----------------------------------------------------------------------- */

/* The builders of tests/lib/cmds.h under these tests' names. */
#define cl_open_session c_open
#define cl_acquire c_acq
#define cl_release c_rel
#define cl_close_session c_close

/* ---- state ------------------------------------------------------------------------------ */

/* Replace out's contents with node i's store_snapshot bytes. */
void cl_snapshot(struct cl *c, unsigned i, struct buf *out);

/* Every node in mask has the same store_snapshot bytes (applied index
 * included) and the same applied index. */
void cl_assert_same(struct cl *c, unsigned mask);

/* Node i's view of lock `name`: holder session and fence (0 if free), the
 * waiters' sessions in queue order (at most max), and their number. */
void cl_lock(struct cl *c, unsigned i, const char *name, uint64_t *holder, uint64_t *fence,
             uint64_t *waiters, uint32_t max, uint32_t *n_waiters);

/* The effect p->fx[k], checked field by field. */
void cl_assert_fx(const struct cl_prop *p, size_t k, uint8_t type, uint64_t session,
                  uint64_t waiter, uint64_t fence, const char *name);

#endif /* BATON_TESTS_CLUSTER_FIXTURE_H */
