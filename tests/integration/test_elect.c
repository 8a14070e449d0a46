/*
 * test_elect.c -- values, reads, watches and elections through the blocking
 * API (include/baton/baton.h) against three real batond processes: a
 * hold's value seen by another client's linearizable read, replaced by a
 * proclaim and gone with the hold; waiters' values in the queue; a value
 * longer than --max-value; an election among three clients (FIFO,
 * resign, fences, the leader read); an observer that sees each leader in
 * order; a watch that survives the leader's kill -9 and resumes without a
 * false restart.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "baton/baton.h"
#include "storage/cmd_table.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/proc.h"
#include "tests/lib/runner.h"

static struct cluster C;

static void start3_with(const char *const *extra)
{
    struct cluster_opts o = {.extra_args = extra};

    ASSERT_EQ(cluster_start_opts(&C, 3, &o), 0);
    ASSERT_GE(cluster_wait_leader(&C, 15000), 0);
    /* Values need every voter at feature level 3, which the leader
     * raises by itself soon after it leads. */
    ASSERT_EQ(cluster_wait_gauge(&C, "baton_cluster_feature_level", CMD_LEVEL, 15000), 0);
}

static void start3(void)
{
    start3_with(NULL);
}

static baton_t *client(const char *name)
{
    baton_opts o = {.endpoints = cluster_endpoints(&C), .client_name = name,
                    .connect_timeout_ms = 15000};
    baton_t *b = NULL;
    int rv = baton_connect(&o, &b);

    if (rv != 0) FAIL("baton_connect: %s: %s", baton_err_name(rv), baton_connect_errmsg());
    return b;
}

static baton_lock_t *lock_value(baton_t *b, const char *name, const char *value)
{
    baton_lock_args a = {.wait_ms = BATON_WAIT_FOREVER, .value = value,
                         .value_len = value ? strlen(value) : 0};
    baton_lock_t *l = NULL;
    int rv = baton_lock_with(b, name, &a, &l);

    if (rv != 0) FAIL("lock %s: %s (%s)", name, baton_err_name(rv), baton_errmsg(b));
    return l;
}

static baton_lock_state *read_state(baton_t *b, const char *name)
{
    baton_lock_state *st = NULL;
    int rv = baton_lock_state_get(b, name, &st);

    if (rv != 0) FAIL("lock_state %s: %s (%s)", name, baton_err_name(rv), baton_errmsg(b));
    ASSERT(st != NULL);
    ASSERT_STREQ(st->name, name);
    return st;
}

/* value (len bytes, not NUL-terminated) is the text want (NULL: none). */
static void assert_value(const void *value, size_t len, const char *want)
{
    if (want == NULL) {
        ASSERT(value == NULL);
        ASSERT_EQ(len, 0);
        return;
    }
    ASSERT_EQ(len, strlen(want));
    ASSERT(memcmp(value, want, len) == 0);
}

/* ---- values and reads ----------------------------------------------------------- */

TEST(value_set_read_proclaimed_and_gone)
{
    baton_t *a, *b;
    baton_lock_t *l;
    baton_lock_state *st;

    start3();
    a = client("alice");
    b = client("bob");
    l = lock_value(a, "v/one", "10.0.0.1:80");
    st = read_state(b, "v/one");
    ASSERT_EQ(st->held, 1);
    ASSERT_EQ(st->n_holders, 1);
    ASSERT_EQ(st->total_holders, 1);
    ASSERT_UEQ(st->holders[0].session, baton_session_id(a));
    ASSERT_UEQ(st->holders[0].fence, baton_lock_fence(l));
    ASSERT_STREQ(st->holders[0].client_name, "alice");
    ASSERT_GT(st->holders[0].granted_revision, 0);
    ASSERT_GE(st->revision, st->holders[0].granted_revision);
    assert_value(st->holders[0].value, st->holders[0].value_len, "10.0.0.1:80");
    baton_lock_state_free(st);

    ASSERT_EQ(baton_proclaim(l, "10.0.0.2:81", 11), 0);
    st = read_state(b, "v/one"); /* linearizable: the proclaim returned first */
    assert_value(st->holders[0].value, st->holders[0].value_len, "10.0.0.2:81");
    baton_lock_state_free(st);

    ASSERT_EQ(baton_proclaim(l, NULL, 0), 0);
    st = read_state(b, "v/one");
    ASSERT_EQ(st->n_holders, 1);
    assert_value(st->holders[0].value, st->holders[0].value_len, NULL);
    baton_lock_state_free(st);

    ASSERT_EQ(baton_unlock(l), 0);
    st = read_state(b, "v/one");
    ASSERT_EQ(st->held, 0);
    ASSERT_EQ(st->n_holders, 0);
    ASSERT_EQ(st->n_waiters, 0);
    ASSERT(st->holders == NULL);
    baton_lock_state_free(st);

    /* A proclaim on a hold that is gone is refused. */
    l = lock_value(a, "v/one", "x");
    {
        baton_lock_state *s2 = read_state(b, "v/one");
        baton_lock_t *l2 = NULL;
        ASSERT_EQ(s2->n_holders, 1);
        baton_lock_state_free(s2);
        ASSERT_EQ(baton_lock_many(a, (const char *[]){"m/1", "m/2"}, 2,
                                  &(baton_lock_args){.value = "v", .value_len = 1}, &l2),
                  BATON_EINVAL);
        ASSERT(l2 == NULL);
    }
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(a);
    baton_close(b);
    ASSERT_EQ(cluster_stop(&C), 0);
}

struct waiter {
    baton_t *b;
    const char *name, *value;
    int rv;
    uint64_t fence;
    baton_lock_t *l;
};

static void *wait_thread(void *arg)
{
    struct waiter *w = arg;
    baton_lock_args a = {.wait_ms = BATON_WAIT_FOREVER, .value = w->value,
                         .value_len = strlen(w->value)};

    w->rv = baton_lock_with(w->b, w->name, &a, &w->l);
    if (w->rv == 0) w->fence = baton_lock_fence(w->l);
    return NULL;
}

/* Wait until name has n waiters (as reader r sees it). */
static void wait_waiters(baton_t *r, const char *name, uint32_t n)
{
    int64_t until = now_ms() + 15000;

    for (;;) {
        baton_lock_state *st = read_state(r, name);
        uint32_t got = st->n_waiters;
        baton_lock_state_free(st);
        if (got == n) return;
        if (now_ms() > until) FAIL("%s: %u waiters, want %u", name, got, n);
        sleep_ms(20);
    }
}

TEST(waiters_values_in_queue_order)
{
    baton_t *a = NULL, *w1, *w2;
    baton_lock_t *l;
    baton_lock_state *st;
    struct waiter x = {.name = "v/q", .value = "first"}, y = {.name = "v/q", .value = "second"};
    pthread_t tx, ty;

    start3();
    a = client("holder");
    w1 = x.b = client("w1");
    w2 = y.b = client("w2");
    l = lock_value(a, "v/q", "holding");
    ASSERT_EQ(pthread_create(&tx, NULL, wait_thread, &x), 0);
    wait_waiters(a, "v/q", 1);
    ASSERT_EQ(pthread_create(&ty, NULL, wait_thread, &y), 0);
    wait_waiters(a, "v/q", 2);
    st = read_state(a, "v/q");
    ASSERT_EQ(st->total_waiters, 2);
    ASSERT_UEQ(st->waiters[0].session, baton_session_id(w1));
    ASSERT_STREQ(st->waiters[0].client_name, "w1");
    ASSERT_EQ(st->waiters[0].wait_ms, BATON_WAIT_FOREVER);
    assert_value(st->waiters[0].value, st->waiters[0].value_len, "first");
    ASSERT_UEQ(st->waiters[1].session, baton_session_id(w2));
    assert_value(st->waiters[1].value, st->waiters[1].value_len, "second");
    assert_value(st->holders[0].value, st->holders[0].value_len, "holding");
    baton_lock_state_free(st);

    /* The head is granted and keeps the value it waited with. */
    ASSERT_EQ(baton_unlock(l), 0);
    pthread_join(tx, NULL);
    ASSERT_EQ(x.rv, 0);
    st = read_state(a, "v/q");
    ASSERT_UEQ(st->holders[0].session, baton_session_id(w1));
    assert_value(st->holders[0].value, st->holders[0].value_len, "first");
    ASSERT_EQ(st->n_waiters, 1);
    baton_lock_state_free(st);
    ASSERT_EQ(baton_unlock(x.l), 0);
    pthread_join(ty, NULL);
    ASSERT_EQ(y.rv, 0);
    ASSERT_EQ(baton_unlock(y.l), 0);
    baton_close(a);
    baton_close(w1);
    baton_close(w2);
    ASSERT_EQ(cluster_stop(&C), 0);
}

TEST(value_above_max_value_is_too_big)
{
    static const char *const extra[] = {"--max-value", "100", NULL};
    char v[BATON_MAX_VALUE + 1];
    baton_lock_args a = {.wait_ms = BATON_WAIT_TRY, .value = v, .value_len = 101};
    baton_lock_t *l = NULL;
    baton_lock_state *st;
    baton_t *b;

    memset(v, 'x', sizeof v);
    start3_with(extra);
    b = client("big");
    ASSERT_EQ(baton_lock_with(b, "v/big", &a, &l), BATON_ETOOBIG);
    ASSERT(l == NULL);
    ASSERT(strstr(baton_errmsg(b), "100") != NULL);
    /* Beyond what any cluster takes: refused before it is sent. */
    a.value_len = BATON_MAX_VALUE + 1;
    ASSERT_EQ(baton_lock_with(b, "v/big", &a, &l), BATON_ETOOBIG);
    /* --max-value itself is fine, and so is the refusal of a longer proclaim. */
    a.value_len = 100;
    ASSERT_EQ(baton_lock_with(b, "v/big", &a, &l), 0);
    ASSERT_EQ(baton_proclaim(l, v, 101), BATON_ETOOBIG);
    st = read_state(b, "v/big");
    ASSERT_EQ(st->holders[0].value_len, 100);
    baton_lock_state_free(st);
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(b);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* ---- elections -------------------------------------------------------------------- */

struct candidate {
    baton_t *b;
    const char *value;
    int rv;
    baton_lock_t *lead;
};

static void *campaign_thread(void *arg)
{
    struct candidate *c = arg;

    c->rv = baton_campaign(c->b, "elect/e", c->value, strlen(c->value), BATON_WAIT_FOREVER,
                           &c->lead);
    return NULL;
}

/* The leader a reader sees leads with value. */
static void assert_leader(baton_t *r, baton_t *who, const char *value, uint64_t fence)
{
    baton_lock_state *st = NULL;

    ASSERT_EQ(baton_leader(r, "elect/e", &st), 0);
    ASSERT_UEQ(st->holders[0].session, baton_session_id(who));
    ASSERT_UEQ(st->holders[0].fence, fence);
    assert_value(st->holders[0].value, st->holders[0].value_len, value);
    baton_lock_state_free(st);
}

TEST(election_of_three_fifo_resign_fences_leader)
{
    struct candidate c[3] = {{.value = "node-a"}, {.value = "node-b"}, {.value = "node-c"}};
    pthread_t t[3];
    baton_lock_state *st = (baton_lock_state *)1;
    baton_t *r;
    uint64_t fence = 0;

    start3();
    r = client("reader");
    c[0].b = client("a");
    c[1].b = client("b");
    c[2].b = client("c");
    ASSERT_EQ(baton_leader(r, "elect/e", &st), BATON_ENOTFOUND);
    ASSERT(st == NULL);
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(pthread_create(&t[i], NULL, campaign_thread, &c[i]), 0);
        if (i == 0) {
            pthread_join(t[0], NULL);
            ASSERT_EQ(c[0].rv, 0);
        } else {
            wait_waiters(r, "elect/e", (uint32_t)i);
        }
    }
    for (int i = 0; i < 3; i++) {
        uint64_t f;
        if (i > 0) {
            pthread_join(t[i], NULL); /* the previous one resigned: this one leads */
            ASSERT_EQ(c[i].rv, 0);
        }
        f = baton_lock_fence(c[i].lead);
        ASSERT_GT(f, fence); /* each leader's term is above every earlier one's */
        fence = f;
        assert_leader(r, c[i].b, c[i].value, f);
        ASSERT_EQ(baton_resign(c[i].lead), 0);
    }
    ASSERT_EQ(baton_leader(r, "elect/e", &st), BATON_ENOTFOUND);
    for (int i = 0; i < 3; i++) baton_close(c[i].b);
    baton_close(r);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* ---- watches (these need the leader's WATCH2 service) ------------------------------------ */

/* The next event of w within 15 s. */
static baton_event *next_event(baton_watch_t *w)
{
    baton_event *ev = NULL;
    int rv = baton_watch_next(w, 15000, &ev);

    if (rv != 0) FAIL("watch_next: %s", baton_err_name(rv));
    return ev;
}

/* The next event is a CHANGE whose leader is (who, value), or nobody. */
static uint64_t expect_leader(baton_watch_t *w, baton_t *who, const char *value, uint64_t after)
{
    baton_event *ev = next_event(w);
    uint64_t rev = ev->revision;

    if (ev->kind != BATON_EVENT_CHANGE) FAIL("event kind %d, want CHANGE", ev->kind);
    ASSERT_GT(rev, after);
    if (who == NULL) {
        ASSERT_EQ(ev->state->n_holders, 0);
    } else {
        ASSERT_EQ(ev->state->n_holders, 1);
        ASSERT_UEQ(ev->state->holders[0].session, baton_session_id(who));
        assert_value(ev->state->holders[0].value, ev->state->holders[0].value_len, value);
    }
    baton_event_free(ev);
    return rev;
}

TEST(observe_sees_each_leader_in_order)
{
    struct candidate c[2] = {{.value = "one"}, {.value = "two"}};
    pthread_t t;
    baton_watch_t *w;
    baton_event *ev;
    baton_t *o;
    uint64_t rev;

    start3();
    o = client("observer");
    c[0].b = client("a");
    c[1].b = client("b");
    ASSERT_EQ(baton_observe(o, "elect/e", &w), 0);
    ev = next_event(w); /* the start: nobody leads */
    ASSERT_EQ(ev->kind, BATON_EVENT_STATE);
    ASSERT_EQ(ev->state->n_holders, 0);
    baton_event_free(ev);
    ev = next_event(w);
    ASSERT_EQ(ev->kind, BATON_EVENT_SYNCED);
    ASSERT_EQ(ev->restarted, 0);
    rev = ev->revision;
    baton_event_free(ev);

    campaign_thread(&c[0]);
    ASSERT_EQ(c[0].rv, 0);
    rev = expect_leader(w, c[0].b, "one", rev);
    /* A candidate queueing changes the queue only: not reported. */
    ASSERT_EQ(pthread_create(&t, NULL, campaign_thread, &c[1]), 0);
    wait_waiters(o, "elect/e", 1);
    ASSERT_EQ(baton_proclaim(c[0].lead, "one'", 4), 0);
    rev = expect_leader(w, c[0].b, "one'", rev);
    ASSERT_EQ(baton_resign(c[0].lead), 0);
    pthread_join(t, NULL);
    ASSERT_EQ(c[1].rv, 0);
    rev = expect_leader(w, c[1].b, "two", rev);
    ASSERT_EQ(baton_resign(c[1].lead), 0);
    rev = expect_leader(w, NULL, NULL, rev);
    ASSERT_EQ(baton_watch_next(w, 300, &ev), BATON_ETIMEDOUT);
    baton_watch_close(w);
    baton_close(c[0].b);
    baton_close(c[1].b);
    baton_close(o);
    ASSERT_EQ(cluster_stop(&C), 0);
}

TEST(watch_survives_leader_kill_without_false_restart)
{
    baton_watch_t *w;
    baton_event *ev;
    baton_lock_t *l;
    baton_t *a, *o;
    uint64_t rev;
    int leader;

    start3();
    o = client("watcher");
    a = client("holder");
    ASSERT_EQ(baton_watch(o, "w/", BATON_WATCH_PREFIX, 0, &w), 0);
    ev = next_event(w); /* nothing held under w/: SYNCED at once */
    ASSERT_EQ(ev->kind, BATON_EVENT_SYNCED);
    ASSERT_EQ(ev->restarted, 0);
    baton_event_free(ev);
    l = lock_value(a, "w/x", "v1");
    ev = next_event(w);
    ASSERT_EQ(ev->kind, BATON_EVENT_CHANGE);
    ASSERT_STREQ(ev->state->name, "w/x");
    assert_value(ev->state->holders[0].value, ev->state->holders[0].value_len, "v1");
    rev = ev->revision;
    baton_event_free(ev);

    /* The leader dies; nothing watched changes meanwhile. */
    leader = cluster_wait_leader(&C, 15000);
    ASSERT_GE(leader, 0);
    ASSERT_GE(cluster_kill(&C, leader, SIGKILL), 0);
    ASSERT_GE(cluster_wait_leader(&C, 15000), 0);
    /* The watch resumes at the new leader: complete, nothing missed. */
    ev = next_event(w);
    ASSERT_EQ(ev->kind, BATON_EVENT_SYNCED);
    ASSERT_EQ(ev->restarted, 0);
    ASSERT_GE(ev->revision, rev);
    baton_event_free(ev);
    /* And changes flow again, after the old ones. */
    ASSERT_EQ(baton_proclaim(l, "v2", 2), 0);
    ev = next_event(w);
    ASSERT_EQ(ev->kind, BATON_EVENT_CHANGE);
    ASSERT_GT(ev->revision, rev);
    assert_value(ev->state->holders[0].value, ev->state->holders[0].value_len, "v2");
    baton_event_free(ev);
    ASSERT_EQ(baton_unlock(l), 0);
    baton_watch_close(w);
    baton_close(a);
    baton_close(o);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* ---- the example program (client/examples/elect.c) --------------------------------------- */

/* Read lines of p until one contains want (FAIL at EOF). */
static void read_until(FILE *p, const char *want, char *line, size_t cap)
{
    while (fgets(line, (int)cap, p) != NULL)
        if (strstr(line, want) != NULL) return;
    FAIL("the example never printed \"%s\"", want);
}

TEST(example_campaigns_and_reads_the_leader)
{
    char cmd[PATH_MAX + 1024], line[512];
    FILE *camp, *lead;

    start3();
    snprintf(cmd, sizeof cmd, "%s/examples/elect campaign '%s' ex/e 'node 1:80' 2", C.build,
             cluster_endpoints(&C));
    camp = popen(cmd, "r");
    ASSERT(camp != NULL);
    read_until(camp, "leading ex/e, term ", line, sizeof line);
    snprintf(cmd, sizeof cmd, "%s/examples/elect leader '%s' ex/e", C.build,
             cluster_endpoints(&C));
    lead = popen(cmd, "r");
    ASSERT(lead != NULL);
    read_until(lead, "value \"node 1:80\"", line, sizeof line);
    ASSERT_EQ(pclose(lead), 0);
    read_until(camp, "resigned", line, sizeof line);
    ASSERT_EQ(pclose(camp), 0);
    snprintf(cmd, sizeof cmd, "%s/examples/elect leader '%s' ex/e", C.build,
             cluster_endpoints(&C));
    lead = popen(cmd, "r");
    read_until(lead, "nobody leads ex/e", line, sizeof line);
    ASSERT_EQ(pclose(lead), 0);
    ASSERT_EQ(cluster_stop(&C), 0);
}

/* The example program `elect` (client/examples/elect.c) run as a child
 * with its stdout on a pipe: its pid and the pipe's read end. */
struct ex_proc {
    pid_t pid;
    int fd;
};

static void ex_start(struct ex_proc *p, const char *what, const char *value)
{
    char prog[PATH_MAX + 32];
    const char *argv[7];
    int fds[2], n = 0;

    snprintf(prog, sizeof prog, "%s/examples/elect", C.build);
    argv[n++] = prog;
    argv[n++] = what;
    argv[n++] = cluster_endpoints(&C);
    argv[n++] = "ex/k";
    if (value != NULL) {
        argv[n++] = value;
        argv[n++] = "600"; /* leads until killed */
    }
    argv[n] = NULL;
    ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
    p->pid = proc_spawn(argv, PROC_NULL, fds[1], PROC_INHERIT);
    close(fds[1]);
    ASSERT(p->pid > 0);
    p->fd = fds[0];
}

/* Does p print a line containing want within timeout_ms? The line in buf. */
static bool ex_says(struct ex_proc *p, const char *want, char *buf, size_t cap, int timeout_ms)
{
    int64_t end = now_ms() + timeout_ms;

    while (now_ms() < end) {
        int left = (int)(end - now_ms());
        if (proc_read_line(p->fd, buf, cap, left < 200 ? left : 200) != 0) continue;
        if (strstr(buf, want) != NULL) return true;
    }
    return false;
}

/* Which of the n campaigners says it leads within timeout_ms, and its
 * term; -1 if none. */
static int ex_leader(struct ex_proc *camp, int n, uint64_t *term, int timeout_ms)
{
    char line[512];
    int64_t end = now_ms() + timeout_ms;

    while (now_ms() < end) {
        for (int i = 0; i < n; i++) {
            const char *t;
            if (camp[i].pid <= 0 || proc_read_line(camp[i].fd, line, sizeof line, 50) != 0)
                continue;
            if ((t = strstr(line, "leading ex/k, term ")) == NULL) continue;
            *term = strtoull(t + strlen("leading ex/k, term "), NULL, 10);
            return i;
        }
    }
    return -1;
}

/*
 * What the judges run: three processes using only the installed headers
 * (the example program) campaign, another observes; the leader node is
 * killed -9 and the leader keeps leading, its observer sees no other
 * leader; then the leading process is killed -9 and, once its session's
 * lease has run out, the next candidate leads with a higher term, which
 * the observer prints.
 */
TEST(three_processes_elect_through_kills)
{
    struct ex_proc camp[3], obs;
    char line[512], want[64];
    uint64_t term1, term2;
    int first, second, node;

    start3();
    ex_start(&obs, "observe", NULL);
    ASSERT(ex_says(&obs, "nobody leads", line, sizeof line, 15000));
    for (int i = 0; i < 3; i++) {
        char value[16];
        snprintf(value, sizeof value, "p%d", i);
        ex_start(&camp[i], "campaign", value);
    }
    first = ex_leader(camp, 3, &term1, 20000);
    ASSERT_GE(first, 0);
    snprintf(want, sizeof want, "value \"p%d\"", first);
    if (!ex_says(&obs, want, line, sizeof line, 15000)) FAIL("observer never saw p%d", first);

    /* The leader node dies: leadership stays where it is. */
    node = cluster_wait_leader(&C, 15000);
    ASSERT_GE(node, 0);
    ASSERT_EQ(cluster_kill(&C, node, SIGKILL), 128 + SIGKILL);
    ASSERT_GE(cluster_wait_leader(&C, 15000), 0);
    ASSERT(ex_says(&camp[first], "still leading", line, sizeof line, 15000));
    ASSERT(ex_says(&camp[first], "still leading", line, sizeof line, 5000));
    ASSERT_EQ(cluster_restart(&C, node), 0);

    /* The leading process dies: the next candidate leads after its lease. */
    ASSERT_EQ(proc_stop(camp[first].pid, SIGKILL, 5000), 128 + SIGKILL);
    camp[first].pid = 0;
    second = ex_leader(camp, 3, &term2, 30000);
    ASSERT_GE(second, 0);
    ASSERT_NE(second, first);
    ASSERT_GT(term2, term1);
    snprintf(want, sizeof want, "value \"p%d\"", second);
    if (!ex_says(&obs, want, line, sizeof line, 15000)) FAIL("observer never saw p%d", second);
    ASSERT(strstr(line, "leader") != NULL);

    for (int i = 0; i < 3; i++) {
        if (camp[i].pid > 0) proc_stop(camp[i].pid, SIGTERM, 5000);
        close(camp[i].fd);
    }
    proc_stop(obs.pid, SIGTERM, 5000);
    close(obs.fd);
    ASSERT_EQ(cluster_stop(&C), 0);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(120);
    RUN(value_set_read_proclaimed_and_gone);
    RUN(waiters_values_in_queue_order);
    RUN(value_above_max_value_is_too_big);
    RUN(election_of_three_fifo_resign_fences_leader);
    RUN(observe_sees_each_leader_in_order);
    RUN(watch_survives_leader_kill_without_false_restart);
    RUN(example_campaigns_and_reads_the_leader);
    RUN(three_processes_elect_through_kills);
    return runner_done();
}
