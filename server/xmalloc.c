/*
 * xmalloc.c -- batond's allocation-failure policy (server_int.h, "Allocation
 * failure"): an allocation that fails is logged and the process aborts,
 * so that another node takes over instead of this one carrying on with a
 * push, a timer or a reply silently dropped.
 */
#include <stdlib.h>

#include "baton/baton_defs.h"
#include "server/log.h"
#include "server/xmalloc.h"

static void out_of_memory(size_t n)
{
    log_error("out of memory allocating %zu bytes; aborting (another node takes over)", n);
    abort();
}

void xalloc_failed(const char *what)
{
    log_error("out of memory allocating %s; aborting (another node takes over)", what);
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (p == NULL) out_of_memory(n);
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);

    if (p == NULL) out_of_memory(n * size);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);

    if (q == NULL) out_of_memory(n);
    return q;
}

void xu64map_put(struct u64map *m, uint64_t key, void *val)
{
    if (u64map_put(m, key, val) == BATON_ENOMEM) out_of_memory(sizeof(struct u64map_slot));
}
