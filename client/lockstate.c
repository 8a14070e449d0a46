/*
 * lockstate.c -- a lock's state as readers see it (baton.h: baton_lock_state,
 * baton_event) made from its wire form (proto/msg.h: struct msg_lock_state,
 * struct msg_watch2_event).
 *
 * Each result is ONE malloc'd block: the struct, then the holders and the
 * waiters, then every string and value. Names and client names are
 * NUL-terminated; a value is its bytes (value NULL when value_len is 0).
 * So baton_lock_state_free and baton_event_free are free(), and a result
 * never points into the message it was made from.
 */
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "client/async_int.h"

int baton__value_check(const void *value, size_t len)
{
    if (value == NULL && len > 0) return BATON_EINVAL;
    return len > BATON_MAX_VALUE ? BATON_ETOOBIG : 0;
}

/* The bytes of m's strings and values, with a NUL after each string. */
static size_t text_bytes(const struct msg_lock_state *m)
{
    size_t n = (size_t)m->lock.n + 1;

    for (uint32_t i = 0; i < m->n_holders; i++)
        n += (size_t)m->holders[i].client_name.n + 1 + m->holders[i].value.n;
    for (uint32_t i = 0; i < m->n_waiters; i++)
        n += (size_t)m->waiters[i].client_name.n + 1 + m->waiters[i].value.n;
    return n;
}

/* Bytes from the struct's start to the end of its lists. */
static size_t lists_bytes(const struct msg_lock_state *m)
{
    return sizeof(baton_lock_state) + m->n_holders * sizeof(baton_holder) +
           m->n_waiters * sizeof(baton_waiter);
}

/* Copy string s to *p, NUL-terminated; returns where it went. */
static const char *put_str(char **p, struct pstr s)
{
    char *d = *p;

    if (s.n) memcpy(d, s.p, s.n);
    d[s.n] = '\0';
    *p += s.n + 1;
    return d;
}

/* Copy value v to *p; NULL for an empty one. */
static const void *put_val(char **p, struct pstr v)
{
    char *d = *p;

    if (v.n == 0) return NULL;
    memcpy(d, v.p, v.n);
    *p += v.n;
    return d;
}

/* Fill *st (at the start of a block of lists_bytes + text_bytes) from m. */
static void fill(baton_lock_state *st, const struct msg_lock_state *m)
{
    baton_holder *h = (baton_holder *)(st + 1);
    baton_waiter *w = (baton_waiter *)(h + m->n_holders);
    char *p = (char *)(w + m->n_waiters);

    _Static_assert(sizeof(baton_lock_state) % alignof(baton_holder) == 0, "holders aligned");
    _Static_assert(sizeof(baton_holder) % alignof(baton_waiter) == 0, "waiters aligned");
    *st = (baton_lock_state){
        .revision = m->revision,
        .held = m->held != 0,
        .mode = m->mode,
        .limit = m->limit,
        .delayed = m->delayed != 0,
        .total_holders = m->total_holders,
        .n_holders = m->n_holders,
        .holders = m->n_holders ? h : NULL,
        .total_waiters = m->total_waiters,
        .n_waiters = m->n_waiters,
        .waiters = m->n_waiters ? w : NULL,
    };
    st->name = put_str(&p, m->lock);
    for (uint32_t i = 0; i < m->n_holders; i++) {
        const struct msg_holder_v *s = &m->holders[i];
        h[i] = (baton_holder){.session = s->session, .fence = s->fence,
                              .granted_revision = s->granted_index, .mode = s->mode,
                              .count = s->count, .value_len = s->value.n};
        h[i].client_name = put_str(&p, s->client_name);
        h[i].value = put_val(&p, s->value);
    }
    for (uint32_t i = 0; i < m->n_waiters; i++) {
        const struct msg_waiter_v *s = &m->waiters[i];
        w[i] = (baton_waiter){.session = s->session, .mode = s->mode, .wait_ms = s->wait_ms,
                              .value_len = s->value.n};
        w[i].client_name = put_str(&p, s->client_name);
        w[i].value = put_val(&p, s->value);
    }
}

baton_lock_state *baton__state_new(const struct msg_lock_state *m)
{
    baton_lock_state *st = malloc(lists_bytes(m) + text_bytes(m));

    if (st != NULL) fill(st, m);
    return st;
}

/* The public kind of a wire kind (PROGRESS has none: 0). */
static int event_kind(uint8_t k)
{
    switch (k) {
    case WATCH2_CHANGE: return BATON_EVENT_CHANGE;
    case WATCH2_STATE: return BATON_EVENT_STATE;
    case WATCH2_GAP: return BATON_EVENT_GAP;
    case WATCH2_SYNCED: return BATON_EVENT_SYNCED;
    default: return 0;
    }
}

baton_event *baton__event_new(const struct msg_watch2_event *m)
{
    int kind = event_kind(m->kind);
    bool with_state = kind != 0 && kind != BATON_EVENT_SYNCED;
    size_t head = sizeof(baton_event);
    baton_event *ev;

    _Static_assert(sizeof(baton_event) % alignof(baton_lock_state) == 0, "state aligned");
    ev = malloc(head + (with_state ? lists_bytes(&m->state) + text_bytes(&m->state) : 0));
    if (ev == NULL) return NULL;
    *ev = (baton_event){.kind = kind, .restarted = kind == BATON_EVENT_SYNCED && m->restarted,
                        .revision = m->state.revision};
    if (with_state) {
        baton_lock_state *st = (baton_lock_state *)(ev + 1);
        fill(st, &m->state);
        ev->state = st;
    }
    return ev;
}

void baton_lock_state_free(baton_lock_state *st)
{
    free(st);
}

void baton_event_free(baton_event *ev)
{
    free(ev);
}
