/*
 * test_datadir_lock.c -- one batond per data directory
 * (server/datadir_lock.c): the lock file is created with this process's
 * pid in it; a second lock of the same directory (another open file
 * description: it conflicts even within one process, as it would between
 * two batonds) is refused with a message naming the holder's pid, and
 * leaves the file as it was; after the holder lets go the directory can
 * be locked again; a file left by a process that died (a stale pid, or
 * garbage) is taken over and overwritten; a pid that cannot be written
 * (a full disk) leaves the lock held, with a warning; the descriptor is
 * close-on-exec;
 * a missing directory is an error, not a lock. The whole-process tests
 * (a second batond, batond --restore) are in
 * tests/integration/test_datadir.c.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/errmsg.h"
#include "server/datadir_lock.h"
#include "tests/lib/files.h"
#include "tests/lib/runner.h"

/* A fresh directory for one test, in the suite's directory. */
static void fresh_dir(char *dir, size_t cap, const char *name)
{
    snprintf(dir, cap, "%s/%s-%d", suite_dir(), name, (int)getpid());
    ASSERT_EQ(mkdir(dir, 0700), 0);
}

/* The lock file of dir, read whole into buf. */
static void read_lock_file(const char *dir, char *buf, size_t cap)
{
    char path[PATH_MAX + 32];

    snprintf(path, sizeof path, "%s/" DATADIR_LOCK_FILE, dir);
    ASSERT_GE(read_tail(path, buf, cap), 0);
}

static void write_lock_file(const char *dir, const char *text)
{
    char path[PATH_MAX + 32];
    FILE *f;

    snprintf(path, sizeof path, "%s/" DATADIR_LOCK_FILE, dir);
    f = fopen(path, "w");
    ASSERT(f != NULL);
    fputs(text, f);
    fclose(f);
}

TEST(lock_writes_pid)
{
    char dir[PATH_MAX], errmsg[BATON_ERRMSG_SIZE], got[64], want[32];
    int fd;

    fresh_dir(dir, sizeof dir, "pid");
    fd = datadir_lock(dir, errmsg);
    if (fd < 0) FAIL("datadir_lock: %s", errmsg);
    ASSERT_STREQ(errmsg, "");
    read_lock_file(dir, got, sizeof got);
    snprintf(want, sizeof want, "%d\n", (int)getpid());
    ASSERT_STREQ(got, want);
    ASSERT(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    datadir_unlock(fd);
}

TEST(second_lock_refused_with_pid)
{
    char dir[PATH_MAX], errmsg[BATON_ERRMSG_SIZE], want[BATON_ERRMSG_SIZE + 64], before[64],
        after[64];
    int fd, fd2;

    fresh_dir(dir, sizeof dir, "twice");
    fd = datadir_lock(dir, errmsg);
    if (fd < 0) FAIL("datadir_lock: %s", errmsg);
    read_lock_file(dir, before, sizeof before);
    errmsg[0] = '\0';
    ASSERT_EQ(datadir_lock(dir, errmsg), -1);
    /* (a directory name is cut at 64 bytes) */
    snprintf(want, sizeof want,
             "data directory %.64s is in use by batond pid %d (lock file %.64s/batond.lock); "
             "one batond per data directory",
             dir, (int)getpid(), dir);
    ASSERT_STREQ(errmsg, want);
    read_lock_file(dir, after, sizeof after);
    ASSERT_STREQ(after, before);
    /* Let go: the next one gets it. */
    datadir_unlock(fd);
    fd2 = datadir_lock(dir, errmsg);
    if (fd2 < 0) FAIL("datadir_lock after unlock: %s", errmsg);
    datadir_unlock(fd2);
}

TEST(held_file_without_pid)
{
    char dir[PATH_MAX], path[PATH_MAX + 32], errmsg[BATON_ERRMSG_SIZE];
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    int fd;

    /* Another process's lock on an empty file: the refusal says so. */
    fresh_dir(dir, sizeof dir, "nopid");
    snprintf(path, sizeof path, "%s/" DATADIR_LOCK_FILE, dir);
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(fcntl(fd, F_OFD_SETLK, &fl), 0);
    ASSERT_EQ(datadir_lock(dir, errmsg), -1);
    if (strstr(errmsg, "is in use by another process") == NULL ||
        strstr(errmsg, "holds no pid); one batond per data directory") == NULL)
        FAIL("message: %s", errmsg);
    close(fd);
}

TEST(stale_file_taken_over)
{
    char dir[PATH_MAX], errmsg[BATON_ERRMSG_SIZE], got[64], want[32];
    const char *stale[] = {"4194304\n", "garbage that is longer than a pid\n", ""};

    snprintf(want, sizeof want, "%d\n", (int)getpid());
    fresh_dir(dir, sizeof dir, "stale");
    for (size_t k = 0; k < sizeof stale / sizeof stale[0]; k++) {
        int fd;

        write_lock_file(dir, stale[k]);
        fd = datadir_lock(dir, errmsg);
        if (fd < 0) FAIL("datadir_lock over '%s': %s", stale[k], errmsg);
        read_lock_file(dir, got, sizeof got);
        ASSERT_STREQ(got, want);
        datadir_unlock(fd);
    }
}

/* A pid that cannot be written (here: a file size limit of 0, as a full
 * disk would refuse it) costs only the pid in the message: the lock holds. */
TEST(unwritable_pid_still_locks)
{
    char dir[PATH_MAX], errmsg[BATON_ERRMSG_SIZE], got[64];
    struct rlimit rl;
    int fd;

    fresh_dir(dir, sizeof dir, "nowrite");
    signal(SIGXFSZ, SIG_IGN);
    ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &rl), 0);
    rl.rlim_cur = 0;
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &rl), 0);
    fd = datadir_lock(dir, errmsg);
    ASSERT_GE(fd, 0);
    if (strstr(errmsg, "cannot write this process's pid") == NULL ||
        strstr(errmsg, "the lock holds all the same") == NULL)
        FAIL("warning: '%s'", errmsg);
    read_lock_file(dir, got, sizeof got);
    ASSERT_STREQ(got, "");
    ASSERT_EQ(datadir_lock(dir, errmsg), -1);
    if (strstr(errmsg, "holds no pid") == NULL) FAIL("message: %s", errmsg);
    datadir_unlock(fd);
}

TEST(missing_dir_is_an_error)
{
    char dir[PATH_MAX], errmsg[BATON_ERRMSG_SIZE];

    snprintf(dir, sizeof dir, "%s/none-%d", suite_dir(), (int)getpid());
    ASSERT_EQ(datadir_lock(dir, errmsg), -1);
    if (strstr(errmsg, "cannot open the lock file") == NULL ||
        strstr(errmsg, "No such file or directory") == NULL)
        FAIL("message: %s", errmsg);
    datadir_unlock(-1); /* a no-op */
}

int main(int argc, char **argv)
{
    int rv;

    runner_init(argc, argv);
    suite_dir_init("baton-datadir-lock");
    RUN(lock_writes_pid);
    RUN(second_lock_refused_with_pid);
    RUN(held_file_without_pid);
    RUN(stale_file_taken_over);
    RUN(unwritable_pid_still_locks);
    RUN(missing_dir_is_an_error);
    rv = runner_done();
    suite_dir_done();
    return rv;
}
