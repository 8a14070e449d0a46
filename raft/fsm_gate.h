/*
 * fsm_gate.h -- the queue of a follower's entries that wait for a sure
 * commit (raft/fsm.h says when and why): copies of the entries' bytes,
 * with the index and term raft gave them, oldest first.
 *
 * raft owns the buffer it hands to apply, so each entry is copied. The
 * queue is bounded (FSM_GATE_MAX_ENTRIES, FSM_GATE_MAX_BYTES): it normally
 * holds the entries of one election's round trip, and a queue that does
 * not drain means the store cannot apply, which the fsm treats as fatal.
 */
#ifndef BATON_RAFT_FSM_GATE_H
#define BATON_RAFT_FSM_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FSM_GATE_MAX_ENTRIES 65536
#define FSM_GATE_MAX_BYTES (64u << 20)

struct gate_entry {
    uint64_t index;
    uint64_t term;
    size_t len;
    uint8_t *data;          /* malloc'd copy of the entry's bytes */
};

struct fsm_gate {
    struct gate_entry *q;   /* q[head..n) wait, oldest first */
    size_t head, n, cap;
    size_t bytes;           /* sum of the waiting entries' lengths */
};

/* Entries waiting. */
size_t gate_len(const struct fsm_gate *g);

/*
 * Append a copy of data[0..len) as entry (index, term). Returns 0,
 * BATON_ENOMEM, or BATON_ELIMIT when the queue is at its bound (nothing
 * is appended then).
 */
int gate_push(struct fsm_gate *g, uint64_t index, uint64_t term, const void *data, size_t len);

/* The oldest waiting entry, or NULL. */
const struct gate_entry *gate_front(const struct fsm_gate *g);

/* Drop the oldest waiting entry (there must be one). */
void gate_pop(struct fsm_gate *g);

/* Drop every waiting entry, keep the array. */
void gate_clear(struct fsm_gate *g);

/* Drop everything and free the array; g is empty afterwards. */
void gate_free(struct fsm_gate *g);

#endif /* BATON_RAFT_FSM_GATE_H */
