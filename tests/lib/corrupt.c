/*
 * corrupt.c -- damage a record's value in an LMDB data file (corrupt.h).
 */
#include "tests/lib/corrupt.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The whole file in a malloc'd buffer; NULL on failure. */
static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    uint8_t *p = NULL;
    long len;

    if (f == NULL) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
        p = malloc((size_t)len);
        if (p != NULL && fread(p, 1, (size_t)len, f) != (size_t)len) {
            free(p);
            p = NULL;
        }
        *n = (size_t)len;
    }
    fclose(f);
    return p;
}

static void put_le16(uint8_t *p, size_t v)
{
    p[0] = (uint8_t)(v & 0xff);
    p[1] = (uint8_t)((v >> 8) & 0xff);
}

int corrupt_lmdb_value(const char *path, const void *key, size_t klen, size_t vlen, size_t at)
{
    return corrupt_lmdb_value_bits(path, key, klen, vlen, at, 0xff);
}

int corrupt_lmdb_value_bits(const char *path, const void *key, size_t klen, size_t vlen,
                            size_t at, unsigned mask)
{
    uint8_t head[8];
    size_t n = 0, hits = 0;
    uint8_t *p;
    FILE *f;

    if (at >= vlen || vlen > 0xffff || klen > 0xffff) return -1;
    p = slurp(path, &n);
    if (p == NULL) return -1;
    put_le16(head, vlen);
    put_le16(head + 2, 0);
    put_le16(head + 4, 0);
    put_le16(head + 6, klen);
    for (size_t i = 0; i + sizeof head + klen + vlen <= n; i++) {
        if (memcmp(p + i, head, sizeof head) != 0 || memcmp(p + i + 8, key, klen) != 0) continue;
        p[i + 8 + klen + at] ^= (uint8_t)mask;
        hits++;
    }
    f = hits ? fopen(path, "r+b") : NULL;
    if (hits && (f == NULL || fwrite(p, 1, n, f) != n)) hits = (size_t)-1;
    if (f != NULL && fclose(f) != 0) hits = (size_t)-1;
    free(p);
    return hits == (size_t)-1 ? -1 : (int)hits;
}
