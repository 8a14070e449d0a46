/*
 * crypto.c -- SHA-256, random bytes and constant-time comparison over
 * OpenSSL 3. See crypto.h.
 */
#include "proto/crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "baton/baton_defs.h"

int crypto_sha256(const void *data, size_t n, uint8_t out[CRYPTO_SHA256_LEN])
{
    unsigned int len = 0;

    if (EVP_Digest(data, n, out, &len, EVP_sha256(), NULL) != 1 || len != CRYPTO_SHA256_LEN)
        return BATON_ENOMEM;
    return 0;
}

int crypto_random(void *out, size_t n)
{
    return RAND_bytes(out, (int)n) == 1 ? 0 : BATON_EIO;
}

void crypto_hex(const uint8_t *p, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";

    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * n] = '\0';
}

bool crypto_equal(const void *a, const void *b, size_t n)
{
    return CRYPTO_memcmp(a, b, n) == 0;
}
