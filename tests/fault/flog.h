/*
 * flog.h -- what every program of the fault harness shares: the log line
 * format, stamped with the tests' clock (tests/lib/clock.h).
 *
 * Every log line of the harness (clients, fenced store, nemesis) starts with
 * the time in microseconds of CLOCK_MONOTONIC (now_us). That clock is one per
 * machine, shared by all processes, and never jumps, so the checker can
 * compare events of different processes: the whole harness runs on one
 * host (127.0.0.1).
 */
#ifndef BATON_TESTS_FAULT_FLOG_H
#define BATON_TESTS_FAULT_FLOG_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "tests/lib/clock.h"

/* Write one line "T_US fmt..." to f and flush it, so that a process stopped
 * or killed later loses nothing it logged. */
static inline void flog(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void flog(FILE *f, const char *fmt, ...)
{
    va_list ap;

    if (f == NULL) return;
    fprintf(f, "%lld ", (long long)now_us());
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fflush(f);
}

#endif
