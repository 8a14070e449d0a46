/*
 * nemesis_hostile.c -- the hostile-* faults: an authenticated client of
 * the principal "faultflood" floods one node for a few seconds
 * (faultflood, flood.c, which logs what it sent and what came back to
 * flood.log):
 *
 *   hostile-cache     one session that never acknowledges: at most
 *                     BATON_MAX_UNACKED requests may run, the rest
 *                     RESULT(BATON_ELIMIT) -- the leader
 *   hostile-reads     thousands of LIST_SESSIONS, LIST_LOCKS, LOCK_INFO
 *                     pipelined in one write -- the leader, or a follower
 *                     one time in three
 *   hostile-sessions  sessions until the principal's cap (FLOOD_SESSION_CAP)
 *                     refuses with ERROR(BATON_ELIMIT); another principal
 *                     still opens one -- the leader
 *   hostile-prehello  connections sending 1 MiB frames before HELLO, and
 *                     connections trickling a byte at a time -- the
 *                     leader, or a follower one time in three
 *
 * The leader's term before and after is compared and logged as the
 * stall-leader fault does ("kept" / "LOST leadership") and counted in
 * faultrun's summary; after hostile-cache every node's data.mdb size,
 * before and after, is a NOTE line (check_flood.c bounds its growth).
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/fault/flog.h"
#include "tests/fault/nemesis.h"
#include "tests/fault/run.h"

/* The term node i reports, or 0. */
static uint64_t term_of(struct run *r, int i)
{
    struct cluster_status st;

    return cluster_node_status(&r->c, i, &st, 2000) == 0 ? st.term : 0;
}

/* The size of node i's lock store file, or -1. */
static long long mdb_size(struct run *r, int i)
{
    char path[PATH_MAX + 16];
    struct stat st;

    snprintf(path, sizeof path, "%s/fsm/data.mdb", r->c.nodes[i].dir);
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* Run faultflood KIND against node t; 0, or -1 (a harness error). */
static int run_flood(struct run *r, const char *kind, int t)
{
    char path[PATH_MAX + 32], logp[PATH_MAX + 32], errp[PATH_MAX + 32], port[16], id[16],
        cap[16], ca[PATH_MAX + 64];
    const char *argv[] = {path,      "--flood",       kind,   "--port",  port,
                          "--node",  id,              "--cacert", ca,   "--token",
                          r->flood_token, "--other-token", r->client_token, "--cap", cap,
                          "--log",   logp,            NULL};
    pid_t pid;
    int code;

    snprintf(path, sizeof path, "%s/faultflood", r->tools);
    snprintf(logp, sizeof logp, "%s/flood.log", r->dir);
    snprintf(errp, sizeof errp, "%s/flood.err", r->dir);
    snprintf(port, sizeof port, "%d", r->c.nodes[t].client_port);
    snprintf(id, sizeof id, "%u", r->c.nodes[t].id);
    snprintf(cap, sizeof cap, "%d", FLOOD_SESSION_CAP);
    snprintf(ca, sizeof ca, "%s", cluster_cert(&r->c, "ca", 0));
    pid = proc_spawn_files(argv, NULL, errp);
    if (pid < 0) return -1;
    code = proc_wait(pid, 300000);
    if (code < 0) proc_stop(pid, SIGKILL, 5000);
    if (code != 0) note(r, "NOTE", "faultflood %s exited %d (see flood.err)", kind, code);
    return code == 0 ? 0 : -1;
}

void fault_hostile(struct run *r, enum fault_kind k, int l)
{
    static const char *const kinds[] = {"cache", "reads", "sessions", "prehello"};
    const char *kind = kinds[k - F_HOSTILE_CACHE];
    int follower = (k == F_HOSTILE_READS || k == F_HOSTILE_PREHELLO) && run_rand(r, 0, 2) == 0;
    int t = follower ? other_node(r, l) : l, nl;
    uint64_t before = term_of(r, l), after;
    long long mdb[CLUSTER_MAX_NODES];
    uint32_t lid = r->c.nodes[l].id;

    if (t < 0) t = l;
    for (int i = 0; i < r->c.n; i++) mdb[i] = mdb_size(r, i);
    note(r, "FAULT", "%s node %u (%s; leader %u, term %llu)", fault_names[k], r->c.nodes[t].id,
         t == l ? "the leader" : "a follower", lid, (unsigned long long)before);
    if (run_flood(r, kind, t) != 0) r->harness_errors++;
    sleep_ms(1000); /* a lost leadership shows once an election timeout has passed */
    nl = leader(r, 15000);
    after = nl >= 0 ? term_of(r, nl) : 0;
    if (k == F_HOSTILE_CACHE)
        for (int i = 0; i < r->c.n; i++)
            note(r, "NOTE", "%s data.mdb node %u %lld -> %lld bytes", fault_names[k],
                 r->c.nodes[i].id, mdb[i], mdb_size(r, i));
    if (nl == l && after == before && before != 0) {
        r->floods_kept++;
        note(r, "HEAL", "%s node %u: leader %u kept leadership (term %llu)", fault_names[k],
             r->c.nodes[t].id, lid, (unsigned long long)after);
    } else {
        r->floods_lost++;
        note(r, "HEAL", "%s node %u: leader %u LOST leadership: term %llu -> %llu, leader %u",
             fault_names[k], r->c.nodes[t].id, lid, (unsigned long long)before,
             (unsigned long long)after, nl >= 0 ? r->c.nodes[nl].id : 0);
    }
}
