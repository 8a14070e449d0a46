/*
 * metrics_table.h -- the one list of batond's metrics and of their labels'
 * values. server/metrics.h makes the enums from it, server/metrics.c the
 * names, help, types, label strings and bucket bounds it renders, and
 * tests/unit/test_metrics_doc.c checks that docs/operations.md ("The
 * metrics") lists exactly these metrics with these labels. A metric is one
 * row here (and one in the doc); a label value is one row of its set.
 *
 * METRICS(X) has one X(id, name, type, labels, buckets, help) per metric,
 * in the order /metrics renders them:
 *   id       the enum metric_id constant the code bumps
 *   name     without the _total the rendering adds to a counter
 *   type     COUNTER, GAUGE, HISTOGRAM, or TOP: a gauge per lock of the
 *            longest queues (metrics_top_note), its label the lock's name
 *   labels   NONE, or a set of METRIC_LABEL_SETS: a COUNTER's fixed
 *            values, or TOP's free one
 *   buckets  NO_BUCKETS, or a HISTOGRAM's BUCKETS(upper bounds, increasing)
 * metrics.c refuses to compile a row whose type, labels and buckets do
 * not go together.
 */
#ifndef BATON_SERVER_METRICS_TABLE_H
#define BATON_SERVER_METRICS_TABLE_H

#define METRICS(X)                                                                          \
    /* gauges, set by observe.c before a render */                                          \
    X(M_NODE_ID, "baton_node_id", GAUGE, NONE, NO_BUCKETS, "This node's raft id.")          \
    X(M_RAFT_TERM, "baton_raft_term", GAUGE, NONE, NO_BUCKETS,                              \
      "The raft term this node is in.")                                                     \
    X(M_RAFT_ROLE, "baton_raft_role", GAUGE, NONE, NO_BUCKETS,                              \
      "This node's raft role: 0 unavailable, 1 follower, 2 candidate, 3 leader.")           \
    X(M_RAFT_LEADER_ID, "baton_raft_leader_id", GAUGE, NONE, NO_BUCKETS,                    \
      "The leader this node knows, 0 if none.")                                             \
    X(M_READY, "baton_ready_leader", GAUGE, NONE, NO_BUCKETS,                               \
      "1 while this node is the ready leader (its barrier applied), else 0.")               \
    X(M_RAFT_COMMIT_INDEX, "baton_raft_commit_index", GAUGE, NONE, NO_BUCKETS,              \
      "The highest log index known committed.")                                             \
    X(M_RAFT_APPLIED_INDEX, "baton_raft_applied_index", GAUGE, NONE, NO_BUCKETS,            \
      "The highest log index applied to the lock store.")                                   \
    X(M_SESSIONS_OPEN, "baton_sessions_open", GAUGE, NONE, NO_BUCKETS,                      \
      "Sessions with a lease on this node (the ready leader; 0 elsewhere).")                \
    X(M_CONNECTIONS, "baton_connections", GAUGE, NONE, NO_BUCKETS,                          \
      "Client connections open on this node.")                                              \
    X(M_WATCHES, "baton_watches", GAUGE, NONE, NO_BUCKETS,                                  \
      "WATCH2 watches (of a lock or a prefix) held on this node (the ready leader).")       \
    X(M_DISK_FREE_BYTES, "baton_disk_free_bytes", GAUGE, NONE, NO_BUCKETS,                  \
      "Bytes free on the filesystem of --data at the last check.")                          \
    X(M_DISK_LOW, "baton_disk_low", GAUGE, NONE, NO_BUCKETS,                                \
      "1 while free space is below --min-free-mb plus the store's next growth "             \
      "(new sessions, acquires and releases that free nothing refused), else 0.")           \
    X(M_FEATURE_LEVEL, "baton_feature_level", GAUGE, NONE, NO_BUCKETS,                      \
      "The feature level this node's binary applies (docs/design.md, \"Feature levels\").")  \
    X(M_CLUSTER_LEVEL, "baton_cluster_feature_level", GAUGE, NONE, NO_BUCKETS,              \
      "The cluster's committed feature level, as this node has applied it.")                \
    /* counters */                                                                          \
    X(M_LEADER_CHANGES, "baton_leader_changes", COUNTER, NONE, NO_BUCKETS,                  \
      "Times this node saw a new leader (the first one included).")                         \
    X(M_CANDIDACIES, "baton_raft_candidacies", COUNTER, NONE, NO_BUCKETS,                   \
      "Times this node became a raft candidate (pre-vote included): it heard "              \
      "from no leader for an election timeout.")                                            \
    X(M_GRANTS, "baton_grants", COUNTER, NONE, NO_BUCKETS,                                  \
      "Locks granted (applied on this node).")                                              \
    X(M_ACQUIRES, "baton_acquires", COUNTER, OUTCOME, NO_BUCKETS,                           \
      "ACQUIRE requests answered by this leader, by outcome.")                              \
    X(M_RELEASES, "baton_releases", COUNTER, NONE, NO_BUCKETS,                              \
      "RELEASE requests that released a lock on this leader.")                              \
    X(M_SESSIONS_EXPIRED, "baton_sessions_expired", COUNTER, NONE, NO_BUCKETS,              \
      "Sessions ended by an expiry (applied on this node).")                                \
    X(M_LEASE_EXPIRIES, "baton_lease_expiries", COUNTER, NONE, NO_BUCKETS,                  \
      "Session leases that ran out on this leader (expiry proposed).")                      \
    X(M_KEEPALIVES, "baton_keepalives", COUNTER, NONE, NO_BUCKETS,                          \
      "KEEPALIVE requests received on this leader.")                                        \
    X(M_KEEPALIVE_ROUNDS, "baton_keepalive_rounds", COUNTER, NONE, NO_BUCKETS,              \
      "Leadership confirmation rounds started for keepalives.")                             \
    X(M_REFUSALS, "baton_refusals", COUNTER, REASON, NO_BUCKETS,                            \
      "Connections or requests refused, by reason.")                                        \
    X(M_PUSHES, "baton_pushes", COUNTER, PUSH_TYPE, NO_BUCKETS,                             \
      "Pushes sent to clients, by type.")                                                   \
    X(M_SNAPSHOTS, "baton_snapshots", COUNTER, NONE, NO_BUCKETS,                            \
      "Raft snapshots this node took.")                                                     \
    X(M_BYTES_IN, "baton_client_bytes_in", COUNTER, NONE, NO_BUCKETS,                       \
      "Bytes read from client connections.")                                                \
    X(M_BYTES_OUT, "baton_client_bytes_out", COUNTER, NONE, NO_BUCKETS,                     \
      "Bytes written to client connections.")                                               \
    /* histograms */                                                                        \
    X(M_COMMIT_SECONDS, "baton_commit_latency_seconds", HISTOGRAM, NONE,                    \
      BUCKETS(0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5),       \
      "From proposing an entry to its apply on this leader.")                               \
    X(M_APPLY_SECONDS, "baton_apply_latency_seconds", HISTOGRAM, NONE,                      \
      BUCKETS(0.00001, 0.00005, 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.05,    \
              0.1),                                                                         \
      "Time the lock store took to apply one entry.")                                       \
    X(M_BATCH_COMMANDS, "baton_batch_commands", HISTOGRAM, NONE,                            \
      BUCKETS(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),                                 \
      "Commands per raft entry this leader proposed.")                                      \
    X(M_QUEUE_LENGTH, "baton_queue_length", HISTOGRAM, NONE,                                \
      BUCKETS(1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096),                                \
      "A lock's queue length when an ACQUIRE joined it (its position).")                    \
    X(M_LOCK_WAIT_SECONDS, "baton_lock_wait_seconds", HISTOGRAM, NONE,                      \
      BUCKETS(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300),                   \
      "From a queued ACQUIRE's apply to its grant, on this leader.")                        \
    X(M_SNAPSHOT_SECONDS, "baton_snapshot_duration_seconds", HISTOGRAM, NONE,               \
      BUCKETS(0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60), "Time to take one raft snapshot.")   \
    X(M_LOOP_LAG_SECONDS, "baton_loop_lag_seconds", HISTOGRAM, NONE,                        \
      BUCKETS(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2),             \
      "How late a timer due every 25 ms fired on the loop thread (raft's "                  \
      "ticks run there too: compare with the election timeout).")                           \
    /* the longest queues, refreshed by observe.c before a render */                        \
    X(M_LOCK_QUEUE_LENGTH, "baton_lock_queue_length", TOP, LOCK, NO_BUCKETS,                \
      "Waiters queued on the longest queues this leader saw (at most 10 locks).")

/*
 * The label sets: S(set, label name, values), values being a macro with
 * one V(enum constant, label value) per value, rendered in this order (a
 * set of no values is TOP's free label). metrics.h makes each set's
 * values an enum metric_label_<set>, ended by LN_<set>, their count.
 */
#define METRIC_LABEL_SETS(S)                                                                \
    S(OUTCOME, "outcome", METRIC_OUTCOMES)                                                  \
    S(REASON, "reason", METRIC_REASONS)                                                     \
    S(PUSH_TYPE, "type", METRIC_PUSH_TYPES)                                                 \
    S(LOCK, "lock", METRIC_NO_VALUES)

/* M_ACQUIRES: what became of an ACQUIRE this leader answered. */
#define METRIC_OUTCOMES(V)                                                                  \
    V(ACQ_GRANTED, "granted")                                                               \
    V(ACQ_QUEUED, "queued")                                                                 \
    V(ACQ_BUSY, "busy")                                                                     \
    V(ACQ_ERROR, "error")                                                                   \
    V(ACQ_UNKNOWN, "unknown")

/* M_REFUSALS: why a connection or a request was refused. */
#define METRIC_REASONS(V)                                                                   \
    V(REF_MAX_CONNS, "max-conns")                 /* --max-conns */                         \
    V(REF_UNAUTH, "max-unauth")                   /* --max-unauth-conns: the oldest         \
                                                     unauthenticated closed */              \
    V(REF_HANDSHAKE_TIMEOUT, "handshake-timeout") /* no TLS handshake + HELLO within        \
                                                     --handshake-timeout */                 \
    V(REF_AUTH, "auth")                   /* HELLO refused (unknown token or certificate) */ \
    V(REF_PERM, "perm")                   /* a request beyond the principal's role/prefixes */ \
    V(REF_FRAME_TIMEOUT, "frame-timeout") /* --frame-timeout */                             \
    V(REF_MALFORMED, "malformed")         /* a frame that cannot be decoded */              \
    V(REF_TLS, "tls")                     /* a TLS handshake or TLS/plaintext mismatch */   \
    V(REF_UNREAD, "unread")               /* replies left unread (64 MiB, --max-unread-mb) */ \
    V(REF_INPUT, "input")                 /* request bytes held, all connections     \
                                                     (--max-input-mb) */                    \
    V(REF_DISK_FULL, "disk-full")         /* --min-free-mb */                               \
    V(REF_MAX_SESSIONS, "max-sessions")   /* the principal's max-sessions= or           \
                                             --max-sessions-per-principal, or the       \
                                             sessions kept for admins */

/* M_PUSHES: the type of a push sent to a client. */
#define METRIC_PUSH_TYPES(V)                                                                \
    V(PUSH_GRANTED, "granted")                                                              \
    V(PUSH_WAIT_FAILED, "wait_failed")                                                      \
    V(PUSH_LOST, "lost")                                                                    \
    V(PUSH_SESSION_EXPIRED, "session_expired")                                              \
    V(PUSH_WATCH_EVENT, "watch_event")                                                      \
    V(PUSH_WATCH2_EVENT, "watch2_event")

#define METRIC_NO_VALUES(V)

#endif /* BATON_SERVER_METRICS_TABLE_H */
