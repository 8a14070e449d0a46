/*
 * main.c -- batonctl: the global options, the command table, the overall
 * usage text with the exit codes, and small helpers every command uses.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl/ctl.h"
#include "baton/baton_defs.h"

static const char usage_text[] =
    "usage: batonctl [OPTIONS] COMMAND [ARGS...]\n"
    "\n"
    "Inspect a baton lock cluster, and run commands while holding its locks.\n"
    "\n"
    "Commands:\n"
    "  status                    every node: addresses, role, term, indexes, reachable\n"
    "  check                     have every node hash its state at one index; compare\n"
    "  top [--count N] [--interval MS]\n"
    "                            every node's role, indexes, commit latency, grants/s,\n"
    "                            sessions, connections and the longest queues, refreshed\n"
    "  locks [PREFIX]            locks whose name starts with PREFIX: holder, fence, waiters\n"
    "  lock-info NAME            one lock: holders with their clients, values and fences,\n"
    "                            its queue in order, read linearizably\n"
    "  watch NAME | --prefix PREFIX\n"
    "                            print a lock's (or every matching lock's) state now and\n"
    "                            at every change, with its revision\n"
    "  lock NAME [--timeout MS] [--grace MS] [--value V] -- CMD [ARGS...]\n"
    "                            run CMD while holding lock NAME; exit with CMD's status;\n"
    "                            if the lock is lost, stop CMD (SIGTERM, then SIGKILL\n"
    "                            after --grace, default 5 s) and exit 76\n"
    "  elect NAME VALUE [--timeout MS] [--grace MS] -- CMD [ARGS...]\n"
    "                            campaign in election NAME with VALUE, run CMD while\n"
    "                            leading, resign when it exits; as lock when leadership\n"
    "                            is lost\n"
    "  elect --observe NAME      print election NAME's leader now and at every change\n"
    "  sessions                  sessions: id, lease, client, locks held and waited for\n"
    "  release --force NAME [--fence N] [--now]\n"
    "                            take lock NAME from its holder (only if it holds fence N);\n"
    "                            the next waiter gets it once the holder's lease ran out,\n"
    "                            or at once with --now\n"
    "  expire SESSION            end a session as if its lease had run out\n"
    "  transfer-leader [ID]      hand leadership to node ID (or one raft picks)\n"
    "  snapshot                  have the leader take a raft snapshot now\n"
    "  snapshot save FILE        back up the leader's state into FILE (checked, fsynced)\n"
    "  snapshot info FILE        print a saved FILE's header and check its SHA-256\n"
    "  member list               the current raft configuration: id, role, addresses\n"
    "  member add ID RAFTADDR/CLIENTADDR\n"
    "                            add node ID (started with batond --join) as a voter\n"
    "  member remove ID          remove node ID from the raft configuration (the leader\n"
    "                            too: it hands leadership away first)\n"
    "  auth hash NAME ROLE [OPTION...]\n"
    "                            a new token for principal NAME, and its auth-file line\n"
    "  help [COMMAND]            this text, or one command's\n"
    "\n"
    "Options (before or after COMMAND):\n"
    "  -e, --endpoints LIST  comma-separated HOST:PORT client addresses of cluster nodes;\n"
    "                        one reachable node is enough. Default: $BATON_ENDPOINTS,\n"
    "                        else " CTL_DEFAULT_ENDPOINTS "\n"
    "  -o, --output FORMAT   table (default) or json (every command but lock and elect\n"
    "                        NAME VALUE: one JSON object on one line, watch and elect\n"
    "                        --observe one per event; `batonctl COMMAND --help` lists\n"
    "                        its fields)\n"
    "  --timeout MS          give up on the cluster after MS milliseconds (default 5000;\n"
    "                        500ms, 5s and 1m are accepted too). After `lock NAME` or\n"
    "                        `elect NAME`, --timeout is instead how long to wait for\n"
    "                        the lock or leadership.\n"
    "  --cacert FILE         speak TLS, and trust the nodes whose certificates chain\n"
    "                        to a CA of FILE (PEM) and name the host dialled.\n"
    "                        Default: $BATON_CACERT, else plaintext\n"
    "  --cert FILE, --key FILE  the client certificate (PEM) and its key, for nodes\n"
    "                        that ask for one (with --cacert). Default: $BATON_CERT,\n"
    "                        $BATON_KEY\n"
    "  --token TOKEN         the bearer token naming this client's principal in the\n"
    "                        nodes' auth file. Default: $BATON_TOKEN. Without TLS it\n"
    "                        is sent only to loopback addresses (127.0.0.0/8, ::1);\n"
    "                        prefer the variable to the flag, which other users can\n"
    "                        see in the process list\n"
    "  -h, --help            this text; `batonctl COMMAND --help` for one command\n"
    "\n"
    "Exit status:\n"
    "  0      success\n"
    "  64     usage error: unknown option, missing or bad argument\n"
    "  69     cluster unavailable: no node reachable, or no leader within --timeout;\n"
    "         for status: no reachable node reports itself leader; for check: a\n"
    "         member could not be checked\n"
    "  70     the cluster refused the request, or a protocol or internal error; a node\n"
    "         refused this client (TLS, unknown token, not allowed: the message says);\n"
    "         release: the lock was not held; expire: no such session;\n"
    "         status, check: a node's state diverged;\n"
    "         transfer-leader: leadership did not move (to ID);\n"
    "         member: another change runs, or a new node did not catch up\n"
    "  75     lock: the lock was not acquired (busy with --timeout 0, or timed out);\n"
    "         elect: this candidate did not lead within --timeout\n"
    "  76     lock: the lock was lost while CMD ran (its lease ran out, its session\n"
    "         expired, or its release was forced); CMD was stopped; elect: the same\n"
    "         for leadership\n"
    "  126    lock, elect: CMD could not be executed\n"
    "  127    lock, elect: CMD was not found\n"
    "  128+N  lock, elect: CMD was killed by signal N, or batonctl got signal N while\n"
    "         it waited for the lock or leadership\n"
    "  other  lock, elect: CMD's own exit status\n";

struct command {
    const char *name;
    int (*run)(struct ctl_opts *o, int argc, char **argv);
    const char *help;
};

static const struct command commands[] = {
    {"status", cmd_status, cmd_status_help},
    {"top", cmd_top, cmd_top_help},
    {"check", cmd_check, cmd_check_help},
    {"locks", cmd_locks, cmd_locks_help},
    {"lock-info", cmd_lock_info, cmd_lock_info_help},
    {"watch", cmd_watch, cmd_watch_help},
    {"lock", cmd_lock, cmd_lock_help},
    {"elect", cmd_elect, cmd_elect_help},
    {"sessions", cmd_sessions, cmd_sessions_help},
    {"release", cmd_release, cmd_release_help},
    {"expire", cmd_expire, cmd_expire_help},
    {"transfer-leader", cmd_transfer, cmd_transfer_help},
    {"snapshot", cmd_snapshot, cmd_snapshot_help},
    {"member", cmd_member, cmd_member_help},
    {"auth", cmd_auth, cmd_auth_help},
    {NULL, NULL, NULL},
};

static const struct command *find_command(const char *name)
{
    for (const struct command *c = commands; c->name != NULL; c++)
        if (strcmp(c->name, name) == 0) return c;
    return NULL;
}

void ctl_error(const char *fmt, ...)
{
    va_list ap;

    fputs("batonctl: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int ctl_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "batonctl%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nRun 'batonctl %s%s--help' for usage.\n", cmd ? cmd : "", cmd ? " " : "");
    return CTL_EXIT_USAGE;
}

int ctl_conn_opts_check(const struct ctl_opts *o, const char *cmd)
{
    const char *eps[CTL_MAX_ENDPOINTS];
    char err[CTL_ERR_SIZE], *storage = malloc(strlen(o->endpoints) + 1);
    int n;

    if (storage == NULL) {
        ctl_error("out of memory");
        return CTL_EXIT_SOFTWARE;
    }
    n = ctl_split_endpoints(o->endpoints, storage, eps, CTL_MAX_ENDPOINTS, err, sizeof err);
    free(storage);
    if (n < 0) return ctl_usage_error(cmd, "%s", err);
    if (ctl_security_usable(o, err, sizeof err) != 0) return ctl_usage_error(cmd, "%s", err);
    return CTL_CONTINUE;
}

/* Usage errors never reach this: a command checks its arguments, and
 * ctl_conn_opts_check the endpoints and TLS files, before it sends
 * anything. So BATON_EINVAL or BATON_ETOOBIG here is the cluster refusing
 * the request: 70, as for any other refusal. */
int ctl_exit_for(int err)
{
    switch (err) {
    case 0:
        return CTL_EXIT_OK;
    case BATON_EUNAVAIL:
    case BATON_ECONNREFUSED:
    case BATON_ETIMEDOUT:
    case BATON_ENOLEADER:
    case BATON_ENOTLEADER:
    case BATON_ECLOSED:
    case BATON_EIO:
        return CTL_EXIT_UNAVAIL;
    case BATON_EWOULDBLOCK:
        return CTL_EXIT_TEMPFAIL;
    default:
        return CTL_EXIT_SOFTWARE;
    }
}

const char *ctl_role_name(int role)
{
    switch (role) {
    case ROLE_LEADER: return "leader";
    case ROLE_FOLLOWER: return "follower";
    case ROLE_CANDIDATE: return "candidate";
    case ROLE_UNAVAILABLE: return "unavailable";
    default: return "unknown";
    }
}

int ctl_common_opt(struct ctl_opts *o, const char *cmd, const char *help_text, int id,
                   const char *arg, const char *err)
{
    char msg[CTL_ERR_SIZE];

    if (id == CTL_OPT_HELP) {
        fputs(help_text, stdout);
        return CTL_EXIT_OK;
    }
    if (id == CTL_OPT_ERROR) return ctl_usage_error(cmd, "%s", err);
    if (id == CTL_OPT_POSITIONAL) return ctl_usage_error(cmd, "unexpected argument '%s'", arg);
    if (id == CTL_OPT_DASHDASH) return ctl_usage_error(cmd, "unexpected '--'");
    if (id > 0 && id < CTL_OPT_CMD_BASE) {
        if (ctl_apply_global(o, id, arg, msg, sizeof msg) != 0)
            return ctl_usage_error(cmd, "%s", msg);
        return CTL_CONTINUE;
    }
    return ctl_usage_error(cmd, "option not handled");
}

/* `batonctl help [COMMAND]`. */
static int help(int argc, char **argv)
{
    const struct command *c;

    if (argc < 2) {
        fputs(usage_text, stdout);
        return CTL_EXIT_OK;
    }
    c = find_command(argv[1]);
    if (c == NULL) return ctl_usage_error(NULL, "unknown command '%s'", argv[1]);
    fputs(c->help, stdout);
    return CTL_EXIT_OK;
}

int main(int argc, char **argv)
{
    struct ctl_opts o;
    struct ctl_optiter it;
    const struct command *c;
    const char *arg, *env = getenv("BATON_ENDPOINTS");
    char err[CTL_ERR_SIZE];
    int id, rv;

    memset(&o, 0, sizeof o);
    o.endpoints = env != NULL && env[0] != '\0' ? env : CTL_DEFAULT_ENDPOINTS;
    o.format = CTL_TABLE;
    o.timeout_ms = CTL_DEFAULT_TIMEOUT_MS;
    /* Like the endpoints: the environment first, flags (anywhere) override. */
    ctl_security_from_env(&o);

    /* Global options up to the command name. */
    ctl_opt_init(&it, argc, argv, 1);
    for (;;) {
        id = ctl_opt_next(&it, ctl_global_opts, NULL, &arg, err, sizeof err);
        if (id == CTL_OPT_POSITIONAL) break;
        if (id == CTL_OPT_HELP) {
            fputs(usage_text, stdout);
            return CTL_EXIT_OK;
        }
        if (id == CTL_OPT_END || id == CTL_OPT_DASHDASH)
            return ctl_usage_error(NULL, "no command given");
        if (id == CTL_OPT_ERROR) return ctl_usage_error(NULL, "%s", err);
        if (ctl_apply_global(&o, id, arg, err, sizeof err) != 0)
            return ctl_usage_error(NULL, "%s", err);
    }

    /* The command gets argv from its own name on. */
    argc -= it.i - 1;
    argv += it.i - 1;
    if (strcmp(arg, "help") == 0) return help(argc, argv);
    c = find_command(arg);
    if (c == NULL) return ctl_usage_error(NULL, "unknown command '%s'", arg);
    rv = c->run(&o, argc, argv);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        ctl_error("cannot write the output");
        if (rv == CTL_EXIT_OK) rv = CTL_EXIT_SOFTWARE;
    }
    return rv;
}
