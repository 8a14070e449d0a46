/*
 * liveness.c -- the leader decides which sessions are alive.
 *
 * Every request that names a session renews its lease on the leader's
 * monotonic clock (libuv's uv_now). Keepalives renew it here and are never
 * log entries themselves; their replies wait for a leadership confirmation
 * round (keepalive.c), one barrier entry for all the keepalives of a round. A tick proposes EXPIRE_SESSION for every lease that
 * ran out; the store then releases the session's locks (each to its next
 * waiter) and drops its waits.
 *
 * Expiries are spread: at most LIVENESS_EXPIRE_INFLIGHT are proposed and
 * not yet applied at once, so that sessions whose leases run out together
 * -- 20,000 opened at one moment with one ttl -- end over a few entries
 * of that many each rather than in one entry whose apply (each session's
 * locks handed on) would hold the loop on every node; the others wait for
 * the following ticks.
 *
 * Who may open a session: a principal has at most its cap open or opening
 * (liveness_open_reserve), and the last SESSION_ADMIN_RESERVE of the
 * store's STORE_MAX_SESSIONS are kept for admin principals.
 *
 * A new leader first commits its barrier (raft/node.c), then gives every
 * session in the store a full fresh lease -- it cannot know how long each
 * was silent before -- and only then starts expiring. A node that stops
 * leading forgets all leases at once.
 */
#include <stdio.h>

#include "baton/baton_defs.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/server_int.h"

#define LIVENESS_TICK_MS 50
#define LIVENESS_EXPIRE_INFLIGHT 256

/* An expiry was applied, or will not be (its lease is proposed again
 * after LEASE_RETRY_MS). Counts that a leadership change reset are not
 * taken below zero. */
static void expiry_done(struct server *srv, const struct pending *p, const struct cmd_outcome *o)
{
    (void)p;
    (void)o;
    if (srv->expiries_inflight > 0) srv->expiries_inflight--;
}

static void propose_expiry(struct server *srv, uint64_t session)
{
    struct cmd cmd = {.type = CMD_EXPIRE_SESSION, .session = session};
    struct pending p;

    pending_init(&p, expiry_done, 0, 0, &cmd);
    log_info("session %llu: lease expired", (unsigned long long)session);
    metrics_inc(M_LEASE_EXPIRIES);
    srv->expiries_inflight++;
    batch_add(srv, &cmd, &p);
}

static void tick(uv_timer_t *t)
{
    struct server *srv = t->data;
    uint64_t expired[LIVENESS_EXPIRE_INFLIGHT];
    size_t n;

    if (!srv->ready || srv->expiries_inflight >= LIVENESS_EXPIRE_INFLIGHT) return;
    n = lease_collect_expired(&srv->leases, uv_now(srv->loop), expired,
                              LIVENESS_EXPIRE_INFLIGHT - srv->expiries_inflight);
    for (size_t i = 0; i < n; i++) propose_expiry(srv, expired[i]);
}

/* ---- sessions per owner (max-sessions=, server/auth.h) ---- */

static uintptr_t owner_count(struct server *srv, uint64_t owner)
{
    return (uintptr_t)u64map_get(&srv->owner_sessions, owner);
}

static void owner_add(struct server *srv, uint64_t owner, int delta)
{
    uintptr_t n = owner_count(srv, owner);

    if (owner == 0) return; /* the anonymous principal has no cap to keep */
    if (delta < 0 && n == 0) return; /* counts were cleared by a leadership change */
    n = delta < 0 ? n - 1 : n + 1;
    if (n == 0)
        u64map_del(&srv->owner_sessions, owner);
    else
        xu64map_put(&srv->owner_sessions, owner, (void *)n);
}

/* The sessions who may have open at once, 0 for no cap. */
static uint32_t owner_cap(const struct server *srv, const struct principal *who)
{
    if (who->key == 0) return 0; /* the anonymous admin: every client without --auth-file */
    return who->max_sessions ? who->max_sessions : srv->cfg.max_sessions_per_principal;
}

int liveness_open_reserve(struct server *srv, const struct principal *who, char *why, size_t cap)
{
    uint32_t max = owner_cap(srv, who);
    size_t open = lease_count(&srv->leases) + srv->n_opening;

    if (max != 0 && owner_count(srv, who->key) >= max) {
        snprintf(why, cap, "principal '%s' has its %u sessions open (%s)", who->name, max,
                 who->max_sessions ? "max-sessions= in the auth file"
                                   : "batond's --max-sessions-per-principal");
        return BATON_ELIMIT;
    }
    if (who->role != MSG_ROLE_ADMIN && open >= STORE_MAX_SESSIONS - SESSION_ADMIN_RESERVE) {
        snprintf(why, cap, "%zu sessions are open: the last %u of the %u a cluster holds are "
                 "kept for admins", open, SESSION_ADMIN_RESERVE, STORE_MAX_SESSIONS);
        return BATON_ELIMIT;
    }
    owner_add(srv, who->key, +1);
    srv->n_opening++;
    return 0;
}

/* An OPEN_SESSION reserved above is no longer in flight. */
static void opening_done(struct server *srv)
{
    if (srv->n_opening > 0) srv->n_opening--;
}

void liveness_open_release(struct server *srv, uint64_t owner)
{
    owner_add(srv, owner, -1);
    opening_done(srv);
}

bool liveness_owner(struct server *srv, uint64_t session, uint64_t *owner)
{
    return srv->ready && lease_owner(&srv->leases, session, owner);
}

static void owners_clear(struct server *srv)
{
    u64map_free(&srv->owner_sessions);
    u64map_init(&srv->owner_sessions);
    srv->n_opening = 0;
    srv->expiries_inflight = 0;
}

void liveness_init(struct server *srv)
{
    lease_init(&srv->leases);
    u64map_init(&srv->owner_sessions);
    uv_timer_init(srv->loop, &srv->lease_timer);
    srv->lease_timer.data = srv;
}

/* A new leader's lease for a session of the store, with its owner's key,
 * which access.c compares with the principal of every request naming the
 * session. */
static int grant_fresh(void *data, uint64_t session, uint32_t ttl_ms, const char *owner,
                       size_t owner_len)
{
    struct server *srv = data;
    uint64_t key = auth_key(owner, owner_len);

    lease_grant(&srv->leases, session, ttl_ms, uv_now(srv->loop));
    lease_set_owner(&srv->leases, session, key);
    owner_add(srv, key, +1);
    return 0;
}

void liveness_start(struct server *srv)
{
    int rv;

    lease_free(&srv->leases);
    owners_clear(srv);
    uv_update_time(srv->loop);
    rv = store_foreach_session(srv->store, grant_fresh, srv);
    if (rv != 0)
        log_error("cannot load sessions: %s; the sessions not loaded never expire while this "
                  "node leads", baton_strerror(rv));
    log_info("%zu sessions get a fresh lease", lease_count(&srv->leases));
    uv_timer_start(&srv->lease_timer, tick, LIVENESS_TICK_MS, LIVENESS_TICK_MS);
}

void liveness_stop(struct server *srv)
{
    uv_timer_stop(&srv->lease_timer);
    lease_free(&srv->leases);
    owners_clear(srv);
}

/*
 * The lease runs from the moment the request is handled, read from the
 * clock now: the loop's cached time (uv_now) was read when this loop turn
 * began, and after a long turn it can be earlier than the moment the
 * client SENT the message it is handling. The client counts its lease from
 * its send time, so a stamp earlier than that would let this leader expire
 * the session while the client still believes it holds its locks.
 */
bool liveness_touch(struct server *srv, uint64_t session)
{
    if (!srv->ready) return false;
    uv_update_time(srv->loop);
    return lease_renew(&srv->leases, session, uv_now(srv->loop));
}

/* The session was counted for its owner when its OPEN_SESSION was
 * reserved (liveness_open_reserve). A session that has a lease is one
 * this leader already knows (it loads every session of the store when it
 * starts to lead, and adds each one it opens): then the OPEN_SESSION was
 * a re-sent one, which opened nothing, and the session keeps its own ttl. */
uint32_t liveness_opened(struct server *srv, uint64_t session, uint32_t ttl_ms, uint64_t owner)
{
    uint32_t ttl;

    if (!srv->ready) return ttl_ms;
    ttl = lease_ttl(&srv->leases, session);
    if (ttl != 0) {
        liveness_open_release(srv, owner);
        liveness_touch(srv, session);
        return ttl;
    }
    opening_done(srv);
    lease_grant(&srv->leases, session, ttl_ms, uv_now(srv->loop));
    lease_set_owner(&srv->leases, session, owner);
    return ttl_ms;
}

uint32_t liveness_resumed(struct server *srv, uint64_t session)
{
    if (!liveness_touch(srv, session)) return 0;
    return lease_ttl(&srv->leases, session);
}

void liveness_gone(struct server *srv, uint64_t session)
{
    uint64_t owner;

    if (lease_owner(&srv->leases, session, &owner)) owner_add(srv, owner, -1);
    lease_remove(&srv->leases, session);
}

void liveness_close(struct server *srv)
{
    uv_timer_stop(&srv->lease_timer);
    uv_close((uv_handle_t *)&srv->lease_timer, NULL);
    lease_free(&srv->leases);
    u64map_free(&srv->owner_sessions);
}
