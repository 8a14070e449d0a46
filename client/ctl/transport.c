/*
 * transport.c -- how batonctl's admin commands reach the cluster: through
 * libbaton's sessionless requests (client/call.h), which connect, speak
 * TLS, say HELLO with --token, follow REDIRECT and retry on NO_LEADER as
 * a lock call does. This file only turns batonctl's options into the
 * library's, adds to a refusal what the user may change (which flag), and
 * keeps the commands' error strings ("ADDRESS: what happened").
 *
 * Also here: the security options (--cacert, --cert, --key, --token, or
 * their environment variables) and the clock helpers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "baton/baton_async.h"
#include "baton/baton_defs.h"
#include "client/ctl/ctl.h"

int64_t ctl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void ctl_sleep_until(int64_t ms, int64_t deadline)
{
    int64_t left = deadline - ctl_now_ms();
    struct timespec ts;

    if (ms > left) ms = left;
    if (ms <= 0) return;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---- the security options ----------------------------------------------------- */

void ctl_security_from_env(struct ctl_opts *o)
{
    static const struct {
        const char *var;
        size_t off;
    } env[] = {
        {"BATON_CACERT", offsetof(struct ctl_opts, cacert)},
        {"BATON_CERT", offsetof(struct ctl_opts, cert)},
        {"BATON_KEY", offsetof(struct ctl_opts, key)},
        {"BATON_TOKEN", offsetof(struct ctl_opts, token)},
    };

    for (size_t i = 0; i < sizeof env / sizeof env[0]; i++) {
        const char **field = (const char **)((char *)o + env[i].off);
        const char *v = getenv(env[i].var);
        if (*field == NULL && v != NULL && v[0] != '\0') *field = v;
    }
}

int ctl_security_check(const struct ctl_opts *o, char *err, size_t errlen)
{
    if ((o->cert == NULL) != (o->key == NULL)) {
        snprintf(err, errlen, "--cert and --key (BATON_CERT, BATON_KEY) go together");
        return -1;
    }
    if (o->cert != NULL && o->cacert == NULL) {
        snprintf(err, errlen, "--cert and --key need --cacert (BATON_CACERT): TLS is on "
                              "only with a CA file");
        return -1;
    }
    if (o->token != NULL && strlen(o->token) > BATON_MAX_TOKEN) {
        snprintf(err, errlen, "the token is longer than %d bytes", BATON_MAX_TOKEN);
        return -1;
    }
    return 0;
}

/* libbaton's options for o, talking to addr (NULL: o's endpoints). */
static void baton_opts_of(const struct ctl_opts *o, const char *addr, baton_opts *bo)
{
    memset(bo, 0, sizeof *bo);
    bo->endpoints = addr != NULL ? addr : o->endpoints;
    bo->client_name = "batonctl";
    bo->tls_ca_file = o->cacert;
    bo->tls_cert_file = o->cert;
    bo->tls_key_file = o->key;
    bo->token = o->token;
}

int ctl_security_usable(const struct ctl_opts *o, char *err, size_t errlen)
{
    baton_opts bo;
    baton_async_t *ac;

    if (ctl_security_check(o, err, errlen) != 0) return -1;
    baton_opts_of(o, NULL, &bo);
    if (baton_async_new(&bo, &ac) != 0) { /* reads the endpoints and the TLS files */
        snprintf(err, errlen, "%s", baton_async_new_errmsg());
        return -1;
    }
    baton_async_free(ac);
    return 0;
}

/* ---- callers and calls ---------------------------------------------------------- */

int ctl_caller(const struct ctl_opts *o, const char *addr, baton__caller **out, char *err,
               size_t errlen)
{
    baton_opts bo;

    *out = NULL;
    if (ctl_security_check(o, err, errlen) != 0) return BATON_EINVAL;
    baton_opts_of(o, addr, &bo);
    return baton__caller_new(&bo, addr != NULL, out, err, errlen);
}

/* err: the library's message, and what the user may change when a node
 * refused the credentials. */
static void call_err(const struct ctl_opts *o, const baton__caller *c, int rv, char *err,
                     size_t errlen)
{
    const char *msg = baton__caller_errmsg(c), *hint = "";

    if (rv == BATON_EAUTH)
        hint = " (check --token / BATON_TOKEN, or --cert)";
    else if (rv == BATON_ETLS && o->cacert == NULL)
        hint = " (use --cacert)";
    else if (rv == BATON_ETLS && o->cert == NULL && strstr(msg, "refused this client") != NULL)
        hint = " (no --cert given)";
    snprintf(err, errlen, "%s%s", msg, hint);
}

int ctl_call(const struct ctl_opts *o, baton__caller *c, const struct msg *req, int stream,
             int64_t timeout_ms, struct baton__reply *rep, char *err, size_t errlen)
{
    int rv = baton__call(c, req, stream != 0, timeout_ms > 0 ? (uint64_t)timeout_ms : 1, rep);

    if (rv != 0) call_err(o, c, rv, err, errlen);
    return rv;
}

int ctl_read(baton__caller *c, int64_t timeout_ms, struct baton__reply *rep, char *err,
             size_t errlen)
{
    int rv = baton__call_next(c, timeout_ms > 0 ? (uint64_t)timeout_ms : 1, rep);

    if (rv != 0) snprintf(err, errlen, "%s", baton__caller_errmsg(c));
    return rv;
}

int ctl_leader_open(const struct ctl_opts *o, const struct msg *req, struct baton__reply *rep,
                    baton__caller **keep, char *err, size_t errlen)
{
    baton__caller *c;
    int rv;

    memset(rep, 0, sizeof *rep);
    rv = ctl_caller(o, NULL, &c, err, errlen);
    if (rv != 0) return rv;
    rv = ctl_call(o, c, req, keep != NULL, o->timeout_ms, rep, err, errlen);
    if (rv == 0 && keep != NULL)
        *keep = c;
    else
        baton__caller_free(c);
    return rv;
}

int ctl_leader_request(const struct ctl_opts *o, const struct msg *req, struct baton__reply *rep,
                       char *err, size_t errlen)
{
    return ctl_leader_open(o, req, rep, NULL, err, errlen);
}

int ctl_node_status(const struct ctl_opts *o, const char *addr, int64_t deadline,
                    struct baton__reply *rep, char *err, size_t errlen)
{
    struct msg req = {.type = MSG_STATUS};
    baton__caller *c;
    int rv;

    memset(rep, 0, sizeof *rep);
    rv = ctl_caller(o, addr, &c, err, errlen);
    if (rv != 0) return rv;
    rv = ctl_call(o, c, &req, 0, deadline - ctl_now_ms(), rep, err, errlen);
    baton__caller_free(c);
    if (rv == 0 && rep->m.type != MSG_STATUS_R) {
        snprintf(err, errlen, "%s: answered STATUS with %s", addr, msg_type_name(rep->m.type));
        baton__reply_free(rep);
        rv = BATON_EPROTO;
    }
    return rv;
}

int ctl_node_metrics(const struct ctl_opts *o, const char *addr, int64_t deadline,
                     struct ctl_samples *out, char *err, size_t errlen)
{
    struct msg req = {.type = MSG_METRICS};
    struct baton__reply rep;
    baton__caller *c;
    int rv;

    rv = ctl_caller(o, addr, &c, err, errlen);
    if (rv != 0) return rv;
    rv = ctl_call(o, c, &req, 0, deadline - ctl_now_ms(), &rep, err, errlen);
    baton__caller_free(c);
    if (rv != 0) return rv;
    if (rep.m.type != MSG_METRICS_R) {
        snprintf(err, errlen, "%s: answered METRICS with %s", addr, msg_type_name(rep.m.type));
        rv = BATON_EPROTO;
    } else if (ctl_samples_of(out, &rep.m) != 0) {
        snprintf(err, errlen, "out of memory");
        rv = BATON_ENOMEM;
    }
    baton__reply_free(&rep);
    return rv;
}

/* A baton_t with batonctl's connection options: with a session of ttl_ms
 * (0: the default), or a reader (read_only: no session). */
static int client_open(const struct ctl_opts *o, const char *client_name, int64_t ttl_ms,
                       int read_only, baton_t **out)
{
    baton_opts bo;
    int rv;

    memset(&bo, 0, sizeof bo);
    bo.read_only = read_only;
    bo.endpoints = o->endpoints;
    bo.client_name = client_name;
    if (o->timeout_set) {
        bo.connect_timeout_ms = (unsigned)o->timeout_ms;
        bo.op_timeout_ms = (unsigned)o->timeout_ms;
    }
    bo.session_ttl_ms = (unsigned)ttl_ms;
    bo.tls_ca_file = o->cacert;
    bo.tls_cert_file = o->cert;
    bo.tls_key_file = o->key;
    bo.token = o->token;
    rv = baton_connect(&bo, out);
    if (rv == 0) return 0;
    ctl_error("cannot connect: %s", baton_connect_errmsg());
    if (rv == BATON_EINVAL) return CTL_EXIT_USAGE;
    return rv == BATON_EUNAVAIL ? CTL_EXIT_UNAVAIL : CTL_EXIT_SOFTWARE;
}

int ctl_session_open(const struct ctl_opts *o, const char *client_name, int64_t ttl_ms,
                     baton_t **out)
{
    return client_open(o, client_name, ttl_ms, 0, out);
}

int ctl_reader_open(const struct ctl_opts *o, const char *client_name, baton_t **out)
{
    return client_open(o, client_name, 0, 1, out);
}
