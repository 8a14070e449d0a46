/*
 * proc.h -- child processes of the tests: start a program that dies with
 * the test process, wait for it with a time limit, stop it, read lines
 * from its output; and a process's resident memory.
 *
 *     int p[2];
 *     pipe2(p, O_CLOEXEC);
 *     pid_t pid = proc_spawn(argv, PROC_NULL, p[1], PROC_INHERIT);
 *     close(p[1]);
 *     if (pid < 0 || proc_read_line(p[0], line, sizeof line, 5000) != 0) ...
 *     ASSERT_EQ(proc_stop(pid, SIGTERM, 10000), 0);
 *
 * Every child gets SIGKILL when the process that started it dies
 * (PR_SET_PDEATHSIG): a test that fails an assertion (_exit) or times out
 * (SIGALRM, tests/lib/runner.h) leaves nothing running. Children are reaped
 * with waitpid, so SIGCHLD must not be ignored. Not thread-safe beyond what
 * fork and waitpid are: start and reap a child from one thread.
 */
#ifndef BATON_TESTS_PROC_H
#define BATON_TESTS_PROC_H

#include <stddef.h>
#include <sys/types.h>

/* Where a child's stdin, stdout or stderr goes, besides a descriptor of
 * ours: /dev/null, or the test process's own descriptor of that number. */
#define PROC_NULL (-1)
#define PROC_INHERIT (-2)

/*
 * fork + execv(argv[0], argv) (argv NULL-terminated) with the child's
 * stdin, stdout and stderr on in_fd, out_fd and err_fd: descriptors of
 * ours (dup2'd, so O_CLOEXEC ones are fine), PROC_NULL or PROC_INHERIT.
 * The child starts with no signal blocked, SIGPIPE, SIGINT and SIGTERM at
 * their defaults, and dies with us. Returns its pid, or -1 (errno set); a
 * program that cannot be executed exits 127.
 */
pid_t proc_spawn(const char *const *argv, int in_fd, int out_fd, int err_fd);

/*
 * The same with more environment: env is a NULL-terminated list of
 * "NAME=VALUE" strings (NULL: none) that the child gets on top of ours,
 * each replacing a variable of ours of the same name (the fault harness
 * preloads its shims into some children this way).
 */
pid_t proc_spawn_env(const char *const *argv, const char *const *env, int in_fd, int out_fd,
                     int err_fd);

/*
 * The same with stdin on /dev/null and stdout and stderr appended to the
 * files out_path and err_path (created 0644 if need be; NULL: /dev/null).
 */
pid_t proc_spawn_files(const char *const *argv, const char *out_path, const char *err_path);
/* proc_spawn_files with more environment (proc_spawn_env). */
pid_t proc_spawn_files_env(const char *const *argv, const char *const *env, const char *out_path,
                           const char *err_path);

/* A wait status as one number: the exit status 0..255, or 128+N if
 * signal N killed the process; -1 for anything else. */
int proc_status(int wstatus);

/*
 * Wait at most timeout_ms (< 0: no limit) for child pid to exit, and reap
 * it. Returns its proc_status, or -1 on timeout (it is still running) or
 * if pid is not our child.
 */
int proc_wait(pid_t pid, int timeout_ms);

/*
 * Send sig to child pid (and SIGCONT after it, so that a stopped process
 * can act on it) and wait at most timeout_ms for it to exit; if it has not
 * by then, say so on stderr, SIGKILL it and wait at most 5 s more.
 * Returns its proc_status, or -1 if it could not be reaped.
 */
int proc_stop(pid_t pid, int sig, int timeout_ms);

/*
 * Read one line (without its '\n') from fd into buf, within timeout_ms.
 * 0, or -1 on timeout, end of file, an error or a line longer than cap - 1
 * (buf then holds what was read).
 */
int proc_read_line(int fd, char *buf, size_t cap, int timeout_ms);

/* Resident memory of process pid (VmRSS of /proc/PID/status) in kB, or -1
 * if it cannot be read (the process is gone). */
long proc_rss_kb(pid_t pid);

#endif /* BATON_TESTS_PROC_H */
