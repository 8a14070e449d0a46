/*
 * durable_file.c -- a small file written whole or not at all (durable_file.h).
 */
#include "raft/durable_file.h"

#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "baton/baton_defs.h"

int durable_sync_parent(const char *path)
{
    char dir[4200];
    int fd, rv;

    if (strlen(path) >= sizeof dir) return -1;
    memcpy(dir, path, strlen(path) + 1);
    fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    rv = fsync(fd);
    close(fd);
    return rv;
}

int durable_write(const char *path, const void *data, size_t n)
{
    char tmp[4200];
    int fd, ok;

    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) return BATON_EIO;
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return BATON_EIO;
    ok = write(fd, data, n) == (ssize_t)n && fsync(fd) == 0;
    if (close(fd) != 0) ok = 0;
    if (ok && rename(tmp, path) != 0) ok = 0;
    if (ok && durable_sync_parent(path) != 0) ok = 0;
    if (!ok) unlink(tmp);
    return ok ? 0 : BATON_EIO;
}
