/*
 * datadir_lock.c -- the exclusive lock on a data directory's batond.lock.
 * See datadir_lock.h.
 */
#include "server/datadir_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proto/errmsg.h"

#define HOLDER_TRIES 10  /* reads of a held file that is still empty */
#define HOLDER_WAIT_MS 20

/* The pid in the lock file fd, or 0 if it holds none. The holder writes
 * its pid just after it takes the lock, so an empty file is read again a
 * few times (HOLDER_TRIES x HOLDER_WAIT_MS at most). */
static int holder_pid(int fd)
{
    struct timespec wait = {0, HOLDER_WAIT_MS * 1000000L};
    char text[32];

    for (int k = 0; k < HOLDER_TRIES; k++) {
        ssize_t n = pread(fd, text, sizeof text - 1, 0);
        char *end;
        long pid;

        if (n > 0) {
            text[n] = '\0';
            pid = strtol(text, &end, 10);
            return end != text && pid > 0 && pid <= INT_MAX ? (int)pid : 0;
        }
        nanosleep(&wait, NULL);
    }
    return 0;
}

/* The message for a lock another process holds (a long directory name is
 * cut to fit BATON_ERRMSG_SIZE). */
static void say_in_use(int fd, const char *dir, char *errmsg)
{
    int pid = holder_pid(fd);

    if (pid > 0)
        snprintf(errmsg, BATON_ERRMSG_SIZE,
                 "data directory %.64s is in use by batond pid %d (lock file %.64s/"
                 DATADIR_LOCK_FILE "); one batond per data directory",
                 dir, pid, dir);
    else
        snprintf(errmsg, BATON_ERRMSG_SIZE,
                 "data directory %.64s is in use by another process (lock file %.64s/"
                 DATADIR_LOCK_FILE " holds no pid); one batond per data directory",
                 dir, dir);
}

/* Replace the file's content with this process's pid. 0, or -1 (errno). */
static int write_pid(int fd)
{
    char text[32];
    int len = snprintf(text, sizeof text, "%ld\n", (long)getpid());

    if (ftruncate(fd, 0) != 0) return -1;
    if (pwrite(fd, text, (size_t)len, 0) != len) {
        if (errno == 0) errno = EIO;
        return -1;
    }
    return 0;
}

int datadir_lock(const char *dir, char *errmsg)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    char path[4200];
    int fd;

    snprintf(path, sizeof path, "%s/%s", dir, DATADIR_LOCK_FILE);
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "cannot open the lock file %.180s: %s", path,
                 strerror(errno));
        return -1;
    }
    if (fcntl(fd, F_OFD_SETLK, &fl) != 0) {
        if (errno == EAGAIN || errno == EACCES)
            say_in_use(fd, dir, errmsg);
        else
            snprintf(errmsg, BATON_ERRMSG_SIZE, "cannot lock %.180s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    /* The pid only names the holder in a refusal: a node restarted on a
     * full disk must start all the same (it serves releases there). */
    errmsg[0] = '\0';
    errno = 0;
    if (write_pid(fd) != 0)
        snprintf(errmsg, BATON_ERRMSG_SIZE,
                 "cannot write this process's pid into the lock file %.120s (%s); the lock "
                 "holds all the same",
                 path, strerror(errno));
    return fd;
}

void datadir_unlock(int fd)
{
    if (fd >= 0) close(fd);
}
