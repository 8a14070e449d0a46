/*
 * proxy.c -- faultproxy: a TCP proxy between batond nodes' raft links, and
 * between some clients and the nodes, that can cut them, for the fault
 * harness's network partitions.
 *
 *   faultproxy --pids DIR [--client-groups G] ID:LISTEN_PORT:TARGET_PORT[:CLIENT_PORT] ...
 *
 * For every node, the proxy listens on 127.0.0.1:LISTEN_PORT -- the raft
 * address the node advertises in --cluster -- and forwards each connection
 * to 127.0.0.1:TARGET_PORT, where the node really listens (batond
 * --raft-bind). So every raft message of the cluster passes through here.
 *
 * Who is talking. The raft connections are mutual TLS (batond
 * --peer-cert), so nothing the proxy can read on them says who sent them,
 * and the proxy needs nothing from inside them: libraft opens one
 * connection per direction, so the sender of a connection is the process
 * that owns its other end. When a connection arrives, the proxy looks up
 * the sender's socket -- local port = the connection's source port, remote
 * port = the listener's -- in /proc/net/tcp, takes its inode, and finds
 * the node whose process holds that socket among its /proc/PID/fd entries;
 * the nodes' current pids are in the cluster harness's pid files
 * (DIR/node<ID>.pid, tests/lib/cluster.h), read afresh each time since the
 * nemesis restarts nodes. The listener a connection arrived on tells the
 * receiver. A connection whose sender cannot be found (it was closed
 * already, or a process other than the nodes opened it) is closed.
 *
 * Clients. With --client-groups G, the proxy also listens, for each group
 * g in 0..G-1 and each node, on a port of its own (picked by the kernel)
 * that forwards to the node's CLIENT_PORT; before "ready" it prints one
 * line "client g ID PORT" per listener. A client of group g is given those
 * ports (the harness preloads shim_connect.so into it, so that REDIRECTs
 * to a node's own client port come here too). The listener tells both
 * ends of such a connection: nothing needs looking up. What passes is TLS,
 * forwarded as bytes.
 *
 * Commands, one per line on stdin, each answered with one line on stdout
 * ("ok", or "error: ...") once it has taken effect:
 *   cut I J   node I can no longer reach node J: the connections from I to
 *             J are closed, and new ones are accepted but held: what I
 *             sends is read and thrown away, nothing is forwarded (a
 *             black hole, as a real partition is, rather than a refusal)
 *   ccut g J  the clients of group g can no longer reach node J, in the
 *             same way (their connections closed, new ones black-holed)
 *   heal      every link works again; held connections are closed so that
 *             their senders reconnect through a working link
 * A partition {A} | {B, C} is "cut A B", "cut B A", "cut A C", "cut C A".
 * End of file on stdin ends the proxy (so it dies with the harness).
 * Connections in and out are logged to stderr.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "tests/fault/flog.h"

#define MAX_NODES 8
#define MAX_GROUPS 8
#define SRC_MAX (MAX_NODES + MAX_GROUPS) /* senders: nodes, then client groups */
#define READ_SIZE 65536
#define HIGH_WATER (8u << 20) /* stop reading a side whose peer has this much queued */

struct node {
    uint32_t id;
    int listen_port, target_port, client_port;
    uv_tcp_t server;
};

/* A client listener: group g's way to one node. */
struct clisten {
    int group, node;
    int port;
    uv_tcp_t server;
};

enum pstate { P_CONNECTING, P_OPEN, P_HELD, P_CLOSING };

/* One connection a node opened to another node's raft address, or a
 * client to a node's client port. */
struct pconn {
    struct pconn *prev, *next;
    int dst;                 /* index of the node it was sent to */
    int src;                 /* index of the sending node, or MAX_NODES + the
                                client group */
    int target_port;         /* where dst listens for it */
    enum pstate state;
    uv_tcp_t down;           /* accepted from the sender */
    uv_tcp_t up;             /* to the receiver's port */
    bool up_init;
    bool down_paused, up_paused;
    uv_connect_t creq;
    char *pend;              /* bytes read before `up` is connected */
    size_t pend_len, pend_cap;
    int handles;             /* initialised handles not yet closed */
};

struct wreq {
    uv_write_t req;
    struct pconn *pc;
    char *base;
};

static uv_loop_t *loop;
static struct node nodes[MAX_NODES];
static int n_nodes;
static struct clisten clis[MAX_GROUPS * MAX_NODES];
static int n_clis;
static bool cut[SRC_MAX][MAX_NODES]; /* [src][dst] */
static struct pconn *conns;
static uv_pipe_t in;
static const char *pid_dir;  /* the cluster harness's DIR/node<ID>.pid files */
static char line[256];
static size_t line_len;

static int node_by_id(uint64_t id)
{
    for (int i = 0; i < n_nodes; i++)
        if (nodes[i].id == id) return i;
    return -1;
}

/* A sender's name in the log: its node id, or "c" and its group. */
static const char *src_name(int src, char *buf, size_t cap)
{
    if (src < 0)
        snprintf(buf, cap, "?");
    else if (src < MAX_NODES)
        snprintf(buf, cap, "%u", nodes[src].id);
    else
        snprintf(buf, cap, "c%d", src - MAX_NODES);
    return buf;
}

static void pc_closed(uv_handle_t *h)
{
    struct pconn *pc = h->data;

    if (--pc->handles > 0) return;
    free(pc->pend);
    free(pc);
}

/* Close both sides of pc (idempotent); pc is freed once both are closed. */
static void pc_close(struct pconn *pc, const char *why)
{
    char name[16];

    if (pc->state == P_CLOSING) return;
    fprintf(stderr, "%lld close %s->%d: %s\n", (long long)now_us(),
            src_name(pc->src, name, sizeof name), (int)nodes[pc->dst].id, why);
    pc->state = P_CLOSING;
    if (pc->prev)
        pc->prev->next = pc->next;
    else
        conns = pc->next;
    if (pc->next) pc->next->prev = pc->prev;
    uv_close((uv_handle_t *)&pc->down, pc_closed);
    if (pc->up_init) uv_close((uv_handle_t *)&pc->up, pc_closed);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)h;
    (void)hint;
    buf->base = malloc(READ_SIZE);
    buf->len = buf->base ? READ_SIZE : 0;
}

static void on_read_down(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);
static void on_read_up(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);

static void on_written(uv_write_t *req, int status)
{
    struct wreq *w = (struct wreq *)req;
    struct pconn *pc = w->pc;

    free(w->base);
    free(w);
    if (pc->state == P_CLOSING) return;
    if (status < 0) {
        pc_close(pc, uv_strerror(status));
        return;
    }
    /* Resume a side paused because its peer's queue was long. */
    if (pc->down_paused && uv_stream_get_write_queue_size((uv_stream_t *)&pc->up) < HIGH_WATER / 8) {
        pc->down_paused = false;
        uv_read_start((uv_stream_t *)&pc->down, on_alloc, on_read_down);
    }
    if (pc->up_paused && uv_stream_get_write_queue_size((uv_stream_t *)&pc->down) < HIGH_WATER / 8) {
        pc->up_paused = false;
        uv_read_start((uv_stream_t *)&pc->up, on_alloc, on_read_up);
    }
}

/* Send base[0..len) (owned, freed once written) to `to`; pause `from` if
 * `to` is backed up. */
static int forward(struct pconn *pc, uv_stream_t *to, uv_stream_t *from, bool *paused, char *base,
                   size_t len)
{
    struct wreq *w = malloc(sizeof *w);
    uv_buf_t b = uv_buf_init(base, (unsigned)len);
    int rv;

    if (w == NULL) {
        free(base);
        return UV_ENOMEM;
    }
    w->pc = pc;
    w->base = base;
    rv = uv_write(&w->req, to, &b, 1, on_written);
    if (rv != 0) {
        free(base);
        free(w);
        return rv;
    }
    if (uv_stream_get_write_queue_size(to) > HIGH_WATER) {
        uv_read_stop(from);
        *paused = true;
    }
    return 0;
}

static void on_read_up(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct pconn *pc = s->data;

    if (n <= 0) {
        free(buf->base);
        if (n < 0) pc_close(pc, n == UV_EOF ? "receiver closed" : uv_strerror((int)n));
        return;
    }
    if (forward(pc, (uv_stream_t *)&pc->down, s, &pc->up_paused, buf->base, (size_t)n) != 0)
        pc_close(pc, "write to sender failed");
}

static void on_connected(uv_connect_t *req, int status)
{
    struct pconn *pc = req->data;
    char *pend = pc->pend, name[16];

    if (pc->state == P_CLOSING) return;
    if (status < 0) {
        pc_close(pc, status == UV_ECONNREFUSED ? "receiver not listening" : uv_strerror(status));
        return;
    }
    pc->state = P_OPEN;
    fprintf(stderr, "%lld open %s->%d\n", (long long)now_us(),
            src_name(pc->src, name, sizeof name), (int)nodes[pc->dst].id);
    uv_tcp_nodelay(&pc->up, 1);
    pc->pend = NULL;
    if (pc->pend_len == 0) {
        free(pend);
    } else if (forward(pc, (uv_stream_t *)&pc->up, (uv_stream_t *)&pc->down, &pc->down_paused,
                       pend, pc->pend_len) != 0) {
        pc_close(pc, "write to receiver failed");
        return;
    }
    pc->pend_len = pc->pend_cap = 0;
    uv_read_start((uv_stream_t *)&pc->up, on_alloc, on_read_up);
}

/* The sender is known: hold the connection (its link is cut) or connect
 * to the receiver. */
static void route(struct pconn *pc)
{
    struct sockaddr_in a;
    char name[16];

    if (cut[pc->src][pc->dst]) {
        pc->state = P_HELD;
        fprintf(stderr, "%lld hold %s->%d\n", (long long)now_us(),
                src_name(pc->src, name, sizeof name), (int)nodes[pc->dst].id);
        return;
    }
    pc->state = P_CONNECTING;
    uv_tcp_init(loop, &pc->up);
    pc->up.data = pc;
    pc->up_init = true;
    pc->handles++;
    pc->creq.data = pc;
    uv_ip4_addr("127.0.0.1", pc->target_port, &a);
    if (uv_tcp_connect(&pc->creq, &pc->up, (struct sockaddr *)&a, on_connected) != 0)
        pc_close(pc, "connect failed");
}

/* ---- who sent a connection: /proc ---------------------------------------- */

/* The inode of the TCP socket whose local port is `lport` and remote port
 * `rport` (IPv4, any state), or 0. */
static unsigned long socket_inode(unsigned lport, unsigned rport)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    char row[512];
    unsigned long found = 0;

    if (f == NULL) return 0;
    if (fgets(row, sizeof row, f) == NULL) { /* the header */
        fclose(f);
        return 0;
    }
    while (found == 0 && fgets(row, sizeof row, f) != NULL) {
        unsigned la, lp, ra, rp, st;
        unsigned long inode;

        /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
        if (sscanf(row, " %*u: %X:%X %X:%X %X %*X:%*X %*X:%*X %*X %*u %*u %lu", &la, &lp, &ra,
                   &rp, &st, &inode) == 6 &&
            lp == lport && rp == rport)
            found = inode;
    }
    fclose(f);
    return found;
}

/* Does process pid hold the socket with this inode? */
static bool holds(pid_t pid, unsigned long inode)
{
    char dir[64], link[PATH_MAX], want[64], target[64];
    struct dirent *e;
    bool yes = false;
    DIR *d;

    snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
    snprintf(want, sizeof want, "socket:[%lu]", inode);
    if ((d = opendir(dir)) == NULL) return false;
    while (!yes && (e = readdir(d)) != NULL) {
        ssize_t n;

        if (e->d_name[0] == '.') continue;
        snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
        n = readlink(link, target, sizeof target - 1);
        if (n <= 0) continue;
        target[n] = '\0';
        yes = strcmp(target, want) == 0;
    }
    closedir(d);
    return yes;
}

/* Node i's current pid from the harness's pid file, or 0. */
static pid_t node_pid(int i)
{
    char path[PATH_MAX];
    int pid = 0;
    FILE *f;

    snprintf(path, sizeof path, "%s/node%u.pid", pid_dir, nodes[i].id);
    if ((f = fopen(path, "r")) == NULL) return 0;
    if (fscanf(f, "%d", &pid) != 1) pid = 0;
    fclose(f);
    return pid;
}

/* The index of the node that opened pc's connection, or -1. */
static int sender_of(struct pconn *pc)
{
    struct sockaddr_in peer, self;
    int plen = sizeof peer, slen = sizeof self;
    unsigned long inode;

    if (uv_tcp_getpeername(&pc->down, (struct sockaddr *)&peer, &plen) != 0 ||
        uv_tcp_getsockname(&pc->down, (struct sockaddr *)&self, &slen) != 0)
        return -1;
    inode = socket_inode(ntohs(peer.sin_port), ntohs(self.sin_port));
    if (inode == 0) return -1;
    for (int i = 0; i < n_nodes; i++) {
        pid_t pid = node_pid(i);
        if (pid > 0 && holds(pid, inode)) return i;
    }
    return -1;
}

static int pend_append(struct pconn *pc, const char *p, size_t n)
{
    if (pc->pend_len + n > pc->pend_cap) {
        size_t cap = (pc->pend_len + n) * 2;
        char *q = realloc(pc->pend, cap);
        if (q == NULL) return -1;
        pc->pend = q;
        pc->pend_cap = cap;
    }
    memcpy(pc->pend + pc->pend_len, p, n);
    pc->pend_len += n;
    return 0;
}

static void on_read_down(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct pconn *pc = s->data;

    if (n <= 0) {
        free(buf->base);
        if (n < 0) pc_close(pc, n == UV_EOF ? "sender closed" : uv_strerror((int)n));
        return;
    }
    switch (pc->state) {
    case P_CONNECTING:
        if (pend_append(pc, buf->base, (size_t)n) != 0) {
            free(buf->base);
            pc_close(pc, "out of memory");
            return;
        }
        free(buf->base);
        return;
    case P_OPEN:
        if (forward(pc, (uv_stream_t *)&pc->up, s, &pc->down_paused, buf->base, (size_t)n) != 0)
            pc_close(pc, "write to receiver failed");
        return;
    default: /* held: the black hole */
        free(buf->base);
        return;
    }
}

/* A new pconn for a connection arriving on `server`, sent to node dst at
 * target_port; NULL if it could not be accepted. */
static struct pconn *pc_accept(uv_stream_t *server, int dst, int target_port)
{
    struct pconn *pc = calloc(1, sizeof *pc);

    if (pc == NULL) return NULL;
    pc->dst = dst;
    pc->src = -1;
    pc->target_port = target_port;
    uv_tcp_init(loop, &pc->down);
    pc->down.data = pc;
    pc->handles = 1;
    pc->next = conns;
    if (conns) conns->prev = pc;
    conns = pc;
    if (uv_accept(server, (uv_stream_t *)&pc->down) != 0) {
        pc_close(pc, "accept failed");
        return NULL;
    }
    uv_tcp_nodelay(&pc->down, 1);
    return pc;
}

/* A raft connection: its sender is found through /proc. */
static void on_accept(uv_stream_t *server, int status)
{
    struct node *nd = server->data;
    struct pconn *pc;

    if (status < 0) return;
    pc = pc_accept(server, (int)(nd - nodes), nd->target_port);
    if (pc == NULL) return;
    pc->src = sender_of(pc);
    if (pc->src < 0) {
        pc_close(pc, "sender not found among the nodes");
        return;
    }
    uv_read_start((uv_stream_t *)&pc->down, on_alloc, on_read_down);
    route(pc);
}

/* A client connection: the listener says who sends it and to whom. */
static void on_accept_client(uv_stream_t *server, int status)
{
    struct clisten *cl = server->data;
    struct pconn *pc;

    if (status < 0) return;
    pc = pc_accept(server, cl->node, nodes[cl->node].client_port);
    if (pc == NULL) return;
    pc->src = MAX_NODES + cl->group;
    uv_read_start((uv_stream_t *)&pc->down, on_alloc, on_read_down);
    route(pc);
}

/* ---- commands -------------------------------------------------------------- */

static void reply(const char *s)
{
    fputs(s, stdout);
    fputc('\n', stdout);
    fflush(stdout);
}

static void do_cut(int src, int dst)
{
    struct pconn *pc, *next;

    cut[src][dst] = true;
    for (pc = conns; pc; pc = next) {
        next = pc->next;
        if (pc->src == src && pc->dst == dst && pc->state != P_HELD) pc_close(pc, "cut");
    }
}

static void do_heal(void)
{
    struct pconn *pc, *next;

    memset(cut, 0, sizeof cut);
    for (pc = conns; pc; pc = next) {
        next = pc->next;
        if (pc->state == P_HELD) pc_close(pc, "healed");
    }
}

static void shutdown_all(void)
{
    while (conns) pc_close(conns, "shutdown");
    for (int i = 0; i < n_nodes; i++) uv_close((uv_handle_t *)&nodes[i].server, NULL);
    for (int k = 0; k < n_clis; k++) uv_close((uv_handle_t *)&clis[k].server, NULL);
    uv_close((uv_handle_t *)&in, NULL);
}

static bool group_used(unsigned g)
{
    for (int k = 0; k < n_clis; k++)
        if (clis[k].group == (int)g) return true;
    return false;
}

static void command(char *s)
{
    unsigned a, b;
    char tail;

    fprintf(stderr, "%lld command: %s\n", (long long)now_us(), s);
    if (sscanf(s, "cut %u %u %c", &a, &b, &tail) == 2) {
        int src = node_by_id(a), dst = node_by_id(b);
        if (src < 0 || dst < 0 || src == dst) {
            reply("error: cut needs two different node ids");
            return;
        }
        do_cut(src, dst);
        reply("ok");
    } else if (sscanf(s, "ccut %u %u %c", &a, &b, &tail) == 2) {
        int dst = node_by_id(b);
        if (a >= (unsigned)MAX_GROUPS || dst < 0 || !group_used(a)) {
            reply("error: ccut needs a client group and a node id");
            return;
        }
        do_cut(MAX_NODES + (int)a, dst);
        reply("ok");
    } else if (strcmp(s, "heal") == 0) {
        do_heal();
        reply("ok");
    } else {
        reply("error: unknown command (cut I J | ccut G J | heal)");
    }
}

static void on_stdin(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    (void)s;
    if (n < 0) {
        free(buf->base);
        shutdown_all();
        return;
    }
    for (ssize_t k = 0; k < n; k++) {
        char ch = buf->base[k];
        if (ch == '\n') {
            line[line_len] = '\0';
            command(line);
            line_len = 0;
        } else if (line_len < sizeof line - 1) {
            line[line_len++] = ch;
        }
    }
    free(buf->base);
}

/* ---- start ------------------------------------------------------------------ */

static int parse_node(const char *arg, struct node *nd)
{
    unsigned id, lp, tp, cp = 0;
    char tail;
    int n = sscanf(arg, "%u:%u:%u:%u%c", &id, &lp, &tp, &cp, &tail);

    if ((n != 3 && n != 4) || id == 0 || lp == 0 || lp > 65535 || tp == 0 || tp > 65535 ||
        cp > 65535)
        return -1;
    nd->id = id;
    nd->listen_port = (int)lp;
    nd->target_port = (int)tp;
    nd->client_port = (int)cp;
    return 0;
}

/* Listen on 127.0.0.1:port (0: any) with cb; the port in *port. 0 or a uv
 * error. */
static int listen_on(uv_tcp_t *server, void *data, int *port, uv_connection_cb cb)
{
    struct sockaddr_in a;
    struct sockaddr_storage got;
    int rv, len = sizeof got;

    uv_tcp_init(loop, server);
    server->data = data;
    uv_ip4_addr("127.0.0.1", *port, &a);
    rv = uv_tcp_bind(server, (struct sockaddr *)&a, 0);
    if (rv == 0) rv = uv_listen((uv_stream_t *)server, 64, cb);
    if (rv == 0) rv = uv_tcp_getsockname(server, (struct sockaddr *)&got, &len);
    if (rv == 0) *port = ntohs(((struct sockaddr_in *)&got)->sin_port);
    return rv;
}

/* Group g's listeners, one per node, each announced on stdout. */
static int listen_clients(int groups)
{
    char msg[64];

    for (int g = 0; g < groups; g++)
        for (int i = 0; i < n_nodes; i++) {
            struct clisten *cl = &clis[n_clis];
            int rv;

            if (nodes[i].client_port == 0) {
                fprintf(stderr, "faultproxy: node %u has no CLIENT_PORT\n", nodes[i].id);
                return -1;
            }
            cl->group = g;
            cl->node = i;
            cl->port = 0;
            if ((rv = listen_on(&cl->server, cl, &cl->port, on_accept_client)) != 0) {
                fprintf(stderr, "faultproxy: client listener: %s\n", uv_strerror(rv));
                return -1;
            }
            n_clis++;
            snprintf(msg, sizeof msg, "client %d %u %d", g, nodes[i].id, cl->port);
            reply(msg);
        }
    return 0;
}

int main(int argc, char **argv)
{
    int rv, a = 3, groups = 0;

    if (argc >= 5 && strcmp(argv[3], "--client-groups") == 0) {
        groups = atoi(argv[4]);
        a = 5;
    }
    if (argc <= a || strcmp(argv[1], "--pids") != 0 || argc - a > MAX_NODES || groups < 0 ||
        groups > MAX_GROUPS) {
        fprintf(stderr,
                "usage: faultproxy --pids DIR [--client-groups G] "
                "ID:LISTEN_PORT:TARGET_PORT[:CLIENT_PORT] ... (at most %d nodes, %d groups)\n",
                MAX_NODES, MAX_GROUPS);
        return 2;
    }
    pid_dir = argv[2];
    loop = uv_default_loop();
    for (int i = a; i < argc; i++) {
        struct node *nd = &nodes[n_nodes];

        if (parse_node(argv[i], nd) != 0) {
            fprintf(stderr, "faultproxy: bad node '%s' (want ID:LISTEN_PORT:TARGET_PORT"
                            "[:CLIENT_PORT])\n", argv[i]);
            return 2;
        }
        if ((rv = listen_on(&nd->server, nd, &nd->listen_port, on_accept)) != 0) {
            fprintf(stderr, "faultproxy: listen on port %d: %s\n", nd->listen_port,
                    uv_strerror(rv));
            return 1;
        }
        n_nodes++;
    }
    if (listen_clients(groups) != 0) return 1;
    uv_pipe_init(loop, &in, 0);
    if ((rv = uv_pipe_open(&in, 0)) != 0 ||
        (rv = uv_read_start((uv_stream_t *)&in, on_alloc, on_stdin)) != 0) {
        fprintf(stderr, "faultproxy: stdin must be a pipe: %s\n", uv_strerror(rv));
        return 1;
    }
    reply("ready");
    uv_run(loop, UV_RUN_DEFAULT);
    rv = uv_loop_close(loop);
    return rv == 0 ? 0 : 1;
}
