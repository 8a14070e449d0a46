/*
 * auth.c -- --auth-file: parse it, and look principals up. See auth.h.
 */
#include "server/auth.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/xmalloc.h"

const struct principal auth_anonymous = {
    .name = "",
    .role = MSG_ROLE_ADMIN,
    .max_lock_delay_ms = -1,
};

const char *auth_role_name(int role)
{
    switch (role) {
    case MSG_ROLE_ADMIN: return "admin";
    case MSG_ROLE_LOCK: return "client";
    case MSG_ROLE_READ: return "read";
    default: return "none";
    }
}

/* The first 8 bytes of the SHA-256 of data[0..n) into *k, as a number: a
 * short id of what was hashed (a principal's name, the auth file). 0, or
 * BATON_ENOMEM (*k is then 0). */
static int sha256_prefix(const void *data, size_t n, uint64_t *k)
{
    uint8_t d[CRYPTO_SHA256_LEN];
    int rv = crypto_sha256(data, n, d);

    *k = 0;
    if (rv != 0) return rv;
    for (int i = 0; i < 8; i++) *k = *k << 8 | d[i];
    return 0;
}

uint64_t auth_key(const char *name, size_t n)
{
    uint64_t k;

    if (n == 0 || sha256_prefix(name, n, &k) != 0) return 0;
    return k ? k : 1;
}

static void principal_free(struct principal *p)
{
    for (uint32_t i = 0; i < p->n_prefixes; i++) free(p->prefixes[i]);
    p->n_prefixes = 0;
}

void auth_free(struct auth *a)
{
    for (size_t i = 0; i < a->n; i++) principal_free(&a->v[i]);
    free(a->v);
    a->v = NULL;
    a->n = 0;
}

static bool name_ok(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > BATON_MAX_PRINCIPAL) return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              strchr("._@:/=+-", ch) != NULL))
            return false;
    }
    return true;
}

static int hex_digit(char ch)
{
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    return -1;
}

static bool parse_hash(const char *hex, uint8_t out[CRYPTO_SHA256_LEN])
{
    if (strlen(hex) != CRYPTO_SHA256_HEX) return false;
    for (int i = 0; i < CRYPTO_SHA256_LEN; i++) {
        int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

static bool parse_u32(const char *s, uint32_t max, uint32_t *out)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(s, &end, 10);
    if (*s < '0' || *s > '9' || *end != '\0' || errno != 0 || v > max) return false;
    *out = (uint32_t)v;
    return true;
}

static int parse_prefixes(struct principal *p, char *list, const char **why)
{
    char *save = NULL;

    for (char *item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        size_t n = strlen(item);
        if (p->n_prefixes == AUTH_MAX_PREFIXES) {
            *why = "too many prefixes (at most 32)";
            return -1;
        }
        if (n > BATON_MAX_NAME) {
            *why = "a prefix is longer than a lock name may be";
            return -1;
        }
        p->prefixes[p->n_prefixes] = xmalloc(n + 1);
        memcpy(p->prefixes[p->n_prefixes], item, n + 1);
        p->prefix_len[p->n_prefixes++] = (uint16_t)n;
    }
    if (p->n_prefixes == 0) {
        *why = "prefixes= lists no prefix";
        return -1;
    }
    return 0;
}

/* One option word KEY=VALUE of a principal. */
static int parse_option(struct principal *p, char *word, const char **why)
{
    char *eq = strchr(word, '=');

    if (eq == NULL) {
        *why = "an option must be KEY=VALUE";
        return -1;
    }
    *eq = '\0';
    if (strcmp(word, "prefixes") == 0) {
        if (p->n_prefixes > 0) {
            *why = "prefixes= given twice";
            return -1;
        }
        return parse_prefixes(p, eq + 1, why);
    }
    if (strcmp(word, "max-sessions") == 0) {
        if (!parse_u32(eq + 1, 100000000, &p->max_sessions) || p->max_sessions == 0) {
            *why = "max-sessions= needs a positive number";
            return -1;
        }
        return 0;
    }
    if (strcmp(word, "max-lock-delay") == 0) {
        uint32_t v;
        if (!parse_u32(eq + 1, 100000000, &v)) {
            *why = "max-lock-delay= needs a number of ms";
            return -1;
        }
        p->max_lock_delay_ms = v;
        return 0;
    }
    *why = "unknown option (prefixes=, max-sessions=, max-lock-delay=)";
    return -1;
}

static int parse_role(const char *s)
{
    if (strcmp(s, "admin") == 0) return MSG_ROLE_ADMIN;
    if (strcmp(s, "client") == 0) return MSG_ROLE_LOCK;
    if (strcmp(s, "read") == 0) return MSG_ROLE_READ;
    return -1;
}

/* One non-empty line into p. 0, or -1 with *why. */
static int parse_line(char *line, struct principal *p, const char **why)
{
    char *save = NULL, *name, *role, *cred, *word;
    int r;

    memset(p, 0, sizeof *p);
    p->max_lock_delay_ms = -1;
    name = strtok_r(line, " \t", &save);
    role = strtok_r(NULL, " \t", &save);
    cred = strtok_r(NULL, " \t", &save);
    if (name == NULL || role == NULL || cred == NULL) {
        *why = "want NAME ROLE CREDENTIAL [OPTION...]";
        return -1;
    }
    if (!name_ok(name)) {
        *why = "a name is 1..64 bytes of letters, digits and ._@:/=+-";
        return -1;
    }
    strcpy(p->name, name);
    p->key = auth_key(name, strlen(name));
    if ((r = parse_role(role)) < 0) {
        *why = "the role must be admin, client or read";
        return -1;
    }
    p->role = (uint8_t)r;
    if (strcmp(cred, "cert") == 0) {
        p->by_cert = true;
    } else if (strncmp(cred, "sha256:", 7) != 0 || !parse_hash(cred + 7, p->token_hash)) {
        *why = "the credential must be sha256:<64 lower-case hex digits> or cert";
        return -1;
    }
    while ((word = strtok_r(NULL, " \t", &save)) != NULL)
        if (parse_option(p, word, why) != 0) return -1;
    return 0;
}

/* Is p's name or token already taken by one of a->v[0..n)? */
static const char *duplicate(const struct auth *a, const struct principal *p)
{
    for (size_t i = 0; i < a->n; i++) {
        if (strcmp(a->v[i].name, p->name) == 0) return "the name appears twice";
        if (!p->by_cert && !a->v[i].by_cert &&
            memcmp(a->v[i].token_hash, p->token_hash, CRYPTO_SHA256_LEN) == 0)
            return "two principals have the same token";
    }
    return NULL;
}

/* The whole file into buf (NUL-terminated), at most AUTH_MAX_FILE bytes. */
static char *read_file(const char *path, size_t *len, char *err, size_t err_size)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    size_t n;

    if (f == NULL) {
        snprintf(err, err_size, "cannot open auth file '%s': %s", path, strerror(errno));
        return NULL;
    }
    buf = xmalloc(AUTH_MAX_FILE + 1);
    n = fread(buf, 1, AUTH_MAX_FILE + 1, f);
    if (ferror(f) || n > AUTH_MAX_FILE) {
        snprintf(err, err_size, "auth file '%s': %s", path,
                 ferror(f) ? "read error" : "larger than 1 MiB");
        fclose(f);
        free(buf);
        return NULL;
    }
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

int auth_parse(const char *text, size_t len, const char *what, struct auth *out, char *err,
               size_t err_size)
{
    struct auth a = {0};
    size_t cap = 0, lineno = 0;
    char *buf, *save = NULL;

    if (len > AUTH_MAX_FILE) {
        snprintf(err, err_size, "auth file '%s': larger than 1 MiB", what);
        return -1;
    }
    if (memchr(text, '\0', len) != NULL) {
        snprintf(err, err_size, "auth file '%s': contains a NUL byte", what);
        return -1;
    }
    buf = xmalloc(len + 1);
    memcpy(buf, text, len);
    buf[len] = '\0';
    (void)sha256_prefix(buf, len, &a.digest);
    for (char *p = buf; p != NULL; p = save) {
        char *line = p, *hash;
        struct principal pr;
        const char *why = NULL;

        save = strchr(p, '\n');
        if (save != NULL) *save++ = '\0';
        lineno++;
        if ((hash = strchr(line, '#')) != NULL) *hash = '\0';
        line += strspn(line, " \t\r");
        line[strcspn(line, "\r")] = '\0';
        if (*line == '\0') continue;
        if (parse_line(line, &pr, &why) != 0 || (why = duplicate(&a, &pr)) != NULL) {
            snprintf(err, err_size, "auth file '%s' line %zu: %s", what, lineno, why);
            principal_free(&pr);
            auth_free(&a);
            free(buf);
            return -1;
        }
        if (a.n == cap) {
            cap = cap ? 2 * cap : 16;
            a.v = xrealloc(a.v, cap * sizeof *a.v);
        }
        a.v[a.n++] = pr;
    }
    free(buf);
    *out = a;
    return 0;
}

int auth_load(const char *path, struct auth *out, char *err, size_t err_size)
{
    size_t len;
    char *buf = read_file(path, &len, err, err_size);
    int rv;

    if (buf == NULL) return -1;
    rv = auth_parse(buf, len, path, out, err, err_size);
    free(buf);
    return rv;
}

const struct principal *auth_by_token(const struct auth *a, const char *token, size_t n)
{
    uint8_t d[CRYPTO_SHA256_LEN];
    const struct principal *found = NULL;

    if (n == 0 || crypto_sha256(token, n, d) != 0) return NULL;
    for (size_t i = 0; i < a->n; i++)
        if (!a->v[i].by_cert && crypto_equal(a->v[i].token_hash, d, sizeof d)) found = &a->v[i];
    return found;
}

const struct principal *auth_by_cert(const struct auth *a, const char *cn)
{
    if (cn == NULL || *cn == '\0') return NULL;
    for (size_t i = 0; i < a->n; i++)
        if (a->v[i].by_cert && strcmp(a->v[i].name, cn) == 0) return &a->v[i];
    return NULL;
}

const struct principal *auth_by_name(const struct auth *a, const char *name)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->v[i].name, name) == 0) return &a->v[i];
    return NULL;
}

bool auth_may_use(const struct principal *p, const char *name, size_t n)
{
    if (p->n_prefixes == 0) return true;
    for (uint32_t i = 0; i < p->n_prefixes; i++)
        if (p->prefix_len[i] <= n && memcmp(p->prefixes[i], name, p->prefix_len[i]) == 0)
            return true;
    return false;
}

bool auth_covers_prefix(const struct principal *p, const char *prefix, size_t n)
{
    return auth_may_use(p, prefix, n);
}
