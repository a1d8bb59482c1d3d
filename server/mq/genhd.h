/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An export: what Linux calls a gendisk.  A device model creates one per
 * block device it offers (an IDE channel offers hda and hdb).  Front ends
 * advertise what the disk and its queue limits say, nothing more.
 */
#ifndef MQBLK_GENHD_H
#define MQBLK_GENHD_H

#include "blk-mq.h"
#include "params.h"

/* Extent types, as NBD base:allocation and nbdkit use them. */
#define MQ_EXTENT_HOLE (1u << 0) /* not allocated */
#define MQ_EXTENT_ZERO (1u << 1) /* reads as zeroes */

/* Called for each extent in order; return -1 to stop early. */
typedef int(extent_fn)(void *arg, uint64_t offset, uint64_t length,
		       unsigned int type);

struct gendisk;
struct mq_bdev;

/* Zones, as include/uapi/linux/blkzoned.h has them. */
enum blk_zone_type {
	BLK_ZONE_TYPE_CONVENTIONAL = 0x1,
	BLK_ZONE_TYPE_SEQWRITE_REQ = 0x2,
	BLK_ZONE_TYPE_SEQWRITE_PREF = 0x3,
};

enum blk_zone_cond {
	BLK_ZONE_COND_NOT_WP = 0x0,
	BLK_ZONE_COND_EMPTY = 0x1,
	BLK_ZONE_COND_IMP_OPEN = 0x2,
	BLK_ZONE_COND_EXP_OPEN = 0x3,
	BLK_ZONE_COND_CLOSED = 0x4,
	BLK_ZONE_COND_READONLY = 0xD,
	BLK_ZONE_COND_FULL = 0xE,
	BLK_ZONE_COND_OFFLINE = 0xF,
};

/* All in 512-byte sectors; wp is absolute, as in struct blk_zone. */
struct blk_zone {
	uint64_t start;
	uint64_t len;
	uint64_t wp;
	uint64_t capacity;
	enum blk_zone_type type;
	enum blk_zone_cond cond;
};

/* Zone management, REQ_OP_ZONE_* in Linux. */
enum blk_zone_op {
	BLK_ZONE_OP_RESET,
	BLK_ZONE_OP_OPEN,
	BLK_ZONE_OP_CLOSE,
	BLK_ZONE_OP_FINISH,
};

#define BLK_ALL_ZONES UINT32_MAX /* zone_mgmt on every zone */

/* "em", "oi", ... as blkzone report abbreviates a condition. */
const char *blk_zone_cond_str(enum blk_zone_cond cond);
/*
 * One zone as blkzone report prints it (no newline): its length, or
 * -ENOSPC if it does not fit.
 */
int blk_zone_format(const struct blk_zone *z, char *buf, size_t len);

typedef int(report_zones_cb)(const struct blk_zone *zone, unsigned int idx,
			     void *data);

struct block_device_operations {
	/*
	 * Report the allocation map of [offset, offset+length) in bytes,
	 * like SEEK_DATA/SEEK_HOLE.  Optional: without it every range is
	 * data.  Returns 0 or a positive errno.
	 */
	int (*extents)(struct gendisk *disk, uint64_t offset, uint64_t length,
		       extent_fn *fn, void *arg);
	/*
	 * Zoned disks: call cb for nr zones from zone idx, in order, each
	 * copied under the device's zone lock (Linux's report_zones);
	 * returns the number reported or -errno.
	 */
	int (*report_zones)(struct gendisk *disk, unsigned int idx,
			    unsigned int nr, report_zones_cb *cb, void *data);
	/*
	 * Reset, open, close or finish zone number zone, or every one with
	 * BLK_ALL_ZONES: 0 or a positive errno (EINVAL: a conventional or
	 * unknown zone; EIO: the condition forbids it, or a zone resource
	 * limit).
	 */
	int (*zone_mgmt)(struct gendisk *disk, enum blk_zone_op op,
			 unsigned int zone);
};

/*
 * A model's own state, shown under EXPORT/device/NAME, and its fault
 * triggers, under EXPORT/fault/NAME.  Arrays end with { NULL }.  show
 * writes one line (no newline needed) and returns its length or -errno;
 * fire returns 0 or a positive errno and logs what it did.  When it
 * refuses, it says why in e (which may be NULL), for the control plane's
 * answer; left empty, the answer is the errno's text.
 */
struct disk_attr {
	const char *name;
	int (*show)(struct gendisk *disk, char *buf, size_t len);
};

struct disk_fault {
	const char *name;
	const char *help;
	int (*fire)(struct gendisk *disk, const char *value, struct mq_err *e);
};

/* gendisk->features: what the model can honestly promise. */
#define DISK_FAST_ZERO	(1u << 0) /* WRITE_ZEROES never falls back to writes */
#define DISK_MULTI_CONN (1u << 1) /* a FLUSH on one connection covers all */
/*
 * fops->extents asks another server (an nbd: or rbd: store): a round
 * trip.  Front ends call it when a client asks (BLOCK_STATUS), not to
 * look for holes in the data of a READ.
 */
#define DISK_EXTENTS_REMOTE (1u << 2)

struct gendisk {
	char disk_name[MQ_NAME_MAX];
	char description[256]; /* filled by the driver, shown to clients */
	struct mq_queue *queue;
	uint64_t capacity; /* 512-byte sectors */
	bool read_only;
	unsigned int features;
	const struct block_device_operations *fops;
	const struct disk_attr *attrs;	 /* may be NULL */
	const struct disk_fault *faults; /* may be NULL */
	void *private_data;
	/*
	 * The device layer's per-disk state for front ends (Linux's part0):
	 * the range tracker of backends/bdev.h, made by mq_device_add_disk.
	 */
	struct mq_bdev *bdev;
};

/*
 * What front ends and the control plane call for zones (blk-zoned.c), as
 * Linux's blkdev_report_zones and blkdev_zone_mgmt.  A report also gives
 * a zone write plug that lost its write pointer the device's
 * (disk_zone_wplug_sync_wp_offset).  A reset or finish goes through the
 * zone's write plug first: its write pointer is set and the writes
 * plugged behind it fail (blk_zone_wplug_handle_reset_or_finish).  Both
 * return as the fops do.
 */
int blkdev_report_zones(struct gendisk *disk, unsigned int idx, unsigned int nr,
			report_zones_cb *cb, void *data);
int blkdev_zone_mgmt(struct gendisk *disk, enum blk_zone_op op,
		     unsigned int zone);

/* Find a fault by name and fire it: 0, ENOENT, or the fault's errno. */
int disk_fire_fault(struct gendisk *disk, const char *name, const char *value,
		    struct mq_err *e);

static inline void set_capacity(struct gendisk *disk, uint64_t sectors)
{
	disk->capacity = sectors;
}

static inline uint64_t get_capacity(const struct gendisk *disk)
{
	return disk->capacity;
}

#endif
