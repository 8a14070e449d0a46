/*
 * cmd_watch.c -- `batonctl watch NAME`: subscribe to one lock at the leader
 * (WATCH) and print its state at once and after every change the leader
 * pushes (WATCH_EVENT), until interrupted or --count events were printed
 * after the first.
 *
 * When the connection drops (the leader died or stepped down, which closes
 * its connections), batonctl finds the leader again and watches anew, for
 * at most --timeout; the first event after that is printed like any other,
 * after a line on stderr saying that the watch was re-subscribed. Events
 * are numbered and counted by what this watch printed, across
 * re-subscriptions (each subscription's own seq starts over at 1), so a
 * leader change neither restarts the numbers nor keeps --count from ending.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "client/ctl/ctl.h"
#include "baton/baton_defs.h"

const char cmd_watch_help[] =
    "usage: batonctl watch NAME [--count N] [-e ENDPOINTS] [-o table|json] [--timeout MS]\n"
    "\n"
    "Prints lock NAME as lock-info does, now and then every time its holder, its\n"
    "queue or its lock-delay changes, as the leader reports it (no polling). Runs\n"
    "until SIGINT or SIGTERM (exit 0) or until --count N events were printed after\n"
    "the first state. If the connection to the leader is lost, batonctl looks for\n"
    "the leader again for up to --timeout, says so on stderr, and goes on watching\n"
    "there (changes made while it was away show up only as the state it finds,\n"
    "which is printed, and counted, as one event).\n"
    "\n"
    "Exit status: 0; 69 if no leader answered within --timeout; 64 on a usage\n"
    "error; 70 if the cluster refused the request.\n"
    "\n"
    "JSON (-o json): one object per line and event, lock-info's fields plus\n"
    "  \"seq\": N, the event's number in this watch (1 for the first state), counted\n"
    "  on across re-subscriptions; --count N ends it after seq N+1.\n";

enum { OPT_COUNT = CTL_OPT_CMD_BASE };

static const struct ctl_optspec watch_opts[] = {
    {"count", 0, 1, OPT_COUNT},
    {NULL, 0, 0, 0},
};

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
    stop_signal = sig;
}

/* Subscribe at the leader; on success *c is the open connection and the
 * first event has been printed as event ++*seq. Returns 0 or a BATON_E*
 * code (err filled). */
static int subscribe(struct ctl_opts *o, const char *name, baton__caller **c, uint64_t *seq,
                     char *err, size_t errlen)
{
    struct baton__reply rep;
    struct msg req;
    int rv;

    baton__caller_free(*c); /* the last subscription's */
    *c = NULL;
    memset(&req, 0, sizeof req);
    req.type = MSG_WATCH;
    req.u.watch.lock.p = name;
    req.u.watch.lock.n = (uint16_t)strlen(name);
    rv = ctl_leader_open(o, &req, &rep, c, err, errlen);
    if (rv != 0) return rv;
    if (rep.m.type != MSG_WATCH_EVENT) {
        snprintf(err, errlen, "unexpected reply %s", msg_type_name(rep.m.type));
        baton__reply_free(&rep);
        baton__caller_free(*c);
        *c = NULL;
        return BATON_EPROTO;
    }
    ctl_print_lock_info(name, &rep.m.u.watch_event.info, o->format, ++*seq);
    fflush(stdout);
    baton__reply_free(&rep);
    return 0;
}

int cmd_watch(struct ctl_opts *o, int argc, char **argv)
{
    struct ctl_optiter it;
    baton__caller *c = NULL;
    struct sigaction sa;
    const char *arg, *name = NULL;
    uint64_t count = 0, seq = 0; /* seq: events printed, the first state included */
    char err[CTL_ERR_SIZE];
    int id, rv;

    ctl_opt_init(&it, argc, argv, 1);
    while ((id = ctl_opt_next(&it, watch_opts, ctl_global_opts, &arg, err, sizeof err)) !=
           CTL_OPT_END) {
        if (id == CTL_OPT_POSITIONAL && name == NULL) {
            name = arg;
        } else if (id == OPT_COUNT) {
            if (ctl_parse_uint(arg, UINT32_MAX, &count) != 0 || count == 0)
                return ctl_usage_error("watch", "--count wants a positive number");
        } else {
            rv = ctl_common_opt(o, "watch", cmd_watch_help, id, arg, err);
            if (rv != CTL_CONTINUE) return rv;
        }
    }
    if (name == NULL) return ctl_usage_error("watch", "missing lock NAME");
    if (!ctl_lock_name_ok(name))
        return ctl_usage_error("watch", "a lock name is 1 to %d bytes", BATON_MAX_NAME);
    rv = ctl_conn_opts_check(o, "watch");
    if (rv != CTL_CONTINUE) return rv;

    /* No SA_RESTART: a signal ends the wait for the next event promptly. */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    rv = subscribe(o, name, &c, &seq, err, sizeof err);
    if (rv != 0) {
        ctl_error("watch: %s", err);
        return ctl_exit_for(rv);
    }
    while (!stop_signal && (count == 0 || seq <= count)) {
        struct baton__reply rep;

        /* Wake up now and then to notice a signal. */
        rv = ctl_read(c, 200, &rep, err, sizeof err);
        if (rv == BATON_ETIMEDOUT) continue;
        if (rv != 0) {
            if (stop_signal) break;
            fprintf(stderr, "batonctl: watch: connection lost (%s); looking for the leader\n",
                    err);
            rv = subscribe(o, name, &c, &seq, err, sizeof err);
            if (rv != 0) {
                ctl_error("watch: %s", err);
                return ctl_exit_for(rv);
            }
            fprintf(stderr, "batonctl: watch: re-subscribed at node %u\n", baton__caller_node(c));
            continue;
        }
        if (rep.m.type == MSG_WATCH_EVENT) {
            ctl_print_lock_info(name, &rep.m.u.watch_event.info, o->format, ++seq);
            fflush(stdout);
        }
        baton__reply_free(&rep);
    }
    baton__caller_free(c);
    return CTL_EXIT_OK;
}
