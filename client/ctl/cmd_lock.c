/*
 * cmd_lock.c -- `batonctl lock NAME... [--timeout MS] -- CMD [ARGS...]`:
 * take a lock (or, with several names, an atomic multi-lock of all of
 * them) with the blocking client API, run CMD while holding it, release
 * it, and exit with CMD's status.
 *
 * Signals. SIGINT, SIGTERM and SIGHUP are blocked in every thread (libbaton's
 * I/O thread inherits the mask) and taken by one thread with sigwaitinfo(),
 * which acts according to the phase:
 *   connecting  exit at once with 128+N (no lock can be held yet);
 *   waiting     close the session, which withdraws the queued request and
 *               makes the blocked baton_lock() return; exit 128+N;
 *   running     pass the signal on to CMD, unless it came from the terminal
 *               (si_code SI_KERNEL) and CMD is in our process group, which
 *               means CMD got it already;
 *   releasing   ignore it; the release is bounded by the op timeout.
 * CMD is started with posix_spawnp(), which is fork+exec done safely for a
 * multi-threaded process, with the signal mask batonctl started with.
 *
 * Losing the lock. libbaton runs the lost callback (on_lost) on its I/O
 * thread when it declares the lock lost: the session's lease ran out, the
 * session expired in the cluster, or an operator forced the release. If
 * CMD runs, it gets SIGTERM at once, and a "killer" thread sends SIGKILL
 * if CMD is still there --grace milliseconds later. batonctl then exits
 * with CTL_EXIT_LOST (76) whatever CMD's status was, and also when the
 * release finds that the lock had been lost unnoticed (BATON_ELOST or
 * BATON_ENOTHELD): in both cases CMD may have run without the lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "baton/baton.h"
#include "client/ctl/ctl.h"
#include "baton/baton_defs.h"
#include "proto/lockreq.h"

extern char **environ;

const char cmd_lock_help[] =
    "usage: batonctl lock NAME [NAME...] [--timeout MS] [--ttl MS] [--lock-delay MS]\n"
    "                     [--grace MS] [-v] [--shared | --limit N] [-e ENDPOINTS]\n"
    "                     -- CMD [ARGS...]\n"
    "\n"
    "Acquires lock NAME (waiting in the lock's FIFO queue), runs CMD while holding it,\n"
    "releases it when CMD exits, and exits with CMD's exit status. The '--' may be\n"
    "left out when there is one NAME and CMD does not start with '-'.\n"
    "\n"
    "Several NAMEs (up to 64, before the '--') are taken atomically: all of them at\n"
    "once, with one fencing token, or none. The request joins every name's queue at\n"
    "once, so two such commands over the same names in any order never deadlock.\n"
    "\n"
    "Options:\n"
    "  --timeout MS   wait at most MS milliseconds for the lock; 0 takes it only if it\n"
    "                 is free and nobody is queued. Default: wait as long as it takes.\n"
    "                 (Given before `lock`, --timeout bounds connecting and every\n"
    "                 request to the cluster instead.)\n"
    "  --ttl MS       session lease to ask for (default: the server's, 10 s)\n"
    "  --lock-delay MS  if this session expires while holding the lock, keep the lock\n"
    "                 from everyone for MS (0: none); default: the server's --lock-delay\n"
    "  --shared       take the lock in shared mode: any number of shared holders at\n"
    "                 once, or one exclusive holder (FIFO: a shared request behind a\n"
    "                 waiting exclusive one waits)\n"
    "  --limit N      take one of the N permits of semaphore NAME (2..10000): at most\n"
    "                 N holders at once, FIFO. The first request fixes N while NAME is\n"
    "                 held or waited for; another N is refused\n"
    "  --grace MS     when the lock is lost, how long CMD gets between SIGTERM and\n"
    "                 SIGKILL (default 5000; 0 sends SIGKILL at once)\n"
    "  -v, --verbose  report on stderr when the lock is acquired and released\n"
    "\n"
    "CMD's environment gets BATON_LOCK=NAME (the first), BATON_FENCE=<fencing token> and\n"
    "BATON_SESSION=<session id>. Pass BATON_FENCE to the resource the lock protects.\n"
    "\n"
    "Signals: SIGINT, SIGTERM and SIGHUP sent to batonctl while CMD runs are passed\n"
    "on to CMD (a Ctrl-C typed at the terminal reaches CMD directly and is not sent\n"
    "twice). While batonctl still waits for the lock, they end the wait (the queued\n"
    "request is withdrawn) and batonctl exits with 128+N.\n"
    "\n"
    "Losing the lock: batonctl keeps the session alive while CMD runs. If the lock\n"
    "is lost all the same -- the session's lease ran out (batonctl could not reach\n"
    "the cluster's leader for --ttl), the session expired in the cluster, or an\n"
    "operator forced the lock's release -- CMD is sent SIGTERM at once and SIGKILL\n"
    "--grace milliseconds later if it has not exited, and batonctl exits with 76\n"
    "whatever CMD's status (which it reports on stderr). batonctl gives the lock up\n"
    "no later than the cluster could grant it to anyone else, but CMD's SIGTERM\n"
    "handling and --grace add to that: keep --grace short, or pass BATON_FENCE to\n"
    "the resource. Only CMD itself is signalled, not processes it started.\n"
    "\n"
    "Exit status:\n"
    "  CMD's status   CMD ran; 128+N if it was killed by signal N\n"
    "  64             usage error\n"
    "  69             cluster unavailable (no leader reachable within the timeouts)\n"
    "  70             the cluster refused the request, or another error\n"
    "  75             lock not acquired: busy (--timeout 0) or timed out\n"
    "  76             the lock was lost while CMD ran (CMD was stopped), or was found\n"
    "                 lost when it was released\n"
    "  126, 127       CMD could not be executed / was not found\n"
    "  128+N          interrupted by signal N while waiting for the lock\n";

enum { OPT_WAIT = CTL_OPT_CMD_BASE, OPT_TTL, OPT_GRACE, OPT_VERBOSE, OPT_DELAY, OPT_SHARED,
       OPT_LIMIT };

#define DEFAULT_GRACE_MS 5000

static const struct ctl_optspec lock_opts[] = {
    {"timeout", 0, 1, OPT_WAIT},
    {"ttl", 0, 1, OPT_TTL},
    {"grace", 0, 1, OPT_GRACE},
    {"lock-delay", 0, 1, OPT_DELAY},
    {"shared", 0, 0, OPT_SHARED},
    {"limit", 0, 1, OPT_LIMIT},
    {"verbose", 'v', 0, OPT_VERBOSE},
    {NULL, 0, 0, 0},
};

enum phase { PH_CONNECTING, PH_WAITING, PH_RUNNING, PH_RELEASING };

/* Shared between the main thread, the signal thread, libbaton's I/O thread
 * (the lost callback) and the killer thread; guarded by mu. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t closed_cv; /* signalled when the signal thread's close is done */
    pthread_cond_t child_cv;  /* signalled when CMD has exited (child = 0);
                                 uses CLOCK_MONOTONIC */
    int closed;         /* the signal thread has finished baton_close */
    enum phase phase;
    baton_t *b;         /* the session; NULL once closed */
    pid_t child;        /* CMD while running */
    int interrupted;    /* the signal that ended the wait, or 0 */
    sigset_t handled;   /* SIGINT, SIGTERM, SIGHUP */
    sigset_t orig_mask; /* the mask batonctl started with; CMD gets it */
    int sigpipe_ignored; /* SIGPIPE was ignored when batonctl started */
    int lost_why;       /* the lock was declared lost: BATON_ESESSION or _ELOST */
    int stopping;       /* CMD was sent SIGTERM because the lock was lost */
    int64_t grace_ms;   /* --grace */
    const char *cmd0;   /* CMD's name, for messages */
} g = {.mu = PTHREAD_MUTEX_INITIALIZER, .closed_cv = PTHREAD_COND_INITIALIZER};

/* The signal thread: see the top of the file. */
static void *signal_thread(void *arg)
{
    (void)arg;
    for (;;) {
        siginfo_t si;
        baton_t *b = NULL;
        int sig = sigwaitinfo(&g.handled, &si);

        if (sig < 0) continue;
        pthread_mutex_lock(&g.mu);
        switch (g.phase) {
        case PH_CONNECTING:
            _exit(128 + sig);
        case PH_WAITING:
            if (g.interrupted == 0) {
                g.interrupted = sig;
                b = g.b;
                g.b = NULL;
            }
            break;
        case PH_RUNNING:
            if (g.child > 0 && (si.si_code != SI_KERNEL || getpgid(g.child) != getpgrp()))
                kill(g.child, sig);
            break;
        case PH_RELEASING:
            break;
        }
        pthread_mutex_unlock(&g.mu);
        /* Closing the session makes the main thread's baton_lock() return
         * BATON_ECLOSED; the cluster drops the queued request with it. */
        if (b != NULL) {
            baton_close(b);
            pthread_mutex_lock(&g.mu);
            g.closed = 1;
            pthread_cond_broadcast(&g.closed_cv);
            pthread_mutex_unlock(&g.mu);
        }
    }
    return NULL;
}

/* Started when CMD got SIGTERM for a lost lock: SIGKILL it unless it exits
 * within the grace period. The pid is only used while g.child still holds
 * it, that is before wait_cmd reaps it, so it cannot have been reused. */
static void *killer_thread(void *arg)
{
    struct timespec until;

    (void)arg;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)(g.grace_ms / 1000);
    until.tv_nsec += (long)(g.grace_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&g.mu);
    while (g.child > 0 && pthread_cond_timedwait(&g.child_cv, &g.mu, &until) != ETIMEDOUT) {
    }
    if (g.child > 0) {
        ctl_error("%s did not exit within %" PRId64 " ms of SIGTERM: sending SIGKILL", g.cmd0,
                  g.grace_ms);
        kill(g.child, SIGKILL);
    }
    pthread_mutex_unlock(&g.mu);
    return NULL;
}

/*
 * libbaton declared the lock lost (on its I/O thread, which must not be
 * held up: this only signals and starts the killer thread). If CMD runs,
 * stop it; either way remember it for the exit status.
 */
static void on_lost(baton_t *b, const char *lock, uint64_t fence, int why, void *data)
{
    pthread_t th;

    (void)b;
    (void)data;
    pthread_mutex_lock(&g.mu);
    if (g.lost_why == 0) g.lost_why = why;
    if (g.phase == PH_RUNNING && g.child > 0 && !g.stopping) {
        g.stopping = 1;
        ctl_error("lock %s (fence %" PRIu64 ") was lost: %s; stopping %s (SIGTERM, SIGKILL "
                  "after %" PRId64 " ms)",
                  lock, fence,
                  why == BATON_ELOST ? "its release was forced"
                                      : "the session's lease ran out or it expired",
                  g.cmd0, g.grace_ms);
        if (g.grace_ms == 0) {
            kill(g.child, SIGKILL);
        } else {
            kill(g.child, SIGTERM);
            if (pthread_create(&th, NULL, killer_thread, NULL) == 0)
                pthread_detach(th);
            else
                kill(g.child, SIGKILL); /* no thread to wait with: no grace */
        }
    } else if (g.phase != PH_RUNNING) {
        ctl_error("lock %s (fence %" PRIu64 ") was lost: %s", lock, fence,
                  why == BATON_ELOST ? "its release was forced"
                                     : "the session's lease ran out or it expired");
    }
    pthread_mutex_unlock(&g.mu);
}

/* Build CMD's environment: ours without any BATON_LOCK/FENCE/SESSION, plus
 * the three for this lock. NULL if out of memory. Free with free_env. */
static char **build_env(const char *name, uint64_t fence, uint64_t session)
{
    static const char *const ours[] = {"BATON_LOCK=", "BATON_FENCE=", "BATON_SESSION="};
    size_t n = 0, k = 0;
    char **env;

    while (environ[n] != NULL) n++;
    env = calloc(n + 4, sizeof *env);
    if (env == NULL) return NULL;
    for (size_t i = 0; i < n; i++) {
        int skip = 0;
        for (size_t j = 0; j < 3; j++)
            if (strncmp(environ[i], ours[j], strlen(ours[j])) == 0) skip = 1;
        if (!skip) env[k++] = environ[i];
    }
    /* Our three strings come last, so free_env can find them. */
    if (asprintf(&env[k], "BATON_LOCK=%s", name) < 0) env[k] = NULL;
    if (env[k] != NULL && asprintf(&env[k + 1], "BATON_FENCE=%llu", (unsigned long long)fence) < 0)
        env[k + 1] = NULL;
    if (env[k + 1] != NULL &&
        asprintf(&env[k + 2], "BATON_SESSION=%llu", (unsigned long long)session) < 0)
        env[k + 2] = NULL;
    if (env[k] == NULL || env[k + 1] == NULL || env[k + 2] == NULL) {
        free(env[k]);
        free(env[k + 1]);
        free(env);
        return NULL;
    }
    return env;
}

static void free_env(char **env)
{
    size_t n = 0;

    if (env == NULL) return;
    while (env[n] != NULL) n++;
    /* The last three entries are the ones build_env allocated. */
    for (size_t i = n - 3; i < n; i++) free(env[i]);
    free(env);
}

/*
 * Start CMD with the lock's environment. Returns 0 with *pid set, or the
 * exit code to use (126 or 127, or 70) after printing why.
 */
static int spawn_cmd(char **cmd, char **env, pid_t *pid)
{
    posix_spawnattr_t attr;
    sigset_t dfl;
    struct sigaction sa;
    int rv;

    /* CMD starts with batonctl's original signal mask, and with SIGPIPE at
     * its default unless batonctl itself was started with it ignored
     * (the client library may ignore it for its sockets). */
    sigemptyset(&dfl);
    if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN && !g.sigpipe_ignored)
        sigaddset(&dfl, SIGPIPE);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigmask(&attr, &g.orig_mask);
    posix_spawnattr_setsigdefault(&attr, &dfl);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    rv = posix_spawnp(pid, cmd[0], NULL, &attr, cmd, env);
    posix_spawnattr_destroy(&attr);
    if (rv == 0) return 0;
    ctl_error("%s: %s", cmd[0], strerror(rv));
    if (rv == ENOENT) return CTL_EXIT_NOT_FOUND;
    if (rv == ENOMEM || rv == EAGAIN) return CTL_EXIT_SOFTWARE;
    return CTL_EXIT_CANNOT_EXEC;
}

/* Why the acquisition failed, in the words of the command the user ran:
 * libbaton's message without its "baton_lock_many 'NAME': " (the call
 * batonctl made, which the user did not), else the code's text. */
static const char *acquire_why(baton_t *b, const char *name, int rv)
{
    const char *msg = baton_errmsg(b), *call = "baton_lock_many '";
    size_t nc = strlen(call), nn = strlen(name);

    if (msg[0] == '\0') return baton_strerror(rv);
    if (strncmp(msg, call, nc) == 0 && strncmp(msg + nc, name, nn) == 0 &&
        strncmp(msg + nc + nn, "': ", 3) == 0)
        return msg + nc + nn + 3;
    return msg;
}

/* The exit code and message for a failed acquisition. batonctl checked
 * every argument before, so BATON_EINVAL is the cluster refusing the lock
 * (a semaphore asked for as an ordinary lock or with another limit):
 * 70, as any refusal. */
static int acquire_failed(baton_t *b, const char *name, int64_t wait_ms, int rv)
{
    switch (rv) {
    case BATON_EWOULDBLOCK:
        ctl_error("lock %s is held by another client", name);
        return CTL_EXIT_TEMPFAIL;
    case BATON_ETIMEDOUT:
        ctl_error("lock %s was not granted within %lld ms", name, (long long)wait_ms);
        return CTL_EXIT_TEMPFAIL;
    case BATON_EUNAVAIL:
    case BATON_ESESSION:
    case BATON_ECLOSED:
        ctl_error("lock %s: %s", name, acquire_why(b, name, rv));
        return CTL_EXIT_UNAVAIL;
    default:
        ctl_error("lock %s: %s", name, acquire_why(b, name, rv));
        return CTL_EXIT_SOFTWARE;
    }
}

/*
 * Wait for CMD and turn its end into CMD's exit status (which cmd_lock
 * replaces with CTL_EXIT_LOST if the lock was lost meanwhile: on_lost has
 * stopped CMD then).
 */
static int wait_cmd(pid_t pid)
{
    siginfo_t si;
    int status;

    /* Wait for the end without reaping, so that the pid cannot be reused
     * while the signal thread may still send to it; then forget it, then
     * reap. */
    while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
    }
    pthread_mutex_lock(&g.mu);
    g.phase = PH_RELEASING;
    g.child = 0;
    pthread_cond_broadcast(&g.child_cv);
    pthread_mutex_unlock(&g.mu);
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            ctl_error("waitpid: %s", strerror(errno));
            return CTL_EXIT_SOFTWARE;
        }
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return CTL_EXIT_SOFTWARE;
}

/* Close the session unless the signal thread already did. */
static void close_session(void)
{
    baton_t *b;

    pthread_mutex_lock(&g.mu);
    g.phase = PH_RELEASING;
    b = g.b;
    g.b = NULL;
    pthread_mutex_unlock(&g.mu);
    baton_close(b);
}

int cmd_lock(struct ctl_opts *o, int argc, char **argv)
{
    struct ctl_optiter it;
    const char *arg, *name = NULL, *eps[CTL_MAX_ENDPOINTS], *names[BATON_MAX_MANY];
    size_t n_names = 0;
    int dashdash = 0;
    char err[CTL_ERR_SIZE], *storage, **cmd = NULL, **env;
    int64_t wait_ms = -1, ttl_ms = 0, grace_ms = DEFAULT_GRACE_MS, delay_ms = -2;
    uint64_t limit = 0;
    int id, rv, verbose = 0, sig, lost, spawned = 0, mode = BATON_MODE_EXCLUSIVE;
    baton_opts bo;
    baton_t *b = NULL;
    baton_lock_t *l = NULL;
    pthread_t th;
    struct sigaction sa;
    pid_t pid;

    /* With a '--', every word before it that is no option is a NAME. */
    for (int i = 1; i < argc && !dashdash; i++) dashdash = strcmp(argv[i], "--") == 0;
    ctl_opt_init(&it, argc, argv, 1);
    while (cmd == NULL &&
           (id = ctl_opt_next(&it, lock_opts, ctl_global_opts, &arg, err, sizeof err)) !=
               CTL_OPT_END) {
        if (id == CTL_OPT_POSITIONAL && (name == NULL || dashdash)) {
            if (n_names == BATON_MAX_MANY)
                return ctl_usage_error("lock", "at most %d NAMEs", BATON_MAX_MANY);
            if (!ctl_lock_name_ok(arg))
                return ctl_usage_error("lock", "a lock name is 1 to %d bytes", BATON_MAX_NAME);
            for (size_t i = 0; i < n_names; i++)
                if (strcmp(names[i], arg) == 0)
                    return ctl_usage_error("lock", "lock '%s' named twice", arg);
            names[n_names++] = arg;
            name = names[0];
        } else if (id == CTL_OPT_POSITIONAL) {
            cmd = argv + it.i - 1;  /* CMD starts at its first word */
        } else if (id == CTL_OPT_DASHDASH) {
            cmd = argv + it.i;
        } else if (id == OPT_WAIT) {
            if (ctl_parse_ms(arg, &wait_ms) != 0)
                return ctl_usage_error("lock", "bad --timeout '%s' (milliseconds)", arg);
        } else if (id == OPT_TTL) {
            if (ctl_parse_ms(arg, &ttl_ms) != 0 || ttl_ms == 0)
                return ctl_usage_error("lock", "bad --ttl '%s' (positive milliseconds)", arg);
        } else if (id == OPT_DELAY) {
            if (ctl_parse_ms(arg, &delay_ms) != 0 || delay_ms > INT32_MAX)
                return ctl_usage_error("lock", "bad --lock-delay '%s' (milliseconds)", arg);
        } else if (id == OPT_GRACE) {
            if (ctl_parse_ms(arg, &grace_ms) != 0)
                return ctl_usage_error("lock", "bad --grace '%s' (milliseconds)", arg);
        } else if (id == OPT_SHARED) {
            mode = BATON_MODE_SHARED;
        } else if (id == OPT_LIMIT) {
            if (ctl_parse_uint(arg, BATON_MAX_LIMIT, &limit) != 0 || limit < 2)
                return ctl_usage_error("lock", "bad --limit '%s' (2..%d)", arg, BATON_MAX_LIMIT);
        } else if (id == OPT_VERBOSE) {
            verbose = 1;
        } else {
            rv = ctl_common_opt(o, "lock", cmd_lock_help, id, arg, err);
            if (rv != CTL_CONTINUE) return rv;
        }
    }
    if (name == NULL) return ctl_usage_error("lock", "missing lock NAME");
    if (!lockreq_mode_fits((uint32_t)mode, (uint32_t)limit))
        return ctl_usage_error("lock", "--shared and --limit do not combine: a semaphore's "
                                       "holders each hold one permit");
    if (cmd == NULL || cmd[0] == NULL) return ctl_usage_error("lock", "missing CMD to run");
    storage = malloc(strlen(o->endpoints) + 1);
    if (storage == NULL) return CTL_EXIT_SOFTWARE;
    rv = ctl_split_endpoints(o->endpoints, storage, eps, CTL_MAX_ENDPOINTS, err, sizeof err);
    free(storage);
    if (rv < 0) return ctl_usage_error("lock", "%s", err);

    g.grace_ms = grace_ms;
    g.cmd0 = cmd[0];
    {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&g.child_cv, &ca);
        pthread_condattr_destroy(&ca);
    }

    /* Signals go to the signal thread from here on, in every thread. */
    g.sigpipe_ignored = sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN;
    sigemptyset(&g.handled);
    sigaddset(&g.handled, SIGINT);
    sigaddset(&g.handled, SIGTERM);
    sigaddset(&g.handled, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &g.handled, &g.orig_mask);
    g.phase = PH_CONNECTING;
    if (pthread_create(&th, NULL, signal_thread, NULL) != 0) {
        ctl_error("cannot start a thread");
        return CTL_EXIT_SOFTWARE;
    }
    pthread_detach(th);

    memset(&bo, 0, sizeof bo);
    bo.endpoints = o->endpoints;
    bo.client_name = "batonctl lock";
    if (o->timeout_set) {
        bo.connect_timeout_ms = (unsigned)o->timeout_ms;
        bo.op_timeout_ms = (unsigned)o->timeout_ms;
    }
    bo.session_ttl_ms = (unsigned)ttl_ms;
    bo.tls_ca_file = o->cacert;
    bo.tls_cert_file = o->cert;
    bo.tls_key_file = o->key;
    bo.token = o->token;
    rv = baton_connect(&bo, &b);
    if (rv != 0) {
        ctl_error("cannot connect: %s", baton_connect_errmsg());
        if (rv == BATON_EINVAL) return CTL_EXIT_USAGE;
        return rv == BATON_EUNAVAIL ? CTL_EXIT_UNAVAIL : CTL_EXIT_SOFTWARE;
    }

    baton_on_lost(b, on_lost, NULL);
    pthread_mutex_lock(&g.mu);
    g.b = b;
    g.phase = PH_WAITING;
    pthread_mutex_unlock(&g.mu);

    {
        baton_lock_args la = {.wait_ms = wait_ms >= 0 ? wait_ms : BATON_WAIT_FOREVER};
        /* -2: not given (server default); 0 on the command line: none. */
        la.lock_delay_ms = delay_ms == -2  ? BATON_LOCK_DELAY_DEFAULT
                           : delay_ms == 0 ? BATON_LOCK_DELAY_NONE
                                           : (int32_t)delay_ms;
        la.mode = (uint8_t)mode;
        la.limit = (uint32_t)limit;
        rv = baton_lock_many(b, names, n_names, &la, &l);
    }

    pthread_mutex_lock(&g.mu);
    sig = g.interrupted;
    if (sig == 0) g.phase = rv == 0 ? PH_RUNNING : PH_RELEASING;
    /* If the signal thread is closing the session, let it finish before
     * this thread goes on to exit the process. */
    while (sig != 0 && !g.closed) pthread_cond_wait(&g.closed_cv, &g.mu);
    pthread_mutex_unlock(&g.mu);
    if (sig != 0) {
        /* The signal thread closed the session; b is gone. */
        baton_unlock(l);
        ctl_error("interrupted by signal %d while waiting for lock %s", sig, name);
        return 128 + sig;
    }
    if (rv != 0) {
        rv = acquire_failed(b, name, wait_ms, rv);
        close_session();
        return rv;
    }
    if (verbose)
        ctl_error("acquired lock %s (fence %llu, session %llu)", name,
                  (unsigned long long)baton_lock_fence(l), (unsigned long long)baton_session_id(b));

    env = build_env(name, baton_lock_fence(l), baton_session_id(b));
    if (env == NULL) {
        ctl_error("out of memory");
        rv = CTL_EXIT_SOFTWARE;
    } else {
        /* The mutex makes the child's pid visible to the signal thread
         * and to on_lost before they can act; a lock lost before CMD
         * could start means CMD does not start at all. */
        pthread_mutex_lock(&g.mu);
        if (g.lost_why != 0) {
            rv = CTL_EXIT_LOST;
        } else {
            rv = spawn_cmd(cmd, env, &pid);
            if (rv == 0) g.child = pid;
            spawned = rv == 0;
        }
        pthread_mutex_unlock(&g.mu);
        free_env(env);
        if (rv == 0) rv = wait_cmd(pid);
    }

    pthread_mutex_lock(&g.mu);
    g.phase = PH_RELEASING;
    lost = g.lost_why;
    pthread_mutex_unlock(&g.mu);
    if (lost != 0 && spawned) {
        ctl_error("lock %s was lost while %s ran; %s ended with status %d", name, cmd[0],
                  cmd[0], rv);
        rv = CTL_EXIT_LOST;
    } else if (lost != 0 && rv == CTL_EXIT_LOST) {
        ctl_error("lock %s was lost before %s could start", name, cmd[0]);
    }
    {
        int urv = baton_unlock(l);
        if ((urv == BATON_ELOST || urv == BATON_ENOTHELD) && lost == 0) {
            /* Found lost only now: the cluster may have taken it away
             * while CMD ran, so CMD's work cannot be trusted to have been
             * done under the lock. */
            ctl_error("lock %s was lost before it could be released (%s)", name, baton_errmsg(b));
            if (spawned) rv = CTL_EXIT_LOST;
        } else if (urv != 0 && urv != BATON_ELOST && urv != BATON_ENOTHELD) {
            ctl_error("warning: releasing lock %s: %s", name, baton_errmsg(b));
        } else if (urv == 0 && verbose) {
            ctl_error("released lock %s", name);
        }
    }
    close_session();
    return rv;
}
