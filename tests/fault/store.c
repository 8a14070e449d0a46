/*
 * store.c -- faultstore: the fenced resource that the fault harness's
 * clients write to while they hold a lock.
 *
 *   faultstore LOGFILE
 *
 * It listens on a free 127.0.0.1 port and prints "port N" on stdout. Each
 * client connection sends lines
 *     W LOCK FENCE CLIENT N
 * ("client CLIENT writes its N-th write of this hold under LOCK with
 * FENCE") and gets one line back per request:
 *     A            accepted: FENCE >= every fence seen for LOCK so far
 *     R MAX        rejected: MAX, a higher fence, was seen for LOCK
 * This is the storage side of fencing (README, "Sessions, leases, fences"):
 * a holder that lost its lock while paused cannot write after the next
 * holder did. Every request is logged, in the order the store decided it:
 *     T_US A LOCK FENCE CLIENT N
 *     T_US R LOCK FENCE CLIENT N MAX
 * The store is single-threaded, so that order is the real order of the
 * writes. It exits when stdin reaches end of file (it dies with the
 * harness). It is never a target of the nemesis.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/fault/flog.h"

#define MAX_CONNS 64
#define MAX_LOCKS 256
#define LINE_MAX_LEN 512

struct lockmax {
    char name[128];
    uint64_t max;
};

struct conn {
    int fd;
    char in[LINE_MAX_LEN];
    size_t len;
};

static struct lockmax locks[MAX_LOCKS];
static int n_locks;
static FILE *logf_;

static struct lockmax *lock_find(const char *name)
{
    for (int i = 0; i < n_locks; i++)
        if (strcmp(locks[i].name, name) == 0) return &locks[i];
    if (n_locks == MAX_LOCKS) return NULL;
    snprintf(locks[n_locks].name, sizeof locks[n_locks].name, "%s", name);
    locks[n_locks].max = 0;
    return &locks[n_locks++];
}

/* Decide one request line; write the answer into out. */
static void handle(const char *req, char *out, size_t cap)
{
    char name[128], client[64];
    unsigned long long fence, n;
    struct lockmax *l;

    if (sscanf(req, "W %127s %llu %63s %llu", name, &fence, client, &n) != 4 ||
        (l = lock_find(name)) == NULL) {
        snprintf(out, cap, "E bad request\n");
        flog(logf_, "E %s", req);
        return;
    }
    if (fence >= l->max) {
        l->max = fence;
        flog(logf_, "A %s %llu %s %llu", name, fence, client, n);
        snprintf(out, cap, "A\n");
    } else {
        flog(logf_, "R %s %llu %s %llu %" PRIu64, name, fence, client, n, l->max);
        snprintf(out, cap, "R %" PRIu64 "\n", l->max);
    }
}

/* Read what c has sent and answer every complete line. -1: drop c. */
static int conn_read(struct conn *c)
{
    ssize_t r = read(c->fd, c->in + c->len, sizeof c->in - 1 - c->len);
    char *nl;

    if (r <= 0) return r < 0 && errno == EINTR ? 0 : -1;
    c->len += (size_t)r;
    c->in[c->len] = '\0';
    while ((nl = memchr(c->in, '\n', c->len)) != NULL) {
        char out[64];
        size_t used = (size_t)(nl - c->in) + 1;
        *nl = '\0';
        handle(c->in, out, sizeof out);
        if (send(c->fd, out, strlen(out), MSG_NOSIGNAL) < 0) return -1;
        memmove(c->in, c->in + used, c->len - used);
        c->len -= used;
    }
    return c->len == sizeof c->in - 1 ? -1 : 0; /* a line too long */
}

int main(int argc, char **argv)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    struct conn conns[MAX_CONNS];
    int lfd, n_conns = 0, one = 1;

    if (argc != 2) {
        fprintf(stderr, "usage: faultstore LOGFILE\n");
        return 2;
    }
    logf_ = fopen(argv[1], "w");
    if (logf_ == NULL) {
        fprintf(stderr, "faultstore: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, 64) != 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &alen) != 0) {
        fprintf(stderr, "faultstore: listen: %s\n", strerror(errno));
        return 1;
    }
    printf("port %d\n", ntohs(a.sin_port));
    fflush(stdout);

    for (;;) {
        struct pollfd p[MAX_CONNS + 2];
        int n = 0, polled = n_conns;

        p[n++] = (struct pollfd){.fd = 0, .events = POLLIN};
        p[n++] = (struct pollfd){.fd = lfd, .events = POLLIN};
        for (int i = 0; i < n_conns; i++) p[n++] = (struct pollfd){.fd = conns[i].fd, .events = POLLIN};
        if (poll(p, (nfds_t)n, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (p[0].revents) {
            char b[64];
            if (read(0, b, sizeof b) <= 0) break; /* the harness is gone */
        }
        if ((p[1].revents & POLLIN) && n_conns < MAX_CONNS) {
            int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
            if (fd >= 0) {
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                conns[n_conns++] = (struct conn){.fd = fd};
            }
        }
        for (int i = polled - 1; i >= 0; i--) {
            if (p[2 + i].revents == 0) continue;
            if (conn_read(&conns[i]) != 0) {
                close(conns[i].fd);
                conns[i] = conns[--n_conns];
            }
        }
    }
    for (int i = 0; i < n_conns; i++) close(conns[i].fd);
    close(lfd);
    fclose(logf_);
    return 0;
}
