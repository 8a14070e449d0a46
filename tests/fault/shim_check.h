/*
 * shim_check.h -- a worker's check that the shims the harness says it
 * preloaded are in (run.c, client_env): a clock N ppm fast or slow
 * (shim_clock.so) and a map of node ports to the client proxy's
 * (shim_connect.so). A worker refuses to run without them, so a run never
 * passes without the faults it claims. Shared by client.c and elect.c.
 */
#ifndef BATON_TESTS_FAULT_SHIM_CHECK_H
#define BATON_TESTS_FAULT_SHIM_CHECK_H

#include <dlfcn.h>
#include <stdio.h>

#include "tests/fault/flog.h"

/* Are the shims in as said? Logs them as NOTE lines; 0, or -1 (said on
 * stderr, as prog). */
static inline int shims_check(FILE *log, const char *prog, long want_ppm, int want_ports)
{
    long (*ppm)(void) = (long (*)(void))dlsym(RTLD_DEFAULT, "fault_shim_clock_ppm");
    int (*ports)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "fault_shim_connect_ports");
    long have_ppm = ppm ? ppm() : 0;
    int have_ports = ports ? ports() : 0;

    if (have_ppm != want_ppm || have_ports != want_ports) {
        fprintf(stderr, "%s: the harness asked for a clock %ld ppm off and %d proxied "
                        "ports, the shims in give %ld and %d\n",
                prog, want_ppm, want_ports, have_ppm, have_ports);
        return -1;
    }
    if (want_ppm) flog(log, "NOTE shim_clock: %+ld ppm", want_ppm);
    if (want_ports) flog(log, "NOTE shim_connect: %d node ports go through the client proxy",
                         want_ports);
    return 0;
}

#endif
