/*
 * multi.c -- atomic multi-locks (ACQUIRE_MANY, store format 8): one
 * request for 2..BATON_MAX_MANY distinct names, held on all of them at
 * once or on none (docs/design.md, "Lock modes").
 *
 * The rules, beside locks.c's for one name:
 *   - The request is checked on every name before anything is written
 *     (names legal and distinct, the limit each name has, the session's
 *     own holds and waits: BATON_EDEADLK), so that a refusal changes
 *     nothing.
 *   - It is granted at once only if nobody waits for any of the names and
 *     it is compatible with the holders of each. Otherwise (unless it is a
 *     try) it joins the queue of every name in this one entry, with ONE
 *     enq for all of them, taken from the same counter as every other
 *     waiter's.
 *   - A waiting multi-lock is granted when it heads the queue of every
 *     name and is compatible with the holders of each: grant_waiting
 *     (locks.c) asks multi_try_grant whenever the multi-lock heads the
 *     queue it is looking at. It is granted on every name in one step,
 *     with one fence; while it waits at the head of a queue, everybody
 *     behind it there waits too (FIFO per name, no barging).
 *
 * Why there is no deadlock. Queues are ordered by enq, and enq is the
 * commit order of the requests: a multi-lock has the same enq in every
 * queue it joins, so any two waiting requests stand in the same order in
 * every queue they share. A waiter waits only for requests ahead of it
 * (smaller enq) and for holders; the waiter with the smallest enq heads
 * all of its queues and waits for holders alone, who release or lose their
 * holds. Hence no cycle, and every waiter is granted once the holds ahead
 * of it end. A request that takes its names one at a time (Curator's
 * multi-lock) has no such order, which is why it must back out and retry.
 *
 * What a multi-lock leaves in the store: in each name's queue a waiter
 * record (mode | REC_MULTI_FLAG; its wait_ms only in the first name's, so
 * that a new leader arms one deadline), or a holder record with the one
 * fence (count 1: a multi-lock is never reentrant); one owned entry
 * (kind | REC_MULTI_FLAG) named by the first name, which is how the
 * client names the multi-lock in RELEASE, CANCEL, WAIT_TIMEOUT, pushes
 * and lost records; the names in DB_MULTI (be64 session, be64 waiter ->
 * u8 n, n x (u16 length + bytes)); a session_locks count per name; and n
 * slots of the session's n_owned. A RELEASE of the fence with any of the
 * names ends the hold on all of them; so does an expiry, a CLOSE_SESSION
 * and a forced release of any one name (the holder is told once, with the
 * first name, and the other names are delayed or handed on exactly as the
 * forced one).
 *
 * Grants and releases of a multi-lock change several queues at once. The
 * names whose head may have become grantable are queued on the apply
 * context (regrant_push) and regranted before the command's result is
 * final (regrant_drain, apply.c): an explicit worklist rather than
 * recursion, since one grant can enable another along a chain of
 * multi-locks as long as the queues.
 */
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "proto/lockreq.h"
#include "storage/store_int.h"

/* ---- the DB_MULTI record ---------------------------------------------------- */

static int same_name(const char *a, size_t alen, const char *b, size_t blen)
{
    return alen == blen && memcmp(a, b, alen) == 0;
}

/* Are m's names legal lock names, 2..MULTI_MAX of them, all distinct? */
static int names_ok(const struct multi_names *m)
{
    size_t len[MULTI_MAX];
    const char *why;

    if (m->n < 2 || m->n > MULTI_MAX) return 0;
    for (unsigned i = 0; i < m->n; i++) len[i] = m->len[i];
    return lockreq_names_check(m->n, m->name, len, &why) == 0;
}

static void names_add(struct multi_names *m, size_t *used, const char *name, uint16_t len)
{
    if (len > 0) memcpy(m->buf + *used, name, len); /* an empty name may be NULL */
    m->name[m->n] = m->buf + *used;
    m->len[m->n++] = len;
    *used += len;
}

/* Decode a DB_MULTI value into *m: 0, or MDB_CORRUPTED if it is not
 * 2..MULTI_MAX names of 1..BATON_MAX_NAME bytes filling it exactly. */
static int multi_decode(const void *v, size_t vlen, struct multi_names *m)
{
    struct rd r;
    const char *name;
    uint16_t len;
    uint8_t n;
    size_t used = 0;

    m->n = 0;
    rd_init(&r, v, vlen);
    if (rd_u8(&r, &n) != 0 || n < 2 || n > MULTI_MAX) return MDB_CORRUPTED;
    for (unsigned i = 0; i < n; i++) {
        if (rd_str(&r, BATON_MAX_NAME, &name, &len) != 0 || len == 0) return MDB_CORRUPTED;
        names_add(m, &used, name, len);
    }
    return rd_left(&r) == 0 ? 0 : MDB_CORRUPTED;
}

int multi_value_ok(const void *v, size_t vlen)
{
    struct multi_names *m = malloc(sizeof *m);
    int ok = m != NULL && multi_decode(v, vlen, m) == 0 && names_ok(m);

    free(m);
    return ok;
}

int multi_get(struct apply_ctx *c, uint64_t session, uint64_t waiter, struct multi_names *m)
{
    uint8_t k[16];
    MDB_val v;
    int found, rc;

    m->n = 0; /* no names on any failure: a corrupt store's caller reads none */
    key_pair(k, session, waiter);
    rc = db_get(c->txn, c->s->dbi[DB_MULTI], k, sizeof k, &v, &found);
    if (rc != 0) return rc;
    if (!found) return MDB_CORRUPTED; /* a multi-lock's entry without its names */
    rc = multi_decode(v.mv_data, v.mv_size, m);
    if (rc != 0) m->n = 0;
    return rc;
}

static int multi_put(struct apply_ctx *c, uint64_t session, uint64_t waiter,
                     const struct multi_names *m)
{
    uint8_t k[16], v[1 + MULTI_MAX * (2 + BATON_MAX_NAME)];
    size_t len = 1;

    v[0] = (uint8_t)m->n;
    for (unsigned i = 0; i < m->n; i++) {
        le_put_u16(v + len, m->len[i]);
        memcpy(v + len + 2, m->name[i], m->len[i]);
        len += 2 + (size_t)m->len[i];
    }
    key_pair(k, session, waiter);
    return db_put(c->txn, c->s->dbi[DB_MULTI], k, sizeof k, v, len);
}

static int multi_del(struct apply_ctx *c, uint64_t session, uint64_t waiter)
{
    uint8_t k[16];
    int found, rc;

    key_pair(k, session, waiter);
    rc = db_del(c->txn, c->s->dbi[DB_MULTI], k, sizeof k, &found);
    return rc != 0 ? rc : found ? 0 : MDB_CORRUPTED;
}

/* The names of an ACQUIRE_MANY: `name`, then its more names. */
static void cmd_names(const struct cmd *cmd, struct multi_names *m)
{
    const char *name;
    uint16_t len;
    size_t off = 0, used = 0;

    m->n = 0;
    names_add(m, &used, cmd->name, cmd->name_len);
    while (m->n < MULTI_MAX && cmd_more_next(cmd, &off, &name, &len) == 1)
        names_add(m, &used, name, len);
}

/* ---- the regrant worklist --------------------------------------------------- */

int regrant_push(struct apply_ctx *c, const char *name, size_t len)
{
    if (c->n_regrant == c->cap_regrant) {
        size_t cap = c->cap_regrant ? c->cap_regrant * 2 : 16;
        struct regrant_item *p = realloc(c->regrant, cap * sizeof *p);
        if (p == NULL) return BATON_ENOMEM;
        c->regrant = p;
        c->cap_regrant = cap;
    }
    c->regrant[c->n_regrant].len = (uint16_t)len;
    memcpy(c->regrant[c->n_regrant++].name, name, len);
    return 0;
}

int regrant_drain(struct apply_ctx *c)
{
    struct regrant_item it;
    int rc = 0;

    while (rc == 0 && c->n_regrant > 0) {
        it = c->regrant[--c->n_regrant];
        rc = locks_regrant(c, it.name, it.len);
    }
    return rc;
}

/* ---- ACQUIRE_MANY ----------------------------------------------------------- */

/* What op_acquire_many checks and reads before it writes anything. */
struct many_req {
    struct multi_names m;
    struct lock_rec r[MULTI_MAX];
    struct sess_rec sess;
    uint32_t limit;
};

/* The shape of the request: BATON_EINVAL in res->status if it is wrong
 * whatever the state. */
static void many_check_shape(const struct cmd *cmd, const struct multi_names *m,
                             struct cmd_result *res)
{
    struct lockreq r = {.wait_ms = cmd->wait_ms, .lock_delay_ms = cmd->lock_delay_ms,
                        .mode = cmd->mode, .limit = cmd->limit, .reentrant = cmd->reentrant,
                        .many = true, .n_names = m->n};
    const char *why;

    if (!names_ok(m) || m->n != (unsigned)cmd->n_more + 1 || !acquire_fields_ok(cmd) ||
        lockreq_check(&r, &why) != 0)
        res->status = BATON_EINVAL;
}

/* Read every name's record into q->r (a fresh one with the request's
 * limit if there is none) and refuse a limit other than a name's
 * (BATON_EINVAL, value = that limit) or a name the session holds or waits
 * for (BATON_EDEADLK). */
static int many_read_locks(struct apply_ctx *c, const struct cmd *cmd, struct many_req *q,
                           struct cmd_result *res)
{
    uint32_t n;
    int found, rc;

    for (unsigned i = 0; i < q->m.n; i++) {
        rc = lock_get(c, q->m.name[i], q->m.len[i], &q->r[i], &found);
        if (rc != 0) return rc;
        if (!found) {
            memset(&q->r[i], 0, sizeof q->r[i]);
            q->r[i].limit = q->limit;
        }
        if (q->r[i].limit != q->limit) {
            res->status = BATON_EINVAL;
            res->value = q->r[i].limit;
            return 0;
        }
        rc = session_lock_count(c, cmd->session, q->m.name[i], q->m.len[i], &n);
        if (rc != 0) return rc;
        if (n > 0) {
            res->status = BATON_EDEADLK;
            return 0;
        }
    }
    return 0;
}

/* Does the request fit every name now: nobody waits, compatible? */
static int many_free(const struct many_req *q, uint8_t mode)
{
    for (unsigned i = 0; i < q->m.n; i++)
        if (q->r[i].n_waiters != 0 || !lock_compatible(&q->r[i], mode)) return 0;
    return 1;
}

/* Hold every name at once with one new fence. */
static int many_hold(struct apply_ctx *c, const struct cmd *cmd, struct many_req *q,
                     uint64_t *fence)
{
    struct hold_rec h = {.session = cmd->session, .waiter = cmd->seq, .granted = c->index,
                         .lock_delay_ms = cmd->lock_delay_ms, .mode = cmd->mode, .multi = 1,
                         .count = 1};
    int rc = 0;

    *fence = c->next_fence++;
    for (unsigned i = 0; i < q->m.n && rc == 0; i++) {
        rc = hold_put(c, q->m.name[i], q->m.len[i], *fence, &h);
        q->r[i].n_holders++;
        q->r[i].mode = cmd->mode;
        if (rc == 0) rc = lock_put(c, q->m.name[i], q->m.len[i], &q->r[i]);
    }
    if (rc == 0)
        rc = owned_put(c, cmd->session, cmd->seq, OWNED_HOLD, 1, *fence, q->m.name[0], q->m.len[0]);
    return rc;
}

/* Join every name's queue with one enq. */
static int many_enqueue(struct apply_ctx *c, const struct cmd *cmd, struct many_req *q)
{
    uint8_t k[WAITER_KEY_MAX], v[WAITER_VAL_LEN];
    struct waiter_rec w = {.session = cmd->session, .waiter = cmd->seq, .wait_ms = cmd->wait_ms,
                           .lock_delay_ms = cmd->lock_delay_ms, .mode = cmd->mode, .multi = 1};
    uint64_t enq = c->next_enq++;
    int rc = 0;

    for (unsigned i = 0; i < q->m.n && rc == 0; i++) {
        w.wait_ms = i == 0 ? cmd->wait_ms : 0; /* one deadline, on the first name */
        rc = db_put(c->txn, c->s->dbi[DB_WAITERS], k,
                    key_waiter(k, q->m.name[i], q->m.len[i], enq), v, waiter_encode(v, &w));
        q->r[i].n_waiters++;
        if (rc == 0) rc = lock_put(c, q->m.name[i], q->m.len[i], &q->r[i]);
    }
    if (rc == 0)
        rc = owned_put(c, cmd->session, cmd->seq, OWNED_WAIT, 1, enq, q->m.name[0], q->m.len[0]);
    return rc;
}

/*
 * ACQUIRE_MANY(session, seq, wait_ms, lock_delay_ms, mode, limit, names):
 * the rules at the top of this file. Results as ACQUIRE's: GRANTED with
 * the one fence, QUEUED with the position in the first name's queue,
 * EWOULDBLOCK for a try that does not fit at once; EINVAL (a bad or
 * repeated name, a reentrant request, a limit other than a name's, with
 * value = that limit), EDEADLK (the session holds or waits for one of
 * the names), ELIMIT (the session's slots: one per name), ESESSION.
 */
int op_acquire_many(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res)
{
    struct many_req *q = malloc(sizeof *q);
    struct owned_rec o;
    uint64_t fence;
    int found, rc;

    if (q == NULL) return BATON_ENOMEM;
    cmd_names(cmd, &q->m);
    q->limit = cmd->limit > 1 ? cmd->limit : 1;
    many_check_shape(cmd, &q->m, res);
    rc = res->status != 0 ? 0 : sess_get(c, cmd->session, &q->sess, &found);
    if (rc == 0 && res->status == 0 && !found) res->status = BATON_ESESSION;
    if (rc == 0 && res->status == 0) rc = owned_get(c, cmd->session, cmd->seq, &o, &found);
    if (rc == 0 && res->status == 0 && found) res->status = BATON_EINVAL; /* see op_acquire */
    if (rc == 0 && res->status == 0 && q->sess.n_owned + q->m.n > STORE_MAX_OWNED_PER_SESSION)
        res->status = BATON_ELIMIT;
    if (rc == 0 && res->status == 0) rc = many_read_locks(c, cmd, q, res);
    if (rc != 0 || res->status != 0) goto out;

    if (many_free(q, cmd->mode)) {
        rc = many_hold(c, cmd, q, &fence);
        res->kind = RESULT_GRANTED;
        res->value = fence;
    } else if (cmd->wait_ms == BATON_WAIT_TRY) {
        res->status = BATON_EWOULDBLOCK;
        goto out;
    } else {
        rc = many_enqueue(c, cmd, q);
        res->kind = RESULT_QUEUED;
        res->value = q->r[0].n_waiters;
    }
    if (rc == 0) rc = multi_put(c, cmd->session, cmd->seq, &q->m);
    for (unsigned i = 0; i < q->m.n && rc == 0; i++)
        rc = session_lock_add(c, cmd->session, q->m.name[i], q->m.len[i], 1);
    if (rc == 0) {
        q->sess.n_owned += q->m.n;
        rc = sess_put(c, cmd->session, &q->sess);
    }
out:
    free(q);
    return rc;
}

/* ---- grants ----------------------------------------------------------------- */

/* Which of m's names is name[0..len)? m->n if none. */
static unsigned name_index(const struct multi_names *m, const char *name, size_t len)
{
    unsigned i;

    for (i = 0; i < m->n; i++)
        if (same_name(m->name[i], m->len[i], name, len)) break;
    return i;
}

/* Does the multi-lock (w, enq) head the queue of every name but `self`
 * and fit its holders? Reads the records into q->r (q->r[self] is left
 * alone). */
static int heads_all(struct apply_ctx *c, struct many_req *q, unsigned self,
                     const struct waiter_rec *w, uint64_t enq, int *ready)
{
    struct waiter_rec head;
    uint64_t head_enq;
    int found, rc;

    *ready = 0;
    for (unsigned i = 0; i < q->m.n; i++) {
        if (i == self) continue;
        rc = lock_get_existing(c, q->m.name[i], q->m.len[i], &q->r[i]); /* it waits there */
        if (rc == 0) rc = queue_head(c, q->m.name[i], q->m.len[i], &head_enq, &head, &found);
        if (rc == 0 && !found) rc = MDB_CORRUPTED;
        if (rc != 0) return rc;
        if (head_enq != enq || !lock_compatible(&q->r[i], w->mode)) return 0;
    }
    *ready = 1;
    return 0;
}

int multi_try_grant(struct apply_ctx *c, const char *name, size_t len, struct lock_rec *r,
                    const struct waiter_rec *w, uint64_t enq, int *granted)
{
    struct many_req *q = malloc(sizeof *q);
    struct cmd_result res = {.status = 0, .kind = RESULT_GRANTED};
    struct hold_rec h = {.session = w->session, .waiter = w->waiter, .granted = c->index,
                         .lock_delay_ms = w->lock_delay_ms, .mode = w->mode, .multi = 1,
                         .count = 1};
    struct lock_rec *rec;
    unsigned self;
    uint64_t fence;
    int ready = 0, rc;

    *granted = 0;
    if (q == NULL) return BATON_ENOMEM;
    rc = multi_get(c, w->session, w->waiter, &q->m);
    self = rc == 0 ? name_index(&q->m, name, len) : 0;
    if (rc == 0 && self == q->m.n) rc = MDB_CORRUPTED;
    if (rc == 0) rc = heads_all(c, q, self, w, enq, &ready);
    if (rc != 0 || !ready) goto out;

    fence = c->next_fence++;
    for (unsigned i = 0; i < q->m.n && rc == 0; i++) {
        rec = i == self ? r : &q->r[i];
        rc = queue_remove(c, q->m.name[i], q->m.len[i], enq, rec);
        if (rc == 0) rc = hold_put(c, q->m.name[i], q->m.len[i], fence, &h);
        rec->n_holders++;
        rec->mode = w->mode;
        if (rc == 0 && i != self) rc = lock_put(c, q->m.name[i], q->m.len[i], rec);
        if (rc == 0 && i != self) rc = regrant_push(c, q->m.name[i], q->m.len[i]);
    }
    if (rc == 0)
        rc = owned_put(c, w->session, w->waiter, OWNED_HOLD, 1, fence, q->m.name[0], q->m.len[0]);
    res.value = fence;
    if (rc == 0) rc = dedup_update(c, w->session, w->waiter, &res);
    if (rc == 0) rc = fx_emit(c, FX_GRANT, 0, w->session, w->waiter, fence, q->m.name[0], q->m.len[0]);
    if (rc == 0) *granted = 1;
out:
    free(q);
    return rc;
}

/* ---- ends ------------------------------------------------------------------- */

/* The end of the multi-lock's owned entry, names and slots. */
static int multi_forget(struct apply_ctx *c, uint64_t session, uint64_t waiter, unsigned n,
                        unsigned keep_slots)
{
    int rc = owned_del(c, session, waiter);

    if (rc == 0) rc = sess_owned_add(c, session, -(int)(n - keep_slots));
    if (rc == 0) rc = multi_del(c, session, waiter);
    return rc;
}

/* One name of a multi-lock's hold ends (released, or lost): handed on,
 * or delayed for delay_ms (> 0). *r is saved either way. */
static int hold_end_one(struct apply_ctx *c, const char *name, size_t len, struct lock_rec *r,
                        uint64_t session, uint64_t waiter, uint64_t fence, int32_t delay_ms)
{
    int rc = hold_drop(c, name, len, r, fence);

    if (rc == 0) rc = session_lock_add(c, session, name, len, -1);
    if (rc != 0) return rc;
    if (delay_ms > 0) return lock_delay_start(c, name, len, r, session, waiter, fence, delay_ms);
    rc = lock_save(c, name, len, r);
    return rc != 0 ? rc : regrant_push(c, name, len);
}

int multi_release(struct apply_ctx *c, uint64_t session, uint64_t waiter, uint64_t fence)
{
    struct multi_names *m = malloc(sizeof *m);
    struct lock_rec r;
    int rc;

    if (m == NULL) return BATON_ENOMEM;
    rc = multi_get(c, session, waiter, m);
    for (unsigned i = 0; rc == 0 && i < m->n; i++) {
        rc = lock_get_existing(c, m->name[i], m->len[i], &r);
        if (rc == 0) rc = hold_end_one(c, m->name[i], m->len[i], &r, session, waiter, fence, 0);
    }
    if (rc == 0) rc = multi_forget(c, session, waiter, m->n, 0);
    free(m);
    return rc;
}

/* Take the multi-lock's entry (enq) out of every queue; the requests
 * behind it are regranted once the command is done. */
static int dequeue_all(struct apply_ctx *c, uint64_t session, const struct multi_names *m,
                       uint64_t enq)
{
    struct lock_rec r;
    int rc = 0;

    for (unsigned i = 0; i < m->n && rc == 0; i++) {
        rc = lock_get_existing(c, m->name[i], m->len[i], &r);
        if (rc == 0) rc = queue_remove(c, m->name[i], m->len[i], enq, &r);
        if (rc == 0) rc = session_lock_add(c, session, m->name[i], m->len[i], -1);
        if (rc == 0) rc = lock_save(c, m->name[i], m->len[i], &r);
        if (rc == 0) rc = regrant_push(c, m->name[i], m->len[i]);
    }
    return rc;
}

int multi_wait_end(struct apply_ctx *c, uint64_t session, uint64_t waiter,
                   const struct owned_rec *o, int32_t status)
{
    struct cmd_result ended = {.status = status, .kind = RESULT_OK};
    struct multi_names *m = malloc(sizeof *m);
    int rc;

    if (m == NULL) return BATON_ENOMEM;
    rc = fx_emit(c, FX_WAIT_FAILED, status, session, waiter, 0, o->name, o->name_len);
    if (rc == 0) rc = dedup_update(c, session, waiter, &ended);
    if (rc == 0) rc = multi_get(c, session, waiter, m);
    if (rc == 0) rc = dequeue_all(c, session, m, o->enq);
    if (rc == 0) rc = multi_forget(c, session, waiter, m->n, 0);
    free(m);
    return rc;
}

/*
 * The session ends (its owned entry o is deleted by the caller, and its
 * n_owned goes with the session). A wait leaves every queue; a hold ends
 * on every name -- after one FX_LOST with the first name if lost_status
 * is set --, each name delayed by the hold's lock-delay on an expiry.
 */
int multi_drop_owned(struct apply_ctx *c, uint64_t session, uint64_t waiter,
                     const struct owned_rec *o, int32_t lost_status, int expiry)
{
    struct multi_names *m = malloc(sizeof *m);
    struct lock_rec r;
    struct hold_rec h;
    int found, rc;

    if (m == NULL) return BATON_ENOMEM;
    rc = multi_get(c, session, waiter, m);
    if (rc == 0 && o->kind == OWNED_WAIT) {
        rc = dequeue_all(c, session, m, o->enq);
    } else if (rc == 0) {
        if (lost_status != 0)
            rc = fx_emit(c, FX_LOST, lost_status, session, waiter, o->enq, o->name, o->name_len);
        for (unsigned i = 0; i < m->n && rc == 0; i++) {
            rc = lock_get_existing(c, m->name[i], m->len[i], &r);
            if (rc == 0) rc = hold_get(c, m->name[i], m->len[i], o->enq, &h, &found);
            if (rc == 0 && !found) rc = MDB_CORRUPTED;
            if (rc == 0)
                rc = hold_end_one(c, m->name[i], m->len[i], &r, session, waiter, o->enq,
                                  expiry ? h.lock_delay_ms : 0);
        }
    }
    if (rc == 0) rc = multi_del(c, session, waiter);
    free(m);
    return rc;
}

int multi_force(struct apply_ctx *c, const char *name, size_t len, struct lock_rec *r,
                uint64_t fence, const struct hold_rec *h, int32_t delay_ms)
{
    struct multi_names *m = malloc(sizeof *m);
    struct lock_rec other;
    unsigned self;
    int rc;

    if (m == NULL) return BATON_ENOMEM;
    rc = multi_get(c, h->session, h->waiter, m);
    self = rc == 0 ? name_index(m, name, len) : 0;
    if (rc == 0 && self == m->n) rc = MDB_CORRUPTED;
    if (rc == 0)
        rc = fx_emit(c, FX_LOST, BATON_ELOST, h->session, h->waiter, fence, m->name[0], m->len[0]);
    if (rc == 0)
        rc = lost_put(c, h->session, h->waiter, fence, BATON_ELOST, m->name[0], m->len[0]);
    for (unsigned i = 0; rc == 0 && i < m->n; i++) {
        if (i == self) { /* the caller saves, delays or hands on the forced name */
            rc = hold_drop(c, name, len, r, fence);
            if (rc == 0) rc = session_lock_add(c, h->session, name, len, -1);
            continue;
        }
        rc = lock_get_existing(c, m->name[i], m->len[i], &other);
        if (rc == 0)
            rc = hold_end_one(c, m->name[i], m->len[i], &other, h->session, h->waiter, fence,
                              delay_ms);
    }
    /* The lost record keeps one slot of the n the multi-lock had. */
    if (rc == 0) rc = multi_forget(c, h->session, h->waiter, m->n, 1);
    free(m);
    return rc;
}
