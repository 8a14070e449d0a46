/*
 * cmd_locks.c -- `batonctl locks [PREFIX]`: LIST_LOCKS from the leader's
 * applied state: each lock's name, mode, holders (the first one's session
 * and fence, and how many), limit and queue length.
 */
#include <stdio.h>
#include <string.h>

#include "client/ctl/ctl.h"
#include "baton/baton_defs.h"
#include "proto/lockreq.h"

const char cmd_locks_help[] =
    "usage: batonctl locks [PREFIX] [--limit N] [-e ENDPOINTS] [-o table|json] [--timeout MS]\n"
    "\n"
    "Lists the locks whose name starts with PREFIX (all locks if omitted), in name\n"
    "order, as the leader sees them: name, mode (excl or shared; a semaphore of N\n"
    "shows sem/N), how many hold it, the first holder's session and fence (lowest\n"
    "fence: lock-info lists them all), number of waiters.\n"
    "At most N locks are listed (default and maximum: as many as the server sends\n"
    "in one reply, up to 1000); a note says when more match.\n"
    "\n"
    "Exit status: 0; 69 if no leader answered within --timeout; 64 on a usage error;\n"
    "70 if the cluster refused the request.\n"
    "\n"
    "JSON (-o json), one object:\n"
    "  {\"prefix\": S, \"locks\": [{\"name\": S, \"held\": B, \"holder_session\": N,\n"
    "   \"fence\": N, \"waiters\": N, \"mode\": \"exclusive\"|\"shared\", \"limit\": N,\n"
    "   \"holders\": N}, ...], \"more\": B}\n"
    "  holder_session and fence (the first holder's) are 0 for a lock that is not\n"
    "  held. Names that are\n"
    "  not valid UTF-8 have the offending bytes replaced by U+FFFD.\n";

enum { OPT_LIMIT = CTL_OPT_CMD_BASE };

static const struct ctl_optspec locks_opts[] = {
    {"limit", 0, 1, OPT_LIMIT},
    {NULL, 0, 0, 0},
};

static void print_table(const struct msg_list_locks_r *l)
{
    struct table t;

    if (l->n == 0) {
        printf("(no locks)\n");
        return;
    }
    table_init(&t, 6);
    table_cell(&t, "NAME");
    table_cell(&t, "MODE");
    table_cell(&t, "HOLDERS");
    table_cell(&t, "HOLDER");
    table_cell(&t, "FENCE");
    table_cell(&t, "WAITERS");
    for (uint32_t i = 0; i < l->n; i++) {
        const struct msg_lock_summary *s = &l->items[i];
        table_cell_bytes(&t, s->name.p, s->name.n);
        if (s->limit > 1)
            table_cell(&t, "sem/%u", s->limit);
        else
            table_cell(&t, "%s", s->n_holders == 0 ? "-"
                                 : lockreq_mode_short_name(s->mode));
        table_cell(&t, "%u", s->n_holders);
        if (s->holder_session != 0) {
            table_cell(&t, "%llu", (unsigned long long)s->holder_session);
            table_cell(&t, "%llu", (unsigned long long)s->fence);
        } else {
            table_cell(&t, "-");
            table_cell(&t, "-");
        }
        table_cell(&t, "%u", s->n_waiters);
    }
    table_print(&t, stdout);
    table_free(&t);
    if (l->more)
        printf("(more locks match; showing the first %u: use a longer prefix)\n", l->n);
}

static void print_json(const char *prefix, const struct msg_list_locks_r *l)
{
    struct jw w;

    jw_init(&w, stdout);
    jw_begin_object(&w, NULL);
    jw_cstring(&w, "prefix", prefix);
    jw_begin_array(&w, "locks");
    for (uint32_t i = 0; i < l->n; i++) {
        const struct msg_lock_summary *s = &l->items[i];
        jw_begin_object(&w, NULL);
        jw_string(&w, "name", s->name.p, s->name.n);
        jw_bool(&w, "held", s->holder_session != 0);
        jw_u64(&w, "holder_session", s->holder_session);
        jw_u64(&w, "fence", s->fence);
        jw_u64(&w, "waiters", s->n_waiters);
        jw_cstring(&w, "mode", lockreq_mode_name(s->mode));
        jw_u64(&w, "limit", s->limit);
        jw_u64(&w, "holders", s->n_holders);
        jw_end_object(&w);
    }
    jw_end_array(&w);
    jw_bool(&w, "more", l->more);
    jw_end_object(&w);
    jw_finish(&w);
}

int cmd_locks(struct ctl_opts *o, int argc, char **argv)
{
    struct ctl_optiter it;
    struct baton__reply rep;
    struct msg req;
    const char *arg, *prefix = NULL;
    uint64_t limit = 0;
    char err[CTL_ERR_SIZE];
    int id, rv;

    ctl_opt_init(&it, argc, argv, 1);
    while ((id = ctl_opt_next(&it, locks_opts, ctl_global_opts, &arg, err, sizeof err)) !=
           CTL_OPT_END) {
        if (id == CTL_OPT_POSITIONAL && prefix == NULL) {
            prefix = arg;
        } else if (id == OPT_LIMIT) {
            if (ctl_parse_uint(arg, BATON_MAX_LIST, &limit) != 0 || limit == 0)
                return ctl_usage_error("locks", "bad --limit '%s' (1..%d)", arg, BATON_MAX_LIST);
        } else {
            rv = ctl_common_opt(o, "locks", cmd_locks_help, id, arg, err);
            if (rv != CTL_CONTINUE) return rv;
        }
    }
    if (prefix == NULL) prefix = "";
    if (strlen(prefix) > BATON_MAX_NAME)
        return ctl_usage_error("locks", "prefix longer than %d bytes", BATON_MAX_NAME);

    memset(&req, 0, sizeof req);
    req.type = MSG_LIST_LOCKS;
    req.u.list_locks.prefix.p = prefix;
    req.u.list_locks.prefix.n = (uint16_t)strlen(prefix);
    req.u.list_locks.limit = (uint32_t)limit;
    rv = ctl_conn_opts_check(o, "locks");
    if (rv != CTL_CONTINUE) return rv;
    rv = ctl_leader_request(o, &req, &rep, err, sizeof err);
    if (rv != 0) {
        ctl_error("locks: %s", err);
        return ctl_exit_for(rv);
    }
    if (rep.m.type != MSG_LIST_LOCKS_R) {
        ctl_error("locks: unexpected reply %s", msg_type_name(rep.m.type));
        baton__reply_free(&rep);
        return CTL_EXIT_SOFTWARE;
    }
    if (o->format == CTL_JSON)
        print_json(prefix, &rep.m.u.list_locks_r);
    else
        print_table(&rep.m.u.list_locks_r);
    baton__reply_free(&rep);
    return CTL_EXIT_OK;
}
