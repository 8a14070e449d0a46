/*
 * test_fault.c -- the fault harness's short runs inside `make test`, one
 * test line each (tests/lib/runner.h):
 *
 *   fault_mixed_short      faultrun for $FAULT_SHORT_SECONDS (default 120)
 *                          of mixed faults against the real batond: the
 *                          checker must find nothing and the harness no
 *                          crash, hang or divergence (exit 0)
 *   fault_selftest_broken  a 30 s run against $BATON_BUILD/broken/batond,
 *                          built with -DBATON_TEST_BROKEN_GRANT_ALL (it
 *                          grants every lock to everyone): passes only if
 *                          the checker FAILS that run -- proof that it can
 *
 * faultrun prints its numbers as "# " lines. `make fault` runs the long
 * version (tests/fault/README.md).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/proc.h"
#include "tests/lib/runner.h"

static char faultrun[PATH_MAX];

/* Run faultrun with args; its exit status (or 128+signal). */
static int run_faultrun(const char *const *args, const char *build)
{
    const char *argv[16];
    int n = 0;
    pid_t pid;

    argv[n++] = faultrun;
    while (*args && n < 15) argv[n++] = *args++;
    argv[n] = NULL;
    /* The test runs in a process of its own (tests/lib/runner.h). */
    if (build) setenv("BATON_BUILD", build, 1);
    /* Its numbers and notes go to our stdout, in order with ours; it dies
     * with the test if the test times out. */
    pid = proc_spawn(argv, PROC_INHERIT, PROC_INHERIT, 1);
    ASSERT(pid > 0);
    return proc_wait(pid, -1);
}

TEST(fault_mixed_short)
{
    const char *secs = getenv("FAULT_SHORT_SECONDS");
    const char *args[] = {"--seconds", secs && *secs ? secs : "120", NULL};

    ASSERT_EQ(run_faultrun(args, NULL), 0);
}

TEST(fault_selftest_broken)
{
    const char *build = getenv("BATON_BUILD");
    char broken[PATH_MAX];
    const char *args[] = {"--seconds", "30", "--expect-violations", NULL};

    snprintf(broken, sizeof broken, "%s/broken", build && *build ? build : "build/default");
    ASSERT_EQ(access(broken, X_OK), 0);
    ASSERT_EQ(run_faultrun(args, broken), 0);
}

int main(int argc, char **argv)
{
    ssize_t n = readlink("/proc/self/exe", faultrun, sizeof faultrun - 16);

    if (n <= 0) return 1;
    faultrun[n] = '\0';
    strcpy(strrchr(faultrun, '/') + 1, "faultrun");
    runner_init(argc, argv);
    runner_set_timeout(900);
    RUN(fault_mixed_short);
    RUN(fault_selftest_broken);
    return runner_done();
}
