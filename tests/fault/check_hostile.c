/*
 * check_hostile.c -- the checker's rule for the hostile client
 * (hostile.c): every request it sends names a session of another
 * principal (or none that exists), so every one must be refused, with
 * BATON_EPERM or BATON_ESESSION. One that was carried out (ACCEPTED) or
 * answered in any other way (other) is a violation; one that got no
 * answer (none: no leader in time) proves nothing either way.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "tests/fault/check.h"

#define SHOW_MAX 10

int ck_hostile(const char *dir, struct ck_hostile *h, double (*rel_s)(uint64_t))
{
    char path[PATH_MAX], line[256];
    FILE *f;

    memset(h, 0, sizeof *h);
    snprintf(path, sizeof path, "%s/hostile.log", dir);
    if ((f = fopen(path, "r")) == NULL) return errno == ENOENT ? 0 : -1; /* none ran */
    h->ran = 1;
    while (fgets(line, sizeof line, f)) {
        unsigned long long t, session;
        char kind[32], outcome[16];
        int status;

        line[strcspn(line, "\n")] = '\0';
        if (sscanf(line, "%llu HOSTILE %31s %llu %15s %d", &t, kind, &session, outcome, &status) !=
            5) {
            h->parse_errors++;
            continue;
        }
        h->sent++;
        if (strcmp(outcome, "refused") == 0) {
            if (status == BATON_EPERM)
                h->refused_perm++;
            else
                h->refused_session++;
        } else if (strcmp(outcome, "none") == 0) {
            h->unanswered++;
        } else {
            if (h->violations++ < SHOW_MAX)
                printf("VIOLATION (hostile request not refused): %s naming session %llu at "
                       "+%.3f s, from another principal, was answered %s (status %d)\n",
                       kind, session, rel_s(t), outcome, status);
        }
    }
    fclose(f);
    return 0;
}
