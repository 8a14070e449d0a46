/*
 * gen_corpus.c -- writes the seed corpora of the fuzz targets from real
 * encoded messages: tests/fuzz/corpus/fuzz_frame/ gets one file per
 * message type (proto_encode) plus a few multi-frame streams, and
 * tests/fuzz/corpus/fuzz_cmd/ one batch per command type plus mixed
 * batches (cmd_batch_*). The files are committed; regenerate them with
 * `make fuzz-corpus` after a change to the wire or command format.
 *
 *     gen_corpus OUTDIR     (writes files into OUTDIR/fuzz_frame and OUTDIR/fuzz_cmd)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "proto/msg.h"
#include "storage/cmd.h"
#include "tests/lib/cmds.h"
#include "tests/lib/msg_samples.h"

static const char *outdir;

static void write_file(const char *sub, const char *name, const struct buf *b)
{
    char path[1024];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s/%s", outdir, sub, name);
    f = fopen(path, "wb");
    if (f == NULL || fwrite(b->data, 1, b->len, f) != b->len || fclose(f) != 0) {
        fprintf(stderr, "gen_corpus: cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
}

/*
 * One file per message type, its sample (tests/lib/msg_samples.c) named
 * after its number and type; and what a client and a server send on one
 * connection, back to back (every request, every reply and push), plus a
 * stream that ends in the middle of a frame.
 */
static void gen_frames(void)
{
    struct buf client = {0}, server = {0};

    for (int t = 1; t < MSG_TYPE_MAX_; t++) {
        struct msg m;
        struct buf b = {0};
        char name[64];
        int rv;

        if (msg_sample(t, &m) != 0) continue;
        rv = proto_encode(&b, &m);
        if (rv != 0) {
            fprintf(stderr, "gen_corpus: encoding %s: %s\n", msg_type_name(t), baton_strerror(rv));
            exit(1);
        }
        snprintf(name, sizeof name, "%02d-%s", t, msg_type_name(t));
        write_file("fuzz_frame", name, &b);
        if (buf_put(msg_info(t)->dir == MSG_C2S ? &client : &server, b.data, b.len) != 0) exit(1);
        buf_free(&b);
    }
    write_file("fuzz_frame", "stream-client", &client);
    write_file("fuzz_frame", "stream-server", &server);
    client.len -= 5;
    write_file("fuzz_frame", "stream-partial", &client);
    buf_free(&client);
    buf_free(&server);
}

/* Write one batch of n commands (tests/lib/cmds.h's encoding). */
static void batch(const char *name, const struct cmd *cmds, size_t n)
{
    struct buf b = {0};
    size_t bad;
    int rv = cmds_batch(&b, cmds, n, &bad);

    if (rv != 0) {
        fprintf(stderr, "gen_corpus: batch %s: command %zu refused: %s\n", name, bad,
                baton_strerror(rv));
        exit(1);
    }
    write_file("fuzz_cmd", name, &b);
    buf_free(&b);
}

#define NAMED(s) .name = (s), .name_len = sizeof(s) - 1

static void gen_cmds(void)
{
    /* Sessions 1..3 and locks "x" (held by 1, 2 waiting) and "y" (held by 3,
     * lock-delay 1000) exist when fuzz_cmd applies these (its preamble). */
    const struct cmd open = {.type = CMD_OPEN_SESSION, .ttl_ms = 5000, NAMED("seed")};
    /* An OPEN_SESSION with an owner: encoded as CMD_OPEN_OWNED (cmd.h). */
    const struct cmd open_owned = {.type = CMD_OPEN_SESSION, .ttl_ms = 5000, NAMED("seed"),
                                   .owner = "alice", .owner_len = 5};
    const struct cmd acq_try = {.type = CMD_ACQUIRE, .session = 3, .seq = 2, .ack_below = 1,
                                .wait_ms = BATON_WAIT_TRY, NAMED("x")};
    const struct cmd acq_wait = {.type = CMD_ACQUIRE, .session = 3, .seq = 3, .ack_below = 1,
                                 .wait_ms = 2000, .lock_delay_ms = 100, NAMED("x")};
    const struct cmd release = {.type = CMD_RELEASE, .session = 1, .seq = 2, .fence = 1,
                                NAMED("x")};
    const struct cmd cancel = {.type = CMD_CANCEL, .session = 2, .seq = 2, .waiter = 1,
                               NAMED("x")};
    const struct cmd close = {.type = CMD_CLOSE_SESSION, .session = 1, .seq = 3};
    const struct cmd expire = {.type = CMD_EXPIRE_SESSION, .session = 3};
    const struct cmd timeout = {.type = CMD_WAIT_TIMEOUT, .session = 2, .waiter = 1, NAMED("x")};
    const struct cmd force = {.type = CMD_FORCE_RELEASE, NAMED("x")};
    const struct cmd force2 = {.type = CMD_FORCE_RELEASE2, .fence = 1,
                               .wait_ms = CMD_FORCE_AFTER_LEASE, NAMED("x")};
    const struct cmd delay_end = {.type = CMD_DELAY_END, NAMED("y")};
    const struct cmd mixed[] = {open, acq_wait, release, expire, delay_end, cancel, close};
    const struct cmd mixed_owned[] = {open_owned, acq_try, open, close, open_owned};
    /* Protocol 3: an OPEN_SESSION's nonce (in seq: carol's finds session
     * 3 of fuzz_cmd's preamble, alice's opens a session and the second
     * copy finds it), and keep lists (CMD_KEEP_FLAG). */
    static const uint8_t keep_le[16] = {1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0};
    const struct cmd open_nonce = {.type = CMD_OPEN_SESSION, .ttl_ms = 5000, .seq = 0xfeed,
                                   NAMED("seed"), .owner = "alice", .owner_len = 5};
    const struct cmd acq_keep = {.type = CMD_ACQUIRE, .session = 2, .seq = 3, .ack_below = 3,
                                 .n_keep = 1, .keep = keep_le, .wait_ms = BATON_WAIT_FOREVER,
                                 NAMED("y")};
    const struct cmd rel_keep = {.type = CMD_RELEASE, .session = 1, .seq = 4, .ack_below = 4,
                                 .n_keep = 2, .keep = keep_le, .fence = 1, NAMED("x")};
    const struct cmd open_carol = {.type = CMD_OPEN_SESSION, .ttl_ms = 5000, .seq = 0xfeed,
                                   NAMED("seed"), .owner = "carol", .owner_len = 5};
    const struct cmd mixed_nonces[] = {open_nonce, acq_keep, open_nonce, rel_keep, open_carol,
                                       close};
    /* Protocol 4: lock modes (CMD_ACQUIRE_MODES): shared requests, a
     * semaphore, a reentrant second handle of session 1's "x", and one
     * with a keep list. */
    const struct cmd acq_shared = {.type = CMD_ACQUIRE, .session = 2, .seq = 4, .ack_below = 1,
                                   .wait_ms = BATON_WAIT_FOREVER, .mode = BATON_MODE_SHARED,
                                   NAMED("z")};
    const struct cmd acq_shared3 = {.type = CMD_ACQUIRE, .session = 3, .seq = 4, .ack_below = 1,
                                    .wait_ms = 1000, .mode = BATON_MODE_SHARED, NAMED("z")};
    const struct cmd acq_excl = {.type = CMD_ACQUIRE, .session = 1, .seq = 5, .ack_below = 1,
                                 .wait_ms = BATON_WAIT_FOREVER, NAMED("z")};
    const struct cmd acq_sem = {.type = CMD_ACQUIRE, .session = 1, .seq = 6, .ack_below = 1,
                                .wait_ms = BATON_WAIT_FOREVER, .limit = 2, NAMED("s")};
    const struct cmd acq_sem2 = {.type = CMD_ACQUIRE, .session = 2, .seq = 5, .ack_below = 1,
                                 .wait_ms = BATON_WAIT_FOREVER, .limit = 3, NAMED("s")};
    const struct cmd acq_reent = {.type = CMD_ACQUIRE, .session = 1, .seq = 7, .ack_below = 1,
                                  .wait_ms = BATON_WAIT_TRY, .reentrant = 1, NAMED("x")};
    const struct cmd acq_modes_keep = {.type = CMD_ACQUIRE, .session = 2, .seq = 6,
                                       .ack_below = 3, .n_keep = 1, .keep = keep_le,
                                       .wait_ms = BATON_WAIT_FOREVER,
                                       .mode = BATON_MODE_SHARED, NAMED("y")};
    const struct cmd mixed_modes[] = {acq_shared, acq_shared3, acq_excl, acq_sem, acq_sem2,
                                      acq_reent, release, expire, cancel};

    batch("open_session", &open, 1);
    batch("open_owned", &open_owned, 1);
    batch("acquire_try", &acq_try, 1);
    batch("acquire_wait", &acq_wait, 1);
    batch("release", &release, 1);
    batch("cancel", &cancel, 1);
    batch("close_session", &close, 1);
    batch("expire_session", &expire, 1);
    batch("wait_timeout", &timeout, 1);
    batch("force_release", &force, 1);
    batch("force_release2", &force2, 1);
    batch("delay_end", &delay_end, 1);
    batch("mixed", mixed, sizeof mixed / sizeof mixed[0]);
    batch("mixed_owned", mixed_owned, sizeof mixed_owned / sizeof mixed_owned[0]);
    batch("open_nonce", &open_nonce, 1);
    batch("acquire_keep", &acq_keep, 1);
    batch("release_keep", &rel_keep, 1);
    batch("mixed_nonces", mixed_nonces, sizeof mixed_nonces / sizeof mixed_nonces[0]);
    batch("acquire_shared", &acq_shared, 1);
    batch("acquire_semaphore", &acq_sem, 1);
    batch("acquire_reentrant", &acq_reent, 1);
    batch("acquire_modes_keep", &acq_modes_keep, 1);
    batch("mixed_modes", mixed_modes, sizeof mixed_modes / sizeof mixed_modes[0]);
    /* Format 8: atomic multi-locks (CMD_ACQUIRE_MANY), crossing in
     * opposite orders, a shared one, and one of every session's names. */
    {
        static const uint8_t yz[] = {1, 0, 'y', 1, 0, 'z'}, zx[] = {1, 0, 'z', 1, 0, 'x'};
        const struct cmd many_xyz = {.type = CMD_ACQUIRE_MANY, .session = 1, .seq = 8,
                                     .ack_below = 1, .wait_ms = BATON_WAIT_FOREVER, NAMED("x"),
                                     .n_more = 2, .more = yz, .more_len = sizeof yz};
        const struct cmd many_yzx = {.type = CMD_ACQUIRE_MANY, .session = 2, .seq = 7,
                                     .ack_below = 1, .wait_ms = 2000, NAMED("y"), .n_more = 2,
                                     .more = zx, .more_len = sizeof zx};
        const struct cmd many_shared = {.type = CMD_ACQUIRE_MANY, .session = 3, .seq = 5,
                                        .ack_below = 1, .wait_ms = BATON_WAIT_FOREVER,
                                        .mode = BATON_MODE_SHARED, NAMED("y"), .n_more = 2,
                                        .more = zx, .more_len = sizeof zx};
        const struct cmd mixed_many[] = {many_xyz, many_yzx, many_shared, release, expire,
                                         cancel, timeout};
        batch("acquire_many", &many_xyz, 1);
        batch("mixed_many", mixed_many, sizeof mixed_many / sizeof mixed_many[0]);
    }
    batch("empty", NULL, 0);
}

int main(int argc, char **argv)
{
    char path[1024];

    if (argc != 2) {
        fprintf(stderr, "usage: gen_corpus OUTDIR\n");
        return 2;
    }
    outdir = argv[1];
    mkdir(outdir, 0755);
    snprintf(path, sizeof path, "%s/fuzz_frame", outdir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/fuzz_cmd", outdir);
    mkdir(path, 0755);
    gen_frames();
    gen_cmds();
    return 0;
}
