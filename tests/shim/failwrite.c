/*
 * failwrite.c -- an LD_PRELOAD shim for the integration tests: make ONE
 * write of raft's log fail, on the node the test picks, when it picks.
 *
 * libraft 0.15 writes its log segments (the files open-N in a node's raft
 * directory) with Linux AIO, and calls io_submit and io_getevents through
 * glibc's syscall(). This shim wraps syscall(): after a real io_getevents,
 * a completed write to an open-N file of a node whose data directory
 * (DATA/raft/open-N -> DATA) holds a file named "fail-log-write" is
 * reported as failed with EIO -- the bytes did reach the file, as when a
 * disk reports an error after a partial or unconfirmed write -- and the
 * trigger file is deleted, so exactly one write fails per trigger. Nothing
 * else changes: every other call goes to the real syscall() untouched.
 *
 * Test code only: built without sanitizers as $(B)/tests/shim/failwrite.so
 * and named in LD_PRELOAD by tests/integration/test_localfail.c (under
 * ASan, with ASAN_OPTIONS=verify_asan_link_order=0).
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <linux/aio_abi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

long syscall(long number, ...);

typedef long syscall_fn(long number, ...);

/* Does fd name an open segment of a node whose trigger file exists? Then
 * the trigger is consumed (unlink is atomic: one write fails per file). */
static int triggered(int fd)
{
    char link[64], path[PATH_MAX], trigger[PATH_MAX + 32];
    char *slash;
    ssize_t n;

    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    n = readlink(link, path, sizeof path - 1);
    if (n <= 0) return 0;
    path[n] = '\0';
    slash = strrchr(path, '/');
    if (slash == NULL || strncmp(slash + 1, "open-", 5) != 0) return 0;
    *slash = '\0'; /* DATA/raft */
    slash = strrchr(path, '/');
    if (slash == NULL) return 0;
    *slash = '\0'; /* DATA */
    snprintf(trigger, sizeof trigger, "%s/fail-log-write", path);
    return unlink(trigger) == 0;
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
