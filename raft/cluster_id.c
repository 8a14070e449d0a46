/*
 * cluster_id.c -- the cluster's identity in the data directory; see
 * cluster_id.h.
 */
#include "raft/cluster_id.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baton/baton_defs.h"
#include "raft/durable_file.h"

int cluster_id_load(const char *path, uint64_t *id)
{
    char text[64];
    char *end;
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) return errno == ENOENT ? BATON_ENOTFOUND : BATON_EIO;
    n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n < 17) return BATON_EMALFORMED;
    text[n] = '\0';
    errno = 0;
    *id = strtoull(text, &end, 16);
    if (errno != 0 || end != text + 16 || *end != '\n' || *id == 0) return BATON_EMALFORMED;
    return 0;
}

int cluster_id_write(const char *path, uint64_t id)
{
    char text[32];
    int n = snprintf(text, sizeof text, "%016" PRIx64 "\n", id);

    if (id == 0) return BATON_EIO;
    return durable_write(path, text, (size_t)n);
}

/* FNV-1a over bytes, then a finaliser that spreads every bit. */
static uint64_t mix_bytes(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;

    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t mix_u64(uint64_t h, uint64_t v)
{
    uint8_t b[8];

    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
    return mix_bytes(h, b, sizeof b);
}

static uint64_t finish(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h != 0 ? h : 1;
}

/* The members in id order (--cluster may list them in any order). */
static uint64_t mix_members(uint64_t h, const struct node_config *cfg)
{
    uint32_t last = 0;

    for (uint32_t k = 0; k < cfg->n_members; k++) {
        const struct node_member *next = NULL;

        for (uint32_t i = 0; i < cfg->n_members; i++)
            if (cfg->members[i].id > last && (next == NULL || cfg->members[i].id < next->id))
                next = &cfg->members[i];
        if (next == NULL) break;
        h = mix_u64(h, next->id);
        h = mix_bytes(h, next->raft_addr, strlen(next->raft_addr) + 1);
        last = next->id;
    }
    return h;
}

#define FNV_BASIS 0xcbf29ce484222325ull

uint64_t cluster_id_of_bootstrap(const struct node_config *cfg)
{
    uint64_t h = mix_bytes(FNV_BASIS, "baton bootstrap", 16);

    return finish(mix_members(h, cfg));
}

uint64_t cluster_id_of_restore(const struct node_config *cfg, uint64_t digest,
                               uint64_t backup_index, uint64_t backup_term, uint64_t index,
                               uint64_t fence_floor)
{
    uint64_t h = mix_bytes(FNV_BASIS, "baton restore", 14);

    h = mix_u64(h, digest);
    h = mix_u64(h, backup_index);
    h = mix_u64(h, backup_term);
    h = mix_u64(h, index);
    h = mix_u64(h, fence_floor);
    h = finish(mix_members(h, cfg));
    /* Different inputs; equal only by a 2^-64 chance, which is made nil. */
    if (h == cluster_id_of_bootstrap(cfg)) h = h == 1 ? 2 : h ^ 1;
    return h;
}
