/*
 * locks.c -- the lock commands (ACQUIRE, RELEASE, CANCEL, WAIT_TIMEOUT,
 * FORCE_RELEASE, FORCE_RELEASE2, DELAY_END) and the FIFO queue beneath them.
 *
 * Three tables describe a lock (store.h):
 *   locks    name -> holder (session, waiter), fence, granted index, n_waiters,
 *            lock_delay_ms, delayed
 *   waiters  name \0 be64 enq -> (session, waiter, wait_ms, lock_delay_ms), the queue
 *   owned    (session, waiter) -> hold or wait, enq, name: the back-index
 *            that lets CANCEL, WAIT_TIMEOUT and session expiry find an entry
 * A lock record exists only while the lock is held, has waiters or is
 * delayed, and a lock with waiters is always held or delayed: whoever lets
 * go of a lock hands it to the queue head in the same apply (lock_handoff),
 * so the queue never stalls and no waiter has to ask again. The one
 * exception is an expired hold with a lock-delay (cmd.h): the lock then
 * stays free but delayed, with its queue, until the leader's DELAY_END
 * hands it on.
 *
 * Queue order is commit order: enq comes from the replicated counter
 * next_enq, never from a clock. Fences come from next_fence, one counter
 * for all locks, so every grant's fence is greater than every earlier one.
 * A waiter is named by its ACQUIRE's seq, which is unique in its session.
 */
#include <string.h>

#include "client/baton_defs.h"
#include "storage/store_int.h"

static int lock_get(struct apply_ctx *c, const char *name, size_t len, struct lock_rec *r,
                    int *found)
{
    MDB_val v;
    int rc = db_get(c->txn, c->s->dbi[DB_LOCKS], name, len, &v, found);

    if (rc != 0 || !*found) return rc;
    return lock_decode(&v, r);
}

/* Every change of a lock record goes through lock_put or lock_save, and
 * every change of a queue saves its lock record too: so these two are where
 * FX_LOCK_CHANGED is emitted (once per lock per entry). */
static int lock_put(struct apply_ctx *c, const char *name, size_t len, const struct lock_rec *r)
{
    uint8_t v[LOCK_VAL_LEN];
    int rc = fx_lock_changed(c, name, len);

    if (rc != 0) return rc;
    return db_put(c->txn, c->s->dbi[DB_LOCKS], name, len, v, lock_encode(v, r));
}

static int owned_get(struct apply_ctx *c, uint64_t session, uint64_t waiter, struct owned_rec *o,
                     int *found)
{
    uint8_t k[16];
    MDB_val v;
    int rc;

    key_pair(k, session, waiter);
    rc = db_get(c->txn, c->s->dbi[DB_OWNED], k, sizeof k, &v, found);
    if (rc != 0 || !*found) return rc;
    return owned_decode(&v, o);
}

static int owned_put(struct apply_ctx *c, uint64_t session, uint64_t waiter, uint8_t kind,
                     uint64_t enq, const char *name, size_t len)
{
    struct owned_rec o;
    uint8_t k[16], v[VAL_MAX];

    o.kind = kind;
    o.enq = enq;
    o.name_len = (uint16_t)len;
    memcpy(o.name, name, len);
    key_pair(k, session, waiter);
    return db_put(c->txn, c->s->dbi[DB_OWNED], k, sizeof k, v, owned_encode(v, &o));
}

static int owned_del(struct apply_ctx *c, uint64_t session, uint64_t waiter)
{
    uint8_t k[16];

    key_pair(k, session, waiter);
    return db_del(c->txn, c->s->dbi[DB_OWNED], k, sizeof k, NULL);
}

/* Store the lock record, or delete it once nobody holds or waits and no
 * delay runs. */
static int lock_save(struct apply_ctx *c, const char *name, size_t len, const struct lock_rec *r)
{
    if (r->holder_session == 0 && r->n_waiters == 0 && !r->delayed) {
        int rc = fx_lock_changed(c, name, len);
        return rc != 0 ? rc : db_del(c->txn, c->s->dbi[DB_LOCKS], name, len, NULL);
    }
    return lock_put(c, name, len, r);
}

/* Make (session, waiter) the holder of the lock described by *r with a new
 * fence and the lock-delay its ACQUIRE asked for, and record the hold in
 * owned. The caller saves *r. */
static int grant(struct apply_ctx *c, const char *name, size_t len, struct lock_rec *r,
                 uint64_t session, uint64_t waiter, int32_t lock_delay_ms)
{
    r->holder_session = session;
    r->holder_waiter = waiter;
    r->fence = c->next_fence++;
    r->granted = c->index;
    r->lock_delay_ms = lock_delay_ms;
    r->delayed = 0;
    return owned_put(c, session, waiter, OWNED_HOLD, 0, name, len);
}

/*
 * The holder of `name` let go (release, expiry, close, forced release), or
 * its lock-delay ended: the holder's owned entry is already gone and the
 * delayed flag clear. Grant the lock to the head of the queue in this same
 * apply and tell the leader (FX_GRANT); a retry of the waiter's ACQUIRE will
 * now report the grant. With nobody queued the lock record is deleted.
 */
static int lock_handoff(struct apply_ctx *c, const char *name, size_t len, struct lock_rec *r)
{
    uint8_t k[WAITER_KEY_MAX];
    struct waiter_rec w;
    struct cmd_result res;
    MDB_cursor *cur;
    MDB_val key, val;
    size_t klen = key_waiter(k, name, len, 0);
    int rc;

    r->holder_session = 0;
    r->holder_waiter = 0;
    r->fence = 0;
    r->granted = 0;
    r->lock_delay_ms = 0;
    rc = mdb_cursor_open(c->txn, c->s->dbi[DB_WAITERS], &cur);
    if (rc != 0) return rc;
    key.mv_size = klen;
    key.mv_data = k;
    rc = mdb_cursor_get(cur, &key, &val, MDB_SET_RANGE);
    /* The first key at or after "name \0 0" is the head, if it has the
     * prefix "name \0"; anything else belongs to another lock. */
    if (rc == 0 && (key.mv_size != klen || memcmp(key.mv_data, k, len + 1) != 0))
        rc = MDB_NOTFOUND;
    if (rc == MDB_NOTFOUND) {
        /* Nobody waits. */
        mdb_cursor_close(cur);
        if (r->n_waiters != 0) return MDB_CORRUPTED;
        return lock_save(c, name, len, r);
    }
    if (rc == 0) rc = waiter_decode(&val, &w);
    if (rc == 0) rc = mdb_cursor_del(cur, 0);
    mdb_cursor_close(cur);
    if (rc != 0) return rc;
    if (r->n_waiters == 0) return MDB_CORRUPTED;
    r->n_waiters--;

    rc = grant(c, name, len, r, w.session, w.waiter, w.lock_delay_ms);
    if (rc == 0) rc = lock_save(c, name, len, r);
    if (rc != 0) return rc;
    res.status = 0;
    res.kind = RESULT_GRANTED;
    res.value = r->fence;
    rc = dedup_update(c, w.session, w.waiter, &res);
    if (rc != 0) return rc;
    return fx_emit(c, FX_GRANT, 0, w.session, w.waiter, r->fence, name, len);
}

/*
 * The lock a command names, read into *r (*found 0 if there is none). A
 * name that cannot be a lock name makes the command's result
 * BATON_EINVAL: callers return when rc or res->status is set.
 */
static int lock_of_cmd(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res,
                       struct lock_rec *r, int *found)
{
    if (!proto_lock_name_ok(cmd->name, cmd->name_len)) {
        res->status = BATON_EINVAL;
        return 0;
    }
    return lock_get(c, cmd->name, cmd->name_len, r, found);
}

/* The holder of r lets the lock go (a release, or an operator's forced
 * release): its hold is forgotten and the lock goes to the queue head. */
static int hold_end(struct apply_ctx *c, const char *name, size_t len, struct lock_rec *r)
{
    int rc = owned_del(c, r->holder_session, r->holder_waiter);

    if (rc == 0) rc = sess_owned_add(c, r->holder_session, -1);
    if (rc == 0) rc = lock_handoff(c, name, len, r);
    return rc;
}

/* Take the waiter enqueued as `enq` out of the queue of `name`, anywhere in
 * it, and save the lock record. */
static int queue_remove(struct apply_ctx *c, const char *name, size_t len, uint64_t enq,
                        struct lock_rec *r)
{
    uint8_t k[WAITER_KEY_MAX];
    size_t klen = key_waiter(k, name, len, enq);
    int found, rc;

    rc = db_del(c->txn, c->s->dbi[DB_WAITERS], k, klen, &found);
    if (rc != 0) return rc;
    if (!found || r->n_waiters == 0) return MDB_CORRUPTED;
    r->n_waiters--;
    return lock_save(c, name, len, r);
}

/* Drop the wait (session, waiter) on name, described by its owned entry o,
 * and every trace of it (queue entry, owned entry, n_owned). */
static int wait_drop(struct apply_ctx *c, uint64_t session, uint64_t waiter,
                     const struct owned_rec *o)
{
    struct lock_rec r;
    int found, rc;

    rc = lock_get(c, o->name, o->name_len, &r, &found);
    if (rc != 0) return rc;
    if (!found) return MDB_CORRUPTED;
    rc = queue_remove(c, o->name, o->name_len, o->enq, &r);
    if (rc == 0) rc = owned_del(c, session, waiter);
    if (rc == 0) rc = sess_owned_add(c, session, -1);
    return rc;
}

#ifdef BATON_TEST_BROKEN_GRANT_ALL
/*
 * DELIBERATELY BROKEN, for the fault harness's selftest only (make
 * fault-selftest builds it into a separate batond; tests/fault/README.md):
 * an ACQUIRE that would have to wait takes the lock from its holder
 * instead, silently -- no LOST push, no effect -- so that everybody is
 * granted at once. The store stays consistent (the old holder's owned
 * entry goes), only the lock's guarantees are gone; the checker must see it.
 */
static int broken_forget_holder(struct apply_ctx *c, struct lock_rec *r)
{
    int rc = owned_del(c, r->holder_session, r->holder_waiter);
    if (rc == 0) rc = sess_owned_add(c, r->holder_session, -1);
    r->holder_session = 0;
    r->holder_waiter = 0;
    return rc;
}
#endif

/*
 * ACQUIRE(session, seq, wait_ms, lock_delay_ms, name). The waiter id is seq.
 * Grants a lock that is free, not delayed and with an empty queue;
 * otherwise fails a try (wait_ms 0) with BATON_EWOULDBLOCK, queueing
 * nothing, or queues the waiter at the tail and answers with its 1-based
 * position. The hold, whenever it is granted, carries lock_delay_ms. A lock
 * is not re-entrant: a second ACQUIRE of a lock the session holds queues
 * behind the holder like any other (several threads of one client may share
 * the session).
 */
int op_acquire(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res)
{
    struct sess_rec sess;
    struct owned_rec o;
    struct lock_rec r;
    uint8_t k[WAITER_KEY_MAX], v[WAITER_VAL_LEN];
    struct waiter_rec w;
    size_t klen;
    uint64_t enq;
    int found, rc;

    if (!proto_lock_name_ok(cmd->name, cmd->name_len) || cmd->wait_ms < BATON_WAIT_FOREVER ||
        cmd->lock_delay_ms < 0 || cmd->seq == 0) {
        res->status = BATON_EINVAL;
        return 0;
    }
    rc = sess_get(c, cmd->session, &sess, &found);
    if (rc != 0) return rc;
    if (!found) {
        res->status = BATON_ESESSION;
        return 0;
    }
    /* Deduplication makes a second ACQUIRE with this seq impossible; refuse
     * one anyway rather than corrupt the owned table. */
    rc = owned_get(c, cmd->session, cmd->seq, &o, &found);
    if (rc != 0) return rc;
    if (found) {
        res->status = BATON_EINVAL;
        return 0;
    }
    if (sess.n_owned >= STORE_MAX_OWNED_PER_SESSION) {
        res->status = BATON_ELIMIT;
        return 0;
    }
    rc = lock_get(c, cmd->name, cmd->name_len, &r, &found);
    if (rc != 0) return rc;
    if (!found) memset(&r, 0, sizeof r);
#ifdef BATON_TEST_BROKEN_GRANT_ALL
    if (r.holder_session != 0 && cmd->wait_ms != BATON_WAIT_TRY &&
        (rc = broken_forget_holder(c, &r)) != 0)
        return rc;
#endif

    if (r.holder_session == 0 && r.n_waiters == 0 && !r.delayed) {
        rc = grant(c, cmd->name, cmd->name_len, &r, cmd->session, cmd->seq, cmd->lock_delay_ms);
        if (rc == 0) rc = lock_put(c, cmd->name, cmd->name_len, &r);
        if (rc != 0) return rc;
        res->kind = RESULT_GRANTED;
        res->value = r.fence;
    } else if (cmd->wait_ms == BATON_WAIT_TRY) {
        res->status = BATON_EWOULDBLOCK;
        return 0;
    } else {
        enq = c->next_enq++;
        w.session = cmd->session;
        w.waiter = cmd->seq;
        w.wait_ms = cmd->wait_ms;
        w.lock_delay_ms = cmd->lock_delay_ms;
        klen = key_waiter(k, cmd->name, cmd->name_len, enq);
        rc = db_put(c->txn, c->s->dbi[DB_WAITERS], k, klen, v, waiter_encode(v, &w));
        if (rc != 0) return rc;
        r.n_waiters++;
        rc = lock_put(c, cmd->name, cmd->name_len, &r);
        if (rc == 0)
            rc = owned_put(c, cmd->session, cmd->seq, OWNED_WAIT, enq, cmd->name, cmd->name_len);
        if (rc != 0) return rc;
        res->kind = RESULT_QUEUED;
        res->value = r.n_waiters;
    }
    sess.n_owned++;
    return sess_put(c, cmd->session, &sess);
}

/*
 * RELEASE(session, seq, fence, name): succeeds only for the current holder,
 * identified by its session and the fence of its grant, so that a client
 * that lost the lock cannot release its successor's hold. The lock goes to
 * the queue head in the same apply. A hold of the session that was forced
 * away (a lost record of that fence and name) answers BATON_ELOST, and the
 * RELEASE is the session's acknowledgement: the record goes. Any other
 * release of a lock not held is BATON_ENOTHELD.
 */
int op_release(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res)
{
    struct lock_rec r;
    int found, rc = lock_of_cmd(c, cmd, res, &r, &found);

    if (rc != 0 || res->status != 0) return rc;
    if (!found || r.holder_session == 0 || r.holder_session != cmd->session ||
        r.fence != cmd->fence) {
        rc = lost_ack(c, cmd->session, cmd->fence, cmd->name, cmd->name_len, &found);
        res->status = found ? BATON_ELOST : BATON_ENOTHELD;
        return rc;
    }
    return hold_end(c, cmd->name, cmd->name_len, &r); /* RESULT_OK (apply_one zeroed res) */
}

/*
 * CANCEL(session, seq, waiter, name): the client gave up waiting (its call
 * timed out or was abandoned). If the waiter still waits it leaves the queue
 * (RESULT_CANCELLED) and the waiter's own ACQUIRE ends with FX_WAIT_FAILED
 * (BATON_ECANCELED): a queued ACQUIRE always ends with exactly one push, and
 * the leader disarms its wait deadline on it. If the grant won the race the
 * caller is told it holds the lock (RESULT_GRANTED with the fence) and must
 * release it. Anything else is BATON_ENOTFOUND.
 */
/*
 * End the wait of (session, waiter), described by o, without a grant: it
 * leaves the queue, a retry of its ACQUIRE gets `status`, and FX_WAIT_FAILED
 * tells the client (and disarms the leader's wait deadline).
 */
static int wait_end(struct apply_ctx *c, uint64_t session, uint64_t waiter,
                    const struct owned_rec *o, int32_t status)
{
    struct cmd_result ended = {.status = status, .kind = RESULT_OK};
    int rc = wait_drop(c, session, waiter, o);

    if (rc == 0) rc = dedup_update(c, session, waiter, &ended);
    if (rc == 0) rc = fx_emit(c, FX_WAIT_FAILED, status, session, waiter, 0, o->name, o->name_len);
    return rc;
}

int op_cancel(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res)
{
    struct owned_rec o;
    struct lock_rec r;
    int found, rc;

    if (!proto_lock_name_ok(cmd->name, cmd->name_len)) {
        res->status = BATON_EINVAL;
        return 0;
    }
    rc = owned_get(c, cmd->session, cmd->waiter, &o, &found);
    if (rc != 0) return rc;
    if (!found || cmd->waiter == 0 || o.name_len != cmd->name_len ||
        memcmp(o.name, cmd->name, cmd->name_len) != 0) {
        res->status = BATON_ENOTFOUND;
        return 0;
    }
    if (o.kind == OWNED_HOLD) {
        rc = lock_get(c, o.name, o.name_len, &r, &found);
        if (rc != 0) return rc;
        if (!found || r.holder_session != cmd->session || r.holder_waiter != cmd->waiter)
            return MDB_CORRUPTED;
        res->kind = RESULT_GRANTED;
        res->value = r.fence;
        return 0;
    }
    rc = wait_end(c, cmd->session, cmd->waiter, &o, BATON_ECANCELED);
    if (rc != 0) return rc;
    res->kind = RESULT_CANCELLED;
    return 0;
}

/*
 * WAIT_TIMEOUT(session, waiter, name), proposed by the leader when a wait
 * deadline passed. If the waiter still waits it leaves the queue with
 * FX_WAIT_FAILED (BATON_ETIMEDOUT); if it was granted (or is gone) in the
 * meantime this is a no-op. RESULT_OK either way.
 */
int op_wait_timeout(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res)
{
    struct owned_rec o;
    int found, rc;

    res->kind = RESULT_OK;
    if (!proto_lock_name_ok(cmd->name, cmd->name_len)) return 0;
    rc = owned_get(c, cmd->session, cmd->waiter, &o, &found);
    if (rc != 0) return rc;
    if (!found || o.kind != OWNED_WAIT || o.name_len != cmd->name_len ||
        memcmp(o.name, cmd->name, cmd->name_len) != 0)
        return 0;
    return wait_end(c, cmd->session, cmd->waiter, &o, BATON_ETIMEDOUT);
}

/*
 * FORCE_RELEASE(name), the forced release of the binaries before
 * FORCE_RELEASE2, kept as it was for the logs that hold it (cmd.h): take
 * the lock from its holder (FX_LOST with BATON_ELOST, so the leader can log
 * it) and hand it to the next waiter at once, whatever the hold's
 * lock-delay, with no lost record. BATON_ENOTHELD if nobody holds it,
 * which includes a delayed lock: its delay is not cut short.
 */
int op_force_release(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res)
{
    struct lock_rec r;
    int found, rc = lock_of_cmd(c, cmd, res, &r, &found);

    if (rc != 0 || res->status != 0) return rc;
    if (!found || r.holder_session == 0) {
        res->status = BATON_ENOTHELD;
        return 0;
    }
    rc = fx_emit(c, FX_LOST, BATON_ELOST, r.holder_session, r.holder_waiter, r.fence, cmd->name,
                 cmd->name_len);
    if (rc == 0) rc = hold_end(c, cmd->name, cmd->name_len, &r);
    return rc; /* RESULT_OK (apply_one zeroed res) */
}

/* Forward: the delayed state of a lock (below, with the expiry that
 * mostly uses it). */
static int lock_delay_start(struct apply_ctx *c, const char *name, size_t len, struct lock_rec *r);

/*
 * The delay of a forced release that waits out the holder's lease
 * (CMD_FORCE_AFTER_LEASE, cmd.h): the session's ttl, within which its
 * client's own count of the lease ends, plus the hold's lock-delay, as an
 * expiry would give it. Bounded to INT32_MAX ms (the field's range).
 */
static int32_t lease_wait_ms(const struct sess_rec *holder, const struct lock_rec *r)
{
    int64_t ms = (int64_t)holder->ttl_ms + r->lock_delay_ms;

    return ms > INT32_MAX ? INT32_MAX : (int32_t)ms;
}

/*
 * FORCE_RELEASE2(fence, wait_ms, name), an administrator's command (cmd.h,
 * "Forced releases"): take the lock from its holder, if it is the hold of
 * `fence` (any hold for 0), leave a lost record that the holder's session
 * acknowledges, and hand the lock on now or after the holder's lease. The
 * hold's slot in the session's n_owned stays with the lost record. FX_LOST
 * (BATON_ELOST) tells the leader to push LOST and whom to log.
 */
int op_force_release2(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res)
{
    struct sess_rec holder;
    struct lock_rec r;
    int found, rc;

    if (cmd->wait_ms != CMD_FORCE_NOW && cmd->wait_ms != CMD_FORCE_AFTER_LEASE) {
        res->status = BATON_EINVAL;
        return 0;
    }
    rc = lock_of_cmd(c, cmd, res, &r, &found);
    if (rc != 0 || res->status != 0) return rc;
    if (!found || r.holder_session == 0 || (cmd->fence != 0 && r.fence != cmd->fence)) {
        res->status = BATON_ENOTHELD;
        res->value = found ? r.fence : 0; /* the hold there is, if any */
        return 0;
    }
    rc = sess_get(c, r.holder_session, &holder, &found);
    if (rc != 0) return rc;
    if (!found) return MDB_CORRUPTED; /* a hold without its session */
    rc = fx_emit(c, FX_LOST, BATON_ELOST, r.holder_session, r.holder_waiter, r.fence, cmd->name,
                 cmd->name_len);
    if (rc == 0)
        rc = lost_put(c, r.holder_session, r.holder_waiter, r.fence, BATON_ELOST, cmd->name,
                      cmd->name_len);
    if (rc == 0) rc = owned_del(c, r.holder_session, r.holder_waiter);
    if (rc != 0) return rc;
    res->value = r.fence;
    if (cmd->wait_ms == CMD_FORCE_AFTER_LEASE && lease_wait_ms(&holder, &r) > 0) {
        r.lock_delay_ms = lease_wait_ms(&holder, &r);
        return lock_delay_start(c, cmd->name, cmd->name_len, &r);
    }
    return lock_handoff(c, cmd->name, cmd->name_len, &r);
}

/*
 * DELAY_END(name), proposed by the leader once a lock-delay has run its
 * course: a delayed lock goes to the head of its queue (FX_GRANT, with a
 * fence above the expired holder's), or is deleted if nobody waits. On any
 * other lock, or a name that is no lock, it is a no-op, so a late or
 * repeated DELAY_END is harmless. RESULT_OK either way.
 */
int op_delay_end(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res)
{
    struct lock_rec r;
    int found, rc;

    res->kind = RESULT_OK;
    if (!proto_lock_name_ok(cmd->name, cmd->name_len)) return 0;
    rc = lock_get(c, cmd->name, cmd->name_len, &r, &found);
    if (rc != 0 || !found || !r.delayed) return rc;
    r.delayed = 0;
    return lock_handoff(c, cmd->name, cmd->name_len, &r);
}

/*
 * An expired hold with a lock-delay, or a hold forced away that waits out
 * its lease: the lock keeps its queue but nobody holds it and nobody is
 * granted it until DELAY_END. r->lock_delay_ms is the delay; the record
 * keeps it so that a new leader can re-arm its timer
 * (store_foreach_delayed_lock).
 */
static int lock_delay_start(struct apply_ctx *c, const char *name, size_t len, struct lock_rec *r)
{
    int rc = fx_emit_lock_delay(c, r->holder_session, r->holder_waiter, r->fence,
                                r->lock_delay_ms, name, len);

    if (rc != 0) return rc;
    r->holder_session = 0;
    r->holder_waiter = 0;
    r->fence = 0;
    r->granted = 0;
    r->delayed = 1;
    return lock_put(c, name, len, r);
}

int locks_drop_owned(struct apply_ctx *c, uint64_t session, uint64_t waiter,
                     const struct owned_rec *o, int32_t lost_status, int expiry)
{
    struct lock_rec r;
    int found, rc;

    rc = lock_get(c, o->name, o->name_len, &r, &found);
    if (rc != 0) return rc;
    if (!found) return MDB_CORRUPTED;
    if (o->kind == OWNED_WAIT) return queue_remove(c, o->name, o->name_len, o->enq, &r);
    if (r.holder_session != session || r.holder_waiter != waiter) return MDB_CORRUPTED;
    if (lost_status != 0) {
        rc = fx_emit(c, FX_LOST, lost_status, session, waiter, r.fence, o->name, o->name_len);
        if (rc != 0) return rc;
    }
    if (expiry && r.lock_delay_ms > 0) return lock_delay_start(c, o->name, o->name_len, &r);
    return lock_handoff(c, o->name, o->name_len, &r);
}
