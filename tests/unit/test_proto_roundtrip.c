/*
 * test_proto_roundtrip.c -- the wire codec (proto/msg.c): every message
 * type, in the three variants of tests/unit/proto_fixture.h (typical,
 * extreme, minimal), encodes, frames and decodes back to the same fields;
 * decoded strings borrow from the frame; ACQUIRE's lock_delay_ms values;
 * msg_free and type names. The exact bytes are test_proto_layout.c's, and
 * the frozen wire numbers and sample frames tests/unit/test_wire.c's.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "proto/msg.h"
#include "tests/lib/msg_samples.h"
#include "tests/lib/runner.h"
#include "tests/unit/proto_fixture.h"

TEST(roundtrip_every_type)
{
    for (int t = 1; t < MSG_TYPE_MAX_; t++) {
        if (msg_info(t) == NULL) continue; /* a number reserved, not defined yet */
        for (int v = 0; v < N_VARIANTS; v++) {
            struct msg m, d;
            struct buf b;
            size_t fl = 0;

            sample(t, v, &m);
            encode_ok(&m, &b);
            ASSERT_EQ(proto_frame_check(b.data, b.len, &fl), 1);
            ASSERT_UEQ(fl, b.len);
            ASSERT_EQ(proto_decode(b.data, fl, &d), 0);
            assert_msg_eq(&m, &d);
            msg_free(&d);
            msg_free(&d); /* idempotent */
            ASSERT(d.u.status_r.members == NULL || t != MSG_STATUS_R);
            ASSERT(d.u.lock_info_r.waiters == NULL || t != MSG_LOCK_INFO_R);
            ASSERT(d.u.watch_event.info.waiters == NULL || t != MSG_WATCH_EVENT);
            ASSERT(d.u.list_locks_r.items == NULL || t != MSG_LIST_LOCKS_R);
            ASSERT(d.u.members_r.members == NULL || t != MSG_MEMBERS_R);
            buf_free(&b);
        }
    }
}

/* Decoded strings must point into the frame, not at copies. */
TEST(decoded_strings_borrow_from_frame)
{
    struct msg m, d;
    struct buf b;

    ASSERT_EQ(msg_sample(MSG_ACQUIRE, &m), 0);
    encode_ok(&m, &b);
    ASSERT_EQ(proto_decode(b.data, b.len, &d), 0);
    ASSERT((const uint8_t *)d.u.op.lock.p > b.data);
    /* The lock name is followed only by the i32 lock_delay_ms and the
     * mode fields (u8 mode, u32 limit, u8 reentrant). */
    ASSERT((const uint8_t *)d.u.op.lock.p + d.u.op.lock.n == b.data + b.len - 4 - 6);
    msg_free(&d);
    buf_free(&b);
}

/* ACQUIRE's lock_delay_ms: -1 (none), 0 (the server's default) and any
 * positive value decode; anything below -1 is malformed. */
TEST(acquire_lock_delay_values)
{
    static const int32_t good[] = {BATON_LOCK_DELAY_NONE, BATON_LOCK_DELAY_DEFAULT, 1, 30000,
                                   INT32_MAX};
    static const int32_t bad[] = {-2, -1000, INT32_MIN};
    struct msg m, d;
    struct buf b;

    ASSERT_EQ(BATON_LOCK_DELAY_DEFAULT, 0);
    ASSERT_EQ(BATON_LOCK_DELAY_NONE, -1);
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        ASSERT_EQ(msg_sample(MSG_ACQUIRE, &m), 0);
        m.u.op.lock_delay_ms = good[i];
        encode_ok(&m, &b);
        ASSERT_EQ(proto_decode(b.data, b.len, &d), 0);
        ASSERT_EQ(d.u.op.lock_delay_ms, good[i]);
        buf_free(&b);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        /* The encoder refuses it, so write a legal frame and patch the
         * field (before the six bytes of the mode fields). */
        ASSERT_EQ(msg_sample(MSG_ACQUIRE, &m), 0);
        m.u.op.lock_delay_ms = bad[i];
        buf_init(&b);
        ASSERT_EQ(proto_encode(&b, &m), BATON_EINVAL);
        ASSERT_UEQ(b.len, 0);
        buf_free(&b);
        m.u.op.lock_delay_ms = 0;
        encode_ok(&m, &b);
        le_put_u32(b.data + b.len - 4 - 6, (uint32_t)bad[i]);
        assert_malformed(b.data, b.len, MSG_ACQUIRE, m.req_id);
        buf_free(&b);
    }
}

TEST(msg_free_is_safe)
{
    struct msg m;

    msg_free(NULL);
    for (int t = 0; t <= MSG_TYPE_MAX_; t++) {
        memset(&m, 0, sizeof m);
        m.type = (uint16_t)t;
        msg_free(&m);
        msg_free(&m);
    }
}

/* Every type's own name, and "?" for 0 and MSG_TYPE_MAX_, are
 * tests/unit/test_wire.c's (wire_values_never_change); here the numbers no
 * message can have. */
TEST(type_names)
{
    ASSERT_STREQ(msg_type_name(-1), "?");
    ASSERT_STREQ(msg_type_name(INT_MAX), "?");
    ASSERT_STREQ(msg_type_name(INT_MIN), "?");
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(roundtrip_every_type);
    RUN(decoded_strings_borrow_from_frame);
    RUN(acquire_lock_delay_values);
    RUN(msg_free_is_safe);
    RUN(type_names);
    return runner_done();
}
