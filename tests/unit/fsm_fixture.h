/*
 * fsm_fixture.h -- what the unit tests of the lock state machine
 * (storage/store.h; tests/unit/test_fsm_*.c) share: a store on a fresh
 * LMDB directory per test, commands built and applied as raft entries
 * through store_apply, and ways to look at the state.
 *
 * Every test's directory lives under one per-run directory (suite_dir,
 * tests/lib/files.h) that main makes and removes with fsm_main_begin and
 * fsm_main_end, so that a failed test (which exits at once) leaves nothing
 * behind either.
 *
 * "Nothing changed" is checked by comparing store_snapshot bytes after the
 * 24-byte header (magic, format, applied index, state digest): the applied
 * index and the digest move with every entry, the rest of the state must
 * not.
 *
 * Every helper that can fail FAILs the running test (tests/lib/runner.h).
 */
#ifndef BATON_TESTS_UNIT_FSM_FIXTURE_H
#define BATON_TESTS_UNIT_FSM_FIXTURE_H

#include "baton/baton_defs.h"
#include "storage/cmd.h"
#include "storage/store.h"
#include "tests/lib/cmds.h"
#include "tests/lib/files.h"
#include "tests/lib/runner.h"

#define SNAP_HDR 24
enum {
    DB_META, DB_SESSIONS, DB_LOCKS, DB_WAITERS, DB_OWNED, DB_DEDUP, DB_MEMBERS, DB_LOST,
    DB_NONCES, DB_SESSION_NONCES, DB_HOLDERS, DB_SESSION_LOCKS, DB_MULTI, N_DB
};

struct fixture {
    char dir[128];
    store *s;
    struct effects fx;
    struct effects changed; /* apply_n moves the entry's FX_LOCK_CHANGED here */
    uint64_t index;
};

/* ---- the per-run directory, and a store per test ------------------------ */

/*
 * main's first and last steps in every test_fsm_*.c:
 *
 *     int main(int argc, char **argv)
 *     {
 *         fsm_main_begin(argc, argv);
 *         RUN(...);
 *         return fsm_main_end();
 *     }
 *
 * Inline: the runner's state is per file (tests/lib/runner.h).
 */
static inline void fsm_main_begin(int argc, char **argv)
{
    suite_dir_init("baton-fsm");
    runner_init(argc, argv);
    runner_set_timeout(120);
}

static inline int fsm_main_end(void)
{
    int rv = runner_done();

    suite_dir_done();
    return rv;
}

/* A new store in a new directory under the per-run one; and its end. */
void setup(struct fixture *f);
void teardown(struct fixture *f);

/* ---- commands (built, and encoded, with tests/lib/cmds.h) ---------------- */

/* Apply cmds as the next entry; every command must yield a result. The
 * entry's FX_LOCK_CHANGED effects go to f->changed, the others stay in
 * f->fx. */
void apply_n(struct fixture *f, const struct cmd *cmds, size_t n);
/* Apply one command as the next entry; its result. */
struct cmd_result run(struct fixture *f, struct cmd c);
/* Open a session (ttl 10 s) and expect success; its id. */
uint64_t open_session(struct fixture *f);
/* Acquire and expect a grant; returns the fence. */
uint64_t grant(struct fixture *f, uint64_t s, uint64_t seq, const char *name);
/* Acquire and expect to be queued at `pos`. */
void queue(struct fixture *f, uint64_t s, uint64_t seq, const char *name, uint64_t pos);

/* ---- effects ------------------------------------------------------------- */

/* One effect, field by field (name NULL: not checked). */
void assert_fx(const struct effect *e, uint8_t type, int32_t status, uint64_t session,
               uint64_t waiter, const char *name);
/* Two applies gave the same results and effects. */
void assert_same_effects(const struct effects *a, const struct effects *b);
/* The grants (FX_GRANT) of the last entry are to these sessions, in this
 * order, and there are n of them. */
void assert_grants(const struct fixture *f, const uint64_t *sessions, int n);
/* How many effects of this type e holds. */
int count_fx(const struct effects *e, uint8_t type);
/* The last entry's FX_LOCK_CHANGED names are exactly `names` (NULL-ended),
 * in that order: each changed lock once. */
void assert_changed(const struct fixture *f, const char *const *names);
#define CHANGED(f, ...) assert_changed((f), (const char *const[]){__VA_ARGS__, NULL})
#define UNCHANGED(f) ASSERT_UEQ((f)->changed.n_fx, 0)

/* ---- state inspection ---------------------------------------------------- */

/* Replace b's contents with the store's snapshot. */
void snap(struct fixture *f, struct buf *b);
/* The two stores hold the same state, applied index and digest: their
 * snapshots are the same bytes. */
void assert_same_snapshots(struct fixture *f, struct fixture *g);
/* The two snapshots hold the same state (their headers aside). */
int same_state(const struct buf *a, const struct buf *b);
/* Number of entries of database db (DB_*) in a snapshot; in the store. */
uint32_t snap_count(const struct buf *b, int db);
uint32_t count_in(struct fixture *f, int db);
/*
 * Write into out (replaced) the format 7, 6, 5, 4 or 3 snapshot an older
 * batond would have taken of the state in the format 8 snapshot cur, from
 * the layouts of storage/store_int.h spelled out here: for 7, no multi
 * database (cur's must be empty); below 7 also no holders or
 * session_locks databases, locks, waiters and owned holds in format 6's
 * layout (every lock in cur must be an ordinary one held exclusively by at
 * most one hold of one handle, every waiter exclusive); below 6 also no
 * lost table and no nonce databases (cur's must be empty); for formats 4 and 3 session
 * records without the owner byte and owner (every owner in cur must be
 * ""), and for format 3 no members table (cur's must be empty).
 */
void snap_as_format(const struct buf *cur, uint32_t format, struct buf *out);
/* store_lock_info of name (store_lock_info_free it). */
struct msg_lock_info_r info(struct fixture *f, const char *name);
/* name is held by session (0: free) with this fence (0: any) and has
 * `waiters` waiters. */
void assert_holder(struct fixture *f, const char *name, uint64_t session, uint64_t fence,
                   uint32_t waiters);
/* Build a state that touches every table a store of format 5 has (every
 * table but the lost one): the history of an older batond. */
void populate(struct fixture *f);
/* Add a lost hold (a new session's hold of "gamma", forced away) and
 * that session's multi-lock of "mu1" and "mu2": with populate, every
 * table has entries. */
void populate_lost(struct fixture *f);
/* The same but for the nonce tables: a state the entries of an older
 * format (before 6) could build, which a downgrade keeps whole. */
void populate_old(struct fixture *f);

/* ---- what the store's iterators report ----------------------------------- */

/* store_foreach_timed_waiter: how many calls, and the last one's values. */
struct timed {
    int n;
    uint64_t session, waiter;
    int64_t wait_ms;
    char name[16];
};
int collect_timed(void *data, uint64_t session, uint64_t waiter, int64_t wait_ms,
                  const char *name, size_t name_len);

/* store_list_locks: up to 8 locks. */
struct listed {
    int n;
    char names[8][16];
    uint64_t holder[8];
    uint32_t waiters[8];
};
int collect_lock(void *data, const char *name, size_t name_len,
                 const struct msg_lock_summary *sum);

/* store_foreach_delayed_lock: up to 8 delayed locks. */
struct delayed_seen {
    int n;
    char names[8][16];
    int32_t delay[8];
};
int collect_delayed(void *data, const char *name, size_t name_len, int32_t delay_ms);

#endif /* BATON_TESTS_UNIT_FSM_FIXTURE_H */
