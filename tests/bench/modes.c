/*
 * modes.c -- what W6 and W7 ask for in each cycle, and their in-process
 * checks (bench.h, "lock modes"); both drivers use it.
 *
 *   W6  4 names "w6-0".."w6-3"; each cycle picks one uniformly, and asks
 *       for it shared 9 times in 10, exclusive otherwise.
 *   W7  one name "sem", a semaphore of 8 (.limit = 8, exclusive requests:
 *       each holds one permit).
 *   W8  16 names "w8-0".."w8-15"; each cycle takes 2 to 4 distinct ones,
 *       picked at random, exclusively and atomically (baton_lock_many).
 *
 * A request is a list of names with one mode and limit (struct mreq), so
 * that a workload taking several names at once needs only its own pick.
 *
 * The checks: each name has counters of its holders in this process,
 * raised right after a grant and lowered right before the release is sent.
 * The cluster grants a waiter only once the release that freed its place
 * has committed, which is after that release was sent, so a holder that
 * finds a counter it conflicts with saw two grants the cluster must not
 * give at once: an exclusive holder with any other holder (W6), or a ninth
 * holder of the semaphore (W7). The counters are sequentially consistent
 * atomics: of two overlapping holders, at least the later one sees the
 * other's increment.
 */
#include <stdio.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "tests/bench/bench.h"

#define W6_NAMES 4
#define W6_SHARED_PER_MILLE 900
#define W7_LIMIT 8
#define W8_NAMES 16

int modes_init(struct modes *m, const struct cfg *cfg)
{
    memset(m, 0, sizeof *m);
    switch (cfg->workload) {
    case W6: m->n_names = W6_NAMES; break;
    case W7: m->n_names = 1; break;
    case W8: m->n_names = W8_NAMES; break;
    default: return -1;
    }
    for (int i = 0; i < m->n_names; i++) {
        if (cfg->workload == W7)
            snprintf(m->names[i], sizeof m->names[i], "sem");
        else
            snprintf(m->names[i], sizeof m->names[i], "w%d-%d", cfg->workload, i);
        atomic_init(&m->shared[i], 0);
        atomic_init(&m->exclusive[i], 0);
    }
    m->workload = cfg->workload;
    atomic_init(&m->max_holders, 0);
    return 0;
}

/* xorshift64*: a client's own stream, seeded with its id. */
static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

void modes_seed(uint64_t *rng, int client)
{
    *rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(client + 1);
}

void modes_pick(const struct modes *m, uint64_t *rng, struct mreq *q)
{
    memset(q, 0, sizeof *q);
    q->n = 1;
    if (m->workload == W7) {
        q->idx[0] = 0;
        q->mode = BATON_MODE_EXCLUSIVE;
        q->limit = W7_LIMIT;
        return;
    }
    if (m->workload == W8) { /* 2..4 distinct names, in a random order */
        q->n = 2 + (int)(next_rand(rng) % 3);
        q->mode = BATON_MODE_EXCLUSIVE;
        for (int k = 0; k < q->n; k++) {
            int again;
            do {
                q->idx[k] = (int)(next_rand(rng) % (uint64_t)m->n_names);
                again = 0;
                for (int j = 0; j < k; j++) again |= q->idx[j] == q->idx[k];
            } while (again);
        }
        return;
    }
    q->idx[0] = (int)(next_rand(rng) % (uint64_t)m->n_names);
    q->mode = next_rand(rng) % 1000 < W6_SHARED_PER_MILLE ? BATON_MODE_SHARED
                                                           : BATON_MODE_EXCLUSIVE;
}

/* Raise the high-water mark of holders to at least v. */
static void note_holders(struct modes *m, int v)
{
    int cur = atomic_load(&m->max_holders);

    while (v > cur && !atomic_compare_exchange_weak(&m->max_holders, &cur, v)) {
    }
}

uint64_t modes_enter(struct modes *m, const struct mreq *q, int client)
{
    uint64_t bad = 0;

    for (int k = 0; k < q->n; k++) {
        int i = q->idx[k], sh, ex;
        if (q->mode == BATON_MODE_SHARED) {
            sh = atomic_fetch_add(&m->shared[i], 1) + 1;
            ex = atomic_load(&m->exclusive[i]);
            note_holders(m, sh);
            if (ex > 0) {
                bad++;
                note("client %d granted \"%s\" shared while %d exclusive holder(s) hold it",
                     client, m->names[i], ex);
            }
        } else {
            ex = atomic_fetch_add(&m->exclusive[i], 1) + 1;
            sh = atomic_load(&m->shared[i]);
            note_holders(m, ex);
            if (q->limit > 1 ? ex > (int)q->limit : ex > 1 || sh > 0) {
                bad++;
                note("client %d granted \"%s\" while %d other exclusive and %d shared "
                     "holder(s) hold it (limit %u)",
                     client, m->names[i], ex - 1, sh, q->limit);
            }
        }
    }
    return bad;
}

void modes_leave(struct modes *m, const struct mreq *q)
{
    for (int k = 0; k < q->n; k++)
        atomic_fetch_sub(q->mode == BATON_MODE_SHARED ? &m->shared[q->idx[k]]
                                                      : &m->exclusive[q->idx[k]],
                         1);
}

void w1_names(const char *first, int k, char (*buf)[48], const char **ptrs)
{
    for (int i = 0; i < k; i++) {
        if (i == 0)
            snprintf(buf[i], sizeof buf[i], "%s", first);
        else
            snprintf(buf[i], sizeof buf[i], "%.32s.%d", first, i);
        ptrs[i] = buf[i];
    }
}
