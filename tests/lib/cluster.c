/*
 * cluster.c -- the real-process cluster harness. See cluster.h.
 *
 * Process state (pids, the data directory, the guardian) is mirrored in a
 * static table of slots, not only in the caller's struct cluster: the
 * atexit() handler runs after the test function has returned, when a
 * struct cluster on its stack is gone.
 */
#include "tests/lib/cluster.h"
#include "tests/lib/cluster_int.h"
#include "tests/lib/tls_sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "proto/msg.h"
#include "tests/lib/clock.h"
#include "tests/lib/files.h"
#include "tests/lib/jsonget.h"
#include "tests/lib/proc.h"
#include "tests/lib/scrape.h"

#define MAX_SLOTS 8
#define STOP_TIMEOUT_MS 10000
#define CTL_TIMEOUT_MS 30000
#define MAX_EXTRA_ARGS 32

/* What the atexit handler and the guardian need to know of one cluster. */
struct slot {
    int used;
    pid_t owner;
    int n;
    char root[PATH_MAX - 64];
    pid_t pids[CLUSTER_MAX_NODES];
    int stopped[CLUSTER_MAX_NODES];
    pid_t guardian;
    int guardian_fd;
};

static struct slot slots[MAX_SLOTS];
static int atexit_registered;

/* ---- small helpers ----------------------------------------------------- */

static void write_pid_file(const char *root, int i, pid_t pid)
{
    char path[PATH_MAX + 32];
    FILE *f;

    snprintf(path, sizeof path, "%s/node%d.pid", root, i + 1);
    f = fopen(path, "w");
    if (f == NULL) return;
    fprintf(f, "%d\n", (int)pid);
    fclose(f);
}

/* Write the last `lines` lines of a file to f, each prefixed "# ". */
static void tail_file(FILE *f, const char *path, int lines)
{
    enum { WINDOW = 16384 };
    char *buf = malloc(WINDOW + 1), *p;
    long n = buf ? read_tail(path, buf, WINDOW + 1) : -1;
    int seen = 0;

    if (n < 0) {
        fprintf(f, "# (cannot read %s)\n", path);
        free(buf);
        return;
    }
    if (n > 0 && buf[n - 1] == '\n') buf[--n] = '\0';
    /* Walk back over `lines` newlines. */
    for (p = buf + n; p > buf; p--) {
        if (p[-1] == '\n' && ++seen == lines) break;
    }
    while (*p) {
        char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        fprintf(f, "#   %.*s\n", (int)len, p);
        p += len + (nl ? 1 : 0);
    }
    free(buf);
}

/* Print the tail of node i's log to stderr in one write, so that it is
 * not interleaved with other output. */
static void report_tail(const char *root, int i, int lines, const char *headline)
{
    char path[PATH_MAX + 32], *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    if (f == NULL) return;
    snprintf(path, sizeof path, "%s/node%d.log", root, i + 1);
    fprintf(f, "# %s; last lines of %s:\n", headline, path);
    tail_file(f, path, lines);
    if (fclose(f) == 0 && write(2, text, len) < 0) {
    }
    free(text);
}

/* ---- stopping: shared by cluster_stop, atexit and the guardian --------- */

/*
 * Stop a slot's nodes with SIGTERM (SIGKILL after STOP_TIMEOUT_MS), stop
 * the guardian, remove the data unless BATON_KEEP_DATA. Returns 0 if every
 * running node exited 0.
 */
static int slot_stop(struct slot *s)
{
    int64_t deadline;
    int rv = 0, left;

    if (!s->used) return 0;
    for (int i = 0; i < s->n; i++) {
        if (s->pids[i] <= 0) continue;
        kill(s->pids[i], SIGTERM);
        if (s->stopped[i]) kill(s->pids[i], SIGCONT);
    }
    deadline = now_ms() + STOP_TIMEOUT_MS;
    do {
        left = 0;
        for (int i = 0; i < s->n; i++) {
            int st;
            if (s->pids[i] <= 0) continue;
            pid_t r = waitpid(s->pids[i], &st, WNOHANG);
            if (r == s->pids[i] || (r < 0 && errno == ECHILD)) {
                int code = r == s->pids[i] ? proc_status(st) : -1;
                if (code != 0) {
                    fprintf(stderr, "# cluster: node %d (pid %d) exited with status %d on SIGTERM\n",
                            i + 1, (int)s->pids[i], code);
                    rv = -1;
                }
                s->pids[i] = 0;
                write_pid_file(s->root, i, 0);
            } else {
                left++;
            }
        }
        if (left > 0) sleep_ms(10);
    } while (left > 0 && now_ms() < deadline);
    for (int i = 0; i < s->n; i++) {
        if (s->pids[i] <= 0) continue;
        fprintf(stderr, "# cluster: node %d (pid %d) did not stop within %d ms; SIGKILL\n", i + 1,
                (int)s->pids[i], STOP_TIMEOUT_MS);
        proc_stop(s->pids[i], SIGKILL, 5000);
        s->pids[i] = 0;
        rv = -1;
    }

    /* Tell the guardian all is well, and reap it. */
    if (s->guardian_fd >= 0) {
        if (write(s->guardian_fd, "q", 1) < 0) {
        }
        close(s->guardian_fd);
        s->guardian_fd = -1;
    }
    if (s->guardian > 0) proc_wait(s->guardian, 5000);
    s->guardian = 0;

    if (getenv("BATON_KEEP_DATA") != NULL)
        fprintf(stderr, "# cluster: data kept in %s\n", s->root);
    else
        rm_rf(s->root);
    s->used = 0;
    return rv;
}

static void stop_all_at_exit(void)
{
    for (int k = 0; k < MAX_SLOTS; k++)
        if (slots[k].used && slots[k].owner == getpid()) slot_stop(&slots[k]);
}

/* ---- the guardian --------------------------------------------------------- */

/* Does /proc/pid/cmdline mention root (i.e. is it still our batond)? */
static int proc_is_ours(pid_t pid, const char *root)
{
    char path[64], buf[8192];
    ssize_t n;
    int fd;

    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    for (ssize_t k = 0; k < n; k++)
        if (buf[k] == '\0') buf[k] = ' ';
    buf[n] = '\0';
    return strstr(buf, root) != NULL;
}

/*
 * The guardian: a child of the test process that blocks reading a pipe.
 * A byte means cluster_stop ran: exit. End of file means the test process
 * died without stopping the cluster (failed assertion, timeout, crash):
 * make sure the nodes are dead, show their logs, remove the data.
 */
static void guardian_main(struct slot *s, int rfd)
{
    char b;
    ssize_t r;
    int64_t deadline;

    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGALRM, SIG_IGN);
    alarm(0);
    for (int fd = 3; fd < 1024; fd++)
        if (fd != rfd) close(fd);
    do {
        r = read(rfd, &b, 1);
    } while (r < 0 && errno == EINTR);
    if (r == 1) _exit(0);

    /* Every possible node: cluster_add_node may have started some after
     * this process was forked (their pid files say so). */
    for (int i = 0; i < CLUSTER_MAX_NODES; i++) {
        char path[PATH_MAX + 32];
        FILE *f;
        int pid = 0;

        snprintf(path, sizeof path, "%s/node%d.pid", s->root, i + 1);
        f = fopen(path, "r");
        if (f == NULL) continue;
        if (fscanf(f, "%d", &pid) != 1) pid = 0;
        fclose(f);
        if (pid > 0 && proc_is_ours(pid, s->root)) kill(pid, SIGKILL);
        /* Nodes die with the test (PR_SET_PDEATHSIG); wait until init has
         * reaped them before removing their files. */
        deadline = now_ms() + 5000;
        while (pid > 0 && proc_is_ours(pid, s->root) && now_ms() < deadline) sleep_ms(10);
    }
    for (int i = 0; i < CLUSTER_MAX_NODES; i++) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/node%d.log", s->root, i + 1);
        if (access(path, F_OK) == 0)
            report_tail(s->root, i, 15, "cluster: the test process died without cluster_stop");
    }
    if (getenv("BATON_KEEP_DATA") != NULL) {
        char msg[PATH_MAX + 64];
        int len = snprintf(msg, sizeof msg, "# cluster: data kept in %s\n", s->root);
        if (write(2, msg, (size_t)len) < 0) {
        }
    } else {
        rm_rf(s->root);
    }
    _exit(0);
}

static int start_guardian(struct slot *s)
{
    int p[2];
    pid_t pid;

    if (pipe2(p, O_CLOEXEC) != 0) return -1;
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        close(p[1]);
        guardian_main(s, p[0]);
    }
    close(p[0]);
    s->guardian = pid;
    s->guardian_fd = p[1];
    return 0;
}

/* ---- starting nodes ------------------------------------------------------- */

/* Where the harness reaches node nd for STATUS: ::1 for the host [::1],
 * else 127.0.0.1 (what localhost and the tests' names stand for). */
static void node_ip(struct cluster_node *nd)
{
    snprintf(nd->ip, sizeof nd->ip, "%s", strcmp(nd->host, "[::1]") == 0 ? "::1" : "127.0.0.1");
}

/* Pick `n` distinct free TCP ports on 127.0.0.1: bind them all to port 0
 * at once (so none repeats), read the ports, close. */
static int pick_ports(int *ports, int n)
{
    int fds[4 * CLUSTER_MAX_NODES], rv = 0, k;

    for (k = 0; k < n; k++) {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof a;

        fds[k] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fds[k] < 0 || bind(fds[k], (struct sockaddr *)&a, sizeof a) != 0 ||
            getsockname(fds[k], (struct sockaddr *)&a, &len) != 0) {
            rv = -1;
            k++;
            break;
        }
        ports[k] = ntohs(a.sin_port);
    }
    while (k-- > 0)
        if (fds[k] >= 0) close(fds[k]);
    return rv;
}

int cluster_free_ports(int *ports, int n)
{
    if (n < 1 || n > 4 * CLUSTER_MAX_NODES) return -1;
    return pick_ports(ports, n);
}

/*
 * The --cluster list of node i started with --join (cluster_add_node): it
 * names only itself -- the other members' client addresses reach it
 * through the replicated state once it is added -- except under peer TLS,
 * where a node without a configuration admits raft connections only from
 * the nodes its --cluster list names (raft/peer_admit.h), so it lists every
 * node the harness started, itself included.
 */
static void join_list(const struct cluster *c, int i, char *buf, size_t cap)
{
    size_t off = 0;

    buf[0] = '\0';
    for (int k = 0; k < c->n; k++) {
        const struct cluster_node *nd = &c->nodes[k];

        if (k != i && !(c->secure & CLUSTER_PEER_TLS)) continue;
        off += (size_t)snprintf(buf + off, cap - off, "%s%u=%s:%d/%s:%d", off ? "," : "", nd->id,
                                nd->host, nd->raft_port, nd->host, nd->client_port);
        if (off >= cap) break;
    }
}

/*
 * cluster_opts.config_file: write argv[1..*argc) of node i as the [batond]
 * section of ROOT/nodeN.conf and leave argv as `batond --config FILE`.
 * A value never starts with "--", so a flag followed by another flag (or
 * by nothing) takes none: it becomes `key = true`.
 */
static int config_argv(struct cluster *c, int i, const char **argv, int *argc)
{
    static char conf[CLUSTER_MAX_NODES][PATH_MAX];
    FILE *f;

    snprintf(conf[i], sizeof conf[i], "%s/node%d.conf", c->root, i + 1);
    f = fopen(conf[i], "w");
    if (f == NULL) {
        fprintf(stderr, "# cluster: cannot write %s: %s\n", conf[i], strerror(errno));
        return -1;
    }
    fprintf(f, "# node %u, written by the cluster harness\n[batond]\n", c->nodes[i].id);
    for (int k = 1; k < *argc; k++) {
        const char *key = argv[k] + 2;
        if (k + 1 < *argc && strncmp(argv[k + 1], "--", 2) != 0)
            fprintf(f, "%s = %s\n", key, argv[++k]);
        else
            fprintf(f, "%s = true\n", key);
    }
    if (fclose(f) != 0) return -1;
    argv[1] = "--config";
    argv[2] = conf[i];
    argv[3] = NULL;
    *argc = 3;
    return 0;
}

/* Start node i (its pid is recorded in c, its slot and its pid file). */
static int spawn_node(struct cluster *c, int i)
{
    struct cluster_node *nd = &c->nodes[i];
    struct slot *s = &slots[c->slot];
    char path[PATH_MAX + 16], idbuf[16], bindbuf[48], metricsbuf[64];
    const char *argv[18 + CLUSTER__SECURE_ARGS + MAX_EXTRA_ARGS];
    char join_members[sizeof c->members + 64 * CLUSTER_MAX_NODES];
    int argc = 0;
    pid_t pid;
    FILE *f;

    if (i < CLUSTER_MAX_NODES && c->node_batond[i] != NULL)
        snprintf(path, sizeof path, "%s", c->node_batond[i]);
    else
        snprintf(path, sizeof path, "%s/batond", c->build);
    snprintf(idbuf, sizeof idbuf, "%u", nd->id);
    argv[argc++] = path;
    argv[argc++] = "--id";
    argv[argc++] = idbuf;
    argv[argc++] = "--data";
    argv[argc++] = nd->dir;
    argv[argc++] = "--cluster";
    if (nd->joined) {
        join_list(c, i, join_members, sizeof join_members);
        argv[argc++] = join_members;
        argv[argc++] = "--join";
    } else {
        argv[argc++] = c->members;
    }
    argv[argc++] = "--log-level";
    argv[argc++] = c->log_level;
    if (nd->raft_bind_port > 0) {
        snprintf(bindbuf, sizeof bindbuf, "%s:%d", nd->host, nd->raft_bind_port);
        argv[argc++] = "--raft-bind";
        argv[argc++] = bindbuf;
    }
    if (nd->metrics_port > 0) {
        snprintf(metricsbuf, sizeof metricsbuf, "127.0.0.1:%d", nd->metrics_port);
        argv[argc++] = "--metrics-addr";
        argv[argc++] = metricsbuf;
    }
    argc = cluster__secure_args(c, i, argv, argc);
    for (int k = 0; c->extra_args && c->extra_args[k] && k < MAX_EXTRA_ARGS; k++)
        argv[argc++] = c->extra_args[k];
    argv[argc] = NULL;

    if (c->config_file && config_argv(c, i, argv, &argc) != 0) return -1;

    f = fopen(nd->log, "a");
    if (f != NULL) {
        fprintf(f, "=== cluster harness: starting node %u ===\n", nd->id);
        fclose(f);
    }
    pid = proc_spawn_files_env(argv, c->node_env[i], NULL, nd->log);
    if (pid < 0) {
        fprintf(stderr, "# cluster: cannot start %s (log %s): %s\n", path, nd->log,
                strerror(errno));
        return -1;
    }
    nd->pid = pid;
    nd->stopped = 0;
    s->pids[i] = pid;
    s->stopped[i] = 0;
    write_pid_file(c->root, i, pid);
    return 0;
}

int cluster_start_opts(struct cluster *c, int n, const struct cluster_opts *o)
{
    const char *build = getenv("BATON_BUILD");
    const char *level = o && o->log_level ? o->log_level : getenv("BATON_TEST_LOG_LEVEL");
    char path[PATH_MAX + 16], host[32];
    int ports[4 * CLUSTER_MAX_NODES], per_node = o && o->raft_proxy ? 3 : 2, k;
    struct slot *s = NULL;
    size_t off;

    memset(c, 0, sizeof *c);
    c->guardian_fd = -1;
    if (n < 1 || n > CLUSTER_MAX_NODES) {
        fprintf(stderr, "# cluster: %d nodes is out of range 1..%d\n", n, CLUSTER_MAX_NODES);
        return -1;
    }
    for (k = 0; k < MAX_SLOTS; k++) {
        if (!slots[k].used) {
            s = &slots[k];
            break;
        }
    }
    if (s == NULL) {
        fprintf(stderr, "# cluster: more than %d clusters at once\n", MAX_SLOTS);
        return -1;
    }
    c->slot = k;
    snprintf(c->build, sizeof c->build, "%s", build && *build ? build : "build/default");
    snprintf(c->log_level, sizeof c->log_level, "%s", level && *level ? level : "info");
    snprintf(c->host, sizeof c->host, "%s", o && o->host ? o->host : "127.0.0.1");
    c->extra_args = o ? o->extra_args : NULL;
    for (int i = 0; o && i < CLUSTER_MAX_NODES; i++) c->node_env[i] = o->node_env[i];
    for (int i = 0; o && i < CLUSTER_MAX_NODES; i++) c->node_batond[i] = o->node_batond[i];
    c->secure = o ? o->secure : 0;
    c->metrics = o ? o->metrics : 0;
    c->config_file = o ? o->config_file : 0;
    snprintf(path, sizeof path, "%s/batond", c->build);
    if (access(path, X_OK) != 0) {
        fprintf(stderr, "# cluster: %s: %s (build it first, or set BATON_BUILD)\n", path,
                strerror(errno));
        return -1;
    }
    if (pick_ports(ports, (per_node + (c->metrics ? 1 : 0)) * n) != 0) {
        fprintf(stderr, "# cluster: cannot find free ports: %s\n", strerror(errno));
        return -1;
    }
    if (tmpdir_make(c->root, sizeof c->root, "baton-test") != 0) {
        fprintf(stderr, "# cluster: cannot make a data directory %s: %s\n", c->root,
                strerror(errno));
        return -1;
    }

    if (cluster__secure_setup(c, o ? o->auth_lines : NULL) != 0) {
        rm_rf(c->root);
        return -1;
    }
    c->n = n;
    c->owner = getpid();
    off = 0;
    for (int i = 0; i < n; i++) {
        struct cluster_node *nd = &c->nodes[i];
        nd->id = (uint32_t)(i + 1);
        nd->raft_port = ports[per_node * i];
        nd->client_port = ports[per_node * i + 1];
        nd->raft_bind_port = per_node == 3 ? ports[per_node * i + 2] : 0;
        nd->metrics_port = c->metrics ? ports[per_node * n + i] : 0;
        /* From a copy: GCC sees c's own strings as overlapping c. */
        snprintf(host, sizeof host, "%s", o && o->node_host[i] ? o->node_host[i] : c->host);
        snprintf(nd->host, sizeof nd->host, "%s", host);
        node_ip(nd);
        snprintf(nd->endpoint, sizeof nd->endpoint, "%s:%d", host, nd->client_port);
        snprintf(nd->dir, sizeof nd->dir, "%s/node%d", c->root, i + 1);
        snprintf(nd->log, sizeof nd->log, "%s/node%d.log", c->root, i + 1);
        mkdir(nd->dir, 0755);
        off += (size_t)snprintf(c->members + off, sizeof c->members - off, "%s%u=%s:%d/%s:%d",
                                i ? "," : "", nd->id, nd->host, nd->raft_port, nd->host,
                                nd->client_port);
        snprintf(c->endpoints + strlen(c->endpoints), sizeof c->endpoints - strlen(c->endpoints),
                 "%s%s", i ? "," : "", nd->endpoint);
    }

    memset(s, 0, sizeof *s);
    s->used = 1;
    s->owner = c->owner;
    s->n = n;
    s->guardian_fd = -1;
    snprintf(s->root, sizeof s->root, "%s", c->root);
    if (!atexit_registered) {
        atexit(stop_all_at_exit);
        atexit_registered = 1;
    }
    if (start_guardian(s) != 0) {
        fprintf(stderr, "# cluster: cannot start the guardian: %s\n", strerror(errno));
        slot_stop(s);
        c->n = 0;
        return -1;
    }
    c->guardian = s->guardian;
    c->guardian_fd = s->guardian_fd;
    for (int i = 0; i < n; i++) {
        if (o != NULL && o->restore != NULL && !(o->restore_skip & (1u << i)) &&
            cluster_restore(c, i, o->restore, c->nodes[i].dir) != 0) {
            fprintf(stderr, "# cluster: batond --restore %s failed for node %d\n", o->restore,
                    i + 1);
            cluster_dump_logs(c, 10);
            slot_stop(s);
            c->n = 0;
            return -1;
        }
        if (spawn_node(c, i) != 0) {
            slot_stop(s);
            c->n = 0;
            return -1;
        }
    }
    return 0;
}

int cluster_restore(struct cluster *c, int i, const char *file, const char *dir)
{
    char batond[PATH_MAX + 16], id[16];
    const char *argv[] = {batond, "--restore", file, "--id", id, "--data", dir,
                          "--cluster", c->members, NULL};
    pid_t pid;
    int rv;

    snprintf(batond, sizeof batond, "%s/batond", c->build);
    snprintf(id, sizeof id, "%u", c->nodes[i].id);
    pid = proc_spawn_files(argv, NULL, c->nodes[i].log);
    if (pid < 0) return -1;
    rv = proc_wait(pid, 30000);
    if (rv < 0) proc_stop(pid, SIGKILL, 5000);
    return rv;
}

int cluster_start(struct cluster *c, int n)
{
    return cluster_start_opts(c, n, NULL);
}

int cluster_add_node(struct cluster *c)
{
    struct slot *s;
    struct cluster_node *nd;
    char host[32];
    int ports[3], i = c->n;

    if (c->n == 0 || c->owner != getpid()) return -1;
    if (i >= CLUSTER_MAX_NODES) {
        fprintf(stderr, "# cluster: already %d nodes\n", CLUSTER_MAX_NODES);
        return -1;
    }
    if (pick_ports(ports, 3) != 0) {
        fprintf(stderr, "# cluster: cannot find free ports: %s\n", strerror(errno));
        return -1;
    }
    s = &slots[c->slot];
    nd = &c->nodes[i];
    memset(nd, 0, sizeof *nd);
    nd->id = (uint32_t)(i + 1);
    nd->raft_port = ports[0];
    nd->client_port = ports[1];
    nd->joined = 1;
    nd->metrics_port = c->metrics ? ports[2] : 0;
    snprintf(host, sizeof host, "%s", c->host); /* a copy: see cluster_start_opts */
    snprintf(nd->host, sizeof nd->host, "%s", host);
    node_ip(nd);
    snprintf(nd->endpoint, sizeof nd->endpoint, "%s:%d", host, nd->client_port);
    snprintf(nd->dir, sizeof nd->dir, "%s/node%d", c->root, i + 1);
    snprintf(nd->log, sizeof nd->log, "%s/node%d.log", c->root, i + 1);
    if (mkdir(nd->dir, 0755) != 0) {
        fprintf(stderr, "# cluster: mkdir %s: %s\n", nd->dir, strerror(errno));
        return -1;
    }
    /* Count the node in before it starts, so that cluster_stop and the
     * atexit handler stop it whatever happens next. */
    c->n = i + 1;
    s->n = c->n;
    s->pids[i] = 0;
    s->stopped[i] = 0;
    if (spawn_node(c, i) != 0) return -1;
    if (cluster_wait_node(c, i, 10000) != 0) {
        cluster_kill(c, i, SIGKILL);
        return -1;
    }
    return i;
}

const char *cluster_member_addrs(const struct cluster *c, int i, char *buf, size_t cap)
{
    if (i < 0 || i >= c->n) {
        snprintf(buf, cap, "%s", "");
        return buf;
    }
    snprintf(buf, cap, "%s:%d/%s:%d", c->nodes[i].host, c->nodes[i].raft_port,
             c->nodes[i].host, c->nodes[i].client_port);
    return buf;
}

/* ---- STATUS --------------------------------------------------------------- */

/* A minimal blocking admin client of node i: HELLO (with the harness's
 * token) and a request of `type` (no body) sent together, then read until
 * its reply of `reply_type`, which take(reply, arg) reads (its strings
 * point into the connection's buffer: they last only as long as the
 * call): 0, or -1 (no connection, another reply, timeout_ms passed); over
 * TLS when the nodes serve it. Used for STATUS and METRICS. */
static int admin_request(const struct cluster *c, int i, int type, int reply_type,
                         int timeout_ms, void (*take)(const struct msg *reply, void *arg),
                         void *arg)
{
    struct msg hello = {.type = MSG_HELLO, .req_id = 1}, req = {.type = (uint16_t)type, .req_id = 2};
    int64_t deadline = now_ms() + timeout_ms;
    struct tls_sock_cfg cfg;
    struct tls_sock s;
    int rv = -1;

    hello.u.hello.version = BATON_PROTO_VERSION;
    hello.u.hello.client_name.p = "cluster-harness";
    hello.u.hello.client_name.n = (uint16_t)strlen("cluster-harness");
    hello.u.hello.token.p = c->admin_token;
    hello.u.hello.token.n = (uint16_t)strlen(c->admin_token);
    cluster_sock_cfg(c, &cfg);
    cfg.ip = c->nodes[i].ip;
    if (tls_sock_connect(&s, c->nodes[i].client_port, &cfg, timeout_ms) != 0) return -1;
    if (tls_sock_send_msg(&s, &hello) != 0 || tls_sock_send_msg(&s, &req) != 0) goto out;
    while (now_ms() < deadline) {
        struct msg m;
        int hello_ok;

        if (tls_sock_recv_msg(&s, &m, (int)(deadline - now_ms())) != 0) break;
        if (m.type == reply_type && m.req_id == 2) {
            take(&m, arg);
            rv = 0;
        }
        hello_ok = m.type == MSG_HELLO_OK;
        msg_free(&m);
        if (!hello_ok) break;
    }
out:
    tls_sock_close(&s);
    return rv;
}

static void take_status(const struct msg *m, void *arg)
{
    struct cluster_status *st = arg;

    st->node_id = m->u.status_r.node_id;
    st->role = m->u.status_r.role;
    st->leader_id = m->u.status_r.leader_id;
    st->term = m->u.status_r.term;
    st->last_index = m->u.status_r.last_index;
    st->commit_index = m->u.status_r.commit_index;
    st->applied_index = m->u.status_r.applied_index;
    st->state_digest = m->u.status_r.state_digest;
    st->fault_kind = m->u.status_r.fault_kind;
    st->fault = m->u.status_r.fault;
    st->fault_index = m->u.status_r.fault_index;
}

static int query_status(const struct cluster *c, int i, int timeout_ms,
                        struct cluster_status *st)
{
    return admin_request(c, i, MSG_STATUS, MSG_STATUS_R, timeout_ms, take_status, st);
}

/* A METRICS reply's sample, looked up by key. */
struct gauge_arg {
    const char *key;
    double v;
};

static void take_gauge(const struct msg *m, void *arg)
{
    struct gauge_arg *g = arg;
    struct buf text = {0};

    for (uint32_t k = 0; k < m->u.metrics_r.n; k++)
        (void)buf_put(&text, m->u.metrics_r.chunks[k].text.p, m->u.metrics_r.chunks[k].text.n);
    if (buf_put(&text, "", 1) == 0) g->v = scrape_value((const char *)text.data, g->key);
    buf_free(&text);
}

double cluster_node_gauge(struct cluster *c, int i, const char *key, int timeout_ms)
{
    struct gauge_arg g = {.key = key, .v = -1};

    if (i < 0 || i >= c->n) return -1;
    if (admin_request(c, i, MSG_METRICS, MSG_METRICS_R, timeout_ms, take_gauge, &g) != 0) return -1;
    return g.v;
}

int cluster_log_says(const struct cluster *c, int i, const char *what, int timeout_ms)
{
    static char tail[1 << 20];
    int64_t deadline = now_ms() + timeout_ms;

    for (;;) {
        if (read_tail(c->nodes[i].log, tail, sizeof tail) >= 0 && strstr(tail, what) != NULL)
            return 1;
        if (now_ms() >= deadline) return 0;
        sleep_ms(50);
    }
}

int cluster_wait_gauge(struct cluster *c, const char *key, double want, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;

    for (;;) {
        int n = 0, running = 0;

        for (int i = 0; i < c->n; i++) {
            if (c->nodes[i].pid <= 0 || c->nodes[i].stopped) continue;
            running++;
            if (cluster_node_gauge(c, i, key, 1000) == want) n++;
        }
        if (running > 0 && n == running) return 0;
        if (now_ms() >= deadline) break;
        sleep_ms(100);
    }
    fprintf(stderr, "# cluster: %s never reached %g on every running node\n", key, want);
    return -1;
}

int cluster_node_status(struct cluster *c, int i, struct cluster_status *st, int timeout_ms)
{
    if (i < 0 || i >= c->n) return -1;
    memset(st, 0, sizeof *st);
    return query_status(c, i, timeout_ms, st);
}

/* Reap node i if it has exited on its own; report it. */
static void check_exited(struct cluster *c, int i)
{
    struct cluster_node *nd = &c->nodes[i];
    char head[128];
    int st;

    if (nd->pid <= 0 || waitpid(nd->pid, &st, WNOHANG) != nd->pid) return;
    snprintf(head, sizeof head, "cluster: node %u (pid %d) exited unexpectedly with status %d",
             nd->id, (int)nd->pid, proc_status(st));
    nd->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    nd->exit_signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    report_tail(c->root, i, 20, head);
    nd->pid = 0;
    slots[c->slot].pids[i] = 0;
    write_pid_file(c->root, i, 0);
}

int cluster_wait_leader(struct cluster *c, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;

    for (;;) {
        int best = -1;
        uint64_t best_term = 0;

        for (int i = 0; i < c->n; i++) {
            struct cluster_status st;
            check_exited(c, i);
            if (c->nodes[i].pid <= 0 || c->nodes[i].stopped) continue;
            if (cluster_node_status(c, i, &st, 500) != 0) continue;
            if (st.role == ROLE_LEADER && (best < 0 || st.term > best_term)) {
                best = i;
                best_term = st.term;
            }
        }
        if (best >= 0) return best;
        if (now_ms() >= deadline) break;
        sleep_ms(50);
    }
    fprintf(stderr, "# cluster: no leader within %d ms:\n", timeout_ms);
    for (int i = 0; i < c->n; i++) {
        struct cluster_status st;
        if (c->nodes[i].pid <= 0)
            fprintf(stderr, "#   node %u: not running\n", c->nodes[i].id);
        else if (c->nodes[i].stopped)
            fprintf(stderr, "#   node %u: stopped (SIGSTOP)\n", c->nodes[i].id);
        else if (cluster_node_status(c, i, &st, 500) != 0)
            fprintf(stderr, "#   node %u: no answer on %s\n", c->nodes[i].id, c->nodes[i].endpoint);
        else
            fprintf(stderr, "#   node %u: role %d, leader %u, term %llu, commit %llu\n",
                    c->nodes[i].id, st.role, st.leader_id, (unsigned long long)st.term,
                    (unsigned long long)st.commit_index);
    }
    return -1;
}

/* ---- killing, restarting, stopping ------------------------------------ */

int cluster_kill(struct cluster *c, int i, int sig)
{
    struct cluster_node *nd;
    struct slot *s;
    int code;

    if (i < 0 || i >= c->n || c->nodes[i].pid <= 0) return -1;
    nd = &c->nodes[i];
    s = &slots[c->slot];
    if (sig == SIGSTOP || sig == SIGCONT || sig == SIGHUP) {
        if (sig == SIGHUP) return kill(nd->pid, sig) == 0 ? 0 : -1;
        if (kill(nd->pid, sig) != 0) return -1;
        nd->stopped = s->stopped[i] = sig == SIGSTOP;
        return 0;
    }
    code = proc_stop(nd->pid, sig, STOP_TIMEOUT_MS);
    nd->pid = 0;
    nd->stopped = 0;
    s->pids[i] = 0;
    s->stopped[i] = 0;
    write_pid_file(c->root, i, 0);
    return code;
}

int cluster_wait_caught_up(struct cluster *c, int i, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    struct cluster_status lst, st = {0};
    int leader;

    if (i < 0 || i >= c->n) return -1;
    leader = cluster_wait_leader(c, timeout_ms);
    if (leader < 0) return -1;
    if (cluster_node_status(c, leader, &lst, 2000) != 0) {
        fprintf(stderr, "# cluster: the leader, node %u, does not answer STATUS\n",
                c->nodes[leader].id);
        return -1;
    }
    while (cluster_node_status(c, i, &st, 1000) != 0 || st.applied_index < lst.commit_index) {
        if (now_ms() > deadline) {
            fprintf(stderr, "# cluster: node %u applied %llu, never %llu (node %u's commit index)\n",
                    c->nodes[i].id, (unsigned long long)st.applied_index,
                    (unsigned long long)lst.commit_index, c->nodes[leader].id);
            return -1;
        }
        sleep_ms(20);
    }
    return 0;
}

int cluster_digests_agree(struct cluster *c, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;

    for (;;) {
        struct cluster_status st[CLUSTER_MAX_NODES];
        int same = 1, first = -1;

        for (int i = 0; i < c->n; i++) {
            if (c->nodes[i].pid <= 0) continue;
            if (cluster_node_status(c, i, &st[i], 10000) != 0) {
                fprintf(stderr, "# cluster: node %u does not answer STATUS\n", c->nodes[i].id);
                return -1;
            }
            if (first < 0) first = i;
            same &= st[i].applied_index == st[first].applied_index;
        }
        if (first < 0) return -1;
        if (same) {
            for (int i = first + 1; i < c->n; i++) {
                if (c->nodes[i].pid <= 0 || st[i].state_digest == st[first].state_digest) continue;
                fprintf(stderr,
                        "# cluster: digests differ at index %llu: node %u %016llx, node %u %016llx\n",
                        (unsigned long long)st[first].applied_index, c->nodes[first].id,
                        (unsigned long long)st[first].state_digest, c->nodes[i].id,
                        (unsigned long long)st[i].state_digest);
                return -1;
            }
            fprintf(stderr, "# cluster: all nodes at index %llu, digest %016llx\n",
                    (unsigned long long)st[first].applied_index,
                    (unsigned long long)st[first].state_digest);
            return 0;
        }
        if (now_ms() > deadline) {
            fprintf(stderr, "# cluster: the nodes did not reach the same applied index\n");
            return -1;
        }
        sleep_ms(100);
    }
}

int cluster_wait_exit(struct cluster *c, int i, int timeout_ms)
{
    struct cluster_node *nd;
    int code;

    if (i < 0 || i >= c->n || c->nodes[i].pid <= 0) return -1;
    nd = &c->nodes[i];
    code = proc_wait(nd->pid, timeout_ms);
    if (code < 0) return -1;
    nd->pid = 0;
    nd->stopped = 0;
    slots[c->slot].pids[i] = 0;
    slots[c->slot].stopped[i] = 0;
    write_pid_file(c->root, i, 0);
    return code;
}

int cluster_wait_node(struct cluster *c, int i, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;

    if (i < 0 || i >= c->n) return -1;
    for (;;) {
        struct cluster_status st;
        check_exited(c, i);
        if (c->nodes[i].pid <= 0) return -1;
        if (cluster_node_status(c, i, &st, 500) == 0) return 0;
        if (now_ms() >= deadline) break;
        sleep_ms(20);
    }
    fprintf(stderr, "# cluster: node %u did not answer STATUS within %d ms\n", c->nodes[i].id,
            timeout_ms);
    return -1;
}

int cluster_restart(struct cluster *c, int i)
{
    if (i < 0 || i >= c->n) return -1;
    if (c->nodes[i].pid > 0) cluster_kill(c, i, SIGTERM);
    if (spawn_node(c, i) != 0) return -1;
    return cluster_wait_node(c, i, 10000);
}

int cluster_run_to_exit(struct cluster *c, int i, int timeout_ms)
{
    int code;

    if (i < 0 || i >= c->n || c->nodes[i].pid > 0 || spawn_node(c, i) != 0) return -1;
    code = proc_wait(c->nodes[i].pid, timeout_ms);
    if (code < 0) {
        fprintf(stderr, "# cluster: node %u still runs after %d ms\n", c->nodes[i].id, timeout_ms);
        cluster_kill(c, i, SIGTERM);
        return -1;
    }
    c->nodes[i].pid = 0;
    slots[c->slot].pids[i] = 0;
    write_pid_file(c->root, i, 0);
    return code;
}

int cluster_stop(struct cluster *c)
{
    int rv;

    if (c->n == 0) return 0;
    if (c->owner != getpid()) return -1;
    rv = slot_stop(&slots[c->slot]);
    for (int i = 0; i < c->n; i++) c->nodes[i].pid = 0;
    c->n = 0;
    c->guardian = 0;
    c->guardian_fd = -1;
    return rv;
}

const char *cluster_endpoints(const struct cluster *c)
{
    return c->endpoints;
}

const char *cluster_endpoint(const struct cluster *c, int i)
{
    return i >= 0 && i < c->n ? c->nodes[i].endpoint : "";
}

void cluster_dump_logs(const struct cluster *c, int lines)
{
    for (int i = 0; i < c->n; i++) report_tail(c->root, i, lines, "cluster");
}

/* ---- batonctl ------------------------------------------------------------- */

/* argv for batonctl: path, -e ENDPOINTS (if c), args. Caller frees. */
static const char **ctl_argv(struct cluster *c, const char *const *args, char *path, size_t cap)
{
    size_t n = 0, k = 0;
    const char **argv;
    const char *build = c ? c->build : getenv("BATON_BUILD");

    snprintf(path, cap, "%s/batonctl", build && *build ? build : "build/default");
    while (args[n]) n++;
    argv = calloc(n + 12, sizeof *argv);
    if (argv == NULL) return NULL;
    argv[k++] = path;
    if (c != NULL) {
        argv[k++] = "-e";
        argv[k++] = c->endpoints;
        k = (size_t)cluster__ctl_args(c, argv, (int)k);
    }
    for (size_t j = 0; j < n; j++) argv[k++] = args[j];
    return argv;
}

int cluster_ctlv(struct cluster *c, int timeout_ms, struct ctl_result *r,
                 const char *const *args)
{
    char path[PATH_MAX + 16];
    const char **argv = ctl_argv(c, args, path, sizeof path);
    struct buf acc[2] = {{0}, {0}};
    int po[2] = {-1, -1}, pe[2] = {-1, -1}, open_fds = 2, killed = 0;
    int64_t deadline = now_ms() + timeout_ms;
    pid_t pid = -1;

    r->status = -1;
    r->out = r->err = NULL;
    if (argv == NULL || pipe2(po, O_CLOEXEC) != 0 || pipe2(pe, O_CLOEXEC) != 0) goto fail;
    pid = proc_spawn(argv, PROC_NULL, po[1], pe[1]);
    close(po[1]);
    close(pe[1]);
    if (pid < 0) {
        close(po[0]);
        close(pe[0]);
        goto fail;
    }
    /* Collect stdout and stderr until both close or the time is up. */
    while (open_fds > 0) {
        struct pollfd p[2] = {{.fd = po[0], .events = POLLIN}, {.fd = pe[0], .events = POLLIN}};
        int64_t left = deadline - now_ms();
        if (left <= 0) {
            kill(pid, SIGKILL);
            killed = 1;
            break;
        }
        if (poll(p, 2, (int)left) < 0 && errno != EINTR) break;
        for (int k = 0; k < 2; k++) {
            if (p[k].fd < 0 || !(p[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            if (buf_reserve(&acc[k], 4096) != 0) continue;
            ssize_t n = read(p[k].fd, acc[k].data + acc[k].len, 4096);
            if (n > 0) {
                acc[k].len += (size_t)n;
            } else if (n == 0 || errno != EINTR) {
                close(p[k].fd);
                if (k == 0) po[0] = -1;
                else pe[0] = -1;
                open_fds--;
            }
        }
    }
    if (po[0] >= 0) close(po[0]);
    if (pe[0] >= 0) close(pe[0]);
    if (killed) {
        fprintf(stderr, "# cluster: batonctl %s did not finish within %d ms; killed\n",
                args[0] ? args[0] : "", timeout_ms);
        proc_wait(pid, 5000);
        r->status = -1;
    } else {
        int64_t left = deadline - now_ms();
        int code = proc_wait(pid, left > 0 ? (int)left : 0);
        if (code < 0) {
            /* It closed its output but did not exit in time. */
            fprintf(stderr, "# cluster: batonctl %s did not exit within %d ms; killed\n",
                    args[0] ? args[0] : "", timeout_ms);
            proc_stop(pid, SIGKILL, 5000);
        }
        r->status = code;
    }
fail:
    for (int k = 0; k < 2; k++) {
        buf_put_u8(&acc[k], 0);
    }
    r->out = (char *)acc[0].data;
    r->err = (char *)acc[1].data;
    if (r->out == NULL) r->out = strdup("");
    if (r->err == NULL) r->err = strdup("");
    free(argv);
    return r->status;
}

int cluster_ctl(struct cluster *c, struct ctl_result *r, ...)
{
    const char *args[64];
    va_list ap;
    int n = 0;

    va_start(ap, r);
    while (n < 63 && (args[n] = va_arg(ap, const char *)) != NULL) n++;
    va_end(ap);
    args[n] = NULL;
    return cluster_ctlv(c, CTL_TIMEOUT_MS, r, args);
}

void ctl_result_free(struct ctl_result *r)
{
    if (r == NULL) return;
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

int cluster_lock_info(struct cluster *c, const char *name, struct ctl_result *r)
{
    return cluster_ctl(c, r, "-o", "json", "lock-info", name, NULL);
}

int64_t cluster_lock_i64(struct cluster *c, const char *name, const char *key)
{
    struct ctl_result r;
    int64_t v = -1;
    int st = cluster_lock_info(c, name, &r);

    if (st == 0)
        v = json_i64(r.out, key, -1);
    else
        fprintf(stderr, "# cluster: batonctl lock-info %s exited %d: %s", name, st, r.err);
    ctl_result_free(&r);
    return v;
}

int cluster_wait_lock_i64(struct cluster *c, const char *name, const char *key, int64_t want,
                          int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms, got;

    while ((got = cluster_lock_i64(c, name, key)) != want) {
        if (now_ms() >= deadline) {
            fprintf(stderr, "# cluster: lock %s: %s is %lld, not %lld, after %d ms\n", name, key,
                    (long long)got, (long long)want, timeout_ms);
            return -1;
        }
        sleep_ms(50);
    }
    return 0;
}

pid_t cluster_ctl_spawn(struct cluster *c, const char *const *args, int *out_fd)
{
    char path[PATH_MAX + 16];
    const char **argv = ctl_argv(c, args, path, sizeof path);
    int p[2] = {-1, -1};
    pid_t pid;

    if (argv == NULL) return -1;
    if (out_fd != NULL && pipe2(p, O_CLOEXEC) != 0) {
        free(argv);
        return -1;
    }
    pid = proc_spawn(argv, PROC_NULL, out_fd != NULL ? p[1] : PROC_NULL, PROC_INHERIT);
    free(argv);
    if (p[1] >= 0) close(p[1]);
    if (pid < 0) {
        if (p[0] >= 0) close(p[0]);
        return -1;
    }
    if (out_fd != NULL) *out_fd = p[0];
    return pid;
}
