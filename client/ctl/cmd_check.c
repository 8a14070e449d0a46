/*
 * cmd_check.c -- `batonctl check`: have every node hash what its lock
 * store holds at one log index, and compare the hashes.
 *
 * The state digest that `status` compares follows the entries a node
 * applied, so a store whose files changed behind LMDB's back keeps a
 * matching digest. A CHECK (proto/msg.h) makes the leader commit an entry
 * on which every node hashes its whole state (storage/store.h, "Content
 * hash"); each node then reports (check_index, content_hash) in STATUS.
 * This command sends CHECK, then asks every member for its STATUS (one
 * thread per member, as status does) until each reports that index or
 * shows it never will, and judges the hashes: a hash held by a majority
 * of the members is the cluster's, and a node with another one diverged.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl/ctl.h"
#include "baton/baton_defs.h"

const char cmd_check_help[] =
    "usage: batonctl check [-e ENDPOINTS] [-o table|json] [--timeout MS]\n"
    "\n"
    "Checks that every node holds the same state. The leader commits a CHECK entry;\n"
    "every node, when it applies that entry, hashes everything its lock store holds\n"
    "(sessions, locks, queues, cached results, counters). batonctl then asks every\n"
    "member for its STATUS until it has applied the entry (at most --timeout\n"
    "longer) and prints one row per node: id, client address, applied index, the\n"
    "index of its last check, its content hash, and the verdict:\n"
    "  ok          the hash a majority of the members holds\n"
    "  DIVERGED    another hash: the node's state differs from the majority's\n"
    "  DISAGREE    hashes differ and no majority holds one: which nodes diverged\n"
    "              cannot be told\n"
    "  FAILED      the node could not read its own state to hash it (its log says\n"
    "              why)\n"
    "  behind      the node had not applied the entry within --timeout\n"
    "  skipped     the node did not hash the entry: it restarted after applying\n"
    "              it, or received a snapshot past it\n"
    "  superseded  a later check replaced this one on the node before it answered\n"
    "  unreachable the node did not answer\n"
    "A line \"node N diverged: ...\" follows the table for each diverged node (on\n"
    "stderr with -o json). The state digest that `status` compares cannot see a\n"
    "store changed on disk (bit rot, a stray write); this can. Each check costs\n"
    "every node a pass over its state (docs/operations.md); the leader runs one at\n"
    "a time.\n"
    "\n"
    "Exit status: 0 if every member holds the same hash; 70 if a node diverged,\n"
    "the hashes disagree, a node failed to hash, or the cluster refused (for\n"
    "instance while another check runs); 69 if no leader answered or some member\n"
    "could not be checked (behind, skipped, superseded, unreachable); 64 on a\n"
    "usage error.\n"
    "\n"
    "JSON (-o json), one object:\n"
    "  {\"index\": N, \"content_hash\": S|null,\n"
    "   \"nodes\": [{\"id\": N, \"client_addr\": S, \"reachable\": B,\n"
    "              \"applied_index\": N|null, \"check_index\": N|null,\n"
    "              \"content_hash\": S|null, \"result\": \"ok\"|\"diverged\"|\n"
    "              \"disagree\"|\"failed\"|\"behind\"|\"skipped\"|\"superseded\"|\n"
    "              \"unreachable\", \"error\": S|null}, ...]}\n"
    "  index is the CHECK entry's; the top-level content_hash is the majority's\n"
    "  (null when there is none). Hashes are strings of 16 lowercase hex digits.\n";

/* How often a node that has not applied the entry yet is asked again. */
#define CHECK_POLL_MS 50

enum verdict {
    V_UNREACHABLE,
    V_BEHIND,
    V_SKIPPED,
    V_SUPERSEDED,
    V_FAILED,
    V_CHECKED,   /* hashed the entry; compared below: */
    V_OK,
    V_DIVERGED,
    V_DISAGREE,
};

static const char *const verdict_name[] = {
    [V_UNREACHABLE] = "unreachable", [V_BEHIND] = "behind", [V_SKIPPED] = "skipped",
    [V_SUPERSEDED] = "superseded", [V_FAILED] = "failed", [V_CHECKED] = "checked",
    [V_OK] = "ok", [V_DIVERGED] = "diverged", [V_DISAGREE] = "disagree",
};

/* One member, polled by its own thread. */
struct node_row {
    const struct ctl_opts *o;
    uint32_t id;
    char client[BATON_MAX_ADDR + 1];
    uint64_t index;              /* the CHECK entry's */
    int64_t deadline;
    int reachable;               /* answered STATUS at least once */
    struct msg_status_r st;      /* its last answer (scalars only) */
    enum verdict v;
    char err[CTL_ERR_SIZE];
    pthread_t th;
    int started;
};

/* What the node's last STATUS says of the check at r->index. */
static enum verdict judge(const struct node_row *r)
{
    if (!r->reachable) return V_UNREACHABLE;
    if (r->st.check_index > r->index) return V_SUPERSEDED;
    if (r->st.check_index == r->index) return r->st.content_hash != 0 ? V_CHECKED : V_FAILED;
    if (r->st.applied_index >= r->index) return V_SKIPPED;
    return V_BEHIND;
}

/* Ask the node for STATUS until it has applied the entry or the deadline
 * passes. */
static void *poll_thread(void *arg)
{
    struct node_row *r = arg;
    struct baton__reply rep;

    for (;;) {
        if (ctl_node_status(r->o, r->client, r->deadline, &rep, r->err, sizeof r->err) == 0) {
            r->reachable = 1;
            r->err[0] = '\0';
            r->st = rep.m.u.status_r;
            r->st.members = NULL;
            r->st.n_members = 0;
            baton__reply_free(&rep);
        }
        r->v = judge(r);
        if (r->v != V_BEHIND && r->v != V_UNREACHABLE) break;
        if (ctl_now_ms() + CHECK_POLL_MS >= r->deadline) break;
        ctl_sleep_until(CHECK_POLL_MS, r->deadline);
    }
    return NULL;
}

/*
 * Compare the hashes of the nodes that hashed the entry: one held by more
 * than half of the n members is the cluster's (*hash), the nodes with
 * another one diverged; without such a majority, nodes that differ
 * DISAGREE. Returns 1 if a majority hash was found.
 */
static int compare(struct node_row *rows, int n, uint64_t *hash)
{
    int best = 0, differ = 0;

    *hash = 0;
    for (int i = 0; i < n; i++) {
        int same = 0;
        if (rows[i].v != V_CHECKED) continue;
        for (int j = 0; j < n; j++)
            same += rows[j].v == V_CHECKED && rows[j].st.content_hash == rows[i].st.content_hash;
        if (same > best) {
            best = same;
            *hash = rows[i].st.content_hash;
        }
    }
    for (int i = 0; i < n; i++)
        differ += rows[i].v == V_CHECKED && rows[i].st.content_hash != *hash;
    if (2 * best <= n) {
        /* No majority: all alike is fine so far, any difference is not. */
        for (int i = 0; i < n; i++)
            if (rows[i].v == V_CHECKED) rows[i].v = differ ? V_DISAGREE : V_OK;
        *hash = 0;
        return 0;
    }
    for (int i = 0; i < n; i++)
        if (rows[i].v == V_CHECKED)
            rows[i].v = rows[i].st.content_hash == *hash ? V_OK : V_DIVERGED;
    return 1;
}

static void hex16(char out[17], uint64_t h)
{
    snprintf(out, 17, "%016" PRIx64, h);
}

/* Does the row have a check of its own to show (index and hash)? */
static int has_check(const struct node_row *r)
{
    return r->reachable && r->st.check_index != 0;
}

static void print_table(const struct node_row *rows, int n)
{
    struct table t;
    char hex[17];

    table_init(&t, 6);
    table_cell(&t, "ID");
    table_cell(&t, "CLIENT");
    table_cell(&t, "APPLIED");
    table_cell(&t, "CHECKED");
    table_cell(&t, "CONTENT");
    table_cell(&t, "RESULT");
    for (int i = 0; i < n; i++) {
        const struct node_row *r = &rows[i];
        table_cell(&t, "%u", r->id);
        table_cell_bytes(&t, r->client, strlen(r->client));
        if (r->reachable)
            table_cell(&t, "%" PRIu64, r->st.applied_index);
        else
            table_cell(&t, "-");
        if (has_check(r)) {
            table_cell(&t, "%" PRIu64, r->st.check_index);
            hex16(hex, r->st.content_hash);
            table_cell(&t, "%s", r->st.content_hash ? hex : "-");
        } else {
            table_cell(&t, "-");
            table_cell(&t, "-");
        }
        if (r->v == V_DIVERGED || r->v == V_DISAGREE || r->v == V_FAILED)
            table_cell(&t, "%s", r->v == V_DIVERGED ? "DIVERGED"
                                 : r->v == V_DISAGREE ? "DISAGREE" : "FAILED");
        else
            table_cell(&t, "%s", verdict_name[r->v]);
    }
    table_print(&t, stdout);
    table_free(&t);
}

static void print_json(const struct node_row *rows, int n, uint64_t index, uint64_t hash)
{
    struct jw w;
    char hex[17];

    jw_init(&w, stdout);
    jw_begin_object(&w, NULL);
    jw_u64(&w, "index", index);
    hex16(hex, hash);
    jw_cstring(&w, "content_hash", hash ? hex : NULL);
    jw_begin_array(&w, "nodes");
    for (int i = 0; i < n; i++) {
        const struct node_row *r = &rows[i];
        jw_begin_object(&w, NULL);
        jw_u64(&w, "id", r->id);
        jw_cstring(&w, "client_addr", r->client);
        jw_bool(&w, "reachable", r->reachable);
        if (r->reachable)
            jw_u64(&w, "applied_index", r->st.applied_index);
        else
            jw_null(&w, "applied_index");
        if (has_check(r)) {
            jw_u64(&w, "check_index", r->st.check_index);
            hex16(hex, r->st.content_hash);
            jw_cstring(&w, "content_hash", r->st.content_hash ? hex : NULL);
        } else {
            jw_null(&w, "check_index");
            jw_null(&w, "content_hash");
        }
        jw_cstring(&w, "result", verdict_name[r->v]);
        jw_cstring(&w, "error", r->err[0] ? r->err : NULL);
        jw_end_object(&w);
    }
    jw_end_array(&w);
    jw_end_object(&w);
    jw_finish(&w);
}

/* The lines after the table: each node that diverged or could not be
 * checked, and why. Returns the exit code the rows call for. */
static int report(const struct node_row *rows, int n, uint64_t hash, FILE *f)
{
    char a[17], b[17];
    int bad = 0, unchecked = 0;

    hex16(b, hash);
    for (int i = 0; i < n; i++) {
        const struct node_row *r = &rows[i];
        hex16(a, r->st.content_hash);
        switch (r->v) {
        case V_OK:
            break;
        case V_DIVERGED:
            fprintf(f, "node %u diverged: its content hash %s at index %" PRIu64
                       " differs from %s, which the majority holds\n", r->id, a, r->index, b);
            bad++;
            break;
        case V_DISAGREE:
            fprintf(f, "node %u disagrees: content hash %s at index %" PRIu64
                       ", and no majority holds one hash\n", r->id, a, r->index);
            bad++;
            break;
        case V_FAILED:
            fprintf(f, "node %u could not hash its state at index %" PRIu64
                       " (see its log)\n", r->id, r->index);
            bad++;
            break;
        default:
            fprintf(f, "node %u not checked: %s%s%s\n", r->id, verdict_name[r->v],
                    r->err[0] ? ": " : "", r->err);
            unchecked++;
            break;
        }
    }
    if (bad) return CTL_EXIT_SOFTWARE;
    return unchecked ? CTL_EXIT_UNAVAIL : CTL_EXIT_OK;
}

/* The member list, from the first endpoint that answers STATUS: 0 with
 * *rep filled, or the last error (err says it). */
static int members(const struct ctl_opts *o, struct baton__reply *rep, char *err, size_t errlen)
{
    const char *eps[CTL_MAX_ENDPOINTS];
    char *storage = malloc(strlen(o->endpoints) + 1);
    int n, rv = BATON_EUNAVAIL;

    if (storage == NULL) return BATON_ENOMEM;
    n = ctl_split_endpoints(o->endpoints, storage, eps, CTL_MAX_ENDPOINTS, err, errlen);
    for (int i = 0; i < n && rv != 0; i++)
        rv = ctl_node_status(o, eps[i], ctl_now_ms() + o->timeout_ms, rep, err, errlen);
    free(storage);
    return n < 0 ? BATON_EINVAL : rv;
}

int cmd_check(struct ctl_opts *o, int argc, char **argv)
{
    struct ctl_optiter it;
    struct baton__reply rep;
    struct msg req;
    struct node_row *rows;
    const struct msg_status_r *st;
    const char *arg;
    char err[CTL_ERR_SIZE];
    uint64_t index, hash;
    int64_t deadline;
    int id, rv, n;

    ctl_opt_init(&it, argc, argv, 1);
    while ((id = ctl_opt_next(&it, NULL, ctl_global_opts, &arg, err, sizeof err)) != CTL_OPT_END) {
        rv = ctl_common_opt(o, "check", cmd_check_help, id, arg, err);
        if (rv != CTL_CONTINUE) return rv;
    }
    rv = ctl_conn_opts_check(o, "check");
    if (rv != CTL_CONTINUE) return rv;

    memset(&req, 0, sizeof req);
    req.type = MSG_CHECK;
    rv = ctl_leader_request(o, &req, &rep, err, sizeof err);
    if (rv != 0) {
        ctl_error("check: %s", err);
        return ctl_exit_for(rv);
    }
    if (rep.m.type != MSG_CHECK_R) {
        ctl_error("check: unexpected reply %s", msg_type_name(rep.m.type));
        baton__reply_free(&rep);
        return CTL_EXIT_SOFTWARE;
    }
    index = rep.m.u.check_r.index;
    baton__reply_free(&rep);

    rv = members(o, &rep, err, sizeof err);
    if (rv != 0) {
        ctl_error("check: %s", err);
        return ctl_exit_for(rv);
    }
    st = &rep.m.u.status_r;
    n = (int)st->n_members;
    if (n == 0) {
        baton__reply_free(&rep);
        ctl_error("check: the node that answered lists no members");
        return CTL_EXIT_UNAVAIL;
    }
    rows = calloc((size_t)n, sizeof *rows);
    if (rows == NULL) {
        baton__reply_free(&rep);
        ctl_error("out of memory");
        return CTL_EXIT_SOFTWARE;
    }
    deadline = ctl_now_ms() + o->timeout_ms;
    for (int i = 0; i < n; i++) {
        struct node_row *r = &rows[i];
        r->o = o;
        r->id = st->members[i].id;
        snprintf(r->client, sizeof r->client, "%.*s", (int)st->members[i].client_addr.n,
                 st->members[i].client_addr.p);
        r->index = index;
        r->deadline = deadline;
        if (pthread_create(&r->th, NULL, poll_thread, r) == 0)
            r->started = 1;
        else
            poll_thread(r);
    }
    baton__reply_free(&rep);
    for (int i = 0; i < n; i++)
        if (rows[i].started) pthread_join(rows[i].th, NULL);

    compare(rows, n, &hash);
    if (o->format == CTL_JSON) {
        print_json(rows, n, index, hash);
        rv = report(rows, n, hash, stderr);
    } else {
        printf("content check at index %" PRIu64 "\n", index);
        print_table(rows, n);
        rv = report(rows, n, hash, stdout);
    }
    free(rows);
    return rv;
}
