/*
 * elect.c -- leader election with the blocking API: campaign for an
 * election, or watch who leads it.
 *
 *     elect campaign ENDPOINTS ELECTION VALUE [SECONDS]
 *     elect observe  ENDPOINTS ELECTION [EVENTS]
 *     elect leader   ENDPOINTS ELECTION
 *
 * campaign waits (FIFO, behind earlier candidates) until it leads, prints
 * its term (the fencing token of its leadership: larger than every
 * earlier leader's), leads for SECONDS (default 5) saying so every
 * second, and resigns: the next candidate leads at once. VALUE tells
 * observers who leads (an address, a name). If leadership is lost
 * meanwhile (the session expired, an operator took it) the lost callback
 * says so and the program stops leading at once.
 *
 * observe prints the current leader, then one line per change of leader
 * or of its value, until EVENTS lines (default: forever). It is told when
 * it may have missed a change (a "gap" or a "restart" line, after which
 * the leader printed is the current one).
 *
 * leader prints the current leader once (a linearizable read), or
 * "nobody leads".
 *
 * ENDPOINTS is like "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003" (the
 * cluster `make run` starts). Exit status 0 if everything worked, 1 if not.
 *
 * Build: make (the binary is build/default/examples/elect), or with
 * libbaton installed (make install, or the .deb):
 *     cc -std=c11 -D_POSIX_C_SOURCE=200809L elect.c -o elect \
 *        $(pkg-config --cflags --libs libbaton)
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "baton/baton.h"

/* Set by the lost callback (on the library's I/O thread), read by main. */
static atomic_int lost;

static void on_lost(baton_t *b, const char *lock, uint64_t fence, int why, void *data)
{
    (void)b;
    (void)data;
    fprintf(stderr, "lost leadership of %s (term %" PRIu64 "): %s\n", lock, fence,
            baton_strerror(why));
    atomic_store(&lost, 1);
}

/* One holder's value as printable text (values are bytes). */
static void print_holder(const char *what, const baton_holder *h)
{
    printf("%s: session %" PRIu64 " (%s), term %" PRIu64 ", value \"%.*s\"\n", what, h->session,
           h->client_name, h->fence, (int)h->value_len,
           h->value ? (const char *)h->value : "");
}

static int campaign(baton_t *b, const char *election, const char *value, int seconds)
{
    baton_lock_t *lead;
    int rv;

    baton_on_lost(b, on_lost, NULL);
    printf("campaigning for %s as \"%s\"\n", election, value);
    fflush(stdout);
    rv = baton_campaign(b, election, value, strlen(value), BATON_WAIT_FOREVER, &lead);
    if (rv != 0) {
        fprintf(stderr, "campaign: %s (%s)\n", baton_strerror(rv), baton_errmsg(b));
        return 1;
    }
    printf("leading %s, term %" PRIu64 "\n", election, baton_lock_fence(lead));
    fflush(stdout);
    for (int i = 0; i < seconds && !atomic_load(&lost); i++) {
        /* Real work goes here, passing the term to what it writes. */
        nanosleep(&(struct timespec){.tv_sec = 1}, NULL);
        printf("still leading (%d s)\n", i + 1);
        fflush(stdout);
    }
    rv = baton_resign(lead); /* BATON_ELOST if leadership was lost meanwhile */
    if (rv != 0) {
        fprintf(stderr, "resign: %s (%s)\n", baton_strerror(rv), baton_errmsg(b));
        return 1;
    }
    printf("resigned\n");
    return atomic_load(&lost) ? 1 : 0;
}

static int observe(baton_t *b, const char *election, long events)
{
    baton_watch_t *w;
    baton_event *ev;
    int rv = baton_observe(b, election, &w);

    if (rv != 0) {
        fprintf(stderr, "observe: %s (%s)\n", baton_strerror(rv), baton_errmsg(b));
        return 1;
    }
    for (long n = 0; events <= 0 || n < events;) {
        rv = baton_watch_next(w, -1, &ev);
        if (rv != 0) {
            fprintf(stderr, "observe: %s\n", baton_strerror(rv));
            break;
        }
        if (ev->kind == BATON_EVENT_SYNCED) {
            if (ev->restarted) printf("(restart: the lines before this one are the current state)\n");
        } else {
            const char *what = ev->kind == BATON_EVENT_GAP ? "leader (after a gap)" : "leader";
            if (ev->state->n_holders > 0)
                print_holder(what, &ev->state->holders[0]);
            else
                printf("nobody leads (revision %" PRIu64 ")\n", ev->revision);
            n++;
        }
        fflush(stdout);
        baton_event_free(ev);
    }
    baton_watch_close(w);
    return rv == 0 ? 0 : 1;
}

static int leader(baton_t *b, const char *election)
{
    baton_lock_state *st;
    int rv = baton_leader(b, election, &st);

    if (rv == BATON_ENOTFOUND) {
        printf("nobody leads %s\n", election);
        return 0;
    }
    if (rv != 0) {
        fprintf(stderr, "leader: %s (%s)\n", baton_strerror(rv), baton_errmsg(b));
        return 1;
    }
    print_holder("leader", &st->holders[0]);
    baton_lock_state_free(st);
    return 0;
}

int main(int argc, char **argv)
{
    baton_opts o = {.client_name = "elect-example"};
    baton_t *b;
    int rv;

    if (argc < 4 || (strcmp(argv[1], "campaign") == 0 && argc < 5)) {
        fprintf(stderr, "usage: elect campaign ENDPOINTS ELECTION VALUE [SECONDS]\n"
                        "       elect observe  ENDPOINTS ELECTION [EVENTS]\n"
                        "       elect leader   ENDPOINTS ELECTION\n");
        return 2;
    }
    o.endpoints = argv[2];
    rv = baton_connect(&o, &b);
    if (rv != 0) {
        fprintf(stderr, "connect: %s (%s)\n", baton_strerror(rv), baton_connect_errmsg());
        return 1;
    }
    if (strcmp(argv[1], "campaign") == 0)
        rv = campaign(b, argv[3], argv[4], argc > 5 ? atoi(argv[5]) : 5);
    else if (strcmp(argv[1], "observe") == 0)
        rv = observe(b, argv[3], argc > 4 ? atol(argv[4]) : 0);
    else if (strcmp(argv[1], "leader") == 0)
        rv = leader(b, argv[3]);
    else
        rv = 2;
    baton_close(b);
    return rv;
}
