/*
 * http.c -- batond --metrics-addr: a small HTTP server (libmicrohttpd) for
 * monitoring (docs/operations.md, "Metrics and health"):
 *
 *   GET /metrics   200, the Prometheus text exposition (observe.c)
 *   GET /healthz   200 "ok" while the process runs its loop
 *   GET /readyz    200 "ready" once the node knows a leader and has applied
 *                  up to its commit index (a leader: once its barrier
 *                  applied); else 503 with the reason on one line
 *   anything else  404 (405 for a method other than GET or HEAD)
 *
 * Threads: none of its own. libmicrohttpd runs in its "external" epoll
 * mode: its epoll descriptor is watched by a uv_poll_t on batond's loop,
 * and a uv_timer_t wakes it for its own timeouts (MHD_get_timeout); both
 * call MHD_run, which never blocks. So the handlers run on the loop thread
 * and read the server's state directly, like every other request. It
 * holds at most HTTP_MAX_CONNS connections, each closed after
 * HTTP_TIMEOUT_S idle seconds; the answers are small and built at once.
 */
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "server/log.h"
#include "server/resolve.h"
#include "server/server_int.h"

#define HTTP_MAX_CONNS 16
#define HTTP_TIMEOUT_S 10
#define HTTP_CONN_MEMORY (64u << 10)

struct http {
    struct MHD_Daemon *daemon;
    uv_poll_t poll;
    uv_timer_t timer;
    int open_handles;       /* of poll and timer: h is freed when both closed */
    struct server *srv;
};

static void http_log(void *cls, const char *fmt, va_list ap)
{
    char text[256];
    size_t n;

    (void)cls;
    vsnprintf(text, sizeof text, fmt, ap);
    n = strlen(text);
    while (n > 0 && text[n - 1] == '\n') text[--n] = '\0';
    log_warn("http: %s", text);
}

/* Queue an answer of len bytes of body (copied). */
static enum MHD_Result answer(struct MHD_Connection *conn, unsigned code, const char *type,
                              const void *body, size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result rv;

    if (r == NULL) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    rv = MHD_queue_response(conn, code, r);
    MHD_destroy_response(r);
    return rv;
}

static enum MHD_Result answer_text(struct MHD_Connection *conn, unsigned code, const char *text)
{
    return answer(conn, code, "text/plain; charset=utf-8", text, strlen(text));
}

static enum MHD_Result serve_metrics(struct http *h, struct MHD_Connection *conn)
{
    struct buf text = {0};
    enum MHD_Result rv;

    if (observe_render(h->srv, NULL, &text) != 0) {
        buf_free(&text);
        return answer_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
    }
    rv = answer(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text.data,
                text.len);
    buf_free(&text);
    return rv;
}

static enum MHD_Result serve_ready(struct http *h, struct MHD_Connection *conn)
{
    char why[200], line[220];

    if (observe_ready(h->srv, why, sizeof why)) return answer_text(conn, MHD_HTTP_OK, "ready\n");
    snprintf(line, sizeof line, "not ready: %s\n", why);
    return answer_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, line);
}

/* One request, answered at its first call (no request has a body here). */
static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls)
{
    struct http *h = cls;

    (void)version;
    (void)upload_data;
    (void)con_cls;
    if (*upload_data_size != 0) { /* a body nobody asked for: drop it */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return answer_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n");
    if (strcmp(url, "/metrics") == 0) return serve_metrics(h, conn);
    if (strcmp(url, "/healthz") == 0) return answer_text(conn, MHD_HTTP_OK, "ok\n");
    if (strcmp(url, "/readyz") == 0) return serve_ready(h, conn);
    return answer_text(conn, MHD_HTTP_NOT_FOUND, "not found: /metrics, /healthz, /readyz\n");
}

static void timer_cb(uv_timer_t *t);

/* Let libmicrohttpd do what is due, then arm the timer for its next
 * timeout (none: it waits for its descriptor only). */
static void run(struct http *h)
{
    MHD_UNSIGNED_LONG_LONG ms;

    MHD_run(h->daemon);
    if (MHD_get_timeout(h->daemon, &ms) == MHD_YES)
        uv_timer_start(&h->timer, timer_cb, ms, 0);
    else
        uv_timer_stop(&h->timer);
}

static void timer_cb(uv_timer_t *t)
{
    run(t->data);
}

static void poll_cb(uv_poll_t *p, int status, int events)
{
    (void)status;
    (void)events;
    run(p->data);
}

int http_start(struct server *srv)
{
    const union MHD_DaemonInfo *info;
    struct sockaddr_storage sa;
    struct http *h;
    int rv;

    if (srv->cfg.metrics_addr == NULL) return 0;
    /* One listener: the first address a name resolves to. */
    if (resolve_listen_addrs("--metrics-addr", srv->cfg.metrics_addr, &sa, 1) < 0)
        return BATON_EINVAL;
    h = xcalloc(1, sizeof *h);
    h->srv = srv;
    h->daemon = MHD_start_daemon(
        MHD_USE_EPOLL | MHD_USE_ERROR_LOG | (sa.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
        ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                       : ((struct sockaddr_in *)&sa)->sin_port),
        NULL, NULL, handler, h,
        MHD_OPTION_EXTERNAL_LOGGER, http_log, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_MAX_CONNS,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_TIMEOUT_S,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONN_MEMORY, MHD_OPTION_END);
    if (h->daemon == NULL) {
        log_error("cannot serve HTTP on --metrics-addr %s (in use, or not this host's?)",
                  srv->cfg.metrics_addr);
        free(h);
        return BATON_EIO;
    }
    info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    rv = info != NULL ? uv_poll_init(srv->loop, &h->poll, info->epoll_fd) : UV_EINVAL;
    if (rv != 0) {
        log_error("--metrics-addr: cannot watch libmicrohttpd's descriptor: %s", uv_strerror(rv));
        MHD_stop_daemon(h->daemon);
        free(h);
        return BATON_EIO;
    }
    h->poll.data = h;
    uv_timer_init(srv->loop, &h->timer);
    h->timer.data = h;
    uv_poll_start(&h->poll, UV_READABLE, poll_cb);
    srv->http = h;
    run(h);
    log_info("metrics and health on http://%s/metrics, /healthz, /readyz", srv->cfg.metrics_addr);
    return 0;
}

static void closed_cb(uv_handle_t *handle)
{
    struct http *h = handle->data;

    if (--h->open_handles == 0) free(h);
}

void http_stop(struct server *srv)
{
    struct http *h = srv->http;

    if (h == NULL) return;
    srv->http = NULL;
    h->open_handles = 2;
    /* The poll handle leaves libuv's epoll set before libmicrohttpd
     * closes the descriptor it watches. */
    uv_close((uv_handle_t *)&h->poll, closed_cb);
    MHD_stop_daemon(h->daemon);
    h->daemon = NULL;
    uv_close((uv_handle_t *)&h->timer, closed_cb);
}
