/*
 * restore.c -- batond --restore FILE: initialise a new cluster's node from
 * a file `batonctl snapshot save` wrote (docs/operations.md, "Backup and
 * restore"), then exit. Like etcdutl snapshot restore, it only ever
 * writes into an empty (or missing) data directory.
 *
 * Steps: check the file (its SHA-256, its header against its body's own
 * header, a store format this batond reads); create DIR, DIR/raft and
 * DIR/fsm; restore the store (storage/store.h, store_restore_backup: the
 * saved state at applied index 1, with an empty members table); write
 * raft's snapshot of that store at index 1 (raft/restore.h says why raft
 * must hold it) with the --cluster configuration. A node started on DIR
 * afterwards loads that snapshot, does not bootstrap (its store has
 * applied an entry) and does not refuse to start (its raft has a term):
 * started on every node so prepared, they elect a leader and serve the
 * saved state.
 *
 * A failure after DIR was created leaves it incomplete: the message says
 * to remove it before trying again (a second --restore refuses it, and so
 * does a normal start, whose store has applied an entry while raft holds
 * nothing, if the raft step failed).
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
#include "server/log.h"
#include "server/server_int.h"

/* Is dir missing or empty? 1, 0 (it holds something), or -1 (errno). */
static int dir_empty(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int empty = 1;

    if (d == NULL) return errno == ENOENT ? 1 : -1;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) empty = 0;
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

int restore_run(const struct srv_config *cfg)
{
    char raft_dir[4200], fsm_dir[4200];
    struct backup_header h;
    struct buf file = {0};
    const uint8_t *body;
    int empty = dir_empty(cfg->data_dir), rv;

    if (empty != 1) {
        if (empty == 0)
            log_error("--restore: data directory %s is not empty; restore into a new, empty "
                      "directory (a restore starts a new cluster, it never merges into a node)",
                      cfg->data_dir);
        else
            log_error("--restore: cannot read data directory %s: %s", cfg->data_dir,
                      strerror(errno));
        return 1;
    }
    if (read_whole(cfg->restore, &file) != 0) {
        log_error("--restore: cannot read %s: %s", cfg->restore, strerror(errno));
        buf_free(&file);
        return 1;
    }
    if (check_file(cfg->restore, &file, &h, &body) != 0) {
        buf_free(&file);
        return 1;
    }
    snprintf(raft_dir, sizeof raft_dir, "%s/raft", cfg->data_dir);
    snprintf(fsm_dir, sizeof fsm_dir, "%s/fsm", cfg->data_dir);
    if ((mkdir(cfg->data_dir, 0755) != 0 && errno != EEXIST) || mkdir(raft_dir, 0755) != 0 ||
        mkdir(fsm_dir, 0755) != 0) {
        log_error("--restore: cannot create %s: %s", cfg->data_dir, strerror(errno));
        buf_free(&file);
        return 1;
    }
    rv = restore_into(cfg, fsm_dir, &h, body);
    buf_free(&file);
    if (rv != 0) {
        log_error("--restore: %s is left incomplete: remove it before trying again",
                  cfg->data_dir);
        return 1;
    }
    log_info("restored %s into %s: the state of index %" PRIu64 " (term %" PRIu64
             ", digest %016" PRIx64 ") as this cluster's index %d; start batond on it without "
             "--restore",
             cfg->restore, cfg->data_dir, h.index, h.term, h.digest, NODE_RESTORE_INDEX);
    return 0;
}
