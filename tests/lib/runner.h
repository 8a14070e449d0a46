/*
 * runner.h -- a tiny test runner (after libuv's test/runner.c and task.h).
 *
 * Each test runs in a forked child with an alarm, so a crash, a failed
 * assertion or a hang fails that one test and the others still run. Output
 * is one TAP-style line per test and a last line "N passed, N failed".
 *
 *     TEST(fifo_order) { ASSERT_EQ(1, 1); }
 *     int main(int argc, char **argv) {
 *         runner_init(argc, argv);      // argv[1], if given, selects tests by substring
 *         RUN(fifo_order);
 *         return runner_done();         // 0 if all passed
 *     }
 *
 * RUNNER_TIMEOUT (seconds, environment) overrides the per-test timeout set
 * with runner_set_timeout (default 60 s).
 */
#ifndef BATON_TESTS_RUNNER_H
#define BATON_TESTS_RUNNER_H

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TEST(name) static void test_##name(void)
#define RUN(name) runner_run(#name, test_##name)

#define FAIL(...)                                                              \
    do {                                                                       \
        fprintf(stderr, "# %s:%d: ", __FILE__, __LINE__);                      \
        fprintf(stderr, __VA_ARGS__);                                          \
        fprintf(stderr, "\n");                                                 \
        fflush(stderr);                                                        \
        _exit(1);                                                              \
    } while (0)

#define ASSERT(c)                                                              \
    do {                                                                       \
        if (!(c)) FAIL("assertion failed: %s", #c);                            \
    } while (0)

#define ASSERT_OP_(a, op, b, fmt, type)                                        \
    do {                                                                       \
        type a_ = (type)(a), b_ = (type)(b);                                   \
        if (!(a_ op b_))                                                       \
            FAIL("%s %s %s (" fmt " vs " fmt ")", #a, #op, #b, a_, b_);        \
    } while (0)

#define ASSERT_EQ(a, b) ASSERT_OP_(a, ==, b, "%" PRId64, int64_t)
#define ASSERT_NE(a, b) ASSERT_OP_(a, !=, b, "%" PRId64, int64_t)
#define ASSERT_LT(a, b) ASSERT_OP_(a, <, b, "%" PRId64, int64_t)
#define ASSERT_LE(a, b) ASSERT_OP_(a, <=, b, "%" PRId64, int64_t)
#define ASSERT_GT(a, b) ASSERT_OP_(a, >, b, "%" PRId64, int64_t)
#define ASSERT_GE(a, b) ASSERT_OP_(a, >=, b, "%" PRId64, int64_t)
#define ASSERT_UEQ(a, b) ASSERT_OP_(a, ==, b, "%" PRIu64, uint64_t)
#define ASSERT_ULT(a, b) ASSERT_OP_(a, <, b, "%" PRIu64, uint64_t)
#define ASSERT_STREQ(a, b)                                                     \
    do {                                                                       \
        const char *a_ = (a), *b_ = (b);                                       \
        if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0)                   \
            FAIL("%s == %s (\"%s\" vs \"%s\")", #a, #b, a_ ? a_ : "(null)",    \
                 b_ ? b_ : "(null)");                                          \
    } while (0)

static struct {
    int passed, failed, n;
    const char *filter;
    unsigned timeout_s;
} runner_;

static inline void runner_init(int argc, char **argv)
{
    const char *t = getenv("RUNNER_TIMEOUT");
    runner_.filter = argc > 1 ? argv[1] : NULL;
    runner_.timeout_s = t ? (unsigned)atoi(t) : 60;
    setvbuf(stdout, NULL, _IOLBF, 0);
}

static inline void runner_set_timeout(unsigned s)
{
    if (getenv("RUNNER_TIMEOUT") == NULL) runner_.timeout_s = s;
}

static inline void runner_run(const char *name, void (*fn)(void))
{
    struct timespec t0, t1;
    int status = 0;
    pid_t pid;

    if (runner_.filter && strstr(name, runner_.filter) == NULL) return;
    runner_.n++;
    fflush(stdout);
    fflush(stderr);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid = fork();
    if (pid == 0) {
        alarm(runner_.timeout_s);
        fn();
        fflush(stdout);
        fflush(stderr);
        exit(0); /* exit, not _exit: run atexit handlers (ASan leak check) */
    }
    while (waitpid(pid, &status, 0) < 0) {
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        runner_.passed++;
        printf("ok %d - %s (%.0f ms)\n", runner_.n, name, ms);
    } else {
        runner_.failed++;
        if (WIFSIGNALED(status))
            printf("not ok %d - %s (signal %d%s)\n", runner_.n, name, WTERMSIG(status),
                   WTERMSIG(status) == SIGALRM ? ": timeout" : "");
        else
            printf("not ok %d - %s (exit %d)\n", runner_.n, name, WEXITSTATUS(status));
    }
}

static inline int runner_done(void)
{
    printf("%d passed, %d failed\n", runner_.passed, runner_.failed);
    return runner_.failed ? 1 : 0;
}

#endif /* BATON_TESTS_RUNNER_H */
