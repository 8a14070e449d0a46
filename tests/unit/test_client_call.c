/*
 * test_client_call.c -- libbaton's sessionless requests (client/async_raw.c)
 * in their blocking form (client/call.h), against fake servers
 * (tests/unit/fake_server.h): a reply after a REDIRECT and NO_LEADER, an
 * ERROR reply as its code and message, a stream (the first reply, a push
 * with req_id 0, a wait that times out, the end when the connection goes),
 * no node at all (with and without one-node mode), and a node that refuses
 * the token.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "baton/baton.h"
#include "client/call.h"
#include "proto/msg.h"
#include "tests/lib/clock.h"
#include "tests/lib/runner.h"
#include "tests/unit/fake_server.h"

static baton__caller *caller(const char *eps, bool one_node)
{
    baton_opts o = {.endpoints = eps, .client_name = "test"};
    baton__caller *c;
    char err[256];

    if (baton__caller_new(&o, one_node, &c, err, sizeof err) != 0) FAIL("caller: %s", err);
    return c;
}

static int check(baton__caller *c, uint64_t timeout_ms, struct baton__reply *rep)
{
    struct msg req = {.type = MSG_CHECK};
    return baton__call(c, &req, false, timeout_ms, rep);
}

TEST(call_follows_redirect_and_no_leader)
{
    struct fake *fa = fake_start(), *fb = fake_start();
    struct baton__reply rep;
    baton__caller *c;

    fk_redirect(fa, fb->addr);
    FK_SET(fb, no_leader, 2);
    c = caller(fa->addr, false);
    ASSERT_EQ(check(c, 5000, &rep), 0);
    ASSERT_EQ(rep.m.type, MSG_CHECK_R);
    ASSERT_UEQ(rep.m.u.check_r.index, 7);
    baton__reply_free(&rep);
    /* The connection stays with the leader: a second call goes there. */
    ASSERT_EQ(check(c, 5000, &rep), 0);
    baton__reply_free(&rep);
    baton__caller_free(c);
    /* Each NO_LEADER sends it back to the endpoints, and so to fa again. */
    ASSERT_EQ(FK_GET(fa, n_redirect), 3);
    ASSERT_EQ(FK_GET(fa, n_check), 0);
    ASSERT_EQ(FK_GET(fb, n_no_leader), 2);
    ASSERT_EQ(FK_GET(fb, n_check), 2);
    fake_stop(fa);
    fake_stop(fb);
}

TEST(call_error_reply)
{
    struct fake *f = fake_start();
    struct baton__reply rep;
    baton__caller *c;

    fk_refuse(f, MSG_CHECK, BATON_EPERM, "not for viewers");
    c = caller(f->addr, false);
    ASSERT_EQ(check(c, 5000, &rep), BATON_EPERM);
    ASSERT(rep.frame == NULL);
    ASSERT(strstr(baton__caller_errmsg(c), "not for viewers") != NULL);
    ASSERT(strstr(baton__caller_errmsg(c), f->addr) != NULL);
    baton__caller_free(c);
    fake_stop(f);
}

TEST(call_stream)
{
    struct fake *f = fake_start();
    struct msg req = {.type = MSG_WATCH};
    struct baton__reply rep;
    baton__caller *c;

    req.u.watch.lock.p = "w";
    req.u.watch.lock.n = 1;
    c = caller(f->addr, false);
    ASSERT_EQ(baton__call(c, &req, true, 5000, &rep), 0);
    ASSERT_EQ(rep.m.type, MSG_WATCH_EVENT);
    ASSERT_UEQ(rep.m.u.watch_event.seq, 1);
    baton__reply_free(&rep);
    ASSERT_EQ(baton__call_next(c, 5000, &rep), 0); /* the push, req_id 0 */
    ASSERT_UEQ(rep.m.u.watch_event.seq, 2);
    baton__reply_free(&rep);
    ASSERT_EQ(baton__call_next(c, 100, &rep), BATON_ETIMEDOUT);
    FK_SET(f, do_drop_all, true);
    ASSERT_EQ(baton__call_next(c, 5000, &rep), BATON_ECLOSED);
    /* Not re-sent elsewhere: the caller decides. */
    ASSERT_EQ(FK_GET(f, n_watch), 1);
    baton__caller_free(c);
    fake_stop(f);
}

TEST(call_unavailable)
{
    struct fake *f = fake_start();
    struct baton__reply rep;
    baton__caller *c;
    char addr[32];
    int64_t t0;

    snprintf(addr, sizeof addr, "%s", f->addr);
    fake_stop(f); /* nothing listens there now */
    c = caller(addr, false);
    t0 = now_ms();
    ASSERT_EQ(check(c, 300, &rep), BATON_EUNAVAIL);
    ASSERT_GE(now_ms() - t0, 290);
    ASSERT(strstr(baton__caller_errmsg(c), "no leader answered within 300 ms") != NULL);
    baton__caller_free(c);
    /* One node: its refused connection ends the call at once. */
    c = caller(addr, true);
    t0 = now_ms();
    ASSERT_EQ(check(c, 5000, &rep), BATON_EUNAVAIL);
    ASSERT_LT(now_ms() - t0, 1000);
    ASSERT(strstr(baton__caller_errmsg(c), addr) != NULL);
    baton__caller_free(c);
}

TEST(call_refused_at_once)
{
    struct fake *f = fake_start();
    struct baton__reply rep;
    baton__caller *c;
    int64_t t0;

    fk_hello_error(f, BATON_EAUTH, "unknown token");
    c = caller(f->addr, false);
    t0 = now_ms();
    ASSERT_EQ(check(c, 5000, &rep), BATON_EAUTH);
    ASSERT_LT(now_ms() - t0, 1000);
    ASSERT(strstr(baton__caller_errmsg(c), "unknown token") != NULL);
    baton__caller_free(c);
    fake_stop(f);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(30);
    RUN(call_follows_redirect_and_no_leader);
    RUN(call_error_reply);
    RUN(call_stream);
    RUN(call_unavailable);
    RUN(call_refused_at_once);
    return runner_done();
}
