/*
 * peers.c -- which nodes may open a raft connection to this one, when the
 * raft port runs mutual TLS (raft/peer_tls.h asks; docs/security.md,
 * "Between nodes"). The transport has already checked that the node's
 * certificate is signed by --peer-ca and names the id it claims; this is
 * the rest of the rule, which only the server can decide because part of
 * it lives in the replicated state.
 */
#include "server/log.h"
#include "server/server_int.h"

/*
 * Node `id` may connect if it is in the latest raft configuration this
 * node knows (committed or not: a node being promoted, or one a leader
 * added just now, must be reachable at once), or is being added -- a
 * MEMBER_ADD commits the new member's client address to the members table
 * before raft hears of it (members.c) -- or, while this node has no
 * configuration at all (started with --join, not added yet), is in its own
 * --cluster list: the only nodes it can know of, and so the ones a --join
 * node's operator must list for the leader to reach it.
 */
bool peers_allowed(void *arg, uint32_t id)
{
    struct server *srv = arg;
    struct node_server servers[BATON_MAX_MEMBERS];
    char addr[BATON_MAX_ADDR + 1];
    uint32_t n;

    if (srv->node == NULL) return false; /* not started yet */
    n = srv->nio->members(srv->node, servers, BATON_MAX_MEMBERS);
    for (uint32_t i = 0; i < n; i++)
        if (servers[i].id == id) return true;
    if (store_member_addr(srv->store, id, addr, sizeof addr) == 1) return true;
    return n == 0 && node_member_find(&srv->cfg.node, id) != NULL;
}

void peers_log(void *arg, const char *msg)
{
    (void)arg;
    log_warn("%s", msg);
}
