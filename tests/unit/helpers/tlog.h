/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The log, captured: install tlog_sink with mq_log_set_sink() and the
 * lines the code under test logs are kept (64 KiB, then dropped) for the
 * test to search.
 */
#ifndef MQBLK_TEST_TLOG_H
#define MQBLK_TEST_TLOG_H

#include <stdbool.h>

#include "server/mq/log.h"

void tlog_sink(enum mq_log_level level, const char *msg);
void tlog_clear(void);
bool tlog_has(const char *s);
/* What was kept, for a failure message. */
const char *tlog_text(void);

#endif
