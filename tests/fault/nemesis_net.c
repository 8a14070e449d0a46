/*
 * nemesis_net.c -- the nemesis's partitions between clients and nodes.
 * Some clients reach the cluster through faultproxy's client listeners,
 * one group per client (run.c, client_profiles); "ccut G ID" cuts group G
 * off from node ID like a partition (connections closed, new ones
 * black-holed), "heal" undoes every cut.
 *
 *   partition-client  a proxied client (one that holds a lock 4 times in 5)
 *                     is cut off for 1.5-6 s from the leader only, from
 *                     every node, or from one follower. Cut off from the
 *                     leader, the followers' REDIRECTs lead it into the
 *                     black hole; past its lease (3 s) the cluster expires
 *                     its session and hands its lock on, and it must learn
 *                     that it lost it (its own lease runs out first)
 *   deposed-leader    the leader is cut off from both followers (raft
 *                     links) AND a proxied client from both followers, for
 *                     2-6 s: the client reaches only the old leader, which
 *                     the other two depose. It must not be granted anything
 *                     the new leader does not know of, its keepalives must
 *                     not be confirmed, and a lock it held must be reported
 *                     lost once its lease is over
 */
#include "tests/fault/flog.h"
#include "tests/fault/nemesis.h"

/* A proxied client; -1 if none. Four times in five it waits (up to 3 s)
 * for one to hold a lock, so that the cut strikes in the middle of a hold:
 * a long hold (client.c, --long-holds) then goes on behind the cut. Half
 * of those times it waits the first 2 s for a multi-lock's holder. */
static int proxied_client(struct run *r)
{
    int cand[RUN_MAX_CLIENTS], n = 0;
    int64_t until = now_ms() + 3000, multi_until = now_ms() + (run_rand(r, 0, 1) ? 2000 : 0);

    for (int k = 0; k < r->n_clients; k++)
        if (r->client_group[k] >= 0 && r->clients[k] > 0 && !r->client_stopped[k]) cand[n++] = k;
    if (n > 0 && run_rand(r, 0, 4) > 0)
        while (now_ms() < until) {
            int want = now_ms() < multi_until ? 2 : 1;
            for (int j = 0; j < n; j++)
                if (client_holds(r, cand[j]) >= want) return cand[j];
            sleep_ms(5);
        }
    return n ? cand[run_rand(r, 0, (uint64_t)n - 1)] : -1;
}

/* Cut client k's group off from node i. */
static void ccut(struct run *r, int k, int i)
{
    char cmd[64];

    snprintf(cmd, sizeof cmd, "ccut %d %u", r->client_group[k], r->c.nodes[i].id);
    proxy_command(r, cmd);
}

void fault_partition_client(struct run *r, int l)
{
    static const char *const how[] = {"the leader", "every node", "one follower"};
    int k = proxied_client(r), v = (int)run_rand(r, 0, 2), f = other_node(r, l);
    unsigned ms = (unsigned)run_rand(r, 1500, 6000);
    int held;

    if (k < 0) return;
    held = client_holds(r, k);
    note(r, "FAULT", "partition-client c%d cut off from %s (leader %u) for %u ms%s", k, how[v],
         r->c.nodes[l].id, ms, holds_note(held));
    for (int i = 0; i < r->c.n; i++)
        if ((v == 0 && i == l) || v == 1 || (v == 2 && i == f)) ccut(r, k, i);
    sleep_ms(ms);
    proxy_command(r, "heal");
    note(r, "HEAL", "partition-client c%d reconnected", k);
}

void fault_deposed_leader(struct run *r, int l)
{
    int k = proxied_client(r);
    unsigned ms = (unsigned)run_rand(r, 2000, 6000);
    int held;

    if (k < 0) return;
    held = client_holds(r, k);
    note(r, "FAULT", "deposed-leader node %u cut off from the followers, c%d reaches only it, "
         "for %u ms%s", r->c.nodes[l].id, k, ms, holds_note(held));
    for (int i = 0; i < r->c.n; i++)
        if (i != l) ccut(r, k, i);
    isolate(r, l);
    sleep_ms(ms);
    proxy_command(r, "heal");
    note(r, "HEAL", "deposed-leader node %u and c%d reconnected", r->c.nodes[l].id, k);
}
