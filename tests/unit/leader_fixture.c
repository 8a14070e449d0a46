/*
 * leader_fixture.c -- batond's server over a fake node; see leader_fixture.h.
 */
#include "tests/unit/leader_fixture.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/log.h"
#include "tests/lib/files.h"
#include "tests/lib/runner.h"
#include "tests/lib/tls_sock.h"
#include "tests/unit/fake_clock.h"

/* A free TCP port on 127.0.0.1 (bound to port 0, read, closed). */
static int free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0) close(fd);
    if (port < 0) FAIL("no free port");
    return port;
}

static void call_cb(uv_async_t *a)
{
    struct lf *f = a->data;

    pthread_mutex_lock(&f->mu);
    if (f->fn != NULL && !f->done) {
        f->fn(f, f->arg);
        f->done = true;
        pthread_cond_broadcast(&f->cv);
    }
    pthread_mutex_unlock(&f->mu);
}

/* While settling, at the end of each turn (ours runs after the server's
 * check handler: libuv runs the newest check handle first, and ours is
 * started before the server's): a turn is quiet if the loop has nothing to
 * do at once (uv_backend_timeout, our idle handle aside, is not 0). Two
 * quiet turns in a row: what the server's check handler starts (a
 * proposal, a write, a timer due now) shows in the next turn's look,
 * whichever order the two handlers ran in. */
static void settle_idle_cb(uv_idle_t *h)
{
    (void)h;
}

static void settle_check_cb(uv_check_t *h)
{
    struct lf *f = h->data;

    if (!f->settling) return;
    uv_idle_stop(&f->settle_idle);
    f->quiet = uv_backend_timeout(&f->loop) != 0 ? f->quiet + 1 : 0;
    if (f->quiet < 2) {
        uv_idle_start(&f->settle_idle, settle_idle_cb);
        return;
    }
    pthread_mutex_lock(&f->mu);
    f->settling = false;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

/* The loop thread: everything of the server, from uv_loop_init on, runs
 * here and reads the fake clock. */
static void *loop_main(void *arg)
{
    struct lf *f = arg;
    int rv;

    fake_clock_bind_thread();
    uv_loop_init(&f->loop);
    uv_check_init(&f->loop, &f->settle_check);
    f->settle_check.data = f;
    uv_check_start(&f->settle_check, settle_check_cb);
    uv_idle_init(&f->loop, &f->settle_idle);
    rv = server_init(&f->srv, &f->loop, f->st, &f->cfg, &fake_node_io);
    if (rv != 0) FAIL("server_init: %d", rv);
    uv_async_init(&f->loop, &f->call, call_cb);
    f->call.data = f;
    pthread_mutex_lock(&f->mu);
    f->started = true;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    return NULL;
}

void lf_start(struct lf *f, const char *const *extra)
{
    char cluster[128], data[300];
    const char *argv[64];
    int argc = 0;
    char err[BATON_ERRMSG_SIZE];

    memset(f, 0, sizeof *f);
    if (tmpdir_make(f->dir, sizeof f->dir, "baton-leader") != 0) FAIL("tmpdir");
    snprintf(f->endpoint, sizeof f->endpoint, "127.0.0.1:%d", free_port());
    snprintf(cluster, sizeof cluster, "1=127.0.0.1:%d/%s", free_port(), f->endpoint);
    snprintf(data, sizeof data, "%s", f->dir);
    argv[argc++] = "batond";
    argv[argc++] = "--id";
    argv[argc++] = "1";
    argv[argc++] = "--data";
    argv[argc++] = data;
    argv[argc++] = "--cluster";
    argv[argc++] = cluster;
    argv[argc++] = "--log-level";
    argv[argc++] = getenv("LF_DEBUG") ? "debug" : "error";
    for (int i = 0; extra != NULL && extra[i] != NULL && argc < 62; i++) argv[argc++] = extra[i];
    argv[argc] = NULL;
    if (config_parse(&f->cfg, argc, (char **)argv) != 0) FAIL("config_parse");
    log_set_level(f->cfg.log_level);
    if (store_open(f->dir, &f->st, err) != 0) FAIL("store_open: %s", err);
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    if (pthread_create(&f->thread, NULL, loop_main, f) != 0) FAIL("pthread_create");
    pthread_mutex_lock(&f->mu);
    while (!f->started) pthread_cond_wait(&f->cv, &f->mu);
    pthread_mutex_unlock(&f->mu);
}

void lf_on_loop(struct lf *f, void (*fn)(struct lf *f, void *arg), void *arg)
{
    pthread_mutex_lock(&f->mu);
    f->fn = fn;
    f->arg = arg;
    f->done = false;
    uv_async_send(&f->call);
    while (!f->done) pthread_cond_wait(&f->cv, &f->mu);
    f->fn = NULL;
    pthread_mutex_unlock(&f->mu);
}

static void get_stats(struct lf *f, void *arg)
{
    fake_node_stats(f->srv.node, arg);
}

void lf_node_stats(struct lf *f, struct fake_node_stats *out)
{
    lf_on_loop(f, get_stats, out);
}

static void settle_begin(struct lf *f, void *arg)
{
    (void)arg;
    f->settling = true; /* call_cb holds f->mu */
    f->quiet = 0;
    uv_idle_start(&f->settle_idle, settle_idle_cb);
}

void lf_settle(struct lf *f)
{
    lf_on_loop(f, settle_begin, NULL);
    pthread_mutex_lock(&f->mu);
    while (f->settling) pthread_cond_wait(&f->cv, &f->mu);
    pthread_mutex_unlock(&f->mu);
}

void lf_advance(struct lf *f, uint64_t ms)
{
    fake_clock_advance(ms);
    lf_settle(f);
}

struct lock_query {
    const char *name;
    struct lf_lock_state *out;
    int rv;
};

static void get_lock(struct lf *f, void *arg)
{
    struct lock_query *q = arg;
    struct msg_lock_info_r info;

    memset(&info, 0, sizeof info);
    q->rv = store_lock_info(f->st, q->name, strlen(q->name), 0, &info);
    *q->out = (struct lf_lock_state){.held = info.held != 0, .delayed = info.delayed != 0,
                                     .holder = info.holder_session, .fence = info.fence,
                                     .waiters = info.total_waiters};
    store_lock_info_free(&info);
}

void lf_lock_state(struct lf *f, const char *name, struct lf_lock_state *out)
{
    struct lock_query q = {.name = name, .out = out};

    lf_on_loop(f, get_lock, &q);
    if (q.rv != 0) FAIL("store_lock_info %s: %d", name, q.rv);
}

struct session_query {
    uint64_t session;
    int rv;
};

static void get_session(struct lf *f, void *arg)
{
    struct session_query *q = arg;

    q->rv = store_session_exists(f->st, q->session);
}

bool lf_session_exists(struct lf *f, uint64_t session)
{
    struct session_query q = {.session = session};

    lf_on_loop(f, get_session, &q);
    if (q.rv < 0) FAIL("store_session_exists %llu: %d", (unsigned long long)session, q.rv);
    return q.rv == 1;
}

static void set_leading(struct lf *f, void *arg)
{
    fake_node_set_leading(f->srv.node, *(bool *)arg);
}

static void is_ready(struct lf *f, void *arg)
{
    *(bool *)arg = f->srv.ready;
}

void lf_set_leading(struct lf *f, bool leading)
{
    bool ready = !leading;

    lf_on_loop(f, set_leading, &leading);
    lf_settle(f);
    lf_on_loop(f, is_ready, &ready);
    if (ready != leading) FAIL("the server did not see the node %s", leading ? "lead" : "stop");
}

static void stop(struct lf *f, void *arg)
{
    (void)arg;
    server_stop(&f->srv);
    uv_close((uv_handle_t *)&f->call, NULL);
    uv_close((uv_handle_t *)&f->settle_check, NULL);
    uv_close((uv_handle_t *)&f->settle_idle, NULL);
}

void lf_stop(struct lf *f)
{
    lf_on_loop(f, stop, NULL);
    pthread_join(f->thread, NULL);
    server_free(&f->srv);
    store_close(f->st);
    if (uv_loop_close(&f->loop) != 0) FAIL("the server's loop still has handles");
    config_free(&f->cfg);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
    rm_rf(f->dir);
}

void lf_raw_connect(const struct lf *f, struct tls_sock *s, const char *token)
{
    const char *colon = strrchr(f->endpoint, ':');

    if (tls_sock_connect(s, atoi(colon + 1), &(struct tls_sock_cfg){0}, 2000) != 0)
        FAIL("connect: %s", s->err);
    if (tls_sock_hello(s, token, NULL) != 0) FAIL("hello: %s", s->err);
}

uint64_t lf_raw_open(struct tls_sock *s, uint32_t ttl_ms, const char *client)
{
    struct msg m = {.type = MSG_OPEN_SESSION, .req_id = 1}, r;
    uint64_t id;

    m.u.open_session.ttl_ms = ttl_ms;
    m.u.open_session.client_name = (struct pstr){client, (uint16_t)strlen(client)};
    if (tls_sock_request(s, &m, &r, 2000) != 0) FAIL("open: %s", s->err);
    ASSERT_EQ(r.type, MSG_SESSION);
    id = r.u.session.session;
    msg_free(&r);
    return id;
}
