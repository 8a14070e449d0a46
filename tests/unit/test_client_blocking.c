/*
 * test_client_blocking.c -- libbaton's blocking API (include/baton/baton.h) against
 * the fake servers of tests/unit/fake_server.h: lock, trylock and timeouts,
 * one baton_t shared by eight threads, baton_close waking a blocked
 * thread, connect errors, error messages per thread, redirects and
 * NO_LEADER, and the lost callback on the I/O thread.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "baton/baton.h"
#include "baton/baton_defs.h"
#include "tests/lib/clock.h"
#include "tests/lib/runner.h"
#include "tests/unit/fake_server.h"

extern int baton__last_loop_close_rv; /* client/baton.c */

static baton_t *b_connect(const char *eps)
{
    baton_opts o = {.endpoints = eps, .client_name = "blocking-test"};
    baton_t *b = NULL;

    ASSERT_EQ(baton_connect(&o, &b), 0);
    ASSERT(b != NULL);
    return b;
}

/* Another thread's try and bounded wait on "k", held by the test's
 * thread: they queue like any other client's (baton.h, "Owners"). */
static void *other_thread_tries(void *arg)
{
    baton_t *b = arg;
    baton_lock_t *l2 = NULL;

    ASSERT_EQ(baton_trylock(b, "k", &l2), BATON_EWOULDBLOCK);
    ASSERT(l2 == NULL);
    ASSERT(strstr(baton_errmsg(b), "baton_trylock 'k'") != NULL);
    ASSERT_EQ(baton_lock_timeout(b, "k", 100, &l2), BATON_ETIMEDOUT);
    return NULL;
}

TEST(blocking_basic)
{
    struct fake *f = fake_start();
    baton_t *b = b_connect(f->addr);
    baton_lock_t *l = NULL, *l2 = NULL;
    pthread_t th;
    uint64_t f1;

    ASSERT(baton_session_id(b) > 0);
    ASSERT_STREQ(baton_errmsg(b), "");
    ASSERT_EQ(baton_lock(b, "k", &l), 0);
    ASSERT_STREQ(baton_lock_name(l), "k");
    f1 = baton_lock_fence(l);
    ASSERT(f1 > 0);
    /* The same thread would wait behind itself. */
    ASSERT_EQ(baton_trylock(b, "k", &l2), BATON_EDEADLK);
    ASSERT(l2 == NULL);
    ASSERT(strstr(baton_errmsg(b), "baton_trylock 'k'") != NULL);
    ASSERT_EQ(baton_lock_timeout(b, "k", 100, &l2), BATON_EDEADLK);
    ASSERT_EQ(pthread_create(&th, NULL, other_thread_tries, b), 0);
    ASSERT_EQ(pthread_join(th, NULL), 0);
    ASSERT_EQ(baton_lock(b, "", &l2), BATON_EINVAL);
    ASSERT_EQ(baton_unlock(l), 0);
    ASSERT_EQ(baton_unlock(NULL), 0);
    ASSERT_EQ(baton_lock_timeout(b, "k", 0, &l), 0);
    ASSERT_ULT(f1, baton_lock_fence(l));
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(b);
    ASSERT_EQ(baton__last_loop_close_rv, 0);
    baton_close(NULL);
    ASSERT_EQ(FK_GET(f, n_close), 1);
    fake_stop(f);
}

/* Eight threads share one baton_t and fight over one lock. */
#define N_THREADS 8
#define N_ROUNDS 40

struct shared {
    baton_t *b;
    atomic_int inside;
    long counter;
    uint64_t last_fence;
    atomic_int errors;
};

static void *worker(void *arg)
{
    struct shared *s = arg;

    for (int i = 0; i < N_ROUNDS; i++) {
        baton_lock_t *l;
        if (baton_lock(s->b, "ctr", &l) != 0) {
            atomic_fetch_add(&s->errors, 1);
            continue;
        }
        if (atomic_fetch_add(&s->inside, 1) != 0) atomic_fetch_add(&s->errors, 1);
        if (baton_lock_fence(l) <= s->last_fence) atomic_fetch_add(&s->errors, 1);
        s->last_fence = baton_lock_fence(l);
        s->counter++;
        atomic_fetch_sub(&s->inside, 1);
        if (baton_unlock(l) != 0) atomic_fetch_add(&s->errors, 1);
    }
    return NULL;
}

TEST(blocking_shared_by_8_threads)
{
    struct fake *f = fake_start();
    struct shared s = {0};
    pthread_t th[N_THREADS];

    s.b = b_connect(f->addr);
    for (int i = 0; i < N_THREADS; i++) ASSERT_EQ(pthread_create(&th[i], NULL, worker, &s), 0);
    for (int i = 0; i < N_THREADS; i++) pthread_join(th[i], NULL);
    ASSERT_EQ(atomic_load(&s.errors), 0);
    ASSERT_EQ(s.counter, N_THREADS * N_ROUNDS);
    baton_close(s.b);
    ASSERT_EQ(baton__last_loop_close_rv, 0);
    ASSERT_EQ(FK_GET(f, n_acquire), N_THREADS * N_ROUNDS);
    fake_stop(f);
}

/* A thread that waits in baton_lock(b, name) (bwait_main): what it got. */
struct bwait {
    baton_t *b;
    const char *name;
    int rv;
    atomic_int started; /* 1 once it runs */
};

static void *bwait_main(void *arg)
{
    struct bwait *w = arg;
    baton_lock_t *l = NULL;

    atomic_store(&w->started, 1);
    w->rv = baton_lock(w->b, w->name, &l);
    if (l) baton_unlock(l);
    return NULL;
}

/* baton_close wakes a thread blocked in baton_lock with BATON_ECLOSED, and
 * a lock still held may be unlocked after the close. */
TEST(blocking_close_wakes_and_unlock_after_close)
{
    struct fake *f = fake_start();
    baton_t *b1 = b_connect(f->addr), *b2 = b_connect(f->addr);
    baton_lock_t *l1, *l2;
    struct bwait w = {.b = b2, .name = "x"};
    pthread_t th;

    ASSERT_EQ(baton_lock(b1, "x", &l1), 0);
    ASSERT_EQ(baton_lock(b2, "other", &l2), 0);
    ASSERT_EQ(pthread_create(&th, NULL, bwait_main, &w), 0);
    while (!atomic_load(&w.started)) sleep_ms(1);
    sleep_ms(100);
    baton_close(b2);
    pthread_join(th, NULL);
    ASSERT_EQ(w.rv, BATON_ECLOSED);
    ASSERT_EQ(baton__last_loop_close_rv, 0);
    ASSERT_EQ(baton_unlock(l2), BATON_ECLOSED); /* b2's memory lived for this */
    ASSERT_EQ(baton_unlock(l1), 0);
    baton_close(b1);
    fake_stop(f);
}

TEST(blocking_connect_errors)
{
    baton_opts o = {.endpoints = "127.0.0.1:notaport"};
    baton_t *b = (baton_t *)&o;
    char dead[32];
    int64_t t0;

    ASSERT_EQ(baton_connect(&o, &b), BATON_EINVAL);
    ASSERT(b == NULL);
    ASSERT(strlen(baton_connect_errmsg()) > 0);
    ASSERT_EQ(baton_connect(NULL, &b), BATON_EINVAL);
    dead_addr(dead, sizeof dead);
    o.endpoints = dead;
    o.connect_timeout_ms = 300;
    t0 = now_ms();
    ASSERT_EQ(baton_connect(&o, &b), BATON_EUNAVAIL);
    ASSERT_GE(now_ms() - t0, 290);
    ASSERT(b == NULL);
    ASSERT(strstr(baton_connect_errmsg(), "refused") != NULL);
    ASSERT_EQ(baton__last_loop_close_rv, 0);
}

static void *other_thread_errmsg(void *arg)
{
    baton_t *b = arg;
    baton_lock_t *l = NULL;

    if (baton_trylock(b, "e", &l) != BATON_EWOULDBLOCK) return (void *)1;
    if (strstr(baton_errmsg(b), "'e'") == NULL) return (void *)2;
    return NULL;
}

TEST(blocking_errmsg_per_thread)
{
    struct fake *f = fake_start();
    baton_t *b = b_connect(f->addr);
    baton_lock_t *l;
    pthread_t th;
    void *res;

    ASSERT_EQ(baton_lock(b, "e", &l), 0);
    ASSERT_EQ(pthread_create(&th, NULL, other_thread_errmsg, b), 0);
    pthread_join(th, &res);
    ASSERT(res == NULL);
    ASSERT_STREQ(baton_errmsg(b), ""); /* this thread's call did not fail */
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(b);
    fake_stop(f);
}

/* Through a redirect and NO_LEADER, the blocking API works the same. */
TEST(blocking_redirect_and_no_leader)
{
    struct fake *fa = fake_start(), *fb = fake_start();
    baton_t *b;
    baton_lock_t *l;

    fk_redirect(fa, fb->addr);
    FK_SET(fb, no_leader, 2);
    b = b_connect(fa->addr);
    ASSERT_EQ(baton_lock(b, "z", &l), 0);
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(b);
    ASSERT_EQ(FK_GET(fb, n_no_leader), 2);
    ASSERT_GE(FK_GET(fa, n_redirect), 1);
    fake_stop(fa);
    fake_stop(fb);
}

/* What the blocking lost callback saw; written on the I/O thread, read by
 * the test's thread. */
struct blost {
    atomic_int calls;
    atomic_int why;
    atomic_int on_io_thread;   /* 1 if it ran on a thread other than the test's */
    atomic_int unlock_rv;      /* baton_unlock of `inside` from the callback */
    atomic_int lock_rv;        /* baton_trylock from the callback */
    _Atomic(baton_lock_t *) inside; /* unlock this one from the callback */
    pthread_t test_thread;
};

static void blost_cb(baton_t *b, const char *lock, uint64_t fence, int why, void *data)
{
    struct blost *bl = data;
    baton_lock_t *l = atomic_load(&bl->inside), *l2 = NULL;

    (void)fence;
    atomic_store(&bl->why, why);
    atomic_store(&bl->on_io_thread, !pthread_equal(pthread_self(), bl->test_thread));
    if (l && strcmp(lock, baton_lock_name(l)) == 0) {
        atomic_store(&bl->inside, NULL);
        atomic_store(&bl->unlock_rv, baton_unlock(l));
        atomic_store(&bl->lock_rv, baton_trylock(b, "other", &l2));
    }
    atomic_fetch_add(&bl->calls, 1);
}

static void wait_atomic(atomic_int *v, int want, unsigned ms)
{
    int64_t end = now_ms() + ms;

    while (atomic_load(v) < want) {
        if (now_ms() > end) FAIL("still %d of %d after %u ms", atomic_load(v), want, ms);
        sleep_ms(5);
    }
}

/* The blocking API: the lease runs out while the caller's thread is busy
 * (the fake stops answering keepalives); the lost callback runs on the I/O
 * thread once per lock, can unlock there without waiting but cannot lock;
 * the caller's unlock says BATON_ELOST; the next call gets a fresh session. */
TEST(blocking_lost_callback)
{
    struct fake *f = fake_start();
    baton_opts o = {.endpoints = f->addr, .session_ttl_ms = 600};
    struct blost bl = {0};
    baton_t *b = NULL;
    baton_lock_t *lx, *ly, *lz;
    uint64_t s1;

    bl.test_thread = pthread_self();
    ASSERT_EQ(baton_connect(&o, &b), 0);
    baton_on_lost(b, blost_cb, &bl);
    s1 = baton_session_id(b);
    ASSERT_EQ(baton_lock(b, "x", &lx), 0);
    ASSERT_EQ(baton_lock(b, "y", &ly), 0);
    atomic_store(&bl.inside, lx);
    sleep_ms(300);
    FK_SET(f, ka_silent, true);
    wait_atomic(&bl.calls, 2, 3000);
    ASSERT_EQ(atomic_load(&bl.why), BATON_ESESSION);
    ASSERT_EQ(atomic_load(&bl.on_io_thread), 1);
    ASSERT_EQ(atomic_load(&bl.unlock_rv), BATON_ELOST);
    ASSERT_EQ(atomic_load(&bl.lock_rv), BATON_EBUSY);
    FK_SET(f, ka_silent, false);
    ASSERT_EQ(baton_unlock(ly), BATON_ELOST);
    ASSERT(strstr(baton_errmsg(b), "lost") != NULL);
    ASSERT_UEQ(baton_session_id(b), s1); /* until the fresh one opens */
    ASSERT_EQ(baton_lock(b, "z", &lz), 0);
    ASSERT(baton_session_id(b) != s1);
    ASSERT_EQ(baton_unlock(lz), 0);
    sleep_ms(50);
    ASSERT_EQ(atomic_load(&bl.calls), 2);
    baton_close(b);
    ASSERT_EQ(baton__last_loop_close_rv, 0);
    ASSERT_EQ(FK_GET(f, n_open), 2);
    fake_stop(f);
}

/* The session expires while a thread waits in baton_lock: the wait ends
 * with BATON_ESESSION; a forced release of a held lock is BATON_ELOST. */
TEST(blocking_session_expired_and_forced_release)
{
    struct fake *f = fake_start();
    baton_t *b1 = b_connect(f->addr), *b2 = b_connect(f->addr);
    struct blost bl = {0};
    struct bwait w = {.b = b2, .name = "busy"};
    baton_lock_t *l1, *l2;
    pthread_t th;

    bl.test_thread = pthread_self();
    baton_on_lost(b1, blost_cb, &bl);
    ASSERT_EQ(baton_lock(b1, "busy", &l1), 0);
    ASSERT_EQ(pthread_create(&th, NULL, bwait_main, &w), 0);
    sleep_ms(100);
    FK_SET(f, do_expire, baton_session_id(b2));
    pthread_join(th, NULL);
    ASSERT_EQ(w.rv, BATON_ESESSION);
    /* An operator takes "busy" away from b1. */
    fk_force(f, "busy");
    wait_atomic(&bl.calls, 1, 3000);
    ASSERT_EQ(atomic_load(&bl.why), BATON_ELOST);
    ASSERT_EQ(baton_unlock(l1), BATON_ELOST);
    /* b2 gets a fresh session, and the lock. */
    ASSERT_EQ(baton_trylock(b2, "busy", &l2), 0);
    ASSERT_EQ(baton_unlock(l2), 0);
    baton_close(b1);
    baton_close(b2);
    ASSERT_EQ(FK_GET(f, n_open), 3);
    fake_stop(f);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(30);
    RUN(blocking_basic);
    RUN(blocking_shared_by_8_threads);
    RUN(blocking_close_wakes_and_unlock_after_close);
    RUN(blocking_connect_errors);
    RUN(blocking_errmsg_per_thread);
    RUN(blocking_redirect_and_no_leader);
    RUN(blocking_lost_callback);
    RUN(blocking_session_expired_and_forced_release);
    return runner_done();
}
