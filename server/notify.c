/*
 * notify.c -- tell a service manager (systemd's Type=notify) how the node
 * is doing, through sd_notify: READY=1 once the node serves its part,
 * STATUS= lines when its role or leader changes, STOPPING=1 when it starts
 * to shut down.
 *
 * sd_notify does nothing without $NOTIFY_SOCKET, and neither does this
 * file: notify_init starts its timer only when the variable is set, so a
 * node outside systemd pays nothing. (MAINPID is not sent: batond is the
 * process systemd started.)
 *
 * Ready means: this node is a voter of its raft configuration (a --join
 * node: once the leader has added and promoted it), it knows a leader (or
 * is the ready leader), and it has applied every entry up to the commit
 * index it saw when it first knew that leader. A unit that orders a
 * rolling restart on READY=1 (systemctl restart waits for it) thus starts
 * the next node only once this one has caught up.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <systemd/sd-daemon.h>

#include "server/log.h"
#include "server/server_int.h"

#define NOTIFY_POLL_MS 50

/* sd_notify with a formatted state; a failure is logged once at debug
 * level (the manager may have gone, which is no reason to stop). */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char text[256];
    va_list ap;
    int rv;

    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    rv = sd_notify(0, text);
    if (rv < 0) log_debug("sd_notify(%s) failed: %d", text, rv);
}

/* Is this node a voter of the configuration it knows? */
static bool is_voter(struct server *srv)
{
    struct node_server sv[BATON_MAX_MEMBERS];
    uint32_t n = srv->nio->members(srv->node, sv, BATON_MAX_MEMBERS);

    for (uint32_t i = 0; i < n; i++)
        if (sv[i].id == srv->cfg.node.id) return sv[i].role == MEMBER_VOTER;
    return false;
}

/* The node's role in a few words, for STATUS=. */
static void say_role(struct server *srv, const struct node_status *st)
{
    switch (st->role) {
    case ROLE_LEADER:
        if (srv->ready)
            say("STATUS=leader, term %llu", (unsigned long long)st->term);
        else
            say("STATUS=elected leader of term %llu, committing its first entry",
                (unsigned long long)st->term);
        break;
    case ROLE_FOLLOWER:
        if (st->leader_id != 0)
            say("STATUS=follower of node %u, term %llu", st->leader_id,
                (unsigned long long)st->term);
        else
            say("STATUS=follower, no leader known, term %llu", (unsigned long long)st->term);
        break;
    case ROLE_CANDIDATE:
        say("STATUS=candidate, term %llu", (unsigned long long)st->term);
        break;
    default:
        say("STATUS=stopped: a local failure (see the log)");
    }
}

/* Ready yet? Called every NOTIFY_POLL_MS until READY=1 is sent. */
static void check_ready(struct server *srv, const struct node_status *st)
{
    struct notify *nf = &srv->notify;
    bool leader_known = st->role == ROLE_LEADER ? srv->ready : st->leader_id != 0;

    if (st->fault != 0 || !leader_known || !is_voter(srv)) {
        nf->catch_up_to = 0;
        return;
    }
    if (nf->catch_up_to == 0) nf->catch_up_to = st->commit_index ? st->commit_index : 1;
    if (st->applied_index < nf->catch_up_to) return;
    nf->ready_sent = true;
    log_info("ready: applied %llu, the commit index when it first knew its leader",
             (unsigned long long)st->applied_index);
    say("READY=1");
}

static void poll_cb(uv_timer_t *t)
{
    struct server *srv = t->data;
    struct notify *nf = &srv->notify;
    struct node_status st;

    if (srv->stopping) return;
    srv->nio->get_status(srv->node, &st);
    if (!nf->ready_sent) check_ready(srv, &st);
    if (st.role != nf->role || st.leader_id != nf->leader_id || st.term != nf->term ||
        srv->ready != nf->was_ready) {
        nf->role = st.role;
        nf->leader_id = st.leader_id;
        nf->term = st.term;
        nf->was_ready = srv->ready;
        say_role(srv, &st);
    }
}

void notify_init(struct server *srv)
{
    struct notify *nf = &srv->notify;
    const char *sock = getenv("NOTIFY_SOCKET");

    nf->on = sock != NULL && sock[0] != '\0';
    nf->role = -1;
    if (!nf->on) return;
    uv_timer_init(srv->loop, &nf->timer);
    nf->timer.data = srv;
    uv_timer_start(&nf->timer, poll_cb, 0, NOTIFY_POLL_MS);
    say("STATUS=starting: joining the cluster");
}

static void timer_closed(uv_handle_t *h)
{
    (void)h;
}

void notify_stopping(struct server *srv, uint32_t handing_to)
{
    struct notify *nf = &srv->notify;

    if (!nf->on || nf->stopping_sent) return;
    nf->stopping_sent = true;
    if (handing_to != 0)
        say("STOPPING=1\nSTATUS=stopping: handing leadership to node %u", handing_to);
    else
        say("STOPPING=1\nSTATUS=stopping");
}

void notify_close(struct server *srv)
{
    struct notify *nf = &srv->notify;

    if (!nf->on || uv_is_closing((uv_handle_t *)&nf->timer)) return;
    uv_timer_stop(&nf->timer);
    uv_close((uv_handle_t *)&nf->timer, timer_closed);
}
