/*
 * test_proto_limits.c -- the wire codec's limits: every string field at its
 * limit and one byte over, lock names (1..BATON_MAX_NAME bytes, no NUL),
 * list counts at, over and far beyond their limits or the frame, an error
 * after a list was allocated, and every way the encoder can refuse a
 * message, which leaves its buffer as it was.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "proto/msg.h"
#include "tests/lib/msg_samples.h"
#include "tests/lib/runner.h"
#include "tests/unit/proto_fixture.h"

/* ---- string limits -------------------------------------------------------- */

/* Accessors for each string field of a sample (tests/lib/msg_samples.h). */
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
        ASSERT_EQ(msg_sample(sf->type, &m), 0);
        *sf->get(&m) = psn(tilde, sf->max);
        encode_ok(&m, &ok);
        assert_decode_accepted(&ok, sf, tilde, sf->max);

        /* One over: refused by the encoder, which writes nothing... */
        ASSERT_EQ(msg_sample(sf->type, &m), 0);
        *sf->get(&m) = psn(tilde, sf->max + 1);
        ASSERT_EQ(proto_encode(&prefill, &m), BATON_ETOOBIG);
        ASSERT_UEQ(prefill.len, 4);
        /* ...and by the decoder. */
        forge_str(&ok, tilde, sf->max, tilde, sf->max + 1, &forged);
        assert_decode_refused(&forged, sf->type);
        buf_free(&forged);
        buf_free(&ok);
        /* A length far beyond the frame. */
        ASSERT_EQ(msg_sample(sf->type, &m), 0);
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
        ASSERT_EQ(msg_sample(sf->type, &m), 0);
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
        ASSERT_EQ(msg_sample(sf->type, &m), 0);
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
        ASSERT_EQ(msg_sample(sf->type, &m), 0);
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
    buf_put_u64(b, 0x1112131415161718ull); /* auth_digest */
    buf_put_u64(b, 0x2122232425262728ull); /* check_index */
    buf_put_u64(b, 0x3132333435363738ull); /* content_hash */
    buf_put_u8(b, 1);                      /* fault_kind */
    buf_put_i32(b, -4023);                 /* fault */
    buf_put_u64(b, 0x2122232425262728ull); /* fault_index */
    end_frame(b);
}

static void forge_lock_info_r(struct buf *b, uint32_t count, uint32_t present)
{
    begin_frame(b, MSG_LOCK_INFO_R, 9);
    buf_put_u8(b, 1);
    for (int i = 0; i < 4; i++) buf_put_u64(b, 1);
    buf_put_u8(b, 1);      /* mode */
    buf_put_u32(b, 1);     /* limit */
    buf_put_u32(b, count); /* total_holders */
    buf_put_u32(b, count);
    for (uint32_t i = 0; i < present; i++) {
        for (int k = 0; k < 4; k++) buf_put_u64(b, i);
        buf_put_u8(b, 1);
        buf_put_u32(b, 1);
    }
    buf_put_u32(b, count); /* total_waiters */
    buf_put_u32(b, count);
    for (uint32_t i = 0; i < present; i++) {
        buf_put_u64(b, i);
        buf_put_u64(b, i);
        buf_put_i64(b, -1);
        buf_put_u8(b, 0);
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
        buf_put_u8(b, 0);
        buf_put_u32(b, 1);
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
        buf_put_str(b, "", 0); /* owner */
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
    m.u.list_locks_r.items[2].name = ps(name);
    encode_ok(&m, &b);
    forge_str(&b, "z/%", 3, "z\0%", 3, &forged);
    ASSERT_EQ(decode_forged(&forged), BATON_EMALFORMED);
    buf_free(&forged);
    buf_free(&b);

    sample(MSG_STATUS_R, V_TYPICAL, &m);
    m.u.status_r.members[2].client_addr = ps("@@");
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
    m.u.list_locks_r.items[BATON_MAX_LIST - 1].name = psn(bad, sizeof bad);
    EXPECT_REFUSED(BATON_ETOOBIG);
    m.u.list_locks_r.items[BATON_MAX_LIST - 1].name = psn("x\0", 2);
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

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(string_limits);
    RUN(lock_name_ok);
    RUN(list_count_limits);
    RUN(list_error_after_allocation);
    RUN(encoder_rollback);
    return runner_done();
}
