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
#include "raft/durable_file.h"

bool state_mark_exists(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0;
}

int state_mark_write(const char *path, uint32_t id, uint64_t term)
{
    char text[160];
    int n = snprintf(text, sizeof text,
                     "baton node %u: raft had state (term %llu) -- see docs/operations.md, "
                     "\"A node that lost its raft directory\"\n",
                     id, (unsigned long long)term);

    if (n < 0 || (size_t)n >= sizeof text) n = (int)strlen(text);
    return durable_write(path, text, (size_t)n);
}
