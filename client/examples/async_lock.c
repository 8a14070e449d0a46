/*
 * async_lock.c -- take one baton lock with the async API on a libuv loop.
 *
 *     async_lock [ENDPOINTS [LOCK]]
 *
 * ENDPOINTS defaults to "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003" (the
 * cluster that `make run` starts) and LOCK to "demo". The program opens a
 * session, waits for the lock, prints its fencing token, holds the lock for
 * one second, releases it, closes the session, frees the context and closes
 * the loop. It exits with 0 if all of that worked, 1 otherwise.
 *
 * Everything happens in callbacks on one thread, so the program is a chain
 * of small steps:
 *
 *     main         -> baton_async_open
 *     on_open      -> baton_async_lock
 *     on_locked    -> start the hold timer
 *     on_hold_over -> baton_async_unlock
 *     on_unlocked  -> baton_async_close_session
 *     on_closed    -> baton_async_free, close the timer; uv_run returns
 *
 * Any failure jumps to the end of the chain (finish), which closes the
 * session if there is one and frees the context either way.
 *
 * Build: make (the binary is build/default/examples/async_lock), or by hand
 * from the repository root after `make` (uv.h needs the POSIX declarations
 * that -std=c11 alone hides, hence -D_POSIX_C_SOURCE):
 *     cc -std=c11 -D_POSIX_C_SOURCE=200809L -Iinclude client/examples/async_lock.c \
 *        build/default/libbaton.a -luv -lssl -lcrypto -lpthread -o async_lock
 * With libbaton installed (make install, or the .deb):
 *     cc -std=c11 -D_POSIX_C_SOURCE=200809L async_lock.c -o async_lock \
 *        $(pkg-config --cflags --libs libbaton libuv)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <uv.h>

#include "baton/adapters/libuv.h"
#include "baton/baton_async.h"

#define DEFAULT_ENDPOINTS "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003"
#define HOLD_MS 1000

/* The program's state, shared by every callback through their data
 * pointer. */
struct app {
    baton_async_t *ac;  /* the session's context; NULL once freed */
    uv_timer_t hold;    /* releases the lock after HOLD_MS */
    const char *lock;   /* the lock's name (from argv) */
    uint64_t fence;     /* the fencing token of the grant, 0 if none */
    int failed;         /* the exit status: 1 once anything went wrong */
};

static void finish(struct app *app);

/*
 * The session is closed: the cluster has released whatever it still held
 * for us. Free the context (from inside its own callback the free is
 * deferred until this callback returns, so that is safe), and close our
 * timer: after that the loop has no more handles and uv_run returns.
 */
static void on_closed(baton_async_t *ac, int status, void *data)
{
    struct app *app = data;

    if (status != 0) {
        /* The session still ends in the cluster, when its lease runs out. */
        fprintf(stderr, "close_session: %s (%s)\n", baton_strerror(status),
                baton_async_errmsg(ac));
        app->failed = 1;
    } else {
        printf("session closed\n");
    }
    baton_async_free(ac);
    app->ac = NULL;
    uv_close((uv_handle_t *)&app->hold, NULL);
}

/* The lock was released (or the release failed); either way we are done. */
static void on_unlocked(baton_async_t *ac, int status, void *data)
{
    struct app *app = data;

    if (status != 0) {
        fprintf(stderr, "unlock %s: %s (%s)\n", app->lock, baton_strerror(status),
                baton_async_errmsg(ac));
        app->failed = 1;
    } else {
        printf("released %s\n", app->lock);
    }
    app->fence = 0;
    finish(app);
}

/*
 * The hold timer fired: release the lock. The fence identifies this very
 * grant, so a stale unlock can never release somebody else's lock.
 */
static void on_hold_over(uv_timer_t *t)
{
    struct app *app = t->data;
    int rv = baton_async_unlock(app->ac, app->lock, app->fence, on_unlocked, app);

    if (rv != 0) {
        /* A call that returns an error never runs its callback, so the
         * chain continues here. BATON_ELOST means the lock was declared
         * lost while we held it (on_lost said so already). */
        fprintf(stderr, "unlock %s: %s\n", app->lock, baton_strerror(rv));
        app->failed = 1;
        app->fence = 0;
        finish(app);
    }
}

/*
 * The lock call ended. On success we hold the lock until we unlock it (or
 * until the lost callback says otherwise), and `fence` is its fencing
 * token: hand it to whatever the lock protects, so that a holder which
 * lost the lock without noticing cannot overwrite a newer holder's work.
 */
static void on_locked(baton_async_t *ac, int status, const char *name, uint64_t fence, void *data)
{
    struct app *app = data;

    if (status != 0) {
        fprintf(stderr, "lock %s: %s (%s)\n", name, baton_strerror(status), baton_async_errmsg(ac));
        app->failed = 1;
        finish(app);
        return;
    }
    app->fence = fence;
    printf("locked %s, fence %" PRIu64 "; releasing in %d ms\n", name, fence, HOLD_MS);
    uv_timer_start(&app->hold, on_hold_over, HOLD_MS, 0);
}

/*
 * The session is open (or could not be opened: then the context can only
 * be freed). Ask for the lock and wait as long as it takes: the cluster
 * queues us behind the current holder and earlier waiters (FIFO) and
 * pushes the grant when it is our turn.
 */
static void on_open(baton_async_t *ac, int status, uint64_t session, void *data)
{
    struct app *app = data;
    int rv;

    if (status != 0) {
        fprintf(stderr, "open: %s (%s)\n", baton_strerror(status), baton_async_errmsg(ac));
        app->failed = 1;
        baton_async_free(ac);
        app->ac = NULL;
        uv_close((uv_handle_t *)&app->hold, NULL);
        return;
    }
    printf("session %" PRIu64 " open; waiting for %s\n", session, app->lock);
    rv = baton_async_lock(ac, app->lock, BATON_WAIT_FOREVER, on_locked, app);
    if (rv != 0) {
        fprintf(stderr, "lock %s: %s\n", app->lock, baton_strerror(rv));
        app->failed = 1;
        finish(app);
    }
}

/*
 * A lock we hold was declared lost: our session expired (we could not
 * reach the cluster in time) or an operator forced the release. Stop
 * using what the lock protects at once. The hold timer still fires and
 * its unlock then returns BATON_ELOST, which frees the client's record of
 * the lock.
 */
static void on_lost(baton_async_t *ac, const char *lock, uint64_t fence, int why, void *data)
{
    struct app *app = data;

    fprintf(stderr, "lost %s (fence %" PRIu64 "): %s (%s)\n", lock, fence, baton_strerror(why),
            baton_async_errmsg(ac));
    app->failed = 1;
}

/*
 * The end of the chain: close the session, whose callback then frees the
 * context. If it cannot be closed (it was never opened, or it is closed
 * already), free the context here.
 */
static void finish(struct app *app)
{
    int rv;

    /* Already freed: a callback that was still pending ran during the
     * free, with BATON_ECANCELED, and there is nothing left to do. */
    if (app->ac == NULL) return;
    rv = baton_async_close_session(app->ac, on_closed, app);
    if (rv != 0) {
        fprintf(stderr, "close_session: %s\n", baton_strerror(rv));
        app->failed = 1;
        baton_async_free(app->ac);
        app->ac = NULL;
        uv_close((uv_handle_t *)&app->hold, NULL);
    }
}

int main(int argc, char **argv)
{
    baton_opts opts = {
        .endpoints = argc > 1 ? argv[1] : DEFAULT_ENDPOINTS,
        .client_name = "async_lock example",
        /* The other fields are 0: the default timeouts and lease. */
    };
    struct app app = {.lock = argc > 2 ? argv[2] : "demo"};
    uv_loop_t loop;
    int rv;

    if (uv_loop_init(&loop) != 0) return 1;
    uv_timer_init(&loop, &app.hold);
    app.hold.data = &app;

    /* A context is one session. Creating it does no I/O; the adapter gives
     * it the loop (a poll handle for its socket and one timer). */
    rv = baton_async_new(&opts, &app.ac);
    if (rv != 0) {
        fprintf(stderr, "baton_async_new: %s\n", baton_strerror(rv));
        return 1;
    }
    rv = baton_uv_attach(app.ac, &loop);
    if (rv == 0) {
        baton_async_on_lost(app.ac, on_lost, &app);
        rv = baton_async_open(app.ac, on_open, &app);
    }
    if (rv != 0) {
        /* Nothing has been started, so no callback will run: clean up
         * here. (On an attach error the adapter closes its own timer.) */
        fprintf(stderr, "baton_async_open: %s\n", baton_strerror(rv));
        baton_async_free(app.ac);
        uv_close((uv_handle_t *)&app.hold, NULL);
        app.failed = 1;
    }

    /* Run until every handle is closed: the last step (on_closed) frees
     * the context, whose adapter then closes its handles, and closes the
     * hold timer. */
    uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop) != 0) {
        fprintf(stderr, "the loop still has open handles\n");
        return 1;
    }
    return app.failed;
}
