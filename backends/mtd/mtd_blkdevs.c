// SPDX-License-Identifier: GPL-2.0
/*
 * Interface to Linux block layer for MTD 'translation layers', as
 * drivers/mtd/mtd_blkdevs.c is after seed 010 converted it to blk-mq.
 *
 * Each partition's disk has its own tag set: one hw queue, depth 2,
 * SHOULD_MERGE | BLOCKING.  mtd_queue_rq puts the request on dev->rq_list
 * and runs mtd_blktrans_work, which pulls requests off the list and moves
 * them one segment (bio) at a time under dev->lock.  As the merged kernel
 * does (seed 010 had it the other way round), a finished request is ended
 * before the pointer to it is cleared.  When the list runs dry the layer's
 * background hook runs, once per idle period.
 *
 * The chip and its partitions belong to an mtd_host, which also carries
 * the faults that touch them all (powercut, poweron) and the attributes.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blktrans.h"
#include "../../server/mq/log.h"

#define MTD_MAX_PARTS 16

struct mtd_host {
	struct mq_device *mdev;
	struct mtd_chip *chip;
	struct mtd_info parts[MTD_MAX_PARTS];
	struct mtd_blktrans_dev *devs[MTD_MAX_PARTS];
	int nr;
};

int mtd_blktrans_cease_background(struct mtd_blktrans_dev *dev)
{
	return dev->bg_stop;
}

/* ------------------------------------------------------------------ */
/* the request path                                                    */

static uint32_t blk_rq_cur_bytes(const struct request *req)
{
	return req->bio ? req->bio->bi_size : 0;
}

static int do_blktrans_request(const struct mtd_blktrans_ops *tr,
			       struct mtd_blktrans_dev *dev,
			       struct request *req)
{
	unsigned long block, nsect;
	char *buf;

	block = blk_rq_pos(req) << 9 >> tr->blkshift;
	nsect = blk_rq_cur_bytes(req) >> tr->blkshift;

	/* Ours: with the power gone, the export answers EIO. */
	if (!mtd_chip_powered(dev->mtd->chip))
		return EIO;

	if (req_op(req) != REQ_OP_FLUSH &&
	    (!req->bio ||
	     blk_rq_pos(req) + (blk_rq_cur_bytes(req) >> SECTOR_SHIFT) >
		     get_capacity(&dev->disk)))
		return EIO;

	switch (req_op(req)) {
	case REQ_OP_FLUSH:
		if (tr->flush(dev))
			return EIO;
		return 0;
	case REQ_OP_READ:
		buf = req->bio->bi_buf;
		for (; nsect > 0; nsect--, block++, buf += tr->blksize)
			if (tr->readsect(dev, block, buf))
				return EIO;
		return 0;
	case REQ_OP_WRITE:
		if (!tr->writesect || dev->readonly)
			return EIO;
		buf = req->bio->bi_buf;
		atomic_fetch_add(&dev->host_bytes, blk_rq_cur_bytes(req));
		for (; nsect > 0; nsect--, block++, buf += tr->blksize)
			if (tr->writesect(dev, block, buf))
				return EIO;
		return 0;
	default:
		return EIO;
	}
}

static struct request *mtd_next_request(struct mtd_blktrans_dev *dev)
{
	struct request *rq = TAILQ_FIRST(&dev->rq_list);

	if (rq) {
		TAILQ_REMOVE(&dev->rq_list, rq, queuelist);
		mq_start_request(rq);
		return rq;
	}
	return NULL;
}

/* Called and returns with dev->queue_lock held. */
static void mtd_blktrans_work(struct mtd_blktrans_dev *dev)
{
	const struct mtd_blktrans_ops *tr = dev->tr;
	struct request *req = NULL;
	int background_done = 0;

	while (1) {
		uint32_t cur;
		int res;

		dev->bg_stop = false;
		if (!req && !(req = mtd_next_request(dev))) {
			if (tr->background && !background_done) {
				pthread_mutex_unlock(&dev->queue_lock);
				pthread_mutex_lock(&dev->lock);
				tr->background(dev);
				atomic_fetch_add(&dev->background_runs, 1);
				pthread_mutex_unlock(&dev->lock);
				pthread_mutex_lock(&dev->queue_lock);
				/*
				 * Do background processing just once per idle
				 * period.
				 */
				background_done = !dev->bg_stop;
				continue;
			}
			break;
		}

		pthread_mutex_unlock(&dev->queue_lock);

		pthread_mutex_lock(&dev->lock);
		res = do_blktrans_request(dev->tr, dev, req);
		pthread_mutex_unlock(&dev->lock);

		/*
		 * End it, then forget it (the merged kernel's order).  A
		 * FLUSH has no bytes: nothing to update, it ends at once.
		 */
		cur = blk_rq_cur_bytes(req);
		if (!cur || !mq_update_request(req, res, cur)) {
			__mq_end_request(req, res);
			req = NULL;
		}

		background_done = 0;
		pthread_mutex_lock(&dev->queue_lock);
	}
}

static enum mq_qrc mtd_queue_rq(struct mq_hw_ctx *hctx,
				const struct mq_queue_data *bd)
{
	struct mtd_blktrans_dev *dev = hctx->queue->queuedata;

	if (!dev) {
		mq_start_request(bd->rq);
		return MQ_QRC_IOERR;
	}

	pthread_mutex_lock(&dev->queue_lock);
	TAILQ_INSERT_TAIL(&dev->rq_list, bd->rq, queuelist);
	mtd_blktrans_work(dev);
	pthread_mutex_unlock(&dev->queue_lock);

	return MQ_QRC_OK;
}

static const struct mq_ops mtd_mq_ops = {
	.queue_rq = mtd_queue_rq,
};

/* ------------------------------------------------------------------ */
/* faults                                                              */

static int mtd_fault_powercut(struct gendisk *disk, const char *value,
			      struct mq_err *e)
{
	struct mtd_blktrans_dev *dev = disk->private_data;

	mtd_chip_powercut(dev->mtd->chip);
	pr_warn("%s: power cut: the chip is off, every export of it answers "
		"EIO until fault/poweron",
		disk->disk_name);
	return 0;
}

static int mtd_fault_powercut_after(struct gendisk *disk, const char *value,
				    struct mq_err *e)
{
	struct mtd_blktrans_dev *dev = disk->private_data;
	int64_t n;

	if (mq_attr_number(value, 0, UINT32_MAX, &n)) {
		mq_err_set(e, "takes a count 1..%" PRIu32 ", or 0 to disarm",
			   UINT32_MAX);
		return EINVAL;
	}
	/* 0 disarms, as the powercut_after key's 0 means no cut. */
	mtd_chip_powercut_after(dev->mtd->chip, (uint32_t)n);
	if (!n)
		pr_info("%s: no power cut armed", disk->disk_name);
	else
		pr_warn("%s: power will be cut during program or erase number "
			"%" PRId64 " from now",
			disk->disk_name, n);
	return 0;
}

/*
 * Power comes back: the chip is reloaded (from image= if there is one),
 * and every layer on it drops what it held in RAM and recovers from the
 * flash, as it would after a reboot.
 */
static int mtd_fault_poweron(struct gendisk *disk, const char *value,
			     struct mq_err *e)
{
	struct mtd_blktrans_dev *dev = disk->private_data;
	struct mtd_host *host = dev->host;
	int i, ret, err = 0;

	for (i = 0; i < host->nr; i++)
		pthread_mutex_lock(&host->devs[i]->lock);
	ret = mtd_chip_poweron(host->chip);
	for (i = 0; i < host->nr && !ret; i++) {
		struct mtd_blktrans_dev *d = host->devs[i];

		if (d->tr->poweron && d->tr->poweron(d)) {
			pr_err("%s: recovery after power-on failed",
			       d->disk.disk_name);
			mq_err_set(e, "%s: recovery after power-on failed",
				   d->disk.disk_name);
			err = EIO;
		}
	}
	for (i = host->nr - 1; i >= 0; i--)
		pthread_mutex_unlock(&host->devs[i]->lock);
	if (ret) {
		mq_err_set(e, "the chip could not be reloaded");
		return EIO;
	}
	pr_info("%s: power on: chip reloaded, layers recovered",
		disk->disk_name);
	return err;
}

static int mtd_fault_badblock(struct gendisk *disk, const char *value,
			      struct mq_err *e)
{
	struct mtd_blktrans_dev *dev = disk->private_data;
	int64_t last = (int64_t)(dev->mtd->size / dev->mtd->erasesize) - 1;
	int64_t n;

	if (mq_attr_number(value, 0, last, &n)) {
		mq_err_set(e, "takes an eraseblock number 0..%" PRId64, last);
		return EINVAL;
	}
	mtd_block_markbad(dev->mtd, (uint64_t)n * dev->mtd->erasesize);
	return 0;
}

static const struct disk_fault mtd_faults[] = {
	{"powercut", "lose power now: an operation in progress is torn",
	 mtd_fault_powercut},
	{"powercut_after",
	 "N: lose power during the Nth program or erase from now; 0: not",
	 mtd_fault_powercut_after},
	{"poweron", "power back: reload the chip and recover",
	 mtd_fault_poweron},
	{"badblock", "N: mark erase block N of this partition bad now",
	 mtd_fault_badblock},
	{NULL},
};

/* ------------------------------------------------------------------ */
/* attributes common to every layer                                    */

static void dev_stats(struct mtd_blktrans_dev *dev, struct mtd_chip_stats *st)
{
	uint32_t first = (uint32_t)(dev->mtd->offset / dev->mtd->erasesize);

	mtd_chip_get_stats(dev->mtd->chip, first,
			   (uint32_t)(dev->mtd->size / dev->mtd->erasesize),
			   st);
}

static int mtd_show_erase_counts(struct gendisk *disk, char *buf, size_t len)
{
	struct mtd_chip_stats st;

	dev_stats(disk->private_data, &st);
	return snprintf(buf, len, "min %u mean %.2f max %u stddev %.2f",
			st.min_erase, st.mean_erase, st.max_erase,
			st.stddev_erase);
}

static int mtd_show_bad_blocks(struct gendisk *disk, char *buf, size_t len)
{
	struct mtd_blktrans_dev *dev = disk->private_data;
	char list[256];
	struct mtd_chip_stats st;

	dev_stats(dev, &st);
	mtd_chip_bad_list(dev->mtd->chip,
			  (uint32_t)(dev->mtd->offset / dev->mtd->erasesize),
			  (uint32_t)(dev->mtd->size / dev->mtd->erasesize),
			  list, sizeof(list));
	return snprintf(buf, len, "%u%s%s", st.bad_blocks, *list ? ": " : "",
			list);
}

static int mtd_show_write_amplification(struct gendisk *disk, char *buf,
					size_t len)
{
	struct mtd_blktrans_dev *dev = disk->private_data;
	uint64_t host = atomic_load(&dev->host_bytes);
	uint64_t flash = atomic_load(&dev->flash_bytes);

	if (!host)
		return snprintf(buf, len, "0");
	return snprintf(buf, len, "%.2f", (double)flash / (double)host);
}

static int mtd_show_ecc_corrected(struct gendisk *disk, char *buf, size_t len)
{
	struct mtd_chip_stats st;

	dev_stats(disk->private_data, &st);
	return snprintf(buf, len, "%" PRIu64, st.ecc_corrected);
}

static int mtd_show_ecc_failed(struct gendisk *disk, char *buf, size_t len)
{
	struct mtd_chip_stats st;

	dev_stats(disk->private_data, &st);
	return snprintf(buf, len, "%" PRIu64, st.ecc_failed);
}

static int mtd_show_power(struct gendisk *disk, char *buf, size_t len)
{
	struct mtd_blktrans_dev *dev = disk->private_data;

	return snprintf(buf, len, "%s",
			mtd_chip_powered(dev->mtd->chip) ? "on" : "off");
}

static int mtd_show_last_powercut(struct gendisk *disk, char *buf, size_t len)
{
	struct mtd_blktrans_dev *dev = disk->private_data;

	mtd_chip_last_cut(dev->mtd->chip, buf, len);
	return (int)strnlen(buf, len);
}

static int mtd_show_flash(struct gendisk *disk, char *buf, size_t len)
{
	struct mtd_blktrans_dev *dev = disk->private_data;
	struct mtd_info *mtd = dev->mtd;

	return snprintf(buf, len,
			"%s %s: %" PRIu64 " bytes at %" PRIu64
			", erasesize %u, writesize %u, oobsize %u",
			mtd->name, mtd_type_is_nand(mtd) ? "nand" : "nor",
			mtd->size, mtd->offset, mtd->erasesize, mtd->writesize,
			mtd->oobsize);
}

/* The chip's operation counts (all partitions). */
static int mtd_show_ops(struct gendisk *disk, char *buf, size_t len)
{
	struct mtd_chip_stats st;

	dev_stats(disk->private_data, &st);
	return snprintf(buf, len,
			"reads %" PRIu64 " programs %" PRIu64
			" erases %" PRIu64,
			st.reads, st.programs, st.erases);
}

/* Every block's erase count, in order; -EOVERFLOW if buf is too small. */
static int mtd_show_erase_count_list(struct gendisk *disk, char *buf,
				     size_t len)
{
	struct mtd_blktrans_dev *dev = disk->private_data;
	uint32_t first = (uint32_t)(dev->mtd->offset / dev->mtd->erasesize);
	uint32_t nr = (uint32_t)(dev->mtd->size / dev->mtd->erasesize), i;
	size_t used = 0;

	if (len)
		buf[0] = '\0';
	for (i = 0; i < nr; i++) {
		int n = snprintf(
			buf + used, len - used, "%s%u", i ? " " : "",
			mtd_chip_erase_count(dev->mtd->chip, first + i));

		if (n < 0 || (size_t)n >= len - used)
			return -EOVERFLOW;
		used += (size_t)n;
	}
	return (int)used;
}

static int mtd_show_background_runs(struct gendisk *disk, char *buf, size_t len)
{
	struct mtd_blktrans_dev *dev = disk->private_data;

	return snprintf(buf, len, "%" PRIu64,
			(uint64_t)atomic_load(&dev->background_runs));
}

#define MTD_COMMON_ATTRS                                                       \
	{"flash", mtd_show_flash}, {"erase_counts", mtd_show_erase_counts},    \
		{"bad_blocks", mtd_show_bad_blocks},                           \
		{"write_amplification", mtd_show_write_amplification},         \
		{"ecc_corrected", mtd_show_ecc_corrected},                     \
		{"ecc_failed", mtd_show_ecc_failed},                           \
		{"erase_count_list", mtd_show_erase_count_list},               \
		{"ops", mtd_show_ops}, {"power", mtd_show_power},              \
		{"last_powercut", mtd_show_last_powercut},                     \
	{                                                                      \
		"background_runs", mtd_show_background_runs                    \
	}

static const struct disk_attr mtd_common_attrs[] = {MTD_COMMON_ATTRS, {NULL}};

/* The common attributes, then the layer's, in one array per layer. */
static struct disk_attr *mtd_make_attrs(const struct mtd_blktrans_ops *tr)
{
	size_t nc = sizeof(mtd_common_attrs) / sizeof(mtd_common_attrs[0]) - 1;
	size_t nt = 0;
	struct disk_attr *a;

	while (tr->attrs && tr->attrs[nt].name)
		nt++;
	a = calloc(nc + nt + 1, sizeof(*a));
	if (!a)
		return NULL;
	memcpy(a, mtd_common_attrs, nc * sizeof(*a));
	if (nt)
		memcpy(a + nc, tr->attrs, nt * sizeof(*a));
	return a;
}

/* ------------------------------------------------------------------ */
/* add and remove                                                      */

static void del_mtd_blktrans_dev(struct mtd_blktrans_dev *old)
{
	if (old->rq) {
		/* Kill current requests */
		pthread_mutex_lock(&old->queue_lock);
		old->rq->queuedata = NULL;
		pthread_mutex_unlock(&old->queue_lock);

		/* freeze+quiesce queue to ensure all requests are flushed */
		mq_freeze_queue(old->rq);
		mq_quiesce_queue(old->rq);
		mq_unquiesce_queue(old->rq);
		mq_unfreeze_queue(old->rq);
	}

	/* The device is open: tell the translation layer to close it */
	pthread_mutex_lock(&old->lock);
	if (old->priv && old->tr->release)
		old->tr->release(old);
	pthread_mutex_unlock(&old->lock);

	if (old->rq)
		mq_cleanup_queue(old->rq);
	if (old->tag_set) {
		mq_free_tag_set(old->tag_set);
		free(old->tag_set);
	}
	free((void *)old->disk.attrs);
	pthread_mutex_destroy(&old->queue_lock);
	pthread_mutex_destroy(&old->lock);
	free(old);
}

static int add_mtd_blktrans_dev(struct mtd_host *host, struct mtd_info *mtd,
				const struct mtd_blktrans_ops *tr,
				bool readonly, struct mq_err *e)
{
	struct mtd_blktrans_dev *new = calloc(1, sizeof(*new));
	struct mq_tag_set *set;
	struct queue_limits *lim;
	int ret;

	if (!new)
		return mq_err_set(e, "out of memory");
	new->tr = tr;
	new->mtd = mtd;
	new->host = host;
	new->devnum = mtd->index;
	new->readonly = readonly;
	TAILQ_INIT(&new->rq_list);
	if (pthread_mutex_init(&new->lock, NULL) ||
	    pthread_mutex_init(&new->queue_lock, NULL)) {
		free(new);
		return mq_err_set(e, "cannot create the locks");
	}
	host->devs[host->nr++] = new;

	snprintf(new->disk.disk_name, sizeof(new->disk.disk_name), "%s%d",
		 tr->name, new->devnum);

	/* Open the translation: it sets the size (blktrans_open). */
	pthread_mutex_lock(&new->lock);
	ret = tr->open ? tr->open(new) : 0;
	pthread_mutex_unlock(&new->lock);
	if (ret)
		return mq_err_set(e, "%s: cannot open the translation: %s",
				  new->disk.disk_name, strerror(-ret));

	/* Create the request queue */
	new->tag_set = calloc(1, sizeof(*new->tag_set));
	if (!new->tag_set)
		return mq_err_set(e, "out of memory");
	set = new->tag_set;
	set->ops = &mtd_mq_ops;
	set->nr_hw_queues = 1;
	set->queue_depth = 2;
	set->flags = MQ_F_SHOULD_MERGE | MQ_F_BLOCKING;
	set->timeout_ms = host->mdev->io_timeout_ms;
	set->driver_data = new;
	ret = mq_alloc_tag_set(set);
	if (ret) {
		free(new->tag_set);
		new->tag_set = NULL;
		return mq_err_set(e, "cannot allocate the tag set: %s",
				  strerror(ret));
	}
	new->rq = mq_init_queue(set, host->mdev->nr_ctx, new->disk.disk_name);
	if (!new->rq)
		return mq_err_set(e, "cannot create the queue");
	new->rq->queuedata = new;

	lim = &new->rq->limits;
	lim->logical_block_size = tr->blksize;
	lim->physical_block_size = tr->blksize;
	lim->max_discard_sectors = 0;
	lim->max_write_zeroes_sectors = 0;
	lim->write_cache = tr->flush != NULL;
	lim->fua = false;
	lim->rotational = false;

	new->disk.queue = new->rq;
	set_capacity(&new->disk, (new->size * tr->blksize) >> 9);
	new->disk.read_only = readonly;
	new->disk.faults = mtd_faults;
	new->disk.attrs = mtd_make_attrs(tr);
	if (!new->disk.attrs)
		return mq_err_set(e, "out of memory");
	new->disk.private_data = new;
	snprintf(new->disk.description, sizeof(new->disk.description),
		 "%s on %s %s%s: %" PRIu64 " bytes of %" PRIu64
		 ", erasesize %u, writesize %u%s",
		 new->disk.disk_name, mtd->name,
		 mtd_type_is_nand(mtd) ? "NAND" : "NOR",
		 readonly ? " (read-only)" : "", get_capacity(&new->disk) << 9,
		 mtd->size, mtd->erasesize, mtd->writesize,
		 ", depth 2, blocking");

	if (mq_device_add_disk(host->mdev, &new->disk))
		return mq_err_set(e, "cannot add disk %s", new->disk.disk_name);
	return 0;
}

static void mtd_host_free(struct mtd_host *host)
{
	int i;

	for (i = host->nr - 1; i >= 0; i--)
		del_mtd_blktrans_dev(host->devs[i]);
	mtd_chip_destroy(host->chip);
	free(host);
}

int mtd_blktrans_probe(struct mq_device *mdev, struct mq_params *p,
		       struct mq_err *e, const struct mtd_blktrans_ops *tr,
		       bool readonly)
{
	struct mtd_chip_params cp;
	struct mtd_host *host;
	const char *parts;
	int i, n;

	if (mtd_chip_params_read(&cp, p, e) ||
	    mq_param_str(p, "parts", NULL, &parts, e))
		return -1;
	host = calloc(1, sizeof(*host));
	if (!host)
		return mq_err_set(e, "out of memory");
	host->mdev = mdev;
	host->chip = mtd_chip_create(&cp, mdev->time_scale, e);
	if (!host->chip)
		goto fail;
	n = mtd_parse_parts(host->chip, parts, host->parts, MTD_MAX_PARTS, e);
	if (n < 0)
		goto fail;
	for (i = 0; i < n; i++)
		if (add_mtd_blktrans_dev(host, &host->parts[i], tr, readonly,
					 e))
			goto fail;
	mdev->private_data = host;
	return 0;
fail:
	mtd_host_free(host);
	return -1;
}

void mtd_blktrans_remove(struct mq_device *mdev)
{
	if (!mdev->private_data)
		return;
	mtd_host_free(mdev->private_data);
	mdev->private_data = NULL;
}

int mtd_blktrans_sync(struct mq_device *mdev)
{
	struct mtd_host *host = mdev->private_data;
	int i, err = 0;

	if (!host)
		return 0;
	for (i = 0; i < host->nr; i++) {
		struct mtd_blktrans_dev *dev = host->devs[i];

		pthread_mutex_lock(&dev->lock);
		if (dev->tr->flush && !dev->readonly && dev->tr->flush(dev))
			err = EIO;
		pthread_mutex_unlock(&dev->lock);
	}
	if (mtd_chip_sync(host->chip))
		err = EIO;
	return err;
}
