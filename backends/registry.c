/* SPDX-License-Identifier: GPL-2.0 */
/* The drivers compiled in.  Written once, read by the front ends. */
#include "device.h"

extern const struct mq_driver null_blk_driver;
extern const struct mq_driver ram_driver;
extern const struct mq_driver file_driver;
extern const struct mq_driver nbd_driver;
extern const struct mq_driver rbd_driver;
extern const struct mq_driver ide_driver;
extern const struct mq_driver ide_disk_driver;
extern const struct mq_driver ide_cd_driver;
extern const struct mq_driver mspro_driver;
extern const struct mq_driver gdrom_driver;
extern const struct mq_driver mtdblock_driver;
extern const struct mq_driver mtdblock_ro_driver;
extern const struct mq_driver ftl_driver;
extern const struct mq_driver sunvdc_driver;
extern const struct mq_driver sx8_driver;
extern const struct mq_driver smr_driver;
extern const struct mq_driver scsi_driver;
extern const struct mq_driver sata_ssd_driver;

/* One driver a line. */
/* clang-format off */
const struct mq_driver *const mq_drivers[] = {
	&null_blk_driver,
	&ram_driver,
	&file_driver,
	&nbd_driver,
	&rbd_driver,
	&ide_driver,
	&ide_disk_driver,
	&ide_cd_driver,
	&mspro_driver,
	&gdrom_driver,
	&mtdblock_driver,
	&mtdblock_ro_driver,
	&ftl_driver,
	&sunvdc_driver,
	&sx8_driver,
	&smr_driver,
	&scsi_driver,
	&sata_ssd_driver,
	NULL,
};
/* clang-format on */
