/*
 * lockbench.c -- baton's benchmark driver (/work/shared/WORKLOAD.md).
 *
 *   lockbench --endpoints E --workload W1|W2|W3|W4 --clients N --seconds S
 *             [--hold-ms H] [--sessions K --locks L] [--pids P1,P2,P3]
 *
 * It drives a running cluster through the blocking client API
 * (client/baton.h) and prints ONE JSON line on stdout; progress and error
 * messages go to stderr. Every client is a thread with its own baton_t (its
 * own session and connection). Latencies are measured around the blocking
 * calls with CLOCK_MONOTONIC and kept in log-linear histograms (hist.h).
 *
 * Workloads:
 *   W1  each client loops { lock "w1-<client>"; unlock }; ops = cycles.
 *   W2  all clients loop { lock "hot"; hold H ms; unlock }; ops = grants,
 *       with Jain's index over per-client grants, the longest run of
 *       consecutive grants to one client, and holder-flag collisions.
 *   W3  W1, meant to run while the harness kills the leader (lockbench
 *       kills nothing); adds gap_ms and client_gap_max_ms.
 *   W4  N threads open K sessions and acquire L distinct locks "w4-<j>"
 *       (lock j on session j mod K) with baton_trylock; "seconds" is the
 *       time to acquire them all; --seconds is the time limit. With --pids,
 *       each server's VmRSS is read from /proc while the locks are held.
 *
 * violations: in W2, the times a client found the in-process holder flag
 * already set right after its grant. In every workload lockbench also
 * checks baton's fencing tokens and counts as violations: a grant whose
 * fence is not greater than the previous fence the same client got, a
 * fence granted twice, and (W2) a fence that does not grow in grant order.
 * Each of these means two sessions held a lock at once in the cluster's
 * view.
 *
 * errors: calls that returned an error to the caller (a connect, a lock or
 * an unlock). Acquires use baton_lock_timeout(time left in the run) so
 * that the run ends on time; such a wait ending with the run is not an
 * error (W1/W3 locks are free, so the bound matters only after a failure). After ESESSION or ECLOSED the client opens a new
 * session; after any other error it pauses 10 ms and goes on.
 *
 * Every loop ends at the end of the run; every call is bounded by
 * --op-timeout-ms / --connect-timeout-ms, and a watchdog ends the process
 * (exit 3, no JSON) if the run overstays its bound by far.
 *
 * Exit status: 0 after printing the JSON line, 1 if no client could
 * connect (the line is still printed), 2 on a usage error, 3 watchdog.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "client/baton.h"
#include "tests/bench/hist.h"

enum { W1 = 1, W2, W3, W4 };

#define MAX_PIDS 16
#define MAX_CLIENTS 100000
#define MAX_ERR_LOGS 20           /* error lines printed to stderr per run */
#define ERROR_PAUSE_NS 10000000LL /* after an error other than a lost session */
#define RECONNECT_PAUSE_NS 50000000LL
#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL

struct cfg {
    const char *endpoints;
    int workload;
    int clients;
    double seconds;
    int hold_ms;
    int sessions;
    long locks;
    unsigned op_timeout_ms;
    unsigned connect_timeout_ms;
    int npids;
    pid_t pids[MAX_PIDS];
};

/* ---- small helpers ------------------------------------------------------------------ */

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* Sleep ns nanoseconds, but not past `until` (0: no bound). */
static void sleep_ns(int64_t ns, int64_t until)
{
    struct timespec ts;
    int64_t now = now_ns();

    if (until != 0 && now + ns > until) ns = until - now;
    if (ns <= 0) return;
    ts.tv_sec = (time_t)(ns / NS_PER_S);
    ts.tv_nsec = (long)(ns % NS_PER_S);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static double us(uint64_t ns)
{
    return (double)ns / 1000.0;
}

static atomic_int n_logged;

/* Print one line to stderr, at most MAX_ERR_LOGS per run (errors and
 * violations can come by the thousand). */
static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
    int n = atomic_fetch_add(&n_logged, 1);
    va_list ap;

    if (n < MAX_ERR_LOGS) {
        va_start(ap, fmt);
        fputs("lockbench: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    } else if (n == MAX_ERR_LOGS) {
        fprintf(stderr, "lockbench: more errors or violations; not printing them\n");
    }
}

/* Report a failed call. */
static void log_err(int client, const char *what, int rv, const char *msg)
{
    note("client %d: %s: %s (%s)", client, what, baton_err_name(rv),
         msg && msg[0] ? msg : baton_strerror(rv));
}

/* Open a session for client `id`, waiting at most timeout_ms. */
static int open_session(const struct cfg *cfg, int id, unsigned timeout_ms, baton_t **out)
{
    char name[48];
    baton_opts o;

    snprintf(name, sizeof name, "lockbench-%d", id);
    memset(&o, 0, sizeof o);
    o.endpoints = cfg->endpoints;
    o.client_name = name;
    o.connect_timeout_ms = timeout_ms ? timeout_ms : 1;
    o.op_timeout_ms = cfg->op_timeout_ms;
    return baton_connect(&o, out);
}

/* What a grant left behind for the checks at the end: in W2 the grant's
 * sequence number, in W1/W3 its completion time (ns after the start). */
struct rec {
    uint64_t key;
    uint64_t fence;
};

struct recs {
    struct rec *v;
    size_t n, cap;
    bool oom; /* a record was dropped */
};

static void recs_add(struct recs *r, uint64_t key, uint64_t fence)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 1024;
        struct rec *v = realloc(r->v, cap * sizeof *v);
        if (v == NULL) {
            r->oom = true;
            return;
        }
        r->v = v;
        r->cap = cap;
    }
    r->v[r->n].key = key;
    r->v[r->n].fence = fence;
    r->n++;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* Read VmRSS (kB) of pid; -1 if it cannot be read. */
static long read_rss_kb(pid_t pid)
{
    char path[64], line[256];
    long kb = -1;
    FILE *f;

    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    f = fopen(path, "r");
    if (f == NULL) return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kb) == 1) break;
    fclose(f);
    return kb;
}

static void print_rss(const char *field, const long *kb, int n)
{
    printf(",\"%s\":[", field);
    for (int i = 0; i < n; i++) {
        if (kb[i] < 0)
            printf("%snull", i ? "," : "");
        else
            printf("%s%ld", i ? "," : "", kb[i]);
    }
    printf("]");
}

/* The watchdog: if the run has not ended by `hard_ns` (monotonic), end the
 * process. Every call is bounded, so this only fires on a bug. */
static int64_t watchdog_at;

static void *watchdog_main(void *arg)
{
    (void)arg;
    for (;;) {
        int64_t left = watchdog_at - now_ns();
        if (left <= 0) break;
        sleep_ns(left > NS_PER_S ? NS_PER_S : left, 0);
    }
    fprintf(stderr, "lockbench: the run did not end within its bound; giving up\n");
    fflush(stderr);
    _exit(3);
    return NULL;
}

static void start_watchdog(int64_t hard_ns)
{
    pthread_t th;

    watchdog_at = hard_ns;
    if (pthread_create(&th, NULL, watchdog_main, NULL) == 0) pthread_detach(th);
}

/* Raise the soft open-files limit to at least `want` (up to the hard limit). */
static void raise_nofile(rlim_t want)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want) return;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < want)
        fprintf(stderr, "lockbench: warning: open files limited to %llu (want %llu)\n",
                (unsigned long long)rl.rlim_cur, (unsigned long long)want);
}

/* ---- W1, W2, W3: one thread per client ------------------------------------------------- */

struct bench;

struct client {
    struct bench *bench;
    int id;
    pthread_t th;
    bool started;
    baton_t *b;
    char name[32];        /* the lock this client takes */
    bool connected;       /* the first connect succeeded */
    struct hist acq, rel; /* ns */
    uint64_t ops;         /* cycles (W1/W3) or grants (W2) within the run */
    uint64_t errors;
    uint64_t violations;
    uint64_t last_fence;
    struct recs recs;
};

struct bench {
    const struct cfg *cfg;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* on CLOCK_MONOTONIC */
    int n_ready, n_done;
    bool go;
    int64_t t_start, t_end;
    atomic_int holder; /* W2: client id + 1 of the holder, 0 if none */
    atomic_uint_fast64_t grant_seq;
};

static void client_fail(struct client *c, const char *what, int rv)
{
    c->errors++;
    log_err(c->id, what, rv, c->b ? baton_errmsg(c->b) : baton_connect_errmsg());
}

/* Every grant's fence must be greater than the last one this client got. */
static void check_fence(struct client *c, uint64_t fence)
{
    if (fence <= c->last_fence) {
        c->violations++;
        note("client %d: fence %" PRIu64 " after fence %" PRIu64, c->id, fence, c->last_fence);
    }
    c->last_fence = fence;
}

/* Close the session and open a new one, until the run ends. 0 or -1. */
static int reconnect(struct client *c)
{
    const struct bench *B = c->bench;
    int64_t now;
    int rv;

    baton_close(c->b);
    c->b = NULL;
    while ((now = now_ns()) < B->t_end) {
        int64_t left_ms = (B->t_end - now) / NS_PER_MS + 1;
        unsigned ms = B->cfg->connect_timeout_ms;
        if ((int64_t)ms > left_ms) ms = (unsigned)left_ms;
        rv = open_session(B->cfg, c->id, ms, &c->b);
        if (rv == 0) return 0;
        client_fail(c, "reconnect", rv);
        sleep_ns(RECONNECT_PAUSE_NS, B->t_end);
    }
    return -1;
}

/* After a failed call: a lost session is replaced, anything else paused on. */
static void recover(struct client *c, int rv)
{
    if (rv == BATON_ESESSION || rv == BATON_ECLOSED)
        (void)reconnect(c);
    else if (rv != BATON_ENOTHELD)
        sleep_ns(ERROR_PAUSE_NS, c->bench->t_end);
}

/* W1 and W3: lock and unlock this client's own lock until the run ends.
 * The lock is free, so the wait is bounded only as a safety net: after a
 * reconnect, the old session may still hold the lock in the cluster (if its
 * close did not get through), and a plain baton_lock would wait forever. */
static void run_w1(struct client *c)
{
    const struct bench *B = c->bench;
    baton_lock_t *l;
    uint64_t fence;
    int64_t t0, t1, t2, left_ms;
    int rv;

    while ((t0 = now_ns()) < B->t_end) {
        if (c->b == NULL && reconnect(c) != 0) break;
        t0 = now_ns();
        left_ms = (B->t_end - t0 + NS_PER_MS - 1) / NS_PER_MS;
        if (left_ms <= 0) break;
        rv = baton_lock_timeout(c->b, c->name, left_ms, &l);
        t1 = now_ns();
        if (rv == BATON_ETIMEDOUT && t1 >= B->t_end - 50 * NS_PER_MS) break; /* run over */
        if (rv != 0) {
            client_fail(c, "lock", rv);
            recover(c, rv);
            continue;
        }
        hist_record(&c->acq, (uint64_t)(t1 - t0));
        fence = baton_lock_fence(l);
        check_fence(c, fence);
        rv = baton_unlock(l);
        t2 = now_ns();
        if (rv != 0) {
            client_fail(c, "unlock", rv);
            recover(c, rv);
            continue;
        }
        hist_record(&c->rel, (uint64_t)(t2 - t1));
        recs_add(&c->recs, (uint64_t)(t2 - B->t_start), fence);
        if (t2 <= B->t_end) c->ops++;
    }
}

/* W2: everybody takes "hot", holds it hold_ms, releases, until the run ends. */
static void run_w2(struct client *c)
{
    struct bench *B = c->bench;
    baton_lock_t *l;
    uint64_t fence, seq;
    int64_t t0, t1, t2, t3, left_ms;
    int rv, prev, me = c->id + 1;

    while ((t0 = now_ns()) < B->t_end) {
        if (c->b == NULL && reconnect(c) != 0) break;
        t0 = now_ns();
        left_ms = (B->t_end - t0 + NS_PER_MS - 1) / NS_PER_MS;
        if (left_ms <= 0) break;
        rv = baton_lock_timeout(c->b, "hot", left_ms, &l);
        t1 = now_ns();
        if (rv == BATON_ETIMEDOUT && t1 >= B->t_end - 50 * NS_PER_MS) break; /* run over */
        if (rv != 0) {
            client_fail(c, "lock", rv);
            recover(c, rv);
            continue;
        }
        prev = atomic_exchange(&B->holder, me);
        if (prev != 0) {
            c->violations++;
            note("client %d granted \"hot\" while client %d holds it", c->id, prev - 1);
        }
        seq = atomic_fetch_add(&B->grant_seq, 1);
        fence = baton_lock_fence(l);
        recs_add(&c->recs, seq, fence);
        check_fence(c, fence);
        hist_record(&c->acq, (uint64_t)(t1 - t0));
        if (t1 <= B->t_end) c->ops++;
        if (B->cfg->hold_ms > 0) sleep_ns(B->cfg->hold_ms * NS_PER_MS, 0);
        atomic_compare_exchange_strong(&B->holder, &me, 0);
        me = c->id + 1; /* the exchange may have overwritten it */
        t2 = now_ns();
        rv = baton_unlock(l);
        t3 = now_ns();
        if (rv != 0) {
            client_fail(c, "unlock", rv);
            recover(c, rv);
            continue;
        }
        hist_record(&c->rel, (uint64_t)(t3 - t2));
    }
}

static void *client_main(void *arg)
{
    struct client *c = arg;
    struct bench *B = c->bench;
    int rv;

    rv = open_session(B->cfg, c->id, B->cfg->connect_timeout_ms, &c->b);
    if (rv != 0) {
        c->b = NULL;
        client_fail(c, "connect", rv);
    } else {
        c->connected = true;
    }
    pthread_mutex_lock(&B->mu);
    B->n_ready++;
    pthread_cond_broadcast(&B->cv);
    while (!B->go) pthread_cond_wait(&B->cv, &B->mu);
    pthread_mutex_unlock(&B->mu);

    if (c->connected) {
        if (B->cfg->workload == W2)
            run_w2(c);
        else
            run_w1(c);
    }
    baton_close(c->b);
    c->b = NULL;

    pthread_mutex_lock(&B->mu);
    B->n_done++;
    pthread_cond_broadcast(&B->cv);
    pthread_mutex_unlock(&B->mu);
    return NULL;
}

/* Longest stretch of [0, end] with none of the sorted times t[0..n). */
static uint64_t longest_gap(const uint64_t *t, size_t n, uint64_t end)
{
    uint64_t prev = 0, gap = 0;

    for (size_t i = 0; i < n && t[i] <= end; i++) {
        if (t[i] - prev > gap) gap = t[i] - prev;
        prev = t[i];
    }
    if (end - prev > gap) gap = end - prev;
    return gap;
}

/* Count fences that appear more than once among all clients' records. */
static uint64_t duplicate_fences(struct client *cl, int n, size_t total)
{
    uint64_t *f, dups = 0;
    size_t k = 0;

    f = malloc((total ? total : 1) * sizeof *f);
    if (f == NULL) return 0;
    for (int i = 0; i < n; i++)
        for (size_t j = 0; j < cl[i].recs.n; j++) f[k++] = cl[i].recs.v[j].fence;
    qsort(f, k, sizeof *f, cmp_u64);
    for (size_t j = 1; j < k; j++)
        if (f[j] == f[j - 1]) dups++;
    free(f);
    return dups;
}

static int run_clients(const struct cfg *cfg)
{
    struct bench B;
    struct client *cl;
    struct hist acq, rel;
    pthread_condattr_t ca;
    uint64_t ops = 0, errors = 0, violations = 0, max_streak = 0;
    size_t total_recs = 0;
    double sx = 0, sx2 = 0, jain;
    int n = cfg->clients, n_connected = 0;
    bool oom = false;

    memset(&B, 0, sizeof B);
    B.cfg = cfg;
    pthread_mutex_init(&B.mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&B.cv, &ca);
    pthread_condattr_destroy(&ca);
    atomic_init(&B.holder, 0);
    atomic_init(&B.grant_seq, 0);

    cl = calloc((size_t)n, sizeof *cl);
    if (cl == NULL || hist_init(&acq) || hist_init(&rel)) {
        fprintf(stderr, "lockbench: out of memory\n");
        return 1;
    }
    /* Connects take at most connect_timeout_ms each, calls op_timeout_ms. */
    start_watchdog(now_ns() + (int64_t)(cfg->seconds * NS_PER_S) +
                   4 * (int64_t)(cfg->connect_timeout_ms + cfg->op_timeout_ms) * NS_PER_MS +
                   30 * NS_PER_S);

    for (int i = 0; i < n; i++) {
        struct client *c = &cl[i];
        c->bench = &B;
        c->id = i;
        snprintf(c->name, sizeof c->name, "w1-%d", i);
        if (hist_init(&c->acq) || hist_init(&c->rel)) {
            fprintf(stderr, "lockbench: out of memory\n");
            return 1;
        }
        if (pthread_create(&c->th, NULL, client_main, c) != 0) {
            fprintf(stderr, "lockbench: cannot start client thread %d\n", i);
            pthread_mutex_lock(&B.mu);
            B.n_ready++; /* never runs: counts as ready and done */
            B.n_done++;
            pthread_mutex_unlock(&B.mu);
            c->errors++;
            continue;
        }
        c->started = true;
    }

    /* Wait until every client has its session, then start the clock. */
    pthread_mutex_lock(&B.mu);
    while (B.n_ready < n) pthread_cond_wait(&B.cv, &B.mu);
    B.t_start = now_ns();
    B.t_end = B.t_start + (int64_t)(cfg->seconds * NS_PER_S);
    B.go = true;
    pthread_cond_broadcast(&B.cv);
    while (B.n_done < n) pthread_cond_wait(&B.cv, &B.mu);
    pthread_mutex_unlock(&B.mu);

    for (int i = 0; i < n; i++)
        if (cl[i].started) pthread_join(cl[i].th, NULL);

    for (int i = 0; i < n; i++) {
        struct client *c = &cl[i];
        hist_merge(&acq, &c->acq);
        hist_merge(&rel, &c->rel);
        ops += c->ops;
        errors += c->errors;
        violations += c->violations;
        sx += (double)c->ops;
        sx2 += (double)c->ops * (double)c->ops;
        total_recs += c->recs.n;
        oom |= c->recs.oom;
        n_connected += c->connected;
    }
    jain = sx2 > 0 ? sx * sx / ((double)n * sx2) : 0.0;
    violations += duplicate_fences(cl, n, total_recs);
    if (oom) fprintf(stderr, "lockbench: warning: out of memory for records; checks partial\n");

    /* W2: the grant sequence (owners and fences by sequence number). */
    if (cfg->workload == W2) {
        uint64_t nseq = atomic_load(&B.grant_seq), streak = 0;
        int32_t *owner = malloc((nseq ? nseq : 1) * sizeof *owner);
        uint64_t *fence = malloc((nseq ? nseq : 1) * sizeof *fence);
        if (owner && fence) {
            for (uint64_t s = 0; s < nseq; s++) owner[s] = -1, fence[s] = 0;
            for (int i = 0; i < n; i++)
                for (size_t j = 0; j < cl[i].recs.n; j++) {
                    owner[cl[i].recs.v[j].key] = i;
                    fence[cl[i].recs.v[j].key] = cl[i].recs.v[j].fence;
                }
            for (uint64_t s = 0; s < nseq; s++) {
                if (owner[s] >= 0 && s > 0 && owner[s] == owner[s - 1])
                    streak++;
                else
                    streak = owner[s] >= 0;
                if (streak > max_streak) max_streak = streak;
                if (s > 0 && owner[s] >= 0 && owner[s - 1] >= 0 && fence[s] <= fence[s - 1]) {
                    violations++;
                    note("grant %" PRIu64 " has fence %" PRIu64 " after fence %" PRIu64, s,
                         fence[s], fence[s - 1]);
                }
            }
        }
        free(owner);
        free(fence);
    }

    printf("{\"system\":\"baton\",\"workload\":\"W%d\",\"clients\":%d,\"seconds\":%g,"
           "\"ops\":%" PRIu64 ",\"ops_per_s\":%.1f,"
           "\"acq_p50_us\":%.1f,\"acq_p99_us\":%.1f,\"acq_max_us\":%.1f,"
           "\"rel_p50_us\":%.1f,\"rel_p99_us\":%.1f,\"jain\":%.4f,",
           cfg->workload, n, cfg->seconds, ops, (double)ops / cfg->seconds,
           us(hist_percentile(&acq, 50)), us(hist_percentile(&acq, 99)), us(acq.max),
           us(hist_percentile(&rel, 50)), us(hist_percentile(&rel, 99)), jain);
    if (cfg->workload == W2)
        printf("\"max_streak\":%" PRIu64 ",", max_streak);
    else
        printf("\"max_streak\":null,");
    printf("\"errors\":%" PRIu64 ",\"violations\":%" PRIu64, errors, violations);

    /* W3: the longest stretch without a completed cycle, overall and per client. */
    if (cfg->workload == W3) {
        uint64_t end = (uint64_t)(B.t_end - B.t_start), gap = 0, cgap = 0;
        uint64_t *t = malloc((total_recs ? total_recs : 1) * sizeof *t), *ct;
        size_t k = 0;
        if (t != NULL) {
            for (int i = 0; i < n; i++) {
                if (!cl[i].connected) continue;
                ct = t + k;
                for (size_t j = 0; j < cl[i].recs.n; j++) t[k++] = cl[i].recs.v[j].key;
                /* a client's own records are in time order already */
                uint64_t g = longest_gap(ct, (size_t)(t + k - ct), end);
                if (g > cgap) cgap = g;
            }
            qsort(t, k, sizeof *t, cmp_u64);
            gap = longest_gap(t, k, end);
            free(t);
        }
        printf(",\"gap_ms\":%.1f,\"client_gap_max_ms\":%.1f", (double)gap / 1e6,
               (double)cgap / 1e6);
    }
    printf("}\n");
    fflush(stdout);

    for (int i = 0; i < n; i++) {
        hist_free(&cl[i].acq);
        hist_free(&cl[i].rel);
        free(cl[i].recs.v);
    }
    free(cl);
    hist_free(&acq);
    hist_free(&rel);
    pthread_cond_destroy(&B.cv);
    pthread_mutex_destroy(&B.mu);
    return n_connected > 0 ? 0 : 1;
}

/* ---- W4: K sessions, L locks -------------------------------------------------------- */

struct w4 {
    const struct cfg *cfg;
    baton_t **b;          /* K sessions; NULL where the connect failed */
    baton_lock_t **locks; /* L held locks; NULL where not acquired */
    int64_t t_limit;      /* stop acquiring at this time */
};

struct w4_worker {
    struct w4 *w;
    int t;
    pthread_t th;
    bool started;
    struct hist acq;
    uint64_t acquired, errors;
};

/* Phase 1: open the sessions s = t, t + T, t + 2T, ... */
static void *w4_open_main(void *arg)
{
    struct w4_worker *k = arg;
    const struct cfg *cfg = k->w->cfg;
    int rv;

    for (int s = k->t; s < cfg->sessions; s += cfg->clients) {
        int64_t left_ms = (k->w->t_limit - now_ns()) / NS_PER_MS;
        if (left_ms <= 0) break;
        rv = open_session(cfg, s,
                          left_ms < cfg->connect_timeout_ms ? (unsigned)left_ms
                                                            : cfg->connect_timeout_ms,
                          &k->w->b[s]);
        if (rv != 0) {
            k->errors++;
            log_err(s, "connect", rv, baton_connect_errmsg());
        }
    }
    return NULL;
}

/* Phase 2: acquire lock j = s + m*K on session s, for this worker's
 * sessions s, round-robin over them (m = 0, 1, ...). */
static void *w4_lock_main(void *arg)
{
    struct w4_worker *k = arg;
    const struct cfg *cfg = k->w->cfg;
    const int K = cfg->sessions, T = cfg->clients;
    char name[32];
    int64_t t0, t1;
    int rv;

    for (long m = 0;; m++) {
        bool any = false;
        for (int s = k->t; s < K; s += T) {
            long j = (long)s + m * K;
            if (j >= cfg->locks) break;
            any = true;
            if (k->w->b[s] == NULL) continue; /* its connect failed */
            t0 = now_ns();
            if (t0 >= k->w->t_limit) return NULL;
            snprintf(name, sizeof name, "w4-%ld", j);
            rv = baton_trylock(k->w->b[s], name, &k->w->locks[j]);
            t1 = now_ns();
            if (rv != 0) {
                k->errors++;
                log_err(s, "trylock", rv, baton_errmsg(k->w->b[s]));
                continue;
            }
            hist_record(&k->acq, (uint64_t)(t1 - t0));
            k->acquired++;
        }
        if (!any) break;
    }
    return NULL;
}

/* Phase 3: close this worker's sessions (the cluster releases their locks). */
static void *w4_close_main(void *arg)
{
    struct w4_worker *k = arg;
    const struct cfg *cfg = k->w->cfg;

    for (int s = k->t; s < cfg->sessions; s += cfg->clients) {
        baton_close(k->w->b[s]);
        k->w->b[s] = NULL;
    }
    return NULL;
}

/* Run fn on every worker and wait for them all. */
static void w4_phase(struct w4_worker *wk, int T, void *(*fn)(void *))
{
    for (int t = 0; t < T; t++) {
        wk[t].started = pthread_create(&wk[t].th, NULL, fn, &wk[t]) == 0;
        if (!wk[t].started) fn(&wk[t]); /* no thread: do its share here */
    }
    for (int t = 0; t < T; t++)
        if (wk[t].started) pthread_join(wk[t].th, NULL);
}

static int run_w4(const struct cfg *cfg)
{
    struct w4 w;
    struct w4_worker *wk;
    struct hist acq;
    long rss0[MAX_PIDS], rss1[MAX_PIDS];
    uint64_t acquired = 0, errors = 0;
    int64_t t_open, t_lock, t_done;
    int T = cfg->clients, n_open = 0;

    memset(&w, 0, sizeof w);
    w.cfg = cfg;
    w.b = calloc((size_t)cfg->sessions, sizeof *w.b);
    w.locks = calloc((size_t)cfg->locks, sizeof *w.locks);
    wk = calloc((size_t)T, sizeof *wk);
    if (w.b == NULL || w.locks == NULL || wk == NULL || hist_init(&acq)) {
        fprintf(stderr, "lockbench: out of memory\n");
        return 1;
    }
    for (int t = 0; t < T; t++) {
        wk[t].w = &w;
        wk[t].t = t;
        if (hist_init(&wk[t].acq)) {
            fprintf(stderr, "lockbench: out of memory\n");
            return 1;
        }
    }
    for (int i = 0; i < cfg->npids; i++) rss0[i] = read_rss_kb(cfg->pids[i]);

    /* --seconds bounds opening plus acquiring; closing is bounded per call. */
    t_open = now_ns();
    w.t_limit = t_open + (int64_t)(cfg->seconds * NS_PER_S);
    start_watchdog(w.t_limit + (int64_t)cfg->connect_timeout_ms * NS_PER_MS +
                   ((int64_t)cfg->sessions / T + 2) * 5 * NS_PER_S + 60 * NS_PER_S);
    w4_phase(wk, T, w4_open_main);
    for (int s = 0; s < cfg->sessions; s++) n_open += w.b[s] != NULL;
    t_lock = now_ns();
    fprintf(stderr, "lockbench: W4: %d of %d sessions open in %.2f s\n", n_open, cfg->sessions,
            (double)(t_lock - t_open) / 1e9);
    w4_phase(wk, T, w4_lock_main);
    t_done = now_ns();
    for (int i = 0; i < cfg->npids; i++) rss1[i] = read_rss_kb(cfg->pids[i]);

    for (int t = 0; t < T; t++) {
        hist_merge(&acq, &wk[t].acq);
        acquired += wk[t].acquired;
        errors += wk[t].errors;
    }
    fprintf(stderr, "lockbench: W4: %" PRIu64 " of %ld locks in %.2f s; closing the sessions\n",
            acquired, cfg->locks, (double)(t_done - t_lock) / 1e9);
    printf("{\"system\":\"baton\",\"workload\":\"W4\",\"clients\":%d,\"sessions\":%d,"
           "\"locks\":%ld,\"seconds\":%.3f,\"ops\":%" PRIu64 ",\"ops_per_s\":%.1f,"
           "\"acq_p50_us\":%.1f,\"acq_p99_us\":%.1f,\"acq_max_us\":%.1f,"
           "\"errors\":%" PRIu64 ",\"complete\":%s,\"open_seconds\":%.3f",
           T, cfg->sessions, cfg->locks, (double)(t_done - t_lock) / 1e9, acquired,
           t_done > t_lock ? (double)acquired / ((double)(t_done - t_lock) / 1e9) : 0.0,
           us(hist_percentile(&acq, 50)), us(hist_percentile(&acq, 99)), us(acq.max), errors,
           acquired == (uint64_t)cfg->locks ? "true" : "false", (double)(t_lock - t_open) / 1e9);
    if (cfg->npids > 0) {
        print_rss("rss_kb", rss1, cfg->npids);
        print_rss("rss_before_kb", rss0, cfg->npids);
    }
    printf("}\n");
    fflush(stdout);

    /* Close every session (the cluster releases their locks), then free
     * the lock objects, which after baton_close only frees them. */
    w4_phase(wk, T, w4_close_main);
    for (long j = 0; j < cfg->locks; j++)
        if (w.locks[j]) (void)baton_unlock(w.locks[j]);
    for (int t = 0; t < T; t++) hist_free(&wk[t].acq);
    hist_free(&acq);
    free(wk);
    free(w.locks);
    free(w.b);
    return n_open > 0 ? 0 : 1;
}

/* ---- main ------------------------------------------------------------------------ */

static const char usage_text[] =
    "usage: lockbench --endpoints E --workload W1|W2|W3|W4 --clients N --seconds S\n"
    "                 [--hold-ms H] [--sessions K --locks L] [--pids P1,P2,...]\n"
    "                 [--op-timeout-ms MS] [--connect-timeout-ms MS]\n"
    "\n"
    "Drives a running baton cluster and prints one JSON line (WORKLOAD.md).\n"
    "  --endpoints E          ip:port,... client endpoints of the cluster\n"
    "  --workload W           W1 uncontended, W2 hot lock, W3 failover (W1 while the\n"
    "                         harness kills the leader), W4 many sessions and locks\n"
    "  --clients N            client threads, each with its own session (W4: the\n"
    "                         threads that open the sessions and take the locks)\n"
    "  --seconds S            length of the run (W4: time limit for opening the\n"
    "                         sessions and acquiring the locks)\n"
    "  --hold-ms H            W2: how long each grant is held (default 0)\n"
    "  --sessions K           W4: sessions to open (default 1000)\n"
    "  --locks L              W4: distinct locks to acquire (default 100000)\n"
    "  --pids P1,P2,...       W4: server pids whose VmRSS is reported as rss_kb\n"
    "  --op-timeout-ms MS     longest wait for any reply (default 5000)\n"
    "  --connect-timeout-ms MS  longest wait for a session (default 5000)\n";

static void usage_error(const char *msg)
{
    fprintf(stderr, "lockbench: %s\n%s", msg, usage_text);
    exit(2);
}

/* Parse a whole non-negative number in [lo, hi] or exit with a usage error. */
static long parse_long(const char *s, long lo, long hi, const char *what)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        char msg[128];
        snprintf(msg, sizeof msg, "bad %s: '%s'", what, s);
        usage_error(msg);
    }
    return v;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"endpoints", required_argument, NULL, 'e'},
        {"workload", required_argument, NULL, 'w'},
        {"clients", required_argument, NULL, 'c'},
        {"seconds", required_argument, NULL, 's'},
        {"hold-ms", required_argument, NULL, 'H'},
        {"sessions", required_argument, NULL, 'K'},
        {"locks", required_argument, NULL, 'L'},
        {"pids", required_argument, NULL, 'p'},
        {"op-timeout-ms", required_argument, NULL, 'o'},
        {"connect-timeout-ms", required_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct cfg cfg;
    char *end, *p, *tok, *save = NULL;
    int ch;

    memset(&cfg, 0, sizeof cfg);
    cfg.clients = -1;
    cfg.seconds = -1;
    cfg.sessions = 1000;
    cfg.locks = 100000;
    cfg.op_timeout_ms = 5000;
    cfg.connect_timeout_ms = 5000;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'e': cfg.endpoints = optarg; break;
        case 'w':
            if (strcmp(optarg, "W1") == 0) cfg.workload = W1;
            else if (strcmp(optarg, "W2") == 0) cfg.workload = W2;
            else if (strcmp(optarg, "W3") == 0) cfg.workload = W3;
            else if (strcmp(optarg, "W4") == 0) cfg.workload = W4;
            else usage_error("--workload must be W1, W2, W3 or W4");
            break;
        case 'c': cfg.clients = (int)parse_long(optarg, 1, MAX_CLIENTS, "--clients"); break;
        case 's':
            errno = 0;
            cfg.seconds = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(cfg.seconds > 0) || cfg.seconds > 86400)
                usage_error("bad --seconds");
            break;
        case 'H': cfg.hold_ms = (int)parse_long(optarg, 0, 3600000, "--hold-ms"); break;
        case 'K': cfg.sessions = (int)parse_long(optarg, 1, 1000000, "--sessions"); break;
        case 'L': cfg.locks = parse_long(optarg, 0, 100000000, "--locks"); break;
        case 'o':
            cfg.op_timeout_ms = (unsigned)parse_long(optarg, 1, 3600000, "--op-timeout-ms");
            break;
        case 'C':
            cfg.connect_timeout_ms =
                (unsigned)parse_long(optarg, 1, 3600000, "--connect-timeout-ms");
            break;
        case 'p':
            p = optarg;
            cfg.npids = 0;
            while ((tok = strtok_r(p, ",", &save)) != NULL) {
                p = NULL;
                if (cfg.npids == MAX_PIDS) usage_error("too many --pids");
                cfg.pids[cfg.npids++] = (pid_t)parse_long(tok, 1, 1L << 30, "pid");
            }
            break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: usage_error("unknown option");
        }
    }
    if (optind != argc) usage_error("unexpected argument");
    if (cfg.endpoints == NULL) usage_error("--endpoints is required");
    if (cfg.workload == 0) usage_error("--workload is required");
    if (cfg.clients < 0) usage_error("--clients is required");
    if (cfg.seconds < 0) usage_error("--seconds is required");

    /* Each session costs a socket plus the I/O thread's loop descriptors. */
    raise_nofile((rlim_t)(cfg.workload == W4 ? cfg.sessions : cfg.clients) * 8 + 256);
    return cfg.workload == W4 ? run_w4(&cfg) : run_clients(&cfg);
}
