/*
 * test_peer_admit.c -- who the raft port admits (raft/peer_admit.h), as a
 * pure function of raft's committed and latest configurations and the
 * --cluster list: a node removed by a committed change is refused; a node
 * in an appended, uncommitted configuration (one being added) is admitted;
 * a node that an uncommitted change removes stays admitted until it
 * commits (the change may yet be cut off, and that node may lead the log
 * that wins); a node with no configuration admits its --cluster list under
 * peer TLS and every id in plaintext.
 */
#include "raft/peer_admit.h"
#include "tests/lib/runner.h"

#define N(a) (unsigned)(sizeof(a) / sizeof(a)[0])

static const uint64_t one_two_three[] = {1, 2, 3}, one_two[] = {1, 2},
                      one_to_four[] = {1, 2, 3, 4}, listed[] = {1, 5};

TEST(committed_removal_refuses_the_node)
{
    struct peer_admit a;
    struct peer_admit_in in = {.latest = one_two, .n_latest = N(one_two),
                               .committed = one_two, .n_committed = N(one_two)};

    peer_admit_compute(&a, &in);
    ASSERT(!a.any);
    ASSERT(peer_admit_has(&a, 1));
    ASSERT(peer_admit_has(&a, 2));
    ASSERT(!peer_admit_has(&a, 3));
    ASSERT(!peer_admit_has(&a, 0));
    ASSERT(!peer_admit_has(&a, 9));
    /* The --cluster list counts for nothing once there is a configuration. */
    in.listed = listed, in.n_listed = N(listed);
    for (int strict = 0; strict < 2; strict++) {
        in.strict = strict;
        peer_admit_compute(&a, &in);
        ASSERT(!peer_admit_has(&a, 5));
        ASSERT(!peer_admit_has(&a, 3));
    }
}

TEST(uncommitted_addition_is_admitted)
{
    struct peer_admit a;
    struct peer_admit_in in = {.latest = one_to_four, .n_latest = N(one_to_four),
                               .committed = one_two_three, .n_committed = N(one_two_three)};

    peer_admit_compute(&a, &in);
    ASSERT(peer_admit_has(&a, 4));
    ASSERT_EQ(a.n, 4); /* each id once */
}

TEST(uncommitted_removal_keeps_the_node_until_it_commits)
{
    struct peer_admit a, b;
    struct peer_admit_in in = {.latest = one_two, .n_latest = N(one_two),
                               .committed = one_two_three, .n_committed = N(one_two_three)};

    peer_admit_compute(&a, &in);
    ASSERT(peer_admit_has(&a, 3));
    /* It commits: node 3 goes, and the set is another one. */
    in.committed = one_two, in.n_committed = N(one_two);
    peer_admit_compute(&b, &in);
    ASSERT(!peer_admit_has(&b, 3));
    ASSERT(!peer_admit_same(&a, &b));
    ASSERT(peer_admit_same(&b, &b));
    /* No committed copy known (a restart with an uncommitted entry at the
     * log's end): the latest configuration alone. */
    in.n_committed = 0;
    peer_admit_compute(&b, &in);
    ASSERT(peer_admit_has(&b, 1));
    ASSERT(!peer_admit_has(&b, 3));
}

TEST(no_configuration)
{
    struct peer_admit a;
    struct peer_admit_in in = {.listed = listed, .n_listed = N(listed)};

    peer_admit_compute(&a, &in);
    ASSERT(a.any);
    ASSERT(peer_admit_has(&a, 77));
    in.strict = true;
    peer_admit_compute(&a, &in);
    ASSERT(!a.any);
    ASSERT(peer_admit_has(&a, 1));
    ASSERT(peer_admit_has(&a, 5));
    ASSERT(!peer_admit_has(&a, 2));
}

TEST(same_ignores_order)
{
    static const uint64_t two_one[] = {2, 1};
    struct peer_admit a, b;
    struct peer_admit_in in = {.latest = one_two, .n_latest = N(one_two)};

    peer_admit_compute(&a, &in);
    in.latest = two_one;
    peer_admit_compute(&b, &in);
    ASSERT(peer_admit_same(&a, &b));
    b.any = true;
    ASSERT(!peer_admit_same(&a, &b));
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(committed_removal_refuses_the_node);
    RUN(uncommitted_addition_is_admitted);
    RUN(uncommitted_removal_keeps_the_node_until_it_commits);
    RUN(no_configuration);
    RUN(same_ignores_order);
    return runner_done();
}
