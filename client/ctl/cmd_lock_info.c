/*
 * cmd_lock_info.c -- `batonctl lock-info NAME`: one lock as the leader sees
 * it: its mode and limit, every holder (session and the waiter id its grant
 * answered, the fence, the raft index of the grant, mode and handles), and
 * the queue of waiters in order with each request's mode. `watch` prints
 * its events the same way (ctl_print_lock_info).
 */
#include <stdio.h>
#include <string.h>

#include "client/ctl/ctl.h"
#include "baton/baton_defs.h"
#include "proto/lockreq.h"

const char cmd_lock_info_help[] =
    "usage: batonctl lock-info NAME [-e ENDPOINTS] [-o table|json] [--timeout MS]\n"
    "\n"
    "Shows lock NAME as the leader sees it: its mode (exclusive or shared) and limit\n"
    "(1: an ordinary lock, N: a semaphore of N), every holder -- its session and\n"
    "waiter id (the sequence number of the request that was granted), the fence, the\n"
    "raft index of the grant, its mode and its handles (more than 1 for a reentrant\n"
    "hold) --, and the waiters in queue order, head first, with each request's mode\n"
    "and how long it asked to wait. A lock nobody holds is shown as free.\n"
    "\n"
    "Exit status: 0 (also for a free lock); 69 if no leader answered within\n"
    "--timeout; 64 on a usage error; 70 if the cluster refused the request.\n"
    "\n"
    "JSON (-o json), one object:\n"
    "  {\"name\": S, \"held\": B, \"holder_session\": N, \"holder_waiter\": N,\n"
    "   \"fence\": N, \"granted_index\": N, \"mode\": \"exclusive\"|\"shared\",\n"
    "   \"limit\": N, \"total_holders\": N,\n"
    "   \"holders\": [{\"session\": N, \"waiter\": N, \"fence\": N, \"granted_index\": N,\n"
    "                \"mode\": S, \"handles\": N}, ...],\n"
    "   \"total_waiters\": N,\n"
    "   \"waiters\": [{\"session\": N, \"waiter\": N, \"wait_ms\": N, \"mode\": S}, ...],\n"
    "   \"truncated\": B, \"delayed\": B}\n"
    "  The holder fields name the first holder (lowest fence) and are 0 when held is\n"
    "  false; holders lists them all. limit is 0 for a lock nobody holds or wants.\n"
    "  wait_ms is -1 for a waiter that\n"
    "  waits as long as it takes. delayed is true while the lock is in its lock-delay\n"
    "  (free, but granted to no one: its holder's session expired, or an operator\n"
    "  forced the hold's release, and the old holder's lease is waited out).\n"
    "  truncated is true when the queue is longer than the\n"
    "  waiters listed (total_waiters says how long).\n";

/* Every holder, when there is more to say than one exclusive holder. */
static void print_holders(const struct msg_lock_info_r *li)
{
    struct table t;

    printf("holders:        %u\n", li->total_holders);
    table_init(&t, 6);
    table_cell(&t, "SESSION");
    table_cell(&t, "WAITER");
    table_cell(&t, "FENCE");
    table_cell(&t, "MODE");
    table_cell(&t, "HANDLES");
    table_cell(&t, "GRANTED");
    for (uint32_t i = 0; i < li->n_holders; i++) {
        const struct msg_holder *h = &li->holders[i];
        table_cell(&t, "%llu", (unsigned long long)h->session);
        table_cell(&t, "%llu", (unsigned long long)h->waiter);
        table_cell(&t, "%llu", (unsigned long long)h->fence);
        table_cell(&t, "%s", lockreq_mode_name(h->mode));
        table_cell(&t, "%u", h->count);
        table_cell(&t, "%llu", (unsigned long long)h->granted_index);
    }
    fputc('\n', stdout);
    table_print(&t, stdout);
    table_free(&t);
    if (li->n_holders < li->total_holders)
        printf("(%u more holders not shown)\n", li->total_holders - li->n_holders);
}

static void print_table(const char *name, const struct msg_lock_info_r *li)
{
    struct table t;

    fputs("lock:           ", stdout);
    ctl_sanitize(stdout, name, strlen(name));
    fputc('\n', stdout);
    if (li->limit > 1) printf("limit:          %u (a semaphore)\n", li->limit);
    if (!li->held) {
        if (li->delayed)
            printf("holder:         none (lock-delay: its holder's session expired or its\n"
                   "                release was forced; granted to no one until the delay\n"
                   "                ends)\n");
        else
            printf("holder:         none (free)\n");
        if (li->total_waiters == 0) return;
    } else {
        printf("mode:           %s\n", lockreq_mode_name(li->mode));
        if (li->delayed)
            printf("delayed:        yes (a holder's session expired or its release was\n"
                   "                forced: no new grant until the lock-delay ends)\n");
        if (li->total_holders == 1 && li->n_holders == 1 && li->holders[0].count == 1) {
            printf("holder:         session %llu, waiter %llu\n",
                   (unsigned long long)li->holder_session, (unsigned long long)li->holder_waiter);
            printf("fence:          %llu\n", (unsigned long long)li->fence);
            printf("granted index:  %llu\n", (unsigned long long)li->granted_index);
        } else {
            print_holders(li);
        }
    }
    printf("waiters:        %u\n", li->total_waiters);
    if (li->n_waiters == 0) return;

    table_init(&t, 5);
    table_cell(&t, "POS");
    table_cell(&t, "SESSION");
    table_cell(&t, "WAITER");
    table_cell(&t, "MODE");
    table_cell(&t, "WAIT");
    for (uint32_t i = 0; i < li->n_waiters; i++) {
        const struct msg_waiter *wt = &li->waiters[i];
        table_cell(&t, "%u", i + 1);
        table_cell(&t, "%llu", (unsigned long long)wt->session);
        table_cell(&t, "%llu", (unsigned long long)wt->waiter);
        table_cell(&t, "%s", lockreq_mode_name(wt->mode));
        if (wt->wait_ms < 0)
            table_cell(&t, "forever");
        else
            table_cell(&t, "%lld ms", (long long)wt->wait_ms);
    }
    fputc('\n', stdout);
    table_print(&t, stdout);
    table_free(&t);
    if (li->n_waiters < li->total_waiters)
        printf("(%u more waiters not shown)\n", li->total_waiters - li->n_waiters);
}

static void print_json(const char *name, const struct msg_lock_info_r *li, uint64_t seq)
{
    struct jw w;

    jw_init(&w, stdout);
    jw_begin_object(&w, NULL);
    jw_cstring(&w, "name", name);
    jw_bool(&w, "held", li->held);
    jw_u64(&w, "holder_session", li->held ? li->holder_session : 0);
    jw_u64(&w, "holder_waiter", li->held ? li->holder_waiter : 0);
    jw_u64(&w, "fence", li->held ? li->fence : 0);
    jw_u64(&w, "granted_index", li->held ? li->granted_index : 0);
    jw_cstring(&w, "mode", lockreq_mode_name(li->mode));
    jw_u64(&w, "limit", li->limit);
    jw_u64(&w, "total_holders", li->total_holders);
    jw_begin_array(&w, "holders");
    for (uint32_t i = 0; i < li->n_holders; i++) {
        const struct msg_holder *h = &li->holders[i];
        jw_begin_object(&w, NULL);
        jw_u64(&w, "session", h->session);
        jw_u64(&w, "waiter", h->waiter);
        jw_u64(&w, "fence", h->fence);
        jw_u64(&w, "granted_index", h->granted_index);
        jw_cstring(&w, "mode", lockreq_mode_name(h->mode));
        jw_u64(&w, "handles", h->count);
        jw_end_object(&w);
    }
    jw_end_array(&w);
    jw_u64(&w, "total_waiters", li->total_waiters);
    jw_begin_array(&w, "waiters");
    for (uint32_t i = 0; i < li->n_waiters; i++) {
        jw_begin_object(&w, NULL);
        jw_u64(&w, "session", li->waiters[i].session);
        jw_u64(&w, "waiter", li->waiters[i].waiter);
        jw_i64(&w, "wait_ms", li->waiters[i].wait_ms < 0 ? -1 : li->waiters[i].wait_ms);
        jw_cstring(&w, "mode", lockreq_mode_name(li->waiters[i].mode));
        jw_end_object(&w);
    }
    jw_end_array(&w);
    jw_bool(&w, "truncated",
            li->n_waiters < li->total_waiters || li->n_holders < li->total_holders);
    jw_bool(&w, "delayed", li->delayed);
    if (seq != 0) jw_u64(&w, "seq", seq);
    jw_end_object(&w);
    jw_finish(&w);
}

void ctl_print_lock_info(const char *name, const struct msg_lock_info_r *li, enum ctl_format f,
                         uint64_t seq)
{
    if (f == CTL_JSON) {
        print_json(name, li, seq);
        return;
    }
    if (seq != 0) printf("event:          %llu\n", (unsigned long long)seq);
    print_table(name, li);
}

int cmd_lock_info(struct ctl_opts *o, int argc, char **argv)
{
    struct ctl_optiter it;
    struct baton__reply rep;
    struct msg req;
    const char *arg, *name = NULL;
    char err[CTL_ERR_SIZE];
    int id, rv;

    ctl_opt_init(&it, argc, argv, 1);
    while ((id = ctl_opt_next(&it, NULL, ctl_global_opts, &arg, err, sizeof err)) !=
           CTL_OPT_END) {
        if (id == CTL_OPT_POSITIONAL && name == NULL) {
            name = arg;
        } else {
            rv = ctl_common_opt(o, "lock-info", cmd_lock_info_help, id, arg, err);
            if (rv != CTL_CONTINUE) return rv;
        }
    }
    if (name == NULL) return ctl_usage_error("lock-info", "missing lock NAME");
    if (!ctl_lock_name_ok(name))
        return ctl_usage_error("lock-info", "a lock name is 1 to %d bytes", BATON_MAX_NAME);

    memset(&req, 0, sizeof req);
    req.type = MSG_LOCK_INFO;
    req.u.lock_info.lock.p = name;
    req.u.lock_info.lock.n = (uint16_t)strlen(name);
    rv = ctl_conn_opts_check(o, "lock-info");
    if (rv != CTL_CONTINUE) return rv;
    rv = ctl_leader_request(o, &req, &rep, err, sizeof err);
    if (rv != 0) {
        ctl_error("lock-info: %s", err);
        return ctl_exit_for(rv);
    }
    if (rep.m.type != MSG_LOCK_INFO_R) {
        ctl_error("lock-info: unexpected reply %s", msg_type_name(rep.m.type));
        baton__reply_free(&rep);
        return CTL_EXIT_SOFTWARE;
    }
    ctl_print_lock_info(name, &rep.m.u.lock_info_r, o->format, 0);
    baton__reply_free(&rep);
    return CTL_EXIT_OK;
}
