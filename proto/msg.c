/*
 * msg.c -- the wire codec: framing, decoding and encoding of baton's
 * messages, driven by the table of proto/msg_table.h. See msg.h for the
 * frame layout and what every message means.
 *
 * Each row of the table becomes a field list (an array of struct field,
 * ended by FK_END) that says where each wire field lives in the body
 * struct; one decoder and one encoder walk those lists, so a message has
 * no code of its own here.
 *
 * The decoder reads through a struct rd, whose error is sticky: a body is
 * read field by field and checked once at the end, so a short frame simply
 * leaves the reader failed and nothing past the frame is ever touched.
 * Strings are borrowed from the frame; only LIST fields allocate, and only
 * after their count has been checked against its limit and against the
 * bytes that are left. The encoder mirrors the decoder with a small
 * writer whose error is sticky too, and it rolls `out` back to its starting
 * length when anything fails, so a refused message leaves no partial frame.
 *
 * Both directions enforce the same rules, so a frame that decodes also
 * re-encodes to exactly the same bytes (the encoding is canonical).
 */
#include "proto/msg.h"

#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"

/* ---- the field lists, from proto/msg_table.h ------------------------------ */

enum field_kind { FK_END = 0, FK_U8, FK_U32, FK_U64, FK_I32, FK_I64, FK_I32_MIN, FK_STR, FK_LOCK, FK_LIST };

/* One wire field of a body (or of a list item). */
struct field {
    uint8_t kind;           /* enum field_kind */
    uint32_t off;           /* where the member is in the body; LIST: its count */
    uint32_t off_items;     /* LIST: where the pointer to the items is */
    int64_t arg;            /* STR, LOCK, LIST: the most bytes or items; I32_MIN: the least value */
    size_t item_size;       /* LIST: sizeof one item */
    const struct field *(*item)(void); /* LIST: the item's fields */
};

/* The smallest wire size of each kind: a string may be empty, a lock name
 * has at least one byte, a list at least its count. */
static const size_t min_wire[] = {
    [FK_U8] = 1, [FK_U32] = 4, [FK_U64] = 8, [FK_I32] = 4, [FK_I64] = 8,
    [FK_I32_MIN] = 4, [FK_STR] = 2, [FK_LOCK] = 3, [FK_LIST] = 4,
};

/* The row macros of proto/msg_table.h, as initialisers of struct field.
 * T is the body (or item) type, a typedef in each generated function. */
#define U8(m) {FK_U8, offsetof(T, m), 0, 0, 0, NULL},
#define U32(m) {FK_U32, offsetof(T, m), 0, 0, 0, NULL},
#define U64(m) {FK_U64, offsetof(T, m), 0, 0, 0, NULL},
#define I32(m) {FK_I32, offsetof(T, m), 0, 0, 0, NULL},
#define I64(m) {FK_I64, offsetof(T, m), 0, 0, 0, NULL},
#define I32_MIN(m, min) {FK_I32_MIN, offsetof(T, m), 0, (min), 0, NULL},
#define STR(m, max) {FK_STR, offsetof(T, m), 0, (max), 0, NULL},
#define LOCK(m) {FK_LOCK, offsetof(T, m), 0, BATON_MAX_NAME, 0, NULL},
#define LIST(n, v, max, it) \
    {FK_LIST, offsetof(T, n), offsetof(T, v), (max), sizeof(struct msg_##it), item_fields_##it},

/* item_fields_<item>(): the fields of one list item. */
#define X(it, flds)                                       \
    static const struct field *item_fields_##it(void)    \
    {                                                     \
        typedef struct msg_##it T;                        \
        static const struct field f[] = {flds{FK_END}};   \
        return f;                                         \
    }
BATON_MSG_ITEMS(X)
#undef X

/* fields_<NAME>(): the body of message NAME on the wire. */
#define X(name, wire, dir, leader, role, session, locks, body, flds) \
    static const struct field *fields_##name(void)       \
    {                                                     \
        typedef struct msg_##body T;                      \
        static const struct field f[] = {flds{FK_END}};   \
        (void)sizeof(T);                                  \
        return f;                                         \
    }
BATON_MESSAGES(X)
#undef X

#undef U8
#undef U32
#undef U64
#undef I32
#undef I64
#undef I32_MIN
#undef STR
#undef LOCK
#undef LIST

/* scope_<NAME>(m, s): what msg_scope() reads of message NAME, from the
 * session and locks columns. A column value these macros do not name does
 * not compile, and a member of the wrong type does not either. */
#define SCOPE_SESSION_NONE
#define SCOPE_SESSION_SESSION(m) s->has_session = true, s->session = b->m;
#define SCOPE_LOCKS_NONE
#define SCOPE_LOCKS_ONE(m) s->locks = MSG_LOCKS_NAMES, s->name = &b->m;
#define SCOPE_LOCKS_MANY(m, n, v) \
    s->locks = MSG_LOCKS_NAMES, s->name = &b->m, s->n_more = b->n, s->more = b->v;
#define SCOPE_LOCKS_PREFIX(m) s->locks = MSG_LOCKS_PREFIX, s->name = &b->m;
#define SCOPE_LOCKS_GIVE_BACK(m) s->locks = MSG_LOCKS_GIVE_BACK, s->name = &b->m;
#define X(name, wire, dir, leader, role, session, locks, body, flds)  \
    static void scope_##name(const struct msg *msg, struct msg_scope *s) \
    {                                                                  \
        const struct msg_##body *b = &msg->u.body;                     \
        (void)b;                                                       \
        (void)s;                                                       \
        SCOPE_SESSION_##session SCOPE_LOCKS_##locks                    \
    }
BATON_MESSAGES(X)
#undef X
#undef SCOPE_SESSION_NONE
#undef SCOPE_SESSION_SESSION
#undef SCOPE_LOCKS_NONE
#undef SCOPE_LOCKS_ONE
#undef SCOPE_LOCKS_MANY
#undef SCOPE_LOCKS_PREFIX
#undef SCOPE_LOCKS_GIVE_BACK

/* A row of the table: what msg_info() returns, the body's fields, and
 * what access control reads of it. */
struct msg_desc {
    struct msg_info info;
    const struct field *(*fields)(void);
    void (*scope)(const struct msg *m, struct msg_scope *s);
};

static const struct msg_desc descs[MSG_TYPE_MAX_] = {
#define X(name, wire, dir, leader, role, session, locks, body, flds) \
    [wire] = {{#name, MSG_##dir, leader, MSG_ROLE_##role}, fields_##name, scope_##name},
    BATON_MESSAGES(X)
#undef X
};

static const struct msg_desc *desc_of(int type)
{
    if (type <= 0 || type >= MSG_TYPE_MAX_ || descs[type].fields == NULL) return NULL;
    return &descs[type];
}

const struct msg_info *msg_info(int type)
{
    const struct msg_desc *d = desc_of(type);
    return d ? &d->info : NULL;
}

bool msg_scope(const struct msg *m, struct msg_scope *s)
{
    const struct msg_desc *d = desc_of(m->type);

    memset(s, 0, sizeof *s);
    if (d == NULL) return false;
    d->scope(m, s);
    return true;
}

const char *msg_type_name(int type)
{
    const struct msg_desc *d = desc_of(type);
    return d ? d->info.name : "?";
}

/* The least number of bytes the fields from f to the end take. */
static size_t fields_min_wire(const struct field *f)
{
    size_t n = 0;

    for (; f->kind != FK_END; f++) n += min_wire[f->kind];
    return n;
}

/* A LIST member's count and items pointer, by offset. The items pointer is
 * copied with memcpy: its declared type differs per list. */
static uint32_t *list_count(uint8_t *body, const struct field *f)
{
    return (uint32_t *)(void *)(body + f->off);
}

static void *list_items(const uint8_t *body, const struct field *f)
{
    void *p;

    memcpy(&p, body + f->off_items, sizeof p);
    return p;
}

static void list_set_items(uint8_t *body, const struct field *f, void *p)
{
    memcpy(body + f->off_items, &p, sizeof p);
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

static int decode_fields(struct rd *r, const struct field *f, uint8_t *body);

/* Decode a LIST field: the count, checked against its limit and against
 * what the rest of the frame (the items, then the fields after the list)
 * could hold, then the items into a new array. */
static int decode_list(struct rd *r, const struct field *f, uint8_t *body)
{
    const struct field *item = f->item();
    uint32_t n = get_count(r, (uint32_t)f->arg, fields_min_wire(item), fields_min_wire(f + 1));
    int err = 0;
    uint8_t *items;

    if (r->err != 0) return r->err;
    items = alloc_items(n, f->item_size, &err);
    if (err != 0) return err;
    *list_count(body, f) = n;
    list_set_items(body, f, items);
    for (uint32_t i = 0; i < n && r->err == 0; i++) {
        err = decode_fields(r, item, items + (size_t)i * f->item_size);
        if (err != 0) return err;
    }
    return r->err;
}

/*
 * Decode the fields f into the body (or item) at `body`. Returns 0,
 * BATON_EMALFORMED or BATON_ENOMEM; on error the caller frees whatever
 * was allocated. The caller also checks that no bytes are left over.
 */
static int decode_fields(struct rd *r, const struct field *f, uint8_t *body)
{
    for (; f->kind != FK_END && r->err == 0; f++) {
        void *p = body + f->off;
        int err;

        switch (f->kind) {
        case FK_U8:
            rd_u8(r, p);
            break;
        case FK_U32:
            rd_u32(r, p);
            break;
        case FK_U64:
            rd_u64(r, p);
            break;
        case FK_I32:
            rd_i32(r, p);
            break;
        case FK_I64:
            rd_i64(r, p);
            break;
        case FK_I32_MIN:
            rd_i32(r, p);
            if (r->err == 0 && *(int32_t *)p < f->arg) rd_fail(r);
            break;
        case FK_STR:
            get_str(r, (size_t)f->arg, p);
            break;
        case FK_LOCK:
            get_lock(r, p);
            break;
        case FK_LIST:
            err = decode_list(r, f, body);
            if (err != 0) return err;
            break;
        default:
            rd_fail(r);
            break;
        }
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
    if (desc_of(m->type) == NULL) return BATON_EMALFORMED;
    rv = decode_fields(&r, desc_of(m->type)->fields(), (uint8_t *)&m->u);
    if (rv == 0 && rd_left(&r) != 0) rv = BATON_EMALFORMED;
    if (rv != 0) msg_free(m);
    return rv;
}

void msg_free(struct msg *m)
{
    const struct msg_desc *d;

    if (m == NULL || (d = desc_of(m->type)) == NULL) return;
    for (const struct field *f = d->fields(); f->kind != FK_END; f++) {
        if (f->kind != FK_LIST) continue;
        free(list_items((uint8_t *)&m->u, f));
        list_set_items((uint8_t *)&m->u, f, NULL);
        *list_count((uint8_t *)&m->u, f) = 0;
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

/* Append the fields f of the body (or item) at `body`: the exact mirror
 * of decode_fields, with the same limits, so that the encoder never writes
 * a frame the peer would refuse. */
static void encode_fields(struct wr *w, const struct field *f, const uint8_t *body)
{
    for (; f->kind != FK_END && w->err == 0; f++) {
        const void *p = body + f->off;

        switch (f->kind) {
        case FK_U8:
            put_u8(w, *(const uint8_t *)p);
            break;
        case FK_U32:
            put_u32(w, *(const uint32_t *)p);
            break;
        case FK_U64:
            put_u64(w, *(const uint64_t *)p);
            break;
        case FK_I32:
            put_i32(w, *(const int32_t *)p);
            break;
        case FK_I64:
            put_i64(w, *(const int64_t *)p);
            break;
        case FK_I32_MIN:
            if (*(const int32_t *)p < f->arg) w->err = BATON_EINVAL;
            put_i32(w, *(const int32_t *)p);
            break;
        case FK_STR:
            put_str(w, p, (size_t)f->arg);
            break;
        case FK_LOCK:
            put_lock(w, p);
            break;
        case FK_LIST: {
            uint32_t n = *(const uint32_t *)p;
            const uint8_t *items = list_items(body, f);
            const struct field *item = f->item();

            put_count(w, n, (uint32_t)f->arg, items);
            for (uint32_t i = 0; i < n && w->err == 0; i++)
                encode_fields(w, item, items + (size_t)i * f->item_size);
            break;
        }
        default:
            w->err = BATON_EINVAL;
            break;
        }
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
    if (desc_of(m->type) == NULL) return BATON_EINVAL;
    start = out->len;
    w.b = out;
    w.err = 0;
    put_u32(&w, 0); /* the length, patched below */
    put_u16(&w, m->type);
    put_u64(&w, m->req_id);
    encode_fields(&w, desc_of(m->type)->fields(), (const uint8_t *)&m->u);
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
