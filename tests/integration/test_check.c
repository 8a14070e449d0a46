/*
 * test_check.c -- `batonctl check` against real batond processes: every
 * node hashes its lock store at the index of a CHECK entry
 * (storage/store.h, "Content hash"), and batonctl compares the hashes.
 *
 *  - With nothing wrong, every node reports the same hash: exit 0.
 *  - A byte of one lock's record changed in a stopped follower's data.mdb
 *    (as bit rot or a stray write through LMDB's writable map would): the
 *    node starts, catches up, and `batonctl status` sees nothing -- the
 *    state digest follows the entries, not the content -- but `batonctl
 *    check` names the node as diverged and exits 70, and `status` then
 *    warns too, having the checks to compare.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "baton/baton.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/corrupt.h"
#include "tests/lib/runner.h"

/* Count occurrences of needle in hay. */
static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

/* Wait until the three nodes answer STATUS at one applied index (15 s). */
static void wait_same_applied(struct cluster *c)
{
    struct cluster_status st[3];

    for (int k = 0; k < 150; k++) {
        int answered = 0;
        for (int i = 0; i < 3; i++) answered += cluster_node_status(c, i, &st[i], 1000) == 0;
        if (answered == 3 && st[0].applied_index == st[1].applied_index &&
            st[1].applied_index == st[2].applied_index)
            return;
        sleep_ms(100);
    }
    FAIL("applied indexes never met: %llu %llu %llu", (unsigned long long)st[0].applied_index,
         (unsigned long long)st[1].applied_index, (unsigned long long)st[2].applied_index);
}

/* A session holding two locks (the records the test damages). */
static baton_t *hold_locks(struct cluster *c, baton_lock_t **l1, baton_lock_t **l2)
{
    baton_opts o = {.endpoints = cluster_endpoints(c), .client_name = "test_check"};
    baton_t *b;

    ASSERT_EQ(baton_connect(&o, &b), 0);
    ASSERT_EQ(baton_lock(b, "check/alpha", l1), 0);
    ASSERT_EQ(baton_lock(b, "check/beta", l2), 0);
    return b;
}

TEST(check_all_equal)
{
    struct cluster c;
    struct ctl_result r;
    baton_lock_t *l1, *l2;
    baton_t *b;

    ASSERT_EQ(cluster_start(&c, 3), 0);
    ASSERT_GE(cluster_wait_leader(&c, 15000), 0);
    b = hold_locks(&c, &l1, &l2);

    ASSERT_EQ(cluster_ctl(&c, &r, "check", "-o", "json", NULL), 0);
    ASSERT_EQ(count(r.out, "\"result\":\"ok\""), 3);
    ASSERT_EQ(count(r.out, "\"reachable\":true"), 3);
    ASSERT(strstr(r.out, "\"content_hash\":null") == NULL);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "check", NULL), 0);
    ASSERT(strstr(r.out, "content check at index") != NULL);
    ASSERT_EQ(count(r.out, " ok\n"), 3);
    ASSERT(strstr(r.out, "diverged") == NULL);
    ctl_result_free(&r);
    /* status shows each node's last check, and finds nothing to warn of. */
    ASSERT_EQ(cluster_ctl(&c, &r, "status", "-o", "json", NULL), 0);
    ASSERT_EQ(count(r.out, "\"check_index\":null"), 0);
    ctl_result_free(&r);

    ASSERT_EQ(baton_unlock(l1), 0);
    ASSERT_EQ(baton_unlock(l2), 0);
    baton_close(b);
    ASSERT_EQ(cluster_stop(&c), 0);
}

TEST(byte_flipped_in_data_file_is_reported)
{
    struct cluster c;
    struct ctl_result r;
    baton_lock_t *l1, *l2;
    baton_t *b;
    char path[PATH_MAX + 16], want[64];
    int leader, victim;

    ASSERT_EQ(cluster_start(&c, 3), 0);
    leader = cluster_wait_leader(&c, 15000);
    ASSERT_GE(leader, 0);
    victim = (leader + 1) % 3;
    b = hold_locks(&c, &l1, &l2);
    wait_same_applied(&c);

    /* Stop the follower cleanly and change one byte of "check/alpha"'s
     * holders record (key: the name, a 0, the be64 fence): the low byte
     * of its grant index (offset 16 of the 33-byte record,
     * storage/store_int.h), which only lock-info reads. */
    ASSERT_EQ(cluster_kill(&c, victim, SIGTERM), 0);
    snprintf(path, sizeof path, "%s/fsm/data.mdb", c.nodes[victim].dir);
    {
        uint8_t key[sizeof "check/alpha" + 8];
        uint64_t fence = baton_lock_fence(l1);
        memcpy(key, "check/alpha", sizeof "check/alpha"); /* with its NUL */
        for (int i = 0; i < 8; i++) key[sizeof "check/alpha" + i] = (uint8_t)(fence >> (56 - 8 * i));
        ASSERT_GE(corrupt_lmdb_value(path, key, sizeof key, 33, 16), 1);
    }
    ASSERT_EQ(cluster_restart(&c, victim), 0);
    wait_same_applied(&c);

    /* The state digest cannot see it. */
    ASSERT_EQ(cluster_ctl(&c, &r, "status", NULL), 0);
    ASSERT(strstr(r.out, "WARNING") == NULL);
    ctl_result_free(&r);

    /* The content check does, and names the node. */
    snprintf(want, sizeof want, "node %u diverged", c.nodes[victim].id);
    ASSERT_EQ(cluster_ctl(&c, &r, "check", NULL), 70);
    if (strstr(r.out, want) == NULL) FAIL("no \"%s\" in:\n%s", want, r.out);
    ASSERT_EQ(count(r.out, "diverged"), 1);
    ASSERT_EQ(count(r.out, "DIVERGED"), 1);
    ASSERT_EQ(count(r.out, " ok\n"), 2);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "check", "-o", "json", NULL), 70);
    ASSERT_EQ(count(r.out, "\"result\":\"ok\""), 2);
    ASSERT_EQ(count(r.out, "\"result\":\"diverged\""), 1);
    if (strstr(r.err, want) == NULL) FAIL("no \"%s\" on stderr:\n%s", want, r.err);
    ctl_result_free(&r);

    /* Now that the nodes hold checks at one index, status compares them. */
    ASSERT_EQ(cluster_ctl(&c, &r, "status", NULL), 70);
    ASSERT(strstr(r.out, "hold different content") != NULL);
    ctl_result_free(&r);

    ASSERT_EQ(baton_unlock(l1), 0);
    ASSERT_EQ(baton_unlock(l2), 0);
    baton_close(b);
    ASSERT_EQ(cluster_stop(&c), 0);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(120);
    RUN(check_all_equal);
    RUN(byte_flipped_in_data_file_is_reported);
    return runner_done();
}
