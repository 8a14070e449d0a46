/*
 * test_tls.c -- proto/tls.h, two endpoints wired back to back in memory:
 * a handshake and data both ways, the verdicts a client and a server give
 * on the certificates of server/certs.sh (another CA, a wrong name, an
 * expired one, a client certificate missing or from another CA), the
 * peer's common name, plaintext fed to a TLS endpoint, and tls_sniff.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/tls.h"
#include "tests/lib/certs.h"
#include "tests/lib/files.h"
#include "tests/lib/runner.h"

static char certs[PATH_MAX];

static const char *path(const char *name)
{
    return certs_path(certs, name);
}

static tls_ctx *ctx(bool server, const char *ca, const char *cert, bool require)
{
    struct tls_config c = {.server = server, .require_peer_cert = require};
    char err[256], key[PATH_MAX + 64];
    tls_ctx *x;

    c.ca_file = ca ? path(ca) : NULL;
    if (cert) {
        c.cert_file = path(cert);
        snprintf(key, sizeof key, "%s", c.cert_file);
        memcpy(key + strlen(key) - 4, ".key", 4);
        c.key_file = key;
    }
    if (tls_ctx_new(&c, &x, err, sizeof err) != 0) FAIL("tls_ctx_new: %s", err);
    return x;
}

/* Move bytes between the two endpoints until neither has any to send.
 * Returns 0, or the first error (of the client, then of the server). */
static int pump(tls *cl, tls *sv, struct buf *cl_plain, struct buf *sv_plain)
{
    struct buf net = {0};
    int rc = 0, rs = 0;

    for (int round = 0; round < 20 && (tls_out_pending(cl) || tls_out_pending(sv)); round++) {
        buf_reset(&net);
        ASSERT_EQ(tls_out(cl, &net), 0);
        if (net.len > 0 && rs == 0) rs = tls_recv(sv, net.data, net.len, sv_plain);
        buf_reset(&net);
        ASSERT_EQ(tls_out(sv, &net), 0);
        if (net.len > 0 && rc == 0) rc = tls_recv(cl, net.data, net.len, cl_plain);
    }
    buf_free(&net);
    return rc ? rc : rs;
}

/* Handshake a client of (ca, cert) naming `name` with a server of
 * (cert, client ca, require); returns what pump returned and the
 * endpoints' messages in *cmsg / *smsg. */
struct pair {
    tls_ctx *cx, *sx;
    tls *c, *s;
    struct buf cp, sp;
};

static int handshake(struct pair *p, const char *ca, const char *ccert, const char *name,
                     const char *scert, const char *sca, bool require)
{
    memset(p, 0, sizeof *p);
    p->cx = ctx(false, ca, ccert, false);
    p->sx = ctx(true, sca, scert, require);
    p->c = tls_new(p->cx, name);
    p->s = tls_new(p->sx, NULL);
    ASSERT(p->c != NULL && p->s != NULL);
    return pump(p->c, p->s, &p->cp, &p->sp);
}

static void pair_free(struct pair *p)
{
    tls_free(p->c);
    tls_free(p->s);
    tls_ctx_free(p->cx);
    tls_ctx_free(p->sx);
    buf_free(&p->cp);
    buf_free(&p->sp);
}

TEST(handshake_and_data_both_ways)
{
    struct pair p;

    /* Sent before the handshake: kept, then delivered. */
    memset(&p, 0, sizeof p);
    p.cx = ctx(false, "ca.pem", NULL, false);
    p.sx = ctx(true, NULL, "node1.pem", false);
    p.c = tls_new(p.cx, "127.0.0.1");
    p.s = tls_new(p.sx, NULL);
    ASSERT_EQ(tls_send(p.c, "early", 5), 0);
    ASSERT_EQ(pump(p.c, p.s, &p.cp, &p.sp), 0);
    ASSERT(tls_established(p.c) && tls_established(p.s));
    ASSERT_EQ(p.sp.len, 5);
    ASSERT(memcmp(p.sp.data, "early", 5) == 0);
    ASSERT_STREQ(tls_peer_cn(p.c), "baton-node-1");
    ASSERT_STREQ(tls_peer_cn(p.s), ""); /* no client certificate */
    for (int i = 0; i < 100; i++) {
        char big[40000];
        memset(big, 'a' + i % 26, sizeof big);
        ASSERT_EQ(tls_send(p.s, big, sizeof big), 0);
        ASSERT_EQ(tls_send(p.c, big, 100), 0);
    }
    ASSERT_EQ(pump(p.c, p.s, &p.cp, &p.sp), 0);
    ASSERT_EQ(p.cp.len, 100 * 40000);
    ASSERT_EQ(p.sp.len, 5 + 100 * 100);
    ASSERT_EQ(p.cp.data[40000 * 3], 'd');
    pair_free(&p);
}

TEST(names_a_dns_name)
{
    struct pair p;
    ASSERT_EQ(handshake(&p, "ca.pem", NULL, "localhost", "node1.pem", NULL, false), 0);
    pair_free(&p);
}

TEST(server_of_another_ca_refused)
{
    struct pair p;
    ASSERT_EQ(handshake(&p, "other.pem", NULL, "127.0.0.1", "node1.pem", NULL, false), BATON_ETLS);
    if (strstr(tls_errmsg(p.c), "certificate") == NULL) FAIL("message: %s", tls_errmsg(p.c));
    ASSERT(!tls_established(p.c));
    pair_free(&p);
}

TEST(wrong_host_name_refused)
{
    struct pair p;
    ASSERT_EQ(handshake(&p, "ca.pem", NULL, "127.0.0.1", "elsewhere.pem", NULL, false), BATON_ETLS);
    if (strstr(tls_errmsg(p.c), "mismatch") == NULL) FAIL("message: %s", tls_errmsg(p.c));
    pair_free(&p);
    ASSERT_EQ(handshake(&p, "ca.pem", NULL, "db.other", "elsewhere.pem", NULL, false), BATON_ETLS);
    pair_free(&p);
    ASSERT_EQ(handshake(&p, "ca.pem", NULL, "db.example", "elsewhere.pem", NULL, false), 0);
    pair_free(&p);
}

TEST(expired_certificate_refused)
{
    struct pair p;
    ASSERT_EQ(handshake(&p, "ca.pem", NULL, "127.0.0.1", "expired.pem", NULL, false), BATON_ETLS);
    if (strstr(tls_errmsg(p.c), "expired") == NULL) FAIL("message: %s", tls_errmsg(p.c));
    pair_free(&p);
}

TEST(client_certificate_required)
{
    struct pair p;

    ASSERT_NE(handshake(&p, "ca.pem", NULL, "127.0.0.1", "node1.pem", "ca.pem", true), 0);
    ASSERT(!tls_established(p.s));
    pair_free(&p);
    ASSERT_NE(handshake(&p, "ca.pem", "stranger.pem", "127.0.0.1", "node1.pem", "ca.pem", true), 0);
    ASSERT(!tls_established(p.s));
    if (strstr(tls_errmsg(p.s), "certificate") == NULL) FAIL("message: %s", tls_errmsg(p.s));
    pair_free(&p);
    ASSERT_EQ(handshake(&p, "ca.pem", "client.pem", "127.0.0.1", "node1.pem", "ca.pem", true), 0);
    ASSERT_STREQ(tls_peer_cn(p.s), "baton-client");
    pair_free(&p);
}

TEST(plaintext_fed_to_tls_fails_cleanly)
{
    tls_ctx *sx = ctx(true, NULL, "node1.pem", false);
    tls *s = tls_new(sx, NULL);
    struct buf plain = {0};
    static const char hello[] = "\x16\x00\x00\x00\x01\x00\x00\x00garbage-garbage";

    ASSERT_EQ(tls_recv(s, hello, sizeof hello - 1, &plain), BATON_ETLS);
    ASSERT_EQ(plain.len, 0);
    ASSERT(tls_errmsg(s)[0] != '\0');
    ASSERT_EQ(tls_send(s, "x", 1), BATON_ETLS); /* dead from now on */
    tls_free(s);
    tls_ctx_free(sx);
    buf_free(&plain);
}

TEST(bad_files_say_which)
{
    struct tls_config c = {.server = true};
    char err[256];
    tls_ctx *x;

    c.cert_file = path("nonexistent.pem");
    c.key_file = path("node1.key");
    ASSERT_EQ(tls_ctx_new(&c, &x, err, sizeof err), BATON_EINVAL);
    ASSERT(x == NULL);
    if (strstr(err, "nonexistent.pem") == NULL) FAIL("message: %s", err);
    c.cert_file = path("node1.pem");
    c.key_file = path("client.key");
    ASSERT_EQ(tls_ctx_new(&c, &x, err, sizeof err), BATON_EINVAL);
    if (strstr(err, "client.key") == NULL || strstr(err, "mismatch") == NULL) FAIL("message: %s", err);
    c.cert_file = NULL;
    c.key_file = NULL;
    ASSERT_EQ(tls_ctx_new(&c, &x, err, sizeof err), BATON_EINVAL);
    c.server = false; /* a client needs a CA */
    ASSERT_EQ(tls_ctx_new(&c, &x, err, sizeof err), BATON_EINVAL);
}

TEST(sniff)
{
    ASSERT_EQ(tls_sniff("\x16\x03\x01", 3), 1);
    ASSERT_EQ(tls_sniff("\x15\x03", 2), 1);
    ASSERT_EQ(tls_sniff("\x16", 1), -1);
    ASSERT_EQ(tls_sniff("\x1a\x00\x00\x00", 4), 0); /* a baton frame of 26 bytes */
    ASSERT_EQ(tls_sniff("\x16\x00\x00\x00", 4), 0); /* of 22 bytes */
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    suite_dir_init("baton-tls");
    snprintf(certs, sizeof certs, "%s/certs", suite_dir());
    certs_make_set(certs);
    RUN(handshake_and_data_both_ways);
    RUN(names_a_dns_name);
    RUN(server_of_another_ca_refused);
    RUN(wrong_host_name_refused);
    RUN(expired_certificate_refused);
    RUN(client_certificate_required);
    RUN(plaintext_fed_to_tls_fails_cleanly);
    RUN(bad_files_say_which);
    RUN(sniff);
    suite_dir_done();
    return runner_done();
}
