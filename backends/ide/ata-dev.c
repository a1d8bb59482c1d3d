// SPDX-License-Identifier: GPL-2.0
/*
 * A modelled ATA disk: decode the taskfile, check it, move the data and
 * say how long it took.  The driver never sees the store.
 */
#include <errno.h>
#include <string.h>

#include "ide-dev.h"

int ata_dev_init(struct ata_dev *d, struct media *m,
		 const struct rotational_params *rp)
{
	d->media = m;
	d->nr_sectors = m->size >> SECTOR_SHIFT;
	/* Drives big enough to need it speak LBA48; smaller ones may not. */
	d->lba48 = d->nr_sectors > ATA_LBA28_LIMIT;
	d->write_cache = rp->write_cache;
	rotational_init(&d->timing, rp, d->nr_sectors);
	return 0;
}

void ata_dev_destroy(struct ata_dev *d)
{
	rotational_destroy(&d->timing);
	media_close(d->media);
	d->media = NULL;
}

static bool ata_cmd_is_lba48(uint8_t command)
{
	switch (command) {
	case ATA_CMD_READ_EXT:
	case ATA_CMD_WRITE_EXT:
	case ATA_CMD_PIO_READ_EXT:
	case ATA_CMD_PIO_WRITE_EXT:
	case ATA_CMD_FLUSH_EXT:
		return true;
	default:
		return false;
	}
}

static void ata_fail(struct ide_cmd *cmd, uint8_t error)
{
	cmd->status = ATA_DRDY | ATA_ERR;
	cmd->error = error;
}

/* Move len bytes at byte offset pos between the request and the store. */
static int ata_transfer(struct ata_dev *d, struct request *rq, bool write,
			uint64_t pos)
{
	struct bio *bio;
	int err;

	rq_for_each_bio (bio, rq) {
		if (write)
			err = media_write(d->media, bio->bi_buf, bio->bi_size,
					  pos);
		else
			err = media_read(d->media, bio->bi_buf, bio->bi_size,
					 pos);
		if (err)
			return err;
		pos += bio->bi_size;
	}
	return 0;
}

uint64_t ata_dev_exec(struct ata_dev *d, struct ide_cmd *cmd,
		      struct request *rq)
{
	const struct ide_taskfile *tf = &cmd->tf, *hob = &cmd->hob;
	uint8_t command = tf->command;
	bool ext = ata_cmd_is_lba48(command), write;
	uint64_t lba, count;
	enum timing_op op;

	cmd->status = ATA_DRDY;
	cmd->error = 0;

	if (ext && !d->lba48) {
		ata_fail(cmd, ATA_ABORTED);
		return 0;
	}
	if (command == ATA_CMD_FLUSH || command == ATA_CMD_FLUSH_EXT) {
		if (media_flush(d->media))
			ata_fail(cmd, ATA_ABORTED);
		return timing_service_ns(&d->timing.base, TIMING_FLUSH, 0, 0);
	}

	switch (command) {
	case ATA_CMD_READ:
	case ATA_CMD_READ_EXT:
	case ATA_CMD_PIO_READ:
	case ATA_CMD_PIO_READ_EXT:
		write = false;
		op = TIMING_READ;
		break;
	case ATA_CMD_WRITE:
	case ATA_CMD_WRITE_EXT:
	case ATA_CMD_PIO_WRITE:
	case ATA_CMD_PIO_WRITE_EXT:
		write = true;
		op = TIMING_WRITE;
		break;
	default:
		ata_fail(cmd, ATA_ABORTED);
		return 0;
	}
	if (!(tf->device & ATA_LBA)) {
		ata_fail(cmd, ATA_ABORTED); /* no CHS here */
		return 0;
	}

	if (ext) {
		lba = (uint64_t)tf->lbal | (uint64_t)tf->lbam << 8 |
		      (uint64_t)tf->lbah << 16 | (uint64_t)hob->lbal << 24 |
		      (uint64_t)hob->lbam << 32 | (uint64_t)hob->lbah << 40;
		count = (uint64_t)tf->nsect | (uint64_t)hob->nsect << 8;
		if (!count)
			count = 65536;
	} else {
		lba = (uint64_t)tf->lbal | (uint64_t)tf->lbam << 8 |
		      (uint64_t)tf->lbah << 16 |
		      (uint64_t)(tf->device & 0x0f) << 24;
		count = tf->nsect ? tf->nsect : 256;
	}

	/* The sectors asked for must exist and match the data given. */
	if (lba >= d->nr_sectors || count > d->nr_sectors - lba) {
		ata_fail(cmd, ATA_IDNF | ATA_ABORTED);
		return 0;
	}
	if (count << SECTOR_SHIFT != blk_rq_bytes(rq)) {
		ata_fail(cmd, ATA_ABORTED);
		return 0;
	}
	if (ata_transfer(d, rq, write, lba << SECTOR_SHIFT))
		ata_fail(cmd, write ? ATA_ABORTED : ATA_UNC);
	/*
	 * With its write cache off the drive reports a write done once it
	 * is on the medium: for an image, once fdatasync has returned.  No
	 * FLUSH CACHE will come (the queue has no volatile cache).
	 */
	else if (write && !d->write_cache && media_flush(d->media))
		ata_fail(cmd, ATA_ABORTED);
	return timing_service_ns(&d->timing.base, op, lba,
				 (uint32_t)(count << SECTOR_SHIFT));
}
