/*
 * proclaim.c -- SET_VALUE, a holder's proclaim: the value of its hold
 * replaced (values.c keeps the values).
 */
#include "baton/baton_defs.h"
#include "proto/lockreq.h"
#include "storage/store_int.h"

/*
 * SET_VALUE(session, seq, fence, name, value): the holder of `fence` on
 * `name` replaces its hold's value (an empty value removes it). Another
 * session's hold, or none, is BATON_ENOTHELD; a hold of this session that
 * was forced away (a lost record) is BATON_ELOST, which leaves the lost
 * record for the session's RELEASE to acknowledge. Watchers see the
 * change (FX_LOCK_CHANGED through lock_put).
 */
int op_set_value(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res)
{
    struct lock_rec r;
    struct hold_rec h;
    int found, rc;

    res->kind = RESULT_OK;
    if (!proto_lock_name_ok(cmd->name, cmd->name_len) || cmd->value_len > CMD_MAX_VALUE) {
        res->status = BATON_EINVAL;
        return 0;
    }
    rc = lock_get(c, cmd->name, cmd->name_len, &r, &found);
    if (rc == 0 && found) rc = hold_get(c, cmd->name, cmd->name_len, cmd->fence, &h, &found);
    if (rc != 0) return rc;
    if (!found || h.session != cmd->session) {
        rc = lost_has(c, cmd->session, cmd->fence, cmd->name, cmd->name_len, &found);
        res->status = found ? BATON_ELOST : BATON_ENOTHELD;
        return rc;
    }
    if (h.multi) { /* a multi-lock's value would be one name's only */
        res->status = BATON_EINVAL;
        return 0;
    }
    rc = value_put(c, cmd->session, h.waiter, cmd->value, cmd->value_len);
    if (rc == 0) rc = lock_put(c, cmd->name, cmd->name_len, &r); /* watchers see it */
    return rc;
}
