// SPDX-License-Identifier: GPL-2.0
/*
 * rbd: a loop-like passthrough to a Ceph RBD image, the userspace
 * counterpart of drivers/block/rbd.c, over the rbd media store
 * (backends/media/rbd.c, on librbd's asynchronous API).  queue_rq starts
 * the request and submits it to the store; the store ends it on its own
 * thread, never on librbd's, and the request ends there.  Like loop and
 * Linux's rbd, it keeps the elevator at none (seed 001), and it does not
 * merge: the cluster orders and merges on its own, and one request is one
 * store I/O.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rbd-client.h"
#include "../device.h"
#include "../media/media.h"
#include "../../server/mq/log.h"

#define RBD_QUEUE_DEPTH 128

struct rbd_cmd {
	struct media_io io;
	struct bio *bio; /* the one in flight */
};

struct rbd_dev {
	struct mq_tag_set tag_set;
	struct mq_queue *queue;
	struct gendisk disk;
	struct media *media;
};

static enum media_op rbd_media_op(enum req_op op)
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

static void rbd_end_io(struct media_io *io);

/* Submit cmd->bio, or the flush that is the whole request. */
static void rbd_submit(struct rbd_dev *rbd, struct request *rq)
{
	struct rbd_cmd *cmd = mq_rq_to_pdu(rq);
	struct bio *bio = cmd->bio;

	cmd->io = (struct media_io){
		.op = rbd_media_op(req_op(rq)),
		.end_io = rbd_end_io,
		.private = rq,
	};
	if (bio && req_op(rq) != REQ_OP_FLUSH) {
		cmd->io.offset = bio->bi_sector << SECTOR_SHIFT;
		cmd->io.len = bio->bi_size;
		cmd->io.buf = bio->bi_buf;
		if (bio->bi_flags & REQ_NOUNMAP)
			cmd->io.flags |= MEDIA_IO_NOUNMAP;
	}
	if (rq->cmd_flags & REQ_FUA)
		cmd->io.flags |= MEDIA_IO_FUA;
	media_submit(rbd->media, &cmd->io);
}

/*
 * The store's thread (or queue_rq's, for what the store refused at once).
 * The store has logged any failure.
 */
static void rbd_end_io(struct media_io *io)
{
	struct request *rq = io->private;
	struct rbd_cmd *cmd = mq_rq_to_pdu(rq);

	/* The core does not merge for us; a chain would go bio by bio. */
	if (!io->status && cmd->bio && cmd->bio->bi_next &&
	    req_op(rq) != REQ_OP_FLUSH) {
		cmd->bio = cmd->bio->bi_next;
		rbd_submit(rq->q->queuedata, rq);
		return;
	}
	mq_end_request(rq, io->status);
}

static enum mq_qrc rbd_queue_rq(struct mq_hw_ctx *hctx,
				const struct mq_queue_data *bd)
{
	struct request *rq = bd->rq;
	struct rbd_cmd *cmd = mq_rq_to_pdu(rq);

	switch (req_op(rq)) {
	case REQ_OP_READ:
	case REQ_OP_WRITE:
	case REQ_OP_FLUSH:
	case REQ_OP_DISCARD:
	case REQ_OP_WRITE_ZEROES:
		break;
	default:
		return MQ_QRC_IOERR;
	}
	cmd->bio = rq->bio;
	mq_start_request(rq);
	rbd_submit(rq->q->queuedata, rq);
	return MQ_QRC_OK;
}

static const struct mq_ops rbd_mq_ops = {
	.queue_rq = rbd_queue_rq,
};

static int rbd_extents(struct gendisk *disk, uint64_t offset, uint64_t length,
		       extent_fn *fn, void *arg)
{
	struct rbd_dev *rbd = disk->private_data;

	return media_extents(rbd->media, offset, length, fn, arg);
}

static const struct block_device_operations rbd_fops = {
	.extents = rbd_extents,
};

static void rbd_free(struct rbd_dev *rbd)
{
	if (rbd->queue)
		mq_cleanup_queue(rbd->queue);
	if (rbd->tag_set.tags)
		mq_free_tag_set(&rbd->tag_set);
	media_close(rbd->media);
	free(rbd);
}

static void rbd_set_limits(struct rbd_dev *rbd, unsigned int bs)
{
	struct queue_limits *lim = &rbd->queue->limits;
	struct media *m = rbd->media;
	unsigned int obj = m->io_opt ? m->io_opt : 4u << 20;

	lim->logical_block_size = bs;
	lim->physical_block_size = bs;
	/* As rbd.c: one object is the optimal and the largest I/O. */
	lim->io_opt = obj;
	lim->max_sectors = obj >> SECTOR_SHIFT;
	lim->max_segments = 1;
	if (m->caps & MEDIA_CAN_TRIM) {
		lim->max_discard_sectors = obj >> SECTOR_SHIFT;
		/* librbd keeps data under rbd_discard_granularity_bytes. */
		lim->discard_granularity = 64u << 10;
	}
	if (m->caps & MEDIA_CAN_ZERO)
		lim->max_write_zeroes_sectors = obj >> SECTOR_SHIFT;
	/* librbd's cache, when on, is volatile; FUA is a write then a flush. */
	lim->write_cache = true;
	lim->fua = true;
	lim->rotational = false;
}

static int rbd_probe(struct mq_device *dev, struct mq_params *p,
		     struct mq_err *e)
{
	struct media_open_args a = {.key = "image", .name = "rbd0"};
	unsigned int nr_hw_queues, depth;
	const char *pool, *image;
	struct rbd_dev *rbd;
	char spec[512];

	if (mq_param_str(p, "pool", "rbd", &pool, e) ||
	    mq_param_str(p, "image", NULL, &image, e) ||
	    mq_param_bool_alias(p, "readonly", "read_only", false, &a.read_only,
				e) ||
	    mq_param_uint(p, "bs", 512, 512, 4096, &a.block_size, e) ||
	    mq_param_uint(p, "nr_hw_queues", 1, 1, 64, &nr_hw_queues, e) ||
	    mq_param_uint(p, "queue_depth", RBD_QUEUE_DEPTH, 1, 1024, &depth,
			  e))
		return -1;
	if (a.block_size & (a.block_size - 1))
		return mq_err_set(
			e, "bs=%u: must be a power of two from 512 to 4096",
			a.block_size);
	if (!image || !*image)
		return mq_err_set(e, "image=NAME is required");
	if (!*pool || strchr(pool, '/') || strchr(image, '/') ||
	    strchr(image, '@'))
		return mq_err_set(e,
				  "pool=%s image=%s: names without '/' or '@' "
				  "(snap= names a snapshot)",
				  pool, image);
	if ((size_t)snprintf(spec, sizeof(spec), "rbd:%s/%s", pool, image) >=
	    sizeof(spec))
		return mq_err_set(e, "pool= and image=: names too long");
	a.params = p;
	a.io_timeout_ms = dev->io_timeout_ms;

	rbd = calloc(1, sizeof(*rbd));
	if (!rbd)
		return mq_err_set(e, "out of memory");
	snprintf(rbd->disk.disk_name, sizeof(rbd->disk.disk_name), "rbd0");
	if (media_open(spec, &a, &rbd->media, e))
		goto fail;

	rbd->tag_set.ops = &rbd_mq_ops;
	rbd->tag_set.nr_hw_queues = nr_hw_queues;
	rbd->tag_set.queue_depth = depth;
	rbd->tag_set.cmd_size = sizeof(struct rbd_cmd);
	/*
	 * librados times each operation out itself (io_timeout); the core's
	 * timer only finds requests librbd still holds, and waits on.
	 */
	rbd->tag_set.timeout_ms = dev->io_timeout_ms;
	rbd->tag_set.flags = MQ_F_NO_SCHED_BY_DEFAULT;
	rbd->tag_set.driver_data = rbd;
	if (mq_alloc_tag_set(&rbd->tag_set)) {
		rbd->tag_set.tags = NULL;
		mq_err_set(e, "cannot allocate the tag set");
		goto fail;
	}
	rbd->queue = mq_init_queue(&rbd->tag_set, dev->nr_ctx, "rbd0");
	if (!rbd->queue) {
		mq_err_set(e, "cannot create the queue");
		goto fail;
	}
	rbd->queue->queuedata = rbd;
	rbd_set_limits(rbd, a.block_size);

	snprintf(rbd->disk.description, sizeof(rbd->disk.description),
		 "RBD image %.200s", rbd->media->desc + strlen("rbd:"));
	rbd->disk.queue = rbd->queue;
	set_capacity(&rbd->disk, rbd->media->size >> SECTOR_SHIFT);
	rbd->disk.read_only = rbd->media->read_only;
	/* One image handle for every connection: a flush covers them all. */
	rbd->disk.features = DISK_MULTI_CONN;
	if (rbd->media->caps & MEDIA_CAN_FAST_ZERO)
		rbd->disk.features |= DISK_FAST_ZERO;
	rbd->disk.fops = &rbd_fops;
	rbd->disk.private_data = rbd;
	dev->private_data = rbd;
	if (mq_device_add_disk(dev, &rbd->disk)) {
		mq_err_set(e, "cannot add disk rbd0");
		goto fail;
	}
	return 0;

fail:
	dev->private_data = NULL;
	rbd_free(rbd);
	return -1;
}

static void rbd_remove(struct mq_device *dev)
{
	rbd_free(dev->private_data);
	dev->private_data = NULL;
}

static int rbd_sync(struct mq_device *dev)
{
	struct rbd_dev *rbd = dev->private_data;

	return media_flush(rbd->media);
}

static const struct mq_param_spec rbd_params[] = {
	{"image", NULL, "RBD image name (required)"},
	{"pool", "rbd", "RADOS pool of the image"},
	RBD_CLIENT_PARAMS,
	{"readonly", "0", "export read-only (read_only= is taken too)"},
	{"bs", "512", "logical block size, 512 to 4096, a power of two"},
	{"nr_hw_queues", "1", "hardware queues, 1 to 64"},
	{"queue_depth", "128", "tags per hardware queue, 1 to 1024"},
	{NULL},
};

const struct mq_driver rbd_driver = {
	.name = "rbd",
	.description = "Ceph RBD image through librbd (loop-like passthrough)",
	.params = rbd_params,
	.probe = rbd_probe,
	.remove = rbd_remove,
	.sync = rbd_sync,
	.no_media = "it is the rbd store itself: give pool= and image=",
};
