/*
 * test_access.c -- access control fails closed (server/access_rule.c).
 *
 * Every request type of proto/msg_table.h is sent by a principal of every
 * role, with and without prefixes, naming its own session, another
 * principal's, an unknown one, lock names inside and outside the
 * prefixes. The test fills each request from the row's session and locks
 * columns by its own reading of them, and computes what the table allows;
 * a request the decision lets through that the table does not allow fails
 * the test, and so does one it refuses that the table allows. A row whose
 * body carries a session or a lock name but whose columns leave them NONE
 * (below ADMIN) fails too, and so does every type that is not a request.
 */
#include <string.h>

#include "proto/msg.h"
#include "server/access_rule.h"
#include "server/auth.h"
#include "tests/lib/runner.h"

enum { L_NONE, L_ONE, L_MANY, L_PREFIX, L_GIVE_BACK };

/* What the test read of a row's access columns while filling a request. */
struct want {
    bool session;
    int locks;
};

/* One way of filling the session and lock names of a request. */
struct variant {
    const char *what;
    uint64_t session;
    struct pstr name, prefix;
    struct msg_lock_name more[2];
    bool out_first, out_more; /* name (or prefix), or a further name, is outside "app/" */
};

enum { MINE = 101, THEIRS = 202, UNKNOWN = 303 };

#define P(s) {s, sizeof s - 1}
static struct variant variants[] = {
    {"inside", MINE, P("app/x"), P("app/"), {{P("app/y")}, {P("app/z")}}, false, false},
    {"another's session", THEIRS, P("app/x"), P("app/"), {{P("app/y")}, {P("app/z")}}, false,
     false},
    {"an unknown session", UNKNOWN, P("app/x"), P("app/"), {{P("app/y")}, {P("app/z")}}, false,
     false},
    {"the name outside", MINE, P("zzz/x"), P("ap"), {{P("app/y")}, {P("app/z")}}, true, false},
    {"a further name outside", MINE, P("app/x"), P("app/"), {{P("app/y")}, {P("zzz/z")}}, false,
     true},
};
#undef P

/* fill_<NAME>(m, v, w): the row's session and lock members from v. */
#define FILL_SESSION_NONE
#define FILL_SESSION_SESSION(mem) b->mem = v->session, w->session = true;
#define FILL_LOCKS_NONE
#define FILL_LOCKS_ONE(mem) b->mem = v->name, w->locks = L_ONE;
#define FILL_LOCKS_MANY(mem, n, vv) b->mem = v->name, b->n = 2, b->vv = v->more, w->locks = L_MANY;
#define FILL_LOCKS_PREFIX(mem) b->mem = v->prefix, w->locks = L_PREFIX;
#define FILL_LOCKS_GIVE_BACK(mem) b->mem = v->name, w->locks = L_GIVE_BACK;
#define X(name, wire, dir, leader, role, session, locks, body, flds)                  \
    static void fill_##name(struct msg *m, struct variant *v, struct want *w)         \
    {                                                                                 \
        struct msg_##body *b = &m->u.body;                                            \
        (void)b;                                                                      \
        (void)v;                                                                      \
        (void)w;                                                                      \
        FILL_SESSION_##session FILL_LOCKS_##locks                                     \
    }
BATON_MESSAGES(X)
#undef X

typedef void fill_fn(struct msg *m, struct variant *v, struct want *w);
static fill_fn *const fills[MSG_TYPE_MAX_] = {
#define X(name, wire, dir, leader, role, session, locks, body, flds) [wire] = fill_##name,
    BATON_MESSAGES(X)
#undef X
};

/* What the body carries, read from the fields column: a U64 called
 * session, and lock names (LOCK fields, lists of lock_name). */
struct carries {
    int session, locks;
};
#define U8(m)
#define U32(m)
#define I32(m)
#define I64(m)
#define I32_MIN(m, min)
#define STR(m, max)
#define U64(m) c.session += strcmp(#m, "session") == 0;
#define LOCK(m) c.locks++;
#define LIST(n, v, max, it) c.locks += strcmp(#it, "lock_name") == 0;
static struct carries carries_of(int type)
{
    struct carries c = {0, 0};

    switch (type) {
#define X(name, wire, dir, leader, role, session, locks, body, flds) \
    case wire: flds break;
        BATON_MESSAGES(X)
#undef X
    default: break;
    }
    return c;
}
#undef U8
#undef U32
#undef I32
#undef I64
#undef I32_MIN
#undef STR
#undef U64
#undef LOCK
#undef LIST

/* The sessions: MINE is the principal's, THEIRS another's, UNKNOWN none. */
static bool owner_of(void *ctx, uint64_t session, uint64_t *owner)
{
    const struct principal *p = ctx;

    if (session == MINE) *owner = p->key;
    else if (session == THEIRS) *owner = p->key ^ 1;
    else return false;
    return true;
}

/* The table's answer for p sending m filled by v, and why not ("" if
 * allowed), computed from the row. */
static bool table_allows(const struct principal *p, const struct msg_info *info,
                         const struct want *w, const struct variant *v, char *why, size_t size)
{
    why[0] = '\0';
    if (p->role < info->role) {
        snprintf(why, size, "it needs role %s, not %s", auth_role_name(info->role),
                 auth_role_name(p->role));
        return false;
    }
    if (w->session && v->session == THEIRS) {
        snprintf(why, size, "the session belongs to another principal");
        return false;
    }
    if (p->role == MSG_ROLE_ADMIN || p->n_prefixes == 0) return true;
    if ((w->locks == L_ONE || w->locks == L_MANY) && v->out_first) {
        snprintf(why, size, "lock '%.*s' is outside its prefixes", v->name.n, v->name.p);
        return false;
    }
    if (w->locks == L_MANY && v->out_more) {
        snprintf(why, size, "lock '%.*s' is outside its prefixes", v->more[1].name.n,
                 v->more[1].name.p);
        return false;
    }
    if (w->locks == L_PREFIX && v->out_first) {
        snprintf(why, size, "list only within its prefixes (give one of them as the prefix)");
        return false;
    }
    return true;
}

static struct auth principals;

static void load_principals(void)
{
    static const char text[] = "reader read cert\n"
                               "reader-p read cert prefixes=app/\n"
                               "client client cert\n"
                               "client-p client cert prefixes=app/\n"
                               "admin admin cert\n"
                               "admin-p admin cert prefixes=app/\n";
    char err[256];

    if (auth_parse(text, sizeof text - 1, "test", &principals, err, sizeof err) != 0)
        FAIL("%s", err);
}

/* Every principal of the file, and each again with role NONE. */
static size_t principal_count(void) { return principals.n * 2; }
static struct principal principal_at(size_t i)
{
    struct principal p = principals.v[i % principals.n];

    if (i >= principals.n) p.role = MSG_ROLE_NONE;
    return p;
}

TEST(every_request_every_principal_as_the_table_says)
{
    unsigned checked = 0, allowed = 0;

    load_principals();
    for (int t = 1; t < MSG_TYPE_MAX_; t++) {
        const struct msg_info *info = msg_info(t);
        if (info == NULL || info->dir != MSG_C2S) continue;
        for (size_t i = 0; i < principal_count(); i++) {
            struct principal p = principal_at(i);
            for (size_t k = 0; k < sizeof variants / sizeof variants[0]; k++) {
                struct msg m;
                struct want w = {false, L_NONE};
                char why[200], expect[200];
                bool got, want;

                memset(&m, 0, sizeof m);
                m.type = (uint16_t)t;
                fills[t](&m, &variants[k], &w);
                want = table_allows(&p, info, &w, &variants[k], expect, sizeof expect);
                why[0] = '\0';
                got = access_decide(&p, &m, owner_of, &p, why, sizeof why);
                if (got && !want)
                    FAIL("%s by '%s' (role %d) with %s: allowed, the table refuses (%s)",
                         info->name, p.name, p.role, variants[k].what, expect);
                if (!got && want)
                    FAIL("%s by '%s' (role %d) with %s: refused (%s), the table allows",
                         info->name, p.name, p.role, variants[k].what, why);
                if (!got && strcmp(why, expect) != 0)
                    FAIL("%s by '%s' with %s: refused because '%s', not '%s'", info->name,
                         p.name, variants[k].what, why, expect);
                checked++;
                allowed += got;
            }
        }
    }
    ASSERT_GT(checked, 0);
    ASSERT_GT(allowed, 0);
    ASSERT_LT(allowed, checked);
    auth_free(&principals);
}

TEST(a_row_with_a_session_or_lock_field_declares_it)
{
    for (int t = 1; t < MSG_TYPE_MAX_; t++) {
        const struct msg_info *info = msg_info(t);
        struct carries c = carries_of(t);
        struct variant v = variants[0];
        struct want w = {false, L_NONE};
        struct msg m;

        if (info == NULL || info->dir != MSG_C2S) continue;
        memset(&m, 0, sizeof m);
        m.type = (uint16_t)t;
        fills[t](&m, &v, &w);
        if (w.locks == L_GIVE_BACK && !w.session)
            FAIL("%s gives a lock back but names no session whose ownership allows it",
                 info->name);
        if (info->role >= MSG_ROLE_ADMIN) continue;
        if (c.session > 0 && !w.session)
            FAIL("%s carries a session but its session column is NONE", info->name);
        if (c.locks > 0 && w.locks == L_NONE)
            FAIL("%s carries a lock name but its locks column is NONE", info->name);
    }
}

TEST(what_is_not_a_request_is_refused_to_everyone)
{
    const int extra[] = {0, MSG_TYPE_MAX_, MSG_TYPE_MAX_ + 1, 999, 65535};
    unsigned refused = 0;

    load_principals();
    for (size_t i = 0; i < principal_count(); i++) {
        struct principal p = principal_at(i);
        for (int t = 0; t < MSG_TYPE_MAX_ + 5; t++) {
            const struct msg_info *info = msg_info(t);
            struct msg m;
            char why[200] = "";

            if (t < MSG_TYPE_MAX_ && info != NULL && info->dir == MSG_C2S) continue;
            memset(&m, 0, sizeof m);
            m.type = (uint16_t)(t < MSG_TYPE_MAX_ ? t : extra[t - MSG_TYPE_MAX_]);
            if (access_decide(&p, &m, owner_of, &p, why, sizeof why))
                FAIL("type %d (%s) allowed for '%s'", m.type, msg_type_name(m.type), p.name);
            ASSERT_STREQ(why, "it is not a request");
            refused++;
        }
    }
    ASSERT_GT(refused, 0);
    auth_free(&principals);
}

/* Only a raft port reachable from elsewhere, without mutual TLS, beside a
 * secured client port is reported (the warning batond logs at start). */
TEST(a_plaintext_raft_port_beside_a_secured_client_port_is_exposed)
{
    ASSERT(access_raft_exposed(true, false, "10.0.0.5:7101"));
    ASSERT(access_raft_exposed(true, false, "[2001:db8::1]:7101"));
    ASSERT(access_raft_exposed(true, false, "db1.example.com:7101"));
    ASSERT(!access_raft_exposed(true, true, "10.0.0.5:7101"));   /* mutual TLS */
    ASSERT(!access_raft_exposed(false, false, "10.0.0.5:7101")); /* nothing secured to lose */
    ASSERT(!access_raft_exposed(true, false, "127.0.0.1:7101"));
    ASSERT(!access_raft_exposed(true, false, "[::1]:7101"));
    ASSERT(!access_raft_exposed(true, false, "[::ffff:127.0.0.2]:7101"));
    ASSERT(!access_raft_exposed(true, false, "localhost:7101"));
    ASSERT(!access_raft_exposed(true, false, "not an address"));
}

int main(int argc, char **argv)
{
    runner_init(argc, argv);
    RUN(every_request_every_principal_as_the_table_says);
    RUN(a_row_with_a_session_or_lock_field_declares_it);
    RUN(what_is_not_a_request_is_refused_to_everyone);
    RUN(a_plaintext_raft_port_beside_a_secured_client_port_is_exposed);
    return runner_done();
}
