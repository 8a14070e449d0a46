/*
 * check_flood.c -- the checker's rules for the hostile-* faults
 * (nemesis_hostile.c, flood.c): a hostile authenticated client's floods
 * are bounded. From DIR/flood.log (one "T FLOOD KIND node=ID key=value
 * ..." line per flood) and DIR/nemesis.log:
 *
 *   cache     at most BATON_MAX_UNACKED (proto/msg.h) of one unacknowledging
 *             session's requests ran; every other answer was
 *             RESULT(BATON_ELIMIT) (other=0); its CLOSE_SESSION was not
 *             refused with ELIMIT; and no node's data.mdb grew by more
 *             than MDB_GROWTH_MAX during it (the nemesis's "data.mdb"
 *             NOTE lines)
 *   reads     every answer was its reply or ERROR(BATON_ELIMIT) (other=0)
 *   sessions  at most `cap` sessions opened; the refusal, if one came,
 *             was ERROR(BATON_ELIMIT); another principal's OPEN_SESSION
 *             after it was not refused
 *   prehello  every big frame before HELLO answered ERROR(BATON_ETOOBIG)
 *             or closed (none left open, none answered otherwise); every
 *             trickling connection closed within the flood's wait, none
 *             served
 *
 * Answers from a node that is not (or no longer) the leader (noleader)
 * and connections that ended (unanswered) prove nothing either way. The
 * leader's term through each flood ("kept" / "LOST leadership" HEAL
 * lines) is counted and printed: a lost term is a finding to look at,
 * not a violation (README: the checker).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton/baton_defs.h"
#include "proto/msg.h" /* BATON_MAX_UNACKED */
#include "tests/fault/check.h"

#define SHOW_MAX 10
#define MDB_GROWTH_MAX (4LL << 20)

long long ck_kv(const char *line, const char *key, long long dflt)
{
    char pat[40];
    const char *p;

    snprintf(pat, sizeof pat, " %s=", key);
    p = strstr(line, pat);
    return p ? strtoll(p + strlen(pat), NULL, 10) : dflt;
}

static void violation(struct ck_flood *f, const char *what, const char *line)
{
    if (f->violations++ < SHOW_MAX)
        printf("VIOLATION (hostile flood not bounded): %s: %s\n", what, line);
}

static void check_cache(struct ck_flood *f, const char *line)
{
    if (ck_kv(line, "nosession", 0)) return;
    f->cache[0] += (uint64_t)ck_kv(line, "sent", 0);
    f->cache[1] += (uint64_t)ck_kv(line, "ran", 0);
    f->cache[2] += (uint64_t)ck_kv(line, "refused", 0);
    f->cache[3] += (uint64_t)ck_kv(line, "noleader", 0);
    f->cache[4] += (uint64_t)ck_kv(line, "unanswered", 0);
    if (ck_kv(line, "ran", 0) > BATON_MAX_UNACKED)
        violation(f, "more requests ran than a session may have unacknowledged", line);
    if (ck_kv(line, "other", 0) > 0)
        violation(f, "a request answered neither as run nor ELIMIT", line);
    if (ck_kv(line, "close", 1) == BATON_ELIMIT) violation(f, "CLOSE_SESSION refused", line);
}

static void check_reads(struct ck_flood *f, const char *line)
{
    f->reads[0] += (uint64_t)ck_kv(line, "sent", 0);
    f->reads[1] += (uint64_t)ck_kv(line, "ok", 0);
    f->reads[2] += (uint64_t)ck_kv(line, "refused", 0);
    f->reads[3] += (uint64_t)ck_kv(line, "noleader", 0);
    f->reads[4] += (uint64_t)ck_kv(line, "unanswered", 0);
    if (ck_kv(line, "other", 0) > 0) violation(f, "a read answered otherwise than its reply", line);
}

static void check_sessions(struct ck_flood *f, const char *line)
{
    long long refusal = ck_kv(line, "refusal", 0), by = ck_kv(line, "bystander", -2);
    long long opened = ck_kv(line, "opened", 0);

    if (opened > (long long)f->sessions_most) f->sessions_most = (uint64_t)opened;
    f->sessions_capped += refusal == BATON_ELIMIT;
    f->sessions_bystander += refusal == BATON_ELIMIT && by == 0;
    if (opened > ck_kv(line, "cap", 0)) violation(f, "more sessions than the principal's cap", line);
    if (refusal != BATON_ELIMIT && refusal != 0 && refusal != -1 && refusal != -2)
        violation(f, "OPEN_SESSION refused otherwise than ELIMIT", line);
    if (refusal == BATON_ELIMIT && by != 0 && by != -1 && by != -2)
        violation(f, "another principal refused a session at this one's cap", line);
}

static void check_prehello(struct ck_flood *f, const char *line)
{
    long long slowest = ck_kv(line, "slowest_close_ms", 0);

    f->pre[0] += (uint64_t)ck_kv(line, "big", 0);
    f->pre[1] += (uint64_t)ck_kv(line, "big_refused", 0);
    f->pre[2] += (uint64_t)ck_kv(line, "big_closed", 0);
    f->pre[3] += (uint64_t)ck_kv(line, "trickle", 0);
    f->pre[4] += (uint64_t)ck_kv(line, "trickle_closed", 0);
    f->pre[5] += (uint64_t)ck_kv(line, "served", 0);
    if (slowest > f->slowest_close_ms) f->slowest_close_ms = slowest;
    if (ck_kv(line, "big_other", 0) > 0)
        violation(f, "a big frame before HELLO answered otherwise", line);
    if (ck_kv(line, "big_open", 0) > 0) violation(f, "a big frame before HELLO left open", line);
    if (ck_kv(line, "trickle_open", 0) > 0) violation(f, "a trickling connection left open", line);
    if (ck_kv(line, "trickle_served", 0) > 0) violation(f, "a trickled HELLO served", line);
}

/* nemesis.log: the terms kept and lost, and data.mdb through hostile-cache. */
static int read_nemesis(const char *dir, struct ck_flood *f)
{
    char path[PATH_MAX], line[512];
    FILE *nf;

    snprintf(path, sizeof path, "%s/nemesis.log", dir);
    if ((nf = fopen(path, "r")) == NULL) return errno == ENOENT ? 0 : -1;
    while (fgets(line, sizeof line, nf)) {
        long long before, after;
        unsigned id;
        char *p;

        line[strcspn(line, "\n")] = '\0';
        if ((p = strstr(line, " HEAL hostile-")) != NULL) {
            f->kept += strstr(p, " kept leadership") != NULL;
            f->lost += strstr(p, " LOST leadership") != NULL;
        } else if ((p = strstr(line, " NOTE hostile-cache data.mdb node ")) != NULL &&
                   sscanf(p, " NOTE hostile-cache data.mdb node %u %lld -> %lld", &id, &before,
                          &after) == 3 &&
                   before >= 0 && after >= 0) {
            if (after > f->mdb_largest) f->mdb_largest = after;
            if (after - before > f->mdb_growth) f->mdb_growth = after - before;
            if (after - before > MDB_GROWTH_MAX)
                violation(f, "data.mdb grew by more than 4 MiB", line);
        }
    }
    fclose(nf);
    return 0;
}

int ck_flood(const char *dir, struct ck_flood *f)
{
    char path[PATH_MAX], line[512], kind[16];
    FILE *lf;

    memset(f, 0, sizeof *f);
    snprintf(path, sizeof path, "%s/flood.log", dir);
    if ((lf = fopen(path, "r")) == NULL) return errno == ENOENT ? 0 : -1; /* none ran */
    while (fgets(line, sizeof line, lf)) {
        unsigned long long t;

        line[strcspn(line, "\n")] = '\0';
        if (sscanf(line, "%llu FLOOD %15s", &t, kind) != 2) {
            f->parse_errors++;
            continue;
        }
        f->floods++;
        if (ck_kv(line, "nostart", 0)) {
            f->nostart++;
        } else if (strcmp(kind, "cache") == 0) {
            f->by_kind[0]++;
            check_cache(f, line);
        } else if (strcmp(kind, "reads") == 0) {
            f->by_kind[1]++;
            check_reads(f, line);
        } else if (strcmp(kind, "sessions") == 0) {
            f->by_kind[2]++;
            check_sessions(f, line);
        } else if (strcmp(kind, "prehello") == 0) {
            f->by_kind[3]++;
            check_prehello(f, line);
        } else {
            f->parse_errors++;
        }
    }
    fclose(lf);
    return read_nemesis(dir, f);
}

void ck_flood_print(const struct ck_flood *f)
{
    const uint64_t *k = f->by_kind;

    if (f->floods == 0) return;
    printf("hostile floods: %" PRIu64 " (%" PRIu64 " could not start); the leader kept its term "
           "through %" PRIu64 ", LOST it through %" PRIu64 "\n",
           f->floods, f->nostart, f->kept, f->lost);
    if (k[0])
        printf("  cache, %" PRIu64 " floods: %" PRIu64 " requests of unacknowledging sessions, %"
               PRIu64 " ran, %" PRIu64 " refused ELIMIT, %" PRIu64 " redirected (no longer the "
               "leader), %" PRIu64 " unanswered; data.mdb grew by at most %lld bytes (largest "
               "%lld)\n",
               k[0], f->cache[0], f->cache[1], f->cache[2], f->cache[3], f->cache[4],
               f->mdb_growth, f->mdb_largest);
    if (k[1])
        printf("  reads, %" PRIu64 " floods: %" PRIu64 " pipelined, %" PRIu64 " answered, %" PRIu64
               " refused ELIMIT, %" PRIu64 " redirected (a follower), %" PRIu64 " unanswered\n",
               k[1], f->reads[0], f->reads[1], f->reads[2], f->reads[3], f->reads[4]);
    if (k[2])
        printf("  sessions, %" PRIu64 " floods: %" PRIu64 " stopped at the cap with ELIMIT (most "
               "opened %" PRIu64 "), another principal then served %" PRIu64 " times\n",
               k[2], f->sessions_capped, f->sessions_most, f->sessions_bystander);
    if (k[3])
        printf("  prehello, %" PRIu64 " floods: %" PRIu64 " big frames before HELLO (%" PRIu64
               " ETOOBIG, %" PRIu64 " closed), %" PRIu64 " trickles (%" PRIu64 " closed, the "
               "slowest after %lld ms), served after: %" PRIu64 "\n",
               k[3], f->pre[0], f->pre[1], f->pre[2], f->pre[3], f->pre[4], f->slowest_close_ms,
               f->pre[5]);
    printf("  hostile floods not bounded: %" PRIu64 "\n", f->violations);
}
