/*
 * resolve.c -- the one name resolution of baton (resolve.h).
 */
#include "proto/resolve.h"

#include <netdb.h>
#include <stdio.h>
#include <string.h>

void proto_resolve_hints(struct addrinfo *h)
{
    memset(h, 0, sizeof *h);
    h->ai_family = AF_UNSPEC;
    h->ai_socktype = SOCK_STREAM;
    h->ai_flags = AI_NUMERICSERV;
}

unsigned proto_resolve_take(const struct addrinfo *res, struct sockaddr_storage *out,
                            socklen_t *lens, unsigned max)
{
    unsigned n = 0;

    for (; res != NULL && n < max; res = res->ai_next)
        if ((res->ai_family == AF_INET || res->ai_family == AF_INET6) &&
            res->ai_addrlen <= sizeof *out) {
            memset(&out[n], 0, sizeof out[n]);
            memcpy(&out[n], res->ai_addr, res->ai_addrlen);
            if (lens != NULL) lens[n] = res->ai_addrlen;
            n++;
        }
    return n;
}

unsigned proto_resolve_name(const char *host, uint16_t port, struct sockaddr_storage *out,
                            socklen_t *lens, unsigned max, const char **why)
{
    struct addrinfo hints, *res = NULL;
    char text[8];
    unsigned n;
    int rv;

    *why = NULL;
    proto_resolve_hints(&hints);
    snprintf(text, sizeof text, "%u", port);
    rv = getaddrinfo(host, text, &hints, &res);
    if (rv != 0) {
        *why = gai_strerror(rv);
        return 0;
    }
    n = proto_resolve_take(res, out, lens, max);
    freeaddrinfo(res);
    if (n == 0) *why = "no IPv4 or IPv6 address";
    return n;
}

unsigned proto_resolve(const struct proto_addr *a, struct sockaddr_storage *out, socklen_t *lens,
                       unsigned max, const char **why)
{
    unsigned len;

    *why = NULL;
    if (max == 0) {
        *why = "no room for an address";
        return 0;
    }
    len = proto_addr_sockaddr(a, &out[0]);
    if (len > 0) {
        if (lens != NULL) lens[0] = (socklen_t)len;
        return 1;
    }
    return proto_resolve_name(a->host, a->port, out, lens, max, why);
}
