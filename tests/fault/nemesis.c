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
 *   transfer-leader    batonctl transfer-leader, to a node picked at random
 *                      or the one raft picks
 *
 * and, in files of their own, SIGSTOPped followers and short stalls of the
 * leader (nemesis_pause.c), clients cut off from some nodes, a client that
 * reaches only a deposed leader (nemesis_net.c), slow and failing disks
 * (nemesis_disk.c), floods of a hostile authenticated client
 * (nemesis_hostile.c), a rolling upgrade past a node of a lower feature
 * level (nemesis_upgrade.c). The README in this directory has the table.
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
#include "tests/fault/nemesis.h"
#include "tests/lib/files.h"
#include "tests/lib/rng.h"

const char *const fault_names[F_COUNT] = {
    "kill-leader", "kill-follower", "stop-leader", "stop-client", "partition-leader",
    "partition-follower", "restart-all", "member", "force-release", "expire",
    /* pauses, operator, client partitions, disks */
    "stop-follower", "stale-follower", "stall-leader", "transfer-leader", "partition-client",
    "deposed-leader", "disk-slow", "disk-fail", "disk-fail-leader",
    /* a hostile authenticated client (nemesis_hostile.c) */
    "hostile-cache", "hostile-reads", "hostile-sessions", "hostile-prehello",
    /* a rolling upgrade past a node of a lower feature level (nemesis_upgrade.c) */
    "upgrade",
    /* a leading campaigner killed or cut off (nemesis_elect.c) */
    "kill-elect", "partition-elect",
};

/* Uniform in [lo, hi], from the run's seed (xorshift64). */
uint64_t run_rand(struct run *r, uint64_t lo, uint64_t hi)
{
    return lo + xorshift64(&r->rng) % (hi - lo + 1);
}

/* How often each fault is picked, relative to the others (the order of
 * enum fault_kind). */
static const unsigned weight[F_COUNT] = {
    3, 1, 2, 2, 2, 1, 1, 1,
    /* force-release, expire (nemesis_admin.c) */
    2, 1,
    /* stop-follower, stale-follower, stall-leader, transfer-leader,
     * partition-client, deposed-leader, disk-slow */
    1, 1, 2, 1, 1, 2, 1,
    /* disk-fail, disk-fail-leader: libraft 0.15 cannot go on after a
     * failed write of its log (a follower would stand still for good,
     * silently), so batond fences raft at the first one and exits 74
     * saying "I/O error on the raft log" (raft/io_guard.h); the harness
     * restarts it once its disk works again (check_crashes,
     * disk_exit_expected), and it catches up. */
    1, 1,
    /* hostile-cache, hostile-reads, hostile-sessions, hostile-prehello */
    1, 1, 1, 1,
    /* upgrade */
    1,
    /* kill-elect, partition-elect */
    2, 1,
};

void note(struct run *r, const char *what, const char *fmt, ...)
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

/* Restart every node that died without being killed by us (and count it:
 * as a crash, unless it was the way out of a failing disk). */
void check_crashes(struct run *r)
{
    for (int i = 0; i < r->c.n; i++) {
        if (r->c.nodes[i].pid > 0 || r->down[i]) continue;
        if (disk_exit_expected(r, i)) {
            r->io_exits++;
            note(r, "NOTE", "node %u exited on an I/O error of its failing disk; restarting it",
                 r->c.nodes[i].id);
        } else {
            r->node_crashes++;
            note(r, "NOTE", "node %u died on its own (%s %d; see its log); restarting it",
                 r->c.nodes[i].id, r->c.nodes[i].exit_signal ? "signal" : "exit status",
                 r->c.nodes[i].exit_signal ? r->c.nodes[i].exit_signal
                                           : r->c.nodes[i].exit_code);
        }
        if (cluster_restart(&r->c, i) != 0) r->down[i] = 1;
    }
}

int leader(struct run *r, int timeout_ms)
{
    int l = cluster_wait_leader(&r->c, timeout_ms);
    check_crashes(r);
    if (l < 0) note(r, "NOTE", "no leader within %d ms", timeout_ms);
    return l;
}

int other_node(struct run *r, int not)
{
    int cand[CLUSTER_MAX_NODES], n = 0;

    for (int i = 0; i < r->c.n; i++)
        if (i != not && r->c.nodes[i].pid > 0 && !r->down[i]) cand[n++] = i;
    return n ? cand[run_rand(r, 0, (uint64_t)n - 1)] : -1;
}

int restart_node(struct run *r, int i)
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
 * (GRANT, WRITE or WOK)? 0 no, 1 yes, 2 a multi-lock: its last GRANT line
 * follows another GRANT line (a multi-lock's are logged together, one per
 * name; two holds' never touch). */
int client_holds(struct run *r, int k)
{
    char path[PATH_MAX + 32], tail[2048], *last, *grant;
    long n;

    snprintf(path, sizeof path, "%s/client-%02d.log", r->dir, k);
    if ((n = read_tail(path, tail, sizeof tail)) < 0) return 0;
    if (n > 0 && tail[n - 1] == '\n') tail[n - 1] = '\0';
    last = strrchr(tail, '\n');
    last = last ? last + 1 : tail;
    if (!strstr(last, " GRANT ") && !strstr(last, " WRITE ") && !strstr(last, " WOK ")) return 0;
    for (grant = last; grant > tail && !strstr(grant, " GRANT ");) { /* back to the last GRANT */
        grant[-1] = '\0';
        grant = strrchr(tail, '\n');
        grant = grant ? grant + 1 : tail;
    }
    if (grant == tail || !strstr(grant, " GRANT ")) return 1;
    grant[-1] = '\0';
    last = strrchr(tail, '\n');
    last = last ? last + 1 : tail;
    return strstr(last, " GRANT ") ? 2 : 1;
}

const char *holds_note(int held)
{
    return held == 2 ? " (holding a multi-lock)" : held ? " (holding a lock)" : "";
}

int pick_client(struct run *r, const int *cand, int n)
{
    int holders[RUN_MAX_CLIENTS], multi[RUN_MAX_CLIENTS], nh = 0, nm = 0;

    if (n == 0) return -1;
    if (run_rand(r, 0, 4) > 0)
        for (int k = 0; k < n; k++) {
            int h = r->clients[cand[k]] > 0 ? client_holds(r, cand[k]) : 0;
            if (h) holders[nh++] = cand[k];
            if (h == 2) multi[nm++] = cand[k];
        }
    if (nm && run_rand(r, 0, 1) == 0) return multi[run_rand(r, 0, (uint64_t)nm - 1)];
    return nh ? holders[run_rand(r, 0, (uint64_t)nh - 1)] : cand[run_rand(r, 0, (uint64_t)n - 1)];
}

/* The client to stop: usually one that holds a lock (its session expires
 * while it holds it, which is the case worth testing), else any. */
static int client_to_stop(struct run *r)
{
    int all[RUN_MAX_CLIENTS];

    for (int k = 0; k < r->n_clients; k++) all[k] = k;
    return pick_client(r, all, r->n_clients);
}

static void fault_stop_client(struct run *r)
{
    int k = client_to_stop(r), held;
    unsigned ms = r->ttl_ms + (unsigned)run_rand(r, 500, 2500);

    if (r->clients[k] <= 0) return;
    kill(r->clients[k], SIGSTOP);
    r->client_stopped[k] = 1;
    held = client_holds(r, k);
    note(r, "FAULT", "stop-client c%d for %u ms%s", k, ms,
         holds_note(held));
    sleep_ms(ms);
    kill(r->clients[k], SIGCONT);
    r->client_stopped[k] = 0;
    note(r, "HEAL", "stop-client c%d continued", k);
}

void isolate(struct run *r, int iso)
{
    uint32_t id = r->c.nodes[iso].id;
    char cmd[64];

    for (int j = 0; j < r->c.n; j++) {
        if (j == iso) continue;
        snprintf(cmd, sizeof cmd, "cut %u %u", id, r->c.nodes[j].id);
        proxy_command(r, cmd);
        snprintf(cmd, sizeof cmd, "cut %u %u", r->c.nodes[j].id, id);
        proxy_command(r, cmd);
    }
}

static void fault_partition(struct run *r, enum fault_kind k, int l)
{
    int iso = k == F_PART_LEADER ? l : other_node(r, l);
    unsigned ms = (unsigned)run_rand(r, 1500, 5000);
    uint32_t id;

    if (iso < 0) return;
    id = r->c.nodes[iso].id;
    note(r, "FAULT", "%s node %u cut off for %u ms", fault_names[k], id, ms);
    isolate(r, iso);
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
 * list again (it has state then, so it does not bootstrap). member_out
 * and member_in are its halves (the upgrade fault puts a binary of a
 * lower feature level between them: nemesis_upgrade.c).
 */
int member_out(struct run *r, int t, const char *kind)
{
    int rv;
    char id[16], err[256];
    struct cluster_node *nd = &r->c.nodes[t];

    snprintf(id, sizeof id, "%u", nd->id);
    rv = ctl_status(r, (const char *[]){"member", "remove", id, "--timeout", "20000", NULL}, err,
                    sizeof err);
    if (rv == 70 && strstr(err, "still catching up") != NULL) {
        /* The leader refused because the voters left would hold no
         * caught-up majority (raft/node.c, remove_keeps_quorum): the
         * right answer, not a harness problem. */
        note(r, "HEAL", "%s node %u: removal refused while a member catches up", kind, nd->id);
        return -1;
    }
    if (rv != 0) {
        r->harness_errors++;
        note(r, "HEAL", "%s node %u: not removed, left as it was", kind, nd->id);
        return -1;
    }
    member_wipe(r, t);
    return 0;
}

void member_wipe(struct run *r, int t)
{
    struct cluster_node *nd = &r->c.nodes[t];

    r->down[t] = 1;
    if (nd->pid > 0) cluster_kill(&r->c, t, SIGTERM);
    rm_rf(nd->dir); /* its data: it comes back empty */
    mkdir(nd->dir, 0755);
    nd->joined = 1;
}

int member_in(struct run *r, int t)
{
    int ok = 0;
    char id[16], addrs[64];
    struct cluster_node *nd = &r->c.nodes[t];

    snprintf(id, sizeof id, "%u", nd->id);
    cluster_member_addrs(&r->c, t, addrs, sizeof addrs);
    if (restart_node(r, t) == 0) {
        for (int attempt = 0; attempt < 3 && !ok; attempt++) {
            if (attempt) sleep_ms(1000);
            ok = ctl(r, (const char *[]){"member", "add", id, addrs, "--timeout", "30000",
                                         NULL}) == 0;
        }
    }
    nd->joined = 0;
    if (!ok) r->harness_errors++;
    return ok ? 0 : -1;
}

static void fault_member(struct run *r, int l)
{
    int t = other_node(r, l);
    uint32_t id;

    if (t < 0) return;
    id = r->c.nodes[t].id;
    note(r, "FAULT", "member node %u: remove, wipe its data, add it back", id);
    if (member_out(r, t, "member") != 0) return;
    upgrade_replaced(r, t);
    note(r, "HEAL", "member node %u %s", id,
         member_in(r, t) == 0 ? "is a voter again" : "could NOT be added back");
}

/*
 * An operator hands leadership on (batonctl transfer-leader): to a node
 * picked at random, or, one time in three, to the one raft picks. The
 * term must change and another node lead; a refusal while the target
 * catches up is the right answer, not a harness problem.
 */
static void fault_transfer(struct run *r, int l)
{
    int t = run_rand(r, 0, 2) == 0 ? -1 : other_node(r, l);
    char id[16] = "";
    struct cluster_status before, after;
    int rv, nl;

    if (cluster_node_status(&r->c, l, &before, 2000) != 0) before.term = 0;
    if (t >= 0) snprintf(id, sizeof id, "%u", r->c.nodes[t].id);
    note(r, "FAULT", "transfer-leader from node %u to %s", r->c.nodes[l].id, t >= 0 ? id : "any");
    rv = ctl_status(r, t >= 0 ? (const char *[]){"transfer-leader", id, NULL}
                              : (const char *[]){"transfer-leader", NULL},
                    NULL, 0);
    nl = leader(r, 15000);
    if (nl >= 0 && cluster_node_status(&r->c, nl, &after, 2000) == 0)
        note(r, "HEAL", "transfer-leader %s: node %u leads in term %llu (was node %u, term %llu)",
             rv == 0 ? "done" : "refused", r->c.nodes[nl].id, (unsigned long long)after.term,
             r->c.nodes[l].id, (unsigned long long)before.term);
    else
        note(r, "HEAL", "transfer-leader %s: no leader yet", rv == 0 ? "done" : "refused");
}

unsigned nemesis_default_faults(void)
{
    unsigned set = 0;

    for (int k = 0; k < F_COUNT; k++)
        if (weight[k] > 0) set |= 1u << k;
    return set;
}

static enum fault_kind pick(struct run *r)
{
    unsigned total = 0, x;

    for (int k = 0; k < F_COUNT; k++)
        if (r->faults_enabled & (1u << k)) total += weight[k] ? weight[k] : 1;
    x = (unsigned)run_rand(r, 0, total - 1);
    for (int k = 0; k < F_COUNT; k++) {
        unsigned w = weight[k] ? weight[k] : 1;
        if (!(r->faults_enabled & (1u << k))) continue;
        if (x < w) return (enum fault_kind)k;
        x -= w;
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
        if (r->old_node >= 0) upgrade_watch(r);
        /* A cluster held at level 1 by the upgrade fault's old node does
         * not bound a session's cached results yet (the bound holds from
         * level 2: storage/store.h, STORE_LEVEL_CACHED_BOUND), so
         * hostile-cache waits for the upgrade (enabled, as old_node says:
         * the loop ends). */
        do
            k = pick(r);
        while (k == F_HOSTILE_CACHE && r->old_node >= 0);
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
        case F_STOP_FOLLOWER: fault_stop_follower(r, l); break;
        case F_STALE_FOLLOWER: fault_stale_follower(r, l); break;
        case F_STALL_LEADER: fault_stall_leader(r, l); break;
        case F_TRANSFER: fault_transfer(r, l); break;
        case F_PART_CLIENT: fault_partition_client(r, l); break;
        case F_DEPOSED: fault_deposed_leader(r, l); break;
        case F_DISK_SLOW:
        case F_DISK_FAIL:
        case F_DISK_FAIL_LEADER: fault_disk(r, k, l); break;
        case F_HOSTILE_CACHE:
        case F_HOSTILE_READS:
        case F_HOSTILE_SESSIONS:
        case F_HOSTILE_PREHELLO: fault_hostile(r, k, l); break;
        case F_UPGRADE: fault_upgrade(r, l); break;
        case F_KILL_ELECT: fault_kill_elect(r); break;
        case F_PART_ELECT: fault_partition_elect(r); break;
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
