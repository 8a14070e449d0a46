/*
 * level.c -- the cluster's committed feature level (cmd_table.h, level):
 * SET_LEVEL's handler and store_level. The level is the meta key "level",
 * a u64, absent until the first SET_LEVEL: absent reads as level 1, so a
 * store and a snapshot of a level-1 cluster are what they were before the
 * key existed. It only rises: the leader proposes SET_LEVEL N once every
 * voter runs a binary of level N or more (server/levels.c), and a lower or
 * equal N changes nothing.
 */
#include <stdint.h>

#include "baton/baton_defs.h"
#include "storage/store_int.h"

/*
 * SET_LEVEL: raise the cluster's level to cmd->session. 0 or a level past
 * UINT32_MAX fails with BATON_EINVAL; a level at or below the current one
 * changes nothing. The result's value is the level after the command.
 * The same on every node whatever level its binary supports: a node that
 * could not apply level N rows could not have decoded this entry either.
 */
int op_set_level(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res)
{
    uint64_t level;
    int rc;

    res->kind = RESULT_OK;
    if (cmd->session == 0 || cmd->session > UINT32_MAX) {
        res->status = BATON_EINVAL;
        return 0;
    }
    rc = level_get(c->s, c->txn, &level);
    if (rc != 0) return rc;
    if (cmd->session > level) {
        level = cmd->session;
        rc = meta_put_u64(c->s, c->txn, META_LEVEL, level);
        /* the store's format follows (store_int.h, format 9) */
        if (rc == 0) rc = meta_put_u64(c->s, c->txn, META_FORMAT, store_format_at(level));
    }
    res->value = level;
    return rc;
}

uint32_t store_level(store *s)
{
    MDB_txn *txn;
    uint64_t level = 1;

    if (mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn) != 0) return 1;
    if (level_get(s, txn, &level) != 0 || level > UINT32_MAX) level = 1;
    mdb_txn_abort(txn);
    return (uint32_t)level;
}
