/*
 * server_int.h -- batond's internals, shared by the files of server/. Not a
 * public API. Everything runs on the one loop thread.
 *
 * A request flows one way through these files. The map below is THE list of
 * server/'s files: [N] is a file's layer (1 the top), and a file calls only
 * files of a higher N, never its own layer or one above, unless a "tie:"
 * line lets two files call each other. tests/check-layers.sh, run by make
 * test, reads this map and checks it against the symbols each object
 * defines and uses (nm): an upward call, a .c file missing here, or an
 * entry with no file fails it. Results travel back up as completions handed
 * down by the caller (struct pending's `done`, raft's node hooks,
 * srv->conn_gone), never as calls. Format: one file per line,
 * " *  [N] file.c  its job"; deeper-indented lines continue the job.
 *
 *  [1]  main.c          parses the flags (config.c), locks the data
 *                       directory (datadir_lock.c) and runs server.c, or
 *                       restore.c for --restore
 *  [2]  server.c        start-up, the per-turn check handler, shutdown, and
 *                       the leadership switch (what a node does when it
 *                       starts or stops being the ready leader); routes
 *                       applied effects
 *  [2]  restore.c       batond --restore FILE: a new cluster's node from a
 *                       backup file, then exit
 *  [3]  listen.c        accept and read client connections, frame and decode
 *                       them, hand each request to dispatch.c; hold (park) a
 *                       leader's request until the new leader serves
 *  [3]  http.c          --metrics-addr: /metrics, /healthz, /readyz
 *                       (libmicrohttpd on the loop thread)
 *  [4]  guard.c         per-client limits: --max-conns, --frame-timeout,
 *                       --handshake-timeout, --max-unauth-conns
 *  [4]  dispatch.c      the handler table: one decoded request -> its
 *                       handler; HELLO and the session's lock requests
 *  [5]  access.c        who a connection is (HELLO) and what it may ask
 *  [5]  admin.c         STATUS, LOCK_INFO, LIST_LOCKS, LIST_SESSIONS (reads)
 *  [5]  admin_cmds.c    FORCE_RELEASE, EXPIRE_SESSION, TRANSFER, SNAPSHOT,
 *                       CHECK
 *  [5]  backup.c        SNAPSHOT_SAVE: the state dumped on a worker thread,
 *                       streamed in chunks
 *  [5]  members.c       MEMBERS, MEMBER_ADD, MEMBER_REMOVE
 *  [5]  watch.c         WATCH subscriptions and their WATCH_EVENT pushes
 *  [5]  watch2.c        WATCH2 and UNWATCH: watches of a lock or a prefix,
 *                       their events at apply time, resumption, PROGRESS
 *  [5]  keepalive.c     KEEPALIVE replies, after a leadership confirmation
 *                       round, with the session's count of lost holds;
 *                       LOST_HOLDS
 *  [6]  liveness.c      session leases on the leader; EXPIRE_SESSION
 *                       proposals
 *  [6]  deadlines.c     wait deadlines and lock-delays; WAIT_TIMEOUT,
 *                       DELAY_END
 *  [6]  disk.c          refuse state-growing requests while the data
 *                       directory's disk is nearly full
 *  [6]  levels.c        the cluster's feature level: SET_LEVEL once every
 *                       voter's raft handshake says it runs it, refusing
 *                       commands above the committed level
 *  [6]  observe.c       the metrics' gauges read from the server and raft,
 *                       their text (METRICS, /metrics), readiness (/readyz)
 *  [6]  loop_lag.c      how late the loop thread runs
 *                       (baton_loop_lag_seconds)
 *  [7]  batch.c         commands of one loop turn and the next (or, while
 *                       --max-inflight entries are uncommitted, of several)
 *                       -> one raft entry; each command's pending record
 *                       completes itself once applied
 *  [8]  push.c          applied effects -> GRANTED / WAIT_FAILED / LOST /
 *                       SESSION_EXPIRED pushes to the connection of each
 *                       session
 *  [9]  reply.c         answers every handler shares: REDIRECT / NO_LEADER,
 *                       a command that could not be committed, a command's
 *                       RESULT, a lock's state (LOCK_STATE_R)
 *  [10] member_addrs.c  where any node finds a member's client address
 *  [10] peers.c         the log of refused and closed raft connections
 *  [11] conn_tls.c      TLS on the client port; a TLS/plaintext mismatch's
 *                       error
 *  [11] input.c         a connection's input buffer: grown for the frame
 *                       it holds (small before HELLO), and the bound on
 *                       the input of all connections (--max-input-mb)
 *  [12] conn.c          a client connection: send, close, write once per
 *                       loop turn; the bound on unread replies (per
 *                       connection, and in all)
 *  [12] access_rule.c   the access decision alone: a principal, a request
 *                       and the session's owner -> allowed or why not, from
 *                       proto/msg_table.h's role, session and locks columns
 *  [13] lease.c         the leader's table of session leases (lease.h)
 *  [13] auth.c          --auth-file: parse it, look principals up (auth.h)
 *  [13] config.c        batond's flags, parsed and described from
 *                       config_flags.c's table (config.h)
 *  [13] resolve.c       the addresses a node listens on (resolve.h)
 *  [13] datadir_lock.c  one batond per data directory: the lock on
 *                       DIR/batond.lock, with its holder's pid
 *                       (datadir_lock.h)
 *  [13] notify.c        sd_notify for systemd: READY, STATUS, STOPPING
 *  [13] history.c       the change history of applied entries (which lock
 *                       changed at which index), on every node, for
 *                       resuming watches
 *  [14] metrics.c       the metric registry every file bumps, and its
 *                       Prometheus text (metrics.h; every metric is one
 *                       row of metrics_table.h)
 *  [15] config_file.c   --config FILE: each pair becomes a flag
 *                       (config_file.h)
 *  [15] config_flags.c  the table of batond's flags: name, kind, field,
 *                       bounds, default, help (config_flags.h)
 *  [16] xmalloc.c       allocation failure: log and abort (xmalloc.h)
 *  [17] log.c           one line per event to stderr, text or JSON (log.h)
 *
 * Allocation failure: batond logs and aborts (server/xmalloc.h says why).
 */
#ifndef BATON_SERVER_SERVER_INT_H
#define BATON_SERVER_SERVER_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "proto/buf.h"
#include "proto/msg.h"
#include "raft/node.h"
#include "server/auth.h"
#include "server/config.h"
#include "server/lease.h"
#include "server/xmalloc.h"
#include "proto/u64map.h"
#include "storage/cmd.h"
#include "storage/store.h"

#define LISTEN_RBUF (64u << 10)  /* a TLS port's scratch read buffer */
#define LISTEN_MORE 3            /* client listeners beyond the first (a name's addresses) */
#define CONN_MAX_OUT (64u << 20) /* a client that reads nothing is cut off here */
#define CONN_OUT_KEEP (64u << 10) /* an emptied output buffer larger than this is freed */
#define CONN_READ (64u << 10)    /* bytes one read of an authenticated connection asks for */
/* The largest frame before HELLO is accepted: the largest HELLO (a 64-byte
 * client name and a 256-byte token: 338 bytes) with room to spare. */
#define CONN_UNAUTH_FRAME 4096u
#define WATCH_MAX_PER_CONN 64    /* WATCHes one connection may hold */
#define WATCH_MAX_TOTAL 65536    /* WATCHes the server holds in all */
/* (WATCH2s are bounded by the two above, counted apart from WATCHes.) */
#define WATCH2_MAX_PREFIX 1024   /* prefix WATCH2s the server holds in all: each
                                    changed lock is compared with every one */
#define WATCH2_MAX_DUMP 10000    /* locks a prefix WATCH2 may start with (ELIMIT) */
#define WATCH2_PROGRESS_MS 1000  /* a WATCH2 sent nothing this long gets PROGRESS */
/* The change history (history.c): HIST_SIZE entries of HIST_HEAD name
 * bytes each, 48 bytes an entry, 3 MiB per node. */
#define HIST_SIZE 65536u
#define HIST_HEAD 24
#define BACKUP_MAX 1             /* SNAPSHOT_SAVEs one node serves at once (backup.c) */
#define BACKUP_STALL_MS 60000    /* a SNAPSHOT_SAVE whose client reads nothing this long ends */
/* batond's exit status when a local failure stops it (raft/node.h,
 * NODE_FAULT_EXIT): 74 is EX_IOERR of sysexits.h. */
#define BATON_EXIT_FAULT 74
#define MIB (1024.0 * 1024.0)    /* bytes in a MiB, for log lines */

struct server;
struct http;
struct watcher2;

#include "proto/tls.h"

struct conn {
    uv_tcp_t tcp;
    struct server *srv;
    uint64_t id;
    struct buf in;          /* bytes read, not yet framed */
    struct buf out;         /* replies of this loop turn, not yet written */
    struct buf writing;     /* bytes handed to uv_write */
    struct buf net;         /* TLS: sealed replies, not yet written (conn_tls.c) */
    tls *tls;               /* TLS endpoint, NULL on a plaintext connection */
    bool sniffed;           /* the first bytes were checked: TLS or not */
    uv_write_t wreq;
    bool write_pending;
    bool dirty;             /* on srv->dirty list */
    bool hello;             /* HELLO accepted: the connection is authenticated */
    const struct principal *who; /* since HELLO: its principal (access.c), in
                                    srv->auth or &auth_anonymous */
    uint64_t accepted_at;   /* uv_now at accept (guard.c: --handshake-timeout) */
    struct conn *unauth_prev, *unauth_next; /* srv's list of connections not
                                               yet through HELLO, oldest first */
    bool closing;           /* close once `out` and `writing` are written */
    bool closed;            /* uv_close called */
    bool parked;            /* a request waits for this new leader to serve: not
                               read or processed meanwhile (listen.c, park) */
    bool backlogged;        /* whole frames wait for a later loop turn's budget:
                               not read meanwhile (listen.c) */
    bool shed;              /* closed for its unread replies: its output is dropped
                               and the end of the loop turn destroys it (conn.c) */
    size_t unread;          /* out + writing + net, as counted in srv->unread */
    size_t in_held;         /* in.cap, as counted in srv->input (input.c) */
    uint32_t n_watches;     /* locks this connection watches (watch.c) */
    struct watcher2 *watches2; /* its WATCH2s (watch2.c) */
    uint32_t n_watches2;
    uint64_t partial_since; /* uv_now when `in` began to hold an incomplete
                               frame, 0 if it holds none (guard.c) */
    struct conn *next_dirty;
    char peer[64];
};

/* What became of one batched command (batch.c). */
struct cmd_outcome {
    int status;                 /* 0: its entry was applied on this leader */
    const struct cmd_result *r; /* status 0: the command's result */
    const struct effects *fx;   /* status 0: the effects of the whole entry */
    uint32_t index;             /* status 0: the command's place in the entry,
                                   as in struct effect's `cmd` */
};

struct pending;

/* What the leader knows of one voter's feature level (levels.c). */
struct level_voter {
    uint32_t id;
    uint32_t level;         /* what its last raft handshake said; 0: not heard yet */
};

/* The cluster's feature level on this node (levels.c). */
struct levels {
    uv_timer_t timer;
    bool raising;           /* a SET_LEVEL is proposed and not yet applied */
    uint32_t raising_to;    /* ... to this level */
    uint32_t told;          /* the committed level the raft transport has */
};

/*
 * A batched command's completion, run once on the loop thread: when its
 * entry has been applied on this leader (o->status 0), or when it will not
 * be applied here: BATON_ENOTLEADER whenever raft had accepted the entry
 * (leadership lost, or this leader's log write failed: its fate is
 * unknown; the client re-sends with the same seq, which the store
 * deduplicates), another code only when it was never proposed.
 */
typedef void pending_done_fn(struct server *srv, const struct pending *p,
                             const struct cmd_outcome *o);

/* A command waiting for its entry: its completion and what that needs. */
struct pending {
    pending_done_fn *done;  /* NULL: nothing to do (the leader's own commands) */
    uint64_t conn_id;       /* the connection to answer, 0 if none */
    uint64_t req_id;
    uint8_t cmd_type;
    uint64_t session;
    uint64_t seq;
    int64_t wait_ms;
    uint32_t ttl_ms;
    uint64_t owner;         /* OPEN_SESSION: its principal's key (auth_key) */
    uint16_t name_len;
    char name[BATON_MAX_NAME];
};

/* The commands collected during one loop turn. */
struct batch {
    struct buf payload;
    size_t start;
    uint32_t count;
    struct pending *p;
    size_t cap;
    uint32_t inflight;      /* entries proposed and not yet applied here */
    uint32_t inflight_cmds; /* the commands they carry */
    uint32_t max_inflight;  /* hold the next batch while this many are */
    bool hold;              /* propose nothing (a planned stop is handing
                               leadership over): commands wait, unanswered */
    uint32_t turns;         /* loop turns the batch has waited (batch.c) */
    uv_idle_t linger;       /* active while it waits one more poll (batch.c) */
};

/* Where the leader pushes a session's news: the connection it was last
 * attached to (push.c). */
struct srv_session {
    uint64_t id;
    uint64_t conn_id;       /* 0 if none */
};

/* A queued ACQUIRE's wait deadline (deadlines.c). */
struct wait_timer {
    uv_timer_t t;
    struct server *srv;
    struct wait_timer *next;
    uint64_t session, waiter;
    uint16_t name_len;
    char name[BATON_MAX_NAME];
};

/* A keepalive whose reply waits for a leadership confirmation (keepalive.c). */
struct ka_reply {
    uint64_t conn_id;
    uint64_t req_id;
    uint64_t session;       /* a keepalive's */
    char *lock;             /* a LOCK_STATE's name (malloc'd), NULL for a keepalive */
    uint16_t lock_len;
};

struct ka_list {
    struct ka_reply *v;
    size_t n, cap;
};

struct ka_rounds {
    struct ka_list round;   /* answered when the in-flight round ends */
    struct ka_list next;    /* arrived since: wait for the next round */
    bool inflight;
    size_t n_reads;         /* LOCK_STATEs in round and next (KA_MAX_READS) */
    uint64_t last_start;    /* uv_now of the last round's start */
    uv_timer_t timer;       /* brings back a round held by the rate limit */
};

/* One change of the change history (history.c). */
struct hist_entry {
    uint64_t index;         /* the raft index of the entry that changed it */
    uint64_t hash;          /* u64map_key of the lock's full name */
    uint16_t len;           /* the name's length */
    char head[HIST_HEAD];   /* its first bytes (fewer if shorter) */
};

/* The change history of this node (history.c). */
struct history {
    struct hist_entry *v;   /* HIST_SIZE slots; entry i is v[i % HIST_SIZE] */
    uint64_t n;             /* entries ever added */
    uint64_t floor;         /* every change above it is in v */
    uint64_t restored;      /* store_restored_index at the last look */
    store *st;
};

/* The WATCH2s of the ready leader (watch2.c). */
struct watches2 {
    struct u64map names;    /* u64map_key of a name -> struct w2_list */
    struct watcher2 *prefixes; /* the prefix watches */
    uint32_t n, n_prefix;   /* watches, and those of a prefix */
    bool walking;           /* a list is being walked: closed connections'
                               watches are only marked */
    bool reap;              /* some were: free them after the walk */
    uv_timer_t progress;    /* PROGRESS, while any watch is held */
};

/* A lock freed by an expiry and not grantable until its lock-delay ends. */
struct delay_timer {
    uv_timer_t t;
    struct server *srv;
    struct delay_timer *next;
    uint16_t name_len;
    char name[BATON_MAX_NAME];
};

/* What notify.c has told the service manager (sd_notify). */
struct notify {
    bool on;                /* $NOTIFY_SOCKET is set: the timer runs */
    uv_timer_t timer;       /* polls the node's state until it stops */
    uint64_t catch_up_to;   /* the commit index seen when a leader was first
                               known: READY=1 once applied up to it */
    bool ready_sent, stopping_sent;
    int role;               /* role, leader, term, readiness last said in STATUS= */
    uint32_t leader_id;
    uint64_t term;
    bool was_ready;
};

struct server {
    uv_loop_t *loop;
    struct srv_config cfg;
    store *store;
    const struct node_io *nio; /* the node's calls (raft/node.h): node_io_raft in batond */
    struct node *node;
    uv_tcp_t listener;      /* the client address, or the first it resolves to */
    uv_tcp_t listen_more[LISTEN_MORE]; /* the name's other addresses (listen.c) */
    unsigned n_listen;      /* of listener and listen_more, those initialised */
    uv_check_t check;
    uv_signal_t sigint, sigterm;
    struct u64map conns;    /* id -> struct conn */
    /* Called by conn.c when a connection that watches locks closes (set
     * by server.c to one that calls watch.c's watch_conn_gone and
     * watch2.c's watch2_conn_gone: conn.c is below both). */
    void (*conn_gone)(struct server *srv, struct conn *c);
    uint64_t next_conn_id;
    struct conn *dirty;     /* connections with output this turn */
    size_t unread;          /* replies not yet read, all connections (conn.c):
                               kept under --max-unread-mb */
    size_t input;           /* bytes of all connections' input buffers (input.c):
                               kept under --max-input-mb */
    size_t input_freed;     /* input buffer bytes freed since the last trim (input.c) */
    struct conn *unauth_head, *unauth_tail; /* not through HELLO yet, by age (conn.c) */
    size_t n_unauth;
    struct u64map sessions; /* id -> struct srv_session (push.c; ready leader only) */
    struct u64map waits;    /* session id -> its struct wait_timer list (deadlines.c) */
    struct batch batch;
    struct delay_timer *delays; /* deadlines.c; ready leader only */
    struct effect *pushq;   /* effects applied this turn, routed in check (server.c) */
    size_t n_pushq, cap_pushq;
    struct u64map watches;  /* hash of a lock name -> watchers (watch.c; ready leader only) */
    uint32_t n_watches;
    uint64_t watch_turn;    /* counts effect-routing turns, so a lock is pushed once per turn */
    struct watches2 w2;     /* WATCH2s (watch2.c; ready leader only) */
    struct history hist;    /* the change history (history.c; every node) */
    struct lease_table leases; /* ready leader only */
    struct ka_rounds ka;    /* keepalives waiting for a confirmation round */
    uv_timer_t lease_timer;
    uv_timer_t guard_timer; /* closes connections stuck in a frame (guard.c) */
    struct auth auth;       /* --auth-file as last loaded (access.c) */
    bool have_auth;         /* --auth-file given */
    uv_signal_t sighup;     /* re-reads --auth-file */
    struct u64map owner_sessions; /* owner key -> its sessions open or opening, as
                                     (void *)(uintptr_t)count (liveness.c; ready leader) */
    size_t n_opening;       /* OPEN_SESSIONs proposed, not yet applied (liveness.c;
                                   ready leader) */
    uint32_t expiries_inflight; /* EXPIRE_SESSIONs proposed, not yet applied (liveness.c) */
    uint8_t *rbuf;          /* LISTEN_RBUF bytes: a TLS port's reads (listen.c) */
    tls_ctx *client_tls;    /* --tls-cert: the client port's TLS context, else NULL */
    uint64_t tls_failures, tls_logged; /* refused handshakes since the last warning, and when */
    uint64_t refused_conns; /* connections refused at --max-conns, since the last warning */
    uint64_t refuse_logged; /* uv_now of that warning */
    uint64_t accept_failures, accept_logged; /* the same for failed accepts */
    uv_timer_t disk_timer;  /* measures the data disk's free space (disk.c) */
    uv_timer_t lag_timer;   /* measures how late the loop runs (loop_lag.c) */
    uint64_t lag_due;       /* uv_now at which it is next due, 0 before the first */
    uint64_t disk_free;     /* bytes free at the last check */
    uint64_t disk_step;     /* the store's next growth at the last check */
    bool disk_low;          /* below --min-free-mb + disk_step: client writes refused */
    struct member_op *member_op; /* MEMBER_ADD or MEMBER_REMOVE in flight (members.c) */
    struct levels levels;   /* the cluster's feature level (levels.c) */
    bool tidy_inflight;     /* members_tidy's proposal is in flight */
    uint64_t tidy_at;       /* uv_now of members_tidy's next look (0: the next turn) */
    bool check_inflight;    /* a CHECK's entry is proposed, not yet applied (admin_cmds.c) */
    struct http *http;      /* --metrics-addr's server (http.c), NULL if none */
    struct backup *backups; /* SNAPSHOT_SAVEs being dumped or sent (backup.c) */
    int n_backups;
    bool ready;             /* mirror of node_is_ready */
    int raft_role;          /* enum node_role at the last role hook (server.c) */
    bool stopping;
    uv_timer_t park_timer;  /* processes parked connections again (listen.c) */
    uv_idle_t backlog_idle; /* runs the backlog next turn (listen.c) */
    uint64_t *backlog;      /* ids of backlogged connections, oldest first */
    size_t n_backlog, cap_backlog;
    uint32_t turn_frames;   /* frames handled since the last check handler */
    uint64_t turn_began_ns; /* uv_hrtime at the first of them, 0 if none */
    unsigned accept_deferred; /* listeners (bit i: listen.c's listener_at(i))
                                 whose next connection waits for a turn's budget */
    uint64_t park_term;     /* the term in which connections were last parked */
    uint64_t park_until;    /* uv_now after which none is parked in that term */
    struct notify notify;   /* notify.c */
    bool handing_off;       /* a planned stop hands leadership over first (server.c) */
    uv_timer_t handoff_timer; /* bounds the hand-off; then stops the node */
    uint32_t handoff_to;    /* the voter it hands leadership to */
    bool handoff_moved;     /* raft says leadership moved: wait for it to settle */
    bool handoff_failed;    /* raft says it did not: stop now */
    uint64_t handoff_settled; /* uv_now when the new leader was first seen committing */
    uint64_t handoff_deadline; /* uv_now at which the node stops anyway */
    int exit_code;          /* main's status: 0, or BATON_EXIT_FAULT */
};

/* keepalive.c: KEEPALIVE renews the lease now and is answered after the
 * next leadership confirmation round, with how many lost holds the
 * session has; LOST_HOLDS lists them. */
void keepalive_init(struct server *srv);
void keepalive_received(struct conn *c, uint64_t req_id, uint64_t session);
/* LOST_HOLDS: the session's lost holds, from the applied state. */
void keepalive_lost_holds(struct conn *c, const struct msg *m);
/* LOCK_STATE: answered after the next confirmation round (keepalive.c). */
#define KA_MAX_READS 65536
void keepalive_read_state(struct conn *c, const struct msg *m);
void keepalive_kick(struct server *srv);   /* end of a loop turn */
void keepalive_close(struct server *srv);  /* closes its timer */
void keepalive_free(struct server *srv);   /* after the loop ran dry */

/* notify.c -- sd_notify (systemd Type=notify); nothing without $NOTIFY_SOCKET. */
void notify_init(struct server *srv);      /* READY=1 and STATUS= lines from now on */
/* STOPPING=1 (once), with the node leadership is handed to (0: none). */
void notify_stopping(struct server *srv, uint32_t handing_to);
void notify_close(struct server *srv);     /* closes its timer */

/* server.c */
/* Open the node over st through io (&node_io_raft in batond; a test's own
 * node in tests/unit/leader_fixture.c) and start serving. On error the
 * node is already closed; nothing else was started. */
int server_init(struct server *srv, uv_loop_t *loop, store *st, const struct srv_config *cfg,
                const struct node_io *io);
void server_stop(struct server *srv);
void server_free(struct server *srv);

/* restore.c -- batond --restore FILE: initialise cfg->data_dir (empty or
 * missing) from a `batonctl snapshot save` file for a new cluster, before
 * anything else runs. Returns main's exit status: 0, or 1 (logged why). */
int restore_run(const struct srv_config *cfg);
/* Does cfg->data_dir hold a restore that did not finish (its marker)?
 * true after logging why the node will not start. */
bool restore_interrupted(const struct srv_config *cfg);

/* listen.c -- accept client connections and feed their frames to dispatch. */
int listen_start(struct server *srv, const char *addr);
/* Close every listener listen_start opened (idempotent). */
void listen_stop(struct server *srv);

/* http.c -- --metrics-addr. Start serving (nothing without the flag): 0,
 * or BATON_EINVAL / BATON_EIO (logged; the address is taken, say). */
int http_start(struct server *srv);
void http_stop(struct server *srv);        /* closes its handles; idempotent */

/* observe.c -- metrics and readiness (docs/operations.md, "Metrics and health"). */
/* Set the gauges from the server's state now and append the Prometheus
 * text of every metric to out: 0 or BATON_ENOMEM. `who` NULL: every lock
 * name (HTTP /metrics); else only the names principal `who` may use. */
int observe_render(struct server *srv, const struct principal *who, struct buf *out);
/* Is the node ready: it knows a leader and has applied up to its commit
 * index (a leader: its barrier applied), with no local failure? Else
 * false, with the reason in why[0..cap). */
bool observe_ready(struct server *srv, char *why, size_t cap);
/* METRICS -> METRICS_R with observe_render's text for the connection's
 * principal (no lock name outside its prefixes), in chunks. */
void observe_metrics(struct conn *c, const struct msg *m);
/* This node became the ready leader: on the next loop turn, serve the
 * requests that waited for it (parked connections). */
void listen_unpark_soon(struct server *srv);
void listen_close(struct server *srv);     /* closes its handles (listen_start opened them) */
/* The loop turn ends (the check handler): a fresh budget of frames. */
void listen_turn_end(struct server *srv);

/* conn_tls.c -- TLS on the client port; the plaintext/TLS mismatch check. */
int conn_tls_init(struct server *srv);     /* the context of --tls-cert; 0 or an error (logged) */
void conn_tls_free(struct server *srv);
/* A connection was accepted: give it a TLS endpoint if the port serves
 * TLS. */
void conn_tls_start(struct conn *c);
/* n bytes read on a TLS port: decrypt into c->in. -1: c must be closed (an
 * error or an alert is queued for it). */
int conn_tls_input(struct conn *c, const uint8_t *data, size_t n);
/* On a plaintext port, before the first frame: do c's first bytes start a
 * TLS handshake? Then c has been answered ERROR(BATON_ETLS): true. */
bool conn_plain_is_tls(struct conn *c);
/* The common name of c's verified client certificate, "" if none. */
const char *conn_tls_peer_cn(const struct conn *c);
/* Has c's TLS handshake finished (always true in plaintext)? */
bool conn_tls_ready(const struct conn *c);

/* input.c -- what connections' input buffers hold (docs/operations.md, "Limits"). */
/* Make room in c's input buffer for the next read: at most `want` bytes,
 * fewer before HELLO (CONN_UNAUTH_FRAME) and no further than the end of
 * a large incomplete frame, so that a buffer never holds more than its
 * frame. Returns the room made (> 0). */
size_t input_reserve(struct conn *c, size_t want);
/* c's input buffer changed size (it grew, or was freed or shrunk): count
 * it in srv->input. */
void input_account(struct conn *c);
/* Is the input of all connections over --max-input-mb? Then close the
 * connections holding the most, largest first, with ERROR(BATON_ELIMIT)
 * and a warning, and give back their buffers. */
void input_check(struct server *srv);
/* Input buffers of many MiB were freed since the last call: return the
 * allocator's free pages to the system (called by guard.c's sweep). */
void input_trim(struct server *srv);
/* Before HELLO: does the frame at the head of c's input claim more than
 * CONN_UNAUTH_FRAME bytes? Then c has been answered ERROR(BATON_ETOOBIG)
 * and is closing: true. Decided from the 4-byte header alone. */
bool input_unauth_too_big(struct conn *c, size_t off);

/* conn.c -- a client connection's output and lifetime. */
/* A new connection on srv (its id is set and it is in srv->conns); the
 * caller initialises and accepts its tcp handle. */
struct conn *conn_new(struct server *srv);
/* Queue m on c. Out of memory, batond aborts (server/xmalloc.h); a message
 * the codec refuses is logged and c closed. */
void conn_send(struct conn *c, const struct msg *m);
void conn_send_error(struct conn *c, uint64_t req_id, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void conn_close(struct conn *c);           /* after pending output is written */
void conn_want_flush(struct conn *c);      /* write its output at the end of this turn */
/* c's HELLO was accepted: it leaves the list of unauthenticated connections. */
void conn_set_authenticated(struct conn *c);
void conn_destroy(struct conn *c);         /* now, dropping pending output */
void conn_close_all(struct server *srv);
void conn_flush_all(struct server *srv);
struct conn *conn_get(struct server *srv, uint64_t id);

/* reply.c -- answers shared by the request handlers. */
/* The wire bytes a lock state's holder and waiter lists may take in one
 * frame (LOCK_STATE_R, WATCH2_EVENT): the frame less room for the rest. */
#define LOCK_STATE_BUDGET (BATON_MAX_FRAME - 4096)
/* Answer LOCK_STATE req_id with lock name's state as applied now
 * (LOCK_STATE_R), or an ERROR. */
void reply_lock_state(struct conn *c, uint64_t req_id, const char *name, size_t len);
/* REDIRECT to the leader, or NO_LEADER while none is known (or its client
 * address is unknown): the client tries again there with the same req_id. */
void reply_not_leader(struct conn *c, uint64_t req_id);
/* A command that was not applied here (a pending_done_fn's o->status):
 * REDIRECT / NO_LEADER after a lost leadership, else ERROR. */
void reply_not_applied(struct conn *c, uint64_t req_id, int status);
/* A pending_done_fn that answers RESULT(status, kind, value), or as
 * reply_not_applied; nothing when the connection is gone. */
void reply_result(struct server *srv, const struct pending *p, const struct cmd_outcome *o);

/* loop_lag.c -- observe how late a periodic timer fires on the loop
 * (baton_loop_lag_seconds): the margin the election timeout must keep. */
void loop_lag_init(struct server *srv);
void loop_lag_close(struct server *srv);

/* disk.c -- refuse client writes while the data disk is below --min-free-mb
 * plus the lock store's next growth step. */
void disk_init(struct server *srv);
void disk_close(struct server *srv);
/* Is the disk below the floor (plus the store's next growth) and does cmd
 * grow the state (OPEN_SESSION, ACQUIRE; a RELEASE, CANCEL or
 * CLOSE_SESSION that frees nothing and would cache its result)? Then c has
 * been answered ERROR(BATON_ENOSPC) and the command must not be proposed:
 * true. A release of a hold, a cancel of a wait, a session close and the
 * leader's and operator's commands are never refused. */
bool disk_refuse(struct conn *c, uint64_t req_id, const struct cmd *cmd);

/* levels.c -- the cluster's feature level: every LEVEL_POLL_MS the ready
 * leader proposes SET_LEVEL once every voter's raft handshake says a
 * level above the committed one, and every node hands the committed
 * level to its raft transport (which refuses lower peers). */
void levels_init(struct server *srv);
void levels_close(struct server *srv);
/* This node just became the ready leader: look at once (a new cluster
 * takes its binary's level before it serves its first request). */
void levels_kick(struct server *srv);
/*
 * The highest level a command this leader proposes now may need: the
 * committed level, or the level of a SET_LEVEL it has proposed (levels.c).
 * Proposing a command of level N right after that SET_LEVEL(N), before it
 * committed, is as safe as after: SET_LEVEL(N) went out only once every
 * member ran level N, and the command's entry follows it in the log, so
 * every node applies SET_LEVEL first, and a node that has the command's
 * entry has SET_LEVEL's (raft's log matching). If SET_LEVEL is lost with
 * the leadership, so is every later entry of it. Inline: batch.c, below
 * levels.c, checks it too.
 */
static inline uint32_t levels_usable(struct server *srv)
{
    uint32_t committed = store_level(srv->store);

    if (srv->levels.raising && srv->levels.raising_to > committed) return srv->levels.raising_to;
    return committed;
}
/* Is cmd's row (cmd_level) of a level above levels_usable?
 * Then c has been answered ERROR(BATON_EVERSION), naming the levels and a
 * voter that holds the cluster back, and cmd must not be proposed: true. */
bool level_refuse(struct conn *c, uint64_t req_id, const struct cmd *cmd);
/* The lowest level over v[0..n) and own; *low_id the voter that has it, 0
 * if none is below own. A voter not heard from has level 0. */
uint32_t level_voters_min(const struct level_voter *v, uint32_t n, uint32_t own,
                          uint32_t *low_id);
/* The raise rule: the level to propose -- the lowest over the voters and
 * own, if above committed -- or 0: nothing to raise (a voter not heard
 * from holds it back). Never lower. */
uint32_t level_to_raise(const struct level_voter *v, uint32_t n, uint32_t own,
                        uint32_t committed);

/* guard.c -- limits on what one client may hold (docs/operations.md, "Limits"). */
void guard_init(struct server *srv);       /* start the frame- and handshake-timeout sweep */
void guard_close(struct server *srv);
/* A connection was just accepted: false if it is over --max-conns, and then
 * it has been answered ERROR(BATON_ELIMIT) and is closing. Beyond
 * --max-unauth-conns connections that have not finished HELLO, the oldest
 * of them is closed to make room. */
bool guard_admit(struct conn *c);
/* The input buffer was processed (whole frames were consumed if
 * `consumed`): note when the incomplete frame left in it began, and give
 * back the memory of an empty buffer. */
void guard_input_done(struct conn *c, bool consumed);
/* accept(2) failed (EMFILE, ENOMEM...): log it, at most once a second. */
void guard_accept_failed(struct server *srv, int status);

/* access.c -- principals and permissions (docs/security.md). */
int access_init(struct server *srv);       /* load --auth-file; 0 or an error (logged) */
void access_free(struct server *srv);
/* Warn when clients on client_addr, not loopback, have neither TLS nor
 * auth; and when the client port is secured but raft on raft_addr, not
 * loopback, runs without mutual TLS. */
void access_warn_if_open(struct server *srv, const char *client_addr, const char *raft_addr);
void access_reload(struct server *srv);    /* SIGHUP: re-read --auth-file */
/* HELLO m authenticates c: true and c->who set, or false after
 * ERROR(BATON_EAUTH) (c is closing). */
bool access_hello(struct conn *c, const struct msg *m);
/* May c's principal send m? true, or false after ERROR(BATON_EPERM). */
bool access_allowed(struct conn *c, const struct msg *m);
/* A lock-delay within c's principal's max-lock-delay. */
int32_t access_lock_delay_cap(const struct conn *c, int32_t delay);

/* dispatch.c -- one decoded request to its handler (a table by type). */
void dispatch(struct conn *c, const struct msg *m);

/* batch.c */
void batch_init(struct batch *b);
/* Start and close the batch's loop handle (server_init, server_stop). */
void batch_open(struct batch *b, uv_loop_t *loop);
void batch_close(struct batch *b);
void batch_free(struct batch *b);
/* Fill a pending record for cmd: completion done (NULL for none), answered
 * on connection conn_id (0: none) with req_id. */
void pending_init(struct pending *p, pending_done_fn *done, uint64_t conn_id, uint64_t req_id,
                  const struct cmd *cmd);
/* Add a command to this turn's batch; p->done runs once it is applied or
 * has failed (possibly before this returns, when it cannot be added). */
void batch_add(struct server *srv, const struct cmd *cmd, const struct pending *p);
/* Propose what was collected (called once per loop turn). */
void batch_flush(struct server *srv);

/* push.c -- applied effects to the connection each session is attached to
 * (ready leader only). */
void push_attach(struct server *srv, uint64_t session, uint64_t conn_id);
/* Deliver one effect's push: GRANTED, WAIT_FAILED, LOST, SESSION_EXPIRED
 * (and forget a session that is gone). Other effects are ignored. */
void push_effect(struct server *srv, const struct effect *e);
void push_clear(struct server *srv);       /* forget every session */

/* deadlines.c -- wait deadlines and lock-delays (ready leader only). */
void deadline_wait_arm(struct server *srv, uint64_t session, uint64_t waiter, int64_t wait_ms,
                       const char *name, size_t name_len);
/* An applied effect: a wait that ended disarms its deadline, a lock freed
 * with a lock-delay gets its timer, a session that is gone loses its
 * deadlines. Other effects are ignored. */
void deadlines_effect(struct server *srv, const struct effect *e);
/* Became the ready leader: re-arm every wait deadline and lock-delay of
 * the store with its full duration. */
void deadlines_start(struct server *srv);
void deadlines_stop(struct server *srv);   /* drop every timer */

/* liveness.c */
void liveness_init(struct server *srv);
void liveness_start(struct server *srv);                   /* became ready leader */
void liveness_stop(struct server *srv);                    /* stopped leading */
void liveness_close(struct server *srv);
/* Renew the session's lease; false if it has none (unknown or expiring). */
bool liveness_touch(struct server *srv, uint64_t session);
/* An OPEN_SESSION of owner applied, answered with session: its lease
 * starts. Or, if the session has a lease already -- a re-sent OPEN_SESSION
 * that the store answered with the session its nonce names -- the lease is
 * renewed and the reservation given back (the session is counted once).
 * Returns the session's ttl, for the SESSION reply. */
uint32_t liveness_opened(struct server *srv, uint64_t session, uint32_t ttl_ms, uint64_t owner);
/* A re-sent OPEN_SESSION found the session open: renew its lease; its
 * ttl, or 0 if it has no live lease (unknown, or being expired). */
uint32_t liveness_resumed(struct server *srv, uint64_t session);
void liveness_gone(struct server *srv, uint64_t session);
/* The owner (auth_key) of a session this leader knows: false if unknown. */
bool liveness_owner(struct server *srv, uint64_t session, uint64_t *owner);
/* Sessions kept for admin principals: others may not open one while the
 * sessions open or opening are within this many of STORE_MAX_SESSIONS, so
 * that an operator can still open a session when clients took the rest. */
#define SESSION_ADMIN_RESERVE (STORE_MAX_SESSIONS / 100)
/* May `who` open one more session? 0, and it is counted as opening; or
 * BATON_ELIMIT, counting nothing, with the reason in why[0..cap): who has
 * its cap open or opening (its max-sessions=, else
 * --max-sessions-per-principal; the anonymous principal has none), or only
 * the slots kept for admins are left (SESSION_ADMIN_RESERVE). */
int liveness_open_reserve(struct server *srv, const struct principal *who, char *why,
                          size_t cap);
/* An open reserved above failed: count it no more. */
void liveness_open_release(struct server *srv, uint64_t owner);

/* admin.c */
void admin_status(struct conn *c, const struct msg *m);
void admin_lock_info(struct conn *c, const struct msg *m);
void admin_list_locks(struct conn *c, const struct msg *m);
/* LIST_SESSIONS -> SESSIONS_R from the applied state (ready leader only). */
void admin_list_sessions(struct conn *c, const struct msg *m);

/* admin_cmds.c -- ready leader only, on the loop thread. */
/* FORCE_RELEASE: batch CMD_FORCE_RELEASE; answered FORCE_RELEASE_R once
 * applied (or failed like any command). */
void admin_force_release(struct conn *c, const struct msg *m);
/* EXPIRE_SESSION: batch CMD_EXPIRE_SESSION; answered with RESULT once
 * applied (status 0 or BATON_ESESSION); session 0 gets ERROR(EINVAL). */
void admin_expire_session(struct conn *c, const struct msg *m);
/* TRANSFER: start a leadership transfer (node_transfer) and answer
 * TRANSFER_R when it is over; ERROR(EINVAL/EBUSY/ECANCELED) otherwise. */
void admin_transfer(struct conn *c, const struct msg *m);
/* SNAPSHOT: take a raft snapshot now (node_snapshot_now) and answer
 * SNAPSHOT_R with its index; ERROR(EBUSY) while one runs. */
void admin_snapshot(struct conn *c, const struct msg *m);
/* CHECK: propose an entry holding one CMD_CHECK, on which every node hashes
 * its state (storage/cmd.h); answer CHECK_R with its index once applied
 * here; ERROR(EBUSY) while another CHECK is in flight. */
void admin_check(struct conn *c, const struct msg *m);
/* backup.c -- SNAPSHOT_SAVE (ready leader only; proto/msg.h). */
struct backup;
/* Begin the dump (ERROR(EBUSY) beyond BACKUP_MAX, or while the store's
 * snapshot slots are taken); its chunks follow from backup_kick. */
void backup_save(struct conn *c, const struct msg *m);
/* End of a loop turn: send each save's next chunk to a connection that has
 * taken the last; end those whose client left or stalled. */
void backup_kick(struct server *srv);
/* Shutdown: free the saves being sent (a dump still running frees itself). */
void backup_close(struct server *srv);

/* members.c -- the requests on the ready leader. proto/msg.h describes
 * the requests and their errors. */
/* MEMBERS: answer MEMBERS_R with the current raft configuration. */
void admin_members(struct conn *c, const struct msg *m);
/* MEMBER_ADD: replicate the new member's client address, then add it as a
 * spare and promote it (node_member_add); answer MEMBERS_R once the
 * promotion has committed, else ERROR / REDIRECT. */
void admin_member_add(struct conn *c, const struct msg *m);
/* MEMBER_REMOVE: remove a server (node_member_remove) and answer MEMBERS_R
 * once the change has committed; for the leader itself, hand leadership
 * away and answer REDIRECT to the new leader, which the client asks again. */
void admin_member_remove(struct conn *c, const struct msg *m);
/* On the ready leader, once per loop turn: at most once a second, delete
 * the client address entries of nodes no longer in the configuration, and
 * write the entry of each member that has caught up and has none (the
 * record that it has started: raft/first_start.h). */
void members_tidy(struct server *srv);

/* peers.c -- node_config.peer's log hook (arg: the server): a refused or
 * closed raft connection, a warning in the log. */
void peers_log(void *arg, const char *msg);

/* member_addrs.c -- on any node. One member as the answering node sees it. */
struct member_view {
    uint32_t id;
    int role;                              /* enum member_role (proto/msg.h) */
    char raft_addr[BATON_MAX_ADDR + 1];
    char client_addr[BATON_MAX_ADDR + 1];  /* "" when unknown */
};

/*
 * Member id's client address: the one in the replicated members table (set
 * by MEMBER_ADD), else the one in this node's --cluster list, else "".
 * Writes it into buf and returns buf.
 */
const char *member_client_addr(struct server *srv, uint32_t id, char buf[BATON_MAX_ADDR + 1]);

/*
 * The current raft configuration (the latest this node knows, committed or
 * not), each member with its client address, into out[0..max); a node that
 * has no configuration yet (started with --join, not added yet) gives its
 * --cluster list instead, every member there as a voter. Returns the count.
 */
uint32_t member_views(struct server *srv, struct member_view *out, uint32_t max);

/* watch.c -- on the loop thread; the table is filled on the ready leader only. */
/* WATCH: subscribe c to changes of the lock and answer with its current
 * state (WATCH_EVENT, seq 1); ERROR(ELIMIT) beyond WATCH_MAX_PER_CONN or
 * WATCH_MAX_TOTAL, ERROR(ENOMEM) when out of memory. */
void watch_request(struct conn *c, const struct msg *m);
/* FX_LOCK_CHANGED for name was applied: push the lock's state to each of its
 * watchers (once per loop turn: srv->watch_turn). Called by server.c. */
void watch_changed(struct server *srv, const char *name, size_t len);
/* c is closing: drop its watches. */
void watch_conn_gone(struct server *srv, struct conn *c);
/* SIGHUP re-read the auth file: end, with ERROR(BATON_EPERM) to the
 * client, every watch whose principal may no longer read its lock. */
void watch_recheck(struct server *srv);
/* Drop every watch and free the table (no longer leading, or shutting down). */
void watch_clear(struct server *srv);

/* watch2.c -- on the loop thread; watches are held on the ready leader only. */
void watch2_init(struct server *srv);      /* server_init */
void watch2_close(struct server *srv);     /* server_stop: closes the PROGRESS timer */
/* WATCH2 (proto/msg.h): answer with the state or what changed since
 * `after`, then SYNCED, and register the watch; ERROR(EINVAL) for bad
 * flags or a bad name, ERROR(ELIMIT) past WATCH_MAX_PER_CONN,
 * WATCH_MAX_TOTAL, WATCH2_MAX_PREFIX or a prefix of more than
 * WATCH2_MAX_DUMP locks. */
void watch2_request(struct conn *c, const struct msg *m);
/* UNWATCH: end c's watch of that req_id; RESULT 0, or RESULT(ENOTFOUND). */
void watch2_unwatch(struct conn *c, const struct msg *m);
/* Entry fx was applied (from the node's applied hook, ready leader): one
 * CHANGE per changed lock to each of its watches. Nothing if none. */
void watch2_applied(struct server *srv, const struct effects *fx);
void watch2_conn_gone(struct server *srv, struct conn *c);
/* SIGHUP: end with ERROR(BATON_EPERM) every watch its principal may no
 * longer read. */
void watch2_recheck(struct server *srv);
void watch2_clear(struct server *srv);     /* drop every watch (no longer leading) */

/* history.c -- on every node. */
/* Start empty, with the floor at st's applied index (HIST_SIZE slots). */
void hist_init(struct history *h, store *st);
void hist_free(struct history *h);
/* Entry fx was applied: record its FX_LOCK_CHANGED effects. */
void hist_applied(struct history *h, const struct effects *fx);
/* The index at or above which every change is known: questions about
 * (after, applied] need after >= it. */
uint64_t hist_floor(struct history *h);
/* May a lock named key (prefix false) or starting with key (prefix true)
 * have changed in an entry above `after` (after >= hist_floor)? False
 * positives only: true whenever one did. */
bool hist_changed(struct history *h, uint64_t after, bool prefix, const char *key, size_t len);

#endif
