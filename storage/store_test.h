/*
 * store_test.h -- hooks for tests/unit/test_fsm_*.c. Not for batond: they let
 * a test shrink the map (to exercise MDB_MAP_FULL handling), simulate a crash
 * and a reboot. Declared apart from store.h so that the store's API stays as
 * the header describes it, and free of <lmdb.h>.
 */
#ifndef BATON_STORAGE_STORE_TEST_H
#define BATON_STORAGE_STORE_TEST_H

#include <stddef.h>
#include <stdint.h>

#include "storage/store.h"

/* Set the map size (LMDB rounds it up to what the data already uses).
 * Must be called with no transaction open. 0 or BATON_EIO. */
int store__set_map_size(store *s, size_t bytes);

/* The current map size in bytes. */
size_t store__map_size(store *s);

/* Make the map's growth step at most `bytes` instead of STORE_GROW_MAX
 * (store_next_growth), so that a test sees the capped steps without
 * filling 64 MiB. */
void store__set_grow_max(store *s, size_t bytes);

/* Close the environment and free s without syncing or setting the clean
 * flag, as if the process had been killed. NULL-safe. */
void store__abandon(store *s);

/* Read the boot id from `path` instead of /proc/sys/kernel/random/boot_id
 * at the next store_open calls. The string must stay valid. */
void store__set_boot_id_path(const char *path);

/* Overwrite the store's on-disk format number (meta "format"), as an older
 * batond would have left it; takes effect at the next store_open. 0 or
 * BATON_EIO. */
int store__set_format(store *s, uint64_t format);
/* The store's on-disk format (meta "format"), 0 if it cannot be read. */
uint64_t store__format(store *s);

/* Rewrite the store as a batond of format 3, 4, 5 or 6 would have left
 * it: the locks, waiters and owned holds in format 6's layout and the
 * databases of format 7 dropped (every lock must be an ordinary one with at
 * most one exclusive holder of one handle, exclusive waiters only, and not
 * both held and delayed); for formats before 6 also the nonce databases emptied (no older format had them: the sessions
 * keep no nonce), for formats 3 and 4 every session record in their
 * layout (the owner dropped, as those formats had none), and meta
 * "format" set; takes effect at the next store_open, which upgrades it.
 * The members table is left as it is (a format 3 store had none: empty it
 * first). The lost table, which no format before 6 had, must be empty.
 * Returns 0, BATON_EINVAL for another format, a lock format 6 cannot
 * hold, or (below 6) a lost table that is not empty, or BATON_EIO. */
int store__downgrade(store *s, uint64_t format);

/* Make the next n snapshots of s fail with BATON_EIO, as a failing disk
 * or a lack of memory would (store_snapshot and store_snapshot_begin;
 * n = 0 stops it). For the tests of what a failed snapshot does to raft. */
void store__fail_snapshots(store *s, unsigned n);

/* Call fn(arg) on the worker's thread in store_snapshot_write, where it
 * flushes the data file before it dumps (fn may block, as a slow disk
 * would); NULL removes it. */
void store__set_snapshot_sync_hook(store *s, void (*fn)(void *arg), void *arg);

#endif /* BATON_STORAGE_STORE_TEST_H */
