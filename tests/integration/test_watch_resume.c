/*
 * test_watch_resume.c -- a WATCH2 resumed on a new leader (docs/design.md,
 * "Watches"), with three real batond processes: every node keeps the
 * change history, so a watch that reconnects to the node that took over
 * after the leader was killed, with `after` = the last revision it was
 * sent, gets SYNCED with restarted 0 and nothing else when its lock did
 * not change meanwhile (no false restart), a GAP with the state now when
 * it did, and from there on every change, with rising revisions.
 */
#include <signal.h>
#include <string.h>

#include "baton/baton.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/runner.h"
#include "tests/lib/tls_sock.h"

/* A raw connection to node i, through HELLO. */
static void raw_connect(struct cluster *c, int i, struct tls_sock *s)
{
    struct tls_sock_cfg cfg;

    cluster_sock_cfg(c, &cfg);
    if (tls_sock_connect(s, c->nodes[i].client_port, &cfg, 5000) != 0)
        FAIL("connect to node %d: %s", i + 1, s->err);
    if (tls_sock_hello(s, NULL, NULL) != 0) FAIL("hello: %s", s->err);
}

static void watch2(struct tls_sock *s, uint64_t req_id, const char *name, uint64_t after)
{
    struct msg m = {.type = MSG_WATCH2, .req_id = req_id};

    m.u.watch2.key = (struct pstr){name, strlen(name)};
    m.u.watch2.after = after;
    if (tls_sock_send_msg(s, &m) != 0) FAIL("watch2: %s", s->err);
}

/*
 * The next event of watch req_id other than PROGRESS (whose revision goes
 * to *last): its kind, its revision in *rev, and for SYNCED its restarted
 * flag in *restarted. Only one watch per connection is read here, so the
 * message is used before the next read (tls_sock's frames move).
 */
static int next_event(struct tls_sock *s, uint64_t req_id, uint64_t *rev, int *restarted,
                      uint64_t *last)
{
    struct msg m;

    for (;;) {
        int kind;
        if (tls_sock_recv_msg(s, &m, 10000) != 0) FAIL("no event: %s", s->err);
        if (m.type == MSG_ERROR)
            FAIL("ERROR %d: %.*s", m.u.error.code, (int)m.u.error.message.n, m.u.error.message.p);
        if (m.type != MSG_WATCH2_EVENT || m.req_id != req_id) {
            msg_free(&m);
            continue;
        }
        kind = m.u.watch2_event.kind;
        *rev = m.u.watch2_event.state.revision;
        if (restarted != NULL) *restarted = m.u.watch2_event.restarted;
        msg_free(&m);
        if (kind != WATCH2_PROGRESS) return kind;
        if (*rev > *last) *last = *rev;
    }
}

/* Lock and unlock name through the client: two changes. */
static void lock_unlock(baton_t *b, const char *name)
{
    baton_lock_t *l;

    if (baton_lock(b, name, &l) != 0) FAIL("lock %s: %s", name, baton_errmsg(b));
    if (baton_unlock(l) != 0) FAIL("unlock %s: %s", name, baton_errmsg(b));
}

TEST(resume_on_a_new_leader_without_a_false_restart)
{
    struct cluster c;
    struct tls_sock s, g;
    baton_opts o = {.client_name = "watch-resume"};
    baton_t *b;
    uint64_t last_w = 0, last_g = 0, rev = 0;
    int leader, next, restarted = -1;

    ASSERT_EQ(cluster_start(&c, 3), 0);
    leader = cluster_wait_leader(&c, 15000);
    ASSERT_GE(leader, 0);
    cluster_client_opts(&c, &o);
    b = client_connect(&o);

    /* Two watches on the leader, each on a connection of its own. */
    raw_connect(&c, leader, &s);
    raw_connect(&c, leader, &g);
    watch2(&s, 1, "w", 0);
    watch2(&g, 2, "g", 0);
    ASSERT_EQ(next_event(&s, 1, &rev, NULL, &last_w), WATCH2_STATE);
    ASSERT_EQ(next_event(&s, 1, &last_w, &restarted, &last_w), WATCH2_SYNCED);
    ASSERT_EQ(next_event(&g, 2, &rev, NULL, &last_g), WATCH2_STATE);
    ASSERT_EQ(next_event(&g, 2, &last_g, &restarted, &last_g), WATCH2_SYNCED);
    lock_unlock(b, "w");
    for (int i = 0; i < 2; i++) { /* the lock, then the unlock */
        ASSERT_EQ(next_event(&s, 1, &rev, NULL, &last_w), WATCH2_CHANGE);
        ASSERT_GT(rev, last_w);
        last_w = rev;
    }

    /* The leader dies; another takes over. */
    ASSERT_EQ(cluster_kill(&c, leader, SIGKILL), 128 + SIGKILL);
    tls_sock_close(&s);
    tls_sock_close(&g);
    next = cluster_wait_leader(&c, 20000);
    ASSERT_GE(next, 0);
    ASSERT_NE(next, leader);
    lock_unlock(b, "g"); /* g changes while its watch is away; w does not */

    /* w: nothing changed since its last revision -> SYNCED alone. */
    raw_connect(&c, next, &s);
    watch2(&s, 3, "w", last_w);
    ASSERT_EQ(next_event(&s, 3, &rev, &restarted, &last_w), WATCH2_SYNCED);
    ASSERT_EQ(restarted, 0);
    ASSERT_GE(rev, last_w);
    last_w = rev;
    /* g: changed -> GAP with its state now, then SYNCED. */
    raw_connect(&c, next, &g);
    watch2(&g, 4, "g", last_g);
    ASSERT_EQ(next_event(&g, 4, &rev, NULL, &last_g), WATCH2_GAP);
    ASSERT_EQ(next_event(&g, 4, &rev, &restarted, &last_g), WATCH2_SYNCED);
    ASSERT_EQ(restarted, 0);

    /* And every change of w from there, revisions rising. */
    lock_unlock(b, "w");
    for (int i = 0; i < 2; i++) {
        ASSERT_EQ(next_event(&s, 3, &rev, NULL, &last_w), WATCH2_CHANGE);
        ASSERT_GT(rev, last_w);
        last_w = rev;
    }
    tls_sock_close(&s);
    tls_sock_close(&g);
    baton_close(b);
    ASSERT_EQ(cluster_stop(&c), 0);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(120);
    RUN(resume_on_a_new_leader_without_a_false_restart);
    return runner_done();
}
