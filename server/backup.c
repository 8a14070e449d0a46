/*
 * backup.c -- SNAPSHOT_SAVE: a copy of the leader's state, streamed to an
 * operator's batonctl as the snapshot file of proto/backup.h
 * (docs/operations.md, "Backup and restore"; proto/msg.h says what the
 * client sees).
 *
 * The dump is the three-step snapshot that raft's snapshots use
 * (storage/store.h, store_snapshot_begin): the read transaction opens on
 * the loop -- the state at the leader's applied index, whatever is applied
 * meanwhile -- and the dump, the file's header and its SHA-256 are made on
 * a libuv pool thread, so a big store does not stall the loop. The store
 * has a snapshot slot for this beside raft's.
 *
 * Then the file goes out in SNAPSHOT_CHUNKs, one at a time: backup_kick,
 * run every loop turn, sends the next chunk only once the connection holds
 * nothing unread (the previous chunk was taken by the socket), so a slow
 * reader holds at most one chunk in the leader's output buffers and counts
 * little against --max-unread-mb. The whole file stays in memory until it
 * is sent: BACKUP_MAX saves at once per node bounds that (another gets
 * ERROR(BATON_EBUSY)), and a client that takes nothing for
 * BACKUP_STALL_MS loses its save and its connection.
 */
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/backup.h"
#include "server/log.h"
#include "server/server_int.h"

/* One SNAPSHOT_SAVE, from its request to its last chunk. */
struct backup {
    struct server *srv;
    uint64_t conn_id;
    uint64_t req_id;
    uv_work_t work;
    store_snap *sn;           /* until the dump is over */
    uint64_t term;            /* the leader's term at the request */
    struct buf file;          /* the whole file, once dumped */
    int rv;                   /* the dump's outcome (pool thread, then loop) */
    bool dumped;              /* the work is over: the file is sent */
    size_t sent;              /* bytes of the file sent */
    uint64_t progress_at;     /* uv_now when the last chunk went out */
    struct backup *next;
};

static void backup_free(struct backup *b)
{
    struct backup **p = &b->srv->backups;

    while (*p != NULL && *p != b) p = &(*p)->next;
    if (*p == b) *p = b->next;
    b->srv->n_backups--;
    store_snapshot_end(b->sn);
    buf_free(&b->file);
    free(b);
}

/* Pool thread: dump the state, then seal the file (header and SHA-256). */
static void dump_work(uv_work_t *w)
{
    struct backup *b = w->data;
    struct backup_header h = {.term = b->term};
    uint32_t format = 0;
    size_t start;
    int rv = backup_start(&b->file, &start);

    if (rv == 0) rv = store_snapshot_write(b->sn, &b->file);
    if (rv == 0)
        rv = store_snapshot_header(b->file.data + start + BACKUP_HEADER_LEN,
                                   b->file.len - start - BACKUP_HEADER_LEN, &format, &h.index,
                                   &h.digest);
    h.store_format = format;
    if (rv == 0) rv = backup_seal(&b->file, start, &h);
    b->rv = rv;
}

/* Loop: the dump is over. Close the read transaction; answer a failure, or
 * let backup_kick send the file. */
static void dump_done(uv_work_t *w, int status)
{
    struct backup *b = w->data;
    struct server *srv = b->srv;
    struct conn *c = conn_get(srv, b->conn_id);

    store_snapshot_end(b->sn);
    b->sn = NULL;
    b->dumped = true;
    b->progress_at = uv_now(srv->loop);
    if (status != 0) b->rv = BATON_ECANCELED;
    if (srv->stopping || c == NULL) {
        backup_free(b);
        return;
    }
    if (b->rv != 0) {
        log_warn("snapshot save: the dump failed: %s", baton_strerror(b->rv));
        if (b->rv == BATON_ECANCELED)
            conn_send_error(c, b->req_id, b->rv,
                            "snapshot save: the store grew during the dump; try again");
        else
            conn_send_error(c, b->req_id, b->rv, "snapshot save: the dump failed: %s",
                            baton_strerror(b->rv));
        backup_free(b);
        return;
    }
    log_info("snapshot save: %.1f MiB to send to conn %llu (%s)", (double)b->file.len / MIB,
             (unsigned long long)c->id, c->peer);
}

void backup_save(struct conn *c, const struct msg *m)
{
    struct server *srv = c->srv;
    struct node_status st;
    struct backup *b;
    store_snap *sn;
    int rv;

    if (srv->n_backups >= BACKUP_MAX) {
        conn_send_error(c, m->req_id, BATON_EBUSY,
                        "snapshot save: another one is running on this node (at most %d at a "
                        "time); try again when it is done",
                        BACKUP_MAX);
        return;
    }
    rv = store_snapshot_begin(srv->store, &sn);
    if (rv == BATON_EBUSY) {
        conn_send_error(c, m->req_id, rv,
                        "snapshot save: the store is busy with a raft snapshot; try again");
        return;
    }
    if (rv != 0) {
        conn_send_error(c, m->req_id, rv, "snapshot save: %s", baton_strerror(rv));
        return;
    }
    b = xcalloc(1, sizeof *b);
    b->srv = srv;
    b->conn_id = c->id;
    b->req_id = m->req_id;
    b->sn = sn;
    srv->nio->get_status(srv->node, &st);
    b->term = st.term;
    b->work.data = b;
    b->next = srv->backups;
    srv->backups = b;
    srv->n_backups++;
    rv = uv_queue_work(srv->loop, &b->work, dump_work, dump_done);
    if (rv != 0) {
        conn_send_error(c, m->req_id, BATON_EIO, "snapshot save: %s", uv_strerror(rv));
        backup_free(b);
        return;
    }
    log_info("snapshot save: dumping the state at index %llu for conn %llu (%s)",
             (unsigned long long)store_snap_applied(sn), (unsigned long long)c->id, c->peer);
}

/* Send b's next chunk if its connection has taken the last one. Returns
 * false once b is over (freed). */
static bool send_next(struct backup *b, uint64_t now)
{
    struct conn *c = conn_get(b->srv, b->conn_id);
    struct msg m = {.type = MSG_SNAPSHOT_CHUNK, .req_id = b->req_id};
    size_t n;

    if (c == NULL || c->closing || c->shed) {
        log_warn("snapshot save: the client left after %zu of %zu bytes", b->sent, b->file.len);
        backup_free(b);
        return false;
    }
    if (c->unread > 0) {
        if (now - b->progress_at < BACKUP_STALL_MS) return true;
        /* It reads nothing: an ERROR would wait behind the chunk it does
         * not take. Drop the connection and what it holds. */
        log_warn("snapshot save: conn %llu (%s) took nothing for %d s; closed",
                 (unsigned long long)c->id, c->peer, BACKUP_STALL_MS / 1000);
        conn_destroy(c);
        backup_free(b);
        return false;
    }
    n = b->file.len - b->sent;
    if (n > BATON_SNAPSHOT_CHUNK_MAX) n = BATON_SNAPSHOT_CHUNK_MAX;
    m.u.snapshot_chunk.offset = b->sent;
    m.u.snapshot_chunk.total = b->file.len;
    m.u.snapshot_chunk.data.p = (const char *)b->file.data + b->sent;
    m.u.snapshot_chunk.data.n = (uint16_t)n;
    conn_send(c, &m);
    b->sent += n;
    b->progress_at = now;
    if (b->sent < b->file.len) return true;
    log_info("snapshot save: %zu bytes sent to conn %llu (%s)", b->file.len,
             (unsigned long long)c->id, c->peer);
    backup_free(b);
    return false;
}

void backup_kick(struct server *srv)
{
    uint64_t now = uv_now(srv->loop);
    struct backup *b = srv->backups, *next;

    for (; b != NULL; b = next) {
        next = b->next;
        if (b->dumped) send_next(b, now);
    }
}

void backup_close(struct server *srv)
{
    struct backup *b = srv->backups, *next;

    /* A dump still running is freed by dump_done, which the loop runs
     * before uv_run returns. */
    for (; b != NULL; b = next) {
        next = b->next;
        if (b->dumped) backup_free(b);
    }
}
