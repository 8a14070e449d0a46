/*
 * restore.c -- batond --restore FILE: initialise a new cluster's node from
 * a file `batonctl snapshot save` wrote (docs/operations.md, "Backup and
 * restore"), then exit. Like etcdutl snapshot restore, it only ever
 * writes into an empty (or missing) data directory.
 *
 * Steps: if DIR exists, lock it (server/datadir_lock.h: a running
 * batond's directory is refused before anything in it is read) and check
 * that it holds nothing but its lock file; check the file (its SHA-256,
 * its header against its body's own header, a store format this batond
 * reads); if DIR was missing, create and lock it now (so that a refused
 * file leaves no directory behind); create DIR/raft and DIR/fsm; restore
 * the store (storage/store.h, store_restore_backup: the saved state at
 * applied index 1, with an empty members table); write raft's snapshot of
 * that store at index 1 (raft/restore.h says why raft must hold it) with
 * the --cluster configuration. A node started on DIR afterwards loads that
 * snapshot, does not bootstrap (its store has applied an entry) and does
 * not refuse to start (its raft has a term): started on every node so
 * prepared, they elect a leader and serve the saved state.
 *
 * A refusal before DIR/raft was created leaves DIR as it was (an existing
 * one keeps the lock file it may have gained). A failure after it leaves
 * DIR incomplete: the message says to remove it before trying again (a
 * second --restore refuses it, and so does a normal start, whose store has
 * applied an entry while raft holds nothing, if the raft step failed).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "baton/baton_defs.h"
#include "proto/backup.h"
#include "proto/errmsg.h"
#include "raft/restore.h"
#include "server/datadir_lock.h"
#include "server/log.h"
#include "server/server_int.h"

/* Does dir hold nothing but its lock file? 1, 0 (it holds something), or
 * -1 (errno). */
static int dir_empty(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int empty = 1;

    if (d == NULL) return -1;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
            strcmp(e->d_name, DATADIR_LOCK_FILE) != 0)
            empty = 0;
    closedir(d);
    return empty;
}

/* Read the whole of path into b. 0, or -1 (errno). */
static int read_whole(const char *path, struct buf *b)
{
    uint8_t chunk[65536];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0) return -1;
    while ((n = read(fd, chunk, sizeof chunk)) != 0) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        if (buf_put(b, chunk, (size_t)n) != 0) {
            errno = ENOMEM;
            n = -1;
            break;
        }
    }
    close(fd);
    return n < 0 ? -1 : 0;
}

/* Check the file; on 0, *h and *body describe it. Logs why not. */
static int check_file(const char *path, const struct buf *file, struct backup_header *h,
                      const uint8_t **body)
{
    char err[BATON_ERRMSG_SIZE];
    uint32_t format;
    uint64_t applied, digest;
    int rv = backup_check(file->data, file->len, h, body, err);

    if (rv != 0) {
        log_error("--restore %s: %s", path, err);
        return rv;
    }
    if (store_snapshot_header(*body, h->body_len, &format, &applied, &digest) != 0) {
        log_error("--restore %s: its state (store format %" PRIu32 ") is not one this batond "
                  "reads",
                  path, h->store_format);
        return BATON_EMALFORMED;
    }
    if (format != h->store_format || applied != h->index || digest != h->digest) {
        log_error("--restore %s: the file's header and its state disagree", path);
        return BATON_EMALFORMED;
    }
    return 0;
}

/* The store and raft steps, into the created directories. */
static int restore_into(const struct srv_config *cfg, const char *fsm_dir,
                        const struct backup_header *h, const uint8_t *body)
{
    struct node_config nc = cfg->node;
    char raft_dir[4200], errmsg[BATON_ERRMSG_SIZE] = "";
    struct buf snap = {0};
    store *st = NULL;
    int rv;

    rv = store_open(fsm_dir, &st, errmsg);
    if (rv != 0) {
        log_error("--restore: cannot create the lock store in %s: %s", fsm_dir, errmsg);
        return rv;
    }
    rv = store_restore_backup(st, body, h->body_len, NODE_RESTORE_INDEX);
    if (rv != 0) log_error("--restore: the saved state is refused: %s", baton_strerror(rv));
    if (rv == 0) {
        rv = store_snapshot(st, &snap);
        if (rv != 0) log_error("--restore: reading the restored store: %s", baton_strerror(rv));
    }
    store_close(st);
    if (rv != 0) return rv;
    snprintf(raft_dir, sizeof raft_dir, "%s/raft", cfg->data_dir);
    nc.raft_dir = raft_dir;
    rv = node_restore_write(&nc, snap.data, snap.len, errmsg);
    if (rv != 0) log_error("--restore: %s", errmsg);
    buf_free(&snap);
    return rv;
}

/*
 * Lock the existing data directory dir (server/datadir_lock.h: a running
 * batond's is refused before anything in it is read) and check that it
 * holds nothing but its lock file. The lock's descriptor, or -1 after
 * logging why.
 */
static int lock_empty(const char *dir)
{
    char errmsg[BATON_ERRMSG_SIZE];
    int lock = datadir_lock(dir, errmsg), empty;

    if (lock < 0) {
        log_error("--restore: %s", errmsg);
        return -1;
    }
    if (errmsg[0] != '\0') log_warn("--restore: %s", errmsg);
    empty = dir_empty(dir);
    if (empty == 1) return lock;
    if (empty == 0)
        log_error("--restore: data directory %s is not empty; restore into a new, empty "
                  "directory (a restore starts a new cluster, it never merges into a node)",
                  dir);
    else
        log_error("--restore: cannot read data directory %s: %s", dir, strerror(errno));
    datadir_unlock(lock);
    return -1;
}

/* Read path into file and check it; on 0, *h and *body describe its content.
 * Logs why not. */
static int load_file(const char *path, struct buf *file, struct backup_header *h,
                     const uint8_t **body)
{
    if (read_whole(path, file) != 0) {
        log_error("--restore: cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    return check_file(path, file, h, body) == 0 ? 0 : -1;
}

/* Create the missing data directory dir and lock_empty it. */
static int create_locked(const char *dir)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        log_error("--restore: cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    return lock_empty(dir);
}

/* The raft and store steps, into the locked, empty data directory. */
static int restore_locked(const struct srv_config *cfg, const struct backup_header *h,
                          const uint8_t *body)
{
    char raft_dir[4200], fsm_dir[4200];

    snprintf(raft_dir, sizeof raft_dir, "%s/raft", cfg->data_dir);
    snprintf(fsm_dir, sizeof fsm_dir, "%s/fsm", cfg->data_dir);
    if (mkdir(raft_dir, 0755) != 0 || mkdir(fsm_dir, 0755) != 0) {
        log_error("--restore: cannot create %s: %s", cfg->data_dir, strerror(errno));
        return 1;
    }
    if (restore_into(cfg, fsm_dir, h, body) != 0) {
        log_error("--restore: %s is left incomplete: remove it before trying again",
                  cfg->data_dir);
        return 1;
    }
    log_info("restored %s into %s: the state of index %" PRIu64 " (term %" PRIu64
             ", digest %016" PRIx64 ") as this cluster's index %d; start batond on it without "
             "--restore",
             cfg->restore, cfg->data_dir, h->index, h->term, h->digest, NODE_RESTORE_INDEX);
    return 0;
}

/*
 * An existing data directory is locked and checked first; a missing one is
 * created only once the file has been checked, so that a refused file
 * leaves nothing behind.
 */
int restore_run(const struct srv_config *cfg)
{
    struct backup_header h;
    struct buf file = {0};
    const uint8_t *body;
    struct stat sb;
    int lock = -1, rv = 1;

    if (stat(cfg->data_dir, &sb) == 0) {
        if ((lock = lock_empty(cfg->data_dir)) < 0) return 1;
    } else if (errno != ENOENT) {
        log_error("--restore: cannot read data directory %s: %s", cfg->data_dir,
                  strerror(errno));
        return 1;
    }
    if (load_file(cfg->restore, &file, &h, &body) == 0 &&
        (lock >= 0 || (lock = create_locked(cfg->data_dir)) >= 0))
        rv = restore_locked(cfg, &h, body);
    buf_free(&file);
    datadir_unlock(lock);
    return rv;
}
