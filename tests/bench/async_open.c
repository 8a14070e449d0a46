/*
 * async_open.c -- start opening one lockbench session with the async API on
 * a libuv loop: the options every session uses (opts.c), a client name,
 * the libuv adapter.
 */
#include <stdio.h>
#include <string.h>

#include "baton/adapters/libuv.h"
#include "tests/bench/bench.h"

int bench_async_open(const struct cfg *cfg, const char *name_prefix, int id, uv_loop_t *loop,
                     baton_async_open_cb *cb, void *data, baton_async_t **out)
{
    char cname[48];
    baton_opts o;
    int rv;

    snprintf(cname, sizeof cname, "%s%d", name_prefix, id);
    bench_opts(cfg, &o);
    o.client_name = cname;
    *out = NULL;
    rv = baton_async_new(&o, out);
    if (rv == 0) {
        rv = baton_uv_attach(*out, loop);
        if (rv == 0) rv = baton_async_open(*out, cb, data);
    }
    if (rv != 0)
        log_err(id, "connect", rv, *out ? baton_async_errmsg(*out) : baton_async_new_errmsg());
    return rv;
}
