/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Zone state shared by the zoned device models (null_blk's zoned=1, smr):
 * the zones, their write pointers and conditions, and the open and active
 * zone accounting, after drivers/block/null_blk/zoned.c in Linux.  One
 * lock (lock) guards the zones' state; a zone lock per sequential zone
 * (null_lock_zone) is held by a write from its check, through the data
 * transfer, to its write pointer advance, and by zone management, so a
 * zone's write pointer only moves over data that reached the store.
 * Lock order: a zone lock, the zone file's lock, lock.
 */
#ifndef MQBLK_ZONED_H
#define MQBLK_ZONED_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "../../server/mq/genhd.h"
#include "../../server/mq/params.h"

struct zoned_dev;
struct zone_file;
/* Make [sector, sector + nr) read as zeroes (a reset zone's data). */
typedef void(zoned_zero_fn)(struct zoned_dev *zd, uint64_t sector,
			    uint64_t nr_sectors);

struct zoned_conf {
	uint64_t capacity;	   /* sectors */
	uint64_t zone_sectors;	   /* a power of two */
	uint64_t zone_cap_sectors; /* 0: the zone size */
	unsigned int nr_conv;
	unsigned int max_open;	 /* 0: no limit */
	unsigned int max_active; /* 0: no limit */
};

struct zoned_dev {
	/* The disk's name, kept by the caller: the gendisk's, so a rename
	 * shows. */
	const char *name;
	pthread_mutex_t lock;
	struct blk_zone *zones;
	pthread_mutex_t *zone_locks; /* one a zone; conventional ones unused */
	unsigned int nr_zones;
	unsigned int nr_conv;
	uint64_t zone_sectors;
	uint64_t zone_cap_sectors;
	unsigned int max_open;
	unsigned int max_active;
	unsigned int nr_imp_open;
	unsigned int nr_exp_open;
	unsigned int nr_closed;
	unsigned int imp_close_zone_no; /* where the round robin resumes */
	bool log_misplaced;		/* log refused writes (smr) */
	zoned_zero_fn *zero;		/* NULL: nothing kept */
	struct zone_file *zf;		/* NULL: the zones are not kept */
	void *private_data;
};

/*
 * Check the configuration and build the zones, as null_init_zoned_dev:
 * zone_nr_conv is cut to leave one sequential zone, and limits of no
 * effect are turned off, each with a log line.  name prefixes errors and
 * log lines, and must outlive zd.
 */
int zoned_dev_init(struct zoned_dev *zd, const char *name,
		   const struct zoned_conf *conf, struct mq_err *e);
void zoned_dev_destroy(struct zoned_dev *zd);
/* The zoned queue limits for it (host-managed). */
void zoned_set_limits(const struct zoned_dev *zd, struct queue_limits *lim);

/*
 * A WRITE or WRITE_ZEROES of nr sectors at sector, in two halves around
 * the data transfer, as null_zone_write orders it: zoned_write_begin
 * checks it and implicitly opens the zone; the caller moves the data,
 * then zoned_write_end advances the write pointer only if that worked
 * (err 0), and keeps the zone state in the zone file when fua.
 *
 * zoned_write_begin: 0, the zone locked until zoned_write_end, which the
 * caller must then call; or, nothing changed or locked,
 * BLK_STS_ZONE_OPEN_RESOURCE or _ACTIVE_RESOURCE (no open or active zone
 * left), or EIO: a misplaced write, one past the zone capacity or across
 * zones, a full, read-only or offline zone.
 * zoned_write_end returns err, or EIO when the zone file could not keep
 * a FUA write's write pointer.
 */
int zoned_write_begin(struct zoned_dev *zd, uint64_t sector,
		      uint64_t nr_sectors);
int zoned_write_end(struct zoned_dev *zd, uint64_t sector, uint64_t nr_sectors,
		    int err, bool fua);
/*
 * A FLUSH: the zone state as it is now, then flush(arg) (the device's
 * cache and store; may be NULL), then the zone file keeps that state.
 * flush's error or EIO.
 */
int zoned_flush(struct zoned_dev *zd, int (*flush)(void *arg), void *arg);
/*
 * How many sectors from sector hold data: the rest of the read, above
 * the write pointer, reads as zeroes.  -EIO for an offline zone.
 */
int64_t zoned_read_valid(struct zoned_dev *zd, uint64_t sector,
			 uint64_t nr_sectors);
/*
 * Zone management; zone may be BLK_ALL_ZONES.  0, EINVAL, EIO or a zone
 * resource status.
 */
int zoned_mgmt(struct zoned_dev *zd, enum blk_zone_op op, unsigned int zone);
/*
 * A discard (NBD TRIM): on conventional zones only, returns -1, for the
 * device to discard as usual; covering exactly one or more whole
 * sequential zones, resets them and returns 0; anything else on a
 * sequential zone, EINVAL.
 */
int zoned_discard(struct zoned_dev *zd, uint64_t sector, uint64_t nr_sectors);
/*
 * Make a zone read-only or offline (null_blk's zone_readonly and
 * zone_offline); setting the condition it has already makes it empty.
 * value is the fault's: a zone number.  0, or EINVAL with e saying why.
 */
int zoned_fire_cond(struct zoned_dev *zd, const char *value,
		    enum blk_zone_cond cond, struct mq_err *e);
/* fops->report_zones */
int zoned_report(struct zoned_dev *zd, unsigned int idx, unsigned int nr,
		 report_zones_cb *cb, void *data);

#endif
