/*
 * transport.c -- the choice between the TLS transport (raft/peer_tls.c)
 * and the plaintext one (raft/peer_tcp.c). See transport.h.
 */
#include "raft/transport.h"

#include <stdio.h>

#include "baton/baton_defs.h"
#include "proto/errmsg.h"
#include "raft/peer_base.h"
#include "raft/peer_tcp.h"
#include "raft/peer_tls.h"

int transport_init(struct transport *t, uv_loop_t *loop, uint32_t id,
                   const struct node_peer_tls *peer, char *errmsg)
{
    int rv;

    t->tls = peer->cert_file != NULL;
    if (t->tls) {
        if ((rv = peer_tls_init(&t->base, loop, id, peer, errmsg)) != 0) return rv;
    } else if (peer_tcp_init(&t->base, loop) != 0) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "out of memory for the raft transport");
        return BATON_ENOMEM;
    }
    /* The base's log: the plaintext transport's refusals, and the older
     * peers of both (the TLS transport logs its own refusals itself). */
    peer_base_of(&t->base)->log = peer->log;
    peer_base_of(&t->base)->log_arg = peer->arg;
    return 0;
}

void transport_set_cluster(struct transport *t, uint64_t cluster_id,
                           void (*adopted)(void *arg, uint64_t id), void *arg)
{
    struct peer_base *pb = peer_base_of(&t->base);

    pb->cluster_id = cluster_id;
    pb->adopted = adopted;
    pb->adopted_arg = arg;
}

void transport_set_levels(struct transport *t, uint32_t level, uint32_t cluster_level)
{
    struct peer_base *pb = peer_base_of(&t->base);

    pb->level = level ? level : 1;
    pb->cluster_level = cluster_level ? cluster_level : 1;
}

void transport_set_started(struct transport *t, bool (*started)(void *arg, uint64_t id),
                           void *arg)
{
    struct peer_base *pb = peer_base_of(&t->base);

    pb->started = started;
    pb->started_arg = arg;
}

uint64_t transport_cluster_id(struct transport *t)
{
    return peer_base_of(&t->base)->cluster_id;
}

uint32_t transport_peer_level(struct transport *t, uint32_t id)
{
    return peer_base_level_of(peer_base_of(&t->base), id);
}

int transport_set_bind_address(struct transport *t, const char *address)
{
    return peer_base_set_bind_address(&t->base, address);
}

void transport_set_admit(struct transport *t, const struct peer_admit *a)
{
    peer_base_set_admit(peer_base_of(&t->base), a);
}

void transport_close(struct transport *t)
{
    peer_base_free(&t->base);
}
