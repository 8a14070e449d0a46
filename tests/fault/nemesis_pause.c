/*
 * nemesis_pause.c -- the nemesis's faults that pause nodes (SIGSTOP,
 * SIGCONT) rather than kill them:
 *
 *   stop-follower   SIGSTOP a follower for 1-4 s: the other two go on, and
 *                   the stopped one must catch up when it wakes (heartbeats
 *                   and entries it missed, maybe a snapshot)
 *   stale-follower  the follower with a stale tail around an election: stop
 *                   follower F, let the leader commit 1-2.5 s more with the
 *                   other follower, then kill -9 the leader or cut it off,
 *                   and wake F 0-400 ms later, while the survivors elect.
 *                   F's log is behind, so only the other follower may win
 *                   (raft's election restriction); whatever F votes, no
 *                   committed entry may be lost. The old leader comes back
 *                   1-3 s later
 *   stall-leader    3-8 stalls of the leader's loop, 50-300 ms each (SIGSTOP,
 *                   SIGCONT), 0.2-1 s apart: shorter than the election
 *                   timeout (400 ms), so they should not cost leadership;
 *                   the term before and after is compared and the outcome
 *                   written to nemesis.log ("kept" / "LOST"), counted in
 *                   faultrun's summary
 */
#include <signal.h>

#include "tests/fault/flog.h"
#include "tests/fault/nemesis.h"

void fault_stop_follower(struct run *r, int l)
{
    int f = other_node(r, l);
    unsigned ms = (unsigned)run_rand(r, 1000, 4000);
    uint32_t id;

    if (f < 0) return;
    id = r->c.nodes[f].id;
    note(r, "FAULT", "stop-follower node %u for %u ms", id, ms);
    cluster_kill(&r->c, f, SIGSTOP);
    sleep_ms(ms);
    cluster_kill(&r->c, f, SIGCONT);
    note(r, "HEAL", "stop-follower node %u continued", id);
}

void fault_stale_follower(struct run *r, int l)
{
    int f = other_node(r, l), kill_it = (int)run_rand(r, 0, 1);
    unsigned behind = (unsigned)run_rand(r, 1000, 2500), wake = (unsigned)run_rand(r, 0, 400);
    uint32_t fid, lid = r->c.nodes[l].id;

    if (f < 0) return;
    fid = r->c.nodes[f].id;
    note(r, "FAULT", "stale-follower node %u stopped for %u ms, then leader %u %s, node %u "
         "woken %u ms later", fid, behind, lid, kill_it ? "killed" : "cut off", fid, wake);
    cluster_kill(&r->c, f, SIGSTOP);
    sleep_ms(behind);
    if (kill_it) {
        r->down[l] = 1;
        cluster_kill(&r->c, l, SIGKILL);
    } else {
        isolate(r, l);
    }
    sleep_ms(wake);
    cluster_kill(&r->c, f, SIGCONT);
    sleep_ms((int64_t)run_rand(r, 1000, 3000));
    if (kill_it)
        restart_node(r, l);
    else
        proxy_command(r, "heal");
    note(r, "HEAL", "stale-follower node %u woken, old leader %u %s", fid, lid,
         kill_it ? "restarted" : "reconnected");
}

/* The term node i reports, or 0. */
static uint64_t term_of(struct run *r, int i)
{
    struct cluster_status st;

    return cluster_node_status(&r->c, i, &st, 2000) == 0 ? st.term : 0;
}

void fault_stall_leader(struct run *r, int l)
{
    unsigned n = (unsigned)run_rand(r, 3, 8), longest = 0;
    uint64_t before = term_of(r, l), after;
    uint32_t id = r->c.nodes[l].id;
    int nl;

    note(r, "FAULT", "stall-leader node %u: %u stalls of 50-300 ms (term %llu)", id, n,
         (unsigned long long)before);
    for (unsigned k = 0; k < n; k++) {
        unsigned ms = (unsigned)run_rand(r, 50, 300);
        if (ms > longest) longest = ms;
        cluster_kill(&r->c, l, SIGSTOP);
        sleep_ms(ms);
        cluster_kill(&r->c, l, SIGCONT);
        sleep_ms((int64_t)run_rand(r, 200, 1000));
    }
    /* A lost leadership shows once an election timeout has passed. */
    sleep_ms(1000);
    nl = leader(r, 15000);
    after = nl >= 0 ? term_of(r, nl) : 0;
    if (nl == l && after == before && before != 0) {
        r->stalls_kept++;
        note(r, "HEAL", "stall-leader node %u kept leadership (term %llu; longest stall %u ms)",
             id, (unsigned long long)after, longest);
    } else {
        r->stalls_lost++;
        note(r, "HEAL", "stall-leader node %u LOST leadership: term %llu -> %llu, leader %u "
             "(longest stall %u ms)", id, (unsigned long long)before, (unsigned long long)after,
             nl >= 0 ? r->c.nodes[nl].id : 0, longest);
    }
}
