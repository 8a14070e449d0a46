/*
 * log.h -- leveled log lines with a timestamp and the node id, to stderr:
 * text (the default) or one JSON object per line (--log-format json).
 */
#ifndef BATON_SERVER_LOG_H
#define BATON_SERVER_LOG_H

enum log_level { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR };

void log_set_level(enum log_level l);
void log_set_node(unsigned id);
enum log_format { LOG_TEXT = 0, LOG_JSON };
void log_set_format(enum log_format f);
/* Parse "text", "json"; -1 if unknown. */
int log_format_parse(const char *s);
/* Parse "debug", "info", "warn", "error"; -1 if unknown. */
int log_level_parse(const char *s);

void log_msg(enum log_level l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

#endif
