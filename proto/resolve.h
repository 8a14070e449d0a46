/*
 * resolve.h -- the one name resolution of baton: the socket addresses an
 * address of proto/addr.h's grammar stands for. An IP literal is its own
 * address and never reaches a resolver; a host name is looked up with
 * getaddrinfo (any family, stream sockets, a numeric port) and every IPv4
 * and IPv6 address of the answer is kept, in its order, to be tried in
 * turn.
 *
 * proto/ does no I/O on an event loop, and this file does not either:
 * proto_resolve is the blocking lookup (batond and raft/ at start-up, for
 * the addresses they listen on; libbaton when its loop has no resolver),
 * and the code that looks names up on a loop (raft/peer_addr.c's dial with
 * uv_getaddrinfo; the async core's resolver hook, include/baton/
 * baton_async.h) asks with proto_resolve_hints and keeps the answer with
 * proto_resolve_take. The libuv adapter of the public API
 * (include/baton/adapters/libuv.h) is header-only and may include only
 * public headers: it writes the same hints itself and hands its answer to
 * the core, which keeps it with proto_resolve_take.
 */
#ifndef BATON_PROTO_RESOLVE_H
#define BATON_PROTO_RESOLVE_H

#include <stdint.h>
#include <sys/socket.h>

#include "proto/addr.h"

struct addrinfo;

/* The most addresses of one name that are kept. */
#define PROTO_RESOLVE_MAX 8

/* The hints of every lookup: any family, stream sockets, a numeric port. */
void proto_resolve_hints(struct addrinfo *h);

/*
 * Keep the IPv4 and IPv6 addresses of a lookup's answer, in its order: at
 * most max into out[] (with their lengths in lens[], unless lens is NULL).
 * Returns how many.
 */
unsigned proto_resolve_take(const struct addrinfo *res, struct sockaddr_storage *out,
                            socklen_t *lens, unsigned max);

/*
 * The addresses host (a name, or an IP literal without brackets) and port
 * stand for, from a blocking getaddrinfo, into out[0..max) (lens as above):
 * the calling thread waits for the system's resolver. Returns how many (at
 * least 1), or 0 with *why (static storage) saying why there are none.
 */
unsigned proto_resolve_name(const char *host, uint16_t port, struct sockaddr_storage *out,
                            socklen_t *lens, unsigned max, const char **why);

/*
 * The addresses of a parsed address into out[0..max) (lens as above): an
 * IP literal's own, or what a blocking getaddrinfo of the name answers --
 * the calling thread waits for the system's resolver. Returns how many
 * (at least 1), or 0 with *why (static storage) saying why there are none.
 */
unsigned proto_resolve(const struct proto_addr *a, struct sockaddr_storage *out, socklen_t *lens,
                       unsigned max, const char **why);

#endif
