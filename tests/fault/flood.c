/*
 * flood.c -- faultflood: one flood of a hostile but authenticated client
 * against one node, for the nemesis's hostile-* faults (nemesis_hostile.c).
 *
 *   faultflood --flood KIND --port P --node ID --cacert FILE --token T
 *              --other-token T2 --cap N --log FILE
 *
 * T is the floods' own principal's token ("faultflood", role client, at
 * most N sessions open); T2 another principal's (the real clients').
 *
 * KIND is one of
 *
 *   cache      one session that never advances ack_below (1) sends
 *              RELEASEs and CANCELs of locks it does not hold and
 *              try-lock ACQUIREs of names of its own, FLOOD_BATCH in one
 *              write, batch after batch for FLOOD_MS: at most BATON_MAX_UNACKED
 *              of them may run (their results are what the cluster keeps
 *              for the session), every later one must be answered
 *              RESULT(BATON_ELIMIT); then CLOSE_SESSION, never refused
 *   reads      LIST_SESSIONS, LIST_LOCKS and LOCK_INFO, FLOOD_BATCH in one
 *              write, batch after batch for FLOOD_MS: each answered with
 *              its reply (or ERROR(BATON_ELIMIT) if the node closed the
 *              connection over its unread replies; a follower REDIRECTs)
 *   sessions   OPEN_SESSION one after another until one is refused: the
 *              principal's cap (--cap, its max-sessions= in the auth file)
 *              must hold, with ERROR(BATON_ELIMIT); then another principal
 *              (--other-token) opens a session, which must not be refused;
 *              then every session opened is closed
 *   prehello   PREHELLO_BIG connections (TLS done, no HELLO), all open at
 *              once, each send a header claiming a 1 MiB frame and 60 KiB
 *              of it: answered
 *              ERROR(BATON_ETOOBIG) and closed, or closed; and
 *              PREHELLO_TRICKLE connections trickle a byte every 250 ms,
 *              half of them a HELLO inside TLS, half a TLS record in
 *              plaintext: each closed within --handshake-timeout (5 s;
 *              TRICKLE_MAX_MS allowed), never served; then a new
 *              connection must still get HELLO_OK
 *
 * Each answer is counted as what it is: ran / ok (carried out or
 * answered as a read), refused (the documented refusal), noleader
 * (REDIRECT, NO_LEADER, ENOTLEADER, ENOLEADER or EUNAVAIL: the node is
 * not, or no longer, the leader), other (anything else: the checker's violation), unanswered
 * (the connection ended or went silent). It appends one line to the log:
 *
 *   T FLOOD KIND node=ID key=value ...
 *
 * check_flood.c reads those lines. Exit 0, or 2 if it could not start
 * (no connection, no HELLO): that flood then proves nothing.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "proto/msg.h"
#include "tests/fault/flog.h"
#include "tests/lib/tls_sock.h"

#define FLOOD_BATCH 4000
#define FLOOD_MS 3000        /* batches go on for this long (at least two) */
#define FLOOD_MAX_BATCHES 50
#define ANSWER_MS 60000
#define PREHELLO_BIG 64
#define PREHELLO_BODY (60 * 1024)
#define PREHELLO_TRICKLE 16
#define TRICKLE_MAX_MS 15000

static struct tls_sock_cfg cfg;
static int port;
static const char *token, *other_token;
static unsigned node_id, cap;
static FILE *logf_;

/* What the answers to a flood were. */
struct count {
    unsigned sent, ran, refused, noleader, other, unanswered;
    int first_other; /* the first "other": its status, or -1000 - its type */
};

static int open_conn(struct tls_sock *s, const char *tok)
{
    if (tls_sock_connect(s, port, &cfg, 5000) != 0) return -1;
    if (tls_sock_hello(s, tok, NULL) != 0) {
        tls_sock_close(s);
        return -1;
    }
    return 0;
}

/* REDIRECT, NO_LEADER, or a status saying the node does not (or no
 * longer) lead: what a follower, or a leader deposed mid-flood, answers. */
static int is_noleader(const struct msg *r)
{
    int st = r->type == MSG_ERROR || r->type == MSG_RESULT ? tls_sock_status(r) : 0;

    return r->type == MSG_REDIRECT || r->type == MSG_NO_LEADER || st == BATON_ENOTLEADER ||
           st == BATON_ENOLEADER || st == BATON_EUNAVAIL;
}

static void count_other(struct count *c, const struct msg *r)
{
    if (c->other++ == 0) c->first_other = r->type == MSG_ERROR || r->type == MSG_RESULT
                                              ? tls_sock_status(r)
                                              : -1000 - (int)r->type;
}

/* Read n answers, classifying each with judge (1 ran/ok, 0 refused, -1
 * other; noleader answers are counted before). 0, or -1 once the
 * connection ends or goes silent (the rest counted unanswered). */
static int read_answers(struct tls_sock *s, unsigned n, struct count *c,
                        int (*judge)(const struct msg *))
{
    for (unsigned i = 0; i < n; i++) {
        struct msg r;
        int j;

        if (tls_sock_recv_msg(s, &r, ANSWER_MS) != 0) {
            c->unanswered += n - i;
            return -1;
        }
        if (is_noleader(&r)) {
            c->noleader++;
        } else if ((j = judge(&r)) > 0) {
            c->ran++;
        } else if (j == 0) {
            c->refused++;
        } else {
            count_other(c, &r);
        }
        msg_free(&r);
    }
    return 0;
}

/* Another batch? For FLOOD_MS, at least two, at most FLOOD_MAX_BATCHES. */
static int more_batches(int batch, int64_t t0)
{
    return batch < 2 || (batch < FLOOD_MAX_BATCHES && now_ms() - t0 < FLOOD_MS);
}

/* ---- cache: one session, ack_below never advanced ----------------------------------- */

static int judge_cached(const struct msg *r)
{
    if (r->type != MSG_RESULT) return -1;
    return r->u.result.status == BATON_ELIMIT ? 0 : 1;
}

/* Request seq of the cache flood into b. */
static void put_cache_op(struct buf *b, uint64_t session, uint64_t seq)
{
    struct msg m;
    char name[32];

    memset(&m, 0, sizeof m);
    m.req_id = 1000 + seq;
    m.u.op.session = session;
    m.u.op.seq = seq;
    m.u.op.ack_below = 1; /* never advanced */
    m.u.op.wait_ms = BATON_WAIT_TRY;
    m.u.op.lock_delay_ms = BATON_LOCK_DELAY_DEFAULT;
    m.u.op.fence = 1;
    m.u.op.waiter = seq;
    switch (seq % 4) {
    case 0: /* a try-lock of a name of its own: granted, a hold */
        m.type = MSG_ACQUIRE;
        snprintf(name, sizeof name, "hostile/%" PRIu64, seq);
        break;
    case 1:
        m.type = MSG_CANCEL;
        snprintf(name, sizeof name, "hostile/none");
        break;
    default:
        m.type = MSG_RELEASE;
        snprintf(name, sizeof name, "hostile/none");
        break;
    }
    m.u.op.lock.p = name;
    m.u.op.lock.n = (uint16_t)strlen(name);
    if (proto_encode(b, &m) != 0) abort();
}

static int flood_cache(void)
{
    struct tls_sock s;
    struct msg m = {.type = MSG_OPEN_SESSION, .req_id = 2}, r;
    struct count c = {0};
    uint64_t session, seq = 1;
    int close_status = 1;
    int64_t t0;

    if (open_conn(&s, token) != 0) return 2;
    m.u.open_session.ttl_ms = 30000;
    if (tls_sock_request(&s, &m, &r, 10000) != 0) {
        tls_sock_close(&s);
        return 2;
    }
    if (r.type != MSG_SESSION) { /* no leader, say: the flood proves nothing */
        flog(logf_, "FLOOD cache node=%u nosession=%d", node_id,
             is_noleader(&r) ? -1 : tls_sock_status(&r));
        msg_free(&r);
        tls_sock_close(&s);
        return 0;
    }
    session = r.u.session.session;
    msg_free(&r);
    t0 = now_ms();
    for (int batch = 0; more_batches(batch, t0); batch++) {
        struct buf b = {0};
        for (int i = 0; i < FLOOD_BATCH; i++) put_cache_op(&b, session, seq++);
        c.sent += FLOOD_BATCH;
        if (tls_sock_send(&s, b.data, b.len) != 0 ||
            read_answers(&s, FLOOD_BATCH, &c, judge_cached) != 0 || c.noleader) {
            buf_free(&b);
            break;
        }
        buf_free(&b);
    }
    /* CLOSE_SESSION, acknowledging everything: never refused. */
    memset(&m, 0, sizeof m);
    m.type = MSG_CLOSE_SESSION;
    m.req_id = 3;
    m.u.op.session = session;
    m.u.op.seq = seq;
    m.u.op.ack_below = seq;
    if (tls_sock_request(&s, &m, &r, 10000) == 0) {
        close_status = tls_sock_status(&r);
        msg_free(&r);
    }
    tls_sock_close(&s);
    flog(logf_,
         "FLOOD cache node=%u session=%" PRIu64 " sent=%u ran=%u refused=%u noleader=%u "
         "other=%u first_other=%d unanswered=%u bound=%d close=%d ms=%lld",
         node_id, session, c.sent, c.ran, c.refused, c.noleader, c.other, c.first_other,
         c.unanswered, BATON_MAX_UNACKED, close_status, (long long)(now_ms() - t0));
    return 0;
}

/* ---- reads: pipelined lists ---------------------------------------------------------- */

static int judge_read(const struct msg *r)
{
    if (r->type == MSG_SESSIONS_R || r->type == MSG_LIST_LOCKS_R || r->type == MSG_LOCK_INFO_R)
        return 1;
    if (r->type == MSG_ERROR && r->u.error.code == BATON_ELIMIT) return 0; /* unread replies */
    return -1;
}

static void put_read(struct buf *b, unsigned i)
{
    static const char *const locks[] = {"hot0", "hot1", "rw0", "sem0"};
    struct msg m;

    memset(&m, 0, sizeof m);
    m.req_id = 10 + i;
    switch (i % 3) {
    case 0:
        m.type = MSG_LIST_SESSIONS;
        m.u.list_sessions.limit = BATON_MAX_LIST;
        break;
    case 1:
        m.type = MSG_LIST_LOCKS;
        m.u.list_locks.limit = BATON_MAX_LIST;
        break;
    default:
        m.type = MSG_LOCK_INFO;
        m.u.lock_info.lock.p = locks[i / 3 % 4];
        m.u.lock_info.lock.n = (uint16_t)strlen(m.u.lock_info.lock.p);
        break;
    }
    if (proto_encode(b, &m) != 0) abort();
}

static int flood_reads(void)
{
    struct tls_sock s;
    struct count c = {0};
    int64_t t0 = now_ms();

    if (open_conn(&s, token) != 0) return 2;
    for (int batch = 0; more_batches(batch, t0); batch++) {
        struct buf b = {0};
        for (unsigned i = 0; i < FLOOD_BATCH; i++) put_read(&b, c.sent + i);
        c.sent += FLOOD_BATCH;
        if (tls_sock_send(&s, b.data, b.len) != 0 ||
            read_answers(&s, FLOOD_BATCH, &c, judge_read) != 0) {
            buf_free(&b);
            break;
        }
        buf_free(&b);
    }
    tls_sock_close(&s);
    flog(logf_,
         "FLOOD reads node=%u sent=%u ok=%u refused=%u noleader=%u other=%u first_other=%d "
         "unanswered=%u ms=%lld",
         node_id, c.sent, c.ran, c.refused, c.noleader, c.other, c.first_other, c.unanswered,
         (long long)(now_ms() - t0));
    return 0;
}

/* ---- sessions: one principal up to its cap --------------------------------------------- */

/* OPEN_SESSION on s: the session id (> 0), or the answer's status, or
 * 1 for a noleader answer, 2 for none. */
static int64_t open_one(struct tls_sock *s, uint64_t req)
{
    struct msg m = {.type = MSG_OPEN_SESSION, .req_id = req}, r;
    int64_t rv;

    m.u.open_session.ttl_ms = 10000;
    if (tls_sock_request(s, &m, &r, 10000) != 0) return -2;
    rv = r.type == MSG_SESSION ? (int64_t)r.u.session.session
         : is_noleader(&r)     ? -1
         : r.type == MSG_ERROR || r.type == MSG_RESULT ? tls_sock_status(&r)
                                                       : -1000 - (int64_t)r.type;
    msg_free(&r);
    return rv;
}

static void close_one(struct tls_sock *s, uint64_t session, uint64_t req)
{
    struct msg m = {.type = MSG_CLOSE_SESSION, .req_id = req}, r;

    m.u.op.session = session;
    m.u.op.seq = 1;
    m.u.op.ack_below = 1;
    if (tls_sock_request(s, &m, &r, 10000) == 0) msg_free(&r);
}

static int flood_sessions(void)
{
    struct tls_sock s, o;
    uint64_t ids[1024];
    unsigned opened = 0, attempts = cap + 16 < 1024 ? cap + 16 : 1024;
    int64_t refusal = 0, bystander = -2;

    if (open_conn(&s, token) != 0) return 2;
    while (opened < attempts) {
        int64_t id = open_one(&s, 100 + opened);
        if (id <= 0) {
            refusal = id;
            break;
        }
        ids[opened++] = (uint64_t)id;
    }
    /* Another principal, at the hostile one's cap. */
    if (open_conn(&o, other_token) == 0) {
        bystander = open_one(&o, 5);
        if (bystander > 0) close_one(&o, (uint64_t)bystander, 6);
        tls_sock_close(&o);
    }
    for (unsigned i = 0; i < opened; i++) close_one(&s, ids[i], 2000 + i);
    tls_sock_close(&s);
    /* refusal: the status, -1 noleader, -2 none, 0 never refused */
    flog(logf_, "FLOOD sessions node=%u opened=%u cap=%u refusal=%lld bystander=%lld", node_id,
         opened, cap, (long long)refusal, (long long)(bystander > 0 ? 0 : bystander));
    return 0;
}

/* ---- prehello: big frames and trickles before HELLO ----------------------------------- */

/* What the node did with a connection that sent a big frame before HELLO:
 * 0 ERROR(ETOOBIG) (then closed), 1 closed without it, 2 left open
 * (nothing by the deadline, or within 100 ms after it), -1 something
 * else. */
static int big_outcome(struct tls_sock *s, int64_t deadline)
{
    int64_t left = deadline - now_ms();
    struct msg r;
    int rv;

    if (tls_sock_recv_msg(s, &r, left > 100 ? (int)left : 100) != 0)
        return strstr(s->err, "within") || strstr(s->err, "temporarily") ? 2 : 1;
    rv = r.type == MSG_ERROR && r.u.error.code == BATON_ETOOBIG ? 0 : -1;
    msg_free(&r);
    return rv;
}

static int raw_connect(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

    if (fd < 0) return -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

struct trickle {
    struct tls_sock s; /* s.t NULL: plaintext */
    const uint8_t *bytes;
    size_t n, off;
    int open, answered, served;
    int64_t closed_ms;
};

/* A HELLO frame (the hostile's own, so that were it read whole it would
 * be served) into b. */
static void put_hello(struct buf *b)
{
    struct msg h = {.type = MSG_HELLO, .req_id = 1};

    h.u.hello.version = BATON_PROTO_VERSION;
    h.u.hello.token.p = token;
    h.u.hello.token.n = (uint16_t)strlen(token);
    if (proto_encode(b, &h) != 0) abort();
}

/* Look at trickle t: closed, answered, served? */
static void trickle_poll(struct trickle *t, int64_t t0)
{
    struct pollfd p = {.fd = t->s.fd, .events = POLLIN};
    struct msg r;

    if (poll(&p, 1, 0) != 1) return;
    if (t->s.t == NULL) {
        uint8_t tmp[512];
        ssize_t got = recv(t->s.fd, tmp, sizeof tmp, MSG_DONTWAIT);
        if (got > 0 || (got < 0 && errno == EAGAIN)) return; /* a TLS alert, say */
    } else if (tls_sock_recv_msg(&t->s, &r, 50) == 0) {
        if (r.type == MSG_HELLO_OK)
            t->served = 1;
        else
            t->answered = 1; /* ERROR(ETIMEDOUT), expected */
        msg_free(&r);
        return;
    } else if (strstr(t->s.err, "within") || strstr(t->s.err, "temporarily")) {
        return;
    }
    t->open = 0;
    t->closed_ms = now_ms() - t0;
}

static int flood_prehello(void)
{
    static const uint8_t record[16] = {0x16, 0x03, 0x01, 0x40, 0x00}; /* a 16 KiB record */
    static struct trickle tr[PREHELLO_TRICKLE];
    static struct tls_sock bigs[PREHELLO_BIG];
    uint8_t *frame = calloc(1, PROTO_HDR_LEN + PREHELLO_BODY);
    struct buf hello = {0};
    unsigned big[3] = {0}, big_other = 0, t_closed = 0, t_open = 0, t_served = 0,
             t_answered = 0;
    int64_t t0, slowest = 0;
    struct tls_sock s;
    int served = 0;

    if (frame == NULL) return 2;
    le_put_u32(frame, BATON_MAX_FRAME); /* u32 len, u16 type, u64 req_id: a 1 MiB ACQUIRE */
    le_put_u16(frame + 4, MSG_ACQUIRE);
    le_put_u64(frame + 6, 9);
    /* All of them at once, then what each got (within 10 s). */
    for (int i = 0; i < PREHELLO_BIG; i++) {
        bigs[i].fd = -1;
        if (tls_sock_connect(&bigs[i], port, &cfg, 5000) != 0) {
            tls_sock_close(&bigs[i]);
            big[1]++; /* refused at once: closed */
            continue;
        }
        /* the node may close it half-way */
        (void)tls_sock_send(&bigs[i], frame, PROTO_HDR_LEN + PREHELLO_BODY);
    }
    t0 = now_ms();
    for (int i = 0; i < PREHELLO_BIG; i++) {
        int o;
        if (bigs[i].fd < 0) continue;
        o = big_outcome(&bigs[i], t0 + 10000);
        if (o < 0)
            big_other++;
        else
            big[o]++;
        tls_sock_close(&bigs[i]);
    }
    free(frame);
    put_hello(&hello);
    t0 = now_ms();
    for (int i = 0; i < PREHELLO_TRICKLE; i++) {
        struct trickle *t = &tr[i];
        memset(t, 0, sizeof *t);
        t->s.fd = -1;
        if (i % 2 == 0) {
            if (tls_sock_connect(&t->s, port, &cfg, 5000) != 0) continue;
            t->bytes = hello.data;
            t->n = hello.len;
        } else {
            if ((t->s.fd = raw_connect()) < 0) continue;
            t->bytes = record;
            t->n = sizeof record;
        }
        t->open = 1;
    }
    for (int64_t now = now_ms(); now - t0 < TRICKLE_MAX_MS; now = now_ms()) {
        int open = 0;
        for (int i = 0; i < PREHELLO_TRICKLE; i++) {
            struct trickle *t = &tr[i];
            if (!t->open) continue;
            if (t->off < t->n) {
                int bad = t->s.t ? tls_sock_send(&t->s, t->bytes + t->off, 1) != 0
                                 : send(t->s.fd, t->bytes + t->off, 1, MSG_NOSIGNAL) != 1;
                if (!bad) t->off++;
            }
            trickle_poll(t, t0);
            open += t->open;
        }
        if (!open) break;
        sleep_ms(250);
    }
    for (int i = 0; i < PREHELLO_TRICKLE; i++) {
        struct trickle *t = &tr[i];
        if (t->s.fd < 0) continue;
        t_open += t->open;
        t_closed += !t->open;
        t_served += t->served;
        t_answered += t->answered;
        if (!t->open && t->closed_ms > slowest) slowest = t->closed_ms;
        tls_sock_close(&t->s);
    }
    buf_free(&hello);
    /* The node still serves a client that says HELLO. */
    if (open_conn(&s, token) == 0) {
        served = 1;
        tls_sock_close(&s);
    }
    flog(logf_,
         "FLOOD prehello node=%u big=%d big_refused=%u big_closed=%u big_open=%u big_other=%u "
         "trickle=%u trickle_closed=%u trickle_answered=%u trickle_open=%u trickle_served=%u "
         "slowest_close_ms=%lld served=%d",
         node_id, PREHELLO_BIG, big[0], big[1], big[2], big_other, t_closed + t_open, t_closed,
         t_answered, t_open, t_served, (long long)slowest, served);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"flood", required_argument, NULL, 'f'},  {"port", required_argument, NULL, 'p'},
        {"node", required_argument, NULL, 'n'},   {"cacert", required_argument, NULL, 'c'},
        {"token", required_argument, NULL, 'T'},  {"other-token", required_argument, NULL, 'O'},
        {"cap", required_argument, NULL, 'm'},    {"log", required_argument, NULL, 'l'},
        {0},
    };
    const char *kind = NULL, *logpath = NULL;
    int o, rv;

    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'f': kind = optarg; break;
        case 'p': port = atoi(optarg); break;
        case 'n': node_id = (unsigned)atoi(optarg); break;
        case 'c': cfg.ca_file = optarg; break;
        case 'T': token = optarg; break;
        case 'O': other_token = optarg; break;
        case 'm': cap = (unsigned)atoi(optarg); break;
        case 'l': logpath = optarg; break;
        default: goto usage;
        }
    }
    if (kind == NULL || logpath == NULL || token == NULL || other_token == NULL || port <= 0 ||
        optind != argc)
        goto usage;
    if ((logf_ = fopen(logpath, "a")) == NULL) {
        perror(logpath);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    rv = strcmp(kind, "cache") == 0      ? flood_cache()
         : strcmp(kind, "reads") == 0    ? flood_reads()
         : strcmp(kind, "sessions") == 0 ? flood_sessions()
         : strcmp(kind, "prehello") == 0 ? flood_prehello()
                                         : -1;
    if (rv == 2) flog(logf_, "FLOOD %s node=%u nostart=1", kind, node_id);
    fclose(logf_);
    if (rv < 0) goto usage;
    return rv;

usage:
    fprintf(stderr, "usage: faultflood --flood cache|reads|sessions|prehello --port P --node ID "
                    "--cacert FILE --token T --other-token T2 --cap N --log FILE\n");
    return 2;
}
