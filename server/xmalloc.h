/*
 * xmalloc.h -- batond's allocation-failure policy and its allocators.
 */
#ifndef BATON_SERVER_XMALLOC_H
#define BATON_SERVER_XMALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "proto/u64map.h"

/*
 * Allocation failure. batond treats running out of memory like Redis's
 * zmalloc does: it logs and aborts. Every resource a client can make it
 * hold is bounded (docs/operations.md, "Limits"), so only the machine running out of
 * memory gets here, and a node that stops is the failure raft is built
 * for: another node leads and clients move there with their sessions.
 * Carrying on instead would mean dropping a push, a timer or a reply
 * silently, and a lost push is a lock lost without notice. Use these for
 * every allocation in server/. The libraries below it (storage/, proto/,
 * raft/, and libbaton for its users) return BATON_ENOMEM instead; where
 * one does, server/ answers the request it was serving with that error,
 * so nothing is dropped without a word.
 */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
/* A library call below server/ could not allocate `what`: the same policy
 * (log, abort). Never returns. */
void xalloc_failed(const char *what) __attribute__((noreturn));
/* u64map_put that aborts when the table cannot grow (key must not be 0). */
void xu64map_put(struct u64map *m, uint64_t key, void *val);

#endif /* BATON_SERVER_XMALLOC_H */
