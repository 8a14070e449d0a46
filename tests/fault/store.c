/*
 * store.c -- faultstore: the fenced resource that the fault harness's
 * clients write to while they hold a lock.
 *
 *   faultstore LOGFILE
 *
 * It listens on a free 127.0.0.1 port and prints "port N" on stdout. Each
 * client connection sends lines, one per operation a holder makes under
 * LOCK with the fence FENCE (client CLIENT, its N-th of this hold):
 *     W LOCK FENCE CLIENT N       a write, under an exclusive hold
 *     S LOCK FENCE CLIENT N       a read, under a shared hold
 *     P LOCK FENCE CLIENT N LIMIT a write under one of LIMIT permits
 *     D LOCK FENCE CLIENT         that permit holder is done (before unlock)
 * and gets one line back per request:
 *     A            accepted
 *     R MAX        rejected: MAX is the fence that shuts it out
 * This is the storage side of fencing (README, "Sessions, leases, fences"):
 * a holder that lost its lock while paused cannot act after the next
 * holder did. Per lock the store keeps `max`, the highest fence of any
 * write or read it accepted, `wmax`, the highest fence of a write, and the
 * open permits (fences that wrote under P and are not done):
 *  - W is accepted if FENCE >= max: no newer holder has written or read.
 *    Legitimate holders are never refused: every earlier holder's fence
 *    is lower, and no newer one can hold beside an exclusive holder.
 *  - S is accepted if FENCE >= wmax (no newer writer has written; readers
 *    share), and raises max, so a stale writer is refused once a newer
 *    reader has read.
 *  - P is accepted unless LIMIT open permits have a higher fence: each of
 *    those was granted after this one, and at most LIMIT - 1 others can
 *    hold beside a legitimate holder. It then opens FENCE. A semaphore has
 *    no single order of its holders (they end in any order), so this is
 *    all one fence can tell: a stale permit holder is refused once LIMIT
 *    newer ones are writing, not before. D closes the permit.
 * Every request is logged, in the order the store decided it:
 *     T_US A OP LOCK FENCE CLIENT N
 *     T_US R OP LOCK FENCE CLIENT N MAX
 *     T_US D LOCK FENCE CLIENT
 * (OP is W, S or P; P lines end with LIMIT.)
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
#define OPEN_MAX 64 /* open permits kept per lock; the lowest goes first */

struct lockmax {
    char name[128];
    uint64_t max, wmax;
    uint64_t open[OPEN_MAX]; /* permits that wrote and are not done */
    int n_open;
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
    memset(&locks[n_locks], 0, sizeof locks[n_locks]);
    snprintf(locks[n_locks].name, sizeof locks[n_locks].name, "%s", name);
    return &locks[n_locks++];
}

/* Index of fence f among l's open permits, or -1. */
static int open_find(const struct lockmax *l, uint64_t f)
{
    for (int i = 0; i < l->n_open; i++)
        if (l->open[i] == f) return i;
    return -1;
}

static void open_add(struct lockmax *l, uint64_t f)
{
    if (open_find(l, f) >= 0) return;
    if (l->n_open == OPEN_MAX) { /* forget the lowest: the stalest holder */
        int lo = 0;
        for (int i = 1; i < l->n_open; i++)
            if (l->open[i] < l->open[lo]) lo = i;
        l->open[lo] = l->open[--l->n_open];
    }
    l->open[l->n_open++] = f;
}

static void open_del(struct lockmax *l, uint64_t f)
{
    int i = open_find(l, f);
    if (i >= 0) l->open[i] = l->open[--l->n_open];
}

/* P: the LIMIT-th highest open fence above f, which shuts f out, or 0. */
static uint64_t permit_blocker(const struct lockmax *l, uint64_t f, unsigned long long limit)
{
    uint64_t above[OPEN_MAX];
    int n = 0;

    for (int i = 0; i < l->n_open; i++)
        if (l->open[i] > f) above[n++] = l->open[i];
    if ((unsigned long long)n < limit) return 0;
    /* The lowest of the n >= limit higher fences. */
    for (int i = 1; i < n; i++)
        if (above[i] < above[0]) above[0] = above[i];
    return above[0];
}

static void verdict(char *out, size_t cap, char op, const char *name, unsigned long long fence,
                    const char *client, unsigned long long n, uint64_t shut_by,
                    unsigned long long limit)
{
    char tail[32] = "";

    if (op == 'P') snprintf(tail, sizeof tail, " %llu", limit);
    if (shut_by == 0) {
        flog(logf_, "A %c %s %llu %s %llu%s", op, name, fence, client, n, tail);
        snprintf(out, cap, "A\n");
    } else {
        flog(logf_, "R %c %s %llu %s %llu %" PRIu64 "%s", op, name, fence, client, n, shut_by,
             tail);
        snprintf(out, cap, "R %" PRIu64 "\n", shut_by);
    }
}

/* Decide one request line (the rules at the top); the answer into out. */
static void handle(const char *req, char *out, size_t cap)
{
    char name[128], client[64], op;
    unsigned long long fence, n = 0, limit = 0;
    struct lockmax *l;
    int k = sscanf(req, "%c %127s %llu %63s %llu %llu", &op, name, &fence, client, &n, &limit);
    uint64_t shut_by = 0;

    if (k < 4 || (l = lock_find(name)) == NULL || (op == 'D' ? k != 4
                                                    : op == 'P' ? k != 6 || limit < 2
                                                    : (op != 'W' && op != 'S') || k != 5)) {
        snprintf(out, cap, "E bad request\n");
        flog(logf_, "E %s", req);
        return;
    }
    switch (op) {
    case 'D':
        open_del(l, fence);
        flog(logf_, "D %s %llu %s", name, fence, client);
        snprintf(out, cap, "A\n");
        return;
    case 'W':
        if (fence < l->max) shut_by = l->max;
        else l->max = l->wmax = fence;
        break;
    case 'S':
        if (fence < l->wmax) shut_by = l->wmax;
        else if (fence > l->max) l->max = fence;
        break;
    default: /* P */
        if ((shut_by = permit_blocker(l, fence, limit)) == 0) open_add(l, fence);
        break;
    }
    verdict(out, cap, op, name, fence, client, n, shut_by, limit);
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
