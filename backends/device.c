// SPDX-License-Identifier: GPL-2.0
/*
 * Devices made from drivers: find the driver, read the keys common to all
 * of them, let the driver probe, and refuse whatever key nobody read.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bdev.h"
#include "device.h"
#include "log-writes.h"
#include "media/media.h"
#include "../scheduler/policy.h"
#include "../server/mq/log.h"

const struct mq_param_spec mq_common_params[] = {
	{"time_scale", "1",
	 "multiplies every modelled delay; 0 turns delays off"},
	{"io_timeout", "30000", "request timeout in milliseconds"},
	{"scheduler", NULL,
	 "none, mq-deadline, bfq or kyber; default: the policy in docs/design.md"},
	{"rules", NULL, "a udev-style rules file (or directory) choosing it"},
	{"iosched.*", NULL, "iosched.TUNABLE=VALUE sets a scheduler tunable"},
	{"media", NULL,
	 "where the bytes live: ram, file:PATH, nbd:URI or rbd:POOL/IMAGE; "
	 "default: the model's own (see docs/devices.md)"},
	{"log_writes", NULL,
	 "PATH: log every write as it reaches the platter, in dm-log-writes' "
	 "format (PATH.DISK for each disk of a device with several); "
	 "replay with mqblk-replay-log"},
	{NULL},
};

const struct mq_driver *mq_driver_find(const char *name)
{
	const struct mq_driver *const *d;

	for (d = mq_drivers; *d; d++)
		if (strcmp((*d)->name, name) == 0)
			return *d;
	return NULL;
}

/* Append ", " (unless first) and s to buf, truncating safely. */
static void append(char *buf, size_t len, const char *s)
{
	size_t used = strnlen(buf, len);

	if (used + 1 >= len)
		return;
	snprintf(buf + used, len - used, "%s%s", used ? ", " : "", s);
}

void mq_driver_names(char *buf, size_t len)
{
	const struct mq_driver *const *d;

	if (!len)
		return;
	buf[0] = '\0';
	for (d = mq_drivers; *d; d++)
		append(buf, len, (*d)->name);
}

static bool driver_takes(const struct mq_driver *drv, const char *key)
{
	const struct mq_param_spec *s;

	for (s = drv->params; s && s->key; s++)
		if (strcmp(s->key, key) == 0)
			return true;
	return false;
}

/* "size, time_scale, io_timeout, bs, ...": size first when taken. */
static void accepted_keys(const struct mq_driver *drv, char *buf, size_t len)
{
	const struct mq_param_spec *s;
	size_t i;

	buf[0] = '\0';
	if (driver_takes(drv, "size"))
		append(buf, len, "size");
	for (i = 0; mq_common_params[i].key; i++)
		if (!drv->no_media ||
		    strcmp(mq_common_params[i].key, "media") != 0)
			append(buf, len, mq_common_params[i].key);
	for (s = drv->params; s && s->key; s++)
		if (strcmp(s->key, "size") != 0)
			append(buf, len, s->key);
}

/* Prefix the driver's name to e, unless it is there already. */
static void prefix_err(struct mq_err *e, const char *name)
{
	char tmp[sizeof(e->msg)];
	size_t n = strlen(name);

	if (!e || (strncmp(e->msg, name, n) == 0 && e->msg[n] == ':'))
		return;
	/* A message too long for the prefix loses its tail, not its head. */
	if (snprintf(tmp, sizeof(tmp), "%s: %s", name, e->msg) < 0)
		return;
	memcpy(e->msg, tmp, sizeof(tmp));
}

/*
 * log_writes=PATH: a log for each disk (PATH.DISK when there are
 * several), owned by the disk's range tracker, which every front end's
 * I/O goes through.
 */
static int open_logs(struct mq_device *dev, const char *path, struct mq_err *e)
{
	unsigned int i;

	for (i = 0; path && i < dev->nr_disks; i++) {
		struct gendisk *disk = dev->disks[i];
		struct log_writes *l;
		char name[4200];

		if ((size_t)snprintf(name, sizeof(name), "%s%s%s", path,
				     dev->nr_disks > 1 ? "." : "",
				     dev->nr_disks > 1 ? disk->disk_name
						       : "") >= sizeof(name))
			return mq_err_set(e,
					  "log_writes=: the path is too long");
		if (log_writes_open(name,
				    disk->queue->limits.logical_block_size, &l,
				    e))
			return -1;
		mq_bdev_set_log_writes(disk->bdev, l);
	}
	return 0;
}

int mq_device_create(struct mq_params *p, unsigned int nr_ctx,
		     struct mq_device **devp, struct mq_err *e)
{
	const struct mq_driver *drv;
	struct mq_device *dev;
	const char *name, *unused, *log_path = NULL;
	char list[512];

	*devp = NULL;
	mq_param_str(p, "device", NULL, &name, e);
	if (mq_param_str(p, "log_writes", NULL, &log_path, e))
		return -1;
	if (!name) {
		mq_driver_names(list, sizeof(list));
		return mq_err_set(e, "device=NAME is required (known: %s)",
				  list);
	}
	drv = mq_driver_find(name);
	if (!drv) {
		mq_driver_names(list, sizeof(list));
		return mq_err_set(e, "unknown device '%s' (known: %s)", name,
				  list);
	}

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return mq_err_set(e, "%s: out of memory", drv->name);
	dev->driver = drv;
	dev->nr_ctx = nr_ctx ? nr_ctx : MQ_DEFAULT_NR_CTX;
	dev->probe_params = p;
	if (drv->no_media && mq_params_has(p, "media")) {
		mq_err_set(e, "%s: media= is not taken: %s", drv->name,
			   drv->no_media);
		free(dev);
		return -1;
	}
	if (mq_param_double(p, "time_scale", 1.0, 0.0, INFINITY,
			    &dev->time_scale, e) ||
	    mq_param_uint(p, "io_timeout", MQ_DEFAULT_TIMEOUT_MS, 1, 3600000,
			  &dev->io_timeout_ms, e) ||
	    drv->probe(dev, p, e)) {
		unsigned int i;

		/* The scheduler's reason, not the driver's "cannot add". */
		if (e && dev->probe_err.msg[0])
			memcpy(e->msg, dev->probe_err.msg, sizeof(e->msg));
		prefix_err(e, drv->name);
		/* The driver undid its disks; the trackers are ours. */
		for (i = 0; i < dev->nr_disks; i++)
			mq_bdev_destroy(dev->bdevs[i]);
		free(dev);
		return -1;
	}
	dev->probe_params = NULL;

	unused = mq_params_first_unused(p);
	if (unused) {
		accepted_keys(drv, list, sizeof(list));
		mq_err_set(e, "%s: unknown key '%s' (accepted: %s)", drv->name,
			   unused, list);
		mq_device_destroy(dev);
		return -1;
	}
	if (open_logs(dev, log_path, e)) {
		prefix_err(e, drv->name);
		mq_device_destroy(dev);
		return -1;
	}
	*devp = dev;
	return 0;
}

bool mq_device_params_zoned(const struct mq_params *p)
{
	const char *name = mq_params_peek(p, "device");
	const struct mq_driver *drv = name ? mq_driver_find(name) : NULL;

	return drv && drv->zoned && drv->zoned(p);
}

void mq_device_destroy(struct mq_device *dev)
{
	unsigned int i;

	if (!dev)
		return;
	if (dev->driver->remove)
		dev->driver->remove(dev);
	for (i = 0; i < dev->nr_disks; i++)
		mq_bdev_destroy(dev->bdevs[i]);
	free(dev);
}

int mq_device_sync(struct mq_device *dev)
{
	if (!dev->driver->sync)
		return 0;
	return dev->driver->sync(dev);
}

/* elevator_init_mq: the policy, with no keys outside a probe. */
static int add_disk_sched(struct mq_device *dev, struct gendisk *disk)
{
	struct mq_params *p = dev->probe_params, *none = NULL;
	int ret;

	if (!p && !(p = none = mq_params_new()))
		return mq_err_set(&dev->probe_err, "%s: out of memory",
				  disk->disk_name);
	/*
	 * A queue key of zoned disks only: their drivers list it among their
	 * keys (MQ_ZONE_WRITE_PLUGGING_PARAM); elsewhere it stays unknown.
	 */
	ret = 0;
	if (disk->queue->limits.zoned != BLK_ZONED_NONE)
		ret = mq_param_bool(p, "zone_write_plugging", true,
				    &disk->queue->zone_write_plugging,
				    &dev->probe_err);
	if (!ret)
		ret = elv_policy_apply(disk, p, &dev->probe_err);
	mq_params_free(none);
	return ret;
}

int mq_device_add_disk(struct mq_device *dev, struct gendisk *disk)
{
	if (dev->nr_disks >= MQ_MAX_DISKS) {
		errno = ENOSPC;
		return -1;
	}
	if (mq_device_find_disk(dev, disk->disk_name)) {
		errno = EEXIST;
		return -1;
	}
	if (add_disk_sched(dev, disk)) {
		errno = EINVAL;
		return -1;
	}
	/* The zone write plugs read write pointers through it. */
	if (!disk->queue->disk)
		disk->queue->disk = disk;
	disk->bdev = mq_bdev_create(disk);
	if (!disk->bdev) {
		errno = ENOMEM;
		return -1;
	}
	dev->bdevs[dev->nr_disks] = disk->bdev;
	dev->disks[dev->nr_disks++] = disk;
	return 0;
}

int mq_device_add_internal(struct mq_device *dev, struct gendisk *disk)
{
	struct mq_params *none;
	struct mq_err e;
	unsigned int i;
	int ret;

	if (dev->nr_internal >= MQ_MAX_INTERNAL) {
		errno = ENOSPC;
		return -1;
	}
	for (i = 0; i < dev->nr_internal; i++)
		if (!strcmp(dev->internal[i]->disk_name, disk->disk_name)) {
			errno = EEXIST;
			return -1;
		}
	none = mq_params_new();
	if (!none) {
		errno = ENOMEM;
		return -1;
	}
	ret = elv_policy_apply(disk, none, &e);
	mq_params_free(none);
	if (ret) {
		pr_err("%s: %s", disk->disk_name, e.msg);
		errno = EINVAL;
		return -1;
	}
	dev->internal[dev->nr_internal++] = disk;
	return 0;
}

struct gendisk *mq_device_find_disk(struct mq_device *dev, const char *name)
{
	unsigned int i;

	for (i = 0; i < dev->nr_disks; i++)
		if (strcmp(dev->disks[i]->disk_name, name) == 0)
			return dev->disks[i];
	return NULL;
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '/';
}

/* The first place in text where word stands as a word of its own. */
static char *find_word(char *text, const char *word)
{
	size_t n = strlen(word);
	char *at;

	for (at = strstr(text, word); at; at = strstr(at + 1, word))
		if ((at == text || !name_char(at[-1])) && !name_char(at[n]))
			return at;
	return NULL;
}

int mq_disk_rename(struct gendisk *disk, const char *name)
{
	size_t nl = strlen(name), ol = strlen(disk->disk_name);
	char desc[sizeof(disk->description)];
	char *at;

	if (nl >= sizeof(disk->disk_name) ||
	    (disk->queue && nl >= sizeof(disk->queue->name))) {
		errno = ENAMETOOLONG;
		return -1;
	}
	/* "null_blk nullb0 (memory backed)" names the disk: rename it there. */
	at = disk->disk_name[0] ? find_word(disk->description, disk->disk_name)
				: NULL;
	if (at) {
		int n = snprintf(desc, sizeof(desc), "%.*s%s%s",
				 (int)(at - disk->description),
				 disk->description, name, at + ol);

		if (n > 0 && (size_t)n < sizeof(desc))
			memcpy(disk->description, desc, (size_t)n + 1);
	}
	memcpy(disk->disk_name, name, nl + 1);
	if (disk->queue)
		memcpy(disk->queue->name, name, nl + 1);
	return 0;
}

void mq_disk_describe(struct gendisk *disk, char *buf, size_t len)
{
	struct mq_queue *q = disk->queue;

	snprintf(buf, len, "%s: %u hw queue%s, depth %u, scheduler %s%s%s%s",
		 disk->description[0] ? disk->description : disk->disk_name,
		 q->nr_hw_queues, q->nr_hw_queues == 1 ? "" : "s",
		 q->tag_set->queue_depth, mq_elevator_name(q),
		 q->sched_reason[0] ? " (" : "", q->sched_reason,
		 q->sched_reason[0] ? ")" : "");
}

int mq_device_open_media(struct mq_device *dev, struct mq_params *p,
			 const char *prefix, const char *synonym,
			 const char *def, struct media_open_args *a,
			 struct media **mp, struct mq_err *e)
{
	char mkey[64], skey[64], spec[4200];
	const char *media = NULL, *path = NULL;

	*mp = NULL;
	mq_param_key(mkey, sizeof(mkey), prefix ? prefix : "", "media");
	if (synonym)
		mq_param_key(skey, sizeof(skey), prefix ? prefix : "", synonym);
	if (mq_param_str(p, mkey, NULL, &media, e) ||
	    (synonym && mq_param_str(p, skey, NULL, &path, e)))
		return -1;
	if (media && path)
		return mq_err_set(e, "%s=%s and %s=%s: give one of them", skey,
				  path, mkey, media);
	if (path) {
		if (!*path)
			return mq_err_set(e, "%s=: the path is empty", skey);
		if ((size_t)snprintf(spec, sizeof(spec), "file:%s", path) >=
		    sizeof(spec))
			return mq_err_set(e, "%s=: the path is too long", skey);
		a->key = skey;
	} else if (media) {
		if ((size_t)snprintf(spec, sizeof(spec), "%s", media) >=
		    sizeof(spec))
			return mq_err_set(e, "%s=: too long", mkey);
		a->key = mkey;
	} else if (def) {
		snprintf(spec, sizeof(spec), "%s", def);
		a->key = mkey;
	} else {
		return 0;
	}
	a->params = p;
	if (!a->io_timeout_ms)
		a->io_timeout_ms = dev->io_timeout_ms;
	return media_open(spec, a, mp, e);
}
