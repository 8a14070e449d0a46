/*
 * test_wire.c -- the wire format is frozen: every message type keeps its
 * number and its exact bytes.
 *
 * The numbers and the frames below were written down from the codec of
 * protocol version 1; protocol version 2 (security: HELLO's token,
 * HELLO_OK's principal and role, STATUS_R's auth digest, a session's
 * owner) changed exactly the frames of HELLO, HELLO_OK, STATUS_R and
 * SESSIONS_R; protocol version 3 (lost locks never silent) appended check_index and
 * content_hash (the content check) and then the node's fault (fault_kind,
 * fault, fault_index) to STATUS_R, gave FORCE_RELEASE its fence and flags
 * and FORCE_RELEASE_R its delay and current fence, added CHECK, CHECK_R,
 * LOST_HOLDS and LOST_HOLDS_R (and, additively, METRICS and METRICS_R), gave OPEN_SESSION its nonce and ACQUIRE,
 * RELEASE, CANCEL and CLOSE_SESSION their keep list, and changed HELLO's
 * and HELLO_OK's frames only by the version number they carry; protocol
 * version 4 (lock modes) gave ACQUIRE its mode, limit and
 * reentrant flag, LOCK_INFO_R and WATCH_EVENT the holders' mode, the
 * limit, every holder and each waiter's mode, LIST_LOCKS_R's items the
 * mode, limit and holder count, and changed HELLO and HELLO_OK by their
 * version number; protocol version 5 (atomic multi-locks) added
 * ACQUIRE_MANY and changed HELLO and HELLO_OK by their version number.
 * They must
 * never change within a protocol version: a client of one release talks to a
 * server of another, and HELLO's version check is what tells two versions
 * apart. If a test here fails, a change
 * renumbered a message or changed a body's layout; fix the change, not
 * this file, unless the change is a new protocol version. A new message
 * type gets a new number (the next free one) and a new line in both
 * tables.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/msg.h"
#include "tests/lib/msg_samples.h"
#include "tests/lib/runner.h"

/* Every message type: its name and its number on the wire. */
static const struct {
    const char *name;
    int value;
} wire_values[] = {
    {"HELLO", 1},
    {"HELLO_OK", 2},
    {"OPEN_SESSION", 3},
    {"SESSION", 4},
    {"ACQUIRE", 5},
    {"RELEASE", 6},
    {"CANCEL", 7},
    {"CLOSE_SESSION", 8},
    {"KEEPALIVE", 9},
    {"RESULT", 10},
    {"GRANTED", 11},
    {"WAIT_FAILED", 12},
    {"STATUS", 13},
    {"STATUS_R", 14},
    {"LOCK_INFO", 15},
    {"LOCK_INFO_R", 16},
    {"LIST_LOCKS", 17},
    {"LIST_LOCKS_R", 18},
    {"REDIRECT", 19},
    {"NO_LEADER", 20},
    {"ERROR", 21},
    {"LOST", 22},
    {"SESSION_EXPIRED", 23},
    {"FORCE_RELEASE", 24},
    {"FORCE_RELEASE_R", 25},
    {"EXPIRE_SESSION", 26},
    {"TRANSFER", 27},
    {"TRANSFER_R", 28},
    {"LIST_SESSIONS", 29},
    {"SESSIONS_R", 30},
    {"WATCH", 31},
    {"WATCH_EVENT", 32},
    {"SNAPSHOT", 33},
    {"SNAPSHOT_R", 34},
    {"MEMBERS", 35},
    {"MEMBERS_R", 36},
    {"MEMBER_REMOVE", 37},
    {"MEMBER_ADD", 38},
    {"CHECK", 39},
    {"CHECK_R", 40},
    {"LOST_HOLDS", 41},
    {"LOST_HOLDS_R", 42},
    {"METRICS", 43},
    {"METRICS_R", 44},
    {"SNAPSHOT_SAVE", 45},
    {"SNAPSHOT_CHUNK", 46},
    {"ACQUIRE_MANY", 47},
};

#define N_TYPES (sizeof wire_values / sizeof wire_values[0])

/* The frame of each type's sample (tests/lib/msg_samples.c), in hex. */
static const struct {
    int type;
    const char *hex;
} golden[] = {
    {MSG_HELLO, "2b0000000100e90300000000000005000000090066757a7a2d73656564100030313233343536373839616263646566"},
    {MSG_HELLO_OK, "1a0000000200ea0300000000000005000000020000000500616c69636502"},
    {MSG_OPEN_SESSION, "1e0000000300eb03000000000000102700000600776f726b6572efcdab8967452301"},
    {MSG_SESSION, "160000000400ec03000000000000070000000000000010270000"},
    {MSG_ACQUIRE, "400000000500ed0300000000000007000000000000000100000000000000010000000000000000000000ffffffffffffffff06006a6f62732f31fa000000010000000001"},
    {MSG_RELEASE, "3e0000000600ee03000000000000070000000000000002000000000000000200000000000000010000000100000000000000290000000000000006006a6f62732f31"},
    {MSG_CANCEL, "3e0000000700ef03000000000000070000000000000003000000000000000300000000000000010000000100000000000000010000000000000006006a6f62732f31"},
    {MSG_CLOSE_SESSION, "260000000800f00300000000000007000000000000000400000000000000040000000000000000000000"},
    {MSG_KEEPALIVE, "120000000900f1030000000000000700000000000000"},
    {MSG_RESULT, "170000000a00f20300000000000056f0ffff020200000000000000"},
    {MSG_GRANTED, "2a0000000b00f303000000000000070000000000000001000000000000002a0000000000000006006a6f62732f31"},
    {MSG_WAIT_FAILED, "260000000c00f403000000000000070000000000000005000000000000005df0ffff06006a6f62732f32"},
    {MSG_STATUS, "0a0000000d00f503000000000000"},
    {MSG_STATUS_R, "d00000000e00f603000000000000010000000301000000030000000000000078000000000000007900000000000000770000000000000003000000010000000e003132372e302e302e313a373130310e003132372e302e302e313a37303031020000000e003132372e302e302e313a373130320e003132372e302e302e313a37303032030000000e003132372e302e302e313a373130330e003132372e302e302e313a37303033efcdab907856341221436587a9cbed0f730000000000000011223344556677880149f0ffff7600000000000000"},
    {MSG_LOCK_INFO, "120000000f00f70300000000000006006a6f62732f31"},
    {MSG_LOCK_INFO_R, "c50000001000f8030000000000000105000000000000000200000000000000280000000000000064000000000000000101000000020000000200000005000000000000000200000000000000280000000000000064000000000000000101000000060000000000000004000000000000002a0000000000000067000000000000000102000000020000000200000007000000000000000300000000000000ffffffffffffffff0009000000000000000100000000000000f401000000000000010006006a6f62732f31"},
    {MSG_LIST_LOCKS, "150000001100f90300000000000005006a6f62732f64000000"},
    {MSG_LIST_LOCKS_R, "590000001200fa030000000000000200000006006a6f62732f31070000000000000029000000000000000200000001010000000300000006006a6f62732f32000000000000000000000000000000000000000000080000000000000001"},
    {MSG_REDIRECT, "1e0000001300fb03000000000000030000000e003132372e302e302e313a37303033"},
    {MSG_NO_LEADER, "0a0000001400fc03000000000000"},
    {MSG_ERROR, "3b0000001500fd030000000000004af0ffff2b0063616e6e6f74206465636f64652041435155495245206672616d653a206d616c666f726d65642064617461"},
    {MSG_LOST, "2e0000001600fe03000000000000070000000000000001000000000000002a0000000000000057f0ffff06006a6f62732f31"},
    {MSG_SESSION_EXPIRED, "120000001700ff030000000000000700000000000000"},
    {MSG_FORCE_RELEASE, "1b000000180000040000000000002a000000000000000106006a6f62732f31"},
    {MSG_FORCE_RELEASE_R, "3a0000001900010400000000000058f0ffff07000000000000002a0000000000000009000000000000002b00000000000000102700002c00000000000000"},
    {MSG_EXPIRE_SESSION, "120000001a0002040000000000000900000000000000"},
    {MSG_TRANSFER, "0e0000001b00030400000000000002000000"},
    {MSG_TRANSFER_R, "0e0000001c00040400000000000003000000"},
    {MSG_LIST_SESSIONS, "160000001d00050400000000000006000000000000000a000000"},
    {MSG_SESSIONS_R, "5a0000001e000604000000000000020000000700000000000000102700000c000000000000000600776f726b657201000000000000000500616c6963650900000000000000b80b00000f0000000000000000000000000002000000000001"},
    {MSG_WATCH, "120000001f00070400000000000006006a6f62732f31"},
    {MSG_WATCH_EVENT, "cd0000002000080400000000000002000000000000000105000000000000000200000000000000280000000000000064000000000000000101000000020000000200000005000000000000000200000000000000280000000000000064000000000000000101000000060000000000000004000000000000002a0000000000000067000000000000000102000000020000000200000007000000000000000300000000000000ffffffffffffffff0009000000000000000100000000000000f401000000000000010106006a6f62732f31"},
    {MSG_SNAPSHOT, "0a00000021000904000000000000"},
    {MSG_SNAPSHOT_R, "1200000022000a040000000000000120000000000000"},
    {MSG_MEMBERS, "0a00000023000b04000000000000"},
    {MSG_MEMBERS_R, "4a00000024000c040000000000000200000001000000020e003132372e302e302e313a373130310e003132372e302e302e313a3730303104000000000e003132372e302e302e313a373130340000"},
    {MSG_MEMBER_REMOVE, "0e00000025000d0400000000000004000000"},
    {MSG_MEMBER_ADD, "2e00000026000e04000000000000040000000e003132372e302e302e313a373130340e003132372e302e302e313a37303034"},
    {MSG_CHECK, "0a00000027000f04000000000000"},
    {MSG_CHECK_R, "12000000280010040000000000000220000000000000"},
    {MSG_LOST_HOLDS, "1a0000002900110400000000000007000000000000002800000000000000"},
    {MSG_LOST_HOLDS_R, "470000002a00120400000000000002000000030000000000000029000000000000004ff0ffff06006a6f62732f3105000000000000002c000000000000004ff0ffff06006a6f62732f3201"},
    {MSG_METRICS, "0a0000002b001304000000000000"},
    {MSG_METRICS_R, "490000002c001404000000000000020000002200232054595045206261746f6e5f6772616e74735f746f74616c20636f756e7465720a15006261746f6e5f6772616e74735f746f74616c20330a"},
    {MSG_SNAPSHOT_SAVE, "0a0000002d001504000000000000"},
    {MSG_SNAPSHOT_CHUNK, "200000002e00160400000000000000c000000000000004c0000000000000040042544e31"},
    {MSG_ACQUIRE_MANY, "500000002f00170400000000000007000000000000000900000000000000090000000000000000000000dc0500000000000006006a6f62732f31000000000000000000000200000006006a6f62732f3202006462"},
};

/* Decode a hex string into a malloc'd buffer; *n gets its length. */
static uint8_t *unhex(const char *hex, size_t *n)
{
    size_t len = strlen(hex) / 2;
    uint8_t *p = malloc(len ? len : 1);

    ASSERT(p != NULL);
    for (size_t i = 0; i < len; i++) {
        unsigned v;
        ASSERT(sscanf(hex + 2 * i, "%2x", &v) == 1);
        p[i] = (uint8_t)v;
    }
    *n = len;
    return p;
}

/* How many message types the table defines (its numbers may skip one
 * reserved for a message not merged yet). */
static size_t defined_types(void)
{
    size_t n = 0;

    for (int t = 1; t < MSG_TYPE_MAX_; t++) n += msg_info(t) != NULL;
    return n;
}

TEST(wire_values_never_change)
{
    ASSERT_EQ(N_TYPES, defined_types());
    for (size_t i = 0; i < N_TYPES; i++) {
        if (strcmp(msg_type_name(wire_values[i].value), wire_values[i].name) != 0)
            FAIL("wire value %d is %s, must be %s", wire_values[i].value,
                 msg_type_name(wire_values[i].value), wire_values[i].name);
    }
    ASSERT_STREQ(msg_type_name(0), "?");
    ASSERT_STREQ(msg_type_name(MSG_TYPE_MAX_), "?");
}

TEST(every_type_has_a_golden_frame)
{
    ASSERT_EQ(sizeof golden / sizeof golden[0], N_TYPES);
    for (size_t i = 0; i < N_TYPES; i++) ASSERT_EQ(golden[i].type, wire_values[i].value);
}

/* Each sample encodes to exactly its frozen bytes. */
TEST(samples_encode_to_frozen_bytes)
{
    for (size_t i = 0; i < N_TYPES; i++) {
        struct msg m;
        struct buf b = {0};
        size_t n;
        uint8_t *want = unhex(golden[i].hex, &n);

        ASSERT_EQ(msg_sample(golden[i].type, &m), 0);
        ASSERT_EQ(proto_encode(&b, &m), 0);
        if (b.len != n || memcmp(b.data, want, n) != 0) {
            printf("# %s encodes to ", msg_type_name(golden[i].type));
            for (size_t j = 0; j < b.len; j++) printf("%02x", b.data[j]);
            printf("\n");
            FAIL("%s encodes to other bytes than its frozen frame", msg_type_name(golden[i].type));
        }
        buf_free(&b);
        free(want);
    }
}

/* Each frozen frame decodes to its type and re-encodes to the same bytes. */
TEST(frozen_bytes_decode_and_reencode)
{
    for (size_t i = 0; i < N_TYPES; i++) {
        struct msg m;
        struct buf b = {0};
        size_t n;
        uint8_t *frame = unhex(golden[i].hex, &n);

        if (proto_decode(frame, n, &m) != 0) FAIL("%s: frozen frame does not decode",
                                                  msg_type_name(golden[i].type));
        ASSERT_EQ(m.type, golden[i].type);
        ASSERT_UEQ(m.req_id, 1000 + (uint64_t)golden[i].type);
        ASSERT_EQ(proto_encode(&b, &m), 0);
        ASSERT(b.len == n && memcmp(b.data, frame, n) == 0);
        msg_free(&m);
        buf_free(&b);
        free(frame);
    }
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(wire_values_never_change);
    RUN(every_type_has_a_golden_frame);
    RUN(samples_encode_to_frozen_bytes);
    RUN(frozen_bytes_decode_and_reencode);
    return runner_done();
}
