/*
 * nemesis.h -- what the nemesis's files share (nemesis.c has the table of
 * faults and the first ones; nemesis_pause.c, nemesis_net.c and
 * nemesis_disk.c the others). The faults run one at a time, from
 * nemesis_run; each writes "FAULT kind detail" to nemesis.log when it
 * starts and "HEAL kind detail" when it is undone (note()).
 */
#ifndef BATON_TESTS_FAULT_NEMESIS_H
#define BATON_TESTS_FAULT_NEMESIS_H

#include <stdint.h>

#include "tests/fault/run.h"

/* ---- nemesis.c ---- */
/* Uniform in [lo, hi], from the run's seed. */
uint64_t run_rand(struct run *r, uint64_t lo, uint64_t hi);
/* A progress line "# +T s WHAT ..." on stdout and "WHAT ..." in
 * nemesis.log (WHAT: FAULT, HEAL or NOTE). */
void note(struct run *r, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The current leader's index, or -1 (reaps and restarts crashed nodes). */
int leader(struct run *r, int timeout_ms);
/* A random running node other than `not`, or -1. */
int other_node(struct run *r, int not);
/* Restart node i (killed by the nemesis); 0 or -1 (a harness error). */
int restart_node(struct run *r, int i);
/* Restart every node that died without being killed by the nemesis. */
void check_crashes(struct run *r);
/* Cut node iso's raft links to and from every other node (faultproxy);
 * "heal" undoes it. */
void isolate(struct run *r, int iso);
/* Does client k hold a lock now (the last line of its log)? 0 no, 1 yes,
 * 2 a multi-lock. */
int client_holds(struct run *r, int k);
/* What a FAULT line says of client_holds's answer: "", " (holding a lock)"... */
const char *holds_note(int held);
/* One of the clients in cand[0..n) (client indexes), one that holds a
 * lock 4 times in 5 when there is one -- then half the time one that holds
 * a multi-lock, if one does; -1 if n is 0. */
int pick_client(struct run *r, const int *cand, int n);

/* ---- the fault kinds of the other files ---- */
void fault_stop_follower(struct run *r, int l);  /* nemesis_pause.c */
void fault_stale_follower(struct run *r, int l);
void fault_stall_leader(struct run *r, int l);
void fault_partition_client(struct run *r, int l); /* nemesis_net.c */
void fault_deposed_leader(struct run *r, int l);
void fault_disk(struct run *r, enum fault_kind k, int l); /* nemesis_disk.c */
void fault_hostile(struct run *r, enum fault_kind k, int l); /* nemesis_hostile.c */
void fault_upgrade(struct run *r, int l);                    /* nemesis_upgrade.c */
void fault_kill_elect(struct run *r);                        /* nemesis_elect.c */
void fault_partition_elect(struct run *r);

/* ---- nemesis.c: the member fault's halves ---- */
/* Remove node t from the configuration (batonctl member remove; `kind`
 * names the fault in what it notes), then member_wipe it. 0, or -1 (left
 * as it was: a refusal, or a harness error counted). */
int member_out(struct run *r, int t, const char *kind);
/* Stop node t (SIGTERM) and wipe its data directory; it starts next with
 * --join (down until then). */
void member_wipe(struct run *r, int t);
/* Start node t (wiped) with --join and add it back as a voter (batonctl
 * member add, up to 3 tries). 0, or -1 (a harness error counted). */
int member_in(struct run *r, int t);

/* ---- nemesis_disk.c: nodes that exit on a failing disk ---- */
/* Node i died on its own: did it exit (no signal) during (or just after)
 * a disk fault on it, saying "I/O error" in its log since it last started?
 * Then that is the documented way out of a failed write, not a crash. */
int disk_exit_expected(struct run *r, int i);

#endif
