/*
 * corrupt.h -- damage a lock store's data file on purpose, the way bit rot
 * or a stray write through LMDB's writable map would: change bytes of a
 * record's value without LMDB knowing, so that the file still opens and
 * every structure LMDB checks is intact. For the tests of the content
 * check (storage/store.h, "Content hash"): tests/unit/test_fsm_check.c
 * and tests/integration/test_check.c.
 */
#ifndef BATON_TESTS_CORRUPT_H
#define BATON_TESTS_CORRUPT_H

#include <stddef.h>

/*
 * In the LMDB data file `path` (a store's data.mdb, with no process using
 * it), flip the bits of byte `at` of the value of every leaf node whose key
 * is key[0..klen) and whose value is vlen bytes long (at < vlen). Stale
 * copies of the node in pages LMDB has freed are flipped too, which
 * changes nothing LMDB reads. Returns the number of nodes changed (0: the
 * record was not found), or -1 if the file could not be read or written.
 *
 * An LMDB leaf node is u16 value size (low half), u16 value size (high
 * half), u16 flags (0 for a plain value), u16 key size, the key, then the
 * value (lmdb's MDB_node; host byte order, little-endian here).
 */
int corrupt_lmdb_value(const char *path, const void *key, size_t klen, size_t vlen, size_t at);

/* The same, flipping only the bits of `mask` in that byte (a record made
 * to say something else that still decodes, say). */
int corrupt_lmdb_value_bits(const char *path, const void *key, size_t klen, size_t vlen,
                            size_t at, unsigned mask);

#endif /* BATON_TESTS_CORRUPT_H */
