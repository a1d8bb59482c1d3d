/* SPDX-License-Identifier: GPL-2.0 */
/* Every unit suite's main(): run the suite, exit with its verdict. */
#ifndef MQBLK_TCHECK_H
#define MQBLK_TCHECK_H

#include <check.h>

/*
 * Runs s with CK_NORMAL output; EXIT_SUCCESS if nothing failed.
 *
 * Each case runs in its own process (Check's fork mode) under its
 * tcase's timeout, or CK_DEFAULT_TIMEOUT (ctest sets 120 s): a case that
 * hangs is killed and reported by name ("...:E:suite:case:0: (after this
 * point) Test timeout expired"), and the suite goes on.  Each case's
 * result is also printed as it ends, so that a suite killed from outside
 * (ctest's timeout) still shows the cases that finished; the hung one is
 * the next in the suite.
 */
int tcheck_run(Suite *s);

#endif
