/*
 * test_peer_hello.c -- the HELLO that opens a raft connection under mutual
 * TLS (raft/peer_hello.h): its exact bytes (version 3, and versions 2
 * and 1 of older binaries), parsing whole, in pieces and
 * with trailing bytes, every malformed form, and the certificate name of a
 * node id.
 */
#include <stdint.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "raft/peer_hello.h"
#include "tests/lib/runner.h"

TEST(hello_bytes)
{
    static const uint8_t want[] = {3,    0,    0,    0,    7,    0,    0,    0,    0,    0,
                                   0,    0,    0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
                                   2,    0,    0,    0,    1,    0,    0,    0,    1,    11,   0,
                                   '1',  '.',  '2',  '.',  '3',  '.',  '4',  ':',  '5',  '6',
                                   '7'};
    struct buf b = {0};
    struct peer_hello h;

    ASSERT_EQ(peer_hello_encode(&b, PEER_HELLO_VERSION, 7, 0x1122334455667788ull,
                                (uint64_t)1 << 32 | 2, PEER_ASK_STARTED, "1.2.3.4:567"),
              0);
    ASSERT_EQ(b.len, sizeof want);
    ASSERT(memcmp(b.data, want, sizeof want) == 0);
    ASSERT_EQ(peer_hello_parse(b.data, b.len, &h), (int)b.len);
    ASSERT_UEQ(h.cluster, 0x1122334455667788ull);
    ASSERT_UEQ(h.levels, (uint64_t)1 << 32 | 2);
    ASSERT_EQ(h.flags, PEER_ASK_STARTED);
    buf_free(&b);
    /* Flags are one byte. */
    ASSERT_EQ(peer_hello_encode(&b, PEER_HELLO_VERSION, 7, 1, 2, 256, "1.2.3.4:567"), BATON_EINVAL);
    buf_free(&b);
}

/* Version 2, the binary's before feature levels: no levels field. */
TEST(hello_version_2)
{
    static const uint8_t want[] = {2,    0,    0,    0,    7,    0,    0,    0,    0,    0,    0,
                                   0,    0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 11,   0,
                                   '1',  '.',  '2',  '.',  '3',  '.',  '4',  ':',  '5',  '6',  '7'};
    struct buf b = {0};
    struct peer_hello h;

    ASSERT_EQ(peer_hello_encode(&b, PEER_HELLO_VERSION_2, 7, 0x1122334455667788ull, 5, 0,
                                "1.2.3.4:567"),
              0);
    ASSERT_EQ(b.len, sizeof want);
    ASSERT(memcmp(b.data, want, sizeof want) == 0);
    ASSERT_EQ(peer_hello_parse(b.data, b.len, &h), (int)b.len);
    ASSERT_EQ(h.version, PEER_HELLO_VERSION_2);
    ASSERT_UEQ(h.cluster, 0x1122334455667788ull);
    ASSERT_UEQ(h.levels, 0);
    buf_free(&b);
}

/* Version 1, the binary's before the cluster id: no cluster field; taken
 * whole and in pieces, with what follows left alone. */
TEST(hello_version_1)
{
    static const uint8_t want[] = {1, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 3, 0, 'a', ':', '1'};
    struct buf b = {0};
    struct peer_hello h;

    ASSERT_EQ(peer_hello_encode(&b, PEER_HELLO_VERSION_1, 7, 0x99, 0, 0, "a:1"), 0);
    ASSERT_EQ(b.len, sizeof want);
    ASSERT(memcmp(b.data, want, sizeof want) == 0);
    ASSERT_EQ(buf_put(&b, "raft", 4), 0);
    for (size_t n = 0; n < sizeof want; n++) ASSERT_EQ(peer_hello_parse(b.data, n, &h), 0);
    ASSERT_EQ(peer_hello_parse(b.data, b.len, &h), (int)sizeof want);
    ASSERT_EQ(h.version, PEER_HELLO_VERSION_1);
    ASSERT_UEQ(h.id, 7);
    ASSERT_UEQ(h.cluster, 0);
    ASSERT_STREQ(h.address, "a:1");
    buf_free(&b);
    ASSERT_EQ(peer_hello_encode(&b, 4, 7, 0, 0, 0, "a:1"), BATON_EINVAL);
    buf_free(&b);
}

TEST(hello_round_trip_in_pieces)
{
    struct buf b = {0};
    struct peer_hello h;

    ASSERT_EQ(peer_hello_encode(&b, PEER_HELLO_VERSION, 4000000000u, 0, 2, 0, "127.0.0.1:7101"), 0);
    ASSERT_EQ(buf_put(&b, "raft", 4), 0); /* what follows is not the HELLO's */
    for (size_t n = 0; n < b.len - 4; n++) ASSERT_EQ(peer_hello_parse(b.data, n, &h), 0);
    ASSERT_EQ(peer_hello_parse(b.data, b.len, &h), (int)(b.len - 4));
    ASSERT_UEQ(h.id, 4000000000u);
    ASSERT_STREQ(h.address, "127.0.0.1:7101");
    buf_free(&b);
}

TEST(hello_malformed)
{
    struct buf b = {0};
    struct peer_hello h;
    char longest[BATON_MAX_ADDR + 2];

    /* Another version. */
    ASSERT_EQ(peer_hello_encode(&b, PEER_HELLO_VERSION, 1, 9, 2, 0, "a:1"), 0);
    b.data[0] = 4;
    ASSERT_EQ(peer_hello_parse(b.data, b.len, &h), BATON_EMALFORMED);
    /* A flag this binary does not know. */
    buf_reset(&b);
    ASSERT_EQ(peer_hello_encode(&b, PEER_HELLO_VERSION, 1, 9, 2, 2, "a:1"), 0);
    ASSERT_EQ(peer_hello_parse(b.data, b.len, &h), BATON_EMALFORMED);
    /* Node id 0. */
    buf_reset(&b);
    ASSERT_EQ(peer_hello_encode(&b, PEER_HELLO_VERSION, 0, 9, 2, 0, "a:1"), 0);
    ASSERT_EQ(peer_hello_parse(b.data, b.len, &h), BATON_EMALFORMED);
    /* A length of 0, or beyond BATON_MAX_ADDR: refused from the header. */
    buf_reset(&b);
    ASSERT_EQ(peer_hello_encode(&b, PEER_HELLO_VERSION, 1, 9, 2, 0, "a:1"), 0);
    b.data[PEER_HELLO_HEADER - 2] = 0;
    ASSERT_EQ(peer_hello_parse(b.data, PEER_HELLO_HEADER, &h), BATON_EMALFORMED);
    b.data[PEER_HELLO_HEADER - 2] = BATON_MAX_ADDR + 1;
    ASSERT_EQ(peer_hello_parse(b.data, PEER_HELLO_HEADER, &h), BATON_EMALFORMED);
    /* A NUL inside the address. */
    b.data[PEER_HELLO_HEADER - 2] = 3;
    b.data[PEER_HELLO_HEADER + 1] = '\0';
    ASSERT_EQ(peer_hello_parse(b.data, b.len, &h), BATON_EMALFORMED);
    buf_free(&b);
    /* The encoder refuses what the parser would. */
    memset(longest, 'x', sizeof longest - 1);
    longest[sizeof longest - 1] = '\0';
    ASSERT_EQ(peer_hello_encode(&b, PEER_HELLO_VERSION, 1, 9, 2, 0, longest), BATON_EINVAL);
    ASSERT_EQ(peer_hello_encode(&b, PEER_HELLO_VERSION, 1, 9, 2, 0, ""), BATON_EINVAL);
    longest[BATON_MAX_ADDR] = '\0';
    ASSERT_EQ(peer_hello_encode(&b, PEER_HELLO_VERSION, 1, 9, 2, 0, longest), 0);
    ASSERT_EQ(peer_hello_parse(b.data, b.len, &h), (int)PEER_HELLO_MAX);
    buf_free(&b);
}

TEST(cn_of_node)
{
    char cn[PEER_CN_MAX];

    ASSERT_STREQ(peer_cn_of(1, cn), "baton-node-1");
    ASSERT_STREQ(peer_cn_of(18446744073709551615u, cn), "baton-node-18446744073709551615");
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(hello_bytes);
    RUN(hello_version_2);
    RUN(hello_version_1);
    RUN(hello_round_trip_in_pieces);
    RUN(hello_malformed);
    RUN(cn_of_node);
    return runner_done();
}
