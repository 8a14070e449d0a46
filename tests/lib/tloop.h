/*
 * tloop.h -- a private libuv loop for a test to drive: the async client
 * tests (tests/unit/test_client_*.c through tests/unit/client_fixture.h,
 * tests/integration/test_async.c) run one per test.
 *
 *     struct tloop t;
 *     tloop_init(&t);
 *     ASSERT_EQ(baton_uv_attach(ac, &t.loop), 0);
 *     ...
 *     run_until(&t, &r.calls, 1, 5000);
 *     baton_async_free(ac);
 *     tloop_done(&t);                 // every handle closed, loop closed
 *
 * Every helper that can fail FAILs the running test (tests/lib/runner.h).
 * Binaries that use it link libuv.
 */
#ifndef BATON_TESTS_TLOOP_H
#define BATON_TESTS_TLOOP_H

#include <uv.h>

/* A loop with a ticker, so that UV_RUN_ONCE returns regularly and the
 * run_* helpers can check their deadlines. */
struct tloop {
    uv_loop_t loop;
    uv_timer_t tick;
};

void tloop_init(struct tloop *t);
/* Run the loop until *flag >= want, failing after ms milliseconds. */
void run_until(struct tloop *t, const int *flag, int want, unsigned ms);
/* Run the loop for about ms milliseconds. */
void run_for(struct tloop *t, unsigned ms);
/*
 * The end of every test: once the contexts are freed, their adapters close
 * their handles. Wait (at most 5 s) until the ticker is the only handle
 * left, close it, and check that the loop closes cleanly.
 */
void tloop_done(struct tloop *t);

#endif /* BATON_TESTS_TLOOP_H */
