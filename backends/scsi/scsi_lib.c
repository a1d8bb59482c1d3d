// SPDX-License-Identifier: GPL-2.0
/*
 * The scsi-mq request path, after drivers/scsi/scsi_lib.c as seed 002 made
 * it the default: the budget ops hold the per-LUN limit (cmd_per_lun) in
 * the elevator, scsi_queue_rq checks the host-wide limit (can_queue,
 * shared by every hardware queue) and hands the command to the low-level
 * driver, and scsi_done gives both back and reruns the queue if a budget
 * was refused meanwhile.
 *
 * The legacy request path (scsi_request_fn, use_blk_mq=0) is not here:
 * seed 002 made it non-default in 2018 and Linux removed it in 5.0.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "scsi.h"
#include "../../server/mq/log.h"

static void scsi_note_max(atomic_uint *max, unsigned int v)
{
	unsigned int old = atomic_load(max);

	while (v > old && !atomic_compare_exchange_weak(max, &old, v))
		;
}

/*
 * scsi_dev_queue_ready: a budget if fewer than queue_depth are lent and
 * the device is not blocked.  A blocked device (QUEUE FULL, BUSY, a
 * retry) unblocks only with nothing else in flight, after
 * max_device_blocked tries, as 6.6 counts them down.
 */
static bool scsi_dev_queue_ready(struct scsi_device *sdev)
{
	unsigned int busy = atomic_fetch_add(&sdev->device_busy, 1);

	if (busy >= sdev->queue_depth) {
		atomic_fetch_sub(&sdev->device_busy, 1);
		return false;
	}
	if (atomic_load(&sdev->device_blocked)) {
		if (busy > 0 ||
		    atomic_fetch_sub(&sdev->device_blocked, 1) - 1 > 0) {
			atomic_fetch_sub(&sdev->device_busy, 1);
			atomic_fetch_add(&sdev->blocked_refused, 1);
			return false;
		}
		pr_debug("%s: unblocking device at zero depth",
			 sdev->request_queue->name);
	}
	scsi_note_max(&sdev->max_device_busy, busy + 1);
	return true;
}

static bool scsi_mq_get_budget(struct mq_queue *q)
{
	struct scsi_device *sdev = q->queuedata;

	if (scsi_dev_queue_ready(sdev))
		return true;

	atomic_fetch_add(&sdev->budget_refused, 1);
	/*
	 * Count the restart before reading device_busy; scsi_done drops
	 * device_busy before it reads restarts.  Either a completion sees
	 * the restart and reruns the queue, or we see nothing in flight
	 * and rerun it ourselves.  (A blocked device idle: 6.6 leaves the
	 * rerun to blk-mq's BLK_MQ_BUDGET_DELAY; our core leaves it to the
	 * driver, so it is the same 3 ms here.)
	 */
	atomic_fetch_add(&sdev->restarts, 1);
	if (atomic_load(&sdev->device_busy) == 0)
		mq_delay_run_hw_queues(q, SCSI_QUEUE_DELAY_MS);
	return false;
}

static void scsi_mq_put_budget(struct mq_queue *q)
{
	struct scsi_device *sdev = q->queuedata;

	atomic_fetch_sub(&sdev->device_busy, 1);
}

/*
 * scsi_host_queue_ready: a host blocked by SCSI_MLQUEUE_HOST_BUSY takes
 * nothing while it holds commands, and counts max_host_blocked tries
 * down when idle.  can_queue: with host_tagset the host's tags are
 * shared by every hardware queue, so host_busy is checked against it;
 * without, each hardware queue has can_queue tags of its own and the
 * tags are the limit (Linux since 5.10, 6eb045e092ef).
 */
static bool scsi_host_queue_ready(struct Scsi_Host *shost,
				  struct scsi_cmnd *cmd)
{
	unsigned int busy;

	if (atomic_load(&shost->host_blocked)) {
		if (atomic_load(&shost->host_busy) > 0 ||
		    atomic_fetch_sub(&shost->host_blocked, 1) - 1 > 0) {
			atomic_fetch_add(&shost->host_refused, 1);
			return false;
		}
	}
	busy = atomic_fetch_add(&shost->host_busy, 1);
	if (shost->host_tagset && busy >= shost->can_queue) {
		atomic_fetch_sub(&shost->host_busy, 1);
		atomic_fetch_add(&shost->host_refused, 1);
		return false;
	}
	cmd->host_counted = true;
	scsi_note_max(&cmd->device->max_host_busy, busy + 1);
	return true;
}

static void scsi_dec_host_busy(struct Scsi_Host *shost, struct scsi_cmnd *cmd)
{
	if (cmd->host_counted) {
		cmd->host_counted = false;
		atomic_fetch_sub(&shost->host_busy, 1);
	}
}

/* scsi_device_unbusy: the host slot and the budget come back. */
void scsi_device_unbusy(struct scsi_device *sdev, struct scsi_cmnd *cmd)
{
	scsi_dec_host_busy(sdev->host, cmd);
	atomic_fetch_sub(&sdev->device_busy, 1);
}

/* What scsi_execute_cmd waits on; rq->special points at it. */
struct scsi_exec {
	const uint8_t *cdb;
	unsigned int cdb_len;
	bool write;
	void *buf;
	uint32_t len;
	uint8_t *sense;
	int result;
	bool done;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

/* scsi_prepare_cmd: once per request (RQF_DONTPREP keeps it). */
static enum mq_qrc scsi_prepare_cmd(struct request *req, struct scsi_cmnd *cmd)
{
	enum sd_prep prep;

	cmd->retries = 0;
	cmd->eh_abort_scheduled = false;
	cmd->resid = 0;
	memset(cmd->sense_buffer, 0, sizeof(cmd->sense_buffer));
	if (blk_rq_is_passthrough(req)) {
		struct scsi_exec *x = req->special;

		memcpy(cmd->cmnd, x->cdb, x->cdb_len);
		cmd->cmd_len = (unsigned short)x->cdb_len;
		cmd->write = x->write;
		cmd->sdb.buf = x->buf;
		cmd->sdb.length = x->len;
		cmd->allowed = SD_MAX_RETRIES;
		return MQ_QRC_OK;
	}
	prep = sd_init_command(cmd);
	if (prep == SD_PREP_OK)
		return MQ_QRC_OK;
	return MQ_QRC_IOERR;
}

static enum mq_qrc scsi_queue_rq(struct mq_hw_ctx *hctx,
				 const struct mq_queue_data *bd)
{
	struct request *req = bd->rq;
	struct mq_queue *q = req->q;
	struct scsi_device *sdev = q->queuedata;
	struct Scsi_Host *shost = sdev->host;
	struct scsi_cmnd *cmd = mq_rq_to_pdu(req);
	enum mq_qrc ret;
	int reason;

	/* scsi_device_state_check: "rejecting I/O to offline device" */
	if (atomic_load(&sdev->sdev_state) == SDEV_OFFLINE) {
		ret = MQ_QRC_IOERR;
		goto out_put_budget;
	}
	cmd->device = sdev;
	cmd->host_counted = false;
	if (!scsi_host_queue_ready(shost, cmd)) {
		/* As Linux: BLK_STS_RESOURCE, retried on a free or soon. */
		ret = MQ_QRC_RESOURCE;
		goto out_put_budget;
	}
	if (!(atomic_load(&req->rq_flags) & RQF_DONTPREP)) {
		ret = scsi_prepare_cmd(req, cmd);
		if (ret != MQ_QRC_OK) {
			scsi_dec_host_busy(shost, cmd);
			goto out_put_budget;
		}
		atomic_fetch_or(&req->rq_flags, RQF_DONTPREP);
	}
	cmd->result = 0;
	cmd->lld_dropped = false;
	atomic_store(&cmd->complete, false);

	mq_start_request(req);
	reason = shost->hostt->queuecommand(shost, cmd);
	if (reason == 0)
		return MQ_QRC_OK;
	/* scsi_set_blocked */
	if (reason == SCSI_MLQUEUE_HOST_BUSY)
		atomic_store(&shost->host_blocked, shost->max_host_blocked);
	else
		atomic_store(&sdev->device_blocked, sdev->max_device_blocked);
	scsi_dec_host_busy(shost, cmd);
	ret = MQ_QRC_RESOURCE;

out_put_budget:
	/* queue_rq refused: the budget it was lent goes back. */
	scsi_mq_put_budget(q);
	if (ret == MQ_QRC_RESOURCE && atomic_load(&sdev->device_busy) == 0)
		mq_delay_run_hw_queue(hctx, SCSI_QUEUE_DELAY_MS);
	return ret;
}

/*
 * scsi_run_queue_async: rerun the queue if a budget was refused since
 * the last rerun; only one completion wins the rerun.
 */
static void scsi_run_queue_async(struct scsi_device *sdev)
{
	unsigned int old = atomic_load(&sdev->restarts);

	if (old && atomic_compare_exchange_strong(&sdev->restarts, &old, 0))
		mq_run_hw_queues(sdev->request_queue, true);
}

/*
 * scsi_end_request: complete bytes with status; true if some are left.
 * A request without data (a flush) ends whole.
 */
static bool scsi_end_request(struct request *req, int status, uint32_t bytes)
{
	struct scsi_cmnd *cmd = mq_rq_to_pdu(req);
	struct scsi_device *sdev = cmd->device;

	if (bytes < blk_rq_bytes(req) && mq_update_request(req, status, bytes))
		return true;
	mq_end_request(req, status);
	scsi_run_queue_async(sdev);
	return false;
}

/*
 * __scsi_queue_insert: block what the reason says, give the budget back
 * if the command still holds it, and send the request round again,
 * ahead of the others.
 */
void __scsi_queue_insert(struct scsi_cmnd *cmd, int reason, bool unbusy)
{
	struct scsi_device *sdev = cmd->device;
	struct request *req = scsi_cmd_to_rq(cmd);

	switch (reason) {
	case SCSI_MLQUEUE_HOST_BUSY:
		atomic_store(&sdev->host->host_blocked,
			     sdev->host->max_host_blocked);
		break;
	case SCSI_MLQUEUE_DEVICE_BUSY:
		atomic_fetch_add(&sdev->requeued_busy, 1);
		atomic_store(&sdev->device_blocked, sdev->max_device_blocked);
		break;
	case SCSI_MLQUEUE_EH_RETRY:
		atomic_fetch_add(&sdev->retried, 1);
		atomic_store(&sdev->device_blocked, sdev->max_device_blocked);
		break;
	}
	if (unbusy)
		scsi_device_unbusy(sdev, cmd);
	cmd->result = 0;
	mq_requeue_request(req, true);
}

enum scsi_action {
	ACTION_FAIL,
	ACTION_RETRY,
	ACTION_DELAYED_RETRY,
};

/* scsi_io_completion_action: what to do with the rest after an error. */
static void scsi_io_completion_action(struct scsi_cmnd *cmd, int result)
{
	struct request *req = scsi_cmd_to_rq(cmd);
	struct scsi_sense_hdr sshdr;
	enum scsi_action action = ACTION_FAIL;
	int status = scsi_result_to_errno(result);
	uint64_t wait_for;

	if (!status)
		status = EIO;
	if (host_byte(result) == DID_RESET) {
		action = ACTION_RETRY;
	} else if (status_byte(result) == SAM_STAT_CHECK_CONDITION &&
		   scsi_normalize_sense(cmd->sense_buffer,
					SCSI_SENSE_BUFFERSIZE, &sshdr)) {
		switch (sshdr.sense_key) {
		case UNIT_ATTENTION:
			/* not removable: a power glitch or a reset; retry */
			action = ACTION_RETRY;
			break;
		case ILLEGAL_REQUEST:
			if ((sshdr.asc == INVALID_OPCODE ||
			     sshdr.asc == INVALID_FIELD_IN_CDB) &&
			    (cmd->cmnd[0] == UNMAP ||
			     cmd->cmnd[0] == WRITE_SAME_16))
				status = EREMOTEIO; /* BLK_STS_TARGET */
			break;
		case NOT_READY:
			if (sshdr.asc == 0x04 &&
			    (sshdr.ascq == 0x01 || sshdr.ascq == 0x04 ||
			     sshdr.ascq == 0x05 || sshdr.ascq == 0x06 ||
			     sshdr.ascq == 0x07 || sshdr.ascq == 0x08 ||
			     sshdr.ascq == 0x09 || sshdr.ascq == 0x14))
				action = ACTION_DELAYED_RETRY;
			break;
		default:
			break;
		}
	}
	/* Retried for longer than (allowed + 1) timeouts: give up. */
	wait_for = (uint64_t)(cmd->allowed + 1) * req->q->rq_timeout_ns;
	if (action != ACTION_FAIL &&
	    mq_now_ns() > req->start_time_ns + wait_for)
		action = ACTION_FAIL;

	switch (action) {
	case ACTION_FAIL:
		atomic_fetch_add(&cmd->device->failed, 1);
		pr_debug("%s: I/O error, op 0x%02x, result 0x%06x",
			 req->q->name, cmd->cmnd[0], (unsigned int)result);
		scsi_end_request(req, status, blk_rq_bytes(req));
		break;
	case ACTION_RETRY:
		__scsi_queue_insert(cmd, SCSI_MLQUEUE_EH_RETRY, false);
		break;
	case ACTION_DELAYED_RETRY:
		__scsi_queue_insert(cmd, SCSI_MLQUEUE_DEVICE_BUSY, false);
		break;
	}
}

/* scsi_io_completion: end the good bytes, then decide about the rest. */
static void scsi_io_completion(struct scsi_cmnd *cmd, unsigned int good_bytes)
{
	struct request *req = scsi_cmd_to_rq(cmd);
	struct scsi_sense_hdr sshdr;
	int result = cmd->result;
	int status = 0;

	if (result) {
		/* scsi_io_completion_nz_result */
		if (status_byte(result) == SAM_STAT_CHECK_CONDITION &&
		    scsi_normalize_sense(cmd->sense_buffer,
					 SCSI_SENSE_BUFFERSIZE, &sshdr) &&
		    sshdr.sense_key == RECOVERED_ERROR)
			result = 0; /* reported, treated as success */
		else if (blk_rq_bytes(req) == 0)
			status = scsi_result_to_errno(result);
	}
	if (blk_rq_bytes(req) > 0 || status == 0) {
		if (!scsi_end_request(req, status, good_bytes))
			return;
	}
	if (result == 0) {
		/* leftover bytes without an error: send the rest again */
		__scsi_queue_insert(cmd, 0, false);
		return;
	}
	scsi_io_completion_action(cmd, result);
}

/* scsi_finish_command: unbusy, unblock, ask sd, complete. */
void scsi_finish_command(struct scsi_cmnd *cmd)
{
	struct scsi_device *sdev = cmd->device;
	struct request *req = scsi_cmd_to_rq(cmd);
	unsigned int good_bytes, old;

	scsi_device_unbusy(sdev, cmd);
	atomic_store(&sdev->host->host_blocked, 0);
	atomic_store(&sdev->device_blocked, 0);
	if (blk_rq_is_passthrough(req)) {
		struct scsi_exec *x = req->special;

		x->result = cmd->result;
		if (x->sense)
			memcpy(x->sense, cmd->sense_buffer,
			       SCSI_SENSE_BUFFERSIZE);
		mq_end_request(req, 0);
		scsi_run_queue_async(sdev);
		return;
	}
	good_bytes = old = scsi_bufflen(cmd);
	good_bytes = sd_done(cmd);
	if (good_bytes == old)
		good_bytes -= cmd->resid < good_bytes ? cmd->resid : good_bytes;
	scsi_io_completion(cmd, good_bytes);
}

/* scsi_complete: the disposition decides. */
static void scsi_complete(struct scsi_cmnd *cmd)
{
	switch (scsi_decide_disposition(cmd)) {
	case SUCCESS:
		scsi_finish_command(cmd);
		break;
	case NEEDS_RETRY:
		__scsi_queue_insert(cmd, SCSI_MLQUEUE_EH_RETRY, true);
		break;
	case ADD_TO_MLQUEUE:
		__scsi_queue_insert(cmd, SCSI_MLQUEUE_DEVICE_BUSY, true);
		break;
	default:
		/* FAILED: no error handler for a completed command here;
		 * scsi_debug completes none that way. */
		scsi_finish_command(cmd);
		break;
	}
}

/* scsi_done: once per command; a timeout may have claimed it first. */
void scsi_done(struct scsi_cmnd *cmd)
{
	if (atomic_exchange(&cmd->complete, true))
		return;
	scsi_complete(cmd);
}

static void scsi_exec_end_io(struct request *rq, int status)
{
	struct scsi_exec *x = rq->special;

	mq_free_request(rq);
	pthread_mutex_lock(&x->lock);
	if (status && !x->result)
		x->result = DID_ERROR << 16;
	x->done = true;
	pthread_cond_signal(&x->cond);
	pthread_mutex_unlock(&x->lock);
}

int scsi_execute_cmd(struct scsi_device *sdev, const uint8_t *cdb,
		     unsigned int cdb_len, bool write, void *buf, uint32_t len,
		     uint8_t *sense)
{
	struct scsi_exec x = {
		.cdb = cdb,
		.cdb_len = cdb_len > 16 ? 16 : cdb_len,
		.write = write,
		.buf = buf,
		.len = len,
		.sense = sense,
	};
	struct request *rq;

	rq = mq_alloc_request(sdev->request_queue,
			      write ? REQ_OP_DRV_OUT : REQ_OP_DRV_IN, 0);
	if (!rq)
		return -ENODEV;
	pthread_mutex_init(&x.lock, NULL);
	pthread_cond_init(&x.cond, NULL);
	rq->special = &x;
	rq->end_io = scsi_exec_end_io;
	mq_sched_insert_request(rq, true, true, false);
	pthread_mutex_lock(&x.lock);
	while (!x.done)
		pthread_cond_wait(&x.cond, &x.lock);
	pthread_mutex_unlock(&x.lock);
	pthread_cond_destroy(&x.cond);
	pthread_mutex_destroy(&x.lock);
	return x.result;
}

static const struct mq_ops scsi_mq_ops = {
	.queue_rq = scsi_queue_rq,
	.timeout = scsi_timeout,
	.get_budget = scsi_mq_get_budget,
	.put_budget = scsi_mq_put_budget,
};

int scsi_mq_setup_tags(struct Scsi_Host *shost, unsigned int timeout_ms)
{
	struct mq_tag_set *tag_set = &shost->tag_set;
	int err;

	*tag_set = (struct mq_tag_set){
		.ops = &scsi_mq_ops,
		.nr_hw_queues = shost->nr_hw_queues,
		/* Each hardware queue can_queue deep (see host_tagset). */
		.queue_depth = shost->can_queue,
		.cmd_size = sizeof(struct scsi_cmnd),
		.timeout_ms = timeout_ms,
		.flags = MQ_F_SHOULD_MERGE,
		.driver_data = shost,
	};
	if (shost->queuecommand_may_sleep)
		tag_set->flags |= MQ_F_BLOCKING;
	if (!shost->max_host_blocked)
		shost->max_host_blocked = SCSI_DEFAULT_HOST_BLOCKED;
	err = mq_alloc_tag_set(tag_set);
	if (!err)
		shost->tag_set_ready = true;
	return err;
}

void scsi_mq_free_tags(struct Scsi_Host *shost)
{
	if (shost->tag_set_ready)
		mq_free_tag_set(&shost->tag_set);
	shost->tag_set_ready = false;
}

int scsi_alloc_sdev(struct Scsi_Host *shost, struct scsi_device *sdev,
		    unsigned int nr_ctx, const char *name)
{
	sdev->host = shost;
	sdev->queue_depth = shost->cmd_per_lun;
	if (!sdev->max_device_blocked)
		sdev->max_device_blocked = SCSI_DEFAULT_DEVICE_BLOCKED;
	atomic_store(&sdev->sdev_state, SDEV_RUNNING);
	sdev->request_queue = mq_init_queue(&shost->tag_set, nr_ctx, name);
	if (!sdev->request_queue)
		return ENOMEM;
	sdev->request_queue->queuedata = sdev;
	return 0;
}

void scsi_remove_sdev(struct scsi_device *sdev)
{
	if (sdev->request_queue)
		mq_cleanup_queue(sdev->request_queue);
	sdev->request_queue = NULL;
}
