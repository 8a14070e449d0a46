/*
 * backup.c -- the snapshot file's header and trailer (proto/backup.h).
 */
#include "proto/backup.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/errmsg.h"

int backup_start(struct buf *out, size_t *start)
{
    static const uint8_t zero[BACKUP_HEADER_LEN];

    *start = out->len;
    return buf_put(out, zero, sizeof zero);
}

int backup_seal(struct buf *out, size_t start, const struct backup_header *h)
{
    uint8_t sum[CRYPTO_SHA256_LEN];
    uint8_t *p = out->data + start;
    int rv;

    memcpy(p, BACKUP_MAGIC, BACKUP_MAGIC_LEN);
    le_put_u32(p + 8, BACKUP_VERSION);
    le_put_u32(p + 12, h->store_format);
    le_put_u64(p + 16, h->index);
    le_put_u64(p + 24, h->term);
    le_put_u64(p + 32, h->digest);
    le_put_u64(p + 40, out->len - start - BACKUP_HEADER_LEN);
    rv = crypto_sha256(p, out->len - start, sum);
    if (rv != 0) return rv;
    return buf_put(out, sum, sizeof sum);
}

/* Set errmsg (if any) and return code. */
static int fail(char *errmsg, int code, const char *what)
{
    if (errmsg != NULL) snprintf(errmsg, BATON_ERRMSG_SIZE, "%s", what);
    return code;
}

int backup_read_header(const uint8_t *file, size_t len, struct backup_header *h, char *errmsg)
{
    if (len < BACKUP_HEADER_LEN)
        return fail(errmsg, BATON_EMALFORMED, "truncated: shorter than the header");
    if (memcmp(file, BACKUP_MAGIC, BACKUP_MAGIC_LEN) != 0)
        return fail(errmsg, BATON_EMALFORMED, "not a baton snapshot file (no BATONSNP magic)");
    h->version = le_get_u32(file + 8);
    h->store_format = le_get_u32(file + 12);
    h->index = le_get_u64(file + 16);
    h->term = le_get_u64(file + 24);
    h->digest = le_get_u64(file + 32);
    h->body_len = le_get_u64(file + 40);
    if (h->version != BACKUP_VERSION) {
        if (errmsg != NULL)
            snprintf(errmsg, BATON_ERRMSG_SIZE,
                     "snapshot file format version %" PRIu32 " (this build reads %d)",
                     h->version, BACKUP_VERSION);
        return BATON_EVERSION;
    }
    return 0;
}

int backup_check(const uint8_t *file, size_t len, struct backup_header *h, const uint8_t **body,
                 char *errmsg)
{
    uint8_t sum[CRYPTO_SHA256_LEN];
    size_t signed_len;
    int rv = backup_read_header(file, len, h, errmsg);

    if (rv != 0) return rv;
    if (h->body_len > len - BACKUP_HEADER_LEN ||
        len - BACKUP_HEADER_LEN - h->body_len < BACKUP_TRAILER_LEN)
        return fail(errmsg, BATON_EMALFORMED, "truncated: shorter than its header says");
    signed_len = BACKUP_HEADER_LEN + (size_t)h->body_len;
    if (len - signed_len != BACKUP_TRAILER_LEN)
        return fail(errmsg, BATON_EMALFORMED, "longer than its header says");
    rv = crypto_sha256(file, signed_len, sum);
    if (rv != 0) return fail(errmsg, rv, "out of memory");
    if (memcmp(sum, file + signed_len, sizeof sum) != 0)
        return fail(errmsg, BATON_EMALFORMED, "SHA-256 mismatch: the file is corrupted");
    *body = file + BACKUP_HEADER_LEN;
    return 0;
}
