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

#include "scsi.h"
#include "../../server/mq/log.h"

static void scsi_note_max(atomic_uint *max, unsigned int v)
{
	unsigned int old = atomic_load(max);

	while (v > old && !atomic_compare_exchange_weak(max, &old, v))
		;
}

/* scsi_dev_queue_ready: a budget if fewer than queue_depth are lent. */
static bool scsi_dev_queue_ready(struct scsi_device *sdev)
{
	unsigned int busy = atomic_fetch_add(&sdev->device_busy, 1);

	if (busy >= sdev->queue_depth) {
		atomic_fetch_sub(&sdev->device_busy, 1);
		return false;
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
	 * and rerun it ourselves.
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
 * scsi_host_queue_ready: can_queue is the host's, whichever hardware
 * queue the command comes from; each queue's tags alone would allow
 * nr_hw_queues * can_queue.
 */
static bool scsi_host_queue_ready(struct Scsi_Host *shost,
				  struct scsi_cmnd *cmd)
{
	unsigned int busy = atomic_fetch_add(&shost->host_busy, 1);

	if (busy >= shost->can_queue) {
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

static enum mq_qrc scsi_queue_rq(struct mq_hw_ctx *hctx,
				 const struct mq_queue_data *bd)
{
	struct request *req = bd->rq;
	struct mq_queue *q = req->q;
	struct scsi_device *sdev = q->queuedata;
	struct Scsi_Host *shost = sdev->host;
	struct scsi_cmnd *cmd = mq_rq_to_pdu(req);
	enum mq_qrc ret;

	cmd->device = sdev;
	cmd->result = 0;
	cmd->host_counted = false;
	if (!scsi_host_queue_ready(shost, cmd)) {
		/* As Linux: BLK_STS_RESOURCE, retried on a free or soon. */
		ret = MQ_QRC_RESOURCE;
		goto out_put_budget;
	}

	mq_start_request(req);
	if (shost->hostt->queuecommand(shost, cmd) == 0)
		return MQ_QRC_OK;
	scsi_dec_host_busy(shost, cmd);
	ret = MQ_QRC_RESOURCE;

out_put_budget:
	/* queue_rq refused: the budget it was lent goes back. */
	scsi_mq_put_budget(q);
	if (atomic_load(&sdev->device_busy) == 0)
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

/* scsi_done -> scsi_finish_command -> scsi_end_request. */
void scsi_done(struct scsi_cmnd *cmd)
{
	struct scsi_device *sdev = cmd->device;

	/* scsi_device_unbusy: the host slot and the budget come back. */
	scsi_dec_host_busy(sdev->host, cmd);
	atomic_fetch_sub(&sdev->device_busy, 1);
	mq_end_request(scsi_cmd_to_rq(cmd), cmd->result);
	scsi_run_queue_async(sdev);
}

static const struct mq_ops scsi_mq_ops = {
	.queue_rq = scsi_queue_rq,
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
		/* Each hardware queue can_queue deep; host_busy caps the sum.
		 */
		.queue_depth = shost->can_queue,
		.cmd_size = sizeof(struct scsi_cmnd),
		.timeout_ms = timeout_ms,
		.flags = MQ_F_SHOULD_MERGE,
		.driver_data = shost,
	};
	if (shost->queuecommand_may_sleep)
		tag_set->flags |= MQ_F_BLOCKING;
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
