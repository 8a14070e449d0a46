/*
 * nemesis_admin.h -- the operator's faults of the fault harness
 * (nemesis_admin.c): forced releases and admin expiries of locks the
 * clients hold, through batonctl with the harness's admin token.
 *
 * Besides its FAULT and HEAL lines, each writes what it took to
 * nemesis.log, for the checker (check.c, rule 7: every holder an operator
 * took a lock from is told):
 *
 *   T FORCED LOCK FENCE SESSION now|wait T_SENT   a forced release took the
 *                                                  hold FENCE of SESSION
 *   T EXPIRED SESSION T_SENT [maybe]               an admin expiry ended SESSION
 *
 * T_SENT is when batonctl was started (the operator's action may apply
 * any time after it); T, when it answered. When batonctl could not tell
 * (no leader answered in time), the action may or may not have happened:
 * FORCED then has SESSION 0 (and FENCE 0 if any hold could have been
 * taken), EXPIRED ends with "maybe".
 */
#ifndef BATON_TESTS_FAULT_NEMESIS_ADMIN_H
#define BATON_TESTS_FAULT_NEMESIS_ADMIN_H

#include "tests/fault/run.h"

/* batonctl release --force on a hot lock's holder: --fence or not, --now
 * or not (at random); a fenced one is sent twice, to check that a re-send
 * never takes the lock from the next holder. */
void fault_force_release(struct run *r);
/* batonctl expire of the session that holds a hot lock. */
void fault_expire(struct run *r);

#endif
