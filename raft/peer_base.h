/*
 * peer_base.h -- what baton's two raft transports (raft/peer_tcp.c, plain;
 * raft/peer_tls.c, mutual TLS) share: the node's id and addresses, the
 * listeners, the list of connections the transport still holds, and the
 * end of the transport (closing every handle and connection, then either
 * reporting the close to raft or freeing a transport already released).
 * How a connection's handshake goes is each transport's own business.
 *
 * Ownership: a transport embeds a struct peer_base and points its
 * raft_uv_transport's impl at it (peer_base_setup), so the raft callbacks
 * below take the raft_uv_transport directly. The connections in the list
 * are the transport's: it allocates them, links them in with
 * peer_base_append, unlinks them with peer_base_remove when it frees them,
 * and then calls peer_base_maybe_finish. The transport's memory is freed by
 * its `destroy` hook, called once, after every handle is closed and the
 * list is empty, if peer_base_free came first; else raft's close callback
 * runs then, once.
 *
 * Everything runs on the loop thread. Only raft/ includes this header.
 */
#ifndef BATON_RAFT_PEER_BASE_H
#define BATON_RAFT_PEER_BASE_H

#include <raft.h>
#include <raft/uv.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "proto/msg.h" /* BATON_MAX_ADDR */
#include "raft/peer_addr.h"
#include "raft/peer_admit.h"
#include "raft/peer_hello.h" /* PEER_ASK_STARTED */

/* The struct of type `type` whose member `member` is at ptr. */
#define PEER_CONTAINER(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* One connection the transport holds, embedded in the transport's own
 * struct for it. */
struct peer_conn {
    struct peer_conn *prev, *next;
    bool outbound;
};

struct peer_base;

struct peer_base_hooks {
    /* Start ending every connection in the list (close_all): each is
     * removed, now or from a later callback, by its transport. */
    void (*end_conn)(struct peer_conn *c);
    /* Free the transport's memory (the struct embedding the peer_base). */
    void (*destroy)(struct peer_base *pb);
    /* The admitted set changed (peer_base_set_admit): close at once every
     * live connection, either way, of a node it no longer admits. */
    void (*prune)(struct peer_base *pb);
};

/* Peers remembered as running an older binary, at most. */
#define PEER_BASE_OLD_SLOTS 32
/* Peers whose feature level is remembered, at most. */
#define PEER_BASE_LEVEL_SLOTS 32
/* Refused nodes remembered for the log's once a minute, at most. */
#define PEER_BASE_REFUSED_SLOTS 32

struct peer_base {
    struct raft_uv_transport *tr;
    uv_loop_t *loop;
    const struct peer_base_hooks *hooks;
    uint64_t id;                    /* raft's, from init */
    char address[BATON_MAX_ADDR + 1];
    char bind[BATON_MAX_ADDR + 1];  /* "": listen on `address` */
    struct peer_listeners ls;       /* every address of the bind or own address */
    uv_timer_t timer;               /* peer_base_timer's */
    bool timer_init;
    int handles;                    /* listeners and timer open */
    struct peer_conn *head, *tail;  /* oldest first */
    raft_uv_accept_cb accept_cb;
    raft_uv_transport_close_cb close_cb;
    bool closing, close_reported, freed;
    /* The cluster check of every handshake (raft/cluster_id.h). */
    uint64_t cluster_id;            /* this node's; 0: none yet (a --join node) */
    void (*adopted)(void *arg, uint64_t id); /* a node without one took id */
    void *adopted_arg;
    void (*log)(void *arg, const char *msg); /* a refusal, in a sentence */
    void *log_arg;
    uint64_t log_at;                /* uv_now of the last line logged, 0: none */
    /* Who may connect (raft/peer_admit.h); every id until the node sets it. */
    struct peer_admit admit;
    /* The nodes refused for not being admitted (peer_base_admits). */
    struct peer_refused {
        uint64_t id;                /* 0: a free slot */
        uint64_t at;                /* uv_now of the line logged for it */
        unsigned since;             /* refusals not logged since */
    } refused[PEER_BASE_REFUSED_SLOTS];
    /* The peers that answered like an older binary (peer_base_old_*). */
    struct peer_old {
        char addr[BATON_MAX_ADDR + 1]; /* "": a free slot */
        unsigned strikes;           /* handshakes closed unanswered in a row */
        unsigned down;              /* versions below the newest it is dialled with */
        uint64_t down_at;           /* uv_now when `down` last rose */
        uint64_t at;                /* uv_now of its last strike (the slot's age) */
        bool logged_out, logged_in; /* peer_base_old_say logged it, either way */
    } old[PEER_BASE_OLD_SLOTS];
    /* The first-start question (peer_base_known, raft/first_start.h). */
    bool asking;                    /* dial only to ask, with PEER_ASK_STARTED */
    unsigned answers;               /* peers that answered the question */
    uint64_t known_by;              /* the first peer that answered "known", 0: none */
    char known_addr[BATON_MAX_ADDR + 1];
    bool (*started)(void *arg, uint64_t id); /* answers the question; NULL: never known */
    void *started_arg;
    /* Feature levels (peer_base_level_*). */
    uint32_t level;                 /* this binary's: what it can apply */
    uint32_t cluster_level;         /* the cluster's committed level: peers below are refused */
    struct peer_level {
        uint64_t id;                /* 0: a free slot */
        uint32_t level;             /* what its last handshake said it applies */
    } levels[PEER_BASE_LEVEL_SLOTS];
};

/* Zero-initialised pb becomes tr's implementation, on loop; sets tr's
 * data, impl, errmsg, and the init and close callbacks (the transport sets
 * listen and connect). */
void peer_base_setup(struct peer_base *pb, struct raft_uv_transport *tr, uv_loop_t *loop,
                     const struct peer_base_hooks *hooks);

/* The peer_base behind tr. */
struct peer_base *peer_base_of(struct raft_uv_transport *tr);

/* Link c (outbound set by the caller) at the end of the list / out of it. */
void peer_base_append(struct peer_base *pb, struct peer_conn *c);
void peer_base_remove(struct peer_base *pb, struct peer_conn *c);

/* The oldest inbound connection for which waiting(c) is true (NULL: every
 * inbound one), once max of them are: closing it makes room for one more. */
struct peer_conn *peer_base_evictable(struct peer_base *pb, unsigned max,
                                      bool (*waiting)(const struct peer_conn *c));

/* The transport's timer (its data is pb), initialised and counted as a
 * handle on first use; close_all closes it. */
uv_timer_t *peer_base_timer(struct peer_base *pb);

/* Listen on the bind address, else the advertised one, accepting with cb
 * (its handle's data is pb). 0, RAFT_INVALID or RAFT_IOERR, with tr's
 * errmsg. */
int peer_base_listen(struct peer_base *pb, raft_uv_accept_cb accept_cb, uv_connection_cb cb);

/* The last handle or connection went: report the close to raft, or
 * destroy a transport already released. */
void peer_base_maybe_finish(struct peer_base *pb);

/* raft_uv_transport's init and close. */
int peer_base_init_cb(struct raft_uv_transport *tr, raft_id id, const char *address);
void peer_base_close_cb(struct raft_uv_transport *tr, raft_uv_transport_close_cb cb);

/* Listen on `address` instead of the advertised one. 0, or RAFT_INVALID
 * (not an address of proto/addr.h's grammar). */
int peer_base_set_bind_address(struct raft_uv_transport *tr, const char *address);

/*
 * The cluster check of a handshake with node `peer` (at addr), which
 * presented cluster id `theirs` (0: none yet, a --join node): true if it
 * may go on. A node with no id takes the first nonzero one presented
 * (pb->adopted is told). Else a different nonzero id is refused: false,
 * with why (cap bytes) saying so.
 */
bool peer_base_cluster_ok(struct peer_base *pb, uint64_t peer, const char *addr, uint64_t theirs,
                          char *why, size_t cap);

/*
 * Admission (raft/peer_admit.h). peer_base_admits: may node `peer` (at
 * addr, for the log) connect? A refusal is logged once per node per
 * PEER_BASE_REFUSED_LOG_MS, with the count of those not logged since, so
 * a removed node that keeps dialling costs one line a minute; and at most
 * PEER_BASE_REFUSED_SLOTS nodes a minute are logged (in plaintext any id
 * may be claimed: a flood of ids costs no more lines).
 * peer_base_set_admit: the node's new admitted set (copied); if it differs
 * from the last, the transport's prune hook closes, at once, every live
 * connection of a node no longer admitted.
 */
#define PEER_BASE_REFUSED_LOG_MS 60000
bool peer_base_admits(struct peer_base *pb, uint64_t peer, const char *addr);
void peer_base_set_admit(struct peer_base *pb, const struct peer_admit *a);

/* Log that a live connection with node `peer` is being closed because it
 * left the configuration (the prune hook's line, one per connection). */
void peer_base_say_pruned(struct peer_base *pb, uint64_t peer, const char *addr);

/* Log msg through pb->log, at most one line every PEER_BASE_LOG_MS: true
 * if it was logged. */
#define PEER_BASE_LOG_MS 2000
bool peer_base_say(struct peer_base *pb, const char *msg);

/*
 * Older peers. Each binary speaks the newest handshake it knows and every
 * older one. A binary that does not know the one it is sent (a node on an
 * older binary) closes the connection without a byte of answer. So does,
 * once, a newer node killed or stopped in the middle of a handshake; so a
 * peer is taken for an older binary only once PEER_BASE_OLD_STRIKES
 * connections to it in a row ended that way (peer_base_old_strike, by the
 * address dialled), and is then dialled with the next older handshake; a
 * dial that ends any other way (refused, answered, timed out) starts the
 * count again (peer_base_old_other). peer_base_dial_version says which
 * handshake to dial with: the newest, or as many older as strikes took it
 * down, for PEER_BASE_OLD_MS after the last step down; then the newest is
 * tried again. A newest handshake received from that address (the peer
 * was upgraded) forgets it at once (peer_base_old_forget). An older
 * handshake received is accepted and logged (peer_base_old_inbound), and
 * changes nothing here: only the dialling side's own evidence makes a node
 * speak an older handshake. Both log, once per address and way and
 * rate-limited, that the peer runs an older binary (or, inbound, took this
 * node for one); the first handshake (version 1) carries no cluster id, so
 * that one is not checked.
 */
#define PEER_BASE_OLD_MS 60000
#define PEER_BASE_OLD_STRIKES 3
void peer_base_old_strike(struct peer_base *pb, uint64_t peer, const char *addr);
void peer_base_old_other(struct peer_base *pb, const char *addr);
unsigned peer_base_dial_version(struct peer_base *pb, const char *addr, unsigned newest);
void peer_base_old_forget(struct peer_base *pb, const char *addr);
void peer_base_old_inbound(struct peer_base *pb, uint64_t peer, const char *addr);

/*
 * Feature levels (docs/design.md, "Feature levels"). The newest handshake
 * carries each side's level (what its binary applies) and the cluster
 * level its store has committed; an older handshake says level 1. Every
 * handshake records the peer's level by node id (peer_base_level_heard);
 * peer_base_level_of returns the last one heard, 0 if none was.
 * peer_base_level_ok refuses a peer whose level is below this node's
 * committed cluster level: it could not apply what the cluster now
 * writes, so it gets no entry and sends none (true: it may go on; else why
 * says so, in cap bytes).
 */
void peer_base_level_heard(struct peer_base *pb, uint64_t peer, uint32_t level);
uint32_t peer_base_level_of(struct peer_base *pb, uint64_t peer);
bool peer_base_level_ok(struct peer_base *pb, uint64_t peer, const char *addr, uint32_t level,
                        char *why, size_t cap);
/* The u64 the handshakes carry: this node's level, its cluster level
 * above it; and the two back out of one. */
uint64_t peer_base_levels_word(const struct peer_base *pb);
uint32_t peer_levels_max(uint64_t word);
uint32_t peer_levels_cluster(uint64_t word);

/*
 * The first-start question (docs/design.md, "A node that lost its data
 * directory"). A node about to bootstrap on an empty data directory first
 * dials the other members with a transport whose `asking` is set: its
 * newest handshake then carries PEER_ASK_STARTED ("has this node id
 * started in your cluster before?"), and no connection is ever handed to
 * raft. The accepting node makes every check it makes of a raft
 * connection; if they pass, it answers "known" (started(id) is true) or
 * "not known" in the outcome of its reply and closes. peer_base_known
 * answers for the accepting side (and logs a "known", rate-limited);
 * peer_base_heard_answer counts, on the asking side, an answer,
 * and records the first peer that answered "known".
 */
bool peer_base_known(struct peer_base *pb, uint64_t peer, const char *addr);
void peer_base_heard_answer(struct peer_base *pb, uint64_t peer, const char *addr, bool known);

/* Release: at once if nothing is open, else once the handles and
 * connections still open are closed (closing them if raft did not). */
void peer_base_free(struct raft_uv_transport *tr);

#endif /* BATON_RAFT_PEER_BASE_H */
