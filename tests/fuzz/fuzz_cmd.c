/*
 * fuzz_cmd.c -- libFuzzer target for the command batch codec
 * (storage/cmd.c) and for applying what it decodes (storage/apply.c and
 * the handlers behind it).
 *
 * The input is the payload of one raft entry, as fsm_apply hands it to
 * store_apply. For every input the target:
 *
 *  1. decodes it with cmd_reader_*; if the whole batch decodes, encoding
 *     the same commands again (cmd_batch_*) must give the input back byte
 *     for byte;
 *  2. resets a store to a fixed starting state (three sessions, the third
 *     opened by principal "carol" with the nonce 0xfeed; session 1 holds
 *     "x", session 2 waits for it; session 3 holds "y" with a lock-delay)
 *     so that the input meets live state, then applies the
 *     input as the next entry and checks the results: one per command for
 *     a well-formed batch, every status 0 or a BATON_E* code, every effect
 *     well formed; a malformed (non-empty) one is refused with
 *     BATON_EMALFORMED and changes nothing, not even the applied index or
 *     the digest, and cmd_batch_why agrees with the reader;
 *  3. applies it again at the same index (a replay: nothing may change)
 *     and at the next one (the same requests again: deduplication answers
 *     them);
 *  4. snapshots the store, restores the snapshot into a second store and
 *     snapshots that: the two dumps and digests must be identical.
 *
 * Opening a store per input costs milliseconds (LMDB allocates and clears
 * megabytes per environment, slow under ASan), so the two stores stay open
 * and the starting state is installed with store_restore: a snapshot of
 * the state after the preamble entry, whose applied index (bytes 8..15 of
 * the snapshot header, see store_snapshot) is raised each time so that the
 * store takes it. The state an input meets is therefore the same for every
 * input except for the raft indexes, which apply only records, so a crash
 * still reproduces from its one input. The directories live under
 * /dev/shm when it is writable (else $TMPDIR or /tmp) and are removed at
 * exit. A failed check calls abort().
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "storage/cmd.h"
#include "storage/store.h"
#include "tests/lib/cmds.h"
#include "tests/lib/files.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[256];      /* the temporary directory of this process */
static char dir_a[300], dir_b[300];
static store *st_a, *st_b;   /* the store under test; the restore target */
static struct buf baseline;  /* snapshot of the state after the preamble */
static struct effects fx;

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_cmd: %s\n", what);
    abort();
}

static void cleanup(void)
{
    if (root[0] == '\0') return;
    store_close(st_a);
    store_close(st_b);
    rm_rf(root);
    buf_free(&baseline);
    effects_free(&fx);
}

/* A store in the new, empty directory dir. */
static store *open_fresh(const char *dir)
{
    char errmsg[256];
    store *s;

    if (store_open(dir, &s, errmsg) != 0) {
        fprintf(stderr, "fuzz_cmd: store_open %s: %s\n", dir, errmsg);
        abort();
    }
    return s;
}

/* Entry 1: the state every input starts from (commands of tests/lib/cmds.h). */
static void apply_preamble(store *s)
{
    const struct cmd pre[] = {
        c_open(10000, "one"),
        c_open(10000, "two"),
        c_open_nonce(10000, "three", "carol", 0xfeed),
        c_acq(1, 1, BATON_WAIT_TRY, "x"),
        c_acq(2, 1, BATON_WAIT_FOREVER, "x"),
        c_acq_d(3, 1, 500, "y", 1000),
    };
    struct buf b = {0};

    if (cmds_batch(&b, pre, 6, NULL) != 0) fail("preamble: cmds_batch");
    if (store_apply(s, 1, b.data, b.len, &fx) != 0) fail("preamble: store_apply");
    if (fx.n_results != 6) fail("preamble: results");
    buf_free(&b);
}

/* Create the directories and the stores once per process. */
static void setup(void)
{
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : NULL;

    if (root[0] != '\0') return;
    if (tmpdir_make_in(root, sizeof root, base, "baton-fuzz-cmd") != 0) fail("tmpdir_make_in");
    snprintf(dir_a, sizeof dir_a, "%s/a", root);
    snprintf(dir_b, sizeof dir_b, "%s/b", root);
    if (mkdir(dir_a, 0700) != 0 || mkdir(dir_b, 0700) != 0) fail("mkdir");
    effects_init(&fx);
    atexit(cleanup);
    st_a = open_fresh(dir_a);
    st_b = open_fresh(dir_b);
    apply_preamble(st_a);
    if (store_snapshot(st_a, &baseline) != 0 || baseline.len < 16) fail("baseline snapshot");
}

/* Put st_a back in the starting state, at applied index `index`. */
static void reset_state(uint64_t index)
{
    le_put_u64(baseline.data + 8, index);
    if (store_restore(st_a, baseline.data, baseline.len) != 0) fail("restoring the baseline");
    if (store_applied_index(st_a) != index) fail("the baseline was not installed");
}

/*
 * Decode the whole batch. Returns the number of commands when it is well
 * formed (and checks that it re-encodes to the same bytes), or -1.
 */
static long decode_and_reencode(const uint8_t *data, size_t size)
{
    struct cmd_reader r;
    struct buf out = {0};
    uint32_t count = 0, n = 0;
    size_t start;
    struct cmd c;
    int rv;

    if (cmd_reader_init(&r, data, size, &count) != 0) return -1;
    if (cmd_batch_begin(&out, &start) != 0) fail("cmd_batch_begin");
    while ((rv = cmd_reader_next(&r, &c)) == 1) {
        n++;
        if (cmd_batch_add(&out, &c) != 0) fail("a decoded command does not re-encode");
    }
    if (rv == 0) {
        if (n != count) fail("reader ended early without an error");
        cmd_batch_end(&out, start, count);
        if (out.len != size || memcmp(out.data, data, size) != 0)
            fail("re-encoded batch differs from the input");
    } else if (rv != BATON_EMALFORMED) {
        fail("undocumented reader error");
    }
    buf_free(&out);
    return rv == 0 ? (long)count : -1;
}

/* Is st 0 or one of the BATON_E* codes (include/baton/baton_defs.h)? */
static int status_ok(int32_t st)
{
#define XX(name, val, msg) \
    if (st == (val)) return 1;
    BATON_ERRNO_MAP(XX)
#undef XX
    return st == 0;
}

/* What store_apply yielded for a batch of `count` commands (-1: malformed). */
static void check_effects(long count)
{
    if (count < 0) {
        if (fx.n_results != 0 || fx.n_fx != 0) fail("a malformed batch had results or effects");
        return;
    }
    if (fx.n_results != (size_t)count) fail("not one result per command");
    for (size_t i = 0; i < fx.n_results; i++) {
        if (!status_ok(fx.results[i].status)) fail("result status is not a BATON_E* code");
        if (fx.results[i].kind > RESULT_CANCELLED) fail("unknown result kind");
    }
    for (size_t i = 0; i < fx.n_fx; i++) {
        const struct effect *e = &fx.fx[i];
        if (e->type < FX_GRANT || e->type > FX_LOCK_CHANGED) fail("unknown effect type");
        if (e->name_len > BATON_MAX_NAME) fail("effect name too long");
        if (!status_ok(e->status)) fail("effect status is not a BATON_E* code");
        if (e->type == FX_GRANT && e->fence == 0) fail("a grant without a fence");
    }
}

/* Snapshot st_a, restore it into st_b, snapshot st_b: the dumps must match. */
static void check_snapshot(void)
{
    struct buf sa = {0}, sb = {0};

    if (store_snapshot(st_a, &sa) != 0) fail("store_snapshot");
    if (store_restore(st_b, sa.data, sa.len) != 0) fail("store_restore of our own snapshot");
    if (store_applied_index(st_b) != store_applied_index(st_a)) fail("restored applied index differs");
    if (store_digest(st_b) != store_digest(st_a)) fail("restored digest differs");
    if (store_snapshot(st_b, &sb) != 0) fail("store_snapshot after restore");
    if (sa.len != sb.len || memcmp(sa.data, sb.data, sa.len) != 0)
        fail("snapshot of the restored store differs");
    buf_free(&sa);
    buf_free(&sb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t index, digest;
    long count;

    setup();
    count = decode_and_reencode(data, size);
    index = store_applied_index(st_a) + 1;
    reset_state(index);

    {
        char why[192];
        if ((cmd_batch_why(data, size, why, sizeof why) != 0) != (count < 0))
            fail("cmd_batch_why disagrees with the reader");
    }
    if (count < 0 && size > 0) {
        /* A batch this binary cannot decode changes nothing, the applied
         * index and the digest included: the node stops at it. */
        digest = store_digest(st_a);
        if (store_apply(st_a, index + 1, data, size, &fx) != BATON_EMALFORMED)
            fail("a malformed batch was not refused");
        if (store_applied_index(st_a) != index || store_digest(st_a) != digest)
            fail("a refused batch moved the applied index or the digest");
        check_effects(count);
        check_snapshot();
        return 0;
    }
    if (store_apply(st_a, index + 1, data, size, &fx) != 0) fail("store_apply failed");
    if (store_applied_index(st_a) != index + 1) fail("applied index did not advance");
    check_effects(count);

    digest = store_digest(st_a);
    if (store_apply(st_a, index + 1, data, size, &fx) != 0) fail("replay failed");
    if (fx.n_results != 0 || fx.n_fx != 0 || store_digest(st_a) != digest)
        fail("a replayed entry changed something");

    if (store_apply(st_a, index + 2, data, size, &fx) != 0) fail("store_apply of the repeat failed");
    check_effects(count);

    check_snapshot();
    return 0;
}
