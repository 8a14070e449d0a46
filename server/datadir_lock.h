/*
 * datadir_lock.h -- one batond per data directory. Two processes on one
 * data directory corrupt the node: the second one's raft I/O rewrites the
 * log files the first still writes (which then writes into deleted files),
 * and with other ports it can even lead a cluster of its own, granting a
 * lock that the first one's cluster has granted too. So batond, and
 * batond --restore, take an exclusive lock on DIR/batond.lock before they
 * read or write anything else in DIR, and hold it for the process's life.
 *
 * The lock is an open file description lock (fcntl F_OFD_SETLK) on the
 * whole file: the kernel drops it when the process ends however it ends,
 * so a file left by a killed batond is no obstacle -- the next one takes the
 * lock and writes its own pid over the old one. The pid in the file is for
 * the message of a batond that finds the lock taken; the lock alone
 * decides. The descriptor is close-on-exec. The file is never removed (a
 * removal would let two processes lock two different files of one name).
 */
#ifndef BATON_SERVER_DATADIR_LOCK_H
#define BATON_SERVER_DATADIR_LOCK_H

#define DATADIR_LOCK_FILE "batond.lock" /* its name inside the data directory */

/*
 * Lock the existing directory dir: create DIR/batond.lock if need be,
 * lock it without waiting, and write this process's pid into it. Returns
 * the lock's descriptor (>= 0), to be given to datadir_unlock at the end,
 * with errmsg (BATON_ERRMSG_SIZE bytes) "" or a warning to log: the pid
 * could not be written (a full disk; the lock holds all the same, and a
 * refused batond then says the file holds no pid). Or -1 with errmsg
 * saying why: the directory is in use (naming the holder's pid when the
 * file holds one), or the file cannot be opened or locked.
 */
int datadir_lock(const char *dir, char *errmsg);

/* Release the lock fd (a no-op for fd < 0). */
void datadir_unlock(int fd);

#endif
