/*
 * samples.c -- a node's METRICS text (the Prometheus exposition batond
 * serves, server/metrics.c) as samples batonctl can look up by key:
 * `batonctl top` shows them, `batonctl status` reads the feature levels.
 */
#include <stdlib.h>
#include <string.h>

#include "client/ctl/ctl.h"

void ctl_samples_free(struct ctl_samples *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->v[i].key);
    free(s->v);
    memset(s, 0, sizeof *s);
}

static int samples_add(struct ctl_samples *s, const char *key, size_t len, double v)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        struct ctl_sample *nv = realloc(s->v, cap * sizeof *nv);
        if (nv == NULL) return -1;
        s->v = nv;
        s->cap = cap;
    }
    s->v[s->n].key = strndup(key, len);
    if (s->v[s->n].key == NULL) return -1;
    s->v[s->n++].v = v;
    return 0;
}

int ctl_samples_parse(struct ctl_samples *s, const char *text, size_t n)
{
    size_t i = 0;

    while (i < n) {
        const char *line = text + i, *nl = memchr(line, '\n', n - i), *sp;
        size_t len = nl ? (size_t)(nl - line) : n - i;
        char num[64];

        i += len + 1;
        if (len == 0 || line[0] == '#') continue;
        for (sp = line + len; sp > line && sp[-1] != ' '; sp--) {}
        if (sp == line || (size_t)(line + len - sp) >= sizeof num) continue;
        memcpy(num, sp, (size_t)(line + len - sp));
        num[line + len - sp] = '\0';
        if (samples_add(s, line, (size_t)(sp - 1 - line), strtod(num, NULL)) != 0) return -1;
    }
    return 0;
}

int ctl_samples_of(struct ctl_samples *s, const struct msg *m)
{
    struct buf text = {0};
    int rv = 0;

    /* A chunk may end inside a line: parse the text whole. */
    for (uint32_t i = 0; i < m->u.metrics_r.n && rv == 0; i++) {
        const struct pstr *t = &m->u.metrics_r.chunks[i].text;
        rv = buf_put(&text, t->p, t->n);
    }
    if (rv == 0) rv = ctl_samples_parse(s, (const char *)text.data, text.len);
    buf_free(&text);
    return rv == 0 ? 0 : -1;
}

double ctl_sample(const struct ctl_samples *s, const char *key)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i].key, key) == 0) return s->v[i].v;
    return NAN;
}
