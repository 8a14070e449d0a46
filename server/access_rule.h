/*
 * access_rule.h -- may a principal send a request? The decision alone,
 * from proto/msg_table.h's role, session and locks columns: no
 * connection, no server, so tests/unit/test_access.c drives it directly.
 * server/access.c asks it for every request and answers a refusal.
 */
#ifndef BATON_SERVER_ACCESS_RULE_H
#define BATON_SERVER_ACCESS_RULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/msg.h"
#include "server/auth.h"

/* Who opened `session`: true and *owner (a principal's key) if the session
 * is known; false if not (then its handler answers for it). */
typedef bool access_owner_fn(void *ctx, uint64_t session, uint64_t *owner);

/*
 * May principal p send request m? true if so; false with why[0..size)
 * saying why not. Fails closed: a type that is not a request is refused
 * whatever the principal.
 */
bool access_decide(const struct principal *p, const struct msg *m, access_owner_fn *owner_of,
                   void *ctx, char *why, size_t size);

/*
 * Is the raft port open to impostors while the clients' port is secured?
 * True when the client port has TLS or authentication (client_secured),
 * the raft port has no mutual TLS (peer_tls false) and raft_addr
 * ("host:port") is not a loopback address: whoever reaches that port can
 * pose as a node and rewrite every lock, whatever the clients' security.
 * batond warns at start (access.c). An address that does not parse is
 * false (start-up refuses it elsewhere).
 */
bool access_raft_exposed(bool client_secured, bool peer_tls, const char *raft_addr);

/* Is addr ("host:port") a loopback address (127.0.0.0/8, ::1 or an
 * IPv4-mapped 127 address, as proto_sockaddr_is_loopback says; or the
 * name localhost)? An address that does not parse counts as loopback:
 * nothing to warn of. */
bool access_addr_loopback(const char *addr);

/* May principal p read the state of lock name[0..n) -- what LOCK_INFO and
 * WATCH show, a metric labelled with the name? An admin may, and so may a
 * principal whose prefixes cover the name; NULL (no principal) may not. */
bool access_may_see(const struct principal *p, const char *name, size_t n);

#endif /* BATON_SERVER_ACCESS_RULE_H */
