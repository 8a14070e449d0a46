/*
 * store_client.h -- a worker's side of the fenced store (store.c): one
 * request line, one answer line, on one connection kept open. Shared by
 * the lock workers (client.c) and the election workers (elect.c).
 * Blocking: the store answers at once on loopback.
 */
#ifndef BATON_TESTS_FAULT_STORE_CLIENT_H
#define BATON_TESTS_FAULT_STORE_CLIENT_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Connect *fd to the store on 127.0.0.1:port. 0, or -1. */
static inline int store_connect(int port, int *fd)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timeval tv = {10, 0};
    int one = 1, s;

    sa.sin_port = htons((uint16_t)port);
    s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return -1;
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(s, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(s);
        return -1;
    }
    *fd = s;
    return 0;
}

/* One request to the store (connecting *fd first if it is -1); its answer
 * line in out. 0, or -1 (the connection is then closed, *fd -1). */
static inline int store_call(int port, int *fd, const char *req, char *out, size_t cap)
{
    size_t len = 0;

    if (*fd < 0 && store_connect(port, fd) != 0) return -1;
    if (send(*fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req)) goto fail;
    while (len < cap - 1) {
        ssize_t r = recv(*fd, out + len, 1, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) goto fail;
        if (out[len] == '\n') {
            out[len] = '\0';
            return 0;
        }
        len++;
    }
fail:
    close(*fd);
    *fd = -1;
    return -1;
}

#endif
