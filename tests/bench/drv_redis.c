/*
 * drv_redis.c -- W1/W2/W3 against Redis (lockbench --driver redis), with
 * the lock recipe most teams use on Redis, for `make bench-compare`
 * (docs/performance.md, "Compared with Redis"):
 *
 *   acquire: SET <lock> <token> NX PX 30000; if the lock is taken (a nil
 *            reply), try again 1 ms later, until it is set;
 *   release: a Lua compare-and-delete (delete the key only if it still
 *            holds this acquire's token), sent with EVALSHA, and with EVAL
 *            should the server not know the script.
 *
 * Every client has its own connection (hiredis's async API, on the same
 * libuv loops as drv_async.c: loops.c), so the two systems are driven
 * alike, and both lines come from report.c. An acquire's latency runs from
 * its first SET to the SET that succeeds, retries and their 1 ms pauses
 * included. The recipe has no fences, so only W2's holder flag checks
 * mutual exclusion. A token is "<pid>-<client>-<n>", unique in the run.
 *
 * The JSON line says "system":"redis" and "durable": true when the server
 * appends every write to its log and fsyncs it before replying (appendonly
 * yes, appendfsync always), as read from the server (CONFIG GET) before the
 * run, not as the caller claims.
 *
 * A client's life: OPENING (PING) --> IDLE --go--> LOCKING (SET in flight)
 * <-> RETRYING (1 ms) --> (W2: HOLDING) --> UNLOCKING --> LOCKING ...; an
 * error reply --> PAUSED (10 ms); at the end of the run --> CLOSING (the
 * connection is closed once nothing is in flight) --> DONE. A client
 * whose SET is in flight when the run ends waits for it, and releases the
 * lock if it got it, so that the next run on the same server finds it free.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/adapters/libuv.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "tests/bench/loops.h"

#define RETRY_MS 1       /* the recipe's pause after a failed SET */
#define LEASE_MS "30000" /* the recipe's PX: far longer than any hold here */

/* Delete KEYS[1] only if it holds ARGV[1], the releaser's token. */
static const char release_script[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then "
    "return redis.call('del', KEYS[1]) else return 0 end";

enum rstate { R_OPENING, R_IDLE, R_LOCKING, R_RETRYING, R_HOLDING, R_UNLOCKING, R_PAUSED,
              R_CLOSING, R_DONE };

struct rclient {
    struct run_loop *L;
    struct cres *r;
    redisAsyncContext *ac; /* NULL once hiredis freed it */
    uv_timer_t timer;      /* the retry, W2's hold, the pause after an error */
    enum rstate state;
    char name[32];         /* the lock this client takes */
    char token[48];        /* of the current acquire */
    unsigned long long n_acquires;
    int64_t t0, t1;        /* when the acquire / the release began */
};

/* The server, from --endpoints, and the script's SHA1 (SCRIPT LOAD). */
static char server_host[64];
static int server_port;
static char script_sha[48];

static void next_op(struct rclient *c);
static void try_set(struct rclient *c);

static void fail(struct rclient *c, const char *what, const char *detail)
{
    c->r->errors++;
    note("client %d: %s: %s", c->r->id, what, detail);
}

/* The reply's error text, or a description of an unexpected reply. */
static const char *reply_text(const redisReply *rep)
{
    if (rep->type == REDIS_REPLY_ERROR || rep->type == REDIS_REPLY_STATUS) return rep->str;
    return "unexpected reply";
}

static void client_free(struct rclient *c)
{
    c->ac = NULL;
    uv_close((uv_handle_t *)&c->timer, NULL);
    c->state = R_DONE;
    loop_client_done(c->L);
}

/* hiredis closed the connection and is freeing its context: asked for at
 * the end (CLOSING), else the connection was lost and the client stops. */
static void on_disconnect(const redisAsyncContext *ac, int status)
{
    struct rclient *c = ac->data;

    if (c->state != R_CLOSING) {
        fail(c, "connection", status == REDIS_OK ? "closed" : ac->errstr);
        if (c->state == R_OPENING) loop_settled(c->L);
    }
    client_free(c);
}

/* The run is over for this client and nothing is in flight: close. */
static void finish_client(struct rclient *c)
{
    c->state = R_CLOSING;
    uv_timer_stop(&c->timer);
    redisAsyncDisconnect(c->ac); /* on_disconnect follows */
}

static void on_pause_over(uv_timer_t *t)
{
    next_op(t->data);
}

static void pause_after_error(struct rclient *c)
{
    c->state = R_PAUSED;
    uv_timer_start(&c->timer, on_pause_over, ERROR_PAUSE_NS / NS_PER_MS, 0);
}

static void send_release(struct rclient *c, bool with_source);

static void on_released(redisAsyncContext *ac, void *reply, void *data)
{
    struct rclient *c = data;
    const redisReply *rep = reply;

    (void)ac;
    if (rep == NULL) return; /* the connection is gone: on_disconnect */
    if (rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "NOSCRIPT", 8) == 0) {
        send_release(c, true);
        return;
    }
    if (rep->type == REDIS_REPLY_INTEGER && rep->integer == 1) {
        loop_released(c->L, c->r, c->t1, now_ns(), 0);
        next_op(c);
    } else if (rep->type == REDIS_REPLY_INTEGER) {
        fail(c, "release", "the lock no longer held this client's token");
        next_op(c);
    } else {
        fail(c, "release", reply_text(rep));
        pause_after_error(c);
    }
}

/* The compare-and-delete: EVALSHA, or EVAL with the script's source. */
static void send_release(struct rclient *c, bool with_source)
{
    int rv;

    if (with_source)
        rv = redisAsyncCommand(c->ac, on_released, c, "EVAL %s 1 %s %s", release_script,
                               c->name, c->token);
    else
        rv = redisAsyncCommand(c->ac, on_released, c, "EVALSHA %s 1 %s %s", script_sha,
                               c->name, c->token);
    if (rv != REDIS_OK) {
        fail(c, "release", c->ac->errstr[0] ? c->ac->errstr : "cannot send");
        pause_after_error(c);
    }
}

/* Release the held lock (W2: clear the holder flag first). */
static void release(struct rclient *c)
{
    loop_releasing(c->L, c->r);
    c->state = R_UNLOCKING;
    c->t1 = now_ns();
    send_release(c, false);
}

static void on_hold_over(uv_timer_t *t)
{
    release(t->data);
}

static void on_retry(uv_timer_t *t)
{
    try_set(t->data);
}

static void on_set(redisAsyncContext *ac, void *reply, void *data)
{
    struct rclient *c = data;
    const struct cfg *cfg = c->L->B->cfg;
    const redisReply *rep = reply;
    int64_t t1 = now_ns();

    (void)ac;
    if (rep == NULL) return; /* the connection is gone: on_disconnect */
    if (rep->type == REDIS_REPLY_NIL) {
        /* Taken: the recipe tries again 1 ms later, while the run lasts. */
        if (loop_ms_left(c->L) == 0) {
            finish_client(c);
            return;
        }
        c->state = R_RETRYING;
        uv_timer_start(&c->timer, on_retry, RETRY_MS, 0);
        return;
    }
    if (rep->type != REDIS_REPLY_STATUS || strcmp(rep->str, "OK") != 0) {
        fail(c, "acquire", reply_text(rep));
        pause_after_error(c);
        return;
    }
    loop_granted(c->L, c->r, c->t0, t1, 0);
    if (cfg->workload == W2 && cfg->hold_ms > 0) {
        c->state = R_HOLDING;
        uv_timer_start(&c->timer, on_hold_over, (uint64_t)cfg->hold_ms, 0);
        return;
    }
    release(c);
}

static void try_set(struct rclient *c)
{
    c->state = R_LOCKING;
    if (redisAsyncCommand(c->ac, on_set, c, "SET %s %s NX PX " LEASE_MS, c->name, c->token) !=
        REDIS_OK) {
        fail(c, "acquire", c->ac->errstr[0] ? c->ac->errstr : "cannot send");
        pause_after_error(c);
    }
}

/* Start the next acquire, with a fresh token, or finish if the run is over. */
static void next_op(struct rclient *c)
{
    if (loop_ms_left(c->L) == 0) {
        finish_client(c);
        return;
    }
    snprintf(c->token, sizeof c->token, "%d-%d-%llu", (int)getpid(), c->r->id,
             ++c->n_acquires);
    c->t0 = now_ns();
    try_set(c);
}

/* The run is over: a client between calls stops now; one with a call in
 * flight or holding the lock stops when the call completes (next_op, or
 * on_set's nil reply). */
static void client_end(void *p)
{
    struct rclient *c = p;

    if (c->state == R_IDLE || c->state == R_RETRYING || c->state == R_PAUSED) finish_client(c);
}

static void client_go(void *p)
{
    struct rclient *c = p;

    if (c->state == R_IDLE) next_op(c);
}

static void on_pong(redisAsyncContext *ac, void *reply, void *data)
{
    struct rclient *c = data;
    const redisReply *rep = reply;

    (void)ac;
    if (rep == NULL) return; /* not connected: on_connect or on_disconnect */
    if (rep->type == REDIS_REPLY_ERROR) {
        fail(c, "connect", rep->str);
        loop_settled(c->L);
        finish_client(c);
        return;
    }
    c->r->connected = true;
    c->state = R_IDLE;
    loop_settled(c->L);
}

/* Only a failed connection matters here: hiredis frees the context after
 * this callback, without calling on_disconnect. */
static void on_connect(const redisAsyncContext *ac, int status)
{
    struct rclient *c = ac->data;

    if (status == REDIS_OK) return;
    fail(c, "connect", ac->errstr);
    loop_settled(c->L);
    client_free(c);
}

/* Open the client's connection on its loop; its PING's reply settles it. */
static void client_start(void *p)
{
    struct rclient *c = p;
    redisAsyncContext *ac;

    uv_timer_init(&c->L->loop, &c->timer);
    c->timer.data = c;
    c->state = R_OPENING;
    ac = redisAsyncConnect(server_host, server_port);
    if (ac == NULL || ac->err || redisLibuvAttach(ac, &c->L->loop) != REDIS_OK) {
        fail(c, "connect", ac && ac->errstr[0] ? ac->errstr : "cannot start");
        if (ac != NULL) redisAsyncFree(ac);
        loop_settled(c->L);
        client_free(c);
        return;
    }
    c->ac = ac;
    ac->data = c;
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    if (redisAsyncCommand(ac, on_pong, c, "PING") != REDIS_OK) {
        fail(c, "connect", "cannot send PING");
        redisAsyncFree(ac);
        loop_settled(c->L);
        client_free(c);
    }
}

static void client_init(void *p, struct run_loop *L, struct cres *r)
{
    struct rclient *c = p;

    c->L = L;
    c->r = r;
    snprintf(c->name, sizeof c->name, L->B->cfg->workload == W2 ? "hot" : "w1-%d", r->id);
}

/* The server's host and port: the first of "host:port,..." (0 or -1). */
static int parse_endpoint(const char *endpoints)
{
    const char *colon = strchr(endpoints, ':');
    size_t len = colon ? (size_t)(colon - endpoints) : 0;
    char *end;
    long port;

    if (colon == NULL || len == 0 || len >= sizeof server_host) return -1;
    memcpy(server_host, endpoints, len);
    server_host[len] = '\0';
    port = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || (*end != '\0' && *end != ',') || port < 1 || port > 65535)
        return -1;
    server_port = (int)port;
    return 0;
}

/* The value of configuration parameter `name` (CONFIG GET), or "". */
static void config_get(redisContext *rc, const char *name, char *out, size_t size)
{
    redisReply *rep = redisCommand(rc, "CONFIG GET %s", name);

    out[0] = '\0';
    if (rep != NULL && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
        rep->element[1]->type == REDIS_REPLY_STRING)
        snprintf(out, size, "%s", rep->element[1]->str);
    freeReplyObject(rep);
}

/* Ask the server whether it fsyncs every write, and load the release
 * script. 0, or -1 with a message. */
static int probe_server(struct cfg *cfg)
{
    struct timeval tv = {.tv_sec = (time_t)(cfg->connect_timeout_ms / 1000),
                         .tv_usec = (suseconds_t)(cfg->connect_timeout_ms % 1000) * 1000};
    redisContext *rc = redisConnectWithTimeout(server_host, server_port, tv);
    redisReply *rep;
    char aof[16], fsync[16];
    int rv = -1;

    if (rc == NULL || rc->err) {
        fprintf(stderr, "lockbench: cannot reach the Redis server at %s:%d: %s\n", server_host,
                server_port, rc ? rc->errstr : "out of memory");
        redisFree(rc);
        return -1;
    }
    config_get(rc, "appendonly", aof, sizeof aof);
    config_get(rc, "appendfsync", fsync, sizeof fsync);
    rep = redisCommand(rc, "SCRIPT LOAD %s", release_script);
    if (aof[0] == '\0' || fsync[0] == '\0') {
        fprintf(stderr, "lockbench: the Redis server did not answer CONFIG GET\n");
    } else if (rep == NULL || rep->type != REDIS_REPLY_STRING || rep->len >= sizeof script_sha) {
        fprintf(stderr, "lockbench: SCRIPT LOAD failed: %s\n",
                rep && rep->type == REDIS_REPLY_ERROR ? rep->str : rc->errstr);
    } else {
        snprintf(script_sha, sizeof script_sha, "%s", rep->str);
        cfg->durable = strcmp(aof, "yes") == 0 && strcmp(fsync, "always") == 0;
        fprintf(stderr, "lockbench: Redis at %s:%d, appendonly %s, appendfsync %s\n",
                server_host, server_port, aof, fsync);
        rv = 0;
    }
    freeReplyObject(rep);
    redisFree(rc);
    return rv;
}

int run_redis(struct cfg *cfg)
{
    static const struct loop_driver drv = {
        .name = "redis",
        .client_size = sizeof(struct rclient),
        .init = client_init,
        .start = client_start,
        .go = client_go,
        .end = client_end,
    };

    cfg->system = "redis";
    cfg->fenced = false;
    if (parse_endpoint(cfg->endpoints) != 0) {
        fprintf(stderr, "lockbench: --endpoints must start with host:port for --driver redis\n");
        return 2;
    }
    if (probe_server(cfg) != 0) return 1;
    return run_loops(cfg, &drv);
}
