/*
 * async_int.h -- internals of the async core, shared by its files (the
 * async*.c of client/). Not a public API.
 *
 * The map of client/'s files, in the format of server/server_int.h's ([N]:
 * the layer, 1 the top; a file calls only files of a higher N, or the one
 * it is tied to; tests/check-layers.sh reads this map and checks it with
 * nm). The core is one state machine cut by topic, and its four main
 * files call each other directly (a reply read by the connection completes
 * an operation, which may renew the lease, which may send on the
 * connection): hence the ties. Only baton.c and call.c sit above them, and the TLS
 * layer below, but for the connection's buffers it works on.
 *
 *  [1] baton.c          the blocking API (baton.h) on top of the core: one
 *                       I/O thread per baton_t runs it on a private loop
 *  [2] async.c          the context: creation and free, the adapter hooks,
 *                       the request table, the completion queue, the
 *                       timer, deferred free
 *  [2] async_conn.c     the connection: endpoints, connect, HELLO,
 *                       read/write, redirects, NO_LEADER and back-off
 *  [2] async_ops.c      the session and lock operations: the public calls,
 *                       the requests they become, matching RESULT replies
 *                       and pushes, cancels, timeouts
 *  [1] call.c           the blocking form of async_raw.c on a private loop
 *                       (client/call.h), for batonctl
 *  [2] async_session.c  the session's liveness: keepalives, the client-side
 *                       lease, the table of held locks, declaring locks
 *                       lost, and opening a fresh session after the old
 *                       one is gone
 *  [2] async_raw.c      sessionless requests: any C2S message that needs no
 *                       session, sent where a lock call's would go, with its
 *                       reply (or a stream of them) handed back (batonctl)
 *  [3] owners.c         whose each lock call and held lock is (the owners
 *                       of baton_async.h): the index of claimed names, and
 *                       what it makes of an ACQUIRE (BATON_EDEADLK, or
 *                       BATON_ACQ_OWNERS and the fence it re-enters)
 *  [2] async_watch.c    reads and watches: LOCK_STATE, WATCH2 streams that
 *                       resume after the last revision on every new
 *                       connection, UNWATCH, the observe filter
 *  [1] async_elect.c    elections (campaign, leader, observe) on the
 *                       public lock, read and watch calls
 *  [3] lockstate.c      the public lock state and events (baton.h) made
 *                       from their wire form: one allocation each
 *  [3] cancel.c         cancel handles (baton.h): a flag that stays fired,
 *                       and the blocking calls waiting with it
 *  [3] async_tls.c      the connection's security layer: TLS (proto/tls.h),
 *                       the bearer token, and telling a plaintext peer
 *                       from a TLS one
 *  tie: async.c async_conn.c          the context's handlers and timers
 *                                     drive the connection, which uses the
 *                                     context's clock, table and queue
 *  tie: async.c async_ops.c           the same for the operations
 *  tie: async.c async_session.c       the same for the session
 *  tie: async_conn.c async_ops.c      replies go to the operations, which
 *                                     send on the connection
 *  tie: async_conn.c async_session.c  a ready connection resumes the
 *                                     session, whose keepalives it sends
 *  tie: async_ops.c async_session.c   replies renew the lease and report
 *                                     lost holds; a lost session settles
 *                                     the operations
 *  tie: async_conn.c async_tls.c      TLS wraps the connection's bytes and
 *                                     reports its failures to it
 *  tie: async.c async_raw.c           the context's table and queue hold
 *                                     sessionless requests too
 *  tie: async_conn.c async_raw.c      their replies come off the connection,
 *                                     and they are sent on it
 *  tie: async_ops.c async_raw.c       they share the request's send,
 *                                     re-send and timeout paths
 *  tie: async.c async_watch.c         the context's queue delivers the
 *                                     events, its table holds the watches
 *  tie: async_conn.c async_watch.c    events come off the connection, and
 *                                     watches are sent on it
 *  tie: async_ops.c async_watch.c     they share the request's send,
 *                                     re-send and timeout paths
 *  tie: async_watch.c async_raw.c     a read is a sessionless request
 *
 * Life of a request (struct baton__req). It is created by a public call,
 * gets an id that is both its req_id and, for session requests, its seq,
 * and is linked into ac->reqs (ordered by id) and ac->map (by id). It is
 * UNSENT until a connection to the leader is ready (and, for session
 * requests, the session is open), SENT while its reply is awaited, and an
 * ACQUIRE answered QUEUED is WAITING for its push. A lost connection turns
 * SENT and WAITING back into UNSENT: everything unanswered is re-sent, with
 * the same id, on the next connection.
 *
 * Completing a request for its caller ("req_complete") and removing it from
 * the table ("req_remove") are separate steps: a lock call that timed out
 * is completed at once but stays in the table, "abandoned", until the
 * cluster has confirmed that it will not hold the lock for it. A completed
 * request waits in ac->done until its callback runs; callbacks run only at
 * the end of a handler (async.c: baton__leave), never in the middle of
 * processing, so no list is ever modified under an iteration by user code.
 *
 * Held locks. A lock call reserves, when it is made, a second struct
 * baton__req of kind BATON__K_HELD (r->held). When the lock is granted to
 * its caller that entry moves into ac->held (a list through its prev/next,
 * plus ac->held_map by fence) and stays there until the lock is unlocked:
 * HELD, then RELEASING while its RELEASE is in flight, or LOST once the
 * core has declared it lost (a LOST entry stays until the caller unlocks
 * it, so that the unlock can answer BATON_ELOST). Declaring a lock lost
 * queues the same entry on ac->done, where it runs the lost callback; so
 * lost callbacks and completions run in one FIFO order, and declaring a
 * lock lost never needs memory.
 *
 * What the client acknowledges (baton__acks; proto/msg.h). Every session
 * request says which results the cluster may forget: ack_below is the id
 * of the oldest request in the table that is still owed an answer, but
 * for the ACQUIREs the cluster answered QUEUED (r->queued): those were
 * applied and only wait for their push, so they go in the keep list (at
 * most BATON_MAX_KEEP; beyond that ack_below stops at the next one) and
 * ack_below passes them. A long wait then pins nothing: the results of
 * every later request are acknowledged as they arrive.
 *
 * How far ahead the client runs. The cluster runs a session's request only
 * if its seq is less than BATON_MAX_UNACKED above the highest ack_below
 * the session has sent, unless it frees a hold or a wait (a RELEASE, a
 * CANCEL; storage/apply.c); beyond, RESULT(BATON_ELIMIT). So an ACQUIRE
 * whose id is BATON_MAX_UNACKED or more above the ack_below it would carry
 * stays UNSENT (held back; ac->held_id is the lowest such id) until answers
 * move ack_below up (baton__flush_held, after every message), and the
 * other requests go at once: a RELEASE of a held lock is never stuck
 * behind a full window. Only BATON_MAX_UNACKED requests in flight at once,
 * or the oldest of more than BATON_MAX_KEEP waiting ACQUIREs waiting while
 * BATON_MAX_UNACKED more are made, hold an ACQUIRE back; one held back
 * until its op timeout fails with BATON_ELIMIT.
 *
 * Keepalives are not requests: they are not in the table and carry no seq.
 * Their req_ids come from a separate range (BATON__KA_ID_BASE and up, far
 * above any seq), and a small ring remembers when each recent one was sent
 * and for which session, so that a RESULT is matched to its keepalive
 * without any chance of being taken for a request's. A LOST_HOLDS (the
 * session's lost holds, async_session.c) takes its id from the same range.
 */
#ifndef BATON_CLIENT_ASYNC_INT_H
#define BATON_CLIENT_ASYNC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "baton/baton_async.h"
#include "proto/buf.h"
#include "proto/errmsg.h"
#include "proto/lockreq.h"
#include "proto/msg.h"
#include "proto/tls.h"
#include "proto/u64map.h"

#define BATON__MAX_ENDPOINTS 16
#define BATON__ATTEMPT_MS 1000    /* connect + HELLO must finish within this */
/* Back-off before retrying: the first after a connection that reached the
 * leader is 10..20 ms, each next one twice as long, up to 50..100 ms
 * (async_conn.c, backoff). */
#define BATON__BACKOFF_FIRST_MS 10
#define BATON__BACKOFF_MIN_MS 50
#define BATON__BACKOFF_MAX_MS 100
#define BATON__MAX_REDIRECTS 3    /* redirects in a row followed at once */
/* A node that owes an answer (HELLO_OK, or a reply to a request sent) and
 * sends no byte for this long is left for another (async_conn.c,
 * "A silent node"). */
#define BATON__SILENT_MS 500

#define BATON__DEFAULT_CONNECT_MS 5000
#define BATON__DEFAULT_OP_MS 10000
#define BATON__DEFAULT_TTL_MS 10000

/* The client's lease ends this much before ttl after the send of the last
 * acknowledged message: BATON__LEASE_DRIFT_PER_MILLE of the ttl for the
 * two clocks' rates (the leader's and this machine's may differ by up to
 * 0.2%, four times what NTP allows), plus BATON__LEASE_DELTA_MS for the
 * granularity of both clocks (ms) and the time between reading the clock
 * and sending. docs/design.md, "Leases and liveness". */
#define BATON__LEASE_DRIFT_PER_MILLE 2
#define BATON__LEASE_DELTA_MS 5

/* Keepalive req_ids: 2^63 and up. Seqs and HELLO ids count up from 1 and
 * can never get there. */
#define BATON__KA_ID_BASE (UINT64_C(1) << 63)
#define BATON__KA_RING 8 /* keepalives remembered for matching replies */

/* One endpoint: an IP literal's socket address (len 0 for a host name,
 * resolved at each attempt), its text for messages, the host a TLS node's
 * certificate must name (the IP address or name as written, without
 * brackets) and the port. */
struct baton__addr {
    struct sockaddr_storage sa;
    socklen_t len;
    char text[BATON_MAX_ADDR + 8];
    char host[BATON_MAX_ADDR + 1];
    uint16_t port;
};

#define BATON__MAX_RESOLVED 8 /* addresses of one name tried in one attempt */

/* Connection states. */
enum baton__cstate {
    BATON__C_IDLE = 0,   /* no socket, nothing scheduled */
    BATON__C_BACKOFF,    /* no socket; reconnect at ac->reconnect_at */
    BATON__C_RESOLVING,  /* no socket; the resolver looks the host name up */
    BATON__C_CONNECTING, /* non-blocking connect in progress */
    BATON__C_HELLO,      /* HELLO sent, HELLO_OK awaited */
    BATON__C_READY,      /* requests may be sent */
};

/* Session states. A session that expired (or whose lease ran out here)
 * leaves the context in BATON__S_GONE; the next call opens a fresh one
 * (OPENING again, with an OPEN request marked `reopen`). */
enum baton__sstate {
    BATON__S_NONE = 0, /* baton_async_open not called */
    BATON__S_OPENING,  /* OPEN_SESSION pending (the first or a fresh session) */
    BATON__S_OPEN,
    BATON__S_CLOSING,  /* baton_async_close_session called */
    BATON__S_CLOSED,   /* closed in the cluster (or given up): no more I/O */
    BATON__S_FAILED,   /* could not open the first session: only free remains */
    BATON__S_GONE,     /* the session ended; no session until the next call */
};

enum baton__kind {
    BATON__K_OPEN = 1,
    BATON__K_ACQUIRE,
    BATON__K_RELEASE,
    BATON__K_CANCEL,
    BATON__K_CLOSE,
    BATON__K_HELD, /* not a request: a held lock (see "Held locks" above) */
    BATON__K_QUEUED, /* not a request: a queued-notice for the queued callback;
                        on ac->done only (fence = the position, data = the
                        lock call's data) */
    BATON__K_RAW,   /* a sessionless request (async_raw.c) */
    BATON__K_REPLY, /* not a request: one reply to a K_RAW, on ac->done only
                       (frame = the reply, encoded; cb and data its K_RAW's) */
    BATON__K_PROCLAIM, /* a PROCLAIM: a session op like RELEASE (fence, value) */
    BATON__K_WATCH,    /* a WATCH2 stream (async_watch.c); its end callback */
    BATON__K_WEVENT,   /* not a request: one event of a K_WATCH, on ac->done only
                          (ev; `watch` its K_WATCH, `target` the stream id it
                          came on) */
};

/* The callback of a sessionless request (async_raw.c): once per reply
 * with status 0 and the reply m (valid during the call), `last` set on
 * the final one; or once with status < 0 and m NULL when it failed
 * (baton_async_errmsg says why), which is always the last. */
typedef void baton__raw_cb(baton_async_t *ac, int status, const struct msg *m, bool last,
                           void *data);

/* States of a BATON__K_HELD entry. */
enum baton__hstate {
    BATON__H_HELD = 0,
    BATON__H_RELEASING, /* its RELEASE (request id in `target`) is in flight */
    BATON__H_LOST,      /* declared lost; `status` says why */
};

enum baton__rstate {
    BATON__R_UNSENT = 0,
    BATON__R_SENT,
    BATON__R_WAITING, /* ACQUIRE answered QUEUED; its push is awaited */
};

struct baton__req {
    struct baton__req *prev, *next; /* ac->reqs in id order; K_HELD: ac->held */
    struct baton__req *dnext;       /* ac->done */
    uint64_t id;                    /* req_id, and seq for session requests */
    uint8_t kind;                   /* enum baton__kind */
    uint8_t state;                  /* enum baton__rstate; K_HELD: enum baton__hstate */
    bool in_table;                  /* linked in ac->reqs and ac->map */
    bool in_held;                   /* K_HELD: linked in ac->held */
    bool in_done;                   /* queued on ac->done */
    bool user;                      /* the caller's callback is still owed */
    bool user_queued;               /* what is queued on ac->done is a caller's callback */
    bool reopen;                    /* OPEN: of a fresh session, not the first */
    bool notify;                    /* OPEN (reopen): the session callback is owed */
    bool ever_sent;                 /* may have reached the cluster */
    bool queued;                    /* ACQUIRE: answered QUEUED, so applied: kept
                                       in the acks until it ends (above) */
    uint64_t sent_gen;              /* connection it was last sent on */
    uint64_t sent_at;               /* when it was last sent (ms, monotonic) */
    uint64_t session;               /* K_HELD: the session holding the lock */
    uint64_t deadline;              /* op deadline (ms, monotonic); 0: none */
    uint64_t safety_at;             /* ACQUIRE, wait_ms > 0: CANCEL from then */
    int64_t wait_ms;                /* ACQUIRE */
    int32_t lock_delay_ms;          /* ACQUIRE: as asked (0 server default, -1 none) */
    uint8_t mode;                   /* ACQUIRE: BATON_MODE_* */
    uint32_t limit;                 /* ACQUIRE: 0/1 ordinary lock, N semaphore */
    uint8_t reentrant;              /* ACQUIRE: 1 = reentrant */
    uint64_t fence;                 /* RELEASE: to release; ACQUIRE, K_HELD: granted */
    uint64_t target;                /* CANCEL: the waiter (ACQUIRE id); K_HELD:
                                       the RELEASE in flight while RELEASING */
    uint64_t waiter;                /* K_HELD: the seq of the ACQUIRE that won it */
    uint64_t nonce;                 /* OPEN: the session's nonce, the same in every
                                       re-send (proto/msg.h) */
    uint64_t cancel_id;             /* ACQUIRE: its CANCEL in flight, 0 none */
    int cancel_status;              /* ACQUIRE: its result if the cancel wins */
    int status;                     /* the result handed to the callback; K_HELD:
                                       why it was lost (0 while not lost) */
    struct baton__req *held;        /* ACQUIRE with a caller: its K_HELD entry,
                                       reserved at call time; NULL once granted */
    char *errmsg;                   /* its message when status < 0 */
    uint8_t *value;                 /* ACQUIRE, PROCLAIM: the hold's value (malloc'd),
                                       NULL when value_len is 0; K_WATCH of an
                                       election: the leader's value seen last */
    size_t value_len;
    uint8_t acq_flags;              /* ACQUIRE: BATON_ACQ_* that ACQUIRE2 carries (owners.c) */
    uint64_t acq_fence;             /* ACQUIRE with BATON_ACQ_OWNERS and reentrant: the
                                       fence of the hold it re-enters, which ACQUIRE2
                                       carries; 0 otherwise */
    /* K_WATCH (async_watch.c). */
    uint8_t wflags;                 /* BATON_WATCH_PREFIX */
    bool observe;                   /* an election's observer: changes of the
                                       leader (session, fence, value) only */
    bool owned;                     /* the callback takes each event (the blocking
                                       API), freeing it with baton_event_free */
    bool established;               /* an event came on the current stream */
    bool cancelled;                 /* unwatched: queued events are dropped */
    bool lead_known;                /* observe: lead_* hold what was last passed on */
    uint64_t lead_session, lead_fence;
    uint64_t resume;                /* the revision the stream is complete up to:
                                       WATCH2's `after` on the next (re)send */
    struct baton__req *watch;       /* K_WEVENT: its K_WATCH */
    baton_event *ev;                /* K_WEVENT: the event (one block) */
    uint32_t n_more;                /* ACQUIRE of a multi-lock: the names after `name` */
    struct msg_lock_name *more;     /* ... malloc'd with their bytes (one block); NULL */
    struct baton__claim *claim;     /* ACQUIRE, K_HELD: its names in the owner index
                                       (owners.c); NULL: none */
    union {
        baton_async_open_cb *open;
        baton_async_lock_cb *lock;
        baton_async_done_cb *done;
        baton__raw_cb *raw;
        baton_async_watch_cb *watch;
    } cb;
    uint8_t *frame;                 /* K_RAW: the request, K_REPLY: the reply, encoded */
    size_t frame_len;
    bool stream;                    /* K_RAW: more replies follow the first */
    uint16_t push_type;             /* K_RAW stream: its replies' type (pushes with
                                       req_id 0 of this type are its too) */
    void *data;
    uint16_t name_len;
    char name[]; /* NUL-terminated */
};

struct baton_async {
    /* Options. */
    char *client_name;
    unsigned connect_timeout_ms, op_timeout_ms, session_ttl_ms;
    struct baton__addr eps[BATON__MAX_ENDPOINTS];
    size_t n_eps;
    size_t ep_next;           /* the endpoint to try next */
    size_t round_fails;       /* failed attempts in a row */
    unsigned backoffs;        /* back-offs since the leader last answered */
    struct baton__addr redirect;
    bool have_redirect;       /* the next attempt goes to `redirect` */
    bool cur_is_redirect;     /* the current attempt went to a redirect */
    unsigned redirects_in_row;
    char cur_text[BATON_MAX_ADDR + 8]; /* address of the current attempt */
    char cur_host[BATON_MAX_ADDR + 1]; /* and its host (struct baton__addr) */
    /* The current attempt's socket addresses (an IP literal's, or what its
     * name resolved to), tried in order. */
    struct sockaddr_storage try_sa[BATON__MAX_RESOLVED];
    socklen_t try_len[BATON__MAX_RESOLVED];
    unsigned n_try, try_next;
    baton_async_resolver resolver; /* start NULL: blocking getaddrinfo */
    void *lookup;             /* the resolver's lookup in flight, or NULL */

    /* Event loop. */
    baton_async_hooks ev;
    bool attached;
    bool ev_read, ev_write;   /* what the adapter watches now */
    bool timer_armed;
    uint64_t timer_at;

    /* Connection. */
    int fd;
    uint8_t cstate;           /* enum baton__cstate */
    uint64_t gen;             /* bumped whenever a connection is dropped */
    bool confirmed;           /* this connection has reached the leader */
    struct buf in, out;       /* plaintext: frames received / to send */
    uint64_t rx_bytes;        /* bytes this connection has received */
    uint64_t rx_at;           /* when it last received a byte, or said HELLO */
    char silent_text[BATON_MAX_ADDR + 8]; /* the address last left for its silence */
    uint64_t silent_until;    /* ...skipped in the endpoints' turn until then */
    bool silenced;            /* a silent node was left, and no request has been
                                 answered since: confirming a connection then
                                 does not restart the requests' op timeouts */
    uint64_t hello_id;
    uint64_t attempt_deadline;
    uint64_t reconnect_at;

    /* Session. */
    uint8_t sstate;           /* enum baton__sstate */
    uint64_t session;
    uint32_t ttl_ms;          /* as granted by the cluster */
    bool opened;              /* baton_async_open was called */
    uint64_t lease_base;      /* send time of the last acknowledged message
                                 naming the session; the lease ends ttl later */
    uint64_t ka_at;           /* next keepalive due (ms); 0: none */
    uint64_t ka_next_id;      /* next keepalive req_id */
    unsigned ka_pos;          /* next slot of ka[] */
    struct baton__ka_slot {
        uint64_t id, sent_at, session;
        uint64_t gen;         /* the connection it went out on (ac->gen) */
        bool answered;
    } ka[BATON__KA_RING];     /* recent keepalives */

    /* Owners: a hash of a lock name -> the claims on names of that hash
     * (owners.c). */
    struct u64map owners;

    /* Held locks (see "Held locks" above). */
    struct baton__req *held_head, *held_tail;
    struct u64map held_map;   /* fence -> entry (proto/u64map.h) */
    size_t held_unmapped;     /* entries the map had no room for */
    baton_async_lost_cb *lost_cb;
    void *lost_data;
    uint64_t lost_fetch_id;   /* LOST_HOLDS in flight (a keepalive-range id), 0: none */
    uint64_t lost_fetch_gen;  /* the connection it went out on */
    baton_async_open_cb *session_cb;
    void *session_data;
    baton_async_queued_cb *queued_cb;
    void *queued_data;

    /* Requests. */
    uint64_t next_id;
    uint64_t held_id;         /* the lowest ACQUIRE held back, 0: none */
    struct baton__req *head, *tail;
    struct u64map map;        /* request id -> request (proto/u64map.h) */
    struct baton__req *done_head, *done_tail;
    unsigned n_user;          /* callbacks owed */

    /* Callbacks and deferred free. */
    unsigned depth;           /* handlers / callbacks on the stack */
    bool free_req;            /* baton_async_free was called inside one */
    bool freeing;

    /* TLS and credentials (async_tls.c). */
    char *token;              /* sent in HELLO; NULL: none */
    tls_ctx *tls_ctx;         /* NULL: plaintext connections */
    bool tls_cert_set;        /* a client certificate is configured */
    tls *tls;                 /* the current connection's TLS endpoint */
    struct buf net;           /* ciphertext not yet written */
    bool plain_answer;        /* a TLS connection's node answered in plaintext */

    /* Sessionless requests (async_raw.c). */
    unsigned n_raw;           /* K_RAW requests in the table */
    unsigned n_watch;         /* K_WATCH requests in the table */
    bool one_node;            /* talk to the first endpoint only: no redirect
                                 is followed, a failed connection fails them */
    uint32_t node_id;         /* the node of the current connection (HELLO_OK) */

    uint64_t rng;
    char errmsg[BATON_ERRMSG_SIZE];  /* the last error, as baton_async_errmsg */
    char connerr[BATON_ERRMSG_SIZE]; /* the last connection error, for EUNAVAIL */
};

/* async.c */
uint64_t baton__now(void);
uint32_t baton__rand(baton_async_t *ac, uint32_t lo, uint32_t hi);
void baton__seterr(baton_async_t *ac, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void baton__enter(baton_async_t *ac);
void baton__leave(baton_async_t *ac);
void baton__sched(baton_async_t *ac, uint64_t at);
void baton__set_deadline(baton_async_t *ac, struct baton__req *r, uint64_t at);
struct baton__req *baton__req_alloc(int kind, const char *name, size_t name_len);
struct baton__req *baton__req_new(baton_async_t *ac, int kind, const char *name, size_t name_len);
void baton__req_free(struct baton__req *r);
void baton__queue_done(baton_async_t *ac, struct baton__req *r);
struct baton__req *baton__req_find(baton_async_t *ac, uint64_t id);
void baton__req_complete(baton_async_t *ac, struct baton__req *r, int status, uint64_t fence);
void baton__req_remove(baton_async_t *ac, struct baton__req *r);
void baton__finish(baton_async_t *ac, struct baton__req *r, int status, uint64_t fence);
uint64_t baton__acks(const baton_async_t *ac, struct msg_seq keep[BATON_MAX_KEEP],
                     uint32_t *n_keep);
uint64_t baton__nonce(baton_async_t *ac);
void baton__fail_all(baton_async_t *ac, int status, const struct baton__req *keep);

/* async_conn.c */
int baton__parse_addr(const char *s, size_t n, struct baton__addr *a, const char **why);
/* async_conn.c: the resolver answered the current attempt's lookup. */
struct addrinfo;
void baton__conn_resolved(baton_async_t *ac, const struct addrinfo *res, const char *why);
/* async.c: the callback given to the resolver (enters the core). */
void baton__on_resolved(void *arg, const void *res, const char *why);
void baton__conn_err(baton_async_t *ac, const char *what, const char *why);
void baton__conn_start(baton_async_t *ac);
void baton__conn_drop(baton_async_t *ac);
void baton__conn_fail(baton_async_t *ac, bool backoff);
void baton__conn_refused(baton_async_t *ac, int status);
void baton__conn_oom(baton_async_t *ac, const char *what);
void baton__conn_redirect(baton_async_t *ac, const char *addr, size_t n);
void baton__conn_check_timers(baton_async_t *ac, uint64_t now);
uint64_t baton__conn_next_timer(const baton_async_t *ac);
int baton__send_msg(baton_async_t *ac, const struct msg *m);
void baton__want_write(baton_async_t *ac);
void baton__read(baton_async_t *ac);
void baton__write(baton_async_t *ac);

/* async_ops.c */
bool baton__session_known(const baton_async_t *ac);
void baton__flush_unsent(baton_async_t *ac);
void baton__flush_held(baton_async_t *ac);
void baton__req_send(baton_async_t *ac, struct baton__req *r);
/* r went onto the current connection's output: note when and on which. */
void baton__req_sent(baton_async_t *ac, struct baton__req *r);
void baton__try_send(baton_async_t *ac, struct baton__req *r);
void baton__session_closed(baton_async_t *ac, struct baton__req *close, int status);
void baton__on_msg(baton_async_t *ac, const struct msg *m);
void baton__on_conn_lost(baton_async_t *ac, bool was_confirmed);
void baton__ops_check_timers(baton_async_t *ac, uint64_t now);
uint64_t baton__ops_next_timer(const baton_async_t *ac);
void baton__session_fail(baton_async_t *ac, int status);
bool baton__open_refused(baton_async_t *ac, int status);
void baton__ack_lost(baton_async_t *ac, const char *name, size_t name_len, uint64_t fence);

/* async_session.c */
/* The safety margin of a lease of ttl ms (BATON__LEASE_DRIFT_PER_MILLE,
 * BATON__LEASE_DELTA_MS); never more than half the ttl. */
uint64_t baton__lease_margin(uint64_t ttl);
void baton__on_conn_ready(baton_async_t *ac);
void baton__session_started(baton_async_t *ac, uint64_t open_sent_at);
void baton__lease_renew(baton_async_t *ac, uint64_t sent_at);
bool baton__is_keepalive_id(uint64_t req_id);
void baton__on_keepalive_reply(baton_async_t *ac, uint64_t req_id, int status, uint64_t n_lost);
/* End the session if its lease ran out here by `now` (its requests
 * settled as baton__session_lost does): false then, else true. The timer
 * checks it, and so does every read before it handles a reply, since a
 * process stopped past its lease reads what was sent to it before its
 * timer can fire: a grant pushed to a session that has since expired must
 * not be reported as held. */
bool baton__session_lease_check(baton_async_t *ac, uint64_t now);
bool baton__session_check_timers(baton_async_t *ac, uint64_t now);
uint64_t baton__session_next_timer(const baton_async_t *ac);
void baton__session_lost(baton_async_t *ac);
int baton__session_reopen(baton_async_t *ac);
void baton__held_add(baton_async_t *ac, struct baton__req *acquire, uint64_t fence);
struct baton__req *baton__held_find(const baton_async_t *ac, uint64_t fence, const char *name,
                                    size_t name_len);
void baton__held_remove(baton_async_t *ac, struct baton__req *h);
void baton__held_lost(baton_async_t *ac, struct baton__req *h, int why);
void baton__held_all_lost(baton_async_t *ac);
void baton__held_free_all(baton_async_t *ac);
void baton__on_lost_push(baton_async_t *ac, const struct msg *m);
void baton__on_lost_holds(baton_async_t *ac, const struct msg *m);
void baton__on_lost_holds_error(baton_async_t *ac, uint64_t req_id);

/* async_raw.c (see client/call.h for the blocking form) */
int baton__raw_send(baton_async_t *ac, const struct msg *req, bool stream, uint64_t timeout_ms,
                    baton__raw_cb *cb, void *data);
void baton__raw_end_streams(baton_async_t *ac);
void baton__set_one_node(baton_async_t *ac);
bool baton__raw_take(baton_async_t *ac, const struct msg *m);
void baton__raw_write(baton_async_t *ac, struct baton__req *r);
void baton__raw_conn_lost(baton_async_t *ac);
void baton__raw_fail_all(baton_async_t *ac, int status);
void baton__raw_expire(baton_async_t *ac, struct baton__req *r);

/* owners.c (baton_async.h, "Owners") */
/* Claim the names of lock call r (an ACQUIRE, its name and more names
 * set) for owner, and decide how a single name goes (r->acq_flags,
 * r->acq_fence, r->reentrant). 0; BATON_ENOMEM; or, claiming nothing, the
 * reason for BATON_EDEADLK: */
#define BATON__OWNERS_HAS 1   /* the owner holds or waits for the name */
#define BATON__OWNERS_WAITS 2 /* reentrant, but the owner only waits for it */
int baton__owners_claim(baton_async_t *ac, struct baton__req *r, uint64_t owner);
/* Lock call acquire was granted: its claim moves to its held-lock entry. */
void baton__owners_granted(struct baton__req *acquire, struct baton__req *held);
/* r is being freed: its claim goes (baton__req_free). */
void baton__owners_drop(struct baton__req *r);
/* The context is being freed, every request already: free the index. */
void baton__owners_free(baton_async_t *ac);
/* async_watch.c */
/* Start a watch; observe: an election's observer (flags 0); owned: the
 * callback takes each event it gets (the blocking API). As
 * baton_async_watch otherwise. */
int baton__watch_start(baton_async_t *ac, const char *key, unsigned flags, uint64_t after,
                       bool observe, bool owned, baton_async_watch_cb *cb, void *data,
                       baton_async_watch_t **out);
/* Drop what the stream of w has not delivered yet and subscribe again
 * from `after` (the blocking API's queue overflowed): w's events then say
 * what changed since. 0, or BATON_ENOMEM (w then ends with it). */
int baton__watch_restart(baton_async_t *ac, baton_async_watch_t *w, uint64_t after);
/* baton_async_lock_state; owned: the callback takes the state (the
 * blocking API), freeing it with baton_lock_state_free. */
int baton__lock_state_read(baton_async_t *ac, const char *name, bool owned,
                           baton_async_state_cb *cb, void *data);
void baton__watch_send(baton_async_t *ac, struct baton__req *r);
bool baton__watch_take(baton_async_t *ac, const struct msg *m);
void baton__watch_expire(baton_async_t *ac, struct baton__req *r, int status);
void baton__watch_fail_new(baton_async_t *ac, int status);
void baton__watch_deliver(baton_async_t *ac, struct baton__req *e);

/* lockstate.c: the public forms, one malloc'd block each (free()); NULL
 * when out of memory. */
baton_lock_state *baton__state_new(const struct msg_lock_state *m);
baton_event *baton__event_new(const struct msg_watch2_event *m);
/* Check a value's length and pointer: 0, BATON_EINVAL, BATON_ETOOBIG. */
int baton__value_check(const void *value, size_t len);

/* async_tls.c */
int baton__tls_setup(baton_async_t *ac, const baton_opts *o, char *err, size_t err_size);
void baton__tls_free(baton_async_t *ac);
int baton__tls_begin(baton_async_t *ac);
void baton__tls_end(baton_async_t *ac);
int baton__tls_wrap(baton_async_t *ac);
int baton__tls_unwrap(baton_async_t *ac, const uint8_t *p, size_t n);
int baton__plain_check(baton_async_t *ac, size_t n);
void baton__send_alert(baton_async_t *ac);

/* cancel.c: a blocking call waiting with a cancel handle (baton.h,
 * "Cancelling a wait"). fire runs under the handle's mutex when it is
 * fired, must not wait, and must not join or leave. */
struct baton__cancel_reg {
    struct baton__cancel_reg *prev, *next;
    void (*fire)(struct baton__cancel_reg *r);
};
/* Join: 0, or BATON_ECANCELED (already fired: r did not join). */
int baton__cancel_join(baton_cancel_t *c, struct baton__cancel_reg *r);
void baton__cancel_leave(baton_cancel_t *c, struct baton__cancel_reg *r);

/* Is *a a set of options a lock call on n names may take (proto/lockreq.h;
 * many: baton_lock_many and baton_async_lock_many)? */
bool baton__lock_args_ok(const baton_lock_args *a, bool many, size_t n);

#endif /* BATON_CLIENT_ASYNC_INT_H */
