/*
 * hosts.c -- an LD_PRELOAD shim for the integration tests: host names the
 * test controls, so that a name's address can change while the nodes run.
 *
 * getaddrinfo(NODE, ...) looks NODE up in the file named by
 * $BATON_SHIM_HOSTS, lines "NAME IP-ADDRESS", read again at every call: a
 * name found there resolves to that address alone (the real getaddrinfo on
 * the address, AI_NUMERICHOST); any other name, and every call without the
 * variable, goes to the real getaddrinfo untouched. libuv's uv_getaddrinfo
 * calls getaddrinfo on its thread pool, so the shim covers batond (raft's
 * connects and listens, the client port) and batonctl.
 *
 * Test code only: built without sanitizers as $(B)/tests/shim/hosts.so and
 * named in LD_PRELOAD by tests/integration/test_addrs.c (under ASan, with
 * ASAN_OPTIONS=verify_asan_link_order=0).
 */
#include <dlfcn.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int getaddrinfo_fn(const char *, const char *, const struct addrinfo *,
                           struct addrinfo **);

/* NAME's address from the file into ip (cap bytes); 1 if found. */
static int lookup(const char *file, const char *name, char *ip, size_t cap)
{
    char line[256], n[128], a[64];
    FILE *f = fopen(file, "r");
    int found = 0;

    if (f == NULL) return 0;
    while (!found && fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "%127s %63s", n, a) == 2 && strcmp(n, name) == 0) {
            snprintf(ip, cap, "%s", a);
            found = 1;
        }
    fclose(f);
    return found;
}

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res)
{
    getaddrinfo_fn *real = (getaddrinfo_fn *)dlsym(RTLD_NEXT, "getaddrinfo");
    const char *file = getenv("BATON_SHIM_HOSTS");
    struct addrinfo h;
    char ip[64];

    if (real == NULL) return EAI_SYSTEM;
    if (node == NULL || file == NULL || !lookup(file, node, ip, sizeof ip))
        return real(node, service, hints, res);
    if (hints != NULL)
        h = *hints;
    else
        memset(&h, 0, sizeof h);
    h.ai_flags |= AI_NUMERICHOST;
    return real(ip, service, &h, res);
}
