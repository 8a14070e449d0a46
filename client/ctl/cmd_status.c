/*
 * cmd_status.c -- `batonctl status`: ask the first endpoint that answers
 * for the member list, then ask every member for its own STATUS (in
 * parallel, one thread per member, so a stopped node costs one timeout, not
 * one per node), and print one row per node. A node that does not answer
 * is a row with reachable = no, not a failure of the command.
 *
 * Each node also reports its state digest (proto/msg.h, STATUS_R): nodes
 * that answered with the same applied index must report the same digest,
 * and a pair that does not is reported as diverged. And its auth-file
 * digest (0: no auth file): nodes reporting different ones judge clients
 * by different files, which is worth a warning but is no failure (a new
 * file is being rolled out, say). And its last content check (batonctl
 * check, cmd_check.c): nodes whose last checks were at the same index must
 * report the same content hash, like the digest.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl/ctl.h"
#include "baton/baton_defs.h"

const char cmd_status_help[] =
    "usage: batonctl status [-e ENDPOINTS] [-o table|json] [--timeout MS]\n"
    "\n"
    "Asks the first reachable endpoint for the cluster's members, then asks every\n"
    "member for its state, and prints one row per node: id, raft address, client\n"
    "address, role, term, commit index, applied index, last log index, state\n"
    "digest, auth-file digest, last content check, feature levels, and whether it\n"
    "answered.\n"
    "Nodes that do not answer within --timeout are shown as unreachable (and why,\n"
    "on stderr).\n"
    "\n"
    "The state digest (16 hex digits) is a hash chained over every entry the node's\n"
    "lock store has applied. Nodes with the same applied index must have the same\n"
    "digest; when two reachable nodes do not, their states have diverged, and a\n"
    "line \"WARNING: nodes N and M have the same applied index but different state\n"
    "digests\" follows the table (on stderr with -o json). Nodes at different\n"
    "applied indexes are not compared.\n"
    "\n"
    "The auth digest (AUTH, 16 hex digits) identifies the auth file the node\n"
    "loaded (--auth-file; - when it has none). Nodes with different digests judge\n"
    "tokens and certificates by different files; a line \"WARNING: nodes N and M\n"
    "have different auth files\" follows the table (on stderr with -o json).\n"
    "\n"
    "CHECKED and CONTENT are the index of the node's last content check (batonctl\n"
    "check; - for none since the node started) and the hash of its state there.\n"
    "Nodes whose last checks were at the same index must report the same hash;\n"
    "when two do not, a line \"WARNING: nodes N and M hold different content at\n"
    "index I\" follows the table and the nodes have diverged (`batonctl check`\n"
    "says which).\n"
    "A node that a local failure stopped reports it, and a line \"WARNING: node N:\n"
    "applying entry I failed (server's data disk is full)...\" follows the table\n"
    "(on stderr with -o json): its store could not apply an entry (it stepped down,\n"
    "or its raft stopped there), or its raft log write failed (it exits). Free\n"
    "space on its data disk (or repair it) and restart it: it catches up from the\n"
    "others (docs/operations.md, \"Disk full\").\n"
    "\n"
    "LEVEL is the feature level the node's binary applies and CLUSTER-LEVEL the\n"
    "cluster's committed level as the node has applied it (- for a binary before\n"
    "feature levels). After an upgrade of every node, the leader raises the\n"
    "cluster's level within seconds; a CLUSTER-LEVEL below every LEVEL then means\n"
    "a voter is down or runs an older binary (docs/operations.md, \"Upgrades and\n"
    "downgrades\").\n"
    "\n"
    "Exit status: 70 if two nodes diverged (see above), or every endpoint refused\n"
    "this client (TLS or credentials: the message says why); else 0 if a node\n"
    "reports itself leader; 69 if none does (the rows are still printed), or no\n"
    "endpoint answered at all; 64 on a usage error.\n"
    "\n"
    "JSON (-o json), one object:\n"
    "  {\"leader_id\": N|null, \"term\": N|null,\n"
    "   \"nodes\": [{\"id\": N|null, \"raft_addr\": S|null, \"client_addr\": S,\n"
    "              \"reachable\": B, \"role\": \"leader\"|\"follower\"|\"candidate\"|\n"
    "              \"unavailable\"|null, \"leader_id\": N|null, \"term\": N|null,\n"
    "              \"commit_index\": N|null, \"applied_index\": N|null,\n"
    "              \"last_index\": N|null, \"state_digest\": S|null,\n"
    "              \"auth_digest\": S|null, \"check_index\": N|null,\n"
    "              \"content_hash\": S|null, \"level\": N|null,\n"
    "              \"cluster_level\": N|null, \"fault\": null|{\"kind\": \"apply\"|\"log\"|\n"
    "              \"raft\", \"error\": S, \"index\": N}, \"error\": S|null}, ...]}\n"
    "  id and raft_addr are null only when no endpoint answered (the rows are\n"
    "  then the endpoints given). leader_id 0 is reported as null. state_digest\n"
    "  is a string of 16 lowercase hex digits (a JSON number cannot hold every\n"
    "  64-bit value exactly); so is auth_digest, which is null for a reachable\n"
    "  node without an auth file too. check_index and content_hash are null for\n"
    "  a node without a check since it started.\n";

/* One node's row, filled by its query thread. */
struct row {
    const struct ctl_opts *o;
    uint32_t id;                          /* 0: unknown */
    int has_raft;
    char raft[BATON_MAX_ADDR + 1];
    char client[BATON_MAX_ADDR + 1];
    int reachable;
    struct msg_status_r st;               /* scalars only; members unused */
    int64_t level, cluster_level;         /* its feature levels (METRICS); -1: unknown */
    char err[CTL_ERR_SIZE];          /* why not reachable, or a remark */
    int64_t deadline;
    pthread_t th;
    int started;
};

/* The node's feature levels, from its METRICS (a node of a binary before
 * levels has none: they stay -1). */
static void levels_of(struct row *r)
{
    struct ctl_samples s = {0};
    char err[CTL_ERR_SIZE];
    double v;

    r->level = r->cluster_level = -1;
    if (ctl_node_metrics(r->o, r->client, r->deadline, &s, err, sizeof err) != 0) return;
    v = ctl_sample(&s, "baton_feature_level");
    if (v >= 1) r->level = (int64_t)v;
    v = ctl_sample(&s, "baton_cluster_feature_level");
    if (v >= 1) r->cluster_level = (int64_t)v;
    ctl_samples_free(&s);
}

/* Copy the scalar fields of a STATUS_R into a row, and ask the node for
 * its feature levels. */
static void fill_row(struct row *r, const struct msg_status_r *st)
{
    r->reachable = 1;
    levels_of(r);
    r->st = *st;
    r->st.members = NULL;
    r->st.n_members = 0;
    if (r->id != 0 && st->node_id != r->id)
        snprintf(r->err, sizeof r->err, "answers as node %u", st->node_id);
}

/* A level, or "-" when unknown. */
static void level_cell(struct table *t, int64_t level)
{
    if (level > 0)
        table_cell(t, "%lld", (long long)level);
    else
        table_cell(t, "-");
}

static void level_json(struct jw *w, const char *key, int64_t level)
{
    if (level > 0)
        jw_u64(w, key, (uint64_t)level);
    else
        jw_null(w, key);
}

static void *query_thread(void *arg)
{
    struct row *r = arg;
    struct baton__reply rep;

    if (ctl_node_status(r->o, r->client, r->deadline, &rep, r->err, sizeof r->err) == 0) {
        fill_row(r, &rep.m.u.status_r);
        baton__reply_free(&rep);
    }
    return NULL;
}

/* A copy of a wire string into a fixed buffer. */
static void pstr_copy(char *dst, size_t cap, struct pstr s)
{
    snprintf(dst, cap, "%.*s", (int)s.n, s.p);
}

/* The digest as 16 lowercase hex digits. */
static void digest_hex(char out[17], uint64_t d)
{
    snprintf(out, 17, "%016" PRIx64, d);
}

/* The auth digest as 16 hex digits, "-" for none. */
static void auth_hex(char out[17], uint64_t d)
{
    if (d == 0)
        snprintf(out, 17, "-");
    else
        digest_hex(out, d);
}

/* A row's node id for messages: the member list's, else its own answer's. */
static uint32_t row_id(const struct row *r)
{
    return r->id != 0 ? r->id : r->st.node_id;
}

/*
 * The same for content checks: pairs of reachable nodes whose last checks
 * were at the same index but whose content hashes differ. Returns the
 * number of such pairs.
 */
static int report_content_differences(const struct row *rows, int n, FILE *f)
{
    int found = 0;

    for (int i = 0; i < n; i++) {
        const struct row *a = &rows[i];
        if (!a->reachable || a->st.check_index == 0) continue;
        for (int j = i + 1; j < n; j++) {
            const struct row *b = &rows[j];
            if (!b->reachable || b->st.check_index != a->st.check_index ||
                b->st.content_hash == a->st.content_hash)
                continue;
            fprintf(f,
                    "WARNING: nodes %u and %u hold different content at index %" PRIu64
                    " (content hashes %016" PRIx64 " and %016" PRIx64 ")\n",
                    row_id(a), row_id(b), a->st.check_index, a->st.content_hash,
                    b->st.content_hash);
            found++;
        }
    }
    return found;
}

/*
 * Report every pair of reachable nodes that stand at the same applied index
 * but report different digests, one line each, to f. Returns the number of
 * such pairs.
 */
static int report_divergence(const struct row *rows, int n, FILE *f)
{
    int found = 0;

    for (int i = 0; i < n; i++) {
        const struct row *a = &rows[i];
        if (!a->reachable) continue;
        for (int j = i + 1; j < n; j++) {
            const struct row *b = &rows[j];
            if (!b->reachable || b->st.applied_index != a->st.applied_index ||
                b->st.state_digest == a->st.state_digest)
                continue;
            fprintf(f,
                    "WARNING: nodes %u and %u have the same applied index but different "
                    "state digests (applied index %" PRIu64 ")\n",
                    row_id(a), row_id(b), a->st.applied_index);
            found++;
        }
    }
    return found + report_content_differences(rows, n, f);
}

/* Warn, one line each to f, about pairs of reachable nodes whose auth
 * files differ (or that have one and the other none). */
static void report_auth_differences(const struct row *rows, int n, FILE *f)
{
    for (int i = 0; i < n; i++) {
        const struct row *a = &rows[i];
        if (!a->reachable) continue;
        for (int j = i + 1; j < n; j++) {
            const struct row *b = &rows[j];
            if (!b->reachable || b->st.auth_digest == a->st.auth_digest) continue;
            fprintf(f, "WARNING: nodes %u and %u have different auth files (auth digests ",
                    row_id(a), row_id(b));
            fprintf(f, "%016" PRIx64 " and %016" PRIx64 ")\n", a->st.auth_digest,
                    b->st.auth_digest);
        }
    }
}

/* What a fault kind means, for the warning line and the JSON. */
static const char *fault_kind_name(int kind)
{
    switch (kind) {
    case FAULT_APPLY:
        return "apply";
    case FAULT_LOG:
        return "log";
    default:
        return "raft";
    }
}

/* One line each, to f, about the reachable nodes a local failure stopped. */
static void report_faults(const struct row *rows, int n, FILE *f)
{
    for (int i = 0; i < n; i++) {
        const struct msg_status_r *st = &rows[i].st;
        unsigned long long index = (unsigned long long)st->fault_index;

        if (!rows[i].reachable || st->fault == 0) continue;
        fprintf(f, "WARNING: node %u: ", row_id(&rows[i]));
        if (st->fault_kind == FAULT_APPLY)
            fprintf(f,
                    "applying entry %llu failed (%s): it does not lead, and applies nothing more",
                    index, baton_strerror(st->fault));
        else if (st->fault_kind == FAULT_LOG)
            fprintf(f, "writing entry %llu to its raft log failed (%s): it is exiting", index,
                    baton_strerror(st->fault));
        else
            fprintf(f, "its raft stopped before entry %llu", index);
        fprintf(f, "; free space on its data disk (or repair it) and restart it\n");
    }
}

static void print_table(const struct row *rows, int n)
{
    struct table t;
    char hex[17];

    table_init(&t, 15);
    table_cell(&t, "ID");
    table_cell(&t, "RAFT");
    table_cell(&t, "CLIENT");
    table_cell(&t, "ROLE");
    table_cell(&t, "TERM");
    table_cell(&t, "COMMIT");
    table_cell(&t, "APPLIED");
    table_cell(&t, "LAST");
    table_cell(&t, "DIGEST");
    table_cell(&t, "AUTH");
    table_cell(&t, "CHECKED");
    table_cell(&t, "CONTENT");
    table_cell(&t, "LEVEL");
    table_cell(&t, "CLUSTER-LEVEL");
    table_cell(&t, "REACHABLE");
    for (int i = 0; i < n; i++) {
        const struct row *r = &rows[i];
        if (r->id != 0)
            table_cell(&t, "%u", r->id);
        else
            table_cell(&t, "-");
        table_cell_bytes(&t, r->has_raft ? r->raft : "-", strlen(r->has_raft ? r->raft : "-"));
        table_cell_bytes(&t, r->client, strlen(r->client));
        if (r->reachable) {
            table_cell(&t, "%s", ctl_role_name(r->st.role));
            table_cell(&t, "%llu", (unsigned long long)r->st.term);
            table_cell(&t, "%llu", (unsigned long long)r->st.commit_index);
            table_cell(&t, "%llu", (unsigned long long)r->st.applied_index);
            table_cell(&t, "%llu", (unsigned long long)r->st.last_index);
            digest_hex(hex, r->st.state_digest);
            table_cell(&t, "%s", hex);
            auth_hex(hex, r->st.auth_digest);
            table_cell(&t, "%s", hex);
            if (r->st.check_index != 0) {
                table_cell(&t, "%llu", (unsigned long long)r->st.check_index);
                digest_hex(hex, r->st.content_hash);
                table_cell(&t, "%s", hex);
            } else {
                table_cell(&t, "-");
                table_cell(&t, "-");
            }
            level_cell(&t, r->level);
            level_cell(&t, r->cluster_level);
            table_cell(&t, "yes");
        } else {
            for (int k = 0; k < 11; k++) table_cell(&t, "-");
            table_cell(&t, "no");
        }
    }
    table_print(&t, stdout);
    table_free(&t);
}

static void print_json(const struct row *rows, int n, const struct row *leader)
{
    struct jw w;
    char hex[17];

    jw_init(&w, stdout);
    jw_begin_object(&w, NULL);
    if (leader) {
        jw_u64(&w, "leader_id", leader->st.node_id);
        jw_u64(&w, "term", leader->st.term);
    } else {
        jw_null(&w, "leader_id");
        jw_null(&w, "term");
    }
    jw_begin_array(&w, "nodes");
    for (int i = 0; i < n; i++) {
        const struct row *r = &rows[i];
        jw_begin_object(&w, NULL);
        if (r->id != 0)
            jw_u64(&w, "id", r->id);
        else
            jw_null(&w, "id");
        jw_cstring(&w, "raft_addr", r->has_raft ? r->raft : NULL);
        jw_cstring(&w, "client_addr", r->client);
        jw_bool(&w, "reachable", r->reachable);
        if (r->reachable) {
            jw_cstring(&w, "role", ctl_role_name(r->st.role));
            if (r->st.leader_id != 0)
                jw_u64(&w, "leader_id", r->st.leader_id);
            else
                jw_null(&w, "leader_id");
            jw_u64(&w, "term", r->st.term);
            jw_u64(&w, "commit_index", r->st.commit_index);
            jw_u64(&w, "applied_index", r->st.applied_index);
            jw_u64(&w, "last_index", r->st.last_index);
            digest_hex(hex, r->st.state_digest);
            jw_cstring(&w, "state_digest", hex);
            digest_hex(hex, r->st.auth_digest);
            jw_cstring(&w, "auth_digest", r->st.auth_digest != 0 ? hex : NULL);
            if (r->st.check_index != 0) {
                jw_u64(&w, "check_index", r->st.check_index);
                digest_hex(hex, r->st.content_hash);
                jw_cstring(&w, "content_hash", hex);
            } else {
                jw_null(&w, "check_index");
                jw_null(&w, "content_hash");
            }
            level_json(&w, "level", r->level);
            level_json(&w, "cluster_level", r->cluster_level);
            if (r->st.fault != 0) {
                jw_begin_object(&w, "fault");
                jw_cstring(&w, "kind", fault_kind_name(r->st.fault_kind));
                jw_cstring(&w, "error", baton_err_name(r->st.fault));
                jw_u64(&w, "index", r->st.fault_index);
                jw_end_object(&w);
            } else {
                jw_null(&w, "fault");
            }
        } else {
            jw_null(&w, "role");
            jw_null(&w, "leader_id");
            jw_null(&w, "term");
            jw_null(&w, "commit_index");
            jw_null(&w, "applied_index");
            jw_null(&w, "last_index");
            jw_null(&w, "state_digest");
            jw_null(&w, "auth_digest");
            jw_null(&w, "check_index");
            jw_null(&w, "content_hash");
            jw_null(&w, "level");
            jw_null(&w, "cluster_level");
            jw_null(&w, "fault");
        }
        jw_cstring(&w, "error", r->err[0] ? r->err : NULL);
        jw_end_object(&w);
    }
    jw_end_array(&w);
    jw_end_object(&w);
    jw_finish(&w);
}

int cmd_status(struct ctl_opts *o, int argc, char **argv)
{
    struct ctl_optiter it;
    const char *arg, *eps[CTL_MAX_ENDPOINTS];
    char err[CTL_ERR_SIZE], *storage;
    static char ep_err[CTL_MAX_ENDPOINTS][CTL_ERR_SIZE];
    struct row *rows = NULL;
    const struct row *leader = NULL;
    struct baton__reply first = {0};
    int n_eps, n = 0, id, rv, first_ok = -1, diverged, refused = 0;

    ctl_opt_init(&it, argc, argv, 1);
    while ((id = ctl_opt_next(&it, NULL, ctl_global_opts, &arg, err, sizeof err)) != CTL_OPT_END) {
        rv = ctl_common_opt(o, "status", cmd_status_help, id, arg, err);
        if (rv != CTL_CONTINUE) return rv;
    }

    rv = ctl_conn_opts_check(o, "status");
    if (rv != CTL_CONTINUE) return rv;
    storage = malloc(strlen(o->endpoints) + 1);
    if (storage == NULL) {
        ctl_error("out of memory");
        return CTL_EXIT_SOFTWARE;
    }
    n_eps = ctl_split_endpoints(o->endpoints, storage, eps, CTL_MAX_ENDPOINTS, err, sizeof err);
    if (n_eps < 0) {
        free(storage);
        return ctl_usage_error("status", "%s", err);
    }

    /* Step 1: the member list from the first endpoint that answers. Each
     * endpoint gets the full timeout: a refused connection costs nothing. */
    for (int i = 0; i < n_eps && first_ok < 0; i++) {
        rv = ctl_node_status(o, eps[i], ctl_now_ms() + o->timeout_ms, &first, ep_err[i],
                          sizeof ep_err[i]);
        if (rv == 0) first_ok = i;
        if (rv == BATON_ETLS || rv == BATON_EAUTH || rv == BATON_EPERM) refused++;
    }

    if (first_ok >= 0 && first.m.u.status_r.n_members > 0) {
        /* Step 2: every member's own STATUS, in parallel. The node that
         * answered step 1 is not asked again. */
        const struct msg_status_r *st = &first.m.u.status_r;
        int64_t deadline = ctl_now_ms() + o->timeout_ms;

        n = (int)st->n_members;
        rows = calloc((size_t)n, sizeof *rows);
        for (int i = 0; rows != NULL && i < n; i++) {
            struct row *r = &rows[i];
            r->o = o;
            r->id = st->members[i].id;
            r->has_raft = 1;
            pstr_copy(r->raft, sizeof r->raft, st->members[i].raft_addr);
            pstr_copy(r->client, sizeof r->client, st->members[i].client_addr);
            r->deadline = deadline;
            if (r->id == st->node_id) {
                fill_row(r, st);
                continue;
            }
            if (pthread_create(&r->th, NULL, query_thread, r) == 0)
                r->started = 1;
            else
                query_thread(r);
        }
        for (int i = 0; rows != NULL && i < n; i++)
            if (rows[i].started) pthread_join(rows[i].th, NULL);
    } else {
        /* Nobody answered (or the answer listed no members): show the
         * endpoints we were given, as far as we can tell. */
        n = n_eps;
        rows = calloc((size_t)n, sizeof *rows);
        for (int i = 0; rows != NULL && i < n; i++) {
            snprintf(rows[i].client, sizeof rows[i].client, "%s", eps[i]);
            rows[i].o = o;
            rows[i].deadline = ctl_now_ms() + o->timeout_ms;
            if (i == first_ok)
                fill_row(&rows[i], &first.m.u.status_r);
            else
                snprintf(rows[i].err, sizeof rows[i].err, "%.*s", (int)sizeof rows[i].err - 1,
                         i < first_ok || first_ok < 0 ? ep_err[i] : "not asked");
        }
    }
    baton__reply_free(&first);
    free(storage);
    if (rows == NULL) {
        ctl_error("out of memory");
        return CTL_EXIT_SOFTWARE;
    }

    /* The leader: a node that says so; if two do (an old leader that has
     * not noticed yet), the one with the higher term. */
    for (int i = 0; i < n; i++) {
        const struct row *r = &rows[i];
        if (r->reachable && r->st.role == ROLE_LEADER &&
            (leader == NULL || r->st.term > leader->st.term))
            leader = r;
    }

    if (o->format == CTL_JSON) {
        print_json(rows, n, leader);
        diverged = report_divergence(rows, n, stderr);
        report_auth_differences(rows, n, stderr);
        report_faults(rows, n, stderr);
    } else {
        print_table(rows, n);
        diverged = report_divergence(rows, n, stdout);
        report_auth_differences(rows, n, stdout);
        report_faults(rows, n, stdout);
        for (int i = 0; i < n; i++) {
            if (rows[i].err[0] == '\0') continue;
            if (rows[i].id != 0)
                fprintf(stderr, "node %u: %s\n", rows[i].id, rows[i].err);
            else
                fprintf(stderr, "%s\n", rows[i].err);
        }
    }
    if (leader == NULL) ctl_error("no leader found");
    free(rows);
    /* Every endpoint refused us: that is the answer, not an outage. */
    if (diverged || (first_ok < 0 && refused == n_eps)) return CTL_EXIT_SOFTWARE;
    return leader ? CTL_EXIT_OK : CTL_EXIT_UNAVAIL;
}
