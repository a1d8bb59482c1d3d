// SPDX-License-Identifier: GPL-2.0
/*
 * ide_queue_rq and the channel, after drivers/ide/ide-io.c with seed 009.
 *
 * A channel runs one command at a time.  queue_rq takes the channel
 * (ide_lock_host) or returns DEV_RESOURCE; the command goes to the
 * modelled drive, and the drive's interrupt comes on the channel's irq
 * thread after the modelled service time.  The handler ends the request
 * and releases the channel, which reruns the queues of the drives it
 * refused: each drive has its own tag set, so the core's restart of a
 * set never reaches the other drive (ide_unlock_host does it, as
 * ide_requeue_and_plug does in Linux).
 *
 * When both drives want the channel, it is handed to the one that did not
 * just have it, so two busy drives alternate; the hand-off lapses after
 * IDE_HANDOFF_MS, so a drive that stops asking cannot hold the other up.
 */
#include <errno.h>
#include <inttypes.h>
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

int ide_lock_host(struct ide_hwif *hwif, struct ide_drive *drive)
{
	uint64_t now, wait_ms = 0;
	int rc = 0;

	pthread_mutex_lock(&hwif->lock);
	if (hwif->busy) {
		rc = 1;
	} else if (hwif->handoff && hwif->handoff != drive) {
		now = timing_now_ns();
		if (now < hwif->handoff_deadline_ns) {
			rc = 1;
			wait_ms = (hwif->handoff_deadline_ns - now) /
					  TIMING_NSEC_PER_MSEC +
				  1;
		}
	}
	drive->lapsed = false;
	if (rc) {
		drive->waiting = true;
	} else {
		/* A hand-off that lapsed was to a drive that stopped asking. */
		if (hwif->handoff && hwif->handoff != drive) {
			hwif->handoff->waiting = false;
			hwif->handoff->lapsed = true;
		}
		hwif->busy = true;
		hwif->cur_dev = drive;
		hwif->handoff = NULL;
		drive->waiting = false;
	}
	pthread_mutex_unlock(&hwif->lock);
	/* Refused for the other drive's sake: ask again when it lapses. */
	if (wait_ms)
		mq_delay_run_hw_queue(ide_hctx(drive), (unsigned long)wait_ms);
	return rc;
}

/*
 * A drive wants the channel when it was refused it, or when it has I/O
 * outstanding that is not on the channel: its queue may not have asked
 * yet (its tag came back a moment ago, its worker has not run), and a
 * drive that is quicker to ask must not keep the channel meanwhile.
 */
static bool ide_wants_host(struct ide_drive *drive)
{
	return drive->waiting ||
	       (!drive->lapsed && atomic_load(&drive->queue->q_usage) > 0);
}

void ide_unlock_host(struct ide_hwif *hwif)
{
	struct ide_drive *kick[MAX_DRIVES], *owner, *d;
	unsigned int i, n = 0, first;

	pthread_mutex_lock(&hwif->lock);
	owner = hwif->cur_dev;
	hwif->busy = false;
	hwif->cur_dev = NULL;
	hwif->rq = NULL;
	/* The next drive after the owner that waits gets the channel. */
	first = owner ? owner->dn + 1 : 0;
	for (i = 0; i < MAX_DRIVES; i++) {
		d = hwif->devices[(first + i) % MAX_DRIVES];
		if (d && d != owner && ide_wants_host(d)) {
			hwif->handoff = d;
			hwif->handoff_deadline_ns =
				timing_now_ns() +
				IDE_HANDOFF_MS * TIMING_NSEC_PER_MSEC;
			atomic_fetch_add(&hwif->handoffs, 1);
			break;
		}
	}
	for (i = 0; i < MAX_DRIVES; i++) {
		d = hwif->devices[i];
		/* Kicked, it still waits until it has the channel. */
		if (d && (d->waiting || d == hwif->handoff))
			kick[n++] = d;
	}
	pthread_mutex_unlock(&hwif->lock);

	for (i = 0; i < n; i++)
		mq_run_hw_queue(ide_hctx(kick[i]), true);
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
	struct timespec due;

	/*
	 * The timer was set early by the slack; wait out the rest here.  The
	 * channel runs one command at a time, so its irq thread has nothing
	 * else to do meanwhile.
	 */
	if (cmd->due_ns > timing_now_ns()) {
		due.tv_sec = (time_t)(cmd->due_ns / TIMING_NSEC_PER_SEC);
		due.tv_nsec = (long)(cmd->due_ns % TIMING_NSEC_PER_SEC);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due,
				       NULL) == EINTR)
			;
	}
	cmd->handler = NULL;
	/* The request may be gone once the handler returns. */
	if (handler(drive, mq_rq_from_pdu(cmd)) == ide_stopped)
		ide_unlock_host(hwif);
}

void ide_issue(struct ide_drive *drive, struct request *rq,
	       ide_handler_t *handler, uint64_t service_ns)
{
	struct ide_cmd *cmd = mq_rq_to_pdu(rq);

	uint64_t delay = mq_device_delay_ns(drive->mdev, (double)service_ns);

	cmd->handler = handler;
	cmd->due_ns = delay ? timing_now_ns() + delay : 0;
	/* Early by the timer's slack: ide_intr waits for due_ns exactly. */
	irq_raise(drive->hwif->irq, &cmd->work, ide_intr,
		  delay > IDE_TIMER_SLACK_NS ? delay - IDE_TIMER_SLACK_NS : 0);
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
	bool behind_sense;

	if (!(rq->rq_flags & RQF_DONTPREP))
		ide_initialize_rq(drive, rq);

	/*
	 * The drive's sense data belongs to the command that failed: nothing
	 * else may reach the drive before its REQUEST SENSE has.
	 */
	pthread_mutex_lock(&hwif->lock);
	behind_sense = drive->sense_rq && drive->sense_rq != rq;
	pthread_mutex_unlock(&hwif->lock);
	if (behind_sense) {
		ide_requeue_and_plug(drive, rq);
		return MQ_QRC_OK;
	}

	if (ide_lock_host(hwif, drive)) {
		atomic_fetch_add(&drive->refused, 1);
		return MQ_QRC_DEV_RESOURCE;
	}

	mq_start_request(rq);
	pthread_mutex_lock(&hwif->lock);
	hwif->rq = rq;
	pthread_mutex_unlock(&hwif->lock);

	if (start_request(drive, rq) == ide_stopped)
		ide_unlock_host(hwif);
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
