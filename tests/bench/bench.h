/*
 * bench.h -- what lockbench's parts share (tests/bench/; the workloads are in docs/performance.md).
 *
 *   lockbench.c     options, usage, main
 *   util.c          clock, sleeps, rate-limited error lines, records,
 *                   /proc readers, watchdog, open-files limit
 *   report.c        W1/W2/W3: merge the per-client results, run the checks
 *                   and print the one JSON line
 *   drv_blocking.c  W1/W2/W3 driver: one thread per client, blocking API
 *   loops.c         the libuv harness of the callback drivers (loops.h)
 *   drv_async.c     W1/W2/W3 driver: clients as callback state machines on
 *                   libuv loops, async API
 *   drv_redis.c     W1/W2/W3 on Redis instead of baton: the usual lock recipe
 *                   (SET NX PX, Lua compare-and-delete) through hiredis, on
 *                   the same loops, for the comparison of make bench-compare
 *   w4.c            W4: K sessions holding L locks
 *   w5.c            W5: N idle sessions, the servers' CPU while they idle
 *   w9.c            W9: an election's rounds, timed and checked (w9.h);
 *                   w9_cand.c its candidates, w9_observe.c its observers,
 *                   w9_victim.c the candidate process that gets SIGKILL
 *   modes.c         W6/W7: what each cycle asks for (names, mode, limit)
 *                   and the in-process checks of the holders
 *   opts.c          every session's libbaton options (cluster, timeouts, TLS)
 *
 * Every driver fills one struct cres per client and leaves the checks and
 * the output to report_clients(), so both drivers print the same line.
 * W1/W2/W3/W6/W7 run on either driver.
 */
#ifndef BATON_BENCH_BENCH_H
#define BATON_BENCH_BENCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "tests/bench/hist.h"
#include "tests/lib/clock.h"
#include "tests/lib/proc.h"

enum { W1 = 1, W2, W3, W4, W5, W6, W7, W8, W9 };
enum { DRV_ASYNC = 1, DRV_BLOCKING, DRV_REDIS };

#define MAX_PIDS 16
#define MAX_CLIENTS 100000
#define MAX_LOOPS 64
#define ERROR_PAUSE_NS 10000000LL /* after an error other than a lost session */
#define RECONNECT_PAUSE_NS 50000000LL
/* A wait that timed out this close to the end of the run ended with the run. */
#define RUN_OVER_SLACK_NS 50000000LL
#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL

struct cfg {
    const char *endpoints;
    int workload;
    int driver;       /* DRV_ASYNC, DRV_BLOCKING (W1/W2/W3/W6/W7/W8) or DRV_REDIS (W1/W2/W3) */
    /* What the JSON line says was measured: "baton", or "redis" with
     * durable 1 (every write fsynced before its reply) or 0; durable -1 is
     * left out of the line. fenced: grants carry fences to check. */
    const char *system;
    int durable;
    bool fenced;
    int loops;        /* async driver: libuv loops (threads); W5 uses one */
    int clients;
    double seconds;
    int hold_ms;
    int names;        /* W1/W3: names each cycle takes at once (1: baton_lock; more:
                         one baton_lock_many of the client's own names) */
    int sessions;
    long locks;
    unsigned op_timeout_ms;
    unsigned connect_timeout_ms;
    unsigned ttl_ms;  /* session_ttl_ms asked for (0: the library's default) */
    int open_inflight; /* W5: session opens (and closes) in flight at once */
    int npids;
    pid_t pids[MAX_PIDS];
    pid_t leader_pid; /* W5: which of pids is the leader (0: unknown) */
    int candidates;   /* W9: candidates (even: half of them victim processes) */
    int rounds;       /* W9: rounds of each kind (a clean resign, a kill) */
    int victim;       /* W9: > 0 in a victim process (lockbench --victim N) */
    /* Security (NULL: none): --cacert, --cert, --key, --token, else
     * $BENCH_CACERT, $BENCH_CERT, $BENCH_KEY, $BENCH_TOKEN. */
    const char *cacert, *cert, *key, *token;
};

/* ---- opts.c ------------------------------------------------------------------------ */

/* Every session's baton_opts: endpoints, timeouts, ttl, TLS and token
 * from cfg; no client name. */
struct baton_opts;
void bench_opts(const struct cfg *cfg, struct baton_opts *o);

/* ---- util.c ------------------------------------------------------------------------ */

/* now_ns and sleep_ns: tests/lib/clock.h. Sleep ns nanoseconds, but not
 * past `until` (now_ns time; 0: no bound). */
void sleep_ns_until(int64_t ns, int64_t until);
double us(uint64_t ns);
/* CPU time (user + system) this process has used so far, in ns. */
int64_t self_cpu_ns(void);

/* One line to stderr, at most MAX_ERR_LOGS per run; thread-safe. */
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Report a failed call of `client` (msg: the context's detail, may be NULL). */
void log_err(int client, const char *what, int rv, const char *msg);

/* What a grant left behind for the checks at the end: in W2/W6/W7 the
 * grant's sequence number, in W1/W3 its completion time (ns after the start). */
struct rec {
    uint64_t key;
    uint64_t fence;
};

struct recs {
    struct rec *v;
    size_t n, cap;
    bool oom; /* a record was dropped */
};

void recs_add(struct recs *r, uint64_t key, uint64_t fence);
int cmp_u64(const void *a, const void *b);

/* VmRSS of pid: proc_rss_kb (tests/lib/proc.h). */
/* Print ,"field":[a,b,...] (null where a value is < 0). */
void print_rss(const char *field, const long *kb, int n);
/* utime + stime of pid in clock ticks (sysconf(_SC_CLK_TCK)); -1 if unreadable. */
long long read_cpu_ticks(pid_t pid);

/* End the process (exit 3, no JSON) if it is still running at hard_ns
 * (monotonic). Every call is bounded, so this only fires on a bug. */
void start_watchdog(int64_t hard_ns);

/* Raise the soft open-files limit to at least `want` (up to the hard limit). */
void raise_nofile(rlim_t want);

/* ---- modes.c: W6/W7, lock modes --------------------------------------------------- */

/* A workload whose grants are counted in one sequence (max_streak) and
 * whose clients take names of struct modes (W6, W7) rather than their own
 * or "hot". */
#define GRANT_SEQ_WORKLOAD(w) ((w) == W2 || (w) == W6 || (w) == W7 || (w) == W8)
#define MODES_WORKLOAD(w) ((w) == W6 || (w) == W7 || (w) == W8)

#define MODES_MAX_NAMES 16 /* names of one workload */
#define MREQ_MAX 4         /* names of one request */
#define W1_MAX_NAMES 8     /* lockbench --names */

/* One acquire of a cycle: names (indexes into struct modes' names), all
 * in one mode, with the semaphore limit (0: an ordinary lock). */
struct mreq {
    int n;
    int idx[MREQ_MAX];
    uint8_t mode;   /* BATON_MODE_* */
    uint32_t limit;
};

/* A W6/W7 run's names and their holders in this process (every client). */
struct modes {
    int workload;
    int n_names;
    char names[MODES_MAX_NAMES][16];
    atomic_int shared[MODES_MAX_NAMES];    /* shared holders of each name */
    atomic_int exclusive[MODES_MAX_NAMES]; /* exclusive holders (W7: permits held) */
    atomic_int max_holders; /* most holders of one name seen at once */
};

/* The names of cfg's workload; -1 if it is not W6/W7. */
int modes_init(struct modes *m, const struct cfg *cfg);
/* Client `client`'s random stream (the same for every run). */
void modes_seed(uint64_t *rng, int client);
/* What the client asks for in its next cycle. */
void modes_pick(const struct modes *m, uint64_t *rng, struct mreq *q);
/* Right after the grant of q: count the holders in; the holders found that
 * it must not overlap with (0 when all is well; each is logged). */
uint64_t modes_enter(struct modes *m, const struct mreq *q, int client);
/* W1/W3 with --names K > 1: the client's K names, `first` and first.1 ..
 * first.K-1, into buf, pointed at by ptrs. */
void w1_names(const char *first, int k, char (*buf)[48], const char **ptrs);
/* Right before the release of q is sent: count the holders out. */
void modes_leave(struct modes *m, const struct mreq *q);

/* ---- report.c: per-client results of W1/W2/W3/W6/W7 ------------------------------- */

struct cres {
    int id;
    bool connected;       /* the first session was opened */
    struct hist acq, rel; /* ns */
    uint64_t ops;         /* cycles (W1/W3) or grants (W2/W6/W7) within the run */
    uint64_t shared_ops;  /* W6: of ops, the shared grants */
    uint64_t errors;
    uint64_t violations;
    uint64_t last_fence;
    struct recs recs;
};

/* n results with ids 0..n-1 and empty histograms. NULL if out of memory. */
struct cres *cres_new(int n);
void cres_free(struct cres *r, int n);

/* A grant's fence must be greater than the last one this client got;
 * counts a violation otherwise. */
void cres_check_fence(struct cres *r, uint64_t fence);

/*
 * Merge the results of a W1/W2/W3/W6/W7 run from t_start to t_end
 * (monotonic ns), run the cross-client checks (duplicate fences; W2/W6/W7:
 * the longest streak, W2: fences in grant order; W3: the gaps) and print
 * the JSON line of docs/performance.md on stdout. grant_seq: W2/W6/W7
 * grants handed out (the keys of the records are 0..grant_seq-1). m: the
 * W6/W7 names (max_holders), else NULL. Returns 0 if any client
 * connected, else 1.
 */
int report_clients(const struct cfg *cfg, struct cres *r, int n, int64_t t_start,
                   int64_t t_end, uint64_t grant_seq, const struct modes *m);

/* lockbench's own CPU over the run, on stderr (it competes with the servers
 * for the same cores, so a busy driver caps what it measures). */
void report_driver_cpu(const char *driver, int64_t cpu_ns, int64_t wall_ns);

/* ---- the drivers and workloads ------------------------------------------------------ */

/* Open a session with the blocking API for client `id` (client name
 * "lockbench-<id>"), waiting at most timeout_ms; baton_connect's result. */
struct baton;
int bench_open_session(const struct cfg *cfg, int id, unsigned timeout_ms, struct baton **out);

/* Start opening a session for client `id` (client name name_prefix<id>) with
 * the async API on loop: baton_async_new, the libuv adapter, then
 * baton_async_open(cb, data). 0, or the failing call's error (logged); on
 * error *out, if not NULL, must still be freed with baton_async_free. */
struct baton_async;
struct uv_loop_s;
int bench_async_open(const struct cfg *cfg, const char *name_prefix, int id,
                     struct uv_loop_s *loop,
                     void (*cb)(struct baton_async *, int, uint64_t, void *), void *data,
                     struct baton_async **out);

int run_blocking(const struct cfg *cfg); /* W1/W2/W3/W6/W7/W8 */
int run_async(const struct cfg *cfg);    /* W1/W2/W3/W6/W7/W8 */
/* W1/W2/W3 against the Redis server at the first of cfg->endpoints; sets
 * cfg->durable from the server's configuration. */
int run_redis(struct cfg *cfg);
int run_w4(const struct cfg *cfg);       /* W4, blocking driver (threads) */
int run_w4_async(const struct cfg *cfg); /* W4, async driver (one loop) */
int run_w5(const struct cfg *cfg);
int run_w9(const struct cfg *cfg);        /* W9, one loop */
int run_w9_victim(const struct cfg *cfg); /* W9's candidate process (--victim) */

#endif /* BATON_BENCH_BENCH_H */
