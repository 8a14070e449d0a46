/*
 * cmd_top.c -- `batonctl top`: a live view of the cluster from every
 * node's METRICS reply (the same text as its HTTP /metrics), refreshed
 * every --interval: each node's role, term, indexes, commit latency
 * percentiles and grants per second over the last interval, sessions and
 * connections; and the longest lock queues the leader reports
 * (baton_lock_queue_length).
 *
 * The members come from the first endpoint that answers STATUS (else the
 * endpoints given); each node keeps one connection, re-opened when it
 * breaks. A node that does not answer within --timeout (at most the
 * interval) is a row "unreachable" for that refresh.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/ctl/ctl.h"
#include "baton/baton_defs.h"

const char cmd_top_help[] =
    "usage: batonctl top [--interval MS] [--count N] [--locks N] [-e ENDPOINTS]\n"
    "                    [-o table|json] [--timeout MS]\n"
    "\n"
    "Shows every node's metrics (the METRICS request: the same numbers as its\n"
    "HTTP /metrics), refreshed every --interval (default 1000 ms): role, term,\n"
    "commit and applied index, commit latency p50 and p99 (ms, from the\n"
    "histogram's buckets over the last interval; the first refresh covers the\n"
    "time since the node started), grants per second, sessions (on the leader)\n"
    "and client connections; then the locks with the longest queues that the\n"
    "leader reports (at most --locks, default 10). On a terminal the screen is\n"
    "redrawn; otherwise each refresh is printed after the last.\n"
    "--count N stops after N refreshes (default: until interrupted).\n"
    "\n"
    "JSON (-o json): one object per refresh, on its own line:\n"
    "  {\"time_ms\": N, \"nodes\": [{\"endpoint\": S, \"id\": N|null, \"reachable\": B,\n"
    "   \"role\": S|null, \"term\": N|null, \"commit_index\": N|null,\n"
    "   \"applied_index\": N|null, \"commit_p50_ms\": X|null, \"commit_p99_ms\": X|null,\n"
    "   \"grants_per_s\": X|null, \"sessions\": N|null, \"connections\": N|null,\n"
    "   \"error\": S|null}, ...],\n"
    "   \"locks\": [{\"name\": S, \"waiters\": N}, ...]}\n"
    "  Numbers with a fraction (X) are given to 3 decimals; percentiles are null\n"
    "  when nothing committed in the interval.\n"
    "\n"
    "Exit status: 0 after --count refreshes; 64 on a usage error; 69 if no\n"
    "endpoint answered the first refresh.\n";

/* batond lists at most this many queues (server/metrics.h, METRICS_TOP_LOCKS). */
#define TOP_LOCKS_MAX 10

enum { OPT_INTERVAL = CTL_OPT_CMD_BASE, OPT_COUNT, OPT_LOCKS };

static const struct ctl_optspec top_opts[] = {
    {"interval", 0, 1, OPT_INTERVAL},
    {"count", 0, 1, OPT_COUNT},
    {"locks", 0, 1, OPT_LOCKS},
    {NULL, 0, 0, 0},
};

struct node {
    char addr[BATON_MAX_ADDR + 1];
    baton__caller *conn;
    int connected;
    int reachable;
    char err[CTL_ERR_SIZE];
    struct ctl_samples now, prev;
    int64_t now_ms, prev_ms;
};

/* Ask node nd for METRICS and parse its text into nd->now. */
static void query(const struct ctl_opts *o, struct node *nd, int64_t deadline)
{
    struct msg req = {.type = MSG_METRICS};
    struct baton__reply rep;
    int rv;

    nd->reachable = 0;
    nd->err[0] = '\0';
    if (!nd->connected) {
        if (ctl_caller(o, nd->addr, &nd->conn, nd->err, sizeof nd->err) != 0) return;
        nd->connected = 1;
    }
    rv = ctl_call(o, nd->conn, &req, 0, deadline - ctl_now_ms(), &rep, nd->err, sizeof nd->err);
    if (rv != 0) {
        if (nd->err[0] == '\0') snprintf(nd->err, sizeof nd->err, "%s", baton_strerror(rv));
        return;
    }
    if (rep.m.type != MSG_METRICS_R) {
        snprintf(nd->err, sizeof nd->err, "unexpected reply %s", msg_type_name(rep.m.type));
        baton__reply_free(&rep);
        return;
    }
    ctl_samples_free(&nd->prev);
    nd->prev = nd->now;
    nd->prev_ms = nd->now_ms;
    memset(&nd->now, 0, sizeof nd->now);
    nd->now_ms = ctl_now_ms();
    (void)ctl_samples_of(&nd->now, &rep.m);
    baton__reply_free(&rep);
    nd->reachable = 1;
}

/* The q-quantile (0..1), in ms, of the commit latency histogram's
 * observations between prev and now (since the start if prev is empty),
 * interpolated inside its bucket; NAN if there were none. */
static double commit_quantile(const struct node *nd, double q)
{
    static const char name[] = "baton_commit_latency_seconds_bucket{le=\"";
    double lo = 0, lo_count = 0, total, target;
    const struct ctl_samples *now = &nd->now, *prev = &nd->prev;

    total = ctl_sample(now, "baton_commit_latency_seconds_count");
    if (prev->n) total -= ctl_sample(prev, "baton_commit_latency_seconds_count");
    if (!(total > 0)) return NAN;
    target = q * total;
    for (size_t i = 0; i < now->n; i++) {
        const char *k = now->v[i].key;
        double bound, c;

        if (strncmp(k, name, sizeof name - 1) != 0) continue;
        c = now->v[i].v - (prev->n ? ctl_sample(prev, k) : 0);
        if (strcmp(k + sizeof name - 1, "+Inf\"}") == 0) return lo * 1000;
        bound = strtod(k + sizeof name - 1, NULL);
        if (c >= target) {
            double part = c > lo_count ? (target - lo_count) / (c - lo_count) : 1;
            return (lo + (bound - lo) * part) * 1000;
        }
        lo = bound;
        lo_count = c;
    }
    return NAN;
}

/* Grants per second between the last two refreshes; NAN on the first. */
static double grants_rate(const struct node *nd)
{
    double dt = (double)(nd->now_ms - nd->prev_ms) / 1000;

    if (nd->prev.n == 0 || dt <= 0) return NAN;
    return (ctl_sample(&nd->now, "baton_grants_total") - ctl_sample(&nd->prev, "baton_grants_total")) / dt;
}

/* A label value of the exposition format, unescaped (\\ \" \n and the
 * %XX batond writes for other bytes) into out; its length. */
static size_t unescape_label(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;

    for (size_t i = 0; i < n && o < cap; i++) {
        unsigned v;
        if (s[i] == '\\' && i + 1 < n) {
            i++;
            out[o++] = s[i] == 'n' ? '\n' : s[i];
        } else if (s[i] == '%' && i + 2 < n && sscanf(s + i + 1, "%2x", &v) == 1) {
            out[o++] = (char)v;
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    return o;
}

struct busy_lock {
    char name[BATON_MAX_NAME];
    size_t len;
    uint64_t waiters;
};

static int by_waiters(const void *a, const void *b)
{
    const struct busy_lock *x = a, *y = b;
    return x->waiters < y->waiters ? 1 : x->waiters > y->waiters ? -1 : 0;
}

/* The leader's longest queues, longest first, at most max. */
static size_t busy_locks(const struct node *nodes, int n, struct busy_lock *out, size_t max)
{
    static const char name[] = "baton_lock_queue_length{lock=\"";
    const struct node *leader = NULL;
    size_t k = 0;

    for (int i = 0; i < n; i++)
        if (nodes[i].reachable && ctl_sample(&nodes[i].now, "baton_ready_leader") == 1) leader = &nodes[i];
    if (leader == NULL) return 0;
    for (size_t i = 0; i < leader->now.n && k < max; i++) {
        const char *key = leader->now.v[i].key;
        size_t len = strlen(key);

        if (strncmp(key, name, sizeof name - 1) != 0 || len < sizeof name + 1) continue;
        out[k].len = unescape_label(key + sizeof name - 1, len - (sizeof name - 1) - 2,
                                    out[k].name, sizeof out[k].name);
        out[k].waiters = (uint64_t)leader->now.v[i].v;
        k++;
    }
    qsort(out, k, sizeof *out, by_waiters);
    return k;
}

static const char *role_of(const struct node *nd)
{
    double r = ctl_sample(&nd->now, "baton_raft_role");
    return isnan(r) ? "?" : ctl_role_name((int)r);
}

/* A gauge as an integer cell / JSON number (null / "-" if absent). */
static void cell_num(struct table *t, double v, const char *fmt)
{
    if (isnan(v))
        table_cell(t, "-");
    else
        table_cell(t, fmt, v);
}

static void jw_num(struct jw *w, const char *key, double v, int frac)
{
    if (isnan(v))
        jw_null(w, key);
    else if (frac)
        jw_f64(w, key, v, 3);
    else
        jw_u64(w, key, v < 0 ? 0 : (uint64_t)v);
}

static void print_table(const struct node *nodes, int n, const struct busy_lock *locks,
                        size_t n_locks, int clear)
{
    struct table t;

    if (clear) fputs("\033[H\033[2J", stdout);
    table_init(&t, 11);
    table_cell(&t, "NODE");
    table_cell(&t, "ENDPOINT");
    table_cell(&t, "ROLE");
    table_cell(&t, "TERM");
    table_cell(&t, "COMMIT");
    table_cell(&t, "APPLIED");
    table_cell(&t, "P50MS");
    table_cell(&t, "P99MS");
    table_cell(&t, "GRANTS/S");
    table_cell(&t, "SESSIONS");
    table_cell(&t, "CONNS");
    for (int i = 0; i < n; i++) {
        const struct node *nd = &nodes[i];
        const struct ctl_samples *s = &nd->now;

        if (!nd->reachable) {
            table_cell(&t, "-");
            table_cell_bytes(&t, nd->addr, strlen(nd->addr));
            table_cell(&t, "unreachable");
            for (int k = 0; k < 8; k++) table_cell(&t, "-");
            continue;
        }
        cell_num(&t, ctl_sample(s, "baton_node_id"), "%.0f");
        table_cell_bytes(&t, nd->addr, strlen(nd->addr));
        table_cell(&t, "%s", role_of(nd));
        cell_num(&t, ctl_sample(s, "baton_raft_term"), "%.0f");
        cell_num(&t, ctl_sample(s, "baton_raft_commit_index"), "%.0f");
        cell_num(&t, ctl_sample(s, "baton_raft_applied_index"), "%.0f");
        cell_num(&t, commit_quantile(nd, 0.5), "%.2f");
        cell_num(&t, commit_quantile(nd, 0.99), "%.2f");
        cell_num(&t, grants_rate(nd), "%.1f");
        cell_num(&t, ctl_sample(s, "baton_sessions_open"), "%.0f");
        cell_num(&t, ctl_sample(s, "baton_connections"), "%.0f");
    }
    table_print(&t, stdout);
    table_free(&t);
    if (n_locks > 0) {
        table_init(&t, 2);
        table_cell(&t, "WAITERS");
        table_cell(&t, "LOCK");
        for (size_t i = 0; i < n_locks; i++) {
            table_cell(&t, "%llu", (unsigned long long)locks[i].waiters);
            table_cell_bytes(&t, locks[i].name, locks[i].len);
        }
        fputc('\n', stdout);
        table_print(&t, stdout);
        table_free(&t);
    }
    for (int i = 0; i < n; i++)
        if (!nodes[i].reachable && nodes[i].err[0]) fprintf(stderr, "%s\n", nodes[i].err);
    fflush(stdout);
}

static void print_json(const struct node *nodes, int n, const struct busy_lock *locks,
                       size_t n_locks)
{
    struct jw w;

    jw_init(&w, stdout);
    jw_begin_object(&w, NULL);
    jw_u64(&w, "time_ms", (uint64_t)ctl_now_ms());
    jw_begin_array(&w, "nodes");
    for (int i = 0; i < n; i++) {
        const struct node *nd = &nodes[i];
        const struct ctl_samples *s = &nd->now;
        int r = nd->reachable;

        jw_begin_object(&w, NULL);
        jw_cstring(&w, "endpoint", nd->addr);
        jw_num(&w, "id", r ? ctl_sample(s, "baton_node_id") : NAN, 0);
        jw_bool(&w, "reachable", r);
        jw_cstring(&w, "role", r ? role_of(nd) : NULL);
        jw_num(&w, "term", r ? ctl_sample(s, "baton_raft_term") : NAN, 0);
        jw_num(&w, "commit_index", r ? ctl_sample(s, "baton_raft_commit_index") : NAN, 0);
        jw_num(&w, "applied_index", r ? ctl_sample(s, "baton_raft_applied_index") : NAN, 0);
        jw_num(&w, "commit_p50_ms", r ? commit_quantile(nd, 0.5) : NAN, 1);
        jw_num(&w, "commit_p99_ms", r ? commit_quantile(nd, 0.99) : NAN, 1);
        jw_num(&w, "grants_per_s", r ? grants_rate(nd) : NAN, 1);
        jw_num(&w, "sessions", r ? ctl_sample(s, "baton_sessions_open") : NAN, 0);
        jw_num(&w, "connections", r ? ctl_sample(s, "baton_connections") : NAN, 0);
        jw_cstring(&w, "error", !r && nd->err[0] ? nd->err : NULL);
        jw_end_object(&w);
    }
    jw_end_array(&w);
    jw_begin_array(&w, "locks");
    for (size_t i = 0; i < n_locks; i++) {
        jw_begin_object(&w, NULL);
        jw_string(&w, "name", locks[i].name, locks[i].len);
        jw_u64(&w, "waiters", locks[i].waiters);
        jw_end_object(&w);
    }
    jw_end_array(&w);
    jw_end_object(&w);
    jw_finish(&w);
    fflush(stdout);
}

/* The nodes to watch: the members the first answering endpoint lists,
 * else the endpoints. Returns their count (0: out of memory). */
static int find_nodes(const struct ctl_opts *o, const char **eps, int n_eps, struct node **out)
{
    struct baton__reply rep = {0};
    char err[CTL_ERR_SIZE];
    struct node *nodes;
    int n = 0;

    for (int i = 0; i < n_eps; i++) {
        if (ctl_node_status(o, eps[i], ctl_now_ms() + o->timeout_ms, &rep, err, sizeof err) == 0)
            break;
    }
    nodes = calloc(BATON_MAX_MEMBERS + CTL_MAX_ENDPOINTS, sizeof *nodes);
    if (nodes == NULL) return 0;
    for (uint32_t i = 0; rep.frame != NULL && i < rep.m.u.status_r.n_members; i++) {
        const struct pstr *a = &rep.m.u.status_r.members[i].client_addr;
        if (a->n == 0) continue;
        snprintf(nodes[n++].addr, sizeof nodes[0].addr, "%.*s", (int)a->n, a->p);
    }
    baton__reply_free(&rep);
    for (int i = 0; n == 0 && i < n_eps; i++)
        snprintf(nodes[i].addr, sizeof nodes[0].addr, "%s", eps[i]);
    if (n == 0) n = n_eps;
    for (int i = 0; i < n; i++) nodes[i].conn = NULL;
    *out = nodes;
    return n;
}

int cmd_top(struct ctl_opts *o, int argc, char **argv)
{
    struct ctl_optiter it;
    const char *arg, *eps[CTL_MAX_ENDPOINTS];
    char err[CTL_ERR_SIZE], *storage;
    int64_t interval = 1000;
    uint64_t count = 0, max_locks = 10;
    struct busy_lock locks[TOP_LOCKS_MAX];
    struct node *nodes = NULL;
    int id, rv, n_eps, n, clear = isatty(STDOUT_FILENO) && o->format == CTL_TABLE;
    int status = CTL_EXIT_OK;

    ctl_opt_init(&it, argc, argv, 1);
    while ((id = ctl_opt_next(&it, top_opts, ctl_global_opts, &arg, err, sizeof err)) !=
           CTL_OPT_END) {
        if (id == OPT_INTERVAL) {
            if (ctl_parse_ms(arg, &interval) != 0 || interval < 10)
                return ctl_usage_error("top", "bad --interval '%s' (10 ms or more)", arg);
        } else if (id == OPT_COUNT) {
            if (ctl_parse_uint(arg, UINT32_MAX, &count) != 0 || count == 0)
                return ctl_usage_error("top", "bad --count '%s'", arg);
        } else if (id == OPT_LOCKS) {
            if (ctl_parse_uint(arg, TOP_LOCKS_MAX, &max_locks) != 0)
                return ctl_usage_error("top", "bad --locks '%s' (0..%d)", arg,
                                       TOP_LOCKS_MAX);
        } else {
            rv = ctl_common_opt(o, "top", cmd_top_help, id, arg, err);
            if (rv != CTL_CONTINUE) return rv;
        }
    }
    rv = ctl_conn_opts_check(o, "top");
    if (rv != CTL_CONTINUE) return rv;
    storage = malloc(strlen(o->endpoints) + 1);
    if (storage == NULL) return CTL_EXIT_SOFTWARE;
    n_eps = ctl_split_endpoints(o->endpoints, storage, eps, CTL_MAX_ENDPOINTS, err, sizeof err);
    if (n_eps < 0) {
        free(storage);
        return ctl_usage_error("top", "%s", err);
    }
    n = find_nodes(o, eps, n_eps, &nodes);
    free(storage);
    if (n == 0) return CTL_EXIT_SOFTWARE;

    for (uint64_t round = 0; count == 0 || round < count; round++) {
        int64_t start = ctl_now_ms(), wait = o->timeout_ms < interval ? o->timeout_ms : interval;
        int any = 0;
        size_t n_locks;

        for (int i = 0; i < n; i++) {
            query(o, &nodes[i], ctl_now_ms() + wait);
            any |= nodes[i].reachable;
        }
        if (round == 0 && !any) {
            for (int i = 0; i < n; i++) ctl_error("%s", nodes[i].err);
            status = CTL_EXIT_UNAVAIL;
            break;
        }
        n_locks = busy_locks(nodes, n, locks, (size_t)max_locks);
        if (o->format == CTL_JSON)
            print_json(nodes, n, locks, n_locks);
        else
            print_table(nodes, n, locks, n_locks, clear);
        if (count == 0 || round + 1 < count) ctl_sleep_until(start + interval - ctl_now_ms(),
                                                            start + interval);
    }
    for (int i = 0; i < n; i++) {
        baton__caller_free(nodes[i].conn);
        ctl_samples_free(&nodes[i].now);
        ctl_samples_free(&nodes[i].prev);
    }
    free(nodes);
    return status;
}
