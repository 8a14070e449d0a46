/*
 * test_fsm_model.c -- the lock store against a small model of the rules of
 * lock modes (docs/design.md, "Lock modes"), of owners (docs/design.md,
 * "Owners": CMD_ACQ_OWNERS) and of values, under thousands of random
 * operations: acquires with a random mode, limit, reentrant flag, owners
 * flag (and, with both, a fence: of one of the session's holds, or
 * another), wait and value, releases (right and wrong fences), proclaims
 * (SET_VALUE, by the holder or not), cancels, wait timeouts, expiries and
 * forced releases. After every step the results, the grants of the entry,
 * and every lock's limit, holders (session, waiter, fence, mode, count,
 * value) and queue (session, waiter, mode, value) must be the model's.
 *
 * The model is written to be obviously right, not fast: arrays, linear
 * scans, and the rules as docs/design.md states them. It gives fences as
 * the store must (one counter, one per grant, in the order of the grants),
 * so fences are compared exactly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/rng.h"
#include "tests/unit/fsm_fixture.h"

enum { N_NAMES = 3, MAX_SESS = 6, MAX_H = 256, MAX_Q = 256, STEPS = 6000 };

static const char *const names[N_NAMES] = {"a", "b", "c"};

struct m_hold { uint64_t session, waiter, fence; uint8_t mode; uint32_t count; char val[24]; };
struct m_wait { uint64_t session, waiter; uint8_t mode; char val[24]; };
struct m_lock {
    uint32_t limit;                 /* 0: no such lock */
    struct m_hold h[MAX_H];
    int nh;
    struct m_wait q[MAX_Q];
    int nq;
};
struct m_lost { uint64_t session, fence; int name; };

static struct {
    struct m_lock lock[N_NAMES];
    uint64_t next_fence;            /* the store's next fence (a new store's is 1) */
    uint64_t sess[MAX_SESS];
    uint64_t seq[MAX_SESS];
    int n_sess;
    struct m_lost lost[256];
    int n_lost;
    uint64_t grants[256][2];        /* the entry's grants: session, waiter */
    int n_grants;
} M;

static uint64_t rs = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(uint64_t n)
{
    return xorshift64star(&rs) % n;
}

static int m_compatible(const struct m_lock *l, uint8_t mode)
{
    if (l->limit > 1) return l->nh < (int)l->limit;
    if (l->nh == 0) return 1;
    return mode == BATON_MODE_SHARED && l->h[0].mode == BATON_MODE_SHARED;
}

static uint64_t m_hold_add(struct m_lock *l, uint64_t session, uint64_t waiter, uint8_t mode,
                           const char *val)
{
    struct m_hold *h = &l->h[l->nh++];

    ASSERT_LE(l->nh, MAX_H);
    h->session = session;
    h->waiter = waiter;
    h->fence = M.next_fence++;
    h->mode = mode;
    h->count = 1;
    snprintf(h->val, sizeof h->val, "%s", val);
    return h->fence;
}

/* The rule: grant the head while it is compatible. */
static void m_grant_waiting(struct m_lock *l)
{
    while (l->nq > 0 && m_compatible(l, l->q[0].mode)) {
        struct m_wait w = l->q[0];
        memmove(l->q, l->q + 1, sizeof l->q[0] * (size_t)--l->nq);
        m_hold_add(l, w.session, w.waiter, w.mode, w.val);
        M.grants[M.n_grants][0] = w.session;
        M.grants[M.n_grants++][1] = w.waiter;
    }
    if (l->nh == 0 && l->nq == 0) l->limit = 0;
}

static void m_hold_del(struct m_lock *l, int i)
{
    memmove(l->h + i, l->h + i + 1, sizeof l->h[0] * (size_t)(l->nh - i - 1));
    l->nh--;
}

static void m_wait_del(struct m_lock *l, int i)
{
    memmove(l->q + i, l->q + i + 1, sizeof l->q[0] * (size_t)(l->nq - i - 1));
    l->nq--;
}

/* A reentrant request with CMD_ACQ_OWNERS: the session's hold `fence`
 * on lock n gains a handle; another fence is ENOTHELD, or ELOST if the
 * session has a lost record of it. */
static struct cmd_result m_reenter(uint64_t s, int n, uint8_t mode, uint64_t fence)
{
    struct m_lock *l = &M.lock[n];
    struct cmd_result r = {0};

    for (int i = 0; i < l->nh; i++) {
        if (l->h[i].session != s || l->h[i].fence != fence || fence == 0) continue;
        if (l->limit == 1 && mode == BATON_MODE_EXCLUSIVE && l->h[i].mode == BATON_MODE_SHARED) {
            r.status = BATON_EDEADLK;
            return r;
        }
        l->h[i].count++;
        r.kind = RESULT_GRANTED;
        r.value = fence;
        return r;
    }
    r.status = BATON_ENOTHELD;
    for (int i = 0; i < M.n_lost; i++)
        if (M.lost[i].session == s && M.lost[i].fence == fence && M.lost[i].name == n)
            r.status = BATON_ELOST;
    return r;
}

static struct cmd_result m_acquire(uint64_t s, uint64_t seq, int n, uint8_t mode, uint32_t limit,
                                   uint8_t reentrant, int64_t wait, int owners, uint64_t fence,
                                   const char *val)
{
    struct m_lock *l = &M.lock[n];
    struct cmd_result r = {0};
    uint32_t eff = limit > 1 ? limit : 1;
    int hi = -1, waits = 0;

    if (owners && !reentrant && fence != 0) {
        r.status = BATON_EINVAL;
        return r;
    }
    if (l->limit != 0 && l->limit != eff) {
        r.status = BATON_EINVAL;
        r.value = l->limit;
        return r;
    }
    if (eff > 1 && mode == BATON_MODE_SHARED) {
        r.status = BATON_EINVAL;
        r.value = eff;
        return r;
    }
    if (owners && reentrant) return m_reenter(s, n, mode, fence);
    for (int i = 0; i < l->nh; i++)
        if (l->h[i].session == s && hi < 0) hi = i; /* its first, in fence order */
    for (int i = 0; i < l->nq; i++) waits += l->q[i].session == s;
    if (!owners && (hi >= 0 || waits > 0)) {
        r.status = BATON_EDEADLK;
        if (!reentrant || hi < 0) return r;
        if (eff == 1 && mode == BATON_MODE_EXCLUSIVE && l->h[hi].mode == BATON_MODE_SHARED)
            return r;
        l->h[hi].count++;
        r.status = 0;
        r.kind = RESULT_GRANTED;
        r.value = l->h[hi].fence;
        return r;
    }
    l->limit = eff;
    if (l->nq == 0 && m_compatible(l, mode)) {
        r.kind = RESULT_GRANTED;
        r.value = m_hold_add(l, s, seq, mode, val);
    } else if (wait == BATON_WAIT_TRY) {
        r.status = BATON_EWOULDBLOCK;
        if (l->nh == 0 && l->nq == 0) l->limit = 0;
    } else {
        l->q[l->nq].session = s;
        l->q[l->nq].waiter = seq;
        snprintf(l->q[l->nq].val, sizeof l->q[l->nq].val, "%s", val);
        l->q[l->nq++].mode = mode;
        ASSERT_LE(l->nq, MAX_Q);
        r.kind = RESULT_QUEUED;
        r.value = (uint64_t)l->nq;
    }
    return r;
}

static struct cmd_result m_release(uint64_t s, uint64_t fence, int n)
{
    struct m_lock *l = &M.lock[n];
    struct cmd_result r = {0};

    for (int i = 0; i < l->nh; i++) {
        if (l->h[i].fence != fence || l->h[i].session != s) continue;
        if (--l->h[i].count == 0) {
            m_hold_del(l, i);
            m_grant_waiting(l);
        }
        return r;
    }
    for (int i = 0; i < M.n_lost; i++) {
        if (M.lost[i].session == s && M.lost[i].fence == fence && M.lost[i].name == n) {
            M.lost[i] = M.lost[--M.n_lost];
            r.status = BATON_ELOST;
            return r;
        }
    }
    r.status = BATON_ENOTHELD;
    return r;
}

/* CANCEL (cancel = 1) or WAIT_TIMEOUT of waiter w of session s. */
static struct cmd_result m_end_wait(uint64_t s, uint64_t w, int n, int cancel)
{
    struct m_lock *l = &M.lock[n];
    struct cmd_result r = {0};

    for (int i = 0; i < l->nq; i++) {
        if (l->q[i].session != s || l->q[i].waiter != w) continue;
        m_wait_del(l, i);
        m_grant_waiting(l);
        if (cancel) r.kind = RESULT_CANCELLED;
        return r;
    }
    if (!cancel) return r;
    for (int i = 0; i < l->nh; i++) {
        if (l->h[i].session == s && l->h[i].waiter == w) {
            r.kind = RESULT_GRANTED;
            r.value = l->h[i].fence;
            return r;
        }
    }
    r.status = BATON_ENOTFOUND;
    return r;
}

/* The session's entries in waiter order (as the store walks its owned
 * table): waits dropped first without grants, then holds, each handing
 * its lock on; then the locks of the dropped waits get their grants. */
static void m_expire(uint64_t s)
{
    uint64_t ws[64][2];
    int nw = 0;

    for (int n = 0; n < N_NAMES; n++) {
        struct m_lock *l = &M.lock[n];
        for (int i = 0; i < l->nq; i++)
            if (l->q[i].session == s) {
                ws[nw][0] = l->q[i].waiter;
                ws[nw++][1] = (uint64_t)n;
                m_wait_del(l, i--);
            }
    }
    for (;;) { /* holds, lowest waiter first */
        int bn = -1, bi = -1;
        for (int n = 0; n < N_NAMES; n++)
            for (int i = 0; i < M.lock[n].nh; i++)
                if (M.lock[n].h[i].session == s &&
                    (bn < 0 || M.lock[n].h[i].waiter < M.lock[bn].h[bi].waiter))
                    bn = n, bi = i;
        if (bn < 0) break;
        m_hold_del(&M.lock[bn], bi);
        m_grant_waiting(&M.lock[bn]);
    }
    for (int a = 0; a < nw; a++) /* sort the dropped waits by waiter */
        for (int b = a + 1; b < nw; b++)
            if (ws[b][0] < ws[a][0]) {
                uint64_t t0 = ws[a][0], t1 = ws[a][1];
                ws[a][0] = ws[b][0], ws[a][1] = ws[b][1];
                ws[b][0] = t0, ws[b][1] = t1;
            }
    for (int a = 0; a < nw; a++) {
        struct m_lock *l = &M.lock[ws[a][1]];
        if (l->nh == 0 && l->nq == 0) {
            l->limit = 0;
            continue;
        }
        m_grant_waiting(l);
    }
    for (int i = 0; i < M.n_lost; i++)
        if (M.lost[i].session == s) M.lost[i--] = M.lost[--M.n_lost];
}

/* FORCE_RELEASE2 NOW: the hold of fence, or every hold (fence order). */
static struct cmd_result m_force(int n, uint64_t fence)
{
    struct m_lock *l = &M.lock[n];
    struct cmd_result r = {0};
    int any = 0;

    for (int i = 0; i < l->nh; i++) {
        if (fence != 0 && l->h[i].fence != fence) continue;
        ASSERT_LT(M.n_lost, 256);
        M.lost[M.n_lost].session = l->h[i].session;
        M.lost[M.n_lost].fence = l->h[i].fence;
        M.lost[M.n_lost++].name = n;
        r.value = l->h[i].fence;
        m_hold_del(l, i--);
        any = 1;
    }
    if (!any) {
        r.status = BATON_ENOTHELD;
        r.value = l->nh ? l->h[0].fence : 0;
        return r;
    }
    m_grant_waiting(l);
    return r;
}

/* SET_VALUE: the session's hold of that fence takes the value; a hold it
 * lost is ELOST (its record stays), anything else ENOTHELD. */
static struct cmd_result m_set_value(uint64_t s, uint64_t fence, int n, const char *val)
{
    struct m_lock *l = &M.lock[n];
    struct cmd_result r = {0};

    for (int i = 0; i < l->nh; i++) {
        if (l->h[i].fence != fence || l->h[i].session != s) continue;
        snprintf(l->h[i].val, sizeof l->h[i].val, "%s", val);
        return r;
    }
    r.status = BATON_ENOTHELD;
    for (int k = 0; k < M.n_lost; k++)
        if (M.lost[k].session == s && M.lost[k].fence == fence && M.lost[k].name == n)
            r.status = BATON_ELOST;
    return r;
}

/* ---- the comparison ---------------------------------------------------- */

static void assert_value(struct pstr got, const char *want)
{
    ASSERT_UEQ(got.n, strlen(want));
    if (got.n) ASSERT(memcmp(got.p, want, got.n) == 0);
}

/* The values the reader's state shows are the model's. */
static void compare_values(struct fixture *f, int n)
{
    const struct m_lock *l = &M.lock[n];
    struct msg_lock_state st;
    struct lock_state_mem mem;

    ASSERT_EQ(store_lock_state(f->s, names[n], strlen(names[n]), 1u << 20, &st, &mem), 0);
    ASSERT_EQ((int)st.n_holders, l->nh);
    ASSERT_EQ((int)st.n_waiters, l->nq);
    for (int k = 0; k < l->nh; k++) assert_value(st.holders[k].value, l->h[k].val);
    for (int k = 0; k < l->nq; k++) assert_value(st.waiters[k].value, l->q[k].val);
    store_lock_state_free(&mem);
}

static void compare_state(struct fixture *f)
{
    for (int n = 0; n < N_NAMES; n++) {
        const struct m_lock *l = &M.lock[n];
        struct msg_lock_info_r i = info(f, names[n]);

        ASSERT_UEQ(i.limit, l->limit);
        ASSERT_EQ((int)i.total_holders, l->nh);
        ASSERT_EQ((int)i.n_holders, l->nh);
        ASSERT_EQ((int)i.total_waiters, l->nq);
        ASSERT_EQ((int)i.n_waiters, l->nq);
        for (int k = 0; k < l->nh; k++) { /* the store lists them by fence; so does the model */
            ASSERT_UEQ(i.holders[k].session, l->h[k].session);
            ASSERT_UEQ(i.holders[k].waiter, l->h[k].waiter);
            ASSERT_UEQ(i.holders[k].fence, l->h[k].fence);
            ASSERT_EQ(i.holders[k].mode, l->h[k].mode);
            ASSERT_UEQ(i.holders[k].count, l->h[k].count);
        }
        for (int k = 0; k < l->nq; k++) {
            ASSERT_UEQ(i.waiters[k].session, l->q[k].session);
            ASSERT_UEQ(i.waiters[k].waiter, l->q[k].waiter);
            ASSERT_EQ(i.waiters[k].mode, l->q[k].mode);
        }
        /* The invariants themselves, on the store's answer. */
        if (l->limit > 1) ASSERT_LE(i.total_holders, i.limit);
        for (uint32_t k = 0; k < i.n_holders && i.limit == 1; k++)
            if (i.holders[k].mode == BATON_MODE_EXCLUSIVE) ASSERT_EQ(i.total_holders, 1);
        store_lock_info_free(&i);
        compare_values(f, n);
    }
}

static void compare_result(struct cmd_result got, struct cmd_result want)
{
    ASSERT_EQ(got.status, want.status);
    if (want.status == 0) ASSERT_EQ(got.kind, want.kind);
    if (want.status == 0 || want.status == BATON_EINVAL || want.status == BATON_ENOTHELD)
        ASSERT_UEQ(got.value, want.value);
}

static void compare_grants(struct fixture *f)
{
    int k = 0;

    for (size_t i = 0; i < f->fx.n_fx; i++) {
        if (f->fx.fx[i].type != FX_GRANT) continue;
        ASSERT_LT(k, M.n_grants);
        ASSERT_UEQ(f->fx.fx[i].session, M.grants[k][0]);
        ASSERT_UEQ(f->fx.fx[i].waiter, M.grants[k][1]);
        k++;
    }
    ASSERT_EQ(k, M.n_grants);
}

/* A random hold of the model (any session): its lock, session, fence. */
static int pick_hold(int *n, uint64_t *s, uint64_t *fence, uint64_t *waiter)
{
    int total = 0, k;

    for (int i = 0; i < N_NAMES; i++) total += M.lock[i].nh;
    if (total == 0) return 0;
    k = (int)rnd((uint64_t)total);
    for (int i = 0; i < N_NAMES; i++) {
        if (k < M.lock[i].nh) {
            *n = i;
            *s = M.lock[i].h[k].session;
            *fence = M.lock[i].h[k].fence;
            *waiter = M.lock[i].h[k].waiter;
            return 1;
        }
        k -= M.lock[i].nh;
    }
    return 0;
}

static int pick_wait(int *n, uint64_t *s, uint64_t *waiter)
{
    int total = 0, k;

    for (int i = 0; i < N_NAMES; i++) total += M.lock[i].nq;
    if (total == 0) return 0;
    k = (int)rnd((uint64_t)total);
    for (int i = 0; i < N_NAMES; i++) {
        if (k < M.lock[i].nq) {
            *n = i;
            *s = M.lock[i].q[k].session;
            *waiter = M.lock[i].q[k].waiter;
            return 1;
        }
        k -= M.lock[i].nq;
    }
    return 0;
}

/* The fence a reentrant request with owners names: mostly one of the
 * session's holds on lock n, else one of its lost records, another
 * session's hold, any fence, or 0. */
static uint64_t pick_fence(uint64_t s, int n)
{
    const struct m_lock *l = &M.lock[n];
    int mine[MAX_H], k = 0;

    for (int i = 0; i < l->nh; i++)
        if (l->h[i].session == s) mine[k++] = i;
    if (k > 0 && rnd(4) != 0) return l->h[mine[rnd((uint64_t)k)]].fence;
    switch (rnd(4)) {
    case 0:
        for (int i = 0; i < M.n_lost; i++)
            if (M.lost[i].session == s) return M.lost[i].fence;
        return 0;
    case 1:
        return l->nh > 0 ? l->h[rnd((uint64_t)l->nh)].fence : 0;
    case 2:
        return rnd(M.next_fence + 2);
    default:
        return 0;
    }
}

static int sess_index(uint64_t s)
{
    for (int i = 0; i < M.n_sess; i++)
        if (M.sess[i] == s) return i;
    FAIL("no session %llu in the model", (unsigned long long)s);
    return -1;
}

static void one_step(struct fixture *f, int *counts)
{
    struct cmd_result want = {0}, got;
    struct cmd c;
    uint64_t s, fence, waiter;
    int n, op = (int)rnd(100), si;
    char val[24];

    M.n_grants = 0;
    if (M.n_sess < 2 || (op < 3 && M.n_sess < MAX_SESS)) {
        got = run(f, c_open(10000, "model"));
        ASSERT_EQ(got.status, 0);
        M.sess[M.n_sess] = got.value;
        M.seq[M.n_sess++] = 0;
        return;
    }
    if (op < 55) { /* acquire */
        static const uint32_t limits[] = {0, 0, 0, 1, 2, 3};
        si = (int)rnd((uint64_t)M.n_sess);
        n = (int)rnd(N_NAMES);
        c = c_acq(M.sess[si], ++M.seq[si], rnd(3) ? BATON_WAIT_FOREVER : BATON_WAIT_TRY,
                  names[n]);
        c.mode = (uint8_t)rnd(2);
        c.limit = limits[rnd(6)];
        if (M.lock[n].limit != 0 && rnd(10) < 8) { /* mostly the right limit */
            c.limit = M.lock[n].limit > 1 ? M.lock[n].limit : (uint32_t)rnd(2);
            if (M.lock[n].limit > 1) c.mode = BATON_MODE_EXCLUSIVE;
        }
        c.reentrant = rnd(3) == 0;
        /* With owners, mostly below the model's room for holds and waits. */
        if (rnd(3) == 0 && (M.lock[n].nh + M.lock[n].nq < MAX_Q / 2 || rnd(4) == 0)) {
            c.flags = CMD_ACQ_OWNERS;
            if (c.reentrant) c.fence = pick_fence(M.sess[si], n);
            else if (rnd(20) == 0) c.fence = 1 + rnd(M.next_fence + 1); /* refused */
        }
        if (c.flags != 0) {
            int own = 0;
            for (int i = 0; i < M.lock[n].nh; i++) own += M.lock[n].h[i].session == c.session;
            for (int i = 0; i < M.lock[n].nq; i++) own += M.lock[n].q[i].session == c.session;
            counts[5]++;
            counts[6] += own > 0 && !c.reentrant;
        }
        if (rnd(2)) { /* half of them with a value */
            snprintf(val, sizeof val, "v%llu", (unsigned long long)c.seq);
            c.value = (const uint8_t *)val;
            c.value_len = (uint16_t)strlen(val);
        }
        want = m_acquire(c.session, c.seq, n, c.mode, c.limit, c.reentrant, c.wait_ms,
                         c.flags != 0, c.fence, c.value_len ? val : "");
        counts[0]++;
    } else if (op < 75) { /* release: a real hold, or a wrong fence */
        if (pick_hold(&n, &s, &fence, &waiter) && rnd(8)) {
            if (rnd(10) == 0) s = M.sess[rnd((uint64_t)M.n_sess)]; /* maybe another's */
        } else {
            n = (int)rnd(N_NAMES);
            s = M.sess[rnd((uint64_t)M.n_sess)];
            fence = rnd(M.next_fence + 2);
        }
        si = sess_index(s);
        c = c_rel(s, ++M.seq[si], fence, names[n]);
        want = m_release(s, fence, n);
        counts[1]++;
    } else if (op < 80) { /* proclaim: a real hold (maybe another session's), or a wrong fence */
        if (!pick_hold(&n, &s, &fence, &waiter) || rnd(6) == 0) {
            n = (int)rnd(N_NAMES);
            fence = rnd(M.next_fence + 2);
            s = M.sess[rnd((uint64_t)M.n_sess)];
        }
        if (rnd(6) == 0) s = M.sess[rnd((uint64_t)M.n_sess)];
        if (rnd(6) == 0 && M.n_lost > 0) { /* a hold this session lost */
            int k = (int)rnd((uint64_t)M.n_lost);
            s = M.lost[k].session, fence = M.lost[k].fence, n = M.lost[k].name;
        }
        si = sess_index(s);
        snprintf(val, sizeof val, rnd(5) ? "p%llu" : "", (unsigned long long)(M.seq[si] + 1));
        c = cmd_of(CMD_SET_VALUE, s, ++M.seq[si], names[n]);
        c.fence = fence;
        c.value = (const uint8_t *)val;
        c.value_len = (uint16_t)strlen(val);
        want = m_set_value(s, fence, n, val);
        counts[7]++;
    } else if (op < 85) { /* cancel or time out a wait (or a hold: cancel's race) */
        int cancel = (int)rnd(2);
        if (!pick_wait(&n, &s, &waiter) || rnd(6) == 0) {
            if (!pick_hold(&n, &s, &fence, &waiter)) return;
        }
        si = sess_index(s);
        c = cancel ? c_cancel(s, ++M.seq[si], waiter, names[n]) : c_timeout(s, waiter, names[n]);
        want = m_end_wait(s, waiter, n, cancel);
        counts[2]++;
    } else if (op < 92) { /* expire a session */
        si = (int)rnd((uint64_t)M.n_sess);
        s = M.sess[si];
        c = c_expire(s);
        m_expire(s);
        M.sess[si] = M.sess[--M.n_sess];
        M.seq[si] = M.seq[M.n_sess];
        counts[3]++;
    } else { /* forced release of every holder, or of one fence */
        n = (int)rnd(N_NAMES);
        fence = 0;
        if (rnd(2) && M.lock[n].nh > 0) fence = M.lock[n].h[rnd((uint64_t)M.lock[n].nh)].fence;
        c = c_force2(names[n], fence, CMD_FORCE_NOW);
        want = m_force(n, fence);
        counts[4]++;
    }
    got = run(f, c);
    compare_result(got, want);
    compare_grants(f);
    compare_state(f);
}

TEST(store_matches_the_model_under_random_operations)
{
    struct fixture f;
    int counts[8] = {0};
    uint32_t n;

    setup(&f);
    ASSERT_EQ(run(&f, cmd_of(CMD_SET_LEVEL, STORE_LEVEL_VALUES, 0, NULL)).status, 0);
    memset(&M, 0, sizeof M);
    M.next_fence = 1;
    for (int step = 0; step < STEPS; step++) one_step(&f, counts);
    printf("# acquires %d, releases %d, proclaims %d, cancels/timeouts %d, expiries %d, "
           "forced %d\n",
           counts[0], counts[1], counts[7], counts[2], counts[3], counts[4]);
    printf("# with owners %d, of which beside the session's own entries %d\n", counts[5],
           counts[6]);
    ASSERT_GT(counts[0], STEPS / 3);
    ASSERT_GT(counts[6], STEPS / 50); /* the case owners exist for did happen */
    ASSERT_GT(counts[7], STEPS / 50);
    /* Every session's lost records are the model's. */
    for (int i = 0; i < M.n_sess; i++) {
        int want = 0;
        for (int k = 0; k < M.n_lost; k++) want += M.lost[k].session == M.sess[i];
        ASSERT_EQ(store_lost_count(f.s, M.sess[i], 1000, &n), 0);
        ASSERT_EQ((int)n, want);
    }
    teardown(&f);
}

/* ---- multi-locks: the rules as invariants ------------------------------- */

/*
 * Multi-locks make the order of grants within one entry an implementation
 * choice (which queue is looked at first), so rather than a model that
 * would copy that order, the second test checks after every random step
 * the rules themselves on the store's answers (store_lock_info of every
 * name): a multi-lock holds all of its names with one fence or none, and
 * waits in all of its queues or none; no exclusive holder beside another;
 * the waiters two queues share stand in the same order in both (one
 * commit order: no cycle); nothing grantable is left waiting (the head of
 * each queue is incompatible with its holders, or a multi-lock that does
 * not yet head, or fit, one of its other queues); every grant's fence is
 * above every earlier one. At the end every session expires and every
 * lock must be gone.
 */
enum { MN = 6, MSESS = 6, MSTEPS = 5000, MREQ = 24000 };
static const char *const mnames[MN] = {"m0", "m1", "m2", "m3", "m4", "m5"};

static struct {
    struct mreq { uint64_t s, seq; int n, idx[4]; } req[MREQ];
    int n_req;
    uint64_t sess[MSESS], seq[MSESS];
    int n_sess;
    uint64_t max_fence;
    struct msg_lock_info_r info[MN], before[MN];
} X;

static const struct mreq *mreq_find(uint64_t s, uint64_t seq)
{
    for (int i = X.n_req - 1; i >= 0; i--)
        if (X.req[i].s == s && X.req[i].seq == seq) return &X.req[i];
    FAIL("no request %llu/%llu", (unsigned long long)s, (unsigned long long)seq);
    return NULL;
}

static int holds_on(const struct msg_lock_info_r *i, uint64_t s, uint64_t w, uint64_t *fence)
{
    for (uint32_t k = 0; k < i->n_holders; k++)
        if (i->holders[k].session == s && i->holders[k].waiter == w) {
            if (fence) *fence = i->holders[k].fence;
            return 1;
        }
    return 0;
}

static int waits_on(const struct msg_lock_info_r *i, uint64_t s, uint64_t w)
{
    for (uint32_t k = 0; k < i->n_waiters; k++)
        if (i->waiters[k].session == s && i->waiters[k].waiter == w) return (int)k + 1;
    return 0;
}

static int fits(const struct msg_lock_info_r *i, uint8_t mode)
{
    if (i->delayed) return 0;
    if (i->total_holders == 0) return 1;
    return mode == BATON_MODE_SHARED && i->mode == BATON_MODE_SHARED;
}

static void check_invariants(void)
{
    for (int n = 0; n < MN; n++) {
        const struct msg_lock_info_r *i = &X.info[n];
        for (uint32_t k = 0; k < i->n_holders; k++) {
            const struct mreq *r = mreq_find(i->holders[k].session, i->holders[k].waiter);
            uint64_t f;
            if (i->holders[k].mode == BATON_MODE_EXCLUSIVE) ASSERT_EQ(i->total_holders, 1);
            for (int j = 0; j < r->n; j++) { /* all of its names, one fence */
                ASSERT(holds_on(&X.info[r->idx[j]], r->s, r->seq, &f));
                ASSERT_UEQ(f, i->holders[k].fence);
            }
        }
        for (uint32_t k = 0; k < i->n_waiters; k++) {
            const struct mreq *r = mreq_find(i->waiters[k].session, i->waiters[k].waiter);
            for (int j = 0; j < r->n; j++) ASSERT(waits_on(&X.info[r->idx[j]], r->s, r->seq));
        }
        for (int m = 0; m < MN; m++) /* the shared waiters in one order */
            for (uint32_t a = 0; a < i->n_waiters; a++)
                for (uint32_t b = a + 1; b < i->n_waiters; b++) {
                    int pa = waits_on(&X.info[m], i->waiters[a].session, i->waiters[a].waiter);
                    int pb = waits_on(&X.info[m], i->waiters[b].session, i->waiters[b].waiter);
                    if (pa && pb) ASSERT_LT(pa, pb);
                }
        if (i->n_waiters > 0) { /* the head must not be grantable */
            const struct mreq *r = mreq_find(i->waiters[0].session, i->waiters[0].waiter);
            int grantable = fits(i, i->waiters[0].mode);
            for (int j = 0; j < r->n && grantable; j++) {
                const struct msg_lock_info_r *o = &X.info[r->idx[j]];
                grantable = waits_on(o, r->s, r->seq) == 1 && fits(o, i->waiters[0].mode);
            }
            ASSERT(!grantable);
        }
    }
}

/* Keep the last step's answers in X.before and read the new ones. */
static void load_infos(struct fixture *f)
{
    for (int n = 0; n < MN; n++) {
        store_lock_info_free(&X.before[n]);
        X.before[n] = X.info[n];
        X.info[n] = info(f, mnames[n]);
    }
}

/* FIFO: a request granted in this step had nobody ahead of it, in any of
 * its queues, who still waits. */
static void check_no_barging(struct fixture *f)
{
    for (size_t e = 0; e < f->fx.n_fx; e++) {
        const struct mreq *r;
        if (f->fx.fx[e].type != FX_GRANT) continue;
        r = mreq_find(f->fx.fx[e].session, f->fx.fx[e].waiter);
        for (int j = 0; j < r->n; j++) {
            const struct msg_lock_info_r *b = &X.before[r->idx[j]];
            int pos = waits_on(b, r->s, r->seq);
            ASSERT_GT(pos, 0);
            for (int k = 0; k < pos - 1; k++)
                ASSERT(!waits_on(&X.info[r->idx[j]], b->waiters[k].session,
                                 b->waiters[k].waiter));
        }
    }
}

static void check_fences(struct fixture *f, struct cmd_result got)
{
    for (size_t i = 0; i < f->fx.n_fx; i++) {
        if (f->fx.fx[i].type != FX_GRANT) continue;
        ASSERT_ULT(X.max_fence, f->fx.fx[i].fence);
        X.max_fence = f->fx.fx[i].fence;
    }
    if (got.status == 0 && got.kind == RESULT_GRANTED && got.value > X.max_fence)
        X.max_fence = got.value;
}

/* A new request of session slot si: 1 name, or 2..4 distinct ones. */
static struct cmd m_request(int si, uint8_t *more)
{
    struct mreq *r = &X.req[X.n_req++];
    const char *p[4];
    struct cmd c;

    ASSERT_LT(X.n_req, MREQ);
    r->s = X.sess[si];
    r->seq = ++X.seq[si];
    r->n = rnd(3) ? 2 + (int)rnd(3) : 1;
    for (int j = 0; j < r->n; j++) {
        int again;
        do {
            r->idx[j] = (int)rnd(MN);
            again = 0;
            for (int k = 0; k < j; k++) again |= r->idx[k] == r->idx[j];
        } while (again);
        p[j] = mnames[r->idx[j]];
    }
    if (r->n == 1) c = c_acq(r->s, r->seq, BATON_WAIT_FOREVER, p[0]);
    else c = c_many(r->s, r->seq, BATON_WAIT_FOREVER, p, (size_t)r->n, more);
    if (rnd(5) == 0) c.wait_ms = BATON_WAIT_TRY;
    c.mode = (uint8_t)rnd(2);
    return c;
}

static int m_sess_index(uint64_t s)
{
    for (int i = 0; i < X.n_sess; i++)
        if (X.sess[i] == s) return i;
    return -1;
}

static void multi_step(struct fixture *f, int *counts)
{
    static uint8_t more[CMDS_MORE_MAX];
    struct cmd_result got;
    struct cmd c;
    int op = (int)rnd(100), n = (int)rnd(MN), si;
    const struct msg_lock_info_r *i = &X.info[n];

    if (X.n_sess < 2 || (op < 3 && X.n_sess < MSESS)) {
        got = run(f, c_open(10000, "multi"));
        ASSERT_EQ(got.status, 0);
        X.sess[X.n_sess] = got.value;
        X.seq[X.n_sess++] = 0;
        return;
    }
    if (op < 50) {
        c = m_request((int)rnd((uint64_t)X.n_sess), more);
        counts[0]++;
    } else if (op < 78) { /* release a hold, by any of its names */
        uint32_t k;
        if (i->n_holders == 0) return;
        k = (uint32_t)rnd(i->n_holders);
        si = m_sess_index(i->holders[k].session);
        c = c_rel(i->holders[k].session, ++X.seq[si], i->holders[k].fence, mnames[n]);
        counts[1]++;
    } else if (op < 88) { /* cancel or time out: by the first name */
        const struct mreq *r;
        uint32_t k;
        if (i->n_waiters == 0) return;
        k = (uint32_t)rnd(i->n_waiters);
        r = mreq_find(i->waiters[k].session, i->waiters[k].waiter);
        si = m_sess_index(r->s);
        c = rnd(2) ? c_cancel(r->s, ++X.seq[si], r->seq, mnames[r->idx[0]])
                   : c_timeout(r->s, r->seq, mnames[r->idx[0]]);
        counts[2]++;
    } else if (op < 92) {
        si = (int)rnd((uint64_t)X.n_sess);
        c = c_expire(X.sess[si]);
        X.sess[si] = X.sess[--X.n_sess];
        X.seq[si] = X.seq[X.n_sess];
        counts[3]++;
    } else {
        if (i->n_holders == 0) return;
        c = c_force2(mnames[n], 0, CMD_FORCE_NOW);
        counts[4]++;
    }
    got = run(f, c);
    ASSERT(got.status == 0 || got.status == BATON_EWOULDBLOCK || got.status == BATON_EDEADLK ||
           (c.type == CMD_RELEASE && got.status == BATON_ELOST));
    check_fences(f, got);
    load_infos(f);
    check_invariants();
    check_no_barging(f);
}

TEST(multi_locks_keep_the_rules_under_random_operations)
{
    struct fixture f;
    int counts[5] = {0};

    setup(&f);
    memset(&X, 0, sizeof X);
    load_infos(&f);
    for (int step = 0; step < MSTEPS; step++) multi_step(&f, counts);
    printf("# acquires %d, releases %d, cancels/timeouts %d, expiries %d, forced %d\n",
           counts[0], counts[1], counts[2], counts[3], counts[4]);
    ASSERT_GT(counts[1], MSTEPS / 10);
    while (X.n_sess > 0) {
        ASSERT_EQ(run(&f, c_expire(X.sess[--X.n_sess])).status, 0);
        load_infos(&f);
        check_invariants();
    }
    ASSERT_UEQ(count_in(&f, DB_LOCKS), 0);
    ASSERT_UEQ(count_in(&f, DB_MULTI), 0);
    for (int n = 0; n < MN; n++) {
        store_lock_info_free(&X.info[n]);
        store_lock_info_free(&X.before[n]);
    }
    teardown(&f);
}

int main(int argc, char **argv)
{
    fsm_main_begin(argc, argv);
    RUN(store_matches_the_model_under_random_operations);
    RUN(multi_locks_keep_the_rules_under_random_operations);
    return fsm_main_end();
}
