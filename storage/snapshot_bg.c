/*
 * snapshot_bg.c -- the snapshot in three steps (store.h,
 * store_snapshot_begin): a read transaction opened on the loop thread and
 * dumped on another; and the test hook that makes snapshots fail
 * (store_test.h, store__fail_snapshots).
 *
 * LMDB lets a read transaction move between threads only with MDB_NOTLS,
 * which env_open sets, and only one thread may use it at a time: the
 * worker, between the moment it claims the snapshot and the moment it
 * gives it back (SNAP_RUNNING). The loop thread touches the transaction
 * only when no worker has it.
 *
 * The map cannot grow while any transaction is open in the process:
 * mdb_env_set_mapsize does not check for readers, it unmaps the memory
 * they read. So grow_map calls store__snapshot_stop first: it raises the
 * stop flag the dump looks at every few records (store__dump), waits for a
 * running worker to give the snapshot back, marks one that has not started
 * yet as cancelled, and closes the transaction. The wait is at most one
 * slice of the dump -- never the flush of the data file, which comes
 * before the worker claims the snapshot (snap_flush); the write then fails
 * with BATON_ECANCELED and the next snapshot starts over.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "storage/store_int.h"
#include "storage/store_test.h"

enum snap_state {
    SNAP_READY,      /* begun, the write has not claimed it */
    SNAP_RUNNING,    /* a worker is writing it */
    SNAP_DONE,       /* the write is over (or was cancelled) */
};

struct store_snap {
    store *s;
    MDB_txn *txn;            /* NULL once closed (stopped, or ended) */
    uint64_t applied;
    atomic_int stop;         /* set by store__snapshot_stop */
    pthread_mutex_t mu;      /* guards state */
    pthread_cond_t cv;       /* signalled when state leaves SNAP_RUNNING */
    enum snap_state state;
};

int store_snapshot_begin(store *s, store_snap **out)
{
    store_snap *sn;
    int slot = 0, rc;

    *out = NULL;
    while (slot < STORE_MAX_SNAPS && s->snaps[slot] != NULL) slot++;
    if (slot == STORE_MAX_SNAPS) return BATON_EBUSY;
    if (store__snapshot_fault(s)) return BATON_EIO;
    sn = calloc(1, sizeof *sn);
    if (sn == NULL) return BATON_ENOMEM;
    rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &sn->txn);
    if (rc == 0) rc = meta_get_u64(s, sn->txn, META_APPLIED, &sn->applied, NULL);
    if (rc != 0) {
        if (sn->txn != NULL) mdb_txn_abort(sn->txn);
        free(sn);
        return store__err(rc);
    }
    sn->s = s;
    atomic_init(&sn->stop, 0);
    pthread_mutex_init(&sn->mu, NULL);
    pthread_cond_init(&sn->cv, NULL);
    sn->state = SNAP_READY;
    s->snaps[slot] = sn;
    *out = sn;
    return 0;
}

uint64_t store_snap_applied(const store_snap *sn)
{
    return sn->applied;
}

/* Claim the snapshot for this thread: false if it was stopped first. */
static bool snap_claim(store_snap *sn)
{
    bool ok;

    pthread_mutex_lock(&sn->mu);
    ok = sn->state == SNAP_READY && !atomic_load(&sn->stop);
    sn->state = ok ? SNAP_RUNNING : SNAP_DONE;
    pthread_mutex_unlock(&sn->mu);
    return ok;
}

/* Give it back: the loop thread may close the transaction now. */
static void snap_release(store_snap *sn)
{
    pthread_mutex_lock(&sn->mu);
    sn->state = SNAP_DONE;
    pthread_cond_broadcast(&sn->cv);
    pthread_mutex_unlock(&sn->mu);
}

/*
 * raft deletes the log entries a snapshot covers once it is persisted, and
 * LMDB runs with MDB_NOSYNC: the data file goes to disk first. This runs
 * BEFORE the snapshot is claimed, so a map growth that stops the snapshot
 * meanwhile does not wait for the flush (which can take seconds on a busy
 * disk) with the loop thread blocked: it waits only for a dump slice.
 *
 * The flush is fdatasync of the data file, not mdb_env_sync: that one
 * msyncs the map at the address and length it reads from the environment,
 * which a growth on the loop thread may unmap and remap meanwhile. On
 * Linux msync(MS_SYNC) of a shared file mapping is a sync of the file, so
 * fdatasync writes the same dirty pages (those dirtied through the map
 * included), from the descriptor, whatever the map does. The commits the
 * snapshot's transaction sees all came before store_snapshot_begin.
 */
static int snap_flush(store_snap *sn)
{
    mdb_filehandle_t fd;
    int rc = mdb_env_get_fd(sn->s->env, &fd);

    if (sn->s->snapshot_sync_hook != NULL) sn->s->snapshot_sync_hook(sn->s->snapshot_sync_arg);
    if (rc != 0) return rc;
    return fdatasync(fd) == 0 ? 0 : errno;
}

int store_snapshot_write(store_snap *sn, struct buf *out)
{
    int rc = snap_flush(sn);

    if (rc != 0) return store__err(rc);
    if (!snap_claim(sn)) return BATON_ECANCELED;
    rc = store__dump(sn->s, sn->txn, out, &sn->stop);
    snap_release(sn);
    return store__err(rc);
}

/* Stop one snapshot (store__snapshot_stop). */
static void snap_stop(store_snap *sn)
{
    if (sn == NULL || sn->txn == NULL) return;
    atomic_store(&sn->stop, 1);
    pthread_mutex_lock(&sn->mu);
    while (sn->state == SNAP_RUNNING) pthread_cond_wait(&sn->cv, &sn->mu);
    sn->state = SNAP_DONE;
    pthread_mutex_unlock(&sn->mu);
    mdb_txn_abort(sn->txn);
    sn->txn = NULL;
}

void store__snapshot_stop(store *s)
{
    for (int i = 0; i < STORE_MAX_SNAPS; i++) snap_stop(s->snaps[i]);
}

void store_snapshot_end(store_snap *sn)
{
    if (sn == NULL) return;
    snap_stop(sn);
    for (int i = 0; i < STORE_MAX_SNAPS; i++)
        if (sn->s->snaps[i] == sn) sn->s->snaps[i] = NULL;
    pthread_cond_destroy(&sn->cv);
    pthread_mutex_destroy(&sn->mu);
    free(sn);
}

void store__fail_snapshots(store *s, unsigned n)
{
    s->fail_snapshots = n;
}

void store__set_snapshot_sync_hook(store *s, void (*fn)(void *arg), void *arg)
{
    s->snapshot_sync_hook = fn;
    s->snapshot_sync_arg = arg;
}

int store__snapshot_fault(store *s)
{
    if (s->fail_snapshots == 0) return 0;
    s->fail_snapshots--;
    return 1;
}
