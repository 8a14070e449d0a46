/*
 * cmd_backup.c -- batonctl snapshot save FILE and batonctl snapshot info
 * FILE (docs/operations.md, "Backup and restore"; the file is
 * proto/backup.h's).
 *
 * save asks the leader for SNAPSHOT_SAVE and takes the SNAPSHOT_CHUNKs as
 * they come, each at the offset it names, into memory; once the last one
 * is in, it checks the whole file (length, SHA-256) and only then writes
 * FILE.tmp, fsyncs it, renames it to FILE and fsyncs the directory, so
 * FILE is either the old one or a whole, checked new one.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "baton/baton_defs.h"
#include "client/ctl/ctl.h"
#include "proto/backup.h"
#include "proto/crypto.h"

/* How long save waits for each chunk (and for the leader) unless
 * --timeout says otherwise: the leader dumps the whole state first. */
#define SAVE_TIMEOUT_MS 60000

/* Write all of p[0..n) to fd. 0 or -1 (errno). */
static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* fsync the directory that holds path. 0 or -1. */
static int sync_dir_of(const char *path)
{
    char *copy = strdup(path);
    int fd, rv = -1;

    if (copy == NULL) return -1;
    fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        rv = fsync(fd);
        close(fd);
    }
    free(copy);
    return rv;
}

/* FILE.tmp, fsync, rename to FILE, fsync the directory. 0 or -1 (said). */
static int write_file_atomically(const char *path, const struct buf *b)
{
    size_t n = strlen(path) + 5;
    char *tmp = malloc(n);
    int fd, rv = -1;

    if (tmp == NULL) {
        ctl_error("snapshot save: out of memory");
        return -1;
    }
    snprintf(tmp, n, "%s.tmp", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        ctl_error("snapshot save: cannot create %s: %s", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    if (write_all(fd, b->data, b->len) != 0 || fsync(fd) != 0) {
        ctl_error("snapshot save: writing %s: %s", tmp, strerror(errno));
    } else if (close(fd) != 0) {
        fd = -1;
        ctl_error("snapshot save: writing %s: %s", tmp, strerror(errno));
    } else {
        fd = -1;
        if (rename(tmp, path) != 0)
            ctl_error("snapshot save: renaming %s to %s: %s", tmp, path, strerror(errno));
        else if (sync_dir_of(path) != 0)
            ctl_error("snapshot save: syncing the directory of %s: %s", path, strerror(errno));
        else
            rv = 0;
    }
    if (fd >= 0) close(fd);
    if (rv != 0) unlink(tmp);
    free(tmp);
    return rv;
}

/* Print a checked file's header and checksum. */
static void print_file(const struct ctl_opts *o, const char *path, const struct buf *file,
                       const struct backup_header *h, const char *verb)
{
    char hex[CRYPTO_SHA256_HEX + 1];
    struct jw w;

    crypto_hex(file->data + file->len - BACKUP_TRAILER_LEN, BACKUP_TRAILER_LEN, hex);
    if (o->format == CTL_JSON) {
        jw_init(&w, stdout);
        jw_begin_object(&w, NULL);
        jw_cstring(&w, "file", path);
        jw_u64(&w, "version", h->version);
        jw_u64(&w, "store_format", h->store_format);
        jw_u64(&w, "index", h->index);
        jw_u64(&w, "term", h->term);
        jw_u64(&w, "digest", h->digest);
        jw_u64(&w, "body_bytes", h->body_len);
        jw_u64(&w, "bytes", file->len);
        jw_cstring(&w, "sha256", hex);
        jw_bool(&w, "checksum_ok", 1);
        jw_end_object(&w);
        jw_finish(&w);
        return;
    }
    printf("%s %s\n", verb, path);
    printf("  format        %" PRIu32 " (store format %" PRIu32 ")\n", h->version,
           h->store_format);
    printf("  index         %" PRIu64 "\n", h->index);
    printf("  term          %" PRIu64 "\n", h->term);
    printf("  digest        %016" PRIx64 "\n", h->digest);
    printf("  bytes         %zu (state %" PRIu64 ")\n", file->len, h->body_len);
    printf("  sha256        %s (checked)\n", hex);
}

/* Take one chunk into file; 0, or -1 with the reason in err. */
static int take_chunk(const struct msg_snapshot_chunk *ch, struct buf *file, char *err,
                      size_t errlen)
{
    if (ch->offset != file->len || ch->data.n == 0 || ch->total < BACKUP_MIN_LEN ||
        ch->total - ch->offset < ch->data.n) {
        snprintf(err, errlen, "bad chunk (offset %" PRIu64 ", %u bytes, total %" PRIu64
                              ") after %zu bytes", ch->offset, ch->data.n, ch->total, file->len);
        return -1;
    }
    if (file->len == 0 && buf_reserve(file, ch->total) != 0) {
        snprintf(err, errlen, "out of memory for %" PRIu64 " bytes", ch->total);
        return -1;
    }
    if (buf_put(file, ch->data.p, ch->data.n) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

int cmd_backup_save(struct ctl_opts *o, const char *path)
{
    baton__caller *conn = NULL;
    struct baton__reply rep;
    struct backup_header h;
    struct buf file = {0};
    struct msg req;
    const uint8_t *body;
    uint64_t total = 0;
    char err[CTL_ERR_SIZE];
    int rv;

    if (!o->timeout_set) o->timeout_ms = SAVE_TIMEOUT_MS;
    memset(&req, 0, sizeof req);
    req.type = MSG_SNAPSHOT_SAVE;
    rv = ctl_leader_open(o, &req, &rep, &conn, err, sizeof err);
    if (rv != 0) {
        ctl_error("snapshot save: %s", err);
        return ctl_exit_for(rv);
    }
    for (;;) {
        if (rep.m.type != MSG_SNAPSHOT_CHUNK) {
            if (rep.m.type == MSG_ERROR) {
                rv = rep.m.u.error.code;
                snprintf(err, sizeof err, "%.*s", (int)rep.m.u.error.message.n,
                         rep.m.u.error.message.p);
            } else {
                rv = BATON_EPROTO;
                snprintf(err, sizeof err, "unexpected reply %s", msg_type_name(rep.m.type));
            }
            break;
        }
        if (total == 0) total = rep.m.u.snapshot_chunk.total;
        if (rep.m.u.snapshot_chunk.total != total ||
            take_chunk(&rep.m.u.snapshot_chunk, &file, err, sizeof err) != 0) {
            rv = BATON_EPROTO;
            break;
        }
        baton__reply_free(&rep);
        if (file.len == total) break;
        rv = ctl_read(conn, o->timeout_ms, &rep, err, sizeof err);
        if (rv == BATON_ETIMEDOUT)
            snprintf(err, sizeof err, "no chunk within %lld ms after %zu of %" PRIu64 " bytes",
                     (long long)o->timeout_ms, file.len, total);
        if (rv != 0) break;
    }
    baton__reply_free(&rep);
    baton__caller_free(conn);
    if (rv == 0) rv = backup_check(file.data, file.len, &h, &body, err);
    if (rv != 0) {
        ctl_error("snapshot save: %s", err);
        buf_free(&file);
        return rv == BATON_EPROTO || rv == BATON_EMALFORMED ? CTL_EXIT_SOFTWARE
                                                           : ctl_exit_for(rv);
    }
    rv = write_file_atomically(path, &file);
    if (rv == 0) print_file(o, path, &file, &h, "saved");
    buf_free(&file);
    return rv == 0 ? CTL_EXIT_OK : CTL_EXIT_SOFTWARE;
}

/* Read the whole of path into b. 0, or -1 (said). */
static int read_file(const char *path, struct buf *b)
{
    uint8_t chunk[65536];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0) {
        ctl_error("snapshot info: cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    while ((n = read(fd, chunk, sizeof chunk)) != 0) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 || buf_put(b, chunk, (size_t)n) != 0) {
            ctl_error("snapshot info: reading %s: %s", path, n < 0 ? strerror(errno) : "out of memory");
            close(fd);
            return -1;
        }
    }
    close(fd);
    return 0;
}

int cmd_backup_info(struct ctl_opts *o, const char *path)
{
    struct backup_header h;
    struct buf file = {0};
    const uint8_t *body;
    char err[BATON_ERRMSG_SIZE];
    int rv;

    if (read_file(path, &file) != 0) {
        buf_free(&file);
        return CTL_EXIT_SOFTWARE;
    }
    rv = backup_check(file.data, file.len, &h, &body, err);
    if (rv != 0) {
        ctl_error("snapshot info: %s: %s", path, err);
        buf_free(&file);
        return CTL_EXIT_SOFTWARE;
    }
    print_file(o, path, &file, &h, "snapshot file");
    buf_free(&file);
    return CTL_EXIT_OK;
}
