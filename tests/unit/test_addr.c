/*
 * test_addr.c -- the "HOST:PORT" parser (proto/addr.h) that batond,
 * libbaton, batonctl and the members table share: the three kinds of host,
 * the port's range and form, the limits, and why each bad input is refused;
 * and the one resolver (proto/resolve.h) that turns them into socket
 * addresses.
 */
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/addr.h"
#include "proto/resolve.h"
#include "tests/lib/runner.h"

/* Parse the C string s; on success check the kind, host and port. */
static void good(const char *s, enum proto_addr_kind kind, const char *host, unsigned port)
{
    struct proto_addr a;

    if (proto_addr_parse(s, strlen(s), &a) != 0) FAIL("'%s' refused: %s", s, a.why);
    ASSERT(a.why == NULL);
    ASSERT_EQ(a.kind, kind);
    ASSERT_STREQ(a.host, host);
    ASSERT_EQ(a.port, port);
}

/* Parse the n bytes at s; expect a refusal whose reason contains `why`. */
static void bad_n(const char *s, size_t n, const char *why)
{
    struct proto_addr a;

    if (proto_addr_parse(s, n, &a) != BATON_EINVAL) FAIL("'%.*s' accepted", (int)n, s);
    ASSERT(a.why != NULL);
    if (strstr(a.why, why) == NULL) FAIL("'%.*s': reason '%s', want '%s'", (int)n, s, a.why, why);
    ASSERT_STREQ(a.host, "");
    ASSERT_EQ(a.port, 0);
}

static void bad(const char *s, const char *why)
{
    bad_n(s, strlen(s), why);
}

TEST(ipv4)
{
    good("127.0.0.1:7001", PROTO_ADDR_IPV4, "127.0.0.1", 7001);
    good("0.0.0.0:1", PROTO_ADDR_IPV4, "0.0.0.0", 1);
    good("255.255.255.255:65535", PROTO_ADDR_IPV4, "255.255.255.255", 65535);
    good("10.0.0.4:080", PROTO_ADDR_IPV4, "10.0.0.4", 80); /* the port may have leading zeros */
    bad("256.0.0.1:1", "bad IPv4 address");
    bad("1.2.3:1", "bad IPv4 address");
    bad("1.2.3.4.5:1", "bad IPv4 address");
    bad("01.2.3.4:1", "bad IPv4 address");  /* leading zero: uv_ip4_addr refuses it too */
    bad("1..3.4:1", "bad IPv4 address");
    bad("1.2.3.4.:1", "bad IPv4 address");
    bad("1234:1", "bad IPv4 address");
}

/* The host's bytes come along, in network order. */
TEST(ip_bytes)
{
    static const uint8_t v4[16] = {10, 1, 2, 254};
    static const uint8_t v6[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 7};
    static const uint8_t none[16] = {0};
    struct proto_addr a;

    ASSERT_EQ(proto_addr_parse("10.1.2.254:9", 12, &a), 0);
    ASSERT(memcmp(a.ip, v4, 16) == 0);
    ASSERT_EQ(proto_addr_parse("[2001:db8::7]:9", 15, &a), 0);
    ASSERT(memcmp(a.ip, v6, 16) == 0);
    ASSERT_EQ(proto_addr_parse("localhost:9", 11, &a), 0);
    ASSERT(memcmp(a.ip, none, 16) == 0);
    ASSERT_EQ(proto_addr_parse("10.1.2.254:0", 12, &a), BATON_EINVAL);
    ASSERT(memcmp(a.ip, none, 16) == 0);
}

TEST(ipv6)
{
    good("[::1]:7003", PROTO_ADDR_IPV6, "::1", 7003);
    good("[2001:db8::7]:1", PROTO_ADDR_IPV6, "2001:db8::7", 1);
    good("[::ffff:10.0.0.1]:9", PROTO_ADDR_IPV6, "::ffff:10.0.0.1", 9);
    bad("::1:7000", "more than one ':'");
    bad("2001:db8::7:80", "more than one ':'");
    bad("[::1]", "missing ':PORT' after ']'");
    bad("[::1]x:1", "missing ':PORT' after ']'");
    bad("[::1:1", "without ']'");
    bad("[]:1", "empty host");
    bad("[::g]:1", "bad IPv6 address");
    bad("[1.2.3.4]:1", "bad IPv6 address");
    bad("[fe80::1%eth0]:1", "bad IPv6 address");
    bad("[::1]:1]", "not a decimal number");
}

TEST(names)
{
    good("localhost:7002", PROTO_ADDR_NAME, "localhost", 7002);
    good("node-1.example.com:443", PROTO_ADDR_NAME, "node-1.example.com", 443);
    good("3com.net:1", PROTO_ADDR_NAME, "3com.net", 1); /* labels may start with a digit */
    good("A.B-c.D:2", PROTO_ADDR_NAME, "A.B-c.D", 2);
    bad("-a.com:1", "starts or ends with '-'");
    bad("a-.com:1", "starts or ends with '-'");
    bad("a..com:1", "empty label");
    bad(".a.com:1", "empty label");
    bad("a.com.:1", "empty label");
    bad("a_b.com:1", "bad character");
    bad("a b:1", "bad character");
    bad("caf\xc3\xa9:1", "bad character");
    bad("a\tb:1", "bad character");
    bad("a.1:1", "last label is all digits");
}

TEST(port)
{
    bad("1.2.3.4:0", "port out of range");
    bad("1.2.3.4:00000", "port out of range");
    bad("1.2.3.4:65536", "port out of range");
    bad("1.2.3.4:99999", "port out of range");
    bad("1.2.3.4:000080", "port out of range"); /* at most 5 digits */
    bad("1.2.3.4:+80", "not a decimal number");
    bad("1.2.3.4:-80", "not a decimal number");
    bad("1.2.3.4: 80", "not a decimal number");
    bad("1.2.3.4:80 ", "not a decimal number");
    bad("1.2.3.4:80x", "not a decimal number");
    bad("1.2.3.4:0x50", "not a decimal number");
    bad("1.2.3.4:", "missing port");
    bad("1.2.3.4", "missing ':PORT'");
    bad("localhost", "missing ':PORT'");
}

TEST(empty_and_junk)
{
    bad("", "empty address");
    bad_n(NULL, 0, "empty address");
    bad(":1", "empty host");
    bad(":", "empty host");
    bad(" 1.2.3.4:1", "bad character");
    bad("1.2.3.4 :1", "bad character");
    bad("1.2.3.4:5/6.7.8.9:1", "more than one ':'");
    bad("1.2.3.4:5/", "not a decimal number");
    bad_n("1.2\0.4:5", 8, "NUL byte");
    bad_n("1.2.3.4:5\0", 10, "NUL byte");
}

/* The whole address is at most BATON_MAX_ADDR (64) bytes, whatever it is. */
TEST(max_addr_limit)
{
    char s[BATON_MAX_ADDR + 2];
    struct proto_addr a;

    ASSERT_EQ(BATON_MAX_ADDR, 64);
    /* 62 + ":1" = 64 bytes: one 62-byte label. */
    memset(s, 'a', 62);
    strcpy(s + 62, ":1");
    ASSERT_EQ(strlen(s), 64);
    ASSERT_EQ(proto_addr_parse(s, 64, &a), 0);
    ASSERT_EQ(a.kind, PROTO_ADDR_NAME);
    ASSERT_EQ(strlen(a.host), 62);
    /* 65 bytes, otherwise fine: refused. */
    memset(s, 'a', 63);
    strcpy(s + 63, ":1");
    ASSERT_EQ(strlen(s), 65);
    bad(s, "longer than 64 bytes");
    /* A long name of short labels. */
    strcpy(s, "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.aa.bb.cc:1");
    good(s, PROTO_ADDR_NAME, "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.aa.bb.cc", 1);
    /* The parser reads exactly n bytes: what follows does not count. */
    ASSERT_EQ(proto_addr_parse("127.0.0.1:7001,junk", 14, &a), 0);
    ASSERT_STREQ(a.host, "127.0.0.1");
    ASSERT_EQ(a.port, 7001);
}

/* An IP literal's socket address (no resolver), and back to text for logs. */
TEST(sockaddr_and_format)
{
    struct sockaddr_storage ss;
    struct proto_addr a;
    char text[BATON_MAX_ADDR + 1];

    ASSERT_EQ(proto_addr_parse("10.1.2.3:7001", 13, &a), 0);
    ASSERT_EQ(proto_addr_sockaddr(&a, &ss), sizeof(struct sockaddr_in));
    ASSERT_STREQ(proto_addr_format((struct sockaddr *)&ss, text, sizeof text), "10.1.2.3:7001");
    ASSERT_EQ(proto_addr_parse("[2001:db8::7]:9", 15, &a), 0);
    ASSERT_EQ(proto_addr_sockaddr(&a, &ss), sizeof(struct sockaddr_in6));
    ASSERT_STREQ(proto_addr_format((struct sockaddr *)&ss, text, sizeof text), "[2001:db8::7]:9");
    ASSERT_EQ(proto_addr_parse("localhost:9", 11, &a), 0);
    ASSERT_EQ(proto_addr_sockaddr(&a, &ss), 0); /* a name is resolved elsewhere */
    ss.ss_family = AF_UNIX;
    ASSERT_STREQ(proto_addr_format((struct sockaddr *)&ss, text, sizeof text), "?");
}

/* Is the address one whose traffic never leaves the machine? */
static bool loopback(const char *text)
{
    struct sockaddr_storage ss;
    struct proto_addr a;

    if (proto_addr_parse(text, strlen(text), &a) != 0 || proto_addr_sockaddr(&a, &ss) == 0)
        FAIL("not an IP literal: %s", text);
    return proto_sockaddr_is_loopback((struct sockaddr *)&ss);
}

/* Loopback: 127.0.0.0/8, ::1 and IPv4-mapped 127/8; nothing else. */
TEST(sockaddr_is_loopback)
{
    struct sockaddr_storage ss = {.ss_family = AF_UNIX};

    ASSERT(loopback("127.0.0.1:1"));
    ASSERT(loopback("127.255.0.9:1"));
    ASSERT(loopback("[::1]:1"));
    ASSERT(loopback("[::ffff:127.0.0.2]:1"));
    ASSERT(!loopback("128.0.0.1:1"));
    ASSERT(!loopback("10.0.0.1:1"));
    ASSERT(!loopback("0.0.0.0:1"));
    ASSERT(!loopback("[::]:1"));
    ASSERT(!loopback("[::ffff:10.0.0.1]:1"));
    ASSERT(!loopback("[2001:db8::1]:1"));
    ASSERT(!proto_sockaddr_is_loopback((struct sockaddr *)&ss));
}

/* An IP literal never reaches the resolver; a name's addresses carry the
 * port. localhost comes from the hosts file, not from DNS. */
TEST(resolve)
{
    struct sockaddr_storage ss[PROTO_RESOLVE_MAX];
    socklen_t lens[PROTO_RESOLVE_MAX];
    struct proto_addr a;
    const char *why = "unset";
    unsigned n;

    ASSERT_EQ(proto_addr_parse("[::1]:7001", 10, &a), 0);
    ASSERT_EQ(proto_resolve(&a, ss, lens, PROTO_RESOLVE_MAX, &why), 1);
    ASSERT(why == NULL);
    ASSERT_EQ(ss[0].ss_family, AF_INET6);
    ASSERT_EQ(lens[0], sizeof(struct sockaddr_in6));
    ASSERT_EQ(proto_resolve(&a, ss, lens, 0, &why), 0);
    ASSERT(why != NULL);
    ASSERT_EQ(proto_addr_parse("localhost:7002", 14, &a), 0);
    n = proto_resolve(&a, ss, lens, PROTO_RESOLVE_MAX, &why);
    ASSERT_GE(n, 1);
    for (unsigned i = 0; i < n; i++) {
        ASSERT(ss[i].ss_family == AF_INET || ss[i].ss_family == AF_INET6);
        ASSERT_EQ(ntohs(ss[i].ss_family == AF_INET ? ((struct sockaddr_in *)&ss[i])->sin_port
                                                   : ((struct sockaddr_in6 *)&ss[i])->sin6_port),
                  7002);
    }
}

/* What is kept of a lookup's answer: IPv4 and IPv6 only, in order, at most
 * max. */
TEST(resolve_take)
{
    struct sockaddr_in v4 = {.sin_family = AF_INET, .sin_port = htons(1)};
    struct sockaddr_in6 v6 = {.sin6_family = AF_INET6, .sin6_port = htons(2)};
    struct sockaddr unix_sa = {.sa_family = AF_UNIX};
    struct addrinfo a3 = {.ai_family = AF_INET, .ai_addr = (struct sockaddr *)&v4,
                          .ai_addrlen = sizeof v4};
    struct addrinfo a2 = {.ai_family = AF_UNIX, .ai_addr = &unix_sa,
                          .ai_addrlen = sizeof unix_sa, .ai_next = &a3};
    struct addrinfo a1 = {.ai_family = AF_INET6, .ai_addr = (struct sockaddr *)&v6,
                          .ai_addrlen = sizeof v6, .ai_next = &a2};
    struct sockaddr_storage ss[PROTO_RESOLVE_MAX];
    socklen_t lens[PROTO_RESOLVE_MAX];
    struct addrinfo h;

    ASSERT_EQ(proto_resolve_take(&a1, ss, lens, PROTO_RESOLVE_MAX), 2);
    ASSERT_EQ(ss[0].ss_family, AF_INET6);
    ASSERT_EQ(lens[0], sizeof v6);
    ASSERT_EQ(ss[1].ss_family, AF_INET);
    ASSERT_EQ(lens[1], sizeof v4);
    ASSERT_EQ(proto_resolve_take(&a1, ss, NULL, 1), 1);
    ASSERT_EQ(proto_resolve_take(NULL, ss, NULL, 1), 0);
    proto_resolve_hints(&h);
    ASSERT_EQ(h.ai_family, AF_UNSPEC);
    ASSERT_EQ(h.ai_socktype, SOCK_STREAM);
    ASSERT_EQ(h.ai_flags, AI_NUMERICSERV);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(ipv4);
    RUN(ip_bytes);
    RUN(ipv6);
    RUN(names);
    RUN(port);
    RUN(empty_and_junk);
    RUN(max_addr_limit);
    RUN(sockaddr_and_format);
    RUN(sockaddr_is_loopback);
    RUN(resolve);
    RUN(resolve_take);
    return runner_done();
}
