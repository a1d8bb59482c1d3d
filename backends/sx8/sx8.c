// SPDX-License-Identifier: GPL-2.0
/*
 * sx8.c: the driver for the Promise SATA SX8 host, after
 * drivers/block/sx8.c with seed 005 ("sx8: convert to blk-mq").  What it
 * models is in sx8.h; the firmware is in sx8-fw.c.
 *
 * SX8 hardware has a single message queue for all ATA ports.  The driver
 * defaults to the safe option, 1 command (max_queue=1, host-wide: the
 * message slots carm_get_request hands out are the first max_queue of
 * CARM_MAX_REQ), and lets the user raise it; above 30 it warns, as the
 * driver's comment does ("problems seem to occur when you exceed ~30").
 *
 * Locking: host->lock is the driver's host->lock.  queue_rq takes it as
 * the seed does.  Completions run on the host's interrupt thread; they
 * free the message under the lock, then start the queue popped from the
 * wait ring and end the request outside it, since starting a queue runs
 * its queue_rq, which takes the lock again (spin_lock_irq in Linux, where
 * blk_mq_start_hw_queues is called under it).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sx8.h"
#include "../../server/mq/log.h"

/* How long probe waits for the state machine (wait_for_completion). */
#define CARM_PROBE_TIMEOUT_S 30
/* carm_get_special: tries, and the wait between them (msleep(10)). */
#define CARM_SPECIAL_TRIES   5000
#define CARM_SPECIAL_WAIT_MS 10

static const char *const state_names[] = {
	[HST_INVALID] = "HST_INVALID",
	[HST_ALLOC_BUF] = "HST_ALLOC_BUF",
	[HST_ERROR] = "HST_ERROR",
	[HST_PORT_SCAN] = "HST_PORT_SCAN",
	[HST_DEV_SCAN_START] = "HST_DEV_SCAN_START",
	[HST_DEV_SCAN] = "HST_DEV_SCAN",
	[HST_DEV_ACTIVATE] = "HST_DEV_ACTIVATE",
	[HST_PROBE_FINISHED] = "HST_PROBE_FINISHED",
	[HST_PROBE_START] = "HST_PROBE_START",
	[HST_SYNC_TIME] = "HST_SYNC_TIME",
	[HST_GET_FW_VER] = "HST_GET_FW_VER",
};

const char *carm_state_name(unsigned int state)
{
	return state < sizeof(state_names) / sizeof(state_names[0]) &&
			       state_names[state]
		       ? state_names[state]
		       : "?";
}

static const uint32_t msg_sizes[] = {32, 64, 128, CARM_MSG_SIZE};

static int carm_lookup_bucket(uint32_t msg_size)
{
	unsigned int i;

	for (i = 0; i < sizeof(msg_sizes) / sizeof(msg_sizes[0]); i++)
		if (msg_size <= msg_sizes[i])
			return (int)i;
	return -ENOENT;
}

/* writel(msg | (cm_bucket << 1), mmio + CARM_IHQP), unless CARM_Q_FULL. */
static int carm_send_msg(struct carm_host *host, struct carm_request *crq)
{
	int rc = carm_fw_post(host, crq);

	if (rc)
		pr_debug("%s: host msg queue full", host->name);
	return rc;
}

static void carm_note_peaks(struct carm_host *host)
{
	if (host->n_msgs > host->max_msgs_seen)
		host->max_msgs_seen = host->n_msgs;
	if (host->hw_sg_used > host->max_sg_seen)
		host->max_sg_seen = host->hw_sg_used;
}

/* Under host->lock. */
static struct carm_request *carm_get_request(struct carm_host *host)
{
	unsigned int i;

	/* obey global hardware limit on S/G entries */
	if (host->hw_sg_used >= (CARM_MAX_HOST_SG - CARM_MAX_REQ_SG))
		return NULL;

	for (i = 0; i < host->max_queue; i++)
		if ((host->msg_alloc & (1ULL << i)) == 0) {
			struct carm_request *crq = &host->req[i];

			crq->port = NULL;
			crq->n_elem = 0;

			host->msg_alloc |= (1ULL << i);
			host->n_msgs++;
			if (host->hw_sg_used > host->max_sg_at_alloc)
				host->max_sg_at_alloc = host->hw_sg_used;
			carm_note_peaks(host);
			return crq;
		}

	pr_debug("%s: no request available, returning NULL", host->name);
	return NULL;
}

/* Under host->lock. */
static int carm_put_request(struct carm_host *host, struct carm_request *crq)
{
	if ((host->msg_alloc & (1ULL << crq->tag)) == 0)
		return -EINVAL; /* tried to clear a tag that was not active */
	if (host->hw_sg_used < (unsigned int)crq->n_elem) {
		pr_err("%s: BUG: %d S/G entries returned, %u in use",
		       host->name, crq->n_elem, host->hw_sg_used);
		host->hw_sg_used = crq->n_elem;
	}
	host->msg_alloc &= ~(1ULL << crq->tag);
	host->hw_sg_used -= crq->n_elem;
	host->n_msgs--;
	return 0;
}

/*
 * Under host->lock.  Stop q and queue it on the wait ring.  The driver
 * BUG()s on an overrun; a queue is stopped while it waits, so it is on
 * the ring at most once and 9 entries hold 8 ports and the OOB queue.
 */
static bool carm_push_q(struct carm_host *host, struct mq_queue *q)
{
	unsigned int idx = host->wait_q_prod % CARM_MAX_WAIT_Q;

	if (host->wait_q_prod - host->wait_q_cons >= CARM_MAX_WAIT_Q) {
		host->ring_overrun++;
		pr_err("%s: BUG: wait queue overrun by %s", host->name,
		       q->name);
		return false;
	}
	mq_stop_hw_queues(q);
	pr_debug("%s: STOPPED QUEUE %s", host->name, q->name);

	host->wait_q[idx] = q;
	host->wait_q_prod++;
	if (host->rr_queue == q)
		host->rr_queue = NULL;
	if (q->queuedata != host) {
		struct carm_port *port = q->queuedata;

		atomic_fetch_add(&port->pushed, 1);
	}
	return true;
}

/* Under host->lock. */
static struct mq_queue *carm_pop_q(struct carm_host *host)
{
	unsigned int idx;

	if (host->wait_q_prod == host->wait_q_cons)
		return NULL;

	idx = host->wait_q_cons % CARM_MAX_WAIT_Q;
	host->wait_q_cons++;

	host->rr_queue = host->wait_q[idx];
	return host->wait_q[idx];
}

/* Not under host->lock: starting the queue runs its queue_rq. */
static void carm_round_robin(struct carm_host *host, struct mq_queue *q)
{
	if (q) {
		if (q->queuedata != host) {
			struct carm_port *port = q->queuedata;

			atomic_fetch_add(&port->restarted, 1);
		}
		mq_start_hw_queues(q);
		pr_debug("%s: STARTED QUEUE %s", host->name, q->name);
	}
}

/*
 * carm_end_rq: free the message, restart a waiting queue (one per
 * completion with max_queue=1, otherwise only below both low-water
 * marks), end the request.  The waiter is started before the request
 * ends, so that the message just freed goes to it and not to the
 * completing port, whose own next request runs as soon as its tag is
 * free: the ring's order is the order of service.
 */
static void carm_end_rq(struct carm_host *host, struct carm_request *crq,
			int error)
{
	struct request *req = crq->rq;
	struct carm_port *port = crq->port;
	struct mq_queue *q = NULL;
	int rc;

	pthread_mutex_lock(&host->lock);
	if (port)
		port->n_msgs--;
	rc = carm_put_request(host, crq);
	if (rc)
		pr_err("%s: BUG: message %u was not in use", host->name,
		       crq->tag);
	if (host->max_queue == 1)
		q = carm_pop_q(host);
	else if ((host->n_msgs <= CARM_MSG_LOW_WATER) &&
		 (host->hw_sg_used <= CARM_SG_LOW_WATER))
		q = carm_pop_q(host);
	pthread_mutex_unlock(&host->lock);

	carm_round_robin(host, q);
	if (port)
		atomic_fetch_add(&port->completed, 1);
	mq_end_request(req, error);
}

/* ------------------------------------------------------------------ */
/* queue_rq                                                            */

static enum mq_qrc carm_oob_queue_rq(struct mq_hw_ctx *hctx,
				     const struct mq_queue_data *bd)
{
	struct mq_queue *q = hctx->queue;
	struct carm_host *host = q->queuedata;
	struct carm_request *crq;
	int rc;

	mq_start_request(bd->rq);

	pthread_mutex_lock(&host->lock);

	crq = bd->rq->special;
	if (!crq || crq->rq != bd->rq) {
		pthread_mutex_unlock(&host->lock);
		pr_err("%s: BUG: OOB request without its message", host->name);
		return MQ_QRC_IOERR;
	}

	crq->n_elem = 0;

	rc = carm_send_msg(host, crq);
	if (rc) {
		if (!carm_push_q(host, q)) {
			pthread_mutex_unlock(&host->lock);
			return MQ_QRC_RESOURCE;
		}
		pthread_mutex_unlock(&host->lock);
		return MQ_QRC_DEV_RESOURCE;
	}

	pthread_mutex_unlock(&host->lock);
	return MQ_QRC_OK;
}

static enum mq_qrc carm_queue_rq(struct mq_hw_ctx *hctx,
				 const struct mq_queue_data *bd)
{
	struct mq_queue *q = hctx->queue;
	struct carm_port *port = q->queuedata;
	struct carm_host *host = port->host;
	struct carm_request *crq;
	struct request *rq = bd->rq;
	int writing = 0, n_elem, rc;
	unsigned int msg_size;

	if (req_op(rq) != REQ_OP_READ && req_op(rq) != REQ_OP_WRITE)
		return MQ_QRC_IOERR; /* no flush, discard or zeroing */

	mq_start_request(rq);

	pthread_mutex_lock(&host->lock);

	/*
	 * yield_to_waiters=1, ours and off by default: while queues wait on
	 * the ring, only the one restarted from it last may take a message,
	 * and only one.  The converted driver has no such rule: blk-mq
	 * reruns a queue as soon as one of its tags is freed, so a port with
	 * messages in flight takes back each one it frees, and a port on the
	 * ring, restarted only below the low-water marks, waits (the legacy
	 * request_fn was not rerun on completion).  With nothing in flight
	 * and no restart under way no completion would come to restart
	 * anyone: then whoever asks is served.
	 */
	if (host->yield_to_waiters && host->wait_q_prod != host->wait_q_cons &&
	    host->rr_queue != q && (host->n_msgs || host->rr_queue)) {
		bool pushed;

		host->yielded++;
		pushed = carm_push_q(host, q);
		pthread_mutex_unlock(&host->lock);
		return pushed ? MQ_QRC_DEV_RESOURCE : MQ_QRC_RESOURCE;
	}

	crq = carm_get_request(host);
	if (!crq) {
		bool pushed = carm_push_q(host, q);

		pthread_mutex_unlock(&host->lock);
		return pushed ? MQ_QRC_DEV_RESOURCE : MQ_QRC_RESOURCE;
	}
	crq->rq = rq;
	if (host->rr_queue == q)
		host->rr_queue = NULL; /* its turn is taken */

	if (req_op(rq) == REQ_OP_WRITE)
		writing = 1;

	/*
	 * get scatterlist from block layer: one entry per bio, as the core
	 * counts them against max_segments (CARM_MAX_REQ_SG).
	 */
	n_elem = rq->nr_phys_segments;
	if (n_elem <= 0 || n_elem > CARM_MAX_REQ_SG) {
		/*
		 * request with no s/g entries?  The seed ends it here and
		 * returns IOERR as well, ending it twice; the message goes
		 * back and the core ends it, once.
		 */
		carm_put_request(host, crq);
		pthread_mutex_unlock(&host->lock);
		return MQ_QRC_IOERR;
	}
	crq->n_elem = n_elem;
	crq->port = port;
	host->hw_sg_used += n_elem;
	carm_note_peaks(host);

	/* build read/write message */
	crq->msg_type = writing ? CARM_MSG_WRITE : CARM_MSG_READ;
	crq->msg_subtype = 0;
	crq->array_id = port->port_no;
	crq->lba = blk_rq_pos(rq);
	crq->lba_count = blk_rq_sectors(rq);

	/* type..lba_high, then 8 bytes per S/G entry */
	msg_size = 16 + 8 * (unsigned int)n_elem;
	rc = carm_lookup_bucket(msg_size);
	crq->msg_bucket = rc < 0 ? 3 : (unsigned int)rc;

	/* queue read/write message to hardware */
	rc = carm_send_msg(host, crq);
	if (rc) {
		bool pushed;

		carm_put_request(host, crq);
		pushed = carm_push_q(host, q);
		pthread_mutex_unlock(&host->lock);
		return pushed ? MQ_QRC_DEV_RESOURCE : MQ_QRC_RESOURCE;
	}
	port->n_msgs++;

	pthread_mutex_unlock(&host->lock);
	return MQ_QRC_OK;
}

static const struct mq_ops carm_oob_mq_ops = {
	.queue_rq = carm_oob_queue_rq,
};

static const struct mq_ops carm_mq_ops = {
	.queue_rq = carm_queue_rq,
};

/* ------------------------------------------------------------------ */
/* responses and the probe state machine                               */

static void carm_fsm_task(struct work_item *work);

static void schedule_fsm(struct carm_host *host)
{
	queue_work(host->fsm_wq, &host->fsm_task, carm_fsm_task);
}

/* Under host->lock: the state machine has ended, either way. */
static void carm_probe_complete(struct carm_host *host)
{
	host->probe_done = true;
	pthread_cond_broadcast(&host->probe_cond);
}

static void carm_set_error(struct carm_host *host, unsigned int from)
{
	pthread_mutex_lock(&host->lock);
	host->failed_state = from;
	host->state = HST_ERROR;
	pthread_mutex_unlock(&host->lock);
}

static void carm_handle_generic(struct carm_host *host,
				struct carm_request *crq, int error,
				unsigned int cur_state, unsigned int next_state)
{
	carm_end_rq(host, crq, error);

	pthread_mutex_lock(&host->lock);
	if (host->state != cur_state)
		pr_err("%s: BUG: state %s, expected %s", host->name,
		       carm_state_name(host->state),
		       carm_state_name(cur_state));
	if (error) {
		host->failed_state = cur_state;
		host->state = HST_ERROR;
	} else {
		host->state = next_state;
	}
	pthread_mutex_unlock(&host->lock);
	schedule_fsm(host);
}

static void carm_handle_scan_chan(struct carm_host *host,
				  struct carm_request *crq, int error)
{
	unsigned int i, dev_count = 0;
	unsigned int new_state = HST_DEV_SCAN_START;
	uint8_t scan[CARM_MAX_PORTS];

	memcpy(scan, crq->scan, sizeof(scan));
	carm_end_rq(host, crq, error);

	pthread_mutex_lock(&host->lock);
	if (error) {
		host->failed_state = HST_PORT_SCAN;
		new_state = HST_ERROR;
		goto out;
	}

	/* TODO: scan and support non-disk devices */
	for (i = 0; i < CARM_MAX_PORTS; i++)
		if (scan[i] == 0) { /* direct-access device (disk) */
			host->dev_present |= (1ul << i);
			dev_count++;
		}

	pr_info("%s: found %u interesting devices", host->name, dev_count);

out:
	host->state = new_state;
	pthread_mutex_unlock(&host->lock);
	schedule_fsm(host);
}

static void carm_handle_array_info(struct carm_host *host,
				   struct carm_request *crq, int error)
{
	struct carm_array_info desc = crq->info;
	struct carm_port *port;
	int cur_port;
	size_t slen;

	carm_end_rq(host, crq, error);

	pthread_mutex_lock(&host->lock);
	if (error) {
		/* Linux goes on to the next port; we stop, as told to. */
		host->failed_state = HST_DEV_SCAN;
		host->state = HST_ERROR;
		goto out;
	}
	if (desc.no_exist)
		goto out;

	cur_port = host->cur_scan_dev;

	/* should never occur */
	if ((cur_port < 0) || (cur_port >= CARM_MAX_PORTS)) {
		pr_err("%s: BUG: cur_scan_dev==%d", host->name, cur_port);
		goto out;
	}

	port = &host->port[cur_port];

	port->capacity = desc.size;
	port->dev_geom_head = desc.head;
	port->dev_geom_sect = desc.sect;
	port->dev_geom_cyl = desc.cyl;

	host->dev_active |= (1ul << cur_port);

	memcpy(port->name, desc.name, sizeof(desc.name));
	port->name[sizeof(port->name) - 1] = 0;
	slen = strlen(port->name);
	while (slen && (port->name[slen - 1] == ' ')) {
		port->name[slen - 1] = 0;
		slen--;
	}

	pr_info("%s: port %u device %" PRIu64 " sectors", host->name,
		port->port_no, port->capacity);
	pr_info("%s: port %u device \"%s\"", host->name, port->port_no,
		port->name);

out:
	pthread_mutex_unlock(&host->lock);
	schedule_fsm(host);
}

static void carm_handle_rw(struct carm_host *host, struct carm_request *crq,
			   int error)
{
	carm_end_rq(host, crq, error);
}

/* The response to message handle, on the interrupt thread. */
void carm_handle_resp(struct carm_host *host, uint32_t handle, uint32_t status)
{
	unsigned int msg_idx;
	struct carm_request *crq;
	int error = (status == RMSG_OK) ? 0 : EIO;

	if (!TAG_VALID(handle)) {
		pr_err("%s: BUG: invalid tag 0x%x", host->name, handle);
		return;
	}

	msg_idx = TAG_DECODE(handle);
	crq = &host->req[msg_idx];

	/* fast path */
	if (crq->msg_type == CARM_MSG_READ || crq->msg_type == CARM_MSG_WRITE) {
		if (error)
			pr_err("%s: port %u: %s of %u sectors at %" PRIu64
			       " failed (status 0x%x): EIO",
			       host->name, crq->port->port_no,
			       crq->msg_type == CARM_MSG_WRITE ? "write"
							       : "read",
			       crq->lba_count, crq->lba, status);
		carm_handle_rw(host, crq, error);
		return;
	}

	switch (crq->msg_type) {
	case CARM_MSG_IOCTL:
		if (crq->msg_subtype != CARM_IOC_SCAN_CHAN)
			goto err_out;
		carm_handle_scan_chan(host, crq, error);
		break;
	case CARM_MSG_MISC:
		switch (crq->msg_subtype) {
		case MISC_ALLOC_MEM:
			carm_handle_generic(host, crq, error, HST_ALLOC_BUF,
					    HST_SYNC_TIME);
			break;
		case MISC_SET_TIME:
			carm_handle_generic(host, crq, error, HST_SYNC_TIME,
					    HST_GET_FW_VER);
			break;
		case MISC_GET_FW_VER:
			if (!error) {
				pthread_mutex_lock(&host->lock);
				host->fw_ver = crq->fw_version;
				host->flags |=
					(crq->fw_features & FL_FW_VER_MASK);
				pthread_mutex_unlock(&host->lock);
			}
			carm_handle_generic(host, crq, error, HST_GET_FW_VER,
					    HST_PORT_SCAN);
			break;
		default:
			goto err_out;
		}
		break;
	case CARM_MSG_ARRAY:
		if (crq->msg_subtype != CARM_ARRAY_INFO)
			goto err_out;
		carm_handle_array_info(host, crq, error);
		break;
	default:
		goto err_out;
	}
	return;

err_out:
	pr_warn("%s: BUG: unhandled message type %u/%u", host->name,
		crq->msg_type, crq->msg_subtype);
	carm_end_rq(host, crq, EIO);
}

static void carm_special_end_io(struct request *rq, int status)
{
	mq_free_request(rq);
}

/* A message slot and a request on the OOB queue. */
static struct carm_request *carm_get_special(struct carm_host *host)
{
	struct carm_request *crq = NULL;
	struct request *rq;
	int tries = CARM_SPECIAL_TRIES;

	while (tries-- > 0) {
		pthread_mutex_lock(&host->lock);
		crq = carm_get_request(host);
		pthread_mutex_unlock(&host->lock);

		if (crq)
			break;
		nanosleep(&(struct timespec){.tv_nsec = CARM_SPECIAL_WAIT_MS *
							1000000L},
			  NULL);
	}

	if (!crq)
		return NULL;

	rq = mq_alloc_request(host->oob_q, REQ_OP_DRV_OUT, 0);
	if (!rq) {
		pthread_mutex_lock(&host->lock);
		carm_put_request(host, crq);
		pthread_mutex_unlock(&host->lock);
		return NULL;
	}

	crq->rq = rq;
	return crq;
}

static void carm_execute(struct carm_host *host, struct carm_request *crq)
{
	crq->rq->special = crq;
	crq->rq->end_io = carm_special_end_io;
	pthread_mutex_lock(&host->lock);
	host->n_oob++;
	pthread_mutex_unlock(&host->lock);
	mq_sched_insert_request(crq->rq, true, true, false);
}

static int carm_array_info(struct carm_host *host, unsigned int array_idx)
{
	struct carm_request *crq;
	int rc;

	crq = carm_get_special(host);
	if (!crq) {
		rc = -ENOMEM;
		goto err_out;
	}

	crq->msg_type = CARM_MSG_ARRAY;
	crq->msg_subtype = CARM_ARRAY_INFO;
	crq->array_id = array_idx;
	memset(&crq->info, 0, sizeof(crq->info));
	crq->msg_bucket = (unsigned int)carm_lookup_bucket(16 + 76);

	carm_execute(host, crq);
	return 0;

err_out:
	carm_set_error(host, HST_DEV_SCAN);
	return rc;
}

/* carm_send_special with the carm_fill_* of each MISC/IOCTL message. */
static int carm_send_special(struct carm_host *host, unsigned int type,
			     unsigned int subtype, unsigned int msg_size)
{
	struct carm_request *crq;

	crq = carm_get_special(host);
	if (!crq)
		return -ENOMEM;

	crq->msg_type = type;
	crq->msg_subtype = subtype;
	crq->msg_bucket = (unsigned int)carm_lookup_bucket(msg_size);
	memset(crq->scan, IOC_SCAN_CHAN_NODEV, sizeof(crq->scan));

	carm_execute(host, crq);
	return 0;
}

static int carm_activate_port(struct carm_host *host, struct carm_port *port)
{
	char desc[sizeof(port->disk.description)];

	set_capacity(&port->disk, port->capacity);
	/*
	 * Formatted aside: gcc's -Wrestrict (Release builds) cannot tell
	 * that port->name and the description never overlap.
	 */
	snprintf(desc, sizeof(desc),
		 "Promise SATA SX8 port %u (Linux sx8): \"%s\", %" PRIu64
		 " sectors, max_queue %u",
		 port->port_no, port->name, port->capacity, host->max_queue);
	memcpy(port->disk.description, desc, sizeof(desc));
	port->disk.features |= media_disk_features(port->drive.media);
	if (mq_device_add_disk(host->mdev, &port->disk)) {
		pr_err("%s: port %u: cannot add disk %s: %s", host->name,
		       port->port_no, port->disk.disk_name, mq_strerror(errno));
		return -1;
	}
	port->added = true;
	return 0;
}

static void carm_fsm_task(struct work_item *work)
{
	struct carm_host *host = container_of(work, struct carm_host, fsm_task);
	unsigned int state, new_state = HST_INVALID;
	int rc, i, next_dev;
	int reschedule = 0;

	pthread_mutex_lock(&host->lock);
	state = host->state;
	pthread_mutex_unlock(&host->lock);

	pr_debug("%s: fsm: state == %s", host->name, carm_state_name(state));

	switch (state) {
	case HST_PROBE_START:
		new_state = HST_ALLOC_BUF;
		reschedule = 1;
		break;

	case HST_ALLOC_BUF:
		rc = carm_send_special(host, CARM_MSG_MISC, MISC_ALLOC_MEM, 76);
		if (rc) {
			new_state = HST_ERROR;
			reschedule = 1;
		}
		break;

	case HST_SYNC_TIME:
		rc = carm_send_special(host, CARM_MSG_MISC, MISC_SET_TIME, 16);
		if (rc) {
			new_state = HST_ERROR;
			reschedule = 1;
		}
		break;

	case HST_GET_FW_VER:
		rc = carm_send_special(host, CARM_MSG_MISC, MISC_GET_FW_VER,
				       24);
		if (rc) {
			new_state = HST_ERROR;
			reschedule = 1;
		}
		break;

	case HST_PORT_SCAN:
		rc = carm_send_special(host, CARM_MSG_IOCTL, CARM_IOC_SCAN_CHAN,
				       0x40 + 8);
		if (rc) {
			new_state = HST_ERROR;
			reschedule = 1;
		}
		break;

	case HST_DEV_SCAN_START:
		host->cur_scan_dev = -1;
		new_state = HST_DEV_SCAN;
		reschedule = 1;
		break;

	case HST_DEV_SCAN:
		next_dev = -1;
		for (i = host->cur_scan_dev + 1; i < CARM_MAX_PORTS; i++)
			if (host->dev_present & (1ul << i)) {
				next_dev = i;
				break;
			}

		if (next_dev >= 0) {
			host->cur_scan_dev = next_dev;
			rc = carm_array_info(host, next_dev);
			if (rc) {
				new_state = HST_ERROR;
				reschedule = 1;
			}
		} else {
			new_state = HST_DEV_ACTIVATE;
			reschedule = 1;
		}
		break;

	case HST_DEV_ACTIVATE: {
		int activated = 0;

		for (i = 0; i < CARM_MAX_PORTS; i++)
			if (host->dev_active & (1ul << i)) {
				if (carm_activate_port(host, &host->port[i]))
					break;
				activated++;
			}

		pr_info("%s: %d ports activated", host->name, activated);

		if (i < CARM_MAX_PORTS) {
			new_state = HST_ERROR;
		} else {
			new_state = HST_PROBE_FINISHED;
		}
		reschedule = 1;
		break;
	}

	case HST_PROBE_FINISHED:
		pthread_mutex_lock(&host->lock);
		carm_probe_complete(host);
		pthread_mutex_unlock(&host->lock);
		break;

	case HST_ERROR: {
		unsigned int failed;

		/* Linux: FIXME: TODO, and probe waits forever. */
		pthread_mutex_lock(&host->lock);
		failed = host->failed_state;
		pthread_mutex_unlock(&host->lock);
		pr_err("%s: probe failed in %s: the host is in HST_ERROR, no port is exported",
		       host->name, carm_state_name(failed));
		pthread_mutex_lock(&host->lock);
		carm_probe_complete(host);
		pthread_mutex_unlock(&host->lock);
		break;
	}

	default:
		/* should never occur */
		pr_err("%s: BUG: unknown state %u", host->name, state);
		break;
	}

	if (new_state != HST_INVALID) {
		pthread_mutex_lock(&host->lock);
		if (new_state == HST_ERROR && host->failed_state == HST_INVALID)
			host->failed_state = state;
		host->state = new_state;
		pthread_mutex_unlock(&host->lock);
	}

	if (reschedule)
		schedule_fsm(host);
}

/* ------------------------------------------------------------------ */
/* attributes and faults                                               */

static struct carm_host *disk_host(struct gendisk *disk)
{
	return disk->private_data;
}

static int show_state(struct gendisk *disk, char *buf, size_t len)
{
	struct carm_host *host = disk_host(disk);
	int n;

	pthread_mutex_lock(&host->lock);
	n = snprintf(buf, len, "%s", carm_state_name(host->state));
	pthread_mutex_unlock(&host->lock);
	return n;
}

#define HOST_SHOW_UINT(_name, _expr)                                           \
	static int show_##_name(struct gendisk *disk, char *buf, size_t len)   \
	{                                                                      \
		struct carm_host *host = disk_host(disk);                      \
		unsigned long v;                                               \
                                                                               \
		pthread_mutex_lock(&host->lock);                               \
		v = (unsigned long)(_expr);                                    \
		pthread_mutex_unlock(&host->lock);                             \
		return snprintf(buf, len, "%lu", v);                           \
	}

HOST_SHOW_UINT(msgs_in_use, host->n_msgs)
HOST_SHOW_UINT(sg_in_use, host->hw_sg_used)
HOST_SHOW_UINT(max_msgs_seen, host->max_msgs_seen)
HOST_SHOW_UINT(max_sg_seen, host->max_sg_seen)
HOST_SHOW_UINT(max_sg_at_alloc, host->max_sg_at_alloc)
HOST_SHOW_UINT(max_queue, host->max_queue)
HOST_SHOW_UINT(oob_messages, host->n_oob)
HOST_SHOW_UINT(hw_queue_used, host->hw_q_used)
HOST_SHOW_UINT(q_full, host->q_full)
HOST_SHOW_UINT(yielded, host->yielded)

/* The queues on the wait ring, oldest first: "sx8/port3 sx8/port5". */
static int show_wait_queue(struct gendisk *disk, char *buf, size_t len)
{
	struct carm_host *host = disk_host(disk);
	size_t used = 0;
	unsigned int i;

	buf[0] = '\0';
	pthread_mutex_lock(&host->lock);
	for (i = host->wait_q_cons; i != host->wait_q_prod && used < len; i++) {
		int n = snprintf(buf + used, len - used, "%s%s",
				 used ? " " : "",
				 host->wait_q[i % CARM_MAX_WAIT_Q]->name);

		if (n < 0 || (size_t)n >= len - used) {
			pthread_mutex_unlock(&host->lock);
			return -ENOSPC;
		}
		used += n;
	}
	pthread_mutex_unlock(&host->lock);
	return (int)used;
}

static int show_fw_ver(struct gendisk *disk, char *buf, size_t len)
{
	struct carm_host *host = disk_host(disk);
	int n;

	pthread_mutex_lock(&host->lock);
	n = snprintf(buf, len, "0x%08x %u-port %s", host->fw_ver,
		     host->flags & FL_4PORT ? 4 : 8,
		     host->flags & FL_NON_RAID ? "non-RAID" : "RAID");
	pthread_mutex_unlock(&host->lock);
	return n;
}

static int show_stalled(struct gendisk *disk, char *buf, size_t len)
{
	struct carm_host *host = disk_host(disk);
	int n;

	pthread_mutex_lock(&host->lock);
	n = snprintf(buf, len, "%d", host->stalled);
	pthread_mutex_unlock(&host->lock);
	return n;
}

static const struct disk_attr carm_host_attrs[] = {
	{"state", show_state},
	{"msgs_in_use", show_msgs_in_use},
	{"sg_in_use", show_sg_in_use},
	{"wait_queue", show_wait_queue},
	{"max_msgs_seen", show_max_msgs_seen},
	{"max_sg_seen", show_max_sg_seen},
	/* the most in use when a message was handed out: below 568 */
	{"max_sg_at_alloc", show_max_sg_at_alloc},
	{"max_queue", show_max_queue},
	{"fw_ver", show_fw_ver},
	{"oob_messages", show_oob_messages},
	{"hw_queue_used", show_hw_queue_used},
	{"q_full", show_q_full},
	/* a port sent to the ring's tail because others waited */
	{"yielded", show_yielded},
	{"stalled", show_stalled},
	{NULL},
};

static int fault_stall(struct gendisk *disk, const char *value,
		       struct mq_err *e)
{
	struct carm_host *host = disk_host(disk);
	bool stall;

	if (!strcmp(value, "step")) {
		pr_debug("%s: stall fault: the firmware answers one message",
			 host->name);
		if (carm_fw_step(host))
			return 0;
		mq_err_set(e, "the firmware holds no response");
		return EAGAIN;
	}
	if (!strcmp(value, "1"))
		stall = true;
	else if (!strcmp(value, "0"))
		stall = false;
	else {
		mq_err_set(e, "takes 1, 0 or step");
		return EINVAL;
	}
	pr_warn("%s: stall fault: the firmware %s its responses", host->name,
		stall ? "holds" : "releases");
	carm_fw_stall(host, stall);
	return 0;
}

static const struct disk_fault carm_host_faults[] = {
	{"stall",
	 "1: the firmware holds every response (queues fill and wait); "
	 "step: it answers the oldest one held; 0: it answers them all, in "
	 "order",
	 fault_stall},
	{NULL},
};

static struct carm_port *disk_port(struct gendisk *disk)
{
	return disk->private_data;
}

#define PORT_SHOW_COUNTER(_name)                                               \
	static int show_port_##_name(struct gendisk *disk, char *buf,          \
				     size_t len)                               \
	{                                                                      \
		return snprintf(buf, len, "%lu",                               \
				atomic_load(&disk_port(disk)->_name));         \
	}

PORT_SHOW_COUNTER(completed)
PORT_SHOW_COUNTER(pushed)
PORT_SHOW_COUNTER(restarted)

static int show_port_messages(struct gendisk *disk, char *buf, size_t len)
{
	struct carm_port *port = disk_port(disk);
	unsigned int n;

	pthread_mutex_lock(&port->host->lock);
	n = port->n_msgs;
	pthread_mutex_unlock(&port->host->lock);
	return snprintf(buf, len, "%u", n);
}

static int show_port_no(struct gendisk *disk, char *buf, size_t len)
{
	return snprintf(buf, len, "%u", disk_port(disk)->port_no);
}

static int show_port_model(struct gendisk *disk, char *buf, size_t len)
{
	return snprintf(buf, len, "%s", disk_port(disk)->name);
}

static int show_port_geometry(struct gendisk *disk, char *buf, size_t len)
{
	struct carm_port *port = disk_port(disk);

	return snprintf(buf, len, "%u/%u/%u", port->dev_geom_cyl,
			port->dev_geom_head, port->dev_geom_sect);
}

static const struct disk_attr carm_port_attrs[] = {
	{"port", show_port_no},
	{"model", show_port_model},
	{"geometry", show_port_geometry}, /* cylinders/heads/sectors */
	{"messages", show_port_messages}, /* the host's, in flight for it */
	{"completed", show_port_completed},
	{"pushed", show_port_pushed},
	{"restarted", show_port_restarted},
	{NULL},
};

static int carm_port_extents(struct gendisk *disk, uint64_t offset,
			     uint64_t length, extent_fn *fn, void *arg)
{
	return media_extents(disk_port(disk)->drive.media, offset, length, fn,
			     arg);
}

static const struct block_device_operations carm_bd_ops = {
	.extents = carm_port_extents,
};

/* ------------------------------------------------------------------ */
/* probe and remove                                                    */

static void carm_free(struct carm_host *host)
{
	unsigned int i;

	/* No new work: the queues wait for their runs, the irq drains. */
	for (i = 0; i < CARM_MAX_PORTS; i++)
		if (host->port[i].disk.queue)
			mq_quiesce_queue(host->port[i].disk.queue);
	if (host->oob_q)
		mq_quiesce_queue(host->oob_q);
	if (host->fsm_wq)
		workqueue_destroy(host->fsm_wq);
	if (host->irq) {
		/* Responses still held by a stall are given back first. */
		carm_fw_stall(host, false);
		irq_thread_destroy(host->irq);
	}
	for (i = 0; i < CARM_MAX_PORTS; i++) {
		struct carm_port *port = &host->port[i];

		if (port->disk.queue)
			mq_cleanup_queue(port->disk.queue);
		if (port->tag_set_ready)
			mq_free_tag_set(&port->tag_set);
		if (port->drive.timing_ready)
			rotational_destroy(&port->drive.timing);
		media_close(port->drive.media);
	}
	if (host->oob_q)
		mq_cleanup_queue(host->oob_q);
	if (host->tag_set_ready)
		mq_free_tag_set(&host->tag_set);
	if (host->cond_ready)
		pthread_cond_destroy(&host->probe_cond);
	if (host->lock_ready)
		pthread_mutex_destroy(&host->lock);
	free(host);
}

static const struct {
	const char *name;
	unsigned int type, subtype;
} probe_steps[] = {
	{"alloc_buf", CARM_MSG_MISC, MISC_ALLOC_MEM},
	{"sync_time", CARM_MSG_MISC, MISC_SET_TIME},
	{"get_fw_ver", CARM_MSG_MISC, MISC_GET_FW_VER},
	{"port_scan", CARM_MSG_IOCTL, CARM_IOC_SCAN_CHAN},
	{"array_info", CARM_MSG_ARRAY, CARM_ARRAY_INFO},
};

static int carm_read_keys(struct carm_host *host, struct mq_params *p,
			  struct rotational_params *rp, struct mq_err *e)
{
	const char *fail, *media;
	uint64_t size;
	unsigned int i, present_ports = 0;
	char k[32], pfx[16];

	if (mq_param_uint(p, "ports", CARM_MAX_PORTS, 4, CARM_MAX_PORTS,
			  &host->nr_ports, e) ||
	    mq_param_uint(p, "max_queue", CARM_DEFAULT_MAX_QUEUE, 1,
			  CARM_MAX_REQ, &host->max_queue, e) ||
	    mq_param_bool(p, "yield_to_waiters", false, &host->yield_to_waiters,
			  e) ||
	    mq_param_size(p, "size", 1ull << 30, &size, e) ||
	    mq_param_str(p, "probe_fail", NULL, &fail, e) ||
	    mq_param_str(p, "media", NULL, &media, e) ||
	    rotational_params_read(rp, p, "", e))
		return -1;
	if (host->nr_ports != 4 && host->nr_ports != CARM_MAX_PORTS)
		return mq_err_set(e, "ports=%u: the firmware has 8 or 4 ports",
				  host->nr_ports);
	if (host->max_queue > CARM_SAFE_MAX_QUEUE)
		pr_warn("%s: max_queue=%u: problems seem to occur when you exceed ~%u, even on newer hardware",
			DRV_NAME, host->max_queue, CARM_SAFE_MAX_QUEUE);
	if (fail) {
		for (i = 0; i < sizeof(probe_steps) / sizeof(probe_steps[0]);
		     i++)
			if (!strcmp(fail, probe_steps[i].name))
				break;
		if (i == sizeof(probe_steps) / sizeof(probe_steps[0]))
			return mq_err_set(
				e,
				"probe_fail=%s: one of alloc_buf, sync_time, get_fw_ver, port_scan, array_info",
				fail);
		host->fail_msg = probe_steps[i].type;
		host->fail_subtype = probe_steps[i].subtype;
	}
	for (i = 0; i < host->nr_ports; i++) {
		struct sx8_disk *d = &host->port[i].drive;
		bool present;

		snprintf(pfx, sizeof(pfx), "port%u.", i);
		if (mq_param_bool(p, mq_param_key(k, sizeof(k), pfx, "present"),
				  true, &present, e) ||
		    mq_param_size(p, mq_param_key(k, sizeof(k), pfx, "size"),
				  size, &d->size, e))
			return -1;
		if (d->size < 4096 || d->size % SECTOR_SIZE ||
		    (d->size >> SECTOR_SHIFT) > 0xffffffffffffull)
			return mq_err_set(
				e,
				"%ssize=%" PRIu64
				": a whole number of 512-byte sectors, "
				"at least 4 KiB and below 2^48 sectors",
				pfx, d->size);
		d->present = present;
		present_ports += present;
	}
	/* media= is every port's: one file or image would be shared. */
	if (media && strcmp(media, "ram") && present_ports > 1)
		return mq_err_set(e,
				  "media=%s: would be shared by %u ports; give "
				  "portN.media= for each (or portN.present=0)",
				  media, present_ports);
	for (i = 0; i < host->nr_ports; i++) {
		struct sx8_disk *d = &host->port[i].drive;
		struct media_open_args a = {.block_size = SECTOR_SIZE};
		char name[16];
		const char *pm;

		if (!d->present)
			continue;
		snprintf(pfx, sizeof(pfx), "port%u.", i);
		snprintf(name, sizeof(name), "sx8p%u", i);
		a.name = name;
		pm = mq_params_peek(p,
				    mq_param_key(k, sizeof(k), pfx, "media"));
		if (!pm)
			pm = media;
		/* size= sizes RAM; other stores have their own size. */
		if (!pm || !strcmp(pm, "ram") ||
		    mq_params_has(p, mq_param_key(k, sizeof(k), pfx, "size")))
			a.size = d->size;
		if (mq_device_open_media(host->mdev, p, pfx, NULL,
					 media ? media : "ram", &a, &d->media,
					 e))
			return -1;
		d->size = d->media->size;
		if (d->size < 4096 ||
		    (d->size >> SECTOR_SHIFT) > 0xffffffffffffull)
			return mq_err_set(e,
					  "%smedia: %" PRIu64
					  " bytes: at least 4 KiB and below "
					  "2^48 sectors",
					  pfx, d->size);
	}
	return 0;
}

static int carm_init_sync(struct carm_host *host, struct mq_err *e)
{
	pthread_condattr_t attr;
	int err;

	err = pthread_mutex_init(&host->lock, NULL);
	if (err)
		return mq_err_set(e, "mutex: %s", mq_strerror(err));
	host->lock_ready = true;
	err = pthread_condattr_init(&attr);
	if (!err) {
		err = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
		if (!err)
			err = pthread_cond_init(&host->probe_cond, &attr);
		pthread_condattr_destroy(&attr);
	}
	if (err)
		return mq_err_set(e, "condition variable: %s",
				  mq_strerror(err));
	host->cond_ready = true;
	return 0;
}

/* carm_init_disks: a tag set, a queue and a gendisk for every port. */
static int carm_init_disks(struct carm_host *host,
			   const struct rotational_params *rp, struct mq_err *e)
{
	unsigned int i;
	int err;

	for (i = 0; i < host->nr_ports; i++) {
		struct carm_port *port = &host->port[i];
		struct mq_tag_set *set = &port->tag_set;
		struct queue_limits *lim;
		struct mq_queue *q;
		char name[MQ_NAME_MAX];

		port->host = host;
		port->port_no = i;

		if (port->drive.present) {
			rotational_init(&port->drive.timing, rp,
					port->drive.size >> SECTOR_SHIFT);
			port->drive.timing_ready = true;
		}

		set->ops = &carm_mq_ops;
		set->nr_hw_queues = 1;
		set->queue_depth = host->max_queue;
		set->flags = MQ_F_SHOULD_MERGE;
		set->timeout_ms = host->mdev->io_timeout_ms;
		set->driver_data = port;
		err = mq_alloc_tag_set(set);
		if (err)
			return mq_err_set(e, "port%u: tag set: %s", i,
					  mq_strerror(err));
		port->tag_set_ready = true;

		snprintf(name, sizeof(name), DRV_NAME "/port%u", i);
		q = mq_init_queue(set, host->mdev->nr_ctx, name);
		if (!q)
			return mq_err_set(e, "port%u: cannot create the queue",
					  i);
		q->queuedata = port;
		lim = &q->limits;
		lim->max_segments = CARM_MAX_REQ_SG;
		/* lba_count is 16 bits */
		if (lim->max_sectors > 0xffff)
			lim->max_sectors = 0xffff;
		lim->max_discard_sectors = 0;
		lim->max_write_zeroes_sectors = 0;
		lim->write_cache = false;
		lim->fua = false;
		lim->rotational = true;

		snprintf(port->disk.disk_name, sizeof(port->disk.disk_name),
			 "%s", name);
		port->disk.queue = q;
		port->disk.fops = &carm_bd_ops;
		port->disk.attrs = carm_port_attrs;
		port->disk.private_data = port;
	}
	return 0;
}

/* carm_init_one: the host, its OOB queue, the ports, then the probe. */
static int sx8_probe(struct mq_device *dev, struct mq_params *p,
		     struct mq_err *e)
{
	struct rotational_params rp;
	struct carm_host *host;
	struct timespec ts;
	unsigned int i;
	int err;

	host = calloc(1, sizeof(*host));
	if (!host)
		return mq_err_set(e, "out of memory");
	host->mdev = dev;
	snprintf(host->name, sizeof(host->name), DRV_NAME);
	STAILQ_INIT(&host->stalled_list);
	for (i = 0; i < CARM_MAX_REQ; i++)
		host->req[i].tag = i;
	host->state = HST_INVALID;

	if (carm_read_keys(host, p, &rp, e) || carm_init_sync(host, e))
		goto fail;

	host->irq = irq_thread_create("sx8_irq");
	host->fsm_wq = host->irq ? workqueue_create("sx8_fsm", 1) : NULL;
	if (!host->irq || !host->fsm_wq) {
		mq_err_set(e, "cannot start the interrupt and probe threads");
		goto fail;
	}

	host->tag_set.ops = &carm_oob_mq_ops;
	host->tag_set.nr_hw_queues = 1;
	host->tag_set.queue_depth = 1;
	host->tag_set.flags = MQ_F_NO_SCHED;
	host->tag_set.timeout_ms = dev->io_timeout_ms;
	host->tag_set.driver_data = host;
	err = mq_alloc_tag_set(&host->tag_set);
	if (err) {
		mq_err_set(e, "OOB tag set: %s", mq_strerror(err));
		goto fail;
	}
	host->tag_set_ready = true;
	host->oob_q =
		mq_init_queue(&host->tag_set, dev->nr_ctx, DRV_NAME "/host");
	if (!host->oob_q) {
		mq_err_set(e, "OOB queue alloc failure");
		goto fail;
	}
	host->oob_q->queuedata = host;
	snprintf(host->oob_disk.disk_name, sizeof(host->oob_disk.disk_name),
		 DRV_NAME "/host");
	snprintf(host->oob_disk.description, sizeof(host->oob_disk.description),
		 "Promise SATA SX8 host: out-of-band queue (no export)");
	host->oob_disk.queue = host->oob_q;
	host->oob_disk.attrs = carm_host_attrs;
	host->oob_disk.faults = carm_host_faults;
	host->oob_disk.private_data = host;

	if (carm_init_disks(host, &rp, e))
		goto fail;

	dev->private_data = host;
	if (mq_device_add_internal(dev, &host->oob_disk)) {
		mq_err_set(e, "cannot publish the OOB queue: %s",
			   mq_strerror(errno));
		goto fail_unpublished;
	}

	/* Start the probe and wait for it (probe_comp). */
	pthread_mutex_lock(&host->lock);
	host->state = HST_PROBE_START;
	pthread_mutex_unlock(&host->lock);
	schedule_fsm(host);

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += CARM_PROBE_TIMEOUT_S;
	pthread_mutex_lock(&host->lock);
	while (!host->probe_done)
		if (pthread_cond_timedwait(&host->probe_cond, &host->lock,
					   &ts) == ETIMEDOUT)
			break;
	if (!host->probe_done || host->state != HST_PROBE_FINISHED) {
		unsigned int state = host->state, failed = host->failed_state;
		bool done = host->probe_done;

		pthread_mutex_unlock(&host->lock);
		if (!done)
			mq_err_set(e, "probe did not finish in %u s (state %s)",
				   CARM_PROBE_TIMEOUT_S,
				   carm_state_name(state));
		else
			mq_err_set(e,
				   "probe failed in %s: the host is in %s, no "
				   "port is exported",
				   carm_state_name(failed),
				   carm_state_name(state));
		goto fail_unpublished;
	}
	pthread_mutex_unlock(&host->lock);
	pr_debug("%s: probe finished: %u ports, max_queue %u", host->name,
		 dev->nr_disks, host->max_queue);
	return 0;

fail_unpublished:
	/* The device forgets the disks before they go. */
	dev->nr_disks = 0;
	dev->nr_internal = 0;
	dev->private_data = NULL;
fail:
	carm_free(host);
	return -1;
}

static void sx8_remove(struct mq_device *dev)
{
	if (!dev->private_data)
		return;
	carm_free(dev->private_data);
	dev->private_data = NULL;
}

/* Graceful shutdown: what the ports' stores hold is made durable. */
static int sx8_sync(struct mq_device *dev)
{
	struct carm_host *host = dev->private_data;
	unsigned int i;
	int err = 0;

	for (i = 0; host && i < host->nr_ports; i++)
		if (host->port[i].drive.media && !err)
			err = media_flush(host->port[i].drive.media);
	return err;
}

static const struct mq_param_spec sx8_params[] = {
	{"size", "1G", "every port's disk size (portN.size overrides)"},
	{"ports", "8", "the firmware's ports: 8, or 4 (FW_VER_4PORT)"},
	{"max_queue", "1",
	 "commands in flight, host-wide, and each port's queue depth "
	 "(1..64; warns above 30)"},
	{"yield_to_waiters", "0",
	 "ours: while queues wait on the host's ring, a port asking for a "
	 "message is sent behind them (the driver lets it take a free one)"},
	{"portN.size", NULL, "port N's disk size"},
	{"portN.present", "1", "0: no disk on port N (not exported)"},
	{"portN.media", NULL,
	 "port N's store: ram, file:PATH, nbd:URI or rbd:POOL/IMAGE "
	 "(media= is every port's; only ram may be shared)"},
	{"probe_fail", NULL,
	 "alloc_buf, sync_time, get_fw_ver, port_scan or array_info: that "
	 "probe message fails (HST_ERROR)"},
	{"rpm", "7200", "SATA disk timing: spindle speed"},
	{"seek_ms", "8.5", "average seek, ms"},
	{"track_seek_ms", "0.8", "track-to-track seek, ms"},
	{"udma", "5", "interface: UDMA mode 0-6 (-1: PIO)"},
	{"pio", "4", "PIO mode 0-4, when udma=-1"},
	{"write_cache", "1", "the disks' write cache"},
	{NULL},
};

const struct mq_driver sx8_driver = {
	.name = "sx8",
	.description = "Promise SATA SX8 host, Linux sx8: exports sx8/port0.. "
		       "sx8/port7, 1 hw queue each, depth max_queue, sharing "
		       "the host's messages and S/G entries",
	.params = sx8_params,
	.probe = sx8_probe,
	.remove = sx8_remove,
	.sync = sx8_sync,
};
