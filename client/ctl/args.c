/*
 * args.c -- batonctl's command-line parsing: an option iterator shared by
 * the global level and every command, and parsers for the values options
 * take (durations, integers, endpoint lists). No I/O, so the unit tests can
 * drive it directly.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl/ctl.h"
#include "proto/addr.h"

const struct ctl_optspec ctl_global_opts[] = {
    {"help", 'h', 0, CTL_OPT_HELP},
    {"endpoints", 'e', 1, CTL_OPT_ENDPOINTS},
    {"output", 'o', 1, CTL_OPT_OUTPUT},
    {"timeout", 0, 1, CTL_OPT_TIMEOUT},
    {"cacert", 0, 1, CTL_OPT_CACERT},
    {"cert", 0, 1, CTL_OPT_CERT},
    {"key", 0, 1, CTL_OPT_KEY},
    {"token", 0, 1, CTL_OPT_TOKEN},
    {NULL, 0, 0, 0},
};

void ctl_opt_init(struct ctl_optiter *it, int argc, char **argv, int first)
{
    it->argc = argc;
    it->argv = argv;
    it->i = first;
}

/* Find a long option by name (of length n) in one table. */
static const struct ctl_optspec *find_long(const struct ctl_optspec *t, const char *name, size_t n)
{
    for (; t != NULL && t->lng != NULL; t++)
        if (strlen(t->lng) == n && memcmp(t->lng, name, n) == 0) return t;
    return NULL;
}

static const struct ctl_optspec *find_short(const struct ctl_optspec *t, char c)
{
    for (; t != NULL && t->lng != NULL; t++)
        if (t->shrt != 0 && t->shrt == c) return t;
    return NULL;
}

int ctl_opt_next(struct ctl_optiter *it, const struct ctl_optspec *specs,
                 const struct ctl_optspec *specs2, const char **arg, char *err, size_t errlen)
{
    const struct ctl_optspec *o;
    const char *a;

    *arg = NULL;
    if (it->i >= it->argc) return CTL_OPT_END;
    a = it->argv[it->i++];
    if (a[0] != '-' || a[1] == '\0') {
        *arg = a;
        return CTL_OPT_POSITIONAL;
    }
    if (strcmp(a, "--") == 0) return CTL_OPT_DASHDASH;

    if (a[1] == '-') {
        /* Long option: --name or --name=value. */
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t n = eq ? (size_t)(eq - name) : strlen(name);
        o = find_long(specs, name, n);
        if (o == NULL) o = find_long(specs2, name, n);
        if (o == NULL) {
            snprintf(err, errlen, "unknown option --%.*s", (int)n, name);
            return CTL_OPT_ERROR;
        }
        if (!o->has_arg) {
            if (eq != NULL) {
                snprintf(err, errlen, "option --%s takes no value", o->lng);
                return CTL_OPT_ERROR;
            }
            return o->id;
        }
        if (eq != NULL) {
            *arg = eq + 1;
            return o->id;
        }
        if (it->i >= it->argc) {
            snprintf(err, errlen, "option --%s needs a value", o->lng);
            return CTL_OPT_ERROR;
        }
        *arg = it->argv[it->i++];
        return o->id;
    }

    /* Short option: -x, -x VALUE or -xVALUE. */
    o = find_short(specs, a[1]);
    if (o == NULL) o = find_short(specs2, a[1]);
    if (o == NULL) {
        snprintf(err, errlen, "unknown option -%c", a[1]);
        return CTL_OPT_ERROR;
    }
    if (!o->has_arg) {
        if (a[2] != '\0') {
            snprintf(err, errlen, "option -%c takes no value", o->shrt);
            return CTL_OPT_ERROR;
        }
        return o->id;
    }
    if (a[2] != '\0') {
        *arg = a + 2;
        return o->id;
    }
    if (it->i >= it->argc) {
        snprintf(err, errlen, "option -%c needs a value", o->shrt);
        return CTL_OPT_ERROR;
    }
    *arg = it->argv[it->i++];
    return o->id;
}

/* The field of o a security option sets, and the option's name. */
static const char **security_field(struct ctl_opts *o, int id, const char **name)
{
    switch (id) {
    case CTL_OPT_CACERT: *name = "cacert"; return &o->cacert;
    case CTL_OPT_CERT: *name = "cert"; return &o->cert;
    case CTL_OPT_KEY: *name = "key"; return &o->key;
    case CTL_OPT_TOKEN: *name = "token"; return &o->token;
    default: return NULL;
    }
}

int ctl_apply_global(struct ctl_opts *o, int id, const char *arg, char *err, size_t errlen)
{
    const char *name, **field = security_field(o, id, &name);

    if (field != NULL) {
        /* An empty value would quietly mean "none": refuse it. */
        if (arg[0] == '\0') {
            snprintf(err, errlen, "--%s needs a non-empty value", name);
            return -1;
        }
        *field = arg;
        return 0;
    }
    switch (id) {
    case CTL_OPT_ENDPOINTS:
        if (arg[0] == '\0') {
            snprintf(err, errlen, "--endpoints needs a non-empty list");
            return -1;
        }
        o->endpoints = arg;
        return 0;
    case CTL_OPT_OUTPUT:
        if (strcmp(arg, "json") == 0) {
            o->format = CTL_JSON;
        } else if (strcmp(arg, "table") == 0) {
            o->format = CTL_TABLE;
        } else {
            snprintf(err, errlen, "unknown output format '%s' (use table or json)", arg);
            return -1;
        }
        return 0;
    case CTL_OPT_TIMEOUT:
        if (ctl_parse_ms(arg, &o->timeout_ms) != 0 || o->timeout_ms == 0) {
            snprintf(err, errlen, "bad --timeout '%s' (a positive number of milliseconds)", arg);
            return -1;
        }
        o->timeout_set = 1;
        return 0;
    default:
        snprintf(err, errlen, "option not allowed here");
        return -1;
    }
}

int ctl_parse_uint(const char *s, uint64_t max, uint64_t *out)
{
    unsigned long long v;
    char *end;

    if (!isdigit((unsigned char)s[0])) return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v > max) return -1;
    *out = v;
    return 0;
}

int ctl_parse_ms(const char *s, int64_t *out)
{
    const uint64_t max = 2147483647u;
    unsigned long long v;
    uint64_t mult;
    char *end;

    if (!isdigit((unsigned char)s[0])) return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0) return -1;
    if (*end == '\0' || strcmp(end, "ms") == 0)
        mult = 1;
    else if (strcmp(end, "s") == 0)
        mult = 1000;
    else if (strcmp(end, "m") == 0)
        mult = 60000;
    else
        return -1;
    if (v > max / mult) return -1;
    *out = (int64_t)(v * mult);
    return 0;
}

int ctl_split_hostport(const char *addr, char *host, size_t hostlen, char *port, size_t portlen)
{
    struct proto_addr a;

    if (proto_addr_parse(addr, strlen(addr), &a) != 0 || strlen(a.host) >= hostlen) return -1;
    if ((size_t)snprintf(port, portlen, "%u", a.port) >= portlen) return -1;
    strcpy(host, a.host);
    return 0;
}

int ctl_split_endpoints(const char *list, char *storage, const char **out, int max, char *err,
                        size_t errlen)
{
    int n = 0;
    char *p;

    strcpy(storage, list);
    p = storage;
    for (;;) {
        char *comma = strchr(p, ',');
        char *end = comma ? comma : p + strlen(p);
        char host[BATON_MAX_ADDR + 1], port[8];

        if (comma) *comma = '\0';
        while (*p == ' ' || *p == '\t') p++;
        while (end > p && (end[-1] == ' ' || end[-1] == '\t')) *--end = '\0';
        if (*p == '\0') {
            snprintf(err, errlen, "empty item in endpoint list '%s'", list);
            return -1;
        }
        if (strlen(p) > BATON_MAX_ADDR ||
            ctl_split_hostport(p, host, sizeof host, port, sizeof port) != 0) {
            snprintf(err, errlen, "bad endpoint '%s' (expected HOST:PORT)", p);
            return -1;
        }
        if (n == max) {
            snprintf(err, errlen, "too many endpoints (at most %d)", max);
            return -1;
        }
        out[n++] = p;
        if (comma == NULL) break;
        p = comma + 1;
    }
    return n;
}

int ctl_lock_name_ok(const char *name)
{
    size_t n = strlen(name);
    return n >= 1 && n <= BATON_MAX_NAME;
}
