/*
 * sessions.c -- OPEN_SESSION, CLOSE_SESSION and EXPIRE_SESSION (the
 * session record cache the other commands use is ctx.c's).
 *
 * A session's id comes from the replicated counter next_session (the first
 * is 1; 0 never names a session). Its lease lives only in the leader's
 * memory (docs/design.md, "Leases and liveness"): the store keeps ttl_ms so
 * that a new leader
 * can re-arm every lease, but never reads a clock.
 */
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "storage/store_int.h"

/*
 * OPEN_SESSION(ttl_ms, client name, owner, nonce). The ttl was already
 * clamped by the leader that proposed it; the store records it as given.
 * The owner is the principal the leader authenticated on the connection
 * that asked ("" without authentication); the store keeps it so that any
 * later leader can tell whose session this is. A non-zero nonce (cmd->seq)
 * that names a live session of the same owner is a re-sent OPEN_SESSION:
 * it gets that session's id and changes nothing (nonces.c); otherwise the
 * new session is recorded under its nonce.
 */
int op_open_session(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res)
{
    struct sess_rec r;
    MDB_stat st;
    uint64_t id;
    int found, rc;

    rc = sess_flush(c); /* nonce_find and mdb_stat read DB_SESSIONS */
    if (rc != 0) return rc;
    if (cmd->seq != 0) {
        rc = nonce_find(c->s, c->txn, cmd->seq, cmd->owner, cmd->owner_len, &id, &found);
        if (rc != 0) return rc;
        if (found) {
            res->status = 0;
            res->kind = RESULT_OK;
            res->value = id;
            return 0;
        }
    }
    rc = mdb_stat(c->txn, c->s->dbi[DB_SESSIONS], &st);
    if (rc != 0) return rc;
    if (st.ms_entries >= STORE_MAX_SESSIONS) {
        res->status = BATON_ELIMIT;
        return 0;
    }
    memset(&r, 0, sizeof r);
    r.ttl_ms = cmd->ttl_ms;
    r.created = c->index;
    r.name_len = cmd->name_len; /* <= BATON_MAX_CLIENT_NAME: checked by the decoder */
    if (r.name_len > 0) memcpy(r.name, cmd->name, r.name_len);
    r.owner_len = (uint8_t)cmd->owner_len; /* <= BATON_MAX_PRINCIPAL: checked by the decoder */
    if (r.owner_len > 0) memcpy(r.owner, cmd->owner, r.owner_len);
    id = c->next_session++;
    rc = sess_put(c, id, &r);
    if (rc == 0 && cmd->seq != 0) rc = nonce_put(c, cmd->seq, cmd->owner, cmd->owner_len, id);
    if (rc != 0) return rc;
    res->status = 0;
    res->kind = RESULT_OK;
    res->value = id;
    return 0;
}

/* One entry of the owned table, copied out so that the table can change
 * while the list is worked through. */
struct owned_item {
    uint64_t waiter;
    struct owned_rec o;
};

/* Copy the session's owned entries, in waiter order, into a malloc'd array. */
static int collect_owned(struct apply_ctx *c, uint64_t session, uint32_t hint,
                         struct owned_item **items, size_t *n)
{
    struct owned_item *arr = NULL;
    size_t cap = hint ? hint : 4, len = 0;
    MDB_cursor *cur;
    MDB_val k, v;
    uint8_t lo[16];
    int rc;

    *items = NULL;
    *n = 0;
    arr = malloc(cap * sizeof *arr);
    if (arr == NULL) return BATON_ENOMEM;
    rc = mdb_cursor_open(c->txn, c->s->dbi[DB_OWNED], &cur);
    if (rc != 0) goto out;
    key_pair(lo, session, 0);
    k.mv_size = sizeof lo;
    k.mv_data = lo;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != 16 || be_get_u64(k.mv_data) != session) break;
        if (len == cap) {
            struct owned_item *p = realloc(arr, cap * 2 * sizeof *arr);
            if (p == NULL) {
                rc = BATON_ENOMEM;
                break;
            }
            arr = p;
            cap *= 2;
        }
        arr[len].waiter = be_get_u64((const uint8_t *)k.mv_data + 8);
        rc = owned_decode(&v, &arr[len].o);
        if (rc != 0) break;
        len++;
    }
    mdb_cursor_close(cur);
    if (rc == MDB_NOTFOUND) rc = 0;
out:
    if (rc != 0) {
        free(arr);
        return rc;
    }
    *items = arr;
    *n = len;
    return 0;
}

/*
 * CLOSE_SESSION (why = 0) and EXPIRE_SESSION (why = BATON_ESESSION): the
 * session lets go of everything and disappears.
 *
 * Its waits are dropped first and its holds released after, so that a hold
 * is never handed to another waiter of the same dying session (several of
 * its threads may queue for one lock). Each released hold goes to that
 * lock's next waiter (FX_GRANT); on expiry the holder is also told it lost
 * the lock (FX_LOST with BATON_ESESSION) before the grant, and a hold with
 * a lock-delay is not handed on at all: its lock becomes delayed
 * (FX_LOCK_DELAY) until the leader's DELAY_END. A close never delays. The
 * dropped waits produce no FX_WAIT_FAILED: FX_SESSION_GONE, emitted last,
 * covers them, and the session's lost records (lost.c) go too: the end of
 * the session tells its client that every hold is gone.
 */
static int end_session(struct apply_ctx *c, const struct cmd *cmd, int32_t why,
                       struct cmd_result *res)
{
    struct owned_item *items;
    struct sess_rec sess;
    size_t n;
    int found, rc;

    rc = sess_get(c, cmd->session, &sess, &found);
    if (rc != 0) return rc;
    if (!found) {
        res->status = BATON_ESESSION;
        return 0;
    }
    rc = collect_owned(c, cmd->session, sess.n_owned, &items, &n);
    if (rc != 0) return rc;
    for (int pass = 0; pass < 2 && rc == 0; pass++) {
        uint8_t kind = pass == 0 ? OWNED_WAIT : OWNED_HOLD;
        for (size_t i = 0; i < n && rc == 0; i++) {
            if (items[i].o.kind != kind) continue;
            rc = locks_drop_owned(c, cmd->session, items[i].waiter, &items[i].o, why,
                                  why == BATON_ESESSION);
            if (rc != 0) break;
            rc = owned_del(c, cmd->session, items[i].waiter);
        }
    }
    /* The requests behind a dropped wait may be granted now (a shared one
     * behind a dropped exclusive one): none of them is this session's. */
    for (size_t i = 0; i < n && rc == 0; i++)
        if (items[i].o.kind == OWNED_WAIT)
            rc = locks_regrant(c, items[i].o.name, items[i].o.name_len);
    free(items);
    if (rc != 0) return rc;
    rc = lost_drop_session(c, cmd->session); /* the client is told by the session's end */
    if (rc != 0) return rc;
    rc = dedup_drop_session(c, cmd->session);
    if (rc == 0) rc = nonce_drop(c, cmd->session, &sess);
    if (rc != 0) return rc;
    rc = sess_del(c, cmd->session);
    if (rc != 0) return rc;
    rc = fx_emit(c, FX_SESSION_GONE, why, cmd->session, 0, 0, NULL, 0);
    if (rc != 0) return rc;
    res->status = 0;
    res->kind = RESULT_OK;
    return 0;
}

int op_close_session(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res)
{
    return end_session(c, cmd, 0, res);
}

int op_expire_session(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res)
{
    return end_session(c, cmd, BATON_ESESSION, res);
}
