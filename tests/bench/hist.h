/*
 * hist.h -- a log-linear latency histogram (HdrHistogram style) for
 * lockbench.
 *
 * Values are non-negative integers (lockbench records nanoseconds). Values
 * below 2^HIST_SUB_BITS are counted exactly; above that, every power-of-two
 * range [2^k, 2^(k+1)) is split into 2^(HIST_SUB_BITS-1) equal buckets, so a
 * reported value is never more than 1/2^(HIST_SUB_BITS-1) (0.8%) above the
 * true one. Values above HIST_MAX are counted as HIST_MAX. The exact
 * minimum, maximum and sum are kept beside the buckets.
 *
 * A histogram is for one thread; merge per-thread histograms with
 * hist_merge when the threads are done.
 */
#ifndef BATON_BENCH_HIST_H
#define BATON_BENCH_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 8
#define HIST_MAX_BIT 44                       /* 2^44 ns: about 4.9 hours */
#define HIST_MAX ((UINT64_C(1) << (HIST_MAX_BIT + 1)) - 1)

struct hist {
    uint64_t *counts;   /* hist_nbuckets() entries; NULL before hist_init */
    uint64_t total;     /* values recorded */
    uint64_t min;       /* exact; UINT64_MAX when empty */
    uint64_t max;       /* exact; 0 when empty */
    long double sum;    /* for the mean */
};

/* Number of buckets of every histogram. */
unsigned hist_nbuckets(void);

/* Make h an empty histogram. Returns 0, or -1 if out of memory. */
int hist_init(struct hist *h);

/* Free h's buckets. NULL-safe; h may be passed to hist_init again. */
void hist_free(struct hist *h);

/* Count one value. */
void hist_record(struct hist *h, uint64_t v);

/* Add every count of src into dst (both initialised). */
void hist_merge(struct hist *dst, const struct hist *src);

/*
 * The value at percentile p (0 < p <= 100): the highest value equivalent to
 * the bucket that holds the ceil(p/100 * total)-th smallest value, but never
 * more than the exact maximum. 0 for an empty histogram.
 */
uint64_t hist_percentile(const struct hist *h, double p);

/* The mean of the recorded values; 0 when empty. */
double hist_mean(const struct hist *h);

#endif /* BATON_BENCH_HIST_H */
