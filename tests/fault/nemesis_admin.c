/*
 * nemesis_admin.c -- the operator's faults (nemesis_admin.h):
 *
 *   force-release   batonctl release --force on the holder of a hot lock
 *                   (or, with clients of lock modes, of `rw0` or `sem0`,
 *                   always with --fence there: lock-info names the
 *                   first of their holders),
 *                   with --fence (its current fence, read with lock-info
 *                   just before; tried up to five times, since holds last
 *                   tens of ms) or without, with --now or waiting out the
 *                   holder's lease, at random. A fenced release that took
 *                   the lock is sent again at once, as batonctl would after
 *                   a broken connection: the re-send must answer "not held
 *                   with that fence" and take nothing from the next holder.
 *   expire          batonctl expire of the session holding a hot lock (or
 *                   the first holder of `rw0` or `sem0`).
 *
 * The holders are faultclient processes whose pushes may be lost like any
 * other (a leader change, a dropped connection): the checker requires each
 * of them to be told all the same (check.c, rule 7). batonctl runs with the
 * harness's credentials (tests/lib/cluster.h: TLS and the admin token).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tests/fault/flog.h"
#include "tests/fault/nemesis_admin.h"
#include "tests/lib/jsonget.h"
#include "tests/lib/rng.h"

#define CTL_MS 40000

/* A hot lock's name at random, or, if clients take lock modes (run.c,
 * client_profiles), one time in three the read/write lock or the
 * semaphore (client.c). 1 if it is one of those: several may hold it. */
static int pick_lock(struct run *r, char *out, size_t cap)
{
    uint64_t x = xorshift64(&r->rng);

    if (r->n_modes > 0 && x % 3 == 0) {
        snprintf(out, cap, "%s", x / 3 % 2 ? "rw0" : "sem0");
        return 1;
    }
    snprintf(out, cap, "hot%u", (unsigned)(x / 3 % (uint64_t)r->n_locks));
    return 0;
}

/* The holder of `lock` now (lock-info): 0, with *session and *fence set, or
 * -1 if nobody holds it (or batonctl failed). */
static int holder_of(struct run *r, const char *lock, uint64_t *session, uint64_t *fence)
{
    const char *const args[] = {"lock-info", lock, "-o", "json", NULL};
    struct ctl_result res;
    int rv = cluster_ctlv(&r->c, CTL_MS, &res, args);

    *session = *fence = 0;
    if (rv == 0) {
        *session = (uint64_t)json_i64(res.out, "holder_session", 0);
        *fence = (uint64_t)json_i64(res.out, "fence", 0);
    }
    ctl_result_free(&res);
    return *session != 0 && *fence != 0 ? 0 : -1;
}

/* The first line of what batonctl said on stderr, for a note. */
static const char *first_line(struct ctl_result *res)
{
    char *nl = res->err ? strchr(res->err, '\n') : NULL;

    if (nl) *nl = '\0';
    return res->err ? res->err : "";
}

/*
 * One `batonctl release --force`: its exit status. On 0, what it took is in
 * *session and *fence (the FORCED line is written); on an exit that leaves
 * the outcome unknown (neither 0 nor 70: no leader answered, a timeout),
 * a FORCED line with session 0 says it may have taken `fence` (0: any
 * hold of the lock), so that the checker does not count the holder's
 * stale writes against the one-holder rule.
 */
static int force_once(struct run *r, const char *lock, uint64_t fence, int now,
                      uint64_t *session, uint64_t *taken)
{
    char fence_arg[32];
    const char *args[12];
    struct ctl_result res;
    int n = 0, rv;
    int64_t sent;

    args[n++] = "release";
    args[n++] = "--force";
    args[n++] = lock;
    if (fence != 0) {
        snprintf(fence_arg, sizeof fence_arg, "%" PRIu64, fence);
        args[n++] = "--fence";
        args[n++] = fence_arg;
    }
    if (now) args[n++] = "--now";
    args[n++] = "-o";
    args[n++] = "json";
    args[n] = NULL;
    sent = now_us();
    rv = cluster_ctlv(&r->c, CTL_MS, &res, args);
    *session = *taken = 0;
    if (rv == 0) {
        *session = (uint64_t)json_i64(res.out, "lost_session", 0);
        *taken = (uint64_t)json_i64(res.out, "lost_fence", 0);
        flog(r->nemesis, "FORCED %s %" PRIu64 " %" PRIu64 " %s %lld", lock, *taken, *session,
             now ? "now" : "wait", (long long)sent);
    } else if (rv != 70) {
        nemesis_note(r, "NOTE", "batonctl release --force %s: exit %d: %.150s", lock, rv,
                     first_line(&res));
        flog(r->nemesis, "FORCED %s %" PRIu64 " 0 %s %lld", lock, fence, now ? "now" : "wait",
             (long long)sent);
    }
    ctl_result_free(&res);
    return rv;
}

void fault_force_release(struct run *r)
{
    int fenced = (int)(xorshift64(&r->rng) % 2), now = (int)(xorshift64(&r->rng) % 2);
    uint64_t session = 0, fence = 0, s2, f2;
    char lock[16];
    int rv = 70;

    /* Without --fence a forced release takes every holder of a shared
     * lock or semaphore, and says only one of them: always name one. */
    if (pick_lock(r, lock, sizeof lock)) fenced = 1;
    nemesis_note(r, "FAULT", "force-release %s (%s, %s)", lock, fenced ? "--fence" : "any holder",
                 now ? "--now" : "waiting out the lease");
    for (int attempt = 0; attempt < (fenced ? 5 : 1) && rv == 70; attempt++) {
        uint64_t want = 0, holder;
        if (fenced && holder_of(r, lock, &holder, &want) != 0) {
            sleep_ms(20);
            continue;
        }
        rv = force_once(r, lock, want, now, &session, &fence);
    }
    if (rv != 0) {
        nemesis_note(r, "HEAL", "force-release %s: nothing taken (%s)", lock,
                     rv == 70 ? "not held, or it moved on" : "batonctl failed");
        return;
    }
    if (fenced) {
        /* The re-send: the lock has moved on (or waits out the lease), so
         * the same fence must find nothing to take. */
        rv = force_once(r, lock, fence, now, &s2, &f2);
        if (rv != 70) {
            nemesis_note(r, "NOTE", "a re-sent release --force %s --fence %" PRIu64
                         " exited %d, not 70: %s", lock, fence, rv,
                         rv == 0 ? "it took the lock from the next holder" : "unknown outcome");
            if (rv == 0) r->harness_errors++;
        }
    }
    nemesis_note(r, "HEAL", "force-release %s: took fence %" PRIu64 " from session %" PRIu64, lock,
                 fence, session);
}

void fault_expire(struct run *r)
{
    uint64_t session, fence;
    char lock[16], id[32];
    const char *args[] = {"expire", id, NULL};
    struct ctl_result res;
    int64_t sent;
    int rv;

    pick_lock(r, lock, sizeof lock);
    if (holder_of(r, lock, &session, &fence) != 0) {
        nemesis_note(r, "NOTE", "expire: nobody holds %s", lock);
        return;
    }
    snprintf(id, sizeof id, "%" PRIu64, session);
    nemesis_note(r, "FAULT", "expire session %" PRIu64 " (holding %s, fence %" PRIu64 ")",
                 session, lock, fence);
    sent = now_us();
    rv = cluster_ctlv(&r->c, CTL_MS, &res, args);
    /* 70: the session had ended already (it closed, or expired on its
     * own); anything else but 0 leaves the outcome unknown: the checker
     * then holds nobody to the notice but excuses the stale writes. */
    if (rv != 70)
        flog(r->nemesis, "EXPIRED %" PRIu64 " %lld%s", session, (long long)sent,
             rv == 0 ? "" : " maybe");
    if (rv != 0 && rv != 70)
        nemesis_note(r, "NOTE", "batonctl expire %s: exit %d: %.150s", id, rv, first_line(&res));
    ctl_result_free(&res);
    nemesis_note(r, "HEAL", "expire session %" PRIu64 ": %s", session,
                 rv == 0 ? "expired" : rv == 70 ? "already gone" : "outcome unknown");
}
