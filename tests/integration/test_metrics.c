/*
 * test_metrics.c -- what an operator watches, against a real three-node
 * cluster started with --metrics-addr (docs/operations.md, "Metrics and
 * health"):
 *
 *  - /metrics is the Prometheus text format: every documented metric has
 *    its HELP and TYPE lines (counters end in _total, histograms have
 *    _bucket{le}, _sum and _count), every line is well-formed, and the
 *    counters move with lock traffic (grants, acquires, releases, bytes);
 *  - a lock name made to break the format (quotes, a newline, a fake
 *    sample, invalid UTF-8) shows up escaped in baton_lock_queue_length
 *    and breaks nothing;
 *  - /healthz is 200; /readyz is 200 on the leader and the followers once
 *    caught up, and 503 with a reason on a node that cannot see a leader;
 *  - `batonctl top --count 2 -o json` prints two JSON objects with the
 *    three nodes; METRICS itself is in test_auth's role matrix (READ);
 *  - --log-format json writes one JSON object per line;
 *  - dist/grafana/baton.json is valid JSON.
 * The HTTP client is a few lines of plain sockets below; JSON is checked
 * with python3 when it is installed (skipped, and said, otherwise).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "proto/utf8.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/scrape.h"
#include "tests/lib/proc.h"
#include "tests/lib/runner.h"

/* A hostile lock name: ends the label, starts a fake sample, has a
 * backslash, a percent sign and a byte of invalid UTF-8. */
static const char evil[] = "q\"} 1\nbaton_fake_total 9\\%\xff";

/* GET and expect 200; the body (the caller frees it). */
static char *scrape(struct cluster *c, int i)
{
    char *body;
    int code = http_get(c->nodes[i].metrics_port, "/metrics", &body);

    if (code != 200) FAIL("node %d: /metrics answered %d", i + 1, code);
    return body;
}

/* Is s..end a metric name? */
static const char *skip_name(const char *s)
{
    const char *p = s;

    while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' || *p == ':' ||
           (p > s && *p >= '0' && *p <= '9'))
        p++;
    return p > s ? p : NULL;
}

/* Check one sample line against the exposition format's grammar:
 * name{label="value",...} number, with only \\ \" \n escapes. */
static void check_sample_line(const char *line, size_t len)
{
    const char *p = skip_name(line), *end = line + len;

    if (p == NULL) FAIL("bad name: %.*s", (int)len, line);
    if (*p == '{') {
        p++;
        while (p < end && *p != '}') {
            p = skip_name(p);
            if (p == NULL || p + 1 >= end || p[0] != '=' || p[1] != '"')
                FAIL("bad label in: %.*s", (int)len, line);
            for (p += 2; p < end && *p != '"'; p++) {
                if (*p == '\\') {
                    p++;
                    if (p >= end || (*p != '\\' && *p != '"' && *p != 'n'))
                        FAIL("bad escape in: %.*s", (int)len, line);
                }
            }
            if (p >= end) FAIL("unterminated label value: %.*s", (int)len, line);
            p++;
            if (*p == ',') p++;
        }
        if (p >= end) FAIL("unterminated labels: %.*s", (int)len, line);
        p++;
    }
    if (*p != ' ') FAIL("no value: %.*s", (int)len, line);
    p++;
    if (strncmp(p, "+Inf", 4) != 0) {
        char *q;
        strtod(p, &q);
        if (q != end) FAIL("bad value: %.*s", (int)len, line);
    }
}

/* Every line: "# HELP name text", "# TYPE name type" or a sample; the
 * whole text valid UTF-8. */
static void check_format(const char *text)
{
    size_t n = strlen(text);

    for (size_t i = 0; i < n;) {
        size_t len = proto_utf8_len((const unsigned char *)text + i, n - i);
        if (len == 0) FAIL("invalid UTF-8 at byte %zu", i);
        i += len;
    }
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len;

        if (nl == NULL) FAIL("the text does not end with a newline");
        len = (size_t)(nl - p);
        if (strncmp(p, "# HELP baton_", 13) != 0 && strncmp(p, "# TYPE baton_", 13) != 0) {
            if (strncmp(p, "baton_", 6) != 0) FAIL("stray line: %.*s", (int)len, p);
            check_sample_line(p, len);
        }
        p = nl + 1;
    }
}

/* Every metric of docs/operations.md with its type. */
static const struct {
    const char *name, *type;
} documented[] = {
    {"baton_node_id", "gauge"},
    {"baton_raft_term", "gauge"},
    {"baton_raft_role", "gauge"},
    {"baton_raft_leader_id", "gauge"},
    {"baton_ready_leader", "gauge"},
    {"baton_raft_commit_index", "gauge"},
    {"baton_raft_applied_index", "gauge"},
    {"baton_sessions_open", "gauge"},
    {"baton_connections", "gauge"},
    {"baton_disk_free_bytes", "gauge"},
    {"baton_disk_low", "gauge"},
    {"baton_leader_changes_total", "counter"},
    {"baton_grants_total", "counter"},
    {"baton_acquires_total", "counter"},
    {"baton_releases_total", "counter"},
    {"baton_sessions_expired_total", "counter"},
    {"baton_lease_expiries_total", "counter"},
    {"baton_keepalives_total", "counter"},
    {"baton_keepalive_rounds_total", "counter"},
    {"baton_refusals_total", "counter"},
    {"baton_pushes_total", "counter"},
    {"baton_snapshots_total", "counter"},
    {"baton_client_bytes_in_total", "counter"},
    {"baton_client_bytes_out_total", "counter"},
    {"baton_commit_latency_seconds", "histogram"},
    {"baton_apply_latency_seconds", "histogram"},
    {"baton_batch_commands", "histogram"},
    {"baton_queue_length", "histogram"},
    {"baton_lock_wait_seconds", "histogram"},
    {"baton_snapshot_duration_seconds", "histogram"},
    {"baton_lock_queue_length", "gauge"},
};

/* Does a line of text start with prefix? */
static int has_line_start(const char *text, const char *prefix)
{
    size_t n = strlen(prefix);

    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, prefix, n) == 0) return 1;
    return 0;
}

static void check_documented(const char *text)
{
    char line[160];

    for (size_t i = 0; i < sizeof documented / sizeof documented[0]; i++) {
        const char *name = documented[i].name;

        snprintf(line, sizeof line, "# TYPE %s %s\n", name, documented[i].type);
        if (strstr(text, line) == NULL) FAIL("no TYPE line for %s", name);
        snprintf(line, sizeof line, "# HELP %s ", name);
        if (!has_line_start(text, line)) FAIL("no HELP line for %s", name);
        if (strcmp(documented[i].type, "histogram") == 0) {
            snprintf(line, sizeof line, "%s_bucket{le=\"+Inf\"} ", name);
            if (!has_line_start(text, line)) FAIL("no +Inf bucket for %s", name);
            snprintf(line, sizeof line, "%s_count ", name);
            if (!has_line_start(text, line)) FAIL("no _count for %s", name);
            snprintf(line, sizeof line, "%s_sum ", name);
            if (!has_line_start(text, line)) FAIL("no _sum for %s", name);
        }
    }
    ASSERT(strstr(text, "baton_acquires_total{outcome=\"granted\"} ") != NULL);
    ASSERT(strstr(text, "baton_refusals_total{reason=\"max-conns\"} ") != NULL);
    ASSERT(strstr(text, "baton_pushes_total{type=\"granted\"} ") != NULL);
}

/* Is python3 there to check JSON? */
static int have_python(void)
{
    return system("python3 -c 'import json' >/dev/null 2>&1") == 0;
}

/* Does python3 accept every non-empty line of `path` that starts with '{'
 * as one JSON object (and find at least `min` of them)? */
static void check_json_lines(const char *path, int min)
{
    char cmd[PATH_MAX + 512];

    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys\n"
             "n=0\n"
             "for l in open(sys.argv[1],\"rb\"):\n"
             "    l=l.strip()\n"
             "    if l.startswith(b\"{\"):\n"
             "        d=json.loads(l.decode(\"utf-8\"))\n"
             "        assert isinstance(d, dict)\n"
             "        n+=1\n"
             "sys.exit(0 if n>=%d else 1)' '%s'",
             min, path);
    if (system(cmd) != 0) FAIL("%s: not %d+ JSON lines", path, min);
}

static struct cluster C;

static int leader_index(void)
{
    int l = cluster_wait_leader(&C, 15000);
    ASSERT_GE(l, 0);
    return l;
}

static void start(const char *const *extra)
{
    struct cluster_opts o = {.metrics = 1, .extra_args = extra};

    ASSERT_EQ(cluster_start_opts(&C, 3, &o), 0);
    leader_index();
}

static char *wait_code(int i, const char *path, int want);

TEST(metrics_format_and_counters)
{
    static const char *const json_logs[] = {"--log-format", "json", NULL};
    struct ctl_result r;
    char *before, *after;
    int l;

    start(json_logs);
    l = leader_index();
    /* STATUS says leader a moment before the leader serves (its barrier
     * applied); baton_ready_leader is 1 only from then on. */
    free(wait_code(l, "/readyz", 200));
    before = scrape(&C, l);
    check_format(before);
    check_documented(before);
    ASSERT_EQ(scrape_value(before, "baton_ready_leader"), 1);
    ASSERT_EQ(scrape_value(before, "baton_raft_role"), 3);

    ASSERT_EQ(cluster_ctl(&C, &r, "lock", "m/a", "--", "true", NULL), 0);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&C, &r, "lock", "m/b", "--", "true", NULL), 0);
    ctl_result_free(&r);
    l = leader_index();
    after = scrape(&C, l);
    check_format(after);
    ASSERT_GE(scrape_value(after, "baton_grants_total"), scrape_value(before, "baton_grants_total") + 2);
    ASSERT_GE(scrape_value(after, "baton_acquires_total{outcome=\"granted\"}"),
              scrape_value(before, "baton_acquires_total{outcome=\"granted\"}") + 2);
    ASSERT_GE(scrape_value(after, "baton_releases_total"), scrape_value(before, "baton_releases_total") + 2);
    ASSERT_GT(scrape_value(after, "baton_client_bytes_in_total"),
              scrape_value(before, "baton_client_bytes_in_total"));
    ASSERT_GT(scrape_value(after, "baton_client_bytes_out_total"),
              scrape_value(before, "baton_client_bytes_out_total"));
    ASSERT_GT(scrape_value(after, "baton_commit_latency_seconds_count"),
              scrape_value(before, "baton_commit_latency_seconds_count"));
    ASSERT_GT(scrape_value(after, "baton_batch_commands_count"), 0);
    ASSERT_GT(scrape_value(after, "baton_apply_latency_seconds_count"), 0);
    ASSERT_GE(scrape_value(after, "baton_leader_changes_total"), 1);
    ASSERT_GT(scrape_value(after, "baton_raft_term"), 0);
    free(before);
    free(after);
    /* A follower applies the same grants. */
    before = scrape(&C, (l + 1) % 3);
    check_format(before);
    ASSERT_EQ(scrape_value(before, "baton_raft_role"), 1);
    ASSERT_GE(scrape_value(before, "baton_grants_total"), 2);
    free(before);

    ASSERT_EQ(cluster_stop(&C), 0);
}

/* Poll lock-info until the lock is held (10 s at most). */
static void wait_held(const char *name)
{
    for (int i = 0; i < 200; i++) {
        struct ctl_result r;
        int held;

        cluster_lock_info(&C, name, &r);
        held = r.status == 0 && strstr(r.out, "\"held\":true") != NULL;
        ctl_result_free(&r);
        if (held) return;
        sleep_ms(50);
    }
    FAIL("lock %s never held", name);
}

TEST(hostile_lock_name_stays_escaped)
{
    const char *hold[] = {"lock", evil, "--", "sleep", "3", NULL};
    const char *wait[] = {"lock", evil, "--", "true", NULL};
    char *text;
    pid_t holder, waiter;
    int l;

    start(NULL);
    holder = cluster_ctl_spawn(&C, hold, NULL);
    ASSERT_GT(holder, 0);
    wait_held(evil);
    waiter = cluster_ctl_spawn(&C, wait, NULL);
    ASSERT_GT(waiter, 0);
    ASSERT_EQ(cluster_wait_lock_i64(&C, evil, "total_waiters", 1, 10000), 0);
    l = leader_index();
    text = scrape(&C, l);
    check_format(text);
    if (strstr(text, "baton_lock_queue_length{lock=\"q\\\"} 1\\nbaton_fake_total 9\\\\%25%FF\"} 1\n") ==
        NULL)
        FAIL("no escaped queue line in:\n%s", strstr(text, "# HELP baton_lock_queue_length"));
    ASSERT(strstr(text, "\nbaton_fake_total") == NULL);
    ASSERT_GE(scrape_value(text, "baton_acquires_total{outcome=\"queued\"}"), 1);
    ASSERT_GE(scrape_value(text, "baton_queue_length_count"), 1);
    free(text);
    ASSERT_EQ(proc_wait(holder, 10000), 0);
    ASSERT_EQ(proc_wait(waiter, 10000), 0);
    /* The waiter was granted: its wait is observed, and its queue left
     * the list of the longest. */
    text = scrape(&C, l);
    ASSERT_GE(scrape_value(text, "baton_lock_wait_seconds_count"), 1);
    ASSERT_GE(scrape_value(text, "baton_pushes_total{type=\"granted\"}"), 1);
    ASSERT(strstr(text, "baton_lock_queue_length{") == NULL);
    free(text);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* Poll GET path on node i until it answers `want` (10 s at most). */
static char *wait_code(int i, const char *path, int want)
{
    char *body = NULL;
    int code = -1;

    for (int k = 0; k < 200; k++) {
        free(body);
        code = http_get(C.nodes[i].metrics_port, path, &body);
        if (code == want) return body;
        sleep_ms(50);
    }
    FAIL("node %d: %s answered %d (%s), want %d", i + 1, path, code, body ? body : "", want);
    return NULL;
}

TEST(health_and_readiness)
{
    char *body;
    int l, survivor;

    start(NULL);
    l = leader_index();
    for (int i = 0; i < 3; i++) {
        body = wait_code(i, "/healthz", 200);
        free(body);
        body = wait_code(i, "/readyz", 200);
        ASSERT(strncmp(body, "ready", 5) == 0);
        free(body);
    }
    ASSERT_EQ(http_get(C.nodes[l].metrics_port, "/nothing", &body), 404);
    free(body);
    /* Only one follower left: it cannot see a leader. */
    survivor = (l + 1) % 3;
    ASSERT_EQ(cluster_kill(&C, l, SIGKILL), 128 + SIGKILL);
    ASSERT_EQ(cluster_kill(&C, (l + 2) % 3, SIGKILL), 128 + SIGKILL);
    body = wait_code(survivor, "/readyz", 503);
    if (strstr(body, "not ready: ") == NULL || strchr(body, '\n') != body + strlen(body) - 1)
        FAIL("503 body is not one line with a reason: '%s'", body);
    free(body);
    body = wait_code(survivor, "/healthz", 200);
    free(body);
    ASSERT_EQ(cluster_stop(&C), 0);
}

TEST(top_prints_every_node)
{
    struct ctl_result r;
    char path[PATH_MAX];
    FILE *f;
    int lines = 0;

    start(NULL);
    ASSERT_EQ(cluster_ctl(&C, &r, "-o", "json", "top", "--count", "2", "--interval", "200", NULL),
              0);
    for (const char *p = r.out; (p = strchr(p, '\n')) != NULL; p++) lines++;
    ASSERT_EQ(lines, 2);
    for (int i = 0; i < 3; i++) ASSERT(strstr(r.out, C.nodes[i].endpoint) != NULL);
    ASSERT(strstr(r.out, "\"role\":\"leader\"") != NULL);
    ASSERT(strstr(r.out, "\"reachable\":false") == NULL);
    if (have_python()) {
        snprintf(path, sizeof path, "%s/top.json", C.root);
        f = fopen(path, "w");
        ASSERT(f != NULL);
        fputs(r.out, f);
        fclose(f);
        check_json_lines(path, 2);
    } else {
        printf("# python3 not found: JSON not parsed\n");
    }
    ctl_result_free(&r);
    /* Without a terminal: no screen clearing. */
    ASSERT_EQ(cluster_ctl(&C, &r, "top", "--count", "1", NULL), 0);
    ASSERT(strchr(r.out, '\033') == NULL);
    ASSERT(strstr(r.out, "GRANTS/S") != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_stop(&C), 0);
}

TEST(json_logs_and_dashboard)
{
    static const char *const json_logs[] = {"--log-format", "json", NULL};
    const char *build = getenv("BATON_BUILD");
    char dash[PATH_MAX], cmd[PATH_MAX + 64];

    if (!have_python()) {
        printf("# python3 not found: JSON not parsed\n");
        return;
    }
    snprintf(dash, sizeof dash, "dist/grafana/baton.json");
    if (access(dash, R_OK) != 0 && build != NULL)
        snprintf(dash, sizeof dash, "%s/../../dist/grafana/baton.json", build);
    snprintf(cmd, sizeof cmd, "python3 -m json.tool '%s' >/dev/null", dash);
    if (system(cmd) != 0) FAIL("%s is not valid JSON", dash);

    start(json_logs);
    for (int i = 0; i < 3; i++) check_json_lines(C.nodes[i].log, 3);
    ASSERT_EQ(cluster_stop(&C), 0);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(metrics_format_and_counters);
    RUN(hostile_lock_name_stays_escaped);
    RUN(health_and_readiness);
    RUN(top_prints_every_node);
    RUN(json_logs_and_dashboard);
    return runner_done();
}
