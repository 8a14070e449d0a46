/*
 * first_start.c -- the first-start question to the other members. See
 * first_start.h.
 */
#include "raft/first_start.h"

#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "baton/baton_defs.h"
#include "raft/peer_base.h"
#include "raft/transport.h"

/* A test build that speaks the first handshake only, as the binary
 * before the cluster id did (tests/integration/test_mixed_versions.c):
 * that binary never asked, and only the newest handshake can. */
#ifdef BATON_TEST_PEER_PROTOCOL_1
#define ONLY_PROTOCOL_1 true
#else
#define ONLY_PROTOCOL_1 false
#endif

struct ask {
    struct raft_uv_connect req[BATON_MAX_MEMBERS];
    unsigned dialled, ended;
    uv_timer_t timer;
    bool timed_out;
};

/* A dial ended: answered or not, an asking transport never hands a
 * stream over (raft/peer_tcp.c, raft/peer_tls.c), so stream is NULL. */
static void dial_ended(struct raft_uv_connect *req, struct uv_stream_s *stream, int status)
{
    struct ask *a = req->data;

    (void)stream;
    (void)status;
    a->ended++;
}

static void timed_out(uv_timer_t *t)
{
    struct ask *a = t->data;

    a->timed_out = true;
}

int first_start_ask(const struct node_config *cfg, uint64_t cluster_id, unsigned budget_ms,
                    struct first_start_answer *out, char *errmsg)
{
    const struct node_member *self = node_member_find(cfg, cfg->id);
    struct node_peer_tls peer = cfg->peer;
    struct transport t;
    struct peer_base *pb;
    struct ask a;
    uv_loop_t loop;
    int rv;

    memset(out, 0, sizeof *out);
    memset(&a, 0, sizeof a);
    if (self == NULL || ONLY_PROTOCOL_1) return 0;
    if (uv_loop_init(&loop) != 0) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "cannot make a loop to ask the other members");
        return BATON_ENOMEM;
    }
    peer.log = NULL; /* a member not up yet is no news: the caller says what came of it */
    rv = transport_init(&t, &loop, cfg->id, &peer, errmsg);
    if (rv != 0) {
        uv_loop_close(&loop);
        return rv;
    }
    pb = peer_base_of(&t.base);
    pb->asking = true;
    transport_set_cluster(&t, cluster_id, NULL, NULL);
    transport_set_levels(&t, cfg->level, cfg->cluster_level);
    if (t.base.init(&t.base, cfg->id, self->raft_addr) != 0) goto done;
    for (uint32_t i = 0; i < cfg->n_members; i++) {
        const struct node_member *m = &cfg->members[i];
        struct raft_uv_connect *req = &a.req[a.dialled];

        if (m->id == cfg->id) continue;
        req->data = &a;
        if (t.base.connect(&t.base, req, m->id, m->raft_addr, dial_ended) == 0) a.dialled++;
    }
    uv_timer_init(&loop, &a.timer);
    a.timer.data = &a;
    uv_timer_start(&a.timer, timed_out, budget_ms ? budget_ms : FIRST_START_BUDGET_MS, 0);
    while (a.ended < a.dialled && !a.timed_out && pb->known_by == 0)
        uv_run(&loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&a.timer, NULL);
done:
    out->known_by = (uint32_t)pb->known_by;
    snprintf(out->known_addr, sizeof out->known_addr, "%s", pb->known_addr);
    transport_close(&t); /* ends the dials still open; their callbacks run below */
    uv_run(&loop, UV_RUN_DEFAULT);
    (void)uv_loop_close(&loop); /* every handle is closed by now */
    return 0;
}
