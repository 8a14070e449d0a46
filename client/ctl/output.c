/*
 * output.c -- how batonctl prints: column-aligned tables for people, and
 * JSON for scripts. Lock names are arbitrary bytes (anything but NUL), so
 * both printers escape what would break a terminal or a JSON parser.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl/ctl.h"
#include "proto/utf8.h"

size_t ctl_sanitize(FILE *f, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, cols = 0;

    while (i < n) {
        size_t len = proto_utf8_len(p + i, n - i);
        if (len == 1 && (p[i] < 0x20 || p[i] == 0x7F)) len = 0;
        if (len == 0) {
            fprintf(f, "\\x%02x", p[i]);
            cols += 4;
            i++;
        } else {
            fwrite(p + i, 1, len, f);
            cols++;
            i += len;
        }
    }
    return cols;
}

void json_write_string(FILE *f, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;

    fputc('"', f);
    while (i < n) {
        unsigned char c = p[i];
        size_t len;

        switch (c) {
        case '"': fputs("\\\"", f); i++; continue;
        case '\\': fputs("\\\\", f); i++; continue;
        case '\n': fputs("\\n", f); i++; continue;
        case '\r': fputs("\\r", f); i++; continue;
        case '\t': fputs("\\t", f); i++; continue;
        case '\b': fputs("\\b", f); i++; continue;
        case '\f': fputs("\\f", f); i++; continue;
        default: break;
        }
        if (c < 0x20 || c == 0x7F) {
            fprintf(f, "\\u%04x", c);
            i++;
            continue;
        }
        len = proto_utf8_len(p + i, n - i);
        if (len == 0) {
            fputs("\\ufffd", f);
            i++;
        } else {
            fwrite(p + i, 1, len, f);
            i += len;
        }
    }
    fputc('"', f);
}

/* ---- tables ------------------------------------------------------------ */

void table_init(struct table *t, int ncols)
{
    t->ncols = ncols;
    t->cells = NULL;
    t->n = 0;
    t->cap = 0;
}

/* Take ownership of one malloc'd cell (NULL means out of memory: the cell
 * is then printed as "?"). */
static void table_push(struct table *t, char *cell)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        char **cells = realloc(t->cells, cap * sizeof *cells);
        if (cells == NULL) {
            free(cell);
            return;
        }
        t->cells = cells;
        t->cap = cap;
    }
    t->cells[t->n++] = cell;
}

void table_cell(struct table *t, const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;

    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    table_push(t, s);
}

void table_cell_bytes(struct table *t, const char *s, size_t n)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);

    if (f == NULL) {
        table_push(t, NULL);
        return;
    }
    ctl_sanitize(f, s, n);
    if (fclose(f) != 0) {
        free(out);
        out = NULL;
    }
    table_push(t, out);
}

/* Display width of an already sanitized cell: one column per UTF-8
 * character (continuation bytes do not count). */
static size_t cell_width(const char *s)
{
    size_t w = 0;
    if (s == NULL) return 1;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) w++;
    return w;
}

void table_print(const struct table *t, FILE *f)
{
    size_t *width = calloc((size_t)t->ncols, sizeof *width);
    size_t i;

    if (width == NULL) return;
    for (i = 0; i < t->n; i++) {
        size_t w = cell_width(t->cells[i]), c = i % (size_t)t->ncols;
        if (w > width[c]) width[c] = w;
    }
    for (i = 0; i < t->n; i++) {
        size_t c = i % (size_t)t->ncols;
        const char *s = t->cells[i] ? t->cells[i] : "?";
        int last = c == (size_t)t->ncols - 1 || i == t->n - 1;

        fputs(s, f);
        if (last) {
            fputc('\n', f);
        } else {
            for (size_t pad = cell_width(s); pad < width[c] + 2; pad++) fputc(' ', f);
        }
    }
    free(width);
}

void table_free(struct table *t)
{
    if (t == NULL) return;
    for (size_t i = 0; i < t->n; i++) free(t->cells[i]);
    free(t->cells);
    t->cells = NULL;
    t->n = t->cap = 0;
}

/* ---- JSON writer ------------------------------------------------------- */

void jw_init(struct jw *w, FILE *f)
{
    w->f = f;
    w->depth = 0;
    memset(w->has_items, 0, sizeof w->has_items);
}

/* Write the separator and the key (if any) that precede a value. */
static void jw_prefix(struct jw *w, const char *key)
{
    if (w->depth > 0 && w->depth <= JW_MAX_DEPTH) {
        if (w->has_items[w->depth - 1]) fputc(',', w->f);
        w->has_items[w->depth - 1] = 1;
    }
    if (key != NULL) {
        json_write_string(w->f, key, strlen(key));
        fputc(':', w->f);
    }
}

static void jw_open(struct jw *w, const char *key, char c)
{
    jw_prefix(w, key);
    fputc(c, w->f);
    if (w->depth < JW_MAX_DEPTH) w->has_items[w->depth] = 0;
    w->depth++;
}

static void jw_close(struct jw *w, char c)
{
    if (w->depth > 0) w->depth--;
    fputc(c, w->f);
}

void jw_begin_object(struct jw *w, const char *key) { jw_open(w, key, '{'); }
void jw_end_object(struct jw *w) { jw_close(w, '}'); }
void jw_begin_array(struct jw *w, const char *key) { jw_open(w, key, '['); }
void jw_end_array(struct jw *w) { jw_close(w, ']'); }

void jw_string(struct jw *w, const char *key, const char *s, size_t n)
{
    jw_prefix(w, key);
    json_write_string(w->f, s, n);
}

void jw_cstring(struct jw *w, const char *key, const char *s)
{
    if (s == NULL) {
        jw_null(w, key);
        return;
    }
    jw_string(w, key, s, strlen(s));
}

void jw_u64(struct jw *w, const char *key, uint64_t v)
{
    jw_prefix(w, key);
    fprintf(w->f, "%llu", (unsigned long long)v);
}

void jw_f64(struct jw *w, const char *key, double v, int decimals)
{
    jw_prefix(w, key);
    if (isfinite(v))
        fprintf(w->f, "%.*f", decimals, v);
    else
        fputs("null", w->f);
}

void jw_i64(struct jw *w, const char *key, int64_t v)
{
    jw_prefix(w, key);
    fprintf(w->f, "%lld", (long long)v);
}

void jw_bool(struct jw *w, const char *key, int v)
{
    jw_prefix(w, key);
    fputs(v ? "true" : "false", w->f);
}

void jw_null(struct jw *w, const char *key)
{
    jw_prefix(w, key);
    fputs("null", w->f);
}

int ctl_utf8_valid(const void *s, size_t n)
{
    const unsigned char *p = s;

    for (size_t i = 0, len; i < n; i += len)
        if ((len = proto_utf8_len(p + i, n - i)) == 0) return 0;
    return 1;
}

/* Write p[0..n) to f as RFC 4648 base64, '=' padded. */
static void write_base64(FILE *f, const unsigned char *p, size_t n)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n) v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < n) v |= p[i + 2];
        fputc(a[v >> 18], f);
        fputc(a[(v >> 12) & 63], f);
        fputc(i + 1 < n ? a[(v >> 6) & 63] : '=', f);
        fputc(i + 2 < n ? a[v & 63] : '=', f);
    }
}

void jw_value(struct jw *w, const void *v, size_t n)
{
    if (n == 0) {
        jw_null(w, "value");
    } else if (ctl_utf8_valid(v, n)) {
        jw_string(w, "value", v, n);
    } else {
        jw_prefix(w, "value_base64");
        fputc('"', w->f);
        write_base64(w->f, v, n);
        fputc('"', w->f);
    }
}

void jw_finish(struct jw *w)
{
    fputc('\n', w->f);
}
