// SPDX-License-Identifier: GPL-2.0
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tdevice.h"

int tdevice_vcreate(struct mq_device **devp, struct mq_err *e,
		    const char *device, va_list ap)
{
	struct mq_params *p = mq_params_new();
	const char *kv;
	int ret;

	ck_assert_ptr_nonnull(p);
	if (device)
		ck_assert_int_eq(mq_params_set(p, "device", device, e), 0);
	ck_assert_int_eq(mq_params_set_kv(p, "time_scale=0", e), 0);
	while ((kv = va_arg(ap, const char *)))
		ck_assert_int_eq(mq_params_set_kv(p, kv, e), 0);
	ret = mq_device_create(p, 4, devp, e);
	mq_params_free(p);
	return ret;
}

int tdevice_create(struct mq_device **devp, struct mq_err *e,
		   const char *device, ...)
{
	va_list ap;
	int ret;

	va_start(ap, device);
	ret = tdevice_vcreate(devp, e, device, ap);
	va_end(ap);
	return ret;
}

struct gendisk *tdevice_disk0(struct mq_device *d)
{
	ck_assert_uint_eq(d->nr_disks, 1);
	return d->disks[0];
}

const char *tdisk_attr(struct gendisk *disk, const char *name, char *buf,
		       size_t len)
{
	const struct disk_attr *a;

	for (a = disk->attrs; a && a->name; a++) {
		if (strcmp(a->name, name))
			continue;
		ck_assert_int_ge(a->show(disk, buf, len), 0);
		return buf;
	}
	ck_abort_msg("no attribute %s", name);
	return NULL;
}

const char *tdevice_attr(struct mq_device *d, const char *name, char *buf,
			 size_t len)
{
	return tdisk_attr(tdevice_disk0(d), name, buf, len);
}

unsigned long tdevice_counter(struct mq_device *d, const char *name)
{
	char buf[128];

	return strtoul(tdevice_attr(d, name, buf, sizeof(buf)), NULL, 10);
}

int tdevice_copy_zone(const struct blk_zone *z, unsigned int idx, void *data)
{
	(void)idx;
	*(struct blk_zone *)data = *z;
	return 0;
}

struct blk_zone tdevice_zone(struct mq_device *d, unsigned int idx)
{
	struct gendisk *disk = tdevice_disk0(d);
	struct blk_zone z;

	ck_assert_int_eq(
		disk->fops->report_zones(disk, idx, 1, tdevice_copy_zone, &z),
		1);
	return z;
}
