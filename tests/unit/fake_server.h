/*
 * fake_server.h -- a TEST DOUBLE of batond for libbaton's unit tests
 * (tests/unit/test_client_*.c). There is no batond there: the tests talk to
 * these fake servers.
 *
 * Each fake listens on 127.0.0.1 at a free port (f->addr), runs on its own
 * thread with a poll() loop and speaks the real wire protocol through
 * proto/msg.h. It keeps sessions, a FIFO queue per lock, fences and a
 * (session, seq) dedup table in memory, grants and pushes like the protocol
 * says, and can be told to misbehave: answer REDIRECT to another fake,
 * answer NO_LEADER a number of times, drop a connection right after a
 * QUEUED reply, never answer ACQUIRE, ignore wait deadlines, or claim
 * another protocol version. It answers KEEPALIVE (and can be told to stop
 * answering it), and a test can make it expire a session (LOST pushes for
 * its locks, then SESSION_EXPIRED), force the release of one lock (a LOST
 * push), forget a session without a word, or drop every connection. It has
 * no Raft, no persistence and no lease timers of its own; it only has to be
 * faithful enough for the client's side of the protocol.
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

#include "client/baton_defs.h"
#include "proto/buf.h"

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
    struct buf in;
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
    uint32_t hello_version;
    bool ka_silent;        /* do not answer KEEPALIVE */

    /* Actions a test asks for; the fake thread performs them (under mu)
     * within a few ms and clears them. */
    uint64_t do_expire;    /* expire this session: LOST pushes, SESSION_EXPIRED */
    uint64_t do_forget;    /* forget this session without telling anyone */
    char do_force[64];     /* force the release of this lock: LOST push */
    bool do_drop_all;      /* close every connection */

    /* Counters. */
    int n_conns, n_open, n_acquire, n_release, n_cancel, n_close, n_redirect, n_no_leader;
    int n_dedup_hits, n_keepalive, n_keepalive_ok;
    uint64_t last_acquire_seq, last_ack_below;
    uint64_t last_ka_req_id, last_ka_conn; /* of the last KEEPALIVE received */
    uint64_t last_ok_at;   /* when the last RESULT OK / SESSION was sent (now_ms) */

    /* State, fake thread only. */
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
};

/* Start a fake on a free port of 127.0.0.1; stop it (and free it) with
 * fake_stop. */
struct fake *fake_start(void);
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

/* Ask the fake to force the release of lock `name`. */
void fk_force(struct fake *f, const char *name);

/* Make the fake answer every request with REDIRECT to addr ("": stop). */
void fk_redirect(struct fake *f, const char *addr);

/* An address where nothing listens (bound, then closed again). */
void dead_addr(char *out, size_t n);

#endif /* BATON_TESTS_UNIT_FAKE_SERVER_H */
