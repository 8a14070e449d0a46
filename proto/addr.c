/*
 * addr.c -- the parser of "HOST:PORT" addresses; proto/addr.h has the
 * grammar. inet_pton and inet_ntop are the only library calls: they convert
 * between text and bytes and do no I/O, which keeps proto/ free of sockets
 * and name lookups.
 */
#include "proto/addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "baton/baton_defs.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* Longest DNS name and label, in bytes (RFC 1123). */
#define NAME_MAX_LEN 253
#define LABEL_MAX_LEN 63

/* Fail the parse: record why and leave nothing half-filled behind. */
static int refuse(struct proto_addr *a, const char *why)
{
    a->kind = 0;
    a->port = 0;
    a->host[0] = '\0';
    memset(a->ip, 0, sizeof a->ip);
    a->why = why;
    return BATON_EINVAL;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int is_let_dig(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* The port: 1 to 5 decimal digits and nothing else, worth 1..65535. A sign,
 * a blank or any other byte is refused, unlike strtoul would. Returns NULL
 * or why it is not a port. */
static const char *parse_port(const char *p, size_t n, uint16_t *port)
{
    unsigned long v = 0;

    if (n == 0) return "missing port after ':'";
    for (size_t i = 0; i < n; i++)
        if (!is_digit(p[i])) return "port is not a decimal number";
    if (n > 5) return "port out of range";
    for (size_t i = 0; i < n; i++) v = v * 10 + (unsigned long)(p[i] - '0');
    if (v == 0 || v > 65535) return "port out of range";
    *port = (uint16_t)v;
    return NULL;
}

/* A DNS host name: dot-separated labels of letters, digits and inner
 * hyphens, the last one not all digits. Returns NULL or why it is not. */
static const char *check_name(const char *h, size_t n)
{
    size_t start = 0;
    int all_digits = 0;

    if (n > NAME_MAX_LEN) return "host name longer than " STR(NAME_MAX_LEN) " bytes";
    while (start <= n) {
        const char *dot = memchr(h + start, '.', n - start);
        size_t end = dot ? (size_t)(dot - h) : n, len = end - start;

        if (len == 0) return "empty label in host name";
        if (len > LABEL_MAX_LEN) return "host name label longer than " STR(LABEL_MAX_LEN) " bytes";
        all_digits = 1;
        for (size_t i = start; i < end; i++) {
            if (!is_let_dig(h[i]) && h[i] != '-') return "bad character in host name";
            if (!is_digit(h[i])) all_digits = 0;
        }
        if (h[start] == '-' || h[end - 1] == '-')
            return "host name label starts or ends with '-'";
        start = end + 1;
    }
    if (all_digits) return "host name's last label is all digits";
    return NULL;
}

int proto_addr_parse(const char *s, size_t n, struct proto_addr *a)
{
    const char *host, *colon = NULL, *why;
    size_t hn;

    memset(a->ip, 0, sizeof a->ip);
    if (n == 0) return refuse(a, "empty address");
    if (n > BATON_MAX_ADDR) return refuse(a, "address longer than " STR(BATON_MAX_ADDR) " bytes");
    if (memchr(s, '\0', n) != NULL) return refuse(a, "NUL byte in address");

    /* Split HOST from PORT: after the closing bracket of an IPv6 literal,
     * else at the last colon, which must then be the only one. */
    if (s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (close == NULL) return refuse(a, "'[' without ']'");
        host = s + 1;
        hn = (size_t)(close - host);
        colon = close + 1;
        if (colon == s + n || *colon != ':') return refuse(a, "missing ':PORT' after ']'");
    } else {
        for (size_t i = n; i > 0; i--)
            if (s[i - 1] == ':') {
                colon = s + i - 1;
                break;
            }
        if (colon == NULL) return refuse(a, "missing ':PORT'");
        host = s;
        hn = (size_t)(colon - s);
        if (memchr(host, ':', hn) != NULL)
            return refuse(a, "more than one ':' (an IPv6 address goes in brackets: [ADDR]:PORT)");
    }
    if (hn == 0) return refuse(a, "empty host");
    why = parse_port(colon + 1, (size_t)(s + n - colon - 1), &a->port);
    if (why != NULL) return refuse(a, why);
    memcpy(a->host, host, hn);
    a->host[hn] = '\0';

    if (s[0] == '[') {
        if (inet_pton(AF_INET6, a->host, a->ip) != 1) return refuse(a, "bad IPv6 address");
        a->kind = PROTO_ADDR_IPV6;
    } else if (strspn(a->host, "0123456789.") == hn) {
        /* Only digits and dots: an IPv4 address or a mistake, never a name.
         * inet_pton takes exactly four decimal octets 0..255 without
         * leading zeros, as uv_ip4_addr does. */
        if (inet_pton(AF_INET, a->host, a->ip) != 1) return refuse(a, "bad IPv4 address");
        a->kind = PROTO_ADDR_IPV4;
    } else {
        why = check_name(a->host, hn);
        if (why != NULL) return refuse(a, why);
        a->kind = PROTO_ADDR_NAME;
    }
    a->why = NULL;
    return 0;
}

unsigned proto_addr_sockaddr(const struct proto_addr *a, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof *ss);
    if (a->kind == PROTO_ADDR_IPV4) {
        struct sockaddr_in *in = (struct sockaddr_in *)ss;
        in->sin_family = AF_INET;
        in->sin_port = htons(a->port);
        memcpy(&in->sin_addr, a->ip, 4);
        return sizeof *in;
    }
    if (a->kind == PROTO_ADDR_IPV6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(a->port);
        memcpy(&in6->sin6_addr, a->ip, 16);
        return sizeof *in6;
    }
    return 0;
}

char *proto_addr_format(const struct sockaddr *sa, char *buf, size_t cap)
{
    char ip[INET6_ADDRSTRLEN] = "?";

    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
        snprintf(buf, cap, "%s:%u", ip, (unsigned)ntohs(in->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
        snprintf(buf, cap, "[%s]:%u", ip, (unsigned)ntohs(in6->sin6_port));
    } else {
        snprintf(buf, cap, "?");
    }
    return buf;
}

bool proto_sockaddr_is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return false;
}
