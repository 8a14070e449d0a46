/*
 * test_proto.c -- the wire codec (proto/msg.c).
 *
 * Every message type is built in three variants (typical values, extreme
 * values with every string and list at its limit, and minimal values with
 * empty strings and lists), encoded, framed and decoded, and compared field
 * by field. The rest feeds the framer and the decoder bytes the way a socket
 * would (whole, byte by byte, in chunks, several frames at once) and then
 * bytes no honest peer would send: truncations, bit flips, forged counts,
 * over-long strings and seeded random garbage. Whatever arrives, the decoder
 * must answer with an error or a message, never crash (run it under ASan),
 * and any frame it accepts must re-encode to exactly the same bytes.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/baton_defs.h"
#include "proto/buf.h"
#include "proto/msg.h"
#include "tests/lib/runner.h"

#define N_VARIANTS 3
#define V_TYPICAL 0
#define V_EXTREME 1
#define V_MINIMAL 2

/* ---- sample messages ------------------------------------------------------ */

/* Backing storage for the strings and arrays of sample messages. A sample
 * borrows from here, so only one sample with lists is valid at a time. */
static char big_name[BATON_MAX_NAME];
static char big_client[BATON_MAX_CLIENT_NAME];
static char big_addr[BATON_MAX_ADDR];
static char big_err[BATON_MAX_ERRMSG];
static char item_names[BATON_MAX_LIST][BATON_MAX_NAME];
static struct msg_member members[BATON_MAX_MEMBERS];
static struct msg_member_info member_infos[BATON_MAX_MEMBERS];
static struct msg_waiter waiters[BATON_MAX_LIST];
static struct msg_lock_summary items[BATON_MAX_LIST];
static struct msg_session_summary sess_items[BATON_MAX_LIST];

static struct pstr psn(const char *s, size_t n)
{
    struct pstr p = {s, (uint16_t)n};
    return p;
}

static struct pstr ps(const char *s)
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

/* Build variant v of a message of the given type into *m. Typical values
 * differ from field to field and use every byte, so swapped fields or a
 * wrong byte order cannot go unnoticed. */
static void sample(int type, int v, struct msg *m)
{
    static const char *const addrs[] = {"127.0.0.1:7001", "127.0.0.1:7002", "10.0.0.3:7003"};
    static const char *const names[] = {"a/1", "a/2", "b"};

    fill(big_name, sizeof big_name, 1);
    fill(big_client, sizeof big_client, 2);
    fill(big_addr, sizeof big_addr, 3);
    fill(big_err, sizeof big_err, 4);
    memset(m, 0, sizeof *m);
    m->type = (uint16_t)type;
    m->req_id = U64(v, 0x0102030405060708ull + (uint64_t)type);
    switch (type) {
    case MSG_HELLO:
        m->u.hello.version = U32(v, BATON_PROTO_VERSION);
        m->u.hello.client_name = STR(v, "worker-7", big_client, BATON_MAX_CLIENT_NAME);
        break;
    case MSG_HELLO_OK:
        m->u.hello_ok.version = U32(v, BATON_PROTO_VERSION);
        m->u.hello_ok.node_id = U32(v, 0x03040506);
        break;
    case MSG_OPEN_SESSION:
        m->u.open_session.ttl_ms = U32(v, 15000);
        m->u.open_session.client_name = STR(v, "batch-job", big_client, BATON_MAX_CLIENT_NAME);
        break;
    case MSG_SESSION:
        m->u.session.session = U64(v, 0x1122334455667788ull);
        m->u.session.ttl_ms = U32(v, 0x0A0B0C0D);
        break;
    case MSG_ACQUIRE:
        m->u.op.session = U64(v, 0xA1A2A3A4A5A6A7A8ull);
        m->u.op.seq = U64(v, 0xB1B2B3B4B5B6B7B8ull);
        m->u.op.ack_below = U64(v, 0xC1C2C3C4C5C6C7C8ull);
        m->u.op.wait_ms = I64(v, -0x0102030405060708ll);
        m->u.op.lock = LOCK(v, "jobs/nightly");
        /* Every legal extreme: the largest delay, and -1 (none), the
         * smallest value the decoder accepts. */
        m->u.op.lock_delay_ms =
            v == V_TYPICAL ? 0x01020304 : v == V_EXTREME ? INT32_MAX : BATON_LOCK_DELAY_NONE;
        break;
    case MSG_RELEASE:
        m->u.op.session = U64(v, 0xA1A2A3A4A5A6A7A8ull);
        m->u.op.seq = U64(v, 0xB1B2B3B4B5B6B7B8ull);
        m->u.op.ack_below = U64(v, 0xC1C2C3C4C5C6C7C8ull);
        m->u.op.fence = U64(v, 0xD1D2D3D4D5D6D7D8ull);
        m->u.op.lock = LOCK(v, "db/primary");
        break;
    case MSG_CANCEL:
        m->u.op.session = U64(v, 0xA1A2A3A4A5A6A7A8ull);
        m->u.op.seq = U64(v, 0xB1B2B3B4B5B6B7B8ull);
        m->u.op.ack_below = U64(v, 0xC1C2C3C4C5C6C7C8ull);
        m->u.op.waiter = U64(v, 0xE1E2E3E4E5E6E7E8ull);
        m->u.op.lock = LOCK(v, "q");
        break;
    case MSG_CLOSE_SESSION:
        m->u.op.session = U64(v, 0xA1A2A3A4A5A6A7A8ull);
        m->u.op.seq = U64(v, 0xB1B2B3B4B5B6B7B8ull);
        m->u.op.ack_below = U64(v, 0xC1C2C3C4C5C6C7C8ull);
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
        li->total_waiters = U32(v, 0x01020304);
        li->n_waiters = COUNT(v, 3, BATON_MAX_LIST);
        li->waiters = li->n_waiters ? waiters : NULL;
        for (uint32_t i = 0; i < li->n_waiters; i++) {
            waiters[i].session = 0x7172737475767778ull + i;
            waiters[i].waiter = 0x8182838485868788ull + i;
            waiters[i].wait_ms = i % 2 ? BATON_WAIT_FOREVER : -(int64_t)i * 1000003;
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
        m->u.force_release.lock = LOCK(v, "jobs/nightly");
        break;
    case MSG_FORCE_RELEASE_R:
        m->u.force_release_r.status = I32(v, BATON_ENOTHELD);
        m->u.force_release_r.lost_session = U64(v, 0xA1A2A3A4A5A6A7A8ull);
        m->u.force_release_r.lost_fence = U64(v, 0xD1D2D3D4D5D6D7D8ull);
        m->u.force_release_r.new_session = U64(v, 0xB1B2B3B4B5B6B7B8ull);
        m->u.force_release_r.new_fence = U64(v, 0xC1C2C3C4C5C6C7C8ull);
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
    default:
        FAIL("no sample for type %d", type);
    }
}

/* ---- helpers -------------------------------------------------------------- */

#define ASSERT_PSTR_EQ(a, b)                                                   \
    do {                                                                       \
        struct pstr pa_ = (a), pb_ = (b);                                      \
        ASSERT_EQ(pa_.n, pb_.n);                                               \
        ASSERT(pa_.n == 0 || memcmp(pa_.p, pb_.p, pa_.n) == 0);                \
    } while (0)

/* Compare every field of two messages of the same type. */
static void assert_msg_eq(const struct msg *a, const struct msg *b)
{
    ASSERT_EQ(a->type, b->type);
    ASSERT_UEQ(a->req_id, b->req_id);
    switch (a->type) {
    case MSG_HELLO:
        ASSERT_UEQ(a->u.hello.version, b->u.hello.version);
        ASSERT_PSTR_EQ(a->u.hello.client_name, b->u.hello.client_name);
        break;
    case MSG_HELLO_OK:
        ASSERT_UEQ(a->u.hello_ok.version, b->u.hello_ok.version);
        ASSERT_UEQ(a->u.hello_ok.node_id, b->u.hello_ok.node_id);
        break;
    case MSG_OPEN_SESSION:
        ASSERT_UEQ(a->u.open_session.ttl_ms, b->u.open_session.ttl_ms);
        ASSERT_PSTR_EQ(a->u.open_session.client_name, b->u.open_session.client_name);
        break;
    case MSG_SESSION:
        ASSERT_UEQ(a->u.session.session, b->u.session.session);
        ASSERT_UEQ(a->u.session.ttl_ms, b->u.session.ttl_ms);
        break;
    case MSG_ACQUIRE:
        ASSERT_UEQ(a->u.op.session, b->u.op.session);
        ASSERT_UEQ(a->u.op.seq, b->u.op.seq);
        ASSERT_UEQ(a->u.op.ack_below, b->u.op.ack_below);
        ASSERT_EQ(a->u.op.wait_ms, b->u.op.wait_ms);
        ASSERT_PSTR_EQ(a->u.op.lock, b->u.op.lock);
        ASSERT_EQ(a->u.op.lock_delay_ms, b->u.op.lock_delay_ms);
        break;
    case MSG_RELEASE:
        ASSERT_UEQ(a->u.op.session, b->u.op.session);
        ASSERT_UEQ(a->u.op.seq, b->u.op.seq);
        ASSERT_UEQ(a->u.op.ack_below, b->u.op.ack_below);
        ASSERT_UEQ(a->u.op.fence, b->u.op.fence);
        ASSERT_PSTR_EQ(a->u.op.lock, b->u.op.lock);
        break;
    case MSG_CANCEL:
        ASSERT_UEQ(a->u.op.session, b->u.op.session);
        ASSERT_UEQ(a->u.op.seq, b->u.op.seq);
        ASSERT_UEQ(a->u.op.ack_below, b->u.op.ack_below);
        ASSERT_UEQ(a->u.op.waiter, b->u.op.waiter);
        ASSERT_PSTR_EQ(a->u.op.lock, b->u.op.lock);
        break;
    case MSG_CLOSE_SESSION:
        ASSERT_UEQ(a->u.op.session, b->u.op.session);
        ASSERT_UEQ(a->u.op.seq, b->u.op.seq);
        ASSERT_UEQ(a->u.op.ack_below, b->u.op.ack_below);
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
        ASSERT_UEQ(x->total_waiters, y->total_waiters);
        ASSERT_UEQ(x->n_waiters, y->n_waiters);
        ASSERT((x->waiters == NULL) == (y->waiters == NULL));
        for (uint32_t i = 0; i < x->n_waiters; i++) {
            ASSERT_UEQ(x->waiters[i].session, y->waiters[i].session);
            ASSERT_UEQ(x->waiters[i].waiter, y->waiters[i].waiter);
            ASSERT_EQ(x->waiters[i].wait_ms, y->waiters[i].wait_ms);
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
        ASSERT_PSTR_EQ(a->u.force_release.lock, b->u.force_release.lock);
        break;
    case MSG_FORCE_RELEASE_R:
        ASSERT_EQ(a->u.force_release_r.status, b->u.force_release_r.status);
        ASSERT_UEQ(a->u.force_release_r.lost_session, b->u.force_release_r.lost_session);
        ASSERT_UEQ(a->u.force_release_r.lost_fence, b->u.force_release_r.lost_fence);
        ASSERT_UEQ(a->u.force_release_r.new_session, b->u.force_release_r.new_session);
        ASSERT_UEQ(a->u.force_release_r.new_fence, b->u.force_release_r.new_fence);
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
    default:
        FAIL("unexpected type %d", a->type);
    }
}

/* A private copy of exactly n bytes, so that ASan catches any read past the
 * end of what the codec was given. */
static uint8_t *dup_exact(const void *p, size_t n)
{
    uint8_t *q = malloc(n ? n : 1);
    ASSERT(q != NULL);
    if (n) memcpy(q, p, n);
    return q;
}

/* Encode m as a fresh frame into *b (which the caller frees). */
static void encode_ok(const struct msg *m, struct buf *b)
{
    buf_init(b);
    ASSERT_EQ(proto_encode(b, m), 0);
    ASSERT_GE(b->len, PROTO_HDR_LEN);
    ASSERT_UEQ(le_get_u32(b->data), b->len - 4);
}

/* Rewrite the length field of frame[0..len) to match len. */
static void fix_len(uint8_t *frame, size_t len)
{
    le_put_u32(frame, (uint32_t)(len - 4));
}

/*
 * Hand bytes to the framer and the decoder as batond would, and check the
 * answers are within the documented sets. A frame that decodes must
 * re-encode to the same bytes. Also decodes all of data directly, since the
 * decoder must be safe even when handed something the framer never passed.
 * Returns 1 if a frame decoded.
 */
static int feed(const uint8_t *data, size_t len)
{
    struct msg m;
    size_t fl = 0;
    int rv, decoded = 0;
    uint8_t *copy = dup_exact(data, len);

    rv = proto_frame_check(copy, len, &fl);
    ASSERT(rv == 0 || rv == 1 || rv == BATON_ETOOBIG || rv == BATON_EMALFORMED);
    if (rv == 1) {
        uint8_t *frame = dup_exact(data, fl);
        ASSERT(fl >= PROTO_HDR_LEN && fl <= len);
        rv = proto_decode(frame, fl, &m);
        ASSERT(rv == 0 || rv == BATON_EMALFORMED);
        if (rv == 0) {
            struct buf b = {0};
            ASSERT_EQ(proto_encode(&b, &m), 0);
            ASSERT_UEQ(b.len, fl);
            ASSERT(memcmp(b.data, frame, fl) == 0);
            buf_free(&b);
            msg_free(&m);
            decoded = 1;
        }
        free(frame);
    }
    rv = proto_decode(copy, len, &m);
    ASSERT(rv == 0 || rv == BATON_EMALFORMED);
    if (rv == 0) msg_free(&m);
    free(copy);
    return decoded;
}

/* A small deterministic PRNG (xorshift64*), so failures reproduce. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

static size_t rng_below(size_t n)
{
    return (size_t)(rng() % n);
}

/* ---- round trips ---------------------------------------------------------- */

TEST(roundtrip_every_type)
{
    for (int t = 1; t < MSG_TYPE_MAX_; t++) {
        for (int v = 0; v < N_VARIANTS; v++) {
            struct msg m, d;
            struct buf b;
            size_t fl = 0;

            sample(t, v, &m);
            encode_ok(&m, &b);
            ASSERT_EQ(proto_frame_check(b.data, b.len, &fl), 1);
            ASSERT_UEQ(fl, b.len);
            ASSERT_EQ(proto_decode(b.data, fl, &d), 0);
            assert_msg_eq(&m, &d);
            msg_free(&d);
            msg_free(&d); /* idempotent */
            ASSERT(d.u.status_r.members == NULL || t != MSG_STATUS_R);
            ASSERT(d.u.lock_info_r.waiters == NULL || t != MSG_LOCK_INFO_R);
            ASSERT(d.u.watch_event.info.waiters == NULL || t != MSG_WATCH_EVENT);
            ASSERT(d.u.list_locks_r.items == NULL || t != MSG_LIST_LOCKS_R);
            ASSERT(d.u.members_r.members == NULL || t != MSG_MEMBERS_R);
            buf_free(&b);
        }
    }
}

/* Decoded strings must point into the frame, not at copies. */
TEST(decoded_strings_borrow_from_frame)
{
    struct msg m, d;
    struct buf b;

    sample(MSG_ACQUIRE, V_TYPICAL, &m);
    encode_ok(&m, &b);
    ASSERT_EQ(proto_decode(b.data, b.len, &d), 0);
    ASSERT((const uint8_t *)d.u.op.lock.p > b.data);
    /* The lock name is followed only by the i32 lock_delay_ms. */
    ASSERT((const uint8_t *)d.u.op.lock.p + d.u.op.lock.n == b.data + b.len - 4);
    msg_free(&d);
    buf_free(&b);
}

/* A few frames spelled out byte by byte from the header's description. */
TEST(golden_bytes)
{
    static const uint8_t hello[] = {
        0x12, 0x00, 0x00, 0x00,                         /* len 18 */
        0x01, 0x00,                                     /* HELLO */
        0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* req_id */
        0x01, 0x00, 0x00, 0x00,                         /* version */
        0x02, 0x00, 'a', 'b',                           /* client_name */
    };
    static const uint8_t result[] = {
        0x17, 0x00, 0x00, 0x00,                         /* len 23 */
        0x0A, 0x00,                                     /* RESULT */
        0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* req_id */
        0x56, 0xF0, 0xFF, 0xFF,                         /* -4010 */
        0x02,                                           /* RESULT_QUEUED */
        0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* value */
    };
    static const uint8_t status[] = {
        0x0A, 0x00, 0x00, 0x00, 0x0D, 0x00, 0, 0, 0, 0, 0, 0, 0, 0,
    };
    static const uint8_t watch[] = {
        0x0D, 0x00, 0x00, 0x00,                         /* len 13 */
        0x1F, 0x00,                                     /* WATCH (31) */
        0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* req_id */
        0x01, 0x00, 'L',                                /* lock */
    };
    static const uint8_t watch_event[] = {
        0x57, 0x00, 0x00, 0x00,                         /* len 87 */
        0x20, 0x00,                                     /* WATCH_EVENT (32) */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* req_id 0: a push */
        0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* seq */
        0x01,                                           /* held */
        0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* holder_session */
        0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* holder_waiter */
        0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* fence */
        0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* granted_index */
        0x01, 0x00, 0x00, 0x00,                         /* total_waiters */
        0x01, 0x00, 0x00, 0x00,                         /* n */
        0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* waiter session */
        0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* waiter */
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, /* wait_ms -1 */
        0x00,                                           /* delayed */
        0x01, 0x00, 'L',                                /* lock */
    };
    static const uint8_t snapshot_r[] = {
        0x12, 0x00, 0x00, 0x00,                         /* len 18 */
        0x22, 0x00,                                     /* SNAPSHOT_R (34) */
        0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* req_id */
        0x02, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* index */
    };
    static const uint8_t members_r[] = {
        0x29, 0x00, 0x00, 0x00,                         /* len 41 */
        0x24, 0x00,                                     /* MEMBERS_R (36) */
        0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* req_id */
        0x02, 0x00, 0x00, 0x00,                         /* n */
        0x01, 0x00, 0x00, 0x00,                         /* id 1 */
        0x02,                                           /* role: voter */
        0x03, 0x00, '1', ':', '2',                      /* raft_addr */
        0x03, 0x00, '1', ':', '3',                      /* client_addr */
        0x04, 0x00, 0x00, 0x00,                         /* id 4 */
        0x00,                                           /* role: spare */
        0x03, 0x00, '4', ':', '2',                      /* raft_addr */
        0x00, 0x00,                                     /* client_addr unknown */
    };
    static const uint8_t member_remove[] = {
        0x0E, 0x00, 0x00, 0x00,                         /* len 14 */
        0x25, 0x00,                                     /* MEMBER_REMOVE (37) */
        0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* req_id */
        0x03, 0x00, 0x00, 0x00,                         /* id */
    };
    struct msg_member_info infos[2] = {
        {.id = 1, .role = MEMBER_VOTER, .raft_addr = {"1:2", 3}, .client_addr = {"1:3", 3}},
        {.id = 4, .role = MEMBER_SPARE, .raft_addr = {"4:2", 3}, .client_addr = {"", 0}},
    };
    struct msg_waiter ev_waiter = {.session = 8, .waiter = 4, .wait_ms = -1};
    struct msg m = {0};
    struct buf b = {0};

    ASSERT_EQ(MSG_HELLO, 1);
    ASSERT_EQ(MSG_RESULT, 10);
    ASSERT_EQ(MSG_STATUS, 13);
    ASSERT_EQ(MSG_ERROR, 21);
    ASSERT_EQ(MSG_LOST, 22);
    ASSERT_EQ(MSG_SESSION_EXPIRED, 23);
    /* The admin requests were appended; earlier numbers never change. */
    ASSERT_EQ(MSG_FORCE_RELEASE, 24);
    ASSERT_EQ(MSG_FORCE_RELEASE_R, 25);
    ASSERT_EQ(MSG_EXPIRE_SESSION, 26);
    ASSERT_EQ(MSG_TRANSFER, 27);
    ASSERT_EQ(MSG_TRANSFER_R, 28);
    ASSERT_EQ(MSG_LIST_SESSIONS, 29);
    ASSERT_EQ(MSG_SESSIONS_R, 30);
    ASSERT_EQ(MSG_WATCH, 31);
    ASSERT_EQ(MSG_WATCH_EVENT, 32);
    ASSERT_EQ(MSG_SNAPSHOT, 33);
    ASSERT_EQ(MSG_SNAPSHOT_R, 34);
    ASSERT_EQ(MSG_MEMBERS, 35);
    ASSERT_EQ(MSG_MEMBERS_R, 36);
    ASSERT_EQ(MSG_MEMBER_REMOVE, 37);
    ASSERT_EQ(MSG_MEMBER_ADD, 38);
    ASSERT_EQ(MEMBER_SPARE, 0);
    ASSERT_EQ(MEMBER_STANDBY, 1);
    ASSERT_EQ(MEMBER_VOTER, 2);

    m.type = MSG_HELLO;
    m.req_id = 0x0102030405060708ull;
    m.u.hello.version = 1;
    m.u.hello.client_name = ps("ab");
    ASSERT_EQ(proto_encode(&b, &m), 0);
    ASSERT_UEQ(b.len, sizeof hello);
    ASSERT(memcmp(b.data, hello, sizeof hello) == 0);

    buf_reset(&b);
    memset(&m, 0, sizeof m);
    m.type = MSG_RESULT;
    m.req_id = 1;
    m.u.result.status = BATON_EWOULDBLOCK;
    m.u.result.kind = RESULT_QUEUED;
    m.u.result.value = 3;
    ASSERT_EQ(proto_encode(&b, &m), 0);
    ASSERT_UEQ(b.len, sizeof result);
    ASSERT(memcmp(b.data, result, sizeof result) == 0);

    buf_reset(&b);
    memset(&m, 0, sizeof m);
    m.type = MSG_STATUS;
    ASSERT_EQ(proto_encode(&b, &m), 0);
    ASSERT_UEQ(b.len, sizeof status);
    ASSERT(memcmp(b.data, status, sizeof status) == 0);
    ASSERT_EQ(proto_decode(status, sizeof status, &m), 0);
    ASSERT_EQ(m.type, MSG_STATUS);

    buf_reset(&b);
    memset(&m, 0, sizeof m);
    m.type = MSG_WATCH;
    m.req_id = 5;
    m.u.watch.lock = ps("L");
    ASSERT_EQ(proto_encode(&b, &m), 0);
    ASSERT_UEQ(b.len, sizeof watch);
    ASSERT(memcmp(b.data, watch, sizeof watch) == 0);

    buf_reset(&b);
    memset(&m, 0, sizeof m);
    m.type = MSG_WATCH_EVENT;
    m.u.watch_event.seq = 2;
    m.u.watch_event.info.held = 1;
    m.u.watch_event.info.holder_session = 7;
    m.u.watch_event.info.holder_waiter = 3;
    m.u.watch_event.info.fence = 9;
    m.u.watch_event.info.granted_index = 0x10;
    m.u.watch_event.info.total_waiters = 1;
    m.u.watch_event.info.n_waiters = 1;
    m.u.watch_event.info.waiters = &ev_waiter;
    m.u.watch_event.info.lock = ps("L");
    ASSERT_EQ(proto_encode(&b, &m), 0);
    ASSERT_UEQ(b.len, sizeof watch_event);
    ASSERT(memcmp(b.data, watch_event, sizeof watch_event) == 0);
    ASSERT_EQ(proto_decode(watch_event, sizeof watch_event, &m), 0);
    ASSERT_EQ(m.type, MSG_WATCH_EVENT);
    ASSERT_UEQ(m.u.watch_event.seq, 2);
    ASSERT_UEQ(m.u.watch_event.info.waiters[0].session, 8);
    ASSERT_EQ(m.u.watch_event.info.waiters[0].wait_ms, -1);
    msg_free(&m);

    buf_reset(&b);
    memset(&m, 0, sizeof m);
    m.type = MSG_SNAPSHOT_R;
    m.req_id = 6;
    m.u.snapshot_r.index = 0x0102;
    ASSERT_EQ(proto_encode(&b, &m), 0);
    ASSERT_UEQ(b.len, sizeof snapshot_r);
    ASSERT(memcmp(b.data, snapshot_r, sizeof snapshot_r) == 0);

    buf_reset(&b);
    memset(&m, 0, sizeof m);
    m.type = MSG_MEMBERS_R;
    m.req_id = 7;
    m.u.members_r.n = 2;
    m.u.members_r.members = infos;
    ASSERT_EQ(proto_encode(&b, &m), 0);
    ASSERT_UEQ(b.len, sizeof members_r);
    ASSERT(memcmp(b.data, members_r, sizeof members_r) == 0);
    ASSERT_EQ(proto_decode(members_r, sizeof members_r, &m), 0);
    ASSERT_EQ(m.type, MSG_MEMBERS_R);
    ASSERT_UEQ(m.u.members_r.n, 2);
    ASSERT_UEQ(m.u.members_r.members[1].id, 4);
    ASSERT_EQ(m.u.members_r.members[1].role, MEMBER_SPARE);
    ASSERT_UEQ(m.u.members_r.members[1].client_addr.n, 0);
    msg_free(&m);

    buf_reset(&b);
    memset(&m, 0, sizeof m);
    m.type = MSG_MEMBER_REMOVE;
    m.req_id = 8;
    m.u.member_remove.id = 3;
    ASSERT_EQ(proto_encode(&b, &m), 0);
    ASSERT_UEQ(b.len, sizeof member_remove);
    ASSERT(memcmp(b.data, member_remove, sizeof member_remove) == 0);
    buf_free(&b);
}

/* MEMBER_ADD spelled out byte by byte, and decoded back. */
TEST(golden_bytes_member_add)
{
    static const uint8_t member_add[] = {
        0x1D, 0x00, 0x00, 0x00,                         /* len 29 */
        0x26, 0x00,                                     /* MEMBER_ADD (38) */
        0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* req_id */
        0x04, 0x00, 0x00, 0x00,                         /* id 4 */
        0x06, 0x00, '1', '.', '2', ':', '3', '4',       /* raft_addr */
        0x05, 0x00, '5', '.', '6', ':', '7',            /* client_addr */
    };
    struct msg m = {0};
    struct buf b = {0};

    m.type = MSG_MEMBER_ADD;
    m.req_id = 9;
    m.u.member_add.id = 4;
    m.u.member_add.raft_addr = ps("1.2:34");
    m.u.member_add.client_addr = ps("5.6:7");
    ASSERT_EQ(proto_encode(&b, &m), 0);
    ASSERT_UEQ(b.len, sizeof member_add);
    ASSERT(memcmp(b.data, member_add, sizeof member_add) == 0);
    memset(&m, 0, sizeof m);
    ASSERT_EQ(proto_decode(member_add, sizeof member_add, &m), 0);
    ASSERT_EQ(m.type, MSG_MEMBER_ADD);
    ASSERT_UEQ(m.req_id, 9);
    ASSERT_UEQ(m.u.member_add.id, 4);
    ASSERT_EQ(m.u.member_add.raft_addr.n, 6);
    ASSERT(memcmp(m.u.member_add.raft_addr.p, "1.2:34", 6) == 0);
    ASSERT_EQ(m.u.member_add.client_addr.n, 5);
    ASSERT(memcmp(m.u.member_add.client_addr.p, "5.6:7", 5) == 0);
    /* The strings borrow from the frame. */
    ASSERT((const uint8_t *)m.u.member_add.client_addr.p == member_add + sizeof member_add - 5);
    msg_free(&m);
    /* Without the client address the body is short: malformed. */
    {
        uint8_t cut[sizeof member_add - 7];
        memcpy(cut, member_add, sizeof cut);
        le_put_u32(cut, (uint32_t)(sizeof cut - 4));
        ASSERT_EQ(proto_decode(cut, sizeof cut, &m), BATON_EMALFORMED);
    }
    ASSERT_STREQ(msg_type_name(MSG_MEMBER_ADD), "MEMBER_ADD");
    buf_free(&b);
}

/* The lock-delay additions spelled out byte by byte: ACQUIRE's trailing
 * lock_delay_ms, the LOST and SESSION_EXPIRED pushes, and LOCK_INFO_R's
 * delayed flag just before the lock name. */
TEST(golden_bytes_lock_delay)
{
    static const uint8_t acquire[] = {
        0x31, 0x00, 0x00, 0x00,                         /* len 49 */
        0x05, 0x00,                                     /* ACQUIRE */
        0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* req_id */
        0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* session */
        0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* seq */
        0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* ack_below */
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, /* wait_ms -1 */
        0x01, 0x00, 'L',                                /* lock */
        0xDC, 0x05, 0x00, 0x00,                         /* lock_delay_ms 1500 */
    };
    static const uint8_t lost[] = {
        0x29, 0x00, 0x00, 0x00,                         /* len 41 */
        0x16, 0x00,                                     /* LOST */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* req_id 0: a push */
        0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* session */
        0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* waiter */
        0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* fence */
        0x57, 0xF0, 0xFF, 0xFF,                         /* -4009 BATON_ESESSION */
        0x01, 0x00, 'L',                                /* lock */
    };
    static const uint8_t expired[] = {
        0x12, 0x00, 0x00, 0x00,                         /* len 18 */
        0x17, 0x00,                                     /* SESSION_EXPIRED */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* req_id */
        0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* session */
    };
    static const uint8_t info[] = {
        0x37, 0x00, 0x00, 0x00,                         /* len 55 */
        0x10, 0x00,                                     /* LOCK_INFO_R */
        0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* req_id */
        0x00,                                           /* held */
        0, 0, 0, 0, 0, 0, 0, 0,                         /* holder_session */
        0, 0, 0, 0, 0, 0, 0, 0,                         /* holder_waiter */
        0, 0, 0, 0, 0, 0, 0, 0,                         /* fence */
        0, 0, 0, 0, 0, 0, 0, 0,                         /* granted_index */
        0x00, 0x00, 0x00, 0x00,                         /* total_waiters */
        0x00, 0x00, 0x00, 0x00,                         /* n */
        0x01,                                           /* delayed */
        0x01, 0x00, 'L',                                /* lock */
    };
    struct msg m, d;
    struct buf b = {0};

    memset(&m, 0, sizeof m);
    m.type = MSG_ACQUIRE;
    m.req_id = 2;
    m.u.op.session = 7;
    m.u.op.seq = 3;
    m.u.op.ack_below = 1;
    m.u.op.wait_ms = BATON_WAIT_FOREVER;
    m.u.op.lock = ps("L");
    m.u.op.lock_delay_ms = 1500;
    ASSERT_EQ(proto_encode(&b, &m), 0);
    ASSERT_UEQ(b.len, sizeof acquire);
    ASSERT(memcmp(b.data, acquire, sizeof acquire) == 0);
    ASSERT_EQ(proto_decode(acquire, sizeof acquire, &d), 0);
    assert_msg_eq(&m, &d);

    buf_reset(&b);
    memset(&m, 0, sizeof m);
    m.type = MSG_LOST;
    m.u.push.session = 7;
    m.u.push.waiter = 3;
    m.u.push.fence = 9;
    m.u.push.status = BATON_ESESSION;
    m.u.push.lock = ps("L");
    ASSERT_EQ(proto_encode(&b, &m), 0);
    ASSERT_UEQ(b.len, sizeof lost);
    ASSERT(memcmp(b.data, lost, sizeof lost) == 0);
    ASSERT_EQ(proto_decode(lost, sizeof lost, &d), 0);
    assert_msg_eq(&m, &d);

    buf_reset(&b);
    memset(&m, 0, sizeof m);
    m.type = MSG_SESSION_EXPIRED;
    m.u.session_expired.session = 7;
    ASSERT_EQ(proto_encode(&b, &m), 0);
    ASSERT_UEQ(b.len, sizeof expired);
    ASSERT(memcmp(b.data, expired, sizeof expired) == 0);
    ASSERT_EQ(proto_decode(expired, sizeof expired, &d), 0);
    assert_msg_eq(&m, &d);

    buf_reset(&b);
    memset(&m, 0, sizeof m);
    m.type = MSG_LOCK_INFO_R;
    m.req_id = 4;
    m.u.lock_info_r.delayed = 1;
    m.u.lock_info_r.lock = ps("L");
    ASSERT_EQ(proto_encode(&b, &m), 0);
    ASSERT_UEQ(b.len, sizeof info);
    ASSERT(memcmp(b.data, info, sizeof info) == 0);
    ASSERT_EQ(proto_decode(info, sizeof info, &d), 0);
    assert_msg_eq(&m, &d);
    msg_free(&d);
    buf_free(&b);
}

/* STATUS_R spelled out byte by byte: the state digest comes last, after
 * the member list. */
TEST(golden_bytes_status_r)
{
    static const uint8_t status_r[] = {
        0x4D, 0x00, 0x00, 0x00,                         /* len 77 */
        0x0E, 0x00,                                     /* STATUS_R */
        0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* req_id */
        0x02, 0x00, 0x00, 0x00,                         /* node_id */
        0x03,                                           /* ROLE_LEADER */
        0x02, 0x00, 0x00, 0x00,                         /* leader_id */
        0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* term */
        0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* last_index */
        0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* commit_index */
        0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* applied_index */
        0x01, 0x00, 0x00, 0x00,                         /* n */
        0x02, 0x00, 0x00, 0x00,                         /* id */
        0x03, 0x00, 'r', ':', '1',                      /* raft_addr */
        0x03, 0x00, 'c', ':', '1',                      /* client_addr */
        0xEF, 0xCD, 0xAB, 0x89, 0x67, 0x45, 0x23, 0x01, /* state_digest */
    };
    struct msg_member mb = {.id = 2};
    struct msg m, d;
    struct buf b = {0};

    ASSERT_EQ(MSG_STATUS_R, 14);
    memset(&m, 0, sizeof m);
    m.type = MSG_STATUS_R;
    m.req_id = 5;
    m.u.status_r.node_id = 2;
    m.u.status_r.role = ROLE_LEADER;
    m.u.status_r.leader_id = 2;
    m.u.status_r.term = 5;
    m.u.status_r.last_index = 9;
    m.u.status_r.commit_index = 8;
    m.u.status_r.applied_index = 7;
    mb.raft_addr = ps("r:1");
    mb.client_addr = ps("c:1");
    m.u.status_r.n_members = 1;
    m.u.status_r.members = &mb;
    m.u.status_r.state_digest = 0x0123456789ABCDEFull;
    ASSERT_EQ(proto_encode(&b, &m), 0);
    ASSERT_UEQ(b.len, sizeof status_r);
    ASSERT(memcmp(b.data, status_r, sizeof status_r) == 0);
    ASSERT_EQ(proto_decode(status_r, sizeof status_r, &d), 0);
    assert_msg_eq(&m, &d);
    msg_free(&d);

    /* Without its digest (the layout before it was added) the frame is
     * refused, as is one with a byte more. */
    {
        uint8_t short_[sizeof status_r - 8], long_[sizeof status_r + 1];
        memcpy(short_, status_r, sizeof short_);
        fix_len(short_, sizeof short_);
        ASSERT_EQ(proto_decode(short_, sizeof short_, &d), BATON_EMALFORMED);
        memcpy(long_, status_r, sizeof status_r);
        long_[sizeof status_r] = 0;
        fix_len(long_, sizeof long_);
        ASSERT_EQ(proto_decode(long_, sizeof long_, &d), BATON_EMALFORMED);
    }
    buf_free(&b);
}

/* ACQUIRE's lock_delay_ms: -1 (none), 0 (the server's default) and any
 * positive value decode; anything below -1 is malformed. */
TEST(acquire_lock_delay_values)
{
    static const int32_t good[] = {BATON_LOCK_DELAY_NONE, BATON_LOCK_DELAY_DEFAULT, 1, 30000,
                                   INT32_MAX};
    static const int32_t bad[] = {-2, -1000, INT32_MIN};
    struct msg m, d;
    struct buf b;

    ASSERT_EQ(BATON_LOCK_DELAY_DEFAULT, 0);
    ASSERT_EQ(BATON_LOCK_DELAY_NONE, -1);
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        sample(MSG_ACQUIRE, V_TYPICAL, &m);
        m.u.op.lock_delay_ms = good[i];
        encode_ok(&m, &b);
        ASSERT_EQ(proto_decode(b.data, b.len, &d), 0);
        ASSERT_EQ(d.u.op.lock_delay_ms, good[i]);
        buf_free(&b);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t *p;

        /* The encoder refuses it, so write a legal frame and patch its
         * last four bytes (the field is last in the body). */
        sample(MSG_ACQUIRE, V_TYPICAL, &m);
        m.u.op.lock_delay_ms = bad[i];
        buf_init(&b);
        ASSERT_EQ(proto_encode(&b, &m), BATON_EINVAL);
        ASSERT_UEQ(b.len, 0);
        buf_free(&b);
        m.u.op.lock_delay_ms = 0;
        encode_ok(&m, &b);
        le_put_u32(b.data + b.len - 4, (uint32_t)bad[i]);
        p = dup_exact(b.data, b.len);
        ASSERT_EQ(proto_decode(p, b.len, &d), BATON_EMALFORMED);
        ASSERT_EQ(d.type, MSG_ACQUIRE);
        ASSERT_UEQ(d.req_id, m.req_id);
        free(p);
        buf_free(&b);
    }
}

/* Start a frame the way the header describes it; end_frame patches len. */
static void begin_frame(struct buf *b, uint16_t type, uint64_t req_id)
{
    buf_init(b);
    ASSERT_EQ(buf_put_u32(b, 0), 0);
    ASSERT_EQ(buf_put_u16(b, type), 0);
    ASSERT_EQ(buf_put_u64(b, req_id), 0);
}

static void end_frame(struct buf *b)
{
    fix_len(b->data, b->len);
}

static void spec_str(struct buf *w, struct pstr s)
{
    ASSERT_EQ(buf_put_str(w, s.p, s.n), 0);
}

/*
 * Write m's frame by hand, transcribed field by field from the body lists in
 * msg.h (the enum comments and the wire comments above the structs) rather
 * than from the encoder. Round trips cannot catch a field order that the
 * encoder and the decoder get wrong in the same way; this can.
 */
static void spec_frame(const struct msg *m, struct buf *w)
{
    begin_frame(w, m->type, m->req_id);
    switch (m->type) {
    case MSG_HELLO: /* {u32 version, str client_name} */
        buf_put_u32(w, m->u.hello.version);
        spec_str(w, m->u.hello.client_name);
        break;
    case MSG_HELLO_OK: /* {u32 version, u32 node_id} */
        buf_put_u32(w, m->u.hello_ok.version);
        buf_put_u32(w, m->u.hello_ok.node_id);
        break;
    case MSG_OPEN_SESSION: /* {u32 ttl_ms, str client_name} */
        buf_put_u32(w, m->u.open_session.ttl_ms);
        spec_str(w, m->u.open_session.client_name);
        break;
    case MSG_SESSION: /* {u64 session, u32 ttl_ms} */
        buf_put_u64(w, m->u.session.session);
        buf_put_u32(w, m->u.session.ttl_ms);
        break;
    case MSG_ACQUIRE: /* {u64 session, u64 seq, u64 ack_below, i64 wait_ms, str lock,
                         i32 lock_delay_ms} */
        buf_put_u64(w, m->u.op.session);
        buf_put_u64(w, m->u.op.seq);
        buf_put_u64(w, m->u.op.ack_below);
        buf_put_i64(w, m->u.op.wait_ms);
        spec_str(w, m->u.op.lock);
        buf_put_i32(w, m->u.op.lock_delay_ms);
        break;
    case MSG_RELEASE: /* {u64 session, u64 seq, u64 ack_below, u64 fence, str lock} */
        buf_put_u64(w, m->u.op.session);
        buf_put_u64(w, m->u.op.seq);
        buf_put_u64(w, m->u.op.ack_below);
        buf_put_u64(w, m->u.op.fence);
        spec_str(w, m->u.op.lock);
        break;
    case MSG_CANCEL: /* {u64 session, u64 seq, u64 ack_below, u64 waiter, str lock} */
        buf_put_u64(w, m->u.op.session);
        buf_put_u64(w, m->u.op.seq);
        buf_put_u64(w, m->u.op.ack_below);
        buf_put_u64(w, m->u.op.waiter);
        spec_str(w, m->u.op.lock);
        break;
    case MSG_CLOSE_SESSION: /* {u64 session, u64 seq, u64 ack_below} */
        buf_put_u64(w, m->u.op.session);
        buf_put_u64(w, m->u.op.seq);
        buf_put_u64(w, m->u.op.ack_below);
        break;
    case MSG_KEEPALIVE: /* {u64 session} */
        buf_put_u64(w, m->u.keepalive.session);
        break;
    case MSG_RESULT: /* {i32 status, u8 kind, u64 value} */
        buf_put_i32(w, m->u.result.status);
        buf_put_u8(w, m->u.result.kind);
        buf_put_u64(w, m->u.result.value);
        break;
    case MSG_GRANTED: /* {u64 session, u64 waiter, u64 fence, str lock} */
        buf_put_u64(w, m->u.push.session);
        buf_put_u64(w, m->u.push.waiter);
        buf_put_u64(w, m->u.push.fence);
        spec_str(w, m->u.push.lock);
        break;
    case MSG_WAIT_FAILED: /* {u64 session, u64 waiter, i32 status, str lock} */
        buf_put_u64(w, m->u.push.session);
        buf_put_u64(w, m->u.push.waiter);
        buf_put_i32(w, m->u.push.status);
        spec_str(w, m->u.push.lock);
        break;
    case MSG_STATUS: /* {} */
    case MSG_NO_LEADER: /* {} */
        break;
    case MSG_STATUS_R: {
        const struct msg_status_r *x = &m->u.status_r;
        buf_put_u32(w, x->node_id);
        buf_put_u8(w, x->role);
        buf_put_u32(w, x->leader_id);
        buf_put_u64(w, x->term);
        buf_put_u64(w, x->last_index);
        buf_put_u64(w, x->commit_index);
        buf_put_u64(w, x->applied_index);
        buf_put_u32(w, x->n_members);
        for (uint32_t i = 0; i < x->n_members; i++) {
            buf_put_u32(w, x->members[i].id);
            spec_str(w, x->members[i].raft_addr);
            spec_str(w, x->members[i].client_addr);
        }
        buf_put_u64(w, x->state_digest);
        break;
    }
    case MSG_LOCK_INFO: /* {str lock} */
        spec_str(w, m->u.lock_info.lock);
        break;
    case MSG_LOCK_INFO_R: {
        const struct msg_lock_info_r *x = &m->u.lock_info_r;
        buf_put_u8(w, x->held);
        buf_put_u64(w, x->holder_session);
        buf_put_u64(w, x->holder_waiter);
        buf_put_u64(w, x->fence);
        buf_put_u64(w, x->granted_index);
        buf_put_u32(w, x->total_waiters);
        buf_put_u32(w, x->n_waiters);
        for (uint32_t i = 0; i < x->n_waiters; i++) {
            buf_put_u64(w, x->waiters[i].session);
            buf_put_u64(w, x->waiters[i].waiter);
            buf_put_i64(w, x->waiters[i].wait_ms);
        }
        buf_put_u8(w, x->delayed);
        spec_str(w, x->lock);
        break;
    }
    case MSG_LIST_LOCKS: /* {str prefix, u32 limit} */
        spec_str(w, m->u.list_locks.prefix);
        buf_put_u32(w, m->u.list_locks.limit);
        break;
    case MSG_LIST_LOCKS_R: {
        const struct msg_list_locks_r *x = &m->u.list_locks_r;
        buf_put_u32(w, x->n);
        for (uint32_t i = 0; i < x->n; i++) {
            spec_str(w, x->items[i].name);
            buf_put_u64(w, x->items[i].holder_session);
            buf_put_u64(w, x->items[i].fence);
            buf_put_u32(w, x->items[i].n_waiters);
        }
        buf_put_u8(w, x->more);
        break;
    }
    case MSG_REDIRECT: /* {u32 leader_id, str client_addr} */
        buf_put_u32(w, m->u.redirect.leader_id);
        spec_str(w, m->u.redirect.client_addr);
        break;
    case MSG_ERROR: /* {i32 code, str message} */
        buf_put_i32(w, m->u.error.code);
        spec_str(w, m->u.error.message);
        break;
    case MSG_LOST: /* {u64 session, u64 waiter, u64 fence, i32 status, str lock} */
        buf_put_u64(w, m->u.push.session);
        buf_put_u64(w, m->u.push.waiter);
        buf_put_u64(w, m->u.push.fence);
        buf_put_i32(w, m->u.push.status);
        spec_str(w, m->u.push.lock);
        break;
    case MSG_SESSION_EXPIRED: /* {u64 session} */
        buf_put_u64(w, m->u.session_expired.session);
        break;
    case MSG_FORCE_RELEASE: /* {str lock} */
        spec_str(w, m->u.force_release.lock);
        break;
    case MSG_FORCE_RELEASE_R: /* {i32 status, u64 lost_session, u64 lost_fence,
                                 u64 new_session, u64 new_fence} */
        buf_put_i32(w, m->u.force_release_r.status);
        buf_put_u64(w, m->u.force_release_r.lost_session);
        buf_put_u64(w, m->u.force_release_r.lost_fence);
        buf_put_u64(w, m->u.force_release_r.new_session);
        buf_put_u64(w, m->u.force_release_r.new_fence);
        break;
    case MSG_EXPIRE_SESSION: /* {u64 session} */
        buf_put_u64(w, m->u.expire_session.session);
        break;
    case MSG_TRANSFER: /* {u32 id} */
        buf_put_u32(w, m->u.transfer.id);
        break;
    case MSG_TRANSFER_R: /* {u32 leader_id} */
        buf_put_u32(w, m->u.transfer_r.leader_id);
        break;
    case MSG_LIST_SESSIONS: /* {u64 after, u32 limit} */
        buf_put_u64(w, m->u.list_sessions.after);
        buf_put_u32(w, m->u.list_sessions.limit);
        break;
    case MSG_SESSIONS_R: { /* {u32 n, n x {u64 id, u32 ttl_ms, u64 created_index,
                              str client_name, u32 n_holds, u32 n_waits}, u8 more} */
        const struct msg_sessions_r *x = &m->u.sessions_r;
        buf_put_u32(w, x->n);
        for (uint32_t i = 0; i < x->n; i++) {
            buf_put_u64(w, x->items[i].id);
            buf_put_u32(w, x->items[i].ttl_ms);
            buf_put_u64(w, x->items[i].created_index);
            spec_str(w, x->items[i].client_name);
            buf_put_u32(w, x->items[i].n_holds);
            buf_put_u32(w, x->items[i].n_waits);
        }
        buf_put_u8(w, x->more);
        break;
    }
    case MSG_WATCH: /* {str lock} */
        spec_str(w, m->u.watch.lock);
        break;
    case MSG_WATCH_EVENT: { /* {u64 seq, then the body of LOCK_INFO_R} */
        const struct msg_lock_info_r *x = &m->u.watch_event.info;
        buf_put_u64(w, m->u.watch_event.seq);
        buf_put_u8(w, x->held);
        buf_put_u64(w, x->holder_session);
        buf_put_u64(w, x->holder_waiter);
        buf_put_u64(w, x->fence);
        buf_put_u64(w, x->granted_index);
        buf_put_u32(w, x->total_waiters);
        buf_put_u32(w, x->n_waiters);
        for (uint32_t i = 0; i < x->n_waiters; i++) {
            buf_put_u64(w, x->waiters[i].session);
            buf_put_u64(w, x->waiters[i].waiter);
            buf_put_i64(w, x->waiters[i].wait_ms);
        }
        buf_put_u8(w, x->delayed);
        spec_str(w, x->lock);
        break;
    }
    case MSG_SNAPSHOT: /* {} */
        break;
    case MSG_SNAPSHOT_R: /* {u64 index} */
        buf_put_u64(w, m->u.snapshot_r.index);
        break;
    case MSG_MEMBERS: /* {} */
        break;
    case MSG_MEMBERS_R: { /* {u32 n, n x {u32 id, u8 role, str raft_addr, str client_addr}} */
        const struct msg_members_r *x = &m->u.members_r;
        buf_put_u32(w, x->n);
        for (uint32_t i = 0; i < x->n; i++) {
            buf_put_u32(w, x->members[i].id);
            buf_put_u8(w, x->members[i].role);
            spec_str(w, x->members[i].raft_addr);
            spec_str(w, x->members[i].client_addr);
        }
        break;
    }
    case MSG_MEMBER_REMOVE: /* {u32 id} */
        buf_put_u32(w, m->u.member_remove.id);
        break;
    case MSG_MEMBER_ADD: /* {u32 id, str raft_addr, str client_addr} */
        buf_put_u32(w, m->u.member_add.id);
        spec_str(w, m->u.member_add.raft_addr);
        spec_str(w, m->u.member_add.client_addr);
        break;
    default:
        FAIL("no layout for type %d", m->type);
    }
    end_frame(w);
}

/* Every sample encodes to exactly the hand-written bytes, and those bytes
 * decode back to the sample. */
TEST(layout_matches_header)
{
    for (int t = 1; t < MSG_TYPE_MAX_; t++) {
        for (int v = 0; v < N_VARIANTS; v++) {
            struct msg m, d;
            struct buf want, got;

            sample(t, v, &m);
            spec_frame(&m, &want);
            encode_ok(&m, &got);
            ASSERT_UEQ(got.len, want.len);
            ASSERT(memcmp(got.data, want.data, want.len) == 0);
            ASSERT_EQ(proto_decode(want.data, want.len, &d), 0);
            assert_msg_eq(&m, &d);
            msg_free(&d);
            buf_free(&got);
            buf_free(&want);
        }
    }
}

/* ---- framing ---------------------------------------------------------------- */

/* Feeding a frame one byte at a time: the framer wants more until the last
 * byte arrives, and never looks past what it was given. */
TEST(frame_byte_by_byte)
{
    for (int t = 1; t < MSG_TYPE_MAX_; t++) {
        for (int v = 0; v < N_VARIANTS; v++) {
            struct msg m, d;
            struct buf b;

            sample(t, v, &m);
            encode_ok(&m, &b);
            for (size_t k = 0; k < b.len; k++) {
                uint8_t *part = dup_exact(b.data, k);
                size_t fl = 12345;
                ASSERT_EQ(proto_frame_check(part, k, &fl), 0);
                ASSERT_UEQ(fl, 12345); /* untouched until a frame is there */
                free(part);
                if (v == V_EXTREME && b.len > 4096 && k > 64) k += 997; /* keep it quick */
            }
            uint8_t *whole = dup_exact(b.data, b.len);
            size_t fl = 0;
            ASSERT_EQ(proto_frame_check(whole, b.len, &fl), 1);
            ASSERT_UEQ(fl, b.len);
            ASSERT_EQ(proto_decode(whole, fl, &d), 0);
            assert_msg_eq(&m, &d);
            msg_free(&d);
            free(whole);
            buf_free(&b);
        }
    }
}

/*
 * A stream holding every sample frame back to back, delivered in chunks of
 * various sizes and processed the way batond's read loop does: frame, decode
 * and consume whole frames, keep the partial tail for the next read.
 */
TEST(frames_concatenated_and_chunked)
{
    static const size_t chunks[] = {1, 2, 3, 7, 13, 64, 1000, 4096, 1u << 20};
    struct buf stream = {0};
    int n_frames = 0;

    for (int t = 1; t < MSG_TYPE_MAX_; t++) {
        for (int v = 0; v < N_VARIANTS; v++) {
            struct msg m;
            if (v == V_EXTREME && (t == MSG_LIST_LOCKS_R || t == MSG_LOCK_INFO_R || t == MSG_WATCH_EVENT)) continue;
            sample(t, v, &m);
            ASSERT_EQ(proto_encode(&stream, &m), 0);
            n_frames++;
        }
    }
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
        struct buf in = {0};
        size_t pos = 0;
        int t = 1, v = 0, seen = 0;

        while (pos < stream.len) {
            size_t n = chunks[c] < stream.len - pos ? chunks[c] : stream.len - pos;
            size_t off = 0, fl;
            int rv;

            ASSERT_EQ(buf_put(&in, stream.data + pos, n), 0);
            pos += n;
            while ((rv = proto_frame_check(in.data + off, in.len - off, &fl)) == 1) {
                struct msg want, got;
                /* Walk the expected sequence, skipping what was left out. */
                while (v == V_EXTREME && (t == MSG_LIST_LOCKS_R || t == MSG_LOCK_INFO_R || t == MSG_WATCH_EVENT)) {
                    if (++v == N_VARIANTS) v = 0, t++;
                }
                ASSERT_EQ(proto_decode(in.data + off, fl, &got), 0);
                sample(t, v, &want);
                assert_msg_eq(&want, &got);
                msg_free(&got);
                off += fl;
                seen++;
                if (++v == N_VARIANTS) v = 0, t++;
            }
            ASSERT_EQ(rv, 0);
            buf_consume(&in, off);
        }
        ASSERT_EQ(seen, n_frames);
        ASSERT_UEQ(in.len, 0);
        buf_free(&in);
    }
    buf_free(&stream);
}

TEST(frame_length_limits)
{
    uint8_t h[PROTO_HDR_LEN] = {0};
    size_t fl = 0;

    /* Fewer than four bytes: nothing can be said yet, whatever they are. */
    memset(h, 0xFF, sizeof h);
    for (size_t k = 0; k < 4; k++) ASSERT_EQ(proto_frame_check(h, k, &fl), 0);
    ASSERT_EQ(proto_frame_check(NULL, 0, &fl), 0);

    /* Too big is known from the length field alone. */
    le_put_u32(h, BATON_MAX_FRAME + 1);
    ASSERT_EQ(proto_frame_check(h, 4, &fl), BATON_ETOOBIG);
    le_put_u32(h, UINT32_MAX);
    ASSERT_EQ(proto_frame_check(h, 4, &fl), BATON_ETOOBIG);
    le_put_u32(h, BATON_MAX_FRAME);
    ASSERT_EQ(proto_frame_check(h, sizeof h, &fl), 0);

    /* Too small to hold type and req_id. */
    for (uint32_t n = 0; n < PROTO_FRAME_MIN; n++) {
        le_put_u32(h, n);
        ASSERT_EQ(proto_frame_check(h, 4, &fl), BATON_EMALFORMED);
        ASSERT_EQ(proto_frame_check(h, sizeof h, &fl), BATON_EMALFORMED);
    }

    /* The smallest legal frame. */
    le_put_u32(h, PROTO_FRAME_MIN);
    ASSERT_EQ(proto_frame_check(h, PROTO_HDR_LEN - 1, &fl), 0);
    ASSERT_EQ(proto_frame_check(h, PROTO_HDR_LEN, &fl), 1);
    ASSERT_UEQ(fl, PROTO_HDR_LEN);
}

/* The largest legal length field: framed, then refused as trailing bytes
 * after an empty body. One more byte is refused by both functions. */
TEST(frame_at_max_size)
{
    size_t n = 4 + (size_t)BATON_MAX_FRAME + 1, fl = 0;
    uint8_t *p = calloc(1, n);
    struct msg m;

    ASSERT(p != NULL);
    le_put_u32(p, BATON_MAX_FRAME);
    le_put_u16(p + 4, MSG_STATUS);
    le_put_u64(p + 6, 77);
    ASSERT_EQ(proto_frame_check(p, n - 2, &fl), 0);
    ASSERT_EQ(proto_frame_check(p, n, &fl), 1);
    ASSERT_UEQ(fl, n - 1);
    ASSERT_EQ(proto_decode(p, fl, &m), BATON_EMALFORMED);
    ASSERT_EQ(m.type, MSG_STATUS);
    ASSERT_UEQ(m.req_id, 77);

    le_put_u32(p, BATON_MAX_FRAME + 1);
    ASSERT_EQ(proto_frame_check(p, n, &fl), BATON_ETOOBIG);
    ASSERT_EQ(proto_decode(p, n, &m), BATON_EMALFORMED);
    free(p);
}

/* proto_decode must agree with the length field, and needs a header. */
TEST(decode_length_mismatch)
{
    struct msg m, d;
    struct buf b;
    uint8_t *p;

    sample(MSG_KEEPALIVE, V_TYPICAL, &m);
    encode_ok(&m, &b);
    ASSERT_EQ(buf_put_u8(&b, 0), 0); /* one spare byte after the frame */
    p = dup_exact(b.data, b.len);
    ASSERT_EQ(proto_decode(p, b.len, &d), BATON_EMALFORMED);     /* one too many */
    ASSERT_EQ(proto_decode(p, b.len - 2, &d), BATON_EMALFORMED); /* one too few */
    ASSERT_EQ(proto_decode(p, b.len - 1, &d), 0);
    for (size_t k = 0; k < PROTO_HDR_LEN; k++) ASSERT_EQ(proto_decode(p, k, &d), BATON_EMALFORMED);
    ASSERT_EQ(proto_decode(NULL, 0, &d), BATON_EMALFORMED);
    free(p);
    buf_free(&b);
}

/* ---- bad input -------------------------------------------------------------- */

/*
 * Every truncation of every frame: the framer must ask for more, a decoder
 * handed the short bytes must refuse them, and a short frame whose length
 * field has been made to agree must be refused too (a canonical body has
 * exactly one length, so no prefix of it is a valid body).
 */
TEST(truncated_frames)
{
    for (int t = 1; t < MSG_TYPE_MAX_; t++) {
        for (int v = 0; v < N_VARIANTS; v++) {
            struct msg m, d;
            struct buf b;

            sample(t, v, &m);
            encode_ok(&m, &b);
            for (size_t k = 0; k < b.len; k++) {
                uint8_t *p = dup_exact(b.data, k);
                size_t fl = 0;

                ASSERT_EQ(proto_frame_check(p, k, &fl), 0);
                ASSERT_EQ(proto_decode(p, k, &d), BATON_EMALFORMED);
                if (k >= 4) {
                    int rv;
                    fix_len(p, k);
                    rv = proto_frame_check(p, k, &fl);
                    if (k < PROTO_HDR_LEN) {
                        ASSERT_EQ(rv, BATON_EMALFORMED);
                    } else {
                        ASSERT_EQ(rv, 1);
                        ASSERT_EQ(proto_decode(p, k, &d), BATON_EMALFORMED);
                        ASSERT_EQ(d.type, t);
                        ASSERT_UEQ(d.req_id, m.req_id);
                    }
                }
                free(p);
                /* The huge list frames: every byte near the ends, a stride
                 * through the middle. */
                if (b.len > 8192 && k > 300 && k < b.len - 300) k += 61;
            }
            buf_free(&b);
        }
    }
}

/* Flip every bit, and set every byte to 0x00 and 0xFF, in every small
 * frame. Each result must be refused or decode to something that
 * re-encodes identically. */
TEST(corrupted_frames)
{
    int accepted = 0, tried = 0;

    for (int t = 1; t < MSG_TYPE_MAX_; t++) {
        for (int v = 0; v < N_VARIANTS; v++) {
            struct msg m;
            struct buf b;

            sample(t, v, &m);
            encode_ok(&m, &b);
            for (size_t i = 0; i < b.len; i++) {
                uint8_t orig = b.data[i];
                for (int bit = 0; bit < 8; bit++) {
                    b.data[i] = (uint8_t)(orig ^ (1u << bit));
                    accepted += feed(b.data, b.len);
                    tried++;
                }
                b.data[i] = 0x00;
                accepted += feed(b.data, b.len);
                b.data[i] = 0xFF;
                accepted += feed(b.data, b.len);
                b.data[i] = orig;
                tried += 2;
                /* The huge list frames: the ends, and a few points between. */
                if (b.len > 8192 && i >= 32 && i < b.len - 32) {
                    size_t next = i + b.len / 8;
                    i = (next < b.len - 32 ? next : b.len - 32) - 1;
                }
            }
            buf_free(&b);
        }
    }
    /* Flipping a bit of an integer field is still a valid message, so a
     * good share must decode; flipping the length or a string's length
     * must not. Both happen. */
    ASSERT_GT(accepted, 0);
    ASSERT_LT(accepted, tried);
}

/* Random bytes, and random frames with a correct length field and a known
 * type so that the body parsers get exercised. */
TEST(random_garbage)
{
    uint8_t p[600];
    int accepted = 0;

    rng_state = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 60000; i++) {
        size_t n = rng_below(sizeof p + 1);
        for (size_t k = 0; k < n; k++) p[k] = (uint8_t)rng();
        if (i % 2 == 0 && n >= PROTO_HDR_LEN) {
            fix_len(p, n);
            le_put_u16(p + 4, (uint16_t)(1 + rng_below(MSG_TYPE_MAX_)));
            /* Small counts and string lengths make the parsers go deeper. */
            for (size_t k = PROTO_HDR_LEN; k + 1 < n; k++)
                if (rng_below(6) == 0) p[k + 1] = 0, p[k] = (uint8_t)rng_below(12);
        }
        accepted += feed(p, n);
    }
    ASSERT_GT(accepted, 0);
}

/* Valid frames with a few random bytes changed, inserted or removed, with
 * the length field usually kept consistent. */
TEST(random_mutations)
{
    struct buf frames[MSG_TYPE_MAX_][2];
    uint8_t p[2048];

    rng_state = 0x0123456789ABCDEFull;
    for (int t = 1; t < MSG_TYPE_MAX_; t++) {
        struct msg m;
        sample(t, V_TYPICAL, &m);
        encode_ok(&m, &frames[t][0]);
        sample(t, V_MINIMAL, &m);
        encode_ok(&m, &frames[t][1]);
    }
    for (int i = 0; i < 60000; i++) {
        const struct buf *f = &frames[1 + rng_below(MSG_TYPE_MAX_ - 1)][rng_below(2)];
        size_t n = f->len;
        int edits = 1 + (int)rng_below(4);

        memcpy(p, f->data, n);
        for (int e = 0; e < edits; e++) {
            size_t at = rng_below(n);
            switch (rng_below(4)) {
            case 0: /* overwrite */
                p[at] = (uint8_t)rng();
                break;
            case 1: /* small integer, to hit counts and lengths */
                p[at] = (uint8_t)rng_below(4);
                break;
            case 2: /* insert */
                if (n < sizeof p) {
                    memmove(p + at + 1, p + at, n - at);
                    p[at] = (uint8_t)rng();
                    n++;
                }
                break;
            default: /* remove */
                if (n > 1) {
                    memmove(p + at, p + at + 1, n - at - 1);
                    n--;
                }
                break;
            }
        }
        if (rng_below(8) != 0 && n >= 4) fix_len(p, n);
        feed(p, n);
    }
    for (int t = 1; t < MSG_TYPE_MAX_; t++) {
        buf_free(&frames[t][0]);
        buf_free(&frames[t][1]);
    }
}

/* A random byte stream framed and decoded the way batond reads: it stops at
 * the first bad frame, as the connection would be closed. */
TEST(random_stream)
{
    struct buf s = {0};

    rng_state = 42;
    for (int round = 0; round < 200; round++) {
        buf_reset(&s);
        /* Some real frames, then garbage. */
        for (int j = 0; j < 5; j++) {
            struct msg m;
            sample(1 + (int)rng_below(MSG_TYPE_MAX_ - 1), V_TYPICAL, &m);
            ASSERT_EQ(proto_encode(&s, &m), 0);
        }
        for (int j = 0; j < 64; j++) ASSERT_EQ(buf_put_u8(&s, (uint8_t)rng()), 0);
        uint8_t *p = dup_exact(s.data, s.len);
        size_t off = 0, fl;
        int rv, good = 0;
        while ((rv = proto_frame_check(p + off, s.len - off, &fl)) == 1) {
            struct msg d;
            rv = proto_decode(p + off, fl, &d);
            if (rv != 0) break;
            msg_free(&d);
            off += fl;
            good++;
        }
        ASSERT_GE(good, 5);
        ASSERT(rv == 0 || rv == BATON_EMALFORMED || rv == BATON_ETOOBIG);
        free(p);
    }
    buf_free(&s);
}

TEST(unknown_type)
{
    static const uint16_t bad[] = {0, MSG_TYPE_MAX_, MSG_TYPE_MAX_ + 1, 0x7FFF, 0xFFFF};
    struct buf b = {0};

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t p[PROTO_HDR_LEN + 4] = {0};
        struct msg m = {0};

        /* Decoding: refused, with type and req_id still reported. */
        le_put_u16(p + 4, bad[i]);
        le_put_u64(p + 6, 0xDEADBEEF);
        fix_len(p, PROTO_HDR_LEN);
        ASSERT_EQ(proto_decode(p, PROTO_HDR_LEN, &m), BATON_EMALFORMED);
        ASSERT_EQ(m.type, bad[i]);
        ASSERT_UEQ(m.req_id, 0xDEADBEEF);
        msg_free(&m); /* harmless */
        fix_len(p, sizeof p);
        ASSERT_EQ(proto_decode(p, sizeof p, &m), BATON_EMALFORMED);

        /* Encoding: refused, nothing written. */
        memset(&m, 0, sizeof m);
        m.type = bad[i];
        ASSERT_EQ(proto_encode(&b, &m), BATON_EINVAL);
        ASSERT_UEQ(b.len, 0);
    }
    buf_free(&b);
}

/* One byte (or eight) more than the body needs is an error for every type. */
TEST(trailing_bytes)
{
    for (int t = 1; t < MSG_TYPE_MAX_; t++) {
        for (int v = 0; v < N_VARIANTS; v++) {
            for (size_t extra = 1; extra <= 8; extra += 7) {
                struct msg m, d;
                struct buf b;
                uint8_t *p;

                sample(t, v, &m);
                encode_ok(&m, &b);
                for (size_t k = 0; k < extra; k++) ASSERT_EQ(buf_put_u8(&b, 0), 0);
                fix_len(b.data, b.len);
                p = dup_exact(b.data, b.len);
                ASSERT_EQ(proto_decode(p, b.len, &d), BATON_EMALFORMED);
                ASSERT_EQ(d.type, t);
                ASSERT_UEQ(d.req_id, m.req_id);
                free(p);
                buf_free(&b);
            }
        }
    }
}

/* ---- string limits -------------------------------------------------------- */

/* Accessors for each string field of a sample (the typical variant). */
static struct pstr *f_hello(struct msg *m) { return &m->u.hello.client_name; }
static struct pstr *f_open(struct msg *m) { return &m->u.open_session.client_name; }
static struct pstr *f_acquire(struct msg *m) { return &m->u.op.lock; }
static struct pstr *f_release(struct msg *m) { return &m->u.op.lock; }
static struct pstr *f_cancel(struct msg *m) { return &m->u.op.lock; }
static struct pstr *f_granted(struct msg *m) { return &m->u.push.lock; }
static struct pstr *f_wait_failed(struct msg *m) { return &m->u.push.lock; }
static struct pstr *f_raft_addr(struct msg *m) { return &m->u.status_r.members[1].raft_addr; }
static struct pstr *f_client_addr(struct msg *m) { return &m->u.status_r.members[2].client_addr; }
static struct pstr *f_lock_info(struct msg *m) { return &m->u.lock_info.lock; }
static struct pstr *f_lock_info_r(struct msg *m) { return &m->u.lock_info_r.lock; }
static struct pstr *f_watch(struct msg *m) { return &m->u.watch.lock; }
static struct pstr *f_watch_event(struct msg *m) { return &m->u.watch_event.info.lock; }
static struct pstr *f_prefix(struct msg *m) { return &m->u.list_locks.prefix; }
static struct pstr *f_item_name(struct msg *m) { return &m->u.list_locks_r.items[1].name; }
static struct pstr *f_redirect(struct msg *m) { return &m->u.redirect.client_addr; }
static struct pstr *f_error(struct msg *m) { return &m->u.error.message; }
static struct pstr *f_lost(struct msg *m) { return &m->u.push.lock; }
static struct pstr *f_force(struct msg *m) { return &m->u.force_release.lock; }
static struct pstr *f_sess_name(struct msg *m) { return &m->u.sessions_r.items[0].client_name; }
static struct pstr *f_add_raft(struct msg *m) { return &m->u.member_add.raft_addr; }
static struct pstr *f_add_client(struct msg *m) { return &m->u.member_add.client_addr; }

static const struct strfield {
    const char *what;
    int type;
    struct pstr *(*get)(struct msg *m);
    size_t max;
    int is_lock; /* 1..max bytes and no NUL, rather than 0..max bytes */
} strfields[] = {
    {"hello.client_name", MSG_HELLO, f_hello, BATON_MAX_CLIENT_NAME, 0},
    {"open_session.client_name", MSG_OPEN_SESSION, f_open, BATON_MAX_CLIENT_NAME, 0},
    {"acquire.lock", MSG_ACQUIRE, f_acquire, BATON_MAX_NAME, 1},
    {"release.lock", MSG_RELEASE, f_release, BATON_MAX_NAME, 1},
    {"cancel.lock", MSG_CANCEL, f_cancel, BATON_MAX_NAME, 1},
    {"granted.lock", MSG_GRANTED, f_granted, BATON_MAX_NAME, 1},
    {"wait_failed.lock", MSG_WAIT_FAILED, f_wait_failed, BATON_MAX_NAME, 1},
    {"status_r.raft_addr", MSG_STATUS_R, f_raft_addr, BATON_MAX_ADDR, 0},
    {"status_r.client_addr", MSG_STATUS_R, f_client_addr, BATON_MAX_ADDR, 0},
    {"lock_info.lock", MSG_LOCK_INFO, f_lock_info, BATON_MAX_NAME, 1},
    {"lock_info_r.lock", MSG_LOCK_INFO_R, f_lock_info_r, BATON_MAX_NAME, 1},
    {"watch.lock", MSG_WATCH, f_watch, BATON_MAX_NAME, 1},
    {"watch_event.lock", MSG_WATCH_EVENT, f_watch_event, BATON_MAX_NAME, 1},
    {"list_locks.prefix", MSG_LIST_LOCKS, f_prefix, BATON_MAX_NAME, 0},
    {"list_locks_r.name", MSG_LIST_LOCKS_R, f_item_name, BATON_MAX_NAME, 1},
    {"redirect.client_addr", MSG_REDIRECT, f_redirect, BATON_MAX_ADDR, 0},
    {"error.message", MSG_ERROR, f_error, BATON_MAX_ERRMSG, 0},
    {"lost.lock", MSG_LOST, f_lost, BATON_MAX_NAME, 1},
    {"force_release.lock", MSG_FORCE_RELEASE, f_force, BATON_MAX_NAME, 1},
    {"sessions_r.client_name", MSG_SESSIONS_R, f_sess_name, BATON_MAX_CLIENT_NAME, 0},
    {"member_add.raft_addr", MSG_MEMBER_ADD, f_add_raft, BATON_MAX_ADDR, 0},
    {"member_add.client_addr", MSG_MEMBER_ADD, f_add_client, BATON_MAX_ADDR, 0},
};
#define N_STRFIELDS (sizeof strfields / sizeof strfields[0])

/*
 * Rewrite the one string in frame `in` whose bytes are `needle` so that it
 * holds s[0..n) instead, fixing its u16 length and the frame's length. This
 * forges frames the encoder would refuse to write.
 */
static void forge_str(const struct buf *in, const char *needle, size_t needle_n, const char *s,
                      size_t n, struct buf *out)
{
    const uint8_t *at = memmem(in->data, in->len, needle, needle_n);
    size_t pos;

    ASSERT(at != NULL);
    ASSERT(memmem(at + 1, in->len - (size_t)(at + 1 - in->data), needle, needle_n) == NULL);
    pos = (size_t)(at - in->data);
    ASSERT_UEQ(le_get_u16(in->data + pos - 2), needle_n);
    buf_init(out);
    ASSERT_EQ(buf_put(out, in->data, pos - 2), 0);
    ASSERT_EQ(buf_put_u16(out, (uint16_t)n), 0);
    ASSERT_EQ(buf_put(out, s, n), 0);
    ASSERT_EQ(buf_put(out, in->data + pos + needle_n, in->len - pos - needle_n), 0);
    fix_len(out->data, out->len);
}

/* Decode a frame that is expected to be refused as malformed. */
static void assert_decode_refused(const struct buf *f, int type)
{
    uint8_t *p = dup_exact(f->data, f->len);
    size_t fl = 0;
    struct msg d;

    ASSERT_EQ(proto_frame_check(p, f->len, &fl), 1);
    ASSERT_EQ(proto_decode(p, fl, &d), BATON_EMALFORMED);
    ASSERT_EQ(d.type, type);
    free(p);
}

/* Decode a frame that is expected to be accepted, with string s in it. */
static void assert_decode_accepted(const struct buf *f, const struct strfield *sf, const char *s,
                                   size_t n)
{
    uint8_t *p = dup_exact(f->data, f->len);
    struct msg d;

    ASSERT_EQ(proto_decode(p, f->len, &d), 0);
    ASSERT_PSTR_EQ(*sf->get(&d), psn(s, n));
    msg_free(&d);
    free(p);
}

/*
 * Every string field at its limit (accepted both ways) and one byte over
 * (encoder: BATON_ETOOBIG; decoder: BATON_EMALFORMED). Lock names must also
 * be non-empty and free of NUL bytes; other strings may be empty and may
 * hold any byte.
 */
TEST(string_limits)
{
    static char tilde[BATON_MAX_ERRMSG + 1];
    struct buf prefill = {0};

    memset(tilde, '~', sizeof tilde);
    ASSERT_EQ(buf_put(&prefill, "KEEP", 4), 0);
    for (size_t i = 0; i < N_STRFIELDS; i++) {
        const struct strfield *sf = &strfields[i];
        struct msg m;
        struct buf ok, forged;

        /* At the limit: fine. */
        sample(sf->type, V_TYPICAL, &m);
        *sf->get(&m) = psn(tilde, sf->max);
        encode_ok(&m, &ok);
        assert_decode_accepted(&ok, sf, tilde, sf->max);

        /* One over: refused by the encoder, which writes nothing... */
        sample(sf->type, V_TYPICAL, &m);
        *sf->get(&m) = psn(tilde, sf->max + 1);
        ASSERT_EQ(proto_encode(&prefill, &m), BATON_ETOOBIG);
        ASSERT_UEQ(prefill.len, 4);
        /* ...and by the decoder. */
        forge_str(&ok, tilde, sf->max, tilde, sf->max + 1, &forged);
        assert_decode_refused(&forged, sf->type);
        buf_free(&forged);
        buf_free(&ok);
        /* A length far beyond the frame. */
        sample(sf->type, V_TYPICAL, &m);
        *sf->get(&m) = ps("@@");
        encode_ok(&m, &ok);
        forge_str(&ok, "@@", 2, "@@", 2, &forged);
        le_put_u16(forged.data + (size_t)((uint8_t *)memmem(forged.data, forged.len, "@@", 2) -
                                          forged.data) - 2,
                   UINT16_MAX);
        assert_decode_refused(&forged, sf->type);
        buf_free(&forged);

        /* Empty, and with a NUL byte inside. */
        forge_str(&ok, "@@", 2, "", 0, &forged);
        sample(sf->type, V_TYPICAL, &m);
        *sf->get(&m) = psn("", 0);
        if (sf->is_lock) {
            ASSERT_EQ(proto_encode(&prefill, &m), BATON_EINVAL);
            assert_decode_refused(&forged, sf->type);
        } else {
            struct buf e;
            encode_ok(&m, &e);
            ASSERT_UEQ(e.len, forged.len);
            ASSERT(memcmp(e.data, forged.data, e.len) == 0);
            assert_decode_accepted(&forged, sf, "", 0);
            buf_free(&e);
        }
        buf_free(&forged);
        forge_str(&ok, "@@", 2, "a\0b", 3, &forged);
        sample(sf->type, V_TYPICAL, &m);
        *sf->get(&m) = psn("a\0b", 3);
        if (sf->is_lock) {
            ASSERT_EQ(proto_encode(&prefill, &m), BATON_EINVAL);
            assert_decode_refused(&forged, sf->type);
        } else {
            struct buf e;
            encode_ok(&m, &e);
            ASSERT_UEQ(e.len, forged.len);
            ASSERT(memcmp(e.data, forged.data, e.len) == 0);
            assert_decode_accepted(&forged, sf, "a\0b", 3);
            buf_free(&e);
        }
        buf_free(&forged);

        /* A NULL pointer with a length is the caller's bug. */
        sample(sf->type, V_TYPICAL, &m);
        *sf->get(&m) = psn(NULL, 3);
        ASSERT_EQ(proto_encode(&prefill, &m), BATON_EINVAL);
        ASSERT_UEQ(prefill.len, 4);
        ASSERT(memcmp(prefill.data, "KEEP", 4) == 0);
        buf_free(&ok);
    }
    buf_free(&prefill);
}

TEST(lock_name_ok)
{
    char big[BATON_MAX_NAME + 1];

    memset(big, 'n', sizeof big);
    ASSERT(proto_lock_name_ok("a", 1));
    ASSERT(proto_lock_name_ok("jobs/nightly", 12));
    ASSERT(proto_lock_name_ok("\xff\x01 ", 3)); /* any byte but NUL */
    ASSERT(proto_lock_name_ok(big, BATON_MAX_NAME));
    ASSERT(!proto_lock_name_ok(big, BATON_MAX_NAME + 1));
    ASSERT(!proto_lock_name_ok("", 0));
    ASSERT(!proto_lock_name_ok("a", 0));
    ASSERT(!proto_lock_name_ok("a\0b", 3));
    ASSERT(!proto_lock_name_ok("ab\0", 3));
    ASSERT(!proto_lock_name_ok("\0", 1));
    ASSERT(!proto_lock_name_ok(NULL, 1));
    ASSERT(!proto_lock_name_ok(NULL, 0));
}

/* ---- list counts ------------------------------------------------------------ */

/* Forge list frames by hand: the count field says `count`, but only
 * `present` items follow it, then whatever comes after the list. */
static void forge_status_r(struct buf *b, uint32_t count, uint32_t present)
{
    begin_frame(b, MSG_STATUS_R, 9);
    for (int i = 0; i < 4 + 1 + 4; i++) buf_put_u8(b, 0); /* node_id, role, leader_id */
    for (int i = 0; i < 4; i++) buf_put_u64(b, 0);        /* term .. applied_index */
    buf_put_u32(b, count);
    for (uint32_t i = 0; i < present; i++) {
        buf_put_u32(b, i);
        buf_put_str(b, "h:1", 3);
        buf_put_str(b, "h:2", 3);
    }
    buf_put_u64(b, 0x0102030405060708ull); /* state_digest */
    end_frame(b);
}

static void forge_lock_info_r(struct buf *b, uint32_t count, uint32_t present)
{
    begin_frame(b, MSG_LOCK_INFO_R, 9);
    buf_put_u8(b, 1);
    for (int i = 0; i < 4; i++) buf_put_u64(b, 1);
    buf_put_u32(b, count); /* total_waiters */
    buf_put_u32(b, count);
    for (uint32_t i = 0; i < present; i++) {
        buf_put_u64(b, i);
        buf_put_u64(b, i);
        buf_put_i64(b, -1);
    }
    buf_put_u8(b, 0); /* delayed */
    buf_put_str(b, "L", 1);
    end_frame(b);
}

static void forge_list_locks_r(struct buf *b, uint32_t count, uint32_t present)
{
    begin_frame(b, MSG_LIST_LOCKS_R, 9);
    buf_put_u32(b, count);
    for (uint32_t i = 0; i < present; i++) {
        buf_put_str(b, "L", 1);
        buf_put_u64(b, i);
        buf_put_u64(b, i);
        buf_put_u32(b, i);
    }
    buf_put_u8(b, 0);
    end_frame(b);
}

static void forge_sessions_r(struct buf *b, uint32_t count, uint32_t present)
{
    begin_frame(b, MSG_SESSIONS_R, 9);
    buf_put_u32(b, count);
    for (uint32_t i = 0; i < present; i++) {
        buf_put_u64(b, i + 1);
        buf_put_u32(b, i);
        buf_put_u64(b, i);
        buf_put_str(b, "", 0);
        buf_put_u32(b, i);
        buf_put_u32(b, i);
    }
    buf_put_u8(b, 0);
    end_frame(b);
}

/* Decode a forged list frame; returns the decode result. */
static int decode_forged(const struct buf *b)
{
    uint8_t *p = dup_exact(b->data, b->len);
    struct msg d;
    int rv = proto_decode(p, b->len, &d);

    if (rv == 0) {
        msg_free(&d);
    } else {
        /* Whatever was allocated before the error is gone already. */
        ASSERT(d.u.status_r.members == NULL || d.type != MSG_STATUS_R);
        ASSERT(d.u.lock_info_r.waiters == NULL || d.type != MSG_LOCK_INFO_R);
        ASSERT(d.u.list_locks_r.items == NULL || d.type != MSG_LIST_LOCKS_R);
        ASSERT(d.u.sessions_r.items == NULL || d.type != MSG_SESSIONS_R);
    }
    free(p);
    return rv;
}

/*
 * Counts at the limit with all items present decode; over the limit they
 * are refused even when the items are all there; and counts the remaining
 * bytes cannot hold (up to 2^32-1, which must not turn into an allocation)
 * are refused, as are counts one short or one long of what is present.
 */
TEST(list_count_limits)
{
    static const struct {
        void (*forge)(struct buf *, uint32_t, uint32_t);
        uint32_t max;
    } lists[] = {
        {forge_status_r, BATON_MAX_MEMBERS},
        {forge_lock_info_r, BATON_MAX_LIST},
        {forge_list_locks_r, BATON_MAX_LIST},
        {forge_sessions_r, BATON_MAX_LIST},
    };

    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        struct buf b;
        uint32_t max = lists[i].max;

        lists[i].forge(&b, max, max);
        ASSERT_EQ(decode_forged(&b), 0);
        buf_free(&b);
        lists[i].forge(&b, 0, 0);
        ASSERT_EQ(decode_forged(&b), 0);
        buf_free(&b);
        lists[i].forge(&b, max + 1, max + 1);
        ASSERT_EQ(decode_forged(&b), BATON_EMALFORMED);
        buf_free(&b);
        lists[i].forge(&b, 3, 2);
        ASSERT_EQ(decode_forged(&b), BATON_EMALFORMED);
        buf_free(&b);
        lists[i].forge(&b, 2, 3);
        ASSERT_EQ(decode_forged(&b), BATON_EMALFORMED);
        buf_free(&b);
        lists[i].forge(&b, max, max - 1);
        ASSERT_EQ(decode_forged(&b), BATON_EMALFORMED);
        buf_free(&b);
        for (uint32_t huge = UINT32_MAX; huge > max; huge /= 3) {
            lists[i].forge(&b, huge, 1);
            ASSERT_EQ(decode_forged(&b), BATON_EMALFORMED);
            buf_free(&b);
        }
    }
}

/* An item that goes bad after the array was allocated: the decoder frees
 * it (LeakSanitizer would notice otherwise) and reports the error. */
TEST(list_error_after_allocation)
{
    struct msg m;
    struct buf b, forged;
    char name[] = "z/%";

    sample(MSG_LIST_LOCKS_R, V_TYPICAL, &m);
    items[2].name = ps(name);
    encode_ok(&m, &b);
    forge_str(&b, "z/%", 3, "z\0%", 3, &forged);
    ASSERT_EQ(decode_forged(&forged), BATON_EMALFORMED);
    buf_free(&forged);
    buf_free(&b);

    sample(MSG_STATUS_R, V_TYPICAL, &m);
    members[2].client_addr = ps("@@");
    encode_ok(&m, &b);
    {
        char longer[BATON_MAX_ADDR + 1];
        memset(longer, 'x', sizeof longer);
        forge_str(&b, "@@", 2, longer, sizeof longer, &forged);
    }
    ASSERT_EQ(decode_forged(&forged), BATON_EMALFORMED);
    buf_free(&forged);
    buf_free(&b);
}

/* ---- the encoder ------------------------------------------------------------ */

/*
 * Every way the encoder can refuse a message, each tried on a buffer that
 * already holds data: the error is the documented one and the buffer's
 * contents are exactly as before. Some failures are found only deep in a
 * large body, after the buffer has had to grow.
 */
TEST(encoder_rollback)
{
    static const char keep[] = "already queued bytes";
    struct buf b = {0};
    struct msg m;
    char bad[BATON_MAX_NAME + 1];

    memset(bad, 'b', sizeof bad);
    ASSERT_EQ(buf_put(&b, keep, sizeof keep), 0);
#define EXPECT_REFUSED(code)                                                   \
    do {                                                                       \
        ASSERT_EQ(proto_encode(&b, &m), (code));                               \
        ASSERT_UEQ(b.len, sizeof keep);                                        \
        ASSERT(memcmp(b.data, keep, sizeof keep) == 0);                        \
    } while (0)

    sample(MSG_STATUS_R, V_TYPICAL, &m);
    m.u.status_r.n_members = BATON_MAX_MEMBERS + 1;
    EXPECT_REFUSED(BATON_ETOOBIG);
    m.u.status_r.n_members = 1;
    m.u.status_r.members = NULL;
    EXPECT_REFUSED(BATON_EINVAL);

    sample(MSG_LOCK_INFO_R, V_TYPICAL, &m);
    m.u.lock_info_r.n_waiters = BATON_MAX_LIST + 1;
    EXPECT_REFUSED(BATON_ETOOBIG);
    m.u.lock_info_r.n_waiters = 1;
    m.u.lock_info_r.waiters = NULL;
    EXPECT_REFUSED(BATON_EINVAL);

    sample(MSG_LIST_LOCKS_R, V_TYPICAL, &m);
    m.u.list_locks_r.n = BATON_MAX_LIST + 1;
    EXPECT_REFUSED(BATON_ETOOBIG);
    m.u.list_locks_r.n = 1;
    m.u.list_locks_r.items = NULL;
    EXPECT_REFUSED(BATON_EINVAL);

    /* Found after ~280 KB of items have been written. */
    sample(MSG_LIST_LOCKS_R, V_EXTREME, &m);
    items[BATON_MAX_LIST - 1].name = psn(bad, sizeof bad);
    EXPECT_REFUSED(BATON_ETOOBIG);
    items[BATON_MAX_LIST - 1].name = psn("x\0", 2);
    EXPECT_REFUSED(BATON_EINVAL);
    sample(MSG_LOCK_INFO_R, V_EXTREME, &m);
    m.u.lock_info_r.lock = psn("", 0);
    EXPECT_REFUSED(BATON_EINVAL);

    /* A lock_delay_ms the decoder would refuse, found after the name. */
    sample(MSG_ACQUIRE, V_TYPICAL, &m);
    m.u.op.lock_delay_ms = -2;
    EXPECT_REFUSED(BATON_EINVAL);
    m.u.op.lock_delay_ms = INT32_MIN;
    EXPECT_REFUSED(BATON_EINVAL);

    memset(&m, 0, sizeof m);
    m.type = MSG_TYPE_MAX_;
    EXPECT_REFUSED(BATON_EINVAL);
    ASSERT_EQ(proto_encode(&b, NULL), BATON_EINVAL);
#undef EXPECT_REFUSED

    /* The buffer still works, and the next frame follows the old bytes. */
    sample(MSG_ERROR, V_TYPICAL, &m);
    ASSERT_EQ(proto_encode(&b, &m), 0);
    {
        struct msg d;
        size_t fl = 0;
        ASSERT_EQ(proto_frame_check(b.data + sizeof keep, b.len - sizeof keep, &fl), 1);
        ASSERT_UEQ(fl, b.len - sizeof keep);
        ASSERT_EQ(proto_decode(b.data + sizeof keep, fl, &d), 0);
        assert_msg_eq(&m, &d);
        msg_free(&d);
    }
    buf_free(&b);
}

/* ---- small things ----------------------------------------------------------- */

TEST(msg_free_is_safe)
{
    struct msg m;

    msg_free(NULL);
    for (int t = 0; t <= MSG_TYPE_MAX_; t++) {
        memset(&m, 0, sizeof m);
        m.type = (uint16_t)t;
        msg_free(&m);
        msg_free(&m);
    }
}

TEST(type_names)
{
    for (int t = 1; t < MSG_TYPE_MAX_; t++) {
        const char *n = msg_type_name(t);
        ASSERT(n != NULL && strcmp(n, "?") != 0 && n[0] != '\0');
        for (int u = 1; u < t; u++) ASSERT(strcmp(n, msg_type_name(u)) != 0);
    }
    ASSERT_STREQ(msg_type_name(MSG_ACQUIRE), "ACQUIRE");
    ASSERT_STREQ(msg_type_name(MSG_LIST_LOCKS_R), "LIST_LOCKS_R");
    ASSERT_STREQ(msg_type_name(MSG_ERROR), "ERROR");
    ASSERT_STREQ(msg_type_name(0), "?");
    ASSERT_STREQ(msg_type_name(MSG_TYPE_MAX_), "?");
    ASSERT_STREQ(msg_type_name(-1), "?");
    ASSERT_STREQ(msg_type_name(INT_MAX), "?");
    ASSERT_STREQ(msg_type_name(INT_MIN), "?");
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(roundtrip_every_type);
    RUN(decoded_strings_borrow_from_frame);
    RUN(golden_bytes);
    RUN(golden_bytes_member_add);
    RUN(golden_bytes_lock_delay);
    RUN(golden_bytes_status_r);
    RUN(acquire_lock_delay_values);
    RUN(layout_matches_header);
    RUN(frame_byte_by_byte);
    RUN(frames_concatenated_and_chunked);
    RUN(frame_length_limits);
    RUN(frame_at_max_size);
    RUN(decode_length_mismatch);
    RUN(truncated_frames);
    RUN(corrupted_frames);
    RUN(random_garbage);
    RUN(random_mutations);
    RUN(random_stream);
    RUN(unknown_type);
    RUN(trailing_bytes);
    RUN(string_limits);
    RUN(lock_name_ok);
    RUN(list_count_limits);
    RUN(list_error_after_allocation);
    RUN(encoder_rollback);
    RUN(msg_free_is_safe);
    RUN(type_names);
    return runner_done();
}
