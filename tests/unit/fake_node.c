/*
 * fake_node.c -- a node of one without raft; see fake_node.h.
 */
#include "tests/unit/fake_node.h"

#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"

enum op_kind { OP_PROPOSE, OP_CONFIRM, OP_SNAPSHOT };

struct op {
    struct op *next;
    enum op_kind kind;
    void *payload;
    size_t len;
    node_propose_cb *propose_cb;
    node_confirm_cb *confirm_cb;
    node_snapshot_cb *snapshot_cb;
    void *data;
};

struct node {
    uv_loop_t *loop;
    store *store;
    const struct node_config *cfg;
    struct node_hooks hooks;
    uv_idle_t tick;             /* runs queued work on the next loop turn */
    struct op *head, **tail;
    struct effects fx;
    bool leading, want_leading, closing;
    uint32_t cluster_level;     /* the last set_cluster_level */
    void (*closed_cb)(void *data);
    void *closed_data;
    struct fake_node_stats stats;
};

static struct node *current_;
static bool lead_at_open_ = true;
static bool caught_up_;

struct node *fake_node_current(void)
{
    return current_;
}

void fake_node_report_caught_up(bool on)
{
    caught_up_ = on;
}

void fake_node_lead_at_open(bool lead)
{
    lead_at_open_ = lead;
}

void fake_node_stats(const struct node *n, struct fake_node_stats *out)
{
    *out = n->stats;
}

static void tick_cb(uv_idle_t *t);

/* Run the queued work on the next loop turn, in its idle phase: the idle
 * handle stays active until a turn finds nothing to do, so the poll after
 * the work does not block, and the server's check handler, which sends
 * the replies and pushes, follows in the same turn, as it follows raft's
 * completions. (Work done in a timer, or by an idle handle that stopped
 * itself, would wait for the poll to return: never, on a clock that
 * stands still.) */
static void soon(struct node *n)
{
    if (!n->closing) uv_idle_start(&n->tick, tick_cb);
}

/* Complete op as refused (not leading, or closing). */
static void refuse(struct op *o)
{
    switch (o->kind) {
    case OP_PROPOSE: o->propose_cb(o->data, BATON_ENOTLEADER, NULL); break;
    case OP_CONFIRM: o->confirm_cb(o->data, BATON_ENOTLEADER); break;
    case OP_SNAPSHOT: o->snapshot_cb(o->data, BATON_ENOTLEADER, 0); break;
    }
    free(o->payload);
    free(o);
}

/* Commit op: apply an entry at the next index, as every node would. */
static void commit(struct node *n, struct op *o)
{
    uint64_t index = store_applied_index(n->store) + 1;
    int rv;

    switch (o->kind) {
    case OP_PROPOSE:
        rv = store_apply(n->store, index, o->payload, o->len, &n->fx);
        if (rv != 0) {
            o->propose_cb(o->data, BATON_ENOTLEADER, NULL);
            break;
        }
        n->fx.index = index;
        n->stats.entries++;
        if (n->hooks.applied != NULL) n->hooks.applied(n->hooks.data, &n->fx);
        o->propose_cb(o->data, 0, &n->fx);
        break;
    case OP_CONFIRM:
        n->stats.barriers++;
        o->confirm_cb(o->data, 0);
        break;
    case OP_SNAPSHOT: o->snapshot_cb(o->data, 0, store_applied_index(n->store)); break;
    }
    free(o->payload);
    free(o);
}

static void tick_cb(uv_idle_t *t)
{
    struct node *n = t->data;
    struct op *o;

    if (n->leading == n->want_leading && n->head == NULL) {
        uv_idle_stop(t);
        return;
    }
    if (n->leading != n->want_leading) {
        n->leading = n->want_leading;
        if (n->hooks.ready != NULL) n->hooks.ready(n->hooks.data, n->leading);
        if (n->hooks.role != NULL)
            n->hooks.role(n->hooks.data, n->leading ? ROLE_LEADER : ROLE_FOLLOWER, 1);
    }
    while ((o = n->head) != NULL && !n->closing) {
        n->head = o->next;
        if (n->head == NULL) n->tail = &n->head;
        if (n->leading) commit(n, o);
        else refuse(o);
    }
}

static int fake_open(uv_loop_t *loop, store *s, const struct node_config *cfg,
                     const struct node_hooks *hooks, struct node **out, char *errmsg)
{
    struct node *n = calloc(1, sizeof *n);

    (void)errmsg;
    *out = NULL;
    if (n == NULL) return BATON_ENOMEM;
    n->loop = loop;
    n->store = s;
    n->cfg = cfg;
    n->hooks = *hooks;
    n->tail = &n->head;
    n->want_leading = lead_at_open_;
    effects_init(&n->fx);
    uv_idle_init(loop, &n->tick);
    n->tick.data = n;
    current_ = n;
    soon(n);
    *out = n;
    return 0;
}

static int enqueue(struct node *n, struct op *o)
{
    if (!n->leading || n->closing) {
        n->stats.refused++;
        free(o->payload);
        free(o);
        return BATON_ENOTLEADER;
    }
    *n->tail = o;
    n->tail = &o->next;
    soon(n);
    return 0;
}

static int fake_propose(struct node *n, const void *data, size_t len, node_propose_cb *cb,
                        void *cb_data)
{
    struct op *o = calloc(1, sizeof *o);

    if (o == NULL || (o->payload = malloc(len ? len : 1)) == NULL) {
        free(o);
        return BATON_ENOMEM;
    }
    memcpy(o->payload, data, len);
    o->kind = OP_PROPOSE;
    o->len = len;
    o->propose_cb = cb;
    o->data = cb_data;
    return enqueue(n, o);
}

static int fake_confirm(struct node *n, node_confirm_cb *cb, void *data)
{
    struct op *o = calloc(1, sizeof *o);

    if (o == NULL) return BATON_ENOMEM;
    o->kind = OP_CONFIRM;
    o->confirm_cb = cb;
    o->data = data;
    return enqueue(n, o);
}

static int fake_snapshot_now(struct node *n, node_snapshot_cb *cb, void *data)
{
    struct op *o = calloc(1, sizeof *o);

    if (o == NULL) return BATON_ENOMEM;
    o->kind = OP_SNAPSHOT;
    o->snapshot_cb = cb;
    o->data = data;
    return enqueue(n, o);
}

/* A cluster of one has no other voter to hand leadership to. */
static int fake_transfer(struct node *n, uint32_t id, node_transfer_cb *cb, void *data)
{
    (void)id, (void)cb, (void)data;
    return n->leading ? BATON_EINVAL : BATON_ENOTLEADER;
}

static int fake_member_add(struct node *n, uint32_t id, const char *raft_addr,
                           node_change_cb *cb, void *data)
{
    (void)id, (void)raft_addr, (void)cb, (void)data;
    return n->leading ? BATON_EINVAL : BATON_ENOTLEADER;
}

static int fake_member_remove(struct node *n, uint32_t id, node_change_cb *cb, void *data)
{
    (void)id, (void)cb, (void)data;
    return n->leading ? BATON_EINVAL : BATON_ENOTLEADER;
}

static bool fake_change_busy(const struct node *n)
{
    (void)n;
    return false;
}

static uint32_t fake_members(struct node *n, struct node_server *out, uint32_t max)
{
    const struct node_member *self = node_member_find(n->cfg, n->cfg->id);

    if (max == 0 || self == NULL) return 0;
    memset(out, 0, sizeof *out);
    out->id = n->cfg->id;
    out->role = MEMBER_VOTER;
    out->caught_up = caught_up_ && n->leading;
    snprintf(out->raft_addr, sizeof out->raft_addr, "%s", self->raft_addr);
    return 1;
}

static uint32_t fake_successor(struct node *n, uint64_t *match)
{
    (void)n;
    *match = 0;
    return 0;
}

static uint32_t fake_settled_leader(struct node *n)
{
    (void)n;
    return 0;
}

static void fake_get_status(struct node *n, struct node_status *st)
{
    uint64_t index = store_applied_index(n->store);

    memset(st, 0, sizeof *st);
    st->role = n->leading ? ROLE_LEADER : ROLE_FOLLOWER;
    st->ready = n->leading;
    st->leader_id = n->leading ? n->cfg->id : 0;
    st->term = 1;
    st->last_index = st->commit_index = st->applied_index = index;
    st->leader_changes = n->leading ? 1 : 0;
}

static void fake_set_cluster_level(struct node *n, uint32_t level)
{
    n->cluster_level = level;
}

/* The fake cluster has one voter, this node. */
static uint32_t fake_peer_level(struct node *n, uint32_t id)
{
    return id == n->cfg->id ? n->cfg->level : 0;
}

static void tick_closed(uv_handle_t *h)
{
    struct node *n = h->data;

    if (n->closed_cb != NULL) n->closed_cb(n->closed_data);
}

static void fake_close(struct node *n, void (*cb)(void *data), void *data)
{
    struct op *o;

    n->closing = true;
    n->closed_cb = cb;
    n->closed_data = data;
    while ((o = n->head) != NULL) {
        n->head = o->next;
        refuse(o);
    }
    n->tail = &n->head;
    uv_close((uv_handle_t *)&n->tick, tick_closed);
}

static void fake_free(struct node *n)
{
    if (n == NULL) return;
    effects_free(&n->fx);
    if (current_ == n) current_ = NULL;
    free(n);
}

void fake_node_set_leading(struct node *n, bool leading)
{
    n->want_leading = leading;
    soon(n);
}

const struct node_io fake_node_io = {
    .open = fake_open,
    .propose = fake_propose,
    .confirm = fake_confirm,
    .transfer = fake_transfer,
    .snapshot_now = fake_snapshot_now,
    .member_add = fake_member_add,
    .member_remove = fake_member_remove,
    .change_busy = fake_change_busy,
    .members = fake_members,
    .successor = fake_successor,
    .settled_leader = fake_settled_leader,
    .get_status = fake_get_status,
    .set_cluster_level = fake_set_cluster_level,
    .peer_level = fake_peer_level,
    .close = fake_close,
    .free = fake_free,
};
