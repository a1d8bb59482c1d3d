/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Logging for the core and the device models.  The front end installs a
 * sink once at start-up (nbdkit_error/nbdkit_debug for the plugin); the
 * default writes to stderr.  Device failures are logged at MQ_LOG_ERR with
 * the disk name and the reason, e.g. "nullb0: timeout fault: request ...".
 */
#ifndef MQBLK_LOG_H
#define MQBLK_LOG_H

enum mq_log_level {
	MQ_LOG_ERR,
	MQ_LOG_WARN,
	MQ_LOG_INFO,
	MQ_LOG_DEBUG,
};

typedef void(mq_log_sink_fn)(enum mq_log_level level, const char *msg);

/*
 * Call once before any device is created.  NULL: the default, stderr,
 * with debug lines only if MQBLK_DEBUG is set (the level follows).
 */
void mq_log_set_sink(mq_log_sink_fn *sink);
/*
 * Lines above max_level (-1: all of them) are dropped before they are
 * formatted, as a kernel's pr_debug costs nothing unless enabled: several
 * device models log every command at MQ_LOG_DEBUG.  Default: MQ_LOG_DEBUG,
 * every line reaches the sink.  Call once, with the sink.
 */
void mq_log_set_level(int max_level);

void mq_log(enum mq_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * The English text of an errno, never translated: log lines do not depend
 * on the locale, and gettext's locale lock is kept out of worker threads
 * (under a preloaded ASan runtime it deadlocked nbdkit's exit).
 */
const char *mq_strerror(int errnum);

#define pr_err(...)   mq_log(MQ_LOG_ERR, __VA_ARGS__)
#define pr_warn(...)  mq_log(MQ_LOG_WARN, __VA_ARGS__)
#define pr_info(...)  mq_log(MQ_LOG_INFO, __VA_ARGS__)
#define pr_debug(...) mq_log(MQ_LOG_DEBUG, __VA_ARGS__)

#endif
