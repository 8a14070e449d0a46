/*
 * tloop.c -- a private libuv loop for a test to drive. See tloop.h.
 */
#include "tests/lib/tloop.h"

#include <stdint.h>

#include "tests/lib/clock.h"
#include "tests/lib/runner.h"

static void tick_cb(uv_timer_t *t)
{
    (void)t;
}

void tloop_init(struct tloop *t)
{
    ASSERT_EQ(uv_loop_init(&t->loop), 0);
    ASSERT_EQ(uv_timer_init(&t->loop, &t->tick), 0);
    ASSERT_EQ(uv_timer_start(&t->tick, tick_cb, 5, 5), 0);
}

void run_until(struct tloop *t, const int *flag, int want, unsigned ms)
{
    int64_t end = now_ms() + ms;

    while (*flag < want) {
        if (now_ms() > end) FAIL("run_until: still %d of %d after %u ms", *flag, want, ms);
        uv_run(&t->loop, UV_RUN_ONCE);
    }
}

void run_for(struct tloop *t, unsigned ms)
{
    int64_t end = now_ms() + ms;

    while (now_ms() < end) uv_run(&t->loop, UV_RUN_ONCE);
}

/* The handles of a loop other than its ticker (uv_walk). */
struct others {
    const uv_handle_t *tick;
    int n;
};

static void count_other(uv_handle_t *h, void *arg)
{
    struct others *c = arg;

    if (h != c->tick) c->n++;
}

void tloop_done(struct tloop *t)
{
    struct others c = {(const uv_handle_t *)&t->tick, 0};
    int64_t end = now_ms() + 5000;

    for (;;) {
        c.n = 0;
        uv_walk(&t->loop, count_other, &c);
        if (c.n == 0) break;
        if (now_ms() > end) FAIL("%d handles still open 5 s after the last free", c.n);
        uv_run(&t->loop, UV_RUN_ONCE);
    }
    uv_close((uv_handle_t *)&t->tick, NULL);
    uv_run(&t->loop, UV_RUN_DEFAULT);
    ASSERT_EQ(uv_loop_close(&t->loop), 0);
}
