/*
 * test_lockreq.c -- the lock request rule and the lock modes
 * (proto/lockreq.h): each refusal, in its order, and what passes.
 */
#include <string.h>

#include "proto/lockreq.h"
#include "tests/lib/runner.h"

/* A request every check passes: wait forever, no lock-delay, exclusive. */
static struct lockreq good(void)
{
    return (struct lockreq){.wait_ms = BATON_WAIT_FOREVER, .lock_delay_ms = BATON_LOCK_DELAY_NONE};
}

/* Assert that r is refused with a reason containing `part`. */
static void refused(struct lockreq r, const char *part)
{
    const char *why = NULL;

    ASSERT_EQ(lockreq_check(&r, &why), BATON_EINVAL);
    ASSERT(why != NULL);
    if (strstr(why, part) == NULL) FAIL("refused because '%s', not '%s'", why, part);
}

static void allowed(struct lockreq r)
{
    const char *why = NULL;

    if (lockreq_check(&r, &why) != 0) FAIL("refused: %s", why);
}

TEST(each_field)
{
    struct lockreq r = good();

    allowed(r);
    r.wait_ms = 0, allowed(r);
    r.wait_ms = 1, allowed(r);
    r.wait_ms = -2, refused(r, "wait_ms");
    r = good(), r.lock_delay_ms = 0, allowed(r);
    r.lock_delay_ms = -2, refused(r, "lock_delay_ms");
    r = good(), r.mode = BATON_MODE_SHARED, allowed(r);
    r.mode = LOCKREQ_N_MODES, refused(r, "mode");
    r = good(), r.limit = BATON_MAX_LIMIT, allowed(r);
    r.limit = BATON_MAX_LIMIT + 1, refused(r, "limit");
    r = good(), r.reentrant = 1, allowed(r);
    r.reentrant = 2, refused(r, "reentrant");
}

TEST(the_first_failure_is_the_reason)
{
    struct lockreq r = {.wait_ms = -5, .lock_delay_ms = -5, .mode = 9, .limit = 99999,
                        .reentrant = 9, .many = true, .n_names = 0};

    refused(r, "wait_ms");
    r.wait_ms = 0, refused(r, "lock_delay_ms");
    r.lock_delay_ms = 0, refused(r, "mode");
    r.mode = BATON_MODE_SHARED, refused(r, "limit");
    r.limit = 5, refused(r, "reentrant must be 0 or 1");
    r.reentrant = 1, refused(r, "semaphore");
    r.mode = BATON_MODE_EXCLUSIVE, refused(r, "2 to 64 names");
    r.n_names = 2, refused(r, "cannot be reentrant");
    r.reentrant = 0, allowed(r);
}

TEST(semaphores_and_multi_locks)
{
    struct lockreq r = good();

    ASSERT(lockreq_mode_fits(BATON_MODE_SHARED, 1));
    ASSERT(lockreq_mode_fits(BATON_MODE_EXCLUSIVE, 5));
    ASSERT(!lockreq_mode_fits(BATON_MODE_SHARED, 2));
    r.limit = 2, r.mode = BATON_MODE_SHARED, refused(r, "semaphore");
    r = good(), r.many = true;
    r.n_names = 1, allowed(r);
    r.n_names = BATON_MAX_MANY, allowed(r);
    r.n_names = BATON_MAX_MANY + 1, refused(r, "names");
    r.n_names = 0, refused(r, "names");
    r.n_names = 2, r.reentrant = 1, refused(r, "reentrant");
}

TEST(names)
{
    const char *n3[] = {"a", "b", "ab"}, *rep[] = {"a", "b", "a"}, *bad[] = {"a", ""};
    const char *why = NULL;
    size_t l3[] = {1, 1, 2}, lrep[] = {1, 1, 1}, lbad[] = {1, 0};
    const char *same_prefix[] = {"ab", "a"};
    size_t lsp[] = {1, 1}; /* "a" and "a": the bytes, not the strings, count */

    ASSERT_EQ(lockreq_names_check(3, n3, l3, &why), 0);
    ASSERT_EQ(lockreq_names_check(3, rep, lrep, &why), BATON_EINVAL);
    ASSERT(strstr(why, "repeat") != NULL);
    ASSERT_EQ(lockreq_names_check(2, bad, lbad, &why), BATON_EINVAL);
    ASSERT(strstr(why, "lock name") != NULL);
    ASSERT_EQ(lockreq_names_check(2, same_prefix, lsp, &why), BATON_EINVAL);
}

TEST(mode_names)
{
    ASSERT_STREQ(lockreq_mode_name(BATON_MODE_EXCLUSIVE), "exclusive");
    ASSERT_STREQ(lockreq_mode_name(BATON_MODE_SHARED), "shared");
    ASSERT_STREQ(lockreq_mode_short_name(BATON_MODE_EXCLUSIVE), "excl");
    ASSERT_STREQ(lockreq_mode_short_name(BATON_MODE_SHARED), "shared");
    ASSERT_STREQ(lockreq_mode_name(LOCKREQ_N_MODES), "?");
    ASSERT_STREQ(lockreq_mode_short_name(255), "?");
    ASSERT_EQ(LOCKREQ_N_MODES, BATON_MODE_SHARED + 1);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(each_field);
    RUN(the_first_failure_is_the_reason);
    RUN(semaphores_and_multi_locks);
    RUN(names);
    RUN(mode_names);
    return runner_done();
}
