/*
 * w9_cand.c -- W9's candidates (w9.h): the local ones, sessions of this
 * process that campaign and resign (baton_async_campaign, then
 * baton_async_unlock: an election's resign), and the victims, each a
 * lockbench --victim process (w9_victim.c) spawned here, talked to over
 * its stdin and stdout, and killed with SIGKILL.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/bench/w9.h"

/* ---- local candidates ------------------------------------------------------------- */

static void on_lost(baton_async_t *ac, const char *lock, uint64_t fence, int why, void *data)
{
    struct w9cand *c = data;

    (void)ac;
    if (c->w->phase == P_END) return;
    c->w->errors++;
    note("W9: %s lost %s (fence %" PRIu64 "): %s", c->value, lock, fence, baton_err_name(why));
    w9_abort(c->w, "a local candidate lost its leadership");
}

static void on_queued(baton_async_t *ac, const char *lock, uint32_t position, void *call_data,
                      void *data)
{
    struct w9cand *c = data;

    (void)ac, (void)lock, (void)position, (void)call_data;
    if (c->state != C_CAMPAIGN) return; /* a re-sent campaign is queued again */
    c->state = C_QUEUED;
    w9_queued(c->w, c);
}

static void on_open(baton_async_t *ac, int status, uint64_t session, void *data)
{
    struct w9cand *c = data;
    struct w9 *w = c->w;

    (void)session;
    w->n_open_pending--;
    if (w->phase == P_END) return; /* freed at the end before it opened */
    if (status != 0) {
        c->state = C_GONE;
        w->errors++;
        log_err(c->id, "connect", status, baton_async_errmsg(ac));
        w9_abort(w, "a candidate could not open its session");
        return;
    }
    baton_async_on_lost(ac, on_lost, c);
    baton_async_on_queued(ac, on_queued, c);
    c->state = C_IDLE;
    w9_step(w);
}

int w9_local_open(struct w9 *w, struct w9cand *c)
{
    c->w = w;
    c->kind = W9_LOCAL;
    c->state = C_OPENING;
    snprintf(c->value, sizeof c->value, "local-%d", c->id);
    w->n_open_pending++;
    if (bench_async_open(w->cfg, "lockbench-w9-", c->id, &w->loop, on_open, c, &c->ac) != 0) {
        w->n_open_pending--;
        c->state = C_GONE;
        w->errors++;
        return -1;
    }
    return 0;
}

static void on_campaign(baton_async_t *ac, int status, const char *name, uint64_t fence,
                        void *data)
{
    struct w9cand *c = data;
    struct w9 *w = c->w;

    (void)name;
    if (w->phase == P_END) return;
    if (status != 0 && w9_retry_campaign(w, c, status)) return;
    if (status != 0) {
        c->state = C_GONE;
        w->errors++;
        log_err(c->id, "campaign", status, baton_async_errmsg(ac));
        w9_abort(w, "a campaign failed");
        return;
    }
    if (c->state == C_CAMPAIGN) w9_queued(w, c); /* led at once: it was never queued */
    c->state = C_LEADING;
    c->fence = fence;
    w9_leads(w, c, fence, now_ns());
}

int w9_local_campaign(struct w9cand *c)
{
    baton_lock_args a = {.wait_ms = BATON_WAIT_FOREVER};
    int rv;

    c->state = C_CAMPAIGN;
    rv = baton_async_campaign(c->ac, W9_ELECTION, c->value, strlen(c->value), &a, on_campaign, c);
    if (rv != 0) {
        c->state = C_GONE;
        c->w->errors++;
        log_err(c->id, "campaign", rv, baton_async_errmsg(c->ac));
    }
    return rv;
}

static void on_resigned(baton_async_t *ac, int status, void *data)
{
    struct w9cand *c = data;

    if (c->w->phase == P_END) return;
    if (status != 0) {
        c->w->errors++;
        log_err(c->id, "resign", status, baton_async_errmsg(ac));
    }
    c->state = C_IDLE;
    w9_step(c->w);
}

int w9_local_resign(struct w9cand *c)
{
    int rv;

    c->state = C_RESIGNING;
    rv = baton_async_unlock(c->ac, W9_ELECTION, c->fence, on_resigned, c);
    if (rv != 0) {
        c->w->errors++;
        log_err(c->id, "resign", rv, baton_async_errmsg(c->ac));
    }
    return rv;
}

/* ---- victims ------------------------------------------------------------------------ */

static void victim_handle_closed(uv_handle_t *h)
{
    struct w9cand *c = h->data;

    if (--c->open_handles == 0) {
        struct w9 *w = c->w;
        w9_forget(w, c);
        free(c);
        w9_closed(w);
    }
}

static void victim_close(struct w9cand *c)
{
    if (!uv_is_closing((uv_handle_t *)&c->in))
        uv_close((uv_handle_t *)&c->in, victim_handle_closed);
    if (!uv_is_closing((uv_handle_t *)&c->out))
        uv_close((uv_handle_t *)&c->out, victim_handle_closed);
}

static void on_exit_cb(uv_process_t *p, int64_t status, int sig)
{
    struct w9cand *c = p->data;
    struct w9 *w = c->w;
    bool expected = c->state == C_GONE || w->phase == P_END;

    c->exited = true;
    if (!expected) {
        w->errors++;
        note("W9: %s exited (status %" PRId64 ", signal %d) while in line", c->value, status, sig);
        c->state = C_GONE;
    }
    uv_close((uv_handle_t *)p, victim_handle_closed);
    victim_close(c);
    if (!expected) w9_abort(w, "a victim process ended by itself");
}

/* One line from the victim (without its '\n'). */
static void victim_line(struct w9cand *c, const char *line)
{
    struct w9 *w = c->w;
    unsigned long long fence;
    long long t;

    if (w->phase == P_END || c->state == C_GONE) return;
    if (line[0] == 'q') {
        if (c->state == C_CAMPAIGN) {
            c->state = C_QUEUED;
            w9_queued(w, c);
        }
    } else if (line[0] == 'l' && sscanf(line, "l %llu %lld", &fence, &t) == 2) {
        if (c->state == C_CAMPAIGN) w9_queued(w, c);
        c->state = C_LEADING;
        c->fence = fence;
        w9_leads(w, c, fence, t);
    } else if (line[0] == 'r' && c->state == C_RENEWING) {
        w9_renewed(w, c);
    } else {
        w->errors++;
        note("W9: %s says '%s'", c->value, line);
        w9_abort(w, "a victim failed");
    }
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    struct w9cand *c = h->data;

    (void)hint;
    buf->base = c->buf + c->blen;
    buf->len = sizeof c->buf - c->blen;
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct w9cand *c = s->data;
    char *nl;

    (void)buf;
    if (n < 0) { /* EOF: it exited (or was killed); on_exit_cb does the rest */
        uv_read_stop(s);
        return;
    }
    c->blen += (size_t)n;
    while ((nl = memchr(c->buf, '\n', c->blen)) != NULL) {
        size_t len = (size_t)(nl - c->buf);
        *nl = '\0';
        victim_line(c, c->buf);
        memmove(c->buf, nl + 1, c->blen - len - 1);
        c->blen -= len + 1;
    }
    if (c->blen == sizeof c->buf) c->blen = 0; /* a line that long is garbage */
}

/* argv of a victim: the cluster, its number, its timeouts and credentials
 * (uv_spawn takes char *; nothing writes to them). */
static void victim_args(const struct w9 *w, int id, char (*num)[24], char **argv)
{
    const struct cfg *cfg = w->cfg;
    int k = 0;

#define ARG(s) (argv[k++] = (char *)(uintptr_t)(s))
    snprintf(num[0], sizeof num[0], "%d", id + 1);
    snprintf(num[1], sizeof num[1], "%u", cfg->ttl_ms);
    snprintf(num[2], sizeof num[2], "%u", cfg->op_timeout_ms);
    snprintf(num[3], sizeof num[3], "%u", cfg->connect_timeout_ms);
    ARG(w->exe);
    ARG("--endpoints"), ARG(cfg->endpoints);
    ARG("--workload"), ARG("W9");
    ARG("--victim"), ARG(num[0]);
    if (cfg->ttl_ms) ARG("--ttl-ms"), ARG(num[1]);
    ARG("--op-timeout-ms"), ARG(num[2]);
    ARG("--connect-timeout-ms"), ARG(num[3]);
    if (cfg->cacert) ARG("--cacert"), ARG(cfg->cacert);
    if (cfg->cert) ARG("--cert"), ARG(cfg->cert);
    if (cfg->key) ARG("--key"), ARG(cfg->key);
    if (cfg->token) ARG("--token"), ARG(cfg->token);
#undef ARG
    argv[k] = NULL;
}

struct w9cand *w9_victim_spawn(struct w9 *w)
{
    struct w9cand *c = calloc(1, sizeof *c);
    uv_process_options_t po;
    uv_stdio_container_t io[3];
    char num[4][24], *argv[32];
    int rv;

    if (c == NULL) {
        note("W9: out of memory");
        return NULL;
    }
    c->w = w;
    c->kind = W9_VICTIM;
    c->id = w->n_victims++;
    c->state = C_CAMPAIGN; /* it campaigns as soon as its session is open */
    snprintf(c->value, sizeof c->value, "victim-%d", c->id + 1);
    c->proc.data = c->in.data = c->out.data = c;
    w->ends++; /* until victim_handle_closed has freed it */
    uv_pipe_init(&w->loop, &c->in, 0);
    uv_pipe_init(&w->loop, &c->out, 0);
    c->open_handles = 2;
    victim_args(w, c->id, num, argv);
    memset(&po, 0, sizeof po);
    memset(io, 0, sizeof io);
    io[0].flags = UV_CREATE_PIPE | UV_READABLE_PIPE;
    io[0].data.stream = (uv_stream_t *)&c->in;
    io[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    io[1].data.stream = (uv_stream_t *)&c->out;
    io[2].flags = UV_INHERIT_FD;
    io[2].data.fd = 2;
    po.file = w->exe;
    po.args = argv;
    po.stdio = io;
    po.stdio_count = 3;
    po.exit_cb = on_exit_cb;
    rv = uv_spawn(&w->loop, &c->proc, &po);
    if (rv != 0) {
        note("W9: cannot start %s: %s", w->exe, uv_strerror(rv));
        w->errors++;
        c->state = C_GONE;
        /* uv_spawn failed: the process handle must still be closed */
        c->open_handles++;
        uv_close((uv_handle_t *)&c->proc, victim_handle_closed);
        victim_close(c);
        return NULL;
    }
    c->open_handles++;
    uv_read_start((uv_stream_t *)&c->out, alloc_cb, read_cb);
    return c;
}

int w9_victim_renew(struct w9cand *c)
{
    static char k[] = "k\n";
    uv_buf_t b = uv_buf_init(k, 2);

    c->state = C_RENEWING;
    return uv_write(&c->wreq, (uv_stream_t *)&c->in, &b, 1, NULL);
}

int w9_victim_kill(struct w9cand *c)
{
    c->state = C_GONE;
    return uv_process_kill(&c->proc, SIGKILL);
}

/* ---- the end ----------------------------------------------------------------------- */

static void on_local_closed(baton_async_t *ac, int status, void *data)
{
    struct w9cand *c = data;

    (void)status;
    baton_async_free(ac);
    c->ac = NULL;
    w9_closed(c->w);
}

void w9_cands_close(struct w9 *w)
{
    for (int i = 0; i < w->n_local; i++) {
        struct w9cand *c = &w->local[i];
        if (c->ac == NULL) continue;
        w->ends++;
        if (baton_async_close_session(c->ac, on_local_closed, c) != 0) {
            baton_async_free(c->ac);
            c->ac = NULL;
            w9_closed(w);
        }
    }
    /* Victims still in line: EOF on their stdin ends them (they close
     * their sessions); their handles close when they exit. */
    for (int i = 0; i < w->line_n; i++) {
        struct w9cand *c = w->line[i];
        if (c->kind != W9_VICTIM || c->exited) continue;
        if (!uv_is_closing((uv_handle_t *)&c->in))
            uv_close((uv_handle_t *)&c->in, victim_handle_closed);
    }
}

void w9_victims_kill_all(struct w9 *w)
{
    for (int i = 0; i < w->line_n; i++) {
        struct w9cand *c = w->line[i];
        if (c->kind == W9_VICTIM && !c->exited) {
            note("W9: %s did not end after its stdin closed; killing it", c->value);
            uv_process_kill(&c->proc, SIGKILL);
        }
    }
}
