/*
 * owners.c -- whose each lock call and each held lock is (baton_async.h and
 * baton.h, "Owners"), and what that makes of an ACQUIRE on the wire.
 *
 * The cluster knows only the session; the owners are the client's. Every
 * lock call claims its names for its owner (baton_lock_args.owner; the
 * blocking API's calling thread) in an index by name, from the call until
 * the cluster has let go of what it got: the claim belongs to the ACQUIRE
 * while it is pending and moves to its held-lock entry when it is granted
 * (baton__owners_granted), and goes when either is freed. Before a single
 * name's ACQUIRE is sent, the other claims on that name decide what it
 * is (baton__owners_claim):
 *   - a claim of the same owner (owner 0 is every owner, and every owner
 *     is owner 0's) that holds or waits: BATON_EDEADLK at once, unless the
 *     call is reentrant and the owner holds the name -- then it re-enters
 *     that hold. It goes as a plain reentrant ACQUIRE when that hold is
 *     all the context has on the name (the cluster then re-enters the
 *     session's only hold, as it always did), else as ACQUIRE2 with
 *     BATON_ACQ_OWNERS, reentrant, and the hold's fence;
 *   - claims of other owners only: ACQUIRE2 with BATON_ACQ_OWNERS, so that
 *     the cluster queues it behind them like another session's request
 *     (reentrant dropped: there is nothing of this owner's to re-enter);
 *   - no claim: a plain ACQUIRE, exactly as before owners existed, which
 *     any node of protocol 5 or a cluster below feature level 3 takes.
 * Claims the cluster may still count but no caller owns -- a lock call
 * abandoned after a timeout whose CANCEL is in flight (the grant may win
 * it: then the session holds the lock until a RELEASE sent after this
 * call), a held lock whose RELEASE is in flight -- are nobody's: they
 * make a call go with BATON_ACQ_OWNERS, never fail it. A held lock
 * declared lost is no longer the session's in the cluster (a forced
 * release dropped it; an ended session took it along) and counts for
 * nothing, and so does a held lock of an earlier session.
 *
 * A multi-lock claims all its names, so that single-name calls of other
 * owners see it, but is itself sent as ever: the cluster refuses it with
 * BATON_EDEADLK when the session holds or waits for any of its names,
 * whoever the owner.
 *
 * The index: ac->owners maps a 64-bit hash of a name (FNV-1a; never 0) to
 * a bucket, the list of the claimed names with that hash (several names
 * may share one). A bucket is allocated with its first name and freed
 * with its last, so that a claim costs memory only at call time (where
 * BATON_ENOMEM can be returned) and never when a grant moves it.
 */
#include <stdlib.h>
#include <string.h>

#include "client/async_int.h"

/* One claimed name: a link in its bucket's list. */
struct baton__use {
    struct baton__use *prev, *next;
    struct baton__claim *claim;
    uint64_t key;
    uint16_t len;
    const char *name; /* into the claim's bytes */
};

struct baton__claim {
    baton_async_t *ac;
    struct baton__req *r; /* the ACQUIRE while pending, then its K_HELD entry */
    uint64_t owner;
    unsigned n;           /* names (uses); more than 1: a multi-lock */
    struct baton__use use[];
    /* then the names' bytes */
};

struct bucket {
    struct baton__use *head;
};

static void use_unlink(baton_async_t *ac, struct baton__use *u)
{
    struct bucket *b = u64map_get(&ac->owners, u->key);

    if (b == NULL) return; /* never linked (a claim that failed half way) */
    if (u->prev)
        u->prev->next = u->next;
    else if (b->head == u)
        b->head = u->next;
    else
        return; /* not in the list */
    if (u->next) u->next->prev = u->prev;
    u->prev = u->next = NULL;
    if (b->head == NULL) free(u64map_del(&ac->owners, u->key));
}

static int use_link(baton_async_t *ac, struct baton__use *u)
{
    struct bucket *b = u64map_get(&ac->owners, u->key);

    if (b == NULL) {
        b = calloc(1, sizeof *b);
        if (b == NULL) return BATON_ENOMEM;
        if (u64map_put(&ac->owners, u->key, b) != 0) {
            free(b);
            return BATON_ENOMEM;
        }
    }
    u->prev = NULL;
    u->next = b->head;
    if (b->head) b->head->prev = u;
    b->head = u;
    return 0;
}

static void claim_free(struct baton__claim *c)
{
    for (unsigned i = 0; i < c->n; i++) use_unlink(c->ac, &c->use[i]);
    free(c);
}

/* A claim of r's names (r->name, then its more names) for owner, linked
 * nowhere yet. NULL when out of memory. */
static struct baton__claim *claim_new(baton_async_t *ac, struct baton__req *r, uint64_t owner)
{
    size_t bytes = r->name_len, n = 1 + r->n_more;
    struct baton__claim *c;
    char *p;

    for (uint32_t i = 0; i < r->n_more; i++) bytes += r->more[i].name.n;
    c = calloc(1, sizeof *c + n * sizeof c->use[0] + bytes);
    if (c == NULL) return NULL;
    c->ac = ac;
    c->r = r;
    c->owner = owner;
    c->n = (unsigned)n;
    p = (char *)&c->use[n];
    for (size_t i = 0; i < n; i++) {
        const char *s = i == 0 ? r->name : r->more[i - 1].name.p;
        uint16_t len = i == 0 ? r->name_len : r->more[i - 1].name.n;
        memcpy(p, s, len);
        c->use[i] = (struct baton__use){.claim = c, .key = u64map_key(p, len), .len = len, .name = p};
        p += len;
    }
    return c;
}

/* What a claim on the name is to a new call (see the top of the file). */
enum stake { STAKE_NONE, STAKE_NOBODY, STAKE_WAIT, STAKE_HOLD };

static enum stake stake_of(const baton_async_t *ac, const struct baton__claim *c)
{
    const struct baton__req *r = c->r;

    if (r->kind == BATON__K_ACQUIRE) /* out of the table: ended, its callback still due */
        return !r->in_table ? STAKE_NONE : r->user ? STAKE_WAIT : STAKE_NOBODY;
    if (r->session != ac->session || ac->session == 0) return STAKE_NONE;
    switch (r->state) {
    case BATON__H_HELD:
        return STAKE_HOLD;
    case BATON__H_RELEASING:
        return STAKE_NOBODY;
    default:
        return STAKE_NONE; /* lost */
    }
}

static bool same_owner(uint64_t a, uint64_t b)
{
    return a == b || a == 0 || b == 0;
}

/* Decide how single-name ACQUIRE r of owner goes (the top of the file):
 * sets r->acq_flags, r->acq_fence and r->reentrant, or returns a refusal. */
static int decide(baton_async_t *ac, struct baton__req *r, uint64_t owner, const struct bucket *b)
{
    const struct baton__req *hold = NULL;
    bool mine = false, others = false, only_this_owner = true;

    for (const struct baton__use *u = b ? b->head : NULL; u; u = u->next) {
        const struct baton__claim *c = u->claim;
        enum stake st;

        if (u->len != r->name_len || memcmp(u->name, r->name, u->len) != 0) continue;
        st = stake_of(ac, c);
        if (st == STAKE_NONE) continue;
        if (st == STAKE_NOBODY || !same_owner(owner, c->owner)) {
            others = true;
            only_this_owner = false;
            continue;
        }
        mine = true;
        if (c->owner != owner) only_this_owner = false;
        if (st == STAKE_HOLD && c->n == 1 && (hold == NULL || c->r->fence < hold->fence))
            hold = c->r;
    }
    r->acq_flags = 0;
    r->acq_fence = 0;
    if (mine) {
        if (!r->reentrant) return BATON__OWNERS_HAS;
        if (hold == NULL) return BATON__OWNERS_WAITS;
        if (!only_this_owner) {
            r->acq_flags = BATON_ACQ_OWNERS;
            r->acq_fence = hold->fence;
        }
        return 0;
    }
    if (others) {
        r->acq_flags = BATON_ACQ_OWNERS;
        r->reentrant = 0;
    }
    return 0;
}

int baton__owners_claim(baton_async_t *ac, struct baton__req *r, uint64_t owner)
{
    struct baton__claim *c;
    int rv = 0;

    if (r->n_more == 0) {
        rv = decide(ac, r, owner, u64map_get(&ac->owners, u64map_key(r->name, r->name_len)));
        if (rv != 0) return rv;
    }
    c = claim_new(ac, r, owner);
    if (c == NULL) return BATON_ENOMEM;
    for (unsigned i = 0; i < c->n && rv == 0; i++) rv = use_link(ac, &c->use[i]);
    if (rv != 0) {
        claim_free(c);
        return rv;
    }
    r->claim = c;
    return 0;
}

void baton__owners_granted(struct baton__req *acquire, struct baton__req *held)
{
    held->claim = acquire->claim;
    acquire->claim = NULL;
    if (held->claim) held->claim->r = held;
}

void baton__owners_drop(struct baton__req *r)
{
    if (r->claim == NULL) return;
    claim_free(r->claim);
    r->claim = NULL;
}

void baton__owners_free(baton_async_t *ac)
{
    for (size_t i = 0; i < ac->owners.cap; i++)
        if (ac->owners.slots[i].key != 0) free(ac->owners.slots[i].val);
    u64map_free(&ac->owners);
}
