/*
 * cmd_table.h -- every command of the lock state machine, described once.
 *
 * One row per type byte of a command batch (cmd.h has the batch's
 * encoding). From these rows come the command numbers (enum cmd_type in
 * cmd.h), the names in logs (cmd_type_name), what the codec accepts (cmd.c:
 * which bytes are commands, how long a name each carries, what follows the
 * name, which may carry a keep list), which commands apply.c deduplicates,
 * what batond refuses while its disk is low (server/disk.c), and the
 * handler each command is applied by (apply.c calls it through the apply
 * column; no code elsewhere lists the commands).
 *
 * Columns:
 *   name      CMD_<name> in C, "<name>" in logs.
 *   byte      the type byte. FROZEN: it is in every raft log and snapshot
 *             ever written, and a node replays its log after an upgrade,
 *             so a byte never changes and is never reused
 *             (tests/unit/test_cmd.c pins each one and fails if one does).
 *             A new row takes the next free byte, below CMD_KEEP_FLAG;
 *             rows stay in byte order. Byte 0 is no command.
 *   level     the feature level that introduced the row. A binary of level
 *             N (CMD_LEVEL below: the highest level of its rows) decodes
 *             and applies every row of level <= N. A node that meets a byte
 *             it does not know takes the whole batch for malformed and
 *             applies none of it, so a leader may put a row of level N in
 *             the log only once every voter runs a binary of level N or
 *             more. Level 1 is every row of the first binary that states
 *             its level: the binaries before it state none, so no rollout
 *             could tell their rows apart by level (cmd.h says which
 *             client protocol each later row waited for). Every row added
 *             in one release takes the same new level, CMD_LEVEL + 1, and
 *             CMD_LEVEL becomes that level; an encoding-only row gets its
 *             own level too, since an old binary cannot read it either.
 *   kind      who puts it in the log:
 *               OPEN    a client opening a session: deduplicated by its
 *                       nonce (sessions.c, nonces.c), not by seq;
 *               CLIENT  a request of a client's session: deduplicated by
 *                       (session, seq) and may carry the keep list of its
 *                       request (apply.c has the steps);
 *               LEADER  the leader, on its own (a deadline, a lease) or for
 *                       an operator: never deduplicated, its seq ignored,
 *                       harmless to repeat.
 *   grows     1: applying it can make the state bigger (a new session, hold
 *             or wait), so batond refuses it while its disk is low. A
 *             CLIENT row of 0 still leaves its cached result: batond lets
 *             it through a low disk only if it frees more than that
 *             (server/disk.c, store_cmd_frees).
 *   name_max  the most bytes its name field may hold (0: it has none); the
 *             decoder takes a longer one for malformed. Whether the name is
 *             legal is checked when it is applied.
 *   tail      what follows the name in its encoding:
 *               NONE    nothing;
 *               OWNER   str owner, 1..BATON_MAX_PRINCIPAL bytes;
 *               MODES   u8 mode, u32 limit, u8 reentrant, not all three 0;
 *               MANY    u8 mode, u32 limit, u8 reentrant, u8 n_more
 *                       (1..BATON_MAX_MANY - 1), then n_more names of
 *                       1..BATON_MAX_NAME bytes each;
 *               EXT     u8 mode, u32 limit, u8 reentrant, u8 flags, str value
 *                       (0..CMD_MAX_VALUE bytes), flags and value not both
 *                       0 and empty;
 *               VALUE   str value, 0..CMD_MAX_VALUE bytes;
 *             then, if the type byte has CMD_KEEP_FLAG (CLIENT rows only),
 *             the keep list.
 *   is        the command it decodes to: its own name, or, for an
 *             ENCODING-ONLY row, the command it is another encoding of. An
 *             encoding-only row exists so that the commands without its
 *             tail keep the bytes older binaries read: the encoder picks
 *             it when a command's fields need its tail, the decoder gives
 *             the command back with the type `is`, and no struct cmd ever
 *             has its type. Its kind, grows and name_max are those of `is`.
 *   apply     the handler that applies it (declared in store_int.h), NULL
 *             for an encoding-only row.
 * What each command means, its fields and its results are in the comment
 * after its row (cmd.h and docs/design.md have the longer stories).
 *
 * Adding a command: a row here, its handler, its pin in
 * tests/unit/test_cmd.c (type_bytes_are_frozen), and tests of what it does.
 * A new tail also needs its encoding in cmd.c.
 */
#ifndef BATON_STORAGE_CMD_TABLE_H
#define BATON_STORAGE_CMD_TABLE_H

/* The highest level of the rows below. */
#define CMD_TABLE_LEVEL 3

/* The level this binary supports: CMD_TABLE_LEVEL. A test build may make
 * a binary of a lower level (-DBATON_TEST_MAX_LEVEL=N, the Makefile's
 * $(B)/level1/batond): its codec then knows no row above N, so it
 * behaves as a binary of level N does -- it stops at an entry it cannot
 * decode, and says it runs level N. It can never decode more than a
 * release binary, so it cannot weaken anything. */
#ifdef BATON_TEST_MAX_LEVEL
#define CMD_LEVEL BATON_TEST_MAX_LEVEL
#else
#define CMD_LEVEL CMD_TABLE_LEVEL
#endif

/* Not a row: a bit of the type byte (FROZEN like the bytes, pinned by the
 * same test). Set, it says a keep list follows the command (cmd.h); only
 * a CLIENT row's byte may have it, and a decoded command never does. */
#define CMD_KEEP_FLAG 0x80

/* clang-format off */
#define BATON_CMDS(X)                                                                          \
/*  name            byte level kind   grows name_max               tail   is              apply */ \
  X(OPEN_SESSION,     1,  1,   OPEN,   1,   BATON_MAX_CLIENT_NAME, NONE,  OPEN_SESSION,   op_open_session) \
    /* ttl_ms, name = client name, owner, seq = nonce (0: none) -> OK(session id) */           \
  X(ACQUIRE,          2,  1,   CLIENT, 1,   BATON_MAX_NAME,        NONE,  ACQUIRE,        op_acquire) \
    /* session, seq, wait_ms, lock_delay_ms, name; mode, limit, reentrant (ACQUIRE_MODES)      \
       -> GRANTED(fence) | QUEUED(pos) | EWOULDBLOCK */                                        \
  X(RELEASE,          3,  1,   CLIENT, 0,   BATON_MAX_NAME,        NONE,  RELEASE,        op_release) \
    /* session, seq, fence, name -> OK | ELOST | ENOTHELD */                                   \
  X(CANCEL,           4,  1,   CLIENT, 0,   BATON_MAX_NAME,        NONE,  CANCEL,         op_cancel) \
    /* session, seq, waiter, name -> CANCELLED | GRANTED(fence) | ENOTFOUND */                 \
  X(CLOSE_SESSION,    5,  1,   CLIENT, 0,   0,                     NONE,  CLOSE_SESSION,  op_close_session) \
    /* session, seq -> OK; releases and drops everything the session has */                    \
  X(EXPIRE_SESSION,   6,  1,   LEADER, 0,   0,                     NONE,  EXPIRE_SESSION, op_expire_session) \
    /* session (its lease ran out, or an operator) -> OK | ESESSION */                         \
  X(WAIT_TIMEOUT,     7,  1,   LEADER, 0,   BATON_MAX_NAME,        NONE,  WAIT_TIMEOUT,   op_wait_timeout) \
    /* session, waiter, name (its deadline passed) -> OK; a no-op if no longer waiting */      \
  X(FORCE_RELEASE,    8,  1,   LEADER, 0,   BATON_MAX_NAME,        NONE,  FORCE_RELEASE,  op_force_release) \
    /* name -> OK | ENOTHELD. Only in logs written before FORCE_RELEASE2: no leader proposes   \
       it any more, but it keeps its meaning for the logs that hold it */                      \
  X(DELAY_END,        9,  1,   LEADER, 0,   BATON_MAX_NAME,        NONE,  DELAY_END,      op_delay_end) \
    /* name (its lock-delay passed) -> OK */                                                   \
  X(SET_MEMBER_ADDR, 10,  1,   LEADER, 0,   BATON_MAX_ADDR,        NONE,  SET_MEMBER_ADDR, op_set_member_addr) \
    /* session = member id, name = client address, empty to delete -> OK | EINVAL */          \
  X(OPEN_OWNED,      11,  1,   OPEN,   1,   BATON_MAX_CLIENT_NAME, OWNER, OPEN_SESSION,   NULL) \
    /* encoding only: an OPEN_SESSION with an owner */                                        \
  X(CHECK,           12,  1,   LEADER, 0,   0,                     NONE,  CHECK,          op_check) \
    /* (an operator; no fields) -> OK; every node hashes its state after the entry */         \
  X(FORCE_RELEASE2,  13,  1,   LEADER, 0,   BATON_MAX_NAME,        NONE,  FORCE_RELEASE2, op_force_release2) \
    /* fence (0: any), wait_ms = CMD_FORCE_NOW | CMD_FORCE_AFTER_LEASE, name (an operator)    \
       -> OK(the fence taken) | ENOTHELD(the holder's fence) | EINVAL */                       \
  X(ACQUIRE_MODES,   14,  1,   CLIENT, 1,   BATON_MAX_NAME,        MODES, ACQUIRE,        NULL) \
    /* encoding only: an ACQUIRE with a mode, limit or reentrant flag */                      \
  X(ACQUIRE_MANY,    15,  1,   CLIENT, 1,   BATON_MAX_NAME,        MANY,  ACQUIRE_MANY,   op_acquire_many) \
    /* session, seq, wait_ms, lock_delay_ms, mode, limit, reentrant, name and n_more more     \
       names: an atomic multi-lock -> GRANTED(fence) | QUEUED(pos) | EWOULDBLOCK */           \
  X(SET_LEVEL,       16,  2,   LEADER, 0,   0,                     NONE,  SET_LEVEL,      op_set_level) \
    /* session = the cluster's new feature level (the leader, once every voter runs it)     \
       -> OK(the level after it; never lower than before) | EINVAL */                       \
  X(ACQUIRE_EXT,     17,  3,   CLIENT, 1,   BATON_MAX_NAME,        EXT,   ACQUIRE,        NULL) \
    /* encoding only: an ACQUIRE with flags (CMD_ACQ_*) or a value */                        \
  X(SET_VALUE,       18,  3,   CLIENT, 1,   BATON_MAX_NAME,        VALUE, SET_VALUE,      op_set_value) \
    /* session, seq, fence, name, value (a holder's proclaim) -> OK | ENOTHELD | ELOST */
/* clang-format on */

#endif /* BATON_STORAGE_CMD_TABLE_H */
