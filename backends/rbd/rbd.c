// SPDX-License-Identifier: GPL-2.0
/*
 * rbd: a loop-like passthrough to a Ceph RBD image through librbd, the
 * userspace counterpart of drivers/block/rbd.c.  queue_rq starts the
 * request and hands it to librbd asynchronously; the completion comes back
 * on the client's thread (rbd-client.c), where the request ends.  Like loop
 * and Linux's rbd, it keeps the elevator at none (seed 001): the cluster
 * orders and merges on its own.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rbd-client.h"
#include "../device.h"
#include "../../server/mq/log.h"

#define RBD_MAX_SEGMENTS 128
#define RBD_QUEUE_DEPTH	 128

struct rbd_cmd {
	struct rbd_aio aio;
	struct iovec iov[RBD_MAX_SEGMENTS];
};

struct rbd_dev {
	struct mq_tag_set tag_set;
	struct mq_queue *queue;
	struct gendisk disk;
	struct rbd_client *client;
	unsigned int io_timeout_ms;
	/* Requests failed since the last success: for the "back" line. */
	atomic_uint nr_failed;
};

static enum rbd_aio_op rbd_aio_op_of(enum req_op op)
{
	switch (op) {
	case REQ_OP_READ:
		return RBD_AIO_READ;
	case REQ_OP_WRITE:
		return RBD_AIO_WRITE;
	case REQ_OP_FLUSH:
		return RBD_AIO_FLUSH;
	case REQ_OP_DISCARD:
		return RBD_AIO_DISCARD;
	default:
		return RBD_AIO_WRITE_ZEROES;
	}
}

/* The client's thread: the image has answered, or librados gave up. */
static void rbd_end_io(struct rbd_aio *aio)
{
	struct request *rq = aio->private;
	struct rbd_dev *rbd = rq->q->queuedata;
	int err = aio->status;
	unsigned int failed;

	if (!err) {
		failed = atomic_exchange(&rbd->nr_failed, 0);
		/* A warning, so that it shows wherever the failures did. */
		if (failed)
			pr_warn("%s: %s answers again after %u failed requests",
				rbd->disk.disk_name,
				rbd_client_desc(rbd->client), failed);
	} else if (err == ETIMEDOUT) {
		atomic_fetch_add(&rbd->nr_failed, 1);
		pr_err("%s: %s at sector %" PRIu64
		       ": no answer from %s within io_timeout=%u ms",
		       rbd->disk.disk_name, req_op_name(req_op(rq)),
		       blk_rq_pos(rq), rbd_client_desc(rbd->client),
		       rbd->io_timeout_ms);
		err = EIO;
	} else {
		atomic_fetch_add(&rbd->nr_failed, 1);
		pr_err("%s: %s at sector %" PRIu64 ": %s", rbd->disk.disk_name,
		       req_op_name(req_op(rq)), blk_rq_pos(rq),
		       mq_strerror(err));
	}
	mq_end_request(rq, err);
}

static enum mq_qrc rbd_queue_rq(struct mq_hw_ctx *hctx,
				const struct mq_queue_data *bd)
{
	struct request *rq = bd->rq;
	struct rbd_dev *rbd = rq->q->queuedata;
	struct rbd_cmd *cmd = mq_rq_to_pdu(rq);
	struct rbd_aio *aio = &cmd->aio;
	struct bio *bio;
	int n = 0;

	*aio = (struct rbd_aio){
		.op = rbd_aio_op_of(req_op(rq)),
		.offset = blk_rq_pos(rq) << SECTOR_SHIFT,
		.len = blk_rq_bytes(rq),
		.iov = cmd->iov,
		.end = rbd_end_io,
		.private = rq,
	};
	if (rq->cmd_flags & REQ_FUA)
		aio->flags |= RBD_AIO_FUA;
	if (req_op(rq) == REQ_OP_READ || req_op(rq) == REQ_OP_WRITE) {
		rq_for_each_bio (bio, rq) {
			if (n == RBD_MAX_SEGMENTS)
				return MQ_QRC_IOERR; /* max_segments says no */
			cmd->iov[n].iov_base = bio->bi_buf;
			cmd->iov[n].iov_len = bio->bi_size;
			n++;
		}
		aio->iovcnt = n;
	} else if (req_op(rq) != REQ_OP_FLUSH && req_op(rq) != REQ_OP_DISCARD &&
		   req_op(rq) != REQ_OP_WRITE_ZEROES) {
		return MQ_QRC_IOERR;
	}

	mq_start_request(rq);
	rbd_client_submit(rbd->client, aio);
	return MQ_QRC_OK;
}

static const struct mq_ops rbd_mq_ops = {
	.queue_rq = rbd_queue_rq,
};

static int rbd_extents(struct gendisk *disk, uint64_t offset, uint64_t length,
		       extent_fn *fn, void *arg)
{
	struct rbd_dev *rbd = disk->private_data;

	return rbd_client_extents(rbd->client, offset, length, fn, arg);
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
	rbd_client_close(rbd->client);
	free(rbd);
}

static void rbd_set_limits(struct rbd_dev *rbd, unsigned int bs)
{
	struct queue_limits *lim = &rbd->queue->limits;
	bool ro = rbd_client_read_only(rbd->client);

	lim->logical_block_size = bs;
	lim->physical_block_size = bs;
	/* librbd's objects are 4 MiB by default: rbd.c's io_opt is one. */
	lim->io_opt = 4u << 20;
	lim->max_sectors = (4u << 20) >> SECTOR_SHIFT;
	lim->max_segments = RBD_MAX_SEGMENTS;
	if (!ro) {
		lim->max_discard_sectors = (4u << 20) >> SECTOR_SHIFT;
		lim->discard_granularity =
			rbd_client_discard_granularity(rbd->client);
		lim->max_write_zeroes_sectors = (4u << 20) >> SECTOR_SHIFT;
	}
	/* librbd's cache, when on, is volatile; FUA is a write then a flush. */
	lim->write_cache = true;
	lim->fua = true;
	lim->rotational = false;
}

static int rbd_probe(struct mq_device *dev, struct mq_params *p,
		     struct mq_err *e)
{
	struct rbd_client_opts o = {0};
	unsigned int bs, nr_hw_queues, depth;
	struct rbd_dev *rbd;
	bool readonly;

	if (mq_param_str(p, "pool", "rbd", &o.pool, e) ||
	    mq_param_str(p, "image", NULL, &o.image, e) ||
	    rbd_client_read_params(p, &o, e) ||
	    mq_param_bool_alias(p, "readonly", "read_only", false, &readonly,
				e) ||
	    mq_param_uint(p, "bs", 512, 512, 4096, &bs, e) ||
	    mq_param_uint(p, "nr_hw_queues", 1, 1, 64, &nr_hw_queues, e) ||
	    mq_param_uint(p, "queue_depth", RBD_QUEUE_DEPTH, 1, 1024, &depth,
			  e))
		return -1;
	if (bs & (bs - 1))
		return mq_err_set(
			e, "bs=%u: must be a power of two from 512 to 4096",
			bs);
	if (!o.image || !*o.image)
		return mq_err_set(e, "image=NAME is required");
	if (o.create_size % bs)
		return mq_err_set(e,
				  "create=%" PRIu64 ": not a multiple of bs=%u",
				  o.create_size, bs);
	o.read_only = o.read_only || readonly;
	o.io_timeout_ms = dev->io_timeout_ms;
	o.name = "rbd0";

	rbd = calloc(1, sizeof(*rbd));
	if (!rbd)
		return mq_err_set(e, "out of memory");
	snprintf(rbd->disk.disk_name, sizeof(rbd->disk.disk_name), "rbd0");
	rbd->io_timeout_ms = dev->io_timeout_ms;
	atomic_init(&rbd->nr_failed, 0);
	if (rbd_client_open(&o, &rbd->client, e))
		goto fail;
	if (rbd_client_size(rbd->client) % bs) {
		mq_err_set(e,
			   "image=%s: its size %" PRIu64
			   " is not a multiple of bs=%u",
			   o.image, rbd_client_size(rbd->client), bs);
		goto fail;
	}

	rbd->tag_set.ops = &rbd_mq_ops;
	rbd->tag_set.nr_hw_queues = nr_hw_queues;
	rbd->tag_set.queue_depth = depth;
	rbd->tag_set.cmd_size = sizeof(struct rbd_cmd);
	/*
	 * librados times each operation out itself (io_timeout); the core's
	 * timer only finds requests librbd still holds, and waits on.
	 */
	rbd->tag_set.timeout_ms = dev->io_timeout_ms;
	rbd->tag_set.flags = MQ_F_SHOULD_MERGE | MQ_F_NO_SCHED_BY_DEFAULT;
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
	rbd_set_limits(rbd, bs);

	snprintf(rbd->disk.description, sizeof(rbd->disk.description),
		 "RBD image %s", rbd_client_desc(rbd->client));
	rbd->disk.queue = rbd->queue;
	set_capacity(&rbd->disk, rbd_client_size(rbd->client) >> SECTOR_SHIFT);
	rbd->disk.read_only = rbd_client_read_only(rbd->client);
	/* One image handle for every connection: a flush covers them all. */
	rbd->disk.features = DISK_MULTI_CONN | DISK_FAST_ZERO;
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

	return rbd_client_flush(rbd->client);
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
};
