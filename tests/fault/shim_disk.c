/*
 * shim_disk.c -- shim_disk.so, preloaded (LD_PRELOAD) into every batond of
 * the fault harness: a disk that the nemesis can make slow or failing, one
 * node at a time, while the node runs (nemesis_disk.c).
 *
 *   BATON_FAULT_DISK_CTL=FILE   the control file, one line:
 *                                 ok           nothing happens (also when
 *                                              FILE is missing)
 *                                 delay MS     every write and sync of the
 *                                              node's data takes MS longer
 *                                 fail ERRNO   every one fails with ERRNO
 *                                              (a number: EIO, ENOSPC, ...)
 *
 * "The node's data" is every regular file and directory it writes or
 * syncs, but its stdin, stdout and stderr: batond writes no other files
 * than those under its --data directory, and its log (stderr, a file in
 * the harness) must keep working, or a node's last words would be lost.
 *
 * The nemesis rewrites FILE (a new file renamed over it); the shim looks at
 * FILE's status at most every 20 ms, from inside the calls it intercepts
 * (a coarse clock read each, nothing more while all is well), so a change
 * takes effect by the node's next write 20 ms later. Each change is logged
 * to the node's stderr with the number of calls the previous mode delayed
 * or failed.
 *
 * What batond really calls -- strace of batond with libraft 0.15 on ext4
 * (docs/libraft-0.15.md) -- and what the shim does to each:
 *
 *  - The raft log's segments are opened O_DIRECT|O_DSYNC and written with
 *    Linux AIO through syscall(2): io_submit(IOCB_CMD_PWRITEV, RWF_NOWAIT,
 *    completion signalled on an eventfd) on the loop thread, then
 *    io_getevents when the eventfd fires. When the kernel answers EAGAIN,
 *    libraft re-submits the write from its thread pool without RWF_NOWAIT
 *    and waits there in io_getevents.
 *      delay: a RWF_NOWAIT submission is refused with EAGAIN (as a busy
 *             disk's queue would), so libraft moves it to the thread pool,
 *             where the shim sleeps MS before submitting: the write
 *             completes late while the loop runs on, as with a slow disk.
 *      fail:  the write is done, but its completion reports -ERRNO: the
 *             bytes may well be on disk, which is the nastier case (raft
 *             cannot know whether the entry is durable).
 *  - Raft's metadata (term, vote), snapshots and directory syncs: pwrite,
 *    write, writev, pwritev (libuv's pool: through syscall(2)), fsync,
 *    fdatasync. delay: sleep MS first; fail: fail at
 *    once with ERRNO, nothing written.
 *  - LMDB (MDB_WRITEMAP | MDB_NOSYNC): its writes are memory stores; it
 *    reaches the disk in msync, when batond syncs the store before a
 *    snapshot, on the loop thread. delay: sleep MS first (a slow disk stalls
 *    batond's loop there, as a real one would); fail: fail with ERRNO.
 *
 * Only batond's own calls through the dynamic linker are seen: that is all
 * of libraft's, LMDB's and libuv's I/O (they are shared libraries).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008
#endif

#define CHECK_EVERY_NS 20000000 /* 20 ms */

enum mode { M_OK, M_DELAY, M_FAIL };

typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*writev_fn)(int, const struct iovec *, int);
typedef int (*fsync_fn)(int);
typedef int (*msync_fn)(void *, size_t, int);
typedef long (*syscall_fn)(long, ...);

static write_fn real_write;
static pwrite_fn real_pwrite, real_pwrite64;
static writev_fn real_writev;
static fsync_fn real_fsync, real_fdatasync;
static msync_fn real_msync;
static syscall_fn real_syscall;

static const char *ctl_path;

static _Atomic int mode = M_OK;
static _Atomic int param;         /* delay in ms, or the errno to fail with */
static _Atomic int64_t next_check_ns;
static _Atomic uint64_t n_hit;    /* calls delayed or failed in this mode */
static pthread_mutex_t reload_mu = PTHREAD_MUTEX_INITIALIZER;
static struct stat seen;          /* FILE when last read (st_ino 0: missing) */

__attribute__((constructor)) static void shim_disk_init(void)
{
    real_write = (write_fn)dlsym(RTLD_NEXT, "write");
    real_pwrite = (pwrite_fn)dlsym(RTLD_NEXT, "pwrite");
    real_pwrite64 = (pwrite_fn)dlsym(RTLD_NEXT, "pwrite64");
    real_writev = (writev_fn)dlsym(RTLD_NEXT, "writev");
    real_fsync = (fsync_fn)dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = (fsync_fn)dlsym(RTLD_NEXT, "fdatasync");
    real_msync = (msync_fn)dlsym(RTLD_NEXT, "msync");
    real_syscall = (syscall_fn)dlsym(RTLD_NEXT, "syscall");
    ctl_path = getenv("BATON_FAULT_DISK_CTL");
}

static int64_t coarse_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char line[256];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
    line[n++] = '\n';
    if (real_write(2, line, (size_t)n) < 0) {
    }
}

/* Read FILE and set the mode from it. */
static void load_ctl(void)
{
    char buf[64] = {0};
    int fd = open(ctl_path, O_RDONLY | O_CLOEXEC), m = M_OK, p = 0;
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : 0;

    if (fd >= 0) close(fd);
    if (n > 0 && sscanf(buf, "delay %d", &p) == 1 && p > 0)
        m = M_DELAY;
    else if (n > 0 && sscanf(buf, "fail %d", &p) == 1 && p > 0)
        m = M_FAIL;
    if (m == atomic_load(&mode) && p == atomic_load(&param)) return;
    atomic_store(&param, p);
    atomic_store(&mode, m);
    say("shim_disk: %s %d (the previous mode hit %llu calls)",
        m == M_OK ? "ok" : m == M_DELAY ? "delay ms" : "fail errno", p,
        (unsigned long long)atomic_exchange(&n_hit, 0));
}

/* Look at FILE if 20 ms have passed since the last look. */
static void refresh(void)
{
    int64_t now;
    struct stat st;

    /* Another library's constructor may write before ours has run. */
    if (real_syscall == NULL) shim_disk_init();
    if (ctl_path == NULL) return;
    now = coarse_ns();
    if (now < atomic_load(&next_check_ns)) return;
    if (pthread_mutex_trylock(&reload_mu) != 0) return; /* another thread looks */
    atomic_store(&next_check_ns, now + CHECK_EVERY_NS);
    if (stat(ctl_path, &st) != 0) memset(&st, 0, sizeof st);
    if (st.st_ino != seen.st_ino || st.st_dev != seen.st_dev || st.st_size != seen.st_size ||
        st.st_mtim.tv_sec != seen.st_mtim.tv_sec || st.st_mtim.tv_nsec != seen.st_mtim.tv_nsec) {
        seen = st;
        load_ctl();
    }
    pthread_mutex_unlock(&reload_mu);
}

/* Is fd one of the node's data files (see the top)? */
static int data_fd(int fd)
{
    struct stat st;

    return fd > 2 && fstat(fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode));
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* The fault for one write or sync (fd < 0: not of a file, msync): 0 to go
 * ahead (after the delay, slept here), or the errno to fail it with. */
static int fault(int fd, int check_fd)
{
    int m;

    refresh();
    m = atomic_load(&mode);
    if (m == M_OK || (check_fd && !data_fd(fd))) return 0;
    atomic_fetch_add(&n_hit, 1);
    if (m == M_DELAY) {
        sleep_ms(atomic_load(&param));
        return 0;
    }
    return atomic_load(&param);
}

#define EXPORT __attribute__((visibility("default")))

EXPORT ssize_t write(int fd, const void *b, size_t n)
{
    int e = fault(fd, 1);

    if (e) return errno = e, -1;
    return real_write(fd, b, n);
}

EXPORT ssize_t pwrite(int fd, const void *b, size_t n, off_t off)
{
    int e = fault(fd, 1);

    if (e) return errno = e, -1;
    return real_pwrite(fd, b, n, off);
}

EXPORT ssize_t pwrite64(int fd, const void *b, size_t n, off_t off)
{
    int e = fault(fd, 1);

    if (e) return errno = e, -1;
    return real_pwrite64(fd, b, n, off);
}

EXPORT ssize_t writev(int fd, const struct iovec *v, int n)
{
    int e = fault(fd, 1);

    if (e) return errno = e, -1;
    return real_writev(fd, v, n);
}

EXPORT int fsync(int fd)
{
    int e = fault(fd, 1);

    if (e) return errno = e, -1;
    return real_fsync(fd);
}

EXPORT int fdatasync(int fd)
{
    int e = fault(fd, 1);

    if (e) return errno = e, -1;
    return real_fdatasync(fd);
}

EXPORT int msync(void *addr, size_t len, int flags)
{
    int e = fault(-1, 0);

    if (e) return errno = e, -1;
    return real_msync(addr, len, flags);
}

/* io_submit: see the top of the file. */
static long aio_submit(long a[6])
{
    struct iocb **v = (struct iocb **)a[2];
    int nowait = 0;

    refresh();
    if (atomic_load(&mode) != M_DELAY) return real_syscall(SYS_io_submit, a[0], a[1], a[2]);
    for (long k = 0; k < a[1]; k++) nowait |= (v[k]->aio_rw_flags & RWF_NOWAIT) != 0;
    atomic_fetch_add(&n_hit, 1);
    if (nowait) return errno = EAGAIN, -1; /* libraft retries from its pool */
    sleep_ms(atomic_load(&param));
    return real_syscall(SYS_io_submit, a[0], a[1], a[2]);
}

/* io_getevents: the writes that completed, failed if the mode says so. */
static long aio_getevents(long a[6])
{
    long n = real_syscall(SYS_io_getevents, a[0], a[1], a[2], a[3], a[4]);
    struct io_event *ev = (struct io_event *)a[3];
    int e;

    if (n <= 0) return n;
    refresh();
    if (atomic_load(&mode) != M_FAIL) return n;
    e = atomic_load(&param);
    for (long k = 0; k < n; k++) ev[k].res = -e;
    atomic_fetch_add(&n_hit, (uint64_t)n);
    return n;
}

/* syscall(2): libraft's AIO and libuv's pwritev, fsync and fdatasync come
 * through here. Six arguments are always passed on: the kernel ignores the
 * ones a call does not take. */
EXPORT long syscall(long nr, ...)
{
    long a[6];
    va_list ap;
    int e = 0;

    va_start(ap, nr);
    for (int k = 0; k < 6; k++) a[k] = va_arg(ap, long);
    va_end(ap);
    if (real_syscall == NULL) shim_disk_init();
    switch (nr) {
    case SYS_io_submit: return aio_submit(a);
    case SYS_io_getevents: return aio_getevents(a);
    case SYS_write:
    case SYS_pwrite64:
    case SYS_writev:
    case SYS_pwritev:
    case SYS_pwritev2:
    case SYS_fsync:
    case SYS_fdatasync: e = fault((int)a[0], 1); break;
    default: break;
    }
    if (e) return errno = e, -1;
    return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
