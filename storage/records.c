/*
 * records.c -- the byte layout of the store's keys and values, small
 * helpers over single LMDB databases (u64 meta values among them), and
 * store__err, the translation of internal codes into BATON_E*.
 *
 * Keys use big-endian integers so that LMDB's byte order is numeric order
 * (a session's owned entries and dedup entries are then contiguous and
 * sorted by waiter or seq, and a lock's queue is sorted by enqueue counter).
 * Values use little-endian, like the rest of baton's formats. Every decoder
 * checks the length and reports MDB_CORRUPTED on a mismatch, which the
 * callers turn into BATON_EIO.
 */
#include <errno.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "proto/lockreq.h"
#include "storage/store_int.h"

/* Every value fits the buffers callers size with VAL_MAX. */
_Static_assert(SESS_VAL_MAX <= VAL_MAX, "a session record fits VAL_MAX");
_Static_assert(BATON_MAX_PRINCIPAL <= UINT8_MAX, "an owner's length fits its u8");

void key_u64(uint8_t k[8], uint64_t a)
{
    be_put_u64(k, a);
}

void key_pair(uint8_t k[16], uint64_t a, uint64_t b)
{
    be_put_u64(k, a);
    be_put_u64(k + 8, b);
}

/* The nonce first, big-endian like every integer key, then the owner's
 * bytes (storage/nonces.c). */
size_t key_nonce(uint8_t k[NONCE_KEY_MAX], uint64_t nonce, const char *owner, size_t owner_len)
{
    be_put_u64(k, nonce);
    if (owner_len > 0) memcpy(k + 8, owner, owner_len);
    return 8 + owner_len;
}

/* A lock name never contains a NUL (names are validated before they get
 * here), so "name \0" is a prefix that no other lock's keys share. */
size_t key_waiter(uint8_t k[WAITER_KEY_MAX], const char *name, size_t name_len, uint64_t enq)
{
    memcpy(k, name, name_len);
    k[name_len] = 0;
    be_put_u64(k + name_len + 1, enq);
    return name_len + 9;
}

int key_waiter_split(const MDB_val *k, const char **name, size_t *name_len, uint64_t *enq)
{
    const uint8_t *p = k->mv_data;

    if (k->mv_size < 10 || k->mv_size > WAITER_KEY_MAX || p[k->mv_size - 9] != 0)
        return MDB_CORRUPTED;
    *name = (const char *)p;
    *name_len = k->mv_size - 9;
    *enq = be_get_u64(p + k->mv_size - 8);
    return 0;
}

/* The fields before the owner, the same in every format since 2. */
static void sess_fixed_put(uint8_t *p, const struct sess_rec *r)
{
    le_put_u32(p, r->ttl_ms);
    le_put_u64(p + 4, r->created);
    le_put_u32(p + 12, r->n_owned);
    le_put_u64(p + 16, r->ack_floor);
}

static void sess_fixed_get(const uint8_t *p, struct sess_rec *r)
{
    r->ttl_ms = le_get_u32(p);
    r->created = le_get_u64(p + 4);
    r->n_owned = le_get_u32(p + 12);
    r->ack_floor = le_get_u64(p + 16);
}

size_t sess_encode(uint8_t *p, const struct sess_rec *r)
{
    sess_fixed_put(p, r);
    p[SESS_VAL_FIXED_V4] = r->owner_len;
    memcpy(p + SESS_VAL_FIXED, r->owner, r->owner_len);
    memcpy(p + SESS_VAL_FIXED + r->owner_len, r->name, r->name_len);
    return SESS_VAL_FIXED + r->owner_len + r->name_len;
}

int sess_decode(const MDB_val *v, struct sess_rec *r)
{
    const uint8_t *p = v->mv_data;
    size_t rest;

    if (v->mv_size < SESS_VAL_FIXED) return MDB_CORRUPTED;
    rest = v->mv_size - SESS_VAL_FIXED;
    if (p[SESS_VAL_FIXED_V4] > BATON_MAX_PRINCIPAL || p[SESS_VAL_FIXED_V4] > rest)
        return MDB_CORRUPTED;
    r->owner_len = p[SESS_VAL_FIXED_V4];
    rest -= r->owner_len;
    if (rest > BATON_MAX_CLIENT_NAME) return MDB_CORRUPTED;
    sess_fixed_get(p, r);
    memcpy(r->owner, p + SESS_VAL_FIXED, r->owner_len);
    r->name_len = (uint16_t)rest;
    memcpy(r->name, p + SESS_VAL_FIXED + r->owner_len, r->name_len);
    return 0;
}

int sess_decode_v4(const MDB_val *v, struct sess_rec *r)
{
    const uint8_t *p = v->mv_data;

    if (v->mv_size < SESS_VAL_FIXED_V4 || v->mv_size > SESS_VAL_FIXED_V4 + BATON_MAX_CLIENT_NAME)
        return MDB_CORRUPTED;
    sess_fixed_get(p, r);
    r->owner_len = 0;
    r->name_len = (uint16_t)(v->mv_size - SESS_VAL_FIXED_V4);
    memcpy(r->name, p + SESS_VAL_FIXED_V4, r->name_len);
    return 0;
}

size_t sess_encode_v4(uint8_t *p, const struct sess_rec *r)
{
    sess_fixed_put(p, r);
    memcpy(p + SESS_VAL_FIXED_V4, r->name, r->name_len);
    return SESS_VAL_FIXED_V4 + r->name_len;
}

/* The upgraded record is byte for byte the one an OPEN_SESSION without an
 * owner writes in this format, so that an upgraded store and one that
 * applied the same entries afresh hold (and snapshot) the same bytes. */
int sess_upgrade(const MDB_val *old, uint8_t *p, size_t *len)
{
    struct sess_rec r;
    int rc = sess_decode_v4(old, &r);

    if (rc != 0) return rc;
    *len = sess_encode(p, &r);
    return 0;
}

size_t key_session_lock(uint8_t k[SESSION_LOCK_KEY_MAX], uint64_t session, const char *name,
                        size_t name_len)
{
    be_put_u64(k, session);
    memcpy(k + 8, name, name_len);
    return 8 + name_len;
}

size_t lock_encode(uint8_t *p, const struct lock_rec *r)
{
    le_put_u32(p, r->n_holders);
    p[4] = r->mode;
    le_put_u32(p + 5, r->limit);
    le_put_u32(p + 9, r->n_waiters);
    le_put_u32(p + 13, (uint32_t)r->lock_delay_ms);
    p[17] = r->delayed;
    return LOCK_VAL_LEN;
}

/* A mode other than the two, a limit of 0 or above BATON_MAX_LIMIT, a
 * shared semaphore, more holders than the limit allows or a record of
 * nobody and nothing is corrupt. */
int lock_decode(const MDB_val *v, struct lock_rec *r)
{
    const uint8_t *p = v->mv_data;

    if (v->mv_size != LOCK_VAL_LEN) return MDB_CORRUPTED;
    r->n_holders = le_get_u32(p);
    r->mode = p[4];
    r->limit = le_get_u32(p + 5);
    r->n_waiters = le_get_u32(p + 9);
    r->lock_delay_ms = (int32_t)le_get_u32(p + 13);
    r->delayed = p[17];
    if (r->lock_delay_ms < 0 || r->delayed > 1 || r->mode >= LOCKREQ_N_MODES ||
        r->limit == 0 || r->limit > BATON_MAX_LIMIT ||
        (r->limit > 1 && (!lockreq_mode_fits(r->mode, r->limit) || r->n_holders > r->limit)) ||
        (r->limit == 1 && r->mode == BATON_MODE_EXCLUSIVE && r->n_holders > 1) ||
        (r->n_holders == 0 && r->n_waiters == 0 && !r->delayed))
        return MDB_CORRUPTED;
    return 0;
}

size_t lock_encode_v6(uint8_t *p, const struct lock_rec_v6 *r)
{
    le_put_u64(p, r->holder_session);
    le_put_u64(p + 8, r->holder_waiter);
    le_put_u64(p + 16, r->fence);
    le_put_u64(p + 24, r->granted);
    le_put_u32(p + 32, r->n_waiters);
    le_put_u32(p + 36, (uint32_t)r->lock_delay_ms);
    p[40] = r->delayed;
    return LOCK_VAL_LEN_V6;
}

int lock_decode_v6(const MDB_val *v, struct lock_rec_v6 *r)
{
    const uint8_t *p = v->mv_data;

    if (v->mv_size != LOCK_VAL_LEN_V6) return MDB_CORRUPTED;
    r->holder_session = le_get_u64(p);
    r->holder_waiter = le_get_u64(p + 8);
    r->fence = le_get_u64(p + 16);
    r->granted = le_get_u64(p + 24);
    r->n_waiters = le_get_u32(p + 32);
    r->lock_delay_ms = (int32_t)le_get_u32(p + 36);
    r->delayed = p[40];
    if (r->lock_delay_ms < 0 || r->delayed > 1 || (r->delayed && r->holder_session != 0))
        return MDB_CORRUPTED;
    return 0;
}

size_t hold_encode(uint8_t *p, const struct hold_rec *r)
{
    le_put_u64(p, r->session);
    le_put_u64(p + 8, r->waiter);
    le_put_u64(p + 16, r->granted);
    le_put_u32(p + 24, (uint32_t)r->lock_delay_ms);
    p[28] = (uint8_t)(r->mode | (r->multi ? REC_MULTI_FLAG : 0));
    le_put_u32(p + 29, r->count);
    return HOLD_VAL_LEN;
}

int hold_decode(const MDB_val *v, struct hold_rec *r)
{
    const uint8_t *p = v->mv_data;

    if (v->mv_size != HOLD_VAL_LEN) return MDB_CORRUPTED;
    r->session = le_get_u64(p);
    r->waiter = le_get_u64(p + 8);
    r->granted = le_get_u64(p + 16);
    r->lock_delay_ms = (int32_t)le_get_u32(p + 24);
    r->mode = p[28] & (uint8_t)~REC_MULTI_FLAG;
    r->multi = (p[28] & REC_MULTI_FLAG) != 0;
    r->count = le_get_u32(p + 29);
    if (r->lock_delay_ms < 0 || r->mode >= LOCKREQ_N_MODES || r->count == 0 || r->session == 0 ||
        (r->multi && r->count != 1))
        return MDB_CORRUPTED;
    return 0;
}

size_t waiter_encode(uint8_t *p, const struct waiter_rec *r)
{
    waiter_encode_v6(p, r);
    p[WAITER_VAL_LEN_V6] = (uint8_t)(r->mode | (r->multi ? REC_MULTI_FLAG : 0));
    return WAITER_VAL_LEN;
}

int waiter_decode(const MDB_val *v, struct waiter_rec *r)
{
    MDB_val v6 = {WAITER_VAL_LEN_V6, v->mv_data};
    int rc;

    if (v->mv_size != WAITER_VAL_LEN) return MDB_CORRUPTED;
    rc = waiter_decode_v6(&v6, r);
    if (rc != 0) return rc;
    r->mode = ((const uint8_t *)v->mv_data)[WAITER_VAL_LEN_V6];
    r->multi = (r->mode & REC_MULTI_FLAG) != 0;
    r->mode &= (uint8_t)~REC_MULTI_FLAG;
    return r->mode >= LOCKREQ_N_MODES ? MDB_CORRUPTED : 0;
}

size_t waiter_encode_v6(uint8_t *p, const struct waiter_rec *r)
{
    le_put_u64(p, r->session);
    le_put_u64(p + 8, r->waiter);
    le_put_u64(p + 16, (uint64_t)r->wait_ms);
    le_put_u32(p + 24, (uint32_t)r->lock_delay_ms);
    return WAITER_VAL_LEN_V6;
}

int waiter_decode_v6(const MDB_val *v, struct waiter_rec *r)
{
    const uint8_t *p = v->mv_data;

    if (v->mv_size != WAITER_VAL_LEN_V6) return MDB_CORRUPTED;
    r->session = le_get_u64(p);
    r->waiter = le_get_u64(p + 8);
    r->wait_ms = (int64_t)le_get_u64(p + 16);
    r->lock_delay_ms = (int32_t)le_get_u32(p + 24);
    r->mode = BATON_MODE_EXCLUSIVE;
    r->multi = 0;
    if (r->lock_delay_ms < 0) return MDB_CORRUPTED;
    return 0;
}

size_t owned_encode(uint8_t *p, const struct owned_rec *r)
{
    p[0] = (uint8_t)(r->kind | (r->multi ? REC_MULTI_FLAG : 0));
    le_put_u64(p + 1, r->enq);
    memcpy(p + OWNED_VAL_FIXED, r->name, r->name_len);
    return OWNED_VAL_FIXED + r->name_len;
}

int owned_decode(const MDB_val *v, struct owned_rec *r)
{
    const uint8_t *p = v->mv_data;

    if (v->mv_size <= OWNED_VAL_FIXED || v->mv_size > OWNED_VAL_FIXED + BATON_MAX_NAME)
        return MDB_CORRUPTED;
    r->kind = p[0] & (uint8_t)~REC_MULTI_FLAG;
    r->multi = (p[0] & REC_MULTI_FLAG) != 0;
    if (r->kind != OWNED_HOLD && r->kind != OWNED_WAIT) return MDB_CORRUPTED;
    r->enq = le_get_u64(p + 1);
    r->name_len = (uint16_t)(v->mv_size - OWNED_VAL_FIXED);
    memcpy(r->name, p + OWNED_VAL_FIXED, r->name_len);
    return 0;
}

size_t lost_encode(uint8_t *p, const struct lost_rec *r)
{
    le_put_u64(p, r->waiter);
    le_put_u32(p + 8, (uint32_t)r->status);
    memcpy(p + LOST_VAL_FIXED, r->name, r->name_len);
    return LOST_VAL_FIXED + r->name_len;
}

/* The name must be a lock name; the status a BATON_E* code (below 0). */
int lost_decode(const MDB_val *v, struct lost_rec *r)
{
    const uint8_t *p = v->mv_data;

    if (v->mv_size <= LOST_VAL_FIXED || v->mv_size > LOST_VAL_FIXED + BATON_MAX_NAME)
        return MDB_CORRUPTED;
    r->waiter = le_get_u64(p);
    r->status = (int32_t)le_get_u32(p + 8);
    r->name_len = (uint16_t)(v->mv_size - LOST_VAL_FIXED);
    memcpy(r->name, p + LOST_VAL_FIXED, r->name_len);
    if (r->status >= 0 || !proto_lock_name_ok(r->name, r->name_len)) return MDB_CORRUPTED;
    return 0;
}

size_t dedup_encode(uint8_t *p, const struct cmd_result *r)
{
    le_put_u32(p, (uint32_t)r->status);
    p[4] = r->kind;
    le_put_u64(p + 5, r->value);
    return DEDUP_VAL_LEN;
}

int dedup_decode(const MDB_val *v, struct cmd_result *r)
{
    const uint8_t *p = v->mv_data;

    if (v->mv_size != DEDUP_VAL_LEN) return MDB_CORRUPTED;
    r->status = (int32_t)le_get_u32(p);
    r->kind = p[4];
    r->value = le_get_u64(p + 5);
    return 0;
}

int db_get(MDB_txn *txn, MDB_dbi dbi, const void *k, size_t klen, MDB_val *v, int *found)
{
    MDB_val key = {klen, (void *)k};
    int rc = mdb_get(txn, dbi, &key, v);

    if (found != NULL) *found = rc == 0;
    return rc == MDB_NOTFOUND ? 0 : rc;
}

int db_put(MDB_txn *txn, MDB_dbi dbi, const void *k, size_t klen, const void *v, size_t vlen)
{
    MDB_val key = {klen, (void *)k};
    MDB_val val = {vlen, (void *)v};

    return mdb_put(txn, dbi, &key, &val, 0);
}

int db_del(MDB_txn *txn, MDB_dbi dbi, const void *k, size_t klen, int *found)
{
    MDB_val key = {klen, (void *)k};
    int rc = mdb_del(txn, dbi, &key, NULL);

    if (found != NULL) *found = rc == 0;
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/*
 * Delete the keys in [lo, hi). Used to drop a session's dedup entries below
 * its ack_below, or all of them when it ends. After each delete the cursor
 * seeks again from lo rather than stepping: that does not depend on where
 * LMDB leaves a cursor after mdb_cursor_del (for instance once the tree has
 * become empty), and costs one O(log n) seek per deleted key.
 */
int db_del_range(MDB_txn *txn, MDB_dbi dbi, const void *lo, const void *hi, size_t klen)
{
    MDB_cursor *cur;
    MDB_val k, v;
    int rc;

    rc = mdb_cursor_open(txn, dbi, &cur);
    if (rc != 0) return rc;
    for (;;) {
        k.mv_size = klen;
        k.mv_data = (void *)lo;
        rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
        if (rc != 0) break;
        if (k.mv_size != klen || memcmp(k.mv_data, hi, klen) >= 0) break;
        rc = mdb_cursor_del(cur, 0);
        if (rc != 0) break;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

int store__err(int rc)
{
    if (rc == 0) return 0;
    if (rc >= BATON_ERRNO_MIN && rc <= BATON_ERRNO_MAX) return rc; /* already ours */
    if (rc == ENOMEM) return BATON_ENOMEM;
    if (rc == ENOSPC) return BATON_ENOSPC;
    if (rc == ECANCELED) return BATON_ECANCELED;
    return BATON_EIO;
}

int meta_get_u64(store *s, MDB_txn *txn, const char *key, uint64_t *v, int *found)
{
    MDB_val val;
    int f, rc = db_get(txn, s->dbi[DB_META], key, strlen(key), &val, &f);

    if (found != NULL) *found = f;
    *v = 0;
    if (rc != 0 || !f) return rc;
    if (val.mv_size != 8) return MDB_CORRUPTED;
    *v = le_get_u64(val.mv_data);
    return 0;
}

/* The committed feature level (level.c): the meta key "level", absent
 * (level 1) until the first SET_LEVEL. */
int level_get(store *s, MDB_txn *txn, uint64_t *level)
{
    int found, rc = meta_get_u64(s, txn, META_LEVEL, level, &found);

    if (rc == 0 && !found) *level = 1;
    return rc;
}

uint64_t store_format_at(uint64_t level)
{
    return level >= STORE_LEVEL_VALUES ? STORE_FORMAT : STORE_FORMAT_NO_VALUES;
}

int meta_put_u64(store *s, MDB_txn *txn, const char *key, uint64_t v)
{
    uint8_t b[8];

    le_put_u64(b, v);
    return db_put(txn, s->dbi[DB_META], key, strlen(key), b, sizeof b);
}
