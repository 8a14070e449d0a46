/*
 * io_guard.c -- raft_uv's I/O with every write's outcome watched, and the
 * node fenced at the first failure. See io_guard.h.
 */
#include "raft/io_guard.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* g->io is the first member: raft_uv and raft hand back &g->io. */
static struct io_guard *guard_of(struct raft_io *io)
{
    return (struct io_guard *)(void *)io;
}

/* raft_uv ends its message of a failed system call with the call's
 * negated errno ("write failed: -28"): that errno, or 0. */
static int errno_of(const char *msg)
{
    const char *p = strrchr(msg, '-');
    char *end;
    long e;

    if (p == NULL || p[1] < '1' || p[1] > '9') return 0;
    e = strtol(p + 1, &end, 10);
    return *end == '\0' && e < 4096 ? (int)e : 0;
}

void io_guard_fail(struct io_guard *g, int status, raft_index index, const char *what)
{
    const char *msg = g->io.errmsg[0] ? g->io.errmsg : raft_strerror(status);

    if (g->failed != 0 || status == 0) return;
    g->failed = status;
    g->failed_index = index;
    g->sys_errno = errno_of(msg);
    if (g->sys_errno == 0 && status == RAFT_NOSPACE) g->sys_errno = ENOSPC;
    snprintf(g->what, sizeof g->what, "%s", what);
    if (g->sys_errno != 0)
        snprintf(g->errmsg, sizeof g->errmsg, "%.150s (%s)", msg, strerror(g->sys_errno));
    else
        snprintf(g->errmsg, sizeof g->errmsg, "%s", msg);
    if (g->on_fail != NULL) g->on_fail(g->arg);
}

/* A status of a write: RAFT_CANCELED is raft_uv closing, not a failure. */
static void check(struct io_guard *g, int status, raft_index index, const char *what)
{
    if (status != 0 && status != RAFT_CANCELED) io_guard_fail(g, status, index, what);
}

/* ---- what raft_uv calls back: ticks and messages ------------------------ */

static void guard_tick(struct raft_io *io)
{
    struct io_guard *g = guard_of(io);

    if (io_guard_fenced(g)) {
        g->dropped++;
        return;
    }
    g->tick(io);
}

/* Free what a received message owns, as raft would have: the entries of an
 * AppendEntries (one allocation per batch, and the array), the
 * configuration and data of an InstallSnapshot. */
static void drop_message(struct raft_message *m)
{
    if (m->type == RAFT_IO_APPEND_ENTRIES) {
        struct raft_entry *e = m->append_entries.entries;
        void *batch = NULL;

        for (unsigned i = 0; i < m->append_entries.n_entries; i++) {
            if (e[i].batch == batch) continue;
            batch = e[i].batch;
            raft_free(batch);
        }
        raft_free(e);
    } else if (m->type == RAFT_IO_INSTALL_SNAPSHOT) {
        raft_configuration_close(&m->install_snapshot.conf);
        raft_free(m->install_snapshot.data.base);
    }
}

static void guard_recv(struct raft_io *io, struct raft_message *m)
{
    struct io_guard *g = guard_of(io);

    if (io_guard_fenced(g)) {
        g->dropped++;
        drop_message(m);
        return;
    }
    g->recv(io, m);
}

static int guard_start(struct raft_io *io, unsigned msecs, raft_io_tick_cb tick,
                       raft_io_recv_cb recv)
{
    struct io_guard *g = guard_of(io);

    g->tick = tick;
    g->recv = recv;
    return g->start(io, msecs, guard_tick, guard_recv);
}

/* ---- the writes --------------------------------------------------------- */

static int guard_set_term(struct raft_io *io, raft_term term)
{
    struct io_guard *g = guard_of(io);
    int rv;

    if (io_guard_fenced(g)) return RAFT_IOERR;
    rv = g->set_term(io, term);
    check(g, rv, 0, "storing the term in the raft metadata");
    return rv;
}

static int guard_set_vote(struct raft_io *io, raft_id server_id)
{
    struct io_guard *g = guard_of(io);
    int rv;

    if (io_guard_fenced(g)) return RAFT_IOERR;
    rv = g->set_vote(io, server_id);
    check(g, rv, 0, "storing the vote in the raft metadata");
    return rv;
}

/* An append in flight: raft's request, and the one raft_uv holds. */
struct guard_append {
    struct raft_io_append req;
    struct raft_io_append *orig;
    struct io_guard *g;
    unsigned n;
    raft_index first; /* the index of its first entry; 0: not known */
};

/*
 * The status raft is told of an append that completed with `status`.
 * libraft 0.15 answers a failed append by releasing its entries and then
 * truncating its in-memory log from the first of them -- without checking
 * that they are still there. When several appends are in flight as the
 * disk fails (a busy leader), the first failure truncates the log from
 * its entries on, which takes the later appends' entries with it; the
 * next failure then truncates from past the log's end, and libraft walks
 * off its entry table (a SIGSEGV: docs/libraft-0.15.md, "Failed disk
 * writes"). Such an append is reported as done (0) instead: raft then
 * only releases its entries -- it counts none of them as stored, since
 * none is in its log any more (and the node, fenced, takes no new entry
 * at those indexes) -- and frees its request. Any other outcome is told
 * as it is.
 */
static int status_for_raft(const struct io_guard *g, raft_index first, int status)
{
    if (status == 0 || g->raft == NULL || first == 0) return status;
    return first > raft_last_index(g->raft) ? 0 : status;
}

static void guard_append_cb(struct raft_io_append *req, int status)
{
    struct guard_append *a = req->data;
    struct raft_io_append *orig = a->orig;
    struct io_guard *g = a->g;
    raft_index first = a->first;
    char what[IO_GUARD_WHAT_SIZE];

    snprintf(what, sizeof what, "appending %u entr%s to the raft log", a->n, a->n == 1 ? "y" : "ies");
    free(a);
    /* Fenced first: whatever raft does in its callback writes nothing. */
    check(g, status, 0, what);
    orig->cb(orig, status_for_raft(g, first, status));
}

static int guard_append(struct raft_io *io, struct raft_io_append *req,
                        const struct raft_entry entries[], unsigned n, raft_io_append_cb cb)
{
    struct io_guard *g = guard_of(io);
    struct guard_append *a;
    int rv;

    if (io_guard_fenced(g)) return RAFT_IOERR;
    a = malloc(sizeof *a);
    if (a == NULL) return RAFT_NOMEM;
    a->req.data = a;
    a->orig = req;
    a->g = g;
    a->n = n;
    /* raft appends the entries to its in-memory log first, and asks for
     * the writes of its log's last n entries. */
    a->first = g->raft && n > 0 ? raft_last_index(g->raft) - n + 1 : 0;
    req->cb = cb;
    rv = g->append(io, &a->req, entries, n, guard_append_cb);
    if (rv != 0) {
        free(a);
        if (rv != RAFT_NOMEM) check(g, rv, 0, "appending entries to the raft log");
    }
    return rv;
}

static int guard_truncate(struct raft_io *io, raft_index index)
{
    struct io_guard *g = guard_of(io);
    int rv;

    if (io_guard_fenced(g)) return RAFT_IOERR;
    rv = g->truncate(io, index);
    if (rv != RAFT_NOMEM) check(g, rv, index, "truncating the raft log");
    return rv;
}

struct guard_put {
    struct raft_io_snapshot_put req;
    struct raft_io_snapshot_put *orig;
    struct io_guard *g;
};

static void guard_put_cb(struct raft_io_snapshot_put *req, int status)
{
    struct guard_put *p = req->data;
    struct raft_io_snapshot_put *orig = p->orig;
    struct io_guard *g = p->g;

    free(p);
    check(g, status, 0, "writing a snapshot");
    orig->cb(orig, status);
}

static int guard_snapshot_put(struct raft_io *io, unsigned trailing,
                              struct raft_io_snapshot_put *req,
                              const struct raft_snapshot *snapshot, raft_io_snapshot_put_cb cb)
{
    struct io_guard *g = guard_of(io);
    struct guard_put *p;
    int rv;

    if (io_guard_fenced(g)) return RAFT_IOERR;
    p = malloc(sizeof *p);
    if (p == NULL) return RAFT_NOMEM;
    p->req.data = p;
    p->orig = req;
    p->g = g;
    req->cb = cb;
    rv = g->snapshot_put(io, trailing, &p->req, snapshot, guard_put_cb);
    if (rv != 0) {
        free(p);
        if (rv != RAFT_NOMEM) check(g, rv, 0, "writing a snapshot");
    }
    return rv;
}

/* ---- what is refused once fenced, and otherwise passed through ---------- */

static int guard_send(struct raft_io *io, struct raft_io_send *req,
                      const struct raft_message *message, raft_io_send_cb cb)
{
    struct io_guard *g = guard_of(io);

    if (io_guard_fenced(g)) return RAFT_IOERR;
    return g->send(io, req, message, cb);
}

static int guard_snapshot_get(struct raft_io *io, struct raft_io_snapshot_get *req,
                              raft_io_snapshot_get_cb cb)
{
    struct io_guard *g = guard_of(io);

    if (io_guard_fenced(g)) return RAFT_IOERR;
    return g->snapshot_get(io, req, cb);
}

void io_guard_init(struct io_guard *g, void (*on_fail)(void *arg), void *arg)
{
    struct raft_io *io = &g->io;

    g->on_fail = on_fail;
    g->arg = arg;
    g->failed = 0;
    g->failed_index = 0;
    g->sys_errno = 0;
    g->what[0] = '\0';
    g->errmsg[0] = '\0';
    g->dropped = 0;
    g->raft = NULL;
    g->start = io->start;
    g->set_term = io->set_term;
    g->set_vote = io->set_vote;
    g->send = io->send;
    g->append = io->append;
    g->truncate = io->truncate;
    g->snapshot_put = io->snapshot_put;
    g->snapshot_get = io->snapshot_get;
    io->start = guard_start;
    io->set_term = guard_set_term;
    io->set_vote = guard_set_vote;
    io->send = guard_send;
    io->append = guard_append;
    io->truncate = guard_truncate;
    io->snapshot_put = guard_snapshot_put;
    io->snapshot_get = guard_snapshot_get;
}

void io_guard_attach(struct io_guard *g, struct raft *r)
{
    g->raft = r;
}
