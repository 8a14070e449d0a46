/*
 * lockrec.c -- the records of a lock (locks.c's top comment has the four
 * tables and the rules): the lock record, its holds, its queue and the
 * owned back-index, read and written; the compatibility rule; and the
 * start of a lock-delay. Below locks.c and multi.c, which both grant,
 * queue and release through these.
 */
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/lockreq.h"
#include "storage/store_int.h"

int lock_get(struct apply_ctx *c, const char *name, size_t len, struct lock_rec *r, int *found)
{
    MDB_val v;
    int rc = db_get(c->txn, c->s->dbi[DB_LOCKS], name, len, &v, found);

    if (rc != 0 || !*found) return rc;
    return lock_decode(&v, r);
}

int lock_get_existing(struct apply_ctx *c, const char *name, size_t len, struct lock_rec *r)
{
    int found, rc = lock_get(c, name, len, r, &found);

    return rc != 0 ? rc : found ? 0 : MDB_CORRUPTED;
}

int acquire_fields_ok(const struct cmd *cmd)
{
    struct lockreq r = {.wait_ms = cmd->wait_ms, .lock_delay_ms = cmd->lock_delay_ms,
                        .mode = cmd->mode, .limit = cmd->limit, .reentrant = cmd->reentrant};
    const char *why;

    /* The leader resolved the lock-delay (never "none" or "default" here). */
    return cmd->lock_delay_ms >= 0 && cmd->seq != 0 && lockreq_fields_check(&r, &why) == 0;
}

/* Every change of a lock record goes through lock_put or lock_save, and
 * every change of a queue or of the holders saves its lock record too: so
 * these two are where FX_LOCK_CHANGED is emitted (once per lock per entry). */
int lock_put(struct apply_ctx *c, const char *name, size_t len, const struct lock_rec *r)
{
    uint8_t v[LOCK_VAL_LEN];
    int rc = fx_lock_changed(c, name, len);

    if (rc != 0) return rc;
    return db_put(c->txn, c->s->dbi[DB_LOCKS], name, len, v, lock_encode(v, r));
}

/* Store the lock record, or delete it once nobody holds or waits and no
 * delay runs (its limit goes with it). */
int lock_save(struct apply_ctx *c, const char *name, size_t len, const struct lock_rec *r)
{
    if (r->n_holders == 0 && r->n_waiters == 0 && !r->delayed) {
        int rc = fx_lock_changed(c, name, len);
        return rc != 0 ? rc : db_del(c->txn, c->s->dbi[DB_LOCKS], name, len, NULL);
    }
    return lock_put(c, name, len, r);
}

int owned_get(struct apply_ctx *c, uint64_t session, uint64_t waiter, struct owned_rec *o,
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

int owned_put(struct apply_ctx *c, uint64_t session, uint64_t waiter, uint8_t kind, uint8_t multi,
              uint64_t enq, const char *name, size_t len)
{
    struct owned_rec o;
    uint8_t k[16], v[VAL_MAX];

    o.kind = kind;
    o.multi = multi;
    o.enq = enq;
    o.name_len = (uint16_t)len;
    memcpy(o.name, name, len);
    key_pair(k, session, waiter);
    return db_put(c->txn, c->s->dbi[DB_OWNED], k, sizeof k, v, owned_encode(v, &o));
}

int owned_del(struct apply_ctx *c, uint64_t session, uint64_t waiter)
{
    uint8_t k[16];
    int rc;

    key_pair(k, session, waiter);
    rc = db_del(c->txn, c->s->dbi[DB_OWNED], k, sizeof k, NULL);
    return rc != 0 ? rc : value_del(c, session, waiter); /* a value ends with its request */
}

/* ---- holders -------------------------------------------------------------- */

int hold_get(struct apply_ctx *c, const char *name, size_t len, uint64_t fence,
             struct hold_rec *h, int *found)
{
    uint8_t k[WAITER_KEY_MAX];
    MDB_val v;
    int rc = db_get(c->txn, c->s->dbi[DB_HOLDERS], k, key_waiter(k, name, len, fence), &v, found);

    if (rc != 0 || !*found) return rc;
    return hold_decode(&v, h);
}

int hold_put(struct apply_ctx *c, const char *name, size_t len, uint64_t fence,
             const struct hold_rec *h)
{
    uint8_t k[WAITER_KEY_MAX], v[HOLD_VAL_LEN];

    return db_put(c->txn, c->s->dbi[DB_HOLDERS], k, key_waiter(k, name, len, fence), v,
                  hold_encode(v, h));
}

/* Forget the hold of `fence` (it must exist): the caller saves *r. */
int hold_drop(struct apply_ctx *c, const char *name, size_t len, struct lock_rec *r,
              uint64_t fence)
{
    uint8_t k[WAITER_KEY_MAX];
    int found, rc;

    rc = db_del(c->txn, c->s->dbi[DB_HOLDERS], k, key_waiter(k, name, len, fence), &found);
    if (rc != 0) return rc;
    if (!found || r->n_holders == 0) return MDB_CORRUPTED;
    r->n_holders--;
    return 0;
}

/*
 * The first record of table `db` (DB_HOLDERS or DB_WAITERS, keyed "name \0
 * be64(n)") of lock name with n >= from: 0 with *found set, n in *n and
 * the value in *val (valid until the transaction's next write). A key
 * with another name's prefix belongs to another lock: not found.
 */
static int lock_key_first(struct apply_ctx *c, int db, const char *name, size_t len,
                          uint64_t from, uint64_t *n, MDB_val *val, int *found)
{
    uint8_t k[WAITER_KEY_MAX];
    const char *kn;
    size_t kl;
    MDB_cursor *cur;
    MDB_val key;
    int rc;

    *found = 0;
    key.mv_size = key_waiter(k, name, len, from);
    key.mv_data = k;
    rc = mdb_cursor_open(c->txn, c->s->dbi[db], &cur);
    if (rc != 0) return rc;
    rc = mdb_cursor_get(cur, &key, val, MDB_SET_RANGE);
    if (rc == 0) rc = key_waiter_split(&key, &kn, &kl, n);
    if (rc == 0 && kl == len && memcmp(kn, name, len) == 0) *found = 1;
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/*
 * The first hold of name with a fence above `after` (in fence order): 0
 * with *found set, its fence in *fence. Used to walk every holder and to
 * find a session's hold (modes are rare enough, and a lock's holders few
 * enough, that the walk is cheap; the common paths never walk).
 */
int hold_next(struct apply_ctx *c, const char *name, size_t len, uint64_t after,
              uint64_t *fence, struct hold_rec *h, int *found)
{
    MDB_val val;
    int rc;

    *found = 0;
    if (after == UINT64_MAX) return 0;
    rc = lock_key_first(c, DB_HOLDERS, name, len, after + 1, fence, &val, found);
    return rc == 0 && *found ? hold_decode(&val, h) : rc;
}

/* Can a request of `mode` be granted beside the holders of r (the queue
 * aside)? The rules at the top of locks.c. */
int lock_compatible(const struct lock_rec *r, uint8_t mode)
{
    if (r->delayed) return 0;
    if (r->limit > 1) return r->n_holders < r->limit;
    if (r->n_holders == 0) return 1;
    return mode == BATON_MODE_SHARED && r->mode == BATON_MODE_SHARED;
}

/*
 * Make (session, waiter) a holder of the lock described by *r, in `mode`,
 * with a new fence and the lock-delay its ACQUIRE asked for, and record the
 * hold in owned (over its wait, if it waited). The caller saves *r.
 */
int hold_add(struct apply_ctx *c, const char *name, size_t len, struct lock_rec *r,
             uint64_t session, uint64_t waiter, uint8_t mode, int32_t lock_delay_ms,
             uint64_t *fence)
{
    struct hold_rec h = {.session = session, .waiter = waiter, .granted = c->index,
                         .lock_delay_ms = lock_delay_ms, .mode = mode, .count = 1};
    int rc;

    *fence = c->next_fence++;
    rc = hold_put(c, name, len, *fence, &h);
    if (rc != 0) return rc;
    r->n_holders++;
    r->mode = mode;
    return owned_put(c, session, waiter, OWNED_HOLD, 0, *fence, name, len);
}

/* The first waiter of name's queue (the lowest enqueue number). */
int queue_head(struct apply_ctx *c, const char *name, size_t len, uint64_t *enq,
               struct waiter_rec *w, int *found)
{
    MDB_val val;
    int rc = lock_key_first(c, DB_WAITERS, name, len, 0, enq, &val, found);

    return rc == 0 && *found ? waiter_decode(&val, w) : rc;
}

/* Take the waiter enqueued as `enq` out of the queue of `name`, anywhere in
 * it. The caller saves *r. */
int queue_remove(struct apply_ctx *c, const char *name, size_t len, uint64_t enq,
                 struct lock_rec *r)
{
    uint8_t k[WAITER_KEY_MAX];
    size_t klen = key_waiter(k, name, len, enq);
    int found, rc;

    rc = db_del(c->txn, c->s->dbi[DB_WAITERS], k, klen, &found);
    if (rc != 0) return rc;
    if (!found || r->n_waiters == 0) return MDB_CORRUPTED;
    r->n_waiters--;
    return 0;
}

/*
 * The lock gets no grant until DELAY_END: an expired hold with a
 * lock-delay, or holds forced away that wait out their lease. The record
 * keeps the delay (the longest of those that run) so that a new leader can
 * re-arm its timer (store_foreach_delayed_lock); other holders keep their
 * holds. FX_LOCK_DELAY names the hold (session, waiter, fence) that
 * started it.
 */
int lock_delay_start(struct apply_ctx *c, const char *name, size_t len, struct lock_rec *r,
                     uint64_t session, uint64_t waiter, uint64_t fence, int32_t delay_ms)
{
    int rc = fx_emit_lock_delay(c, session, waiter, fence, delay_ms, name, len);

    if (rc != 0) return rc;
    if (!r->delayed || delay_ms > r->lock_delay_ms) r->lock_delay_ms = delay_ms;
    r->delayed = 1;
    return lock_put(c, name, len, r);
}
