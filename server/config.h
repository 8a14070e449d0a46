/*
 * config.h -- batond's command line.
 */
#ifndef BATON_SERVER_CONFIG_H
#define BATON_SERVER_CONFIG_H

#include <stdbool.h>

#include "raft/node.h"
#include "server/config_file.h"

struct srv_config {
    char data_dir[4096];
    int log_level;
    struct node_config node;        /* id, members, raft timings */
    unsigned default_ttl_ms;
    unsigned min_ttl_ms;
    unsigned max_ttl_ms;
    unsigned lock_delay_ms;         /* default lock-delay after an expiry; 0 = none */
    unsigned max_lock_delay_ms;     /* bound on a per-acquire lock-delay */
    unsigned max_value;             /* longest value of a hold (bytes, <= BATON_MAX_VALUE) */
    unsigned max_conns;             /* client connections; more are refused (ELIMIT) */
    unsigned frame_timeout_ms;      /* an incomplete frame older than this closes its connection */
    unsigned min_free_mb;           /* client writes refused below this free space; 0 = no check */
    unsigned max_inflight;          /* entries in flight before batches wait; 0 = no bound */
    /* Security (docs/security.md). The paths point into argv; NULL: not given. */
    const char *tls_cert;           /* client port: serve TLS with this certificate chain */
    const char *tls_key;            /* ... and its key */
    const char *tls_client_ca;      /* client port: require client certificates signed by it */
    const char *peer_cert;          /* raft port: mutual TLS with this certificate */
    const char *peer_key;
    const char *peer_ca;            /* raft port: peers' certificates must be signed by it */
    bool tls12;                     /* accept TLS 1.2 as well as 1.3 (both ports) */
    const char *auth_file;          /* principals, roles and token hashes; re-read on SIGHUP */
    unsigned handshake_timeout_ms;  /* TLS handshake + HELLO must finish within this */
    unsigned max_unauth_conns;      /* connections not yet through HELLO; the oldest
                                       is closed to admit one more */
    unsigned max_unread_mb;         /* unread replies of all connections together; beyond
                                       it the largest are closed (conn.c) */
    unsigned max_sessions_per_principal; /* sessions one principal may have open, unless
                                       its max-sessions= says otherwise; 0: no cap */
    unsigned max_input_mb;          /* bytes held in the input buffers of all connections
                                       together; beyond it the largest are closed (input.c) */
    /* Observability (docs/operations.md, "Metrics and health"). */
    const char *metrics_addr;       /* serve /metrics, /healthz, /readyz over HTTP here
                                       ("a.b.c.d:port", points into argv); NULL: not at all */
    int log_format;                 /* enum log_format (server/log.h) */
    struct config_args args;        /* argv with --config's pairs: the paths above may
                                       point into it; config_free releases it */
    const char *restore;            /* --restore FILE (points into argv): initialise
                                       data_dir from it and exit (restore.c); NULL: none */
    const char *fence_floor;        /* --fence-floor N (points into argv): with --restore,
                                       the restored cluster's fences start at N or above */
    /* SIGTERM/SIGINT on the ready leader: hand leadership to the most
     * caught-up voter first and wait at most this long (server.c); 0: stop
     * at once. Left at its default (-1), twice the election timeout. */
    int shutdown_transfer_ms;
};

/*
 * Parse argv into *c, with `--config FILE`'s pairs read first
 * (server/config_file.h): a flag on the command line overrides the file's.
 * Returns 0 (release *c with config_free); 1 if --help was printed (exit 0);
 * -1 after printing a usage error to stderr, naming the file and line of a
 * value from the file (exit 2). On 1 and -1 there is nothing to free.
 */
int config_parse(struct srv_config *c, int argc, char **argv);

/* Release what config_parse allocated; c's paths are invalid afterwards. */
void config_free(struct srv_config *c);

/* getopt_long's table of batond's flags (ends with a zeroed entry). Every
 * long option but config and help is also a config-file key. */
const struct option *config_options(void);

/*
 * Parse "1=RAFT/CLIENT,2=...,3=..." into members. 0, or -1 with errmsg
 * (BATON_ERRMSG_SIZE bytes, proto/errmsg.h) filled.
 */
int config_parse_cluster(const char *s, struct node_config *nc, char *errmsg);

/* Is s an address --cluster accepts: one of the grammar of proto/addr.h
 * (IPv4, bracketed IPv6 or a host name)? */
int config_addr_ok(const char *s);

#endif
