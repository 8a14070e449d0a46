/*
 * cmd.c -- the command batch codec (the payload of one raft entry) and the
 * growable arrays of results and effects that applying a batch yields.
 * See cmd.h for the encoding.
 *
 * The rows of cmd_table.h drive both directions: which bytes are
 * commands, how long a name each carries, what follows the name (its
 * tail), which may carry a keep list, and which command an encoding-only
 * byte decodes to.
 *
 * The decoder checks only the shape of each command: its type, and that its
 * name fits the type (the name_max column). Whether a lock name (non-empty,
 * no NUL) or an address is legal is decided when the command is applied,
 * so that one bad name fails one command with BATON_EINVAL rather than the
 * whole batch it travels in. An owner is opaque bytes to the store: only
 * its length is checked. So is a keep list: its length and its type here,
 * the seqs in it when it is applied.
 */
#include "storage/cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"

/* Bytes of a command with an empty name. */
#define CMD_FIXED_LEN (1 + 8 + 8 + 8 + 4 + 8 + 8 + 8 + 4 + 2)

/* The rows of cmd_table.h, indexed by type byte; a byte without a row has
 * a NULL name, and so has a row above this binary's level (CMD_LEVEL: a
 * test build's lower level), which it then neither decodes nor encodes. */
static const struct cmd_row rows[CMD_TYPE_MAX_] = {
#define CMD_ROW_(n, b, l, k, g, max, t, i, apply)                                                \
    [CMD_##n] = {.name = (l) <= CMD_LEVEL ? #n : NULL, .byte = (b), .level = (l), .kind = CMD_KIND_##k, .grows = (g),       \
                 .name_max = (max), .tail = CMD_TAIL_##t, .is = CMD_##i},
    BATON_CMDS(CMD_ROW_)
#undef CMD_ROW_
};

/* What the table must hold for the code here to be right: a byte below
 * CMD_KEEP_FLAG and above 0, a level this binary has, an encoding-only
 * row that is a row itself, and rows in byte order (one member per row,
 * as long as its byte + 1: the union is as long as the highest byte + 1,
 * which the enum's last member is only if the last row has it). */
#define CMD_CHECK_(n, b, l, k, g, max, t, i, apply)                                              \
    _Static_assert((b) > 0 && (b) < CMD_KEEP_FLAG, "type byte of " #n);                         \
    _Static_assert((l) >= 1 && (l) <= CMD_TABLE_LEVEL, "level of " #n);                               \
    _Static_assert((max) <= UINT16_MAX, "name_max of " #n);
BATON_CMDS(CMD_CHECK_)
#undef CMD_CHECK_
union cmd_bytes_ {
#define CMD_BYTE_(n, b, ...) char n[(b) + 1];
    BATON_CMDS(CMD_BYTE_)
#undef CMD_BYTE_
};
_Static_assert(sizeof(union cmd_bytes_) == CMD_TYPE_MAX_, "cmd_table.h: rows in byte order");

const struct cmd_row *cmd_lookup(int type)
{
    if (type < 0 || type >= CMD_TYPE_MAX_ || rows[type].name == NULL) return NULL;
    return &rows[type];
}

/* May a command of this type byte carry a keep list? */
static int may_keep(const struct cmd_row *t)
{
    return t->kind == CMD_KIND_CLIENT;
}

int cmd_more_next(const struct cmd *c, size_t *off, const char **name, uint16_t *len)
{
    if (*off + 2 > c->more_len) return 0;
    *len = le_get_u16(c->more + *off);
    *name = (const char *)c->more + *off + 2;
    *off += 2 + (size_t)*len;
    return 1;
}

uint64_t cmd_keep_at(const struct cmd *c, size_t i)
{
    return le_get_u64(c->keep + 8 * i);
}

int cmd_batch_begin(struct buf *b, size_t *start)
{
    int rv = buf_reserve(b, 5);

    if (rv != 0) return rv;
    *start = b->len;
    buf_put_u8(b, CMD_FORMAT);
    buf_put_u32(b, 0); /* patched by cmd_batch_end */
    return 0;
}

/* Does c carry any of an ACQUIRE's mode fields (cmd.h, "Lock modes")? */
static int has_modes(const struct cmd *c)
{
    return c->mode != 0 || c->limit != 0 || c->reentrant != 0;
}

/* Does c carry an ACQUIRE's flags or a value (cmd.h, "Values and owners")? */
static int has_ext(const struct cmd *c)
{
    return c->flags != 0 || c->value_len != 0;
}

/* Does a row of this tail carry exactly the optional fields c has (an
 * owner, mode fields, more names)? At most one tail does. */
static int tail_fits(int tail, const struct cmd *c)
{
    switch (tail) {
    case CMD_TAIL_NONE:
        return c->owner_len == 0 && !has_modes(c) && c->n_more == 0 && !has_ext(c);
    case CMD_TAIL_OWNER:
        return c->owner_len > 0 && !has_modes(c) && c->n_more == 0 && !has_ext(c);
    case CMD_TAIL_MODES:
        return c->owner_len == 0 && has_modes(c) && c->n_more == 0 && !has_ext(c);
    case CMD_TAIL_MANY:
        return c->owner_len == 0 && c->n_more > 0 && !has_ext(c);
    case CMD_TAIL_EXT:
        return c->owner_len == 0 && c->n_more == 0 && has_ext(c);
    case CMD_TAIL_VALUE:
        return c->owner_len == 0 && c->n_more == 0 && !has_modes(c) && c->flags == 0;
    default:
        return 0;
    }
}

/*
 * The type byte that carries c, or -1 if c cannot be encoded: the row
 * that decodes to c's type and whose tail fits c's fields (an OPEN_SESSION
 * with an owner travels as CMD_OPEN_OWNED, an ACQUIRE with modes as
 * CMD_ACQUIRE_MODES, so that the others keep the bytes older binaries
 * read), with CMD_KEEP_FLAG if c has a keep list (cmd.h). An
 * encoding-only type is the codec's, not a caller's.
 */
static int wire_type(const struct cmd *c)
{
    const struct cmd_row *t = cmd_lookup(c->type);
    int type = -1;

    if (t == NULL || t->is != c->type) return -1;
    for (int b = 0; b < CMD_TYPE_MAX_; b++)
        if (rows[b].name != NULL && rows[b].is == c->type && tail_fits(rows[b].tail, c)) type = b;
    if (type < 0) return -1;
    if (c->n_keep > 0) return may_keep(&rows[type]) ? type | CMD_KEEP_FLAG : -1;
    return type;
}

int cmd_level(const struct cmd *c)
{
    int type = wire_type(c);

    if (type >= 0) return rows[type & ~CMD_KEEP_FLAG].level;
    /* A row above this binary's level (a test build's, CMD_LEVEL): its
     * level, so that the leader refuses the command with BATON_EVERSION as
     * a leader of an older release would, rather than fail to encode it. */
    for (int b = 0; b < CMD_TYPE_MAX_; b++)
        if (rows[b].level > CMD_LEVEL && rows[b].is == c->type && tail_fits(rows[b].tail, c))
            return rows[b].level;
    return 0;
}

/*
 * Append one command. Everything is checked and the room reserved before
 * the first byte is written, so that a refused command leaves the batch as
 * it was and the caller can go on adding others.
 */
int cmd_batch_add(struct buf *b, const struct cmd *c)
{
    int type = wire_type(c);
    size_t len = CMD_FIXED_LEN + c->name_len;
    uint8_t tail;
    int rv;

    if (type < 0) return BATON_EINVAL;
    tail = rows[type & ~CMD_KEEP_FLAG].tail;
    if (c->name_len > rows[c->type].name_max || c->owner_len > BATON_MAX_PRINCIPAL ||
        c->n_keep > CMD_MAX_KEEP)
        return BATON_ETOOBIG;
    if (c->value_len > CMD_MAX_VALUE) return BATON_ETOOBIG;
    if ((c->name_len > 0 && c->name == NULL) || (c->owner_len > 0 && c->owner == NULL) ||
        (c->n_keep > 0 && c->keep == NULL) || (c->value_len > 0 && c->value == NULL))
        return BATON_EINVAL;
    if (tail == CMD_TAIL_OWNER) len += 2 + c->owner_len;
    if (tail == CMD_TAIL_MODES) len += 6;
    if (tail == CMD_TAIL_EXT) len += 6 + 1 + 2 + c->value_len;
    if (tail == CMD_TAIL_VALUE) len += 2 + c->value_len;
    if (tail == CMD_TAIL_MANY) {
        if (c->n_more >= BATON_MAX_MANY || c->more_len > (size_t)c->n_more * (2 + BATON_MAX_NAME))
            return BATON_ETOOBIG;
        if (c->more == NULL) return BATON_EINVAL;
        len += 6 + 1 + c->more_len;
    }
    if (c->n_keep > 0) len += 2 + 8 * (size_t)c->n_keep;
    rv = buf_reserve(b, len);
    if (rv != 0) return rv;
    buf_put_u8(b, (uint8_t)type);
    buf_put_u64(b, c->session);
    buf_put_u64(b, c->seq);
    buf_put_u64(b, c->ack_below);
    buf_put_u32(b, c->ttl_ms);
    buf_put_i64(b, c->wait_ms);
    buf_put_u64(b, c->fence);
    buf_put_u64(b, c->waiter);
    buf_put_i32(b, c->lock_delay_ms);
    buf_put_str(b, c->name, c->name_len);
    if (tail == CMD_TAIL_OWNER) buf_put_str(b, c->owner, c->owner_len);
    if (tail == CMD_TAIL_MODES || tail == CMD_TAIL_MANY || tail == CMD_TAIL_EXT) {
        buf_put_u8(b, c->mode);
        buf_put_u32(b, c->limit);
        buf_put_u8(b, c->reentrant);
    }
    if (tail == CMD_TAIL_EXT) buf_put_u8(b, c->flags);
    if (tail == CMD_TAIL_EXT || tail == CMD_TAIL_VALUE)
        buf_put_str(b, (const char *)c->value, c->value_len);
    if (tail == CMD_TAIL_MANY) {
        buf_put_u8(b, c->n_more);
        buf_put(b, c->more, c->more_len);
    }
    if (c->n_keep > 0) {
        buf_put_u16(b, c->n_keep);
        buf_put(b, c->keep, 8 * (size_t)c->n_keep);
    }
    return 0;
}

void cmd_batch_end(struct buf *b, size_t start, uint32_t count)
{
    le_put_u32(b->data + start + 1, count);
}

int cmd_reader_init(struct cmd_reader *r, const void *data, size_t len, uint32_t *count)
{
    uint8_t format;
    uint32_t n;

    r->left = 0;
    rd_init(&r->rd, data, len);
    if (rd_u8(&r->rd, &format) != 0 || rd_u32(&r->rd, &n) != 0) return BATON_EMALFORMED;
    /* Each command takes at least CMD_FIXED_LEN bytes: reject a count the
     * data cannot hold before anyone loops over it. */
    if (format != CMD_FORMAT || n > CMD_MAX_BATCH || rd_left(&r->rd) / CMD_FIXED_LEN < n) {
        r->rd.err = BATON_EMALFORMED;
        return BATON_EMALFORMED;
    }
    r->left = n;
    if (count != NULL) *count = n;
    return 0;
}

/*
 * The owner that follows the name of a CMD_OPEN_OWNED (tail OWNER). An empty owner is malformed: that session is
 * written as a plain OPEN_SESSION, and a second encoding of it would
 * break the one-encoding-per-command rule (cmd.h).
 */
static void read_owner(struct rd *rd, struct cmd *c)
{
    if (rd_str(rd, BATON_MAX_PRINCIPAL, &c->owner, &c->owner_len) != 0) return;
    if (c->owner_len == 0) rd->err = BATON_EMALFORMED;
}

/* u8 mode, u32 limit, u8 reentrant: after the name of a
 * CMD_ACQUIRE_MODES and of a CMD_ACQUIRE_MANY. */
static void read_mode_fields(struct rd *rd, struct cmd *c)
{
    rd_u8(rd, &c->mode);
    rd_u32(rd, &c->limit);
    rd_u8(rd, &c->reentrant);
}

/* The mode fields of a CMD_ACQUIRE_MODES (tail MODES); all three 0 is malformed (that ACQUIRE is written as a plain
 * one). */
static void read_modes(struct rd *rd, struct cmd *c)
{
    read_mode_fields(rd, c);
    if (rd->err == 0 && !has_modes(c)) rd->err = BATON_EMALFORMED;
}

/* The tail of a CMD_ACQUIRE_EXT: the mode fields, u8 flags, str value; a
 * tail with no flag and no value is malformed (that ACQUIRE is written
 * without it), and so are unknown flags. */
static void read_ext(struct rd *rd, struct cmd *c)
{
    const char *v;

    read_mode_fields(rd, c);
    rd_u8(rd, &c->flags);
    if (rd_str(rd, CMD_MAX_VALUE, &v, &c->value_len) != 0) return;
    c->value = (const uint8_t *)v;
    if (!has_ext(c) || (c->flags & ~CMD_ACQ_FLAGS_ALL) != 0) rd->err = BATON_EMALFORMED;
}

/* The value of a SET_VALUE (tail VALUE), 0..CMD_MAX_VALUE bytes. */
static void read_value(struct rd *rd, struct cmd *c)
{
    const char *v;

    if (rd_str(rd, CMD_MAX_VALUE, &v, &c->value_len) == 0) c->value = (const uint8_t *)v;
}

/* The more names of an ACQUIRE_MANY (cmd.h): 1..BATON_MAX_MANY - 1 of
 * them, each 1..BATON_MAX_NAME bytes, borrowed still encoded. */
static void read_more(struct rd *rd, struct cmd *c)
{
    const uint8_t *start;
    const char *name;
    uint16_t len;

    read_mode_fields(rd, c); /* any values, all 0 included: ACQUIRE_MANY has one encoding */
    if (rd_u8(rd, &c->n_more) != 0) return;
    if (c->n_more == 0 || c->n_more >= BATON_MAX_MANY) {
        rd->err = BATON_EMALFORMED;
        return;
    }
    start = rd->p;
    for (unsigned i = 0; i < c->n_more && rd->err == 0; i++)
        if (rd_str(rd, BATON_MAX_NAME, &name, &len) == 0 && len == 0) rd->err = BATON_EMALFORMED;
    if (rd->err != 0) return;
    c->more = start;
    c->more_len = (size_t)(rd->p - start);
}

/*
 * The keep list that ends a command whose type byte had CMD_KEEP_FLAG: a
 * count of 1..CMD_MAX_KEEP (an empty list is written without the flag:
 * one encoding per command), then the seqs, borrowed from the batch.
 */
static void read_keep(struct rd *rd, struct cmd *c)
{
    const uint8_t *p;
    uint16_t n;

    if (rd_u16(rd, &n) != 0) return;
    if (n == 0 || n > CMD_MAX_KEEP) {
        rd->err = BATON_EMALFORMED;
        return;
    }
    if (rd_bytes(rd, 8 * (size_t)n, &p) != 0) return;
    c->n_keep = n;
    c->keep = p;
}

int cmd_reader_next(struct cmd_reader *r, struct cmd *c)
{
    struct rd *rd = &r->rd;
    const struct cmd_row *t;
    int keep;

    if (rd->err) return BATON_EMALFORMED;
    if (r->left == 0) {
        if (rd_left(rd) == 0) return 0;
        rd->err = BATON_EMALFORMED; /* trailing bytes */
        return BATON_EMALFORMED;
    }
    memset(c, 0, sizeof *c);
    rd_u8(rd, &c->type);
    keep = (c->type & CMD_KEEP_FLAG) != 0;
    t = cmd_lookup(c->type & ~CMD_KEEP_FLAG);
    if (t == NULL || (keep && !may_keep(t))) rd->err = BATON_EMALFORMED;
    rd_u64(rd, &c->session);
    rd_u64(rd, &c->seq);
    rd_u64(rd, &c->ack_below);
    rd_u32(rd, &c->ttl_ms);
    rd_i64(rd, &c->wait_ms);
    rd_u64(rd, &c->fence);
    rd_u64(rd, &c->waiter);
    rd_i32(rd, &c->lock_delay_ms);
    if (rd->err == 0) rd_str(rd, t->name_max, &c->name, &c->name_len);
    if (rd->err == 0 && t->tail == CMD_TAIL_OWNER) read_owner(rd, c);
    if (rd->err == 0 && t->tail == CMD_TAIL_MODES) read_modes(rd, c);
    if (rd->err == 0 && t->tail == CMD_TAIL_MANY) read_more(rd, c);
    if (rd->err == 0 && t->tail == CMD_TAIL_EXT) read_ext(rd, c);
    if (rd->err == 0 && t->tail == CMD_TAIL_VALUE) read_value(rd, c);
    if (rd->err == 0 && keep) read_keep(rd, c);
    if (rd->err) {
        r->left = 0;
        memset(c, 0, sizeof *c);
        return BATON_EMALFORMED;
    }
    c->type = t->is; /* an encoding-only row's command */
    if (c->name_len == 0) c->name = NULL;
    if (c->owner_len == 0) c->owner = NULL;
    r->left--;
    return 1;
}

int cmd_batch_why(const void *data, size_t len, char *why, size_t size)
{
    struct cmd_reader r;
    struct cmd cmd;
    const uint8_t *at;
    uint32_t count, i = 0;
    int rv;

    if (size > 0) why[0] = '\0';
    if (len == 0 || data == NULL) {
        snprintf(why, size, "a batch of %zu bytes has no header", len);
        return BATON_EMALFORMED;
    }
    if (cmd_reader_init(&r, data, len, &count) != 0) {
        if (*(const uint8_t *)data != CMD_FORMAT)
            snprintf(why, size, "batch format %u, this binary reads format %u only",
                     *(const uint8_t *)data, CMD_FORMAT);
        else
            snprintf(why, size, "a batch header that does not fit its %zu bytes", len);
        return BATON_EMALFORMED;
    }
    for (;;) {
        at = r.rd.p;
        rv = cmd_reader_next(&r, &cmd);
        if (rv != 1) break;
        i++;
    }
    if (rv == 0) return 0;
    if (i == count)
        snprintf(why, size, "%zu bytes follow the batch's %u commands", (size_t)(r.rd.end - at),
                 count);
    else if (at >= r.rd.end)
        snprintf(why, size, "the batch ends after %u of the %u commands it announces", i, count);
    else if (cmd_lookup(*at & ~CMD_KEEP_FLAG) == NULL)
        snprintf(why, size,
                 "command %u of %u has type byte %u, unknown to this binary (feature level %d): "
                 "a binary of a later feature level wrote it",
                 i + 1, count, *at & ~CMD_KEEP_FLAG, CMD_LEVEL);
    else
        snprintf(why, size, "command %u of %u (type byte %u, %s) is cut short or has bad fields",
                 i + 1, count, *at, cmd_type_name(*at & ~CMD_KEEP_FLAG));
    return BATON_EMALFORMED;
}

void effects_init(struct effects *e)
{
    memset(e, 0, sizeof *e);
}

void effects_reset(struct effects *e)
{
    e->n_results = 0;
    e->n_fx = 0;
}

void effects_free(struct effects *e)
{
    if (e == NULL) return;
    free(e->results);
    free(e->fx);
    effects_init(e);
}

/* Make room for one more element of size `size` in *arr (n used, *cap
 * allocated). 0 or BATON_ENOMEM, with the array unchanged on failure. */
static int grow(void **arr, size_t n, size_t *cap, size_t size)
{
    size_t ncap;
    void *p;

    if (n < *cap) return 0;
    ncap = *cap ? *cap * 2 : 16;
    if (ncap > SIZE_MAX / size) return BATON_ENOMEM;
    p = realloc(*arr, ncap * size);
    if (p == NULL) return BATON_ENOMEM;
    *arr = p;
    *cap = ncap;
    return 0;
}

int effects_add_result(struct effects *e, const struct cmd_result *r)
{
    void *arr = e->results;
    int rv = grow(&arr, e->n_results, &e->cap_results, sizeof *e->results);

    e->results = arr;
    if (rv != 0) return rv;
    e->results[e->n_results++] = *r;
    return 0;
}

int effects_add_fx(struct effects *e, const struct effect *fx)
{
    void *arr = e->fx;
    int rv = grow(&arr, e->n_fx, &e->cap_fx, sizeof *e->fx);

    e->fx = arr;
    if (rv != 0) return rv;
    e->fx[e->n_fx] = *fx;
    e->fx[e->n_fx++].cmd = (uint32_t)e->n_results;
    return 0;
}

const char *cmd_type_name(int type)
{
    const struct cmd_row *t = cmd_lookup(type);

    return t != NULL ? t->name : "?";
}
