/*
 * report.c -- the end of a W1/W2/W3/W6/W7 run, whichever driver ran it: merge the
 * per-client results, run the checks that need every client's records, and
 * print the JSON line described in docs/performance.md.
 *
 * violations: a driver counts, per client, grants whose fence is not greater
 * than the client's previous fence (cres_check_fence) and, in W2, grants
 * that found the in-process holder flag set (W6-W8: holders that conflict,
 * modes.c). Here are added: a fence granted twice (across all clients),
 * and in W2 a fence that does not grow in grant order. Each means two
 * sessions held a lock at once in the cluster's view. (W6-W8 grant several
 * holders at once, whose callbacks may run in another order than the
 * cluster granted them: there the order of fences says nothing.) A system
 * without fences (Redis's lock recipe) is checked only with the holder
 * flag.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/bench/bench.h"

struct cres *cres_new(int n)
{
    struct cres *r = calloc((size_t)(n > 0 ? n : 1), sizeof *r);

    if (r == NULL) return NULL;
    for (int i = 0; i < n; i++) {
        r[i].id = i;
        if (hist_init(&r[i].acq) || hist_init(&r[i].rel)) {
            cres_free(r, n);
            return NULL;
        }
    }
    return r;
}

void cres_free(struct cres *r, int n)
{
    if (r == NULL) return;
    for (int i = 0; i < n; i++) {
        hist_free(&r[i].acq);
        hist_free(&r[i].rel);
        free(r[i].recs.v);
    }
    free(r);
}

void cres_check_fence(struct cres *r, uint64_t fence)
{
    if (fence <= r->last_fence) {
        r->violations++;
        note("client %d: fence %" PRIu64 " after fence %" PRIu64, r->id, fence, r->last_fence);
    }
    r->last_fence = fence;
}

/* Longest stretch of [0, end] with none of the sorted times t[0..n). */
static uint64_t longest_gap(const uint64_t *t, size_t n, uint64_t end, uint64_t *at)
{
    uint64_t prev = 0, gap = 0;

    *at = 0;
    for (size_t i = 0; i < n && t[i] <= end; i++) {
        if (t[i] - prev > gap) {
            gap = t[i] - prev;
            *at = prev;
        }
        prev = t[i];
    }
    if (end - prev > gap) {
        gap = end - prev;
        *at = prev;
    }
    return gap;
}

/* Say on stderr when the longest gap began, in UTC wall-clock time (to
 * find it in the nodes' logs): t_start is the run's start (monotonic ns),
 * at the gap's start in ns after it. */
static void say_gap(const char *what, uint64_t gap, int64_t t_start, uint64_t at)
{
    struct timespec mono, real;
    int64_t wall_ns;
    time_t sec;
    struct tm tm;
    char buf[32];

    clock_gettime(CLOCK_MONOTONIC, &mono);
    clock_gettime(CLOCK_REALTIME, &real);
    wall_ns = (int64_t)real.tv_sec * 1000000000 + real.tv_nsec -
              ((int64_t)mono.tv_sec * 1000000000 + mono.tv_nsec - t_start) + (int64_t)at;
    sec = (time_t)(wall_ns / 1000000000);
    gmtime_r(&sec, &tm);
    strftime(buf, sizeof buf, "%H:%M:%S", &tm);
    fprintf(stderr, "lockbench: %s %.1f ms from %s.%03dZ (%.3f s into the run)\n", what,
            (double)gap / 1e6, buf, (int)(wall_ns / 1000000 % 1000), (double)at / 1e9);
}

/* Count fences that appear more than once among all clients' records. */
static uint64_t duplicate_fences(const struct cres *r, int n, size_t total)
{
    uint64_t *f, dups = 0;
    size_t k = 0;

    f = malloc((total ? total : 1) * sizeof *f);
    if (f == NULL) return 0;
    for (int i = 0; i < n; i++)
        for (size_t j = 0; j < r[i].recs.n; j++) f[k++] = r[i].recs.v[j].fence;
    qsort(f, k, sizeof *f, cmp_u64);
    for (size_t j = 1; j < k; j++)
        if (f[j] == f[j - 1]) dups++;
    free(f);
    return dups;
}

/* W2/W6/W7/W8: walk the grants in sequence order: the longest run of
 * grants to one client, and (fence_order: W2 with fences) fences that do
 * not grow. */
static void grant_sequence(const struct cres *r, int n, uint64_t nseq, bool fence_order,
                           uint64_t *max_streak, uint64_t *violations)
{
    int32_t *owner = malloc((nseq ? nseq : 1) * sizeof *owner);
    uint64_t *fence = malloc((nseq ? nseq : 1) * sizeof *fence);
    uint64_t streak = 0;

    if (owner && fence) {
        for (uint64_t s = 0; s < nseq; s++) owner[s] = -1, fence[s] = 0;
        for (int i = 0; i < n; i++)
            for (size_t j = 0; j < r[i].recs.n; j++) {
                if (r[i].recs.v[j].key >= nseq) continue;
                owner[r[i].recs.v[j].key] = i;
                fence[r[i].recs.v[j].key] = r[i].recs.v[j].fence;
            }
        for (uint64_t s = 0; s < nseq; s++) {
            if (owner[s] >= 0 && s > 0 && owner[s] == owner[s - 1])
                streak++;
            else
                streak = owner[s] >= 0;
            if (streak > *max_streak) *max_streak = streak;
            if (fence_order && s > 0 && owner[s] >= 0 && owner[s - 1] >= 0 &&
                fence[s] <= fence[s - 1]) {
                (*violations)++;
                note("grant %" PRIu64 " has fence %" PRIu64 " after fence %" PRIu64, s,
                     fence[s], fence[s - 1]);
            }
        }
    } else {
        fprintf(stderr, "lockbench: warning: out of memory for the grant sequence check\n");
    }
    free(owner);
    free(fence);
}

/* W3: the longest stretch without a completed cycle, overall (gap) and for
 * any one client (cgap); times are ns after the start. */
static void w3_gaps(const struct cres *r, int n, size_t total, uint64_t end, uint64_t *gap,
                    uint64_t *cgap, int64_t t_start)
{
    uint64_t *t = malloc((total ? total : 1) * sizeof *t), *ct, at, cat = 0;
    size_t k = 0;

    *gap = *cgap = 0;
    if (t == NULL) return;
    for (int i = 0; i < n; i++) {
        if (!r[i].connected) continue;
        ct = t + k;
        for (size_t j = 0; j < r[i].recs.n; j++) t[k++] = r[i].recs.v[j].key;
        /* a client's own records are in time order already */
        uint64_t g = longest_gap(ct, (size_t)(t + k - ct), end, &at);
        if (g > *cgap) {
            *cgap = g;
            cat = at;
        }
    }
    qsort(t, k, sizeof *t, cmp_u64);
    *gap = longest_gap(t, k, end, &at);
    free(t);
    say_gap("longest gap", *gap, t_start, at);
    say_gap("one client's longest gap", *cgap, t_start, cat);
}

int report_clients(const struct cfg *cfg, struct cres *r, int n, int64_t t_start,
                   int64_t t_end, uint64_t grant_seq, const struct modes *m)
{
    struct hist acq, rel;
    uint64_t ops = 0, shared_ops = 0, errors = 0, violations = 0, max_streak = 0;
    size_t total_recs = 0;
    double sx = 0, sx2 = 0, jain;
    int n_connected = 0;
    bool oom = false;

    if (hist_init(&acq) || hist_init(&rel)) {
        fprintf(stderr, "lockbench: out of memory\n");
        hist_free(&acq);
        return 1;
    }
    for (int i = 0; i < n; i++) {
        hist_merge(&acq, &r[i].acq);
        hist_merge(&rel, &r[i].rel);
        ops += r[i].ops;
        shared_ops += r[i].shared_ops;
        errors += r[i].errors;
        violations += r[i].violations;
        sx += (double)r[i].ops;
        sx2 += (double)r[i].ops * (double)r[i].ops;
        total_recs += r[i].recs.n;
        oom |= r[i].recs.oom;
        n_connected += r[i].connected;
    }
    jain = sx2 > 0 ? sx * sx / ((double)n * sx2) : 0.0;
    if (cfg->fenced) violations += duplicate_fences(r, n, total_recs);
    if (oom) fprintf(stderr, "lockbench: warning: out of memory for records; checks partial\n");
    if (GRANT_SEQ_WORKLOAD(cfg->workload))
        grant_sequence(r, n, grant_seq, cfg->workload == W2 && cfg->fenced, &max_streak,
                       &violations);

    printf("{\"system\":\"%s\",", cfg->system);
    if (cfg->durable >= 0) printf("\"durable\":%s,", cfg->durable ? "true" : "false");
    printf("\"workload\":\"W%d\",\"clients\":%d,\"seconds\":%g,"
           "\"ops\":%" PRIu64 ",\"ops_per_s\":%.1f,"
           "\"acq_p50_us\":%.1f,\"acq_p99_us\":%.1f,\"acq_max_us\":%.1f,"
           "\"rel_p50_us\":%.1f,\"rel_p99_us\":%.1f,\"jain\":%.4f,",
           cfg->workload, n, cfg->seconds, ops, (double)ops / cfg->seconds,
           us(hist_percentile(&acq, 50)), us(hist_percentile(&acq, 99)), us(acq.max),
           us(hist_percentile(&rel, 50)), us(hist_percentile(&rel, 99)), jain);
    if (GRANT_SEQ_WORKLOAD(cfg->workload))
        printf("\"max_streak\":%" PRIu64 ",", max_streak);
    else
        printf("\"max_streak\":null,");
    printf("\"errors\":%" PRIu64 ",\"violations\":%" PRIu64, errors, violations);
    if (cfg->workload == W3) {
        uint64_t gap, cgap;
        w3_gaps(r, n, total_recs, (uint64_t)(t_end - t_start), &gap, &cgap, t_start);
        printf(",\"gap_ms\":%.1f,\"client_gap_max_ms\":%.1f", (double)gap / 1e6,
               (double)cgap / 1e6);
    }
    if (cfg->workload == W6) printf(",\"shared_ops\":%" PRIu64, shared_ops);
    if (m != NULL) printf(",\"max_holders\":%d", atomic_load(&m->max_holders));
    printf("}\n");
    fflush(stdout);
    hist_free(&acq);
    hist_free(&rel);
    return n_connected > 0 ? 0 : 1;
}

void report_driver_cpu(const char *driver, int64_t cpu_ns, int64_t wall_ns)
{
    fprintf(stderr, "lockbench: %s driver used %.1f%% of one core during the run\n", driver,
            wall_ns > 0 ? 100.0 * (double)cpu_ns / (double)wall_ns : 0.0);
}
