/*
 * test_proto_frame.c -- framing (proto_frame_check) and proto_decode's
 * agreement with the length field: bytes fed the way a socket delivers
 * them (whole, byte by byte, several frames at once in chunks of every
 * size, the way batond's read loop consumes them), every frame cut short,
 * and the length limits at both ends.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "proto/msg.h"
#include "tests/lib/msg_samples.h"
#include "tests/lib/runner.h"
#include "tests/unit/proto_fixture.h"

/* Feeding a frame one byte at a time: the framer wants more until the last
 * byte arrives, and never looks past what it was given. */
TEST(frame_byte_by_byte)
{
    for (int t = 1; t < MSG_TYPE_MAX_; t++) {
        if (msg_info(t) == NULL) continue; /* a number reserved, not defined yet */
        for (int v = 0; v < N_VARIANTS; v++) {
            struct msg m, d;
            struct buf b;

            sample(t, v, &m);
            encode_ok(&m, &b);
            for (size_t k = 0; k < b.len; k++) {
                uint8_t *part = dup_exact(b.data, k);
                size_t fl = 12345;
                ASSERT_EQ(proto_frame_check(part, k, &fl), 0);
                ASSERT_UEQ(fl, 12345); /* untouched until a frame is there */
                free(part);
                if (v == V_EXTREME && b.len > 4096 && k > 64) k += 997; /* keep it quick */
            }
            uint8_t *whole = dup_exact(b.data, b.len);
            size_t fl = 0;
            ASSERT_EQ(proto_frame_check(whole, b.len, &fl), 1);
            ASSERT_UEQ(fl, b.len);
            ASSERT_EQ(proto_decode(whole, fl, &d), 0);
            assert_msg_eq(&m, &d);
            msg_free(&d);
            free(whole);
            buf_free(&b);
        }
    }
}

/*
 * Every truncation of every frame: the framer must ask for more, a decoder
 * handed the short bytes must refuse them, and a short frame whose length
 * field has been made to agree must be refused too (a canonical body has
 * exactly one length, so no prefix of it is a valid body).
 */
TEST(truncated_frames)
{
    for (int t = 1; t < MSG_TYPE_MAX_; t++) {
        if (msg_info(t) == NULL) continue; /* a number reserved, not defined yet */
        for (int v = 0; v < N_VARIANTS; v++) {
            struct msg m, d;
            struct buf b;

            sample(t, v, &m);
            encode_ok(&m, &b);
            for (size_t k = 0; k < b.len; k++) {
                uint8_t *p = dup_exact(b.data, k);
                size_t fl = 0;

                ASSERT_EQ(proto_frame_check(p, k, &fl), 0);
                ASSERT_EQ(proto_decode(p, k, &d), BATON_EMALFORMED);
                if (k >= 4) {
                    int rv;
                    fix_len(p, k);
                    rv = proto_frame_check(p, k, &fl);
                    if (k < PROTO_HDR_LEN) {
                        ASSERT_EQ(rv, BATON_EMALFORMED);
                    } else {
                        ASSERT_EQ(rv, 1);
                        assert_malformed(p, k, t, m.req_id);
                    }
                }
                free(p);
                /* The large frames: every byte near the ends, about 512
                 * cuts through the middle (each cut decodes up to the
                 * whole frame: every byte of a 1 MiB list frame would be
                 * a minute of this test). */
                if (b.len > 8192 && k > 300 && k < b.len - 300) k += b.len / 512;
            }
            buf_free(&b);
        }
    }
}

/*
 * A stream holding every sample frame back to back, delivered in chunks of
 * various sizes and processed the way batond's read loop does: frame, decode
 * and consume whole frames, keep the partial tail for the next read.
 */
TEST(frames_concatenated_and_chunked)
{
    static const size_t chunks[] = {1, 2, 3, 7, 13, 64, 1000, 4096, 1u << 20};
    struct buf stream = {0};
    int n_frames = 0;

    for (int t = 1; t < MSG_TYPE_MAX_; t++) {
        if (msg_info(t) == NULL) continue; /* a number reserved, not defined yet */
        for (int v = 0; v < N_VARIANTS; v++) {
            struct msg m;
            if (v == V_EXTREME && (t == MSG_LIST_LOCKS_R || t == MSG_LOCK_INFO_R || t == MSG_WATCH_EVENT)) continue;
            sample(t, v, &m);
            ASSERT_EQ(proto_encode(&stream, &m), 0);
            n_frames++;
        }
    }
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
        struct buf in = {0};
        size_t pos = 0;
        int t = 1, v = 0, seen = 0;

        while (pos < stream.len) {
            size_t n = chunks[c] < stream.len - pos ? chunks[c] : stream.len - pos;
            size_t off = 0, fl;
            int rv;

            ASSERT_EQ(buf_put(&in, stream.data + pos, n), 0);
            pos += n;
            while ((rv = proto_frame_check(in.data + off, in.len - off, &fl)) == 1) {
                struct msg want, got;
                /* Walk the expected sequence, skipping what was left out. */
                while (msg_info(t) == NULL || (v == V_EXTREME && (t == MSG_LIST_LOCKS_R || t == MSG_LOCK_INFO_R || t == MSG_WATCH_EVENT))) {
                    if (msg_info(t) == NULL) v = 0, t++;
                    else if (++v == N_VARIANTS) v = 0, t++;
                }
                ASSERT_EQ(proto_decode(in.data + off, fl, &got), 0);
                sample(t, v, &want);
                assert_msg_eq(&want, &got);
                msg_free(&got);
                off += fl;
                seen++;
                if (++v == N_VARIANTS) v = 0, t++;
            }
            ASSERT_EQ(rv, 0);
            buf_consume(&in, off);
        }
        ASSERT_EQ(seen, n_frames);
        ASSERT_UEQ(in.len, 0);
        buf_free(&in);
    }
    buf_free(&stream);
}

TEST(frame_length_limits)
{
    uint8_t h[PROTO_HDR_LEN] = {0};
    size_t fl = 0;

    /* Fewer than four bytes: nothing can be said yet, whatever they are. */
    memset(h, 0xFF, sizeof h);
    for (size_t k = 0; k < 4; k++) ASSERT_EQ(proto_frame_check(h, k, &fl), 0);
    ASSERT_EQ(proto_frame_check(NULL, 0, &fl), 0);

    /* Too big is known from the length field alone. */
    le_put_u32(h, BATON_MAX_FRAME + 1);
    ASSERT_EQ(proto_frame_check(h, 4, &fl), BATON_ETOOBIG);
    le_put_u32(h, UINT32_MAX);
    ASSERT_EQ(proto_frame_check(h, 4, &fl), BATON_ETOOBIG);
    le_put_u32(h, BATON_MAX_FRAME);
    ASSERT_EQ(proto_frame_check(h, sizeof h, &fl), 0);

    /* Too small to hold type and req_id. */
    for (uint32_t n = 0; n < PROTO_FRAME_MIN; n++) {
        le_put_u32(h, n);
        ASSERT_EQ(proto_frame_check(h, 4, &fl), BATON_EMALFORMED);
        ASSERT_EQ(proto_frame_check(h, sizeof h, &fl), BATON_EMALFORMED);
    }

    /* The smallest legal frame. */
    le_put_u32(h, PROTO_FRAME_MIN);
    ASSERT_EQ(proto_frame_check(h, PROTO_HDR_LEN - 1, &fl), 0);
    ASSERT_EQ(proto_frame_check(h, PROTO_HDR_LEN, &fl), 1);
    ASSERT_UEQ(fl, PROTO_HDR_LEN);
}

/* The largest legal length field: framed, then refused as trailing bytes
 * after an empty body. One more byte is refused by both functions. */
TEST(frame_at_max_size)
{
    size_t n = 4 + (size_t)BATON_MAX_FRAME + 1, fl = 0;
    uint8_t *p = calloc(1, n);
    struct msg m;

    ASSERT(p != NULL);
    le_put_u32(p, BATON_MAX_FRAME);
    le_put_u16(p + 4, MSG_STATUS);
    le_put_u64(p + 6, 77);
    ASSERT_EQ(proto_frame_check(p, n - 2, &fl), 0);
    ASSERT_EQ(proto_frame_check(p, n, &fl), 1);
    ASSERT_UEQ(fl, n - 1);
    ASSERT_EQ(proto_decode(p, fl, &m), BATON_EMALFORMED);
    ASSERT_EQ(m.type, MSG_STATUS);
    ASSERT_UEQ(m.req_id, 77);

    le_put_u32(p, BATON_MAX_FRAME + 1);
    ASSERT_EQ(proto_frame_check(p, n, &fl), BATON_ETOOBIG);
    ASSERT_EQ(proto_decode(p, n, &m), BATON_EMALFORMED);
    free(p);
}

/* proto_decode must agree with the length field, and needs a header. */
TEST(decode_length_mismatch)
{
    struct msg m, d;
    struct buf b;
    uint8_t *p;

    ASSERT_EQ(msg_sample(MSG_KEEPALIVE, &m), 0);
    encode_ok(&m, &b);
    ASSERT_EQ(buf_put_u8(&b, 0), 0); /* one spare byte after the frame */
    p = dup_exact(b.data, b.len);
    ASSERT_EQ(proto_decode(p, b.len, &d), BATON_EMALFORMED);     /* one too many */
    ASSERT_EQ(proto_decode(p, b.len - 2, &d), BATON_EMALFORMED); /* one too few */
    ASSERT_EQ(proto_decode(p, b.len - 1, &d), 0);
    for (size_t k = 0; k < PROTO_HDR_LEN; k++) ASSERT_EQ(proto_decode(p, k, &d), BATON_EMALFORMED);
    ASSERT_EQ(proto_decode(NULL, 0, &d), BATON_EMALFORMED);
    free(p);
    buf_free(&b);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    /* truncated_frames decodes every prefix of every sample frame: about
     * 35 s of CPU in a release build and three times that under ASan. */
    runner_set_timeout(240);
    RUN(frame_byte_by_byte);
    RUN(truncated_frames);
    RUN(frames_concatenated_and_chunked);
    RUN(frame_length_limits);
    RUN(frame_at_max_size);
    RUN(decode_length_mismatch);
    return runner_done();
}
