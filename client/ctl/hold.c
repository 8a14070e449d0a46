/*
 * hold.c -- run CMD while holding a lock (`batonctl lock`) or leading an
 * election (`batonctl elect`): connect with the blocking client API, take
 * the hold through the command's acquire function, run CMD, stop CMD if
 * the hold is lost, release it when CMD exits, and exit with CMD's status.
 *
 * Signals. SIGINT, SIGTERM and SIGHUP are blocked in every thread (libbaton's
 * I/O thread inherits the mask) and taken by one thread with sigwaitinfo(),
 * which acts according to the phase:
 *   connecting  exit at once with 128+N (nothing can be held yet);
 *   waiting     close the session, which withdraws the queued request and
 *               makes the blocked acquire return; exit 128+N;
 *   running     pass the signal on to CMD, unless it came from the terminal
 *               (si_code SI_KERNEL) and CMD is in our process group, which
 *               means CMD got it already;
 *   releasing   ignore it; the release is bounded by the op timeout.
 * CMD is started with posix_spawnp(), which is fork+exec done safely for a
 * multi-threaded process, with the signal mask batonctl started with.
 *
 * Losing the hold. libbaton runs the lost callback (on_lost) on its I/O
 * thread when it declares the hold lost: the session's lease ran out, the
 * session expired in the cluster, or an operator forced the release. If
 * CMD runs, it gets SIGTERM at once, and a "killer" thread sends SIGKILL
 * if CMD is still there --grace milliseconds later. batonctl then exits
 * with CTL_EXIT_LOST (76) whatever CMD's status was, and also when the
 * release finds that the hold had been lost unnoticed (BATON_ELOST or
 * BATON_ENOTHELD): in both cases CMD may have run without it.
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
#include "baton/baton_defs.h"
#include "client/ctl/ctl.h"

extern char **environ;

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
    const struct ctl_hold *h; /* what is held, CMD, --grace */
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
    until.tv_sec += (time_t)(g.h->grace_ms / 1000);
    until.tv_nsec += (long)(g.h->grace_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&g.mu);
    while (g.child > 0 && pthread_cond_timedwait(&g.child_cv, &g.mu, &until) != ETIMEDOUT) {
    }
    if (g.child > 0) {
        ctl_error("%s did not exit within %" PRId64 " ms of SIGTERM: sending SIGKILL",
                  g.h->argv[0], g.h->grace_ms);
        kill(g.child, SIGKILL);
    }
    pthread_mutex_unlock(&g.mu);
    return NULL;
}

/* Why a hold was lost, for messages. */
static const char *lost_why_text(int why)
{
    return why == BATON_ELOST ? "its release was forced"
                              : "the session's lease ran out or it expired";
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
        ctl_error("%s %s (fence %" PRIu64 ") was lost: %s; stopping %s (SIGTERM, SIGKILL "
                  "after %" PRId64 " ms)",
                  g.h->what, lock, fence, lost_why_text(why), g.h->argv[0], g.h->grace_ms);
        if (g.h->grace_ms == 0) {
            kill(g.child, SIGKILL);
        } else {
            kill(g.child, SIGTERM);
            if (pthread_create(&th, NULL, killer_thread, NULL) == 0)
                pthread_detach(th);
            else
                kill(g.child, SIGKILL); /* no thread to wait with: no grace */
        }
    } else if (g.phase != PH_RUNNING) {
        ctl_error("%s %s (fence %" PRIu64 ") was lost: %s", g.h->what, lock, fence,
                  lost_why_text(why));
    }
    pthread_mutex_unlock(&g.mu);
}

/* Build CMD's environment: ours without any BATON_LOCK, BATON_ELECTION,
 * BATON_FENCE or BATON_SESSION (a batonctl's around this one), plus
 * name_var=NAME and the fence and session of this hold. NULL if out of
 * memory. Free with free_env. */
static char **build_env(const char *name_var, const char *name, uint64_t fence,
                        uint64_t session)
{
    static const char *const ours[] = {"BATON_LOCK=", "BATON_ELECTION=", "BATON_FENCE=",
                                       "BATON_SESSION="};
    size_t n = 0, k = 0;
    char **env;

    while (environ[n] != NULL) n++;
    env = calloc(n + 4, sizeof *env);
    if (env == NULL) return NULL;
    for (size_t i = 0; i < n; i++) {
        int skip = 0;
        for (size_t j = 0; j < sizeof ours / sizeof ours[0]; j++)
            if (strncmp(environ[i], ours[j], strlen(ours[j])) == 0) skip = 1;
        if (!skip) env[k++] = environ[i];
    }
    /* Our three strings come last, so free_env can find them. */
    if (asprintf(&env[k], "%s=%s", name_var, name) < 0) env[k] = NULL;
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
 * libbaton's message without its "baton_CALL 'NAME': " (the call batonctl
 * made, which the user did not), else the code's text. */
static const char *acquire_why(baton_t *b, const char *name, int rv)
{
    const char *msg = baton_errmsg(b), *q;
    size_t nn = strlen(name);

    if (msg[0] == '\0') return baton_strerror(rv);
    q = strstr(msg, " '");
    if (strncmp(msg, "baton_", 6) == 0 && q != NULL && strcspn(msg, " ") == (size_t)(q - msg) &&
        strncmp(q + 2, name, nn) == 0 && strncmp(q + 2 + nn, "': ", 3) == 0)
        return q + 2 + nn + 3;
    return msg;
}

/* The exit code and message for a failed acquisition. batonctl checked
 * every argument before, so BATON_EINVAL is the cluster refusing the lock
 * (a semaphore asked for as an ordinary lock or with another limit):
 * 70, as any refusal. */
static int acquire_failed(baton_t *b, const struct ctl_hold *h, int rv)
{
    switch (rv) {
    case BATON_EWOULDBLOCK:
        ctl_error("%s %s is held by another client", h->what, h->name);
        return CTL_EXIT_TEMPFAIL;
    case BATON_ETIMEDOUT:
        ctl_error("%s %s was not granted within %lld ms", h->what, h->name,
                  (long long)h->wait_ms);
        return CTL_EXIT_TEMPFAIL;
    case BATON_EUNAVAIL:
    case BATON_ESESSION:
    case BATON_ECLOSED:
        ctl_error("%s %s: %s", h->what, h->name, acquire_why(b, h->name, rv));
        return CTL_EXIT_UNAVAIL;
    default:
        ctl_error("%s %s: %s", h->what, h->name, acquire_why(b, h->name, rv));
        return CTL_EXIT_SOFTWARE;
    }
}

/*
 * Wait for CMD and turn its end into CMD's exit status (which ctl_hold_run
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

/* Start the signal thread, with the signals blocked in every thread from
 * here on. 0 or the exit code. */
static int take_signals(void)
{
    struct sigaction sa;
    pthread_condattr_t ca;
    pthread_t th;

    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g.child_cv, &ca);
    pthread_condattr_destroy(&ca);
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
    return 0;
}

/* Run CMD under the hold l; CMD's exit status, or CTL_EXIT_LOST. */
static int run_held(baton_t *b, const struct ctl_hold *h, baton_lock_t *l, int *spawned)
{
    char **env = build_env(h->name_var, h->name, baton_lock_fence(l), baton_session_id(b));
    pid_t pid;
    int rv;

    if (env == NULL) {
        ctl_error("out of memory");
        return CTL_EXIT_SOFTWARE;
    }
    /* The mutex makes the child's pid visible to the signal thread and to
     * on_lost before they can act; a hold lost before CMD could start
     * means CMD does not start at all. */
    pthread_mutex_lock(&g.mu);
    if (g.lost_why != 0) {
        rv = CTL_EXIT_LOST;
    } else {
        rv = spawn_cmd(h->argv, env, &pid);
        if (rv == 0) g.child = pid;
        *spawned = rv == 0;
    }
    pthread_mutex_unlock(&g.mu);
    free_env(env);
    return rv == 0 ? wait_cmd(pid) : rv;
}

int ctl_hold_run(const struct ctl_opts *o, const struct ctl_hold *h)
{
    baton_t *b = NULL;
    baton_lock_t *l = NULL;
    int rv, sig, lost, spawned = 0;
    const char *cmd0 = h->argv[0];

    g.h = h;
    rv = take_signals();
    if (rv != 0) return rv;
    rv = ctl_session_open(o, h->client_name, h->ttl_ms, &b);
    if (rv != 0) return rv;

    baton_on_lost(b, on_lost, NULL);
    pthread_mutex_lock(&g.mu);
    g.b = b;
    g.phase = PH_WAITING;
    pthread_mutex_unlock(&g.mu);

    rv = h->acquire(b, h, &l);

    pthread_mutex_lock(&g.mu);
    sig = g.interrupted;
    if (sig == 0) g.phase = rv == 0 ? PH_RUNNING : PH_RELEASING;
    /* If the signal thread is closing the session, let it finish before
     * this thread goes on to exit the process. */
    while (sig != 0 && !g.closed) pthread_cond_wait(&g.closed_cv, &g.mu);
    pthread_mutex_unlock(&g.mu);
    if (sig != 0) {
        /* The signal thread closed the session; b is gone. */
        h->release(l);
        ctl_error("interrupted by signal %d while waiting for %s %s", sig, h->what, h->name);
        return 128 + sig;
    }
    if (rv != 0) {
        rv = acquire_failed(b, h, rv);
        close_session();
        return rv;
    }
    if (h->verbose)
        ctl_error("acquired %s %s (fence %llu, session %llu)", h->what, h->name,
                  (unsigned long long)baton_lock_fence(l), (unsigned long long)baton_session_id(b));

    rv = run_held(b, h, l, &spawned);

    pthread_mutex_lock(&g.mu);
    g.phase = PH_RELEASING;
    lost = g.lost_why;
    pthread_mutex_unlock(&g.mu);
    if (lost != 0 && spawned) {
        ctl_error("%s %s was lost while %s ran; %s ended with status %d", h->what, h->name, cmd0,
                  cmd0, rv);
        rv = CTL_EXIT_LOST;
    } else if (lost != 0 && rv == CTL_EXIT_LOST) {
        ctl_error("%s %s was lost before %s could start", h->what, h->name, cmd0);
    }
    {
        int urv = h->release(l);
        if ((urv == BATON_ELOST || urv == BATON_ENOTHELD) && lost == 0) {
            /* Found lost only now: the cluster may have taken it away
             * while CMD ran, so CMD's work cannot be trusted to have been
             * done under the hold. */
            ctl_error("%s %s was lost before it could be released (%s)", h->what, h->name,
                      baton_errmsg(b));
            if (spawned) rv = CTL_EXIT_LOST;
        } else if (urv != 0 && urv != BATON_ELOST && urv != BATON_ENOTHELD) {
            ctl_error("warning: releasing %s %s: %s", h->what, h->name, baton_errmsg(b));
        } else if (urv == 0 && h->verbose) {
            ctl_error("released %s %s", h->what, h->name);
        }
    }
    close_session();
    return rv;
}
