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

/* Append msg to out at *n as the body of a JSON string: out must have
 * room for 6 bytes per byte of msg (the longest escape, \u00XX or \ufffd). */
static void json_string(char *out, size_t *n, const char *msg)
{
    const unsigned char *p = (const unsigned char *)msg;
    size_t len_msg = strlen(msg), i = 0, o = *n;

    while (i < len_msg) {
        size_t len = proto_utf8_len(p + i, len_msg - i);

        if (p[i] == '"' || p[i] == '\\') {
            out[o++] = '\\';
            out[o++] = (char)p[i];
        } else if (p[i] == '\n') {
            memcpy(out + o, "\\n", 2);
            o += 2;
        } else if (len == 1 && (p[i] < 0x20 || p[i] == 0x7F)) {
            o += (size_t)sprintf(out + o, "\\u%04x", p[i]);
        } else if (len == 0) {
            memcpy(out + o, "\\ufffd", 6);
            o += 6;
        } else {
            memcpy(out + o, p + i, len);
            o += len;
            i += len;
            continue;
        }
        i++;
    }
    *n = o;
}

/* One JSON log line, built in one buffer (no allocation: the line saying
 * that memory ran out must get through) and written with one call, so
 * that lines of processes sharing a file do not interleave. */
static void log_json(const char *stamp, const char *level, const char *text)
{
    char line[LOG_LINE * 6 + 256];
    int head = snprintf(line, 256, "{\"time\":\"%s\",\"level\":\"%s\",\"node\":%u,\"msg\":\"",
                        stamp, level, node_id);
    size_t n = head < 0 ? 0 : head >= 256 ? 255 : (size_t)head;

    json_string(line, &n, text);
    memcpy(line + n, "\"}\n", 3);
    fwrite(line, 1, n + 3, stderr);
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
    log_json(stamp, names[l], text);
}
