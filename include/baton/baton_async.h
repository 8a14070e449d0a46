/*
 * baton_async.h -- libbaton's asynchronous API.
 *
 * A baton_async_t is one client session with a baton cluster, driven by the
 * caller's event loop. The core owns one non-blocking TCP socket at a time
 * and never touches an event loop itself: it asks an adapter, through the
 * hooks of baton_async_hooks, to watch the socket and to arm one timer, and
 * the adapter calls baton_async_handle_read / _write / _timeout back when
 * they fire (the hiredis model). include/baton/adapters/libuv.h is a header-only
 * adapter for libuv; another loop needs only these eight hooks.
 *
 * What the core does for you:
 *  - connects to one of the comma-separated endpoints (trying the next one
 *    when a connection fails, and backing off once every endpoint has
 *    failed in a row: 10-20 ms the first time, doubling up to 50-100 ms),
 *    says HELLO, and opens the session (with a random nonce, so that an
 *    OPEN_SESSION re-sent after its reply was lost gets the session it
 *    opened, not a second one);
 *  - follows REDIRECT to the leader and, on NO_LEADER or a lost
 *    connection, retries (NO_LEADER: after the same back-off); every
 *    request that has not been answered is re-sent on the new connection with the same request id and
 *    the same per-session seq, so the cluster applies it exactly once and a
 *    leader change costs only latency;
 *  - numbers the session's requests, tells the cluster exactly which
 *    results it no longer needs (ack_below, and the queued lock calls it
 *    keeps below it: a lock call that waits for hours leaves no trail of
 *    cached results in the cluster), and matches replies and GRANTED /
 *    WAIT_FAILED pushes to the calls that are waiting for them;
 *  - withdraws what nobody waits for any more: a lock call that timed out
 *    (or was cancelled) while the cluster may still have queued it is
 *    CANCELled, and a lock granted to such a call is released again;
 *  - keeps the session alive: a KEEPALIVE every ttl/3 (ttl as granted by
 *    the cluster), whatever else is going on, and one right after every
 *    reconnect, so that a new leader learns at once which connection the
 *    session is on (it pushes grants and lost-lock notices there);
 *  - counts the session's lease itself (below), and reports every lock it
 *    holds that it must consider lost to the lost callback
 *    (baton_async_on_lost);
 *  - opens a fresh session when the old one is gone (below);
 *  - with baton_opts.tls_ca_file, speaks TLS on every connection (the
 *    node's certificate verified against that CA and the host dialled,
 *    the client certificate presented if one is set), and sends
 *    baton_opts.token in HELLO.
 *
 * Refusals. A node may refuse the client itself: BATON_ETLS (a certificate
 * refused on either side, or TLS on one side only) or BATON_EAUTH (an
 * unknown token or certificate); and the client refuses, with BATON_ETLS,
 * a node it would have to send its token to in clear (plaintext, and an
 * address dialled that is not loopback: baton.h, baton_opts.token). While a session is being opened that is
 * the answer: the open fails at once with that code, and
 * baton_async_errmsg() names the node and the reason (the node's own
 * message when it sent one). While a session is open, such a node counts
 * as unreachable: the core tries the others with back-off, and calls that
 * find no leader fail with BATON_EUNAVAIL, their message quoting it. A
 * request the principal may not make fails alone, with BATON_EPERM and
 * the node's message.
 *
 * Leases and lost locks. The cluster expires a session that it has not
 * heard from for ttl milliseconds (counted from when its messages arrive).
 * The client counts the same lease from when it SENT its last
 * acknowledged keepalive (or any other acknowledged request of the
 * session): lease end = send time + ttl, which is never later than the
 * cluster's. A held lock is declared lost -- its lost callback runs once,
 * with `why` -- when:
 *  - the lease ends here without a newer acknowledgement (BATON_ESESSION);
 *  - the cluster says the session expired or is unknown: a SESSION_EXPIRED
 *    push, or BATON_ESESSION in answer to a keepalive or any request
 *    (BATON_ESESSION; every held lock of the session);
 *  - the cluster pushes LOST for that lock: BATON_ELOST when an operator
 *    forced its release, BATON_ESESSION when the session expired;
 *  - a keepalive's answer says the cluster recorded lost holds for the
 *    session (an operator forced them away, and the LOST push may never
 *    have arrived): the core asks for them and declares each lost
 *    (BATON_ELOST). A forced release is therefore always reported, within
 *    a keepalive interval (ttl/3) of it and a round trip, whatever became
 *    of the push; the core acknowledges each to the cluster itself.
 * So the caller gives up a lock no later than the cluster can grant it to
 * anyone else (as long as the two machines' clocks run at about the same
 * rate; an operator's forced release with --now is the exception it asks
 * for). A lock whose unlock is already in flight is not reported to the
 * lost callback; its unlock callback gets BATON_ELOST instead.
 *
 * A fresh session. When the session ends in the cluster (or its lease ran
 * out here) every held lock is reported lost (above) and every call still
 * pending in that session -- a lock wait, say -- fails with BATON_ESESSION.
 * Calls that had not been sent yet are kept. The next call (or one of
 * those kept) makes the context open a fresh session, with a new id;
 * calls made meanwhile wait for it (within their op_timeout_ms), and the
 * session callback (baton_async_on_session) reports it. Locks declared
 * lost belong to the old session: unlocking them returns BATON_ELOST and
 * does not contact the cluster.
 *
 * Threads. The core has no threads and no locks. One context must be used
 * from one thread at a time: the thread that runs its loop. Every callback
 * runs on that thread, from inside baton_async_handle_read, _write or
 * _timeout (that is, from the caller's loop) or from inside
 * baton_async_free (see there). No other call ever runs a callback before it
 * returns. The blocking API (include/baton/baton.h) runs a context on its own
 * internal thread.
 *
 * Out of memory. libbaton never aborts its host program: a call that cannot
 * allocate returns BATON_ENOMEM (having done nothing), and so does the
 * callback of the call whose work could not get memory later. A session
 * being opened whose connection cannot get memory fails with BATON_ENOMEM
 * at once; with a session open, such a connection fails like any other and
 * is tried again after a back-off (memory may be back by then), the
 * errmsg saying "out of memory". The libuv adapter allocates when it is
 * attached, not in its hooks, which cannot report an error.
 *
 * Contracts of every call that takes a callback:
 *  - If the call returns a negative BATON_E* code, its callback never runs.
 *  - Otherwise the callback runs exactly once: with the outcome, with
 *    BATON_ETIMEDOUT when op_timeout_ms passed without a reply (counted from
 *    when the request was sent, and counted again from the start when it is
 *    re-sent after a lost connection to the leader; time spent queued for a
 *    lock does not count), with BATON_EUNAVAIL when no leader could be
 *    reached for that long, or with BATON_ECANCELED when the context is
 *    freed or the session closed first.
 *  - The lost callback (baton_async_on_lost) and the session callback
 *    (baton_async_on_session) are not tied to a call; they run in the same
 *    order as everything else: a lock's lost callback never runs before
 *    its lock callback.
 *  - Pointers passed to a callback (a lock name) are valid only during the
 *    callback. Inside a callback whose status is negative,
 *    baton_async_errmsg() describes that failure.
 *  - A callback may call any function of this API, including
 *    baton_async_free on its own context: the free is then deferred until
 *    the callback returns, and then runs the remaining callbacks as
 *    baton_async_free says (those already due with their own status, the
 *    rest with BATON_ECANCELED); nothing else runs after it.
 *
 * Errors are the negative codes of include/baton/baton_defs.h.
 */
#ifndef BATON_ASYNC_H
#define BATON_ASYNC_H

#include <stddef.h>
#include <stdint.h>

#include "baton.h"
#include "baton_defs.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct baton_async baton_async_t; /* opaque */

/*
 * The session is open (status 0 and the session id) or could not be opened:
 * BATON_EUNAVAIL (no leader answered within connect_timeout_ms), BATON_EVERSION
 * (the cluster speaks another protocol version), BATON_ELIMIT (the cluster
 * refused more sessions), BATON_ENOSPC (the leader's data disk is below its
 * floor), BATON_ETLS, BATON_EAUTH (see "Refusals" above), BATON_EPERM (the
 * principal may not open sessions: its role is read), BATON_ECANCELED
 * (freed first). After a failure the context can only be freed.
 */
typedef void baton_async_open_cb(baton_async_t *ac, int status, uint64_t session, void *data);

/*
 * A lock call ended. status 0: the session holds `name` with fencing token
 * `fence` until it is unlocked. Otherwise fence is 0 and status is
 * BATON_EWOULDBLOCK (try-lock of a held or contended lock), BATON_ETIMEDOUT
 * (a bounded wait ran out, or no reply within op_timeout_ms), BATON_EUNAVAIL,
 * BATON_ECANCELED, BATON_ESESSION (the session ended), BATON_ELIMIT,
 * BATON_ENOSPC (the leader's data disk is below its floor; nothing was
 * queued -- releases are never refused for it), BATON_EPERM (the principal
 * may not lock this name; baton_async_errmsg() quotes the node) or another
 * code from the cluster. `name` is valid only during the callback.
 */
typedef void baton_async_lock_cb(baton_async_t *ac, int status, const char *name,
                                 uint64_t fence, void *data);

/* An unlock or close_session ended with status (0 or a BATON_E* code). */
typedef void baton_async_done_cb(baton_async_t *ac, int status, void *data);

/*
 * A held lock was declared lost (see "Leases and lost locks" above): the
 * session no longer holds `lock`, granted with fencing token `fence`, and
 * the caller must stop using what it protects. why is BATON_ESESSION (the
 * session expired in the cluster, or its lease ran out here) or
 * BATON_ELOST (an operator forced the release). Runs at most once per
 * grant, on the loop's thread, like every other callback;
 * baton_async_errmsg() describes the cause. `lock` is valid only during
 * the callback. The lock still has to be passed to baton_async_unlock
 * (which then returns BATON_ELOST at once) to free the client's record of
 * it -- each handle of a reentrant hold, whose grant is reported once;
 * baton_async_free frees it too.
 */
typedef void baton_async_lost_cb(baton_async_t *ac, const char *lock, uint64_t fence, int why,
                                 void *data);

/*
 * A lock call is queued: the cluster has committed its ACQUIRE and put it
 * in the queue of `lock` at 1-based `position` (the number of waiters
 * ahead of it, plus one), so every ACQUIRE of that lock committed later
 * queues behind it. call_data is the data given to the lock call. Runs on
 * the loop's thread like every other callback, after the QUEUED answer and
 * before that call's own callback. It may run more than once for one call:
 * a call re-sent after a reconnect is answered QUEUED again (with its
 * position then). It is a notice, not a completion: the lock call's
 * callback still runs exactly once. Best effort: skipped if memory runs
 * out. `lock` is valid only during the callback.
 */
typedef void baton_async_queued_cb(baton_async_t *ac, const char *lock, uint32_t position,
                                   void *call_data, void *data);

/*
 * The event-loop hooks an adapter provides (see include/baton/adapters/libuv.h).
 * The core calls them synchronously; none of them may call back into the
 * core. `data` is passed to every hook.
 *
 * The socket changes over the context's life (every reconnect opens a new
 * one), so the read/write hooks name the fd. close_fd(fd) is called before
 * the core closes fd: the adapter must stop watching it for good (a later
 * socket may get the same number). The core watches at most one fd at a
 * time and always calls close_fd for it before watching another.
 *
 * timer_start(ms) arms the context's only timer: after ms milliseconds
 * call baton_async_handle_timeout once. Arming again replaces the previous
 * deadline; timer_stop disarms it. ms may be 0 (as soon as possible, from
 * the loop, never from inside timer_start).
 *
 * cleanup is the last hook call: the context is being freed; the adapter
 * releases what it holds (it may do so later, e.g. in close callbacks) and
 * must not call the core again.
 */
typedef struct baton_async_hooks {
    void *data;
    void (*add_read)(void *data, int fd);
    void (*del_read)(void *data, int fd);
    void (*add_write)(void *data, int fd);
    void (*del_write)(void *data, int fd);
    void (*close_fd)(void *data, int fd);
    void (*timer_start)(void *data, uint64_t ms);
    void (*timer_stop)(void *data);
    void (*cleanup)(void *data);
} baton_async_hooks;

/*
 * Name resolution. An endpoint or a REDIRECT may name its host
 * ("db1.example.com:7001"); the core resolves the name again at every
 * connection attempt (nothing is cached beyond one attempt, so a node
 * whose address changed behind its name is found on the next reconnect)
 * and tries each address it resolves to in order ("localhost" may give
 * ::1, then 127.0.0.1) within the attempt. IP literals never reach a
 * resolver.
 *
 * The core never blocks if the adapter gives it a resolver
 * (baton_async_set_resolver; include/baton/adapters/libuv.h does, with
 * uv_getaddrinfo). Without one it falls back to getaddrinfo(3), which
 * BLOCKS the caller's loop for as long as the lookup takes (a DNS timeout
 * can be seconds): an adapter for a loop that must not stall should
 * provide a resolver.
 *
 * start(data, host, port, cb, arg) begins looking up host (a DNS name,
 * NUL-terminated) and port (decimal text) for a TCP connection and returns
 * a handle for the lookup, or NULL if it could not start (the attempt then
 * fails like a refused connection). The adapter then calls cb(arg, res,
 * NULL) once, later, from the loop thread -- never from inside start --
 * with res the `const struct addrinfo *` list getaddrinfo(3) would give
 * (read only during the call; entries other than AF_INET and AF_INET6 are
 * skipped), or cb(arg, NULL, why) with a message (static or valid for the
 * call) if the lookup failed;
 * unless cancel(data, lookup) was called first, after which cb must not be
 * called. The core cancels a lookup when the attempt is abandoned (its
 * deadline, baton_async_free). cb may call into the core.
 */
typedef void baton_async_resolved_cb(void *arg, const void *res, const char *why);
typedef struct baton_async_resolver {
    void *data;
    void *(*start)(void *data, const char *host, const char *port, baton_async_resolved_cb *cb,
                   void *arg);
    void (*cancel)(void *data, void *lookup);
} baton_async_resolver;

/*
 * Create a context. No network I/O happens yet: attach an adapter, then
 * call baton_async_open.
 * @param[in]  o    options (include/baton/baton.h); the strings are copied and
 *                  the TLS files read here, so o may be freed after. The
 *                  timeouts mean the same as for the blocking API:
 *                  connect_timeout_ms bounds the open, op_timeout_ms each
 *                  request, session_ttl_ms is the lease asked for.
 * @param[out] out  the new context, owned by the caller (baton_async_free);
 *                  set to NULL on error.
 * @return 0, BATON_EINVAL (no or malformed endpoints: each must be
 *         "a.b.c.d:port", "[v6addr]:port" or "host.name:port", at most 16;
 *         a client name longer than 64 bytes; a token longer than 256
 *         bytes; a TLS file that cannot be read or does not fit: a
 *         certificate without its key, a key that is not the
 *         certificate's, a certificate or key without tls_ca_file),
 *         BATON_ENOMEM. baton_async_new_errmsg() says why.
 */
BATON_API int baton_async_new(const baton_opts *o, baton_async_t **out);

/* The message of the last failed baton_async_new on the calling thread,
 * e.g. which TLS file could not be read and why ("" if none failed).
 * Static, thread-local storage, valid until that thread's next
 * baton_async_new (baton_connect calls it too). */
BATON_API const char *baton_async_new_errmsg(void);

/*
 * Install the event-loop hooks (done by an adapter, once, before
 * baton_async_open). The struct is copied.
 * @return 0, BATON_EINVAL (a NULL hook), BATON_EBUSY (already attached).
 */
BATON_API int baton_async_attach(baton_async_t *ac, const baton_async_hooks *hooks);

/*
 * Give the core a non-blocking resolver for host names (see "Name
 * resolution" above; done by an adapter, before baton_async_open). A
 * second call replaces the first: a program may put its own resolver in
 * place of its adapter's. The struct is copied.
 * @return 0, BATON_EINVAL (ac or r NULL, or a NULL hook), BATON_EBUSY
 *         (baton_async_open was called).
 */
BATON_API int baton_async_set_resolver(baton_async_t *ac, const baton_async_resolver *r);

/*
 * Start connecting and open the session. cb runs once the session is open
 * or when opening failed (see baton_async_open_cb). Lock calls made before
 * the session is open are queued and sent once it is.
 * @return 0, BATON_EINVAL (no adapter attached), BATON_EBUSY (already
 *         opened), BATON_ENOMEM.
 */
BATON_API int baton_async_open(baton_async_t *ac, baton_async_open_cb *cb, void *data);

/*
 * Acquire lock `name`.
 * @param[in] name     1..256 bytes, NUL-terminated, no NUL inside; copied.
 * @param[in] wait_ms  0: try (BATON_EWOULDBLOCK if held or if anyone is
 *                     queued; nothing stays queued); -1: wait as long as it
 *                     takes; > 0: wait at most that long (BATON_ETIMEDOUT,
 *                     and the wait is withdrawn). The cluster enforces the
 *                     bound; as a safety net the core also sends a CANCEL
 *                     once wait_ms + op_timeout_ms have passed.
 * @param[in] cb       may be NULL (but then a granted lock can only be
 *                     released by closing the session).
 * Its owner is 0, the context itself (see "Owners" below): a call for a
 * name the context already holds or waits for, through any owner, ends
 * with BATON_EDEADLK (its callback, at once; nothing is sent) unless it is
 * reentrant (baton_async_lock_with); an owner never waits behind itself.
 * The callback's BATON_ESESSION means that the session ended while the
 * call was pending (see "A fresh session" above); the next call opens a
 * fresh session.
 * @return 0, BATON_EINVAL (bad name or wait_ms < -1), BATON_ENOMEM,
 *         BATON_ESESSION (baton_async_open not called yet, or the first
 *         session could not be opened),
 *         BATON_ECLOSED (baton_async_close_session was called).
 */
BATON_API int baton_async_lock(baton_async_t *ac, const char *name, int64_t wait_ms,
                               baton_async_lock_cb *cb, void *data);

/*
 * baton_async_lock with the options of baton_lock_args (include/baton/baton.h):
 * a->wait_ms as wait_ms above, a->lock_delay_ms the lock-delay this hold
 * asks for should the session expire while holding it, a->mode, a->limit
 * and a->reentrant as baton_lock_with (include/baton/baton.h) has them: shared
 * locks, semaphores, reentrant handles. *a is copied. The callback gets
 * BATON_EINVAL for a limit other than the name's current one
 * (baton_async_errmsg gives it), BATON_EDEADLK when a->owner holds or
 * waits for the name (and the call may not reenter its hold; see
 * "Owners"), BATON_ENOTHELD or BATON_ELOST when the hold a reentrant call
 * would re-enter was taken away before the client learnt it, and
 * BATON_EVERSION when the call needs the cluster's feature level 3 (a
 * call beside another owner's hold or wait of the name) and a node still
 * runs an older batond.
 * @return as baton_async_lock; BATON_EINVAL also for lock_delay_ms < -1,
 *         an unknown mode, a limit above BATON_MAX_LIMIT, reentrant other
 *         than 0 or 1, or a shared request with a limit above 1.
 */
BATON_API int baton_async_lock_with(baton_async_t *ac, const char *name, const baton_lock_args *a,
                                    baton_async_lock_cb *cb, void *data);

/*
 * Acquire the n names in names[0..n) atomically (an atomic multi-lock):
 * the session holds all of them, with one fence, or none. The request
 * joins every name's queue at once, so two multi-locks that name the same
 * locks in any order never deadlock, and it is granted when it is first
 * (or compatible) in every queue: FIFO per name, no partial holding.
 * @param[in] names  n pointers to names as baton_async_lock takes them,
 *                   all distinct; copied (the array too).
 * @param[in] n      1..BATON_MAX_MANY; 1 is baton_async_lock_with.
 * @param[in] a      as baton_async_lock_with (NULL: wait forever, the
 *                   server's lock-delay, exclusive, ordinary locks); the
 *                   mode and limit apply to every name; reentrant must be 0.
 * The call is known by its FIRST name: the callback gets names[0] and the
 * fence; baton_async_unlock(ac, names[0], fence, ...) releases every name
 * in one step; baton_async_cancel(ac, names[0], data) withdraws it; the
 * lost and queued callbacks name names[0] (queued: the position in its
 * queue). Losing any name (an expiry, a forced release of any of them)
 * loses all of them, reported once. The callback's BATON_EDEADLK means
 * the session holds or waits for one of the names; BATON_EINVAL a limit
 * other than one name's current one.
 * @return as baton_async_lock_with; BATON_EINVAL also for names NULL, n 0
 *         or above BATON_MAX_MANY, a bad or repeated name, or a->reentrant.
 */
BATON_API int baton_async_lock_many(baton_async_t *ac, const char *const *names, size_t n,
                                    const baton_lock_args *a, baton_async_lock_cb *cb,
                                    void *data);

/*
 * Withdraw the pending baton_async_lock calls on `name` that were made with
 * this `data`. Each such call's callback still runs exactly once: with
 * BATON_ECANCELED, or with 0 and a fence if the grant won the race (then the
 * session holds the lock and must unlock it). Never runs a callback before
 * returning.
 * @return 0 (at least one call found), BATON_ENOTFOUND, BATON_EINVAL,
 *         BATON_ENOMEM.
 */
BATON_API int baton_async_cancel(baton_async_t *ac, const char *name, void *data);

/*
 * Release lock `name` held with `fence` (from the lock callback). cb (may
 * be NULL) gets 0, BATON_ENOTHELD (the cluster does not count this session
 * as the holder of that grant: it was already released, or it was taken
 * away by the session's end and the notice of that never reached the
 * client), BATON_ELOST (the lock was declared lost while this unlock was
 * in flight: an operator had forced its release, the cluster pushed LOST
 * for it, or the session ended; the cluster holds it for this session no
 * longer either way), BATON_ETIMEDOUT / BATON_EUNAVAIL (no
 * answer in time; the core keeps trying to deliver the release until the
 * session ends), BATON_ESESSION (the session ended while the release of a
 * lock that this context did not know as held was in flight),
 * BATON_EPERM (the node refused the release for this principal; the
 * session keeps the lock until it ends), BATON_ECANCELED.
 * @return 0, BATON_ELOST (the lock was declared lost before this call: the
 *         lost callback ran or is queued; the client's record of it is
 *         freed, the cluster is not contacted, cb never runs),
 *         BATON_EINVAL, BATON_ENOMEM, BATON_ESESSION (the first session was
 *         never opened, or failed), BATON_ECLOSED.
 * While the context has no session (the old one ended), unlocking a lock
 * it does not know completes with BATON_ENOTHELD without opening one.
 */
BATON_API int baton_async_unlock(baton_async_t *ac, const char *name, uint64_t fence,
                                 baton_async_done_cb *cb, void *data);

/*
 * End the session: the cluster releases its locks (granting them to the
 * next waiters) and drops its waits. Requests made before are still sent
 * first; when the cluster has answered, every call still pending completes
 * with BATON_ECANCELED, then cb (may be NULL) runs with 0 (or
 * BATON_ETIMEDOUT / BATON_EUNAVAIL after op_timeout_ms, in which case the
 * session lives on in the cluster until its lease runs out). The connection
 * is then closed; only baton_async_free remains to be called. New calls
 * return BATON_ECLOSED from the moment this is called. Locks the session
 * held are released by the close; they are not reported lost (unless the
 * session ended before the close got through). If the context has no
 * session at the time (the last one ended), cb gets 0 without any I/O.
 * @return 0, BATON_ESESSION (never opened, or already failed), BATON_ECLOSED
 *         (called twice), BATON_ENOMEM.
 */
BATON_API int baton_async_close_session(baton_async_t *ac, baton_async_done_cb *cb, void *data);

/*
 * Install the lost-lock callback (see baton_async_lost_cb); NULL removes
 * it. It applies to every lock declared lost from now on, including those
 * whose callbacks are queued but have not run yet. No error; a NULL ac is
 * ignored.
 */
BATON_API void baton_async_on_lost(baton_async_t *ac, baton_async_lost_cb *cb, void *data);

/*
 * Install the queued callback (see baton_async_queued_cb); NULL removes it.
 * It applies to QUEUED answers that arrive from now on. No error; a NULL ac
 * is ignored. (The fault harness, tests/fault/, logs it to know which
 * ACQUIREs were committed in which order.)
 */
BATON_API void baton_async_on_queued(baton_async_t *ac, baton_async_queued_cb *cb, void *data);

/*
 * Install the session callback; NULL removes it. It runs each time the
 * context opens a fresh session in place of one that ended (not for the
 * first session: that is baton_async_open's callback): cb(ac, 0, new
 * session id, data), or cb(ac, status, 0, data) when opening it failed
 * (BATON_EUNAVAIL, BATON_ELIMIT, ...; the calls that waited for it failed
 * with the same status, and the next call tries again). Runs on the loop's
 * thread, like every other callback. No error; a NULL ac is ignored.
 */
BATON_API void baton_async_on_session(baton_async_t *ac, baton_async_open_cb *cb, void *data);

/*
 * Free the context. NULL-safe. Every pending callback runs first, from
 * inside this call: those already due (queued for the end of the current
 * handler, lost callbacks included) with their own status, all others with
 * BATON_ECANCELED (the open callback too, if it has not run). No lock is
 * reported lost because of the free. The session is not closed in the cluster (call
 * baton_async_close_session first for that; otherwise its lease runs out).
 * The adapter's cleanup hook is called last. Called from inside a callback
 * of ac, the free is deferred until that callback returns.
 */
BATON_API void baton_async_free(baton_async_t *ac);

/* For adapters: the socket is readable / writable, or the timer fired.
 * They may run callbacks (and so free the context). */
BATON_API void baton_async_handle_read(baton_async_t *ac);
BATON_API void baton_async_handle_write(baton_async_t *ac);
BATON_API void baton_async_handle_timeout(baton_async_t *ac);

/* The session id: 0 until the session is open, and 0 again from the end of
 * a session until a fresh one is open. */
BATON_API uint64_t baton_async_session_id(const baton_async_t *ac);

/* The detailed message of the context's last error ("" if none). Valid
 * until the next call into ac; inside a callback with a negative status it
 * describes that failure. */
BATON_API const char *baton_async_errmsg(const baton_async_t *ac);

/* The number of calls whose callback has not yet run (for tests and
 * shutdown logic). */
BATON_API unsigned baton_async_pending(const baton_async_t *ac);

/*
 * ---- Owners ------------------------------------------------------------------
 *
 * A context is one session, the unit of liveness; each lock call is its
 * own waiter, and baton_lock_args.owner says whose: calls of different
 * owners for one name queue behind each other in FIFO order, like other
 * clients' calls, each granted with its own fence. A call whose owner
 * holds or waits for the name ends with BATON_EDEADLK unless reentrant
 * (then it adds a handle to that owner's hold). owner 0 is the context
 * itself: a call of owner 0 ends with BATON_EDEADLK if the context holds
 * or waits for the name through ANY owner, and a call of another owner
 * does if owner 0 holds or waits for it (the behaviour of libbaton.so.3,
 * whose calls all had owner 0). Use one owner per task, job or
 * coroutine that may contend with another of this context. A hold is
 * still released by (name, fence), from any owner. A reentrant call of
 * owner 0 re-enters the context's hold of the name (the oldest, if owners
 * hold it shared); a reentrant call of an owner that has nothing of the
 * name is an ordinary one. A multi-lock (baton_async_lock_many) has an
 * owner too, which other owners' single names queue behind, but the
 * cluster refuses it with BATON_EDEADLK when the context holds or waits
 * for any of its names through any owner.
 *
 * The cluster knows only the session (docs/design.md, "Owners"): a call
 * for a name that no owner of the context has goes out as it always did;
 * one beside another owner's hold or wait asks the cluster to queue it
 * all the same, which needs feature level 3 (BATON_EVERSION until every
 * node runs a batond that has it). A call that timed out while the
 * cluster may still hold its place, or a hold whose unlock is in flight,
 * counts as another owner's until the cluster has answered; a hold
 * declared lost counts for nothing.
 *
 * ---- Values, reading, watching, elections -------------------------------------
 *
 * As the blocking calls of baton.h (which see for the rules), driven by
 * the loop: the callback runs exactly once (status 0 or a BATON_E* code),
 * on the loop's thread. Pointers a callback gets are valid only during it.
 */

/* Replace the value of the hold (name, fence) (baton_proclaim; value is
 * copied). Returns at once BATON_EINVAL, BATON_ETOOBIG, BATON_ELOST (the
 * hold was declared lost; it stays for baton_async_unlock), BATON_ENOTHELD
 * (the context has no session), BATON_ECLOSED or BATON_ENOMEM, and then
 * cb never runs. cb's status: 0, BATON_ENOTHELD, BATON_ELOST,
 * BATON_ETOOBIG, BATON_EVERSION, BATON_EPERM, BATON_ESESSION (the session
 * ended: the hold is lost), BATON_ETIMEDOUT / BATON_EUNAVAIL (no answer in
 * op_timeout_ms: it may or may not have been applied), BATON_ECANCELED. */
BATON_API int baton_async_proclaim(baton_async_t *ac, const char *name, uint64_t fence,
                                   const void *value, size_t len, baton_async_done_cb *cb,
                                   void *data);

/* A read ended: st is the lock's state (status 0; it and every pointer in
 * it valid during the call only), else NULL. status: 0, BATON_EPERM,
 * BATON_ELIMIT, BATON_EUNAVAIL (no leader answered within op_timeout_ms),
 * BATON_ENOMEM, BATON_ECANCELED (the context was freed); baton_async_leader
 * adds BATON_ENOTFOUND. */
typedef void baton_async_state_cb(baton_async_t *ac, int status, const baton_lock_state *st,
                                  void *data);
/* Read lock name's state linearizably (baton_lock_state_get); needs no
 * session. Returns BATON_EINVAL (bad name, cb NULL, not attached),
 * BATON_ENOMEM or BATON_ECLOSED at once, and then cb never runs. */
BATON_API int baton_async_lock_state(baton_async_t *ac, const char *name,
                                     baton_async_state_cb *cb, void *data);

/*
 * A watch's event (status 0; ev and its state valid during the call only,
 * and ev->state NULL for BATON_EVENT_SYNCED), or its end (ev NULL): status
 * BATON_EPERM (see baton.h, "Watches"), BATON_ECANCELED
 * (baton_async_unwatch, baton_async_close_session, or the context freed),
 * BATON_ENOMEM (no memory for an event), or, before the leader's first
 * event, its refusal (BATON_ELIMIT, BATON_EPROTO from a node that does not
 * serve watches...), the node's refusal of this client (BATON_ETLS,
 * BATON_EAUTH; BATON_ENOMEM for no memory for the connection) or
 * BATON_EUNAVAIL / BATON_ETIMEDOUT (no leader answered within
 * op_timeout_ms), or the status every pending call gets when a
 * fresh session for the context could not be opened. It is then never
 * called again for that watch. A watch needs no session: it lives on when
 * the session ends, and once started waits for a leader as long as it
 * takes. The leader's PROGRESS marks are not passed on.
 */
typedef void baton_async_watch_cb(baton_async_t *ac, int status, const baton_event *ev,
                                  void *data);
typedef struct baton_async_watch baton_async_watch_t; /* opaque; freed by the core */
/* Start a watch (baton_watch); *out (may be NULL) names it for
 * baton_async_unwatch and is valid until its callback's end call. Returns
 * BATON_EINVAL (bad key or flags, cb NULL, not attached), BATON_ENOMEM or
 * BATON_ECLOSED at once, and then cb never runs. */
BATON_API int baton_async_watch(baton_async_t *ac, const char *key, unsigned flags,
                                uint64_t after, baton_async_watch_cb *cb, void *data,
                                baton_async_watch_t **out);
/* End a watch: its callback runs once more, with BATON_ECANCELED, from
 * the loop (never before this returns); events not yet passed on are
 * dropped. BATON_ENOTFOUND if its end callback is already due (it ran
 * out: its status says why), BATON_EINVAL, BATON_ECLOSED. */
BATON_API int baton_async_unwatch(baton_async_t *ac, baton_async_watch_t *w);

/* Elections (baton.h, "Elections"): campaign is a lock call with a value
 * (returns and cb as baton_async_lock_with's; a may be NULL for wait
 * forever; a->value and a->value_len are ignored: value is used, and so
 * are a->mode, a->limit and a->reentrant: a leader holds exclusively);
 * resign is baton_async_unlock; leader reads the election's state (status
 * BATON_ENOTFOUND, st NULL, while nobody leads; else st->holders[0] is the
 * leader); observe is a watch that reports changes of the leader or its
 * value only (returns and cb as baton_async_watch's). */
BATON_API int baton_async_campaign(baton_async_t *ac, const char *election, const void *value,
                                   size_t len, const baton_lock_args *a,
                                   baton_async_lock_cb *cb, void *data);
BATON_API int baton_async_leader(baton_async_t *ac, const char *election,
                                 baton_async_state_cb *cb, void *data);
BATON_API int baton_async_observe(baton_async_t *ac, const char *election,
                                  baton_async_watch_cb *cb, void *data,
                                  baton_async_watch_t **out);

#ifdef __cplusplus
}
#endif
#endif /* BATON_ASYNC_H */
