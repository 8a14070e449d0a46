/*
 * values.c -- the values of holds and waits (feature level 3): who a
 * holder says it is (an address, a name, a JSON document), opaque bytes
 * kept with the request that carried them.
 *
 * DB_VALUES maps (be64 session, be64 waiter) -- the key of the request's
 * owned entry -- to 1..CMD_MAX_VALUE bytes. An ACQUIRE with a value
 * writes it when it is granted or queued; a queued request keeps it when
 * it is granted later (the owned key does not change); SET_VALUE, the
 * holder's proclaim, replaces it; and it goes whenever the owned entry
 * goes (owned_del, and a session's end), so a value never outlives its
 * hold or wait. No value (or an empty one) is no record.
 *
 * What a session can make the cluster store is bounded: at most
 * STORE_MAX_OWNED_PER_SESSION holds and waits, each with at most the
 * leader's --max-value bytes (server/config.c), and the sessions a
 * principal may open are bounded by the leader too.
 */
#include <string.h>

#include "baton/baton_defs.h"
#include "storage/store_int.h"

int value_put(struct apply_ctx *c, uint64_t session, uint64_t waiter, const uint8_t *v,
              size_t len)
{
    uint8_t k[16];

    key_pair(k, session, waiter);
    if (len == 0) return db_del(c->txn, c->s->dbi[DB_VALUES], k, sizeof k, NULL);
    return db_put(c->txn, c->s->dbi[DB_VALUES], k, sizeof k, v, len);
}

int value_del(struct apply_ctx *c, uint64_t session, uint64_t waiter)
{
    return value_put(c, session, waiter, NULL, 0);
}

int value_read(store *s, MDB_txn *txn, uint64_t session, uint64_t waiter, MDB_val *v)
{
    uint8_t k[16];
    int found, rc;

    key_pair(k, session, waiter);
    rc = db_get(txn, s->dbi[DB_VALUES], k, sizeof k, v, &found);
    if (rc == 0 && !found) {
        v->mv_size = 0;
        v->mv_data = NULL;
    }
    return rc;
}
