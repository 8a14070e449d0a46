/*
 * test_ctl.c -- batonctl's pure parts: the option iterator, value parsers,
 * endpoint lists, the security options, JSON string escaping, the JSON
 * writer, tables, and auth-file lines.
 *
 * The unit-test link rule does not include batonctl's objects, and these
 * files depend on nothing but libc and proto/ (auth_line.c's SHA-256), so
 * they are compiled into this test directly.
 */
#include "client/ctl/args.c"
#include "client/ctl/auth_line.c"
#include "client/ctl/output.c"

#include "tests/lib/runner.h"

/* Captures what a printer writes to a FILE. */
struct capture {
    char *buf;
    size_t len;
    FILE *f;
};

static void cap_open(struct capture *c)
{
    c->buf = NULL;
    c->len = 0;
    c->f = open_memstream(&c->buf, &c->len);
    ASSERT(c->f != NULL);
}

/* Close the stream and return the text (owned by c). */
static const char *cap_text(struct capture *c)
{
    ASSERT_EQ(fclose(c->f), 0);
    c->f = NULL;
    return c->buf;
}

static char *json_of(const char *s, size_t n)
{
    struct capture c;
    cap_open(&c);
    json_write_string(c.f, s, n);
    cap_text(&c);
    return c.buf;
}

#define ASSERT_JSON(in, expect)                                                \
    do {                                                                       \
        char *out_ = json_of((in), sizeof(in) - 1);                            \
        ASSERT_STREQ(out_, (expect));                                          \
        free(out_);                                                            \
    } while (0)

TEST(json_escapes_specials)
{
    ASSERT_JSON("plain", "\"plain\"");
    ASSERT_JSON("", "\"\"");
    ASSERT_JSON("a\"b\\c", "\"a\\\"b\\\\c\"");
    ASSERT_JSON("\n\r\t\b\f", "\"\\n\\r\\t\\b\\f\"");
    ASSERT_JSON("\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"");
    ASSERT_JSON("a/b", "\"a/b\"");
}

TEST(json_keeps_valid_utf8)
{
    ASSERT_JSON("caf\xc3\xa9", "\"caf\xc3\xa9\"");              /* U+00E9 */
    ASSERT_JSON("\xe2\x82\xac", "\"\xe2\x82\xac\"");             /* U+20AC */
    ASSERT_JSON("\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"");     /* U+1F600 */
    ASSERT_JSON("\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\"");     /* U+10FFFF */
    ASSERT_JSON("\xed\x9f\xbf", "\"\xed\x9f\xbf\"");             /* U+D7FF */
}

TEST(json_replaces_invalid_utf8)
{
    ASSERT_JSON("\xff", "\"\\ufffd\"");
    ASSERT_JSON("\x80x", "\"\\ufffdx\"");                        /* lone continuation */
    ASSERT_JSON("\xc3", "\"\\ufffd\"");                          /* truncated */
    ASSERT_JSON("\xc3(", "\"\\ufffd(\"");                        /* bad continuation */
    ASSERT_JSON("\xc0\xaf", "\"\\ufffd\\ufffd\"");               /* overlong '/' */
    ASSERT_JSON("\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"");    /* overlong, 3 bytes */
    ASSERT_JSON("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");    /* surrogate U+D800 */
    ASSERT_JSON("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* > U+10FFFF */
    ASSERT_JSON("\xf5\x80", "\"\\ufffd\\ufffd\"");
}

TEST(json_writer_commas_and_nesting)
{
    struct capture c;
    struct jw w;

    cap_open(&c);
    jw_init(&w, c.f);
    jw_begin_object(&w, NULL);
    jw_u64(&w, "a", 18446744073709551615ull);
    jw_i64(&w, "b", -1);
    jw_begin_array(&w, "list");
    jw_begin_object(&w, NULL);
    jw_bool(&w, "t", 1);
    jw_end_object(&w);
    jw_begin_object(&w, NULL);
    jw_null(&w, "n");
    jw_cstring(&w, "s", NULL);
    jw_end_object(&w);
    jw_end_array(&w);
    jw_begin_array(&w, "empty");
    jw_end_array(&w);
    jw_string(&w, "k\"ey", "v\n", 2);
    jw_end_object(&w);
    jw_finish(&w);
    ASSERT_STREQ(cap_text(&c), "{\"a\":18446744073709551615,\"b\":-1,\"list\":[{\"t\":true},"
                               "{\"n\":null,\"s\":null}],\"empty\":[],\"k\\\"ey\":\"v\\n\"}\n");
    free(c.buf);
}

/* Print one value the way lock-info's JSON does, in an object. */
static char *value_of(const char *v, size_t n)
{
    struct capture c;
    struct jw w;

    cap_open(&c);
    jw_init(&w, c.f);
    jw_begin_object(&w, NULL);
    jw_value(&w, v, n);
    jw_end_object(&w);
    cap_text(&c);
    return c.buf;
}

#define ASSERT_VALUE(in, expect)                                               \
    do {                                                                       \
        char *out_ = value_of((in), sizeof(in) - 1);                           \
        ASSERT_STREQ(out_, (expect));                                          \
        free(out_);                                                            \
    } while (0)

/* A value: a string when it is valid UTF-8 (escaped, so exactly the
 * value), base64 under value_base64 otherwise (every padding length),
 * null when there is none. */
TEST(json_values)
{
    ASSERT_VALUE("", "{\"value\":null}");
    ASSERT_VALUE("host:80", "{\"value\":\"host:80\"}");
    ASSERT_VALUE("caf\xc3\xa9\n\x01", "{\"value\":\"caf\xc3\xa9\\n\\u0001\"}");
    ASSERT_VALUE("\xff", "{\"value_base64\":\"/w==\"}");
    ASSERT_VALUE("w\xff\x01", "{\"value_base64\":\"d/8B\"}");
    ASSERT_VALUE("ab\xc3", "{\"value_base64\":\"YWLD\"}");
    ASSERT_VALUE("\xed\xa0\x80\x00", "{\"value_base64\":\"7aCAAA==\"}");
    ASSERT(ctl_utf8_valid("", 0));
    ASSERT(ctl_utf8_valid("a\0b", 3));
    ASSERT(!ctl_utf8_valid("\xc0\xaf", 2));
}

TEST(sanitize_for_terminal)
{
    struct capture c;
    size_t cols;

    cap_open(&c);
    cols = ctl_sanitize(c.f, "a\x1b[31m\xc3\xa9\xff", 9);
    ASSERT_STREQ(cap_text(&c), "a\\x1b[31m\xc3\xa9\\xff");
    ASSERT_EQ(cols, 1 + 4 + 4 + 1 + 4);
    free(c.buf);
}

TEST(table_aligns_columns)
{
    struct capture c;
    struct table t;

    table_init(&t, 3);
    table_cell(&t, "ID");
    table_cell(&t, "NAME");
    table_cell(&t, "N");
    table_cell(&t, "%d", 1);
    table_cell_bytes(&t, "caf\xc3\xa9-long", 10);
    table_cell(&t, "7");
    table_cell(&t, "%d", 22);
    table_cell_bytes(&t, "x\ny", 3);
    table_cell(&t, "-");
    cap_open(&c);
    table_print(&t, c.f);
    table_free(&t);
    ASSERT_STREQ(cap_text(&c), "ID  NAME       N\n"
                               "1   café-long  7\n"
                               "22  x\\x0ay     -\n");
    free(c.buf);
}

TEST(parse_durations)
{
    int64_t v = -5;

    ASSERT_EQ(ctl_parse_ms("0", &v), 0);
    ASSERT_EQ(v, 0);
    ASSERT_EQ(ctl_parse_ms("250", &v), 0);
    ASSERT_EQ(v, 250);
    ASSERT_EQ(ctl_parse_ms("250ms", &v), 0);
    ASSERT_EQ(v, 250);
    ASSERT_EQ(ctl_parse_ms("5s", &v), 0);
    ASSERT_EQ(v, 5000);
    ASSERT_EQ(ctl_parse_ms("2m", &v), 0);
    ASSERT_EQ(v, 120000);
    ASSERT_EQ(ctl_parse_ms("2147483647", &v), 0);
    ASSERT_EQ(v, 2147483647);
    ASSERT_EQ(ctl_parse_ms("2147483648", &v), -1);
    ASSERT_EQ(ctl_parse_ms("99999999999999999999999", &v), -1);
    ASSERT_EQ(ctl_parse_ms("3000000s", &v), -1);
    ASSERT_EQ(ctl_parse_ms("", &v), -1);
    ASSERT_EQ(ctl_parse_ms("-1", &v), -1);
    ASSERT_EQ(ctl_parse_ms(" 1", &v), -1);
    ASSERT_EQ(ctl_parse_ms("1h", &v), -1);
    ASSERT_EQ(ctl_parse_ms("1 s", &v), -1);
    ASSERT_EQ(ctl_parse_ms("s", &v), -1);
}

TEST(parse_endpoints)
{
    const char *list = " 127.0.0.1:7001, localhost:7002 ,[::1]:7003";
    char storage[64], err[256], host[80], port[8];
    const char *eps[4];

    ASSERT_EQ(ctl_split_endpoints(list, storage, eps, 4, err, sizeof err), 3);
    ASSERT_STREQ(eps[0], "127.0.0.1:7001");
    ASSERT_STREQ(eps[1], "localhost:7002");
    ASSERT_STREQ(eps[2], "[::1]:7003");
    ASSERT_EQ(ctl_split_hostport(eps[2], host, sizeof host, port, sizeof port), 0);
    ASSERT_STREQ(host, "::1");
    ASSERT_STREQ(port, "7003");
    ASSERT_EQ(ctl_split_hostport("h:0", host, sizeof host, port, sizeof port), -1);
    ASSERT_EQ(ctl_split_hostport("h:65536", host, sizeof host, port, sizeof port), -1);
    ASSERT_EQ(ctl_split_hostport(":1", host, sizeof host, port, sizeof port), -1);
    ASSERT_EQ(ctl_split_hostport("::1:7000", host, sizeof host, port, sizeof port), -1);
    ASSERT_EQ(ctl_split_hostport("h", host, sizeof host, port, sizeof port), -1);

    ASSERT_EQ(ctl_split_endpoints("a:1,,b:2", storage, eps, 4, err, sizeof err), -1);
    ASSERT(strstr(err, "empty") != NULL);
    ASSERT_EQ(ctl_split_endpoints("a:1,b", storage, eps, 4, err, sizeof err), -1);
    ASSERT(strstr(err, "'b'") != NULL);
    ASSERT_EQ(ctl_split_endpoints("a:1,b:2,c:3", storage, eps, 2, err, sizeof err), -1);
    ASSERT_EQ(ctl_split_endpoints("", storage, eps, 2, err, sizeof err), -1);
}

TEST(options_iterate)
{
    static const struct ctl_optspec cmd[] = {
        {"timeout", 0, 1, 100},
        {"verbose", 'v', 0, 101},
        {NULL, 0, 0, 0},
    };
    const char *argv_c[] = {"x", "-ojson", "--endpoints=h:1", "-e", "h:2", "name", "-", "--timeout",
                    "5", "-v", "--", "cmd", "--help", NULL};
    char **argv = (char **)argv_c;
    struct ctl_optiter it;
    const char *arg;
    char err[128];

    ctl_opt_init(&it, 13, argv, 1);
    ASSERT_EQ(ctl_opt_next(&it, cmd, ctl_global_opts, &arg, err, sizeof err), CTL_OPT_OUTPUT);
    ASSERT_STREQ(arg, "json");
    ASSERT_EQ(ctl_opt_next(&it, cmd, ctl_global_opts, &arg, err, sizeof err), CTL_OPT_ENDPOINTS);
    ASSERT_STREQ(arg, "h:1");
    ASSERT_EQ(ctl_opt_next(&it, cmd, ctl_global_opts, &arg, err, sizeof err), CTL_OPT_ENDPOINTS);
    ASSERT_STREQ(arg, "h:2");
    ASSERT_EQ(ctl_opt_next(&it, cmd, ctl_global_opts, &arg, err, sizeof err), CTL_OPT_POSITIONAL);
    ASSERT_STREQ(arg, "name");
    ASSERT_EQ(ctl_opt_next(&it, cmd, ctl_global_opts, &arg, err, sizeof err), CTL_OPT_POSITIONAL);
    ASSERT_STREQ(arg, "-");
    /* The command's own --timeout wins over the global one. */
    ASSERT_EQ(ctl_opt_next(&it, cmd, ctl_global_opts, &arg, err, sizeof err), 100);
    ASSERT_STREQ(arg, "5");
    ASSERT_EQ(ctl_opt_next(&it, cmd, ctl_global_opts, &arg, err, sizeof err), 101);
    ASSERT(arg == NULL);
    ASSERT_EQ(ctl_opt_next(&it, cmd, ctl_global_opts, &arg, err, sizeof err), CTL_OPT_DASHDASH);
    ASSERT_EQ(it.i, 11);
    ASSERT_STREQ(argv[it.i], "cmd");

    /* Without the command's table, --timeout is the global one. */
    ctl_opt_init(&it, 9, argv, 7);
    ASSERT_EQ(ctl_opt_next(&it, NULL, ctl_global_opts, &arg, err, sizeof err), CTL_OPT_TIMEOUT);
    ASSERT_EQ(ctl_opt_next(&it, NULL, ctl_global_opts, &arg, err, sizeof err), CTL_OPT_END);
}

TEST(options_errors)
{
    const char *a1[] = {"x", "--bogus", NULL};
    const char *a2[] = {"x", "--output", NULL};
    const char *a3[] = {"x", "-q", NULL};
    const char *a4[] = {"x", "--help=yes", NULL};
    const char *a5[] = {"x", "-e", NULL};
    struct ctl_optiter it;
    const char *arg;
    char err[128];

    ctl_opt_init(&it, 2, (char **)a1, 1);
    ASSERT_EQ(ctl_opt_next(&it, NULL, ctl_global_opts, &arg, err, sizeof err), CTL_OPT_ERROR);
    ASSERT_STREQ(err, "unknown option --bogus");
    ctl_opt_init(&it, 2, (char **)a2, 1);
    ASSERT_EQ(ctl_opt_next(&it, NULL, ctl_global_opts, &arg, err, sizeof err), CTL_OPT_ERROR);
    ASSERT_STREQ(err, "option --output needs a value");
    ctl_opt_init(&it, 2, (char **)a3, 1);
    ASSERT_EQ(ctl_opt_next(&it, NULL, ctl_global_opts, &arg, err, sizeof err), CTL_OPT_ERROR);
    ASSERT_STREQ(err, "unknown option -q");
    ctl_opt_init(&it, 2, (char **)a4, 1);
    ASSERT_EQ(ctl_opt_next(&it, NULL, ctl_global_opts, &arg, err, sizeof err), CTL_OPT_ERROR);
    ctl_opt_init(&it, 2, (char **)a5, 1);
    ASSERT_EQ(ctl_opt_next(&it, NULL, ctl_global_opts, &arg, err, sizeof err), CTL_OPT_ERROR);
}

TEST(global_values)
{
    struct ctl_opts o = {.endpoints = "d:1", .timeout_ms = 5000};
    char err[128];

    ASSERT_EQ(ctl_apply_global(&o, CTL_OPT_OUTPUT, "json", err, sizeof err), 0);
    ASSERT_EQ(o.format, CTL_JSON);
    ASSERT_EQ(ctl_apply_global(&o, CTL_OPT_OUTPUT, "yaml", err, sizeof err), -1);
    ASSERT_EQ(ctl_apply_global(&o, CTL_OPT_TIMEOUT, "2s", err, sizeof err), 0);
    ASSERT_EQ(o.timeout_ms, 2000);
    ASSERT_EQ(o.timeout_set, 1);
    ASSERT_EQ(ctl_apply_global(&o, CTL_OPT_TIMEOUT, "0", err, sizeof err), -1);
    ASSERT_EQ(ctl_apply_global(&o, CTL_OPT_ENDPOINTS, "", err, sizeof err), -1);
    ASSERT_EQ(ctl_apply_global(&o, CTL_OPT_ENDPOINTS, "a:1", err, sizeof err), 0);
    ASSERT_STREQ(o.endpoints, "a:1");
}

TEST(security_values)
{
    struct ctl_opts o = {.endpoints = "d:1"};
    char err[128];

    ASSERT_EQ(ctl_apply_global(&o, CTL_OPT_CACERT, "ca.pem", err, sizeof err), 0);
    ASSERT_EQ(ctl_apply_global(&o, CTL_OPT_CERT, "c.pem", err, sizeof err), 0);
    ASSERT_EQ(ctl_apply_global(&o, CTL_OPT_KEY, "c.key", err, sizeof err), 0);
    ASSERT_EQ(ctl_apply_global(&o, CTL_OPT_TOKEN, "t0k", err, sizeof err), 0);
    ASSERT_STREQ(o.cacert, "ca.pem");
    ASSERT_STREQ(o.cert, "c.pem");
    ASSERT_STREQ(o.key, "c.key");
    ASSERT_STREQ(o.token, "t0k");
    /* An empty value would silently mean "none". */
    ASSERT_EQ(ctl_apply_global(&o, CTL_OPT_CACERT, "", err, sizeof err), -1);
    ASSERT(strstr(err, "--cacert") != NULL);
    ASSERT_EQ(ctl_apply_global(&o, CTL_OPT_TOKEN, "", err, sizeof err), -1);
}

/* The SHA-256 of s in hex. */
static void sha_hex(const char *s, char out[CRYPTO_SHA256_HEX + 1])
{
    uint8_t d[CRYPTO_SHA256_LEN];

    ASSERT_EQ(crypto_sha256(s, strlen(s), d), 0);
    crypto_hex(d, sizeof d, out);
}

TEST(auth_lines)
{
    static const char *const opts[] = {"prefixes=jobs/,tmp/", "max-sessions=10",
                                       "max-lock-delay=5000"};
    char tok[2 * CTL_TOKEN_BYTES + 1], tok2[sizeof tok], line[512], want[512], err[256];
    char hex[CRYPTO_SHA256_HEX + 1];

    ASSERT_EQ(ctl_new_token(tok), 0);
    ASSERT_EQ(ctl_new_token(tok2), 0);
    ASSERT_EQ(strlen(tok), 64);
    ASSERT(strspn(tok, "0123456789abcdef") == 64);
    ASSERT(strcmp(tok, tok2) != 0);
    ASSERT_EQ(ctl_auth_line("billing", "client", opts, 3, tok, line, sizeof line, err,
                            sizeof err), 0);
    sha_hex(tok, hex);
    snprintf(want, sizeof want, "billing client sha256:%s %s %s %s", hex, opts[0], opts[1],
             opts[2]);
    ASSERT_STREQ(line, want);
    ASSERT(strstr(line, tok) == NULL);
    ASSERT_EQ(ctl_auth_line("ops", "admin", NULL, 0, tok, line, sizeof line, err, sizeof err), 0);
    snprintf(want, sizeof want, "ops admin sha256:%s", hex);
    ASSERT_STREQ(line, want);
    ASSERT_EQ(ctl_auth_line("grafana", "read", NULL, 0, tok, line, sizeof line, err, sizeof err),
              0);

    /* What the auth file could not take. */
    {
        static const char *const bad_opts[][1] = {{"prefixes="}, {"max-sessions=ten"},
                                                  {"colour=blue"}, {"max-lock-delay"},
                                                  {"prefixes=a/ b/"}};
        static const char *const twice[] = {"max-sessions=1", "max-sessions=2"};
        char long_name[BATON_MAX_PRINCIPAL + 2];

        ASSERT_EQ(ctl_auth_line("", "read", NULL, 0, tok, line, sizeof line, err, sizeof err),
                  -1);
        ASSERT_EQ(ctl_auth_line("a b", "read", NULL, 0, tok, line, sizeof line, err, sizeof err),
                  -1);
        ASSERT_EQ(ctl_auth_line("#x", "read", NULL, 0, tok, line, sizeof line, err, sizeof err),
                  -1);
        memset(long_name, 'n', sizeof long_name - 1);
        long_name[sizeof long_name - 1] = '\0';
        ASSERT_EQ(ctl_auth_line(long_name, "read", NULL, 0, tok, line, sizeof line, err,
                                sizeof err), -1);
        ASSERT_EQ(ctl_auth_line("x", "writer", NULL, 0, tok, line, sizeof line, err, sizeof err),
                  -1);
        ASSERT(strstr(err, "writer") != NULL);
        for (size_t i = 0; i < sizeof bad_opts / sizeof bad_opts[0]; i++)
            if (ctl_auth_line("x", "read", bad_opts[i], 1, tok, line, sizeof line, err,
                              sizeof err) != -1)
                FAIL("option '%s' accepted", bad_opts[i][0]);
        ASSERT_EQ(ctl_auth_line("x", "read", twice, 2, tok, line, sizeof line, err, sizeof err),
                  -1);
        ASSERT(strstr(err, "twice") != NULL);
    }
}

TEST(lock_names)
{
    char name[BATON_MAX_NAME + 2];

    ASSERT(!ctl_lock_name_ok(""));
    ASSERT(ctl_lock_name_ok("a"));
    memset(name, 'n', sizeof name);
    name[BATON_MAX_NAME] = '\0';
    ASSERT(ctl_lock_name_ok(name));
    name[BATON_MAX_NAME] = 'n';
    name[BATON_MAX_NAME + 1] = '\0';
    ASSERT(!ctl_lock_name_ok(name));
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(json_escapes_specials);
    RUN(json_keeps_valid_utf8);
    RUN(json_replaces_invalid_utf8);
    RUN(json_writer_commas_and_nesting);
    RUN(json_values);
    RUN(sanitize_for_terminal);
    RUN(table_aligns_columns);
    RUN(parse_durations);
    RUN(parse_endpoints);
    RUN(options_iterate);
    RUN(options_errors);
    RUN(global_values);
    RUN(security_values);
    RUN(auth_lines);
    RUN(lock_names);
    return runner_done();
}
