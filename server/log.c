/*
 * log.c -- one line per event: "2026-11-22T03:40:01.123Z node=1 INFO text".
 */
#include "server/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum log_level min_level = LOG_INFO;
static unsigned node_id;

void log_set_level(enum log_level l)
{
    min_level = l;
}

void log_set_node(unsigned id)
{
    node_id = id;
}

int log_level_parse(const char *s)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

void log_msg(enum log_level l, const char *fmt, ...)
{
    static const char *tags[] = {"DEBUG", "INFO", "WARN", "ERROR"};
    char line[1024];
    struct timespec ts;
    struct tm tm;
    va_list ap;
    int n;

    if (l < min_level) return;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ node=%u %s ",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 ts.tv_nsec / 1000000, node_id, tags[l]);
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}
