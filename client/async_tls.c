/*
 * async_tls.c -- the connection's security layer: TLS (proto/tls.h)
 * between the socket and the plaintext buffers, the bearer token, and the
 * checks that recognise a node speaking the other language (TLS against
 * plaintext), so that a mismatch fails at once with a clear message
 * instead of as a timeout.
 *
 * With TLS (baton_opts.tls_ca_file) every connection gets an endpoint
 * right after connect() (baton__tls_begin), verifying the node's
 * certificate against the CA and the host of the address dialled.
 * async_conn.c's buffers keep their meaning: ac->out holds the plaintext
 * frames to send, ac->in the plaintext received. Writing first moves
 * ac->out into the endpoint (baton__tls_wrap; before the handshake is over
 * the endpoint keeps it, and encrypts it only once the node is verified)
 * and the endpoint's ciphertext into ac->net, which is what goes to the
 * socket. Bytes read are decrypted into ac->in (baton__tls_unwrap).
 *
 * Telling the languages apart: a TLS node's first bytes are a TLS record,
 * a plaintext node's a baton frame, and tls_sniff tells which. A TLS
 * client whose node answers in plaintext reads that answer as a frame --
 * batond sends ERROR(BATON_ETLS, "this node does not serve TLS") and
 * closes -- and quotes it. A plaintext client whose node answers with a
 * TLS record fails at once (batond itself answers such a client with a
 * plaintext ERROR, which async_conn.c takes like any refusal of HELLO).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "client/async_int.h"

/* ---- the context's configuration ------------------------------------------------ */

/* Copy the token and load the TLS files of o (baton_async_new). Returns 0,
 * or BATON_EINVAL / BATON_ENOMEM with a message in err. On error the
 * caller frees what was set up with baton__tls_free. */
int baton__tls_setup(baton_async_t *ac, const baton_opts *o, char *err, size_t err_size)
{
    struct tls_config cfg = {
        .ca_file = o->tls_ca_file, .cert_file = o->tls_cert_file, .key_file = o->tls_key_file};

    if (o->token != NULL && o->token[0] != '\0') {
        if (strlen(o->token) > BATON_MAX_TOKEN) {
            snprintf(err, err_size, "the token is longer than %d bytes", BATON_MAX_TOKEN);
            return BATON_EINVAL;
        }
        ac->token = strdup(o->token);
        if (ac->token == NULL) {
            snprintf(err, err_size, "out of memory");
            return BATON_ENOMEM;
        }
    }
    if (o->tls_ca_file == NULL) {
        /* A certificate alone would silently mean plaintext: refuse it. */
        if (o->tls_cert_file != NULL || o->tls_key_file != NULL) {
            snprintf(err, err_size, "tls_cert_file and tls_key_file need tls_ca_file "
                                    "(TLS is on only with a CA file)");
            return BATON_EINVAL;
        }
        return 0;
    }
    if (o->tls_ca_file[0] == '\0') {
        /* An empty path is a configuration mistake, not a wish for plaintext. */
        snprintf(err, err_size, "tls_ca_file is empty (NULL means no TLS)");
        return BATON_EINVAL;
    }
    ac->tls_cert_set = o->tls_cert_file != NULL;
    return tls_ctx_new(&cfg, &ac->tls_ctx, err, err_size);
}

void baton__tls_free(baton_async_t *ac)
{
    tls_ctx_free(ac->tls_ctx);
    ac->tls_ctx = NULL;
    free(ac->token);
    ac->token = NULL;
    buf_free(&ac->net);
}

/* ---- one connection ------------------------------------------------------------- */

/* The socket is connected: with TLS, a new endpoint for the host dialled,
 * its ClientHello waiting to be written. 0 or BATON_ENOMEM. */
int baton__tls_begin(baton_async_t *ac)
{
    if (ac->tls_ctx == NULL) return 0;
    ac->tls = tls_new(ac->tls_ctx, ac->cur_host);
    return ac->tls != NULL ? 0 : BATON_ENOMEM;
}

/* The connection is gone: free its endpoint and what it had not sent. */
void baton__tls_end(baton_async_t *ac)
{
    tls_free(ac->tls);
    ac->tls = NULL;
    buf_reset(&ac->net);
    ac->plain_answer = false;
}

/* Move the plaintext queued in ac->out into the endpoint, and what the
 * endpoint has for the network into ac->net. 0, or an error with the
 * connection's message set. */
int baton__tls_wrap(baton_async_t *ac)
{
    int rv = tls_seal(ac->tls, &ac->out, &ac->net);

    if (rv != 0)
        baton__conn_err(ac, "TLS", rv == BATON_ENOMEM ? "out of memory" : tls_errmsg(ac->tls));
    return rv;
}

/* Write what the endpoint has left for the node -- the alert that says
 * why we hang up -- without waiting: the connection is about to close. */
void baton__send_alert(baton_async_t *ac)
{
    if (ac->tls == NULL || ac->fd < 0 || tls_out(ac->tls, &ac->net) != 0 || ac->net.len == 0)
        return;
    (void)send(ac->fd, ac->net.data, ac->net.len, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/*
 * A TLS connection's node answered in plaintext: it does not serve TLS.
 * Its answer is read as a frame, to quote it; once the frame is whole (or
 * the bytes are no frame at all) the connection is refused with
 * BATON_ETLS. Returns 0 while more bytes are needed.
 */
static int plain_answer(baton_async_t *ac, const uint8_t *p, size_t n)
{
    char why[BATON_MAX_ERRMSG + 128];
    size_t flen;
    struct msg m;
    int rv;

    ac->plain_answer = true;
    if (buf_put(&ac->in, p, n) != 0) {
        baton__conn_err(ac, "read", "out of memory");
        return BATON_ENOMEM;
    }
    rv = proto_frame_check(ac->in.data, ac->in.len, &flen);
    if (rv == 0) return 0;
    if (rv > 0 && proto_decode(ac->in.data, flen, &m) == 0) {
        if (m.type == MSG_ERROR)
            snprintf(why, sizeof why, "the node does not serve TLS; it answered in plaintext: "
                     "%s: %.*s", baton_err_name(m.u.error.code), (int)m.u.error.message.n,
                     m.u.error.message.p ? m.u.error.message.p : "");
        else
            snprintf(why, sizeof why, "the node does not serve TLS; it answered in plaintext "
                     "(%s)", msg_type_name(m.type));
        msg_free(&m);
    } else {
        snprintf(why, sizeof why, "the node's answer is neither TLS nor a baton frame");
    }
    baton__conn_err(ac, "TLS", why);
    return BATON_ETLS;
}

/* The endpoint failed on the node's bytes: say why. A failure after the
 * handshake is the node refusing this client (its alert), most often for
 * want of a client certificate. */
static void tls_failed(baton_async_t *ac, bool was_up)
{
    char why[BATON_ERRMSG_SIZE];

    if (!was_up)
        snprintf(why, sizeof why, "%s", tls_errmsg(ac->tls));
    else
        snprintf(why, sizeof why, "the node refused this client: %s%s", tls_errmsg(ac->tls),
                 ac->tls_cert_set ? "" : " (no client certificate is configured)");
    baton__conn_err(ac, "TLS", why);
    baton__send_alert(ac);
}

/*
 * n bytes read from a TLS connection: decrypt them into ac->in (the first
 * ones may show a plaintext node instead). Returns 0 (maybe with nothing
 * new in ac->in: the handshake goes on), BATON_ETLS (the node's certificate
 * was refused, it refused ours, or it does not serve TLS), BATON_ECLOSED
 * (the node closed the TLS session) or BATON_ENOMEM; the connection's
 * message is set.
 */
int baton__tls_unwrap(baton_async_t *ac, const uint8_t *p, size_t n)
{
    bool first = ac->rx_bytes == 0, was_up = tls_established(ac->tls);
    int rv;

    ac->rx_bytes += n;
    if (ac->plain_answer || (first && tls_sniff(p, n) == 0)) return plain_answer(ac, p, n);
    rv = tls_recv(ac->tls, p, n, &ac->in);
    if (rv == BATON_ETLS) {
        tls_failed(ac, was_up);
    } else if (rv == BATON_ECLOSED) {
        baton__conn_err(ac, "read", "the node closed the TLS connection");
    } else if (rv != 0) {
        baton__conn_err(ac, "read", "out of memory");
    } else if (tls_out_pending(ac->tls)) {
        /* The handshake's next flight, or HELLO now that it is over. */
        baton__want_write(ac);
    }
    return rv;
}

/* A plaintext connection received n more bytes, at the end of ac->in. If
 * they are the node's first and start a TLS record, the node serves TLS
 * only: BATON_ETLS (the message set). Else 0. */
int baton__plain_check(baton_async_t *ac, size_t n)
{
    bool first = ac->rx_bytes == 0;

    ac->rx_bytes += n;
    if (!first || tls_sniff(ac->in.data, ac->in.len) != 1) return 0;
    baton__conn_err(ac, "TLS", "the node answered with TLS, and this client is not "
                               "configured for TLS (no CA file)");
    return BATON_ETLS;
}
