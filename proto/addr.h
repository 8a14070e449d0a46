/*
 * addr.h -- the one parser of baton's "HOST:PORT" addresses. Everything
 * that reads an address uses it, so that one grammar decides the syntax
 * everywhere: batond's --cluster and --raft-bind (server/config.c), its
 * client listener (server/conn.c), the MEMBER_ADD handler (server/members.c,
 * through config_addr_ok), the replicated members table (storage/members.c),
 * `batonctl member add` (client/ctl/cmd_admin.c) and libbaton's endpoints
 * and redirects (client/async_conn.c).
 *
 * It is a pure parser: no sockets, no name resolution, no libuv. Every
 * transport takes all three kinds of host: an IP literal becomes a socket
 * address here (proto_addr_sockaddr) without any resolver; a name is
 * resolved at each connection attempt (proto/resolve.h: blocking, or
 * on a loop by raft/peer_addr.h's dial and libbaton's resolver hook,
 * include/baton/baton_async.h), and every address it resolves to is tried
 * in order.
 *
 * Grammar (ABNF):
 *
 *   address    = host ":" port          ; 1..BATON_MAX_ADDR (64) bytes in all
 *   host       = ipv4 / "[" ipv6 "]" / name
 *   ipv4       = dec-octet 3("." dec-octet)
 *   dec-octet  = DIGIT / %x31-39 DIGIT / "1" 2DIGIT / "2" %x30-34 DIGIT
 *              / "25" %x30-35           ; 0..255, no leading zero
 *   ipv6       = <the text form inet_pton(AF_INET6) accepts, e.g. ::1 or
 *                 2001:db8::7; no zone id>
 *   name       = label *("." label)     ; at most 253 bytes
 *   label      = let-dig [*61(let-dig / "-") let-dig]   ; 1..63 bytes (RFC 1123)
 *   let-dig    = ALPHA / DIGIT
 *   port       = 1*5DIGIT               ; 1..65535, no sign, no blanks
 *
 * A host made only of digits and dots is an ipv4 or nothing: "1.2.3" and
 * "01.2.3.4" are refused, not taken as names, and so is a name whose last
 * label is all digits (no top-level domain is, so such a host can only be
 * a mistyped IPv4 address).
 * An IPv6 address must be bracketed, since its colons could not be told
 * apart from the port's. Nothing else is allowed: no blanks, no trailing
 * dot, no bytes outside printable ASCII. While BATON_MAX_ADDR is 64, the
 * name's own limits (63-byte labels, 253 bytes) cannot be reached; they are
 * checked all the same, so that they hold if the limit grows.
 */
#ifndef BATON_PROTO_ADDR_H
#define BATON_PROTO_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/msg.h"

enum proto_addr_kind {
    PROTO_ADDR_IPV4 = 1, /* host is a dotted quad */
    PROTO_ADDR_IPV6,     /* host is the text between the brackets */
    PROTO_ADDR_NAME,     /* host is a DNS name, not resolved */
};

struct proto_addr {
    enum proto_addr_kind kind;
    uint16_t port;                 /* 1..65535 */
    char host[BATON_MAX_ADDR + 1]; /* NUL-terminated, brackets stripped */
    uint8_t ip[16];                /* the host's bytes in network order: the
                                      first 4 for IPv4, all 16 for IPv6;
                                      zero for a name */
    const char *why;               /* NULL, or why the address was refused
                                      (static storage) */
};

/*
 * Parse the n bytes at s (not NUL-terminated; n may be 0) as an address of
 * the grammar above into *a. Returns 0 with a->why NULL, or BATON_EINVAL
 * with a->why saying what is wrong, e.g. "port out of range".
 */
int proto_addr_parse(const char *s, size_t n, struct proto_addr *a);

struct sockaddr;
struct sockaddr_storage;

/*
 * The socket address of a parsed IP literal (PROTO_ADDR_IPV4 or _IPV6) into
 * *ss. Returns its length, or 0 for a name (which needs resolving).
 */
unsigned proto_addr_sockaddr(const struct proto_addr *a, struct sockaddr_storage *ss);

/*
 * Write sa (AF_INET or AF_INET6) as "a.b.c.d:port" or "[v6]:port" into buf
 * (cap bytes; BATON_MAX_ADDR + 1 is enough), for logs. "?" for another
 * family. Returns buf.
 */
char *proto_addr_format(const struct sockaddr *sa, char *buf, size_t cap);

/*
 * Is sa a loopback address -- 127.0.0.0/8, ::1, or an IPv4-mapped
 * ::ffff:127.x.y.z -- whose traffic never leaves the machine? false for
 * every other address and family (0.0.0.0 and :: included).
 */
bool proto_sockaddr_is_loopback(const struct sockaddr *sa);

#endif
