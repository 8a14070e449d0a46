/*
 * config_file.c -- `batond --config FILE` (config_file.h): libinih reads
 * the file; each pair becomes "--key value" arguments ahead of the command
 * line's.
 *
 * Line numbers: libinih of Debian is built without INI_HANDLER_LINENO, so
 * the pair handler is not told its line. It reads through read_line,
 * which counts the lines it hands over; the handler runs for a line before
 * the next one is read, so the count is that pair's line.
 */
#include "server/config_file.h"

#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/xmalloc.h"

#define SECTION "batond"

struct reader {
    FILE *f;
    char *buf;
    size_t cap;
    int line;             /* lines handed to inih so far */
    int too_long;         /* the line longer than inih's buffer, or 0 */
    int max;              /* inih's buffer, in bytes (its INI_MAX_LINE) */
    int continuation;     /* the current line starts with a blank */
};

struct expand {
    struct reader *r;
    const struct option *opts;
    struct config_args *out;
    int err_line;         /* the first refused pair's line, 0 if none */
    char err[256];
    const struct option *last;   /* the option of the last pair, for continuations */
};

int config_bool_parse(const char *s)
{
    static const char *yes[] = {"true", "yes", "on", "1"}, *no[] = {"false", "no", "off", "0"};

    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcasecmp(s, yes[i]) == 0) return 1;
        if (strcasecmp(s, no[i]) == 0) return 0;
    }
    return -1;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = xmalloc(n);

    memcpy(p, s, n);
    return p;
}

/* Append one argument that came from `line` of the file (0: the command
 * line's; not copied, it lives in the original argv). */
static void push(struct config_args *a, char *arg, int line)
{
    a->argv = xrealloc(a->argv, sizeof *a->argv * (size_t)(a->argc + 2));
    a->line = xrealloc(a->line, sizeof *a->line * (size_t)(a->argc + 1));
    a->argv[a->argc] = arg;
    a->line[a->argc] = line;
    a->argv[++a->argc] = NULL;
}

static char *read_line(char *str, int num, void *stream)
{
    struct reader *r = stream;
    ssize_t n = getline(&r->buf, &r->cap, r->f);

    if (n < 0) return NULL;
    r->line++;
    r->max = num;
    if (n >= num) {
        r->too_long = r->line;
        return NULL; /* inih sees the end of the file */
    }
    r->continuation = r->buf[0] == ' ' || r->buf[0] == '\t';
    memcpy(str, r->buf, (size_t)n + 1);
    return str;
}

/* The long option called `key`, with '_' read as '-'; NULL if none (or
 * config or help, which are not keys). */
static const struct option *find_key(const struct option *opts, const char *key)
{
    char name[64];
    size_t n = strlen(key);

    if (n >= sizeof name) return NULL;
    for (size_t i = 0; i <= n; i++) name[i] = key[i] == '_' ? '-' : key[i];
    if (strcmp(name, "config") == 0 || strcmp(name, "help") == 0) return NULL;
    for (const struct option *o = opts; o->name != NULL; o++)
        if (strcmp(o->name, name) == 0) return o;
    return NULL;
}

/* A value's continuation line: append it to the pair's value. */
static int append_value(struct expand *e, const char *value)
{
    struct config_args *a = e->out;
    char *v = a->argv[a->argc - 1];
    size_t n = strlen(v), m = strlen(value);

    if (e->last->has_arg == no_argument) {
        snprintf(e->err, sizeof e->err, "'%s' is a boolean: it does not go on over lines",
                 e->last->name);
        return 0;
    }
    v = xrealloc(v, n + m + 1);
    memcpy(v + n, value, m + 1);
    a->argv[a->argc - 1] = v;
    return 1;
}

static int on_pair(void *user, const char *section, const char *name, const char *value)
{
    struct expand *e = user;
    const struct option *o;
    int line = e->r->line, b;
    char *arg;

    if (e->err_line != 0) return 0; /* only the first error is reported */
    e->err_line = line;             /* until the pair is found good */
    if (strcmp(section, SECTION) != 0) {
        snprintf(e->err, sizeof e->err, "key '%.64s' outside the [" SECTION "] section", name);
        return 0;
    }
    if (e->r->continuation && e->last != NULL) {
        if (!append_value(e, value)) return 0;
        e->err_line = 0;
        return 1;
    }
    if ((o = find_key(e->opts, name)) == NULL) {
        snprintf(e->err, sizeof e->err, "unknown key '%.64s' (batond --help lists the flags)",
                 name);
        return 0;
    }
    e->last = o;
    if (o->has_arg == no_argument) {
        if ((b = config_bool_parse(value)) < 0) {
            snprintf(e->err, sizeof e->err,
                     "'%s' takes true/false, yes/no, on/off or 1/0, not '%.64s'", o->name,
                     value);
            return 0;
        }
        if (b) {
            arg = xmalloc(strlen(o->name) + 3);
            sprintf(arg, "--%s", o->name);
            push(e->out, arg, line);
        }
    } else if (o->has_arg == optional_argument) {
        arg = xmalloc(strlen(o->name) + strlen(value) + 4);
        sprintf(arg, "--%s=%s", o->name, value);
        push(e->out, arg, line);
    } else {
        arg = xmalloc(strlen(o->name) + 3);
        sprintf(arg, "--%s", o->name);
        push(e->out, arg, line);
        push(e->out, xstrdup(value), line);
    }
    e->err_line = 0;
    return 1;
}

/* Read the file into e->out. 0, or -1 after the error is printed. */
static int read_file(const char *file, struct expand *e)
{
    struct reader r = {0};
    int rv;

    r.f = fopen(file, "r");
    if (r.f == NULL) {
        fprintf(stderr, "batond: --config %s: %s\n", file, strerror(errno));
        return -1;
    }
    e->r = &r;
    rv = ini_parse_stream(read_line, &r, on_pair, e);
    fclose(r.f);
    free(r.buf);
    if (rv > 0 && (e->err_line == 0 || rv < e->err_line)) {
        fprintf(stderr, "batond: %s:%d: not 'key = value', '[section]' or a comment\n", file, rv);
        return -1;
    }
    if (e->err_line != 0) {
        fprintf(stderr, "batond: %s:%d: %s\n", file, e->err_line, e->err);
        return -1;
    }
    if (r.too_long != 0) {
        fprintf(stderr,
                "batond: %s:%d: line longer than %d bytes (a value may go on over indented "
                "lines)\n",
                file, r.too_long, r.max - 2);
        return -1;
    }
    if (rv != 0) {
        fprintf(stderr, "batond: %s: cannot parse (%d)\n", file, rv);
        return -1;
    }
    return 0;
}

/* Where --config's FILE is in argv: its index, with *inline_ set when it
 * is "--config=FILE"; 0 if not given, -1 (printed) if given twice or
 * without FILE. */
static int find_config(int argc, char **argv, int *inline_)
{
    int at = 0;

    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        int is_eq = strncmp(argv[i], "--config=", 9) == 0;

        if (strcmp(argv[i], "--config") != 0 && !is_eq) continue;
        if (at != 0) {
            fprintf(stderr, "batond: --config given twice\n");
            return -1;
        }
        if (!is_eq && i + 1 == argc) {
            fprintf(stderr, "batond: --config needs a FILE\n");
            return -1;
        }
        at = is_eq ? i : i + 1;
        *inline_ = is_eq;
        if (!is_eq) i++;
    }
    return at;
}

int config_file_expand(int argc, char **argv, const struct option *opts, struct config_args *out)
{
    struct expand e = {.opts = opts, .out = out};
    int inline_ = 0, at;

    memset(out, 0, sizeof *out);
    if ((at = find_config(argc, argv, &inline_)) < 0) return -1;
    push(out, argv[0], 0);
    if (at > 0) {
        out->file = inline_ ? argv[at] + 9 : argv[at];
        if (read_file(out->file, &e) != 0) {
            config_args_free(out);
            return -1;
        }
    }
    out->n_file = out->argc - 1;
    for (int i = 1; i < argc; i++)
        if (at == 0 || (i != at && !(i == at - 1 && !inline_))) push(out, argv[i], 0);
    return 0;
}

void config_args_free(struct config_args *a)
{
    for (int i = 1; i < a->argc; i++)
        if (a->line[i] != 0) free(a->argv[i]);
    free(a->argv);
    free(a->line);
    memset(a, 0, sizeof *a);
}
