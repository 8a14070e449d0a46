/*
 * config.c -- batond's flags. Every flag is documented in usage().
 */
#include "server/config.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/addr.h"
#include "proto/errmsg.h"
#include "server/config_file.h"
#include "server/log.h"

static void usage(FILE *f)
{
    fputs("usage: batond --id N --data DIR --cluster 1=RAFT/CLIENT,2=RAFT/CLIENT,3=RAFT/CLIENT [options]\n"
          "\n"
          "Runs one node of a baton lock cluster.\n"
          "\n"
          "  --id N                 this node's id (1..2^31), one of the ids in --cluster\n"
          "  --data DIR             data directory (created if missing): DIR/raft holds the\n"
          "                         raft log and snapshots, DIR/fsm the LMDB lock state,\n"
          "                         DIR/member marks a node that has been a member\n"
          "  --cluster LIST         every member as ID=RAFTADDR/CLIENTADDR, comma-separated,\n"
          "                         e.g. 1=127.0.0.1:7101/127.0.0.1:7001,2=...; an address is\n"
          "                         a.b.c.d:port, [IPv6]:port or host.name:port (resolved at\n"
          "                         every connection attempt); identical on every node\n"
          "  --join                 do not bootstrap: this node waits, with no configuration,\n"
          "                         until the leader of a running cluster adds it with\n"
          "                         `batonctl member add ID RAFTADDR/CLIENTADDR`. --cluster\n"
          "                         must list this node (with those addresses) and may list\n"
          "                         only it: the other members' client addresses come from\n"
          "                         the replicated state (with --peer-cert, list the members\n"
          "                         too: until it is added, only they may connect to it).\n"
          "                         Without --join, a node whose data\n"
          "                         directory is empty bootstraps the --cluster configuration\n"
          "  --restore FILE         initialise the empty (or missing) --data DIR of a NEW\n"
          "                         cluster from FILE, written by `batonctl snapshot save`,\n"
          "                         and exit; then start batond without --restore. Run it\n"
          "                         on every node of the new cluster with the same FILE and\n"
          "                         --cluster (docs/operations.md, \"Backup and restore\")\n"
          "  --raft-bind ADDR       listen for raft peers on ADDR (an address as above) while\n"
          "                         advertising this node's RAFTADDR from --cluster: for a\n"
          "                         proxy in front of the node (the fault harness uses one)\n"
          "  --log-level LEVEL      debug, info (default), warn or error; logs go to stderr\n"
          "  --log-format FORMAT    text (default) or json: one JSON object per line, with\n"
          "                         time, level, node and msg\n"
          "  --metrics-addr ADDR    serve HTTP on ADDR (HOST:PORT): /metrics in the\n"
          "                         Prometheus text format, /healthz (200 while the process\n"
          "                         runs) and /readyz (200 once this node knows a leader and\n"
          "                         has applied its commit index; 503 and why otherwise).\n"
          "                         Default: none. It has no authentication: bind it to an\n"
          "                         address only your monitoring reaches\n"
          "  --election-timeout MS  raft election timeout (default 300)\n"
          "  --election-jitter MS   each election timer is random in [T, T + MS] (default a\n"
          "                         third of --election-timeout; libraft alone: [T, 2T])\n"
          "  --heartbeat MS         raft heartbeat interval (default 30)\n"
          "  --snapshot-threshold N entries between snapshots (default 8192)\n"
          "  --snapshot-trailing N  entries kept after a snapshot (default 2048)\n"
          "  --default-ttl MS       session lease when the client asks for 0 (default 10000)\n"
          "  --min-ttl MS, --max-ttl MS  bounds on session leases (default 1000, 300000)\n"
          "  --lock-delay MS        after a session expires, its locks are granted to no one\n"
          "                         for MS (default 0: none); an ACQUIRE may ask for its own\n"
          "  --max-lock-delay MS    bound on a per-acquire lock-delay (default 60000)\n"
          "  --max-conns N          client connections served at once (default 10000, and at\n"
          "                         most the open-files limit less 128); one more is answered\n"
          "                         ERROR(BATON_ELIMIT) and closed\n"
          "  --frame-timeout MS     a connection whose incomplete frame is older than MS is\n"
          "                         answered ERROR(BATON_ETIMEDOUT) and closed (default 10000)\n"
          "  --min-free-mb N        while the filesystem of --data has less than N MiB free\n"
          "                         plus the lock store's next growth (8..64 MiB), new\n"
          "                         sessions and acquires are answered\n"
          "                         ERROR(BATON_ENOSPC); releases still go through\n"
          "                         (default 64; 0 turns the check off)\n"
          "  --max-unread-mb N      replies that clients have not read yet, all connections\n"
          "                         together (default 256); beyond it the connections with\n"
          "                         the most unread are closed, largest first (each one is\n"
          "                         also cut off at 64 MiB)\n"
          "  --max-inflight N       under load (the entries in flight carry 8 commands or\n"
          "                         more), the leader's entries proposed and not yet applied\n"
          "                         at once (default 1; 0: no bound); while N are, the\n"
          "                         commands that arrive wait and go into one larger entry\n"
          "  --shutdown-transfer-timeout MS\n"
          "                         SIGTERM/SIGINT on the leader: hand leadership to the\n"
          "                         most caught-up voter first, and stop once it has moved\n"
          "                         or after MS (default twice --election-timeout; 0: stop\n"
          "                         at once, as a follower does); a second signal stops now\n"
          "\n"
          "Security (README, \"Securing a cluster\"):\n"
          "  --tls-cert FILE        serve the client port over TLS with this PEM certificate\n"
          "                         chain; plaintext clients are refused with an error\n"
          "  --tls-key FILE         the certificate's PEM private key\n"
          "  --tls-client-ca FILE   require client certificates signed by this PEM CA\n"
          "  --peer-cert FILE       mutual TLS on the raft port: this node's certificate,\n"
          "                         whose subject CN must be baton-node-<id>\n"
          "  --peer-key FILE        its private key\n"
          "  --peer-ca FILE         peers' certificates must be signed by this PEM CA\n"
          "  --tls12                accept TLS 1.2 as well as TLS 1.3 (both ports)\n"
          "  --auth-file FILE       principals with their roles, token hashes and lock-name\n"
          "                         prefixes; every client must authenticate. Re-read on\n"
          "                         SIGHUP. `batonctl auth hash NAME ROLE` prints a line\n"
          "  --handshake-timeout MS a connection must finish its TLS handshake and HELLO\n"
          "                         within MS (default 5000)\n"
          "  --max-unauth-conns N   connections that have not finished HELLO, at most\n"
          "                         (default 1024); one more closes the oldest of them\n"
          "  --config FILE          read flags from an INI file first: a [batond] section of\n"
          "                         `key = value` lines, a key for each long flag without\n"
          "                         its dashes (`id = 1`, `election-timeout = 400`; `_` may\n"
          "                         stand for `-`); join and tls12 take true/false, yes/no,\n"
          "                         on/off or 1/0; a value may go on over indented lines.\n"
          "                         Flags on the command line override the file\n"
          "  -h, --help             this text\n"
          "\n"
          "SIGINT or SIGTERM shuts the node down cleanly (a leader hands leadership over\n"
          "first); SIGHUP re-reads --auth-file.\n"
          "Exit status: 0 after a clean shutdown; 1 if the node could not start (a raft\n"
          "directory that lost its state, among others: the log says how to rejoin); 2\n"
          "for a bad command line; 74 after a local failure it cannot go on from (a\n"
          "failed raft log write, a leader that could not hand over after a failed\n"
          "apply, raft stopped for good): the log says why; restart it once the cause\n"
          "is gone and it catches up from the others.\n",
          f);
}

static int parse_uint(const char *s, unsigned long max, unsigned *out)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v > max) return -1;
    *out = (unsigned)v;
    return 0;
}

/* Why s is not an address batond can use, or NULL if it is: the grammar of
 * proto/addr.h (IPv4, bracketed IPv6 or a host name: every transport
 * resolves names at each connection attempt). */
static const char *addr_why(const char *s)
{
    struct proto_addr a;

    return proto_addr_parse(s, strlen(s), &a) == 0 ? NULL : a.why;
}

int config_parse_cluster(const char *s, struct node_config *nc, char *errmsg)
{
    char *copy = strdup(s), *save = NULL, *item;
    const char *bad, *why;
    int rv = -1;

    nc->n_members = 0;
    if (copy == NULL) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "out of memory");
        return -1;
    }
    for (item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '='), *slash;
        struct node_member *m;
        unsigned id;

        if (nc->n_members == BATON_MAX_MEMBERS) {
            snprintf(errmsg, BATON_ERRMSG_SIZE, "more than %d members", BATON_MAX_MEMBERS);
            goto out;
        }
        slash = eq ? strchr(eq, '/') : NULL;
        if (eq == NULL || slash == NULL) {
            snprintf(errmsg, BATON_ERRMSG_SIZE, "member '%.64s' is not ID=RAFTADDR/CLIENTADDR",
                     item);
            goto out;
        }
        *eq = '\0';
        *slash = '\0';
        if (parse_uint(item, INT_MAX, &id) != 0 || id == 0) {
            snprintf(errmsg, BATON_ERRMSG_SIZE, "bad member id '%.32s'", item);
            goto out;
        }
        bad = eq + 1;
        if ((why = addr_why(bad)) == NULL) why = addr_why(bad = slash + 1);
        if (why != NULL) {
            snprintf(errmsg, BATON_ERRMSG_SIZE, "member %u: address '%.64s': %s", id, bad, why);
            goto out;
        }
        for (uint32_t i = 0; i < nc->n_members; i++)
            if (nc->members[i].id == id) {
                snprintf(errmsg, BATON_ERRMSG_SIZE, "member id %u appears twice", id);
                goto out;
            }
        m = &nc->members[nc->n_members++];
        m->id = id;
        snprintf(m->raft_addr, sizeof m->raft_addr, "%s", eq + 1);
        snprintf(m->client_addr, sizeof m->client_addr, "%s", slash + 1);
    }
    if (nc->n_members == 0) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "no members");
        goto out;
    }
    rv = 0;
out:
    free(copy);
    return rv;
}

/* What batond runs with when a flag is not given (batond --help). */
static const struct srv_config defaults = {
    .log_level = LOG_INFO,
    .default_ttl_ms = 10000,
    .min_ttl_ms = 1000,
    .max_ttl_ms = 300000,
    .max_lock_delay_ms = 60000,
    .max_conns = 10000,
    .frame_timeout_ms = 10000,
    .min_free_mb = 64,
    .max_inflight = 1,
    .handshake_timeout_ms = 5000,
    .max_unauth_conns = 1024,
    .max_unread_mb = 256,
    .shutdown_transfer_ms = -1,
};

/* batond's flags: getopt_long's table, and the keys of a --config file
 * (server/config_file.h). */
enum { O_ID = 256, O_DATA, O_CLUSTER, O_LOG, O_ELECTION, O_JITTER, O_HEARTBEAT, O_SNAP, O_TRAIL,
       O_TTL, O_MINTTL, O_MAXTTL, O_DELAY, O_MAXDELAY, O_JOIN, O_RAFT_BIND,
       O_MAXCONNS, O_FRAMETIMEOUT, O_MINFREE, O_MAXINFLIGHT, O_TLS_CERT, O_TLS_KEY,
       O_TLS_CLIENT_CA, O_PEER_CERT, O_PEER_KEY, O_PEER_CA, O_TLS12, O_AUTH_FILE,
       O_HANDSHAKE_TIMEOUT, O_MAX_UNAUTH, O_MAX_UNREAD, O_LOG_FORMAT, O_METRICS_ADDR, O_RESTORE, O_SHUTDOWN_TRANSFER, O_CONFIG };
static const struct option opts[] = {
    {"id", required_argument, NULL, O_ID},
    {"data", required_argument, NULL, O_DATA},
    {"cluster", required_argument, NULL, O_CLUSTER},
    {"log-level", required_argument, NULL, O_LOG},
    {"election-timeout", required_argument, NULL, O_ELECTION},
    {"election-jitter", required_argument, NULL, O_JITTER},
    {"heartbeat", required_argument, NULL, O_HEARTBEAT},
    {"snapshot-threshold", required_argument, NULL, O_SNAP},
    {"snapshot-trailing", required_argument, NULL, O_TRAIL},
    {"default-ttl", required_argument, NULL, O_TTL},
    {"min-ttl", required_argument, NULL, O_MINTTL},
    {"max-ttl", required_argument, NULL, O_MAXTTL},
    {"lock-delay", required_argument, NULL, O_DELAY},
    {"max-lock-delay", required_argument, NULL, O_MAXDELAY},
    {"max-conns", required_argument, NULL, O_MAXCONNS},
    {"frame-timeout", required_argument, NULL, O_FRAMETIMEOUT},
    {"min-free-mb", required_argument, NULL, O_MINFREE},
    {"max-inflight", required_argument, NULL, O_MAXINFLIGHT},
    {"join", no_argument, NULL, O_JOIN},
    {"raft-bind", required_argument, NULL, O_RAFT_BIND},
    {"tls-cert", required_argument, NULL, O_TLS_CERT},
    {"tls-key", required_argument, NULL, O_TLS_KEY},
    {"tls-client-ca", required_argument, NULL, O_TLS_CLIENT_CA},
    {"peer-cert", required_argument, NULL, O_PEER_CERT},
    {"peer-key", required_argument, NULL, O_PEER_KEY},
    {"peer-ca", required_argument, NULL, O_PEER_CA},
    {"tls12", no_argument, NULL, O_TLS12},
    {"auth-file", required_argument, NULL, O_AUTH_FILE},
    {"handshake-timeout", required_argument, NULL, O_HANDSHAKE_TIMEOUT},
    {"max-unauth-conns", required_argument, NULL, O_MAX_UNAUTH},
    {"max-unread-mb", required_argument, NULL, O_MAX_UNREAD},
    {"log-format", required_argument, NULL, O_LOG_FORMAT},
    {"metrics-addr", required_argument, NULL, O_METRICS_ADDR},
    {"restore", required_argument, NULL, O_RESTORE},
    {"shutdown-transfer-timeout", required_argument, NULL, O_SHUTDOWN_TRANSFER},
    {"config", required_argument, NULL, O_CONFIG},
    {"help", no_argument, NULL, 'h'},
    {0},
};

const struct option *config_options(void)
{
    return opts;
}

/* The argument getopt_long is reading (its index in argv), so that an
 * error can be traced to the config file's line it came from. */
static int cur_arg;

/* Parse argv, in which a --config file's pairs are already spliced. */
static int parse_args(struct srv_config *c, int argc, char **argv, const char *config_file)
{
    char errmsg[BATON_ERRMSG_SIZE];
    const char *cluster = NULL, *why;
    unsigned *target;
    int o, cluster_arg = 0;

    *c = defaults;
    opterr = 0;
    optind = 1;
    /* "+": no permutation, so that argv's indexes stay those of
     * config_args.line (a stray argument is an error all the same). */
    while (cur_arg = optind, (o = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        target = NULL;
        switch (o) {
        case O_CONFIG:
            /* Read already (config_file_expand), which finds it only
             * written in full: "--conf FILE" would be lost here. */
            if (config_file == NULL || (strcmp(argv[cur_arg], "--config") != 0 &&
                                        strncmp(argv[cur_arg], "--config=", 9) != 0)) {
                fprintf(stderr, "batond: write --config in full\n");
                return -1;
            }
            break;
        case 'h':
            usage(stdout);
            return 1;
        case O_ID:
            if (parse_uint(optarg, INT_MAX, &c->node.id) != 0 || c->node.id == 0) {
                fprintf(stderr, "batond: --id must be a positive integer\n");
                return -1;
            }
            break;
        case O_DATA:
            if (strlen(optarg) >= sizeof c->data_dir - 16) {
                fprintf(stderr, "batond: --data path too long\n");
                return -1;
            }
            snprintf(c->data_dir, sizeof c->data_dir, "%s", optarg);
            break;
        case O_CLUSTER:
            cluster = optarg;
            cluster_arg = cur_arg;
            break;
        case O_LOG:
            c->log_level = log_level_parse(optarg);
            if (c->log_level < 0) {
                fprintf(stderr, "batond: --log-level must be debug, info, warn or error\n");
                return -1;
            }
            break;
        case O_ELECTION: target = &c->node.election_timeout_ms; break;
        case O_JITTER: target = &c->node.election_jitter_ms; break;
        case O_HEARTBEAT: target = &c->node.heartbeat_timeout_ms; break;
        case O_SNAP: target = &c->node.snapshot_threshold; break;
        case O_TRAIL: target = &c->node.snapshot_trailing; break;
        case O_TTL: target = &c->default_ttl_ms; break;
        case O_MINTTL: target = &c->min_ttl_ms; break;
        case O_MAXTTL: target = &c->max_ttl_ms; break;
        case O_DELAY:
            if (parse_uint(optarg, 100000000, &c->lock_delay_ms) != 0) {
                fprintf(stderr, "batond: --lock-delay needs a number of ms\n");
                return -1;
            }
            break;
        case O_MAXDELAY: target = &c->max_lock_delay_ms; break;
        case O_MAXCONNS: target = &c->max_conns; break;
        case O_FRAMETIMEOUT: target = &c->frame_timeout_ms; break;
        case O_MINFREE:
            if (parse_uint(optarg, 1000000, &c->min_free_mb) != 0) {
                fprintf(stderr, "batond: --min-free-mb needs a number of MiB\n");
                return -1;
            }
            break;
        case O_MAXINFLIGHT:
            if (parse_uint(optarg, 1000000, &c->max_inflight) != 0) {
                fprintf(stderr, "batond: --max-inflight needs a number of entries\n");
                return -1;
            }
            break;
        case O_JOIN:
            c->node.join = true;
            break;
        case O_TLS_CERT: c->tls_cert = optarg; break;
        case O_TLS_KEY: c->tls_key = optarg; break;
        case O_TLS_CLIENT_CA: c->tls_client_ca = optarg; break;
        case O_PEER_CERT: c->peer_cert = optarg; break;
        case O_PEER_KEY: c->peer_key = optarg; break;
        case O_PEER_CA: c->peer_ca = optarg; break;
        case O_TLS12: c->tls12 = true; break;
        case O_AUTH_FILE: c->auth_file = optarg; break;
        case O_RESTORE: c->restore = optarg; break;
        case O_HANDSHAKE_TIMEOUT: target = &c->handshake_timeout_ms; break;
        case O_MAX_UNAUTH: target = &c->max_unauth_conns; break;
        case O_MAX_UNREAD:
            if (parse_uint(optarg, 1000000, &c->max_unread_mb) != 0 || c->max_unread_mb == 0) {
                fprintf(stderr, "batond: --max-unread-mb needs a positive number of MiB\n");
                return -1;
            }
            break;
        case O_LOG_FORMAT:
            c->log_format = log_format_parse(optarg);
            if (c->log_format < 0) {
                fprintf(stderr, "batond: --log-format must be text or json\n");
                return -1;
            }
            break;
        case O_METRICS_ADDR:
            if ((why = addr_why(optarg)) != NULL) {
                fprintf(stderr, "batond: --metrics-addr '%.64s': %s\n", optarg, why);
                return -1;
            }
            c->metrics_addr = optarg;
            break;
        case O_SHUTDOWN_TRANSFER: {
            unsigned ms;
            if (parse_uint(optarg, 3600000, &ms) != 0) {
                fprintf(stderr, "batond: --shutdown-transfer-timeout needs a number of ms "
                                "(0: no hand-off)\n");
                return -1;
            }
            c->shutdown_transfer_ms = (int)ms;
            break;
        }
        case O_RAFT_BIND:
            if ((why = addr_why(optarg)) != NULL) {
                fprintf(stderr, "batond: --raft-bind '%.64s': %s\n", optarg, why);
                return -1;
            }
            snprintf(c->node.raft_bind, sizeof c->node.raft_bind, "%s", optarg);
            break;
        default:
            fprintf(stderr, "batond: unknown or incomplete option '%s'\n", argv[optind - 1]);
            usage(stderr);
            return -1;
        }
        if (target != NULL && (parse_uint(optarg, 100000000, target) != 0 || *target == 0)) {
            fprintf(stderr, "batond: '%s' is not a positive number\n", optarg);
            return -1;
        }
    }
    cur_arg = 0; /* the checks below are of the flags together */
    if (optind < argc) {
        fprintf(stderr, "batond: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return -1;
    }
    if (c->node.id == 0 || c->data_dir[0] == '\0' || cluster == NULL) {
        fprintf(stderr, "batond: --id, --data and --cluster are required\n");
        usage(stderr);
        return -1;
    }
    cur_arg = cluster_arg;
    if (config_parse_cluster(cluster, &c->node, errmsg) != 0) {
        fprintf(stderr, "batond: --cluster: %s\n", errmsg);
        return -1;
    }
    cur_arg = 0;
    if (node_member_find(&c->node, c->node.id) == NULL) {
        fprintf(stderr, "batond: --id %u is not a member of --cluster\n", c->node.id);
        return -1;
    }
    if (c->restore != NULL && c->node.join) {
        fprintf(stderr, "batond: --restore starts a new cluster; it does not go with --join\n");
        return -1;
    }
    if (c->node.heartbeat_timeout_ms && c->node.election_timeout_ms &&
        c->node.heartbeat_timeout_ms >= c->node.election_timeout_ms) {
        fprintf(stderr, "batond: --heartbeat must be below --election-timeout\n");
        return -1;
    }
    if (c->node.election_jitter_ms &&
        c->node.election_jitter_ms > (c->node.election_timeout_ms ? c->node.election_timeout_ms : 300)) {
        fprintf(stderr, "batond: --election-jitter must not exceed --election-timeout\n");
        return -1;
    }
    if (c->shutdown_transfer_ms < 0)
        c->shutdown_transfer_ms =
            2 * (int)(c->node.election_timeout_ms ? c->node.election_timeout_ms : 300);
    if (c->lock_delay_ms > c->max_lock_delay_ms) {
        fprintf(stderr, "batond: --lock-delay exceeds --max-lock-delay\n");
        return -1;
    }
    if ((c->tls_cert == NULL) != (c->tls_key == NULL) ||
        (c->tls_client_ca != NULL && c->tls_cert == NULL)) {
        fprintf(stderr, "batond: --tls-cert and --tls-key go together, and --tls-client-ca "
                        "needs them\n");
        return -1;
    }
    if ((c->peer_cert == NULL) != (c->peer_key == NULL) ||
        (c->peer_cert == NULL) != (c->peer_ca == NULL)) {
        fprintf(stderr, "batond: --peer-cert, --peer-key and --peer-ca go together\n");
        return -1;
    }
    if (c->min_ttl_ms > c->max_ttl_ms || c->default_ttl_ms < c->min_ttl_ms ||
        c->default_ttl_ms > c->max_ttl_ms) {
        fprintf(stderr, "batond: need --min-ttl <= --default-ttl <= --max-ttl\n");
        return -1;
    }
    return 0;
}

int config_parse(struct srv_config *c, int argc, char **argv)
{
    struct config_args a;
    int rv;

    memset(c, 0, sizeof *c);
    if (config_file_expand(argc, argv, opts, &a) != 0) return -1;
    cur_arg = 0;
    rv = parse_args(c, a.argc, a.argv, a.file);
    c->args = a; /* after parse_args, which starts from the defaults */
    if (rv < 0 && cur_arg > 0 && cur_arg < a.argc && a.line[cur_arg] != 0)
        fprintf(stderr, "batond: (that value is from %s line %d)\n", a.file, a.line[cur_arg]);
    if (rv != 0) config_free(c);
    return rv;
}

void config_free(struct srv_config *c)
{
    config_args_free(&c->args);
}

/* Exported for the MEMBER_ADD handler (server/members.c), which takes
 * addresses from the wire and must accept exactly what --cluster does. */
int config_addr_ok(const char *s)
{
    return addr_why(s) == NULL;
}
