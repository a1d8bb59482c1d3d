// SPDX-License-Identifier: GPL-2.0
/*
 * ide_queue_rq and the channel, after drivers/ide/ide-io.c with seed 009.
 *
 * A channel (port) runs one command at a time.  queue_rq takes the port
 * (ide_lock_port); if the other drive's command, or one of its own, holds
 * it, the request is requeued and the queue plugged for 3 ms
 * (ide_requeue_and_plug, "the old plug delay"), and it tries again then.
 * The command goes to the modelled drive, and the drive's interrupt comes
 * on the channel's irq thread after the modelled service time.  The
 * handler ends the request, the port is released, and the drive's own
 * queue is run again 3 ms later, as ide_intr does in the seed.
 *
 * ide_lock_host only matters for hosts whose channels are serialized
 * (IDE_HFLAG_SERIALIZE, chipsets whose two channels share registers);
 * none is modelled, so the channels of channels=2 are independent and
 * there is no host lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ide.h"
#include "../../server/mq/log.h"

static struct mq_hw_ctx *ide_hctx(struct ide_drive *drive)
{
	return drive->queue->queue_hw_ctx[0];
}

/* ide_end_rq, as seed 009 has it: update, then end. */
static int ide_end_rq(struct ide_drive *drive, struct request *rq, int error,
		      unsigned int nr_bytes)
{
	if (nr_bytes && mq_update_request(rq, error, nr_bytes))
		return 1;
	pthread_mutex_lock(&drive->hwif->lock);
	if (rq == drive->sense_rq)
		drive->sense_rq = NULL;
	pthread_mutex_unlock(&drive->hwif->lock);
	__mq_end_request(rq, error);
	return 0;
}

void ide_complete_rq(struct ide_drive *drive, struct request *rq, int error)
{
	ide_end_rq(drive, rq, error, blk_rq_bytes(rq));
}

void ide_trace_cmd(struct ide_drive *drive, uint8_t op, uint64_t sector)
{
	struct ide_hwif *hwif = drive->hwif;

	atomic_fetch_add(&drive->cmds[op], 1);
	pthread_mutex_lock(&hwif->lock);
	drive->trace[drive->trace_n % IDE_TRACE_LEN] =
		(struct ide_trace_ent){op, sector};
	drive->trace_n++;
	pthread_mutex_unlock(&hwif->lock);
}

/* ide_lock_port: 0 if the port is now ours, 1 if it is busy. */
int ide_lock_port(struct ide_hwif *hwif)
{
	int rc;

	pthread_mutex_lock(&hwif->lock);
	rc = hwif->busy ? 1 : 0;
	hwif->busy = true;
	pthread_mutex_unlock(&hwif->lock);
	return rc;
}

void ide_unlock_port(struct ide_hwif *hwif)
{
	pthread_mutex_lock(&hwif->lock);
	hwif->busy = false;
	hwif->cur_dev = NULL;
	hwif->rq = NULL;
	pthread_mutex_unlock(&hwif->lock);
}

/* Attribute: how often queue_rq found the port busy and plugged. */
int ide_show_port_busy(struct gendisk *disk, char *buf, size_t len)
{
	struct ide_drive *drive = disk->private_data;

	return snprintf(buf, len, "%lu",
			(unsigned long)atomic_load(&drive->port_busy));
}

void ide_requeue_and_plug(struct ide_drive *drive, struct request *rq)
{
	struct mq_queue *q = drive->queue;

	/* Use 3ms as that was the old plug delay */
	if (rq) {
		mq_requeue_request(rq, false);
		mq_delay_kick_requeue_list(q, IDE_REQUEUE_DELAY);
	} else {
		mq_delay_run_hw_queue(ide_hctx(drive), IDE_REQUEUE_DELAY);
	}
}

/* The drive's interrupt: run the handler the command left, then let go. */
static void ide_intr(struct irq_work *work)
{
	struct ide_cmd *cmd = container_of(work, struct ide_cmd, work);
	struct ide_drive *drive = cmd->drive;
	struct ide_hwif *hwif = drive->hwif;
	ide_handler_t *handler = cmd->handler;

	cmd->handler = NULL;
	/* The request may be gone once the handler returns. */
	if (handler(drive, mq_rq_from_pdu(cmd)) == ide_stopped) {
		ide_unlock_port(hwif);
		/* ide_intr's plug_device: run the drive's queue in 3 ms */
		ide_requeue_and_plug(drive, NULL);
	}
}

void ide_issue(struct ide_drive *drive, struct request *rq,
	       ide_handler_t *handler, uint64_t service_ns)
{
	struct ide_cmd *cmd = mq_rq_to_pdu(rq);

	uint64_t delay = mq_device_delay_ns(drive->mdev, (double)service_ns);

	cmd->handler = handler;
	irq_raise(drive->hwif->irq, &cmd->work, ide_intr, delay);
}

/* What ide_initialize_rq does at allocation; here at first dispatch. */
static void ide_initialize_rq(struct ide_drive *drive, struct request *rq)
{
	struct ide_cmd *cmd = mq_rq_to_pdu(rq);

	memset(cmd, 0, sizeof(*cmd));
	cmd->drive = drive;
	cmd->type = ATA_PRIV_FS;
	rq->rq_flags |= RQF_DONTPREP;
}

static ide_startstop_t start_request(struct ide_drive *drive,
				     struct request *rq)
{
	if (drive->prep_rq && drive->prep_rq(drive, rq)) {
		/* BLKPREP_KILL */
		ide_complete_rq(drive, rq, EIO);
		return ide_stopped;
	}
	switch (drive->media) {
	case ide_disk:
		return ide_disk_do_request(drive, rq);
	case ide_cdrom:
		return ide_cd_do_request(drive, rq);
	default:
		ide_complete_rq(drive, rq, EIO);
		return ide_stopped;
	}
}

/*
 * Issue a new request to a device.
 */
enum mq_qrc ide_queue_rq(struct mq_hw_ctx *hctx, const struct mq_queue_data *bd)
{
	struct ide_drive *drive = hctx->queue->queuedata;
	struct ide_hwif *hwif = drive->hwif;
	struct request *rq = bd->rq;

	if (!(rq->rq_flags & RQF_DONTPREP))
		ide_initialize_rq(drive, rq);

	mq_start_request(rq);

	if (ide_lock_port(hwif)) {
		/* plug_device: the port is busy; try again in 3 ms */
		atomic_fetch_add(&drive->port_busy, 1);
		ide_requeue_and_plug(drive, rq);
		return MQ_QRC_OK;
	}
	pthread_mutex_lock(&hwif->lock);
	hwif->cur_dev = drive;
	hwif->rq = rq;
	pthread_mutex_unlock(&hwif->lock);

	if (start_request(drive, rq) == ide_stopped)
		ide_unlock_port(hwif);
	return MQ_QRC_OK;
}

/*
 * Seed 009 turns ide_timer_expiry into a no-op: the modelled drive always
 * interrupts, however long time_scale makes it take, so a late command is
 * given more time rather than completed under the drive.
 */
enum mq_eh_timer_return ide_timed_out(struct request *rq)
{
	struct ide_cmd *cmd = mq_rq_to_pdu(rq);

	pr_warn("%s: request (%s, sector %" PRIu64
		") is taking longer than the timeout; still waiting",
		cmd->drive ? cmd->drive->name : rq->q->name,
		req_op_name(req_op(rq)), blk_rq_pos(rq));
	return MQ_EH_RESET_TIMER;
}
