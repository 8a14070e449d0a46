/*
 * config_flags.c -- batond's flags, one row each (config_flags.h).
 */
#include "server/config_flags.h"

#include <limits.h>
#include <stdio.h>

#include "proto/msg.h"
#include "server/config.h"
#include "server/log.h"

#define AT(field) offsetof(struct srv_config, field)
#define SIZE(field) sizeof(((struct srv_config *)0)->field)
/* A positive number up to 10^8: most timeouts and counts. */
#define POS 1, 100000000

const struct flag config_flags[] = {
    {"id", "N", FLAG_UINT, AT(node.id), 0, 1, INT_MAX, 0, "required", NULL,
     "--id must be a positive integer", NULL,
     "this node's id (1..2^31), one of the ids in --cluster"},
    {"data", "DIR", FLAG_PATH, AT(data_dir), SIZE(data_dir), 0, 0, 0, "required", NULL,
     "--data path too long", NULL,
     "data directory (created if missing): DIR/raft holds the raft log and snapshots, "
     "DIR/fsm the LMDB lock state, DIR/member marks a node that has been a member, "
     "DIR/cluster-id holds its cluster's id, DIR/batond.lock is locked by the one batond "
     "that uses DIR"},
    {"cluster", "LIST", FLAG_CLUSTER, 0, 0, 0, 0, 0, "required", NULL, NULL, NULL,
     "every member as ID=RAFTADDR/CLIENTADDR, comma-separated, e.g. "
     "1=127.0.0.1:7101/127.0.0.1:7001,2=...; an address is a.b.c.d:port, [IPv6]:port or "
     "host.name:port (resolved at every connection attempt); identical on every node"},
    {"join", NULL, FLAG_BOOL, AT(node.join), 0, 0, 0, 0, "off", NULL, NULL, NULL,
     "do not bootstrap: this node waits, with no configuration, until the leader of a "
     "running cluster adds it with `batonctl member add ID RAFTADDR/CLIENTADDR`. --cluster "
     "must list this node (with those addresses) and may list only it: the other members' "
     "client addresses come from the replicated state (with --peer-cert, list the members "
     "too: until it is added, only they may connect to it). Without --join, a node whose "
     "data directory is empty bootstraps the --cluster configuration"},
    {"restore", "FILE", FLAG_STR, AT(restore), 0, 0, 0, 0, "none", NULL, NULL, NULL,
     "initialise the empty (or missing) --data DIR of a NEW cluster from FILE, written by "
     "`batonctl snapshot save`, and exit; then start batond without --restore. Run it on "
     "every node of the new cluster with the same FILE and --cluster (docs/operations.md, "
     "\"Backup and restore\")"},
    {"fence-floor", "N", FLAG_STR, AT(fence_floor), 0, 0, 0, 0,
     "the backup's next fence + 2^40", NULL, NULL, NULL,
     "with --restore: every fence the restored cluster grants is at least N (a decimal "
     "number). The default is already above every fence the old cluster could have granted "
     "in years after the backup; give the same N on every node (docs/operations.md, "
     "\"Backup and restore\")"},
    {"raft-bind", "ADDR", FLAG_ADDR, AT(node.raft_bind), SIZE(node.raft_bind), 0, 0, 0,
     "the raft address", NULL, "--raft-bind", NULL,
     "listen for raft peers on ADDR (an address as above) while advertising this node's "
     "RAFTADDR from --cluster: for a proxy in front of the node (the fault harness uses one)"},
    {"log-level", "LEVEL", FLAG_ENUM, AT(log_level), 0, 0, 0, LOG_INFO, "info",
     log_level_parse, "--log-level must be debug, info, warn or error", NULL,
     "debug, info, warn or error; logs go to stderr"},
    {"log-format", "FORMAT", FLAG_ENUM, AT(log_format), 0, 0, 0, LOG_TEXT, "text",
     log_format_parse, "--log-format must be text or json", NULL,
     "text or json: one JSON object per line, with time, level, node and msg"},
    {"metrics-addr", "ADDR", FLAG_ADDR, AT(metrics_addr), 0, 0, 0, 0, "none", NULL,
     "--metrics-addr", NULL,
     "serve HTTP on ADDR (HOST:PORT): /metrics in the Prometheus text format, /healthz (200 "
     "while the process runs) and /readyz (200 once this node knows a leader and has applied "
     "its commit index; 503 and why otherwise). It has no authentication: bind it to an "
     "address only your monitoring reaches"},
    {"election-timeout", "MS", FLAG_UINT, AT(node.election_timeout_ms), 0, POS, 300, NULL,
     NULL, NULL, NULL, "raft election timeout"},
    {"election-jitter", "MS", FLAG_UINT, AT(node.election_jitter_ms), 0, POS, 0,
     "a third of --election-timeout", NULL, NULL, NULL,
     "each election timer is random in [T, T + MS], at most T (libraft alone: [T, 2T])"},
    {"heartbeat", "MS", FLAG_UINT, AT(node.heartbeat_timeout_ms), 0, POS, 30, NULL, NULL,
     NULL, NULL, "raft heartbeat interval, below --election-timeout"},
    {"snapshot-threshold", "N", FLAG_UINT, AT(node.snapshot_threshold), 0, POS, 8192, NULL,
     NULL, NULL, NULL, "entries between snapshots"},
    {"snapshot-trailing", "N", FLAG_UINT, AT(node.snapshot_trailing), 0, POS, 2048, NULL,
     NULL, NULL, NULL, "entries kept after a snapshot"},
    {"default-ttl", "MS", FLAG_UINT, AT(default_ttl_ms), 0, POS, 10000, NULL, NULL, NULL,
     NULL, "session lease when the client asks for 0"},
    {"min-ttl", "MS", FLAG_UINT, AT(min_ttl_ms), 0, POS, 1000, NULL, NULL, NULL, NULL,
     "shortest session lease"},
    {"max-ttl", "MS", FLAG_UINT, AT(max_ttl_ms), 0, POS, 300000, NULL, NULL, NULL, NULL,
     "longest session lease"},
    {"lock-delay", "MS", FLAG_UINT, AT(lock_delay_ms), 0, 0, 100000000, 0, "0 (none)", NULL,
     "--lock-delay needs a number of ms", NULL,
     "after a session expires, its locks are granted to no one for MS; an ACQUIRE may ask "
     "for its own"},
    {"max-lock-delay", "MS", FLAG_UINT, AT(max_lock_delay_ms), 0, POS, 60000, NULL, NULL,
     NULL, NULL, "bound on a per-acquire lock-delay"},
    {"max-value", "BYTES", FLAG_UINT, AT(max_value), 0, 0, BATON_MAX_VALUE, 4096, NULL, NULL,
     "--max-value needs a number of bytes up to 16384", NULL,
     "longest value a lock request or a proclaim may carry (who the holder is); a longer one "
     "is answered ERROR(BATON_ETOOBIG); 0 refuses values"},
    {"max-conns", "N", FLAG_UINT, AT(max_conns), 0, POS, 10000, NULL, NULL, NULL, NULL,
     "client connections served at once, and at most the open-files limit less 128; one "
     "more is answered ERROR(BATON_ELIMIT) and closed"},
    {"frame-timeout", "MS", FLAG_UINT, AT(frame_timeout_ms), 0, POS, 10000, NULL, NULL, NULL,
     NULL,
     "a connection whose incomplete frame is older than MS is answered "
     "ERROR(BATON_ETIMEDOUT) and closed"},
    {"min-free-mb", "N", FLAG_UINT, AT(min_free_mb), 0, 0, 1000000, 64, NULL, NULL,
     "--min-free-mb needs a number of MiB", NULL,
     "while the filesystem of --data has less than N MiB free plus the lock store's next "
     "growth (8..64 MiB), new sessions, acquires and releases or cancels that free nothing "
     "are answered ERROR(BATON_ENOSPC); releases of held locks still go through; 0 turns "
     "the check off"},
    {"max-unread-mb", "N", FLAG_UINT, AT(max_unread_mb), 0, 1, 1000000, 256, NULL, NULL,
     "--max-unread-mb needs a positive number of MiB", NULL,
     "replies that clients have not read yet, all connections together; beyond it the "
     "connections with the most unread are closed, largest first (each one is also cut off "
     "at 64 MiB)"},
    {"max-sessions-per-principal", "N", FLAG_UINT, AT(max_sessions_per_principal), 0, 0,
     1000000, 10000, NULL, NULL, "--max-sessions-per-principal needs a number of sessions",
     NULL,
     "with --auth-file, sessions one principal may have open at once unless its "
     "max-sessions= says otherwise (0: no cap); one more OPEN_SESSION is answered "
     "ERROR(BATON_ELIMIT). Without --auth-file every client is the one anonymous admin and "
     "has no cap"},
    {"max-input-mb", "N", FLAG_UINT, AT(max_input_mb), 0, 1, 1000000, 256, NULL, NULL,
     "--max-input-mb needs a positive number of MiB", NULL,
     "request bytes held in the input buffers of all connections together (each holds at "
     "most one frame, 1 MiB, and a read; before HELLO a frame is at most 4 KiB); beyond it "
     "the connections holding the most are answered ERROR(BATON_ELIMIT) and closed, largest "
     "first"},
    {"max-inflight", "N", FLAG_UINT, AT(max_inflight), 0, 0, 1000000, 1, NULL, NULL,
     "--max-inflight needs a number of entries", NULL,
     "under load (the entries in flight carry 8 commands or more), the leader's entries "
     "proposed and not yet applied at once (0: no bound); while N are, the commands that "
     "arrive wait and go into one larger entry"},
    {"shutdown-transfer-timeout", "MS", FLAG_INT, AT(shutdown_transfer_ms), 0, 0, 3600000,
     -1, "twice --election-timeout", NULL,
     "--shutdown-transfer-timeout needs a number of ms (0: no hand-off)", NULL,
     "SIGTERM/SIGINT on the leader: hand leadership to the most caught-up voter first, and "
     "stop once it has moved or after MS (0: stop at once, as a follower does); a second "
     "signal stops now"},
    {"tls-cert", "FILE", FLAG_STR, AT(tls_cert), 0, 0, 0, 0, "none", NULL, NULL,
     "Security (README, \"Securing a cluster\"):",
     "serve the client port over TLS with this PEM certificate chain; plaintext clients are "
     "refused with an error"},
    {"tls-key", "FILE", FLAG_STR, AT(tls_key), 0, 0, 0, 0, "none", NULL, NULL, NULL,
     "the certificate's PEM private key"},
    {"tls-client-ca", "FILE", FLAG_STR, AT(tls_client_ca), 0, 0, 0, 0, "none", NULL, NULL,
     NULL, "require client certificates signed by this PEM CA"},
    {"peer-cert", "FILE", FLAG_STR, AT(peer_cert), 0, 0, 0, 0, "none", NULL, NULL, NULL,
     "mutual TLS on the raft port: this node's certificate, whose subject CN must be "
     "baton-node-<id>"},
    {"peer-key", "FILE", FLAG_STR, AT(peer_key), 0, 0, 0, 0, "none", NULL, NULL, NULL,
     "its private key"},
    {"peer-ca", "FILE", FLAG_STR, AT(peer_ca), 0, 0, 0, 0, "none", NULL, NULL, NULL,
     "peers' certificates must be signed by this PEM CA"},
    {"tls12", NULL, FLAG_BOOL, AT(tls12), 0, 0, 0, 0, "off", NULL, NULL, NULL,
     "accept TLS 1.2 as well as TLS 1.3 (both ports)"},
    {"auth-file", "FILE", FLAG_STR, AT(auth_file), 0, 0, 0, 0, "none", NULL, NULL, NULL,
     "principals with their roles, token hashes and lock-name prefixes; every client must "
     "authenticate. Re-read on SIGHUP. `batonctl auth hash NAME ROLE` prints a line"},
    {"handshake-timeout", "MS", FLAG_UINT, AT(handshake_timeout_ms), 0, POS, 5000, NULL,
     NULL, NULL, NULL,
     "a connection must finish its TLS handshake and HELLO within MS"},
    {"max-unauth-conns", "N", FLAG_UINT, AT(max_unauth_conns), 0, POS, 1024, NULL, NULL,
     NULL, NULL,
     "connections that have not finished HELLO, at most; one more closes the oldest of "
     "them"},
    {"config", "FILE", FLAG_CONFIG, 0, 0, 0, 0, 0, "none", NULL, NULL, NULL,
     "read flags from an INI file first: a [batond] section of `key = value` lines, a key "
     "for each long flag without its dashes (`id = 1`, `election-timeout = 400`; `_` may "
     "stand for `-`); join and tls12 take true/false, yes/no, on/off or 1/0; a value may go "
     "on over indented lines. Flags on the command line override the file"},
    {"help", NULL, FLAG_HELP, 0, 0, 0, 0, 0, "", NULL, NULL, NULL,
     "this text"},
};

const size_t config_n_flags = sizeof config_flags / sizeof config_flags[0];
_Static_assert(sizeof config_flags / sizeof config_flags[0] <= CONFIG_MAX_FLAGS,
               "raise CONFIG_MAX_FLAGS");

const char *flag_default_text(const struct flag *f, char *buf, size_t size)
{
    if (f->shown != NULL) return f->shown;
    snprintf(buf, size, "%ld", f->def);
    return buf;
}
