/*
 * cmd_elect.c -- `batonctl elect NAME VALUE -- CMD [ARGS...]`: campaign in
 * election NAME with VALUE (baton_campaign: wait in the candidates' FIFO
 * queue), run CMD while this process leads, stop CMD if leadership is lost
 * and resign when CMD exits: hold.c's machinery, as `batonctl lock` uses
 * it.
 *
 * `batonctl elect --observe NAME`: print the election's leader now and at
 * every change of leader or of its value (baton_observe), one line each,
 * until interrupted or --count lines; a leader is printed again only when
 * it is another one (another fence) or its value changed, so a resumed
 * watch's repeated state of the same leader prints nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "baton/baton.h"
#include "baton/baton_defs.h"
#include "client/ctl/ctl.h"

const char cmd_elect_help[] =
    "usage: batonctl elect NAME VALUE [--timeout MS] [--ttl MS] [--grace MS] [-v]\n"
    "                      [-e ENDPOINTS] -- CMD [ARGS...]\n"
    "       batonctl elect --observe NAME [--count N] [-e ENDPOINTS] [-o table|json]\n"
    "                      [--timeout MS]\n"
    "\n"
    "An election is a lock whose holder is the leader and whose value says who leads\n"
    "(an address, a name: VALUE, up to the cluster's --max-value, 4096 bytes by\n"
    "default). Candidates wait in FIFO order; the leader's fence is its term, larger\n"
    "than every earlier leader's.\n"
    "\n"
    "elect NAME VALUE -- CMD campaigns with VALUE, waits its turn, then runs CMD while\n"
    "it leads, and resigns when CMD exits (the next candidate leads at once). It\n"
    "works as `batonctl lock NAME -- CMD` does (see `batonctl lock --help`): the\n"
    "'--' may be left out when CMD does not start with '-'; SIGINT, SIGTERM and\n"
    "SIGHUP are passed on to CMD, or end the wait; if leadership is lost -- the\n"
    "session's lease ran out, the session expired or was ended by an operator\n"
    "(`batonctl expire`), or an operator forced the release (`batonctl release\n"
    "--force`) -- CMD gets SIGTERM at once and SIGKILL --grace ms later, and\n"
    "batonctl exits 76. CMD's environment gets BATON_ELECTION=NAME,\n"
    "BATON_FENCE=<the leader's fence> and BATON_SESSION=<session id>.\n"
    "\n"
    "Options of elect NAME VALUE:\n"
    "  --timeout MS   campaign at most MS milliseconds (0: lead only if nobody leads\n"
    "                 or waits). Default: as long as it takes\n"
    "  --ttl MS       session lease to ask for (default: the server's, 10 s)\n"
    "  --grace MS     when leadership is lost, how long CMD gets between SIGTERM and\n"
    "                 SIGKILL (default 5000; 0 sends SIGKILL at once)\n"
    "  -v, --verbose  report on stderr when leadership is taken and given up\n"
    "\n"
    "elect --observe NAME prints the leader now and then at every change of leader or\n"
    "of the leader's value (changes of the queue alone are not printed), until SIGINT\n"
    "or SIGTERM (exit 0) or --count N lines. Each line in a table is\n"
    "  REVISION LEADER-SESSION CLIENT FENCE VALUE\n"
    "separated by one space: the raft index of the change, the leader's session, its\n"
    "client name (\"-\" if none; blanks shown as \\x20), its fence and its value\n"
    "(printable UTF-8 as is, other bytes as \\xNN; \"-\" if none), or\n"
    "  REVISION no leader\n"
    "while nobody leads. If the watch behind it resumes after a leader change of\n"
    "the cluster and cannot tell what changed, it says so on stderr (see `batonctl\n"
    "watch --help`). JSON (-o json), one object per line:\n"
    "  {\"election\": S, \"revision\": N, \"leader_session\": N, \"client_name\": S|null,\n"
    "   \"fence\": N, \"value\": S|null}\n"
    "  leader_session and fence are 0, client_name and value null while nobody\n"
    "  leads; a value that is not valid UTF-8 comes as \"value_base64\" instead.\n"
    "The observer opens no session (a reader), so a principal of role read may run it.\n"
    "\n"
    "Exit status: as `batonctl lock` for elect NAME VALUE (CMD's status; 75: did not\n"
    "lead within --timeout; 76: leadership was lost while CMD ran; 69, 70, 126,\n"
    "127, 128+N); for --observe 0, or 69, 70 as `batonctl watch`; 64 on a usage\n"
    "error.\n";

enum { OPT_WAIT = CTL_OPT_CMD_BASE, OPT_TTL, OPT_GRACE, OPT_VERBOSE, OPT_OBSERVE, OPT_COUNT };

static const struct ctl_optspec elect_opts[] = {
    {"timeout", 0, 1, OPT_WAIT},
    {"ttl", 0, 1, OPT_TTL},
    {"grace", 0, 1, OPT_GRACE},
    {"verbose", 'v', 0, OPT_VERBOSE},
    {"observe", 0, 0, OPT_OBSERVE},
    {"count", 0, 1, OPT_COUNT},
    {NULL, 0, 0, 0},
};

/* ---- elect NAME VALUE -- CMD ---------------------------------------------- */

/* hold.c's acquire: campaign with the value (h->arg). */
static int campaign(baton_t *b, const struct ctl_hold *h, baton_lock_t **out)
{
    const char *value = h->arg;

    return baton_campaign(b, h->name, value, strlen(value), h->wait_ms, out);
}

/* ---- elect --observe NAME ------------------------------------------------- */

/* The leader last printed, to print only changes. */
struct observer {
    const char *name;
    enum ctl_format format;
    uint64_t count, printed; /* --count (0: none), lines printed */
    int any;                 /* a line was printed */
    uint64_t fence;          /* the last leader's fence; 0: nobody led */
    char *value;             /* its value (malloc'd), value_len bytes */
    size_t value_len;
};

/* A client name as one blank-free word for the table line. */
static void print_client(const char *s)
{
    const char *p = s;

    if (*s == '\0') {
        fputc('-', stdout);
        return;
    }
    while (*p != '\0') {
        size_t n = strcspn(p, " ");
        ctl_sanitize(stdout, p, n);
        p += n;
        if (*p == ' ') {
            fputs("\\x20", stdout);
            p++;
        }
    }
}

static void print_leader(const struct observer *ob, uint64_t revision, const baton_holder *h)
{
    struct jw w;

    if (ob->format == CTL_TABLE) {
        printf("%llu ", (unsigned long long)revision);
        if (h == NULL) {
            fputs("no leader\n", stdout);
            return;
        }
        printf("%llu ", (unsigned long long)h->session);
        print_client(h->client_name);
        printf(" %llu ", (unsigned long long)h->fence);
        if (h->value_len == 0)
            fputc('-', stdout);
        else
            ctl_sanitize(stdout, h->value, h->value_len);
        fputc('\n', stdout);
        return;
    }
    jw_init(&w, stdout);
    jw_begin_object(&w, NULL);
    jw_cstring(&w, "election", ob->name);
    jw_u64(&w, "revision", revision);
    jw_u64(&w, "leader_session", h ? h->session : 0);
    jw_cstring(&w, "client_name", h ? h->client_name : NULL);
    jw_u64(&w, "fence", h ? h->fence : 0);
    if (h)
        jw_value(&w, h->value, h->value_len);
    else
        jw_null(&w, "value");
    jw_end_object(&w);
    jw_finish(&w);
}

/* Is h (NULL: nobody) the leader last printed, with the same value? */
static int same_leader(const struct observer *ob, const baton_holder *h)
{
    if (!ob->any) return 0;
    if (h == NULL) return ob->fence == 0;
    return h->fence == ob->fence && h->value_len == ob->value_len &&
           (h->value_len == 0 || memcmp(h->value, ob->value, h->value_len) == 0);
}

/* ctl_watch_follow's on_event: print a changed leader; done after --count. */
static int observe_event(struct ctl_watch *cw, const baton_event *ev)
{
    struct observer *ob = cw->arg;
    const baton_holder *h;

    if (ev->state == NULL) return 0; /* SYNCED */
    h = ev->state->held && ev->state->n_holders > 0 ? &ev->state->holders[0] : NULL;
    if (same_leader(ob, h)) return 0;
    print_leader(ob, ev->revision, h);
    free(ob->value);
    ob->value = NULL;
    ob->value_len = 0;
    ob->fence = h ? h->fence : 0;
    if (h != NULL && h->value_len > 0 && (ob->value = malloc(h->value_len)) != NULL) {
        memcpy(ob->value, h->value, h->value_len);
        ob->value_len = h->value_len;
    }
    ob->any = 1;
    ob->printed++;
    return ob->count != 0 && ob->printed >= ob->count;
}

static int observe(struct ctl_opts *o, const char *name, uint64_t count)
{
    struct observer ob = {.name = name, .format = o->format, .count = count};
    struct ctl_watch cw = {.cmd = "elect --observe", .on_event = observe_event, .arg = &ob};
    int rv = ctl_conn_opts_check(o, "elect");

    if (rv != CTL_CONTINUE) return rv;
    ctl_watch_signals();
    rv = ctl_reader_open(o, "batonctl elect --observe", &cw.b);
    if (rv != 0) return rv;
    rv = baton_observe(cw.b, name, &cw.w);
    if (rv != 0) {
        ctl_error("elect --observe: %s",
                  baton_errmsg(cw.b)[0] ? baton_errmsg(cw.b) : baton_strerror(rv));
        baton_close(cw.b);
        return ctl_exit_for(rv);
    }
    rv = ctl_watch_follow(&cw);
    baton_watch_close(cw.w);
    baton_close(cw.b);
    free(ob.value);
    return rv;
}

/* ---- the command ----------------------------------------------------------- */

int cmd_elect(struct ctl_opts *o, int argc, char **argv)
{
    struct ctl_optiter it;
    struct ctl_hold h = {.what = "leadership of", .name_var = "BATON_ELECTION",
                         .client_name = "batonctl elect", .grace_ms = CTL_DEFAULT_GRACE_MS,
                         .wait_ms = -1, .acquire = campaign, .release = baton_resign};
    const char *arg, *value = NULL, *wait_arg = NULL;
    char err[CTL_ERR_SIZE], **cmd = NULL;
    uint64_t count = 0;
    int id, rv, observing = 0, count_set = 0, hold_opt = 0;

    ctl_opt_init(&it, argc, argv, 1);
    while (cmd == NULL &&
           (id = ctl_opt_next(&it, elect_opts, ctl_global_opts, &arg, err, sizeof err)) !=
               CTL_OPT_END) {
        if (id == CTL_OPT_POSITIONAL && h.name == NULL) {
            if (!ctl_lock_name_ok(arg))
                return ctl_usage_error("elect", "an election's name is 1 to %d bytes",
                                       BATON_MAX_NAME);
            h.name = arg;
        } else if (id == CTL_OPT_POSITIONAL && value == NULL && !observing) {
            if (strlen(arg) > BATON_MAX_VALUE)
                return ctl_usage_error("elect", "a VALUE is at most %d bytes", BATON_MAX_VALUE);
            value = arg;
        } else if (id == CTL_OPT_POSITIONAL && !observing) {
            cmd = argv + it.i - 1; /* CMD starts at its first word */
        } else if (id == CTL_OPT_DASHDASH && !observing) {
            cmd = argv + it.i;
        } else if (id == OPT_WAIT) {
            wait_arg = arg;
            if (ctl_parse_ms(arg, &h.wait_ms) != 0)
                return ctl_usage_error("elect", "bad --timeout '%s' (milliseconds)", arg);
        } else if (id == OPT_TTL) {
            hold_opt = 1;
            if (ctl_parse_ms(arg, &h.ttl_ms) != 0 || h.ttl_ms == 0)
                return ctl_usage_error("elect", "bad --ttl '%s' (positive milliseconds)", arg);
        } else if (id == OPT_GRACE) {
            hold_opt = 1;
            if (ctl_parse_ms(arg, &h.grace_ms) != 0)
                return ctl_usage_error("elect", "bad --grace '%s' (milliseconds)", arg);
        } else if (id == OPT_VERBOSE) {
            hold_opt = 1;
            h.verbose = 1;
        } else if (id == OPT_OBSERVE) {
            observing = 1;
        } else if (id == OPT_COUNT) {
            count_set = 1;
            if (ctl_parse_uint(arg, UINT32_MAX, &count) != 0 || count == 0)
                return ctl_usage_error("elect", "--count wants a positive number");
        } else {
            rv = ctl_common_opt(o, "elect", cmd_elect_help, id, arg, err);
            if (rv != CTL_CONTINUE) return rv;
        }
    }
    if (h.name == NULL) return ctl_usage_error("elect", "missing election NAME");
    if (observing) {
        if (value != NULL || hold_opt)
            return ctl_usage_error("elect", "--observe takes NAME, --count and the global "
                                            "options only");
        /* An observer waits for nothing: --timeout is the global one. */
        if (wait_arg != NULL && ctl_apply_global(o, CTL_OPT_TIMEOUT, wait_arg, err, sizeof err))
            return ctl_usage_error("elect", "%s", err);
        return observe(o, h.name, count);
    }
    if (count_set) return ctl_usage_error("elect", "--count goes with --observe");
    if (value == NULL) return ctl_usage_error("elect", "missing VALUE");
    if (cmd == NULL || cmd[0] == NULL) return ctl_usage_error("elect", "missing CMD to run");
    rv = ctl_conn_opts_check(o, "elect");
    if (rv != CTL_CONTINUE) return rv;
    h.argv = cmd;
    h.arg = value;
    return ctl_hold_run(o, &h);
}
