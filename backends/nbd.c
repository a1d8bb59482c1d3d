// SPDX-License-Identifier: GPL-2.0
/*
 * nbd: a loop-like passthrough to another NBD server (nbd=URI), over the
 * nbd media store (backends/media/nbd.c).  Like the kernel's rbd and
 * loop, it keeps the elevator at none (NO_SCHED_BY_DEFAULT) and takes
 * nr_hw_queues.  queue_rq starts the request and hands each bio to the
 * store; the store's thread, which drives the connections, completes it.
 * What the remote offers (read-only, flush, FUA, trim, zero, block
 * status, multi-conn) is what the export offers.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "media/media.h"
#include "../server/mq/log.h"

struct nbd_cmd {
	struct media_io io;
	struct bio *bio; /* the bio in flight */
};

struct nbd_dev {
	struct mq_tag_set tag_set;
	struct mq_queue *queue;
	struct gendisk disk;
	struct media *media;
};

static enum media_op nbd_media_op(enum req_op op)
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

static void nbd_cmd_end(struct media_io *io);

/* Send the command's bio (a FLUSH has none). */
static void nbd_cmd_send(struct nbd_dev *nbd, struct nbd_cmd *cmd,
			 struct request *rq)
{
	struct media_io *io = &cmd->io;
	struct bio *bio = cmd->bio;

	memset(io, 0, sizeof(*io));
	io->end_io = nbd_cmd_end;
	io->private = rq;
	if (!bio) {
		io->op = MEDIA_FLUSH;
	} else {
		io->op = nbd_media_op(bio->bi_op);
		io->offset = bio->bi_sector << SECTOR_SHIFT;
		io->len = bio->bi_size;
		io->buf = bio->bi_buf;
		if (bio->bi_flags & REQ_FUA)
			io->flags |= MEDIA_IO_FUA;
		if (bio->bi_flags & REQ_NOUNMAP)
			io->flags |= MEDIA_IO_NOUNMAP;
	}
	media_submit(nbd->media, io);
}

/* On the store's thread: the next bio, or the end of the request. */
static void nbd_cmd_end(struct media_io *io)
{
	struct request *rq = io->private;
	struct nbd_dev *nbd = rq->q->queuedata;
	struct nbd_cmd *cmd = mq_rq_to_pdu(rq);

	if (io->status) {
		pr_err("%s: %s at byte %" PRIu64 ": %s", nbd->disk.disk_name,
		       media_op_name(io->op), io->offset,
		       mq_strerror(io->status));
		mq_end_request(rq, io->status);
		return;
	}
	if (cmd->bio && cmd->bio->bi_next) {
		cmd->bio = cmd->bio->bi_next;
		nbd_cmd_send(nbd, cmd, rq);
		return;
	}
	mq_end_request(rq, 0);
}

static enum mq_qrc nbd_queue_rq(struct mq_hw_ctx *hctx,
				const struct mq_queue_data *bd)
{
	struct request *rq = bd->rq;
	struct nbd_dev *nbd = rq->q->queuedata;
	struct nbd_cmd *cmd = mq_rq_to_pdu(rq);

	mq_start_request(rq);
	cmd->bio = req_op(rq) == REQ_OP_FLUSH ? NULL : rq->bio;
	nbd_cmd_send(nbd, cmd, rq);
	return MQ_QRC_OK;
}

static const struct mq_ops nbd_mq_ops = {
	.queue_rq = nbd_queue_rq,
};

static int nbd_dev_extents(struct gendisk *disk, uint64_t offset,
			   uint64_t length, extent_fn *fn, void *arg)
{
	struct nbd_dev *nbd = disk->private_data;

	return media_extents(nbd->media, offset, length, fn, arg);
}

static const struct block_device_operations nbd_fops = {
	.extents = nbd_dev_extents,
};

static void nbd_dev_free(struct nbd_dev *nbd)
{
	if (nbd->queue)
		mq_cleanup_queue(nbd->queue);
	if (nbd->tag_set.tags)
		mq_free_tag_set(&nbd->tag_set);
	media_close(nbd->media);
	free(nbd);
}

static void nbd_set_limits(struct nbd_dev *nbd, unsigned int bs)
{
	struct queue_limits *lim = &nbd->queue->limits;
	unsigned int caps = nbd->media->caps;

	lim->logical_block_size = bs;
	lim->physical_block_size = bs;
	lim->max_sectors = 65536; /* 32 MiB, what NBD servers take */
	lim->max_segments = 128;
	if ((caps & MEDIA_CAN_TRIM) && !nbd->media->read_only) {
		lim->max_discard_sectors = (1u << 30) >> SECTOR_SHIFT;
		lim->discard_granularity = bs;
	}
	if ((caps & MEDIA_CAN_ZERO) && !nbd->media->read_only)
		lim->max_write_zeroes_sectors = (1u << 30) >> SECTOR_SHIFT;
	lim->write_cache = !!(caps & MEDIA_CAN_FLUSH);
	lim->fua = !!(caps & MEDIA_CAN_FUA);
	lim->rotational = false;
}

static int nbd_probe(struct mq_device *dev, struct mq_params *p,
		     struct mq_err *e)
{
	struct media_open_args a = {.name = "nbd0"};
	unsigned int bs, nr_hw, depth;
	struct nbd_dev *nbd;
	struct gendisk *disk;
	uint64_t size = 0;

	if (mq_param_uint(p, "bs", 512, 512, 4096, &bs, e) ||
	    mq_param_uint(p, "nr_hw_queues", 1, 1, 64, &nr_hw, e) ||
	    mq_param_uint(p, "queue_depth", 128, 1, 1024, &depth, e) ||
	    mq_param_bool_alias(p, "readonly", "read_only", false, &a.read_only,
				e) ||
	    mq_param_size(p, "size", 0, &size, e))
		return -1;
	if (bs & (bs - 1))
		return mq_err_set(
			e, "bs=%u: must be a power of two from 512 to 4096",
			bs);
	if (size % bs)
		return mq_err_set(e,
				  "size=%" PRIu64
				  ": must be a non-zero multiple of bs=%u",
				  size, bs);
	a.size = size;
	a.block_size = bs;

	nbd = calloc(1, sizeof(*nbd));
	if (!nbd)
		return mq_err_set(e, "out of memory");
	/* nbd=URI is media=nbd:URI; media= names any other store. */
	if (mq_params_has(p, "nbd")) {
		const char *uri;
		char spec[4200];

		if (mq_params_has(p, "media")) {
			mq_err_set(e, "nbd=URI and media=: give one of them");
			goto fail;
		}
		if (mq_param_str(p, "nbd", NULL, &uri, e))
			goto fail;
		if ((size_t)snprintf(spec, sizeof(spec), "nbd:%s", uri) >=
		    sizeof(spec)) {
			mq_err_set(e, "nbd=: the URI is too long");
			goto fail;
		}
		a.key = "nbd";
		a.params = p;
		a.io_timeout_ms = dev->io_timeout_ms;
		if (media_open(spec, &a, &nbd->media, e))
			goto fail;
	} else if (mq_device_open_media(dev, p, NULL, NULL, NULL, &a,
					&nbd->media, e)) {
		goto fail;
	}
	if (!nbd->media) {
		mq_err_set(e, "nbd=URI is required");
		goto fail;
	}

	nbd->tag_set.ops = &nbd_mq_ops;
	nbd->tag_set.nr_hw_queues = nr_hw;
	nbd->tag_set.queue_depth = depth;
	nbd->tag_set.cmd_size = sizeof(struct nbd_cmd);
	nbd->tag_set.timeout_ms = dev->io_timeout_ms;
	nbd->tag_set.flags = MQ_F_NO_SCHED_BY_DEFAULT;
	nbd->tag_set.driver_data = nbd;
	if (mq_alloc_tag_set(&nbd->tag_set)) {
		nbd->tag_set.tags = NULL;
		mq_err_set(e, "cannot allocate the tag set");
		goto fail;
	}
	nbd->queue = mq_init_queue(&nbd->tag_set, dev->nr_ctx, "nbd0");
	if (!nbd->queue) {
		mq_err_set(e, "cannot create the queue");
		goto fail;
	}
	nbd->queue->queuedata = nbd;
	nbd_set_limits(nbd, bs);

	disk = &nbd->disk;
	snprintf(disk->disk_name, sizeof(disk->disk_name), "nbd0");
	snprintf(disk->description, sizeof(disk->description),
		 "NBD forwarding nbd0 (%.200s)", nbd->media->desc);
	disk->queue = nbd->queue;
	set_capacity(disk, nbd->media->size >> SECTOR_SHIFT);
	disk->read_only = nbd->media->read_only;
	if (nbd->media->caps & MEDIA_CAN_MULTI_CONN)
		disk->features |= DISK_MULTI_CONN;
	if (nbd->media->caps & MEDIA_CAN_FAST_ZERO)
		disk->features |= DISK_FAST_ZERO;
	disk->fops = &nbd_fops;
	disk->private_data = nbd;
	dev->private_data = nbd;
	if (mq_device_add_disk(dev, disk)) {
		mq_err_set(e, "cannot add disk nbd0");
		goto fail;
	}
	return 0;

fail:
	dev->private_data = NULL;
	nbd_dev_free(nbd);
	return -1;
}

static void nbd_remove(struct mq_device *dev)
{
	nbd_dev_free(dev->private_data);
	dev->private_data = NULL;
}

static int nbd_sync(struct mq_device *dev)
{
	struct nbd_dev *nbd = dev->private_data;

	if (nbd->media->read_only || !(nbd->media->caps & MEDIA_CAN_FLUSH))
		return 0;
	return media_flush(nbd->media);
}

static const struct mq_param_spec nbd_params[] = {
	{"nbd", NULL,
	 "URI of the NBD server to forward to (nbd://, nbd+unix://, ...); "
	 "or media=STORE"},
	{"size", NULL, "bytes to export; default: the remote's size"},
	{"bs", "512", "logical block size, 512 to 4096, a power of two"},
	{"nr_hw_queues", "1", "hardware queues, 1 to 64"},
	{"queue_depth", "128", "tags per hardware queue, 1 to 1024"},
	{"readonly", "0", "export read-only (read_only= is taken too)"},
	{"nbd_connections", "1",
	 "connections to the remote, 1 to 16; more than 1 needs multi-conn"},
	{"retry", "0",
	 "seconds between reconnections when the remote goes away; 0: "
	 "fail I/O with EIO instead"},
	{NULL},
};

const struct mq_driver nbd_driver = {
	.name = "nbd",
	.description = "NBD forwarding to another server (loop-like, no "
		       "elevator)",
	.params = nbd_params,
	.probe = nbd_probe,
	.remove = nbd_remove,
	.sync = nbd_sync,
};
