/*
 * state_print.c -- one lock's state (baton.h: baton_lock_state) as
 * batonctl prints it, for people (a block of lines and tables) and for
 * scripts (one JSON object): lock-info and watch both print through here,
 * so a state reads the same in both. The waiter ids (the seq of each holder's granted request and of
 * each queued one) are not in baton_lock_state; lock-info, which reads the
 * wire form itself, passes them along.
 */
#include <stdio.h>
#include <string.h>

#include "baton/baton.h"
#include "client/ctl/ctl.h"
#include "proto/lockreq.h"

/* A value or a client name for a human, "-" when there is none. */
static void table_cell_value(struct table *t, const void *v, size_t n)
{
    if (n == 0)
        table_cell(t, "-");
    else
        table_cell_bytes(t, v, n);
}

/* Every holder, when there is more to say than one exclusive holder. */
static void print_holders(const baton_lock_state *st, const struct msg_lock_state *ids)
{
    struct table t;

    printf("holders:        %u\n", st->total_holders);
    table_init(&t, ids ? 8 : 7);
    table_cell(&t, "SESSION");
    if (ids) table_cell(&t, "WAITER");
    table_cell(&t, "CLIENT");
    table_cell(&t, "FENCE");
    table_cell(&t, "MODE");
    table_cell(&t, "HANDLES");
    table_cell(&t, "GRANTED");
    table_cell(&t, "VALUE");
    for (uint32_t i = 0; i < st->n_holders; i++) {
        const baton_holder *h = &st->holders[i];
        table_cell(&t, "%llu", (unsigned long long)h->session);
        if (ids) table_cell(&t, "%llu", (unsigned long long)ids->holders[i].waiter);
        table_cell_value(&t, h->client_name, strlen(h->client_name));
        table_cell(&t, "%llu", (unsigned long long)h->fence);
        table_cell(&t, "%s", lockreq_mode_name(h->mode));
        table_cell(&t, "%u", h->count);
        table_cell(&t, "%llu", (unsigned long long)h->granted_revision);
        table_cell_value(&t, h->value, h->value_len);
    }
    fputc('\n', stdout);
    table_print(&t, stdout);
    table_free(&t);
    if (st->n_holders < st->total_holders)
        printf("(%u more holders not shown)\n", st->total_holders - st->n_holders);
}

/* The one exclusive holder, a line each. */
static void print_holder(const baton_lock_state *st, const struct msg_lock_state *ids)
{
    const baton_holder *h = &st->holders[0];

    printf("holder:         session %llu", (unsigned long long)h->session);
    if (ids) printf(", waiter %llu", (unsigned long long)ids->holders[0].waiter);
    if (h->client_name[0] != '\0') {
        fputs(", client ", stdout);
        ctl_sanitize(stdout, h->client_name, strlen(h->client_name));
    }
    fputc('\n', stdout);
    if (h->value_len > 0) {
        fputs("value:          ", stdout);
        ctl_sanitize(stdout, h->value, h->value_len);
        fputc('\n', stdout);
    }
    printf("fence:          %llu\n", (unsigned long long)h->fence);
    printf("granted index:  %llu\n", (unsigned long long)h->granted_revision);
}

static void print_waiters(const baton_lock_state *st, const struct msg_lock_state *ids)
{
    struct table t;

    table_init(&t, ids ? 7 : 6);
    table_cell(&t, "POS");
    table_cell(&t, "SESSION");
    if (ids) table_cell(&t, "WAITER");
    table_cell(&t, "CLIENT");
    table_cell(&t, "MODE");
    table_cell(&t, "WAIT");
    table_cell(&t, "VALUE");
    for (uint32_t i = 0; i < st->n_waiters; i++) {
        const baton_waiter *wt = &st->waiters[i];
        table_cell(&t, "%u", i + 1);
        table_cell(&t, "%llu", (unsigned long long)wt->session);
        if (ids) table_cell(&t, "%llu", (unsigned long long)ids->waiters[i].waiter);
        table_cell_value(&t, wt->client_name, strlen(wt->client_name));
        table_cell(&t, "%s", lockreq_mode_name(wt->mode));
        if (wt->wait_ms < 0)
            table_cell(&t, "forever");
        else
            table_cell(&t, "%lld ms", (long long)wt->wait_ms);
        table_cell_value(&t, wt->value, wt->value_len);
    }
    fputc('\n', stdout);
    table_print(&t, stdout);
    table_free(&t);
    if (st->n_waiters < st->total_waiters)
        printf("(%u more waiters not shown)\n", st->total_waiters - st->n_waiters);
}

static void print_table(const char *name, const baton_lock_state *st,
                        const struct msg_lock_state *ids)
{
    fputs("lock:           ", stdout);
    ctl_sanitize(stdout, name, strlen(name));
    fputc('\n', stdout);
    printf("revision:       %llu\n", (unsigned long long)st->revision);
    if (st->limit > 1) printf("limit:          %u (a semaphore)\n", st->limit);
    if (!st->held) {
        if (st->delayed)
            printf("holder:         none (lock-delay: its holder's session expired or its\n"
                   "                release was forced; granted to no one until the delay\n"
                   "                ends)\n");
        else
            printf("holder:         none (free)\n");
        if (st->total_waiters == 0) return;
    } else {
        printf("mode:           %s\n", lockreq_mode_name(st->mode));
        if (st->delayed)
            printf("delayed:        yes (a holder's session expired or its release was\n"
                   "                forced: no new grant until the lock-delay ends)\n");
        if (st->total_holders == 1 && st->n_holders == 1 && st->holders[0].count == 1)
            print_holder(st, ids);
        else
            print_holders(st, ids);
    }
    printf("waiters:        %u\n", st->total_waiters);
    if (st->n_waiters > 0) print_waiters(st, ids);
}

/* The fields of st, inside an object w has begun. */
static void json_fields(struct jw *w, const char *name, const baton_lock_state *st,
                        const struct msg_lock_state *ids)
{
    const baton_holder *first = st->held && st->n_holders > 0 ? &st->holders[0] : NULL;

    jw_cstring(w, "name", name);
    jw_u64(w, "revision", st->revision);
    jw_bool(w, "held", st->held);
    jw_u64(w, "holder_session", first ? first->session : 0);
    if (ids) jw_u64(w, "holder_waiter", first ? ids->holders[0].waiter : 0);
    jw_cstring(w, "client_name", first ? first->client_name : NULL);
    if (first)
        jw_value(w, first->value, first->value_len);
    else
        jw_null(w, "value");
    jw_u64(w, "fence", first ? first->fence : 0);
    jw_u64(w, "granted_index", first ? first->granted_revision : 0);
    jw_cstring(w, "mode", lockreq_mode_name(st->mode));
    jw_u64(w, "limit", st->limit);
    jw_u64(w, "total_holders", st->total_holders);
    jw_begin_array(w, "holders");
    for (uint32_t i = 0; i < st->n_holders; i++) {
        const baton_holder *h = &st->holders[i];
        jw_begin_object(w, NULL);
        jw_u64(w, "session", h->session);
        if (ids) jw_u64(w, "waiter", ids->holders[i].waiter);
        jw_cstring(w, "client_name", h->client_name);
        jw_u64(w, "fence", h->fence);
        jw_u64(w, "granted_index", h->granted_revision);
        jw_cstring(w, "mode", lockreq_mode_name(h->mode));
        jw_u64(w, "handles", h->count);
        jw_value(w, h->value, h->value_len);
        jw_end_object(w);
    }
    jw_end_array(w);
    jw_u64(w, "total_waiters", st->total_waiters);
    jw_begin_array(w, "waiters");
    for (uint32_t i = 0; i < st->n_waiters; i++) {
        const baton_waiter *wt = &st->waiters[i];
        jw_begin_object(w, NULL);
        jw_u64(w, "session", wt->session);
        if (ids) jw_u64(w, "waiter", ids->waiters[i].waiter);
        jw_cstring(w, "client_name", wt->client_name);
        jw_i64(w, "wait_ms", wt->wait_ms < 0 ? -1 : wt->wait_ms);
        jw_cstring(w, "mode", lockreq_mode_name(wt->mode));
        jw_value(w, wt->value, wt->value_len);
        jw_end_object(w);
    }
    jw_end_array(w);
    jw_bool(w, "truncated",
            st->n_waiters < st->total_waiters || st->n_holders < st->total_holders);
    jw_bool(w, "delayed", st->delayed);
}

void ctl_print_state(const char *name, const baton_lock_state *st,
                     const struct msg_lock_state *ids, enum ctl_format f,
                     const struct ctl_event_tag *ev)
{
    struct jw w;

    if (f == CTL_TABLE) {
        if (ev != NULL)
            printf("event:          %llu (%s at revision %llu)\n", (unsigned long long)ev->seq,
                   ev->kind, (unsigned long long)st->revision);
        print_table(name, st, ids);
        return;
    }
    jw_init(&w, stdout);
    jw_begin_object(&w, NULL);
    json_fields(&w, name, st, ids);
    if (ev != NULL) {
        jw_cstring(&w, "kind", ev->kind);
        jw_u64(&w, "seq", ev->seq);
    }
    jw_end_object(&w);
    jw_finish(&w);
}
