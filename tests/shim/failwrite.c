/*
 * failwrite.c -- an LD_PRELOAD shim for the integration tests: make writes
 * of raft's files fail, on the node the test picks, when it picks.
 *
 * One write of the raft log. libraft 0.15 writes its log segments (the
 * files open-N in a node's raft directory) with Linux AIO, and calls
 * io_submit and io_getevents through glibc's syscall(). This shim wraps
 * syscall(): after a real io_getevents, a completed write to an open-N
 * file of a node whose data directory (DATA/raft/open-N -> DATA) holds a
 * file named "fail-log-write" is reported as failed with EIO -- the bytes
 * did reach the file, as when a disk reports an error after a partial or
 * unconfirmed write -- and the trigger file is deleted, so exactly one
 * write fails per trigger.
 *
 * Every write of a raft snapshot. raft_uv writes a snapshot into
 * DATA/raft/tmp-snapshot-* files from libuv's thread pool (pwrite, and
 * pwritev through glibc or syscall()) before renaming them. While DATA
 * holds a file named "fail-snapshot-write", every such write fails with
 * ENOSPC, nothing written: a full disk, whose preallocated log segments
 * still take entries while a new snapshot file finds no room.
 *
 * Nothing else changes: every other call goes to the real one untouched.
 *
 * Test code only: built without sanitizers as $(B)/tests/shim/failwrite.so
 * and named in LD_PRELOAD by tests/integration/test_localfail.c and
 * test_diskfail.c (under ASan, with ASAN_OPTIONS=verify_asan_link_order=0).
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <linux/aio_abi.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

long syscall(long number, ...);

typedef long syscall_fn(long number, ...);

/* Does fd name a file DATA/raft/PREFIX* of a node? Then path (PATH_MAX
 * bytes) is DATA: 1; else 0. */
static int raft_file_of(int fd, const char *prefix, char *path)
{
    char link[64];
    char *slash;
    ssize_t n;

    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    n = readlink(link, path, PATH_MAX - 1);
    if (n <= 0) return 0;
    path[n] = '\0';
    slash = strrchr(path, '/');
    if (slash == NULL || strncmp(slash + 1, prefix, strlen(prefix)) != 0) return 0;
    *slash = '\0'; /* DATA/raft */
    slash = strrchr(path, '/');
    if (slash == NULL) return 0;
    *slash = '\0'; /* DATA */
    return 1;
}

/* Does fd name an open segment of a node whose trigger file exists? Then
 * the trigger is consumed (unlink is atomic: one write fails per file). */
static int triggered(int fd)
{
    char path[PATH_MAX], trigger[PATH_MAX + 32];

    if (!raft_file_of(fd, "open-", path)) return 0;
    snprintf(trigger, sizeof trigger, "%s/fail-log-write", path);
    return unlink(trigger) == 0;
}

/* Is fd a snapshot raft_uv is writing (DATA/raft/tmp-snapshot-*), of a
 * node whose DATA holds "fail-snapshot-write"? */
static int snapshot_fails(int fd)
{
    char path[PATH_MAX], trigger[PATH_MAX + 32];

    if (!raft_file_of(fd, "tmp-snapshot-", path)) return 0;
    snprintf(trigger, sizeof trigger, "%s/fail-snapshot-write", path);
    return access(trigger, F_OK) == 0;
}

typedef ssize_t pwrite_fn(int, const void *, size_t, off_t);
typedef ssize_t pwritev_fn(int, const struct iovec *, int, off_t);

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    static pwrite_fn *real;

    if (snapshot_fails(fd)) return errno = ENOSPC, -1;
    if (real == NULL) real = (pwrite_fn *)dlsym(RTLD_NEXT, "pwrite");
    return real(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    static pwrite_fn *real;

    if (snapshot_fails(fd)) return errno = ENOSPC, -1;
    if (real == NULL) real = (pwrite_fn *)dlsym(RTLD_NEXT, "pwrite64");
    return real(fd, buf, n, off);
}

ssize_t pwritev(int fd, const struct iovec *v, int n, off_t off)
{
    static pwritev_fn *real;

    if (snapshot_fails(fd)) return errno = ENOSPC, -1;
    if (real == NULL) real = (pwritev_fn *)dlsym(RTLD_NEXT, "pwritev");
    return real(fd, v, n, off);
}

long syscall(long number, ...)
{
    static syscall_fn *real;
    long a[6], rv;
    va_list ap;

    /* syscall() takes up to six arguments; reading six is what glibc's
     * own syscall() does with its registers. */
    va_start(ap, number);
    for (int i = 0; i < 6; i++) a[i] = va_arg(ap, long);
    va_end(ap);
    if (real == NULL) real = (syscall_fn *)dlsym(RTLD_NEXT, "syscall");
    if ((number == SYS_pwritev || number == SYS_pwritev2 || number == SYS_pwrite64) &&
        snapshot_fails((int)a[0]))
        return errno = ENOSPC, -1;
    rv = real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
    if (number == SYS_io_getevents && rv > 0) {
        struct io_event *ev = (struct io_event *)(uintptr_t)a[3];
        int saved = errno;

        for (long i = 0; i < rv; i++) {
            const struct iocb *cb = (const struct iocb *)(uintptr_t)ev[i].obj;
            if (cb == NULL || ev[i].res <= 0) continue;
            if (cb->aio_lio_opcode != IOCB_CMD_PWRITE && cb->aio_lio_opcode != IOCB_CMD_PWRITEV)
                continue;
            if (triggered((int)cb->aio_fildes)) ev[i].res = -EIO;
        }
        errno = saved;
    }
    return rv;
}
