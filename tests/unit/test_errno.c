/*
 * test_errno.c -- baton's error codes (include/baton/baton_defs.h, proto/errno.c).
 *
 * The codes travel on the wire, so they must stay in the reserved range and
 * be distinct, and every one must have its own name and message.
 */
#include <limits.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "tests/lib/runner.h"

/* Every code, name and message, straight from the map. */
static const struct {
    int code;
    const char *name;
    const char *msg;
} codes[] = {
#define XX(name, val, msg) {BATON_##name, "BATON_" #name, msg},
    BATON_ERRNO_MAP(XX)
#undef XX
};
#define N_CODES (sizeof codes / sizeof codes[0])

TEST(codes_in_reserved_range)
{
    ASSERT_GT(N_CODES, 0);
    for (size_t i = 0; i < N_CODES; i++) {
        ASSERT_GE(codes[i].code, -4099);
        ASSERT_LE(codes[i].code, -4001);
        for (size_t j = 0; j < i; j++) ASSERT_NE(codes[i].code, codes[j].code);
    }
}

TEST(names_match_and_are_distinct)
{
    for (size_t i = 0; i < N_CODES; i++) {
        const char *n = baton_err_name(codes[i].code);
        ASSERT_STREQ(n, codes[i].name);
        ASSERT(strncmp(n, "BATON_E", 7) == 0);
        ASSERT(strcmp(n, "BATON_EUNKNOWN") != 0);
        for (size_t j = 0; j < i; j++) ASSERT(strcmp(n, baton_err_name(codes[j].code)) != 0);
    }
    ASSERT_STREQ(baton_err_name(BATON_ENOTLEADER), "BATON_ENOTLEADER");
    ASSERT_STREQ(baton_err_name(BATON_EMALFORMED), "BATON_EMALFORMED");
}

TEST(messages_match_and_are_distinct)
{
    for (size_t i = 0; i < N_CODES; i++) {
        const char *m = baton_strerror(codes[i].code);
        ASSERT_STREQ(m, codes[i].msg);
        ASSERT(m[0] != '\0');
        ASSERT(strcmp(m, "unknown error") != 0);
        ASSERT(strcmp(m, baton_strerror(0)) != 0);
        for (size_t j = 0; j < i; j++) ASSERT(strcmp(m, baton_strerror(codes[j].code)) != 0);
    }
}

TEST(success)
{
    ASSERT_STREQ(baton_strerror(0), "success");
    ASSERT_STREQ(baton_err_name(0), "OK");
}

/* Codes outside the map (including system errno values, positive numbers
 * and unused slots of the reserved range) get a fixed, non-NULL answer. */
TEST(unknown_codes)
{
    static const int unknown[] = {1, -1, -22, -4000, -4099, -4100, INT_MIN, INT_MAX};

    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        int known = 0;
        for (size_t j = 0; j < N_CODES; j++) known |= codes[j].code == unknown[i];
        if (known) continue; /* in case the map ever grows to -4099 */
        ASSERT_STREQ(baton_strerror(unknown[i]), "unknown error");
        ASSERT_STREQ(baton_err_name(unknown[i]), "BATON_EUNKNOWN");
    }
    /* Every unused slot of the reserved range. */
    for (int c = -4099; c <= -4001; c++) {
        int known = 0;
        for (size_t j = 0; j < N_CODES; j++) known |= codes[j].code == c;
        ASSERT(baton_strerror(c) != NULL && baton_err_name(c) != NULL);
        ASSERT_EQ(strcmp(baton_err_name(c), "BATON_EUNKNOWN") != 0, known);
    }
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(codes_in_reserved_range);
    RUN(names_match_and_are_distinct);
    RUN(messages_match_and_are_distinct);
    RUN(success);
    RUN(unknown_codes);
    return runner_done();
}
