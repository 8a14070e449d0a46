/*
 * lost.c -- the lost table: holds taken away from a live session without
 * its RELEASE (a forced release), kept until the session acknowledges
 * them, so that its client learns of every one even if the LOST push
 * never reached it (store.h, "Lost holds").
 *
 *   lost   be64 session, be64 fence -> waiter, status, name (store_int.h)
 *
 * Keyed by session first, so a session's records are one key range: the
 * keepalive's count, the LOST_HOLDS listing and the deletion when the
 * session ends are range walks. A fence names one hold for ever (fences
 * are never reused), so (session, fence) names one record.
 *
 * Bound. A record keeps the slot in the session's n_owned of the hold it
 * replaces, until it is acknowledged: a session's holds, waits and
 * unacknowledged lost holds together stay within
 * STORE_MAX_OWNED_PER_SESSION. A forced release therefore never fails for
 * want of room (it trades a hold for a record), and a client that never
 * acknowledges only stops itself from acquiring more (BATON_ELIMIT).
 *
 * This table is format 6's (store_int.h, STORE_FORMAT): lost_upgrade is
 * its step of the upgrade of older stores, snapshot.c restores older
 * snapshots with it empty.
 */
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "storage/store_int.h"

int lost_put(struct apply_ctx *c, uint64_t session, uint64_t waiter, uint64_t fence,
             int32_t status, const char *name, size_t name_len)
{
    struct lost_rec r = {.waiter = waiter, .status = status, .name_len = (uint16_t)name_len};
    uint8_t k[16], v[VAL_MAX];

    memcpy(r.name, name, name_len);
    key_pair(k, session, fence);
    return db_put(c->txn, c->s->dbi[DB_LOST], k, sizeof k, v, lost_encode(v, &r));
}

int lost_has(struct apply_ctx *c, uint64_t session, uint64_t fence, const char *name,
              size_t name_len, int *found)
{
    struct lost_rec r;
    uint8_t k[16];
    MDB_val v;
    int rc;

    key_pair(k, session, fence);
    rc = db_get(c->txn, c->s->dbi[DB_LOST], k, sizeof k, &v, found);
    if (rc != 0 || !*found) return rc;
    rc = lost_decode(&v, &r);
    if (rc != 0) return rc;
    if (r.name_len != name_len || memcmp(r.name, name, name_len) != 0)
        *found = 0; /* another lock's fence: not this record */
    return 0;
}

int lost_ack(struct apply_ctx *c, uint64_t session, uint64_t fence, const char *name,
             size_t name_len, int *found)
{
    uint8_t k[16];
    int rc = lost_has(c, session, fence, name, name_len, found);

    if (rc != 0 || !*found) return rc;
    key_pair(k, session, fence);
    rc = db_del(c->txn, c->s->dbi[DB_LOST], k, sizeof k, NULL);
    if (rc == 0) rc = sess_owned_add(c, session, -1);
    return rc;
}

int lost_drop_session(struct apply_ctx *c, uint64_t session)
{
    uint8_t lo[16], hi[16];
    int rc;

    key_pair(lo, session, 0);
    if (session != UINT64_MAX) {
        key_pair(hi, session + 1, 0);
        return db_del_range(c->txn, c->s->dbi[DB_LOST], lo, hi, sizeof lo);
    }
    /* No (session + 1, 0) bound: the range stops short of the largest key,
     * deleted apart. */
    key_pair(hi, session, UINT64_MAX);
    rc = db_del_range(c->txn, c->s->dbi[DB_LOST], lo, hi, sizeof lo);
    return rc != 0 ? rc : db_del(c->txn, c->s->dbi[DB_LOST], hi, sizeof hi, NULL);
}

/*
 * Format 5 -> 6. env_open has created the table, empty, and empty is
 * right: no binary of format 5 recorded a lost hold (its forced releases,
 * CMD_FORCE_RELEASE, record none, cmd.h). So there is nothing to rewrite;
 * the step exists so that the upgrade names what it brings and where.
 */
int lost_upgrade(store *s, MDB_txn *txn)
{
    MDB_stat st;
    int rc = mdb_stat(txn, s->dbi[DB_LOST], &st);

    if (rc != 0) return rc;
    return st.ms_entries == 0 ? 0 : MDB_CORRUPTED;
}

/* ---- reads for the leader (short read transactions) ------------------ */

/*
 * Walk session's records with fence > after, in fence order, calling
 * fn(data, fence, rec) until it returns non-zero (1: stop, fine) or the
 * records run out. An internal code.
 */
typedef int lost_walk_fn(void *data, uint64_t fence, const struct lost_rec *r);

static int lost_walk(store *s, MDB_txn *txn, uint64_t session, uint64_t after, lost_walk_fn *fn,
                     void *data)
{
    MDB_cursor *cur;
    MDB_val k, v;
    uint8_t lo[16];
    struct lost_rec r;
    int rc, stop = 0;

    if (after == UINT64_MAX) return 0;
    rc = mdb_cursor_open(txn, s->dbi[DB_LOST], &cur);
    if (rc != 0) return rc;
    key_pair(lo, session, after + 1);
    k.mv_size = sizeof lo;
    k.mv_data = lo;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0 && !stop;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != 16) {
            rc = MDB_CORRUPTED;
            break;
        }
        if (be_get_u64(k.mv_data) != session) break;
        rc = lost_decode(&v, &r);
        if (rc != 0) break;
        stop = fn(data, be_get_u64((const uint8_t *)k.mv_data + 8), &r);
        if (stop < 0) {
            rc = stop;
            break;
        }
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND || (rc == 0 && stop == 1) ? 0 : rc;
}

struct counting {
    uint32_t n, max;
};

static int count_one(void *data, uint64_t fence, const struct lost_rec *r)
{
    struct counting *c = data;

    (void)fence;
    (void)r;
    return ++c->n >= c->max ? 1 : 0;
}

int store_lost_count(store *s, uint64_t session, uint32_t max, uint32_t *n)
{
    struct counting c = {.n = 0, .max = max};
    MDB_txn *txn;
    int rc;

    *n = 0;
    if (max == 0) return 0;
    rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn);
    if (rc != 0) return store__err(rc);
    rc = lost_walk(s, txn, session, 0, count_one, &c);
    mdb_txn_abort(txn);
    if (rc != 0) return store__err(rc);
    *n = c.n;
    return 0;
}

struct listing {
    store_lost_cb *cb;
    void *data;
    uint32_t n, limit;
    int more;
};

static int list_one(void *data, uint64_t fence, const struct lost_rec *r)
{
    struct listing *l = data;
    int rv;

    if (l->n == l->limit) {
        l->more = 1;
        return 1;
    }
    rv = l->cb(l->data, r->waiter, fence, r->status, r->name, r->name_len);
    if (rv != 0) return rv < 0 ? rv : BATON_EINVAL; /* store.h: a BATON_E* code */
    l->n++;
    return 0;
}

int store_lost_list(store *s, uint64_t session, uint64_t after, uint32_t limit,
                    store_lost_cb *cb, void *data, int *more)
{
    struct listing l = {.cb = cb, .data = data, .limit = limit};
    MDB_txn *txn;
    int rc;

    *more = 0;
    rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn);
    if (rc != 0) return store__err(rc);
    rc = lost_walk(s, txn, session, after, list_one, &l);
    mdb_txn_abort(txn);
    if (rc != 0) return store__err(rc);
    *more = l.more;
    return 0;
}
