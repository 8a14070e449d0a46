/*
 * restore.c -- a raft directory that starts from a restored snapshot
 * (raft/restore.h), written through libraft's own raft_uv I/O so that its
 * files are exactly what raft_start loads: load (to check that the
 * directory is empty), set_term, snapshot_put. A snapshot_put with a
 * non-zero `trailing` is the one raft makes after taking a snapshot; it
 * keeps no log entries here, there being none.
 */
#include "raft/restore.h"

#include <raft/uv.h>
#include <stdio.h>
#include <string.h>

#include "baton/baton_defs.h"

struct restore_run {
    struct raft_io_snapshot_put put;
    int status;
    bool put_done;
    bool closed;
};

static void put_cb(struct raft_io_snapshot_put *req, int status)
{
    struct restore_run *r = req->data;

    r->status = status;
    r->put_done = true;
}

static void io_closed(struct raft_io *io)
{
    struct restore_run *r = io->data;

    r->closed = true;
}

/* Does the loaded state hold anything? Frees what load returned. */
static bool has_state(raft_term term, struct raft_snapshot *snap, struct raft_entry *entries,
                      size_t n)
{
    bool any = term != 0 || snap != NULL || n > 0;

    if (snap != NULL) {
        raft_configuration_close(&snap->configuration);
        for (unsigned i = 0; i < snap->n_bufs; i++) raft_free(snap->bufs[i].base);
        raft_free(snap->bufs);
        raft_free(snap);
    }
    if (entries != NULL) {
        /* load hands the entries over in batches; each batch's first entry
         * owns its memory. */
        for (size_t i = 0; i < n; i++)
            if (entries[i].batch != NULL && (i == 0 || entries[i].batch != entries[i - 1].batch))
                raft_free(entries[i].batch);
        raft_free(entries);
    }
    return any;
}

/* The steps between init and close; 0 or a BATON_E* code, errmsg set. */
static int write_snapshot(struct raft_io *io, uv_loop_t *loop, const struct node_config *cfg,
                          const void *data, size_t len, uint64_t index, uint64_t term,
                          struct restore_run *run, char *errmsg)
{
    struct raft_snapshot snap;
    struct raft_buffer buf = {.base = (void *)data, .len = len};
    struct raft_snapshot *loaded = NULL;
    struct raft_entry *entries = NULL;
    raft_term cur_term = 0;
    raft_id vote = 0;
    raft_index start = 0;
    size_t n = 0;
    int rv;

    rv = io->load(io, &cur_term, &vote, &loaded, &start, &entries, &n);
    if (rv != 0) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "raft load: %.200s", io->errmsg);
        return BATON_EIO;
    }
    if (has_state(cur_term, loaded, entries, n)) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "raft directory %s already holds raft state",
                 cfg->raft_dir);
        return BATON_EINVAL;
    }
    memset(&snap, 0, sizeof snap);
    snap.index = index;
    snap.term = term;
    snap.configuration_index = index;
    snap.bufs = &buf;
    snap.n_bufs = 1;
    raft_configuration_init(&snap.configuration);
    for (uint32_t i = 0; i < cfg->n_members && rv == 0; i++)
        rv = raft_configuration_add(&snap.configuration, cfg->members[i].id,
                                    cfg->members[i].raft_addr, RAFT_VOTER);
    if (rv == 0) rv = io->set_term(io, term);
    if (rv == 0) {
        run->put.data = run;
        rv = io->snapshot_put(io, 1, &run->put, &snap, put_cb);
    }
    if (rv == 0) {
        while (!run->put_done) uv_run(loop, UV_RUN_ONCE);
        rv = run->status;
    }
    raft_configuration_close(&snap.configuration);
    if (rv != 0) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "raft snapshot write: %s: %.200s", raft_strerror(rv),
                 io->errmsg);
        return rv == RAFT_NOMEM ? BATON_ENOMEM : BATON_EIO;
    }
    return 0;
}

int node_restore_coords(uint64_t backup_index, uint64_t backup_term, uint64_t *index,
                        uint64_t *term)
{
    if (backup_index > UINT64_MAX / 2 || backup_term > UINT64_MAX / 2) return BATON_EINVAL;
    *index = backup_index + NODE_RESTORE_OFFSET;
    *term = backup_term + NODE_RESTORE_OFFSET;
    return 0;
}

int node_restore_write(const struct node_config *cfg, const void *data, size_t len,
                       uint64_t index, uint64_t term, char *errmsg)
{
    const struct node_member *self = node_member_find(cfg, cfg->id);
    struct restore_run run = {0};
    struct raft_uv_transport transport = {0};
    struct raft_io io = {0};
    uv_loop_t loop;
    int rv;

    if (self == NULL) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "node id %u is not in the cluster configuration",
                 cfg->id);
        return BATON_EINVAL;
    }
    uv_loop_init(&loop);
    rv = raft_uv_tcp_init(&transport, &loop);
    if (rv != 0) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "raft transport: %s", raft_strerror(rv));
        uv_loop_close(&loop);
        return BATON_ENOMEM;
    }
    rv = raft_uv_init(&io, &loop, cfg->raft_dir, &transport);
    if (rv != 0) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "raft io: %.200s", io.errmsg);
        raft_uv_tcp_close(&transport);
        uv_loop_close(&loop);
        return BATON_EIO;
    }
    io.data = &run;
    rv = io.init(&io, cfg->id, self->raft_addr);
    if (rv != 0) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "raft io init: %.200s", io.errmsg);
        rv = BATON_EIO;
    } else {
        rv = write_snapshot(&io, &loop, cfg, data, len, index, term, &run, errmsg);
    }
    io.close(&io, io_closed);
    while (!run.closed) uv_run(&loop, UV_RUN_ONCE);
    raft_uv_close(&io);
    raft_uv_tcp_close(&transport);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return rv;
}
