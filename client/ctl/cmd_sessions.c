/*
 * cmd_sessions.c -- `batonctl sessions`: LIST_SESSIONS from the leader's
 * applied state: each session's id, lease, client name, owner (the
 * principal that opened it), the raft index that opened it, and how many
 * locks it holds and waits for.
 */
#include <stdio.h>
#include <string.h>

#include "client/ctl/ctl.h"
#include "baton/baton_defs.h"

const char cmd_sessions_help[] =
    "usage: batonctl sessions [--after ID] [--limit N] [-e ENDPOINTS] [-o table|json]\n"
    "                         [--timeout MS]\n"
    "\n"
    "Lists the sessions the leader knows, in id order: id, lease (ttl), client name,\n"
    "owner (the principal that opened it: a name from the auth file, or - on a\n"
    "cluster without one), the raft index of the request that opened it, the number\n"
    "of locks it holds and the number of lock requests it has waiting. Only sessions\n"
    "with an id above --after are listed (default 0), at most N of them (default\n"
    "and maximum 1000); a note says when there are more (list them with --after\n"
    "LAST_ID).\n"
    "\n"
    "Exit status: 0; 69 if no leader answered within --timeout; 64 on a usage error;\n"
    "70 if the cluster refused the request.\n"
    "\n"
    "JSON (-o json), one object:\n"
    "  {\"sessions\": [{\"id\": N, \"ttl_ms\": N, \"client\": S, \"owner\": S,\n"
    "   \"created_index\": N, \"holds\": N, \"waits\": N}, ...], \"more\": B}\n"
    "  owner is \"\" for the anonymous principal. Client names that are not valid\n"
    "  UTF-8 have the offending bytes replaced by U+FFFD.\n";

enum { OPT_AFTER = CTL_OPT_CMD_BASE, OPT_LIMIT };

static const struct ctl_optspec sessions_opts[] = {
    {"after", 0, 1, OPT_AFTER},
    {"limit", 0, 1, OPT_LIMIT},
    {NULL, 0, 0, 0},
};

static void print_table(const struct msg_sessions_r *l)
{
    struct table t;

    if (l->n == 0) {
        printf("(no sessions)\n");
        return;
    }
    table_init(&t, 7);
    table_cell(&t, "SESSION");
    table_cell(&t, "TTL");
    table_cell(&t, "CLIENT");
    table_cell(&t, "OWNER");
    table_cell(&t, "CREATED");
    table_cell(&t, "HOLDS");
    table_cell(&t, "WAITS");
    for (uint32_t i = 0; i < l->n; i++) {
        const struct msg_session_summary *s = &l->items[i];
        table_cell(&t, "%llu", (unsigned long long)s->id);
        table_cell(&t, "%u ms", s->ttl_ms);
        if (s->client_name.n > 0)
            table_cell_bytes(&t, s->client_name.p, s->client_name.n);
        else
            table_cell(&t, "-");
        if (s->owner.n > 0)
            table_cell_bytes(&t, s->owner.p, s->owner.n);
        else
            table_cell(&t, "-");
        table_cell(&t, "%llu", (unsigned long long)s->created_index);
        table_cell(&t, "%u", s->n_holds);
        table_cell(&t, "%u", s->n_waits);
    }
    table_print(&t, stdout);
    table_free(&t);
    if (l->more)
        printf("(more sessions: list them with --after %llu)\n",
               (unsigned long long)l->items[l->n - 1].id);
}

static void print_json(const struct msg_sessions_r *l)
{
    struct jw w;

    jw_init(&w, stdout);
    jw_begin_object(&w, NULL);
    jw_begin_array(&w, "sessions");
    for (uint32_t i = 0; i < l->n; i++) {
        const struct msg_session_summary *s = &l->items[i];
        jw_begin_object(&w, NULL);
        jw_u64(&w, "id", s->id);
        jw_u64(&w, "ttl_ms", s->ttl_ms);
        jw_string(&w, "client", s->client_name.p, s->client_name.n);
        jw_string(&w, "owner", s->owner.p, s->owner.n);
        jw_u64(&w, "created_index", s->created_index);
        jw_u64(&w, "holds", s->n_holds);
        jw_u64(&w, "waits", s->n_waits);
        jw_end_object(&w);
    }
    jw_end_array(&w);
    jw_bool(&w, "more", l->more);
    jw_end_object(&w);
    jw_finish(&w);
}

int cmd_sessions(struct ctl_opts *o, int argc, char **argv)
{
    struct ctl_optiter it;
    struct baton__reply rep;
    struct msg req;
    const char *arg;
    uint64_t after = 0, limit = 0;
    char err[CTL_ERR_SIZE];
    int id, rv;

    ctl_opt_init(&it, argc, argv, 1);
    while ((id = ctl_opt_next(&it, sessions_opts, ctl_global_opts, &arg, err, sizeof err)) !=
           CTL_OPT_END) {
        if (id == OPT_AFTER) {
            if (ctl_parse_uint(arg, UINT64_MAX, &after) != 0)
                return ctl_usage_error("sessions", "bad --after '%s' (a session id)", arg);
        } else if (id == OPT_LIMIT) {
            if (ctl_parse_uint(arg, BATON_MAX_LIST, &limit) != 0 || limit == 0)
                return ctl_usage_error("sessions", "bad --limit '%s' (1..%d)", arg,
                                       BATON_MAX_LIST);
        } else {
            rv = ctl_common_opt(o, "sessions", cmd_sessions_help, id, arg, err);
            if (rv != CTL_CONTINUE) return rv;
        }
    }

    memset(&req, 0, sizeof req);
    req.type = MSG_LIST_SESSIONS;
    req.u.list_sessions.after = after;
    req.u.list_sessions.limit = (uint32_t)limit;
    rv = ctl_conn_opts_check(o, "sessions");
    if (rv != CTL_CONTINUE) return rv;
    rv = ctl_leader_request(o, &req, &rep, err, sizeof err);
    if (rv != 0) {
        ctl_error("sessions: %s", err);
        return ctl_exit_for(rv);
    }
    if (rep.m.type != MSG_SESSIONS_R) {
        ctl_error("sessions: unexpected reply %s", msg_type_name(rep.m.type));
        baton__reply_free(&rep);
        return CTL_EXIT_SOFTWARE;
    }
    if (o->format == CTL_JSON)
        print_json(&rep.m.u.sessions_r);
    else
        print_table(&rep.m.u.sessions_r);
    baton__reply_free(&rep);
    return CTL_EXIT_OK;
}
