/*
 * resolve.c -- the addresses a node listens on (resolve.h).
 */
#include "server/resolve.h"

#include <netdb.h>
#include <stdio.h>
#include <string.h>

#include "proto/addr.h"
#include "server/log.h"

int resolve_listen_addrs(uv_loop_t *loop, const char *what, const char *addr,
                         struct sockaddr_storage *sas, unsigned max)
{
    struct proto_addr a;
    uv_getaddrinfo_t req;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV};
    char port[8];
    unsigned n = 0;
    int rv;

    if (proto_addr_parse(addr, strlen(addr), &a) != 0) {
        log_error("%s '%s': %s", what, addr, a.why);
        return UV_EINVAL;
    }
    if (max == 0) return UV_EINVAL;
    if (proto_addr_sockaddr(&a, &sas[0]) != 0) return 1;
    /* No callback: libuv resolves synchronously, on this thread. */
    snprintf(port, sizeof port, "%u", a.port);
    rv = uv_getaddrinfo(loop, &req, NULL, a.host, port, &hints);
    if (rv != 0) {
        log_error("%s '%s': cannot resolve %s: %s", what, addr, a.host, uv_strerror(rv));
        return rv;
    }
    for (struct addrinfo *ai = req.addrinfo; ai != NULL && n < max; ai = ai->ai_next)
        if (ai->ai_family == AF_INET || ai->ai_family == AF_INET6)
            memcpy(&sas[n++], ai->ai_addr, ai->ai_addrlen);
    uv_freeaddrinfo(req.addrinfo);
    if (n == 0) {
        log_error("%s '%s': %s has no IPv4 or IPv6 address", what, addr, a.host);
        return UV_EAI_NONAME;
    }
    return (int)n;
}
