/*
 * w9.h -- what the parts of W9, the election workload, share: the run's
 * state (w9.c), its candidates (w9_cand.c) and its observers
 * (w9_observe.c). The victim process (w9_victim.c) shares only the
 * election's name and the line protocol below.
 *
 * The candidates stand in one FIFO line that mirrors the election's queue
 * in the cluster: line[0] leads, line[1] leads next. Half of them are
 * local (sessions of this process, on its loop), half are victims (each
 * its own lockbench --victim process, killed with SIGKILL), and they
 * alternate in the line, so the rounds alternate: a local leader resigns
 * (a clean round), then a victim leader is killed (a kill round: its
 * session's lease must run out), and so on. After its round a resigned
 * candidate campaigns again, at the end of the line; a killed one is
 * replaced by a new victim process there.
 *
 * Victim protocol, one line each way (ASCII, '\n'):
 *   victim -> lockbench   "q POS"       the campaign is queued at POS
 *                         "l FENCE T"   it leads with FENCE since T
 *                                       (CLOCK_MONOTONIC ns, one clock per
 *                                       machine)
 *                         "r"           renewed: a request of the session
 *                                       was just answered (see below)
 *                         "x WHY"       it lost its leadership, or failed
 *   lockbench -> victim   "k"           about to be killed: renew first
 *   EOF on its stdin: close the session and exit.
 * Before a kill the victim makes one request (a try-lock of a name of its
 * own) and says "r" when it is answered: the cluster then last heard of
 * the session at most that round trip before the kill, so the lease ends
 * about ttl after the kill, not up to ttl/3 earlier (the keepalives'
 * period), and kill + ttl is the reference the line's "expiry" figures
 * are counted from.
 */
#ifndef BATON_BENCH_W9_H
#define BATON_BENCH_W9_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "baton/baton_async.h"
#include "tests/bench/bench.h"

#define W9_ELECTION "w9"
#define W9_VALUE_MAX 40
#define W9_LINE_MAX 128

enum w9kind { W9_LOCAL, W9_VICTIM };

enum w9state {
    C_OPENING,  /* local: its session is being opened; victim: spawned */
    C_IDLE,     /* local: open, not campaigning */
    C_CAMPAIGN, /* the campaign is sent, not yet queued or leading */
    C_QUEUED,
    C_LEADING,
    C_RESIGNING, /* local: the resign (unlock) is in flight */
    C_RENEWING,  /* victim: "k" sent, waiting for "r" */
    C_GONE       /* victim: killed or exited; local: failed */
};

struct w9;

struct w9cand {
    struct w9 *w;
    enum w9kind kind;
    int id;                   /* locals 0..; victims 0.. in spawn order */
    char value[W9_VALUE_MAX]; /* the campaign's value, who it is */
    enum w9state state;
    uint64_t fence;           /* while it leads */
    /* local */
    baton_async_t *ac;
    /* victim */
    uv_process_t proc;
    uv_pipe_t in, out;        /* its stdin (we write), its stdout (we read) */
    uv_write_t wreq;
    char buf[W9_LINE_MAX];
    size_t blen;
    int open_handles;         /* of proc, in, out: freed at 0 */
    bool exited;
};

struct w9obs {
    struct w9 *w;
    int id;
    baton_async_t *ac;
    baton_async_watch_t *watch;
    bool synced;          /* the watch's first SYNCED arrived */
    bool dead;            /* its session or watch failed: left out */
    uint64_t fence;       /* the leader it knows (0: none yet) */
    char value[W9_VALUE_MAX];
    int64_t t;            /* when it heard of that leader */
    bool excused;         /* a GAP or a restart since the round began */
};

enum w9phase { P_SETUP, P_ROUND, P_REQUEUE, P_END };

struct w9 {
    const struct cfg *cfg;
    uv_loop_t loop;
    uv_timer_t timer;     /* the bound of the current step */
    uv_timer_t retry;     /* the first campaign again, after BATON_EVERSION */
    int n_retries;
    char exe[4096];       /* this program, for the victims */
    enum w9phase phase;
    int n_open_pending;   /* sessions being opened at the start */
    /* candidates */
    int n_local;
    struct w9cand *local;
    int n_victims;        /* victims spawned so far */
    struct w9cand **line; /* FIFO, line[0] the leader */
    int line_n, line_cap;
    int setup_next;       /* candidates put in line so far */
    struct w9cand *waiting; /* put in line, not yet queued */
    /* observers */
    struct w9obs *obs;
    int n_obs;
    /* the round in progress */
    int round;            /* 0: before the first; then 1.. */
    enum w9kind kind;     /* of the leader removed (W9_LOCAL: a resign) */
    struct w9cand *gone;  /* the leader removed */
    struct w9cand *next;  /* the expected next leader (line[1]) */
    int64_t t0;           /* resign sent, or SIGKILL sent */
    bool lead_known;
    uint64_t lead_fence;
    int64_t t_lead;
    uint64_t last_fence;  /* the previous leader's */
    /* results */
    struct hist resign_lead, resign_seen, kill_lead, kill_seen;
    struct hist expiry_lead, expiry_seen; /* from kill + ttl; a time before it as 0 */
    int resign_rounds, kill_rounds;
    int expiry_early;     /* such times before kill + ttl */
    uint64_t errors, violations, observer_gaps;
    int64_t t_start;
    int ends;             /* sessions being closed at the end, and victim
                             processes whose handles are not all closed */
    int rc;
};

/* ---- w9.c ---- */
/* A candidate leads (local: its campaign callback; victim: its "l" line). */
void w9_leads(struct w9 *w, struct w9cand *c, uint64_t fence, int64_t t);
/* A candidate's campaign is queued (or, for the first, it leads). */
void w9_queued(struct w9 *w, struct w9cand *c);
/* A victim said "r": kill it now. */
void w9_renewed(struct w9 *w, struct w9cand *c);
/* The first campaign was refused with BATON_EVERSION: a fresh cluster
 * raises its feature level to elections within a second or so of its
 * leader's start. Try again shortly; false if that is not the case. */
bool w9_retry_campaign(struct w9 *w, struct w9cand *c, int status);
/* Something failed that the run cannot go on without. */
void w9_abort(struct w9 *w, const char *why);
/* Check whether the current step is done (after any event). */
void w9_step(struct w9 *w);
/* A session closed at the end, or a victim's handles all closed. */
void w9_closed(struct w9 *w);
/* Victim c is about to be freed: no pointer of the run may keep it. */
void w9_forget(struct w9 *w, struct w9cand *c);

/* ---- w9_cand.c ---- */
int w9_local_open(struct w9 *w, struct w9cand *c);
int w9_local_campaign(struct w9cand *c);
int w9_local_resign(struct w9cand *c);
/* Start a new victim process; NULL on failure (logged). */
struct w9cand *w9_victim_spawn(struct w9 *w);
int w9_victim_renew(struct w9cand *c);
int w9_victim_kill(struct w9cand *c);
/* The end: close every candidate's session (and victims' stdin). */
void w9_cands_close(struct w9 *w);
/* The end took too long: SIGKILL the victims still running. */
void w9_victims_kill_all(struct w9 *w);

/* ---- w9_observe.c ---- */
int w9_obs_open(struct w9 *w, struct w9obs *o);
/* Every live observer synced / knows leader `fence`; the time the last one heard of it. */
bool w9_obs_all_synced(const struct w9 *w);
bool w9_obs_all_know(const struct w9 *w, uint64_t fence, int64_t *t_last);
/* A round starts: forget the excuses. */
void w9_obs_round(struct w9 *w);
/* The round timed out: count (and log) the observers that did not hear of
 * `fence` without a GAP or a restart to excuse it; returns that count. */
int w9_obs_missed(struct w9 *w, uint64_t fence);
/* The leader's value every observer heard must be `value`. */
int w9_obs_check_value(struct w9 *w, uint64_t fence, const char *value);
void w9_obs_close(struct w9 *w);

#endif /* BATON_BENCH_W9_H */
