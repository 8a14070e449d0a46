/*
 * metrics.h -- batond's metric registry and its Prometheus text rendering.
 * server/metrics_table.h lists every metric once; docs/operations.md ("The
 * metrics") describes them, checked against that list by
 * tests/unit/test_metrics_doc.c.
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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "server/metrics_table.h"

/* Every metric (server/metrics_table.h has the list). */
#define METRIC_ID_(id, name, type, labels, buckets, help) id,
enum metric_id { METRICS(METRIC_ID_) M_COUNT_ };

/* Each label set's values: enum metric_label_OUTCOME { ACQ_GRANTED, ...,
 * LN_OUTCOME } and so on, LN_<set> being the number of values. */
#define METRIC_LABEL_VALUE_(id, value) id,
#define METRIC_LABEL_ENUM_(set, label, values) \
    enum metric_label_##set { values(METRIC_LABEL_VALUE_) LN_##set };
METRIC_LABEL_SETS(METRIC_LABEL_ENUM_)

/* The label sets themselves, LS_NONE for a metric without labels. */
#define METRIC_LABEL_SET_ID_(set, label, values) LS_##set,
enum metric_label_set { LS_NONE, METRIC_LABEL_SETS(METRIC_LABEL_SET_ID_) LS_COUNT_ };

/* How many locks baton_lock_queue_length{lock} lists at most. */
#define METRICS_TOP_LOCKS 10

void metrics_inc(enum metric_id id);                 /* counter += 1 */
void metrics_add(enum metric_id id, uint64_t n);     /* counter += n */
/* labelled counter += 1; label is a value of its set (ACQ_BUSY...) */
void metrics_inc_label(enum metric_id id, unsigned label);
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

/* May the reader see lock name[0..len)? */
typedef bool metrics_lock_filter(const char *name, size_t len, void *arg);

/*
 * Append the Prometheus text exposition (format 0.0.4) of every metric
 * to out: HELP and TYPE lines, counters ending in _total, histograms
 * with cumulative _bucket{le} lines, _sum and _count. The gauges labelled
 * with a lock's name are rendered only for the names show(name, len, arg)
 * accepts (show NULL: every name). Returns 0 or BATON_ENOMEM (out may then
 * hold part of the text).
 */
int metrics_render(struct buf *out, metrics_lock_filter *show, void *arg);

/*
 * Append s[0..n) to out as a label value of the exposition format: \ " and
 * newline escaped as \\ \" \n, valid UTF-8 kept, and every other byte (a
 * control character, a byte of invalid UTF-8) and % itself as %XX, so a
 * hostile lock name can neither end the label nor make the text invalid
 * UTF-8. 0 or BATON_ENOMEM.
 */
int metrics_escape_label(struct buf *out, const char *s, size_t n);

/*
 * What the table says of metric id, for tests/unit/test_metrics_doc.c:
 * its name (without a counter's _total), its type as /metrics says it
 * ("counter", "gauge", "histogram"), its label's name (NULL if none) and
 * fixed values (n_values of them; none for a free label).
 */
struct metric_desc {
    const char *name;
    const char *type;
    const char *label;
    const char *const *values;
    size_t n_values;
};
void metrics_describe(enum metric_id id, struct metric_desc *d);

/* Zero every metric (tests). */
void metrics_reset(void);

#endif
