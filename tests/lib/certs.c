/*
 * certs.c -- test certificates through server/certs.sh. See certs.h.
 */
#include "tests/lib/certs.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void certs_run(const char *fmt, ...)
{
    char args[PATH_MAX * 4], cmd[PATH_MAX * 4 + 64];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "server/certs.sh %s >/dev/null", args);
    if (system(cmd) != 0) {
        fprintf(stderr, "# server/certs.sh %s failed\n", args);
        exit(1);
    }
}

const char *certs_path(const char *dir, const char *file)
{
    static char p[8][PATH_MAX + 64];
    static int i;

    i = (i + 1) % 8;
    snprintf(p[i], sizeof p[i], "%s/%s", dir, file);
    return p[i];
}

void certs_make_set(const char *dir)
{
    certs_run("cluster %s 1", dir);
    certs_run("ca %s other", dir);
    certs_run("cert %s othernode other baton-node-1 IP:127.0.0.1,DNS:localhost", dir);
    certs_run("cert %s stranger other baton-client -", dir);
    certs_run("cert %s expired ca baton-node-1 IP:127.0.0.1 -1", dir);
    certs_run("cert %s elsewhere ca baton-node-1 IP:10.1.2.3,DNS:db.example", dir);
}
