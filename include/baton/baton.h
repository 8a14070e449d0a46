/*
 * baton.h -- libbaton's blocking API.
 *
 * A baton_t is one client session with a three-node baton cluster. It runs
 * the client core on one internal I/O thread with a private event loop; each
 * blocking call hands its request to that thread and waits for its own
 * completion. A baton_t may be shared by many threads: every call below is
 * thread-safe, and lock/unlock calls from different threads proceed
 * concurrently.
 *
 * Owners. All threads of a baton_t share its one session, the unit of
 * liveness: when the session ends, every thread's locks are lost. But each
 * lock call is its own waiter, owned by the calling THREAD: threads of one
 * baton_t may wait for the same name and are granted in FIFO order like
 * any other clients, each holding its own grant with its own fence. A lock
 * call for a name that the calling thread itself holds or waits for (with
 * this baton_t) fails at once with BATON_EDEADLK -- it would wait behind
 * itself -- unless it is reentrant (baton_lock_args), which then adds a
 * handle to that thread's own hold. A baton_lock_t may be unlocked from
 * any thread. (The async API, baton_async.h, names owners explicitly:
 * baton_lock_args.owner.)
 *
 * ABI: libbaton.so.4. baton_lock_args grew again (value, value_len,
 * owner: values on holds and owners, protocol version 6), and baton_opts
 * too (read_only), which changes the layout a caller's structs have, so the soname went from libbaton.so.3
 * to libbaton.so.4 (as .so.2 to .so.3 for lock modes): a program built
 * against .so.3 keeps loading .so.3. New fields are only ever added at the
 * end, and a zero-initialised struct keeps its meaning. The library speaks
 * protocol 6 and needs nodes that speak it (a node answers an older
 * client's HELLO in that client's version, so upgrade the nodes first).
 *
 * Errors: every call returns 0 on success or a negative BATON_E* code
 * (include/baton/baton_defs.h); baton_strerror() gives a short text and
 * baton_errmsg() the detailed message of the calling thread's last failed
 * call on that baton_t.
 *
 * Leases and lost locks. The I/O thread keeps the session alive with a
 * keepalive every ttl/3, whatever the calling threads are doing. The
 * cluster expires a session it has not heard from for ttl ms; the client
 * counts the same lease from the SEND time of its last acknowledged
 * message, so it always finds out first. A held lock is declared LOST --
 * the lost callback (baton_on_lost) runs once for it -- when the lease
 * runs out here, when the cluster says the session expired, or when the
 * cluster says it took that one lock away (an operator's forced release:
 * a LOST push, or, should that be lost, the next keepalive's answer, so
 * within ttl/3 and a round trip).
 * From then on the caller must stop relying on the lock; baton_unlock of
 * it returns BATON_ELOST without contacting the cluster. When the session
 * ended, lock calls still waiting in it fail with BATON_ESESSION, and the
 * next call opens a fresh session (baton_session_id changes); calls made
 * meanwhile wait for it, within op_timeout_ms.
 *
 * This header does not include <uv.h>.
 */
#ifndef BATON_H
#define BATON_H

#include <stddef.h>
#include <stdint.h>

#include "baton_defs.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct baton baton_t;           /* a session; opaque */
typedef struct baton_lock baton_lock_t; /* one held lock: name + fence; opaque */

/*
 * A held lock was declared lost (see "Leases and lost locks" above):
 * `lock` (valid only during the call) granted with fencing token `fence`
 * is no longer held. why is BATON_ESESSION (the session expired in the
 * cluster, or its lease ran out here) or BATON_ELOST (an operator forced
 * the release). Runs at most once per grant, on the baton_t's internal I/O
 * thread (never on a caller's thread), with no libbaton mutex held. While it
 * runs, the session is not kept alive and nothing else of this baton_t
 * makes progress, so it should return quickly (stop the work the lock
 * protects: set a flag, signal a thread or a process). Inside it:
 *  - baton_unlock (of any lock of b) may be called and does not wait: for
 *    a lost lock it returns BATON_ELOST at once, for another lock it
 *    starts the release and returns 0 without waiting for the cluster's
 *    answer;
 *  - baton_lock, baton_trylock and baton_lock_timeout return BATON_EBUSY;
 *  - baton_close must not be called (it does nothing there);
 *  - baton_lock_fence, baton_lock_name, baton_session_id, baton_errmsg and
 *    baton_on_lost may be called, and so may every call on other baton_ts.
 */
typedef void baton_lost_cb(baton_t *b, const char *lock, uint64_t fence, int why, void *data);

typedef struct baton_opts {
    /* Comma-separated client endpoints of any cluster nodes, each
     * "a.b.c.d:port", "[IPv6]:port" or "host.name:port", e.g.
     * "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003". Required. Followers
     * redirect to the leader, so one reachable node is enough. A name is
     * resolved again at every connection attempt and each of its addresses
     * tried in order (baton_async.h, "Name resolution"; the blocking API
     * resolves on its I/O thread's loop, without blocking the caller). */
    const char *endpoints;
    const char *client_name;      /* shown by batonctl; NULL for "baton" */
    unsigned connect_timeout_ms;  /* 0: 5000. How long baton_connect tries. */
    unsigned op_timeout_ms;       /* 0: 10000. Longest wait for any reply,
                                     not counting time queued for a lock. */
    unsigned session_ttl_ms;      /* 0: 10000. Session lease asked for. */

    /* Added in libbaton.so.2 (protocol version 2). Every string below is
     * copied (a file is read) when the context is made: baton_connect or
     * baton_async_new. Changing a file later affects only new contexts. */

    /* TLS. NULL: plaintext. Otherwise TLS 1.3 on every connection: the
     * node's certificate must chain to a CA of this PEM file and name the
     * host of the address dialled (an endpoint's, or a redirect's): an IP
     * SAN for an IP address (IPv6 too), a DNS SAN for a host name (the name
     * dialled, not the address it resolved to). */
    const char *tls_ca_file;
    /* The client certificate (PEM chain) presented to nodes that ask for
     * one, and its PEM private key: both or neither; only with
     * tls_ca_file. A node started with --tls-client-ca requires one. */
    const char *tls_cert_file;
    const char *tls_key_file;
    /* The bearer token sent in HELLO (at most 256 bytes), naming this
     * client's principal in the nodes' auth file; NULL or "" for none
     * (then the principal is the client certificate's, or the nodes'
     * anonymous one). Without TLS (tls_ca_file NULL) it is sent only to a
     * loopback address (127.0.0.0/8, ::1), where it never leaves the
     * machine: a connection to any other address dialled -- an endpoint's
     * or a REDIRECT's, as resolved -- is refused with BATON_ETLS before
     * HELLO, since whoever sees the traffic could replay the token. */
    const char *token;

    /* Added in libbaton.so.4. 1: a reader, which opens no session.
     * baton_connect then returns once the context is made, without
     * contacting the cluster; baton_lock_state_get, baton_leader,
     * baton_watch and baton_observe work (each contacts the cluster on its
     * own, within op_timeout_ms), and every call that needs a session
     * (lock, unlock, proclaim, campaign) returns BATON_ESESSION. A reader
     * keeps no lease and writes nothing to the cluster's log, and a
     * principal of role read may use one. 0: a session, as before. The
     * async API ignores it: a context that is never opened
     * (baton_async_open) is a reader. */
    int read_only;
} baton_opts;

/*
 * Connect to the cluster and open a session (a reader, o->read_only,
 * opens none and returns at once).
 * @param[in]  o    options; the strings are copied (the TLS files read),
 *                  o may be freed after.
 * @param[out] out  the new context; set to NULL on error.
 * @return 0, BATON_EINVAL (bad endpoints; a TLS file that cannot be read
 *         or a certificate without its key; a token over 256 bytes),
 *         BATON_ENOMEM, BATON_EUNAVAIL (no leader reachable within
 *         connect_timeout_ms), BATON_EVERSION,
 *         BATON_ENOSPC (the leader's data disk is below its floor: no new
 *         sessions until space is freed), BATON_ELIMIT (too many sessions),
 *         BATON_ETLS (a node's certificate was refused -- another CA, not
 *         naming the host dialled, expired --, a node refused ours or asked
 *         for one we do not have, one side speaks TLS and the other does
 *         not, or a token would go in clear to an address that is not
 *         loopback: baton_opts.token), BATON_EAUTH (a node does not know
 *         the token or certificate), BATON_EPERM (the principal may not
 *         open sessions: its role is read). ETLS, EAUTH and EPERM end the attempt at once,
 *         without waiting for connect_timeout_ms.
 * On error *out is NULL and baton_connect_errmsg() says why (for ETLS and
 * EAUTH: the node's address and the reason, the node's own message if it
 * sent one).
 */
BATON_API int baton_connect(const baton_opts *o, baton_t **out);

/* The message of the last failed baton_connect on this thread. Static,
 * thread-local storage; valid until this thread's next baton_connect. */
BATON_API const char *baton_connect_errmsg(void);

/*
 * Acquire lock `name`, waiting as long as it takes (GetLock).
 * @param[in]  name  1..256 bytes, NUL-terminated, copied.
 * @param[out] out   the held lock, owned by the caller until baton_unlock.
 * @return 0, BATON_EINVAL (bad name), BATON_ENOMEM, BATON_ESESSION (the
 *         session ended while the call waited; the next call opens a fresh
 *         session), BATON_EUNAVAIL (cluster unreachable for longer than
 *         op_timeout_ms), BATON_ELIMIT, BATON_ECLOSED (baton_close ran),
 *         BATON_EBUSY (called from the lost callback), BATON_ENOSPC (the
 *         leader's data disk is below its floor: nothing was queued; retry
 *         once space is freed. Releases are never refused for this),
 *         BATON_EPERM (the principal may not lock this name: it is outside
 *         the principal's prefixes, or its role is read; baton_errmsg
 *         quotes the node's message).
 * A node that refuses the connection itself (BATON_ETLS, BATON_EAUTH: a
 * certificate or an auth file changed) while the session is open counts
 * as unreachable: the client tries the others, and a call that finds none
 * fails with BATON_EUNAVAIL, its message quoting the refusal.
 */
BATON_API int baton_lock(baton_t *b, const char *name, baton_lock_t **out);

/*
 * Acquire lock `name` only if it is free and nobody is queued (TryGetLock).
 * @return as baton_lock, plus BATON_EWOULDBLOCK (held or queued; returns at
 *         once, nothing is left queued).
 */
BATON_API int baton_trylock(baton_t *b, const char *name, baton_lock_t **out);

/*
 * Acquire lock `name`, waiting at most `ms` milliseconds (ms > 0; ms == 0
 * behaves as baton_trylock, ms < 0 as baton_lock).
 * @return as baton_lock, plus BATON_ETIMEDOUT (not granted in time; the wait
 *         was withdrawn and the lock will not be granted later).
 */
BATON_API int baton_lock_timeout(baton_t *b, const char *name, int64_t ms, baton_lock_t **out);

/*
 * Options for one acquire (baton_lock_with).
 * wait_ms: BATON_WAIT_FOREVER (-1), BATON_WAIT_TRY (0), or > 0 ms (as
 *   baton_lock, baton_trylock, baton_lock_timeout).
 * lock_delay_ms: what happens if this client's session expires while it
 *   holds the lock: BATON_LOCK_DELAY_DEFAULT (0) uses the server's
 *   --lock-delay; BATON_LOCK_DELAY_NONE (-1) grants the lock to the next
 *   waiter at once; > 0 keeps it from everyone for that many ms (bounded by
 *   the server's --max-lock-delay), so that a holder that was paused and does
 *   not yet know it lost the lock cannot overlap with the next one.
 * mode: BATON_MODE_EXCLUSIVE (0, the default) or BATON_MODE_SHARED (any
 *   number of shared holders, or one exclusive holder; FIFO: a shared
 *   request behind a waiting exclusive one waits).
 * limit: 0 or 1 for an ordinary lock; N (2..BATON_MAX_LIMIT) makes the
 *   name a semaphore of N: at most N holders at once, FIFO. The request
 *   that creates the name fixes N for as long as it has holders or
 *   waiters; a request with another limit meanwhile fails with
 *   BATON_EINVAL (baton_errmsg gives the current one). A semaphore takes
 *   exclusive (default) requests only: each holds one of its N permits.
 * reentrant: 1 lets an owner (see "Owners" above: the calling thread)
 *   that holds the name take it again at once: a second handle with the
 *   same fence; the lock is released when the last handle is unlocked.
 *   Without it (0), asking for a name the owner holds or waits for fails
 *   at once with BATON_EDEADLK; so does a reentrant request of an owner
 *   that only waits for it, or an exclusive one on its shared hold (an
 *   upgrade). Other owners of the same baton_t just queue.
 * value, value_len: the hold's value, who the holder is (an address, a
 *   name, a JSON document: opaque bytes, copied), kept by the cluster
 *   with the wait and then the hold, shown to every reader
 *   (baton_lock_state, watches, batonctl lock-info) and gone when the
 *   hold ends; baton_proclaim replaces it. NULL/0: none. At most
 *   BATON_MAX_VALUE bytes, and at most the cluster's --max-value (4096 by
 *   default): a longer one fails with BATON_ETOOBIG. Single names only
 *   (baton_lock_many refuses a value with BATON_EINVAL). A reentrant
 *   request's value is ignored: the hold keeps the one it has.
 * owner: the async API's owner of the request (baton_async.h, "Owners");
 *   0 there means the context itself. The blocking API ignores it: its
 *   owner is always the calling thread.
 * Zero-initialise the struct ({0} or designated initialisers): fields may
 * be added at the end in later versions (libbaton.so.3 added mode, limit
 * and reentrant, libbaton.so.4 the last three). BATON_WAIT_*,
 * BATON_LOCK_DELAY_*, BATON_MODE_*, BATON_MAX_LIMIT and BATON_MAX_VALUE
 * are defined in baton_defs.h.
 */
typedef struct baton_lock_args {
    int64_t wait_ms;
    int32_t lock_delay_ms;
    uint8_t mode;
    uint32_t limit;
    uint8_t reentrant;
    const void *value;
    size_t value_len;
    uint64_t owner;
} baton_lock_args;

/*
 * Acquire lock `name` with the options in *a (copied).
 * @return as baton_lock_timeout; BATON_EINVAL also for wait_ms < -1,
 *         lock_delay_ms < -1, a mode other than the two, a limit above
 *         BATON_MAX_LIMIT, reentrant other than 0 or 1, a shared request
 *         with a limit above 1, or a limit other than the name's current
 *         one; BATON_EDEADLK (the calling thread holds or waits for the
 *         name: see reentrant above); BATON_ENOTHELD or BATON_ELOST
 *         (reentrant: the hold it would re-enter had been taken away, and
 *         the client had not learnt it yet); BATON_ETOOBIG (a value
 *         longer than the cluster takes); BATON_EVERSION (the cluster has
 *         not yet raised its feature level to values and owners: a node
 *         still runs an older batond; so does any lock call for a name
 *         another thread of this baton_t holds or waits for).
 */
BATON_API int baton_lock_with(baton_t *b, const char *name, const baton_lock_args *a,
                              baton_lock_t **out);

/*
 * Acquire the n names in names[0..n) atomically (an atomic multi-lock):
 * all of them, with one fence, or none -- never some. The request joins
 * every name's queue in one step and is granted when it is first (or
 * compatible) in each, so multi-locks over the same names in any order
 * never deadlock, and every queue stays FIFO. a->wait_ms works as for one
 * name (a try holds nothing unless it can have everything at once; a
 * timeout withdraws the request from every queue); a->mode and a->limit
 * apply to every name; a->reentrant must be 0. a may be NULL (wait
 * forever, exclusive, ordinary locks).
 * @param[in] names  n distinct names, 1..256 bytes each; copied.
 * @param[in] n      1..BATON_MAX_MANY (64); 1 is baton_lock_with.
 * @param[out] out   ONE handle for all the names: baton_lock_name gives
 *                   names[0], baton_lock_fence the one fence, and one
 *                   baton_unlock releases every name at once. Losing any
 *                   name (expiry, a forced release of any of them) loses
 *                   all, reported once to the lost callback (by names[0]).
 * @return as baton_lock_with; BATON_EINVAL also for names NULL, n 0 or
 *         above BATON_MAX_MANY, a bad or repeated name, or a->reentrant;
 *         BATON_EDEADLK when this session holds or waits for any of the
 *         names, whichever thread does (a multi-lock is refused at the
 *         session level; threads that lock single names queue behind
 *         it); BATON_EPERM when any name is outside the principal's
 *         prefixes.
 */
BATON_API int baton_lock_many(baton_t *b, const char *const *names, size_t n,
                              const baton_lock_args *a, baton_lock_t **out);

/*
 * ---- Cancelling a wait; owners other than the calling thread -------------
 *
 * For callers whose waiters are not one thread each -- a language runtime
 * that moves its tasks between threads (Go's goroutines), a thread pool, a
 * program that must abandon waits when it shuts down -- baton_lock_call is
 * baton_lock_with (n == 1) or baton_lock_many (n > 1) with two more
 * things:
 *  - a->owner names the call's owner (see "Owners" above): 0 is the
 *    calling thread, as for every other blocking call; any other value is
 *    an owner from baton_owner_new, whose calls may come from any thread
 *    (a reentrant call re-enters that owner's hold, whichever thread
 *    makes it).
 *  - cancel (NULL: none) is a cancel handle: baton_cancel(c), from any
 *    thread, ends every call waiting with c -- each returns
 *    BATON_ECANCELED, its wait withdrawn from the lock's queue as a
 *    timed-out one is, or returns 0 and the lock if the grant won the
 *    race (the caller then holds it and must unlock it) -- and every
 *    later call made with c returns BATON_ECANCELED at once, without
 *    contacting the cluster. One handle may serve any number of calls,
 *    of any baton_t, at once.
 * baton_campaign is baton_lock_call of one name, exclusive, with a value.
 */
typedef struct baton_cancel baton_cancel_t; /* opaque */

/* A new cancel handle, not fired. @return 0, BATON_EINVAL (out NULL),
 * BATON_ENOMEM. */
BATON_API int baton_cancel_new(baton_cancel_t **out);

/* Fire c (see above). Idempotent; NULL-safe; any thread, the lost callback
 * too (it does not wait); not from a signal handler (it takes mutexes). */
BATON_API void baton_cancel(baton_cancel_t *c);

/* Free c. NULL-safe. No call may still be using it. */
BATON_API void baton_cancel_free(baton_cancel_t *c);

/* A fresh owner for baton_lock_args.owner: never 0, never equal to another
 * owner this process made (a thread's included). No error. */
BATON_API uint64_t baton_owner_new(void);

/*
 * Acquire names[0..n) (see above).
 * @return as baton_lock_with (n == 1, where a->value may be set) or
 *         baton_lock_many (n > 1; a may be NULL: wait forever, exclusive);
 *         BATON_ECANCELED
 *         (cancel fired, before or while the call waited).
 */
BATON_API int baton_lock_call(baton_t *b, const char *const *names, size_t n,
                              const baton_lock_args *a, baton_cancel_t *cancel,
                              baton_lock_t **out);

/* The fencing token of a held lock: unique, and greater than every fence
 * granted before it for any lock. Pass it to the resource you protect. */
BATON_API uint64_t baton_lock_fence(const baton_lock_t *l);

/* The lock's name; valid until baton_unlock(l). */
BATON_API const char *baton_lock_name(const baton_lock_t *l);

/*
 * Release a held lock and free l (always, whatever the result). NULL-safe
 * (returns 0). The next waiter, if any, is granted the lock at once.
 * @return 0;
 *         BATON_ELOST: the lock had been declared lost (the lost callback
 *         ran or is running for it), or it was declared lost while this
 *         release was on its way (the cluster took it away first, or the
 *         session ended meanwhile). Nothing is sent to the cluster for a
 *         lock already declared lost. Either way the cluster holds it for
 *         this session no longer, and the work done under it may have
 *         overlapped with another holder's;
 *         BATON_ENOTHELD: the cluster does not count this session as the
 *         holder, although the client never learnt that the lock was lost
 *         (the notice was lost with a connection) -- treat it like
 *         BATON_ELOST;
 *         BATON_EUNAVAIL (no answer within op_timeout_ms; the release is
 *         retried in the background until the session ends);
 *         BATON_EPERM (the node refused the release for this principal,
 *         e.g. after its auth file changed; baton_errmsg quotes it; the
 *         session keeps the lock until it ends);
 *         BATON_ECLOSED (baton_close ran first).
 * Inside the lost callback it does not wait: see baton_lost_cb.
 */
BATON_API int baton_unlock(baton_lock_t *l);

/*
 * ---- Values, reading and watching ----------------------------------------
 *
 * Replace the value of a held lock (a leader's proclaim): every reader and
 * watcher sees the new value from the commit on; NULL/0 removes it. The
 * value is copied; l stays the caller's. A proclaim is applied at most
 * once, however often the library has to send it again (a failover).
 * @return 0, BATON_ELOST / BATON_ENOTHELD (as baton_unlock: the lock is no
 *         longer this session's; l stays valid and must still be
 *         unlocked), BATON_EINVAL (l is NULL or a multi-lock, or value
 *         NULL with len > 0), BATON_ETOOBIG (longer than BATON_MAX_VALUE,
 *         or than the cluster's --max-value), BATON_EUNAVAIL (no answer
 *         within op_timeout_ms: it may or may not have been applied),
 *         BATON_EVERSION (the cluster is not yet at the feature level of
 *         values), BATON_EPERM, BATON_ECLOSED, BATON_EBUSY (called from the
 *         lost callback, which must not wait).
 */
BATON_API int baton_proclaim(baton_lock_t *l, const void *value, size_t len);

/* One hold of a lock as a reader sees it: its session, that session's
 * client_name (baton_opts.client_name; "" once the session is gone), the
 * fence, the raft index of the grant (a lock's revisions are raft
 * indexes: comparable with baton_lock_state.revision and watch events),
 * its mode, how many reentrant handles it has, and its value. */
typedef struct baton_holder {
    uint64_t session;
    const char *client_name;
    uint64_t fence;
    uint64_t granted_revision;
    uint8_t mode;
    uint32_t count;
    const void *value; /* NULL when value_len is 0 */
    size_t value_len;
} baton_holder;

/* One waiter, in queue order: its session, client name, mode, what it
 * asked to wait (ms; BATON_WAIT_FOREVER) and its request's value. */
typedef struct baton_waiter {
    uint64_t session;
    const char *client_name;
    uint8_t mode;
    int64_t wait_ms;
    const void *value;
    size_t value_len;
} baton_waiter;

/*
 * A lock's state as of raft index `revision`: who holds it (fence order:
 * holders[0] is an exclusive lock's holder, an election's leader) and who
 * waits (queue order). A lock nobody holds or waits for has held 0, limit
 * 0 and no entries. The lists may be shorter than the totals when the
 * values are large (they fill one message of about 1 MiB). Owned by the
 * library, read-only, freed with baton_lock_state_free; every pointer in
 * it lives as long as it.
 */
typedef struct baton_lock_state {
    const char *name;
    uint64_t revision;
    int held;
    uint8_t mode;
    uint32_t limit;
    int delayed;        /* free but in its lock-delay (baton_lock_args) */
    uint32_t total_holders, n_holders;
    const baton_holder *holders;
    uint32_t total_waiters, n_waiters;
    const baton_waiter *waiters;
} baton_lock_state;

/*
 * Read lock `name`'s state, linearizably: it holds every change whose
 * call returned before this one was made, and nothing a later leader may
 * undo (the leader confirms its leadership after the read arrives).
 * Needs a principal that may read the name (role read or above). Like a
 * lock call it follows redirects and is sent again after a broken
 * connection, until op_timeout_ms. It needs no session.
 * @param[out] out  the state, one allocation owned by the caller (every
 *         pointer in it lives as long as it): baton_lock_state_free. NULL
 *         on error.
 * @return 0, BATON_EINVAL (bad name, out NULL), BATON_ENOMEM,
 *         BATON_EUNAVAIL (no leader answered within op_timeout_ms),
 *         BATON_EPERM, BATON_ELIMIT (the leader has too many reads in
 *         flight), BATON_ECLOSED, BATON_EBUSY (called from the lost
 *         callback).
 */
BATON_API int baton_lock_state_get(baton_t *b, const char *name, baton_lock_state **out);
BATON_API void baton_lock_state_free(baton_lock_state *st); /* NULL-safe */

/*
 * Watches. A watch follows one lock (flags 0) or every lock whose name
 * starts with a prefix (BATON_WATCH_PREFIX; "" is every lock) and yields,
 * in commit order, one event per change of a holder, a value or a queue,
 * each with the lock's whole state right after it and its revision (the
 * raft index of the change: strictly increasing along a watch).
 *
 * Start and resumption. A watch starts with the current state: one
 * BATON_EVENT_STATE per lock (for a name: one, even if free; for a
 * prefix: one per lock that is held or waited for), then one
 * BATON_EVENT_SYNCED; from there on, every change is delivered. When
 * the connection breaks or the leader changes, the library resumes the
 * watch on the new leader after the last revision up to which it had the
 * stream whole (the last CHANGE's or SYNCED's, or a later one at which
 * the leader said that nothing watched had changed): if the
 * leader can tell that nothing watched changed meanwhile, the next event
 * is a BATON_EVENT_SYNCED with restarted 0 and nothing was missed; if it
 * can tell which watched lock changed (a watch of one name), it comes as
 * a BATON_EVENT_GAP (its state now; changes between were not seen) before
 * the SYNCED; if it cannot tell (a prefix some of whose locks changed, or
 * a change history that does not reach back that far), the SYNCED has
 * restarted 1 and comes after a
 * BATON_EVENT_STATE of every watched lock: forget what you knew, this is
 * the current state. An observer is thus always told when it may have
 * missed something. `after` (baton_watch) starts a watch the same way from
 * a revision the caller already knows (0: from the current state).
 *
 * A watch whose principal may no longer read what it watches (the auth
 * file was changed) ends: the next baton_watch_next returns BATON_EPERM.
 * A watch needs no session and outlives one that ends; once started it
 * waits for a leader as long as it takes.
 *
 * Events wait in the library until taken, at most 4096 per watch. When
 * one more arrives, those are all dropped and the library subscribes
 * again from the last CHANGE or SYNCED the caller took, so the next
 * events are GAPs (or a restart) telling what changed since: a watcher
 * that does not keep up is told what it missed, never left unaware. The
 * leader likewise cuts off a watch whose connection does not keep up,
 * and it resumes as above.
 */
#define BATON_WATCH_PREFIX 0x01

enum baton_event_kind {
    BATON_EVENT_CHANGE = 1, /* the state right after the change at revision */
    BATON_EVENT_STATE,      /* the state at the start (or restart) of the watch */
    BATON_EVENT_GAP,        /* the state now; it changed meanwhile in ways not seen */
    BATON_EVENT_SYNCED      /* no state: complete from revision on (restarted: see above) */
};

typedef struct baton_event {
    int kind;                       /* enum baton_event_kind */
    int restarted;                  /* BATON_EVENT_SYNCED only */
    uint64_t revision;
    const baton_lock_state *state;  /* NULL for BATON_EVENT_SYNCED */
} baton_event;

typedef struct baton_watch baton_watch_t; /* opaque */

/*
 * Start a watch (see "Watches" above) on key: a lock name (flags 0) or a
 * prefix (BATON_WATCH_PREFIX). Needs a principal that may read it. Returns
 * once the leader has answered: the first event is then waiting.
 * @param[out] out  the watch, the caller's until baton_watch_close; NULL
 *         on error.
 * @return 0, BATON_EINVAL (bad name or flags, out NULL), BATON_ENOMEM,
 *         BATON_EUNAVAIL (no leader answered within op_timeout_ms),
 *         BATON_EPERM, BATON_ELIMIT (too many watches on the leader),
 *         BATON_EPROTO (a node that does not serve watches),
 *         BATON_ECLOSED, BATON_EBUSY (called from the lost callback).
 */
BATON_API int baton_watch(baton_t *b, const char *key, unsigned flags, uint64_t after,
                          baton_watch_t **out);

/*
 * The next event of w, waiting at most timeout_ms (< 0: forever). Any
 * thread may call it, several at once (each event goes to one of them);
 * from the lost callback only with timeout_ms 0.
 * @param[out] ev  one allocation owned by the caller (its state lives as
 *         long as it): baton_event_free. NULL when none is returned.
 * @return 0, BATON_ETIMEDOUT (none in time), BATON_ECLOSED
 *         (baton_watch_close or baton_close ran), BATON_EBUSY (the lost
 *         callback with a timeout), BATON_EINVAL (w or ev NULL), or, once
 *         the events before it are taken, why the watch ended: BATON_EPERM
 *         (see above), BATON_ENOMEM, or a new leader's refusal to resume
 *         it (BATON_ELIMIT...); it then returns that again.
 */
BATON_API int baton_watch_next(baton_watch_t *w, int64_t timeout_ms, baton_event **ev);
BATON_API void baton_event_free(baton_event *ev); /* NULL-safe */

/* End the watch and free w and the events not taken; a thread blocked in
 * baton_watch_next on it returns BATON_ECLOSED first. NULL-safe; any
 * thread, the lost callback too. Call it for every watch, before or after
 * baton_close (after it, it only frees). */
BATON_API void baton_watch_close(baton_watch_t *w);

/*
 * ---- Elections -------------------------------------------------------------
 *
 * An election is a lock whose holder is the leader and whose value says
 * who leads (Chubby's primary named in its lock file, etcd's Election,
 * Curator's LeaderSelector). Candidates queue in FIFO order; the leader's
 * fence is its term, a fencing token larger than every earlier leader's.
 * Losing leadership is told exactly as a lost lock is (the lost callback,
 * then BATON_ELOST from baton_resign), never silently.
 *
 * baton_campaign waits (at most wait_ms; BATON_WAIT_FOREVER, or any
 * negative value, for as long as it takes; BATON_WAIT_TRY not at all)
 * until this candidate leads, then returns its leadership as a held lock
 * (an exclusive hold of the name `election`) with the value (copied;
 * baton_proclaim changes it): returns as baton_lock_with. baton_resign is
 * baton_unlock: the next candidate leads at once. baton_leader reads the
 * current leader (BATON_ENOTFOUND if nobody leads; *out is then NULL),
 * linearizably: returns as baton_lock_state_get, and on success
 * (*out)->holders[0] is the leader. baton_observe is baton_watch of the
 * name, filtered; it returns as baton_watch. It yields one event per change of
 * leader or of the leader's value (a BATON_EVENT_CHANGE whose state's
 * holders[0] is the new leader, or no holder while nobody leads), besides
 * the STATE, GAP and SYNCED events of any watch; changes of the queue
 * alone are not reported.
 */
BATON_API int baton_campaign(baton_t *b, const char *election, const void *value, size_t len,
                             int64_t wait_ms, baton_lock_t **leader);
BATON_API int baton_resign(baton_lock_t *leader);
BATON_API int baton_leader(baton_t *b, const char *election, baton_lock_state **out);
BATON_API int baton_observe(baton_t *b, const char *election, baton_watch_t **out);

/* Detailed message of the last failed call on b made by the calling thread
 * ("" if none). Valid until that thread's next call on b. */
BATON_API const char *baton_errmsg(const baton_t *b);

/* The session id (for logs and batonctl). It changes when a fresh session
 * replaces one that ended; until the fresh one is open it is the old id. */
BATON_API uint64_t baton_session_id(const baton_t *b);

/*
 * Install the lost callback (see baton_lost_cb); NULL removes it. It
 * applies to every lock declared lost after this returns. May be called at
 * any time, from any thread; data is passed to cb as is.
 */
BATON_API void baton_on_lost(baton_t *b, baton_lost_cb *cb, void *data);

/*
 * End the session (held locks are released and passed on, waits dropped),
 * stop the I/O thread and free b. NULL-safe; does nothing when called from
 * the lost callback (which must not call it). Calls blocked in other threads
 * return BATON_ECLOSED. baton_lock_t objects still held stay valid and must
 * still be passed to baton_unlock, which then only frees them and returns
 * BATON_ECLOSED (b's memory lives until the last of them is freed).
 */
BATON_API void baton_close(baton_t *b);

#ifdef __cplusplus
}
#endif
#endif /* BATON_H */
