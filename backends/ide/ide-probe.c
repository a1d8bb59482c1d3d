// SPDX-License-Identifier: GPL-2.0
/*
 * Probing a channel, after drivers/ide/ide-probe.c with seed 009: each
 * drive gets its own tag set (1 hw queue, depth 32, one reserved tag,
 * SHOULD_MERGE | BLOCKING) and queue (ide_init_queue), then ide-disk or
 * ide-cd sets it up.
 *
 * Three drivers share this: "ide" (one or two channels, any mix of disks
 * and CDs, keys prefixed with the drive name) and the shorthands
 * "ide-disk" and "ide-cd" (one channel, that drive as hda, keys without a
 * prefix).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ide.h"
#include "../../server/mq/log.h"

static void ide_copy_id(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src);
}

int ide_read_identity(struct ide_drive *drive, struct mq_params *p,
		      const char *prefix, const char *def_model,
		      struct mq_err *e)
{
	const char *model, *fw, *serial;
	char k[64], def_serial[21];

	snprintf(def_serial, sizeof(def_serial), "MQ%05u",
		 drive->hwif->index * MAX_DRIVES + drive->dn + 1);
	if (mq_param_str(p, mq_param_key(k, sizeof(k), prefix, "model"),
			 def_model, &model, e) ||
	    mq_param_str(p, mq_param_key(k, sizeof(k), prefix, "firmware"),
			 "1.0", &fw, e) ||
	    mq_param_str(p, mq_param_key(k, sizeof(k), prefix, "serial"),
			 def_serial, &serial, e))
		return -1;
	/* IDENTIFY's fields: 40, 8 and 20 characters. */
	if (strlen(model) > 40 || strlen(fw) > 8 || strlen(serial) > 20)
		return mq_err_set(e,
				  "%s: model, firmware and serial are at most "
				  "40, 8 and 20 characters",
				  drive->name);
	ide_copy_id(drive->model, sizeof(drive->model), model);
	ide_copy_id(drive->firmware, sizeof(drive->firmware), fw);
	ide_copy_id(drive->serial, sizeof(drive->serial), serial);
	return 0;
}

static const struct mq_ops ide_mq_ops = {
	.queue_rq = ide_queue_rq,
	.timeout = ide_timed_out,
};

/*
 * init request queue
 */
static int ide_init_queue(struct ide_drive *drive)
{
	struct mq_tag_set *set = &drive->tag_set;
	struct mq_queue *q;

	set->ops = &ide_mq_ops;
	set->nr_hw_queues = 1;
	set->queue_depth = IDE_QUEUE_DEPTH;
	set->reserved_tags = IDE_RESERVED_TAGS;
	set->cmd_size = sizeof(struct ide_cmd);
	set->timeout_ms = drive->mdev->io_timeout_ms;
	set->flags = MQ_F_SHOULD_MERGE | MQ_F_BLOCKING;
	set->driver_data = drive;
	if (mq_alloc_tag_set(set))
		return ENOMEM;
	drive->tag_set_ready = true;

	q = mq_init_queue(set, drive->mdev->nr_ctx, drive->name);
	if (!q)
		return ENOMEM;
	drive->queue = q;
	q->queuedata = drive;
	/* 128 KiB per command: LBA28's 256 sectors; PRD_ENTRIES segments */
	q->limits.max_sectors = IDE_MAX_SECTORS;
	q->limits.max_segments = 256;
	q->limits.max_discard_sectors = 0;
	q->limits.max_write_zeroes_sectors = 0;
	return 0;
}

static void ide_drive_free(struct ide_drive *drive)
{
	if (!drive)
		return;
	if (drive->queue)
		mq_cleanup_queue(drive->queue);
	if (drive->tag_set_ready)
		mq_free_tag_set(&drive->tag_set);
	if (drive->media == ide_disk)
		ide_disk_release(drive);
	else if (drive->media == ide_cdrom)
		ide_cd_release(drive);
	free(drive);
}

static void ide_host_free(struct ide_host *host)
{
	unsigned int i, j;

	if (!host)
		return;
	/*
	 * The last interrupt ends its request, then releases the port and
	 * plugs its drive's queue (ide_requeue_and_plug); a dispatch may
	 * still be on its way out of queue_rq.  So: let every queue drain and
	 * quiesce, stop the irq threads, and only then free the drives.
	 */
	for (i = 0; i < host->n_ports; i++) {
		for (j = 0; j < MAX_DRIVES; j++) {
			struct ide_drive *drive = host->ports[i].devices[j];

			if (drive && drive->queue) {
				mq_freeze_queue(drive->queue);
				mq_quiesce_queue(drive->queue);
			}
		}
	}
	for (i = 0; i < host->n_ports; i++) {
		irq_thread_destroy(host->ports[i].irq);
		host->ports[i].irq = NULL;
	}
	for (i = 0; i < host->n_ports; i++) {
		struct ide_hwif *hwif = &host->ports[i];

		for (j = 0; j < MAX_DRIVES; j++)
			ide_drive_free(hwif->devices[j]);
		if (hwif->lock_ready)
			pthread_mutex_destroy(&hwif->lock);
	}
	free(host);
}

static int ide_probe_drive(struct ide_host *host, struct ide_hwif *hwif,
			   unsigned int dn, enum ide_media media,
			   struct mq_params *p, const char *prefix,
			   struct mq_err *e)
{
	struct ide_drive *drive;
	int err;

	drive = calloc(1, sizeof(*drive));
	if (!drive)
		return mq_err_set(e, "out of memory");
	hwif->devices[dn] = drive;
	drive->hwif = hwif;
	drive->dn = dn;
	drive->mdev = host->mdev;
	snprintf(drive->disk.disk_name, sizeof(drive->disk.disk_name), "hd%c",
		 'a' + hwif->index * MAX_DRIVES + dn);
	drive->name = drive->disk.disk_name;

	err = ide_init_queue(drive);
	if (err)
		return mq_err_set(e, "%s: cannot create the queue: %s",
				  drive->name, strerror(err));

	drive->disk.queue = drive->queue;
	drive->disk.private_data = drive;

	drive->media = media;
	if (media == ide_disk)
		err = ide_disk_setup(drive, p, prefix, e);
	else
		err = ide_cdrom_setup(drive, p, prefix, e);
	if (err) {
		drive->media = ide_none; /* nothing to release */
		return -1;
	}
	if (mq_device_add_disk(host->mdev, &drive->disk))
		return mq_err_set(e, "%s: cannot add the disk", drive->name);
	drive->disk_added = true;
	return 0;
}

static int ide_parse_media(struct mq_params *p, const char *key,
			   enum ide_media def, enum ide_media *out,
			   struct mq_err *e)
{
	const char *s;

	if (mq_param_str(p, key, NULL, &s, e))
		return -1;
	if (!s) {
		*out = def;
		return 0;
	}
	if (!strcmp(s, "disk"))
		*out = ide_disk;
	else if (!strcmp(s, "cd") || !strcmp(s, "cdrom"))
		*out = ide_cdrom;
	else if (!strcmp(s, "none"))
		*out = ide_none;
	else
		return mq_err_set(e, "%s=%s: must be disk, cd or none", key, s);
	return 0;
}

/*
 * Build the host.  media[] gives each drive's kind, in hda, hdb, hdc, hdd
 * order; prefixed says whether keys carry the drive name.
 */
static int ide_host_probe(struct mq_device *dev, struct mq_params *p,
			  unsigned int n_ports,
			  const enum ide_media media[MAX_HWIFS * MAX_DRIVES],
			  bool prefixed, struct mq_err *e)
{
	struct ide_host *host;
	unsigned int i, j;
	char prefix[8];

	host = calloc(1, sizeof(*host));
	if (!host)
		return mq_err_set(e, "out of memory");
	host->mdev = dev;
	host->n_ports = n_ports;

	for (i = 0; i < n_ports; i++) {
		struct ide_hwif *hwif = &host->ports[i];

		hwif->index = i;
		hwif->host = host;
		snprintf(hwif->name, sizeof(hwif->name), "ide%u", i);
		if (pthread_mutex_init(&hwif->lock, NULL)) {
			mq_err_set(e, "%s: cannot create the lock", hwif->name);
			goto fail;
		}
		hwif->lock_ready = true;
		hwif->irq = irq_thread_create(hwif->name);
		if (!hwif->irq) {
			mq_err_set(e, "%s: cannot start the irq thread",
				   hwif->name);
			goto fail;
		}
		for (j = 0; j < MAX_DRIVES; j++) {
			enum ide_media m = media[i * MAX_DRIVES + j];

			if (m == ide_none)
				continue;
			snprintf(prefix, sizeof(prefix), "hd%c.",
				 'a' + i * MAX_DRIVES + j);
			if (ide_probe_drive(host, hwif, j, m, p,
					    prefixed ? prefix : "", e))
				goto fail;
		}
	}
	dev->private_data = host;
	return 0;

fail:
	/* The disks were added to dev; take them back. */
	dev->nr_disks = 0;
	ide_host_free(host);
	return -1;
}

static int ide_channel_probe(struct mq_device *dev, struct mq_params *p,
			     struct mq_err *e)
{
	enum ide_media media[MAX_HWIFS * MAX_DRIVES], master, slave;
	unsigned int channels, i;
	bool any = false;
	char key[8];

	if (mq_param_uint(p, "channels", 1, 1, MAX_HWIFS, &channels, e) ||
	    ide_parse_media(p, "master", ide_disk, &master, e) ||
	    ide_parse_media(p, "slave", ide_none, &slave, e))
		return -1;
	for (i = 0; i < MAX_HWIFS * MAX_DRIVES; i++) {
		snprintf(key, sizeof(key), "hd%c", 'a' + i);
		media[i] = ide_none;
		if (i >= channels * MAX_DRIVES) {
			if (mq_params_has(p, key))
				return mq_err_set(e, "%s: needs channels=2",
						  key);
			continue;
		}
		if (ide_parse_media(p, key, i % 2 ? slave : master, &media[i],
				    e))
			return -1;
		any |= media[i] != ide_none;
	}
	if (!any)
		return mq_err_set(e, "no drives: every drive is 'none'");
	if (mq_params_has(p, "media"))
		return mq_err_set(e,
				  "media=%s: each drive has its own store: "
				  "give hdX.media= (hda.media=, ...)",
				  mq_params_peek(p, "media"));
	return ide_host_probe(dev, p, channels, media, true, e);
}

static int ide_disk_probe(struct mq_device *dev, struct mq_params *p,
			  struct mq_err *e)
{
	const enum ide_media media[MAX_HWIFS * MAX_DRIVES] = {ide_disk};

	return ide_host_probe(dev, p, 1, media, false, e);
}

static int ide_cd_probe(struct mq_device *dev, struct mq_params *p,
			struct mq_err *e)
{
	const enum ide_media media[MAX_HWIFS * MAX_DRIVES] = {ide_cdrom};

	return ide_host_probe(dev, p, 1, media, false, e);
}

static void ide_remove(struct mq_device *dev)
{
	ide_host_free(dev->private_data);
	dev->private_data = NULL;
}

static int ide_sync(struct mq_device *dev)
{
	struct ide_host *host = dev->private_data;
	unsigned int i, j;
	int err = 0, r;

	for (i = 0; i < host->n_ports; i++)
		for (j = 0; j < MAX_DRIVES; j++) {
			struct ide_drive *drive = host->ports[i].devices[j];

			if (drive && drive->media == ide_disk) {
				r = ide_disk_sync(drive);
				if (r && !err)
					err = r;
			}
		}
	return err;
}

#define IDE_DISK_KEYS(P, G)                                                    \
	{P "size", "80G", "disk size (memory-backed), K/M/G/T suffixes", G},   \
		{P "image", NULL, "disk image file instead of memory", G},     \
		{P "rpm", "7200", "spindle speed", G},                         \
		{P "seek_ms", "8.5", "average seek time, ms", G},              \
		{P "track_seek_ms", "0.8", "track-to-track seek time, ms", G}, \
		{P "udma", "5", "UDMA mode 0-6 (16.7 to 133 MB/s), -1: PIO",   \
		 G},                                                           \
		{P "pio", "4", "PIO mode 0-4, used instead of UDMA if given",  \
		 G},                                                           \
		{P "write_cache", "1", "volatile write cache; FLUSH CACHE",    \
		 G},                                                           \
		{P "model", "MQBLK HARDDISK", "IDENTIFY model string", G},     \
		{P "firmware", "1.0", "IDENTIFY firmware revision", G},        \
	{                                                                      \
		P "serial", "MQ0000N", "IDENTIFY serial number", G             \
	}

#define IDE_CD_KEYS(P, G)                                                      \
	{P "image", NULL, "ISO image in the tray; without it: no medium", G},  \
		{P "speed", "12", "CLV speed, x 150 KiB/s", G},                \
		{P "seek_ms", "100", "average access time, ms", G},            \
		{P "spinup_ms", "1500", "spin-up time after insert, ms", G},   \
		{P "model", "MQBLK CD-ROM", "IDENTIFY model string", G},       \
		{P "firmware", "1.0", "IDENTIFY firmware revision", G},        \
	{                                                                      \
		P "serial", "MQ0000N", "IDENTIFY serial number", G             \
	}

static const struct mq_param_spec ide_disk_params[] = {
	IDE_DISK_KEYS("", NULL),
	{NULL},
};

static const struct mq_param_spec ide_cd_params[] = {
	IDE_CD_KEYS("", NULL),
	{NULL},
};

static const struct mq_param_spec ide_params[] = {
	{"channels", "1", "1: hda, hdb; 2: also hdc, hdd"},
	{"master", "disk", "disk, cd or none for every channel's master"},
	{"slave", "none", "disk, cd or none for every channel's slave"},
	{"hdX", NULL, "disk, cd or none for drive hdX (hda..hdd)"},
	{"hdX.media", NULL,
	 "drive hdX's store: ram, file:PATH, nbd:URI or rbd:POOL/IMAGE",
	 "every drive hdX:"},
	IDE_DISK_KEYS("hdX.", "a drive hdX that is a disk (ide-disk):"),
	IDE_CD_KEYS("hdX.", "a drive hdX that is a CD (ide-cd):"),
	{NULL},
};

const struct mq_driver ide_driver = {
	.name = "ide",
	.description = "IDE channel(s): hda/hdb (and hdc/hdd), each an "
		       "ide-disk, an ide-cd or absent, sharing the channel",
	.params = ide_params,
	.probe = ide_channel_probe,
	.remove = ide_remove,
	.sync = ide_sync,
};

const struct mq_driver ide_disk_driver = {
	.name = "ide-disk",
	.description = "ATA disk as hda: 7200 rpm, UDMA, LBA28/LBA48, write "
		       "cache and FLUSH CACHE",
	.params = ide_disk_params,
	.probe = ide_disk_probe,
	.remove = ide_remove,
	.sync = ide_sync,
};

const struct mq_driver ide_cd_driver = {
	.name = "ide-cd",
	.description = "ATAPI CD-ROM as hda: ISO image, 2048-byte blocks, "
		       "read-only, 12x CLV, eject/insert",
	.params = ide_cd_params,
	.probe = ide_cd_probe,
	.remove = ide_remove,
	.sync = ide_sync,
};
