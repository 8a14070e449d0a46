/*
 * cmd_auth.c -- `batonctl auth hash NAME ROLE [OPTION...]`: a fresh random
 * token for a new principal and the auth-file line that admits it (only
 * the token's SHA-256 is in the line). It talks to no node.
 */
#include <stdio.h>
#include <string.h>

#include "client/ctl/ctl.h"

const char cmd_auth_help[] =
    "usage: batonctl auth hash NAME ROLE [OPTION...] [-o table|json]\n"
    "\n"
    "Makes a new random token (32 bytes from the system's random source, as 64 hex\n"
    "digits) for principal NAME, and prints it with the auth-file line that admits\n"
    "it:\n"
    "\n"
    "  token: 9f2c...e1\n"
    "  NAME ROLE sha256:<SHA-256 of the token, 64 hex digits> [OPTION...]\n"
    "\n"
    "Add the line to the auth file of every node (batond --auth-file) and give the\n"
    "token to the client (batonctl --token or BATON_TOKEN, libbaton's\n"
    "baton_opts.token). The token is shown only this once: the line holds its\n"
    "digest, not the token, so the file can be shared without handing out\n"
    "credentials. No node is contacted.\n"
    "\n"
    "ROLE is admin (everything), client (sessions and locks, and looking) or read\n"
    "(looking only). OPTIONs restrict the principal:\n"
    "  prefixes=A/,B/       it may lock only names starting with one of these\n"
    "  max-sessions=N       at most N sessions open at once\n"
    "  max-lock-delay=MS    the longest lock-delay its acquires may ask for\n"
    "\n"
    "Exit status: 0; 64 on a usage error; 70 if no random bytes could be had.\n"
    "\n"
    "JSON (-o json): {\"name\": S, \"role\": S, \"token\": S, \"line\": S}\n";

#define MAX_AUTH_OPTS 8

int cmd_auth(struct ctl_opts *o, int argc, char **argv)
{
    struct ctl_optiter it;
    const char *arg, *words[3 + MAX_AUTH_OPTS];
    char err[CTL_ERR_SIZE], token[2 * CTL_TOKEN_BYTES + 1], line[1024];
    int id, rv, n = 0;

    ctl_opt_init(&it, argc, argv, 1);
    while ((id = ctl_opt_next(&it, NULL, ctl_global_opts, &arg, err, sizeof err)) != CTL_OPT_END) {
        if (id == CTL_OPT_POSITIONAL) {
            if (n == (int)(sizeof words / sizeof words[0]))
                return ctl_usage_error("auth", "at most %d options", MAX_AUTH_OPTS);
            words[n++] = arg;
            continue;
        }
        rv = ctl_common_opt(o, "auth", cmd_auth_help, id, arg, err);
        if (rv != CTL_CONTINUE) return rv;
    }
    if (n == 0 || strcmp(words[0], "hash") != 0)
        return ctl_usage_error("auth", "expected 'auth hash NAME ROLE [OPTION...]'");
    if (n < 3) return ctl_usage_error("auth", "missing NAME and ROLE");
    if (ctl_new_token(token) != 0) {
        ctl_error("auth: no random bytes from the system");
        return CTL_EXIT_SOFTWARE;
    }
    if (ctl_auth_line(words[1], words[2], words + 3, n - 3, token, line, sizeof line, err,
                      sizeof err) != 0)
        return ctl_usage_error("auth", "%s", err);
    if (o->format == CTL_JSON) {
        struct jw w;
        jw_init(&w, stdout);
        jw_begin_object(&w, NULL);
        jw_cstring(&w, "name", words[1]);
        jw_cstring(&w, "role", words[2]);
        jw_cstring(&w, "token", token);
        jw_cstring(&w, "line", line);
        jw_end_object(&w);
        jw_finish(&w);
    } else {
        printf("token: %s\n%s\n", token, line);
        fprintf(stderr, "batonctl: the token is shown only this once; the line holds its "
                        "SHA-256. Add the line to every node's auth file and give the token "
                        "to the client.\n");
    }
    return CTL_EXIT_OK;
}
