/*
 * baton.h -- libbaton's blocking API.
 *
 * A baton_t is one client session with a three-node baton cluster. It runs
 * the client core on one internal I/O thread with a private event loop; each
 * blocking call hands its request to that thread and waits for its own
 * completion. A baton_t may be shared by many threads: every call below is
 * thread-safe, and lock/unlock calls from different threads proceed
 * concurrently (several threads of one baton_t waiting for the same lock are
 * queued in the cluster like separate clients and exclude each other).
 *
 * Errors: every call returns 0 on success or a negative BATON_E* code
 * (proto/baton_errno.h); baton_strerror() gives a short text and
 * baton_errmsg() the detailed message of the calling thread's last failed
 * call on that baton_t.
 *
 * This header does not include <uv.h>.
 */
#ifndef BATON_H
#define BATON_H

#include <stdint.h>

#include "proto/baton_errno.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct baton baton_t;           /* a session; opaque */
typedef struct baton_lock baton_lock_t; /* one held lock: name + fence; opaque */

typedef struct baton_opts {
    /* Comma-separated "ip:port" client endpoints of any cluster nodes, e.g.
     * "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003". Required. Followers
     * redirect to the leader, so one reachable node is enough. */
    const char *endpoints;
    const char *client_name;      /* shown by batonctl; NULL for "baton" */
    unsigned connect_timeout_ms;  /* 0: 5000. How long baton_connect tries. */
    unsigned op_timeout_ms;       /* 0: 10000. Longest wait for any reply,
                                     not counting time queued for a lock. */
    unsigned session_ttl_ms;      /* 0: 10000. Session lease asked for. */
} baton_opts;

/*
 * Connect to the cluster and open a session.
 * @param[in]  o    options; the strings are copied, o may be freed after.
 * @param[out] out  the new context; set to NULL on error.
 * @return 0, BATON_EINVAL (bad endpoints), BATON_ENOMEM, BATON_EUNAVAIL (no
 *         leader reachable within connect_timeout_ms), BATON_EVERSION.
 * On error *out is NULL and baton_connect_errmsg() says why.
 */
int baton_connect(const baton_opts *o, baton_t **out);

/* The message of the last failed baton_connect on this thread. Static,
 * thread-local storage; valid until this thread's next baton_connect. */
const char *baton_connect_errmsg(void);

/*
 * Acquire lock `name`, waiting as long as it takes (GetLock).
 * @param[in]  name  1..256 bytes, NUL-terminated, copied.
 * @param[out] out   the held lock, owned by the caller until baton_unlock.
 * @return 0, BATON_EINVAL (bad name), BATON_ENOMEM, BATON_ESESSION (the
 *         session ended), BATON_EUNAVAIL (cluster unreachable for longer
 *         than op_timeout_ms), BATON_ELIMIT, BATON_ECLOSED (baton_close ran).
 */
int baton_lock(baton_t *b, const char *name, baton_lock_t **out);

/*
 * Acquire lock `name` only if it is free and nobody is queued (TryGetLock).
 * @return as baton_lock, plus BATON_EWOULDBLOCK (held or queued; returns at
 *         once, nothing is left queued).
 */
int baton_trylock(baton_t *b, const char *name, baton_lock_t **out);

/*
 * Acquire lock `name`, waiting at most `ms` milliseconds (ms > 0; ms == 0
 * behaves as baton_trylock, ms < 0 as baton_lock).
 * @return as baton_lock, plus BATON_ETIMEDOUT (not granted in time; the wait
 *         was withdrawn and the lock will not be granted later).
 */
int baton_lock_timeout(baton_t *b, const char *name, int64_t ms, baton_lock_t **out);

/* The fencing token of a held lock: unique, and greater than every fence
 * granted before it for any lock. Pass it to the resource you protect. */
uint64_t baton_lock_fence(const baton_lock_t *l);

/* The lock's name; valid until baton_unlock(l). */
const char *baton_lock_name(const baton_lock_t *l);

/*
 * Release a held lock and free l (always, whatever the result). NULL-safe
 * (returns 0). The next waiter, if any, is granted the lock at once.
 * @return 0, BATON_ENOTHELD (the cluster no longer counts this session as
 *         the holder: the lock was lost), BATON_EUNAVAIL, BATON_ECLOSED.
 */
int baton_unlock(baton_lock_t *l);

/* Detailed message of the last failed call on b made by the calling thread
 * ("" if none). Valid until that thread's next call on b. */
const char *baton_errmsg(const baton_t *b);

/* The session id (for logs and batonctl). */
uint64_t baton_session_id(const baton_t *b);

/*
 * End the session (held locks are released and passed on, waits dropped),
 * stop the I/O thread and free b. NULL-safe. Calls blocked in other threads
 * return BATON_ECLOSED. baton_lock_t objects still held stay valid and must
 * still be passed to baton_unlock, which then only frees them and returns
 * BATON_ECLOSED (b's memory lives until the last of them is freed).
 */
void baton_close(baton_t *b);

#ifdef __cplusplus
}
#endif
#endif /* BATON_H */
