/*
 * lockbench.c -- baton's benchmark driver (docs/performance.md): the
 * options and main. The parts are listed in bench.h.
 *
 *   lockbench --endpoints E --workload W1|...|W9 --clients N --seconds S
 *             [--hold-ms H] [--driver async|blocking] [--loops N]
 *             [--sessions K --locks L] [--pids P1,P2,P3] [--leader-pid P]
 *             [--candidates K --rounds N]
 *             [--cacert F [--cert F --key F]] [--token T]
 *
 * It drives a running cluster through libbaton and prints ONE JSON line on
 * stdout; progress and error messages go to stderr. Every client has its
 * own session and connection. Latencies are measured client-side with
 * CLOCK_MONOTONIC and kept in log-linear histograms (hist.h).
 *
 * Workloads:
 *   W1  each client loops { lock "w1-<client>"; unlock }; ops = cycles.
 *   W2  all clients loop { lock "hot"; hold H ms; unlock }; ops = grants,
 *       with Jain's index over per-client grants, the longest run of
 *       consecutive grants to one client, and holder-flag collisions.
 *   W3  W1, meant to run while the harness kills the leader (lockbench
 *       kills nothing); adds gap_ms and client_gap_max_ms.
 *   W4  K sessions acquire L distinct locks: on one loop with up to 16
 *       try-locks in flight per session (w4_async.c, the default), or with
 *       --driver blocking on N threads (w4.c).
 *   W5  N idle sessions; the servers' CPU while they only keep alive (w5.c).
 *   W6  all clients loop { pick one of 4 names "w6-0".."w6-3"; lock it
 *       shared (9 in 10) or exclusive; hold H ms; unlock }; ops = grants,
 *       with jain, max_streak, shared_ops, max_holders (modes.c).
 *   W7  all clients loop { lock "sem" with .limit = 8; hold H ms; unlock }:
 *       a semaphore of 8; ops = grants, with jain, max_streak, max_holders.
 *   W8  all clients loop { take 2 to 4 of 16 names "w8-0".."w8-15" at once
 *       (baton_lock_many, exclusive); hold H ms; unlock }: atomic
 *       multi-locks; ops = grants, with jain, max_streak, max_holders.
 *   W9  an election: K candidates (half of them processes of their own,
 *       lockbench --victim) and N observers; rounds alternate between the
 *       leader resigning and the leader being killed with SIGKILL; the time
 *       until the next leader leads and until the last observer hears of
 *       it (w9.c); ops = rounds.
 *
 * W1/W2/W3/W6/W7/W8 run on one of two drivers that print the same line: "async"
 * (default; drv_async.c: every client a callback state machine with its own
 * baton_async_t, on --loops libuv loops) or "blocking" (drv_blocking.c: a
 * thread per client with the blocking API). The driver and its CPU use go
 * to stderr. "redis" (drv_redis.c) runs W1/W2/W3 against a Redis server
 * instead, with the usual Redis lock recipe, for make bench-compare; its
 * line says "system":"redis" and whether the server fsyncs every write.
 *
 * violations: in W2, the times a client found the in-process holder flag
 * already set right after its grant; in W6, an exclusive holder that
 * overlaps any other holder of its name; in W7, a ninth holder of the
 * semaphore (both counted in-process, modes.c); in every workload, fences
 * that break baton's fencing guarantee (report.c).
 *
 * errors: calls that returned an error to the caller (a connect, a lock or
 * an unlock). Acquires wait at most for the time left in the run; such a
 * wait ending with the run is not an error.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/bench/bench.h"

static const char usage_text[] =
    "usage: lockbench --endpoints E --workload W1|...|W9 --clients N --seconds S\n"
    "                 [--hold-ms H] [--driver async|blocking|redis] [--loops N]\n"
    "                 [--sessions K --locks L] [--pids P1,P2,...] [--leader-pid P]\n"
    "                 [--candidates K] [--rounds N]\n"
    "                 [--ttl-ms MS] [--open-inflight N]\n"
    "                 [--op-timeout-ms MS] [--connect-timeout-ms MS]\n"
    "                 [--cacert FILE [--cert FILE --key FILE]] [--token TOKEN]\n"
    "\n"
    "Drives a running baton cluster and prints one JSON line (docs/performance.md).\n"
    "  --endpoints E          ip:port,... client endpoints of the cluster\n"
    "  --workload W           W1 uncontended, W2 hot lock, W3 failover (W1 while the\n"
    "                         harness kills the leader), W4 many sessions and locks,\n"
    "                         W5 idle sessions (the servers' CPU while they idle),\n"
    "                         W6 shared/exclusive mix on 4 names (90% shared),\n"
    "                         W7 a semaphore of 8 (\"sem\", .limit = 8),\n"
    "                         W8 atomic multi-locks of 2-4 of 16 names,\n"
    "                         W9 an election: leaders resign or are killed\n"
    "  --clients N            clients, each with its own session (W4 with --driver\n"
    "                         blocking: the threads that open the sessions and take\n"
    "                         the locks; W5: the idle sessions; W9: the observers)\n"
    "  --seconds S            length of the run (W4: time limit for opening the\n"
    "                         sessions and acquiring the locks; W5: the idle window;\n"
    "                         W9: no round starts after S seconds)\n"
    "  --hold-ms H            W2/W6/W7: how long each grant is held (default 0); W4 (async\n"
    "                         driver): how long the locks stay held after the JSON\n"
    "                         line is printed, before the sessions close\n"
    "  --driver D             W1-W4, W6, W7: async (default; callback state machines on\n"
    "                         --loops libuv loops; W4 on one) or blocking (a thread\n"
    "                         per client); W1-W3: redis (not baton: the Redis server\n"
    "                         at the first endpoint, with the usual lock recipe, SET\n"
    "                         NX PX and a Lua compare-and-delete, on the async\n"
    "                         driver's loops; no fences)\n"
    "  --names K              W1/W3: each cycle takes the client's own K names at once\n"
    "                         (one baton_lock_many; default 1, at most 8): what a\n"
    "                         multi-lock costs beside a single lock\n"
    "  --loops N              async driver: libuv loops, one thread each (default 1;\n"
    "                         W5 always runs on one loop)\n"
    "  --sessions K           W4: sessions to open (default 1000)\n"
    "  --locks L              W4: distinct locks to acquire (default 100000)\n"
    "  --pids P1,P2,...       W4: server pids whose VmRSS is reported as rss_kb;\n"
    "                         W5: server pids whose CPU and VmRSS are reported\n"
    "  --leader-pid P         W5: the leader's pid (one of --pids): leader_cpu_pct\n"
    "  --candidates K         W9: candidates, an even number >= 2 (default 8); half\n"
    "                         are sessions of this process, half processes of their\n"
    "                         own that get SIGKILL when they lead\n"
    "  --rounds N             W9: rounds of each kind, resign and kill (default 10)\n"
    "  --ttl-ms MS            session lease asked for (default: libbaton's, 10000)\n"
    "  --open-inflight N      W5: session opens and closes in flight (default 256)\n"
    "  --op-timeout-ms MS     longest wait for any reply (default 5000)\n"
    "  --connect-timeout-ms MS  longest wait for a session (default 5000)\n"
    "  --cacert FILE          TLS: the CA of the nodes' certificates (default\n"
    "                         $BENCH_CACERT; none: plaintext)\n"
    "  --cert FILE, --key FILE  a client certificate and its key (default\n"
    "                         $BENCH_CERT, $BENCH_KEY)\n"
    "  --token TOKEN          the bearer token of every session (default $BENCH_TOKEN)\n";

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

static int parse_workload(const char *s)
{
    static const char *const names[] = {"W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9"};

    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (strcmp(s, names[i]) == 0) return W1 + i;
    usage_error("--workload must be W1, W2, W3, W4, W5, W6, W7, W8 or W9");
    return 0;
}

static void parse_pids(struct cfg *cfg, char *list)
{
    char *p = list, *tok, *save = NULL;

    cfg->npids = 0;
    while ((tok = strtok_r(p, ",", &save)) != NULL) {
        p = NULL;
        if (cfg->npids == MAX_PIDS) usage_error("too many --pids");
        cfg->pids[cfg->npids++] = (pid_t)parse_long(tok, 1, 1L << 30, "pid");
    }
}

/* The value of environment variable `var`, NULL when unset or empty. */
static const char *env_or_null(const char *var)
{
    const char *v = getenv(var);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

/* The descriptors a run needs: each blocking session costs a socket plus
 * its I/O thread's loop descriptors, an async one only its socket. */
static rlim_t nofile_wanted(const struct cfg *cfg)
{
    if (cfg->workload == W4) return (rlim_t)cfg->sessions * 8 + 256;
    if (cfg->workload == W5 || cfg->driver != DRV_BLOCKING)
        return (rlim_t)cfg->clients + 64 * (rlim_t)cfg->loops + 256;
    return (rlim_t)cfg->clients * 8 + 256;
}

int main(int argc, char **argv)
{
    enum { O_DRIVER = 256, O_NAMES, O_LOOPS, O_LEADER, O_TTL, O_INFLIGHT, O_CACERT, O_CERT, O_KEY, O_TOKEN,
           O_CANDIDATES, O_ROUNDS, O_VICTIM };
    static const struct option opts[] = {
        {"endpoints", required_argument, NULL, 'e'},
        {"workload", required_argument, NULL, 'w'},
        {"clients", required_argument, NULL, 'c'},
        {"seconds", required_argument, NULL, 's'},
        {"hold-ms", required_argument, NULL, 'H'},
        {"driver", required_argument, NULL, O_DRIVER},
        {"loops", required_argument, NULL, O_LOOPS},
        {"names", required_argument, NULL, O_NAMES},
        {"sessions", required_argument, NULL, 'K'},
        {"locks", required_argument, NULL, 'L'},
        {"pids", required_argument, NULL, 'p'},
        {"leader-pid", required_argument, NULL, O_LEADER},
        {"ttl-ms", required_argument, NULL, O_TTL},
        {"open-inflight", required_argument, NULL, O_INFLIGHT},
        {"op-timeout-ms", required_argument, NULL, 'o'},
        {"connect-timeout-ms", required_argument, NULL, 'C'},
        {"cacert", required_argument, NULL, O_CACERT},
        {"cert", required_argument, NULL, O_CERT},
        {"key", required_argument, NULL, O_KEY},
        {"token", required_argument, NULL, O_TOKEN},
        {"candidates", required_argument, NULL, O_CANDIDATES},
        {"rounds", required_argument, NULL, O_ROUNDS},
        {"victim", required_argument, NULL, O_VICTIM}, /* W9's own; not in the usage */
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct cfg cfg;
    char *end;
    int ch;

    memset(&cfg, 0, sizeof cfg);
    cfg.driver = DRV_ASYNC;
    cfg.system = "baton";
    cfg.durable = -1;
    cfg.fenced = true;
    cfg.loops = 1;
    cfg.names = 1;
    cfg.clients = -1;
    cfg.seconds = -1;
    cfg.sessions = 1000;
    cfg.locks = 100000;
    cfg.open_inflight = 256;
    cfg.candidates = 8;
    cfg.rounds = 10;
    cfg.op_timeout_ms = 5000;
    cfg.connect_timeout_ms = 5000;
    cfg.cacert = env_or_null("BENCH_CACERT");
    cfg.cert = env_or_null("BENCH_CERT");
    cfg.key = env_or_null("BENCH_KEY");
    cfg.token = env_or_null("BENCH_TOKEN");
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'e': cfg.endpoints = optarg; break;
        case 'w': cfg.workload = parse_workload(optarg); break;
        case 'c': cfg.clients = (int)parse_long(optarg, 1, MAX_CLIENTS, "--clients"); break;
        case 's':
            errno = 0;
            cfg.seconds = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(cfg.seconds > 0) || cfg.seconds > 86400)
                usage_error("bad --seconds");
            break;
        case 'H': cfg.hold_ms = (int)parse_long(optarg, 0, 3600000, "--hold-ms"); break;
        case O_DRIVER:
            if (strcmp(optarg, "async") == 0) cfg.driver = DRV_ASYNC;
            else if (strcmp(optarg, "blocking") == 0) cfg.driver = DRV_BLOCKING;
            else if (strcmp(optarg, "redis") == 0) cfg.driver = DRV_REDIS;
            else usage_error("--driver must be async, blocking or redis");
            break;
        case O_LOOPS: cfg.loops = (int)parse_long(optarg, 1, MAX_LOOPS, "--loops"); break;
        case O_NAMES: cfg.names = (int)parse_long(optarg, 1, W1_MAX_NAMES, "--names"); break;
        case 'K': cfg.sessions = (int)parse_long(optarg, 1, 1000000, "--sessions"); break;
        case 'L': cfg.locks = parse_long(optarg, 0, 100000000, "--locks"); break;
        case 'p': parse_pids(&cfg, optarg); break;
        case O_LEADER:
            cfg.leader_pid = (pid_t)parse_long(optarg, 1, 1L << 30, "--leader-pid");
            break;
        case O_TTL: cfg.ttl_ms = (unsigned)parse_long(optarg, 1, 3600000, "--ttl-ms"); break;
        case O_INFLIGHT:
            cfg.open_inflight = (int)parse_long(optarg, 1, MAX_CLIENTS, "--open-inflight");
            break;
        case 'o':
            cfg.op_timeout_ms = (unsigned)parse_long(optarg, 1, 3600000, "--op-timeout-ms");
            break;
        case 'C':
            cfg.connect_timeout_ms =
                (unsigned)parse_long(optarg, 1, 3600000, "--connect-timeout-ms");
            break;
        case O_CACERT: cfg.cacert = optarg; break;
        case O_CERT: cfg.cert = optarg; break;
        case O_KEY: cfg.key = optarg; break;
        case O_TOKEN: cfg.token = optarg; break;
        case O_CANDIDATES:
            cfg.candidates = (int)parse_long(optarg, 2, 1000, "--candidates");
            if (cfg.candidates % 2) usage_error("--candidates must be even");
            break;
        case O_ROUNDS: cfg.rounds = (int)parse_long(optarg, 1, 1000000, "--rounds"); break;
        case O_VICTIM: cfg.victim = (int)parse_long(optarg, 1, 1000000000, "--victim"); break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: usage_error("unknown option");
        }
    }
    if (optind != argc) usage_error("unexpected argument");
    if (cfg.endpoints == NULL) usage_error("--endpoints is required");
    if (cfg.workload == 0) usage_error("--workload is required");
    if (cfg.victim) {
        if (cfg.workload != W9) usage_error("--victim is W9's");
        return run_w9_victim(&cfg);
    }
    if (cfg.clients < 0) usage_error("--clients is required");
    if (cfg.seconds < 0) usage_error("--seconds is required");
    if (cfg.leader_pid != 0) {
        int found = 0;
        for (int i = 0; i < cfg.npids; i++) found |= cfg.pids[i] == cfg.leader_pid;
        if (!found) usage_error("--leader-pid must be one of --pids");
    }

    if (cfg.driver == DRV_REDIS && cfg.workload != W1 && cfg.workload != W2 && cfg.workload != W3)
        usage_error("--driver redis runs W1, W2 and W3 only");

    raise_nofile(nofile_wanted(&cfg));
    if (cfg.driver == DRV_REDIS) return run_redis(&cfg);
    switch (cfg.workload) {
    case W4: return cfg.driver == DRV_ASYNC ? run_w4_async(&cfg) : run_w4(&cfg);
    case W5: return run_w5(&cfg);
    case W9: return run_w9(&cfg);
    default: return cfg.driver == DRV_ASYNC ? run_async(&cfg) : run_blocking(&cfg);
    }
}
