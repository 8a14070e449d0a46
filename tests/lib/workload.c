/*
 * workload.c -- the checked lock workload of the integration tests. See
 * workload.h.
 */
#include "tests/lib/workload.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "tests/lib/clock.h"
#include "tests/lib/runner.h"

/* The lost callback: on the worker's baton_t I/O thread. */
static void on_lost(baton_t *b, const char *lock, uint64_t fence, int why, void *data)
{
    struct workload *w = data;

    (void)b;
    fprintf(stderr, "# lost %s (fence %llu): %s\n", lock, (unsigned long long)fence,
            baton_err_name(why));
    atomic_fetch_add(&w->lost, 1);
}

/* One cycle on lock k: lock, check that nobody else holds it and that its
 * fence is above the last one seen for it, hold it, unlock. */
static void cycle(struct workload *w, baton_t *b, int k, const char *name)
{
    baton_lock_t *l;
    uint64_t f;
    int rv = w->lock_wait_ms > 0 ? baton_lock_timeout(b, name, w->lock_wait_ms, &l)
                                 : baton_lock(b, name, &l);

    if (rv != 0) {
        fprintf(stderr, "# baton_lock(%s): %s (%s)\n", name, baton_err_name(rv), baton_errmsg(b));
        atomic_fetch_add(&w->errors, 1);
        sleep_ms(20);
        return;
    }
    if (atomic_exchange(&w->holder[k], 1) != 0) atomic_fetch_add(&w->violations, 1);
    f = baton_lock_fence(l);
    if (f <= atomic_load(&w->last_fence[k])) {
        fprintf(stderr, "# %s: fence %llu after %llu\n", name, (unsigned long long)f,
                (unsigned long long)atomic_load(&w->last_fence[k]));
        atomic_fetch_add(&w->violations, 1);
    }
    atomic_store(&w->last_fence[k], f);
    sleep_ms(w->hold_ms);
    atomic_store(&w->holder[k], 0);
    rv = baton_unlock(l);
    if (rv != 0) {
        fprintf(stderr, "# baton_unlock(%s): %s (%s)\n", name, baton_err_name(rv),
                baton_errmsg(b));
        atomic_fetch_add(&w->errors, 1);
        return;
    }
    atomic_fetch_add(&w->cycles, 1);
}

static void *worker_run(void *arg)
{
    struct workload_worker *me = arg;
    struct workload *w = me->w;
    int k = me->index % w->n_locks;
    baton_t *b = NULL;
    char name[64];
    int rv = baton_connect(&w->opts, &b);

    if (rv != 0)
        FAIL("workload worker %d: baton_connect(%s): %s: %s", me->index,
             w->opts.endpoints ? w->opts.endpoints : "(null)", baton_err_name(rv),
             baton_connect_errmsg());
    me->session_before = baton_session_id(b);
    snprintf(name, sizeof name, "%s%d", w->prefix, k);
    baton_on_lost(b, on_lost, w);
    atomic_fetch_add(&w->ready, 1);
    while (!atomic_load(&w->stop)) {
        if (atomic_load(&w->pause)) {
            atomic_fetch_add(&w->paused, 1);
            while (atomic_load(&w->pause) && !atomic_load(&w->stop)) sleep_ms(5);
            atomic_fetch_sub(&w->paused, 1);
            continue;
        }
        cycle(w, b, k, name);
    }
    me->session_after = baton_session_id(b);
    baton_close(b);
    return NULL;
}

void workload_start(struct workload *w)
{
    ASSERT(w->n_workers >= 1 && w->n_workers <= WORKLOAD_MAX_WORKERS);
    ASSERT(w->n_locks >= 1 && w->n_locks <= WORKLOAD_MAX_LOCKS);
    ASSERT(w->prefix != NULL && strlen(w->prefix) < 48);
    atomic_init(&w->errors, 0);
    atomic_init(&w->violations, 0);
    atomic_init(&w->lost, 0);
    atomic_init(&w->cycles, 0);
    atomic_init(&w->stop, 0);
    atomic_init(&w->pause, 0);
    atomic_init(&w->paused, 0);
    atomic_init(&w->ready, 0);
    for (int k = 0; k < WORKLOAD_MAX_LOCKS; k++) {
        atomic_init(&w->holder[k], 0);
        atomic_init(&w->last_fence[k], 0);
    }
    for (int i = 0; i < w->n_workers; i++) {
        struct workload_worker *me = &w->workers[i];

        *me = (struct workload_worker){.w = w, .index = i};
        ASSERT_EQ(pthread_create(&me->thread, NULL, worker_run, me), 0);
    }
    while (atomic_load(&w->ready) < w->n_workers) sleep_ms(10);
}

void workload_wait_cycles(struct workload *w, long n, const char *when)
{
    long target = atomic_load(&w->cycles) + n;
    int64_t deadline = now_ms() + 30000;

    while (atomic_load(&w->cycles) < target) {
        if (now_ms() > deadline)
            FAIL("%s: the workers did %ld cycles, not %ld", when, atomic_load(&w->cycles), target);
        sleep_ms(10);
    }
}

void workload_pause(struct workload *w)
{
    int64_t deadline = now_ms() + 30000;

    atomic_store(&w->pause, 1);
    while (atomic_load(&w->paused) < w->n_workers) {
        if (now_ms() > deadline) FAIL("the workers did not pause");
        sleep_ms(5);
    }
}

void workload_resume(struct workload *w)
{
    atomic_store(&w->pause, 0);
}

void workload_stop(struct workload *w)
{
    atomic_store(&w->stop, 1);
    for (int i = 0; i < w->n_workers; i++) ASSERT_EQ(pthread_join(w->workers[i].thread, NULL), 0);
}
