/*
 * member_addrs.c -- where any node finds a member's client address, for
 * REDIRECT, STATUS_R and MEMBERS_R: the replicated members table first
 * (MEMBER_ADD commits a new member's address there before it joins; see
 * members.c), else this node's own --cluster list.
 */
#include <stdio.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "server/log.h"
#include "server/server_int.h"

const char *member_client_addr(struct server *srv, uint32_t id, char buf[BATON_MAX_ADDR + 1])
{
    const struct node_member *known;
    int rv = store_member_addr(srv->store, id, buf, BATON_MAX_ADDR + 1);

    if (rv == 1) return buf;
    if (rv < 0) log_warn("reading member %u's client address: %s", id, baton_strerror(rv));
    known = node_member_find(&srv->cfg.node, id);
    snprintf(buf, BATON_MAX_ADDR + 1, "%s", known != NULL ? known->client_addr : "");
    return buf;
}

uint32_t member_views(struct server *srv, struct member_view *out, uint32_t max)
{
    struct node_server servers[BATON_MAX_MEMBERS];
    const struct node_config *cfg = &srv->cfg.node;
    uint32_t n = srv->nio->members(srv->node, servers, BATON_MAX_MEMBERS);

    if (n > max) n = max;
    for (uint32_t i = 0; i < n; i++) {
        out[i].id = servers[i].id;
        out[i].role = servers[i].role;
        memcpy(out[i].raft_addr, servers[i].raft_addr, sizeof out[i].raft_addr);
        member_client_addr(srv, servers[i].id, out[i].client_addr);
    }
    if (n > 0) return n;
    /* No configuration yet: a --join node waiting to be added. */
    for (n = 0; n < cfg->n_members && n < max; n++) {
        out[n].id = cfg->members[n].id;
        out[n].role = MEMBER_VOTER;
        snprintf(out[n].raft_addr, sizeof out[n].raft_addr, "%s", cfg->members[n].raft_addr);
        member_client_addr(srv, cfg->members[n].id, out[n].client_addr);
    }
    return n;
}
