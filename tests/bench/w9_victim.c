/*
 * w9_victim.c -- W9's candidate process: lockbench --workload W9 --victim N
 * --endpoints E [--ttl-ms T ...], started by W9's run (w9_cand.c) and
 * meant to be killed with SIGKILL while it leads, so that its session
 * ends only when its lease runs out in the cluster.
 *
 * It opens one session (client name lockbench-w9-victim-N), campaigns for
 * the election with the value "victim-N" and no lock-delay (the next
 * candidate leads as soon as the lease ends), and speaks the line protocol
 * of w9.h on its stdout and stdin: "q POS" when queued, "l FENCE T" when
 * it leads, "r" once a try-lock of its own name "w9-renew-N" (a request
 * that renews the session's lease) is answered after a "k", "x WHY" when
 * something fails or its leadership is lost. At EOF on stdin it closes
 * its session and exits 0.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "baton/adapters/libuv.h"
#include "tests/bench/w9.h"

struct victim {
    const struct cfg *cfg;
    uv_loop_t loop;
    uv_pipe_t in;
    char buf[W9_LINE_MAX];
    size_t blen;
    baton_async_t *ac;
    char value[W9_VALUE_MAX], renew[W9_VALUE_MAX];
    bool open, leading, closing;
    int rc;
};

/* One line of the protocol to lockbench, at once. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

static void on_closed(baton_async_t *ac, int status, void *data)
{
    (void)status, (void)data;
    baton_async_free(ac);
}

/* The end: stop reading, close the session; the loop then runs dry. */
static void victim_end(struct victim *v)
{
    if (v->closing) return;
    v->closing = true;
    if (!uv_is_closing((uv_handle_t *)&v->in)) uv_close((uv_handle_t *)&v->in, NULL);
    if (v->ac != NULL && (!v->open || baton_async_close_session(v->ac, on_closed, v) != 0))
        baton_async_free(v->ac);
}

static void fail(struct victim *v, const char *what, int rv)
{
    say("x %s: %s (%s)", what, baton_err_name(rv), v->ac ? baton_async_errmsg(v->ac) : "");
    v->rc = 1;
    victim_end(v);
}

static void on_renewed(baton_async_t *ac, int status, const char *name, uint64_t fence,
                       void *data)
{
    (void)ac, (void)name, (void)fence;
    if (status != 0 && status != BATON_EWOULDBLOCK) {
        fail(data, "renew", status);
        return;
    }
    say("r");
}

static void on_campaign(baton_async_t *ac, int status, const char *name, uint64_t fence,
                        void *data)
{
    struct victim *v = data;
    int64_t t = now_ns();

    (void)ac, (void)name;
    if (v->closing) return;
    if (status != 0) {
        fail(v, "campaign", status);
        return;
    }
    v->leading = true;
    say("l %" PRIu64 " %" PRId64, fence, t);
}

static void on_queued(baton_async_t *ac, const char *lock, uint32_t position, void *call_data,
                      void *data)
{
    (void)ac, (void)lock, (void)call_data, (void)data;
    say("q %u", position);
}

static void on_lost(baton_async_t *ac, const char *lock, uint64_t fence, int why, void *data)
{
    struct victim *v = data;

    (void)ac;
    if (v->closing) return;
    say("x lost %s (fence %" PRIu64 "): %s", lock, fence, baton_err_name(why));
    v->rc = 1;
    victim_end(v);
}

static void on_open(baton_async_t *ac, int status, uint64_t session, void *data)
{
    struct victim *v = data;
    baton_lock_args a = {.wait_ms = BATON_WAIT_FOREVER, .lock_delay_ms = BATON_LOCK_DELAY_NONE};
    int rv;

    (void)session;
    if (v->closing) return;
    if (status != 0) {
        fail(v, "connect", status);
        return;
    }
    v->open = true;
    baton_async_on_lost(ac, on_lost, v);
    baton_async_on_queued(ac, on_queued, v);
    rv = baton_async_campaign(ac, W9_ELECTION, v->value, strlen(v->value), &a, on_campaign, v);
    if (rv != 0) fail(v, "campaign", rv);
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    struct victim *v = h->data;

    (void)hint;
    buf->base = v->buf + v->blen;
    buf->len = sizeof v->buf - v->blen;
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct victim *v = s->data;
    int rv;

    (void)buf;
    if (n < 0) { /* EOF: lockbench is done (or gone) */
        victim_end(v);
        return;
    }
    v->blen += (size_t)n;
    for (size_t i = 0; i < v->blen; i++) {
        if (v->buf[i] != 'k') continue;
        rv = v->leading ? baton_async_lock(v->ac, v->renew, BATON_WAIT_TRY, on_renewed, v)
                        : BATON_ENOTHELD;
        if (rv != 0) {
            fail(v, "renew", rv);
            return;
        }
    }
    v->blen = 0;
}

int run_w9_victim(const struct cfg *cfg)
{
    struct victim v;
    int rv;

    memset(&v, 0, sizeof v);
    v.cfg = cfg;
    snprintf(v.value, sizeof v.value, "victim-%d", cfg->victim);
    snprintf(v.renew, sizeof v.renew, "w9-renew-%d", cfg->victim);
    uv_loop_init(&v.loop);
    uv_pipe_init(&v.loop, &v.in, 0);
    v.in.data = &v;
    if (uv_pipe_open(&v.in, 0) != 0 ||
        uv_read_start((uv_stream_t *)&v.in, alloc_cb, read_cb) != 0) {
        say("x cannot read stdin");
        return 1;
    }
    rv = bench_async_open(cfg, "lockbench-w9-victim-", cfg->victim, &v.loop, on_open, &v, &v.ac);
    if (rv != 0) fail(&v, "connect", rv);
    uv_run(&v.loop, UV_RUN_DEFAULT);
    uv_loop_close(&v.loop);
    return v.rc;
}
