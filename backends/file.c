// SPDX-License-Identifier: GPL-2.0
/*
 * file: a loop device over a regular file or a host block device, after
 * drivers/block/loop.c.  queue_rq starts the request and hands it to a
 * pool of workers, which do the blocking pread/pwrite/fallocate and end
 * it.  Like loop, it keeps the elevator at none (seed 001).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "device.h"
#include "common/workqueue.h"
#include "media/media.h"
#include "../server/mq/log.h"

struct loop_cmd {
	struct work_item work; /* first: the item is the pdu */
};

struct loop_dev {
	struct mq_tag_set tag_set;
	struct mq_queue *queue;
	struct gendisk disk;
	struct workqueue *wq;
	struct media *media;
};

static enum media_op loop_media_op(enum req_op op)
{
	switch (op) {
	case REQ_OP_READ:
		return MEDIA_READ;
	case REQ_OP_WRITE:
		return MEDIA_WRITE;
	case REQ_OP_DISCARD:
		return MEDIA_DISCARD;
	case REQ_OP_WRITE_ZEROES:
		return MEDIA_WRITE_ZEROES;
	default:
		return MEDIA_FLUSH;
	}
}

static int loop_do_bio(struct loop_dev *lo, struct bio *bio)
{
	uint64_t pos = bio->bi_sector << SECTOR_SHIFT;

	if (lo->media->read_only && op_is_write(bio->bi_op))
		return EROFS;

	switch (bio->bi_op) {
	case REQ_OP_READ:
	case REQ_OP_WRITE:
	case REQ_OP_WRITE_ZEROES:
		return media_rw(lo->media, loop_media_op(bio->bi_op),
				bio->bi_buf, bio->bi_size, pos,
				(bio->bi_flags & REQ_NOUNMAP) ? MEDIA_IO_NOUNMAP
							      : 0);
	case REQ_OP_FLUSH:
		return media_flush(lo->media);
	case REQ_OP_DISCARD:
		if (!(lo->media->caps & MEDIA_CAN_TRIM))
			return EOPNOTSUPP;
		return media_discard(lo->media, bio->bi_size, pos);
	default:
		return EOPNOTSUPP;
	}
}

static const char *loop_op_name(enum req_op op)
{
	switch (op) {
	case REQ_OP_READ:
		return "read";
	case REQ_OP_WRITE:
		return "write";
	case REQ_OP_FLUSH:
		return "flush";
	case REQ_OP_DISCARD:
		return "discard";
	case REQ_OP_WRITE_ZEROES:
		return "write zeroes";
	default:
		return req_op_name(op);
	}
}

static void loop_handle_cmd(struct work_item *item)
{
	struct request *rq = mq_rq_from_pdu(item);
	struct loop_dev *lo = rq->q->queuedata;
	struct bio *bio;
	int err = 0;

	if (req_op(rq) == REQ_OP_FLUSH) {
		err = media_flush(lo->media);
		if (err)
			pr_err("%s: flush: %s", lo->disk.disk_name,
			       mq_strerror(err));
	} else {
		rq_for_each_bio (bio, rq) {
			err = loop_do_bio(lo, bio);
			if (!err)
				continue;
			pr_err("%s: %s at sector %" PRIu64 ": %s",
			       lo->disk.disk_name, loop_op_name(bio->bi_op),
			       bio->bi_sector, mq_strerror(err));
			break;
		}
	}
	mq_end_request(rq, err);
}

static enum mq_qrc loop_queue_rq(struct mq_hw_ctx *hctx,
				 const struct mq_queue_data *bd)
{
	struct request *rq = bd->rq;
	struct loop_dev *lo = rq->q->queuedata;
	struct loop_cmd *cmd = mq_rq_to_pdu(rq);

	mq_start_request(rq);
	queue_work(lo->wq, &cmd->work, loop_handle_cmd);
	return MQ_QRC_OK;
}

static const struct mq_ops loop_mq_ops = {
	.queue_rq = loop_queue_rq,
};

static int loop_extents(struct gendisk *disk, uint64_t offset, uint64_t length,
			extent_fn *fn, void *arg)
{
	struct loop_dev *lo = disk->private_data;

	return media_extents(lo->media, offset, length, fn, arg);
}

static const struct block_device_operations loop_fops = {
	.extents = loop_extents,
};

static void loop_free(struct loop_dev *lo)
{
	if (lo->queue)
		mq_cleanup_queue(lo->queue);
	if (lo->tag_set.tags)
		mq_free_tag_set(&lo->tag_set);
	workqueue_destroy(lo->wq);
	media_close(lo->media);
	free(lo);
}

static void loop_set_limits(struct loop_dev *lo, unsigned int bs)
{
	struct queue_limits *lim = &lo->queue->limits;
	struct media *m = lo->media;

	lim->logical_block_size = bs;
	lim->physical_block_size = bs;
	if (m->io_opt >= bs && m->io_opt <= (1u << 20) &&
	    !(m->io_opt & (m->io_opt - 1)))
		lim->io_opt = m->io_opt;
	lim->max_sectors = 65536;
	lim->max_segments = 128;
	if (m->caps & MEDIA_CAN_TRIM) {
		lim->max_discard_sectors = UINT32_MAX >> SECTOR_SHIFT;
		lim->discard_granularity = lim->io_opt > bs ? lim->io_opt : bs;
	}
	if (!m->read_only)
		lim->max_write_zeroes_sectors = UINT32_MAX >> SECTOR_SHIFT;
	lim->write_cache = !!(m->caps & MEDIA_CAN_FLUSH);
	lim->fua = false; /* the core sends a FLUSH after the write */
	lim->rotational = false;
}

static int loop_init_disk(struct mq_device *dev, struct loop_dev *lo,
			  struct mq_err *e)
{
	struct gendisk *disk = &lo->disk;
	const char *desc = lo->media->desc;

	/* "file:PATH" shows as the path, as it always did. */
	if (strncmp(desc, "file:", 5) == 0)
		desc += 5;
	snprintf(disk->description, sizeof(disk->description),
		 "file-backed loop device loop0 (%.200s)", desc);
	disk->queue = lo->queue;
	set_capacity(disk, lo->media->size >> SECTOR_SHIFT);
	disk->read_only = lo->media->read_only;
	if (lo->media->caps & MEDIA_CAN_MULTI_CONN)
		disk->features = DISK_MULTI_CONN;
	/*
	 * Probed: with hole punching, every WRITE_ZEROES is a fallocate
	 * (ZERO_RANGE, or punch then allocate for NOUNMAP).  Without it
	 * ZERO_RANGE may still work, but nothing promises it.
	 */
	if (lo->media->caps & MEDIA_CAN_FAST_ZERO)
		disk->features |= DISK_FAST_ZERO;
	disk->fops = &loop_fops;
	disk->private_data = lo;
	if (mq_device_add_disk(dev, disk))
		return mq_err_set(e, "cannot add disk loop0");
	return 0;
}

static int loop_probe(struct mq_device *dev, struct mq_params *p,
		      struct mq_err *e)
{
	struct media_open_args a = {.name = "loop0"};
	unsigned int bs, workers;
	struct loop_dev *lo;
	uint64_t size = 0;

	if (mq_param_bool(p, "direct", false, &a.direct, e) ||
	    mq_param_bool(p, "sync", false, &a.sync, e) ||
	    mq_param_bool_alias(p, "readonly", "read_only", false, &a.read_only,
				e) ||
	    mq_param_uint(p, "bs", 512, 512, 4096, &bs, e) ||
	    mq_param_uint(p, "workers", 4, 1, 64, &workers, e))
		return -1;
	if (bs & (bs - 1))
		return mq_err_set(
			e, "bs=%u: must be a power of two from 512 to 4096",
			bs);
	if (mq_params_has(p, "size")) {
		if (mq_param_size(p, "size", 0, &size, e))
			return -1;
		if (!size || size % bs)
			return mq_err_set(
				e,
				"size=%" PRIu64
				": must be a non-zero multiple of bs=%u",
				size, bs);
	}
	a.size = size;
	a.block_size = bs;

	lo = calloc(1, sizeof(*lo));
	if (!lo)
		return mq_err_set(e, "out of memory");
	snprintf(lo->disk.disk_name, sizeof(lo->disk.disk_name), "loop0");
	if (mq_device_open_media(dev, p, NULL, "file", NULL, &a, &lo->media, e))
		goto fail;
	if (!lo->media) {
		mq_err_set(e, "file=PATH is required");
		goto fail;
	}

	lo->wq = workqueue_create("loop0", workers);
	if (!lo->wq) {
		mq_err_set(e, "cannot start %u workers: %s", workers,
			   mq_strerror(errno));
		goto fail;
	}

	lo->tag_set.ops = &loop_mq_ops;
	lo->tag_set.nr_hw_queues = 1;
	lo->tag_set.queue_depth = 128;
	lo->tag_set.cmd_size = sizeof(struct loop_cmd);
	lo->tag_set.timeout_ms = dev->io_timeout_ms;
	lo->tag_set.flags = MQ_F_SHOULD_MERGE | MQ_F_NO_SCHED_BY_DEFAULT;
	lo->tag_set.driver_data = lo;
	if (mq_alloc_tag_set(&lo->tag_set)) {
		lo->tag_set.tags = NULL;
		mq_err_set(e, "cannot allocate the tag set");
		goto fail;
	}
	lo->queue = mq_init_queue(&lo->tag_set, dev->nr_ctx, "loop0");
	if (!lo->queue) {
		mq_err_set(e, "cannot create the queue");
		goto fail;
	}
	lo->queue->queuedata = lo;
	loop_set_limits(lo, bs);

	dev->private_data = lo;
	if (loop_init_disk(dev, lo, e))
		goto fail;
	return 0;

fail:
	dev->private_data = NULL;
	loop_free(lo);
	return -1;
}

static void loop_remove(struct mq_device *dev)
{
	loop_free(dev->private_data);
	dev->private_data = NULL;
}

static int loop_sync(struct mq_device *dev)
{
	struct loop_dev *lo = dev->private_data;

	return lo->media->read_only ? 0 : media_flush(lo->media);
}

static const struct mq_param_spec loop_params[] = {
	{"file", NULL,
	 "path of a regular file or block device (or media=: any store)"},
	{"size", NULL, "size in bytes; a smaller regular file is extended"},
	{"bs", "512", "logical block size, 512 to 4096, a power of two"},
	{"direct", "0", "use O_DIRECT, bypassing the host page cache"},
	{"sync", "0", "open with O_DSYNC: no volatile cache, no flushes"},
	{"readonly", "0", "export read-only (read_only= is taken too)"},
	{"workers", "4", "I/O threads, 1 to 64"},
	{NULL},
};

const struct mq_driver file_driver = {
	.name = "file",
	.description = "loop device over a file or block device",
	.params = loop_params,
	.probe = loop_probe,
	.remove = loop_remove,
	.sync = loop_sync,
};
