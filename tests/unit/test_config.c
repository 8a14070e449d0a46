/*
 * test_config.c -- batond's flags read from `--config FILE`
 * (server/config_file.c through server/config.c): the file's values, the
 * command line overriding them, booleans, continued values, and the errors
 * -- each naming the file and line -- for an unknown key, a key outside
 * [batond], a bad line, a bad boolean and a value the flag itself refuses.
 * Every long option of the table is accepted as a key.
 */
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/config.h"
#include "server/config_file.h"
#include "server/log.h"
#include "tests/lib/files.h"
#include "tests/lib/runner.h"

#define CLUSTER "1=127.0.0.1:7101/127.0.0.1:7001,2=127.0.0.1:7102/127.0.0.1:7002"

static char path[4200], errpath[4200];

/* Write text as this test's config file (path). */
static void write_file(const char *text)
{
    FILE *f;

    snprintf(path, sizeof path, "%s/%d-batond.conf", suite_dir(), (int)getpid());
    snprintf(errpath, sizeof errpath, "%s/stderr-%d", suite_dir(), (int)getpid());
    f = fopen(path, "w");
    ASSERT(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* config_parse over the NULL-terminated arguments, stderr into errpath. */
static int parse(struct srv_config *c, const char *arg, ...)
{
    char *argv[64] = {(char *)"batond"};
    int argc = 1, rv;
    va_list ap;

    va_start(ap, arg);
    for (const char *a = arg; a != NULL; a = va_arg(ap, const char *)) argv[argc++] = (char *)a;
    va_end(ap);
    int saved = dup(2), fd;

    fflush(stderr);
    fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT(fd >= 0 && saved >= 0);
    dup2(fd, 2);
    close(fd);
    rv = config_parse(c, argc, argv);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    return rv;
}

/* The error config_parse printed must contain want. */
static void expect_err(const char *want)
{
    char got[2048];

    ASSERT(read_tail(errpath, got, sizeof got) >= 0);
    if (strstr(got, want) == NULL) FAIL("stderr '%s' lacks '%s'", got, want);
}

TEST(file_values)
{
    struct srv_config c;

    write_file("; a comment\n[batond]\nid = 2\ndata = /var/lib/baton\ncluster = " CLUSTER "\n"
               "election_timeout = 700\nheartbeat = 70\nlog-level = warn\ntls12 = yes\n"
               "join = false\n");
    ASSERT_EQ(parse(&c, "--config", path, NULL), 0);
    ASSERT_EQ(c.node.id, 2);
    ASSERT_STREQ(c.data_dir, "/var/lib/baton");
    ASSERT_EQ(c.node.n_members, 2);
    ASSERT_STREQ(c.node.members[1].client_addr, "127.0.0.1:7002");
    ASSERT_EQ(c.node.election_timeout_ms, 700);
    ASSERT_EQ(c.node.heartbeat_timeout_ms, 70);
    ASSERT(c.tls12);
    ASSERT(!c.node.join);
    config_free(&c);
}

TEST(flags_override_file)
{
    struct srv_config c;

    write_file("[batond]\nid = 1\ndata = /a\ncluster = " CLUSTER "\nmax-conns = 5\n"
               "auth-file = /from/file\n");
    ASSERT_EQ(parse(&c, "--max-conns", "7", "--config=", NULL), -1); /* empty FILE */
    ASSERT_EQ(parse(&c, "--max-conns", "7", "--config", path, "--data", "/b", "--id", "2",
                    NULL),
              0);
    ASSERT_EQ(c.max_conns, 7);
    ASSERT_EQ(c.node.id, 2);
    ASSERT_STREQ(c.data_dir, "/b");
    ASSERT_STREQ(c.auth_file, "/from/file"); /* points into the kept arguments */
    config_free(&c);
}

TEST(continued_value)
{
    struct srv_config c;

    write_file("[batond]\nid = 1\ndata = /a\n"
               "cluster = 1=127.0.0.1:7101/127.0.0.1:7001,\n"
               "          2=127.0.0.1:7102/127.0.0.1:7002,\n"
               "\t3=127.0.0.1:7103/127.0.0.1:7003\n");
    ASSERT_EQ(parse(&c, "--config", path, NULL), 0);
    ASSERT_EQ(c.node.n_members, 3);
    ASSERT_STREQ(c.node.members[2].raft_addr, "127.0.0.1:7103");
    config_free(&c);
}

TEST(booleans)
{
    static const char *yes[] = {"true", "YES", "on", "1"}, *no[] = {"false", "No", "off", "0"};
    struct srv_config c;
    char text[512];

    for (int i = 0; i < 4; i++) {
        ASSERT_EQ(config_bool_parse(yes[i]), 1);
        ASSERT_EQ(config_bool_parse(no[i]), 0);
        snprintf(text, sizeof text, "[batond]\nid=1\ndata=/a\ncluster=" CLUSTER "\njoin = %s\n",
                 yes[i]);
        write_file(text);
        ASSERT_EQ(parse(&c, "--config", path, NULL), 0);
        ASSERT(c.node.join);
        config_free(&c);
        snprintf(text, sizeof text, "[batond]\nid=1\ndata=/a\ncluster=" CLUSTER "\njoin = %s\n",
                 no[i]);
        write_file(text);
        ASSERT_EQ(parse(&c, "--config", path, NULL), 0);
        ASSERT(!c.node.join);
        config_free(&c);
    }
    ASSERT_EQ(config_bool_parse("2"), -1);
    ASSERT_EQ(config_bool_parse(""), -1);
    write_file("[batond]\nid=1\n\njoin = maybe\n");
    ASSERT_EQ(parse(&c, "--config", path, NULL), -1);
    expect_err(":4: 'join' takes true/false");
}

TEST(unknown_key)
{
    struct srv_config c;

    write_file("[batond]\nid = 1\nno-such-flag = 3\n");
    ASSERT_EQ(parse(&c, "--config", path, NULL), -1);
    expect_err("batond.conf:3: unknown key 'no-such-flag'");
    write_file("[batond]\nconfig = /etc/other\n"); /* no nesting */
    ASSERT_EQ(parse(&c, "--config", path, NULL), -1);
    expect_err(":2: unknown key 'config'");
}

TEST(key_outside_section)
{
    struct srv_config c;

    write_file("id = 1\n[batond]\n");
    ASSERT_EQ(parse(&c, "--config", path, NULL), -1);
    expect_err(":1: key 'id' outside the [batond] section");
    write_file("[batond]\nid = 1\n[other]\ndata = /a\n");
    ASSERT_EQ(parse(&c, "--config", path, NULL), -1);
    expect_err(":4: key 'data' outside");
}

TEST(bad_line)
{
    struct srv_config c;
    char text[1024];

    write_file("[batond]\nid = 1\njust some words\n");
    ASSERT_EQ(parse(&c, "--config", path, NULL), -1);
    expect_err("batond.conf:3: not 'key = value'");
    snprintf(text, sizeof text, "[batond]\ndata = /%0400d\n", 0);
    write_file(text);
    ASSERT_EQ(parse(&c, "--config", path, NULL), -1);
    expect_err(":2: line longer than");
    ASSERT_EQ(parse(&c, "--config", "/nonexistent/batond.conf", NULL), -1);
    expect_err("/nonexistent/batond.conf: No such file");
}

TEST(value_refused_by_flag)
{
    struct srv_config c;

    write_file("[batond]\nid = 1\ndata = /a\ncluster = " CLUSTER "\n\nheartbeat = soon\n");
    ASSERT_EQ(parse(&c, "--config", path, NULL), -1);
    expect_err("from ");
    expect_err("batond.conf line 6");
    write_file("[batond]\nid = 1\ndata = /a\ncluster = 1=nope\n");
    ASSERT_EQ(parse(&c, "--config", path, NULL), -1);
    expect_err("batond.conf line 4");
}

/* Every long option of the table but config and help, written as a key,
 * reaches getopt_long as that option: none is refused as unknown, and a
 * value each flag refuses is traced to its line. */
TEST(every_option_is_a_key)
{
    const struct option *o;
    struct config_args a;
    char *argv[] = {(char *)"batond", (char *)"--config", path, NULL}, text[256];
    int n = 0;

    for (o = config_options(); o->name != NULL; o++) {
        int want;

        if (strcmp(o->name, "config") == 0 || strcmp(o->name, "help") == 0) continue;
        snprintf(text, sizeof text, "[batond]\n%s = %s\n", o->name,
                 o->has_arg == no_argument ? "true" : "x");
        write_file(text);
        ASSERT_EQ(config_file_expand(3, argv, config_options(), &a), 0);
        want = o->has_arg == required_argument ? 3 : 2;
        ASSERT_EQ(a.argc, want);
        ASSERT_EQ(a.line[1], 2);
        if (strncmp(a.argv[1], "--", 2) != 0 || strncmp(a.argv[1] + 2, o->name,
                                                         strlen(o->name)) != 0)
            FAIL("key %s became %s", o->name, a.argv[1]);
        config_args_free(&a);
        n++;
    }
    ASSERT_GE(n, 30);
}

/* Flags left out take the table's defaults (batond --help's). */
TEST(defaults_from_table)
{
    struct srv_config c;

    write_file(""); /* sets errpath */
    ASSERT_EQ(parse(&c, "--id", "1", "--data", "/a", "--cluster", CLUSTER, NULL), 0);
    ASSERT_EQ(c.node.election_timeout_ms, 300);
    ASSERT_EQ(c.node.heartbeat_timeout_ms, 30);
    ASSERT_EQ(c.node.election_jitter_ms, 0); /* raft/node.c: a third of the timeout */
    ASSERT_EQ(c.shutdown_transfer_ms, 600);
    ASSERT_EQ(c.max_conns, 10000);
    ASSERT_EQ(c.max_inflight, 1);
    ASSERT_EQ(c.log_level, LOG_INFO);
    ASSERT(c.metrics_addr == NULL && !c.tls12);
    config_free(&c);
    ASSERT_EQ(parse(&c, "--id", "1", "--data", "/a", "--cluster", CLUSTER,
                    "--election-timeout", "1000", NULL), 0);
    ASSERT_EQ(c.shutdown_transfer_ms, 2000);
    config_free(&c);
}

/* A bad flag is one line that points to --help, not the whole help. */
TEST(bad_option_one_line)
{
    struct srv_config c;
    char got[2048];

    write_file(""); /* sets errpath */
    ASSERT_EQ(parse(&c, "--foo", NULL), -1);
    expect_err("batond: unknown option --foo (batond --help lists the flags)");
    ASSERT(read_tail(errpath, got, sizeof got) >= 0);
    ASSERT(strstr(got, "usage:") == NULL && strchr(got, '\n') == got + strlen(got) - 1);
    ASSERT_EQ(parse(&c, "--foo=3", NULL), -1);
    expect_err("unknown option --foo (");
    ASSERT_EQ(parse(&c, "--id", "1", "--data", NULL), -1);
    expect_err("batond: --data needs a value (batond --help");
    ASSERT_EQ(parse(&c, "--id", "1", "stray", NULL), -1);
    expect_err("unexpected argument 'stray' (batond --help");
    ASSERT_EQ(parse(&c, "--id", "1", NULL), -1);
    expect_err("--id, --data and --cluster are required (batond --help");
    ASSERT_EQ(parse(&c, "--id", "0", NULL), -1);
    expect_err("batond: --id must be a positive integer");
    ASSERT_EQ(parse(&c, "--max-unread-mb", "0", NULL), -1);
    expect_err("--max-unread-mb needs a positive number of MiB");
    ASSERT_EQ(parse(&c, "--frame-timeout", "0", NULL), -1);
    expect_err("batond: '0' is not a positive number");
    ASSERT_EQ(parse(&c, "--metrics-addr", "nope", NULL), -1);
    expect_err("batond: --metrics-addr 'nope': ");
    ASSERT_EQ(parse(&c, "--log-level", "loud", NULL), -1);
    expect_err("--log-level must be debug, info, warn or error");
    ASSERT_EQ(parse(&c, "--id", "1", "--data", "/a", "--cluster",
                    "1=127.0.0.1:7101/127.0.0.1:7001,2=127.0.0.1:7101/127.0.0.1:7002", NULL),
              -1);
    expect_err("batond: --cluster: members 1 and 2 have the same raft address '127.0.0.1:7101'");
}

int main(int argc, char **argv)
{
    int rv;

    runner_init(argc, argv);
    suite_dir_init("baton-config");
    RUN(file_values);
    RUN(flags_override_file);
    RUN(continued_value);
    RUN(booleans);
    RUN(unknown_key);
    RUN(key_outside_section);
    RUN(bad_line);
    RUN(value_refused_by_flag);
    RUN(every_option_is_a_key);
    RUN(defaults_from_table);
    RUN(bad_option_one_line);
    rv = runner_done();
    suite_dir_done();
    return rv;
}
