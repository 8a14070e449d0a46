/*
 * peer_hello.c -- the HELLO of a TLS raft connection. See peer_hello.h.
 */
#include "raft/peer_hello.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "baton/baton_defs.h"

/* A test build that takes HELLO version 1 only, as the binary before the
 * cluster id did, for the mixed-version cluster tests. */
#ifdef BATON_TEST_PEER_PROTOCOL_1
#define ONLY_VERSION_1 true
#else
#define ONLY_VERSION_1 false
#endif

int peer_hello_encode(struct buf *b, unsigned version, uint64_t id, uint64_t cluster,
                      uint64_t levels, unsigned flags, const char *address)
{
    size_t n = strlen(address);
    int rv;

    if (n == 0 || n > BATON_MAX_ADDR) return BATON_EINVAL;
    if (version < PEER_HELLO_VERSION_1 || version > PEER_HELLO_VERSION) return BATON_EINVAL;
    if (flags > UINT8_MAX) return BATON_EINVAL;
    if ((rv = buf_reserve(b, PEER_HELLO_HEADER + n)) != 0) return rv;
    buf_put_u32(b, version);
    buf_put_u64(b, id);
    if (version >= PEER_HELLO_VERSION_2) buf_put_u64(b, cluster);
    if (version >= PEER_HELLO_VERSION) {
        buf_put_u64(b, levels);
        buf_put_u8(b, (uint8_t)flags);
    }
    buf_put_u16(b, (uint16_t)n);
    return buf_put(b, address, n);
}

int peer_hello_parse(const void *data, size_t n, struct peer_hello *h)
{
    const uint8_t *p = data;
    size_t header;
    uint16_t len;

    if (n < 4) return 0;
    h->version = le_get_u32(p);
    if (h->version == PEER_HELLO_VERSION && !ONLY_VERSION_1)
        header = PEER_HELLO_HEADER;
    else if (h->version == PEER_HELLO_VERSION_2 && !ONLY_VERSION_1)
        header = PEER_HELLO_HEADER_2;
    else if (h->version == PEER_HELLO_VERSION_1)
        header = PEER_HELLO_HEADER_1;
    else
        return n < PEER_HELLO_HEADER_1 ? 0 : BATON_EMALFORMED;
    if (n < header) return 0;
    len = le_get_u16(p + header - 2);
    if (len == 0 || len > BATON_MAX_ADDR) return BATON_EMALFORMED;
    h->id = le_get_u64(p + 4);
    if (h->id == 0) return BATON_EMALFORMED;
    h->cluster = h->version >= PEER_HELLO_VERSION_2 ? le_get_u64(p + 12) : 0;
    h->levels = h->version >= PEER_HELLO_VERSION ? le_get_u64(p + 20) : 0;
    h->flags = h->version >= PEER_HELLO_VERSION ? p[28] : 0;
    if ((h->flags & ~PEER_ASK_STARTED) != 0) return BATON_EMALFORMED; /* none known */
    if (n < header + len) return 0;
    if (memchr(p + header, '\0', len) != NULL) return BATON_EMALFORMED;
    memcpy(h->address, p + header, len);
    h->address[len] = '\0';
    return (int)(header + len);
}

const char *peer_cn_of(uint64_t id, char out[PEER_CN_MAX])
{
    snprintf(out, PEER_CN_MAX, "baton-node-%" PRIu64, id);
    return out;
}
