/*
 * crypto.h -- the few cryptographic primitives baton needs besides TLS
 * (proto/tls.h): SHA-256, random bytes from the operating system's CSPRNG,
 * and a comparison that takes the same time whatever the bytes. OpenSSL 3
 * does the work (proto/crypto.c). No state; any thread.
 */
#ifndef BATON_PROTO_CRYPTO_H
#define BATON_PROTO_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CRYPTO_SHA256_LEN 32
#define CRYPTO_SHA256_HEX (2 * CRYPTO_SHA256_LEN) /* hex digits, without the NUL */

/* SHA-256 of data[0..n). Returns 0, or BATON_ENOMEM. */
int crypto_sha256(const void *data, size_t n, uint8_t out[CRYPTO_SHA256_LEN]);

/* n random bytes from the OS CSPRNG. Returns 0, or BATON_EIO. */
int crypto_random(void *out, size_t n);

/* Lower-case hex of p[0..n) into out (2n + 1 bytes, NUL-terminated). */
void crypto_hex(const uint8_t *p, size_t n, char *out);

/* Do a and b (n bytes each) hold the same bytes? In constant time. */
bool crypto_equal(const void *a, const void *b, size_t n);

#endif /* BATON_PROTO_CRYPTO_H */
