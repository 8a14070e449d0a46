/*
 * ctl.h -- batonctl's internal interfaces: options, exit codes, argument
 * parsing, output (tables and JSON), the requests to the cluster, and the
 * commands. Nothing here is public; batonctl is one program.
 *
 * Files:
 *   main.c          global options, the command table, usage, exit codes
 *   args.c          option iterator, number/duration/endpoint parsing
 *   output.c        column-aligned tables and a small JSON writer
 *   transport.c     requests to the leader or to one node, on libbaton's
 *                   sessionless requests (client/call.h); the security
 *                   options; the clock; a libbaton session with them
 *   auth_line.c     an auth file's line for a principal and its token
 *   cmd_status.c    batonctl status
 *   cmd_check.c     batonctl check
 *   cmd_top.c       batonctl top: every node's metrics, refreshed
 *   cmd_locks.c     batonctl locks [PREFIX]
 *   state_print.c   one lock's state for people and for JSON (lock-info, watch)
 *   cmd_lock_info.c batonctl lock-info NAME
 *   cmd_watch.c     batonctl watch NAME, watch --prefix PREFIX
 *   hold.c          run CMD while holding a lock or leading an election
 *   cmd_lock.c      batonctl lock NAME -- CMD...
 *   cmd_elect.c     batonctl elect NAME VALUE -- CMD..., elect --observe NAME
 *   cmd_sessions.c  batonctl sessions
 *   cmd_admin.c     batonctl release --force NAME, expire SESSION,
 *                   transfer-leader [ID], snapshot, member list|add|remove
 *   cmd_backup.c    batonctl snapshot save FILE, snapshot info FILE
 *   cmd_auth.c      batonctl auth hash NAME ROLE [OPTION...]
 */
#ifndef BATON_CTL_H
#define BATON_CTL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stddef.h>

#include "client/call.h"
#include "proto/buf.h"
#include "proto/errmsg.h"
#include "proto/msg.h"

/* The size of every error-message buffer of batonctl: an endpoint's
 * address, a few words of context and a server's ERROR message
 * (BATON_ERRMSG_SIZE, proto/errmsg.h) fit without being cut. */
#define CTL_ERR_SIZE (BATON_MAX_ADDR + 64 + BATON_ERRMSG_SIZE)

/* ---- exit codes (documented in `batonctl --help`) ---------------------- */

#define CTL_EXIT_OK 0
#define CTL_EXIT_USAGE 64      /* EX_USAGE: bad flags or arguments */
#define CTL_EXIT_UNAVAIL 69    /* EX_UNAVAILABLE: no node reachable, or no leader */
#define CTL_EXIT_SOFTWARE 70   /* EX_SOFTWARE: the server refused, protocol or internal error */
#define CTL_EXIT_TEMPFAIL 75   /* EX_TEMPFAIL: lock not acquired (busy / timed out) */
#define CTL_EXIT_LOST 76       /* lock: the lock was lost while CMD ran (CMD was stopped) */
#define CTL_EXIT_CANNOT_EXEC 126 /* lock: CMD exists but could not be executed */
#define CTL_EXIT_NOT_FOUND 127 /* lock: CMD not found */
/* 128+N: lock: CMD was killed by signal N, or batonctl was interrupted by
 * signal N while it waited for the lock. */

#define CTL_DEFAULT_ENDPOINTS "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003"
#define CTL_DEFAULT_TIMEOUT_MS 5000
#define CTL_MAX_ENDPOINTS 32

/* ---- global options -------------------------------------------------------- */

enum ctl_format { CTL_TABLE = 0, CTL_JSON };

struct ctl_opts {
    const char *endpoints;   /* -e, else $BATON_ENDPOINTS, else the default */
    enum ctl_format format;  /* -o */
    int64_t timeout_ms;      /* --timeout: bound on each admin request */
    int timeout_set;         /* --timeout was given explicitly */
    /* Security (NULL: none), each from its flag, else its environment
     * variable (the etcdctl names), else NULL. */
    const char *cacert;      /* --cacert, $BATON_CACERT: TLS on, nodes verified */
    const char *cert;        /* --cert, $BATON_CERT: client certificate */
    const char *key;         /* --key, $BATON_KEY: its private key */
    const char *token;       /* --token, $BATON_TOKEN: bearer token in HELLO */
};

/* ---- args.c: option iteration and value parsing ------------------------ */

/* One option a command accepts. `id` is returned by ctl_opt_next; ids of
 * the global options are below CTL_OPT_CMD_BASE. */
struct ctl_optspec {
    const char *lng;  /* "timeout" for --timeout; NULL ends the table */
    char shrt;        /* 't' for -t, or 0 */
    int has_arg;
    int id;
};

enum {
    CTL_OPT_HELP = 1,
    CTL_OPT_ENDPOINTS,
    CTL_OPT_OUTPUT,
    CTL_OPT_TIMEOUT,
    CTL_OPT_CACERT,
    CTL_OPT_CERT,
    CTL_OPT_KEY,
    CTL_OPT_TOKEN,
    CTL_OPT_CMD_BASE = 16
};

/* ctl_opt_next's non-option results. */
#define CTL_OPT_END 0          /* no more arguments */
#define CTL_OPT_POSITIONAL (-1) /* *arg is a positional argument */
#define CTL_OPT_DASHDASH (-2)  /* "--" seen; the rest starts at it->i */
#define CTL_OPT_ERROR (-3)     /* unknown option or missing value; err filled */

struct ctl_optiter {
    int argc;
    char **argv;
    int i;          /* next argument to look at */
};

/* The options every command accepts (-h, -e, -o, --timeout, --cacert,
 * --cert, --key, --token). */
extern const struct ctl_optspec ctl_global_opts[];

/* Start iterating argv[first..argc). */
void ctl_opt_init(struct ctl_optiter *it, int argc, char **argv, int first);

/*
 * Return the next option's id, with *arg set to its value (or NULL), or one
 * of CTL_OPT_END / POSITIONAL / DASHDASH / ERROR. `specs` is searched first,
 * then `specs2` (either may be NULL). Accepted forms: --name VALUE,
 * --name=VALUE, -x VALUE, -xVALUE. A lone "-" is a positional argument.
 */
int ctl_opt_next(struct ctl_optiter *it, const struct ctl_optspec *specs,
                 const struct ctl_optspec *specs2, const char **arg, char *err, size_t errlen);

/*
 * Apply a global option (id < CTL_OPT_CMD_BASE, except CTL_OPT_HELP) to o.
 * Returns 0, or -1 with err filled for a bad value.
 */
int ctl_apply_global(struct ctl_opts *o, int id, const char *arg, char *err, size_t errlen);

/*
 * Fill o's unset security options from the environment: BATON_CACERT,
 * BATON_CERT, BATON_KEY, BATON_TOKEN (empty counts as unset). main calls
 * it before parsing, so that flags override it.
 */
void ctl_security_from_env(struct ctl_opts *o);

/*
 * Check that o's security options go together: --cert and --key both or
 * neither, and only with --cacert (else a certificate would silently mean
 * plaintext); a token of at most BATON_MAX_TOKEN bytes. Whether the files
 * can be used is found out when a connection reads them. 0, or -1 with
 * err filled.
 */
int ctl_security_check(const struct ctl_opts *o, char *err, size_t errlen);

/* ctl_security_check, and the TLS files can be read and go together (a
 * trial context). For commands that would otherwise report a bad file once
 * per node. 0, or -1 with err filled. */
int ctl_security_usable(const struct ctl_opts *o, char *err, size_t errlen);

/*
 * Parse a duration: a non-negative integer of milliseconds, optionally with
 * a unit suffix "ms", "s" or "m". At most 2^31-1 ms. 0 or -1.
 */
int ctl_parse_ms(const char *s, int64_t *out);

/* Parse a decimal unsigned integer <= max. 0 or -1. */
int ctl_parse_uint(const char *s, uint64_t max, uint64_t *out);

/*
 * Split a comma-separated endpoint list into `out` (copies of each item with
 * surrounding blanks removed, in `storage`, which must be at least
 * strlen(list)+1 bytes). Each item must look like HOST:PORT (IPv6 hosts in
 * brackets). Returns the number of endpoints (>= 1), or -1 with err filled.
 */
int ctl_split_endpoints(const char *list, char *storage, const char **out, int max, char *err,
                        size_t errlen);

/* Split an address of proto/addr.h's grammar ("host:port", "[v6]:port")
 * into host (brackets removed) and port strings. 0 or -1. */
int ctl_split_hostport(const char *addr, char *host, size_t hostlen, char *port, size_t portlen);

/* Is this a lock name the protocol accepts (1..BATON_MAX_NAME bytes)? */
int ctl_lock_name_ok(const char *name);

/* ---- output.c: tables and JSON -------------------------------------------- */

/* A table of strings printed with aligned columns; row 0 is the header. */
struct table {
    int ncols;
    char **cells;   /* row-major, malloc'd strings */
    size_t n;       /* cells filled */
    size_t cap;
};

void table_init(struct table *t, int ncols);
/* Append one cell (printf-style) to the current row. */
void table_cell(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append raw bytes as one cell, made safe for a terminal (see ctl_sanitize). */
void table_cell_bytes(struct table *t, const char *s, size_t n);
/* Print with columns separated by two spaces; no trailing blanks. */
void table_print(const struct table *t, FILE *f);
void table_free(struct table *t);

/*
 * Write s[0..n) to f for a human: valid UTF-8 and printable ASCII as is,
 * every other byte (control characters, DEL, bytes of invalid UTF-8) as
 * \xNN. Returns the number of terminal columns used (one per character).
 */
size_t ctl_sanitize(FILE *f, const char *s, size_t n);

/*
 * Write s[0..n) to f as a quoted JSON string. '"' and '\\' are escaped,
 * control characters become \n, \t, \r, \b, \f or \u00XX, DEL becomes
 * \u007f, and every byte that is not part of a valid UTF-8 sequence
 * (overlong forms, surrogates and code points above U+10FFFF included)
 * becomes U+FFFD, so the output is always valid UTF-8 JSON.
 */
void json_write_string(FILE *f, const char *s, size_t n);

/* A streaming JSON writer that inserts the commas. Keys are NULL inside
 * arrays and for the outermost value. Output is compact, on one line. */
#define JW_MAX_DEPTH 16
struct jw {
    FILE *f;
    int depth;
    unsigned char has_items[JW_MAX_DEPTH];
};

void jw_init(struct jw *w, FILE *f);
void jw_begin_object(struct jw *w, const char *key);
void jw_end_object(struct jw *w);
void jw_begin_array(struct jw *w, const char *key);
void jw_end_array(struct jw *w);
void jw_string(struct jw *w, const char *key, const char *s, size_t n);
void jw_cstring(struct jw *w, const char *key, const char *s); /* NULL -> null */
void jw_u64(struct jw *w, const char *key, uint64_t v);
void jw_i64(struct jw *w, const char *key, int64_t v);
/* A number with `decimals` digits after the point; NaN or infinite: null. */
void jw_f64(struct jw *w, const char *key, double v, int decimals);
void jw_bool(struct jw *w, const char *key, int v);
void jw_null(struct jw *w, const char *key);
/* A value (a hold's or a request's: opaque bytes) under key "value": a
 * JSON string when v[0..n) is valid UTF-8 (control characters escaped,
 * so the string is the value exactly), else under key "value_base64" as
 * its RFC 4648 base64 (padded). n 0 (no value): "value": null. */
void jw_value(struct jw *w, const void *v, size_t n);
/* End the document with a newline. */
void jw_finish(struct jw *w);

/* Is s[0..n) valid UTF-8 (no overlong form, surrogate or code point
 * above U+10FFFF)? 1 or 0. */
int ctl_utf8_valid(const void *s, size_t n);

/* ---- transport.c: requests to the cluster ------------------------------ */

/* Milliseconds on the monotonic clock. */
int64_t ctl_now_ms(void);
/* Sleep ms milliseconds, but not past deadline (a ctl_now_ms value). */
void ctl_sleep_until(int64_t ms, int64_t deadline);

/*
 * A caller (client/call.h) with o's security options and the name
 * "batonctl": for the cluster's leader through o->endpoints when addr is
 * NULL, else for the node at addr only (its own STATUS, METRICS). 0, or
 * BATON_EINVAL (options that do not go together, unusable TLS files, a bad
 * address) / BATON_ENOMEM with err filled.
 */
int ctl_caller(const struct ctl_opts *o, const char *addr, baton__caller **out, char *err,
               size_t errlen);

/*
 * Send req on c and wait at most timeout_ms for its (first, with stream)
 * reply, into *rep (release with baton__reply_free). 0, the code of an
 * ERROR reply, a refusal (BATON_ETLS, BATON_EAUTH), or BATON_EUNAVAIL
 * when nobody answered in time, with err saying what happened ("ADDRESS:
 * ...") and, for a refusal, which flag to check.
 */
int ctl_call(const struct ctl_opts *o, baton__caller *c, const struct msg *req, int stream,
             int64_t timeout_ms, struct baton__reply *rep, char *err, size_t errlen);

/*
 * A stream's next reply (a push, a chunk) within timeout_ms: 0 with *rep
 * filled; BATON_ETIMEDOUT with the stream still open; any other code when
 * the stream ended (BATON_ECLOSED: the connection was lost), err filled.
 */
int ctl_read(baton__caller *c, int64_t timeout_ms, struct baton__reply *rep, char *err,
             size_t errlen);

/* Ask the node at addr for its STATUS before deadline. 0 or as ctl_call. */
int ctl_node_status(const struct ctl_opts *o, const char *addr, int64_t deadline,
                    struct baton__reply *rep, char *err, size_t errlen);

/*
 * Open a libbaton session (the blocking API) with o's endpoints and
 * security options, named client_name, asking for a lease of ttl_ms (0:
 * the server's); --timeout, when given, bounds connecting and each
 * request. 0 with *out, or the exit code after saying why on stderr.
 */
int ctl_session_open(const struct ctl_opts *o, const char *client_name, int64_t ttl_ms,
                     baton_t **out);
/* A reader (baton_opts.read_only): no session, for watch and observe,
 * which a principal of role read may run. As ctl_session_open. */
int ctl_reader_open(const struct ctl_opts *o, const char *client_name, baton_t **out);


/* ---- samples.c: a node's METRICS text, by key -------------------------------- */

/* One sample line: "name{labels}" and its value. */
struct ctl_sample {
    char *key;  /* malloc'd */
    double v;
};

struct ctl_samples {
    struct ctl_sample *v;   /* malloc'd; zero-initialise an empty set */
    size_t n, cap;
};

/* Add every sample line of the exposition text[0..n) (comments skipped;
 * the key runs to the line's last space) to s: 0, or -1 out of memory. */
int ctl_samples_parse(struct ctl_samples *s, const char *text, size_t n);
/* The same for every chunk of METRICS_R m. */
int ctl_samples_of(struct ctl_samples *s, const struct msg *m);
/* The value under key, or NAN if s has none. */
double ctl_sample(const struct ctl_samples *s, const char *key);
void ctl_samples_free(struct ctl_samples *s);

/* Ask the node at addr for its METRICS before deadline, adding its samples
 * to out (samples.c). 0 or as ctl_call (BATON_EPROTO: another reply;
 * BATON_ENOMEM). */
int ctl_node_metrics(const struct ctl_opts *o, const char *addr, int64_t deadline,
                     struct ctl_samples *out, char *err, size_t errlen);

/* ---- auth_line.c: the auth file's line for a token ---------------------------- */

#define CTL_TOKEN_BYTES 32 /* random bytes of a token made by batonctl (64 hex digits) */

/*
 * The auth-file line for principal `name` of `role` (admin, client or
 * read) holding `token`, with the n options opts[] (prefixes=a/,b/,
 * max-sessions=N, max-lock-delay=MS) after the credential:
 * "NAME ROLE sha256:<hex of SHA-256(token)> [OPTION...]" with no newline,
 * into line (cap bytes). The token itself is never in the line. 0, or -1
 * with err saying what is wrong with the arguments.
 */
int ctl_auth_line(const char *name, const char *role, const char *const *opts, int n,
                  const char *token, char *line, size_t cap, char *err, size_t errlen);

/* A fresh random token: CTL_TOKEN_BYTES bytes as lower-case hex into out
 * (2 * CTL_TOKEN_BYTES + 1 bytes). 0 or -1. */
int ctl_new_token(char *out);

/*
 * Send req to the cluster's leader: o->endpoints, REDIRECT followed,
 * retried on NO_LEADER or a broken connection, for at most o->timeout_ms.
 * Returns 0 with the reply, the code of an ERROR reply, or BATON_EUNAVAIL
 * when no leader answered in time (err says what was seen last), or
 * BATON_EINVAL for a bad endpoint list or security options.
 */
int ctl_leader_request(const struct ctl_opts *o, const struct msg *req, struct baton__reply *rep,
                       char *err, size_t errlen);

/*
 * ctl_leader_request for a stream (WATCH, SNAPSHOT_SAVE): on success the
 * caller it came on is left in *keep, for ctl_read (the command frees it
 * with baton__caller_free). On failure nothing is left open.
 */
int ctl_leader_open(const struct ctl_opts *o, const struct msg *req, struct baton__reply *rep,
                    baton__caller **keep, char *err, size_t errlen);

/* ---- main.c: shared helpers for the commands ---------------------------- */

/* Print "batonctl: MESSAGE" to stderr. */
void ctl_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print a usage error for command `cmd` (NULL: global) and return 64. */
int ctl_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Handle an ctl_opt_next result that every command treats alike: -h (print
 * help_text, exit 0), a parse error or stray argument (usage error, 64), a
 * global option (applied; returns CTL_CONTINUE). Returns CTL_CONTINUE or
 * the exit code to return at once. Call it for whatever the command does
 * not handle itself (CTL_OPT_END excluded).
 */
#define CTL_CONTINUE (-1)
int ctl_common_opt(struct ctl_opts *o, const char *cmd, const char *help_text, int id,
                   const char *arg, const char *err);

/*
 * Before a command sends anything: can the endpoint list be split and the
 * TLS files be used (ctl_security_usable)? CTL_CONTINUE, or the exit code
 * of the usage error (64) it printed. Every command that talks to the
 * cluster calls it, so that ctl_exit_for never meets a usage error.
 */
int ctl_conn_opts_check(const struct ctl_opts *o, const char *cmd);

/* The exit code for a BATON_E* error of an admin request (70 for the
 * cluster's refusals, BATON_EINVAL included). */
int ctl_exit_for(int err);

/* ---- hold.c: run CMD while holding a lock or leading an election ------- */

#define CTL_DEFAULT_GRACE_MS 5000 /* --grace: from SIGTERM to SIGKILL */

/* What a command holds while CMD runs, and how it takes it. */
struct ctl_hold {
    const char *what;         /* what is held, for messages: "lock", "leadership of" */
    const char *name;         /* the (first) name */
    const char *name_var;     /* CMD's variable naming it: "BATON_LOCK" */
    const char *client_name;  /* the session's (batonctl sessions shows it) */
    int64_t ttl_ms;           /* the lease asked for; 0: the server's */
    int64_t grace_ms;         /* from SIGTERM to SIGKILL when the hold is lost */
    int64_t wait_ms;          /* how long the acquire waits (-1: forever), for messages */
    int verbose;              /* say on stderr when it is taken and released */
    char **argv;              /* CMD and its arguments */
    /* Take the hold (blocking; the signal thread may close b meanwhile):
     * 0 with *out, or a BATON_E* code with baton_errmsg(b) saying why. */
    int (*acquire)(baton_t *b, const struct ctl_hold *h, baton_lock_t **out);
    const void *arg;          /* the command's, for acquire */
    int (*release)(baton_lock_t *l); /* baton_unlock, baton_resign */
};

/*
 * Connect (o's endpoints and security options, h's client name and ttl),
 * take the hold, run CMD with name_var=NAME, BATON_FENCE and BATON_SESSION
 * in its environment, stop CMD if the hold is lost (SIGTERM, SIGKILL after
 * grace_ms), release the hold when CMD exits. Returns the exit code: CMD's
 * status, or one of CTL_EXIT_* (hold.c's top comment; batonctl lock --help).
 * Takes SIGINT, SIGTERM and SIGHUP for the rest of the process.
 */
int ctl_hold_run(const struct ctl_opts *o, const struct ctl_hold *h);

/* ---- state_print.c: one lock's state, for people and for scripts ------- */

/* What a watch event adds to the state it carries. */
struct ctl_event_tag {
    uint64_t seq;      /* the event's number in this watch, from 1 */
    const char *kind;  /* "state", "change", "gap" */
};

/*
 * Print lock `name`'s state st to stdout: lock-info's block of lines and
 * tables, or its JSON object on one line (`batonctl lock-info --help`
 * lists the fields). ids: the wire form st was made from, for the waiter
 * ids it alone has (NULL: none printed). ev: a watch event's number and
 * kind, printed before the block (table) or as "seq" and "kind" (JSON);
 * NULL for none.
 */
void ctl_print_state(const char *name, const baton_lock_state *st,
                     const struct msg_lock_state *ids, enum ctl_format f,
                     const struct ctl_event_tag *ev);

/* ---- cmd_watch.c: following a watch (watch, elect --observe) ------------ */

/* A watch being followed. */
struct ctl_watch {
    const char *cmd;       /* the command, for messages: "watch" */
    baton_t *b;            /* the session it runs in */
    baton_watch_t *w;
    /* Each event, in order; returns 1 when the command is done. Runs
     * before synced and last take the event in. */
    int (*on_event)(struct ctl_watch *cw, const baton_event *ev);
    void *arg;             /* the command's */
    int synced;            /* a SYNCED event was seen: later ones are resumptions */
    uint64_t last;         /* the revision of the last event */
};

/* Take SIGINT and SIGTERM as "stop following" (ctl_watch_follow ends with
 * 0 within 200 ms). Call before opening the session. */
void ctl_watch_signals(void);

/*
 * Give every event of cw->w to cw->on_event, saying on stderr when one is
 * a resumption's (a GAP; a SYNCED after the first: restarted or not), until
 * on_event returns 1 or a signal came (0), or the watch ends: 70 when the
 * cluster ended it (BATON_EPERM), 69 if the session was closed.
 */
int ctl_watch_follow(struct ctl_watch *cw);

/* Name of a node role for output: "leader", "follower", ... */
const char *ctl_role_name(int role);

/* ---- the commands ----------------------------------------------------------
 * Each gets the global options (already applied) and its own arguments
 * (argv[0] is the command's name); it parses its options, which may also
 * be global ones, and returns the exit code. */

int cmd_status(struct ctl_opts *o, int argc, char **argv);
int cmd_top(struct ctl_opts *o, int argc, char **argv);
int cmd_check(struct ctl_opts *o, int argc, char **argv);
int cmd_locks(struct ctl_opts *o, int argc, char **argv);
int cmd_lock_info(struct ctl_opts *o, int argc, char **argv);
int cmd_watch(struct ctl_opts *o, int argc, char **argv);
int cmd_lock(struct ctl_opts *o, int argc, char **argv);
int cmd_sessions(struct ctl_opts *o, int argc, char **argv);
int cmd_release(struct ctl_opts *o, int argc, char **argv);
int cmd_expire(struct ctl_opts *o, int argc, char **argv);
int cmd_transfer(struct ctl_opts *o, int argc, char **argv);
int cmd_snapshot(struct ctl_opts *o, int argc, char **argv);
/* cmd_backup.c: `snapshot save FILE` and `snapshot info FILE` (cmd_snapshot
 * calls them once the arguments are parsed). */
int cmd_backup_save(struct ctl_opts *o, const char *path);
int cmd_backup_info(struct ctl_opts *o, const char *path);
int cmd_member(struct ctl_opts *o, int argc, char **argv);
int cmd_elect(struct ctl_opts *o, int argc, char **argv);
int cmd_auth(struct ctl_opts *o, int argc, char **argv);

extern const char cmd_status_help[];
extern const char cmd_top_help[];
extern const char cmd_check_help[];
extern const char cmd_locks_help[];
extern const char cmd_lock_info_help[];
extern const char cmd_watch_help[];
extern const char cmd_lock_help[];
extern const char cmd_sessions_help[];
extern const char cmd_release_help[];
extern const char cmd_expire_help[];
extern const char cmd_transfer_help[];
extern const char cmd_snapshot_help[];
extern const char cmd_member_help[];
extern const char cmd_elect_help[];
extern const char cmd_auth_help[];

#endif /* BATON_CTL_H */
