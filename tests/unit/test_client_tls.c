/*
 * test_client_tls.c -- libbaton's TLS, token and refusals against the fake
 * servers (tests/unit/fake_server.h) in TLS mode, with certificates from
 * server/certs.sh: a handshake and a lock round trip, the token in HELLO,
 * a client certificate presented; a node certificate from another CA, not
 * naming the host dialled, or expired; a plaintext node for a TLS client
 * and a TLS node for a plaintext one; EAUTH on HELLO and EPERM on a
 * request; a refusal while a session is open; redirects and "localhost"
 * over TLS; the blocking API; options baton_async_new refuses; a token
 * over plaintext only to a loopback address, an endpoint's or a
 * redirect's.
 *
 * A refusal must end the open at once: those tests give the client a
 * connect timeout far longer than they wait, and check that the fake saw
 * one connection only.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton.h"
#include "baton/baton_async.h"
#include "baton/baton_defs.h"
#include "proto/msg.h"
#include "tests/lib/certs.h"
#include "tests/lib/files.h"
#include "tests/lib/runner.h"
#include "tests/unit/client_fixture.h"
#include "tests/unit/fake_server.h"

#define LONG_CONNECT_MS 30000 /* the client's connect timeout in refusal tests */
#define REFUSAL_WAIT_MS 10000 /* how long those tests wait for the refusal */

static char certs[PATH_MAX];

/* Path of file NAME in the certificate directory. */
static const char *cert(const char *name)
{
    return certs_path(certs, name);
}

/* A TLS fake presenting certificate NAME.pem (NAME.key), asking for
 * client certificates of ca.pem when `client_ca`. */
static struct fake *tls_fake(const char *name, bool client_ca)
{
    char pem[64], key[64];
    struct fk_tls t = {0};

    snprintf(pem, sizeof pem, "%s.pem", name);
    snprintf(key, sizeof key, "%s.key", name);
    t.cert_file = cert(pem);
    t.key_file = cert(key);
    if (client_ca) {
        t.client_ca = cert("ca.pem");
        t.require = true;
    }
    return fake_start_tls(&t);
}

/* Options for endpoints eps over TLS with CA file `ca` (NULL: plaintext). */
static baton_opts tls_opts(const char *eps, const char *ca)
{
    baton_opts o = {.endpoints = eps, .client_name = "tls-test",
                    .connect_timeout_ms = LONG_CONNECT_MS};

    if (ca != NULL) o.tls_ca_file = cert(ca);
    return o;
}

/* Open a context with o on t and wait for the open callback (at most
 * REFUSAL_WAIT_MS); *out is the context, the record says how it went. */
static struct rec open_with(struct tloop *t, const baton_opts *o, baton_async_t **out)
{
    struct rec r = {0};

    *out = a_new(t, o);
    ASSERT_EQ(baton_async_open(*out, rec_open, &r), 0);
    run_until(t, &r.calls, 1, REFUSAL_WAIT_MS);
    ASSERT_EQ(r.calls, 1);
    return r;
}

/* The open ended with want and a message containing every one of the
 * NULL-terminated words. */
static void expect_refusal(const struct rec *r, int want, ...)
    __attribute__((sentinel));
static void expect_refusal(const struct rec *r, int want, ...)
{
    va_list ap;
    const char *w;

    if (r->status != want)
        FAIL("open: %s (%s), want %s", baton_err_name(r->status), r->err, baton_err_name(want));
    va_start(ap, want);
    while ((w = va_arg(ap, const char *)) != NULL)
        if (strstr(r->err, w) == NULL) FAIL("message '%s' lacks '%s'", r->err, w);
    va_end(ap);
}

/* Open against fake f with o, expect the open to fail with `want` after
 * one connection, and a message naming f's address plus `word`. */
static void refused_once(struct fake *f, const baton_opts *o, int want, const char *word)
{
    struct tloop t;
    baton_async_t *ac;
    struct rec r;

    tloop_init(&t);
    r = open_with(&t, o, &ac);
    expect_refusal(&r, want, f->addr, word, (const char *)NULL);
    ASSERT_EQ(baton_async_pending(ac), 0);
    baton_async_free(ac);
    tloop_done(&t);
    ASSERT_EQ(FK_GET(f, n_conns), 1);
}

/* ---- what works ------------------------------------------------------------ */

TEST(tls_lock_round_trip_with_token)
{
    struct fake *f = tls_fake("node1", false);
    baton_opts o = tls_opts(f->addr, "ca.pem");
    struct tloop t;
    baton_async_t *ac;
    struct rec r;
    char token[BATON_MAX_TOKEN + 1];

    o.token = "0123456789abcdef-the-token";
    tloop_init(&t);
    r = open_with(&t, &o, &ac);
    ASSERT_EQ(r.status, 0);
    r = a_lock(&t, ac, "tls-lock", BATON_WAIT_FOREVER);
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(a_unlock(&t, ac, "tls-lock", r.value), 0);
    a_close(&t, ac);
    tloop_done(&t);
    fk_last_token(f, token, sizeof token);
    ASSERT_STREQ(token, "0123456789abcdef-the-token");
    ASSERT_EQ(FK_GET(f, n_tls_failed), 0);
    ASSERT_EQ(FK_GET(f, n_acquire), 1);
    fake_stop(f);
}

/* No token configured: HELLO carries an empty one. */
TEST(no_token_sends_none)
{
    struct fake *f = fake_start();
    baton_opts o = tls_opts(f->addr, NULL);
    struct tloop t;
    baton_async_t *ac;
    char token[BATON_MAX_TOKEN + 1];

    tloop_init(&t);
    ASSERT_EQ(open_with(&t, &o, &ac).status, 0);
    a_close(&t, ac);
    tloop_done(&t);
    fk_last_token(f, token, sizeof token);
    ASSERT_STREQ(token, "");
    ASSERT_EQ(FK_GET(f, n_hello), 1);
    fake_stop(f);
}

TEST(client_certificate_presented)
{
    struct fake *f = tls_fake("node1", true);
    baton_opts o = tls_opts(f->addr, "ca.pem");
    struct tloop t;
    baton_async_t *ac;
    char cn[TLS_MAX_CN + 1];

    o.tls_cert_file = cert("client.pem");
    o.tls_key_file = cert("client.key");
    tloop_init(&t);
    ASSERT_EQ(open_with(&t, &o, &ac).status, 0);
    ASSERT_EQ(a_lock(&t, ac, "with-cert", BATON_WAIT_TRY).status, 0);
    a_close(&t, ac);
    tloop_done(&t);
    fk_last_cn(f, cn, sizeof cn);
    ASSERT_STREQ(cn, "baton-client");
    fake_stop(f);
}

/* An endpoint "localhost:PORT" is checked against the certificate's DNS
 * name localhost. */
TEST(localhost_checked_as_a_name)
{
    struct fake *f = tls_fake("node1", false), *g = tls_fake("elsewhere", false);
    char ep[64];
    baton_opts o;
    struct tloop t;
    baton_async_t *ac;
    struct rec r;

    snprintf(ep, sizeof ep, "localhost:%u", f->port);
    o = tls_opts(ep, "ca.pem");
    tloop_init(&t);
    ASSERT_EQ(open_with(&t, &o, &ac).status, 0);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);

    snprintf(ep, sizeof ep, "localhost:%u", g->port);
    o = tls_opts(ep, "ca.pem");
    tloop_init(&t);
    r = open_with(&t, &o, &ac);
    expect_refusal(&r, BATON_ETLS, "localhost", "mismatch", (const char *)NULL);
    baton_async_free(ac);
    tloop_done(&t);
    fake_stop(g);
}

/* A redirect is followed over TLS, checked against the redirect's host. */
TEST(redirect_over_tls)
{
    struct fake *fa = tls_fake("node1", false), *fb = tls_fake("node1", false);
    baton_opts o = tls_opts(fa->addr, "ca.pem");
    struct tloop t;
    baton_async_t *ac;
    struct rec r;

    fk_redirect(fa, fb->addr);
    tloop_init(&t);
    ASSERT_EQ(open_with(&t, &o, &ac).status, 0);
    r = a_lock(&t, ac, "redirected", BATON_WAIT_TRY);
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(a_unlock(&t, ac, "redirected", r.value), 0);
    a_close(&t, ac);
    tloop_done(&t);
    ASSERT_EQ(FK_GET(fa, n_redirect), 1);
    ASSERT_EQ(FK_GET(fb, n_open), 1);
    fake_stop(fa);
    fake_stop(fb);
}

/* Every connection gets a fresh handshake: after the node drops them all,
 * the session goes on over a new TLS connection. */
TEST(reconnect_over_tls)
{
    struct fake *f = tls_fake("node1", false);
    baton_opts o = tls_opts(f->addr, "ca.pem");
    struct tloop t;
    baton_async_t *ac;
    struct rec r;

    tloop_init(&t);
    ASSERT_EQ(open_with(&t, &o, &ac).status, 0);
    r = a_lock(&t, ac, "kept", BATON_WAIT_TRY);
    ASSERT_EQ(r.status, 0);
    FK_SET(f, do_drop_all, true);
    run_for(&t, 200);
    ASSERT_EQ(a_lock(&t, ac, "after", BATON_WAIT_TRY).status, 0);
    ASSERT_EQ(a_unlock(&t, ac, "kept", r.value), 0);
    a_close(&t, ac);
    tloop_done(&t);
    ASSERT_EQ(FK_GET(f, n_conns), 2);
    ASSERT_EQ(FK_GET(f, n_open), 1);
    ASSERT_EQ(FK_GET(f, n_tls_failed), 0);
    fake_stop(f);
}

/* ---- refusals: the open fails at once ------------------------------------------ */

TEST(node_certificate_of_another_ca)
{
    struct fake *f = tls_fake("othernode", false);
    baton_opts o = tls_opts(f->addr, "ca.pem");

    refused_once(f, &o, BATON_ETLS, "certificate");
    fake_stop(f);
}

/* The node's certificate names 10.1.2.3 and db.example, not 127.0.0.1. */
TEST(node_certificate_for_another_host)
{
    struct fake *f = tls_fake("elsewhere", false);
    baton_opts o = tls_opts(f->addr, "ca.pem");

    refused_once(f, &o, BATON_ETLS, "mismatch");
    fake_stop(f);
}

TEST(node_certificate_expired)
{
    struct fake *f = tls_fake("expired", false);
    baton_opts o = tls_opts(f->addr, "ca.pem");

    refused_once(f, &o, BATON_ETLS, "expired");
    fake_stop(f);
}

/* A node that asks for a client certificate refuses a client with none,
 * or with one of another CA. */
TEST(client_certificate_missing_or_wrong)
{
    struct fake *f = tls_fake("node1", true);
    baton_opts o = tls_opts(f->addr, "ca.pem");

    refused_once(f, &o, BATON_ETLS, "no client certificate");
    fake_stop(f);
    f = tls_fake("node1", true);
    o = tls_opts(f->addr, "ca.pem");
    o.tls_cert_file = cert("stranger.pem");
    o.tls_key_file = cert("stranger.key");
    refused_once(f, &o, BATON_ETLS, "refused this client");
    fake_stop(f);
}

/* A TLS client and a plaintext node: the node's plaintext ERROR is quoted. */
TEST(tls_client_plaintext_node)
{
    struct fake *f = fake_start();
    baton_opts o = tls_opts(f->addr, "ca.pem");

    refused_once(f, &o, BATON_ETLS, "this node does not serve TLS");
    ASSERT_EQ(FK_GET(f, n_wrong_kind), 1);
    fake_stop(f);
}

/* A plaintext client and a TLS node that answers with a plaintext ERROR
 * (as batond does). */
TEST(plaintext_client_tls_node)
{
    struct fake *f = tls_fake("node1", false);
    baton_opts o = tls_opts(f->addr, NULL);

    refused_once(f, &o, BATON_ETLS, "this node requires TLS");
    ASSERT_EQ(FK_GET(f, n_wrong_kind), 1);
    fake_stop(f);
}

/* A plaintext client and a TLS node that answers with TLS (an alert). */
TEST(plaintext_client_tls_answer)
{
    struct fake *f = tls_fake("node1", false);
    baton_opts o = tls_opts(f->addr, NULL);

    FK_SET(f, tls_alert_plain, true);
    refused_once(f, &o, BATON_ETLS, "answered with TLS");
    fake_stop(f);
}

/* An unknown token: ERROR(BATON_EAUTH) on HELLO ends the open, quoted. */
TEST(eauth_on_hello)
{
    struct fake *f = tls_fake("node1", false);
    baton_opts o = tls_opts(f->addr, "ca.pem");

    o.token = "not-in-the-auth-file";
    fk_hello_error(f, BATON_EAUTH, "unknown token");
    refused_once(f, &o, BATON_EAUTH, "unknown token");
    ASSERT_EQ(FK_GET(f, n_hello), 1);
    fake_stop(f);
}

/* With several endpoints, the first refusal ends the open too. */
TEST(refusal_ends_open_with_other_endpoints)
{
    struct fake *f = tls_fake("node1", false), *g = tls_fake("node1", false);
    char eps[128];
    baton_opts o;

    snprintf(eps, sizeof eps, "%s,%s", f->addr, g->addr);
    o = tls_opts(eps, "ca.pem");
    fk_hello_error(f, BATON_EAUTH, "unknown token");
    fk_hello_error(g, BATON_EAUTH, "unknown token");
    refused_once(f, &o, BATON_EAUTH, "unknown token");
    ASSERT_EQ(FK_GET(g, n_conns), 0);
    fake_stop(f);
    fake_stop(g);
}

/* ---- EPERM: one request refused, the connection goes on ------------------------- */

TEST(eperm_on_acquire)
{
    struct fake *f = fake_start();
    struct tloop t;
    baton_async_t *ac;
    struct rec r;

    tloop_init(&t);
    ac = a_open(&t, f->addr, 0, 0);
    fk_refuse(f, MSG_ACQUIRE, BATON_EPERM, "principal 'bob' may not lock 'x' (prefixes jobs/)");
    r = a_lock(&t, ac, "x", BATON_WAIT_TRY);
    ASSERT_EQ(r.status, BATON_EPERM);
    if (strstr(r.err, "may not lock 'x' (prefixes jobs/)") == NULL) FAIL("message: %s", r.err);
    fk_refuse(f, 0, 0, "");
    ASSERT_EQ(a_lock(&t, ac, "jobs/1", BATON_WAIT_TRY).status, 0);
    a_close(&t, ac);
    tloop_done(&t);
    ASSERT_EQ(FK_GET(f, n_conns), 1);
    fake_stop(f);
}

TEST(eperm_on_open)
{
    struct fake *f = fake_start();
    baton_opts o = tls_opts(f->addr, NULL);
    struct tloop t;
    baton_async_t *ac;
    struct rec r;

    fk_refuse(f, MSG_OPEN_SESSION, BATON_EPERM, "principal 'viewer' (role read) may not");
    tloop_init(&t);
    r = open_with(&t, &o, &ac);
    expect_refusal(&r, BATON_EPERM, "principal 'viewer' (role read) may not", (const char *)NULL);
    baton_async_free(ac);
    tloop_done(&t);
    fake_stop(f);
}

/* ---- a refusal while the session is open ------------------------------------------- */

/* The node refuses reconnections for a while (its auth file changed): the
 * session is kept, calls meanwhile fail with BATON_EUNAVAIL quoting the
 * refusal, and once the node takes the client again all goes on. */
TEST(refusal_while_open_is_retried)
{
    struct fake *f = tls_fake("node1", false);
    baton_opts o = tls_opts(f->addr, "ca.pem");
    struct tloop t;
    baton_async_t *ac;
    struct rec r, r2;
    uint64_t session;

    o.op_timeout_ms = 1000;
    tloop_init(&t);
    ASSERT_EQ(open_with(&t, &o, &ac).status, 0);
    session = baton_async_session_id(ac);
    r = a_lock(&t, ac, "held", BATON_WAIT_TRY);
    ASSERT_EQ(r.status, 0);
    fk_hello_error(f, BATON_EAUTH, "token revoked");
    FK_SET(f, do_drop_all, true);
    run_for(&t, 200);
    r2 = a_lock(&t, ac, "meanwhile", BATON_WAIT_TRY);
    ASSERT_EQ(r2.status, BATON_EUNAVAIL);
    if (strstr(r2.err, "token revoked") == NULL) FAIL("message: %s", r2.err);
    ASSERT_GE(FK_GET(f, n_hello), 3); /* the first, then retries */
    fk_hello_error(f, 0, "");
    ASSERT_EQ(a_lock(&t, ac, "after", BATON_WAIT_TRY).status, 0);
    ASSERT_UEQ(baton_async_session_id(ac), session);
    ASSERT_EQ(a_unlock(&t, ac, "held", r.value), 0);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

/* ---- the blocking API ---------------------------------------------------------------- */

TEST(blocking_over_tls)
{
    struct fake *f = tls_fake("node1", false), *g = tls_fake("othernode", false);
    baton_opts o = tls_opts(f->addr, "ca.pem");
    baton_t *b;
    baton_lock_t *l;

    o.token = "blocking-token";
    ASSERT_EQ(baton_connect(&o, &b), 0);
    ASSERT_EQ(baton_lock(b, "blocking", &l), 0);
    ASSERT_EQ(baton_unlock(l), 0);
    fk_refuse(f, MSG_ACQUIRE, BATON_EPERM, "principal 'blocker' may not lock 'denied'");
    ASSERT_EQ(baton_trylock(b, "denied", &l), BATON_EPERM);
    if (strstr(baton_errmsg(b), "may not lock 'denied'") == NULL)
        FAIL("message: %s", baton_errmsg(b));
    baton_close(b);

    o = tls_opts(g->addr, "ca.pem");
    ASSERT_EQ(baton_connect(&o, &b), BATON_ETLS);
    ASSERT(b == NULL);
    if (strstr(baton_connect_errmsg(), g->addr) == NULL ||
        strstr(baton_connect_errmsg(), "certificate") == NULL)
        FAIL("message: %s", baton_connect_errmsg());
    ASSERT_EQ(FK_GET(g, n_conns), 1);
    fake_stop(f);
    fake_stop(g);
}

/* ---- options refused up front --------------------------------------------------------- */

static void new_refused(const baton_opts *o, const char *word)
{
    baton_async_t *ac = (baton_async_t *)1;
    baton_t *b = (baton_t *)1;

    ASSERT_EQ(baton_async_new(o, &ac), BATON_EINVAL);
    ASSERT(ac == NULL);
    if (strstr(baton_async_new_errmsg(), word) == NULL)
        FAIL("baton_async_new: '%s' lacks '%s'", baton_async_new_errmsg(), word);
    ASSERT_EQ(baton_connect(o, &b), BATON_EINVAL);
    ASSERT(b == NULL);
    if (strstr(baton_connect_errmsg(), word) == NULL)
        FAIL("baton_connect: '%s' lacks '%s'", baton_connect_errmsg(), word);
}

TEST(bad_tls_options)
{
    baton_opts o = tls_opts("127.0.0.1:1", "nonexistent-ca.pem");
    char long_token[BATON_MAX_TOKEN + 2];
    baton_async_t *ac;

    new_refused(&o, "nonexistent-ca.pem");
    o = tls_opts("127.0.0.1:1", "ca.pem");
    o.tls_cert_file = cert("client.pem");
    new_refused(&o, "key");
    o.tls_key_file = cert("node1.key"); /* not client.pem's */
    new_refused(&o, "node1.key");
    o = tls_opts("127.0.0.1:1", NULL);
    o.tls_cert_file = cert("client.pem");
    o.tls_key_file = cert("client.key");
    new_refused(&o, "tls_ca_file");
    o = tls_opts("127.0.0.1:1", NULL);
    o.tls_ca_file = "";
    new_refused(&o, "empty");
    o = tls_opts("127.0.0.1:1", NULL);
    memset(long_token, 't', sizeof long_token - 1);
    long_token[sizeof long_token - 1] = '\0';
    o.token = long_token;
    new_refused(&o, "token");
    o = tls_opts("nowhere", NULL);
    new_refused(&o, "bad endpoint 'nowhere'");

    o = tls_opts("127.0.0.1:1", "ca.pem");
    ASSERT_EQ(baton_async_new(&o, &ac), 0);
    ASSERT_STREQ(baton_async_new_errmsg(), "");
    baton_async_free(ac);
}

/* ---- a token over plaintext ---------------------------------------------- */

/* "0.0.0.0:PORT" for a fake at 127.0.0.1:PORT: an address that is not
 * loopback, which Linux still connects to on this machine (the unspecified
 * address means "this host"), so no packet leaves it. */
static void unspecified_addr(const struct fake *f, char *out, size_t cap)
{
    snprintf(out, cap, "0.0.0.0%s", strrchr(f->addr, ':'));
}

/* Plaintext to a loopback address: the token is sent. */
TEST(plaintext_token_sent_to_loopback)
{
    struct fake *f = fake_start();
    baton_opts o = tls_opts(f->addr, NULL);
    struct tloop t;
    baton_async_t *ac;
    char token[BATON_MAX_TOKEN + 1];

    o.token = "loopback-token";
    tloop_init(&t);
    ASSERT_EQ(open_with(&t, &o, &ac).status, 0);
    a_close(&t, ac);
    tloop_done(&t);
    fk_last_token(f, token, sizeof token);
    ASSERT_STREQ(token, "loopback-token");
    fake_stop(f);
}

/* Plaintext to an address that is not loopback: no HELLO, the open
 * fails at once with BATON_ETLS and says why. */
TEST(plaintext_token_refused_elsewhere)
{
    struct fake *f = fake_start();
    char addr[64];
    baton_opts o;
    struct tloop t;
    baton_async_t *ac;
    struct rec r;

    unspecified_addr(f, addr, sizeof addr);
    o = tls_opts(addr, NULL);
    o.token = "not-for-the-network";
    tloop_init(&t);
    r = open_with(&t, &o, &ac);
    expect_refusal(&r, BATON_ETLS, addr, "in clear", "tls_ca_file", (const char *)NULL);
    baton_async_free(ac);
    tloop_done(&t);
    ASSERT_EQ(FK_GET(f, n_hello), 0);
    /* Without a token the same address is served. */
    o.token = NULL;
    tloop_init(&t);
    ASSERT_EQ(open_with(&t, &o, &ac).status, 0);
    a_close(&t, ac);
    tloop_done(&t);
    fake_stop(f);
}

/* A plaintext REDIRECT to an address that is not loopback: the token is
 * not sent there. */
TEST(plaintext_redirect_gets_no_token)
{
    struct fake *fa = fake_start(), *fb = fake_start();
    baton_opts o = tls_opts(fa->addr, NULL);
    struct tloop t;
    baton_async_t *ac;
    struct rec r;
    char addr[64];

    unspecified_addr(fb, addr, sizeof addr);
    fk_redirect(fa, addr);
    o.token = "not-for-the-redirect";
    tloop_init(&t);
    r = open_with(&t, &o, &ac);
    expect_refusal(&r, BATON_ETLS, addr, "in clear", (const char *)NULL);
    baton_async_free(ac);
    tloop_done(&t);
    ASSERT_EQ(FK_GET(fa, n_redirect), 1);
    ASSERT_EQ(FK_GET(fb, n_hello), 0);
    fake_stop(fa);
    fake_stop(fb);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    suite_dir_init("baton-client-tls");
    snprintf(certs, sizeof certs, "%s/certs", suite_dir());
    certs_make_set(certs);
    RUN(tls_lock_round_trip_with_token);
    RUN(no_token_sends_none);
    RUN(client_certificate_presented);
    RUN(localhost_checked_as_a_name);
    RUN(redirect_over_tls);
    RUN(reconnect_over_tls);
    RUN(node_certificate_of_another_ca);
    RUN(node_certificate_for_another_host);
    RUN(node_certificate_expired);
    RUN(client_certificate_missing_or_wrong);
    RUN(tls_client_plaintext_node);
    RUN(plaintext_client_tls_node);
    RUN(plaintext_client_tls_answer);
    RUN(eauth_on_hello);
    RUN(refusal_ends_open_with_other_endpoints);
    RUN(eperm_on_acquire);
    RUN(eperm_on_open);
    RUN(refusal_while_open_is_retried);
    RUN(blocking_over_tls);
    RUN(bad_tls_options);
    RUN(plaintext_token_sent_to_loopback);
    RUN(plaintext_token_refused_elsewhere);
    RUN(plaintext_redirect_gets_no_token);
    suite_dir_done();
    return runner_done();
}
