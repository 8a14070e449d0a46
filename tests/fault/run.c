/*
 * run.c -- faultrun: the fault harness. Starts a three-node cluster whose
 * raft links pass through a fault-injecting proxy, a fenced store and
 * several clients that loop lock -> guarded writes -> unlock on a few hot
 * locks; lets the nemesis inject faults for a while; heals everything,
 * stops the clients and the cluster; compares the nodes' state digests;
 * and runs the checker on the logs. tests/fault/README.md describes the
 * whole design; this is the driver.
 *
 *   faultrun [--seconds N] [--clients N] [--locks N] [--ttl MS] [--seed S]
 *            [--faults LIST] [--expect-violations] [--keep] [--plain] [--exclusive]
 *            [--no-multi] [--no-elect]
 *
 *   --seconds N         how long the nemesis runs (default 120)
 *   --clients N         client processes (default 6), --locks N hot locks (2)
 *   --ttl MS            the clients' session lease (default 3000)
 *   --seed S            the nemesis's random seed (default: from the clock);
 *                       printed, so a run can be repeated
 *   --faults LIST       comma-separated fault kinds (nemesis.c), or "all"
 *   --expect-violations succeed only if the checker FINDS violations: for
 *                       the selftest against a deliberately broken batond
 *   --keep              keep the logs (kept anyway when the run fails)
 *   --plain             every client straight to the nodes with the real
 *                       clock, no hostile client (client_profiles); the
 *                       faults that need the client proxy, and the
 *                       hostile-* floods, are then skipped
 *   --exclusive         every client takes exclusive hot locks only (the
 *                       harness before lock modes); by default all but c0
 *                       mix in a read/write lock and a semaphore of 3, and
 *                       c1, c2, c4, c5, ... atomic multi-locks
 *   --no-multi          no client takes multi-locks: for the selftest
 *                       against the broken build, whose deliberate breakage
 *                       (a single ACQUIRE forgets the lock's holders) takes
 *                       one name of a multi-lock and leaves records that
 *                       storage/multi.c cannot apply against: its nodes
 *                       fail to apply an entry and stop within seconds
 *   --no-elect          no election workers (nemesis_elect.c, elect.c): by
 *                       default three campaigners and two observers run
 *                       the elections elect0 and elect1 beside the locks,
 *                       and the kill-elect fault kills leading campaigners
 *
 * batond and batonctl come from $BATON_BUILD (tests/lib/cluster.h); the
 * harness's own programs from the directory faultrun is in.
 *
 * Exit status: 0 success; 1 the checker found violations (or, with
 * --expect-violations, did not); 2 set-up failed; 3 the harness saw
 * something else wrong: a node crashed, a client hung or died, the nodes'
 * state digests differ, a node did not stop cleanly.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fault/flog.h"
#include "tests/fault/run.h"
#include "tests/lib/files.h"

static struct run R;

/* ---- options ------------------------------------------------------------------- */

static int parse_faults(struct run *r, const char *s)
{
    char buf[256], *save = NULL, *tok;

    if (strcmp(s, "all") == 0) {
        r->faults_enabled = nemesis_default_faults();
        return 0;
    }
    snprintf(buf, sizeof buf, "%s", s);
    r->faults_enabled = 0;
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int k;
        for (k = 0; k < F_COUNT; k++)
            if (strcmp(tok, fault_names[k]) == 0) break;
        if (k == F_COUNT) {
            fprintf(stderr, "faultrun: unknown fault '%s'\n", tok);
            return -1;
        }
        r->faults_enabled |= 1u << k;
    }
    return r->faults_enabled ? 0 : -1;
}

static int parse_args(struct run *r, int argc, char **argv)
{
    static const struct option opts[] = {
        {"seconds", required_argument, NULL, 's'}, {"clients", required_argument, NULL, 'c'},
        {"locks", required_argument, NULL, 'l'},   {"ttl", required_argument, NULL, 't'},
        {"seed", required_argument, NULL, 'r'},    {"faults", required_argument, NULL, 'f'},
        {"expect-violations", no_argument, NULL, 'x'}, {"keep", no_argument, NULL, 'k'},
        {"plain", no_argument, NULL, 'p'}, {"exclusive", no_argument, NULL, 'X'},
        {"no-multi", no_argument, NULL, 'M'}, {"no-elect", no_argument, NULL, 'E'}, {0},
    };
    int o;

    r->seconds = 120;
    r->n_clients = 6;
    r->n_locks = 2;
    r->ttl_ms = 3000;
    r->seed = (uint64_t)now_us() ^ (uint64_t)getpid() << 32;
    r->faults_enabled = nemesis_default_faults();
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 's': r->seconds = (unsigned)atoi(optarg); break;
        case 'c': r->n_clients = atoi(optarg); break;
        case 'l': r->n_locks = atoi(optarg); break;
        case 't': r->ttl_ms = (unsigned)atoi(optarg); break;
        case 'r': r->seed = strtoull(optarg, NULL, 10); break;
        case 'f':
            if (parse_faults(r, optarg) != 0) return -1;
            break;
        case 'x': r->expect_violations = 1; break;
        case 'k': r->keep = 1; break;
        case 'p': r->plain = 1; break;
        case 'X': r->exclusive_only = 1; break;
        case 'M': r->no_multi = 1; break;
        case 'E': r->no_elect = 1; break;
        default: return -1;
        }
    }
    if (optind != argc || r->n_clients < 1 || r->n_clients > RUN_MAX_CLIENTS || r->n_locks < 1 ||
        r->ttl_ms < 1000 || r->seconds < 1)
        return -1;
    r->rng = r->seed ? r->seed : 1;
    if (r->plain)
        r->faults_enabled &= ~(1u << F_PART_CLIENT | 1u << F_DEPOSED | 1u << F_HOSTILE_CACHE |
                               1u << F_HOSTILE_READS | 1u << F_HOSTILE_SESSIONS |
                               1u << F_HOSTILE_PREHELLO | 1u << F_PART_ELECT);
    if (r->no_elect) r->faults_enabled &= ~(1u << F_KILL_ELECT | 1u << F_PART_ELECT);
    return r->faults_enabled ? 0 : -1;
}

/* ---- set-up ---------------------------------------------------------------------- */

static void tool(const struct run *r, const char *name, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%s", r->tools, name);
}

static int start_store(struct run *r)
{
    char path[PATH_MAX + 32], logp[PATH_MAX + 32], line[64];
    const char *argv[] = {path, logp, NULL};
    int in[2], out[2];

    tool(r, "faultstore", path, sizeof path);
    snprintf(logp, sizeof logp, "%s/store.log", r->dir);
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return -1;
    r->store_pid = proc_spawn(argv, in[0], out[1], PROC_INHERIT);
    close(in[0]);
    close(out[1]);
    r->store_in = in[1];
    if (r->store_pid < 0 || proc_read_line(out[0], line, sizeof line, 10000) != 0 ||
        sscanf(line, "port %d", &r->store_port) != 1) {
        close(out[0]);
        fprintf(stderr, "faultrun: the fenced store did not start\n");
        return -1;
    }
    close(out[0]);
    return 0;
}

/* The proxy's "client G ID PORT" lines, then "ready". 0 or -1. */
static int read_proxy_ports(struct run *r)
{
    char line[64];
    int g, port, want = r->n_groups * r->c.n;
    unsigned id;

    for (int k = 0; k < want; k++) {
        if (proc_read_line(r->proxy_out, line, sizeof line, 10000) != 0 ||
            sscanf(line, "client %d %u %d", &g, &id, &port) != 3 || g < 0 || g >= r->n_groups ||
            id < 1 || id > (unsigned)r->c.n)
            return -1;
        r->group_port[g][id - 1] = port;
    }
    return proc_read_line(r->proxy_out, line, sizeof line, 10000) == 0 &&
                   strcmp(line, "ready") == 0
               ? 0
               : -1;
}

static int start_proxy(struct run *r)
{
    char path[PATH_MAX + 32], logp[PATH_MAX + 32], args[CLUSTER_MAX_NODES][64], groups[16];
    const char *argv[CLUSTER_MAX_NODES + 6];
    int in[2], out[2], logfd, n = 0;

    tool(r, "faultproxy", path, sizeof path);
    argv[n++] = path;
    argv[n++] = "--pids"; /* the harness's pid files tell it who sends what */
    argv[n++] = r->c.root;
    snprintf(groups, sizeof groups, "%d", r->n_groups);
    argv[n++] = "--client-groups";
    argv[n++] = groups;
    for (int i = 0; i < r->c.n; i++) {
        snprintf(args[i], sizeof args[i], "%u:%d:%d:%d", r->c.nodes[i].id,
                 r->c.nodes[i].raft_port, r->c.nodes[i].raft_bind_port,
                 r->c.nodes[i].client_port);
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    snprintf(logp, sizeof logp, "%s/proxy.log", r->dir);
    logfd = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (logfd < 0 || pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return -1;
    r->proxy_pid = proc_spawn(argv, in[0], out[1], logfd);
    close(in[0]);
    close(out[1]);
    close(logfd);
    r->proxy_in = in[1];
    r->proxy_out = out[0];
    if (r->proxy_pid < 0 || read_proxy_ports(r) != 0) {
        fprintf(stderr, "faultrun: the proxy did not start (see %s)\n", logp);
        return -1;
    }
    return 0;
}

void preload_env(const char *so, char *a, size_t alen, char *b, size_t blen)
{
    const char *asan = getenv("ASAN_OPTIONS");

    snprintf(a, alen, "LD_PRELOAD=%s", so);
    snprintf(b, blen, "ASAN_OPTIONS=%s%sverify_asan_link_order=0", asan ? asan : "",
             asan && *asan ? ":" : "");
}

/*
 * How each client runs. Odd-numbered clients go through the client proxy,
 * each as a group of its own, so that the nemesis can cut one off from
 * some nodes (nemesis_net.c); clients 2, 6, ... run with a clock 0.1% fast
 * and 3, 7, ... with one 0.1% slow (shim_clock.so). With five clients: c0
 * and c4 plain, c1 proxied, c2 fast, c3 proxied and slow. The proxied ones
 * make a long hold now and then (client.c, --long-holds), so that a cut
 * finds them holding. --plain: all plain.
 *
 * Lock modes: c0 takes only the exclusive hot locks; every other client
 * mixes in shared and exclusive holds of a read/write lock and permits of
 * a semaphore of 3 (client.c, --modes), so that the proxied and skewed
 * clients -- the ones the faults strike hardest -- hold every mode. With
 * the default six clients five contend for the semaphore's three permits.
 * Multi-locks: the mode clients but every third (c1, c2, c4, c5, ...) also
 * take atomic multi-locks of 2-3 of the exclusive names (client.c,
 * --multi), which c0, c3 and the others' single calls take one by one: the
 * proxied c1 and the skewed c2 among them, and c3 (proxied, slow) without.
 * --exclusive: all exclusive only, one name at a time.
 */
static void client_profiles(struct run *r)
{
    r->n_groups = 0;
    r->n_modes = 0;
    for (int k = 0; k < r->n_clients; k++) {
        r->client_group[k] = !r->plain && k % 2 == 1 ? r->n_groups++ : -1;
        r->client_ppm[k] = r->plain ? 0 : k % 4 == 2 ? 1000 : k % 4 == 3 ? -1000 : 0;
        r->client_modes[k] = !r->exclusive_only && k != 0;
        r->n_modes += r->client_modes[k];
        r->client_multi[k] = r->client_modes[k] && !r->no_multi && k % 3 != 0;
    }
    elect_profiles(r);
}

void client_env(const struct run *r, int g, long ppm, struct client_env *ce)
{
    char so[2 * PATH_MAX + 80] = "";
    int n = 0;

    snprintf(ce->endpoints, sizeof ce->endpoints, "%s", cluster_endpoints(&r->c));
    snprintf(ce->expect_ppm, sizeof ce->expect_ppm, "%ld", ppm);
    snprintf(ce->expect_ports, sizeof ce->expect_ports, "%d", g >= 0 ? r->c.n : 0);
    if (g >= 0) {
        size_t eo = 0, mo;
        mo = (size_t)snprintf(ce->buf[2], sizeof ce->buf[2], "BATON_FAULT_CONNECT_MAP=");
        for (int i = 0; i < r->c.n; i++) {
            eo += (size_t)snprintf(ce->endpoints + eo, sizeof ce->endpoints - eo,
                                   "%s127.0.0.1:%d", i ? "," : "", r->group_port[g][i]);
            mo += (size_t)snprintf(ce->buf[2] + mo, sizeof ce->buf[2] - mo, "%s%d=%d",
                                   i ? "," : "", r->c.nodes[i].client_port, r->group_port[g][i]);
        }
        ce->env[n++] = ce->buf[2];
        snprintf(so, sizeof so, "%s/shim_connect.so", r->tools);
    }
    if (ppm != 0) {
        snprintf(ce->buf[3], sizeof ce->buf[3], "BATON_FAULT_CLOCK_PPM=%ld", ppm);
        ce->env[n++] = ce->buf[3];
        snprintf(so + strlen(so), sizeof so - strlen(so), "%s%s/shim_clock.so", so[0] ? ":" : "",
                 r->tools);
    }
    if (so[0]) {
        preload_env(so, ce->buf[0], sizeof ce->buf[0], ce->buf[1], sizeof ce->buf[1]);
        ce->env[n++] = ce->buf[0];
        ce->env[n++] = ce->buf[1];
    }
    ce->env[n] = NULL;
}

static int start_clients(struct run *r)
{
    for (int k = 0; k < r->n_clients; k++) {
        static struct client_env ce;
        char path[PATH_MAX + 32], logp[PATH_MAX + 32], errp[PATH_MAX + 32], port[16], name[16],
            locks[16], ttl[16], seed[32], ca[PATH_MAX + 64];
        const char *argv[] = {path,    "--endpoints", ce.endpoints,
                              "--store", port,         "--name", name, "--log", logp,
                              "--locks", locks,        "--ttl",  ttl,  "--seed", seed,
                              "--cacert", ca, "--token", r->client_token,
                              "--expect-clock-ppm", ce.expect_ppm,
                              "--expect-proxy-ports", ce.expect_ports, NULL, NULL, NULL, NULL};
        int extra = (int)(sizeof argv / sizeof *argv) - 4; /* the optional flags: last */

        if (r->client_group[k] >= 0) argv[extra++] = "--long-holds";
        if (r->client_modes[k]) argv[extra++] = "--modes";
        if (r->client_multi[k]) argv[extra++] = "--multi";
        client_env(r, r->client_group[k], r->client_ppm[k], &ce);
        tool(r, "faultclient", path, sizeof path);
        snprintf(logp, sizeof logp, "%s/client-%02d.log", r->dir, k);
        snprintf(errp, sizeof errp, "%s/client-%02d.err", r->dir, k);
        snprintf(port, sizeof port, "%d", r->store_port);
        snprintf(name, sizeof name, "c%d", k);
        snprintf(locks, sizeof locks, "%d", r->n_locks);
        snprintf(ttl, sizeof ttl, "%u", r->ttl_ms);
        snprintf(seed, sizeof seed, "%" PRIu64, r->seed + (uint64_t)k * 7919u);
        snprintf(ca, sizeof ca, "%s", cluster_cert(&r->c, "ca", 0));
        printf("# client c%d: %s%s%s%s\n", k,
               r->client_modes[k] ? "hot locks, rw0 shared/exclusive, sem0 permits"
                                  : "exclusive hot locks only",
               r->client_multi[k] ? ", multi-locks of 2-3 of the hot locks and rw0" : "",
               r->client_group[k] >= 0 ? ", through the client proxy" : "",
               r->client_ppm[k] > 0   ? ", clock 0.1% fast"
               : r->client_ppm[k] < 0 ? ", clock 0.1% slow"
                                      : "");
        r->clients[k] = proc_spawn_files_env(argv, ce.env, NULL, errp);
        if (r->clients[k] < 0) return -1;
    }
    return 0;
}

/* The hostile client (hostile.c): its own principal, replaying the
 * sessions the real clients log. */
static int start_hostile(struct run *r)
{
    char path[PATH_MAX + 32], logp[PATH_MAX + 32], errp[PATH_MAX + 32], seed[32],
        ca[PATH_MAX + 64];
    const char *argv[] = {path,    "--endpoints", cluster_endpoints(&r->c), "--cacert", ca,
                          "--token", r->hostile_token, "--log", logp, "--logs", r->dir,
                          "--seed", seed, NULL};

    if (r->plain) return 0;
    tool(r, "faulthostile", path, sizeof path);
    snprintf(logp, sizeof logp, "%s/hostile.log", r->dir);
    snprintf(errp, sizeof errp, "%s/hostile.err", r->dir);
    snprintf(seed, sizeof seed, "%" PRIu64, r->seed ^ 0x5bd1e995u);
    snprintf(ca, sizeof ca, "%s", cluster_cert(&r->c, "ca", 0));
    r->hostile_pid = proc_spawn_files(argv, NULL, errp);
    return r->hostile_pid < 0 ? -1 : 0;
}

/* SIGTERM the hostile client: it exits 0 at once. */
static void stop_hostile(struct run *r)
{
    if (r->hostile_pid <= 0) return;
    if (proc_stop(r->hostile_pid, SIGTERM, 10000) != 0) {
        printf("# the hostile client did not stop cleanly (see hostile.err)\n");
        r->harness_errors++;
    }
    r->hostile_pid = 0;
}

/* ---- the end of the run ---------------------------------------------------------------- */

/* SIGTERM every client; each finishes its hold, closes its session and
 * exits 0. One that does not within 60 s is a harness error. */
static void stop_clients(struct run *r)
{
    for (int k = 0; k < r->n_clients; k++)
        if (r->clients[k] > 0) kill(r->clients[k], SIGTERM);
    for (int k = 0; k < r->n_clients; k++) {
        int code;
        if (r->clients[k] <= 0) continue;
        code = proc_wait(r->clients[k], 60000);
        if (code != 0) {
            printf("# client c%d %s (see client-%02d.err)\n", k,
                   code < 0 ? "did not stop within 60 s" : "exited with an error", k);
            r->harness_errors++;
            if (code < 0) proc_stop(r->clients[k], SIGKILL, 5000);
        }
        r->clients[k] = 0;
    }
}

/* Wait until every node has applied the same index, then compare their
 * state digests: a difference would mean a node's state diverged. */
static void compare_digests(struct run *r)
{
    int64_t deadline = now_ms() + 30000;

    for (;;) {
        struct cluster_status st[CLUSTER_MAX_NODES];
        int ok = 1;

        for (int i = 0; i < r->c.n && ok; i++)
            ok = cluster_node_status(&r->c, i, &st[i], 2000) == 0 &&
                 st[i].applied_index == st[0].applied_index;
        if (ok) {
            for (int i = 1; i < r->c.n; i++)
                if (st[i].state_digest != st[0].state_digest) {
                    printf("# state digests differ at applied index %" PRIu64 ": node 1 %016" PRIx64
                           ", node %d %016" PRIx64 "\n",
                           st[0].applied_index, st[0].state_digest, i + 1, st[i].state_digest);
                    r->harness_errors++;
                    return;
                }
            printf("# state digests: all %d nodes agree at applied index %" PRIu64 "\n", r->c.n,
                   st[0].applied_index);
            return;
        }
        if (now_ms() > deadline) {
            printf("# the nodes did not reach the same applied index within 30 s\n");
            r->harness_errors++;
            return;
        }
        sleep_ms(200);
    }
}

/* End of file on their stdin stops the proxy and the store. */
static void stop_helpers(struct run *r)
{
    pid_t *pids[2] = {&r->proxy_pid, &r->store_pid};
    int *fds[3] = {&r->proxy_in, &r->store_in, &r->proxy_out};

    for (int k = 0; k < 3; k++)
        if (*fds[k] >= 0) {
            close(*fds[k]);
            *fds[k] = -1;
        }
    for (int k = 0; k < 2; k++) {
        if (*pids[k] <= 0) continue;
        if (proc_wait(*pids[k], 10000) != 0) {
            proc_stop(*pids[k], SIGKILL, 5000);
            r->harness_errors++;
        }
        *pids[k] = 0;
    }
}

/* Run faultcheck on the logs; its output goes to ours. Its exit code. */
static int run_checker(struct run *r)
{
    char path[PATH_MAX + 32];
    const char *argv[] = {path, r->dir, NULL};
    pid_t pid;

    tool(r, "faultcheck", path, sizeof path);
    pid = proc_spawn(argv, PROC_NULL, PROC_INHERIT, PROC_INHERIT);
    return pid < 0 ? 2 : proc_wait(pid, 600000);
}

/* Kill whatever is still running (a failed set-up, SIGINT). */
static void emergency_stop(void)
{
    for (int k = 0; k < RUN_MAX_CLIENTS; k++)
        if (R.clients[k] > 0) {
            proc_stop(R.clients[k], SIGKILL, 2000);
            R.clients[k] = 0;
        }
    elect_kill_all(&R);
    if (R.hostile_pid > 0) proc_stop(R.hostile_pid, SIGKILL, 2000);
    if (R.proxy_pid > 0) proc_stop(R.proxy_pid, SIGKILL, 2000);
    if (R.store_pid > 0) proc_stop(R.store_pid, SIGKILL, 2000);
    R.proxy_pid = R.store_pid = R.hostile_pid = 0;
    cluster_stop(&R.c);
}

static void on_signal(int sig)
{
    (void)sig;
    /* Children die with us (PR_SET_PDEATHSIG); cluster.c's guardian stops
     * the nodes and removes their data. */
    _exit(130);
}

static void rm_dir(const char *dir)
{
    char cmd[PATH_MAX + 32];
    /* Only files this run wrote, in a directory it created. */
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "faultrun: could not remove %s\n", dir);
}

int main(int argc, char **argv)
{
    static const char *const node_args[] = {"--snapshot-threshold", "1024",
                                            "--snapshot-trailing", "256", NULL};
    /* Secured as a production cluster would be: mutual TLS between the
     * nodes, TLS and tokens for the clients (the clients' principal may
     * open sessions and lock; the harness's own is an admin). */
    struct cluster_opts co = {.extra_args = node_args, .raft_proxy = 1,
                              .secure = CLUSTER_PEER_TLS | CLUSTER_CLIENT_TLS | CLUSTER_AUTH};
    char self[PATH_MAX], nem[PATH_MAX + 32], hostile_line[256], flood_line[256], lines[768],
        flood_opts[32];
    ssize_t n;
    int check, rv;

    setvbuf(stdout, NULL, _IOLBF, 0);
    R.store_in = R.proxy_in = R.proxy_out = -1;
    if (parse_args(&R, argc, argv) != 0) {
        fprintf(stderr, "usage: faultrun [--seconds N] [--clients N] [--locks N] [--ttl MS] "
                        "[--seed S] [--faults LIST] [--expect-violations] [--keep] [--plain] "
                        "[--exclusive] [--no-multi] [--no-elect]\n");
        return 2;
    }
    n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 2;
    self[n] = '\0';
    *strrchr(self, '/') = '\0';
    snprintf(R.tools, sizeof R.tools, "%s", self);
    if (tmpdir_make(R.dir, sizeof R.dir, "baton-fault") != 0) {
        fprintf(stderr, "faultrun: cannot make a log directory: %s\n", strerror(errno));
        return 2;
    }
    snprintf(nem, sizeof nem, "%s/nemesis.log", R.dir);
    R.nemesis = fopen(nem, "w");
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);
    printf("# fault run: %u s, %d clients, %d locks, ttl %u ms, seed %" PRIu64 ", logs in %s\n",
           R.seconds, R.n_clients, R.n_locks, R.ttl_ms, R.seed, R.dir);

    /* Three principals of role client: the clients', the hostile
     * client's, which must never act on the clients' sessions, and the
     * floods' (the hostile-* faults), which may have FLOOD_SESSION_CAP
     * sessions open at once. The floods' sessions are not the hostile
     * client's: when it guesses one of their ids, it must be refused. */
    snprintf(flood_opts, sizeof flood_opts, "max-sessions=%d", FLOOD_SESSION_CAP);
    if (cluster_token("faultclient", "client", "", R.client_token, R.auth_line,
                      sizeof R.auth_line) != 0 ||
        cluster_token("faulthostile", "client", "", R.hostile_token, hostile_line,
                      sizeof hostile_line) != 0 ||
        cluster_token("faultflood", "client", flood_opts, R.flood_token, flood_line,
                      sizeof flood_line) != 0)
        return 2;
    snprintf(lines, sizeof lines, "%s%s%s", R.auth_line, hostile_line, flood_line);
    co.auth_lines = lines;
    if (disk_setup(&R) != 0) {
        fprintf(stderr, "faultrun: cannot write the disk shim's control files in %s\n", R.dir);
        return 2;
    }
    for (int i = 0; i < CLUSTER_MAX_NODES; i++) co.node_env[i] = R.node_env[i];
    if (upgrade_setup(&R, &co) != 0) return 2;
    client_profiles(&R);
    if (R.nemesis == NULL || start_store(&R) != 0 || cluster_start_opts(&R.c, 3, &co) != 0 ||
        start_proxy(&R) != 0 || cluster_wait_leader(&R.c, 30000) < 0 || start_clients(&R) != 0 ||
        elect_start(&R) != 0 || start_hostile(&R) != 0) {
        fprintf(stderr, "faultrun: set-up failed; logs kept in %s\n", R.dir);
        emergency_stop();
        return 2;
    }
    R.t_start_us = now_us();
    flog(R.nemesis, "NOTE start");
    nemesis_run(&R, R.t_start_us + (int64_t)R.seconds * 1000000);
    flog(R.nemesis, "NOTE faults over; healing");
    nemesis_heal_all(&R);
    if (cluster_wait_leader(&R.c, 30000) < 0) R.harness_errors++;
    sleep_ms(2000); /* the clients get going again */
    flog(R.nemesis, "NOTE stopping the clients");
    stop_hostile(&R);
    stop_clients(&R);
    elect_stop(&R);
    compare_digests(&R);
    if (cluster_stop(&R.c) != 0) {
        printf("# a node did not stop cleanly on SIGTERM\n");
        R.harness_errors++;
    }
    stop_helpers(&R);
    flog(R.nemesis, "NOTE stopped");
    fclose(R.nemesis);

    printf("# harness: %d node crashes, %d nodes exited on an I/O error of a failing disk "
           "(expected), %d other problems\n",
           R.node_crashes, R.io_exits, R.harness_errors);
    if (R.floods_kept + R.floods_lost)
        printf("# hostile floods: the leader kept its leadership through %u of %u floods\n",
               R.floods_kept, R.floods_kept + R.floods_lost);
    if (R.n_faults[F_KILL_ELECT])
        printf("# kill-elect: %u of %u killed a leading campaigner\n", R.elect_kills,
               R.n_faults[F_KILL_ELECT]);
    if (R.stalls_kept + R.stalls_lost)
        printf("# stall-leader: the leader kept its leadership through %u of %u stall faults\n",
               R.stalls_kept, R.stalls_kept + R.stalls_lost);
    check = run_checker(&R);
    if (check != 0 && check != 1) {
        printf("# the checker could not read the logs (exit %d)\n", check);
        rv = 2;
    } else if (R.expect_violations) {
        rv = check == 1 ? 0 : 1;
        printf("# selftest: the checker %s violations in a run against the broken build: %s\n",
               check == 1 ? "found" : "did NOT find", rv == 0 ? "as expected" : "FAILED");
    } else {
        rv = check == 1 ? 1 : (R.node_crashes || R.harness_errors) ? 3 : 0;
    }
    if (rv == 0 && !R.keep)
        rm_dir(R.dir);
    else
        printf("# logs kept in %s\n", R.dir);
    return rv;
}
