/*
 * reads.c -- the read side of the store: lock info and lock listings for the
 * admin requests, the session listing, a session's owner, and the walks a
 * new leader makes over sessions, timed waiters and delayed locks. Each
 * call runs in its own short read transaction, opened and closed within
 * the call, so that no reader stays open across loop turns (an open reader
 * pins old pages and would block growing the map).
 *
 * Callbacks run inside the read transaction: the names and owners they get
 * point into LMDB's map or a record copied from it, and are valid only for
 * the duration of the call.
 */
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "storage/store_int.h"

static int read_begin(store *s, MDB_txn **txn)
{
    return mdb_txn_begin(s->env, NULL, MDB_RDONLY, txn);
}

/*
 * Collect up to max waiters of `name`, head first, into a malloc'd array.
 * The queue is the range of waiters keys that start with "name \0".
 */
static int collect_waiters(store *s, MDB_txn *txn, const char *name, size_t name_len,
                           uint32_t max, struct msg_waiter **out, uint32_t *n)
{
    uint8_t k[WAITER_KEY_MAX];
    struct waiter_rec w;
    MDB_cursor *cur;
    MDB_val key, val;
    size_t klen = key_waiter(k, name, name_len, 0);
    int rc;

    *out = NULL;
    *n = 0;
    if (max == 0) return 0;
    *out = malloc(sizeof **out * max);
    if (*out == NULL) return BATON_ENOMEM;
    rc = mdb_cursor_open(txn, s->dbi[DB_WAITERS], &cur);
    if (rc != 0) return rc;
    key.mv_size = klen;
    key.mv_data = k;
    for (rc = mdb_cursor_get(cur, &key, &val, MDB_SET_RANGE); rc == 0 && *n < max;
         rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT)) {
        if (key.mv_size != klen || memcmp(key.mv_data, k, name_len + 1) != 0) break;
        rc = waiter_decode(&val, &w);
        if (rc != 0) break;
        (*out)[*n].session = w.session;
        (*out)[*n].waiter = w.waiter;
        (*out)[*n].wait_ms = w.wait_ms;
        (*out)[*n].mode = w.mode;
        (*n)++;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Collect up to max holders of `name`, in fence order, into a malloc'd
 * array (the holders keys that start with "name \0"). */
static int collect_holders(store *s, MDB_txn *txn, const char *name, size_t name_len,
                           uint32_t max, struct msg_holder **out, uint32_t *n)
{
    uint8_t k[WAITER_KEY_MAX];
    struct hold_rec h;
    MDB_cursor *cur;
    MDB_val key, val;
    size_t klen = key_waiter(k, name, name_len, 0);
    const char *kn;
    size_t kl;
    int rc;

    *out = NULL;
    *n = 0;
    if (max == 0) return 0;
    *out = malloc(sizeof **out * max);
    if (*out == NULL) return BATON_ENOMEM;
    rc = mdb_cursor_open(txn, s->dbi[DB_HOLDERS], &cur);
    if (rc != 0) return rc;
    key.mv_size = klen;
    key.mv_data = k;
    for (rc = mdb_cursor_get(cur, &key, &val, MDB_SET_RANGE); rc == 0 && *n < max;
         rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT)) {
        struct msg_holder *o = &(*out)[*n];
        if (key.mv_size != klen || memcmp(key.mv_data, k, name_len + 1) != 0) break;
        rc = key_waiter_split(&key, &kn, &kl, &o->fence);
        if (rc == 0) rc = hold_decode(&val, &h);
        if (rc != 0) break;
        o->session = h.session;
        o->waiter = h.waiter;
        o->granted_index = h.granted;
        o->mode = h.mode;
        o->count = h.count;
        (*n)++;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* The first holder of name (fence order) into *h, *fence; *found 0 if none. */
static int first_holder(store *s, MDB_txn *txn, const char *name, size_t name_len,
                        struct msg_holder *first, int *found)
{
    struct msg_holder *one;
    uint32_t n;
    int rc = collect_holders(s, txn, name, name_len, 1, &one, &n);

    *found = rc == 0 && n == 1;
    if (*found) *first = one[0];
    free(one);
    return rc;
}

void store_lock_info_free(struct msg_lock_info_r *info)
{
    free(info->holders);
    free(info->waiters);
    info->holders = NULL;
    info->waiters = NULL;
    info->n_holders = 0;
    info->n_waiters = 0;
}

int store_lock_info(store *s, const char *name, size_t name_len, uint32_t max_list,
                    struct msg_lock_info_r *info)
{
    struct lock_rec r;
    struct pstr lock = info->lock;
    MDB_txn *txn;
    MDB_val v;
    uint32_t max_waiters = max_list, max_holders = max_list;
    int found, rc;

    memset(info, 0, sizeof *info);
    info->lock = lock; /* documented as left unset */
    /* A name that cannot be a lock (empty, with a NUL, too long) names a
     * lock that is free and has no waiters. */
    if (!proto_lock_name_ok(name, name_len)) return 0;
    rc = read_begin(s, &txn);
    if (rc != 0) return store__err(rc);
    rc = db_get(txn, s->dbi[DB_LOCKS], name, name_len, &v, &found);
    if (rc == 0 && found) rc = lock_decode(&v, &r);
    if (rc == 0 && found) {
        info->held = r.n_holders != 0;
        info->mode = r.n_holders != 0 ? r.mode : 0;
        info->limit = r.limit;
        info->total_holders = r.n_holders;
        info->total_waiters = r.n_waiters;
        info->delayed = r.delayed;
        if (max_waiters > r.n_waiters) max_waiters = r.n_waiters;
        if (max_holders < 1) max_holders = 1; /* the first holder's fields need it */
        if (max_holders > r.n_holders) max_holders = r.n_holders;
        rc = collect_holders(s, txn, name, name_len, max_holders, &info->holders,
                             &info->n_holders);
        if (rc == 0 && info->n_holders > 0) {
            info->holder_session = info->holders[0].session;
            info->holder_waiter = info->holders[0].waiter;
            info->fence = info->holders[0].fence;
            info->granted_index = info->holders[0].granted_index;
        }
        if (rc == 0 && info->n_holders > max_list) { /* only the first was wanted */
            info->n_holders = max_list;
        }
        if (rc == 0)
            rc = collect_waiters(s, txn, name, name_len, max_waiters, &info->waiters,
                                 &info->n_waiters);
    }
    mdb_txn_abort(txn);
    if (rc != 0) {
        store_lock_info_free(info);
        return store__err(rc);
    }
    return 0;
}

int store_list_locks(store *s, const char *prefix, size_t prefix_len, uint32_t limit,
                     store_lock_cb *cb, void *data, int *more)
{
    struct msg_lock_summary sum;
    struct msg_holder first;
    int found;
    struct lock_rec r;
    MDB_cursor *cur;
    MDB_txn *txn;
    MDB_val k, v;
    uint32_t n = 0;
    int rc;

    *more = 0;
    /* No lock name is longer than BATON_MAX_NAME, so neither is a prefix
     * that matches anything (and LMDB refuses over-long keys). */
    if (prefix_len > BATON_MAX_NAME) return 0;
    rc = read_begin(s, &txn);
    if (rc != 0) return store__err(rc);
    rc = mdb_cursor_open(txn, s->dbi[DB_LOCKS], &cur);
    if (rc != 0) {
        mdb_txn_abort(txn);
        return store__err(rc);
    }
    k.mv_size = prefix_len;
    k.mv_data = (void *)prefix;
    rc = mdb_cursor_get(cur, &k, &v, prefix_len > 0 ? MDB_SET_RANGE : MDB_FIRST);
    for (; rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size < prefix_len || memcmp(k.mv_data, prefix, prefix_len) != 0) break;
        if (n == limit) {
            *more = 1;
            break;
        }
        rc = lock_decode(&v, &r);
        if (rc != 0) break;
        memset(&sum, 0, sizeof sum);
        sum.n_waiters = r.n_waiters;
        sum.n_holders = r.n_holders;
        sum.limit = r.limit;
        sum.mode = r.n_holders != 0 ? r.mode : 0;
        if (r.n_holders != 0) {
            rc = first_holder(s, txn, k.mv_data, k.mv_size, &first, &found);
            if (rc == 0 && !found) rc = MDB_CORRUPTED;
            if (rc != 0) break;
            sum.holder_session = first.session;
            sum.fence = first.fence;
        }
        rc = cb(data, k.mv_data, k.mv_size, &sum);
        if (rc != 0) {
            mdb_cursor_close(cur);
            mdb_txn_abort(txn);
            return rc; /* the callback's own code */
        }
        n++;
    }
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    return rc == MDB_NOTFOUND ? 0 : store__err(rc);
}

/*
 * Visit one record of a table walk. Returns 0 to go on. A record that does
 * not decode stops the walk with its MDB_* code; a caller's callback that
 * returns non-zero stops it with that value, and *user is then set so that
 * walk_table hands the value back untranslated.
 */
typedef int walk_fn(void *ctx, const MDB_val *k, const MDB_val *v, int *user);

/* Walk every record of table `db` in key order in one short read
 * transaction. Returns 0, a BATON_E* code, or a callback's value. */
static int walk_table(store *s, int db, walk_fn *fn, void *ctx)
{
    MDB_cursor *cur;
    MDB_txn *txn;
    MDB_val k, v;
    int rc, user = 0;

    rc = read_begin(s, &txn);
    if (rc != 0) return store__err(rc);
    rc = mdb_cursor_open(txn, s->dbi[db], &cur);
    if (rc == 0) {
        for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
             rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
            rc = fn(ctx, &k, &v, &user);
            if (rc != 0) break;
        }
        mdb_cursor_close(cur);
    }
    mdb_txn_abort(txn);
    if (user) return rc;
    return rc == MDB_NOTFOUND ? 0 : store__err(rc);
}

/* The caller's callback (one of them is set) and its data, for the walks
 * below. */
struct walk_cb {
    store_waiter_cb *waiter;
    store_delayed_cb *delayed;
    store_session_cb *session;
    void *data;
};

static int visit_timed_waiter(void *ctx, const MDB_val *k, const MDB_val *v, int *user)
{
    struct walk_cb *w = ctx;
    struct waiter_rec r;
    const char *name;
    size_t name_len;
    uint64_t enq;
    int rc;

    rc = key_waiter_split(k, &name, &name_len, &enq);
    if (rc == 0) rc = waiter_decode(v, &r);
    if (rc != 0 || r.wait_ms <= 0) return rc;
    rc = w->waiter(w->data, r.session, r.waiter, r.wait_ms, name, name_len);
    *user = rc != 0;
    return rc;
}

int store_foreach_timed_waiter(store *s, store_waiter_cb *cb, void *data)
{
    struct walk_cb w = {.waiter = cb, .data = data};
    return walk_table(s, DB_WAITERS, visit_timed_waiter, &w);
}

static int visit_delayed_lock(void *ctx, const MDB_val *k, const MDB_val *v, int *user)
{
    struct walk_cb *w = ctx;
    struct lock_rec r;
    int rc = lock_decode(v, &r);

    if (rc != 0 || !r.delayed) return rc;
    rc = w->delayed(w->data, k->mv_data, k->mv_size, r.lock_delay_ms);
    *user = rc != 0;
    return rc;
}

/* A walk over the whole locks table: a new leader makes it once, and the
 * table holds only locks that are held, wanted or delayed. */
int store_foreach_delayed_lock(store *s, store_delayed_cb *cb, void *data)
{
    struct walk_cb w = {.delayed = cb, .data = data};
    return walk_table(s, DB_LOCKS, visit_delayed_lock, &w);
}

static int visit_session(void *ctx, const MDB_val *k, const MDB_val *v, int *user)
{
    struct walk_cb *w = ctx;
    struct sess_rec r;
    int rc;

    if (k->mv_size != 8) return MDB_CORRUPTED;
    rc = sess_decode(v, &r);
    if (rc != 0) return rc;
    rc = w->session(w->data, be_get_u64(k->mv_data), r.ttl_ms, r.owner, r.owner_len);
    *user = rc != 0;
    return rc;
}

int store_foreach_session(store *s, store_session_cb *cb, void *data)
{
    struct walk_cb w = {.session = cb, .data = data};
    return walk_table(s, DB_SESSIONS, visit_session, &w);
}

int store_session_exists(store *s, uint64_t session)
{
    uint8_t k[8];
    MDB_txn *txn;
    MDB_val v;
    int found, rc;

    rc = read_begin(s, &txn);
    if (rc != 0) return store__err(rc);
    key_u64(k, session);
    rc = db_get(txn, s->dbi[DB_SESSIONS], k, sizeof k, &v, &found);
    mdb_txn_abort(txn);
    if (rc != 0) return store__err(rc);
    return found;
}

int store_cmd_frees(store *s, const struct cmd *cmd)
{
    struct apply_ctx c = {.s = s};
    uint8_t k[16];
    MDB_val v;
    int found = 0, rc;

    if (read_begin(s, &c.txn) != 0) return 0;
    key_pair(k, cmd->session, cmd->seq);
    rc = db_get(c.txn, s->dbi[DB_DEDUP], k, sizeof k, &v, &found);
    if (rc == 0 && !found) rc = locks_frees(&c, cmd, &found);
    mdb_txn_abort(c.txn);
    return rc == 0 && found;
}

int store_nonce_session(store *s, uint64_t nonce, const char *owner, size_t owner_len,
                        uint64_t *session)
{
    MDB_txn *txn;
    int found = 0, rc;

    *session = 0;
    if (nonce == 0 || owner_len > BATON_MAX_PRINCIPAL) return BATON_ENOTFOUND;
    rc = read_begin(s, &txn);
    if (rc != 0) return store__err(rc);
    rc = nonce_find(s, txn, nonce, owner, owner_len, session, &found);
    mdb_txn_abort(txn);
    if (rc != 0) return store__err(rc);
    return found ? 0 : BATON_ENOTFOUND;
}

int store_session_owner(store *s, uint64_t session, char *out, size_t cap, size_t *len)
{
    struct sess_rec r;
    uint8_t k[8];
    MDB_txn *txn;
    MDB_val v;
    int found, rc;

    if (len != NULL) *len = 0;
    if (cap < BATON_MAX_PRINCIPAL + 1) return BATON_EINVAL;
    out[0] = '\0';
    rc = read_begin(s, &txn);
    if (rc != 0) return store__err(rc);
    key_u64(k, session);
    rc = db_get(txn, s->dbi[DB_SESSIONS], k, sizeof k, &v, &found);
    if (rc == 0 && found) rc = sess_decode(&v, &r);
    mdb_txn_abort(txn);
    if (rc != 0) return store__err(rc);
    if (!found) return BATON_ENOTFOUND;
    memcpy(out, r.owner, r.owner_len);
    out[r.owner_len] = '\0';
    if (len != NULL) *len = r.owner_len;
    return 0;
}

/*
 * Count the holds and the waits of one session: the owned keys that start
 * with be64(session). The cursor belongs to the caller's read transaction.
 */
static int count_owned(MDB_cursor *cur, uint64_t session, uint32_t *holds, uint32_t *waits)
{
    uint8_t lo[16];
    struct owned_rec o;
    MDB_val k, v;
    int rc;

    *holds = 0;
    *waits = 0;
    key_pair(lo, session, 0);
    k.mv_size = sizeof lo;
    k.mv_data = lo;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != 16) return MDB_CORRUPTED;
        if (memcmp(k.mv_data, lo, 8) != 0) break;
        rc = owned_decode(&v, &o);
        if (rc != 0) return rc;
        if (o.kind == OWNED_HOLD)
            (*holds)++;
        else
            (*waits)++;
    }
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* One session's summary to cb, its holds and waits counted with the
 * caller's cursor on the owned table; *walked grows by what that walked.
 * An LMDB code, or 0 with cb's own return in *cb_rc. */
static int emit_session(MDB_cursor *owned, const MDB_val *k, const MDB_val *v,
                        store_session_info_cb *cb, void *data, uint64_t *walked, int *cb_rc)
{
    uint64_t session = be_get_u64(k->mv_data);
    struct sess_rec r;
    uint32_t holds, waits;
    int rc;

    rc = sess_decode(v, &r);
    if (rc == 0) rc = count_owned(owned, session, &holds, &waits);
    if (rc != 0) return rc;
    *walked += (uint64_t)holds + waits + 1;
    *cb_rc = cb(data, session, r.ttl_ms, r.created, r.name, r.name_len, r.owner, r.owner_len,
                holds, waits);
    return 0;
}

/* A page ends at its limit, or once it has walked STORE_LIST_WALK_MAX
 * records (sessions and the holds and waits counted for them). */
static bool page_full(uint32_t n, uint32_t limit, uint64_t walked)
{
    return n == limit || walked >= STORE_LIST_WALK_MAX;
}

int store_list_sessions(store *s, uint64_t after, uint32_t limit, store_session_info_cb *cb,
                        void *data, int *more)
{
    MDB_cursor *cur = NULL, *owned = NULL;
    uint8_t start[8];
    uint32_t n = 0;
    uint64_t walked = 0;
    MDB_txn *txn;
    MDB_val k, v;
    int rc, cb_rc = 0;

    *more = 0;
    if (after == UINT64_MAX) return 0;
    rc = read_begin(s, &txn);
    if (rc != 0) return store__err(rc);
    rc = mdb_cursor_open(txn, s->dbi[DB_SESSIONS], &cur);
    if (rc == 0) rc = mdb_cursor_open(txn, s->dbi[DB_OWNED], &owned);
    if (rc != 0) goto out;
    /* Keys are big-endian ids, so key order is id order. */
    key_u64(start, after + 1);
    k.mv_size = sizeof start;
    k.mv_data = start;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != 8) {
            rc = MDB_CORRUPTED;
            break;
        }
        if (page_full(n, limit, walked)) {
            *more = 1;
            break;
        }
        rc = emit_session(owned, &k, &v, cb, data, &walked, &cb_rc);
        if (rc != 0 || cb_rc != 0) break;
        n++;
    }
out:
    if (owned != NULL) mdb_cursor_close(owned);
    if (cur != NULL) mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    if (cb_rc != 0) return cb_rc; /* the callback's own code */
    return rc == 0 || rc == MDB_NOTFOUND ? 0 : store__err(rc);
}

int store_session_summaries(store *s, const uint64_t *ids, size_t n_ids,
                            store_session_info_cb *cb, void *data, size_t *done)
{
    MDB_cursor *owned = NULL;
    uint64_t walked = 0;
    uint8_t key[8];
    MDB_txn *txn;
    MDB_val v;
    size_t i = 0;
    int rc, found, cb_rc = 0;

    *done = 0;
    rc = read_begin(s, &txn);
    if (rc != 0) return store__err(rc);
    rc = mdb_cursor_open(txn, s->dbi[DB_OWNED], &owned);
    for (; rc == 0 && cb_rc == 0 && i < n_ids && walked < STORE_LIST_WALK_MAX; i++) {
        MDB_val k = {.mv_size = sizeof key, .mv_data = key};

        key_u64(key, ids[i]);
        rc = db_get(txn, s->dbi[DB_SESSIONS], key, sizeof key, &v, &found);
        if (rc == 0 && found) rc = emit_session(owned, &k, &v, cb, data, &walked, &cb_rc);
    }
    if (owned != NULL) mdb_cursor_close(owned);
    mdb_txn_abort(txn);
    *done = i;
    if (cb_rc != 0) return cb_rc;
    return rc == 0 ? 0 : store__err(rc);
}
