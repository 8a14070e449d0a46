/*
 * tls.h -- TLS over memory buffers: one TLS endpoint that is fed the bytes
 * a socket received and hands back the bytes to write to it, so that the
 * caller keeps its own I/O (libuv streams in batond and in the raft
 * transport, a non-blocking fd in libbaton). OpenSSL 3 does the work;
 * proto/tls.c and proto/crypto.c are the only files that include an
 * OpenSSL header.
 *
 * Policy, the same everywhere: TLS 1.3 only, unless the configuration
 * allows 1.2 as well; the peer's certificate chain is verified against the
 * configured CA file; a client also checks the server's certificate names
 * the host name or IP address it dialled (unless told not to: the raft
 * transport checks a node id instead). No session tickets, no
 * renegotiation, no compression.
 *
 * Threads: a tls_ctx may be shared by endpoints of one thread; an endpoint
 * is used by one thread at a time. Nothing here blocks or does I/O.
 *
 * Errors: every call that can fail returns 0 or a negative BATON_* code
 * (include/baton/baton_defs.h): BATON_ENOMEM, BATON_EINVAL (unreadable or
 * mismatched certificate / key / CA files: the message says which), and
 * BATON_ETLS (the handshake failed, the peer's certificate was refused, or
 * a record could not be decrypted). tls_ctx_new writes its message into
 * `err`; an endpoint keeps the message of its failure (tls_errmsg).
 */
#ifndef BATON_PROTO_TLS_H
#define BATON_PROTO_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"

/* What a context is made of. The strings are read during tls_ctx_new and
 * not kept. */
struct tls_config {
    const char *ca_file;   /* PEM CA certificates that sign the peer's
                              certificate. Client side: required. Server
                              side: NULL asks for no client certificate. */
    const char *cert_file; /* PEM certificate chain presented to the peer:
                              required on the server side; on the client
                              side NULL presents none */
    const char *key_file;  /* its PEM private key (with cert_file) */
    bool server;           /* the accepting side */
    bool require_peer_cert;/* server side: refuse a client without a
                              certificate signed by ca_file */
    bool allow_tls12;      /* accept TLS 1.2 too; else 1.3 only */
    bool lean;             /* give an idle endpoint's record buffers back
                              (about 20 KiB each) at the price of a malloc per
                              record: for servers of many mostly idle
                              connections */
};

typedef struct tls_ctx tls_ctx;
typedef struct tls tls;

/*
 * A new context. Returns 0 and *out, or BATON_EINVAL / BATON_ENOMEM with
 * a message in err (err_size bytes, NUL-terminated) naming the file and
 * what is wrong with it. The caller owns *out and frees it with
 * tls_ctx_free after every endpoint made from it.
 */
int tls_ctx_new(const struct tls_config *cfg, tls_ctx **out, char *err, size_t err_size);
void tls_ctx_free(tls_ctx *ctx); /* NULL-safe */

/*
 * A new endpoint of ctx, NULL when out of memory. Client side:
 * `verify_name` is the host name or IP address the server's certificate
 * must name (copied); NULL checks no name. Ignored on the server side.
 * The client starts its handshake at once: its ClientHello is waiting in
 * tls_out.
 */
tls *tls_new(tls_ctx *ctx, const char *verify_name);
void tls_free(tls *t); /* NULL-safe */

/*
 * Bytes received from the peer: advance the handshake and append the
 * plaintext they carry to `plain`. Returns 0 (possibly with nothing
 * appended: more bytes are needed) or an error; after an error the
 * endpoint is dead, tls_errmsg says why, and tls_out may still hold an
 * alert worth sending before the socket is closed.
 */
int tls_recv(tls *t, const void *data, size_t n, struct buf *plain);

/*
 * Plaintext to send: encrypted at once when the handshake is over, else
 * kept and encrypted when it completes. Returns 0, BATON_ENOMEM, or the
 * endpoint's earlier error.
 */
int tls_send(tls *t, const void *data, size_t n);

/*
 * tls_send of plain's bytes, then tls_out into net: a connection's
 * plaintext output sealed into the bytes to write. plain is emptied (its
 * memory kept) when its bytes were taken. Returns 0 or as those two.
 */
int tls_seal(tls *t, struct buf *plain, struct buf *net);

/* The bytes to write to the peer: appended to `net` and dropped from the
 * endpoint. Returns 0 or BATON_ENOMEM (then nothing was taken). */
int tls_out(tls *t, struct buf *net);
/* Are bytes waiting for tls_out? */
bool tls_out_pending(const tls *t);

/* Is the handshake over (and the peer's certificate accepted)? */
bool tls_established(const tls *t);

/* The message of the endpoint's failure; "" while there is none. Owned by
 * the endpoint. */
const char *tls_errmsg(const tls *t);

/*
 * The common name (CN) of the subject of the peer's verified certificate,
 * "" when the peer presented none (or the handshake is not over). Owned by
 * the endpoint; at most TLS_MAX_CN bytes.
 */
#define TLS_MAX_CN 128
const char *tls_peer_cn(const tls *t);

/*
 * Does `data` (the first n >= 1 bytes a peer sent) start like a TLS
 * record? A TLS record starts with its content type (handshake: 0x16, or
 * an alert: 0x15) and the major version 3; baton's own frames start with a
 * little-endian length below 2^24 whose second byte is 0x03 only for
 * frames of 768 bytes and more, which no HELLO ever is. Used to tell a
 * plaintext peer from a TLS one and answer each with a clear error.
 * Returns 1 (TLS), 0 (not TLS) or -1 (fewer than 2 bytes: cannot tell).
 */
int tls_sniff(const void *data, size_t n);

#endif /* BATON_PROTO_TLS_H */
