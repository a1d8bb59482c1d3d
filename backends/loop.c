// SPDX-License-Identifier: GPL-2.0
/*
 * loop: the passthrough core of the loop-like devices, after
 * drivers/block/loop.c (see loop.h).  Two ways to run a request:
 *
 *   - with workers (file): queue_rq starts the request and hands it to a
 *     pool of workers, which do the blocking I/O bio by bio and end it,
 *     as loop's workers do;
 *   - without (nbd, rbd): queue_rq starts the request and submits its
 *     first bio to the store; the store's thread submits the next one
 *     from the end callback and ends the request after the last.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop.h"
#include "common/workqueue.h"
#include "../server/mq/log.h"

struct loop_cmd {
	union {
		struct work_item work; /* first: the item is the pdu */
		struct media_io io;
	};
	struct bio *bio; /* without workers: the bio in flight */
};

struct loop_device {
	struct mq_tag_set tag_set;
	struct mq_queue *queue;
	struct gendisk disk;
	struct workqueue *wq;
	struct media *media;
	bool log_errors;
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

/* With workers: one bio, blocking. */
static int loop_do_bio(struct loop_device *lo, struct bio *bio)
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
	struct loop_device *lo = rq->q->queuedata;
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

static void loop_cmd_end(struct media_io *io);

/* Without workers: send cmd->bio, or the flush that is the request. */
static void loop_cmd_send(struct loop_device *lo, struct request *rq)
{
	struct loop_cmd *cmd = mq_rq_to_pdu(rq);
	struct media_io *io = &cmd->io;
	struct bio *bio = cmd->bio;

	memset(io, 0, sizeof(*io));
	io->end_io = loop_cmd_end;
	io->private = rq;
	if (!bio) {
		io->op = MEDIA_FLUSH;
	} else {
		io->op = loop_media_op(bio->bi_op);
		io->offset = bio->bi_sector << SECTOR_SHIFT;
		io->len = bio->bi_size;
		io->buf = bio->bi_buf;
		if (bio->bi_flags & REQ_FUA)
			io->flags |= MEDIA_IO_FUA;
		if (bio->bi_flags & REQ_NOUNMAP)
			io->flags |= MEDIA_IO_NOUNMAP;
	}
	media_submit(lo->media, io);
}

/*
 * On the store's thread (or queue_rq's, for what the store refused at
 * once): the next bio, or the end of the request.
 */
static void loop_cmd_end(struct media_io *io)
{
	struct request *rq = io->private;
	struct loop_device *lo = rq->q->queuedata;
	struct loop_cmd *cmd = mq_rq_to_pdu(rq);

	if (io->status) {
		if (lo->log_errors)
			pr_err("%s: %s at byte %" PRIu64 ": %s",
			       lo->disk.disk_name, media_op_name(io->op),
			       io->offset, mq_strerror(io->status));
		mq_end_request(rq, io->status);
		return;
	}
	if (cmd->bio && cmd->bio->bi_next) {
		cmd->bio = cmd->bio->bi_next;
		loop_cmd_send(lo, rq);
		return;
	}
	mq_end_request(rq, 0);
}

static enum mq_qrc loop_queue_rq(struct mq_hw_ctx *hctx,
				 const struct mq_queue_data *bd)
{
	struct request *rq = bd->rq;
	struct loop_device *lo = rq->q->queuedata;
	struct loop_cmd *cmd = mq_rq_to_pdu(rq);

	/* As loop's do_req_filebacked: what the store cannot do is EIO. */
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
	mq_start_request(rq);
	if (lo->wq) {
		queue_work(lo->wq, &cmd->work, loop_handle_cmd);
		return MQ_QRC_OK;
	}
	cmd->bio = req_op(rq) == REQ_OP_FLUSH ? NULL : rq->bio;
	loop_cmd_send(lo, rq);
	return MQ_QRC_OK;
}

static const struct mq_ops loop_mq_ops = {
	.queue_rq = loop_queue_rq,
};

static int loop_extents(struct gendisk *disk, uint64_t offset, uint64_t length,
			extent_fn *fn, void *arg)
{
	struct loop_device *lo = disk->private_data;

	return media_extents(lo->media, offset, length, fn, arg);
}

static const struct block_device_operations loop_fops = {
	.extents = loop_extents,
};

static void loop_free(struct loop_device *lo)
{
	if (lo->queue)
		mq_cleanup_queue(lo->queue);
	if (lo->tag_set.tags)
		mq_free_tag_set(&lo->tag_set);
	workqueue_destroy(lo->wq);
	media_close(lo->media);
	free(lo);
}

static int loop_init_disk(struct mq_device *dev, struct loop_device *lo,
			  const struct loop_config *cfg, struct mq_err *e)
{
	struct gendisk *disk = &lo->disk;
	struct media *m = lo->media;

	snprintf(disk->description, sizeof(disk->description), "%s",
		 cfg->description);
	disk->queue = lo->queue;
	set_capacity(disk, m->size >> SECTOR_SHIFT);
	disk->read_only = m->read_only;
	disk->features = cfg->disk_features;
	if (m->caps & MEDIA_CAN_MULTI_CONN)
		disk->features |= DISK_MULTI_CONN;
	/*
	 * The store says when every WRITE_ZEROES skips writing zeroes (a
	 * file with hole punching: fallocate, never a write).
	 */
	if (m->caps & MEDIA_CAN_FAST_ZERO)
		disk->features |= DISK_FAST_ZERO;
	disk->features |= media_disk_features(m);
	disk->fops = &loop_fops;
	disk->private_data = lo;
	if (mq_device_add_disk(dev, disk))
		return mq_err_set(e, "cannot add disk %s", cfg->name);
	return 0;
}

int loop_add(struct mq_device *dev, const struct loop_config *cfg,
	     struct media *m, struct mq_err *e)
{
	struct queue_limits *lim;
	struct loop_device *lo;

	lo = calloc(1, sizeof(*lo));
	if (!lo) {
		media_close(m);
		return mq_err_set(e, "out of memory");
	}
	lo->media = m;
	lo->log_errors = cfg->log_errors;
	snprintf(lo->disk.disk_name, sizeof(lo->disk.disk_name), "%s",
		 cfg->name);

	if (cfg->workers) {
		lo->wq = workqueue_create(cfg->name, cfg->workers);
		if (!lo->wq) {
			mq_err_set(e, "cannot start %u workers: %s",
				   cfg->workers, mq_strerror(errno));
			goto fail;
		}
	}

	lo->tag_set.ops = &loop_mq_ops;
	lo->tag_set.nr_hw_queues = cfg->nr_hw_queues;
	lo->tag_set.queue_depth = cfg->queue_depth;
	lo->tag_set.cmd_size = sizeof(struct loop_cmd);
	/*
	 * Remote stores time each operation out themselves; the core's
	 * timer only finds requests a store still holds.
	 */
	lo->tag_set.timeout_ms = dev->io_timeout_ms;
	lo->tag_set.flags = cfg->tag_flags | MQ_F_NO_SCHED_BY_DEFAULT;
	lo->tag_set.driver_data = lo;
	if (mq_alloc_tag_set(&lo->tag_set)) {
		lo->tag_set.tags = NULL;
		mq_err_set(e, "cannot allocate the tag set");
		goto fail;
	}
	lo->queue = mq_init_queue(&lo->tag_set, dev->nr_ctx, cfg->name);
	if (!lo->queue) {
		mq_err_set(e, "cannot create the queue");
		goto fail;
	}
	lo->queue->queuedata = lo;
	lim = &lo->queue->limits;
	lim->logical_block_size = cfg->block_size;
	lim->physical_block_size = cfg->block_size;
	lim->rotational = false;
	cfg->set_limits(lim, m, cfg->block_size);

	dev->private_data = lo;
	if (loop_init_disk(dev, lo, cfg, e))
		goto fail;
	return 0;

fail:
	dev->private_data = NULL;
	loop_free(lo);
	return -1;
}

void loop_remove(struct mq_device *dev)
{
	loop_free(dev->private_data);
	dev->private_data = NULL;
}

/*
 * The media layer answers a read-only store's flush with 0, and the nbd
 * store a flush of a remote without a cache.
 */
int loop_sync(struct mq_device *dev)
{
	struct loop_device *lo = dev->private_data;

	return media_flush(lo->media);
}

int loop_check_bs(unsigned int bs, struct mq_err *e)
{
	if (bs & (bs - 1))
		return mq_err_set(
			e, "bs=%u: must be a power of two from 512 to 4096",
			bs);
	return 0;
}
