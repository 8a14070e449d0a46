/*
 * io_guard.h -- raft_uv's I/O as libraft 0.15 is given it, with every
 * write's outcome watched. libraft 0.15 cannot go on after a failed write
 * of its log, metadata or snapshots (docs/libraft-0.15.md, "Failed disk
 * writes"): a follower keeps the entries whose write failed in memory and
 * never counts them stored, so it stands still for good, silently; a
 * leader goes on leading and later sends an InstallSnapshot with no
 * snapshot (a SIGSEGV inside libraft); and raft_uv's segment writer does
 * not rewind, so whatever it appends next need not land where the
 * in-memory log says.
 *
 * So the guard sits between raft and raft_uv (it replaces the function
 * pointers of the struct raft_io that raft_uv_init filled in, and the tick
 * and receive callbacks raft gives raft_uv's start) and, at the first
 * failed write -- an append, truncate or snapshot put whose completion or
 * call fails, a term or vote that cannot be stored -- FENCES the node:
 * from then on raft gets no ticks and no messages (they are dropped and
 * freed here), and every send and every write it asks for is refused
 * (RAFT_IOERR), so nothing more leaves the node, on the wire or to its
 * disk, whatever libraft does in memory. Writes submitted before the
 * failure complete as raft_uv reports them. The owner (raft/node.c) is
 * told once, through on_fail, from inside raft's I/O callbacks (on_fail
 * must not call raft: node.c polls on the next loop turn), and closes raft;
 * raft_close and its I/O's close still run normally, so every request and
 * buffer is freed.
 *
 * Loop thread only, like everything of raft.
 */
#ifndef BATON_RAFT_IO_GUARD_H
#define BATON_RAFT_IO_GUARD_H

#include <raft.h>
#include <stdbool.h>

#define IO_GUARD_WHAT_SIZE 64

struct io_guard {
    struct raft_io io;  /* what raft_init is given: raft_uv's, wrapped */
    /* raft_uv's own functions, called through */
    int (*start)(struct raft_io *io, unsigned msecs, raft_io_tick_cb tick, raft_io_recv_cb recv);
    int (*set_term)(struct raft_io *io, raft_term term);
    int (*set_vote)(struct raft_io *io, raft_id server_id);
    int (*send)(struct raft_io *io, struct raft_io_send *req, const struct raft_message *message,
                raft_io_send_cb cb);
    int (*append)(struct raft_io *io, struct raft_io_append *req, const struct raft_entry entries[],
                  unsigned n, raft_io_append_cb cb);
    int (*truncate)(struct raft_io *io, raft_index index);
    int (*snapshot_put)(struct raft_io *io, unsigned trailing, struct raft_io_snapshot_put *req,
                        const struct raft_snapshot *snapshot, raft_io_snapshot_put_cb cb);
    int (*snapshot_get)(struct raft_io *io, struct raft_io_snapshot_get *req,
                        raft_io_snapshot_get_cb cb);
    /* raft's own callbacks, given to start */
    raft_io_tick_cb tick;
    raft_io_recv_cb recv;
    /* The first failure: raft_uv's status (RAFT_IOERR, RAFT_NOSPACE...),
     * 0 while none; what was being written; raft_uv's message then. */
    int failed;
    raft_index failed_index;   /* the entry it was writing, if known, else 0 */
    int sys_errno;             /* the system call's errno, if raft_uv says (EIO, ENOSPC...) */
    char what[IO_GUARD_WHAT_SIZE];
    char errmsg[RAFT_ERRMSG_BUF_SIZE];
    unsigned long dropped;     /* ticks and messages not given to raft since */
    void (*on_fail)(void *arg);
    void *arg;
    struct raft *raft;         /* the raft it serves (io_guard_attach); NULL before */
};

/*
 * Wrap g->io, which raft_uv_init has just filled in (call before
 * raft_init, which takes &g->io). on_fail(arg) runs once, at the first
 * failure, from inside raft's I/O callbacks or calls.
 */
void io_guard_init(struct io_guard *g, void (*on_fail)(void *arg), void *arg);

/* The raft that g->io serves, once raft_init has succeeded: the guard
 * reads its last index to tell an append whose entries raft has already
 * dropped (see guard_append_cb in io_guard.c). */
void io_guard_attach(struct io_guard *g, struct raft *r);

/*
 * Record a failure seen elsewhere -- a status raft passed on to one of its
 * requests that can only come from a failed write -- and fence the node as
 * above, if it is not fenced already. `what` names the write.
 */
void io_guard_fail(struct io_guard *g, int status, raft_index index, const char *what);

/* Has a write failed (the node is fenced)? */
static inline bool io_guard_fenced(const struct io_guard *g)
{
    return g->failed != 0;
}

#endif /* BATON_RAFT_IO_GUARD_H */
