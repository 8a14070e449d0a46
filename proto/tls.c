/*
 * tls.c -- TLS over memory buffers with OpenSSL 3. See tls.h.
 *
 * Each endpoint is an SSL object between two memory BIOs: `rbio` holds the
 * bytes received from the network that OpenSSL has not read yet, `wbio`
 * the bytes OpenSSL produced for the network. Plaintext handed to
 * tls_send before the handshake is over waits in `early` (it is not 0-RTT
 * data: it is encrypted only once the peer is verified).
 */
#include "proto/tls.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"

struct tls_ctx {
    SSL_CTX *ssl;
    bool server;
};

struct tls {
    SSL *ssl;
    BIO *rbio, *wbio;         /* owned by ssl */
    struct buf early;         /* plaintext sent before the handshake ended */
    bool established;
    int failed;               /* 0, or the error every later call returns */
    char cn[TLS_MAX_CN + 1];
    char err[200];
};

/* The most useful text of OpenSSL's error queue, which is then emptied. */
static void ssl_reason(char *dst, size_t n)
{
    unsigned long e = ERR_get_error(), last = e;

    while (e != 0) {
        last = e;
        e = ERR_get_error();
    }
    if (last == 0)
        snprintf(dst, n, "unknown TLS error");
    else
        ERR_error_string_n(last, dst, n);
}

static int ctx_fail(SSL_CTX *s, char *err, size_t n, const char *what, const char *file)
{
    char why[160];

    ssl_reason(why, sizeof why);
    snprintf(err, n, "%s '%s': %s", what, file, why);
    SSL_CTX_free(s);
    return BATON_EINVAL;
}

int tls_ctx_new(const struct tls_config *cfg, tls_ctx **out, char *err, size_t n)
{
    SSL_CTX *s;
    tls_ctx *c;

    *out = NULL;
    ERR_clear_error();
    if (cfg->server && cfg->cert_file == NULL) {
        snprintf(err, n, "a TLS server needs a certificate and a key");
        return BATON_EINVAL;
    }
    if (!cfg->server && cfg->ca_file == NULL) {
        snprintf(err, n, "a TLS client needs a CA file to verify the server");
        return BATON_EINVAL;
    }
    if ((cfg->cert_file == NULL) != (cfg->key_file == NULL)) {
        snprintf(err, n, "a certificate needs its key and a key its certificate");
        return BATON_EINVAL;
    }
    s = SSL_CTX_new(cfg->server ? TLS_server_method() : TLS_client_method());
    if (s == NULL) {
        snprintf(err, n, "out of memory for a TLS context");
        return BATON_ENOMEM;
    }
    SSL_CTX_set_min_proto_version(s, cfg->allow_tls12 ? TLS1_2_VERSION : TLS1_3_VERSION);
    SSL_CTX_set_options(s, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET);
    SSL_CTX_set_num_tickets(s, 0);
    /* Give an idle connection's 16 KiB+ record buffers back: a node with
     * 10,000 idle sessions would otherwise hold ~35 KiB per connection. */
    if (cfg->lean) SSL_CTX_set_mode(s, SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_session_cache_mode(s, SSL_SESS_CACHE_OFF);
    if (cfg->cert_file != NULL) {
        if (SSL_CTX_use_certificate_chain_file(s, cfg->cert_file) != 1)
            return ctx_fail(s, err, n, "cannot use the certificate", cfg->cert_file);
        if (SSL_CTX_use_PrivateKey_file(s, cfg->key_file, SSL_FILETYPE_PEM) != 1)
            return ctx_fail(s, err, n, "cannot use the key", cfg->key_file);
        if (SSL_CTX_check_private_key(s) != 1)
            return ctx_fail(s, err, n, "the key does not match the certificate", cfg->key_file);
    }
    if (cfg->ca_file != NULL) {
        if (SSL_CTX_load_verify_locations(s, cfg->ca_file, NULL) != 1)
            return ctx_fail(s, err, n, "cannot read the CA file", cfg->ca_file);
        if (cfg->server) {
            STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(cfg->ca_file);
            if (names != NULL) SSL_CTX_set_client_CA_list(s, names);
            SSL_CTX_set_verify(s,
                               SSL_VERIFY_PEER |
                                   (cfg->require_peer_cert ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
                               NULL);
        } else {
            SSL_CTX_set_verify(s, SSL_VERIFY_PEER, NULL);
        }
    }
    c = calloc(1, sizeof *c);
    if (c == NULL) {
        SSL_CTX_free(s);
        snprintf(err, n, "out of memory for a TLS context");
        return BATON_ENOMEM;
    }
    c->ssl = s;
    c->server = cfg->server;
    *out = c;
    return 0;
}

void tls_ctx_free(tls_ctx *ctx)
{
    if (ctx == NULL) return;
    SSL_CTX_free(ctx->ssl);
    free(ctx);
}

/* Make the client check that the server's certificate names `name`: an
 * IP address literal against its IP SANs, else a DNS name. */
static int set_verify_name(SSL *ssl, const char *name)
{
    unsigned char ip[16];
    X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);

    if (inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1)
        return X509_VERIFY_PARAM_set1_ip_asc(vp, name) == 1 ? 0 : -1;
    X509_VERIFY_PARAM_set_hostflags(vp, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (SSL_set1_host(ssl, name) != 1) return -1;
    return SSL_set_tlsext_host_name(ssl, name) == 1 ? 0 : -1;
}

static int fail(tls *t, int code, const char *fmt, const char *detail)
{
    if (t->failed == 0) {
        snprintf(t->err, sizeof t->err, fmt, detail);
        t->failed = code;
    }
    return t->failed;
}

tls *tls_new(tls_ctx *ctx, const char *verify_name)
{
    tls *t = calloc(1, sizeof *t);

    if (t == NULL) return NULL;
    ERR_clear_error();
    t->ssl = SSL_new(ctx->ssl);
    t->rbio = BIO_new(BIO_s_mem());
    t->wbio = BIO_new(BIO_s_mem());
    if (t->ssl == NULL || t->rbio == NULL || t->wbio == NULL) goto oom;
    BIO_set_mem_eof_return(t->rbio, -1);
    SSL_set_bio(t->ssl, t->rbio, t->wbio);
    if (ctx->server) {
        SSL_set_accept_state(t->ssl);
    } else {
        if (verify_name != NULL && set_verify_name(t->ssl, verify_name) != 0) {
            SSL_free(t->ssl);
            free(t);
            return NULL;
        }
        SSL_set_connect_state(t->ssl);
        (void)SSL_do_handshake(t->ssl); /* the ClientHello, into wbio */
    }
    return t;
oom:
    SSL_free(t->ssl); /* NULL-safe; the BIOs are not attached yet */
    BIO_free(t->rbio);
    BIO_free(t->wbio);
    free(t);
    return NULL;
}

void tls_free(tls *t)
{
    if (t == NULL) return;
    SSL_free(t->ssl); /* frees both BIOs */
    buf_free(&t->early);
    free(t);
}

/* Why the handshake failed: the certificate verdict when there is one. */
static int handshake_failed(tls *t)
{
    long v = SSL_get_verify_result(t->ssl);
    char why[160];

    if (v != X509_V_OK) {
        ERR_clear_error();
        return fail(t, BATON_ETLS, "peer certificate refused: %s",
                    X509_verify_cert_error_string(v));
    }
    ssl_reason(why, sizeof why);
    return fail(t, BATON_ETLS, "TLS handshake failed: %s", why);
}

static void read_peer_cn(tls *t)
{
    X509 *peer = SSL_get1_peer_certificate(t->ssl);
    int len;

    t->cn[0] = '\0';
    if (peer == NULL) return;
    len = X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, t->cn,
                                    sizeof t->cn);
    if (len < 0 || (size_t)len >= sizeof t->cn || memchr(t->cn, '\0', (size_t)len) != NULL)
        t->cn[0] = '\0'; /* none, truncated, or with an embedded NUL: no name */
    X509_free(peer);
}

/* Encrypt plaintext into wbio. With memory BIOs a write never waits. */
static int encrypt(tls *t, const void *data, size_t n)
{
    size_t done;

    while (n > 0) {
        if (SSL_write_ex(t->ssl, data, n, &done) != 1) {
            char why[160];
            ssl_reason(why, sizeof why);
            return fail(t, BATON_ETLS, "TLS write failed: %s", why);
        }
        data = (const uint8_t *)data + done;
        n -= done;
    }
    return 0;
}

static int handshake(tls *t)
{
    int rv;

    ERR_clear_error();
    rv = SSL_do_handshake(t->ssl);

    if (rv == 1) {
        t->established = true;
        read_peer_cn(t);
        if (t->early.len > 0) {
            rv = encrypt(t, t->early.data, t->early.len);
            buf_free(&t->early);
            return rv;
        }
        return 0;
    }
    switch (SSL_get_error(t->ssl, rv)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        return 0;
    default:
        return handshake_failed(t);
    }
}

int tls_recv(tls *t, const void *data, size_t n, struct buf *plain)
{
    int rv;

    if (t->failed) return t->failed;
    ERR_clear_error(); /* SSL_get_error reads the queue: it must hold only ours */
    if (n > 0 && BIO_write(t->rbio, data, (int)n) != (int)n)
        return fail(t, BATON_ENOMEM, "%s", "out of memory for TLS input");
    if (!t->established) {
        rv = handshake(t);
        if (rv != 0 || !t->established) return rv;
    }
    for (;;) {
        size_t got = 0;
        /* The plaintext is never longer than the ciphertext still to be
         * read, so reserve that much (not a whole record's 16 KiB, which a
         * caller that frees its empty buffers would allocate per read). */
        size_t want = BIO_ctrl_pending(t->rbio) + (size_t)SSL_pending(t->ssl);

        if (buf_reserve(plain, want < 512 ? 512 : want) != 0) return BATON_ENOMEM;
        if (SSL_read_ex(t->ssl, plain->data + plain->len, plain->cap - plain->len, &got) == 1) {
            plain->len += got;
            continue;
        }
        switch (SSL_get_error(t->ssl, 0)) {
        case SSL_ERROR_WANT_READ:
        case SSL_ERROR_WANT_WRITE:
            return 0;
        case SSL_ERROR_ZERO_RETURN:
            return fail(t, BATON_ECLOSED, "%s", "the peer closed the TLS connection");
        default: {
            char why[160];
            ssl_reason(why, sizeof why);
            return fail(t, BATON_ETLS, "TLS read failed: %s", why);
        }
        }
    }
}

int tls_send(tls *t, const void *data, size_t n)
{
    if (t->failed) return t->failed;
    ERR_clear_error();
    if (!t->established) return buf_put(&t->early, data, n);
    return encrypt(t, data, n);
}

int tls_seal(tls *t, struct buf *plain, struct buf *net)
{
    int rv = 0;

    if (plain->len > 0) {
        rv = tls_send(t, plain->data, plain->len);
        if (rv == 0) buf_reset(plain);
    }
    return rv != 0 ? rv : tls_out(t, net);
}

int tls_out(tls *t, struct buf *net)
{
    size_t pending = BIO_ctrl_pending(t->wbio);
    int got;

    if (pending == 0) return 0;
    if (buf_reserve(net, pending) != 0) return BATON_ENOMEM;
    got = BIO_read(t->wbio, net->data + net->len, (int)pending);
    if (got > 0) net->len += (size_t)got;
    return 0;
}

bool tls_out_pending(const tls *t)
{
    return BIO_ctrl_pending(t->wbio) > 0;
}

bool tls_established(const tls *t)
{
    return t->established && !t->failed;
}

const char *tls_errmsg(const tls *t)
{
    return t->err;
}

const char *tls_peer_cn(const tls *t)
{
    return t->established ? t->cn : "";
}

int tls_sniff(const void *data, size_t n)
{
    const uint8_t *p = data;

    if (n < 2) return -1;
    return (p[0] == 0x16 || p[0] == 0x15) && p[1] == 0x03;
}
