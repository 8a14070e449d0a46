/*
 * locks.c -- the lock commands (ACQUIRE, RELEASE, CANCEL, WAIT_TIMEOUT,
 * FORCE_RELEASE, FORCE_RELEASE2, DELAY_END) and the grant loop of the FIFO
 * queue beneath them; lockrec.c reads and writes the records.
 *
 * Four tables describe a lock (store.h, store_int.h):
 *   locks    name -> n_holders, the holders' mode, the limit, n_waiters,
 *            lock_delay_ms, delayed
 *   holders  name \0 be64 fence -> (session, waiter, granted, lock_delay_ms,
 *            mode, count): the set of holds, one per grant
 *   waiters  name \0 be64 enq -> (session, waiter, wait_ms, lock_delay_ms,
 *            mode), the queue
 *   owned    (session, waiter) -> hold (with its fence) or wait (with its
 *            enq), name: the back-index that lets CANCEL, WAIT_TIMEOUT and
 *            session expiry find an entry
 * and session_locks (modes.c) counts each session's entries per name.
 *
 * The rules (docs/design.md, "Lock modes"). A lock's limit, fixed by the
 * request that created its record, is 1 for an ordinary lock and N > 1 for
 * a semaphore. A request is compatible with the holders when
 *   - on an ordinary lock: nobody holds it, or it and every holder are
 *     shared;
 *   - on a semaphore: fewer than N hold it (every holder takes one permit;
 *     a semaphore takes exclusive requests only);
 * and the lock is not delayed. A new request is granted at once only when
 * nobody waits and it is compatible: no barging past the queue. Otherwise
 * it waits at the tail (or a try fails). Whenever a hold ends, a waiter
 * leaves, or a delay ends, grant_waiting grants the queue head while it is
 * compatible, so consecutive shared requests at the head are granted
 * together and a shared request behind a waiting exclusive one waits for
 * it. grant_waiting is the only function that grants a waiter.
 *
 * Queue order is commit order: enq comes from the replicated counter
 * next_enq, never from a clock. Fences come from next_fence, one counter
 * for all locks, so every grant's fence is greater than every earlier one.
 * A waiter is named by its ACQUIRE's seq, which is unique in its session.
 *
 * Reentrancy. Without CMD_ACQ_OWNERS a session has at most one hold or
 * wait per name: a second ACQUIRE of a name the session holds or waits
 * for fails with BATON_EDEADLK at once, unless it is reentrant and the
 * session holds the name: then the hold gains a handle (count + 1, the
 * same fence) and the ACQUIRE is granted at once, whoever waits. An
 * exclusive reentrant request on a shared hold of an ordinary lock is an
 * upgrade, which would wait for itself: BATON_EDEADLK too. Each handle
 * takes a slot of the session's n_owned; each RELEASE of the fence gives
 * one back and the last one ends the hold.
 *
 * Owners (CMD_ACQ_OWNERS; docs/design.md, "Owners"). The session's client
 * tells its owners (threads, tasks) apart and has already refused a
 * request of an owner that holds or waits for the name; so an ACQUIRE
 * with the flag is a new waiter like any other session's even if its
 * session holds or waits for the name: granted at once if compatible and
 * nobody waits, else queued at the tail (a try fails), and the session's
 * count of entries on the name (session_locks) goes up by one. A session
 * may thus have several holds and waits on one name, each its own owned
 * entry, named by its waiter and, once granted, its fence; everything
 * below finds an entry by (session, waiter) or by fence, never by
 * (session, name). With the flag and reentrant, `fence` names the hold
 * re-entered: it must be a hold of this session on this name (else
 * BATON_ENOTHELD, or BATON_ELOST if that hold was forced away and the
 * session has not acknowledged it yet), and the rules of a reentrant
 * request above apply to it (a multi-lock's hold, an upgrade:
 * BATON_EDEADLK). With the flag and not reentrant, fence must be 0
 * (BATON_EINVAL). Without the flag, fence is ignored, as it always was.
 * ACQUIRE_MANY takes no flags: it is refused with BATON_EDEADLK when its
 * session holds or waits for any of its names (multi.c).
 */
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/lockreq.h"
#include "storage/store_int.h"

/* Grant the single-name waiter w, enqueued as enq, at the head of name's
 * queue: it leaves the queue and holds the lock, a retry of its ACQUIRE
 * will report the grant, and FX_GRANT tells the leader. */
static int grant_head(struct apply_ctx *c, const char *name, size_t len, struct lock_rec *r,
                      const struct waiter_rec *w, uint64_t enq)
{
    struct cmd_result res = {.status = 0, .kind = RESULT_GRANTED};
    uint64_t fence;
    int rc = queue_remove(c, name, len, enq, r);

    if (rc == 0)
        rc = hold_add(c, name, len, r, w->session, w->waiter, w->mode, w->lock_delay_ms, &fence);
    if (rc != 0) return rc;
    res.value = fence;
    rc = dedup_update(c, w->session, w->waiter, &res);
    if (rc == 0) rc = fx_emit(c, FX_GRANT, 0, w->session, w->waiter, fence, name, len);
    return rc;
}

/*
 * The one place a waiter is granted: while the head of name's queue is
 * compatible with the holders (and the lock not delayed) -- and, for a
 * multi-lock, heads every queue it is in and fits there too --, it is
 * granted. Then the record is saved (or deleted if nobody is left).
 * Called whenever a hold ends, a waiter leaves or a delay ends; a no-op
 * grant-wise when the head must wait.
 */
static int grant_waiting(struct apply_ctx *c, const char *name, size_t len, struct lock_rec *r)
{
    struct waiter_rec w;
    uint64_t enq;
    int found, granted, rc;

    while (r->n_waiters > 0 && !r->delayed) {
        rc = queue_head(c, name, len, &enq, &w, &found);
        if (rc != 0) return rc;
        if (!found) return MDB_CORRUPTED; /* n_waiters says there is one */
        if (!lock_compatible(r, w.mode)) break;
        if (w.multi) {
            rc = multi_try_grant(c, name, len, r, &w, enq, &granted);
            if (rc != 0) return rc;
            if (!granted) break;
        } else if ((rc = grant_head(c, name, len, r, &w, enq)) != 0) {
            return rc;
        }
    }
    return lock_save(c, name, len, r);
}

/* Load name's record and run grant_waiting on it (nothing if it is gone). */
int locks_regrant(struct apply_ctx *c, const char *name, size_t len)
{
    struct lock_rec r;
    int found, rc = lock_get(c, name, len, &r, &found);

    if (rc != 0 || !found) return rc;
    return grant_waiting(c, name, len, &r);
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

/* The hold h (of `fence`) ends with all its handles, without a grant: its
 * owned entry, its slots in n_owned and its session_locks count go. The
 * caller saves *r (through grant_waiting). */
static int hold_forget(struct apply_ctx *c, const char *name, size_t len, struct lock_rec *r,
                       uint64_t fence, const struct hold_rec *h)
{
    int rc = owned_del(c, h->session, h->waiter);

    if (rc == 0) rc = sess_owned_add(c, h->session, -(int)h->count);
    if (rc == 0) rc = session_lock_add(c, h->session, name, len, -1);
    if (rc == 0) rc = hold_drop(c, name, len, r, fence);
    return rc;
}

/* Drop the wait (session, waiter) on name, described by its owned entry o,
 * and every trace of it (queue entry, owned entry, n_owned, session_locks);
 * the requests behind it may now be granted. */
static int wait_drop(struct apply_ctx *c, uint64_t session, uint64_t waiter,
                     const struct owned_rec *o)
{
    struct lock_rec r;
    int rc = lock_get_existing(c, o->name, o->name_len, &r);

    if (rc == 0) rc = queue_remove(c, o->name, o->name_len, o->enq, &r);
    if (rc == 0) rc = owned_del(c, session, waiter);
    if (rc == 0) rc = sess_owned_add(c, session, -1);
    if (rc == 0) rc = session_lock_add(c, session, o->name, o->name_len, -1);
    if (rc == 0) rc = grant_waiting(c, o->name, o->name_len, &r);
    return rc;
}

#ifdef BATON_TEST_BROKEN_GRANT_ALL
/*
 * DELIBERATELY BROKEN, for the fault harness's selftest only (make
 * fault-selftest builds it into a separate batond; tests/fault/README.md):
 * an ACQUIRE that would have to wait takes the lock from its holders
 * instead, silently -- no LOST push, no effect -- so that everybody is
 * granted at once. The store stays consistent (the old holders' entries
 * go), only the lock's guarantees are gone; the checker must see it.
 */
static int broken_forget_holders(struct apply_ctx *c, const char *name, size_t len,
                                 struct lock_rec *r)
{
    struct hold_rec h;
    uint64_t fence;
    int found, rc;

    while ((rc = hold_next(c, name, len, 0, &fence, &h, &found)) == 0 && found)
        if ((rc = hold_forget(c, name, len, r, fence, &h)) != 0) return rc;
    return rc;
}
#endif

/*
 * Add a handle to the session's hold h (of fence) on the command's name,
 * for a reentrant request: BATON_EDEADLK instead if h is a multi-lock's
 * (it has one handle), if the request is exclusive and h a shared hold of
 * an ordinary lock (an upgrade would wait for itself), or if h has all
 * the handles it can count.
 */
static int hold_enter(struct apply_ctx *c, const struct cmd *cmd, struct lock_rec *r,
                      struct sess_rec *sess, uint64_t fence, struct hold_rec *h,
                      struct cmd_result *res)
{
    int rc;

    res->status = BATON_EDEADLK;
    if (h->multi) return 0;
    if (r->limit == 1 && cmd->mode == BATON_MODE_EXCLUSIVE && h->mode == BATON_MODE_SHARED)
        return 0;
    if (h->count == UINT32_MAX) return 0;
    h->count++;
    rc = hold_put(c, cmd->name, cmd->name_len, fence, h);
    if (rc == 0) rc = lock_put(c, cmd->name, cmd->name_len, r); /* watchers see the count */
    if (rc != 0) return rc;
    res->status = 0;
    res->kind = RESULT_GRANTED;
    res->value = fence;
    sess->n_owned++;
    return sess_put(c, cmd->session, sess);
}

/*
 * A request without CMD_ACQ_OWNERS of a session that already holds or
 * waits for the name (session_locks): a second handle of its hold (its
 * first, in fence order, should owners have left it several) if the
 * request is reentrant and may share the hold (the top of this file),
 * BATON_EDEADLK otherwise.
 */
static int acquire_again(struct apply_ctx *c, const struct cmd *cmd, struct lock_rec *r,
                         struct sess_rec *sess, struct cmd_result *res)
{
    struct hold_rec h;
    uint64_t fence = 0;
    int found, rc;

    res->status = BATON_EDEADLK;
    if (!cmd->reentrant) return 0;
    for (;;) {
        rc = hold_next(c, cmd->name, cmd->name_len, fence, &fence, &h, &found);
        if (rc != 0 || !found) return rc; /* it only waits: EDEADLK */
        if (h.session == cmd->session) break;
    }
    return hold_enter(c, cmd, r, sess, fence, &h, res);
}

/*
 * A reentrant request with CMD_ACQ_OWNERS: a second handle of the hold
 * cmd->fence, which must be this session's on this name (the top of this
 * file); BATON_ENOTHELD otherwise, or BATON_ELOST while the session has a
 * lost record of that fence and name (the RELEASE that acknowledges it
 * is still to come: this request does not).
 */
static int acquire_reenter(struct apply_ctx *c, const struct cmd *cmd, struct lock_rec *r,
                           struct sess_rec *sess, struct cmd_result *res)
{
    struct hold_rec h;
    int found = 0, rc = 0;

    if (cmd->fence != 0) rc = hold_get(c, cmd->name, cmd->name_len, cmd->fence, &h, &found);
    if (rc != 0) return rc;
    if (found && h.session == cmd->session)
        return hold_enter(c, cmd, r, sess, cmd->fence, &h, res);
    rc = lost_has(c, cmd->session, cmd->fence, cmd->name, cmd->name_len, &found);
    res->status = found ? BATON_ELOST : BATON_ENOTHELD;
    return rc;
}

/*
 * ACQUIRE(session, seq, wait_ms, lock_delay_ms, mode, limit, reentrant,
 * name). The waiter id is seq. The limit must be the lock's, if its record
 * exists (else BATON_EINVAL with value = the lock's limit), and a
 * semaphore takes no shared request (BATON_EINVAL, value = its limit). A
 * reentrant request with CMD_ACQ_OWNERS is answered by acquire_reenter; a
 * session that holds or waits for the name, without the flag, by
 * acquire_again. Otherwise (a new waiter, though its session may have
 * others on the name with the flag) a compatible request with nobody
 * waiting is granted; one that
 * is not fails a try (wait_ms 0) with BATON_EWOULDBLOCK, queueing nothing,
 * or queues the waiter at the tail and answers with its 1-based position.
 * The hold, whenever it is granted, carries lock_delay_ms.
 */
int op_acquire(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res)
{
    struct sess_rec sess;
    struct owned_rec o;
    struct lock_rec r;
    uint8_t k[WAITER_KEY_MAX], v[WAITER_VAL_LEN];
    struct waiter_rec w;
    uint32_t limit = cmd->limit > 1 ? cmd->limit : 1, n;
    uint64_t enq, fence;
    int owners = (cmd->flags & CMD_ACQ_OWNERS) != 0, found, rc;

    if (!proto_lock_name_ok(cmd->name, cmd->name_len) || !acquire_fields_ok(cmd) ||
        (owners && !cmd->reentrant && cmd->fence != 0)) {
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
    if (!found) {
        memset(&r, 0, sizeof r);
        r.limit = limit;
    }
    if (r.limit != limit || !lockreq_mode_fits(cmd->mode, limit)) {
        res->status = BATON_EINVAL;
        res->value = r.limit; /* the message quotes it (server/dispatch.c) */
        return 0;
    }
    if (owners && cmd->reentrant) return acquire_reenter(c, cmd, &r, &sess, res);
    rc = session_lock_count(c, cmd->session, cmd->name, cmd->name_len, &n);
    if (rc != 0) return rc;
    if (n > 0 && !owners) return acquire_again(c, cmd, &r, &sess, res);
#ifdef BATON_TEST_BROKEN_GRANT_ALL
    if (r.n_holders != 0 && cmd->wait_ms != BATON_WAIT_TRY &&
        (rc = broken_forget_holders(c, cmd->name, cmd->name_len, &r)) != 0)
        return rc;
#endif

    if (r.n_waiters == 0 && lock_compatible(&r, cmd->mode)) {
        rc = hold_add(c, cmd->name, cmd->name_len, &r, cmd->session, cmd->seq, cmd->mode,
                      cmd->lock_delay_ms, &fence);
        if (rc == 0) rc = lock_put(c, cmd->name, cmd->name_len, &r);
        if (rc != 0) return rc;
        res->kind = RESULT_GRANTED;
        res->value = fence;
    } else if (cmd->wait_ms == BATON_WAIT_TRY) {
        res->status = BATON_EWOULDBLOCK;
        return 0;
    } else {
        enq = c->next_enq++;
        w.session = cmd->session;
        w.waiter = cmd->seq;
        w.wait_ms = cmd->wait_ms;
        w.lock_delay_ms = cmd->lock_delay_ms;
        w.mode = cmd->mode;
        w.multi = 0;
        rc = db_put(c->txn, c->s->dbi[DB_WAITERS], k, key_waiter(k, cmd->name, cmd->name_len, enq),
                    v, waiter_encode(v, &w));
        if (rc != 0) return rc;
        r.n_waiters++;
        rc = lock_put(c, cmd->name, cmd->name_len, &r);
        if (rc == 0)
            rc = owned_put(c, cmd->session, cmd->seq, OWNED_WAIT, 0, enq, cmd->name, cmd->name_len);
        if (rc != 0) return rc;
        res->kind = RESULT_QUEUED;
        res->value = r.n_waiters;
    }
    if (cmd->value_len > 0) { /* the request's value, kept while it waits and holds */
        rc = value_put(c, cmd->session, cmd->seq, cmd->value, cmd->value_len);
        if (rc != 0) return rc;
    }
    /* n is the session's count on this name (0 unless CMD_ACQ_OWNERS:
     * acquire_again answered any other), which nothing above touched. */
    rc = n == 0 ? session_lock_first(c, cmd->session, cmd->name, cmd->name_len)
                : session_lock_add(c, cmd->session, cmd->name, cmd->name_len, 1);
    if (rc != 0) return rc;
    sess.n_owned++;
    return sess_put(c, cmd->session, &sess);
}

/*
 * RELEASE(session, seq, fence, name): succeeds only for a current holder,
 * identified by its session and the fence of its grant, so that a client
 * that lost the lock cannot release its successor's hold. A hold with
 * several handles (reentrancy) loses one; the last one ends it, and the
 * queue head gets the lock in the same apply if it may. A hold of the
 * session that was forced away (a lost record of that fence and name)
 * answers BATON_ELOST, and the RELEASE is the session's acknowledgement:
 * the record goes. Any other release of a lock not held is BATON_ENOTHELD.
 */
int op_release(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res)
{
    struct lock_rec r;
    struct hold_rec h;
    int found, rc = lock_of_cmd(c, cmd, res, &r, &found);

    if (rc != 0 || res->status != 0) return rc;
    if (found) rc = hold_get(c, cmd->name, cmd->name_len, cmd->fence, &h, &found);
    if (rc != 0) return rc;
    if (!found || h.session != cmd->session) {
        rc = lost_ack(c, cmd->session, cmd->fence, cmd->name, cmd->name_len, &found);
        res->status = found ? BATON_ELOST : BATON_ENOTHELD;
        return rc;
    }
    if (h.multi) return multi_release(c, cmd->session, h.waiter, cmd->fence);
    if (h.count > 1) {
        h.count--;
        rc = hold_put(c, cmd->name, cmd->name_len, cmd->fence, &h);
        if (rc == 0) rc = sess_owned_add(c, cmd->session, -1);
        if (rc == 0) rc = lock_put(c, cmd->name, cmd->name_len, &r);
        return rc;
    }
    rc = hold_forget(c, cmd->name, cmd->name_len, &r, cmd->fence, &h);
    if (rc == 0) rc = grant_waiting(c, cmd->name, cmd->name_len, &r);
    return rc; /* RESULT_OK (apply_one zeroed res) */
}

/*
 * End the wait of (session, waiter), described by o, without a grant: it
 * leaves the queue, a retry of its ACQUIRE gets `status`, and FX_WAIT_FAILED
 * tells the client (and disarms the leader's wait deadline). The requests
 * behind it are granted if they now may.
 */
static int wait_end(struct apply_ctx *c, uint64_t session, uint64_t waiter,
                    const struct owned_rec *o, int32_t status)
{
    struct cmd_result ended = {.status = status, .kind = RESULT_OK};
    int rc = fx_emit(c, FX_WAIT_FAILED, status, session, waiter, 0, o->name, o->name_len);

    if (rc == 0) rc = dedup_update(c, session, waiter, &ended);
    if (rc == 0) rc = wait_drop(c, session, waiter, o);
    return rc;
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
int op_cancel(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res)
{
    struct owned_rec o;
    struct hold_rec h;
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
        rc = hold_get(c, o.name, o.name_len, o.enq, &h, &found);
        if (rc != 0) return rc;
        if (!found || h.session != cmd->session || h.waiter != cmd->waiter) return MDB_CORRUPTED;
        res->kind = RESULT_GRANTED;
        res->value = o.enq;
        return 0;
    }
    rc = o.multi ? multi_wait_end(c, cmd->session, cmd->waiter, &o, BATON_ECANCELED)
                 : wait_end(c, cmd->session, cmd->waiter, &o, BATON_ECANCELED);
    if (rc != 0) return rc;
    res->kind = RESULT_CANCELLED;
    return 0;
}

/* RELEASE and CANCEL answer an error exactly when this says 0 (op_release,
 * op_cancel), and a CANCEL that finds the wait granted frees nothing: it
 * only tells the caller it holds the lock. */
int locks_frees(struct apply_ctx *c, const struct cmd *cmd, int *frees)
{
    struct owned_rec o;
    struct hold_rec h;
    int found, rc = 0;

    *frees = 0;
    if (cmd->type == CMD_CLOSE_SESSION) {
        *frees = 1;
        return 0;
    }
    if ((cmd->type != CMD_RELEASE && cmd->type != CMD_CANCEL) ||
        !proto_lock_name_ok(cmd->name, cmd->name_len))
        return 0;
    if (cmd->type == CMD_RELEASE) {
        rc = hold_get(c, cmd->name, cmd->name_len, cmd->fence, &h, &found);
        if (rc == 0 && found && h.session == cmd->session) *frees = 1;
        if (rc == 0 && !*frees)
            rc = lost_has(c, cmd->session, cmd->fence, cmd->name, cmd->name_len, frees);
        return rc;
    }
    if (cmd->waiter == 0) return 0;
    rc = owned_get(c, cmd->session, cmd->waiter, &o, &found);
    if (rc == 0 && found && o.kind == OWNED_WAIT && o.name_len == cmd->name_len &&
        memcmp(o.name, cmd->name, cmd->name_len) == 0)
        *frees = 1;
    return rc;
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
    if (o.multi) return multi_wait_end(c, cmd->session, cmd->waiter, &o, BATON_ETIMEDOUT);
    return wait_end(c, cmd->session, cmd->waiter, &o, BATON_ETIMEDOUT);
}

/*
 * FORCE_RELEASE(name), the forced release of the binaries before
 * FORCE_RELEASE2, kept as it was for the logs that hold it (cmd.h): take
 * the lock from its holders (FX_LOST with BATON_ELOST for each, so the
 * leader can log it) and hand it to the next waiters at once, whatever the
 * holds' lock-delay, with no lost record. BATON_ENOTHELD if nobody holds
 * it. (Logs of those binaries hold only exclusive locks: one holder.)
 */
int op_force_release(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res)
{
    struct lock_rec r;
    struct hold_rec h;
    uint64_t fence;
    int found, rc = lock_of_cmd(c, cmd, res, &r, &found);

    if (rc != 0 || res->status != 0) return rc;
    if (!found || r.n_holders == 0) {
        res->status = BATON_ENOTHELD;
        return 0;
    }
    while ((rc = hold_next(c, cmd->name, cmd->name_len, 0, &fence, &h, &found)) == 0 && found) {
        if (h.multi) {
            rc = multi_force(c, cmd->name, cmd->name_len, &r, fence, &h, 0);
        } else {
            rc = fx_emit(c, FX_LOST, BATON_ELOST, h.session, h.waiter, fence, cmd->name,
                         cmd->name_len);
            if (rc == 0) rc = hold_forget(c, cmd->name, cmd->name_len, &r, fence, &h);
        }
        if (rc != 0) return rc;
    }
    if (rc == 0) rc = grant_waiting(c, cmd->name, cmd->name_len, &r);
    return rc; /* RESULT_OK (apply_one zeroed res) */
}

/*
 * The delay of a forced release that waits out the holder's lease
 * (CMD_FORCE_AFTER_LEASE, cmd.h): the session's ttl, within which its
 * client's own count of the lease ends, plus the hold's lock-delay, as an
 * expiry would give it. Bounded to INT32_MAX ms (the field's range).
 */
static int32_t lease_wait_ms(const struct sess_rec *holder, const struct hold_rec *h)
{
    int64_t ms = (int64_t)holder->ttl_ms + h->lock_delay_ms;

    return ms > INT32_MAX ? INT32_MAX : (int32_t)ms;
}

/* One hold taken by FORCE_RELEASE2: FX_LOST, the lost record (which keeps
 * one slot of n_owned; the other handles' slots are given back), and the
 * hold's entries. */
static int hold_force(struct apply_ctx *c, const struct cmd *cmd, struct lock_rec *r,
                      uint64_t fence, const struct hold_rec *h)
{
    int rc = fx_emit(c, FX_LOST, BATON_ELOST, h->session, h->waiter, fence, cmd->name,
                     cmd->name_len);

    if (rc == 0)
        rc = lost_put(c, h->session, h->waiter, fence, BATON_ELOST, cmd->name, cmd->name_len);
    if (rc == 0) rc = owned_del(c, h->session, h->waiter);
    if (rc == 0 && h->count > 1) rc = sess_owned_add(c, h->session, -(int)(h->count - 1));
    if (rc == 0) rc = session_lock_add(c, h->session, cmd->name, cmd->name_len, -1);
    if (rc == 0) rc = hold_drop(c, cmd->name, cmd->name_len, r, fence);
    return rc;
}

/*
 * FORCE_RELEASE2(fence, wait_ms, name), an administrator's command (cmd.h,
 * "Forced releases"): take the lock from its holders -- the hold of
 * `fence`, or every hold for 0 --, leave a lost record for each that its
 * session acknowledges, and hand the lock on now or after the holders'
 * leases (the longest). FX_LOST (BATON_ELOST) tells the leader to push
 * LOST and whom to log. value: the (highest) fence taken; on
 * BATON_ENOTHELD, the first holder's fence (0: nobody holds it).
 */
int op_force_release2(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res)
{
    struct sess_rec holder;
    struct lock_rec r;
    struct hold_rec h;
    uint64_t fence = 0, first = 0, last_s = 0, last_w = 0;
    int32_t wait = 0;
    int found, rc;

    if (cmd->wait_ms != CMD_FORCE_NOW && cmd->wait_ms != CMD_FORCE_AFTER_LEASE) {
        res->status = BATON_EINVAL;
        return 0;
    }
    rc = lock_of_cmd(c, cmd, res, &r, &found);
    if (rc != 0 || res->status != 0) return rc;
    if (found && r.n_holders > 0) rc = hold_next(c, cmd->name, cmd->name_len, 0, &first, &h, &found);
    else found = 0;
    if (rc != 0) return rc;
    if (found && cmd->fence != 0) rc = hold_get(c, cmd->name, cmd->name_len, cmd->fence, &h, &found);
    if (rc != 0) return rc;
    if (!found) {
        res->status = BATON_ENOTHELD;
        res->value = first; /* the hold there is, if any */
        return 0;
    }
    fence = cmd->fence != 0 ? cmd->fence : first;
    for (;;) {
        rc = sess_get(c, h.session, &holder, &found);
        if (rc != 0) return rc;
        if (!found) return MDB_CORRUPTED; /* a hold without its session */
        if (lease_wait_ms(&holder, &h) > wait) wait = lease_wait_ms(&holder, &h);
        if (h.multi)
            rc = multi_force(c, cmd->name, cmd->name_len, &r, fence, &h,
                             cmd->wait_ms == CMD_FORCE_AFTER_LEASE ? lease_wait_ms(&holder, &h) : 0);
        else
            rc = hold_force(c, cmd, &r, fence, &h);
        if (rc != 0) return rc;
        res->value = fence;
        last_s = h.session;
        last_w = h.waiter;
        if (cmd->fence != 0) break;
        rc = hold_next(c, cmd->name, cmd->name_len, fence, &fence, &h, &found);
        if (rc != 0) return rc;
        if (!found) break;
    }
    if (cmd->wait_ms == CMD_FORCE_AFTER_LEASE && wait > 0)
        return lock_delay_start(c, cmd->name, cmd->name_len, &r, last_s, last_w, res->value, wait);
    return grant_waiting(c, cmd->name, cmd->name_len, &r);
}

/*
 * DELAY_END(name), proposed by the leader once a lock-delay has run its
 * course: the queue head of a delayed lock is granted if it may (FX_GRANT,
 * with a fence above the expired holder's), or the record is deleted if
 * nobody holds or waits. On any other lock, or a name that is no lock, it
 * is a no-op, so a late or repeated DELAY_END is harmless. RESULT_OK
 * either way.
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
    r.lock_delay_ms = 0;
    return grant_waiting(c, cmd->name, cmd->name_len, &r);
}

/*
 * A wait leaves its queue without granting anybody (the caller, ending the
 * session, regrants once all of the session's entries are gone:
 * locks_regrant); a hold is dropped, after FX_LOST when lost_status is set,
 * and the lock is delayed (expiry with a lock-delay) or handed on.
 */
int locks_drop_owned(struct apply_ctx *c, uint64_t session, uint64_t waiter,
                     const struct owned_rec *o, int32_t lost_status, int expiry)
{
    struct lock_rec r;
    struct hold_rec h;
    int found, rc;

    if (o->multi) return multi_drop_owned(c, session, waiter, o, lost_status, expiry);
    rc = lock_get_existing(c, o->name, o->name_len, &r);
    if (rc == 0) rc = session_lock_add(c, session, o->name, o->name_len, -1);
    if (rc != 0) return rc;
    if (o->kind == OWNED_WAIT) {
        rc = queue_remove(c, o->name, o->name_len, o->enq, &r);
        return rc != 0 ? rc : lock_save(c, o->name, o->name_len, &r);
    }
    rc = hold_get(c, o->name, o->name_len, o->enq, &h, &found);
    if (rc != 0) return rc;
    if (!found || h.session != session || h.waiter != waiter) return MDB_CORRUPTED;
    if (lost_status != 0) {
        rc = fx_emit(c, FX_LOST, lost_status, session, waiter, o->enq, o->name, o->name_len);
        if (rc != 0) return rc;
    }
    rc = hold_drop(c, o->name, o->name_len, &r, o->enq);
    if (rc != 0) return rc;
    if (expiry && h.lock_delay_ms > 0)
        return lock_delay_start(c, o->name, o->name_len, &r, session, waiter, o->enq,
                                h.lock_delay_ms);
    return grant_waiting(c, o->name, o->name_len, &r);
}
