/*
 * aclient.c -- the async client API in the tests. See aclient.h.
 */
#include "tests/lib/aclient.h"

#include <stdio.h>
#include <string.h>

#include "baton/adapters/libuv.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/runner.h"

baton_async_t *a_new(struct tloop *t, const baton_opts *o)
{
    baton_async_t *ac;

    ASSERT_EQ(baton_async_new(o, &ac), 0);
    ASSERT_EQ(baton_uv_attach(ac, &t->loop), 0);
    return ac;
}

baton_async_t *a_new_cluster(struct tloop *t, const struct cluster *c, const baton_opts *o)
{
    baton_opts co = {0};

    if (o != NULL) co = *o;
    cluster_client_opts(c, &co);
    return a_new(t, &co);
}

baton_async_t *a_open_with(struct tloop *t, const baton_opts *o)
{
    struct rec r = {0};
    baton_async_t *ac = a_new(t, o);

    ASSERT_EQ(baton_async_open(ac, rec_open, &r), 0);
    run_until(t, &r.calls, 1, 10000);
    if (r.status != 0)
        FAIL("open %s: %s (%s)", o->client_name ? o->client_name : "", baton_err_name(r.status),
             baton_async_errmsg(ac));
    return ac;
}

/* ---- recording callbacks ------------------------------------------------ */

int cb_seq;

static void rec_note(baton_async_t *ac, struct rec *r, int status, uint64_t value)
{
    r->calls++;
    r->status = status;
    r->value = value;
    r->order = ++cb_seq;
    snprintf(r->err, sizeof r->err, "%s", status < 0 ? baton_async_errmsg(ac) : "");
    if (r->free_me) baton_async_free(r->free_me);
}

void rec_open(baton_async_t *ac, int status, uint64_t session, void *data)
{
    rec_note(ac, data, status, session);
}

void rec_lock(baton_async_t *ac, int status, const char *name, uint64_t fence, void *data)
{
    struct rec *r = data;

    ASSERT(name != NULL && name[0] != '\0');
    snprintf(r->name, sizeof r->name, "%s", name);
    rec_note(ac, r, status, fence);
}

void rec_done(baton_async_t *ac, int status, void *data)
{
    rec_note(ac, data, status, 0);
}

void rec_lost(baton_async_t *ac, const char *lock, uint64_t fence, int why, void *data)
{
    struct lostrec *l = data;
    int i = l->calls++;

    ASSERT(i < LOST_MAX);
    snprintf(l->e[i].name, sizeof l->e[i].name, "%s", lock);
    l->e[i].fence = fence;
    l->e[i].why = why;
    l->e[i].at = now_ms();
    l->e[i].order = ++cb_seq;
    snprintf(l->e[i].err, sizeof l->e[i].err, "%s", baton_async_errmsg(ac));
    if (l->unlock_inside) l->e[i].unlock_rv = baton_async_unlock(ac, lock, fence, NULL, NULL);
    if (l->free_me) baton_async_free(l->free_me);
}

bool lost_find(const struct lostrec *l, const char *name, int *idx)
{
    for (int i = 0; i < l->calls; i++)
        if (strcmp(l->e[i].name, name) == 0) {
            *idx = i;
            return true;
        }
    return false;
}
