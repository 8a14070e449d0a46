/*
 * client_fixture.c -- what the unit tests of libbaton's async API share;
 * see client_fixture.h.
 */
#include "tests/unit/client_fixture.h"

#include <stdio.h>
#include <string.h>

#include "client/adapters/libuv.h"
#include "client/baton_defs.h"
#include "tests/lib/clock.h"
#include "tests/lib/runner.h"

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
    ASSERT(name != NULL && name[0] != '\0');
    rec_note(ac, data, status, fence);
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

/* Find the lost record of lock `name`: true, with its index in *idx. */
bool lost_find(const struct lostrec *l, const char *name, int *idx)
{
    for (int i = 0; i < l->calls; i++)
        if (strcmp(l->e[i].name, name) == 0) {
            *idx = i;
            return true;
        }
    return false;
}

/* ---- a loop to drive ---------------------------------------------------- */

static void tick_cb(uv_timer_t *t)
{
    (void)t;
}

void tloop_init(struct tloop *t)
{
    ASSERT_EQ(uv_loop_init(&t->loop), 0);
    uv_timer_init(&t->loop, &t->tick);
    uv_timer_start(&t->tick, tick_cb, 5, 5);
}

/* Run the loop until *flag >= want, failing after ms milliseconds. */
void run_until(struct tloop *t, const int *flag, int want, unsigned ms)
{
    int64_t end = now_ms() + ms;

    while (*flag < want) {
        if (now_ms() > end) FAIL("run_until: still %d of %d after %u ms", *flag, want, ms);
        uv_run(&t->loop, UV_RUN_ONCE);
    }
}

/* Run the loop for about ms milliseconds. */
void run_for(struct tloop *t, unsigned ms)
{
    int64_t end = now_ms() + ms;

    while (now_ms() < end) uv_run(&t->loop, UV_RUN_ONCE);
}

/* Close the ticker, let every handle close, and check the loop is empty. */
void tloop_done(struct tloop *t)
{
    uv_close((uv_handle_t *)&t->tick, NULL);
    uv_run(&t->loop, UV_RUN_DEFAULT);
    ASSERT_EQ(uv_loop_close(&t->loop), 0);
}

/* ---- one call each ------------------------------------------------------ */

/* A context on t's loop, opened against endpoints with a session lease of
 * ttl_ms (0: the default); waits for the open. */
baton_async_t *a_open_ttl(struct tloop *t, const char *eps, unsigned op_ms, unsigned ttl_ms,
                          int want_status)
{
    baton_opts o = {.endpoints = eps, .client_name = "test", .op_timeout_ms = op_ms,
                    .connect_timeout_ms = 2000, .session_ttl_ms = ttl_ms};
    struct rec r = {0};
    baton_async_t *ac;

    ASSERT_EQ(baton_async_new(&o, &ac), 0);
    ASSERT_EQ(baton_uv_attach(ac, &t->loop), 0);
    ASSERT_EQ(baton_async_open(ac, rec_open, &r), 0);
    run_until(t, &r.calls, 1, 5000);
    ASSERT_EQ(r.calls, 1);
    ASSERT_EQ(r.status, want_status);
    if (want_status == 0) ASSERT_UEQ(r.value, baton_async_session_id(ac));
    return ac;
}

baton_async_t *a_open(struct tloop *t, const char *eps, unsigned op_ms, int want_status)
{
    return a_open_ttl(t, eps, op_ms, 0, want_status);
}

/* Close the session, then free. */
void a_close(struct tloop *t, baton_async_t *ac)
{
    struct rec r = {0};

    ASSERT_EQ(baton_async_close_session(ac, rec_done, &r), 0);
    run_until(t, &r.calls, 1, 5000);
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(baton_async_pending(ac), 0);
    baton_async_free(ac);
}

/* Lock and wait for the outcome. */
struct rec a_lock(struct tloop *t, baton_async_t *ac, const char *name, int64_t wait_ms)
{
    struct rec r = {0};

    ASSERT_EQ(baton_async_lock(ac, name, wait_ms, rec_lock, &r), 0);
    run_until(t, &r.calls, 1, 5000);
    ASSERT_EQ(r.calls, 1);
    return r;
}

int a_unlock(struct tloop *t, baton_async_t *ac, const char *name, uint64_t fence)
{
    struct rec r = {0};

    ASSERT_EQ(baton_async_unlock(ac, name, fence, rec_done, &r), 0);
    run_until(t, &r.calls, 1, 5000);
    ASSERT_EQ(r.calls, 1);
    return r.status;
}
