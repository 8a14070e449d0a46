/*
 * fake_server.h -- a TEST DOUBLE of batond for libbaton's unit tests
 * (tests/unit/test_client_*.c). There is no batond there: the tests talk to
 * these fake servers.
 *
 * Each fake listens on 127.0.0.1 at a free port (f->addr), runs on its own
 * thread with a poll() loop and speaks the real wire protocol through
 * proto/msg.h. It keeps sessions, a FIFO queue per lock, fences and a
 * (session, seq) dedup table in memory, which it prunes as batond does by
 * what the requests acknowledge (ack_below and the keep list; fk_cached
 * counts a session's entries), answers a re-sent OPEN_SESSION by its nonce,
 * grants and pushes like the protocol says, and can be told to misbehave:
 * answer REDIRECT to another fake,  answer NO_LEADER a number of times
 * (or after applying a command: an outcome the node cannot know),
 * drop a connection right after a QUEUED reply, open a session but drop
 * the connection instead of the SESSION reply, never answer ACQUIRE,
 * ignore wait deadlines, or claim another protocol version. Of the
 * sessionless requests it answers CHECK and WATCH (test_client_call.c),
 * and of protocol 6 (test_client_values.c): ACQUIRE2 as an ACQUIRE that
 * keeps its value, PROCLAIM of a hold, LOCK_STATE with the holder's and
 * the waiters' sessions and values, and one WATCH2 stream at a time (the
 * last one), which it answers as batond does -- STATE then SYNCED from
 * after 0, SYNCED restarted 0 from another after -- and feeds CHANGE and
 * PROGRESS events when a test asks, and UNWATCH. It answers KEEPALIVE (and can be told to stop
 * answering it), and a test can make it expire a session (LOST pushes for
 * its locks, then SESSION_EXPIRED), force the release of one lock (a LOST
 * push -- or none, force_silent -- and a lost hold recorded as batond
 * records it: counted in KEEPALIVE's RESULT, listed by LOST_HOLDS, deleted
 * by the holder's RELEASE, which answers BATON_ELOST), forget a session
 * without a word, or drop every connection. It has
 * no Raft, no persistence and no lease timers of its own; it only has to be
 * faithful enough for the client's side of the protocol.
 *
 * Security (fake_start_tls): the fake can serve TLS (proto/tls.h) with a
 * given certificate, and ask for client certificates. Like batond, a TLS
 * fake answers a plaintext client with a plaintext ERROR(BATON_ETLS) and
 * closes, and a plaintext fake does the same to a TLS ClientHello (unless
 * told to answer a plaintext client with a bare TLS alert instead, as a
 * generic TLS server would: tls_alert_plain). It records the token of every HELLO and
 * the common name of the client's certificate, can refuse HELLO with an
 * ERROR (hello_error: BATON_EAUTH, say) and close, and can refuse one
 * type of request with an ERROR (refuse_type: BATON_EPERM, say) and carry
 * on.
 *
 *     struct fake *f = fake_start();
 *     FK_SET(f, ka_silent, true);            // a behaviour, under f->mu
 *     ... connect a client to f->addr ...
 *     ASSERT_EQ(FK_GET(f, n_open), 1);       // a counter, under f->mu
 *     fake_stop(f);
 *
 * Every helper that can fail FAILs the running test (tests/lib/runner.h).
 */
#ifndef BATON_TESTS_UNIT_FAKE_SERVER_H
#define BATON_TESTS_UNIT_FAKE_SERVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "proto/msg.h"
#include "proto/tls.h"

#define FK_CONNS 64
#define FK_SESSIONS 64
#define FK_LOCKS 256
#define FK_WAITERS 64
#define FK_DEDUP 8192

struct fake;

struct fk_conn {
    struct fake *f;
    int fd;
    uint64_t id;
    bool hello;
    bool dead;
    bool sniffed;   /* its first bytes were looked at */
    bool mute;      /* drop what is sent to it (unknown_outcome) */
    tls *t;         /* TLS endpoint, NULL in plaintext */
    struct buf in;  /* plaintext received */
};

/* What a TLS fake presents and asks for (fake_start_tls). The files are
 * read at start. */
struct fk_tls {
    const char *cert_file, *key_file;
    const char *client_ca;  /* ask clients for a certificate of this CA; NULL: none */
    bool require;           /* and refuse a client without one */
};

struct fk_waiter {
    uint64_t session, waiter;
    uint64_t deadline; /* 0: none */
};

struct fk_lock {
    char name[BATON_MAX_NAME];
    uint16_t len;
    uint64_t holder_session, holder_waiter, fence;
    struct fk_waiter q[FK_WAITERS];
    int nq;
};

struct fk_dedup {
    uint64_t session, seq;
    int32_t status;
    uint8_t kind;
    uint64_t value;
};

struct fk_session {
    uint64_t id;
    uint64_t conn_id;
    uint64_t nonce;     /* of its OPEN_SESSION, 0: none */
    uint64_t ack_floor; /* the highest ack_below its requests carried */
};

/* A hold forced away and not yet acknowledged (storage/store.h, "Lost
 * holds"). */
#define FK_LOSTS 64
struct fk_lost {
    uint64_t session, waiter, fence;
    char name[BATON_MAX_NAME];
    uint16_t len;
};

struct fake {
    int lfd;
    uint16_t port;
    char addr[32];
    pthread_t th;
    int stop[2];
    pthread_mutex_t mu; /* config and counters; held while handling a frame */

    /* Behaviour: set it under mu (FK_SET, fk_redirect), even before the
     * client starts, since the fake's thread runs from fake_start on. */
    char redirect_to[64];  /* answer every request with REDIRECT here */
    int no_leader;         /* answer the next N requests with NO_LEADER */
    bool silent_acquire;   /* never answer ACQUIRE */
    bool no_wait_timeouts; /* do not enforce wait_ms deadlines */
    int drop_after_queued; /* close the connection after the next N QUEUED replies */
    int drop_unanswered;   /* apply the next N ACQUIREs but close instead of replying */
    int unknown_outcome;   /* apply the next N ACQUIREs and RELEASEs but answer
                              NO_LEADER instead of their RESULT, as batond does
                              when its log write of the entry failed */
    int drop_session_reply; /* open the next N sessions but close instead of SESSION */
    uint32_t hello_version;
    bool ka_silent;        /* do not answer KEEPALIVE */
    int32_t hello_error;   /* answer HELLO with ERROR(hello_error, hello_error_msg)
                              and close; 0: HELLO_OK */
    char hello_error_msg[128];
    int refuse_type;       /* answer requests of this type (MSG_*) ... */
    int32_t refuse_code;   /* ... with ERROR(refuse_code, refuse_msg) */
    char refuse_msg[128];
    bool tls_alert_plain;  /* TLS fake: answer a plaintext client with a TLS
                              alert record, not a plaintext ERROR */
    bool force_silent;     /* a forced release sends no LOST push (as when the
                              holder's connection is gone): only its record
                              tells */

    /* Actions a test asks for; the fake thread performs them (under mu)
     * within a few ms and clears them. */
    uint64_t do_expire;    /* expire this session: LOST pushes, SESSION_EXPIRED */
    uint64_t do_forget;    /* forget this session without telling anyone */
    char do_force[64];     /* force the release of this lock: LOST push */
    bool do_drop_all;      /* close every connection */
    int do_watch_change;   /* push this many CHANGE events on the WATCH2 stream */
    int do_watch_progress; /* push this many PROGRESS events on it */
    bool watch_same;       /* its STATE and CHANGE events all show one holder (session 1,
                              fence 1, value "same"): nothing an observer reports */

    /* Counters. */
    int n_conns, n_open, n_acquire, n_release, n_cancel, n_close, n_redirect, n_no_leader;
    int n_dedup_hits, n_keepalive, n_keepalive_ok;
    int n_open_resent;     /* OPEN_SESSIONs answered with the session of their nonce */
    int n_stale;           /* requests answered BATON_ESTALE */
    int n_hello;           /* HELLOs received */
    int n_check, n_watch;  /* CHECKs (answered CHECK_R, index 7) and WATCHes
                              (answered WATCH_EVENT seq 1, then a push of seq 2) */
    int n_lost_holds;      /* LOST_HOLDS received */
    int n_acquire2, n_proclaim, n_lock_state, n_watch2, n_unwatch; /* protocol 6 */
    char last_value[64];   /* of the last ACQUIRE2 or PROCLAIM (NUL added) */
    uint64_t last_after;   /* of the last WATCH2 */
    uint64_t rev;          /* the fake's revision: +1 per event or read */
    int n_lost_acks;       /* RELEASEs that acknowledged a lost hold */
    int n_lost;            /* lost holds recorded now */
    int n_wrong_kind;      /* clients answered "requires TLS" / "does not serve TLS" */
    int n_tls_failed;      /* TLS endpoints that failed */
    char last_token[BATON_MAX_TOKEN + 1]; /* of the last HELLO */
    char last_cn[TLS_MAX_CN + 1];         /* of the last client certificate */
    uint64_t last_acquire_seq, last_ack_below;
    uint32_t last_n_keep;  /* of the last op */
    uint64_t last_keep0;   /* its first kept seq */
    uint64_t last_nonce;   /* of the last OPEN_SESSION */
    uint64_t last_ka_req_id, last_ka_conn; /* of the last KEEPALIVE received */
    uint64_t last_ok_at;   /* when the last RESULT OK / SESSION was sent (now_ms) */

    /* State, fake thread only. */
    tls_ctx *tls;          /* NULL: plaintext */
    struct fk_conn conns[FK_CONNS];
    int nconns;
    uint64_t next_conn_id;
    struct fk_session sessions[FK_SESSIONS];
    int nsessions;
    uint64_t next_session;
    struct fk_lock *locks;
    int nlocks;
    uint64_t next_fence;
    struct fk_dedup *dedup;
    int ndedup;
    struct fk_lost lost[FK_LOSTS];
    uint64_t watch_conn, watch_req; /* the WATCH2 stream: its connection, its req_id */
    char watch_key[BATON_MAX_NAME + 1];
    char values[FK_LOCKS][64];      /* each lock's holder's value (by index) */
};

/* Start a fake on a free port of 127.0.0.1; stop it (and free it) with
 * fake_stop. */
struct fake *fake_start(void);
/* The same serving TLS as t says. */
struct fake *fake_start_tls(const struct fk_tls *t);
void fake_stop(struct fake *f);

/* Read a counter of f safely (the fake thread updates them under mu). */
int64_t fk_get_(struct fake *f, const void *field, size_t size);
#define FK_GET(f, field) fk_get_((f), &(f)->field, sizeof (f)->field)

/* Set a behaviour or ask for an action, under mu. */
#define FK_SET(f, field, value)          \
    do {                                 \
        pthread_mutex_lock(&(f)->mu);    \
        (f)->field = (value);            \
        pthread_mutex_unlock(&(f)->mu);  \
    } while (0)

/* How many cached results the fake holds for session (under mu). */
int fk_cached(struct fake *f, uint64_t session);

/* Ask the fake to force the release of lock `name`. */
void fk_force(struct fake *f, const char *name);

/* Make the fake answer every request with REDIRECT to addr ("": stop). */
void fk_redirect(struct fake *f, const char *addr);

/* Make the fake refuse HELLO with ERROR(code, msg) and close (code 0: stop). */
void fk_hello_error(struct fake *f, int32_t code, const char *msg);

/* Make the fake answer requests of type `type` with ERROR(code, msg). */
void fk_refuse(struct fake *f, int type, int32_t code, const char *msg);

/* Copy the last HELLO's token / the last client certificate's CN (under mu). */
void fk_last_token(struct fake *f, char *out, size_t n);
void fk_last_cn(struct fake *f, char *out, size_t n);

/* An address where nothing listens (bound, then closed again). */
void dead_addr(char *out, size_t n);

#endif /* BATON_TESTS_UNIT_FAKE_SERVER_H */
