/*
 * async_int.h -- internals of the async core, shared by its three files.
 * Not a public API.
 *
 *   async.c       the context: creation, hooks, the request table, the
 *                 completion queue, the timer, deferred free
 *   async_conn.c  the connection: endpoints, connect, HELLO, read/write,
 *                 redirects, NO_LEADER and back-off
 *   async_ops.c   the session and lock operations: building requests,
 *                 matching RESULT replies and pushes, cancels, timeouts
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
 */
#ifndef BATON_CLIENT_ASYNC_INT_H
#define BATON_CLIENT_ASYNC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "client/baton_async.h"
#include "proto/buf.h"
#include "proto/msg.h"

#define BATON__MAX_ENDPOINTS 16
#define BATON__ATTEMPT_MS 1000    /* connect + HELLO must finish within this */
#define BATON__BACKOFF_MIN_MS 50  /* back-off before retrying: 50..100 ms */
#define BATON__BACKOFF_MAX_MS 100
#define BATON__MAX_REDIRECTS 3    /* redirects in a row followed at once */
#define BATON__ERRMSG 256

#define BATON__DEFAULT_CONNECT_MS 5000
#define BATON__DEFAULT_OP_MS 10000
#define BATON__DEFAULT_TTL_MS 10000

/* One endpoint: a resolved socket address and its text for messages. */
struct baton__addr {
    struct sockaddr_storage sa;
    socklen_t len;
    char text[BATON_MAX_ADDR + 8];
};

/* Connection states. */
enum baton__cstate {
    BATON__C_IDLE = 0,   /* no socket, nothing scheduled */
    BATON__C_BACKOFF,    /* no socket; reconnect at ac->reconnect_at */
    BATON__C_CONNECTING, /* non-blocking connect in progress */
    BATON__C_HELLO,      /* HELLO sent, HELLO_OK awaited */
    BATON__C_READY,      /* requests may be sent */
};

/* Session states. The next step (keepalives, expiry, re-attach) adds its
 * states here; BATON__S_FAILED is where a lost session ends today. */
enum baton__sstate {
    BATON__S_NONE = 0, /* baton_async_open not called */
    BATON__S_OPENING,  /* OPEN_SESSION pending */
    BATON__S_OPEN,
    BATON__S_CLOSING,  /* baton_async_close_session called */
    BATON__S_CLOSED,   /* closed in the cluster (or given up): no more I/O */
    BATON__S_FAILED,   /* could not open, or the cluster forgot the session */
};

enum baton__kind {
    BATON__K_OPEN = 1,
    BATON__K_ACQUIRE,
    BATON__K_RELEASE,
    BATON__K_CANCEL,
    BATON__K_CLOSE,
};

enum baton__rstate {
    BATON__R_UNSENT = 0,
    BATON__R_SENT,
    BATON__R_WAITING, /* ACQUIRE answered QUEUED; its push is awaited */
};

struct baton__req {
    struct baton__req *prev, *next; /* ac->reqs, in id order */
    struct baton__req *dnext;       /* ac->done */
    uint64_t id;                    /* req_id, and seq for session requests */
    uint8_t kind;                   /* enum baton__kind */
    uint8_t state;                  /* enum baton__rstate */
    bool in_table;                  /* linked in ac->reqs and ac->map */
    bool in_done;                   /* queued on ac->done */
    bool user;                      /* the caller's callback is still owed */
    bool ever_sent;                 /* may have reached the cluster */
    uint64_t sent_gen;              /* connection it was last sent on */
    uint64_t deadline;              /* op deadline (ms, monotonic); 0: none */
    uint64_t safety_at;             /* ACQUIRE, wait_ms > 0: CANCEL from then */
    int64_t wait_ms;                /* ACQUIRE */
    uint64_t fence;                 /* RELEASE: to release; ACQUIRE: granted */
    uint64_t target;                /* CANCEL: the waiter (ACQUIRE id) */
    uint64_t cancel_id;             /* ACQUIRE: its CANCEL in flight, 0 none */
    int cancel_status;              /* ACQUIRE: its result if the cancel wins */
    int status;                     /* the result handed to the callback */
    char *errmsg;                   /* its message when status < 0 */
    union {
        baton_async_open_cb *open;
        baton_async_lock_cb *lock;
        baton_async_done_cb *done;
    } cb;
    void *data;
    uint16_t name_len;
    char name[]; /* NUL-terminated */
};

/* An open-addressing map id -> request (linear probing, no tombstones). */
struct baton__map {
    uint64_t *keys; /* 0: empty slot */
    struct baton__req **vals;
    size_t cap;     /* a power of two, or 0 */
    size_t n;
};

struct baton_async {
    /* Options. */
    char *client_name;
    unsigned connect_timeout_ms, op_timeout_ms, session_ttl_ms;
    struct baton__addr eps[BATON__MAX_ENDPOINTS];
    size_t n_eps;
    size_t ep_next;           /* the endpoint to try next */
    size_t round_fails;       /* failed attempts in a row */
    struct baton__addr redirect;
    bool have_redirect;       /* the next attempt goes to `redirect` */
    bool cur_is_redirect;     /* the current attempt went to a redirect */
    unsigned redirects_in_row;
    char cur_text[BATON_MAX_ADDR + 8]; /* address of the current attempt */

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
    struct buf in, out;
    uint64_t hello_id;
    uint64_t attempt_deadline;
    uint64_t reconnect_at;

    /* Session. */
    uint8_t sstate;           /* enum baton__sstate */
    uint64_t session;
    uint32_t ttl_ms;          /* as granted by the cluster */
    bool opened;              /* baton_async_open was called */

    /* Requests. */
    uint64_t next_id;
    struct baton__req *head, *tail;
    struct baton__map map;
    struct baton__req *done_head, *done_tail;
    unsigned n_user;          /* callbacks owed */

    /* Callbacks and deferred free. */
    unsigned depth;           /* handlers / callbacks on the stack */
    bool free_req;            /* baton_async_free was called inside one */
    bool freeing;

    uint64_t rng;
    char errmsg[BATON__ERRMSG];  /* the last error, as baton_async_errmsg */
    char connerr[BATON__ERRMSG]; /* the last connection error, for EUNAVAIL */
};

/* async.c */
uint64_t baton__now(void);
uint32_t baton__rand(baton_async_t *ac, uint32_t lo, uint32_t hi);
void baton__seterr(baton_async_t *ac, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void baton__enter(baton_async_t *ac);
void baton__leave(baton_async_t *ac);
void baton__sched(baton_async_t *ac, uint64_t at);
void baton__set_deadline(baton_async_t *ac, struct baton__req *r, uint64_t at);
struct baton__req *baton__req_new(baton_async_t *ac, int kind, const char *name, size_t name_len);
struct baton__req *baton__req_find(baton_async_t *ac, uint64_t id);
void baton__req_complete(baton_async_t *ac, struct baton__req *r, int status, uint64_t fence);
void baton__req_remove(baton_async_t *ac, struct baton__req *r);
void baton__finish(baton_async_t *ac, struct baton__req *r, int status, uint64_t fence);
uint64_t baton__ack_below(const baton_async_t *ac);
void baton__fail_all(baton_async_t *ac, int status, const struct baton__req *keep);

/* async_conn.c */
int baton__parse_addr(const char *s, size_t n, struct baton__addr *a);
void baton__conn_start(baton_async_t *ac);
void baton__conn_drop(baton_async_t *ac);
void baton__conn_fail(baton_async_t *ac, bool backoff);
void baton__conn_redirect(baton_async_t *ac, const char *addr, size_t n);
void baton__conn_check_timers(baton_async_t *ac, uint64_t now);
uint64_t baton__conn_next_timer(const baton_async_t *ac);
int baton__send_msg(baton_async_t *ac, const struct msg *m);
void baton__want_write(baton_async_t *ac);
void baton__read(baton_async_t *ac);
void baton__write(baton_async_t *ac);

/* async_ops.c */
void baton__flush_unsent(baton_async_t *ac);
void baton__req_send(baton_async_t *ac, struct baton__req *r);
void baton__on_msg(baton_async_t *ac, const struct msg *m);
void baton__on_conn_lost(baton_async_t *ac, bool was_confirmed);
void baton__ops_check_timers(baton_async_t *ac, uint64_t now);
uint64_t baton__ops_next_timer(const baton_async_t *ac);
void baton__session_fail(baton_async_t *ac, int status);

#endif /* BATON_CLIENT_ASYNC_INT_H */
