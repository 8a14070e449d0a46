/*
 * client_fixture.c -- what the unit tests of libbaton's async API share;
 * see client_fixture.h.
 */
#include "tests/unit/client_fixture.h"

#include "baton/baton_defs.h"
#include "tests/lib/runner.h"

/* ---- one call each ------------------------------------------------------ */

/* A context on t's loop, opened against endpoints with a session lease of
 * ttl_ms (0: the default); waits for the open. */
baton_async_t *a_open_ttl(struct tloop *t, const char *eps, unsigned op_ms, unsigned ttl_ms,
                          int want_status)
{
    baton_opts o = {.endpoints = eps, .client_name = "test", .op_timeout_ms = op_ms,
                    .connect_timeout_ms = 2000, .session_ttl_ms = ttl_ms};
    struct rec r = {0};
    baton_async_t *ac = a_new(t, &o);

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

int a_lock_start(baton_async_t *ac, const char *name, int64_t wait_ms, uint64_t owner,
                 uint8_t reentrant, struct rec *r)
{
    baton_lock_args a = {.wait_ms = wait_ms, .owner = owner, .reentrant = reentrant};

    return baton_async_lock_with(ac, name, &a, rec_lock, r);
}

struct rec a_lock_as(struct tloop *t, baton_async_t *ac, const char *name, int64_t wait_ms,
                     uint64_t owner, uint8_t reentrant)
{
    struct rec r = {0};

    ASSERT_EQ(a_lock_start(ac, name, wait_ms, owner, reentrant, &r), 0);
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
