/*
 * msg_samples.c -- one sample message of every wire type (msg_samples.h).
 */
#include "tests/lib/msg_samples.h"

#include <string.h>

#include "baton/baton_defs.h"

static struct pstr S(const char *s)
{
    struct pstr p = {s, (uint16_t)strlen(s)};
    return p;
}

static struct msg_member members[3];
static struct msg_member_info infos[2];
static struct msg_waiter waiters[2] = {{7, 3, -1, BATON_MODE_EXCLUSIVE},
                                       {9, 1, 500, BATON_MODE_SHARED}};
static struct msg_holder holders[2] = {{5, 2, 40, 100, BATON_MODE_SHARED, 1},
                                       {6, 4, 42, 103, BATON_MODE_SHARED, 2}};
static struct msg_lock_summary locks[2];
static struct msg_session_summary sessions[2];
static struct msg_lost_hold lost[2];
static struct msg_seq kept[1] = {{1}}; /* ACQUIRE 1 was answered QUEUED */
static struct msg_text_chunk chunks[2];
static struct msg_lock_name more[2];
static struct msg_holder_v holders_v[1];
static struct msg_waiter_v waiters_v[2];

static void init_lists(void)
{
    holders_v[0] = (struct msg_holder_v){7, 3, 41, 120, BATON_MODE_EXCLUSIVE, 1, S("web-1"),
                                         S("10.0.0.1:80")};
    waiters_v[0] = (struct msg_waiter_v){9, 2, -1, BATON_MODE_EXCLUSIVE, S("web-2"),
                                         S("10.0.0.2:80")};
    waiters_v[1] = (struct msg_waiter_v){11, 5, 500, BATON_MODE_EXCLUSIVE, S(""), S("")};
    members[0] = (struct msg_member){1, S("127.0.0.1:7101"), S("127.0.0.1:7001")};
    members[1] = (struct msg_member){2, S("127.0.0.1:7102"), S("127.0.0.1:7002")};
    members[2] = (struct msg_member){3, S("127.0.0.1:7103"), S("127.0.0.1:7003")};
    infos[0] = (struct msg_member_info){1, MEMBER_VOTER, S("127.0.0.1:7101"), S("127.0.0.1:7001")};
    infos[1] = (struct msg_member_info){4, MEMBER_SPARE, S("127.0.0.1:7104"), S("")};
    locks[0] = (struct msg_lock_summary){S("jobs/1"), 7, 41, 2, BATON_MODE_SHARED, 1, 3};
    locks[1] = (struct msg_lock_summary){S("jobs/2"), 0, 0, 0, BATON_MODE_EXCLUSIVE, 8, 0};
    sessions[0] = (struct msg_session_summary){7, 10000, 12, S("worker"), 1, 0, S("alice")};
    sessions[1] = (struct msg_session_summary){9, 3000, 15, S(""), 0, 2, S("")};
    lost[0] = (struct msg_lost_hold){3, 41, BATON_ELOST, S("jobs/1")};
    lost[1] = (struct msg_lost_hold){5, 44, BATON_ELOST, S("jobs/2")};
    more[0] = (struct msg_lock_name){S("jobs/2")};
    more[1] = (struct msg_lock_name){S("db")};
    chunks[0] = (struct msg_text_chunk){S("# TYPE baton_grants_total counter\n")};
    chunks[1] = (struct msg_text_chunk){S("baton_grants_total 3\n")};
}

static void lock_info(struct msg_lock_info_r *li)
{
    li->held = 1;
    li->holder_session = 5;
    li->holder_waiter = 2;
    li->fence = 40;
    li->granted_index = 100;
    li->mode = BATON_MODE_SHARED;
    li->limit = 1;
    li->total_holders = 2;
    li->n_holders = 2;
    li->holders = holders;
    li->total_waiters = 2;
    li->n_waiters = 2;
    li->waiters = waiters;
    li->lock = S("jobs/1");
}

int msg_sample(int type, struct msg *m)
{
    memset(m, 0, sizeof *m);
    init_lists();
    m->type = (uint16_t)type;
    m->req_id = 1000 + (uint64_t)type;
    switch (type) {
    case MSG_HELLO:
        m->u.hello.version = BATON_PROTO_VERSION;
        m->u.hello.client_name = S("fuzz-seed");
        m->u.hello.token = S("0123456789abcdef");
        break;
    case MSG_HELLO_OK:
        m->u.hello_ok.version = BATON_PROTO_VERSION;
        m->u.hello_ok.node_id = 2;
        m->u.hello_ok.principal = S("alice");
        m->u.hello_ok.role = MSG_ROLE_LOCK;
        break;
    case MSG_OPEN_SESSION:
        m->u.open_session.ttl_ms = 10000;
        m->u.open_session.client_name = S("worker");
        m->u.open_session.nonce = 0x0123456789abcdefull;
        break;
    case MSG_SESSION:
        m->u.session.session = 7;
        m->u.session.ttl_ms = 10000;
        break;
    case MSG_ACQUIRE:
        m->u.op.session = 7;
        m->u.op.seq = 1;
        m->u.op.ack_below = 1;
        m->u.op.wait_ms = BATON_WAIT_FOREVER;
        m->u.op.lock = S("jobs/1");
        m->u.op.lock_delay_ms = 250;
        m->u.op.mode = BATON_MODE_SHARED;
        m->u.op.reentrant = 1;
        break;
    case MSG_RELEASE:
        m->u.op.session = 7;
        m->u.op.seq = 2;
        m->u.op.ack_below = 2;
        m->u.op.n_keep = 1;
        m->u.op.keep = kept;
        m->u.op.fence = 41;
        m->u.op.lock = S("jobs/1");
        break;
    case MSG_CANCEL:
        m->u.op.session = 7;
        m->u.op.seq = 3;
        m->u.op.ack_below = 3;
        m->u.op.n_keep = 1;
        m->u.op.keep = kept;
        m->u.op.waiter = 1;
        m->u.op.lock = S("jobs/1");
        break;
    case MSG_CLOSE_SESSION:
        m->u.op.session = 7;
        m->u.op.seq = 4;
        m->u.op.ack_below = 4;
        break;
    case MSG_KEEPALIVE:
        m->u.keepalive.session = 7;
        break;
    case MSG_RESULT:
        m->u.result.status = BATON_EWOULDBLOCK;
        m->u.result.kind = RESULT_QUEUED;
        m->u.result.value = 2;
        break;
    case MSG_GRANTED:
        m->u.push.session = 7;
        m->u.push.waiter = 1;
        m->u.push.fence = 42;
        m->u.push.lock = S("jobs/1");
        break;
    case MSG_WAIT_FAILED:
        m->u.push.session = 7;
        m->u.push.waiter = 5;
        m->u.push.status = BATON_ETIMEDOUT;
        m->u.push.lock = S("jobs/2");
        break;
    case MSG_STATUS:
    case MSG_NO_LEADER:
    case MSG_SNAPSHOT:
    case MSG_MEMBERS:
    case MSG_CHECK:
    case MSG_SNAPSHOT_SAVE:
        break;
    case MSG_STATUS_R:
        m->u.status_r.node_id = 1;
        m->u.status_r.role = ROLE_LEADER;
        m->u.status_r.leader_id = 1;
        m->u.status_r.term = 3;
        m->u.status_r.last_index = 120;
        m->u.status_r.commit_index = 121;
        m->u.status_r.applied_index = 119;
        m->u.status_r.n_members = 3;
        m->u.status_r.members = members;
        m->u.status_r.state_digest = 0x1234567890abcdefull;
        m->u.status_r.auth_digest = 0x0fedcba987654321ull;
        m->u.status_r.check_index = 0x73;
        m->u.status_r.content_hash = 0x8877665544332211ull;
        m->u.status_r.fault_kind = FAULT_APPLY;
        m->u.status_r.fault = BATON_ENOSPC;
        m->u.status_r.fault_index = 118;
        break;
    case MSG_LOCK_INFO:
        m->u.lock_info.lock = S("jobs/1");
        break;
    case MSG_LOCK_INFO_R:
        lock_info(&m->u.lock_info_r);
        break;
    case MSG_LIST_LOCKS:
        m->u.list_locks.prefix = S("jobs/");
        m->u.list_locks.limit = 100;
        break;
    case MSG_LIST_LOCKS_R:
        m->u.list_locks_r.n = 2;
        m->u.list_locks_r.items = locks;
        m->u.list_locks_r.more = 1;
        break;
    case MSG_REDIRECT:
        m->u.redirect.leader_id = 3;
        m->u.redirect.client_addr = S("127.0.0.1:7003");
        break;
    case MSG_ERROR:
        m->u.error.code = BATON_EMALFORMED;
        m->u.error.message = S("cannot decode ACQUIRE frame: malformed data");
        break;
    case MSG_LOST:
        m->u.push.session = 7;
        m->u.push.waiter = 1;
        m->u.push.fence = 42;
        m->u.push.status = BATON_ESESSION;
        m->u.push.lock = S("jobs/1");
        break;
    case MSG_SESSION_EXPIRED:
        m->u.session_expired.session = 7;
        break;
    case MSG_FORCE_RELEASE:
        m->u.force_release.fence = 42;
        m->u.force_release.flags = BATON_FORCE_NOW;
        m->u.force_release.lock = S("jobs/1");
        break;
    case MSG_FORCE_RELEASE_R:
        m->u.force_release_r.status = BATON_ENOTHELD;
        m->u.force_release_r.lost_session = 7;
        m->u.force_release_r.lost_fence = 42;
        m->u.force_release_r.new_session = 9;
        m->u.force_release_r.new_fence = 43;
        m->u.force_release_r.delay_ms = 10000;
        m->u.force_release_r.cur_fence = 44;
        break;
    case MSG_EXPIRE_SESSION:
        m->u.expire_session.session = 9;
        break;
    case MSG_TRANSFER:
        m->u.transfer.id = 2;
        break;
    case MSG_TRANSFER_R:
        m->u.transfer_r.leader_id = 3;
        break;
    case MSG_LIST_SESSIONS:
        m->u.list_sessions.after = 6;
        m->u.list_sessions.limit = 10;
        break;
    case MSG_SESSIONS_R:
        m->u.sessions_r.n = 2;
        m->u.sessions_r.items = sessions;
        m->u.sessions_r.more = 1;
        break;
    case MSG_WATCH:
        m->u.watch.lock = S("jobs/1");
        break;
    case MSG_WATCH_EVENT:
        m->u.watch_event.seq = 2;
        lock_info(&m->u.watch_event.info);
        m->u.watch_event.info.delayed = 1;
        break;
    case MSG_SNAPSHOT_R:
        m->u.snapshot_r.index = 8193;
        break;
    case MSG_CHECK_R:
        m->u.check_r.index = 8194;
        break;
    case MSG_ACQUIRE_MANY:
        m->u.op.session = 7;
        m->u.op.seq = 9;
        m->u.op.ack_below = 9;
        m->u.op.wait_ms = 1500;
        m->u.op.lock = S("jobs/1");
        m->u.op.n_more = 2;
        m->u.op.more = more;
        break;
    case MSG_ACQUIRE2:
        m->u.op.session = 7;
        m->u.op.seq = 3;
        m->u.op.ack_below = 3;
        m->u.op.wait_ms = BATON_WAIT_FOREVER;
        m->u.op.lock = S("svc/leader");
        m->u.op.flags = BATON_ACQ_OWNERS;
        m->u.op.value = S("10.0.0.1:80");
        break;
    case MSG_PROCLAIM:
        m->u.op.session = 7;
        m->u.op.seq = 4;
        m->u.op.ack_below = 4;
        m->u.op.fence = 41;
        m->u.op.lock = S("svc/leader");
        m->u.op.value = S("10.0.0.1:8080");
        break;
    case MSG_LOCK_STATE:
        m->u.lock_info.lock = S("svc/leader");
        break;
    case MSG_LOCK_STATE_R:
    case MSG_WATCH2_EVENT: {
        struct msg_lock_state *st =
            type == MSG_LOCK_STATE_R ? &m->u.lock_state : &m->u.watch2_event.state;
        st->revision = 130;
        st->held = 1;
        st->mode = BATON_MODE_EXCLUSIVE;
        st->limit = 1;
        st->total_holders = 1;
        st->n_holders = 1;
        st->holders = holders_v;
        st->total_waiters = 2;
        st->n_waiters = 2;
        st->waiters = waiters_v;
        st->lock = S("svc/leader");
        if (type == MSG_WATCH2_EVENT) m->u.watch2_event.kind = WATCH2_CHANGE;
        break;
    }
    case MSG_WATCH2:
        m->u.watch2.flags = BATON_WATCH_PREFIX;
        m->u.watch2.key = S("svc/");
        m->u.watch2.after = 129;
        break;
    case MSG_UNWATCH:
        m->u.unwatch.watch = 1052;
        break;
    case MSG_SNAPSHOT_CHUNK:
        m->u.snapshot_chunk.offset = 49152;
        m->u.snapshot_chunk.total = 49156;
        m->u.snapshot_chunk.data = S("BTN1");
        break;
    case MSG_MEMBERS_R:
        m->u.members_r.n = 2;
        m->u.members_r.members = infos;
        break;
    case MSG_MEMBER_REMOVE:
        m->u.member_remove.id = 4;
        break;
    case MSG_MEMBER_ADD:
        m->u.member_add.id = 4;
        m->u.member_add.raft_addr = S("127.0.0.1:7104");
        m->u.member_add.client_addr = S("127.0.0.1:7004");
        break;
    case MSG_LOST_HOLDS:
        m->u.lost_holds.session = 7;
        m->u.lost_holds.after = 40;
        break;
    case MSG_LOST_HOLDS_R:
        m->u.lost_holds_r.n = 2;
        m->u.lost_holds_r.items = lost;
        m->u.lost_holds_r.more = 1;
        break;
    case MSG_METRICS:
        break;
    case MSG_METRICS_R:
        m->u.metrics_r.n = 2;
        m->u.metrics_r.chunks = chunks;
        break;
    default:
        return -1;
    }
    return 0;
}
