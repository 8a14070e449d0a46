/*
 * check.h -- the fault harness's checker (faultcheck): what it reads from
 * the logs (check_load.c) and the rules it applies (check.c). The rules
 * and the log formats are described in tests/fault/README.md.
 */
#ifndef BATON_TESTS_FAULT_CHECK_H
#define BATON_TESTS_FAULT_CHECK_H

#include <stddef.h>
#include <stdint.h>

#define CK_LOCK_MAX 32
#define CK_NO_STATUS (-999999)

/* One lock call of a client (ACQ ... GRANT | AFAIL). */
struct ck_attempt {
    int client;
    char lock[CK_LOCK_MAX];
    uint64_t t_sent;     /* ACQ: logged before the call, so before the send */
    uint64_t t_queued;   /* first QUEUED, 0 if none */
    uint64_t t_end;      /* GRANT or AFAIL, 0 if neither */
    int granted;
    uint64_t fence;      /* if granted */
    int status;          /* AFAIL's status, or 0 */
};

/* One grant a client was told of, and how it ended. */
struct ck_grant {
    int client;
    char lock[CK_LOCK_MAX];
    uint64_t fence, session;
    uint64_t t_grant;    /* the lock callback ran */
    uint64_t t_rel;      /* unlock called: the holder stopped writing; 0: never */
    uint64_t t_reld;     /* unlock's outcome; 0: none */
    int rel_status;      /* CK_NO_STATUS if no outcome */
    uint64_t t_told;     /* first notice: LOST, or unlock answered BATON_ELOST; 0: none */
    int lost_cb;         /* the lost callback ran for it */
    int n_ok, n_rej, n_err;
};

/* One decision of the fenced store. */
struct ck_write {
    uint64_t t;
    char lock[CK_LOCK_MAX];
    uint64_t fence;
    int accepted;
    uint64_t max;        /* rejected: the fence it had seen */
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

/* Read DIR/client-*.log, DIR/store.log and DIR/nemesis.log into d (zeroed
 * first). 0, or -1 with a message on stderr (missing or unreadable logs). */
int ck_load(const char *dir, struct ck_data *d);
void ck_free(struct ck_data *d);

#endif
