/*
 * files.h -- files and directories of the tests: a fresh temporary
 * directory, removing a whole tree, and the tail of a (log) file.
 *
 *     char dir[PATH_MAX];
 *     if (tmpdir_make(dir, sizeof dir, "baton-fsm") != 0) ...
 *     ...
 *     rm_rf(dir);
 */
#ifndef BATON_TESTS_FILES_H
#define BATON_TESTS_FILES_H

#include <stddef.h>

/*
 * Make a new directory $TMPDIR/PREFIX-XXXXXX (/tmp if $TMPDIR is unset or
 * empty), mode 0700, and put its path in buf. 0, or -1 (errno set; ENAMETOOLONG
 * if the path does not fit in cap).
 */
int tmpdir_make(char *buf, size_t cap, const char *prefix);

/* Remove path and everything below it (links are removed, not followed);
 * what cannot be removed is left. */
void rm_rf(const char *path);

/*
 * Read the last cap - 1 bytes of the file at path (all of it if it is
 * shorter) into buf, NUL-terminated. Returns the number of bytes read, or
 * -1 if the file cannot be read (buf is then "").
 */
long read_tail(const char *path, char *buf, size_t cap);

#endif /* BATON_TESTS_FILES_H */
