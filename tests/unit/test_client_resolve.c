/*
 * test_client_resolve.c -- host names in libbaton's async core, through a
 * resolver the test controls (baton_async_set_resolver, in place of the
 * libuv adapter's uv_getaddrinfo): every address of a name is tried in
 * order, the name is looked up again on every reconnect, a failed lookup
 * is reported, a lookup in flight is cancelled when the context is freed,
 * and an IP literal never reaches the resolver.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <uv.h>

#include "baton/baton_async.h"
#include "baton/baton_defs.h"
#include "tests/lib/runner.h"
#include "tests/unit/client_fixture.h"
#include "tests/unit/fake_server.h"

/* The test's resolver: answers from a timer, never inside start. */
struct dns {
    uv_timer_t timer;
    baton_async_resolved_cb *cb;
    void *arg;
    int lookups, canceled, answered;
    int silent;                 /* never answer */
    const char *fail;           /* answer with this error */
    char host[64], port[8];
    struct sockaddr_in sa[2];   /* the answer: sa[0] then sa[1] */
};

static void sa_of(const char *addr, struct sockaddr_in *sa)
{
    char ip[32];
    int port;

    ASSERT_EQ(sscanf(addr, "%31[^:]:%d", ip, &port), 2);
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    ASSERT_EQ(inet_pton(AF_INET, ip, &sa->sin_addr), 1);
}

static void answer(uv_timer_t *t)
{
    struct dns *d = t->data;
    struct addrinfo ai[2];

    memset(ai, 0, sizeof ai);
    for (int i = 0; i < 2; i++) {
        ai[i].ai_family = AF_INET;
        ai[i].ai_socktype = SOCK_STREAM;
        ai[i].ai_addr = (struct sockaddr *)&d->sa[i];
        ai[i].ai_addrlen = sizeof d->sa[i];
        ai[i].ai_next = i == 0 ? &ai[1] : NULL;
    }
    d->answered++;
    if (d->fail != NULL)
        d->cb(d->arg, NULL, d->fail);
    else
        d->cb(d->arg, ai, NULL);
}

static void *start(void *data, const char *host, const char *port, baton_async_resolved_cb *cb,
                   void *arg)
{
    struct dns *d = data;

    snprintf(d->host, sizeof d->host, "%s", host);
    snprintf(d->port, sizeof d->port, "%s", port);
    d->cb = cb;
    d->arg = arg;
    d->lookups++;
    if (!d->silent) uv_timer_start(&d->timer, answer, 1, 0);
    return d;
}

static void cancel(void *data, void *lookup)
{
    struct dns *d = data;

    ASSERT(lookup == d);
    uv_timer_stop(&d->timer);
    d->canceled++;
}

static baton_async_t *ctx(struct tloop *t, struct dns *d, const char *eps)
{
    baton_opts o = {.endpoints = eps, .client_name = "test", .connect_timeout_ms = 2000};
    baton_async_resolver r = {.data = d, .start = start, .cancel = cancel};
    baton_async_t *ac = a_new(t, &o);

    uv_timer_init(&t->loop, &d->timer);
    d->timer.data = d;
    ASSERT_EQ(baton_async_set_resolver(ac, &r), 0);
    return ac;
}

static void dns_done(struct tloop *t, struct dns *d)
{
    uv_close((uv_handle_t *)&d->timer, NULL);
    tloop_done(t);
}

/* db.test resolves to a dead address, then the fake's: the core connects
 * to the second; after the fake drops the connection it looks up again. */
TEST(each_address_in_order_and_again_on_reconnect)
{
    struct fake *f = fake_start();
    struct dns d = {0};
    struct tloop t;
    struct rec r = {0};
    char dead[64];
    baton_async_t *ac;

    dead_addr(dead, sizeof dead);
    sa_of(dead, &d.sa[0]);
    sa_of(f->addr, &d.sa[1]);
    tloop_init(&t);
    ac = ctx(&t, &d, "db.test:7001");
    ASSERT_EQ(baton_async_open(ac, rec_open, &r), 0);
    run_until(&t, &r.calls, 1, 5000);
    ASSERT_EQ(r.status, 0);
    ASSERT_STREQ(d.host, "db.test");
    ASSERT_STREQ(d.port, "7001");
    ASSERT_EQ(d.lookups, 1);
    ASSERT_EQ(FK_GET(f, n_conns), 1);

    FK_SET(f, do_drop_all, true);
    run_until(&t, &d.lookups, 2, 5000);
    ASSERT_EQ(a_lock(&t, ac, "x", 0).status, 0);
    ASSERT_GE(FK_GET(f, n_conns), 2);
    a_close(&t, ac);
    dns_done(&t, &d);
    fake_stop(f);
}

TEST(failed_lookup_reported)
{
    struct dns d = {.fail = "no such host"};
    struct tloop t;
    struct rec r = {0};
    baton_async_t *ac;

    tloop_init(&t);
    ac = ctx(&t, &d, "nowhere.test:7001");
    ASSERT_EQ(baton_async_open(ac, rec_open, &r), 0);
    run_until(&t, &r.calls, 1, 10000);
    ASSERT(r.status < 0);
    if (strstr(r.err, "nowhere.test:7001: resolve: no such host") == NULL)
        FAIL("message '%s'", r.err);
    ASSERT_GE(d.lookups, 2); /* each attempt looked the name up again */
    baton_async_free(ac);
    run_for(&t, 20);
    dns_done(&t, &d);
}

TEST(free_cancels_lookup)
{
    struct dns d = {.silent = 1};
    struct tloop t;
    struct rec r = {0};
    baton_async_t *ac;

    tloop_init(&t);
    ac = ctx(&t, &d, "slow.test:7001");
    ASSERT_EQ(baton_async_open(ac, rec_open, &r), 0);
    run_for(&t, 50);
    ASSERT_EQ(d.lookups, 1);
    baton_async_free(ac);
    ASSERT_EQ(d.canceled, 1);
    ASSERT_EQ(r.calls, 1);
    ASSERT_EQ(r.status, BATON_ECANCELED);
    run_for(&t, 20);
    dns_done(&t, &d);
}

TEST(literal_never_resolved)
{
    struct fake *f = fake_start();
    struct dns d = {0};
    struct tloop t;
    baton_async_t *ac;
    char eps[128];

    snprintf(eps, sizeof eps, "%s,[::1]:1", f->addr);
    tloop_init(&t);
    ac = ctx(&t, &d, eps);
    {
        struct rec r = {0};
        ASSERT_EQ(baton_async_open(ac, rec_open, &r), 0);
        run_until(&t, &r.calls, 1, 5000);
        ASSERT_EQ(r.status, 0);
    }
    ASSERT_EQ(d.lookups, 0);
    a_close(&t, ac);
    dns_done(&t, &d);
    fake_stop(f);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(each_address_in_order_and_again_on_reconnect);
    RUN(failed_lookup_reported);
    RUN(free_cancels_lookup);
    RUN(literal_never_resolved);
    return runner_done();
}
