/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Block translation layers over MTD partitions, as include/linux/mtd/
 * blktrans.h after seed 010: a layer (mtdblock, ftl) fills a
 * mtd_blktrans_ops; mtd_blkdevs.c gives each partition a tag set of depth
 * 2, SHOULD_MERGE | BLOCKING, one hw queue, whose queue_rq puts requests
 * on an internal list and pulls them one segment at a time.
 */
#ifndef MQBLK_MTD_BLKTRANS_H
#define MQBLK_MTD_BLKTRANS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "mtd.h"

struct mtd_blktrans_dev;
struct mtd_host;

struct mtd_blktrans_ops {
	const char *name; /* disks are NAME0, NAME1, ... */
	int blksize;
	int blkshift;

	/* Access functions; called with dev->lock held. 0 or -errno. */
	int (*readsect)(struct mtd_blktrans_dev *dev, unsigned long block,
			char *buffer);
	int (*writesect)(struct mtd_blktrans_dev *dev, unsigned long block,
			 char *buffer);
	int (*flush)(struct mtd_blktrans_dev *dev);
	/* Once per idle period, with dev->lock held. */
	void (*background)(struct mtd_blktrans_dev *dev);

	/* Open at probe, release at remove; open sets dev->size. */
	int (*open)(struct mtd_blktrans_dev *dev);
	void (*release)(struct mtd_blktrans_dev *dev);
	/*
	 * Ours: power came back after a cut.  What the layer held in RAM is
	 * gone; rebuild from the flash.  With dev->lock held.
	 */
	int (*poweron)(struct mtd_blktrans_dev *dev);

	/* device/ attributes of the layer's own, may be NULL */
	const struct disk_attr *attrs;
};

struct mtd_blktrans_dev {
	const struct mtd_blktrans_ops *tr;
	struct mtd_info *mtd;
	struct mtd_host *host;
	pthread_mutex_t lock; /* the translation's state */
	int devnum;
	uint64_t size; /* in blksize units, set by open */
	bool readonly;
	struct gendisk disk;
	struct mq_queue *rq;
	struct mq_tag_set *tag_set;
	struct rq_list rq_list;
	pthread_mutex_t queue_lock;
	bool bg_stop;
	void *priv;

	/* For write_amplification: what clients wrote, what hit the flash */
	atomic_uint_least64_t host_bytes;
	atomic_uint_least64_t flash_bytes;
	atomic_uint_least64_t background_runs;
};

/* A layer's readsect/writesect note the flash bytes they program here. */
static inline void mtd_blktrans_programmed(struct mtd_blktrans_dev *dev,
					   uint64_t bytes)
{
	atomic_fetch_add(&dev->flash_bytes, bytes);
}

int mtd_blktrans_cease_background(struct mtd_blktrans_dev *dev);

/* Probe: the chip from the keys, one disk per partition with layer tr. */
int mtd_blktrans_probe(struct mq_device *mdev, struct mq_params *p,
		       struct mq_err *e, const struct mtd_blktrans_ops *tr,
		       bool readonly);
void mtd_blktrans_remove(struct mq_device *mdev);
int mtd_blktrans_sync(struct mq_device *mdev);

extern const struct mtd_blktrans_ops mtdblock_tr;
extern const struct mtd_blktrans_ops ftl_tr;

#endif
