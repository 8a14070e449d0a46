/*
 * peer_base.c -- the list of connections and the end of a raft transport,
 * shared by raft/peer_tcp.c and raft/peer_tls.c. See peer_base.h.
 */
#include "raft/peer_base.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/addr.h"

struct peer_base *peer_base_of(struct raft_uv_transport *tr)
{
    return tr->impl;
}

void peer_base_setup(struct peer_base *pb, struct raft_uv_transport *tr, uv_loop_t *loop,
                     const struct peer_base_hooks *hooks)
{
    pb->tr = tr;
    pb->loop = loop;
    pb->hooks = hooks;
    tr->data = NULL;
    tr->impl = pb;
    tr->errmsg[0] = '\0';
    tr->init = peer_base_init_cb;
    tr->close = peer_base_close_cb;
    pb->admit.any = true;
}

/* ---- the list --------------------------------------------------------------- */

void peer_base_append(struct peer_base *pb, struct peer_conn *c)
{
    c->prev = pb->tail;
    c->next = NULL;
    if (pb->tail != NULL)
        pb->tail->next = c;
    else
        pb->head = c;
    pb->tail = c;
}

void peer_base_remove(struct peer_base *pb, struct peer_conn *c)
{
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        pb->head = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    else
        pb->tail = c->prev;
}

struct peer_conn *peer_base_evictable(struct peer_base *pb, unsigned max,
                                      bool (*waiting)(const struct peer_conn *c))
{
    struct peer_conn *c, *oldest = NULL;
    unsigned n = 0;

    for (c = pb->head; c != NULL; c = c->next) {
        if (c->outbound || (waiting != NULL && !waiting(c))) continue;
        if (oldest == NULL) oldest = c;
        n++;
    }
    return n >= max ? oldest : NULL;
}

uv_timer_t *peer_base_timer(struct peer_base *pb)
{
    if (!pb->timer_init) {
        uv_timer_init(pb->loop, &pb->timer);
        pb->timer.data = pb;
        pb->timer_init = true;
        pb->handles++;
    }
    return &pb->timer;
}

/* ---- the end of the transport ------------------------------------------------ */

static void destroy(struct peer_base *pb)
{
    pb->tr->impl = NULL;
    pb->hooks->destroy(pb);
}

void peer_base_maybe_finish(struct peer_base *pb)
{
    if (pb->handles > 0 || pb->head != NULL) return;
    if (pb->freed) {
        destroy(pb);
        return;
    }
    if (pb->closing && !pb->close_reported && pb->close_cb != NULL) {
        pb->close_reported = true;
        pb->close_cb(pb->tr); /* raft may release the transport from here on */
    }
}

static void handle_closed(uv_handle_t *h)
{
    struct peer_base *pb = h->data;

    pb->handles--;
    peer_base_maybe_finish(pb);
}

static void close_all(struct peer_base *pb)
{
    struct peer_conn *c, *next;

    pb->closing = true;
    for (unsigned i = 0; i < pb->ls.n; i++) uv_close((uv_handle_t *)&pb->ls.h[i], handle_closed);
    pb->ls.n = 0;
    /* A handle to close, so that the end is always async. */
    uv_close((uv_handle_t *)peer_base_timer(pb), handle_closed);
    for (c = pb->head; c != NULL; c = next) {
        next = c->next;
        pb->hooks->end_conn(c);
    }
}

/* ---- raft's interface and release ---------------------------------------------- */

int peer_base_init_cb(struct raft_uv_transport *tr, raft_id id, const char *address)
{
    struct peer_base *pb = peer_base_of(tr);

    if (strlen(address) > BATON_MAX_ADDR) return RAFT_INVALID;
    pb->id = id;
    snprintf(pb->address, sizeof pb->address, "%s", address);
    return 0;
}

int peer_base_listen(struct peer_base *pb, raft_uv_accept_cb accept_cb, uv_connection_cb cb)
{
    struct raft_uv_transport *tr = pb->tr;
    const char *where = pb->bind[0] != '\0' ? pb->bind : pb->address;
    int rv;

    pb->accept_cb = accept_cb;
    rv = peer_listen(pb->loop, where, &pb->ls, cb, pb, tr->errmsg, sizeof tr->errmsg);
    pb->handles += (int)pb->ls.n;
    if (rv != 0) return rv == UV_EINVAL ? RAFT_INVALID : RAFT_IOERR;
    return 0;
}

void peer_base_close_cb(struct raft_uv_transport *tr, raft_uv_transport_close_cb cb)
{
    struct peer_base *pb = peer_base_of(tr);

    pb->close_cb = cb;
    if (pb->closing)
        peer_base_maybe_finish(pb); /* already closing: the transport's free came first */
    else
        close_all(pb);
}

int peer_base_set_bind_address(struct raft_uv_transport *tr, const char *address)
{
    struct peer_base *pb = peer_base_of(tr);
    struct proto_addr a;

    if (proto_addr_parse(address, strlen(address), &a) != 0) return RAFT_INVALID;
    snprintf(pb->bind, sizeof pb->bind, "%s", address);
    return 0;
}

void peer_base_free(struct raft_uv_transport *tr)
{
    struct peer_base *pb = peer_base_of(tr);

    if (pb == NULL) return;
    if (pb->handles == 0 && pb->head == NULL) {
        destroy(pb);
        return;
    }
    pb->freed = true;
    if (!pb->closing) close_all(pb);
}

/* ---- the cluster check -------------------------------------------------- */

bool peer_base_cluster_ok(struct peer_base *pb, uint64_t peer, const char *addr, uint64_t theirs,
                          char *why, size_t cap)
{
    if (theirs == 0 || theirs == pb->cluster_id) return true;
    if (pb->cluster_id == 0) {
        pb->cluster_id = theirs;
        if (pb->adopted != NULL) pb->adopted(pb->adopted_arg, theirs);
        return true;
    }
    snprintf(why, cap,
             "node %" PRIu64 " (%s) belongs to cluster %016" PRIx64 ", this node to cluster "
             "%016" PRIx64 ": another cluster, or a node started empty or restored apart "
             "(docs/operations.md, \"Cluster identity\")",
             peer, addr != NULL && addr[0] ? addr : "?", theirs, pb->cluster_id);
    return false;
}

bool peer_base_say(struct peer_base *pb, const char *msg)
{
    uint64_t now = uv_now(pb->loop);

    if (pb->log == NULL || (pb->log_at != 0 && now - pb->log_at < PEER_BASE_LOG_MS)) return false;
    pb->log_at = now != 0 ? now : 1;
    pb->log(pb->log_arg, msg);
    return true;
}

/* ---- admission ------------------------------------------------------------- */

/* id's slot, made if need be: a free one, else the one logged longest ago
 * if that was PEER_BASE_REFUSED_LOG_MS ago; else NULL (every slot logged
 * within it: a flood of ids, which then costs no line). */
static struct peer_refused *refused_slot(struct peer_base *pb, uint64_t id, uint64_t now)
{
    struct peer_refused *o = &pb->refused[0];

    for (int i = 0; i < PEER_BASE_REFUSED_SLOTS; i++)
        if (pb->refused[i].id == id) return &pb->refused[i];
    for (int i = 0; i < PEER_BASE_REFUSED_SLOTS && o->id != 0; i++)
        if (pb->refused[i].id == 0 || pb->refused[i].at < o->at) o = &pb->refused[i];
    if (o->id != 0 && now - o->at < PEER_BASE_REFUSED_LOG_MS) return NULL;
    memset(o, 0, sizeof *o);
    o->id = id;
    return o;
}

bool peer_base_admits(struct peer_base *pb, uint64_t peer, const char *addr)
{
    uint64_t now = uv_now(pb->loop);
    struct peer_refused *o;
    char msg[BATON_MAX_ADDR + 400], more[64] = "";

    if (peer_admit_has(&pb->admit, peer)) return true;
    o = refused_slot(pb, peer, now);
    if (o == NULL) return false;
    if (o->at != 0 && now - o->at < PEER_BASE_REFUSED_LOG_MS) {
        o->since++;
        return false;
    }
    if (o->since > 0) snprintf(more, sizeof more, "; %u more refused since the last line", o->since);
    snprintf(msg, sizeof msg,
             "raft connection from node %" PRIu64 " (%s) refused: it is in neither the "
             "committed nor the latest raft configuration (removed, or never added)%s; logged "
             "at most once a minute",
             peer, addr != NULL && addr[0] ? addr : "?", more);
    if (pb->log != NULL) pb->log(pb->log_arg, msg);
    o->at = now != 0 ? now : 1;
    o->since = 0;
    return false;
}

void peer_base_set_admit(struct peer_base *pb, const struct peer_admit *a)
{
    if (peer_admit_same(&pb->admit, a)) return;
    pb->admit = *a;
    if (!pb->closing && pb->hooks->prune != NULL) pb->hooks->prune(pb);
}

void peer_base_say_pruned(struct peer_base *pb, uint64_t peer, const char *addr)
{
    char msg[BATON_MAX_ADDR + 200];

    if (pb->log == NULL) return;
    snprintf(msg, sizeof msg,
             "closing a raft connection with node %" PRIu64 " (%s): it left the raft "
             "configuration",
             peer, addr != NULL && addr[0] ? addr : "?");
    pb->log(pb->log_arg, msg);
}

/* ---- older peers ---------------------------------------------------------- */

static struct peer_old *old_find(struct peer_base *pb, const char *addr)
{
    for (int i = 0; i < PEER_BASE_OLD_SLOTS; i++)
        if (pb->old[i].addr[0] != '\0' && strcmp(pb->old[i].addr, addr) == 0) return &pb->old[i];
    return NULL;
}

static void old_say(struct peer_base *pb, uint64_t peer, const char *addr, bool inbound);

/* addr's slot, made if need be: a free one, else the one used longest ago. */
static struct peer_old *old_slot(struct peer_base *pb, const char *addr)
{
    struct peer_old *o = old_find(pb, addr);

    if (o != NULL) return o;
    o = &pb->old[0];
    for (int i = 0; i < PEER_BASE_OLD_SLOTS && o->addr[0] != '\0'; i++)
        if (pb->old[i].addr[0] == '\0' || pb->old[i].at < o->at) o = &pb->old[i];
    memset(o, 0, sizeof *o);
    snprintf(o->addr, sizeof o->addr, "%s", addr);
    o->at = uv_now(pb->loop);
    return o;
}

void peer_base_old_strike(struct peer_base *pb, uint64_t peer, const char *addr)
{
    struct peer_old *o = old_slot(pb, addr);

    o->at = uv_now(pb->loop);
    if (++o->strikes < PEER_BASE_OLD_STRIKES) return;
    o->strikes = 0;
    if (o->down != 0 && o->at - o->down_at >= PEER_BASE_OLD_MS) o->down = 0; /* expired */
    o->down++;
    o->down_at = o->at;
    old_say(pb, peer, addr, false);
}

void peer_base_old_other(struct peer_base *pb, const char *addr)
{
    struct peer_old *o = old_find(pb, addr);

    if (o != NULL) o->strikes = 0;
}

unsigned peer_base_dial_version(struct peer_base *pb, const char *addr, unsigned newest)
{
    struct peer_old *o = old_find(pb, addr);

    if (o == NULL || o->down == 0 || uv_now(pb->loop) - o->down_at >= PEER_BASE_OLD_MS) return newest;
    return o->down < newest ? newest - o->down : 1;
}

void peer_base_old_forget(struct peer_base *pb, const char *addr)
{
    struct peer_old *o = old_find(pb, addr);

    if (o != NULL) memset(o, 0, sizeof *o);
}

/* Log, once per address and way, that peer at addr runs an older binary. */
static void old_say(struct peer_base *pb, uint64_t peer, const char *addr, bool inbound)
{
    struct peer_old *o = old_slot(pb, addr);
    bool *logged = inbound ? &o->logged_in : &o->logged_out;
    char msg[BATON_MAX_ADDR + 300];

    if (*logged) return;
    if (inbound)
        snprintf(msg, sizeof msg,
                 "the raft peer at %s (node %" PRIu64 ") connected with the handshake of an "
                 "older binary (it runs one, or took this node for one): it counts as feature "
                 "level 1, and its cluster id may not be checked (docs/operations.md, "
                 "\"Cluster identity\")",
                 addr, peer);
    else
        snprintf(msg, sizeof msg,
                 "the raft peer at %s (node %" PRIu64 ") runs an older binary (it closed %d "
                 "handshakes unanswered): it is dialled with an older handshake for %d s, "
                 "which may not carry the cluster id or its feature level (docs/operations.md, "
                 "\"Cluster identity\")",
                 addr, peer, PEER_BASE_OLD_STRIKES, PEER_BASE_OLD_MS / 1000);
    *logged = peer_base_say(pb, msg);
}

void peer_base_old_inbound(struct peer_base *pb, uint64_t peer, const char *addr)
{
    old_say(pb, peer, addr, true);
}

/* ---- feature levels -------------------------------------------------------- */

void peer_base_level_heard(struct peer_base *pb, uint64_t peer, uint32_t level)
{
    struct peer_level *free_slot = NULL;

    for (int i = 0; i < PEER_BASE_LEVEL_SLOTS; i++) {
        struct peer_level *l = &pb->levels[i];

        if (l->id == peer) {
            l->level = level;
            return;
        }
        if (l->id == 0 && free_slot == NULL) free_slot = l;
    }
    if (free_slot == NULL) free_slot = &pb->levels[peer % PEER_BASE_LEVEL_SLOTS];
    free_slot->id = peer;
    free_slot->level = level;
}

uint32_t peer_base_level_of(struct peer_base *pb, uint64_t peer)
{
    for (int i = 0; i < PEER_BASE_LEVEL_SLOTS; i++)
        if (pb->levels[i].id == peer) return pb->levels[i].level;
    return 0;
}

bool peer_base_level_ok(struct peer_base *pb, uint64_t peer, const char *addr, uint32_t level,
                        char *why, size_t cap)
{
    if (level >= pb->cluster_level) return true;
    snprintf(why, cap,
             "node %" PRIu64 " (%s) runs a binary of feature level %" PRIu32 ", below the "
             "cluster's level %" PRIu32 ": it could not apply what the cluster writes; run "
             "this release or a newer one there (docs/operations.md, \"Upgrades and "
             "downgrades\")",
             peer, addr != NULL && addr[0] ? addr : "?", level, pb->cluster_level);
    return false;
}

uint64_t peer_base_levels_word(const struct peer_base *pb)
{
    return (uint64_t)pb->cluster_level << 32 | pb->level;
}

uint32_t peer_levels_max(uint64_t word)
{
    return (uint32_t)word;
}

uint32_t peer_levels_cluster(uint64_t word)
{
    return (uint32_t)(word >> 32);
}

/* ---- the first-start question ---------------------------------------------- */

bool peer_base_known(struct peer_base *pb, uint64_t peer, const char *addr)
{
    bool known = pb->started != NULL && pb->started(pb->started_arg, peer);
    char msg[400];

    if (!known) return false; /* the first start of a new cluster: nothing to say */
    snprintf(msg, sizeof msg,
             "node %" PRIu64 " (%s) starting on an empty data directory asked whether it has "
             "started in this cluster before: yes, so it refuses to bootstrap (it must be "
             "removed and added back)",
             peer, addr);
    peer_base_say(pb, msg);
    return true;
}

void peer_base_heard_answer(struct peer_base *pb, uint64_t peer, const char *addr, bool known)
{
    pb->answers++;
    if (!known || pb->known_by != 0) return;
    pb->known_by = peer;
    snprintf(pb->known_addr, sizeof pb->known_addr, "%s", addr);
}
