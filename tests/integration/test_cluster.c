/*
 * test_cluster.c -- libbaton and batonctl against three real batond
 * processes on 127.0.0.1 (tests/lib/cluster.h starts and always stops them).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "baton/baton.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/jsonget.h"
#include "tests/lib/runner.h"

static struct cluster C;

static void start3(void)
{
    ASSERT_EQ(cluster_start(&C, 3), 0);
    ASSERT_GE(cluster_wait_leader(&C, 15000), 0);
}

static baton_t *connect_to(const char *endpoints, const char *name)
{
    baton_opts o = {.endpoints = endpoints, .client_name = name};

    return client_connect(&o);
}

/* Wait until lock `name` has n waiters queued. */
static void wait_queue_len(const char *name, int64_t n)
{
    if (cluster_wait_lock_i64(&C, name, "total_waiters", n, 15000) != 0)
        FAIL("lock %s never had %lld waiters", name, (long long)n);
}

/* ---- 16 threads, one lock: mutual exclusion and increasing fences ------- */

#define MX_CYCLES 200

static atomic_int mx_holder;
static atomic_int mx_violations;
static atomic_ullong mx_last_fence;
static atomic_int mx_errors;

static void *mx_thread(void *arg)
{
    baton_t *b = arg;
    bool own = b == NULL;
    long deadlk = 0;

    if (own) b = connect_to(cluster_endpoints(&C), "mx-own");
    for (int i = 0; i < MX_CYCLES; i++) {
        baton_lock_t *l;
        int rv = baton_lock(b, "mutex", &l);
        if (rv == BATON_EDEADLK && !own && deadlk++ < 1000000) {
            /* Another thread of the shared baton_t (one session) holds or
             * waits for it: the session may not queue twice. Try again. */
            usleep(500);
            i--;
            continue;
        }
        if (rv != 0) {
            fprintf(stderr, "# baton_lock: %s (%s)\n", baton_err_name(rv), baton_errmsg(b));
            atomic_fetch_add(&mx_errors, 1);
            continue;
        }
        if (atomic_exchange(&mx_holder, 1) != 0) atomic_fetch_add(&mx_violations, 1);
        uint64_t f = baton_lock_fence(l);
        if (f <= atomic_load(&mx_last_fence)) atomic_fetch_add(&mx_violations, 1);
        atomic_store(&mx_last_fence, f);
        atomic_store(&mx_holder, 0);
        rv = baton_unlock(l);
        if (rv != 0) atomic_fetch_add(&mx_errors, 1);
    }
    if (own) baton_close(b);
    return NULL;
}

TEST(mutual_exclusion_shared_and_own_clients)
{
    pthread_t t[16];
    baton_t *shared;

    start3();
    shared = connect_to(cluster_endpoints(&C), "mx-shared");
    for (int i = 0; i < 16; i++) pthread_create(&t[i], NULL, mx_thread, i < 8 ? shared : NULL);
    for (int i = 0; i < 16; i++) pthread_join(t[i], NULL);
    baton_close(shared);
    ASSERT_EQ(atomic_load(&mx_errors), 0);
    ASSERT_EQ(atomic_load(&mx_violations), 0);
    ASSERT_GE(atomic_load(&mx_last_fence), 16 * MX_CYCLES);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* ---- FIFO: waiters that queue in a known order are granted in it --------- */

#define FIFO_N 6

static atomic_int fifo_next;
static int fifo_order[FIFO_N];

struct fifo_arg {
    baton_t *b;
    int idx;
};

static void *fifo_thread(void *arg)
{
    struct fifo_arg *a = arg;
    baton_lock_t *l;

    if (baton_lock(a->b, "queue", &l) != 0) return NULL;
    fifo_order[atomic_fetch_add(&fifo_next, 1)] = a->idx;
    baton_unlock(l);
    return NULL;
}

TEST(waiters_are_granted_in_queue_order)
{
    struct fifo_arg args[FIFO_N];
    pthread_t t[FIFO_N];
    baton_lock_t *held;
    baton_t *holder;

    start3();
    holder = connect_to(cluster_endpoints(&C), "fifo-holder");
    ASSERT_EQ(baton_lock(holder, "queue", &held), 0);
    for (int i = 0; i < FIFO_N; i++) {
        args[i].b = connect_to(cluster_endpoints(&C), "fifo-waiter");
        args[i].idx = i;
        pthread_create(&t[i], NULL, fifo_thread, &args[i]);
        wait_queue_len("queue", i + 1);
    }
    ASSERT_EQ(baton_unlock(held), 0);
    for (int i = 0; i < FIFO_N; i++) pthread_join(t[i], NULL);
    ASSERT_EQ(atomic_load(&fifo_next), FIFO_N);
    for (int i = 0; i < FIFO_N; i++) ASSERT_EQ(fifo_order[i], i);
    for (int i = 0; i < FIFO_N; i++) baton_close(args[i].b);
    baton_close(holder);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* ---- trylock on a held lock fails at once and queues nothing -------------- */

TEST(trylock_on_held_lock_fails_at_once)
{
    baton_lock_t *held, *l = NULL;
    baton_t *a, *b;
    struct ctl_result r;

    start3();
    a = connect_to(cluster_endpoints(&C), "try-a");
    b = connect_to(cluster_endpoints(&C), "try-b");
    ASSERT_EQ(baton_lock(a, "busy", &held), 0);
    /* The holder keeps the lock for the whole test: a trylock that waited
     * would never return. */
    ASSERT_EQ(baton_trylock(b, "busy", &l), BATON_EWOULDBLOCK);
    ASSERT(l == NULL);
    ASSERT_EQ(cluster_lock_info(&C, "busy", &r), 0);
    ASSERT_EQ(json_i64(r.out, "total_waiters", -1), 0);
    ASSERT_UEQ(json_i64(r.out, "fence", 0), baton_lock_fence(held));
    ctl_result_free(&r);
    ASSERT_EQ(baton_trylock(b, "other", &l), 0);
    ASSERT_EQ(baton_unlock(l), 0);
    ASSERT_EQ(baton_unlock(held), 0);
    ASSERT_EQ(baton_trylock(b, "busy", &l), 0);
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(a);
    baton_close(b);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* ---- a client that knows only a follower still works ---------------------- */

TEST(client_given_only_a_follower_works)
{
    baton_lock_t *l;
    baton_t *b;
    int leader, follower;

    start3();
    leader = cluster_wait_leader(&C, 15000);
    follower = (leader + 1) % 3;
    b = connect_to(cluster_endpoint(&C, follower), "via-follower");
    for (int i = 0; i < 20; i++) {
        ASSERT_EQ(baton_lock(b, "f", &l), 0);
        ASSERT_EQ(baton_unlock(l), 0);
    }
    baton_close(b);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* ---- kill -9 the leader while clients work -------------------------------- */

static atomic_int kl_stop;
static atomic_int kl_errors;
static atomic_int kl_cycles;

static void *kl_thread(void *arg)
{
    char name[32];
    baton_t *b = connect_to(cluster_endpoints(&C), "kill-worker");

    snprintf(name, sizeof name, "k%d", (int)(intptr_t)arg % 2);
    while (!atomic_load(&kl_stop)) {
        baton_lock_t *l;
        int rv = baton_lock(b, name, &l);
        if (rv != 0) {
            fprintf(stderr, "# baton_lock: %s (%s)\n", baton_err_name(rv), baton_errmsg(b));
            atomic_fetch_add(&kl_errors, 1);
            continue;
        }
        rv = baton_unlock(l);
        if (rv != 0) {
            fprintf(stderr, "# baton_unlock: %s (%s)\n", baton_err_name(rv), baton_errmsg(b));
            atomic_fetch_add(&kl_errors, 1);
        }
        atomic_fetch_add(&kl_cycles, 1);
    }
    baton_close(b);
    return NULL;
}

TEST(kill_leader_clients_carry_on_and_holds_survive)
{
    pthread_t t[4];
    baton_lock_t *held;
    baton_t *holder;
    struct ctl_result r;
    int leader, before;

    start3();
    holder = connect_to(cluster_endpoints(&C), "kill-holder");
    ASSERT_EQ(baton_lock(holder, "survivor", &held), 0);
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, kl_thread, (void *)(intptr_t)i);
    sleep_ms(1000);
    leader = cluster_wait_leader(&C, 5000);
    ASSERT_GE(leader, 0);
    ASSERT_EQ(cluster_kill(&C, leader, SIGKILL), 128 + SIGKILL);
    ASSERT_GE(cluster_wait_leader(&C, 10000), 0);
    before = atomic_load(&kl_cycles);
    for (int i = 0; i < 200 && atomic_load(&kl_cycles) < before + 100; i++) sleep_ms(50);
    atomic_store(&kl_stop, 1);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    ASSERT_GE(atomic_load(&kl_cycles), before + 100);
    ASSERT_EQ(atomic_load(&kl_errors), 0);

    ASSERT_EQ(cluster_lock_info(&C, "survivor", &r), 0);
    ASSERT_UEQ(json_i64(r.out, "holder_session", 0), baton_session_id(holder));
    ASSERT_UEQ(json_i64(r.out, "fence", 0), baton_lock_fence(held));
    ctl_result_free(&r);
    ASSERT_EQ(baton_unlock(held), 0);
    baton_close(holder);
    ASSERT_EQ(cluster_restart(&C, leader), 0);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* ---- a killed leader comes back and ends up with the same state ---------- */

/*
 * The bug this guards against: a restarted node that catches up from the
 * leader's log applied some entries wrongly (they were decoded at the wrong
 * offsets) and went on silently with a different state. Every node's state
 * digest (STATUS_R) covers every entry its store applied, so once all three
 * stand at the same applied index their digests must be equal.
 */
TEST(restarted_leader_catches_up_with_identical_state)
{
    struct cluster_status st[3];
    struct ctl_result r;
    pthread_t t[4];
    int leader, before, same = 0, n_digests = 0;

    start3();
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, kl_thread, (void *)(intptr_t)i);
    sleep_ms(1000);
    leader = cluster_wait_leader(&C, 5000);
    ASSERT_GE(leader, 0);
    ASSERT_EQ(cluster_kill(&C, leader, SIGKILL), 128 + SIGKILL);
    ASSERT_GE(cluster_wait_leader(&C, 10000), 0);
    sleep_ms(1000); /* the killed node falls behind */
    before = atomic_load(&kl_cycles);
    ASSERT_EQ(cluster_restart(&C, leader), 0);
    sleep_ms(1000); /* it catches up while the load goes on */
    atomic_store(&kl_stop, 1);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    ASSERT_GT(atomic_load(&kl_cycles), before);
    ASSERT_EQ(atomic_load(&kl_errors), 0);

    /* Wait until all three have applied the same entries (at most 15 s). */
    for (int k = 0; k < 150 && !same; k++) {
        int answered = 0;
        for (int i = 0; i < 3; i++) answered += cluster_node_status(&C, i, &st[i], 1000) == 0;
        same = answered == 3 && st[0].applied_index == st[1].applied_index &&
               st[1].applied_index == st[2].applied_index;
        if (!same) sleep_ms(100);
    }
    if (!same)
        FAIL("applied indexes never met: %llu %llu %llu",
             (unsigned long long)st[0].applied_index, (unsigned long long)st[1].applied_index,
             (unsigned long long)st[2].applied_index);
    for (int i = 0; i < 3; i++)
        fprintf(stderr, "# node %u: applied %llu digest %016llx\n", st[i].node_id,
                (unsigned long long)st[i].applied_index, (unsigned long long)st[i].state_digest);
    ASSERT_GT(st[0].applied_index, 0);
    ASSERT_UEQ(st[0].state_digest, st[1].state_digest);
    ASSERT_UEQ(st[0].state_digest, st[2].state_digest);

    /* batonctl compares the digests of nodes at equal applied indexes
     * itself: no divergence warning and exit 0 (70 would mean diverged).
     * An entry may still be committed in between (a leftover session
     * expiring), so the digest shown is checked only for its form. */
    ASSERT_EQ(cluster_ctl(&C, &r, "status", NULL), 0);
    ASSERT(strstr(r.out, "WARNING") == NULL);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&C, &r, "status", "-o", "json", NULL), 0);
    for (const char *p = r.out; (p = strstr(p, "\"state_digest\":\"")) != NULL; p++) {
        p += strlen("\"state_digest\":\"");
        ASSERT_EQ(strspn(p, "0123456789abcdef"), 16);
        ASSERT_EQ(p[16], '"');
        n_digests++;
    }
    ASSERT_EQ(n_digests, 3);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* ---- stop all three and start again: state is as before ------------------- */

static baton_t *rs_waiter;
static atomic_ullong rs_waiter_fence;

static void *rs_thread(void *arg)
{
    baton_lock_t *l;
    (void)arg;
    if (baton_lock(rs_waiter, "kept", &l) == 0) {
        atomic_store(&rs_waiter_fence, baton_lock_fence(l));
        baton_unlock(l);
    }
    return NULL;
}

TEST(restart_whole_cluster_keeps_holders_queues_and_fences)
{
    char queue_before[4096], queue_after[4096];
    struct ctl_result r;
    baton_lock_t *held, *probe;
    baton_t *holder;
    uint64_t last_fence;
    int64_t holder_before, fence_before;
    pthread_t t;

    start3();
    holder = connect_to(cluster_endpoints(&C), "rs-holder");
    rs_waiter = connect_to(cluster_endpoints(&C), "rs-waiter");
    ASSERT_EQ(baton_lock(holder, "kept", &held), 0);
    pthread_create(&t, NULL, rs_thread, NULL);
    wait_queue_len("kept", 1);
    ASSERT_EQ(baton_lock(holder, "probe", &probe), 0);
    last_fence = baton_lock_fence(probe);
    ASSERT_EQ(baton_unlock(probe), 0);

    ASSERT_EQ(cluster_lock_info(&C, "kept", &r), 0);
    holder_before = json_i64(r.out, "holder_session", 0);
    fence_before = json_i64(r.out, "fence", 0);
    json_array(r.out, "waiters", queue_before, sizeof queue_before);
    ctl_result_free(&r);
    ASSERT_NE(queue_before[0], '\0');

    for (int i = 0; i < 3; i++) ASSERT_EQ(cluster_kill(&C, i, SIGTERM), 0);
    for (int i = 0; i < 3; i++) ASSERT_EQ(cluster_restart(&C, i), 0);
    ASSERT_GE(cluster_wait_leader(&C, 15000), 0);

    ASSERT_EQ(cluster_lock_info(&C, "kept", &r), 0);
    ASSERT_EQ(json_i64(r.out, "holder_session", 0), holder_before);
    ASSERT_EQ(json_i64(r.out, "fence", 0), fence_before);
    json_array(r.out, "waiters", queue_after, sizeof queue_after);
    ctl_result_free(&r);
    ASSERT_STREQ(queue_after, queue_before);

    /* The first grant after the restart gets the very next fence. */
    ASSERT_EQ(baton_unlock(held), 0);
    pthread_join(t, NULL);
    ASSERT_UEQ(atomic_load(&rs_waiter_fence), last_fence + 1);
    baton_close(rs_waiter);
    baton_close(holder);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* ---- batonctl lock -- CMD ------------------------------------------------- */

TEST(batonctl_lock_runs_command_and_returns_its_status)
{
    struct ctl_result r;
    baton_lock_t *l;
    baton_t *b;

    start3();
    ASSERT_EQ(cluster_ctl(&C, &r, "lock", "demo", "--", "sh", "-c", "exit 3", NULL), 3);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&C, &r, "lock", "demo", "--", "sh", "-c", "echo $BATON_LOCK $BATON_FENCE",
                          NULL),
              0);
    ASSERT(strncmp(r.out, "demo ", 5) == 0);
    ASSERT_GT(atoll(r.out + 5), 0);
    ctl_result_free(&r);
    b = connect_to(cluster_endpoints(&C), "ctl-check");
    ASSERT_EQ(baton_trylock(b, "demo", &l), 0);
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(b);
    ASSERT_EQ(cluster_stop(&C), 0);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(120);
    RUN(mutual_exclusion_shared_and_own_clients);
    RUN(waiters_are_granted_in_queue_order);
    RUN(trylock_on_held_lock_fails_at_once);
    RUN(client_given_only_a_follower_works);
    RUN(kill_leader_clients_carry_on_and_holds_survive);
    RUN(restarted_leader_catches_up_with_identical_state);
    RUN(restart_whole_cluster_keeps_holders_queues_and_fences);
    RUN(batonctl_lock_runs_command_and_returns_its_status);
    return runner_done();
}
