// SPDX-License-Identifier: GPL-2.0
/*
 * sunvdc: the Sun LDOM virtual disk client, driven the way
 * drivers/block/sunvdc.c drives it after seed 004 converted it to blk-mq.
 * The disk is "vdiska" (dev_no=1 makes it vdiskb, and so on).
 *
 * One hw queue, as deep as the transmit ring (VDC_TX_RING_SIZE, 512),
 * SHOULD_MERGE.  vdc_queue_rq puts each request in the ring's next
 * descriptor and sends the server a DRING_DATA message naming it; the
 * server in the service domain (vds.c) does the I/O and ACKs, and the ACK
 * ends the request (vdc_end_one).  When the ring is full queue_rq stops
 * the hw queue and returns DEV_RESOURCE; an ACK that leaves at least half
 * of the ring free starts it again (vdc_blk_queue_start).
 *
 * A link reset (LDC_EVENT_RESET) stops the queue, requeues every request
 * in flight from the consumer to the producer index, takes the port down
 * and allocates a fresh ring; the vio timer does the handshake again
 * after ldc_handshake_ms and, once it completes, the queue starts and the
 * requeued requests go out again.  A request dispatched before the
 * handshake is sent on the dead channel and ends with IOERR, as in Linux
 * (wait_for_handshake=1, ours, holds it instead).  If the link stays down for
 * ldc_timeout seconds (the vdc-timeout property; 0 waits forever), the
 * queue is drained: every request meets queue_rq and ends with IOERR.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sunvdc.h"
#include "../common/irq.h"
#include "../../server/mq/log.h"

enum vdc_work_kind {
	VDC_LDC_RESET_WORK,
	VDC_VIO_TIMER,
	VDC_LDC_RESET_TIMER_WORK,
};

struct vdc_work {
	struct irq_work work; /* first */
	struct vdc_port *port;
	enum vdc_work_kind kind;
	uint64_t gen;
};

static void vdc_ldc_reset(struct vdc_port *port);
static void vdc_work_fn(struct irq_work *work);

/* Ordered from largest major to lowest */
static const struct vio_version vdc_versions[] = {
	{.major = 1, .minor = 2},
	{.major = 1, .minor = 1},
	{.major = 1, .minor = 0},
};

/* queue_work / mod_timer / mod_delayed_work on sunvdc_wq; lock held. */
static void vdc_queue_work(struct vdc_port *port, enum vdc_work_kind kind,
			   uint64_t gen, uint64_t delay_ns)
{
	struct vdc_work *w = calloc(1, sizeof(*w));

	if (!w) {
		pr_err(PFX "%s: out of memory: work %d not queued",
		       port->disk_name, kind);
		return;
	}
	w->port = port;
	w->kind = kind;
	w->gen = gen;
	irq_raise(port->wq, &w->work, vdc_work_fn, delay_ns);
}

/*
 * mod_timer(&port->vio.timer): the handshake after ldc_handshake_ms.  A
 * retry (the link still down) waits VDC_RETRY_MIN_MS of real time at
 * least, so that time_scale=0 does not spin on a dead link.
 */
#define VDC_RETRY_MIN_MS 10

static void vdc_mod_timer(struct vdc_port *port, bool retry)
{
	uint64_t delay =
		mq_device_delay_ns(port->mdev, port->handshake_ms * 1e6);

	if (retry && delay < VDC_RETRY_MIN_MS * 1000000ull)
		delay = VDC_RETRY_MIN_MS * 1000000ull;
	vdc_queue_work(port, VDC_VIO_TIMER, ++port->vio_timer_gen, delay);
}

static void vdc_blk_queue_start(struct vdc_port *port)
{
	struct vio_dring_state *dr = &port->vio.drings[VIO_DRIVER_TX_RING];

	/* restart blk queue when ring is half emptied. also called after
	 * handshake completes, so check for initial handshake before we've
	 * allocated a disk.
	 */
	if (port->disk && dr->base &&
	    vdc_tx_dring_avail(dr) * 100 / VDC_TX_RING_SIZE >= 50)
		mq_start_stopped_hw_queues(port->queue, true);
}

static void vdc_finish(struct vio_driver_state *vio, int err, int waiting_for)
{
	if (vio->cmp &&
	    (waiting_for == -1 || vio->cmp->waiting_for == waiting_for)) {
		vio->cmp->err = err;
		vio->cmp->done = true;
		pthread_cond_broadcast(&vio->cmp->com);
		vio->cmp = NULL;
	}
}

static void vdc_handshake_complete(struct vdc_port *port)
{
	port->ldc_reset_timer_gen++; /* cancel_delayed_work */
	port->ldc_resetting = false;
	vdc_finish(&port->vio, 0, WAITING_FOR_LINK_UP);
	/*
	 * vdc_requeue_inflight left the requests on the requeue list without
	 * a kick; they go back to the dispatch list now, ahead of the start.
	 */
	if (port->disk)
		mq_kick_requeue_list(port->queue);
	vdc_blk_queue_start(port);
}

/* vdc_send_attr and vdc_handle_attr around the server's answer. */
static int vdc_handle_attr(struct vdc_port *port,
			   const struct vio_disk_attr_info *pkt)
{
	if (!pkt->ack) {
		pr_err(PFX "%s: Attribute NACK", port->vio.name);
		return -ECONNRESET;
	}
	switch (pkt->vdisk_type) {
	case VD_DISK_TYPE_DISK:
	case VD_DISK_TYPE_SLICE:
		break;
	default:
		pr_err(PFX "%s: Bogus vdisk_type 0x%x", port->vio.name,
		       pkt->vdisk_type);
		return -ECONNRESET;
	}
	if (pkt->vdisk_block_size > port->vdisk_block_size) {
		pr_err(PFX "%s: BLOCK size increased %u --> %u", port->vio.name,
		       port->vdisk_block_size, pkt->vdisk_block_size);
		return -ECONNRESET;
	}

	port->operations = pkt->operations;
	port->vdisk_type = pkt->vdisk_type;
	if (vdc_version_supported(port, 1, 1)) {
		port->vdisk_size = pkt->vdisk_size;
		port->vdisk_mtype = pkt->vdisk_mtype;
	}
	if (pkt->max_xfer_size < port->max_xfer_size)
		port->max_xfer_size = pkt->max_xfer_size;
	port->vdisk_block_size = pkt->vdisk_block_size;

	port->vdisk_phys_blksz = VDC_DEFAULT_BLK_SIZE;
	if (vdc_version_supported(port, 1, 2))
		port->vdisk_phys_blksz = pkt->phys_block_size;
	return 0;
}

/* The VIO handshake (vio_port_up and the control packet engine); lock held. */
static int vdc_handshake(struct vdc_port *port)
{
	struct vio_disk_attr_info pkt = {0}, ack;
	struct vio_version ver;
	uint64_t sid;
	int err;

	pkt.vdisk_block_size = port->vdisk_block_size;
	pkt.max_xfer_size = port->max_xfer_size;
	err = vds_handshake(port->vds, vdc_versions,
			    sizeof(vdc_versions) / sizeof(vdc_versions[0]),
			    &pkt, &ver, &sid, &ack);
	if (err)
		return err;
	port->vio.ver = ver;
	err = vdc_handle_attr(port, &ack);
	if (err)
		return err;
	port->vio.sid = sid;
	port->vio.hs_complete = true;
	return 0;
}

/* ---- the ring ------------------------------------------------------ */

static void vdc_end_special(struct vdc_port *port, struct vio_disk_desc *desc)
{
	int err = desc->status;

	vdc_finish(&port->vio, -err, WAITING_FOR_GEN_CMD);
}

/*
 * The descriptor at index is done.  Returns its request for the caller
 * to end once the lock is dropped (Linux ends it under the lock; here a
 * completion may run a client's callback, which must not find the port
 * locked), with its status in *status.
 */
static struct request *vdc_end_one(struct vdc_port *port,
				   struct vio_dring_state *dr,
				   unsigned int index, int *status)
{
	struct vio_disk_desc *desc = vio_dring_entry(dr, index);
	struct vdc_req_entry *rqe = &port->rq_arr[index];
	struct request *req;

	if (desc->state != VIO_DESC_DONE)
		return NULL;

	desc->state = VIO_DESC_FREE; /* ldc_unmap: the cookies are revoked */
	dr->cons = vio_dring_next(dr, index);

	req = rqe->req;
	if (req == NULL) {
		vdc_end_special(port, desc);
		return NULL;
	}

	rqe->req = NULL;
	*status = desc->status ? EIO : 0;

	vdc_blk_queue_start(port);
	return req;
}

static struct request *vdc_ack(struct vdc_port *port, uint32_t idx, int *status)
{
	struct vio_dring_state *dr = &port->vio.drings[VIO_DRIVER_TX_RING];

	if (!dr->base || idx >= VDC_TX_RING_SIZE)
		return NULL;
	return vdc_end_one(port, dr, idx, status);
}

static void vdc_nack(struct vdc_port *port, uint32_t idx)
{
	/* XXX Implement me XXX */
	atomic_fetch_add(&port->nacks, 1);
	pr_warn(PFX "%s: descriptor %u NACKed by the server; the driver does "
		    "nothing with a NACK (vdc_nack: \"XXX Implement me XXX\")",
		port->disk_name, idx);
}

void vdc_link_event(struct vdc_port *port, enum ldc_event event)
{
	if (event == LDC_EVENT_RESET) {
		port->vio.hs_complete = false; /* vio_link_state_change */
		port->ldc_resetting = true;
		vdc_queue_work(port, VDC_LDC_RESET_WORK, 0, 0);
	} else if (event == LDC_EVENT_UP) {
		/* vio_link_state_change starts the handshake */
		vdc_queue_work(port, VDC_VIO_TIMER, ++port->vio_timer_gen, 0);
	}
}

void vdc_event(struct vdc_port *port, enum ldc_event event,
	       enum vio_msg_type type, uint64_t sid, uint32_t idx)
{
	struct vio_driver_state *vio = &port->vio;
	struct request *req = NULL;
	int status = 0;

	pthread_mutex_lock(&vio->lock);

	if (event != LDC_EVENT_DATA_READY) {
		vdc_link_event(port, event);
		goto out;
	}

	/* vio_validate_sid: a message of an old session is dropped */
	if (!vio->hs_complete || sid != vio->sid)
		goto out;
	if (type == VIO_DRING_ACK)
		req = vdc_ack(port, idx, &status);
	else
		vdc_nack(port, idx);
out:
	pthread_mutex_unlock(&vio->lock);
	if (req)
		mq_end_request(req, status);
}

static void udelay(unsigned int usecs)
{
	struct timespec ts = {0, (long)usecs * 1000};

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

static int __vdc_tx_trigger(struct vdc_port *port)
{
	struct vio_dring_state *dr = &port->vio.drings[VIO_DRIVER_TX_RING];
	int err, delay;
	int retries = 0;

	delay = 1;
	do {
		err = vds_ldc_write(port->vds, port->vio.sid, dr->prod);
		if (err > 0) {
			dr->snd_nxt++;
			break;
		}
		if (err == -EAGAIN)
			atomic_fetch_add(&port->eagain, 1);
		udelay(delay);
		if ((delay <<= 1) > 128)
			delay = 128;
		if (retries++ > VDC_MAX_RETRIES)
			break;
	} while (err == -EAGAIN);

	if (err == -ENOTCONN)
		vdc_ldc_reset(port);
	return err;
}

static int __send_request(struct request *req)
{
	struct vdc_port *port = req->q->queuedata;
	struct vio_dring_state *dr = &port->vio.drings[VIO_DRIVER_TX_RING];
	struct vdc_req_entry *rqe;
	struct vio_disk_desc *desc;
	struct bio *bio;
	unsigned int nsg = 0;
	int err;
	uint64_t len;
	uint8_t op;

	if (req_op(req) == REQ_OP_READ)
		op = VD_OP_BREAD;
	else
		op = VD_OP_BWRITE;

	desc = vio_dring_cur(dr);

	/* blk_rq_map_sg and ldc_map_sg: one cookie per bio */
	len = 0;
	rq_for_each_bio (bio, req) {
		if (nsg >= port->ring_cookies) {
			pr_err(PFX "ldc_map_sg() failure, err=%d.", -EINVAL);
			return -EINVAL;
		}
		desc->cookies[nsg].cookie_addr = bio->bi_buf;
		desc->cookies[nsg].cookie_size = bio->bi_size;
		len += bio->bi_size;
		nsg++;
	}

	rqe = &port->rq_arr[dr->prod];
	rqe->req = req;

	desc->req_id = port->req_id;
	desc->operation = op;
	if (port->vdisk_type == VD_DISK_TYPE_DISK)
		desc->slice = 0xff;
	else
		desc->slice = 0;
	desc->status = ~0u;
	desc->offset = (blk_rq_pos(req) << 9) / port->vdisk_block_size;
	desc->size = len;
	desc->ncookies = nsg;

	/* The peer reads the descriptor once its state says READY. */
	atomic_thread_fence(memory_order_release);
	desc->state = VIO_DESC_READY;

	err = __vdc_tx_trigger(port);
	if (err < 0) {
		pr_err(PFX "vdc_tx_trigger() failure, err=%d", err);
		rqe->req = NULL;
	} else {
		port->req_id++;
		dr->prod = vio_dring_next(dr, dr->prod);
	}

	return err;
}

static enum mq_qrc vdc_queue_rq(struct mq_hw_ctx *hctx,
				const struct mq_queue_data *bd)
{
	struct vdc_port *port = hctx->queue->queuedata;
	struct vio_dring_state *dr;

	dr = &port->vio.drings[VIO_DRIVER_TX_RING];

	mq_start_request(bd->rq);

	pthread_mutex_lock(&port->vio.lock);

	/*
	 * Doing drain, just end the request in error
	 */
	if (port->drain) {
		atomic_fetch_add(&port->drained, 1);
		pthread_mutex_unlock(&port->vio.lock);
		return MQ_QRC_IOERR;
	}

	/*
	 * wait_for_handshake=1, ours and off by default: the channel has
	 * reset and the handshake is not done, so wait for it (the reset
	 * work requeues what is in flight, the handshake starts the queue).
	 * Linux, and the default, send here: the dead channel answers
	 * ENOTCONN, __vdc_tx_trigger resets the port and the request ends
	 * with IOERR.
	 */
	if (port->wait_for_handshake && port->ldc_resetting) {
		atomic_fetch_add(&port->reset_waits, 1);
		mq_stop_hw_queue(hctx);
		pthread_mutex_unlock(&port->vio.lock);
		return MQ_QRC_DEV_RESOURCE;
	}

	if (!dr->base || vdc_tx_dring_avail(dr) < 1) {
		/*
		 * Stopped before the lock is dropped, so that the ACK that
		 * frees the ring sees a stopped queue to start.
		 */
		mq_stop_hw_queue(hctx);
		atomic_fetch_add(&port->dev_resource, 1);
		pthread_mutex_unlock(&port->vio.lock);
		return MQ_QRC_DEV_RESOURCE;
	}

	if (__send_request(bd->rq) < 0) {
		pthread_mutex_unlock(&port->vio.lock);
		return MQ_QRC_IOERR;
	}

	pthread_mutex_unlock(&port->vio.lock);
	return MQ_QRC_OK;
}

/* A request the driver makes itself (VD_OP_GET_DISKGEOM at probe). */
static int generic_request(struct vdc_port *port, uint8_t op, void *buf,
			   int len)
{
	struct vio_dring_state *dr;
	struct vio_completion comp = {.waiting_for = WAITING_FOR_GEN_CMD};
	struct vio_disk_desc *desc;
	int err;

	if (!(((uint64_t)1 << (uint64_t)op) & port->operations))
		return -EOPNOTSUPP;
	if (op != VD_OP_GET_DISKGEOM)
		return -EINVAL;
	err = pthread_cond_init(&comp.com, NULL);
	if (err)
		return -err;

	pthread_mutex_lock(&port->vio.lock);

	dr = &port->vio.drings[VIO_DRIVER_TX_RING];

	/* XXX If we want to use this code generically we have to
	 * XXX handle TX ring exhaustion etc.
	 */
	desc = vio_dring_cur(dr);
	desc->cookies[0].cookie_addr = buf;
	desc->cookies[0].cookie_size = len;
	port->vio.cmp = &comp;
	port->rq_arr[dr->prod].req = NULL;

	desc->req_id = port->req_id;
	desc->operation = op;
	desc->slice = 0;
	desc->status = ~0u;
	desc->offset = 0;
	desc->size = len;
	desc->ncookies = 1;
	atomic_thread_fence(memory_order_release);
	desc->state = VIO_DESC_READY;

	err = __vdc_tx_trigger(port);
	if (err >= 0) {
		port->req_id++;
		dr->prod = vio_dring_next(dr, dr->prod);
		while (!comp.done)
			pthread_cond_wait(&comp.com, &port->vio.lock);
		err = comp.err;
	} else {
		port->vio.cmp = NULL;
	}
	pthread_mutex_unlock(&port->vio.lock);
	pthread_cond_destroy(&comp.com);
	return err;
}

/* ---- the port ------------------------------------------------------ */

static int vdc_alloc_tx_ring(struct vdc_port *port)
{
	struct vio_dring_state *dr = &port->vio.drings[VIO_DRIVER_TX_RING];

	dr->base = calloc(VDC_TX_RING_SIZE, sizeof(*dr->base));
	if (!dr->base)
		return -ENOMEM;
	dr->ident++;
	dr->num_entries = VDC_TX_RING_SIZE;
	dr->prod = dr->cons = 0;
	dr->pending = VDC_TX_RING_SIZE;
	return 0;
}

static void vdc_free_tx_ring(struct vdc_port *port)
{
	struct vio_dring_state *dr = &port->vio.drings[VIO_DRIVER_TX_RING];

	free(dr->base);
	dr->base = NULL;
	dr->num_entries = 0;
	dr->pending = 0;
}

static void vdc_port_down(struct vdc_port *port)
{
	port->vio.hs_complete = false; /* ldc_disconnect, ldc_unbind */
	vdc_free_tx_ring(port);
}

static void vdc_requeue_inflight(struct vdc_port *port)
{
	struct vio_dring_state *dr = &port->vio.drings[VIO_DRIVER_TX_RING];
	uint32_t idx;

	if (!dr->base)
		return;
	for (idx = dr->cons; idx != dr->prod; idx = vio_dring_next(dr, idx)) {
		struct vio_disk_desc *desc = vio_dring_entry(dr, idx);
		struct vdc_req_entry *rqe = &port->rq_arr[idx];
		struct request *req;

		desc->state = VIO_DESC_FREE;
		dr->cons = vio_dring_next(dr, idx);

		req = rqe->req;
		if (req == NULL) {
			vdc_end_special(port, desc);
			continue;
		}

		rqe->req = NULL;
		atomic_fetch_add(&port->requeued, 1);
		mq_requeue_request(req, false);
	}
}

static void vdc_queue_drain(struct vdc_port *port)
{
	struct mq_queue *q = port->queue;

	/*
	 * Mark the queue as draining, then freeze/quiesce to ensure
	 * that all existing requests are seen in ->queue_rq() and killed
	 */
	port->drain = 1;
	/*
	 * vdc_ldc_reset stopped the queue and left the requests it requeued
	 * unkicked: a freeze would wait for them forever.  Start it and kick
	 * them, so that each meets queue_rq.
	 */
	mq_kick_requeue_list(q);
	mq_start_stopped_hw_queues(q, true);
	pthread_mutex_unlock(&port->vio.lock);

	mq_freeze_queue(q);
	mq_quiesce_queue(q);

	pthread_mutex_lock(&port->vio.lock);
	port->drain = 0;
	/* Given up on the link: requests are sent, and fail, as in Linux. */
	port->ldc_resetting = false;
	/*
	 * Thawed without the lock: bios held by the freeze are submitted
	 * from here and may reach queue_rq on this thread.
	 */
	pthread_mutex_unlock(&port->vio.lock);
	mq_unquiesce_queue(q);
	mq_unfreeze_queue(q);
	pthread_mutex_lock(&port->vio.lock);
}

static void vdc_ldc_reset_timer_work(struct vdc_port *port)
{
	struct vio_driver_state *vio = &port->vio;

	if (!vio->hs_complete) {
		pr_warn(PFX "%s ldc down %" PRIu64 " seconds, draining queue",
			port->disk_name, port->ldc_timeout);
		vdc_queue_drain(port);
		vdc_blk_queue_start(port);
	}
}

static void vdc_ldc_reset(struct vdc_port *port)
{
	int err;

	pr_warn(PFX "%s ldc link reset", port->disk_name);
	port->ldc_resetting = true;
	atomic_fetch_add(&port->resets, 1);
	mq_stop_hw_queues(port->queue);
	vdc_requeue_inflight(port);
	vdc_port_down(port);

	err = vdc_alloc_tx_ring(port);
	if (err) {
		pr_err(PFX "%s vio_alloc_tx_ring:%d", port->disk_name, err);
		return;
	}

	if (port->ldc_timeout)
		vdc_queue_work(port, VDC_LDC_RESET_TIMER_WORK,
			       ++port->ldc_reset_timer_gen,
			       port->ldc_timeout * 1000000000ull);
	vdc_mod_timer(port, false);
}

/* The vio timer: try the handshake, again a period later if it fails. */
static void vdc_vio_timer(struct vdc_port *port)
{
	int err;

	if (port->vio.hs_complete)
		return;
	err = vdc_handshake(port);
	if (err) {
		if (err != -ENOTCONN)
			pr_err(PFX "%s: handshake failed: %s", port->disk_name,
			       strerror(-err));
		vdc_mod_timer(port, true);
		return;
	}
	pr_info(PFX "%s: link up, protocol %d.%d", port->disk_name,
		port->vio.ver.major, port->vio.ver.minor);
	vdc_handshake_complete(port);
}

static void vdc_work_fn(struct irq_work *work)
{
	struct vdc_work *w = (struct vdc_work *)work;
	struct vdc_port *port = w->port;

	pthread_mutex_lock(&port->vio.lock);
	if (port->removing)
		goto out;
	switch (w->kind) {
	case VDC_LDC_RESET_WORK:
		vdc_ldc_reset(port);
		break;
	case VDC_VIO_TIMER:
		if (w->gen == port->vio_timer_gen)
			vdc_vio_timer(port);
		break;
	case VDC_LDC_RESET_TIMER_WORK:
		if (w->gen == port->ldc_reset_timer_gen)
			vdc_ldc_reset_timer_work(port);
		break;
	}
out:
	pthread_mutex_unlock(&port->vio.lock);
	free(w);
}

static const struct mq_ops vdc_mq_ops = {
	.queue_rq = vdc_queue_rq,
};

/* ---- probe and remove ---------------------------------------------- */

/* A request the driver still holds at remove (a NACKed one) ends here. */
static bool vdc_end_leftover(struct request *rq, void *data)
{
	if (mq_request_started(rq))
		mq_end_request(rq, EIO);
	return true;
}

static void vdc_free(struct vdc_port *port)
{
	if (port->lock_ready) {
		pthread_mutex_lock(&port->vio.lock);
		port->removing = true;
		pthread_mutex_unlock(&port->vio.lock);
	}
	if (port->queue)
		mq_stop_hw_queues(port->queue);
	/*
	 * The server first, so that no event reaches the work thread once it
	 * is gone; then flush_work, cancel_delayed_work_sync, del_timer_sync
	 * (work still queued sees removing and does nothing).
	 */
	vds_destroy(port->vds);
	if (port->wq)
		irq_thread_destroy(port->wq);
	if (port->queue) {
		mq_tagset_busy_iter(&port->tag_set, vdc_end_leftover, NULL);
		mq_cleanup_queue(port->queue);
	}
	if (port->tag_set_ready)
		mq_free_tag_set(&port->tag_set);
	vdc_free_tx_ring(port);
	if (port->lock_ready)
		pthread_mutex_destroy(&port->vio.lock);
	free(port);
}

/* vdc_port_up: the first handshake, before there is a disk. */
static int vdc_port_up(struct vdc_port *port, struct mq_err *e)
{
	int err;

	pthread_mutex_lock(&port->vio.lock);
	err = vdc_handshake(port);
	pthread_mutex_unlock(&port->vio.lock);
	if (err == -ECONNRESET)
		return mq_err_set(e,
				  "%s: the service domain's attributes were "
				  "refused (see the line above); accepted: "
				  "vdisk_block_size at most %u",
				  port->disk_name, VDC_DEFAULT_BLK_SIZE);
	if (err)
		return mq_err_set(e, "%s: handshake failed: %s",
				  port->disk_name, strerror(-err));
	return 0;
}

static int probe_disk(struct vdc_port *port, struct mq_err *e)
{
	struct mq_device *dev = port->mdev;
	struct queue_limits *lim;
	struct gendisk *g = &port->gendisk;
	const char *what = "Virtual Hard disk";
	int err;

	if (vdc_port_up(port, e))
		return -1;

	/* Using version 1.2 means vdisk_phys_blksz should be set unless the
	 * disk is reserved by another system.
	 */
	if (vdc_version_supported(port, 1, 2) && !port->vdisk_phys_blksz)
		return mq_err_set(e,
				  "%s: ENODEV: the service domain reports no "
				  "physical block size: the disk is reserved "
				  "by another system",
				  port->disk_name);

	if (vdc_version_supported(port, 1, 1)) {
		/* vdisk_size should be set during the handshake, if it wasn't
		 * then the underlying disk is reserved by another system
		 */
		if (port->vdisk_size == (uint64_t)-1)
			return mq_err_set(e,
					  "%s: ENODEV: vdisk_size is -1: the "
					  "disk is reserved by another system",
					  port->disk_name);
	} else {
		struct vio_disk_geom geom = {0};

		err = generic_request(port, VD_OP_GET_DISKGEOM, &geom,
				      sizeof(geom));
		if (err < 0)
			return mq_err_set(e,
					  "%s: VD_OP_GET_DISKGEOM returns "
					  "error %d",
					  port->disk_name, err);
		port->vdisk_size =
			((uint64_t)geom.num_cyl * (uint64_t)geom.num_hd *
			 (uint64_t)geom.num_sec);
		if (!port->vdisk_size)
			return mq_err_set(e,
					  "%s: protocol 1.0 sizes the disk in "
					  "whole cylinders of 255 x 63 blocks, "
					  "and this one has none",
					  port->disk_name);
	}

	port->tag_set.ops = &vdc_mq_ops;
	port->tag_set.nr_hw_queues = 1;
	port->tag_set.queue_depth = VDC_TX_RING_SIZE;
	port->tag_set.flags = MQ_F_SHOULD_MERGE;
	port->tag_set.timeout_ms = dev->io_timeout_ms;
	port->tag_set.driver_data = port;
	err = mq_alloc_tag_set(&port->tag_set);
	if (err)
		return mq_err_set(e, "%s: Could not allocate queue: %s",
				  port->disk_name, strerror(err));
	port->tag_set_ready = true;
	port->queue =
		mq_init_queue(&port->tag_set, dev->nr_ctx, port->disk_name);
	if (!port->queue)
		return mq_err_set(e, "%s: Could not allocate queue.",
				  port->disk_name);
	port->queue->queuedata = port;

	lim = &port->queue->limits;
	lim->logical_block_size = VDC_DEFAULT_BLK_SIZE;
	lim->max_segments = port->ring_cookies;
	lim->max_sectors =
		port->max_xfer_size * port->vdisk_block_size >> SECTOR_SHIFT;
	lim->max_discard_sectors = 0;
	lim->max_write_zeroes_sectors = 0;
	lim->write_cache = false;
	lim->fua = false;
	lim->rotational = true; /* Linux leaves it set for a vdisk */

	g->queue = port->queue;
	g->private_data = port;
	g->attrs = vdc_attrs;
	g->faults = vdc_faults;
	set_capacity(g,
		     port->vdisk_size * port->vdisk_block_size >> SECTOR_SHIFT);

	if (vdc_version_supported(port, 1, 1)) {
		switch (port->vdisk_mtype) {
		case VD_MEDIA_TYPE_CD:
			what = "Virtual CDROM";
			g->read_only = true; /* and removable, GENHD_FL_CD */
			break;
		case VD_MEDIA_TYPE_DVD:
			what = "Virtual DVD";
			g->read_only = true;
			break;
		case VD_MEDIA_TYPE_FIXED:
			break;
		}
	}
	if (g->read_only)
		g->features = DISK_MULTI_CONN;

	lim->physical_block_size = port->vdisk_phys_blksz;

	snprintf(g->description, sizeof(g->description),
		 "Sun LDOM virtual disk client %s (Linux sunvdc): %s, "
		 "%" PRIu64 " sectors (%" PRIu64 " MB), protocol %d.%d%s",
		 port->disk_name, what, port->vdisk_size,
		 port->vdisk_size >> (20 - 9), port->vio.ver.major,
		 port->vio.ver.minor, g->read_only ? ", read-only" : "");
	pr_info(PFX "%s: %" PRIu64 " sectors (%" PRIu64 " MB) protocol %d.%d",
		port->disk_name, port->vdisk_size, port->vdisk_size >> (20 - 9),
		port->vio.ver.major, port->vio.ver.minor);

	dev->private_data = port;
	if (mq_device_add_disk(dev, g)) {
		dev->private_data = NULL;
		return mq_err_set(e, "cannot add disk %s", port->disk_name);
	}
	pthread_mutex_lock(&port->vio.lock);
	port->disk = g;
	pthread_mutex_unlock(&port->vio.lock);
	return 0;
}

static int vdc_read_version(struct mq_params *p, struct vio_version *ver,
			    struct mq_err *e)
{
	const char *s;

	if (mq_param_str(p, "vio_version", "1.2", &s, e))
		return -1;
	if (!strcmp(s, "1.0") || !strcmp(s, "1.1") || !strcmp(s, "1.2")) {
		ver->major = 1;
		ver->minor = s[2] - '0';
		return 0;
	}
	return mq_err_set(e, "vio_version=%s: accepted: 1.0, 1.1, 1.2", s);
}

static int vdc_read_size(struct mq_params *p, uint64_t *size, struct mq_err *e)
{
	const char *s;

	if (mq_param_str(p, "size", "1G", &s, e))
		return -1;
	if (!strcmp(s, "-1")) {
		*size = VDS_SIZE_RESERVED;
		return 0;
	}
	if (mq_parse_size(s, size) || !*size || *size % VDC_DEFAULT_BLK_SIZE)
		return mq_err_set(e,
				  "size=%s: must be a positive multiple of "
				  "512 bytes (K, M, G suffixes), or -1 for a "
				  "disk reserved by another system",
				  s);
	return 0;
}

static int vdc_read_params(struct vdc_port *port, struct mq_params *p,
			   struct vds_params *vp, unsigned int *dev_no,
			   struct mq_err *e)
{
	const char *mtype;
	unsigned int timeout, blksz, phys;

	memset(vp, 0, sizeof(*vp));
	if (vdc_read_version(p, &vp->ver, e) ||
	    vdc_read_size(p, &vp->size, e) ||
	    mq_param_uint(p, "vdisk_block_size", VDC_DEFAULT_BLK_SIZE, 512,
			  65536, &blksz, e) ||
	    mq_param_u64(p, "max_xfer_size", MAX_XFER_SIZE, 1, 1u << 20,
			 &vp->max_xfer_size, e) ||
	    mq_param_str(p, "vdisk_mtype", "disk", &mtype, e) ||
	    mq_param_uint(p, "phys_block_size", VDC_DEFAULT_BLK_SIZE, 0, 65536,
			  &phys, e) ||
	    mq_param_uint(p, "ldc_timeout", 0, 0, 86400, &timeout, e) ||
	    mq_param_uint(p, "ldc_handshake_ms", VDC_HANDSHAKE_MS, 0, 600000,
			  &port->handshake_ms, e) ||
	    mq_param_bool(p, "wait_for_handshake", false,
			  &port->wait_for_handshake, e) ||
	    mq_param_uint(p, "dev_no", 0, 0, 26 * 26 - 1, dev_no, e) ||
	    mq_param_double(p, "vds_latency_us", 20, 0, 1e7, &vp->latency_us,
			    e) ||
	    mq_param_double(p, "vds_mbps", 1000, 0, 1e6, &vp->mbps, e))
		return -1;
	if (blksz & (blksz - 1))
		return mq_err_set(e,
				  "vdisk_block_size=%u: must be a power of two",
				  blksz);
	if (phys & (phys - 1) || (phys && phys < 512))
		return mq_err_set(e,
				  "phys_block_size=%u: must be 0 or a power "
				  "of two from 512",
				  phys);
	if (!strcmp(mtype, "disk"))
		vp->vdisk_mtype = VD_MEDIA_TYPE_FIXED;
	else if (!strcmp(mtype, "cd"))
		vp->vdisk_mtype = VD_MEDIA_TYPE_CD;
	else if (!strcmp(mtype, "dvd"))
		vp->vdisk_mtype = VD_MEDIA_TYPE_DVD;
	else
		return mq_err_set(e, "vdisk_mtype=%s: accepted: disk, cd, dvd",
				  mtype);
	if (vp->size != VDS_SIZE_RESERVED && vp->size % blksz)
		return mq_err_set(e,
				  "size: must be a multiple of "
				  "vdisk_block_size=%u",
				  blksz);
	vp->vdisk_block_size = blksz;
	vp->phys_block_size = phys;
	port->ldc_timeout = timeout;
	return 0;
}

/*
 * The service domain's backing store: media= (sparse RAM by default).
 * size= sizes RAM; another store has its own size unless size= is given.
 */
static int vdc_open_media(struct mq_device *dev, struct mq_params *p,
			  struct vds_params *vp, struct mq_err *e)
{
	struct media_open_args a = {
		.block_size = vp->vdisk_block_size,
		.read_only = vp->vdisk_mtype != VD_MEDIA_TYPE_FIXED,
		.name = "vds",
	};
	const char *media = mq_params_peek(p, "media");
	bool own_size =
		media && strcmp(media, "ram") && !mq_params_has(p, "size");

	if (vp->size == VDS_SIZE_RESERVED)
		a.size = vp->vdisk_block_size; /* never read: EIO */
	else if (!own_size)
		a.size = vp->size;
	if (mq_device_open_media(dev, p, NULL, NULL, "ram", &a, &vp->media, e))
		return -1;
	if (own_size && vp->size != VDS_SIZE_RESERVED)
		vp->size = vp->media->size;
	return 0;
}

static int vdc_port_probe(struct mq_device *dev, struct mq_params *p,
			  struct mq_err *e)
{
	struct vds_params vp = {0};
	struct vdc_port *port;
	unsigned int dev_no;
	char *name;
	int err;

	port = calloc(1, sizeof(*port));
	if (!port)
		return mq_err_set(e, "Cannot allocate vdc_port.");
	port->mdev = dev;

	if (vdc_read_params(port, p, &vp, &dev_no, e) ||
	    vdc_open_media(dev, p, &vp, e))
		goto fail;

	name = port->gendisk.disk_name;
	if (dev_no >= 26)
		snprintf(name, sizeof(port->gendisk.disk_name),
			 VDCBLK_NAME "%c%c", 'a' + ((int)dev_no / 26) - 1,
			 'a' + ((int)dev_no % 26));
	else
		snprintf(name, sizeof(port->gendisk.disk_name),
			 VDCBLK_NAME "%c", 'a' + ((int)dev_no % 26));
	port->disk_name = name;
	port->vio.name = name;
	port->vdisk_size = (uint64_t)-1;

	err = pthread_mutex_init(&port->vio.lock, NULL);
	if (err) {
		mq_err_set(e, "mutex: %s", strerror(err));
		goto fail;
	}
	port->lock_ready = true;

	port->vdisk_block_size = VDC_DEFAULT_BLK_SIZE;
	port->max_xfer_size = MAX_XFER_SIZE;
	port->ring_cookies = MAX_RING_COOKIES;

	port->wq = irq_thread_create("sunvdc");
	if (!port->wq) {
		mq_err_set(e, "cannot start the sunvdc work thread");
		goto fail;
	}
	if (vdc_alloc_tx_ring(port)) {
		mq_err_set(e, "%s: cannot allocate the TX ring",
			   port->disk_name);
		goto fail;
	}
	port->vds = vds_create(dev, &vp, &port->vio.lock, port,
			       &port->vio.drings[VIO_DRIVER_TX_RING]);
	vp.media = NULL; /* the service domain's, or closed */
	if (!port->vds) {
		mq_err_set(e, "%s: cannot start the service domain",
			   port->disk_name);
		goto fail;
	}

	if (probe_disk(port, e))
		goto fail;
	return 0;

fail:
	media_close(vp.media);
	vdc_free(port);
	return -1;
}

static void vdc_port_remove(struct mq_device *dev)
{
	if (!dev->private_data)
		return;
	vdc_free(dev->private_data);
	dev->private_data = NULL;
}

static const struct mq_param_spec vdc_params[] = {
	{"size", "1G",
	 "the virtual disk; -1: reserved by another system (ENODEV)"},
	{"vio_version", "1.2",
	 "the highest protocol the service domain speaks: 1.0, 1.1 or 1.2"},
	{"vdisk_mtype", "disk", "disk, cd or dvd (read-only)"},
	{"vdisk_block_size", "512",
	 "the server's block size; the driver refuses more than 512"},
	{"max_xfer_size", "256",
	 "the server's largest transfer, in blocks (the driver's: 128 KiB)"},
	{"phys_block_size", "512",
	 "the physical block size reported from 1.2 on; 0: reserved (ENODEV)"},
	{"ldc_timeout", "0",
	 "vdc-timeout: seconds down before the queue is drained; 0: forever"},
	{"ldc_handshake_ms", "1000",
	 "the vio timer: the handshake after a reset, retried as long as the "
	 "link is down"},
	{"wait_for_handshake", "0",
	 "ours: a request dispatched during a link reset waits for the "
	 "handshake (the driver sends it on the dead channel: EIO)"},
	{"dev_no", "0", "the port number: 0 is vdiska, 1 vdiskb, ..."},
	{"vds_latency_us", "20", "the service domain's cost per descriptor"},
	{"vds_mbps", "1000", "the service domain's transfer rate, MB/s"},
	{NULL},
};

const struct mq_driver sunvdc_driver = {
	.name = "sunvdc",
	.description = "Sun LDOM virtual disk client, Linux sunvdc: exports "
		       "vdiska; 1 hw queue as deep as the 512-entry ring",
	.params = vdc_params,
	.probe = vdc_port_probe,
	.remove = vdc_port_remove,
};
