/*
 * dump.c -- store__dump: the replicated state of one read transaction as
 * snapshot bytes (store.h gives the format), every database in key order.
 * store_snapshot (snapshot.c) and the background snapshot (snapshot_bg.c)
 * both dump through it.
 */
#include <errno.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "storage/store_int.h"

/* The meta keys that are state, in key order. */
static const char *const meta_state_keys[] = {META_LEVEL, META_NEXT_ENQ, META_NEXT_FENCE,
                                               META_NEXT_SESSION};
_Static_assert(sizeof meta_state_keys / sizeof *meta_state_keys == N_META_STATE, "meta keys");

int meta_state_index(const void *k, size_t klen)
{
    for (size_t i = 0; i < N_META_STATE; i++)
        if (strlen(meta_state_keys[i]) == klen && memcmp(meta_state_keys[i], k, klen) == 0)
            return (int)i;
    return -1;
}

/* How many records the dump writes between two looks at its stop flag. */
#define DUMP_STOP_EVERY 256

/* Append one database's entries: u32 count, then {u32 klen, key, u32 vlen,
 * val} in key order. */
static int dump_db(store *s, MDB_txn *txn, int db, struct buf *out, const atomic_int *stop)
{
    MDB_cursor *cur;
    MDB_val k, v;
    size_t at = out->len;
    uint32_t count = 0;
    int rc, rv;

    rv = buf_put_u32(out, 0);
    if (rv != 0) return rv;
    rc = mdb_cursor_open(txn, s->dbi[db], &cur);
    if (rc != 0) return rc;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (db == DB_META && meta_state_index(k.mv_data, k.mv_size) < 0) continue;
        if (stop != NULL && count % DUMP_STOP_EVERY == 0 && atomic_load(stop)) {
            rc = ECANCELED;
            break;
        }
        rv = buf_reserve(out, 8 + k.mv_size + v.mv_size);
        if (rv != 0) {
            rc = rv;
            break;
        }
        buf_put_u32(out, (uint32_t)k.mv_size);
        buf_put(out, k.mv_data, k.mv_size);
        buf_put_u32(out, (uint32_t)v.mv_size);
        buf_put(out, v.mv_data, v.mv_size);
        count++;
    }
    mdb_cursor_close(cur);
    if (rc != MDB_NOTFOUND) return rc;
    le_put_u32(out->data + at, count);
    return 0;
}

int store__dump(store *s, MDB_txn *txn, struct buf *out, const atomic_int *stop)
{
    size_t start = out->len;
    uint64_t applied, digest, level;
    uint32_t format = STORE_FORMAT;
    int n_dbs = DB_COUNT_;
    int rc;

    rc = meta_get_u64(s, txn, META_APPLIED, &applied, NULL);
    if (rc == 0) rc = meta_get_u64(s, txn, META_DIGEST, &digest, NULL);
    if (rc == 0) rc = level_get(s, txn, &level);
    /* Below the level of values, DB_VALUES is empty and the snapshot is in
     * the format before it, which a binary of that level reads (and every
     * node of a mixed cluster hashes alike: store_int.h, format 9). */
    if (rc == 0 && level < STORE_LEVEL_VALUES) {
        format = STORE_FORMAT_NO_VALUES;
        n_dbs = DB_VALUES;
    }
    if (rc == 0) rc = buf_put_u32(out, STORE_SNAP_MAGIC);
    if (rc == 0) rc = buf_put_u32(out, format);
    if (rc == 0) rc = buf_put_u64(out, applied);
    if (rc == 0) rc = buf_put_u64(out, digest);
    for (int db = 0; db < n_dbs && rc == 0; db++) rc = dump_db(s, txn, db, out, stop);
    if (rc != 0) out->len = start;
    return rc;
}
