/*
 * lockreq.c -- the lock request rule and the lock modes (lockreq.h).
 */
#include "proto/lockreq.h"

#include <string.h>

#include "proto/msg.h"

static const struct {
    const char *name, *short_name;
} modes[] = {
#define X(value, name, short_name) [value] = {name, short_name},
    BATON_LOCK_MODES(X)
#undef X
};

/* The rows are the modes 0..LOCKREQ_N_MODES-1, each once. */
_Static_assert(sizeof modes / sizeof modes[0] == LOCKREQ_N_MODES,
               "BATON_LOCK_MODES rows must number the modes from 0, in order");

const char *lockreq_mode_name(uint32_t mode)
{
    return mode < LOCKREQ_N_MODES && modes[mode].name ? modes[mode].name : "?";
}

const char *lockreq_mode_short_name(uint32_t mode)
{
    return mode < LOCKREQ_N_MODES && modes[mode].short_name ? modes[mode].short_name : "?";
}

/* Refuse: *why = reason. */
static int refuse(const char **why, const char *reason)
{
    *why = reason;
    return BATON_EINVAL;
}

int lockreq_fields_check(const struct lockreq *r, const char **why)
{
    if (r->wait_ms < BATON_WAIT_FOREVER) return refuse(why, "wait_ms must be -1, 0 or positive");
    if (r->lock_delay_ms < BATON_LOCK_DELAY_NONE)
        return refuse(why, "lock_delay_ms must be -1 (none), 0 (the server's) or positive");
    if (r->mode >= LOCKREQ_N_MODES)
        return refuse(why, "acquire: mode must be 0 (exclusive) or 1 (shared)");
    if (r->limit > BATON_MAX_LIMIT)
        return refuse(why, "acquire: limit must be 0..10000 (0 or 1: an ordinary lock, N > 1: "
                           "a semaphore of N)");
    if (r->reentrant > 1) return refuse(why, "acquire: reentrant must be 0 or 1");
    return 0;
}

bool lockreq_mode_fits(uint32_t mode, uint32_t limit)
{
    return !(limit > 1 && mode == BATON_MODE_SHARED);
}

int lockreq_check(const struct lockreq *r, const char **why)
{
    int rv = lockreq_fields_check(r, why);

    if (rv != 0) return rv;
    if (!lockreq_mode_fits(r->mode, r->limit))
        return refuse(why, "acquire: a semaphore (limit > 1) takes no shared requests: each "
                           "holder holds one permit");
    if (!r->many) return 0;
    if (r->n_names < 1 || r->n_names > BATON_MAX_MANY)
        return refuse(why, "acquire_many: a multi-lock needs 2 to 64 names");
    if (r->reentrant != 0) return refuse(why, "acquire_many: a multi-lock cannot be reentrant");
    return 0;
}

int lockreq_names_check(size_t n, const char *const name[], const size_t len[],
                        const char **why)
{
    for (size_t i = 0; i < n; i++) {
        if (!proto_lock_name_ok(name[i], len[i]))
            return refuse(why, "a lock name must be 1..256 bytes with no NUL");
        for (size_t j = 0; j < i; j++)
            if (len[j] == len[i] && memcmp(name[j], name[i], len[i]) == 0)
                return refuse(why, "acquire_many: names repeat");
    }
    return 0;
}
