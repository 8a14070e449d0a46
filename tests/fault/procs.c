/*
 * procs.c -- child processes of the fault harness driver: start one with
 * its standard descriptors redirected (it dies with the driver), wait for
 * one with a time limit, read a line from a pipe with a time limit.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/fault/flog.h"
#include "tests/fault/run.h"

void proc_sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

uint64_t run_rand(struct run *r, uint64_t lo, uint64_t hi)
{
    r->rng ^= r->rng << 13;
    r->rng ^= r->rng >> 7;
    r->rng ^= r->rng << 17;
    return lo + r->rng % (hi - lo + 1);
}

/*
 * fork + exec argv[0] with stdin/stdout/stderr from the given descriptors
 * (-1: /dev/null). The child gets SIGKILL when the driver dies
 * (PR_SET_PDEATHSIG), so nothing outlives a driver that crashed or was
 * killed. Returns the pid or -1.
 */
pid_t proc_spawn(const char *const *argv, int in_fd, int out_fd, int err_fd)
{
    int nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
    pid_t parent = getpid(), pid;

    if (nullfd < 0) return -1;
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) {
        sigset_t none;
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(126);
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        dup2(in_fd >= 0 ? in_fd : nullfd, 0);
        dup2(out_fd >= 0 ? out_fd : nullfd, 1);
        dup2(err_fd >= 0 ? err_fd : nullfd, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(nullfd);
    return pid;
}

int proc_wait(pid_t pid, int timeout_ms)
{
    uint64_t deadline = flog_now_us() + (uint64_t)timeout_ms * 1000u;

    for (;;) {
        int st;
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (w < 0 && errno != EINTR) return -1;
        if (flog_now_us() >= deadline) return -1;
        proc_sleep_ms(5);
    }
}

int proc_read_line(int fd, char *buf, size_t cap, int timeout_ms)
{
    uint64_t deadline = flog_now_us() + (uint64_t)timeout_ms * 1000u;
    size_t len = 0;

    while (len < cap - 1) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        uint64_t now = flog_now_us();
        ssize_t n;

        if (now >= deadline) break;
        if (poll(&p, 1, (int)((deadline - now) / 1000u) + 1) <= 0) continue;
        n = read(fd, buf + len, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (buf[len] == '\n') {
            buf[len] = '\0';
            return 0;
        }
        len++;
    }
    buf[len] = '\0';
    return -1;
}
