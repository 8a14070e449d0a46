/*
 * errmsg.h -- the size of baton's error-message buffers.
 *
 * Every buffer that holds a human-readable error message -- batond's
 * startup and configuration errors (server/, raft/, storage/), libbaton's
 * last-error text (client/async_int.h, client/baton.c) and batonctl's
 * messages (client/ctl/) -- has BATON_ERRMSG_SIZE bytes, and every function
 * that fills such a buffer through a bare `char *errmsg` writes at most
 * that many, NUL included.
 *
 * The size is tied to the wire: a message made in such a buffer (at most
 * BATON_ERRMSG_SIZE - 1 bytes) always fits in an ERROR frame, whose message
 * may have BATON_MAX_ERRMSG bytes (proto/msg.h); the assertion below keeps
 * it so. It is 256, not BATON_MAX_ERRMSG + 1, because the functions above
 * have always promised to write at most 256 bytes and their callers
 * (tests included) pass 256-byte buffers; the only cost is that a message
 * of the full 256 bytes from the wire loses its last byte when copied.
 */
#ifndef BATON_PROTO_ERRMSG_H
#define BATON_PROTO_ERRMSG_H

#include "proto/msg.h"

#define BATON_ERRMSG_SIZE 256

_Static_assert(BATON_ERRMSG_SIZE - 1 <= BATON_MAX_ERRMSG,
               "an error message of this tree must fit in an ERROR frame");

#endif
