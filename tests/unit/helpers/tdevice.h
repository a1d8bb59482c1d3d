/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Devices through the device layer, as the front ends make them, with
 * time off (time_scale=0, which a later string may override) and 4
 * software queues.
 */
#ifndef MQBLK_TEST_TDEVICE_H
#define MQBLK_TEST_TDEVICE_H

#include <stdarg.h>

#include "backends/device.h"

/*
 * Make device (NULL: a "device=" string names it) from "key=value"
 * strings ending with NULL.  0, or -1 with e set by the device layer.
 */
int tdevice_create(struct mq_device **devp, struct mq_err *e,
		   const char *device, ...);
int tdevice_vcreate(struct mq_device **devp, struct mq_err *e,
		    const char *device, va_list ap);

/* The device's only disk. */
struct gendisk *tdevice_disk0(struct mq_device *d);

/*
 * An attribute of disk (EXPORT/device/NAME), shown into buf; the test
 * fails if the disk has none of that name.
 */
const char *tdisk_attr(struct gendisk *disk, const char *name, char *buf,
		       size_t len);
/* The same for the device's only disk, and as a number. */
const char *tdevice_attr(struct mq_device *d, const char *name, char *buf,
			 size_t len);
unsigned long tdevice_counter(struct mq_device *d, const char *name);

/* A report_zones callback: copies each zone to *(struct blk_zone *)data. */
int tdevice_copy_zone(const struct blk_zone *z, unsigned int idx, void *data);
/* Zone idx of the device's only disk, through its report_zones. */
struct blk_zone tdevice_zone(struct mq_device *d, unsigned int idx);

#endif
