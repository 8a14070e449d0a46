/*
 * test_watch2.c -- WATCH2 and UNWATCH on the leader (server/watch2.c,
 * server/history.c), in one process over a fake node and a fake clock
 * (tests/unit/leader_fixture.h), driven by a raw client:
 *
 *  - a name watch starts with one STATE (even of a free lock) and SYNCED
 *    at the applied index; a prefix watch with a STATE per lock under it;
 *  - every entry that changes a watched lock is one CHANGE, its revision
 *    the entry's index, with the holders' client names and values --
 *    also when several entries apply in one loop turn;
 *  - a prefix watch is told of the locks under it only;
 *  - resumption: nothing changed since `after` -> SYNCED restarted 0 and
 *    nothing else; the name changed -> GAP with its state now, then
 *    SYNCED; a prefix whose locks changed, or an `after` below the
 *    history's floor or above the applied index -> STATE of everything
 *    and SYNCED restarted 1;
 *  - UNWATCH ends a watch (RESULT 0), an unknown one is RESULT(ENOTFOUND);
 *  - bad flags or names are EINVAL, watches past the limits ELIMIT;
 *  - a quiet watch gets PROGRESS at the applied index once a second;
 *  - watches end with their connection, and all when leadership is lost;
 *  - SIGHUP narrowing a principal's prefixes ends, with ERROR(EPERM), its
 *    watches of what it may no longer read, and no other.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baton/baton.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/runner.h"
#include "tests/lib/tls_sock.h"
#include "tests/unit/leader_fixture.h"

#define P(s) ((struct pstr){(s), sizeof(s) - 1})

static void raw_connect(const struct lf *f, struct tls_sock *s)
{
    lf_raw_connect(f, s, NULL);
}

/* OPEN_SESSION named client: its id. */
static uint64_t raw_session(struct tls_sock *s, const char *client)
{
    return lf_raw_open(s, 30000, client);
}

/* ACQUIRE2 of name with value (may be ""), waiting forever: the RESULT's
 * status; *fence its value when granted. */
static int raw_acquire2(struct tls_sock *s, uint64_t session, uint64_t seq, const char *name,
                        const char *value, uint64_t *fence)
{
    struct msg m = {.type = MSG_ACQUIRE2, .req_id = 1000 + seq}, r;
    int st;

    m.u.op.session = session;
    m.u.op.seq = seq;
    m.u.op.lock = (struct pstr){name, strlen(name)};
    m.u.op.wait_ms = BATON_WAIT_FOREVER;
    m.u.op.lock_delay_ms = BATON_LOCK_DELAY_NONE;
    m.u.op.value = (struct pstr){value, strlen(value)};
    if (tls_sock_request(s, &m, &r, 2000) != 0) FAIL("acquire2: %s", s->err);
    st = tls_sock_status(&r);
    if (fence != NULL) *fence = r.type == MSG_RESULT ? r.u.result.value : 0;
    msg_free(&r);
    return st;
}

static void raw_release(struct tls_sock *s, uint64_t session, uint64_t seq, const char *name,
                        uint64_t fence)
{
    struct msg m = {.type = MSG_RELEASE, .req_id = 1000 + seq}, r;

    m.u.op.session = session;
    m.u.op.seq = seq;
    m.u.op.lock = (struct pstr){name, strlen(name)};
    m.u.op.fence = fence;
    if (tls_sock_request(s, &m, &r, 2000) != 0) FAIL("release: %s", s->err);
    ASSERT_EQ(tls_sock_status(&r), 0);
    msg_free(&r);
}

/* Send WATCH2 (no wait for its events). */
static void watch2(struct tls_sock *s, uint64_t req_id, unsigned flags, const char *key,
                   uint64_t after)
{
    struct msg m = {.type = MSG_WATCH2, .req_id = req_id};

    m.u.watch2.flags = (uint8_t)flags;
    m.u.watch2.key = (struct pstr){key, strlen(key)};
    m.u.watch2.after = after;
    if (tls_sock_send_msg(s, &m) != 0) FAIL("watch2: %s", s->err);
}

/* The frame the last message of recv_copy borrows from. */
static uint8_t *frame_copy;

/* tls_sock_recv_msg, but the message borrows from a copy of its frame,
 * valid until the next call: tls_sock's buffer moves the frames that
 * follow over it (events come many in one read). */
static int recv_copy(struct tls_sock *s, struct msg *m, int ms)
{
    int64_t deadline = now_ms() + ms;

    free(frame_copy);
    frame_copy = NULL;
    for (;;) {
        size_t flen, had = s->in.len;
        int k = proto_frame_check(s->in.data, s->in.len, &flen);
        if (k < 0) return -1;
        if (k == 1) {
            frame_copy = malloc(flen);
            if (frame_copy == NULL) FAIL("out of memory");
            memcpy(frame_copy, s->in.data, flen);
            buf_consume(&s->in, flen);
            return proto_decode(frame_copy, flen, m) == 0 ? 0 : -1;
        }
        if (now_ms() >= deadline) return -1;
        if (tls_sock_recv_raw(s, had + 1, (int)(deadline - now_ms())) <= had) return -1;
    }
}

/* The next WATCH2_EVENT or ERROR on s (other frames skipped): 0, or -1
 * if none came within ms. */
static int next_event(struct tls_sock *s, struct msg *ev, int ms)
{
    for (int i = 0; i < 50; i++) {
        if (recv_copy(s, ev, ms) != 0) return -1;
        if (ev->type == MSG_WATCH2_EVENT || ev->type == MSG_ERROR) return 0;
        msg_free(ev);
    }
    return -1;
}

/* The next event must be of kind (for watch req_id), about lock `name`
 * (NULL: none): its revision. */
static uint64_t expect(struct tls_sock *s, uint64_t req_id, int kind, const char *name,
                       struct msg *keep)
{
    struct msg ev;
    uint64_t rev;

    if (next_event(s, &ev, 2000) != 0) FAIL("no event (want kind %d): %s", kind, s->err);
    if (ev.type == MSG_ERROR)
        FAIL("ERROR %d (%.*s), want kind %d", ev.u.error.code, (int)ev.u.error.message.n,
             ev.u.error.message.p, kind);
    if (ev.req_id != req_id || ev.u.watch2_event.kind != kind)
        FAIL("event of watch %llu, kind %d (lock '%.*s'), want watch %llu, kind %d",
             (unsigned long long)ev.req_id, ev.u.watch2_event.kind,
             (int)ev.u.watch2_event.state.lock.n, ev.u.watch2_event.state.lock.p,
             (unsigned long long)req_id, kind);
    if (name == NULL) ASSERT_EQ(ev.u.watch2_event.state.lock.n, 0);
    else if (ev.u.watch2_event.state.lock.n != strlen(name) ||
             memcmp(ev.u.watch2_event.state.lock.p, name, strlen(name)) != 0)
        FAIL("event of '%.*s', want '%s'", (int)ev.u.watch2_event.state.lock.n,
             ev.u.watch2_event.state.lock.p, name);
    rev = ev.u.watch2_event.state.revision;
    if (keep != NULL) *keep = ev;
    else msg_free(&ev);
    return rev;
}

/* Nothing more arrives on s within ms. */
static void expect_quiet(struct tls_sock *s, int ms)
{
    struct msg ev;

    if (next_event(s, &ev, ms) == 0)
        FAIL("unexpected frame %s (kind %d)", msg_type_name(ev.type),
             ev.type == MSG_WATCH2_EVENT ? ev.u.watch2_event.kind : -1);
}

static void applied_read(struct lf *f, void *arg)
{
    *(uint64_t *)arg = store_applied_index(f->srv.store);
}

static uint64_t applied_index(struct lf *f)
{
    uint64_t i;

    lf_on_loop(f, applied_read, &i);
    return i;
}

static void watches_read(struct lf *f, void *arg)
{
    *(uint32_t *)arg = f->srv.w2.n;
}

static uint32_t watches_held(struct lf *f)
{
    uint32_t n;

    lf_settle(f);
    lf_on_loop(f, watches_read, &n);
    return n;
}

static void level_read(struct lf *f, void *arg)
{
    *(uint32_t *)arg = store_level(f->srv.store);
}

/* The leader of one raises the cluster to this binary's level (values)
 * at a level poll (one a second) once it serves. */
static void raise_level(struct lf *f)
{
    uint32_t level = 0;

    for (int i = 0; i < 200 && level < CMD_LEVEL; i++) {
        if (i % 20 == 0) lf_advance(f, 1000);
        usleep(10000);
        lf_on_loop(f, level_read, &level);
    }
    ASSERT_EQ(level, CMD_LEVEL);
}

/* Does f's METRICS text hold the line `line`? (On a connection of its
 * own.) */
static bool metrics_say(struct lf *f, const char *line)
{
    struct msg m = {.type = MSG_METRICS, .req_id = 77}, r;
    struct tls_sock s;
    struct buf text = {0};
    bool found;

    raw_connect(f, &s);
    if (tls_sock_send_msg(&s, &m) != 0) FAIL("metrics: %s", s.err);
    if (recv_copy(&s, &r, 5000) != 0) FAIL("metrics: no answer");
    ASSERT_EQ(r.type, MSG_METRICS_R);
    for (uint32_t i = 0; i < r.u.metrics_r.n; i++)
        ASSERT_EQ(buf_put(&text, r.u.metrics_r.chunks[i].text.p, r.u.metrics_r.chunks[i].text.n),
                  0);
    ASSERT_EQ(buf_put(&text, "", 1), 0);
    msg_free(&r);
    tls_sock_close(&s);
    found = strstr((const char *)text.data, line) != NULL;
    buf_free(&text);
    return found;
}

TEST(name_watch_starts_with_state_then_synced)
{
    struct lf f;
    struct tls_sock s;
    struct msg ev;
    uint64_t rev;

    lf_start(&f, NULL);
    raw_connect(&f, &s);
    watch2(&s, 5, 0, "free", 0);
    expect(&s, 5, WATCH2_STATE, "free", &ev);
    ASSERT_EQ(ev.u.watch2_event.state.held, 0);
    ASSERT_EQ(ev.u.watch2_event.state.n_holders, 0);
    msg_free(&ev);
    rev = expect(&s, 5, WATCH2_SYNCED, NULL, &ev);
    ASSERT_EQ(ev.u.watch2_event.restarted, 0);
    ASSERT_UEQ(rev, applied_index(&f));
    msg_free(&ev);
    ASSERT_EQ(watches_held(&f), 1);
    ASSERT(metrics_say(&f, "\nbaton_watches 1\n"));
    ASSERT(metrics_say(&f, "baton_pushes_total{type=\"watch2_event\"} 2\n"));
    tls_sock_close(&s);
    ASSERT_EQ(watches_held(&f), 0);
    ASSERT(metrics_say(&f, "\nbaton_watches 0\n"));
    lf_stop(&f);
}

/* ---- one CHANGE per entry ------------------------------------------------ */

struct two_entries {
    uint64_t a, b;          /* the sessions that queue */
    const char *name;
};

static void proposed(void *data, int status, const struct effects *fx)
{
    (void)data;
    (void)status;
    (void)fx;
}

/* Propose one entry holding one ACQUIRE (seq 50, waiting) of session. */
static void propose_acquire(struct lf *f, uint64_t session, const char *name)
{
    struct cmd cmd = {.type = CMD_ACQUIRE, .session = session, .seq = 50,
                      .wait_ms = BATON_WAIT_FOREVER, .name = name};
    struct buf b = {0};
    size_t start;

    cmd.name_len = (uint16_t)strlen(name);
    ASSERT_EQ(cmd_batch_begin(&b, &start), 0);
    ASSERT_EQ(cmd_batch_add(&b, &cmd), 0);
    cmd_batch_end(&b, start, 1);
    ASSERT_EQ(f->srv.nio->propose(f->srv.node, b.data, b.len, proposed, NULL), 0);
    buf_free(&b);
}

/* Two entries proposed at once: the fake node commits both in its next
 * loop turn, one right after the other. */
static void propose_two(struct lf *f, void *arg)
{
    struct two_entries *t = arg;

    propose_acquire(f, t->a, t->name);
    propose_acquire(f, t->b, t->name);
}

TEST(one_change_per_entry_with_values_in_commit_order)
{
    struct lf f;
    struct tls_sock w, s;
    struct msg ev;
    struct two_entries t = {.name = "job"};
    uint64_t holder, fence, synced, r1, r2, r3;
    const struct msg_lock_state *st = &ev.u.watch2_event.state;

    lf_start(&f, NULL);
    raise_level(&f);
    raw_connect(&f, &w);
    raw_connect(&f, &s);
    holder = raw_session(&s, "worker-1");
    t.a = raw_session(&s, "worker-2");
    t.b = raw_session(&s, "worker-3");
    watch2(&w, 9, 0, "job", 0);
    expect(&w, 9, WATCH2_STATE, "job", NULL);
    synced = expect(&w, 9, WATCH2_SYNCED, NULL, NULL);

    ASSERT_EQ(raw_acquire2(&s, holder, 1, "job", "host-a:8080", &fence), 0);
    r1 = expect(&w, 9, WATCH2_CHANGE, "job", &ev);
    ASSERT_GT(r1, synced);
    ASSERT_EQ(st->held, 1);
    ASSERT_EQ(st->n_holders, 1);
    ASSERT_UEQ(st->holders[0].fence, fence);
    ASSERT(st->holders[0].value.n == 11 && memcmp(st->holders[0].value.p, "host-a:8080", 11) == 0);
    ASSERT(st->holders[0].client_name.n == 8 &&
           memcmp(st->holders[0].client_name.p, "worker-1", 8) == 0);
    msg_free(&ev);

    lf_on_loop(&f, propose_two, &t);
    r2 = expect(&w, 9, WATCH2_CHANGE, "job", &ev);
    ASSERT_UEQ(r2, r1 + 1);
    ASSERT_EQ(st->total_waiters, 1);
    msg_free(&ev);
    r3 = expect(&w, 9, WATCH2_CHANGE, "job", &ev);
    ASSERT_UEQ(r3, r2 + 1);
    ASSERT_EQ(st->total_waiters, 2);
    ASSERT(st->waiters[1].client_name.n == 8 &&
           memcmp(st->waiters[1].client_name.p, "worker-3", 8) == 0);
    msg_free(&ev);

    raw_release(&s, holder, 2, "job", fence);
    ASSERT_GT(expect(&w, 9, WATCH2_CHANGE, "job", &ev), r3);
    ASSERT_EQ(st->total_waiters, 1);
    ASSERT(st->holders[0].client_name.n == 8 &&
           memcmp(st->holders[0].client_name.p, "worker-2", 8) == 0);
    msg_free(&ev);
    tls_sock_close(&w);
    tls_sock_close(&s);
    lf_stop(&f);
}

/* ---- prefixes ------------------------------------------------------------ */

TEST(prefix_watch_sees_its_locks_only)
{
    struct lf f;
    struct tls_sock w, s;
    uint64_t sess;

    lf_start(&f, NULL);
    raw_connect(&f, &w);
    raw_connect(&f, &s);
    sess = raw_session(&s, "c");
    raise_level(&f);
    ASSERT_EQ(raw_acquire2(&s, sess, 1, "p/2", "", NULL), 0);
    ASSERT_EQ(raw_acquire2(&s, sess, 3, "p/1", "", NULL), 0);
    ASSERT_EQ(raw_acquire2(&s, sess, 4, "q/1", "", NULL), 0);
    watch2(&w, 3, BATON_WATCH_PREFIX, "p/", 0);
    expect(&w, 3, WATCH2_STATE, "p/1", NULL);
    expect(&w, 3, WATCH2_STATE, "p/2", NULL);
    expect(&w, 3, WATCH2_SYNCED, NULL, NULL);
    ASSERT_EQ(raw_acquire2(&s, sess, 5, "q/2", "", NULL), 0);
    ASSERT_EQ(raw_acquire2(&s, sess, 6, "p/3", "", NULL), 0);
    expect(&w, 3, WATCH2_CHANGE, "p/3", NULL);
    ASSERT_EQ(raw_acquire2(&s, sess, 7, "pq", "", NULL), 0);
    expect_quiet(&w, 200);
    tls_sock_close(&w);
    tls_sock_close(&s);
    lf_stop(&f);
}

/* ---- resumption ---------------------------------------------------------- */

static void floor_to_applied(struct lf *f, void *arg)
{
    (void)arg;
    f->srv.hist.floor = store_applied_index(f->srv.store);
}

TEST(resume_tells_nothing_a_gap_or_a_restart)
{
    struct lf f;
    struct tls_sock w, s;
    struct msg ev;
    uint64_t sess, fence, after, rev;

    lf_start(&f, NULL);
    raise_level(&f);
    raw_connect(&f, &w);
    raw_connect(&f, &s);
    sess = raw_session(&s, "c");
    ASSERT_EQ(raw_acquire2(&s, sess, 1, "r", "one", &fence), 0);
    watch2(&w, 1, 0, "r", 0);
    expect(&w, 1, WATCH2_STATE, "r", NULL);
    after = expect(&w, 1, WATCH2_SYNCED, NULL, NULL);

    /* Another lock changes: nothing to tell. */
    ASSERT_EQ(raw_acquire2(&s, sess, 2, "other", "", NULL), 0);
    watch2(&w, 2, 0, "r", after);
    rev = expect(&w, 2, WATCH2_SYNCED, NULL, &ev);
    ASSERT_EQ(ev.u.watch2_event.restarted, 0);
    ASSERT_UEQ(rev, applied_index(&f));
    msg_free(&ev);

    /* r changes (released): a GAP with its state now, then SYNCED. */
    raw_release(&s, sess, 3, "r", fence);
    for (int i = 0, seen = 0; i < 2; i++) { /* both watches of r, in either order */
        ASSERT_EQ(next_event(&w, &ev, 2000), 0);
        ASSERT(ev.type == MSG_WATCH2_EVENT && ev.u.watch2_event.kind == WATCH2_CHANGE);
        ASSERT(ev.req_id == 1 || ev.req_id == 2);
        ASSERT((seen & (1 << ev.req_id)) == 0);
        seen |= 1 << ev.req_id;
        msg_free(&ev);
    }
    watch2(&w, 3, 0, "r", after);
    expect(&w, 3, WATCH2_GAP, "r", &ev);
    ASSERT_EQ(ev.u.watch2_event.state.held, 0);
    msg_free(&ev);
    expect(&w, 3, WATCH2_SYNCED, NULL, &ev);
    ASSERT_EQ(ev.u.watch2_event.restarted, 0);
    msg_free(&ev);

    /* A prefix: unchanged since `after` -> SYNCED; changed -> restart. */
    after = applied_index(&f);
    watch2(&w, 4, BATON_WATCH_PREFIX, "x/", after);
    expect(&w, 4, WATCH2_SYNCED, NULL, NULL);
    ASSERT_EQ(raw_acquire2(&s, sess, 4, "x/1", "", NULL), 0);
    expect(&w, 4, WATCH2_CHANGE, "x/1", NULL);
    watch2(&w, 5, BATON_WATCH_PREFIX, "x/", after);
    expect(&w, 5, WATCH2_STATE, "x/1", NULL);
    expect(&w, 5, WATCH2_SYNCED, NULL, &ev);
    ASSERT_EQ(ev.u.watch2_event.restarted, 1);
    msg_free(&ev);

    /* From another history (after beyond the applied index), or from
     * below what the history holds: a restart. */
    watch2(&w, 6, 0, "r", applied_index(&f) + 10);
    expect(&w, 6, WATCH2_STATE, "r", NULL);
    expect(&w, 6, WATCH2_SYNCED, NULL, &ev);
    ASSERT_EQ(ev.u.watch2_event.restarted, 1);
    msg_free(&ev);
    after = applied_index(&f);
    lf_on_loop(&f, floor_to_applied, NULL);
    watch2(&w, 7, 0, "r", after - 1);
    expect(&w, 7, WATCH2_STATE, "r", NULL);
    expect(&w, 7, WATCH2_SYNCED, NULL, &ev);
    ASSERT_EQ(ev.u.watch2_event.restarted, 1);
    msg_free(&ev);
    watch2(&w, 8, 0, "r", after);
    expect(&w, 8, WATCH2_SYNCED, NULL, &ev);
    ASSERT_EQ(ev.u.watch2_event.restarted, 0);
    msg_free(&ev);
    tls_sock_close(&w);
    tls_sock_close(&s);
    lf_stop(&f);
}

/* ---- UNWATCH, refusals, limits ------------------------------------------- */

static int unwatch(struct tls_sock *s, uint64_t req_id, uint64_t watch)
{
    struct msg m = {.type = MSG_UNWATCH, .req_id = req_id}, r;
    int st;

    m.u.unwatch.watch = watch;
    if (tls_sock_request(s, &m, &r, 2000) != 0) FAIL("unwatch: %s", s->err);
    ASSERT_EQ(r.type, MSG_RESULT);
    st = tls_sock_status(&r);
    msg_free(&r);
    return st;
}

/* The answer to a WATCH2 that is refused: its ERROR code. */
static int refused(struct tls_sock *s, uint64_t req_id, unsigned flags, const char *key)
{
    struct msg ev;
    int code;

    watch2(s, req_id, flags, key, 0);
    if (next_event(s, &ev, 2000) != 0) FAIL("no answer: %s", s->err);
    ASSERT_EQ(ev.type, MSG_ERROR);
    ASSERT_UEQ(ev.req_id, req_id);
    code = ev.u.error.code;
    msg_free(&ev);
    return code;
}

TEST(unwatch_refusals_and_limits)
{
    struct lf f;
    struct tls_sock w, s;
    uint64_t sess;

    lf_start(&f, NULL);
    raise_level(&f);
    raw_connect(&f, &w);
    raw_connect(&f, &s);
    sess = raw_session(&s, "c");
    watch2(&w, 7, 0, "u", 0);
    expect(&w, 7, WATCH2_STATE, "u", NULL);
    expect(&w, 7, WATCH2_SYNCED, NULL, NULL);
    watch2(&w, 8, 0, "u2", 0);
    expect(&w, 8, WATCH2_STATE, "u2", NULL);
    expect(&w, 8, WATCH2_SYNCED, NULL, NULL);
    ASSERT_EQ(unwatch(&w, 100, 7), 0);
    ASSERT_EQ(unwatch(&w, 101, 7), BATON_ENOTFOUND);
    ASSERT_EQ(raw_acquire2(&s, sess, 1, "u", "", NULL), 0);
    ASSERT_EQ(raw_acquire2(&s, sess, 2, "u2", "", NULL), 0);
    expect(&w, 8, WATCH2_CHANGE, "u2", NULL); /* and none for u, ended */

    ASSERT_EQ(refused(&w, 20, 2, "u"), BATON_EINVAL);
    ASSERT_EQ(refused(&w, 21, 0, ""), BATON_EINVAL);
    for (int i = 1; i < WATCH_MAX_PER_CONN; i++) { /* 8 is held: up to the limit */
        watch2(&w, 200 + (uint64_t)i, BATON_WATCH_PREFIX, "none/", 0);
        expect(&w, 200 + (uint64_t)i, WATCH2_SYNCED, NULL, NULL);
    }
    ASSERT_EQ(watches_held(&f), WATCH_MAX_PER_CONN);
    ASSERT_EQ(refused(&w, 22, 0, "one-more"), BATON_ELIMIT);
    ASSERT_EQ(unwatch(&w, 102, 8), 0);
    watch2(&w, 23, 0, "one-more", 0);
    expect(&w, 23, WATCH2_STATE, "one-more", NULL);
    expect(&w, 23, WATCH2_SYNCED, NULL, NULL);
    tls_sock_close(&w);
    ASSERT_EQ(watches_held(&f), 0);
    tls_sock_close(&s);
    lf_stop(&f);
}

/* ---- PROGRESS, and the end of every watch with leadership ----------------- */

TEST(quiet_watch_gets_progress_and_leadership_loss_ends_all)
{
    struct lf f;
    struct tls_sock w;
    struct msg ev;
    uint64_t rev;

    lf_start(&f, NULL);
    raise_level(&f); /* the level poll's entry is then behind */
    raw_connect(&f, &w);
    watch2(&w, 4, 0, "quiet", 0);
    expect(&w, 4, WATCH2_STATE, "quiet", NULL);
    expect(&w, 4, WATCH2_SYNCED, NULL, NULL);
    lf_advance(&f, WATCH2_PROGRESS_MS - 1);
    expect_quiet(&w, 100);
    lf_advance(&f, 1);
    rev = expect(&w, 4, WATCH2_PROGRESS, NULL, &ev);
    ASSERT_UEQ(rev, applied_index(&f));
    msg_free(&ev);
    ASSERT_EQ(watches_held(&f), 1);
    lf_set_leading(&f, false);
    ASSERT_EQ(watches_held(&f), 0);
    tls_sock_close(&w);
    lf_stop(&f);
}

/* ---- a watcher that does not read ------------------------------------------ */

/* A watcher that reads nothing while its lock's queue grows (each event
 * the whole queue, with a 3,000-byte value per waiter: tens of MiB in
 * all) is cut off at --max-unread-mb like any client that does not read
 * its replies, and its watch is dropped: the events held for it stay
 * bounded. */
TEST(watcher_that_does_not_read_is_cut_off)
{
    static const char *const extra[] = {"--max-unread-mb", "2", NULL};
    static char value[3001];
    struct tls_sock w, s;
    struct lf f;
    uint64_t sess;

    memset(value, 'v', sizeof value - 1);
    lf_start(&f, extra);
    raise_level(&f);
    if (tls_sock_connect(&w, atoi(strrchr(f.endpoint, ':') + 1),
                         &(struct tls_sock_cfg){.rcvbuf = 4096}, 2000) != 0)
        FAIL("connect: %s", w.err);
    if (tls_sock_hello(&w, NULL, NULL) != 0) FAIL("hello: %s", w.err);
    raw_connect(&f, &s);
    watch2(&w, 1, 0, "big", 0);
    expect(&w, 1, WATCH2_STATE, "big", NULL);
    expect(&w, 1, WATCH2_SYNCED, NULL, NULL);
    for (uint64_t i = 0; i < 150 && watches_held(&f) == 1; i++) {
        sess = raw_session(&s, "queued");
        ASSERT_EQ(raw_acquire2(&s, sess, 1, "big", value, NULL), 0);
    }
    ASSERT_EQ(watches_held(&f), 0);
    ASSERT(metrics_say(&f, "baton_refusals_total{reason=\"unread\"} 1\n"));
    tls_sock_close(&w);
    tls_sock_close(&s);
    lf_stop(&f);
}

/* ---- SIGHUP ---------------------------------------------------------------- */

static void write_lines(const char *path, const char *a, const char *b)
{
    FILE *fp = fopen(path, "w");

    if (fp == NULL) FAIL("cannot write %s", path);
    fputs(a, fp);
    fputs(b, fp);
    fclose(fp);
}

/* A principal's prefixes narrowed by SIGHUP: its watches of a name and a
 * prefix it may no longer read end with ERROR(EPERM); its watch of a
 * prefix still its own goes on. */
TEST(sighup_narrowing_ends_the_watches_it_no_longer_allows)
{
    char atok[72], aline[512], rtok[72], rline[512], narrowed[512], path[300];
    const char *extra[] = {"--auth-file", path, NULL};
    struct tls_sock adm, rd;
    struct lf f;
    struct msg ev;
    uint64_t sess;
    int ended = 0;

    ASSERT_EQ(cluster_token("root", "admin", NULL, atok, aline, sizeof aline), 0);
    ASSERT_EQ(cluster_token("viewer", "read", "prefixes=jobs/,keep/", rtok, rline, sizeof rline),
              0);
    ASSERT_EQ(cluster_token_line("viewer", "read", "prefixes=keep/", rtok, narrowed,
                                 sizeof narrowed),
              0);
    snprintf(path, sizeof path, "%s/baton-watch2-auth-%d", getenv("TMPDIR") ? getenv("TMPDIR")
                                                                             : "/tmp",
             (int)getpid());
    write_lines(path, aline, rline);
    lf_start(&f, extra);
    raise_level(&f);
    lf_raw_connect(&f, &adm, atok);
    lf_raw_connect(&f, &rd, rtok);
    sess = raw_session(&adm, "admin");
    ASSERT_EQ(refused(&rd, 40, BATON_WATCH_PREFIX, ""), BATON_EPERM); /* beyond its prefixes */
    watch2(&rd, 41, 0, "jobs/a", 0);
    expect(&rd, 41, WATCH2_STATE, "jobs/a", NULL);
    expect(&rd, 41, WATCH2_SYNCED, NULL, NULL);
    watch2(&rd, 42, BATON_WATCH_PREFIX, "jobs/", 0);
    expect(&rd, 42, WATCH2_SYNCED, NULL, NULL);
    watch2(&rd, 43, BATON_WATCH_PREFIX, "keep/", 0);
    expect(&rd, 43, WATCH2_SYNCED, NULL, NULL);
    write_lines(path, aline, narrowed);
    ASSERT_EQ(kill(getpid(), SIGHUP), 0);
    for (int i = 0; i < 2; i++) {
        ASSERT_EQ(next_event(&rd, &ev, 5000), 0);
        ASSERT_EQ(ev.type, MSG_ERROR);
        ASSERT_EQ(ev.u.error.code, BATON_EPERM);
        ASSERT(ev.req_id == 41 || ev.req_id == 42);
        ended |= 1 << (ev.req_id - 41);
        msg_free(&ev);
    }
    ASSERT_EQ(ended, 3);
    ASSERT_EQ(raw_acquire2(&adm, sess, 1, "jobs/a", "", NULL), 0);
    ASSERT_EQ(raw_acquire2(&adm, sess, 2, "keep/k", "", NULL), 0);
    expect(&rd, 43, WATCH2_CHANGE, "keep/k", NULL);
    expect_quiet(&rd, 200);
    ASSERT_EQ(watches_held(&f), 1);
    tls_sock_close(&rd);
    tls_sock_close(&adm);
    lf_stop(&f);
    unlink(path);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(60);
    RUN(name_watch_starts_with_state_then_synced);
    RUN(one_change_per_entry_with_values_in_commit_order);
    RUN(prefix_watch_sees_its_locks_only);
    RUN(resume_tells_nothing_a_gap_or_a_restart);
    RUN(unwatch_refusals_and_limits);
    RUN(quiet_watch_gets_progress_and_leadership_loss_ends_all);
    RUN(sighup_narrowing_ends_the_watches_it_no_longer_allows);
    RUN(watcher_that_does_not_read_is_cut_off);
    return runner_done();
}
