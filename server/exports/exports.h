/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The export table every front end builds at start-up, from the same
 * keys and INI file: mqblkd (NBD) and mqblk-ublk (/dev/ublkbN).
 *
 *   PROG DEVICE [KEY=VALUE...]   one device; each of its disks is an
 *                                export named after the disk
 *   PROG -c FILE                 one INI section per export
 *   PROG --demo                  one small export per device model
 *
 * Built once, read-only afterwards.  Front ends include this file, never
 * each other.
 */
#ifndef MQBLK_EXPORTS_H
#define MQBLK_EXPORTS_H

#include <stdbool.h>
#include <stddef.h>

#include "backends/device.h"

/* The longest export name (NBD's limit on strings). */
#define MQ_EXPORT_NAME_MAX 4096

struct mq_exports_cfg {
	const char *config_file; /* -c FILE, or NULL */
	char **args;		 /* DEVICE [KEY=VALUE...] */
	int nr_args;
	bool readonly;
	unsigned int nr_ctx; /* software queues per queue: the submitters */
	/*
	 * One start-up error line (escaped, no newline, no program name)
	 * and one informational line; both required.
	 */
	void (*err)(const char *line);
	void (*info)(const char *line);
};

struct mq_export {
	char *name;
	char description[512];
	struct gendisk *disk;
	bool readonly;	   /* -r or the disk's own read_only */
	const char *model; /* the device model: its driver's name */
};

/* A device's queue that is no export, as the control tree names it. */
struct mq_export_internal {
	char *name;
	struct gendisk *disk;
};

struct mq_exports {
	struct mq_export *v;
	unsigned int nr;
	struct mq_export_internal *internal;
	unsigned int nr_internal;
	struct mq_device **devs;
	unsigned int nr_devs;
};

/*
 * Build the export table: from cfg->config_file, else from cfg->args,
 * else the demo rack.  On failure report one line (naming the section or
 * key) through cfg->err and return -1.
 */
int mq_exports_build(const struct mq_exports_cfg *cfg, struct mq_exports *ex);
void mq_exports_destroy(struct mq_exports *ex);
/*
 * Flush every persistent backend: 0, or the first error (a positive
 * errno); each failure is reported through err with the driver's name.
 */
int mq_exports_sync(struct mq_exports *ex, void (*err)(const char *line));
/* "" is the default export (the first). NULL if unknown. */
const struct mq_export *mq_export_find(const struct mq_exports *ex,
				       const char *name, size_t len);
/* "a, b, c" for error lines. */
void mq_export_names(const struct mq_exports *ex, char *buf, size_t len);

/*
 * Quote what may come from outside for a log line: backslash, control
 * bytes and DEL become \\ and \xNN.  Stops at what fits; always ends out
 * with NUL; returns its length.
 */
size_t mq_escape(char *out, size_t outlen, const char *in, size_t inlen);

#endif
