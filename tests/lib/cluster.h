/*
 * cluster.h -- a harness for tests that run REAL batond processes on
 * 127.0.0.1: start a cluster on free ports with a fresh data directory,
 * wait for a leader, kill / stop / restart nodes, and run batonctl.
 *
 *     struct cluster c;
 *     ASSERT_EQ(cluster_start(&c, 3), 0);
 *     int leader = cluster_wait_leader(&c, 10000);
 *     ASSERT_GE(leader, 0);
 *     baton_opts o = {.endpoints = cluster_endpoints(&c)};
 *     ...
 *     cluster_kill(&c, leader, SIGKILL);
 *     ASSERT_GE(cluster_wait_leader(&c, 10000), 0);
 *     ASSERT_EQ(cluster_restart(&c, leader), 0);
 *     ASSERT_EQ(cluster_stop(&c), 0);
 *
 * Nodes are indexed 0..n-1 and have raft ids 1..n. Binaries come from
 * $BATON_BUILD (tests/run-tests.sh sets it; default "build/default").
 *
 * Layout of the data directory (mkdtemp, $TMPDIR or /tmp):
 *     ROOT/nodeN/       batond --data (raft/ and fsm/ inside)
 *     ROOT/nodeN.log    the node's stderr, appended across restarts
 *     ROOT/nodeN.pid    the node's current pid
 *
 * Cleanup, however the test ends:
 *  - cluster_stop() stops the nodes (SIGTERM, then SIGKILL after 10 s) and
 *    removes ROOT unless $BATON_KEEP_DATA is set (it then prints ROOT).
 *  - An atexit() handler calls cluster_stop() for clusters still running
 *    when the test process exits normally.
 *  - A failed assertion _exit()s and skips atexit, and a timeout kills the
 *    test with SIGALRM. For those, every node is started by proc_spawn
 *    (tests/lib/proc.h), so it dies with the test process; and a
 *    small guardian process, which waits on a pipe from the test process,
 *    sees the test die, SIGKILLs any node still listed in a pid file,
 *    prints the last lines of every node's log to stderr, and removes ROOT
 *    (unless $BATON_KEEP_DATA).
 *
 * $BATON_TEST_LOG_LEVEL sets the nodes' --log-level (default "info").
 * Everything here is for one thread. SIGCHLD must not be ignored in the
 * test process: the harness reaps its children with waitpid.
 */
#ifndef BATON_TESTS_CLUSTER_H
#define BATON_TESTS_CLUSTER_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "baton/baton.h"

#define CLUSTER_MAX_NODES 7

/* cluster_opts.secure: what the nodes secure (docs/security.md). The
 * certificates come from server/certs.sh into ROOT/certs: a CA "ca",
 * node1..node7 (CN baton-node-<id>) and "client" (CN baton-client). */
#define CLUSTER_PEER_TLS 1   /* mutual TLS between nodes (--peer-*) */
#define CLUSTER_CLIENT_TLS 2 /* TLS on the client port (--tls-cert/--tls-key) */
#define CLUSTER_CLIENT_CA 4  /* and client certificates required (--tls-client-ca) */
#define CLUSTER_AUTH 8       /* --auth-file ROOT/auth, whose first principal is
                                "harness", an admin with the token c->admin_token */
#define CLUSTER_SECURE (CLUSTER_PEER_TLS | CLUSTER_CLIENT_TLS | CLUSTER_AUTH)

struct cluster_node {
    uint32_t id;                /* raft id: index + 1 */
    pid_t pid;                  /* 0 when not running */
    int stopped;                /* SIGSTOPped by cluster_kill */
    int raft_port;              /* advertised in --cluster */
    int raft_bind_port;         /* --raft-bind port (cluster_opts.raft_proxy), else 0 */
    int client_port;
    int metrics_port;           /* --metrics-addr 127.0.0.1:PORT (cluster_opts.metrics), else 0 */
    char host[32];              /* the host of its addresses (cluster_opts.host, node_host) */
    char ip[48];                /* where the harness sends STATUS: 127.0.0.1, or ::1 for the
                                   host [::1]; a test that moves a node changes it */
    char endpoint[48];          /* "127.0.0.1:CLIENTPORT" (or with its host) */
    char dir[PATH_MAX];         /* ROOT/nodeN */
    char log[PATH_MAX];         /* ROOT/nodeN.log */
    int joined;                 /* started by cluster_add_node: --join, --cluster of itself
                                   (under CLUSTER_PEER_TLS: of every node) */
    int exit_code;              /* how it ended the last time it exited on its own
                                   (reaped by cluster_wait_leader or cluster_wait_node):
                                   its exit status, or -1 if a signal killed it */
    int exit_signal;            /* that signal, or 0 */
};

struct cluster {
    int n;                      /* number of nodes; 0 once stopped */
    pid_t owner;                /* the process that started the cluster */
    int slot;                   /* internal: index of its process table */
    char root[PATH_MAX - 64];   /* data directory */
    char build[PATH_MAX];       /* where batond and batonctl are */
    char members[1024];         /* the --cluster argument */
    char endpoints[512];        /* "127.0.0.1:P1,127.0.0.1:P2,..." */
    char log_level[16];
    char host[32];              /* the host of every address (cluster_opts.host) */
    const char *const *extra_args; /* more batond flags (cluster_opts) */
    const char *const *node_env[CLUSTER_MAX_NODES]; /* more environment (cluster_opts) */
    const char *node_batond[CLUSTER_MAX_NODES]; /* cluster_opts; a test may change one
                                   before cluster_restart (an upgrade) */
    int secure;                 /* CLUSTER_* bits (cluster_opts.secure) */
    int metrics;                /* cluster_opts.metrics */
    int config_file;            /* cluster_opts.config_file */
    char certs[PATH_MAX];       /* ROOT/certs when secure, else "" */
    char auth_file[PATH_MAX];   /* ROOT/auth with CLUSTER_AUTH, else "" */
    char admin_token[72];       /* the harness's admin token with CLUSTER_AUTH */
    pid_t guardian;
    int guardian_fd;            /* write end of the guardian's pipe */
    struct cluster_node nodes[CLUSTER_MAX_NODES];
};

struct cluster_opts {
    /* More batond flags for every node, NULL-terminated, e.g.
     * (const char *[]){"--election-timeout", "200", NULL}. The array must
     * outlive the cluster (restarts use it again). NULL for none. */
    const char *const *extra_args;
    /* --log-level for the nodes; NULL: $BATON_TEST_LOG_LEVEL, else "info". */
    const char *log_level;
    /* Non-zero: every node listens for raft on a private port of its own
     * (batond --raft-bind 127.0.0.1:raft_bind_port) while --cluster
     * advertises raft_port, where the test runs a proxy that forwards to
     * raft_bind_port (the fault harness, tests/fault/proxy.c). Nothing
     * listens on raft_port until the proxy does. */
    int raft_proxy;
    /* CLUSTER_* bits: what the nodes secure; 0 for nothing. */
    int secure;
    /* Non-zero: every node serves HTTP (batond --metrics-addr) on a free
     * port of its own, cluster_node.metrics_port. */
    int metrics;
    /* With CLUSTER_AUTH: more lines for the auth file (after the harness's
     * own admin principal), or NULL. */
    const char *auth_lines;
    /* More environment for node i (index), every time it starts:
     * "NAME=VALUE" strings, NULL-terminated, or NULL for none (the fault
     * harness preloads its disk shim this way, tests/fault/shim_disk.c).
     * The arrays must outlive the cluster. */
    const char *const *node_env[CLUSTER_MAX_NODES];
    /* Node i's batond (a path) instead of BUILD/batond, if not NULL, every
     * time it starts (tests/integration/test_mixed_versions.c runs the
     * protocol-1 build there). The strings must outlive the cluster. */
    const char *node_batond[CLUSTER_MAX_NODES];
    /* The host of every address in --cluster, --raft-bind and the
     * endpoints: "localhost" or "[::1]" (tests/integration/test_addrs.c);
     * NULL: "127.0.0.1". The ports are picked free on 127.0.0.1. */
    const char *host;
    /* Node i's host instead, if not NULL (a name the test maps itself:
     * tests/shim/hosts.c). */
    const char *node_host[CLUSTER_MAX_NODES];
    /* A file of `batonctl snapshot save`, or NULL: before its first start,
     * each node's data directory is initialised from it by
     * cluster_restore (batond --restore); the start fails if that does. */
    const char *restore;
    /* With restore: the nodes (bit i: node index i) left out of it, which
     * start on an empty data directory as on a fresh cluster. */
    unsigned restore_skip;
    /* Non-zero: each node is started as `batond --config ROOT/nodeN.conf`
     * alone, the file holding every flag the harness would have passed
     * (`--key value` as `key = value`, a flag without a value as
     * `key = true`), rewritten before each start. */
    int config_file;
};

/* One node's answer to STATUS. */
struct cluster_status {
    uint32_t node_id;
    int role;                   /* enum node_role (proto/msg.h) */
    uint32_t leader_id;         /* 0 if unknown */
    uint64_t term;
    uint64_t last_index;
    uint64_t commit_index;
    uint64_t applied_index;
    uint64_t state_digest;      /* the store's digest (proto/msg.h, STATUS_R) */
    int fault_kind;             /* what stops the node (enum status_fault), 0: nothing */
    int fault;                  /* its BATON_E* code */
    uint64_t fault_index;       /* the entry it happened on */
};

/*
 * Start n (1..CLUSTER_MAX_NODES) nodes on free 127.0.0.1 ports with a
 * fresh data directory. Does not wait for a leader. *c is initialised here.
 * Returns 0, or -1 after printing why to stderr (nothing is left running).
 */
int cluster_start(struct cluster *c, int n);
int cluster_start_opts(struct cluster *c, int n, const struct cluster_opts *o);

/*
 * Poll STATUS on every running node until one reports itself leader (the
 * one with the highest term if several do), and return its index; -1 after
 * timeout_ms, with every node's state printed to stderr. A node that exits
 * unexpectedly is reported (with its log tail) and marked not running.
 * Note: a fresh leader holds requests for the leader until its first
 * barrier commits (a few ms; server/listen.c), answering only STATUS and
 * the like meanwhile.
 */
int cluster_wait_leader(struct cluster *c, int timeout_ms);

/*
 * Ask node i for STATUS, waiting at most timeout_ms. 0, or -1 if it did not
 * answer.
 */
int cluster_node_status(struct cluster *c, int i, struct cluster_status *st, int timeout_ms);

/*
 * The value of the sample `key` (a metric name with its labels, as
 * tests/lib/scrape.h's scrape_value takes it) in node i's METRICS reply,
 * as the admin: -1 if it did not answer within timeout_ms or has no such
 * sample.
 */
double cluster_node_gauge(struct cluster *c, int i, const char *key, int timeout_ms);

/*
 * Does node i's log (its last MiB) say `what`? Looks again every 50 ms for
 * up to timeout_ms (0: once). 1 or 0.
 */
int cluster_log_says(const struct cluster *c, int i, const char *what, int timeout_ms);

/*
 * Wait (at most timeout_ms) until every running node's METRICS shows
 * `key` at `want` -- e.g. baton_cluster_feature_level at CMD_LEVEL, once
 * the leader has raised the cluster's feature level. 0, or -1 after
 * saying so on stderr.
 */
int cluster_wait_gauge(struct cluster *c, const char *key, double want, int timeout_ms);

/*
 * Wait until node i answers STATUS (it has opened its store and its client
 * port), at most timeout_ms. 0, or -1 (also if the node exited; that is
 * reported with its log tail).
 */
int cluster_wait_node(struct cluster *c, int i, int timeout_ms);

/*
 * Send sig to node i by pid. SIGSTOP, SIGCONT and SIGHUP just send (the
 * node stays "running"). Any other signal: send it (plus SIGCONT if the node was
 * stopped, so it can act on it), then wait for the process to exit (at most
 * 10 s, then SIGKILL). Returns the node's exit status: 0..255 if it exited,
 * 128+N if signal N killed it; 0 for SIGSTOP/SIGCONT; -1 if the node was
 * not running.
 */
int cluster_kill(struct cluster *c, int i, int sig);

/*
 * Wait (at most timeout_ms in all) until node i has applied every entry the
 * leader had committed when this was called: it is back and caught up.
 * The leader is found with cluster_wait_leader (within the same bound) and
 * asked for STATUS once. 0, or -1 after saying why on stderr (no leader,
 * the leader not answering, node i behind or not answering at the
 * deadline).
 */
int cluster_wait_caught_up(struct cluster *c, int i, int timeout_ms);

/*
 * Wait (at most timeout_ms) until every running node stands at the same
 * applied index, then check that they report the same state digest. 0, or
 * -1 after saying why on stderr (digests differ, no common index in time,
 * a node not answering).
 */
int cluster_digests_agree(struct cluster *c, int timeout_ms);

/*
 * Wait at most timeout_ms for node i to exit by itself (it is not
 * signalled), reap it and mark it not running. Returns its exit status as
 * cluster_kill does, or -1 if it is still running (or was not).
 */
int cluster_wait_exit(struct cluster *c, int i, int timeout_ms);

/*
 * Start node i again on its data (stopping it first with SIGTERM if it is
 * still running), and wait (at most 10 s) until it answers STATUS. 0, or
 * -1 if it could not be started or did not answer.
 */
int cluster_restart(struct cluster *c, int i);

/*
 * Start node i again on its data (it must not be running) and wait at most
 * timeout_ms for it to exit on its own -- for a node that must refuse to
 * start. Returns its exit status (as cluster_kill), or -1 if it could not
 * be started or was still running at the timeout (it is then stopped).
 */
int cluster_run_to_exit(struct cluster *c, int i, int timeout_ms);

/*
 * Stop every running node (SIGTERM, SIGCONT; after 10 s SIGKILL), stop the
 * guardian, and remove the data directory unless $BATON_KEEP_DATA is set.
 * Returns 0 if every node that was running exited with status 0 after
 * SIGTERM, else -1 (each bad exit is printed). Idempotent.
 */
int cluster_stop(struct cluster *c);

/*
 * Start one more node, index c->n and raft id c->n + 1, on free ports with
 * a fresh data directory: `batond --join` with a --cluster list that names
 * only itself (the other members' client addresses reach it through the
 * replicated state once it is added) -- or, under CLUSTER_PEER_TLS, every
 * node started so far, since a node without a configuration admits raft
 * connections only from the nodes of its --cluster list. Waits (at most 10 s) until it
 * answers STATUS. It is not a member until the leader adds it: run
 * `batonctl member add ID ADDRS` with cluster_member_addrs(). Its endpoint
 * is NOT added to cluster_endpoints(), which keeps naming the nodes the
 * cluster started with; cluster_restart() starts it with --join again.
 * Returns the new node's index, or -1 after printing why (nothing is left
 * running).
 */
int cluster_add_node(struct cluster *c);

/*
 * Run `batond --restore file --id ID --data dir --cluster MEMBERS` for node
 * i of c (its id, and c's --cluster list) and wait (at most 30 s) for it to
 * exit; its stderr goes to node i's log. Returns its exit status (as
 * cluster_kill), or -1 if it could not be run or did not exit in time.
 */
int cluster_restore(struct cluster *c, int i, const char *file, const char *dir);

/* Pick n (1..4 * CLUSTER_MAX_NODES) distinct TCP ports that are free on
 * 127.0.0.1 now, for a process a test starts by hand. 0 or -1. */
int cluster_free_ports(int *ports, int n);

/* Node i's "RAFTADDR/CLIENTADDR", as batonctl member add takes it, in buf
 * (at least 48 bytes). Returns buf. */
const char *cluster_member_addrs(const struct cluster *c, int i, char *buf, size_t cap);

/* "127.0.0.1:P1,127.0.0.1:P2,..." -- the client endpoints. */
const char *cluster_endpoints(const struct cluster *c);
/* "127.0.0.1:Pi" -- node i's client endpoint. */
const char *cluster_endpoint(const struct cluster *c, int i);

/* Print the last `lines` lines of every node's log to stderr. */
void cluster_dump_logs(const struct cluster *c, int lines);

/* What a batonctl run printed and how it ended. */
struct ctl_result {
    int status;     /* exit status 0..255, 128+N if killed by signal N, -1 */
    char *out;      /* stdout, NUL-terminated, malloc'd */
    char *err;      /* stderr, NUL-terminated, malloc'd */
};

/*
 * Run `$BATON_BUILD/batonctl -e ENDPOINTS ARGS...` (the argument list ends
 * with NULL), for at most 30 s (then SIGKILL). With c == NULL no -e is
 * added. Returns r->status; free r with ctl_result_free.
 */
int cluster_ctl(struct cluster *c, struct ctl_result *r, ...) __attribute__((sentinel));

/* The same with an argument vector (NULL-terminated) and a timeout. */
int cluster_ctlv(struct cluster *c, int timeout_ms, struct ctl_result *r,
                 const char *const *args);

void ctl_result_free(struct ctl_result *r);

/* `batonctl -o json lock-info NAME`: its exit status (r filled either way;
 * free it with ctl_result_free). */
int cluster_lock_info(struct cluster *c, const char *name, struct ctl_result *r);

/* The number under `key` (e.g. "total_waiters", "fence") in lock-info's
 * JSON for lock `name`, or -1 if batonctl failed (said on stderr) or the
 * key is absent. */
int64_t cluster_lock_i64(struct cluster *c, const char *name, const char *key);

/* Poll cluster_lock_i64 every 50 ms until it is `want`: 0, or -1 after
 * timeout_ms (said on stderr, with the last value). */
int cluster_wait_lock_i64(struct cluster *c, const char *name, const char *key, int64_t want,
                          int timeout_ms);

/*
 * Start `$BATON_BUILD/batonctl -e ENDPOINTS ARGS...` in the background (it
 * dies with the test process). Its stdout goes to *out_fd (a pipe; pass
 * NULL to discard it), stderr to the test's stderr. Returns the pid or -1.
 * Reap it with proc_wait (tests/lib/proc.h).
 */
pid_t cluster_ctl_spawn(struct cluster *c, const char *const *args, int *out_fd);

/* ---- security (cluster_secure.c) ----------------------------------------- */

struct tls_sock_cfg;

/* Path of certificate file NAME.pem (or its key, NAME.key, with key != 0)
 * in c's certificate directory. Static storage, four in rotation. */
const char *cluster_cert(const struct cluster *c, const char *name, int key);
/* How a raw test client reaches c's nodes (tests/lib/tls_sock.h): over
 * TLS with the client certificate when c has CLUSTER_CLIENT_TLS, else in
 * plaintext. */
void cluster_sock_cfg(const struct cluster *c, struct tls_sock_cfg *cfg);
/* A new random token for principal NAME of ROLE with OPTS ("" or e.g.
 * "prefixes=jobs/"): the token into token (65 bytes) and its auth-file
 * line into line. 0 or -1. */
int cluster_token(const char *name, const char *role, const char *opts, char *token,
                  char *line, size_t cap);
/* The auth-file line of an existing token. 0 or -1. */
int cluster_token_line(const char *name, const char *role, const char *opts, const char *token,
                       char *line, size_t cap);
/* Rewrite c's auth file: the harness's admin line, then `lines` (or
 * nothing). Does not signal the nodes (cluster_kill(c, i, SIGHUP) does).
 * 0 or -1. */
int cluster_auth_write(struct cluster *c, const char *lines);

/*
 * Fill the fields of o that depend on c (cluster_client.c): endpoints
 * (all of c's), and what c's security bits ask of a client -- with
 * CLUSTER_CLIENT_TLS the CA and the harness's client certificate and key,
 * with CLUSTER_AUTH the admin token; NULL otherwise. The other fields
 * (client name, timeouts) are left as they are. The strings live in c
 * and, for the certificate paths, in static storage that the next call
 * overwrites: one cluster's client options at a time.
 */
void cluster_client_opts(const struct cluster *c, baton_opts *o);

/*
 * baton_connect with *o (a connect_timeout_ms of 0 becomes 15 s), or fail
 * the test saying which endpoints, which client and why. The session
 * belongs to the caller (baton_close).
 */
baton_t *client_connect(const baton_opts *o);

#endif /* BATON_TESTS_CLUSTER_H */
