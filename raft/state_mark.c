/*
 * state_mark.c -- the data directory's mark of a node whose raft has had
 * state; see state_mark.h.
 */
#include "raft/state_mark.h"

#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "baton/baton_defs.h"

bool state_mark_exists(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0;
}

/* fsync the directory that holds path, so that the new name is durable. */
static int sync_parent(const char *path)
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

int state_mark_write(const char *path, uint32_t id, uint64_t term)
{
    char text[160];
    int n = snprintf(text, sizeof text,
                     "baton node %u: raft had state (term %llu) -- see docs/operations.md, "
                     "\"A node that lost its raft directory\"\n",
                     id, (unsigned long long)term);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int ok;

    if (fd < 0) return BATON_EIO;
    if (n < 0 || (size_t)n >= sizeof text) n = (int)strlen(text);
    ok = write(fd, text, (size_t)n) == n && fsync(fd) == 0;
    if (close(fd) != 0) ok = 0;
    if (ok && sync_parent(path) != 0) ok = 0;
    return ok ? 0 : BATON_EIO;
}
