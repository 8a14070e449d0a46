/*
 * check.h -- the fault harness's checker (faultcheck): what it reads from
 * the logs (check_load.c) and the rules it applies (check.c). The rules
 * and the log formats are described in tests/fault/README.md.
 */
#ifndef BATON_TESTS_FAULT_CHECK_H
#define BATON_TESTS_FAULT_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CK_LOCK_MAX 32
#define CK_NO_STATUS (-999999)

/* Make room for one more element of arr (n used of cap), doubling it;
 * out of memory ends the checker (exit 2). */
#define CK_GROW(arr, n, cap)                                                                   \
    do {                                                                                       \
        if ((n) == (cap)) {                                                                    \
            size_t c_ = (cap) ? (cap) * 2 : 1024;                                              \
            void *p_ = realloc((arr), c_ * sizeof *(arr));                                     \
            if (p_ == NULL) {                                                                  \
                fprintf(stderr, "faultcheck: out of memory\n");                                \
                exit(2);                                                                       \
            }                                                                                  \
            (arr) = p_;                                                                        \
            (cap) = c_;                                                                        \
        }                                                                                      \
    } while (0)

/* One lock call of a client for one name (ACQ ... GRANT | AFAIL). A call
 * that takes several names at once (an atomic multi-lock) logs an ACQ per
 * name with one attempt id: each name is an attempt of its own here, and
 * the call's attempts are adjacent in ck_data.att, its first name first. */
struct ck_attempt {
    int client;
    uint64_t id;         /* the client's attempt number */
    int n_names;         /* names of the call (1: a single lock) */
    int first;           /* the call's first name (the multi-lock's handle) */
    char lock[CK_LOCK_MAX];
    int shared;          /* asked for in shared mode */
    uint32_t limit;      /* a semaphore's N, 0 (or 1) for a lock */
    uint64_t t_sent;     /* ACQ: logged before the call, so before the send */
    uint64_t t_queued;   /* first QUEUED, 0 if none (a multi-lock's, which
                            names its first name, applies to all its names) */
    uint64_t t_end;      /* GRANT or AFAIL, 0 if neither */
    int granted;
    uint64_t fence;      /* if granted */
    int status;          /* AFAIL's status, or 0 */
};

/* One grant a client was told of, and how it ended: one name of a hold.
 * The names of one hold (a multi-lock's) are adjacent in ck_data.gr, its
 * first name first; the unlock's outcome and the notice of a loss, which
 * the client logs for the first name only (the handle), are copied to
 * every name of the hold once the logs are read (ck_load). */
struct ck_grant {
    int client;
    uint64_t attempt;    /* the lock call's number: the names of one hold share it */
    size_t hold;         /* index in ck_data.gr of the hold's first name */
    int n_names;         /* names of the hold (1: a single lock) */
    int n_lost;          /* LOST lines that named this name (before copying) */
    int n_reld;          /* RELD lines that named this name (before copying) */
    char lock[CK_LOCK_MAX];
    int shared;          /* held in shared mode */
    uint32_t limit;      /* a semaphore's N, 0 (or 1) for a lock */
    uint64_t fence, session;
    uint64_t t_grant;    /* the lock callback ran */
    uint64_t t_rel;      /* unlock called: the holder stopped writing; 0: never */
    uint64_t t_reld;     /* unlock's outcome; 0: none */
    int rel_status;      /* CK_NO_STATUS if no outcome */
    uint64_t t_told;     /* first notice: LOST, or unlock answered BATON_ELOST; 0: none */
    int lost_cb;         /* the lost callback ran for it */
    int n_ok, n_rej, n_err;
};

/* One decision of the fenced store (store.c). */
struct ck_write {
    uint64_t t;
    char op;             /* W write, S read, P permit write, D permit done */
    char lock[CK_LOCK_MAX];
    uint64_t fence;
    int accepted;        /* D: 1 */
    uint64_t max;        /* rejected: the fence that shut it out */
    uint32_t limit;      /* P: the semaphore's N */
};

/* One nemesis line: FAULT (start) or HEAL (end) of a fault. */
struct ck_fault {
    uint64_t t;
    int heal;
    char kind[32];
    char detail[96];
};

/* An operator's taking (nemesis_admin.h): a FORCED or EXPIRED line. */
struct ck_taken {
    uint64_t t;          /* batonctl answered */
    uint64_t t_sent;     /* batonctl started: the taking may apply from here on */
    int expiry;          /* 0: a forced release, 1: an admin expiry */
    int now;             /* forced release: --now (the next holder at once) */
    int maybe;           /* batonctl could not tell whether it happened */
    char lock[CK_LOCK_MAX]; /* forced release: the lock */
    uint64_t fence;      /* forced release: the hold taken (0: maybe any) */
    uint64_t session;    /* forced release: its holder's; expiry: the session */
};

struct ck_data {
    struct ck_attempt *att;
    size_t n_att, cap_att;
    struct ck_grant *gr;
    size_t n_gr, cap_gr;
    struct ck_write *wr;
    size_t n_wr, cap_wr;
    struct ck_fault *fa;
    size_t n_fa, cap_fa;
    struct ck_taken *tk;
    size_t n_tk, cap_tk;
    int n_clients;
    int clients_ended;       /* logs that end with END */
    uint64_t sessions;       /* SESS lines */
    uint64_t session_fails;
    uint64_t lost_unmatched; /* LOST lines naming no grant of that client */
    uint64_t t_first, t_last;
    int parse_errors;
};

/* ---- the rules (check.c; the lock modes' in check_modes.c) ---- */

enum ck_vkind {
    V_FENCE_REUSE,
    V_STORE_ORDER,
    V_DOUBLE_GRANT,
    V_TWO_WRITERS,
    V_OVER_LIMIT,
    V_FENCE_ORDER,
    V_FENCE_GLOBAL,
    V_FIFO,
    V_RELEASE_AFTER_LOST,
    V_RELEASE_AFTER_FORCED,
    V_MULTI,
    V_STILL_HELD,
    V_HOSTILE,
    V_FLOOD,
    V_UPGRADE,
    V_TWO_LEADERS,
    V_LEADER_FENCE,
    V_OBSERVER,
    V_STALE_READ,
    V_COUNT
};

/* Count a violation of kind k; print the first few of each kind. */
void ck_violation(enum ck_vkind k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A log time as seconds since the first event, for messages. */
double ck_rel_s(uint64_t t);

/* Is g a permit of a semaphore (N > 1)? */
static inline int ck_is_permit(uint32_t limit)
{
    return limit > 1;
}

/*
 * One lock's grants (sorted by t_grant, with prefix maxima of their
 * fences: of all, and of the exclusive ones), the store's accepted writes
 * and reads of it (in time order), and for a semaphore the intervals in
 * which holders certainly held a permit (grant to unlock call, of the
 * grants whose unlock returned 0), as sorted starts and ends.
 */
struct ck_lockv {
    const char *lock;
    struct ck_grant **v;
    size_t n;
    uint64_t *premax;          /* premax[i]: highest fence of v[0..i) */
    uint64_t *premax_x;        /* the same over the exclusive grants */
    const struct ck_write **w;
    size_t nw;
    uint32_t limit;            /* a semaphore's N (the first grant's), 0 for a lock */
    uint64_t *ok_start, *ok_end;
    size_t n_ok;
};

/* Holders that certainly held lock L at time t: grants whose unlock
 * returned 0, from their grant to their unlock call. */
size_t ck_certain_at(const struct ck_lockv *L, uint64_t t);

/* check_modes.c */
/* Rule 2: replay the store's decisions on `lock` (store.c) and flag any
 * it got wrong. */
void ck_check_store(const struct ck_data *d, const char *lock);
/* Rule 3 for a semaphore: never more than N holders; returns the most
 * that certainly held at once. */
size_t ck_check_limit(const struct ck_lockv *L);
/* Rule 4 for a permit g (not released OK): did N others certainly hold
 * the semaphore at some moment between g's grant and `stop` (g cannot have
 * held it then)? */
int ck_permit_taken(const struct ck_lockv *L, const struct ck_grant *g, uint64_t stop);
/* Rule 5b: a grant known (GRANT logged) before another request was sent
 * has a lower fence, whatever the names. */
void ck_check_fence_global(const struct ck_data *d);

/* check_multi.c */
/* The multi-lock rule: a multi-lock's names are held as one -- granted all
 * with one fence or none, told lost once by the first name; and a name
 * whose release returned 0 is not still held (no BATON_EDEADLK after it).
 * Prints the multi-locks' numbers. */
void ck_check_multi(const struct ck_data *d);
/* Does hold g (any of its names) include `lock`? */
int ck_hold_has(const struct ck_data *d, const struct ck_grant *g, const char *lock);

/* What the hostile client's requests got (check_hostile.c). */
struct ck_hostile {
    int ran;                 /* DIR/hostile.log exists */
    uint64_t sent, refused_perm, refused_session, unanswered;
    uint64_t violations;     /* carried out, or answered otherwise than refused */
    int parse_errors;
};

/* Read DIR/hostile.log (if there is one) into h, printing a VIOLATION
 * line for each of the first requests not refused; rel_s prints times.
 * 0, or -1 if it exists and cannot be read. */
int ck_hostile(const char *dir, struct ck_hostile *h, double (*rel_s)(uint64_t));

/* What the hostile floods got (check_flood.c). */
struct ck_flood {
    uint64_t floods, nostart;
    uint64_t by_kind[4]; /* cache, reads, sessions, prehello */
    uint64_t cache[5];   /* sent, ran, refused ELIMIT, noleader, unanswered */
    uint64_t reads[5];   /* sent, answered, refused ELIMIT, noleader, unanswered */
    uint64_t sessions_most, sessions_capped, sessions_bystander;
    uint64_t pre[6];     /* big, big ETOOBIG, big closed, trickles, closed, served after */
    long long slowest_close_ms, mdb_growth, mdb_largest;
    uint64_t kept, lost; /* the leader's term through the floods */
    uint64_t violations;
    int parse_errors;
};

/* Read DIR/flood.log and DIR/nemesis.log's hostile-* lines (if any) into
 * f, printing a VIOLATION line for each of the first floods not bounded.
 * 0, or -1 if a log exists and cannot be read. */
int ck_flood(const char *dir, struct ck_flood *f);
void ck_flood_print(const struct ck_flood *f);
/* The value of " key=" in a log line, or dflt (check_flood.c). */
long long ck_kv(const char *line, const char *key, long long dflt);

/* What the upgrade fault saw (check_upgrade.c). */
struct ck_upgrade {
    uint64_t looks, held, raised, downgrades, refused;
    long long raise_ms;       /* the slowest raise */
    uint64_t violations;
    int parse_errors;
};

/* Read DIR/nemesis.log's "NOTE upgrade" lines into u, counting each
 * broken rule as a V_UPGRADE violation. 0, or -1 if the log cannot be
 * read. */
int ck_upgrade(const char *dir, struct ck_upgrade *u);
void ck_upgrade_print(const struct ck_upgrade *u);

/* What the election workers did (check_elect.c). */
struct ck_elect {
    int ran;                  /* DIR/elect-*.log exist */
    int campaigners, observers;
    uint64_t campaigns, refused_version, leads, proclaims, proclaimed_ok, resigned_ok;
    uint64_t told, told_late, killed_leading, unconfirmed, lost_unmatched;
    uint64_t watches, events[5], restarted, reads, reads_found, reads_nobody, reads_failed;
    uint64_t skips_told;      /* events after a change an observer missed, told of it */
    uint64_t silent;          /* leaders lost without notice */
    int parse_errors;
};

/* Read DIR/elect-*.log (if any) and judge the elections (rules 12-15),
 * with d's store decisions and lock grants; counts violations through
 * ck_violation, prints silent losses. 0, or -1 if a log cannot be read. */
int ck_elect(const char *dir, const struct ck_data *d, struct ck_elect *e);
void ck_elect_print(const struct ck_elect *e);

/* Read DIR/client-*.log, DIR/store.log and DIR/nemesis.log into d (zeroed
 * first). 0, or -1 with a message on stderr (missing or unreadable logs). */
int ck_load(const char *dir, struct ck_data *d);
void ck_free(struct ck_data *d);

#endif
