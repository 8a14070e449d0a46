/*
 * nemesis_elect.c -- the election workers of a fault run (elect.c) and
 * the fault aimed at them:
 *
 *   kill-elect   kill -9 a campaigner -- one that leads, if one does (the
 *                last line of its log is of a leadership) -- and start it
 *                again 0.5-2 s later. Its leadership ends without a
 *                resign or a notice: the cluster expires its session after
 *                its lease, and the next candidate leads. The checker
 *                (check_elect.c) reads the kill from the log: an
 *                incarnation that ends without END.
 *
 *   partition-elect  cut the proxied campaigner e2 -- while it leads, if
 *                it comes to lead within 3 s -- off from every node for
 *                3.5-6 s: past its lease (3 s) its library must tell it
 *                that it lost its leadership before the cluster lets the
 *                next candidate lead (the checker's lease rule, rule 12)
 *
 * RUN_ELECT_CAMPAIGNERS campaigners (e0, e1, ...) and RUN_ELECT_OBSERVERS
 * observers (o0, ...) run beside the lock workers, on the clients'
 * principal, each logging to DIR/elect-NAME.log (appended to by each
 * incarnation); e1 with a clock 0.1% slow (its lease runs long in real
 * time, within the library's margin), e2 through the client proxy, the
 * others straight to the nodes with the real clock (elect_profiles; none
 * of that with --plain).
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "tests/fault/nemesis.h"
#include "tests/lib/clock.h"
#include "tests/lib/files.h"

static void worker_name(int k, char *out, size_t cap)
{
    if (k < RUN_ELECT_CAMPAIGNERS)
        snprintf(out, cap, "e%d", k);
    else
        snprintf(out, cap, "o%d", k - RUN_ELECT_CAMPAIGNERS);
}

void elect_profiles(struct run *r)
{
    for (int k = 0; k < RUN_ELECT_WORKERS; k++) {
        r->elect_group[k] = !r->plain && k == 2 && r->n_groups < RUN_MAX_GROUPS ? r->n_groups++ : -1;
        r->elect_ppm[k] = !r->plain && k == 1 ? -1000 : 0;
    }
}

/* Start election worker k. 0 or -1. */
static int elect_spawn(struct run *r, int k)
{
    static struct client_env ce;
    char path[PATH_MAX + 32], logp[PATH_MAX + 32], errp[PATH_MAX + 32], port[16], name[16],
        ttl[16], seed[32], n_el[16], ca[PATH_MAX + 64];
    const char *argv[] = {path, "--role", k < RUN_ELECT_CAMPAIGNERS ? "campaign" : "observe",
                          "--endpoints", ce.endpoints, "--store", port,
                          "--name", name, "--log", logp, "--elections", n_el, "--ttl", ttl,
                          "--seed", seed, "--cacert", ca, "--token", r->client_token,
                          "--expect-clock-ppm", ce.expect_ppm,
                          "--expect-proxy-ports", ce.expect_ports, NULL};

    client_env(r, r->elect_group[k], r->elect_ppm[k], &ce);
    worker_name(k, name, sizeof name);
    snprintf(path, sizeof path, "%s/faultelect", r->tools);
    snprintf(logp, sizeof logp, "%s/elect-%s.log", r->dir, name);
    snprintf(errp, sizeof errp, "%s/elect-%s.err", r->dir, name);
    snprintf(port, sizeof port, "%d", r->store_port);
    snprintf(n_el, sizeof n_el, "%d", RUN_ELECTIONS);
    snprintf(ttl, sizeof ttl, "%u", r->ttl_ms);
    snprintf(seed, sizeof seed, "%" PRIu64, r->seed + 104729u * (uint64_t)(k + 1));
    snprintf(ca, sizeof ca, "%s", cluster_cert(&r->c, "ca", 0));
    r->elect[k] = proc_spawn_files_env(argv, ce.env, NULL, errp);
    return r->elect[k] > 0 ? 0 : -1;
}

int elect_start(struct run *r)
{
    if (r->no_elect) return 0;
    printf("# election workers: %d campaigners for elect0..elect%d (e1 %s, e2 %s), %d observers "
           "reading and watching them\n", RUN_ELECT_CAMPAIGNERS, RUN_ELECTIONS - 1,
           r->elect_ppm[1] ? "with a clock 0.1% slow" : "with the real clock",
           r->elect_group[2] >= 0 ? "through the client proxy" : "straight to the nodes",
           RUN_ELECT_OBSERVERS);
    for (int k = 0; k < RUN_ELECT_WORKERS; k++)
        if (elect_spawn(r, k) != 0) return -1;
    return 0;
}

void elect_stop(struct run *r)
{
    for (int k = 0; k < RUN_ELECT_WORKERS; k++)
        if (r->elect[k] > 0) kill(r->elect[k], SIGTERM);
    for (int k = 0; k < RUN_ELECT_WORKERS; k++) {
        char name[16];
        int code;

        if (r->elect[k] <= 0) continue;
        worker_name(k, name, sizeof name);
        code = proc_wait(r->elect[k], 60000);
        if (code != 0) {
            printf("# election worker %s %s (see elect-%s.err)\n", name,
                   code < 0 ? "did not stop within 60 s" : "exited with an error", name);
            r->harness_errors++;
            if (code < 0) proc_stop(r->elect[k], SIGKILL, 5000);
        }
        r->elect[k] = 0;
    }
}

void elect_kill_all(struct run *r)
{
    for (int k = 0; k < RUN_ELECT_WORKERS; k++)
        if (r->elect[k] > 0) {
            proc_stop(r->elect[k], SIGKILL, 2000);
            r->elect[k] = 0;
        }
}

/* The leadership campaigner k is in, going by the last line of its log
 * ("elect0 fence 12"), or "" if it does not lead. */
static void leading(struct run *r, int k, char *out, size_t cap)
{
    static const char *const lead_words[] = {" LEAD ", " WRITE ", " WOK ", " WREJ ", " WERR ",
                                             " PROCLAIM ", " PROCLAIMED "};
    char path[PATH_MAX + 32], tail[1024], *last, election[16];
    unsigned long long fence;
    long n;

    out[0] = '\0';
    snprintf(path, sizeof path, "%s/elect-e%d.log", r->dir, k);
    if ((n = read_tail(path, tail, sizeof tail)) <= 0) return;
    if (tail[n - 1] == '\n') tail[n - 1] = '\0';
    last = strrchr(tail, '\n');
    last = last ? last + 1 : tail;
    for (size_t i = 0; i < sizeof lead_words / sizeof *lead_words; i++) {
        const char *w = strstr(last, lead_words[i]);
        if (w == NULL) continue;
        w += strlen(lead_words[i]);
        if (i == 0) w = strchr(w, ' '); /* LEAD A ELECTION FENCE: past the attempt */
        if (w && sscanf(w, " %15s %llu", election, &fence) == 2)
            snprintf(out, cap, "%s fence %llu", election, fence);
        return;
    }
}

void fault_kill_elect(struct run *r)
{
    int cand[RUN_ELECT_CAMPAIGNERS], n = 0, k;
    char what[64] = "";

    if (r->no_elect) return;
    for (k = 0; k < RUN_ELECT_CAMPAIGNERS; k++) {
        char lead[64];
        if (r->elect[k] <= 0) continue;
        leading(r, k, lead, sizeof lead);
        if (lead[0]) cand[n++] = k;
    }
    if (n == 0) { /* nobody leads now: any campaigner */
        for (k = 0; k < RUN_ELECT_CAMPAIGNERS; k++)
            if (r->elect[k] > 0) cand[n++] = k;
        if (n == 0) return;
    }
    k = cand[run_rand(r, 0, (uint64_t)n - 1)];
    leading(r, k, what, sizeof what);
    r->elect_kills += what[0] != '\0';
    note(r, "FAULT", "kill-elect e%d%s%s", k, what[0] ? " leading " : " (not leading)", what);
    proc_stop(r->elect[k], SIGKILL, 5000);
    r->elect[k] = 0;
    sleep_ms((int64_t)run_rand(r, 500, 2000));
    if (elect_spawn(r, k) != 0) {
        note(r, "NOTE", "campaigner e%d did not restart", k);
        r->harness_errors++;
        return;
    }
    note(r, "HEAL", "kill-elect e%d restarted", k);
}

void fault_partition_elect(struct run *r)
{
    const int k = 2; /* the proxied campaigner (elect_profiles) */
    int64_t until = now_ms() + 3000;
    unsigned ms = (unsigned)run_rand(r, 3500, 6000);
    char what[64] = "", cmd[64];

    if (r->no_elect || r->elect_group[k] < 0 || r->elect[k] <= 0) return;
    while (now_ms() < until) { /* strike a leader */
        leading(r, k, what, sizeof what);
        if (what[0]) break;
        sleep_ms(5);
    }
    note(r, "FAULT", "partition-elect e%d cut off from every node for %u ms%s%s", k, ms,
         what[0] ? " leading " : " (not leading)", what);
    for (int i = 0; i < r->c.n; i++) {
        snprintf(cmd, sizeof cmd, "ccut %d %u", r->elect_group[k], r->c.nodes[i].id);
        proxy_command(r, cmd);
    }
    sleep_ms(ms);
    proxy_command(r, "heal");
    note(r, "HEAL", "partition-elect e%d reconnected", k);
}
