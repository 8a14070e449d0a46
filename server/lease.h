/*
 * lease.h -- the leader's session leases: for every session, the monotonic
 * time (ms) by which it must be heard from again. Pure bookkeeping: the
 * caller passes the time in, so the table can be driven by libuv's clock in
 * batond and by simulated time in tests. Only the ready leader keeps one;
 * followers decide nothing about liveness (docs/design.md, "Leases and
 * liveness").
 */
#ifndef BATON_SERVER_LEASE_H
#define BATON_SERVER_LEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/u64map.h"

/* How long an expiry proposal may stay unanswered before it is proposed
 * again (it can be lost to a failed proposal). */
#define LEASE_RETRY_MS 1000

struct lease {
    uint64_t session;
    uint64_t deadline;  /* ms, on the caller's monotonic clock */
    uint64_t retry_at;  /* when expiring: when to propose again */
    uint32_t ttl_ms;
    bool expiring;      /* an EXPIRE_SESSION has been proposed */
    uint64_t owner;     /* its principal's key (server/auth.h), 0: anonymous */
};

struct lease_table {
    struct u64map map;  /* session -> struct lease */
};

void lease_init(struct lease_table *t);
void lease_free(struct lease_table *t);   /* forgets everything */

/* Start or restart a full lease for session: deadline = now + ttl_ms.
 * Aborts when out of memory (server_int.h, "Allocation failure"). */
void lease_grant(struct lease_table *t, uint64_t session, uint32_t ttl_ms, uint64_t now);

/* The session was heard from: push its deadline to now + ttl. Returns true
 * if the session has a lease (a live session), false if unknown or already
 * being expired -- a request from an expiring session does not save it. */
bool lease_renew(struct lease_table *t, uint64_t session, uint64_t now);

/* Is the session known and not being expired? */
bool lease_alive(const struct lease_table *t, uint64_t session);

/* The ttl of the session's lease; 0 if it has none. */
uint32_t lease_ttl(const struct lease_table *t, uint64_t session);

void lease_remove(struct lease_table *t, uint64_t session);
/* Set / get the owner of a session's lease; lease_owner is false if the
 * session has no lease. */
void lease_set_owner(struct lease_table *t, uint64_t session, uint64_t owner);
bool lease_owner(const struct lease_table *t, uint64_t session, uint64_t *owner);

/* Sessions whose deadline has passed and whose expiry should be proposed
 * now: written to out (at most max), marked expiring. Returns the count. */
size_t lease_collect_expired(struct lease_table *t, uint64_t now, uint64_t *out, size_t max);

/* The earliest deadline or retry time, or UINT64_MAX if none. */
uint64_t lease_next_deadline(const struct lease_table *t);

size_t lease_count(const struct lease_table *t);

/* The sessions of one owner with an id above `after`, in id order, into a
 * new array *out (the caller frees it; NULL when none). Returns the count.
 * Walks the table once, in memory: what LIST_SESSIONS of a lock-role
 * principal costs, rather than a walk of every session in the store. */
size_t lease_sessions_of(const struct lease_table *t, uint64_t owner, uint64_t after,
                         uint64_t **out);

#endif
