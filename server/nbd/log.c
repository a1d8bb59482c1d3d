// SPDX-License-Identifier: GPL-2.0
/*
 * mqblkd's log: errors and warnings always, connection events with -v,
 * protocol detail with -vv.  To stderr in the foreground, to syslog once
 * daemonized.  Set once at start-up, read by every thread.  The request
 * core and the device models log through the same sink.
 */
#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>

#include "mqblkd.h"
#include "server/mq/log.h"

static int log_verbose;
static bool log_syslog;

static void emit(int level, const char *msg)
{
	static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};

	if (log_verbose < 0) /* -1: silent (the fuzzer) */
		return;
	if (level > 1 && level - 1 > log_verbose)
		return;
	if (log_syslog)
		syslog(prio[level], "%s", msg);
	else
		fprintf(stderr, "mqblkd: %s\n", msg);
}

static void core_sink(enum mq_log_level level, const char *msg)
{
	emit((int)level, msg);
}

void mqblkd_log_init(int verbose, bool use_syslog)
{
	log_verbose = verbose;
	log_syslog = use_syslog;
	if (use_syslog)
		openlog("mqblkd", LOG_PID, LOG_DAEMON);
	mq_log_set_sink(core_sink);
}

void mqblkd_log(int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (log_verbose < 0 || (level > 1 && level - 1 > log_verbose))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	emit(level, msg);
}
