/*
 * msg.h -- baton's wire protocol: frames and messages. No I/O.
 *
 * proto/msg_table.h lists every message with its number and its body's
 * fields on the wire; this comment says what they mean and how batond
 * answers each.
 *
 * Frame (all integers little-endian):
 *
 *     u32 len      bytes that follow this field; PROTO_FRAME_MIN <= len <= BATON_MAX_FRAME
 *     u16 type     enum msg_type
 *     u64 req_id   chosen by the client, echoed by every reply; 0 on pushes
 *     ...          body, by type (below)
 *
 * Strings are a u16 byte count then the bytes (no NUL). Lists are a u32
 * count then the items. A lock name is 1..BATON_MAX_NAME bytes and contains
 * no NUL byte. The decoder rejects trailing bytes, over-long strings, counts
 * that do not fit the frame and unknown types.
 *
 * A connection starts with HELLO / HELLO_OK. Requests that change lock state
 * carry (session, seq): seq is a per-session sequence number chosen by the
 * client, unique within the session, and a retried request reuses it so that
 * the cluster applies it at most once. They also say exactly which results
 * the client still needs, so that the cluster can drop the others:
 *
 *   ack_below  every request of this session with a seq below it has either
 *              been answered for good (the client will never send it again)
 *              or is listed in `keep`;
 *   keep       at most BATON_MAX_KEEP seqs below ack_below, strictly
 *              increasing and non-zero: ACQUIREs the cluster answered
 *              QUEUED whose push the client has not yet received. Their
 *              cached results must stay (a re-sent queued ACQUIRE learns
 *              from it how its wait ended).
 *
 * The cluster drops every cached result of the session below ack_below
 * that is not in keep, and refuses a request below the highest ack_below
 * it has seen whose result is no longer cached as a stale duplicate
 * (BATON_ESTALE; docs/design.md, "Deduplication", has the proof). So one
 * ACQUIRE that waits for an hour does not make the session's every later
 * result stay cached: the client passes ack_below over it and keeps it.
 * A request whose keep list is not increasing, has a zero or names a seq
 * not below ack_below gets ERROR(BATON_EINVAL).
 *
 * OPEN_SESSION carries a `nonce`: a random non-zero 64-bit number the
 * client draws once per session it opens and repeats when it re-sends that
 * OPEN_SESSION. While the session it opened is alive, an OPEN_SESSION with
 * the same nonce from the same principal is answered with that session
 * (nothing new is opened), so a lost SESSION reply never leaves an orphan
 * session. Once the session has ended its nonce names nothing: the same
 * nonce opens a new session (with a new id; the old one stays ended). 0
 * means no nonce: every such OPEN_SESSION opens a session.
 *
 * How batond answers:
 *  - The first frame must be HELLO; a different version gets
 *    ERROR(BATON_EVERSION) and any other first frame ERROR(BATON_EPROTO), and
 *    the connection is closed. HELLO_OK carries the node's id.
 *  - Followers answer every request except HELLO and STATUS with
 *    REDIRECT(leader id, leader's client address), or NO_LEADER while no
 *    leader is known (or the leader has not yet committed its barrier).
 *    The client retries there with the same req_id/seq.
 *  - OPEN_SESSION -> SESSION. ttl_ms 0 means the server default (10 s);
 *    others are clamped to the server's bounds (1 s .. 300 s). A re-sent
 *    OPEN_SESSION whose nonce names an open session of the same principal
 *    gets SESSION with that session's id and ttl (and renews its lease).
 *  - ACQUIRE, RELEASE, CANCEL, CLOSE_SESSION, KEEPALIVE -> RESULT, sent only
 *    once the command is committed and applied. A request naming a session
 *    attaches that session to this connection: pushes for the session
 *    (GRANTED, WAIT_FAILED, LOST, SESSION_EXPIRED) go to the connection it
 *    was last attached to.
 *  - ACQUIRE's lock_delay_ms chooses the lock-delay of the hold it may win
 *    (Chubby's and Consul's protection against a holder that does not yet
 *    know it lost its lock): if the session's lease EXPIRES while it holds
 *    the lock, nobody is granted the lock for that many milliseconds after
 *    the expiry; waiters stay queued and are served when the delay ends.
 *    0 asks for the server's default lock-delay, BATON_LOCK_DELAY_NONE (-1)
 *    for none, and a positive value for that many ms, which the server
 *    bounds. Anything below -1 is malformed. A RELEASE, a CLOSE_SESSION or
 *    an operator's forced release frees the lock at once, without a delay.
 *  - ACQUIRE's mode, limit and reentrant (protocol 4; docs/design.md, "Lock
 *    modes"): mode BATON_MODE_SHARED asks for a shared hold (any number of
 *    shared holders or one exclusive one, FIFO: a shared request behind a
 *    waiting exclusive one waits); limit N > 1 makes the name a semaphore
 *    of N (0 or 1: an ordinary lock), fixed by the request that creates it
 *    while it has holders or waiters: another limit gets RESULT
 *    (BATON_EINVAL) whose value is the current limit; reentrant 1 gives a
 *    session that holds the name a second handle at once (same fence).
 *    A session that holds or waits for the name otherwise gets RESULT
 *    (BATON_EDEADLK). A mode other than 0 or 1, a limit above
 *    BATON_MAX_LIMIT, reentrant other than 0 or 1, or a shared request with
 *    a limit above 1 gets ERROR(BATON_EINVAL). A release, expiry or end of
 *    a wait may grant several waiters at once: one GRANTED push each.
 *  - ACQUIRE_MANY (protocol 5; docs/design.md, "Lock modes") is an ACQUIRE
 *    of `lock` and its n_more more names (2..BATON_MAX_MANY distinct names
 *    in all), granted on all of them at once with one fence, or on none.
 *    It is answered, pushed (GRANTED, WAIT_FAILED, LOST) and named in
 *    RELEASE, CANCEL and LOST_HOLDS by its first name, `lock`; one RELEASE
 *    of its fence frees every name. It is never reentrant: reentrant 1, no
 *    more names, or a repeated name gets ERROR(BATON_EINVAL); a name the
 *    session holds or waits for gets RESULT(BATON_EDEADLK).
 *  - LOST tells a session that a lock it held (the hold won by the ACQUIRE
 *    whose seq is `waiter`, with that fence) was taken away without a
 *    RELEASE: status BATON_ESESSION when the session expired, BATON_ELOST
 *    when an operator forced the release. SESSION_EXPIRED follows the LOST
 *    pushes of an expiry: the session no longer exists, every lock it held
 *    is lost and every wait it had is over (no WAIT_FAILED is sent for
 *    them). Both are best effort: the connection may be gone, and the
 *    client library counts its lease itself (docs/design.md, "Leases").
 *  - What a push may not deliver, the session learns for sure. An expired
 *    session's next request or keepalive is answered BATON_ESESSION. A
 *    hold forced away from a session that lives on stays recorded in the
 *    cluster as a "lost hold" until the session acknowledges it:
 *    KEEPALIVE's RESULT carries in `value` how many lost holds the session
 *    has (counted up to BATON_MAX_LIST; 0 normally). A client that sees a
 *    non-zero count sends LOST_HOLDS(session, after) -> LOST_HOLDS_R, the
 *    holds (waiter, fence, status, lock) in fence order, BATON_MAX_LIST at
 *    most per page (`more`: ask again with after = the last fence). It
 *    acknowledges each with a RELEASE of that fence and lock, which is
 *    answered BATON_ELOST (not BATON_ENOTHELD) and deletes the record; a
 *    RELEASE the holder sends on its own before it learns of the loss is
 *    the same acknowledgement. The records go too when the session ends.
 *    Until then each keeps the place of its hold in the session's limit of
 *    holds and waits (docs/operations.md, "Limits"). LOST_HOLDS is a read
 *    of the leader's applied state; only the session's own principal may
 *    send it.
 *  - A queued ACQUIRE (RESULT_QUEUED) later gets exactly one push: GRANTED
 *    (the session holds the lock with that fence) or WAIT_FAILED (status
 *    BATON_ETIMEDOUT for a wait_ms that ran out). Pushes have req_id 0 and
 *    name the waiter by its ACQUIRE's seq. The QUEUED reply always reaches
 *    the client before the push for that waiter.
 *  - The cached result of a queued ACQUIRE is updated when its wait ends
 *    (to RESULT_GRANTED with the fence, or to the failure status). A client
 *    therefore lists a queued ACQUIRE in `keep` until its push arrives (or,
 *    beyond BATON_MAX_KEEP of them, holds ack_below at it), and after a
 *    reconnect re-sends it with the same seq: the
 *    answer is QUEUED (still waiting; pushes now come to the new connection)
 *    or the final outcome it missed.
 *  - A node that stops being the leader closes its client connections.
 *  - METRICS -> METRICS_R from any node (role READ): its metrics as text.
 *  - STATUS -> STATUS_R from any node; LOCK_INFO, LIST_LOCKS and
 *    LIST_SESSIONS -> their replies from the leader's applied state.
 *    LIST_SESSIONS returns the sessions whose id is above `after`, in id
 *    order, at most `limit` of them (0 or above BATON_MAX_LIST means
 *    BATON_MAX_LIST); page on with `after` = the last id returned.
 *  - Operator requests, answered once applied: FORCE_RELEASE(fence,
 *    flags, lock) takes a lock from its holder (who gets a LOST push with
 *    BATON_ELOST, and a lost hold recorded until it acknowledges it, above)
 *    -> FORCE_RELEASE_R. With fence 0 it takes the lock from whoever holds
 *    it; with a fence, only from the hold granted with that fence, so that
 *    a re-sent request can never take the lock from the next holder (a
 *    re-send without a fence may: it finds the lock delayed -- not held --
 *    while the first one's wait runs, but with BATON_FORCE_NOW it may find
 *    a new holder). Without BATON_FORCE_NOW the lock is granted to no one
 *    (delay_ms in the reply) for the holder session's ttl plus the hold's
 *    lock-delay: the old holder's client counts its lease from before the
 *    release, so by the time the next waiter is granted it has stopped,
 *    whether or not it heard of the loss (Chubby's lock-delay); then the
 *    head of the queue is granted. BATON_FORCE_NOW grants the head of the
 *    queue at once. Status BATON_ENOTHELD, nothing changed, if nobody holds
 *    the lock (a delayed lock included) or the hold has another fence
 *    (cur_fence says which). EXPIRE_SESSION(session) ends a session as if its
 *    lease had run out -> RESULT (0, or BATON_ESESSION for an unknown
 *    session). TRANSFER(id) asks the leader to hand leadership to node id
 *    (0: a voter raft picks) -> TRANSFER_R with the leader once the
 *    transfer is over, then the old leader closes its connections as any
 *    node that stops leading does (TRANSFER_R's leader_id is 0 when the old
 *    leader does not know its successor yet); ERROR(BATON_ECANCELED) if
 *    leadership did not move within an election timeout, ERROR(BATON_EINVAL) for an id
 *    that is not another voting member, ERROR(BATON_EBUSY) while another
 *    transfer runs. A TRANSFER naming the leader itself is answered at once.
 *  - WATCH(lock) subscribes this connection to changes of one lock (the
 *    name need not exist yet). The answer is an immediate WATCH_EVENT with
 *    the WATCH's req_id, seq 1 and the lock's current state (as LOCK_INFO_R
 *    would give it); after that, every applied entry that changes the
 *    lock's holder, queue or delay brings one WATCH_EVENT push (req_id 0,
 *    seq one more than the previous event of this watch) with the state
 *    after that entry. Events are sent by the ready leader only: when it
 *    stops leading it closes the connection and the client watches again
 *    at the new leader. A connection may watch at most 64 locks and the
 *    server at most 65536 in all: beyond that, ERROR(BATON_ELIMIT). A
 *    second WATCH of the same lock on one connection restarts its seq.
 *  - SNAPSHOT (operator) asks the leader to take a raft snapshot now: it
 *    commits an empty entry and snapshots once that is applied ->
 *    SNAPSHOT_R with the snapshot's index (the applied index after that
 *    entry; the snapshot file is written in the background).
 *    ERROR(BATON_EBUSY) while another SNAPSHOT runs.
 *  - SNAPSHOT_SAVE (operator) asks the leader for a copy of its state, to
 *    keep as a backup (docs/operations.md, "Backup and restore"): the
 *    leader dumps its store at its applied index on a worker thread and
 *    answers with SNAPSHOT_CHUNKs that carry the bytes of the snapshot
 *    file (proto/backup.h) in order: `offset` is where the chunk's data
 *    goes in the file, `total` the file's length (the same in every
 *    chunk), data 1..BATON_SNAPSHOT_CHUNK_MAX bytes; the chunk whose data
 *    ends at `total` is the last. A chunk is sent only once the previous
 *    one was handed to the socket and read by the client (the
 *    connection holds no more than about one chunk unread), so a slow
 *    reader slows the stream, it does not grow the leader's buffers. A
 *    node serves one SNAPSHOT_SAVE at a time: another gets
 *    ERROR(BATON_EBUSY). ERROR(BATON_EIO) if the dump failed,
 *    ERROR(BATON_ECANCELED) if the store's map grew during the dump (try
 *    again). The connection is closed when the node stops leading, and
 *    when its client has taken nothing for a minute. The file is the
 *    state as of one
 *    applied index: consistent, but a node that has just lost its
 *    leadership without knowing it may give an older state than the new
 *    leader's.
 *  - CHECK (operator) asks every node to hash what its lock store holds:
 *    the leader commits an entry holding one CHECK command (storage/cmd.h),
 *    every node hashes its whole state right after applying it, and the
 *    leader answers CHECK_R with the entry's index once it has applied it.
 *    Each node then reports (that index, its hash) in STATUS_R's
 *    check_index and content_hash; batonctl check compares them. The
 *    hash costs every node a pass over its state on its loop thread, so
 *    the leader runs one CHECK at a time: ERROR(BATON_EBUSY) while one is
 *    in flight.
 *  - MEMBERS (operator) -> MEMBERS_R from the leader: the current raft
 *    configuration (every server with its id, role and raft address; the
 *    client address where the leader knows it from its --cluster list, an
 *    empty string otherwise). MEMBER_REMOVE(id) asks the leader to remove
 *    server id from the configuration -> MEMBERS_R with the configuration
 *    once the change has committed; ERROR(BATON_EINVAL) for an id that is
 *    not a member, ERROR(BATON_EBUSY) while another configuration change
 *    is in flight. Removing the leader itself: the leader first hands
 *    leadership to another voter and then answers REDIRECT to it (or
 *    NO_LEADER), so the client sends the request again to the new leader,
 *    which removes the old one; ERROR(BATON_ECANCELED) if leadership did
 *    not move, ERROR(BATON_EINVAL) if there is no other voter.
 *  - MEMBER_ADD(id, raft_addr, client_addr) asks the leader to add server
 *    id, which must already run batond --join listening on raft_addr.
 *    The leader first commits the server's client address (and that of
 *    every member it knows from --cluster whose address is not replicated
 *    yet) to the replicated state, so that every node can redirect
 *    clients there; then it adds the server to the raft configuration as
 *    a spare and promotes it to voter once it has caught up with the log
 *    -> MEMBERS_R with the configuration once the promotion has committed.
 *    Both addresses are IPv4 a.b.c.d:port. ERROR(BATON_EINVAL) for id 0 or
 *    above 2^31-1, a malformed address, an id that is already a voter, or
 *    an address another member uses; ERROR(BATON_ELIMIT) when the
 *    configuration already has BATON_MAX_MEMBERS servers; ERROR(BATON_EBUSY) while another
 *    configuration change is in flight; ERROR(BATON_ECANCELED) when the
 *    new server did not catch up in time (not running, or not at
 *    raft_addr): it then stays in the configuration as a spare, and
 *    MEMBER_ADD with the same id and raft_addr resumes the promotion.
 *    Every member's client address, as MEMBERS_R, STATUS_R and REDIRECT
 *    give it, comes from that replicated table, else from the answering
 *    node's --cluster list.
 *  - A frame that cannot be parsed gets ERROR(BATON_EMALFORMED or
 *    BATON_ETOOBIG) and the connection is closed; a well-formed request the
 *    server refuses gets ERROR(code, message) and the connection stays.
 *  - Limits (docs/operations.md, "Limits"): a connection beyond batond's --max-conns
 *    gets ERROR(BATON_ELIMIT) and is closed; a connection whose incomplete
 *    frame is older than --frame-timeout gets ERROR(BATON_ETIMEDOUT) (req_id
 *    0) and is closed; while the leader's data disk has less free space
 *    than --min-free-mb, every state-changing request (OPEN_SESSION,
 *    ACQUIRE, RELEASE, CANCEL, CLOSE_SESSION, FORCE_RELEASE, EXPIRE_SESSION)
 *    gets ERROR(BATON_ENOSPC) at once: nothing was proposed, so it may be
 *    retried later with the same seq.
 */
#ifndef BATON_PROTO_MSG_H
#define BATON_PROTO_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "proto/msg_table.h"

#define BATON_PROTO_VERSION 6  /* 2: HELLO's token, HELLO_OK's principal, owners;
                                   3: STATUS_R's content check and fault, CHECK,
                                  FORCE_RELEASE's fence and flags, its reply's delay
                                  and current fence, LOST_HOLDS, the lost-hold count
                                  in KEEPALIVE's RESULT, the ops' keep list,
                                  OPEN_SESSION's nonce;
                                  4: lock modes: ACQUIRE's mode, limit and
                                  reentrant, every holder, the limit and each
                                  waiter's mode in LOCK_INFO_R and WATCH_EVENT,
                                  the mode, limit and holder count in LIST_LOCKS_R;
                                  5: ACQUIRE_MANY, the atomic multi-lock;
                                  6: values on holds and waiter flags (ACQUIRE2),
                                  PROCLAIM, LOCK_STATE, WATCH2 and UNWATCH */
#define BATON_PROTO_VERSION_MIN 5 /* the oldest client protocol a server still
                                     serves: a HELLO of any version in
                                     [BATON_PROTO_VERSION_MIN,
                                     BATON_PROTO_VERSION] is answered with that
                                     version, and the client sends only what
                                     its version has */
#define BATON_MAX_FRAME (1u << 20)  /* largest `len` field (a frame is <= 4 + this) */
#define BATON_MAX_CLIENT_NAME 64    /* client name bytes */
#define BATON_MAX_ADDR 64           /* "a.b.c.d:port" and then some */
#define BATON_MAX_TOKEN 256         /* bearer token bytes in HELLO */
#define BATON_MAX_PRINCIPAL 64      /* a principal's name (auth file, certificate CN) */
#define BATON_MAX_MEMBERS 16        /* cluster members in STATUS_R */
#define BATON_MAX_ERRMSG 256        /* ERROR message bytes */
#define BATON_MAX_LIST 1000         /* items in LIST_LOCKS_R / SESSIONS_R, waiters in LOCK_INFO_R */
#define BATON_MAX_TEXT_CHUNK 65535   /* bytes of one chunk of METRICS_R's text */
#define BATON_MAX_TEXT_CHUNKS 15     /* chunks in METRICS_R: the text fits one frame */
#define BATON_SNAPSHOT_CHUNK_MAX 49152 /* data bytes in one SNAPSHOT_CHUNK */
#define BATON_MAX_KEEP 64           /* seqs in an op's keep list (queued ACQUIREs kept below
                                       ack_below) */
#define BATON_MAX_UNACKED 4096      /* how far an op's seq may run ahead of its session's
                                       ack floor (the highest ack_below it has sent): the
                                       results the cluster keeps for it. Beyond, the op is
                                       answered RESULT(BATON_ELIMIT) unless it frees a hold
                                       or a wait (storage/apply.c); libbaton holds back its
                                       ACQUIREs so that it never goes beyond */

#define PROTO_HDR_LEN 14            /* u32 len + u16 type + u64 req_id */
#define PROTO_FRAME_MIN 10          /* smallest legal `len` field */

/* The message types and their wire numbers (proto/msg_table.h). */
enum msg_type {
#define X(name, wire, dir, leader, role, session, locks, body, fields) MSG_##name = wire,
    BATON_MESSAGES(X)
#undef X
    MSG_TYPE_MAX_ /* one above the highest number: rows are in number order */
};

/* Who sends a message (the `dir` column of proto/msg_table.h). */
enum msg_dir { MSG_C2S = 1, MSG_S2C = 2 };

/* What a connection's principal needs to send a request (the `role`
 * column): each role includes the ones before it. */
enum msg_role { MSG_ROLE_NONE = 0, MSG_ROLE_READ, MSG_ROLE_LOCK, MSG_ROLE_ADMIN };

/* One row of proto/msg_table.h, as the server and the logs use it. */
struct msg_info {
    const char *name;       /* "ACQUIRE" */
    uint8_t dir;            /* enum msg_dir */
    uint8_t leader;         /* 1: served by the ready leader only */
    uint8_t role;           /* enum msg_role */
};

/* MSG_RESULT kinds: what `value` means. */
enum result_kind {
    RESULT_OK = 0,      /* value unused (RELEASE, CLOSE_SESSION), except for
                           KEEPALIVE: the session's lost holds (LOST_HOLDS) */
    RESULT_GRANTED,     /* value = fence; the caller now holds the lock */
    RESULT_QUEUED,      /* value = 1-based position in the queue; a GRANTED
                           or WAIT_FAILED push follows later */
    RESULT_CANCELLED,   /* the wait was removed (CANCEL) */
};

/* A string borrowed from the frame being decoded (not NUL-terminated). */
struct pstr {
    const char *p;
    uint16_t n;
};

struct msg_member {
    uint32_t id;
    struct pstr raft_addr;
    struct pstr client_addr;
};

/* A server's role in the raft configuration, in MEMBERS_R. */
enum member_role { MEMBER_SPARE = 0, MEMBER_STANDBY, MEMBER_VOTER };

/* One server of the raft configuration; client_addr is empty when unknown. */
struct msg_member_info {
    uint32_t id;
    uint8_t role;           /* enum member_role */
    struct pstr raft_addr;
    struct pstr client_addr;
};

struct msg_members_r {
    uint32_t n;             /* <= BATON_MAX_MEMBERS */
    struct msg_member_info *members;
};

/* Node roles in STATUS_R. */
enum node_role { ROLE_UNAVAILABLE = 0, ROLE_FOLLOWER, ROLE_CANDIDATE, ROLE_LEADER };

/* Wire: {u32 node_id, u8 role, u32 leader_id, u64 term, u64 last_index,
 *        u64 commit_index, u64 applied_index, u32 n,
 *        n x {u32 id, str raft_addr, str client_addr}, u64 state_digest,
 *        u64 auth_digest, u64 check_index, u64 content_hash, u8 fault_kind,
 *        i32 fault, u64 fault_index}
 *
 * The members are the servers of the node's current raft configuration
 * (spares included), each with its client address as MEMBERS_R gives it
 * (empty when unknown); a node that has no configuration yet (batond
 * --join, not added) lists its --cluster instead.
 *
 * state_digest is the node's lock store digest (storage/store.h,
 * store_digest): a hash chained over every entry its state machine has
 * applied. Two nodes whose state machines stand at the same applied
 * entry and report different digests have diverged. While a restarted
 * node replays its log, its store can be ahead of applied_index (the
 * store skips what it already holds), and its digest then describes that
 * later state.
 *
 * check_index and content_hash are the node's last content check (CHECK
 * below; storage/store.h, store_last_check): the index of the last CHECK
 * entry its store applied since batond started (0: none) and the hash of
 * everything the store held right after that entry (0: it could not be
 * computed). Nodes that report the same check_index with different
 * content hashes hold different state, whatever their digests say.
 *
 * fault says what stops this node, whatever the others do (0: nothing):
 * a BATON_E* code, and fault_kind what failed -- FAULT_APPLY: the store
 * could not apply entry fault_index (a full disk: BATON_ENOSPC), so the
 * node stepped down or its raft stopped there; FAULT_LOG: this leader's
 * write of entry fault_index to its raft log failed, so it is exiting;
 * FAULT_RAFT: raft stopped before entry fault_index for another reason. A
 * restart once the cause is gone cures it (docs/operations.md, "Disk
 * full"). */
enum status_fault { FAULT_NONE = 0, FAULT_APPLY, FAULT_LOG, FAULT_RAFT };

struct msg_status_r {
    uint32_t node_id;
    uint8_t role;           /* enum node_role */
    uint32_t leader_id;     /* 0 if unknown */
    uint64_t term;
    uint64_t last_index;
    uint64_t commit_index;
    uint64_t applied_index;
    uint32_t n_members;     /* <= BATON_MAX_MEMBERS */
    struct msg_member *members;
    uint64_t state_digest;  /* the store's digest at its applied index */
    uint64_t auth_digest;   /* the first 8 bytes of the SHA-256 of this node's
                               --auth-file as loaded, 0 without one */
    uint64_t check_index;   /* the last CHECK entry this node applied, 0: none */
    uint64_t content_hash;  /* its store's content hash after that entry */
    uint8_t fault_kind;     /* enum status_fault */
    int32_t fault;          /* BATON_E*, 0 if none */
    uint64_t fault_index;   /* the entry it happened on */
};

struct msg_waiter {
    uint64_t session;
    uint64_t waiter;        /* the waiting ACQUIRE's seq */
    int64_t wait_ms;
    uint8_t mode;           /* BATON_MODE_EXCLUSIVE or BATON_MODE_SHARED */
};

/* One hold of a lock (a grant): its ACQUIRE (session, seq = waiter), its
 * fence, the raft index of the grant, its mode and how many handles it has
 * (more than 1 only through reentrant ACQUIREs). */
struct msg_holder {
    uint64_t session;
    uint64_t waiter;
    uint64_t fence;
    uint64_t granted_index;
    uint8_t mode;
    uint32_t count;
};

/* The wire layout is BATON_LOCK_INFO_FIELDS (proto/msg_table.h). */
struct msg_lock_info_r {
    uint8_t held;           /* 0: nobody holds it (and then no waiters, unless delayed) */
    uint64_t holder_session; /* the first holder (lowest fence): the exclusive one, */
    uint64_t holder_waiter;  /* or one of the shared holders or of a semaphore's; */
    uint64_t fence;          /* holders lists them all */
    uint64_t granted_index; /* raft index of the grant */
    uint8_t mode;           /* the holders' mode (BATON_MODE_*); 0 when none */
    uint32_t limit;         /* 1: an ordinary lock, N > 1: a semaphore of N; 0: no such lock */
    uint32_t total_holders; /* how many hold it; n_holders may be fewer */
    uint32_t n_holders;     /* <= BATON_MAX_LIST, in fence order */
    struct msg_holder *holders;
    uint32_t total_waiters; /* queue length; n_waiters may be fewer */
    uint32_t n_waiters;     /* <= BATON_MAX_LIST, queue order, head first */
    struct msg_waiter *waiters;
    uint8_t delayed;        /* 1: free but in its lock-delay after its holder's
                               session expired; nobody is granted it (the
                               waiters keep waiting) until the delay ends.
                               held is then 0 and the holder fields are 0. */
    struct pstr lock;
};

struct msg_lock_summary {
    struct pstr name;
    uint64_t holder_session; /* the first holder (lowest fence); 0 if none */
    uint64_t fence;         /* its fence */
    uint32_t n_waiters;
    uint8_t mode;           /* the holders' mode (BATON_MODE_*) */
    uint32_t limit;         /* 1: an ordinary lock, N > 1: a semaphore of N */
    uint32_t n_holders;
};

struct msg_list_locks_r {
    uint32_t n;             /* <= BATON_MAX_LIST */
    struct msg_lock_summary *items;
    uint8_t more;           /* 1 if more locks match than were returned */
};

/* FORCE_RELEASE's flags. */
#define BATON_FORCE_NOW 0x01u  /* grant the next waiter at once, without waiting
                                  out the holder's lease */

/* An operator's forced release of `lock`: fence 0 takes it from whoever
 * holds it, any other fence only from the hold granted with that fence;
 * flags BATON_FORCE_NOW or 0. */
struct msg_force_release {
    uint64_t fence;
    uint8_t flags;
    struct pstr lock;
};

/* What a forced release did. status is 0 or BATON_ENOTHELD (the lock was
 * not held, or not with the fence asked for: nothing changed; cur_fence is
 * then the fence of the hold there is, 0 if nobody holds the lock -- it may
 * be free or in a lock-delay -- and the other fields are 0). lost_* name
 * the hold that was taken away; new_* the waiter that was granted the lock
 * next, or 0 when nobody was (the lock is then free, or delayed: see
 * delay_ms); delay_ms > 0: the lock is granted to no one for that long, to
 * wait out the old holder's lease (no BATON_FORCE_NOW). */
struct msg_force_release_r {
    int32_t status;
    uint64_t lost_session;
    uint64_t lost_fence;
    uint64_t new_session;
    uint64_t new_fence;
    uint32_t delay_ms;
    uint64_t cur_fence;
};

/* LOST_HOLDS: the lost holds of `session` with a fence above `after` (0
 * for the first page). */
struct msg_lost_holds {
    uint64_t session;
    uint64_t after;
};

/* One hold taken from the session without its RELEASE (a forced release),
 * not yet acknowledged: the ACQUIRE (its seq, `waiter`) that won it, its
 * fence, why (BATON_ELOST) and the lock. */
struct msg_lost_hold {
    uint64_t waiter;
    uint64_t fence;
    int32_t status;
    struct pstr lock;
};

struct msg_lost_holds_r {
    uint32_t n;             /* <= BATON_MAX_LIST, in fence order */
    struct msg_lost_hold *items;
    uint8_t more;           /* 1: more follow; ask again with after = the last fence */
};

struct msg_session_summary {
    uint64_t id;
    uint32_t ttl_ms;
    uint64_t created_index; /* raft index of its OPEN_SESSION */
    struct pstr client_name; /* <= BATON_MAX_CLIENT_NAME bytes, may be empty */
    uint32_t n_holds;       /* locks it holds */
    uint32_t n_waits;       /* queued ACQUIREs it has */
    struct pstr owner;      /* the principal that opened it ("" anonymous) */
};

/* METRICS -> METRICS_R: this node's metrics in the Prometheus text
 * exposition format (docs/operations.md, "Metrics and health"), the same
 * text as its HTTP /metrics, in chunks of at most BATON_MAX_TEXT_CHUNK
 * bytes, each ending at a line's end: the text is their concatenation. */
struct msg_text_chunk {
    struct pstr text;
};

struct msg_metrics_r {
    uint32_t n;             /* <= BATON_MAX_TEXT_CHUNKS */
    struct msg_text_chunk *chunks;
};

struct msg_sessions_r {
    uint32_t n;             /* <= BATON_MAX_LIST, in id order */
    struct msg_session_summary *items;
    uint8_t more;           /* 1 if sessions with higher ids exist than were returned */
};

/* The bodies of the other messages; proto/msg_table.h says which fields of
 * each go on the wire for which message. */
struct msg_none { uint8_t unused; };  /* STATUS, NO_LEADER, SNAPSHOT, MEMBERS, CHECK, METRICS,
                                         SNAPSHOT_SAVE */
/* HELLO's token: "" when the client has none (then the connection's
 * principal is its certificate's, or the anonymous one). */
struct msg_hello { uint32_t version; struct pstr client_name; struct pstr token; };
/* Who the server took the client for: the principal's name ("" for the
 * anonymous principal of a node without --auth-file) and its role (enum
 * msg_role: READ, LOCK or ADMIN; the anonymous principal is ADMIN). */
struct msg_hello_ok { uint32_t version; uint32_t node_id; struct pstr principal; uint8_t role; };
/* nonce: the client's random tag of the session it opens (above); 0: none. */
struct msg_open_session { uint32_t ttl_ms; struct pstr client_name; uint64_t nonce; };
struct msg_session { uint64_t session; uint32_t ttl_ms; };
struct msg_keepalive { uint64_t session; };
struct msg_result { int32_t status; uint8_t kind; uint64_t value; };
struct msg_lock_info { struct pstr lock; };
struct msg_list_locks { struct pstr prefix; uint32_t limit; };
struct msg_redirect { uint32_t leader_id; struct pstr client_addr; };
struct msg_error { int32_t code; struct pstr message; };
struct msg_session_expired { uint64_t session; };
struct msg_expire_session { uint64_t session; };
struct msg_transfer { uint32_t id; };           /* 0: let raft pick a voter */
struct msg_transfer_r { uint32_t leader_id; };
struct msg_list_sessions { uint64_t after; uint32_t limit; };
struct msg_watch { struct pstr lock; };
struct msg_snapshot_r { uint64_t index; };
struct msg_check_r { uint64_t index; };         /* the CHECK entry's index */
/* Bytes [offset, offset + data.n) of a snapshot file of `total` bytes. */
struct msg_snapshot_chunk { uint64_t offset; uint64_t total; struct pstr data; };
struct msg_member_remove { uint32_t id; };
struct msg_member_add { uint32_t id; struct pstr raft_addr, client_addr; };

/*
 * A request of a session that changes lock state: ACQUIRE, RELEASE,
 * CANCEL and CLOSE_SESSION share it; each puts only its own fields on the
 * wire (the others stay 0 after decoding).
 */
struct msg_seq { uint64_t seq; }; /* an item of an op's keep list */
struct msg_lock_name { struct pstr name; }; /* an item of ACQUIRE_MANY's more names */

struct msg_op {
    uint64_t session, seq, ack_below; /* every op */
    uint32_t n_keep;        /* every op: <= BATON_MAX_KEEP seqs below ack_below */
    struct msg_seq *keep;   /* whose cached results the client still needs */
    int64_t wait_ms;        /* ACQUIRE: BATON_WAIT_TRY, BATON_WAIT_FOREVER or > 0 */
    int32_t lock_delay_ms;  /* ACQUIRE: BATON_LOCK_DELAY_DEFAULT, _NONE or > 0 */
    uint8_t mode;           /* ACQUIRE: BATON_MODE_EXCLUSIVE or BATON_MODE_SHARED */
    uint32_t limit;         /* ACQUIRE: 0 or 1 an ordinary lock, 2..BATON_MAX_LIMIT a semaphore */
    uint8_t reentrant;      /* ACQUIRE: 1 = a second handle of the session's hold */
    uint64_t fence;         /* RELEASE: the fence of the hold being released */
    uint64_t waiter;        /* CANCEL: the seq of the ACQUIRE that waits */
    struct pstr lock;       /* all but CLOSE_SESSION; ACQUIRE_MANY: its first name */
    uint32_t n_more;        /* ACQUIRE_MANY: the names after `lock` (1..BATON_MAX_MANY - 1) */
    struct msg_lock_name *more;
    uint8_t flags;          /* ACQUIRE2: BATON_ACQ_* (below) */
    struct pstr value;      /* ACQUIRE2, PROCLAIM: the hold's value, 0..BATON_MAX_VALUE
                               bytes (PROCLAIM: fence names the hold) */
};

/* ACQUIRE2's flags. */
#define BATON_ACQ_OWNERS 0x01 /* the client tells its waiters apart (baton.h, "Owners"):
                                 this request queues even if its session already holds
                                 or waits for the name; with reentrant, fence names the
                                 session's hold it re-enters */
#define BATON_ACQ_FLAGS_ALL BATON_ACQ_OWNERS

/* One hold in LOCK_STATE_R and WATCH2_EVENT: msg_holder's fields, its
 * session's client name and the hold's value. */
struct msg_holder_v {
    uint64_t session, waiter, fence, granted_index;
    uint8_t mode;
    uint32_t count;
    struct pstr client_name;
    struct pstr value;
};

/* One waiter in LOCK_STATE_R and WATCH2_EVENT, with its session's client
 * name and its request's value. */
struct msg_waiter_v {
    uint64_t session, waiter;
    int64_t wait_ms;
    uint8_t mode;
    struct pstr client_name;
    struct pstr value;
};

/* The wire layout is BATON_LOCK_STATE_FIELDS (proto/msg_table.h). A lock
 * nobody holds or waits for reads held 0, limit 0, no holders, no
 * waiters. */
struct msg_lock_state {
    uint64_t revision;      /* the raft index the state is as of: the read's applied
                               index (LOCK_STATE_R), the change's (WATCH2_EVENT) */
    uint8_t held;
    uint8_t mode;           /* the holders' mode; 0 when none */
    uint32_t limit;         /* 1 an ordinary lock, N > 1 a semaphore; 0 no such lock */
    uint8_t delayed;        /* free but in its lock-delay (msg_lock_info_r) */
    uint32_t total_holders; /* n_holders may be fewer: the lists fill one frame */
    uint32_t n_holders;     /* fence order */
    struct msg_holder_v *holders;
    uint32_t total_waiters;
    uint32_t n_waiters;     /* queue order, head first */
    struct msg_waiter_v *waiters;
    struct pstr lock;       /* empty in a WATCH2_EVENT without a state */
};

/* WATCH2: a watch on one lock (flags 0: key is its name) or on every lock
 * whose name starts with key (BATON_WATCH_PREFIX; "" is every lock).
 * after: 0 starts afresh; otherwise the revision up to which the client
 * already knows the state (the last event's, or a LOCK_STATE_R's), and the
 * stream resumes after it (docs/design.md, "Watches"). */
struct msg_watch2 {
    uint8_t flags;
    struct pstr key;
    uint64_t after;
};
#define BATON_WATCH_PREFIX 0x01

/* WATCH2_EVENT kinds (req_id is the WATCH2's). */
enum watch2_kind {
    WATCH2_CHANGE = 1, /* state: the lock right after the entry `revision` changed it */
    WATCH2_STATE,      /* state: the lock as it is at the start (or restart) of the stream */
    WATCH2_GAP,        /* state: the lock now; it changed since `after` in ways not sent */
    WATCH2_SYNCED,     /* no lock state: from revision on, every change is sent;
                          restarted 1 if what changed since `after` is unknown and the
                          STATE events before it are the whole current state */
    WATCH2_PROGRESS    /* no lock state: nothing watched changed up to revision */
};

struct msg_watch2_event {
    uint8_t kind;           /* enum watch2_kind */
    uint8_t restarted;      /* WATCH2_SYNCED only */
    struct msg_lock_state state;
};

/* UNWATCH: end the watch started by the WATCH2 whose req_id is `watch`
 * on this connection: RESULT with status 0, or RESULT with status
 * BATON_ENOTFOUND if the connection has no such watch (never ERROR, so
 * that a client may send it without knowing whether the watch had ended).
 * Events of the watch already queued may still precede the RESULT. */
struct msg_unwatch { uint64_t watch; };

/*
 * A push about one acquire of a session (named by its seq, `waiter`):
 * GRANTED (fence), WAIT_FAILED (status) and LOST (fence and status) share
 * it, each with its own fields on the wire.
 */
struct msg_push {
    uint64_t session, waiter, fence;
    int32_t status;
    struct pstr lock;
};

struct msg_watch_event {
    uint64_t seq;           /* 1 for the first event of a WATCH, then +1 per event */
    struct msg_lock_info_r info;
};

/*
 * A decoded (or to-be-encoded) message. Only the union member named by
 * `type`'s row in proto/msg_table.h is meaningful. After proto_decode,
 * every pstr points into the frame's memory and the arrays (members,
 * waiters, items) are malloc'd and owned by the message: release them with
 * msg_free. For proto_encode the caller owns everything and msg_free must
 * not be called.
 */
struct msg {
    uint16_t type;
    uint64_t req_id;
    union {
        struct msg_none none;
        struct msg_hello hello;
        struct msg_hello_ok hello_ok;
        struct msg_open_session open_session;
        struct msg_session session;
        struct msg_op op;
        struct msg_keepalive keepalive;
        struct msg_result result;
        struct msg_push push;
        struct msg_status_r status_r;
        struct msg_lock_info lock_info;
        struct msg_lock_info_r lock_info_r;
        struct msg_list_locks list_locks;
        struct msg_list_locks_r list_locks_r;
        struct msg_redirect redirect;
        struct msg_error error;
        struct msg_session_expired session_expired;
        struct msg_force_release force_release;
        struct msg_force_release_r force_release_r;
        struct msg_expire_session expire_session;
        struct msg_transfer transfer;
        struct msg_transfer_r transfer_r;
        struct msg_list_sessions list_sessions;
        struct msg_sessions_r sessions_r;
        struct msg_watch watch;
        struct msg_watch_event watch_event;
        struct msg_snapshot_r snapshot_r;
        struct msg_check_r check_r;
        struct msg_snapshot_chunk snapshot_chunk;
        struct msg_members_r members_r;
        struct msg_member_remove member_remove;
        struct msg_member_add member_add;
        struct msg_lost_holds lost_holds;
        struct msg_lost_holds_r lost_holds_r;
        struct msg_metrics_r metrics_r;
        struct msg_lock_state lock_state;
        struct msg_watch2 watch2;
        struct msg_watch2_event watch2_event;
        struct msg_unwatch unwatch;
    } u;
};

/*
 * Look for one whole frame at the start of data[0..len).
 * Returns 1 and sets *frame_len (header included) when a whole frame is
 * there; 0 when more bytes are needed; BATON_ETOOBIG when the length field
 * exceeds BATON_MAX_FRAME; BATON_EMALFORMED when it is below
 * PROTO_FRAME_MIN. A negative return means the stream cannot be resynced:
 * close the connection.
 */
int proto_frame_check(const uint8_t *data, size_t len, size_t *frame_len);

/*
 * Decode one whole frame (as found by proto_frame_check) into *m.
 * Returns 0, BATON_EMALFORMED (bad body, unknown type, trailing bytes,
 * bad string, an ACQUIRE lock_delay_ms below -1) or BATON_ENOMEM. On
 * success the message borrows from `frame`, which must outlive it, and
 * must be released with msg_free. On error *m needs no msg_free. m->type
 * and m->req_id are set whenever the header could be read, even on error,
 * so the caller can answer with an ERROR.
 */
int proto_decode(const uint8_t *frame, size_t frame_len, struct msg *m);

/* Free the arrays a decoded message owns. NULL-safe; idempotent. */
void msg_free(struct msg *m);

/*
 * Append m as one frame to out. Returns 0, BATON_ETOOBIG (frame would exceed
 * BATON_MAX_FRAME, or a string or list count exceeds its limit),
 * BATON_EINVAL (unknown type, an empty lock name or one containing a NUL,
 * an ACQUIRE lock_delay_ms below -1, or a NULL pointer with a non-zero
 * length or count) or BATON_ENOMEM. It
 * never produces a frame that proto_decode would refuse. On error out is
 * unchanged.
 */
int proto_encode(struct buf *out, const struct msg *m);

/* Name of a message type for logs, e.g. "ACQUIRE"; "?" if unknown. */
const char *msg_type_name(int type);

/* The row of proto/msg_table.h for a message type; NULL if unknown. */
const struct msg_info *msg_info(int type);

/* How access control reads a request's lock names (the `locks` column of
 * proto/msg_table.h). */
enum msg_locks {
    MSG_LOCKS_NONE = 0,   /* it names no lock */
    MSG_LOCKS_NAMES,      /* name, then more[0..n_more): each within the prefixes */
    MSG_LOCKS_PREFIX,     /* name is a prefix the principal's prefixes must cover */
    MSG_LOCKS_GIVE_BACK,  /* name is given back by its session: owning it suffices */
};

/* What a request asks to touch, as access control checks it (the
 * `session` and `locks` columns of proto/msg_table.h). Borrows from m. */
struct msg_scope {
    bool has_session;                 /* session is one the principal must own */
    uint64_t session;
    uint8_t locks;                    /* enum msg_locks */
    const struct pstr *name;          /* the lock name or prefix; NULL if NONE */
    uint32_t n_more;                  /* NAMES: further names */
    const struct msg_lock_name *more;
};

/* Fill *s for request m from its row. Returns false (and *s says nothing
 * is named) for an unknown type. */
bool msg_scope(const struct msg *m, struct msg_scope *s);

/* Is name a legal lock name (1..BATON_MAX_NAME bytes, no NUL)? */
int proto_lock_name_ok(const char *name, size_t n);

#endif /* BATON_PROTO_MSG_H */
