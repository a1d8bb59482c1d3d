// SPDX-License-Identifier: GPL-2.0
/*
 * ide-disk, after drivers/ide/ide-disk.c with seed 009: reads and writes
 * become READ/WRITE DMA taskfiles (LBA28, or LBA48 on a disk past
 * 128 GiB), and with the write cache on, FLUSH becomes FLUSH CACHE (EXT)
 * in the prep step, idedisk_prep_fn.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ide.h"
#include "ide-dev.h"
#include "../../server/mq/log.h"

static const char *const udma_names[] = {
	"UDMA/16", "UDMA/25",  "UDMA/33",  "UDMA/44",
	"UDMA/66", "UDMA/100", "UDMA/133",
};
static const char *const pio_names[] = {
	"PIO0", "PIO1", "PIO2", "PIO3", "PIO4",
};

static bool ide_using_dma(const struct ide_drive *drive)
{
	return drive->ata->timing.p.udma >= 0;
}

/* FLUSH CACHE (EXT) for a REQ_OP_FLUSH; everything else passes. */
static int idedisk_prep_fn(struct ide_drive *drive, struct request *rq)
{
	struct ide_cmd *cmd = mq_rq_to_pdu(rq);

	if (req_op(rq) != REQ_OP_FLUSH)
		return 0;

	memset(&cmd->tf, 0, sizeof(cmd->tf));
	memset(&cmd->hob, 0, sizeof(cmd->hob));
	if (drive->lba48)
		cmd->tf.command = ATA_CMD_FLUSH_EXT;
	else
		cmd->tf.command = ATA_CMD_FLUSH;
	cmd->tf_flags = 0;
	cmd->type = ATA_PRIV_TASKFILE;
	return 0;
}

static void ide_dump_status(struct ide_drive *drive, struct request *rq,
			    const char *msg)
{
	struct ide_cmd *cmd = mq_rq_to_pdu(rq);

	pr_err("%s: %s: status=0x%02x { DriveReady%s } error=0x%02x {%s%s%s }"
	       " command=0x%02x, sector %" PRIu64 ", %u bytes",
	       drive->name, msg, cmd->status,
	       cmd->status & ATA_ERR ? " Error" : "", cmd->error,
	       cmd->error & ATA_UNC ? " UncorrectableError" : "",
	       cmd->error & ATA_IDNF ? " SectorIdNotFound" : "",
	       cmd->error & ATA_ABORTED ? " DriveStatusError" : "",
	       cmd->tf.command, blk_rq_pos(rq), blk_rq_bytes(rq));
}

/* The interrupt: one phase, the drive did the whole transfer. */
static ide_startstop_t ide_disk_intr(struct ide_drive *drive,
				     struct request *rq)
{
	struct ide_cmd *cmd = mq_rq_to_pdu(rq);

	if (cmd->status & ATA_ERR) {
		ide_dump_status(drive, rq,
				cmd->type == ATA_PRIV_TASKFILE ? "flush failed"
							       : "I/O error");
		ide_complete_rq(drive, rq, EIO);
	} else {
		ide_complete_rq(drive, rq, 0);
	}
	return ide_stopped;
}

static ide_startstop_t ide_disk_issue(struct ide_drive *drive,
				      struct request *rq)
{
	struct ide_cmd *cmd = mq_rq_to_pdu(rq);
	uint64_t ns;

	ide_trace_cmd(drive, cmd->tf.command, blk_rq_pos(rq));
	ns = ata_dev_exec(drive->ata, cmd, rq);
	ide_issue(drive, rq, ide_disk_intr, ns);
	return ide_started;
}

/* The taskfile for a read or write, as __ide_do_rw_disk builds it. */
static void ide_tf_rw(struct ide_drive *drive, struct request *rq,
		      struct ide_cmd *cmd)
{
	struct ide_taskfile *tf = &cmd->tf;
	uint64_t block = blk_rq_pos(rq);
	uint32_t nsectors = blk_rq_sectors(rq);
	bool lba48 = drive->lba48, dma = ide_using_dma(drive);
	bool write = req_op(rq) == REQ_OP_WRITE;

	memset(&cmd->tf, 0, sizeof(cmd->tf));
	memset(&cmd->hob, 0, sizeof(cmd->hob));
	cmd->tf_flags = IDE_TFLAG_FS;
	if (lba48) {
		tf->nsect = nsectors & 0xff;
		tf->lbal = (uint8_t)block;
		tf->lbam = (uint8_t)(block >> 8);
		tf->lbah = (uint8_t)(block >> 16);
		tf->device = ATA_LBA;

		tf = &cmd->hob;
		tf->nsect = (nsectors >> 8) & 0xff;
		tf->lbal = (uint8_t)(block >> 24);
		tf->lbam = (uint8_t)(block >> 32);
		tf->lbah = (uint8_t)(block >> 40);
		cmd->tf_flags |= IDE_TFLAG_LBA48;
		tf = &cmd->tf;
	} else {
		tf->nsect = nsectors & 0xff;
		tf->lbal = (uint8_t)block;
		tf->lbam = (uint8_t)(block >> 8);
		tf->lbah = (uint8_t)(block >> 16);
		tf->device = ((block >> 24) & 0xf) | ATA_LBA;
	}
	if (write)
		cmd->tf_flags |= IDE_TFLAG_WRITE;
	if (dma)
		cmd->tf_flags |= IDE_TFLAG_DMA;

	/* ide_tf_set_cmd */
	if (dma)
		tf->command =
			write ? (lba48 ? ATA_CMD_WRITE_EXT : ATA_CMD_WRITE)
			      : (lba48 ? ATA_CMD_READ_EXT : ATA_CMD_READ);
	else
		tf->command = write ? (lba48 ? ATA_CMD_PIO_WRITE_EXT
					     : ATA_CMD_PIO_WRITE)
				    : (lba48 ? ATA_CMD_PIO_READ_EXT
					     : ATA_CMD_PIO_READ);
}

static ide_startstop_t ide_do_rw_disk(struct ide_drive *drive,
				      struct request *rq)
{
	struct ide_cmd *cmd = mq_rq_to_pdu(rq);

	if (req_op(rq) != REQ_OP_READ && req_op(rq) != REQ_OP_WRITE) {
		pr_err("%s: %s not supported", drive->name,
		       req_op_name(req_op(rq)));
		ide_complete_rq(drive, rq, EOPNOTSUPP);
		return ide_stopped;
	}
	pr_debug("%s: %sing: block=%" PRIu64 ", sectors=%u", drive->name,
		 req_op(rq) == REQ_OP_WRITE ? "writ" : "read", blk_rq_pos(rq),
		 blk_rq_sectors(rq));
	ide_tf_rw(drive, rq, cmd);
	return ide_disk_issue(drive, rq);
}

ide_startstop_t ide_disk_do_request(struct ide_drive *drive, struct request *rq)
{
	struct ide_cmd *cmd = mq_rq_to_pdu(rq);

	/* execute_drive_cmd: the taskfile the prep step made */
	if (cmd->type == ATA_PRIV_TASKFILE)
		return ide_disk_issue(drive, rq);
	if (req_op(rq) == REQ_OP_FLUSH) {
		/* No cache, no prep: nothing to write back. */
		ide_complete_rq(drive, rq, 0);
		return ide_stopped;
	}
	return ide_do_rw_disk(drive, rq);
}

static int ide_disk_extents(struct gendisk *disk, uint64_t offset,
			    uint64_t length, extent_fn *fn, void *arg)
{
	struct ide_drive *drive = disk->private_data;

	return media_extents(drive->ata->media, offset, length, fn, arg);
}

static const struct block_device_operations ide_disk_fops = {
	.extents = ide_disk_extents,
};

static int ide_disk_show_lba(struct gendisk *disk, char *buf, size_t len)
{
	struct ide_drive *drive = disk->private_data;

	return snprintf(buf, len, "%s", drive->lba48 ? "LBA48" : "LBA28");
}

/* "READ DMA=12 WRITE DMA=3 FLUSH CACHE=1": the commands the drive got. */
static int ide_show_cmds(struct gendisk *disk, char *buf, size_t len)
{
	static const struct {
		uint8_t op;
		const char *name;
	} names[] = {
		{ATA_CMD_READ, "READ_DMA"},
		{ATA_CMD_READ_EXT, "READ_DMA_EXT"},
		{ATA_CMD_WRITE, "WRITE_DMA"},
		{ATA_CMD_WRITE_EXT, "WRITE_DMA_EXT"},
		{ATA_CMD_PIO_READ, "READ_SECTORS"},
		{ATA_CMD_PIO_READ_EXT, "READ_SECTORS_EXT"},
		{ATA_CMD_PIO_WRITE, "WRITE_SECTORS"},
		{ATA_CMD_PIO_WRITE_EXT, "WRITE_SECTORS_EXT"},
		{ATA_CMD_FLUSH, "FLUSH_CACHE"},
		{ATA_CMD_FLUSH_EXT, "FLUSH_CACHE_EXT"},
	};
	struct ide_drive *drive = disk->private_data;
	size_t i, off = 0;
	int n;

	if (len)
		buf[0] = '\0';
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		n = snprintf(buf + off, len - off, "%s%s=%lu", off ? " " : "",
			     names[i].name,
			     atomic_load(&drive->cmds[names[i].op]));
		if (n < 0 || (size_t)n >= len - off)
			return -ENOSPC;
		off += (size_t)n;
	}
	return (int)off;
}

static int ide_show_timing(struct gendisk *disk, char *buf, size_t len)
{
	struct ide_drive *drive = disk->private_data;
	struct timing_model *m = &drive->ata->timing.base;
	uint64_t busy, nr;

	pthread_mutex_lock(&m->lock);
	busy = m->busy_ns;
	nr = m->nr_cmds;
	pthread_mutex_unlock(&m->lock);
	return snprintf(buf, len, "commands=%" PRIu64 " busy_ns=%" PRIu64, nr,
			busy);
}

static const struct disk_attr ide_disk_attrs[] = {
	{"lba", ide_disk_show_lba},
	{"commands", ide_show_cmds},
	{"timing", ide_show_timing},
	{"port_busy", ide_show_port_busy},
	{NULL},
};

int ide_disk_setup(struct ide_drive *drive, struct mq_params *p,
		   const char *prefix, struct mq_err *e)
{
	struct queue_limits *lim = &drive->queue->limits;
	struct rotational_params rp;
	struct media_open_args a = {
		.block_size = SECTOR_SIZE,
		.name = drive->name,
	};
	struct media *m;
	const char *image, *media;
	uint64_t size;
	char k[64];
	bool has_size;

	has_size = mq_params_has(p, mq_param_key(k, sizeof(k), prefix, "size"));
	if (mq_param_size(p, k, 80ULL << 30, &size, e) ||
	    rotational_params_read(&rp, p, prefix, e) ||
	    ide_read_identity(drive, p, prefix, "MQBLK HARDDISK", e))
		return -1;
	image = mq_params_peek(p, mq_param_key(k, sizeof(k), prefix, "image"));
	media = mq_params_peek(p, mq_param_key(k, sizeof(k), prefix, "media"));
	if (image && has_size)
		return mq_err_set(e, "%s: give %ssize or %simage, not both",
				  drive->name, prefix, prefix);
	if (has_size || (!image && (!media || !strcmp(media, "ram")))) {
		if (size < SECTOR_SIZE || size % SECTOR_SIZE)
			return mq_err_set(
				e,
				"%s: %ssize=%" PRIu64
				": must be a non-zero multiple of 512",
				drive->name, prefix, size);
		a.size = size;
	}
	/* size= for ram, image=PATH (media=file:PATH), or media=STORE. */
	if (mq_device_open_media(drive->mdev, p, prefix, "image", "ram", &a, &m,
				 e)) {
		char msg[sizeof(e->msg)];

		memcpy(msg, e->msg, sizeof(msg));
		return mq_err_set(e, "%s: %s", drive->name, msg);
	}
	if (m->size >> SECTOR_SHIFT > (1ULL << 48)) {
		media_close(m);
		return mq_err_set(
			e, "%s: %ssize=%" PRIu64 ": LBA48 ends at 128 PiB",
			drive->name, prefix, m->size);
	}

	drive->ata = calloc(1, sizeof(*drive->ata));
	if (!drive->ata) {
		media_close(m);
		return mq_err_set(e, "%s: out of memory", drive->name);
	}
	ata_dev_init(drive->ata, m, &rp);
	drive->lba48 = drive->ata->lba48;
	drive->wcache = rp.write_cache;
	/* update_flush: a cache that can be flushed gets the prep step */
	if (drive->wcache)
		drive->prep_rq = idedisk_prep_fn;

	lim->logical_block_size = SECTOR_SIZE;
	lim->physical_block_size = SECTOR_SIZE;
	lim->rotational = true;
	lim->write_cache = drive->wcache;
	lim->fua = false;

	set_capacity(&drive->disk, drive->ata->nr_sectors);
	drive->disk.read_only = m->read_only;
	drive->disk.attrs = ide_disk_attrs;
	if (m->caps & MEDIA_CAN_EXTENTS)
		drive->disk.fops = &ide_disk_fops;
	drive->disk.features |= media_disk_features(m);
	snprintf(drive->disk.description, sizeof(drive->disk.description),
		 "%s: %s, ATA DISK drive, %" PRIu64 " MiB, %s, %s, %u rpm, "
		 "write cache %s (fw %s, serial %s)",
		 drive->name, drive->model,
		 drive->ata->nr_sectors >> (20 - SECTOR_SHIFT),
		 drive->lba48 ? "LBA48" : "LBA28",
		 rp.udma >= 0 ? udma_names[rp.udma] : pio_names[rp.pio], rp.rpm,
		 drive->wcache ? "on" : "off", drive->firmware, drive->serial);
	return 0;
}

void ide_disk_release(struct ide_drive *drive)
{
	if (!drive->ata)
		return;
	ata_dev_destroy(drive->ata);
	free(drive->ata);
	drive->ata = NULL;
}

int ide_disk_sync(struct ide_drive *drive)
{
	return drive->ata ? media_flush(drive->ata->media) : 0;
}
