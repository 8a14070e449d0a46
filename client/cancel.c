/*
 * cancel.c -- cancel handles (baton.h, "Cancelling a wait"): a flag that,
 * once fired, stays fired, and the calls waiting with it.
 *
 * A call joins the handle while it waits and leaves it before it returns.
 * Firing runs each joined call's fire function under the handle's mutex,
 * so a call that has left is never touched again. Lock order: the
 * handle's mutex, then whatever a fire function takes (a baton_t's); the
 * blocking API never joins or leaves while holding a baton_t's mutex.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "baton/baton.h"
#include "client/async_int.h"

struct baton_cancel {
    pthread_mutex_t mu;
    bool fired;
    struct baton__cancel_reg *head; /* the calls waiting with it */
};

int baton_cancel_new(baton_cancel_t **out)
{
    baton_cancel_t *c;

    if (out == NULL) return BATON_EINVAL;
    *out = NULL;
    c = calloc(1, sizeof *c);
    if (c == NULL) return BATON_ENOMEM;
    pthread_mutex_init(&c->mu, NULL);
    *out = c;
    return 0;
}

void baton_cancel(baton_cancel_t *c)
{
    struct baton__cancel_reg *r;

    if (c == NULL) return;
    pthread_mutex_lock(&c->mu);
    if (!c->fired) {
        c->fired = true;
        for (r = c->head; r; r = r->next) r->fire(r);
    }
    pthread_mutex_unlock(&c->mu);
}

void baton_cancel_free(baton_cancel_t *c)
{
    if (c == NULL) return;
    pthread_mutex_destroy(&c->mu);
    free(c);
}

int baton__cancel_join(baton_cancel_t *c, struct baton__cancel_reg *r)
{
    int rv = 0;

    pthread_mutex_lock(&c->mu);
    if (c->fired) {
        rv = BATON_ECANCELED;
    } else {
        r->prev = NULL;
        r->next = c->head;
        if (c->head) c->head->prev = r;
        c->head = r;
    }
    pthread_mutex_unlock(&c->mu);
    return rv;
}

void baton__cancel_leave(baton_cancel_t *c, struct baton__cancel_reg *r)
{
    pthread_mutex_lock(&c->mu);
    if (r->prev)
        r->prev->next = r->next;
    else
        c->head = r->next;
    if (r->next) r->next->prev = r->prev;
    pthread_mutex_unlock(&c->mu);
}
