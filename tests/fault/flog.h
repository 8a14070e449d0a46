/*
 * flog.h -- what every program of the fault harness shares: the log line
 * format, stamped with the machine's CLOCK_MONOTONIC.
 *
 * Every log line of the harness (clients, fenced store, nemesis) starts with
 * the time in microseconds of CLOCK_MONOTONIC (flog_now_us). That clock is
 * one per machine, shared by all processes, and never jumps, so the checker
 * can compare events of different processes: the whole harness runs on one
 * host (127.0.0.1).
 *
 * Some clients run with a clock that goes 0.1% fast or slow: shim_clock.so,
 * preloaded, scales what clock_gettime() answers (tests/fault/shim_clock.c).
 * Their log lines must still carry the real time, or the checker would
 * order their events wrongly against everyone else's -- by 3 ms after 3 s,
 * by 0.6 s after ten minutes. So flog reads the clock with the raw system
 * call, which no preloaded library sees, never with clock_gettime().
 */
#ifndef BATON_TESTS_FAULT_FLOG_H
#define BATON_TESTS_FAULT_FLOG_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/clock.h" /* now_us, sleep_ms: for the harness's own timing */

/* CLOCK_MONOTONIC in microseconds, past any clock shim (see above). */
static inline int64_t flog_now_us(void)
{
    struct timespec ts;

    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Write one line "T_US fmt..." to f and flush it, so that a process stopped
 * or killed later loses nothing it logged. */
static inline void flog(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void flog(FILE *f, const char *fmt, ...)
{
    va_list ap;

    if (f == NULL) return;
    fprintf(f, "%lld ", (long long)flog_now_us());
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fflush(f);
}

#endif
