/*
 * hist.c -- the log-linear histogram of hist.h.
 *
 * Bucket layout, with S = HIST_SUB_BITS and H = 2^(S-1):
 *   v < 2^S:        bucket v (exact);
 *   v >= 2^S:       let k be the index of v's highest set bit and
 *                   shift = k - S + 1 (>= 1); then v >> shift lies in
 *                   [H, 2H) and the bucket is shift * H + (v >> shift).
 * Consecutive shifts therefore take consecutive runs of H buckets, starting
 * right after the exact ones, and every bucket covers 2^shift values.
 */
#include "tests/bench/hist.h"

#include <stdlib.h>
#include <string.h>

#define SUB_COUNT (1u << HIST_SUB_BITS)
#define HALF (SUB_COUNT / 2)
#define NBUCKETS (SUB_COUNT + (HIST_MAX_BIT - HIST_SUB_BITS + 1) * HALF)

unsigned hist_nbuckets(void)
{
    return NBUCKETS;
}

/* The bucket that counts v. */
static unsigned bucket_of(uint64_t v)
{
    unsigned msb, shift;

    if (v > HIST_MAX) v = HIST_MAX;
    if (v < SUB_COUNT) return (unsigned)v;
    msb = 63u - (unsigned)__builtin_clzll(v);
    shift = msb - HIST_SUB_BITS + 1;
    return shift * HALF + (unsigned)(v >> shift);
}

/* The largest value that falls into bucket i. */
static uint64_t bucket_high(unsigned i)
{
    unsigned shift;
    uint64_t m;

    if (i < SUB_COUNT) return i;
    shift = i / HALF - 1;
    m = i % HALF + HALF;
    return ((m + 1) << shift) - 1;
}

int hist_init(struct hist *h)
{
    memset(h, 0, sizeof *h);
    h->counts = calloc(NBUCKETS, sizeof *h->counts);
    if (h->counts == NULL) return -1;
    h->min = UINT64_MAX;
    return 0;
}

void hist_free(struct hist *h)
{
    if (h == NULL) return;
    free(h->counts);
    h->counts = NULL;
    h->total = 0;
}

void hist_record(struct hist *h, uint64_t v)
{
    h->counts[bucket_of(v)]++;
    h->total++;
    if (v < h->min) h->min = v;
    if (v > h->max) h->max = v;
    h->sum += (long double)v;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
    for (unsigned i = 0; i < NBUCKETS; i++) dst->counts[i] += src->counts[i];
    dst->total += src->total;
    if (src->min < dst->min) dst->min = src->min;
    if (src->max > dst->max) dst->max = src->max;
    dst->sum += src->sum;
}

uint64_t hist_percentile(const struct hist *h, double p)
{
    uint64_t rank, seen = 0, v;
    double want;

    if (h->total == 0) return 0;
    if (p <= 0) return h->min;
    if (p >= 100) return h->max;
    want = p / 100.0 * (double)h->total;
    rank = (uint64_t)want;
    if ((double)rank < want) rank++; /* ceil without libm */
    if (rank < 1) rank = 1;
    if (rank > h->total) rank = h->total;
    for (unsigned i = 0; i < NBUCKETS; i++) {
        seen += h->counts[i];
        if (seen >= rank) {
            v = bucket_high(i);
            if (v > h->max) v = h->max;
            if (v < h->min) v = h->min;
            return v;
        }
    }
    return h->max;
}

double hist_mean(const struct hist *h)
{
    return h->total ? (double)(h->sum / (long double)h->total) : 0.0;
}
