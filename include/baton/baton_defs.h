/*
 * baton_defs.h -- what libbaton's public API and baton's wire protocol
 * share: the error codes, the special wait and lock-delay values, the
 * lock-name limit, and the export marker of the public functions. It is
 * part of the public API (baton.h includes it) and the one header under
 * client/ that proto/, storage/, raft/ and server/ include: these values
 * travel on the wire and must mean the same on both ends.
 *
 * Errors.
 * Every baton call that can fail returns 0 (or a non-negative count) on
 * success and one of the negative codes below on failure, libuv style. All
 * codes live in baton's reserved range -4001 ... -4099 so that they mean the
 * same on every platform; these are the only error values that ever travel
 * on the wire. Modules translate foreign codes (errno, RAFT_*, MDB_*) into
 * these at their boundary.
 */
#ifndef BATON_DEFS_H
#define BATON_DEFS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Marks a function of libbaton's public API: the library is built with
 * -fvisibility=hidden, so only what carries this marker is exported. */
#if defined(__GNUC__) || defined(__clang__)
#define BATON_API __attribute__((visibility("default")))
#else
#define BATON_API
#endif

/* Longest lock name, in bytes. A lock name is 1..BATON_MAX_NAME bytes and
 * contains no NUL byte. */
#define BATON_MAX_NAME 256

/* wait_ms values of an acquire other than a positive number of ms. */
#define BATON_WAIT_TRY 0        /* never wait: BATON_EWOULDBLOCK if busy */
#define BATON_WAIT_FOREVER (-1) /* wait until granted */

/* lock_delay_ms values of an acquire other than a positive number of ms. */
#define BATON_LOCK_DELAY_DEFAULT 0 /* the server's --lock-delay */
#define BATON_LOCK_DELAY_NONE (-1) /* no lock-delay */

/* Lock modes (baton_lock_args.mode; docs/design.md, "Lock modes"). */
#define BATON_MODE_EXCLUSIVE 0  /* one holder (or, on a semaphore, one permit) */
#define BATON_MODE_SHARED 1     /* any number of shared holders, no exclusive one */

/* The most names one atomic multi-lock may take (baton_lock_many). */
#define BATON_MAX_MANY 64

/* The largest semaphore limit (baton_lock_args.limit). 0 and 1 mean an
 * ordinary lock. */
#define BATON_MAX_LIMIT 10000

/* The longest value a hold may carry (baton_lock_args.value,
 * baton_proclaim); a cluster's --max-value may take less. */
#define BATON_MAX_VALUE 16384

/* The reserved range: every BATON_E* code c has BATON_ERRNO_MIN <= c <= BATON_ERRNO_MAX. */
#define BATON_ERRNO_MIN (-4099)
#define BATON_ERRNO_MAX (-4001)

#define BATON_ERRNO_MAP(XX)                                                  \
    XX(EINVAL, -4001, "invalid argument")                                   \
    XX(ENOMEM, -4002, "out of memory")                                      \
    XX(ETIMEDOUT, -4003, "operation timed out")                             \
    XX(ECONNREFUSED, -4004, "connection refused")                           \
    XX(ECANCELED, -4005, "operation canceled")                              \
    XX(ENOTLEADER, -4006, "node is not the leader")                         \
    XX(ENOLEADER, -4007, "no leader elected yet")                           \
    XX(ENOTHELD, -4008, "lock not held by this session")                    \
    XX(ESESSION, -4009, "session expired or unknown")                       \
    XX(EWOULDBLOCK, -4010, "lock is held by another client")                \
    XX(EPROTO, -4011, "protocol error")                                     \
    XX(EVERSION, -4012, "protocol version not supported")                   \
    XX(ETOOBIG, -4013, "message or name too large")                         \
    XX(ELIMIT, -4014, "server limit reached")                               \
    XX(ENOTFOUND, -4015, "no such lock or session")                         \
    XX(ESTALE, -4016, "request already acknowledged")                       \
    XX(ELOST, -4017, "lock lost")                                           \
    XX(EIO, -4018, "I/O error")                                             \
    XX(ECLOSED, -4019, "connection closed")                                 \
    XX(EBUSY, -4020, "another operation is in progress")                    \
    XX(EUNAVAIL, -4021, "cluster unavailable")                              \
    XX(EMALFORMED, -4022, "malformed data")                                 \
    XX(ENOSPC, -4023, "server's data disk is full")                        \
    XX(EAUTH, -4024, "unknown or missing credentials")                      \
    XX(EPERM, -4025, "not allowed for this principal")                      \
    XX(ETLS, -4026, "TLS handshake or certificate refused")                 \
    XX(EDEADLK, -4027, "the caller already holds or waits for the lock")

typedef enum {
#define XX(name, val, msg) BATON_##name = (val),
    BATON_ERRNO_MAP(XX)
#undef XX
} baton_errno_t;

/** Human-readable message for a BATON_E* code. Never NULL; static storage. */
BATON_API const char *baton_strerror(int err);

/** The code's name, e.g. "BATON_ENOTLEADER". Never NULL; static storage. */
BATON_API const char *baton_err_name(int err);

#ifdef __cplusplus
}
#endif

#endif /* BATON_DEFS_H */
