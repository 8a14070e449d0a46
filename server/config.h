/*
 * config.h -- batond's command line.
 */
#ifndef BATON_SERVER_CONFIG_H
#define BATON_SERVER_CONFIG_H

#include "raft/node.h"

struct srv_config {
    char data_dir[4096];
    int log_level;
    struct node_config node;        /* id, members, raft timings */
    unsigned default_ttl_ms;
    unsigned min_ttl_ms;
    unsigned max_ttl_ms;
    unsigned lock_delay_ms;         /* default lock-delay after an expiry; 0 = none */
    unsigned max_lock_delay_ms;     /* bound on a per-acquire lock-delay */
};

/*
 * Parse argv into *c. Returns 0; 1 if --help was printed (exit 0); -1 after
 * printing a usage error to stderr (exit 2).
 */
int config_parse(struct srv_config *c, int argc, char **argv);

/*
 * Parse "1=RAFT/CLIENT,2=...,3=..." into members. 0, or -1 with errmsg
 * (256 bytes) filled.
 */
int config_parse_cluster(const char *s, struct node_config *nc, char *errmsg);

#endif
