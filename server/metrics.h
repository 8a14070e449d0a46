/*
 * metrics.h -- batond's metric registry and its Prometheus text rendering
 * (docs/operations.md, "Metrics and health", lists every metric).
 *
 * A fixed table of counters, gauges and histograms (fixed buckets), all
 * named baton_*, that the other files of server/ bump with one call where
 * the event happens. Everything runs on the loop thread: no locks. The
 * registry is one per process (batond runs one server). Everyone calls
 * it, and it calls no other file of server/ (its layer: the map in
 * server/server_int.h).
 *
 * Gauges that only mirror the server's state (raft term, indexes,
 * connections...) are set just before a render by server/observe.c.
 */
#ifndef BATON_SERVER_METRICS_H
#define BATON_SERVER_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"

enum metric_id {
    /* gauges, set by observe.c before a render */
    M_NODE_ID,
    M_RAFT_TERM,
    M_RAFT_ROLE,            /* enum node_role: 0 unavailable, 1 follower, 2 candidate, 3 leader */
    M_RAFT_LEADER_ID,
    M_READY,                /* 1: ready leader */
    M_RAFT_COMMIT_INDEX,
    M_RAFT_APPLIED_INDEX,
    M_SESSIONS_OPEN,
    M_CONNECTIONS,
    M_DISK_FREE_BYTES,
    M_DISK_LOW,
    /* counters */
    M_LEADER_CHANGES,
    M_CANDIDACIES,
    M_GRANTS,
    M_ACQUIRES,             /* label outcome: enum metric_acquire */
    M_RELEASES,
    M_SESSIONS_EXPIRED,
    M_LEASE_EXPIRIES,
    M_KEEPALIVES,
    M_KEEPALIVE_ROUNDS,
    M_REFUSALS,             /* label reason: enum metric_refusal */
    M_PUSHES,               /* label type: enum metric_push */
    M_SNAPSHOTS,
    M_BYTES_IN,
    M_BYTES_OUT,
    /* histograms */
    M_COMMIT_SECONDS,
    M_APPLY_SECONDS,
    M_BATCH_COMMANDS,
    M_QUEUE_LENGTH,
    M_LOCK_WAIT_SECONDS,
    M_SNAPSHOT_SECONDS,
    M_LOOP_LAG_SECONDS,
    M_COUNT_
};

/* M_ACQUIRES's outcome label. */
enum metric_acquire { ACQ_GRANTED, ACQ_QUEUED, ACQ_BUSY, ACQ_ERROR, ACQ_UNKNOWN, ACQ_COUNT_ };

/* M_REFUSALS's reason label: why a connection or a request was refused. */
enum metric_refusal {
    REF_MAX_CONNS,          /* --max-conns */
    REF_UNAUTH,             /* --max-unauth-conns: the oldest unauthenticated closed */
    REF_HANDSHAKE_TIMEOUT,  /* no TLS handshake + HELLO within --handshake-timeout */
    REF_AUTH,               /* HELLO refused (unknown token or certificate) */
    REF_PERM,               /* a request beyond the principal's role or prefixes */
    REF_FRAME_TIMEOUT,      /* --frame-timeout */
    REF_MALFORMED,          /* a frame that cannot be decoded */
    REF_TLS,                /* a TLS handshake or TLS/plaintext mismatch */
    REF_UNREAD,             /* replies left unread (64 MiB, --max-unread-mb) */
    REF_DISK_FULL,          /* --min-free-mb */
    REF_MAX_SESSIONS,       /* the principal's max-sessions */
    REF_COUNT_
};

/* M_PUSHES's type label. */
enum metric_push { PUSH_GRANTED, PUSH_WAIT_FAILED, PUSH_LOST, PUSH_SESSION_EXPIRED,
                   PUSH_WATCH_EVENT, PUSH_COUNT_ };

/* How many locks baton_lock_queue_length{lock} lists at most. */
#define METRICS_TOP_LOCKS 10

void metrics_inc(enum metric_id id);                 /* counter += 1 */
void metrics_add(enum metric_id id, uint64_t n);     /* counter += n */
void metrics_inc_label(enum metric_id id, unsigned label); /* labelled counter += 1 */
void metrics_set(enum metric_id id, int64_t v);      /* gauge = v */
void metrics_observe(enum metric_id id, double v);   /* histogram: one observation */

/* The monotonic clock in ns, for durations. */
uint64_t metrics_now_ns(void);
/* Observe the seconds since start_ns (metrics_now_ns) in histogram id. */
void metrics_observe_since(enum metric_id id, uint64_t start_ns);

/*
 * Lock waits (M_LOCK_WAIT_SECONDS): a queued ACQUIRE (session, waiter)
 * started waiting now; it was granted now. A bounded table (later marks
 * overwrite older ones that share a slot; a grant without its mark is not
 * observed), so a wait whose start this node did not see -- it queued
 * under another leader -- is left out, and memory stays fixed.
 */
void metrics_wait_start(uint64_t session, uint64_t waiter);
void metrics_wait_granted(uint64_t session, uint64_t waiter);

/*
 * The longest lock queues (baton_lock_queue_length{lock}): at most
 * METRICS_TOP_LOCKS locks. metrics_top_note(name, len, qlen) offers a
 * lock's queue length (a lock already listed is updated; a new one
 * replaces the shortest listed if longer); qlen 0 drops it.
 * metrics_top_get reads entry i (0..metrics_top_count()) for a refresh.
 */
void metrics_top_note(const char *name, size_t len, uint32_t qlen);
size_t metrics_top_count(void);
void metrics_top_get(size_t i, const char **name, size_t *len);
void metrics_top_clear(void);

/*
 * Append the Prometheus text exposition (format 0.0.4) of every metric
 * to out: HELP and TYPE lines, counters ending in _total, histograms
 * with cumulative _bucket{le} lines, _sum and _count. Returns 0 or
 * BATON_ENOMEM (out may then hold part of the text).
 */
int metrics_render(struct buf *out);

/*
 * Append s[0..n) to out as a label value of the exposition format: \ " and
 * newline escaped as \\ \" \n, valid UTF-8 kept, and every other byte (a
 * control character, a byte of invalid UTF-8) and % itself as %XX, so a
 * hostile lock name can neither end the label nor make the text invalid
 * UTF-8. 0 or BATON_ENOMEM.
 */
int metrics_escape_label(struct buf *out, const char *s, size_t n);

/* Zero every metric (tests). */
void metrics_reset(void);

#endif
