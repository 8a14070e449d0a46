/*
 * config.c -- batond's command line, read through the flag table
 * (server/config_flags.c): --help, the defaults and the parse loop.
 */
#include "server/config.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/addr.h"
#include "proto/errmsg.h"
#include "server/config_file.h"
#include "server/config_flags.h"
#include "server/log.h"

#define HELP_COL 25   /* where --help's descriptions start */
#define HELP_WIDTH 80

/* Print words from s wrapped at HELP_WIDTH, the first line from column
 * col, the others from HELP_COL. */
static void wrap(FILE *f, const char *s, int col)
{
    while (*s != '\0') {
        size_t n = strcspn(s, " ");

        if (col > HELP_COL && col + 1 + (int)n > HELP_WIDTH) {
            fprintf(f, "\n%*s", HELP_COL, "");
            col = HELP_COL;
        } else if (col > HELP_COL) {
            fputc(' ', f);
            col++;
        }
        fprintf(f, "%.*s", (int)n, s);
        col += (int)n;
        s += n;
        while (*s == ' ') s++;
    }
    fputc('\n', f);
}

/* One flag's entry: "  --name ARG" then its help and "[default: X]". */
static void usage_flag(FILE *f, const struct flag *fl)
{
    char left[64], def[32], text[1024];
    const char *shown = flag_default_text(fl, def, sizeof def);
    int n;

    n = snprintf(left, sizeof left, "  %s--%s%s%s", fl->kind == FLAG_HELP ? "-h, " : "",
                 fl->name, fl->arg ? " " : "", fl->arg ? fl->arg : "");
    if (shown[0] != '\0')
        snprintf(text, sizeof text, "%s [default: %s]", fl->help, shown);
    else
        snprintf(text, sizeof text, "%s", fl->help);
    fputs(left, f);
    /* The help starts at HELP_COL: on this line, or on the next one when
     * the flag reaches that far. */
    if (n >= HELP_COL)
        fprintf(f, "\n%*s", HELP_COL, "");
    else
        fprintf(f, "%*s", HELP_COL - n, "");
    wrap(f, text, HELP_COL);
}

/* batond --help: every flag of config_flags, with its default. */
static void usage(FILE *f)
{
    fputs("usage: batond --id N --data DIR --cluster 1=RAFT/CLIENT,2=RAFT/CLIENT,3=RAFT/CLIENT "
          "[options]\n"
          "\n"
          "Runs one node of a baton lock cluster.\n"
          "\n",
          f);
    for (size_t i = 0; i < config_n_flags; i++) {
        const struct flag *fl = &config_flags[i];

        if (fl->section != NULL)
            fprintf(f, "\n%s\n", fl->section);
        usage_flag(f, fl);
    }
    fputs("\n"
          "SIGINT or SIGTERM shuts the node down cleanly (a leader hands leadership over\n"
          "first); SIGHUP re-reads --auth-file.\n"
          "Exit status: 0 after a clean shutdown; 1 if the node could not start (a raft\n"
          "directory that lost its state, among others: the log says how to rejoin); 2\n"
          "for a bad command line; 74 after a local failure it cannot go on from (a\n"
          "failed raft log write, a leader that could not hand over after a failed\n"
          "apply, raft stopped for good): the log says why; restart it once the cause\n"
          "is gone and it catches up from the others.\n",
          f);
}

static int parse_uint(const char *s, unsigned long max, unsigned *out)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v > max) return -1;
    *out = (unsigned)v;
    return 0;
}

/* Why s is not an address batond can use, or NULL if it is: the grammar of
 * proto/addr.h (IPv4, bracketed IPv6 or a host name: every transport
 * resolves names at each connection attempt). */
static const char *addr_why(const char *s)
{
    struct proto_addr a;

    return proto_addr_parse(s, strlen(s), &a) == 0 ? NULL : a.why;
}

int config_parse_cluster(const char *s, struct node_config *nc, char *errmsg)
{
    char *copy = strdup(s), *save = NULL, *item;
    const char *bad, *why;
    int rv = -1;

    nc->n_members = 0;
    if (copy == NULL) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "out of memory");
        return -1;
    }
    for (item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '='), *slash;
        struct node_member *m;
        unsigned id;

        if (nc->n_members == BATON_MAX_MEMBERS) {
            snprintf(errmsg, BATON_ERRMSG_SIZE, "more than %d members", BATON_MAX_MEMBERS);
            goto out;
        }
        slash = eq ? strchr(eq, '/') : NULL;
        if (eq == NULL || slash == NULL) {
            snprintf(errmsg, BATON_ERRMSG_SIZE, "member '%.64s' is not ID=RAFTADDR/CLIENTADDR",
                     item);
            goto out;
        }
        *eq = '\0';
        *slash = '\0';
        if (parse_uint(item, INT_MAX, &id) != 0 || id == 0) {
            snprintf(errmsg, BATON_ERRMSG_SIZE, "bad member id '%.32s'", item);
            goto out;
        }
        bad = eq + 1;
        if ((why = addr_why(bad)) == NULL) why = addr_why(bad = slash + 1);
        if (why != NULL) {
            snprintf(errmsg, BATON_ERRMSG_SIZE, "member %u: address '%.64s': %s", id, bad, why);
            goto out;
        }
        for (uint32_t i = 0; i < nc->n_members; i++) {
            if (nc->members[i].id == id) {
                snprintf(errmsg, BATON_ERRMSG_SIZE, "member id %u appears twice", id);
                goto out;
            }
            /* raft tells members apart by address too, and would refuse
             * the configuration at bootstrap with no message. */
            if (strcmp(nc->members[i].raft_addr, eq + 1) == 0) {
                snprintf(errmsg, BATON_ERRMSG_SIZE,
                         "members %u and %u have the same raft address '%.64s'",
                         nc->members[i].id, id, eq + 1);
                goto out;
            }
        }
        m = &nc->members[nc->n_members++];
        m->id = id;
        snprintf(m->raft_addr, sizeof m->raft_addr, "%s", eq + 1);
        snprintf(m->client_addr, sizeof m->client_addr, "%s", slash + 1);
    }
    if (nc->n_members == 0) {
        snprintf(errmsg, BATON_ERRMSG_SIZE, "no members");
        goto out;
    }
    rv = 0;
out:
    free(copy);
    return rv;
}

/* getopt_long's table, made from config_flags: a flag's val is 256 + its
 * index there. */
#define FLAG_VAL 256
static struct option opts[CONFIG_MAX_FLAGS + 1];

const struct option *config_options(void)
{
    if (opts[0].name == NULL)
        for (size_t i = 0; i < config_n_flags; i++) {
            opts[i].name = config_flags[i].name;
            opts[i].has_arg = config_flags[i].arg ? required_argument : no_argument;
            opts[i].val = FLAG_VAL + (int)i;
        }
    return opts;
}

/* What batond runs with when a flag is not given (batond --help). */
static void set_defaults(struct srv_config *c)
{
    for (size_t i = 0; i < config_n_flags; i++) {
        const struct flag *f = &config_flags[i];
        char *field = (char *)c + f->off;

        if (f->kind == FLAG_UINT) *(unsigned *)field = (unsigned)f->def;
        if (f->kind == FLAG_INT || f->kind == FLAG_ENUM) *(int *)field = (int)f->def;
    }
}

/* The argument getopt_long is reading (its index in argv), so that an
 * error can be traced to the config file's line it came from. */
static int cur_arg;

/* Store one flag's value into *c. 0, or -1 after printing why not. */
static int set_flag(struct srv_config *c, const struct flag *f, const char *v)
{
    char *field = (char *)c + f->off;
    const char *why;
    unsigned u;
    int e;

    switch (f->kind) {
    case FLAG_UINT:
    case FLAG_INT:
        if (parse_uint(v, (unsigned long)f->max, &u) != 0 || u < (unsigned long)f->min) {
            if (f->err != NULL)
                fprintf(stderr, "batond: %s\n", f->err);
            else
                fprintf(stderr, "batond: '%s' is not a positive number\n", v);
            return -1;
        }
        if (f->kind == FLAG_UINT)
            *(unsigned *)field = u;
        else
            *(int *)field = (int)u;
        return 0;
    case FLAG_BOOL:
        *(bool *)field = true;
        return 0;
    case FLAG_STR:
        *(const char **)field = v;
        return 0;
    case FLAG_PATH:
        if (strlen(v) >= f->size - 16) {
            fprintf(stderr, "batond: %s\n", f->err);
            return -1;
        }
        snprintf(field, f->size, "%s", v);
        return 0;
    case FLAG_ADDR:
        if ((why = addr_why(v)) != NULL) {
            fprintf(stderr, "batond: %s '%.64s': %s\n", f->err, v, why);
            return -1;
        }
        if (f->size > 0)
            snprintf(field, f->size, "%s", v);
        else
            *(const char **)field = v;
        return 0;
    case FLAG_ENUM:
        if ((e = f->parse(v)) < 0) {
            fprintf(stderr, "batond: %s\n", f->err);
            return -1;
        }
        *(int *)field = e;
        return 0;
    default:
        return 0; /* FLAG_CLUSTER, FLAG_CONFIG, FLAG_HELP: parse_args */
    }
}

/* The option getopt_long refused, for the one-line error. */
static void bad_option(char **argv, const struct option *o)
{
    const char *arg = argv[cur_arg];

    if (optopt >= FLAG_VAL && optopt < FLAG_VAL + (int)config_n_flags) {
        o = &o[optopt - FLAG_VAL];
        fprintf(stderr, "batond: --%s needs a value (batond --help lists the flags)\n",
                o->name);
    } else if (strncmp(arg, "--", 2) == 0 && strchr(arg, '=') != NULL) {
        fprintf(stderr, "batond: unknown option %.*s (batond --help lists the flags)\n",
                (int)(strchr(arg, '=') - arg), arg);
    } else {
        fprintf(stderr, "batond: unknown option %s (batond --help lists the flags)\n", arg);
    }
}

/* Checks of the flags together, once all are read. 0 or -1 (printed). */
static int check_together(struct srv_config *c, const char *cluster, int cluster_arg)
{
    char errmsg[BATON_ERRMSG_SIZE];

    if (c->node.id == 0 || c->data_dir[0] == '\0' || cluster == NULL) {
        fprintf(stderr, "batond: --id, --data and --cluster are required (batond --help "
                        "lists the flags)\n");
        return -1;
    }
    cur_arg = cluster_arg;
    if (config_parse_cluster(cluster, &c->node, errmsg) != 0) {
        fprintf(stderr, "batond: --cluster: %s\n", errmsg);
        return -1;
    }
    cur_arg = 0;
    if (node_member_find(&c->node, c->node.id) == NULL) {
        fprintf(stderr, "batond: --id %u is not a member of --cluster\n", c->node.id);
        return -1;
    }
    if (c->fence_floor != NULL && c->restore == NULL) {
        fprintf(stderr, "batond: --fence-floor goes with --restore only\n");
        return -1;
    }
    if (c->restore != NULL && c->node.join) {
        fprintf(stderr, "batond: --restore starts a new cluster; it does not go with --join\n");
        return -1;
    }
    if (c->node.heartbeat_timeout_ms >= c->node.election_timeout_ms) {
        fprintf(stderr, "batond: --heartbeat must be below --election-timeout\n");
        return -1;
    }
    if (c->node.election_jitter_ms > c->node.election_timeout_ms) {
        fprintf(stderr, "batond: --election-jitter must not exceed --election-timeout\n");
        return -1;
    }
    if (c->shutdown_transfer_ms < 0)
        c->shutdown_transfer_ms = 2 * (int)c->node.election_timeout_ms;
    if (c->lock_delay_ms > c->max_lock_delay_ms) {
        fprintf(stderr, "batond: --lock-delay exceeds --max-lock-delay\n");
        return -1;
    }
    if ((c->tls_cert == NULL) != (c->tls_key == NULL) ||
        (c->tls_client_ca != NULL && c->tls_cert == NULL)) {
        fprintf(stderr, "batond: --tls-cert and --tls-key go together, and --tls-client-ca "
                        "needs them\n");
        return -1;
    }
    if ((c->peer_cert == NULL) != (c->peer_key == NULL) ||
        (c->peer_cert == NULL) != (c->peer_ca == NULL)) {
        fprintf(stderr, "batond: --peer-cert, --peer-key and --peer-ca go together\n");
        return -1;
    }
    if (c->min_ttl_ms > c->max_ttl_ms || c->default_ttl_ms < c->min_ttl_ms ||
        c->default_ttl_ms > c->max_ttl_ms) {
        fprintf(stderr, "batond: need --min-ttl <= --default-ttl <= --max-ttl\n");
        return -1;
    }
    return 0;
}

/* Parse argv, in which a --config file's pairs are already spliced. */
static int parse_args(struct srv_config *c, int argc, char **argv, const char *config_file)
{
    const struct option *o = config_options();
    const char *cluster = NULL;
    int v, cluster_arg = 0;

    set_defaults(c);
    opterr = 0;
    optind = 1;
    /* "+": no permutation, so that argv's indexes stay those of
     * config_args.line (a stray argument is an error all the same). */
    while (cur_arg = optind, (v = getopt_long(argc, argv, "+h", o, NULL)) != -1) {
        const struct flag *f;

        if (v == 'h') {
            usage(stdout);
            return 1;
        }
        if (v < FLAG_VAL || v >= FLAG_VAL + (int)config_n_flags) {
            bad_option(argv, o);
            return -1;
        }
        f = &config_flags[v - FLAG_VAL];
        switch (f->kind) {
        case FLAG_HELP:
            usage(stdout);
            return 1;
        case FLAG_CONFIG:
            /* Read already (config_file_expand), which finds it only
             * written in full: "--conf FILE" would be lost here. */
            if (config_file == NULL || (strcmp(argv[cur_arg], "--config") != 0 &&
                                        strncmp(argv[cur_arg], "--config=", 9) != 0)) {
                fprintf(stderr, "batond: write --config in full\n");
                return -1;
            }
            break;
        case FLAG_CLUSTER:
            cluster = optarg;
            cluster_arg = cur_arg;
            break;
        default:
            if (set_flag(c, f, optarg) != 0) return -1;
        }
    }
    cur_arg = 0; /* the checks below are of the flags together */
    if (optind < argc) {
        fprintf(stderr, "batond: unexpected argument '%s' (batond --help lists the flags)\n",
                argv[optind]);
        return -1;
    }
    return check_together(c, cluster, cluster_arg);
}

int config_parse(struct srv_config *c, int argc, char **argv)
{
    struct config_args a;
    int rv;

    memset(c, 0, sizeof *c);
    if (config_file_expand(argc, argv, config_options(), &a) != 0) return -1;
    cur_arg = 0;
    rv = parse_args(c, a.argc, a.argv, a.file);
    c->args = a; /* after parse_args, which starts from the defaults */
    if (rv < 0 && cur_arg > 0 && cur_arg < a.argc && a.line[cur_arg] != 0)
        fprintf(stderr, "batond: (that value is from %s line %d)\n", a.file, a.line[cur_arg]);
    if (rv != 0) config_free(c);
    return rv;
}

void config_free(struct srv_config *c)
{
    config_args_free(&c->args);
}

/* Exported for the MEMBER_ADD handler (server/members.c), which takes
 * addresses from the wire and must accept exactly what --cluster does. */
int config_addr_ok(const char *s)
{
    return addr_why(s) == NULL;
}
