/*
 * durable_file.h -- write a small file so that it survives a crash whole:
 * the bytes go to PATH.tmp, which is synced and renamed over PATH, and
 * PATH's directory is synced so the new name is on disk too. A reader
 * finds the old file or the new one, never part of one. Used for the
 * data directory's small records (raft/state_mark.c, raft/cluster_id.c,
 * server/restore.c's marker). No libraft, no libuv.
 */
#ifndef BATON_RAFT_DURABLE_FILE_H
#define BATON_RAFT_DURABLE_FILE_H

#include <stddef.h>

/* Write data[0..n) to path durably. 0, or BATON_EIO (path unchanged;
 * PATH.tmp removed). */
int durable_write(const char *path, const void *data, size_t n);

/* Sync the directory that holds path, so that a name just made or removed
 * there is durable. 0 or -1. */
int durable_sync_parent(const char *path);

#endif /* BATON_RAFT_DURABLE_FILE_H */
