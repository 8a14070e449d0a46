/*
 * msg_table.h -- every message of baton's wire protocol, described once.
 *
 * One row per message type. From these rows come the message numbers
 * (enum msg_type in msg.h), the names in logs, what the server checks
 * before it hands a request to its handler (direction, ready leader,
 * role), and the whole codec: proto/msg.c walks a row's field list to
 * encode and to decode the body, so no message has code of its own there.
 *
 * Columns:
 *   name    MSG_<name> in C, "<name>" in logs.
 *   wire    the number on the wire. FROZEN: a number never changes and is
 *           never reused (tests/unit/test_wire.c fails if one does). A new
 *           message takes the next free number; rows stay in number order.
 *   dir     C2S (a request a client sends) or S2C (a reply or push).
 *   leader  1: only the ready leader serves it (other nodes answer
 *           REDIRECT or NO_LEADER); 0: any node answers. 0 for S2C.
 *   role    what the connection's principal needs to send it:
 *           NONE (anyone, even before authenticating), READ (look at
 *           state), LOCK (hold sessions and locks), ADMIN (operator
 *           commands). NONE for S2C.
 *   session what access control holds the request to: SESSION(m), the
 *           session in body member m, which the principal must have
 *           opened (if the session is known); NONE, it acts on no session
 *           of its own (EXPIRE_SESSION acts on another's, as an admin).
 *           NONE for S2C.
 *   locks   the lock names access control checks against a principal's
 *           prefixes (an admin, or a principal without prefixes, passes):
 *             ONE(m)            the name in body member m
 *             MANY(m, n, v)     the name in m and each v[0..n).name
 *             PREFIX(m)         the prefix in m, which one of the
 *                               principal's prefixes must cover
 *             GIVE_BACK(m)      the name in m is given back by the session
 *                               that holds it or waits for it: owning the
 *                               session suffices, even after the
 *                               principal's prefixes were narrowed
 *             NONE              the request names no lock
 *           NONE for S2C. Both columns must be filled in every row, so a
 *           request cannot be added without saying what it may touch;
 *           tests/unit/test_access.c fails if a request with a session or
 *           a lock field leaves them NONE below ADMIN.
 *   body    the member of struct msg's union that holds the body; its
 *           type is struct msg_<body> (msg.h). Several messages may share
 *           one body type and put different subsets of it on the wire.
 *   fields  the body on the wire, in order, each a member of the body:
 *             U8(m) U32(m) U64(m) I32(m) I64(m)   little-endian integers
 *             I32_MIN(m, min)   an i32 that must be >= min
 *             STR(m, max)       u16 byte count + bytes, at most max bytes
 *             LOCK(m)           a lock name: 1..BATON_MAX_NAME bytes, no NUL
 *             LIST(n, v, max, item)   u32 count n (at most max) then n items
 *                               v[0..n) of struct msg_<item>, each encoded
 *                               by the fields of its row in BATON_MSG_ITEMS
 *
 * Adding a message: a row here, with its access columns (and a struct
 * msg_<body> in msg.h if no existing body fits), a handler in
 * server/dispatch.c's table for a request, and a line in each table of
 * tests/unit/test_wire.c.
 */
#ifndef BATON_PROTO_MSG_TABLE_H
#define BATON_PROTO_MSG_TABLE_H

/* The body of LOCK_INFO_R, which WATCH_EVENT carries too; P is the path
 * of the struct msg_lock_info_r inside the body (empty, or "info."). */
#define BATON_LOCK_INFO_FIELDS(P)                                                              \
    U8(P held) U64(P holder_session) U64(P holder_waiter) U64(P fence) U64(P granted_index)    \
    U8(P mode) U32(P limit) U32(P total_holders)                                               \
    LIST(P n_holders, P holders, BATON_MAX_LIST, holder)                                       \
    U32(P total_waiters) LIST(P n_waiters, P waiters, BATON_MAX_LIST, waiter) U8(P delayed)   \
    LOCK(P lock)

/* The body of LOCK_STATE_R, which WATCH2_EVENT carries too: a lock's
 * state as of raft index `revision`, with each hold's and each waiter's
 * client name and value. P as above. The lists hold as many entries as
 * fit the frame (storage/reads.c, store_lock_state); the totals count
 * them all. */
#define BATON_LOCK_STATE_FIELDS(P)                                                             \
    U64(P revision) U8(P held) U8(P mode) U32(P limit) U8(P delayed)                           \
    U32(P total_holders) LIST(P n_holders, P holders, BATON_MAX_LIST, holder_v)               \
    U32(P total_waiters) LIST(P n_waiters, P waiters, BATON_MAX_LIST, waiter_v)               \
    STR(P lock, BATON_MAX_NAME)

/* What every request of a session that changes lock state (ACQUIRE,
 * RELEASE, CANCEL, CLOSE_SESSION: struct msg_op) starts with: the session,
 * the request's seq, and what the client acknowledges -- ack_below, and
 * the seqs below it whose results it still needs (proto/msg.h). */
#define BATON_OP_FIELDS                                                                        \
    U64(session) U64(seq) U64(ack_below) LIST(n_keep, keep, BATON_MAX_KEEP, seq)

/* clang-format off */
#define BATON_MESSAGES(X)                                                                      \
/*  name             wire dir  leader role  session           locks             body            fields */                                  \
  X(HELLO,            1,  C2S, 0, NONE,  NONE,             NONE,             hello,          U32(version)                                  \
                                                                                             STR(client_name, BATON_MAX_CLIENT_NAME)       \
                                                                                             STR(token, BATON_MAX_TOKEN))                  \
  X(HELLO_OK,         2,  S2C, 0, NONE,  NONE,             NONE,             hello_ok,       U32(version) U32(node_id)                     \
                                                                                             STR(principal, BATON_MAX_PRINCIPAL)           \
                                                                                             U8(role))                                     \
  X(OPEN_SESSION,     3,  C2S, 1, LOCK,  NONE,             NONE,             open_session,   U32(ttl_ms)                                   \
                                                                                             STR(client_name, BATON_MAX_CLIENT_NAME)       \
                                                                                             U64(nonce))                                   \
  X(SESSION,          4,  S2C, 0, NONE,  NONE,             NONE,             session,        U64(session) U32(ttl_ms))                     \
  X(ACQUIRE,          5,  C2S, 1, LOCK,  SESSION(session), ONE(lock),        op,             BATON_OP_FIELDS                               \
                                                                                             I64(wait_ms) LOCK(lock)                       \
                                                                                             I32_MIN(lock_delay_ms, BATON_LOCK_DELAY_NONE) \
                                                                                             U8(mode) U32(limit) U8(reentrant))            \
  X(RELEASE,          6,  C2S, 1, LOCK,  SESSION(session), GIVE_BACK(lock),  op,             BATON_OP_FIELDS                               \
                                                                                             U64(fence) LOCK(lock))                        \
  X(CANCEL,           7,  C2S, 1, LOCK,  SESSION(session), GIVE_BACK(lock),  op,             BATON_OP_FIELDS                               \
                                                                                             U64(waiter) LOCK(lock))                       \
  X(CLOSE_SESSION,    8,  C2S, 1, LOCK,  SESSION(session), NONE,             op,             BATON_OP_FIELDS)                              \
  X(KEEPALIVE,        9,  C2S, 1, LOCK,  SESSION(session), NONE,             keepalive,      U64(session))                                 \
  X(RESULT,          10,  S2C, 0, NONE,  NONE,             NONE,             result,         I32(status) U8(kind) U64(value))              \
  X(GRANTED,         11,  S2C, 0, NONE,  NONE,             NONE,             push,           U64(session) U64(waiter) U64(fence)           \
                                                                                             LOCK(lock))                                   \
  X(WAIT_FAILED,     12,  S2C, 0, NONE,  NONE,             NONE,             push,           U64(session) U64(waiter) I32(status)          \
                                                                                             LOCK(lock))                                   \
  X(STATUS,          13,  C2S, 0, READ,  NONE,             NONE,             none,           )                                             \
  X(STATUS_R,        14,  S2C, 0, NONE,  NONE,             NONE,             status_r,       U32(node_id) U8(role) U32(leader_id)          \
                                                                                             U64(term) U64(last_index)                     \
                                                                                             U64(commit_index) U64(applied_index)          \
                                                                                             LIST(n_members, members,                      \
                                                                                                  BATON_MAX_MEMBERS, member)               \
                                                                                             U64(state_digest) U64(auth_digest)            \
                                                                                             U64(check_index) U64(content_hash)            \
                                                                                             U8(fault_kind) I32(fault)                     \
                                                                                             U64(fault_index))                             \
  X(LOCK_INFO,       15,  C2S, 1, READ,  NONE,             ONE(lock),        lock_info,      LOCK(lock))                                   \
  X(LOCK_INFO_R,     16,  S2C, 0, NONE,  NONE,             NONE,             lock_info_r,    BATON_LOCK_INFO_FIELDS())                     \
  X(LIST_LOCKS,      17,  C2S, 1, READ,  NONE,             PREFIX(prefix),   list_locks,     STR(prefix, BATON_MAX_NAME) U32(limit))       \
  X(LIST_LOCKS_R,    18,  S2C, 0, NONE,  NONE,             NONE,             list_locks_r,   LIST(n, items, BATON_MAX_LIST,                \
                                                                                                  lock_summary) U8(more))                  \
  X(REDIRECT,        19,  S2C, 0, NONE,  NONE,             NONE,             redirect,       U32(leader_id)                                \
                                                                                             STR(client_addr, BATON_MAX_ADDR))             \
  X(NO_LEADER,       20,  S2C, 0, NONE,  NONE,             NONE,             none,           )                                             \
  X(ERROR,           21,  S2C, 0, NONE,  NONE,             NONE,             error,          I32(code)                                     \
                                                                                             STR(message, BATON_MAX_ERRMSG))               \
  X(LOST,            22,  S2C, 0, NONE,  NONE,             NONE,             push,           U64(session) U64(waiter) U64(fence)           \
                                                                                             I32(status) LOCK(lock))                       \
  X(SESSION_EXPIRED, 23,  S2C, 0, NONE,  NONE,             NONE,             session_expired, U64(session))                                \
  X(FORCE_RELEASE,   24,  C2S, 1, ADMIN, NONE,             ONE(lock),        force_release,  U64(fence) U8(flags) LOCK(lock))              \
  X(FORCE_RELEASE_R, 25,  S2C, 0, NONE,  NONE,             NONE,             force_release_r, I32(status) U64(lost_session)                \
                                                                                             U64(lost_fence) U64(new_session)              \
                                                                                             U64(new_fence) U32(delay_ms)                  \
                                                                                             U64(cur_fence))                               \
  X(EXPIRE_SESSION,  26,  C2S, 1, ADMIN, NONE,             NONE,             expire_session, U64(session))                                 \
  X(TRANSFER,        27,  C2S, 1, ADMIN, NONE,             NONE,             transfer,       U32(id))                                      \
  X(TRANSFER_R,      28,  S2C, 0, NONE,  NONE,             NONE,             transfer_r,     U32(leader_id))                               \
  X(LIST_SESSIONS,   29,  C2S, 1, READ,  NONE,             NONE,             list_sessions,  U64(after) U32(limit))                        \
  X(SESSIONS_R,      30,  S2C, 0, NONE,  NONE,             NONE,             sessions_r,     LIST(n, items, BATON_MAX_LIST,                \
                                                                                                  session_summary) U8(more))               \
  X(WATCH,           31,  C2S, 1, READ,  NONE,             ONE(lock),        watch,          LOCK(lock))                                   \
  X(WATCH_EVENT,     32,  S2C, 0, NONE,  NONE,             NONE,             watch_event,    U64(seq) BATON_LOCK_INFO_FIELDS(info.))       \
  X(SNAPSHOT,        33,  C2S, 1, ADMIN, NONE,             NONE,             none,           )                                             \
  X(SNAPSHOT_R,      34,  S2C, 0, NONE,  NONE,             NONE,             snapshot_r,     U64(index))                                   \
  X(MEMBERS,         35,  C2S, 1, ADMIN, NONE,             NONE,             none,           )                                             \
  X(MEMBERS_R,       36,  S2C, 0, NONE,  NONE,             NONE,             members_r,      LIST(n, members, BATON_MAX_MEMBERS,           \
                                                                                                  member_info))                            \
  X(MEMBER_REMOVE,   37,  C2S, 1, ADMIN, NONE,             NONE,             member_remove,  U32(id))                                      \
  X(MEMBER_ADD,      38,  C2S, 1, ADMIN, NONE,             NONE,             member_add,     U32(id) STR(raft_addr, BATON_MAX_ADDR)        \
                                                                                             STR(client_addr, BATON_MAX_ADDR))             \
  X(CHECK,           39,  C2S, 1, ADMIN, NONE,             NONE,             none,           )                                             \
  X(CHECK_R,         40,  S2C, 0, NONE,  NONE,             NONE,             check_r,        U64(index))                                   \
  X(LOST_HOLDS,      41,  C2S, 1, LOCK,  SESSION(session), NONE,             lost_holds,     U64(session) U64(after))                      \
  X(LOST_HOLDS_R,    42,  S2C, 0, NONE,  NONE,             NONE,             lost_holds_r,   LIST(n, items, BATON_MAX_LIST,                \
                                                                                                  lost_hold) U8(more))                     \
  X(METRICS,         43,  C2S, 0, READ,  NONE,             NONE,             none,           )                                             \
  X(METRICS_R,       44,  S2C, 0, NONE,  NONE,             NONE,             metrics_r,      LIST(n, chunks, BATON_MAX_TEXT_CHUNKS,        \
                                                                                                  text_chunk))                             \
  X(SNAPSHOT_SAVE,   45,  C2S, 1, ADMIN, NONE,             NONE,             none,           )                                             \
  X(SNAPSHOT_CHUNK,  46,  S2C, 0, NONE,  NONE,             NONE,             snapshot_chunk, U64(offset) U64(total)                        \
                                                                                             STR(data, BATON_SNAPSHOT_CHUNK_MAX))          \
  X(ACQUIRE_MANY,    47,  C2S, 1, LOCK,  SESSION(session), MANY(lock, n_more, more), op,     BATON_OP_FIELDS                               \
                                                                                             I64(wait_ms) LOCK(lock)                       \
                                                                                             I32_MIN(lock_delay_ms, BATON_LOCK_DELAY_NONE) \
                                                                                             U8(mode) U32(limit) U8(reentrant)             \
                                                                                             LIST(n_more, more, BATON_MAX_MANY - 1,        \
                                                                                                  lock_name))    \
  X(ACQUIRE2,        48,  C2S, 1, LOCK,  SESSION(session), ONE(lock),        op,             BATON_OP_FIELDS                               \
                                                                                             I64(wait_ms) LOCK(lock)                       \
                                                                                             I32_MIN(lock_delay_ms, BATON_LOCK_DELAY_NONE) \
                                                                                             U8(mode) U32(limit) U8(reentrant)             \
                                                                                             U8(flags) U64(fence)                          \
                                                                                             STR(value, BATON_MAX_VALUE))                  \
  X(PROCLAIM,        49,  C2S, 1, LOCK,  SESSION(session), ONE(lock),        op,             BATON_OP_FIELDS                               \
                                                                                             U64(fence) LOCK(lock)                         \
                                                                                             STR(value, BATON_MAX_VALUE))                  \
  X(LOCK_STATE,      50,  C2S, 1, READ,  NONE,             ONE(lock),        lock_info,      LOCK(lock))                                   \
  X(LOCK_STATE_R,    51,  S2C, 0, NONE,  NONE,             NONE,             lock_state,     BATON_LOCK_STATE_FIELDS())                    \
  X(WATCH2,          52,  C2S, 1, READ,  NONE,             PREFIX(key),      watch2,         U8(flags) STR(key, BATON_MAX_NAME)            \
                                                                                             U64(after))                                   \
  X(WATCH2_EVENT,    53,  S2C, 0, NONE,  NONE,             NONE,             watch2_event,   U8(kind) U8(restarted)                        \
                                                                                             BATON_LOCK_STATE_FIELDS(state.))              \
  X(UNWATCH,         54,  C2S, 0, READ,  NONE,             NONE,             unwatch,        U64(watch))

/* The items of the LIST fields above: X(item, fields), the body of one
 * struct msg_<item>. */
#define BATON_MSG_ITEMS(X)                                                                     \
  X(seq,             U64(seq))                                                                 \
  X(member,          U32(id) STR(raft_addr, BATON_MAX_ADDR) STR(client_addr, BATON_MAX_ADDR))  \
  X(member_info,     U32(id) U8(role) STR(raft_addr, BATON_MAX_ADDR)                           \
                     STR(client_addr, BATON_MAX_ADDR))                                         \
  X(waiter,          U64(session) U64(waiter) I64(wait_ms) U8(mode))                           \
  X(holder,          U64(session) U64(waiter) U64(fence) U64(granted_index) U8(mode)           \
                     U32(count))                                                               \
  X(lock_summary,    LOCK(name) U64(holder_session) U64(fence) U32(n_waiters) U8(mode)         \
                     U32(limit) U32(n_holders))                                                \
  X(session_summary, U64(id) U32(ttl_ms) U64(created_index)                                    \
                     STR(client_name, BATON_MAX_CLIENT_NAME) U32(n_holds) U32(n_waits)    \
                     STR(owner, BATON_MAX_PRINCIPAL))                                          \
  X(lost_hold,       U64(waiter) U64(fence) I32(status) LOCK(lock))                            \
  X(text_chunk,      STR(text, BATON_MAX_TEXT_CHUNK))                                         \
  X(lock_name,       LOCK(name))                                                              \
  X(holder_v,        U64(session) U64(waiter) U64(fence) U64(granted_index) U8(mode)           \
                     U32(count) STR(client_name, BATON_MAX_CLIENT_NAME)                        \
                     STR(value, BATON_MAX_VALUE))                                              \
  X(waiter_v,        U64(session) U64(waiter) I64(wait_ms) U8(mode)                            \
                     STR(client_name, BATON_MAX_CLIENT_NAME) STR(value, BATON_MAX_VALUE))
/* clang-format on */

#endif /* BATON_PROTO_MSG_TABLE_H */
