/*
 * peer_cert.c -- a node checks its own raft certificate as its peers will.
 * See peer_cert.h.
 */
#include "raft/peer_cert.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "proto/errmsg.h"
#include "raft/peer_hello.h"

/* Write the message into errmsg (BATON_ERRMSG_SIZE bytes), cut short if
 * the file names are long. */
static void say(char *errmsg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(char *errmsg, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(errmsg, BATON_ERRMSG_SIZE, fmt, ap);
    va_end(ap);
}

/* Move what `from` has for its peer into `to`; 0 or the error of either. */
static int pass(tls *from, tls *to, struct buf *wire, struct buf *plain)
{
    int rv;

    buf_reset(wire);
    if ((rv = tls_out(from, wire)) != 0) return rv;
    return wire->len > 0 ? tls_recv(to, wire->data, wire->len, plain) : 0;
}

/* Run the handshake between c and s; 0, or the error of the side that
 * refused (its tls_errmsg says why). A TLS 1.3 handshake takes three
 * flights; eight rounds leave room for 1.2. */
static int handshake(tls *c, tls *s, tls **failed)
{
    struct buf wire = {0}, plain = {0};
    int rv = 0;

    for (int round = 0; round < 8 && rv == 0; round++) {
        if (tls_established(c) && tls_established(s)) break;
        if ((rv = pass(c, s, &wire, &plain)) != 0) *failed = s;
        if (rv == 0 && (rv = pass(s, c, &wire, &plain)) != 0) *failed = c;
    }
    if (rv == 0 && !(tls_established(c) && tls_established(s))) {
        *failed = NULL;
        rv = BATON_ETLS;
    }
    buf_free(&wire);
    buf_free(&plain);
    return rv;
}

int peer_cert_check(tls_ctx *server, tls_ctx *client, uint32_t self_id,
                    const struct node_peer_tls *cfg, char *errmsg)
{
    tls *c = tls_new(client, NULL), *s = tls_new(server, NULL), *failed = NULL;
    char want[PEER_CN_MAX];
    int rv;

    if (c == NULL || s == NULL) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "out of memory for TLS");
        rv = BATON_ENOMEM;
        goto out;
    }
    rv = handshake(c, s, &failed);
    if (rv != 0) {
        say(errmsg, "peer TLS: the other nodes would refuse the certificate '%s' (--peer-ca '%s'): %s",
            cfg->cert_file, cfg->ca_file,
            failed != NULL ? tls_errmsg(failed) : "the handshake did not finish");
        rv = BATON_EINVAL;
        goto out;
    }
    if (strcmp(tls_peer_cn(s), peer_cn_of(self_id, want)) != 0) {
        say(errmsg, "peer TLS: the certificate '%s' names CN '%s'; node %u needs one whose "
                    "subject CN is '%s'",
            cfg->cert_file, tls_peer_cn(s), self_id, want);
        rv = BATON_EINVAL;
    }
out:
    tls_free(c);
    tls_free(s);
    return rv;
}
