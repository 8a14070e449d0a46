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
 * doubled when full) with named databases:
 *
 *   meta      "applied", "digest", "next_session", "next_fence", "next_enq",
 *             "format", "boot_id", "clean"
 *   sessions  be64 session                      -> ttl_ms, created index, n_owned,
 *                                                  ack floor (highest ack_below seen), owner
 *                                                  (the principal that opened it), client name
 *   locks     name                              -> holder session, holder waiter, fence,
 *                                                  granted index, n_waiters, lock_delay_ms,
 *                                                  delayed
 *   waiters   name \0 be64 enq                  -> session, waiter, wait_ms, lock_delay_ms
 *   owned     be64 session, be64 waiter         -> kind (hold|wait), enq, name
 *   dedup     be64 session, be64 seq            -> cached struct cmd_result
 *   members   be32 member id                    -> client address (cmd.h, SET_MEMBER_ADDR)
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
 * floor), however long one of them waits. The nonces databases map a live
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
 * Lock-delay (cmd.h): when a session expires, each of its holds that
 * carries a lock-delay leaves its lock free but delayed, granted to nobody
 * until the leader's DELAY_END; the leader learns of it from FX_LOCK_DELAY
 * and, after an election, from store_foreach_delayed_lock.
 *
 * State digest: a u64 that summarises every entry the store has applied,
 * so that two nodes can tell cheaply whether they applied the same log.
 * It starts at 0 in a new store, and every store_apply that advances the
 * applied index (a malformed batch included) replaces it with
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
 */
#ifndef BATON_STORAGE_STORE_H
#define BATON_STORAGE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/errmsg.h"
#include "storage/cmd.h"

/* Limits enforced in apply (results carry BATON_ELIMIT). */
#define STORE_MAX_OWNED_PER_SESSION 10000   /* holds + waits of one session */
#define STORE_MAX_SESSIONS 200000

typedef struct store store;

/*
 * Open (creating if needed) the store in directory `dir`, which must exist.
 * If the previous run of this data directory did not shut down cleanly and
 * the machine rebooted since (boot id changed), the LMDB files cannot be
 * trusted after MDB_NOSYNC and are deleted and recreated empty: raft's
 * snapshot and log replay rebuild them. A store an older batond left in
 * format 3, 4 or 5 is upgraded to format 6 in one write transaction (the
 * sessions of 3 and 4 get the anonymous owner, and no session of an older
 * format has a nonce; store_int.h, STORE_FORMAT); any other format fails
 * with BATON_EIO. Returns 0, BATON_EIO, BATON_ENOMEM
 * or BATON_ENOSPC (the data file's map could not be allocated on disk); on
 * error *out is NULL and errmsg (if not NULL, BATON_ERRMSG_SIZE bytes,
 * proto/errmsg.h) says why.
 */
int store_open(const char *dir, store **out, char *errmsg);

/* Sync, mark the shutdown clean, close. NULL-safe. */
void store_close(store *s);

/* Index of the last entry applied (0 for a new store). */
uint64_t store_applied_index(store *s);

/* The state digest at the applied index (see the top of this file; 0 for a
 * new store). */
uint64_t store_digest(store *s);

/* Force the LMDB files to disk (mdb_env_sync(force)). 0 or BATON_EIO. */
int store_sync(store *s);

/*
 * Apply the batch encoded in data[0..len) as raft entry `index`, in one
 * write transaction that also records index as applied and advances the
 * state digest over (index, data[0..len)). effects_reset(out)
 * is called first; on return out->results has one result per command and
 * out->fx the effects, in order.
 *
 * If index <= store_applied_index(s) the entry was applied before (raft
 * replays the log on restart): nothing changes, out is left empty and 0 is
 * returned. A malformed batch applies nothing but still advances the applied
 * index and the digest (every node rejects it the same way) and returns 0
 * with out empty.
 * Returns BATON_EIO/BATON_ENOMEM/BATON_ENOSPC only on a local failure
 * (disk, memory, no room on disk to grow the map), in which case nothing was
 * changed.
 */
int store_apply(store *s, uint64_t index, const void *data, size_t len, struct effects *out);

/*
 * Serialise the whole state (applied index and digest included) into out
 * (appended). Format 6: u32 magic "BTN1", u32 format, u64 applied_index,
 * u64 digest, then for each database in a fixed order (meta, sessions,
 * locks, waiters, owned, dedup, members, nonces, session_nonces): u32
 * count and count x {u32 klen,
 * key, u32 vlen, val} in key order, values as stored (storage/store_int.h
 * gives the records). Two stores with equal state produce equal bytes.
 * Returns 0, BATON_EIO or BATON_ENOMEM.
 */
int store_snapshot(store *s, struct buf *out);

/*
 * Replace the state with a snapshot if the snapshot's applied index is
 * greater than the store's (the digest becomes the snapshot's); otherwise
 * do nothing and return 0. A format 5 snapshot (without the two nonce
 * databases) is restored with them empty; a format 4 one (also session
 * records without the owner) with every session owned by the anonymous
 * principal "", and a format 3 one (the same without the members database)
 * also with an empty members table: the result is the format 6 state a
 * store that applied the same entries holds. A snapshot of any other
 * format is malformed.
 * Returns 0, BATON_EMALFORMED (nothing changed) or BATON_EIO.
 */
int store_restore(store *s, const void *data, size_t len);

/* ---- reads for the admin requests (short read transactions) ---------- */

/*
 * Fill *info for lock `name`. info->waiters is malloc'd (at most max_waiters
 * entries, queue order) and owned by the caller: free(info->waiters).
 * info->lock is left unset. A lock that is free and has no waiters gives
 * held = 0 and no waiters (not an error). A delayed lock gives held = 0,
 * delayed = 1, zero holder fields, and its queue (which may be empty).
 * Returns 0, BATON_EIO, BATON_ENOMEM.
 */
int store_lock_info(store *s, const char *name, size_t name_len, uint32_t max_waiters,
                    struct msg_lock_info_r *info);

/*
 * Locks whose name starts with prefix, in name order, at most `limit`:
 * calls cb(data, name, name_len, holder_session, fence, n_waiters) for each
 * (name borrowed for the call only) and sets *more to 1 if more matched.
 * A delayed lock is listed with holder_session 0 and fence 0.
 * Returns 0, BATON_EIO, or cb's non-zero return.
 */
typedef int store_lock_cb(void *data, const char *name, size_t name_len,
                          uint64_t holder_session, uint64_t fence, uint32_t n_waiters);
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
 * listed. created_index is the raft index of the session's OPEN_SESSION;
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

/* Does this session exist? 1, 0, or BATON_EIO. */
int store_session_exists(store *s, uint64_t session);

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

#endif /* BATON_STORAGE_STORE_H */
