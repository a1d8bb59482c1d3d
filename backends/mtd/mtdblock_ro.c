// SPDX-License-Identifier: GPL-2.0
/*
 * Simple read-only (writable only for RAM) mtdblock driver, as
 * drivers/mtd/mtdblock_ro.c: no cache, every sector straight from the
 * flash, and the disk is read-only.
 */
#include "blktrans.h"

static int mtdblock_readsect(struct mtd_blktrans_dev *dev, unsigned long block,
			     char *buf)
{
	size_t retlen;
	int err;

	err = mtd_read(dev->mtd, (uint64_t)block * 512, 512, &retlen, buf);
	if (err && !mtd_is_bitflip(err))
		return 1;
	return 0;
}

static int mtdblock_ro_open(struct mtd_blktrans_dev *dev)
{
	dev->size = dev->mtd->size >> 9;
	return 0;
}

const struct mtd_blktrans_ops mtdblock_ro_tr = {
	.name = "mtdblock",
	.blksize = 512,
	.blkshift = 9,
	.open = mtdblock_ro_open,
	.readsect = mtdblock_readsect,
};
