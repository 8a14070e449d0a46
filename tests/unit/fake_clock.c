/*
 * fake_clock.c -- a monotonic clock only the test moves; see fake_clock.h.
 */
#include "tests/unit/fake_clock.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

typedef int clock_gettime_fn(clockid_t, struct timespec *);

static _Atomic(clock_gettime_fn *) real_;
static _Atomic uint64_t fake_ns_ = (uint64_t)FAKE_CLOCK_START_MS * 1000000;
static _Thread_local bool bound_;

/* libc's clock_gettime, the next definition after this executable's. */
static clock_gettime_fn *real_clock_gettime(void)
{
    clock_gettime_fn *fn = atomic_load(&real_);

    if (fn == NULL) {
        fn = (clock_gettime_fn *)dlsym(RTLD_NEXT, "clock_gettime");
        atomic_store(&real_, fn);
    }
    return fn;
}

/* Resolved before main, while the process has one thread. */
__attribute__((constructor)) static void fake_clock_init(void)
{
    real_clock_gettime();
}

void fake_clock_bind_thread(void)
{
    bound_ = true;
}

void fake_clock_advance(uint64_t ms)
{
    atomic_fetch_add(&fake_ns_, ms * 1000000);
}

uint64_t fake_clock_now_ms(void)
{
    return atomic_load(&fake_ns_) / 1000000;
}

__attribute__((visibility("default"))) int clock_gettime(clockid_t id, struct timespec *ts)
{
    uint64_t ns;

    if (!bound_ || (id != CLOCK_MONOTONIC && id != CLOCK_MONOTONIC_COARSE))
        return real_clock_gettime()(id, ts);
    ns = atomic_load(&fake_ns_);
    ts->tv_sec = (time_t)(ns / 1000000000);
    ts->tv_nsec = (long)(ns % 1000000000);
    return 0;
}
