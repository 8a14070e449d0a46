/*
 * addr.h -- the one parser of baton's "HOST:PORT" addresses. Everything
 * that reads an address uses it, so that one grammar decides the syntax
 * everywhere: batond's --cluster and --raft-bind (server/config.c), its
 * client listener (server/conn.c), the MEMBER_ADD handler (server/members.c,
 * through config_addr_ok), the replicated members table (storage/members.c),
 * `batonctl member add` (client/ctl/cmd_admin.c) and libbaton's endpoints
 * and redirects (client/async_conn.c).
 *
 * It is a pure parser: no sockets, no name resolution, no libuv. What kind
 * of host a caller can then actually connect to or listen on is that
 * caller's decision, made on the parsed kind (see proto_addr_parse_ipv4).
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

/*
 * proto_addr_parse, then refuse every kind but PROTO_ADDR_IPV4 with a->why
 * "host names and IPv6 are not supported yet: use an IPv4 a.b.c.d:port".
 * This is the check for what batond's transports take today: its client
 * listener (server/conn.c) and libraft's TCP transport both read addresses
 * with uv_ip4_addr, so batond's own addresses and every raft address must
 * be IPv4. Returns 0 or BATON_EINVAL.
 */
int proto_addr_parse_ipv4(const char *s, size_t n, struct proto_addr *a);

#endif
