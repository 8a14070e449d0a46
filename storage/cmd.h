/*
 * cmd.h -- the commands of the lock state machine, their binary encoding (the
 * payload of one Raft entry is a batch of them), and what applying them
 * yields: one result per command plus a list of effects for the leader to
 * deliver. No I/O, no clock.
 *
 * Batch encoding (little-endian):
 *     u8 format (CMD_FORMAT), u32 count, then count commands:
 *     u8 type, u64 session, u64 seq, u64 ack_below, u32 ttl_ms, i64 wait_ms,
 *     u64 fence, u64 waiter, i32 lock_delay_ms, str name (u16 length + bytes)
 *     and, for type CMD_OPEN_OWNED only, str owner; and, for a type byte
 *     with CMD_KEEP_FLAG set, the keep list: u16 count (1..CMD_MAX_KEEP),
 *     count x u64 seq
 * Every command carries every field (unused ones are zero) so that the
 * format is trivial to validate. Format 1 lacked lock_delay_ms; a batch in
 * any other format than CMD_FORMAT is malformed.
 *
 * What the client acknowledges (proto/msg.h; apply.c has the rules). The
 * commands of a client's session (kind CLIENT in cmd_table.h) carry
 * ack_below and the keep list of their request: the
 * seqs below ack_below whose cached results the client still needs. The
 * keep list, like the owner, is not a field of every command: entries
 * written before it existed must decode to the same commands, and most
 * commands have none. A command with a keep list has CMD_KEEP_FLAG in its
 * type byte and the list after its other fields; one without is encoded
 * exactly as before. The flag is allowed on those (CLIENT) types only and
 * never with an empty list (one encoding per command); a decoded command
 * has the plain type and n_keep > 0. The order and the range of the seqs
 * are checked when the command is applied (a bad list fails that command
 * with BATON_EINVAL), not here.
 *
 * OPEN_SESSION's nonce (proto/msg.h) travels in `seq`, which an
 * OPEN_SESSION never used: 0 (every entry written before nonces existed)
 * means none, so those entries still apply as they always did.
 *
 * Older binaries: a batch with a keep list has a type byte they do not
 * know and is malformed to them; an OPEN_SESSION's nonce they ignore. A
 * cluster must therefore run this binary on every node before clients of
 * protocol 3 (the first to send either) are served.
 *
 * Session owners (CMD_OPEN_OWNED). An OPEN_SESSION records the principal
 * that opened it (struct cmd's owner: 0..BATON_MAX_PRINCIPAL bytes, ""
 * being the anonymous principal of a cluster without authentication). The
 * owner is not a new field of every command, nor a new CMD_FORMAT: raft
 * logs written before owners existed must still decode to the same
 * commands (a node replays its log after an upgrade), and a cluster that
 * has no authentication should keep writing entries that older binaries
 * read, so that its nodes can be upgraded one at a time. So an
 * OPEN_SESSION whose owner is "" is encoded exactly as it always was, and
 * one with an owner travels under its own type byte, CMD_OPEN_OWNED: the
 * same fields followed by str owner (1..BATON_MAX_PRINCIPAL bytes). The
 * codec hides the difference: the encoder picks the type byte from
 * owner_len, and the decoder gives a CMD_OPEN_OWNED back as a
 * CMD_OPEN_SESSION with its owner; no struct cmd ever has the type
 * CMD_OPEN_OWNED. Each command thus has exactly one encoding (an
 * OPEN_OWNED with an empty owner is malformed), which keeps the digest and
 * the fuzzer's re-encoding check meaningful. A binary older than owners
 * finds CMD_OPEN_OWNED an unknown type and takes the whole batch for
 * malformed: authentication, the only source of a non-empty owner, must be
 * turned on only once every node runs a binary that knows it.
 */
#ifndef BATON_STORAGE_CMD_H
#define BATON_STORAGE_CMD_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/msg.h"
#include "storage/cmd_table.h"

#define CMD_FORMAT 2
#define CMD_MAX_BATCH 4096          /* commands per entry */
#define CMD_MAX_KEEP BATON_MAX_KEEP /* seqs in a keep list */

/* The commands, numbered by their frozen type bytes (cmd_table.h). */
enum cmd_type {
#define CMD_ENUM_(name, byte, level, kind, grows, name_max, tail, is, apply) CMD_##name = (byte),
    BATON_CMDS(CMD_ENUM_)
#undef CMD_ENUM_
    CMD_TYPE_MAX_ /* one past the highest byte: the rows are in byte order */
};

/* The columns kind and tail of cmd_table.h. */
enum cmd_kind { CMD_KIND_OPEN = 1, CMD_KIND_CLIENT, CMD_KIND_LEADER };
enum cmd_tail { CMD_TAIL_NONE = 1, CMD_TAIL_OWNER, CMD_TAIL_MODES, CMD_TAIL_MANY, CMD_TAIL_EXT,
                CMD_TAIL_VALUE };

/* The longest value a command carries (cmd.h, "Values"). */
#define CMD_MAX_VALUE BATON_MAX_VALUE

/* An ACQUIRE's flags (ACQUIRE_EXT). */
#define CMD_ACQ_OWNERS 0x01 /* queue even if the session holds or waits for the name
                               (its client tells its owners apart); with reentrant,
                               fence names the session's hold it re-enters, and
                               without, fence is 0 (storage/locks.c, "Owners") */
#define CMD_ACQ_FLAGS_ALL CMD_ACQ_OWNERS

/* One row of cmd_table.h, apply aside (apply.c has that column). */
struct cmd_row {
    const char *name;
    uint8_t byte, level;
    uint8_t kind;       /* enum cmd_kind */
    uint8_t grows;
    uint16_t name_max;
    uint8_t tail;       /* enum cmd_tail */
    uint8_t is;         /* enum cmd_type: the command it decodes to */
};

/* The row of a type byte (without CMD_KEEP_FLAG), or NULL if no row has
 * that byte. */
const struct cmd_row *cmd_lookup(int type);

/*
 * Cluster members' client addresses (SET_MEMBER_ADDR). The leader proposes
 * one before it adds a server to the raft configuration (batonctl member
 * add), so that every node knows where clients reach that server and can
 * redirect them there; and one with an empty address, which deletes the
 * entry, after a removal. `session` carries the member id (1..UINT32_MAX)
 * and `name` the address: a HOST:PORT of the grammar of proto/addr.h
 * (1..BATON_MAX_ADDR bytes), or nothing to delete. Any other id or address
 * fails the command with BATON_EINVAL and changes nothing. The store checks
 * only the syntax; the leader also checks that the host is IPv4, the only
 * kind batond's transports take yet, before proposing (server/config.c).
 * Never deduplicated; repeating it is harmless. No effects.
 */

/*
 * Content checks (CHECK). The state digest (store.h) chains the entries a
 * store applied, not what the store holds: a byte of data.mdb changed
 * behind LMDB's back (bit rot, a stray write through the writable map)
 * leaves it as it was. A CHECK changes nothing, but the store that applies
 * it computes its content hash (store.h, store_content_hash) right after
 * the entry's transaction has committed, and keeps it with the entry's
 * index in memory (store_last_check). Every node applies the entry at the
 * same index, so every node hashes the same state, and hashes that differ
 * show a node whose content differs. The leader proposes a CHECK alone in
 * its entry (batonctl check; server/admin_cmds.c): a binary that predates
 * CHECK takes that batch for malformed and applies nothing, which is what
 * a CHECK does anyway, so mixed binaries stay in step (such a node just
 * reports no hash). Never deduplicated; no effects.
 *
 * Forced releases (FORCE_RELEASE2, an operator's batonctl release --force).
 * The lock is taken from its holder, who is told through a LOST effect and,
 * since that push may never arrive, a record in the lost table that stays
 * until the holder's session acknowledges it (a RELEASE of that fence,
 * answered BATON_ELOST) or ends (store.h, "Lost holds").
 *   fence    0: whoever holds the lock; otherwise the hold must have this
 *            fence, or nothing happens and the result is BATON_ENOTHELD
 *            with value = the current holder's fence (0: nobody holds it),
 *            so a re-sent request can never take the lock from the next
 *            holder.
 *   wait_ms  CMD_FORCE_NOW: the next waiter is granted in the same apply.
 *            CMD_FORCE_AFTER_LEASE: the lock stays free but delayed (the
 *            lock-delay machinery below: FX_LOCK_DELAY, then the leader's
 *            DELAY_END) for the holder session's ttl plus the hold's own
 *            lock-delay. The holder's client counts its lease from before
 *            the release, so by then it has stopped, told or not; the
 *            hold's lock-delay then covers a paused holder, as after an
 *            expiry (docs/design.md, "Forced releases"). Anything else
 *            fails the command with BATON_EINVAL.
 * A delayed lock is not held: forcing it gives BATON_ENOTHELD.
 *
 * FORCE_RELEASE, the command of the binaries before FORCE_RELEASE2, keeps
 * its meaning for the logs that hold it (a node replays its log after an
 * upgrade, and every node must reach the same state): the holder loses the
 * lock with no lost record and the next waiter is granted at once. The
 * leader proposes only FORCE_RELEASE2; a binary that predates it takes a
 * batch holding one for malformed, as with CMD_OPEN_OWNED, so forced
 * releases wait until every node is upgraded.
 */
/*
 * Lock modes (shared, semaphore, reentrant; storage/locks.c has the rules). An ACQUIRE carries
 * a mode (BATON_MODE_EXCLUSIVE, BATON_MODE_SHARED), a limit (0 or 1: an
 * ordinary lock, N > 1: a semaphore of N) and a reentrant flag. As with
 * owners, these are not new fields of every command: an ACQUIRE with all
 * three 0 is encoded exactly as before, and one with any of them set
 * travels under its own type byte, CMD_ACQUIRE_MODES: the same fields,
 * then u8 mode, u32 limit, u8 reentrant, then the keep list if the type
 * byte has CMD_KEEP_FLAG. The decoder gives it back as a CMD_ACQUIRE; a
 * CMD_ACQUIRE_MODES whose three fields are all 0 is malformed (one
 * encoding per command). The values are checked when the command is
 * applied (BATON_EINVAL), not here. A binary older than modes finds the
 * type unknown and the batch malformed: the leader proposes one only for
 * a request of protocol 4, which an upgraded node serves; a cluster must
 * run this binary on every node before clients use modes.
 */
/*
 * Atomic multi-locks (ACQUIRE_MANY; storage/multi.c has the rules). One
 * request for 2..BATON_MAX_MANY distinct names, granted on all of them at
 * once or on none, with one fence for all. It is an ACQUIRE with more
 * names: the fields of a CMD_ACQUIRE_MODES (its first name in `name`,
 * then u8 mode, u32 limit, u8 reentrant), then u8 n_more (1..
 * BATON_MAX_MANY - 1) and n_more names, each a str of 1..BATON_MAX_NAME
 * bytes, then the keep list if the type byte has CMD_KEEP_FLAG. The
 * decoder hands the names over still encoded (`more`, borrowed from the
 * batch; cmd_more_next walks them) and checks only their shape; that they
 * are legal and distinct is checked when the command is applied. A binary
 * older than format 8 of the store finds the type unknown and the batch
 * malformed: the leader proposes one only for a client of protocol 5.
 */

/*
 * Values and owners (feature level 3). An ACQUIRE may carry a value (who
 * the holder is: 0..CMD_MAX_VALUE opaque bytes, kept with its wait and
 * then its hold, gone when they end) and flags (CMD_ACQ_*). As with modes,
 * an ACQUIRE without either is encoded as before, and one with any of
 * them travels under CMD_ACQUIRE_EXT: the fields of CMD_ACQUIRE_MODES,
 * then u8 flags and str value; an ACQUIRE_EXT with flags 0 and an empty
 * value is malformed (one encoding per command). SET_VALUE replaces the
 * value of the hold (session, fence) on name: a holder's proclaim; its
 * tail is str value. A binary of level 2 finds both bytes unknown: the
 * leader proposes them only at cluster level 3 (cmd_table.h, level).
 */

#define CMD_FORCE_NOW 0
#define CMD_FORCE_AFTER_LEASE 1

/*
 * Lock-delay (Chubby, Consul). Every hold carries the lock_delay_ms of the
 * ACQUIRE that won it: the value in the command is the effective delay the
 * leader decided for this hold (0 = none, > 0 = that many ms; the client's
 * "server default" and "none" are resolved, and the value bounded, before
 * the command is proposed; a negative value fails the ACQUIRE with
 * BATON_EINVAL). A queued ACQUIRE keeps its value in its waiter record until
 * it is granted.
 *
 * Only EXPIRE_SESSION applies it: a hold with a non-zero delay does not go
 * to the next waiter; the lock becomes free but delayed (no holder, queue
 * kept, nothing granted, FX_LOCK_DELAY emitted after FX_LOST). While it is
 * delayed a try ACQUIRE fails with BATON_EWOULDBLOCK and a waiting ACQUIRE
 * joins the queue; CANCEL and WAIT_TIMEOUT work on its waiters as usual.
 * The leader arms a timer for the delay and then proposes DELAY_END(name),
 * which grants the queue head (FX_GRANT, with a fresh fence) or deletes the
 * lock when nobody waits. RELEASE, CLOSE_SESSION, FORCE_RELEASE and a
 * FORCE_RELEASE2 with CMD_FORCE_NOW never delay: the holder knows (or the
 * operator decided) that it let go. A FORCE_RELEASE2 with
 * CMD_FORCE_AFTER_LEASE uses the same delayed state for its wait.
 */

struct cmd {
    uint8_t type;
    uint64_t session;
    uint64_t seq;         /* 0 for leader/admin commands: never deduplicated;
                             OPEN_SESSION: the client's nonce, 0 for none */
    uint64_t ack_below;   /* results of seq < ack_below may be forgotten, */
    uint16_t n_keep;      /* ... but for these: 0..CMD_MAX_KEEP seqs */
    const uint8_t *keep;  /* n_keep x u64 little-endian (cmd_keep_at); borrowed */
    uint32_t ttl_ms;
    int64_t wait_ms;      /* BATON_WAIT_TRY, BATON_WAIT_FOREVER or > 0 */
    uint64_t fence;
    uint64_t waiter;
    int32_t lock_delay_ms; /* ACQUIRE only: this hold's lock-delay, 0 = none (above) */
    uint8_t mode;         /* ACQUIRE only: BATON_MODE_EXCLUSIVE or _SHARED (below) */
    uint32_t limit;       /* ACQUIRE only: 0 or 1 an ordinary lock, N > 1 a semaphore */
    uint8_t reentrant;    /* ACQUIRE only: 1 = may add a handle to the session's hold */
    uint16_t name_len;
    const char *name;     /* borrowed; not NUL-terminated */
    uint8_t n_more;       /* ACQUIRE_MANY only: the names after `name` (1..63) */
    size_t more_len;
    const uint8_t *more;  /* ... encoded: n_more x (u16 length + bytes); borrowed */
    uint16_t owner_len;   /* OPEN_SESSION only: <= BATON_MAX_PRINCIPAL; 0 = anonymous */
    const char *owner;    /* the principal that opens the session; borrowed, like name */
    uint8_t flags;        /* ACQUIRE only: CMD_ACQ_* (above, "Values and owners") */
    uint16_t value_len;   /* ACQUIRE, SET_VALUE: 0..CMD_MAX_VALUE */
    const uint8_t *value; /* borrowed, like name */
};

/* The next of an ACQUIRE_MANY's more names: *off starts at 0; returns 1
 * with *name and *len set, 0 after the last. The encoding is trusted (the
 * decoder checked it, or the caller built it). */
int cmd_more_next(const struct cmd *c, size_t *off, const char **name, uint16_t *len);

/* The i-th seq of c's keep list (i < c->n_keep). */
uint64_t cmd_keep_at(const struct cmd *c, size_t i);

/* Encoding a batch: cmd_batch_begin, then cmd_batch_add per command, then
 * cmd_batch_end to patch the count in. All return 0 or BATON_ENOMEM /
 * BATON_ETOOBIG (a name too long for the command's type, an owner longer
 * than BATON_MAX_PRINCIPAL, a keep list longer than CMD_MAX_KEEP);
 * cmd_batch_add also BATON_EINVAL (unknown type or CMD_OPEN_OWNED, an
 * owner on another type than OPEN_SESSION, a keep list on another type
 * than a client's session commands (CLIENT), or a NULL name, owner or keep
 * list with a non-zero length). A refused command leaves b unchanged.
 * `start` is the offset of the batch inside b. */
int cmd_batch_begin(struct buf *b, size_t *start);
/* The feature level (cmd_table.h, level) of the row that would carry c in
 * a batch -- an encoding-only row's own, e.g. ACQUIRE_MODES's for an
 * ACQUIRE with modes -- or 0 if c cannot be encoded. A leader may put c
 * in the log only once the cluster's committed level is at least this. */
int cmd_level(const struct cmd *c);
int cmd_batch_add(struct buf *b, const struct cmd *c);
void cmd_batch_end(struct buf *b, size_t start, uint32_t count);

/* Decoding: cmd_reader_init validates the header and yields the count;
 * cmd_reader_next returns 1 with *c filled (c->name, c->owner and c->keep
 * borrow from data; a CMD_OPEN_OWNED comes back as CMD_OPEN_SESSION, a
 * type with CMD_KEEP_FLAG as the plain type), 0 at the end,
 * BATON_EMALFORMED on a malformed command (bad type, name too long for
 * its type, an OPEN_OWNED owner that is empty or longer than
 * BATON_MAX_PRINCIPAL, a keep list on another type, empty or longer than
 * CMD_MAX_KEEP, trailing bytes at the end). */
struct cmd_reader {
    struct rd rd;
    uint32_t left;
};
int cmd_reader_init(struct cmd_reader *r, const void *data, size_t len, uint32_t *count);
int cmd_reader_next(struct cmd_reader *r, struct cmd *c);

/*
 * Why data[0..len) is not a batch this binary can decode, in a sentence
 * for the log (the format byte, the command's number and type byte, an
 * unknown type byte, a command cut short or with bad fields), written to
 * why[0..size). Returns BATON_EMALFORMED, or 0 (why empty) if the batch
 * decodes after all.
 */
int cmd_batch_why(const void *data, size_t len, char *why, size_t size);

/* The outcome of one command, in batch order. */
struct cmd_result {
    int32_t status;       /* 0 or BATON_E* */
    uint8_t kind;         /* enum result_kind (proto/msg.h) */
    uint64_t value;       /* fence, queue position or session id */
};

enum fx_type {
    FX_GRANT = 1,   /* a waiter reached the head: (session, waiter) now holds name with fence */
    FX_WAIT_FAILED, /* a waiter left the queue without a grant: status says why (ETIMEDOUT) */
    FX_LOST,        /* a holder lost name (fence) without releasing it: status says why
                       (ESESSION for expiry, ELOST for a forced release, which also
                       leaves a lost record until the session acknowledges it) */
    FX_SESSION_GONE, /* the session no longer exists (status: ESESSION expired, 0 closed) */
    FX_LOCK_DELAY,  /* name is free but delayed for lock_delay_ms (> 0) because the hold
                       (session, waiter, fence) expired or was forced away (FORCE_RELEASE2,
                       CMD_FORCE_AFTER_LEASE); the leader proposes DELAY_END(name) once the
                       delay has passed. Follows that hold's FX_LOST. Status 0. */
    FX_LOCK_CHANGED  /* the record or queue of name changed in this entry (holder, fence,
                        waiters or delay): one per changed lock per entry, however often it
                        changed, all of them after the entry's other effects, in the order
                        of each lock's first change; nothing but name is set. A command
                        that changes nothing (a refused try, a replayed result) emits none.
                        Lets the leader tell watchers (WATCH). */
};

struct effect {
    uint8_t type;   /* enum fx_type */
    int32_t status;
    uint64_t session;
    uint64_t waiter;
    uint64_t fence;
    int32_t lock_delay_ms; /* FX_LOCK_DELAY only: the delay in ms; 0 otherwise */
    uint32_t cmd;   /* which command of the entry caused it: its index in the batch
                       (n_results for FX_LOCK_CHANGED, which sums up the entry) */
    uint16_t name_len;
    char name[BATON_MAX_NAME];
};

/* What store_apply yields. Arrays are owned by the struct and grow as
 * needed; effects_reset empties them and keeps the memory. */
struct effects {
    uint64_t index;               /* the raft index applied */
    struct cmd_result *results;   /* one per command of the batch */
    size_t n_results, cap_results;
    struct effect *fx;            /* in the order they happened */
    size_t n_fx, cap_fx;
    uint64_t apply_ns;            /* how long store_apply took: set by its caller
                                     (raft/fsm.c) for batond's metrics, not by the store */
};

void effects_init(struct effects *e);
void effects_reset(struct effects *e);
void effects_free(struct effects *e);   /* NULL-safe */
int effects_add_result(struct effects *e, const struct cmd_result *r);
/* Append an effect of the command being applied (stamped with its index,
 * the number of results added so far). */
int effects_add_fx(struct effects *e, const struct effect *fx);

const char *cmd_type_name(int type);

#endif /* BATON_STORAGE_CMD_H */
