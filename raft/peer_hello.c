/*
 * peer_hello.c -- the HELLO of a TLS raft connection. See peer_hello.h.
 */
#include "raft/peer_hello.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "baton/baton_defs.h"

int peer_hello_encode(struct buf *b, uint64_t id, uint64_t cluster, const char *address)
{
    size_t n = strlen(address);
    int rv;

    if (n == 0 || n > BATON_MAX_ADDR) return BATON_EINVAL;
    if ((rv = buf_reserve(b, PEER_HELLO_HEADER + n)) != 0) return rv;
    buf_put_u32(b, PEER_HELLO_VERSION);
    buf_put_u64(b, id);
    buf_put_u64(b, cluster);
    buf_put_u16(b, (uint16_t)n);
    return buf_put(b, address, n);
}

int peer_hello_parse(const void *data, size_t n, struct peer_hello *h)
{
    const uint8_t *p = data;
    uint16_t len;

    if (n < PEER_HELLO_HEADER) return 0;
    len = le_get_u16(p + 20);
    if (le_get_u32(p) != PEER_HELLO_VERSION || len == 0 || len > BATON_MAX_ADDR)
        return BATON_EMALFORMED;
    h->id = le_get_u64(p + 4);
    if (h->id == 0) return BATON_EMALFORMED;
    h->cluster = le_get_u64(p + 12);
    if (n < PEER_HELLO_HEADER + len) return 0;
    if (memchr(p + PEER_HELLO_HEADER, '\0', len) != NULL) return BATON_EMALFORMED;
    memcpy(h->address, p + PEER_HELLO_HEADER, len);
    h->address[len] = '\0';
    return (int)(PEER_HELLO_HEADER + len);
}

const char *peer_cn_of(uint64_t id, char out[PEER_CN_MAX])
{
    snprintf(out, PEER_CN_MAX, "baton-node-%" PRIu64, id);
    return out;
}
