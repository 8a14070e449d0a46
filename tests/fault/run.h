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

    FILE *nemesis;           /* nemesis.log */
    uint64_t rng;
    int64_t t_start_us;      /* now_us() when the faults began */
    unsigned n_faults[F_COUNT];
    int node_crashes;        /* nodes that died without being killed */
    int harness_errors;      /* anything else that went wrong */
};

extern const char *const fault_names[F_COUNT];

/* nemesis.c */
/* Run faults until the deadline (now_us time, tests/lib/clock.h). */
void nemesis_run(struct run *r, int64_t deadline_us);
/* Undo every fault still in effect: SIGCONT, restart killed nodes, heal. */
void nemesis_heal_all(struct run *r);
/* Send "cut I J" / "heal" to the proxy. 0 or -1. */
int proxy_command(struct run *r, const char *cmd);
/* A "WHAT message" line in nemesis.log (WHAT: FAULT, HEAL or NOTE), also
 * printed as progress. */
void nemesis_note(struct run *r, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
