/*
 * nemesis.c -- the faults of the fault harness, one at a time, at random:
 *
 *   kill-leader / kill-follower   kill -9 a node, restart it 0.5-3 s later
 *   stop-leader        SIGSTOP the leader for 1-3 s (the election timeout
 *                      is 0.4 s), then SIGCONT
 *   stop-client        SIGSTOP a client for its ttl + 0.5-2.5 s: the cluster
 *                      expires its session and hands its lock on; woken, it
 *                      must learn it lost the lock and its stale writes must
 *                      be refused by the fenced store
 *   partition-leader   cut the leader off from both followers (raft links,
 *                      through faultproxy) for 1.5-5 s, then heal; clients
 *                      still reach every node
 *   partition-follower cut one follower off (the minority side) likewise
 *   restart-all        kill -9 every node, restart them all 0.5-2 s later
 *   member             remove a follower from the raft configuration,
 *                      wipe its data, add it back empty (fault_member)
 *   force-release, expire   an operator takes a hot lock from its holder
 *                      (nemesis_admin.c)
 *
 * Between faults the cluster gets 1-3 s of quiet. The kill faults pick the
 * leader three times as often as a follower. Each fault is written to
 * nemesis.log as "T FAULT KIND DETAIL" when it starts and "T HEAL KIND
 * DETAIL" when it is undone; the checker counts them and names the faults
 * near the longest unavailability. Anything else of note is a "T NOTE ..."
 * line.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/fault/flog.h"
#include "tests/fault/nemesis_admin.h"
#include "tests/fault/run.h"
#include "tests/lib/files.h"
#include "tests/lib/rng.h"

const char *const fault_names[F_COUNT] = {
    "kill-leader", "kill-follower", "stop-leader", "stop-client", "partition-leader",
    "partition-follower", "restart-all", "member", "force-release", "expire",
};

/* Uniform in [lo, hi], from the run's seed (xorshift64). */
static uint64_t run_rand(struct run *r, uint64_t lo, uint64_t hi)
{
    return lo + xorshift64(&r->rng) % (hi - lo + 1);
}

/* How often each fault is picked, relative to the others. */
static const unsigned weight[F_COUNT] = {3, 1, 2, 2, 2, 1, 1, 1, 2, 1};

/* Print a progress line "# +T s ..." and put it in nemesis.log. */
static void note(struct run *r, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void note(struct run *r, const char *what, const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    flog(r->nemesis, "%s %s", what, msg);
    printf("# +%.1f s %s %s\n", (double)(now_us() - r->t_start_us) / 1e6, what, msg);
    fflush(stdout);
}

void nemesis_note(struct run *r, const char *what, const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    note(r, what, "%s", msg);
}

int proxy_command(struct run *r, const char *cmd)
{
    char line[128];
    size_t len = strlen(cmd);

    if (write(r->proxy_in, cmd, len) != (ssize_t)len || write(r->proxy_in, "\n", 1) != 1 ||
        proc_read_line(r->proxy_out, line, sizeof line, 5000) != 0 || strcmp(line, "ok") != 0) {
        note(r, "NOTE", "proxy did not take '%s'", cmd);
        r->harness_errors++;
        return -1;
    }
    return 0;
}

/* Restart every node that died without being killed by us (and count it). */
static void check_crashes(struct run *r)
{
    for (int i = 0; i < r->c.n; i++) {
        if (r->c.nodes[i].pid > 0 || r->down[i]) continue;
        r->node_crashes++;
        note(r, "NOTE", "node %u died on its own (see its log); restarting it", r->c.nodes[i].id);
        if (cluster_restart(&r->c, i) != 0) r->down[i] = 1;
    }
}

/* The current leader's index, or -1 (reaps and restarts crashed nodes). */
static int leader(struct run *r, int timeout_ms)
{
    int l = cluster_wait_leader(&r->c, timeout_ms);
    check_crashes(r);
    if (l < 0) note(r, "NOTE", "no leader within %d ms", timeout_ms);
    return l;
}

/* A random running node other than `not`. */
static int other_node(struct run *r, int not)
{
    int cand[CLUSTER_MAX_NODES], n = 0;

    for (int i = 0; i < r->c.n; i++)
        if (i != not && r->c.nodes[i].pid > 0 && !r->down[i]) cand[n++] = i;
    return n ? cand[run_rand(r, 0, (uint64_t)n - 1)] : -1;
}

static int restart_node(struct run *r, int i)
{
    if (cluster_restart(&r->c, i) != 0) {
        note(r, "NOTE", "node %u did not restart", r->c.nodes[i].id);
        r->harness_errors++;
        return -1;
    }
    r->down[i] = 0;
    return 0;
}

static void fault_kill(struct run *r, enum fault_kind k, int l)
{
    int t = k == F_KILL_LEADER ? l : other_node(r, l);
    uint32_t id;

    if (t < 0) return;
    id = r->c.nodes[t].id;
    note(r, "FAULT", "%s node %u", fault_names[k], id);
    r->down[t] = 1;
    cluster_kill(&r->c, t, SIGKILL);
    sleep_ms((int64_t)run_rand(r, 500, 3000));
    restart_node(r, t);
    note(r, "HEAL", "%s node %u restarted", fault_names[k], id);
}

static void fault_stop_leader(struct run *r, int l)
{
    uint32_t id = r->c.nodes[l].id;
    unsigned ms = (unsigned)run_rand(r, 1000, 3000);

    note(r, "FAULT", "stop-leader node %u for %u ms", id, ms);
    cluster_kill(&r->c, l, SIGSTOP);
    sleep_ms(ms);
    cluster_kill(&r->c, l, SIGCONT);
    note(r, "HEAL", "stop-leader node %u continued", id);
}

/* Does client k hold a lock right now, going by the last line of its log
 * (GRANT, WRITE or WOK)? */
static int client_holds(struct run *r, int k)
{
    char path[PATH_MAX + 32], tail[256], *last;
    long n;

    snprintf(path, sizeof path, "%s/client-%02d.log", r->dir, k);
    if ((n = read_tail(path, tail, sizeof tail)) < 0) return 0;
    if (n > 0 && tail[n - 1] == '\n') tail[n - 1] = '\0';
    last = strrchr(tail, '\n');
    last = last ? last + 1 : tail;
    return strstr(last, " GRANT ") || strstr(last, " WRITE ") || strstr(last, " WOK ");
}

/* The client to stop: usually one that holds a lock (its session expires
 * while it holds it, which is the case worth testing), else any. */
static int client_to_stop(struct run *r)
{
    int holders[RUN_MAX_CLIENTS], n = 0;

    if (run_rand(r, 0, 4) > 0)
        for (int k = 0; k < r->n_clients; k++)
            if (r->clients[k] > 0 && client_holds(r, k)) holders[n++] = k;
    return n ? holders[run_rand(r, 0, (uint64_t)n - 1)]
             : (int)run_rand(r, 0, (uint64_t)r->n_clients - 1);
}

static void fault_stop_client(struct run *r)
{
    int k = client_to_stop(r);
    unsigned ms = r->ttl_ms + (unsigned)run_rand(r, 500, 2500);

    if (r->clients[k] <= 0) return;
    kill(r->clients[k], SIGSTOP);
    r->client_stopped[k] = 1;
    note(r, "FAULT", "stop-client c%d for %u ms%s", k, ms,
         client_holds(r, k) ? " (holding a lock)" : "");
    sleep_ms(ms);
    kill(r->clients[k], SIGCONT);
    r->client_stopped[k] = 0;
    note(r, "HEAL", "stop-client c%d continued", k);
}

static void fault_partition(struct run *r, enum fault_kind k, int l)
{
    int iso = k == F_PART_LEADER ? l : other_node(r, l);
    unsigned ms = (unsigned)run_rand(r, 1500, 5000);
    uint32_t id;
    char cmd[64];

    if (iso < 0) return;
    id = r->c.nodes[iso].id;
    note(r, "FAULT", "%s node %u cut off for %u ms", fault_names[k], id, ms);
    for (int j = 0; j < r->c.n; j++) {
        if (j == iso) continue;
        snprintf(cmd, sizeof cmd, "cut %u %u", id, r->c.nodes[j].id);
        proxy_command(r, cmd);
        snprintf(cmd, sizeof cmd, "cut %u %u", r->c.nodes[j].id, id);
        proxy_command(r, cmd);
    }
    sleep_ms(ms);
    proxy_command(r, "heal");
    note(r, "HEAL", "%s node %u reconnected", fault_names[k], id);
}

static void fault_restart_all(struct run *r)
{
    note(r, "FAULT", "restart-all kill -9 every node");
    for (int i = 0; i < r->c.n; i++) {
        if (r->c.nodes[i].pid <= 0) continue;
        r->down[i] = 1;
        cluster_kill(&r->c, i, SIGKILL);
    }
    sleep_ms((int64_t)run_rand(r, 500, 2000));
    for (int i = 0; i < r->c.n; i++)
        if (r->down[i]) restart_node(r, i);
    note(r, "HEAL", "restart-all every node restarted");
}

/* Run batonctl ARGS... (NULL-terminated); 0 if it exited 0, else print
 * what it said as a NOTE. */
/* Run batonctl; note a failure. Returns its exit status (0 on success) and,
 * if `err` is not NULL, the first line of its stderr. */
static int ctl_status(struct run *r, const char *const *args, char *err, size_t errlen)
{
    struct ctl_result res;
    int rv = cluster_ctlv(&r->c, 40000, &res, args);
    char *nl = strchr(res.err, '\n');

    if (nl) *nl = '\0';
    if (rv != 0) note(r, "NOTE", "batonctl %s %s: exit %d: %.150s", args[0], args[1], rv, res.err);
    if (err != NULL) snprintf(err, errlen, "%s", res.err);
    ctl_result_free(&res);
    return rv;
}

static int ctl(struct run *r, const char *const *args)
{
    return ctl_status(r, args, NULL, 0) == 0 ? 0 : -1;
}

/*
 * A membership change: take a follower out of the raft configuration
 * (batonctl member remove), stop it, wipe its data directory, start it
 * again empty with batond --join, and add it back (batonctl member add,
 * which catches it up and makes it a voter). The cluster runs on two
 * voters meanwhile. Later restarts of the node use the full --cluster
 * list again (it has state then, so it does not bootstrap).
 */
static void fault_member(struct run *r, int l)
{
    int t = other_node(r, l), ok = 0, rv;
    char id[16], addrs[64], err[256];
    struct cluster_node *nd;

    if (t < 0) return;
    nd = &r->c.nodes[t];
    snprintf(id, sizeof id, "%u", nd->id);
    cluster_member_addrs(&r->c, t, addrs, sizeof addrs);
    note(r, "FAULT", "member node %u: remove, wipe its data, add it back", nd->id);
    rv = ctl_status(r, (const char *[]){"member", "remove", id, "--timeout", "20000", NULL}, err,
                    sizeof err);
    if (rv == 70 && strstr(err, "still catching up") != NULL) {
        /* The leader refused because the voters left would hold no
         * caught-up majority (raft/node.c, remove_keeps_quorum): the
         * right answer, not a harness problem. */
        note(r, "HEAL", "member node %u: removal refused while a member catches up", nd->id);
        return;
    }
    if (rv != 0) {
        r->harness_errors++;
        note(r, "HEAL", "member node %u: not removed, left as it was", nd->id);
        return;
    }
    r->down[t] = 1;
    cluster_kill(&r->c, t, SIGTERM);
    rm_rf(nd->dir); /* its data: it comes back empty */
    mkdir(nd->dir, 0755);
    nd->joined = 1;
    if (restart_node(r, t) == 0) {
        for (int attempt = 0; attempt < 3 && !ok; attempt++) {
            if (attempt) sleep_ms(1000);
            ok = ctl(r, (const char *[]){"member", "add", id, addrs, "--timeout", "30000",
                                         NULL}) == 0;
        }
    }
    nd->joined = 0;
    if (!ok) r->harness_errors++;
    note(r, "HEAL", "member node %u %s", nd->id, ok ? "is a voter again" : "could NOT be added back");
}

static enum fault_kind pick(struct run *r)
{
    unsigned total = 0, x;

    for (int k = 0; k < F_COUNT; k++)
        if (r->faults_enabled & (1u << k)) total += weight[k];
    x = (unsigned)run_rand(r, 0, total - 1);
    for (int k = 0; k < F_COUNT; k++) {
        if (!(r->faults_enabled & (1u << k))) continue;
        if (x < weight[k]) return (enum fault_kind)k;
        x -= weight[k];
    }
    return F_KILL_LEADER;
}

void nemesis_run(struct run *r, int64_t deadline_us)
{
    while (now_us() < deadline_us) {
        enum fault_kind k;
        int l;

        sleep_ms((int64_t)run_rand(r, 1000, 3000));
        if (now_us() >= deadline_us) break;
        l = leader(r, 15000);
        if (l < 0) continue;
        k = pick(r);
        r->n_faults[k]++;
        switch (k) {
        case F_KILL_LEADER:
        case F_KILL_FOLLOWER: fault_kill(r, k, l); break;
        case F_STOP_LEADER: fault_stop_leader(r, l); break;
        case F_STOP_CLIENT: fault_stop_client(r); break;
        case F_PART_LEADER:
        case F_PART_FOLLOWER: fault_partition(r, k, l); break;
        case F_RESTART_ALL: fault_restart_all(r); break;
        case F_MEMBER: fault_member(r, l); break;
        case F_FORCE_RELEASE: fault_force_release(r); break;
        case F_EXPIRE: fault_expire(r); break;
        default: break;
        }
    }
}

void nemesis_heal_all(struct run *r)
{
    for (int i = 0; i < r->c.n; i++)
        if (r->c.nodes[i].pid > 0 && r->c.nodes[i].stopped) cluster_kill(&r->c, i, SIGCONT);
    for (int k = 0; k < r->n_clients; k++)
        if (r->clients[k] > 0 && r->client_stopped[k]) {
            kill(r->clients[k], SIGCONT);
            r->client_stopped[k] = 0;
        }
    if (r->proxy_pid > 0) proxy_command(r, "heal");
    check_crashes(r);
    for (int i = 0; i < r->c.n; i++)
        if (r->down[i]) restart_node(r, i);
}
