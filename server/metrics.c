/*
 * metrics.c -- the metric registry and its Prometheus text (metrics.h).
 *
 * One static table describes every metric: its name, help, type, and for
 * a labelled counter its label's name and values, for a histogram its
 * buckets' upper bounds. The values live beside it. Rendering walks the
 * table in order; a histogram keeps per-bucket counts and renders them
 * cumulative, as the format wants.
 */
#include "server/metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "baton/baton_defs.h"
#include "proto/utf8.h"

enum metric_type { T_COUNTER, T_GAUGE, T_HISTOGRAM };

#define MAX_BUCKETS 16
#define MAX_LABELS 12

struct metric_def {
    const char *name;       /* without the _total of a counter */
    const char *help;
    int type;
    const char *label;      /* a labelled counter's label name, else NULL */
    const char *const *values; /* its values, NULL-terminated */
    const double *bounds;   /* a histogram's bucket bounds, increasing, ended by 0 */
};

static const char *const acquire_outcomes[] = {"granted", "queued", "busy", "error", "unknown",
                                               NULL};
static const char *const refusal_reasons[] = {
    "max-conns", "max-unauth", "handshake-timeout", "auth", "perm", "frame-timeout",
    "malformed", "tls", "unread", "disk-full", "max-sessions", NULL};
static const char *const push_types[] = {"granted", "wait_failed", "lost", "session_expired",
                                         "watch_event", NULL};

static const double commit_bounds[] = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
                                       0.1,    0.2,   0.5,   1,     2,    5,    0};
static const double apply_bounds[] = {0.00001, 0.00005, 0.0001, 0.0002, 0.0005, 0.001,
                                      0.002,   0.005,   0.01,   0.05,   0.1,    0};
static const double batch_bounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 0};
static const double queue_bounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096, 0};
static const double wait_bounds[] = {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1,
                                     5,     10,    30,   60,   300, 0};
static const double lag_bounds[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15,
                                   0.2,   0.3,   0.5,  1,     2,    0};
static const double snapshot_bounds[] = {0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 0};

static const struct metric_def defs[M_COUNT_] = {
    [M_NODE_ID] = {"baton_node_id", "This node's raft id.", T_GAUGE},
    [M_RAFT_TERM] = {"baton_raft_term", "The raft term this node is in.", T_GAUGE},
    [M_RAFT_ROLE] = {"baton_raft_role",
                     "This node's raft role: 0 unavailable, 1 follower, 2 candidate, 3 leader.",
                     T_GAUGE},
    [M_RAFT_LEADER_ID] = {"baton_raft_leader_id", "The leader this node knows, 0 if none.",
                          T_GAUGE},
    [M_READY] = {"baton_ready_leader",
                 "1 while this node is the ready leader (its barrier applied), else 0.", T_GAUGE},
    [M_RAFT_COMMIT_INDEX] = {"baton_raft_commit_index", "The highest log index known committed.",
                             T_GAUGE},
    [M_RAFT_APPLIED_INDEX] = {"baton_raft_applied_index",
                              "The highest log index applied to the lock store.", T_GAUGE},
    [M_SESSIONS_OPEN] = {"baton_sessions_open",
                         "Sessions with a lease on this node (the ready leader; 0 elsewhere).",
                         T_GAUGE},
    [M_CONNECTIONS] = {"baton_connections", "Client connections open on this node.", T_GAUGE},
    [M_DISK_FREE_BYTES] = {"baton_disk_free_bytes",
                           "Bytes free on the filesystem of --data at the last check.", T_GAUGE},
    [M_DISK_LOW] = {"baton_disk_low",
                    "1 while free space is below --min-free-mb plus the store's next growth "
                    "(new sessions and acquires refused), else 0.",
                    T_GAUGE},
    [M_LEADER_CHANGES] = {"baton_leader_changes",
                          "Times this node saw a new leader (the first one included).",
                          T_COUNTER},
    [M_CANDIDACIES] = {"baton_raft_candidacies",
                       "Times this node became a raft candidate (pre-vote included): it heard "
                       "from no leader for an election timeout.",
                       T_COUNTER},
    [M_GRANTS] = {"baton_grants", "Locks granted (applied on this node).", T_COUNTER},
    [M_ACQUIRES] = {"baton_acquires", "ACQUIRE requests answered by this leader, by outcome.",
                    T_COUNTER, "outcome", acquire_outcomes},
    [M_RELEASES] = {"baton_releases", "RELEASE requests that released a lock on this leader.",
                    T_COUNTER},
    [M_SESSIONS_EXPIRED] = {"baton_sessions_expired",
                            "Sessions ended by an expiry (applied on this node).", T_COUNTER},
    [M_LEASE_EXPIRIES] = {"baton_lease_expiries",
                          "Session leases that ran out on this leader (expiry proposed).",
                          T_COUNTER},
    [M_KEEPALIVES] = {"baton_keepalives", "KEEPALIVE requests received on this leader.",
                      T_COUNTER},
    [M_KEEPALIVE_ROUNDS] = {"baton_keepalive_rounds",
                            "Leadership confirmation rounds started for keepalives.", T_COUNTER},
    [M_REFUSALS] = {"baton_refusals", "Connections or requests refused, by reason.", T_COUNTER,
                    "reason", refusal_reasons},
    [M_PUSHES] = {"baton_pushes", "Pushes sent to clients, by type.", T_COUNTER, "type",
                  push_types},
    [M_SNAPSHOTS] = {"baton_snapshots", "Raft snapshots this node took.", T_COUNTER},
    [M_BYTES_IN] = {"baton_client_bytes_in", "Bytes read from client connections.", T_COUNTER},
    [M_BYTES_OUT] = {"baton_client_bytes_out", "Bytes written to client connections.",
                     T_COUNTER},
    [M_COMMIT_SECONDS] = {"baton_commit_latency_seconds",
                          "From proposing an entry to its apply on this leader.", T_HISTOGRAM,
                          NULL, NULL, commit_bounds},
    [M_APPLY_SECONDS] = {"baton_apply_latency_seconds",
                         "Time the lock store took to apply one entry.", T_HISTOGRAM, NULL,
                         NULL, apply_bounds},
    [M_BATCH_COMMANDS] = {"baton_batch_commands", "Commands per raft entry this leader proposed.",
                          T_HISTOGRAM, NULL, NULL, batch_bounds},
    [M_QUEUE_LENGTH] = {"baton_queue_length",
                        "A lock's queue length when an ACQUIRE joined it (its position).",
                        T_HISTOGRAM, NULL, NULL, queue_bounds},
    [M_LOCK_WAIT_SECONDS] = {"baton_lock_wait_seconds",
                             "From a queued ACQUIRE's apply to its grant, on this leader.",
                             T_HISTOGRAM, NULL, NULL, wait_bounds},
    [M_SNAPSHOT_SECONDS] = {"baton_snapshot_duration_seconds",
                            "Time to take one raft snapshot.", T_HISTOGRAM, NULL, NULL,
                            snapshot_bounds},
    [M_LOOP_LAG_SECONDS] = {"baton_loop_lag_seconds",
                            "How late a timer due every 25 ms fired on the loop thread (raft's "
                            "ticks run there too: compare with the election timeout).",
                            T_HISTOGRAM, NULL, NULL, lag_bounds},
};

struct hist {
    uint64_t buckets[MAX_BUCKETS + 1]; /* per bucket, not cumulative; the last is +Inf */
    uint64_t count;
    double sum;
};

static struct {
    uint64_t counter[M_COUNT_];
    uint64_t labelled[M_COUNT_][MAX_LABELS];
    int64_t gauge[M_COUNT_];
    struct hist hist[M_COUNT_];
} reg;

/* ---- the lock-wait clock ---- */

#define WAIT_SLOTS 4096

struct wait_mark {
    uint64_t session, waiter, start_ns;
};
static struct wait_mark waits[WAIT_SLOTS];

/* ---- the longest queues ---- */

struct top_lock {
    uint32_t qlen;
    uint16_t len;
    char name[BATON_MAX_NAME];
};
static struct top_lock top[METRICS_TOP_LOCKS];
static size_t n_top;

void metrics_inc(enum metric_id id)
{
    reg.counter[id]++;
}

void metrics_add(enum metric_id id, uint64_t n)
{
    reg.counter[id] += n;
}

void metrics_inc_label(enum metric_id id, unsigned label)
{
    if (label < MAX_LABELS) reg.labelled[id][label]++;
}

void metrics_set(enum metric_id id, int64_t v)
{
    reg.gauge[id] = v;
}

void metrics_observe(enum metric_id id, double v)
{
    const double *b = defs[id].bounds;
    struct hist *h = &reg.hist[id];
    size_t i = 0;

    if (b == NULL) return;
    while (b[i] != 0 && v > b[i]) i++;
    h->buckets[i]++;
    h->count++;
    h->sum += v;
}

uint64_t metrics_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void metrics_observe_since(enum metric_id id, uint64_t start_ns)
{
    uint64_t now = metrics_now_ns();

    metrics_observe(id, now > start_ns ? (double)(now - start_ns) / 1e9 : 0.0);
}

static struct wait_mark *wait_slot(uint64_t session, uint64_t waiter)
{
    uint64_t h = session * 0x9E3779B97F4A7C15ull ^ waiter * 0xC2B2AE3D27D4EB4Full;

    return &waits[(h >> 32) % WAIT_SLOTS];
}

void metrics_wait_start(uint64_t session, uint64_t waiter)
{
    struct wait_mark *w = wait_slot(session, waiter);

    w->session = session;
    w->waiter = waiter;
    w->start_ns = metrics_now_ns();
}

void metrics_wait_granted(uint64_t session, uint64_t waiter)
{
    struct wait_mark *w = wait_slot(session, waiter);

    if (w->session != session || w->waiter != waiter || w->start_ns == 0) return;
    metrics_observe_since(M_LOCK_WAIT_SECONDS, w->start_ns);
    memset(w, 0, sizeof *w);
}

void metrics_top_note(const char *name, size_t len, uint32_t qlen)
{
    size_t i, min = 0;

    if (len == 0 || len > BATON_MAX_NAME) return;
    for (i = 0; i < n_top; i++)
        if (top[i].len == len && memcmp(top[i].name, name, len) == 0) break;
    if (i < n_top) {
        if (qlen > 0) {
            top[i].qlen = qlen;
        } else {
            top[i] = top[--n_top];
        }
        return;
    }
    if (qlen == 0) return;
    if (n_top < METRICS_TOP_LOCKS) {
        i = n_top++;
    } else {
        for (i = 1; i < n_top; i++)
            if (top[i].qlen < top[min].qlen) min = i;
        if (top[min].qlen >= qlen) return;
        i = min;
    }
    top[i].qlen = qlen;
    top[i].len = (uint16_t)len;
    memcpy(top[i].name, name, len);
}

size_t metrics_top_count(void)
{
    return n_top;
}

void metrics_top_get(size_t i, const char **name, size_t *len)
{
    *name = top[i].name;
    *len = top[i].len;
}

void metrics_top_clear(void)
{
    n_top = 0;
}

void metrics_reset(void)
{
    memset(&reg, 0, sizeof reg);
    memset(waits, 0, sizeof waits);
    n_top = 0;
}

/* ---- rendering ---- */

static int put(struct buf *out, const char *s)
{
    return buf_put(out, s, strlen(s));
}

static int putf(struct buf *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int putf(struct buf *out, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return BATON_EINVAL;
    return buf_put(out, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

int metrics_escape_label(struct buf *out, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    int rv = 0;

    while (i < n && rv == 0) {
        size_t len = proto_utf8_len(p + i, n - i);

        if (p[i] == '\\') {
            rv = put(out, "\\\\");
        } else if (p[i] == '"') {
            rv = put(out, "\\\"");
        } else if (p[i] == '\n') {
            rv = put(out, "\\n");
        } else if (len == 0 || p[i] == '%' || (len == 1 && (p[i] < 0x20 || p[i] == 0x7F))) {
            rv = putf(out, "%%%02X", p[i]);
        } else {
            rv = buf_put(out, p + i, len);
            i += len;
            continue;
        }
        i++;
    }
    return rv;
}

static int render_hist(struct buf *out, const struct metric_def *d, const struct hist *h)
{
    uint64_t cum = 0;
    size_t i;
    int rv = 0;

    for (i = 0; d->bounds[i] != 0 && rv == 0; i++) {
        cum += h->buckets[i];
        rv = putf(out, "%s_bucket{le=\"%g\"} %llu\n", d->name, d->bounds[i],
                  (unsigned long long)cum);
    }
    cum += h->buckets[i];
    if (rv == 0)
        rv = putf(out, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.9g\n%s_count %llu\n", d->name,
                  (unsigned long long)cum, d->name, h->sum, d->name, (unsigned long long)cum);
    return rv;
}

static int render_one(struct buf *out, enum metric_id id)
{
    const struct metric_def *d = &defs[id];
    const char *suffix = d->type == T_COUNTER ? "_total" : "";
    static const char *const types[] = {"counter", "gauge", "histogram"};
    int rv;

    rv = putf(out, "# HELP %s%s %s\n# TYPE %s%s %s\n", d->name, suffix, d->help, d->name, suffix,
              types[d->type]);
    if (rv != 0) return rv;
    if (d->type == T_HISTOGRAM) return render_hist(out, d, &reg.hist[id]);
    if (d->type == T_GAUGE) return putf(out, "%s %lld\n", d->name, (long long)reg.gauge[id]);
    if (d->label == NULL)
        return putf(out, "%s_total %llu\n", d->name, (unsigned long long)reg.counter[id]);
    for (unsigned i = 0; d->values[i] != NULL && rv == 0; i++)
        rv = putf(out, "%s_total{%s=\"%s\"} %llu\n", d->name, d->label, d->values[i],
                  (unsigned long long)reg.labelled[id][i]);
    return rv;
}

static int render_top(struct buf *out)
{
    int rv = put(out, "# HELP baton_lock_queue_length Waiters queued on the longest queues this "
                      "leader saw (at most 10 locks).\n"
                      "# TYPE baton_lock_queue_length gauge\n");

    for (size_t i = 0; i < n_top && rv == 0; i++) {
        rv = put(out, "baton_lock_queue_length{lock=\"");
        if (rv == 0) rv = metrics_escape_label(out, top[i].name, top[i].len);
        if (rv == 0) rv = putf(out, "\"} %u\n", top[i].qlen);
    }
    return rv;
}

int metrics_render(struct buf *out)
{
    int rv = 0;

    for (int id = 0; id < M_COUNT_ && rv == 0; id++) rv = render_one(out, (enum metric_id)id);
    if (rv == 0) rv = render_top(out);
    return rv;
}
