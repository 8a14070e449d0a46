/*
 * loop_lag.c -- how late the loop thread runs: a timer due every
 * LAG_PERIOD_MS observes how late it fired (baton_loop_lag_seconds).
 *
 * Raft's ticks run on this loop, so a turn that takes longer than an
 * election timeout makes a follower stand for election and a leader step
 * down (docs/performance.md, "Failover"): this is the margin the election
 * timeout must keep. A turn of S ms delays the next firing by up to S
 * (less when the stall began before the timer was due), so stalls shorter
 * than the period may go unseen; longer ones are all counted.
 */
#include "server/metrics.h"
#include "server/server_int.h"

#define LAG_PERIOD_MS 25

static void lag_timer_cb(uv_timer_t *t)
{
    struct server *srv = t->data;
    uint64_t now = uv_now(srv->loop);

    if (srv->lag_due && now > srv->lag_due)
        metrics_observe(M_LOOP_LAG_SECONDS, (double)(now - srv->lag_due) / 1e3);
    else if (srv->lag_due)
        metrics_observe(M_LOOP_LAG_SECONDS, 0);
    srv->lag_due = now + LAG_PERIOD_MS;
}

void loop_lag_init(struct server *srv)
{
    uv_timer_init(srv->loop, &srv->lag_timer);
    srv->lag_timer.data = srv;
    srv->lag_due = 0;
    uv_timer_start(&srv->lag_timer, lag_timer_cb, LAG_PERIOD_MS, LAG_PERIOD_MS);
}

static void lag_closed(uv_handle_t *h)
{
    (void)h;
}

void loop_lag_close(struct server *srv)
{
    if (!uv_is_closing((uv_handle_t *)&srv->lag_timer))
        uv_close((uv_handle_t *)&srv->lag_timer, lag_closed);
}
