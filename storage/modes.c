/*
 * modes.c -- what format 7 (lock modes: shared locks, semaphores,
 * reentrancy) added to the store beside locks.c's rules: the session_locks
 * index, and the steps between format 6 and 7 (store_int.h, format 7).
 *
 * session_locks: be64 session, name -> u32 count of the session's owned
 * entries (holds and waits) on that name. op_acquire reads it to tell a
 * session that asks again for a name it holds or waits for (reentrancy,
 * BATON_EDEADLK) without walking the lock's holders and queue; every owned
 * entry that is created or dropped moves it (locks.c).
 */
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "storage/store_int.h"

int session_lock_count(struct apply_ctx *c, uint64_t session, const char *name, size_t len,
                       uint32_t *n)
{
    uint8_t k[SESSION_LOCK_KEY_MAX];
    MDB_val v;
    int found, rc;

    rc = db_get(c->txn, c->s->dbi[DB_SESSION_LOCKS], k, key_session_lock(k, session, name, len),
                &v, &found);
    *n = 0;
    if (rc != 0 || !found) return rc;
    if (v.mv_size != 4) return MDB_CORRUPTED;
    *n = le_get_u32(v.mv_data);
    return 0;
}

/* The same in any transaction (the upgrade's). */
static int count_add(MDB_txn *txn, MDB_dbi dbi, uint64_t session, const char *name, size_t len,
                     int delta)
{
    uint8_t k[SESSION_LOCK_KEY_MAX], nv[4];
    size_t klen = key_session_lock(k, session, name, len);
    MDB_val v;
    int64_t n = 0;
    int found, rc;

    rc = db_get(txn, dbi, k, klen, &v, &found);
    if (rc != 0) return rc;
    if (found) {
        if (v.mv_size != 4) return MDB_CORRUPTED;
        n = le_get_u32(v.mv_data);
    }
    n += delta;
    if (n < 0 || n > UINT32_MAX) return MDB_CORRUPTED;
    if (n == 0) return db_del(txn, dbi, k, klen, NULL);
    le_put_u32(nv, (uint32_t)n);
    return db_put(txn, dbi, k, klen, nv, sizeof nv);
}

int session_lock_add(struct apply_ctx *c, uint64_t session, const char *name, size_t len,
                     int delta)
{
    return count_add(c->txn, c->s->dbi[DB_SESSION_LOCKS], session, name, len, delta);
}

int session_lock_first(struct apply_ctx *c, uint64_t session, const char *name, size_t len)
{
    uint8_t k[SESSION_LOCK_KEY_MAX], nv[4];

    le_put_u32(nv, 1);
    return db_put(c->txn, c->s->dbi[DB_SESSION_LOCKS], k, key_session_lock(k, session, name, len),
                  nv, sizeof nv);
}

/* ---- format 6 <-> 7 ------------------------------------------------------- */

/* Is database db empty? */
static int db_empty(store *s, MDB_txn *txn, int db, int *empty)
{
    MDB_stat st;
    int rc = mdb_stat(txn, s->dbi[db], &st);

    *empty = rc == 0 && st.ms_entries == 0;
    return rc;
}

/*
 * Rewrite every record of database db through fn(key, old value, new
 * value buffer, *new length), in key order. Records are re-read by key
 * after each write (the write may move the cursor's page).
 */
typedef int rewrite_fn(store *s, MDB_txn *txn, const MDB_val *k, const MDB_val *v, uint8_t *out,
                       size_t *out_len);
static int rewrite_db(store *s, MDB_txn *txn, int db, rewrite_fn *fn)
{
    uint8_t key[VAL_MAX + WAITER_KEY_MAX], val[VAL_MAX];
    MDB_cursor *cur;
    MDB_val k, v;
    size_t klen, vlen;
    int rc;

    rc = mdb_cursor_open(txn, s->dbi[db], &cur);
    if (rc != 0) return rc;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE)) {
        if (k.mv_size > sizeof key) {
            rc = MDB_CORRUPTED;
            break;
        }
        klen = k.mv_size;
        memcpy(key, k.mv_data, klen);
        rc = fn(s, txn, &k, &v, val, &vlen);
        if (rc == 0) rc = db_put(txn, s->dbi[db], key, klen, val, vlen);
        if (rc != 0) break;
        /* The next key: the smallest one above this (append a 0 byte). */
        key[klen] = 0;
        k.mv_size = klen + 1;
        k.mv_data = key;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* A lock of format 6 becomes the holders record of its one holder (if
 * any) and a lock record of format 7: an ordinary exclusive lock. */
static int lock_up(store *s, MDB_txn *txn, const MDB_val *k, const MDB_val *v, uint8_t *out,
                   size_t *out_len)
{
    struct lock_rec_v6 o;
    struct lock_rec r = {.limit = 1, .mode = BATON_MODE_EXCLUSIVE};
    struct hold_rec h;
    uint8_t hk[WAITER_KEY_MAX], hv[HOLD_VAL_LEN];
    int rc = lock_decode_v6(v, &o);

    if (rc != 0) return rc;
    if (!proto_lock_name_ok(k->mv_data, k->mv_size)) return MDB_CORRUPTED;
    r.n_waiters = o.n_waiters;
    r.delayed = o.delayed;
    r.lock_delay_ms = o.delayed ? o.lock_delay_ms : 0;
    if (o.holder_session != 0) {
        h.session = o.holder_session;
        h.waiter = o.holder_waiter;
        h.granted = o.granted;
        h.lock_delay_ms = o.lock_delay_ms;
        h.mode = BATON_MODE_EXCLUSIVE;
        h.count = 1;
        h.multi = 0;
        r.n_holders = 1;
        rc = db_put(txn, s->dbi[DB_HOLDERS], hk, key_waiter(hk, k->mv_data, k->mv_size, o.fence),
                    hv, hold_encode(hv, &h));
        if (rc != 0) return rc;
    }
    *out_len = lock_encode(out, &r);
    return 0;
}

/* A waiter of format 6 waits in exclusive mode. */
static int waiter_up(store *s, MDB_txn *txn, const MDB_val *k, const MDB_val *v, uint8_t *out,
                     size_t *out_len)
{
    struct waiter_rec w;
    int rc = waiter_decode_v6(v, &w);

    (void)s, (void)txn, (void)k;
    if (rc != 0) return rc;
    *out_len = waiter_encode(out, &w);
    return 0;
}

/* An owned entry: its session_locks count, and a hold's fence (found by
 * the lock's one holder, whose holders record lock_up wrote). */
static int owned_up(store *s, MDB_txn *txn, const MDB_val *k, const MDB_val *v, uint8_t *out,
                    size_t *out_len)
{
    struct owned_rec o;
    struct hold_rec h;
    uint8_t hk[WAITER_KEY_MAX];
    MDB_cursor *cur;
    MDB_val key, val;
    size_t klen;
    uint64_t session, fence;
    const char *kn;
    size_t kl;
    int rc = owned_decode(v, &o);

    if (rc != 0) return rc;
    if (k->mv_size != 16) return MDB_CORRUPTED;
    session = be_get_u64(k->mv_data);
    rc = count_add(txn, s->dbi[DB_SESSION_LOCKS], session, o.name, o.name_len, 1);
    if (rc != 0) return rc;
    if (o.kind == OWNED_HOLD) {
        klen = key_waiter(hk, o.name, o.name_len, 0);
        key.mv_size = klen;
        key.mv_data = hk;
        rc = mdb_cursor_open(txn, s->dbi[DB_HOLDERS], &cur);
        if (rc != 0) return rc;
        rc = mdb_cursor_get(cur, &key, &val, MDB_SET_RANGE);
        if (rc == 0) rc = key_waiter_split(&key, &kn, &kl, &fence);
        if (rc == 0 && (kl != o.name_len || memcmp(kn, o.name, kl) != 0)) rc = MDB_CORRUPTED;
        if (rc == 0) rc = hold_decode(&val, &h);
        mdb_cursor_close(cur);
        if (rc == MDB_NOTFOUND) rc = MDB_CORRUPTED;
        if (rc != 0) return rc;
        if (h.session != session || h.waiter != be_get_u64((const uint8_t *)k->mv_data + 8))
            return MDB_CORRUPTED;
        o.enq = fence;
    }
    *out_len = owned_encode(out, &o);
    return 0;
}

/*
 * Format 6 -> 7: every lock becomes an ordinary lock (limit 1) whose one
 * holder, if any, holds it exclusively with one handle; every waiter
 * waits exclusively; an owned hold learns its fence; session_locks counts
 * every owned entry. The two new databases must be empty (a format 6
 * store or snapshot has none). The result is byte for byte what a store
 * that applied the same entries in format 7 holds: format 6 knew only
 * exclusive ordinary locks, which format 7 stores this way.
 */
int modes_upgrade(store *s, MDB_txn *txn)
{
    int empty, rc = db_empty(s, txn, DB_HOLDERS, &empty);

    if (rc == 0 && !empty) return MDB_CORRUPTED;
    if (rc == 0) rc = db_empty(s, txn, DB_SESSION_LOCKS, &empty);
    if (rc == 0 && !empty) return MDB_CORRUPTED;
    if (rc == 0) rc = rewrite_db(s, txn, DB_LOCKS, lock_up);
    if (rc == 0) rc = rewrite_db(s, txn, DB_WAITERS, waiter_up);
    if (rc == 0) rc = rewrite_db(s, txn, DB_OWNED, owned_up);
    return rc;
}

/* ---- the test hook's way back (store__downgrade) ------------------------- */

static int lock_down(store *s, MDB_txn *txn, const MDB_val *k, const MDB_val *v, uint8_t *out,
                     size_t *out_len)
{
    struct lock_rec r;
    struct lock_rec_v6 o = {0};
    struct hold_rec h;
    uint8_t hk[WAITER_KEY_MAX];
    MDB_cursor *cur;
    MDB_val key, val;
    const char *kn;
    size_t kl;
    int rc = lock_decode(v, &r);

    if (rc != 0) return rc;
    if (r.limit != 1 || r.n_holders > 1 || (r.n_holders == 1 && r.delayed)) return BATON_EINVAL;
    o.n_waiters = r.n_waiters;
    o.delayed = r.delayed;
    o.lock_delay_ms = r.lock_delay_ms;
    if (r.n_holders == 1) {
        key.mv_size = key_waiter(hk, k->mv_data, k->mv_size, 0);
        key.mv_data = hk;
        rc = mdb_cursor_open(txn, s->dbi[DB_HOLDERS], &cur);
        if (rc != 0) return rc;
        rc = mdb_cursor_get(cur, &key, &val, MDB_SET_RANGE);
        if (rc == 0) rc = key_waiter_split(&key, &kn, &kl, &o.fence);
        if (rc == 0) rc = hold_decode(&val, &h);
        mdb_cursor_close(cur);
        if (rc != 0) return rc;
        if (h.mode != BATON_MODE_EXCLUSIVE || h.count != 1) return BATON_EINVAL;
        o.holder_session = h.session;
        o.holder_waiter = h.waiter;
        o.granted = h.granted;
        o.lock_delay_ms = h.lock_delay_ms;
    }
    *out_len = lock_encode_v6(out, &o);
    return 0;
}

static int waiter_down(store *s, MDB_txn *txn, const MDB_val *k, const MDB_val *v, uint8_t *out,
                       size_t *out_len)
{
    struct waiter_rec w;
    int rc = waiter_decode(v, &w);

    (void)s, (void)txn, (void)k;
    if (rc != 0) return rc;
    if (w.mode != BATON_MODE_EXCLUSIVE) return BATON_EINVAL;
    *out_len = waiter_encode_v6(out, &w);
    return 0;
}

static int owned_down(store *s, MDB_txn *txn, const MDB_val *k, const MDB_val *v, uint8_t *out,
                      size_t *out_len)
{
    struct owned_rec o;
    int rc = owned_decode(v, &o);

    (void)s, (void)txn, (void)k;
    if (rc != 0) return rc;
    if (o.kind == OWNED_HOLD) o.enq = 0;
    *out_len = owned_encode(out, &o);
    return 0;
}

int modes_downgrade(store *s, MDB_txn *txn)
{
    int rc = rewrite_db(s, txn, DB_LOCKS, lock_down);

    if (rc == 0) rc = rewrite_db(s, txn, DB_WAITERS, waiter_down);
    if (rc == 0) rc = rewrite_db(s, txn, DB_OWNED, owned_down);
    if (rc == 0) rc = mdb_drop(txn, s->dbi[DB_HOLDERS], 0);
    if (rc == 0) rc = mdb_drop(txn, s->dbi[DB_SESSION_LOCKS], 0);
    return rc;
}
