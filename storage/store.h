/*
 * store.h -- the lock state machine over LMDB (docs/design.md, "The state machine").
 *
 * Deterministic: given the same entries it yields the same state and the same
 * effects on every node. It reads no clock, no randomness, and knows nothing
 * of raft, sockets or libuv. Everything runs on the caller's thread (batond's
 * loop thread); a store must not be used from two threads at once.
 *
 * One LMDB environment in `dir` (opened MDB_NOSYNC: the raft log is the
 * durable source, see docs/libraft-0.15.md, "LMDB under raft: durability";
 * and MDB_WRITEMAP, with
 * the data file allocated on disk as far as the map reaches, 8 MiB at first,
 * grown when full by store_next_growth: doubled up to 64 MiB, then 64 MiB at
 * a time) with named databases:
 *
 *   meta      "applied", "digest", "next_session", "next_fence", "next_enq",
 *             "format", "boot_id", "clean"
 *   sessions  be64 session                      -> ttl_ms, created index, n_owned,
 *                                                  ack floor (highest ack_below seen), owner
 *                                                  (the principal that opened it), client name
 *   locks     name                              -> n_holders, mode, limit, n_waiters,
 *                                                  lock_delay_ms, delayed
 *   holders   name \0 be64 fence                -> session, waiter, granted index,
 *                                                  lock_delay_ms, mode, count (handles)
 *   waiters   name \0 be64 enq                  -> session, waiter, wait_ms, lock_delay_ms, mode
 *   owned     be64 session, be64 waiter         -> kind (hold|wait), enq (a hold: its
 *                                                  fence), name
 *   session_locks  be64 session, name          -> how many holds and waits it has there
 *   dedup     be64 session, be64 seq            -> cached struct cmd_result
 *   members   be32 member id                    -> client address (cmd.h, SET_MEMBER_ADDR)
 *   lost      be64 session, be64 fence          -> waiter, status, lock name (below)
 *   nonces    be64 nonce, owner                 -> session opened with that nonce
 *   session_nonces  be64 session                -> its nonce (the way back, for its end)
 *
 * The dedup table holds the result of each request of a client's session
 * (ACQUIRE, RELEASE, CANCEL, CLOSE_SESSION) until the client acknowledges
 * it: the requests carry ack_below and a keep list (cmd.h), every result
 * below ack_below that the list does not keep is dropped, and the session
 * remembers the highest ack_below (its ack floor) to refuse stale
 * duplicates (apply.c). A session's cache thus holds its unanswered
 * requests and its kept queued ACQUIREs (at most CMD_MAX_KEEP below the
 * floor), however long one of them waits; and a request that runs
 * STORE_MAX_CACHED_PER_SESSION or more above the floor is refused unless
 * it frees a hold or wait (apply.c, step 6), so that a client that never
 * acknowledges cannot grow the table without bound. The nonces databases map a live
 * session's OPEN_SESSION nonce to it, so that a re-sent OPEN_SESSION finds
 * it (storage/nonces.c); both lose the session's entries when it ends.
 *
 * A session's owner is the principal its OPEN_SESSION carried (cmd.h,
 * CMD_OPEN_OWNED): "" for the anonymous principal of a cluster without
 * authentication, and for every session of a store or snapshot written
 * before owners existed. It is replicated state, so that whichever node
 * leads can refuse a request that names another principal's session; the
 * store itself never compares owners.
 *
 * Lock state is keyed by (session, waiter): one session may hold or wait for
 * many locks, and several of its waiters may queue for the same lock (several
 * threads sharing one client), so a lock is held by a (session, waiter) pair
 * identified by its fence.
 *
 * Lost holds (format 6). A hold taken from a session that lives on -- a
 * forced release, FORCE_RELEASE2 -- leaves a record in the lost table:
 * (session, fence) -> the waiter that won the hold, why it was lost
 * (BATON_ELOST) and the lock's name. The LOST push that the leader sends
 * may never arrive (no connection, a leader change), so the record stays
 * until the client acknowledges it -- a RELEASE of that fence and name,
 * which answers BATON_ELOST instead of BATON_ENOTHELD -- or the session
 * ends. The leader reports how many a session has in every keepalive reply
 * (store_lost_count) and lists them (store_lost_list), so the client
 * learns of every loss within a keepalive interval. A record keeps the
 * slot of its hold in the session's count of holds and waits, so a session
 * has at most STORE_MAX_OWNED_PER_SESSION holds, waits and unacknowledged
 * lost holds together (storage/lost.c).
 *
 * Lock-delay (cmd.h): when a session expires, each of its holds that
 * carries a lock-delay leaves its lock free but delayed, granted to nobody
 * until the leader's DELAY_END; so does a forced release that waits out
 * the holder's lease (FORCE_RELEASE2). The leader learns of it from
 * FX_LOCK_DELAY and, after an election, from store_foreach_delayed_lock.
 *
 * State digest: a u64 that summarises every entry the store has applied,
 * so that two nodes can tell cheaply whether they applied the same log.
 * It starts at 0 in a new store, and every store_apply that advances the
 * applied index (an empty entry included) replaces it with
 *
 *     digest = FNV-1a-64(le64(digest) || le64(index) || payload)
 *
 * where payload is the data[0..len) given to store_apply, and FNV-1a-64
 * starts from the offset basis 0xcbf29ce484222325 and, for each byte b,
 * does h ^= b; h *= 0x100000001b3 (mod 2^64). An entry skipped because its
 * index is not above the applied index leaves it alone. The digest is part
 * of the replicated state: it is kept in the same transaction as the
 * applied index, carried by snapshots and set by store_restore. Two nodes
 * at the same applied index with different digests have diverged. It is a
 * checksum for spotting accidents, not a cryptographic hash.
 *
 * The members table is inside the digest, as everything the store holds
 * is: the digest chains the bytes of every applied entry, SET_MEMBER_ADDR
 * commands included. That is wanted: the table decides where every node
 * sends clients, so a node whose table had diverged would misroute them,
 * and must show up as diverged. The raft configuration itself (which
 * servers are members) never reaches the store -- configuration entries
 * are not given to apply -- and is not in the digest; raft keeps it
 * consistent.
 *
 * Content hash: what the digest cannot see. The digest follows the entries,
 * so a store whose files changed behind LMDB's back (bit rot, a stray write
 * through the writable map) keeps a digest that matches its peers'. The
 * content hash is computed from what the store holds:
 *
 *     content hash = FNV-1a-64(the bytes store_snapshot gives now)
 *
 * (1 instead, in the unlikely case that is 0), with the FNV-1a-64 of the
 * digest above. The snapshot's bytes are deterministic and hold the
 * applied index and the digest in their header, so two stores with the
 * same state at the same index give the same hash, and a change of any
 * single byte of a key or value gives another one: the running FNV values
 * part at that byte ((h ^ b) * prime differs for two b, the prime being
 * odd), and every later step, a bijection of the running value for a
 * given byte, keeps them apart (only the 0-to-1 substitution could meet
 * them, a chance of 2^-64). Larger changes go unseen with a chance of
 * about 2^-64. A checksum for accidents, like the digest: a writer that
 * means harm and can write data.mdb can do worse than fool it. Each node
 * computes it when it applies a CHECK (cmd.h, "Content checks"), at the
 * same index as every other node, and keeps the last one in memory
 * (store_last_check).
 */
#ifndef BATON_STORAGE_STORE_H
#define BATON_STORAGE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/errmsg.h"
#include "storage/cmd.h"

/* Limits enforced in apply (results carry BATON_ELIMIT). */
#define STORE_MAX_OWNED_PER_SESSION 10000   /* holds + waits + lost holds of one session */
#define STORE_MAX_SESSIONS 200000
/* A client command of a session runs only if its seq is below the
 * session's ack floor plus this (apply.c, step 6), so that a session holds
 * at most this many cached results above its floor, plus the results of
 * the RELEASEs and CANCELs that freed a hold or wait beyond it (each took
 * one of the session's STORE_MAX_OWNED_PER_SESSION slots) and its kept
 * ones below the floor (CMD_MAX_KEEP). */
#define STORE_MAX_CACHED_PER_SESSION BATON_MAX_UNACKED
/* The cluster feature level from which step 6 holds (storage/cmd_table.h,
 * level): a binary before it applies every command whatever its seq, so
 * the rule starts at the same entry on every node -- once the cluster's
 * level is raised, which waits for every voter to run a binary that has
 * it. */
#define STORE_LEVEL_CACHED_BOUND 2
/* The feature level from which holds and waits carry values and an
 * ACQUIRE may carry flags (cmd.h, "Values and owners"): below it the
 * store's snapshots keep the format before values (store_int.h). */
#define STORE_LEVEL_VALUES 3
#define STORE_MAX_SNAPS 2           /* snapshots open at once: raft's and a backup's */

typedef struct store store;

/*
 * Open (creating if needed) the store in directory `dir`, which must exist.
 * If the previous run of this data directory did not shut down cleanly and
 * the machine rebooted since (boot id changed), the LMDB files cannot be
 * trusted after MDB_NOSYNC and are deleted and recreated empty: raft's
 * snapshot and log replay rebuild them. A store an older batond left in
 * format 3, 4, 5 or 6 is upgraded to format 7 in one write transaction (the
 * sessions of formats 3 and 4 get the anonymous owner, the lost table
 * starts empty and no session of an older format has a nonce;
 * store_int.h, STORE_FORMAT); any other format fails with
 * BATON_EIO. Returns 0, BATON_EIO, BATON_ENOMEM
 * or BATON_ENOSPC (the data file's map could not be allocated on disk); on
 * error *out is NULL and errmsg (if not NULL, BATON_ERRMSG_SIZE bytes,
 * proto/errmsg.h) says why.
 */
int store_open(const char *dir, store **out, char *errmsg);

/* Sync, mark the shutdown clean, close. NULL-safe. */
void store_close(store *s);

/* Index of the last entry applied (0 for a new store). */
uint64_t store_applied_index(store *s);

/* The applied index of the last snapshot store_restore installed since
 * the store was opened, 0 if none: the state jumped there without the
 * entries between being applied one by one (a change history kept from
 * the applied entries, server/history.c, has a hole up to it). */
uint64_t store_restored_index(store *s);

/* The state digest at the applied index (see the top of this file; 0 for a
 * new store). */
uint64_t store_digest(store *s);

/* The cluster's committed feature level (storage/cmd_table.h, level): 1
 * until a SET_LEVEL raised it; it never falls. One read transaction. */
uint32_t store_level(store *s);

/*
 * The content hash of the state as it is now (see the top of this file):
 * one read transaction, the whole state serialised in memory as
 * store_snapshot does, then hashed, all on the caller's thread. Returns 0
 * with *hash set (never 0), or BATON_EIO / BATON_ENOMEM with *hash 0.
 */
int store_content_hash(store *s, uint64_t *hash);

/*
 * The last CHECK (cmd.h) this store applied since it was opened: *index is
 * its entry's index (0: none yet) and *hash the content hash of the state
 * right after that entry, computed by store_apply once the entry had
 * committed, or 0 if it could not be computed (BATON_EIO, BATON_ENOMEM).
 * Kept in memory only; an entry skipped because it was applied before
 * (index not above the applied index: raft's replay at start) computes
 * nothing.
 */
void store_last_check(store *s, uint64_t *index, uint64_t *hash);

/* Force the LMDB files to disk (mdb_env_sync(force)). 0 or BATON_EIO. */
int store_sync(store *s);

/*
 * How many bytes of disk the next growth of the map will allocate: the map
 * doubles while it is below STORE_GROW_MAX (64 MiB) and then grows by
 * STORE_GROW_MAX at a time, so that growing never needs more than 64 MiB
 * free (a doubling from 512 MiB would need 512 MiB). batond refuses new
 * state while the disk has less than its floor plus this free
 * (server/disk.c), so that the store's growth does not fail under an entry
 * raft has already committed.
 */
size_t store_next_growth(store *s);

/*
 * Apply the batch encoded in data[0..len) as raft entry `index`, in one
 * write transaction that also records index as applied and advances the
 * state digest over (index, data[0..len)). If the batch has a CHECK, the
 * content hash is then computed (store_last_check): this call then costs
 * a pass over the whole state. effects_reset(out)
 * is called first; on return out->results has one result per command and
 * out->fx the effects, in order.
 *
 * If index <= store_applied_index(s) the entry was applied before (raft
 * replays the log on restart): nothing changes, out is left empty and 0 is
 * returned. An empty entry (len 0) applies nothing but advances the
 * applied index and the digest. A batch this binary cannot decode (an
 * unknown type byte, another format, bad fields: cmd_batch_why says which)
 * returns BATON_EMALFORMED and changes nothing, the applied index and the
 * digest included: the caller must not go on past it.
 * Returns BATON_EIO/BATON_ENOMEM/BATON_ENOSPC on a local failure
 * (disk, memory, no room on disk to grow the map), in which case nothing was
 * changed.
 */
int store_apply(store *s, uint64_t index, const void *data, size_t len, struct effects *out);

/*
 * Serialise the whole state (applied index and digest included) into out
 * (appended). Format 7: u32 magic "BTN1", u32 format, u64 applied_index,
 * u64 digest, then for each database in a fixed order (meta, sessions,
 * locks, waiters, owned, dedup, members, lost, nonces, session_nonces,
 * holders, session_locks):
 * u32 count and count x {u32 klen,
 * key, u32 vlen, val} in key order, values as stored (storage/store_int.h
 * gives the records). Two stores with equal state produce equal bytes.
 * Returns 0, BATON_EIO or BATON_ENOMEM.
 */
int store_snapshot(store *s, struct buf *out);

/*
 * store_snapshot in three steps, so that the dump -- the whole state, tens
 * of MB for 100,000 locks -- can run on another thread while the caller's
 * thread goes on applying entries (batond's raft snapshots, raft/fsm_snap.c):
 *
 *   store_snapshot_begin  caller's thread: opens a read transaction, which
 *                         sees the state as it is now whatever is applied
 *                         later (LMDB's MVCC), and records its applied
 *                         index (store_snap_applied);
 *   store_snapshot_write  any one thread, once: forces the data file to
 *                         disk (fdatasync, before it takes the snapshot's
 *                         transaction: a growth never waits for it), then
 *                         appends to out the bytes store_snapshot would
 *                         have given at begin;
 *   store_snapshot_end    caller's thread: closes the transaction, frees.
 *
 * At most STORE_MAX_SNAPS at a time per store (raft's, and a backup's:
 * server/backup.c). The store may be used meanwhile, with one
 * exception that it handles itself: growing the map (on a full map during
 * an apply) needs no transaction open in the process, so it first stops
 * the snapshot -- a write in progress gives up within a few records and
 * returns BATON_ECANCELED, one not started yet returns it at once -- and
 * the apply goes on. End a snapshot before store_close (which ends one
 * still open).
 *
 * begin returns 0, BATON_EBUSY (STORE_MAX_SNAPS are open), BATON_EIO or
 * BATON_ENOMEM;
 * write returns 0, BATON_ECANCELED, BATON_EIO or BATON_ENOMEM (out is then
 * as it was). end is NULL-safe.
 */
typedef struct store_snap store_snap;
int store_snapshot_begin(store *s, store_snap **out);
uint64_t store_snap_applied(const store_snap *sn);
int store_snapshot_write(store_snap *sn, struct buf *out);
void store_snapshot_end(store_snap *sn);

/*
 * Replace the state with a snapshot if the snapshot's applied index is
 * greater than the store's (the digest becomes the snapshot's); otherwise
 * do nothing and return 0. A format 6 snapshot (no holders or
 * session_locks databases; locks, waiters and owned holds in format 6's
 * layout) is restored and upgraded as store_open upgrades a store
 * (modes.c). A format 5 snapshot (no lost table, no nonce
 * databases) is restored with them empty; a format 4 one (also session
 * records without the owner) with every session owned by the anonymous
 * principal "", and a format 3 one (the same without the members database)
 * also with an empty members table: the result is the format 6 state a
 * store that applied the same entries holds. A snapshot of any other
 * format is malformed.
 * Returns 0, BATON_EMALFORMED (nothing changed) or BATON_EIO.
 */
int store_restore(store *s, const void *data, size_t len);

/*
 * Read the header of a snapshot (the format store_snapshot gives) without
 * a store: its format, applied index and digest. 0, or BATON_EMALFORMED
 * (too short, not a snapshot, a format store_restore refuses). Checks the
 * header only: store_restore checks the rest.
 */
int store_snapshot_header(const void *data, size_t len, uint32_t *format, uint64_t *applied,
                          uint64_t *digest);

/* A member of the new cluster a backup is restored into: its id and
 * client address (store_restore_backup). */
struct store_member {
    uint32_t id;
    const char *client_addr;
};

/*
 * Initialise an empty store (applied index 0: just created) from a
 * snapshot another cluster's store gave (a backup; batond --restore,
 * docs/operations.md, "Backup and restore"): as store_restore, but the
 * applied index becomes `applied` whatever the snapshot's (the new
 * cluster's raft snapshot index, where its log resumes), and the members
 * table holds members[0..n_members) instead of the snapshot's (the old
 * cluster's client addresses): the new cluster's --cluster list, each
 * member recorded as started, since every node restored holds the state
 * and never bootstraps (docs/design.md, "A node that lost its data
 * directory"); a member without a valid client address is left out. Everything else -- sessions,
 * locks, queues, lock-delays, lost holds, nonces, the dedup cache, the
 * session and enqueue counters, the digest -- is the snapshot's, but for
 * the next fence: the snapshot's plus STORE_RESTORE_FENCE_MARGIN, or
 * fence_floor if that is higher (*next_fence, if not NULL, says which).
 * The old cluster may have granted fences after the backup was taken, and
 * a lock restored may be granted again: every fence the new cluster grants
 * must be above every fence the old one did (docs/operations.md, "Backup
 * and restore", says why the margin is enough and when to raise the
 * floor). Returns 0, BATON_EMALFORMED (nothing changed), BATON_EINVAL (the
 * store is not empty, or applied is 0) or BATON_EIO.
 */
#define STORE_RESTORE_FENCE_MARGIN (1ull << 40)
int store_restore_backup(store *s, const void *data, size_t len, uint64_t applied,
                         uint64_t fence_floor, const struct store_member *members,
                         unsigned n_members, uint64_t *next_fence);

/* ---- reads for the admin requests (short read transactions) ---------- */

/*
 * Fill *info for lock `name`: its mode, limit, the first holder's fields,
 * up to max_list holders (fence order) and max_list waiters (queue order,
 * each with its mode) in malloc'd arrays owned by the caller: release
 * them with store_lock_info_free. info->lock is left unset. A lock that
 * nobody holds or waits for gives held = 0, limit 0 and empty lists (not an
 * error). A delayed lock gives delayed = 1 and its holders (if any: the
 * other holders of a shared lock or semaphore) and queue.
 * Returns 0, BATON_EIO, BATON_ENOMEM.
 */
int store_lock_info(store *s, const char *name, size_t name_len, uint32_t max_list,
                    struct msg_lock_info_r *info);
/* Free the lists store_lock_info filled in (NULL-safe lists; idempotent). */
void store_lock_info_free(struct msg_lock_info_r *info);

/*
 * Fill *st with lock `name`'s whole state for a reader (LOCK_STATE_R,
 * WATCH2_EVENT; storage/lockstate.c): the applied index it is as of
 * (revision), mode, limit, delay, and its holders (fence order) then its
 * waiters (queue order), each with its session's client name and its
 * value, as many as take at most `budget` bytes on the wire (and
 * BATON_MAX_LIST each); the totals count them all. st->lock is set to
 * name (borrowed); everything else st points to lives in *mem, owned by
 * the caller until store_lock_state_free(mem). A lock nobody holds or
 * waits for gives held 0, limit 0 and empty lists (not an error).
 * Returns 0, BATON_EINVAL (not a lock name), BATON_EIO, BATON_ENOMEM;
 * on error *mem holds nothing.
 */
struct lock_state_mem {
    struct msg_holder_v *holders;
    struct msg_waiter_v *waiters;
    struct buf arena;       /* the client names and values */
};
int store_lock_state(store *s, const char *name, size_t name_len, size_t budget,
                     struct msg_lock_state *st, struct lock_state_mem *mem);
void store_lock_state_free(struct lock_state_mem *mem); /* idempotent */

/*
 * Locks whose name starts with prefix, in name order, at most `limit`:
 * calls cb(data, name, name_len, sum) for each, sum giving its first
 * holder (session 0 and fence 0 if none: a lock that is only wanted or
 * delayed), its number of holders and waiters, mode and limit (sum->name
 * is unset; name and sum are borrowed for the call only) and sets *more to
 * 1 if more matched. Returns 0, BATON_EIO, or cb's non-zero return.
 */
typedef int store_lock_cb(void *data, const char *name, size_t name_len,
                          const struct msg_lock_summary *sum);
int store_list_locks(store *s, const char *prefix, size_t prefix_len, uint32_t limit,
                     store_lock_cb *cb, void *data, int *more);

/*
 * Every waiter with a positive wait_ms, in no particular order:
 * cb(data, session, waiter, wait_ms, name, name_len). Used by a new leader to
 * re-arm wait deadlines. Returns 0, BATON_EIO or cb's non-zero return.
 */
typedef int store_waiter_cb(void *data, uint64_t session, uint64_t waiter, int64_t wait_ms,
                            const char *name, size_t name_len);
int store_foreach_timed_waiter(store *s, store_waiter_cb *cb, void *data);

/*
 * Every delayed lock, in name order: cb(data, name, name_len, lock_delay_ms)
 * with the full delay (> 0) of the expired hold that started it; name is
 * borrowed for the call only. Used by a new leader to re-arm the delay
 * timers, which then run for the full delay again (the store keeps no
 * time). Walks the whole locks table. Returns 0, BATON_EIO or cb's non-zero
 * return.
 */
typedef int store_delayed_cb(void *data, const char *name, size_t name_len,
                             int32_t lock_delay_ms);
int store_foreach_delayed_lock(store *s, store_delayed_cb *cb, void *data);

/*
 * Every session, in id order: cb(data, session, ttl_ms, owner, owner_len),
 * owner being the principal that opened it (0..BATON_MAX_PRINCIPAL bytes,
 * "" for the anonymous one; not NUL-terminated, borrowed for the call
 * only). Used by a new leader to give every session a fresh lease and
 * learn whose it is. Returns 0, BATON_EIO (including a corrupted record)
 * or cb's non-zero return.
 */
typedef int store_session_cb(void *data, uint64_t session, uint32_t ttl_ms, const char *owner,
                             size_t owner_len);
int store_foreach_session(store *s, store_session_cb *cb, void *data);

/*
 * Sessions whose id is above `after`, in id order, at most `limit` (0
 * lists none): calls cb(data, session, ttl_ms, created_index, client_name,
 * client_name_len, owner, owner_len, n_holds, n_waits) for each, and sets
 * *more to 1 if a session with a higher id exists beyond the last one
 * listed (also when the page ended at STORE_LIST_WALK_MAX, below).
 * created_index is the raft index of the session's OPEN_SESSION;
 * owner the principal that opened it ("" for the anonymous one); n_holds
 * and n_waits count the locks it holds and the ACQUIREs it has queued,
 * read from the owned table (so the call costs one range scan per session
 * listed, at most STORE_MAX_OWNED_PER_SESSION records each). client_name
 * and owner are borrowed for the call only. Runs in one short read
 * transaction on the caller's thread. Returns 0, BATON_EIO (including a
 * corrupted record), or cb's non-zero return.
 */
typedef int store_session_info_cb(void *data, uint64_t session, uint32_t ttl_ms,
                                  uint64_t created_index, const char *client_name,
                                  size_t client_name_len, const char *owner, size_t owner_len,
                                  uint32_t n_holds, uint32_t n_waits);
int store_list_sessions(store *s, uint64_t after, uint32_t limit, store_session_info_cb *cb,
                        void *data, int *more);

/*
 * A listing's cost is bounded by its reply: a page of store_list_sessions
 * or store_session_summaries also ends once it has walked this many
 * records (each session, and each hold and wait counted for it), with
 * *more set, so that a page of sessions holding 10,000 locks each does not
 * walk millions of records in one call.
 */
#define STORE_LIST_WALK_MAX 65536

/*
 * The summaries of the sessions ids[0..n_ids), in that order, as
 * store_list_sessions gives them; an id that is not a session is skipped.
 * Stops early once STORE_LIST_WALK_MAX records were walked: *done is how
 * many ids were looked at (the caller asks again from ids[*done]). One
 * short read transaction. Returns 0, BATON_EIO or cb's non-zero return.
 */
int store_session_summaries(store *s, const uint64_t *ids, size_t n_ids,
                            store_session_info_cb *cb, void *data, size_t *done);

/*
 * How many lost holds (see "Lost holds" above) session has, counted up to
 * max, into *n. One short read transaction on the caller's thread; walks
 * at most max records. Returns 0 or BATON_EIO (*n is then 0).
 */
int store_lost_count(store *s, uint64_t session, uint32_t max, uint32_t *n);

/*
 * The lost holds of session whose fence is above `after`, in fence order,
 * at most `limit`: cb(data, waiter, fence, status, name, name_len) for
 * each (name borrowed for the call only), and *more set to 1 if more
 * follow the last one listed. cb returns 0, or a BATON_E* code that stops
 * the walk and is returned. One short read transaction. Returns 0,
 * BATON_EIO (also for a corrupted record) or cb's code.
 */
typedef int store_lost_cb(void *data, uint64_t waiter, uint64_t fence, int32_t status,
                          const char *name, size_t name_len);
int store_lost_list(store *s, uint64_t session, uint64_t after, uint32_t limit,
                    store_lost_cb *cb, void *data, int *more);

/* Does this session exist? 1, 0, or BATON_EIO. */
int store_session_exists(store *s, uint64_t session);

/*
 * Would a client command (a RELEASE, CANCEL or CLOSE_SESSION: kind CLIENT,
 * seq not 0) applied now leave the store no bigger: is it answered by its
 * session's cached result of that seq, or does it free a hold, a wait or
 * a lost record of its session (or end it)? 1 or 0, from the applied
 * state; 0 also on error. The leader lets such commands through while its
 * disk is low (server/disk.c), and refuses the others: each would add a
 * cached result.
 */
int store_cmd_frees(store *s, const struct cmd *cmd);

/*
 * The live session that an OPEN_SESSION with this nonce (non-zero) from
 * this owner opened (storage/nonces.c): 0 with *session set,
 * BATON_ENOTFOUND (none: never opened, or ended; also for nonce 0), or
 * BATON_EIO. Lets the leader answer a re-sent OPEN_SESSION from its
 * applied state.
 */
int store_nonce_session(store *s, uint64_t nonce, const char *owner, size_t owner_len,
                        uint64_t *session);

/*
 * The owner of `session` (the principal that opened it, "" for the
 * anonymous one), copied into out[0..cap) and NUL-terminated; *len (if
 * not NULL) gets its length, which is authoritative: the store keeps an
 * owner as bytes. Returns 0, BATON_ENOTFOUND when there is no such session
 * (out is then ""), BATON_EINVAL when cap is below BATON_MAX_PRINCIPAL + 1,
 * or BATON_EIO (also for a corrupted record). One short read transaction
 * on the caller's thread.
 */
int store_session_owner(store *s, uint64_t session, char *out, size_t cap, size_t *len);

/*
 * The client address the members table holds for member `id` (set by
 * SET_MEMBER_ADDR), copied NUL-terminated into out[0..cap). Returns 1 when
 * there is one, 0 when there is none (out is then ""), BATON_EINVAL when
 * cap is below BATON_MAX_ADDR + 1, or BATON_EIO (also for a corrupted
 * record). One short read transaction on the caller's thread.
 */
int store_member_addr(store *s, uint32_t id, char *out, size_t cap);

/*
 * The ids the members table holds an address for, in numeric order, into
 * ids[0..max). Returns how many there are (more than max: only max were
 * copied) or BATON_EIO. One short read transaction on the caller's thread.
 */
int store_member_ids(store *s, uint32_t *ids, int max);

#endif /* BATON_STORAGE_STORE_H */
