/*
 * tls_sock.h -- a blocking socket that speaks baton frames in plaintext or
 * over TLS (proto/tls.h), for the tests' raw clients: the cluster
 * harness's STATUS queries and the tests that send hand-made frames.
 *
 *     struct tls_sock s;
 *     if (tls_sock_connect(&s, port, &cfg, 2000) != 0) ... s.err says why
 *     tls_sock_send(&s, bytes, n); tls_sock_recv_msg(&s, &m, 2000);
 *     tls_sock_close(&s);
 *
 * Every call waits at most its timeout (SO_RCVTIMEO / SO_SNDTIMEO). One
 * thread.
 */
#ifndef BATON_TESTS_TLS_SOCK_H
#define BATON_TESTS_TLS_SOCK_H

#include <stddef.h>

#include "proto/buf.h"
#include "proto/msg.h"
#include "proto/tls.h"

/* How to reach a node: plaintext when ca_file is NULL. */
struct tls_sock_cfg {
    const char *ca_file;   /* verify the node against this CA */
    const char *cert_file; /* client certificate, or NULL */
    const char *key_file;
    const char *name;      /* the name the node's certificate must carry;
                              NULL: "127.0.0.1" */
    const char *ip;        /* the IPv4 or IPv6 address to connect to; NULL: 127.0.0.1 */
    int rcvbuf;            /* > 0: SO_RCVBUF set before connecting (a small
                              receive window, for a slow reader); 0: default */
};

struct tls_sock {
    int fd;
    tls_ctx *ctx;           /* NULL: plaintext */
    tls *t;
    struct buf in;          /* plaintext received, not yet taken */
    char err[256];
};

/* Connect to 127.0.0.1:port (or cfg->ip's) and, with TLS, finish the handshake. 0, or -1
 * with s->err set (s is then closed). */
int tls_sock_connect(struct tls_sock *s, int port, const struct tls_sock_cfg *cfg,
                     int timeout_ms);
/* Send n plaintext bytes (encrypted with TLS). 0 or -1. */
int tls_sock_send(struct tls_sock *s, const void *data, size_t n);
/* Encode m and send it. 0 or -1. */
int tls_sock_send_msg(struct tls_sock *s, const struct msg *m);
/*
 * The next whole frame, decoded into *m (msg_free it). 0; -1 on a timeout,
 * a closed connection or an undecodable frame (s->err says which).
 */
int tls_sock_recv_msg(struct tls_sock *s, struct msg *m, int timeout_ms);
/* Read raw plaintext into s->in until it holds at least n bytes or the
 * connection ends: returns what it holds. */
size_t tls_sock_recv_raw(struct tls_sock *s, size_t n, int timeout_ms);
void tls_sock_close(struct tls_sock *s);

/*
 * Send m and wait for the frame that answers it (the same req_id),
 * skipping pushes and other replies. 0 with *reply filled (msg_free it),
 * or -1 (s->err says why).
 */
int tls_sock_request(struct tls_sock *s, const struct msg *m, struct msg *reply, int timeout_ms);
/* HELLO with token (NULL: none): 0 when answered HELLO_OK, the code of an
 * ERROR answer, or -1 with no answer. role/principal of HELLO_OK go to
 * *role (if not NULL). */
int tls_sock_hello(struct tls_sock *s, const char *token, int *role);
/* The status of a reply: an ERROR's code, a RESULT's status, else 0. */
int tls_sock_status(const struct msg *reply);

#endif
