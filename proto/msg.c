/*
 * msg.c -- the wire codec: framing, decoding and encoding of baton's
 * messages. See msg.h for the frame layout and every message body.
 *
 * The decoder reads through a struct rd, whose error is sticky: a body is
 * read field by field and checked once at the end, so a short frame simply
 * leaves the reader failed and nothing past the frame is ever touched.
 * Strings are borrowed from the frame; only the five list bodies allocate,
 * and only after their count has been checked against its limit and against
 * the bytes that are left. The encoder mirrors the decoder with a small
 * writer whose error is sticky too, and it rolls `out` back to its starting
 * length when anything fails, so a refused message leaves no partial frame.
 *
 * Both directions enforce the same rules, so a frame that decodes also
 * re-encodes to exactly the same bytes (the encoding is canonical).
 */
#include "proto/msg.h"

#include <stdlib.h>
#include <string.h>

#include "client/baton_defs.h"

/*
 * The smallest wire size of one list item. A count is rejected before
 * anything is allocated when the rest of the frame could not hold that many
 * items, so a forged count can never cause a large allocation.
 */
#define MEMBER_MIN_WIRE (4 + 2 + 2)          /* u32 id and two empty strings */
#define MEMBER_INFO_MIN_WIRE (4 + 1 + 2 + 2) /* u32 id, u8 role and two empty strings */
#define WAITER_WIRE (8 + 8 + 8)              /* u64 session, u64 waiter, i64 wait_ms */
#define SUMMARY_MIN_WIRE (2 + 1 + 8 + 8 + 4) /* a lock name has at least one byte */
#define SESSION_MIN_WIRE (8 + 4 + 8 + 2 + 4 + 4) /* an empty client name */

/* Bytes that follow a list in its body, at the least. */
#define STATUS_R_TAIL 8          /* u64 state_digest */
#define LOCK_INFO_R_TAIL (1 + 2 + 1) /* u8 delayed and the lock name */
#define LIST_LOCKS_R_TAIL 1      /* u8 more */
#define SESSIONS_R_TAIL 1        /* u8 more */

static const char *const type_names[MSG_TYPE_MAX_] = {
    [MSG_HELLO] = "HELLO",
    [MSG_HELLO_OK] = "HELLO_OK",
    [MSG_OPEN_SESSION] = "OPEN_SESSION",
    [MSG_SESSION] = "SESSION",
    [MSG_ACQUIRE] = "ACQUIRE",
    [MSG_RELEASE] = "RELEASE",
    [MSG_CANCEL] = "CANCEL",
    [MSG_CLOSE_SESSION] = "CLOSE_SESSION",
    [MSG_KEEPALIVE] = "KEEPALIVE",
    [MSG_RESULT] = "RESULT",
    [MSG_GRANTED] = "GRANTED",
    [MSG_WAIT_FAILED] = "WAIT_FAILED",
    [MSG_STATUS] = "STATUS",
    [MSG_STATUS_R] = "STATUS_R",
    [MSG_LOCK_INFO] = "LOCK_INFO",
    [MSG_LOCK_INFO_R] = "LOCK_INFO_R",
    [MSG_LIST_LOCKS] = "LIST_LOCKS",
    [MSG_LIST_LOCKS_R] = "LIST_LOCKS_R",
    [MSG_REDIRECT] = "REDIRECT",
    [MSG_NO_LEADER] = "NO_LEADER",
    [MSG_ERROR] = "ERROR",
    [MSG_LOST] = "LOST",
    [MSG_SESSION_EXPIRED] = "SESSION_EXPIRED",
    [MSG_FORCE_RELEASE] = "FORCE_RELEASE",
    [MSG_FORCE_RELEASE_R] = "FORCE_RELEASE_R",
    [MSG_EXPIRE_SESSION] = "EXPIRE_SESSION",
    [MSG_TRANSFER] = "TRANSFER",
    [MSG_TRANSFER_R] = "TRANSFER_R",
    [MSG_LIST_SESSIONS] = "LIST_SESSIONS",
    [MSG_SESSIONS_R] = "SESSIONS_R",
    [MSG_WATCH] = "WATCH",
    [MSG_WATCH_EVENT] = "WATCH_EVENT",
    [MSG_SNAPSHOT] = "SNAPSHOT",
    [MSG_SNAPSHOT_R] = "SNAPSHOT_R",
    [MSG_MEMBERS] = "MEMBERS",
    [MSG_MEMBERS_R] = "MEMBERS_R",
    [MSG_MEMBER_REMOVE] = "MEMBER_REMOVE",
    [MSG_MEMBER_ADD] = "MEMBER_ADD",
};

const char *msg_type_name(int type)
{
    if (type <= 0 || type >= MSG_TYPE_MAX_ || type_names[type] == NULL) return "?";
    return type_names[type];
}

int proto_lock_name_ok(const char *name, size_t n)
{
    if (name == NULL || n == 0 || n > BATON_MAX_NAME) return 0;
    return memchr(name, '\0', n) == NULL;
}

int proto_frame_check(const uint8_t *data, size_t len, size_t *frame_len)
{
    uint32_t n;

    if (len < 4) return 0;
    n = le_get_u32(data);
    if (n > BATON_MAX_FRAME) return BATON_ETOOBIG;
    if (n < PROTO_FRAME_MIN) return BATON_EMALFORMED;
    if (len - 4 < n) return 0;
    *frame_len = 4 + (size_t)n;
    return 1;
}

/* ---- decoding ------------------------------------------------------------ */

/* Mark the reader failed; like rd's own errors, this sticks. */
static void rd_fail(struct rd *r)
{
    r->err = BATON_EMALFORMED;
}

/* Read a string of at most max bytes into *s (borrowed from the frame). */
static void get_str(struct rd *r, size_t max, struct pstr *s)
{
    const char *p;
    uint16_t n;

    if (rd_str(r, max, &p, &n) != 0) return;
    s->p = p;
    s->n = n;
}

/* Read a string that names a lock: 1..BATON_MAX_NAME bytes, no NUL. */
static void get_lock(struct rd *r, struct pstr *s)
{
    get_str(r, BATON_MAX_NAME, s);
    if (r->err == 0 && !proto_lock_name_ok(s->p, s->n)) rd_fail(r);
}

/*
 * Read a list count. It must not exceed max, and the bytes left must be able
 * to hold that many items of at least item_min bytes each followed by `tail`
 * more bytes. Returns the count, or 0 with the reader failed.
 */
static uint32_t get_count(struct rd *r, uint32_t max, size_t item_min, size_t tail)
{
    uint32_t n;
    size_t left;

    if (rd_u32(r, &n) != 0) return 0;
    left = rd_left(r);
    if (n > max || left < tail || (left - tail) / item_min < n) {
        rd_fail(r);
        return 0;
    }
    return n;
}

/* Allocate a zeroed array of n items, or return NULL for an empty list. On
 * failure *err is set to BATON_ENOMEM. */
static void *alloc_items(uint32_t n, size_t size, int *err)
{
    void *p;

    if (n == 0) return NULL;
    p = calloc(n, size);
    if (p == NULL) *err = BATON_ENOMEM;
    return p;
}

static int decode_status_r(struct rd *r, struct msg_status_r *s)
{
    int err = 0;

    rd_u32(r, &s->node_id);
    rd_u8(r, &s->role);
    rd_u32(r, &s->leader_id);
    rd_u64(r, &s->term);
    rd_u64(r, &s->last_index);
    rd_u64(r, &s->commit_index);
    rd_u64(r, &s->applied_index);
    s->n_members = get_count(r, BATON_MAX_MEMBERS, MEMBER_MIN_WIRE, STATUS_R_TAIL);
    if (r->err != 0) return r->err;
    s->members = alloc_items(s->n_members, sizeof *s->members, &err);
    if (err != 0) return err;
    for (uint32_t i = 0; i < s->n_members && r->err == 0; i++) {
        struct msg_member *mb = &s->members[i];
        rd_u32(r, &mb->id);
        get_str(r, BATON_MAX_ADDR, &mb->raft_addr);
        get_str(r, BATON_MAX_ADDR, &mb->client_addr);
    }
    rd_u64(r, &s->state_digest);
    return r->err;
}

static int decode_members_r(struct rd *r, struct msg_members_r *mr)
{
    int err = 0;

    mr->n = get_count(r, BATON_MAX_MEMBERS, MEMBER_INFO_MIN_WIRE, 0);
    if (r->err != 0) return r->err;
    mr->members = alloc_items(mr->n, sizeof *mr->members, &err);
    if (err != 0) return err;
    for (uint32_t i = 0; i < mr->n && r->err == 0; i++) {
        struct msg_member_info *mb = &mr->members[i];
        rd_u32(r, &mb->id);
        rd_u8(r, &mb->role);
        get_str(r, BATON_MAX_ADDR, &mb->raft_addr);
        get_str(r, BATON_MAX_ADDR, &mb->client_addr);
    }
    return r->err;
}

static int decode_lock_info_r(struct rd *r, struct msg_lock_info_r *li)
{
    int err = 0;

    rd_u8(r, &li->held);
    rd_u64(r, &li->holder_session);
    rd_u64(r, &li->holder_waiter);
    rd_u64(r, &li->fence);
    rd_u64(r, &li->granted_index);
    rd_u32(r, &li->total_waiters);
    li->n_waiters = get_count(r, BATON_MAX_LIST, WAITER_WIRE, LOCK_INFO_R_TAIL);
    if (r->err != 0) return r->err;
    li->waiters = alloc_items(li->n_waiters, sizeof *li->waiters, &err);
    if (err != 0) return err;
    for (uint32_t i = 0; i < li->n_waiters && r->err == 0; i++) {
        struct msg_waiter *w = &li->waiters[i];
        rd_u64(r, &w->session);
        rd_u64(r, &w->waiter);
        rd_i64(r, &w->wait_ms);
    }
    rd_u8(r, &li->delayed);
    get_lock(r, &li->lock);
    return r->err;
}

static int decode_list_locks_r(struct rd *r, struct msg_list_locks_r *ll)
{
    int err = 0;

    ll->n = get_count(r, BATON_MAX_LIST, SUMMARY_MIN_WIRE, LIST_LOCKS_R_TAIL);
    if (r->err != 0) return r->err;
    ll->items = alloc_items(ll->n, sizeof *ll->items, &err);
    if (err != 0) return err;
    for (uint32_t i = 0; i < ll->n && r->err == 0; i++) {
        struct msg_lock_summary *it = &ll->items[i];
        get_lock(r, &it->name);
        rd_u64(r, &it->holder_session);
        rd_u64(r, &it->fence);
        rd_u32(r, &it->n_waiters);
    }
    rd_u8(r, &ll->more);
    return r->err;
}

static int decode_sessions_r(struct rd *r, struct msg_sessions_r *sr)
{
    int err = 0;

    sr->n = get_count(r, BATON_MAX_LIST, SESSION_MIN_WIRE, SESSIONS_R_TAIL);
    if (r->err != 0) return r->err;
    sr->items = alloc_items(sr->n, sizeof *sr->items, &err);
    if (err != 0) return err;
    for (uint32_t i = 0; i < sr->n && r->err == 0; i++) {
        struct msg_session_summary *it = &sr->items[i];
        rd_u64(r, &it->id);
        rd_u32(r, &it->ttl_ms);
        rd_u64(r, &it->created_index);
        get_str(r, BATON_MAX_CLIENT_NAME, &it->client_name);
        rd_u32(r, &it->n_holds);
        rd_u32(r, &it->n_waits);
    }
    rd_u8(r, &sr->more);
    return r->err;
}

/*
 * Decode the body of m->type from r into m->u. Returns 0, BATON_EMALFORMED
 * or BATON_ENOMEM; on error the caller frees whatever was allocated. The
 * caller also checks that no bytes are left over.
 */
static int decode_body(struct rd *r, struct msg *m)
{
    switch (m->type) {
    case MSG_HELLO:
        rd_u32(r, &m->u.hello.version);
        get_str(r, BATON_MAX_CLIENT_NAME, &m->u.hello.client_name);
        break;
    case MSG_HELLO_OK:
        rd_u32(r, &m->u.hello_ok.version);
        rd_u32(r, &m->u.hello_ok.node_id);
        break;
    case MSG_OPEN_SESSION:
        rd_u32(r, &m->u.open_session.ttl_ms);
        get_str(r, BATON_MAX_CLIENT_NAME, &m->u.open_session.client_name);
        break;
    case MSG_SESSION:
        rd_u64(r, &m->u.session.session);
        rd_u32(r, &m->u.session.ttl_ms);
        break;
    case MSG_ACQUIRE:
        rd_u64(r, &m->u.acquire.session);
        rd_u64(r, &m->u.acquire.seq);
        rd_u64(r, &m->u.acquire.ack_below);
        rd_i64(r, &m->u.acquire.wait_ms);
        get_lock(r, &m->u.acquire.lock);
        rd_i32(r, &m->u.acquire.lock_delay_ms);
        if (r->err == 0 && m->u.acquire.lock_delay_ms < BATON_LOCK_DELAY_NONE) rd_fail(r);
        break;
    case MSG_RELEASE:
        rd_u64(r, &m->u.release.session);
        rd_u64(r, &m->u.release.seq);
        rd_u64(r, &m->u.release.ack_below);
        rd_u64(r, &m->u.release.fence);
        get_lock(r, &m->u.release.lock);
        break;
    case MSG_CANCEL:
        rd_u64(r, &m->u.cancel.session);
        rd_u64(r, &m->u.cancel.seq);
        rd_u64(r, &m->u.cancel.ack_below);
        rd_u64(r, &m->u.cancel.waiter);
        get_lock(r, &m->u.cancel.lock);
        break;
    case MSG_CLOSE_SESSION:
        rd_u64(r, &m->u.close_session.session);
        rd_u64(r, &m->u.close_session.seq);
        rd_u64(r, &m->u.close_session.ack_below);
        break;
    case MSG_KEEPALIVE:
        rd_u64(r, &m->u.keepalive.session);
        break;
    case MSG_RESULT:
        rd_i32(r, &m->u.result.status);
        rd_u8(r, &m->u.result.kind);
        rd_u64(r, &m->u.result.value);
        break;
    case MSG_GRANTED:
        rd_u64(r, &m->u.granted.session);
        rd_u64(r, &m->u.granted.waiter);
        rd_u64(r, &m->u.granted.fence);
        get_lock(r, &m->u.granted.lock);
        break;
    case MSG_WAIT_FAILED:
        rd_u64(r, &m->u.wait_failed.session);
        rd_u64(r, &m->u.wait_failed.waiter);
        rd_i32(r, &m->u.wait_failed.status);
        get_lock(r, &m->u.wait_failed.lock);
        break;
    case MSG_STATUS:
    case MSG_NO_LEADER:
        break;
    case MSG_STATUS_R:
        return decode_status_r(r, &m->u.status_r);
    case MSG_LOCK_INFO:
        get_lock(r, &m->u.lock_info.lock);
        break;
    case MSG_LOCK_INFO_R:
        return decode_lock_info_r(r, &m->u.lock_info_r);
    case MSG_LIST_LOCKS:
        get_str(r, BATON_MAX_NAME, &m->u.list_locks.prefix);
        rd_u32(r, &m->u.list_locks.limit);
        break;
    case MSG_LIST_LOCKS_R:
        return decode_list_locks_r(r, &m->u.list_locks_r);
    case MSG_REDIRECT:
        rd_u32(r, &m->u.redirect.leader_id);
        get_str(r, BATON_MAX_ADDR, &m->u.redirect.client_addr);
        break;
    case MSG_ERROR:
        rd_i32(r, &m->u.error.code);
        get_str(r, BATON_MAX_ERRMSG, &m->u.error.message);
        break;
    case MSG_LOST:
        rd_u64(r, &m->u.lost.session);
        rd_u64(r, &m->u.lost.waiter);
        rd_u64(r, &m->u.lost.fence);
        rd_i32(r, &m->u.lost.status);
        get_lock(r, &m->u.lost.lock);
        break;
    case MSG_SESSION_EXPIRED:
        rd_u64(r, &m->u.session_expired.session);
        break;
    case MSG_FORCE_RELEASE:
        get_lock(r, &m->u.force_release.lock);
        break;
    case MSG_FORCE_RELEASE_R:
        rd_i32(r, &m->u.force_release_r.status);
        rd_u64(r, &m->u.force_release_r.lost_session);
        rd_u64(r, &m->u.force_release_r.lost_fence);
        rd_u64(r, &m->u.force_release_r.new_session);
        rd_u64(r, &m->u.force_release_r.new_fence);
        break;
    case MSG_EXPIRE_SESSION:
        rd_u64(r, &m->u.expire_session.session);
        break;
    case MSG_TRANSFER:
        rd_u32(r, &m->u.transfer.id);
        break;
    case MSG_TRANSFER_R:
        rd_u32(r, &m->u.transfer_r.leader_id);
        break;
    case MSG_LIST_SESSIONS:
        rd_u64(r, &m->u.list_sessions.after);
        rd_u32(r, &m->u.list_sessions.limit);
        break;
    case MSG_SESSIONS_R:
        return decode_sessions_r(r, &m->u.sessions_r);
    case MSG_WATCH:
        get_lock(r, &m->u.watch.lock);
        break;
    case MSG_WATCH_EVENT:
        rd_u64(r, &m->u.watch_event.seq);
        return decode_lock_info_r(r, &m->u.watch_event.info);
    case MSG_SNAPSHOT:
        break;
    case MSG_SNAPSHOT_R:
        rd_u64(r, &m->u.snapshot_r.index);
        break;
    case MSG_MEMBERS:
        break;
    case MSG_MEMBERS_R:
        return decode_members_r(r, &m->u.members_r);
    case MSG_MEMBER_REMOVE:
        rd_u32(r, &m->u.member_remove.id);
        break;
    case MSG_MEMBER_ADD:
        rd_u32(r, &m->u.member_add.id);
        get_str(r, BATON_MAX_ADDR, &m->u.member_add.raft_addr);
        get_str(r, BATON_MAX_ADDR, &m->u.member_add.client_addr);
        break;
    default:
        rd_fail(r);
        break;
    }
    return r->err;
}

int proto_decode(const uint8_t *frame, size_t frame_len, struct msg *m)
{
    struct rd r;
    uint32_t len = 0;
    int rv;

    memset(m, 0, sizeof *m);
    if (frame == NULL || frame_len < PROTO_HDR_LEN) return BATON_EMALFORMED;
    rd_init(&r, frame, frame_len);
    rd_u32(&r, &len);
    rd_u16(&r, &m->type);
    rd_u64(&r, &m->req_id);
    /* The length field must describe exactly the bytes we were given. */
    if (len != frame_len - 4 || len > BATON_MAX_FRAME) return BATON_EMALFORMED;
    rv = decode_body(&r, m);
    if (rv == 0 && rd_left(&r) != 0) rv = BATON_EMALFORMED;
    if (rv != 0) msg_free(m);
    return rv;
}

void msg_free(struct msg *m)
{
    if (m == NULL) return;
    switch (m->type) {
    case MSG_STATUS_R:
        free(m->u.status_r.members);
        m->u.status_r.members = NULL;
        m->u.status_r.n_members = 0;
        break;
    case MSG_LOCK_INFO_R:
        free(m->u.lock_info_r.waiters);
        m->u.lock_info_r.waiters = NULL;
        m->u.lock_info_r.n_waiters = 0;
        break;
    case MSG_LIST_LOCKS_R:
        free(m->u.list_locks_r.items);
        m->u.list_locks_r.items = NULL;
        m->u.list_locks_r.n = 0;
        break;
    case MSG_SESSIONS_R:
        free(m->u.sessions_r.items);
        m->u.sessions_r.items = NULL;
        m->u.sessions_r.n = 0;
        break;
    case MSG_WATCH_EVENT:
        free(m->u.watch_event.info.waiters);
        m->u.watch_event.info.waiters = NULL;
        m->u.watch_event.info.n_waiters = 0;
        break;
    case MSG_MEMBERS_R:
        free(m->u.members_r.members);
        m->u.members_r.members = NULL;
        m->u.members_r.n = 0;
        break;
    default:
        break;
    }
}

/* ---- encoding ------------------------------------------------------------ */

/* An appender whose first error sticks: later puts do nothing. */
struct wr {
    struct buf *b;
    int err;
};

static void put_u8(struct wr *w, uint8_t v)
{
    if (w->err == 0) w->err = buf_put_u8(w->b, v);
}

static void put_u16(struct wr *w, uint16_t v)
{
    if (w->err == 0) w->err = buf_put_u16(w->b, v);
}

static void put_u32(struct wr *w, uint32_t v)
{
    if (w->err == 0) w->err = buf_put_u32(w->b, v);
}

static void put_u64(struct wr *w, uint64_t v)
{
    if (w->err == 0) w->err = buf_put_u64(w->b, v);
}

static void put_i32(struct wr *w, int32_t v)
{
    if (w->err == 0) w->err = buf_put_i32(w->b, v);
}

static void put_i64(struct wr *w, int64_t v)
{
    if (w->err == 0) w->err = buf_put_i64(w->b, v);
}

/* Append a string of at most max bytes (BATON_ETOOBIG beyond that). */
static void put_str(struct wr *w, const struct pstr *s, size_t max)
{
    if (w->err != 0) return;
    if (s->n > max) {
        w->err = BATON_ETOOBIG;
        return;
    }
    if (s->n > 0 && s->p == NULL) {
        w->err = BATON_EINVAL;
        return;
    }
    w->err = buf_put_str(w->b, s->p, s->n);
}

/* Append a lock name: over-long is BATON_ETOOBIG, empty or containing a NUL
 * byte is BATON_EINVAL, the same names the decoder refuses. */
static void put_lock(struct wr *w, const struct pstr *s)
{
    if (w->err != 0) return;
    if (s->n > BATON_MAX_NAME) {
        w->err = BATON_ETOOBIG;
        return;
    }
    if (!proto_lock_name_ok(s->p, s->n)) {
        w->err = BATON_EINVAL;
        return;
    }
    put_str(w, s, BATON_MAX_NAME);
}

/* Append a list count: above max is BATON_ETOOBIG, and a non-empty list
 * without its array is BATON_EINVAL. */
static void put_count(struct wr *w, uint32_t n, uint32_t max, const void *items)
{
    if (w->err != 0) return;
    if (n > max) {
        w->err = BATON_ETOOBIG;
        return;
    }
    if (n > 0 && items == NULL) {
        w->err = BATON_EINVAL;
        return;
    }
    put_u32(w, n);
}

static void encode_status_r(struct wr *w, const struct msg_status_r *s)
{
    put_u32(w, s->node_id);
    put_u8(w, s->role);
    put_u32(w, s->leader_id);
    put_u64(w, s->term);
    put_u64(w, s->last_index);
    put_u64(w, s->commit_index);
    put_u64(w, s->applied_index);
    put_count(w, s->n_members, BATON_MAX_MEMBERS, s->members);
    for (uint32_t i = 0; i < s->n_members && w->err == 0; i++) {
        put_u32(w, s->members[i].id);
        put_str(w, &s->members[i].raft_addr, BATON_MAX_ADDR);
        put_str(w, &s->members[i].client_addr, BATON_MAX_ADDR);
    }
    put_u64(w, s->state_digest);
}

static void encode_members_r(struct wr *w, const struct msg_members_r *mr)
{
    put_count(w, mr->n, BATON_MAX_MEMBERS, mr->members);
    for (uint32_t i = 0; i < mr->n && w->err == 0; i++) {
        put_u32(w, mr->members[i].id);
        put_u8(w, mr->members[i].role);
        put_str(w, &mr->members[i].raft_addr, BATON_MAX_ADDR);
        put_str(w, &mr->members[i].client_addr, BATON_MAX_ADDR);
    }
}

static void encode_lock_info_r(struct wr *w, const struct msg_lock_info_r *li)
{
    put_u8(w, li->held);
    put_u64(w, li->holder_session);
    put_u64(w, li->holder_waiter);
    put_u64(w, li->fence);
    put_u64(w, li->granted_index);
    put_u32(w, li->total_waiters);
    put_count(w, li->n_waiters, BATON_MAX_LIST, li->waiters);
    for (uint32_t i = 0; i < li->n_waiters && w->err == 0; i++) {
        put_u64(w, li->waiters[i].session);
        put_u64(w, li->waiters[i].waiter);
        put_i64(w, li->waiters[i].wait_ms);
    }
    put_u8(w, li->delayed);
    put_lock(w, &li->lock);
}

static void encode_list_locks_r(struct wr *w, const struct msg_list_locks_r *ll)
{
    put_count(w, ll->n, BATON_MAX_LIST, ll->items);
    for (uint32_t i = 0; i < ll->n && w->err == 0; i++) {
        put_lock(w, &ll->items[i].name);
        put_u64(w, ll->items[i].holder_session);
        put_u64(w, ll->items[i].fence);
        put_u32(w, ll->items[i].n_waiters);
    }
    put_u8(w, ll->more);
}

static void encode_sessions_r(struct wr *w, const struct msg_sessions_r *sr)
{
    put_count(w, sr->n, BATON_MAX_LIST, sr->items);
    for (uint32_t i = 0; i < sr->n && w->err == 0; i++) {
        put_u64(w, sr->items[i].id);
        put_u32(w, sr->items[i].ttl_ms);
        put_u64(w, sr->items[i].created_index);
        put_str(w, &sr->items[i].client_name, BATON_MAX_CLIENT_NAME);
        put_u32(w, sr->items[i].n_holds);
        put_u32(w, sr->items[i].n_waits);
    }
    put_u8(w, sr->more);
}

/* Append the body of m; the exact mirror of decode_body. */
static void encode_body(struct wr *w, const struct msg *m)
{
    switch (m->type) {
    case MSG_HELLO:
        put_u32(w, m->u.hello.version);
        put_str(w, &m->u.hello.client_name, BATON_MAX_CLIENT_NAME);
        break;
    case MSG_HELLO_OK:
        put_u32(w, m->u.hello_ok.version);
        put_u32(w, m->u.hello_ok.node_id);
        break;
    case MSG_OPEN_SESSION:
        put_u32(w, m->u.open_session.ttl_ms);
        put_str(w, &m->u.open_session.client_name, BATON_MAX_CLIENT_NAME);
        break;
    case MSG_SESSION:
        put_u64(w, m->u.session.session);
        put_u32(w, m->u.session.ttl_ms);
        break;
    case MSG_ACQUIRE:
        put_u64(w, m->u.acquire.session);
        put_u64(w, m->u.acquire.seq);
        put_u64(w, m->u.acquire.ack_below);
        put_i64(w, m->u.acquire.wait_ms);
        put_lock(w, &m->u.acquire.lock);
        /* The same values the decoder accepts, so that the encoder never
         * writes a frame the peer would refuse. */
        if (w->err == 0 && m->u.acquire.lock_delay_ms < BATON_LOCK_DELAY_NONE)
            w->err = BATON_EINVAL;
        put_i32(w, m->u.acquire.lock_delay_ms);
        break;
    case MSG_RELEASE:
        put_u64(w, m->u.release.session);
        put_u64(w, m->u.release.seq);
        put_u64(w, m->u.release.ack_below);
        put_u64(w, m->u.release.fence);
        put_lock(w, &m->u.release.lock);
        break;
    case MSG_CANCEL:
        put_u64(w, m->u.cancel.session);
        put_u64(w, m->u.cancel.seq);
        put_u64(w, m->u.cancel.ack_below);
        put_u64(w, m->u.cancel.waiter);
        put_lock(w, &m->u.cancel.lock);
        break;
    case MSG_CLOSE_SESSION:
        put_u64(w, m->u.close_session.session);
        put_u64(w, m->u.close_session.seq);
        put_u64(w, m->u.close_session.ack_below);
        break;
    case MSG_KEEPALIVE:
        put_u64(w, m->u.keepalive.session);
        break;
    case MSG_RESULT:
        put_i32(w, m->u.result.status);
        put_u8(w, m->u.result.kind);
        put_u64(w, m->u.result.value);
        break;
    case MSG_GRANTED:
        put_u64(w, m->u.granted.session);
        put_u64(w, m->u.granted.waiter);
        put_u64(w, m->u.granted.fence);
        put_lock(w, &m->u.granted.lock);
        break;
    case MSG_WAIT_FAILED:
        put_u64(w, m->u.wait_failed.session);
        put_u64(w, m->u.wait_failed.waiter);
        put_i32(w, m->u.wait_failed.status);
        put_lock(w, &m->u.wait_failed.lock);
        break;
    case MSG_STATUS:
    case MSG_NO_LEADER:
        break;
    case MSG_STATUS_R:
        encode_status_r(w, &m->u.status_r);
        break;
    case MSG_LOCK_INFO:
        put_lock(w, &m->u.lock_info.lock);
        break;
    case MSG_LOCK_INFO_R:
        encode_lock_info_r(w, &m->u.lock_info_r);
        break;
    case MSG_LIST_LOCKS:
        put_str(w, &m->u.list_locks.prefix, BATON_MAX_NAME);
        put_u32(w, m->u.list_locks.limit);
        break;
    case MSG_LIST_LOCKS_R:
        encode_list_locks_r(w, &m->u.list_locks_r);
        break;
    case MSG_REDIRECT:
        put_u32(w, m->u.redirect.leader_id);
        put_str(w, &m->u.redirect.client_addr, BATON_MAX_ADDR);
        break;
    case MSG_ERROR:
        put_i32(w, m->u.error.code);
        put_str(w, &m->u.error.message, BATON_MAX_ERRMSG);
        break;
    case MSG_LOST:
        put_u64(w, m->u.lost.session);
        put_u64(w, m->u.lost.waiter);
        put_u64(w, m->u.lost.fence);
        put_i32(w, m->u.lost.status);
        put_lock(w, &m->u.lost.lock);
        break;
    case MSG_SESSION_EXPIRED:
        put_u64(w, m->u.session_expired.session);
        break;
    case MSG_FORCE_RELEASE:
        put_lock(w, &m->u.force_release.lock);
        break;
    case MSG_FORCE_RELEASE_R:
        put_i32(w, m->u.force_release_r.status);
        put_u64(w, m->u.force_release_r.lost_session);
        put_u64(w, m->u.force_release_r.lost_fence);
        put_u64(w, m->u.force_release_r.new_session);
        put_u64(w, m->u.force_release_r.new_fence);
        break;
    case MSG_EXPIRE_SESSION:
        put_u64(w, m->u.expire_session.session);
        break;
    case MSG_TRANSFER:
        put_u32(w, m->u.transfer.id);
        break;
    case MSG_TRANSFER_R:
        put_u32(w, m->u.transfer_r.leader_id);
        break;
    case MSG_LIST_SESSIONS:
        put_u64(w, m->u.list_sessions.after);
        put_u32(w, m->u.list_sessions.limit);
        break;
    case MSG_SESSIONS_R:
        encode_sessions_r(w, &m->u.sessions_r);
        break;
    case MSG_WATCH:
        put_lock(w, &m->u.watch.lock);
        break;
    case MSG_WATCH_EVENT:
        put_u64(w, m->u.watch_event.seq);
        encode_lock_info_r(w, &m->u.watch_event.info);
        break;
    case MSG_SNAPSHOT:
        break;
    case MSG_SNAPSHOT_R:
        put_u64(w, m->u.snapshot_r.index);
        break;
    case MSG_MEMBERS:
        break;
    case MSG_MEMBERS_R:
        encode_members_r(w, &m->u.members_r);
        break;
    case MSG_MEMBER_REMOVE:
        put_u32(w, m->u.member_remove.id);
        break;
    case MSG_MEMBER_ADD:
        put_u32(w, m->u.member_add.id);
        put_str(w, &m->u.member_add.raft_addr, BATON_MAX_ADDR);
        put_str(w, &m->u.member_add.client_addr, BATON_MAX_ADDR);
        break;
    default:
        if (w->err == 0) w->err = BATON_EINVAL;
        break;
    }
}

/*
 * Append the frame, then patch its length field. Any failure, including one
 * discovered half-way through the body, truncates `out` back to where it
 * started, so the caller's buffer never holds a partial frame.
 */
int proto_encode(struct buf *out, const struct msg *m)
{
    struct wr w;
    size_t start, len = 0;

    if (out == NULL || m == NULL) return BATON_EINVAL;
    if (m->type == 0 || m->type >= MSG_TYPE_MAX_) return BATON_EINVAL;
    start = out->len;
    w.b = out;
    w.err = 0;
    put_u32(&w, 0); /* the length, patched below */
    put_u16(&w, m->type);
    put_u64(&w, m->req_id);
    encode_body(&w, m);
    if (w.err == 0) {
        len = out->len - start - 4;
        if (len > BATON_MAX_FRAME) w.err = BATON_ETOOBIG;
    }
    if (w.err != 0) {
        out->len = start;
        return w.err;
    }
    le_put_u32(out->data + start, (uint32_t)len);
    return 0;
}
