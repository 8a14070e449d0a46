/*
 * log.c -- one line per event, to stderr. Text:
 *     2026-11-22T03:40:01.123Z node=1 INFO text
 * or, with --log-format json, one JSON object per line:
 *     {"time":"2026-11-22T03:40:01.123Z","level":"info","node":1,"msg":"text"}
 * The message is escaped so that any bytes it quotes (a hostile lock name)
 * keep the line valid UTF-8 JSON: ", \ and control characters escaped,
 * bytes of invalid UTF-8 replaced by U+FFFD.
 */
#include "server/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/utf8.h"

#define LOG_LINE 1024

static enum log_level min_level = LOG_INFO;
static enum log_format format = LOG_TEXT;
static unsigned node_id;

void log_set_level(enum log_level l)
{
    min_level = l;
}

void log_set_node(unsigned id)
{
    node_id = id;
}

void log_set_format(enum log_format f)
{
    format = f;
}

int log_level_parse(const char *s)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

int log_format_parse(const char *s)
{
    if (strcmp(s, "text") == 0) return LOG_TEXT;
    if (strcmp(s, "json") == 0) return LOG_JSON;
    return -1;
}

/* Write msg as the body of a JSON string to f. */
static void json_string(FILE *f, const char *msg)
{
    const unsigned char *p = (const unsigned char *)msg;
    size_t n = strlen(msg), i = 0;

    while (i < n) {
        size_t len = proto_utf8_len(p + i, n - i);

        if (p[i] == '"' || p[i] == '\\') {
            fprintf(f, "\\%c", p[i]);
        } else if (p[i] == '\n') {
            fputs("\\n", f);
        } else if (p[i] == '\t') {
            fputs("\\t", f);
        } else if (len == 1 && (p[i] < 0x20 || p[i] == 0x7F)) {
            fprintf(f, "\\u%04x", p[i]);
        } else if (len == 0) {
            fputs("\\ufffd", f);
        } else {
            fwrite(p + i, 1, len, f);
            i += len;
            continue;
        }
        i++;
    }
}

void log_msg(enum log_level l, const char *fmt, ...)
{
    static const char *tags[] = {"DEBUG", "INFO", "WARN", "ERROR"};
    static const char *names[] = {"debug", "info", "warn", "error"};
    char stamp[96], text[LOG_LINE];
    struct timespec ts;
    struct tm tm;
    va_list ap;

    if (l < min_level) return;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (format == LOG_TEXT) {
        fprintf(stderr, "%s node=%u %s %s\n", stamp, node_id, tags[l], text);
        return;
    }
    /* One fprintf per piece, but stderr is unbuffered: build the line in
     * a memory stream and write it with one call, so that lines of
     * several processes sharing a file do not interleave. */
    {
        char *line = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&line, &len);

        if (m == NULL) return;
        fprintf(m, "{\"time\":\"%s\",\"level\":\"%s\",\"node\":%u,\"msg\":\"", stamp, names[l],
                node_id);
        json_string(m, text);
        fputs("\"}\n", m);
        fclose(m);
        fwrite(line, 1, len, stderr);
        free(line);
    }
}
