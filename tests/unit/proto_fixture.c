/*
 * proto_fixture.c -- what the unit tests of the wire codec share; see
 * proto_fixture.h.
 */
#include "tests/unit/proto_fixture.h"

#include <stdlib.h>

#include "baton/baton_defs.h"

/* ---- sample messages ------------------------------------------------------ */

/* Backing storage for the strings and arrays of sample messages. A sample
 * borrows from here, so only one sample with lists is valid at a time. */
static char big_name[BATON_MAX_NAME];
static char big_client[BATON_MAX_CLIENT_NAME];
static char big_token[BATON_MAX_TOKEN];
static char big_addr[BATON_MAX_ADDR];
static char big_err[BATON_MAX_ERRMSG];
static char big_chunk[BATON_SNAPSHOT_CHUNK_MAX];
static char item_names[BATON_MAX_LIST][BATON_MAX_NAME];
static struct msg_member members[BATON_MAX_MEMBERS];
static struct msg_member_info member_infos[BATON_MAX_MEMBERS];
static struct msg_waiter waiters[BATON_MAX_LIST];
static struct msg_holder holders[BATON_MAX_LIST];
static struct msg_lock_summary items[BATON_MAX_LIST];
static struct msg_session_summary sess_items[BATON_MAX_LIST];
static struct msg_lost_hold lost_items[BATON_MAX_LIST];
static struct msg_seq keeps[BATON_MAX_KEEP];
static char big_text[BATON_MAX_TEXT_CHUNK];
static struct msg_text_chunk chunks[BATON_MAX_TEXT_CHUNKS];
static struct msg_lock_name more_names[BATON_MAX_MANY - 1];
static char big_value[BATON_MAX_VALUE];
static struct msg_holder_v holders_v[BATON_MAX_LIST];
static struct msg_waiter_v waiters_v[BATON_MAX_LIST];

struct pstr psn(const char *s, size_t n)
{
    struct pstr p = {s, (uint16_t)n};
    return p;
}

struct pstr ps(const char *s)
{
    return psn(s, strlen(s));
}

/* Fill p[0..n) with printable bytes that depend on seed. */
static void fill(char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) p[i] = (char)('!' + (i * 7 + seed) % 90);
}

/* Values for each variant: the typical value t, an extreme, or a minimum. */
static uint64_t U64(int v, uint64_t t)
{
    return v == V_TYPICAL ? t : v == V_EXTREME ? UINT64_MAX : 0;
}

static uint32_t U32(int v, uint32_t t)
{
    return v == V_TYPICAL ? t : v == V_EXTREME ? UINT32_MAX : 0;
}

static uint8_t U8(int v, uint8_t t)
{
    return v == V_TYPICAL ? t : v == V_EXTREME ? UINT8_MAX : 0;
}

static int64_t I64(int v, int64_t t)
{
    return v == V_TYPICAL ? t : v == V_EXTREME ? INT64_MIN : INT64_MAX;
}

static int32_t I32(int v, int32_t t)
{
    return v == V_TYPICAL ? t : v == V_EXTREME ? INT32_MIN : INT32_MAX;
}

static struct pstr STR(int v, const char *t, const char *big, size_t max)
{
    return v == V_TYPICAL ? ps(t) : v == V_EXTREME ? psn(big, max) : psn("", 0);
}

static struct pstr LOCK(int v, const char *t)
{
    return v == V_TYPICAL ? ps(t) : v == V_EXTREME ? psn(big_name, BATON_MAX_NAME) : ps("x");
}

static uint32_t COUNT(int v, uint32_t t, uint32_t max)
{
    return v == V_TYPICAL ? t : v == V_EXTREME ? max : 0;
}

/* What every op starts with (proto/msg_table.h, BATON_OP_FIELDS): three
 * kept seqs for the typical variant, the most the list may hold of the
 * largest value for the extreme one, none for the minimum. */
static void op_head(int v, struct msg_op *op)
{
    op->session = U64(v, 0xA1A2A3A4A5A6A7A8ull);
    op->seq = U64(v, 0xB1B2B3B4B5B6B7B8ull);
    op->ack_below = U64(v, 0xC1C2C3C4C5C6C7C8ull);
    op->n_keep = COUNT(v, 3, BATON_MAX_KEEP);
    for (uint32_t i = 0; i < op->n_keep; i++)
        keeps[i].seq = U64(v, 0x9192939495969700ull + i);
    op->keep = op->n_keep ? keeps : NULL;
}

/* A lock state (LOCK_STATE_R, WATCH2_EVENT). The extreme fills both
 * lists with the longest client names and gives the first holder the
 * longest value: the frame still fits. */
static void lock_state_sample(int v, struct msg_lock_state *st)
{
    st->revision = U64(v, 0x0102030405060708ull);
    st->held = U8(v, 1);
    st->mode = U8(v, BATON_MODE_SHARED);
    st->limit = U32(v, 0x00000102);
    st->delayed = U8(v, 1);
    st->total_holders = U32(v, 0x02030405);
    st->n_holders = COUNT(v, 2, BATON_MAX_LIST);
    st->holders = st->n_holders ? holders_v : NULL;
    for (uint32_t i = 0; i < st->n_holders; i++) {
        holders_v[i].session = 0x1112131415161718ull + i;
        holders_v[i].waiter = 0x2122232425262728ull + i;
        holders_v[i].fence = 0x3132333435363738ull + i;
        holders_v[i].granted_index = 0x4142434445464748ull + i;
        holders_v[i].mode = (uint8_t)(i % 2);
        holders_v[i].count = 0x01000000u + i;
        holders_v[i].client_name = STR(v, i ? "worker-2" : "worker-1", big_client,
                                       BATON_MAX_CLIENT_NAME);
        holders_v[i].value = i == 0 ? STR(v, "10.0.0.1:80", big_value, BATON_MAX_VALUE)
                                    : psn("", 0);
    }
    st->total_waiters = U32(v, 0x01020304);
    st->n_waiters = COUNT(v, 3, BATON_MAX_LIST);
    st->waiters = st->n_waiters ? waiters_v : NULL;
    for (uint32_t i = 0; i < st->n_waiters; i++) {
        waiters_v[i].session = 0x7172737475767778ull + i;
        waiters_v[i].waiter = 0x8182838485868788ull + i;
        waiters_v[i].wait_ms = i % 2 ? BATON_WAIT_FOREVER : -(int64_t)i * 1000003;
        waiters_v[i].mode = (uint8_t)((i + 1) % 2);
        waiters_v[i].client_name = STR(v, "w", big_client, BATON_MAX_CLIENT_NAME);
        waiters_v[i].value = i == 1 && v == V_TYPICAL ? ps("standby") : psn("", 0);
    }
    st->lock = STR(v, "svc/leader", big_name, BATON_MAX_NAME);
}

/* Build variant v of a message of the given type into *m. Typical values
 * differ from field to field and use every byte, so swapped fields or a
 * wrong byte order cannot go unnoticed. */
void sample(int type, int v, struct msg *m)
{
    static const char *const addrs[] = {"127.0.0.1:7001", "127.0.0.1:7002", "10.0.0.3:7003"};
    static const char *const names[] = {"a/1", "a/2", "b"};

    fill(big_name, sizeof big_name, 1);
    fill(big_client, sizeof big_client, 2);
    fill(big_addr, sizeof big_addr, 3);
    fill(big_err, sizeof big_err, 4);
    fill(big_chunk, sizeof big_chunk, 5);
    fill(big_token, sizeof big_token, 5);
    fill(big_value, sizeof big_value, 6);
    memset(m, 0, sizeof *m);
    m->type = (uint16_t)type;
    m->req_id = U64(v, 0x0102030405060708ull + (uint64_t)type);
    switch (type) {
    case MSG_HELLO:
        m->u.hello.version = U32(v, BATON_PROTO_VERSION);
        m->u.hello.client_name = STR(v, "worker-7", big_client, BATON_MAX_CLIENT_NAME);
        m->u.hello.token = STR(v, "c0ffee-token", big_token, BATON_MAX_TOKEN);
        break;
    case MSG_HELLO_OK:
        m->u.hello_ok.version = U32(v, BATON_PROTO_VERSION);
        m->u.hello_ok.node_id = U32(v, 0x03040506);
        m->u.hello_ok.principal = STR(v, "alice", big_client, BATON_MAX_PRINCIPAL);
        m->u.hello_ok.role = U8(v, MSG_ROLE_ADMIN);
        break;
    case MSG_OPEN_SESSION:
        m->u.open_session.ttl_ms = U32(v, 15000);
        m->u.open_session.client_name = STR(v, "batch-job", big_client, BATON_MAX_CLIENT_NAME);
        m->u.open_session.nonce = U64(v, 0x5152535455565758ull);
        break;
    case MSG_SESSION:
        m->u.session.session = U64(v, 0x1122334455667788ull);
        m->u.session.ttl_ms = U32(v, 0x0A0B0C0D);
        break;
    case MSG_ACQUIRE:
        op_head(v, &m->u.op);
        m->u.op.wait_ms = I64(v, -0x0102030405060708ll);
        m->u.op.lock = LOCK(v, "jobs/nightly");
        /* Every legal extreme: the largest delay, and -1 (none), the
         * smallest value the decoder accepts. */
        m->u.op.lock_delay_ms =
            v == V_TYPICAL ? 0x01020304 : v == V_EXTREME ? INT32_MAX : BATON_LOCK_DELAY_NONE;
        /* Lock modes: any byte and u32 travel (the server checks them). */
        m->u.op.mode = U8(v, BATON_MODE_SHARED);
        m->u.op.limit = U32(v, 0x00000103);
        m->u.op.reentrant = U8(v, 1);
        break;
    case MSG_RELEASE:
        op_head(v, &m->u.op);
        m->u.op.fence = U64(v, 0xD1D2D3D4D5D6D7D8ull);
        m->u.op.lock = LOCK(v, "db/primary");
        break;
    case MSG_CANCEL:
        op_head(v, &m->u.op);
        m->u.op.waiter = U64(v, 0xE1E2E3E4E5E6E7E8ull);
        m->u.op.lock = LOCK(v, "q");
        break;
    case MSG_CLOSE_SESSION:
        op_head(v, &m->u.op);
        break;
    case MSG_KEEPALIVE:
        m->u.keepalive.session = U64(v, 0xA1A2A3A4A5A6A7A8ull);
        break;
    case MSG_RESULT:
        m->u.result.status = I32(v, BATON_EWOULDBLOCK);
        m->u.result.kind = U8(v, RESULT_QUEUED);
        m->u.result.value = U64(v, 0x0F0E0D0C0B0A0908ull);
        break;
    case MSG_GRANTED:
        m->u.push.session = U64(v, 0xA1A2A3A4A5A6A7A8ull);
        m->u.push.waiter = U64(v, 0xE1E2E3E4E5E6E7E8ull);
        m->u.push.fence = U64(v, 0xD1D2D3D4D5D6D7D8ull);
        m->u.push.lock = LOCK(v, "jobs/nightly");
        break;
    case MSG_WAIT_FAILED:
        m->u.push.session = U64(v, 0xA1A2A3A4A5A6A7A8ull);
        m->u.push.waiter = U64(v, 0xE1E2E3E4E5E6E7E8ull);
        m->u.push.status = I32(v, BATON_ETIMEDOUT);
        m->u.push.lock = LOCK(v, "jobs/nightly");
        break;
    case MSG_STATUS:
    case MSG_NO_LEADER:
        break;
    case MSG_STATUS_R: {
        struct msg_status_r *s = &m->u.status_r;
        s->node_id = U32(v, 0x02030405);
        s->role = U8(v, ROLE_LEADER);
        s->leader_id = U32(v, 0x12131415);
        s->term = U64(v, 0x2122232425262728ull);
        s->last_index = U64(v, 0x3132333435363738ull);
        s->commit_index = U64(v, 0x4142434445464748ull);
        s->applied_index = U64(v, 0x5152535455565758ull);
        s->n_members = COUNT(v, 3, BATON_MAX_MEMBERS);
        s->members = s->n_members ? members : NULL;
        for (uint32_t i = 0; i < s->n_members; i++) {
            members[i].id = v == V_EXTREME ? UINT32_MAX - i : i + 1;
            members[i].raft_addr =
                v == V_EXTREME ? psn(big_addr, BATON_MAX_ADDR) : ps(addrs[i] + 1);
            members[i].client_addr = v == V_EXTREME ? psn(big_addr, BATON_MAX_ADDR) : ps(addrs[i]);
        }
        s->state_digest = U64(v, 0x7172737475767778ull);
        s->auth_digest = U64(v, 0x8182838485868788ull);
        s->check_index = U64(v, 0x9192939495969798ull);
        s->content_hash = U64(v, 0xA1A2A3A4A5A6A7A8ull);
        s->fault_kind = U8(v, FAULT_LOG);
        s->fault = I32(v, BATON_EIO);
        s->fault_index = U64(v, 0x9192939495969798ull);
        break;
    }
    case MSG_LOCK_INFO:
        m->u.lock_info.lock = LOCK(v, "jobs/nightly");
        break;
    case MSG_LOCK_INFO_R: {
        struct msg_lock_info_r *li = &m->u.lock_info_r;
        li->held = U8(v, 1);
        li->holder_session = U64(v, 0xA1A2A3A4A5A6A7A8ull);
        li->holder_waiter = U64(v, 0xE1E2E3E4E5E6E7E8ull);
        li->fence = U64(v, 0xD1D2D3D4D5D6D7D8ull);
        li->granted_index = U64(v, 0x6162636465666768ull);
        li->mode = U8(v, BATON_MODE_SHARED);
        li->limit = U32(v, 0x00000102);
        li->total_holders = U32(v, 0x02030405);
        li->n_holders = COUNT(v, 2, BATON_MAX_LIST);
        li->holders = li->n_holders ? holders : NULL;
        for (uint32_t i = 0; i < li->n_holders; i++) {
            holders[i].session = 0x1112131415161718ull + i;
            holders[i].waiter = 0x2122232425262728ull + i;
            holders[i].fence = 0x3132333435363738ull + i;
            holders[i].granted_index = 0x4142434445464748ull + i;
            holders[i].mode = (uint8_t)(i % 2);
            holders[i].count = 0x01000000u + i;
        }
        li->total_waiters = U32(v, 0x01020304);
        li->n_waiters = COUNT(v, 3, BATON_MAX_LIST);
        li->waiters = li->n_waiters ? waiters : NULL;
        for (uint32_t i = 0; i < li->n_waiters; i++) {
            waiters[i].session = 0x7172737475767778ull + i;
            waiters[i].waiter = 0x8182838485868788ull + i;
            waiters[i].wait_ms = i % 2 ? BATON_WAIT_FOREVER : -(int64_t)i * 1000003;
            waiters[i].mode = (uint8_t)((i + 1) % 2);
        }
        li->delayed = U8(v, 0x5A);
        li->lock = LOCK(v, "jobs/nightly");
        break;
    }
    case MSG_LIST_LOCKS:
        m->u.list_locks.prefix = STR(v, "jobs/", big_name, BATON_MAX_NAME);
        m->u.list_locks.limit = U32(v, 0x00010203);
        break;
    case MSG_LIST_LOCKS_R: {
        struct msg_list_locks_r *ll = &m->u.list_locks_r;
        ll->n = COUNT(v, 3, BATON_MAX_LIST);
        ll->items = ll->n ? items : NULL;
        for (uint32_t i = 0; i < ll->n; i++) {
            if (v == V_EXTREME) {
                fill(item_names[i], BATON_MAX_NAME, i);
                memcpy(item_names[i], &i, sizeof i);
                for (size_t k = 0; k < sizeof i; k++) /* keep NUL bytes out */
                    item_names[i][k] = (char)(item_names[i][k] | 0x40);
                items[i].name = psn(item_names[i], BATON_MAX_NAME);
            } else {
                items[i].name = ps(names[i]);
            }
            items[i].holder_session = i == 1 ? 0 : 0x9192939495969798ull + i;
            items[i].fence = 0xA0A1A2A3A4A5A6A7ull + i;
            items[i].n_waiters = 0x00102030 + i;
            items[i].mode = (uint8_t)(i % 2);
            items[i].limit = 1 + i;
            items[i].n_holders = 0x00405060 + i;
        }
        ll->more = U8(v, 1);
        break;
    }
    case MSG_REDIRECT:
        m->u.redirect.leader_id = U32(v, 0x0708090A);
        m->u.redirect.client_addr = STR(v, "127.0.0.1:7001", big_addr, BATON_MAX_ADDR);
        break;
    case MSG_ERROR:
        m->u.error.code = I32(v, BATON_EPROTO);
        m->u.error.message = STR(v, "expected HELLO", big_err, BATON_MAX_ERRMSG);
        break;
    case MSG_LOST:
        m->u.push.session = U64(v, 0xA1A2A3A4A5A6A7A8ull);
        m->u.push.waiter = U64(v, 0xE1E2E3E4E5E6E7E8ull);
        m->u.push.fence = U64(v, 0xD1D2D3D4D5D6D7D8ull);
        m->u.push.status = I32(v, BATON_ESESSION);
        m->u.push.lock = LOCK(v, "jobs/nightly");
        break;
    case MSG_SESSION_EXPIRED:
        m->u.session_expired.session = U64(v, 0xA1A2A3A4A5A6A7A8ull);
        break;
    case MSG_FORCE_RELEASE:
        m->u.force_release.fence = U64(v, 0xD1D2D3D4D5D6D7D8ull);
        m->u.force_release.flags = U8(v, BATON_FORCE_NOW);
        m->u.force_release.lock = LOCK(v, "jobs/nightly");
        break;
    case MSG_FORCE_RELEASE_R:
        m->u.force_release_r.status = I32(v, BATON_ENOTHELD);
        m->u.force_release_r.lost_session = U64(v, 0xA1A2A3A4A5A6A7A8ull);
        m->u.force_release_r.lost_fence = U64(v, 0xD1D2D3D4D5D6D7D8ull);
        m->u.force_release_r.new_session = U64(v, 0xB1B2B3B4B5B6B7B8ull);
        m->u.force_release_r.new_fence = U64(v, 0xC1C2C3C4C5C6C7C8ull);
        m->u.force_release_r.delay_ms = U32(v, 0x0A0B0C0D);
        m->u.force_release_r.cur_fence = U64(v, 0xE1E2E3E4E5E6E7E8ull);
        break;
    case MSG_EXPIRE_SESSION:
        m->u.expire_session.session = U64(v, 0xA1A2A3A4A5A6A7A8ull);
        break;
    case MSG_TRANSFER:
        m->u.transfer.id = U32(v, 0x01020304);
        break;
    case MSG_TRANSFER_R:
        m->u.transfer_r.leader_id = U32(v, 0x05060708);
        break;
    case MSG_LIST_SESSIONS:
        m->u.list_sessions.after = U64(v, 0x1112131415161718ull);
        m->u.list_sessions.limit = U32(v, 0x00010203);
        break;
    case MSG_SESSIONS_R: {
        struct msg_sessions_r *sr = &m->u.sessions_r;
        sr->n = COUNT(v, 3, BATON_MAX_LIST);
        sr->items = sr->n ? sess_items : NULL;
        for (uint32_t i = 0; i < sr->n; i++) {
            sess_items[i].id = 0x9192939495969798ull + i;
            sess_items[i].ttl_ms = 0x0A0B0C0D + i;
            sess_items[i].created_index = 0x6162636465666768ull + i;
            sess_items[i].client_name =
                v == V_EXTREME ? psn(big_client, BATON_MAX_CLIENT_NAME) : i == 1 ? ps("") : ps(names[i]);
            sess_items[i].n_holds = 0x00102030 + i;
            sess_items[i].n_waits = 0x00405060 + i;
            sess_items[i].owner =
                v == V_EXTREME ? psn(big_client, BATON_MAX_PRINCIPAL) : i == 1 ? ps("") : ps(names[i]);
        }
        sr->more = U8(v, 1);
        break;
    }
    case MSG_WATCH:
        m->u.watch.lock = LOCK(v, "jobs/nightly");
        break;
    case MSG_WATCH_EVENT: {
        /* The body of LOCK_INFO_R's sample behind a sequence number. */
        struct msg li;
        sample(MSG_LOCK_INFO_R, v, &li);
        m->u.watch_event.info = li.u.lock_info_r;
        m->u.watch_event.seq = U64(v, 0x4142434445464748ull);
        break;
    }
    case MSG_SNAPSHOT:
        break;
    case MSG_SNAPSHOT_R:
        m->u.snapshot_r.index = U64(v, 0x5152535455565758ull);
        break;
    case MSG_CHECK:
    case MSG_SNAPSHOT_SAVE:
        break;
    case MSG_CHECK_R:
        m->u.check_r.index = U64(v, 0x6162636465666768ull);
        break;
    case MSG_ACQUIRE_MANY:
        op_head(v, &m->u.op);
        m->u.op.wait_ms = I64(v, 0x0102030405060708ll);
        m->u.op.lock = LOCK(v, "jobs/a");
        m->u.op.lock_delay_ms = v == V_TYPICAL ? 0x01020304 : BATON_LOCK_DELAY_NONE;
        m->u.op.mode = U8(v, BATON_MODE_SHARED);
        m->u.op.limit = U32(v, 0x00000103);
        m->u.op.reentrant = U8(v, 0);
        /* The more names: the list may be empty on the wire (the server
         * refuses it), or hold 63 names of the largest size. */
        m->u.op.n_more = COUNT(v, 3, BATON_MAX_MANY - 1);
        for (uint32_t i = 0; i < m->u.op.n_more; i++) {
            if (v == V_EXTREME) { /* distinct names without NUL bytes */
                fill(item_names[i], BATON_MAX_NAME, i);
                item_names[i][0] = (char)('A' + i);
            }
            more_names[i].name = v == V_EXTREME ? psn(item_names[i], BATON_MAX_NAME)
                                                : ps(i == 0 ? "jobs/b" : i == 1 ? "c" : "jobs/d");
        }
        m->u.op.more = m->u.op.n_more ? more_names : NULL;
        break;
    case MSG_ACQUIRE2: {
        /* ACQUIRE's sample, then its flags, fence and value. */
        struct msg a;
        sample(MSG_ACQUIRE, v, &a);
        m->u.op = a.u.op;
        m->u.op.flags = U8(v, BATON_ACQ_OWNERS);
        m->u.op.fence = U64(v, 0x2122232425262728ull);
        m->u.op.value = STR(v, "{\"addr\":\"10.0.0.7:80\"}", big_value, BATON_MAX_VALUE);
        break;
    }
    case MSG_PROCLAIM:
        op_head(v, &m->u.op);
        m->u.op.fence = U64(v, 0xD1D2D3D4D5D6D7D8ull);
        m->u.op.lock = LOCK(v, "svc/leader");
        m->u.op.value = STR(v, "10.0.0.8:80", big_value, BATON_MAX_VALUE);
        break;
    case MSG_LOCK_STATE:
        m->u.lock_info.lock = LOCK(v, "svc/leader");
        break;
    case MSG_LOCK_STATE_R:
        lock_state_sample(v, &m->u.lock_state);
        break;
    case MSG_WATCH2:
        m->u.watch2.flags = U8(v, BATON_WATCH_PREFIX);
        m->u.watch2.key = STR(v, "svc/", big_name, BATON_MAX_NAME);
        m->u.watch2.after = U64(v, 0x3132333435363738ull);
        break;
    case MSG_WATCH2_EVENT:
        m->u.watch2_event.kind = U8(v, WATCH2_CHANGE);
        m->u.watch2_event.restarted = U8(v, 1);
        lock_state_sample(v, &m->u.watch2_event.state);
        break;
    case MSG_UNWATCH:
        m->u.unwatch.watch = U64(v, 0x4142434445464748ull);
        break;
    case MSG_SNAPSHOT_CHUNK:
        m->u.snapshot_chunk.offset = U64(v, 0x7172737475767778ull);
        m->u.snapshot_chunk.total = U64(v, 0x8182838485868788ull);
        m->u.snapshot_chunk.data = STR(v, "BTN1", big_chunk, BATON_SNAPSHOT_CHUNK_MAX);
        break;
    case MSG_MEMBERS:
        break;
    case MSG_MEMBERS_R: {
        struct msg_members_r *mr = &m->u.members_r;
        mr->n = COUNT(v, 3, BATON_MAX_MEMBERS);
        mr->members = mr->n ? member_infos : NULL;
        for (uint32_t i = 0; i < mr->n; i++) {
            member_infos[i].id = v == V_EXTREME ? UINT32_MAX - i : i + 1;
            member_infos[i].role = U8(v, (uint8_t)(i == 1 ? MEMBER_SPARE : MEMBER_VOTER));
            member_infos[i].raft_addr =
                v == V_EXTREME ? psn(big_addr, BATON_MAX_ADDR) : ps(addrs[i] + 1);
            /* An unknown client address travels as an empty string. */
            member_infos[i].client_addr =
                v == V_EXTREME ? psn(big_addr, BATON_MAX_ADDR) : i == 2 ? ps("") : ps(addrs[i]);
        }
        break;
    }
    case MSG_MEMBER_REMOVE:
        m->u.member_remove.id = U32(v, 0x0A0B0C0D);
        break;
    case MSG_MEMBER_ADD:
        m->u.member_add.id = U32(v, 0x1A1B1C1D);
        m->u.member_add.raft_addr = STR(v, "10.0.0.4:7104", big_addr, BATON_MAX_ADDR);
        m->u.member_add.client_addr = STR(v, "10.0.0.4:7004", big_addr, BATON_MAX_ADDR);
        break;
    case MSG_LOST_HOLDS:
        m->u.lost_holds.session = U64(v, 0xA1A2A3A4A5A6A7A8ull);
        m->u.lost_holds.after = U64(v, 0xD1D2D3D4D5D6D7D8ull);
        break;
    case MSG_LOST_HOLDS_R: {
        struct msg_lost_holds_r *lr = &m->u.lost_holds_r;
        lr->n = COUNT(v, 3, BATON_MAX_LIST);
        lr->items = lr->n ? lost_items : NULL;
        for (uint32_t i = 0; i < lr->n; i++) {
            lost_items[i].waiter = 0xE1E2E3E4E5E6E7E8ull + i;
            lost_items[i].fence = 0xD1D2D3D4D5D6D7D8ull + i;
            lost_items[i].status = v == V_EXTREME ? INT32_MIN : BATON_ELOST;
            lost_items[i].lock =
                v == V_EXTREME ? psn(big_name, BATON_MAX_NAME) : ps(names[i]);
        }
        lr->more = U8(v, 1);
        break;
    }
    case MSG_METRICS:
        break;
    case MSG_METRICS_R: {
        /* The extreme: every chunk as long as allowed (the frame still fits). */
        struct msg_metrics_r *mr = &m->u.metrics_r;
        fill(big_text, sizeof big_text, 11);
        mr->n = COUNT(v, 2, BATON_MAX_TEXT_CHUNKS);
        mr->chunks = mr->n ? chunks : NULL;
        for (uint32_t i = 0; i < mr->n; i++)
            chunks[i].text = v == V_EXTREME ? psn(big_text, BATON_MAX_TEXT_CHUNK)
                                            : ps(i ? "baton_grants_total 3\n" : "# TYPE x gauge\n");
        break;
    }
    default:
        FAIL("no sample for type %d", type);
    }
}

/* ---- comparing and framing ------------------------------------------------ */

/* Compare every field of two messages of the same type. */
/* Two lock states are alike (LOCK_STATE_R, WATCH2_EVENT). */
static void assert_lock_state_eq(const struct msg_lock_state *x, const struct msg_lock_state *y)
{
    ASSERT_UEQ(x->revision, y->revision);
    ASSERT_EQ(x->held, y->held);
    ASSERT_EQ(x->mode, y->mode);
    ASSERT_UEQ(x->limit, y->limit);
    ASSERT_EQ(x->delayed, y->delayed);
    ASSERT_UEQ(x->total_holders, y->total_holders);
    ASSERT_UEQ(x->n_holders, y->n_holders);
    ASSERT((x->holders == NULL) == (y->holders == NULL));
    for (uint32_t i = 0; i < x->n_holders; i++) {
        const struct msg_holder_v *p = &x->holders[i], *q = &y->holders[i];
        ASSERT_UEQ(p->session, q->session);
        ASSERT_UEQ(p->waiter, q->waiter);
        ASSERT_UEQ(p->fence, q->fence);
        ASSERT_UEQ(p->granted_index, q->granted_index);
        ASSERT_EQ(p->mode, q->mode);
        ASSERT_UEQ(p->count, q->count);
        ASSERT_PSTR_EQ(p->client_name, q->client_name);
        ASSERT_PSTR_EQ(p->value, q->value);
    }
    ASSERT_UEQ(x->total_waiters, y->total_waiters);
    ASSERT_UEQ(x->n_waiters, y->n_waiters);
    ASSERT((x->waiters == NULL) == (y->waiters == NULL));
    for (uint32_t i = 0; i < x->n_waiters; i++) {
        const struct msg_waiter_v *p = &x->waiters[i], *q = &y->waiters[i];
        ASSERT_UEQ(p->session, q->session);
        ASSERT_UEQ(p->waiter, q->waiter);
        ASSERT_EQ(p->wait_ms, q->wait_ms);
        ASSERT_EQ(p->mode, q->mode);
        ASSERT_PSTR_EQ(p->client_name, q->client_name);
        ASSERT_PSTR_EQ(p->value, q->value);
    }
    ASSERT_PSTR_EQ(x->lock, y->lock);
}

/* Two ops start alike (BATON_OP_FIELDS). */
static void assert_op_head_eq(const struct msg_op *a, const struct msg_op *b)
{
    ASSERT_UEQ(a->session, b->session);
    ASSERT_UEQ(a->seq, b->seq);
    ASSERT_UEQ(a->ack_below, b->ack_below);
    ASSERT_UEQ(a->n_keep, b->n_keep);
    for (uint32_t i = 0; i < a->n_keep; i++) ASSERT_UEQ(a->keep[i].seq, b->keep[i].seq);
}

void assert_msg_eq(const struct msg *a, const struct msg *b)
{
    ASSERT_EQ(a->type, b->type);
    ASSERT_UEQ(a->req_id, b->req_id);
    switch (a->type) {
    case MSG_HELLO:
        ASSERT_UEQ(a->u.hello.version, b->u.hello.version);
        ASSERT_PSTR_EQ(a->u.hello.client_name, b->u.hello.client_name);
        ASSERT_PSTR_EQ(a->u.hello.token, b->u.hello.token);
        break;
    case MSG_HELLO_OK:
        ASSERT_UEQ(a->u.hello_ok.version, b->u.hello_ok.version);
        ASSERT_UEQ(a->u.hello_ok.node_id, b->u.hello_ok.node_id);
        ASSERT_PSTR_EQ(a->u.hello_ok.principal, b->u.hello_ok.principal);
        ASSERT_EQ(a->u.hello_ok.role, b->u.hello_ok.role);
        break;
    case MSG_OPEN_SESSION:
        ASSERT_UEQ(a->u.open_session.ttl_ms, b->u.open_session.ttl_ms);
        ASSERT_PSTR_EQ(a->u.open_session.client_name, b->u.open_session.client_name);
        ASSERT_UEQ(a->u.open_session.nonce, b->u.open_session.nonce);
        break;
    case MSG_SESSION:
        ASSERT_UEQ(a->u.session.session, b->u.session.session);
        ASSERT_UEQ(a->u.session.ttl_ms, b->u.session.ttl_ms);
        break;
    case MSG_ACQUIRE:
        assert_op_head_eq(&a->u.op, &b->u.op);
        ASSERT_EQ(a->u.op.wait_ms, b->u.op.wait_ms);
        ASSERT_PSTR_EQ(a->u.op.lock, b->u.op.lock);
        ASSERT_EQ(a->u.op.lock_delay_ms, b->u.op.lock_delay_ms);
        ASSERT_EQ(a->u.op.mode, b->u.op.mode);
        ASSERT_UEQ(a->u.op.limit, b->u.op.limit);
        ASSERT_EQ(a->u.op.reentrant, b->u.op.reentrant);
        break;
    case MSG_RELEASE:
        assert_op_head_eq(&a->u.op, &b->u.op);
        ASSERT_UEQ(a->u.op.fence, b->u.op.fence);
        ASSERT_PSTR_EQ(a->u.op.lock, b->u.op.lock);
        break;
    case MSG_CANCEL:
        assert_op_head_eq(&a->u.op, &b->u.op);
        ASSERT_UEQ(a->u.op.waiter, b->u.op.waiter);
        ASSERT_PSTR_EQ(a->u.op.lock, b->u.op.lock);
        break;
    case MSG_CLOSE_SESSION:
        assert_op_head_eq(&a->u.op, &b->u.op);
        break;
    case MSG_KEEPALIVE:
        ASSERT_UEQ(a->u.keepalive.session, b->u.keepalive.session);
        break;
    case MSG_RESULT:
        ASSERT_EQ(a->u.result.status, b->u.result.status);
        ASSERT_EQ(a->u.result.kind, b->u.result.kind);
        ASSERT_UEQ(a->u.result.value, b->u.result.value);
        break;
    case MSG_GRANTED:
        ASSERT_UEQ(a->u.push.session, b->u.push.session);
        ASSERT_UEQ(a->u.push.waiter, b->u.push.waiter);
        ASSERT_UEQ(a->u.push.fence, b->u.push.fence);
        ASSERT_PSTR_EQ(a->u.push.lock, b->u.push.lock);
        break;
    case MSG_WAIT_FAILED:
        ASSERT_UEQ(a->u.push.session, b->u.push.session);
        ASSERT_UEQ(a->u.push.waiter, b->u.push.waiter);
        ASSERT_EQ(a->u.push.status, b->u.push.status);
        ASSERT_PSTR_EQ(a->u.push.lock, b->u.push.lock);
        break;
    case MSG_STATUS:
    case MSG_NO_LEADER:
        break;
    case MSG_STATUS_R: {
        const struct msg_status_r *x = &a->u.status_r, *y = &b->u.status_r;
        ASSERT_UEQ(x->node_id, y->node_id);
        ASSERT_EQ(x->role, y->role);
        ASSERT_UEQ(x->leader_id, y->leader_id);
        ASSERT_UEQ(x->term, y->term);
        ASSERT_UEQ(x->last_index, y->last_index);
        ASSERT_UEQ(x->commit_index, y->commit_index);
        ASSERT_UEQ(x->applied_index, y->applied_index);
        ASSERT_UEQ(x->n_members, y->n_members);
        ASSERT((x->members == NULL) == (y->members == NULL));
        for (uint32_t i = 0; i < x->n_members; i++) {
            ASSERT_UEQ(x->members[i].id, y->members[i].id);
            ASSERT_PSTR_EQ(x->members[i].raft_addr, y->members[i].raft_addr);
            ASSERT_PSTR_EQ(x->members[i].client_addr, y->members[i].client_addr);
        }
        ASSERT_UEQ(x->state_digest, y->state_digest);
        ASSERT_EQ(x->fault_kind, y->fault_kind);
        ASSERT_EQ(x->fault, y->fault);
        ASSERT_UEQ(x->fault_index, y->fault_index);
        ASSERT_UEQ(x->auth_digest, y->auth_digest);
        ASSERT_UEQ(x->check_index, y->check_index);
        ASSERT_UEQ(x->content_hash, y->content_hash);
        break;
    }
    case MSG_LOCK_INFO:
        ASSERT_PSTR_EQ(a->u.lock_info.lock, b->u.lock_info.lock);
        break;
    case MSG_LOCK_INFO_R: {
        const struct msg_lock_info_r *x = &a->u.lock_info_r, *y = &b->u.lock_info_r;
        ASSERT_EQ(x->held, y->held);
        ASSERT_UEQ(x->holder_session, y->holder_session);
        ASSERT_UEQ(x->holder_waiter, y->holder_waiter);
        ASSERT_UEQ(x->fence, y->fence);
        ASSERT_UEQ(x->granted_index, y->granted_index);
        ASSERT_EQ(x->mode, y->mode);
        ASSERT_UEQ(x->limit, y->limit);
        ASSERT_UEQ(x->total_holders, y->total_holders);
        ASSERT_UEQ(x->n_holders, y->n_holders);
        ASSERT((x->holders == NULL) == (y->holders == NULL));
        for (uint32_t i = 0; i < x->n_holders; i++) {
            ASSERT_UEQ(x->holders[i].session, y->holders[i].session);
            ASSERT_UEQ(x->holders[i].waiter, y->holders[i].waiter);
            ASSERT_UEQ(x->holders[i].fence, y->holders[i].fence);
            ASSERT_UEQ(x->holders[i].granted_index, y->holders[i].granted_index);
            ASSERT_EQ(x->holders[i].mode, y->holders[i].mode);
            ASSERT_UEQ(x->holders[i].count, y->holders[i].count);
        }
        ASSERT_UEQ(x->total_waiters, y->total_waiters);
        ASSERT_UEQ(x->n_waiters, y->n_waiters);
        ASSERT((x->waiters == NULL) == (y->waiters == NULL));
        for (uint32_t i = 0; i < x->n_waiters; i++) {
            ASSERT_UEQ(x->waiters[i].session, y->waiters[i].session);
            ASSERT_UEQ(x->waiters[i].waiter, y->waiters[i].waiter);
            ASSERT_EQ(x->waiters[i].wait_ms, y->waiters[i].wait_ms);
            ASSERT_EQ(x->waiters[i].mode, y->waiters[i].mode);
        }
        ASSERT_EQ(x->delayed, y->delayed);
        ASSERT_PSTR_EQ(x->lock, y->lock);
        break;
    }
    case MSG_LIST_LOCKS:
        ASSERT_PSTR_EQ(a->u.list_locks.prefix, b->u.list_locks.prefix);
        ASSERT_UEQ(a->u.list_locks.limit, b->u.list_locks.limit);
        break;
    case MSG_LIST_LOCKS_R: {
        const struct msg_list_locks_r *x = &a->u.list_locks_r, *y = &b->u.list_locks_r;
        ASSERT_UEQ(x->n, y->n);
        ASSERT((x->items == NULL) == (y->items == NULL));
        for (uint32_t i = 0; i < x->n; i++) {
            ASSERT_PSTR_EQ(x->items[i].name, y->items[i].name);
            ASSERT_UEQ(x->items[i].holder_session, y->items[i].holder_session);
            ASSERT_UEQ(x->items[i].fence, y->items[i].fence);
            ASSERT_UEQ(x->items[i].n_waiters, y->items[i].n_waiters);
            ASSERT_EQ(x->items[i].mode, y->items[i].mode);
            ASSERT_UEQ(x->items[i].limit, y->items[i].limit);
            ASSERT_UEQ(x->items[i].n_holders, y->items[i].n_holders);
        }
        ASSERT_EQ(x->more, y->more);
        break;
    }
    case MSG_REDIRECT:
        ASSERT_UEQ(a->u.redirect.leader_id, b->u.redirect.leader_id);
        ASSERT_PSTR_EQ(a->u.redirect.client_addr, b->u.redirect.client_addr);
        break;
    case MSG_ERROR:
        ASSERT_EQ(a->u.error.code, b->u.error.code);
        ASSERT_PSTR_EQ(a->u.error.message, b->u.error.message);
        break;
    case MSG_LOST:
        ASSERT_UEQ(a->u.push.session, b->u.push.session);
        ASSERT_UEQ(a->u.push.waiter, b->u.push.waiter);
        ASSERT_UEQ(a->u.push.fence, b->u.push.fence);
        ASSERT_EQ(a->u.push.status, b->u.push.status);
        ASSERT_PSTR_EQ(a->u.push.lock, b->u.push.lock);
        break;
    case MSG_SESSION_EXPIRED:
        ASSERT_UEQ(a->u.session_expired.session, b->u.session_expired.session);
        break;
    case MSG_FORCE_RELEASE:
        ASSERT_UEQ(a->u.force_release.fence, b->u.force_release.fence);
        ASSERT_EQ(a->u.force_release.flags, b->u.force_release.flags);
        ASSERT_PSTR_EQ(a->u.force_release.lock, b->u.force_release.lock);
        break;
    case MSG_FORCE_RELEASE_R:
        ASSERT_EQ(a->u.force_release_r.status, b->u.force_release_r.status);
        ASSERT_UEQ(a->u.force_release_r.lost_session, b->u.force_release_r.lost_session);
        ASSERT_UEQ(a->u.force_release_r.lost_fence, b->u.force_release_r.lost_fence);
        ASSERT_UEQ(a->u.force_release_r.new_session, b->u.force_release_r.new_session);
        ASSERT_UEQ(a->u.force_release_r.new_fence, b->u.force_release_r.new_fence);
        ASSERT_UEQ(a->u.force_release_r.delay_ms, b->u.force_release_r.delay_ms);
        ASSERT_UEQ(a->u.force_release_r.cur_fence, b->u.force_release_r.cur_fence);
        break;
    case MSG_EXPIRE_SESSION:
        ASSERT_UEQ(a->u.expire_session.session, b->u.expire_session.session);
        break;
    case MSG_TRANSFER:
        ASSERT_UEQ(a->u.transfer.id, b->u.transfer.id);
        break;
    case MSG_TRANSFER_R:
        ASSERT_UEQ(a->u.transfer_r.leader_id, b->u.transfer_r.leader_id);
        break;
    case MSG_LIST_SESSIONS:
        ASSERT_UEQ(a->u.list_sessions.after, b->u.list_sessions.after);
        ASSERT_UEQ(a->u.list_sessions.limit, b->u.list_sessions.limit);
        break;
    case MSG_SESSIONS_R: {
        const struct msg_sessions_r *x = &a->u.sessions_r, *y = &b->u.sessions_r;
        ASSERT_UEQ(x->n, y->n);
        ASSERT((x->items == NULL) == (y->items == NULL));
        for (uint32_t i = 0; i < x->n; i++) {
            ASSERT_UEQ(x->items[i].id, y->items[i].id);
            ASSERT_UEQ(x->items[i].ttl_ms, y->items[i].ttl_ms);
            ASSERT_UEQ(x->items[i].created_index, y->items[i].created_index);
            ASSERT_PSTR_EQ(x->items[i].client_name, y->items[i].client_name);
            ASSERT_UEQ(x->items[i].n_holds, y->items[i].n_holds);
            ASSERT_UEQ(x->items[i].n_waits, y->items[i].n_waits);
            ASSERT_PSTR_EQ(x->items[i].owner, y->items[i].owner);
        }
        ASSERT_EQ(x->more, y->more);
        break;
    }
    case MSG_WATCH:
        ASSERT_PSTR_EQ(a->u.watch.lock, b->u.watch.lock);
        break;
    case MSG_WATCH_EVENT: {
        /* Compare the lock state as the LOCK_INFO_R it repeats. */
        struct msg x = {.type = MSG_LOCK_INFO_R}, y = {.type = MSG_LOCK_INFO_R};
        ASSERT_UEQ(a->u.watch_event.seq, b->u.watch_event.seq);
        x.u.lock_info_r = a->u.watch_event.info;
        y.u.lock_info_r = b->u.watch_event.info;
        assert_msg_eq(&x, &y);
        break;
    }
    case MSG_SNAPSHOT:
        break;
    case MSG_SNAPSHOT_R:
        ASSERT_UEQ(a->u.snapshot_r.index, b->u.snapshot_r.index);
        break;
    case MSG_CHECK:
    case MSG_SNAPSHOT_SAVE:
        break;
    case MSG_CHECK_R:
        ASSERT_UEQ(a->u.check_r.index, b->u.check_r.index);
        break;
    case MSG_ACQUIRE_MANY:
        assert_op_head_eq(&a->u.op, &b->u.op);
        ASSERT_EQ(a->u.op.wait_ms, b->u.op.wait_ms);
        ASSERT_PSTR_EQ(a->u.op.lock, b->u.op.lock);
        ASSERT_EQ(a->u.op.lock_delay_ms, b->u.op.lock_delay_ms);
        ASSERT_EQ(a->u.op.mode, b->u.op.mode);
        ASSERT_UEQ(a->u.op.limit, b->u.op.limit);
        ASSERT_EQ(a->u.op.reentrant, b->u.op.reentrant);
        ASSERT_UEQ(a->u.op.n_more, b->u.op.n_more);
        for (uint32_t i = 0; i < a->u.op.n_more; i++)
            ASSERT_PSTR_EQ(a->u.op.more[i].name, b->u.op.more[i].name);
        break;
    case MSG_ACQUIRE2: {
        struct msg x = *a, y = *b;
        x.type = y.type = MSG_ACQUIRE;
        assert_msg_eq(&x, &y);
        ASSERT_EQ(a->u.op.flags, b->u.op.flags);
        ASSERT_UEQ(a->u.op.fence, b->u.op.fence);
        ASSERT_PSTR_EQ(a->u.op.value, b->u.op.value);
        break;
    }
    case MSG_PROCLAIM:
        assert_op_head_eq(&a->u.op, &b->u.op);
        ASSERT_UEQ(a->u.op.fence, b->u.op.fence);
        ASSERT_PSTR_EQ(a->u.op.lock, b->u.op.lock);
        ASSERT_PSTR_EQ(a->u.op.value, b->u.op.value);
        break;
    case MSG_LOCK_STATE:
        ASSERT_PSTR_EQ(a->u.lock_info.lock, b->u.lock_info.lock);
        break;
    case MSG_LOCK_STATE_R:
        assert_lock_state_eq(&a->u.lock_state, &b->u.lock_state);
        break;
    case MSG_WATCH2:
        ASSERT_EQ(a->u.watch2.flags, b->u.watch2.flags);
        ASSERT_PSTR_EQ(a->u.watch2.key, b->u.watch2.key);
        ASSERT_UEQ(a->u.watch2.after, b->u.watch2.after);
        break;
    case MSG_WATCH2_EVENT:
        ASSERT_EQ(a->u.watch2_event.kind, b->u.watch2_event.kind);
        ASSERT_EQ(a->u.watch2_event.restarted, b->u.watch2_event.restarted);
        assert_lock_state_eq(&a->u.watch2_event.state, &b->u.watch2_event.state);
        break;
    case MSG_UNWATCH:
        ASSERT_UEQ(a->u.unwatch.watch, b->u.unwatch.watch);
        break;
    case MSG_SNAPSHOT_CHUNK:
        ASSERT_UEQ(a->u.snapshot_chunk.offset, b->u.snapshot_chunk.offset);
        ASSERT_UEQ(a->u.snapshot_chunk.total, b->u.snapshot_chunk.total);
        ASSERT_PSTR_EQ(a->u.snapshot_chunk.data, b->u.snapshot_chunk.data);
        break;
    case MSG_MEMBERS:
        break;
    case MSG_MEMBERS_R: {
        const struct msg_members_r *x = &a->u.members_r, *y = &b->u.members_r;
        ASSERT_UEQ(x->n, y->n);
        ASSERT((x->members == NULL) == (y->members == NULL));
        for (uint32_t i = 0; i < x->n; i++) {
            ASSERT_UEQ(x->members[i].id, y->members[i].id);
            ASSERT_EQ(x->members[i].role, y->members[i].role);
            ASSERT_PSTR_EQ(x->members[i].raft_addr, y->members[i].raft_addr);
            ASSERT_PSTR_EQ(x->members[i].client_addr, y->members[i].client_addr);
        }
        break;
    }
    case MSG_MEMBER_REMOVE:
        ASSERT_UEQ(a->u.member_remove.id, b->u.member_remove.id);
        break;
    case MSG_MEMBER_ADD:
        ASSERT_UEQ(a->u.member_add.id, b->u.member_add.id);
        ASSERT_PSTR_EQ(a->u.member_add.raft_addr, b->u.member_add.raft_addr);
        ASSERT_PSTR_EQ(a->u.member_add.client_addr, b->u.member_add.client_addr);
        break;
    case MSG_LOST_HOLDS:
        ASSERT_UEQ(a->u.lost_holds.session, b->u.lost_holds.session);
        ASSERT_UEQ(a->u.lost_holds.after, b->u.lost_holds.after);
        break;
    case MSG_LOST_HOLDS_R: {
        const struct msg_lost_holds_r *x = &a->u.lost_holds_r, *y = &b->u.lost_holds_r;
        ASSERT_UEQ(x->n, y->n);
        ASSERT((x->items == NULL) == (y->items == NULL));
        for (uint32_t i = 0; i < x->n; i++) {
            ASSERT_UEQ(x->items[i].waiter, y->items[i].waiter);
            ASSERT_UEQ(x->items[i].fence, y->items[i].fence);
            ASSERT_EQ(x->items[i].status, y->items[i].status);
            ASSERT_PSTR_EQ(x->items[i].lock, y->items[i].lock);
        }
        ASSERT_EQ(x->more, y->more);
        break;
    }
    case MSG_METRICS:
        break;
    case MSG_METRICS_R: {
        const struct msg_metrics_r *x = &a->u.metrics_r, *y = &b->u.metrics_r;
        ASSERT_UEQ(x->n, y->n);
        ASSERT((x->chunks == NULL) == (y->chunks == NULL));
        for (uint32_t i = 0; i < x->n; i++) ASSERT_PSTR_EQ(x->chunks[i].text, y->chunks[i].text);
        break;
    }
    default:
        FAIL("unexpected type %d", a->type);
    }
}

/* A private copy of exactly n bytes, so that ASan catches any read past the
 * end of what the codec was given. */
uint8_t *dup_exact(const void *p, size_t n)
{
    uint8_t *q = malloc(n ? n : 1);
    ASSERT(q != NULL);
    if (n) memcpy(q, p, n);
    return q;
}

/* Encode m as a fresh frame into *b (which the caller frees). */
void encode_ok(const struct msg *m, struct buf *b)
{
    buf_init(b);
    ASSERT_EQ(proto_encode(b, m), 0);
    ASSERT_GE(b->len, PROTO_HDR_LEN);
    ASSERT_UEQ(le_get_u32(b->data), b->len - 4);
}

/* Rewrite the length field of frame[0..len) to match len. */
void fix_len(uint8_t *frame, size_t len)
{
    le_put_u32(frame, (uint32_t)(len - 4));
}

void assert_malformed(const uint8_t *frame, size_t len, int type, uint64_t req_id)
{
    uint8_t *p = dup_exact(frame, len);
    struct msg d;

    ASSERT_EQ(proto_decode(p, len, &d), BATON_EMALFORMED);
    ASSERT_EQ(d.type, type);
    ASSERT_UEQ(d.req_id, req_id);
    free(p);
}

/* Start a frame the way msg.h describes it; end_frame patches len. */
void begin_frame(struct buf *b, uint16_t type, uint64_t req_id)
{
    buf_init(b);
    ASSERT_EQ(buf_put_u32(b, 0), 0);
    ASSERT_EQ(buf_put_u16(b, type), 0);
    ASSERT_EQ(buf_put_u64(b, req_id), 0);
}

void end_frame(struct buf *b)
{
    fix_len(b->data, b->len);
}
