/*
 * fuzz_frame.c -- libFuzzer target for the wire codec (proto/msg.c).
 *
 * The input is treated as the bytes a peer sent on one connection. It is
 * cut into frames exactly as batond's reader does (proto_frame_check on
 * whatever is left), and every whole frame goes through proto_decode. The
 * target checks, beyond "no crash, no leak, no undefined behaviour":
 *
 *  - proto_frame_check never reports a frame longer than the bytes given,
 *    nor one outside PROTO_FRAME_MIN .. BATON_MAX_FRAME;
 *  - a frame that decodes re-encodes (proto_encode) to exactly the same
 *    bytes: the codec promises a canonical encoding, so a difference means
 *    the decoder accepted something the encoder would never write (or the
 *    other way round);
 *  - a frame that does not decode leaves nothing to free (ASan's leak
 *    check), and the error is one of those proto_decode documents.
 *
 * A failed check calls abort(), which libFuzzer reports as a crash and
 * saves the input under the artifact prefix.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "proto/msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const struct msg *m)
{
    fprintf(stderr, "fuzz_frame: %s (type %u %s)\n", what, m ? m->type : 0,
            m ? msg_type_name(m->type) : "-");
    abort();
}

/* Decode one whole frame and check that it round-trips. */
static void check_frame(const uint8_t *frame, size_t len)
{
    struct buf out = {0};
    struct msg m;
    int rv;

    rv = proto_decode(frame, len, &m);
    if (rv != 0) {
        if (rv != BATON_EMALFORMED && rv != BATON_ENOMEM) fail("undocumented decode error", &m);
        return;
    }
    rv = proto_encode(&out, &m);
    if (rv != 0) fail("a decoded message does not re-encode", &m);
    if (out.len != len || memcmp(out.data, frame, len) != 0)
        fail("re-encoding differs from the frame", &m);
    buf_free(&out);
    msg_free(&m);
    msg_free(&m); /* documented as idempotent */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t off = 0, frame_len = 0;

    while (off < size) {
        int rv = proto_frame_check(data + off, size - off, &frame_len);

        if (rv == 0) break; /* a partial frame: the server waits for more */
        if (rv < 0) {
            if (rv != BATON_ETOOBIG && rv != BATON_EMALFORMED) fail("undocumented frame error", NULL);
            break; /* the server closes the connection here */
        }
        if (frame_len > size - off || frame_len < 4 + PROTO_FRAME_MIN ||
            frame_len > 4 + (size_t)BATON_MAX_FRAME)
            fail("frame_check reported an impossible length", NULL);
        check_frame(data + off, frame_len);
        off += frame_len;
    }
    return 0;
}
