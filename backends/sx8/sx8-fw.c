// SPDX-License-Identifier: GPL-2.0
/*
 * The SX8's firmware, as the driver sees it through its message queue:
 * a message posted to CARM_IHQP is executed and its response (handle and
 * status) raises the host's interrupt.  The queue holds CARM_Q_LEN (48)
 * messages; a post to a full queue is refused, as CARM_HMUC's CARM_Q_FULL
 * bit refuses it.
 *
 * Reads and writes go to the port's disk, one command at a time per port,
 * each taking the rotational model's time (a SATA disk) scaled by
 * time_scale; the ports work in parallel.  The probe's messages are
 * answered at once: the firmware version (FW_VER_4PORT with ports=4),
 * the channel scan (0 for a disk, IOC_SCAN_CHAN_NODEV for an empty port)
 * and ARRAY_INFO (the disk's size, geometry and name).  probe_fail=STEP
 * makes one probe message fail, to see the driver reach HST_ERROR.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sx8.h"
#include "../../server/mq/log.h"

static uint32_t carm_fw_rw(struct carm_request *crq);

/* The interrupt: hand the response to the driver. */
static void carm_fw_respond(struct irq_work *work)
{
	struct carm_request *crq =
		container_of(work, struct carm_request, work);
	struct carm_host *host = crq->port ? crq->port->host : NULL;

	/* Specials carry no port: the request's queue names the host. */
	if (!host)
		host = crq->rq->q->queuedata;
	/* The DMA of a read or write, done by the time it interrupts. */
	if (crq->msg_type == CARM_MSG_READ || crq->msg_type == CARM_MSG_WRITE)
		crq->status = carm_fw_rw(crq);
	pthread_mutex_lock(&host->lock);
	host->hw_q_used--;
	pthread_mutex_unlock(&host->lock);
	carm_handle_resp(host, TAG_ENCODE(crq->tag), crq->status);
}

/* Move the data of a read or write; RMSG_OK or an error status. */
static uint32_t carm_fw_rw(struct carm_request *crq)
{
	struct sx8_disk *d = &crq->port->drive;
	uint64_t off = crq->lba << SECTOR_SHIFT;
	struct request *rq = crq->rq;
	struct bio *bio;

	if (!d->present ||
	    off + ((uint64_t)crq->lba_count << SECTOR_SHIFT) > d->size)
		return 0x20; /* an ATA error: no such sector */
	rq_for_each_bio (bio, rq) {
		if (crq->msg_type == CARM_MSG_WRITE) {
			if (media_write(d->media, bio->bi_buf, bio->bi_size,
					off))
				return 0x40;
		} else if (media_read(d->media, bio->bi_buf, bio->bi_size,
				      off)) {
			return 0x40;
		}
		off += bio->bi_size;
	}
	return RMSG_OK;
}

static uint32_t carm_fw_special(struct carm_host *host,
				struct carm_request *crq)
{
	unsigned int i;

	if (crq->msg_type == host->fail_msg &&
	    crq->msg_subtype == host->fail_subtype) {
		pr_warn("%s: firmware: probe_fail: message %u/%u fails",
			host->name, crq->msg_type, crq->msg_subtype);
		return 0x80;
	}
	switch (crq->msg_type) {
	case CARM_MSG_MISC:
		if (crq->msg_subtype == MISC_GET_FW_VER) {
			crq->fw_version = 0x01020304;
			crq->fw_features =
				FW_VER_NON_RAID |
				(host->nr_ports == 4 ? FW_VER_4PORT : 0);
		}
		return RMSG_OK;
	case CARM_MSG_IOCTL:
		for (i = 0; i < CARM_MAX_PORTS; i++)
			crq->scan[i] =
				i < host->nr_ports &&
						host->port[i].drive.present
					? 0
					: IOC_SCAN_CHAN_NODEV;
		return RMSG_OK;
	case CARM_MSG_ARRAY: {
		struct carm_port *port;

		if (crq->array_id >= host->nr_ports ||
		    !host->port[crq->array_id].drive.present) {
			crq->info.no_exist = true;
			return RMSG_OK;
		}
		port = &host->port[crq->array_id];
		crq->info = (struct carm_array_info){
			.size = port->drive.size >> SECTOR_SHIFT,
			.head = 16,
			.sect = 63,
		};
		crq->info.cyl =
			(uint16_t)(crq->info.size / (16 * 63) > 65535
					   ? 65535
					   : crq->info.size / (16 * 63));
		snprintf(crq->info.name, sizeof(crq->info.name),
			 "SATA disk %u                 ", crq->array_id);
		return RMSG_OK;
	}
	default:
		return 0x80;
	}
}

/* Execute a message and schedule its interrupt.  Under host->lock. */
static void carm_fw_exec(struct carm_host *host, struct carm_request *crq)
{
	uint64_t delay = 0;

	if (crq->msg_type == CARM_MSG_READ || crq->msg_type == CARM_MSG_WRITE) {
		struct sx8_disk *d = &crq->port->drive;
		uint64_t now = mq_now_ns(), start, svc;

		svc = mq_device_delay_ns(
			host->mdev,
			(double)timing_service_ns(
				&d->timing.base,
				crq->msg_type == CARM_MSG_WRITE ? TIMING_WRITE
								: TIMING_READ,
				crq->lba, crq->lba_count << SECTOR_SHIFT));
		start = d->busy_until_ns > now ? d->busy_until_ns : now;
		d->busy_until_ns = start + svc;
		delay = d->busy_until_ns - now;
	} else {
		crq->status = carm_fw_special(host, crq);
	}
	irq_raise(host->irq, &crq->work, carm_fw_respond, delay);
}

int carm_fw_post(struct carm_host *host, struct carm_request *crq)
{
	if (host->hw_q_used >= CARM_Q_LEN) {
		host->q_full++;
		return -EBUSY;
	}
	host->hw_q_used++;
	if (host->stalled) {
		STAILQ_INSERT_TAIL(&host->stalled_list, crq, stalled);
		return 0;
	}
	carm_fw_exec(host, crq);
	return 0;
}

void carm_fw_stall(struct carm_host *host, bool stall)
{
	struct carm_request *crq;

	pthread_mutex_lock(&host->lock);
	host->stalled = stall;
	while (!stall && (crq = STAILQ_FIRST(&host->stalled_list))) {
		STAILQ_REMOVE_HEAD(&host->stalled_list, stalled);
		carm_fw_exec(host, crq);
	}
	pthread_mutex_unlock(&host->lock);
}

bool carm_fw_step(struct carm_host *host)
{
	struct carm_request *crq;

	pthread_mutex_lock(&host->lock);
	crq = STAILQ_FIRST(&host->stalled_list);
	if (crq) {
		STAILQ_REMOVE_HEAD(&host->stalled_list, stalled);
		carm_fw_exec(host, crq);
	}
	pthread_mutex_unlock(&host->lock);
	return crq != NULL;
}
