/*
 * test_client_tls.c -- libbaton and batonctl against real TLS nodes with
 * auth files (tests/lib/cluster.h's security bits):
 *
 *  - a plaintext client at a TLS node and a TLS client at a plaintext node
 *    both fail at once with BATON_ETLS and a message that says which;
 *  - a node certificate from another CA, one naming another IP address,
 *    an expired one: BATON_ETLS, naming the reason; "localhost" is
 *    checked as a DNS name;
 *  - --tls-client-ca: no client certificate, or one of another CA, is
 *    refused; the CA's own gets in;
 *  - tokens: none or an unknown one is BATON_EAUTH; a client principal
 *    locks inside its prefixes and gets BATON_EPERM (with the node's
 *    message) outside them, on the same connection; a read principal may
 *    not open a session, and batonctl run as it gets the node's reason for
 *    an operator's command; `batonctl sessions` shows each session's owner;
 *  - a principal removed from the auth file (SIGHUP) while its session is
 *    open: calls fail with BATON_EUNAVAIL quoting the refusal, and the
 *    session goes on once the principal is back;
 *  - batonctl with the flags and with BATON_CACERT / BATON_CERT /
 *    BATON_KEY / BATON_TOKEN, its errors, and status's auth digests;
 *  - `batonctl auth hash` output parsed, its line put in the auth file and
 *    its token used.
 *
 * The certificates the harness does not make (another CA, a node
 * certificate for another IP, an expired one) come from server/certs.sh
 * into this run's directory; a node is given them with --tls-cert and
 * --tls-key after the harness's own flags (the last one counts).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "baton/baton.h"
#include "baton/baton_async.h"
#include "proto/crypto.h"
#include "tests/lib/aclient.h"
#include "tests/lib/certs.h"
#include "tests/lib/clock.h"
#include "tests/lib/cluster.h"
#include "tests/lib/files.h"
#include "tests/lib/jsonget.h"
#include "tests/lib/runner.h"
#include "tests/lib/tloop.h"

/* A refusal must come well before this: baton_connect is given it as its
 * connect timeout, and the tests check that it returned in less than half
 * of it (that it did not retry until the timeout). */
#define LONG_CONNECT_MS 30000

static char mine[PATH_MAX]; /* this run's certificates */

/* Path of file NAME in this run's certificate directory. */
static const char *my_cert(const char *name)
{
    return certs_path(mine, name);
}

/* A CA "other" of our own with a node certificate for 127.0.0.1, one for
 * 10.1.2.3, an expired one, and a client certificate. */
static void make_my_certs(void)
{
    snprintf(mine, sizeof mine, "%s/certs", suite_dir());
    certs_run("ca %s other", mine);
    certs_run("cert %s good other baton-node-1 IP:127.0.0.1,DNS:localhost", mine);
    certs_run("cert %s elsewhere other baton-node-1 IP:10.1.2.3", mine);
    certs_run("cert %s expired other baton-node-1 IP:127.0.0.1 -1", mine);
    certs_run("cert %s stranger other baton-client -", mine);
}

/* Start an n-node cluster with the security bits and more auth lines,
 * and wait for its leader. */
static void start(struct cluster *c, int n, int secure, const char *lines)
{
    struct cluster_opts o = {.secure = secure, .auth_lines = lines};

    if (cluster_start_opts(c, n, &o) != 0) FAIL("cannot start the cluster");
    if (cluster_wait_leader(c, 15000) < 0) FAIL("no leader");
}

/* Start one node serving TLS with certificate NAME of our own CA. The
 * harness cannot ask it for STATUS (it trusts only its own CA), so wait
 * for its port instead. */
static void start_with_my_cert(struct cluster *c, const char *name)
{
    static char pem[PATH_MAX + 64], key[PATH_MAX + 64];
    static const char *extra[5];
    struct cluster_opts o = {.extra_args = extra};
    int64_t deadline = now_ms() + 15000;

    snprintf(pem, sizeof pem, "%s/%s.pem", mine, name);
    snprintf(key, sizeof key, "%s/%s.key", mine, name);
    extra[0] = "--tls-cert";
    extra[1] = pem;
    extra[2] = "--tls-key";
    extra[3] = key;
    extra[4] = NULL;
    if (cluster_start_opts(c, 1, &o) != 0) FAIL("cannot start the node");
    for (;;) {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

        a.sin_port = htons((uint16_t)c->nodes[0].client_port);
        ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
        close(fd);
        if (ok) return;
        if (now_ms() > deadline) FAIL("the node never listened");
        sleep_ms(50);
    }
}

/* Options for c with its TLS files and `token` (NULL: none). */
static baton_opts opts_for(const struct cluster *c, const char *token)
{
    baton_opts o = {.client_name = "client-tls-test", .connect_timeout_ms = LONG_CONNECT_MS};

    cluster_client_opts(c, &o);
    o.token = token;
    return o;
}

/* baton_connect with o must fail with `want`, before half its connect
 * timeout, with a message containing `word`. */
static void connect_refused(const baton_opts *o, int want, const char *word)
{
    int64_t t0 = now_ms();
    baton_t *b = NULL;
    int rv = baton_connect(o, &b);

    if (rv != want)
        FAIL("baton_connect: %s (%s), want %s", baton_err_name(rv), baton_connect_errmsg(),
             baton_err_name(want));
    ASSERT(b == NULL);
    if (strstr(baton_connect_errmsg(), word) == NULL)
        FAIL("message '%s' lacks '%s'", baton_connect_errmsg(), word);
    ASSERT_LT(now_ms() - t0, LONG_CONNECT_MS / 2);
}

/* Connect with o, take lock `name` and give it back: baton_trylock's
 * result (and the message on failure into err). */
static int lock_once(const baton_opts *o, const char *name, char *err, size_t cap)
{
    baton_t *b;
    baton_lock_t *l;
    int rv = baton_connect(o, &b);

    if (rv != 0) FAIL("baton_connect: %s: %s", baton_err_name(rv), baton_connect_errmsg());
    rv = baton_trylock(b, name, &l);
    if (rv == 0) ASSERT_EQ(baton_unlock(l), 0);
    snprintf(err, cap, "%s", rv != 0 ? baton_errmsg(b) : "");
    baton_close(b);
    return rv;
}

/* ---- TLS on one side only -------------------------------------------------------- */

TEST(plaintext_client_at_tls_node)
{
    struct cluster c;
    baton_opts o;
    struct ctl_result r;

    start(&c, 1, CLUSTER_CLIENT_TLS, NULL);
    o = opts_for(&c, NULL);
    o.tls_ca_file = o.tls_cert_file = o.tls_key_file = NULL;
    connect_refused(&o, BATON_ETLS, cluster_endpoint(&c, 0));
    connect_refused(&o, BATON_ETLS, "TLS");
    /* batonctl without --cacert: refused, told what to add. */
    ASSERT_EQ(cluster_ctl(NULL, &r, "-e", cluster_endpoints(&c), "locks", NULL), 70);
    if (strstr(r.err, "--cacert") == NULL) FAIL("stderr: %s", r.err);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(NULL, &r, "-e", cluster_endpoints(&c), "status", NULL), 70);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_stop(&c), 0);
}

TEST(tls_client_at_plaintext_node)
{
    struct cluster c;
    baton_opts o;
    struct ctl_result r;

    start(&c, 1, 0, NULL);
    o = opts_for(&c, NULL);
    o.tls_ca_file = my_cert("other.pem");
    connect_refused(&o, BATON_ETLS, "does not serve TLS");
    ASSERT_EQ(cluster_ctl(NULL, &r, "-e", cluster_endpoints(&c), "--cacert",
                          my_cert("other.pem"), "locks", NULL),
              70);
    if (strstr(r.err, "does not serve TLS") == NULL) FAIL("stderr: %s", r.err);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_stop(&c), 0);
}

/* ---- the node's certificate ------------------------------------------------------ */

TEST(node_certificate_of_another_ca)
{
    struct cluster c;
    baton_opts o;
    struct ctl_result r;

    start(&c, 1, CLUSTER_CLIENT_TLS, NULL);
    o = opts_for(&c, NULL);
    o.tls_ca_file = my_cert("other.pem");
    o.tls_cert_file = o.tls_key_file = NULL;
    connect_refused(&o, BATON_ETLS, "certificate");
    ASSERT_EQ(cluster_ctl(NULL, &r, "-e", cluster_endpoints(&c), "--cacert",
                          my_cert("other.pem"), "locks", NULL),
              70);
    if (strstr(r.err, "certificate") == NULL) FAIL("stderr: %s", r.err);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_stop(&c), 0);
}

/* The node's certificate names 10.1.2.3; the client dials 127.0.0.1. */
TEST(node_certificate_for_another_address)
{
    struct cluster c;
    baton_opts o = {.connect_timeout_ms = LONG_CONNECT_MS};

    start_with_my_cert(&c, "elsewhere");
    o.endpoints = cluster_endpoints(&c);
    o.tls_ca_file = my_cert("other.pem");
    connect_refused(&o, BATON_ETLS, "mismatch");
    ASSERT_EQ(cluster_stop(&c), 0);
}

TEST(node_certificate_expired)
{
    struct cluster c;
    baton_opts o = {.connect_timeout_ms = LONG_CONNECT_MS};

    start_with_my_cert(&c, "expired");
    o.endpoints = cluster_endpoints(&c);
    o.tls_ca_file = my_cert("other.pem");
    connect_refused(&o, BATON_ETLS, "expired");
    ASSERT_EQ(cluster_stop(&c), 0);
}

/* The right certificate works by IP address and by the name localhost. */
TEST(node_certificate_accepted_by_ip_and_name)
{
    struct cluster c;
    baton_opts o = {.connect_timeout_ms = LONG_CONNECT_MS};
    char ep[64], err[256];

    start_with_my_cert(&c, "good");
    o.tls_ca_file = my_cert("other.pem");
    o.endpoints = cluster_endpoints(&c);
    ASSERT_EQ(lock_once(&o, "by-ip", err, sizeof err), 0);
    snprintf(ep, sizeof ep, "localhost:%d", c.nodes[0].client_port);
    o.endpoints = ep;
    ASSERT_EQ(lock_once(&o, "by-name", err, sizeof err), 0);
    ASSERT_EQ(cluster_stop(&c), 0);
}

/* ---- client certificates --------------------------------------------------------- */

TEST(client_certificate_required)
{
    struct cluster c;
    baton_opts o;
    char err[256];
    struct ctl_result r;

    start(&c, 1, CLUSTER_CLIENT_TLS | CLUSTER_CLIENT_CA, NULL);
    o = opts_for(&c, NULL);
    o.tls_cert_file = o.tls_key_file = NULL;
    connect_refused(&o, BATON_ETLS, "refused this client");
    o.tls_cert_file = my_cert("stranger.pem");
    o.tls_key_file = my_cert("stranger.key");
    connect_refused(&o, BATON_ETLS, "refused this client");
    o = opts_for(&c, NULL);
    ASSERT_EQ(lock_once(&o, "with-cert", err, sizeof err), 0);
    /* batonctl without --cert. */
    ASSERT_EQ(cluster_ctl(NULL, &r, "-e", cluster_endpoints(&c), "--cacert",
                          cluster_cert(&c, "ca", 0), "locks", NULL),
              70);
    if (strstr(r.err, "no --cert") == NULL) FAIL("stderr: %s", r.err);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_stop(&c), 0);
}

/* ---- tokens, roles, prefixes, owners --------------------------------------------- */

TEST(tokens_roles_and_prefixes)
{
    char app_tok[72], app_line[256], ro_tok[72], ro_line[256], lines[600], err[256];
    struct cluster c;
    baton_opts o;
    baton_t *b;
    baton_lock_t *l;
    struct ctl_result r;
    const char *owner;

    ASSERT_EQ(cluster_token("app", "client", "prefixes=jobs/", app_tok, app_line,
                            sizeof app_line), 0);
    ASSERT_EQ(cluster_token("viewer", "read", "", ro_tok, ro_line, sizeof ro_line), 0);
    snprintf(lines, sizeof lines, "%s%s", app_line, ro_line);
    start(&c, 1, CLUSTER_CLIENT_TLS | CLUSTER_AUTH, lines);

    o = opts_for(&c, NULL);
    connect_refused(&o, BATON_EAUTH, "EAUTH");
    o.token = "0000000000000000000000000000000000000000000000000000000000000000";
    connect_refused(&o, BATON_EAUTH, cluster_endpoint(&c, 0));
    o.token = ro_tok;
    connect_refused(&o, BATON_EPERM, "EPERM");

    /* The client principal, inside and outside its prefixes, on one
     * connection: the refusal does not end it. */
    o.token = app_tok;
    ASSERT_EQ(baton_connect(&o, &b), 0);
    ASSERT_EQ(baton_trylock(b, "jobs/1", &l), 0);
    ASSERT_EQ(baton_trylock(b, "other/1", &(baton_lock_t *){NULL}), BATON_EPERM);
    if (strstr(baton_errmsg(b), "other/1") == NULL) FAIL("message: %s", baton_errmsg(b));
    snprintf(err, sizeof err, "%s", baton_errmsg(b));
    ASSERT_EQ(baton_unlock(l), 0);
    ASSERT_EQ(baton_trylock(b, "jobs/2", &l), 0);

    /* batonctl (the harness's admin) sees the session's owner. */
    ASSERT_EQ(cluster_ctl(&c, &r, "-o", "json", "sessions", NULL), 0);
    owner = json_find(r.out, "owner");
    if (owner == NULL || strncmp(owner, "\"app\"", 5) != 0) FAIL("sessions: %s", r.out);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "sessions", NULL), 0);
    if (strstr(r.out, "OWNER") == NULL || strstr(r.out, " app ") == NULL)
        FAIL("sessions: %s", r.out);
    ctl_result_free(&r);
    ASSERT_EQ(baton_unlock(l), 0);
    baton_close(b);

    /* batonctl as the read principal: looking is allowed, an operator's
     * command is refused with the node's reason (exit 70). */
    ASSERT_EQ(cluster_ctl(NULL, &r, "-e", cluster_endpoints(&c), "--cacert",
                          cluster_cert(&c, "ca", 0), "--token", ro_tok, "locks", NULL),
              0);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(NULL, &r, "-e", cluster_endpoints(&c), "--cacert",
                          cluster_cert(&c, "ca", 0), "--token", ro_tok, "release", "--force",
                          "jobs/1", NULL),
              70);
    if (strstr(r.err, "viewer") == NULL) FAIL("stderr: %s", r.err);
    ctl_result_free(&r);

    /* The async API with the harness's options (admin token). */
    {
        struct tloop t;
        struct rec ro = {0}, rl = {0}, rc = {0};
        baton_opts ao = {.client_name = "async-admin"};
        baton_async_t *ac;

        tloop_init(&t);
        ac = a_new_cluster(&t, &c, &ao);
        ASSERT_EQ(baton_async_open(ac, rec_open, &ro), 0);
        run_until(&t, &ro.calls, 1, 10000);
        ASSERT_EQ(ro.status, 0);
        ASSERT_EQ(baton_async_lock(ac, "anything", BATON_WAIT_TRY, rec_lock, &rl), 0);
        run_until(&t, &rl.calls, 1, 10000);
        ASSERT_EQ(rl.status, 0);
        ASSERT_EQ(baton_async_close_session(ac, rec_done, &rc), 0);
        run_until(&t, &rc.calls, 1, 10000);
        baton_async_free(ac);
        tloop_done(&t);
    }
    ASSERT_EQ(cluster_stop(&c), 0);
}

/* A principal removed from the auth file while its session is open: the
 * node closes its connection (EAUTH), reconnections are refused, calls
 * fail with BATON_EUNAVAIL quoting that; once the principal is back the
 * same session goes on. */
TEST(principal_removed_while_session_open)
{
    char tok[72], line[256];
    struct cluster c;
    baton_opts o;
    baton_t *b;
    baton_lock_t *held, *l;
    uint64_t session;
    int rv;

    ASSERT_EQ(cluster_token("app", "client", "", tok, line, sizeof line), 0);
    start(&c, 1, CLUSTER_CLIENT_TLS | CLUSTER_AUTH, line);
    o = opts_for(&c, tok);
    o.op_timeout_ms = 1500;
    o.session_ttl_ms = 20000;
    ASSERT_EQ(baton_connect(&o, &b), 0);
    session = baton_session_id(b);
    ASSERT_EQ(baton_trylock(b, "kept", &held), 0);

    ASSERT_EQ(cluster_auth_write(&c, NULL), 0);
    ASSERT_EQ(cluster_kill(&c, 0, SIGHUP), 0);
    sleep_ms(300);
    rv = baton_trylock(b, "meanwhile", &l);
    ASSERT_EQ(rv, BATON_EUNAVAIL);
    if (strstr(baton_errmsg(b), "EAUTH") == NULL) FAIL("message: %s", baton_errmsg(b));

    ASSERT_EQ(cluster_auth_write(&c, line), 0);
    ASSERT_EQ(cluster_kill(&c, 0, SIGHUP), 0);
    for (int i = 0; (rv = baton_trylock(b, "after", &l)) != 0; i++) {
        if (i == 20) FAIL("trylock after the principal came back: %s", baton_errmsg(b));
        sleep_ms(100);
    }
    ASSERT_EQ(baton_unlock(l), 0);
    ASSERT_UEQ(baton_session_id(b), session);
    ASSERT_EQ(baton_unlock(held), 0);
    baton_close(b);
    ASSERT_EQ(cluster_stop(&c), 0);
}

/* ---- batonctl ---------------------------------------------------------------------------- */

/* Set (value non-NULL) or unset an environment variable. */
static void env(const char *name, const char *value)
{
    if (value != NULL)
        setenv(name, value, 1);
    else
        unsetenv(name);
}

TEST(batonctl_flags_and_environment)
{
    struct cluster c;
    struct ctl_result r;
    const char *d;

    start(&c, 3, CLUSTER_SECURE | CLUSTER_CLIENT_CA, NULL); /* peer mTLS too */

    /* The harness passes --cacert --cert --key --token. */
    ASSERT_EQ(cluster_ctl(&c, &r, "status", NULL), 0);
    if (strstr(r.out, "AUTH") == NULL) FAIL("status: %s", r.out);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "-o", "json", "status", NULL), 0);
    d = json_find(r.out, "auth_digest");
    if (d == NULL || d[0] != '"' || strlen(d) < 18 || d[17] != '"') FAIL("status: %s", r.out);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(&c, &r, "lock", "flags", "--", "true", NULL), 0);
    ctl_result_free(&r);

    /* The same from the environment alone. */
    env("BATON_ENDPOINTS", cluster_endpoints(&c));
    env("BATON_CACERT", cluster_cert(&c, "ca", 0));
    env("BATON_CERT", cluster_cert(&c, "client", 0));
    env("BATON_KEY", cluster_cert(&c, "client", 1));
    env("BATON_TOKEN", c.admin_token);
    ASSERT_EQ(cluster_ctl(NULL, &r, "status", NULL), 0);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(NULL, &r, "locks", NULL), 0);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(NULL, &r, "lock", "env", "--", "true", NULL), 0);
    ctl_result_free(&r);

    /* A wrong token in the environment, the right one as a flag: the flag
     * wins. */
    env("BATON_TOKEN", "wrong-token");
    ASSERT_EQ(cluster_ctl(NULL, &r, "locks", NULL), 70);
    if (strstr(r.err, "--token") == NULL) FAIL("stderr: %s", r.err);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(NULL, &r, "status", NULL), 70);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(NULL, &r, "lock", "env", "--", "true", NULL), 70);
    if (strstr(r.err, "EAUTH") == NULL) FAIL("stderr: %s", r.err);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(NULL, &r, "--token", c.admin_token, "locks", NULL), 0);
    ctl_result_free(&r);

    /* A certificate without its key is a usage error. */
    env("BATON_TOKEN", c.admin_token);
    env("BATON_KEY", NULL);
    ASSERT_EQ(cluster_ctl(NULL, &r, "locks", NULL), 64);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_ctl(NULL, &r, "lock", "x", "--", "true", NULL), 64);
    ctl_result_free(&r);
    env("BATON_CACERT", my_cert("nonexistent.pem"));
    env("BATON_KEY", cluster_cert(&c, "client", 1));
    ASSERT_EQ(cluster_ctl(NULL, &r, "status", NULL), 64);
    if (strstr(r.err, "nonexistent.pem") == NULL) FAIL("stderr: %s", r.err);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_stop(&c), 0);
}

/* Another auth file on one node only: status warns. */
TEST(status_shows_differing_auth_files)
{
    char tok[72], line[256];
    struct cluster c;
    struct ctl_result r;

    start(&c, 3, CLUSTER_CLIENT_TLS | CLUSTER_AUTH, NULL);
    ASSERT_EQ(cluster_ctl(&c, &r, "status", NULL), 0);
    if (strstr(r.out, "different auth files") != NULL) FAIL("status: %s", r.out);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_token("extra", "read", "", tok, line, sizeof line), 0);
    ASSERT_EQ(cluster_auth_write(&c, line), 0);
    ASSERT_EQ(cluster_kill(&c, 1, SIGHUP), 0);
    for (int i = 0;; i++) {
        int found;
        ASSERT_EQ(cluster_ctl(&c, &r, "status", NULL), 0);
        found = strstr(r.out, "WARNING: nodes 1 and 2 have different auth files") != NULL;
        ctl_result_free(&r);
        if (found) break;
        if (i == 50) FAIL("no warning about node 2's auth file");
        sleep_ms(100);
    }
    ASSERT_EQ(cluster_stop(&c), 0);
}

/* `batonctl auth hash`: the token, and a line that holds only its
 * SHA-256, which the nodes then accept. */
TEST(auth_hash_line_is_usable)
{
    struct cluster c;
    struct ctl_result r;
    char token[72] = "", line[300] = "", want[300], hex[CRYPTO_SHA256_HEX + 1], err[256];
    uint8_t digest[CRYPTO_SHA256_LEN];
    const char *p;
    baton_opts o;

    ASSERT_EQ(cluster_ctl(NULL, &r, "auth", "hash", "app", "client", "prefixes=app/", NULL), 0);
    if (sscanf(r.out, "token: %71s", token) != 1 || strlen(token) != 64) FAIL("out: %s", r.out);
    p = strchr(r.out, '\n');
    ASSERT(p != NULL);
    snprintf(line, sizeof line, "%s", p + 1);
    ASSERT_EQ(crypto_sha256(token, strlen(token), digest), 0);
    crypto_hex(digest, sizeof digest, hex);
    snprintf(want, sizeof want, "app client sha256:%s prefixes=app/\n", hex);
    ASSERT_STREQ(line, want);
    ASSERT(strstr(line, token) == NULL);
    if (strstr(r.err, "only this once") == NULL) FAIL("stderr: %s", r.err);
    ctl_result_free(&r);

    start(&c, 1, CLUSTER_CLIENT_TLS | CLUSTER_AUTH, NULL);
    o = opts_for(&c, token);
    connect_refused(&o, BATON_EAUTH, "EAUTH");
    ASSERT_EQ(cluster_auth_write(&c, line), 0);
    ASSERT_EQ(cluster_kill(&c, 0, SIGHUP), 0);
    for (int i = 0;; i++) {
        baton_t *b;
        if (baton_connect(&o, &b) == 0) {
            baton_close(b);
            break;
        }
        if (i == 50) FAIL("the new token was never accepted: %s", baton_connect_errmsg());
        sleep_ms(100);
    }
    ASSERT_EQ(lock_once(&o, "app/1", err, sizeof err), 0);
    ASSERT_EQ(lock_once(&o, "other", err, sizeof err), BATON_EPERM);

    /* -o json gives the same two strings. */
    ASSERT_EQ(cluster_ctl(NULL, &r, "-o", "json", "auth", "hash", "ops", "admin", NULL), 0);
    p = json_find(r.out, "token");
    if (p == NULL || p[0] != '"' || p[65] != '"') FAIL("json: %s", r.out);
    p = json_find(r.out, "line");
    if (p == NULL || strncmp(p, "\"ops admin sha256:", 18) != 0) FAIL("json: %s", r.out);
    ctl_result_free(&r);
    ASSERT_EQ(cluster_stop(&c), 0);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(120);
    suite_dir_init("baton-client-tls-integ");
    make_my_certs();
    RUN(plaintext_client_at_tls_node);
    RUN(tls_client_at_plaintext_node);
    RUN(node_certificate_of_another_ca);
    RUN(node_certificate_for_another_address);
    RUN(node_certificate_expired);
    RUN(node_certificate_accepted_by_ip_and_name);
    RUN(client_certificate_required);
    RUN(tokens_roles_and_prefixes);
    RUN(principal_removed_while_session_open);
    RUN(batonctl_flags_and_environment);
    RUN(status_shows_differing_auth_files);
    RUN(auth_hash_line_is_usable);
    suite_dir_done();
    return runner_done();
}
