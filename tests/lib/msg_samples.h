/*
 * msg_samples.h -- one sample message of every wire type, with every field
 * set to a recognisable value. Used by the wire-format test
 * (tests/unit/test_wire.c, which compares their encodings with frozen bytes),
 * by the codec tests (tests/unit/test_proto_*.c) where one ordinary message
 * of a type will do, and by the fuzz corpus generator
 * (tests/fuzz/gen_corpus.c).
 */
#ifndef BATON_TESTS_MSG_SAMPLES_H
#define BATON_TESTS_MSG_SAMPLES_H

#include "proto/msg.h"

/*
 * Fill *m with the sample of message type `type`. Strings and arrays point
 * to static storage (the message owns nothing: never msg_free it).
 * Returns 0, or -1 when `type` is not a message type.
 */
int msg_sample(int type, struct msg *m);

#endif
