/*
 * cmd_watch.c -- `batonctl watch NAME` and `batonctl watch --prefix
 * PREFIX`: follow one lock, or every lock whose name starts with PREFIX,
 * with libbaton's watch (baton_watch), and print every event: the state
 * at the start, then each change with its revision, until interrupted or
 * --count events were printed after the start.
 *
 * Resumption after a broken connection or a leader change is libbaton's
 * (baton.h, "Watches"): batonctl prints what the library yields and says
 * on stderr what it means -- a GAP (that lock changed meanwhile in ways
 * not seen), a SYNCED with restarted (the states before it are the whole
 * state now: forget what was known), or a SYNCED without (nothing was
 * missed).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "baton/baton.h"
#include "baton/baton_defs.h"
#include "client/ctl/ctl.h"

const char cmd_watch_help[] =
    "usage: batonctl watch NAME [--count N] [-e ENDPOINTS] [-o table|json] [--timeout MS]\n"
    "       batonctl watch --prefix PREFIX [--count N] [...]\n"
    "\n"
    "Prints lock NAME (or, with --prefix, every lock whose name starts with PREFIX;\n"
    "\"\" is every lock) as lock-info does, now and then every time a holder, a\n"
    "value, the queue or the lock-delay changes, as the leader reports it (no\n"
    "polling), each event with its kind and revision (the raft index of the change,\n"
    "increasing along the watch). Runs until SIGINT or SIGTERM (exit 0) or until\n"
    "--count N events were printed after the watch synced.\n"
    "\n"
    "Events, in order:\n"
    "  state    the state at the start: one for NAME (even if free); for a prefix,\n"
    "           one per lock that is held or waited for\n"
    "  synced   no state: the states before it are complete as of its revision,\n"
    "           and every change from there on follows\n"
    "  change   the lock's state right after the change at revision\n"
    "  gap      after a resumption: the lock's state now; it changed meanwhile in\n"
    "           ways that were not seen\n"
    "If the connection to the leader breaks or the leader changes, the watch resumes\n"
    "at the new leader after the last revision printed, and says so on stderr: with\n"
    "a synced event (nothing was missed), with gap events before it (those locks\n"
    "changed unseen), or with restarted: state events of every watched lock and a\n"
    "synced event marked restarted (what changed could not be told: the states\n"
    "printed since the last synced are the whole state now, forget the rest).\n"
    "The watch opens no session (a reader), so a principal of role read may run it.\n"
    "\n"
    "Options:\n"
    "  --prefix PREFIX  watch every lock whose name starts with PREFIX\n"
    "  --count N        exit 0 after N events that carry a state (change, gap, or\n"
    "                   a restarted watch's state) were printed after the first\n"
    "                   synced\n"
    "\n"
    "Exit status: 0; 69 if no leader answered within --timeout; 64 on a usage\n"
    "error; 70 if the cluster refused the watch, or ended it (the principal may no\n"
    "longer read what it watches).\n"
    "\n"
    "Table: each event is a line \"event: SEQ (KIND at revision R)\" followed by the\n"
    "lock as lock-info shows it (without waiter ids); a synced event is that line\n"
    "alone, with \", restarted\" when it is.\n"
    "JSON (-o json): one object per line and event. For state, change and gap:\n"
    "  lock-info's fields but holder_waiter and the holders' and waiters' waiter,\n"
    "  plus \"kind\": \"state\"|\"change\"|\"gap\" and \"seq\": N (the event's\n"
    "  number in this watch, from 1); revision is the event's. For synced:\n"
    "  {\"kind\": \"synced\", \"revision\": N, \"restarted\": B, \"seq\": N}.\n";

enum { OPT_COUNT = CTL_OPT_CMD_BASE, OPT_PREFIX };

static const struct ctl_optspec watch_opts[] = {
    {"count", 0, 1, OPT_COUNT},
    {"prefix", 0, 1, OPT_PREFIX},
    {NULL, 0, 0, 0},
};

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
    stop_signal = sig;
}

void ctl_watch_signals(void)
{
    struct sigaction sa;

    /* No SA_RESTART: a signal ends the wait for the next event promptly. */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* Say on stderr what a resumption's event means (nothing for the start). */
static void tell_resumption(const struct ctl_watch *cw, const baton_event *ev)
{
    if (ev->kind == BATON_EVENT_GAP) {
        fprintf(stderr, "batonctl: %s: lock ", cw->cmd);
        ctl_sanitize(stderr, ev->state->name, strlen(ev->state->name));
        fprintf(stderr, " changed while the watch was resuming after revision %llu; its "
                        "state now follows (the changes between were not seen)\n",
                (unsigned long long)cw->last);
    } else if (ev->kind == BATON_EVENT_SYNCED && cw->synced && ev->restarted) {
        fprintf(stderr, "batonctl: %s: restarted from the current state at revision "
                        "%llu: what changed after revision %llu could not be told, so the "
                        "states printed since the last synced event are the whole state "
                        "now\n",
                cw->cmd, (unsigned long long)ev->revision, (unsigned long long)cw->last);
    } else if (ev->kind == BATON_EVENT_SYNCED && cw->synced) {
        fprintf(stderr, "batonctl: %s: resumed at revision %llu; nothing was missed\n",
                cw->cmd, (unsigned long long)ev->revision);
    }
}

int ctl_watch_follow(struct ctl_watch *cw)
{
    int done = 0;

    while (!stop_signal && !done) {
        baton_event *ev = NULL;
        /* Wake up now and then to notice a signal. */
        int rv = baton_watch_next(cw->w, 200, &ev);

        if (rv == BATON_ETIMEDOUT) continue;
        if (rv != 0) {
            if (stop_signal) break;
            ctl_error("%s: %s", cw->cmd,
                      baton_errmsg(cw->b)[0] ? baton_errmsg(cw->b) : baton_strerror(rv));
            return rv == BATON_ECLOSED ? CTL_EXIT_UNAVAIL : CTL_EXIT_SOFTWARE;
        }
        tell_resumption(cw, ev);
        done = cw->on_event(cw, ev);
        if (ev->kind == BATON_EVENT_SYNCED) cw->synced = 1;
        cw->last = ev->revision;
        fflush(stdout);
        baton_event_free(ev);
    }
    return CTL_EXIT_OK;
}

/* What watch prints: how, how many, and until when. */
struct watch_out {
    enum ctl_format format;
    uint64_t seq;     /* events printed */
    uint64_t counted; /* events with a state printed after the first synced */
    uint64_t count;   /* --count, 0: none */
};

static const char *kind_name(int kind)
{
    switch (kind) {
    case BATON_EVENT_STATE: return "state";
    case BATON_EVENT_CHANGE: return "change";
    case BATON_EVENT_GAP: return "gap";
    case BATON_EVENT_SYNCED: return "synced";
    default: return "unknown";
    }
}

static void print_synced(const struct watch_out *out, const baton_event *ev)
{
    struct jw w;

    if (out->format == CTL_TABLE) {
        printf("event:          %llu (synced at revision %llu%s)\n",
               (unsigned long long)out->seq, (unsigned long long)ev->revision,
               ev->restarted ? ", restarted" : "");
        return;
    }
    jw_init(&w, stdout);
    jw_begin_object(&w, NULL);
    jw_cstring(&w, "kind", "synced");
    jw_u64(&w, "revision", ev->revision);
    jw_bool(&w, "restarted", ev->restarted);
    jw_u64(&w, "seq", out->seq);
    jw_end_object(&w);
    jw_finish(&w);
}

/* ctl_watch_follow's on_event: print the event; done after --count. */
static int print_event(struct ctl_watch *cw, const baton_event *ev)
{
    struct watch_out *out = cw->arg;

    out->seq++;
    if (ev->kind == BATON_EVENT_SYNCED) {
        print_synced(out, ev);
    } else if (ev->state != NULL) {
        struct ctl_event_tag tag = {.seq = out->seq, .kind = kind_name(ev->kind)};
        ctl_print_state(ev->state->name, ev->state, NULL, out->format, &tag);
        if (cw->synced) out->counted++;
    }
    return out->count != 0 && out->counted >= out->count;
}

int cmd_watch(struct ctl_opts *o, int argc, char **argv)
{
    struct ctl_optiter it;
    struct watch_out out = {.count = 0};
    struct ctl_watch cw = {.cmd = "watch", .on_event = print_event, .arg = &out};
    const char *arg, *key = NULL;
    unsigned flags = 0;
    char err[CTL_ERR_SIZE];
    int id, rv;

    ctl_opt_init(&it, argc, argv, 1);
    while ((id = ctl_opt_next(&it, watch_opts, ctl_global_opts, &arg, err, sizeof err)) !=
           CTL_OPT_END) {
        if (id == CTL_OPT_POSITIONAL && key == NULL) {
            key = arg;
        } else if (id == OPT_PREFIX && key == NULL) {
            key = arg;
            flags = BATON_WATCH_PREFIX;
        } else if (id == OPT_PREFIX) {
            return ctl_usage_error("watch", "give NAME or --prefix PREFIX, once");
        } else if (id == OPT_COUNT) {
            if (ctl_parse_uint(arg, UINT32_MAX, &out.count) != 0 || out.count == 0)
                return ctl_usage_error("watch", "--count wants a positive number");
        } else {
            rv = ctl_common_opt(o, "watch", cmd_watch_help, id, arg, err);
            if (rv != CTL_CONTINUE) return rv;
        }
    }
    if (key == NULL) return ctl_usage_error("watch", "missing lock NAME (or --prefix PREFIX)");
    if (flags == 0 && !ctl_lock_name_ok(key))
        return ctl_usage_error("watch", "a lock name is 1 to %d bytes", BATON_MAX_NAME);
    if (flags != 0 && strlen(key) > BATON_MAX_NAME)
        return ctl_usage_error("watch", "a prefix is at most %d bytes", BATON_MAX_NAME);
    rv = ctl_conn_opts_check(o, "watch");
    if (rv != CTL_CONTINUE) return rv;
    out.format = o->format;

    ctl_watch_signals();
    rv = ctl_reader_open(o, "batonctl watch", &cw.b);
    if (rv != 0) return rv;
    rv = baton_watch(cw.b, key, flags, 0, &cw.w);
    if (rv != 0) {
        ctl_error("watch: %s", baton_errmsg(cw.b)[0] ? baton_errmsg(cw.b) : baton_strerror(rv));
        baton_close(cw.b);
        return ctl_exit_for(rv);
    }
    rv = ctl_watch_follow(&cw);
    baton_watch_close(cw.w);
    baton_close(cw.b);
    return rv;
}
