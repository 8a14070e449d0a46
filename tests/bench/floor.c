/*
 * floor.c -- benchfloor: what this machine's disk and loopback cost, the
 * two figures of the floor of a W2 hand-off (docs/performance.md, "The
 * limit of W2"). make bench-compare runs it before the runs.
 *
 *   benchfloor --dir DIR [--writes N] [--pings N]
 *
 * fsync: N synchronous 4 KiB writes (pwrite on a descriptor opened with
 * O_DSYNC, and O_DIRECT when DIR's filesystem takes it, as raft's own
 * writes are) into a 1 MiB file in DIR, written and fsynced beforehand so
 * that a write changes no block allocation: the cheapest durable 4 KiB
 * write the filesystem offers. Default N 1000.
 *
 * fsync3: the same N writes by each of three threads at once, each into a
 * file of its own: what one write costs while the three nodes of a local
 * cluster -- leader and both followers, which write every entry at the
 * same time -- share one disk. The figure is over the 3N writes.
 *
 * rtt: N round trips of a 64-byte message over one TCP connection on
 * 127.0.0.1 (TCP_NODELAY on both ends) between this thread and an echo
 * thread, after 100 unmeasured ones: a message there and its answer back,
 * wake-ups included, as between a client and a node or two nodes. Default
 * N 10000.
 *
 * Prints one JSON line on stdout, times in microseconds:
 *   {"system":"floor","dir":"...","direct":true,"writes":N,
 *    "fsync_p50_us":..,"fsync_p10_us":..,"fsync_p90_us":..,
 *    "fsync3_p50_us":..,"fsync3_p10_us":..,"fsync3_p90_us":..,
 *    "pings":N,"rtt_p50_us":..,"rtt_p10_us":..,"rtt_p90_us":..}
 * The file is removed. Exit status 0, 1 on a failure (a message on stderr),
 * 2 on a usage error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/lib/clock.h"

#define BLOCK 4096
#define FILE_BLOCKS 256 /* 1 MiB, written round-robin */
#define MSG 64
#define WARMUP 100
#define WRITERS 3 /* fsync3: the nodes of a local cluster */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

/* The p-th percentile of the n sorted values, in microseconds. */
static double pct_us(const int64_t *v, int n, int p)
{
    int i = (int)((int64_t)(n - 1) * p / 100);

    return (double)v[i] / 1000.0;
}

static int write_all(int fd, const char *buf, size_t len, off_t off)
{
    while (len > 0) {
        ssize_t w = pwrite(fd, buf, len, off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        buf += w;
        len -= (size_t)w;
        off += w;
    }
    return 0;
}

/* Time n synchronous 4 KiB writes into a fresh file in dir (sorted into
 * t[]). 0, or -1 with a message. */
static int measure_fsync(const char *dir, int n, int64_t *t, int *direct)
{
    char path[4096];
    char *buf = NULL;
    int fd, rv = -1;

    snprintf(path, sizeof path, "%s/benchfloor.XXXXXX", dir);
    fd = mkstemp(path);
    if (fd < 0) {
        fprintf(stderr, "benchfloor: cannot create a file in %s: %s\n", dir, strerror(errno));
        return -1;
    }
    if (posix_memalign((void **)&buf, BLOCK, BLOCK) != 0) goto out;
    memset(buf, 'b', BLOCK);
    /* Allocate and write every block first, so that the timed writes only
     * overwrite data. */
    for (int i = 0; i < FILE_BLOCKS; i++)
        if (write_all(fd, buf, BLOCK, (off_t)i * BLOCK) != 0) goto io_error;
    if (fsync(fd) != 0) goto io_error;
    close(fd);
    *direct = 1;
    fd = open(path, O_WRONLY | O_DSYNC | O_DIRECT);
    if (fd < 0 && errno == EINVAL) {
        *direct = 0;
        fd = open(path, O_WRONLY | O_DSYNC);
    }
    if (fd < 0) goto io_error;
    for (int i = 0; i < n; i++) {
        int64_t t0 = now_ns();
        buf[0] = (char)i;
        if (write_all(fd, buf, BLOCK, (off_t)(i % FILE_BLOCKS) * BLOCK) != 0) goto io_error;
        t[i] = now_ns() - t0;
    }
    qsort(t, (size_t)n, sizeof *t, cmp_i64);
    rv = 0;
    goto out;
io_error:
    fprintf(stderr, "benchfloor: writing %s: %s\n", path, strerror(errno));
out:
    if (fd >= 0) close(fd);
    unlink(path);
    free(buf);
    return rv;
}

/* One of fsync3's writers. */
struct writer {
    pthread_t th;
    const char *dir;
    int n, direct, rv;
    int64_t *t;
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;

    w->rv = measure_fsync(w->dir, w->n, w->t, &w->direct);
    return NULL;
}

/* fsync3: WRITERS threads at once, n writes each; all the times sorted
 * into t[] (WRITERS * n of them). 0, or -1 with a message. */
static int measure_fsync3(const char *dir, int n, int64_t *t)
{
    struct writer w[WRITERS];
    int started = 0, rv = 0;

    for (int i = 0; i < WRITERS; i++) {
        w[i] = (struct writer){.dir = dir, .n = n, .t = t + (size_t)i * (size_t)n};
        if (pthread_create(&w[i].th, NULL, writer_main, &w[i]) != 0) {
            fprintf(stderr, "benchfloor: cannot start a writer thread\n");
            rv = -1;
            break;
        }
        started++;
    }
    for (int i = 0; i < started; i++) {
        pthread_join(w[i].th, NULL);
        if (w[i].rv != 0) rv = -1;
    }
    if (rv == 0) qsort(t, (size_t)WRITERS * (size_t)n, sizeof *t, cmp_i64);
    return rv;
}

static int io_full(int fd, char *buf, size_t len, int writing)
{
    while (len > 0) {
        ssize_t k = writing ? write(fd, buf, len) : read(fd, buf, len);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        buf += k;
        len -= (size_t)k;
    }
    return 0;
}

/* The echo thread: answer each message until the connection closes. */
static void *echo_main(void *arg)
{
    int lfd = *(int *)arg, fd, one = 1;
    char buf[MSG];

    fd = accept(lfd, NULL, NULL);
    if (fd < 0) return NULL;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    while (io_full(fd, buf, MSG, 0) == 0 && io_full(fd, buf, MSG, 1) == 0) {
    }
    close(fd);
    return NULL;
}

/* Time n round trips over 127.0.0.1 (sorted into t[]). 0, or -1. */
static int measure_rtt(int n, int64_t *t)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t alen = sizeof a;
    char buf[MSG];
    int lfd, fd = -1, one = 1, rv = -1;
    pthread_t th;
    bool started = false;

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, 1) != 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &alen) != 0)
        goto out;
    if (pthread_create(&th, NULL, echo_main, &lfd) != 0) goto out;
    started = true;
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) goto out;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    memset(buf, 'p', sizeof buf);
    for (int i = -WARMUP; i < n; i++) {
        int64_t t0 = now_ns();
        if (io_full(fd, buf, MSG, 1) != 0 || io_full(fd, buf, MSG, 0) != 0) goto out;
        if (i >= 0) t[i] = now_ns() - t0;
    }
    qsort(t, (size_t)n, sizeof *t, cmp_i64);
    rv = 0;
out:
    if (rv != 0) fprintf(stderr, "benchfloor: loopback round trips: %s\n", strerror(errno));
    if (fd >= 0) close(fd);
    if (started) {
        if (rv != 0 && fd < 0) shutdown(lfd, SHUT_RDWR); /* the echo thread may wait in accept */
        pthread_join(th, NULL);
    }
    if (lfd >= 0) close(lfd);
    return rv;
}

static long arg_count(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);

    return end != s && *end == '\0' && v >= 1 && v <= 10000000 ? v : -1;
}

int main(int argc, char **argv)
{
    const char *dir = NULL;
    long writes = 1000, pings = 10000;
    int64_t *tf, *tf3, *tr;
    int direct = 0, rv;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--writes") == 0 && i + 1 < argc)
            writes = arg_count(argv[++i]);
        else if (strcmp(argv[i], "--pings") == 0 && i + 1 < argc)
            pings = arg_count(argv[++i]);
        else
            dir = NULL, writes = -1;
    }
    if (dir == NULL || writes < 0 || pings < 0) {
        fprintf(stderr, "usage: benchfloor --dir DIR [--writes N] [--pings N]\n");
        return 2;
    }
    tf = malloc((size_t)writes * sizeof *tf);
    tf3 = malloc((size_t)writes * WRITERS * sizeof *tf3);
    tr = malloc((size_t)pings * sizeof *tr);
    rv = tf && tf3 && tr ? 0 : -1;
    if (rv == 0) rv = measure_fsync(dir, (int)writes, tf, &direct);
    if (rv == 0) rv = measure_fsync3(dir, (int)writes, tf3);
    if (rv == 0) rv = measure_rtt((int)pings, tr);
    if (rv == 0) {
        printf("{\"system\":\"floor\",\"dir\":\"%s\",\"direct\":%s,\"writes\":%ld,"
               "\"fsync_p50_us\":%.1f,\"fsync_p10_us\":%.1f,\"fsync_p90_us\":%.1f,"
               "\"fsync3_p50_us\":%.1f,\"fsync3_p10_us\":%.1f,\"fsync3_p90_us\":%.1f,"
               "\"pings\":%ld,\"rtt_p50_us\":%.1f,\"rtt_p10_us\":%.1f,\"rtt_p90_us\":%.1f}\n",
               dir, direct ? "true" : "false", writes, pct_us(tf, (int)writes, 50),
               pct_us(tf, (int)writes, 10), pct_us(tf, (int)writes, 90),
               pct_us(tf3, (int)writes * WRITERS, 50), pct_us(tf3, (int)writes * WRITERS, 10),
               pct_us(tf3, (int)writes * WRITERS, 90), pings,
               pct_us(tr, (int)pings, 50), pct_us(tr, (int)pings, 10),
               pct_us(tr, (int)pings, 90));
    }
    free(tf);
    free(tf3);
    free(tr);
    return rv == 0 ? 0 : 1;
}
