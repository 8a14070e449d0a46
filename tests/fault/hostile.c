/*
 * hostile.c -- faulthostile: a client of another principal that replays
 * the real clients' session ids, for the fault harness.
 *
 *   faulthostile --endpoints E --cacert FILE --token T --log FILE --logs DIR
 *                [--seed S]
 *
 * It holds a connection of its own (TLS, its own token: the principal
 * "faulthostile", role client, which may open sessions and lock -- the
 * real clients are "faultclient"), reads the real clients' logs in DIR as
 * they grow (SESS and GRANT lines: session ids, and the lock and fence of
 * each hold), and every 20-100 ms sends one request naming a session that
 * is not its own:
 *
 *   KEEPALIVE      renewing it (and, were it taken, pulling its pushes to
 *                  this connection: the holder would miss its LOST notice)
 *   RELEASE        of a lock that session holds, with the hold's own fence
 *   ACQUIRE        of a hot lock, as try-lock
 *   CANCEL         of a waiter seq of that session
 *   CLOSE_SESSION  ending it
 *
 * The session is the one of a recent grant 6 times in 10, any session a
 * client logged 1 in 4, else a guess (a logged id plus or minus 1-3, or a
 * random one). Seqs and ack_below are random and small, so they collide
 * with the victims' own.
 *
 * Every such request must be refused: ERROR(BATON_EPERM), "the session
 * belongs to another principal" (server/access.c), or BATON_ESESSION for
 * a session that does not exist (any more). It logs each outcome:
 *
 *     T HOSTILE KIND SESSION refused STATUS
 *     T HOSTILE KIND SESSION ACCEPTED 0        the request was carried out
 *     T HOSTILE KIND SESSION other STATUS      answered otherwise
 *     T HOSTILE KIND SESSION none 0            no answer (no leader, ...)
 *
 * The checker (check.c) counts ACCEPTED and other as violations: a request
 * of this kind that is not refused reached a session it does not own. The
 * lock rules judge the rest (a RELEASE or CLOSE_SESSION carried out would
 * take a lock from its holder silently).
 *
 * SIGTERM: exit 0.
 */
#include <dirent.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "tests/fault/flog.h"
#include "tests/lib/rng.h"
#include "tests/lib/tls_sock.h"

#define MAX_FILES 32
#define MAX_KNOWN 64
#define MAX_PORTS 16

enum kind { K_KEEPALIVE, K_RELEASE, K_ACQUIRE, K_CANCEL, K_CLOSE, K_COUNT };
static const char *const kind_name[K_COUNT] = {"KEEPALIVE", "RELEASE", "ACQUIRE", "CANCEL",
                                               "CLOSE_SESSION"};

struct hold {
    uint64_t session, fence;
    char lock[32];
};

static volatile sig_atomic_t stopping;
static FILE *logf_;
static uint64_t rng = 0x9E3779B97F4A7C15ull;

/* What the clients' logs told so far. */
static struct {
    char path[PATH_MAX + 32];
    long off;
} files[MAX_FILES];
static int n_files;
static uint64_t sessions[MAX_KNOWN];
static int n_sessions, next_session;
static struct hold holds[MAX_KNOWN];
static int n_holds, next_hold;

/* The cluster. */
static int ports[MAX_PORTS], n_ports, cur_port;
static struct tls_sock_cfg cfg;
static const char *token;
static struct tls_sock sock;
static int connected;
static uint64_t req_id = 100;

static uint64_t rnd(uint64_t lo, uint64_t hi)
{
    return lo + xorshift64(&rng) % (hi - lo + 1);
}

static void on_term(int sig)
{
    (void)sig;
    stopping = 1;
}

/* ---- the clients' logs ------------------------------------------------------ */

static void remember_session(uint64_t s)
{
    for (int k = 0; k < n_sessions; k++)
        if (sessions[k] == s) return;
    sessions[next_session] = s;
    next_session = (next_session + 1) % MAX_KNOWN;
    if (n_sessions < MAX_KNOWN) n_sessions++;
}

static void learn_line(const char *line)
{
    unsigned long long t, a, fence, session;
    char lock[32];
    struct hold *h;

    if (sscanf(line, "%llu SESS %llu", &t, &session) == 2) {
        remember_session(session);
    } else if (sscanf(line, "%llu GRANT %llu %31s %llu %llu", &t, &a, lock, &fence, &session) ==
               5) {
        if (session == 0) return; /* not a session: nothing of another principal */
        remember_session(session);
        h = &holds[next_hold];
        h->session = session;
        h->fence = fence;
        snprintf(h->lock, sizeof h->lock, "%s", lock);
        next_hold = (next_hold + 1) % MAX_KNOWN;
        if (n_holds < MAX_KNOWN) n_holds++;
    }
}

/* Find DIR's client-*.log files (new ones too: a client may not have
 * made its log yet the first time) and read what they gained since the
 * last look, whole lines only. */
static void read_logs(const char *dir)
{
    char line[512], path[PATH_MAX + 32];
    DIR *d = opendir(dir);
    struct dirent *e;

    while (d && (e = readdir(d)) != NULL && n_files < MAX_FILES) {
        size_t len = strlen(e->d_name);
        int known = 0;
        if (strncmp(e->d_name, "client-", 7) != 0 || len <= 4 ||
            strcmp(e->d_name + len - 4, ".log") != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        for (int k = 0; k < n_files && !known; k++) known = strcmp(files[k].path, path) == 0;
        if (!known) snprintf(files[n_files++].path, sizeof files[0].path, "%s", path);
    }
    if (d) closedir(d);
    for (int k = 0; k < n_files; k++) {
        FILE *f = fopen(files[k].path, "r");
        if (f == NULL) continue;
        fseek(f, files[k].off, SEEK_SET);
        while (fgets(line, sizeof line, f) != NULL) {
            size_t len = strlen(line);
            if (len == 0 || line[len - 1] != '\n') break; /* a line being written */
            files[k].off += (long)len;
            learn_line(line);
        }
        fclose(f);
    }
}

/* ---- the cluster ------------------------------------------------------------- */

static int parse_port(const char *s, size_t n)
{
    char buf[64];
    const char *colon;

    snprintf(buf, sizeof buf, "%.*s", (int)n, s);
    colon = strrchr(buf, ':');
    return colon ? atoi(colon + 1) : 0;
}

static void disconnect(void)
{
    if (connected) tls_sock_close(&sock);
    connected = 0;
}

static int connect_to(int port)
{
    disconnect();
    if (tls_sock_connect(&sock, port, &cfg, 2000) != 0) return -1;
    if (tls_sock_hello(&sock, token, NULL) != 0) {
        tls_sock_close(&sock);
        return -1;
    }
    connected = 1;
    return 0;
}

/* Send m to the leader (following REDIRECTs, trying the endpoints in turn)
 * and put the answer in *reply. 0, or -1 if none came. */
static int ask(struct msg *m, struct msg *reply)
{
    int redirect = 0;

    for (int attempt = 0; attempt < 6 && !stopping; attempt++) {
        if (!connected) {
            int port = redirect ? redirect : ports[cur_port];
            redirect = 0;
            if (connect_to(port) != 0) {
                cur_port = (cur_port + 1) % n_ports;
                sleep_ms(50);
                continue;
            }
        }
        m->req_id = ++req_id;
        if (tls_sock_request(&sock, m, reply, 2000) != 0) {
            disconnect();
            cur_port = (cur_port + 1) % n_ports;
            continue;
        }
        if (reply->type == MSG_REDIRECT) {
            redirect = parse_port(reply->u.redirect.client_addr.p, reply->u.redirect.client_addr.n);
            msg_free(reply);
            disconnect();
            continue;
        }
        if (reply->type == MSG_NO_LEADER) {
            msg_free(reply);
            disconnect();
            cur_port = (cur_port + 1) % n_ports;
            sleep_ms(100);
            continue;
        }
        return 0;
    }
    return -1;
}

/* ---- the requests -------------------------------------------------------------- */

/* The session to name, and (for RELEASE) the hold to name with it. */
static uint64_t pick_session(struct hold *h)
{
    uint64_t x = rnd(0, 19);

    memset(h, 0, sizeof *h);
    snprintf(h->lock, sizeof h->lock, "hot%u", (unsigned)rnd(0, 1));
    h->fence = rnd(1, 100000);
    if (x < 12 && n_holds > 0) {
        *h = holds[rnd(0, (uint64_t)n_holds - 1)];
        return h->session;
    }
    if (x < 17 && n_sessions > 0) return sessions[rnd(0, (uint64_t)n_sessions - 1)];
    if (n_sessions > 0 && x < 19) {
        uint64_t s = sessions[rnd(0, (uint64_t)n_sessions - 1)], d = rnd(1, 3);
        return rnd(0, 1) ? s + d : s > d ? s - d : s + d;
    }
    return rnd(1, 1000000);
}

static void one_request(void)
{
    enum kind k = (enum kind)rnd(0, K_COUNT - 1);
    struct hold h;
    uint64_t session = pick_session(&h);
    struct msg m = {0}, r;
    const char *outcome;
    int status = 0;

    switch (k) {
    case K_KEEPALIVE:
        m.type = MSG_KEEPALIVE;
        m.u.keepalive.session = session;
        break;
    case K_RELEASE:
    case K_ACQUIRE:
    case K_CANCEL:
    case K_CLOSE:
        m.type = k == K_RELEASE ? MSG_RELEASE
                 : k == K_ACQUIRE ? MSG_ACQUIRE
                 : k == K_CANCEL  ? MSG_CANCEL
                                  : MSG_CLOSE_SESSION;
        m.u.op.session = session;
        m.u.op.seq = rnd(1, 1000);
        m.u.op.ack_below = rnd(0, m.u.op.seq);
        m.u.op.wait_ms = BATON_WAIT_TRY;
        m.u.op.lock_delay_ms = BATON_LOCK_DELAY_DEFAULT;
        m.u.op.fence = h.fence;
        m.u.op.waiter = rnd(1, 1000);
        if (k != K_CLOSE) {
            m.u.op.lock.p = h.lock;
            m.u.op.lock.n = (uint16_t)strlen(h.lock);
        }
        break;
    default: return;
    }
    if (ask(&m, &r) != 0) {
        flog(logf_, "HOSTILE %s %" PRIu64 " none 0", kind_name[k], session);
        return;
    }
    if (r.type == MSG_ERROR)
        status = r.u.error.code;
    else if (r.type == MSG_RESULT)
        status = r.u.result.status;
    else
        status = -1000 - (int)r.type; /* an answer of an unexpected type */
    if (status == BATON_EPERM || status == BATON_ESESSION)
        outcome = "refused";
    else if (status == 0)
        outcome = "ACCEPTED";
    else
        outcome = "other";
    flog(logf_, "HOSTILE %s %" PRIu64 " %s %d", kind_name[k], session, outcome, status);
    msg_free(&r);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"endpoints", required_argument, NULL, 'e'}, {"cacert", required_argument, NULL, 'c'},
        {"token", required_argument, NULL, 'T'},     {"log", required_argument, NULL, 'l'},
        {"logs", required_argument, NULL, 'd'},      {"seed", required_argument, NULL, 'r'},
        {0},
    };
    const char *endpoints = NULL, *logpath = NULL, *dir = NULL;
    int64_t next_read = 0;
    int o;

    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'e': endpoints = optarg; break;
        case 'c': cfg.ca_file = optarg; break;
        case 'T': token = optarg; break;
        case 'l': logpath = optarg; break;
        case 'd': dir = optarg; break;
        case 'r': rng ^= strtoull(optarg, NULL, 10) * 0x9E3779B97F4A7C15ull; break;
        default: goto usage;
        }
    }
    if (endpoints == NULL || logpath == NULL || dir == NULL || optind != argc) goto usage;
    if (rng == 0) rng = 1;
    for (const char *p = endpoints; *p && n_ports < MAX_PORTS;) {
        size_t n = strcspn(p, ",");
        if ((ports[n_ports] = parse_port(p, n)) > 0) n_ports++;
        p += n + (p[n] == ',');
    }
    if (n_ports == 0) goto usage;
    if ((logf_ = fopen(logpath, "w")) == NULL) {
        perror(logpath);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, on_term);
    while (!stopping) {
        if (now_ms() >= next_read) {
            read_logs(dir);
            next_read = now_ms() + 500;
        }
        if (n_sessions > 0) one_request();
        sleep_ms((int64_t)rnd(20, 100));
    }
    disconnect();
    fclose(logf_);
    return 0;

usage:
    fprintf(stderr, "usage: faulthostile --endpoints E --cacert FILE --token T --log FILE "
                    "--logs DIR [--seed S]\n");
    return 2;
}
