/*
 * run.h -- the fault harness driver (faultrun): shared state of run.c
 * (set-up, the clients, the end of the run, the checker) and nemesis.c
 * (the faults). Child processes: tests/lib/proc.h.
 */
#ifndef BATON_TESTS_FAULT_RUN_H
#define BATON_TESTS_FAULT_RUN_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "tests/lib/cluster.h"
#include "tests/lib/proc.h"

#define RUN_MAX_CLIENTS 16
/* Client groups the proxy serves at most (proxy.c, MAX_GROUPS). */
#define RUN_MAX_GROUPS 8
/* Election workers (elect.c): campaigners, then observers. */
#define RUN_ELECT_CAMPAIGNERS 3
#define RUN_ELECT_OBSERVERS 2
#define RUN_ELECT_WORKERS (RUN_ELECT_CAMPAIGNERS + RUN_ELECT_OBSERVERS)
#define RUN_ELECTIONS 2
/* The sessions the floods' principal may have open at once (its
 * max-sessions= in the auth file): hostile-sessions floods up to it. */
#define FLOOD_SESSION_CAP 32

/* The fault kinds, in nemesis.log's words. */
enum fault_kind {
    F_KILL_LEADER,
    F_KILL_FOLLOWER,
    F_STOP_LEADER,
    F_STOP_CLIENT,
    F_PART_LEADER,
    F_PART_FOLLOWER,
    F_RESTART_ALL,
    F_MEMBER,
    F_FORCE_RELEASE, /* nemesis_admin.c */
    F_EXPIRE,        /* nemesis_admin.c */
    /* pauses (nemesis_pause.c), operator, client partitions
     * (nemesis_net.c), disks (nemesis_disk.c) */
    F_STOP_FOLLOWER,
    F_STALE_FOLLOWER,
    F_STALL_LEADER,
    F_TRANSFER,
    F_PART_CLIENT,
    F_DEPOSED,
    F_DISK_SLOW,
    F_DISK_FAIL,
    F_DISK_FAIL_LEADER,
    /* a hostile authenticated client's floods (nemesis_hostile.c) */
    F_HOSTILE_CACHE,
    F_HOSTILE_READS,
    F_HOSTILE_SESSIONS,
    F_HOSTILE_PREHELLO,
    /* a node of a lower feature level, then upgraded (nemesis_upgrade.c) */
    F_UPGRADE,
    /* kill -9 a leading campaigner of the elections (nemesis_elect.c) */
    F_KILL_ELECT,
    /* the proxied campaigner cut off from every node (nemesis_elect.c) */
    F_PART_ELECT,
    F_COUNT
};

struct run {
    /* Options. */
    unsigned seconds;
    int n_clients, n_locks;
    unsigned ttl_ms;
    uint64_t seed;
    unsigned faults_enabled; /* bit per enum fault_kind */
    int expect_violations;
    int keep;
    int plain;               /* --plain: no shims, no client proxy, no hostile client */
    int exclusive_only;      /* --exclusive: every client takes exclusive hot locks only */
    int no_multi;            /* --no-multi: no client takes multi-locks */
    int no_elect;            /* --no-elect: no election workers */

    /* Where things are. */
    char tools[PATH_MAX];    /* faultproxy, faultstore, faultclient, faultcheck */
    char dir[PATH_MAX - 64]; /* logs of this run */

    /* Processes. */
    struct cluster c;
    int down[CLUSTER_MAX_NODES]; /* killed by the nemesis, not restarted yet */
    pid_t store_pid, proxy_pid;
    int store_in, proxy_in, proxy_out; /* pipes */
    int store_port;
    char client_token[72];   /* the clients' principal "faultclient" (role client) */
    char auth_line[256];     /* its auth-file line */
    pid_t clients[RUN_MAX_CLIENTS];
    int client_stopped[RUN_MAX_CLIENTS];
    /* How each client runs (run.c, client_profiles): through the client
     * proxy as group client_group[k] (-1: straight to the nodes), with its
     * clock skewed by client_ppm[k] parts per million (0: the real one). */
    int client_group[RUN_MAX_CLIENTS];
    long client_ppm[RUN_MAX_CLIENTS];
    /* client_modes[k]: client k mixes shared locks and the semaphore with
     * the hot locks (client.c --modes); n_modes of them. */
    int client_modes[RUN_MAX_CLIENTS];
    int n_modes;
    /* client_multi[k]: client k takes atomic multi-locks too (--multi). */
    int client_multi[RUN_MAX_CLIENTS];
    int n_groups;
    int group_port[RUN_MAX_CLIENTS][CLUSTER_MAX_NODES]; /* the proxy's ports per group, node */
    /* The election workers (nemesis_elect.c): elect[k] is worker k's pid
     * (0: not running), k < RUN_ELECT_CAMPAIGNERS a campaigner. */
    pid_t elect[RUN_ELECT_WORKERS];
    /* How each runs, as client_group and client_ppm say for the clients:
     * e1 with a slow clock, e2 through the client proxy (elect_profiles). */
    int elect_group[RUN_ELECT_WORKERS];
    long elect_ppm[RUN_ELECT_WORKERS];
    unsigned elect_kills;    /* kill-elect faults that found a leader */
    pid_t hostile_pid;       /* faulthostile, or 0 */
    char hostile_token[72];  /* its principal "faulthostile" (role client) */
    char flood_token[72];    /* the hostile-* floods' "faultflood" (role client) */

    /* The disk shim (nemesis_disk.c): every node's environment, and the
     * node whose disk is failing or slow now (-1: none) -- until
     * disk_grace_us, a node that exits saying "I/O error" did what it
     * should. */
    char node_env_buf[CLUSTER_MAX_NODES][4][PATH_MAX + 64];
    const char *node_env[CLUSTER_MAX_NODES][5];
    int disk_node;
    int64_t disk_grace_us;

    FILE *nemesis;           /* nemesis.log */
    uint64_t rng;
    int64_t t_start_us;      /* now_us() when the faults began */
    unsigned n_faults[F_COUNT];
    int node_crashes;        /* nodes that died without being killed */
    int io_exits;            /* nodes that exited on an I/O error during a disk fault */
    unsigned stalls_kept, stalls_lost; /* stall-leader: leadership kept or lost */
    unsigned floods_kept, floods_lost; /* hostile-*: the leader kept its term or lost it */
    int harness_errors;      /* anything else that went wrong */

    /* The upgrade fault (nemesis_upgrade.c): BUILD/level1/batond, and the
     * node that runs it from the start until the fault upgrades it (-1:
     * none, or upgraded). */
    char level1[PATH_MAX];
    int old_node;
};

extern const char *const fault_names[F_COUNT];

/* nemesis.c */
/* The faults of a run without --faults (and of --faults all): every kind
 * whose weight is not 0. A kind of weight 0, named in --faults, is picked
 * with weight 1. */
unsigned nemesis_default_faults(void);
/* Run faults until the deadline (now_us time, tests/lib/clock.h). */
void nemesis_run(struct run *r, int64_t deadline_us);
/* Undo every fault still in effect: SIGCONT, restart killed nodes, heal. */
void nemesis_heal_all(struct run *r);
/* Send "cut I J" / "ccut G J" / "heal" to the proxy. 0 or -1. */
int proxy_command(struct run *r, const char *cmd);
/* A "WHAT message" line in nemesis.log (WHAT: FAULT, HEAL or NOTE), also
 * printed as progress. */
void nemesis_note(struct run *r, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* nemesis_upgrade.c */
/* With the upgrade fault enabled, node 3 starts on BUILD/level1/batond
 * (o->node_batond): r->old_node. Without that binary the fault is off
 * (said on stdout). 0, or -1 if no fault is left. */
int upgrade_setup(struct run *r, struct cluster_opts *o);
/* While the old node runs level 1: "NOTE upgrade level" lines of every
 * node's METRICS (the checker's rule 11). */
void upgrade_watch(struct run *r);
/* Node t has been removed and wiped by another fault. If it was the old
 * node, the two full voters have raised the cluster's level while it was
 * out, and a level-1 binary can no longer join: it comes back on the full
 * binary, the upgrade an operator makes by replacing a node. */
void upgrade_replaced(struct run *r, int t);

/* run.c */
/* A worker's environment and endpoints: through the client proxy as group
 * g (-1: straight to the nodes), with its clock skewed by ppm parts per
 * million (0: the real one); the shims preloaded for that, and the
 * --expect-clock-ppm and --expect-proxy-ports values that say so. */
struct client_env {
    char buf[5][PATH_MAX + 256];
    const char *env[6];
    char endpoints[256];
    char expect_ppm[16], expect_ports[16];
};
void client_env(const struct run *r, int g, long ppm, struct client_env *ce);

/* nemesis_elect.c */
/* How each election worker runs (r->elect_group, r->elect_ppm): proxy
 * groups are taken after the clients'. Before the proxy starts. */
void elect_profiles(struct run *r);
/* Start every election worker (unless --no-elect). 0 or -1. */
int elect_start(struct run *r);
/* SIGTERM every election worker; each resigns or ends its watches,
 * closes its session and exits 0 (else a harness error). */
void elect_stop(struct run *r);
/* SIGKILL every election worker (a failed set-up). */
void elect_kill_all(struct run *r);

/* nemesis_disk.c */
/* Fill r->node_env: every node preloads shim_disk.so, with a control file
 * of its own in the log directory (set to "ok"). 0 or -1. */
int disk_setup(struct run *r);

/* The environment a child needs to preload `so` (a ':'-separated list of
 * paths): LD_PRELOAD, and ASAN_OPTIONS that let an ASan-built program run
 * with a library loaded before the sanitizer's (make SAN=address). Writes
 * two "NAME=VALUE" strings into a and b. */
void preload_env(const char *so, char *a, size_t alen, char *b, size_t blen);

#endif
