/*
 * w9.c -- W9, an election: how fast leadership passes on, and how fast
 * every observer hears of it. lockbench --workload W9 --clients OBSERVERS
 * --candidates K --rounds N --seconds LIMIT [--ttl-ms T].
 *
 * K candidates (even; half local sessions, half victim processes,
 * alternating in the election's FIFO queue: w9.h) and OBSERVERS observers
 * (baton_async_observe), every session its own baton_async_t, all on one
 * libuv loop in this thread (victims on their own, in their processes).
 * Steps, each bounded (ttl + connect and op timeouts + 5 s):
 *
 *   setup   open every session; every observer's watch synced; the
 *           candidates campaign one after another (each queued before the
 *           next), so their order in the queue is known; every observer
 *           has heard of the first leader;
 *   round   2N rounds, alternating: a local leader resigns
 *           (baton_async_unlock of its campaign's hold), t0 the moment the
 *           resign is sent; or a victim leader renews (w9.h) and is killed
 *           with SIGKILL, t0 the moment of the kill. The round is over when
 *           the next candidate in line leads (its campaign callback, or the
 *           victim's "l" line, stamped in its process) and every observer
 *           has heard of it (an event whose holders[0] is the new leader);
 *   requeue the resigned candidate campaigns again, or a new victim is
 *           spawned in place of the killed one, and is queued last.
 *
 * Per round kind: *_lead from t0 to the new leader's campaign callback,
 * *_observed from t0 to the last observer hearing of it; p50 and p99 in
 * ms. Kill rounds are also given from the end of the killed session's
 * lease, kill + ttl (expiry_*, in histograms of their own, so that their
 * resolution is that of the few ms they are rather than of ttl; the
 * victim's renewal makes the cluster's lease end within a round trip of
 * kill + ttl; a time before it is counted as 0 and in expiry_early).
 *
 * Checks (violations): each leader's fence above the one before; the next
 * leader is the next candidate in line (FIFO); every observer hears of
 * every leader, with the leader's value, unless a GAP or a restarted
 * SYNCED told it that it may have missed one (observer_gaps); an observer
 * never sees a leader's fence below one it saw before (w9_observe.c).
 * errors: calls that failed, lost leaderships, victims that ended by
 * themselves.
 *
 * The run ends after 2N rounds, or at the first round's end past LIMIT
 * seconds, and prints one JSON line (docs/performance.md).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/bench/w9.h"

#define W9_DEFAULT_TTL_MS 10000 /* libbaton's, when --ttl-ms is not given */
#define W9_STEP_SLACK_MS 5000
#define W9_RETRY_MS 200
#define W9_MAX_RETRIES 100 /* 20 s */

static unsigned ttl_ms(const struct cfg *cfg)
{
    return cfg->ttl_ms ? cfg->ttl_ms : W9_DEFAULT_TTL_MS;
}

static void on_timeout(uv_timer_t *t);

/* Bound the step that starts now. */
static void arm(struct w9 *w)
{
    const struct cfg *cfg = w->cfg;

    uv_timer_start(&w->timer, on_timeout,
                   (uint64_t)ttl_ms(cfg) + cfg->connect_timeout_ms + cfg->op_timeout_ms +
                       W9_STEP_SLACK_MS,
                   0);
}

static void line_push(struct w9 *w, struct w9cand *c)
{
    w->line[w->line_n++] = c;
}

static struct w9cand *line_pop(struct w9 *w)
{
    struct w9cand *c = w->line[0];

    memmove(w->line, w->line + 1, (size_t)(w->line_n - 1) * sizeof *w->line);
    w->line_n--;
    return c;
}

/* ---- the JSON line ------------------------------------------------------------------ */

static void pct_ms(const char *name, const struct hist *h)
{
    if (h->total == 0) {
        printf(",\"%s_p50_ms\":null,\"%s_p99_ms\":null", name, name);
        return;
    }
    printf(",\"%s_p50_ms\":%.3f,\"%s_p99_ms\":%.3f", name,
           (double)hist_percentile(h, 50) / 1e6, name, (double)hist_percentile(h, 99) / 1e6);
}

static void report(struct w9 *w)
{
    const struct cfg *cfg = w->cfg;

    printf("{\"system\":\"baton\",\"workload\":\"W9\",\"clients\":%d,\"candidates\":%d,"
           "\"rounds\":%d,\"ttl_ms\":%u,\"seconds\":%.1f,\"ops\":%d,\"resign_rounds\":%d,"
           "\"kill_rounds\":%d",
           w->n_obs, cfg->candidates, cfg->rounds, ttl_ms(cfg),
           (double)(now_ns() - w->t_start) / 1e9, w->resign_rounds + w->kill_rounds,
           w->resign_rounds, w->kill_rounds);
    pct_ms("resign_lead", &w->resign_lead);
    pct_ms("resign_observed", &w->resign_seen);
    pct_ms("kill_lead", &w->kill_lead);
    pct_ms("kill_observed", &w->kill_seen);
    pct_ms("expiry_lead", &w->expiry_lead);
    pct_ms("expiry_observed", &w->expiry_seen);
    printf(",\"expiry_early\":%d,\"observer_gaps\":%" PRIu64 ",\"errors\":%" PRIu64
           ",\"violations\":%" PRIu64 "}\n",
           w->expiry_early, w->observer_gaps, w->errors, w->violations);
    fflush(stdout);
    fprintf(stderr, "lockbench: W9: %d resign and %d kill rounds, %d observers\n",
            w->resign_rounds, w->kill_rounds, w->n_obs);
}

/* ---- the end ------------------------------------------------------------------------ */

static void on_end_timeout(uv_timer_t *t)
{
    w9_victims_kill_all(t->data);
}

/* Nothing is left to end: the loop may run dry. */
static void close_timer(struct w9 *w)
{
    if (!uv_is_closing((uv_handle_t *)&w->timer)) uv_close((uv_handle_t *)&w->timer, NULL);
}

static void finish(struct w9 *w)
{
    if (w->phase == P_END) return;
    w->phase = P_END;
    uv_close((uv_handle_t *)&w->retry, NULL);
    report(w);
    w->ends++; /* not done before both loops below are */
    w9_obs_close(w);
    w9_cands_close(w);
    if (--w->ends == 0)
        close_timer(w);
    else /* the closes are bounded by op_timeout_ms; a victim is not */
        uv_timer_start(&w->timer, on_end_timeout, w->cfg->op_timeout_ms + W9_STEP_SLACK_MS, 0);
}

void w9_forget(struct w9 *w, struct w9cand *c)
{
    for (int i = 0; i < w->line_n; i++)
        if (w->line[i] == c) {
            memmove(w->line + i, w->line + i + 1, (size_t)(w->line_n - i - 1) * sizeof *w->line);
            w->line_n--;
            break;
        }
    if (w->waiting == c) w->waiting = NULL;
    if (w->next == c) w->next = NULL;
    if (w->gone == c) w->gone = NULL;
}

void w9_closed(struct w9 *w)
{
    if (--w->ends == 0 && w->phase == P_END) close_timer(w);
}

void w9_abort(struct w9 *w, const char *why)
{
    if (w->phase == P_END) return;
    note("W9: %s; ending the run after %d rounds", why, w->resign_rounds + w->kill_rounds);
    w->rc = 1;
    finish(w);
}

/* ---- rounds ------------------------------------------------------------------------- */

static void start_round(struct w9 *w)
{
    struct w9cand *leader;

    if (w->line_n < 2) {
        w9_abort(w, "fewer than two candidates in line");
        return;
    }
    w->round++;
    w->phase = P_ROUND;
    w->lead_known = false;
    w->next = w->line[1];
    leader = line_pop(w);
    w->gone = leader;
    w->kind = leader->kind;
    w9_obs_round(w);
    arm(w);
    if (leader->kind == W9_LOCAL) {
        w->t0 = now_ns();
        if (w9_local_resign(leader) != 0) w9_abort(w, "a resign failed");
    } else if (w9_victim_renew(leader) != 0) {
        w->errors++;
        w9_abort(w, "cannot write to a victim");
    }
}

void w9_renewed(struct w9 *w, struct w9cand *c)
{
    int rv;

    if (w->phase != P_ROUND || c != w->gone) return;
    w->t0 = now_ns();
    rv = w9_victim_kill(c);
    if (rv != 0) {
        w->errors++;
        note("W9: kill of %s: %s", c->value, uv_strerror(rv));
        w9_abort(w, "cannot kill a victim");
    }
}

static uint64_t since(int64_t t, int64_t t0)
{
    return t > t0 ? (uint64_t)(t - t0) : 0;
}

/* A kill round's time t, from the kill and from the lease's end. */
static void record_kill(struct w9 *w, struct hist *from_kill, struct hist *from_expiry, int64_t t)
{
    int64_t expiry = w->t0 + (int64_t)ttl_ms(w->cfg) * NS_PER_MS;

    hist_record(from_kill, since(t, w->t0));
    hist_record(from_expiry, since(t, expiry));
    if (t < expiry) w->expiry_early++;
}

/* The round is over (seen: every observer heard of the new leader, at t_seen). */
static void end_round(struct w9 *w, bool seen, int64_t t_seen)
{
    struct w9cand *gone = w->gone; /* NULL once a killed victim is freed */

    if (w->next != NULL)
        w->violations += (uint64_t)w9_obs_check_value(w, w->lead_fence, w->next->value);
    if (w->kind == W9_LOCAL) {
        w->resign_rounds++;
        hist_record(&w->resign_lead, since(w->t_lead, w->t0));
        if (seen && t_seen > 0) hist_record(&w->resign_seen, since(t_seen, w->t0));
    } else {
        w->kill_rounds++;
        record_kill(w, &w->kill_lead, &w->expiry_lead, w->t_lead);
        if (seen && t_seen > 0) record_kill(w, &w->kill_seen, &w->expiry_seen, t_seen);
    }
    if (w->round >= 2 * w->cfg->rounds ||
        now_ns() - w->t_start > (int64_t)(w->cfg->seconds * NS_PER_S)) {
        finish(w);
        return;
    }
    /* Back in line: the resigned candidate campaigns again (once its
     * resign is answered, w9_step), a new victim replaces the killed one. */
    w->phase = P_REQUEUE;
    arm(w);
    if (w->kind == W9_VICTIM) {
        struct w9cand *c = w9_victim_spawn(w);
        if (c == NULL) {
            w9_abort(w, "cannot start a victim");
            return;
        }
        line_push(w, c);
        w->waiting = c;
    } else {
        w->waiting = gone;
    }
    w9_step(w);
}

void w9_leads(struct w9 *w, struct w9cand *c, uint64_t fence, int64_t t)
{
    bool expected = (w->phase == P_SETUP && w->line_n > 0 && c == w->line[0] && !w->lead_known) ||
                    (w->phase == P_ROUND && c == w->next && !w->lead_known);

    if (w->phase == P_END) return;
    if (!expected) {
        w->violations++;
        note("W9: %s leads (fence %" PRIu64 ") out of turn", c->value, fence);
        w9_abort(w, "a candidate led out of its turn in line");
        return;
    }
    if (fence <= w->last_fence) {
        w->violations++;
        note("W9: leader %s has fence %" PRIu64 " after fence %" PRIu64, c->value, fence,
             w->last_fence);
    }
    w->last_fence = fence;
    w->lead_known = true;
    w->lead_fence = fence;
    w->t_lead = t;
    w9_step(w);
}

static void on_retry(uv_timer_t *t)
{
    w9_step(t->data);
}

bool w9_retry_campaign(struct w9 *w, struct w9cand *c, int status)
{
    if (status != BATON_EVERSION || w->phase != P_SETUP || w->setup_next != 1 ||
        w->n_retries >= W9_MAX_RETRIES)
        return false;
    if (w->n_retries++ == 0)
        fprintf(stderr, "lockbench: W9: the cluster cannot hold elections yet (%s); waiting\n",
                baton_async_errmsg(c->ac));
    c->state = C_IDLE;
    w->line_n = 0;
    w->setup_next = 0;
    w->waiting = NULL;
    uv_timer_start(&w->retry, on_retry, W9_RETRY_MS, 0);
    return true;
}

void w9_queued(struct w9 *w, struct w9cand *c)
{
    if (c != w->waiting) return;
    w->waiting = NULL;
    w9_step(w);
}

/* The setup's next move: the sessions, the observers' sync, then the
 * candidates in line one at a time; then the first round. */
static void setup_step(struct w9 *w)
{
    int64_t t;

    if (w->n_open_pending > 0 || !w9_obs_all_synced(w) || w->waiting != NULL ||
        uv_is_active((uv_handle_t *)&w->retry))
        return;
    if (w->setup_next < w->cfg->candidates) {
        int k = w->setup_next++;
        struct w9cand *c;
        if (k % 2 == 0) {
            c = &w->local[k / 2];
            if (w9_local_campaign(c) != 0) {
                w9_abort(w, "a campaign failed");
                return;
            }
        } else if ((c = w9_victim_spawn(w)) == NULL) {
            w9_abort(w, "cannot start a victim");
            return;
        }
        line_push(w, c);
        w->waiting = c;
        arm(w);
        return;
    }
    if (w->lead_known && w9_obs_all_know(w, w->lead_fence, &t)) {
        fprintf(stderr, "lockbench: W9: %d candidates in line, %d observers; rounds start\n",
                w->line_n, w->n_obs);
        w->t_start = now_ns();
        start_round(w);
    }
}

void w9_step(struct w9 *w)
{
    int64_t t;

    switch (w->phase) {
    case P_SETUP: setup_step(w); break;
    case P_ROUND:
        if (w->lead_known && w9_obs_all_know(w, w->lead_fence, &t)) end_round(w, true, t);
        break;
    case P_REQUEUE:
        if (w->waiting == NULL) {
            start_round(w);
        } else if (w->waiting->kind == W9_LOCAL && w->waiting->state == C_IDLE) {
            line_push(w, w->waiting);
            if (w9_local_campaign(w->waiting) != 0) w9_abort(w, "a campaign failed");
        }
        break;
    case P_END: break;
    }
}

static void on_timeout(uv_timer_t *t)
{
    struct w9 *w = t->data;
    static const char *const what[] = {"the setup", "a round", "a candidate's return to line",
                                       ""};

    if (w->phase == P_ROUND && w->lead_known) {
        /* The new leader leads, but not every observer heard of it. */
        int missed = w9_obs_missed(w, w->lead_fence);
        w->violations += (uint64_t)missed;
        for (int i = 0; i < w->n_obs; i++)
            if (!w->obs[i].dead && w->obs[i].fence != w->lead_fence) {
                if (w->obs[i].excused) w->errors++; /* told of a gap, yet never caught up */
                w->obs[i].dead = true;
            }
        end_round(w, false, 0);
        return;
    }
    w->errors++;
    note("W9: %s did not end within its bound (round %d)", what[w->phase], w->round);
    w9_abort(w, "timed out");
}

int run_w9(const struct cfg *cfg)
{
    struct w9 w;
    size_t exe_len;
    int rv;

    memset(&w, 0, sizeof w);
    w.cfg = cfg;
    w.n_local = cfg->candidates / 2;
    w.n_obs = cfg->clients;
    w.line_cap = cfg->candidates + 1;
    w.local = calloc((size_t)w.n_local, sizeof *w.local);
    w.obs = calloc((size_t)w.n_obs, sizeof *w.obs);
    w.line = calloc((size_t)w.line_cap, sizeof *w.line);
    exe_len = sizeof w.exe;
    if (w.local == NULL || w.obs == NULL || w.line == NULL || hist_init(&w.resign_lead) ||
        hist_init(&w.resign_seen) || hist_init(&w.kill_lead) || hist_init(&w.kill_seen) ||
        hist_init(&w.expiry_lead) || hist_init(&w.expiry_seen) ||
        uv_exepath(w.exe, &exe_len) != 0) {
        fprintf(stderr, "lockbench: W9: out of memory, or this program's path unknown\n");
        return 1;
    }
    start_watchdog(now_ns() + (int64_t)(cfg->seconds * NS_PER_S) +
                   4 * ((int64_t)ttl_ms(cfg) + cfg->connect_timeout_ms + cfg->op_timeout_ms +
                        W9_STEP_SLACK_MS) *
                       NS_PER_MS +
                   60 * NS_PER_S);
    uv_loop_init(&w.loop);
    uv_timer_init(&w.loop, &w.timer);
    w.timer.data = &w;
    uv_timer_init(&w.loop, &w.retry);
    w.retry.data = &w;
    w.phase = P_SETUP;
    w.t_start = now_ns();
    arm(&w);
    for (int i = 0; i < w.n_obs && w.phase == P_SETUP; i++) {
        w.obs[i].id = i;
        if (w9_obs_open(&w, &w.obs[i]) != 0) w9_abort(&w, "an observer could not start");
    }
    for (int i = 0; i < w.n_local && w.phase == P_SETUP; i++) {
        w.local[i].id = i;
        if (w9_local_open(&w, &w.local[i]) != 0) w9_abort(&w, "a candidate could not start");
    }
    uv_run(&w.loop, UV_RUN_DEFAULT);
    rv = uv_loop_close(&w.loop);
    if (rv != 0) fprintf(stderr, "lockbench: the loop still had handles: %s\n", uv_strerror(rv));
    hist_free(&w.resign_lead);
    hist_free(&w.resign_seen);
    hist_free(&w.kill_lead);
    hist_free(&w.kill_seen);
    hist_free(&w.expiry_lead);
    hist_free(&w.expiry_seen);
    free(w.local);
    free(w.obs);
    free(w.line);
    return w.rc;
}
