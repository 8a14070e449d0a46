/*
 * proto_fixture.h -- what the unit tests of the wire codec (proto/msg.c;
 * tests/unit/test_proto_*.c) share: sample messages in three variants, a
 * field-by-field comparison, and small helpers to build and patch frames.
 *
 * sample() builds every message type in three variants: typical values
 * that differ from field to field and use every byte (so that swapped
 * fields or a wrong byte order cannot go unnoticed), extreme values with
 * every string and list at its limit, and minimal values with empty
 * strings and lists. A test that needs just one ordinary message of a type
 * takes tests/lib/msg_samples.h's msg_sample instead.
 *
 * Every helper that can fail FAILs the running test (tests/lib/runner.h).
 */
#ifndef BATON_TESTS_UNIT_PROTO_FIXTURE_H
#define BATON_TESTS_UNIT_PROTO_FIXTURE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proto/buf.h"
#include "proto/msg.h"
#include "tests/lib/runner.h"

#define N_VARIANTS 3
#define V_TYPICAL 0
#define V_EXTREME 1
#define V_MINIMAL 2

/* A pstr of s[0..n), or of the NUL-terminated s. */
struct pstr psn(const char *s, size_t n);
struct pstr ps(const char *s);

/*
 * Build variant v (V_TYPICAL, V_EXTREME or V_MINIMAL) of a message of the
 * given type into *m. Strings and arrays borrow from static storage in
 * proto_fixture.c, so only one sample with lists is valid at a time; a
 * test may change the items of a sample's lists through *m until the next
 * sample. Never msg_free a sample.
 */
void sample(int type, int v, struct msg *m);

#define ASSERT_PSTR_EQ(a, b)                                                   \
    do {                                                                       \
        struct pstr pa_ = (a), pb_ = (b);                                      \
        ASSERT_EQ(pa_.n, pb_.n);                                               \
        ASSERT(pa_.n == 0 || memcmp(pa_.p, pb_.p, pa_.n) == 0);                \
    } while (0)

/* Compare every field of two messages of the same type. */
void assert_msg_eq(const struct msg *a, const struct msg *b);

/* A private copy of exactly n bytes, so that ASan catches any read past the
 * end of what the codec was given. The caller frees it. */
uint8_t *dup_exact(const void *p, size_t n);

/* Encode m as a fresh frame into *b (which the caller frees). */
void encode_ok(const struct msg *m, struct buf *b);

/* Rewrite the length field of frame[0..len) to match len. */
void fix_len(uint8_t *frame, size_t len);

/* proto_decode refuses frame[0..len) (a private copy of it) with
 * BATON_EMALFORMED and still reports the frame's type and req_id, as
 * proto/msg.h promises so that the server can answer with an ERROR. */
void assert_malformed(const uint8_t *frame, size_t len, int type, uint64_t req_id);

/* Start a frame the way msg.h describes it (a length of 0, the type, the
 * req_id); end_frame patches the length to what was written since. */
void begin_frame(struct buf *b, uint16_t type, uint64_t req_id);
void end_frame(struct buf *b);

#endif /* BATON_TESTS_UNIT_PROTO_FIXTURE_H */
