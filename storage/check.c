/*
 * check.c -- the content hash (store.h, store_content_hash) and the result
 * of the last CHECK this store applied (cmd.h, "Content checks").
 *
 * The hash is taken over exactly the bytes store_snapshot gives: that
 * serialisation is deterministic (every database in key order, from one
 * read transaction) and already leaves out what describes this node's
 * copy of the files rather than the state (meta "boot_id", "clean",
 * "format"), so two stores holding the same state at the same applied
 * index give the same bytes, and any byte of a key or value that differs
 * gives different bytes. Building the snapshot in memory costs as much as
 * the snapshot raft takes every --snapshot-threshold entries
 * (docs/operations.md, "Checking that the nodes hold the same state", has
 * the measured cost).
 *
 * The result is kept in memory only: writing it into the store would make
 * it part of the content (and of the next hash), and a restarted node has
 * no check until the next CHECK it applies.
 */
#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "storage/store_int.h"

int store_content_hash(store *s, uint64_t *hash)
{
    struct buf b = {0};
    int rv = store_snapshot(s, &b);

    *hash = 0;
    if (rv == 0) {
        *hash = store__fnv1a64(STORE_FNV64_OFFSET, b.data, b.len);
        if (*hash == 0) *hash = 1; /* 0 means "none" in store_last_check */
    }
    buf_free(&b);
    return rv;
}

void store__check_applied(store *s, uint64_t index)
{
    uint64_t hash;

    if (store_content_hash(s, &hash) != 0) hash = 0;
    s->check_index = index;
    s->check_hash = hash;
}

int op_check(struct apply_ctx *c, const struct cmd *cmd, struct cmd_result *res)
{
    (void)cmd;
    (void)res;
    c->checked = 1;
    return 0;
}

void store_last_check(store *s, uint64_t *index, uint64_t *hash)
{
    *index = s->check_index;
    *hash = s->check_hash;
}
