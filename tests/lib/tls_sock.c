/*
 * tls_sock.c -- a blocking test socket, plaintext or TLS. See tls_sock.h.
 */
#include "tests/lib/tls_sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void set_timeout(int fd, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    if (ms <= 0) tv.tv_usec = 1000;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

static int write_all(struct tls_sock *s, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(s->fd, p, n, MSG_NOSIGNAL);
        if (w <= 0) {
            snprintf(s->err, sizeof s->err, "send: %s", w < 0 ? strerror(errno) : "closed");
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* With TLS: write what the endpoint has for the network. */
static int flush_tls(struct tls_sock *s)
{
    struct buf net = {0};
    int rv = 0;

    if (tls_out(s->t, &net) != 0) rv = -1;
    if (rv == 0 && net.len > 0) rv = write_all(s, net.data, net.len);
    buf_free(&net);
    return rv;
}

/* Read once from the socket into s->in (decrypting with TLS). 1 if bytes
 * came, 0 on EOF, -1 on error or timeout. */
static int read_once(struct tls_sock *s)
{
    uint8_t tmp[16384];
    ssize_t r = recv(s->fd, tmp, sizeof tmp, 0);

    if (r < 0) {
        snprintf(s->err, sizeof s->err, "recv: %s", strerror(errno));
        return -1;
    }
    if (r == 0) {
        snprintf(s->err, sizeof s->err, "connection closed by the node");
        return 0;
    }
    if (s->t == NULL) return buf_put(&s->in, tmp, (size_t)r) == 0 ? 1 : -1;
    if (tls_recv(s->t, tmp, (size_t)r, &s->in) != 0) {
        snprintf(s->err, sizeof s->err, "%s", tls_errmsg(s->t));
        (void)flush_tls(s);
        return -1;
    }
    return flush_tls(s) == 0 ? 1 : -1;
}

int tls_sock_connect(struct tls_sock *s, int port, const struct tls_sock_cfg *cfg,
                     int timeout_ms)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6};
    int v6 = 0;
    long long deadline = mono_ms() + timeout_ms;
    int one = 1;

    memset(s, 0, sizeof *s);
    a.sin_port = htons((uint16_t)port);
    a6.sin6_port = htons((uint16_t)port);
    if (cfg != NULL && cfg->ip != NULL && inet_pton(AF_INET, cfg->ip, &a.sin_addr) != 1) {
        if (inet_pton(AF_INET6, cfg->ip, &a6.sin6_addr) != 1) {
            snprintf(s->err, sizeof s->err, "bad IP address '%s'", cfg->ip);
            s->fd = -1;
            return -1;
        }
        v6 = 1;
    }
    s->fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s->fd < 0) {
        snprintf(s->err, sizeof s->err, "socket: %s", strerror(errno));
        return -1;
    }
    setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (cfg != NULL && cfg->rcvbuf > 0)
        setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &cfg->rcvbuf, sizeof cfg->rcvbuf);
    set_timeout(s->fd, timeout_ms);
    if ((v6 ? connect(s->fd, (struct sockaddr *)&a6, sizeof a6)
            : connect(s->fd, (struct sockaddr *)&a, sizeof a)) != 0) {
        snprintf(s->err, sizeof s->err, "connect to port %d: %s", port, strerror(errno));
        goto fail;
    }
    if (cfg == NULL || cfg->ca_file == NULL) return 0;
    {
        struct tls_config tc = {.ca_file = cfg->ca_file, .cert_file = cfg->cert_file,
                                .key_file = cfg->key_file};
        if (tls_ctx_new(&tc, &s->ctx, s->err, sizeof s->err) != 0) goto fail;
    }
    s->t = tls_new(s->ctx, cfg->name ? cfg->name : "127.0.0.1");
    if (s->t == NULL) {
        snprintf(s->err, sizeof s->err, "tls_new failed");
        goto fail;
    }
    if (flush_tls(s) != 0) goto fail;
    while (!tls_established(s->t)) {
        if (mono_ms() >= deadline) {
            snprintf(s->err, sizeof s->err, "TLS handshake not done within %d ms", timeout_ms);
            goto fail;
        }
        if (read_once(s) <= 0) goto fail;
    }
    return 0;
fail:
    tls_sock_close(s);
    return -1;
}

int tls_sock_send(struct tls_sock *s, const void *data, size_t n)
{
    if (s->t == NULL) return write_all(s, data, n);
    if (tls_send(s->t, data, n) != 0) {
        snprintf(s->err, sizeof s->err, "%s", tls_errmsg(s->t));
        return -1;
    }
    return flush_tls(s);
}

int tls_sock_send_msg(struct tls_sock *s, const struct msg *m)
{
    struct buf b = {0};
    int rv = proto_encode(&b, m) == 0 ? tls_sock_send(s, b.data, b.len) : -1;

    buf_free(&b);
    return rv;
}

int tls_sock_recv_msg(struct tls_sock *s, struct msg *m, int timeout_ms)
{
    long long deadline = mono_ms() + timeout_ms;

    for (;;) {
        size_t flen;
        int k = proto_frame_check(s->in.data, s->in.len, &flen);

        if (k < 0) {
            snprintf(s->err, sizeof s->err, "bad frame from the node");
            return -1;
        }
        if (k == 1) {
            int rv = proto_decode(s->in.data, flen, m);
            buf_consume(&s->in, flen);
            if (rv != 0) snprintf(s->err, sizeof s->err, "undecodable frame from the node");
            return rv == 0 ? 0 : -1;
        }
        if (mono_ms() >= deadline) {
            snprintf(s->err, sizeof s->err, "no whole frame within %d ms", timeout_ms);
            return -1;
        }
        set_timeout(s->fd, (int)(deadline - mono_ms()));
        if (read_once(s) <= 0) return -1;
    }
}

size_t tls_sock_recv_raw(struct tls_sock *s, size_t n, int timeout_ms)
{
    long long deadline = mono_ms() + timeout_ms;

    while (s->in.len < n && mono_ms() < deadline) {
        set_timeout(s->fd, (int)(deadline - mono_ms()));
        if (read_once(s) <= 0) break;
    }
    return s->in.len;
}

void tls_sock_close(struct tls_sock *s)
{
    if (s->fd >= 0) close(s->fd);
    s->fd = -1;
    tls_free(s->t);
    s->t = NULL;
    tls_ctx_free(s->ctx);
    s->ctx = NULL;
    buf_free(&s->in);
}

int tls_sock_request(struct tls_sock *s, const struct msg *m, struct msg *reply, int timeout_ms)
{
    long long deadline = mono_ms() + timeout_ms;

    if (tls_sock_send_msg(s, m) != 0) return -1;
    for (;;) {
        long long left = deadline - mono_ms();
        if (left <= 0) {
            snprintf(s->err, sizeof s->err, "no answer to %s within %d ms",
                     msg_type_name(m->type), timeout_ms);
            return -1;
        }
        if (tls_sock_recv_msg(s, reply, (int)left) != 0) return -1;
        if (reply->req_id == m->req_id) return 0;
        msg_free(reply);
    }
}

int tls_sock_hello(struct tls_sock *s, const char *token, int *role)
{
    struct msg h = {.type = MSG_HELLO, .req_id = 1}, r;
    int rv;

    h.u.hello.version = BATON_PROTO_VERSION;
    h.u.hello.client_name.p = "raw-test";
    h.u.hello.client_name.n = 8;
    if (token != NULL) {
        h.u.hello.token.p = token;
        h.u.hello.token.n = (uint16_t)strlen(token);
    }
    if (tls_sock_request(s, &h, &r, 5000) != 0) return -1;
    rv = r.type == MSG_HELLO_OK ? 0 : r.type == MSG_ERROR ? r.u.error.code : -1;
    if (rv == 0 && role != NULL) *role = r.u.hello_ok.role;
    if (r.type == MSG_ERROR)
        snprintf(s->err, sizeof s->err, "%.*s", (int)r.u.error.message.n, r.u.error.message.p);
    msg_free(&r);
    return rv;
}

int tls_sock_status(const struct msg *reply)
{
    if (reply->type == MSG_ERROR) return reply->u.error.code;
    if (reply->type == MSG_RESULT) return reply->u.result.status;
    return 0;
}
