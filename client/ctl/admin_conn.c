/*
 * admin_conn.c -- batonctl's blocking connection to one batond: connect
 * with a deadline, HELLO, then one request and its reply at a time. Every
 * wait is a poll() bounded by the caller's deadline, so no command can hang
 * longer than its --timeout.
 *
 * On top of it, admin_leader_request() sends a request to the leader the
 * way the client library does: any endpoint first, then wherever REDIRECT
 * points, waiting briefly on NO_LEADER or a broken connection. A node that
 * refuses us (BATON_ETLS, BATON_EAUTH, BATON_EPERM) ends it at once: the
 * others share its certificates and auth file.
 *
 * With --cacert the connection speaks TLS (admin_tls.c): the bytes go
 * through admin_send / admin_recv, and HELLO carries --token either way.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "client/ctl/ctl.h"
#include "baton/baton_defs.h"

/* How long one connection attempt may take inside a longer request, so
 * that one black-holed endpoint does not use up the whole timeout. */
#define CONNECT_SLICE_MS 2000
/* Pause after NO_LEADER, or after every endpoint failed once. */
#define RETRY_PAUSE_MS 100

int64_t ctl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void ctl_sleep_until(int64_t ms, int64_t deadline)
{
    int64_t left = deadline - ctl_now_ms();
    struct timespec ts;

    if (ms > left) ms = left;
    if (ms <= 0) return;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Wait until fd is ready for `events` or the deadline passes. 0 or
 * BATON_ETIMEDOUT / BATON_EIO. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = events};
        int64_t left = deadline - ctl_now_ms();
        int rv;

        if (left <= 0) return BATON_ETIMEDOUT;
        rv = poll(&p, 1, left > 60000 ? 60000 : (int)left);
        if (rv > 0) return 0;
        if (rv < 0 && errno != EINTR) return BATON_EIO;
    }
}

static int errno_to_baton(int e)
{
    switch (e) {
    case ECONNREFUSED: return BATON_ECONNREFUSED;
    case ETIMEDOUT: return BATON_ETIMEDOUT;
    case ENOMEM: return BATON_ENOMEM;
    case ECONNRESET:
    case EPIPE: return BATON_ECLOSED;
    default: return BATON_EIO;
    }
}

/* Try one resolved address. Returns a connected non-blocking socket, or a
 * negative BATON_E* code with *sys_errno set when the OS said why. */
static int connect_one(const struct addrinfo *ai, int64_t deadline, int *sys_errno)
{
    int fd, rv, soerr = 0;
    socklen_t len = sizeof soerr;

    *sys_errno = 0;
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *sys_errno = errno;
        return errno_to_baton(errno);
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) return fd;
    if (errno != EINPROGRESS) {
        *sys_errno = errno;
        close(fd);
        return errno_to_baton(*sys_errno);
    }
    rv = wait_fd(fd, POLLOUT, deadline);
    if (rv != 0) {
        close(fd);
        return rv;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0) soerr = errno;
    if (soerr != 0) {
        *sys_errno = soerr;
        close(fd);
        return errno_to_baton(soerr);
    }
    return fd;
}

/* Write the whole buffer before the deadline. */
int admin_raw_send(struct admin_conn *c, const uint8_t *p, size_t n, int64_t deadline)
{
    while (n > 0) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int rv = wait_fd(c->fd, POLLOUT, deadline);
            if (rv != 0) return rv;
            continue;
        }
        return errno_to_baton(errno);
    }
    return 0;
}

int admin_raw_recv(struct admin_conn *c, uint8_t *p, size_t cap, size_t *got, int64_t deadline)
{
    for (;;) {
        ssize_t r = recv(c->fd, p, cap, 0);
        int rv;

        if (r > 0) {
            *got = (size_t)r;
            return 0;
        }
        if (r == 0) return BATON_ECLOSED;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return errno_to_baton(errno);
        rv = wait_fd(c->fd, POLLIN, deadline);
        if (rv != 0) return rv;
    }
}

/* Read until one whole frame is buffered, then decode it into *rep. */
static int read_frame(struct admin_conn *c, struct admin_reply *rep, int64_t deadline)
{
    for (;;) {
        size_t flen = 0;
        int rv = proto_frame_check(c->in.data, c->in.len, &flen);

        if (rv < 0) return BATON_EPROTO;
        if (rv == 1) {
            rep->frame = malloc(flen);
            if (rep->frame == NULL) return BATON_ENOMEM;
            memcpy(rep->frame, c->in.data, flen);
            buf_consume(&c->in, flen);
            rv = proto_decode(rep->frame, flen, &rep->m);
            if (rv != 0) {
                free(rep->frame);
                rep->frame = NULL;
                memset(&rep->m, 0, sizeof rep->m);
                return BATON_EPROTO;
            }
            return 0;
        }
        rv = admin_recv(c, deadline);
        if (rv != 0) return rv;
    }
}

void admin_reply_free(struct admin_reply *r)
{
    if (r == NULL) return;
    if (r->frame != NULL) msg_free(&r->m);
    free(r->frame);
    r->frame = NULL;
    memset(&r->m, 0, sizeof r->m);
}

void admin_close(struct admin_conn *c)
{
    if (c == NULL) return;
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    buf_free(&c->in);
    admin_tls_end(c);
}

/* Fill err with "addr: text" for a transport-level failure: what TLS said
 * about it, the system's reason, or the code's. */
static void conn_err(const struct admin_conn *c, int code, int sys_errno, char *err, size_t errlen)
{
    if (c->why[0] != '\0')
        snprintf(err, errlen, "%s: %s", c->addr, c->why);
    else if (sys_errno != 0)
        snprintf(err, errlen, "%s: %s", c->addr, strerror(sys_errno));
    else
        snprintf(err, errlen, "%s: %s", c->addr, baton_strerror(code));
}

/* What the user may change when a node refuses the credentials (batond's
 * own messages already say what to do about TLS). */
static const char *refusal_hint(int code)
{
    return code == BATON_EAUTH ? " (check --token / BATON_TOKEN, or --cert)" : "";
}

int admin_roundtrip(struct admin_conn *c, struct msg *req, struct admin_reply *rep,
                    int64_t deadline, char *err, size_t errlen)
{
    struct buf out = {0};
    int rv;

    memset(rep, 0, sizeof *rep);
    if (c->fd < 0) {
        conn_err(c, BATON_ECLOSED, 0, err, errlen);
        return BATON_ECLOSED;
    }
    req->req_id = c->next_req_id++;
    rv = proto_encode(&out, req);
    if (rv != 0) {
        snprintf(err, errlen, "cannot encode %s: %s", msg_type_name(req->type), baton_strerror(rv));
        return rv;
    }
    rv = admin_send(c, out.data, out.len, deadline);
    buf_free(&out);
    /* Replies carry our req_id; an ERROR with req_id 0 is about the whole
     * connection (a node refusing plaintext, say); anything else (a push)
     * is skipped. */
    while (rv == 0) {
        rv = read_frame(c, rep, deadline);
        if (rv != 0) break;
        if (rep->m.req_id == req->req_id || (rep->m.type == MSG_ERROR && rep->m.req_id == 0))
            break;
        admin_reply_free(rep);
    }
    if (rv != 0) {
        conn_err(c, rv, 0, err, errlen);
        admin_close(c);
        return rv;
    }
    if (rep->m.type == MSG_ERROR) {
        int code = rep->m.u.error.code;
        snprintf(err, errlen, "%s: %.*s%s", c->addr, (int)rep->m.u.error.message.n,
                 rep->m.u.error.message.p, refusal_hint(code));
        if (rep->m.u.error.message.n == 0) conn_err(c, code, 0, err, errlen);
        admin_reply_free(rep);
        return code < 0 ? code : BATON_EPROTO;
    }
    return 0;
}

int admin_connect(struct admin_conn *c, const struct ctl_opts *o, const char *addr,
                  int64_t deadline, char *err, size_t errlen)
{
    char host[BATON_MAX_ADDR + 1], port[8];
    struct addrinfo hints, *res = NULL, *ai;
    struct admin_reply rep;
    struct msg hello;
    int rv = BATON_EIO, sys_errno = 0, one = 1;

    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->next_req_id = 1;
    buf_init(&c->in);
    snprintf(c->addr, sizeof c->addr, "%s", addr);
    if (strlen(addr) > BATON_MAX_ADDR ||
        ctl_split_hostport(addr, host, sizeof host, port, sizeof port) != 0) {
        snprintf(err, errlen, "bad address '%s' (expected HOST:PORT)", addr);
        return BATON_EINVAL;
    }
    rv = admin_tls_setup(c, o);
    if (rv != 0) {
        conn_err(c, rv, 0, err, errlen);
        admin_close(c);
        return rv;
    }
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    /* An IP literal never reaches a resolver (proto/addr.h: a host of
     * digits and dots is IPv4, one with a colon IPv6). A name is resolved
     * at every connection, and each of its addresses tried in order. */
    if (strchr(host, ':') != NULL || strspn(host, "0123456789.") == strlen(host))
        hints.ai_flags |= AI_NUMERICHOST;
    rv = getaddrinfo(host, port, &hints, &res);
    if (rv != 0) {
        snprintf(err, errlen, "%s: %s", addr, gai_strerror(rv));
        admin_close(c);
        return BATON_EINVAL;
    }
    rv = BATON_EIO;
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        rv = connect_one(ai, deadline, &sys_errno);
        if (rv >= 0) break;
    }
    freeaddrinfo(res);
    if (rv < 0) {
        conn_err(c, rv, sys_errno, err, errlen);
        admin_close(c);
        return rv;
    }
    c->fd = rv;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    rv = admin_tls_begin(c, host, deadline);
    if (rv != 0) {
        conn_err(c, rv, 0, err, errlen);
        admin_close(c);
        return rv;
    }

    memset(&hello, 0, sizeof hello);
    hello.type = MSG_HELLO;
    hello.u.hello.version = BATON_PROTO_VERSION;
    hello.u.hello.client_name.p = "batonctl";
    hello.u.hello.client_name.n = (uint16_t)strlen("batonctl");
    if (o->token != NULL) {
        hello.u.hello.token.p = o->token;
        hello.u.hello.token.n = (uint16_t)strlen(o->token);
    }
    rv = admin_roundtrip(c, &hello, &rep, deadline, err, errlen);
    if (rv != 0) {
        admin_close(c);
        return rv;
    }
    if (rep.m.type != MSG_HELLO_OK) {
        snprintf(err, errlen, "%s: answered HELLO with %s", addr, msg_type_name(rep.m.type));
        admin_reply_free(&rep);
        admin_close(c);
        return BATON_EPROTO;
    }
    c->node_id = rep.m.u.hello_ok.node_id;
    admin_reply_free(&rep);
    return 0;
}

int admin_status(const struct ctl_opts *o, const char *addr, int64_t deadline,
                 struct admin_reply *rep, char *err, size_t errlen)
{
    struct admin_conn c;
    struct msg req;
    int rv;

    memset(rep, 0, sizeof *rep);
    rv = admin_connect(&c, o, addr, deadline, err, errlen);
    if (rv != 0) return rv;
    memset(&req, 0, sizeof req);
    req.type = MSG_STATUS;
    rv = admin_roundtrip(&c, &req, rep, deadline, err, errlen);
    admin_close(&c);
    if (rv == 0 && rep->m.type != MSG_STATUS_R) {
        snprintf(err, errlen, "%s: answered STATUS with %s", addr, msg_type_name(rep->m.type));
        admin_reply_free(rep);
        rv = BATON_EPROTO;
    }
    return rv;
}

/* Errors after which another node (or the same one, later) may succeed. */
static int retryable(int rv)
{
    switch (rv) {
    case BATON_ECONNREFUSED:
    case BATON_ETIMEDOUT:
    case BATON_ECLOSED:
    case BATON_EIO:
    case BATON_ENOTLEADER:
    case BATON_ENOLEADER:
    case BATON_EUNAVAIL:
        return 1;
    default:
        return 0;
    }
}

int admin_read(struct admin_conn *c, struct admin_reply *rep, int64_t deadline, char *err,
               size_t errlen)
{
    int rv;

    memset(rep, 0, sizeof *rep);
    if (c->fd < 0) {
        conn_err(c, BATON_ECLOSED, 0, err, errlen);
        return BATON_ECLOSED;
    }
    rv = read_frame(c, rep, deadline);
    if (rv != 0 && rv != BATON_ETIMEDOUT) {
        conn_err(c, rv, 0, err, errlen);
        admin_close(c);
    }
    return rv;
}

int admin_leader_request(const struct ctl_opts *o, struct msg *req, struct admin_reply *rep,
                         char *err, size_t errlen)
{
    return admin_leader_open(o, req, rep, NULL, err, errlen);
}

int admin_leader_open(const struct ctl_opts *o, struct msg *req, struct admin_reply *rep,
                      struct admin_conn *keep, char *err, size_t errlen)
{
    const int64_t deadline = ctl_now_ms() + o->timeout_ms;
    char *storage = malloc(strlen(o->endpoints) + 1);
    const char *eps[CTL_MAX_ENDPOINTS];
    char redirect[BATON_MAX_ADDR + 1] = "";
    char last[CTL_ERR_SIZE] = "no endpoint tried";
    int n, next = 0, failed_in_row = 0, hops = 0, rv = BATON_EUNAVAIL;

    memset(rep, 0, sizeof *rep);
    if (storage == NULL) {
        snprintf(err, errlen, "out of memory");
        return BATON_ENOMEM;
    }
    n = ctl_split_endpoints(o->endpoints, storage, eps, CTL_MAX_ENDPOINTS, err, errlen);
    if (n < 0) {
        free(storage);
        return BATON_EINVAL;
    }
    while (ctl_now_ms() < deadline) {
        struct admin_conn c;
        const char *addr;
        int64_t cdl = ctl_now_ms() + CONNECT_SLICE_MS;

        if (redirect[0] != '\0') {
            addr = redirect;
        } else {
            addr = eps[next];
            next = (next + 1) % n;
        }
        rv = admin_connect(&c, o, addr, cdl < deadline ? cdl : deadline, last, sizeof last);
        if (rv == 0) {
            rv = admin_roundtrip(&c, req, rep, deadline, last, sizeof last);
            if (rv == 0 && keep != NULL && rep->m.type != MSG_REDIRECT &&
                rep->m.type != MSG_NO_LEADER)
                *keep = c; /* the caller goes on with this connection */
            else
                admin_close(&c);
        }
        if (rv == 0 && rep->m.type == MSG_REDIRECT && rep->m.u.redirect.client_addr.n > 0 &&
            rep->m.u.redirect.client_addr.n <= BATON_MAX_ADDR) {
            /* Go where the follower points. A long chain of redirects means
             * the cluster is changing leaders: pause a little. */
            snprintf(last, sizeof last, "%s: redirected to node %u at %.*s", addr,
                     rep->m.u.redirect.leader_id, (int)rep->m.u.redirect.client_addr.n,
                     rep->m.u.redirect.client_addr.p);
            snprintf(redirect, sizeof redirect, "%.*s", (int)rep->m.u.redirect.client_addr.n,
                     rep->m.u.redirect.client_addr.p);
            admin_reply_free(rep);
            if (++hops % 4 == 0) ctl_sleep_until(RETRY_PAUSE_MS, deadline);
            continue;
        }
        if (rv == 0 && (rep->m.type == MSG_NO_LEADER || rep->m.type == MSG_REDIRECT)) {
            snprintf(last, sizeof last, "%s: no leader known yet", addr);
            admin_reply_free(rep);
            redirect[0] = '\0';
            ctl_sleep_until(RETRY_PAUSE_MS, deadline);
            continue;
        }
        if (rv == 0) {
            free(storage);
            return 0;
        }
        if (!retryable(rv)) {
            snprintf(err, errlen, "%s", last);
            free(storage);
            return rv;
        }
        /* This node failed; forget a redirect to it and try the next. */
        redirect[0] = '\0';
        if (++failed_in_row >= n) {
            failed_in_row = 0;
            ctl_sleep_until(RETRY_PAUSE_MS, deadline);
        }
    }
    snprintf(err, errlen, "no leader answered within %lld ms (last: %s)", (long long)o->timeout_ms,
             last);
    free(storage);
    return BATON_EUNAVAIL;
}
