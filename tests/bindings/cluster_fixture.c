/*
 * cluster_fixture.c -- a real three-node cluster for the tests of the
 * language bindings (bindings/python, bindings/go), driven over a pipe,
 * so that every binding's tests use the one C harness (tests/lib/cluster.c:
 * free 127.0.0.1 ports, a fresh temp dir, every node stopped by pid, a
 * guardian that stops them should this process die).
 *
 *   cluster_fixture [--secure] [--nodes N]
 *
 * Run it from the repository root (the harness makes the certificates
 * with server/certs.sh). It starts N (default 3) nodes, waits for a leader and the binary's feature
 * level, and prints ONE line of JSON:
 *
 *   {"endpoints": "127.0.0.1:P1,...", "dir": "...", "ca": "", "cert": "",
 *    "key": "", "token": "", "read_token": ""}
 *
 * With --secure the nodes run TLS between them and on the client port and
 * an auth file (tests/lib/cluster.h, CLUSTER_SECURE): "ca" is the CA file a
 * client verifies the nodes with, "token" a principal "app" of role client,
 * "read_token" one of role read; "cert"/"key" a client certificate, which
 * the nodes do not require.
 *
 * Then it reads commands, one per line on stdin, and answers each with one
 * line on stdout, "ok[ RESULT]" or "err MESSAGE":
 *
 *   leader               the leader's index (0-based), once there is one
 *   kill I SIG           signal node I (0-based; SIG a number); ok STATUS
 *                        (128+SIG once it has died of it, see cluster_kill)
 *   restart I            start node I again
 *   ctl ARG...           run batonctl -e ENDPOINTS (with the harness's
 *                        admin credentials when secure) ARG... (split on
 *                        spaces); ok EXIT STDOUT, STDOUT as a JSON string
 *   lock NAME KEY        the number under KEY in lock-info's JSON of NAME
 *                        (-1 if absent); ok NUMBER
 *   wait NAME KEY N      wait (15 s at most) until that number is N
 *   stop                 stop the cluster and exit 0
 *
 * End of input stops the cluster too: a test runner that dies leaves
 * nothing behind.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/cmd_table.h"
#include "tests/lib/cluster.h"

#define LINE_MAX_LEN 4096
#define MAX_ARGS 64

static struct cluster C;

/* s as a JSON string, on stdout. */
static void put_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch == '\n')
            fputs("\\n", stdout);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

static void put_field(const char *key, const char *value, int last)
{
    put_json_string(key);
    fputs(": ", stdout);
    put_json_string(value);
    fputs(last ? "}\n" : ", ", stdout);
}

static int start(int nodes, int secure)
{
    static char lines[2 * 512 + 8];
    static char token[80], read_token[80];
    struct cluster_opts o = {0};
    char line1[512], line2[512];

    if (secure) {
        if (cluster_token("app", "client", "", token, line1, sizeof line1) != 0 ||
            cluster_token("watcher", "read", "", read_token, line2, sizeof line2) != 0)
            return -1;
        snprintf(lines, sizeof lines, "%s\n%s\n", line1, line2);
        o.secure = CLUSTER_SECURE;
        o.auth_lines = lines;
    }
    if (cluster_start_opts(&C, nodes, &o) != 0) return -1;
    if (cluster_wait_leader(&C, 15000) < 0 ||
        cluster_wait_gauge(&C, "baton_cluster_feature_level", CMD_LEVEL, 20000) != 0) {
        cluster_stop(&C);
        return -1;
    }
    putchar('{');
    put_field("endpoints", cluster_endpoints(&C), 0);
    put_field("dir", C.root, 0);
    put_field("ca", secure ? cluster_cert(&C, "ca", 0) : "", 0);
    put_field("cert", secure ? cluster_cert(&C, "client", 0) : "", 0);
    put_field("key", secure ? cluster_cert(&C, "client", 1) : "", 0);
    put_field("token", secure ? token : "", 0);
    put_field("read_token", secure ? read_token : "", 1);
    fflush(stdout);
    return 0;
}

/* A node index from text, or -1. */
static int node_arg(const char *s)
{
    char *end;
    long i = s ? strtol(s, &end, 10) : -1;

    return s && *end == '\0' && i >= 0 && i < C.n ? (int)i : -1;
}

static void cmd_ctl(const char *const *args)
{
    struct ctl_result r;
    int st = cluster_ctlv(&C, 30000, &r, args);

    printf("ok %d ", st);
    put_json_string(r.out ? r.out : "");
    putchar('\n');
    ctl_result_free(&r);
}

/* One command; returns 1 for stop. */
static int command(char *line)
{
    const char *av[MAX_ARGS + 1];
    int ac = 0, i;

    for (char *tok = strtok(line, " \t\r\n"); tok && ac < MAX_ARGS; tok = strtok(NULL, " \t\r\n"))
        av[ac++] = tok;
    av[ac] = NULL;
    if (ac == 0) {
        puts("err empty command");
    } else if (strcmp(av[0], "stop") == 0) {
        return 1;
    } else if (strcmp(av[0], "leader") == 0) {
        i = cluster_wait_leader(&C, 15000);
        if (i < 0)
            puts("err no leader within 15 s");
        else
            printf("ok %d\n", i);
    } else if (strcmp(av[0], "kill") == 0 && ac == 3 && node_arg(av[1]) >= 0) {
        printf("ok %d\n", cluster_kill(&C, node_arg(av[1]), atoi(av[2])));
    } else if (strcmp(av[0], "restart") == 0 && ac == 2 && node_arg(av[1]) >= 0) {
        puts(cluster_restart(&C, node_arg(av[1])) == 0 ? "ok" : "err the node did not start");
    } else if (strcmp(av[0], "ctl") == 0 && ac >= 2) {
        cmd_ctl(av + 1);
    } else if (strcmp(av[0], "lock") == 0 && ac == 3) {
        printf("ok %lld\n", (long long)cluster_lock_i64(&C, av[1], av[2]));
    } else if (strcmp(av[0], "wait") == 0 && ac == 4) {
        if (cluster_wait_lock_i64(&C, av[1], av[2], atoll(av[3]), 15000) == 0)
            puts("ok");
        else
            printf("err %s of %s is not %s after 15 s\n", av[2], av[1], av[3]);
    } else {
        printf("err unknown command or arguments: %s\n", av[0]);
    }
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    char line[LINE_MAX_LEN];
    int nodes = 3, secure = 0, rv;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--secure") == 0) {
            secure = 1;
        } else if (strcmp(argv[i], "--nodes") == 0 && i + 1 < argc) {
            nodes = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: cluster_fixture [--secure] [--nodes N]\n");
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    if (start(nodes, secure) != 0) {
        fprintf(stderr, "cluster_fixture: the cluster did not start\n");
        return 1;
    }
    while (fgets(line, sizeof line, stdin) != NULL)
        if (command(line)) break;
    rv = cluster_stop(&C);
    if (rv == 0) puts("ok");
    fflush(stdout);
    return rv == 0 ? 0 : 1;
}
