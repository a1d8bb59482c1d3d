// SPDX-License-Identifier: GPL-2.0
/*
 * ram: a sparse RAM disk, in the manner of drivers/block/brd.c.  It is
 * bio-style: one hw queue per software queue so submitters never contend,
 * no elevator by default, and every request is served inline in queue_rq.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "device.h"
#include "common/sparse.h"

struct ram_dev {
	struct mq_tag_set tag_set;
	struct mq_queue *queue;
	struct gendisk disk;
	struct sparse_store *store;
};

static int ram_do_bio(struct sparse_store *store, struct bio *bio)
{
	uint64_t pos = bio->bi_sector << SECTOR_SHIFT;

	switch (bio->bi_op) {
	case REQ_OP_READ:
		sparse_store_read(store, bio->bi_buf, bio->bi_size, pos);
		return 0;
	case REQ_OP_WRITE:
		return sparse_store_write(store, bio->bi_buf, bio->bi_size,
					  pos);
	case REQ_OP_DISCARD:
	case REQ_OP_WRITE_ZEROES:
		/* Freeing is zeroing here, so NOUNMAP changes nothing. */
		sparse_store_zero(store, bio->bi_size, pos);
		return 0;
	case REQ_OP_FLUSH:
		return 0;
	default:
		return EOPNOTSUPP;
	}
}

static enum mq_qrc ram_queue_rq(struct mq_hw_ctx *hctx,
				const struct mq_queue_data *bd)
{
	struct request *rq = bd->rq;
	struct ram_dev *ram = rq->q->queuedata;
	struct bio *bio;
	int status = 0;

	mq_start_request(rq);
	rq_for_each_bio (bio, rq) {
		status = ram_do_bio(ram->store, bio);
		if (status)
			break;
	}
	mq_end_request(rq, status);
	return MQ_QRC_OK;
}

/*
 * A plug's batch: the reads' data is asked for first, all of it, since a
 * random read of a large disk misses the cache and waiting for each miss
 * in turn is most of what a 4 KiB read costs here.
 */
static void ram_queue_rqs(struct mq_hw_ctx *hctx, struct rq_list *list)
{
	struct ram_dev *ram = hctx->queue->queuedata;
	uint64_t offsets[MQ_PLUG_MAX];
	struct mq_queue_data bd;
	struct request *rq;
	unsigned int n = 0;

	TAILQ_FOREACH (rq, list, queuelist) {
		if (req_op(rq) != REQ_OP_READ)
			continue;
		offsets[n++] = blk_rq_pos(rq) << SECTOR_SHIFT;
		if (n == MQ_PLUG_MAX) {
			sparse_store_prefetch(ram->store, offsets, n);
			n = 0;
		}
	}
	if (n)
		sparse_store_prefetch(ram->store, offsets, n);
	while ((bd.rq = TAILQ_FIRST(list))) {
		TAILQ_REMOVE(list, bd.rq, queuelist);
		bd.last = TAILQ_EMPTY(list);
		ram_queue_rq(hctx, &bd);
	}
}

static const struct mq_ops ram_mq_ops = {
	.queue_rq = ram_queue_rq,
	.queue_rqs = ram_queue_rqs,
};

static int ram_extents(struct gendisk *disk, uint64_t offset, uint64_t length,
		       extent_fn *fn, void *arg)
{
	struct ram_dev *ram = disk->private_data;

	return sparse_store_extents(ram->store, offset, length, fn, arg);
}

static const struct block_device_operations ram_fops = {
	.extents = ram_extents,
};

static void ram_free(struct ram_dev *ram)
{
	if (ram->queue)
		mq_cleanup_queue(ram->queue);
	if (ram->tag_set.tags)
		mq_free_tag_set(&ram->tag_set);
	sparse_store_free(ram->store);
	free(ram);
}

static int ram_probe(struct mq_device *dev, struct mq_params *p,
		     struct mq_err *e)
{
	struct ram_dev *ram;
	struct queue_limits *lim;
	uint64_t size;
	unsigned int bs;
	int err;

	if (mq_param_size(p, "size", UINT64_C(1) << 30, &size, e) ||
	    mq_param_uint(p, "bs", 512, 512, 4096, &bs, e))
		return -1;
	if (bs & (bs - 1))
		return mq_err_set(
			e, "bs=%u: must be a power of two from 512 to 4096",
			bs);
	if (!size || size % bs)
		return mq_err_set(
			e, "size=%llu: must be a non-zero multiple of bs=%u",
			(unsigned long long)size, bs);

	ram = calloc(1, sizeof(*ram));
	if (!ram)
		return mq_err_set(e, "out of memory");
	ram->store = sparse_store_new(size);
	if (!ram->store) {
		free(ram);
		return mq_err_set(e, "out of memory");
	}

	ram->tag_set.ops = &ram_mq_ops;
	ram->tag_set.nr_hw_queues = dev->nr_ctx;
	ram->tag_set.queue_depth = 128;
	ram->tag_set.cmd_size = 0;
	ram->tag_set.timeout_ms = dev->io_timeout_ms;
	ram->tag_set.flags = MQ_F_NO_SCHED_BY_DEFAULT;
	ram->tag_set.driver_data = ram;
	err = mq_alloc_tag_set(&ram->tag_set);
	if (err) {
		ram->tag_set.tags = NULL;
		ram_free(ram);
		return mq_err_set(e, "cannot allocate the tag set");
	}

	ram->queue = mq_init_queue(&ram->tag_set, dev->nr_ctx, "ram0");
	if (!ram->queue) {
		ram_free(ram);
		return mq_err_set(e, "cannot create the queue");
	}
	ram->queue->queuedata = ram;
	lim = &ram->queue->limits;
	lim->logical_block_size = bs;
	lim->physical_block_size = bs;
	lim->max_sectors = 65536; /* 32 MiB: nbdkit's largest request */
	lim->max_segments = 128;
	lim->max_discard_sectors = UINT32_MAX >> SECTOR_SHIFT;
	lim->max_write_zeroes_sectors = UINT32_MAX >> SECTOR_SHIFT;
	lim->discard_granularity = bs;
	lim->write_cache = false; /* nothing volatile: FLUSH never comes */
	lim->fua = false;
	lim->rotational = false;

	snprintf(ram->disk.disk_name, sizeof(ram->disk.disk_name), "ram0");
	snprintf(ram->disk.description, sizeof(ram->disk.description),
		 "RAM disk ram0");
	ram->disk.queue = ram->queue;
	set_capacity(&ram->disk, size >> SECTOR_SHIFT);
	ram->disk.features = DISK_FAST_ZERO | DISK_MULTI_CONN;
	ram->disk.fops = &ram_fops;
	ram->disk.private_data = ram;

	dev->private_data = ram;
	if (mq_device_add_disk(dev, &ram->disk)) {
		ram_free(ram);
		return mq_err_set(e, "cannot add disk ram0");
	}
	return 0;
}

static void ram_remove(struct mq_device *dev)
{
	ram_free(dev->private_data);
	dev->private_data = NULL;
}

static const struct mq_param_spec ram_params[] = {
	{"size", "1G", "size in bytes (K, M, G, T, P, E suffixes)"},
	{"bs", "512", "logical block size, 512 to 4096, a power of two"},
	{NULL},
};

const struct mq_driver ram_driver = {
	.name = "ram",
	.description = "sparse RAM disk (brd-like, bio-style, no elevator)",
	.params = ram_params,
	.probe = ram_probe,
	.remove = ram_remove,
	.no_media = "ram is the RAM store itself; device=file media=STORE "
		    "serves any other store",
};
