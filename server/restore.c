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
 * the marker DIR/restoring, before anything else in DIR; restore the store
 * (storage/store.h, store_restore_backup: the saved state at the restore's
 * applied index, with the members table of the --cluster list -- each
 * member recorded as started, docs/design.md, "A node that lost its data
 * directory" -- and the next fence raised above every fence the old
 * cluster could have granted); write raft's
 * snapshot of that store (raft/restore.h says why raft must hold it, and
 * why at an index and term far above the backup's) with the --cluster
 * configuration; write the restored cluster's id (raft/cluster_id.h,
 * DIR/cluster-id); remove the marker last. A node started on DIR
 * afterwards loads that snapshot, does not bootstrap (its store has
 * applied an entry) and does not refuse to start (its raft has a term):
 * started on every node so prepared, they elect a leader and serve the
 * saved state.
 *
 * A refusal before the marker was written leaves DIR as it was (an
 * existing one keeps the lock file it may have gained). A restore that
 * stops after it (an error, a kill, a crash) leaves the marker: a normal
 * start refuses DIR (restore_interrupted) instead of bootstrapping an
 * empty cluster from directories the restore had only begun to fill, and
 * a second --restore refuses it as not empty. The message says to remove
 * DIR before trying again.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "baton/baton_defs.h"
#include "proto/backup.h"
#include "proto/errmsg.h"
#include "raft/cluster_id.h"
#include "raft/durable_file.h"
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

/* Where a restore's coordinates and fences start (raft/restore.h). */
struct restore_plan {
    uint64_t index, term;   /* the restored raft snapshot's */
    uint64_t fence_floor;   /* --fence-floor, 0: none */
    uint64_t next_fence;    /* out: the restored cluster's first fence */
};

/* The store and raft steps, into the created directories. */
static int restore_into(const struct srv_config *cfg, const char *fsm_dir,
                        const struct backup_header *h, const uint8_t *body,
                        struct restore_plan *plan)
{
    struct node_config nc = cfg->node;
    struct store_member members[BATON_MAX_MEMBERS];
    char raft_dir[4200], errmsg[BATON_ERRMSG_SIZE] = "";
    struct buf snap = {0};
    store *st = NULL;
    int rv;

    rv = store_open(fsm_dir, &st, errmsg);
    if (rv != 0) {
        log_error("--restore: cannot create the lock store in %s: %s", fsm_dir, errmsg);
        return rv;
    }
    for (uint32_t i = 0; i < nc.n_members; i++) {
        members[i].id = nc.members[i].id;
        members[i].client_addr = nc.members[i].client_addr;
    }
    rv = store_restore_backup(st, body, h->body_len, plan->index, plan->fence_floor, members,
                              nc.n_members, &plan->next_fence);
    if (rv != 0) log_error("--restore: the saved state is refused: %s", baton_strerror(rv));
    if (rv == 0) {
        rv = store_snapshot(st, &snap);
        if (rv != 0) log_error("--restore: reading the restored store: %s", baton_strerror(rv));
    }
    store_close(st);
    if (rv != 0) return rv;
    snprintf(raft_dir, sizeof raft_dir, "%s/raft", cfg->data_dir);
    nc.raft_dir = raft_dir;
    rv = node_restore_write(&nc, snap.data, snap.len, plan->index, plan->term, errmsg);
    if (rv != 0) log_error("--restore: %s", errmsg);
    buf_free(&snap);
    return rv;
}

static void marker_path(const struct srv_config *cfg, char *out, size_t cap)
{
    snprintf(out, cap, "%s/restoring", cfg->data_dir);
}

/* Create the marker at path durably (raft/durable_file.h). 0 or -1. */
static int marker_write(const char *path)
{
    static const char text[] = "batond --restore began here and has not finished: remove this "
                               "directory and run --restore again\n";

    return durable_write(path, text, sizeof text - 1) == 0 ? 0 : -1;
}

/* Remove the marker durably, the restore's last step. 0 or -1. */
static int marker_remove(const char *path)
{
    return unlink(path) == 0 && durable_sync_parent(path) == 0 ? 0 : -1;
}

bool restore_interrupted(const struct srv_config *cfg)
{
    char path[4200];
    struct stat st;

    marker_path(cfg, path, sizeof path);
    if (stat(path, &st) != 0) return false;
    log_error("data directory %s holds a restore that did not finish (%s exists): it will not "
              "start, neither from what the restore wrote nor as a new cluster. Remove the "
              "directory and run batond --restore again (docs/operations.md, \"Backup and "
              "restore\")",
              cfg->data_dir, path);
    return true;
}

/* --fence-floor's N into *floor (0 if not given). 0, or -1 (logged). */
static int fence_floor_of(const struct srv_config *cfg, uint64_t *floor)
{
    const char *s = cfg->fence_floor;
    char *end;

    *floor = 0;
    if (s == NULL) return 0;
    errno = 0;
    *floor = strtoull(s, &end, 10);
    if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno != 0) {
        log_error("--fence-floor '%s' is not a decimal number below 2^64", s);
        return -1;
    }
    return 0;
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

/* The marker, raft and store steps, into the locked, empty data directory.
 * 0, or 1 (logged). */
static int restore_locked(const struct srv_config *cfg, const struct backup_header *h,
                          const uint8_t *body, struct restore_plan *plan)
{
    char raft_dir[4200], fsm_dir[4200], marker[4200], cid[4200];
    struct node_config nc = cfg->node;
    uint64_t id;

    snprintf(raft_dir, sizeof raft_dir, "%s/raft", cfg->data_dir);
    snprintf(fsm_dir, sizeof fsm_dir, "%s/fsm", cfg->data_dir);
    snprintf(cid, sizeof cid, "%s/cluster-id", cfg->data_dir);
    marker_path(cfg, marker, sizeof marker);
    if (marker_write(marker) != 0) {
        log_error("--restore: cannot write %s: %s", marker, strerror(errno));
        return 1;
    }
    if (mkdir(raft_dir, 0755) != 0 || mkdir(fsm_dir, 0755) != 0) {
        log_error("--restore: cannot create %s: %s; %s is left incomplete: remove it before "
                  "trying again", raft_dir, strerror(errno), cfg->data_dir);
        return 1;
    }
    if (restore_into(cfg, fsm_dir, h, body, plan) != 0) {
        log_error("--restore: %s is left incomplete: remove it before trying again",
                  cfg->data_dir);
        return 1;
    }
    id = cluster_id_of_restore(&nc, h->digest, h->index, h->term, plan->index,
                               plan->fence_floor);
    if (cluster_id_write(cid, id) != 0) {
        log_error("--restore: cannot write %s: %s", cid, strerror(errno));
        return 1;
    }
    if (marker_remove(marker) != 0) {
        log_error("--restore: cannot remove %s: %s", marker, strerror(errno));
        return 1;
    }
    log_info("restored %s into %s: the state of index %" PRIu64 " (term %" PRIu64
             ", digest %016" PRIx64 ") as this cluster's index %" PRIu64 " (term %" PRIu64
             "), fences from %" PRIu64 " up; start batond on it without --restore",
             cfg->restore, cfg->data_dir, h->index, h->term, h->digest, plan->index, plan->term,
             plan->next_fence);
    return 0;
}

/* Where the restore of the checked file h starts: --fence-floor, and the
 * raft coordinates (raft/restore.h). 0, or -1 (logged). */
static int plan_of(const struct srv_config *cfg, const struct backup_header *h,
                   struct restore_plan *plan)
{
    if (fence_floor_of(cfg, &plan->fence_floor) != 0) return -1;
    if (node_restore_coords(h->index, h->term, &plan->index, &plan->term) != 0) {
        log_error("--restore %s: its index or term is too large", cfg->restore);
        return -1;
    }
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
    struct restore_plan plan = {0};
    struct stat sb;
    int lock = -1, rv = 1;

    if (stat(cfg->data_dir, &sb) == 0) {
        if ((lock = lock_empty(cfg->data_dir)) < 0) return 1;
    } else if (errno != ENOENT) {
        log_error("--restore: cannot read data directory %s: %s", cfg->data_dir,
                  strerror(errno));
        return 1;
    }
    if (load_file(cfg->restore, &file, &h, &body) == 0 && plan_of(cfg, &h, &plan) == 0 &&
        (lock >= 0 || (lock = create_locked(cfg->data_dir)) >= 0))
        rv = restore_locked(cfg, &h, body, &plan);
    buf_free(&file);
    datadir_unlock(lock);
    return rv;
}
