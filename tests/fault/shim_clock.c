/*
 * shim_clock.c -- shim_clock.so, preloaded (LD_PRELOAD) into some of the
 * fault harness's clients: a monotonic clock that runs a little fast or
 * slow, as a real machine's crystal may.
 *
 *   BATON_FAULT_CLOCK_PPM=N   parts per million, e.g. 1000 (0.1% fast) or
 *                             -1000 (0.1% slow)
 *
 * clock_gettime() of CLOCK_MONOTONIC, CLOCK_MONOTONIC_COARSE,
 * CLOCK_MONOTONIC_RAW and CLOCK_BOOTTIME answers
 *
 *     start + (now - start) * (1 + N / 1e6)
 *
 * where start is that clock's real reading when the shim was loaded. So
 * time goes on at the skewed rate from the first instant and never jumps
 * or runs back. That covers every clock the client's timing rests on:
 * libbaton's lease clock (CLOCK_BOOTTIME, client/async.c) and libuv's loop
 * time and timers (uv_hrtime: CLOCK_MONOTONIC, and _COARSE for the loop's
 * cached time). CLOCK_REALTIME is left alone (certificates' validity).
 *
 * The fault logs must carry the real time (the checker orders the events
 * of all processes by it): tests/fault/flog.h reads the clock with the raw
 * system call, which this shim does not see.
 *
 * fault_shim_clock_ppm() tells the client the shim is in and its rate: a
 * client asked for a skewed clock refuses to run without it (client.c).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

static clock_gettime_fn real_clock_gettime;
static long ppm;

static const clockid_t skewed[] = {CLOCK_MONOTONIC, CLOCK_MONOTONIC_COARSE, CLOCK_MONOTONIC_RAW,
                                   CLOCK_BOOTTIME};
#define N_SKEWED (sizeof skewed / sizeof skewed[0])
static int64_t start_ns[N_SKEWED];

static int64_t ts_ns(const struct timespec *ts)
{
    return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

__attribute__((constructor)) static void shim_clock_init(void)
{
    const char *s = getenv("BATON_FAULT_CLOCK_PPM");

    real_clock_gettime = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
    ppm = s ? strtol(s, NULL, 10) : 0;
    if (ppm < -100000 || ppm > 100000) ppm = 0; /* at most 10%: a typo, not a test */
    for (size_t k = 0; k < N_SKEWED; k++) {
        struct timespec ts;
        if (real_clock_gettime && real_clock_gettime(skewed[k], &ts) == 0) start_ns[k] = ts_ns(&ts);
    }
}

__attribute__((visibility("default"))) long fault_shim_clock_ppm(void)
{
    return ppm;
}

__attribute__((visibility("default"))) int clock_gettime(clockid_t id, struct timespec *ts)
{
    int rv;

    if (real_clock_gettime == NULL) shim_clock_init();
    rv = real_clock_gettime(id, ts);
    if (rv != 0 || ppm == 0) return rv;
    for (size_t k = 0; k < N_SKEWED; k++) {
        if (skewed[k] != id) continue;
        /* (now - start) * ppm stays far below 2^63 for any run (1e3 ppm x
         * 1e14 ns = 1e17). */
        int64_t d = ts_ns(ts) - start_ns[k];
        int64_t t = start_ns[k] + d + d * ppm / 1000000;
        ts->tv_sec = (time_t)(t / 1000000000);
        ts->tv_nsec = (long)(t % 1000000000);
        break;
    }
    return rv;
}
