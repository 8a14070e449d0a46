/*
 * test_cmd.c -- the command batch codec and the effects arrays
 * (storage/cmd.h): round trips, and refusal of garbage, truncation and
 * trailing bytes without crashing.
 */
#include "tests/lib/runner.h"

#include "baton/baton_defs.h"
#include "storage/cmd.h"
#include "tests/lib/cmds.h"
#include "tests/lib/rng.h"

/* A deterministic pseudo-random generator for the garbage tests. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void)
{
    return xorshift64(&rng_state);
}

/* Bytes of a command with an empty name and no owner (cmd.h). */
#define CMD_FIXED (1 + 8 + 8 + 8 + 4 + 8 + 8 + 8 + 4 + 2)

/* A command with only its type and name set. */
static struct cmd make_cmd(uint8_t type, const char *name)
{
    return cmd_of(type, 0, 0, name);
}

/* Decode everything; returns the number of commands read, or the error. */
static int decode_all(const void *data, size_t len, struct cmd *out, size_t max)
{
    struct cmd_reader r;
    uint32_t count;
    int n = 0, rv;
    struct cmd c;

    rv = cmd_reader_init(&r, data, len, &count);
    if (rv != 0) return rv;
    while ((rv = cmd_reader_next(&r, &c)) == 1) {
        if ((size_t)n < max) out[n] = c;
        n++;
    }
    if (rv != 0) return rv;
    if ((uint32_t)n != count) return -1;
    return n;
}

static void assert_cmd_eq(const struct cmd *a, const struct cmd *b)
{
    ASSERT_EQ(a->type, b->type);
    ASSERT_UEQ(a->session, b->session);
    ASSERT_UEQ(a->seq, b->seq);
    ASSERT_UEQ(a->ack_below, b->ack_below);
    ASSERT_UEQ(a->ttl_ms, b->ttl_ms);
    ASSERT_EQ(a->wait_ms, b->wait_ms);
    ASSERT_UEQ(a->fence, b->fence);
    ASSERT_UEQ(a->waiter, b->waiter);
    ASSERT_EQ(a->lock_delay_ms, b->lock_delay_ms);
    ASSERT_EQ(a->mode, b->mode);
    ASSERT_UEQ(a->limit, b->limit);
    ASSERT_EQ(a->reentrant, b->reentrant);
    ASSERT_EQ(a->name_len, b->name_len);
    if (a->name_len) ASSERT(memcmp(a->name, b->name, a->name_len) == 0);
    ASSERT_EQ(a->owner_len, b->owner_len);
    if (a->owner_len) ASSERT(memcmp(a->owner, b->owner, a->owner_len) == 0);
    ASSERT_EQ(a->n_keep, b->n_keep);
    for (size_t i = 0; i < a->n_keep; i++) ASSERT_UEQ(cmd_keep_at(a, i), cmd_keep_at(b, i));
    ASSERT_EQ(a->n_more, b->n_more);
    ASSERT_UEQ(a->more_len, b->more_len);
    if (a->more_len) ASSERT(memcmp(a->more, b->more, a->more_len) == 0);
    ASSERT_EQ(a->flags, b->flags);
    ASSERT_EQ(a->value_len, b->value_len);
    if (a->value_len) ASSERT(memcmp(a->value, b->value, a->value_len) == 0);
}

TEST(roundtrip_every_type)
{
    char longname[BATON_MAX_NAME + 1];
    char client[BATON_MAX_CLIENT_NAME + 1];
    struct cmd in[12], out[12];
    struct buf b = {0};

    memset(longname, 'x', BATON_MAX_NAME);
    longname[BATON_MAX_NAME] = 0;
    memset(client, 'c', BATON_MAX_CLIENT_NAME);
    client[BATON_MAX_CLIENT_NAME] = 0;

    in[0] = make_cmd(CMD_OPEN_SESSION, client);
    in[0].ttl_ms = 10000;
    in[1] = make_cmd(CMD_ACQUIRE, "db/primary");
    in[1].session = 7;
    in[1].seq = 3;
    in[1].ack_below = 2;
    in[1].wait_ms = BATON_WAIT_FOREVER;
    in[2] = make_cmd(CMD_RELEASE, longname);
    in[2].session = UINT64_MAX;
    in[2].seq = UINT64_MAX - 1;
    in[2].fence = 0x0102030405060708ull;
    in[3] = make_cmd(CMD_CANCEL, "q");
    in[3].session = 1;
    in[3].seq = 9;
    in[3].waiter = 8;
    in[4] = make_cmd(CMD_CLOSE_SESSION, NULL);
    in[4].session = 2;
    in[4].seq = 4;
    in[5] = make_cmd(CMD_EXPIRE_SESSION, NULL);
    in[5].session = 3;
    in[6] = make_cmd(CMD_WAIT_TIMEOUT, "w");
    in[6].session = 5;
    in[6].waiter = 6;
    in[7] = make_cmd(CMD_FORCE_RELEASE, "f");
    in[8] = make_cmd(CMD_ACQUIRE, "timed");
    in[8].wait_ms = INT64_MAX;
    in[8].session = 1;
    in[8].seq = 1;
    in[8].lock_delay_ms = INT32_MAX;
    in[9] = make_cmd(CMD_ACQUIRE, "delayed");
    in[9].session = 4;
    in[9].seq = 2;
    in[9].wait_ms = BATON_WAIT_TRY;
    in[9].lock_delay_ms = 0x01020304; /* every byte differs: catches a wrong order */
    in[10] = make_cmd(CMD_DELAY_END, longname);
    /* The codec carries any value; the store refuses a negative delay. */
    in[11] = make_cmd(CMD_ACQUIRE, "neg");
    in[11].lock_delay_ms = INT32_MIN;

    cmds_encode(&b, in, 12);
    ASSERT_EQ(decode_all(b.data, b.len, out, 12), 12);
    for (int i = 0; i < 12; i++) assert_cmd_eq(&in[i], &out[i]);
    /* Decoded names borrow from the batch. */
    ASSERT(out[1].name >= (const char *)b.data && out[1].name < (const char *)b.data + b.len);
    buf_free(&b);
}

/* One command written by hand from the layout in cmd.h, so that a field
 * order the encoder and decoder share by mistake cannot pass. */
TEST(layout_matches_header)
{
    struct cmd in = make_cmd(CMD_ACQUIRE, "L"), out;
    struct buf want = {0}, got = {0};

    in.session = 0x1111111111111111ull;
    in.seq = 0x2222222222222222ull;
    in.ack_below = 0x3333333333333333ull;
    in.ttl_ms = 0x44444444u;
    in.wait_ms = 0x5555555555555555ll;
    in.fence = 0x6666666666666666ull;
    in.waiter = 0x7777777777777777ull;
    in.lock_delay_ms = 0x08090A0B;
    ASSERT_EQ(buf_put_u8(&want, CMD_FORMAT), 0);
    ASSERT_EQ(buf_put_u32(&want, 1), 0);
    ASSERT_EQ(buf_put_u8(&want, CMD_ACQUIRE), 0);
    ASSERT_EQ(buf_put_u64(&want, in.session), 0);
    ASSERT_EQ(buf_put_u64(&want, in.seq), 0);
    ASSERT_EQ(buf_put_u64(&want, in.ack_below), 0);
    ASSERT_EQ(buf_put_u32(&want, in.ttl_ms), 0);
    ASSERT_EQ(buf_put_i64(&want, in.wait_ms), 0);
    ASSERT_EQ(buf_put_u64(&want, in.fence), 0);
    ASSERT_EQ(buf_put_u64(&want, in.waiter), 0);
    ASSERT_EQ(buf_put_i32(&want, in.lock_delay_ms), 0);
    ASSERT_EQ(buf_put_str(&want, "L", 1), 0);
    cmds_encode(&got, &in, 1);
    ASSERT_UEQ(got.len, want.len);
    ASSERT(memcmp(got.data, want.data, want.len) == 0);
    ASSERT_EQ(decode_all(want.data, want.len, &out, 1), 1);
    assert_cmd_eq(&in, &out);
    buf_free(&want);
    buf_free(&got);
}

/* The fixed fields every command starts with (cmd.h), written by hand. */
static void put_fixed(struct buf *b, uint8_t type, const struct cmd *c)
{
    ASSERT_EQ(buf_put_u8(b, type), 0);
    ASSERT_EQ(buf_put_u64(b, c->session), 0);
    ASSERT_EQ(buf_put_u64(b, c->seq), 0);
    ASSERT_EQ(buf_put_u64(b, c->ack_below), 0);
    ASSERT_EQ(buf_put_u32(b, c->ttl_ms), 0);
    ASSERT_EQ(buf_put_i64(b, c->wait_ms), 0);
    ASSERT_EQ(buf_put_u64(b, c->fence), 0);
    ASSERT_EQ(buf_put_u64(b, c->waiter), 0);
    ASSERT_EQ(buf_put_i32(b, c->lock_delay_ms), 0);
}

/* An OPEN_SESSION without an owner is the same bytes as before owners
 * existed (raft logs of older binaries replay as they were written); one
 * with an owner is a CMD_OPEN_OWNED (type byte 11) whose name is followed
 * by the owner, and decodes back as an OPEN_SESSION. */
TEST(open_session_layouts)
{
    struct cmd anon = c_open(0x01020304u, "cli"), owned = c_open_by(7000, "cli", "alice"), out;
    struct buf want = {0}, got = {0};

    ASSERT_EQ(CMD_OPEN_OWNED, 11);
    ASSERT_EQ(buf_put_u8(&want, CMD_FORMAT), 0);
    ASSERT_EQ(buf_put_u32(&want, 2), 0);
    put_fixed(&want, CMD_OPEN_SESSION, &anon);
    ASSERT_EQ(buf_put_str(&want, "cli", 3), 0);
    ASSERT_UEQ(want.len, 5 + CMD_FIXED + 3); /* the pre-owner size of this command */
    put_fixed(&want, CMD_OPEN_OWNED, &owned);
    ASSERT_EQ(buf_put_str(&want, "cli", 3), 0);
    ASSERT_EQ(buf_put_str(&want, "alice", 5), 0);
    cmds_encode(&got, (struct cmd[]){anon, owned}, 2);
    ASSERT_UEQ(got.len, want.len);
    ASSERT(memcmp(got.data, want.data, want.len) == 0);
    /* An explicit empty owner is no owner at all. */
    anon.owner = "";
    buf_reset(&got);
    cmds_encode(&got, (struct cmd[]){anon, owned}, 2);
    ASSERT(got.len == want.len && memcmp(got.data, want.data, want.len) == 0);
    anon.owner = NULL;
    {
        struct cmd both[2];
        ASSERT_EQ(decode_all(want.data, want.len, both, 2), 2);
        assert_cmd_eq(&anon, &both[0]);
        ASSERT(both[0].owner == NULL);
        out = both[1];
    }
    ASSERT_EQ(out.type, CMD_OPEN_SESSION);
    assert_cmd_eq(&owned, &out);
    ASSERT(out.owner >= (const char *)want.data && out.owner < (const char *)want.data + want.len);
    buf_free(&want);
    buf_free(&got);
}

/* An ACQUIRE without mode fields keeps its bytes; one with any of them is
 * a CMD_ACQUIRE_MODES (type byte 14) with u8 mode, u32 limit, u8
 * reentrant after the name (and before a keep list), and decodes back as
 * an ACQUIRE; one with all three 0 under that type byte is malformed, and
 * the fields go on no other type. */
TEST(acquire_modes_layouts)
{
    struct cmd plain = c_acq(7, 3, BATON_WAIT_FOREVER, "L"), modes = plain, out[2], bad;
    struct buf want = {0}, got = {0};
    static const uint8_t keep_le[8] = {1, 0, 0, 0, 0, 0, 0, 0};

    ASSERT_EQ(CMD_ACQUIRE_MODES, 14);
    modes.mode = BATON_MODE_SHARED;
    modes.limit = 0x01020304;
    modes.reentrant = 1;
    ASSERT_EQ(buf_put_u8(&want, CMD_FORMAT), 0);
    ASSERT_EQ(buf_put_u32(&want, 2), 0);
    put_fixed(&want, CMD_ACQUIRE, &plain);
    ASSERT_EQ(buf_put_str(&want, "L", 1), 0);
    put_fixed(&want, CMD_ACQUIRE_MODES, &modes);
    ASSERT_EQ(buf_put_str(&want, "L", 1), 0);
    ASSERT_EQ(buf_put_u8(&want, BATON_MODE_SHARED), 0);
    ASSERT_EQ(buf_put_u32(&want, 0x01020304), 0);
    ASSERT_EQ(buf_put_u8(&want, 1), 0);
    cmds_encode(&got, (struct cmd[]){plain, modes}, 2);
    ASSERT(got.len == want.len && memcmp(got.data, want.data, want.len) == 0);
    ASSERT_EQ(decode_all(want.data, want.len, out, 2), 2);
    assert_cmd_eq(&plain, &out[0]);
    ASSERT_EQ(out[1].type, CMD_ACQUIRE);
    assert_cmd_eq(&modes, &out[1]);
    /* With a keep list: the flag on the modes type, the list last. */
    modes.n_keep = 1;
    modes.keep = keep_le;
    buf_reset(&got);
    cmds_encode(&got, &modes, 1);
    ASSERT_EQ(got.data[5], CMD_ACQUIRE_MODES | CMD_KEEP_FLAG);
    ASSERT_EQ(decode_all(got.data, got.len, out, 1), 1);
    assert_cmd_eq(&modes, &out[0]);
    /* All three 0 under the modes type byte: malformed. */
    buf_reset(&got);
    cmds_encode(&got, &plain, 1);
    {
        struct buf b = {0};
        ASSERT_EQ(buf_put(&b, got.data, got.len), 0);
        b.data[5] = CMD_ACQUIRE_MODES;
        ASSERT_EQ(buf_put_u8(&b, 0), 0);
        ASSERT_EQ(buf_put_u32(&b, 0), 0);
        ASSERT_EQ(buf_put_u8(&b, 0), 0);
        ASSERT_EQ(decode_all(b.data, b.len, out, 1), BATON_EMALFORMED);
        buf_free(&b);
    }
    /* Mode fields on another type, or the codec's type byte: refused. */
    bad = c_rel(7, 4, 1, "L");
    bad.limit = 2;
    buf_reset(&got);
    ASSERT_EQ(cmd_batch_add(&got, &bad), BATON_EINVAL);
    bad = plain;
    bad.type = CMD_ACQUIRE_MODES;
    ASSERT_EQ(cmd_batch_add(&got, &bad), BATON_EINVAL);
    ASSERT_UEQ(got.len, 0);
    buf_free(&want);
    buf_free(&got);
}

/* An ACQUIRE with flags or a value travels as ACQUIRE_EXT (byte 17): the
 * fields of ACQUIRE_MODES, u8 flags, str value; SET_VALUE (byte 18) has
 * str value after its name. Hand-written layouts, so that the encoder and
 * decoder cannot share a wrong field order; one encoding per command. */
TEST(values_and_flags_layouts)
{
    static const uint8_t val[] = {'1', '0', '.', '0', '.', '0', '.', '1'};
    struct cmd ext = c_acq(7, 3, BATON_WAIT_FOREVER, "L"), set, out[2], bad;
    struct buf want = {0}, got = {0}, b = {0};

    ASSERT_EQ(CMD_ACQUIRE_EXT, 17);
    ASSERT_EQ(CMD_SET_VALUE, 18);
    ext.flags = CMD_ACQ_OWNERS;
    ext.value = val;
    ext.value_len = sizeof val;
    ext.fence = 41;
    set = make_cmd(CMD_SET_VALUE, "L");
    set.session = 7;
    set.seq = 4;
    set.fence = 41;
    set.value = val;
    set.value_len = 3;
    ASSERT_EQ(buf_put_u8(&want, CMD_FORMAT), 0);
    ASSERT_EQ(buf_put_u32(&want, 2), 0);
    put_fixed(&want, CMD_ACQUIRE_EXT, &ext);
    ASSERT_EQ(buf_put_str(&want, "L", 1), 0);
    ASSERT_EQ(buf_put_u8(&want, 0), 0);  /* mode */
    ASSERT_EQ(buf_put_u32(&want, 0), 0); /* limit */
    ASSERT_EQ(buf_put_u8(&want, 0), 0);  /* reentrant */
    ASSERT_EQ(buf_put_u8(&want, CMD_ACQ_OWNERS), 0);
    ASSERT_EQ(buf_put_str(&want, (const char *)val, sizeof val), 0);
    put_fixed(&want, CMD_SET_VALUE, &set);
    ASSERT_EQ(buf_put_str(&want, "L", 1), 0);
    ASSERT_EQ(buf_put_str(&want, (const char *)val, 3), 0);
    cmds_encode(&got, (struct cmd[]){ext, set}, 2);
    ASSERT(got.len == want.len && memcmp(got.data, want.data, want.len) == 0);
    ASSERT_EQ(decode_all(want.data, want.len, out, 2), 2);
    ASSERT_EQ(out[0].type, CMD_ACQUIRE);
    assert_cmd_eq(&ext, &out[0]);
    assert_cmd_eq(&set, &out[1]);
    /* A value alone, or a flag alone, also travels as ACQUIRE_EXT. */
    bad = c_acq(7, 3, BATON_WAIT_FOREVER, "L");
    bad.value = val;
    bad.value_len = 1;
    buf_reset(&got);
    cmds_encode(&got, &bad, 1);
    ASSERT_EQ(got.data[5], CMD_ACQUIRE_EXT);
    /* No flag and no value under the EXT byte, or an unknown flag: malformed. */
    bad = c_acq(7, 3, BATON_WAIT_FOREVER, "L");
    for (int flags = 0; flags <= 0x80; flags += 0x80) {
        buf_reset(&b);
        buf_reset(&got);
        cmds_encode(&got, &bad, 1);
        ASSERT_EQ(buf_put(&b, got.data, got.len), 0);
        b.data[5] = CMD_ACQUIRE_EXT;
        ASSERT_EQ(buf_put_u8(&b, 0), 0);
        ASSERT_EQ(buf_put_u32(&b, 0), 0);
        ASSERT_EQ(buf_put_u8(&b, 0), 0);
        ASSERT_EQ(buf_put_u8(&b, (uint8_t)flags), 0);
        ASSERT_EQ(buf_put_str(&b, "", 0), 0);
        ASSERT_EQ(decode_all(b.data, b.len, out, 1), BATON_EMALFORMED);
    }
    /* A value past CMD_MAX_VALUE: refused by the encoder. */
    bad.value_len = CMD_MAX_VALUE + 1;
    bad.value = val; /* never read: the length is refused first */
    buf_reset(&got);
    ASSERT_EQ(cmd_batch_add(&got, &bad), BATON_ETOOBIG);
    /* Flags or a value on a type that has no room for them: refused. */
    bad = c_rel(7, 4, 1, "L");
    bad.flags = CMD_ACQ_OWNERS;
    ASSERT_EQ(cmd_batch_add(&got, &bad), BATON_EINVAL);
    bad = c_rel(7, 4, 1, "L");
    bad.value = val;
    bad.value_len = 1;
    ASSERT_EQ(cmd_batch_add(&got, &bad), BATON_EINVAL);
    ASSERT_UEQ(got.len, 0);
    buf_free(&want);
    buf_free(&got);
    buf_free(&b);
}

/* An ACQUIRE_MANY (type byte 15): the modes' fields, u8 n_more and the
 * more names after the name, then the keep list; 1..63 more names of
 * 1..BATON_MAX_NAME bytes, or the batch is malformed. */
TEST(acquire_many_layouts)
{
    static uint8_t more[CMDS_MORE_MAX];
    static const uint8_t keep_le[8] = {1, 0, 0, 0, 0, 0, 0, 0};
    const char *names[BATON_MAX_MANY];
    char buf[BATON_MAX_MANY][16];
    struct cmd c, out[1];
    struct buf got = {0}, b = {0};
    const char *n;
    uint16_t len;
    size_t off = 0;

    ASSERT_EQ(CMD_ACQUIRE_MANY, 15);
    for (int i = 0; i < BATON_MAX_MANY; i++) {
        snprintf(buf[i], sizeof buf[i], "n%d", i);
        names[i] = buf[i];
    }
    c = c_many(7, 3, 500, names, 3, more);
    c.mode = BATON_MODE_SHARED;
    c.n_keep = 1;
    c.keep = keep_le;
    cmds_encode(&got, &c, 1);
    ASSERT_EQ(got.data[5], CMD_ACQUIRE_MANY | CMD_KEEP_FLAG);
    ASSERT_EQ(decode_all(got.data, got.len, out, 1), 1);
    assert_cmd_eq(&c, &out[0]);
    ASSERT_EQ(cmd_more_next(&out[0], &off, &n, &len), 1);
    ASSERT(len == 2 && memcmp(n, "n1", 2) == 0);
    ASSERT_EQ(cmd_more_next(&out[0], &off, &n, &len), 1);
    ASSERT(len == 2 && memcmp(n, "n2", 2) == 0);
    ASSERT_EQ(cmd_more_next(&out[0], &off, &n, &len), 0);
    /* 64 names in all is the most. */
    buf_reset(&got);
    c = c_many(7, 3, 500, names, BATON_MAX_MANY, more);
    cmds_encode(&got, &c, 1);
    ASSERT_EQ(decode_all(got.data, got.len, out, 1), 1);
    ASSERT_EQ(out[0].n_more, BATON_MAX_MANY - 1);
    /* The count byte patched to 0, or to 64 with one more name. */
    ASSERT_EQ(buf_put(&b, got.data, got.len), 0);
    c = c_many(7, 3, 500, names, 2, more);
    buf_reset(&got);
    cmds_encode(&got, &c, 1);
    buf_reset(&b);
    ASSERT_EQ(buf_put(&b, got.data, got.len), 0);
    b.data[b.len - 5] = 0; /* n_more: before "u16 2, 'n1'" */
    ASSERT_EQ(decode_all(b.data, b.len, out, 1), BATON_EMALFORMED);
    /* An empty more name. */
    buf_reset(&b);
    ASSERT_EQ(buf_put(&b, got.data, got.len - 4), 0);
    ASSERT_EQ(buf_put_u16(&b, 0), 0);
    le_put_u32(b.data + 1, 1);
    ASSERT_EQ(decode_all(b.data, b.len, out, 1), BATON_EMALFORMED);
    /* The encoder: no more names on ACQUIRE_MANY, or more names on
     * another type, is refused. */
    buf_reset(&got);
    c.n_more = 0;
    ASSERT_EQ(cmd_batch_add(&got, &c), BATON_EINVAL);
    c = c_acq(7, 3, 500, "x");
    c.n_more = 1;
    c.more = more;
    c.more_len = 4;
    ASSERT_EQ(cmd_batch_add(&got, &c), BATON_EINVAL);
    ASSERT_UEQ(got.len, 0);
    buf_free(&got);
    buf_free(&b);
}

/* Owners of every length up to BATON_MAX_PRINCIPAL, with any bytes. */
TEST(owner_roundtrip_lengths)
{
    char owner[BATON_MAX_PRINCIPAL];
    struct cmd in, out;
    struct buf b = {0};

    for (size_t i = 0; i < sizeof owner; i++) owner[i] = (char)(i * 37 + 1);
    owner[5] = 0; /* the store treats an owner as bytes */
    for (uint16_t n = 0; n <= BATON_MAX_PRINCIPAL; n++) {
        in = c_open(1000, "c");
        in.owner = owner;
        in.owner_len = n;
        buf_reset(&b);
        cmds_encode(&b, &in, 1);
        ASSERT_UEQ(b.len, 5 + CMD_FIXED + 1 + (n ? 2u + n : 0u));
        ASSERT_EQ(b.data[5], n ? CMD_OPEN_OWNED : CMD_OPEN_SESSION);
        ASSERT_EQ(decode_all(b.data, b.len, &out, 1), 1);
        if (n == 0) in.owner = NULL;
        assert_cmd_eq(&in, &out);
    }
    buf_free(&b);
}

TEST(empty_batch)
{
    struct buf b = {0};
    struct cmd_reader r;
    struct cmd c;
    uint32_t count = 99;

    cmds_encode(&b, NULL, 0);
    ASSERT_EQ(b.len, 5);
    ASSERT_EQ(cmd_reader_init(&r, b.data, b.len, &count), 0);
    ASSERT_EQ(count, 0);
    ASSERT_EQ(cmd_reader_next(&r, &c), 0);
    buf_free(&b);
}

TEST(batch_inside_a_buffer)
{
    /* cmd_batch_begin may start anywhere in a buffer; `start` locates it. */
    struct buf b = {0};
    struct cmd in = make_cmd(CMD_FORCE_RELEASE, "x"), out;
    size_t start;

    ASSERT_EQ(buf_put(&b, "prefix", 6), 0);
    ASSERT_EQ(cmd_batch_begin(&b, &start), 0);
    ASSERT_EQ(start, 6);
    ASSERT_EQ(cmd_batch_add(&b, &in), 0);
    cmd_batch_end(&b, start, 1);
    ASSERT_EQ(decode_all(b.data + start, b.len - start, &out, 1), 1);
    assert_cmd_eq(&in, &out);
    buf_free(&b);
}

TEST(encoder_refuses_bad_commands)
{
    char big[BATON_MAX_NAME + 2];
    struct buf b = {0};
    struct cmd c;
    size_t start, len;

    memset(big, 'n', sizeof big - 1);
    big[sizeof big - 1] = 0;
    ASSERT_EQ(cmd_batch_begin(&b, &start), 0);
    len = b.len;

    c = make_cmd(0, "x");
    ASSERT_EQ(cmd_batch_add(&b, &c), BATON_EINVAL);
    c = make_cmd(CMD_TYPE_MAX_, "x");
    ASSERT_EQ(cmd_batch_add(&b, &c), BATON_EINVAL);
    c = make_cmd(CMD_ACQUIRE, big); /* 257 bytes */
    ASSERT_EQ(cmd_batch_add(&b, &c), BATON_ETOOBIG);
    c = make_cmd(CMD_CLOSE_SESSION, "x"); /* CLOSE carries no name */
    ASSERT_EQ(cmd_batch_add(&b, &c), BATON_ETOOBIG);
    big[BATON_MAX_CLIENT_NAME + 1] = 0;
    c = make_cmd(CMD_OPEN_SESSION, big); /* 65 bytes */
    ASSERT_EQ(cmd_batch_add(&b, &c), BATON_ETOOBIG);
    c = make_cmd(CMD_ACQUIRE, NULL);
    c.name_len = 3;
    ASSERT_EQ(cmd_batch_add(&b, &c), BATON_EINVAL);
    big[BATON_MAX_ADDR + 1] = 0;
    c = make_cmd(CMD_SET_MEMBER_ADDR, big); /* 65 bytes */
    ASSERT_EQ(cmd_batch_add(&b, &c), BATON_ETOOBIG);
    /* Owners: only OPEN_SESSION has one, of at most BATON_MAX_PRINCIPAL
     * bytes, and CMD_OPEN_OWNED is the codec's own type byte. */
    big[BATON_MAX_PRINCIPAL + 1] = 0;
    c = c_open_by(1000, "c", big); /* 65 bytes */
    ASSERT_EQ(cmd_batch_add(&b, &c), BATON_ETOOBIG);
    c = c_open_by(1000, "c", "alice");
    c.owner = NULL;
    ASSERT_EQ(cmd_batch_add(&b, &c), BATON_EINVAL);
    c = make_cmd(CMD_ACQUIRE, "x");
    c.owner = "alice";
    c.owner_len = 5;
    ASSERT_EQ(cmd_batch_add(&b, &c), BATON_EINVAL);
    c = make_cmd(CMD_CLOSE_SESSION, NULL);
    c.owner = "alice";
    c.owner_len = 5;
    ASSERT_EQ(cmd_batch_add(&b, &c), BATON_EINVAL);
    c = c_open_by(1000, "c", "alice");
    c.type = CMD_OPEN_OWNED;
    ASSERT_EQ(cmd_batch_add(&b, &c), BATON_EINVAL);
    c.owner_len = 0;
    ASSERT_EQ(cmd_batch_add(&b, &c), BATON_EINVAL);
    /* Refused commands leave the batch untouched. */
    ASSERT_EQ(b.len, len);
    cmd_batch_end(&b, start, 0);
    ASSERT_EQ(decode_all(b.data, b.len, NULL, 0), 0);
    buf_free(&b);
}

TEST(decoder_rejects_header_garbage)
{
    struct cmd_reader r;
    uint8_t h[5] = {CMD_FORMAT, 0, 0, 0, 0};
    uint32_t count;

    ASSERT_EQ(cmd_reader_init(&r, h, 0, &count), BATON_EMALFORMED);
    ASSERT_EQ(cmd_reader_init(&r, h, 4, &count), BATON_EMALFORMED);
    ASSERT_EQ(cmd_reader_init(&r, h, 5, &count), 0);
    h[0] = CMD_FORMAT + 1;
    ASSERT_EQ(cmd_reader_init(&r, h, 5, &count), BATON_EMALFORMED);
    /* Format 1 had no lock_delay_ms: its commands cannot be read as 2. */
    ASSERT_EQ(CMD_FORMAT, 2);
    h[0] = 1;
    ASSERT_EQ(cmd_reader_init(&r, h, 5, &count), BATON_EMALFORMED);
    h[0] = CMD_FORMAT;
    /* A count the bytes cannot hold. */
    le_put_u32(h + 1, 1);
    ASSERT_EQ(cmd_reader_init(&r, h, 5, &count), BATON_EMALFORMED);
    le_put_u32(h + 1, UINT32_MAX);
    ASSERT_EQ(cmd_reader_init(&r, h, 5, &count), BATON_EMALFORMED);
}

TEST(decoder_rejects_count_above_max)
{
    struct buf b = {0};
    struct cmd c = make_cmd(CMD_EXPIRE_SESSION, NULL);
    struct cmd_reader r;
    size_t start;

    ASSERT_EQ(cmd_batch_begin(&b, &start), 0);
    for (int i = 0; i <= CMD_MAX_BATCH; i++) ASSERT_EQ(cmd_batch_add(&b, &c), 0);
    cmd_batch_end(&b, start, CMD_MAX_BATCH + 1);
    ASSERT_EQ(cmd_reader_init(&r, b.data, b.len, NULL), BATON_EMALFORMED);
    /* Exactly CMD_MAX_BATCH is fine (the last command is then trailing). */
    cmd_batch_end(&b, start, CMD_MAX_BATCH);
    ASSERT_EQ(decode_all(b.data, b.len, NULL, 0), BATON_EMALFORMED);
    b.len -= (b.len - 5) / (CMD_MAX_BATCH + 1); /* drop the last command */
    ASSERT_EQ(decode_all(b.data, b.len, NULL, 0), CMD_MAX_BATCH);
    buf_free(&b);
}

TEST(decoder_rejects_truncation_at_every_length)
{
    struct cmd in[3];
    struct buf b = {0};

    in[0] = make_cmd(CMD_ACQUIRE, "alpha");
    in[1] = c_open_by(1000, "client", "owner");
    in[2] = make_cmd(CMD_RELEASE, "beta");
    cmds_encode(&b, in, 3);
    for (size_t len = 0; len < b.len; len++) {
        /* Copy so that ASan sees any read past the shorter length. */
        uint8_t *copy = malloc(len ? len : 1);
        ASSERT(copy != NULL);
        memcpy(copy, b.data, len);
        ASSERT_LT(decode_all(copy, len, NULL, 0), 0);
        free(copy);
    }
    ASSERT_EQ(decode_all(b.data, b.len, NULL, 0), 3);
    buf_free(&b);
}

TEST(decoder_rejects_trailing_bytes)
{
    struct cmd in = make_cmd(CMD_FORCE_RELEASE, "x");
    struct buf b = {0};

    cmds_encode(&b, &in, 1);
    ASSERT_EQ(buf_put_u8(&b, 0), 0);
    ASSERT_EQ(decode_all(b.data, b.len, NULL, 0), BATON_EMALFORMED);
    /* And after an owner. */
    buf_reset(&b);
    in = c_open_by(1000, "c", "alice");
    cmds_encode(&b, &in, 1);
    ASSERT_EQ(buf_put_u8(&b, 0), 0);
    ASSERT_EQ(decode_all(b.data, b.len, NULL, 0), BATON_EMALFORMED);
    buf_free(&b);
}

/* Patch the type byte of the first command and check the decoder's verdict. */
static int decode_with_type(uint8_t type, const char *name)
{
    struct cmd in = make_cmd(CMD_ACQUIRE, name);
    struct buf b = {0};
    int rv;

    cmds_encode(&b, &in, 1);
    b.data[5] = type;
    rv = decode_all(b.data, b.len, NULL, 0);
    buf_free(&b);
    return rv;
}

TEST(decoder_rejects_bad_type_and_name_for_type)
{
    char client_plus[BATON_MAX_CLIENT_NAME + 2];

    memset(client_plus, 'c', sizeof client_plus - 1);
    client_plus[sizeof client_plus - 1] = 0;
    ASSERT_EQ(decode_with_type(0, "x"), BATON_EMALFORMED);
    ASSERT_EQ(decode_with_type(CMD_TYPE_MAX_, "x"), BATON_EMALFORMED);
    ASSERT_EQ(decode_with_type(255, "x"), BATON_EMALFORMED);
    ASSERT_EQ(decode_with_type(CMD_CLOSE_SESSION, "x"), BATON_EMALFORMED);
    ASSERT_EQ(decode_with_type(CMD_EXPIRE_SESSION, "x"), BATON_EMALFORMED);
    ASSERT_EQ(decode_with_type(CMD_CLOSE_SESSION, ""), 1);
    /* CHECK carries nothing (storage/cmd.h, "Content checks"). */
    ASSERT_EQ(decode_with_type(CMD_CHECK, "x"), BATON_EMALFORMED);
    ASSERT_EQ(decode_with_type(CMD_CHECK, ""), 1);
    ASSERT_EQ(decode_with_type(CMD_DELAY_END, "x"), 1);
    /* SET_MEMBER_ADDR carries an address: at most BATON_MAX_ADDR bytes. */
    ASSERT_EQ(decode_with_type(CMD_SET_MEMBER_ADDR, "127.0.0.1:7004"), 1);
    ASSERT_EQ(decode_with_type(CMD_SET_MEMBER_ADDR, ""), 1);
    client_plus[BATON_MAX_ADDR + 1] = 0;
    ASSERT_EQ(decode_with_type(CMD_SET_MEMBER_ADDR, client_plus), BATON_EMALFORMED);
    client_plus[BATON_MAX_ADDR] = 0;
    ASSERT_EQ(decode_with_type(CMD_SET_MEMBER_ADDR, client_plus), 1);
    memset(client_plus, 'c', sizeof client_plus - 1);
    client_plus[sizeof client_plus - 1] = 0;
    ASSERT_EQ(decode_with_type(CMD_OPEN_SESSION, client_plus), BATON_EMALFORMED);
    client_plus[BATON_MAX_CLIENT_NAME] = 0;
    ASSERT_EQ(decode_with_type(CMD_OPEN_SESSION, client_plus), 1);
    /* Name legality is the store's business: the codec passes these. */
    ASSERT_EQ(decode_with_type(CMD_ACQUIRE, ""), 1);
}

/* One CMD_OPEN_OWNED whose owner is declared `declared` bytes long and
 * followed by `present` bytes: the decoder's verdict. */
static int decode_owner(uint16_t declared, size_t present)
{
    struct cmd in = c_open(1000, "c");
    uint8_t bytes[BATON_MAX_PRINCIPAL + 8];
    struct buf b = {0};
    int rv;

    ASSERT(present <= sizeof bytes);
    memset(bytes, 'p', sizeof bytes);
    cmds_encode(&b, &in, 1);
    b.data[5] = CMD_OPEN_OWNED;
    ASSERT_EQ(buf_put_u16(&b, declared), 0);
    ASSERT_EQ(buf_put(&b, bytes, present), 0);
    rv = decode_all(b.data, b.len, NULL, 0);
    buf_free(&b);
    return rv;
}

TEST(decoder_bounds_the_owner)
{
    ASSERT_EQ(decode_owner(1, 1), 1);
    ASSERT_EQ(decode_owner(BATON_MAX_PRINCIPAL, BATON_MAX_PRINCIPAL), 1);
    /* Empty: that session is written as a plain OPEN_SESSION. */
    ASSERT_EQ(decode_owner(0, 0), BATON_EMALFORMED);
    /* Longer than a principal, even with the bytes there. */
    ASSERT_EQ(decode_owner(BATON_MAX_PRINCIPAL + 1, BATON_MAX_PRINCIPAL + 1), BATON_EMALFORMED);
    ASSERT_EQ(decode_owner(UINT16_MAX, BATON_MAX_PRINCIPAL + 8), BATON_EMALFORMED);
    /* Declared longer than what follows, or shorter (trailing bytes). */
    ASSERT_EQ(decode_owner(5, 4), BATON_EMALFORMED);
    ASSERT_EQ(decode_owner(4, 5), BATON_EMALFORMED);
    /* No owner at all after the name. */
    ASSERT_EQ(decode_with_type(CMD_OPEN_OWNED, "x"), BATON_EMALFORMED);
}

/*
 * The keep list of a client's session commands (cmd.h): the type byte
 * with CMD_KEEP_FLAG, the command's fields as always, then u16 count and
 * the seqs. Without a list the bytes are those of before; the four types
 * round-trip with lists of 1 and CMD_MAX_KEEP seqs.
 */
TEST(keep_list_codec)
{
    static const uint8_t types[] = {CMD_ACQUIRE, CMD_RELEASE, CMD_CANCEL, CMD_CLOSE_SESSION};
    uint64_t seqs[CMD_MAX_KEEP];
    uint8_t kb[8 * CMD_MAX_KEEP];
    struct buf plain = {0}, b = {0};
    struct cmd in, out;

    for (int i = 0; i < CMD_MAX_KEEP; i++) seqs[i] = 0x0102030405060700ull + (uint64_t)i;
    for (size_t t = 0; t < sizeof types; t++) {
        in = make_cmd(types[t], types[t] == CMD_CLOSE_SESSION ? NULL : "L");
        in.session = 7;
        in.seq = 9;
        buf_reset(&plain);
        cmds_encode(&plain, &in, 1);
        for (int n = 1; n <= CMD_MAX_KEEP; n += CMD_MAX_KEEP - 1) {
            in = cmd_acks(in, 0x0203040506070809ull, seqs, (size_t)n, kb);
            buf_reset(&b);
            cmds_encode(&b, &in, 1);
            /* The command as before with the flag, then the list. */
            ASSERT_UEQ(b.len, plain.len + 2 + 8 * (size_t)n);
            ASSERT_EQ(b.data[5], types[t] | CMD_KEEP_FLAG);
            ASSERT(memcmp(b.data + 6, plain.data + 6, 16) == 0); /* session, seq */
            ASSERT_UEQ(le_get_u64(b.data + 22), 0x0203040506070809ull);
            ASSERT(memcmp(b.data + 30, plain.data + 30, plain.len - 30) == 0);
            ASSERT_EQ(le_get_u16(b.data + plain.len), n);
            ASSERT_UEQ(le_get_u64(b.data + plain.len + 2), seqs[0]);
            ASSERT_EQ(decode_all(b.data, b.len, &out, 1), 1);
            assert_cmd_eq(&in, &out);
            ASSERT(out.keep > b.data && out.keep < b.data + b.len); /* borrowed */
        }
    }
    /* The encoder: a list on another type, a list with an owner, too long
     * a list, a missing one. */
    buf_reset(&b);
    in = cmd_acks(c_open(1000, "c"), 5, seqs, 1, kb);
    ASSERT_EQ(cmd_batch_add(&b, &in), BATON_EINVAL);
    in = cmd_acks(c_expire(3), 5, seqs, 1, kb);
    ASSERT_EQ(cmd_batch_add(&b, &in), BATON_EINVAL);
    in = cmd_acks(c_acq(1, 2, 0, "x"), 5, seqs, 1, kb);
    in.owner = "alice";
    in.owner_len = 5;
    ASSERT_EQ(cmd_batch_add(&b, &in), BATON_EINVAL);
    in = cmd_acks(c_acq(1, 2, 0, "x"), 5, seqs, 1, kb);
    in.n_keep = CMD_MAX_KEEP + 1;
    ASSERT_EQ(cmd_batch_add(&b, &in), BATON_ETOOBIG);
    in.n_keep = 1;
    in.keep = NULL;
    ASSERT_EQ(cmd_batch_add(&b, &in), BATON_EINVAL);
    ASSERT_UEQ(b.len, 0);
    buf_free(&plain);
    buf_free(&b);
}

/* One RELEASE whose type byte is `type` (CMD_KEEP_FLAG included or not),
 * followed by a keep list declared `declared` seqs long with `present`
 * seqs there: the decoder's verdict. */
static int decode_keep(uint8_t type, uint16_t declared, size_t present)
{
    struct cmd in = c_rel(1, 2, 3, "x");
    struct buf b = {0};
    int rv;

    cmds_encode(&b, &in, 1);
    b.data[5] = type;
    ASSERT_EQ(buf_put_u16(&b, declared), 0);
    for (size_t i = 0; i < present; i++) ASSERT_EQ(buf_put_u64(&b, i + 1), 0);
    rv = decode_all(b.data, b.len, NULL, 0);
    buf_free(&b);
    return rv;
}

TEST(decoder_bounds_the_keep_list)
{
    ASSERT_EQ(decode_keep(CMD_RELEASE | CMD_KEEP_FLAG, 1, 1), 1);
    ASSERT_EQ(decode_keep(CMD_RELEASE | CMD_KEEP_FLAG, CMD_MAX_KEEP, CMD_MAX_KEEP), 1);
    /* Empty: that command is written without the flag. */
    ASSERT_EQ(decode_keep(CMD_RELEASE | CMD_KEEP_FLAG, 0, 0), BATON_EMALFORMED);
    ASSERT_EQ(decode_keep(CMD_RELEASE | CMD_KEEP_FLAG, CMD_MAX_KEEP + 1, CMD_MAX_KEEP + 1),
              BATON_EMALFORMED);
    /* Declared longer than what follows, or shorter (trailing bytes). */
    ASSERT_EQ(decode_keep(CMD_RELEASE | CMD_KEEP_FLAG, 3, 2), BATON_EMALFORMED);
    ASSERT_EQ(decode_keep(CMD_RELEASE | CMD_KEEP_FLAG, 2, 3), BATON_EMALFORMED);
    /* The flag on a type that has no list, or on no type at all. */
    ASSERT_EQ(decode_keep(CMD_FORCE_RELEASE | CMD_KEEP_FLAG, 1, 1), BATON_EMALFORMED);
    ASSERT_EQ(decode_keep(CMD_WAIT_TIMEOUT | CMD_KEEP_FLAG, 1, 1), BATON_EMALFORMED);
    ASSERT_EQ(decode_keep(CMD_KEEP_FLAG, 1, 1), BATON_EMALFORMED);
    ASSERT_EQ(decode_with_type(CMD_OPEN_SESSION | CMD_KEEP_FLAG, "c"), BATON_EMALFORMED);
    /* No list after a flagged command. */
    ASSERT_EQ(decode_with_type(CMD_ACQUIRE | CMD_KEEP_FLAG, "x"), BATON_EMALFORMED);
}

TEST(decoder_reader_stays_failed)
{
    struct cmd in[2];
    struct buf b = {0};
    struct cmd_reader r;
    struct cmd c;

    in[0] = make_cmd(CMD_FORCE_RELEASE, "a");
    in[1] = make_cmd(CMD_FORCE_RELEASE, "b");
    cmds_encode(&b, in, 2);
    ASSERT_EQ(cmd_reader_init(&r, b.data, b.len - 1, NULL), 0);
    ASSERT_EQ(cmd_reader_next(&r, &c), 1);
    ASSERT_EQ(cmd_reader_next(&r, &c), BATON_EMALFORMED);
    ASSERT_EQ(cmd_reader_next(&r, &c), BATON_EMALFORMED);
    buf_free(&b);
}

TEST(decoder_survives_random_garbage)
{
    uint8_t data[600];
    struct buf b = {0};
    struct cmd in[4];

    in[0] = make_cmd(CMD_ACQUIRE, "lock-a");
    in[1] = make_cmd(CMD_CANCEL, "lock-b");
    in[2] = c_open_by(1000, "c", "owner");
    in[3] = make_cmd(CMD_CLOSE_SESSION, NULL);
    cmds_encode(&b, in, 4);
    for (int i = 0; i < 20000; i++) {
        size_t len = (size_t)(rng() % sizeof data);
        for (size_t j = 0; j < len; j++) data[j] = (uint8_t)rng();
        if (i % 2 == 0) {
            data[0] = CMD_FORMAT;
            if (len >= 5) le_put_u32(data + 1, (uint32_t)(rng() % 8));
        }
        (void)decode_all(data, len, NULL, 0);
        /* Flip bytes of a valid batch as well. */
        if (b.len <= sizeof data) {
            memcpy(data, b.data, b.len);
            data[rng() % b.len] ^= (uint8_t)(1u << (rng() % 8));
            (void)decode_all(data, b.len, NULL, 0);
        }
    }
    buf_free(&b);
}

TEST(effects_arrays)
{
    struct effects e;
    struct cmd_result r = {.status = 0, .kind = RESULT_GRANTED};
    struct effect fx;
    size_t cap_r, cap_f;

    effects_init(&e);
    memset(&fx, 0, sizeof fx);
    for (int i = 0; i < 1000; i++) {
        r.value = (uint64_t)i;
        fx.fence = (uint64_t)i;
        ASSERT_EQ(effects_add_result(&e, &r), 0);
        ASSERT_EQ(effects_add_fx(&e, &fx), 0);
    }
    ASSERT_EQ(e.n_results, 1000);
    ASSERT_EQ(e.n_fx, 1000);
    for (int i = 0; i < 1000; i++) {
        ASSERT_UEQ(e.results[i].value, i);
        ASSERT_UEQ(e.fx[i].fence, i);
    }
    cap_r = e.cap_results;
    cap_f = e.cap_fx;
    effects_reset(&e);
    ASSERT_EQ(e.n_results, 0);
    ASSERT_EQ(e.n_fx, 0);
    ASSERT_EQ(e.cap_results, cap_r);
    ASSERT_EQ(e.cap_fx, cap_f);
    effects_free(&e);
    ASSERT(e.results == NULL && e.fx == NULL);
    effects_free(&e);
    effects_free(NULL);
}

TEST(type_names)
{
    ASSERT_STREQ(cmd_type_name(CMD_OPEN_SESSION), "OPEN_SESSION");
    ASSERT_STREQ(cmd_type_name(CMD_ACQUIRE), "ACQUIRE");
    ASSERT_STREQ(cmd_type_name(CMD_RELEASE), "RELEASE");
    ASSERT_STREQ(cmd_type_name(CMD_CANCEL), "CANCEL");
    ASSERT_STREQ(cmd_type_name(CMD_CLOSE_SESSION), "CLOSE_SESSION");
    ASSERT_STREQ(cmd_type_name(CMD_EXPIRE_SESSION), "EXPIRE_SESSION");
    ASSERT_STREQ(cmd_type_name(CMD_WAIT_TIMEOUT), "WAIT_TIMEOUT");
    ASSERT_STREQ(cmd_type_name(CMD_FORCE_RELEASE), "FORCE_RELEASE");
    ASSERT_STREQ(cmd_type_name(CMD_DELAY_END), "DELAY_END");
    ASSERT_STREQ(cmd_type_name(CMD_SET_MEMBER_ADDR), "SET_MEMBER_ADDR");
    ASSERT_STREQ(cmd_type_name(CMD_OPEN_OWNED), "OPEN_OWNED");
    ASSERT_STREQ(cmd_type_name(CMD_CHECK), "CHECK");
    ASSERT_STREQ(cmd_type_name(0), "?");
    ASSERT_STREQ(cmd_type_name(CMD_TYPE_MAX_), "?");
}

/*
 * The frozen type bytes (storage/cmd_table.h): every raft log and snapshot
 * ever written holds them. This list is written out by hand, not derived
 * from the table, so that a row whose byte changed, a row added without a
 * line here and a line whose row is gone all fail. Adding a command adds
 * its line; no line ever changes or goes.
 */
static const struct {
    const char *name;
    int byte;
} pinned[] = {
    {"OPEN_SESSION", 1},    {"ACQUIRE", 2},        {"RELEASE", 3},
    {"CANCEL", 4},          {"CLOSE_SESSION", 5},  {"EXPIRE_SESSION", 6},
    {"WAIT_TIMEOUT", 7},    {"FORCE_RELEASE", 8},  {"DELAY_END", 9},
    {"SET_MEMBER_ADDR", 10}, {"OPEN_OWNED", 11},   {"CHECK", 12},
    {"FORCE_RELEASE2", 13}, {"ACQUIRE_MODES", 14}, {"ACQUIRE_MANY", 15},
    {"SET_LEVEL", 16},      {"ACQUIRE_EXT", 17},   {"SET_VALUE", 18},
};
#define N_PINNED (sizeof pinned / sizeof pinned[0])

/* The rows of cmd_table.h as written, in row order. */
static const struct {
    const char *name, *is, *apply;
    int byte, level;
} table[] = {
#define ROW_(n, b, l, k, g, max, t, i, apply) {#n, #i, #apply, (b), (l)},
    BATON_CMDS(ROW_)
#undef ROW_
};
#define N_TABLE (sizeof table / sizeof table[0])

static int pinned_byte(const char *name)
{
    for (size_t i = 0; i < N_PINNED; i++)
        if (strcmp(pinned[i].name, name) == 0) return pinned[i].byte;
    return -1;
}

static int table_byte(const char *name)
{
    for (size_t i = 0; i < N_TABLE; i++)
        if (strcmp(table[i].name, name) == 0) return table[i].byte;
    return -1;
}

TEST(type_bytes_are_frozen)
{
    int prev = 0, known = 0;

    for (size_t i = 0; i < N_TABLE; i++) {
        if (pinned_byte(table[i].name) != table[i].byte)
            FAIL("row %s has byte %d, pinned %d (-1: no pin)", table[i].name, table[i].byte,
                 pinned_byte(table[i].name));
        /* in byte order, each byte once, found by the codec under its name */
        ASSERT_GT(table[i].byte, prev);
        prev = table[i].byte;
        ASSERT(cmd_lookup(table[i].byte) != NULL);
        ASSERT_STREQ(cmd_lookup(table[i].byte)->name, table[i].name);
        ASSERT_STREQ(cmd_type_name(table[i].byte), table[i].name);
    }
    for (size_t i = 0; i < N_PINNED; i++)
        if (table_byte(pinned[i].name) != pinned[i].byte)
            FAIL("pinned %s = %d, the table has %d (-1: no row)", pinned[i].name, pinned[i].byte,
                 table_byte(pinned[i].name));
    for (int b = 0; b < 256; b++) known += cmd_lookup(b) != NULL;
    ASSERT_EQ(known, N_PINNED);
    ASSERT_EQ(CMD_KEEP_FLAG, 0x80); /* the keep-list bit of the type byte */
    ASSERT_EQ(CMD_FORMAT, 2);       /* the batch's format byte */
    ASSERT_EQ(CMD_OPEN_SESSION, 1);
    ASSERT_EQ(CMD_ACQUIRE_MANY, 15);
    ASSERT_EQ(CMD_SET_LEVEL, 16);
    ASSERT_EQ(cmd_lookup(CMD_SET_LEVEL)->level, 2); /* the level that introduced it */
}

/* The rules of cmd_table.h's columns: levels up to CMD_LEVEL, which some
 * row has; an encoding-only row has no handler and names a command that
 * shares its kind, grows and name_max; every other row has a handler. */
TEST(table_columns_agree)
{
    int top = 0;

    for (size_t i = 0; i < N_TABLE; i++) {
        const struct cmd_row *t = cmd_lookup(table[i].byte), *is;
        ASSERT(t != NULL);
        ASSERT(t->level >= 1 && t->level <= CMD_LEVEL);
        ASSERT_EQ(t->level, table[i].level);
        if (t->level > top) top = t->level;
        is = cmd_lookup(t->is);
        ASSERT(is != NULL);
        ASSERT_EQ(is->is, is->byte); /* the target decodes to itself */
        if (strcmp(table[i].is, table[i].name) == 0) {
            ASSERT_EQ(t->is, t->byte);
            ASSERT(strcmp(table[i].apply, "NULL") != 0);
            continue;
        }
        ASSERT(strcmp(table[i].apply, "NULL") == 0);
        ASSERT_NE(t->tail, is->tail);
        ASSERT_EQ(t->kind, is->kind);
        ASSERT_EQ(t->grows, is->grows);
        ASSERT_EQ(t->name_max, is->name_max);
    }
    ASSERT_EQ(top, CMD_LEVEL);
}

/* cmd_level: the level of the row that carries a command. */
TEST(level_of_a_command)
{
    struct cmd c = make_cmd(CMD_ACQUIRE, "L");

    ASSERT_EQ(cmd_level(&c), 1);
    c.mode = 1; /* travels as ACQUIRE_MODES */
    ASSERT_EQ(cmd_level(&c), cmd_lookup(CMD_ACQUIRE_MODES)->level);
    c = cmd_of(CMD_SET_LEVEL, 2, 0, NULL);
    ASSERT_EQ(cmd_level(&c), 2);
    c = make_cmd(CMD_ACQUIRE_MODES, "L"); /* an encoding-only type is no command */
    ASSERT_EQ(cmd_level(&c), 0);
    c = make_cmd(CMD_ACQUIRE, "L");
    c.flags = CMD_ACQ_OWNERS; /* values and owners: level 3 */
    ASSERT_EQ(cmd_level(&c), 3);
    c = make_cmd(CMD_SET_VALUE, "L");
    ASSERT_EQ(cmd_level(&c), 3);
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(level_of_a_command);
    RUN(roundtrip_every_type);
    RUN(layout_matches_header);
    RUN(open_session_layouts);
    RUN(owner_roundtrip_lengths);
    RUN(acquire_modes_layouts);
    RUN(acquire_many_layouts);
    RUN(values_and_flags_layouts);
    RUN(empty_batch);
    RUN(batch_inside_a_buffer);
    RUN(encoder_refuses_bad_commands);
    RUN(decoder_rejects_header_garbage);
    RUN(decoder_rejects_count_above_max);
    RUN(decoder_rejects_truncation_at_every_length);
    RUN(decoder_rejects_trailing_bytes);
    RUN(decoder_rejects_bad_type_and_name_for_type);
    RUN(decoder_bounds_the_owner);
    RUN(keep_list_codec);
    RUN(decoder_bounds_the_keep_list);
    RUN(decoder_reader_stays_failed);
    RUN(decoder_survives_random_garbage);
    RUN(effects_arrays);
    RUN(type_names);
    RUN(type_bytes_are_frozen);
    RUN(table_columns_agree);
    return runner_done();
}
