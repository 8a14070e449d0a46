/*
 * nonces.c -- OPEN_SESSION's nonces (proto/msg.h, cmd.h): the index from
 * (nonce, owner) to the session an OPEN_SESSION with that nonce opened,
 * and its reverse, so that a re-sent OPEN_SESSION whose SESSION reply was
 * lost gets the session it opened instead of opening a second one.
 *
 * The owner is part of the key: a nonce is the client's, drawn at random,
 * and scoping it by the principal that sent it means one principal can
 * neither learn another's session through its nonce nor make another's
 * OPEN_SESSION answer with the wrong session, whatever nonces it sends.
 * (Within one principal, two clients drawing the same 64-bit nonce while
 * both sessions live is as likely as guessing a random 64-bit number; the
 * second would share the first's session, as any two clients of that
 * principal may.)
 *
 * Entries live exactly as long as their session: op_open_session adds
 * them, end_session (close or expiry) removes them with the session
 * record. So the index is bounded by the sessions (STORE_MAX_SESSIONS),
 * and a nonce whose session has ended names nothing: an OPEN_SESSION that
 * carries it opens a new session (docs/design.md, "Deduplication", says
 * why that is the right answer).
 */
#include <string.h>

#include "proto/buf.h"
#include "storage/store_int.h"

int nonce_find(store *s, MDB_txn *txn, uint64_t nonce, const char *owner, size_t owner_len,
               uint64_t *session, int *found)
{
    uint8_t k[NONCE_KEY_MAX], sk[8];
    MDB_val v;
    int rc, live;

    rc = db_get(txn, s->dbi[DB_NONCES], k, key_nonce(k, nonce, owner, owner_len), &v, found);
    if (rc != 0 || !*found) return rc;
    if (v.mv_size != NONCE_VAL_LEN) return MDB_CORRUPTED;
    *session = le_get_u64(v.mv_data);
    key_u64(sk, *session);
    rc = db_get(txn, s->dbi[DB_SESSIONS], sk, sizeof sk, &v, &live);
    if (rc == 0 && !live) rc = MDB_CORRUPTED; /* the session took its nonce with it */
    return rc;
}

int nonce_put(struct apply_ctx *c, uint64_t nonce, const char *owner, size_t owner_len,
              uint64_t session)
{
    uint8_t k[NONCE_KEY_MAX], sk[8], v[NONCE_VAL_LEN];
    int rc;

    le_put_u64(v, session);
    rc = db_put(c->txn, c->s->dbi[DB_NONCES], k, key_nonce(k, nonce, owner, owner_len), v,
                sizeof v);
    if (rc != 0) return rc;
    key_u64(sk, session);
    le_put_u64(v, nonce);
    return db_put(c->txn, c->s->dbi[DB_SESSION_NONCES], sk, sizeof sk, v, sizeof v);
}

int nonce_drop(struct apply_ctx *c, uint64_t session, const struct sess_rec *r)
{
    uint8_t k[NONCE_KEY_MAX], sk[8];
    uint64_t nonce;
    MDB_val v;
    int found, rc;

    key_u64(sk, session);
    rc = db_get(c->txn, c->s->dbi[DB_SESSION_NONCES], sk, sizeof sk, &v, &found);
    if (rc != 0 || !found) return rc;
    if (v.mv_size != NONCE_VAL_LEN) return MDB_CORRUPTED;
    nonce = le_get_u64(v.mv_data);
    rc = db_del(c->txn, c->s->dbi[DB_SESSION_NONCES], sk, sizeof sk, NULL);
    if (rc != 0) return rc;
    return db_del(c->txn, c->s->dbi[DB_NONCES], k, key_nonce(k, nonce, r->owner, r->owner_len),
                  NULL);
}
