/*
 * deadlines.c -- the leader's timers that end something: a queued
 * ACQUIRE's wait deadline (WAIT_TIMEOUT) and a lock-delay after an expiry
 * or a forced release that waits out the holder's lease (DELAY_END). When one fires the leader proposes the command; the store
 * decides what it means then (a waiter granted meanwhile makes
 * WAIT_TIMEOUT a no-op).
 *
 * Timers are armed by the ACQUIRE's completion (dispatch.c) and by the
 * FX_LOCK_DELAY effect, and disarmed by the effect that ends the wait;
 * server.c routes the effects here. This state lives in memory on the
 * leader only: a new leader re-arms every deadline and lock-delay from the
 * store with its full duration (it cannot know how much of it had passed),
 * and a node that stops leading drops them all.
 */
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "server/log.h"
#include "server/server_int.h"

static void timer_freed(uv_handle_t *h)
{
    free(h->data);
}

/* Stop a timer and free the struct whose `t` it is (its t.data) once
 * libuv has closed it. */
static void timer_drop(uv_timer_t *t)
{
    uv_close((uv_handle_t *)t, timer_freed);
}

/* Stop and free the wait timer of (session, waiter), if there is one. The
 * map changes only when the list's head does. */
static void wait_disarm(struct server *srv, uint64_t session, uint64_t waiter)
{
    struct wait_timer *head = u64map_get(&srv->waits, session), **pp, *w;

    for (pp = &head; *pp && (*pp)->waiter != waiter; pp = &(*pp)->next) {
    }
    if ((w = *pp) == NULL) return;
    *pp = w->next;
    timer_drop(&w->t);
    if (head == NULL)
        u64map_del(&srv->waits, session);
    else if (pp == &head)
        xu64map_put(&srv->waits, session, head);
}

/* Stop and free a list of wait timers. */
static void waits_free(struct wait_timer *w)
{
    while (w != NULL) {
        struct wait_timer *next = w->next;
        timer_drop(&w->t);
        w = next;
    }
}

/* Stop and free every wait timer of a session. */
static void session_disarm(struct server *srv, uint64_t session)
{
    waits_free(u64map_del(&srv->waits, session));
}

/* Propose one of the leader's own commands: nobody waits for an answer. */
static void propose_own(struct server *srv, const struct cmd *cmd)
{
    struct pending p;

    pending_init(&p, NULL, 0, 0, cmd);
    batch_add(srv, cmd, &p);
}

/* A wait deadline passed: propose its end. The timer stays until the
 * WAIT_FAILED (or GRANT) effect disarms it; if the proposal is lost to a
 * leader change, the next leader re-arms. */
static void wait_fire(uv_timer_t *t)
{
    struct wait_timer *w = t->data;
    struct cmd cmd = {.type = CMD_WAIT_TIMEOUT};

    if (!w->srv->ready) return;
    cmd.session = w->session;
    cmd.waiter = w->waiter;
    cmd.name = w->name;
    cmd.name_len = w->name_len;
    propose_own(w->srv, &cmd);
}

void deadline_wait_arm(struct server *srv, uint64_t session, uint64_t waiter, int64_t wait_ms,
                       const char *name, size_t name_len)
{
    struct wait_timer *w;

    if (!srv->ready || wait_ms <= 0 || name_len > BATON_MAX_NAME) return;
    wait_disarm(srv, session, waiter);
    w = xcalloc(1, sizeof *w);
    w->srv = srv;
    w->session = session;
    w->waiter = waiter;
    w->name_len = (uint16_t)name_len;
    memcpy(w->name, name, name_len);
    uv_timer_init(srv->loop, &w->t);
    w->t.data = w;
    uv_timer_start(&w->t, wait_fire, (uint64_t)wait_ms, 0);
    w->next = u64map_get(&srv->waits, session);
    xu64map_put(&srv->waits, session, w);
}

/* A lock-delay ran out: propose its end. The timer is freed now; if the
 * proposal is lost to a leader change, the next leader re-arms from the
 * store. */
static void delay_fire(uv_timer_t *t)
{
    struct delay_timer *d = t->data, **pp;
    struct server *srv = d->srv;
    struct cmd cmd = {.type = CMD_DELAY_END};

    if (srv->ready) {
        cmd.name = d->name;
        cmd.name_len = d->name_len;
        propose_own(srv, &cmd);
    }
    for (pp = &srv->delays; *pp; pp = &(*pp)->next)
        if (*pp == d) {
            *pp = d->next;
            break;
        }
    timer_drop(&d->t);
}

static void delay_arm(struct server *srv, const char *name, size_t name_len, int32_t ms)
{
    struct delay_timer *d;

    if (!srv->ready || ms <= 0 || name_len > BATON_MAX_NAME) return;
    d = xcalloc(1, sizeof *d);
    d->srv = srv;
    d->name_len = (uint16_t)name_len;
    memcpy(d->name, name, name_len);
    uv_timer_init(srv->loop, &d->t);
    d->t.data = d;
    uv_timer_start(&d->t, delay_fire, (uint64_t)ms, 0);
    d->next = srv->delays;
    srv->delays = d;
}

void deadlines_effect(struct server *srv, const struct effect *e)
{
    switch (e->type) {
    case FX_GRANT:
    case FX_WAIT_FAILED:
    case FX_LOST:
        wait_disarm(srv, e->session, e->waiter);
        break;
    case FX_SESSION_GONE:
        session_disarm(srv, e->session);
        break;
    case FX_LOCK_DELAY:
        log_info("lock '%.*s' delayed %d ms after its holder expired or was forced away",
                 (int)e->name_len, e->name, e->lock_delay_ms);
        delay_arm(srv, e->name, e->name_len, e->lock_delay_ms);
        break;
    default:
        break;
    }
}

static int rearm_delay(void *data, const char *name, size_t name_len, int32_t lock_delay_ms)
{
    delay_arm(data, name, name_len, lock_delay_ms);
    return 0;
}

static int rearm_waiter(void *data, uint64_t session, uint64_t waiter, int64_t wait_ms,
                        const char *name, size_t name_len)
{
    deadline_wait_arm(data, session, waiter, wait_ms, name, name_len);
    return 0;
}

void deadlines_start(struct server *srv)
{
    int rv = store_foreach_timed_waiter(srv->store, rearm_waiter, srv);

    if (rv != 0)
        log_error("re-arming wait deadlines: %s; some waits may outlive their deadline until "
                  "the next leader", baton_strerror(rv));
    rv = store_foreach_delayed_lock(srv->store, rearm_delay, srv);
    if (rv != 0)
        log_error("re-arming lock-delays: %s; some delayed locks stay free but ungranted until "
                  "the next leader", baton_strerror(rv));
}

void deadlines_stop(struct server *srv)
{
    while (srv->delays) {
        struct delay_timer *d = srv->delays;
        srv->delays = d->next;
        timer_drop(&d->t);
    }
    for (size_t i = 0; i < srv->waits.cap; i++)
        if (srv->waits.slots[i].key != 0) waits_free(srv->waits.slots[i].val);
    u64map_free(&srv->waits);
}
