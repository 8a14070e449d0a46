/*
 * fsm_fixture.c -- what the unit tests of the lock state machine share; see
 * fsm_fixture.h.
 */
#include "tests/unit/fsm_fixture.h"

/* ---- the per-run directory, and a store per test ------------------------ */

static void rm_dir(const char *dir)
{
    char path[192];

    snprintf(path, sizeof path, "%s/data.mdb", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/lock.mdb", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/boot_id", dir);
    unlink(path);
    ASSERT_EQ(rmdir(dir), 0);
}

void setup(struct fixture *f)
{
    char err[256];

    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "%s/t-XXXXXX", suite_dir());
    ASSERT(mkdtemp(f->dir) != NULL);
    if (store_open(f->dir, &f->s, err) != 0) FAIL("store_open: %s", err);
    effects_init(&f->fx);
    effects_init(&f->changed);
}

void teardown(struct fixture *f)
{
    store_close(f->s);
    f->s = NULL;
    effects_free(&f->fx);
    effects_free(&f->changed);
    rm_dir(f->dir);
}

/* ---- commands ----------------------------------------------------------- */

/*
 * Move the entry's FX_LOCK_CHANGED effects from f->fx to f->changed, so that
 * the tests of the other effects see only those. They must all come after
 * every other effect of the entry.
 */
static void strip_changed(struct fixture *f)
{
    size_t first = f->fx.n_fx;

    effects_reset(&f->changed);
    while (first > 0 && f->fx.fx[first - 1].type == FX_LOCK_CHANGED) first--;
    for (size_t i = 0; i < first; i++) ASSERT_NE(f->fx.fx[i].type, FX_LOCK_CHANGED);
    for (size_t i = first; i < f->fx.n_fx; i++)
        ASSERT_EQ(effects_add_fx(&f->changed, &f->fx.fx[i]), 0);
    f->fx.n_fx = first;
}

/* Apply cmds as the next entry; every command must yield a result. */
void apply_n(struct fixture *f, const struct cmd *cmds, size_t n)
{
    struct buf b = {0};

    cmds_encode(&b, cmds, n);
    ASSERT_EQ(store_apply(f->s, ++f->index, b.data, b.len, &f->fx), 0);
    strip_changed(f);
    ASSERT_EQ(f->fx.n_results, n);
    ASSERT_UEQ(f->fx.index, f->index);
    ASSERT_UEQ(store_applied_index(f->s), f->index);
    buf_free(&b);
}

struct cmd_result run(struct fixture *f, struct cmd c)
{
    apply_n(f, &c, 1);
    return f->fx.results[0];
}

uint64_t open_session(struct fixture *f)
{
    struct cmd_result r = run(f, c_open(10000, "test"));

    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_OK);
    ASSERT_NE(r.value, 0);
    return r.value;
}

/* Acquire and expect a grant; returns the fence. */
uint64_t grant(struct fixture *f, uint64_t s, uint64_t seq, const char *name)
{
    struct cmd_result r = run(f, c_acq(s, seq, BATON_WAIT_FOREVER, name));

    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    ASSERT_NE(r.value, 0);
    return r.value;
}

/* Acquire and expect to be queued at `pos`. */
void queue(struct fixture *f, uint64_t s, uint64_t seq, const char *name, uint64_t pos)
{
    struct cmd_result r = run(f, c_acq(s, seq, BATON_WAIT_FOREVER, name));

    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_QUEUED);
    ASSERT_UEQ(r.value, pos);
}

/* ---- effects ------------------------------------------------------------ */

void assert_fx(const struct effect *e, uint8_t type, int32_t status, uint64_t session,
               uint64_t waiter, const char *name)
{
    ASSERT_EQ(e->type, type);
    ASSERT_EQ(e->status, status);
    ASSERT_UEQ(e->session, session);
    ASSERT_UEQ(e->waiter, waiter);
    if (name != NULL) {
        ASSERT_EQ(e->name_len, strlen(name));
        ASSERT(memcmp(e->name, name, e->name_len) == 0);
    }
}

/* Two applies gave the same results and effects (field by field: the
 * structs have padding). */
void assert_same_effects(const struct effects *a, const struct effects *b)
{
    ASSERT_EQ(a->n_results, b->n_results);
    for (size_t i = 0; i < a->n_results; i++) {
        ASSERT_EQ(a->results[i].status, b->results[i].status);
        ASSERT_EQ(a->results[i].kind, b->results[i].kind);
        ASSERT_UEQ(a->results[i].value, b->results[i].value);
    }
    ASSERT_EQ(a->n_fx, b->n_fx);
    for (size_t i = 0; i < a->n_fx; i++) {
        const struct effect *x = &a->fx[i], *y = &b->fx[i];
        ASSERT_EQ(x->type, y->type);
        ASSERT_EQ(x->status, y->status);
        ASSERT_UEQ(x->session, y->session);
        ASSERT_UEQ(x->waiter, y->waiter);
        ASSERT_UEQ(x->fence, y->fence);
        ASSERT_EQ(x->lock_delay_ms, y->lock_delay_ms);
        ASSERT_EQ(x->name_len, y->name_len);
        ASSERT(memcmp(x->name, y->name, x->name_len) == 0);
    }
}

void assert_grants(const struct fixture *f, const uint64_t *sessions, int n)
{
    int k = 0;

    for (size_t i = 0; i < f->fx.n_fx; i++) {
        if (f->fx.fx[i].type != FX_GRANT) continue;
        ASSERT_LT(k, n);
        ASSERT_UEQ(f->fx.fx[i].session, sessions[k]);
        k++;
    }
    ASSERT_EQ(k, n);
}

int count_fx(const struct effects *e, uint8_t type)
{
    int n = 0;

    for (size_t i = 0; i < e->n_fx; i++) n += e->fx[i].type == type;
    return n;
}

/* The last entry's FX_LOCK_CHANGED names are exactly `names` (NULL-ended),
 * in that order: each changed lock once. */
void assert_changed(const struct fixture *f, const char *const *names)
{
    size_t n = 0;

    for (; names[n] != NULL; n++) {
        ASSERT_LT(n, f->changed.n_fx);
        assert_fx(&f->changed.fx[n], FX_LOCK_CHANGED, 0, 0, 0, names[n]);
        ASSERT_UEQ(f->changed.fx[n].fence, 0);
    }
    ASSERT_UEQ(f->changed.n_fx, n);
}

/* ---- state inspection --------------------------------------------------- */

void snap(struct fixture *f, struct buf *b)
{
    buf_free(b);
    ASSERT_EQ(store_snapshot(f->s, b), 0);
    ASSERT_GE(b->len, SNAP_HDR);
}

void assert_same_snapshots(struct fixture *f, struct fixture *g)
{
    struct buf a = {0}, b = {0};

    snap(f, &a);
    snap(g, &b);
    ASSERT_UEQ(a.len, b.len);
    ASSERT(memcmp(a.data, b.data, a.len) == 0);
    ASSERT_UEQ(store_digest(f->s), store_digest(g->s));
    buf_free(&a);
    buf_free(&b);
}

int same_state(const struct buf *a, const struct buf *b)
{
    return a->len == b->len &&
           memcmp(a->data + SNAP_HDR, b->data + SNAP_HDR, a->len - SNAP_HDR) == 0;
}

/* Number of entries of database db in a snapshot. */
uint32_t snap_count(const struct buf *b, int db)
{
    size_t off = SNAP_HDR;

    for (int i = 0;; i++) {
        uint32_t n = le_get_u32(b->data + off);
        if (i == db) return n;
        off += 4;
        for (uint32_t j = 0; j < n; j++) {
            off += 4 + le_get_u32(b->data + off);
            off += 4 + le_get_u32(b->data + off);
        }
    }
}

uint32_t count_in(struct fixture *f, int db)
{
    struct buf b = {0};
    uint32_t n;

    snap(f, &b);
    n = snap_count(&b, db);
    buf_free(&b);
    return n;
}

/* One session value of format 5 or 6 as formats 3 and 4 wrote it: the 24
 * fixed bytes, then the client name; the owner byte between them goes. */
static void put_session_v4(struct buf *out, const uint8_t *v, uint32_t vlen)
{
    ASSERT_GE(vlen, 25);
    ASSERT_EQ(v[24], 0);
    ASSERT_EQ(buf_put_u32(out, vlen - 1), 0);
    ASSERT_EQ(buf_put(out, v, 24), 0);
    ASSERT_EQ(buf_put(out, v + 25, vlen - 25), 0);
}

/* Where each database's entries start in a snapshot of N_DB databases. */
static void snap_dbs(const struct buf *cur, size_t at[N_DB + 1])
{
    size_t off = SNAP_HDR;

    for (int db = 0; db < N_DB; db++) {
        uint32_t n = le_get_u32(cur->data + off);
        at[db] = off;
        off += 4;
        for (uint32_t j = 0; j < n; j++) {
            off += 4 + le_get_u32(cur->data + off);
            off += 4 + le_get_u32(cur->data + off);
        }
    }
    at[N_DB] = off;
    ASSERT_UEQ(off, cur->len);
}

/* A format 7 lock record (value v of the lock `name`) in format 6's
 * layout, its one holder (if any) read from the snapshot's holders. */
static void put_lock_v6(struct buf *out, const struct buf *cur, const size_t at[N_DB + 1],
                        const uint8_t *name, uint32_t name_len, const uint8_t *v, uint32_t vlen)
{
    uint8_t o[41] = {0};
    size_t off = at[DB_HOLDERS];
    uint32_t n = le_get_u32(cur->data + off);

    ASSERT_EQ(vlen, 18);
    ASSERT_EQ(le_get_u32(v + 5), 1); /* an ordinary lock */
    le_put_u32(o + 32, le_get_u32(v + 9)); /* n_waiters */
    le_put_u32(o + 36, le_get_u32(v + 13)); /* the delay that runs */
    o[40] = v[17];
    off += 4;
    for (uint32_t j = 0; j < n; j++) {
        uint32_t klen = le_get_u32(cur->data + off), hlen;
        const uint8_t *k = cur->data + off + 4, *h;
        off += 4 + klen;
        hlen = le_get_u32(cur->data + off);
        h = cur->data + off + 4;
        off += 4 + hlen;
        if (klen != name_len + 9 || memcmp(k, name, name_len) != 0 || k[name_len] != 0) continue;
        ASSERT_EQ(le_get_u32(v), 1);
        ASSERT_EQ(hlen, 33);
        ASSERT_EQ(h[28], BATON_MODE_EXCLUSIVE);
        ASSERT_EQ(le_get_u32(h + 29), 1);
        memcpy(o, h, 16);                            /* session, waiter */
        le_put_u64(o + 16, be_get_u64(k + name_len + 1)); /* fence */
        memcpy(o + 24, h + 16, 8);                   /* granted */
        memcpy(o + 36, h + 24, 4);                   /* the hold's lock-delay */
    }
    ASSERT_EQ(buf_put_u32(out, 41), 0);
    ASSERT_EQ(buf_put(out, o, 41), 0);
}

void snap_as_format(const struct buf *cur, uint32_t format, struct buf *out)
{
    size_t at[N_DB + 1];

    ASSERT(format >= 3 && format <= 7);
    ASSERT_EQ(le_get_u32(cur->data + 4), 8);
    snap_dbs(cur, at);
    buf_free(out);
    ASSERT_EQ(buf_put(out, cur->data, SNAP_HDR), 0);
    le_put_u32(out->data + 4, format);
    for (int db = 0; db < N_DB; db++) {
        size_t off = at[db];
        uint32_t n = le_get_u32(cur->data + off);
        off += 4;
        if (db == DB_MULTI || (db >= DB_HOLDERS && format < 7) ||
            (db >= DB_LOST && format < 6) || (db == DB_MEMBERS && format == 3)) {
            if (db < DB_HOLDERS || db == DB_MULTI) ASSERT_EQ(n, 0);
            continue;
        }
        if (format == 7) { /* format 8's records without multi-locks: the same bytes */
            ASSERT_EQ(buf_put(out, cur->data + at[db], at[db + 1] - at[db]), 0);
            continue;
        }
        ASSERT_EQ(buf_put_u32(out, n), 0);
        for (uint32_t j = 0; j < n; j++) {
            uint32_t klen = le_get_u32(cur->data + off), vlen;
            const uint8_t *k = cur->data + off + 4, *v;
            ASSERT_EQ(buf_put(out, cur->data + off, 4 + klen), 0);
            off += 4 + klen;
            vlen = le_get_u32(cur->data + off);
            v = cur->data + off + 4;
            if (db == DB_SESSIONS && format < 5) {
                put_session_v4(out, v, vlen);
            } else if (db == DB_LOCKS) {
                put_lock_v6(out, cur, at, k, klen, v, vlen);
            } else if (db == DB_WAITERS) {
                ASSERT_EQ(vlen, 29);
                ASSERT_EQ(v[28], BATON_MODE_EXCLUSIVE);
                ASSERT_EQ(buf_put_u32(out, 28), 0);
                ASSERT_EQ(buf_put(out, v, 28), 0);
            } else if (db == DB_OWNED && v[0] == 1) { /* a hold: no fence in format 6 */
                ASSERT_EQ(buf_put_u32(out, vlen), 0);
                ASSERT_EQ(buf_put_u8(out, v[0]), 0);
                ASSERT_EQ(buf_put_u64(out, 0), 0);
                ASSERT_EQ(buf_put(out, v + 9, vlen - 9), 0);
            } else {
                ASSERT_EQ(buf_put(out, cur->data + off, 4 + vlen), 0);
            }
            off += 4 + vlen;
        }
    }
}

struct msg_lock_info_r info(struct fixture *f, const char *name)
{
    struct msg_lock_info_r i;

    memset(&i, 0, sizeof i);
    ASSERT_EQ(store_lock_info(f->s, name, strlen(name), BATON_MAX_LIST, &i), 0);
    return i;
}

void assert_holder(struct fixture *f, const char *name, uint64_t session, uint64_t fence,
                   uint32_t waiters)
{
    struct msg_lock_info_r i = info(f, name);

    ASSERT_EQ(i.held, session != 0);
    ASSERT_UEQ(i.holder_session, session);
    if (fence) ASSERT_UEQ(i.fence, fence);
    ASSERT_EQ(i.total_waiters, waiters);
    ASSERT_EQ(i.n_waiters, waiters);
    store_lock_info_free(&i);
}

void populate(struct fixture *f)
{
    struct cmd c = c_open(10000, "nonced");

    populate_old(f);
    c.seq = 0x5eed; /* an OPEN_SESSION's nonce (storage/cmd.h) */
    ASSERT_EQ(run(f, c).status, 0);
}

void populate_old(struct fixture *f)
{
    uint64_t a = open_session(f), b = open_session(f), c = open_session(f);
    uint64_t fa = grant(f, a, 1, "alpha");
    struct cmd x;

    grant(f, b, 1, "beta");
    queue(f, b, 2, "alpha", 1);
    queue(f, c, 1, "alpha", 2);
    x = c_acq(c, 2, 5000, "beta");
    ASSERT_EQ(run(f, x).kind, RESULT_QUEUED);
    ASSERT_EQ(run(f, c_rel(a, 2, fa, "alpha")).status, 0);
    ASSERT_EQ(run(f, c_acq(a, 3, BATON_WAIT_TRY, "alpha")).status, BATON_EWOULDBLOCK);
    open_session(f);
    ASSERT_EQ(run(f, c_member(4, "127.0.0.1:7004")).status, 0);
}

void populate_lost(struct fixture *f)
{
    uint64_t d = open_session(f);
    uint64_t fence = grant(f, d, 1, "gamma");

    static const char *const both[] = {"mu1", "mu2"};
    uint8_t more[CMDS_MORE_MAX];

    ASSERT_EQ(run(f, c_force2("gamma", fence, CMD_FORCE_NOW)).status, 0);
    /* A multi-lock (DB_MULTI). */
    ASSERT_EQ(run(f, c_many(d, 2, BATON_WAIT_FOREVER, both, 2, more)).kind, RESULT_GRANTED);
}

/* ---- what the store's iterators report ---------------------------------- */

int collect_timed(void *data, uint64_t session, uint64_t waiter, int64_t wait_ms,
                  const char *name, size_t name_len)
{
    struct timed *t = data;
    t->n++;
    t->session = session;
    t->waiter = waiter;
    t->wait_ms = wait_ms;
    memcpy(t->name, name, name_len < 15 ? name_len : 15);
    return 0;
}

int collect_lock(void *data, const char *name, size_t name_len,
                 const struct msg_lock_summary *sum)
{
    struct listed *l = data;
    ASSERT_LT(l->n, 8);
    memcpy(l->names[l->n], name, name_len);
    l->names[l->n][name_len] = 0;
    l->holder[l->n] = sum->holder_session;
    l->waiters[l->n] = sum->n_waiters;
    l->n++;
    return 0;
}

int collect_delayed(void *data, const char *name, size_t name_len, int32_t delay_ms)
{
    struct delayed_seen *d = data;

    ASSERT_LT(d->n, 8);
    ASSERT_LT(name_len, 16);
    memcpy(d->names[d->n], name, name_len);
    d->names[d->n][name_len] = 0;
    d->delay[d->n] = delay_ms;
    d->n++;
    return 0;
}
