/*
 * input.c -- what the input buffers of client connections hold
 * (docs/operations.md, "Limits"). listen.c reads into them; guard.c gives
 * an emptied one back.
 *
 *  - Before HELLO a frame is at most CONN_UNAUTH_FRAME bytes (the largest
 *    HELLO is 338): a connection that has not authenticated and whose next
 *    frame claims more is answered ERROR(BATON_ETOOBIG) and closed, from
 *    the frame's 4-byte header alone; it never holds more than a few KiB.
 *  - A buffer grows for the frame it holds: while a frame larger than one
 *    read arrives, the buffer is grown to the frame's end and no further
 *    (doubling would give a 1 MiB frame a 2 MiB buffer).
 *  - srv->input counts the bytes of every connection's input buffer. Past
 *    --max-input-mb, the connections holding the most are answered
 *    ERROR(BATON_ELIMIT) and closed, largest first, until the total is
 *    under 7/8 of the bound, each with a warning: a client sending large
 *    frames slowly can no longer hold a frame's worth of memory on every
 *    one of thousands of connections. Their buffers are freed at once.
 *
 * Memory given back: a large frame's buffer is above glibc's mmap
 * threshold and is unmapped when freed, but each buffer began as a 64 KiB
 * read from the heap, between the connections' small allocations, and
 * freed heap pages stay with the process. So once buffers of
 * INPUT_TRIM_AFTER bytes or more have been freed, the next sweep of
 * guard.c asks the allocator to return its free pages (malloc_trim).
 * After 300 connections that each held most of a 1 MiB frame were closed
 * (test_hostile auth_big_frames_bounded), the leader's VmRSS stayed
 * 0.2-14.7 MB above its start without the trim and 0.2-3.3 MB with it.
 */
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "baton/baton_defs.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/server_int.h"

/* Input buffer bytes freed after which the allocator is trimmed. */
#define INPUT_TRIM_AFTER (16u << 20)

void input_account(struct conn *c)
{
    size_t now = c->closed ? 0 : c->in.cap;

    if (now < c->in_held) c->srv->input_freed += c->in_held - now;
    c->srv->input = c->srv->input - c->in_held + now;
    c->in_held = now;
}

void input_trim(struct server *srv)
{
    if (srv->input_freed < INPUT_TRIM_AFTER) return;
    srv->input_freed = 0;
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

/* The end of the frame whose header starts c's input, 0 if not known yet. */
static size_t frame_end(const struct conn *c)
{
    uint32_t n;

    if (c->in.len < 4) return 0;
    n = le_get_u32(c->in.data);
    return n <= BATON_MAX_FRAME ? 4 + (size_t)n : 0;
}

size_t input_reserve(struct conn *c, size_t want)
{
    struct buf *b = &c->in;
    size_t end = frame_end(c), cap;
    uint8_t *p;

    if (!c->hello && want > CONN_UNAUTH_FRAME) want = CONN_UNAUTH_FRAME;
    /* a large frame's last read stops at its end: the buffer is its size */
    if (end > CONN_READ && end > b->len && end - b->len < want) want = end - b->len;
    if (b->cap - b->len >= want) return b->cap - b->len;
    cap = b->cap ? b->cap * 2 : 256;
    while (cap < b->len + want) cap *= 2;
    if (end >= b->len + want && cap > end) cap = end;
    if (cap < b->len + want) cap = b->len + want;
    p = realloc(b->data, cap);
    if (p == NULL) xalloc_failed("a connection's input buffer"); /* server/xmalloc.h's policy */
    b->data = p;
    b->cap = cap;
    input_account(c);
    return b->cap - b->len;
}

bool input_unauth_too_big(struct conn *c, size_t off)
{
    uint32_t claimed;

    if (c->hello || c->in.len - off < 4) return false;
    claimed = le_get_u32(c->in.data + off);
    if (claimed <= CONN_UNAUTH_FRAME || claimed > BATON_MAX_FRAME) return false;
    metrics_inc_label(M_REFUSALS, REF_MALFORMED);
    log_warn("conn %llu (%s): a frame of %u bytes before HELLO (at most %u); closing",
             (unsigned long long)c->id, c->peer, claimed, CONN_UNAUTH_FRAME);
    conn_send_error(c, 0, BATON_ETOOBIG,
                    "frame of %u bytes before HELLO: until HELLO is accepted a frame is at "
                    "most %u bytes", claimed, CONN_UNAUTH_FRAME);
    conn_close(c);
    return true;
}

static int by_held_desc(const void *a, const void *b)
{
    const struct conn *x = *(struct conn *const *)a, *y = *(struct conn *const *)b;

    return x->in_held < y->in_held ? 1 : x->in_held > y->in_held ? -1 : 0;
}

/* Close c for the input it holds and give its buffer back now. */
static void shed(struct conn *c, size_t total)
{
    struct server *srv = c->srv;

    metrics_inc_label(M_REFUSALS, REF_INPUT);
    log_warn("request input: %.1f MiB held by all connections, over --max-input-mb %u: "
             "closing conn %llu (%s), which holds the most (%.1f MiB)",
             (double)total / MIB, srv->cfg.max_input_mb, (unsigned long long)c->id, c->peer,
             (double)c->in_held / MIB);
    conn_send_error(c, 0, BATON_ELIMIT,
                    "this server holds too much unprocessed request input (over %u MiB in "
                    "all connections) and this connection holds the most (%zu bytes)",
                    srv->cfg.max_input_mb, c->in_held);
    conn_close(c);
    buf_free(&c->in);
    c->partial_since = 0;
    input_account(c);
}

void input_check(struct server *srv)
{
    size_t limit = (size_t)srv->cfg.max_input_mb << 20, target = limit - limit / 8;
    struct conn **v;
    size_t n = 0, closed = 0;

    if (srv->input <= limit) return;
    v = xmalloc((srv->conns.n + 1) * sizeof *v);
    for (size_t i = 0; i < srv->conns.cap; i++) {
        struct conn *c = srv->conns.slots[i].val;
        if (srv->conns.slots[i].key != 0 && c->in_held > 0 && !c->closing && !c->closed)
            v[n++] = c;
    }
    qsort(v, n, sizeof *v, by_held_desc);
    for (size_t i = 0; i < n && srv->input > target; i++, closed++) shed(v[i], srv->input);
    log_warn("request input: %.1f MiB held by all connections after closing %zu",
             (double)srv->input / MIB, closed);
    free(v);
}
