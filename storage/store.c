/*
 * store.c -- the LMDB environment under the lock store: opening (with the
 * crash-after-reboot check and the format upgrades), closing, and the
 * write-transaction loop that grows the map (the meta values and the
 * translation of LMDB codes into BATON_E* are records.c's).
 *
 * Durability model (docs/libraft-0.15.md, "LMDB under raft: durability"):
 * the environment runs with
 * MDB_NOSYNC because the raft log is the durable source of every entry. A
 * process crash loses nothing (the pages sit in the page cache), but an OS
 * crash may leave the files torn. So the meta db keeps a "clean" flag, set
 * only by a clean store_close, and the boot id of the machine that last
 * opened the files. If at open the flag is absent and the boot id changed,
 * the files are deleted and the store starts empty; raft then installs its
 * snapshot and replays its log into it. The two commits that change the
 * flag are made with syncing switched on, so the flag never reaches the
 * disk ahead of the data it vouches for.
 *
 * The map is writable (MDB_WRITEMAP): a commit writes its pages straight
 * into the shared mapping instead of copying them into the file with
 * pwrite/writev. On this kind of machine that took an entry's apply from
 * about 12-17 us to a few, and an apply is on the commit path twice (the
 * leader's, and a follower's before it acknowledges the next entry). With a
 * writable map the file is as long as the map, and a write into a hole of a
 * sparse file on a full filesystem would be a SIGBUS, not an error. So the
 * map starts small (STORE_MAP_SIZE) and every byte of it is allocated on
 * disk (posix_fallocate) before LMDB maps it: at open, and before the map
 * is grown on MDB_MAP_FULL. A full disk then shows up as BATON_ENOSPC
 * from that allocation, never as a signal.
 *
 * The map grows in bounded steps (store_next_growth): doubling a 512 MiB
 * map would need 512 MiB free at once, far above any sensible free-space
 * floor, and a growth that fails under a committed entry stops that node's
 * state machine (docs/operations.md, "Disk full").
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baton/baton_defs.h"
#include "proto/buf.h"
#include "storage/store_int.h"
#include "storage/store_test.h"

const char *store__boot_id_path = "/proc/sys/kernel/random/boot_id";

static const char *const db_names[DB_COUNT_] = {
    "meta", "sessions", "locks", "waiters", "owned", "dedup", "members", "lost", "nonces",
    "session_nonces", "holders", "session_locks", "multi", "values",
};

/*
 * Allocate the open environment's data file up to `bytes` (extending the
 * file if it is shorter), so that no page of a writable map of that size is
 * a hole. 0, or an errno/LMDB value (ENOSPC). A filesystem that cannot
 * preallocate (EOPNOTSUPP, EINVAL) is left as it is: there a full disk could
 * still turn into a SIGBUS, as with any writable file mapping.
 */
static int map_reserve(store *s, size_t bytes)
{
    mdb_filehandle_t fd;
    int rc = mdb_env_get_fd(s->env, &fd);

    if (rc != 0) return rc;
    rc = posix_fallocate(fd, 0, (off_t)bytes);
    if (rc == EOPNOTSUPP || rc == EINVAL) return 0;
    return rc;
}

static void set_errmsg(char *errmsg, const char *fmt, ...)
{
    va_list ap;

    if (errmsg == NULL) return;
    va_start(ap, fmt);
    vsnprintf(errmsg, BATON_ERRMSG_SIZE, fmt, ap);
    va_end(ap);
}

/*
 * Read this machine's boot id. An unreadable file leaves it empty, which
 * open_check treats as "maybe rebooted": after an unclean shutdown the files
 * are then rebuilt, which is always safe, only slower.
 */
static void read_boot_id(store *s)
{
    int fd = open(store__boot_id_path, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    s->boot_id_len = 0;
    if (fd < 0) return;
    n = read(fd, s->boot_id, sizeof s->boot_id);
    close(fd);
    if (n <= 0) return;
    while (n > 0 && (s->boot_id[n - 1] == '\n' || s->boot_id[n - 1] == ' ')) n--;
    s->boot_id_len = (size_t)n;
}

/* Create the environment and open (creating) every named database. */
static int env_open(store *s, char *errmsg)
{
    MDB_envinfo info;
    MDB_txn *txn;
    int rc;

    rc = mdb_env_create(&s->env);
    if (rc != 0) goto err;
    s->map_size = STORE_MAP_SIZE;
    rc = mdb_env_set_mapsize(s->env, s->map_size);
    /* Room for more databases than there are, so that a later format
     * adding one opens environments of this one unchanged. */
    if (rc == 0) rc = mdb_env_set_maxdbs(s->env, 16);
    if (rc == 0) rc = mdb_env_open(s->env, s->dir, MDB_NOSYNC | MDB_NOTLS | MDB_WRITEMAP, 0600);
    if (rc != 0) goto err_after_create;
    /* Allocate the whole map before the first write transaction. LMDB has
     * just made the file as long as the map (sparse), and a map grown in an
     * earlier run is larger than STORE_MAP_SIZE: LMDB maps all of it. (The
     * file cannot be allocated before mdb_env_open: LMDB takes a non-empty
     * file for an existing environment.) */
    mdb_env_info(s->env, &info);
    s->map_size = info.me_mapsize;
    rc = map_reserve(s, s->map_size);
    if (rc != 0) goto err_after_create;
    rc = mdb_txn_begin(s->env, NULL, 0, &txn);
    if (rc != 0) goto err_after_create;
    for (int i = 0; i < DB_COUNT_ && rc == 0; i++)
        rc = mdb_dbi_open(txn, db_names[i], MDB_CREATE, &s->dbi[i]);
    if (rc != 0) {
        mdb_txn_abort(txn);
        goto err_after_create;
    }
    rc = mdb_txn_commit(txn);
    if (rc != 0) goto err_after_create;
    return 0;

err_after_create:
    mdb_env_close(s->env);
    s->env = NULL;
err:
    set_errmsg(errmsg, "lmdb in %s: %s", s->dir, mdb_strerror(rc));
    return rc;
}

/* Delete the environment's files (the store is rebuilt by raft). */
static int env_wipe(store *s, char *errmsg)
{
    static const char *const files[] = {"data.mdb", "lock.mdb"};
    char path[4096];

    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(path, sizeof path, "%s/%s", s->dir, files[i]);
        if (unlink(path) != 0 && errno != ENOENT) {
            set_errmsg(errmsg, "cannot delete %s: %s", path, strerror(errno));
            return EIO;
        }
    }
    return 0;
}

/*
 * Decide whether the files survived the last shutdown. Sets *wipe when the
 * flag is absent and the machine rebooted since (or we cannot tell), and
 * *fresh when the store has never been initialised.
 */
static int open_check(store *s, int *wipe, int *fresh)
{
    MDB_txn *txn;
    MDB_val v;
    int clean, has_boot, has_format, rc;

    *wipe = 0;
    *fresh = 0;
    rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn);
    if (rc != 0) return rc;
    rc = db_get(txn, s->dbi[DB_META], META_FORMAT, strlen(META_FORMAT), &v, &has_format);
    if (rc == 0) rc = db_get(txn, s->dbi[DB_META], META_CLEAN, strlen(META_CLEAN), &v, &clean);
    if (rc == 0)
        rc = db_get(txn, s->dbi[DB_META], META_BOOT_ID, strlen(META_BOOT_ID), &v, &has_boot);
    if (rc == 0 && has_format && !clean) {
        int same = has_boot && s->boot_id_len > 0 && v.mv_size == s->boot_id_len &&
                   memcmp(v.mv_data, s->boot_id, s->boot_id_len) == 0;
        *wipe = !same;
    }
    *fresh = !has_format;
    mdb_txn_abort(txn);
    return rc;
}

/* Rewrite one session record: old -> p[0..SESS_VAL_MAX), *len bytes. 0
 * or an LMDB code. */
typedef int sess_rewrite_fn(const MDB_val *old, uint8_t *p, size_t *len);

/*
 * Rewrite every session record with fn, in the caller's transaction. Each
 * step seeks the first key above the last one rewritten instead of
 * stepping the cursor, so that it does not depend on where LMDB leaves a
 * cursor after a put that changes a value's size (keys are big-endian
 * ids: the next key is at least id + 1).
 */
static int sessions_rewrite(store *s, MDB_txn *txn, sess_rewrite_fn *fn)
{
    uint8_t key[8], val[SESS_VAL_MAX];
    MDB_cursor *cur;
    MDB_val k, v;
    uint64_t id = 0;
    size_t len;
    int rc = mdb_cursor_open(txn, s->dbi[DB_SESSIONS], &cur);

    if (rc != 0) return rc;
    for (;;) {
        key_u64(key, id);
        k.mv_size = sizeof key;
        k.mv_data = key;
        rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
        if (rc != 0) break;
        if (k.mv_size != sizeof key) {
            rc = MDB_CORRUPTED;
            break;
        }
        id = be_get_u64(k.mv_data);
        key_u64(key, id); /* k points into the map, which the put may change */
        rc = fn(&v, val, &len);
        if (rc == 0) rc = db_put(txn, s->dbi[DB_SESSIONS], key, sizeof key, val, len);
        if (rc != 0 || id == UINT64_MAX) break;
        id++;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/*
 * Upgrade steps, each from the format before to its own, run in order by
 * upgrade() inside the open's write transaction.
 *
 * To format 5 (owners), from 3 or 4: formats 3 and 4 lack the session
 * owner, and every session they hold was opened by the anonymous
 * principal: no binary of theirs knew another. (Format 3 also lacks the
 * members table, which env_open has just created, empty.)
 */
static int upgrade_to_owners(store *s, MDB_txn *txn)
{
    return sessions_rewrite(s, txn, sess_upgrade); /* the owner byte of format 5 */
}

/*
 * To format 6 (nonces), from 5: the two databases of OPEN_SESSION's nonces
 * (nonces.c) were created empty by env_open, and empty is right: no binary
 * of an older format sent a nonce, so none of its sessions has one. So
 * this step only checks that they are empty (anything in them would not
 * come from an older binary: MDB_CORRUPTED). Nothing else changed: the
 * keep lists of format 6's commands need no new state (apply.c, step 3).
 */
static int upgrade_to_nonces(store *s, MDB_txn *txn)
{
    MDB_stat st;
    int rc;

    for (int db = DB_NONCES; db <= DB_SESSION_NONCES; db++) {
        rc = mdb_stat(txn, s->dbi[db], &st);
        if (rc != 0) return rc;
        if (st.ms_entries != 0) return MDB_CORRUPTED;
    }
    return 0;
}

/* A database that an older format did not have must be empty. */
static int db_must_be_empty(store *s, MDB_txn *txn, int db)
{
    MDB_stat st;
    int rc = mdb_stat(txn, s->dbi[db], &st);

    return rc != 0 ? rc : st.ms_entries != 0 ? MDB_CORRUPTED : 0;
}

/*
 * Bring a store an older batond left in format `format` to STORE_FORMAT,
 * inside the open's write transaction (all or nothing), one step per
 * format it lacks:
 *   3, 4 -> 5  upgrade_to_owners
 *   5 -> 6     the lost table (lost.c, lost_upgrade) and the nonce
 *              databases (upgrade_to_nonces)
 *   6 -> 7     lock modes (modes.c, modes_upgrade)
 *   7 -> 8     multi-locks: nothing to rewrite (store_int.h, format 8);
 *              DB_MULTI, which LMDB created empty, must be so
 *   8 -> 9     values: the same, for DB_VALUES
 * Any other format is MDB_VERSION_MISMATCH.
 */
static int upgrade(store *s, MDB_txn *txn, uint64_t format)
{
    int rc = 0;

    if (format == STORE_FORMAT) return 0;
    if (format < STORE_FORMAT_NO_MEMBERS || format > STORE_FORMAT) return MDB_VERSION_MISMATCH;
    if (format <= STORE_FORMAT_NO_OWNERS) rc = upgrade_to_owners(s, txn);
    if (rc == 0 && format <= STORE_FORMAT_NO_LOST) rc = lost_upgrade(s, txn);
    if (rc == 0 && format <= STORE_FORMAT_NO_NONCES) rc = upgrade_to_nonces(s, txn);
    if (rc == 0 && format <= STORE_FORMAT_NO_MODES) rc = modes_upgrade(s, txn);
    if (rc == 0 && format <= STORE_FORMAT_NO_MULTI) rc = db_must_be_empty(s, txn, DB_MULTI);
    if (rc == 0 && format <= STORE_FORMAT_NO_VALUES) rc = db_must_be_empty(s, txn, DB_VALUES);
    if (rc != 0) return rc;
    return meta_put_u64(s, txn, META_FORMAT, STORE_FORMAT);
}

/* Runs in store__write at open: initialise a fresh store, record this
 * boot, and remove the clean flag for as long as the store is open. */
static int open_mark(store *s, MDB_txn *txn, void *arg)
{
    int fresh = *(int *)arg;
    uint64_t format;
    int found, rc;

    if (fresh) {
        rc = meta_put_u64(s, txn, META_FORMAT, STORE_FORMAT);
        if (rc == 0) rc = meta_put_u64(s, txn, META_APPLIED, 0);
        if (rc == 0) rc = meta_put_u64(s, txn, META_DIGEST, 0);
        if (rc == 0) rc = meta_put_u64(s, txn, META_NEXT_SESSION, 1);
        if (rc == 0) rc = meta_put_u64(s, txn, META_NEXT_FENCE, 1);
        if (rc == 0) rc = meta_put_u64(s, txn, META_NEXT_ENQ, 1);
        if (rc != 0) return rc;
    }
    rc = meta_get_u64(s, txn, META_FORMAT, &format, &found);
    if (rc == 0) rc = upgrade(s, txn, format);
    if (rc != 0) return rc;
    rc = meta_get_u64(s, txn, META_APPLIED, &s->applied, NULL);
    if (rc == 0) rc = meta_get_u64(s, txn, META_DIGEST, &s->digest, &found);
    if (rc != 0) return rc;
    if (!found) return MDB_CORRUPTED; /* every store of this format has one */
    rc = db_put(txn, s->dbi[DB_META], META_BOOT_ID, strlen(META_BOOT_ID), s->boot_id,
                s->boot_id_len);
    if (rc != 0) return rc;
    return db_del(txn, s->dbi[DB_META], META_CLEAN, strlen(META_CLEAN), NULL);
}

/* Runs in store__write at close: the files are now complete. */
static int close_mark(store *s, MDB_txn *txn, void *arg)
{
    static const uint8_t one = 1;
    (void)arg;
    return db_put(txn, s->dbi[DB_META], META_CLEAN, strlen(META_CLEAN), &one, 1);
}

/*
 * Commit fn's writes durably: with MDB_NOSYNC off, the commit flushes every
 * earlier page before it writes the meta page. Used for the clean flag.
 */
static int write_synced(store *s, store_txn_fn *fn, void *arg)
{
    int rc = mdb_env_set_flags(s->env, MDB_NOSYNC, 0);

    if (rc != 0) return store__err(rc);
    rc = store__write(s, fn, arg);
    mdb_env_set_flags(s->env, MDB_NOSYNC, 1);
    return rc;
}

int store_open(const char *dir, store **out, char *errmsg)
{
    store *s;
    int wipe, fresh, rc;

    *out = NULL;
    s = calloc(1, sizeof *s);
    if (s == NULL) goto err_nomem;
    s->dir = strdup(dir);
    if (s->dir == NULL) goto err_nomem_after_alloc;
    s->grow_max = STORE_GROW_MAX;
    read_boot_id(s);

    rc = env_open(s, errmsg);
    if (rc != 0) goto err_after_dir;
    rc = open_check(s, &wipe, &fresh);
    if (rc != 0) {
        set_errmsg(errmsg, "lmdb in %s: reading meta: %s", dir, mdb_strerror(rc));
        goto err_after_env;
    }
    if (wipe) {
        /* Unclean shutdown and a reboot since: the files may be torn. */
        mdb_env_close(s->env);
        s->env = NULL;
        rc = env_wipe(s, errmsg);
        if (rc != 0) goto err_after_dir;
        rc = env_open(s, errmsg);
        if (rc != 0) goto err_after_dir;
        fresh = 1;
    }
    rc = write_synced(s, open_mark, &fresh);
    if (rc != 0) {
        set_errmsg(errmsg, "lmdb in %s: cannot initialise meta (%s)", dir, baton_strerror(rc));
        goto err_after_env;
    }
    *out = s;
    return 0;

err_after_env:
    mdb_env_close(s->env);
err_after_dir:
    free(s->dir);
    free(s);
    rc = store__err(rc);
    return rc == BATON_ENOMEM || rc == BATON_ENOSPC ? rc : BATON_EIO;
err_nomem_after_alloc:
    free(s);
err_nomem:
    set_errmsg(errmsg, "out of memory");
    return BATON_ENOMEM;
}

void store_close(store *s)
{
    if (s == NULL) return;
    for (int i = 0; i < STORE_MAX_SNAPS; i++) store_snapshot_end(s->snaps[i]);
    mdb_env_sync(s->env, 1);
    write_synced(s, close_mark, NULL);
    mdb_env_close(s->env);
    free(s->dir);
    free(s);
}

uint64_t store_applied_index(store *s)
{
    return s->applied;
}

uint64_t store_restored_index(store *s)
{
    return s->restored;
}

uint64_t store_digest(store *s)
{
    return s->digest;
}

int store_sync(store *s)
{
    return mdb_env_sync(s->env, 1) == 0 ? 0 : BATON_EIO;
}

size_t store_next_growth(store *s)
{
    return s->map_size < s->grow_max ? s->map_size : s->grow_max;
}

/*
 * Grow the map by store_next_growth after MDB_MAP_FULL. LMDB allows this
 * only while the process has no transaction open; the store keeps none
 * open across calls but a snapshot's read transaction, which is stopped
 * first (snapshot_bg.c).
 */
static int grow_map(store *s)
{
    size_t bigger = s->map_size + store_next_growth(s);
    int rc;

    if (bigger < s->map_size) return MDB_MAP_FULL;
    store__snapshot_stop(s);
    /* Allocate the new part of the file first (see the top of this file). */
    rc = map_reserve(s, bigger);
    if (rc != 0) return rc;
    rc = mdb_env_set_mapsize(s->env, bigger);
    if (rc != 0) return rc;
    s->map_size = bigger;
    return 0;
}

int store__write(store *s, store_txn_fn *fn, void *arg)
{
    MDB_txn *txn;
    int rc;

    for (;;) {
        rc = mdb_txn_begin(s->env, NULL, 0, &txn);
        if (rc != 0) return store__err(rc);
        rc = fn(s, txn, arg);
        if (rc == 0)
            rc = mdb_txn_commit(txn); /* frees txn, even on failure */
        else
            mdb_txn_abort(txn);
        if (rc != MDB_MAP_FULL) return store__err(rc);
        rc = grow_map(s);
        if (rc != 0) return store__err(rc);
    }
}

/* ---- test hooks (store_test.h) ----------------------------------------- */

int store__set_map_size(store *s, size_t bytes)
{
    int rc = mdb_env_set_mapsize(s->env, bytes);
    MDB_envinfo info;

    if (rc != 0) return store__err(rc);
    mdb_env_info(s->env, &info);
    s->map_size = info.me_mapsize;
    return 0;
}

size_t store__map_size(store *s)
{
    return s->map_size;
}

void store__set_grow_max(store *s, size_t bytes)
{
    s->grow_max = bytes;
}

void store__abandon(store *s)
{
    if (s == NULL) return;
    mdb_env_close(s->env);
    free(s->dir);
    free(s);
}

void store__set_boot_id_path(const char *path)
{
    store__boot_id_path = path;
}

static int put_format(store *s, MDB_txn *txn, void *arg)
{
    return meta_put_u64(s, txn, META_FORMAT, *(uint64_t *)arg);
}

int store__set_format(store *s, uint64_t format)
{
    return store__write(s, put_format, &format);
}

/* A session record of formats 5 and 6 in the layout of formats 3 and 4. */
static int sess_downgrade(const MDB_val *cur, uint8_t *p, size_t *len)
{
    struct sess_rec r;
    int rc = sess_decode(cur, &r);

    if (rc == 0) *len = sess_encode_v4(p, &r);
    return rc;
}

/* Runs in store__write for store__downgrade: the nonce databases emptied
 * (formats before 6 had none), the lost table checked empty (LMDB keeps
 * the empty database, which the upgrade then finds as a fresh store's),
 * and for formats 3 and 4 the session records without the owner. */
static int downgrade_txn(store *s, MDB_txn *txn, void *arg)
{
    uint64_t format = *(uint64_t *)arg;
    MDB_stat st;
    int rc = db_must_be_empty(s, txn, DB_VALUES);

    if (rc == MDB_CORRUPTED) return BATON_EINVAL; /* a hold or wait has a value */
    if (rc != 0 || format == STORE_FORMAT_NO_VALUES)
        return rc != 0 ? rc : meta_put_u64(s, txn, META_FORMAT, format);
    rc = db_must_be_empty(s, txn, DB_MULTI);
    if (rc == MDB_CORRUPTED) return BATON_EINVAL; /* a multi-lock holds or waits */
    if (rc != 0 || format == STORE_FORMAT_NO_MULTI)
        return rc != 0 ? rc : meta_put_u64(s, txn, META_FORMAT, format);
    rc = modes_downgrade(s, txn);

    if (rc != 0 || format == STORE_FORMAT_NO_MODES)
        return rc != 0 ? rc : meta_put_u64(s, txn, META_FORMAT, format);
    rc = mdb_stat(txn, s->dbi[DB_LOST], &st);
    if (rc == 0 && st.ms_entries != 0) return BATON_EINVAL;
    if (rc == 0) rc = mdb_drop(txn, s->dbi[DB_NONCES], 0);
    if (rc == 0) rc = mdb_drop(txn, s->dbi[DB_SESSION_NONCES], 0);
    if (rc == 0 && format <= STORE_FORMAT_NO_OWNERS) rc = sessions_rewrite(s, txn, sess_downgrade);
    if (rc != 0) return rc;
    return meta_put_u64(s, txn, META_FORMAT, format);
}

int store__downgrade(store *s, uint64_t format)
{
    if (format < STORE_FORMAT_NO_MEMBERS || format > STORE_FORMAT_NO_VALUES) return BATON_EINVAL;
    return store__write(s, downgrade_txn, &format);
}
