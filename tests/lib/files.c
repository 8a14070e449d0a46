/*
 * files.c -- files and directories of the tests. See files.h.
 */
#include "tests/lib/files.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int tmpdir_make(char *buf, size_t cap, const char *prefix)
{
    return tmpdir_make_in(buf, cap, NULL, prefix);
}

int tmpdir_make_in(char *buf, size_t cap, const char *base, const char *prefix)
{
    const char *tmp = base && *base ? base : getenv("TMPDIR");
    int n = snprintf(buf, cap, "%s/%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", prefix);

    if (n < 0 || (size_t)n >= cap) {
        if (cap > 0) buf[0] = '\0';
        errno = ENAMETOOLONG;
        return -1;
    }
    return mkdtemp(buf) != NULL ? 0 : -1;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void rm_rf(const char *path)
{
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static char suite_path[64];

void suite_dir_init(const char *prefix)
{
    if (tmpdir_make(suite_path, sizeof suite_path, prefix) != 0) {
        fprintf(stderr, "cannot make a directory for the tests (%s): %s\n",
                suite_path[0] ? suite_path : prefix, strerror(errno));
        exit(1);
    }
}

const char *suite_dir(void)
{
    return suite_path;
}

void suite_dir_done(void)
{
    if (suite_path[0] != '\0') rm_rf(suite_path);
    suite_path[0] = '\0';
}

long read_tail(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    long size;
    size_t n;

    if (cap == 0) {
        if (f) fclose(f);
        return -1;
    }
    buf[0] = '\0';
    if (f == NULL) return -1;
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0) {
        fclose(f);
        return -1;
    }
    fseek(f, size > (long)(cap - 1) ? size - (long)(cap - 1) : 0, SEEK_SET);
    n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    return (long)n;
}
