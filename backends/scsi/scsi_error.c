// SPDX-License-Identifier: GPL-2.0
/*
 * Sense data and what the mid layer makes of a result, after Linux 6.6's
 * drivers/scsi/scsi_error.c (scsi_decide_disposition, scsi_check_sense),
 * scsi_common.c (scsi_normalize_sense, scsi_build_sense) and scsi_lib.c's
 * scsi_result_to_blk_status.
 */
#include <errno.h>
#include <string.h>

#include "scsi.h"
#include "../../server/mq/log.h"

bool scsi_normalize_sense(const uint8_t *sense, unsigned int len,
			  struct scsi_sense_hdr *sshdr)
{
	memset(sshdr, 0, sizeof(*sshdr));
	if (!sense || !len)
		return false;
	sshdr->response_code = sense[0] & 0x7f;
	if ((sshdr->response_code & 0x70) != 0x70)
		return false;
	if (sshdr->response_code >= 0x72) { /* descriptor format */
		if (len > 1)
			sshdr->sense_key = sense[1] & 0xf;
		if (len > 2)
			sshdr->asc = sense[2];
		if (len > 3)
			sshdr->ascq = sense[3];
	} else { /* fixed format */
		if (len > 2)
			sshdr->sense_key = sense[2] & 0xf;
		if (len > 7) {
			unsigned int end = 8u + sense[7];

			if (len > end)
				len = end;
			if (len > 12)
				sshdr->asc = sense[12];
			if (len > 13)
				sshdr->ascq = sense[13];
		}
	}
	return true;
}

/* The INFORMATION field: the failing LBA of a MEDIUM ERROR. */
bool scsi_get_sense_info_fld(const uint8_t *sense, unsigned int len,
			     uint64_t *info)
{
	unsigned int i, end;

	if (len < 8)
		return false;
	switch (sense[0] & 0x7f) {
	case 0x70:
	case 0x71:
		if (!(sense[0] & 0x80)) /* VALID */
			return false;
		*info = get_be32(sense + 3);
		return true;
	case 0x72:
	case 0x73:
		end = 8u + sense[7];
		if (end > len)
			end = len;
		for (i = 8; i + 1 < end; i += 2u + sense[i + 1]) {
			if (sense[i] == 0 && sense[i + 1] == 0x0a &&
			    i + 12 <= end) {
				*info = get_be64(sense + i + 4);
				return true;
			}
		}
		return false;
	default:
		return false;
	}
}

void scsi_build_sense(struct scsi_cmnd *cmd, bool desc, uint8_t key,
		      uint8_t asc, uint8_t ascq)
{
	uint8_t *b = cmd->sense_buffer;

	memset(b, 0, SCSI_SENSE_BUFFERSIZE);
	if (desc) {
		b[0] = 0x72;
		b[1] = key;
		b[2] = asc;
		b[3] = ascq;
		b[7] = 0;
	} else {
		b[0] = 0x70;
		b[2] = key;
		b[7] = 0x0a;
		b[12] = asc;
		b[13] = ascq;
	}
	cmd->result = SAM_STAT_CHECK_CONDITION;
}

static void set_host_byte(struct scsi_cmnd *cmd, int byte)
{
	cmd->result = (cmd->result & 0xff00ffff) | (byte << 16);
}

static void set_scsi_ml_byte(struct scsi_cmnd *cmd, int byte)
{
	cmd->result = (cmd->result & 0xffff00ff) | (byte << 8);
}

/* scsi_cmd_retry_allowed */
static bool scsi_cmd_retry_allowed(struct scsi_cmnd *cmd)
{
	return ++cmd->retries <= cmd->allowed;
}

/*
 * scsi_noretry_cmd: a passthrough command with a CHECK CONDITION is its
 * caller's to retry; a timed-out one is not retried either.
 */
static bool scsi_noretry_cmd(struct scsi_cmnd *cmd)
{
	struct request *rq = scsi_cmd_to_rq(cmd);

	if (host_byte(cmd->result) == DID_TIME_OUT ||
	    status_byte(cmd->result) == SAM_STAT_CHECK_CONDITION)
		return blk_rq_is_passthrough(rq);
	return false;
}

/* scsi_check_sense, for the sense keys scsi_debug can send. */
static enum scsi_disposition scsi_check_sense(struct scsi_cmnd *cmd)
{
	struct scsi_sense_hdr sshdr;

	if (!scsi_normalize_sense(cmd->sense_buffer, SCSI_SENSE_BUFFERSIZE,
				  &sshdr))
		return FAILED; /* no valid sense data */
	switch (sshdr.sense_key) {
	case NO_SENSE:
	case RECOVERED_ERROR:
		return SUCCESS;
	case ABORTED_COMMAND:
		if (sshdr.asc == 0x10) /* DIF */
			return SUCCESS;
		return NEEDS_RETRY;
	case NOT_READY:
	case UNIT_ATTENTION:
		/* becoming ready: retry; anything else is sd's to judge */
		if (sshdr.asc == 0x04 && sshdr.ascq == 0x01)
			return NEEDS_RETRY;
		return SUCCESS;
	case ILLEGAL_REQUEST:
		if (sshdr.asc == 0x20 || sshdr.asc == 0x21 ||
		    sshdr.asc == 0x22 || sshdr.asc == 0x24 ||
		    sshdr.asc == 0x26 || sshdr.asc == 0x27)
			set_scsi_ml_byte(cmd, SCSIML_STAT_TGT_FAILURE);
		return SUCCESS;
	case MEDIUM_ERROR:
		if (sshdr.asc == 0x11 || sshdr.asc == 0x13 ||
		    sshdr.asc == 0x14) {
			set_scsi_ml_byte(cmd, SCSIML_STAT_MED_ERROR);
			return SUCCESS;
		}
		return NEEDS_RETRY;
	case HARDWARE_ERROR:
		set_scsi_ml_byte(cmd, SCSIML_STAT_TGT_FAILURE);
		return SUCCESS;
	default:
		return SUCCESS;
	}
}

enum scsi_disposition scsi_decide_disposition(struct scsi_cmnd *cmd)
{
	enum scsi_disposition rtn;

	if (atomic_load(&cmd->device->sdev_state) == SDEV_OFFLINE)
		return SUCCESS;
	switch (host_byte(cmd->result)) {
	case DID_OK:
		break;
	case DID_ABORT:
		if (cmd->eh_abort_scheduled) {
			set_host_byte(cmd, DID_TIME_OUT);
			return SUCCESS;
		}
		return SUCCESS;
	case DID_NO_CONNECT:
	case DID_BAD_TARGET:
		return SUCCESS;
	case DID_SOFT_ERROR:
		goto maybe_retry;
	case DID_IMM_RETRY:
		return NEEDS_RETRY;
	case DID_REQUEUE:
		return ADD_TO_MLQUEUE;
	case DID_ERROR:
	case DID_BUS_BUSY:
		goto maybe_retry;
	case DID_TIME_OUT:
		if (cmd->cmnd[0] == TEST_UNIT_READY || cmd->cmnd[0] == INQUIRY)
			return SUCCESS;
		return FAILED;
	case DID_RESET:
		return SUCCESS;
	default:
		return FAILED;
	}

	switch (status_byte(cmd->result)) {
	case SAM_STAT_TASK_SET_FULL:
	case SAM_STAT_BUSY:
		/* scsi_handle_queue_full only ramps a tracked queue depth */
		return ADD_TO_MLQUEUE;
	case SAM_STAT_GOOD:
		return SUCCESS;
	case SAM_STAT_CHECK_CONDITION:
		rtn = scsi_check_sense(cmd);
		if (rtn == NEEDS_RETRY)
			goto maybe_retry;
		return rtn;
	default:
		return FAILED;
	}

maybe_retry:
	if (scsi_cmd_retry_allowed(cmd) && !scsi_noretry_cmd(cmd))
		return NEEDS_RETRY;
	return SUCCESS;
}

/*
 * scsi_result_to_blk_status, then blk_status_to_errno: BLK_STS_MEDIUM is
 * ENODATA, BLK_STS_TARGET EREMOTEIO, the rest of the failures EIO.
 */
int scsi_result_to_errno(int result)
{
	switch (scsi_ml_byte(result)) {
	case SCSIML_STAT_MED_ERROR:
		return ENODATA;
	case SCSIML_STAT_TGT_FAILURE:
		return EREMOTEIO;
	default:
		break;
	}
	if (host_byte(result) == DID_OK && status_byte(result) == SAM_STAT_GOOD)
		return 0;
	return EIO;
}

/* ------------------------------------------------------------------ */
/* error handling                                                      */

/*
 * scsi_eh_flush_done_q: a command the error handler recovered is sent
 * again while the device is online and its retries last; else it
 * finishes, as a timeout if nothing else was said.
 */
static void scsi_eh_finish(struct scsi_cmnd *cmd)
{
	struct scsi_device *sdev = cmd->device;

	if (atomic_load(&sdev->sdev_state) != SDEV_OFFLINE &&
	    !scsi_noretry_cmd(cmd) && scsi_cmd_retry_allowed(cmd)) {
		pr_info("%s: flush retry cmd 0x%02x (retry %d of %d)",
			sdev->request_queue->name, cmd->cmnd[0], cmd->retries,
			cmd->allowed);
		__scsi_queue_insert(cmd, SCSI_MLQUEUE_EH_RETRY, true);
		return;
	}
	if (!cmd->result)
		cmd->result = DID_TIME_OUT << 16;
	pr_info("%s: flush finish cmd 0x%02x, result 0x%06x",
		sdev->request_queue->name, cmd->cmnd[0],
		(unsigned int)cmd->result);
	scsi_finish_command(cmd);
}

/*
 * scsi_eh_ready_devs, for one command: a device reset, then a host
 * reset, each followed by TEST UNIT READY; a device that answers none
 * goes offline (scsi_eh_offline_sdevs).  Target and bus resets are
 * skipped: scsi_debug's do what its device and host resets do.
 */
static void scsi_eh_ready_devs(struct scsi_cmnd *cmd)
{
	struct scsi_device *sdev = cmd->device;
	const struct scsi_host_template *t = sdev->host->hostt;
	const char *name = sdev->request_queue->name;
	int rtn;

	atomic_fetch_add(&sdev->eh_device_resets, 1);
	rtn = t->eh_device_reset_handler(cmd);
	pr_warn("%s: scsi_eh: device reset %s", name,
		rtn == SUCCESS ? "succeeded" : "failed");
	if (rtn == SUCCESS && t->eh_test_unit_ready(sdev)) {
		scsi_eh_finish(cmd);
		return;
	}
	atomic_fetch_add(&sdev->eh_host_resets, 1);
	rtn = t->eh_host_reset_handler(cmd);
	pr_warn("%s: scsi_eh: host reset %s", name,
		rtn == SUCCESS ? "succeeded" : "failed");
	if (rtn == SUCCESS && t->eh_test_unit_ready(sdev)) {
		scsi_eh_finish(cmd);
		return;
	}
	if (atomic_exchange(&sdev->sdev_state, SDEV_OFFLINE) != SDEV_OFFLINE) {
		atomic_fetch_add(&sdev->eh_offlined, 1);
		pr_err("%s: Device offlined - not ready after error recovery",
		       name);
	}
	scsi_eh_finish(cmd);
}

/*
 * scsi_timeout: the LLD has not answered.  The first time, abort the
 * command (scsi_abort_command, scmd_eh_abort_handler) and send it again
 * if it may be retried; a command that times out again after its abort,
 * or whose abort fails, goes to the error handler.  Runs on the timeout
 * work: the error handler runs there, one command at a time (Linux waits
 * for every command of the host to fail or finish first).
 */
enum mq_eh_timer_return scsi_timeout(struct request *rq)
{
	struct scsi_cmnd *cmd = mq_rq_to_pdu(rq);
	struct scsi_device *sdev = cmd->device;
	const struct scsi_host_template *t = sdev->host->hostt;
	const char *name = sdev->request_queue->name;

	/* The LLD completed it meanwhile: its completion stands. */
	if (atomic_exchange(&cmd->complete, true))
		return MQ_EH_DONE;
	atomic_fetch_add(&sdev->timeouts, 1);
	pr_warn("%s: cmd 0x%02x timed out", name, cmd->cmnd[0]);
	if (atomic_load(&sdev->sdev_state) == SDEV_OFFLINE) {
		cmd->result = DID_TIME_OUT << 16;
		scsi_finish_command(cmd);
		return MQ_EH_DONE;
	}
	if (!cmd->eh_abort_scheduled) {
		cmd->eh_abort_scheduled = true;
		atomic_fetch_add(&sdev->eh_aborts, 1);
		if (t->eh_abort_handler(cmd) == SUCCESS) {
			pr_warn("%s: aborting command: success", name);
			cmd->result = DID_TIME_OUT << 16;
			if (!scsi_noretry_cmd(cmd) &&
			    scsi_cmd_retry_allowed(cmd)) {
				pr_info("%s: retry aborted command", name);
				__scsi_queue_insert(cmd, SCSI_MLQUEUE_EH_RETRY,
						    true);
			} else {
				pr_info("%s: finish aborted command", name);
				scsi_finish_command(cmd);
			}
			return MQ_EH_DONE;
		}
		pr_warn("%s: aborting command: failed", name);
	}
	cmd->result = DID_TIME_OUT << 16;
	scsi_eh_ready_devs(cmd);
	return MQ_EH_DONE;
}
