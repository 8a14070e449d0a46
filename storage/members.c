/*
 * members.c -- the members table: the client address of each cluster
 * member that an operator added with `batonctl member add` (cmd.h,
 * SET_MEMBER_ADDR), replicated like the lock state so that every node can
 * send clients to any member, including one missing from its own --cluster
 * list.
 *
 * Key: the member id as be32 (numeric order). Value: the address bytes, no
 * terminator, an address of the grammar of proto/addr.h (1..BATON_MAX_ADDR
 * bytes).
 */
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/addr.h"
#include "proto/buf.h"
#include "storage/store_int.h"

/* The key of member id: be32, so that LMDB's byte order is numeric. */
static void member_key(uint8_t k[MEMBER_KEY_LEN], uint32_t id)
{
    k[0] = (uint8_t)(id >> 24);
    k[1] = (uint8_t)(id >> 16);
    k[2] = (uint8_t)(id >> 8);
    k[3] = (uint8_t)id;
}

/* Only the syntax is checked, with the parser every other reader of
 * addresses uses: which kinds of host a node can reach is the transport's
 * business, not the replicated table's. */
int member_addr_ok(const void *addr, size_t n)
{
    struct proto_addr a;

    return proto_addr_parse(addr, n, &a) == 0;
}

/*
 * SET_MEMBER_ADDR: store (or, with an empty address, delete) member
 * cmd->session's client address. A bad id or address fails the command
 * with BATON_EINVAL and changes nothing; deleting an absent entry is fine.
 */
int op_set_member_addr(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res)
{
    uint8_t k[MEMBER_KEY_LEN];

    res->kind = RESULT_OK;
    if (cmd->session == 0 || cmd->session > UINT32_MAX ||
        (cmd->name_len > 0 && !member_addr_ok(cmd->name, cmd->name_len))) {
        res->status = BATON_EINVAL;
        return 0;
    }
    member_key(k, (uint32_t)cmd->session);
    if (cmd->name_len == 0) return db_del(c->txn, c->s->dbi[DB_MEMBERS], k, sizeof k, NULL);
    return db_put(c->txn, c->s->dbi[DB_MEMBERS], k, sizeof k, cmd->name, cmd->name_len);
}

int member_put(store *s, MDB_txn *txn, uint32_t id, const char *addr)
{
    uint8_t k[MEMBER_KEY_LEN];
    size_t n = addr != NULL ? strlen(addr) : 0;

    if (id == 0 || n == 0 || !member_addr_ok(addr, n)) return 0;
    member_key(k, id);
    return db_put(txn, s->dbi[DB_MEMBERS], k, sizeof k, addr, n);
}

int store_member_addr(store *s, uint32_t id, char *out, size_t cap)
{
    uint8_t k[MEMBER_KEY_LEN];
    MDB_txn *txn;
    MDB_val v;
    int found, rc;

    if (cap > 0) out[0] = '\0';
    if (cap <= BATON_MAX_ADDR) return BATON_EINVAL;
    rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn);
    if (rc != 0) return store__err(rc);
    member_key(k, id);
    rc = db_get(txn, s->dbi[DB_MEMBERS], k, sizeof k, &v, &found);
    if (rc == 0 && found) {
        if (member_addr_ok(v.mv_data, v.mv_size)) {
            memcpy(out, v.mv_data, v.mv_size);
            out[v.mv_size] = '\0';
        } else {
            rc = MDB_CORRUPTED;
        }
    }
    mdb_txn_abort(txn);
    if (rc != 0) return store__err(rc);
    return found ? 1 : 0;
}

int store_member_ids(store *s, uint32_t *ids, int max)
{
    MDB_txn *txn;
    MDB_cursor *cur;
    MDB_val k, v;
    int rc, n = 0;

    rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn);
    if (rc != 0) return store__err(rc);
    rc = mdb_cursor_open(txn, s->dbi[DB_MEMBERS], &cur);
    if (rc == 0) {
        for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
             rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
            const uint8_t *b = k.mv_data;

            if (k.mv_size != MEMBER_KEY_LEN) {
                rc = MDB_CORRUPTED;
                break;
            }
            if (n < max)
                ids[n] = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
            n++;
        }
        if (rc == MDB_NOTFOUND) rc = 0;
        mdb_cursor_close(cur);
    }
    mdb_txn_abort(txn);
    return rc != 0 ? store__err(rc) : n;
}
