/*
 * cmd_lock_info.c -- `batonctl lock-info NAME`: one lock as the leader sees
 * it, read linearizably (LOCK_STATE): its revision, mode and limit, every
 * holder (session, client name, the waiter id its grant answered, the
 * fence, the raft index of the grant, mode, handles and value), and the
 * queue of waiters in order with each request's client, mode and value.
 *
 * It asks on batonctl's sessionless requests (transport.c), as the other
 * inspecting commands do: no session is opened for a read, so a principal
 * of role read may run it, and the waiter ids of the wire form, which
 * libbaton's baton_lock_state does not carry, stay in the output. The
 * wire form becomes a baton_lock_state through libbaton's own conversion
 * (baton__state_new), the one watch's events come through, and is printed
 * by state_print.c like them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "client/async_int.h"
#include "client/ctl/ctl.h"

const char cmd_lock_info_help[] =
    "usage: batonctl lock-info NAME [-e ENDPOINTS] [-o table|json] [--timeout MS]\n"
    "\n"
    "Shows lock NAME as the leader sees it, read linearizably (every change whose\n"
    "request returned before is in it): the raft index it is as of (revision), its\n"
    "mode (exclusive or shared) and limit (1: an ordinary lock, N: a semaphore of N),\n"
    "every holder -- its session, the session's client name, its waiter id (the\n"
    "sequence number of the request that was granted), the fence, the raft index of\n"
    "the grant, its mode, its handles (more than 1 for a reentrant hold) and its\n"
    "value --, and the waiters in queue order, head first, with each request's\n"
    "client, mode, how long it asked to wait and value. A lock nobody holds is shown\n"
    "as free. A value (`batonctl lock --value`, `batonctl elect`) is opaque bytes:\n"
    "the table shows printable UTF-8 as is and every other byte as \\xNN.\n"
    "\n"
    "Exit status: 0 (also for a free lock); 69 if no leader answered within\n"
    "--timeout; 64 on a usage error; 70 if the cluster refused the request.\n"
    "\n"
    "JSON (-o json), one object:\n"
    "  {\"name\": S, \"revision\": N, \"held\": B, \"holder_session\": N,\n"
    "   \"holder_waiter\": N, \"client_name\": S|null, \"value\": S|null,\n"
    "   \"fence\": N, \"granted_index\": N, \"mode\": \"exclusive\"|\"shared\",\n"
    "   \"limit\": N, \"total_holders\": N,\n"
    "   \"holders\": [{\"session\": N, \"waiter\": N, \"client_name\": S, \"fence\": N,\n"
    "                \"granted_index\": N, \"mode\": S, \"handles\": N, \"value\": S|null},\n"
    "               ...],\n"
    "   \"total_waiters\": N,\n"
    "   \"waiters\": [{\"session\": N, \"waiter\": N, \"client_name\": S, \"wait_ms\": N,\n"
    "                \"mode\": S, \"value\": S|null}, ...],\n"
    "   \"truncated\": B, \"delayed\": B}\n"
    "  The holder fields (holder_session to granted_index) name the first holder\n"
    "  (lowest fence) and are 0 or null when held is false; holders lists them all.\n"
    "  client_name is \"\" once the session is gone. A value that is valid UTF-8 is a\n"
    "  string (\"value\"); any other is given as \"value_base64\": its RFC 4648\n"
    "  base64, instead of \"value\"; null means none. limit is 0 for a lock nobody\n"
    "  holds or wants. wait_ms is -1 for a waiter that waits as long as it takes.\n"
    "  delayed is true while the lock is in its lock-delay (free, but granted to no\n"
    "  one: its holder's session expired, or an operator forced the hold's release,\n"
    "  and the old holder's lease is waited out). truncated is true when the lists\n"
    "  are shorter than total_holders and total_waiters (large values: the state\n"
    "  fills one message).\n";

int cmd_lock_info(struct ctl_opts *o, int argc, char **argv)
{
    struct ctl_optiter it;
    struct baton__reply rep;
    struct msg req;
    baton_lock_state *st;
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
    req.type = MSG_LOCK_STATE;
    req.u.lock_info.lock.p = name;
    req.u.lock_info.lock.n = (uint16_t)strlen(name);
    rv = ctl_conn_opts_check(o, "lock-info");
    if (rv != CTL_CONTINUE) return rv;
    rv = ctl_leader_request(o, &req, &rep, err, sizeof err);
    if (rv != 0) {
        ctl_error("lock-info: %s", err);
        return ctl_exit_for(rv);
    }
    if (rep.m.type != MSG_LOCK_STATE_R) {
        ctl_error("lock-info: unexpected reply %s", msg_type_name(rep.m.type));
        baton__reply_free(&rep);
        return CTL_EXIT_SOFTWARE;
    }
    st = baton__state_new(&rep.m.u.lock_state);
    if (st == NULL) {
        ctl_error("lock-info: out of memory");
        baton__reply_free(&rep);
        return CTL_EXIT_SOFTWARE;
    }
    ctl_print_state(name, st, &rep.m.u.lock_state, o->format, NULL);
    baton_lock_state_free(st);
    baton__reply_free(&rep);
    return CTL_EXIT_OK;
}
