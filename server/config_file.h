/*
 * config_file.h -- `batond --config FILE`: the INI file (libinih) turned
 * into command-line arguments.
 *
 * The file has one section, [batond]; each key is a long flag's name
 * without the dashes (`_` may stand for `-`), e.g. `election-timeout = 400`.
 * A flag that takes no argument (join, tls12) takes a boolean:
 * true/yes/on/1 gives the flag, false/no/off/0 leaves it out. A value may
 * go on over indented lines; the pieces are joined without a separator
 * (for a long --cluster).
 *
 * The file's pairs become "--key value" arguments placed before the
 * command line's, and batond's one getopt_long parse (server/config.c)
 * reads them all: every long option is a key with no list to keep, each
 * value is checked by its flag's own parser, and the command line wins
 * because the later value of a flag wins.
 */
#ifndef BATON_SERVER_CONFIG_FILE_H
#define BATON_SERVER_CONFIG_FILE_H

#include <getopt.h>

/* argv with the file's arguments spliced in. */
struct config_args {
    int argc;
    char **argv;        /* argv[0], the file's "--key" "value" pairs, then
                           the command line's arguments but --config;
                           NULL-terminated. Owned; the strings of the file's
                           pairs too (struct srv_config points into them) */
    const char *file;   /* the --config FILE (points into the original argv), or NULL */
    int *line;          /* line[i]: the file's line argv[i] came from; 0: the command line */
    int n_file;         /* how many of argv[1..] came from the file */
};

/*
 * Look for `--config FILE` or `--config=FILE` in argv (before a "--"), and
 * read FILE against opts (getopt_long's table; "config" and "help" are not
 * keys) into *out. Without --config, *out is argv copied. Returns 0, or -1
 * after printing to stderr an error that names the file and line (an
 * unknown key, a key outside [batond], a bad boolean, a line too long, a
 * file that cannot be read); *out then holds nothing to free.
 */
int config_file_expand(int argc, char **argv, const struct option *opts, struct config_args *out);

/* Free what config_file_expand allocated (nothing if out->argv is NULL). */
void config_args_free(struct config_args *a);

/* Parse a boolean the way a config file writes one: 1 (true), 0 (false),
 * -1 (not a boolean). */
int config_bool_parse(const char *s);

#endif
