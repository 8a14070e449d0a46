/*
 * async_open.c -- start opening one lockbench session with the async API on
 * a libuv loop: the options every async workload uses (the cluster, the
 * timeouts and ttl of --options), a client name, the libuv adapter.
 */
#include <stdio.h>
#include <string.h>

#include "client/adapters/libuv.h"
#include "tests/bench/bench.h"

int bench_async_open(const struct cfg *cfg, const char *name_prefix, int id, uv_loop_t *loop,
                     baton_async_open_cb *cb, void *data, baton_async_t **out)
{
    char cname[48];
    baton_opts o;
    int rv;

    snprintf(cname, sizeof cname, "%s%d", name_prefix, id);
    memset(&o, 0, sizeof o);
    o.endpoints = cfg->endpoints;
    o.client_name = cname;
    o.connect_timeout_ms = cfg->connect_timeout_ms;
    o.op_timeout_ms = cfg->op_timeout_ms;
    o.session_ttl_ms = cfg->ttl_ms;
    *out = NULL;
    rv = baton_async_new(&o, out);
    if (rv == 0) {
        rv = baton_uv_attach(*out, loop);
        if (rv == 0) rv = baton_async_open(*out, cb, data);
    }
    if (rv != 0) log_err(id, "connect", rv, *out ? baton_async_errmsg(*out) : NULL);
    return rv;
}
