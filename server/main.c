/*
 * main.c -- batond: one node of a baton lock cluster. See --help.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "baton/baton_defs.h"
#include "server/datadir_lock.h"
#include "server/log.h"
#include "server/server_int.h"

/*
 * Every client connection is a descriptor: raise the soft open-files limit
 * to the hard one, so that a default soft limit (often 1024) does not cap
 * the sessions a leader can serve. Called once at start; failure only costs
 * capacity, so it is logged and start-up goes on.
 */
static void raise_nofile_limit(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == rl.rlim_max) return;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        log_warn("cannot raise the open-files limit to %llu: %s",
                 (unsigned long long)rl.rlim_max, strerror(errno));
}

static int mkdir_p(const char *dir)
{
    if (mkdir(dir, 0755) == 0 || errno == EEXIST) return 0;
    return -1;
}

/*
 * Create the data directory if need be, lock it (datadir_lock.h: nothing
 * inside it is read or written before), then create DIR/raft and DIR/fsm.
 * Returns the lock's descriptor, or -1 after logging why.
 */
static int data_dir_open(const char *dir, const char *raft_dir, const char *fsm_dir)
{
    char errmsg[BATON_ERRMSG_SIZE];
    int lock;

    if (mkdir_p(dir) != 0) {
        log_error("cannot create data directory %s: %s", dir, strerror(errno));
        return -1;
    }
    lock = datadir_lock(dir, errmsg);
    if (lock < 0) {
        log_error("%s", errmsg);
        return -1;
    }
    if (errmsg[0] != '\0') log_warn("%s", errmsg);
    if (mkdir_p(raft_dir) != 0 || mkdir_p(fsm_dir) != 0) {
        log_error("cannot create data directory %s: %s", dir, strerror(errno));
        datadir_unlock(lock);
        return -1;
    }
    return lock;
}

int main(int argc, char **argv)
{
    char raft_dir[4200], fsm_dir[4200], mark[4200], cid[4200], errmsg[BATON_ERRMSG_SIZE] = "";
    struct srv_config cfg;
    struct server srv;
    uv_loop_t loop;
    store *st = NULL;
    int rv, lock;

    sigset_t stop_signals;

    /* Hold SIGINT/SIGTERM (and SIGHUP) until the loop's handlers are
     * installed, so that a stop or reload request that comes during
     * start-up is not fatal but handled. */
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGHUP);
    sigprocmask(SIG_BLOCK, &stop_signals, NULL);

    rv = config_parse(&cfg, argc, argv);
    if (rv != 0) return rv > 0 ? 0 : 2;
    log_set_level(cfg.log_level);
    log_set_format(cfg.log_format);
    log_set_node(cfg.node.id);
    signal(SIGPIPE, SIG_IGN);
    if (cfg.restore != NULL) {
        rv = restore_run(&cfg);
        config_free(&cfg);
        return rv;
    }
    raise_nofile_limit();

    snprintf(raft_dir, sizeof raft_dir, "%s/raft", cfg.data_dir);
    snprintf(fsm_dir, sizeof fsm_dir, "%s/fsm", cfg.data_dir);
    lock = data_dir_open(cfg.data_dir, raft_dir, fsm_dir);
    if (lock < 0) {
        config_free(&cfg);
        return 1;
    }
    if (restore_interrupted(&cfg)) {
        datadir_unlock(lock);
        config_free(&cfg);
        return 1;
    }
    cfg.node.raft_dir = raft_dir;
    snprintf(mark, sizeof mark, "%s/member", cfg.data_dir);
    cfg.node.state_mark = mark;
    snprintf(cid, sizeof cid, "%s/cluster-id", cfg.data_dir);
    cfg.node.cluster_id_file = cid;
    rv = store_open(fsm_dir, &st, errmsg);
    if (rv != 0) {
        log_error("cannot open the lock store in %s: %s", fsm_dir, errmsg);
        datadir_unlock(lock);
        config_free(&cfg);
        return 1;
    }
    log_info("lock store open, applied index %llu", (unsigned long long)store_applied_index(st));

    uv_loop_init(&loop);
    rv = server_init(&srv, &loop, st, &cfg, &node_io_raft);
    if (rv != 0) {
        server_free(&srv);
        store_close(st);
        uv_loop_close(&loop);
        datadir_unlock(lock);
        config_free(&cfg);
        return 1;
    }
    sigprocmask(SIG_UNBLOCK, &stop_signals, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    server_free(&srv);
    store_close(st);
    rv = uv_loop_close(&loop);
    if (rv != 0) log_warn("loop closed with handles still open: %s", uv_strerror(rv));
    log_info("stopped");
    datadir_unlock(lock);
    config_free(&cfg);
    return srv.exit_code;
}
