// SPDX-License-Identifier: GPL-2.0
/*
 * ide-cd, after drivers/ide/ide-cd.c with seed 009: an ATAPI CD-ROM with
 * 2048-byte blocks, read-only.
 *
 *  - The prep step turns every fs request into a READ_10 packet
 *    (ide_cdrom_prep_fs).
 *  - A command that ends in CHECK CONDITION is followed by a REQUEST SENSE
 *    from the reserved tag, at the head of the queue (ide-atapi.c).  The
 *    sense decides what happens to the failed request.
 *  - NOT READY fails a read ("tray open", as cdrom_decode_status says
 *    whatever the reason, a drive spinning up included); only a write
 *    would take "breathers" (ide_cd_breathe: requeue, and kick the
 *    requeue list 1 ms later), and no write reaches this read-only drive.
 *  - The eject, insert and media_error faults, and the media attribute.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ide.h"
#include "ide-dev.h"
#include "../../server/mq/log.h"

static bool blk_rq_is_passthrough(const struct request *rq)
{
	return req_op(rq) == REQ_OP_DRV_IN || req_op(rq) == REQ_OP_DRV_OUT;
}

/* standard prep_rq_fn that builds 10 byte cmds */
static int ide_cdrom_prep_fs(struct mq_queue *q, struct request *rq)
{
	unsigned int hard_sect = q->limits.logical_block_size;
	uint64_t block = blk_rq_pos(rq) / (hard_sect >> SECTOR_SHIFT);
	uint32_t blocks = blk_rq_sectors(rq) / (hard_sect >> SECTOR_SHIFT);
	struct ide_cmd *cmd = mq_rq_to_pdu(rq);

	memset(cmd->cmd, 0, sizeof(cmd->cmd));
	if (op_is_write(req_op(rq)))
		cmd->cmd[0] = GPCMD_WRITE_10;
	else
		cmd->cmd[0] = GPCMD_READ_10;

	/*
	 * fill in lba
	 */
	cmd->cmd[2] = (block >> 24) & 0xff;
	cmd->cmd[3] = (block >> 16) & 0xff;
	cmd->cmd[4] = (block >> 8) & 0xff;
	cmd->cmd[5] = block & 0xff;

	/*
	 * and transfer length
	 */
	cmd->cmd[7] = (blocks >> 8) & 0xff;
	cmd->cmd[8] = blocks & 0xff;
	cmd->cmd_len = 10;
	return 0;
}

static int ide_cdrom_prep_fn(struct ide_drive *drive, struct request *rq)
{
	if (!blk_rq_is_passthrough(rq))
		return ide_cdrom_prep_fs(drive->queue, rq);
	/* Our own packets (REQUEST SENSE) are built by ide_prep_sense. */
	return 0;
}

/*
 * A write the drive is not ready for: take a breather, for up to
 * ATAPI_WAIT_WRITE_BUSY (10 s), as Linux does for writes only.  No write
 * reaches this read-only drive (cdrom_start_rw refuses it), so none does
 * here; kept as the seed has it.
 */
static int ide_cd_breathe(struct ide_drive *drive, struct request *rq)
{
	struct ide_cmd *cmd = mq_rq_to_pdu(rq);
	struct optical_params *op = &drive->cd->dev->timing.p;
	uint64_t now = timing_now_ns();

	if (!cmd->breathe_deadline_ns)
		cmd->breathe_deadline_ns =
			now + ATAPI_WAIT_BUSY_MS * TIMING_NSEC_PER_MSEC +
			mq_device_delay_ns(drive->mdev,
					   op->spinup_ms *
						   TIMING_NSEC_PER_MSEC);
	if (now > cmd->breathe_deadline_ns)
		return 0;

	/*
	 * take a breather
	 */
	atomic_fetch_add(&drive->cd->breathers, 1);
	mq_requeue_request(rq, false);
	mq_delay_kick_requeue_list(drive->queue, IDE_BREATHE_DELAY);
	return 1;
}

static const char *ide_cd_op(const struct request *rq)
{
	return op_is_write(req_op(rq)) ? "write" : "read";
}

/*
 * What the sense says about the failed request: retry it, or end it
 * with an error and a log line that says why (cdrom_decode_status,
 * cdrom_log_sense).
 */
static void ide_cd_complete_failed_rq(struct ide_drive *drive,
				      struct request *rq, const uint8_t *sense)
{
	struct ide_cmd *cmd = mq_rq_to_pdu(rq);
	uint8_t key = SENSE_KEY(sense), asc = SENSE_ASC(sense);
	uint8_t ascq = SENSE_ASCQ(sense);

	atomic_store(&drive->cd->last_sense,
		     (unsigned int)key << 16 | (unsigned int)asc << 8 | ascq);

	switch (key) {
	case NOT_READY:
		if (op_is_write(req_op(rq))) {
			if (ide_cd_breathe(drive, rq))
				return;
			pr_err("%s: drive not ready after %u ms: write failed "
			       "(sense key 0x%x %s, asc 0x%02x, ascq 0x%02x)",
			       drive->name, ATAPI_WAIT_BUSY_MS, key,
			       ide_sense_key_name(key), asc, ascq);
			break;
		}
		/*
		 * cdrom_decode_status fails a read the drive is not ready
		 * for, and says "tray open" whatever the reason; the sense
		 * here tells the reason too.
		 */
		if (asc == ASC_NO_MEDIUM) {
			pr_err("%s: no medium: read failed (sense key 0x%x %s, "
			       "asc 0x%02x, ascq 0x%02x: tray %s)",
			       drive->name, key, ide_sense_key_name(key), asc,
			       ascq, ascq == 0x02 ? "open" : "closed");
			break;
		}
		pr_err("%s: tray open: read failed (sense key 0x%x %s, asc "
		       "0x%02x, ascq 0x%02x%s)",
		       drive->name, key, ide_sense_key_name(key), asc, ascq,
		       asc == ASC_NOT_READY && ascq == 0x01 ? ": becoming ready"
							    : "");
		break;
	case UNIT_ATTENTION:
		/* Arrange to retry, but give up after ERROR_MAX tries. */
		if (++cmd->result <= IDE_CD_ERROR_MAX) {
			pr_info("%s: unit attention (asc 0x%02x): retrying",
				drive->name, asc);
			ide_requeue_and_plug(drive, rq);
			return;
		}
		goto log;
	case MEDIUM_ERROR:
		atomic_fetch_add(&drive->cd->media_errors, 1);
		pr_err("%s: media error (bad sector): %s failed at block "
		       "%" PRIu64 " (sense key 0x%x %s, asc 0x%02x, "
		       "ascq 0x%02x)",
		       drive->name, ide_cd_op(rq),
		       blk_rq_pos(rq) / (CD_FRAMESIZE >> SECTOR_SHIFT), key,
		       ide_sense_key_name(key), asc, ascq);
		break;
	default:
	log:
		pr_err("%s: command error: %s of block %" PRIu64
		       " failed (sense key 0x%x %s, asc 0x%02x, ascq 0x%02x)",
		       drive->name, ide_cd_op(rq),
		       blk_rq_pos(rq) / (CD_FRAMESIZE >> SECTOR_SHIFT), key,
		       ide_sense_key_name(key), asc, ascq);
		break;
	}
	ide_complete_rq(drive, rq, EIO);
}

/* The REQUEST SENSE is back: free the reserved tag, then decide. */
static ide_startstop_t ide_cd_sense_done(struct ide_drive *drive,
					 struct request *sense_rq)
{
	struct ide_cmd *cmd = mq_rq_to_pdu(sense_rq);
	struct ide_hwif *hwif = drive->hwif;
	uint8_t sense[ATAPI_SENSE_LEN];
	struct request *failed;
	bool ok = !(cmd->status & ATA_ERR);

	memcpy(sense, drive->sense_data, sizeof(sense));
	pthread_mutex_lock(&hwif->lock);
	failed = drive->failed_rq;
	drive->failed_rq = NULL;
	pthread_mutex_unlock(&hwif->lock);

	atomic_fetch_add(&drive->cd->sense_requests, 1);
	if (sense_rq->rq_flags & RQF_RESERVED)
		atomic_fetch_add(&drive->cd->sense_reserved, 1);
	/* ide_cd_free_sense: the reserved tag goes back */
	ide_complete_rq(drive, sense_rq, ok ? 0 : EIO);

	if (!failed)
		return ide_stopped;
	if (!ok) {
		pr_err("%s: request sense failure", drive->name);
		ide_complete_rq(drive, failed, EIO);
		return ide_stopped;
	}
	ide_cd_complete_failed_rq(drive, failed, sense);
	return ide_stopped;
}

static ide_startstop_t cdrom_newpc_intr(struct ide_drive *drive,
					struct request *rq)
{
	struct ide_cmd *cmd = mq_rq_to_pdu(rq);

	if (cmd->type == ATA_PRIV_PC && cmd->cmd[0] == GPCMD_REQUEST_SENSE)
		return ide_cd_sense_done(drive, rq);

	if (!(cmd->status & ATA_ERR)) {
		ide_complete_rq(drive, rq, 0);
		return ide_stopped;
	}

	/* CHECK CONDITION: the sense key is in the error register. */
	pr_debug("%s: check condition: error=0x%02x (%s)", drive->name,
		 cmd->error, ide_sense_key_name(cmd->error >> 4));
	if (ide_queue_sense_rq(drive, rq)) {
		atomic_fetch_add(&drive->cd->sense_unqueued, 1);
		ide_complete_rq(drive, rq, EIO);
	}
	return ide_stopped;
}

static int cdrom_start_rw(struct ide_drive *drive, struct request *rq)
{
	unsigned int sectors_per_frame =
		drive->queue->limits.logical_block_size >> SECTOR_SHIFT;

	if (op_is_write(req_op(rq))) {
		/* disk has become write protected */
		pr_err("%s: write to a read-only CD-ROM refused, sector "
		       "%" PRIu64,
		       drive->name, blk_rq_pos(rq));
		return EPERM;
	}

	/* fs requests *must* be hardware frame aligned */
	if ((blk_rq_pos(rq) & (sectors_per_frame - 1)) ||
	    (blk_rq_sectors(rq) & (sectors_per_frame - 1))) {
		pr_err("%s: misaligned request: sector %" PRIu64 ", %u sectors",
		       drive->name, blk_rq_pos(rq), blk_rq_sectors(rq));
		return EIO;
	}
	return 0;
}

ide_startstop_t ide_cd_do_request(struct ide_drive *drive, struct request *rq)
{
	struct ide_cmd *cmd = mq_rq_to_pdu(rq);
	uint64_t ns;
	int err;

	if (!blk_rq_is_passthrough(rq)) {
		if (req_op(rq) != REQ_OP_READ && req_op(rq) != REQ_OP_WRITE) {
			err = req_op(rq) == REQ_OP_FLUSH ? 0 : EOPNOTSUPP;
			goto out_end;
		}
		err = cdrom_start_rw(drive, rq);
		if (err)
			goto out_end;
	}

	ide_trace_cmd(drive, cmd->cmd[0], blk_rq_pos(rq));
	ns = atapi_dev_exec(drive->cd->dev, cmd, rq);
	ide_issue(drive, rq, cdrom_newpc_intr, ns);
	return ide_started;

out_end:
	ide_complete_rq(drive, rq, err);
	return ide_stopped;
}

/* ---- faults and attributes ---------------------------------------- */

int ide_cd_eject(struct ide_drive *drive)
{
	atapi_dev_eject(drive->cd->dev);
	set_capacity(&drive->disk, 0);
	pr_info("%s: medium ejected, tray open", drive->name);
	return 0;
}

int ide_cd_insert(struct ide_drive *drive, const char *path, struct mq_err *e)
{
	uint64_t blocks;
	int err;

	err = atapi_dev_insert(drive->cd->dev, path, &blocks, e);
	if (err)
		return err;
	set_capacity(&drive->disk, blocks * (CD_FRAMESIZE >> SECTOR_SHIFT));
	pr_info("%s: medium inserted: %s, %" PRIu64 " blocks; spinning up",
		drive->name, atapi_dev_medium_name(drive->cd->dev), blocks);
	return 0;
}

static int ide_cd_fault_eject(struct gendisk *disk, const char *value,
			      struct mq_err *e)
{
	return ide_cd_eject(disk->private_data);
}

static int ide_cd_fault_insert(struct gendisk *disk, const char *value,
			       struct mq_err *e)
{
	return ide_cd_insert(disk->private_data, value, e);
}

static int ide_cd_fault_media_error(struct gendisk *disk, const char *value,
				    struct mq_err *e)
{
	struct ide_drive *drive = disk->private_data;
	uint64_t lba = UINT64_MAX;
	char *end;
	int err;

	if (value && value[0]) {
		errno = 0;
		lba = strtoull(value, &end, 0);
		if (errno || *end || lba == UINT64_MAX) {
			mq_err_set(e, "takes a block number, or nothing for "
				      "the next read");
			return EINVAL;
		}
	}
	err = atapi_dev_media_error(drive->cd->dev, lba);
	if (err) {
		mq_err_set(e,
			   "%d blocks are unreadable already, the most "
			   "it keeps",
			   ATAPI_MAX_BAD);
		return err;
	}
	if (lba == UINT64_MAX)
		pr_info("%s: media_error fault: the next read fails",
			drive->name);
	else
		pr_info("%s: media_error fault: block %" PRIu64
			" is unreadable",
			drive->name, lba);
	return 0;
}

static const struct disk_fault ide_cd_faults[] = {
	{"eject", "open the tray and remove the medium", ide_cd_fault_eject},
	{"insert", "load PATH (default: the last medium) and spin up",
	 ide_cd_fault_insert},
	{"media_error",
	 "make block LBA unreadable (default: fail the next read)",
	 ide_cd_fault_media_error},
	{NULL},
};

static int ide_cd_show_media(struct gendisk *disk, char *buf, size_t len)
{
	struct ide_drive *drive = disk->private_data;

	return atapi_dev_show_media(drive->cd->dev, buf, len);
}

static int ide_cd_show_sense(struct gendisk *disk, char *buf, size_t len)
{
	struct ide_drive *drive = disk->private_data;
	unsigned int s = atomic_load(&drive->cd->last_sense);

	return snprintf(buf, len, "key=0x%x asc=0x%02x ascq=0x%02x (%s)",
			s >> 16, (s >> 8) & 0xff, s & 0xff,
			ide_sense_key_name((uint8_t)(s >> 16)));
}

static int ide_cd_show_stats(struct gendisk *disk, char *buf, size_t len)
{
	struct ide_drive *drive = disk->private_data;
	struct cdrom_info *cd = drive->cd;

	return snprintf(buf, len,
			"READ_10=%lu REQUEST_SENSE=%lu sense_requests=%lu "
			"breathers=%lu media_errors=%lu",
			atomic_load(&drive->cmds[GPCMD_READ_10]),
			atomic_load(&drive->cmds[GPCMD_REQUEST_SENSE]),
			atomic_load(&cd->sense_requests),
			atomic_load(&cd->breathers),
			atomic_load(&cd->media_errors));
}

static const struct disk_attr ide_cd_attrs[] = {
	{"media", ide_cd_show_media},
	{"sense", ide_cd_show_sense},
	{"commands", ide_cd_show_stats},
	{"port_busy", ide_show_port_busy},
	{NULL},
};

int ide_cdrom_setup(struct ide_drive *drive, struct mq_params *p,
		    const char *prefix, struct mq_err *e)
{
	struct queue_limits *lim = &drive->queue->limits;
	struct optical_params op;
	struct media_open_args a = {
		.block_size = CD_FRAMESIZE,
		.read_only = true,
		.name = drive->name,
	};
	struct media *m;
	const char *image = NULL;
	char spec[PATH_MAX + 8];
	char k[64];
	int err;

	if (optical_params_read(&op, p, prefix, e) ||
	    ide_read_identity(drive, p, prefix, "MQBLK CD-ROM", e))
		return -1;
	/* image=PATH (or media=STORE), or an empty tray. */
	if (mq_device_open_media(drive->mdev, p, prefix, "image", NULL, &a, &m,
				 e)) {
		char msg[sizeof(e->msg)];

		memcpy(msg, e->msg, sizeof(msg));
		return mq_err_set(e, "%s: %s", drive->name, msg);
	}
	spec[0] = '\0';
	if (m) {
		image = mq_params_peek(
			p, mq_param_key(k, sizeof(k), prefix, "image"));
		if (image)
			snprintf(spec, sizeof(spec), "file:%s", image);
		else
			snprintf(spec, sizeof(spec), "%s",
				 mq_params_peek(p,
						mq_param_key(k, sizeof(k),
							     prefix, "media")));
		image = spec;
	}

	drive->cd = calloc(1, sizeof(*drive->cd));
	if (!drive->cd) {
		media_close(m);
		return mq_err_set(e, "%s: out of memory", drive->name);
	}
	drive->cd->dev = calloc(1, sizeof(*drive->cd->dev));
	if (!drive->cd->dev) {
		media_close(m);
		free(drive->cd);
		drive->cd = NULL;
		return mq_err_set(e, "%s: out of memory", drive->name);
	}
	err = atapi_dev_init(drive->cd->dev, drive->mdev, m, spec, &op);
	if (err) {
		media_close(m);
		free(drive->cd->dev);
		free(drive->cd);
		drive->cd = NULL;
		return mq_err_set(e, "%s: %s: %s", drive->name, spec,
				  strerror(err));
	}
	drive->prep_rq = ide_cdrom_prep_fn;

	lim->logical_block_size = CD_FRAMESIZE;
	lim->physical_block_size = CD_FRAMESIZE;
	lim->rotational = true;
	lim->write_cache = false;
	lim->fua = false;

	set_capacity(&drive->disk, drive->cd->dev->nr_blocks *
					   (CD_FRAMESIZE >> SECTOR_SHIFT));
	drive->disk.read_only = true;
	drive->disk.attrs = ide_cd_attrs;
	drive->disk.faults = ide_cd_faults;
	snprintf(drive->disk.description, sizeof(drive->disk.description),
		 "%s: %s, ATAPI %uX CD-ROM drive, 2048-byte blocks, "
		 "read-only, %s (fw %s, serial %s)",
		 drive->name, drive->model, op.speed,
		 image ? "medium loaded" : "no medium (empty tray)",
		 drive->firmware, drive->serial);
	if (!image)
		pr_warn("%s: no medium: %simage= not given, the tray is empty "
			"until fault/insert loads one",
			drive->name, prefix);
	return 0;
}

void ide_cd_release(struct ide_drive *drive)
{
	if (!drive->cd)
		return;
	atapi_dev_destroy(drive->cd->dev);
	free(drive->cd->dev);
	free(drive->cd);
	drive->cd = NULL;
}
