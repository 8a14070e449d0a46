/*
 * levels.c -- the cluster's feature level (storage/cmd_table.h, level;
 * docs/design.md, "Feature levels"): raising the committed level once
 * every voter runs it, refusing a command the committed level does not
 * allow yet, and keeping the raft transport's refusal of lower peers
 * current.
 *
 * A leader may put a row of level N in the log only once every voter runs
 * a binary of level N or more: a node that cannot decode an entry stops at
 * it (raft/fsm.c). Every raft handshake carries the sender's level (an
 * older binary's says 1: raft/peer_base.h, "Feature levels"), so the
 * leader, which holds a connection to every voter it replicates to, knows
 * each one's level without asking anything of its own (node_peer_level).
 * Every LEVEL_POLL_MS the ready leader looks at the members of raft's
 * configuration (voters, and spares that a member add may promote): when
 * every one of them has said a level and the lowest
 * (this binary's own included) is above the committed one, it proposes
 * SET_LEVEL with it, alone in its entry; the store never lowers it
 * (storage/level.c). A voter not heard from yet (down since this node
 * started) holds the raise back until it is. Once the committed level is
 * this binary's own, nothing could raise it further.
 *
 * On every node the same tick hands the store's committed level to the
 * raft transport, which from then on refuses a peer of a lower level at
 * its handshake: a node moved back to an older binary, or added on one,
 * gets neither entries nor snapshots it could not apply, and says why in
 * its log.
 *
 * A command whose row needs a level above the committed one is refused
 * with BATON_EVERSION before it is batched (level_refuse), naming the
 * levels and a voter that holds the cluster back; batch.c refuses it too,
 * without the words, for every command whoever proposes it.
 */
#include <string.h>

#include "baton/baton_defs.h"
#include "server/log.h"
#include "server/server_int.h"

#define LEVEL_POLL_MS 100

/* ---- the raise rule ------------------------------------------------------------ */

uint32_t level_voters_min(const struct level_voter *v, uint32_t n, uint32_t own, uint32_t *low_id)
{
    uint32_t min = own;

    if (low_id != NULL) *low_id = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (v[i].level < min) {
            min = v[i].level;
            if (low_id != NULL) *low_id = v[i].id;
        }
    }
    return min;
}

uint32_t level_to_raise(const struct level_voter *v, uint32_t n, uint32_t own,
                        uint32_t committed)
{
    uint32_t min = level_voters_min(v, n, own, NULL);

    return min > committed ? min : 0; /* a voter not heard from (0) holds it back */
}

/* The other members of raft's configuration -- voters, and the spares and
 * standbys that may become voters (a member add promotes one once it
 * caught up, over a connection made before any raise) -- and the level
 * each said, into v (BATON_MAX_MEMBERS): how many. */
static uint32_t voters_now(struct server *srv, struct level_voter *v)
{
    struct node_server members[BATON_MAX_MEMBERS];
    uint32_t n = srv->nio->members(srv->node, members, BATON_MAX_MEMBERS), k = 0;

    for (uint32_t i = 0; i < n; i++) {
        if (members[i].id == srv->cfg.node.id) continue;
        v[k].id = members[i].id;
        v[k].level = srv->nio->peer_level(srv->node, members[i].id);
        k++;
    }
    return k;
}

/* ---- the raise ------------------------------------------------------------------ */

static void raised(void *data, int status, const struct effects *fx)
{
    struct server *srv = data;

    (void)fx;
    srv->levels.raising = false;
    if (status == 0)
        log_info("feature level: the cluster runs level %u", store_level(srv->store));
}

/* Propose SET_LEVEL level, alone in its entry. */
static void level_raise(struct server *srv, uint32_t level)
{
    struct cmd cmd = {.type = CMD_SET_LEVEL, .session = level};
    struct buf b = {0};
    size_t start;
    int rv = cmd_batch_begin(&b, &start);

    if (rv == 0) rv = cmd_batch_add(&b, &cmd);
    if (rv == 0) {
        cmd_batch_end(&b, start, 1);
        rv = srv->nio->propose(srv->node, b.data, b.len, raised, srv);
    }
    buf_free(&b);
    if (rv == 0) {
        srv->levels.raising = true;
        srv->levels.raising_to = level;
        log_info("feature level: every voter runs level %u or more; raising the cluster's level "
                 "from %u", level, store_level(srv->store));
    }
}

/* The transport told the committed level; the ready leader's raise. */
static void poll(struct server *srv)
{
    struct levels *lv = &srv->levels;
    struct level_voter v[BATON_MAX_MEMBERS];
    uint32_t committed = store_level(srv->store), n, want;

    if (committed != lv->told) {
        srv->nio->set_cluster_level(srv->node, committed);
        lv->told = committed;
    }
    if (!srv->ready || srv->stopping || lv->raising || committed >= CMD_LEVEL) return;
    n = voters_now(srv, v);
    want = level_to_raise(v, n, CMD_LEVEL, committed);
    if (want != 0) level_raise(srv, want);
}

static void poll_cb(uv_timer_t *t)
{
    poll(t->data);
}

void levels_kick(struct server *srv)
{
    poll(srv);
}


void levels_init(struct server *srv)
{
    srv->levels.told = srv->cfg.node.cluster_level;
    uv_timer_init(srv->loop, &srv->levels.timer);
    srv->levels.timer.data = srv;
    uv_timer_start(&srv->levels.timer, poll_cb, LEVEL_POLL_MS, LEVEL_POLL_MS);
}

void levels_close(struct server *srv)
{
    if (!uv_is_closing((uv_handle_t *)&srv->levels.timer))
        uv_close((uv_handle_t *)&srv->levels.timer, NULL);
}

/* ---- refusing what the committed level does not allow ---------------------- */

bool level_refuse(struct conn *c, uint64_t req_id, const struct cmd *cmd)
{
    struct server *srv = c->srv;
    struct level_voter v[BATON_MAX_MEMBERS];
    int need = cmd_level(cmd);
    uint32_t committed, low_id, low, n;

    if (need <= 1) return false; /* every cluster runs level 1 */
    if ((uint32_t)need <= levels_usable(srv)) return false;
    committed = store_level(srv->store);
    n = voters_now(srv, v);
    low = level_voters_min(v, n, CMD_LEVEL, &low_id);
    if (low_id == 0 && CMD_LEVEL < need) low_id = srv->cfg.node.id; /* this binary itself */
    if (low_id == 0 && low >= (uint32_t)need)
        conn_send_error(c, req_id, BATON_EVERSION,
                        "this command needs feature level %d; the cluster runs level %u and is "
                        "raising it now: try again", need, committed);
    else if (low_id != 0 && low != 0)
        conn_send_error(c, req_id, BATON_EVERSION,
                        "this command needs feature level %d; the cluster runs level %u until "
                        "every voter supports it (node %u runs level %u)",
                        need, committed, low_id, low);
    else
        conn_send_error(c, req_id, BATON_EVERSION,
                        "this command needs feature level %d; the cluster runs level %u until "
                        "every voter supports it (node %u has not said its level yet)",
                        need, committed, low_id);
    return true;
}
