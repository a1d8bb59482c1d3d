// SPDX-License-Identifier: GPL-2.0
/*
 * The flash drivers the registry lists: a raw chip (mtd.h) split into
 * partitions, each exported through one translation layer.
 */
#include "blktrans.h"

extern const struct mtd_blktrans_ops mtdblock_ro_tr;

static int mtdblock_probe(struct mq_device *dev, struct mq_params *p,
			  struct mq_err *e)
{
	return mtd_blktrans_probe(dev, p, e, &mtdblock_tr, false);
}

static int mtdblock_ro_probe(struct mq_device *dev, struct mq_params *p,
			     struct mq_err *e)
{
	return mtd_blktrans_probe(dev, p, e, &mtdblock_ro_tr, true);
}

const struct mq_driver mtdblock_driver = {
	.name = "mtdblock",
	.description = "flash chip (nandsim) through Linux mtdblock: one "
		       "erase-block cache; exports mtdblock0...; depth 2, "
		       "blocking",
	.params = mtd_chip_param_specs,
	.probe = mtdblock_probe,
	.remove = mtd_blktrans_remove,
	.sync = mtd_blktrans_sync,
	.no_media = MTD_NO_MEDIA,
};

const struct mq_driver mtdblock_ro_driver = {
	.name = "mtdblock_ro",
	.description = "flash chip through Linux mtdblock_ro: read-only, "
		       "no cache; exports mtdblock0...",
	.params = mtd_chip_param_specs,
	.probe = mtdblock_ro_probe,
	.remove = mtd_blktrans_remove,
	.sync = mtd_blktrans_sync,
	.no_media = MTD_NO_MEDIA,
};
