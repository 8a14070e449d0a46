/*
 * test_cluster_id.c -- the cluster id file and the ids a bootstrap and a
 * restore make (raft/cluster_id.h).
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "baton/baton_defs.h"
#include "raft/cluster_id.h"
#include "tests/lib/files.h"
#include "tests/lib/runner.h"

static void members(struct node_config *c, int swap, const char *addr3)
{
    static const char *const addrs[] = {"127.0.0.1:7101", "127.0.0.1:7102"};

    memset(c, 0, sizeof *c);
    c->n_members = 3;
    for (uint32_t i = 0; i < 2; i++) {
        uint32_t k = swap ? 1 - i : i;
        c->members[i].id = k + 1;
        snprintf(c->members[i].raft_addr, sizeof c->members[i].raft_addr, "%s", addrs[k]);
    }
    c->members[2].id = 3;
    snprintf(c->members[2].raft_addr, sizeof c->members[2].raft_addr, "%s", addr3);
}

TEST(file_round_trip_and_refusals)
{
    char dir[] = "/tmp/baton-cid-XXXXXX", path[64];
    uint64_t id = 0;
    int fd;

    ASSERT(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/cluster-id", dir);
    ASSERT_EQ(cluster_id_load(path, &id), BATON_ENOTFOUND);
    ASSERT_EQ(cluster_id_write(path, 0x00ab00cd00ef0012ull), 0);
    ASSERT_EQ(cluster_id_load(path, &id), 0);
    ASSERT_UEQ(id, 0x00ab00cd00ef0012ull);
    ASSERT_EQ(cluster_id_write(path, 0), BATON_EIO);
    fd = open(path, O_WRONLY | O_TRUNC);
    ASSERT_EQ(write(fd, "12345\n", 6), 6);
    close(fd);
    ASSERT_EQ(cluster_id_load(path, &id), BATON_EMALFORMED);
    fd = open(path, O_WRONLY | O_TRUNC);
    ASSERT_EQ(write(fd, "0000000000000000\n", 17), 17);
    close(fd);
    ASSERT_EQ(cluster_id_load(path, &id), BATON_EMALFORMED);
    rm_rf(dir);
}

TEST(bootstrap_and_restore_ids)
{
    struct node_config a, b, c;
    uint64_t boot, rest;

    members(&a, 0, "127.0.0.1:7103");
    members(&b, 1, "127.0.0.1:7103");
    members(&c, 0, "127.0.0.1:7199");
    boot = cluster_id_of_bootstrap(&a);
    ASSERT(boot != 0);
    /* The order of --cluster does not matter; its members do. */
    ASSERT_UEQ(cluster_id_of_bootstrap(&b), boot);
    ASSERT(cluster_id_of_bootstrap(&c) != boot);
    /* A restore's: the same for the same inputs, never the bootstrap's,
     * different for another backup or floor. */
    rest = cluster_id_of_restore(&a, 7, 100, 3, 100 + (1ull << 40), 0);
    ASSERT(rest != 0 && rest != boot);
    ASSERT_UEQ(cluster_id_of_restore(&b, 7, 100, 3, 100 + (1ull << 40), 0), rest);
    ASSERT(cluster_id_of_restore(&a, 8, 100, 3, 100 + (1ull << 40), 0) != rest);
    ASSERT(cluster_id_of_restore(&a, 7, 100, 3, 100 + (1ull << 40), 5) != rest);
    ASSERT(cluster_id_of_restore(&c, 7, 100, 3, 100 + (1ull << 40), 0) != rest);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(file_round_trip_and_refusals);
    RUN(bootstrap_and_restore_ids);
    return runner_done();
}
