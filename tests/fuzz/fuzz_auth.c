/*
 * fuzz_auth.c -- libFuzzer target for the --auth-file parser
 * (server/auth.c): the input is a file's bytes. Beyond "no crash, no leak,
 * no undefined behaviour" it checks that a file that parses gives
 * principals whose names are valid and unique, that each is found again by
 * name (and, for certificate principals, by CN), and that a refusal says
 * which line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_auth: %s\n", what);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct auth a;
    char err[256];

    if (auth_parse((const char *)data, size, "fuzz", &a, err, sizeof err) != 0) {
        if (strstr(err, "fuzz") == NULL) fail("a refusal that does not name the file");
        return 0;
    }
    for (size_t i = 0; i < a.n; i++) {
        const struct principal *p = &a.v[i];
        size_t n = strlen(p->name);
        if (n == 0 || n > BATON_MAX_PRINCIPAL) fail("a name of a bad length");
        if (auth_by_name(&a, p->name) != p) fail("a name not found again, or twice");
        if (p->by_cert && auth_by_cert(&a, p->name) != p) fail("a certificate principal lost");
        if (p->role != MSG_ROLE_READ && p->role != MSG_ROLE_LOCK && p->role != MSG_ROLE_ADMIN)
            fail("a bad role");
        if (p->n_prefixes > AUTH_MAX_PREFIXES) fail("too many prefixes");
        for (uint32_t k = 0; k < p->n_prefixes; k++)
            if (!auth_may_use(p, p->prefixes[k], p->prefix_len[k])) fail("a prefix refuses itself");
    }
    auth_free(&a);
    return 0;
}
