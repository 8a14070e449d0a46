/*
 * transport.h -- the raft_uv transport baton hands to libraft: libraft's own
 * TCP transport (raft_uv_tcp), wrapped so that every connection it accepts or
 * opens has TCP_NODELAY set.
 *
 * libraft 0.15 never disables Nagle's algorithm on its sockets. With Nagle on,
 * a small message (an AppendEntries result, a heartbeat) written while an
 * earlier one is still unacknowledged waits for the peer's delayed ACK, up to
 * 40 ms on Linux: commits stall behind it under load.
 *
 * Everything runs on the loop thread that runs raft. Not thread-safe.
 */
#ifndef BATON_RAFT_TRANSPORT_H
#define BATON_RAFT_TRANSPORT_H

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

struct transport {
    struct raft_uv_transport base;  /* handed to raft_uv_init */
    struct raft_uv_transport tcp;   /* libraft's TCP transport, wrapped */
    raft_uv_accept_cb accept_cb;    /* raft_uv's, given to listen */
    raft_uv_transport_close_cb close_cb;
};

/*
 * Initialise t on loop. Returns 0, or a RAFT_* code from raft_uv_tcp_init
 * (RAFT_NOMEM). On success, t must be released with transport_close after
 * the raft_uv I/O that uses it has been closed. t must not move in memory.
 */
int transport_init(struct transport *t, uv_loop_t *loop);

/*
 * Make raft listen on `address` ("a.b.c.d:port") instead of the address it
 * advertises in the configuration (raft_uv_tcp_set_bind_address): another
 * process -- the fault harness's proxy, tests/fault/proxy.c -- then listens
 * on the advertised address and forwards to this one. Call after
 * transport_init and before raft_init. Returns 0, or RAFT_NOMEM /
 * RAFT_INVALID (not an IPv4 address with a port).
 */
int transport_set_bind_address(struct transport *t, const char *address);

/* Release what transport_init allocated (raft_uv_tcp_close). */
void transport_close(struct transport *t);

#endif
