/*
 * cmd_admin.c -- the operator's commands that change the cluster:
 * `batonctl release --force NAME [--fence N] [--now]`, `batonctl expire SESSION`,
 * `batonctl transfer-leader [ID]`, `batonctl snapshot` and
 * `batonctl member list|add ID ADDRS|remove ID`. Each is one request to the
 * leader.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "client/ctl/ctl.h"
#include "baton/baton_defs.h"
#include "proto/addr.h"

const char cmd_release_help[] =
    "usage: batonctl release --force NAME [--fence N] [--now] [-e ENDPOINTS] [-o table|json]\n"
    "                        [--timeout MS]\n"
    "\n"
    "Takes lock NAME away from whoever holds it, as an operator. The holder's client\n"
    "is told that it lost the lock (`batonctl lock` stops its command and exits 76):\n"
    "at once by a LOST push and, should that be lost (the holder's connection gone,\n"
    "a leader change), through its next keepalive's answer, within a third of its\n"
    "session's ttl; the cluster keeps a record of the loss until the client has\n"
    "acknowledged it.\n"
    "\n"
    "By default the lock then goes to no one until the holder's lease has run out\n"
    "(its session's ttl plus the hold's lock-delay): a holder that has not heard yet\n"
    "stops before the next one starts. Then the head of its queue gets it.\n"
    "  --now       grant the lock to the head of its queue at once, without waiting\n"
    "              out the holder's lease (the old holder may still be working)\n"
    "  --fence N   release it only if it is held with fence N (see `batonctl\n"
    "              lock-info NAME`); otherwise nothing happens and exit 70 says the\n"
    "              current fence\n"
    "--force is required: a release without it is done by the holder itself.\n"
    "\n"
    "Re-sent requests: if the connection breaks after the request was sent,\n"
    "batonctl sends it again. With --fence the second attempt can never take the\n"
    "lock from its next holder: it answers that the lock is not held with fence N\n"
    "(exit 70, although the first attempt released it). Without --fence it takes\n"
    "the lock from whoever holds it by then: while the first attempt's wait runs the\n"
    "lock is held by no one (the second answers `not held`), but with --now a new\n"
    "holder may lose it too. Give --fence where that matters.\n"
    "\n"
    "Exit status: 0; 70 if the lock was not held, not with fence N (or the cluster\n"
    "refused); 69 if no leader answered within --timeout; 64 on a usage error.\n"
    "\n"
    "JSON (-o json), one object:\n"
    "  {\"name\": S, \"lost_session\": N, \"lost_fence\": N, \"granted\": B,\n"
    "   \"new_session\": N, \"new_fence\": N, \"delay_ms\": N}\n"
    "  new_session and new_fence are 0 when nobody was granted the lock (granted is\n"
    "  false): nobody waited, or it waits out the holder's lease for delay_ms.\n";

const char cmd_expire_help[] =
    "usage: batonctl expire SESSION [-e ENDPOINTS] [-o table|json] [--timeout MS]\n"
    "\n"
    "Ends session SESSION (a number, see `batonctl sessions`) as if its lease had run\n"
    "out: every lock it holds is lost (its client is told) and goes to the next\n"
    "waiter, or stays free for the hold's lock-delay; every wait it has ends.\n"
    "\n"
    "Exit status: 0; 70 if there is no such session (or the cluster refused); 69 if\n"
    "no leader answered within --timeout; 64 on a usage error.\n"
    "\n"
    "JSON (-o json): {\"session\": N, \"expired\": true}\n";

const char cmd_transfer_help[] =
    "usage: batonctl transfer-leader [ID] [-e ENDPOINTS] [-o table|json] [--timeout MS]\n"
    "\n"
    "Asks the leader to hand leadership to node ID (a raft id, see `batonctl status`),\n"
    "or, without ID, to a voter raft picks. Prints the new leader. The old leader\n"
    "closes its client connections; clients reconnect to the new one. Asking for\n"
    "the node that already leads succeeds at once.\n"
    "\n"
    "Exit status: 0; 70 if the transfer did not complete (the target did not win\n"
    "its election in time) or leadership went to another node than ID, or the\n"
    "cluster refused (an ID that is not another voting member, say); 64 on a usage\n"
    "error; 69 if no leader answered within --timeout.\n"
    "\n"
    "JSON (-o json): {\"leader_id\": N}\n";

const char cmd_snapshot_help[] =
    "usage: batonctl snapshot [-e ENDPOINTS] [-o table|json] [--timeout MS]\n"
    "       batonctl snapshot save FILE [-e ENDPOINTS] [-o table|json] [--timeout MS]\n"
    "       batonctl snapshot info FILE [-o table|json]\n"
    "\n"
    "snapshot: asks the leader to take a raft snapshot now, rather than when its\n"
    "log next reaches the configured threshold, and prints the snapshot's index.\n"
    "The leader commits an empty entry first; the snapshot covers everything\n"
    "applied up to it. Its files (snapshot-* in the leader's raft directory) are\n"
    "written in the background and may appear a moment after batonctl returns.\n"
    "Only the leader takes one; followers snapshot on their own schedule.\n"
    "\n"
    "snapshot save FILE: a backup. The leader dumps its state at its applied index\n"
    "(on a worker thread; one save at a time per node) and streams it; batonctl\n"
    "checks its length and SHA-256, writes FILE.tmp, fsyncs it and renames it to\n"
    "FILE. --timeout (default 60 s here) bounds the wait for the leader and for\n"
    "each chunk. batond --restore FILE starts a new cluster from it\n"
    "(docs/operations.md, \"Backup and restore\").\n"
    "\n"
    "snapshot info FILE (or status FILE): prints a saved file's header (index,\n"
    "term, state digest, store format, size) and checks its SHA-256, offline.\n"
    "\n"
    "Exit status: 0; 70 if the cluster refused (for instance while another snapshot\n"
    "request or save runs), or the file is corrupted or cannot be written; 69 if no\n"
    "leader answered within --timeout; 64 on a usage error.\n"
    "\n"
    "JSON (-o json): snapshot: {\"index\": N}; save and info: {\"file\", \"version\",\n"
    "\"store_format\", \"index\", \"term\", \"digest\", \"body_bytes\", \"bytes\",\n"
    "\"sha256\", \"checksum_ok\"}\n";

const char cmd_member_help[] =
    "usage: batonctl member list [-e ENDPOINTS] [-o table|json] [--timeout MS]\n"
    "       batonctl member add ID RAFTADDR/CLIENTADDR [-e ENDPOINTS] [-o table|json]\n"
    "                           [--timeout MS]\n"
    "       batonctl member remove ID [-e ENDPOINTS] [-o table|json] [--timeout MS]\n"
    "\n"
    "member list prints the leader's current raft configuration: every server with\n"
    "its id, role (voter, standby or spare), raft address and client address. Client\n"
    "addresses come from the replicated state (member add records them), else from\n"
    "the leader's --cluster list; - when neither knows one.\n"
    "\n"
    "member add ID RAFTADDR/CLIENTADDR adds server ID (1..2147483647) as a voter.\n"
    "The addresses are written as in batond --cluster (a.b.c.d:port, [IPv6]:port or\n"
    "host.name:port), raft address first. Start the new node first, with batond --join --id ID and a\n"
    "--cluster list that names it with the same addresses. The leader commits the\n"
    "client address to the replicated state (so every node can redirect clients\n"
    "there), adds the server as a spare, lets it catch up with the log, promotes it\n"
    "to voter, and batonctl prints the configuration once that has committed.\n"
    "Without --timeout, member add waits up to 30 s. If the new node does not\n"
    "catch up (not running, or not at RAFTADDR), the add fails and the server stays\n"
    "a spare, which has no vote: run the same member add again to retry, or member\n"
    "remove ID. A new node whose binary is of a feature level below the cluster's\n"
    "is refused at the raft handshake and can never catch up: the error says so;\n"
    "run this release or a newer one there before adding it again.\n"
    "\n"
    "member remove ID removes server ID (a raft id) from the configuration and\n"
    "prints the configuration once the change has committed. When ID is the leader,\n"
    "it first hands leadership to another voter, and the new leader removes it.\n"
    "Stop the removed node's batond afterwards; it takes no further part in the\n"
    "cluster. The leader refuses the removal (exit 70) while the voters that would\n"
    "remain hold no majority caught up with it (a node still receiving the log\n"
    "after a partition or restart): removing ID then would stop every commit until\n"
    "that node caught up. Wait until batonctl status shows equal APPLIED, and retry.\n"
    "\n"
    "Only one membership change may run at a time. If the connection breaks after\n"
    "the request was sent, batonctl sends it again, and the second attempt may then\n"
    "report that ID is already a voter (add) or not a member (remove) although the\n"
    "first one did the change.\n"
    "\n"
    "Exit status: 0; 64 on a usage error or a bad address; 70 if the cluster\n"
    "refused (an ID that is not a member (remove), an ID or address already in the\n"
    "configuration (add), another membership change runs, the new node did not\n"
    "catch up, leadership could not be handed away); 69 if no leader answered within\n"
    "--timeout, or leadership was lost before the change committed (its outcome\n"
    "is then unknown).\n"
    "\n"
    "JSON (-o json), one object:\n"
    "  {\"members\": [{\"id\": N, \"role\": S, \"raft_addr\": S, \"client_addr\": S|null}, ...]}\n";

/* How long `member add` waits without --timeout: a new node may need to
 * receive a snapshot and the log before raft promotes it. */
#define MEMBER_ADD_TIMEOUT_MS 30000

/* `release`'s own options. */
enum { OPT_FORCE = CTL_OPT_CMD_BASE, OPT_FENCE, OPT_NOW };

static const struct ctl_optspec release_opts[] = {
    {"force", 'f', 0, OPT_FORCE},
    {"fence", 0, 1, OPT_FENCE},
    {"now", 0, 0, OPT_NOW},
    {NULL, 0, 0, 0},
};

/* What `release` was asked: --force, --fence N (0: none), --now. */
struct release_args {
    int force, now;
    uint64_t fence;
};

/*
 * Iterate the arguments of `cmd`: at most one positional (into *pos),
 * release's options (into *ra, when ra is not NULL), the global options.
 * Returns CTL_CONTINUE, or the exit code to return at once.
 */
static int parse_args(struct ctl_opts *o, int argc, char **argv, const char *cmd,
                      const char *help, const char **pos, struct release_args *ra)
{
    struct ctl_optiter it;
    const char *arg;
    char err[CTL_ERR_SIZE];
    int id, rv;

    ctl_opt_init(&it, argc, argv, 1);
    while ((id = ctl_opt_next(&it, ra ? release_opts : NULL, ctl_global_opts, &arg, err,
                              sizeof err)) != CTL_OPT_END) {
        if (id == CTL_OPT_POSITIONAL && *pos == NULL) {
            *pos = arg;
        } else if (id == OPT_FORCE && ra != NULL) {
            ra->force = 1;
        } else if (id == OPT_NOW && ra != NULL) {
            ra->now = 1;
        } else if (id == OPT_FENCE && ra != NULL) {
            if (ctl_parse_uint(arg, UINT64_MAX, &ra->fence) != 0 || ra->fence == 0)
                return ctl_usage_error(cmd, "bad --fence '%s' (a fence: a positive number)", arg);
        } else {
            rv = ctl_common_opt(o, cmd, help, id, arg, err);
            if (rv != CTL_CONTINUE) return rv;
        }
    }
    return CTL_CONTINUE;
}

static void print_release(const struct ctl_opts *o, const char *name,
                          const struct msg_force_release_r *r)
{
    struct jw w;

    if (o->format == CTL_JSON) {
        jw_init(&w, stdout);
        jw_begin_object(&w, NULL);
        jw_cstring(&w, "name", name);
        jw_u64(&w, "lost_session", r->lost_session);
        jw_u64(&w, "lost_fence", r->lost_fence);
        jw_bool(&w, "granted", r->new_session != 0);
        jw_u64(&w, "new_session", r->new_session);
        jw_u64(&w, "new_fence", r->new_fence);
        jw_u64(&w, "delay_ms", r->delay_ms);
        jw_end_object(&w);
        jw_finish(&w);
        return;
    }
    fputs("released ", stdout);
    ctl_sanitize(stdout, name, strlen(name));
    printf(": session %llu lost it (fence %llu); ", (unsigned long long)r->lost_session,
           (unsigned long long)r->lost_fence);
    if (r->new_session != 0)
        printf("granted to session %llu (fence %llu)\n", (unsigned long long)r->new_session,
               (unsigned long long)r->new_fence);
    else if (r->delay_ms != 0)
        printf("granted to no one for %u ms, until the holder's lease has run out\n",
               r->delay_ms);
    else
        printf("no waiters\n");
}

/* Say why a forced release changed nothing: the lock is not held, or not
 * with the fence asked for. */
static void print_not_held(const char *name, uint64_t asked, uint64_t cur)
{
    fputs("batonctl: release: lock ", stderr);
    ctl_sanitize(stderr, name, strlen(name));
    if (asked != 0 && cur != 0)
        fprintf(stderr, " is held with fence %llu, not %llu: nothing released\n",
                (unsigned long long)cur, (unsigned long long)asked);
    else if (asked != 0)
        fprintf(stderr, " is not held (so not with fence %llu): nothing released\n",
                (unsigned long long)asked);
    else
        fputs(" is not held\n", stderr);
}

int cmd_release(struct ctl_opts *o, int argc, char **argv)
{
    struct baton__reply rep;
    struct msg req;
    const char *name = NULL;
    char err[CTL_ERR_SIZE];
    struct release_args ra = {0};
    int rv;

    rv = parse_args(o, argc, argv, "release", cmd_release_help, &name, &ra);
    if (rv != CTL_CONTINUE) return rv;
    if (!ra.force)
        return ctl_usage_error("release", "only a forced release is possible here: "
                                          "release --force NAME");
    if (name == NULL) return ctl_usage_error("release", "missing lock NAME");
    if (!ctl_lock_name_ok(name))
        return ctl_usage_error("release", "a lock name is 1 to %d bytes", BATON_MAX_NAME);

    memset(&req, 0, sizeof req);
    req.type = MSG_FORCE_RELEASE;
    req.u.force_release.fence = ra.fence;
    req.u.force_release.flags = ra.now ? BATON_FORCE_NOW : 0;
    req.u.force_release.lock.p = name;
    req.u.force_release.lock.n = (uint16_t)strlen(name);
    rv = ctl_conn_opts_check(o, "release");
    if (rv != CTL_CONTINUE) return rv;
    rv = ctl_leader_request(o, &req, &rep, err, sizeof err);
    if (rv != 0) {
        ctl_error("release: %s", err);
        return ctl_exit_for(rv);
    }
    if (rep.m.type != MSG_FORCE_RELEASE_R) {
        ctl_error("release: unexpected reply %s", msg_type_name(rep.m.type));
        baton__reply_free(&rep);
        return CTL_EXIT_SOFTWARE;
    }
    rv = rep.m.u.force_release_r.status;
    if (rv == BATON_ENOTHELD) {
        print_not_held(name, ra.fence, rep.m.u.force_release_r.cur_fence);
    } else if (rv != 0) {
        ctl_error("release: %s", baton_strerror(rv));
    } else {
        print_release(o, name, &rep.m.u.force_release_r);
    }
    baton__reply_free(&rep);
    return rv == 0 ? CTL_EXIT_OK : CTL_EXIT_SOFTWARE;
}

int cmd_expire(struct ctl_opts *o, int argc, char **argv)
{
    struct baton__reply rep;
    struct msg req;
    const char *arg = NULL;
    uint64_t session;
    char err[CTL_ERR_SIZE];
    int rv;

    rv = parse_args(o, argc, argv, "expire", cmd_expire_help, &arg, NULL);
    if (rv != CTL_CONTINUE) return rv;
    if (arg == NULL) return ctl_usage_error("expire", "missing SESSION");
    if (ctl_parse_uint(arg, UINT64_MAX, &session) != 0 || session == 0)
        return ctl_usage_error("expire", "bad SESSION '%s' (a positive number)", arg);

    memset(&req, 0, sizeof req);
    req.type = MSG_EXPIRE_SESSION;
    req.u.expire_session.session = session;
    rv = ctl_conn_opts_check(o, "expire");
    if (rv != CTL_CONTINUE) return rv;
    rv = ctl_leader_request(o, &req, &rep, err, sizeof err);
    if (rv != 0) {
        ctl_error("expire: %s", err);
        return ctl_exit_for(rv);
    }
    if (rep.m.type != MSG_RESULT) {
        ctl_error("expire: unexpected reply %s", msg_type_name(rep.m.type));
        baton__reply_free(&rep);
        return CTL_EXIT_SOFTWARE;
    }
    rv = rep.m.u.result.status;
    baton__reply_free(&rep);
    if (rv == BATON_ESESSION) {
        ctl_error("expire: no session %llu", (unsigned long long)session);
        return CTL_EXIT_SOFTWARE;
    }
    if (rv != 0) {
        ctl_error("expire: %s", baton_strerror(rv));
        return CTL_EXIT_SOFTWARE;
    }
    if (o->format == CTL_JSON)
        printf("{\"session\":%llu,\"expired\":true}\n", (unsigned long long)session);
    else
        printf("expired session %llu\n", (unsigned long long)session);
    return CTL_EXIT_OK;
}

/*
 * The old leader answered before it knew its successor: ask every endpoint
 * for STATUS until one reports itself leader, before the deadline. Returns
 * its id, or 0.
 */
static uint32_t find_leader(const struct ctl_opts *o, int64_t deadline)
{
    char storage[1024], err[CTL_ERR_SIZE];
    const char *eps[CTL_MAX_ENDPOINTS];
    int n;

    if (strlen(o->endpoints) >= sizeof storage) return 0;
    n = ctl_split_endpoints(o->endpoints, storage, eps, CTL_MAX_ENDPOINTS, err, sizeof err);
    while (n > 0 && ctl_now_ms() < deadline) {
        for (int i = 0; i < n; i++) {
            struct baton__reply rep;
            uint32_t id = 0;
            if (ctl_node_status(o, eps[i], deadline, &rep, err, sizeof err) != 0) continue;
            if (rep.m.u.status_r.role == ROLE_LEADER) id = rep.m.u.status_r.node_id;
            baton__reply_free(&rep);
            if (id != 0) return id;
        }
        ctl_sleep_until(50, deadline);
    }
    return 0;
}

int cmd_transfer(struct ctl_opts *o, int argc, char **argv)
{
    const int64_t deadline = ctl_now_ms() + o->timeout_ms;
    struct baton__reply rep;
    struct msg req;
    const char *arg = NULL;
    uint64_t target = 0;
    uint32_t leader;
    char err[CTL_ERR_SIZE];
    int rv;

    rv = parse_args(o, argc, argv, "transfer-leader", cmd_transfer_help, &arg, NULL);
    if (rv != CTL_CONTINUE) return rv;
    if (arg != NULL && (ctl_parse_uint(arg, UINT32_MAX, &target) != 0 || target == 0))
        return ctl_usage_error("transfer-leader", "bad node ID '%s' (a positive number)", arg);

    memset(&req, 0, sizeof req);
    req.type = MSG_TRANSFER;
    req.u.transfer.id = (uint32_t)target;
    rv = ctl_conn_opts_check(o, "transfer-leader");
    if (rv != CTL_CONTINUE) return rv;
    rv = ctl_leader_request(o, &req, &rep, err, sizeof err);
    if (rv != 0) {
        ctl_error("transfer-leader: %s", err);
        return ctl_exit_for(rv);
    }
    if (rep.m.type != MSG_TRANSFER_R) {
        ctl_error("transfer-leader: unexpected reply %s", msg_type_name(rep.m.type));
        baton__reply_free(&rep);
        return CTL_EXIT_SOFTWARE;
    }
    leader = rep.m.u.transfer_r.leader_id;
    baton__reply_free(&rep);
    if (leader == 0) leader = find_leader(o, deadline);
    if (leader == 0) {
        ctl_error("transfer-leader: leadership moved, but no new leader showed up within "
                  "--timeout");
        return CTL_EXIT_UNAVAIL;
    }
    if (o->format == CTL_JSON)
        printf("{\"leader_id\":%u}\n", leader);
    else
        printf("leader is now node %u\n", leader);
    if (target != 0 && leader != target) {
        ctl_error("transfer-leader: node %u won the election, not node %llu", leader,
                  (unsigned long long)target);
        return CTL_EXIT_SOFTWARE;
    }
    return CTL_EXIT_OK;
}

/* snapshot's arguments: at most two positional ones (a subcommand and its
 * FILE) into pos, the options applied to o. */
static int parse_snapshot_args(struct ctl_opts *o, int argc, char **argv, const char *pos[2])
{
    struct ctl_optiter it;
    const char *arg;
    char err[CTL_ERR_SIZE];
    int n = 0, id, rv;

    ctl_opt_init(&it, argc, argv, 1);
    while ((id = ctl_opt_next(&it, NULL, ctl_global_opts, &arg, err, sizeof err)) !=
           CTL_OPT_END) {
        if (id == CTL_OPT_POSITIONAL && n < 2) {
            pos[n++] = arg;
        } else {
            rv = ctl_common_opt(o, "snapshot", cmd_snapshot_help, id, arg, err);
            if (rv != CTL_CONTINUE) return rv;
        }
    }
    return CTL_CONTINUE;
}

int cmd_snapshot(struct ctl_opts *o, int argc, char **argv)
{
    struct baton__reply rep;
    struct msg req;
    const char *pos[2] = {NULL, NULL};
    const char *arg;
    uint64_t index;
    char err[CTL_ERR_SIZE];
    int rv;

    rv = parse_snapshot_args(o, argc, argv, pos);
    if (rv != CTL_CONTINUE) return rv;
    arg = pos[0];
    if (arg != NULL && strcmp(arg, "save") == 0 && pos[1] != NULL) {
        rv = ctl_conn_opts_check(o, "snapshot");
        if (rv != CTL_CONTINUE) return rv;
        return cmd_backup_save(o, pos[1]);
    }
    if (arg != NULL && (strcmp(arg, "info") == 0 || strcmp(arg, "status") == 0) &&
        pos[1] != NULL)
        return cmd_backup_info(o, pos[1]);
    if (arg != NULL && (strcmp(arg, "save") == 0 || strcmp(arg, "info") == 0 ||
                        strcmp(arg, "status") == 0))
        return ctl_usage_error("snapshot", "%s: missing FILE", arg);
    if (arg != NULL) return ctl_usage_error("snapshot", "unexpected argument '%s'", arg);
    rv = ctl_conn_opts_check(o, "snapshot");
    if (rv != CTL_CONTINUE) return rv;

    memset(&req, 0, sizeof req);
    req.type = MSG_SNAPSHOT;
    rv = ctl_leader_request(o, &req, &rep, err, sizeof err);
    if (rv != 0) {
        ctl_error("snapshot: %s", err);
        return ctl_exit_for(rv);
    }
    if (rep.m.type != MSG_SNAPSHOT_R) {
        ctl_error("snapshot: unexpected reply %s", msg_type_name(rep.m.type));
        baton__reply_free(&rep);
        return CTL_EXIT_SOFTWARE;
    }
    index = rep.m.u.snapshot_r.index;
    baton__reply_free(&rep);
    if (o->format == CTL_JSON)
        printf("{\"index\":%llu}\n", (unsigned long long)index);
    else
        printf("snapshot taken at index %llu\n", (unsigned long long)index);
    return CTL_EXIT_OK;
}

static const char *member_role_name(int role)
{
    switch (role) {
    case MEMBER_VOTER:
        return "voter";
    case MEMBER_STANDBY:
        return "standby";
    case MEMBER_SPARE:
        return "spare";
    default:
        return "?";
    }
}

static void print_members(const struct ctl_opts *o, const struct msg_members_r *mr)
{
    struct jw w;

    if (o->format == CTL_JSON) {
        jw_init(&w, stdout);
        jw_begin_object(&w, NULL);
        jw_begin_array(&w, "members");
        for (uint32_t i = 0; i < mr->n; i++) {
            const struct msg_member_info *mb = &mr->members[i];
            jw_begin_object(&w, NULL);
            jw_u64(&w, "id", mb->id);
            jw_cstring(&w, "role", member_role_name(mb->role));
            jw_string(&w, "raft_addr", mb->raft_addr.p, mb->raft_addr.n);
            if (mb->client_addr.n)
                jw_string(&w, "client_addr", mb->client_addr.p, mb->client_addr.n);
            else
                jw_null(&w, "client_addr");
            jw_end_object(&w);
        }
        jw_end_array(&w);
        jw_end_object(&w);
        jw_finish(&w);
        return;
    }
    printf("%-6s %-8s %-22s %s\n", "ID", "ROLE", "RAFT", "CLIENT");
    for (uint32_t i = 0; i < mr->n; i++) {
        const struct msg_member_info *mb = &mr->members[i];
        int len;

        printf("%-6u %-8s ", mb->id, member_role_name(mb->role));
        len = (int)ctl_sanitize(stdout, mb->raft_addr.p, mb->raft_addr.n);
        printf("%*s ", len < 22 ? 22 - len : 0, "");
        if (mb->client_addr.n)
            ctl_sanitize(stdout, mb->client_addr.p, mb->client_addr.n);
        else
            fputs("-", stdout);
        fputs("\n", stdout);
    }
}

/*
 * Parse `member add ID RAFTADDR/CLIENTADDR` into req. addrs (at least
 * strlen(spec) + 1 bytes) keeps the address strings req points to.
 * Returns CTL_CONTINUE or the usage error's exit code.
 */
static int parse_member_add(const char *id_arg, const char *spec, char *addrs, struct msg *req)
{
    struct proto_addr pa;
    uint64_t id;
    char *slash;

    if (id_arg == NULL) return ctl_usage_error("member", "add: missing node ID");
    if (spec == NULL)
        return ctl_usage_error("member", "add: missing RAFTADDR/CLIENTADDR for node %s", id_arg);
    if (ctl_parse_uint(id_arg, INT32_MAX, &id) != 0 || id == 0)
        return ctl_usage_error("member", "bad node ID '%s' (1..2147483647)", id_arg);
    strcpy(addrs, spec);
    slash = strchr(addrs, '/');
    if (slash == NULL)
        return ctl_usage_error("member", "add: '%s' is not RAFTADDR/CLIENTADDR", spec);
    *slash = '\0';
    /* The check batond's MEMBER_ADD handler makes (config_addr_ok in
     * server/config.c): the grammar of proto/addr.h (IPv4, [IPv6] or a
     * host name), so that batonctl refuses up front exactly what the
     * server would. */
    if (proto_addr_parse(addrs, strlen(addrs), &pa) != 0)
        return ctl_usage_error("member", "add: raft address '%s': %s", addrs, pa.why);
    if (proto_addr_parse(slash + 1, strlen(slash + 1), &pa) != 0)
        return ctl_usage_error("member", "add: client address '%s': %s", slash + 1, pa.why);
    if (strcmp(addrs, slash + 1) == 0)
        return ctl_usage_error("member", "add: the raft and client addresses must differ");
    req->type = MSG_MEMBER_ADD;
    req->u.member_add.id = (uint32_t)id;
    req->u.member_add.raft_addr.p = addrs;
    req->u.member_add.raft_addr.n = (uint16_t)strlen(addrs);
    req->u.member_add.client_addr.p = slash + 1;
    req->u.member_add.client_addr.n = (uint16_t)strlen(slash + 1);
    return CTL_CONTINUE;
}

int cmd_member(struct ctl_opts *o, int argc, char **argv)
{
    struct ctl_optiter it;
    struct baton__reply rep;
    struct msg req;
    const char *pos[4] = {NULL, NULL, NULL, NULL};
    const char *arg;
    char addrs[2 * BATON_MAX_ADDR + 2];
    uint64_t id = 0;
    int n_pos = 0, opt, rv;
    char err[CTL_ERR_SIZE];

    ctl_opt_init(&it, argc, argv, 1);
    while ((opt = ctl_opt_next(&it, NULL, ctl_global_opts, &arg, err, sizeof err)) !=
           CTL_OPT_END) {
        if (opt == CTL_OPT_POSITIONAL) {
            if (n_pos == 4) return ctl_usage_error("member", "unexpected argument '%s'", arg);
            pos[n_pos++] = arg;
        } else {
            rv = ctl_common_opt(o, "member", cmd_member_help, opt, arg, err);
            if (rv != CTL_CONTINUE) return rv;
        }
    }
    if (pos[0] == NULL)
        return ctl_usage_error("member", "missing subcommand (list, add or remove)");

    memset(&req, 0, sizeof req);
    if (strcmp(pos[0], "list") == 0) {
        if (pos[1] != NULL) return ctl_usage_error("member", "unexpected argument '%s'", pos[1]);
        req.type = MSG_MEMBERS;
    } else if (strcmp(pos[0], "add") == 0) {
        if (pos[3] != NULL) return ctl_usage_error("member", "unexpected argument '%s'", pos[3]);
        if (pos[2] != NULL && strlen(pos[2]) >= sizeof addrs)
            return ctl_usage_error("member", "add: '%.40s...' is too long", pos[2]);
        rv = parse_member_add(pos[1], pos[2], addrs, &req);
        if (rv != CTL_CONTINUE) return rv;
        if (!o->timeout_set) o->timeout_ms = MEMBER_ADD_TIMEOUT_MS;
    } else if (strcmp(pos[0], "remove") == 0) {
        if (pos[1] == NULL) return ctl_usage_error("member", "remove: missing node ID");
        if (pos[2] != NULL) return ctl_usage_error("member", "unexpected argument '%s'", pos[2]);
        if (ctl_parse_uint(pos[1], UINT32_MAX, &id) != 0 || id == 0)
            return ctl_usage_error("member", "bad node ID '%s' (a positive number)", pos[1]);
        req.type = MSG_MEMBER_REMOVE;
        req.u.member_remove.id = (uint32_t)id;
    } else {
        return ctl_usage_error("member", "unknown subcommand '%s' (list, add or remove)", pos[0]);
    }

    rv = ctl_conn_opts_check(o, "member");
    if (rv != CTL_CONTINUE) return rv;
    rv = ctl_leader_request(o, &req, &rep, err, sizeof err);
    if (rv != 0) {
        ctl_error("member %s: %s", pos[0], err);
        return ctl_exit_for(rv);
    }
    if (rep.m.type != MSG_MEMBERS_R) {
        ctl_error("member %s: unexpected reply %s", pos[0], msg_type_name(rep.m.type));
        baton__reply_free(&rep);
        return CTL_EXIT_SOFTWARE;
    }
    print_members(o, &rep.m.u.members_r);
    baton__reply_free(&rep);
    return CTL_EXIT_OK;
}
