// SPDX-License-Identifier: GPL-2.0
/*
 * REQUEST SENSE, after drivers/ide/ide-atapi.c with seed 009: the sense
 * request comes from the reserved tag (RESERVED | NOWAIT) and goes in at
 * the head of the queue with mq_sched_insert_request() (seed 008), so it
 * is the next command the drive sees.  It serves the failed command that
 * still holds the queue, so it is PREEMPT: a freeze (a scheduler switch)
 * that waits for that command must not refuse the sense that ends it.
 */
#include <errno.h>
#include <string.h>

#include "ide.h"
#include "../../server/mq/log.h"

const char *ide_sense_key_name(uint8_t key)
{
	static const char *const names[] = {
		[NO_SENSE] = "NO SENSE",
		[RECOVERED_ERROR] = "RECOVERED ERROR",
		[NOT_READY] = "NOT READY",
		[MEDIUM_ERROR] = "MEDIUM ERROR",
		[HARDWARE_ERROR] = "HARDWARE ERROR",
		[ILLEGAL_REQUEST] = "ILLEGAL REQUEST",
		[UNIT_ATTENTION] = "UNIT ATTENTION",
		[DATA_PROTECT] = "DATA PROTECT",
		[BLANK_CHECK] = "BLANK CHECK",
		[ABORTED_COMMAND] = "ABORTED COMMAND",
	};

	if (key < sizeof(names) / sizeof(names[0]) && names[key])
		return names[key];
	return "UNKNOWN";
}

/* ide_prep_sense: the packet and the buffer. */
static void ide_prep_sense(struct ide_drive *drive, struct request *sense_rq)
{
	struct ide_cmd *cmd = mq_rq_to_pdu(sense_rq);

	memset(cmd, 0, sizeof(*cmd));
	memset(drive->sense_data, 0, sizeof(drive->sense_data));
	cmd->drive = drive;
	cmd->type = ATA_PRIV_PC;
	cmd->cmd[0] = GPCMD_REQUEST_SENSE;
	cmd->cmd[4] = ATAPI_SENSE_LEN;
	cmd->cmd_len = ATAPI_CDB_LEN;
	cmd->buf = drive->sense_data;
	cmd->buflen = ATAPI_SENSE_LEN;
	sense_rq->special = drive->sense_data;
	/* Prepared: ide_queue_rq must not reinitialise it. */
	sense_rq->rq_flags |= RQF_DONTPREP;
}

int ide_queue_sense_rq(struct ide_drive *drive, struct request *failed_rq)
{
	struct ide_hwif *hwif = drive->hwif;
	struct request *sense_rq;

	sense_rq = mq_alloc_request(drive->queue, REQ_OP_DRV_IN,
				    MQ_REQ_RESERVED | MQ_REQ_NOWAIT |
					    MQ_REQ_PREEMPT);
	if (!sense_rq) {
		pr_warn("%s: error queuing a sense request", drive->name);
		return -ENOMEM;
	}
	ide_prep_sense(drive, sense_rq);

	pthread_mutex_lock(&hwif->lock);
	drive->sense_rq = sense_rq;
	drive->failed_rq = failed_rq;
	pthread_mutex_unlock(&hwif->lock);

	mq_sched_insert_request(sense_rq, true, true, false);
	return 0;
}
