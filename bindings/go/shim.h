/*
 * shim.h -- the C side of the Go binding: calls that must read the calling
 * thread's error message on the same thread (baton_errmsg and
 * baton_connect_errmsg are per thread, and a goroutine may move between
 * threads from one cgo call to the next), and the lost-callback
 * trampoline into Go.
 */
#ifndef BATON_GO_SHIM_H
#define BATON_GO_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <baton/baton.h>

/* Room for one error message (libbaton's are shorter). */
#define GOSHIM_ERRMSG 512

int goshim_connect(const baton_opts *o, baton_t **out, char *msg);
int goshim_lock_call(baton_t *b, const char *const *names, size_t n, const baton_lock_args *a,
                     baton_cancel_t *cancel, baton_lock_t **out, char *msg);
int goshim_unlock(baton_t *b, baton_lock_t *l, char *msg);
int goshim_proclaim(baton_t *b, baton_lock_t *l, const void *value, size_t len, char *msg);
int goshim_lock_state(baton_t *b, const char *name, baton_lock_state **out, char *msg);
int goshim_leader(baton_t *b, const char *name, baton_lock_state **out, char *msg);
int goshim_watch(baton_t *b, const char *key, unsigned flags, uint64_t after, baton_watch_t **out,
                 char *msg);
int goshim_observe(baton_t *b, const char *election, baton_watch_t **out, char *msg);

/* Route b's lost notices to the Go function batonGoLost with handle h. */
void goshim_on_lost(baton_t *b, uintptr_t h);

/* names[i] of a C array of n strings. */
const char **goshim_names_new(size_t n);
void goshim_names_set(const char **names, size_t i, const char *s);
void goshim_names_free(const char **names, size_t n);

#endif
