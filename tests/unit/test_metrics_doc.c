/*
 * test_metrics_doc.c -- docs/operations.md ("The metrics") lists exactly
 * the metrics of server/metrics_table.h: each one once, under its
 * exposed name (a counter's with _total), with its type, and with its
 * label and the label's values as the table has them; and no other.
 *
 * Run from the source tree's top (make test does), where docs/ is.
 */
#include <stdio.h>
#include <string.h>

#include "server/metrics.h"
#include "tests/lib/runner.h"

#define DOC "docs/operations.md"
#define MAX_ROWS 128

/* One row of the doc's table: its first three cells. */
struct row {
    char name[128];
    char type[32];
    char labels[512];
};

/* Copy the cell at *p (up to the next " |") into out, trimmed; advance *p. */
static int cell(const char **p, char *out, size_t cap)
{
    const char *s = *p, *e = strstr(s, "|");
    size_t n;

    if (e == NULL) return -1;
    *p = e + 1;
    while (s < e && *s == ' ') s++;
    while (e > s && e[-1] == ' ') e--;
    n = (size_t)(e - s);
    if (n >= cap) return -1;
    memcpy(out, s, n);
    out[n] = '\0';
    return 0;
}

/* The rows of the table under "### The metrics": lines "| `baton_...". */
static size_t read_rows(struct row *rows)
{
    char line[4096];
    size_t n = 0;
    int in = 0;
    FILE *f = fopen(DOC, "r");

    if (f == NULL) FAIL("cannot open %s (run from the source tree's top)", DOC);
    while (fgets(line, sizeof line, f) != NULL) {
        const char *p = line + 1;
        char quoted[sizeof rows[0].name];

        if (line[0] == '#') in = strcmp(line, "### The metrics\n") == 0;
        if (!in || strncmp(line, "| `baton_", 9) != 0) continue;
        ASSERT(n < MAX_ROWS);
        ASSERT_EQ(cell(&p, quoted, sizeof quoted), 0);
        ASSERT(quoted[0] == '`' && quoted[strlen(quoted) - 1] == '`');
        quoted[strlen(quoted) - 1] = '\0';
        snprintf(rows[n].name, sizeof rows[n].name, "%s", quoted + 1);
        ASSERT_EQ(cell(&p, rows[n].type, sizeof rows[n].type), 0);
        ASSERT_EQ(cell(&p, rows[n].labels, sizeof rows[n].labels), 0);
        n++;
    }
    fclose(f);
    if (n == 0) FAIL("no metric rows under \"### The metrics\" in %s", DOC);
    return n;
}

/* The name /metrics exposes for id (a counter's with _total). */
static void exposed_name(enum metric_id id, char *out, size_t cap)
{
    struct metric_desc d;

    metrics_describe(id, &d);
    snprintf(out, cap, "%s%s", d.name, strcmp(d.type, "counter") == 0 ? "_total" : "");
}

/* The labels cell the doc must have for id: "", "`lock`", or
 * "`outcome`: granted, queued, ...". */
static void labels_cell(enum metric_id id, char *out, size_t cap)
{
    struct metric_desc d;
    size_t n = 0;

    metrics_describe(id, &d);
    out[0] = '\0';
    if (d.label == NULL) return;
    n += (size_t)snprintf(out + n, cap - n, "`%s`", d.label);
    for (size_t i = 0; i < d.n_values && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s", i == 0 ? ": " : ", ", d.values[i]);
    ASSERT(n < cap);
}

TEST(every_metric_is_documented_once_as_it_is)
{
    static struct row rows[MAX_ROWS];
    size_t n = read_rows(rows);
    char name[128], labels[512];
    int bad = 0;

    for (int id = 0; id < M_COUNT_; id++) {
        struct metric_desc d;
        int found = 0;

        metrics_describe((enum metric_id)id, &d);
        exposed_name((enum metric_id)id, name, sizeof name);
        labels_cell((enum metric_id)id, labels, sizeof labels);
        for (size_t i = 0; i < n; i++) {
            if (strcmp(rows[i].name, name) != 0) continue;
            found++;
            if (strcmp(rows[i].type, d.type) != 0) {
                fprintf(stderr, "# %s: type '%s' in %s, '%s' in the table\n", name,
                        rows[i].type, DOC, d.type);
                bad++;
            }
            if (strcmp(rows[i].labels, labels) != 0) {
                fprintf(stderr, "# %s: labels '%s' in %s, '%s' in the table\n", name,
                        rows[i].labels, DOC, labels);
                bad++;
            }
        }
        if (found != 1) {
            fprintf(stderr, "# %s: listed %d times in %s (once wanted)\n", name, found, DOC);
            bad++;
        }
    }
    ASSERT_EQ(bad, 0);
}

TEST(every_documented_metric_exists)
{
    static struct row rows[MAX_ROWS];
    size_t n = read_rows(rows);
    char name[128];
    int bad = 0;

    for (size_t i = 0; i < n; i++) {
        int id;

        for (id = 0; id < M_COUNT_; id++) {
            exposed_name((enum metric_id)id, name, sizeof name);
            if (strcmp(rows[i].name, name) == 0) break;
        }
        if (id == M_COUNT_) {
            fprintf(stderr, "# %s is in %s but not in server/metrics_table.h\n", rows[i].name,
                    DOC);
            bad++;
        }
    }
    ASSERT_EQ(bad, 0);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(every_metric_is_documented_once_as_it_is);
    RUN(every_documented_metric_exists);
    return runner_done();
}
