/*
 * resolve.h -- the addresses a node listens on, from one "HOST:PORT" of
 * proto/addr.h: an IP literal as it is, a host name resolved once, now
 * (the node is starting; proto/resolve.h). Used by the client listener (listen.c) and the
 * metrics endpoint (http.c).
 */
#ifndef BATON_SERVER_RESOLVE_H
#define BATON_SERVER_RESOLVE_H

#include <sys/socket.h>
#include <uv.h>

/*
 * Fill sas[0..max) with the addresses addr stands for, in the resolver's
 * order (only AF_INET and AF_INET6). what names the flag or address in the
 * log line of a failure. Returns how many (at least 1), or a negative libuv
 * error after logging why: UV_EINVAL for an address that does not parse,
 * UV_EAI_NONAME for a name that does not resolve.
 */
int resolve_listen_addrs(const char *what, const char *addr, struct sockaddr_storage *sas,
                         unsigned max);

#endif
