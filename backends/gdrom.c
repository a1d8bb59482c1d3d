// SPDX-License-Identifier: GPL-2.0
/*
 * gdrom: the Sega Dreamcast GD-ROM drive, driven the way
 * drivers/cdrom/gdrom.c drives it after seed 007 converted it to blk-mq.
 * The disk is "gdrom", as Linux names it.
 *
 * The tag set is BLOCKING with depth 1, so queue_rq runs on the hctx's
 * worker and may sleep: gdrom_readdisk_dma sends the CD_READ packet, starts
 * the DMA and waits for the DMA interrupt, up to GDROM_DEFAULT_TIMEOUT, then
 * ends the request itself.  Writes and other requests get IOERR.
 *
 * The drive below the driver reads the disc image (image=PATH, an ISO).
 * The disc's program area starts GD_SESSION_OFFSET (150) blocks in, and
 * the driver adds that offset when it builds the LBA; the image is
 * addressed without it, so the drive takes it off again.  Each DMA takes
 * the optical model's time (backends/timing/optical.h: seek, then constant
 * linear velocity at speed=12x) and completes on the drive's interrupt
 * thread.
 *
 * Fault: "dma_stall" makes the next read's DMA never complete; that read
 * times out with EIO and the one after it works.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "device.h"
#include "media/media.h"
#include "common/irq.h"
#include "timing/optical.h"
#include "../server/mq/log.h"

#define GDROM_DEV_NAME	  "gdrom"
#define GD_SESSION_OFFSET 150

/* SPI packet commands the drive understands */
#define GDROM_SPI_CD_READ 0x30

#define GDROM_HARD_SECTOR  2048
#define BLOCK_LAYER_SECTOR 512
#define GD_TO_BLK	   4

/* GDROM_DEFAULT_TIMEOUT is HZ * 7 in Linux. */
#define GDROM_DEFAULT_TIMEOUT_MS 7000

/* The DMA may move this much at once (blk_queue_max_segment_size). */
#define GDROM_MAX_SEGMENT_SIZE 0x40000

/* The status register's ERR bit. */
#define GDROM_STATUS_ERR 0x01

struct packet_command {
	unsigned char cmd[12];
};

/* The drive: the disc in it, its timing, its DMA engine and interrupt. */
struct gdrom_drive {
	struct media *disc;	/* the disc: image= or media= */
	uint64_t nr_blocks;	/* 2048-byte blocks on the disc */
	struct irq_thread *irq; /* HW_EVENT_GDROM_DMA */
	struct optical_model optical;
	bool optical_ready;
	uint64_t ready_at_ns; /* spun up at probe, as gdrom_open does */
	atomic_bool dma_stall;

	/* The DMA registers the driver programs (GDROM_DMA_*_REG). */
	void *dma_startaddr;
	uint32_t dma_length;
	int dma_direction;
	int dma_enable;
};

/* One DMA the drive runs; its interrupt frees it. */
struct gdrom_dma {
	struct irq_work work;
	struct gdrom_unit *gd;
	uint64_t seq; /* gd->dma_seq when it was started */
	unsigned int lba;
	unsigned int count;
	int status;
};

struct gdrom_unit {
	struct gendisk disk;
	struct mq_queue *gdrom_rq;
	struct mq_tag_set tag_set;
	struct mq_device *mdev;
	unsigned int dma_timeout_ms;

	/* request_queue: readdisk_dma waits there for the DMA interrupt */
	pthread_mutex_t lock;
	pthread_cond_t request_queue;
	int status;
	int pending;
	int transfer;
	uint64_t dma_seq; /* the DMA that transfer waits for */
	unsigned char last_cmd[12];

	struct gdrom_drive drive;

	atomic_ulong reads;
	atomic_ulong dma_timeouts;
	atomic_ulong refused;

	bool lock_ready;
	bool cond_ready;
	bool tag_set_ready;
};

/* ------------------------------------------------------------------ */
/* the drive                                                           */

/*
 * gdrom_dma_interrupt: the DMA is done.  A DMA the driver stopped waiting
 * for (a timeout) finds gd->transfer clear and is dropped, as in Linux;
 * only the DMA still waited for may touch the request's buffer.
 */
static void gdrom_dma_interrupt(struct irq_work *work)
{
	struct gdrom_dma *dma = container_of(work, struct gdrom_dma, work);
	struct gdrom_unit *gd = dma->gd;
	struct gdrom_drive *drive = &gd->drive;

	pthread_mutex_lock(&gd->lock);
	if (gd->transfer != 1 || gd->dma_seq != dma->seq) {
		pthread_mutex_unlock(&gd->lock);
		free(dma);
		return;
	}

	/* The drive maps the disc's LBA back to the image. */
	if (!dma->status) {
		uint64_t pos = (uint64_t)(dma->lba - GD_SESSION_OFFSET) *
			       GDROM_HARD_SECTOR;
		int err = media_read(drive->disc, drive->dma_startaddr,
				     drive->dma_length, pos);

		if (err) {
			pr_err("gdrom: reading the disc at LBA %u failed: %s",
			       dma->lba, strerror(err));
			dma->status = GDROM_STATUS_ERR;
		}
	}

	gd->status = dma->status;
	gd->transfer = 0;
	pthread_cond_broadcast(&gd->request_queue);
	pthread_mutex_unlock(&gd->lock);
	free(dma);
}

/* The drive's side of the packet: decode it, time it, start the DMA. */
static void gdrom_drive_packet(struct gdrom_unit *gd,
			       const struct packet_command *pc, uint64_t seq)
{
	struct gdrom_drive *drive = &gd->drive;
	const unsigned char *cmd = pc->cmd;
	struct gdrom_dma *dma;
	uint64_t sector, now, start, delay = 0;

	dma = calloc(1, sizeof(*dma));
	if (!dma) {
		pr_err("gdrom: out of memory: the DMA is never started");
		return;
	}
	dma->gd = gd;
	dma->seq = seq;
	dma->lba = (unsigned int)cmd[2] << 16 | cmd[3] << 8 | cmd[4];
	dma->count = (unsigned int)cmd[8] << 16 | cmd[9] << 8 | cmd[10];

	if (cmd[0] != GDROM_SPI_CD_READ || !drive->dma_enable ||
	    drive->dma_direction != 1 || dma->lba < GD_SESSION_OFFSET ||
	    dma->lba - GD_SESSION_OFFSET + (uint64_t)dma->count >
		    drive->nr_blocks ||
	    (uint64_t)dma->count * GDROM_HARD_SECTOR != drive->dma_length) {
		pr_err("gdrom: drive refuses packet %02x: LBA %u, %u blocks "
		       "(disc: LBA %u to %" PRIu64 ")",
		       cmd[0], dma->lba, dma->count, GD_SESSION_OFFSET,
		       GD_SESSION_OFFSET + drive->nr_blocks - 1);
		dma->status = GDROM_STATUS_ERR;
		irq_raise(drive->irq, &dma->work, gdrom_dma_interrupt, 0);
		return;
	}

	if (atomic_exchange(&drive->dma_stall, false)) {
		pr_warn("gdrom: dma_stall fault: the DMA of %u blocks at LBA %u never completes",
			dma->count, dma->lba);
		free(dma);
		return;
	}

	/* Seek and CLV transfer, after the spin-up the drive may still do. */
	sector = (uint64_t)(dma->lba - GD_SESSION_OFFSET) * GD_TO_BLK;
	now = mq_now_ns();
	start = drive->ready_at_ns > now ? drive->ready_at_ns : now;
	delay = start - now +
		mq_device_delay_ns(gd->mdev,
				   (double)timing_service_ns(
					   &drive->optical.base, TIMING_READ,
					   sector, drive->dma_length));
	irq_raise(drive->irq, &dma->work, gdrom_dma_interrupt, delay);
}

/* ------------------------------------------------------------------ */
/* the driver                                                          */

/* outsw(GDROM_DATA_REG, &command->cmd, 6): the drive has the packet. */
static void gdrom_packetcommand(struct gdrom_unit *gd,
				const struct packet_command *command,
				uint64_t seq)
{
	pthread_mutex_lock(&gd->lock);
	memcpy(gd->last_cmd, command->cmd, sizeof(gd->last_cmd));
	pthread_mutex_unlock(&gd->lock);
	gdrom_drive_packet(gd, command, seq);
}

/*
 * wait_event_interruptible_timeout(request_queue, gd.transfer == 0,
 * GDROM_DEFAULT_TIMEOUT).  Called with gd->lock held.
 */
static void gdrom_wait_transfer(struct gdrom_unit *gd)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += gd->dma_timeout_ms / 1000;
	ts.tv_nsec += (long)(gd->dma_timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	while (gd->transfer == 1)
		if (pthread_cond_timedwait(&gd->request_queue, &gd->lock,
					   &ts) == ETIMEDOUT)
			break;
}

/*
 * Implement DMA read using SPI command
 * 0 -> 0x30
 * 1 -> mode
 * 2 -> block >> 16
 * 3 -> block >> 8
 * 4 -> block
 * 8 -> sectors >> 16
 * 9 -> sectors >> 8
 * 10 -> sectors
 */
static enum mq_qrc gdrom_readdisk_dma(struct request *req)
{
	struct gdrom_unit *gd = req->q->queuedata;
	struct gdrom_drive *drive = &gd->drive;
	int block, block_cnt;
	int err, timed_out;
	struct packet_command *read_command;
	uint64_t seq;

	read_command = calloc(1, sizeof(*read_command));
	if (!read_command)
		return MQ_QRC_RESOURCE;

	read_command->cmd[0] = GDROM_SPI_CD_READ;
	read_command->cmd[1] = 0x20;
	block = blk_rq_pos(req) / GD_TO_BLK + GD_SESSION_OFFSET;
	block_cnt = blk_rq_sectors(req) / GD_TO_BLK;
	pr_debug("gdrom: sector %" PRIu64 " is LBA %d: block %" PRIu64
		 " (sector / GD_TO_BLK) + GD_SESSION_OFFSET %d; %d blocks",
		 blk_rq_pos(req), block, blk_rq_pos(req) / GD_TO_BLK,
		 GD_SESSION_OFFSET, block_cnt);
	/*
	 * max_segments is 1: the request is one bio, one DMA buffer.  The
	 * lock keeps a late interrupt of a timed-out DMA off the registers.
	 */
	pthread_mutex_lock(&gd->lock);
	drive->dma_startaddr = req->bio->bi_buf;
	drive->dma_length = block_cnt * GDROM_HARD_SECTOR;
	drive->dma_direction = 1;
	drive->dma_enable = 1;
	pthread_mutex_unlock(&gd->lock);
	read_command->cmd[2] = (block >> 16) & 0xFF;
	read_command->cmd[3] = (block >> 8) & 0xFF;
	read_command->cmd[4] = block & 0xFF;
	read_command->cmd[8] = (block_cnt >> 16) & 0xFF;
	read_command->cmd[9] = (block_cnt >> 8) & 0xFF;
	read_command->cmd[10] = block_cnt & 0xFF;

	pthread_mutex_lock(&gd->lock);
	gd->pending = 1;
	gd->transfer = 1;
	gd->status = 0;
	seq = ++gd->dma_seq;
	pthread_mutex_unlock(&gd->lock);

	/* GDROM_COM_PACKET, then the packet, then start the transfer */
	gdrom_packetcommand(gd, read_command, seq);

	pthread_mutex_lock(&gd->lock);
	gdrom_wait_transfer(gd);
	timed_out = gd->transfer;
	err = gd->transfer ? EIO : 0;
	/* Linux ignores the status here; a drive error is an EIO too. */
	if (gd->status & GDROM_STATUS_ERR)
		err = EIO;
	gd->transfer = 0;
	gd->pending = 0;
	pthread_mutex_unlock(&gd->lock);

	if (timed_out) {
		atomic_fetch_add(&gd->dma_timeouts, 1);
		pr_err("gdrom: DMA read of %d blocks at LBA %d timed out after %u ms (GDROM_DEFAULT_TIMEOUT): EIO",
		       block_cnt, block, gd->dma_timeout_ms);
	} else if (err) {
		pr_err("gdrom: DMA read of %d blocks at LBA %d failed: EIO",
		       block_cnt, block);
	}

	mq_end_request(req, err);
	free(read_command);
	return MQ_QRC_OK;
}

static enum mq_qrc gdrom_queue_rq(struct mq_hw_ctx *hctx,
				  const struct mq_queue_data *bd)
{
	struct gdrom_unit *gd = hctx->queue->queuedata;

	mq_start_request(bd->rq);

	switch (req_op(bd->rq)) {
	case REQ_OP_READ:
		atomic_fetch_add(&gd->reads, 1);
		return gdrom_readdisk_dma(bd->rq);
	case REQ_OP_WRITE:
		atomic_fetch_add(&gd->refused, 1);
		pr_warn("gdrom: Read only device - write request ignored");
		return MQ_QRC_IOERR;
	default:
		atomic_fetch_add(&gd->refused, 1);
		pr_debug("gdrom: Non-fs request ignored");
		return MQ_QRC_IOERR;
	}
}

static const struct mq_ops gdrom_mq_ops = {
	.queue_rq = gdrom_queue_rq,
};

/* ------------------------------------------------------------------ */
/* faults and attributes                                               */

static int gdrom_fault_dma_stall(struct gendisk *disk, const char *value,
				 struct mq_err *e)
{
	struct gdrom_unit *gd = disk->private_data;

	atomic_store(&gd->drive.dma_stall, true);
	pr_warn("gdrom: dma_stall armed: the next read's DMA never completes and times out after %u ms",
		gd->dma_timeout_ms);
	return 0;
}

static const struct disk_fault gdrom_faults[] = {
	{"dma_stall",
	 "the next read's DMA never completes: it times out with EIO",
	 gdrom_fault_dma_stall},
	{NULL},
};

static int gdrom_show_media(struct gendisk *disk, char *buf, size_t len)
{
	return snprintf(buf, len, "present");
}

static int gdrom_show_speed(struct gendisk *disk, char *buf, size_t len)
{
	struct gdrom_unit *gd = disk->private_data;

	return snprintf(buf, len, "%ux", gd->drive.optical.p.speed);
}

/* The last packet sent, in hex: bytes 2-4 are the LBA. */
static int gdrom_show_last_command(struct gendisk *disk, char *buf, size_t len)
{
	struct gdrom_unit *gd = disk->private_data;
	unsigned char c[12];
	int n;

	pthread_mutex_lock(&gd->lock);
	memcpy(c, gd->last_cmd, sizeof(c));
	pthread_mutex_unlock(&gd->lock);
	n = snprintf(
		buf, len,
		"%02x %02x %02x %02x %02x %02x %02x %02x %02x %02x %02x %02x",
		c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9],
		c[10], c[11]);
	return n;
}

static int gdrom_show_dma_stall(struct gendisk *disk, char *buf, size_t len)
{
	struct gdrom_unit *gd = disk->private_data;

	return snprintf(buf, len, "%d", atomic_load(&gd->drive.dma_stall));
}

#define GDROM_SHOW_COUNTER(_name)                                              \
	static int gdrom_show_##_name(struct gendisk *disk, char *buf,         \
				      size_t len)                              \
	{                                                                      \
		struct gdrom_unit *gd = disk->private_data;                    \
                                                                               \
		return snprintf(buf, len, "%lu", atomic_load(&gd->_name));     \
	}

GDROM_SHOW_COUNTER(reads)
GDROM_SHOW_COUNTER(dma_timeouts)
GDROM_SHOW_COUNTER(refused)

static const struct disk_attr gdrom_attrs[] = {
	{"media", gdrom_show_media},
	{"speed", gdrom_show_speed},
	{"last_command", gdrom_show_last_command},
	{"dma_stall", gdrom_show_dma_stall}, /* armed, not yet fired */
	{"reads", gdrom_show_reads},
	{"dma_timeouts", gdrom_show_dma_timeouts},
	{"refused", gdrom_show_refused}, /* writes and non-fs requests */
	{NULL},
};

/* ------------------------------------------------------------------ */
/* probe and remove                                                    */

static void gdrom_free(struct gdrom_unit *gd)
{
	/*
	 * The worker may still be leaving queue_rq: quiesce waits.  Then the
	 * drive's interrupt thread runs what it has left (stale DMAs are
	 * dropped) and stops, and only then do the queue and disc go.
	 */
	if (gd->gdrom_rq)
		mq_quiesce_queue(gd->gdrom_rq);
	if (gd->drive.irq)
		irq_thread_destroy(gd->drive.irq);
	if (gd->gdrom_rq)
		mq_cleanup_queue(gd->gdrom_rq);
	if (gd->tag_set_ready)
		mq_free_tag_set(&gd->tag_set);
	if (gd->drive.optical_ready)
		optical_destroy(&gd->drive.optical);
	media_close(gd->drive.disc);
	if (gd->cond_ready)
		pthread_cond_destroy(&gd->request_queue);
	if (gd->lock_ready)
		pthread_mutex_destroy(&gd->lock);
	free(gd);
}

/* The disc: image=PATH (an ISO) or media=STORE, read-only. */
static int gdrom_open_image(struct gdrom_unit *gd, struct mq_params *p,
			    struct mq_err *e)
{
	/* Any size opens; a disc is checked in whole CD blocks below. */
	struct media_open_args a = {
		.block_size = 1,
		.read_only = true,
		.name = "gdrom",
	};
	uint64_t size;

	if (mq_device_open_media(gd->mdev, p, NULL, "image", NULL, &a,
				 &gd->drive.disc, e))
		return -1;
	if (!gd->drive.disc)
		return mq_err_set(e, "image=PATH (an ISO image) is required");
	size = gd->drive.disc->size;
	if (size % GDROM_HARD_SECTOR)
		return mq_err_set(
			e,
			"%s: %" PRIu64
			" bytes is not a whole number of %u-byte CD blocks",
			gd->drive.disc->desc, size, GDROM_HARD_SECTOR);
	gd->drive.nr_blocks = size / GDROM_HARD_SECTOR;
	/* The packet has 24 bits of LBA, and the disc starts at 150. */
	if (gd->drive.nr_blocks + GD_SESSION_OFFSET > 0xFFFFFF)
		return mq_err_set(
			e, "%s: %" PRIu64 " blocks is more than a disc holds",
			gd->drive.disc->desc, gd->drive.nr_blocks);
	return 0;
}

static int gdrom_init_sync(struct gdrom_unit *gd, struct mq_err *e)
{
	pthread_condattr_t attr;
	int err;

	err = pthread_mutex_init(&gd->lock, NULL);
	if (err)
		return mq_err_set(e, "mutex: %s", strerror(err));
	gd->lock_ready = true;
	err = pthread_condattr_init(&attr);
	if (!err) {
		err = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
		if (!err)
			err = pthread_cond_init(&gd->request_queue, &attr);
		pthread_condattr_destroy(&attr);
	}
	if (err)
		return mq_err_set(e, "condition variable: %s", strerror(err));
	gd->cond_ready = true;
	return 0;
}

/* probe_gdrom_setupqueue */
static void gdrom_setup_queue(struct gdrom_unit *gd)
{
	struct queue_limits *lim = &gd->gdrom_rq->limits;

	lim->logical_block_size = GDROM_HARD_SECTOR;
	lim->physical_block_size = GDROM_HARD_SECTOR;
	/* using DMA so memory will need to be contiguous */
	lim->max_segments = 1;
	/* set a large max size to get most from DMA */
	lim->max_sectors = GDROM_MAX_SEGMENT_SIZE >> SECTOR_SHIFT;
	lim->max_discard_sectors = 0;
	lim->max_write_zeroes_sectors = 0;
	lim->write_cache = false;
	lim->fua = false;
	lim->rotational = true;
}

static int gdrom_probe(struct mq_device *dev, struct mq_params *p,
		       struct mq_err *e)
{
	struct optical_params op;
	struct gdrom_unit *gd;
	int err;

	gd = calloc(1, sizeof(*gd));
	if (!gd)
		return mq_err_set(e, "out of memory");
	gd->mdev = dev;

	if (mq_param_uint(p, "dma_timeout_ms", GDROM_DEFAULT_TIMEOUT_MS, 1,
			  3600000, &gd->dma_timeout_ms, e) ||
	    optical_params_read(&op, p, "", e))
		goto fail;
	if (gdrom_init_sync(gd, e) || gdrom_open_image(gd, p, e))
		goto fail;

	optical_init(&gd->drive.optical, &op, gd->drive.nr_blocks * GD_TO_BLK);
	gd->drive.optical_ready = true;
	/* gdrom_open spins the disc up (gdrom_preparedisk_cmd) */
	gd->drive.ready_at_ns =
		mq_now_ns() +
		mq_device_delay_ns(dev,
				   (double)optical_insert(&gd->drive.optical,
							  gd->drive.nr_blocks *
								  GD_TO_BLK));
	gd->drive.irq = irq_thread_create("gdrom_dma");
	if (!gd->drive.irq) {
		mq_err_set(e, "cannot start the DMA interrupt thread");
		goto fail;
	}

	gd->tag_set.ops = &gdrom_mq_ops;
	gd->tag_set.nr_hw_queues = 1;
	gd->tag_set.queue_depth = 1;
	gd->tag_set.flags = MQ_F_SHOULD_MERGE | MQ_F_BLOCKING;
	gd->tag_set.timeout_ms = dev->io_timeout_ms;
	gd->tag_set.driver_data = gd;
	err = mq_alloc_tag_set(&gd->tag_set);
	if (err) {
		mq_err_set(e, "cannot allocate the tag set: %s", strerror(err));
		goto fail;
	}
	gd->tag_set_ready = true;

	gd->gdrom_rq = mq_init_queue(&gd->tag_set, dev->nr_ctx, GDROM_DEV_NAME);
	if (!gd->gdrom_rq) {
		mq_err_set(e, "cannot create the queue");
		goto fail;
	}
	gd->gdrom_rq->queuedata = gd;
	gdrom_setup_queue(gd);

	snprintf(gd->disk.disk_name, sizeof(gd->disk.disk_name), "%s",
		 GDROM_DEV_NAME);
	snprintf(gd->disk.description, sizeof(gd->disk.description),
		 "Sega Dreamcast GD-ROM %s (Linux gdrom), read-only: "
		 "%" PRIu64 " blocks of %u bytes, %ux",
		 GDROM_DEV_NAME, gd->drive.nr_blocks, GDROM_HARD_SECTOR,
		 op.speed);
	gd->disk.queue = gd->gdrom_rq;
	set_capacity(&gd->disk, gd->drive.nr_blocks * GD_TO_BLK);
	gd->disk.read_only = true;
	gd->disk.features = DISK_MULTI_CONN; /* nothing is ever written */
	gd->disk.attrs = gdrom_attrs;
	gd->disk.faults = gdrom_faults;
	gd->disk.private_data = gd;

	dev->private_data = gd;
	if (mq_device_add_disk(dev, &gd->disk)) {
		dev->private_data = NULL;
		mq_err_set(e, "cannot add disk %s", GDROM_DEV_NAME);
		goto fail;
	}
	pr_debug("gdrom: %s", gd->disk.description);
	return 0;

fail:
	gdrom_free(gd);
	return -1;
}

static void gdrom_remove(struct mq_device *dev)
{
	if (!dev->private_data)
		return;
	gdrom_free(dev->private_data);
	dev->private_data = NULL;
}

static const struct mq_param_spec gdrom_params[] = {
	{"image", NULL, "the disc: an ISO image (required)"},
	{"speed", "12", "drive speed, x 150 KiB/s (constant linear velocity)"},
	{"seek_ms", "100", "average seek, ms"},
	{"spinup_ms", "1500", "spin-up at start, before the first read, ms"},
	{"dma_timeout_ms", "7000",
	 "GDROM_DEFAULT_TIMEOUT: a DMA not done by then fails with EIO"},
	{NULL},
};

const struct mq_driver gdrom_driver = {
	.name = "gdrom",
	.description = "Sega Dreamcast GD-ROM, Linux gdrom: exports gdrom; "
		       "read-only, 2048-byte blocks, depth 1, blocking",
	.params = gdrom_params,
	.probe = gdrom_probe,
	.remove = gdrom_remove,
};
