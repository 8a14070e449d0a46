/*
 * util.c -- lockbench's small helpers (bench.h): the clock, sleeps,
 * rate-limited error lines, grant records, /proc readers, the watchdog and
 * the open-files limit.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "baton/baton.h"
#include "tests/bench/bench.h"

#define MAX_ERR_LOGS 20 /* error lines printed to stderr per run */

void sleep_ns_until(int64_t ns, int64_t until)
{
    int64_t now = now_ns();

    if (until != 0 && now + ns > until) ns = until - now;
    sleep_ns(ns);
}

double us(uint64_t ns)
{
    return (double)ns / 1000.0;
}

int64_t self_cpu_ns(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return 0;
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static atomic_int n_logged;

/* Errors and violations can come by the thousand: print the first few. */
void note(const char *fmt, ...)
{
    int n = atomic_fetch_add(&n_logged, 1);
    va_list ap;

    if (n < MAX_ERR_LOGS) {
        va_start(ap, fmt);
        fputs("lockbench: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    } else if (n == MAX_ERR_LOGS) {
        fprintf(stderr, "lockbench: more errors or violations; not printing them\n");
    }
}

void log_err(int client, const char *what, int rv, const char *msg)
{
    note("client %d: %s: %s (%s)", client, what, baton_err_name(rv),
         msg && msg[0] ? msg : baton_strerror(rv));
}

void recs_add(struct recs *r, uint64_t key, uint64_t fence)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 1024;
        struct rec *v = realloc(r->v, cap * sizeof *v);
        if (v == NULL) {
            r->oom = true;
            return;
        }
        r->v = v;
        r->cap = cap;
    }
    r->v[r->n].key = key;
    r->v[r->n].fence = fence;
    r->n++;
}

int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

void print_rss(const char *field, const long *kb, int n)
{
    printf(",\"%s\":[", field);
    for (int i = 0; i < n; i++) {
        if (kb[i] < 0)
            printf("%snull", i ? "," : "");
        else
            printf("%s%ld", i ? "," : "", kb[i]);
    }
    printf("]");
}

/*
 * /proc/PID/stat: "pid (comm) state ppid ..." where comm may hold spaces
 * and parentheses, so the fields are counted from the LAST ')'. utime and
 * stime are fields 14 and 15 (proc(5)), the 12th and 13th after comm.
 */
long long read_cpu_ticks(pid_t pid)
{
    char path[64], buf[1024], *p;
    unsigned long long ut, st;
    size_t n;
    FILE *f;

    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (f == NULL) return -1;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');
    if (p == NULL) return -1;
    if (sscanf(p + 1,
               " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (long long)(ut + st);
}

static int64_t watchdog_at;

static void *watchdog_main(void *arg)
{
    (void)arg;
    for (;;) {
        int64_t left = watchdog_at - now_ns();
        if (left <= 0) break;
        sleep_ns(left > NS_PER_S ? NS_PER_S : left);
    }
    fprintf(stderr, "lockbench: the run did not end within its bound; giving up\n");
    fflush(stderr);
    _exit(3);
    return NULL;
}

void start_watchdog(int64_t hard_ns)
{
    pthread_t th;

    watchdog_at = hard_ns;
    if (pthread_create(&th, NULL, watchdog_main, NULL) == 0) pthread_detach(th);
}

void raise_nofile(rlim_t want)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want) return;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < want)
        fprintf(stderr, "lockbench: warning: open files limited to %llu (want %llu)\n",
                (unsigned long long)rl.rlim_cur, (unsigned long long)want);
}
