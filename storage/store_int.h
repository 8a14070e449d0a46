/*
 * store_int.h -- declarations shared by the files of the lock store. Not part
 * of the store's API: only the .c files of storage/ include it, and it is the only header
 * that includes <lmdb.h>.
 *
 * The files, in layers: a file calls only files of a higher number (1 is
 * the top), except the two of a tie, which call each other. This map is
 * the only one; tests/check-layers.sh checks it against the symbols each
 * object defines and uses.
 *  [1] apply.c      store_apply: batch validation, deduplication, and the
 *                   dispatch through cmd_table.h's apply column
 *  [1] reads.c      the short read transactions behind the admin requests
 *  [2] check.c      CHECK: its handler, the content hash, the last result
 *  [2] sessions.c   OPEN_SESSION, CLOSE_SESSION and EXPIRE_SESSION
 *  [3] snapshot.c   store_snapshot and store_restore
 *  [4] locks.c      acquire, release, cancel, wait timeout, forced release,
 *                   lock-delay and the FIFO queue under them
 *  [4] multi.c      atomic multi-locks (ACQUIRE_MANY)
 *  tie: locks.c multi.c  one grant loop: grant_waiting hands a multi-lock
 *                   at a queue's head to multi_try_grant, whose grant or
 *                   end regrants the other names' queues through
 *                   locks_regrant; and a hold's or wait's end in locks.c
 *                   ends a multi-lock's on all its names (multi_release,
 *                   multi_wait_end, multi_drop_owned, multi_force)
 *  [5] lockrec.c    the records of a lock (lock, holds, queue, owned), the
 *                   compatibility rule, the start of a lock-delay
 *  [5] store.c      environment, open with its format upgrades, close, the
 *                   write-transaction loop that grows the map
 *  [6] lost.c       the lost table: holds taken away by a forced release,
 *                   kept until the client acknowledges them (format 6)
 *  [6] members.c    the members table: SET_MEMBER_ADDR and store_member_addr
 *  [6] level.c      the cluster's feature level: SET_LEVEL and store_level
 *  [6] modes.c      a session's count of entries per lock (format 7) and
 *                   the format 6 -> 7 upgrade
 *  [6] nonces.c     OPEN_SESSION's nonces: the index from a nonce to its
 *                   session
 *  [6] snapshot_bg.c  the snapshot in three steps whose dump runs on
 *                   another thread (store_snapshot_begin/_write/_end)
 *  [7] ctx.c        what handlers write through: effects, the session
 *                   record cache, the cached results' updates
 *  [7] dump.c       store__dump: a read transaction's state as snapshot
 *                   bytes
 *  [7] hash.c       FNV-1a 64 and the state digest
 *  [8] records.c    the byte layout of every key and value, the db_*
 *                   helpers, u64 meta values, error translation
 *  [9] cmd.c        the command batch codec (cmd_table.h) and the effects
 *                   arrays
 *
 * Error convention inside storage/: functions return 0, a raw LMDB code
 * (MDB_* or an errno value), or BATON_ENOMEM. Only store__err() turns these
 * into BATON_E* codes, at the boundary of each public function, so that no
 * MDB_* value escapes. MDB_NOTFOUND is never returned as an error: lookups
 * report "absent" through a separate out-parameter.
 */
#ifndef BATON_STORAGE_STORE_INT_H
#define BATON_STORAGE_STORE_INT_H

#include <lmdb.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/msg.h"
#include "storage/cmd.h"
#include "storage/store.h"

/* Version of the on-disk layout and of the snapshot format. Format 2 added
 * the lock-delay fields to the lock and waiter records; format 3 added the
 * state digest (meta "digest", and a u64 after the applied index in the
 * snapshot header); format 4 added the members table (a seventh database,
 * dumped last in snapshots); format 5 added the owner to the session
 * record (struct sess_rec); format 6 added the lost table (below) and the
 * two databases of OPEN_SESSION's nonces (nonces, session_nonces:
 * nonces.c), dumped after it. A format 3, 4 or 5 store is upgraded in
 * place when it is opened (store.c, one step per format: a format 3 or 4
 * store's session records are rewritten with the anonymous owner "", since
 * no binary of those formats knew of authentication; a format 3 store's
 * members table starts empty; the lost table and the nonce databases of an
 * older store start empty, since no binary of those formats recorded lost
 * holds or sent a nonce), and a format 3, 4 or 5 snapshot is restored the
 * same way (snapshot.c); any other format is refused. */
#define STORE_FORMAT_NO_OWNERS 4
#define STORE_FORMAT_NO_MEMBERS 3

/* ---- format 6: the lost table (so that a forced release or expiry is
 * never lost silently). Kept apart from the other format steps so that it combines
 * with other changes of the layout:
 *   - one database of its own, DB_LOST, created empty by env_open and
 *     dumped last in snapshots;
 *   - a format 5 store is upgraded by lost_upgrade (lost.c), which has
 *     nothing to rewrite: the table starts empty, since no binary of
 *     format 5 recorded lost holds;
 *   - a format 5 (or older) snapshot holds every database but this one
 *     and restores with it empty (snapshot.c).
 * STORE_FORMAT_NO_LOST is the format before it. */
#define STORE_FORMAT_NO_LOST 5
/* Format 6 also added the nonce databases (nonces.c); the format before
 * them is the same format 5. */
#define STORE_FORMAT_NO_NONCES STORE_FORMAT_NO_LOST

/* ---- format 7: lock modes (shared locks, semaphores,
 * reentrancy; modes.c):
 *   - the holders of a lock are a set: a database of their own, DB_HOLDERS
 *     (name \0 be64 fence -> struct hold_rec), and the lock record (struct
 *     lock_rec) keeps their number, their mode and the lock's limit instead
 *     of the one holder of format 6;
 *   - a waiter record carries the mode of its request (one byte more);
 *   - an owned hold's enq is the fence of its hold (0 in format 6), so that
 *     a session's owned entry finds its holders record;
 *   - DB_SESSION_LOCKS (be64 session, name -> u32 count of the session's
 *     owned entries on that name) answers "does this session hold or wait
 *     for this lock" for reentrancy and BATON_EDEADLK;
 *   - a format 6 store is upgraded by modes_upgrade (modes.c), which
 *     rewrites every lock, waiter and owned hold and fills the two new
 *     databases; a format 6 (or older) snapshot is restored in its own
 *     layout and then upgraded the same way, in the restore's transaction.
 * STORE_FORMAT_NO_MODES is the format before it. */
#define STORE_FORMAT_NO_MODES 6

/* ---- format 8: atomic multi-locks (multi.c):
 *   - DB_MULTI (be64 session, be64 waiter -> the request's names, in the
 *     order the client gave them) for every multi-lock that waits or holds;
 *   - waiter, holder and owned records of a multi-lock carry
 *     REC_MULTI_FLAG in their mode (or kind) byte. Records of format 7
 *     never have the bit, so they read the same in format 8: the step
 *     7 -> 8 rewrites nothing, and DB_MULTI starts empty;
 *   - a format 7 (or older) snapshot holds every database but DB_MULTI.
 * STORE_FORMAT_NO_MULTI is the format before it. */
#define STORE_FORMAT_NO_MULTI 7

/* ---- format 9: values of holds and waits (values.c):
 *   - DB_VALUES (be64 session, be64 waiter -> the value) for every hold or
 *     wait whose request carried one; nothing else changes, so the step
 *     8 -> 9 rewrites nothing and DB_VALUES starts empty;
 *   - values exist only from feature level 3 (cmd_table.h), so a store
 *     of a lower level dumps its snapshot in format 8, without DB_VALUES
 *     (empty then): a mixed cluster's nodes hash and ship the same bytes,
 *     and a binary of level 2 reads what a binary of level 3 sends it.
 * STORE_FORMAT_NO_VALUES is the format before it. */
#define STORE_FORMAT 9
#define STORE_FORMAT_NO_VALUES 8
#define REC_MULTI_FLAG 0x80
/* The snapshot's leading u32: the bytes "BTN1" read as little-endian. */
#define STORE_SNAP_MAGIC 0x314E5442u
/* Initial map size. The map is writable, so the data file is this long and
 * fully allocated (store.c); on MDB_MAP_FULL it grows, allocated first, by
 * itself up to STORE_GROW_MAX and then by STORE_GROW_MAX at a time
 * (store_next_growth). */
#define STORE_MAP_SIZE ((size_t)8 << 20)
#define STORE_GROW_MAX ((size_t)64 << 20)

/* Meta keys. The first group is replicated state (in snapshots: applied
 * and digest travel in the snapshot header, the three counters as meta
 * entries); boot_id and clean describe this node's copy of the files and
 * are never snapshotted. */
#define META_APPLIED "applied"
#define META_DIGEST "digest"
#define META_NEXT_SESSION "next_session"
#define META_NEXT_FENCE "next_fence"
#define META_NEXT_ENQ "next_enq"
#define META_LEVEL "level" /* absent: level 1 (level.c) */
#define META_FORMAT "format"
#define META_BOOT_ID "boot_id"
#define META_CLEAN "clean"

#define STORE_BOOT_ID_MAX 64

/* The named databases, in snapshot order. A format 7 snapshot holds all
 * but the last; a format 6 one all but the last three; a format 4 or 5 snapshot holds
 * all but the last five (DB_LOST and the nonce databases), a format 3
 * one also lacks DB_MEMBERS. */
enum store_db {
    DB_META, DB_SESSIONS, DB_LOCKS, DB_WAITERS, DB_OWNED, DB_DEDUP, DB_MEMBERS,
    DB_LOST,                       /* format 6: lost.c */
    DB_NONCES, DB_SESSION_NONCES,  /* format 6: nonces.c */
    DB_HOLDERS, DB_SESSION_LOCKS,  /* format 7: modes.c */
    DB_MULTI,                      /* format 8: multi.c */
    DB_VALUES,                     /* format 9: values.c */
    DB_COUNT_
};

struct store {
    MDB_env *env;
    MDB_dbi dbi[DB_COUNT_];
    /* The snapshots begun and not ended (NULL: a free slot): raft's and
     * one backup's (server/backup.c) may run at once. */
    struct store_snap *snaps[STORE_MAX_SNAPS];
    unsigned fail_snapshots; /* test hook: snapshots still to fail (store_test.h) */
    void (*snapshot_sync_hook)(void *arg); /* test hook (store_test.h) */
    void *snapshot_sync_arg;
    uint64_t applied;       /* cached meta "applied" */
    uint64_t digest;        /* cached meta "digest" */
    uint64_t restored;      /* the applied index of the last snapshot restored
                               since open (store_restore), 0: none */
    uint64_t check_index;   /* the last CHECK applied since open, 0: none (check.c) */
    uint64_t check_hash;    /* the content hash after it, 0: could not be computed */
    size_t map_size;        /* current map size, grown on MDB_MAP_FULL */
    size_t grow_max;        /* largest growth step: STORE_GROW_MAX (tests lower it) */
    char *dir;
    char boot_id[STORE_BOOT_ID_MAX];
    size_t boot_id_len;
};

/* ---- store.c ------------------------------------------------------------ */

/*
 * Run fn(s, txn, arg) inside one write transaction and commit it. If fn or
 * the commit hits MDB_MAP_FULL, the transaction is aborted, the map grown
 * and fn run again from scratch, so fn must be restartable: it may not keep
 * anything from an earlier attempt. Returns 0 or a BATON_E* code; on error
 * nothing was written.
 */
typedef int store_txn_fn(store *s, MDB_txn *txn, void *arg);
int store__write(store *s, store_txn_fn *fn, void *arg);

/* ---- level.c ----------------------------------------------------------- */

/* The cluster's committed feature level in txn: 1 while the key is
 * absent. */
int level_get(store *s, MDB_txn *txn, uint64_t *level);

/* ---- dump.c, snapshot.c, snapshot_bg.c ---------------------------------- */

/* The meta keys that are state (the cluster's level, then the three
 * counters), in key order: the index of one (0..N_META_STATE - 1), or -1
 * for any other key. Every snapshot holds the counters; the level only
 * once a SET_LEVEL raised it (level.c), so META_STATE_REQUIRED leaves it
 * out. */
#define N_META_STATE 4
#define META_STATE_REQUIRED 0xEu
int meta_state_index(const void *k, size_t klen);

/*
 * Append the snapshot of txn's state to out (the format store.h gives for
 * store_snapshot). Reads nothing but txn and s->dbi, so it may run on any
 * thread that owns txn. When stop is not NULL it is read every few records
 * and a non-zero value ends the dump with ECANCELED. 0 or an internal code;
 * out->len is as it was on error.
 */
int store__dump(store *s, MDB_txn *txn, struct buf *out, const atomic_int *stop);

/* The test hook store__fail_snapshots (snapshot_bg.c): should this
 * snapshot fail (counted)? */
int store__snapshot_fault(store *s);

/* Stop and close the open snapshots' read transactions, if any (waiting
 * for a write in progress to give up): growing the map needs it. Loop side. */
void store__snapshot_stop(store *s);

/* The path of the boot id file, replaced by the tests (store_test.h). */
extern const char *store__boot_id_path;

/* ---- records.c: keys and values ---------------------------------------- */

/* Translate an internal code (see the convention above) into BATON_E*. */
int store__err(int rc);

/* Read or write one u64 meta value (little-endian). *found says whether
 * the key exists; a missing key reads as 0. */
int meta_get_u64(store *s, MDB_txn *txn, const char *key, uint64_t *v, int *found);
int meta_put_u64(store *s, MDB_txn *txn, const char *key, uint64_t v);

/* Largest key we build: a waiters key, name \0 be64 enq. */
#define WAITER_KEY_MAX (BATON_MAX_NAME + 1 + 8)

enum owned_kind { OWNED_HOLD = 1, OWNED_WAIT = 2 };

/* sessions: be64 session -> this. Encoded (format 5) as u32 ttl_ms,
 * u64 created, u32 n_owned, u64 ack_floor, u8 owner_len, the owner, then
 * the client name (the rest of the value). Formats 3 and 4 had no owner
 * byte and no owner (SESS_VAL_FIXED_V4 fixed bytes, then the name). */
struct sess_rec {
    uint32_t ttl_ms;
    uint64_t created;       /* raft index of OPEN_SESSION */
    uint32_t n_owned;       /* holds + waits, for STORE_MAX_OWNED_PER_SESSION */
    uint64_t ack_floor;     /* highest ack_below seen: seqs below it are stale */
    uint16_t name_len;
    char name[BATON_MAX_CLIENT_NAME];
    uint8_t owner_len;      /* <= BATON_MAX_PRINCIPAL; 0: the anonymous principal */
    char owner[BATON_MAX_PRINCIPAL]; /* the principal that opened it (cmd.h) */
};
#define SESS_VAL_FIXED 25
#define SESS_VAL_FIXED_V4 24
#define SESS_VAL_MAX (SESS_VAL_FIXED + BATON_MAX_PRINCIPAL + BATON_MAX_CLIENT_NAME)

/* locks: name -> this (format 7). A record exists only while the lock
 * has holders or waiters or is delayed. The holders are in DB_HOLDERS;
 * mode is theirs (meaningless while there are none); limit (1..
 * BATON_MAX_LIMIT) was fixed by the request that created the record: 1
 * for an ordinary (read/write) lock, N > 1 for a semaphore of N. A
 * delayed lock grants nothing until DELAY_END; lock_delay_ms is then the
 * delay that runs (0 otherwise). It may still have holders (the others
 * of a shared lock or a semaphore whose one holder expired). */
struct lock_rec {
    uint32_t n_holders;
    uint8_t mode;           /* BATON_MODE_EXCLUSIVE or BATON_MODE_SHARED */
    uint32_t limit;         /* >= 1 */
    uint32_t n_waiters;
    int32_t lock_delay_ms;  /* >= 0 */
    uint8_t delayed;        /* 0 or 1 */
};
#define LOCK_VAL_LEN 18

/* The lock record of format 6: one holder (0: none). */
struct lock_rec_v6 {
    uint64_t holder_session;
    uint64_t holder_waiter;
    uint64_t fence;
    uint64_t granted;
    uint32_t n_waiters;
    int32_t lock_delay_ms;
    uint8_t delayed;
};
#define LOCK_VAL_LEN_V6 41

/* holders: name \0 be64 fence -> this (format 7). One hold: the ACQUIRE
 * (session, waiter) that won it, the raft index of the grant, its
 * lock-delay, its mode, and how many handles it has (count >= 1: a
 * reentrant ACQUIRE of the same session adds one, each RELEASE of the
 * fence takes one, the last one ends the hold). */
struct hold_rec {
    uint64_t session;
    uint64_t waiter;
    uint64_t granted;
    int32_t lock_delay_ms;  /* >= 0 */
    uint8_t mode;
    uint8_t multi;          /* 1: part of a multi-lock (format 8; REC_MULTI_FLAG) */
    uint32_t count;         /* >= 1; always 1 for a multi-lock */
};
#define HOLD_VAL_LEN 33

/* waiters: name \0 be64 enq -> this. lock_delay_ms is the delay of the
 * hold this waiter will have once granted (>= 0); mode its request's
 * (format 7; format 6's record lacks the byte: WAITER_VAL_LEN_V6). */
struct waiter_rec {
    uint64_t session;
    uint64_t waiter;
    int64_t wait_ms;
    int32_t lock_delay_ms;
    uint8_t mode;
    uint8_t multi;          /* 1: part of a multi-lock (format 8; REC_MULTI_FLAG) */
};
#define WAITER_VAL_LEN 29
#define WAITER_VAL_LEN_V6 28

/* session_locks: be64 session, name -> u32, how many owned entries
 * (holds and waits) the session has on that lock (>= 1; no record: 0). */
#define SESSION_LOCK_KEY_MAX (8 + BATON_MAX_NAME)

/* owned: be64 session, be64 waiter -> this. enq is the hold's fence for
 * a hold (format 7; 0 in format 6). */
struct owned_rec {
    uint8_t kind;           /* enum owned_kind */
    uint8_t multi;          /* 1: a multi-lock, whose names are in DB_MULTI and
                               whose first one is `name` (REC_MULTI_FLAG) */
    uint64_t enq;
    uint16_t name_len;
    char name[BATON_MAX_NAME];
};
#define OWNED_VAL_FIXED 9

/* dedup: be64 session, be64 seq -> struct cmd_result. */
#define DEDUP_VAL_LEN 13

/* lost: be64 session, be64 fence -> u64 waiter, i32 status, name (1..
 * BATON_MAX_NAME bytes, the rest of the value). A hold (session, waiter)
 * with that fence was taken away without its RELEASE while the session
 * lived (a forced release: status BATON_ELOST). The record stays until
 * the session acknowledges it, by a RELEASE of that fence (answered
 * BATON_ELOST), or ends. It keeps the slot of the hold it replaces in the
 * session's n_owned, so a session holds at most STORE_MAX_OWNED_PER_SESSION
 * holds, waits and unacknowledged lost holds together (lost.c). */
#define LOST_VAL_FIXED 12
struct lost_rec {
    uint64_t waiter;
    int32_t status;
    uint16_t name_len;
    char name[BATON_MAX_NAME];
};
size_t lost_encode(uint8_t *p, const struct lost_rec *r);
int lost_decode(const MDB_val *v, struct lost_rec *r);

/* nonces: be64 nonce, the owner (0..BATON_MAX_PRINCIPAL bytes) -> u64
 * session; session_nonces: be64 session -> u64 nonce. Only sessions opened
 * with a nonce (cmd.h) have entries, in both, for as long as they live. */
#define NONCE_KEY_MAX (8 + BATON_MAX_PRINCIPAL)
#define NONCE_VAL_LEN 8

/* members: be32 member id -> client address, 1..BATON_MAX_ADDR bytes of the
 * grammar of proto/addr.h (cmd.h, SET_MEMBER_ADDR). */
#define MEMBER_KEY_LEN 4
/* Is addr[0..n) a client address the members table may hold? */
int member_addr_ok(const void *addr, size_t n);

/* Keys. The returned length is the number of bytes written. */
void key_u64(uint8_t k[8], uint64_t a);
void key_pair(uint8_t k[16], uint64_t a, uint64_t b);
size_t key_nonce(uint8_t k[NONCE_KEY_MAX], uint64_t nonce, const char *owner, size_t owner_len);
size_t key_waiter(uint8_t k[WAITER_KEY_MAX], const char *name, size_t name_len, uint64_t enq);
/* Split a waiters key; 0 or MDB_CORRUPTED. */
int key_waiter_split(const MDB_val *k, const char **name, size_t *name_len, uint64_t *enq);

/* Values: encode into a caller buffer big enough for the largest value
 * (VAL_MAX), decode with checks (MDB_CORRUPTED on a bad length, for a
 * session an owner longer than BATON_MAX_PRINCIPAL or than the value, and
 * for lock and waiter records on a negative lock_delay_ms, a delayed flag
 * other than 0 or 1, or a delayed lock that has a holder). */
#define VAL_MAX (LOST_VAL_FIXED + BATON_MAX_NAME) /* the largest: a lost record */
_Static_assert(OWNED_VAL_FIXED + BATON_MAX_NAME <= VAL_MAX, "an owned record fits VAL_MAX");
size_t sess_encode(uint8_t *p, const struct sess_rec *r);
int sess_decode(const MDB_val *v, struct sess_rec *r);
/* A session record of format 3 or 4, decoded with the owner "" (the only
 * principal those formats knew). */
int sess_decode_v4(const MDB_val *v, struct sess_rec *r);
/* Rewrite a format 3 or 4 session record `old` as this format's, into
 * p[0..SESS_VAL_MAX); *len is its length. 0 or MDB_CORRUPTED. */
int sess_upgrade(const MDB_val *old, uint8_t *p, size_t *len);
/* The record of formats 3 and 4 (the owner dropped): only for the test
 * hook store__downgrade, which makes such stores. */
size_t sess_encode_v4(uint8_t *p, const struct sess_rec *r);
size_t lock_encode(uint8_t *p, const struct lock_rec *r);
int lock_decode(const MDB_val *v, struct lock_rec *r);
size_t lock_encode_v6(uint8_t *p, const struct lock_rec_v6 *r);
int lock_decode_v6(const MDB_val *v, struct lock_rec_v6 *r);
size_t hold_encode(uint8_t *p, const struct hold_rec *r);
int hold_decode(const MDB_val *v, struct hold_rec *r);
size_t waiter_encode(uint8_t *p, const struct waiter_rec *r);
int waiter_decode(const MDB_val *v, struct waiter_rec *r);
/* Format 6's waiter record (mode: exclusive). */
size_t waiter_encode_v6(uint8_t *p, const struct waiter_rec *r);
int waiter_decode_v6(const MDB_val *v, struct waiter_rec *r);
size_t key_session_lock(uint8_t k[SESSION_LOCK_KEY_MAX], uint64_t session, const char *name,
                        size_t name_len);
size_t owned_encode(uint8_t *p, const struct owned_rec *r);
int owned_decode(const MDB_val *v, struct owned_rec *r);
size_t dedup_encode(uint8_t *p, const struct cmd_result *r);
int dedup_decode(const MDB_val *v, struct cmd_result *r);

/* Generic helpers over one database: *found (when not NULL) tells whether
 * the key was there; a missing key is not an error. */
int db_get(MDB_txn *txn, MDB_dbi dbi, const void *k, size_t klen, MDB_val *v, int *found);
int db_put(MDB_txn *txn, MDB_dbi dbi, const void *k, size_t klen, const void *v, size_t vlen);
int db_del(MDB_txn *txn, MDB_dbi dbi, const void *k, size_t klen, int *found);
/* Delete every key in [lo, hi) (memcmp order, equal lengths). */
int db_del_range(MDB_txn *txn, MDB_dbi dbi, const void *lo, const void *hi, size_t klen);

/* ---- ctx.c: the context of one store_apply ----------------------------- */

/* A command's handler (cmd_table.h, apply): apply cmd in c and put its
 * outcome in *res. Returns 0 or an internal error code (above), which
 * aborts the whole entry; a refused command is an outcome, not an error. */
struct apply_ctx;
typedef int cmd_apply_fn(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res);

/* Everything one store_apply call works with. */
struct apply_ctx {
    store *s;
    MDB_txn *txn;
    uint64_t index;             /* the raft index being applied */
    struct effects *out;
    int checked;                /* a CHECK was applied: hash once committed */
    uint64_t next_session, next_fence, next_enq;
    /* The locks changed so far in this entry, one FX_LOCK_CHANGED each:
     * appended to out after the last command (apply.c). Owned here. */
    struct effect *changed;
    size_t n_changed, cap_changed;
    /* Locks whose queue head may have become grantable because a
     * multi-lock was granted or ended elsewhere (multi.c): each gets
     * locks_regrant before the command's result is final. Owned here. */
    struct regrant_item {
        uint16_t len;
        char name[BATON_MAX_NAME];
    } *regrant;
    size_t n_regrant, cap_regrant;
    /* The session record read or written last (ctx.c): a command
     * reads and rewrites its session's record several times (the dedup
     * floor, n_owned), so sess_get and sess_put work on this copy and
     * sess_flush writes it once, after each command. */
    struct sess_cache {
        uint64_t id;
        int valid;              /* rec is the record of session id */
        int dirty;              /* rec differs from the database's */
        struct sess_rec rec;
    } sess;
};

/* A queued ACQUIRE's wait ended: replace its cached result, if the dedup
 * table still has one, so that a retry of that ACQUIRE learns the outcome. */
int dedup_update(struct apply_ctx *c, uint64_t session, uint64_t seq, const struct cmd_result *r);
/* Forget every cached result of a session (it is going away). */
int dedup_drop_session(struct apply_ctx *c, uint64_t session);

/* Append an effect to c->out (its lock_delay_ms is 0). */
int fx_emit(struct apply_ctx *c, uint8_t type, int32_t status, uint64_t session, uint64_t waiter,
            uint64_t fence, const char *name, size_t name_len);
/* Note that name's record or queue changed in this entry: it gets one
 * FX_LOCK_CHANGED, after every other effect of the entry, however often it
 * changes. Returns 0 or BATON_ENOMEM. */
int fx_lock_changed(struct apply_ctx *c, const char *name, size_t name_len);
/* Append FX_LOCK_DELAY: name is delayed for delay_ms after the expiry of
 * the hold (session, waiter, fence). */
int fx_emit_lock_delay(struct apply_ctx *c, uint64_t session, uint64_t waiter, uint64_t fence,
                       int32_t delay_ms, const char *name, size_t name_len);

/*
 * The session records go through the context's one-record cache
 * (apply_ctx.sess): sess_get reads the cache or the database, sess_put
 * changes the cache only, sess_flush writes a changed record to the
 * database (apply.c calls it after every command, so every command ends
 * with the database as it would be without the cache), sess_del deletes a
 * record and forgets its copy. Anything else that reads or writes
 * DB_SESSIONS inside an apply calls sess_flush first.
 */
int sess_get(struct apply_ctx *c, uint64_t id, struct sess_rec *r, int *found);
int sess_put(struct apply_ctx *c, uint64_t id, const struct sess_rec *r);
int sess_flush(struct apply_ctx *c);
int sess_del(struct apply_ctx *c, uint64_t id);
/* Add delta to a session's n_owned (the session must exist). */
int sess_owned_add(struct apply_ctx *c, uint64_t id, int delta);

/* ---- hash.c ------------------------------------------------------------- */

/*
 * The next state digest (store.h, store_digest): FNV-1a 64 over the 8 bytes
 * of prev (little-endian), the 8 bytes of index (little-endian), then
 * data[0..len). data may be NULL when len is 0.
 */
uint64_t store__digest_next(uint64_t prev, uint64_t index, const void *data, size_t len);

/* FNV-1a 64 (store.h gives the parameters): h updated over p[0..n).
 * Start from STORE_FNV64_OFFSET. */
#define STORE_FNV64_OFFSET 0xcbf29ce484222325ull
uint64_t store__fnv1a64(uint64_t h, const void *p, size_t n);

/* ---- check.c ------------------------------------------------------------ */

/* A CHECK was applied as entry `index` (committed): hash the state now and
 * keep (index, hash) as the last check; a hash that cannot be computed is
 * kept as 0. */
void store__check_applied(store *s, uint64_t index);
/* CHECK: changes nothing; store_apply hashes the state once the entry has
 * committed (cmd.h, "Content checks"). */
int op_check(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res);

/* ---- sessions.c --------------------------------------------------------- */

int op_open_session(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res);
int op_close_session(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res);
int op_expire_session(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res);

/* ---- locks.c ------------------------------------------------------------ */

int op_acquire(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res);
int op_release(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res);
int op_cancel(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res);
int op_wait_timeout(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res);
int op_force_release(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res);
int op_force_release2(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res);
int op_delay_end(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res);
/* Would cmd, applied now, free something of its session's: a RELEASE of a
 * hold it has (or of a lost record: the acknowledgement of the loss), a
 * CANCEL of a wait it has, any CLOSE_SESSION? Reads only. *frees is 0 for
 * every other command. */
int locks_frees(struct apply_ctx *c, const struct cmd *cmd, int *frees);

/* ---- lost.c ------------------------------------------------------------- */

/* Record that the hold (session, waiter) of name with fence was taken away
 * (status says why). The caller keeps the hold's slot in n_owned. */
int lost_put(struct apply_ctx *c, uint64_t session, uint64_t waiter, uint64_t fence,
             int32_t status, const char *name, size_t name_len);
/* Has the session a lost record of that fence and name? (*found) */
int lost_has(struct apply_ctx *c, uint64_t session, uint64_t fence, const char *name,
              size_t name_len, int *found);
/* A RELEASE of (session, fence, name) found no such hold: if the session
 * has a lost record of that fence and name, delete it (the session has
 * acknowledged the loss), give its slot back and set *found. */
int lost_ack(struct apply_ctx *c, uint64_t session, uint64_t fence, const char *name,
             size_t name_len, int *found);
/* The session is ending: forget its lost records. */
int lost_drop_session(struct apply_ctx *c, uint64_t session);
/* The format 5 -> 6 step of store_open's upgrade, in its transaction. */
int lost_upgrade(store *s, MDB_txn *txn);

/* ---- nonces.c ----------------------------------------------------------- */

/* The live session that OPEN_SESSION's nonce names for this owner, in
 * the transaction txn (an apply's or a read's): *found says whether there
 * is one. An index entry whose session is gone is MDB_CORRUPTED. */
int nonce_find(store *s, MDB_txn *txn, uint64_t nonce, const char *owner, size_t owner_len,
               uint64_t *session, int *found);
/* Record that session was opened by owner with nonce (non-zero). */
int nonce_put(struct apply_ctx *c, uint64_t nonce, const char *owner, size_t owner_len,
              uint64_t session);
/* The session (whose record is r) is going away: forget its nonce, if it
 * had one. */
int nonce_drop(struct apply_ctx *c, uint64_t session, const struct sess_rec *r);

/* ---- modes.c ------------------------------------------------------------ */

/* Add delta to the count of session's owned entries on name
 * (DB_SESSION_LOCKS); the record goes when the count reaches 0. */
int session_lock_add(struct apply_ctx *c, uint64_t session, const char *name, size_t len,
                     int delta);
/* session_lock_add(+1) for a count known to be 0: one write, no read. */
int session_lock_first(struct apply_ctx *c, uint64_t session, const char *name, size_t len);
/* How many owned entries session has on name (0: none). */
int session_lock_count(struct apply_ctx *c, uint64_t session, const char *name, size_t len,
                       uint32_t *n);
/* The format 6 -> 7 step (store_int.h, format 7), in txn: of store_open's
 * upgrade, and of the restore of a format 6 (or older) snapshot. */
int modes_upgrade(store *s, MDB_txn *txn);
/* The test hook store__downgrade's step 7 -> 6: refused (BATON_EINVAL)
 * unless every lock is an ordinary one with at most one exclusive hold of
 * one handle and only exclusive waiters. */
int modes_downgrade(store *s, MDB_txn *txn);

/* ---- lockrec.c: the records of a lock (locks.c and multi.c) ------------ */

int lock_get(struct apply_ctx *c, const char *name, size_t len, struct lock_rec *r, int *found);
/* The record of a lock that must exist (someone holds or waits for it):
 * 0, or MDB_CORRUPTED if it is missing. */
int lock_get_existing(struct apply_ctx *c, const char *name, size_t len, struct lock_rec *r);
/* Are an ACQUIRE's (or ACQUIRE_MANY's) seq, resolved lock-delay and each
 * of its fields (proto/lockreq.h) legal whatever the state? (The names,
 * and how the fields combine, are each command's own.) */
int acquire_fields_ok(const struct cmd *cmd);/* Store the lock record (FX_LOCK_CHANGED), or delete it once nobody holds
 * or waits and no delay runs. */
int lock_put(struct apply_ctx *c, const char *name, size_t len, const struct lock_rec *r);
int lock_save(struct apply_ctx *c, const char *name, size_t len, const struct lock_rec *r);
int owned_get(struct apply_ctx *c, uint64_t session, uint64_t waiter, struct owned_rec *o,
              int *found);
int owned_put(struct apply_ctx *c, uint64_t session, uint64_t waiter, uint8_t kind, uint8_t multi,
              uint64_t enq, const char *name, size_t len);
int owned_del(struct apply_ctx *c, uint64_t session, uint64_t waiter);
int hold_get(struct apply_ctx *c, const char *name, size_t len, uint64_t fence,
             struct hold_rec *h, int *found);
int hold_put(struct apply_ctx *c, const char *name, size_t len, uint64_t fence,
             const struct hold_rec *h);
/* Forget the hold of `fence` (it must exist); n_holders - 1 in *r, which
 * the caller saves. */
int hold_drop(struct apply_ctx *c, const char *name, size_t len, struct lock_rec *r,
              uint64_t fence);
/* Can a request of `mode` be granted beside r's holders (queue aside)? */
int lock_compatible(const struct lock_rec *r, uint8_t mode);
/* The first hold of name with a fence above `after`, in fence order:
 * *found, its fence in *fence and its record in *h. */
int hold_next(struct apply_ctx *c, const char *name, size_t len, uint64_t after,
              uint64_t *fence, struct hold_rec *h, int *found);
/* Make (session, waiter) a holder of name (*r) in `mode`, with a new fence
 * (*fence) and lock_delay_ms, and record the hold in owned. The caller
 * saves *r. */
int hold_add(struct apply_ctx *c, const char *name, size_t len, struct lock_rec *r,
             uint64_t session, uint64_t waiter, uint8_t mode, int32_t lock_delay_ms,
             uint64_t *fence);
/* Take the waiter enqueued as `enq` out of name's queue (n_waiters - 1 in
 * *r, which the caller saves). */
int queue_remove(struct apply_ctx *c, const char *name, size_t len, uint64_t enq,
                 struct lock_rec *r);
/* The head of name's queue: *found, its enq and record. */
int queue_head(struct apply_ctx *c, const char *name, size_t len, uint64_t *enq,
               struct waiter_rec *w, int *found);
/* Start a lock-delay of delay_ms on name, begun by the hold (session,
 * waiter, fence): FX_LOCK_DELAY, and *r saved delayed. */
int lock_delay_start(struct apply_ctx *c, const char *name, size_t len, struct lock_rec *r,
                     uint64_t session, uint64_t waiter, uint64_t fence, int32_t delay_ms);

/* ---- multi.c: atomic multi-locks (format 8) ----------------------------- */

#define MULTI_MAX BATON_MAX_MANY
/* The names of one multi-lock, copied out of its DB_MULTI record. */
struct multi_names {
    unsigned n;
    uint16_t len[MULTI_MAX];
    const char *name[MULTI_MAX]; /* into buf */
    char buf[MULTI_MAX * BATON_MAX_NAME];
};
/* The names of the multi-lock (session, waiter): 0, or MDB_CORRUPTED (no
 * record, or one that does not decode) or LMDB's error, m->n then 0. */
int multi_get(struct apply_ctx *c, uint64_t session, uint64_t waiter, struct multi_names *m);
/* Is v a well-formed DB_MULTI value (2..MULTI_MAX distinct lock names)? */
int multi_value_ok(const void *v, size_t vlen);

/* ACQUIRE_MANY (cmd.h): all the names at once or none. */
int op_acquire_many(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res);
/* grant_waiting (locks.c) found the multi-lock w, enqueued as enq, at the
 * head of name's queue and compatible with *r: grant it on every name if
 * it heads each queue and fits there (*granted), else change nothing. *r
 * is name's record in the caller's hands; the other names are saved here
 * and queued for regrant_drain. */
int multi_try_grant(struct apply_ctx *c, const char *name, size_t len, struct lock_rec *r,
                    const struct waiter_rec *w, uint64_t enq, int *granted);
/* RELEASE of a multi-lock's hold (session, waiter, fence): every name. */
int multi_release(struct apply_ctx *c, uint64_t session, uint64_t waiter, uint64_t fence);
/* End a multi-lock's wait, described by its owned entry o, with status:
 * FX_WAIT_FAILED, the cached result, every queue entry. */
int multi_wait_end(struct apply_ctx *c, uint64_t session, uint64_t waiter,
                   const struct owned_rec *o, int32_t status);
/* The session is going away (locks_drop_owned's twin for a multi-lock). */
int multi_drop_owned(struct apply_ctx *c, uint64_t session, uint64_t waiter,
                     const struct owned_rec *o, int32_t lost_status, int expiry);
/* A forced release took the multi-lock hold h (of fence) found on name,
 * whose record *r the caller holds and saves: every other name loses it
 * too, delayed by delay_ms (> 0) or handed on; FX_LOST and the lost record
 * name the multi-lock by its first name. */
int multi_force(struct apply_ctx *c, const char *name, size_t len, struct lock_rec *r,
                uint64_t fence, const struct hold_rec *h, int32_t delay_ms);
/* Queue name for regrant_drain: its queue head may be grantable. */
int regrant_push(struct apply_ctx *c, const char *name, size_t len);
/* Run locks_regrant on every queued name, until none is left. */
int regrant_drain(struct apply_ctx *c);

/* ---- level.c ------------------------------------------------------------ */

int op_set_level(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res);

/* ---- values.c ------------------------------------------------------------- */

/* The value of the hold or wait (session, waiter): set (len 0 deletes),
 * deleted, read (*v empty if none; v points into the map for txn's life). */
int value_put(struct apply_ctx *c, uint64_t session, uint64_t waiter, const uint8_t *v,
              size_t len);
int value_del(struct apply_ctx *c, uint64_t session, uint64_t waiter);
int value_read(store *s, MDB_txn *txn, uint64_t session, uint64_t waiter, MDB_val *v);
int op_set_value(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res);

/* ---- members.c ---------------------------------------------------------- */

int op_set_member_addr(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res);
/* Put member id's client address into the members table in txn, outside
 * any command (a backup's restore, snapshot.c); an id of 0 or an address
 * the table may not hold is left out. */
int member_put(store *s, MDB_txn *txn, uint32_t id, const char *addr);

/*
 * A session is going away: drop one thing it owns without touching the
 * session record. A wait leaves its queue silently, granting nobody (the
 * caller calls locks_regrant once the session's entries are all gone, so
 * that nothing is granted to the dying session); a hold is released,
 * preceded by FX_LOST(lost_status) when lost_status is non-zero (expiry).
 * The released lock goes to the next waiter, unless `expiry` is set and the
 * hold has a lock-delay: then the lock becomes delayed (FX_LOCK_DELAY) and
 * nobody gets it until DELAY_END.
 */
/* After locks_drop_owned dropped waits: grant name's queue head(s) if
 * they may now be granted (nothing if the lock is gone). */
int locks_regrant(struct apply_ctx *c, const char *name, size_t len);
int locks_drop_owned(struct apply_ctx *c, uint64_t session, uint64_t waiter,
                     const struct owned_rec *o, int32_t lost_status, int expiry);

#endif /* BATON_STORAGE_STORE_INT_H */
