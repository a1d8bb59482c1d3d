// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>

#include "tcheck.h"

int tcheck_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	/* "-": Check's log on stdout, one line per case as it ends. */
	srunner_set_log(sr, "-");
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
