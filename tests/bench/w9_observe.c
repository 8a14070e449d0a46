/*
 * w9_observe.c -- W9's observers (w9.h): each its own session on the run's
 * loop, with one baton_async_observe of the election. An observer keeps the
 * leader it last heard of (holders[0]: fence, value) and when; w9.c asks
 * whether every observer knows the round's new leader.
 *
 * Checks, each a violation: a leader's fence not above the one heard
 * before (fences grow with leaders), and at the end of a round an
 * observer that never heard of the new leader although no GAP or
 * restarted SYNCED told it that it may have missed something (those are
 * counted as observer_gaps instead).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tests/bench/w9.h"

/* Copy a holder's value as text (at most W9_VALUE_MAX - 1 bytes). */
static void copy_value(char *dst, const void *v, size_t len)
{
    if (len > W9_VALUE_MAX - 1) len = W9_VALUE_MAX - 1;
    if (v != NULL && len > 0) memcpy(dst, v, len);
    dst[v != NULL ? len : 0] = '\0';
}

/* The election's state as of an event: who leads now. */
static void heard(struct w9obs *o, const baton_lock_state *st, int64_t t)
{
    struct w9 *w = o->w;
    const baton_holder *h;

    if (st == NULL || st->n_holders == 0) return; /* nobody leads at this revision */
    h = &st->holders[0];
    if (h->fence == o->fence) return; /* the same leader (its value may have changed) */
    if (h->fence < o->fence) {
        w->violations++;
        note("W9: observer %d: leader fence %" PRIu64 " after fence %" PRIu64, o->id, h->fence,
             o->fence);
    }
    o->fence = h->fence;
    copy_value(o->value, h->value, h->value_len);
    o->t = t;
}

static void on_event(baton_async_t *ac, int status, const baton_event *ev, void *data)
{
    struct w9obs *o = data;
    struct w9 *w = o->w;
    int64_t t = now_ns();

    if (status != 0) {
        o->watch = NULL; /* the watch ended */
        if (w->phase == P_END) return;
        o->dead = true;
        w->errors++;
        log_err(o->id, "observe", status, baton_async_errmsg(ac));
        w9_step(w);
        return;
    }
    switch (ev->kind) {
    case BATON_EVENT_SYNCED:
        if (o->synced && ev->restarted) {
            o->excused = true;
            w->observer_gaps++;
        }
        o->synced = true;
        break;
    case BATON_EVENT_GAP:
        o->excused = true;
        w->observer_gaps++;
        heard(o, ev->state, t);
        break;
    case BATON_EVENT_STATE:
    case BATON_EVENT_CHANGE:
        heard(o, ev->state, t);
        break;
    default:
        break;
    }
    w9_step(w);
}

static void on_open(baton_async_t *ac, int status, uint64_t session, void *data)
{
    struct w9obs *o = data;
    struct w9 *w = o->w;
    int rv;

    (void)session;
    w->n_open_pending--;
    if (w->phase == P_END) return; /* freed at the end before it opened */
    if (status != 0) {
        o->dead = true;
        w->errors++;
        log_err(o->id, "connect", status, baton_async_errmsg(ac));
        w9_abort(w, "an observer could not open its session");
        return;
    }
    rv = baton_async_observe(ac, W9_ELECTION, on_event, o, &o->watch);
    if (rv != 0) {
        o->dead = true;
        w->errors++;
        log_err(o->id, "observe", rv, baton_async_errmsg(ac));
        w9_abort(w, "an observer could not start observing");
        return;
    }
    w9_step(w);
}

int w9_obs_open(struct w9 *w, struct w9obs *o)
{
    o->w = w;
    w->n_open_pending++;
    if (bench_async_open(w->cfg, "lockbench-w9-observer-", o->id, &w->loop, on_open, o, &o->ac) !=
        0) {
        w->n_open_pending--;
        o->dead = true;
        w->errors++;
        return -1;
    }
    return 0;
}

bool w9_obs_all_synced(const struct w9 *w)
{
    for (int i = 0; i < w->n_obs; i++)
        if (!w->obs[i].dead && !w->obs[i].synced) return false;
    return true;
}

bool w9_obs_all_know(const struct w9 *w, uint64_t fence, int64_t *t_last)
{
    int64_t last = 0;

    for (int i = 0; i < w->n_obs; i++) {
        const struct w9obs *o = &w->obs[i];
        if (o->dead) continue;
        if (o->fence != fence) return false;
        if (o->t > last) last = o->t;
    }
    *t_last = last;
    return true;
}

void w9_obs_round(struct w9 *w)
{
    for (int i = 0; i < w->n_obs; i++) w->obs[i].excused = false;
}

int w9_obs_missed(struct w9 *w, uint64_t fence)
{
    int missed = 0;

    for (int i = 0; i < w->n_obs; i++) {
        const struct w9obs *o = &w->obs[i];
        if (o->dead || o->fence == fence || o->excused) continue;
        missed++;
        note("W9: observer %d never heard of leader fence %" PRIu64 " (it knows fence %" PRIu64
             ")",
             o->id, fence, o->fence);
    }
    return missed;
}

int w9_obs_check_value(struct w9 *w, uint64_t fence, const char *value)
{
    int bad = 0;

    for (int i = 0; i < w->n_obs; i++) {
        const struct w9obs *o = &w->obs[i];
        if (o->dead || o->fence != fence || strcmp(o->value, value) == 0) continue;
        bad++;
        note("W9: observer %d: leader fence %" PRIu64 " has value '%s', not '%s'", o->id, fence,
             o->value, value);
    }
    return bad;
}

static void on_closed(baton_async_t *ac, int status, void *data)
{
    struct w9obs *o = data;

    (void)status;
    baton_async_free(ac); /* deferred until this callback returns */
    o->ac = NULL;
    w9_closed(o->w);
}

void w9_obs_close(struct w9 *w)
{
    for (int i = 0; i < w->n_obs; i++) {
        struct w9obs *o = &w->obs[i];
        if (o->ac == NULL) continue;
        w->ends++;
        if (baton_async_close_session(o->ac, on_closed, o) != 0) {
            baton_async_free(o->ac);
            o->ac = NULL;
            w9_closed(w);
        }
    }
}
