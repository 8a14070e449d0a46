/*
 * fsm.c -- the raft_fsm callbacks (apply, snapshot, restore) over the store.
 *
 * libraft 0.15 does not pass the entry index to apply; while apply runs, the
 * entry being applied is raft_last_applied() + 1 (docs/libraft-0.15.md,
 * "apply has no index, and a refused apply is retried"). The store skips
 * entries at or below its own applied index, which makes
 * the log replay that raft does on every restart harmless.
 */
#include "raft/fsm.h"

#include <string.h>

#include "client/baton_defs.h"

/* The term of the entry at `index` in raft's in-memory log, 0 if it is not
 * there (libraft 0.15's struct raft_log is public: a circular buffer of the
 * entries after `offset`). */
static raft_term log_term(const struct raft_log *l, raft_index index)
{
    size_t n = l->back >= l->front ? l->back - l->front : l->size - l->front + l->back;

    if (index <= l->offset || index > l->offset + n) return 0;
    return l->entries[(l->front + (index - l->offset - 1)) % l->size].term;
}

/*
 * May the leader apply its committed entries yet? libraft 0.15 commits an
 * entry of an earlier term as soon as a majority stores it, without first
 * committing an entry of the leader's own term (canonical/raft#220, Raft
 * paper figure 8): such an entry may still be replaced by another leader.
 * A leader's commit index that reaches an entry of its own term is a real
 * commit (everything before it is committed too); one that stops at an
 * earlier term's entry may not be. So the leader applies nothing until its
 * commit index is on an entry of its own term -- batond's node commits a
 * barrier on every election (raft/node.c), which opens the gate. Followers
 * cannot tell and apply what the leader says is committed.
 *
 * Refusing is safe on a leader only: there libraft 0.15 ignores the error
 * of apply, keeps the entry, and applies it again on the next commit
 * (docs/libraft-0.15.md, "apply has no index, and a refused apply is
 * retried"); a follower that fails an apply while handling an
 * AppendEntries stops its raft. docs/libraft-0.15.md, "Figure 8", has the
 * test that shows what this prevents.
 */
static bool leader_commit_unsure(struct raft *r)
{
    return raft_state(r) == RAFT_LEADER &&
           log_term(&r->log, r->commit_index) != r->current_term;
}

/*
 * Apply one committed RAFT_COMMAND entry. The effects buffer is reused for
 * every entry: libraft calls the proposer's apply callback right after this
 * function returns, in the same call stack, and that callback reads the
 * results through *result before the next entry is applied.
 *
 * A local failure (disk, memory) is returned to raft as non-zero, which makes
 * raft retry the same entry later, and recorded in f->fault; application-level
 * failures travel inside the results and never stop the log.
 */
static int fsm_apply(struct raft_fsm *rf, const struct raft_buffer *buf, void **result)
{
    struct fsm *f = rf->data;
    uint64_t index = raft_last_applied(f->raft) + 1;
    uint64_t before = store_applied_index(f->store);
    const uint8_t *payload = buf->base;
    uint64_t len = 0;
    int rv;

    if (leader_commit_unsure(f->raft)) {
        f->n_deferred++;
        return RAFT_BUSY;
    }
    /* An entry that is not in our framing is applied as an empty (malformed)
     * batch: every node rejects it the same way and the log moves on. */
    if (buf->len >= 8) len = le_get_u64(payload);
    if (buf->len < 8 || len > buf->len - 8) len = 0;
    rv = store_apply(f->store, index, payload + (buf->len >= 8 ? 8 : 0), (size_t)len, &f->fx);
    if (rv != 0) {
        /* Nothing of the entry was applied (one transaction). Raft retries
         * it on a leader and stops a follower's raft: node.c reads the
         * fault after this turn and acts on it ("local failures"). */
        f->fault = rv;
        f->fault_index = index;
        return RAFT_IOERR;
    }
    f->fault = 0;
    if (index <= before) f->n_skipped++;
    f->fx.index = index;
    if (f->applied != NULL) f->applied(f->data, &f->fx);
    *result = &f->fx;
    return 0;
}

/*
 * Take a snapshot, synchronously on the loop (fsm version 1): first force the
 * LMDB files to disk, because raft deletes log entries older than the
 * snapshot once it is persisted and LMDB runs with MDB_NOSYNC; then dump the
 * whole state into one raft_malloc'd buffer, which raft frees.
 */
static int fsm_snapshot(struct raft_fsm *rf, struct raft_buffer *bufs[], unsigned *n_bufs)
{
    struct fsm *f = rf->data;
    struct buf b = {0};
    int rv;

    if (store_sync(f->store) != 0) return RAFT_IOERR;
    rv = store_snapshot(f->store, &b);
    if (rv != 0) {
        buf_free(&b);
        return rv == BATON_ENOMEM ? RAFT_NOMEM : RAFT_IOERR;
    }
    *bufs = raft_malloc(sizeof **bufs);
    if (*bufs == NULL) goto err;
    (*bufs)[0].base = raft_malloc(b.len);
    if ((*bufs)[0].base == NULL) goto err_after_bufs;
    memcpy((*bufs)[0].base, b.data, b.len);
    (*bufs)[0].len = b.len;
    *n_bufs = 1;
    buf_free(&b);
    f->n_snapshots++;
    return 0;

err_after_bufs:
    raft_free(*bufs);
    *bufs = NULL;
err:
    buf_free(&b);
    return RAFT_NOMEM;
}

/*
 * Install a snapshot: at every start (raft loads its latest snapshot) and on
 * a follower that received one. The store ignores a snapshot that is not
 * newer than its state. On success we own buf->base; on error raft frees it.
 */
static int fsm_restore(struct raft_fsm *rf, struct raft_buffer *buf)
{
    struct fsm *f = rf->data;
    uint64_t before = store_applied_index(f->store);
    int rv = store_restore(f->store, buf->base, buf->len);

    if (rv == BATON_EMALFORMED) return RAFT_MALFORMED;
    if (rv != 0) return RAFT_IOERR;
    if (store_applied_index(f->store) != before) f->n_restores++;
    raft_free(buf->base);
    return 0;
}

size_t fsm_entry_size(size_t len)
{
    return 8 + ((len + 7) & ~(size_t)7);
}

void fsm_entry_encode(void *entry, const void *payload, size_t len)
{
    uint8_t *p = entry;
    size_t size = fsm_entry_size(len);

    le_put_u64(p, len);
    memcpy(p + 8, payload, len);
    memset(p + 8 + len, 0, size - 8 - len);
}

void fsm_init(struct fsm *f, store *s, fsm_applied_cb *applied, void *data)
{
    *f = (struct fsm){
        .base = {.version = 1, .data = f, .apply = fsm_apply, .snapshot = fsm_snapshot,
                 .restore = fsm_restore},
        .store = s,
        .applied = applied,
        .data = data,
    };
    effects_init(&f->fx);
}

void fsm_close(struct fsm *f)
{
    effects_free(&f->fx);
}
