/*
 * files.h -- files and directories of the tests: a fresh temporary
 * directory, a test program's per-run directory, removing a whole tree,
 * and the tail of a (log) file.
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
/* The same in the directory base ($TMPDIR or /tmp if base is NULL or
 * empty): BASE/PREFIX-XXXXXX. */
int tmpdir_make_in(char *buf, size_t cap, const char *base, const char *prefix);

/* Remove path and everything below it (links are removed, not followed);
 * what cannot be removed is left. */
void rm_rf(const char *path);

/*
 * A test program's per-run directory, for suites whose tests each make a
 * directory of their own inside it: suite_dir_init makes it (tmpdir_make;
 * call it once, in main, before the tests; it exits the process with
 * status 1 if it cannot), suite_dir_done removes it with everything inside,
 * so that a test that failed (and exited at once) leaves nothing behind.
 * suite_dir is its path ("" before suite_dir_init).
 */
void suite_dir_init(const char *prefix);
const char *suite_dir(void);
void suite_dir_done(void);

/*
 * Read the last cap - 1 bytes of the file at path (all of it if it is
 * shorter) into buf, NUL-terminated. Returns the number of bytes read, or
 * -1 if the file cannot be read (buf is then "").
 */
long read_tail(const char *path, char *buf, size_t cap);

#endif /* BATON_TESTS_FILES_H */
