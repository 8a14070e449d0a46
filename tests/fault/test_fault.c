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
 *   fault_checker_*        faultcheck on small logs written here, each
 *                          breaking one rule of the lock modes (or none;
 *                          or a fence in two holds):
 *                          the checker must name that rule (or pass)
 *
 * faultrun prints its numbers as "# " lines. `make fault` runs the long
 * version (tests/fault/README.md).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/baton_defs.h"
#include "tests/lib/files.h"
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

/* ---- the checker on written logs ------------------------------------------------------ */

static char faultcheck[PATH_MAX];

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[PATH_MAX + 64];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "w");
    ASSERT(f != NULL);
    fputs(text, f);
    ASSERT(fclose(f) == 0);
}

/*
 * Run faultcheck on client logs (one string each; times in microseconds,
 * formats of client.c), an empty store log and nemesis log. Its exit
 * status; its output in out.
 */
static int check_logs(const char *const *clients, int n, char *out, size_t cap)
{
    char dir[PATH_MAX], outp[PATH_MAX + 16], name[32];
    const char *argv[] = {faultcheck, dir, NULL};
    pid_t pid;
    int rv;

    ASSERT(tmpdir_make_in(dir, sizeof dir - 16, suite_dir(), "logs") == 0);
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "client-%02d.log", i);
        write_file(dir, name, clients[i]);
    }
    write_file(dir, "store.log", "");
    write_file(dir, "nemesis.log", "");
    snprintf(outp, sizeof outp, "%s.out", dir);
    pid = proc_spawn_files(argv, outp, NULL);
    ASSERT(pid > 0);
    rv = proc_wait(pid, 60000);
    ASSERT(read_tail(outp, out, cap) >= 0);
    return rv;
}

/* The checker fails these logs, and says `rule`; nothing else broken. */
static void expect_rule(const char *const *clients, int n, const char *rule)
{
    char out[16384], want[128];

    ASSERT_EQ(check_logs(clients, n, out, sizeof out), 1);
    snprintf(want, sizeof want, "VIOLATION (%s)", rule);
    if (strstr(out, want) == NULL) FAIL("no '%s' in:\n%s", want, out);
}

/* A hold in a client log: attempt a asked at t1 for `lock` in `mode` (x or
 * s) of `limit`, granted `fence` at t1 + 1, unlock called at t2 and
 * answered `st` at t2 + 5. Appended to log (cap bytes). */
static void hold(char *log, size_t cap, int a, const char *lock, char mode, unsigned limit,
                 unsigned fence, unsigned t1, unsigned t2, int st)
{
    size_t len = strlen(log);

    snprintf(log + len, cap - len,
             "%u ACQ %d %s 1000 %c %u\n%u GRANT %d %s %u 7\n%u REL %s %u\n%u RELD %s %u %d\n",
             t1, a, lock, mode, limit, t1 + 1, a, lock, fence, t2, lock, fence, t2 + 5, lock,
             fence, st);
}

#define LOGS(n) char lg[n][1024] = {{0}}; const char *c[n]; for (int i_ = 0; i_ < n; i_++) c[i_] = lg[i_]
#define HOLD(k, ...) hold(lg[k], sizeof lg[k], __VA_ARGS__)

/* Two shared holders and a semaphore full up, all at once: fine. */
TEST(fault_checker_modes_clean)
{
    char out[16384];
    LOGS(3);

    HOLD(0, 1, "rw0", 's', 0, 10, 100000, 300000, 0);
    HOLD(0, 2, "sem0", 'x', 3, 20, 400000, 600000, 0);
    HOLD(1, 1, "rw0", 's', 0, 11, 110000, 310000, 0);
    HOLD(1, 2, "sem0", 'x', 3, 21, 410000, 610000, 0);
    HOLD(2, 1, "sem0", 'x', 3, 22, 420000, 620000, 0);
    HOLD(2, 2, "rw0", 'x', 0, 30, 700000, 800000, 0);

    if (check_logs(c, 3, out, sizeof out) != 0) FAIL("the checker failed good logs:\n%s", out);
    ASSERT(strstr(out, "lock sem0 (semaphore of 3): 3 permits granted") != NULL);
    ASSERT(strstr(out, "up to 3 holders at once") != NULL);
    ASSERT(strstr(out, "lock rw0: 3 grants (1 exclusive, 2 shared)") != NULL);
}

/* An exclusive grant while a shared holder (released OK) held. */
TEST(fault_checker_exclusive_beside_shared)
{
    LOGS(2);

    HOLD(0, 1, "rw0", 's', 0, 10, 100000, 300000, 0);
    HOLD(1, 1, "rw0", 'x', 0, 11, 150000, 200000, 0);
    expect_rule(c, 2, "exclusive holder beside another holder");
}

/* Four permits of a semaphore of 3 held at once. */
TEST(fault_checker_over_limit)
{
    LOGS(4);

    for (int k = 0; k < 4; k++) HOLD(k, 1, "sem0", 'x', 3, 10 + k, 100000 + 10000 * k, 300000, 0);
    expect_rule(c, 4, "more holders than the semaphore's limit");
}

/* A shared request queued (committed) before another was sent, granted
 * with a higher fence: it went behind a later one. */
TEST(fault_checker_fifo_shared)
{
    LOGS(2);

    snprintf(lg[0], sizeof lg[0], "100000 ACQ 1 rw0 1000 s 0\n120000 QUEUED 1 rw0 2\n"
             "400000 GRANT 1 rw0 20 7\n410000 REL rw0 20\n410005 RELD rw0 20 0\n");
    HOLD(1, 1, "rw0", 's', 0, 15, 150000, 160000, 0);
    expect_rule(c, 2, "FIFO order broken");
}

/* A request sent after another name's grant was known got a lower fence. */
TEST(fault_checker_fence_global)
{
    LOGS(2);

    HOLD(0, 1, "hot0", 'x', 0, 50, 100000, 150000, 0);
    HOLD(1, 1, "sem0", 'x', 3, 40, 200000, 250000, 0);
    expect_rule(c, 2, "fence not above a grant known before the request");
}

/* A shared holder whose lock went to a writer and who was never told. */
TEST(fault_checker_shared_silent_loss)
{
    char out[16384];
    LOGS(2);

    HOLD(0, 1, "rw0", 's', 0, 10, 100000, 400000, BATON_ETIMEDOUT);
    HOLD(1, 1, "rw0", 'x', 0, 11, 200000, 250000, 0);

    ASSERT_EQ(check_logs(c, 2, out, sizeof out), 1);
    if (strstr(out, "SILENT LOSS: rw0: client 0, fence 10") == NULL ||
        strstr(out, "a higher exclusive fence was granted") == NULL)
        FAIL("no silent loss of the shared hold in:\n%s", out);
}

/* A permit holder that two others (of a semaphore of 2) outlived, never told. */
TEST(fault_checker_permit_silent_loss)
{
    char out[16384];
    LOGS(3);

    HOLD(0, 1, "sem0", 'x', 2, 10, 100000, 400000, BATON_ETIMEDOUT);
    HOLD(1, 1, "sem0", 'x', 2, 11, 150000, 300000, 0);
    HOLD(2, 1, "sem0", 'x', 2, 12, 160000, 310000, 0);

    ASSERT_EQ(check_logs(c, 3, out, sizeof out), 1);
    if (strstr(out, "SILENT LOSS: sem0: client 0, fence 10") == NULL)
        FAIL("no silent loss of the permit in:\n%s", out);
    ASSERT(strstr(out, "VIOLATION") == NULL);
}

/* One fence in two holds is a violation; the names of one hold (a
 * multi-lock call: one attempt, one fence) share theirs. */
TEST(fault_checker_fence_reuse)
{
    char out[16384];
    LOGS(2);

    snprintf(lg[0], sizeof lg[0], "100000 ACQ 1 a 1000 x 0\n100001 ACQ 1 b 1000 x 0\n"
             "100100 GRANT 1 a 10 7\n100101 GRANT 1 b 10 7\n200000 REL a 10\n"
             "200001 REL b 10\n200100 RELD a 10 0\n200101 RELD b 10 0\n");
    if (check_logs(c, 1, out, sizeof out) != 0) FAIL("one hold's shared fence refused:\n%s", out);
    HOLD(1, 1, "hot0", 'x', 0, 10, 300000, 400000, 0);
    expect_rule(c, 2, "fence issued twice");
}

int main(int argc, char **argv)
{
    ssize_t n = readlink("/proc/self/exe", faultrun, sizeof faultrun - 16);

    if (n <= 0) return 1;
    faultrun[n] = '\0';
    strcpy(faultcheck, faultrun);
    strcpy(strrchr(faultrun, '/') + 1, "faultrun");
    strcpy(strrchr(faultcheck, '/') + 1, "faultcheck");
    runner_init(argc, argv);
    runner_set_timeout(900);
    suite_dir_init("baton-fault-check");
    RUN(fault_checker_modes_clean);
    RUN(fault_checker_exclusive_beside_shared);
    RUN(fault_checker_over_limit);
    RUN(fault_checker_fifo_shared);
    RUN(fault_checker_fence_global);
    RUN(fault_checker_shared_silent_loss);
    RUN(fault_checker_permit_silent_loss);
    RUN(fault_checker_fence_reuse);
    RUN(fault_mixed_short);
    RUN(fault_selftest_broken);
    suite_dir_done();
    return runner_done();
}
