/*
 * shim.c -- see shim.h. Each wrapper makes one libbaton call and, when it
 * failed, copies the calling thread's message into msg (GOSHIM_ERRMSG
 * bytes) before returning to Go.
 */
#include <stdio.h>
#include <string.h>

#include "_cgo_export.h"
#include "shim.h"

static int keep(baton_t *b, int rc, char *msg)
{
    if (rc < 0) snprintf(msg, GOSHIM_ERRMSG, "%s", baton_errmsg(b));
    return rc;
}

int goshim_connect(const baton_opts *o, baton_t **out, char *msg)
{
    int rc = baton_connect(o, out);

    if (rc < 0) snprintf(msg, GOSHIM_ERRMSG, "%s", baton_connect_errmsg());
    return rc;
}

int goshim_lock_call(baton_t *b, const char *const *names, size_t n, const baton_lock_args *a,
                     baton_cancel_t *cancel, baton_lock_t **out, char *msg)
{
    return keep(b, baton_lock_call(b, names, n, a, cancel, out), msg);
}

int goshim_unlock(baton_t *b, baton_lock_t *l, char *msg)
{
    return keep(b, baton_unlock(l), msg);
}

int goshim_proclaim(baton_t *b, baton_lock_t *l, const void *value, size_t len, char *msg)
{
    return keep(b, baton_proclaim(l, value, len), msg);
}

int goshim_lock_state(baton_t *b, const char *name, baton_lock_state **out, char *msg)
{
    return keep(b, baton_lock_state_get(b, name, out), msg);
}

int goshim_leader(baton_t *b, const char *name, baton_lock_state **out, char *msg)
{
    return keep(b, baton_leader(b, name, out), msg);
}

int goshim_watch(baton_t *b, const char *key, unsigned flags, uint64_t after, baton_watch_t **out,
                 char *msg)
{
    return keep(b, baton_watch(b, key, flags, after, out), msg);
}

int goshim_observe(baton_t *b, const char *election, baton_watch_t **out, char *msg)
{
    return keep(b, baton_observe(b, election, out), msg);
}

/* Runs on libbaton's I/O thread; batonGoLost only records and closes
 * channels. */
static void lost_trampoline(baton_t *b, const char *lock, uint64_t fence, int why, void *data)
{
    (void)b;
    batonGoLost((uintptr_t)data, (char *)lock, fence, why);
}

void goshim_on_lost(baton_t *b, uintptr_t h)
{
    baton_on_lost(b, lost_trampoline, (void *)h);
}

const char **goshim_names_new(size_t n)
{
    return calloc(n ? n : 1, sizeof(const char *));
}

void goshim_names_set(const char **names, size_t i, const char *s)
{
    names[i] = s;
}

void goshim_names_free(const char **names, size_t n)
{
    if (names == NULL) return;
    for (size_t i = 0; i < n; i++)
        free((void *)names[i]);
    free(names);
}
