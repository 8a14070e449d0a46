/*
 * check_upgrade.c -- the checker's rule 11, for the upgrade fault
 * (nemesis_upgrade.c): a rolling upgrade keeps the feature level's
 * promises (docs/design.md "Feature levels"). From the nemesis's "NOTE
 * upgrade KIND key=value ..." lines in DIR/nemesis.log:
 *
 *   level      node=ID binary=B cluster=C lowest-voter=M: what node ID's
 *              METRICS said. C above M is the level raised while a voter
 *              of a lower level is in the configuration; C above B is a
 *              node applying the entries of a cluster above its binary
 *   raise      raised=0: every voter ran the full binary for 30 s and the
 *              level was not raised on every node
 *   downgrade  store=C exit=S said=Y: the level-1 binary started on a store
 *              at level C > 1 must exit non-zero (S > 0; 0 is a clean run,
 *              -1 still running after 15 s) saying "this binary applies
 *              level 1 only" (Y = 1)
 *   refused    cluster=C applied=A said=Y: a node of the level-1 binary
 *              joining a cluster at level C > 1 applies nothing (A is 0, or
 *              -1 when it did not answer) and the others' logs say its
 *              handshakes were refused (Y = 1)
 *
 * Unequal state digests at the end are faultrun's own failure (exit 3).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "tests/fault/check.h"

static void violation(struct ck_upgrade *u, const char *what, const char *line)
{
    u->violations++;
    ck_violation(V_UPGRADE, "%s: %s", what, line);
}

static void check_level(struct ck_upgrade *u, const char *line)
{
    long long bin = ck_kv(line, "binary", -1), cl = ck_kv(line, "cluster", -1),
              low = ck_kv(line, "lowest-voter", -1);

    if (bin < 0 || cl < 0 || low < 0) {
        u->parse_errors++;
        return;
    }
    u->looks++;
    u->held += cl == 1;
    if (cl > low) violation(u, "level raised while a voter of a lower level is a member", line);
    if (cl > bin) violation(u, "a node below the cluster's level applies its entries", line);
}

static void check_raise(struct ck_upgrade *u, const char *line)
{
    long long ms = ck_kv(line, "ms", -1);

    if (!ck_kv(line, "raised", 0)) {
        violation(u, "level not raised once every voter ran the full binary", line);
        return;
    }
    u->raised++;
    if (ms > u->raise_ms) u->raise_ms = ms;
}

static void check_downgrade(struct ck_upgrade *u, const char *line)
{
    u->downgrades++;
    if (ck_kv(line, "store", -1) == 1) return; /* a level-1 store: it may start */
    if (ck_kv(line, "exit", 0) <= 0)
        violation(u, "a lower binary started on a raised store", line);
    else if (!ck_kv(line, "said", 0))
        violation(u, "a lower binary refused a raised store without saying why", line);
}

static void check_refused(struct ck_upgrade *u, const char *line)
{
    u->refused++;
    if (ck_kv(line, "applied", -1) > 0)
        violation(u, "a node below the cluster's level applied entries", line);
    if (ck_kv(line, "cluster", -1) != 1 && !ck_kv(line, "said", 0))
        violation(u, "a node below the cluster's level was not refused at the handshake", line);
}

int ck_upgrade(const char *dir, struct ck_upgrade *u)
{
    char path[PATH_MAX], line[512], kind[16];
    FILE *nf;

    memset(u, 0, sizeof *u);
    u->raise_ms = -1;
    snprintf(path, sizeof path, "%s/nemesis.log", dir);
    if ((nf = fopen(path, "r")) == NULL) return errno == ENOENT ? 0 : -1;
    while (fgets(line, sizeof line, nf)) {
        const char *p;

        line[strcspn(line, "\n")] = '\0';
        if ((p = strstr(line, " NOTE upgrade ")) == NULL) continue;
        if (sscanf(p, " NOTE upgrade %15s", kind) != 1) {
            u->parse_errors++;
        } else if (strcmp(kind, "level") == 0) {
            check_level(u, line);
        } else if (strcmp(kind, "raise") == 0) {
            check_raise(u, line);
        } else if (strcmp(kind, "downgrade") == 0) {
            check_downgrade(u, line);
        } else if (strcmp(kind, "refused") == 0) {
            check_refused(u, line);
        } else {
            u->parse_errors++;
        }
    }
    fclose(nf);
    return 0;
}

void ck_upgrade_print(const struct ck_upgrade *u)
{
    if (!u->looks && !u->downgrades && !u->refused) return;
    printf("upgrade: %" PRIu64 " looks at a node's levels (%" PRIu64 " with the level held at 1), "
           "%" PRIu64 " raises (the slowest %lld ms), %" PRIu64 " level-1 binaries started on a "
           "raised store, %" PRIu64 " joined a raised cluster; %" PRIu64 " broke a rule\n",
           u->looks, u->held, u->raised, u->raise_ms, u->downgrades, u->refused, u->violations);
}
