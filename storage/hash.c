/*
 * hash.c -- FNV-1a 64 (store.h gives the parameters) and the state digest
 * that chains every applied entry (store.h, store_digest): the two hashes
 * apply.c and check.c take.
 */
#include "proto/buf.h"
#include "storage/store_int.h"

/* FNV-1a 64-bit prime (the offset basis is STORE_FNV64_OFFSET). */
#define FNV64_PRIME 0x100000001b3ull

uint64_t store__fnv1a64(uint64_t h, const void *data, size_t n)
{
    const uint8_t *p = data;

    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= FNV64_PRIME;
    }
    return h;
}

uint64_t store__digest_next(uint64_t prev, uint64_t index, const void *data, size_t len)
{
    uint8_t head[16];
    uint64_t h;

    le_put_u64(head, prev);
    le_put_u64(head + 8, index);
    h = store__fnv1a64(STORE_FNV64_OFFSET, head, sizeof head);
    if (data != NULL) h = store__fnv1a64(h, data, len);
    return h;
}
