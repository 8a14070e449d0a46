/*
 * config_flags.h -- batond's flags as one table (config_flags.c). getopt's
 * long options, `batond --help`, the defaults, the parse loop
 * (server/config.c) and the --config file's keys (server/config_file.c)
 * all come from it; tests/check-flag-docs.sh holds the man page,
 * docs/operations.md and dist/batond.conf.example to it. Adding a flag is
 * one row (and the code that uses its srv_config field).
 */
#ifndef BATON_SERVER_CONFIG_FLAGS_H
#define BATON_SERVER_CONFIG_FLAGS_H

#include <stddef.h>

enum flag_kind {
    FLAG_UINT,    /* unsigned in [min, max] */
    FLAG_INT,     /* int field, a value in [min, max] (the default may be -1: derived) */
    FLAG_BOOL,    /* bool; no argument (true/false in a --config file) */
    FLAG_STR,     /* const char * pointing into argv */
    FLAG_PATH,    /* char[size] copied, at most size - 16 bytes (room for "/raft" etc.) */
    FLAG_ADDR,    /* an address (proto/addr.h): const char *, or char[size] if size > 0 */
    FLAG_ENUM,    /* int from parse(); < 0 refused */
    FLAG_CLUSTER, /* the member list, kept and parsed once every flag is read */
    FLAG_CONFIG,  /* --config FILE: read before the parse (config_file.c) */
    FLAG_HELP,    /* -h, --help */
};

struct flag {
    const char *name;     /* the long option without "--"; the --config key */
    const char *arg;      /* the argument's name in --help ("MS"); NULL: none */
    enum flag_kind kind;
    size_t off;           /* the field in struct srv_config */
    size_t size;          /* FLAG_PATH, FLAG_ADDR: the field's buffer (0: a pointer) */
    long min, max;        /* FLAG_UINT, FLAG_INT: the accepted values */
    long def;             /* the default of a number or an enum */
    const char *shown;    /* the default as --help and the docs write it; NULL: def */
    int (*parse)(const char *); /* FLAG_ENUM */
    const char *err;      /* printed after "batond: " for a refused value ("%s": the
                             value); NULL: "--NAME 'VALUE' is not a positive number" */
    const char *section;  /* starts a heading in --help before this flag; NULL: none */
    const char *help;     /* one paragraph; --help wraps it */
};

/* At most this many rows (getopt's table is a fixed array, config.c). */
#define CONFIG_MAX_FLAGS 63

extern const struct flag config_flags[];
extern const size_t config_n_flags;

/* The default as --help prints it, into buf. */
const char *flag_default_text(const struct flag *f, char *buf, size_t size);

#endif
