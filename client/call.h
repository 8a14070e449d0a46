/*
 * call.h -- the blocking form of the core's sessionless requests
 * (async_raw.c), for batonctl. Not a public API: nothing here is exported
 * from libbaton.so; batonctl links libbaton.a.
 *
 * A caller is an async context (client/async_int.h) on a private libuv loop
 * that runs in the calling thread only while a call waits, as hiredis runs
 * its blocking calls over the context its async calls use. Each call sends
 * one C2S message that needs no session and returns its reply; the core
 * connects (TLS, HELLO with the token), follows REDIRECT, retries on
 * NO_LEADER or a broken connection and gives up at the call's timeout,
 * exactly as for a lock call. The connection stays open between calls.
 *
 * A caller is used by one thread at a time; several callers may run in
 * parallel threads (batonctl status asks every node at once).
 */
#ifndef BATON_CLIENT_CALL_H
#define BATON_CLIENT_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "baton/baton.h"
#include "proto/msg.h"

typedef struct baton__caller baton__caller;

/* A decoded reply together with the frame its strings point into. */
struct baton__reply {
    struct msg m;
    uint8_t *frame;
};

/*
 * A caller for o's endpoints, security options and client name (the
 * timeouts of o are not used: each call has its own). With one_node, it
 * talks to the first endpoint only and never elsewhere: a REDIRECT or
 * NO_LEADER is returned as a reply, and a connection that fails fails the
 * call at once with BATON_EUNAVAIL. Returns 0, or a BATON_E* code
 * (BATON_EINVAL: bad options or unusable TLS files) with err filled.
 */
int baton__caller_new(const baton_opts *o, bool one_node, baton__caller **out, char *err,
                      size_t errlen);

/*
 * Send req (its req_id is set by the core) and wait, at most timeout_ms,
 * for the first reply, into *rep (release it with baton__reply_free).
 * Returns 0; the code of an ERROR reply (the node's message in
 * baton__caller_errmsg, "ADDRESS: MESSAGE"); BATON_ETLS or BATON_EAUTH
 * when a node refused this client; BATON_EUNAVAIL when no leader (or, with
 * one_node, the node) answered in time. With stream, later replies are
 * read with baton__call_next until the next call, or baton__caller_free.
 */
int baton__call(baton__caller *c, const struct msg *req, bool stream, uint64_t timeout_ms,
                struct baton__reply *rep);

/*
 * The stream's next reply, waiting at most timeout_ms: 0, BATON_ETIMEDOUT
 * (nothing yet; the stream goes on), or the code that ended it
 * (BATON_ECLOSED: the connection was lost), with the message set.
 */
int baton__call_next(baton__caller *c, uint64_t timeout_ms, struct baton__reply *rep);

/* Why the last call failed. */
const char *baton__caller_errmsg(const baton__caller *c);
/* The node the current (or last) connection reached (HELLO_OK). */
uint32_t baton__caller_node(const baton__caller *c);
void baton__caller_free(baton__caller *c); /* NULL-safe */
void baton__reply_free(struct baton__reply *r); /* NULL-safe, idempotent */

#endif /* BATON_CLIENT_CALL_H */
