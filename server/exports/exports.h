/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The export table every front end builds, from the same keys and INI
 * file: mqblkd (NBD) and mqblk-ublk (/dev/ublkbN).
 *
 *   PROG DEVICE [KEY=VALUE...]   one device; each of its disks is an
 *                                export named after the disk
 *   PROG -c FILE                 one INI section per export
 *   PROG --demo                  one small export per device model
 *
 * A table is a list of devices (struct mq_export_dev), each with the
 * exports and internal queues it serves, and the exports in order.  A
 * front end that re-reads -c FILE (mqblkd on SIGHUP) builds a new table
 * section by section (mq_ini_load, mq_exports_add_section), keeping the
 * devices of unchanged sections (mq_export_dev_changed); how long a
 * device lives after it leaves a table is the front end's business.
 *
 * Front ends include this file, never each other.
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
	 * One error line and one informational line, without a newline or
	 * the program's name; both required.  Names and values come from
	 * the command line or the file and may hold any byte: the line is
	 * to be escaped (mq_escape) on its way out.
	 */
	void (*err)(const char *line);
	void (*info)(const char *line);
	/*
	 * Bytes to allocate for each device, at least (and 0 meaning)
	 * sizeof(struct mq_export_dev): a front end keeps its own per-device
	 * state after it, as blk-mq's cmd_size does after a request.
	 */
	size_t dev_size;
	/*
	 * Whether a disk name is taken outside the table being built (a
	 * reload: the devices still serving); NULL: nothing is.
	 */
	bool (*disk_taken)(void *arg, const char *name);
	void *arg;
};

struct mq_export_dev;

struct mq_export {
	char *name;
	char description[512];
	struct gendisk *disk;
	bool readonly;	   /* -r or the disk's own read_only */
	const char *model; /* the device model: its driver's name */
	struct mq_export_dev *owner;
};

/* A device's queue that is no export, as the control tree names it. */
struct mq_export_internal {
	char *name;
	struct gendisk *disk;
};

/* A key of a [section] as the file gave it, to tell a changed one. */
struct mq_export_kv {
	char *key, *value;
};

/*
 * One device and what it serves, made from one [section] of -c FILE,
 * from the command line, or from a --demo row.
 */
struct mq_export_dev {
	char *section; /* NULL: not from a file */
	struct mq_export_kv *kv;
	unsigned int nr_kv;
	struct mq_device *dev;
	struct mq_export *v; /* not moved once made: exports point in */
	unsigned int nr;
	struct mq_export_internal *internal;
	unsigned int nr_internal;
};

/*
 * The table: the exports in order (the first is the default export) and
 * the devices behind them.
 */
struct mq_exports {
	struct mq_export **v;
	unsigned int nr;
	struct mq_export_dev **devs;
	unsigned int nr_devs;
};

/*
 * Build the export table: from cfg->config_file, else from cfg->args,
 * else the demo rack.  On failure report one line (naming the section or
 * key) through cfg->err and return -1.
 */
int mq_exports_build(const struct mq_exports_cfg *cfg, struct mq_exports *ex);
/* Free the table and its devices. */
void mq_exports_destroy(struct mq_exports *ex);
/* Free the table only: its devices are the caller's. */
void mq_exports_release(struct mq_exports *ex);
/* Destroy a device that no table and nobody else holds. */
void mq_export_dev_free(struct mq_export_dev *d);
/*
 * Append d and its exports to ex; an export name ex has already is an
 * error line through err.
 */
int mq_exports_add(struct mq_exports *ex, struct mq_export_dev *d,
		   void (*err)(const char *line));
/*
 * Flush every persistent backend: 0, or the first error (a positive
 * errno); each failure is reported through err with the driver's name.
 */
int mq_exports_sync(struct mq_exports *ex, void (*err)(const char *line));
/* "" is the default export (the first). NULL if unknown. */
struct mq_export *mq_export_find(const struct mq_exports *ex, const char *name,
				 size_t len);
/* "a, b, c" for error lines. */
void mq_export_names(const struct mq_exports *ex, char *buf, size_t len);

/*
 * The control tree's view of devs: their exports and internal queues
 * (names borrowed), how many in *count; NULL: out of memory.
 */
struct ctl_export;
struct ctl_export *mq_export_devs_ctl(struct mq_export_dev *const *devs,
				      unsigned int nr, unsigned int *count);

/* ---- -c FILE, section by section (a reload) ------------------------ */

struct mq_ini;

/* Read path: 0, or -1 with why in err. */
int mq_ini_load(const char *path, struct mq_ini **out, char *err, size_t len);
void mq_ini_free(struct mq_ini *ini);
unsigned int mq_ini_nr(const struct mq_ini *ini);
const char *mq_ini_section(const struct mq_ini *ini, unsigned int i);
/*
 * Make section i's device and append it to ex; where names it in the
 * error line.  Its disks get names no disk of ex nor cfg->disk_taken
 * has.  The device, with the section's keys, in *out.
 */
int mq_exports_add_section(const struct mq_exports_cfg *cfg,
			   struct mq_exports *ex, struct mq_ini *ini,
			   unsigned int i, const char *where,
			   struct mq_export_dev **out);
/*
 * The keys of section i that d was not made with, or that d had and the
 * section has no more, "a, b" in buf ("" if none).
 */
void mq_export_dev_changed(const struct mq_export_dev *d,
			   const struct mq_ini *ini, unsigned int i, char *buf,
			   size_t len);

/*
 * Quote what may come from outside for a log line: backslash, control
 * bytes and DEL become \\ and \xNN.  Stops at what fits; always ends out
 * with NUL; returns its length.
 */
size_t mq_escape(char *out, size_t outlen, const char *in, size_t inlen);

#endif
