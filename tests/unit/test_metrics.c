/*
 * test_metrics.c -- batond's metric registry and its Prometheus text
 * (server/metrics.c): names and TYPE lines, cumulative histogram buckets,
 * labelled counters, the longest-queue gauges and their label escaping;
 * and the JSON log lines of --log-format json (server/log.c).
 */
#include <stdio.h>
#include <string.h>

#include "server/log.h"
#include "server/metrics.h"
#include "tests/lib/runner.h"

/* The rendered text, NUL-terminated (static; one at a time). */
static const char *render(void)
{
    static struct buf b;

    buf_free(&b);
    ASSERT_EQ(metrics_render(&b, NULL, NULL), 0);
    ASSERT_EQ(buf_put(&b, "", 1), 0);
    return (const char *)b.data;
}

/* Does text hold this exact line? */
static int has_line(const char *text, const char *line)
{
    size_t n = strlen(line);

    for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
        if ((p == text || p[-1] == '\n') && p[n] == '\n') return 1;
    return 0;
}

#define ASSERT_LINE(text, line)                                                 \
    do {                                                                        \
        if (!has_line((text), (line))) FAIL("no line '%s' in:\n%s", (line), (text)); \
    } while (0)

TEST(types_and_suffixes)
{
    const char *t;

    metrics_reset();
    metrics_inc(M_GRANTS);
    metrics_add(M_BYTES_IN, 41);
    metrics_inc(M_BYTES_IN);
    metrics_set(M_RAFT_TERM, 7);
    t = render();
    ASSERT_LINE(t, "# TYPE baton_grants_total counter");
    ASSERT_LINE(t, "baton_grants_total 1");
    ASSERT_LINE(t, "baton_client_bytes_in_total 42");
    ASSERT_LINE(t, "# TYPE baton_raft_term gauge");
    ASSERT_LINE(t, "baton_raft_term 7");
    ASSERT_LINE(t, "# TYPE baton_commit_latency_seconds histogram");
    ASSERT(strstr(t, "# HELP baton_grants_total ") != NULL);
    /* Every line is a comment or a sample "name[{labels}] value". */
    for (const char *p = t; *p; p = strchr(p, '\n') + 1) {
        ASSERT(strncmp(p, "baton_", 6) == 0 || strncmp(p, "# HELP baton_", 13) == 0 ||
               strncmp(p, "# TYPE baton_", 13) == 0);
    }
}

TEST(histogram_buckets_are_cumulative)
{
    const char *t;

    metrics_reset();
    metrics_observe(M_BATCH_COMMANDS, 1);     /* le=1 */
    metrics_observe(M_BATCH_COMMANDS, 3);     /* le=4 */
    metrics_observe(M_BATCH_COMMANDS, 4);     /* le=4: a bound is inclusive */
    metrics_observe(M_BATCH_COMMANDS, 5000);  /* +Inf only */
    t = render();
    ASSERT_LINE(t, "baton_batch_commands_bucket{le=\"1\"} 1");
    ASSERT_LINE(t, "baton_batch_commands_bucket{le=\"2\"} 1");
    ASSERT_LINE(t, "baton_batch_commands_bucket{le=\"4\"} 3");
    ASSERT_LINE(t, "baton_batch_commands_bucket{le=\"1024\"} 3");
    ASSERT_LINE(t, "baton_batch_commands_bucket{le=\"+Inf\"} 4");
    ASSERT_LINE(t, "baton_batch_commands_sum 5008");
    ASSERT_LINE(t, "baton_batch_commands_count 4");
    ASSERT_LINE(t, "baton_commit_latency_seconds_bucket{le=\"+Inf\"} 0");
}

TEST(labelled_counters_list_every_value)
{
    const char *t;

    metrics_reset();
    metrics_inc_label(M_ACQUIRES, ACQ_BUSY);
    metrics_inc_label(M_ACQUIRES, ACQ_BUSY);
    metrics_inc_label(M_REFUSALS, REF_PERM);
    metrics_inc_label(M_PUSHES, PUSH_WATCH_EVENT);
    t = render();
    ASSERT_LINE(t, "baton_acquires_total{outcome=\"busy\"} 2");
    ASSERT_LINE(t, "baton_acquires_total{outcome=\"granted\"} 0");
    ASSERT_LINE(t, "baton_refusals_total{reason=\"perm\"} 1");
    ASSERT_LINE(t, "baton_refusals_total{reason=\"max-conns\"} 0");
    ASSERT_LINE(t, "baton_pushes_total{type=\"watch_event\"} 1");
}

/* Escape s and return the text (static). */
static const char *esc(const char *s, size_t n)
{
    static struct buf b;

    buf_free(&b);
    ASSERT_EQ(metrics_escape_label(&b, s, n), 0);
    ASSERT_EQ(buf_put(&b, "", 1), 0);
    return (const char *)b.data;
}

TEST(label_values_are_escaped)
{
    ASSERT_STREQ(esc("jobs/1", 6), "jobs/1");
    ASSERT_STREQ(esc("a\"b\\c\nd", 7), "a\\\"b\\\\c\\nd");
    ASSERT_STREQ(esc("x\"} 1\nevil_total 9", 18), "x\\\"} 1\\nevil_total 9");
    ASSERT_STREQ(esc("100%", 4), "100%25");
    ASSERT_STREQ(esc("t\tr\r\x7f", 5), "t%09r%0D%7F");
    ASSERT_STREQ(esc("caf\xc3\xa9", 5), "caf\xc3\xa9");      /* valid UTF-8 kept */
    ASSERT_STREQ(esc("bad\xff\xc3", 5), "bad%FF%C3");        /* invalid bytes */
}

TEST(top_locks_are_bounded_and_escaped)
{
    char name[32];
    const char *t;

    metrics_reset();
    for (int i = 1; i <= 3 * METRICS_TOP_LOCKS; i++) {
        snprintf(name, sizeof name, "lock%d", i);
        metrics_top_note(name, strlen(name), (uint32_t)i);
    }
    ASSERT_EQ(metrics_top_count(), METRICS_TOP_LOCKS);
    metrics_top_note("evil\"}\n", 7, 1000);
    metrics_top_note("lock30", 6, 0); /* emptied: leaves the table */
    t = render();
    ASSERT_LINE(t, "# TYPE baton_lock_queue_length gauge");
    ASSERT_LINE(t, "baton_lock_queue_length{lock=\"evil\\\"}\\n\"} 1000");
    ASSERT_LINE(t, "baton_lock_queue_length{lock=\"lock29\"} 29");
    ASSERT(strstr(t, "lock=\"lock30\"") == NULL);
    ASSERT(strstr(t, "lock=\"lock20\"") == NULL); /* pushed out by longer queues */
    ASSERT(strstr(t, "lock=\"lock21\"") == NULL); /* the shortest, pushed out by evil */
    ASSERT_EQ(metrics_top_count(), METRICS_TOP_LOCKS - 1);
}

TEST(lock_wait_is_observed_once)
{
    const char *t;

    metrics_reset();
    metrics_wait_start(7, 3);
    metrics_wait_granted(7, 4); /* not that waiter */
    metrics_wait_granted(7, 3);
    metrics_wait_granted(7, 3); /* already observed */
    t = render();
    ASSERT_LINE(t, "baton_lock_wait_seconds_count 1");
}

/* --log-format json: one object per line; the message escaped so that
 * any bytes keep the line valid UTF-8 JSON. */
TEST(json_log_lines_escape_everything)
{
    char path[] = "/tmp/baton-log-XXXXXX", line[512];
    const char *want = "\",\"level\":\"warn\",\"node\":7,\"msg\":\"lock 'a\\\"b\\\\c\\nd"
                       "\\u0001\\ufffdcaf\xc3\xa9' gone\"}\n";
    int fd = mkstemp(path), saved = dup(2);
    FILE *f;

    ASSERT(fd >= 0 && saved >= 0);
    ASSERT(dup2(fd, 2) == 2);
    log_set_node(7);
    log_set_format(LOG_JSON);
    log_warn("lock '%s' gone", "a\"b\\c\nd\x01\xff" "caf\xc3\xa9");
    log_debug("not shown");
    ASSERT(dup2(saved, 2) == 2);
    f = fdopen(fd, "r");
    ASSERT(f != NULL);
    rewind(f);
    ASSERT(fgets(line, sizeof line, f) != NULL);
    ASSERT(strncmp(line, "{\"time\":\"", 9) == 0);
    if (strstr(line, want) == NULL) FAIL("line: %s", line);
    ASSERT(fgets(line, sizeof line, f) == NULL);
    fclose(f);
    unlink(path);
    close(saved);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(types_and_suffixes);
    RUN(histogram_buckets_are_cumulative);
    RUN(labelled_counters_list_every_value);
    RUN(label_values_are_escaped);
    RUN(top_locks_are_bounded_and_escaped);
    RUN(lock_wait_is_observed_once);
    RUN(json_log_lines_escape_everything);
    return runner_done();
}
