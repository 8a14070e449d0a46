/*
 * fake_clock.h -- a monotonic clock that only the test moves, for the
 * threads that ask for it (the in-process server's loop thread,
 * tests/unit/leader_fixture.h).
 *
 *     fake_clock_bind_thread();        // on the thread whose clock it is
 *     ...
 *     fake_clock_advance(199);         // from any thread
 *
 * fake_clock.c defines clock_gettime(3) for the test executable, exported
 * (default visibility). The executable comes first in the dynamic
 * linker's lookup order, so libuv.so's own calls reach it too: uv_now,
 * uv_hrtime and every libuv timer read CLOCK_MONOTONIC (or _COARSE)
 * through clock_gettime. test_leader's fake_clock_reaches_libuv checks
 * that this holds for the libuv it is linked with.
 *
 * On a bound thread CLOCK_MONOTONIC and CLOCK_MONOTONIC_COARSE read the
 * fake clock: it starts at FAKE_CLOCK_START_MS and moves only by
 * fake_clock_advance. Every other clock (CLOCK_REALTIME: log stamps,
 * certificates), and every clock on the other threads, is the kernel's:
 * the test's clients, with their connect and request timeouts, and the
 * test's own waits run on real time.
 */
#ifndef BATON_TESTS_UNIT_FAKE_CLOCK_H
#define BATON_TESTS_UNIT_FAKE_CLOCK_H

#include <stdint.h>

/* Not 0: code that keeps 0 for "not yet" (a loop turn's start, say) must
 * not mistake the fake clock's first instant for it. */
#define FAKE_CLOCK_START_MS 1000000u

/* The calling thread reads the fake clock from now on. */
void fake_clock_bind_thread(void);
/* Move the fake clock forward by ms (atomically; any thread). */
void fake_clock_advance(uint64_t ms);
/* The fake clock's reading, in ms. */
uint64_t fake_clock_now_ms(void);

#endif /* BATON_TESTS_UNIT_FAKE_CLOCK_H */
