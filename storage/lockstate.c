/*
 * lockstate.c -- one lock's whole state as a reader sees it (LOCK_STATE,
 * WATCH2): its holders and waiters with each one's session's client name
 * and its value, as of the store's applied index. The entries point into
 * one allocation of the caller's (struct lock_state_mem), so that nothing
 * borrows from LMDB once the read transaction has ended.
 *
 * The lists are bounded twice: BATON_MAX_LIST entries each, and a byte
 * budget for what they take on the wire, so that the reply fits a frame
 * whatever the values' sizes (holders first, then the queue from its
 * head). total_holders and total_waiters count them all, so a reader
 * knows when it was shown fewer.
 */
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "storage/store_int.h"

/* Wire bytes of one entry beyond its name and value (proto/msg_table.h,
 * holder_v and waiter_v: their integers and the two u16 lengths). */
#define HOLDER_V_FIXED (8 * 4 + 1 + 4 + 2 + 2)
#define WAITER_V_FIXED (8 * 3 + 1 + 2 + 2)

struct reader {
    store *s;
    MDB_txn *txn;
    size_t budget;              /* wire bytes left for list entries */
    struct buf *arena;          /* client names and values, copied */
};

/* The client name of session `id` into the arena; empty if it is gone. */
static int copy_client_name(struct reader *rd, uint64_t id, size_t *off, uint16_t *len)
{
    struct sess_rec r;
    uint8_t k[8];
    MDB_val v;
    int found, rc;

    *len = 0;
    *off = rd->arena->len;
    key_u64(k, id);
    rc = db_get(rd->txn, rd->s->dbi[DB_SESSIONS], k, sizeof k, &v, &found);
    if (rc == 0 && found) rc = sess_decode(&v, &r);
    if (rc != 0 || !found) return rc;
    rc = buf_put(rd->arena, r.name, r.name_len);
    *len = r.name_len;
    return rc;
}

static int copy_value(struct reader *rd, uint64_t session, uint64_t waiter, size_t *off,
                      uint16_t *len)
{
    MDB_val v;
    int rc = value_read(rd->s, rd->txn, session, waiter, &v);

    *len = 0;
    *off = rd->arena->len;
    if (rc != 0 || v.mv_size == 0) return rc;
    if (v.mv_size > CMD_MAX_VALUE) return MDB_CORRUPTED;
    *len = (uint16_t)v.mv_size;
    return buf_put(rd->arena, v.mv_data, v.mv_size);
}

/* Offsets into the arena, turned into pointers once it stops growing. */
struct strs {
    size_t name_off, value_off;
};

/* What take_strs and the entry functions return when the budget is spent
 * (no LMDB, errno or BATON_E* code is -1). */
#define BUDGET_SPENT (-1)

/*
 * Copy the client name of `session` and the value of (session, waiter)
 * into the arena for an entry of `fixed` wire bytes, if the entry still
 * fits the budget (which it then takes): 0, BUDGET_SPENT if it does not
 * fit (the arena is as it was), or an error.
 */
static int take_strs(struct reader *rd, uint64_t session, uint64_t waiter, size_t fixed,
                     struct strs *at, uint16_t *name_n, uint16_t *value_n)
{
    size_t mark = rd->arena->len, need;
    int rc = copy_client_name(rd, session, &at->name_off, name_n);

    if (rc == 0) rc = copy_value(rd, session, waiter, &at->value_off, value_n);
    if (rc != 0) return rc;
    need = fixed + *name_n + *value_n;
    if (need > rd->budget) {
        rd->arena->len = mark;
        return BUDGET_SPENT;
    }
    rd->budget -= need;
    return 0;
}

/* One entry of the lock's holders or queue (the key and value of its
 * table), taken into st as its next one: 0, BUDGET_SPENT, or an error. */
typedef int entry_fn(struct reader *rd, const MDB_val *key, const MDB_val *val,
                     struct msg_lock_state *st, struct strs *at);

static int holder_entry(struct reader *rd, const MDB_val *key, const MDB_val *val,
                        struct msg_lock_state *st, struct strs *at)
{
    struct msg_holder_v *o = &st->holders[st->n_holders];
    struct hold_rec h;
    const char *kn;
    size_t kl;
    int rc = key_waiter_split(key, &kn, &kl, &o->fence);

    if (rc == 0) rc = hold_decode(val, &h);
    if (rc == 0) rc = take_strs(rd, h.session, h.waiter, HOLDER_V_FIXED, at, &o->client_name.n,
                                &o->value.n);
    if (rc != 0) return rc;
    o->session = h.session;
    o->waiter = h.waiter;
    o->granted_index = h.granted;
    o->mode = h.mode;
    o->count = h.count;
    st->n_holders++;
    return 0;
}

static int waiter_entry(struct reader *rd, const MDB_val *key, const MDB_val *val,
                        struct msg_lock_state *st, struct strs *at)
{
    struct msg_waiter_v *o = &st->waiters[st->n_waiters];
    struct waiter_rec w;
    int rc = waiter_decode(val, &w);

    (void)key;
    if (rc == 0) rc = take_strs(rd, w.session, w.waiter, WAITER_V_FIXED, at, &o->client_name.n,
                                &o->value.n);
    if (rc != 0) return rc;
    o->session = w.session;
    o->waiter = w.waiter;
    o->wait_ms = w.wait_ms;
    o->mode = w.mode;
    st->n_waiters++;
    return 0;
}

/* Take at most `max` entries of lock `name` from table db (its keys that
 * start with "name \0", in key order: fences, or the queue) through fn,
 * at[i] the i-th one's strings. */
static int read_entries(struct reader *rd, int db, const char *name, size_t len, uint32_t max,
                        entry_fn *fn, struct msg_lock_state *st, struct strs *at)
{
    uint8_t k[WAITER_KEY_MAX];
    size_t klen = key_waiter(k, name, len, 0);
    MDB_cursor *cur;
    MDB_val key = {klen, k}, val;
    uint32_t n = 0;
    int rc = mdb_cursor_open(rd->txn, rd->s->dbi[db], &cur);

    if (rc != 0) return rc;
    for (rc = mdb_cursor_get(cur, &key, &val, MDB_SET_RANGE); rc == 0 && n < max;
         rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT)) {
        if (key.mv_size != klen || memcmp(key.mv_data, k, len + 1) != 0) break;
        rc = fn(rd, &key, &val, st, &at[n]);
        if (rc != 0) break;
        n++;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND || rc == BUDGET_SPENT ? 0 : rc;
}

/* Point the entries' strings into the arena, which no longer moves. */
static void resolve(struct msg_lock_state *st, const struct strs *hs, const struct strs *ws,
                    const struct buf *arena)
{
    const char *base = (const char *)arena->data;

    for (uint32_t i = 0; i < st->n_holders; i++) {
        st->holders[i].client_name.p = base + hs[i].name_off;
        st->holders[i].value.p = base + hs[i].value_off;
    }
    for (uint32_t i = 0; i < st->n_waiters; i++) {
        st->waiters[i].client_name.p = base + ws[i].name_off;
        st->waiters[i].value.p = base + ws[i].value_off;
    }
}

static int read_state(struct reader *rd, const char *name, size_t len, struct msg_lock_state *st,
                      struct lock_state_mem *mem)
{
    struct lock_rec r;
    struct strs *hs = NULL, *ws = NULL;
    uint32_t nh, nw;
    MDB_val v;
    int found, rc;

    rc = meta_get_u64(rd->s, rd->txn, META_APPLIED, &st->revision, NULL);
    if (rc == 0) rc = db_get(rd->txn, rd->s->dbi[DB_LOCKS], name, len, &v, &found);
    if (rc == 0 && found) rc = lock_decode(&v, &r);
    if (rc != 0 || !found) return rc;
    st->held = r.n_holders != 0;
    st->mode = r.n_holders != 0 ? r.mode : 0;
    st->limit = r.limit;
    st->delayed = r.delayed;
    st->total_holders = r.n_holders;
    st->total_waiters = r.n_waiters;
    nh = r.n_holders < BATON_MAX_LIST ? r.n_holders : BATON_MAX_LIST;
    nw = r.n_waiters < BATON_MAX_LIST ? r.n_waiters : BATON_MAX_LIST;
    mem->holders = calloc(nh ? nh : 1, sizeof *mem->holders);
    mem->waiters = calloc(nw ? nw : 1, sizeof *mem->waiters);
    hs = calloc(nh ? nh : 1, sizeof *hs);
    ws = calloc(nw ? nw : 1, sizeof *ws);
    if (mem->holders == NULL || mem->waiters == NULL || hs == NULL || ws == NULL) {
        rc = BATON_ENOMEM;
    } else {
        st->holders = mem->holders;
        st->waiters = mem->waiters;
        rc = read_entries(rd, DB_HOLDERS, name, len, nh, holder_entry, st, hs);
        if (rc == 0) rc = read_entries(rd, DB_WAITERS, name, len, nw, waiter_entry, st, ws);
        if (rc == 0) resolve(st, hs, ws, &mem->arena);
    }
    free(hs);
    free(ws);
    return rc;
}

int store_lock_state(store *s, const char *name, size_t name_len, size_t budget,
                     struct msg_lock_state *st, struct lock_state_mem *mem)
{
    struct reader rd = {.s = s, .budget = budget, .arena = &mem->arena};
    int rc;

    memset(st, 0, sizeof *st);
    memset(mem, 0, sizeof *mem);
    st->lock.p = name;
    st->lock.n = (uint16_t)name_len;
    if (!proto_lock_name_ok(name, name_len)) return BATON_EINVAL;
    rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &rd.txn);
    if (rc != 0) return store__err(rc);
    rc = read_state(&rd, name, name_len, st, mem);
    mdb_txn_abort(rd.txn);
    if (rc != 0) {
        store_lock_state_free(mem);
        memset(st, 0, sizeof *st);
        return store__err(rc);
    }
    return 0;
}

void store_lock_state_free(struct lock_state_mem *mem)
{
    free(mem->holders);
    free(mem->waiters);
    buf_free(&mem->arena);
    memset(mem, 0, sizeof *mem);
}
