/*
 * auth_line.c -- the line of an auth file (batond --auth-file) that names a
 * principal and the SHA-256 of its token, and fresh random tokens, for
 * `batonctl auth hash` (cmd_auth.c). No I/O besides the OS's random bytes.
 *
 * The line is "NAME ROLE sha256:<64 lower-case hex> [OPTION...]": the
 * format batond reads, one principal per line. Only the digest of the
 * token goes into it, so the file can be copied to every node and read by
 * operators without handing out credentials.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "client/ctl/ctl.h"
#include "proto/crypto.h"

int ctl_new_token(char *out)
{
    uint8_t raw[CTL_TOKEN_BYTES];

    if (crypto_random(raw, sizeof raw) != 0) return -1;
    crypto_hex(raw, sizeof raw, out);
    return 0;
}

/* A word of the file: printable ASCII, no blank, no '#' (a comment). */
static int word_ok(const char *s)
{
    if (*s == '\0') return 0;
    for (; *s; s++)
        if (!isgraph((unsigned char)*s) || *s == '#') return 0;
    return 1;
}

/* One OPTION: prefixes=LIST, max-sessions=N or max-lock-delay=MS. */
static int option_ok(const char *opt, char *err, size_t errlen)
{
    static const char *const numeric[] = {"max-sessions=", "max-lock-delay="};
    const char *eq = strchr(opt, '=');

    if (!word_ok(opt) || eq == NULL || eq[1] == '\0') {
        snprintf(err, errlen, "bad option '%s' (want prefixes=A/,B/, max-sessions=N or "
                              "max-lock-delay=MS)", opt);
        return 0;
    }
    if (strncmp(opt, "prefixes=", 9) == 0) return 1;
    for (size_t i = 0; i < sizeof numeric / sizeof numeric[0]; i++) {
        size_t n = strlen(numeric[i]);
        uint64_t v;
        if (strncmp(opt, numeric[i], n) != 0) continue;
        if (ctl_parse_uint(opt + n, UINT32_MAX, &v) == 0) return 1;
        snprintf(err, errlen, "bad option '%s': %.*s takes a number", opt, (int)(n - 1),
                 numeric[i]);
        return 0;
    }
    snprintf(err, errlen, "unknown option '%.*s' (prefixes, max-sessions, max-lock-delay)",
             (int)(eq - opt), opt);
    return 0;
}

/* Is option opts[i]'s key also that of an earlier one? */
static int repeated(const char *const *opts, int i)
{
    size_t k = (size_t)(strchr(opts[i], '=') - opts[i]) + 1;

    for (int j = 0; j < i; j++)
        if (strncmp(opts[j], opts[i], k) == 0) return 1;
    return 0;
}

int ctl_auth_line(const char *name, const char *role, const char *const *opts, int n,
                  const char *token, char *line, size_t cap, char *err, size_t errlen)
{
    uint8_t digest[CRYPTO_SHA256_LEN];
    char hex[CRYPTO_SHA256_HEX + 1];
    size_t len;

    if (!word_ok(name) || strlen(name) > BATON_MAX_PRINCIPAL) {
        snprintf(err, errlen, "bad principal name '%s' (1..%d printable characters, no blank "
                              "and no '#')", name, BATON_MAX_PRINCIPAL);
        return -1;
    }
    if (strcmp(role, "admin") != 0 && strcmp(role, "client") != 0 && strcmp(role, "read") != 0) {
        snprintf(err, errlen, "bad role '%s' (admin, client or read)", role);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (!option_ok(opts[i], err, errlen)) return -1;
        if (repeated(opts, i)) {
            snprintf(err, errlen, "option '%s' given twice", opts[i]);
            return -1;
        }
    }
    if (crypto_sha256(token, strlen(token), digest) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    crypto_hex(digest, sizeof digest, hex);
    len = (size_t)snprintf(line, cap, "%s %s sha256:%s", name, role, hex);
    for (int i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(line + len, cap - len, " %s", opts[i]);
    if (len >= cap) {
        snprintf(err, errlen, "the line is too long");
        return -1;
    }
    return 0;
}
