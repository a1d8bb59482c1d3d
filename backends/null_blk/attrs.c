// SPDX-License-Identifier: GPL-2.0
/*
 * What null_blk shows the control plane: its fault counters under
 * device/, and its timeout and requeue faults under fault/.  Linux sets
 * these through configfs and debugfs; writing a fault node here re-arms
 * it with the same "interval,probability,space,times" string the key
 * takes.
 */
#include <errno.h>
#include <stdio.h>

#include "null_blk.h"
#include "../../server/mq/log.h"

static int show_ulong(char *buf, size_t len, unsigned long v)
{
	int n = snprintf(buf, len, "%lu", v);

	return n < 0 || (size_t)n >= len ? -ENOSPC : n;
}

static int null_timeouts_show(struct gendisk *disk, char *buf, size_t len)
{
	struct nullb *nullb = disk->private_data;

	return show_ulong(buf, len, atomic_load(&nullb->stats.timeouts));
}

static int null_requeues_show(struct gendisk *disk, char *buf, size_t len)
{
	struct nullb *nullb = disk->private_data;

	return show_ulong(buf, len, atomic_load(&nullb->stats.requeues));
}

static int null_requeue_resource_show(struct gendisk *disk, char *buf,
				      size_t len)
{
	struct nullb *nullb = disk->private_data;

	return show_ulong(buf, len,
			  atomic_load(&nullb->stats.requeue_resource));
}

static int null_throttled_show(struct gendisk *disk, char *buf, size_t len)
{
	struct nullb *nullb = disk->private_data;

	return show_ulong(buf, len, atomic_load(&nullb->stats.throttled));
}

static int null_memory_backed_show(struct gendisk *disk, char *buf, size_t len)
{
	struct nullb *nullb = disk->private_data;

	return show_ulong(buf, len, nullb->dev.memory_backed);
}

const struct disk_attr null_disk_attrs[] = {
	{"timeouts", null_timeouts_show},
	{"requeues", null_requeues_show}, /* requeue fault hits, both paths */
	{"requeue_resource", null_requeue_resource_show}, /* of them RESOURCE */
	{"throttled", null_throttled_show},
	{"memory_backed", null_memory_backed_show},
	{NULL},
};

static int null_rearm(struct gendisk *disk, struct fault_attr *attr,
		      const char *what, const char *value, struct mq_err *e)
{
	if (fault_attr_parse(attr, value, e))
		return EINVAL;
	pr_info("%s: %s fault armed: %s", disk->disk_name, what, value);
	return 0;
}

static int null_fire_timeout(struct gendisk *disk, const char *value,
			     struct mq_err *e)
{
	struct nullb *nullb = disk->private_data;

	return null_rearm(disk, &nullb->dev.timeout_config, "timeout", value,
			  e);
}

static int null_fire_requeue(struct gendisk *disk, const char *value,
			     struct mq_err *e)
{
	struct nullb *nullb = disk->private_data;

	return null_rearm(disk, &nullb->dev.requeue_config, "requeue", value,
			  e);
}

/* null_blk's configfs zone_readonly and zone_offline, by zone number. */
static int null_fire_zone_cond(struct gendisk *disk, const char *value,
			       enum blk_zone_cond cond, struct mq_err *e)
{
	struct nullb *nullb = disk->private_data;

	if (!nullb->dev.zoned) {
		mq_err_set(e, "%s is not zoned (zoned=1)", disk->disk_name);
		return EINVAL;
	}
	return zoned_fire_cond(&nullb->dev.zd, value, cond, e);
}

static int null_fire_zone_readonly(struct gendisk *disk, const char *value,
				   struct mq_err *e)
{
	return null_fire_zone_cond(disk, value, BLK_ZONE_COND_READONLY, e);
}

static int null_fire_zone_offline(struct gendisk *disk, const char *value,
				  struct mq_err *e)
{
	return null_fire_zone_cond(disk, value, BLK_ZONE_COND_OFFLINE, e);
}

const struct disk_fault null_disk_faults[] = {
	{"timeout", "interval,probability,space,times: drop requests",
	 null_fire_timeout},
	{"requeue", "interval,probability,space,times: requeue requests",
	 null_fire_requeue},
	{"zone_readonly", "N: zone N read-only (again: empty), zoned=1",
	 null_fire_zone_readonly},
	{"zone_offline", "N: zone N offline (again: empty), zoned=1",
	 null_fire_zone_offline},
	{NULL},
};
