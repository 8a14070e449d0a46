/*
 * async_elect.c -- elections on the async core (baton_async.h:
 * baton_async_campaign, baton_async_leader, baton_async_observe; baton.h,
 * "Elections"). An election is a lock: campaigning is an exclusive lock
 * call with a value, resigning its unlock, the leader holders[0] of a read,
 * observing a watch that passes on changes of holders[0] only
 * (async_watch.c, the observe filter).
 */
#include <stdlib.h>

#include "client/async_int.h"

int baton_async_campaign(baton_async_t *ac, const char *election, const void *value, size_t len,
                         const baton_lock_args *a, baton_async_lock_cb *cb, void *data)
{
    baton_lock_args args = {.wait_ms = BATON_WAIT_FOREVER};

    if (a != NULL) args = *a;
    /* One leader at a time: exclusive, an ordinary lock, one handle. */
    args.mode = BATON_MODE_EXCLUSIVE;
    args.limit = 0;
    args.reentrant = 0;
    args.value = value;
    args.value_len = len;
    return baton_async_lock_with(ac, election, &args, cb, data);
}

struct leader_ctx {
    baton_async_state_cb *cb;
    void *data;
};

/* The read ended: nobody holding is BATON_ENOTFOUND. */
static void leader_read(baton_async_t *ac, int status, const baton_lock_state *st, void *data)
{
    struct leader_ctx *ctx = data;

    if (status == 0 && st->n_holders == 0) {
        status = BATON_ENOTFOUND;
        st = NULL;
    }
    ctx->cb(ac, status, st, ctx->data);
    free(ctx);
}

int baton_async_leader(baton_async_t *ac, const char *election, baton_async_state_cb *cb,
                       void *data)
{
    struct leader_ctx *ctx;
    int rv;

    if (cb == NULL) return BATON_EINVAL;
    ctx = malloc(sizeof *ctx);
    if (ctx == NULL) return BATON_ENOMEM;
    *ctx = (struct leader_ctx){.cb = cb, .data = data};
    rv = baton_async_lock_state(ac, election, leader_read, ctx);
    if (rv != 0) free(ctx);
    return rv;
}

int baton_async_observe(baton_async_t *ac, const char *election, baton_async_watch_cb *cb,
                        void *data, baton_async_watch_t **out)
{
    return baton__watch_start(ac, election, 0, 0, true, false, cb, data, out);
}
