/*
 * client_fixture.h -- what the unit tests of libbaton's async API
 * (client/baton_async.h, on the libuv adapter; tests/unit/test_client_*.c)
 * share: callbacks that record what they saw, a private uv loop to drive,
 * and open / lock / unlock / close done in one call each. The servers are
 * tests/unit/fake_server.h's.
 *
 * Async tests count every callback and check the exact numbers, and end
 * with every handle closed and uv_loop_close() == 0 (tloop_done).
 *
 * Every helper that can fail FAILs the running test (tests/lib/runner.h).
 */
#ifndef BATON_TESTS_UNIT_CLIENT_FIXTURE_H
#define BATON_TESTS_UNIT_CLIENT_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "client/baton_async.h"

/* ---- recording callbacks ------------------------------------------------ */

/* What one callback saw. */
struct rec {
    int calls;
    int status;
    uint64_t value; /* fence or session */
    int order;      /* global callback order, for ordering checks */
    char err[256];
    baton_async_t *free_me; /* free this context from inside the callback */
};

/* The order of the last callback recorded (struct rec's `order`). */
extern int cb_seq;

/* Callbacks that record into the struct rec their data points to. */
void rec_open(baton_async_t *ac, int status, uint64_t session, void *data);
void rec_lock(baton_async_t *ac, int status, const char *name, uint64_t fence, void *data);
void rec_done(baton_async_t *ac, int status, void *data);

/* What the lost callback saw, lock by lock. */
#define LOST_MAX 8
struct lostrec {
    int calls;
    struct {
        char name[32];
        uint64_t fence;
        int why;
        int64_t at;    /* now_ms() */
        int order;     /* in cb_seq */
        char err[256];
        int unlock_rv; /* of baton_async_unlock called inside, if unlock_inside */
    } e[LOST_MAX];
    bool unlock_inside; /* unlock each lost lock from inside the callback */
    baton_async_t *free_me; /* free this context from inside the callback */
};

/* The lost callback (baton_async_on_lost) that records into a lostrec. */
void rec_lost(baton_async_t *ac, const char *lock, uint64_t fence, int why, void *data);

/* Find the lost record of lock `name`: true, with its index in *idx. */
bool lost_find(const struct lostrec *l, const char *name, int *idx);

/* ---- a loop to drive ---------------------------------------------------- */

/* A loop with a ticker, so that run_until wakes up regularly. */
struct tloop {
    uv_loop_t loop;
    uv_timer_t tick;
};

void tloop_init(struct tloop *t);
/* Run the loop until *flag >= want, failing after ms milliseconds. */
void run_until(struct tloop *t, const int *flag, int want, unsigned ms);
/* Run the loop for about ms milliseconds. */
void run_for(struct tloop *t, unsigned ms);
/* Close the ticker, let every handle close, and check the loop is empty. */
void tloop_done(struct tloop *t);

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
