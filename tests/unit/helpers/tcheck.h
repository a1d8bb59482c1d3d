/* SPDX-License-Identifier: GPL-2.0 */
/* Every unit suite's main(): run the suite, exit with its verdict. */
#ifndef MQBLK_TCHECK_H
#define MQBLK_TCHECK_H

#include <check.h>

/* Runs s with CK_NORMAL output; EXIT_SUCCESS if nothing failed. */
int tcheck_run(Suite *s);

#endif
