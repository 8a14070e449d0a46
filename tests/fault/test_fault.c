/*
 * test_fault.c -- the fault harness's short runs inside `make test`, one
 * test line each (tests/lib/runner.h):
 *
 *   fault_mixed_short      faultrun for $FAULT_SHORT_SECONDS (default 90)
 *                          of mixed faults against the real batond: the
 *                          checker must find nothing and the harness no
 *                          crash, hang or divergence (exit 0)
 *   fault_selftest_broken  a 30 s run against $BATON_BUILD/broken/batond,
 *                          built with -DBATON_TEST_BROKEN_GRANT_ALL (it
 *                          grants every lock to everyone), without
 *                          multi-locks (faultrun --no-multi): passes only if
 *                          the checker FAILS that run -- proof that it can
 *   fault_checker_*        faultcheck on small logs written here, each
 *                          breaking one rule of the lock modes or of the
 *                          multi-locks (or none; or a fence in two holds),
 *                          or one bound of a hostile flood (check_flood.c),
 *                          or one promise of the feature level in an
 *                          upgrade (check_upgrade.c): the checker must name
 *                          that rule (or pass)
 *
 * faultrun prints its numbers as "# " lines. `make fault` runs the long
 * version (tests/fault/README.md).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baton/baton_defs.h"
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
    const char *args[] = {"--seconds", secs && *secs ? secs : "90", NULL};

    ASSERT_EQ(run_faultrun(args, NULL), 0);
}

TEST(fault_selftest_broken)
{
    const char *build = getenv("BATON_BUILD");
    char broken[PATH_MAX];
    const char *args[] = {"--seconds", "30", "--expect-violations", "--no-multi", NULL};

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
 * formats of client.c), the store log `store` (store.c's lines), the
 * nemesis log `nemesis`, if `flood` is not NULL the flood log (flood.c's
 * lines), and the files of `more` (name, text, ..., NULL; the election
 * workers' logs). Its exit status; its output in out.
 */
static int check_logs_files(const char *const *clients, int n, const char *store,
                            const char *nemesis, const char *flood, const char *const *more,
                            char *out, size_t cap)
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
    write_file(dir, "store.log", store);
    write_file(dir, "nemesis.log", nemesis);
    if (flood != NULL) write_file(dir, "flood.log", flood);
    for (; more && more[0]; more += 2) write_file(dir, more[0], more[1]);
    snprintf(outp, sizeof outp, "%s.out", dir);
    pid = proc_spawn_files(argv, outp, NULL);
    ASSERT(pid > 0);
    rv = proc_wait(pid, 60000);
    ASSERT(read_tail(outp, out, cap) >= 0);
    return rv;
}

static int check_logs_with(const char *const *clients, int n, const char *nemesis,
                           const char *flood, char *out, size_t cap)
{
    return check_logs_files(clients, n, "", nemesis, flood, NULL, out, cap);
}

static int check_logs(const char *const *clients, int n, char *out, size_t cap)
{
    return check_logs_with(clients, n, "", NULL, out, cap);
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
 * multi-lock call: one attempt, one fence, unlocked by its first name)
 * share theirs. */
TEST(fault_checker_fence_reuse)
{
    char out[16384];
    LOGS(2);

    snprintf(lg[0], sizeof lg[0], "100000 ACQ 1 a 1000 x 0\n100001 ACQ 1 b 1000 x 0\n"
             "100100 GRANT 1 a 10 7\n100101 GRANT 1 b 10 7\n200000 REL a 10\n"
             "200001 REL b 10\n200100 RELD a 10 0\n");
    if (check_logs(c, 1, out, sizeof out) != 0) FAIL("one hold's shared fence refused:\n%s", out);
    HOLD(1, 1, "hot0", 'x', 0, 10, 300000, 400000, 0);
    expect_rule(c, 2, "fence issued twice");
}

/* ---- multi-locks ------------------------------------------------------------------------ */

/* A multi-lock hold in a client log, as client.c writes it: attempt a
 * asked at t1 for the n names (first name first), granted `fence` at
 * t1 + 10, unlock called at t2 (REL per name) and answered `st` at t2 + 5
 * (RELD for the first name only). */
static void mhold(char *log, size_t cap, int a, const char *const *names, int n, unsigned fence,
                  unsigned t1, unsigned t2, int st)
{
    size_t len;

    for (int i = 0; i < n; i++) {
        len = strlen(log);
        snprintf(log + len, cap - len, "%u ACQ %d %s 1000 x 0\n", t1 + (unsigned)i, a, names[i]);
    }
    for (int i = 0; i < n; i++) {
        len = strlen(log);
        snprintf(log + len, cap - len, "%u GRANT %d %s %u 7\n", t1 + 10 + (unsigned)i, a,
                 names[i], fence);
    }
    for (int i = 0; i < n; i++) {
        len = strlen(log);
        snprintf(log + len, cap - len, "%u REL %s %u\n", t2 + (unsigned)i, names[i], fence);
    }
    len = strlen(log);
    snprintf(log + len, cap - len, "%u RELD %s %u %d\n", t2 + 5, names[0], fence, st);
}

/* Append a line to a client log. */
static void line(char *log, size_t cap, const char *text)
{
    size_t len = strlen(log);

    snprintf(log + len, cap - len, "%s\n", text);
}

#define MHOLD(k, ...) mhold(lg[k], sizeof lg[k], __VA_ARGS__)
#define LINE(k, text) line(lg[k], sizeof lg[k], text)

/*
 * Multi-locks crossing single locks and each other, as they should: one
 * released, one lost by its first name and unlocked BATON_ELOST, whose
 * second name goes to another client at once -- told, so no silent loss:
 * the notice of the first name is the notice of all.
 */
TEST(fault_checker_multi_clean)
{
    static const char *const a[] = {"hot0", "rw0"}, *const b[] = {"rw0", "hot1"};
    char out[16384];
    LOGS(3);

    HOLD(1, 1, "hot0", 'x', 0, 10, 10000, 50000, 0);
    MHOLD(0, 1, a, 2, 20, 100000, 300000, 0);
    HOLD(1, 2, "rw0", 's', 0, 30, 400000, 500000, 0);
    MHOLD(2, 1, b, 2, 40, 600000, 670000, BATON_ELOST);
    /* The LOST (first name) between its grant and its unlock. */
    {
        char *rel = strstr(lg[2], "670000 REL");
        char tail[512];
        ASSERT(rel != NULL);
        snprintf(tail, sizeof tail, "%s", rel);
        snprintf(rel, sizeof lg[2] - (size_t)(rel - lg[2]), "650000 LOST rw0 40 1\n%s", tail);
    }
    HOLD(1, 3, "hot1", 'x', 0, 50, 655000, 700000, 0);

    if (check_logs(c, 3, out, sizeof out) != 0) FAIL("the checker failed good logs:\n%s", out);
    if (strstr(out, "multi-locks: 2 calls (2 of 2 names") == NULL ||
        strstr(out, "2 granted (4 names, one fence each), 1 released OK, 1 told lost") == NULL ||
        strstr(out, "lost with notice: 2 (1 after the lock had moved on") == NULL)
        FAIL("unexpected numbers in:\n%s", out);
}

/* A multi-lock call granted on one of its names, and one granted two
 * fences. */
TEST(fault_checker_multi_partial)
{
    char out[16384];
    LOGS(1);

    LINE(0, "100000 ACQ 1 hot0 1000 x 0\n100001 ACQ 1 hot1 1000 x 0\n"
            "100100 GRANT 1 hot0 20 7\n200000 REL hot0 20\n200005 RELD hot0 20 0");
    LINE(0, "300000 ACQ 2 hot0 1000 x 0\n300001 ACQ 2 hot1 1000 x 0\n"
            "300100 GRANT 2 hot0 30 7\n300101 GRANT 2 hot1 31 7\n400000 REL hot0 30\n"
            "400001 REL hot1 31\n400005 RELD hot0 30 0");
    ASSERT_EQ(check_logs(c, 1, out, sizeof out), 1);
    if (strstr(out, "VIOLATION (multi-lock not held as one): client 0's multi-lock call 1 "
                    "(first name hot0, sent +0.000 s) was granted 1 of its 2 names") == NULL ||
        strstr(out, "VIOLATION (multi-lock not held as one): client 0's multi-lock call 2 got "
                    "fence 30 on hot0 and 31 on hot1") == NULL)
        FAIL("no partial grant found in:\n%s", out);
}

/* A multi-lock told lost twice, the second time by its second name. */
TEST(fault_checker_multi_told_twice)
{
    static const char *const a[] = {"hot0", "hot1"};
    char out[16384];
    LOGS(1);

    MHOLD(0, 1, a, 2, 20, 100000, 300000, BATON_ELOST);
    {
        char *rel = strstr(lg[0], "300000 REL");
        char tail[512];
        ASSERT(rel != NULL);
        snprintf(tail, sizeof tail, "%s", rel);
        snprintf(rel, sizeof lg[0] - (size_t)(rel - lg[0]),
                 "200000 LOST hot0 20 1\n200001 LOST hot1 20 1\n%s", tail);
    }
    ASSERT_EQ(check_logs(c, 1, out, sizeof out), 1);
    if (strstr(out, "was reported lost by hot1, not by its first name hot0") == NULL ||
        strstr(out, "(first name hot0) was reported lost 2 times") == NULL)
        FAIL("no double notice found in:\n%s", out);
}

/* After a multi-lock's unlock returned 0, the same client's next call for
 * one of its names is answered BATON_EDEADLK: the cluster kept it. */
TEST(fault_checker_multi_still_held)
{
    static const char *const a[] = {"hot0", "hot1"};
    char buf[128];
    LOGS(1);

    MHOLD(0, 1, a, 2, 20, 100000, 300000, 0);
    snprintf(buf, sizeof buf, "400000 ACQ 2 hot1 1000 x 0\n400100 AFAIL 2 hot1 %d",
             BATON_EDEADLK);
    LINE(0, buf);
    expect_rule(c, 1, "name still held after its release returned 0");
}

/* Another client granted the second name of a multi-lock while it held
 * all of them (and released OK). */
TEST(fault_checker_multi_overlap)
{
    static const char *const a[] = {"hot0", "rw0"};
    char out[16384];
    LOGS(2);

    MHOLD(0, 1, a, 2, 20, 100000, 300000, 0);
    HOLD(1, 1, "rw0", 'x', 0, 25, 150000, 200000, 0);
    ASSERT_EQ(check_logs(c, 2, out, sizeof out), 1);
    if (strstr(out, "VIOLATION (exclusive holder beside another holder): rw0: client 1 got "
                    "fence 25 (exclusive)") == NULL ||
        strstr(out, "while client 0 held fence 20 (exclusive, a multi-lock") == NULL)
        FAIL("no overlap on the multi-lock's second name in:\n%s", out);
}

/* The second name of a multi-lock went to another client, and the holder
 * was never told: a silent loss of that name. */
TEST(fault_checker_multi_silent_loss)
{
    static const char *const a[] = {"hot0", "hot1"};
    char out[16384];
    LOGS(2);

    MHOLD(0, 1, a, 2, 20, 100000, 400000, BATON_ETIMEDOUT);
    HOLD(1, 1, "hot1", 'x', 0, 30, 200000, 250000, 0);
    ASSERT_EQ(check_logs(c, 2, out, sizeof out), 1);
    if (strstr(out, "SILENT LOSS: hot1: client 0, fence 20") == NULL)
        FAIL("no silent loss of the second name in:\n%s", out);
    ASSERT(strstr(out, "VIOLATION") == NULL);
}

/* A multi-lock queued (QUEUED names its first name) before a single
 * request for its second name was sent, yet granted after it: FIFO on the
 * second name, which only the one QUEUED line shows. */
TEST(fault_checker_multi_fifo)
{
    LOGS(2);

    LINE(0, "100000 ACQ 1 hot0 1000 x 0\n100001 ACQ 1 hot1 1000 x 0\n"
            "120000 QUEUED 1 hot0 2\n400000 GRANT 1 hot0 40 7\n400001 GRANT 1 hot1 40 7\n"
            "410000 REL hot0 40\n410001 REL hot1 40\n410005 RELD hot0 40 0");
    HOLD(1, 1, "hot1", 'x', 0, 30, 150000, 160000, 0);
    expect_rule(c, 2, "FIFO order broken");
}

/* ---- the hostile floods (check_flood.c) ---- */

/* One flood of each kind as flood.c logs it, bounded, and the nemesis's
 * lines around them: one lost leadership (a finding, not a violation). */
static const char FLOODS_OK[] =
    "500000 FLOOD cache node=3 session=40 sent=12000 ran=4096 refused=7904 noleader=0 other=0 "
    "first_other=0 unanswered=0 bound=4096 close=0 ms=900\n"
    "510000 FLOOD reads node=2 sent=12000 ok=0 refused=0 noleader=12000 other=0 first_other=0 "
    "unanswered=0 ms=52\n"
    "520000 FLOOD sessions node=3 opened=32 cap=32 refusal=-4014 bystander=0\n"
    "530000 FLOOD prehello node=1 big=64 big_refused=60 big_closed=4 big_open=0 big_other=0 "
    "trickle=16 trickle_closed=16 trickle_answered=8 trickle_open=0 trickle_served=0 "
    "slowest_close_ms=5780 served=1\n";
static const char NEMESIS_OK[] =
    "400000 FAULT hostile-cache node 3 (the leader; leader 3, term 2)\n"
    "600000 NOTE hostile-cache data.mdb node 1 8388608 -> 8388608 bytes\n"
    "600001 HEAL hostile-cache node 3: leader 3 kept leadership (term 2)\n"
    "700000 HEAL hostile-reads node 2: leader 3 LOST leadership: term 2 -> 3, leader 1\n";

/* Bounded floods pass, and the checker prints their numbers. */
TEST(fault_checker_flood_clean)
{
    char out[16384];
    LOGS(1);

    HOLD(0, 1, "hot0", 'x', 0, 10, 100000, 300000, 0);
    if (check_logs_with(c, 1, NEMESIS_OK, FLOODS_OK, out, sizeof out) != 0)
        FAIL("the checker failed bounded floods:\n%s", out);
    if (strstr(out, "hostile floods: 4 (0 could not start); the leader kept its term through 1, "
                    "LOST it through 1") == NULL ||
        strstr(out, "cache, 1 floods: 12000 requests of unacknowledging sessions, 4096 ran, "
                    "7904 refused ELIMIT") == NULL)
        FAIL("no flood numbers in:\n%s", out);
}

/* Each line breaks one bound: the checker must fail it. */
TEST(fault_checker_flood_unbounded)
{
    static const char *const bad[][2] = {
        {"", "1 FLOOD cache node=1 session=9 sent=12000 ran=4097 refused=7903 noleader=0 "
             "other=0 unanswered=0 bound=4096 close=0\n"},
        {"", "1 FLOOD cache node=1 session=9 sent=12000 ran=4096 refused=7903 noleader=0 "
             "other=1 unanswered=0 bound=4096 close=0\n"},
        {"", "1 FLOOD reads node=1 sent=12000 ok=11999 refused=0 noleader=0 other=1 "
             "unanswered=0\n"},
        {"", "1 FLOOD sessions node=3 opened=33 cap=32 refusal=-4014 bystander=0\n"},
        {"", "1 FLOOD sessions node=3 opened=32 cap=32 refusal=-4014 bystander=-4014\n"},
        {"", "1 FLOOD prehello node=1 big=64 big_refused=63 big_closed=0 big_open=1 big_other=0 "
             "trickle=16 trickle_closed=16 trickle_open=0 trickle_served=0 served=1\n"},
        {"", "1 FLOOD prehello node=1 big=64 big_refused=64 big_closed=0 big_open=0 big_other=0 "
             "trickle=16 trickle_closed=15 trickle_open=1 trickle_served=0 served=1\n"},
        {"600000 NOTE hostile-cache data.mdb node 2 8388608 -> 16777216 bytes\n", ""},
    };
    char out[16384];
    LOGS(1);

    HOLD(0, 1, "hot0", 'x', 0, 10, 100000, 300000, 0);
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        if (check_logs_with(c, 1, bad[k][0], bad[k][1], out, sizeof out) != 1 ||
            strstr(out, "VIOLATION (hostile flood not bounded)") == NULL)
            FAIL("case %zu: the checker did not fail it:\n%s", k, out);
    }
}

/* ---- the upgrade fault (check_upgrade.c) ---- */

/* The nemesis's lines of an upgrade as nemesis_upgrade.c writes them: the
 * level held at 1 beside a level-1 voter, raised once it was upgraded, a
 * level-1 binary refusing a raised store, a level-1 node refused. */
static const char UPGRADE_OK[] =
    "400000 FAULT upgrade node 3 runs feature level 1: the level holds, then rises\n"
    "400001 NOTE upgrade level node=1 binary=2 cluster=1 lowest-voter=1\n"
    "400002 NOTE upgrade level node=3 binary=1 cluster=1 lowest-voter=1\n"
    "500000 NOTE upgrade raise node=3 want=2 raised=1 ms=539\n"
    "500001 NOTE upgrade level node=3 binary=2 cluster=2 lowest-voter=2\n"
    "500002 NOTE upgrade downgrade node=2 binary=1 store=2 exit=1 said=1\n"
    "500003 HEAL upgrade node 3 runs the full binary\n"
    "600000 NOTE upgrade refused node=2 binary=1 cluster=2 applied=0 said=1 add=70\n";

TEST(fault_checker_upgrade_clean)
{
    char out[16384];
    LOGS(1);

    HOLD(0, 1, "hot0", 'x', 0, 10, 100000, 300000, 0);
    if (check_logs_with(c, 1, UPGRADE_OK, NULL, out, sizeof out) != 0)
        FAIL("the checker failed a clean upgrade:\n%s", out);
    if (strstr(out, "upgrade: 3 looks at a node's levels (2 with the level held at 1), 1 raises "
                    "(the slowest 539 ms), 1 level-1 binaries started on a raised store, 1 "
                    "joined a raised cluster; 0 broke a rule") == NULL)
        FAIL("no upgrade numbers in:\n%s", out);
}

/* Each line breaks one promise of the feature level: the checker must
 * fail it. */
TEST(fault_checker_upgrade_broken)
{
    static const char *const bad[] = {
        /* raised while a voter of level 1 is a member */
        "1 NOTE upgrade level node=1 binary=2 cluster=2 lowest-voter=1\n",
        /* a node of level 1 applies a level-2 cluster's entries */
        "1 NOTE upgrade level node=3 binary=1 cluster=2 lowest-voter=2\n",
        "1 NOTE upgrade refused node=2 binary=1 cluster=2 applied=17 said=1 add=70\n",
        /* a level-1 node joined a raised cluster and nobody refused it */
        "1 NOTE upgrade refused node=2 binary=1 cluster=2 applied=0 said=0 add=70\n",
        /* the level-1 binary started on a raised store: ran, still running */
        "1 NOTE upgrade downgrade node=2 binary=1 store=2 exit=0 said=1\n",
        "1 NOTE upgrade downgrade node=2 binary=1 store=2 exit=-1 said=1\n",
        /* refused it without saying why */
        "1 NOTE upgrade downgrade node=2 binary=1 store=2 exit=1 said=0\n",
        /* every voter upgraded, the level never raised */
        "1 NOTE upgrade raise node=3 want=2 raised=0 ms=-1\n",
    };
    char out[16384];
    LOGS(1);

    HOLD(0, 1, "hot0", 'x', 0, 10, 100000, 300000, 0);
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        if (check_logs_with(c, 1, bad[k], NULL, out, sizeof out) != 1 ||
            strstr(out, "VIOLATION (feature level broken)") == NULL)
            FAIL("case %zu: the checker did not fail it:\n%s", k, out);
    }
}

/* ---- elections (check_elect.c) ------------------------------------------------------ */

/* e0 leads elect0 with fence 10 from +0.1 s, proclaims e0:2 (returned at
 * +0.16 s) and resigns at +0.3 s (0); e1, queued behind it, leads with 12
 * from +0.31 s to +0.5 s; e2 leads elect1 with 11 and is killed (its
 * incarnation ends without END while it leads) and restarted. */
static const char E0_OK[] =
    "100 START campaign e0 1\n1000 SESS 7\n90000 CAMPAIGN 1 elect0 1000 e0:1\n"
    "100000 LEAD 1 elect0 10 7 e0:1\n100100 WRITE elect0 10 1\n100200 WOK elect0 10 1\n"
    "150000 PROCLAIM elect0 10 e0:2\n160000 PROCLAIMED elect0 10 e0:2 0\n"
    "300000 RESIGN elect0 10\n305000 RESIGNED elect0 10 0\n900000 CLOSED 0\n900001 END\n";
static const char E1_OK[] =
    "100 START campaign e1 2\n1000 SESS 8\n95000 CAMPAIGN 1 elect0 1000 e1:1\n"
    "96000 QUEUED 1 elect0 2\n310000 LEAD 1 elect0 12 8 e1:1\n500000 RESIGN elect0 12\n"
    "505000 RESIGNED elect0 12 0\n900001 END\n";
static const char E2_KILLED[] =
    "100 START campaign e2 3\n1000 SESS 9\n200000 CAMPAIGN 1 elect1 1000 e2:1\n"
    "210000 LEAD 1 elect1 11 9 e2:1\n210100 WRITE elect1 11 1\n"
    "400000 START campaign e2 4\n401000 SESS 13\n900001 END\n";
static const char STORE_OK[] = "100200 A W elect0 10 e0 1\n";

/* An observer's log: a watch of elect0 from +0.05 s with `events`, then
 * the lines of `reads`; one string in out. */
static void observer_log(char *out, size_t cap, const char *events, const char *reads)
{
    snprintf(out, cap,
             "100 START observe o0 5\n1000 SESS 6\n50000 OBSERVE 1 elect0\n"
             "51000 EV 1 elect0 STATE 5 0 0 0 -\n51001 EV 1 elect0 SYNCED 5 0 0 0 -\n"
             "101000 EV 1 elect0 CHANGE 20 0 7 10 e0:1\n161000 EV 1 elect0 CHANGE 22 0 7 10 e0:2\n"
             "%s%s700000 OBSEND 1 elect0 %d\n900001 END\n",
             events, reads, BATON_ECANCELED);
}

/* faultcheck on one empty client log, the store log and the election
 * workers' logs e0, e1, e2 and o0. Its exit status; its output in out. */
static int check_elect(const char *e0, const char *e1, const char *e2, const char *o0,
                       char *out, size_t cap)
{
    const char *const client[] = {""};
    const char *const more[] = {"elect-e0.log", e0, "elect-e1.log", e1, "elect-e2.log", e2,
                                "elect-o0.log", o0, NULL};

    return check_logs_files(client, 1, STORE_OK, "", NULL, more, out, cap);
}

/* The checker fails these election logs and says `what` ("VIOLATION
 * (rule)" or "SILENT LOSS (leader)"). */
static void expect_elect(const char *e0, const char *e1, const char *e2, const char *o0,
                         const char *what)
{
    char out[16384];

    ASSERT_EQ(check_elect(e0, e1, e2, o0, out, sizeof out), 1);
    if (strstr(out, what) == NULL) FAIL("no '%s' in:\n%s", what, out);
}

/* Leaders one after another, a leader killed, an observer that saw each,
 * reads of the latest value and of nobody: fine. */
TEST(fault_checker_elect_clean)
{
    char o0[2048], reads[256], out[16384];

    snprintf(reads, sizeof reads,
             "170000 READ 1 elect0\n175000 READR 1 elect0 0 7 10 e0:2 25\n"
             "600000 READ 2 elect0\n605000 READR 2 elect0 %d 0 0 - 0\n", BATON_ENOTFOUND);
    observer_log(o0, sizeof o0, "311000 EV 1 elect0 CHANGE 30 0 8 12 e1:1\n", reads);
    if (check_elect(E0_OK, E1_OK, E2_KILLED, o0, out, sizeof out) != 0)
        FAIL("the checker failed good election logs:\n%s", out);
    if (strstr(out, "elections: 3 campaigners, 3 campaigns (0 refused BATON_EVERSION), 3 "
                    "leaderships: 2 resigned OK, 0 told lost (0 after a later leader led), 1 "
                    "killed while leading") == NULL ||
        strstr(out, "2 leader reads: 1 found a leader, 1 nobody") == NULL ||
        strstr(out, "leaders lost without notice: 0") == NULL)
        FAIL("no election numbers in:\n%s", out);
}

/* Rule 12: e1 leads while e0, which resigned with 0 later, still leads;
 * told lost, e0 may be late by the lease slack (0.05 s), not by 0.15 s. */
TEST(fault_checker_elect_two_leaders)
{
    char o0[2048], e0[1024], e1[1024], out[16384];
    const char *lost_e0 =
        "100 START campaign e0 1\n1000 SESS 7\n90000 CAMPAIGN 1 elect0 1000 e0:1\n"
        "100000 LEAD 1 elect0 10 7 e0:1\n150000 PROCLAIM elect0 10 e0:2\n"
        "160000 PROCLAIMED elect0 10 e0:2 0\n300000 LOST elect0 10 %d\n300001 RESIGN elect0 10\n"
        "300002 RESIGNED elect0 10 %d\n900001 END\n";
    const char *e1_at = "100 START campaign e1 2\n95000 CAMPAIGN 1 elect0 1000 e1:1\n"
                        "%u LEAD 1 elect0 12 8 e1:1\n500000 RESIGN elect0 12\n"
                        "505000 RESIGNED elect0 12 0\n900001 END\n";

    observer_log(o0, sizeof o0, "", "");
    snprintf(e1, sizeof e1, e1_at, 200000u);
    expect_elect(E0_OK, e1, E2_KILLED, o0, "VIOLATION (two leaders of an election at once)");
    snprintf(e0, sizeof e0, lost_e0, BATON_ESESSION, BATON_ELOST);
    snprintf(e1, sizeof e1, e1_at, 250000u);
    if (check_elect(e0, e1, E2_KILLED, o0, out, sizeof out) != 0)
        FAIL("a notice 0.05 s late failed the checker:\n%s", out);
    snprintf(e1, sizeof e1, e1_at, 150000u);
    expect_elect(e0, e1, E2_KILLED, o0, "VIOLATION (two leaders of an election at once)");
}

/* Rule 12: a leader after e0 ended, with a lower fence. */
TEST(fault_checker_elect_fence_order)
{
    char o0[2048];
    const char *e1 = "100 START campaign e1 2\n95000 CAMPAIGN 1 elect0 1000 e1:1\n"
                     "310000 LEAD 1 elect0 9 8 e1:1\n500000 RESIGN elect0 9\n"
                     "505000 RESIGNED elect0 9 0\n900001 END\n";

    observer_log(o0, sizeof o0, "", "");
    expect_elect(E0_OK, e1, E2_KILLED, o0,
                 "VIOLATION (leader's fence not above an ended leader's)");
}

/* Rule 13: e2 led elect0 with fence 11 between e0 (10) and e1 (12); the
 * observer's CHANGE goes from 10 to 12 untold (with a GAP: fine); a
 * revision that goes back; a proclaimed value missed. */
TEST(fault_checker_elect_observer)
{
    char o0[2048], out[16384];
    const char *e2 = "100 START campaign e2 3\n300500 CAMPAIGN 1 elect0 1000 e2:1\n"
                     "306000 LEAD 1 elect0 11 9 e2:1\n307000 RESIGN elect0 11\n"
                     "308000 RESIGNED elect0 11 0\n900001 END\n";

    observer_log(o0, sizeof o0, "311000 EV 1 elect0 CHANGE 30 0 8 12 e1:1\n", "");
    expect_elect(E0_OK, E1_OK, e2, o0, "VIOLATION (observer not told of a change it missed)");
    observer_log(o0, sizeof o0, "311000 EV 1 elect0 GAP 30 0 8 12 e1:1\n", "");
    if (check_elect(E0_OK, E1_OK, e2, o0, out, sizeof out) != 0 ||
        strstr(out, "1 changes missed and told") == NULL)
        FAIL("a GAP did not tell the observer:\n%s", out);
    observer_log(o0, sizeof o0, "311000 EV 1 elect0 CHANGE 21 0 8 12 e1:1\n", "");
    expect_elect(E0_OK, E1_OK, E2_KILLED, o0,
                 "VIOLATION (observer not told of a change it missed)");    /* e0's proclaim of e0:2 returned 0: a watch that goes from e0:1 to
     * e1:1 missed it. */
    snprintf(o0, sizeof o0, "100 START observe o0 5\n50000 OBSERVE 1 elect0\n"
             "101000 EV 1 elect0 CHANGE 20 0 7 10 e0:1\n311000 EV 1 elect0 CHANGE 30 0 8 12 e1:1\n"
             "900001 END\n");
    expect_elect(E0_OK, E1_OK, E2_KILLED, o0,
                 "VIOLATION (observer not told of a change it missed)");
}

/* Rule 14: a read after PROCLAIMED e0:2 shows e0:1; one shows a value e0
 * never set; one finds nobody while e0 certainly led. */
TEST(fault_checker_elect_stale_read)
{
    char o0[2048], reads[256];
    const char *want = "VIOLATION (leader read or event shows a stale or unknown value)";

    observer_log(o0, sizeof o0, "",
                 "170000 READ 1 elect0\n175000 READR 1 elect0 0 7 10 e0:1 25\n");
    expect_elect(E0_OK, E1_OK, E2_KILLED, o0, want);
    observer_log(o0, sizeof o0, "",
                 "170000 READ 1 elect0\n175000 READR 1 elect0 0 7 10 e0:7 25\n");
    expect_elect(E0_OK, E1_OK, E2_KILLED, o0, want);
    snprintf(reads, sizeof reads, "170000 READ 1 elect0\n175000 READR 1 elect0 %d 0 0 - 0\n",
             BATON_ENOTFOUND);
    observer_log(o0, sizeof o0, "", reads);
    expect_elect(E0_OK, E1_OK, E2_KILLED, o0, want);
}

/* Rule 15: e0, never told, leads on while e1 leads (its resign times
 * out), is answered BATON_ENOTHELD, or never resigns at all. */
TEST(fault_checker_elect_silent_loss)
{
    char o0[2048], e0[1024];
    const char *e0_end = "100 START campaign e0 1\n1000 SESS 7\n90000 CAMPAIGN 1 elect0 1000 "
                         "e0:1\n100000 LEAD 1 elect0 10 7 e0:1\n150000 PROCLAIM elect0 10 e0:2\n"
                         "160000 PROCLAIMED elect0 10 e0:2 0\n%s900001 END\n";
    char resign[128];

    observer_log(o0, sizeof o0, "", "");
    snprintf(resign, sizeof resign, "400000 RESIGN elect0 10\n405000 RESIGNED elect0 10 %d\n",
             BATON_ETIMEDOUT);
    snprintf(e0, sizeof e0, e0_end, resign);
    expect_elect(e0, E1_OK, E2_KILLED, o0, "SILENT LOSS (leader)");
    snprintf(resign, sizeof resign, "290000 RESIGN elect0 10\n295000 RESIGNED elect0 10 %d\n",
             BATON_ENOTHELD);
    snprintf(e0, sizeof e0, e0_end, resign);
    expect_elect(e0, E1_OK, E2_KILLED, o0, "SILENT LOSS (leader)");
    snprintf(e0, sizeof e0, e0_end, "");
    expect_elect(e0, E1_OK, E2_KILLED, o0, "SILENT LOSS (leader)");
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
    RUN(fault_checker_multi_clean);
    RUN(fault_checker_multi_partial);
    RUN(fault_checker_multi_told_twice);
    RUN(fault_checker_multi_still_held);
    RUN(fault_checker_multi_overlap);
    RUN(fault_checker_multi_silent_loss);
    RUN(fault_checker_multi_fifo);
    RUN(fault_checker_flood_clean);
    RUN(fault_checker_flood_unbounded);
    RUN(fault_checker_upgrade_clean);
    RUN(fault_checker_upgrade_broken);
    RUN(fault_checker_elect_clean);
    RUN(fault_checker_elect_two_leaders);
    RUN(fault_checker_elect_fence_order);
    RUN(fault_checker_elect_observer);
    RUN(fault_checker_elect_stale_read);
    RUN(fault_checker_elect_silent_loss);
    RUN(fault_mixed_short);
    RUN(fault_selftest_broken);
    suite_dir_done();
    return runner_done();
}
