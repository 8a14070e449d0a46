/*
 * test_client_oom.c -- libbaton out of memory. A session's whole life --
 * async (baton_async_new, baton_uv_attach, open, two locks, their unlocks,
 * a lock with a value, its proclaim, a read, a watch and its end, close,
 * free), plaintext and over TLS with a token, and blocking
 * (baton_connect, two locks, their unlocks, baton_close) -- runs against a
 * fake server (fake_server.h) once for each allocation it makes, with that
 * allocation failing (and, in the "run out" tests, every one after it).
 * Each run must answer BATON_ENOMEM where the failure hit (or cope and
 * succeed), never crash, and end with every handle closed (tloop_done);
 * under SAN=address, LeakSanitizer checks that nothing leaks. The runs go
 * on until one makes fewer allocations than the one to fail, so every
 * allocation of the path is tried.
 *
 * The failure is injected in-process: this binary is linked with
 * -Wl,--wrap for malloc, calloc, realloc and strdup, so every call to them
 * from libbaton's objects (client/, proto/: the static archive) and the
 * adapter (include/baton/adapters/libuv.h) comes here first; OpenSSL's and
 * libuv's own, from shared libraries, do not. The async runs count the
 * test's thread only; the blocking ones every thread but the fake
 * server's, which allocates freely. Each run is a forked child, so a crash
 * names the allocation that caused it; BATON_OOM_TRACE=1 in the
 * environment prints where each fails.
 */
#include <execinfo.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "baton/adapters/libuv.h"
#include "baton/baton.h"
#include "baton/baton_async.h"
#include "tests/lib/aclient.h"
#include "tests/lib/certs.h"
#include "tests/lib/files.h"
#include "tests/lib/runner.h"
#include "tests/lib/tloop.h"
#include "tests/unit/fake_server.h"

/* ---- the allocation counter (armed on this thread only) ---- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);

static _Thread_local int armed;    /* this thread's allocations count */
static _Atomic int armed_all;       /* every thread's but the fake's (fake_th) */
static pthread_t fake_th;
static _Atomic long n_allocs;       /* allocations counted while armed */
static long fail_at;                /* the one to fail (1-based), 0: none */
static int fail_on;                 /* and every one after it too */
static _Atomic int failed;          /* it happened */

/* Should this allocation fail? */
static int inject(void)
{
    long k;

    if (!armed && !(armed_all && !pthread_equal(pthread_self(), fake_th))) return 0;
    k = ++n_allocs;
    if (fail_at == 0 || k < fail_at || (k > fail_at && !fail_on)) return 0;
    failed = 1;
    if (getenv("BATON_OOM_TRACE") != NULL) { /* where it failed, to debug a run */
        void *pc[32];

        fprintf(stderr, "# allocation %ld fails here:\n", k);
        backtrace_symbols_fd(pc, backtrace(pc, 32), 2);
    }
    return 1;
}

void *__wrap_malloc(size_t n)
{
    return inject() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
    return inject() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
    return inject() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = __wrap_malloc(n);

    return d ? memcpy(d, s, n) : NULL;
}

/* ---- one run ---- */

/* More allocations than the path makes (it makes about a hundred). */
#define MAX_ALLOCS 2000

/* A call's return or a callback's status: 0, or BATON_ENOMEM once the
 * failure happened. Anything else fails the run. */
#define OK_OR_ENOMEM(what, rv)                                                            \
    do {                                                                                  \
        int rv_ = (rv);                                                                   \
        if (rv_ != 0 && !(rv_ == BATON_ENOMEM && failed))                                 \
            FAIL("allocation %ld: %s: %d (%s)", fail_at, what, rv_, baton_strerror(rv_)); \
    } while (0)

/* What a read or a watch saw. */
struct vrec {
    int calls;   /* state: its one callback; watch: events and the end */
    int done;    /* watch: SYNCED or the end arrived */
    int ended, status;
};

static void vrec_state(baton_async_t *ac, int status, const baton_lock_state *st, void *data)
{
    struct vrec *v = data;

    (void)ac;
    (void)st;
    v->calls++;
    v->status = status;
}

static void vrec_watch(baton_async_t *ac, int status, const baton_event *ev, void *data)
{
    struct vrec *v = data;

    (void)ac;
    v->calls++;
    if (status != 0) {
        v->ended++;
        v->status = status;
        v->done = 1;
    } else if (ev->kind == BATON_EVENT_SYNCED) {
        v->done = 1;
    }
}

/* Protocol 6's calls: a lock with a value, its proclaim, a read, a watch
 * (its start: STATE, SYNCED) and its end, the unlock. true if every step
 * succeeded. */
static int values_life(struct tloop *t, baton_async_t *ac)
{
    baton_lock_args a = {.wait_ms = BATON_WAIT_TRY, .value = "v1", .value_len = 2};
    struct rec r = {0}, u = {0};
    struct vrec st = {0}, w = {0};
    baton_async_watch_t *aw;
    int rv;

    rv = baton_async_lock_with(ac, "oom/v", &a, rec_lock, &r);
    OK_OR_ENOMEM("baton_async_lock_with (value)", rv);
    if (rv != 0) return 0;
    run_until(t, &r.calls, 1, 5000);
    OK_OR_ENOMEM("lock callback (value)", r.status);
    if (r.status != 0) return 0;
    rv = baton_async_proclaim(ac, "oom/v", r.value, "v2", 2, rec_done, &u);
    OK_OR_ENOMEM("baton_async_proclaim", rv);
    if (rv != 0) return 0;
    run_until(t, &u.calls, 1, 5000);
    OK_OR_ENOMEM("proclaim callback", u.status);
    if (u.status != 0) return 0;
    rv = baton_async_lock_state(ac, "oom/v", vrec_state, &st);
    OK_OR_ENOMEM("baton_async_lock_state", rv);
    if (rv != 0) return 0;
    run_until(t, &st.calls, 1, 5000);
    OK_OR_ENOMEM("lock_state callback", st.status);
    if (st.status != 0) return 0;
    rv = baton_async_watch(ac, "oom/v", 0, 0, vrec_watch, &w, &aw);
    OK_OR_ENOMEM("baton_async_watch", rv);
    if (rv != 0) return 0;
    run_until(t, &w.done, 1, 5000);
    if (w.ended) {
        OK_OR_ENOMEM("watch end", w.status);
        return 0;
    }
    rv = baton_async_unwatch(ac, aw);
    OK_OR_ENOMEM("baton_async_unwatch", rv);
    run_until(t, &w.ended, 1, 5000);
    if (w.status != BATON_ECANCELED) OK_OR_ENOMEM("watch end (unwatch)", w.status);
    memset(&u, 0, sizeof u);
    rv = baton_async_unlock(ac, "oom/v", r.value, rec_done, &u);
    OK_OR_ENOMEM("baton_async_unlock (value)", rv);
    if (rv != 0) return 0;
    run_until(t, &u.calls, 1, 5000);
    OK_OR_ENOMEM("unlock callback (value)", u.status);
    return u.status == 0 && w.status == BATON_ECANCELED;
}

/* The session's steps, as far as the failure lets them go; true if every
 * step succeeded. The context is freed by the caller. */
static int session_life(struct tloop *t, baton_async_t *ac)
{
    struct rec r = {0}, q = {0}, u = {0};
    int rv;

    rv = baton_async_open(ac, rec_open, &r);
    OK_OR_ENOMEM("baton_async_open", rv);
    if (rv != 0) return 0;
    run_until(t, &r.calls, 1, 5000);
    OK_OR_ENOMEM("open callback", r.status);
    if (r.status != 0) return 0;

    memset(&r, 0, sizeof r);
    rv = baton_async_lock(ac, "oom/a", 0, rec_lock, &r);
    OK_OR_ENOMEM("baton_async_lock", rv);
    if (rv != 0) return 0;
    run_until(t, &r.calls, 1, 5000);
    OK_OR_ENOMEM("lock callback", r.status);
    if (r.status != 0) return 0;

    rv = baton_async_lock(ac, "oom/b", 5000, rec_lock, &q);
    OK_OR_ENOMEM("baton_async_lock (b)", rv);
    if (rv != 0) return 0;
    run_until(t, &q.calls, 1, 5000);
    OK_OR_ENOMEM("lock callback (b)", q.status);
    if (q.status != 0) return 0;

    rv = baton_async_unlock(ac, "oom/b", q.value, rec_done, &u);
    OK_OR_ENOMEM("baton_async_unlock (b)", rv);
    if (rv != 0) return 0;
    run_until(t, &u.calls, 1, 5000);
    OK_OR_ENOMEM("unlock callback (b)", u.status);
    if (u.status != 0) return 0;

    memset(&u, 0, sizeof u);
    rv = baton_async_unlock(ac, "oom/a", r.value, rec_done, &u);
    OK_OR_ENOMEM("baton_async_unlock", rv);
    if (rv != 0) return 0;
    run_until(t, &u.calls, 1, 5000);
    OK_OR_ENOMEM("unlock callback", u.status);
    if (u.status != 0) return 0;

    if (!values_life(t, ac)) return 0;

    memset(&u, 0, sizeof u);
    rv = baton_async_close_session(ac, rec_done, &u);
    OK_OR_ENOMEM("baton_async_close_session", rv);
    if (rv != 0) return 0;
    run_until(t, &u.calls, 1, 5000);
    OK_OR_ENOMEM("close callback", u.status);
    return u.status == 0;
}

/*
 * The whole path with allocation n failing (0: none). Exits 0 if the run
 * went as it must, 3 if it went through without reaching allocation n
 * (every allocation has been tried), 1 otherwise.
 */
static char certs[PATH_MAX]; /* the TLS runs' certificates */

static void run_one(long n, int on, int use_tls)
{
    baton_opts o = {.client_name = "oom", .op_timeout_ms = 2000, .connect_timeout_ms = 1000};
    struct fk_tls ft = {.cert_file = certs_path(certs, "node1.pem"),
                        .key_file = certs_path(certs, "node1.key")};
    struct fake *f = use_tls ? fake_start_tls(&ft) : fake_start();
    baton_async_t *ac = NULL;
    struct tloop t;
    int rv, ok = 0;

    tloop_init(&t);
    o.endpoints = f->addr;
    if (use_tls) {
        o.tls_ca_file = certs_path(certs, "ca.pem");
        o.token = "oom-token";
    }
    fail_at = n;
    fail_on = on;
    n_allocs = 0;
    armed = 1;
    rv = baton_async_new(&o, &ac);
    OK_OR_ENOMEM("baton_async_new", rv);
    if (rv == 0) {
        rv = baton_uv_attach(ac, &t.loop);
        OK_OR_ENOMEM("baton_uv_attach", rv);
        if (rv == 0) ok = session_life(&t, ac);
        baton_async_free(ac);
    }
    armed = 0;
    tloop_done(&t);
    fake_stop(f);
    if (!failed && !ok) FAIL("allocation %ld: a step failed with no failed allocation", n);
    exit(!failed && n > 0 ? 3 : 0);
}

/* The blocking API (include/baton/baton.h): connect, two locks, their
 * unlocks, close -- on the caller's thread and libbaton's I/O thread, both
 * counted (so the order of the allocations may vary from run to run).
 * true if every step succeeded. */
static int blocking_life(const char *addr)
{
    baton_opts o = {.endpoints = addr, .client_name = "oom", .op_timeout_ms = 2000,
                    .connect_timeout_ms = 1000};
    baton_lock_t *la = NULL, *lb = NULL;
    baton_t *b = NULL;
    int rv, ok = 0;

    rv = baton_connect(&o, &b);
    OK_OR_ENOMEM("baton_connect", rv);
    if (rv != 0) return 0;
    rv = baton_lock(b, "oom/a", &la);
    OK_OR_ENOMEM("baton_lock", rv);
    if (rv == 0) {
        rv = baton_lock_timeout(b, "oom/b", 1000, &lb);
        OK_OR_ENOMEM("baton_lock_timeout", rv);
        if (rv == 0) {
            rv = baton_unlock(lb);
            OK_OR_ENOMEM("baton_unlock (b)", rv);
            ok = rv == 0;
        }
        rv = baton_unlock(la);
        OK_OR_ENOMEM("baton_unlock", rv);
        ok = ok && rv == 0;
    }
    baton_close(b);
    return ok;
}

static void run_blocking(long n, int on)
{
    struct fake *f = fake_start();
    int ok;

    fake_th = f->th;
    fail_at = n;
    fail_on = on;
    n_allocs = 0;
    armed_all = 1;
    ok = blocking_life(f->addr);
    armed_all = 0;
    fake_stop(f);
    if (!failed && !ok) FAIL("allocation %ld: a step failed with no failed allocation", n);
    exit(!failed && n > 0 ? 3 : 0);
}

/* Make allocation 1, 2, 3... fail in turn (and with on, every one after
 * it too) until a run does not reach it. */
/* Which path a run takes. */
enum path { PLAIN, TLS, BLOCKING };

static void each_allocation(int on, enum path path)
{
    long n, tried = 0, bad = 0;

    for (n = 0; n <= MAX_ALLOCS; n++) {
        int st;
        pid_t pid = fork();

        ASSERT(pid >= 0);
        if (pid == 0 && path == BLOCKING) run_blocking(n, on);
        if (pid == 0) run_one(n, on, path == TLS);
        ASSERT(waitpid(pid, &st, 0) == pid);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 3) break;
        if (n > 0) tried++;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) continue;
        if (n == 0) FAIL("the path fails with no allocation failing");
        fprintf(stderr, "# allocation %ld made to fail%s: the run %s %d\n", n,
                on ? " (and all after it)" : "", WIFEXITED(st) ? "exited" : "died of signal",
                WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
        bad++;
    }
    fprintf(stderr, "# %ld allocations, each made to fail in turn: %ld runs went wrong\n", tried,
            bad);
    ASSERT(n <= MAX_ALLOCS);
    ASSERT_GT(tried, 10); /* the path allocates: the wrapping works */
    ASSERT_EQ(bad, 0);
}

/* One allocation fails: the call or callback where it hit says ENOMEM
 * (or libbaton copes), the rest of the run goes on. */
TEST(each_allocation_of_a_session_may_fail)
{
    each_allocation(0, PLAIN);
}

/* Memory runs out for good at allocation n: the first step to need some
 * says ENOMEM, and freeing everything still works without any. */
TEST(memory_may_run_out_at_each_allocation)
{
    each_allocation(1, PLAIN);
}

/* The same over TLS, with a token: libbaton's TLS buffers and the copies
 * of its options (OpenSSL's own allocations are not counted: it is a
 * shared library). */
TEST(each_allocation_over_tls_may_fail)
{
    each_allocation(0, TLS);
}

TEST(memory_may_run_out_over_tls)
{
    each_allocation(1, TLS);
}

/* The blocking API, its I/O thread included. */
TEST(each_allocation_of_a_blocking_session_may_fail)
{
    each_allocation(0, BLOCKING);
}

TEST(memory_may_run_out_in_a_blocking_session)
{
    each_allocation(1, BLOCKING);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    runner_set_timeout(600);
    suite_dir_init("baton-client-oom");
    snprintf(certs, sizeof certs, "%s/certs", suite_dir());
    certs_make_set(certs);
    RUN(each_allocation_of_a_session_may_fail);
    RUN(memory_may_run_out_at_each_allocation);
    RUN(each_allocation_over_tls_may_fail);
    RUN(memory_may_run_out_over_tls);
    RUN(each_allocation_of_a_blocking_session_may_fail);
    RUN(memory_may_run_out_in_a_blocking_session);
    return runner_done();
}
