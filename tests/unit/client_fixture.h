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
/* baton_async_lock_with as `owner` (baton_async.h, "Owners"), reentrant
 * or not, into r: the call's return code (its callback fills r later). */
int a_lock_start(baton_async_t *ac, const char *name, int64_t wait_ms, uint64_t owner,
                 uint8_t reentrant, struct rec *r);
/* ... and wait for the outcome. */
struct rec a_lock_as(struct tloop *t, baton_async_t *ac, const char *name, int64_t wait_ms,
                     uint64_t owner, uint8_t reentrant);
/* Run the loop until the fake's counter `field` reaches want (FAILs after
 * ms; tests/unit/fake_server.h). */
#define RUN_UNTIL_FK(t, f, field, want, ms)                                   \
    do {                                                                       \
        int64_t until_ = now_ms() + (ms);                                      \
        while (FK_GET((f), field) < (want)) {                                  \
            if (now_ms() > until_) FAIL("fake's " #field " never reached " #want); \
            run_for((t), 10);                                                  \
        }                                                                      \
    } while (0)
/* Unlock and wait: the status. */
int a_unlock(struct tloop *t, baton_async_t *ac, const char *name, uint64_t fence);

#endif /* BATON_TESTS_UNIT_CLIENT_FIXTURE_H */
