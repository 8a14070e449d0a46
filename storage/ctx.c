/*
 * ctx.c -- what every command's handler writes through (struct apply_ctx):
 * the effects it emits, the one-record cache of session records, and the
 * updates of the cached results (the deduplication steps themselves are
 * apply.c's). Below every handler, so that locks.c, multi.c, sessions.c
 * and lost.c reach these without calling up into apply.c or each other.
 */
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "storage/store_int.h"

int fx_emit(struct apply_ctx *c, uint8_t type, int32_t status, uint64_t session, uint64_t waiter,
            uint64_t fence, const char *name, size_t name_len)
{
    struct effect e = {.type = type, .status = status, .session = session, .waiter = waiter,
                       .fence = fence, .name_len = (uint16_t)name_len};

    if (name_len > 0) memcpy(e.name, name, name_len);
    return effects_add_fx(c->out, &e);
}

/*
 * The scan is linear in the locks changed so far: a batch is bounded
 * (CMD_MAX_BATCH commands) and comparing lengths first keeps it cheap.
 */
int fx_lock_changed(struct apply_ctx *c, const char *name, size_t name_len)
{
    struct effect *e;

    for (size_t i = 0; i < c->n_changed; i++) {
        e = &c->changed[i];
        if (e->name_len == name_len && memcmp(e->name, name, name_len) == 0) return 0;
    }
    if (c->n_changed == c->cap_changed) {
        size_t cap = c->cap_changed ? c->cap_changed * 2 : 8;
        e = realloc(c->changed, cap * sizeof *e);
        if (e == NULL) return BATON_ENOMEM;
        c->changed = e;
        c->cap_changed = cap;
    }
    e = &c->changed[c->n_changed++];
    memset(e, 0, sizeof *e);
    e->type = FX_LOCK_CHANGED;
    e->name_len = (uint16_t)name_len;
    if (name_len > 0) memcpy(e->name, name, name_len);
    return 0;
}

int fx_emit_lock_delay(struct apply_ctx *c, uint64_t session, uint64_t waiter, uint64_t fence,
                       int32_t delay_ms, const char *name, size_t name_len)
{
    int rc = fx_emit(c, FX_LOCK_DELAY, 0, session, waiter, fence, name, name_len);

    if (rc == 0) c->out->fx[c->out->n_fx - 1].lock_delay_ms = delay_ms;
    return rc;
}

int dedup_update(struct apply_ctx *c, uint64_t session, uint64_t seq, const struct cmd_result *r)
{
    uint8_t k[16], v[DEDUP_VAL_LEN];
    MDB_val old;
    int found, rc;

    key_pair(k, session, seq);
    rc = db_get(c->txn, c->s->dbi[DB_DEDUP], k, sizeof k, &old, &found);
    if (rc != 0 || !found) return rc;
    return db_put(c->txn, c->s->dbi[DB_DEDUP], k, sizeof k, v, dedup_encode(v, r));
}

int dedup_drop_session(struct apply_ctx *c, uint64_t session)
{
    uint8_t lo[16], hi[16];

    key_pair(lo, session, 0);
    if (session == UINT64_MAX) {
        /* No (session + 1, 0) bound: pad to the largest key instead. The
         * range is half-open, so seq UINT64_MAX itself is deleted apart. */
        int rc;
        key_pair(hi, session, UINT64_MAX);
        rc = db_del_range(c->txn, c->s->dbi[DB_DEDUP], lo, hi, sizeof lo);
        return rc != 0 ? rc : db_del(c->txn, c->s->dbi[DB_DEDUP], hi, sizeof hi, NULL);
    }
    key_pair(hi, session + 1, 0);
    return db_del_range(c->txn, c->s->dbi[DB_DEDUP], lo, hi, sizeof lo);
}

int sess_flush(struct apply_ctx *c)
{
    uint8_t k[8], v[VAL_MAX];
    int rc;

    if (!c->sess.dirty) return 0;
    key_u64(k, c->sess.id);
    rc = db_put(c->txn, c->s->dbi[DB_SESSIONS], k, sizeof k, v, sess_encode(v, &c->sess.rec));
    if (rc == 0) c->sess.dirty = 0;
    return rc;
}

int sess_get(struct apply_ctx *c, uint64_t id, struct sess_rec *r, int *found)
{
    uint8_t k[8];
    MDB_val v;
    int rc;

    if (c->sess.valid && c->sess.id == id) {
        *r = c->sess.rec;
        *found = 1;
        return 0;
    }
    rc = sess_flush(c); /* the cache moves on to another session */
    if (rc != 0) return rc;
    key_u64(k, id);
    rc = db_get(c->txn, c->s->dbi[DB_SESSIONS], k, sizeof k, &v, found);
    if (rc != 0 || !*found) return rc;
    rc = sess_decode(&v, r);
    if (rc != 0) return rc;
    c->sess.id = id;
    c->sess.rec = *r;
    c->sess.valid = 1;
    return 0;
}

int sess_put(struct apply_ctx *c, uint64_t id, const struct sess_rec *r)
{
    if (!c->sess.valid || c->sess.id != id) {
        int rc = sess_flush(c);
        if (rc != 0) return rc;
    }
    c->sess.id = id;
    c->sess.rec = *r;
    c->sess.valid = 1;
    c->sess.dirty = 1;
    return 0;
}

int sess_del(struct apply_ctx *c, uint64_t id)
{
    uint8_t k[8];

    if (c->sess.valid && c->sess.id == id) c->sess.valid = c->sess.dirty = 0;
    key_u64(k, id);
    return db_del(c->txn, c->s->dbi[DB_SESSIONS], k, sizeof k, NULL);
}

int sess_owned_add(struct apply_ctx *c, uint64_t id, int delta)
{
    struct sess_rec r;
    int found, rc = sess_get(c, id, &r, &found);

    if (rc != 0) return rc;
    if (!found) return MDB_CORRUPTED; /* an owned entry without its session */
    if (delta < 0 && r.n_owned < (uint32_t)-delta) return MDB_CORRUPTED;
    r.n_owned = (uint32_t)((int64_t)r.n_owned + delta);
    return sess_put(c, id, &r);
}
