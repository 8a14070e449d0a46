/*
 * fsm_snap.c -- the raft_fsm snapshot callbacks over the store: on the loop
 * (fsm version 1, what raft_fixture can run), or with the dump on a libuv
 * pool thread (version 3, fsm_use_async_snapshots, what batond runs).
 *
 * What libraft 0.15 does with the answer of fsm->snapshot: RAFT_BUSY skips
 * this snapshot (raft tries again after a later apply); any other error is
 * returned from its apply path, and a follower that meets it while
 * handling an AppendEntries stops its raft for good. So every failure here
 * -- the store cannot sync or dump, memory -- is answered RAFT_BUSY, and
 * the next attempt waits SNAP_RETRY_ENTRIES entries rather than re-running
 * a failing dump after every apply. The version 3 dump's own failure is
 * harmless either way: raft then drops the snapshot and calls finalize.
 *
 * A snapshot is refused too while the follower's gate holds entries
 * (fsm.h): raft takes it at its own last applied index, which counts them,
 * while the store has not applied them -- the snapshot would claim entries
 * its state lacks, and raft would drop them from its log.
 */
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "baton/baton_defs.h"
#include "raft/fsm.h"

/* After a failed snapshot, the entries applied before the next attempt. */
#define SNAP_RETRY_ENTRIES 64

/* May no snapshot be taken now? Counts the refusal. */
static bool snap_refused(struct fsm *f)
{
    bool refuse = fsm_gated(f) > 0 || fsm_failed(f) != NULL || f->snap != NULL ||
                  (f->raft != NULL && raft_last_applied(f->raft) < f->snap_retry_at);

    if (refuse) f->n_snapshot_refusals++;
    return refuse;
}

/* A snapshot failed: skip it (see the top of this file), and wait a while
 * before the next. */
static int snap_failed(struct fsm *f)
{
    f->snap_retry_at = (f->raft != NULL ? raft_last_applied(f->raft) : 0) + SNAP_RETRY_ENTRIES;
    f->n_snapshot_refusals++;
    return RAFT_BUSY;
}

/*
 * Version 1: the whole snapshot on the loop. First force the LMDB files to
 * disk, because raft deletes log entries older than the snapshot once it is
 * persisted and LMDB runs with MDB_NOSYNC; then dump the state into one
 * raft_malloc'd buffer, which raft frees.
 */
static int fsm_snapshot(struct raft_fsm *rf, struct raft_buffer *bufs[], unsigned *n_bufs)
{
    struct fsm *f = rf->data;
    struct buf b = {0};
    struct raft_buffer *rb;

    if (snap_refused(f)) return RAFT_BUSY;
    f->snap_started_ns = uv_hrtime();
    if (store_sync(f->store) != 0 || store_snapshot(f->store, &b) != 0) goto fail;
    rb = raft_malloc(sizeof *rb);
    if (rb == NULL) goto fail;
    rb->base = raft_malloc(b.len);
    if (rb->base == NULL) {
        raft_free(rb);
        goto fail;
    }
    memcpy(rb->base, b.data, b.len);
    rb->len = b.len;
    *bufs = rb;
    *n_bufs = 1;
    buf_free(&b);
    f->snap_last_ns = uv_hrtime() - f->snap_started_ns;
    f->n_snapshots++;
    return 0;

fail:
    buf_free(&b);
    return snap_failed(f);
}

/* Version 3, on the loop, right after an apply: open the read transaction
 * that the dump will walk, at the state raft's snapshot index names. */
static int fsm_snapshot_begin(struct raft_fsm *rf, struct raft_buffer *bufs[], unsigned *n_bufs)
{
    struct fsm *f = rf->data;

    if (snap_refused(f)) return RAFT_BUSY;
    if (store_snapshot_begin(f->store, &f->snap) != 0) return snap_failed(f);
    f->snap_started_ns = uv_hrtime();
    *bufs = NULL;
    *n_bufs = 0;
    return 0;
}

/*
 * Version 3, on a libuv pool thread: sync and dump (store_snapshot_write).
 * It touches nothing of f but f->snap, which the loop set before raft
 * queued this work and clears only in finalize, after it. The buffers are
 * ours (finalize frees them), so the dump is handed over without a copy.
 */
static int fsm_snapshot_async(struct raft_fsm *rf, struct raft_buffer *bufs[], unsigned *n_bufs)
{
    struct fsm *f = rf->data;
    struct buf b = {0};
    struct raft_buffer *rb;
    int rv = store_snapshot_write(f->snap, &b);

    if (rv != 0) {
        buf_free(&b);
        return rv == BATON_ENOMEM ? RAFT_NOMEM : RAFT_IOERR;
    }
    rb = malloc(sizeof *rb);
    if (rb == NULL) {
        buf_free(&b);
        return RAFT_NOMEM;
    }
    rb->base = b.data;
    rb->len = b.len;
    *bufs = rb;
    *n_bufs = 1;
    return 0;
}

/* Version 3, on the loop, once raft persisted the snapshot, failed to, or
 * the dump failed: free the buffers and close the read transaction. */
static int fsm_snapshot_finalize(struct raft_fsm *rf, struct raft_buffer *bufs[], unsigned *n_bufs)
{
    struct fsm *f = rf->data;
    bool dumped = *n_bufs > 0;

    for (unsigned i = 0; i < *n_bufs; i++) free((*bufs)[i].base);
    free(*bufs);
    *bufs = NULL;
    *n_bufs = 0;
    store_snapshot_end(f->snap);
    f->snap = NULL;
    if (dumped) {
        f->snap_last_ns = uv_hrtime() - f->snap_started_ns;
        f->n_snapshots++;
    }
    else
        snap_failed(f);
    return 0;
}

void fsm_snap_init(struct fsm *f)
{
    f->base.snapshot = fsm_snapshot;
}

void fsm_use_async_snapshots(struct fsm *f)
{
    f->base.version = 3;
    f->base.snapshot = fsm_snapshot_begin;
    f->base.snapshot_async = fsm_snapshot_async;
    f->base.snapshot_finalize = fsm_snapshot_finalize;
}

void fsm_snap_close(struct fsm *f)
{
    store_snapshot_end(f->snap);
    f->snap = NULL;
}
