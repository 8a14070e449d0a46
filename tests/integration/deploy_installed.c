/*
 * deploy_installed.c -- a cluster run the way an operator runs one: the
 * binaries `make install` put into a DESTDIR, one config file per node,
 * addresses by host name, metrics scraped over HTTP, a backup restored
 * into a new cluster, and a rolling restart under load.
 *
 * tests/check-deploy.sh installs into a fresh DESTDIR and runs this with
 * BATON_BUILD naming a directory whose batond and batonctl are links to
 * the installed ones (so the harness starts those). Everything but
 * systemd itself is exercised; the unit is checked by
 * tests/check-install.sh (systemd-analyze verify).
 *
 *  1. installed_nodes_from_config_files: three nodes started as
 *     `batond --config nodeN.conf` alone (the harness writes every flag
 *     into the file: cluster_opts.config_file), every address `localhost`,
 *     each with --metrics-addr. The installed batonctl reaches them by
 *     name (status, lock -- CMD); libbaton locks through endpoints that
 *     are names; every node's /metrics, /healthz and /readyz answer over
 *     HTTP, and the grants counter moves with the traffic. Then a rolling
 *     restart (SIGTERM, restart, caught up, next) of all three nodes while
 *     a client locks and unlocks (tests/lib/workload.h): no call fails,
 *     no lock is lost, the session survives, fences only go up.
 *  2. backup_restored_by_installed_batond: `batonctl snapshot save` from
 *     the installed binaries, `batond --restore` into a new cluster that
 *     then runs from config files; the held lock and its queue are there.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/files.h"
#include "tests/lib/scrape.h"
#include "tests/lib/runner.h"
#include "tests/lib/workload.h"

#define TTL_MS 10000

static const struct cluster_opts deployed = {
    .host = "localhost", .metrics = 1, .config_file = 1};

static baton_t *connect_to(struct cluster *c, const char *name)
{
    baton_opts o = {.client_name = name, .session_ttl_ms = TTL_MS};

    cluster_client_opts(c, &o);
    return client_connect(&o);
}

/* /path of node i must answer `want` within 15 s. */
static void wait_http(struct cluster *c, int i, const char *path, int want)
{
    int64_t deadline = now_ms() + 15000;
    int code;

    for (;;) {
        char *body = NULL;
        code = http_get(c->nodes[i].metrics_port, path, &body);
        free(body);
        if (code == want) return;
        if (now_ms() > deadline) FAIL("node %d: %s answered %d, not %d", i + 1, path, code, want);
        sleep_ms(50);
    }
}

TEST(installed_nodes_from_config_files)
{
    struct cluster c;
    struct ctl_result r;
    /* The load of the rolling restart: one worker, one lock. */
    struct workload w = {.n_workers = 1, .n_locks = 1, .prefix = "roll", .lock_wait_ms = 30000};
    baton_t *b;
    baton_lock_t *l;
    char *text;
    double grants_before, grants_after;
    int lead;

    ASSERT_EQ(cluster_start_opts(&c, 3, &deployed), 0);
    ASSERT_GE(lead = cluster_wait_leader(&c, 15000), 0);
    ASSERT(strstr(cluster_endpoints(&c), "localhost:") != NULL);

    /* The installed batonctl, by name. */
    ASSERT_EQ(cluster_ctl(&c, &r, "status", NULL), 0);
    ASSERT(strstr(r.out, "leader") != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "lock", "deploy/ctl", "--", "true", NULL), 0);
    ctl_result_free(&r);

    /* Metrics over HTTP: every node up and ready; grants move. */
    for (int i = 0; i < 3; i++) {
        wait_http(&c, i, "/healthz", 200);
        wait_http(&c, i, "/readyz", 200);
    }
    ASSERT_EQ(http_get(c.nodes[lead].metrics_port, "/metrics", &text), 200);
    grants_before = scrape_value(text, "baton_grants_total");
    free(text);
    ASSERT_GE(grants_before, 1);
    b = connect_to(&c, "deploy-client");
    for (int i = 0; i < 10; i++) {
        ASSERT_EQ(baton_lock(b, "deploy/lib", &l), 0);
        ASSERT_EQ(baton_unlock(l), 0);
    }
    ASSERT_EQ(http_get(c.nodes[lead].metrics_port, "/metrics", &text), 200);
    grants_after = scrape_value(text, "baton_grants_total");
    free(text);
    ASSERT_GE(grants_after, grants_before + 10);

    baton_close(b);

    /* A rolling restart under load: each node stopped with SIGTERM,
     * started again from its config file, caught up, then the next. The
     * worker's session (the same options as connect_to's) survives it. */
    cluster_client_opts(&c, &w.opts);
    w.opts.client_name = "deploy-roll";
    w.opts.session_ttl_ms = TTL_MS;
    workload_start(&w);
    sleep_ms(300);
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(cluster_kill(&c, i, SIGTERM), 0);
        ASSERT_EQ(cluster_restart(&c, i), 0);
        ASSERT_EQ(cluster_wait_caught_up(&c, i, 20000), 0);
        sleep_ms(300);
    }
    workload_stop(&w);
    printf("# rolling restart: %ld cycles, %d errors, %d violations, %d lost\n",
           atomic_load(&w.cycles), atomic_load(&w.errors), atomic_load(&w.violations),
           atomic_load(&w.lost));
    ASSERT_EQ(atomic_load(&w.errors), 0);
    ASSERT_EQ(atomic_load(&w.violations), 0);
    ASSERT_EQ(atomic_load(&w.lost), 0);
    ASSERT_GT(atomic_load(&w.cycles), 0);
    ASSERT_GT(w.workers[0].session_before, 0);
    ASSERT_UEQ(w.workers[0].session_after, w.workers[0].session_before);
    ASSERT_EQ(cluster_digests_agree(&c, 20000), 0);
    ASSERT_EQ(cluster_stop(&c), 0);
}

TEST(backup_restored_by_installed_batond)
{
    struct cluster a, b;
    struct cluster_opts ro = deployed;
    struct ctl_result r;
    baton_t *holder, *waiter, *after;
    baton_lock_t *held, *l;
    char path[512];
    int64_t fence;

    snprintf(path, sizeof path, "%s/deploy.snap", suite_dir());
    ASSERT_EQ(cluster_start_opts(&a, 3, &deployed), 0);
    ASSERT_GE(cluster_wait_leader(&a, 15000), 0);
    holder = connect_to(&a, "holder");
    waiter = connect_to(&a, "waiter");
    ASSERT_EQ(baton_lock(holder, "deploy/held", &held), 0);
    fence = (int64_t)baton_lock_fence(held);
    ASSERT_EQ(baton_trylock(waiter, "deploy/held", &l), BATON_EWOULDBLOCK);
    ASSERT_EQ(cluster_ctl(&a, &r, "snapshot", "save", path, NULL), 0);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(NULL, &r, "snapshot", "info", path, NULL), 0);
    ASSERT(strstr(r.out, "(checked)") != NULL);
    ctl_result_free(&r);
    ASSERT_EQ(baton_unlock(held), 0); /* the file keeps it held */
    baton_close(waiter);
    baton_close(holder);
    ASSERT_EQ(cluster_stop(&a), 0);

    ro.restore = path;
    ASSERT_EQ(cluster_start_opts(&b, 3, &ro), 0);
    ASSERT_GE(cluster_wait_leader(&b, 15000), 0);
    ASSERT_EQ(cluster_lock_i64(&b, "deploy/held", "fence"), fence);
    after = connect_to(&b, "after");
    ASSERT_EQ(baton_lock(after, "deploy/new", &l), 0);
    ASSERT_GT((int64_t)baton_lock_fence(l), fence);
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(after);
    ASSERT_EQ(cluster_stop(&b), 0);
}

int main(int argc, char **argv)
{
    int rv;

    suite_dir_init("baton-deploy");
    runner_init(argc, argv);
    runner_set_timeout(180);
    RUN(installed_nodes_from_config_files);
    RUN(backup_restored_by_installed_batond);
    rv = runner_done();
    suite_dir_done();
    return rv;
}
