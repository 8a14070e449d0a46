/*
 * proc.c -- child processes of the tests. See proc.h.
 */
#include "tests/lib/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/lib/clock.h"

/* Our environment with `add` ("NAME=VALUE", NULL-terminated) on top: a
 * malloc'd NULL-terminated vector of pointers into environ and add (free
 * only the vector). NULL when out of memory. */
static char **env_merge(const char *const *add)
{
    size_t n = 0, k = 0, m = 0;
    char **v;

    while (environ[n]) n++;
    while (add && add[m]) m++;
    v = calloc(n + m + 1, sizeof *v);
    if (v == NULL) return NULL;
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(environ[i], '=');
        size_t len = eq ? (size_t)(eq - environ[i]) + 1 : strlen(environ[i]);
        int replaced = 0;
        for (size_t j = 0; j < m && !replaced; j++) replaced = strncmp(add[j], environ[i], len) == 0;
        if (!replaced) v[k++] = environ[i];
    }
    for (size_t j = 0; j < m; j++) v[k++] = (char *)add[j];
    return v;
}

pid_t proc_spawn_env(const char *const *argv, const char *const *env, int in_fd, int out_fd,
                     int err_fd)
{
    int fds[3] = {in_fd, out_fd, err_fd}, nullfd;
    pid_t parent = getpid(), pid;
    char **envp = env_merge(env);

    if (envp == NULL) return -1;
    nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (nullfd < 0) {
        free(envp);
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) {
        /* Only async-signal-safe calls from here to exec: the test may
         * have threads. */
        sigset_t none;
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(126); /* the parent died already */
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        for (int k = 0; k < 3; k++) {
            if (fds[k] == PROC_INHERIT) continue;
            if (dup2(fds[k] == PROC_NULL ? nullfd : fds[k], k) < 0) _exit(126);
        }
        execve(argv[0], (char *const *)argv, envp);
        _exit(127);
    }
    close(nullfd);
    free(envp);
    return pid;
}

pid_t proc_spawn(const char *const *argv, int in_fd, int out_fd, int err_fd)
{
    return proc_spawn_env(argv, NULL, in_fd, out_fd, err_fd);
}

pid_t proc_spawn_files(const char *const *argv, const char *out_path, const char *err_path)
{
    return proc_spawn_files_env(argv, NULL, out_path, err_path);
}

pid_t proc_spawn_files_env(const char *const *argv, const char *const *env, const char *out_path,
                           const char *err_path)
{
    const int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC;
    int out = out_path ? open(out_path, flags, 0644) : PROC_NULL;
    int err = err_path ? open(err_path, flags, 0644) : PROC_NULL;
    pid_t pid = -1;

    if (out != -1 || out_path == NULL) {
        if (err != -1 || err_path == NULL) pid = proc_spawn_env(argv, env, PROC_NULL, out, err);
    }
    if (out >= 0) close(out);
    if (err >= 0) close(err);
    return pid;
}

int proc_status(int wstatus)
{
    if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
    return -1;
}

int proc_wait(pid_t pid, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;

    for (;;) {
        int st;
        pid_t r = waitpid(pid, &st, timeout_ms < 0 ? 0 : WNOHANG);
        if (r == pid) return proc_status(st);
        if (r < 0 && errno != EINTR) return -1;
        if (timeout_ms >= 0) {
            if (now_ms() >= deadline) return -1;
            sleep_ms(5);
        }
    }
}

int proc_stop(pid_t pid, int sig, int timeout_ms)
{
    int code;

    kill(pid, sig);
    if (sig != SIGKILL) kill(pid, SIGCONT);
    code = proc_wait(pid, timeout_ms);
    if (code < 0 && sig != SIGKILL && kill(pid, 0) == 0) {
        fprintf(stderr, "# pid %d did not exit within %d ms of signal %d; SIGKILL\n", (int)pid,
                timeout_ms, sig);
        kill(pid, SIGKILL);
        code = proc_wait(pid, 5000);
    }
    return code;
}

int proc_read_line(int fd, char *buf, size_t cap, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    size_t len = 0;

    while (len + 1 < cap) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int64_t left = deadline - now_ms();
        ssize_t n;

        if (left <= 0) break;
        if (poll(&p, 1, (int)left) <= 0) continue;
        n = read(fd, buf + len, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (buf[len] == '\n') {
            buf[len] = '\0';
            return 0;
        }
        len++;
    }
    if (cap > 0) buf[len] = '\0';
    return -1;
}

long proc_rss_kb(pid_t pid)
{
    char path[64], line[256];
    long kb = -1;
    FILE *f;

    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    f = fopen(path, "r");
    if (f == NULL) return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kb) == 1) break;
    fclose(f);
    return kb;
}
