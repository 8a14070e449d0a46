/*
 * cmds.h -- a struct cmd (storage/cmd.h) in one call, and commands encoded
 * as one batch, for the tests that drive the lock state machine: the
 * command codec's and the fsm's unit tests (tests/unit/test_cmd.c,
 * tests/unit/fsm_fixture.h), the raft-level cluster tests
 * (tests/cluster/fixture.h), and the fuzz target of the command codec and
 * its corpus generator (tests/fuzz/fuzz_cmd.c, tests/fuzz/gen_corpus.c).
 *
 *     run(&f, c_acq(session, seq, BATON_WAIT_FOREVER, "L"));
 *
 * Names are not copied: a command points at the caller's string, which
 * must live until the command is encoded. Header only (static inline).
 */
#ifndef BATON_TESTS_CMDS_H
#define BATON_TESTS_CMDS_H

#include <stdint.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "storage/cmd.h"
#include "tests/lib/runner.h"

static inline struct cmd cmd_of(uint8_t type, uint64_t session, uint64_t seq, const char *name)
{
    struct cmd c;

    memset(&c, 0, sizeof c);
    c.type = type;
    c.session = session;
    c.seq = seq;
    c.name = name;
    c.name_len = (uint16_t)(name ? strlen(name) : 0);
    return c;
}

static inline struct cmd c_open(uint32_t ttl_ms, const char *client)
{
    struct cmd c = cmd_of(CMD_OPEN_SESSION, 0, 0, client);
    c.ttl_ms = ttl_ms;
    return c;
}

/* An OPEN_SESSION by principal `owner` (NULL or "": the anonymous one). */
static inline struct cmd c_open_by(uint32_t ttl_ms, const char *client, const char *owner)
{
    struct cmd c = c_open(ttl_ms, client);
    c.owner = owner;
    c.owner_len = (uint16_t)(owner ? strlen(owner) : 0);
    return c;
}

static inline struct cmd c_acq(uint64_t s, uint64_t seq, int64_t wait_ms, const char *name)
{
    struct cmd c = cmd_of(CMD_ACQUIRE, s, seq, name);
    c.wait_ms = wait_ms;
    return c;
}

/* An ACQUIRE whose hold carries a lock-delay of delay_ms. */
static inline struct cmd c_acq_d(uint64_t s, uint64_t seq, int64_t wait_ms, const char *name,
                                 int32_t delay_ms)
{
    struct cmd c = c_acq(s, seq, wait_ms, name);
    c.lock_delay_ms = delay_ms;
    return c;
}

/* Room for the more names of an ACQUIRE_MANY (c_many). */
#define CMDS_MORE_MAX ((BATON_MAX_MANY - 1) * (2 + BATON_MAX_NAME))

/* An ACQUIRE_MANY of names[0..n) (n >= 2), exclusive, ordinary locks: the
 * more names are encoded into more[CMDS_MORE_MAX], which must live until
 * the command is encoded. */
static inline struct cmd c_many(uint64_t s, uint64_t seq, int64_t wait_ms,
                                const char *const *names, size_t n, uint8_t *more)
{
    struct cmd c = c_acq(s, seq, wait_ms, names[0]);
    size_t len = 0;

    c.type = CMD_ACQUIRE_MANY;
    for (size_t i = 1; i < n; i++) {
        size_t l = strlen(names[i]);
        le_put_u16(more + len, (uint16_t)l);
        memcpy(more + len + 2, names[i], l);
        len += 2 + l;
    }
    c.n_more = (uint8_t)(n - 1);
    c.more = more;
    c.more_len = len;
    return c;
}

static inline struct cmd c_rel(uint64_t s, uint64_t seq, uint64_t fence, const char *name)
{
    struct cmd c = cmd_of(CMD_RELEASE, s, seq, name);
    c.fence = fence;
    return c;
}

static inline struct cmd c_cancel(uint64_t s, uint64_t seq, uint64_t waiter, const char *name)
{
    struct cmd c = cmd_of(CMD_CANCEL, s, seq, name);
    c.waiter = waiter;
    return c;
}

static inline struct cmd c_timeout(uint64_t s, uint64_t waiter, const char *name)
{
    struct cmd c = cmd_of(CMD_WAIT_TIMEOUT, s, 0, name);
    c.waiter = waiter;
    return c;
}

/* An OPEN_SESSION with the client's nonce (which travels in seq). */
static inline struct cmd c_open_nonce(uint32_t ttl_ms, const char *client, const char *owner,
                                      uint64_t nonce)
{
    struct cmd c = c_open_by(ttl_ms, client, owner);
    c.seq = nonce;
    return c;
}

/* c acknowledging below ack_below and keeping seqs[0..n): the keep list is
 * written little-endian into buf (8 * n bytes), which must outlive c. */
static inline struct cmd cmd_acks(struct cmd c, uint64_t ack_below, const uint64_t *seqs,
                                  size_t n, uint8_t *buf)
{
    for (size_t i = 0; i < n; i++) le_put_u64(buf + 8 * i, seqs[i]);
    c.ack_below = ack_below;
    c.n_keep = (uint16_t)n;
    c.keep = n ? buf : NULL;
    return c;
}

#define c_delay_end(name) cmd_of(CMD_DELAY_END, 0, 0, (name))
#define c_close(s, seq) cmd_of(CMD_CLOSE_SESSION, (s), (seq), NULL)
#define c_expire(s) cmd_of(CMD_EXPIRE_SESSION, (s), 0, NULL)
#define c_force(name) cmd_of(CMD_FORCE_RELEASE, 0, 0, (name))

/* A FORCE_RELEASE2 (storage/cmd.h, "Forced releases"): of the hold with
 * `fence` (0: whoever holds it); wait CMD_FORCE_NOW or
 * CMD_FORCE_AFTER_LEASE. */
static inline struct cmd c_force2(const char *name, uint64_t fence, int64_t wait)
{
    struct cmd c = cmd_of(CMD_FORCE_RELEASE2, 0, 0, name);
    c.fence = fence;
    c.wait_ms = wait;
    return c;
}
#define c_member(id, addr) cmd_of(CMD_SET_MEMBER_ADDR, (id), 0, (addr))
#define c_check() cmd_of(CMD_CHECK, 0, 0, NULL)

/*
 * Append cmds to b as one batch (cmd_batch_begin/add/end): 0, or the error
 * of the first step that failed (b then ends in a partial batch) with in
 * *bad (if not NULL) the index of the command refused, n if the batch could
 * not begin. For the programs that are not tests and must not FAIL like
 * one: the fuzz target and the corpus generator (tests/fuzz/).
 */
static inline int cmds_batch(struct buf *b, const struct cmd *cmds, size_t n, size_t *bad)
{
    size_t start;
    int rv = cmd_batch_begin(b, &start);

    if (rv != 0) {
        if (bad) *bad = n;
        return rv;
    }
    for (size_t i = 0; i < n; i++) {
        rv = cmd_batch_add(b, &cmds[i]);
        if (rv != 0) {
            if (bad) *bad = i;
            return rv;
        }
    }
    cmd_batch_end(b, start, (uint32_t)n);
    return 0;
}

/* cmds_batch for the tests: FAILs the test if a command cannot be
 * encoded. */
static inline void cmds_encode(struct buf *b, const struct cmd *cmds, size_t n)
{
    size_t bad;
    int rv = cmds_batch(b, cmds, n, &bad);

    if (rv != 0) FAIL("cmds_encode: command %zu of %zu: %s", bad, n, baton_err_name(rv));
}

#endif /* BATON_TESTS_CMDS_H */
