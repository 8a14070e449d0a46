/*
 * disk.c -- keep the data directory's filesystem from filling up under
 * raft and the lock store (docs/operations.md, "Limits" and "Disk full").
 *
 * libraft 0.15 handles a failed disk write badly: only the first request of
 * a failed batch hears of it, the leader keeps leading, and a failure to
 * prepare a new log segment leaves requests queued against a segment that
 * no longer exists (docs/libraft-0.15.md, "failed disk writes";
 * canonical/raft#126). And the lock store grows its map on disk while it
 * applies an entry raft has already committed: if that growth fails, the
 * node cannot apply the entry at all (raft/node.c, "local failures").
 *
 * So batond does not let a client's command that grows the state reach
 * raft while the filesystem that holds --data has less free than
 * --min-free-mb PLUS the lock store's next growth step (store_next_growth:
 * the map's size up to 64 MiB, then 64 MiB): the command is answered
 * ERROR(BATON_ENOSPC) at once and nothing is proposed. The growth step
 * counts because a store that fills its map while the disk holds less
 * than the step cannot apply the entry that filled it. Every client
 * command of a session grows the state by its cached result (storage/
 * apply.c), so the rule is: OPEN_SESSION and the ACQUIREs (the grows
 * column of storage/cmd_table.h) are refused; a RELEASE, CANCEL or
 * CLOSE_SESSION goes through only if it gives more back than its result
 * takes -- it frees a hold, a wait or a lost record of its session, ends
 * the session, or is answered by its cached result (store_cmd_frees) --
 * so that a flood of RELEASEs of locks not held cannot fill the disk. The
 * operator's FORCE_RELEASE / EXPIRE_SESSION and MEMBER_ADD (one address,
 * at most 16) cache nothing and go through, as etcd still allows deletes
 * under its NOSPACE alarm: a holder must always be able to let go of its
 * lock, and refusing it would only keep the lock from its next waiter
 * until the lease ran out. The floor leaves room for those small entries and for
 * what raft and the store write anyway: the leader's own entries (lease
 * expiries, wait timeouts, lock-delay ends), replicated entries on
 * followers, snapshots, metadata.
 *
 * A timer checks the free space (statvfs) every DISK_CHECK_MS on every
 * node; a transition is logged once. Reads (STATUS, LOCK_INFO, LIST_*),
 * keepalives and pushes go on as usual. When space comes back the next
 * check lifts the refusal; nothing needs a restart.
 */
#include <string.h>
#include <sys/statvfs.h>

#include "baton/baton_defs.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/server_int.h"
#include "storage/cmd.h"

#define DISK_CHECK_MS 250

/* Measure the free space and update srv->disk_low. */
static void disk_check(struct server *srv)
{
    struct statvfs sv;
    uint64_t floor = (uint64_t)srv->cfg.min_free_mb << 20;
    bool low;

    if (floor == 0) return;
    if (statvfs(srv->cfg.data_dir, &sv) != 0) return; /* keep the last answer */
    srv->disk_free = (uint64_t)sv.f_bavail * sv.f_frsize;
    srv->disk_step = store_next_growth(srv->store);
    low = srv->disk_free < floor + srv->disk_step;
    if (low == srv->disk_low) return;
    srv->disk_low = low;
    if (low)
        log_warn("data disk: %.1f MiB free, below --min-free-mb %u plus the lock store's next "
                 "growth (%.1f MiB): refusing new sessions and locks",
                 (double)srv->disk_free / MIB, srv->cfg.min_free_mb, (double)srv->disk_step / MIB);
    else
        log_info("data disk: %.1f MiB free again: accepting new sessions and locks",
                 (double)srv->disk_free / MIB);
}

static void disk_timer_cb(uv_timer_t *t)
{
    disk_check(t->data);
}

void disk_init(struct server *srv)
{
    uv_timer_init(srv->loop, &srv->disk_timer);
    srv->disk_timer.data = srv;
    disk_check(srv);
    uv_timer_start(&srv->disk_timer, disk_timer_cb, DISK_CHECK_MS, DISK_CHECK_MS);
}

static void disk_closed(uv_handle_t *h)
{
    (void)h;
}

void disk_close(struct server *srv)
{
    if (!uv_is_closing((uv_handle_t *)&srv->disk_timer))
        uv_close((uv_handle_t *)&srv->disk_timer, disk_closed);
}

/* Does this command make the state bigger: a new session, hold or wait
 * (the grows column of storage/cmd_table.h), or a client command whose
 * cached result would be all it leaves? Only those are refused while the
 * disk is low. A client command with seq 0 is not deduplicated and caches
 * nothing. */
static bool grows_state(struct server *srv, const struct cmd *cmd)
{
    const struct cmd_row *t = cmd_lookup(cmd->type);

    if (t == NULL) return false;
    if (t->grows) return true;
    if (t->kind != CMD_KIND_CLIENT || cmd->seq == 0) return false;
    return !store_cmd_frees(srv->store, cmd);
}

bool disk_refuse(struct conn *c, uint64_t req_id, const struct cmd *cmd)
{
    struct server *srv = c->srv;

    if (!srv->disk_low || !grows_state(srv, cmd)) return false;
    metrics_inc_label(M_REFUSALS, REF_DISK_FULL);
    conn_send_error(c, req_id, BATON_ENOSPC,
                    "node %u's data disk has %.1f MiB free, below --min-free-mb %u plus the "
                    "%.1f MiB the lock store's next growth takes: new sessions, locks and "
                    "requests that free nothing are refused until space is freed",
                    srv->cfg.node.id, (double)srv->disk_free / MIB, srv->cfg.min_free_mb,
                    (double)srv->disk_step / MIB);
    return true;
}
