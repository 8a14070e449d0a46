/*
 * lockreq.h -- what makes a lock request well formed, and the lock modes,
 * once for every layer: libbaton and batonctl check a call with it before
 * anything is sent, batond a request before anything is proposed, the
 * state machine a command before anything is written (each reports a
 * refusal its own way).
 *
 * The rule, in the order it is checked (the first failure is the reason):
 * wait_ms is BATON_WAIT_FOREVER, BATON_WAIT_TRY or positive; lock_delay_ms
 * BATON_LOCK_DELAY_NONE or more; mode one of BATON_LOCK_MODES; limit
 * 0..BATON_MAX_LIMIT; reentrant 0 or 1; a semaphore (limit > 1) takes only
 * exclusive requests; a multi-lock call has 1..BATON_MAX_MANY names (one
 * name goes on the wire as an ordinary ACQUIRE, so ACQUIRE_MANY carries
 * at least 2), is not reentrant, and no name repeats.
 */
#ifndef BATON_PROTO_LOCKREQ_H
#define BATON_PROTO_LOCKREQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "baton/baton_defs.h"

/* The lock modes (include/baton/baton_defs.h numbers them):
 * X(value, name, short name for a table column). Rows in number order
 * from 0. */
#define BATON_LOCK_MODES(X)                         \
    X(BATON_MODE_EXCLUSIVE, "exclusive", "excl")    \
    X(BATON_MODE_SHARED, "shared", "shared")

/* The number of modes: a mode is valid if it is below this. */
enum {
#define X(value, name, short_name) LOCKREQ_MODE_##value,
    BATON_LOCK_MODES(X)
#undef X
    LOCKREQ_N_MODES
};

/* A mode's name ("exclusive"), or "?" for a number that is no mode. */
const char *lockreq_mode_name(uint32_t mode);
/* Its short name, for a table column ("excl"), or "?". */
const char *lockreq_mode_short_name(uint32_t mode);

/* One lock request's options, as the caller holds them. */
struct lockreq {
    int64_t wait_ms;
    int64_t lock_delay_ms;
    uint32_t mode, limit, reentrant;
    bool many;            /* a multi-lock call (ACQUIRE_MANY, baton_lock_many) */
    size_t n_names;       /* many: how many names */
};

/*
 * Each field of r on its own: wait_ms, lock_delay_ms, mode, limit,
 * reentrant. 0, or BATON_EINVAL with *why the reason.
 */
int lockreq_fields_check(const struct lockreq *r, const char **why);

/* May a request of this mode go to a lock of this limit? */
bool lockreq_mode_fits(uint32_t mode, uint32_t limit);

/*
 * The whole rule but the names themselves: the fields, how they combine,
 * and a multi-lock's count and reentrancy. 0, or BATON_EINVAL with *why.
 */
int lockreq_check(const struct lockreq *r, const char **why);

/*
 * A multi-lock's names name[i][0..len[i]), i < n: each a legal lock name
 * and none repeated. 0, or BATON_EINVAL with *why.
 */
int lockreq_names_check(size_t n, const char *const name[], const size_t len[],
                        const char **why);

#endif /* BATON_PROTO_LOCKREQ_H */
