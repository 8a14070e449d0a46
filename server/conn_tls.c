/*
 * conn_tls.c -- TLS on the client port (--tls-cert, --tls-key,
 * --tls-client-ca), and the first-bytes check that tells a TLS client from
 * a plaintext one on any node, so that each mismatch gets a clear error
 * instead of a garbled frame (docs/security.md, "The client port").
 *
 * A TLS connection keeps three buffers (struct conn): the bytes read from
 * the socket go through the endpoint into `in` as plaintext; replies are
 * encoded into `out` as plaintext, as on any connection; once per loop turn
 * conn.c seals them into `net`, which is what it writes. The endpoint
 * is proto/tls.h's, fed from memory, so TLS adds no system call.
 */
#include <stdio.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/tls.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/server_int.h"

/* At most one warning about failed handshakes per this many ms. */
#define TLS_LOG_EVERY_MS 1000

int conn_tls_init(struct server *srv)
{
    const struct srv_config *cfg = &srv->cfg;
    struct tls_config tc = {
        .server = true,
        .cert_file = cfg->tls_cert,
        .key_file = cfg->tls_key,
        .ca_file = cfg->tls_client_ca,
        .require_peer_cert = cfg->tls_client_ca != NULL,
        .allow_tls12 = cfg->tls12,
        .lean = true, /* thousands of sessions' connections, mostly idle */
    };
    char err[BATON_ERRMSG_SIZE];
    int rv;

    if (cfg->tls_cert == NULL) return 0;
    rv = tls_ctx_new(&tc, &srv->client_tls, err, sizeof err);
    if (rv != 0) {
        log_error("client TLS: %s", err);
        return rv;
    }
    log_info("client port: TLS 1.3%s%s", cfg->tls12 ? " and 1.2" : " only",
             cfg->tls_client_ca ? ", client certificates required" : "");
    return 0;
}

void conn_tls_free(struct server *srv)
{
    tls_ctx_free(srv->client_tls);
    srv->client_tls = NULL;
}

void conn_tls_start(struct conn *c)
{
    if (c->srv->client_tls == NULL) return;
    c->tls = tls_new(c->srv->client_tls, NULL);
    if (c->tls == NULL) xalloc_failed("a TLS endpoint"); /* server/xmalloc.h's policy */
}

/* A failed handshake, logged at most once a second with a count: a flood
 * of bad clients must not fill the disk with logs. */
static void log_failure(struct conn *c, const char *why)
{
    struct server *srv = c->srv;
    uint64_t now = uv_now(srv->loop);

    srv->tls_failures++;
    metrics_inc_label(M_REFUSALS, REF_TLS);
    if (srv->tls_logged != 0 && now - srv->tls_logged < TLS_LOG_EVERY_MS) return;
    log_warn("conn %llu (%s): TLS refused: %s (%llu refusal(s) in the last second)",
             (unsigned long long)c->id, c->peer, why, (unsigned long long)srv->tls_failures);
    srv->tls_failures = 0;
    srv->tls_logged = now;
}

/* Does the first read look like TLS? Two bytes tell (tls_sniff); a first
 * read of one byte is judged by that byte alone. */
static bool looks_tls(const uint8_t *data, size_t n)
{
    int k = tls_sniff(data, n);
    return k < 0 ? data[0] == 0x16 : k == 1;
}

int conn_tls_input(struct conn *c, const uint8_t *data, size_t n)
{
    int rv;

    if (!c->sniffed) {
        c->sniffed = true;
        if (!looks_tls(data, n)) {
            /* A plaintext client: answer in plaintext, which it can read. */
            tls_free(c->tls);
            c->tls = NULL;
            log_failure(c, "plaintext client on a TLS port");
            conn_send_error(c, 0, BATON_ETLS,
                            "this node serves only TLS: connect with its CA certificate "
                            "(baton_opts.tls_ca_file, batonctl --cacert)");
            return -1;
        }
    }
    rv = tls_recv(c->tls, data, n, &c->in);
    if (rv == BATON_ENOMEM) xalloc_failed("TLS input"); /* server/xmalloc.h's policy */
    if (tls_out_pending(c->tls)) conn_want_flush(c);
    if (rv != 0) {
        if (rv != BATON_ECLOSED) log_failure(c, tls_errmsg(c->tls));
        return -1;
    }
    return 0;
}

bool conn_plain_is_tls(struct conn *c)
{
    if (c->sniffed || c->in.len < 2) return false;
    c->sniffed = true;
    if (!looks_tls(c->in.data, c->in.len)) return false;
    log_failure(c, "TLS client on a plaintext port");
    conn_send_error(c, 0, BATON_ETLS,
                    "this node does not serve TLS: connect without a CA certificate, or "
                    "start the node with --tls-cert and --tls-key");
    return true;
}

const char *conn_tls_peer_cn(const struct conn *c)
{
    return c->tls != NULL ? tls_peer_cn(c->tls) : "";
}

bool conn_tls_ready(const struct conn *c)
{
    return c->tls == NULL || tls_established(c->tls);
}
