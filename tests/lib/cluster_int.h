/*
 * cluster_int.h -- what cluster.c and cluster_secure.c share. Not for
 * tests: they use cluster.h.
 */
#ifndef BATON_TESTS_CLUSTER_INT_H
#define BATON_TESTS_CLUSTER_INT_H

#include "tests/lib/cluster.h"

/* Make ROOT/certs (and ROOT/auth with CLUSTER_AUTH) for c->secure. 0 or
 * -1 (said on stderr). */
int cluster__secure_setup(struct cluster *c, const char *auth_lines);
/* Append node i's security flags to argv[argc..]; returns the new argc.
 * At most CLUSTER__SECURE_ARGS are added. */
#define CLUSTER__SECURE_ARGS 16
int cluster__secure_args(const struct cluster *c, int i, const char **argv, int argc);
/* Append batonctl's security flags (--cacert, --cert, --key, --token). At
 * most 8 are added. */
int cluster__ctl_args(const struct cluster *c, const char **argv, int argc);

#endif
