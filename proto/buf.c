/*
 * buf.c -- growable byte buffer, little/big-endian helpers and a
 * bounds-checked reader. See buf.h.
 */
#include "proto/buf.h"

#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"

void buf_init(struct buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void buf_free(struct buf *b)
{
    if (b == NULL) return;
    free(b->data);
    buf_init(b);
}

void buf_reset(struct buf *b)
{
    b->len = 0;
}

int buf_reserve(struct buf *b, size_t n)
{
    size_t cap;
    uint8_t *p;

    if (n <= b->cap - b->len) return 0;
    if (n > SIZE_MAX / 2 - b->len) return BATON_ENOMEM;
    cap = b->cap ? b->cap : 256;
    while (cap - b->len < n) cap *= 2;
    p = realloc(b->data, cap);
    if (p == NULL) return BATON_ENOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

int buf_put(struct buf *b, const void *p, size_t n)
{
    int rv = buf_reserve(b, n);
    if (rv != 0) return rv;
    if (n > 0) memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

int buf_put_u8(struct buf *b, uint8_t v)
{
    return buf_put(b, &v, 1);
}

int buf_put_u16(struct buf *b, uint16_t v)
{
    uint8_t t[2];
    le_put_u16(t, v);
    return buf_put(b, t, sizeof t);
}

int buf_put_u32(struct buf *b, uint32_t v)
{
    uint8_t t[4];
    le_put_u32(t, v);
    return buf_put(b, t, sizeof t);
}

int buf_put_u64(struct buf *b, uint64_t v)
{
    uint8_t t[8];
    le_put_u64(t, v);
    return buf_put(b, t, sizeof t);
}

int buf_put_i32(struct buf *b, int32_t v)
{
    return buf_put_u32(b, (uint32_t)v);
}

int buf_put_i64(struct buf *b, int64_t v)
{
    return buf_put_u64(b, (uint64_t)v);
}

int buf_put_str(struct buf *b, const char *s, size_t n)
{
    int rv;

    if (n > UINT16_MAX) return BATON_ETOOBIG;
    rv = buf_reserve(b, 2 + n);
    if (rv != 0) return rv;
    buf_put_u16(b, (uint16_t)n);
    return buf_put(b, s, n);
}

void buf_consume(struct buf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}

void rd_init(struct rd *r, const void *data, size_t len)
{
    r->p = data;
    r->end = r->p + len;
    r->err = 0;
}

size_t rd_left(const struct rd *r)
{
    return r->err ? 0 : (size_t)(r->end - r->p);
}

int rd_bytes(struct rd *r, size_t n, const uint8_t **p)
{
    if (r->err || (size_t)(r->end - r->p) < n) {
        r->err = BATON_EMALFORMED;
        return r->err;
    }
    *p = r->p;
    r->p += n;
    return 0;
}

int rd_u8(struct rd *r, uint8_t *v)
{
    const uint8_t *p;
    int rv = rd_bytes(r, 1, &p);
    if (rv == 0) *v = p[0];
    return rv;
}

int rd_u16(struct rd *r, uint16_t *v)
{
    const uint8_t *p;
    int rv = rd_bytes(r, 2, &p);
    if (rv == 0) *v = le_get_u16(p);
    return rv;
}

int rd_u32(struct rd *r, uint32_t *v)
{
    const uint8_t *p;
    int rv = rd_bytes(r, 4, &p);
    if (rv == 0) *v = le_get_u32(p);
    return rv;
}

int rd_u64(struct rd *r, uint64_t *v)
{
    const uint8_t *p;
    int rv = rd_bytes(r, 8, &p);
    if (rv == 0) *v = le_get_u64(p);
    return rv;
}

int rd_i32(struct rd *r, int32_t *v)
{
    uint32_t u;
    int rv = rd_u32(r, &u);
    if (rv == 0) *v = (int32_t)u;
    return rv;
}

int rd_i64(struct rd *r, int64_t *v)
{
    uint64_t u;
    int rv = rd_u64(r, &u);
    if (rv == 0) *v = (int64_t)u;
    return rv;
}

int rd_str(struct rd *r, size_t max, const char **s, uint16_t *n)
{
    uint16_t len;
    const uint8_t *p;

    if (rd_u16(r, &len) != 0) return r->err;
    if (len > max) {
        r->err = BATON_EMALFORMED;
        return r->err;
    }
    if (rd_bytes(r, len, &p) != 0) return r->err;
    *s = (const char *)p;
    *n = len;
    return 0;
}
