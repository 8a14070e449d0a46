/*
 * observe.c -- what an operator reads of a node: its metrics as text
 * (HTTP /metrics and the METRICS request serve the same), and whether it
 * is ready (HTTP /readyz). docs/operations.md, "Metrics and health".
 *
 * The counters and histograms of server/metrics.c are bumped where their
 * events happen; the gauges that mirror the server's state -- raft's term,
 * role and indexes, sessions, connections, the disk -- are read here, at
 * the moment of the render, from raft/node.h's status and the server.
 * Raft's own counts (leaders seen, snapshots taken) come from the same
 * status and are added as they grew since the last render; a snapshot's
 * duration is known only for the latest one, so two snapshots between
 * renders are both observed with the latest's duration.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "server/access_rule.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/server_int.h"

/* What raft's status said at the last render. */
static struct {
    uint64_t leader_changes;
    uint64_t snapshots;
} seen;

/* Bring the longest queues up to date from the applied state (the ready
 * leader's; another node lists none). Backwards: a lock whose queue is
 * empty now leaves the table, and the last entry takes its place. */
static void refresh_top_locks(struct server *srv)
{
    if (!srv->ready) {
        metrics_top_clear();
        return;
    }
    for (size_t i = metrics_top_count(); i-- > 0;) {
        struct msg_lock_info_r info = {0};
        char name[BATON_MAX_NAME];
        const char *p;
        size_t len;

        metrics_top_get(i, &p, &len);
        memcpy(name, p, len);
        if (store_lock_info(srv->store, name, len, 0, &info) != 0) continue;
        store_lock_info_free(&info);
        metrics_top_note(name, len, info.total_waiters);
    }
}

/* Set the gauges and raft's counts from the node's state now. */
static void sample(struct server *srv)
{
    struct node_status st;

    srv->nio->get_status(srv->node, &st);
    metrics_set(M_NODE_ID, srv->cfg.node.id);
    metrics_set(M_RAFT_TERM, (int64_t)st.term);
    metrics_set(M_RAFT_ROLE, st.role);
    metrics_set(M_RAFT_LEADER_ID, st.leader_id);
    metrics_set(M_READY, srv->ready);
    metrics_set(M_RAFT_COMMIT_INDEX, (int64_t)st.commit_index);
    metrics_set(M_RAFT_APPLIED_INDEX, (int64_t)st.applied_index);
    metrics_set(M_SESSIONS_OPEN, srv->ready ? (int64_t)lease_count(&srv->leases) : 0);
    metrics_set(M_CONNECTIONS, (int64_t)srv->conns.n);
    metrics_set(M_WATCHES, (int64_t)srv->w2.n);
    metrics_set(M_DISK_FREE_BYTES, (int64_t)srv->disk_free);
    metrics_set(M_DISK_LOW, srv->disk_low);
    metrics_set(M_FEATURE_LEVEL, CMD_LEVEL);
    metrics_set(M_CLUSTER_LEVEL, store_level(srv->store));
    if (st.leader_changes > seen.leader_changes)
        metrics_add(M_LEADER_CHANGES, st.leader_changes - seen.leader_changes);
    for (uint64_t i = seen.snapshots; i < st.snapshots; i++) {
        metrics_inc(M_SNAPSHOTS);
        metrics_observe(M_SNAPSHOT_SECONDS, (double)st.snapshot_ns / 1e9);
    }
    seen.leader_changes = st.leader_changes;
    seen.snapshots = st.snapshots;
    refresh_top_locks(srv);
}

/* metrics_lock_filter: may principal arg read the lock? */
static bool principal_sees(const char *name, size_t len, void *arg)
{
    return access_may_see(arg, name, len);
}

int observe_render(struct server *srv, const struct principal *who, struct buf *out)
{
    sample(srv);
    /* a principal limited to prefixes reads no other prefix's lock names
     * (docs/security.md, "Prefixes") */
    if (who != NULL) return metrics_render(out, principal_sees, (void *)who);
    return metrics_render(out, NULL, NULL);
}

bool observe_ready(struct server *srv, char *why, size_t cap)
{
    struct node_status st;

    srv->nio->get_status(srv->node, &st);
    if (st.fault != 0)
        snprintf(why, cap, "local failure at entry %llu: %s", (unsigned long long)st.fault_index,
                 baton_strerror(st.fault));
    else if (st.role == ROLE_LEADER && !st.ready)
        snprintf(why, cap, "leader of term %llu, its barrier not applied yet",
                 (unsigned long long)st.term);
    else if (st.leader_id == 0)
        snprintf(why, cap, "no leader known (term %llu)", (unsigned long long)st.term);
    else if (st.applied_index < st.commit_index)
        snprintf(why, cap, "applied index %llu behind commit index %llu",
                 (unsigned long long)st.applied_index, (unsigned long long)st.commit_index);
    else
        return true;
    return false;
}

/* METRICS -> METRICS_R: the text in chunks that end at a line's end. */
void observe_metrics(struct conn *c, const struct msg *m)
{
    struct msg r = {.type = MSG_METRICS_R, .req_id = m->req_id};
    struct msg_text_chunk chunks[BATON_MAX_TEXT_CHUNKS];
    struct buf text = {0};
    size_t off = 0;
    uint32_t n = 0;
    int rv = observe_render(c->srv, c->who, &text);

    while (rv == 0 && off < text.len) {
        size_t len = text.len - off;

        if (n == BATON_MAX_TEXT_CHUNKS) {
            rv = BATON_ETOOBIG;
            break;
        }
        if (len > BATON_MAX_TEXT_CHUNK) {
            len = BATON_MAX_TEXT_CHUNK;
            while (len > 1 && text.data[off + len - 1] != '\n') len--;
        }
        chunks[n].text.p = (const char *)text.data + off;
        chunks[n].text.n = (uint16_t)len;
        n++;
        off += len;
    }
    if (rv != 0) {
        conn_send_error(c, m->req_id, rv, "metrics: %s", baton_strerror(rv));
    } else {
        r.u.metrics_r.n = n;
        r.u.metrics_r.chunks = n ? chunks : NULL;
        conn_send(c, &r);
    }
    buf_free(&text);
}
