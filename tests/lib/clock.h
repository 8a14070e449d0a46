/*
 * clock.h -- the tests' one clock: CLOCK_MONOTONIC in ns, us or ms, and
 * sleeps that last their whole time even when a signal interrupts them.
 *
 *     int64_t deadline = now_ms() + 10000;
 *     while (!done()) {
 *         if (now_ms() > deadline) FAIL("not done within 10 s");
 *         sleep_ms(50);
 *     }
 *
 * Header only (static inline), so that every test program can use it
 * whatever it links: the fault harness's small programs (tests/fault/flog.h
 * stamps its log lines with now_us) and lockbench (tests/bench/bench.h) too.
 * CLOCK_MONOTONIC is one clock per machine, so times taken by different
 * processes of one test compare.
 */
#ifndef BATON_TESTS_CLOCK_H
#define BATON_TESTS_CLOCK_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

static inline int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t now_us(void)
{
    return now_ns() / 1000;
}

static inline int64_t now_ms(void)
{
    return now_ns() / 1000000;
}

/* Sleep ns nanoseconds (nothing if ns <= 0), resuming after signals. */
static inline void sleep_ns(int64_t ns)
{
    struct timespec ts;

    if (ns <= 0) return;
    ts.tv_sec = (time_t)(ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static inline void sleep_ms(int64_t ms)
{
    sleep_ns(ms * 1000000);
}

#endif /* BATON_TESTS_CLOCK_H */
