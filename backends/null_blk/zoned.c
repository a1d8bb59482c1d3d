// SPDX-License-Identifier: GPL-2.0
/*
 * null_blk's zoned mode (zoned=1), after drivers/block/null_blk/zoned.c:
 * zone_size MB zones (a power of two), the first zone_nr_conv of them
 * conventional, zone_capacity MB writable in each sequential one, and at
 * most zone_max_open open and zone_max_active active zones.  The zone
 * state itself is shared with the other zoned models
 * (backends/common/zoned.c).  NBD has no zone commands: a TRIM of whole
 * sequential zones resets them; the control plane opens, closes, finishes
 * and resets zones through fops->zone_mgmt.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "null_blk.h"
#include "../common/zone_file.h"
#include "../../server/mq/log.h"

#define MB_TO_SECTS(mb) ((uint64_t)(mb) << (20 - SECTOR_SHIFT))

/* A reset zone reads as zeroes: drop its data (null_handle_discard). */
static void null_zone_zero(struct zoned_dev *zd, uint64_t sector,
			   uint64_t nr_sectors)
{
	struct nullb *nullb = zd->private_data;

	if (nullb->dev.memory_backed)
		null_handle_discard(nullb, sector << SECTOR_SHIFT,
				    nr_sectors << SECTOR_SHIFT);
}

int null_init_zoned_dev(struct nullb_device *dev, struct mq_err *e)
{
	struct zoned_conf conf = {
		.capacity = dev->size >> SECTOR_SHIFT,
		.zone_sectors = MB_TO_SECTS(dev->zone_size),
		.zone_cap_sectors = MB_TO_SECTS(dev->zone_capacity),
		.nr_conv = dev->zone_nr_conv,
		.max_open = dev->zone_max_open,
		.max_active = dev->zone_max_active,
	};

	if (!dev->zone_size || (dev->zone_size & (dev->zone_size - 1)))
		return mq_err_set(e,
				  "null: zone_size=%" PRIu64
				  ": must be a power of two (MB)",
				  dev->zone_size);
	if (dev->zone_capacity > dev->zone_size)
		return mq_err_set(e,
				  "null: zone_capacity=%" PRIu64
				  " larger than zone_size=%" PRIu64 " (MB)",
				  dev->zone_capacity, dev->zone_size);
	if (conf.zone_sectors > conf.capacity)
		return mq_err_set(e,
				  "null: zone_size=%" PRIu64
				  " MB larger than the device (%" PRIu64
				  " bytes)",
				  dev->zone_size, dev->size);
	if (zoned_dev_init(&dev->zd, dev->nullb->disk_name, &conf, e))
		return -1;
	dev->zd.zero = null_zone_zero;
	dev->zd.private_data = dev->nullb;
	return 0;
}

/* The zone state kept with the store (memory_backed=1 only). */
int null_zoned_attach_store(struct nullb_device *dev, struct mq_err *e)
{
	if (!dev->memory_backed || !dev->data)
		return 0;
	/* null_blk keeps its zones' open and closed state too. */
	return zone_file_attach(&dev->zd, dev->data, "size", true, e);
}

static int null_zoned_flush_fn(void *arg)
{
	return null_handle_flush(arg);
}

int null_zoned_flush(struct nullb *nullb)
{
	return zoned_flush(&nullb->dev.zd, null_zoned_flush_fn, nullb);
}

void null_free_zoned_dev(struct nullb_device *dev)
{
	zoned_dev_destroy(&dev->zd);
}

/* Zero what a read returns above the write pointer, from byte off on. */
static void null_zero_read_tail(struct request *rq, uint64_t off)
{
	struct bio *bio;

	rq_for_each_bio (bio, rq) {
		if (off >= bio->bi_size) {
			off -= bio->bi_size;
			continue;
		}
		memset((char *)bio->bi_buf + off, 0, bio->bi_size - off);
		off = 0;
	}
}

/*
 * Before the data moves: 0 to go on, a positive errno to fail, or -1 when
 * the command was handled here (a TRIM that reset zones).
 */
int null_process_zoned_cmd(struct nullb_cmd *cmd, enum req_op op,
			   uint64_t sector, uint64_t nr_sectors)
{
	struct nullb_device *dev = cmd->nq->dev;
	struct request *rq = mq_rq_from_pdu(cmd);
	int64_t valid;
	int ret;

	switch (op) {
	case REQ_OP_WRITE:
	case REQ_OP_WRITE_ZEROES:
		/*
		 * null_zone_write: the zone locked from the check to the
		 * write pointer advance, which waits for the data to be in.
		 */
		ret = zoned_write_begin(&dev->zd, sector, nr_sectors);
		if (ret)
			return ret;
		if (dev->memory_backed)
			ret = op == REQ_OP_WRITE
				      ? null_handle_data_transfer(cmd)
				      : null_handle_discard(
						cmd->nq->nullb,
						sector << SECTOR_SHIFT,
						nr_sectors << SECTOR_SHIFT);
		/*
		 * Without a cache (no write_cache, no FLUSH, no FUA) every
		 * completed write is durable: so is its write pointer.
		 */
		ret = zoned_write_end(&dev->zd, sector, nr_sectors, ret,
				      (rq->cmd_flags & REQ_FUA) ||
					      !null_cache_active(dev));
		return ret ? ret : -1;
	case REQ_OP_DISCARD:
		ret = zoned_discard(&dev->zd, sector, nr_sectors);
		return ret < 0 ? 0 : ret ? ret : -1;
	case REQ_OP_READ:
		valid = zoned_read_valid(&dev->zd, sector, nr_sectors);
		if (valid < 0)
			return EIO;
		if ((uint64_t)valid < nr_sectors) {
			/* Read below the wp first, then zero the rest. */
			if (dev->memory_backed) {
				ret = null_handle_data_transfer(cmd);
				if (ret)
					return ret;
			}
			null_zero_read_tail(rq,
					    (uint64_t)valid << SECTOR_SHIFT);
			return -1;
		}
		return 0;
	default:
		return 0;
	}
}

int null_report_zones(struct gendisk *disk, unsigned int idx, unsigned int nr,
		      report_zones_cb *cb, void *data)
{
	struct nullb *nullb = disk->private_data;

	return zoned_report(&nullb->dev.zd, idx, nr, cb, data);
}

int null_zone_mgmt(struct gendisk *disk, enum blk_zone_op op, unsigned int zone)
{
	struct nullb *nullb = disk->private_data;

	return zoned_mgmt(&nullb->dev.zd, op, zone);
}
