/*
 * backup.h -- the file `batonctl snapshot save` writes and `batond
 * --restore` reads (docs/operations.md, "Backup and restore"). No I/O: the
 * leader builds the file in memory and streams its bytes in SNAPSHOT_CHUNK
 * messages (proto/msg.h); batonctl writes them as they come and checks the
 * whole file before it keeps it.
 *
 * Layout (integers little-endian):
 *
 *     offset  size
 *          0     8  magic "BATONSNP"
 *          8     4  u32 file format version (BACKUP_VERSION)
 *         12     4  u32 store format of the body (storage/store_int.h)
 *         16     8  u64 applied index of the state (the old cluster's)
 *         24     8  u64 raft term of the leader that took it
 *         32     8  u64 state digest at that index (storage/store.h)
 *         40     8  u64 body length N
 *         48     N  body: the store's snapshot bytes (store_snapshot),
 *                   deterministic: equal states give equal bodies
 *     48 + N    32  SHA-256 of every byte before it
 *
 * The header repeats what the body's own header says (format, index,
 * digest) so that `batonctl snapshot info` can print it without the store
 * code; batond --restore checks that both agree.
 */
#ifndef BATON_PROTO_BACKUP_H
#define BATON_PROTO_BACKUP_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/crypto.h"

#define BACKUP_MAGIC "BATONSNP"
#define BACKUP_MAGIC_LEN 8
#define BACKUP_VERSION 1
#define BACKUP_HEADER_LEN 48
#define BACKUP_TRAILER_LEN CRYPTO_SHA256_LEN
/* The bytes of a file with an empty body: the least a file can have. */
#define BACKUP_MIN_LEN (BACKUP_HEADER_LEN + BACKUP_TRAILER_LEN)

struct backup_header {
    uint32_t version;        /* BACKUP_VERSION */
    uint32_t store_format;
    uint64_t index;
    uint64_t term;
    uint64_t digest;
    uint64_t body_len;
};

/*
 * Build a file in out: backup_start appends BACKUP_HEADER_LEN placeholder
 * bytes (the body is then appended by the caller, e.g. store_snapshot);
 * backup_seal fills the header at `start` (the offset backup_start
 * returned in *start) from h -- version and body_len are set by it -- and
 * appends the SHA-256 trailer. Both return 0 or BATON_ENOMEM.
 */
int backup_start(struct buf *out, size_t *start);
int backup_seal(struct buf *out, size_t start, const struct backup_header *h);

/*
 * Read the header of file[0..len) (len may be the whole file or just its
 * first BACKUP_HEADER_LEN bytes) into *h. Returns 0, BATON_EMALFORMED (too
 * short, not a baton snapshot file) or BATON_EVERSION (a file format
 * version this build does not read); errmsg (BATON_ERRMSG_SIZE bytes, may
 * be NULL) says which.
 */
int backup_read_header(const uint8_t *file, size_t len, struct backup_header *h, char *errmsg);

/*
 * Check a whole file: its header (as backup_read_header), its length
 * (header + body_len + trailer, no more, no less) and its SHA-256. On 0,
 * *h is its header and *body points at the body inside file (body_len
 * bytes). Returns 0, BATON_EMALFORMED (truncated, too long, checksum
 * mismatch, bad magic), BATON_EVERSION, or BATON_ENOMEM; errmsg says
 * which.
 */
int backup_check(const uint8_t *file, size_t len, struct backup_header *h, const uint8_t **body,
                 char *errmsg);

#endif /* BATON_PROTO_BACKUP_H */
