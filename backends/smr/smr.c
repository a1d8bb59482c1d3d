// SPDX-License-Identifier: GPL-2.0
/*
 * smr: a host-managed SMR disk, smr0 (see smr.h).  queue_rq follows the
 * zone rules of ZBC as Linux's null_blk models them: a write that does not
 * start at its zone's write pointer, runs past the zone's capacity, or
 * finds no open or active zone left fails with EIO and a log line naming
 * the zone, its write pointer and the offset; reads below the write
 * pointer return the data and above it zeroes.  NBD has no zone commands:
 * a TRIM of whole sequential zones resets them, and the control plane
 * opens, closes, finishes and resets zones.  The data is kept in memory
 * (sparse).  Each command is served after the previous one, in the time
 * the media model gives, and completes on the irq thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smr.h"
#include "../common/zone_file.h"
#include "../../server/mq/log.h"

#define SMR_NAME "smr0"

static void smr_complete(struct irq_work *work)
{
	struct smr_cmd *cmd = container_of(work, struct smr_cmd, work);

	mq_end_request(mq_rq_from_pdu(cmd), cmd->error);
}

/* Zero what a read returns from byte off on (above the write pointer). */
static void smr_zero_tail(struct request *rq, uint64_t off)
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

static int smr_read(struct smr_disk *sd, struct request *rq)
{
	int64_t valid =
		zoned_read_valid(&sd->zd, blk_rq_pos(rq), blk_rq_sectors(rq));
	struct bio *bio;

	if (valid < 0)
		return EIO;
	rq_for_each_bio (bio, rq) {
		int err = media_read(sd->data, bio->bi_buf, bio->bi_size,
				     bio->bi_sector << SECTOR_SHIFT);

		if (err)
			return err;
	}
	if ((uint64_t)valid < blk_rq_sectors(rq))
		smr_zero_tail(rq, (uint64_t)valid << SECTOR_SHIFT);
	return 0;
}

static int smr_write_data(struct smr_disk *sd, struct request *rq)
{
	struct bio *bio;
	int err;

	if (req_op(rq) == REQ_OP_WRITE_ZEROES) {
		return media_write_zeroes(sd->data, blk_rq_bytes(rq),
					  blk_rq_pos(rq) << SECTOR_SHIFT, 0);
	}
	rq_for_each_bio (bio, rq) {
		err = media_write(sd->data, bio->bi_buf, bio->bi_size,
				  bio->bi_sector << SECTOR_SHIFT);
		if (err)
			return err;
	}
	return 0;
}

/* The write pointer moves once the data is on the platters (the store). */
static int smr_write(struct smr_disk *sd, struct request *rq)
{
	uint64_t pos = blk_rq_pos(rq), nr = blk_rq_sectors(rq);
	int err;

	err = zoned_write_begin(&sd->zd, pos, nr);
	if (err) {
		atomic_fetch_add(&sd->refused, 1);
		return err;
	}
	err = smr_write_data(sd, rq);
	return zoned_write_end(&sd->zd, pos, nr, err, rq->cmd_flags & REQ_FUA);
}

static int smr_handle(struct smr_disk *sd, struct request *rq)
{
	uint64_t pos = blk_rq_pos(rq), nr = blk_rq_sectors(rq);
	int ret;

	if (req_op(rq) != REQ_OP_FLUSH &&
	    (pos > sd->capacity || nr > sd->capacity - pos)) {
		pr_err("%s: %s beyond the end of the disk: sector %" PRIu64,
		       sd->disk.disk_name, req_op_name(req_op(rq)), pos);
		return EIO;
	}
	switch (req_op(rq)) {
	case REQ_OP_READ:
		return smr_read(sd, rq);
	case REQ_OP_WRITE:
	case REQ_OP_WRITE_ZEROES:
		return smr_write(sd, rq);
	case REQ_OP_DISCARD:
		ret = zoned_discard(&sd->zd, pos, nr);
		if (ret < 0) /* conventional zones: forget the data */
			return media_write_zeroes(sd->data, nr << SECTOR_SHIFT,
						  pos << SECTOR_SHIFT, 0);
		return ret;
	case REQ_OP_FLUSH:
		/* The data is in the store already: keep the zones. */
		return zoned_flush(&sd->zd, NULL, NULL);
	default:
		return EOPNOTSUPP;
	}
}

/*
 * When the command completes (see smr.h): one medium, commands in turn,
 * the cache in front of it.
 */
static uint64_t smr_media_done(struct smr_disk *sd, struct request *rq,
			       enum timing_op op, uint64_t now)
{
	uint64_t pos = blk_rq_pos(rq), bytes = blk_rq_bytes(rq);
	uint64_t media, start, link, done = now, idle;

	if (op == TIMING_OTHER)
		return now;
	pthread_mutex_lock(&sd->lock);
	start = sd->media_until_ns > now ? sd->media_until_ns : now;
	if (op == TIMING_FLUSH) {
		done = start;
		goto out;
	}
	media = mq_device_delay_ns(
		sd->mdev, (double)timing_service_ns(&sd->timing.base, op, pos,
						    (uint32_t)bytes));
	link = (uint64_t)(bytes * sd->iface_ns_per_byte);
	/* A read stream went on while the link was idle: read-ahead. */
	idle = now > sd->media_until_ns ? now - sd->media_until_ns : 0;
	if (op == TIMING_READ && pos == sd->stream_end && idle) {
		uint64_t credit = idle < sd->cache_ns ? idle : sd->cache_ns;

		start -= credit < start ? credit : 0;
	}
	sd->media_until_ns = start + media;
	sd->stream_end = pos + (bytes >> SECTOR_SHIFT);
	if (op == TIMING_WRITE && !(rq->cmd_flags & REQ_FUA)) {
		/* Done once the cache has room for it, the media behind. */
		done = sd->media_until_ns > sd->cache_ns
			       ? sd->media_until_ns - sd->cache_ns
			       : 0;
		if (done < now + link)
			done = now + link;
	} else {
		done = sd->media_until_ns;
		if (done < now + link)
			done = now + link;
	}
out:
	pthread_mutex_unlock(&sd->lock);
	return done;
}

static enum mq_qrc smr_queue_rq(struct mq_hw_ctx *hctx,
				const struct mq_queue_data *bd)
{
	struct smr_disk *sd = hctx->queue->queuedata;
	struct request *rq = bd->rq;
	struct smr_cmd *cmd = mq_rq_to_pdu(rq);
	enum timing_op top = TIMING_OTHER;
	uint64_t now, done;

	mq_start_request(rq);
	cmd->error = smr_handle(sd, rq);
	if (!cmd->error && req_op(rq) == REQ_OP_READ)
		top = TIMING_READ;
	else if (!cmd->error && (req_op(rq) == REQ_OP_WRITE ||
				 req_op(rq) == REQ_OP_WRITE_ZEROES))
		top = TIMING_WRITE;
	else if (!cmd->error && req_op(rq) == REQ_OP_FLUSH)
		top = TIMING_FLUSH;
	now = timing_now_ns();
	done = smr_media_done(sd, rq, top, now);
	irq_raise(sd->irq, &cmd->work, smr_complete, done - now);
	return MQ_QRC_OK;
}

static const struct mq_ops smr_mq_ops = {
	.queue_rq = smr_queue_rq,
};

static int smr_extents(struct gendisk *disk, uint64_t offset, uint64_t length,
		       extent_fn *fn, void *arg)
{
	struct smr_disk *sd = disk->private_data;

	return media_extents(sd->data, offset, length, fn, arg);
}

static int smr_report_zones(struct gendisk *disk, unsigned int idx,
			    unsigned int nr, report_zones_cb *cb, void *data)
{
	struct smr_disk *sd = disk->private_data;

	return zoned_report(&sd->zd, idx, nr, cb, data);
}

static int smr_zone_mgmt(struct gendisk *disk, enum blk_zone_op op,
			 unsigned int zone)
{
	struct smr_disk *sd = disk->private_data;

	return zoned_mgmt(&sd->zd, op, zone);
}

static const struct block_device_operations smr_fops = {
	.extents = smr_extents,
	.report_zones = smr_report_zones,
	.zone_mgmt = smr_zone_mgmt,
};

/* ---- control plane ------------------------------------------------ */

static int show_u64(char *buf, size_t len, uint64_t v)
{
	int n = snprintf(buf, len, "%" PRIu64, v);

	return n < 0 || (size_t)n >= len ? -ENOSPC : n;
}

static int smr_seeks_show(struct gendisk *disk, char *buf, size_t len)
{
	struct smr_disk *sd = disk->private_data;
	uint64_t v;

	pthread_mutex_lock(&sd->timing.base.lock);
	v = sd->timing.seeks;
	pthread_mutex_unlock(&sd->timing.base.lock);
	return show_u64(buf, len, v);
}

static int smr_refused_show(struct gendisk *disk, char *buf, size_t len)
{
	struct smr_disk *sd = disk->private_data;

	return show_u64(buf, len, atomic_load(&sd->refused));
}

static const struct disk_attr smr_attrs[] = {
	{"seeks", smr_seeks_show},	      /* commands that moved the head */
	{"refused_writes", smr_refused_show}, /* by the zone rules */
	{NULL},
};

static int smr_fire_readonly(struct gendisk *disk, const char *value,
			     struct mq_err *e)
{
	struct smr_disk *sd = disk->private_data;

	return zoned_fire_cond(&sd->zd, value, BLK_ZONE_COND_READONLY, e);
}

static int smr_fire_offline(struct gendisk *disk, const char *value,
			    struct mq_err *e)
{
	struct smr_disk *sd = disk->private_data;

	return zoned_fire_cond(&sd->zd, value, BLK_ZONE_COND_OFFLINE, e);
}

static const struct disk_fault smr_faults[] = {
	{"zone_readonly", "N: zone N read-only (again: empty)",
	 smr_fire_readonly},
	{"zone_offline", "N: zone N offline (again: empty)", smr_fire_offline},
	{NULL},
};

/* ---- probe --------------------------------------------------------- */

static void smr_free(struct smr_disk *sd)
{
	if (sd->q)
		mq_quiesce_queue(sd->q);
	if (sd->irq)
		irq_thread_destroy(sd->irq);
	if (sd->q)
		mq_cleanup_queue(sd->q);
	if (sd->tag_set_ready)
		mq_free_tag_set(&sd->tag_set);
	zoned_dev_destroy(&sd->zd);
	if (sd->timing_ready)
		smr_timing_destroy(&sd->timing);
	media_close(sd->data);
	if (sd->lock_ready)
		pthread_mutex_destroy(&sd->lock);
	free(sd);
}

static void smr_sparse_zero(struct zoned_dev *zd, uint64_t sector,
			    uint64_t nr_sectors)
{
	struct smr_disk *sd = zd->private_data;

	int err = media_write_zeroes(sd->data, nr_sectors << SECTOR_SHIFT,
				     sector << SECTOR_SHIFT, 0);

	if (err)
		pr_err("%s: zeroing a reset zone at sector %" PRIu64 ": %s",
		       sd->disk.disk_name, sector, mq_strerror(err));
}

static int smr_probe(struct mq_device *mdev, struct mq_params *p,
		     struct mq_err *e)
{
	struct smr_timing_params tp;
	struct zoned_conf zc = {0};
	uint64_t capacity, zone_size;
	unsigned int depth;
	struct smr_disk *sd;
	struct queue_limits *lim;
	int rv;

	smr_timing_params_default(&tp);
	if (mq_param_size(p, "capacity", 16ULL << 30, &capacity, e) ||
	    mq_param_size(p, "zone_size", 256ULL << 20, &zone_size, e) ||
	    mq_param_uint(p, "zone_nr_conv", 1, 0, UINT32_MAX, &zc.nr_conv,
			  e) ||
	    mq_param_uint(p, "max_open", 128, 0, UINT32_MAX, &zc.max_open, e) ||
	    mq_param_uint(p, "max_active", 0, 0, UINT32_MAX, &zc.max_active,
			  e) ||
	    mq_param_uint(p, "queue_depth", 32, 1, 32, &depth, e) ||
	    mq_param_double(p, "mbps", tp.mbps, 1, 100000, &tp.mbps, e) ||
	    mq_param_double(p, "seek_ms", tp.seek_ms, 0, 1000, &tp.seek_ms,
			    e) ||
	    mq_param_double(p, "track_seek_ms", tp.track_seek_ms, 0, 1000,
			    &tp.track_seek_ms, e) ||
	    mq_param_uint(p, "rpm", tp.rpm, 3600, 20000, &tp.rpm, e))
		return -1;
	if (zone_size < (1u << 20) || zone_size > (2ULL << 30) ||
	    (zone_size & (zone_size - 1)))
		return mq_err_set(e,
				  "smr: zone_size=%" PRIu64
				  ": must be a power of two, 1M to 2G",
				  zone_size);
	if (capacity < zone_size || capacity % 4096)
		return mq_err_set(e,
				  "smr: capacity=%" PRIu64
				  ": a multiple of 4096, one zone (%" PRIu64
				  ") at least",
				  capacity, zone_size);
	if (tp.track_seek_ms > tp.seek_ms)
		return mq_err_set(e, "smr: track_seek_ms=%g above seek_ms=%g",
				  tp.track_seek_ms, tp.seek_ms);

	sd = calloc(1, sizeof(*sd));
	if (!sd)
		return mq_err_set(e, "smr: out of memory");
	sd->mdev = mdev;
	sd->capacity = capacity >> SECTOR_SHIFT;
	zc.capacity = sd->capacity;
	zc.zone_sectors = zone_size >> SECTOR_SHIFT;
	rv = pthread_mutex_init(&sd->lock, NULL);
	if (rv) {
		mq_err_set(e, "smr: mutex: %s", mq_strerror(rv));
		goto fail;
	}
	sd->lock_ready = true;
	/* Named first: the zones' log lines use the disk's name. */
	snprintf(sd->disk.disk_name, sizeof(sd->disk.disk_name), SMR_NAME);
	if (zoned_dev_init(&sd->zd, sd->disk.disk_name, &zc, e))
		goto fail;
	sd->zd.log_misplaced = true;
	sd->zd.zero = smr_sparse_zero;
	sd->zd.private_data = sd;
	smr_timing_init(&sd->timing, &tp, sd->capacity);
	sd->timing_ready = true;
	sd->cache_ns = mq_device_delay_ns(mdev, SMR_CACHE_BYTES *
							sd->timing.ns_per_byte);
	sd->iface_ns_per_byte =
		mdev->time_scale * 1e9 / (SMR_LINK_MIBPS * 1048576.0);
	{
		/* capacity= is the disk's, whatever the store. */
		struct media_open_args a = {
			.size = capacity, .block_size = 4096, .name = "smr"};

		if (mq_device_open_media(mdev, p, NULL, NULL, "ram", &a,
					 &sd->data, e))
			goto fail;
		if (sd->data->read_only) {
			mq_err_set(e, "smr: media=%s is read-only",
				   sd->data->desc);
			goto fail;
		}
		/* A ZBC drive keeps its write pointers; open zones close. */
		if (zone_file_attach(&sd->zd, sd->data, "capacity", false, e))
			goto fail;
	}
	sd->irq = irq_thread_create("smr");
	if (!sd->irq) {
		mq_err_set(e, "smr: out of memory");
		goto fail;
	}

	sd->tag_set.ops = &smr_mq_ops;
	sd->tag_set.nr_hw_queues = 1;
	sd->tag_set.queue_depth = depth; /* NCQ */
	sd->tag_set.cmd_size = sizeof(struct smr_cmd);
	sd->tag_set.timeout_ms = mdev->io_timeout_ms;
	sd->tag_set.flags = MQ_F_SHOULD_MERGE;
	/* queue_rq reads and writes the store itself: off the submitters. */
	if (media_may_sleep(sd->data))
		sd->tag_set.flags |= MQ_F_BLOCKING;
	rv = mq_alloc_tag_set(&sd->tag_set);
	if (rv) {
		mq_err_set(e, "smr: cannot allocate the tag set: %s",
			   mq_strerror(rv));
		goto fail;
	}
	sd->tag_set_ready = true;
	sd->q = mq_init_queue(&sd->tag_set, mdev->nr_ctx, SMR_NAME);
	if (!sd->q) {
		mq_err_set(e, "smr: cannot create the queue");
		goto fail;
	}
	sd->q->queuedata = sd;
	lim = &sd->q->limits;
	lim->logical_block_size = 512;
	lim->physical_block_size = 4096;
	lim->io_opt = 0;
	lim->rotational = true;
	lim->write_cache = true; /* FLUSH waits for the media */
	lim->fua = true;
	/* sd: 1280 KiB requests (BLK_DEF_MAX_SECTORS), WRITE SAME zeroes */
	lim->max_sectors = 2560;
	lim->max_write_zeroes_sectors = 2560;
	zoned_set_limits(&sd->zd, lim);
	/* TRIM resets whole zones: never split one in the middle. */
	lim->max_discard_sectors =
		(UINT32_MAX >> SECTOR_SHIFT) & ~(lim->chunk_sectors - 1);
	lim->discard_granularity = lim->chunk_sectors << SECTOR_SHIFT;

	snprintf(sd->disk.description, sizeof(sd->disk.description),
		 "host-managed SMR disk %s (zoned host-managed: %u zones of "
		 "%" PRIu64 " MB, %u conventional; %g MiB/s, %u rpm)",
		 SMR_NAME, sd->zd.nr_zones, zone_size >> 20, sd->zd.nr_conv,
		 tp.mbps, tp.rpm);
	sd->disk.queue = sd->q;
	set_capacity(&sd->disk, sd->capacity);
	sd->disk.features = DISK_MULTI_CONN;
	sd->disk.fops = &smr_fops;
	sd->disk.attrs = smr_attrs;
	sd->disk.faults = smr_faults;
	sd->disk.private_data = sd;
	sd->disk.features |= media_disk_features(sd->data);
	if (mq_device_add_disk(mdev, &sd->disk)) {
		mq_err_set(e, "smr: cannot add disk %s", SMR_NAME);
		goto fail;
	}
	mdev->private_data = sd;
	return 0;

fail:
	smr_free(sd);
	return -1;
}

static void smr_remove(struct mq_device *mdev)
{
	struct smr_disk *sd = mdev->private_data;

	if (!sd)
		return;
	smr_free(sd);
	mdev->private_data = NULL;
}

static bool smr_zoned(const struct mq_params *p)
{
	(void)p;
	return true;
}

static const struct mq_param_spec smr_params[] = {
	{"capacity", "16G", "bytes, with a K, M, G or T suffix"},
	{"zone_size", "256M", "bytes, a power of two, 1M to 2G"},
	{"zone_nr_conv", "1", "conventional zones, the first ones"},
	{"max_open", "128", "open zones at most; 0: no limit"},
	{"max_active", "0", "open or closed zones at most; 0: no limit"},
	{"queue_depth", "32", "NCQ depth, 1..32"},
	{"mbps", "235", "sustained media rate, MiB/s"},
	{"rpm", "7200", "spindle speed"},
	{"seek_ms", "8.5", "average seek, ms"},
	{"track_seek_ms", "0.8", "track-to-track seek, ms"},
	MQ_ZONE_WRITE_PLUGGING_PARAM,
	{NULL},
};

const struct mq_driver smr_driver = {
	.name = "smr",
	.description = "host-managed SMR disk: sequential zones, 235 MiB/s",
	.params = smr_params,
	.probe = smr_probe,
	.remove = smr_remove,
	.zoned = smr_zoned,
};
