/*
 * fsm_gate.c -- the queue of a follower's deferred entries; see fsm_gate.h.
 */
#include "raft/fsm_gate.h"

#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"

size_t gate_len(const struct fsm_gate *g)
{
    return g->n - g->head;
}

/* Make room for one more entry at the end: move the waiting ones to the
 * front first, grow only when that is not enough. */
static int gate_room(struct fsm_gate *g)
{
    struct gate_entry *q;
    size_t cap;

    if (g->head > 0) {
        memmove(g->q, g->q + g->head, gate_len(g) * sizeof *g->q);
        g->n -= g->head;
        g->head = 0;
    }
    if (g->n < g->cap) return 0;
    cap = g->cap ? g->cap * 2 : 16;
    q = realloc(g->q, cap * sizeof *q);
    if (q == NULL) return BATON_ENOMEM;
    g->q = q;
    g->cap = cap;
    return 0;
}

int gate_push(struct fsm_gate *g, uint64_t index, uint64_t term, const void *data, size_t len)
{
    struct gate_entry *e;
    uint8_t *copy;

    if (gate_len(g) >= FSM_GATE_MAX_ENTRIES || len > FSM_GATE_MAX_BYTES - g->bytes)
        return BATON_ELIMIT;
    if (g->n == g->cap && gate_room(g) != 0) return BATON_ENOMEM;
    copy = malloc(len ? len : 1);
    if (copy == NULL) return BATON_ENOMEM;
    if (len) memcpy(copy, data, len);
    e = &g->q[g->n++];
    e->index = index;
    e->term = term;
    e->len = len;
    e->data = copy;
    g->bytes += len;
    return 0;
}

const struct gate_entry *gate_front(const struct fsm_gate *g)
{
    return gate_len(g) ? &g->q[g->head] : NULL;
}

void gate_pop(struct fsm_gate *g)
{
    struct gate_entry *e = &g->q[g->head++];

    g->bytes -= e->len;
    free(e->data);
    e->data = NULL;
    if (g->head == g->n) g->head = g->n = 0;
}

void gate_clear(struct fsm_gate *g)
{
    while (gate_len(g)) gate_pop(g);
}

void gate_free(struct fsm_gate *g)
{
    gate_clear(g);
    free(g->q);
    memset(g, 0, sizeof *g);
}
