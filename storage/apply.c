/*
 * apply.c -- store_apply: one raft entry, one write transaction. Validates
 * the batch, runs each command through deduplication and its handler, and
 * records the applied index, the state digest and the replicated counters.
 *
 * Deduplication (exactly-once for client requests). The commands of a
 * client's session (kind CLIENT in cmd_table.h) with a non-zero seq go
 * through these steps, in
 * this order (docs/design.md, "Deduplication", has the reasoning and the
 * proof that a request never runs twice):
 *   1. An unknown session fails with BATON_ESESSION (nothing is cached: the
 *      session, and with it every cache entry, is gone).
 *   2. A keep list that is not strictly increasing, holds a 0 or a seq not
 *      below ack_below fails the command with BATON_EINVAL; nothing changes.
 *   3. The acknowledgement: unless ack_below is below the session's ack
 *      floor (the highest ack_below it has seen), every cached result of
 *      the session with a seq below ack_below that the keep list does not
 *      name is dropped, and the floor becomes ack_below. The client sends
 *      ack_below only once every request below it is answered for good or
 *      kept (proto/msg.h), so what is dropped is what it will never ask
 *      for again. An older request, carrying a lower ack_below, changes
 *      nothing; one with the same ack_below keeps at least what a newer one
 *      keeps (a kept seq leaves the client's list only once it is done).
 *      So the cached results below the floor are always the kept ones: at
 *      most CMD_MAX_KEEP, which bounds this step's walk.
 *   4. A cached result for (session, seq) is returned as it is; nothing
 *      changes and no effects are produced. A queued ACQUIRE's cache entry is
 *      rewritten when its wait ends (granted, timed out, cancelled), so its
 *      retry reports QUEUED while it waits (with its position at enqueue
 *      time, not the current one) and the final outcome afterwards; a kept
 *      one is found here even below the floor.
 *   5. seq < ack floor without a cached result: the client acknowledged
 *      that request's result, so this is a stale duplicate: BATON_ESTALE,
 *      nothing changes.
 *   6. seq at or above the ack floor plus STORE_MAX_CACHED_PER_SESSION,
 *      in a cluster at feature level STORE_LEVEL_CACHED_BOUND or above:
 *      the session runs too far ahead of what it acknowledged, and its
 *      result would be one more cached result the client keeps down.
 *      Unless the command frees something of the session's (locks_frees:
 *      a RELEASE of a hold it has or of a lost record, a CANCEL of a wait,
 *      a CLOSE_SESSION), it fails with BATON_ELIMIT: nothing changes and
 *      nothing is cached, so a re-send is refused again while the floor
 *      stays where it is, and may run once the client has acknowledged
 *      more (the refusal did nothing, so running it then is its one run).
 *      Freeing commands go through so that a session can always let go
 *      of its locks; each of their results beyond the window took a hold
 *      or wait away, and ACQUIREs beyond it are refused, so they add at
 *      most STORE_MAX_OWNED_PER_SESSION results while the floor stands.
 *   7. Otherwise the command runs and its result is cached, whatever it is
 *      (errors included), except for CLOSE_SESSION: the session's cache goes
 *      with it, so a retried CLOSE_SESSION gets BATON_ESESSION, which the
 *      client takes as "already closed" (as etcd answers a repeated lease
 *      revoke with "lease not found").
 OPEN_SESSION is deduplicated by its nonce instead (sessions.c, nonces.c).
 * The leader's and the administrator's commands (kind LEADER in
 * cmd_table.h) are never deduplicated: their seq is ignored, and each is
 * harmless to repeat (a FORCE_RELEASE2 that names a fence is exact; one
 * that does not takes the lock from whoever holds it then: cmd.h).
 */
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "storage/store_int.h"

/* Step 2: is the keep list increasing, without 0, and below ack_below? */
static int keep_ok(const struct cmd *cmd)
{
    uint64_t prev = 0;

    for (size_t i = 0; i < cmd->n_keep; i++) {
        uint64_t seq = cmd_keep_at(cmd, i);
        if (seq <= prev || seq >= cmd->ack_below) return 0;
        prev = seq;
    }
    return 1;
}

/*
 * Step 3's pruning: drop the session's cached results below ack_below
 * except the kept ones. The walk visits the kept entries below the old
 * floor (at most CMD_MAX_KEEP) and the entries it drops, each once; it
 * seeks afresh after every step, as db_del_range does, rather than rely
 * on where LMDB leaves a cursor after a delete.
 */
static int dedup_prune(struct apply_ctx *c, const struct cmd *cmd)
{
    uint8_t k[16];
    MDB_cursor *cur;
    MDB_val key, v;
    uint64_t from = 0, seq;
    size_t i = 0;
    int rc;

    rc = mdb_cursor_open(c->txn, c->s->dbi[DB_DEDUP], &cur);
    if (rc != 0) return rc;
    for (;;) {
        key_pair(k, cmd->session, from);
        key.mv_size = sizeof k;
        key.mv_data = k;
        rc = mdb_cursor_get(cur, &key, &v, MDB_SET_RANGE);
        if (rc != 0) break;
        if (key.mv_size != sizeof k || be_get_u64(key.mv_data) != cmd->session) break;
        seq = be_get_u64((const uint8_t *)key.mv_data + 8);
        if (seq >= cmd->ack_below) break;
        while (i < cmd->n_keep && cmd_keep_at(cmd, i) < seq) i++;
        if (i < cmd->n_keep && cmd_keep_at(cmd, i) == seq) {
            from = seq + 1; /* kept; seq < ack_below, so no overflow */
            continue;
        }
        rc = mdb_cursor_del(cur, 0);
        if (rc != 0) break;
        from = seq + 1;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Step 6: may cmd (seq >= the floor) run, *ok? */
static int window_ok(struct apply_ctx *c, const struct cmd *cmd, const struct sess_rec *sess,
                     int *ok)
{
    uint64_t level;
    int rc;

    *ok = 1;
    if (cmd->seq - sess->ack_floor < STORE_MAX_CACHED_PER_SESSION) return 0;
    if ((rc = level_get(c->s, c->txn, &level)) != 0) return rc;
    if (level < STORE_LEVEL_CACHED_BOUND) return 0; /* not yet in this cluster */
    return locks_frees(c, cmd, ok);
}

/* Is this a client command, subject to deduplication (cmd_table.h, kind)? */
static int is_client_cmd(uint8_t type)
{
    const struct cmd_row *t = cmd_lookup(type);

    return t != NULL && t->kind == CMD_KIND_CLIENT;
}

/* The handler of every command, by type byte (cmd_table.h, apply); NULL
 * for an encoding-only byte, which no decoded command has. */
static cmd_apply_fn *const handlers[CMD_TYPE_MAX_] = {
#define CMD_HANDLER_(n, b, l, k, g, max, t, i, apply) [CMD_##n] = apply,
    BATON_CMDS(CMD_HANDLER_)
#undef CMD_HANDLER_
};

static int run_cmd(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res)
{
    cmd_apply_fn *fn = cmd->type < CMD_TYPE_MAX_ ? handlers[cmd->type] : NULL;

    if (fn == NULL) {
        /* The batch was validated: unreachable, but deterministic anyway. */
        res->status = BATON_EINVAL;
        return 0;
    }
    return fn(c, cmd, res);
}

/* Run one command, then regrant the queues a multi-lock's grant or end
 * left to regrant (multi.c), so that the command's effects are complete. */
static int run_op(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res)
{
    int rc = run_cmd(c, cmd, res);

    return rc != 0 ? rc : regrant_drain(c);
}

/*
 * Apply one command, with the deduplication steps described at the top of
 * this file. Returns an internal error code; the command's outcome is in
 * *res.
 */
static int apply_one(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res)
{
    struct sess_rec sess;
    uint8_t k[16], v[DEDUP_VAL_LEN];
    MDB_val cached;
    int found, rc;

    memset(res, 0, sizeof *res);
    if (!is_client_cmd(cmd->type) || cmd->seq == 0) return run_op(c, cmd, res);

    rc = sess_get(c, cmd->session, &sess, &found);
    if (rc != 0) return rc;
    if (!found) {
        res->status = BATON_ESESSION;
        return 0;
    }
    if (!keep_ok(cmd)) {
        res->status = BATON_EINVAL;
        return 0;
    }
    if (cmd->ack_below >= sess.ack_floor) {
        rc = dedup_prune(c, cmd);
        if (rc == 0 && cmd->ack_below > sess.ack_floor) {
            sess.ack_floor = cmd->ack_below;
            rc = sess_put(c, cmd->session, &sess);
        }
        if (rc != 0) return rc;
    }
    key_pair(k, cmd->session, cmd->seq);
    rc = db_get(c->txn, c->s->dbi[DB_DEDUP], k, sizeof k, &cached, &found);
    if (rc != 0) return rc;
    if (found) return dedup_decode(&cached, res);
    if (cmd->seq < sess.ack_floor) {
        res->status = BATON_ESTALE;
        return 0;
    }
    rc = window_ok(c, cmd, &sess, &found);
    if (rc != 0) return rc;
    if (!found) {
        res->status = BATON_ELIMIT;
        return 0;
    }

    rc = run_op(c, cmd, res);
    if (rc != 0 || cmd->type == CMD_CLOSE_SESSION) return rc;
    return db_put(c->txn, c->s->dbi[DB_DEDUP], k, sizeof k, v, dedup_encode(v, res));
}

/* Does data[0..len) decode as a whole, well-formed batch? */
static int batch_valid(const void *data, size_t len)
{
    struct cmd_reader r;
    struct cmd cmd;
    int rv;

    if (data == NULL && len > 0) return 0;
    if (cmd_reader_init(&r, data, len, NULL) != 0) return 0;
    while ((rv = cmd_reader_next(&r, &cmd)) == 1) {
    }
    return rv == 0;
}

struct apply_arg {
    uint64_t index;
    const void *data;
    size_t len;
    int valid;
    struct effects *out;
    uint64_t digest;            /* out: the new digest, once committed */
    int checked;                /* out: the entry had a CHECK */
};

/* The body of the write transaction. store__write may run it again after
 * growing the map, so it starts by emptying the effects. */
static int apply_txn(store *s, MDB_txn *txn, void *arg)
{
    struct apply_arg *a = arg;
    struct apply_ctx c = {.s = s, .txn = txn, .index = a->index, .out = a->out};
    uint64_t session0, fence0, enq0, digest;
    struct cmd_reader r;
    struct cmd cmd;
    struct cmd_result res;
    int rc;

    effects_reset(a->out);
    a->checked = 0;
    rc = meta_get_u64(s, txn, META_NEXT_SESSION, &c.next_session, NULL);
    if (rc == 0) rc = meta_get_u64(s, txn, META_NEXT_FENCE, &c.next_fence, NULL);
    if (rc == 0) rc = meta_get_u64(s, txn, META_NEXT_ENQ, &c.next_enq, NULL);
    if (rc == 0) rc = meta_get_u64(s, txn, META_DIGEST, &digest, NULL);
    if (rc != 0) return rc;
    session0 = c.next_session;
    fence0 = c.next_fence;
    enq0 = c.next_enq;

    if (a->valid) {
        cmd_reader_init(&r, a->data, a->len, NULL);
        while (rc == 0 && cmd_reader_next(&r, &cmd) == 1) {
            rc = apply_one(&c, &cmd, &res);
            if (rc == 0) rc = sess_flush(&c);
            if (rc == 0) rc = effects_add_result(a->out, &res);
        }
    }
    /* One FX_LOCK_CHANGED per changed lock, after the entry's other effects. */
    for (size_t i = 0; rc == 0 && i < c.n_changed; i++) rc = effects_add_fx(a->out, &c.changed[i]);
    free(c.changed);
    free(c.regrant);
    if (rc != 0) return rc;
    a->checked = c.checked;
    if (c.next_session != session0) rc = meta_put_u64(s, txn, META_NEXT_SESSION, c.next_session);
    if (rc == 0 && c.next_fence != fence0) rc = meta_put_u64(s, txn, META_NEXT_FENCE, c.next_fence);
    if (rc == 0 && c.next_enq != enq0) rc = meta_put_u64(s, txn, META_NEXT_ENQ, c.next_enq);
    if (rc == 0) rc = meta_put_u64(s, txn, META_APPLIED, a->index);
    /* The digest covers the entry's bytes as given (none for an empty
     * entry). */
    a->digest = store__digest_next(digest, a->index, a->data, a->len);
    if (rc == 0) rc = meta_put_u64(s, txn, META_DIGEST, a->digest);
    return rc;
}

/*
 * Called by raft/fsm.c for every committed command entry, and by the unit
 * tests directly. An empty entry (len 0: the leader's own, batond's
 * snapshot-now entry) applies nothing and advances the applied index. A
 * batch this binary cannot decode -- an unknown type byte (a command of a
 * later feature level), another format, bad fields -- is refused before
 * the transaction starts: nothing changes, not even the applied index or
 * the digest, and the caller must stop (raft/fsm.c). Applying it as an
 * empty batch would let this node's state drift from the nodes that can
 * decode it while its applied index and digest kept pace with theirs.
 */
int store_apply(store *s, uint64_t index, const void *data, size_t len, struct effects *out)
{
    struct apply_arg a = {.index = index, .data = data, .len = len, .out = out};
    int rv;

    effects_reset(out);
    out->index = index;
    if (index <= s->applied) return 0;
    a.valid = len > 0 && batch_valid(data, len);
    if (len > 0 && !a.valid) return BATON_EMALFORMED;
    rv = store__write(s, apply_txn, &a);
    if (rv != 0) {
        effects_reset(out);
        return rv;
    }
    s->applied = index;
    s->digest = a.digest;
    if (a.checked) store__check_applied(s, index);
    return 0;
}
