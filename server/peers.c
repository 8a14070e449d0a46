/*
 * peers.c -- the raft transport's log of refused and closed raft
 * connections (node_config.peer.log). Which nodes the raft port admits is
 * the node's own rule, from raft's configuration (raft/peer_admit.h;
 * docs/design.md, "Who the raft port admits").
 */
#include "server/log.h"
#include "server/server_int.h"

void peers_log(void *arg, const char *msg)
{
    (void)arg;
    log_warn("%s", msg);
}
