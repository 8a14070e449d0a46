/*
 * resolve.c -- the addresses a node listens on (resolve.h), found by the
 * one resolver of proto/resolve.h, with the node's log line for a failure.
 */
#include "server/resolve.h"

#include <stdio.h>
#include <string.h>

#include "proto/addr.h"
#include "proto/resolve.h"
#include "server/log.h"

int resolve_listen_addrs(const char *what, const char *addr, struct sockaddr_storage *sas,
                         unsigned max)
{
    struct proto_addr a;
    const char *why;
    unsigned n;

    if (proto_addr_parse(addr, strlen(addr), &a) != 0) {
        log_error("%s '%s': %s", what, addr, a.why);
        return UV_EINVAL;
    }
    if (max == 0) return UV_EINVAL;
    n = proto_resolve(&a, sas, NULL, max, &why); /* blocks: the node is starting */
    if (n == 0) {
        log_error("%s '%s': cannot resolve %s: %s", what, addr, a.host, why);
        return UV_EAI_NONAME;
    }
    return (int)n;
}
