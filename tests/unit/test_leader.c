/*
 * test_leader.c -- the leader's logic in one process: batond's server over
 * a fake node (tests/unit/leader_fixture.h), driven by libbaton through
 * its real client port. Each test names the part of server/ it drives:
 *
 *  - dispatch, batch, reply: a lock is granted and released, fences rise;
 *  - push: a release hands the lock to the waiter by a GRANTED push;
 *  - deadlines: a wait that times out is cancelled in the state, and the
 *    lock is not granted to it later;
 *  - batch: requests read in one loop turn share one entry;
 *  - access: a principal limited to a prefix is refused outside it;
 *  - the leadership switch: a node that does not lead serves no session,
 *    and one that starts leading does; a waiter kept across a lost and
 *    regained leadership is still granted.
 */
#include <pthread.h>
#include <unistd.h>

#include "baton/baton.h"
#include "tests/lib/aclient.h"
#include "tests/lib/cluster.h"
#include "tests/lib/runner.h"
#include "tests/unit/leader_fixture.h"

static baton_t *connect_to(const struct lf *f, const char *token, unsigned connect_ms)
{
    baton_opts o = {.endpoints = f->endpoint, .client_name = "test_leader",
                    .connect_timeout_ms = connect_ms, .token = token};
    baton_t *b = NULL;
    int rv = baton_connect(&o, &b);

    if (rv != 0) FAIL("baton_connect %s: %s", f->endpoint, baton_connect_errmsg());
    return b;
}

TEST(grant_and_release_fences_rise)
{
    struct lf f;
    baton_t *b;
    baton_lock_t *l;
    uint64_t first;

    lf_start(&f, NULL);
    b = connect_to(&f, NULL, 5000);
    ASSERT_EQ(baton_lock(b, "a", &l), 0);
    first = baton_lock_fence(l);
    ASSERT_GT(first, 0);
    ASSERT_EQ(baton_unlock(l), 0);
    ASSERT_EQ(baton_lock(b, "a", &l), 0);
    ASSERT_GT(baton_lock_fence(l), first);
    ASSERT_EQ(baton_trylock(b, "b", &l), 0);
    baton_close(b);
    lf_stop(&f);
}

struct waiter {
    baton_t *b;
    int64_t wait_ms;
    int rv;
    uint64_t fence;
    volatile int done;
};

static void *wait_for_h(void *arg)
{
    struct waiter *w = arg;
    baton_lock_t *l = NULL;

    w->rv = w->wait_ms < 0 ? baton_lock(w->b, "h", &l) : baton_lock_timeout(w->b, "h", w->wait_ms, &l);
    if (w->rv == 0) {
        w->fence = baton_lock_fence(l);
        baton_unlock(l);
    }
    w->done = 1;
    return NULL;
}

TEST(release_hands_over_by_push)
{
    struct lf f;
    baton_t *a, *b;
    baton_lock_t *l;
    struct waiter w = {.wait_ms = -1};
    pthread_t t;

    lf_start(&f, NULL);
    a = connect_to(&f, NULL, 5000);
    b = w.b = connect_to(&f, NULL, 5000);
    ASSERT_EQ(baton_lock(a, "h", &l), 0);
    ASSERT_EQ(pthread_create(&t, NULL, wait_for_h, &w), 0);
    usleep(200 * 1000);
    ASSERT_EQ(w.done, 0); /* queued behind a */
    ASSERT_EQ(baton_unlock(l), 0);
    pthread_join(t, NULL);
    ASSERT_EQ(w.rv, 0);
    ASSERT_GT(w.fence, 0);
    baton_close(a);
    baton_close(b);
    lf_stop(&f);
}

TEST(wait_deadline_cancels_the_wait)
{
    struct lf f;
    baton_t *a, *b;
    baton_lock_t *l, *l2;
    struct waiter w = {.wait_ms = 150};
    pthread_t t;
    uint64_t held;

    lf_start(&f, NULL);
    a = connect_to(&f, NULL, 5000);
    b = w.b = connect_to(&f, NULL, 5000);
    ASSERT_EQ(baton_lock(a, "h", &l), 0);
    held = baton_lock_fence(l);
    ASSERT_EQ(pthread_create(&t, NULL, wait_for_h, &w), 0);
    pthread_join(t, NULL);
    ASSERT_EQ(w.rv, BATON_ETIMEDOUT);
    ASSERT_EQ(baton_unlock(l), 0);
    /* The timed-out waiter was taken out of the queue: the lock is free. */
    ASSERT_EQ(baton_trylock(b, "h", &l2), 0);
    ASSERT_GT(baton_lock_fence(l2), held);
    baton_close(a);
    baton_close(b);
    lf_stop(&f);
}

#define BURST 64

TEST(requests_of_one_turn_share_an_entry)
{
    struct lf f;
    struct tloop t;
    struct rec open = {0}, locks[BURST];
    struct fake_node_stats before, after;
    baton_opts o;
    baton_async_t *ac;
    char name[BURST][16];
    int granted = 0;

    lf_start(&f, NULL);
    tloop_init(&t);
    o = (baton_opts){.endpoints = f.endpoint, .client_name = "burst"};
    ac = a_new(&t, &o);
    ASSERT_EQ(baton_async_open(ac, rec_open, &open), 0);
    run_until(&t, &open.calls, 1, 5000);
    ASSERT_EQ(open.status, 0);
    lf_node_stats(&f, &before);
    memset(locks, 0, sizeof locks);
    for (int i = 0; i < BURST; i++) {
        snprintf(name[i], sizeof name[i], "burst%d", i);
        ASSERT_EQ(baton_async_lock(ac, name[i], 0, rec_lock, &locks[i]), 0);
    }
    for (int i = 0; i < BURST; i++) run_until(&t, &locks[i].calls, 1, 5000);
    for (int i = 0; i < BURST; i++) granted += locks[i].status == 0;
    ASSERT_EQ(granted, BURST);
    lf_node_stats(&f, &after);
    /* One write of 64 requests: far fewer entries than commands. */
    ASSERT_GT(after.entries, before.entries);
    ASSERT_LE(after.entries - before.entries, BURST / 4);
    baton_async_free(ac);
    tloop_done(&t);
    lf_stop(&f);
}

TEST(prefix_principal_refused_outside_its_prefix)
{
    struct lf f;
    char token[72], line[512], path[300], flag_path[320];
    const char *extra[] = {"--auth-file", flag_path, NULL};
    baton_t *b;
    baton_lock_t *l;
    FILE *fp;

    ASSERT_EQ(cluster_token("alice", "client", "prefixes=jobs/", token, line, sizeof line), 0);
    snprintf(path, sizeof path, "/tmp/baton-leader-auth-%d", (int)getpid());
    fp = fopen(path, "w");
    ASSERT(fp != NULL);
    fputs(line, fp);
    fclose(fp);
    snprintf(flag_path, sizeof flag_path, "%s", path);
    lf_start(&f, extra);
    b = connect_to(&f, token, 5000);
    ASSERT_EQ(baton_trylock(b, "jobs/1", &l), 0);
    ASSERT_EQ(baton_unlock(l), 0);
    ASSERT_EQ(baton_trylock(b, "mail/1", &l), BATON_EPERM);
    baton_close(b);
    lf_stop(&f);
    unlink(path);
}

TEST(no_session_until_the_node_leads)
{
    struct lf f;
    baton_opts o;
    baton_t *b = NULL;
    baton_lock_t *l;

    fake_node_lead_at_open(false);
    lf_start(&f, NULL);
    o = (baton_opts){.endpoints = f.endpoint, .connect_timeout_ms = 300};
    ASSERT_NE(baton_connect(&o, &b), 0);
    lf_set_leading(&f, true);
    b = connect_to(&f, NULL, 5000);
    ASSERT_EQ(baton_lock(b, "x", &l), 0);
    baton_close(b);
    lf_stop(&f);
}

TEST(waiter_kept_across_lost_leadership)
{
    struct lf f;
    baton_t *a, *b;
    baton_lock_t *l;
    struct waiter w = {.wait_ms = -1};
    pthread_t t;

    lf_start(&f, NULL);
    a = connect_to(&f, NULL, 5000);
    b = w.b = connect_to(&f, NULL, 5000);
    ASSERT_EQ(baton_lock(a, "h", &l), 0);
    ASSERT_EQ(pthread_create(&t, NULL, wait_for_h, &w), 0);
    usleep(100 * 1000);
    lf_set_leading(&f, false);
    usleep(100 * 1000);
    lf_set_leading(&f, true);
    ASSERT_EQ(w.done, 0);
    ASSERT_EQ(baton_unlock(l), 0);
    pthread_join(t, NULL);
    ASSERT_EQ(w.rv, 0);
    baton_close(a);
    baton_close(b);
    lf_stop(&f);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(30);
    RUN(grant_and_release_fences_rise);
    RUN(release_hands_over_by_push);
    RUN(wait_deadline_cancels_the_wait);
    RUN(requests_of_one_turn_share_an_entry);
    RUN(prefix_principal_refused_outside_its_prefix);
    RUN(no_session_until_the_node_leads);
    RUN(waiter_kept_across_lost_leadership);
    return runner_done();
}
