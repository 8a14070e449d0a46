/*
 * admin_tls.c -- batonctl's security options (--cacert, --cert, --key,
 * --token, or their environment variables) and TLS (proto/tls.h) for the
 * blocking connection of admin_conn.c.
 *
 * admin_conn.c reads and writes plaintext through admin_send and
 * admin_recv; with TLS these encrypt and decrypt, and admin_tls_begin has
 * done the handshake -- the node's certificate checked against --cacert
 * and the host of the address dialled -- before HELLO is sent. Every wait
 * is bounded by the caller's deadline.
 *
 * The first bytes a node sends tell whether it speaks TLS (tls_sniff). A
 * node that answers our TLS in plaintext (batond sends ERROR(BATON_ETLS)
 * and closes), and one that answers our plaintext with TLS, both end the
 * connection at once with BATON_ETLS and a message that says so, instead
 * of a timeout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "client/ctl/ctl.h"

/* ---- the options ------------------------------------------------------------- */

void ctl_security_from_env(struct ctl_opts *o)
{
    static const struct {
        const char *var;
        size_t off;
    } env[] = {
        {"BATON_CACERT", offsetof(struct ctl_opts, cacert)},
        {"BATON_CERT", offsetof(struct ctl_opts, cert)},
        {"BATON_KEY", offsetof(struct ctl_opts, key)},
        {"BATON_TOKEN", offsetof(struct ctl_opts, token)},
    };

    for (size_t i = 0; i < sizeof env / sizeof env[0]; i++) {
        const char **field = (const char **)((char *)o + env[i].off);
        const char *v = getenv(env[i].var);
        if (*field == NULL && v != NULL && v[0] != '\0') *field = v;
    }
}

int ctl_security_check(const struct ctl_opts *o, char *err, size_t errlen)
{
    if ((o->cert == NULL) != (o->key == NULL)) {
        snprintf(err, errlen, "--cert and --key (BATON_CERT, BATON_KEY) go together");
        return -1;
    }
    if (o->cert != NULL && o->cacert == NULL) {
        snprintf(err, errlen, "--cert and --key need --cacert (BATON_CACERT): TLS is on "
                              "only with a CA file");
        return -1;
    }
    if (o->token != NULL && strlen(o->token) > BATON_MAX_TOKEN) {
        snprintf(err, errlen, "the token is longer than %d bytes", BATON_MAX_TOKEN);
        return -1;
    }
    return 0;
}

int ctl_security_usable(const struct ctl_opts *o, char *err, size_t errlen)
{
    struct admin_conn probe;
    int rv;

    memset(&probe, 0, sizeof probe);
    rv = admin_tls_setup(&probe, o);
    if (rv != 0) snprintf(err, errlen, "%s", probe.why);
    admin_tls_end(&probe);
    return rv != 0 ? -1 : 0;
}

/* ---- one connection ------------------------------------------------------------ */

/* Write what the TLS endpoint has for the node. */
static int flush_out(struct admin_conn *c, int64_t deadline)
{
    struct buf net = {0};
    int rv = tls_out(c->t, &net);

    if (rv == 0 && net.len > 0) rv = admin_raw_send(c, net.data, net.len, deadline);
    buf_free(&net);
    return rv;
}

int admin_tls_setup(struct admin_conn *c, const struct ctl_opts *o)
{
    struct tls_config cfg = {.ca_file = o->cacert, .cert_file = o->cert, .key_file = o->key};

    if (ctl_security_check(o, c->why, sizeof c->why) != 0) return BATON_EINVAL;
    if (o->cacert == NULL) return 0;
    c->has_cert = o->cert != NULL;
    return tls_ctx_new(&cfg, &c->ctx, c->why, sizeof c->why);
}

int admin_tls_begin(struct admin_conn *c, const char *host, int64_t deadline)
{
    int rv;

    if (c->ctx == NULL) return 0;
    c->t = tls_new(c->ctx, host);
    if (c->t == NULL) return BATON_ENOMEM;
    rv = flush_out(c, deadline);
    while (rv == 0 && !tls_established(c->t)) rv = admin_recv(c, deadline);
    return rv;
}

void admin_tls_end(struct admin_conn *c)
{
    tls_free(c->t);
    c->t = NULL;
    tls_ctx_free(c->ctx);
    c->ctx = NULL;
    c->plain_answer = 0;
}

int admin_send(struct admin_conn *c, const uint8_t *p, size_t n, int64_t deadline)
{
    int rv;

    if (c->t == NULL) return admin_raw_send(c, p, n, deadline);
    rv = tls_send(c->t, p, n);
    if (rv != 0) {
        snprintf(c->why, sizeof c->why, "TLS: %s", tls_errmsg(c->t));
        return rv;
    }
    return flush_out(c, deadline);
}

/* The node answered our TLS in plaintext: quote its answer (whole in c->in,
 * or as much of it as came before it closed). */
static int plain_refusal(struct admin_conn *c)
{
    size_t flen;
    struct msg m;

    if (proto_frame_check(c->in.data, c->in.len, &flen) == 1 &&
        proto_decode(c->in.data, flen, &m) == 0) {
        if (m.type == MSG_ERROR)
            snprintf(c->why, sizeof c->why, "the node does not serve TLS; it answered in "
                     "plaintext: %.*s", (int)m.u.error.message.n,
                     m.u.error.message.p ? m.u.error.message.p : "");
        else
            snprintf(c->why, sizeof c->why, "the node does not serve TLS; it answered in "
                     "plaintext (%s)", msg_type_name(m.type));
        msg_free(&m);
    } else {
        snprintf(c->why, sizeof c->why, "the node does not serve TLS; it answered in plaintext");
    }
    return BATON_ETLS;
}

/* The TLS endpoint failed on the node's bytes. After the handshake that is
 * the node refusing us (its alert), most often for want of a client
 * certificate. */
static void tls_failed(struct admin_conn *c, int was_up)
{
    if (!was_up)
        snprintf(c->why, sizeof c->why, "TLS: %s", tls_errmsg(c->t));
    else
        snprintf(c->why, sizeof c->why, "TLS: the node refused this client: %s%s",
                 tls_errmsg(c->t), c->has_cert ? "" : " (no --cert given)");
}

int admin_recv(struct admin_conn *c, int64_t deadline)
{
    uint8_t tmp[16384];
    size_t got;
    int rv, was_up;

    rv = admin_raw_recv(c, tmp, sizeof tmp, &got, deadline);
    if (rv == BATON_ECLOSED && c->plain_answer) return plain_refusal(c);
    if (rv != 0) return rv;
    if (c->rx == 0) {
        int kind = tls_sniff(tmp, got);
        if (c->t != NULL && kind == 0) c->plain_answer = 1;
        if (c->t == NULL && kind == 1) {
            snprintf(c->why, sizeof c->why, "the node answered with TLS: it serves TLS only "
                                            "(use --cacert)");
            return BATON_ETLS;
        }
    }
    c->rx += got;
    if (c->t == NULL || c->plain_answer) {
        size_t flen;
        if (buf_put(&c->in, tmp, got) != 0) return BATON_ENOMEM;
        if (c->plain_answer && proto_frame_check(c->in.data, c->in.len, &flen) != 0)
            return plain_refusal(c);
        return 0;
    }
    was_up = tls_established(c->t);
    rv = tls_recv(c->t, tmp, got, &c->in);
    if (rv == BATON_ETLS) {
        tls_failed(c, was_up);
        (void)flush_out(c, deadline); /* the alert that says why we hang up */
        return rv;
    }
    if (rv == 0) rv = flush_out(c, deadline); /* the handshake's next flight */
    return rv;
}
