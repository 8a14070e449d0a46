/*
 * baton_errno.h -- error codes shared by batond, libbaton and batonctl.
 *
 * Every baton call that can fail returns 0 (or a non-negative count) on
 * success and one of the negative codes below on failure, libuv style. All
 * codes live in baton's reserved range -4001 ... -4099 so that they mean the
 * same on every platform; these are the only error values that ever travel
 * on the wire. Modules translate foreign codes (errno, RAFT_*, MDB_*) into
 * these at their boundary.
 */
#ifndef BATON_ERRNO_H
#define BATON_ERRNO_H

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
    XX(ENOSPC, -4023, "server's data disk is full")

typedef enum {
#define XX(name, val, msg) BATON_##name = (val),
    BATON_ERRNO_MAP(XX)
#undef XX
} baton_errno_t;

/** Human-readable message for a BATON_E* code. Never NULL; static storage. */
const char *baton_strerror(int err);

/** The code's name, e.g. "BATON_ENOTLEADER". Never NULL; static storage. */
const char *baton_err_name(int err);

#endif /* BATON_ERRNO_H */
