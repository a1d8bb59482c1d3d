// SPDX-License-Identifier: GPL-2.0
/*
 * mqblkd's log: errors, warnings and notices (the start-up line naming
 * where it listens) always, connection events with -v,
 * protocol detail with -vv.  To stderr in the foreground, to syslog once
 * daemonized.  Set once at start-up, read by every thread.  The request
 * core and the device models log through the same sink.
 *
 * Every line is escaped on its way out (mqblkd_escape): export names,
 * certificate names and other strings a client chose can carry no
 * newline or terminal escape into the log.  A cause that can repeat at
 * a client's pace logs through a rate limit (mqblkd_log_rl): one line
 * per second, and the next one says how many were suppressed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "mqblkd.h"
#include "server/mq/log.h"

static int log_verbose;
static bool log_syslog;

size_t mqblkd_escape(char *out, size_t outlen, const char *in, size_t inlen)
{
	return mq_escape(out, outlen, in, inlen);
}

/* The highest level shown; -1: none (log_verbose -1: the fuzzer). */
static int log_max_level(void)
{
	return log_verbose < 0 ? -1 : 1 + log_verbose;
}

static bool log_enabled(int level)
{
	return level <= log_max_level();
}

static void emit_prio(int prio, const char *msg)
{
	char safe[4096];

	mqblkd_escape(safe, sizeof(safe), msg, strlen(msg));
	if (log_syslog)
		syslog(prio, "%s", safe);
	else
		fprintf(stderr, "mqblkd: %s\n", safe);
}

static void emit(int level, const char *msg)
{
	static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};

	if (!log_enabled(level))
		return;
	emit_prio(prio[level], msg);
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
	/* The core formats no more than log_enabled() lets through. */
	mq_log_set_level(log_max_level());
}

void mqblkd_log(int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!log_enabled(level))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	emit(level, msg);
}

void mqblkd_log_notice(const char *fmt, ...)
{
	char msg[4096];
	va_list ap;

	if (log_verbose < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	emit_prio(LOG_NOTICE, msg);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void mqblkd_log_rl(struct mqblkd_ratelimit *rl, int level, const char *fmt, ...)
{
	unsigned long missed;
	int64_t now = now_ns();
	char msg[1024];
	va_list ap;
	size_t n;

	if (!log_enabled(level))
		return;
	pthread_mutex_lock(&rl->lock);
	if (rl->printed && now - rl->begin_ns < 1000000000) {
		rl->missed++;
		pthread_mutex_unlock(&rl->lock);
		return;
	}
	missed = rl->missed;
	rl->missed = 0;
	rl->begin_ns = now;
	rl->printed = true;
	pthread_mutex_unlock(&rl->lock);

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	n = strlen(msg);
	if (missed)
		snprintf(msg + n, sizeof(msg) - n,
			 " (%lu similar line%s suppressed)", missed,
			 missed == 1 ? "" : "s");
	emit(level, msg);
}

void mqblkd_ratelimit_flush(struct mqblkd_ratelimit *rl, int level,
			    const char *cause)
{
	unsigned long missed;

	pthread_mutex_lock(&rl->lock);
	missed = rl->missed;
	rl->missed = 0;
	pthread_mutex_unlock(&rl->lock);
	if (missed)
		mqblkd_log(level, "%s: %lu similar line%s suppressed", cause,
			   missed, missed == 1 ? "" : "s");
}
