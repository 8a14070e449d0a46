/*
 * test_proto_malformed.c -- bytes no honest peer would send: bit flips,
 * seeded random garbage and random edits of valid frames, a stream that
 * turns to garbage, unknown types and trailing bytes (frames cut short are
 * test_proto_frame.c's). Whatever arrives, the framer and the decoder must
 * answer with an error or a message, never crash (run it under ASan), and
 * any frame the decoder accepts must re-encode to exactly the same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "proto/msg.h"
#include "tests/lib/msg_samples.h"
#include "tests/lib/rng.h"
#include "tests/lib/runner.h"
#include "tests/unit/proto_fixture.h"

/*
 * Hand bytes to the framer and the decoder as batond would, and check the
 * answers are within the documented sets. A frame that decodes must
 * re-encode to the same bytes. Also decodes all of data directly, since the
 * decoder must be safe even when handed something the framer never passed.
 * Returns 1 if a frame decoded.
 */
static int feed(const uint8_t *data, size_t len)
{
    struct msg m;
    size_t fl = 0;
    int rv, decoded = 0;
    uint8_t *copy = dup_exact(data, len);

    rv = proto_frame_check(copy, len, &fl);
    ASSERT(rv == 0 || rv == 1 || rv == BATON_ETOOBIG || rv == BATON_EMALFORMED);
    if (rv == 1) {
        uint8_t *frame = dup_exact(data, fl);
        ASSERT(fl >= PROTO_HDR_LEN && fl <= len);
        rv = proto_decode(frame, fl, &m);
        ASSERT(rv == 0 || rv == BATON_EMALFORMED);
        if (rv == 0) {
            struct buf b = {0};
            ASSERT_EQ(proto_encode(&b, &m), 0);
            ASSERT_UEQ(b.len, fl);
            ASSERT(memcmp(b.data, frame, fl) == 0);
            buf_free(&b);
            msg_free(&m);
            decoded = 1;
        }
        free(frame);
    }
    rv = proto_decode(copy, len, &m);
    ASSERT(rv == 0 || rv == BATON_EMALFORMED);
    if (rv == 0) msg_free(&m);
    free(copy);
    return decoded;
}

/* Seeded pseudo-random numbers (tests/lib/rng.h), so failures reproduce. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rng(void)
{
    return xorshift64star(&rng_state);
}

static size_t rng_below(size_t n)
{
    return (size_t)(rng() % n);
}

/* A random defined message type (the table may skip a reserved number). */
static int any_type(void)
{
    int t;

    do t = 1 + (int)rng_below(MSG_TYPE_MAX_ - 1);
    while (msg_info(t) == NULL);
    return t;
}

/* Flip every bit, and set every byte to 0x00 and 0xFF, in every small
 * frame. Each result must be refused or decode to something that
 * re-encodes identically. */
TEST(corrupted_frames)
{
    int accepted = 0, tried = 0;

    for (int t = 1; t < MSG_TYPE_MAX_; t++) {
        if (msg_info(t) == NULL) continue; /* a number reserved, not defined yet */
        for (int v = 0; v < N_VARIANTS; v++) {
            struct msg m;
            struct buf b;

            sample(t, v, &m);
            encode_ok(&m, &b);
            for (size_t i = 0; i < b.len; i++) {
                uint8_t orig = b.data[i];
                for (int bit = 0; bit < 8; bit++) {
                    b.data[i] = (uint8_t)(orig ^ (1u << bit));
                    accepted += feed(b.data, b.len);
                    tried++;
                }
                b.data[i] = 0x00;
                accepted += feed(b.data, b.len);
                b.data[i] = 0xFF;
                accepted += feed(b.data, b.len);
                b.data[i] = orig;
                tried += 2;
                /* The huge list frames: the ends, and a few points between. */
                if (b.len > 8192 && i >= 32 && i < b.len - 32) {
                    size_t next = i + b.len / 8;
                    i = (next < b.len - 32 ? next : b.len - 32) - 1;
                }
            }
            buf_free(&b);
        }
    }
    /* Flipping a bit of an integer field is still a valid message, so a
     * good share must decode; flipping the length or a string's length
     * must not. Both happen. */
    ASSERT_GT(accepted, 0);
    ASSERT_LT(accepted, tried);
}

/* Random bytes, and random frames with a correct length field and a known
 * type so that the body parsers get exercised. */
TEST(random_garbage)
{
    uint8_t p[600];
    int accepted = 0;

    rng_state = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 60000; i++) {
        size_t n = rng_below(sizeof p + 1);
        for (size_t k = 0; k < n; k++) p[k] = (uint8_t)rng();
        if (i % 2 == 0 && n >= PROTO_HDR_LEN) {
            fix_len(p, n);
            le_put_u16(p + 4, (uint16_t)(1 + rng_below(MSG_TYPE_MAX_)));
            /* Small counts and string lengths make the parsers go deeper. */
            for (size_t k = PROTO_HDR_LEN; k + 1 < n; k++)
                if (rng_below(6) == 0) p[k + 1] = 0, p[k] = (uint8_t)rng_below(12);
        }
        accepted += feed(p, n);
    }
    ASSERT_GT(accepted, 0);
}

/* Valid frames with a few random bytes changed, inserted or removed, with
 * the length field usually kept consistent. */
TEST(random_mutations)
{
    struct buf frames[MSG_TYPE_MAX_][2];
    uint8_t p[2048];

    rng_state = 0x0123456789ABCDEFull;
    for (int t = 1; t < MSG_TYPE_MAX_; t++) {
        if (msg_info(t) == NULL) continue; /* a number reserved, not defined yet */
        struct msg m;
        sample(t, V_TYPICAL, &m);
        encode_ok(&m, &frames[t][0]);
        sample(t, V_MINIMAL, &m);
        encode_ok(&m, &frames[t][1]);
    }
    for (int i = 0; i < 60000; i++) {
        const struct buf *f = &frames[any_type()][rng_below(2)];
        size_t n = f->len;
        int edits = 1 + (int)rng_below(4);

        memcpy(p, f->data, n);
        for (int e = 0; e < edits; e++) {
            size_t at = rng_below(n);
            switch (rng_below(4)) {
            case 0: /* overwrite */
                p[at] = (uint8_t)rng();
                break;
            case 1: /* small integer, to hit counts and lengths */
                p[at] = (uint8_t)rng_below(4);
                break;
            case 2: /* insert */
                if (n < sizeof p) {
                    memmove(p + at + 1, p + at, n - at);
                    p[at] = (uint8_t)rng();
                    n++;
                }
                break;
            default: /* remove */
                if (n > 1) {
                    memmove(p + at, p + at + 1, n - at - 1);
                    n--;
                }
                break;
            }
        }
        if (rng_below(8) != 0 && n >= 4) fix_len(p, n);
        feed(p, n);
    }
    for (int t = 1; t < MSG_TYPE_MAX_; t++) {
        buf_free(&frames[t][0]);
        buf_free(&frames[t][1]);
    }
}

/* A random byte stream framed and decoded the way batond reads: it stops at
 * the first bad frame, as the connection would be closed. */
TEST(random_stream)
{
    struct buf s = {0};

    rng_state = 42;
    for (int round = 0; round < 200; round++) {
        buf_reset(&s);
        /* Some real frames, then garbage. */
        for (int j = 0; j < 5; j++) {
            struct msg m;
            ASSERT_EQ(msg_sample(any_type(), &m), 0);
            ASSERT_EQ(proto_encode(&s, &m), 0);
        }
        for (int j = 0; j < 64; j++) ASSERT_EQ(buf_put_u8(&s, (uint8_t)rng()), 0);
        uint8_t *p = dup_exact(s.data, s.len);
        size_t off = 0, fl;
        int rv, good = 0;
        while ((rv = proto_frame_check(p + off, s.len - off, &fl)) == 1) {
            struct msg d;
            rv = proto_decode(p + off, fl, &d);
            if (rv != 0) break;
            msg_free(&d);
            off += fl;
            good++;
        }
        ASSERT_GE(good, 5);
        ASSERT(rv == 0 || rv == BATON_EMALFORMED || rv == BATON_ETOOBIG);
        free(p);
    }
    buf_free(&s);
}

TEST(unknown_type)
{
    static const uint16_t bad[] = {0, MSG_TYPE_MAX_, MSG_TYPE_MAX_ + 1, 0x7FFF, 0xFFFF};
    struct buf b = {0};

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t p[PROTO_HDR_LEN + 4] = {0};
        struct msg m = {0};

        /* Decoding: refused, with type and req_id still reported. */
        le_put_u16(p + 4, bad[i]);
        le_put_u64(p + 6, 0xDEADBEEF);
        fix_len(p, PROTO_HDR_LEN);
        ASSERT_EQ(proto_decode(p, PROTO_HDR_LEN, &m), BATON_EMALFORMED);
        ASSERT_EQ(m.type, bad[i]);
        ASSERT_UEQ(m.req_id, 0xDEADBEEF);
        msg_free(&m); /* harmless */
        fix_len(p, sizeof p);
        ASSERT_EQ(proto_decode(p, sizeof p, &m), BATON_EMALFORMED);

        /* Encoding: refused, nothing written. */
        memset(&m, 0, sizeof m);
        m.type = bad[i];
        ASSERT_EQ(proto_encode(&b, &m), BATON_EINVAL);
        ASSERT_UEQ(b.len, 0);
    }
    buf_free(&b);
}

/* One byte (or eight) more than the body needs is an error for every type. */
TEST(trailing_bytes)
{
    for (int t = 1; t < MSG_TYPE_MAX_; t++) {
        if (msg_info(t) == NULL) continue; /* a number reserved, not defined yet */
        for (int v = 0; v < N_VARIANTS; v++) {
            for (size_t extra = 1; extra <= 8; extra += 7) {
                struct msg m;
                struct buf b;

                sample(t, v, &m);
                encode_ok(&m, &b);
                for (size_t k = 0; k < extra; k++) ASSERT_EQ(buf_put_u8(&b, 0), 0);
                fix_len(b.data, b.len);
                assert_malformed(b.data, b.len, t, m.req_id);
                buf_free(&b);
            }
        }
    }
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(corrupted_frames);
    RUN(random_garbage);
    RUN(random_mutations);
    RUN(random_stream);
    RUN(unknown_type);
    RUN(trailing_bytes);
    return runner_done();
}
