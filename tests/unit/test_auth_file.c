/*
 * test_auth_file.c -- the --auth-file grammar and lookups (server/auth.h):
 * every field, every refusal with its line number, duplicate names and
 * tokens, token and certificate lookups, prefixes, and the digest.
 */
#include <string.h>

#include "proto/crypto.h"
#include "server/auth.h"
#include "tests/lib/runner.h"

static const char *const TOKEN = "0011223344556677889900aabbccddeeff0011223344556677889900aabbccdd";

/* The auth-file credential of TOKEN: "sha256:<hex>". */
static const char *cred(const char *token)
{
    static char out[80];
    uint8_t d[CRYPTO_SHA256_LEN];

    crypto_sha256(token, strlen(token), d);
    strcpy(out, "sha256:");
    crypto_hex(d, sizeof d, out + 7);
    return out;
}

static int parse(const char *text, struct auth *a, char *err)
{
    return auth_parse(text, strlen(text), "test", a, err, 256);
}

TEST(every_field)
{
    char text[1024], err[256], other[80];
    struct auth a;
    const struct principal *p;

    snprintf(other, sizeof other, "%s", cred("another"));
    snprintf(text, sizeof text,
             "# comment\n\n  alice  client  %s prefixes=jobs/,batch/ max-sessions=5 "
             "max-lock-delay=250   # trailing comment\r\n"
             "worker-7@x.y client cert\nops admin %s\n",
             cred(TOKEN), other);
    if (parse(text, &a, err) != 0) FAIL("%s", err);
    ASSERT_EQ(a.n, 3);
    p = auth_by_token(&a, TOKEN, strlen(TOKEN));
    ASSERT(p != NULL);
    ASSERT_STREQ(p->name, "alice");
    ASSERT_EQ(p->role, MSG_ROLE_LOCK);
    ASSERT_EQ(p->n_prefixes, 2);
    ASSERT_EQ(p->max_sessions, 5);
    ASSERT_EQ(p->max_lock_delay_ms, 250);
    ASSERT(auth_may_use(p, "jobs/1", 6));
    ASSERT(auth_may_use(p, "batch/", 6));
    ASSERT(!auth_may_use(p, "job", 3));
    ASSERT(!auth_may_use(p, "other/jobs/1", 12));
    ASSERT(auth_covers_prefix(p, "jobs/x", 6));
    ASSERT(!auth_covers_prefix(p, "", 0));
    ASSERT(auth_by_token(&a, "another", 7) == auth_by_name(&a, "ops"));
    ASSERT_EQ(auth_by_name(&a, "ops")->role, MSG_ROLE_ADMIN);
    ASSERT_EQ(auth_by_name(&a, "ops")->max_lock_delay_ms, -1);
    ASSERT(auth_by_token(&a, "wrong", 5) == NULL);
    ASSERT(auth_by_token(&a, "", 0) == NULL);
    p = auth_by_cert(&a, "worker-7@x.y");
    ASSERT(p != NULL && p->by_cert);
    ASSERT(auth_by_cert(&a, "alice") == NULL); /* a token principal is not a certificate's */
    ASSERT(auth_may_use(p, "anything", 8));   /* no prefixes: every name */
    ASSERT(a.digest != 0);
    ASSERT(auth_key("alice", 5) != 0 && auth_key("alice", 5) != auth_key("alicf", 5));
    ASSERT_EQ(auth_key("", 0), 0);
    auth_free(&a);
}

TEST(digest_follows_the_bytes)
{
    char err[256];
    struct auth a, b;

    ASSERT_EQ(parse("# one\n", &a, err), 0);
    ASSERT_EQ(parse("# two\n", &b, err), 0);
    ASSERT(a.digest != b.digest);
    ASSERT_EQ(a.n, 0); /* valid, and lets nobody in */
    auth_free(&a);
    auth_free(&b);
}

/* text is refused, with "line N" and `why` in the message. */
static void refused(const char *text, int line, const char *why)
{
    char err[256], want[32];
    struct auth a = {0};

    if (parse(text, &a, err) == 0) FAIL("accepted: %s", text);
    snprintf(want, sizeof want, "line %d", line);
    if (strstr(err, want) == NULL || strstr(err, why) == NULL)
        FAIL("'%s': message '%s', want '%s' and '%s'", text, err, want, why);
    ASSERT(a.v == NULL);
}

TEST(refusals_name_the_line)
{
    char text[1024];
    const char *c = cred(TOKEN);

    refused("alice client\n", 1, "want NAME ROLE CREDENTIAL");
    snprintf(text, sizeof text, "\n\nal ice client %s\n", c);
    refused(text, 3, "role"); /* "ice" is taken for the role */
    snprintf(text, sizeof text, "al!ce client %s\n", c);
    refused(text, 1, "a name is");
    snprintf(text, sizeof text, "alice root %s\n", c);
    refused(text, 1, "role");
    refused("alice client sha256:abcd\n", 1, "credential");
    refused("alice client sha256:0011223344556677889900AABBCCDDEEFF0011223344556677889900aabbccdd\n",
            1, "credential"); /* upper case */
    refused("alice client md5:00\n", 1, "credential");
    snprintf(text, sizeof text, "alice client %s prefixes=\n", c);
    refused(text, 1, "prefixes");
    snprintf(text, sizeof text, "alice client %s max-sessions=0\n", c);
    refused(text, 1, "max-sessions");
    snprintf(text, sizeof text, "alice client %s max-lock-delay=-5\n", c);
    refused(text, 1, "max-lock-delay");
    snprintf(text, sizeof text, "alice client %s color=blue\n", c);
    refused(text, 1, "unknown option");
    snprintf(text, sizeof text, "alice client %s verbose\n", c);
    refused(text, 1, "KEY=VALUE");
    snprintf(text, sizeof text, "alice client %s\nalice read cert\n", c);
    refused(text, 2, "twice");
    snprintf(text, sizeof text, "alice client %s\nbob read %s\n", c, c);
    refused(text, 2, "same token");
    {
        char name[80];
        memset(name, 'n', 65);
        name[65] = '\0';
        snprintf(text, sizeof text, "%s client cert\n", name);
        refused(text, 1, "a name is");
    }
}

TEST(nul_and_size_refused)
{
    char err[256];
    struct auth a;
    static char big[AUTH_MAX_FILE + 2];

    ASSERT_EQ(auth_parse("a client cert\0x", 15, "t", &a, err, sizeof err), -1);
    ASSERT(strstr(err, "NUL") != NULL);
    memset(big, '#', sizeof big - 1);
    ASSERT_EQ(auth_parse(big, sizeof big - 1, "t", &a, err, sizeof err), -1);
    ASSERT(strstr(err, "1 MiB") != NULL);
    ASSERT_EQ(auth_load("/nonexistent/auth", &a, err, sizeof err), -1);
    ASSERT(strstr(err, "/nonexistent/auth") != NULL);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(every_field);
    RUN(digest_follows_the_bytes);
    RUN(refusals_name_the_line);
    RUN(nul_and_size_refused);
    return runner_done();
}
