/*
 * auth.h -- the principals of --auth-file: who may connect, with which
 * role, to which lock names (docs/security.md, "Principals and roles").
 *
 * The file has one principal per line; '#' starts a comment:
 *
 *     NAME ROLE CREDENTIAL [prefixes=P1,P2,...] [max-sessions=N] [max-lock-delay=MS]
 *
 *   NAME        1..64 bytes of [A-Za-z0-9._@:/=+-]; unique in the file
 *   ROLE        admin (everything), client (sessions and locks within its
 *               prefixes, reading its own sessions and its prefixes' locks)
 *               or read (status, lock-info, locks, sessions, watch)
 *   CREDENTIAL  sha256:HEX   the SHA-256 of the principal's bearer token, as
 *                            64 lower-case hex digits (batonctl auth hash
 *                            prints a new token and its line); the token
 *                            itself is never on disk
 *               cert         NAME is the subject CN of a client certificate
 *                            signed by --tls-client-ca
 *   prefixes=   the lock names the principal may use start with one of
 *               these (comma-separated); absent: every name
 *   max-sessions=    sessions the principal may have open at once
 *   max-lock-delay=  the longest lock-delay its acquires may ask for (ms)
 *
 * Tokens are 256-bit random strings made by baton, so their unsalted
 * SHA-256 cannot be searched backwards; a salt only protects secrets a
 * person chose, which baton tokens are not.
 *
 * Pure data: no I/O but reading the file, no loop. Not thread-safe.
 */
#ifndef BATON_SERVER_AUTH_H
#define BATON_SERVER_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/crypto.h"
#include "proto/msg.h"

#define AUTH_MAX_FILE (1u << 20)  /* bytes: a longer file is refused */
#define AUTH_MAX_PREFIXES 32      /* per principal */

struct principal {
    char name[BATON_MAX_PRINCIPAL + 1];
    uint8_t role;                 /* enum msg_role: READ, LOCK (client) or ADMIN */
    bool by_cert;                 /* authenticated by a certificate whose CN is name */
    uint8_t token_hash[CRYPTO_SHA256_LEN]; /* !by_cert: SHA-256 of its token */
    uint64_t key;                 /* a short id of name (auth_key), for session owners */
    uint32_t n_prefixes;          /* 0: every lock name */
    char *prefixes[AUTH_MAX_PREFIXES]; /* owned; NUL-terminated */
    uint16_t prefix_len[AUTH_MAX_PREFIXES];
    uint32_t max_sessions;        /* 0: no cap of its own */
    int64_t max_lock_delay_ms;    /* -1: the server's --max-lock-delay */
};

struct auth {
    struct principal *v;          /* owned */
    size_t n;
    uint64_t digest;              /* the first 8 bytes of the file's SHA-256 */
};

/* The principal of every client of a node without --auth-file: nameless,
 * an admin, every lock name (baton's behaviour before authentication). */
extern const struct principal auth_anonymous;

/*
 * Read and check the whole file. Returns 0 and fills *out (free it with
 * auth_free), or -1 with err (err_size bytes) naming the line and what is
 * wrong; *out is then untouched. A file with no principal is valid (and
 * lets nobody in).
 */
int auth_load(const char *path, struct auth *out, char *err, size_t err_size);
/* The same from the text[0..len) of a file called `what` (in messages). */
int auth_parse(const char *text, size_t len, const char *what, struct auth *out, char *err,
               size_t err_size);
void auth_free(struct auth *a);

/* The principal whose token this is, or NULL. Compares in constant time
 * against every token hash. */
const struct principal *auth_by_token(const struct auth *a, const char *token, size_t n);
/* The certificate principal named cn, or NULL. */
const struct principal *auth_by_cert(const struct auth *a, const char *cn);
/* The principal called name (either credential), or NULL. */
const struct principal *auth_by_name(const struct auth *a, const char *name);

/* May p use lock name[0..n)? */
bool auth_may_use(const struct principal *p, const char *name, size_t n);
/* Does every name starting with prefix[0..n) fall within p's prefixes? */
bool auth_covers_prefix(const struct principal *p, const char *prefix, size_t n);

/* The key of a principal name: 0 for "" (anonymous), else the first 8
 * bytes of its SHA-256 (never 0). */
uint64_t auth_key(const char *name, size_t n);

/* "admin", "client", "read" (or "none") for an enum msg_role. */
const char *auth_role_name(int role);

#endif /* BATON_SERVER_AUTH_H */
