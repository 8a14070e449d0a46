/*
 * snapshot.c -- store_snapshot and store_restore (store.h gives the format).
 *
 * A snapshot holds the replicated state only. From meta that is the three
 * counters (next_enq, next_fence, next_session); the format, the applied
 * index and the state digest travel in the header, and boot_id and clean
 * describe this node's files, not the state. Every database is dumped in
 * key order from one read transaction, so two stores with the same state
 * give the same bytes.
 *
 * Restore checks the whole snapshot before it touches anything (a malformed
 * one changes nothing), then replaces every database in one write
 * transaction and forces the files to disk: raft may delete the log entries
 * the snapshot covers once restore returns.
 *
 * Snapshots of older formats are still found on disk by a node upgraded
 * in place (raft loads its latest snapshot at every start) and may be sent
 * by a node not yet upgraded. Formats 5 and older lack the lost table (the
 * last database): they restore with it empty, which is what a store that
 * applied the same entries holds, since no binary of theirs recorded lost
 * holds (lost.c). Format 4's session records lack the owner:
 * each is restored as the anonymous principal's (records.c, sess_upgrade),
 * the same bytes as a store that applied the same entries in format 5
 * holds. A format 3 snapshot lacks the members table as well; it restores
 * as one whose members table is empty. Formats 3, 4 and 5 lack the two
 * nonce databases of format 6: no older binary recorded a
 * nonce, so they restore empty, as in a store that applied the same
 * entries in format 6. Formats 6 and older lack the two databases of
 * format 7 (holders, session_locks) and keep their locks, waiters and
 * owned holds in format 6's layout: they are restored as they are and
 * then upgraded in the same transaction (modes.c, modes_upgrade).
 */
#include <errno.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "storage/store_int.h"

int store_snapshot(store *s, struct buf *out)
{
    MDB_txn *txn;
    int rc;

    if (store__snapshot_fault(s)) return BATON_EIO;
    rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn);
    if (rc != 0) return store__err(rc);
    rc = store__dump(s, txn, out, NULL);
    mdb_txn_abort(txn);
    return store__err(rc);
}

/* LMDB's default key order: bytes, then length. */
static int key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    int d = memcmp(a, b, alen < blen ? alen : blen);

    if (d != 0) return d;
    return alen < blen ? -1 : alen > blen;
}

/* Do session records of this format carry the owner (the layout of
 * format 5, which format 6 keeps)? */
static int has_owners(uint32_t format)
{
    return format >= STORE_FORMAT_NO_LOST;
}

/* Is v a session record of a snapshot of this format? */
static int session_ok(uint32_t format, const MDB_val *v)
{
    struct sess_rec r;

    if (has_owners(format)) return sess_decode(v, &r) == 0;
    return sess_decode_v4(v, &r) == 0;
}

/* Is (k, v) an entry of the nonces database (store_int.h): a non-zero
 * nonce and an owner no longer than a principal's name, to a session? */
static int nonce_entry_ok(const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
    return klen >= 8 && klen <= NONCE_KEY_MAX && be_get_u64(k) != 0 && vlen == NONCE_VAL_LEN &&
           le_get_u64(v) != 0;
}

/* Is (k, v) a well-formed entry of database db in a snapshot of this
 * format? Checks sizes and the parts whose misreading would break the
 * store's own invariants (names, kinds, the owner's length, the
 * lock-delay fields, through the records' own decoders). */
static int entry_ok(uint32_t format, int db, const uint8_t *k, size_t klen, const uint8_t *v,
                    size_t vlen)
{
    MDB_val key = {klen, (void *)k}, val = {vlen, (void *)v};
    struct lock_rec lr;
    struct lock_rec_v6 lr6;
    struct hold_rec hr;
    struct waiter_rec wr;
    struct lost_rec ll;
    struct owned_rec or;
    const char *name;
    size_t name_len;
    uint64_t enq;

    switch (db) {
    case DB_META:
        return meta_state_index(k, klen) >= 0 && vlen == 8;
    case DB_SESSIONS:
        return klen == 8 && session_ok(format, &val);
    case DB_LOCKS:
        return proto_lock_name_ok((const char *)k, klen) &&
               (format <= STORE_FORMAT_NO_MODES ? lock_decode_v6(&val, &lr6)
                                                : lock_decode(&val, &lr)) == 0;
    case DB_WAITERS:
        return key_waiter_split(&key, &name, &name_len, &enq) == 0 &&
               proto_lock_name_ok(name, name_len) &&
               (format <= STORE_FORMAT_NO_MODES ? waiter_decode_v6(&val, &wr)
                                                : waiter_decode(&val, &wr)) == 0 &&
               (format > STORE_FORMAT_NO_MULTI || !wr.multi);
    case DB_HOLDERS:
        return key_waiter_split(&key, &name, &name_len, &enq) == 0 &&
               proto_lock_name_ok(name, name_len) && enq != 0 && hold_decode(&val, &hr) == 0 &&
               (format > STORE_FORMAT_NO_MULTI || !hr.multi);
    case DB_SESSION_LOCKS:
        return klen > 8 && proto_lock_name_ok((const char *)k + 8, klen - 8) && vlen == 4 &&
               le_get_u32(v) != 0;
    case DB_OWNED:
        return klen == 16 && owned_decode(&val, &or) == 0 &&
               (format > STORE_FORMAT_NO_MULTI || !or.multi) &&
               proto_lock_name_ok(or.name, or.name_len);
    case DB_MULTI:
        return klen == 16 && multi_value_ok(v, vlen);
    case DB_DEDUP:
        return klen == 16 && vlen == DEDUP_VAL_LEN;
    case DB_MEMBERS:
        return klen == MEMBER_KEY_LEN && (k[0] | k[1] | k[2] | k[3]) != 0 &&
               member_addr_ok(v, vlen);
    case DB_LOST:
        return klen == 16 && lost_decode(&val, &ll) == 0;
    case DB_NONCES:
        return nonce_entry_ok(k, klen, v, vlen);
    case DB_SESSION_NONCES:
        return klen == 8 && vlen == NONCE_VAL_LEN && le_get_u64(v) != 0;
    case DB_VALUES:
        return klen == 16 && vlen >= 1 && vlen <= CMD_MAX_VALUE;
    default:
        return 0;
    }
}

/*
 * Read one entry of the snapshot. With check set, also validate it against
 * database db of a snapshot of this format and against the previous key
 * (*prev, updated), which must be smaller. Returns 0 or BATON_EMALFORMED.
 */
static int read_entry(struct rd *r, uint32_t format, int db, int check, MDB_val *k, MDB_val *v,
                      MDB_val *prev)
{
    const uint8_t *kp, *vp;
    uint32_t klen, vlen;

    if (rd_u32(r, &klen) != 0 || rd_bytes(r, klen, &kp) != 0 || rd_u32(r, &vlen) != 0 ||
        rd_bytes(r, vlen, &vp) != 0)
        return BATON_EMALFORMED;
    k->mv_size = klen;
    k->mv_data = (void *)kp;
    v->mv_size = vlen;
    v->mv_data = (void *)vp;
    if (!check) return 0;
    if (!entry_ok(format, db, kp, klen, vp, vlen)) return BATON_EMALFORMED;
    if (prev->mv_data != NULL && key_cmp(prev->mv_data, prev->mv_size, kp, klen) >= 0)
        return BATON_EMALFORMED;
    *prev = *k;
    return 0;
}

/* What a snapshot's header says. */
struct snap_hdr {
    uint32_t format;    /* STORE_FORMAT, or _NO_LOST, _NO_OWNERS, _NO_MEMBERS */
    uint64_t applied;
    uint64_t digest;    /* any value is valid */
    int n_dbs;          /* databases that follow: the first n_dbs of enum store_db */
};

/* Read the header; 0 or BATON_EMALFORMED (bad magic, unknown format). */
static int read_header(struct rd *r, struct snap_hdr *h)
{
    uint32_t magic;

    if (rd_u32(r, &magic) != 0 || rd_u32(r, &h->format) != 0 || rd_u64(r, &h->applied) != 0 ||
        rd_u64(r, &h->digest) != 0)
        return BATON_EMALFORMED;
    if (magic != STORE_SNAP_MAGIC) return BATON_EMALFORMED;
    if (h->format == STORE_FORMAT)
        h->n_dbs = DB_COUNT_;
    else if (h->format == STORE_FORMAT_NO_VALUES)
        h->n_dbs = DB_VALUES;
    else if (h->format == STORE_FORMAT_NO_MULTI)
        h->n_dbs = DB_MULTI;
    else if (h->format == STORE_FORMAT_NO_MODES)
        h->n_dbs = DB_HOLDERS;
    else if (h->format == STORE_FORMAT_NO_LOST || h->format == STORE_FORMAT_NO_OWNERS)
        h->n_dbs = DB_LOST;
    else if (h->format == STORE_FORMAT_NO_MEMBERS)
        h->n_dbs = DB_MEMBERS;
    else
        return BATON_EMALFORMED;
    return 0;
}

/* Check the whole snapshot: header, every entry, the meta counters all
 * present, no trailing bytes. */
static int snapshot_valid(const void *data, size_t len, uint64_t *applied)
{
    struct snap_hdr h;
    struct rd r;
    MDB_val k, v, prev;
    uint32_t count;
    unsigned meta_seen = 0;

    rd_init(&r, data, len);
    if (read_header(&r, &h) != 0) return 0;
    *applied = h.applied;
    for (int db = 0; db < h.n_dbs; db++) {
        if (rd_u32(&r, &count) != 0 || count > rd_left(&r) / 8) return 0;
        prev.mv_data = NULL;
        prev.mv_size = 0;
        for (uint32_t i = 0; i < count; i++) {
            if (read_entry(&r, h.format, db, 1, &k, &v, &prev) != 0) return 0;
            if (db == DB_META) meta_seen |= 1u << meta_state_index(k.mv_data, k.mv_size);
        }
    }
    return rd_left(&r) == 0 && r.err == 0 && (meta_seen & META_STATE_REQUIRED) == META_STATE_REQUIRED;
}

struct restore_arg {
    const void *data;
    size_t len;
    uint64_t applied;           /* 0: the snapshot's; else this (a backup) */
    uint64_t fence_floor;       /* a backup: the next fence is at least this */
    const struct store_member *members; /* a backup: the members table */
    unsigned n_members;
    uint64_t digest;            /* out: the snapshot's digest */
    uint64_t next_fence;        /* out (a backup): the next fence */
};

/* A backup's next fence: its own plus STORE_RESTORE_FENCE_MARGIN, or the
 * floor if that is higher (store.h, store_restore_backup). */
static int raise_fence(store *s, MDB_txn *txn, struct restore_arg *a)
{
    uint64_t next = 0;
    int found = 0;
    int rc = meta_get_u64(s, txn, META_NEXT_FENCE, &next, &found);

    if (rc != 0) return rc;
    if (!found || next == 0) next = 1;
    next = next > UINT64_MAX - STORE_RESTORE_FENCE_MARGIN ? UINT64_MAX
                                                          : next + STORE_RESTORE_FENCE_MARGIN;
    if (a->fence_floor > next) next = a->fence_floor;
    a->next_fence = next;
    return meta_put_u64(s, txn, META_NEXT_FENCE, next);
}

/* Put one validated entry of database db into the store, converting a
 * session record of an older format (the snapshot is in key order, so
 * every database but meta is appended). */
static int restore_entry(store *s, MDB_txn *txn, uint32_t format, int db, MDB_val *k,
                         MDB_val *v)
{
    uint8_t val[SESS_VAL_MAX];
    MDB_val nv = {0, val};
    int rc;

    if (db == DB_SESSIONS && !has_owners(format)) {
        rc = sess_upgrade(v, val, &nv.mv_size);
        if (rc != 0) return rc;
        v = &nv;
    }
    return mdb_put(txn, s->dbi[db], k, v, db == DB_META ? 0 : MDB_APPEND);
}

/* The write transaction of a restore (restartable: store__write may run it
 * again after growing the map). The snapshot was validated already. */
static int restore_txn(store *s, MDB_txn *txn, void *arg)
{
    struct restore_arg *a = arg;
    struct snap_hdr h;
    struct rd r;
    MDB_val k, v;
    uint32_t count;
    int rc;

    for (int db = 0; db < DB_COUNT_; db++) {
        rc = mdb_drop(txn, s->dbi[db], 0);
        if (rc != 0) return rc;
    }
    rd_init(&r, a->data, a->len);
    read_header(&r, &h);
    a->digest = h.digest;
    for (int db = 0; db < h.n_dbs; db++) {
        rd_u32(&r, &count);
        for (uint32_t i = 0; i < count; i++) {
            read_entry(&r, h.format, db, 0, &k, &v, NULL);
            if (a->applied != 0 && db == DB_MEMBERS) continue;
            rc = restore_entry(s, txn, h.format, db, &k, &v);
            if (rc != 0) return rc;
        }
    }
    if (h.format <= STORE_FORMAT_NO_MODES) {
        rc = modes_upgrade(s, txn); /* the entries are in format 6's layout */
        if (rc != 0) return rc;
    }
    if (a->applied != 0) {
        h.applied = a->applied;
        rc = raise_fence(s, txn, a);
        for (unsigned i = 0; i < a->n_members && rc == 0; i++)
            rc = member_put(s, txn, a->members[i].id, a->members[i].client_addr);
        if (rc != 0) return rc;
    }
    rc = meta_put_u64(s, txn, META_APPLIED, h.applied);
    if (rc == 0) rc = meta_put_u64(s, txn, META_DIGEST, a->digest);
    if (rc == 0) rc = meta_put_u64(s, txn, META_FORMAT, STORE_FORMAT);
    if (rc == 0)
        rc = db_put(txn, s->dbi[DB_META], META_BOOT_ID, strlen(META_BOOT_ID), s->boot_id,
                    s->boot_id_len);
    /* The clean flag stays absent: the store is open. */
    return rc;
}

/*
 * Called at every raft start (with raft's latest snapshot, usually older
 * than the store: a no-op) and on a follower that was sent a snapshot.
 */
int store_restore(store *s, const void *data, size_t len)
{
    struct restore_arg a = {.data = data, .len = len};
    uint64_t applied;
    int rv;

    if (data == NULL || !snapshot_valid(data, len, &applied)) return BATON_EMALFORMED;
    if (applied <= s->applied) return 0;
    rv = store__write(s, restore_txn, &a);
    if (rv != 0) return rv;
    s->applied = applied;
    s->digest = a.digest;
    s->restored = applied;
    return mdb_env_sync(s->env, 1) == 0 ? 0 : BATON_EIO;
}

int store_snapshot_header(const void *data, size_t len, uint32_t *format, uint64_t *applied,
                          uint64_t *digest)
{
    struct snap_hdr h;
    struct rd r;

    if (data == NULL) return BATON_EMALFORMED;
    rd_init(&r, data, len);
    if (read_header(&r, &h) != 0) return BATON_EMALFORMED;
    *format = h.format;
    *applied = h.applied;
    *digest = h.digest;
    return 0;
}

/* A backup restored into a new cluster's empty store (store.h). */
int store_restore_backup(store *s, const void *data, size_t len, uint64_t applied,
                         uint64_t fence_floor, const struct store_member *members,
                         unsigned n_members, uint64_t *next_fence)
{
    struct restore_arg a = {.data = data,
                            .len = len,
                            .applied = applied,
                            .fence_floor = fence_floor,
                            .members = members,
                            .n_members = n_members};
    uint64_t snap_applied;
    int rv;

    if (data == NULL || !snapshot_valid(data, len, &snap_applied)) return BATON_EMALFORMED;
    if (s->applied != 0 || applied == 0) return BATON_EINVAL;
    rv = store__write(s, restore_txn, &a);
    if (rv != 0) return rv;
    s->applied = applied;
    s->digest = a.digest;
    if (next_fence != NULL) *next_fence = a.next_fence;
    return mdb_env_sync(s->env, 1) == 0 ? 0 : BATON_EIO;
}
