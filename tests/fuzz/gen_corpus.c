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

#include "client/baton_defs.h"
#include "proto/buf.h"
#include "proto/msg.h"
#include "storage/cmd.h"

static const char *outdir;

static struct pstr S(const char *s)
{
    struct pstr p = {s, (uint16_t)strlen(s)};
    return p;
}

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

/* Encode m; the file is named after its type. */
static void frame(struct buf *stream, struct msg *m)
{
    struct buf b = {0};
    char name[64];
    int rv = proto_encode(&b, m);

    if (rv != 0) {
        fprintf(stderr, "gen_corpus: encoding %s: %s\n", msg_type_name(m->type), baton_strerror(rv));
        exit(1);
    }
    snprintf(name, sizeof name, "%02u-%s", m->type, msg_type_name(m->type));
    write_file("fuzz_frame", name, &b);
    if (stream != NULL) buf_put(stream, b.data, b.len);
    buf_free(&b);
}

static void gen_frames(void)
{
    struct msg_member members[3] = {{1, S("127.0.0.1:7101"), S("127.0.0.1:7001")},
                                    {2, S("127.0.0.1:7102"), S("127.0.0.1:7002")},
                                    {3, S("127.0.0.1:7103"), S("127.0.0.1:7003")}};
    struct msg_member_info infos[2] = {{1, MEMBER_VOTER, S("127.0.0.1:7101"), S("127.0.0.1:7001")},
                                       {4, MEMBER_SPARE, S("127.0.0.1:7104"), S("")}};
    struct msg_waiter waiters[2] = {{7, 3, -1}, {9, 1, 500}};
    struct msg_lock_summary locks[2] = {{S("jobs/1"), 7, 41, 2}, {S("jobs/2"), 0, 0, 0}};
    struct msg_session_summary sessions[2] = {{7, 10000, 12, S("worker"), 1, 0},
                                              {9, 3000, 15, S(""), 0, 2}};
    struct buf client = {0}, server = {0};
    struct msg m;

#define M(t, id) (memset(&m, 0, sizeof m), m.type = (t), m.req_id = (id))
    M(MSG_HELLO, 1);
    m.u.hello.version = BATON_PROTO_VERSION;
    m.u.hello.client_name = S("fuzz-seed");
    frame(&client, &m);
    M(MSG_HELLO_OK, 1);
    m.u.hello_ok.version = BATON_PROTO_VERSION;
    m.u.hello_ok.node_id = 2;
    frame(&server, &m);
    M(MSG_OPEN_SESSION, 2);
    m.u.open_session.ttl_ms = 10000;
    m.u.open_session.client_name = S("worker");
    frame(&client, &m);
    M(MSG_SESSION, 2);
    m.u.session.session = 7;
    m.u.session.ttl_ms = 10000;
    frame(&server, &m);
    M(MSG_ACQUIRE, 3);
    m.u.op.session = 7;
    m.u.op.seq = 1;
    m.u.op.ack_below = 1;
    m.u.op.wait_ms = BATON_WAIT_FOREVER;
    m.u.op.lock = S("jobs/1");
    m.u.op.lock_delay_ms = 250;
    frame(&client, &m);
    M(MSG_RELEASE, 4);
    m.u.op.session = 7;
    m.u.op.seq = 2;
    m.u.op.ack_below = 2;
    m.u.op.fence = 41;
    m.u.op.lock = S("jobs/1");
    frame(&client, &m);
    M(MSG_CANCEL, 5);
    m.u.op.session = 7;
    m.u.op.seq = 3;
    m.u.op.ack_below = 3;
    m.u.op.waiter = 1;
    m.u.op.lock = S("jobs/1");
    frame(&client, &m);
    M(MSG_CLOSE_SESSION, 6);
    m.u.op.session = 7;
    m.u.op.seq = 4;
    m.u.op.ack_below = 4;
    frame(NULL, &m);
    M(MSG_KEEPALIVE, 7);
    m.u.keepalive.session = 7;
    frame(&client, &m);
    M(MSG_RESULT, 3);
    m.u.result.status = 0;
    m.u.result.kind = RESULT_QUEUED;
    m.u.result.value = 2;
    frame(&server, &m);
    M(MSG_GRANTED, 0);
    m.u.push.session = 7;
    m.u.push.waiter = 1;
    m.u.push.fence = 42;
    m.u.push.lock = S("jobs/1");
    frame(&server, &m);
    M(MSG_WAIT_FAILED, 0);
    m.u.push.session = 7;
    m.u.push.waiter = 5;
    m.u.push.status = BATON_ETIMEDOUT;
    m.u.push.lock = S("jobs/2");
    frame(&server, &m);
    M(MSG_STATUS, 8);
    frame(&client, &m);
    M(MSG_STATUS_R, 8);
    m.u.status_r.node_id = 1;
    m.u.status_r.role = ROLE_LEADER;
    m.u.status_r.leader_id = 1;
    m.u.status_r.term = 3;
    m.u.status_r.last_index = 120;
    m.u.status_r.commit_index = 120;
    m.u.status_r.applied_index = 119;
    m.u.status_r.n_members = 3;
    m.u.status_r.members = members;
    m.u.status_r.state_digest = 0x1234567890abcdefull;
    frame(&server, &m);
    M(MSG_LOCK_INFO, 9);
    m.u.lock_info.lock = S("jobs/1");
    frame(&client, &m);
    M(MSG_LOCK_INFO_R, 9);
    m.u.lock_info_r.held = 1;
    m.u.lock_info_r.holder_session = 5;
    m.u.lock_info_r.holder_waiter = 2;
    m.u.lock_info_r.fence = 40;
    m.u.lock_info_r.granted_index = 100;
    m.u.lock_info_r.total_waiters = 2;
    m.u.lock_info_r.n_waiters = 2;
    m.u.lock_info_r.waiters = waiters;
    m.u.lock_info_r.lock = S("jobs/1");
    frame(&server, &m);
    M(MSG_LIST_LOCKS, 10);
    m.u.list_locks.prefix = S("jobs/");
    m.u.list_locks.limit = 100;
    frame(&client, &m);
    M(MSG_LIST_LOCKS_R, 10);
    m.u.list_locks_r.n = 2;
    m.u.list_locks_r.items = locks;
    m.u.list_locks_r.more = 1;
    frame(&server, &m);
    M(MSG_REDIRECT, 11);
    m.u.redirect.leader_id = 3;
    m.u.redirect.client_addr = S("127.0.0.1:7003");
    frame(&server, &m);
    M(MSG_NO_LEADER, 12);
    frame(&server, &m);
    M(MSG_ERROR, 13);
    m.u.error.code = BATON_EMALFORMED;
    m.u.error.message = S("cannot decode ACQUIRE frame: malformed data");
    frame(&server, &m);
    M(MSG_LOST, 0);
    m.u.push.session = 7;
    m.u.push.waiter = 1;
    m.u.push.fence = 42;
    m.u.push.status = BATON_ESESSION;
    m.u.push.lock = S("jobs/1");
    frame(&server, &m);
    M(MSG_SESSION_EXPIRED, 0);
    m.u.session_expired.session = 7;
    frame(&server, &m);
    M(MSG_FORCE_RELEASE, 14);
    m.u.force_release.lock = S("jobs/1");
    frame(&client, &m);
    M(MSG_FORCE_RELEASE_R, 14);
    m.u.force_release_r.lost_session = 7;
    m.u.force_release_r.lost_fence = 42;
    m.u.force_release_r.new_session = 9;
    m.u.force_release_r.new_fence = 43;
    frame(&server, &m);
    M(MSG_EXPIRE_SESSION, 15);
    m.u.expire_session.session = 9;
    frame(&client, &m);
    M(MSG_TRANSFER, 16);
    m.u.transfer.id = 2;
    frame(&client, &m);
    M(MSG_TRANSFER_R, 16);
    m.u.transfer_r.leader_id = 2;
    frame(&server, &m);
    M(MSG_LIST_SESSIONS, 17);
    m.u.list_sessions.after = 0;
    m.u.list_sessions.limit = 10;
    frame(&client, &m);
    M(MSG_SESSIONS_R, 17);
    m.u.sessions_r.n = 2;
    m.u.sessions_r.items = sessions;
    frame(&server, &m);
    M(MSG_WATCH, 18);
    m.u.watch.lock = S("jobs/1");
    frame(&client, &m);
    M(MSG_WATCH_EVENT, 0);
    m.u.watch_event.seq = 2;
    m.u.watch_event.info.delayed = 1;
    m.u.watch_event.info.total_waiters = 1;
    m.u.watch_event.info.n_waiters = 1;
    m.u.watch_event.info.waiters = waiters;
    m.u.watch_event.info.lock = S("jobs/1");
    frame(&server, &m);
    M(MSG_SNAPSHOT, 19);
    frame(&client, &m);
    M(MSG_SNAPSHOT_R, 19);
    m.u.snapshot_r.index = 8193;
    frame(&server, &m);
    M(MSG_MEMBERS, 20);
    frame(&client, &m);
    M(MSG_MEMBERS_R, 20);
    m.u.members_r.n = 2;
    m.u.members_r.members = infos;
    frame(&server, &m);
    M(MSG_MEMBER_REMOVE, 21);
    m.u.member_remove.id = 3;
    frame(&client, &m);
#undef M
    /* What a client and a server send on one connection, back to back; and
     * a stream that ends in the middle of a frame. */
    write_file("fuzz_frame", "stream-client", &client);
    write_file("fuzz_frame", "stream-server", &server);
    client.len -= 5;
    write_file("fuzz_frame", "stream-partial", &client);
    buf_free(&client);
    buf_free(&server);
}

/* Write one batch of n commands. */
static void batch(const char *name, const struct cmd *cmds, uint32_t n)
{
    struct buf b = {0};
    size_t start;

    if (cmd_batch_begin(&b, &start) != 0) exit(1);
    for (uint32_t i = 0; i < n; i++)
        if (cmd_batch_add(&b, &cmds[i]) != 0) {
            fprintf(stderr, "gen_corpus: batch %s: command %u refused\n", name, i);
            exit(1);
        }
    cmd_batch_end(&b, start, n);
    write_file("fuzz_cmd", name, &b);
    buf_free(&b);
}

#define NAMED(s) .name = (s), .name_len = sizeof(s) - 1

static void gen_cmds(void)
{
    /* Sessions 1..3 and locks "x" (held by 1, 2 waiting) and "y" (held by 3,
     * lock-delay 1000) exist when fuzz_cmd applies these (its preamble). */
    const struct cmd open = {.type = CMD_OPEN_SESSION, .ttl_ms = 5000, NAMED("seed")};
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
    const struct cmd delay_end = {.type = CMD_DELAY_END, NAMED("y")};
    const struct cmd mixed[] = {open, acq_wait, release, expire, delay_end, cancel, close};

    batch("open_session", &open, 1);
    batch("acquire_try", &acq_try, 1);
    batch("acquire_wait", &acq_wait, 1);
    batch("release", &release, 1);
    batch("cancel", &cancel, 1);
    batch("close_session", &close, 1);
    batch("expire_session", &expire, 1);
    batch("wait_timeout", &timeout, 1);
    batch("force_release", &force, 1);
    batch("delay_end", &delay_end, 1);
    batch("mixed", mixed, sizeof mixed / sizeof mixed[0]);
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
