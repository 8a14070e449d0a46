/*
 * jsonget.h -- pull one value out of a flat JSON text in tests (batonctl -o
 * json output). Not a JSON parser: it finds the first `"key":` and reads what
 * follows, which is enough for the known shapes batonctl prints.
 */
#ifndef BATON_TESTS_JSONGET_H
#define BATON_TESTS_JSONGET_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The text just after the first `"key":` (spaces skipped), or NULL. */
static inline const char *json_find(const char *json, const char *key)
{
    size_t n = strlen(key);
    for (const char *p = json; p && (p = strchr(p, '"')) != NULL; p++) {
        if (strncmp(p + 1, key, n) == 0 && p[n + 1] == '"') {
            const char *q = p + n + 2;
            while (*q == ' ') q++;
            if (*q != ':') continue;
            q++;
            while (*q == ' ') q++;
            return q;
        }
    }
    return NULL;
}

/* The number after `"key":`, or `dflt` if the key is absent. */
static inline int64_t json_i64(const char *json, const char *key, int64_t dflt)
{
    const char *p = json_find(json, key);
    return p ? strtoll(p, NULL, 10) : dflt;
}

/* Copy the bracketed array after `"key":` (up to the matching ']') into
 * out; "" if absent. */
static inline void json_array(const char *json, const char *key, char *out, size_t cap)
{
    const char *p = json_find(json, key), *q;
    int depth = 0;
    out[0] = '\0';
    if (p == NULL || *p != '[') return;
    for (q = p; *q; q++) {
        if (*q == '[') depth++;
        if (*q == ']' && --depth == 0) break;
    }
    if (*q == '\0' || (size_t)(q - p + 1) >= cap) return;
    memcpy(out, p, (size_t)(q - p + 1));
    out[q - p + 1] = '\0';
}

#endif
