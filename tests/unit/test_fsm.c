/*
 * test_fsm.c -- the lock state machine (storage/store.h), driven through
 * store_apply on a fresh LMDB directory per test (mkdtemp under /tmp,
 * removed at the end of the test).
 *
 * Every test's directory lives under one per-run directory that main
 * removes at the end, so that a failed test (which exits at once) leaves
 * nothing behind either.
 *
 * "Nothing changed" is checked by comparing store_snapshot bytes after the
 * 24-byte header (magic, format, applied index, state digest): the applied
 * index and the digest move with every entry, the rest of the state must
 * not.
 */
#include "tests/lib/runner.h"

#include <ftw.h>
#include <sys/stat.h>

#include "client/baton_defs.h"
#include "storage/cmd.h"
#include "storage/store.h"
#include "storage/store_test.h"

#define SNAP_HDR 24
enum { DB_META, DB_SESSIONS, DB_LOCKS, DB_WAITERS, DB_OWNED, DB_DEDUP, DB_MEMBERS, N_DB };

static char run_dir[64];

struct fixture {
    char dir[128];
    store *s;
    struct effects fx;
    struct effects changed; /* apply_n moves the entry's FX_LOCK_CHANGED here */
    uint64_t index;
};

static void rm_dir(const char *dir)
{
    char path[192];

    snprintf(path, sizeof path, "%s/data.mdb", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/lock.mdb", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/boot_id", dir);
    unlink(path);
    ASSERT_EQ(rmdir(dir), 0);
}

static void setup(struct fixture *f)
{
    char err[256];

    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "%s/t-XXXXXX", run_dir);
    ASSERT(mkdtemp(f->dir) != NULL);
    if (store_open(f->dir, &f->s, err) != 0) FAIL("store_open: %s", err);
    effects_init(&f->fx);
    effects_init(&f->changed);
}

static void teardown(struct fixture *f)
{
    store_close(f->s);
    f->s = NULL;
    effects_free(&f->fx);
    effects_free(&f->changed);
    rm_dir(f->dir);
}

/* ---- commands ------------------------------------------------------------ */

static struct cmd cmd_of(uint8_t type, uint64_t session, uint64_t seq, const char *name)
{
    struct cmd c;

    memset(&c, 0, sizeof c);
    c.type = type;
    c.session = session;
    c.seq = seq;
    c.name = name;
    c.name_len = (uint16_t)(name ? strlen(name) : 0);
    return c;
}

static struct cmd c_open(uint32_t ttl_ms, const char *client)
{
    struct cmd c = cmd_of(CMD_OPEN_SESSION, 0, 0, client);
    c.ttl_ms = ttl_ms;
    return c;
}

static struct cmd c_acq(uint64_t s, uint64_t seq, int64_t wait_ms, const char *name)
{
    struct cmd c = cmd_of(CMD_ACQUIRE, s, seq, name);
    c.wait_ms = wait_ms;
    return c;
}

static struct cmd c_rel(uint64_t s, uint64_t seq, uint64_t fence, const char *name)
{
    struct cmd c = cmd_of(CMD_RELEASE, s, seq, name);
    c.fence = fence;
    return c;
}

static struct cmd c_cancel(uint64_t s, uint64_t seq, uint64_t waiter, const char *name)
{
    struct cmd c = cmd_of(CMD_CANCEL, s, seq, name);
    c.waiter = waiter;
    return c;
}

static struct cmd c_timeout(uint64_t s, uint64_t waiter, const char *name)
{
    struct cmd c = cmd_of(CMD_WAIT_TIMEOUT, s, 0, name);
    c.waiter = waiter;
    return c;
}

/* An ACQUIRE whose hold carries a lock-delay of delay_ms. */
static struct cmd c_acq_d(uint64_t s, uint64_t seq, int64_t wait_ms, const char *name,
                          int32_t delay_ms)
{
    struct cmd c = c_acq(s, seq, wait_ms, name);
    c.lock_delay_ms = delay_ms;
    return c;
}

#define c_delay_end(name) cmd_of(CMD_DELAY_END, 0, 0, (name))
#define c_close(s, seq) cmd_of(CMD_CLOSE_SESSION, (s), (seq), NULL)
#define c_expire(s) cmd_of(CMD_EXPIRE_SESSION, (s), 0, NULL)
#define c_force(name) cmd_of(CMD_FORCE_RELEASE, 0, 0, (name))
#define c_member(id, addr) cmd_of(CMD_SET_MEMBER_ADDR, (id), 0, (addr))

static void encode(struct buf *b, const struct cmd *cmds, size_t n)
{
    size_t start;

    ASSERT_EQ(cmd_batch_begin(b, &start), 0);
    for (size_t i = 0; i < n; i++) ASSERT_EQ(cmd_batch_add(b, &cmds[i]), 0);
    cmd_batch_end(b, start, (uint32_t)n);
}

/*
 * Move the entry's FX_LOCK_CHANGED effects from f->fx to f->changed, so that
 * the tests of the other effects see only those. They must all come after
 * every other effect of the entry.
 */
static void strip_changed(struct fixture *f)
{
    size_t first = f->fx.n_fx;

    effects_reset(&f->changed);
    while (first > 0 && f->fx.fx[first - 1].type == FX_LOCK_CHANGED) first--;
    for (size_t i = 0; i < first; i++) ASSERT_NE(f->fx.fx[i].type, FX_LOCK_CHANGED);
    for (size_t i = first; i < f->fx.n_fx; i++)
        ASSERT_EQ(effects_add_fx(&f->changed, &f->fx.fx[i]), 0);
    f->fx.n_fx = first;
}

/* Apply cmds as the next entry; every command must yield a result. */
static void apply_n(struct fixture *f, const struct cmd *cmds, size_t n)
{
    struct buf b = {0};

    encode(&b, cmds, n);
    ASSERT_EQ(store_apply(f->s, ++f->index, b.data, b.len, &f->fx), 0);
    strip_changed(f);
    ASSERT_EQ(f->fx.n_results, n);
    ASSERT_UEQ(f->fx.index, f->index);
    ASSERT_UEQ(store_applied_index(f->s), f->index);
    buf_free(&b);
}

static struct cmd_result run(struct fixture *f, struct cmd c)
{
    apply_n(f, &c, 1);
    return f->fx.results[0];
}

static uint64_t open_session(struct fixture *f)
{
    struct cmd_result r = run(f, c_open(10000, "test"));

    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_OK);
    ASSERT_NE(r.value, 0);
    return r.value;
}

/* Acquire and expect a grant; returns the fence. */
static uint64_t grant(struct fixture *f, uint64_t s, uint64_t seq, const char *name)
{
    struct cmd_result r = run(f, c_acq(s, seq, BATON_WAIT_FOREVER, name));

    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    ASSERT_NE(r.value, 0);
    return r.value;
}

/* Acquire and expect to be queued at `pos`. */
static void queue(struct fixture *f, uint64_t s, uint64_t seq, const char *name, uint64_t pos)
{
    struct cmd_result r = run(f, c_acq(s, seq, BATON_WAIT_FOREVER, name));

    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_QUEUED);
    ASSERT_UEQ(r.value, pos);
}

static void assert_fx(const struct effect *e, uint8_t type, int32_t status, uint64_t session,
                      uint64_t waiter, const char *name)
{
    ASSERT_EQ(e->type, type);
    ASSERT_EQ(e->status, status);
    ASSERT_UEQ(e->session, session);
    ASSERT_UEQ(e->waiter, waiter);
    if (name != NULL) {
        ASSERT_EQ(e->name_len, strlen(name));
        ASSERT(memcmp(e->name, name, e->name_len) == 0);
    }
}

/* Two applies gave the same results and effects (field by field: the
 * structs have padding). */
static void assert_same_effects(const struct effects *a, const struct effects *b)
{
    ASSERT_EQ(a->n_results, b->n_results);
    for (size_t i = 0; i < a->n_results; i++) {
        ASSERT_EQ(a->results[i].status, b->results[i].status);
        ASSERT_EQ(a->results[i].kind, b->results[i].kind);
        ASSERT_UEQ(a->results[i].value, b->results[i].value);
    }
    ASSERT_EQ(a->n_fx, b->n_fx);
    for (size_t i = 0; i < a->n_fx; i++) {
        const struct effect *x = &a->fx[i], *y = &b->fx[i];
        ASSERT_EQ(x->type, y->type);
        ASSERT_EQ(x->status, y->status);
        ASSERT_UEQ(x->session, y->session);
        ASSERT_UEQ(x->waiter, y->waiter);
        ASSERT_UEQ(x->fence, y->fence);
        ASSERT_EQ(x->lock_delay_ms, y->lock_delay_ms);
        ASSERT_EQ(x->name_len, y->name_len);
        ASSERT(memcmp(x->name, y->name, x->name_len) == 0);
    }
}

/* ---- state inspection ---------------------------------------------------- */

static void snap(struct fixture *f, struct buf *b)
{
    buf_free(b);
    ASSERT_EQ(store_snapshot(f->s, b), 0);
    ASSERT_GE(b->len, SNAP_HDR);
}

static int same_state(const struct buf *a, const struct buf *b)
{
    return a->len == b->len &&
           memcmp(a->data + SNAP_HDR, b->data + SNAP_HDR, a->len - SNAP_HDR) == 0;
}

/* Number of entries of database db in a snapshot. */
static uint32_t snap_count(const struct buf *b, int db)
{
    size_t off = SNAP_HDR;

    for (int i = 0;; i++) {
        uint32_t n = le_get_u32(b->data + off);
        if (i == db) return n;
        off += 4;
        for (uint32_t j = 0; j < n; j++) {
            off += 4 + le_get_u32(b->data + off);
            off += 4 + le_get_u32(b->data + off);
        }
    }
}

static uint32_t count_in(struct fixture *f, int db)
{
    struct buf b = {0};
    uint32_t n;

    snap(f, &b);
    n = snap_count(&b, db);
    buf_free(&b);
    return n;
}

static struct msg_lock_info_r info(struct fixture *f, const char *name)
{
    struct msg_lock_info_r i;

    memset(&i, 0, sizeof i);
    ASSERT_EQ(store_lock_info(f->s, name, strlen(name), BATON_MAX_LIST, &i), 0);
    return i;
}

static void assert_holder(struct fixture *f, const char *name, uint64_t session, uint64_t fence,
                          uint32_t waiters)
{
    struct msg_lock_info_r i = info(f, name);

    ASSERT_EQ(i.held, session != 0);
    ASSERT_UEQ(i.holder_session, session);
    if (fence) ASSERT_UEQ(i.fence, fence);
    ASSERT_EQ(i.total_waiters, waiters);
    ASSERT_EQ(i.n_waiters, waiters);
    free(i.waiters);
}

/* ---- basics -------------------------------------------------------------- */

TEST(new_store_is_empty)
{
    struct fixture f;
    struct msg_lock_info_r i;

    setup(&f);
    ASSERT_UEQ(store_applied_index(f.s), 0);
    i = info(&f, "nothing");
    ASSERT_EQ(i.held, 0);
    ASSERT_EQ(i.total_waiters, 0);
    ASSERT(i.waiters == NULL);
    ASSERT_EQ(store_session_exists(f.s, 1), 0);
    teardown(&f);
}

TEST(open_session_ids_and_reads)
{
    struct fixture f;
    uint64_t a, b;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    ASSERT_UEQ(a, 1);
    ASSERT_UEQ(b, 2);
    ASSERT_EQ(store_session_exists(f.s, a), 1);
    ASSERT_EQ(store_session_exists(f.s, 3), 0);
    ASSERT_EQ(count_in(&f, DB_DEDUP), 0); /* OPEN_SESSION is not deduplicated */
    teardown(&f);
}

static int count_sessions(void *data, uint64_t session, uint32_t ttl_ms)
{
    uint64_t *sum = data;
    *sum += session * 1000000 + ttl_ms;
    return 0;
}

static int stop_at_first(void *data, uint64_t session, uint32_t ttl_ms)
{
    (void)data;
    (void)session;
    (void)ttl_ms;
    return 42;
}

TEST(foreach_session)
{
    struct fixture f;
    uint64_t sum = 0;

    setup(&f);
    ASSERT_UEQ(run(&f, c_open(5000, "a")).value, 1);
    ASSERT_UEQ(run(&f, c_open(7000, "b")).value, 2);
    ASSERT_EQ(store_foreach_session(f.s, count_sessions, &sum), 0);
    ASSERT_UEQ(sum, 1 * 1000000 + 5000 + 2 * 1000000 + 7000);
    ASSERT_EQ(store_foreach_session(f.s, stop_at_first, NULL), 42);
    teardown(&f);
}

/* What store_list_sessions reported, one line per session. */
struct sess_list {
    char text[512];
    size_t len;
    int stop_after;     /* return 42 after this many calls; 0: never */
    int calls;
};

static int collect_session(void *data, uint64_t session, uint32_t ttl_ms, uint64_t created,
                           const char *name, size_t name_len, uint32_t holds, uint32_t waits)
{
    struct sess_list *l = data;

    l->len += (size_t)snprintf(l->text + l->len, sizeof l->text - l->len,
                               "%llu:%u:%llu:%.*s:%u:%u;", (unsigned long long)session, ttl_ms,
                               (unsigned long long)created, (int)name_len, name, holds, waits);
    l->calls++;
    return l->stop_after && l->calls == l->stop_after ? 42 : 0;
}

TEST(list_sessions_counts_holds_and_waits)
{
    struct fixture f;
    struct sess_list l;
    uint64_t a, b, c;
    int more;

    setup(&f);
    a = run(&f, c_open(5000, "alpha")).value;  /* index 1 */
    b = run(&f, c_open(7000, "")).value;       /* index 2 */
    c = run(&f, c_open(9000, "gamma")).value;  /* index 3 */
    grant(&f, a, 1, "x");
    grant(&f, a, 2, "y");
    queue(&f, b, 1, "x", 1);
    grant(&f, b, 2, "z");
    queue(&f, c, 1, "x", 2);

    memset(&l, 0, sizeof l);
    ASSERT_EQ(store_list_sessions(f.s, 0, 10, collect_session, &l, &more), 0);
    ASSERT_STREQ(l.text, "1:5000:1:alpha:2:0;2:7000:2::1:1;3:9000:3:gamma:0:1;");
    ASSERT_EQ(more, 0);

    /* Paging: a limit sets `more`, and `after` starts past an id. */
    memset(&l, 0, sizeof l);
    ASSERT_EQ(store_list_sessions(f.s, 0, 2, collect_session, &l, &more), 0);
    ASSERT_STREQ(l.text, "1:5000:1:alpha:2:0;2:7000:2::1:1;");
    ASSERT_EQ(more, 1);
    memset(&l, 0, sizeof l);
    ASSERT_EQ(store_list_sessions(f.s, b, 2, collect_session, &l, &more), 0);
    ASSERT_STREQ(l.text, "3:9000:3:gamma:0:1;");
    ASSERT_EQ(more, 0);
    memset(&l, 0, sizeof l);
    ASSERT_EQ(store_list_sessions(f.s, c, 2, collect_session, &l, &more), 0);
    ASSERT_EQ(l.calls, 0);
    ASSERT_EQ(store_list_sessions(f.s, UINT64_MAX, 2, collect_session, &l, &more), 0);
    ASSERT_EQ(l.calls, 0);
    ASSERT_EQ(store_list_sessions(f.s, 0, 0, collect_session, &l, &more), 0);
    ASSERT_EQ(l.calls, 0);
    ASSERT_EQ(more, 1);

    /* The callback's code stops the walk and is returned. */
    memset(&l, 0, sizeof l);
    l.stop_after = 1;
    ASSERT_EQ(store_list_sessions(f.s, 0, 10, collect_session, &l, &more), 42);
    ASSERT_EQ(l.calls, 1);

    /* An expired session is gone from the list, and its hold moved on. */
    ASSERT_EQ(run(&f, cmd_of(CMD_EXPIRE_SESSION, a, 0, NULL)).status, 0);
    memset(&l, 0, sizeof l);
    ASSERT_EQ(store_list_sessions(f.s, 0, 10, collect_session, &l, &more), 0);
    ASSERT_STREQ(l.text, "2:7000:2::2:0;3:9000:3:gamma:0:1;");
    teardown(&f);
}

TEST(acquire_free_lock_grants)
{
    struct fixture f;
    struct msg_lock_info_r i;
    uint64_t s, fence;

    setup(&f);
    s = open_session(&f);
    fence = grant(&f, s, 1, "L");
    ASSERT_UEQ(fence, 1);
    ASSERT_EQ(f.fx.n_fx, 0); /* the result is the answer: no push */
    i = info(&f, "L");
    ASSERT_EQ(i.held, 1);
    ASSERT_UEQ(i.holder_session, s);
    ASSERT_UEQ(i.holder_waiter, 1);
    ASSERT_UEQ(i.fence, 1);
    ASSERT_UEQ(i.granted_index, f.index);
    free(i.waiters);
    teardown(&f);
}

TEST(try_on_held_lock_wouldblock_and_queues_nothing)
{
    struct fixture f;
    struct cmd_result r;
    uint64_t a, b;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    grant(&f, a, 1, "L");
    r = run(&f, c_acq(b, 1, BATON_WAIT_TRY, "L"));
    ASSERT_EQ(r.status, BATON_EWOULDBLOCK);
    ASSERT_EQ(f.fx.n_fx, 0);
    assert_holder(&f, "L", a, 1, 0);
    ASSERT_EQ(count_in(&f, DB_WAITERS), 0);
    ASSERT_EQ(count_in(&f, DB_OWNED), 1);
    /* Even the holder's own session gets EWOULDBLOCK: not re-entrant. */
    r = run(&f, c_acq(a, 2, BATON_WAIT_TRY, "L"));
    ASSERT_EQ(r.status, BATON_EWOULDBLOCK);
    /* A try on a free lock grants. */
    r = run(&f, c_acq(b, 2, BATON_WAIT_TRY, "M"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    teardown(&f);
}

TEST(fifo_order_with_many_waiters)
{
    enum { N = 50 };
    struct fixture f;
    uint64_t sess[N], fence[N];

    setup(&f);
    for (int i = 0; i < N; i++) sess[i] = open_session(&f);
    fence[0] = grant(&f, sess[0], 1, "hot");
    /* Enqueue in a scrambled session order: the queue follows commit
     * order, not session ids. */
    int order[N];
    order[0] = 0;
    for (int i = 1; i < N; i++) order[i] = 1 + (i * 17) % (N - 1);
    for (int i = 1; i < N; i++) queue(&f, sess[order[i]], 1, "hot", (uint64_t)i);
    assert_holder(&f, "hot", sess[0], fence[0], N - 1);

    struct msg_lock_info_r in = info(&f, "hot");
    for (int i = 1; i < N; i++) {
        ASSERT_UEQ(in.waiters[i - 1].session, sess[order[i]]);
        ASSERT_UEQ(in.waiters[i - 1].waiter, 1);
        ASSERT_EQ(in.waiters[i - 1].wait_ms, BATON_WAIT_FOREVER);
    }
    free(in.waiters);

    /* One release, one grant, strictly in enqueue order. */
    uint64_t holder = sess[0], hfence = fence[0];
    for (int i = 1; i < N; i++) {
        struct cmd_result r = run(&f, c_rel(holder, 2, hfence, "hot"));
        ASSERT_EQ(r.status, 0);
        ASSERT_EQ(f.fx.n_fx, 1);
        assert_fx(&f.fx.fx[0], FX_GRANT, 0, sess[order[i]], 1, "hot");
        ASSERT_ULT(hfence, f.fx.fx[0].fence);
        holder = f.fx.fx[0].session;
        hfence = f.fx.fx[0].fence;
        assert_holder(&f, "hot", holder, hfence, (uint32_t)(N - 1 - i));
    }
    ASSERT_EQ(run(&f, c_rel(holder, 2, hfence, "hot")).status, 0);
    ASSERT_EQ(f.fx.n_fx, 0);
    /* Lock records exist only while held or queued. */
    ASSERT_EQ(count_in(&f, DB_LOCKS), 0);
    ASSERT_EQ(count_in(&f, DB_WAITERS), 0);
    ASSERT_EQ(count_in(&f, DB_OWNED), 0);
    teardown(&f);
}

TEST(release_by_non_holder_rejected)
{
    struct fixture f;
    uint64_t a, b, fence;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    fence = grant(&f, a, 1, "L");
    ASSERT_EQ(run(&f, c_rel(b, 1, fence, "L")).status, BATON_ENOTHELD);      /* wrong session */
    ASSERT_EQ(run(&f, c_rel(a, 2, fence + 1, "L")).status, BATON_ENOTHELD);  /* wrong fence */
    ASSERT_EQ(run(&f, c_rel(a, 3, 0, "L")).status, BATON_ENOTHELD);
    ASSERT_EQ(run(&f, c_rel(a, 4, fence, "other")).status, BATON_ENOTHELD);  /* wrong lock */
    ASSERT_EQ(run(&f, c_rel(b, 2, 0, "")).status, BATON_EINVAL);
    assert_holder(&f, "L", a, fence, 0);
    ASSERT_EQ(run(&f, c_rel(a, 5, fence, "L")).status, 0);
    /* A second release of the same grant is refused. */
    ASSERT_EQ(run(&f, c_rel(a, 6, fence, "L")).status, BATON_ENOTHELD);
    assert_holder(&f, "L", 0, 0, 0);
    teardown(&f);
}

TEST(release_hands_lock_to_head_in_same_apply)
{
    struct fixture f;
    struct cmd_result r;
    uint64_t a, b, c, fa, fb;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    fa = grant(&f, a, 1, "L");
    queue(&f, b, 5, "L", 1);
    queue(&f, c, 9, "L", 2);
    r = run(&f, c_rel(a, 2, fa, "L"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_OK);
    ASSERT_EQ(f.fx.n_fx, 1);
    assert_fx(&f.fx.fx[0], FX_GRANT, 0, b, 5, "L");
    fb = f.fx.fx[0].fence;
    ASSERT_ULT(fa, fb);
    assert_holder(&f, "L", b, fb, 1);
    /* B's queued ACQUIRE, retried, now reports the grant. */
    r = run(&f, c_acq(b, 5, BATON_WAIT_FOREVER, "L"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    ASSERT_UEQ(r.value, fb);
    ASSERT_EQ(f.fx.n_fx, 0);
    /* C's, retried, still reports QUEUED. */
    r = run(&f, c_acq(c, 9, BATON_WAIT_FOREVER, "L"));
    ASSERT_EQ(r.kind, RESULT_QUEUED);
    teardown(&f);
}

TEST(same_session_waiters_share_a_lock)
{
    struct fixture f;
    uint64_t a, f1;

    setup(&f);
    a = open_session(&f);
    f1 = grant(&f, a, 1, "L");
    queue(&f, a, 2, "L", 1); /* a second thread of the same client */
    queue(&f, a, 3, "L", 2);
    ASSERT_EQ(run(&f, c_rel(a, 4, f1, "L")).status, 0);
    ASSERT_EQ(f.fx.n_fx, 1);
    assert_fx(&f.fx.fx[0], FX_GRANT, 0, a, 2, "L");
    struct msg_lock_info_r i = info(&f, "L");
    ASSERT_UEQ(i.holder_waiter, 2);
    free(i.waiters);
    teardown(&f);
}

TEST(fences_strictly_increase_across_locks)
{
    struct fixture f;
    uint64_t a, b, last = 0, fence;
    const char *names[] = {"a", "b", "c", "a", "d", "b"};

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 6; i++) {
            uint64_t seq = (uint64_t)(round * 100 + i * 2 + 1);
            struct cmd_result r = run(&f, c_acq(i % 2 ? b : a, seq, BATON_WAIT_TRY, names[i]));
            if (r.status == BATON_EWOULDBLOCK) continue;
            ASSERT_EQ(r.kind, RESULT_GRANTED);
            fence = r.value;
            ASSERT_ULT(last, fence);
            last = fence;
            ASSERT_EQ(run(&f, c_rel(i % 2 ? b : a, seq + 1, fence, names[i])).status, 0);
        }
    }
    teardown(&f);
}

/* ---- sessions ------------------------------------------------------------- */

TEST(close_session_releases_and_drops_waits)
{
    struct fixture f;
    struct cmd_result r;
    uint64_t a, b, c, d;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    d = open_session(&f);
    grant(&f, a, 1, "L1");
    grant(&f, a, 2, "L2");
    grant(&f, d, 1, "L3");
    queue(&f, a, 3, "L3", 1);  /* a waits for L3 */
    queue(&f, a, 4, "L1", 1);  /* and for L1, which it holds (another thread) */
    queue(&f, b, 1, "L1", 2);
    queue(&f, c, 1, "L2", 1);
    queue(&f, b, 2, "L3", 2);

    r = run(&f, c_close(a, 5));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_OK);
    /* L1 goes to b (a's own waiter left first), L2 to c, then the goodbye. */
    ASSERT_EQ(f.fx.n_fx, 3);
    assert_fx(&f.fx.fx[0], FX_GRANT, 0, b, 1, "L1");
    assert_fx(&f.fx.fx[1], FX_GRANT, 0, c, 1, "L2");
    assert_fx(&f.fx.fx[2], FX_SESSION_GONE, 0, a, 0, NULL);
    assert_holder(&f, "L1", b, f.fx.fx[0].fence, 0);
    assert_holder(&f, "L2", c, f.fx.fx[1].fence, 0);
    assert_holder(&f, "L3", d, 0, 1);
    struct msg_lock_info_r i = info(&f, "L3");
    ASSERT_UEQ(i.waiters[0].session, b);
    free(i.waiters);
    ASSERT_EQ(store_session_exists(f.s, a), 0);
    /* No trace of a: its owned and dedup entries are gone. */
    ASSERT_EQ(count_in(&f, DB_OWNED), 4); /* b: L1 and its L3 wait, c: L2, d: L3 */
    /* A retried CLOSE finds no session. */
    ASSERT_EQ(run(&f, c_close(a, 5)).status, BATON_ESESSION);
    ASSERT_EQ(run(&f, c_acq(a, 6, BATON_WAIT_TRY, "x")).status, BATON_ESESSION);
    teardown(&f);
}

TEST(close_deletes_dedup_entries)
{
    struct fixture f;
    uint64_t a, b;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    grant(&f, a, 1, "x");
    grant(&f, b, 1, "y");
    ASSERT_EQ(count_in(&f, DB_DEDUP), 2);
    run(&f, c_close(a, 2));
    ASSERT_EQ(count_in(&f, DB_DEDUP), 1);
    ASSERT_EQ(count_in(&f, DB_SESSIONS), 1);
    teardown(&f);
}

TEST(expire_session_loses_locks_and_grants_next)
{
    struct fixture f;
    struct cmd_result r;
    uint64_t a, b, fa;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    fa = grant(&f, a, 1, "L");
    queue(&f, b, 1, "L", 1);
    grant(&f, a, 2, "M");
    r = run(&f, c_expire(a));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(f.fx.n_fx, 4);
    assert_fx(&f.fx.fx[0], FX_LOST, BATON_ESESSION, a, 1, "L");
    ASSERT_UEQ(f.fx.fx[0].fence, fa);
    assert_fx(&f.fx.fx[1], FX_GRANT, 0, b, 1, "L");
    assert_fx(&f.fx.fx[2], FX_LOST, BATON_ESESSION, a, 2, "M");
    assert_fx(&f.fx.fx[3], FX_SESSION_GONE, BATON_ESESSION, a, 0, NULL);
    assert_holder(&f, "L", b, f.fx.fx[1].fence, 0);
    assert_holder(&f, "M", 0, 0, 0);
    ASSERT_EQ(store_session_exists(f.s, a), 0);
    /* Expiring it again (or any unknown session) is refused. */
    ASSERT_EQ(run(&f, c_expire(a)).status, BATON_ESESSION);
    ASSERT_EQ(f.fx.n_fx, 0);
    ASSERT_EQ(run(&f, c_expire(999)).status, BATON_ESESSION);
    teardown(&f);
}

TEST(unknown_session_is_esession_and_cached_nowhere)
{
    struct fixture f;
    struct buf before = {0}, after = {0};

    setup(&f);
    open_session(&f);
    snap(&f, &before);
    ASSERT_EQ(run(&f, c_acq(77, 1, BATON_WAIT_FOREVER, "L")).status, BATON_ESESSION);
    ASSERT_EQ(run(&f, c_rel(77, 2, 1, "L")).status, BATON_ESESSION);
    ASSERT_EQ(run(&f, c_cancel(77, 3, 1, "L")).status, BATON_ESESSION);
    ASSERT_EQ(run(&f, c_close(77, 4)).status, BATON_ESESSION);
    snap(&f, &after);
    ASSERT(same_state(&before, &after));
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
}

/* ---- deduplication ---------------------------------------------------------- */

TEST(repeated_request_returns_cached_result_and_changes_nothing)
{
    struct fixture f;
    struct buf before = {0}, after = {0};
    struct cmd_result r;
    uint64_t a, b, fa;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    fa = grant(&f, a, 1, "L");
    queue(&f, b, 1, "L", 1);
    ASSERT_EQ(run(&f, c_acq(b, 2, BATON_WAIT_TRY, "L")).status, BATON_EWOULDBLOCK);

    snap(&f, &before);
    /* The grant, repeated: same fence, no second grant. */
    r = run(&f, c_acq(a, 1, BATON_WAIT_FOREVER, "L"));
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    ASSERT_UEQ(r.value, fa);
    ASSERT_EQ(f.fx.n_fx, 0);
    /* The queued acquire, repeated: not queued twice. */
    r = run(&f, c_acq(b, 1, BATON_WAIT_FOREVER, "L"));
    ASSERT_EQ(r.kind, RESULT_QUEUED);
    ASSERT_UEQ(r.value, 1);
    /* A cached error comes back too. */
    ASSERT_EQ(run(&f, c_acq(b, 2, BATON_WAIT_TRY, "L")).status, BATON_EWOULDBLOCK);
    /* The cache answers by (session, seq), whatever the rest says. */
    r = run(&f, c_rel(a, 1, 12345, "other"));
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    snap(&f, &after);
    ASSERT(same_state(&before, &after));

    /* A release, repeated, does not release the next holder's grant. */
    ASSERT_EQ(run(&f, c_rel(a, 2, fa, "L")).status, 0);
    ASSERT_EQ(f.fx.n_fx, 1);
    snap(&f, &before);
    ASSERT_EQ(run(&f, c_rel(a, 2, fa, "L")).status, 0);
    ASSERT_EQ(f.fx.n_fx, 0);
    snap(&f, &after);
    ASSERT(same_state(&before, &after));
    assert_holder(&f, "L", b, 0, 0);

    /* Two copies of one request in the same entry run once. */
    struct cmd two[2] = {c_acq(a, 3, BATON_WAIT_FOREVER, "L"),
                         c_acq(a, 3, BATON_WAIT_FOREVER, "L")};
    apply_n(&f, two, 2);
    ASSERT_EQ(f.fx.results[0].kind, RESULT_QUEUED);
    ASSERT_EQ(f.fx.results[1].kind, RESULT_QUEUED);
    ASSERT_UEQ(f.fx.results[1].value, 1);
    assert_holder(&f, "L", b, 0, 1);
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
}

TEST(ack_below_prunes_and_stale_retries_are_refused)
{
    struct fixture f;
    struct buf before = {0}, after = {0};
    struct cmd c;
    uint64_t a, b;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    grant(&f, a, 1, "l1");
    grant(&f, a, 2, "l2");
    grant(&f, a, 3, "l3");
    grant(&f, a, 4, "l4");
    ASSERT_EQ(count_in(&f, DB_DEDUP), 4);
    grant(&f, b, 1, "b-lock");

    /* seq 5 acknowledges everything below 3: entries 1 and 2 go. */
    c = c_acq(a, 5, BATON_WAIT_TRY, "free");
    c.ack_below = 3;
    ASSERT_EQ(run(&f, c).kind, RESULT_GRANTED);
    ASSERT_EQ(count_in(&f, DB_DEDUP), 4); /* a: 3, 4, 5; b: 1 */

    /* A retry of seq 2 is stale: refused, nothing changes. */
    snap(&f, &before);
    ASSERT_EQ(run(&f, c_acq(a, 2, BATON_WAIT_FOREVER, "l2")).status, BATON_ESTALE);
    snap(&f, &after);
    ASSERT(same_state(&before, &after));
    /* seq 3 is still cached. */
    ASSERT_EQ(run(&f, c_acq(a, 3, BATON_WAIT_FOREVER, "l3")).kind, RESULT_GRANTED);
    /* A late duplicate with a lower ack_below cannot run seq 1 again. */
    c = c_acq(a, 1, BATON_WAIT_FOREVER, "l1");
    c.ack_below = 0;
    ASSERT_EQ(run(&f, c).status, BATON_ESTALE);
    /* The command carrying ack_below itself may be stale. */
    c = c_acq(a, 6, BATON_WAIT_TRY, "x");
    c.ack_below = 7;
    ASSERT_EQ(run(&f, c).status, BATON_ESTALE);
    ASSERT_EQ(count_in(&f, DB_DEDUP), 1); /* only b's */
    /* Other sessions' entries are untouched. */
    ASSERT_EQ(run(&f, c_acq(b, 1, BATON_WAIT_FOREVER, "b-lock")).kind, RESULT_GRANTED);
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
}

TEST(reapplying_old_index_changes_nothing)
{
    struct fixture f;
    struct buf before = {0}, after = {0}, batch = {0};
    struct cmd c;
    uint64_t a;

    setup(&f);
    a = open_session(&f);
    grant(&f, a, 1, "L");
    snap(&f, &before);
    c = c_acq(a, 2, BATON_WAIT_FOREVER, "M");
    encode(&batch, &c, 1);
    for (uint64_t idx = 0; idx <= f.index; idx++) {
        ASSERT_EQ(store_apply(f.s, idx, batch.data, batch.len, &f.fx), 0);
        ASSERT_EQ(f.fx.n_results, 0);
        ASSERT_EQ(f.fx.n_fx, 0);
    }
    snap(&f, &after);
    ASSERT_EQ(before.len, after.len);
    ASSERT(memcmp(before.data, after.data, before.len) == 0);
    ASSERT_UEQ(store_applied_index(f.s), f.index);
    /* Indexes may skip (barriers, configuration entries). */
    ASSERT_EQ(store_apply(f.s, f.index + 10, batch.data, batch.len, &f.fx), 0);
    ASSERT_EQ(f.fx.n_results, 1);
    ASSERT_UEQ(store_applied_index(f.s), f.index + 10);
    buf_free(&before);
    buf_free(&after);
    buf_free(&batch);
    teardown(&f);
}

TEST(malformed_batch_changes_nothing_but_applied)
{
    struct fixture f;
    struct buf before = {0}, after = {0}, batch = {0};
    struct cmd cmds[2];
    uint64_t a;

    setup(&f);
    a = open_session(&f);
    grant(&f, a, 1, "L");
    snap(&f, &before);
    cmds[0] = c_acq(a, 2, BATON_WAIT_FOREVER, "M");
    cmds[1] = c_rel(a, 3, 1, "L");
    encode(&batch, cmds, 2);
    /* Every truncation, a trailing byte, and random garbage. */
    for (size_t len = 0; len < batch.len; len++) {
        ASSERT_EQ(store_apply(f.s, ++f.index, batch.data, len, &f.fx), 0);
        ASSERT_EQ(f.fx.n_results, 0);
        ASSERT_EQ(f.fx.n_fx, 0);
        ASSERT_UEQ(store_applied_index(f.s), f.index);
    }
    ASSERT_EQ(buf_put_u8(&batch, 0), 0);
    ASSERT_EQ(store_apply(f.s, ++f.index, batch.data, batch.len, &f.fx), 0);
    ASSERT_EQ(f.fx.n_results, 0);
    ASSERT_EQ(store_apply(f.s, ++f.index, "\x01garbage!", 9, &f.fx), 0);
    ASSERT_EQ(f.fx.n_results, 0);
    ASSERT_EQ(store_apply(f.s, ++f.index, NULL, 0, &f.fx), 0);
    ASSERT_EQ(f.fx.n_results, 0);
    ASSERT_UEQ(store_applied_index(f.s), f.index);
    snap(&f, &after);
    ASSERT(same_state(&before, &after));
    buf_free(&before);
    buf_free(&after);
    buf_free(&batch);
    teardown(&f);
}

/* ---- cancel, timeouts, forced release ----------------------------------------- */

TEST(cancel_waiting_and_cancel_vs_grant_race)
{
    struct fixture f;
    struct cmd_result r;
    uint64_t a, b, fa, fb;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    fa = grant(&f, a, 1, "L");
    queue(&f, b, 7, "L", 1);
    /* Still waiting: removed. */
    r = run(&f, c_cancel(b, 8, 7, "L"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_CANCELLED);
    ASSERT_EQ(f.fx.n_fx, 1);
    assert_fx(&f.fx.fx[0], FX_WAIT_FAILED, BATON_ECANCELED, b, 7, "L");
    assert_holder(&f, "L", a, fa, 0);
    /* The cancelled ACQUIRE, retried, reports how its wait ended. */
    ASSERT_EQ(run(&f, c_acq(b, 7, BATON_WAIT_FOREVER, "L")).status, BATON_ECANCELED);
    /* Cancelling again: nothing to cancel (a new seq, so not cached). */
    ASSERT_EQ(run(&f, c_cancel(b, 9, 7, "L")).status, BATON_ENOTFOUND);

    /* The race: the grant lands before the cancel. */
    queue(&f, b, 10, "L", 1);
    ASSERT_EQ(run(&f, c_rel(a, 2, fa, "L")).status, 0);
    assert_fx(&f.fx.fx[0], FX_GRANT, 0, b, 10, "L");
    fb = f.fx.fx[0].fence;
    r = run(&f, c_cancel(b, 11, 10, "L"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    ASSERT_UEQ(r.value, fb);
    ASSERT_EQ(f.fx.n_fx, 0);
    assert_holder(&f, "L", b, fb, 0);
    /* Wrong name or someone else's waiter: not found. */
    ASSERT_EQ(run(&f, c_cancel(b, 12, 10, "M")).status, BATON_ENOTFOUND);
    ASSERT_EQ(run(&f, c_cancel(a, 3, 10, "L")).status, BATON_ENOTFOUND);
    ASSERT_EQ(run(&f, c_cancel(b, 13, 999, "L")).status, BATON_ENOTFOUND);
    teardown(&f);
}

TEST(cancel_from_middle_of_queue_keeps_order)
{
    struct fixture f;
    uint64_t s[5], fence;

    setup(&f);
    for (int i = 0; i < 5; i++) s[i] = open_session(&f);
    fence = grant(&f, s[0], 1, "L");
    for (int i = 1; i < 5; i++) queue(&f, s[i], 1, "L", (uint64_t)i);
    ASSERT_EQ(run(&f, c_cancel(s[2], 2, 1, "L")).kind, RESULT_CANCELLED);
    assert_holder(&f, "L", s[0], fence, 3);
    /* A new waiter gets the position after the remaining three. */
    ASSERT_EQ(run(&f, c_acq(s[2], 3, BATON_WAIT_FOREVER, "L")).value, 4);
    uint64_t expect[] = {s[1], s[3], s[4], s[2]};
    uint64_t expect_waiter[] = {1, 1, 1, 3};
    uint64_t holder = s[0];
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ(run(&f, c_rel(holder, 100 + (uint64_t)i, fence, "L")).status, 0);
        assert_fx(&f.fx.fx[0], FX_GRANT, 0, expect[i], expect_waiter[i], "L");
        holder = expect[i];
        fence = f.fx.fx[0].fence;
    }
    teardown(&f);
}

struct timed {
    int n;
    uint64_t session, waiter;
    int64_t wait_ms;
    char name[16];
};

static int collect_timed(void *data, uint64_t session, uint64_t waiter, int64_t wait_ms,
                         const char *name, size_t name_len)
{
    struct timed *t = data;
    t->n++;
    t->session = session;
    t->waiter = waiter;
    t->wait_ms = wait_ms;
    memcpy(t->name, name, name_len < 15 ? name_len : 15);
    return 0;
}

TEST(wait_timeout_removes_only_waiters)
{
    struct fixture f;
    struct timed t = {0};
    struct cmd_result r;
    uint64_t a, b, c, fa;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    fa = grant(&f, a, 1, "L");
    r = run(&f, c_acq(b, 4, 250, "L"));
    ASSERT_EQ(r.kind, RESULT_QUEUED);
    queue(&f, c, 1, "L", 2);
    ASSERT_EQ(store_foreach_timed_waiter(f.s, collect_timed, &t), 0);
    ASSERT_EQ(t.n, 1);
    ASSERT_UEQ(t.session, b);
    ASSERT_UEQ(t.waiter, 4);
    ASSERT_EQ(t.wait_ms, 250);
    ASSERT_STREQ(t.name, "L");

    /* On a holder: a no-op. */
    struct buf before = {0}, after = {0};
    snap(&f, &before);
    r = run(&f, c_timeout(a, 1, "L"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(f.fx.n_fx, 0);
    r = run(&f, c_timeout(b, 4, "wrong-name"));
    ASSERT_EQ(r.status, 0);
    r = run(&f, c_timeout(99, 4, "L"));
    ASSERT_EQ(r.status, 0);
    snap(&f, &after);
    ASSERT(same_state(&before, &after));

    /* On the waiter: removed, with WAIT_FAILED. */
    r = run(&f, c_timeout(b, 4, "L"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(f.fx.n_fx, 1);
    assert_fx(&f.fx.fx[0], FX_WAIT_FAILED, BATON_ETIMEDOUT, b, 4, "L");
    assert_holder(&f, "L", a, fa, 1);
    ASSERT_EQ(run(&f, c_acq(b, 4, 250, "L")).status, BATON_ETIMEDOUT);
    /* Twice: a no-op. */
    r = run(&f, c_timeout(b, 4, "L"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(f.fx.n_fx, 0);
    /* The grant came first: the timeout is a no-op. */
    ASSERT_EQ(run(&f, c_rel(a, 2, fa, "L")).status, 0);
    assert_fx(&f.fx.fx[0], FX_GRANT, 0, c, 1, "L");
    r = run(&f, c_timeout(c, 1, "L"));
    ASSERT_EQ(f.fx.n_fx, 0);
    assert_holder(&f, "L", c, 0, 0);
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
}

TEST(force_release)
{
    struct fixture f;
    struct cmd_result r;
    uint64_t a, b, fa;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    fa = grant(&f, a, 1, "L");
    queue(&f, b, 1, "L", 1);
    r = run(&f, c_force("L"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(f.fx.n_fx, 2);
    assert_fx(&f.fx.fx[0], FX_LOST, BATON_ELOST, a, 1, "L");
    ASSERT_UEQ(f.fx.fx[0].fence, fa);
    assert_fx(&f.fx.fx[1], FX_GRANT, 0, b, 1, "L");
    /* The old holder can no longer release. */
    ASSERT_EQ(run(&f, c_rel(a, 2, fa, "L")).status, BATON_ENOTHELD);
    ASSERT_EQ(run(&f, c_force("L")).status, 0);
    ASSERT_EQ(run(&f, c_force("L")).status, BATON_ENOTHELD);
    ASSERT_EQ(run(&f, c_force("")).status, BATON_EINVAL);
    /* n_owned went down with each loss: both sessions own nothing. */
    ASSERT_EQ(count_in(&f, DB_OWNED), 0);
    teardown(&f);
}

static int count_fx(const struct effects *e, uint8_t type);

/* The last entry's FX_LOCK_CHANGED names are exactly `names` (NULL-ended),
 * in that order: each changed lock once. */
static void assert_changed(const struct fixture *f, const char *const *names)
{
    size_t n = 0;

    for (; names[n] != NULL; n++) {
        ASSERT_LT(n, f->changed.n_fx);
        assert_fx(&f->changed.fx[n], FX_LOCK_CHANGED, 0, 0, 0, names[n]);
        ASSERT_UEQ(f->changed.fx[n].fence, 0);
    }
    ASSERT_UEQ(f->changed.n_fx, n);
}

#define CHANGED(f, ...) assert_changed((f), (const char *const[]){__VA_ARGS__, NULL})
#define UNCHANGED(f) ASSERT_UEQ((f)->changed.n_fx, 0)

/* Every kind of change to a lock's record or queue emits FX_LOCK_CHANGED
 * once per lock per entry; what changes nothing emits none. */
TEST(lock_changed_once_per_lock_per_entry)
{
    struct fixture f;
    struct cmd_result r;
    struct cmd cmds[5];
    uint64_t a, b, c, fa;

    setup(&f);
    a = open_session(&f);
    UNCHANGED(&f); /* sessions are not locks */
    b = open_session(&f);
    c = open_session(&f);

    fa = grant(&f, a, 1, "L");                     /* granted */
    CHANGED(&f, "L");
    queue(&f, b, 1, "L", 1);                       /* queued */
    CHANGED(&f, "L");
    r = run(&f, c_acq(c, 1, BATON_WAIT_TRY, "L")); /* refused try: no change */
    ASSERT_EQ(r.status, BATON_EWOULDBLOCK);
    UNCHANGED(&f);
    r = run(&f, c_acq(b, 1, BATON_WAIT_FOREVER, "L")); /* replayed: no change */
    ASSERT_EQ(r.kind, RESULT_QUEUED);
    UNCHANGED(&f);
    ASSERT_EQ(run(&f, c_rel(a, 2, fa + 100, "L")).status, BATON_ENOTHELD);
    UNCHANGED(&f);

    /* A release that hands the lock on changes it once, not twice. */
    ASSERT_EQ(run(&f, c_rel(a, 3, fa, "L")).status, 0);
    ASSERT_EQ(count_fx(&f.fx, FX_GRANT), 1);
    CHANGED(&f, "L");

    /* Cancel, wait timeout; a timeout of a waiter that is gone is a no-op. */
    queue(&f, c, 2, "L", 1);
    ASSERT_EQ(run(&f, c_cancel(c, 3, 2, "L")).kind, RESULT_CANCELLED);
    CHANGED(&f, "L");
    queue(&f, c, 4, "L", 1);
    run(&f, c_timeout(c, 4, "L"));
    CHANGED(&f, "L");
    run(&f, c_timeout(c, 4, "L"));
    UNCHANGED(&f);

    /* Forced release (to nobody), and of a lock nobody holds. */
    ASSERT_EQ(run(&f, c_force("L")).status, 0);
    CHANGED(&f, "L");
    ASSERT_EQ(run(&f, c_force("L")).status, BATON_ENOTHELD);
    UNCHANGED(&f);

    /* Several commands on two locks in one entry: each lock once, in the
     * order of its first change. */
    cmds[0] = c_acq(a, 10, BATON_WAIT_FOREVER, "M");
    cmds[1] = c_acq(b, 10, BATON_WAIT_FOREVER, "L");
    cmds[2] = c_acq(c, 10, BATON_WAIT_FOREVER, "M");
    cmds[3] = c_acq(c, 11, BATON_WAIT_TRY, "L");
    cmds[4] = c_cancel(c, 12, 10, "M");
    apply_n(&f, cmds, 5);
    ASSERT_EQ(f.fx.results[2].kind, RESULT_QUEUED);
    ASSERT_EQ(f.fx.results[3].status, BATON_EWOULDBLOCK);
    CHANGED(&f, "M", "L");

    /* Expiry and close drop holds and waits: every lock touched, once. */
    queue(&f, c, 20, "M", 1);
    queue(&f, c, 21, "L", 1);
    run(&f, c_expire(c)); /* c's two waits */
    CHANGED(&f, "M", "L");
    queue(&f, b, 20, "M", 1);
    run(&f, c_close(a, 30)); /* a holds M, which goes to b */
    ASSERT_EQ(count_fx(&f.fx, FX_GRANT), 1);
    CHANGED(&f, "M");

    /* A lock-delay: the expiry starts it, DELAY_END ends it; a DELAY_END
     * of a lock that is not delayed changes nothing. */
    c = open_session(&f);
    ASSERT_EQ(run(&f, c_acq_d(c, 1, BATON_WAIT_FOREVER, "D", 500)).kind, RESULT_GRANTED);
    CHANGED(&f, "D");
    run(&f, c_expire(c));
    ASSERT_EQ(count_fx(&f.fx, FX_LOCK_DELAY), 1);
    CHANGED(&f, "D");
    run(&f, c_delay_end("D"));
    CHANGED(&f, "D");
    run(&f, c_delay_end("D"));
    UNCHANGED(&f);
    teardown(&f);
}

/* ---- limits and validation ------------------------------------------------ */

TEST(invalid_names_and_waits)
{
    struct fixture f;
    struct cmd c;
    uint64_t a;

    setup(&f);
    a = open_session(&f);
    ASSERT_EQ(run(&f, c_acq(a, 1, BATON_WAIT_FOREVER, "")).status, BATON_EINVAL);
    c = c_acq(a, 2, BATON_WAIT_FOREVER, "a\0b");
    c.name_len = 3;
    ASSERT_EQ(run(&f, c).status, BATON_EINVAL);
    ASSERT_EQ(run(&f, c_acq(a, 3, -2, "ok")).status, BATON_EINVAL);
    ASSERT_EQ(run(&f, c_acq(a, 0, BATON_WAIT_FOREVER, "ok")).status, BATON_EINVAL);
    ASSERT_EQ(count_in(&f, DB_LOCKS), 0);
    teardown(&f);
}

TEST(limit_owned_per_session)
{
    struct fixture f;
    static char names[STORE_MAX_OWNED_PER_SESSION][16];
    static struct cmd cmds[CMD_MAX_BATCH];
    uint64_t a, b, seq = 0;
    int done = 0;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    grant(&f, b, 1, "held");
    /* Holds and waits both count. */
    queue(&f, a, ++seq, "held", 1);
    done = 1;
    while (done < STORE_MAX_OWNED_PER_SESSION) {
        size_t n = 0;
        while (n < CMD_MAX_BATCH && done < STORE_MAX_OWNED_PER_SESSION) {
            snprintf(names[done], sizeof names[done], "l%05d", done);
            cmds[n++] = c_acq(a, ++seq, BATON_WAIT_TRY, names[done]);
            done++;
        }
        apply_n(&f, cmds, n);
        for (size_t i = 0; i < n; i++) ASSERT_EQ(f.fx.results[i].kind, RESULT_GRANTED);
    }
    ASSERT_EQ(run(&f, c_acq(a, ++seq, BATON_WAIT_TRY, "one-more")).status, BATON_ELIMIT);
    ASSERT_EQ(run(&f, c_acq(a, ++seq, BATON_WAIT_FOREVER, "held")).status, BATON_ELIMIT);
    /* Letting go of one makes room again. */
    ASSERT_EQ(run(&f, c_cancel(a, ++seq, 1, "held")).kind, RESULT_CANCELLED);
    ASSERT_EQ(run(&f, c_acq(a, ++seq, BATON_WAIT_TRY, "one-more")).kind, RESULT_GRANTED);
    /* Other sessions are not limited by a's count. */
    ASSERT_EQ(run(&f, c_acq(b, 2, BATON_WAIT_TRY, "b-too")).kind, RESULT_GRANTED);
    /* Closing a releases all 10000 in one entry. */
    ASSERT_EQ(run(&f, c_close(a, ++seq)).status, 0);
    ASSERT_EQ(count_in(&f, DB_OWNED), 2);
    teardown(&f);
}

TEST(limit_sessions)
{
    struct fixture f;
    static struct cmd cmds[CMD_MAX_BATCH];
    int opened = 0;

    setup(&f);
    while (opened < STORE_MAX_SESSIONS) {
        size_t n = 0;
        while (n < CMD_MAX_BATCH && opened < STORE_MAX_SESSIONS) {
            cmds[n++] = c_open(1000, "many");
            opened++;
        }
        apply_n(&f, cmds, n);
        ASSERT_EQ(f.fx.results[n - 1].status, 0);
    }
    ASSERT_UEQ(f.fx.results[f.fx.n_results - 1].value, STORE_MAX_SESSIONS);
    ASSERT_EQ(run(&f, c_open(1000, "late")).status, BATON_ELIMIT);
    ASSERT_EQ(run(&f, c_expire(5)).status, 0);
    ASSERT_UEQ(run(&f, c_open(1000, "late")).value, STORE_MAX_SESSIONS + 1);
    teardown(&f);
}

/* ---- reads ------------------------------------------------------------------ */

struct listed {
    int n;
    char names[8][16];
    uint64_t holder[8];
    uint32_t waiters[8];
};

static int collect_lock(void *data, const char *name, size_t name_len, uint64_t holder,
                        uint64_t fence, uint32_t n_waiters)
{
    struct listed *l = data;
    (void)fence;
    ASSERT_LT(l->n, 8);
    memcpy(l->names[l->n], name, name_len);
    l->names[l->n][name_len] = 0;
    l->holder[l->n] = holder;
    l->waiters[l->n] = n_waiters;
    l->n++;
    return 0;
}

TEST(list_locks_and_lock_info)
{
    struct fixture f;
    struct listed l;
    struct msg_lock_info_r i;
    uint64_t a, b;
    int more;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    grant(&f, a, 1, "app/b");
    grant(&f, a, 2, "app/a");
    grant(&f, a, 3, "zzz");
    grant(&f, a, 4, "app");
    queue(&f, b, 1, "app/b", 1);
    queue(&f, b, 2, "app/b", 2);

    memset(&l, 0, sizeof l);
    ASSERT_EQ(store_list_locks(f.s, "app/", 4, 10, collect_lock, &l, &more), 0);
    ASSERT_EQ(l.n, 2);
    ASSERT_EQ(more, 0);
    ASSERT_STREQ(l.names[0], "app/a");
    ASSERT_STREQ(l.names[1], "app/b");
    ASSERT_EQ(l.waiters[1], 2);
    ASSERT_UEQ(l.holder[1], a);

    memset(&l, 0, sizeof l);
    ASSERT_EQ(store_list_locks(f.s, "", 0, 3, collect_lock, &l, &more), 0);
    ASSERT_EQ(l.n, 3);
    ASSERT_EQ(more, 1);
    ASSERT_STREQ(l.names[0], "app");

    memset(&l, 0, sizeof l);
    ASSERT_EQ(store_list_locks(f.s, "nope", 4, 3, collect_lock, &l, &more), 0);
    ASSERT_EQ(l.n, 0);
    ASSERT_EQ(more, 0);

    /* max_waiters caps the list, not the total. */
    memset(&i, 0, sizeof i);
    ASSERT_EQ(store_lock_info(f.s, "app/b", 5, 1, &i), 0);
    ASSERT_EQ(i.total_waiters, 2);
    ASSERT_EQ(i.n_waiters, 1);
    ASSERT_UEQ(i.waiters[0].session, b);
    ASSERT_UEQ(i.waiters[0].waiter, 1);
    free(i.waiters);
    /* Names that cannot be locks are simply free. */
    i = info(&f, "");
    ASSERT_EQ(i.held, 0);
    teardown(&f);
}

/* ---- lock-delay ------------------------------------------------------------ */

/* Acquire with a lock-delay and expect a grant; returns the fence. */
static uint64_t grant_d(struct fixture *f, uint64_t s, uint64_t seq, const char *name,
                        int32_t delay_ms)
{
    struct cmd_result r = run(f, c_acq_d(s, seq, BATON_WAIT_FOREVER, name, delay_ms));

    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    return r.value;
}

/* Acquire with a lock-delay and expect to be queued at `pos`. */
static void queue_d(struct fixture *f, uint64_t s, uint64_t seq, const char *name, uint64_t pos,
                    int32_t delay_ms)
{
    struct cmd_result r = run(f, c_acq_d(s, seq, BATON_WAIT_FOREVER, name, delay_ms));

    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_QUEUED);
    ASSERT_UEQ(r.value, pos);
}

/* The lock is free, delayed, and has `waiters` waiters. */
static void assert_delayed(struct fixture *f, const char *name, uint32_t waiters)
{
    struct msg_lock_info_r i = info(f, name);

    ASSERT_EQ(i.held, 0);
    ASSERT_EQ(i.delayed, 1);
    ASSERT_UEQ(i.holder_session, 0);
    ASSERT_UEQ(i.holder_waiter, 0);
    ASSERT_UEQ(i.fence, 0);
    ASSERT_EQ(i.total_waiters, waiters);
    ASSERT_EQ(i.n_waiters, waiters);
    free(i.waiters);
}

/* store_lock_info's delayed flag for name. */
static int is_delayed(struct fixture *f, const char *name)
{
    struct msg_lock_info_r i = info(f, name);

    free(i.waiters);
    return i.delayed;
}

static int count_fx(const struct effects *e, uint8_t type)
{
    int n = 0;

    for (size_t i = 0; i < e->n_fx; i++) n += e->fx[i].type == type;
    return n;
}

struct delayed_seen {
    int n;
    char names[8][16];
    int32_t delay[8];
};

static int collect_delayed(void *data, const char *name, size_t name_len, int32_t delay_ms)
{
    struct delayed_seen *d = data;

    ASSERT_LT(d->n, 8);
    ASSERT_LT(name_len, 16);
    memcpy(d->names[d->n], name, name_len);
    d->names[d->n][name_len] = 0;
    d->delay[d->n] = delay_ms;
    d->n++;
    return 0;
}

static int stop_delayed(void *data, const char *name, size_t name_len, int32_t delay_ms)
{
    (void)data;
    (void)name;
    (void)name_len;
    (void)delay_ms;
    return 7;
}

/*
 * The whole life of a delay: an expired hold with a delay leaves its lock
 * ungranted (FX_LOST, FX_LOCK_DELAY, no FX_GRANT), newcomers queue behind
 * the delay, DELAY_END grants the head with a higher fence, and each grant
 * carries the delay of the ACQUIRE that won it.
 */
TEST(expire_with_lock_delay_keeps_lock_ungranted)
{
    struct fixture f;
    struct cmd_result r;
    uint64_t a, b, c, fa, fb;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    fa = grant_d(&f, a, 1, "L", 5000);
    queue_d(&f, b, 1, "L", 1, 0);   /* b's hold will have no delay */
    r = run(&f, c_expire(a));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(f.fx.n_fx, 3);
    assert_fx(&f.fx.fx[0], FX_LOST, BATON_ESESSION, a, 1, "L");
    ASSERT_UEQ(f.fx.fx[0].fence, fa);
    assert_fx(&f.fx.fx[1], FX_LOCK_DELAY, 0, a, 1, "L");
    ASSERT_UEQ(f.fx.fx[1].fence, fa);
    ASSERT_EQ(f.fx.fx[1].lock_delay_ms, 5000);
    assert_fx(&f.fx.fx[2], FX_SESSION_GONE, BATON_ESESSION, a, 0, NULL);
    ASSERT_EQ(f.fx.fx[0].lock_delay_ms, 0); /* only FX_LOCK_DELAY carries it */
    assert_delayed(&f, "L", 1);
    /* b's ACQUIRE, retried, still waits. */
    r = run(&f, c_acq(b, 1, BATON_WAIT_FOREVER, "L"));
    ASSERT_EQ(r.kind, RESULT_QUEUED);

    /* While delayed: a try fails, a wait queues behind b. */
    r = run(&f, c_acq(c, 1, BATON_WAIT_TRY, "L"));
    ASSERT_EQ(r.status, BATON_EWOULDBLOCK);
    ASSERT_EQ(f.fx.n_fx, 0);
    queue_d(&f, c, 2, "L", 2, 700); /* c's hold will have a 700 ms delay */
    assert_delayed(&f, "L", 2);
    /* Nobody holds it: a release and a forced release find no holder. */
    ASSERT_EQ(run(&f, c_rel(a, 9, fa, "L")).status, BATON_ESESSION);
    ASSERT_EQ(run(&f, c_rel(b, 2, 0, "L")).status, BATON_ENOTHELD);
    ASSERT_EQ(run(&f, c_force("L")).status, BATON_ENOTHELD);
    assert_delayed(&f, "L", 2);

    /* The delay ends: the head gets it with a fence above the lost one. */
    r = run(&f, c_delay_end("L"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_OK);
    ASSERT_EQ(f.fx.n_fx, 1);
    assert_fx(&f.fx.fx[0], FX_GRANT, 0, b, 1, "L");
    fb = f.fx.fx[0].fence;
    ASSERT_ULT(fa, fb);
    assert_holder(&f, "L", b, fb, 1);
    ASSERT_EQ(is_delayed(&f, "L"), 0);
    r = run(&f, c_acq(b, 1, BATON_WAIT_FOREVER, "L"));
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    ASSERT_UEQ(r.value, fb);
    /* A second DELAY_END (late timer, new leader) changes nothing. */
    {
        struct buf before = {0}, after = {0};
        snap(&f, &before);
        r = run(&f, c_delay_end("L"));
        ASSERT_EQ(r.status, 0);
        ASSERT_EQ(f.fx.n_fx, 0);
        snap(&f, &after);
        ASSERT(same_state(&before, &after));
        buf_free(&before);
        buf_free(&after);
    }

    /* b's hold has no delay: its expiry hands the lock on at once... */
    r = run(&f, c_expire(b));
    ASSERT_EQ(f.fx.n_fx, 3);
    assert_fx(&f.fx.fx[0], FX_LOST, BATON_ESESSION, b, 1, "L");
    assert_fx(&f.fx.fx[1], FX_GRANT, 0, c, 2, "L");
    assert_fx(&f.fx.fx[2], FX_SESSION_GONE, BATON_ESESSION, b, 0, NULL);
    assert_holder(&f, "L", c, f.fx.fx[1].fence, 0);
    /* ...and c's hold carries the 700 ms it asked for while queued. */
    r = run(&f, c_expire(c));
    ASSERT_EQ(f.fx.n_fx, 3);
    assert_fx(&f.fx.fx[1], FX_LOCK_DELAY, 0, c, 2, "L");
    ASSERT_EQ(f.fx.fx[1].lock_delay_ms, 700);
    assert_delayed(&f, "L", 0);
    teardown(&f);
}

/* A delay of 0 means none: expiry grants at once, as before lock-delay. */
TEST(expire_without_delay_grants_at_once)
{
    struct fixture f;
    uint64_t a, b;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    grant_d(&f, a, 1, "L", 0);
    queue_d(&f, b, 1, "L", 1, 300);
    run(&f, c_expire(a));
    ASSERT_EQ(count_fx(&f.fx, FX_LOCK_DELAY), 0);
    ASSERT_EQ(count_fx(&f.fx, FX_GRANT), 1);
    assert_holder(&f, "L", b, 0, 0);
    ASSERT_EQ(is_delayed(&f, "L"), 0);
    teardown(&f);
}

/* CLOSE_SESSION, RELEASE and FORCE_RELEASE never delay, whatever the hold's
 * lock-delay: the lock goes to the next waiter in the same apply. */
TEST(close_release_and_force_never_delay)
{
    struct fixture f;
    struct cmd_result r;
    uint64_t a, b, c, fa;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    grant_d(&f, a, 1, "L", 5000);
    queue_d(&f, b, 1, "L", 1, 5000);
    queue_d(&f, c, 1, "L", 2, 5000);
    grant_d(&f, a, 2, "M", 5000);

    r = run(&f, c_close(a, 3));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(count_fx(&f.fx, FX_LOCK_DELAY), 0);
    ASSERT_EQ(count_fx(&f.fx, FX_LOST), 0);
    ASSERT_EQ(f.fx.n_fx, 2);
    assert_fx(&f.fx.fx[0], FX_GRANT, 0, b, 1, "L");
    assert_fx(&f.fx.fx[1], FX_SESSION_GONE, 0, a, 0, NULL);
    ASSERT_EQ(count_in(&f, DB_LOCKS), 1); /* M was deleted, not delayed */

    r = run(&f, c_force("L"));
    ASSERT_EQ(f.fx.n_fx, 2);
    assert_fx(&f.fx.fx[0], FX_LOST, BATON_ELOST, b, 1, "L");
    assert_fx(&f.fx.fx[1], FX_GRANT, 0, c, 1, "L");
    fa = f.fx.fx[1].fence;

    r = run(&f, c_rel(c, 2, fa, "L"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(f.fx.n_fx, 0);
    ASSERT_EQ(count_in(&f, DB_LOCKS), 0);
    teardown(&f);
}

/* A delayed lock nobody waits for keeps its record until DELAY_END, which
 * then deletes it. DELAY_END on anything but a delayed lock is a no-op. */
TEST(delayed_lock_with_empty_queue)
{
    struct fixture f;
    struct buf before = {0}, after = {0};
    struct cmd_result r;
    uint64_t a, b;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    grant_d(&f, a, 1, "L", 250);
    grant_d(&f, b, 1, "held", 250);

    snap(&f, &before);
    ASSERT_EQ(run(&f, c_delay_end("L")).status, 0);       /* held: no-op */
    ASSERT_EQ(run(&f, c_delay_end("nothing")).status, 0); /* no such lock */
    ASSERT_EQ(run(&f, c_delay_end("")).status, 0);        /* not a lock name */
    ASSERT_EQ(f.fx.n_fx, 0);
    snap(&f, &after);
    ASSERT(same_state(&before, &after));

    run(&f, c_expire(a));
    ASSERT_EQ(count_fx(&f.fx, FX_LOCK_DELAY), 1);
    ASSERT_EQ(count_fx(&f.fx, FX_GRANT), 0);
    assert_delayed(&f, "L", 0);
    ASSERT_EQ(count_in(&f, DB_LOCKS), 2);
    ASSERT_EQ(count_in(&f, DB_OWNED), 1); /* b's hold only */

    r = run(&f, c_delay_end("L"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_OK);
    ASSERT_EQ(f.fx.n_fx, 0);
    ASSERT_EQ(count_in(&f, DB_LOCKS), 1);
    assert_holder(&f, "L", 0, 0, 0);
    ASSERT_EQ(is_delayed(&f, "L"), 0);
    /* Free again: the next ACQUIRE is granted at once. */
    grant(&f, b, 2, "L");
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
}

/* The waiters of a delayed lock can be cancelled, time out, or vanish with
 * their session; the lock stays delayed until DELAY_END even once its
 * queue is empty. */
TEST(waiters_of_delayed_lock_leave_as_usual)
{
    struct fixture f;
    struct timed t = {0};
    struct cmd_result r;
    uint64_t a, b, c, d;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    d = open_session(&f);
    grant_d(&f, a, 1, "L", 1000);
    queue_d(&f, b, 1, "L", 1, 0);
    run(&f, c_expire(a));
    assert_delayed(&f, "L", 1);
    ASSERT_EQ(run(&f, c_acq(c, 1, 400, "L")).kind, RESULT_QUEUED);
    queue_d(&f, d, 1, "L", 3, 0);
    /* The timed waiter is still found for its deadline. */
    ASSERT_EQ(store_foreach_timed_waiter(f.s, collect_timed, &t), 0);
    ASSERT_EQ(t.n, 1);
    ASSERT_UEQ(t.session, c);

    r = run(&f, c_cancel(b, 2, 1, "L"));
    ASSERT_EQ(r.kind, RESULT_CANCELLED);
    assert_fx(&f.fx.fx[0], FX_WAIT_FAILED, BATON_ECANCELED, b, 1, "L");
    assert_delayed(&f, "L", 2);
    r = run(&f, c_timeout(c, 1, "L"));
    ASSERT_EQ(r.status, 0);
    assert_fx(&f.fx.fx[0], FX_WAIT_FAILED, BATON_ETIMEDOUT, c, 1, "L");
    assert_delayed(&f, "L", 1);
    run(&f, c_expire(d));
    ASSERT_EQ(f.fx.n_fx, 1); /* only FX_SESSION_GONE */
    assert_delayed(&f, "L", 0);
    ASSERT_EQ(count_in(&f, DB_WAITERS), 0);
    ASSERT_EQ(count_in(&f, DB_OWNED), 0);
    ASSERT_EQ(count_in(&f, DB_LOCKS), 1);
    run(&f, c_delay_end("L"));
    ASSERT_EQ(f.fx.n_fx, 0);
    ASSERT_EQ(count_in(&f, DB_LOCKS), 0);
    teardown(&f);
}

/* A session that holds a delayed lock and also waits for it (another
 * thread), plus a second delayed lock: its own wait leaves first, both
 * locks become delayed, and the undelayed one goes to the next waiter. */
TEST(expire_with_several_delayed_holds)
{
    struct fixture f;
    struct delayed_seen d = {0};
    uint64_t a, b;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    grant_d(&f, a, 1, "x", 100);
    queue_d(&f, a, 2, "x", 1, 100);
    grant_d(&f, a, 3, "y", 200);
    grant_d(&f, a, 4, "z", 0);
    queue_d(&f, b, 1, "z", 1, 0);
    queue_d(&f, b, 2, "y", 1, 0);
    run(&f, c_expire(a));
    ASSERT_EQ(count_fx(&f.fx, FX_LOST), 3);
    ASSERT_EQ(count_fx(&f.fx, FX_LOCK_DELAY), 2);
    ASSERT_EQ(count_fx(&f.fx, FX_GRANT), 1);
    ASSERT_EQ(count_fx(&f.fx, FX_SESSION_GONE), 1);
    /* Each FX_LOCK_DELAY follows its FX_LOST. */
    for (size_t i = 0; i < f.fx.n_fx; i++) {
        if (f.fx.fx[i].type != FX_LOCK_DELAY) continue;
        ASSERT_GT(i, 0);
        ASSERT_EQ(f.fx.fx[i - 1].type, FX_LOST);
        ASSERT_UEQ(f.fx.fx[i - 1].fence, f.fx.fx[i].fence);
    }
    assert_delayed(&f, "x", 0);
    assert_delayed(&f, "y", 1);
    assert_holder(&f, "z", b, 0, 0);
    ASSERT_EQ(store_foreach_delayed_lock(f.s, collect_delayed, &d), 0);
    ASSERT_EQ(d.n, 2);
    ASSERT_STREQ(d.names[0], "x");
    ASSERT_EQ(d.delay[0], 100);
    ASSERT_STREQ(d.names[1], "y");
    ASSERT_EQ(d.delay[1], 200);
    teardown(&f);
}

/* store_foreach_delayed_lock reports every delayed lock with its full
 * delay, skips held and queued ones, and stops at a callback's non-zero
 * return. */
TEST(foreach_delayed_lock)
{
    struct fixture f;
    struct delayed_seen d = {0};
    uint64_t a, b, c;

    setup(&f);
    ASSERT_EQ(store_foreach_delayed_lock(f.s, collect_delayed, &d), 0);
    ASSERT_EQ(d.n, 0);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    grant_d(&f, a, 1, "d1", 1500);
    grant_d(&f, b, 1, "d2", 30000);
    queue_d(&f, c, 1, "d2", 1, 0);
    grant_d(&f, c, 2, "held", 999);
    queue_d(&f, a, 2, "held", 1, 0);
    run(&f, c_expire(a));
    run(&f, c_expire(b));
    ASSERT_EQ(store_foreach_delayed_lock(f.s, collect_delayed, &d), 0);
    ASSERT_EQ(d.n, 2);
    ASSERT_STREQ(d.names[0], "d1");
    ASSERT_EQ(d.delay[0], 1500);
    ASSERT_STREQ(d.names[1], "d2");
    ASSERT_EQ(d.delay[1], 30000);
    ASSERT_EQ(store_foreach_delayed_lock(f.s, stop_delayed, NULL), 7);
    /* Listing shows them free, with their queues. */
    {
        struct listed l;
        int more;
        memset(&l, 0, sizeof l);
        ASSERT_EQ(store_list_locks(f.s, "d", 1, 10, collect_lock, &l, &more), 0);
        ASSERT_EQ(l.n, 2);
        ASSERT_UEQ(l.holder[0], 0);
        ASSERT_UEQ(l.holder[1], 0);
        ASSERT_EQ(l.waiters[1], 1);
    }
    run(&f, c_delay_end("d2"));
    ASSERT_EQ(count_fx(&f.fx, FX_GRANT), 1);
    memset(&d, 0, sizeof d);
    ASSERT_EQ(store_foreach_delayed_lock(f.s, collect_delayed, &d), 0);
    ASSERT_EQ(d.n, 1);
    ASSERT_STREQ(d.names[0], "d1");
    teardown(&f);
}

/* A negative lock-delay in the command is the leader's bug: refused. */
TEST(negative_lock_delay_is_einval)
{
    struct fixture f;
    uint64_t a;

    setup(&f);
    a = open_session(&f);
    ASSERT_EQ(run(&f, c_acq_d(a, 1, BATON_WAIT_FOREVER, "L", -1)).status, BATON_EINVAL);
    ASSERT_EQ(run(&f, c_acq_d(a, 2, BATON_WAIT_TRY, "L", INT32_MIN)).status, BATON_EINVAL);
    ASSERT_EQ(count_in(&f, DB_LOCKS), 0);
    ASSERT_EQ(count_in(&f, DB_OWNED), 0);
    teardown(&f);
}

/* A snapshot carries the delayed flag, the running delay and the waiters'
 * delays: the restored store reports the same, and both go on identically
 * through DELAY_END and the next expiry. */
TEST(snapshot_restore_keeps_delay)
{
    struct fixture f, g;
    struct buf s1 = {0}, s2 = {0};
    struct delayed_seen d = {0};
    uint64_t a, b;

    setup(&f);
    setup(&g);
    a = open_session(&f);
    b = open_session(&f);
    grant_d(&f, a, 1, "L", 4000);
    queue_d(&f, b, 1, "L", 1, 600);
    grant_d(&f, a, 2, "E", 50);
    run(&f, c_expire(a));
    snap(&f, &s1);
    ASSERT_EQ(store_restore(g.s, s1.data, s1.len), 0);
    g.index = f.index;
    snap(&g, &s2);
    ASSERT(s1.len == s2.len && memcmp(s1.data, s2.data, s1.len) == 0);
    assert_delayed(&g, "L", 1);
    assert_delayed(&g, "E", 0);
    ASSERT_EQ(store_foreach_delayed_lock(g.s, collect_delayed, &d), 0);
    ASSERT_EQ(d.n, 2);
    ASSERT_STREQ(d.names[0], "E");
    ASSERT_EQ(d.delay[0], 50);
    ASSERT_EQ(d.delay[1], 4000);

    /* Reopening keeps it too. */
    {
        char err[256];
        store_close(g.s);
        ASSERT_EQ(store_open(g.dir, &g.s, err), 0);
        assert_delayed(&g, "L", 1);
    }

    run(&f, c_delay_end("L"));
    run(&g, c_delay_end("L"));
    assert_same_effects(&f.fx, &g.fx);
    ASSERT_EQ(count_fx(&g.fx, FX_GRANT), 1);
    run(&f, c_expire(b));
    run(&g, c_expire(b));
    assert_same_effects(&f.fx, &g.fx);
    ASSERT_EQ(count_fx(&g.fx, FX_LOCK_DELAY), 1); /* b's 600 ms came along */
    ASSERT_EQ(f.fx.fx[1].lock_delay_ms, 600);
    snap(&f, &s1);
    snap(&g, &s2);
    ASSERT(s1.len == s2.len && memcmp(s1.data, s2.data, s1.len) == 0);
    buf_free(&s1);
    buf_free(&s2);
    teardown(&f);
    teardown(&g);
}

/* A snapshot whose lock record claims a delayed lock with a holder, or a
 * delayed flag other than 0 or 1, is refused without change. */
TEST(restore_rejects_bad_delay_fields)
{
    struct fixture f, g;
    struct buf s = {0}, before = {0}, after = {0};
    uint64_t a;
    size_t off;
    uint8_t *rec;

    setup(&f);
    setup(&g);
    a = open_session(&f);
    grant_d(&f, a, 1, "Q", 10);
    snap(&f, &s);
    snap(&g, &before);
    /* The one lock record: key "Q", 41-byte value; its last byte is the
     * delayed flag and the four before it the delay. */
    rec = memmem(s.data, s.len, "\x01\x00\x00\x00Q\x29\x00\x00\x00", 9);
    ASSERT(rec != NULL);
    off = (size_t)(rec - s.data) + 9;
    ASSERT_EQ(le_get_u32(s.data + off + 36), 10);
    s.data[off + 40] = 1; /* delayed, yet held */
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    s.data[off + 40] = 2;
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    s.data[off + 40] = 0;
    le_put_u32(s.data + off + 36, (uint32_t)-5);
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    snap(&g, &after);
    ASSERT(same_state(&before, &after));
    le_put_u32(s.data + off + 36, 10);
    ASSERT_EQ(store_restore(g.s, s.data, s.len), 0);
    buf_free(&s);
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
    teardown(&g);
}

/* ---- snapshots ------------------------------------------------------------- */

/* Build a state that touches every table. */
static void populate(struct fixture *f)
{
    uint64_t a = open_session(f), b = open_session(f), c = open_session(f);
    uint64_t fa = grant(f, a, 1, "alpha");
    struct cmd x;

    grant(f, b, 1, "beta");
    queue(f, b, 2, "alpha", 1);
    queue(f, c, 1, "alpha", 2);
    x = c_acq(c, 2, 5000, "beta");
    ASSERT_EQ(run(f, x).kind, RESULT_QUEUED);
    ASSERT_EQ(run(f, c_rel(a, 2, fa, "alpha")).status, 0);
    ASSERT_EQ(run(f, c_acq(a, 3, BATON_WAIT_TRY, "alpha")).status, BATON_EWOULDBLOCK);
    open_session(f);
    ASSERT_EQ(run(f, c_member(4, "127.0.0.1:7004")).status, 0);
}

TEST(snapshot_restore_roundtrip)
{
    struct fixture f, g;
    struct buf s1 = {0}, s2 = {0};

    setup(&f);
    setup(&g);
    populate(&f);
    snap(&f, &s1);
    ASSERT_UEQ(le_get_u64(s1.data + 8), f.index);
    for (int db = 0; db < N_DB; db++) ASSERT_GT(snap_count(&s1, db), 0);
    ASSERT_EQ(memcmp(s1.data, "BTN1", 4), 0);

    ASSERT_EQ(store_restore(g.s, s1.data, s1.len), 0);
    ASSERT_UEQ(store_applied_index(g.s), f.index);
    snap(&g, &s2);
    ASSERT_EQ(s1.len, s2.len);
    ASSERT(memcmp(s1.data, s2.data, s1.len) == 0);

    /* Both continue identically: same results, same effects, same state. */
    g.index = f.index;
    struct msg_lock_info_r i = info(&f, "alpha");
    free(i.waiters);
    struct cmd_result rf = run(&f, c_expire(i.holder_session));
    struct cmd_result rg = run(&g, c_expire(i.holder_session));
    ASSERT_EQ(rf.status, rg.status);
    ASSERT_EQ(f.fx.n_fx, 5); /* b loses alpha and beta, c gets both, b is gone */
    assert_same_effects(&f.fx, &g.fx);
    ASSERT_UEQ(run(&f, c_open(1, "n")).value, run(&g, c_open(1, "n")).value);
    snap(&f, &s1);
    snap(&g, &s2);
    ASSERT_EQ(s1.len, s2.len);
    ASSERT(memcmp(s1.data, s2.data, s1.len) == 0);
    buf_free(&s1);
    buf_free(&s2);
    teardown(&f);
    teardown(&g);
}

TEST(snapshot_excludes_local_meta)
{
    /* Two stores with the same history but different boot ids and files
     * give the same bytes. */
    struct fixture f, g;
    struct buf s1 = {0}, s2 = {0};

    setup(&f);
    populate(&f);
    snap(&f, &s1);
    ASSERT_EQ(snap_count(&s1, DB_META), 3);
    store_close(f.s);
    char err[256];
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    snap(&f, &s2);
    ASSERT_EQ(s1.len, s2.len);
    ASSERT(memcmp(s1.data, s2.data, s1.len) == 0);
    setup(&g);
    populate(&g);
    snap(&g, &s2);
    ASSERT(memcmp(s1.data, s2.data, s1.len) == 0);
    buf_free(&s1);
    buf_free(&s2);
    teardown(&f);
    teardown(&g);
}

TEST(restore_older_snapshot_is_noop)
{
    struct fixture f, g;
    struct buf old = {0}, before = {0}, after = {0};

    setup(&f);
    setup(&g);
    populate(&f);
    snap(&f, &old);
    populate(&g);
    run(&g, c_open(1, "newer")); /* g is one entry ahead */
    snap(&g, &before);
    ASSERT_EQ(store_restore(g.s, old.data, old.len), 0);
    snap(&g, &after);
    ASSERT_EQ(before.len, after.len);
    ASSERT(memcmp(before.data, after.data, before.len) == 0);
    /* Equal index: also a no-op. */
    snap(&f, &old);
    ASSERT_EQ(store_restore(f.s, old.data, old.len), 0);
    buf_free(&old);
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
    teardown(&g);
}

TEST(restore_replaces_newer_state_entirely)
{
    /* A follower with its own (older) state receives a snapshot: nothing of
     * its old state survives. */
    struct fixture f, g;
    struct buf s1 = {0}, s2 = {0};

    setup(&f);
    setup(&g);
    uint64_t x = open_session(&g);
    grant(&g, x, 1, "only-in-g");
    populate(&f);
    snap(&f, &s1);
    ASSERT_EQ(store_restore(g.s, s1.data, s1.len), 0);
    snap(&g, &s2);
    ASSERT(memcmp(s1.data, s2.data, s1.len) == 0);
    assert_holder(&g, "only-in-g", 0, 0, 0);
    buf_free(&s1);
    buf_free(&s2);
    teardown(&f);
    teardown(&g);
}

TEST(restore_rejects_malformed_without_change)
{
    struct fixture f, g;
    struct buf good = {0}, bad = {0}, before = {0}, after = {0};

    setup(&f);
    setup(&g);
    populate(&f); /* f ahead of g */
    snap(&f, &good);
    uint64_t x = open_session(&g);
    grant(&g, x, 1, "g-lock");
    snap(&g, &before);

    /* Every truncation. */
    for (size_t len = 0; len < good.len; len++) {
        uint8_t *copy = malloc(len ? len : 1);
        ASSERT(copy != NULL);
        memcpy(copy, good.data, len);
        ASSERT_EQ(store_restore(g.s, copy, len), BATON_EMALFORMED);
        free(copy);
    }
    ASSERT_EQ(store_restore(g.s, NULL, 0), BATON_EMALFORMED);
    /* A trailing byte. */
    ASSERT_EQ(buf_put(&bad, good.data, good.len), 0);
    ASSERT_EQ(buf_put_u8(&bad, 0), 0);
    ASSERT_EQ(store_restore(g.s, bad.data, bad.len), BATON_EMALFORMED);
    /* Bad magic, bad format. */
    bad.len = good.len;
    bad.data[0] = 'X';
    ASSERT_EQ(store_restore(g.s, bad.data, bad.len), BATON_EMALFORMED);
    bad.data[0] = good.data[0];
    bad.data[4] = 9;
    ASSERT_EQ(store_restore(g.s, bad.data, bad.len), BATON_EMALFORMED);
    bad.data[4] = good.data[4];
    snap(&g, &after);
    ASSERT_EQ(before.len, after.len);
    ASSERT(memcmp(before.data, after.data, before.len) == 0);
    /* A flipped bit anywhere in the body: rejected without change, or (in
     * a value the format cannot check, such as a fence) accepted. Never a
     * crash. */
    for (size_t off = SNAP_HDR; off < good.len; off++) {
        memcpy(bad.data, good.data, good.len);
        bad.data[off] ^= 0x80;
        snap(&g, &before);
        int rv = store_restore(g.s, bad.data, bad.len);
        ASSERT(rv == 0 || rv == BATON_EMALFORMED);
        if (rv == BATON_EMALFORMED) {
            snap(&g, &after);
            ASSERT(before.len == after.len && memcmp(before.data, after.data, before.len) == 0);
        }
    }
    buf_free(&good);
    buf_free(&bad);
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
    teardown(&g);
}

TEST(restore_rejects_unsorted_and_unknown_entries)
{
    struct fixture f, g;
    struct buf s = {0}, before = {0}, after = {0};

    setup(&f);
    setup(&g);
    populate(&f);
    snap(&f, &s);
    snap(&g, &before);
    /* Swap the first byte of the first two meta keys ("next_enq" and
     * "next_fence" become unsorted once 'n' -> 'z' in the first). */
    size_t key0 = SNAP_HDR + 4 + 4;
    ASSERT_EQ(s.data[key0], 'n');
    s.data[key0] = 'z';
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    s.data[key0] = 'n';
    /* A meta key that is not state. */
    s.data[key0 + 5] = 'X';
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    snap(&g, &after);
    ASSERT_EQ(before.len, after.len);
    ASSERT(memcmp(before.data, after.data, before.len) == 0);
    buf_free(&s);
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
    teardown(&g);
}

TEST(restore_into_empty_store_then_reopen)
{
    struct fixture f, g;
    struct buf s1 = {0}, s2 = {0};
    char err[256];

    setup(&f);
    setup(&g);
    populate(&f);
    snap(&f, &s1);
    ASSERT_EQ(store_restore(g.s, s1.data, s1.len), 0);
    store_close(g.s);
    ASSERT_EQ(store_open(g.dir, &g.s, err), 0);
    ASSERT_UEQ(store_applied_index(g.s), f.index);
    snap(&g, &s2);
    ASSERT(memcmp(s1.data, s2.data, s1.len) == 0);
    buf_free(&s1);
    buf_free(&s2);
    teardown(&f);
    teardown(&g);
}

/* ---- persistence ------------------------------------------------------------ */

TEST(reopen_after_close_keeps_everything)
{
    struct fixture f;
    struct buf s1 = {0}, s2 = {0};
    char err[256];
    uint64_t a, fence;

    setup(&f);
    populate(&f);
    snap(&f, &s1);
    store_close(f.s);
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    ASSERT_UEQ(store_applied_index(f.s), f.index);
    snap(&f, &s2);
    ASSERT_EQ(s1.len, s2.len);
    ASSERT(memcmp(s1.data, s2.data, s1.len) == 0);
    /* Counters continue where they were. */
    a = open_session(&f);
    ASSERT_UEQ(a, 5);
    fence = grant(&f, a, 1, "after-reopen");
    ASSERT_GT(fence, 3);
    buf_free(&s1);
    buf_free(&s2);
    teardown(&f);
}

static void write_boot_id(const char *dir, const char *id)
{
    char path[192];
    FILE *fp;

    snprintf(path, sizeof path, "%s/boot_id", dir);
    fp = fopen(path, "w");
    ASSERT(fp != NULL);
    fprintf(fp, "%s\n", id);
    fclose(fp);
}

TEST(crash_and_reboot_detection)
{
    static char path[192];
    struct fixture f;
    char err[256];
    uint64_t applied;

    setup(&f);
    store_close(f.s);
    snprintf(path, sizeof path, "%s/boot_id", f.dir);
    store__set_boot_id_path(path);
    write_boot_id(f.dir, "boot-one");
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    populate(&f);
    applied = f.index;

    /* A process crash, same boot: the files are kept. */
    store__abandon(f.s);
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    ASSERT_UEQ(store_applied_index(f.s), applied);

    /* A clean shutdown, then a reboot: kept. */
    store_close(f.s);
    write_boot_id(f.dir, "boot-two");
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    ASSERT_UEQ(store_applied_index(f.s), applied);

    /* A crash, then a reboot: the files cannot be trusted, start empty. */
    store__abandon(f.s);
    write_boot_id(f.dir, "boot-three");
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    ASSERT_UEQ(store_applied_index(f.s), 0);
    ASSERT_EQ(count_in(&f, DB_SESSIONS), 0);
    ASSERT_EQ(store_session_exists(f.s, 1), 0);
    /* And it works: ids start again at 1. */
    f.index = 0;
    ASSERT_UEQ(open_session(&f), 1);

    /* Unreadable boot id after a crash: treated as a reboot. */
    store__abandon(f.s);
    store__set_boot_id_path("/nonexistent/boot_id");
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    ASSERT_UEQ(store_applied_index(f.s), 0);
    teardown(&f);
}

TEST(open_fails_cleanly_on_missing_dir)
{
    store *s = (store *)1;
    char err[256] = "";

    ASSERT_EQ(store_open("/nonexistent/baton-fsm", &s, err), BATON_EIO);
    ASSERT(s == NULL);
    ASSERT(strlen(err) > 0);
    store_close(NULL);
}

TEST(map_full_grows_the_map)
{
    enum { N = 2000 };
    static char names[N][200];
    static struct cmd cmds[N];
    struct fixture f;
    size_t before;
    uint64_t a;

    setup(&f);
    a = open_session(&f);
    ASSERT_EQ(store__set_map_size(f.s, 64 * 1024), 0);
    before = store__map_size(f.s);
    ASSERT_LT(before, 1024 * 1024);
    /* Long names: a few MB of keys and values in one entry. */
    for (int i = 0; i < N; i++) {
        memset(names[i], 'k', sizeof names[i] - 1);
        snprintf(names[i], 16, "%06d", i);
        names[i][6] = 'k';
        cmds[i] = c_acq(a, (uint64_t)i + 1, BATON_WAIT_TRY, names[i]);
    }
    apply_n(&f, cmds, N);
    for (int i = 0; i < N; i++) ASSERT_EQ(f.fx.results[i].kind, RESULT_GRANTED);
    ASSERT_GT(store__map_size(f.s), before);
    ASSERT_EQ(count_in(&f, DB_LOCKS), N);
    /* A snapshot of it restores into a store with a small map, too. */
    struct fixture g;
    struct buf s1 = {0}, s2 = {0};
    setup(&g);
    ASSERT_EQ(store__set_map_size(g.s, 64 * 1024), 0);
    snap(&f, &s1);
    ASSERT_EQ(store_restore(g.s, s1.data, s1.len), 0);
    snap(&g, &s2);
    ASSERT(s1.len == s2.len && memcmp(s1.data, s2.data, s1.len) == 0);
    buf_free(&s1);
    buf_free(&s2);
    teardown(&g);
    teardown(&f);
}

/* ---- determinism under a long random workload --------------------------------- */

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/*
 * Feed the same random commands (all types, valid and not, some repeated)
 * to two stores, one of which is restored from a snapshot of the other
 * halfway through. Every result and effect, and the final state, must be
 * identical; and the store's own invariants must hold. Most holds carry a
 * lock-delay, so that expiries leave delayed locks that DELAY_END (or
 * nothing, for a while) later hands on.
 */
static int32_t random_delay(void)
{
    switch (rng() % 8) {
    case 0:
    case 1:
        return 0;
    case 2:
        return rng() % 16 == 0 ? -1 : 250; /* now and then an invalid one */
    default:
        return (int32_t)(1 + rng() % 5000);
    }
}
TEST(random_workload_is_deterministic)
{
    static const char *names[] = {"a", "b", "c", "d"};
    struct fixture f, g;
    struct buf s1 = {0}, s2 = {0};
    uint64_t seq[64] = {0}, top = 0, last_fence = 0;
    int n_delays = 0, n_delay_grants = 0;

    setup(&f);
    setup(&g);
    for (int step = 0; step < 3000; step++) {
        uint64_t s = top ? top - rng() % (top < 12 ? top : 12) : 1;
        uint64_t *sq = &seq[s % 64], w, who;
        const char *name = names[rng() % 4];
        struct msg_lock_info_r i;
        struct cmd c;

        switch (rng() % 11) {
        case 0:
            c = c_open(1000, "r");
            break;
        case 1:
        case 2:
        case 3:
            ++*sq;
            c = c_acq_d(s, *sq, (int64_t)(rng() % 3) - 1, name, random_delay());
            break;
        case 4:
        case 5:
            i = info(&f, name);
            free(i.waiters);
            who = rng() % 4 ? i.holder_session : s;
            ++seq[who % 64];
            c = c_rel(who, seq[who % 64], i.fence, name);
            if (rng() % 3 == 0 && c.seq > 2) c.seq -= 2; /* a retry */
            break;
        case 6:
            w = *sq - rng() % 3;
            ++*sq;
            c = c_cancel(s, *sq, w, name);
            break;
        case 7:
            c = c_timeout(s, *sq - rng() % 4, name);
            break;
        case 8:
            if (rng() % 4) {
                c = c_expire(s);
            } else {
                ++*sq;
                c = c_close(s, *sq);
            }
            break;
        case 10:
            c = c_delay_end(name);
            break;
        default:
            if (rng() % 2)
                c = c_force(name);
            else
                c = c_acq(s, *sq, BATON_WAIT_FOREVER, name); /* repeats the last seq */
            c.ack_below = *sq > 5 ? *sq - 5 : 0;
            break;
        }
        if (step == 1500) {
            snap(&f, &s1);
            ASSERT_EQ(store_restore(g.s, s1.data, s1.len), 0);
            g.index = f.index;
        }
        run(&f, c);
        if (c.type == CMD_OPEN_SESSION && f.fx.results[0].status == 0) top = f.fx.results[0].value;
        if (step >= 1500) {
            run(&g, c);
            assert_same_effects(&f.fx, &g.fx);
            ASSERT_UEQ(store_digest(f.s), store_digest(g.s));
        }
        /* Every grant's fence is above every earlier one. */
        for (size_t k = 0; k < f.fx.n_fx; k++) {
            if (f.fx.fx[k].type == FX_LOCK_DELAY) {
                ASSERT_GT(f.fx.fx[k].lock_delay_ms, 0);
                n_delays++;
            }
            if (f.fx.fx[k].type != FX_GRANT) continue;
            ASSERT_ULT(last_fence, f.fx.fx[k].fence);
            last_fence = f.fx.fx[k].fence;
            n_delay_grants += c.type == CMD_DELAY_END;
        }
        /* A lock with waiters is always held or delayed, never both. */
        for (int l = 0; l < 4; l++) {
            i = info(&f, names[l]);
            if (i.total_waiters > 0) ASSERT(i.held || i.delayed);
            ASSERT(!(i.held && i.delayed));
            free(i.waiters);
        }
    }
    ASSERT_GT(top, 20);
    ASSERT_GT(n_delays, 10);
    ASSERT_GT(n_delay_grants, 5);
    snap(&f, &s1);
    snap(&g, &s2);
    ASSERT_EQ(s1.len, s2.len);
    ASSERT(memcmp(s1.data, s2.data, s1.len) == 0);
    {
        struct delayed_seen d1 = {0}, d2 = {0};
        ASSERT_EQ(store_foreach_delayed_lock(f.s, collect_delayed, &d1), 0);
        ASSERT_EQ(store_foreach_delayed_lock(g.s, collect_delayed, &d2), 0);
        ASSERT_EQ(d1.n, d2.n);
        for (int k = 0; k < d1.n; k++) {
            ASSERT_STREQ(d1.names[k], d2.names[k]);
            ASSERT_EQ(d1.delay[k], d2.delay[k]);
        }
    }
    /* Expiring every session, then ending every delay, leaves nothing
     * behind. */
    for (uint64_t s = 1; s <= top; s++) run(&f, c_expire(s));
    for (int l = 0; l < 4; l++) {
        run(&f, c_delay_end(names[l]));
        ASSERT_EQ(f.fx.n_fx, 0); /* nobody is left to grant it to */
    }
    ASSERT_EQ(count_in(&f, DB_SESSIONS), 0);
    ASSERT_EQ(count_in(&f, DB_LOCKS), 0);
    ASSERT_EQ(count_in(&f, DB_WAITERS), 0);
    ASSERT_EQ(count_in(&f, DB_OWNED), 0);
    ASSERT_EQ(count_in(&f, DB_DEDUP), 0);
    buf_free(&s1);
    buf_free(&s2);
    teardown(&f);
    teardown(&g);
}

/* ---- the state digest ------------------------------------------------------ */

/* The digest as store.h documents it, computed here independently:
 * FNV-1a 64 over le64(prev), le64(index), then the payload. */
static uint64_t expected_digest(uint64_t prev, uint64_t index, const void *data, size_t len)
{
    uint8_t head[16];
    const uint8_t *p = data;
    uint64_t h = 0xcbf29ce484222325ull;

    for (int i = 0; i < 8; i++) {
        head[i] = (uint8_t)(prev >> (8 * i));
        head[8 + i] = (uint8_t)(index >> (8 * i));
    }
    for (size_t i = 0; i < sizeof head; i++) h = (h ^ head[i]) * 0x100000001b3ull;
    for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* Apply raw bytes as entry idx, expecting success. */
static void apply_raw(struct fixture *f, uint64_t idx, const void *data, size_t len)
{
    ASSERT_EQ(store_apply(f->s, idx, data, len, &f->fx), 0);
    if (idx > f->index) f->index = idx;
    ASSERT_UEQ(store_applied_index(f->s), f->index);
}

/* A list of entries (valid batches, a malformed one, an empty one, a gap in
 * the indexes) fed the same way to two stores. */
static void feed_entries(struct fixture *f, const char *variant)
{
    struct cmd cmds[3];
    struct buf b = {0};

    cmds[0] = c_open(5000, "digest");
    encode(&b, cmds, 1);
    apply_raw(f, 1, b.data, b.len);
    buf_reset(&b);
    cmds[0] = c_acq(1, 1, BATON_WAIT_FOREVER, "L");
    cmds[1] = c_acq(1, 2, BATON_WAIT_TRY, "M");
    cmds[2] = c_rel(1, 3, 99, "L");
    encode(&b, cmds, 3);
    apply_raw(f, 2, b.data, b.len);
    apply_raw(f, 3, variant, strlen(variant)); /* malformed */
    apply_raw(f, 4, NULL, 0);                  /* malformed (empty) */
    buf_reset(&b);
    cmds[0] = c_acq(1, 4, BATON_WAIT_FOREVER, "N");
    encode(&b, cmds, 1);
    apply_raw(f, 7, b.data, b.len); /* indexes may skip */
    buf_free(&b);
}

TEST(digest_follows_the_documented_hash)
{
    struct fixture f;
    struct buf b = {0};
    struct cmd c = c_open(5000, "x");
    uint64_t d;

    setup(&f);
    ASSERT_UEQ(store_digest(f.s), 0);
    encode(&b, &c, 1);
    apply_raw(&f, 1, b.data, b.len);
    d = expected_digest(0, 1, b.data, b.len);
    ASSERT_UEQ(store_digest(f.s), d);
    /* A malformed batch advances it too, over the bytes it was given. */
    apply_raw(&f, 2, "\x01garbage!", 9);
    d = expected_digest(d, 2, "\x01garbage!", 9);
    ASSERT_UEQ(store_digest(f.s), d);
    apply_raw(&f, 5, NULL, 0);
    d = expected_digest(d, 5, NULL, 0);
    ASSERT_UEQ(store_digest(f.s), d);
    /* Snapshots carry it right after the applied index. */
    snap(&f, &b);
    ASSERT_UEQ(le_get_u64(b.data + 8), 5);
    ASSERT_UEQ(le_get_u64(b.data + 16), d);
    /* It survives a close and an open. */
    {
        char err[256];
        store_close(f.s);
        ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
        ASSERT_UEQ(store_digest(f.s), d);
    }
    buf_free(&b);
    teardown(&f);
}

TEST(digest_equal_for_equal_entries)
{
    struct fixture f, g;
    struct buf s1 = {0}, s2 = {0};

    setup(&f);
    setup(&g);
    feed_entries(&f, "\x01junk");
    feed_entries(&g, "\x01junk");
    ASSERT_NE(store_digest(f.s), 0);
    ASSERT_UEQ(store_digest(f.s), store_digest(g.s));
    snap(&f, &s1);
    snap(&g, &s2);
    ASSERT(s1.len == s2.len && memcmp(s1.data, s2.data, s1.len) == 0);
    buf_free(&s1);
    buf_free(&s2);
    teardown(&f);
    teardown(&g);
}

TEST(digest_differs_for_different_payload)
{
    struct fixture f, g, h;
    struct buf s1 = {0}, s2 = {0};

    setup(&f);
    setup(&g);
    /* One byte differs in one (malformed) entry: the lock state is the
     * same, the digest is not, and so neither are the snapshots. */
    feed_entries(&f, "\x01junk");
    feed_entries(&g, "\x01junK");
    ASSERT_UEQ(store_applied_index(f.s), store_applied_index(g.s));
    ASSERT(store_digest(f.s) != store_digest(g.s));
    snap(&f, &s1);
    snap(&g, &s2);
    ASSERT(same_state(&s1, &s2));
    ASSERT(memcmp(s1.data, s2.data, SNAP_HDR) != 0);
    teardown(&g);

    /* The same payload at another index differs as well. */
    setup(&g);
    setup(&h);
    apply_raw(&g, 1, "\x01junk", 5);
    apply_raw(&h, 2, "\x01junk", 5);
    ASSERT(store_digest(g.s) != store_digest(h.s));
    /* And so does a different command with the same outcome. */
    teardown(&g);
    teardown(&h);
    setup(&g);
    setup(&h);
    ASSERT_UEQ(run(&g, c_open(5000, "a")).value, run(&h, c_open(5000, "b")).value);
    ASSERT(store_digest(g.s) != store_digest(h.s));
    buf_free(&s1);
    buf_free(&s2);
    teardown(&f);
    teardown(&g);
    teardown(&h);
}

TEST(digest_restored_from_snapshot)
{
    struct fixture f, g;
    struct buf s1 = {0}, s2 = {0};
    char err[256];

    setup(&f);
    setup(&g);
    populate(&f);
    run(&g, c_open(1, "g-only")); /* g has a digest of its own */
    ASSERT(store_digest(f.s) != store_digest(g.s));
    snap(&f, &s1);
    ASSERT_EQ(store_restore(g.s, s1.data, s1.len), 0);
    ASSERT_UEQ(store_digest(g.s), store_digest(f.s));
    store_close(g.s);
    ASSERT_EQ(store_open(g.dir, &g.s, err), 0);
    ASSERT_UEQ(store_digest(g.s), store_digest(f.s));
    /* Both go on with the same digests. */
    g.index = f.index;
    run(&f, c_open(1, "next"));
    run(&g, c_open(1, "next"));
    ASSERT_UEQ(store_digest(g.s), store_digest(f.s));
    snap(&f, &s1);
    snap(&g, &s2);
    ASSERT(s1.len == s2.len && memcmp(s1.data, s2.data, s1.len) == 0);

    /* A snapshot that is not newer changes nothing, the digest included. */
    {
        uint64_t before = store_digest(g.s);
        struct fixture h;
        setup(&h);
        run(&h, c_open(1, "older"));
        snap(&h, &s2);
        ASSERT_EQ(store_restore(g.s, s2.data, s2.len), 0);
        ASSERT_UEQ(store_digest(g.s), before);
        teardown(&h);
    }
    buf_free(&s1);
    buf_free(&s2);
    teardown(&f);
    teardown(&g);
}

TEST(digest_unchanged_by_replay)
{
    struct fixture f;
    struct buf b = {0};
    struct cmd c;
    uint64_t d, a;

    setup(&f);
    a = open_session(&f);
    grant(&f, a, 1, "L");
    d = store_digest(f.s);
    c = c_acq(a, 2, BATON_WAIT_FOREVER, "M");
    encode(&b, &c, 1);
    for (uint64_t idx = 0; idx <= f.index; idx++) {
        ASSERT_EQ(store_apply(f.s, idx, b.data, b.len, &f.fx), 0);
        ASSERT_UEQ(store_digest(f.s), d);
    }
    ASSERT_EQ(store_apply(f.s, f.index, "\x01other", 6, &f.fx), 0);
    ASSERT_UEQ(store_digest(f.s), d);
    ASSERT_UEQ(store_applied_index(f.s), f.index);
    buf_free(&b);
    teardown(&f);
}

/* A snapshot of the previous format (2: no digest in the header) is refused
 * without change, whether or not the bytes are laid out the old way. */
TEST(restore_rejects_previous_format)
{
    struct fixture f, g;
    struct buf good = {0}, old = {0}, before = {0}, after = {0};

    setup(&f);
    setup(&g);
    populate(&f);
    snap(&f, &good);
    snap(&g, &before);
    ASSERT_EQ(le_get_u32(good.data + 4), 4);
    /* Format 2's layout: the header without the digest. */
    ASSERT_EQ(buf_put(&old, good.data, 16), 0);
    ASSERT_EQ(buf_put(&old, good.data + SNAP_HDR, good.len - SNAP_HDR), 0);
    le_put_u32(old.data + 4, 2);
    ASSERT_EQ(store_restore(g.s, old.data, old.len), BATON_EMALFORMED);
    /* Format 4's layout labelled 2, or labelled 3 (whose layout lacks the
     * members table: the members count and entry are trailing bytes). */
    buf_reset(&old);
    ASSERT_EQ(buf_put(&old, good.data, good.len), 0);
    le_put_u32(old.data + 4, 2);
    ASSERT_EQ(store_restore(g.s, old.data, old.len), BATON_EMALFORMED);
    le_put_u32(old.data + 4, 3);
    ASSERT_EQ(store_restore(g.s, old.data, old.len), BATON_EMALFORMED);
    le_put_u32(old.data + 4, 5);
    ASSERT_EQ(store_restore(g.s, old.data, old.len), BATON_EMALFORMED);
    snap(&g, &after);
    ASSERT(before.len == after.len && memcmp(before.data, after.data, before.len) == 0);
    ASSERT_UEQ(store_digest(g.s), 0);
    buf_free(&good);
    buf_free(&old);
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
    teardown(&g);
}

/* ---- the members table (SET_MEMBER_ADDR) ---------------------------------- */

/* The address the store holds for member id, or "" (asserting the return). */
static const char *member_addr(struct fixture *f, uint32_t id, int want_found)
{
    static char out[BATON_MAX_ADDR + 1];

    ASSERT_EQ(store_member_addr(f->s, id, out, sizeof out), want_found);
    if (!want_found) ASSERT_STREQ(out, "");
    return out;
}

TEST(member_addr_set_replace_delete)
{
    struct fixture f;
    struct buf before = {0}, after = {0};
    struct cmd_result r;
    char small[BATON_MAX_ADDR];
    uint64_t digest;

    setup(&f);
    member_addr(&f, 4, 0);
    r = run(&f, c_member(4, "127.0.0.1:7004"));
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.kind, RESULT_OK);
    ASSERT_EQ(f.fx.n_fx, 0);
    ASSERT_EQ(f.changed.n_fx, 0);
    ASSERT_STREQ(member_addr(&f, 4, 1), "127.0.0.1:7004");
    member_addr(&f, 5, 0);
    ASSERT_EQ(count_in(&f, DB_MEMBERS), 1);

    /* Several in one entry, applied in order: the last one wins. */
    {
        struct cmd cs[3] = {c_member(5, "10.0.0.5:1"), c_member(4, "10.0.0.4:1"),
                            c_member(4, "10.0.0.4:2")};
        apply_n(&f, cs, 3);
        for (int i = 0; i < 3; i++) ASSERT_EQ(f.fx.results[i].status, 0);
    }
    ASSERT_STREQ(member_addr(&f, 4, 1), "10.0.0.4:2");
    ASSERT_STREQ(member_addr(&f, 5, 1), "10.0.0.5:1");

    /* The same command again is applied again (never deduplicated), and
     * changes only the applied index and the digest. */
    snap(&f, &before);
    digest = store_digest(f.s);
    ASSERT_EQ(run(&f, c_member(4, "10.0.0.4:2")).status, 0);
    snap(&f, &after);
    ASSERT(same_state(&before, &after));
    ASSERT(store_digest(f.s) != digest);

    /* The largest id, and an address of exactly BATON_MAX_ADDR bytes: a
     * one-label host name and ":1" (proto/addr.h). */
    memset(small, 'a', sizeof small);
    {
        char full[BATON_MAX_ADDR + 1];
        memcpy(full, small, BATON_MAX_ADDR);
        memcpy(full + BATON_MAX_ADDR - 2, ":1", 2);
        full[BATON_MAX_ADDR] = '\0';
        ASSERT_EQ(run(&f, c_member(UINT32_MAX, full)).status, 0);
        ASSERT_STREQ(member_addr(&f, UINT32_MAX, 1), full);
    }

    /* An empty address deletes; deleting again (or an absent id) is fine. */
    ASSERT_EQ(run(&f, c_member(5, NULL)).status, 0);
    member_addr(&f, 5, 0);
    ASSERT_EQ(run(&f, c_member(5, NULL)).status, 0);
    ASSERT_EQ(run(&f, c_member(77, NULL)).status, 0);
    ASSERT_STREQ(member_addr(&f, 4, 1), "10.0.0.4:2");
    ASSERT_EQ(count_in(&f, DB_MEMBERS), 2);

    /* The reader needs room for the longest address and its NUL. */
    ASSERT_EQ(store_member_addr(f.s, 4, small, sizeof small), BATON_EINVAL);
    ASSERT_EQ(small[0], '\0');
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
}

TEST(member_addr_rejects_bad_ids_and_addresses)
{
    static const char *const bad[] = {"127.0.0.1 :1", "a\tb", "\x7f", "caf\xc3\xa9:1", "x\ny"};
    struct fixture f;
    struct buf before = {0}, after = {0};
    struct cmd c;

    setup(&f);
    ASSERT_EQ(run(&f, c_member(3, "127.0.0.1:7003")).status, 0);
    snap(&f, &before);
    /* Ids 0 and above UINT32_MAX. */
    ASSERT_EQ(run(&f, c_member(0, "127.0.0.1:1")).status, BATON_EINVAL);
    ASSERT_EQ(run(&f, c_member((uint64_t)UINT32_MAX + 1, "127.0.0.1:1")).status, BATON_EINVAL);
    ASSERT_EQ(run(&f, c_member(UINT64_MAX, NULL)).status, BATON_EINVAL);
    ASSERT_EQ(run(&f, c_member(0, NULL)).status, BATON_EINVAL);
    /* Blanks, control bytes, DEL, bytes above 0x7e. */
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ASSERT_EQ(run(&f, c_member(3, bad[i])).status, BATON_EINVAL);
    /* A NUL inside. */
    c = c_member(3, "1.2.3.4:5");
    c.name = "1.2\0.4:5";
    ASSERT_EQ(run(&f, c).status, BATON_EINVAL);
    /* One bad command fails alone: the others of its entry still apply. */
    {
        struct cmd cs[3] = {c_member(8, "8.8.8.8:8"), c_member(0, "0.0.0.0:1"),
                            c_member(9, "9.9.9.9:9")};
        apply_n(&f, cs, 3);
        ASSERT_EQ(f.fx.results[0].status, 0);
        ASSERT_EQ(f.fx.results[1].status, BATON_EINVAL);
        ASSERT_EQ(f.fx.results[2].status, 0);
        ASSERT_STREQ(member_addr(&f, 8, 1), "8.8.8.8:8");
        ASSERT_STREQ(member_addr(&f, 9, 1), "9.9.9.9:9");
        ASSERT_EQ(run(&f, c_member(8, NULL)).status, 0);
        ASSERT_EQ(run(&f, c_member(9, NULL)).status, 0);
    }
    snap(&f, &after);
    ASSERT(same_state(&before, &after));
    ASSERT_STREQ(member_addr(&f, 3, 1), "127.0.0.1:7003");
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
}

/* The table travels in snapshots and survives a close and reopen. */
TEST(member_addr_in_snapshot_and_after_reopen)
{
    struct fixture f, g;
    struct buf s1 = {0};
    char err[256];

    setup(&f);
    setup(&g);
    populate(&f);
    ASSERT_EQ(run(&f, c_member(2, "127.0.0.1:7002")).status, 0);
    snap(&f, &s1);
    ASSERT_EQ(snap_count(&s1, DB_MEMBERS), 2);
    ASSERT_EQ(store_restore(g.s, s1.data, s1.len), 0);
    ASSERT_STREQ(member_addr(&g, 2, 1), "127.0.0.1:7002");
    ASSERT_STREQ(member_addr(&g, 4, 1), "127.0.0.1:7004");
    member_addr(&g, 3, 0);
    store_close(g.s);
    ASSERT_EQ(store_open(g.dir, &g.s, err), 0);
    ASSERT_STREQ(member_addr(&g, 2, 1), "127.0.0.1:7002");
    /* A restore replaces the table too. */
    ASSERT_EQ(run(&f, c_member(2, NULL)).status, 0);
    snap(&f, &s1);
    ASSERT_EQ(store_restore(g.s, s1.data, s1.len), 0);
    member_addr(&g, 2, 0);
    ASSERT_STREQ(member_addr(&g, 4, 1), "127.0.0.1:7004");
    buf_free(&s1);
    teardown(&f);
    teardown(&g);
}

/* Member entries a snapshot may not hold: id 0, a key of the wrong size,
 * an address with a blank or an empty one. */
TEST(restore_rejects_bad_member_entries)
{
    struct fixture f, g;
    struct buf s = {0}, before = {0}, after = {0};
    uint8_t *rec;
    size_t off;

    setup(&f);
    setup(&g);
    populate(&f); /* the one member: 4 -> "127.0.0.1:7004" (14 bytes) */
    snap(&f, &s);
    snap(&g, &before);
    rec = memmem(s.data, s.len, "\x04\x00\x00\x00\x00\x00\x00\x04\x0e\x00\x00\x00", 12);
    ASSERT(rec != NULL);
    off = (size_t)(rec - s.data);
    ASSERT_EQ(off + 12 + 14, s.len); /* the last entry of the snapshot */
    s.data[off + 7] = 0; /* id 0 */
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    s.data[off + 7] = 4;
    s.data[off + 12 + 9] = ' '; /* "127.0.0.1 7004" */
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    s.data[off + 12 + 9] = 0;
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    s.data[off + 12 + 9] = ':';
    /* klen 3 with the address one byte longer: still 26 bytes, wrong key. */
    le_put_u32(s.data + off, 3);
    le_put_u32(s.data + off + 7, 15);
    ASSERT_EQ(store_restore(g.s, s.data, s.len), BATON_EMALFORMED);
    snap(&g, &after);
    ASSERT(same_state(&before, &after));
    /* Put back, it is accepted. */
    le_put_u32(s.data + off, 4);
    s.data[off + 4] = 0;
    s.data[off + 5] = 0;
    s.data[off + 6] = 0;
    s.data[off + 7] = 4;
    le_put_u32(s.data + off + 8, 14);
    ASSERT_EQ(store_restore(g.s, s.data, s.len), 0);
    ASSERT_STREQ(member_addr(&g, 4, 1), "127.0.0.1:7004");
    buf_free(&s);
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
    teardown(&g);
}

/* A format 3 snapshot (written before the members table existed; raft
 * loads its latest snapshot at every start, so an upgraded node meets one)
 * restores with an empty members table, and the result is a format 4
 * store identical to the one the snapshot came from. */
TEST(restore_accepts_format3_snapshot)
{
    struct fixture f, g;
    struct buf s4 = {0}, s3 = {0}, out = {0};

    setup(&f);
    setup(&g);
    populate(&f);
    ASSERT_EQ(run(&f, c_member(4, NULL)).status, 0); /* no member entries */
    snap(&f, &s4);
    ASSERT_EQ(snap_count(&s4, DB_MEMBERS), 0);
    ASSERT_EQ(le_get_u32(s4.data + s4.len - 4), 0);
    /* Format 3: the same bytes without the members count. */
    ASSERT_EQ(buf_put(&s3, s4.data, s4.len - 4), 0);
    le_put_u32(s3.data + 4, 3);
    ASSERT_EQ(store_restore(g.s, s3.data, s3.len), 0);
    ASSERT_UEQ(store_applied_index(g.s), f.index);
    ASSERT_UEQ(store_digest(g.s), store_digest(f.s));
    snap(&g, &out);
    ASSERT_EQ(out.len, s4.len);
    ASSERT(memcmp(out.data, s4.data, s4.len) == 0);
    /* A format 3 snapshot that carries a members table has trailing bytes. */
    buf_reset(&s3);
    ASSERT_EQ(buf_put(&s3, s4.data, s4.len), 0);
    le_put_u32(s3.data + 4, 3);
    le_put_u64(s3.data + 8, f.index + 1);
    ASSERT_EQ(store_restore(g.s, s3.data, s3.len), BATON_EMALFORMED);
    buf_free(&s4);
    buf_free(&s3);
    buf_free(&out);
    teardown(&f);
    teardown(&g);
}

/* A store left in format 3 by an older batond opens as format 4, with its
 * state intact and an empty members table; format 2 is still refused. */
TEST(format3_store_upgraded_on_open)
{
    struct fixture f;
    struct buf s1 = {0}, s2 = {0};
    char err[256];
    store *s;

    setup(&f);
    populate(&f);
    ASSERT_EQ(run(&f, c_member(4, NULL)).status, 0);
    snap(&f, &s1);
    ASSERT_EQ(store__set_format(f.s, 3), 0);
    store_close(f.s);
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    snap(&f, &s2);
    ASSERT_EQ(le_get_u32(s2.data + 4), 4);
    ASSERT_EQ(s1.len, s2.len);
    ASSERT(memcmp(s1.data, s2.data, s1.len) == 0);
    /* It is a format 4 store now: members can be set. */
    ASSERT_EQ(run(&f, c_member(4, "127.0.0.1:7004")).status, 0);
    ASSERT_STREQ(member_addr(&f, 4, 1), "127.0.0.1:7004");
    ASSERT_EQ(store__set_format(f.s, 2), 0);
    store_close(f.s);
    f.s = NULL;
    ASSERT_EQ(store_open(f.dir, &s, err), BATON_EIO);
    ASSERT(s == NULL);
    ASSERT(strstr(err, f.dir) != NULL);
    /* Put the format back so that teardown can close a store. */
    {
        char path[192];
        snprintf(path, sizeof path, "%s/data.mdb", f.dir);
        ASSERT_EQ(unlink(path), 0);
        snprintf(path, sizeof path, "%s/lock.mdb", f.dir);
        unlink(path);
    }
    ASSERT_EQ(store_open(f.dir, &f.s, err), 0);
    buf_free(&s1);
    buf_free(&s2);
    teardown(&f);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

int main(int argc, char **argv)
{
    int rv;

    strcpy(run_dir, "/tmp/baton-fsm-XXXXXX");
    if (mkdtemp(run_dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    runner_init(argc, argv);
    runner_set_timeout(120);
    RUN(new_store_is_empty);
    RUN(open_session_ids_and_reads);
    RUN(foreach_session);
    RUN(list_sessions_counts_holds_and_waits);
    RUN(acquire_free_lock_grants);
    RUN(try_on_held_lock_wouldblock_and_queues_nothing);
    RUN(fifo_order_with_many_waiters);
    RUN(release_by_non_holder_rejected);
    RUN(release_hands_lock_to_head_in_same_apply);
    RUN(same_session_waiters_share_a_lock);
    RUN(fences_strictly_increase_across_locks);
    RUN(close_session_releases_and_drops_waits);
    RUN(close_deletes_dedup_entries);
    RUN(expire_session_loses_locks_and_grants_next);
    RUN(unknown_session_is_esession_and_cached_nowhere);
    RUN(repeated_request_returns_cached_result_and_changes_nothing);
    RUN(ack_below_prunes_and_stale_retries_are_refused);
    RUN(reapplying_old_index_changes_nothing);
    RUN(malformed_batch_changes_nothing_but_applied);
    RUN(cancel_waiting_and_cancel_vs_grant_race);
    RUN(cancel_from_middle_of_queue_keeps_order);
    RUN(wait_timeout_removes_only_waiters);
    RUN(force_release);
    RUN(lock_changed_once_per_lock_per_entry);
    RUN(invalid_names_and_waits);
    RUN(limit_owned_per_session);
    RUN(limit_sessions);
    RUN(list_locks_and_lock_info);
    RUN(snapshot_restore_roundtrip);
    RUN(snapshot_excludes_local_meta);
    RUN(restore_older_snapshot_is_noop);
    RUN(restore_replaces_newer_state_entirely);
    RUN(restore_rejects_malformed_without_change);
    RUN(restore_rejects_unsorted_and_unknown_entries);
    RUN(restore_into_empty_store_then_reopen);
    RUN(reopen_after_close_keeps_everything);
    RUN(crash_and_reboot_detection);
    RUN(open_fails_cleanly_on_missing_dir);
    RUN(map_full_grows_the_map);
    RUN(expire_with_lock_delay_keeps_lock_ungranted);
    RUN(expire_without_delay_grants_at_once);
    RUN(close_release_and_force_never_delay);
    RUN(delayed_lock_with_empty_queue);
    RUN(waiters_of_delayed_lock_leave_as_usual);
    RUN(expire_with_several_delayed_holds);
    RUN(foreach_delayed_lock);
    RUN(negative_lock_delay_is_einval);
    RUN(snapshot_restore_keeps_delay);
    RUN(restore_rejects_bad_delay_fields);
    RUN(random_workload_is_deterministic);
    RUN(digest_follows_the_documented_hash);
    RUN(digest_equal_for_equal_entries);
    RUN(digest_differs_for_different_payload);
    RUN(digest_restored_from_snapshot);
    RUN(digest_unchanged_by_replay);
    RUN(restore_rejects_previous_format);
    RUN(member_addr_set_replace_delete);
    RUN(member_addr_rejects_bad_ids_and_addresses);
    RUN(member_addr_in_snapshot_and_after_reopen);
    RUN(restore_rejects_bad_member_entries);
    RUN(restore_accepts_format3_snapshot);
    RUN(format3_store_upgraded_on_open);
    rv = runner_done();
    nftw(run_dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    return rv;
}
