/*
 * metrics.c -- the metric registry and its Prometheus text (metrics.h).
 *
 * server/metrics_table.h lists every metric: its name, help, type, and for
 * a labelled one its label set, for a histogram its buckets' upper bounds.
 * Here that list becomes static tables, checked at compile time; the
 * values live beside them. Rendering walks the table in order; a histogram
 * keeps per-bucket counts and renders them cumulative, as the format
 * wants.
 */
#include "server/metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "baton/baton_defs.h"
#include "proto/utf8.h"

enum metric_type { T_COUNTER, T_GAUGE, T_HISTOGRAM, T_TOP };
/* Each type's TYPE in the exposition: TOP's are gauges. */
static const char *const type_names[] = {"counter", "gauge", "histogram", "gauge"};

#define MAX_BUCKETS 16
#define MAX_LABELS 12

/* ---- the tables of metrics_table.h, made into data ---- */

/* Each label set's values, in enum order: metric_label_<set>'s constants
 * index them. */
#define LABEL_VALUE_STRING(id, value) value,
#define LABEL_VALUES(set, label, values)                                                    \
    static const char *const values_##set[LN_##set + 1] = {values(LABEL_VALUE_STRING) NULL}; \
    _Static_assert(LN_##set <= MAX_LABELS, #set " has more than MAX_LABELS values");
METRIC_LABEL_SETS(LABEL_VALUES)

struct label_set {
    const char *label;          /* the label's name */
    const char *const *values;  /* its fixed values, NULL-terminated */
    unsigned n;                 /* how many; 0: a free label (TOP's lock) */
};

#define LABEL_SET(set, label, values) [LS_##set] = {label, values_##set, LN_##set},
static const struct label_set label_sets[LS_COUNT_] = {METRIC_LABEL_SETS(LABEL_SET)};

/* A histogram's bucket bounds, increasing, ended by 0; {0} for the rest. */
#define NO_BUCKETS
#define BUCKETS(...) __VA_ARGS__,
#define BOUNDS(id, name, type, labels, buckets, help)                                       \
    static const double bounds_##id[] = {buckets 0};                                        \
    _Static_assert(sizeof bounds_##id / sizeof(double) <= MAX_BUCKETS + 1,                  \
                   #id " has more than MAX_BUCKETS buckets");
METRICS(BOUNDS)

/* Rows whose type, labels and buckets do not go together do not compile:
 * a histogram has buckets and nothing else has; a gauge or a histogram has
 * no label; a labelled counter has fixed values; TOP has a free label. */
enum { LN_NONE = 0 };
#define ROW_CHECK(id, name, type, labels, buckets, help)                                    \
    _Static_assert((T_##type == T_HISTOGRAM) == (sizeof bounds_##id > sizeof(double)),      \
                   #id ": buckets for a histogram, and only for one");                      \
    _Static_assert(T_##type == T_COUNTER || T_##type == T_TOP || LS_##labels == LS_NONE,     \
                   #id ": only a counter or TOP has labels");                               \
    _Static_assert(T_##type != T_COUNTER || LS_##labels == LS_NONE || LN_##labels > 0,       \
                   #id ": a labelled counter's label has fixed values");                    \
    _Static_assert(T_##type != T_TOP || (LS_##labels != LS_NONE && LN_##labels == 0),        \
                   #id ": TOP's label is a free one (a set without values)");
METRICS(ROW_CHECK)

_Static_assert(METRICS_TOP_LOCKS == 10, "baton_lock_queue_length's help says 10 locks");

struct metric_def {
    const char *name;       /* without the _total of a counter */
    const char *help;
    enum metric_type type;
    enum metric_label_set labels;
    const double *bounds;   /* a histogram's bucket bounds, increasing, ended by 0 */
};

#define DEF(id, name, type, labels, buckets, help) \
    [id] = {name, help, T_##type, LS_##labels, bounds_##id},
static const struct metric_def defs[M_COUNT_] = {METRICS(DEF)};

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
    if (label < label_sets[defs[id].labels].n) reg.labelled[id][label]++;
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

    if (defs[id].type != T_HISTOGRAM) return;
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

void metrics_describe(enum metric_id id, struct metric_desc *d)
{
    const struct label_set *ls = &label_sets[defs[id].labels];

    d->name = defs[id].name;
    d->type = type_names[defs[id].type];
    d->label = defs[id].labels == LS_NONE ? NULL : ls->label;
    d->values = ls->values;
    d->n_values = ls->n;
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

/* The longest queues: one gauge per lock the reader may see, labelled
 * with its name. */
static int render_top(struct buf *out, const struct metric_def *d, metrics_lock_filter *show,
                      void *arg)
{
    const char *label = label_sets[d->labels].label;
    int rv = 0;

    for (size_t i = 0; i < n_top && rv == 0; i++) {
        if (show != NULL && !show(top[i].name, top[i].len, arg)) continue;
        rv = putf(out, "%s{%s=\"", d->name, label);
        if (rv == 0) rv = metrics_escape_label(out, top[i].name, top[i].len);
        if (rv == 0) rv = putf(out, "\"} %u\n", top[i].qlen);
    }
    return rv;
}

static int render_one(struct buf *out, enum metric_id id, metrics_lock_filter *show, void *arg)
{
    const struct metric_def *d = &defs[id];
    const struct label_set *ls = &label_sets[d->labels];
    const char *suffix = d->type == T_COUNTER ? "_total" : "";
    int rv;

    rv = putf(out, "# HELP %s%s %s\n# TYPE %s%s %s\n", d->name, suffix, d->help, d->name, suffix,
              type_names[d->type]);
    if (rv != 0) return rv;
    if (d->type == T_HISTOGRAM) return render_hist(out, d, &reg.hist[id]);
    if (d->type == T_TOP) return render_top(out, d, show, arg);
    if (d->type == T_GAUGE) return putf(out, "%s %lld\n", d->name, (long long)reg.gauge[id]);
    if (d->labels == LS_NONE)
        return putf(out, "%s_total %llu\n", d->name, (unsigned long long)reg.counter[id]);
    for (unsigned i = 0; i < ls->n && rv == 0; i++)
        rv = putf(out, "%s_total{%s=\"%s\"} %llu\n", d->name, ls->label, ls->values[i],
                  (unsigned long long)reg.labelled[id][i]);
    return rv;
}

int metrics_render(struct buf *out, metrics_lock_filter *show, void *arg)
{
    int rv = 0;

    for (int id = 0; id < M_COUNT_ && rv == 0; id++)
        rv = render_one(out, (enum metric_id)id, show, arg);
    return rv;
}
