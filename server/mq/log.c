// SPDX-License-Identifier: GPL-2.0
/* The log sink: set once by the front end, stderr until then. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* Debug lines only on request, as nbdkit -v would. */
static int stderr_max_level(void)
{
	return getenv("MQBLK_DEBUG") ? MQ_LOG_DEBUG : MQ_LOG_INFO;
}

static void stderr_sink(enum mq_log_level level, const char *msg)
{
	static const char *const names[] = {
		[MQ_LOG_ERR] = "error",
		[MQ_LOG_WARN] = "warning",
		[MQ_LOG_INFO] = "info",
		[MQ_LOG_DEBUG] = "debug",
	};

	if ((int)level > stderr_max_level())
		return;
	fprintf(stderr, "mqblk: %s: %s\n", names[level], msg);
}

/* Written once at start-up; atomic so that late readers see them whole. */
static _Atomic(mq_log_sink_fn *) log_sink = stderr_sink;
static atomic_int log_max_level = MQ_LOG_DEBUG;

void mq_log_set_sink(mq_log_sink_fn *sink)
{
	atomic_store(&log_sink, sink ? sink : stderr_sink);
	if (!sink)
		mq_log_set_level(stderr_max_level());
}

void mq_log_set_level(int max_level)
{
	atomic_store(&log_max_level, max_level);
}

void mq_log(enum mq_log_level level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if ((int)level >
	    atomic_load_explicit(&log_max_level, memory_order_relaxed))
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	atomic_load (&log_sink)(level, buf);
}

const char *mq_strerror(int errnum)
{
	const char *desc = strerrordesc_np(errnum);

	return desc ? desc : "Unknown error";
}
