/*
 * cmd_lock.c -- `batonctl lock NAME... [--timeout MS] -- CMD [ARGS...]`:
 * take a lock (or, with several names, an atomic multi-lock of all of
 * them), with a value if asked, and run CMD while holding it (hold.c:
 * signals, a lost lock, the release and the exit status).
 */
#include <stdlib.h>
#include <string.h>

#include "baton/baton.h"
#include "baton/baton_defs.h"
#include "client/ctl/ctl.h"
#include "proto/lockreq.h"

const char cmd_lock_help[] =
    "usage: batonctl lock NAME [NAME...] [--timeout MS] [--ttl MS] [--lock-delay MS]\n"
    "                     [--grace MS] [-v] [--shared | --limit N] [--value V]\n"
    "                     [-e ENDPOINTS] -- CMD [ARGS...]\n"
    "\n"
    "Acquires lock NAME (waiting in the lock's FIFO queue), runs CMD while holding it,\n"
    "releases it when CMD exits, and exits with CMD's exit status. The '--' may be\n"
    "left out when there is one NAME and CMD does not start with '-'.\n"
    "\n"
    "Several NAMEs (up to 64, before the '--') are taken atomically: all of them at\n"
    "once, with one fencing token, or none. The request joins every name's queue at\n"
    "once, so two such commands over the same names in any order never deadlock.\n"
    "\n"
    "Options:\n"
    "  --timeout MS   wait at most MS milliseconds for the lock; 0 takes it only if it\n"
    "                 is free and nobody is queued. Default: wait as long as it takes.\n"
    "                 (Given before `lock`, --timeout bounds connecting and every\n"
    "                 request to the cluster instead.)\n"
    "  --ttl MS       session lease to ask for (default: the server's, 10 s)\n"
    "  --lock-delay MS  if this session expires while holding the lock, keep the lock\n"
    "                 from everyone for MS (0: none); default: the server's --lock-delay\n"
    "  --shared       take the lock in shared mode: any number of shared holders at\n"
    "                 once, or one exclusive holder (FIFO: a shared request behind a\n"
    "                 waiting exclusive one waits)\n"
    "  --limit N      take one of the N permits of semaphore NAME (2..10000): at most\n"
    "                 N holders at once, FIFO. The first request fixes N while NAME is\n"
    "                 held or waited for; another N is refused\n"
    "  --grace MS     when the lock is lost, how long CMD gets between SIGTERM and\n"
    "                 SIGKILL (default 5000; 0 sends SIGKILL at once)\n"
    "  --value V      the hold's value (up to the cluster's --max-value, 4096 bytes by\n"
    "                 default): who holds the lock, for every reader to see in\n"
    "                 lock-info and watch; kept with the request while it waits. One\n"
    "                 NAME only\n"
    "  -v, --verbose  report on stderr when the lock is acquired and released\n"
    "\n"
    "CMD's environment gets BATON_LOCK=NAME (the first), BATON_FENCE=<fencing token> and\n"
    "BATON_SESSION=<session id>. Pass BATON_FENCE to the resource the lock protects.\n"
    "\n"
    "Signals: SIGINT, SIGTERM and SIGHUP sent to batonctl while CMD runs are passed\n"
    "on to CMD (a Ctrl-C typed at the terminal reaches CMD directly and is not sent\n"
    "twice). While batonctl still waits for the lock, they end the wait (the queued\n"
    "request is withdrawn) and batonctl exits with 128+N.\n"
    "\n"
    "Losing the lock: batonctl keeps the session alive while CMD runs. If the lock\n"
    "is lost all the same -- the session's lease ran out (batonctl could not reach\n"
    "the cluster's leader for --ttl), the session expired in the cluster, or an\n"
    "operator forced the lock's release -- CMD is sent SIGTERM at once and SIGKILL\n"
    "--grace milliseconds later if it has not exited, and batonctl exits with 76\n"
    "whatever CMD's status (which it reports on stderr). batonctl gives the lock up\n"
    "no later than the cluster could grant it to anyone else, but CMD's SIGTERM\n"
    "handling and --grace add to that: keep --grace short, or pass BATON_FENCE to\n"
    "the resource. Only CMD itself is signalled, not processes it started.\n"
    "\n"
    "Exit status:\n"
    "  CMD's status   CMD ran; 128+N if it was killed by signal N\n"
    "  64             usage error\n"
    "  69             cluster unavailable (no leader reachable within the timeouts)\n"
    "  70             the cluster refused the request, or another error\n"
    "  75             lock not acquired: busy (--timeout 0) or timed out\n"
    "  76             the lock was lost while CMD ran (CMD was stopped), or was found\n"
    "                 lost when it was released\n"
    "  126, 127       CMD could not be executed / was not found\n"
    "  128+N          interrupted by signal N while waiting for the lock\n";

enum { OPT_WAIT = CTL_OPT_CMD_BASE, OPT_TTL, OPT_GRACE, OPT_VERBOSE, OPT_DELAY, OPT_SHARED,
       OPT_LIMIT, OPT_VALUE };

static const struct ctl_optspec lock_opts[] = {
    {"timeout", 0, 1, OPT_WAIT},
    {"ttl", 0, 1, OPT_TTL},
    {"grace", 0, 1, OPT_GRACE},
    {"lock-delay", 0, 1, OPT_DELAY},
    {"shared", 0, 0, OPT_SHARED},
    {"limit", 0, 1, OPT_LIMIT},
    {"value", 0, 1, OPT_VALUE},
    {"verbose", 'v', 0, OPT_VERBOSE},
    {NULL, 0, 0, 0},
};

/* What cmd_lock asks for: the names and the acquire's arguments. */
struct lock_req {
    const char *names[BATON_MAX_MANY];
    size_t n_names;
    baton_lock_args la;
};

/* hold.c's acquire: one name with baton_lock_with (which takes a value),
 * several atomically with baton_lock_many. */
static int acquire(baton_t *b, const struct ctl_hold *h, baton_lock_t **out)
{
    const struct lock_req *r = h->arg;

    if (r->n_names == 1) return baton_lock_with(b, r->names[0], &r->la, out);
    return baton_lock_many(b, r->names, r->n_names, &r->la, out);
}

int cmd_lock(struct ctl_opts *o, int argc, char **argv)
{
    struct ctl_optiter it;
    struct lock_req req = {.n_names = 0};
    struct ctl_hold h = {.what = "lock", .name_var = "BATON_LOCK",
                         .client_name = "batonctl lock", .grace_ms = CTL_DEFAULT_GRACE_MS,
                         .wait_ms = -1, .acquire = acquire, .arg = &req,
                         .release = baton_unlock};
    const char *arg, *value = NULL;
    int dashdash = 0;
    char err[CTL_ERR_SIZE], **cmd = NULL;
    int64_t delay_ms = -2;
    uint64_t limit = 0;
    int id, rv, mode = BATON_MODE_EXCLUSIVE;

    /* With a '--', every word before it that is no option is a NAME. */
    for (int i = 1; i < argc && !dashdash; i++) dashdash = strcmp(argv[i], "--") == 0;
    ctl_opt_init(&it, argc, argv, 1);
    while (cmd == NULL &&
           (id = ctl_opt_next(&it, lock_opts, ctl_global_opts, &arg, err, sizeof err)) !=
               CTL_OPT_END) {
        if (id == CTL_OPT_POSITIONAL && (req.n_names == 0 || dashdash)) {
            if (req.n_names == BATON_MAX_MANY)
                return ctl_usage_error("lock", "at most %d NAMEs", BATON_MAX_MANY);
            if (!ctl_lock_name_ok(arg))
                return ctl_usage_error("lock", "a lock name is 1 to %d bytes", BATON_MAX_NAME);
            for (size_t i = 0; i < req.n_names; i++)
                if (strcmp(req.names[i], arg) == 0)
                    return ctl_usage_error("lock", "lock '%s' named twice", arg);
            req.names[req.n_names++] = arg;
        } else if (id == CTL_OPT_POSITIONAL) {
            cmd = argv + it.i - 1;  /* CMD starts at its first word */
        } else if (id == CTL_OPT_DASHDASH) {
            cmd = argv + it.i;
        } else if (id == OPT_WAIT) {
            if (ctl_parse_ms(arg, &h.wait_ms) != 0)
                return ctl_usage_error("lock", "bad --timeout '%s' (milliseconds)", arg);
        } else if (id == OPT_TTL) {
            if (ctl_parse_ms(arg, &h.ttl_ms) != 0 || h.ttl_ms == 0)
                return ctl_usage_error("lock", "bad --ttl '%s' (positive milliseconds)", arg);
        } else if (id == OPT_DELAY) {
            if (ctl_parse_ms(arg, &delay_ms) != 0 || delay_ms > INT32_MAX)
                return ctl_usage_error("lock", "bad --lock-delay '%s' (milliseconds)", arg);
        } else if (id == OPT_GRACE) {
            if (ctl_parse_ms(arg, &h.grace_ms) != 0)
                return ctl_usage_error("lock", "bad --grace '%s' (milliseconds)", arg);
        } else if (id == OPT_SHARED) {
            mode = BATON_MODE_SHARED;
        } else if (id == OPT_LIMIT) {
            if (ctl_parse_uint(arg, BATON_MAX_LIMIT, &limit) != 0 || limit < 2)
                return ctl_usage_error("lock", "bad --limit '%s' (2..%d)", arg, BATON_MAX_LIMIT);
        } else if (id == OPT_VALUE) {
            if (strlen(arg) > BATON_MAX_VALUE)
                return ctl_usage_error("lock", "a --value is at most %d bytes", BATON_MAX_VALUE);
            value = arg;
        } else if (id == OPT_VERBOSE) {
            h.verbose = 1;
        } else {
            rv = ctl_common_opt(o, "lock", cmd_lock_help, id, arg, err);
            if (rv != CTL_CONTINUE) return rv;
        }
    }
    if (req.n_names == 0) return ctl_usage_error("lock", "missing lock NAME");
    if (!lockreq_mode_fits((uint32_t)mode, (uint32_t)limit))
        return ctl_usage_error("lock", "--shared and --limit do not combine: a semaphore's "
                                       "holders each hold one permit");
    if (value != NULL && req.n_names > 1)
        return ctl_usage_error("lock", "--value is for one NAME: an atomic multi-lock has none");
    if (cmd == NULL || cmd[0] == NULL) return ctl_usage_error("lock", "missing CMD to run");
    rv = ctl_conn_opts_check(o, "lock");
    if (rv != CTL_CONTINUE) return rv;

    h.name = req.names[0];
    h.argv = cmd;
    req.la.wait_ms = h.wait_ms >= 0 ? h.wait_ms : BATON_WAIT_FOREVER;
    /* -2: not given (server default); 0 on the command line: none. */
    req.la.lock_delay_ms = delay_ms == -2  ? BATON_LOCK_DELAY_DEFAULT
                           : delay_ms == 0 ? BATON_LOCK_DELAY_NONE
                                           : (int32_t)delay_ms;
    req.la.mode = (uint8_t)mode;
    req.la.limit = (uint32_t)limit;
    req.la.value = value;
    req.la.value_len = value != NULL ? strlen(value) : 0;
    return ctl_hold_run(o, &h);
}
