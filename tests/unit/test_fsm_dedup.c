/*
 * test_fsm_dedup.c -- the lock state machine (storage/store.h):
 * deduplication of retried requests (seq, ack_below, the cached results),
 * entries applied again or malformed, and the determinism of a long random
 * workload across a snapshot restore.
 *
 * Each test runs on a store of its own (tests/unit/fsm_fixture.h).
 */
#include "tests/unit/fsm_fixture.h"

#include <stdbool.h>

#include "tests/lib/rng.h"

/* ---- deduplication ------------------------------------------------------ */

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
    ASSERT_EQ(run(&f, c_acq(b, 2, BATON_WAIT_TRY, "L")).status, BATON_EDEADLK); /* b waits */

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
    ASSERT_EQ(run(&f, c_acq(b, 2, BATON_WAIT_TRY, "L")).status, BATON_EDEADLK); /* b waits */
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

/* ---- the bound on a session's cached results ----------------------------- */

/* c with ack_below set. */
static struct cmd ack(struct cmd c, uint64_t ack_below)
{
    c.ack_below = ack_below;
    return c;
}

/* Apply RELEASEs of "x" (never held) by session s, seqs from..to, each
 * with ack_below 1, in entries of CMD_MAX_BATCH; each is answered ENOTHELD. */
static void release_flood(struct fixture *f, uint64_t s, uint64_t from, uint64_t to)
{
    static struct cmd cmds[CMD_MAX_BATCH];

    while (from <= to) {
        size_t n = 0;
        while (n < CMD_MAX_BATCH && from <= to) cmds[n++] = ack(c_rel(s, from++, 999, "x"), 1);
        apply_n(f, cmds, n);
        for (size_t i = 0; i < n; i++) ASSERT_EQ(f->fx.results[i].status, BATON_ENOTHELD);
    }
}

/*
 * Below feature level STORE_LEVEL_CACHED_BOUND (a cluster not yet raised,
 * whose voters may run older binaries), no command is refused for its
 * seq: seq N + 1 runs as every older binary runs it, so all apply alike.
 */
TEST(cached_results_unbounded_below_their_level)
{
    enum { N = STORE_MAX_CACHED_PER_SESSION };
    struct fixture f;
    uint64_t a;

    setup(&f);
    a = open_session(&f);
    release_flood(&f, a, 1, N + 1);
    ASSERT_EQ(count_in(&f, DB_DEDUP), N + 1);
    teardown(&f);
}

/*
 * A session that never acknowledges (ack_below stuck at 1) gets exactly
 * STORE_MAX_CACHED_PER_SESSION results cached, seqs 1..N: seq N + 1 is
 * refused with BATON_ELIMIT, changes nothing and caches nothing, so its
 * re-send is refused again; cached results still answer their re-sends; a
 * RELEASE of a hold and a CANCEL of a wait still go through beyond the
 * bound (a session can always let go), one that frees nothing does not; a
 * CLOSE_SESSION always does. Acknowledging moves the window, and a refused
 * command then runs (once: its refusal did nothing).
 */
TEST(cached_results_bounded_per_session)
{
    enum { N = STORE_MAX_CACHED_PER_SESSION };
    struct buf before = {0}, after = {0};
    struct fixture f;
    struct cmd_result r;
    uint64_t a, b, fh;

    setup(&f);
    ASSERT_EQ(run(&f, (struct cmd){.type = CMD_SET_LEVEL, .session = STORE_LEVEL_CACHED_BOUND})
                  .status,
              0);
    a = open_session(&f);
    b = open_session(&f);
    grant(&f, b, 1, "held");
    r = run(&f, ack(c_acq(a, 1, BATON_WAIT_TRY, "h"), 1));
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    fh = r.value;
    ASSERT_EQ(run(&f, ack(c_acq(a, 2, BATON_WAIT_FOREVER, "held"), 1)).kind, RESULT_QUEUED);
    release_flood(&f, a, 3, N); /* seq N = floor + N - 1: the last one that runs */
    ASSERT_EQ(count_in(&f, DB_DEDUP), N + 1); /* a's N, b's one */

    /* Seq N + 1: refused, whatever it is, and nothing changes. */
    snap(&f, &before);
    ASSERT_EQ(run(&f, ack(c_rel(a, N + 1, 999, "x"), 1)).status, BATON_ELIMIT);
    ASSERT_EQ(run(&f, ack(c_rel(a, N + 1, 999, "x"), 1)).status, BATON_ELIMIT);
    ASSERT_EQ(run(&f, ack(c_acq(a, N + 2, BATON_WAIT_TRY, "new"), 1)).status, BATON_ELIMIT);
    ASSERT_EQ(run(&f, ack(c_cancel(a, N + 3, 77, "held"), 1)).status, BATON_ELIMIT);
    ASSERT_EQ(f.fx.n_fx, 0);
    snap(&f, &after);
    ASSERT(same_state(&before, &after));
    /* A cached result still answers its re-send. */
    ASSERT_EQ(run(&f, ack(c_rel(a, 5, 999, "x"), 1)).status, BATON_ENOTHELD);
    ASSERT_EQ(run(&f, ack(c_acq(a, 1, BATON_WAIT_TRY, "h"), 1)).kind, RESULT_GRANTED);
    /* Another session is not held back. */
    ASSERT_EQ(run(&f, ack(c_rel(b, N + 10, 999, "x"), N + 10)).status, BATON_ENOTHELD);

    /* Beyond the bound, what frees something goes through, and only once. */
    ASSERT_EQ(run(&f, ack(c_rel(a, N + 4, fh, "h"), 1)).status, 0);
    ASSERT_EQ(run(&f, ack(c_rel(a, N + 5, fh, "h"), 1)).status, BATON_ELIMIT);
    ASSERT_EQ(run(&f, ack(c_cancel(a, N + 6, 2, "held"), 1)).kind, RESULT_CANCELLED);
    ASSERT_EQ(run(&f, ack(c_cancel(a, N + 7, 2, "held"), 1)).status, BATON_ELIMIT);
    ASSERT_EQ(count_in(&f, DB_DEDUP), N + 1 + 2);

    /* Acknowledging below 6 prunes seqs 1..5 and moves the window by 5:
     * the refused ACQUIRE's seq now runs. */
    r = run(&f, ack(c_acq(a, N + 2, BATON_WAIT_TRY, "new"), 6));
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    ASSERT_EQ(count_in(&f, DB_DEDUP), N + 1 + 2 - 5 + 1);
    ASSERT_EQ(run(&f, ack(c_rel(a, N + 5, 999, "x"), 6)).status, BATON_ENOTHELD);
    ASSERT_EQ(run(&f, ack(c_rel(a, N + 6, 999, "x"), 6)).kind, RESULT_CANCELLED); /* cached */
    ASSERT_EQ(run(&f, ack(c_rel(a, N + 8, 999, "x"), 6)).status, BATON_ELIMIT);

    /* CLOSE_SESSION always goes through, and takes the cache with it. */
    ASSERT_EQ(run(&f, ack(c_close(a, 3 * N), 1)).status, 0);
    ASSERT_EQ(count_in(&f, DB_DEDUP), 1); /* b's last */
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
}

/* ---- acknowledging exactly: ack_below and the keep list ------------------ */

static uint64_t rng(void);

/* An ACQUIRE, RELEASE, ... carrying the acknowledgement (ack_below, keep). */
static uint8_t keep_buf[8 * CMD_MAX_KEEP];
static struct cmd acked(struct cmd c, uint64_t ack_below, const uint64_t *keep, size_t n)
{
    return cmd_acks(c, ack_below, keep, n, keep_buf);
}

/*
 * A session whose first ACQUIRE waits (for an hour, as far as the store
 * can tell: it knows no time) while the same session goes through
 * thousands of acquire/release cycles. The client acknowledges exactly
 * what it has seen -- everything below its next request but the queued
 * ACQUIRE, which it keeps -- so the session's cached results stay a
 * handful however long the wait lasts, instead of one per request
 * (100 cycles/s for an hour: 720,000). The kept result still answers a
 * re-sent copy of the waiting ACQUIRE, QUEUED and, once granted, GRANTED;
 * once the client has seen the grant and stops keeping it, it goes too,
 * and every stale copy of a pruned request is refused.
 */
TEST(long_wait_keeps_the_cache_bounded)
{
    enum { CYCLES = 3000 };
    const uint64_t waiting[1] = {1};
    struct buf before = {0}, after = {0};
    struct fixture f;
    struct cmd_result r;
    uint64_t a, b, fb, seq = 2, fence, wfence = 0;

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    fb = grant(&f, b, 1, "w");
    queue(&f, a, 1, "w", 1); /* a's seq 1 waits for b's "w" */
    for (int i = 0; i < CYCLES; i++) {
        /* Acquire and release "c": each request acknowledges everything
         * below itself and keeps seq 1. */
        r = run(&f, acked(c_acq(a, seq, BATON_WAIT_TRY, "c"), seq, waiting, 1));
        ASSERT_EQ(r.kind, RESULT_GRANTED);
        fence = r.value;
        ASSERT_EQ(run(&f, acked(c_rel(a, seq + 1, fence, "c"), seq + 1, waiting, 1)).status, 0);
        seq += 2;
        /* b's grant, a's kept wait, a's last release. */
        if (i % 500 == 0 || i == CYCLES - 1) ASSERT_EQ(count_in(&f, DB_DEDUP), 3);
    }
    /* The wait was never lost under the pruning: its re-sent copy (a
     * reconnect) learns it still waits... */
    r = run(&f, acked(c_acq(a, 1, BATON_WAIT_FOREVER, "w"), seq, waiting, 1));
    ASSERT_EQ(r.kind, RESULT_QUEUED);
    ASSERT_EQ(f.fx.n_fx, 0);
    /* ...and, once b lets go, that it holds the lock. */
    ASSERT_EQ(run(&f, acked(c_rel(b, 2, fb, "w"), 2, NULL, 0)).status, 0);
    ASSERT_EQ(count_fx(&f.fx, FX_GRANT), 1);
    wfence = f.fx.fx[0].fence;
    r = run(&f, acked(c_acq(a, 1, BATON_WAIT_FOREVER, "w"), seq, waiting, 1));
    ASSERT_EQ(r.kind, RESULT_GRANTED);
    ASSERT_UEQ(r.value, wfence);
    /* The client has seen the grant: it keeps nothing any more. */
    ASSERT_EQ(run(&f, acked(c_rel(a, seq, wfence, "w"), seq, NULL, 0)).status, 0);
    ASSERT_EQ(count_in(&f, DB_DEDUP), 2); /* b's release, a's */
    /* Stale copies of pruned requests (older acknowledgements, the wait's
     * included) run nothing and change nothing. */
    snap(&f, &before);
    r = run(&f, acked(c_acq(a, 1, BATON_WAIT_FOREVER, "w"), 1, NULL, 0));
    ASSERT_EQ(r.status, BATON_ESTALE);
    r = run(&f, acked(c_acq(a, 1, BATON_WAIT_FOREVER, "w"), seq, waiting, 1));
    ASSERT_EQ(r.status, BATON_ESTALE);
    r = run(&f, acked(c_acq(a, 2, BATON_WAIT_TRY, "c"), 2, waiting, 1));
    ASSERT_EQ(r.status, BATON_ESTALE);
    r = run(&f, acked(c_rel(a, seq - 1, fence, "c"), seq - 1, waiting, 1));
    ASSERT_EQ(r.status, BATON_ESTALE);
    ASSERT_EQ(f.fx.n_fx, 0);
    snap(&f, &after);
    ASSERT(same_state(&before, &after));
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
}

/*
 * The rules of the acknowledgement, one by one: a bad keep list fails the
 * command and changes nothing; ack_below prunes everything below it but
 * the kept results; an older acknowledgement prunes nothing; one at the
 * same floor that keeps less prunes what it no longer keeps; and a kept
 * result below the floor still answers its request.
 */
TEST(keep_list_rules)
{
    struct buf before = {0}, after = {0};
    struct fixture f;
    uint64_t a, b, c, fb, k[3];

    setup(&f);
    a = open_session(&f);
    b = open_session(&f);
    c = open_session(&f);
    fb = grant(&f, b, 1, "w");
    queue(&f, a, 1, "w", 1);
    grant(&f, a, 2, "x");
    grant(&f, c, 1, "u");
    queue(&f, a, 3, "u", 1); /* a second wait of a, elsewhere */
    grant(&f, a, 4, "y");
    ASSERT_EQ(count_in(&f, DB_DEDUP), 6);

    /* Bad lists: not increasing, a zero, a seq not below ack_below. */
    snap(&f, &before);
    k[0] = 3, k[1] = 1;
    ASSERT_EQ(run(&f, acked(c_acq(a, 5, BATON_WAIT_TRY, "z"), 5, k, 2)).status, BATON_EINVAL);
    k[0] = 1, k[1] = 1;
    ASSERT_EQ(run(&f, acked(c_acq(a, 5, BATON_WAIT_TRY, "z"), 5, k, 2)).status, BATON_EINVAL);
    k[0] = 0;
    ASSERT_EQ(run(&f, acked(c_acq(a, 5, BATON_WAIT_TRY, "z"), 5, k, 1)).status, BATON_EINVAL);
    k[0] = 5;
    ASSERT_EQ(run(&f, acked(c_acq(a, 5, BATON_WAIT_TRY, "z"), 5, k, 1)).status, BATON_EINVAL);
    snap(&f, &after);
    ASSERT(same_state(&before, &after));

    /* ack_below 5 keeping 1 and 3: 2 and 4 go. */
    k[0] = 1, k[1] = 3;
    ASSERT_EQ(run(&f, acked(c_acq(a, 5, BATON_WAIT_TRY, "z"), 5, k, 2)).kind, RESULT_GRANTED);
    ASSERT_EQ(count_in(&f, DB_DEDUP), 5); /* b:1; c:1; a: 1, 3, 5 */
    ASSERT_EQ(run(&f, c_acq(a, 2, BATON_WAIT_TRY, "x")).status, BATON_ESTALE);
    ASSERT_EQ(run(&f, c_acq(a, 4, BATON_WAIT_TRY, "y")).status, BATON_ESTALE);
    /* The kept ones, below the floor, answer their re-sent requests. */
    ASSERT_EQ(run(&f, c_acq(a, 1, BATON_WAIT_FOREVER, "w")).kind, RESULT_QUEUED);
    ASSERT_EQ(run(&f, c_acq(a, 3, BATON_WAIT_FOREVER, "u")).kind, RESULT_QUEUED);
    /* An older acknowledgement (ack_below 3, keeping nothing) prunes
     * nothing: it is below the floor. */
    ASSERT_EQ(run(&f, acked(c_acq(a, 3, BATON_WAIT_FOREVER, "u"), 3, NULL, 0)).kind,
              RESULT_QUEUED);
    ASSERT_EQ(count_in(&f, DB_DEDUP), 5);
    /* b lets go: 1 is granted, its cached result says so. */
    ASSERT_EQ(run(&f, acked(c_rel(b, 2, fb, "w"), 2, NULL, 0)).status, 0);
    ASSERT_EQ(run(&f, c_acq(a, 1, BATON_WAIT_FOREVER, "w")).kind, RESULT_GRANTED);
    /* The same floor, keeping only 3: 1 goes, 3 stays. */
    k[0] = 3;
    ASSERT_EQ(run(&f, acked(c_acq(a, 6, BATON_WAIT_TRY, "v"), 5, k, 1)).kind, RESULT_GRANTED);
    ASSERT_EQ(run(&f, c_acq(a, 1, BATON_WAIT_FOREVER, "w")).status, BATON_ESTALE);
    ASSERT_EQ(run(&f, c_acq(a, 3, BATON_WAIT_FOREVER, "u")).kind, RESULT_QUEUED);
    /* An older copy at that floor keeping 1 and 3 again cannot bring 1
     * back: the store only ever forgets. */
    k[0] = 1, k[1] = 3;
    ASSERT_EQ(run(&f, acked(c_acq(a, 5, BATON_WAIT_TRY, "z"), 5, k, 2)).kind, RESULT_GRANTED);
    ASSERT_EQ(run(&f, c_acq(a, 1, BATON_WAIT_FOREVER, "w")).status, BATON_ESTALE);
    /* Keeping nothing at a higher floor: only the newest result is left,
     * and b's. */
    ASSERT_EQ(run(&f, acked(c_acq(a, 7, BATON_WAIT_TRY, "t"), 7, NULL, 0)).kind, RESULT_GRANTED);
    ASSERT_EQ(count_in(&f, DB_DEDUP), 3); /* a's 7, b's 2 and c's 1 */
    ASSERT_EQ(run(&f, c_acq(a, 3, BATON_WAIT_FOREVER, "u")).status, BATON_ESTALE);
    assert_holder(&f, "u", c, 0, 1); /* 3 still waits: only its result went */
    buf_free(&before);
    buf_free(&after);
    teardown(&f);
}

/*
 * Exactly once, whatever the network does. A simulated client (session a)
 * makes requests -- try-locks of fresh locks, waits for locks that
 * session b holds, releases of what it got -- and acknowledges exactly as
 * libbaton does (client/async.c, baton__acks): ack_below at its oldest
 * request still owed an answer, the ACQUIREs answered QUEUED kept below
 * it. Its copies reach the store late, out of order, several times over
 * (re-sends after a lost reply), and replies and pushes get lost. Every
 * copy that is not a request's first arrival must run nothing (no effect)
 * and answer with the request's cached result or BATON_ESTALE; ESTALE only
 * ever reaches a request the client is done with. At the end, with
 * everything answered and acknowledged, the session's cache is its last
 * result, and every copy ever sent, delivered once more, changes nothing.
 */
enum { SIM_STEPS = 20000, SIM_REQS = 4096, SIM_HISTORY = 4096, SIM_NET = 32, SIM_KEEP = 8 };
enum { SIM_OUT = 0, SIM_QUEUED, SIM_DONE };

struct sim_req {
    uint8_t type;            /* CMD_ACQUIRE or CMD_RELEASE */
    int64_t wait_ms;
    uint64_t fence;          /* RELEASE: the hold it gives back */
    char name[12];
    int state;               /* what the client knows: SIM_OUT, _QUEUED, _DONE */
    bool applied;            /* its first copy arrived and ran */
    struct cmd_result first; /* what that run answered */
    uint64_t granted;        /* a queued ACQUIRE's grant (its cached result since) */
};

struct sim_copy {
    uint64_t seq, ack_below;
    uint16_t n_keep;
    uint64_t keep[SIM_KEEP];
};

struct sim {
    struct fixture f;
    uint64_t a, b, next, bseq, bfence[8];
    struct sim_req req[SIM_REQS];
    struct sim_copy net[SIM_NET], hist[SIM_HISTORY];
    int n_net, n_hist;
    struct { char name[12]; uint64_t fence; } held[SIM_REQS];
    int n_held, stale, resent_kept, with_keep;
};

static struct sim sim;

/* The client's acknowledgement, as baton__acks computes it. */
static void sim_acks(struct sim_copy *c)
{
    c->n_keep = 0;
    for (uint64_t s = 1; s < sim.next; s++) {
        if (sim.req[s].state == SIM_DONE) continue;
        if (sim.req[s].state != SIM_QUEUED || c->n_keep == SIM_KEEP) {
            c->ack_below = s;
            return;
        }
        c->keep[c->n_keep++] = s;
    }
    c->ack_below = sim.next;
}

/* Send a copy of request seq: into the network and the history. */
static void sim_send(uint64_t seq)
{
    struct sim_copy c = {.seq = seq};

    sim_acks(&c);
    if (sim.n_hist < SIM_HISTORY)
        sim.hist[sim.n_hist++] = c;
    else
        sim.hist[rng() % SIM_HISTORY] = c;
    sim.net[sim.n_net++] = c;
    if (c.n_keep) sim.with_keep++;
}

/* The client holds the lock of request r (name) with fence. */
static void sim_hold(const char name[12], uint64_t fence)
{
    memmove(sim.held[sim.n_held].name, name, sizeof sim.held[0].name);
    sim.held[sim.n_held++].fence = fence;
}

/* Apply copy c; with the reply (and pushes) reaching the client unless
 * `lossy` and the dice say otherwise. */
static void sim_deliver(const struct sim_copy *c, bool lossy)
{
    struct sim_req *r = &sim.req[c->seq];
    struct cmd cmd = cmd_of(r->type, sim.a, c->seq, r->name);
    struct cmd_result res;

    cmd.wait_ms = r->wait_ms;
    cmd.fence = r->fence;
    res = run(&sim.f, acked(cmd, c->ack_below, c->keep, c->n_keep));
    if (!r->applied) {
        /* The first copy to arrive runs: the client still needs it. */
        ASSERT_NE(res.status, BATON_ESTALE);
        r->applied = true;
        r->first = res;
    } else {
        /* Any later copy runs nothing... */
        ASSERT_EQ(sim.f.fx.n_fx, 0);
        UNCHANGED(&sim.f);
        if (res.status == BATON_ESTALE) {
            /* ...and is refused only once the client is done with it. */
            ASSERT_EQ(r->state, SIM_DONE);
            sim.stale++;
            return;
        }
        /* ...or answered from the cache: the first result, or the grant
         * that rewrote it. */
        if (r->granted && res.kind == RESULT_GRANTED) {
            ASSERT_UEQ(res.value, r->granted);
        } else {
            ASSERT_EQ(res.status, r->first.status);
            ASSERT_EQ(res.kind, r->first.kind);
            ASSERT_UEQ(res.value, r->first.value);
        }
        if (c->seq < c->ack_below) sim.resent_kept++;
    }
    for (size_t i = 0; i < sim.f.fx.n_fx; i++) {
        const struct effect *e = &sim.f.fx.fx[i];
        struct sim_req *w = &sim.req[e->waiter];
        if (e->type != FX_GRANT || e->session != sim.a) continue;
        w->granted = e->fence;
        if (w->state != SIM_DONE && (!lossy || rng() % 10 < 7)) { /* the GRANTED push */
            w->state = SIM_DONE;
            sim_hold(w->name, e->fence);
        }
    }
    if (r->state == SIM_DONE || (lossy && rng() % 10 >= 7)) return; /* no reply */
    if (res.status == 0 && res.kind == RESULT_QUEUED) {
        r->state = SIM_QUEUED;
        return;
    }
    r->state = SIM_DONE;
    if (r->type == CMD_ACQUIRE && res.status == 0) sim_hold(r->name, res.value);
}

/* A contended name that a neither holds nor waits for, as far as it
 * knows (asking again would be BATON_EDEADLK), into name: 0 if none. */
static int sim_free_name(char name[12])
{
    for (int tries = 0; tries < 8; tries++) {
        int busy = 0;
        snprintf(name, 12, "w%d", (int)(rng() % 8));
        for (uint64_t i = 1; i < sim.next && !busy; i++)
            busy = sim.req[i].name != name && sim.req[i].type == CMD_ACQUIRE &&
                   sim.req[i].state != SIM_DONE && strcmp(sim.req[i].name, name) == 0;
        for (int h = 0; h < sim.n_held && !busy; h++) busy = strcmp(sim.held[h].name, name) == 0;
        if (!busy) return 1;
    }
    return 0;
}

/* A new request of the client, sent once: with `release`, or now and
 * then, the release of a lock it holds. */
static void sim_request(bool release)
{
    uint64_t s = sim.next++;
    struct sim_req *r = &sim.req[s];
    int waits = 0;

    for (uint64_t i = 1; i < s; i++)
        waits += sim.req[i].state != SIM_DONE && sim.req[i].wait_ms == BATON_WAIT_FOREVER;
    memset(r, 0, sizeof *r);
    r->type = CMD_ACQUIRE;
    if (sim.n_held > 0 && (release || rng() % 2)) {
        int h = (int)(rng() % (uint64_t)sim.n_held);
        r->type = CMD_RELEASE;
        r->fence = sim.held[h].fence;
        memcpy(r->name, sim.held[h].name, sizeof r->name);
        sim.held[h] = sim.held[--sim.n_held];
    } else if (waits < SIM_KEEP - 2 && rng() % 3 == 0 && sim_free_name(r->name)) {
        r->wait_ms = BATON_WAIT_FOREVER;
    } else {
        r->wait_ms = BATON_WAIT_TRY;
        snprintf(r->name, sizeof r->name, "t%llu", (unsigned long long)s);
    }
    sim_send(s);
}

/* Session b lets go of contended lock k, if it holds it. */
static void sim_b_release(int k)
{
    char name[4] = {'w', (char)('0' + k), 0};

    if (sim.bfence[k] == 0) return;
    ASSERT_EQ(run(&sim.f, acked(c_rel(sim.b, sim.bseq, sim.bfence[k], name), sim.bseq, NULL, 0))
                  .status,
              0);
    sim.bseq++;
    sim.bfence[k] = 0;
    for (size_t i = 0; i < sim.f.fx.n_fx; i++) {
        const struct effect *e = &sim.f.fx.fx[i];
        if (e->type == FX_GRANT && e->session == sim.a) {
            sim.req[e->waiter].granted = e->fence;
            if (rng() % 10 < 7 && sim.req[e->waiter].state != SIM_DONE) {
                sim.req[e->waiter].state = SIM_DONE;
                sim_hold(sim.req[e->waiter].name, e->fence);
            }
        }
    }
}

/* Session b takes contended lock k again if it is free (a try), so that
 * a's waits keep queueing (a may not queue behind its own hold: EDEADLK). */
static void sim_b_take(int k)
{
    char name[4] = {'w', (char)('0' + k), 0};
    struct cmd_result r;

    if (sim.bfence[k] != 0) return;
    r = run(&sim.f, acked(c_acq(sim.b, sim.bseq, BATON_WAIT_TRY, name), sim.bseq, NULL, 0));
    sim.bseq++;
    if (r.status == 0 && r.kind == RESULT_GRANTED) sim.bfence[k] = r.value;
}

static int sim_pending(void)
{
    int n = 0;

    for (uint64_t s = 1; s < sim.next; s++) n += sim.req[s].state != SIM_DONE;
    return n;
}

TEST(exactly_once_under_random_delivery)
{
    struct buf before = {0}, after = {0};
    struct sim_copy c;

    memset(&sim, 0, sizeof sim);
    setup(&sim.f);
    sim.a = open_session(&sim.f);
    sim.b = open_session(&sim.f);
    sim.next = 1;
    for (int k = 0; k < 8; k++) {
        char name[4] = {'w', (char)('0' + k), 0};
        sim.bfence[k] = grant(&sim.f, sim.b, (uint64_t)k + 1, name);
    }
    sim.bseq = 9;
    for (int step = 0; step < SIM_STEPS; step++) {
        unsigned d = (unsigned)(rng() % 100);

        if (sim.n_net == SIM_NET) d = 30; /* make room */
        if (d < 25 && sim.next < SIM_REQS - 1 && sim_pending() < 12) {
            sim_request(false);
        } else if (d < 55 && sim.n_net > 0) {
            int i = (int)(rng() % (uint64_t)sim.n_net);
            c = sim.net[i];
            sim.net[i] = sim.net[--sim.n_net];
            sim_deliver(&c, true);
        } else if (d < 65 && sim.next > 1) { /* a re-send, with today's acks */
            uint64_t s = 1 + rng() % (sim.next - 1);
            if (sim.req[s].state != SIM_DONE) sim_send(s);
        } else if (d < 66) {
            sim_b_release((int)(rng() % 8));
        } else if (d < 70) {
            sim_b_take((int)(rng() % 8));
        } else if (d < 80 && sim.n_hist > 0) { /* a copy from the past, again */
            c = sim.hist[rng() % (uint64_t)sim.n_hist];
            sim_deliver(&c, true);
        }
    }
    /* Settle: b lets go of everything, the client gets every answer and
     * gives back every lock. */
    for (int k = 0; k < 8; k++) sim_b_release(k);
    for (int round = 0; round < 1000 && (sim_pending() > 0 || sim.n_held > 0); round++) {
        for (uint64_t s = 1; s < sim.next; s++) {
            if (sim.req[s].state == SIM_DONE) continue;
            sim_send(s);
            c = sim.net[--sim.n_net];
            sim_deliver(&c, false);
        }
        if (sim.n_held > 0 && sim.next < SIM_REQS - 1) {
            sim_request(true);
        }
        if (sim.n_net > 0) sim.n_net = 0; /* what was sent and is not needed is lost */
    }
    ASSERT_EQ(sim_pending(), 0);
    ASSERT_EQ(sim.n_held, 0);
    /* One last request acknowledges everything: a's cache is its result. */
    sim.req[sim.next].type = CMD_ACQUIRE;
    snprintf(sim.req[sim.next].name, sizeof sim.req[0].name, "last");
    sim.next++;
    sim_send(sim.next - 1);
    c = sim.net[--sim.n_net];
    sim_deliver(&c, false);
    ASSERT_EQ(count_in(&sim.f, DB_DEDUP), 2); /* and b's last */
    fprintf(stderr,
            "# %llu requests; %d copies kept results, %d re-read one, %d were refused stale\n",
            (unsigned long long)sim.next - 1, sim.with_keep, sim.resent_kept, sim.stale);
    ASSERT_GT(sim.stale, 100);
    ASSERT_GT(sim.resent_kept, 10);
    /* Every copy ever sent, once more: nothing changes. */
    snap(&sim.f, &before);
    for (int i = 0; i < sim.n_hist; i++) sim_deliver(&sim.hist[i], false);
    snap(&sim.f, &after);
    ASSERT(same_state(&before, &after));
    buf_free(&before);
    buf_free(&after);
    teardown(&sim.f);
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
    cmds_encode(&batch, &c, 1);
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

TEST(malformed_batch_changes_nothing)
{
    struct fixture f;
    struct buf before = {0}, after = {0}, batch = {0};
    struct cmd cmds[2];
    uint64_t a, applied, digest;

    setup(&f);
    a = open_session(&f);
    grant(&f, a, 1, "L");
    snap(&f, &before);
    applied = store_applied_index(f.s);
    digest = store_digest(f.s);
    cmds[0] = c_acq(a, 2, BATON_WAIT_FOREVER, "M");
    cmds[1] = c_rel(a, 3, 1, "L");
    cmds_encode(&batch, cmds, 2);
    /* Every truncation, a trailing byte, and random garbage: refused,
     * and not even the applied index or the digest moves. */
    for (size_t len = 1; len < batch.len; len++) {
        ASSERT_EQ(store_apply(f.s, applied + 1, batch.data, len, &f.fx), BATON_EMALFORMED);
        ASSERT_EQ(f.fx.n_results, 0);
        ASSERT_EQ(f.fx.n_fx, 0);
        ASSERT_UEQ(store_applied_index(f.s), applied);
        ASSERT_UEQ(store_digest(f.s), digest);
    }
    ASSERT_EQ(buf_put_u8(&batch, 0), 0);
    ASSERT_EQ(store_apply(f.s, applied + 1, batch.data, batch.len, &f.fx), BATON_EMALFORMED);
    ASSERT_EQ(store_apply(f.s, applied + 1, "\x01garbage!", 9, &f.fx), BATON_EMALFORMED);
    ASSERT_UEQ(store_applied_index(f.s), applied);
    ASSERT_UEQ(store_digest(f.s), digest);
    snap(&f, &after);
    ASSERT(same_state(&before, &after));
    /* An empty entry (batond's own) applies nothing and moves on. */
    ASSERT_EQ(store_apply(f.s, applied + 1, NULL, 0, &f.fx), 0);
    ASSERT_EQ(f.fx.n_results, 0);
    ASSERT_UEQ(store_applied_index(f.s), applied + 1);
    buf_free(&before);
    buf_free(&after);
    buf_free(&batch);
    teardown(&f);
}

/* ---- determinism under a long random workload --------------------------- */

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static uint64_t rng(void)
{
    return xorshift64(&rng_state);
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
            store_lock_info_free(&i);
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
        /* Now and then a keep list: some of the three seqs below
         * ack_below (which may be below, at or above the request). */
        if ((c.type == CMD_ACQUIRE || c.type == CMD_RELEASE || c.type == CMD_CANCEL) &&
            c.seq > 4 && rng() % 4 == 0) {
            uint64_t k[3];
            size_t n = 0;
            c.ack_below = c.seq + 1 - rng() % 3;
            for (uint64_t q = c.ack_below - 3; q < c.ack_below; q++)
                if (rng() % 2) k[n++] = q;
            c = acked(c, c.ack_below, k, n);
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
            store_lock_info_free(&i);
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

int main(int argc, char **argv)
{
    fsm_main_begin(argc, argv);
    RUN(repeated_request_returns_cached_result_and_changes_nothing);
    RUN(ack_below_prunes_and_stale_retries_are_refused);
    RUN(long_wait_keeps_the_cache_bounded);
    RUN(cached_results_unbounded_below_their_level);
    RUN(cached_results_bounded_per_session);
    RUN(keep_list_rules);
    RUN(exactly_once_under_random_delivery);
    RUN(reapplying_old_index_changes_nothing);
    RUN(malformed_batch_changes_nothing);
    RUN(random_workload_is_deterministic);
    return fsm_main_end();
}
