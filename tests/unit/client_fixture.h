/*
 * client_fixture.h -- what the unit tests of libbaton's async API
 * (include/baton/baton_async.h, on the libuv adapter; tests/unit/test_client_*.c)
 * share: open / lock / unlock / close done in one call each, on the loop
 * of tests/lib/tloop.h with the recording callbacks of tests/lib/aclient.h
 * (both included here). The servers are tests/unit/fake_server.h's.
 *
 * Async tests count every callback and check the exact numbers, and end
 * with every handle closed and uv_loop_close() == 0 (tloop_done).
 *
 * Every helper that can fail FAILs the running test (tests/lib/runner.h).
 */
#ifndef BATON_TESTS_UNIT_CLIENT_FIXTURE_H
#define BATON_TESTS_UNIT_CLIENT_FIXTURE_H

#include <stdint.h>

#include "baton/baton_async.h"
#include "tests/lib/aclient.h"
#include "tests/lib/tloop.h"

/* ---- one call each ------------------------------------------------------ */

/* A context on t's loop, opened against endpoints with a session lease of
 * ttl_ms (0: the default); waits for the open and checks its status. */
baton_async_t *a_open_ttl(struct tloop *t, const char *eps, unsigned op_ms, unsigned ttl_ms,
                          int want_status);
baton_async_t *a_open(struct tloop *t, const char *eps, unsigned op_ms, int want_status);
/* Close the session, then free. */
void a_close(struct tloop *t, baton_async_t *ac);
/* Lock and wait for the outcome. */
struct rec a_lock(struct tloop *t, baton_async_t *ac, const char *name, int64_t wait_ms);
/* Unlock and wait: the status. */
int a_unlock(struct tloop *t, baton_async_t *ac, const char *name, uint64_t fence);

#endif /* BATON_TESTS_UNIT_CLIENT_FIXTURE_H */
