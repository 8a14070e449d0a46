/*
 * test_client_values.c -- libbaton's side of protocol 6 against the fake
 * servers of tests/unit/fake_server.h: the public lock state made from its
 * wire form (one block, NUL-terminated names, values as bytes); lock calls
 * with a value go as ACQUIRE2 (and are re-sent as such), without one as
 * the plain ACQUIRE; the value checks; PROCLAIM; LOCK_STATE reads; WATCH2
 * streams (events in order, PROGRESS not delivered but resumed from,
 * resumption after a broken connection, unwatch, a refused watch); the
 * observe filter; the blocking watch's bounded queue.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton/adapters/libuv.h"
#include "baton/baton.h"
#include "baton/baton_async.h"
#include "baton/baton_defs.h"
#include "client/async_int.h"
#include "tests/lib/clock.h"
#include "tests/lib/runner.h"
#include "tests/unit/client_fixture.h"
#include "tests/unit/fake_server.h"

/* ---- the conversion (client/lockstate.c) ---------------------------------------- */

TEST(state_from_wire_is_one_block)
{
    struct msg_holder_v h[2] = {
        {.session = 5, .waiter = 9, .fence = 40, .granted_index = 77, .mode = 1, .count = 2,
         .client_name = {"alpha", 5}, .value = {"\0bin\0", 5}},
        {.session = 6, .fence = 41, .granted_index = 78, .mode = 1, .count = 1,
         .client_name = {"", 0}, .value = {NULL, 0}},
    };
    struct msg_waiter_v w = {.session = 7, .waiter = 3, .wait_ms = 250, .mode = 0,
                             .client_name = {"gamma", 5}, .value = {"wv", 2}};
    struct msg_lock_state m = {.revision = 99, .held = 1, .mode = 1, .limit = 1, .delayed = 0,
                               .total_holders = 3, .n_holders = 2, .holders = h,
                               .total_waiters = 1, .n_waiters = 1, .waiters = &w,
                               .lock = {"locks/x", 7}};
    struct msg_watch2_event e = {.kind = WATCH2_GAP, .state = m};
    baton_lock_state *st = baton__state_new(&m);
    baton_event *ev;
    const char *lo = (const char *)st, *hi;

    ASSERT(st != NULL);
    hi = lo + sizeof *st + 2 * sizeof(baton_holder) + sizeof(baton_waiter) + 8 + 6 + 5 + 1 + 6 + 2;
    ASSERT_STREQ(st->name, "locks/x");
    ASSERT(st->name > lo && st->name < hi); /* inside the block, not the message */
    ASSERT_UEQ(st->revision, 99);
    ASSERT_EQ(st->held, 1);
    ASSERT_EQ(st->mode, 1);
    ASSERT_EQ(st->total_holders, 3);
    ASSERT_EQ(st->n_holders, 2);
    ASSERT_UEQ(st->holders[0].session, 5);
    ASSERT_UEQ(st->holders[0].fence, 40);
    ASSERT_UEQ(st->holders[0].granted_revision, 77);
    ASSERT_EQ(st->holders[0].count, 2);
    ASSERT_STREQ(st->holders[0].client_name, "alpha");
    ASSERT_EQ(st->holders[0].value_len, 5);
    ASSERT(memcmp(st->holders[0].value, "\0bin\0", 5) == 0);
    ASSERT((const char *)st->holders[0].value > lo && (const char *)st->holders[0].value < hi);
    ASSERT_STREQ(st->holders[1].client_name, "");
    ASSERT(st->holders[1].value == NULL);
    ASSERT_EQ(st->holders[1].value_len, 0);
    ASSERT_EQ(st->n_waiters, 1);
    ASSERT_UEQ(st->waiters[0].session, 7);
    ASSERT_EQ(st->waiters[0].wait_ms, 250);
    ASSERT_STREQ(st->waiters[0].client_name, "gamma");
    ASSERT_EQ(st->waiters[0].value_len, 2);
    ASSERT(memcmp(st->waiters[0].value, "wv", 2) == 0);
    baton_lock_state_free(st);

    ev = baton__event_new(&e);
    ASSERT(ev != NULL);
    ASSERT_EQ(ev->kind, BATON_EVENT_GAP);
    ASSERT_UEQ(ev->revision, 99);
    ASSERT(ev->state != NULL);
    ASSERT_STREQ(ev->state->holders[0].client_name, "alpha");
    ASSERT_STREQ(ev->state->waiters[0].client_name, "gamma");
    baton_event_free(ev);

    /* SYNCED has no state; nobody holding has no lists. */
    e = (struct msg_watch2_event){.kind = WATCH2_SYNCED, .restarted = 1, .state = {.revision = 5}};
    ev = baton__event_new(&e);
    ASSERT_EQ(ev->kind, BATON_EVENT_SYNCED);
    ASSERT_EQ(ev->restarted, 1);
    ASSERT(ev->state == NULL);
    baton_event_free(ev);
    m = (struct msg_lock_state){.revision = 3, .lock = {"free", 4}};
    st = baton__state_new(&m);
    ASSERT(st->holders == NULL && st->waiters == NULL);
    ASSERT_EQ(st->held, 0);
    ASSERT_STREQ(st->name, "free");
    baton_lock_state_free(st);
}

/* ---- values and proclaim ------------------------------------------------------------ */

static void lock_value_cb(baton_async_t *ac, int status, const char *name, uint64_t fence,
                          void *data)
{
    rec_lock(ac, status, name, fence, data);
}

static struct rec lock_v(struct tloop *t, baton_async_t *ac, const char *name, const char *v)
{
    baton_lock_args a = {.wait_ms = BATON_WAIT_FOREVER, .value = v, .value_len = strlen(v)};
    struct rec r = {0};

    ASSERT_EQ(baton_async_lock_with(ac, name, &a, lock_value_cb, &r), 0);
    run_until(t, &r.calls, 1, 5000);
    return r;
}

struct srec {
    int calls, status;
    char v0[64];       /* holders[0]'s value, "" if none */
    uint64_t fence0;
    uint32_t n_holders, n_waiters;
};

static void rec_state(baton_async_t *ac, int status, const baton_lock_state *st, void *data)
{
    struct srec *r = data;

    (void)ac;
    r->calls++;
    r->status = status;
    if (st == NULL) return;
    r->n_holders = st->n_holders;
    r->n_waiters = st->n_waiters;
    if (st->n_holders > 0) {
        snprintf(r->v0, sizeof r->v0, "%.*s", (int)st->holders[0].value_len,
                 st->holders[0].value ? (const char *)st->holders[0].value : "");
        r->fence0 = st->holders[0].fence;
    }
}

static struct srec read_s(struct tloop *t, baton_async_t *ac, const char *name)
{
    struct srec r = {0};

    ASSERT_EQ(baton_async_lock_state(ac, name, rec_state, &r), 0);
    run_until(t, &r.calls, 1, 5000);
    return r;
}

static int proclaim(struct tloop *t, baton_async_t *ac, const char *name, uint64_t fence,
                    const char *v)
{
    struct rec r = {0};

    ASSERT_EQ(baton_async_proclaim(ac, name, fence, v, v ? strlen(v) : 0, rec_done, &r), 0);
    run_until(t, &r.calls, 1, 5000);
    return r.status;
}

TEST(value_goes_as_acquire2_plain_lock_as_acquire)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct rec a, b;
    struct srec s;

    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, 0);
    a = a_lock(&t, ac, "plain", BATON_WAIT_FOREVER);
    ASSERT_EQ(a.status, 0);
    ASSERT_EQ(FK_GET(f, n_acquire2), 0);
    b = lock_v(&t, ac, "valued", "10.1.2.3:80");
    ASSERT_EQ(b.status, 0);
    ASSERT_EQ(FK_GET(f, n_acquire2), 1);
    ASSERT_EQ(FK_GET(f, n_acquire), 2);
    s = read_s(&t, ac, "valued");
    ASSERT_EQ(s.status, 0);
    ASSERT_STREQ(s.v0, "10.1.2.3:80");
    ASSERT_UEQ(s.fence0, b.value);
    ASSERT_EQ(proclaim(&t, ac, "valued", b.value, "new"), 0);
    ASSERT_EQ(FK_GET(f, n_proclaim), 1);
    s = read_s(&t, ac, "valued");
    ASSERT_STREQ(s.v0, "new");
    ASSERT_EQ(proclaim(&t, ac, "valued", b.value, NULL), 0);
    s = read_s(&t, ac, "valued");
    ASSERT_STREQ(s.v0, "");
    /* Another hold's fence: not this session's. */
    ASSERT_EQ(proclaim(&t, ac, "valued", a.value, "x"), BATON_ENOTHELD);
    ASSERT_EQ(a_unlock(&t, ac, "valued", b.value), 0);
    s = read_s(&t, ac, "valued");
    ASSERT_EQ(s.n_holders, 0);
    ASSERT_EQ(a_unlock(&t, ac, "plain", a.value), 0);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

TEST(value_resent_with_the_acquire_after_a_broken_connection)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct rec r;
    struct srec s;

    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, 0);
    FK_SET(f, drop_unanswered, 1); /* applied, then the connection breaks */
    r = lock_v(&t, ac, "again", "me");
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(FK_GET(f, n_acquire2), 2); /* re-sent as ACQUIRE2, with the same seq */
    ASSERT_STREQ(f->last_value, "me");
    ASSERT_EQ(FK_GET(f, n_dedup_hits), 1);
    s = read_s(&t, ac, "again");
    ASSERT_STREQ(s.v0, "me");
    ASSERT_UEQ(s.fence0, r.value);
    ASSERT_EQ(a_unlock(&t, ac, "again", r.value), 0);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

TEST(value_checks)
{
    struct fake *f = fake_start();
    static char big[BATON_MAX_VALUE + 1];
    baton_lock_args a = {.wait_ms = BATON_WAIT_TRY, .value = big, .value_len = sizeof big};
    struct rec r = {0};
    struct tloop t;
    baton_async_t *ac;

    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, 0);
    ASSERT_EQ(baton_async_lock_with(ac, "v", &a, rec_lock, &r), BATON_ETOOBIG);
    a.value = NULL;
    a.value_len = 1;
    ASSERT_EQ(baton_async_lock_with(ac, "v", &a, rec_lock, &r), BATON_EINVAL);
    a.value = "x";
    ASSERT_EQ(baton_async_lock_many(ac, (const char *[]){"m1", "m2"}, 2, &a, rec_lock, &r),
              BATON_EINVAL);
    ASSERT_EQ(baton_async_proclaim(ac, "v", 1, big, sizeof big, rec_done, &r), BATON_ETOOBIG);
    ASSERT_EQ(baton_async_proclaim(ac, "v", 1, NULL, 3, rec_done, &r), BATON_EINVAL);
    run_for(&t, 20);
    ASSERT_EQ(r.calls, 0);
    ASSERT_EQ(FK_GET(f, n_acquire), 0);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

/* ---- watches -------------------------------------------------------------------------- */

#define EV_MAX 64
struct wrec {
    int calls, ends, status;
    int kind[EV_MAX], restarted[EV_MAX];
    uint64_t rev[EV_MAX];
    char v0[EV_MAX][16];
};

static void rec_watch(baton_async_t *ac, int status, const baton_event *ev, void *data)
{
    struct wrec *r = data;

    (void)ac;
    if (status != 0) {
        ASSERT(ev == NULL);
        r->ends++;
        r->status = status;
        return;
    }
    ASSERT(r->calls < EV_MAX);
    r->kind[r->calls] = ev->kind;
    r->restarted[r->calls] = ev->restarted;
    r->rev[r->calls] = ev->revision;
    if (ev->state && ev->state->n_holders)
        snprintf(r->v0[r->calls], sizeof r->v0[0], "%.*s", (int)ev->state->holders[0].value_len,
                 (const char *)ev->state->holders[0].value);
    r->calls++;
}

TEST(watch_events_progress_resume_unwatch)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    baton_async_watch_t *w;
    struct wrec r = {0};
    uint64_t progress;

    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, 0);
    ASSERT_EQ(baton_async_watch(ac, "w", 0, 0, rec_watch, &r, &w), 0);
    run_until(&t, &r.calls, 2, 5000);
    ASSERT_EQ(r.kind[0], BATON_EVENT_STATE);
    ASSERT_EQ(r.kind[1], BATON_EVENT_SYNCED);
    ASSERT_EQ(r.restarted[1], 0);
    FK_SET(f, do_watch_change, 2);
    run_until(&t, &r.calls, 4, 5000);
    ASSERT_EQ(r.kind[2], BATON_EVENT_CHANGE);
    ASSERT_EQ(r.kind[3], BATON_EVENT_CHANGE);
    ASSERT_ULT(r.rev[2], r.rev[3]);
    ASSERT(strcmp(r.v0[3], "c") > 0);
    /* PROGRESS is not delivered, but the stream resumes after it. */
    FK_SET(f, do_watch_progress, 1);
    run_for(&t, 100);
    ASSERT_EQ(r.calls, 4);
    progress = r.rev[3] + 1;
    FK_SET(f, do_drop_all, true);
    run_until(&t, &r.calls, 5, 5000);
    ASSERT_EQ(FK_GET(f, n_watch2), 2);
    ASSERT_UEQ(FK_GET(f, last_after), progress);
    ASSERT_EQ(r.kind[4], BATON_EVENT_SYNCED);
    ASSERT_EQ(r.restarted[4], 0);
    ASSERT_UEQ(r.rev[4], progress);
    FK_SET(f, do_watch_change, 1);
    run_until(&t, &r.calls, 6, 5000);
    ASSERT_EQ(r.kind[5], BATON_EVENT_CHANGE);
    ASSERT_ULT(progress, r.rev[5]);
    ASSERT_EQ(baton_async_unwatch(ac, w), 0);
    ASSERT_EQ(r.ends, 0); /* from the loop, not before unwatch returns */
    run_until(&t, &r.ends, 1, 5000);
    ASSERT_EQ(r.status, BATON_ECANCELED);
    run_for(&t, 50);
    ASSERT_EQ(FK_GET(f, n_unwatch), 1);
    FK_SET(f, do_watch_change, 1); /* nobody listens any more */
    run_for(&t, 50);
    ASSERT_EQ(r.calls, 6);
    ASSERT_EQ(r.ends, 1);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

TEST(watch_waits_for_a_leader_past_the_op_timeout)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    baton_async_watch_t *w;
    struct wrec r = {0};
    int64_t t0;

    tloop_init(&t);
    ac = a_open(&t, f->addr, 200, 0); /* op timeout 200 ms */
    (void)read_s(&t, ac, "w"); /* the fake's revision passes 0 */
    ASSERT_EQ(baton_async_watch(ac, "w", 0, 0, rec_watch, &r, &w), 0);
    run_until(&t, &r.calls, 2, 5000);
    /* No leader for well over the op timeout. */
    FK_SET(f, no_leader, 15);
    FK_SET(f, do_drop_all, true);
    t0 = now_ms();
    while (FK_GET(f, no_leader) > 0 && now_ms() - t0 < 10000) run_for(&t, 20);
    ASSERT_GT(now_ms() - t0, 400);
    run_until(&t, &r.calls, 3, 5000);
    ASSERT_EQ(r.ends, 0);
    ASSERT_EQ(r.kind[2], BATON_EVENT_SYNCED);
    ASSERT_EQ(r.restarted[2], 0);
    ASSERT_EQ(baton_async_unwatch(ac, w), 0);
    run_until(&t, &r.ends, 1, 5000);
    ASSERT_EQ(r.status, BATON_ECANCELED);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

TEST(watch_refused_ends_it)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct wrec r = {0};

    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, 0);
    fk_refuse(f, MSG_WATCH2, BATON_EPERM, "no read on w");
    ASSERT_EQ(baton_async_watch(ac, "w", 0, 0, rec_watch, &r, NULL), 0);
    run_until(&t, &r.ends, 1, 5000);
    ASSERT_EQ(r.status, BATON_EPERM);
    ASSERT(strstr(baton_async_errmsg(ac), "no read on w") != NULL);
    ASSERT_EQ(r.calls, 0);
    ASSERT_EQ(baton_async_watch(ac, "", 0, 0, rec_watch, &r, NULL), BATON_EINVAL);
    ASSERT_EQ(baton_async_watch(ac, "w", 0x80, 0, rec_watch, &r, NULL), BATON_EINVAL);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

TEST(observe_reports_only_changes_of_the_leader)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    baton_async_watch_t *w;
    struct wrec r = {0};

    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, 0);
    FK_SET(f, watch_same, true);
    ASSERT_EQ(baton_async_observe(ac, "e", rec_watch, &r, &w), 0);
    run_until(&t, &r.calls, 2, 5000); /* STATE, SYNCED pass through */
    ASSERT_EQ(r.kind[0], BATON_EVENT_STATE);
    ASSERT_STREQ(r.v0[0], "same");
    FK_SET(f, do_watch_change, 3); /* the queue changes, the leader does not */
    run_for(&t, 100);
    ASSERT_EQ(r.calls, 2);
    FK_SET(f, watch_same, false);
    FK_SET(f, do_watch_change, 2); /* a new leader each */
    run_until(&t, &r.calls, 4, 5000);
    ASSERT_EQ(r.kind[2], BATON_EVENT_CHANGE);
    ASSERT_EQ(r.kind[3], BATON_EVENT_CHANGE);
    ASSERT(strcmp(r.v0[2], r.v0[3]) != 0);
    ASSERT_EQ(baton_async_unwatch(ac, w), 0);
    run_until(&t, &r.ends, 1, 5000);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

/* ---- the blocking watch ------------------------------------------------------------------- */

static baton_t *b_connect(const char *eps)
{
    baton_opts o = {.endpoints = eps, .client_name = "values-test"};
    baton_t *b = NULL;

    ASSERT_EQ(baton_connect(&o, &b), 0);
    return b;
}

static baton_event *take(baton_watch_t *w)
{
    baton_event *ev = NULL;
    int rv = baton_watch_next(w, 5000, &ev);

    if (rv != 0) FAIL("watch_next: %s", baton_err_name(rv));
    return ev;
}

TEST(blocking_watch_overflow_resubscribes_from_what_was_taken)
{
    struct fake *f = fake_start();
    baton_t *b = b_connect(f->addr);
    baton_watch_t *w;
    baton_event *ev;
    baton_lock_state *st;
    uint64_t synced;

    ASSERT_EQ(baton_lock_state_get(b, "q", &st), 0); /* the fake's revision passes 0 */
    ASSERT_EQ(st->n_holders, 0);
    baton_lock_state_free(st);
    ASSERT_EQ(baton_watch(b, "q", 0, 0, &w), 0);
    ev = take(w);
    ASSERT_EQ(ev->kind, BATON_EVENT_STATE);
    baton_event_free(ev);
    ev = take(w);
    ASSERT_EQ(ev->kind, BATON_EVENT_SYNCED);
    synced = ev->revision;
    ASSERT_GT(synced, 0);
    baton_event_free(ev);
    ASSERT_EQ(baton_watch_next(w, 50, &ev), BATON_ETIMEDOUT);
    ASSERT(ev == NULL);
    /* More than the queue holds, none taken: dropped, and the watch
     * subscribes again from the last revision taken. */
    FK_SET(f, do_watch_change, 5000);
    for (int64_t until = now_ms() + 10000; FK_GET(f, n_watch2) < 2;) {
        if (now_ms() > until) FAIL("no second WATCH2");
        sleep_ms(10);
    }
    ASSERT_UEQ(FK_GET(f, last_after), synced);
    ASSERT_EQ(FK_GET(f, n_unwatch), 1);
    /* The next event the caller sees is the new stream's answer: nothing
     * of the dropped one. */
    ev = take(w);
    ASSERT_EQ(ev->kind, BATON_EVENT_SYNCED);
    ASSERT_GE(ev->revision, synced);
    baton_event_free(ev);
    FK_SET(f, do_watch_change, 1);
    ev = take(w);
    ASSERT_EQ(ev->kind, BATON_EVENT_CHANGE);
    baton_event_free(ev);
    baton_watch_close(w);
    baton_close(b);
    fake_stop(f);
}

TEST(blocking_watch_refused_and_closed)
{
    struct fake *f = fake_start();
    baton_t *b = b_connect(f->addr);
    baton_watch_t *w = (baton_watch_t *)1;
    baton_event *ev;
    baton_lock_state *st = NULL;
    baton_lock_t *l;

    fk_refuse(f, MSG_WATCH2, BATON_EPERM, "not yours");
    ASSERT_EQ(baton_watch(b, "r", 0, 0, &w), BATON_EPERM);
    ASSERT(w == NULL);
    ASSERT(strstr(baton_errmsg(b), "not yours") != NULL);
    fk_refuse(f, 0, 0, "");
    ASSERT_EQ(baton_observe(b, "r", &w), 0);
    ev = take(w);
    ASSERT_EQ(ev->kind, BATON_EVENT_STATE);
    baton_event_free(ev);
    baton_watch_close(w);
    /* Leader read and elections on the blocking side. */
    ASSERT_EQ(baton_leader(b, "r", &st), BATON_ENOTFOUND);
    ASSERT(st == NULL);
    ASSERT_EQ(baton_campaign(b, "r", "me", 2, BATON_WAIT_FOREVER, &l), 0);
    ASSERT_EQ(baton_leader(b, "r", &st), 0);
    ASSERT_EQ(st->holders[0].value_len, 2);
    ASSERT(memcmp(st->holders[0].value, "me", 2) == 0);
    baton_lock_state_free(st);
    ASSERT_EQ(baton_proclaim(l, "you", 3), 0);
    ASSERT_STREQ(f->last_value, "you");
    ASSERT_EQ(baton_resign(l), 0);
    baton_close(b);
    fake_stop(f);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(state_from_wire_is_one_block);
    RUN(value_goes_as_acquire2_plain_lock_as_acquire);
    RUN(value_resent_with_the_acquire_after_a_broken_connection);
    RUN(value_checks);
    RUN(watch_events_progress_resume_unwatch);
    RUN(watch_waits_for_a_leader_past_the_op_timeout);
    RUN(watch_refused_ends_it);
    RUN(observe_reports_only_changes_of_the_leader);
    RUN(blocking_watch_overflow_resubscribes_from_what_was_taken);
    RUN(blocking_watch_refused_and_closed);
    return runner_done();
}
