/*
 * buf.h -- a growable byte buffer and little-endian readers/writers.
 *
 * Used by the wire codec (proto/msg.c), the command codec (storage/cmd.c)
 * and the snapshot format. No I/O.
 */
#ifndef BATON_PROTO_BUF_H
#define BATON_PROTO_BUF_H

#include <stddef.h>
#include <stdint.h>

/* A growable byte buffer. Zero-initialise it (struct buf b = {0}) or call
 * buf_init; release with buf_free. `data` is owned by the buffer. */
struct buf {
    uint8_t *data;
    size_t len;
    size_t cap;
};

void buf_init(struct buf *b);
void buf_free(struct buf *b);       /* NULL-safe; leaves b empty */
void buf_reset(struct buf *b);      /* len = 0, keeps memory */
/* Make room for n more bytes. 0 or BATON_ENOMEM. */
int buf_reserve(struct buf *b, size_t n);
/* Appenders return 0 or BATON_ENOMEM (the buffer is unchanged on error). */
int buf_put(struct buf *b, const void *p, size_t n);
int buf_put_u8(struct buf *b, uint8_t v);
int buf_put_u16(struct buf *b, uint16_t v);
int buf_put_u32(struct buf *b, uint32_t v);
int buf_put_u64(struct buf *b, uint64_t v);
int buf_put_i32(struct buf *b, int32_t v);
int buf_put_i64(struct buf *b, int64_t v);
/* u16 length followed by the bytes. BATON_ETOOBIG if n > 65535. */
int buf_put_str(struct buf *b, const char *s, size_t n);
/* Drop the first n bytes (n <= len). */
void buf_consume(struct buf *b, size_t n);

/* Little-endian stores/loads on raw memory; big-endian u64 is used in LMDB
 * keys so that byte order is numeric order. Inline: the codecs and the
 * store call them for every field of every command. */
static inline void le_put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void le_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static inline void le_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint16_t le_get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t le_get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static inline uint64_t le_get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static inline void be_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * (7 - i)));
}

static inline uint64_t be_get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return v;
}

/* A bounds-checked reader over borrowed memory. Every get returns 0, or
 * BATON_EMALFORMED when fewer bytes remain than asked for; after the first
 * failure the reader stays failed (r->err != 0) and every later get fails. */
struct rd {
    const uint8_t *p;
    const uint8_t *end;
    int err;
};

void rd_init(struct rd *r, const void *data, size_t len);
size_t rd_left(const struct rd *r);
int rd_u8(struct rd *r, uint8_t *v);
int rd_u16(struct rd *r, uint16_t *v);
int rd_u32(struct rd *r, uint32_t *v);
int rd_u64(struct rd *r, uint64_t *v);
int rd_i32(struct rd *r, int32_t *v);
int rd_i64(struct rd *r, int64_t *v);
/* Borrow n bytes: *p points into the reader's memory. */
int rd_bytes(struct rd *r, size_t n, const uint8_t **p);
/* A u16-length string; *s points into the reader's memory (not
 * NUL-terminated). Fails with BATON_EMALFORMED if its length > max. */
int rd_str(struct rd *r, size_t max, const char **s, uint16_t *n);

#endif /* BATON_PROTO_BUF_H */
