/*
 * async_session.c -- the session's liveness: keepalives, the client-side
 * lease, the table of held locks, declaring locks lost, and opening a
 * fresh session once the old one is gone.
 *
 * The lease. The cluster's leader expires a session that it has not heard
 * from for ttl milliseconds, counting from when each message ARRIVES. The
 * client counts the same lease from when it SENT the last message that
 * the cluster acknowledged: a keepalive answered OK, or any request of the
 * session answered with anything but BATON_ESESSION (async_ops.c calls
 * baton__lease_renew for those). A message arrives after it is sent, so
 * the client's lease always ends first: when it runs out here, every held
 * lock is declared lost, at a moment when the cluster cannot yet have
 * granted any of them to someone else. Send times are taken when a message
 * is queued for the socket, which is a little before it is written, so
 * they err on the safe side.
 *
 * Keepalives go out every ttl/3 (ttl as the cluster granted it), whatever
 * else the session is doing, and once right after every reconnect (before
 * re-sent requests), so that a new leader attaches the session to the new
 * connection at once and pushes grants and lost-lock notices there. They
 * are not requests: they carry no seq, have req_ids of their own range
 * (async_int.h) and are matched to their RESULT through the small ring
 * ac->ka, which also remembers each one's send time and session. A reply
 * to a keepalive of an older session (or one that fell out of the ring)
 * is ignored.
 *
 * A node that stops answering. A keepalive left unanswered on the current
 * connection for ttl/6 means the node is stopped, cut off from the others
 * (the leader answers a keepalive only after confirming its leadership
 * through a majority) or overloaded: the connection is dropped and the next
 * node tried. The first unanswered keepalive went out at most ttl/3 after
 * the last answered one, so the node is left at most ttl/2 after that,
 * while the lease (counted from that answered one) has ttl/2 to go. A
 * healthy leader answers within milliseconds. ZooKeeper's client similarly
 * gives up on a server that is silent for 2/3 of the session timeout.
 *
 * Lost holds. A lock taken from a session that lives on (an operator's
 * forced release) is announced by a LOST push, which may never arrive: the
 * connection was gone, the leader changed. So the cluster also records the
 * loss until the session acknowledges it, and every keepalive reply says
 * how many such records the session has. A non-zero count makes the client
 * fetch them (LOST_HOLDS, one request in flight, paged by fence), declare
 * each lock it still counts as held lost (the lost callback, BATON_ELOST)
 * and acknowledge each record with a RELEASE of its fence (baton__ack_lost),
 * which the cluster answers BATON_ELOST. The LOST push, when it does
 * arrive, does the same at once. A keepalive goes out every ttl/3 and right
 * after every reconnect, so the client hears of a forced release within a
 * keepalive interval of it, or its lease (counted from before the release)
 * runs out. An unlock already in flight when the loss becomes known is
 * itself the acknowledgement and answers BATON_ELOST instead of running
 * the lost callback.
 *
 * The end of a session (baton__session_lost): the lease ran out here, a
 * SESSION_EXPIRED push came, or the cluster answered BATON_ESESSION. Every
 * held lock is declared lost; every call that the session had sent fails
 * with BATON_ESESSION (an unlock in flight with BATON_ELOST); calls not
 * sent yet are kept for the next session. The context is then GONE: no
 * session until a call needs one (baton__session_reopen), unless kept
 * calls need one at once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/async_int.h"

/* ---- keepalives and the lease ---------------------------------------------------- */

/* The lease the cluster granted (or, if it did not say, the one asked for). */
static uint64_t ttl_of(const baton_async_t *ac)
{
    return ac->ttl_ms ? ac->ttl_ms : ac->session_ttl_ms;
}

uint64_t baton__lease_margin(uint64_t ttl)
{
    uint64_t m = ttl * BATON__LEASE_DRIFT_PER_MILLE / 1000 + BATON__LEASE_DELTA_MS;
    return m > ttl / 2 ? ttl / 2 : m;
}

/* Where the client's lease ends: before the leader's can, even if the
 * leader's clock runs slower than this one (within the margin). */
static uint64_t lease_end(const baton_async_t *ac)
{
    uint64_t ttl = ttl_of(ac);
    return ac->lease_base + ttl - baton__lease_margin(ttl);
}

bool baton__is_keepalive_id(uint64_t req_id)
{
    return req_id >= BATON__KA_ID_BASE;
}

/* Make sure the timer fires for the next keepalive and for the lease's
 * end, whichever comes first. */
static void sched_session(baton_async_t *ac)
{
    if (ac->ka_at) baton__sched(ac, ac->ka_at);
    baton__sched(ac, lease_end(ac));
}

/*
 * Plan the next keepalive ttl/3 from now and, if the connection is ready,
 * send one now. Without a ready connection nothing is sent: the reconnect
 * sends one as soon as it is ready (baton__on_conn_ready).
 */
static void keepalive_send(baton_async_t *ac)
{
    struct msg m = {.type = MSG_KEEPALIVE};
    uint64_t now = baton__now(), every = ttl_of(ac) / 3;

    ac->ka_at = now + (every ? every : 1);
    sched_session(ac);
    if (ac->cstate != BATON__C_READY || !baton__session_known(ac)) return;
    m.req_id = ac->ka_next_id++;
    m.u.keepalive.session = ac->session;
    /* Only ENOMEM can fail here; the next keepalive may do better. */
    if (baton__send_msg(ac, &m) != 0) return;
    ac->ka[ac->ka_pos].id = m.req_id;
    ac->ka[ac->ka_pos].sent_at = now;
    ac->ka[ac->ka_pos].session = ac->session;
    ac->ka[ac->ka_pos].gen = ac->gen;
    ac->ka[ac->ka_pos].answered = false;
    ac->ka_pos = (ac->ka_pos + 1) % BATON__KA_RING;
}

/* The session has just opened: its lease runs from when the OPEN_SESSION
 * was sent, and keepalives start. */
void baton__session_started(baton_async_t *ac, uint64_t open_sent_at)
{
    uint64_t every = ttl_of(ac) / 3;

    ac->lease_base = open_sent_at;
    ac->ka_at = baton__now() + (every ? every : 1);
    memset(ac->ka, 0, sizeof ac->ka);
    sched_session(ac);
}

/* A connection to a node has just passed HELLO: say which session is here
 * (if there is one), then send what waits. */
void baton__on_conn_ready(baton_async_t *ac)
{
    uint64_t gen = ac->gen;

    if (baton__session_known(ac)) keepalive_send(ac);
    if (ac->gen == gen && ac->cstate == BATON__C_READY) baton__flush_unsent(ac);
}

/* The cluster acknowledged a message of the session that was sent at
 * sent_at: the lease runs from then at the earliest. */
void baton__lease_renew(baton_async_t *ac, uint64_t sent_at)
{
    if (sent_at > ac->lease_base) ac->lease_base = sent_at;
}

/* Ask the cluster for the session's lost holds with a fence above
 * `after`, unless such a request is in flight on this connection. */
static void lost_fetch(baton_async_t *ac, uint64_t after)
{
    struct msg m = {.type = MSG_LOST_HOLDS};

    if (ac->cstate != BATON__C_READY || !baton__session_known(ac)) return;
    if (ac->lost_fetch_id != 0 && ac->lost_fetch_gen == ac->gen && after == 0) return;
    m.req_id = ac->ka_next_id++;
    m.u.lost_holds.session = ac->session;
    m.u.lost_holds.after = after;
    if (baton__send_msg(ac, &m) != 0) return; /* ENOMEM: the next keepalive asks again */
    ac->lost_fetch_id = m.req_id;
    ac->lost_fetch_gen = ac->gen;
}

/* The answer to keepalive req_id: OK renews the lease from its send time
 * and, when the session has lost holds (n_lost), fetches them;
 * BATON_ESESSION ends the session; anything else is ignored. */
void baton__on_keepalive_reply(baton_async_t *ac, uint64_t req_id, int status, uint64_t n_lost)
{
    unsigned i;

    for (i = 0; i < BATON__KA_RING; i++)
        if (ac->ka[i].id == req_id) break;
    if (i == BATON__KA_RING || ac->ka[i].session != ac->session || !baton__session_known(ac))
        return;
    ac->ka[i].answered = true;
    if (status == 0) {
        baton__lease_renew(ac, ac->ka[i].sent_at);
        if (n_lost > 0) lost_fetch(ac, 0);
    } else if (status == BATON_ESESSION) {
        baton__seterr(ac, "session %llu: the cluster answered a keepalive: expired or unknown",
                      (unsigned long long)ac->session);
        baton__session_lost(ac);
    }
}

/* How long a keepalive may wait for its answer before its node is left. */
static uint64_t silence_limit(const baton_async_t *ac)
{
    uint64_t s = ttl_of(ac) / 6;
    return s ? s : 1;
}

/* The send time of the oldest keepalive still unanswered on the current
 * connection, 0 if there is none. */
static uint64_t oldest_unanswered(const baton_async_t *ac)
{
    uint64_t t = 0;

    if (ac->cstate != BATON__C_READY) return 0;
    for (unsigned i = 0; i < BATON__KA_RING; i++) {
        const struct baton__ka_slot *k = &ac->ka[i];
        if (k->id == 0 || k->answered || k->gen != ac->gen || k->session != ac->session)
            continue;
        if (t == 0 || k->sent_at < t) t = k->sent_at;
    }
    return t;
}

bool baton__session_lease_check(baton_async_t *ac, uint64_t now)
{
    if (!baton__session_known(ac) || now < lease_end(ac)) return true;
    baton__seterr(ac,
                  "session %llu: its lease ran out here: nothing was acknowledged by the "
                  "cluster for %llu ms (the ttl) after it was sent",
                  (unsigned long long)ac->session, (unsigned long long)ttl_of(ac));
    baton__session_lost(ac);
    return false;
}

/*
 * Timer fired: end the session if its lease ran out here, leave a node
 * that let a keepalive go unanswered too long, and send the keepalive that
 * is due. Returns false if the session ended (its requests are settled
 * already).
 */
bool baton__session_check_timers(baton_async_t *ac, uint64_t now)
{
    uint64_t waiting;

    if (!baton__session_known(ac)) return true;
    if (!baton__session_lease_check(ac, now)) return false;
    waiting = oldest_unanswered(ac);
    if (waiting && now >= waiting + silence_limit(ac)) {
        baton__seterr(ac, "%s left a keepalive unanswered for %llu ms: trying another node",
                      ac->cur_text, (unsigned long long)(now - waiting));
        baton__conn_fail(ac, false); /* the next connection sends a keepalive first */
    }
    if (ac->ka_at && now >= ac->ka_at) keepalive_send(ac);
    return true;
}

/* The next keepalive or the lease's end, whichever is first (0: none). */
uint64_t baton__session_next_timer(const baton_async_t *ac)
{
    uint64_t t, waiting;

    if (!baton__session_known(ac)) return 0;
    t = lease_end(ac);
    if (ac->ka_at && ac->ka_at < t) t = ac->ka_at;
    waiting = oldest_unanswered(ac);
    if (waiting && waiting + silence_limit(ac) < t) t = waiting + silence_limit(ac);
    return t;
}

/* ---- held locks --------------------------------------------------------------------- */

/* Lock call t (with a caller) was granted with fence: its reserved entry
 * joins the held locks. */
void baton__held_add(baton_async_t *ac, struct baton__req *t, uint64_t fence)
{
    struct baton__req *h = t->held;

    if (h == NULL) return;
    t->held = NULL;
    baton__owners_granted(t, h);
    h->session = ac->session;
    h->waiter = t->id;
    h->fence = fence;
    h->state = BATON__H_HELD;
    h->status = 0;
    h->next = NULL;
    h->prev = ac->held_tail;
    if (ac->held_tail)
        ac->held_tail->next = h;
    else
        ac->held_head = h;
    ac->held_tail = h;
    h->in_held = true;
    /* Fences are unique; a map that cannot grow (or a fence seen twice,
     * which a sane cluster never sends) leaves the entry to the list,
     * which lookups then scan. */
    if (fence == 0 || u64map_get(&ac->held_map, fence) != NULL ||
        u64map_put(&ac->held_map, fence, h) != 0)
        ac->held_unmapped++;
}

static bool held_matches(const struct baton__req *h, uint64_t fence, const char *name, size_t n)
{
    return h->fence == fence && h->name_len == n && memcmp(h->name, name, n) == 0;
}

/* The held lock granted with fence, if its name is `name`; else NULL. */
struct baton__req *baton__held_find(const baton_async_t *ac, uint64_t fence, const char *name,
                                    size_t name_len)
{
    struct baton__req *h = u64map_get(&ac->held_map, fence);

    if (h && held_matches(h, fence, name, name_len)) return h;
    if (ac->held_unmapped == 0) return NULL;
    for (h = ac->held_head; h; h = h->next)
        if (held_matches(h, fence, name, name_len)) return h;
    return NULL;
}

/* Forget a held lock; the entry is freed unless its lost callback is
 * still queued (run_completions frees it then). */
void baton__held_remove(baton_async_t *ac, struct baton__req *h)
{
    if (!h->in_held) return;
    if (h->prev)
        h->prev->next = h->next;
    else
        ac->held_head = h->next;
    if (h->next)
        h->next->prev = h->prev;
    else
        ac->held_tail = h->prev;
    h->prev = h->next = NULL;
    h->in_held = false;
    if (u64map_get(&ac->held_map, h->fence) == h)
        u64map_del(&ac->held_map, h->fence);
    else
        ac->held_unmapped--;
    if (!h->in_done) baton__req_free(h);
}

/* Declare held lock h lost (once): its lost callback is queued with why
 * and the context's current message, which the caller has set. The other
 * handles of the same grant (reentrant calls: entries with h's fence and
 * name) are lost with it, without a callback of their own -- the lost
 * callback runs once per grant -- so that unlocking each of them answers
 * BATON_ELOST at once, as for h. */
void baton__held_lost(baton_async_t *ac, struct baton__req *h, int why)
{
    if (h->state != BATON__H_HELD) return;
    h->state = BATON__H_LOST;
    h->status = why;
    baton__queue_done(ac, h);
    for (struct baton__req *o = ac->held_head; o; o = o->next) {
        if (o == h || o->state != BATON__H_HELD || !held_matches(o, h->fence, h->name, h->name_len))
            continue;
        o->state = BATON__H_LOST;
        o->status = why;
    }
}

/* The session is over: every lock it holds is lost (those being unlocked
 * are settled by their RELEASE instead: see baton__session_lost). */
void baton__held_all_lost(baton_async_t *ac)
{
    for (struct baton__req *h = ac->held_head; h; h = h->next)
        if (h->session == ac->session && ac->session != 0) baton__held_lost(ac, h, BATON_ESESSION);
}

/* The context is being freed: drop every entry (their callbacks, if any
 * were queued, have run). */
void baton__held_free_all(baton_async_t *ac)
{
    struct baton__req *h, *next;

    for (h = ac->held_head; h; h = next) {
        next = h->next;
        h->prev = h->next = NULL;
        h->in_held = false;
        if (!h->in_done) baton__req_free(h);
    }
    ac->held_head = ac->held_tail = NULL;
    ac->held_unmapped = 0;
}

/*
 * The cluster took the hold of `name` with `fence` away from the session
 * (why: BATON_ESESSION for an expiry, BATON_ELOST for a forced release),
 * as a LOST push or a lost-hold record says. A lock the context still
 * holds is declared lost; one being unlocked learns it from its RELEASE's
 * answer. A forced release's record is acknowledged (baton__ack_lost)
 * unless that RELEASE does it.
 */
static void hold_taken(baton_async_t *ac, const char *name, size_t n, uint64_t fence, int why)
{
    struct baton__req *h = baton__held_find(ac, fence, name, n);

    if (h != NULL && h->session != ac->session) h = NULL;
    if (h != NULL && h->state == BATON__H_RELEASING) {
        /* Its RELEASE will be answered ELOST (or ENOTHELD): report
         * BATON_ELOST then; it acknowledges the record too. */
        h->status = why;
        return;
    }
    if (why == BATON_ELOST) baton__ack_lost(ac, name, n, fence);
    if (h == NULL || h->state != BATON__H_HELD) return;
    if (why == BATON_ELOST)
        baton__seterr(ac, "lock '%s' (fence %llu) was taken away: an operator forced its release",
                      h->name, (unsigned long long)h->fence);
    else
        baton__seterr(ac, "lock '%s' (fence %llu) was lost: session %llu expired in the cluster",
                      h->name, (unsigned long long)h->fence, (unsigned long long)ac->session);
    baton__held_lost(ac, h, why);
}

/* A LOST push: the cluster took one lock away from the session. */
void baton__on_lost_push(baton_async_t *ac, const struct msg *m)
{
    int why = m->u.push.status == BATON_ESESSION ? BATON_ESESSION : BATON_ELOST;

    if (m->u.push.session != ac->session || !baton__session_known(ac)) return;
    hold_taken(ac, m->u.push.lock.p, m->u.push.lock.n, m->u.push.fence, why);
}

/* LOST_HOLDS_R: a page of the session's lost holds. Each is declared and
 * acknowledged; the next page, if any, is asked for at once. */
void baton__on_lost_holds(baton_async_t *ac, const struct msg *m)
{
    const struct msg_lost_holds_r *r = &m->u.lost_holds_r;
    uint64_t last = 0;

    if (m->req_id != ac->lost_fetch_id || ac->lost_fetch_id == 0) return;
    ac->lost_fetch_id = 0;
    if (!baton__session_known(ac) || ac->lost_fetch_gen != ac->gen) return;
    for (uint32_t i = 0; i < r->n; i++) {
        const struct msg_lost_hold *l = &r->items[i];
        /* A record is only ever left by a forced release (the end of a
         * session deletes them): BATON_ELOST, whatever its status says. */
        hold_taken(ac, l->lock.p, l->lock.n, l->fence, BATON_ELOST);
        last = l->fence;
        if (!baton__session_known(ac)) return; /* an ack's send failed the session */
    }
    if (r->more && last != 0) lost_fetch(ac, last);
}

/* An ERROR answered the LOST_HOLDS req_id: the next keepalive asks again. */
void baton__on_lost_holds_error(baton_async_t *ac, uint64_t req_id)
{
    if (req_id == ac->lost_fetch_id) ac->lost_fetch_id = 0;
}

/* ---- the end of a session and a fresh one --------------------------------------- */

/* Is r a RELEASE of a lock the context holds (and is releasing)? Then
 * returns that lock's entry. */
static struct baton__req *releasing_entry(const baton_async_t *ac, const struct baton__req *r)
{
    struct baton__req *h;

    if (r->kind != BATON__K_RELEASE) return NULL;
    h = baton__held_find(ac, r->fence, r->name, r->name_len);
    return h && h->state == BATON__H_RELEASING && h->target == r->id ? h : NULL;
}

/*
 * The session is over (see the top of the file); the caller has set the
 * error message, which goes with every callback this runs. Order of the
 * callbacks: the lost callbacks of the held locks, then the calls that
 * fail, in the order they were made.
 */
void baton__session_lost(baton_async_t *ac)
{
    struct baton__req *r, *next, *h, *close = NULL;
    bool kept = false;

    if (!baton__session_known(ac)) return;
    baton__held_all_lost(ac);
    for (r = ac->head; r; r = next) {
        next = r->next;
        if (r->kind == BATON__K_CLOSE) {
            close = r;
            continue;
        }
        if (r->kind == BATON__K_WATCH) continue; /* sessionless: lives on */
        h = releasing_entry(ac, r);
        if (h) {
            /* Released by this unlock or by the end of the session: the
             * caller cannot know which, and the lock may have been lost
             * before the unlock was called. */
            baton__held_remove(ac, h);
            baton__finish(ac, r, BATON_ELOST, 0);
            continue;
        }
        if (r->user && !r->ever_sent &&
            (r->kind == BATON__K_ACQUIRE || r->kind == BATON__K_RELEASE)) {
            kept = true; /* never part of the old session: goes to the next */
            continue;
        }
        baton__finish(ac, r, BATON_ESESSION, 0);
    }
    ac->session = 0;
    ac->ka_at = 0;
    if (close) {
        /* The session was being closed anyway: it is. */
        baton__session_closed(ac, close, 0);
        return;
    }
    ac->sstate = BATON__S_GONE;
    if (kept && baton__session_reopen(ac) != 0) {
        baton__seterr(ac, "cannot open a fresh session: out of memory");
        baton__fail_all(ac, BATON_ENOMEM, NULL);
    }
}

/*
 * Open a fresh session for calls made while the context has none (GONE).
 * The OPEN request owes no caller a callback but the session callback
 * (r->notify); it is bounded by connect_timeout_ms like the first open,
 * and if it fails the calls waiting for it fail with it and the context
 * is GONE again (async_ops.c: open_failed). Returns 0 or BATON_ENOMEM.
 */
int baton__session_reopen(baton_async_t *ac)
{
    struct baton__req *r;

    if (ac->sstate != BATON__S_GONE) return 0;
    r = baton__req_new(ac, BATON__K_OPEN, NULL, 0);
    if (r == NULL) return BATON_ENOMEM;
    r->reopen = true;
    r->notify = true;
    r->nonce = baton__nonce(ac);
    ac->sstate = BATON__S_OPENING;
    baton__set_deadline(ac, r, baton__now() + ac->connect_timeout_ms);
    if (ac->cstate == BATON__C_READY)
        baton__try_send(ac, r);
    else
        baton__conn_start(ac);
    return 0;
}
