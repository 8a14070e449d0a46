/*
 * dispatch.c -- what batond does with one decoded client request.
 *
 * proto/msg_table.h says, for every message type, whether a client may
 * send it and whether only the ready leader serves it; the handler table
 * below says which function serves it. dispatch() checks the first and
 * calls the second: the first frame must be HELLO, a server-to-client type
 * is refused, a request for the leader gets REDIRECT (or NO_LEADER) on any
 * other node, and access.c decides whether the connection's principal may
 * send it (HELLO itself authenticates the connection).
 *
 * The session's lock requests (OPEN_SESSION, ACQUIRE, RELEASE, CANCEL,
 * CLOSE_SESSION) are served here: each becomes a command in this loop
 * turn's batch (batch.c), with a completion that answers it once its entry
 * is applied.
 */
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/lockreq.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/server_int.h"

typedef void handler_fn(struct conn *c, const struct msg *m);

static void hello(struct conn *c, const struct msg *m)
{
    struct msg r = {.type = MSG_HELLO_OK, .req_id = m->req_id};

    if (m->u.hello.version < BATON_PROTO_VERSION_MIN || m->u.hello.version > BATON_PROTO_VERSION) {
        conn_send_error(c, m->req_id, BATON_EVERSION,
                        "protocol version %u not supported; this server speaks %u to %u",
                        m->u.hello.version, BATON_PROTO_VERSION_MIN, BATON_PROTO_VERSION);
        conn_close(c);
        return;
    }
    if (!access_hello(c, m)) return; /* answered ERROR(BATON_EAUTH), closing */
    conn_set_authenticated(c);
    r.u.hello_ok.version = m->u.hello.version;
    r.u.hello_ok.node_id = c->srv->cfg.node.id;
    r.u.hello_ok.principal.p = c->who->name;
    r.u.hello_ok.principal.n = (uint16_t)strlen(c->who->name);
    r.u.hello_ok.role = c->who->role;
    conn_send(c, &r);
}

static uint32_t clamp_ttl(const struct srv_config *cfg, uint32_t ttl)
{
    if (ttl == 0) return cfg->default_ttl_ms;
    if (ttl < cfg->min_ttl_ms) return cfg->min_ttl_ms;
    if (ttl > cfg->max_ttl_ms) return cfg->max_ttl_ms;
    return ttl;
}

/* The lock-delay a hold gets: the client's choice within the server's
 * bound, or the server's default. In the command, 0 means none. */
static int32_t effective_lock_delay(const struct srv_config *cfg, int32_t asked)
{
    if (asked == BATON_LOCK_DELAY_DEFAULT) return (int32_t)cfg->lock_delay_ms;
    if (asked < 0) return 0;
    if ((uint32_t)asked > cfg->max_lock_delay_ms) return (int32_t)cfg->max_lock_delay_ms;
    return asked;
}

/* An applied OPEN_SESSION: the leader starts the session's lease (or
 * renews it, for a re-sent OPEN_SESSION answered with the session its
 * nonce names) and attaches it to the connection, which gets SESSION. A
 * connection that is gone gets nothing: least of all the session's
 * pushes, which a stale copy of the OPEN_SESSION read from a dead
 * connection must not take from the live one. */
static void open_session_done(struct server *srv, const struct pending *p,
                              const struct cmd_outcome *o)
{
    struct conn *c = p->conn_id ? conn_get(srv, p->conn_id) : NULL;
    struct msg m = {.type = MSG_SESSION, .req_id = p->req_id};

    if (o->status != 0 || o->r->status != 0) {
        liveness_open_release(srv, p->owner);
        reply_result(srv, p, o);
        return;
    }
    m.u.session.ttl_ms = liveness_opened(srv, o->r->value, p->ttl_ms, p->owner);
    if (c == NULL) return;
    push_attach(srv, o->r->value, p->conn_id);
    m.u.session.session = o->r->value;
    conn_send(c, &m);
}

/* The metrics of an ACQUIRE's outcome: by outcome; a queued one's place
 * in its queue, the start of its wait, and its lock's queue length. */
static void acquire_count(const struct pending *p, const struct cmd_outcome *o)
{
    unsigned outcome = ACQ_ERROR;

    if (o->status != 0) outcome = ACQ_UNKNOWN;
    else if (o->r->status == BATON_EWOULDBLOCK) outcome = ACQ_BUSY;
    else if (o->r->status == 0 && o->r->kind == RESULT_GRANTED) outcome = ACQ_GRANTED;
    else if (o->r->status == 0 && o->r->kind == RESULT_QUEUED) outcome = ACQ_QUEUED;
    metrics_inc_label(M_ACQUIRES, outcome);
    if (outcome != ACQ_QUEUED) return;
    metrics_observe(M_QUEUE_LENGTH, (double)o->r->value);
    metrics_wait_start(p->session, p->seq);
    metrics_top_note(p->name, p->name_len, (uint32_t)o->r->value);
}

/* An applied ACQUIRE that queued with a deadline gets its timer; then it
 * is answered like every lock request, with RESULT. */
static void acquire_done(struct server *srv, const struct pending *p, const struct cmd_outcome *o)
{
    acquire_count(p, o);
    if (o->status == 0 && o->r->status == 0 && o->r->kind == RESULT_QUEUED && p->wait_ms > 0)
        deadline_wait_arm(srv, p->session, p->seq, p->wait_ms, p->name, p->name_len);
    reply_result(srv, p, o);
}

/* An applied RELEASE that released a lock is counted; then answered. */
static void release_done(struct server *srv, const struct pending *p, const struct cmd_outcome *o)
{
    if (o->status == 0 && o->r->status == 0) metrics_inc(M_RELEASES);
    reply_result(srv, p, o);
}

/* Batch cmd for the request m of c, to be completed by done. Commands of a
 * session renew its lease and attach it to this connection; an unknown or
 * expiring session gets RESULT(BATON_ESESSION). */
static void propose(struct conn *c, const struct msg *m, const struct cmd *cmd,
                    pending_done_fn *done)
{
    struct pending p;
    const struct principal *who = c->who;

    if (cmd->session && !liveness_touch(c->srv, cmd->session)) {
        struct msg r = {.type = MSG_RESULT, .req_id = m->req_id};
        r.u.result.status = BATON_ESESSION;
        conn_send(c, &r);
        return;
    }
    if (cmd->session) push_attach(c->srv, cmd->session, c->id);
    if (disk_refuse(c, m->req_id, cmd)) return; /* answered ERROR(BATON_ENOSPC) */
    if (level_refuse(c, m->req_id, cmd)) return; /* answered ERROR(BATON_EVERSION) */
    if (cmd->type == CMD_OPEN_SESSION) {
        char why[BATON_MAX_ERRMSG];

        if (liveness_open_reserve(c->srv, who, why, sizeof why) != 0) {
            metrics_inc_label(M_REFUSALS, REF_MAX_SESSIONS);
            conn_send_error(c, m->req_id, BATON_ELIMIT, "%s", why);
            return;
        }
    }
    pending_init(&p, done, c->id, m->req_id, cmd);
    p.owner = who->key;
    batch_add(c->srv, cmd, &p);
}

/*
 * A re-sent OPEN_SESSION whose session is open already -- its nonce names
 * the session in the applied state -- is answered at once, as a read is:
 * that session's OPEN_SESSION is committed, and proposing it again would
 * cost a round trip and, for a principal at its max-sessions, an ELIMIT
 * for a session it has. (A re-send that arrives while the first is still
 * in flight is proposed, and the store answers it with the same session.)
 * Returns false when there is no such session with a live lease.
 */
static bool open_resent(struct conn *c, const struct msg *m, const struct cmd *cmd)
{
    struct msg r = {.type = MSG_SESSION, .req_id = m->req_id};
    uint64_t session;

    if (cmd->seq == 0 ||
        store_nonce_session(c->srv->store, cmd->seq, cmd->owner, cmd->owner_len, &session) != 0)
        return false;
    r.u.session.ttl_ms = liveness_resumed(c->srv, session);
    if (r.u.session.ttl_ms == 0) return false;
    push_attach(c->srv, session, c->id);
    r.u.session.session = session;
    conn_send(c, &r);
    return true;
}

static void open_session(struct conn *c, const struct msg *m)
{
    struct cmd cmd = {.type = CMD_OPEN_SESSION};

    cmd.ttl_ms = clamp_ttl(&c->srv->cfg, m->u.open_session.ttl_ms);
    cmd.name = m->u.open_session.client_name.p;
    cmd.name_len = m->u.open_session.client_name.n;
    /* The owner is the connection's principal; the store records it with
     * the session (storage/cmd.h, CMD_OPEN_OWNED). The anonymous
     * principal's empty name keeps the entry readable by older binaries. */
    cmd.owner = c->who->name;
    cmd.owner_len = (uint16_t)strlen(c->who->name);
    /* The client's nonce goes in seq (storage/cmd.h): the store answers a
     * re-sent OPEN_SESSION with the session it opened. */
    cmd.seq = m->u.open_session.nonce;
    if (open_resent(c, m, &cmd)) return;
    propose(c, m, &cmd, open_session_done);
}

/* The command each lock request becomes. */
static const uint8_t op_cmd[MSG_TYPE_MAX_] = {
    [MSG_ACQUIRE] = CMD_ACQUIRE,
    [MSG_ACQUIRE_MANY] = CMD_ACQUIRE_MANY,
    [MSG_ACQUIRE2] = CMD_ACQUIRE,
    [MSG_PROCLAIM] = CMD_SET_VALUE,
    [MSG_RELEASE] = CMD_RELEASE,
    [MSG_CANCEL] = CMD_CANCEL,
    [MSG_CLOSE_SESSION] = CMD_CLOSE_SESSION,
};

/*
 * An op's keep list as the command carries it (u64 little-endian each,
 * into buf), after checking what the store would refuse anyway
 * (storage/apply.c): strictly increasing seqs, none 0, all below
 * ack_below. 0, or -1 if the list is not so.
 */
static int keep_list(const struct msg_op *op, uint8_t buf[8 * BATON_MAX_KEEP])
{
    uint64_t prev = 0;

    for (uint32_t i = 0; i < op->n_keep; i++) {
        uint64_t seq = op->keep[i].seq;
        if (seq <= prev || seq >= op->ack_below) return -1;
        le_put_u64(buf + 8 * i, seq);
        prev = seq;
    }
    return 0;
}

/* An ACQUIRE's or ACQUIRE_MANY's options and names (proto/lockreq.h):
 * refused with a clear ERROR before anything is proposed when they cannot
 * be right whatever the lock's state (the state machine checks them again,
 * and checks the limit against the lock's: RESULT(BATON_EINVAL) with the
 * lock's limit as its value). Returns true if refused. */
static bool acquire_bad(struct conn *c, const struct msg *m)
{
    const struct msg_op *op = &m->u.op;
    struct lockreq r = {.wait_ms = op->wait_ms, .lock_delay_ms = op->lock_delay_ms,
                        .mode = op->mode, .limit = op->limit, .reentrant = op->reentrant,
                        .many = m->type == MSG_ACQUIRE_MANY, .n_names = 1 + (size_t)op->n_more};
    const char *name[BATON_MAX_MANY], *why = NULL;
    size_t len[BATON_MAX_MANY];
    int rv = lockreq_check(&r, &why);

    if (rv == 0 && (op->flags & ~BATON_ACQ_FLAGS_ALL) != 0) {
        rv = BATON_EINVAL;
        why = "acquire: unknown flags";
    }
    if (rv == 0 && r.many && op->n_more == 0) {
        rv = BATON_EINVAL; /* one name is an ACQUIRE */
        why = "acquire_many: a multi-lock needs 2 to 64 names";
    }
    if (rv == 0 && r.many) {
        name[0] = op->lock.p;
        len[0] = op->lock.n;
        for (uint32_t i = 0; i < op->n_more; i++) { /* <= BATON_MAX_MANY - 1: the decoder */
            name[1 + i] = op->more[i].name.p;
            len[1 + i] = op->more[i].name.n;
        }
        rv = lockreq_names_check(r.n_names, name, len, &why);
    }
    if (rv != 0) conn_send_error(c, m->req_id, rv, "%s", why);
    return rv != 0;
}

/* ACQUIRE_MANY's more names as the command carries them (u16 length +
 * bytes each, into buf; storage/cmd.h), checked by acquire_bad. Returns
 * the encoded length. */
static size_t more_names(const struct msg *m,
                         uint8_t buf[(BATON_MAX_MANY - 1) * (2 + BATON_MAX_NAME)])
{
    const struct msg_op *op = &m->u.op;
    size_t len = 0;

    for (uint32_t i = 0; i < op->n_more; i++) {
        const struct pstr *a = &op->more[i].name;
        le_put_u16(buf + len, (uint16_t)a->n);
        memcpy(buf + len + 2, a->p, a->n);
        len += 2 + a->n;
    }
    return len;
}

/* Is the op's value longer than --max-value? Then it is answered
 * ERROR(BATON_ETOOBIG) and nothing is proposed. */
static bool value_too_long(struct conn *c, const struct msg *m)
{
    unsigned max = c->srv->cfg.max_value;

    if (m->u.op.value.n <= max) return false;
    conn_send_error(c, m->req_id, BATON_ETOOBIG, "%s: a value of %u bytes; this cluster takes %u",
                    msg_type_name(m->type), (unsigned)m->u.op.value.n, max);
    return true;
}

/* ACQUIRE, ACQUIRE2, ACQUIRE_MANY, RELEASE, CANCEL, CLOSE_SESSION, PROCLAIM:
 * one body (struct msg_op) into one command; the fields a type does not
 * carry are 0. */
static void lock_op(struct conn *c, const struct msg *m)
{
    const struct msg_op *op = &m->u.op;
    uint8_t keep[8 * BATON_MAX_KEEP], more[(BATON_MAX_MANY - 1) * (2 + BATON_MAX_NAME)];
    bool acquire =
        m->type == MSG_ACQUIRE || m->type == MSG_ACQUIRE2 || m->type == MSG_ACQUIRE_MANY;
    struct cmd cmd = {
        .type = op_cmd[m->type],
        .session = op->session,
        .seq = op->seq,
        .ack_below = op->ack_below,
        .n_keep = (uint16_t)op->n_keep, /* <= BATON_MAX_KEEP: checked by the decoder */
        .keep = keep,
        .wait_ms = op->wait_ms,
        .fence = op->fence,
        .waiter = op->waiter,
        .mode = op->mode,
        .limit = op->limit,
        .reentrant = op->reentrant,
        .name = op->lock.p,
        .name_len = op->lock.n,
        .flags = op->flags,
        .value_len = op->value.n,
        .value = (const uint8_t *)op->value.p,
    };

    if (acquire && acquire_bad(c, m)) return;
    if (value_too_long(c, m)) return;
    if (m->type == MSG_ACQUIRE_MANY) {
        cmd.more_len = more_names(m, more);
        cmd.more = more;
        cmd.n_more = (uint8_t)op->n_more; /* <= BATON_MAX_MANY - 1: checked by the decoder */
    }
    if (op->session == 0 || op->seq == 0) {
        conn_send_error(c, m->req_id, BATON_EINVAL, "%s needs a session and a non-zero seq",
                        msg_type_name(m->type));
        return;
    }
    if (keep_list(op, keep) != 0) {
        conn_send_error(c, m->req_id, BATON_EINVAL,
                        "%s: the keep list must be increasing non-zero seqs below ack_below",
                        msg_type_name(m->type));
        return;
    }
    if (acquire) {
        cmd.lock_delay_ms =
            access_lock_delay_cap(c, effective_lock_delay(&c->srv->cfg, op->lock_delay_ms));
        propose(c, m, &cmd, acquire_done);
    } else {
        propose(c, m, &cmd, m->type == MSG_RELEASE ? release_done : reply_result);
    }
}

/* A keepalive is not a log entry: the leader renews the lease in memory. */
static void keepalive(struct conn *c, const struct msg *m)
{
    keepalive_received(c, m->req_id, m->u.keepalive.session);
}

/* Who serves each request (proto/msg_table.h lists them all). */
static handler_fn *const handlers[MSG_TYPE_MAX_] = {
    [MSG_HELLO] = hello,
    [MSG_OPEN_SESSION] = open_session,
    [MSG_ACQUIRE] = lock_op,
    [MSG_ACQUIRE_MANY] = lock_op,
    [MSG_ACQUIRE2] = lock_op,
    [MSG_PROCLAIM] = lock_op,
    [MSG_LOCK_STATE] = keepalive_read_state,
    [MSG_RELEASE] = lock_op,
    [MSG_CANCEL] = lock_op,
    [MSG_CLOSE_SESSION] = lock_op,
    [MSG_KEEPALIVE] = keepalive,
    [MSG_STATUS] = admin_status,
    [MSG_LOCK_INFO] = admin_lock_info,
    [MSG_LIST_LOCKS] = admin_list_locks,
    [MSG_LIST_SESSIONS] = admin_list_sessions,
    [MSG_FORCE_RELEASE] = admin_force_release,
    [MSG_EXPIRE_SESSION] = admin_expire_session,
    [MSG_TRANSFER] = admin_transfer,
    [MSG_WATCH] = watch_request,
    [MSG_WATCH2] = watch2_request,
    [MSG_UNWATCH] = watch2_unwatch,
    [MSG_SNAPSHOT] = admin_snapshot,
    [MSG_MEMBERS] = admin_members,
    [MSG_MEMBER_REMOVE] = admin_member_remove,
    [MSG_MEMBER_ADD] = admin_member_add,
    [MSG_CHECK] = admin_check,
    [MSG_LOST_HOLDS] = keepalive_lost_holds,
    [MSG_METRICS] = observe_metrics,
    [MSG_SNAPSHOT_SAVE] = backup_save,
};

void dispatch(struct conn *c, const struct msg *m)
{
    const struct msg_info *info = msg_info(m->type);

    if (m->type != MSG_HELLO && !c->hello) {
        conn_send_error(c, m->req_id, BATON_EPROTO, "the first message must be HELLO, not %s",
                        msg_type_name(m->type));
        conn_close(c);
        return;
    }
    if (info == NULL || info->dir != MSG_C2S || handlers[m->type] == NULL) {
        conn_send_error(c, m->req_id, BATON_EPROTO, "%s is not a request", msg_type_name(m->type));
        return;
    }
    if (info->leader && !c->srv->ready) {
        reply_not_leader(c, m->req_id);
        return;
    }
    if (m->type != MSG_HELLO && !access_allowed(c, m)) return; /* answered ERROR(BATON_EPERM) */
    handlers[m->type](c, m);
}
