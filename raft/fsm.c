/*
 * fsm.c -- the raft_fsm callbacks apply and restore over the store, and the
 * gates that keep entries libraft 0.15 may have committed by counting
 * replicas out of the store (fsm.h). The snapshot callbacks are in
 * raft/fsm_snap.c.
 *
 * libraft 0.15 does not pass the entry index to apply; while apply runs, the
 * entry being applied is raft_last_applied() + 1 (docs/libraft-0.15.md,
 * "apply has no index, and a refused apply is retried"). The store skips
 * entries at or below its own applied index, which makes
 * the log replay that raft does on every restart harmless.
 */
#include "raft/fsm.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "baton/baton_defs.h"

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
 * Is raft's commit index a real commit? One that stands on an entry of the
 * current term is: only this term's leader makes entries of this term, so
 * on a follower that entry and everything before it match the leader's
 * log (log matching), and the leader's commit index, at or past it, is on
 * an entry of its own term, which it may count replicas for (Raft paper,
 * 5.4.2). One that stands on an entry of an earlier term may have been
 * reached by counting replicas of that entry (canonical/raft#220), and
 * another leader may still replace it.
 */
static bool commit_sure(struct raft *r)
{
    return log_term(&r->log, r->commit_index) == r->current_term;
}

bool fsm_commit_sure(struct fsm *f)
{
    return f->raft != NULL && commit_sure(f->raft);
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
 * barrier on every election (raft/node.c), which opens the gate. A
 * follower defers instead (gate_apply below).
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
    return raft_state(r) == RAFT_LEADER && !commit_sure(r);
}

/*
 * Apply the entry at `index` whose raft bytes are base[0..size) to the
 * store, fill f->fx with its results and effects and hand them to the
 * applied hook. 0, or RAFT_IOERR when the store failed or the entry cannot
 * be decoded (nothing changed; f->fault and f->fault_why say why).
 *
 * An entry this binary cannot decode -- not in our framing, or a batch
 * with a type byte it does not know (a command of a later feature level:
 * storage/cmd_table.h, level), another format or bad fields -- is a fault
 * like a failed write, never skipped: skipping it would leave this node's
 * locks and fences apart from the other nodes' while its applied index and
 * digest kept pace with theirs. The node stops at it (node.c, "local
 * failures"). An empty batch (length 0) is batond's own empty entry
 * (node_snapshot_now), not a fault; raft's barriers and configuration
 * entries never reach apply.
 */
int fsm_apply_entry(struct fsm *f, uint64_t index, const uint8_t *base, size_t size)
{
    uint64_t before = store_applied_index(f->store);
    uint64_t len = 0, start;
    int rv;

    f->fault_why[0] = '\0';
    if (size >= 8) len = le_get_u64(base);
    if (size < 8 || len > size - 8) {
        snprintf(f->fault_why, sizeof f->fault_why,
                 "a raft entry of %zu bytes is not in batond's entry framing", size);
        rv = BATON_EMALFORMED;
    } else {
        start = uv_hrtime();
        rv = store_apply(f->store, index, base + 8, (size_t)len, &f->fx);
        f->fx.apply_ns = uv_hrtime() - start;
        if (rv == BATON_EMALFORMED)
            cmd_batch_why(base + 8, (size_t)len, f->fault_why, sizeof f->fault_why);
    }
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
    return 0;
}

/* The node must stop (fsm_failed): record why, once. */
static void gate_fail(struct fsm *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void gate_fail(struct fsm *f, const char *fmt, ...)
{
    va_list ap;

    if (f->failure[0] != '\0') return;
    va_start(ap, fmt);
    vsnprintf(f->failure, sizeof f->failure, fmt, ap);
    va_end(ap);
}

/*
 * Apply the gate's entries in order; the commit is sure. Each must still be
 * in raft's log with the term it had when it was deferred. One whose index
 * holds another term was replaced: the commit that covered it was not
 * real, the store never applied it, and only a restart -- which replays
 * the log from the store's applied index -- puts this node right (raft
 * 0.15 itself stops a follower asked to replace an entry below its commit
 * index). One that is no longer in the log waits: raft is installing a
 * snapshot, whose restore empties the gate. Returns 0 once the gate is
 * empty, non-zero while entries remain.
 */
static int gate_drain(struct fsm *f)
{
    const struct gate_entry *e;

    while ((e = gate_front(&f->gate)) != NULL) {
        raft_term now = log_term(&f->raft->log, e->index);

        if (now == 0) return RAFT_BUSY;
        if (now != e->term) {
            gate_fail(f,
                      "entry %llu of term %llu, held until its commit was sure, was replaced by "
                      "one of term %llu (canonical/raft#220): this node's store never applied it; "
                      "restart the node to replay its log",
                      (unsigned long long)e->index, (unsigned long long)e->term,
                      (unsigned long long)now);
            return RAFT_SHUTDOWN;
        }
        if (fsm_apply_entry(f, e->index, e->data, e->len) != 0) return RAFT_IOERR;
        gate_pop(&f->gate);
    }
    return 0;
}

/* gate_apply's answer when the entry may go to the store now. */
#define GATE_OPEN 1

/*
 * The follower's gate (fsm.h) for the entry at `index`: GATE_OPEN when it
 * may be applied now -- the commit is sure and every entry deferred before
 * it has been applied -- or else what fsm_apply returns to raft: 0 when
 * the entry joined the queue, RAFT_BUSY on a leader whose queue could not
 * drain (raft retries; a leader may refuse), RAFT_SHUTDOWN once the node
 * must stop (a follower's raft stops on it).
 */
static int gate_apply(struct fsm *f, uint64_t index, const struct raft_buffer *buf)
{
    struct raft *r = f->raft;
    int rv;

    if (f->failure[0] != '\0') return RAFT_SHUTDOWN;
    if (commit_sure(r) && gate_drain(f) == 0) return GATE_OPEN;
    if (f->failure[0] != '\0') return RAFT_SHUTDOWN;
    if (raft_state(r) == RAFT_LEADER) return RAFT_BUSY;
    rv = gate_push(&f->gate, index, log_term(&r->log, index), buf->base, buf->len);
    if (rv != 0) {
        gate_fail(f, "%s while %zu entries waited for a sure commit (canonical/raft#220); "
                     "restart the node to replay its log",
                  baton_strerror(rv), gate_len(&f->gate));
        return RAFT_SHUTDOWN;
    }
    f->n_gated++;
    return 0;
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
    int rv;

    *result = NULL;
    if (leader_commit_unsure(f->raft)) {
        f->n_deferred++;
        return RAFT_BUSY;
    }
    rv = gate_apply(f, index, buf);
    if (rv != GATE_OPEN) return rv;
    rv = fsm_apply_entry(f, index, buf->base, buf->len);
    if (rv != 0) return rv;
    *result = &f->fx;
    return 0;
}

void fsm_flush(struct fsm *f)
{
    struct raft *r = f->raft;
    int state;

    if (gate_len(&f->gate) == 0 || f->failure[0] != '\0' || r == NULL) return;
    state = raft_state(r);
    if ((state == RAFT_FOLLOWER || state == RAFT_LEADER) && commit_sure(r)) gate_drain(f);
}

size_t fsm_gated(const struct fsm *f)
{
    return gate_len(&f->gate);
}

uint64_t fsm_state_index(const struct fsm *f)
{
    const struct gate_entry *e = gate_front(&f->gate);

    if (e != NULL) return e->index - 1;
    return f->raft != NULL ? raft_last_applied(f->raft) : 0;
}

const char *fsm_failed(const struct fsm *f)
{
    return f->failure[0] != '\0' ? f->failure : NULL;
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
    /* raft has replaced its log with the snapshot and re-delivers every
     * entry after it: whatever the gate held is the snapshot's now, or
     * comes again. */
    gate_clear(&f->gate);
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
        .base = {.version = 1, .data = f, .apply = fsm_apply, .restore = fsm_restore},
        .store = s,
        .applied = applied,
        .data = data,
    };
    effects_init(&f->fx);
    fsm_snap_init(f);
}

void fsm_close(struct fsm *f)
{
    fsm_snap_close(f);
    gate_free(&f->gate);
    effects_free(&f->fx);
}
